"""Shared test fixtures.

Real captures live in ``../shared/fixtures-real`` (beside the project, never copied into it);
tests that need them use ``real_path(...)`` which skips cleanly when the folder is absent.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

PROJECT_ROOT = Path(__file__).resolve().parents[1]
REAL_ROOT = Path(os.environ.get("MQTOOL_REAL_FIXTURES", PROJECT_ROOT.parent / "shared" / "fixtures-real"))
FIXTURES = PROJECT_ROOT / "fixtures"

# Under pytest-xdist (scripts/test.sh runs the suite with `-n auto`) every worker is started with
# COLUMNS=80 and LINES=24 set by xdist; a serial run has no $COLUMNS when piped.  The CLI lays its
# tables out for $COLUMNS (cli/render.terminal_width), so the workers drop them: a test sees the
# environment a serial run gives it, and tests that want a width set it themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# CI: fixed draws, so a run is reproducible (local runs keep exploring new ones)
settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def run_cli(*args: object) -> tuple[int, str, str]:
    """One ``mqtool`` command run in-process: (exit code, stdout, stderr)."""
    import io

    from mqtool.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return int(code), out.getvalue(), err.getvalue()


def copy_fixture(name: str, dest: Path) -> Path:
    """A copy of ``fixtures/NAME`` at ``dest``, to damage."""
    import shutil

    shutil.copytree(FIXTURES / name, dest)
    return dest


def real_path(*parts: str) -> Path:
    """Path under shared/fixtures-real, or skip the test when it is absent."""
    path = REAL_ROOT.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real fixture not available: {path}")
    return path


_HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def lock_held_elsewhere(path: Path) -> Iterator[int]:
    """Another process holds an fcntl record lock on ``path`` (as the broker holds
    ``<root>/lock``) for the duration; yields its pid.  fcntl locks are per process, so a lock
    taken by the test process itself would be invisible to the code under test."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder.pid
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
