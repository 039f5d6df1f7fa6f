"""Tables at ordinary widths (issue 19): at COLUMNS=80 and 200, piped, the verdict comes first,
no line is wider than the terminal and no identifier (segment name, code, position) is broken
across lines.  Golden files hold the whole output (MQTOOL_UPDATE_GOLDEN=1 to accept a change)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import check_golden
from tests.conftest import FIXTURES, PROJECT_ROOT

WIDTHS = (80, 200)


def table(width: int, *args: object) -> tuple[int, str]:
    env = {**os.environ, "COLUMNS": str(width), "TZ": "UTC", "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("PAGER", None)
    # paths relative to the project, trailing blanks dropped: the goldens hold no checkout's path
    argv = [str(a.relative_to(PROJECT_ROOT)) if isinstance(a, Path) and a.is_relative_to(PROJECT_ROOT) else str(a) for a in args]
    proc = subprocess.run([sys.executable, "-m", "mqtool", *argv], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, check=False)
    return proc.returncode, "".join(line.rstrip() + "\n" for line in proc.stdout.splitlines())


def _damaged(tmp: Path) -> Path:
    root = tmp / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    os.truncate(root / "commitlog" / "00000000000000081920", 4000)
    with open(root / "commitlog" / "00000000000000032768", "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 4)
    return root


def _identifiers_whole(text: str, root: Path) -> None:
    """Every segment name the store holds that the output mentions is on one line, whole."""
    names = {p.name for p in root.rglob("*") if p.is_file() and re.fullmatch(r"\d{20}", p.name)}
    tokens = re.findall(r"(?<!\d)\d{10,19}(?!\d)", text)  # digit runs shorter than a name
    broken = sorted({t for t in tokens if any(n.startswith(t) or n.endswith(t) for n in names)})
    assert not broken, f"segment names broken across lines: {broken}"


@pytest.mark.parametrize("width", WIDTHS)
def test_validate_table(tmp_path, width):
    for name, root, expected in (("healthy", FIXTURES / "rocketmq-store", 0), ("damaged", _damaged(tmp_path), 1)):
        code, out = table(width, "validate", root)
        assert code == expected
        lines = out.splitlines()
        assert lines[0].startswith("OK: " if expected == 0 else "FAILED: ")  # the verdict first
        assert max(map(len, lines)) <= width
        _identifiers_whole(out, root)
        check_golden(f"validate.rocketmq-{name}.table{width}.txt", out.replace(str(root), "STORE"))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("store", ["rocketmq-store", "kafka-logs"])
def test_lag_table(width, store):
    code, out = table(width, "lag", FIXTURES / store)
    assert code == 0
    assert max(map(len, out.splitlines())) <= width
    assert re.match(r"\d+ group\(s\), ", out)
    check_golden(f"lag.{store}.table{width}.txt", out)


def test_validate_all_lists_every_file():
    _, out = table(200, "validate", FIXTURES / "rocketmq-store", "--all")
    files = [p for p in (FIXTURES / "rocketmq-store").rglob("*") if p.is_file() and re.fullmatch(r"\d{17,20}", p.name)]
    assert all(p.relative_to(FIXTURES / "rocketmq-store").as_posix() in out for p in files)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("store", ["rocketmq-store", "kafka-logs", "jafka-data", "metaq-data"])
@pytest.mark.parametrize("command", ["info", "stats"])
def test_info_and_stats_tables_keep_names_and_numbers_whole(command, store, width):
    root = FIXTURES / store
    code, out = table(width, command, root)
    assert code == 0
    assert max(map(len, out.splitlines())) <= width
    _identifiers_whole(out, root)
    # partition directories and big offsets (Jafka's 4294968296) are never split over lines
    for part in (p.name for p in root.iterdir() if p.is_dir() and re.search(r"-\d+$", p.name)):
        lines_with = [line for line in out.splitlines() if part[: max(4, len(part) // 2)] in line]
        assert not lines_with or any(part in line for line in lines_with), part
    if command == "stats":  # disk figures vary with the machine: not golden
        return
    text = re.sub(r"\d+(\.\d+)? ?(Bytes|KiB|MiB|GiB|TiB)", "SIZE", out)
    check_golden(f"info.{store}.table{width}.txt", text)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    "args",
    [
        ("dump", "commitlog", FIXTURES / "rocketmq-store"),
        ("dump", "consumequeue", FIXTURES / "rocketmq-store"),
        ("dump", "index", FIXTURES / "rocketmq-store", "--limit", "40"),
        ("query", FIXTURES / "rocketmq-store", "--topic", "TopicTest", "--tag", "TagA"),
        ("dump", "kafka-log", FIXTURES / "kafka-logs" / "orders-0"),
    ],
    ids=["dump-commitlog", "dump-consumequeue", "dump-index", "query-topic", "dump-kafka-log"],
)
def test_streamed_tables_fit_the_terminal_and_cut_only_the_last_column(args, width):
    code, out = table(width, *args)
    assert code == 0
    long_topic = "OrderEvents.xxxx"  # the fixture's 128-character topic: an identifier longer than any terminal
    for line in out.splitlines():
        # identifiers longer than their column are printed whole and push the line: the 128-character
        # topic, and an IPv6 store host's 56-digit offsetMsgId
        assert len(line) <= width or long_topic in line or re.search(r"[0-9A-F]{56}", line), line
        cells = line.split("  ")
        assert "…" not in "  ".join(cells[:-1]), line  # only the free last column is shortened


def test_columns_chooses_and_sizes_the_table():
    code, out = table(80, "dump", "commitlog", FIXTURES / "rocketmq-store", "--limit", "3", "--columns", "commitlog_offset,uniq_key,tags")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["OFFSET", "UNIQ", "KEY", "TAGS"]
    assert all(re.fullmatch(r"\s*\d+  [0-9A-F]{32}  \S+", line) for line in lines[1:])
