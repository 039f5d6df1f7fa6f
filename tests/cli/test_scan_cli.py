"""``mqtool scan`` as an operator meets it, run as a separate process (issue 19, item 11): stderr
holds no JVM or log4j line unless ``--verbose``, no output holds rich markup as text, a terminal
shows the stages and the files read, and a non-empty ``--out`` is refused (exit 2, naming it)
unless ``--overwrite``.

The Spark runs are the slow part (a JVM each): one piped run and one on a terminal, each shared
by the tests that read it."""

from __future__ import annotations

import importlib.util
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from tests.conftest import FIXTURES, PROJECT_ROOT
from tests.pipeline.damage import copy_store, cq_mismatch

STORE = FIXTURES / "rocketmq-store"
TIMEOUT = 900

#: what the JVM, log4j, Hadoop and Spark print on their own: log records (``26/11/24 09:26:58 WARN
#: Utils: ...``), log4j banners, the JVM's warnings
JVM_LINE = re.compile(r"\b(TRACE|DEBUG|INFO|WARN|ERROR)\b|log4j|WARNING:|NativeCodeLoader|setLogLevel|SparkContext|^\d\d/\d\d/\d\d ")
#: rich markup printed as text: ``[red]error[/red]``, ``[bold]``, ``[/]``
MARKUP = re.compile(r"\[(?:/?[a-z]+(?: [a-z]+)*|/)\]")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _spark_available() -> None:
    missing = importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None
    from mqtool.pipeline.java import find_java

    if missing or find_java() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("scan needs pyspark, pyarrow and Java 17+ (CI installs them: see .ci/run)")
        pytest.skip("scan needs pyspark, pyarrow and Java 17+")


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), COLUMNS="200")
    env.pop("MQTOOL_SPARK_LOG_LEVEL", None)
    return env


def scan(*args: object) -> subprocess.CompletedProcess[str]:
    """``mqtool scan ARGS`` with stdout and stderr piped (as from cron or CI)."""
    return subprocess.run(
        [sys.executable, "-m", "mqtool", "scan", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=PROJECT_ROOT,
        env=_env(),
        check=False,
    )


@dataclass
class TtyRun:
    returncode: int
    stdout: str
    stderr: str  # everything drawn on the terminal, escape sequences included


def scan_on_a_terminal(*args: object) -> TtyRun:
    """``mqtool scan ARGS`` with stderr on a pseudo-terminal (a person watching), stdout piped."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqtool", "scan", *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=PROJECT_ROOT,
        env=dict(_env(), TERM="xterm-256color"),
    )
    os.close(slave)
    drawn = bytearray()
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal's last writer has gone
                    break
                if not chunk:
                    break
                drawn += chunk
            elif proc.poll() is not None:
                break
        stdout = proc.stdout.read().decode() if proc.stdout else ""
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stdout:
            proc.stdout.close()
        os.close(master)
    return TtyRun(proc.returncode, stdout, drawn.decode("utf-8", "replace"))


# --- --out: refused before Spark starts -----------------------------------------------------------


def test_a_non_empty_out_is_refused_with_exit_2_naming_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("{}")
    done = scan(STORE, "--out", out)
    assert done.returncode == 2, done.stderr
    assert f"{out} is not empty (report.json)" in done.stderr and "--overwrite" in done.stderr
    assert done.stdout == ""
    assert (out / "report.json").read_text() == "{}"  # untouched
    assert not JVM_LINE.search(done.stderr)  # refused before any JVM started


def test_a_non_empty_out_given_as_a_file_uri_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    done = scan(STORE, "--out", tmp_path.as_uri(), "--json")
    assert done.returncode == 2 and f"{tmp_path.as_uri()} is not empty (notes.txt)" in done.stderr
    assert done.stdout == ""


def test_an_out_that_is_a_file_is_refused_even_with_overwrite(tmp_path):
    target = tmp_path / "report"
    target.write_text("mine")
    done = scan(STORE, "--out", target, "--overwrite")
    assert done.returncode == 2 and f"{target} is a file" in done.stderr
    assert target.read_text() == "mine"


def test_the_options_are_in_the_help():
    done = scan("--help")
    assert done.returncode == 0
    for option in ("--overwrite", "--verbose", "-v", "--quiet"):
        assert option in done.stdout


# --- a scan, piped --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def piped(tmp_path_factory):
    """The clean fixture and a damaged copy (one ConsumeQueue unit points at the wrong record)
    scanned in one run, output piped, into an --out holding an earlier scan's results and a file
    of the user's, with --overwrite."""
    _spark_available()
    base = tmp_path_factory.mktemp("scan-piped")
    damaged = copy_store(base / "damaged")
    cq_mismatch(damaged)
    out = base / "out"
    (out / "kafka_records" / "source=old").mkdir(parents=True)
    (out / "kafka_records" / "source=old" / "part-0.parquet").write_bytes(b"stale")
    (out / "report.json").write_text('{"stale": true}')
    (out / "notes.txt").write_text("the user's own")
    done = scan(f"clean={STORE}", f"damaged={damaged}", "--out", out, "--overwrite")
    return done, out


def test_piped_stderr_holds_no_jvm_or_log4j_line(piped):
    done, _ = piped
    jvm = [line for line in done.stderr.splitlines() if JVM_LINE.search(line)]
    assert jvm == [], done.stderr
    assert done.stderr == "", "nothing but the report is printed: no progress when stderr is piped"


def test_piped_report_has_no_markup_and_no_escapes(piped):
    done, _ = piped
    assert done.returncode == 1, done.stderr  # the damaged copy's error
    assert "RMQ-CQ-MISMATCH" in done.stdout and "error" in done.stdout and "FAILED" in done.stdout
    assert not MARKUP.search(done.stdout), MARKUP.search(done.stdout)
    assert not ANSI.search(done.stdout)


def test_overwrite_replaces_an_earlier_scan_and_leaves_other_files(piped):
    done, out = piped
    report = json.loads((out / "report.json").read_text())
    assert {i["source"] for i in report["inputs"]} == {"clean", "damaged"}
    assert not (out / "kafka_records").exists(), "an earlier scan's dataset of another layout would mislead"
    assert (out / "notes.txt").read_text() == "the user's own"
    assert (out / "messages" / "_SUCCESS").exists()
    severities = {f["severity"] for f in report["findings"]}
    assert severities == {"error"} and not any(MARKUP.search(f["severity"]) for f in report["findings"])


def test_a_second_scan_into_the_same_out_is_refused(piped):
    _, out = piped
    done = scan(STORE, "--out", out)
    assert done.returncode == 2 and f"{out} is not empty" in done.stderr
    assert json.loads((out / "report.json").read_text())["inputs"][0]["source"] == "clean"


# --- a scan on a terminal, --verbose ---------------------------------------------------------------


@pytest.fixture(scope="module")
def on_a_terminal(tmp_path_factory):
    _spark_available()
    out = tmp_path_factory.mktemp("scan-tty") / "out"
    return scan_on_a_terminal(STORE, "--out", out, "--verbose")


def _screen_lines(drawn: str) -> list[str]:
    """What the terminal showed, line by line (escape sequences dropped, redraws split)."""
    return [ANSI.sub("", part).strip() for part in re.split(r"[\r\n]", drawn) if ANSI.sub("", part).strip()]


def test_a_terminal_shows_the_stages_and_the_files_read(on_a_terminal):
    assert on_a_terminal.returncode == 0, on_a_terminal.stderr[-2000:]
    lines = _screen_lines(on_a_terminal.stderr)
    for stage in ("1/7 starting Spark", "2/7 reading CommitLog files", "4/7 reading ConsumeQueue files", "5/7 reading IndexFiles"):
        assert any(stage in line for line in lines), stage
    # the fixture's 6 CommitLog files, 13 ConsumeQueue files and 2 IndexFiles, each read to the end
    for count in ("6/6 files", "13/13 files", "2/2 files"):
        assert any(count in line for line in lines), count
    assert not MARKUP.search("\n".join(lines))


def test_verbose_shows_the_jvm_log(on_a_terminal):
    lines = _screen_lines(on_a_terminal.stderr)
    assert any("log4j" in line for line in lines)


def test_the_report_on_stdout_is_plain_when_piped(on_a_terminal):
    assert "OK: 0 error(s)" in on_a_terminal.stdout
    assert not ANSI.search(on_a_terminal.stdout) and not MARKUP.search(on_a_terminal.stdout)
