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

``--breakdown`` then says where a local[1] read goes: the Python side alone (``read_commitlog``
over the same partitions in this process), the same query over a Python source that replays the
source's own Arrow batches prebuilt (what Spark costs for rows of this schema: the ceiling of any
Python source), and over one that yields nothing (Spark's fixed cost per query and task).
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
    ap.add_argument("--breakdown", action="store_true", help="also time the Python side alone, replayed batches and an empty read")
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
        if args.breakdown:
            breakdown(work, count, args)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fastest(run, repeat: int) -> float:
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def breakdown(work: Path, count: int, args: argparse.Namespace) -> None:
    """Where a local[1] read goes (see the module docstring)."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from mqtool.pipeline import session
    from mqtool.pipeline import sources as S

    opts = S.parse_options({"path": str(work / "store"), "splitSize": str(args.split_mib << 20)})
    columns = S._columns(S.COMMITLOG_COLUMNS, opts, "commitlog")
    schema = S.arrow_schema(columns)
    parts = S.plan_commitlog(opts)

    def python_side() -> None:
        for part in parts:
            for _ in S.read_commitlog(part, opts, schema):
                pass

    took = _fastest(python_side, args.repeat)
    print(f"python side alone (one process): {took:6.2f} s, {count / took:,.0f} rows/s")
    # the source's batches, partition by partition, as IPC files the replaying source reads
    files = []
    for index, part in enumerate(parts):
        path = work / f"part-{index}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for batch in S.read_commitlog(part, opts, schema):
                writer.write_batch(batch)
        files.append(str(path))

    class Part(InputPartition):
        def __init__(self, path: str) -> None:
            super().__init__(path)
            self.path = path

    class Reader(DataSourceReader):
        def __init__(self, options: dict) -> None:
            self.options = options

        def partitions(self):
            return [Part(p) for p in self.options["files"].split(",")]

        def read(self, partition):
            if self.options.get("empty") == "true":
                return
            with pa.memory_map(partition.path) as source:
                yield from pa.ipc.open_stream(source)

    class Replay(DataSource):
        @classmethod
        def name(cls) -> str:
            return "mqtool_bench_replay"

        def schema(self):
            return S.ddl(columns)

        def reader(self, schema):
            return Reader(dict(self.options))

    with session("local[1]") as spark:
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(Replay)
        for label, empty in (("replayed batches (Spark's side)", "false"), ("empty partitions (fixed cost)", "true")):
            df = spark.read.format("mqtool_bench_replay").option("files", ",".join(files)).option("empty", empty).load()
            df.limit(1).collect()
            took = _fastest(lambda df=df: df.selectExpr("sum(length(body))").collect(), args.repeat)
            print(f"local[1] {label}: {took:6.2f} s{'' if empty == 'true' else f', {count / took:,.0f} rows/s'}, {len(files)} partitions")


if __name__ == "__main__":
    sys.exit(main())
