"""One SparkSession for the whole run: ``local[2]``, UI off, two shuffle partitions.

The Spark tests need pyspark (``pip install 'mqtool[spark]'``) and Java 17+; without them they
skip locally, and fail under CI (``CI=true``), whose ``.ci/run`` installs both.
"""

from __future__ import annotations

import os

import pytest


def _require(condition: bool, reason: str) -> None:
    if not condition:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI installs it: see .ci/run)")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def spark():
    import importlib.util

    _require(importlib.util.find_spec("pyspark") is not None, "pyspark is not installed (pip install 'mqtool[spark]')")
    from mqtool.pipeline.java import find_java

    _require(find_java() is not None, "no Java runtime for Spark")
    from mqtool.pipeline import build_session

    session = build_session(
        "local[2]",
        [
            ("spark.ui.enabled", "false"),
            ("spark.sql.shuffle.partitions", "2"),
            ("spark.default.parallelism", "2"),
            ("spark.sql.adaptive.coalescePartitions.initialPartitionNum", "2"),
        ],
        app_name="mqtool tests",
    )
    yield session
    session.stop()
