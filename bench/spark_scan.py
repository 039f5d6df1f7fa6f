"""Benchmark: ``mqtool scan`` on Spark with local[1] and local[2], next to ``validate --jobs 1``.

    python bench/spark_scan.py [--size-mib 1024] [--file-mib 256] [--body 1024] [--dir DIR]

Generates a RocketMQ store of at least ``--size-mib`` MiB of CommitLog data (1 KiB bodies, 8
queues, ConsumeQueues and IndexFiles; the generator of ``validate_throughput.py``), then runs
in the same run, each as the real command in a subprocess:

* ``validate -j1``: the single-process baseline;
* ``scan local[1]`` and ``scan local[2]``: the whole job (JVM start, ingest to Parquet, every
  integrity join, report), ``--master local[N]``;
* ``scan startup``: ``scan`` of the small bundled fixture, i.e. Spark's fixed cost (JVM, Python
  workers, job planning), reported so the per-byte work can be told apart from it;
* ``local[1] on 1 CPU``: ``scan local[1]`` pinned to one CPU (``sched_setaffinity``). local[1]
  is one task slot, not one core: unpinned, its JVM and Python worker keep 1.3-2 cores busy
  (``bench/spark_scan_stages.py`` shows it per step), which on a 2-core machine caps
  local[2]/local[1] near 2 / that.  The pinned run shows how the scan scales from one core to two.

Printed ratios: local[2]/local[1] throughput (goal >= 1.6 on 2 cores) and scan local[2] time /
validate -j1 time (goal < 2: Spark's overhead at this size).  Noisy machines: this prints
ratios, it asserts nothing.  Without pyspark or Java it says "skipped" and exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.spark_env import missing  # noqa: E402
from bench.validate_throughput import generate  # noqa: E402

MQTOOL = [sys.executable, "-m", "mqtool"]


def timed(args: list[str], env: dict | None = None, cpus: set[int] | None = None) -> tuple[float, int]:
    """Wall time and exit code of one run; ``cpus`` pins it (JVM, Python workers and all)."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    t0 = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=pin, check=False)
    elapsed = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr[-2000:])
    return elapsed, done.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--file-mib", type=int, default=256)
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--dir", type=Path, default=None, help="where to generate (default: a temp dir, removed after)")
    ap.add_argument("--split-size", default="128m", help="scan --split-size")
    args = ap.parse_args()

    reason = missing()
    if reason:
        print(f"spark_scan: skipped ({reason})")
        return 0

    work = args.dir or Path(tempfile.mkdtemp(prefix="mqtool-spark-bench-"))
    store = work / "store"
    try:
        if not (store / "commitlog").is_dir():
            t0 = time.perf_counter()
            count, end = generate(store, args.size_mib, args.file_mib, args.body)
            print(f"generated {count:,} records, {end / (1 << 20):,.0f} MiB of CommitLog in {time.perf_counter() - t0:.0f} s")
        data = sum(p.stat().st_size for p in (store / "commitlog").iterdir())
        mib = data / (1 << 20)
        env = dict(os.environ, MQTOOL_SPARK_LOG_LEVEL="ERROR")

        results = {}
        results["validate -j1"] = timed([*MQTOOL, "validate", str(store), "--jobs", "1", "--format", "json"], env)
        fixture = ROOT / "fixtures" / "rocketmq-store"
        results["scan startup"] = timed([*MQTOOL, "scan", str(fixture), "--out", str(work / "out-startup"), "--master", "local[2]", "--json"], env)
        for n in (1, 2):
            out = work / f"out-local{n}"
            results[f"scan local[{n}]"] = timed(
                [*MQTOOL, "scan", str(store), "--out", str(out), "--master", f"local[{n}]", "--split-size", args.split_size, "--json"], env
            )
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if len(cpus) >= 2:
            # local[1] is one task slot, not one core: its JVM threads (JIT, GC, Parquet encoding)
            # and Python worker keep more than one core busy. Pinned to one CPU, it is one core.
            results["local[1] on 1 CPU"] = timed(
                [*MQTOOL, "scan", str(store), "--out", str(work / "out-pinned"), "--master", "local[1]", "--split-size", args.split_size, "--json"],
                env,
                cpus={cpus[0]},
            )

        print(f"store: {mib:,.0f} MiB of CommitLog ({args.file_mib} MiB files, split {args.split_size})")
        print(f"{'run':<16} {'seconds':>9} {'MiB/s':>9} {'exit':>5}")
        for name, (seconds, code) in results.items():
            rate = "-" if name == "scan startup" else f"{mib / seconds:,.1f}"
            print(f"{name:<16} {seconds:>9.1f} {rate:>9} {code:>5}")
        one, two = results["scan local[1]"][0], results["scan local[2]"][0]
        startup = results["scan startup"][0]
        validate = results["validate -j1"][0]
        print(f"ratio scan local[2]/local[1] throughput: {one / two:.2f}x (goal >= 1.6)")
        if one > startup and two > startup:
            print(f"ratio scan local[2]/local[1] throughput without the fixed start-up: {(one - startup) / (two - startup):.2f}x")
        if "local[1] on 1 CPU" in results:
            pinned = results["local[1] on 1 CPU"][0]
            print(f"ratio scan local[2] on {len(cpus)} CPUs / local[1] pinned to 1 CPU throughput: {pinned / two:.2f}x")
        print(f"ratio scan local[2] time / validate -j1 time: {two / validate:.2f}x (goal < 2)")
        print(f"ratio scan local[1] time / validate -j1 time: {one / validate:.2f}x")
        return 0
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
