"""Benchmark: start-up cost of ``mqtool --help`` and ``mqtool info`` next to bare ``python -c pass``.

    python bench/startup.py [--runs 10]

Prints the median wall time of each over ``--runs`` runs, the ratio to bare Python, and checks
with ``-X importtime`` that neither command imports pyspark, pyarrow or a compression codec
(they load only when a command needs them).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "fixtures" / "rocketmq-store"
HEAVY = ("pyspark", "pyarrow", "lz4", "zstandard", "cramjam", "snappy")


def timed(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def heavy_imports(argv: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True)
    found = set()
    for line in proc.stderr.splitlines():
        if "|" not in line:
            continue
        module = line.rsplit("|", 1)[1].strip()
        top = module.split(".")[0]
        if top in HEAVY:
            found.add(top)
    return sorted(found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    bare = timed([sys.executable, "-c", "pass"], args.runs)
    print(f"{'python -c pass':<28} {bare * 1000:7.0f} ms")
    for label, argv in (("mqtool --help", ["-m", "mqtool", "--help"]), ("mqtool info (fixture)", ["-m", "mqtool", "info", str(STORE)])):
        t = timed([sys.executable, *argv], args.runs)
        heavy = heavy_imports(argv)
        print(f"{label:<28} {t * 1000:7.0f} ms  ratio {t / bare:5.1f}x  heavy imports: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
