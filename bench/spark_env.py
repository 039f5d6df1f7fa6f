"""What the Spark benchmarks need before they start: pyspark, pyarrow and a Java 17+ (and, for
the ones that count busy cores, ``/proc/stat``)."""

from __future__ import annotations

import importlib.util
import os


def missing(proc_stat: bool = False) -> str | None:
    """Why a Spark benchmark cannot run here, or None when it can."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None:
        return "pyspark/pyarrow not installed: pip install 'mqtool[spark]'"
    from mqtool.pipeline.java import find_java

    if find_java() is None:
        return "no Java 17+ for Spark"
    if proc_stat and not os.path.exists("/proc/stat"):
        return "no /proc/stat to count busy cores"
    return None


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, from ``/proc/stat``."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)
