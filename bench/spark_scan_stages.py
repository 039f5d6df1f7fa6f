"""Diagnostic: where ``scan``'s time goes, action by action, local[1] next to local[2].

    python bench/spark_scan_stages.py [--size-mib 256] [--file-mib 64] [--split-mib 64]

Generates a store (the generator of ``validate_throughput.py``), then runs the scan job
(``mqtool.pipeline.jobs.run``) once per master in this process and times every Spark action it
triggers (each Parquet write, ``collect`` and ``count``), with the number of tasks of the frame
written and the machine's busy cores during the action (``/proc/stat``: run it on an otherwise
idle machine).  The table shows which steps gain from a second core and which do not.  Prints,
asserts nothing; without pyspark or Java it says "skipped".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.spark_env import cpu_jiffies as _cpu  # noqa: E402
from bench.spark_env import missing  # noqa: E402
from bench.validate_throughput import generate  # noqa: E402


def _caller() -> str:
    """The line of ``pipeline/jobs.py`` that triggered the action."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename.endswith(os.path.join("pipeline", "jobs.py")):
            return f"jobs.py:{frame.lineno} {frame.name}"
    return "?"


def instrument(log: list[dict], frame_class: type) -> None:
    """Time every action; ``frame_class`` is the class of the session's DataFrames (pyspark 4's
    classic DataFrame overrides the actions of ``pyspark.sql.DataFrame``)."""
    from pyspark.sql import DataFrameWriter

    def wrap(owner, name, tasks):
        original = getattr(owner, name)

        def timed(self, *args, **kwargs):
            where = _caller()
            p0 = time.perf_counter()
            parts = tasks(self)
            probe = time.perf_counter() - p0
            busy0, total0 = _cpu()
            t0 = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                wall = time.perf_counter() - t0
                busy1, total1 = _cpu()
                cores = (os.cpu_count() or 1) * (busy1 - busy0) / max(1, total1 - total0)
                log.append({"action": name, "where": where, "seconds": wall, "cores": cores, "partitions": parts, "probe": probe})

        setattr(owner, name, timed)

    wrap(frame_class, "collect", lambda df: df.rdd.getNumPartitions())
    wrap(frame_class, "count", lambda df: df.rdd.getNumPartitions())
    wrap(DataFrameWriter, "parquet", lambda w: w._df.rdd.getNumPartitions())


def run_one(master: str, store: Path, out: Path, split_mib: int) -> dict:
    """One scan under ``master`` in this process: its actions, session start and total."""
    from mqtool.pipeline import jobs, session

    log: list[dict] = []
    t0 = time.perf_counter()
    with session(master) as spark:
        spark.sparkContext.setLogLevel("ERROR")
        instrument(log, type(spark.range(1)))
        started = time.perf_counter() - t0
        cfg = jobs.ScanConfig(inputs=(jobs.ScanInput("store", str(store), "rocketmq"),), out=str(out), split_size=split_mib << 20)
        jobs.run(spark, cfg)
    return {"actions": log, "total": time.perf_counter() - t0, "started": started}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--file-mib", type=int, default=64)
    ap.add_argument("--split-mib", type=int, default=64)
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: MASTER STORE OUT, prints JSON
    ap.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args.one, args.store, args.out, args.split_mib)))
        return 0
    reason = missing(proc_stat=True)
    if reason:
        print(f"spark_scan_stages: skipped ({reason})")
        return 0
    work = Path(tempfile.mkdtemp(prefix="mqtool-spark-stages-"))
    try:
        count, end = generate(work / "store", args.size_mib, args.file_mib, 1024)
        print(f"store: {count:,} records, {end / 2**20:,.0f} MiB; {os.cpu_count()} cores; split {args.split_mib} MiB")
        runs = {}
        for i, master in enumerate(args.masters.split(",")):
            # each master in a fresh process: a warm JVM would favour whichever runs second
            done = subprocess.run(
                [sys.executable, __file__, "--one", master, "--store", str(work / "store"), "--out", str(work / f"out{i}"), "--split-mib", str(args.split_mib)],
                capture_output=True,
                check=False,
                text=True,
                env=dict(os.environ, MQTOOL_SPARK_LOG_LEVEL="ERROR"),
            )
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode != 0 or not lines:
                sys.stderr.write(done.stderr[-3000:])
                return 1
            runs[master] = json.loads(lines[-1][len("RESULT ") :])
        masters = list(runs)
        print(f"{'step':<44} " + " ".join(f"{m + ' s':>11} {'cores':>5} {'parts':>5}" for m in masters))
        first = runs[masters[0]]["actions"]
        for i, row in enumerate(first):
            cells = []
            for m in masters:
                acts = runs[m]["actions"]
                r = acts[i] if i < len(acts) else None
                cells.append(f"{r['seconds']:>11.1f} {r['cores']:>5.2f} {r['partitions']:>5}" if r else " " * 23)
            print(f"{row['where'] + ' ' + row['action']:<44} " + " ".join(cells))
        for m in masters:
            total, started = runs[m]["total"], runs[m]["started"]
            actions = sum(r["seconds"] for r in runs[m]["actions"])
            probes = sum(r["probe"] for r in runs[m]["actions"])
            rest = total - started - actions - probes
            print(f"{m}: total {total:.1f} s = session start {started:.1f} s + actions {actions:.1f} s + counting partitions {probes:.1f} s + other {rest:.1f} s")
        if len(masters) == 2:
            a, b = (runs[m]["total"] - runs[m]["started"] - sum(r["probe"] for r in runs[m]["actions"]) for m in masters)
            print(f"ratio {masters[1]}/{masters[0]} throughput after session start: {a / b:.2f}x")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
