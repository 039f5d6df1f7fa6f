"""Benchmark: ``mqtool dump kafka-log --deep --jsonl`` next to a plain kafka-python loop writing
the same records as JSON lines, side by side in one run (issue 27: goal >= 2x).

    python bench/kafka_dump_throughput.py [--size-mb 45] [--value-size 128] [--records 100] [--rounds 5]

Writes one partition (``bench-0``) whose single ``.log`` segment holds about ``--size-mb`` MB of
v2 batches of ``--records`` records each (a ``key-N`` key, ``--value-size``-byte values, one
16-byte header: about 170 bytes a record with the defaults), with mqtool's own encoders, then
for each round runs, each in its own process with stdout on ``/dev/null``:

* ``kafka-python``: ``MemoryRecords`` over the segment's bytes, every record written as a JSON
  line by ``json.dumps`` (offset, timestamp, key, value and headers, bytes in base64);
* ``mqtool``: ``mqtool dump kafka-log SEGMENT --deep --jsonl``.

Both are timed whole (interpreter start-up and imports included), wall and CPU (user + system)
seconds; the ratio of a round is kafka-python's time over mqtool's, so a slow spell of a noisy
machine hits both sides of a round.  Each side runs once untimed first, and the children run
with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from their environment): both
import compiled modules, as a package installed by pip does (kafka-python's are compiled at its
install; without this, mqtool's source would be compiled again in every timed run).  Prints
every round's ratio and their range; asserts nothing.
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

from mqtool.formats.kafka import record_batch as rb  # noqa: E402
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter  # noqa: E402

START_MS = 1_700_000_000_000

KAFKA_PYTHON_LOOP = r"""
import base64, json, sys
from kafka.record.memory_records import MemoryRecords

b64 = lambda b: None if b is None else base64.b64encode(b).decode("ascii")
with open(sys.argv[1], "rb") as f:
    data = f.read()
out = sys.stdout
records = MemoryRecords(data)
while records.has_next():
    for r in records.next_batch():
        out.write(json.dumps({
            "offset": r.offset, "timestamp": r.timestamp, "key": b64(r.key), "value": b64(r.value),
            "headers": [[k, b64(v)] for k, v in r.headers],
        }) + "\n")
"""


def generate(directory: Path, size_mb: float, value_size: int, per_batch: int) -> tuple[int, int, Path]:
    """A partition with one segment of about ``size_mb`` MB: (batches, records, .log path)."""
    rng = random.Random(27)
    values = [bytes(rng.getrandbits(8) for _ in range(value_size)) for _ in range(16)]
    header = (rb.RecordHeader("trace-id", b"0123456789abcdef"),)
    writer = PartitionWriter(directory, PartitionConfig(segment_bytes=2**31 - 1), snapshots=False)
    batches = records = 0
    target = int(size_mb * 1e6)
    while writer.active.size < target or batches == 0:
        recs = [
            rb.Record(offset_delta=i, timestamp_delta=i * 3, key=b"key-%d" % (records + i), value=values[(records + i) % 16], headers=header)
            for i in range(per_batch)
        ]
        batch = rb.build_batch(recs, base_timestamp=START_MS + batches * per_batch, producer_id=7, producer_epoch=0, base_sequence=records % (2**31 - per_batch))
        writer.append(batch)
        batches += 1
        records += per_batch
    writer.close()
    return batches, records, writer.segments[0].path


#: The children's environment: bytecode caching on (see the module docstring).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one child process, its stdout on /dev/null."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, env=CHILD_ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{args[:4]} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=45)
    ap.add_argument("--value-size", type=int, default=128)
    ap.add_argument("--records", type=int, default=100, help="records per batch")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="mqtool-kafka-dump-bench-", dir=args.dir))
    try:
        t0 = time.perf_counter()
        batches, records, log = generate(work / "bench-0", args.size_mb, args.value_size, args.records)
        size = log.stat().st_size
        print(
            f"generated {batches:,} batches of {args.records} records ({records:,} records, {size / records:.0f} bytes a record), "
            f"{size / 1e6:.1f} MB in one segment, {time.perf_counter() - t0:.1f} s"
        )
        log.read_bytes()  # the page cache, for both
        kafka_python = [sys.executable, "-c", KAFKA_PYTHON_LOOP, str(log)]
        mqtool = [sys.executable, "-m", "mqtool", "dump", "kafka-log", str(log), "--deep", "--jsonl"]
        run(kafka_python)  # untimed: caches written, files read
        run(mqtool)
        walls, cpus = [], []
        for n in range(1, args.rounds + 1):
            kp_wall, kp_cpu = run(kafka_python)
            mq_wall, mq_cpu = run(mqtool)
            walls.append(kp_wall / mq_wall)
            cpus.append(kp_cpu / mq_cpu)
            print(
                f"round {n}: kafka-python {kp_wall:.2f} s wall / {kp_cpu:.2f} s CPU, mqtool {mq_wall:.2f} s wall / {mq_cpu:.2f} s CPU: "
                f"ratio {walls[-1]:.2f}x wall, {cpus[-1]:.2f}x CPU"
            )
        print(
            f"ratio kafka-python / mqtool dump kafka-log --deep --jsonl over {args.rounds} rounds: "
            f"wall {min(walls):.2f}-{max(walls):.2f}x (median {statistics.median(walls):.2f}x), "
            f"CPU {min(cpus):.2f}-{max(cpus):.2f}x (median {statistics.median(cpus):.2f}x); goal >= 2x"
        )
    finally:
        if args.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
