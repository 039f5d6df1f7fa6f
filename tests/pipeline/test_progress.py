"""The pieces of scan's progress and quiet JVM that need no Spark: the files-done tally the data
sources write, which JVM lines are noise, and how the quiet log4j2 configuration joins the
user's own Java options.  (Through the CLI, with Spark: ``tests/cli/test_scan_cli.py``.)"""

from __future__ import annotations

from mqtool.pipeline import jvm_log
from mqtool.pipeline.progress import FileTally, record_done, record_plan


def test_a_file_is_done_when_every_partition_holding_it_is(tmp_path):
    path = str(tmp_path / "read.jsonl")
    tally = FileTally(path)
    assert tally.poll() is None  # nothing planned yet
    # a big file cut into two ranges, a small one, and a group of two queue files
    record_plan(path, [["big"], ["big"], ["small"], ["q0", "q1"]])
    assert tally.poll() == (0, 4)
    record_done(path, 0)
    assert tally.poll() == (0, 4)  # half of "big"
    record_done(path, 3)
    record_done(path, 1)
    assert tally.poll() == (3, 4)
    record_done(path, 2)
    assert tally.poll() == (4, 4)


def test_a_second_plan_a_retried_partition_and_a_half_written_line_count_once(tmp_path):
    path = tmp_path / "read.jsonl"
    record_plan(str(path), [["a"], ["b"]])
    record_plan(str(path), [["a"], ["b"]])  # Spark planned the read again
    record_done(str(path), 0)
    record_done(str(path), 0)  # a retried task
    with open(path, "a") as handle:
        handle.write('{"done": ')  # a worker still writing
    tally = FileTally(str(path))
    assert tally.poll() == (1, 2)
    with open(path, "a") as handle:
        handle.write("1}\n")
    assert tally.poll() == (2, 2)


def test_the_jvm_s_own_warnings_and_spark_s_log4j_banners_are_noise():
    for line in (
        "WARNING: Using incubator modules: jdk.incubator.vector",
        "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties",
        'Setting default log level to "WARN".',
        "To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).",
    ):
        assert jvm_log.is_noise(line), line
    for line in (
        "26/11/24 09:27:00 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)",
        "Error: Could not find or load main class org.apache.spark.launcher.Main",
        "Traceback (most recent call last):",
    ):
        assert not jvm_log.is_noise(line), line


def test_the_quiet_configuration_joins_the_user_s_java_options(tmp_path, monkeypatch):
    monkeypatch.setenv(jvm_log.LEVEL_ENV, "warn")
    conf = jvm_log.quiet_conf([("spark.driver.extraJavaOptions", "-Dmine=1"), ("spark.executor.memory", "2g")])
    options = dict(conf)["spark.driver.extraJavaOptions"]
    assert options.startswith("-Dmine=1 -Dlog4j2.configurationFile=file:")
    assert ("spark.executor.memory", "2g") in conf
    written = options.split("configurationFile=file://", 1)[1]
    text = open(written, encoding="utf-8").read()
    assert "rootLogger.level = warn" in text and "logger.spark.level = warn" in text


def test_a_log4j2_configuration_of_the_user_s_own_wins():
    given = [("spark.driver.extraJavaOptions", "-Dlog4j2.configurationFile=/etc/mine.properties")]
    assert jvm_log.quiet_conf(given) == given
