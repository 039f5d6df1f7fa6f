"""Every documented exit code, reached through the CLI as an operator reaches it (one case per
``ExitCode`` member; a member with no case fails the test)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mqtool.cli.exit_codes import ExitCode
from tests.conftest import FIXTURES, PROJECT_ROOT, lock_held_elsewhere


def cli(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mqtool", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT, env=env, check=False)


def _torn_store(tmp: Path) -> Path:
    root = tmp / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    last = sorted((root / "commitlog").iterdir())[-1]
    with open(last, "r+b") as f:
        f.truncate(4000)  # a CommitLog file of the wrong length, its tail torn: recover has work
    return root


def case_ok(tmp: Path) -> subprocess.CompletedProcess[str]:
    return cli("validate", FIXTURES / "rocketmq-store")


def case_findings(tmp: Path) -> subprocess.CompletedProcess[str]:
    return cli("validate", _torn_store(tmp))


def case_usage(tmp: Path) -> subprocess.CompletedProcess[str]:
    return cli("validate", FIXTURES / "rocketmq-store", "--no-such-option")


def case_io(tmp: Path) -> subprocess.CompletedProcess[str]:
    (tmp / "empty").mkdir()
    return cli("info", tmp / "empty")  # not a store


def case_unsupported(tmp: Path) -> subprocess.CompletedProcess[str]:
    return cli("lag", FIXTURES / "jafka-data")  # Jafka keeps its consumer offsets in ZooKeeper


def case_broker_running(tmp: Path) -> subprocess.CompletedProcess[str]:
    root = _torn_store(tmp)
    with lock_held_elsewhere(root / "lock"):
        return cli("recover", root, "--apply", "--quarantine", tmp / "q")


def case_internal(tmp: Path) -> subprocess.CompletedProcess[str]:
    # a bug: a command that raises something mqtool does not expect
    code = (
        "import sys; import mqtool.ops.info as m; m.store_info = lambda *a: 1 / 0; from mqtool.cli.main import main; sys.argv = ['mqtool', 'info', sys.argv[1]]; main()"
    )
    return subprocess.run([sys.executable, "-c", code, str(FIXTURES / "rocketmq-store")], capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT, check=False)


def case_busy(tmp: Path) -> subprocess.CompletedProcess[str]:
    root = _torn_store(tmp)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from mqtool.store.lock import ExclusiveLock; "
         "l = ExclusiveLock(Path(sys.argv[1])).acquire(); print('held', flush=True); sys.stdin.read()", str(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        return cli("recover", root, "--apply", "--quarantine", tmp / "q")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def case_interrupted(tmp: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys; import mqtool.ops.info as m\n"
        "def stop(*a): raise KeyboardInterrupt\n"
        "m.store_info = stop; from mqtool.cli.main import main; sys.argv = ['mqtool', 'info', sys.argv[1]]; main()"
    )
    return subprocess.run([sys.executable, "-c", code, str(FIXTURES / "rocketmq-store")], capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT, check=False)


CASES = {
    ExitCode.OK: case_ok,
    ExitCode.FINDINGS: case_findings,
    ExitCode.USAGE: case_usage,
    ExitCode.IO: case_io,
    ExitCode.UNSUPPORTED: case_unsupported,
    ExitCode.BROKER_RUNNING: case_broker_running,
    ExitCode.INTERNAL: case_internal,
    ExitCode.BUSY: case_busy,
    ExitCode.INTERRUPTED: case_interrupted,
}


def test_every_exit_code_has_a_case():
    assert set(CASES) == set(ExitCode)


@pytest.mark.parametrize("code", list(ExitCode), ids=lambda c: f"{int(c)}-{c.name}")
def test_exit_code_through_the_cli(code, tmp_path):
    proc = CASES[code](tmp_path)
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr  # only with --debug
    if code not in (ExitCode.OK, ExitCode.FINDINGS):
        assert proc.stderr.strip(), "an exit code other than 0 and 1 says why on stderr"


def test_readme_table_lists_exactly_the_codes():
    readme = (PROJECT_ROOT / "README.md").read_text()
    table = readme[readme.index("## Exit codes") :].split("\n## ", 1)[0]
    assert {int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)} == {int(c) for c in ExitCode}


def _closed_reader(*args: object) -> subprocess.CompletedProcess[bytes]:
    """``mqtool ARGS | head -0``: the reader has gone before the first byte is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "mqtool", *map(str, args)], stdout=write, stderr=subprocess.PIPE, timeout=120, cwd=PROJECT_ROOT, check=False)
    finally:
        os.close(write)
    return proc


@pytest.mark.parametrize(
    ("command", "fmt"),
    [(c, f) for c in ("validate", "info", "stats") for f in ("table", "json", "jsonl", "openmetrics") if (c, f) != ("info", "openmetrics")],
)
def test_a_closed_pipe_keeps_the_verdict(command, fmt, tmp_path):
    """A reader that closes stdout (``| head``) silences the rest of a report, not its verdict:
    a damaged store still exits 1 (with ``set -o pipefail`` a CI job sees it), a healthy one 0."""
    damaged = _closed_reader(command, _torn_store(tmp_path), "--format", fmt, "--all")
    assert damaged.returncode == ExitCode.FINDINGS, damaged.stderr[-2000:]
    assert b"Traceback" not in damaged.stderr
    healthy = _closed_reader(command, FIXTURES / "rocketmq-store", "--format", fmt, "--all")
    assert healthy.returncode == ExitCode.OK, healthy.stderr[-2000:]


def test_a_closed_pipe_stops_a_dump_quietly():
    proc = _closed_reader("dump", "commitlog", FIXTURES / "rocketmq-store", "--jsonl")
    assert proc.returncode == ExitCode.OK and not proc.stderr
