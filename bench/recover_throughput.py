"""Benchmark: ``mqtool recover --apply`` MB/s next to ``mqtool validate`` MB/s on the same damaged store.

    python bench/recover_throughput.py [--size-mib 512] [--file-mib 128] [--dir DIR]

Generates a RocketMQ store of at least ``--size-mib`` MiB with mqtool's writer, then damages it
the way a crash does: the last record is torn (its second half zeroed), one ConsumeQueue lags
(its last units zeroed) and ``abort`` is present.  In one run it times, on identical copies:

* ``validate --jobs 1`` (every check family);
* ``recover --apply --no-verify --jobs 1`` (plan + quarantine + apply; the verification that
  normally follows is a validate run and is left out so the two are comparable).

MB/s are over the CommitLog bytes; interpreter start-up (``mqtool --version``) is subtracted.
Goal: recover >= 0.9x validate.  It prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.validate_throughput import generate  # noqa: E402
from mqtool.formats.rocketmq.commitlog import RecordWalker  # noqa: E402


def damage(store: Path) -> None:
    last = sorted(p for p in (store / "commitlog").iterdir() if p.stat().st_size)[-1]
    data = bytearray(last.read_bytes())
    walker = RecordWalker(bytes(data))
    records = list(walker)
    pos, rec = records[-1]
    half = pos + rec.total_size // 2
    data[half : pos + rec.total_size] = bytes(pos + rec.total_size - half)
    last.write_bytes(bytes(data))
    queue = sorted((store / "consumequeue").rglob("0000*"))[-1]
    units = bytearray(queue.read_bytes())
    end = len(units.rstrip(b"\x00"))
    end -= end % 20
    units[max(0, end - 200) : end] = bytes(min(200, end))
    queue.write_bytes(bytes(units))
    (store / "abort").write_text("4242")


def timed(argv: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return time.perf_counter() - t0, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--file-mib", type=int, default=128)
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mqtool-bench-", dir=args.dir))
    try:
        base = work / "base"
        records, data_end = generate(base, args.size_mib, args.file_mib, args.body)
        damage(base)
        cl_bytes = sum(p.stat().st_size for p in (base / "commitlog").iterdir())
        print(f"generated and damaged {records:,} records ({data_end / 2**20:.0f} MiB of CommitLog data)")
        for name in ("v", "r"):
            shutil.copytree(base, work / name)
        mqtool = [sys.executable, "-m", "mqtool"]
        startup, _ = timed([*mqtool, "--version"])
        v_s, v_code = timed([*mqtool, "validate", str(work / "v"), "--jobs", "1", "--jsonl"])
        r_s, r_code = timed([*mqtool, "recover", str(work / "r"), "--apply", "--no-verify", "--jobs", "1", "--quarantine", str(work / "q")])
        if r_code != 0:
            raise SystemExit(f"recover --apply exited {r_code}")
        after, after_code = timed([*mqtool, "validate", str(work / "r"), "--jobs", "1", "--jsonl"])
        v_rate = cl_bytes / max(v_s - startup, 1e-9) / 2**20
        r_rate = cl_bytes / max(r_s - startup, 1e-9) / 2**20
        print(f"{'validate -j1 (damaged)':<28} {v_rate:8,.0f} MB/s  ({v_s - startup:.2f} s, exit {v_code})")
        print(f"{'recover --apply -j1':<28} {r_rate:8,.0f} MB/s  ({r_s - startup:.2f} s)")
        print(f"recovered store validates: {'clean' if after_code == 0 else 'with errors'}")
        print(f"ratio recover/validate: {r_rate / v_rate:.2f}x (goal >= 0.9x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
