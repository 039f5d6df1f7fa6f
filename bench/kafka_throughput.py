"""Benchmark: Kafka ``validate`` next to a bare CRC-32C pass, and ``validate --deep`` next to
kafka-python, measured side by side in one run.

    python bench/kafka_throughput.py [--size-mib 256] [--value-size 1024] [--records 100] [--dir DIR]

Writes one partition whose single ``.log`` segment holds at least ``--size-mib`` MiB of v2 batches
of ``--records`` records each (``--value-size``-byte values, a key and a header per record; sparse
``.index``/``.timeindex`` as the broker writes them), with mqtool's own encoders, then prints:

* ``crc32c``: one pass of the ``crc32c`` package over the same bytes, read in 8 MiB chunks;
* ``validate``: ``mqtool validate PARTITION --jobs 1`` in a subprocess; its marginal cost: the
  same command on a one-batch partition is timed too and subtracted, so interpreter start-up and
  imports do not count;
* ``validate --deep``: the same with every record decoded, as records per second;
* ``kafka-python``: ``MemoryRecords`` over the segment's bytes (read into memory beforehand),
  every batch ``validate_crc()``-ed and every record iterated, as records per second;
* ``validate --deep`` next to kafka-python in this process, side by side: the validate engine
  (``validate_kafka(..., deep=True)``, reading the segment from the page cache, every check of
  the command) then a kafka-python pass, ``--repeat`` pairs, after one warm-up run; the ratio is
  the median over the pairs (goal >= 10x).  Both libraries are imported beforehand, so neither
  pays its imports; loading the compiled record walk (numba, once per run: its import and its
  cache of compiled code) is timed on its own and printed.  The in-process runs use the
  compiled walk whatever the size (numba installed); the CLI uses it from
  ``store.model.kafka.COMPILED_WALK_MIN_BYTES`` of ``.log`` on (1 GiB: below, the fixed cost of
  loading it outweighs what it saves), so the CLI figures below that size are the Python walk's;
* the ratios validate/crc32c (goal >= 0.5) and deep/kafka-python (in-process, above; and the
  CLI's marginal, which includes loading the compiled walk), and peak RSS; validate/crc32c also
  as the median over the repeats of each validate run against a crc32c pass timed right after it
  (a slow spell of a noisy VM then hits both sides of a pair).

Times are CPU seconds (user + system: what the work costs, whatever else the machine runs); each
contender runs ``--repeat`` times (3) and its cheapest run counts, the start-up run likewise.
Noisy machines: this prints ratios, it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import crc32c  # noqa: E402

from mqtool.formats.kafka import record_batch as rb  # noqa: E402
from mqtool.formats.kafka import record_scan  # noqa: E402
from mqtool.ops.validate import ValidateOptions  # noqa: E402
from mqtool.ops.validate import kafka as vk  # noqa: E402
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter  # noqa: E402
from mqtool.store.model import kafka as km  # noqa: E402

START_MS = 1_700_000_000_000


def generate(directory: Path, size_mib: int, value_size: int, per_batch: int) -> tuple[int, int, Path]:
    """A partition with one segment of at least ``size_mib`` MiB: (batches, records, .log path)."""
    rng = random.Random(42)
    values = [bytes(rng.getrandbits(8) for _ in range(value_size)) for _ in range(16)]
    header = (rb.RecordHeader("trace-id", b"0123456789abcdef"),)
    writer = PartitionWriter(directory, PartitionConfig(segment_bytes=2**31 - 1), snapshots=False)
    batches = records = 0
    target = size_mib << 20
    size = 0
    while size < target or batches == 0:
        recs = [
            rb.Record(offset_delta=i, timestamp_delta=i, key=b"key-%d" % (records + i), value=values[(records + i) % 16], headers=header)
            for i in range(per_batch)
        ]
        writer.append(rb.build_batch(recs, base_timestamp=START_MS + batches * per_batch, producer_id=7, producer_epoch=0, base_sequence=records % (2**31 - per_batch)))
        batches += 1
        records += per_batch
        size = writer.active.size
    writer.close()
    return batches, records, writer.segments[0].path


def crc_pass(path: Path) -> int:
    total = 0
    value = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(8 << 20)
            if not chunk:
                return total
            value = crc32c.crc32c(chunk, value)
            total += len(chunk)


def run_child(args: list[str]) -> tuple[float, int, int]:
    """(CPU seconds, exit code, peak RSS in bytes) of one child process.

    CPU time (user + system, from ``wait4``) rather than wall time: on a shared machine other
    processes stretch wall time by seconds, not the work a run does."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024


def kafka_python_pass(path: Path) -> tuple[int, float]:
    from kafka.record.memory_records import MemoryRecords

    data = path.read_bytes()
    t0 = time.process_time()
    count = 0
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise SystemExit("kafka-python: CRC mismatch")
        for _ in batch:
            count += 1
    return count, time.process_time() - t0


def deep_side_by_side(partition: Path, log: Path, repeat: int) -> tuple[float, float, list[float], int]:
    """In this process: (best validate --deep CPU s, best kafka-python CPU s, the per-pair
    ratios kafka-python / deep, records validated)."""
    options = ValidateOptions(jobs=1, deep=True)
    report = vk.validate_kafka(partition, options)  # warm-up: page cache, compiled walk loaded
    if report.failed:
        raise SystemExit("validate --deep found errors on a healthy partition")
    deep_runs, kp_runs, ratios = [], [], []
    for _ in range(repeat):
        t0 = time.process_time()
        report = vk.validate_kafka(partition, options)
        deep_runs.append(time.process_time() - t0)
        count, kp_s = kafka_python_pass(log)
        if count != report.facts["records"]:
            raise SystemExit(f"kafka-python read {count} records, validate --deep {report.facts['records']}")
        kp_runs.append(kp_s)
        ratios.append(kp_s / deep_runs[-1])
    return min(deep_runs), min(kp_runs), ratios, report.facts["records"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--records", type=int, default=100, help="records per batch")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each contender; the fastest counts (noisy machines)")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="mqtool-kafka-bench-", dir=args.dir))
    try:
        t0 = time.perf_counter()
        batches, records, log = generate(work / "bench-0", args.size_mib, args.value_size, args.records)
        generate(work / "tiny-0", 0, args.value_size, args.records)
        size = log.stat().st_size
        print(
            f"generated {batches:,} batches of {args.records} records ({records:,} records, {args.value_size}-byte values), "
            f"{size / 2**20:.0f} MiB in one segment, {time.perf_counter() - t0:.1f} s"
        )

        crc_pass(log)  # warm the page cache for every contender
        crc_s = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            crc_bytes = crc_pass(log)
            crc_s = min(crc_s, time.process_time() - t0)
        crc_rate = crc_bytes / crc_s / 2**20

        mqtool = [sys.executable, "-m", "mqtool", "validate", "--jobs", "1", "--jsonl"]
        results = {}
        crc_ratios = []  # per repeat: validate's marginal rate / a crc32c pass timed right beside it
        for label, extra in (("validate", []), ("validate --deep", ["--deep"])):
            base_s, big_s, rss = [], [], 0
            for _ in range(args.repeat):
                seconds, code, _ = run_child([*mqtool, *extra, str(work / "tiny-0")])
                if code != 0:
                    raise SystemExit(f"{label} exited {code} on the one-batch partition")
                base_s.append(seconds)
                seconds, code, peak = run_child([*mqtool, *extra, str(work / "bench-0")])
                if code != 0:
                    raise SystemExit(f"{label} exited {code} on a healthy partition")
                big_s.append(seconds)
                rss = max(rss, peak)
                if not extra:
                    t0 = time.process_time()
                    crc_pass(log)
                    crc_ratios.append((time.process_time() - t0) / max(big_s[-1] - base_s[-1], 1e-9))
            results[label] = (max(min(big_s) - min(base_s), 1e-9), rss, min(base_s))

        import kafka.record.memory_records  # noqa: F401  (imported before the timed passes)

        t0 = time.process_time()
        compiled = record_scan.compiled_available()
        load_s = time.process_time() - t0
        cli_threshold = km.COMPILED_WALK_MIN_BYTES
        km.COMPILED_WALK_MIN_BYTES = 0  # this process: the compiled walk at any size
        side_deep_s, side_kp_s, side_ratios, side_records = deep_side_by_side(work / "bench-0", log, args.repeat)

        kp_runs = [kafka_python_pass(log) for _ in range(args.repeat)]
        kp_count, kp_s = min(kp_runs, key=lambda r: r[1])
        assert kp_count == records

        val_s, val_rss, val_base = results["validate"]
        deep_s, deep_rss, deep_base = results["validate --deep"]
        val_rate = size / val_s / 2**20
        deep_rps = records / deep_s
        kp_rps = kp_count / kp_s
        print(f"{'crc32c pass':<26} {crc_rate:>10,.0f} MB/s   ({crc_s:.3f} CPU s over {crc_bytes / 2**20:.0f} MiB)")
        print(
            f"{'validate (marginal)':<26} {val_rate:>10,.0f} MB/s   ({val_s:.3f} CPU s; the one-batch run's {val_base:.2f} s subtracted), "
            f"peak RSS {val_rss / 2**20:.0f} MiB"
        )
        print(
            f"{'validate --deep (marginal)':<26} {deep_rps:>10,.0f} rec/s  ({deep_s:.3f} CPU s; the one-batch run's {deep_base:.2f} s subtracted), "
            f"peak RSS {deep_rss / 2**20:.0f} MiB"
        )
        print(f"{'kafka-python MemoryRecords':<26} {kp_rps:>10,.0f} rec/s  ({kp_s:.3f} CPU s, validate_crc on every batch)")
        print(f"ratio validate / crc32c: {val_rate / crc_rate:.2f}x (goal >= 0.5x; best times of each)")
        spread = ", ".join(f"{r:.2f}" for r in crc_ratios)
        print(f"ratio validate / crc32c, median of {len(crc_ratios)} adjacent pairs: {statistics.median(crc_ratios):.2f}x ({spread})")
        walk = "compiled walk" if compiled else "Python walk: numba is not installed"
        print(
            f"{'validate --deep in-process':<26} {side_records / side_deep_s:>10,.0f} rec/s  ({side_deep_s:.3f} CPU s, {walk}; "
            f"loading the compiled walk once cost {load_s:.2f} CPU s)"
        )
        print(f"{'kafka-python, beside it':<26} {side_records / side_kp_s:>10,.0f} rec/s  ({side_kp_s:.3f} CPU s)")
        spread = ", ".join(f"{r:.1f}" for r in side_ratios)
        print(
            f"ratio validate --deep / kafka-python, in-process, median of {len(side_ratios)} adjacent pairs: "
            f"{statistics.median(side_ratios):.1f}x ({spread}; goal >= 10x)"
        )
        cli_walk = "compiled walk, incl. loading it" if compiled and size >= cli_threshold else "Python walk: under COMPILED_WALK_MIN_BYTES"
        print(f"ratio validate --deep (CLI marginal, {cli_walk}) / kafka-python: {deep_rps / kp_rps:.2f}x")
    finally:
        if args.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
