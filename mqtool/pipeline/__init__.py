"""The Spark pipeline: data sources for every file family, and the ``mqtool scan`` job.

Nothing here imports pyspark or pyarrow at import time; ``register`` and ``build_session`` do.

From any PySpark session::

    import mqtool.pipeline
    mqtool.pipeline.register(spark)
    spark.read.format("rocketmq_commitlog").load("/data/broker-a/store").groupBy("topic").count()
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The data sources ``register`` adds (see ``mqtool.pipeline.sources``).
FORMAT_NAMES = (
    "rocketmq_commitlog",
    "rocketmq_consumequeue",
    "rocketmq_index",
    "kafka_log",
    "jafka_log",
    "metaq_log",
)

SPARK_EXTRA_HINT = "pip install 'mqtool[spark]'"


def register(spark: SparkSession) -> None:
    """Register mqtool's data sources with ``spark`` (and enable Python filter pushdown, which
    the sources use for ``topic`` filters)."""
    from mqtool.pipeline.sources import SOURCES

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    for source in SOURCES:
        spark.dataSource.register(source)


def _under_spark_submit() -> bool:
    """The driver was started by ``spark-submit`` (which already chose the master)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(master: str | None = None, conf: Iterable[tuple[str, str]] = (), app_name: str = "mqtool scan", *, verbose: bool = False) -> SparkSession:
    """A SparkSession with mqtool's sources registered.

    ``master`` defaults to ``local[*]`` unless running under ``spark-submit``.  Python workers
    run this interpreter (``PYSPARK_PYTHON``) so they import the same pyarrow and mqtool; on a
    cluster set ``PYSPARK_PYTHON`` (or ``spark.pyspark.python``) to the executors' interpreter.

    When this call starts the driver JVM, its log is quiet unless ``verbose``: errors only, and
    none of the JVM's start-up chatter (``mqtool.pipeline.jvm_log``).
    """
    from mqtool.pipeline.java import require_java
    from mqtool.pipeline.jvm_log import LEVEL_ENV, level

    require_java()
    conf = list(conf)
    effective_master = master or ("" if _under_spark_submit() else "local[*]")
    if effective_master.startswith("local") or not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    defaults = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.sql.sources.partitionOverwriteMode": "static",
    }
    if effective_master.startswith("local"):
        # the driver JVM is the only executor: give it room to cache the decoded CommitLog
        defaults["spark.driver.memory"] = "4g"
        defaults["spark.sql.shuffle.partitions"] = str(max(4, 2 * (os.cpu_count() or 1)))
    given = {k for k, _ in conf}
    settings = [(key, value) for key, value in defaults.items() if key not in given] + conf
    if _starts_jvm():
        spark = _launch(effective_master, app_name, settings, verbose=verbose)
    else:  # a JVM runs already (spark-submit's, or an earlier session's): its log is what it is
        builder = SparkSession.builder.appName(app_name)
        if effective_master:
            builder = builder.master(effective_master)
        for key, value in settings:
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    if not verbose or os.environ.get(LEVEL_ENV):
        spark.sparkContext.setLogLevel(level())
    register(spark)
    return spark


def _starts_jvm() -> bool:
    """No driver JVM runs in this process yet, so the session about to be built starts one."""
    from pyspark import SparkContext

    return not _under_spark_submit() and getattr(SparkContext, "_gateway", None) is None


def _launch(master: str, app_name: str, settings: list[tuple[str, str]], *, verbose: bool) -> SparkSession:
    """Start the driver JVM as ``SparkSession.builder.getOrCreate`` would (``launch_gateway``
    runs ``spark-submit`` with the same ``--conf`` settings), but with its stderr read through
    ``StderrPump`` and, unless ``verbose``, the quiet log4j2 configuration."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    from mqtool.pipeline.jvm_log import StderrPump, quiet_conf

    if not verbose:
        settings = quiet_conf(settings)
    spark_conf = SparkConf()
    if master:
        spark_conf.set("spark.master", master)
    spark_conf.set("spark.app.name", app_name)
    for key, value in settings:
        spark_conf.set(key, value)
    pump = StderrPump(verbose=verbose)
    try:
        # popen_kwargs: pyspark's hook "for customizing how pyspark interacts with the py4j JVM
        # (e.g., capturing stdout/stderr)"
        gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": pump.write_fd})  # type: ignore[no-untyped-call]
    except BaseException:
        pump.drain()  # a JVM that did not start said why on its stderr: show it before the error
        raise
    pump.launched()
    SparkContext(conf=spark_conf, gateway=gateway)
    return SparkSession.builder.getOrCreate()


@contextlib.contextmanager
def session(master: str | None = None, conf: Iterable[tuple[str, str]] = (), app_name: str = "mqtool scan", *, verbose: bool = False) -> Iterator[SparkSession]:
    """``build_session`` as a context: the session is stopped at the end unless it was already
    running (a notebook's, a test's, or ``spark-submit``'s own)."""
    from mqtool.pipeline.java import require_java

    require_java()
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    spark = build_session(master, conf, app_name, verbose=verbose)
    try:
        yield spark
    finally:
        if existing is None and not _under_spark_submit():
            spark.stop()
