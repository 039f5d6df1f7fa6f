"""Diagnostic: how many cores the Spark read of a CommitLog keeps busy, local[1] next to local[2].

    python bench/spark_read_cores.py [--size-mib 256] [--file-mib 64] [--split-mib 64] [--repeat 1]

Generates a store (the generator of ``validate_throughput.py``), then for each master runs
``sum(length(body))`` over the ``rocketmq_commitlog`` data source (after a warm-up action, so
the JVM and Python workers are up) and prints its wall time, the rows per second it reads, and
the machine's busy cores during it (from ``/proc/stat``, so run it on an otherwise idle
machine).  local[1] keeps more than one core busy (the Python worker decodes while the JVM
consumes its Arrow batches), which caps what
local[2] can gain on a 2-core machine at ``cores / busy cores of local[1]``.  Prints, asserts
nothing; without pyspark or Java it says "skipped".  ``--repeat N`` times the read N times per master
and keeps the fastest (on a machine shared with other work, the least disturbed one).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.spark_env import cpu_jiffies as _cpu  # noqa: E402
from bench.spark_env import missing  # noqa: E402
from bench.validate_throughput import generate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--file-mib", type=int, default=64)
    ap.add_argument("--split-mib", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    reason = missing(proc_stat=True)
    if reason:
        print(f"spark_read_cores: skipped ({reason})")
        return 0
    from mqtool.pipeline import session

    work = Path(tempfile.mkdtemp(prefix="mqtool-spark-cores-"))
    try:
        count, end = generate(work / "store", args.size_mib, args.file_mib, 1024)
        print(f"store: {count:,} records, {end / 2**20:,.0f} MiB; {os.cpu_count()} cores")
        walls = {}
        for master in ("local[1]", "local[2]"):
            with session(master) as spark:
                spark.sparkContext.setLogLevel("ERROR")
                df = spark.read.format("rocketmq_commitlog").option("splitSize", str(args.split_mib << 20)).load(str(work / "store"))
                df.limit(1).collect()  # warm-up: JVM, Python workers, planning
                best: tuple[float, int, int, int, int] | None = None
                for _ in range(max(1, args.repeat)):
                    busy0, total0 = _cpu()
                    t0 = time.perf_counter()
                    df.selectExpr("sum(length(body))").collect()
                    took = time.perf_counter() - t0
                    busy1, total1 = _cpu()
                    if best is None or took < best[0]:
                        best = (took, busy0, total0, busy1, total1)
                assert best is not None
                wall, busy0, total0, busy1, total1 = best
                partitions = df.rdd.getNumPartitions()
            cores = (os.cpu_count() or 1) * (busy1 - busy0) / max(1, total1 - total0)
            walls[master] = wall
            print(f"{master}: {wall:6.1f} s, {count / wall:,.0f} rows/s, busy cores {cores:.2f}, {partitions} partitions")
        print(f"ratio read local[2]/local[1] throughput: {walls['local[1]'] / walls['local[2]']:.2f}x")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
