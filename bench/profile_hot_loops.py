"""Profile of the hot loops (validate, dump, scan decode) on 1 KiB RocketMQ records, one run.

    python bench/profile_hot_loops.py [--size-mib 32] [--body 1024] [--top 12] [--dir DIR]

Generates a CommitLog store (the generator of ``validate_throughput.py``: 1 KiB bodies, keys,
tags, ConsumeQueues and IndexFiles), reads its records into memory once, then times each stage of
the per-record work separately over the same records, in microseconds per record:

* floors: ``zlib.crc32`` of the body alone, and the bare ``struct`` loop of ``dump_throughput.py``
  (every field unpacked, nothing built);
* framing and decoding a record into a ``MessageRecord`` without and with the body CRC;
* ``dump``: the JSON row (``message_row``) and its JSON line;
* ``scan`` decode: the Spark source's row tuple (``commitlog_row``) and the Arrow batches;
* ``validate -j1``: the whole command's engine per record (every cross-file check included);

then the cProfile top functions (by own time) of ``validate -j1`` and ``dump commitlog --jsonl``.
This is what the README's "where pure Python falls short" figures come from.  Noisy machines:
each stage is the cheapest of three runs, for comparing the stages with one
another in one run; it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.dump_throughput import bare_loop  # noqa: E402
from bench.validate_throughput import generate  # noqa: E402
from mqtool.cli.render import _LINE_ENCODER, BodyDecode  # noqa: E402
from mqtool.cli.rows import message_row  # noqa: E402
from mqtool.formats.rocketmq import commitlog as cl  # noqa: E402
from mqtool.ops.validate import ValidateOptions  # noqa: E402
from mqtool.ops.validate.rocketmq import validate_rocketmq  # noqa: E402


def _timed(fn, repeat: int = 3) -> float:
    """The cheapest of ``repeat`` runs (the first also warms caches and the allocator)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _buffers(files: list[Path]) -> list[bytes]:
    out = []
    for path in files:
        with open(path, "rb") as f:
            out.append(f.read())
    return out


def _walk(buffers: list[bytes], check_crc: bool) -> list[tuple[int, cl.MessageRecord]]:
    records = []
    for buf in buffers:
        records.extend(cl.RecordWalker(buf, 0, check_crc=check_crc))
    return records


def _profile_top(fn, top: int) -> str:
    prof = cProfile.Profile()
    sink = io.StringIO()
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        prof.enable()
        try:
            fn()
        finally:
            prof.disable()
    stats = pstats.Stats(prof, stream=sink)
    stats.sort_stats("tottime").print_stats(top)
    lines = [line for line in sink.getvalue().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    root = str(ROOT) + os.sep
    return "\n".join(line.replace(root, "") for line in lines[start - 1 :])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=32)
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="mqtool-profile-", dir=args.dir))
    try:
        store = work / "store"
        count, end = generate(store, args.size_mib, max(args.size_mib, 1), args.body)
        files = sorted((store / "commitlog").iterdir())
        buffers = _buffers(files)
        print(f"store: {count:,} records of {args.body}-byte bodies, {end / 2**20:.0f} MiB of CommitLog")

        records = _walk(buffers, True)
        assert len(records) == count, (len(records), count)
        bodies = [rec.body for _, rec in records]
        rows: list[dict] = []
        stages: list[tuple[str, float]] = []

        stages.append(("floor: zlib.crc32 of the body", _timed(lambda: [zlib.crc32(b) for b in bodies])))
        stages.append(("floor: bare struct loop (every field unpacked)", _timed(lambda: bare_loop(files))))
        stages.append(("frame + decode, no CRC", _timed(lambda: _walk(buffers, False))))
        stages.append(("frame + decode + body CRC", _timed(lambda: _walk(buffers, True))))

        def build_rows() -> None:
            rows[:] = [message_row(rec, file="f", position=pos, address=pos, decode=BodyDecode.base64) for pos, rec in records]

        stages.append(("dump: JSON row (message_row)", _timed(build_rows)))
        stages.append(("dump: JSON line (stdlib encoder)", _timed(lambda: [_LINE_ENCODER.encode(r) for r in rows])))
        try:
            from mqtool.pipeline import sources
        except ImportError:
            sources = None
        if sources is not None:
            opts = sources.ReadOptions(paths=(str(store),))
            part = sources.FilePart(str(store), str(files[0]))
            schema = sources.arrow_schema(sources._columns(sources.COMMITLOG_COLUMNS, opts, "commitlog"))
            tuples: list[tuple] = []

            def scan_rows() -> None:
                tuples[:] = [sources.commitlog_row(part, pos, rec, opts) for pos, rec in records]

            def scan_batches() -> None:
                out = sources.Batches(schema)
                for t in tuples:
                    out.add_tuple(t)
                out.flush()

            stages.append(("scan: row tuple (commitlog_row)", _timed(scan_rows)))
            stages.append(("scan: Arrow record batches", _timed(scan_batches)))
        validate = lambda: validate_rocketmq(store, ValidateOptions(jobs=1))  # noqa: E731
        stages.append(("validate -j1: whole engine, per record", _timed(validate)))

        width = max(len(name) for name, _ in stages)
        print(f"\n{'stage':<{width}}  us/record")
        for name, secs in stages:
            print(f"{name:<{width}}  {secs / count * 1e6:9.2f}")
        per = {name: secs / count * 1e6 for name, secs in stages}
        decode = per["frame + decode + body CRC"]
        print(
            f"\nper record: decode+CRC {decode:.1f} us = {decode / per['floor: zlib.crc32 of the body']:.0f}x the CRC alone; "
            f"dump needs decode + row + JSON = {decode + per['dump: JSON row (message_row)'] + per['dump: JSON line (stdlib encoder)']:.1f} us "
            f"against the bare loop's {per['floor: bare struct loop (every field unpacked)']:.1f} us"
        )

        from mqtool.cli.app import run

        print(f"\ncProfile, validate -j1 (top {args.top} by own time):")
        print(_profile_top(validate, args.top))
        print(f"\ncProfile, dump commitlog --jsonl (top {args.top} by own time):")
        print(_profile_top(lambda: run(["dump", "commitlog", str(store), "--jsonl"]), args.top))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
