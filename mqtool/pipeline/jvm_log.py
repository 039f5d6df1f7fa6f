"""What the Spark driver JVM prints, and how ``mqtool scan`` keeps it off the operator's screen.

Left alone, a local Spark session opens stderr with seven lines of JVM, log4j and Hadoop noise
(``WARNING: Using incubator modules``, ``Using Spark's default log4j profile``, ``WARN Utils: Your
hostname ... resolves to a loopback address``, ``Setting default log level to "WARN"``, ``WARN
NativeCodeLoader``...) and a WARN line whenever a stage spills or a hostname looks odd.  None of it
is about the store.  When mqtool starts the driver JVM itself (not under ``spark-submit``, no JVM
running in this process yet) it

* gives the driver a log4j2 configuration (``QUIET_LOG4J2``, written to a temporary file and
  passed as ``-Dlog4j2.configurationFile`` in ``spark.driver.extraJavaOptions``): the root logger
  and ``org.apache.spark`` at ERROR (``MQTOOL_SPARK_LOG_LEVEL`` overrides), which also keeps
  Spark's shell logging from announcing its default level; a configuration the user passes in
  their own ``spark.driver.extraJavaOptions`` wins;
* reads the JVM's stderr through a pipe (``StderrPump``) and drops the lines that are not log
  records at all: the JVM's own ``WARNING:`` lines and Spark's log4j banners (``is_noise``).
  Everything else -- log records at ERROR, a JVM that fails to start, a Python worker's
  traceback -- goes on to this process's ``sys.stderr`` (looked up per line, so a progress
  display that redirects ``sys.stderr`` prints them above itself).

With ``verbose`` nothing is configured or dropped: the JVM log is Spark's own, line for line.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

#: The level of the driver's log4j2 root logger unless ``MQTOOL_SPARK_LOG_LEVEL`` says otherwise.
DEFAULT_LEVEL = "ERROR"
LEVEL_ENV = "MQTOOL_SPARK_LOG_LEVEL"

#: The driver's log4j2 configuration (``{level}`` filled in).  ``org.apache.spark`` gets its own
#: logger entry: Spark's shell logging (pyspark starts the driver as ``pyspark-shell``) treats a
#: Spark logger without one as unconfigured and prints ``Setting default log level to "WARN"``.
QUIET_LOG4J2 = """\
# written by mqtool scan: the driver logs errors only (mqtool scan --verbose shows Spark's own log)
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = {level}
"""

EXTRA_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
CONFIG_PROPERTY = "-Dlog4j2.configurationFile="

#: stderr lines of the JVM that are not log records: the JVM's own warnings (``WARNING: Using
#: incubator modules: jdk.incubator.vector``, ``WARNING: A terminally deprecated method ...``,
#: ``WARNING: sun.misc.Unsafe ...``) and Spark's banners about its log4j setup.
_NOISE = re.compile(r"^(WARNING: |Using Spark's default log4j profile|Setting default log level to |To adjust logging level use sc\.setLogLevel)")


def is_noise(line: str) -> bool:
    """A line the JVM prints that says nothing about the scan (dropped unless ``--verbose``)."""
    return bool(_NOISE.match(line))


def level() -> str:
    return os.environ.get(LEVEL_ENV) or DEFAULT_LEVEL


def write_config(directory: str) -> str:
    """Write the quiet log4j2 configuration into ``directory``; its ``file:`` URI."""
    path = Path(directory) / "log4j2-mqtool.properties"
    path.write_text(QUIET_LOG4J2.format(level=level().lower()), encoding="utf-8")
    return path.as_uri()


def quiet_conf(conf: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``conf`` with the quiet log4j2 configuration added to the driver's Java options (after
    any the user gave), unless the user already names a log4j2 configuration.  The file lives
    in a temporary directory removed when this process exits."""
    pairs = list(conf)
    given = " ".join(value for key, value in pairs if key == EXTRA_JAVA_OPTIONS)
    if CONFIG_PROPERTY in given:
        return pairs
    directory = tempfile.mkdtemp(prefix="mqtool-spark-")
    atexit.register(shutil.rmtree, directory, True)
    option = CONFIG_PROPERTY + write_config(directory)
    rest = [(key, value) for key, value in pairs if key != EXTRA_JAVA_OPTIONS]
    return [*rest, (EXTRA_JAVA_OPTIONS, f"{given} {option}".strip())]


class StderrPump:
    """A pipe to give the JVM as its stderr, and a daemon thread copying what comes out of it
    to ``sys.stderr`` line by line, less the noise (unless ``verbose``)."""

    def __init__(self, *, verbose: bool = False) -> None:
        self.verbose = verbose
        self._read_fd, self.write_fd = os.pipe()
        self._thread = threading.Thread(target=self._run, name="mqtool-jvm-stderr", daemon=True)
        self._thread.start()

    def launched(self) -> None:
        """The JVM holds its own copy of the write end now: close ours, so the thread sees the
        end of the stream when the JVM exits."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def drain(self, timeout: float = 5.0) -> None:
        """Wait (a little) for the thread to pass on what a JVM that has exited printed."""
        self.launched()
        self._thread.join(timeout)

    def _run(self) -> None:
        with os.fdopen(self._read_fd, "r", encoding="utf-8", errors="replace") as stream:
            for line in stream:
                if not self.verbose and is_noise(line):
                    continue
                try:
                    sys.stderr.write(line)
                    sys.stderr.flush()
                except (OSError, ValueError):  # stderr closed (a test's capture ended, a pipe reader left)
                    pass
