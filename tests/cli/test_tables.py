"""Tables at ordinary widths (issue 19): at COLUMNS=80 and 200, piped, the verdict comes first,
no line is wider than the terminal and no identifier (segment name, code, position) is broken
across lines.  Golden files hold the whole output (MQTOOL_UPDATE_GOLDEN=1 to accept a change)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli import check_golden
from tests.conftest import FIXTURES, PROJECT_ROOT

WIDTHS = (80, 200)


def table(width: int, *args: object, cwd: Path = PROJECT_ROOT) -> tuple[int, str]:
    env = {**os.environ, "COLUMNS": str(width), "TZ": "UTC", "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("PAGER", None)
    # paths relative to the project, trailing blanks dropped: the goldens hold no checkout's path
    argv = [str(a.relative_to(PROJECT_ROOT)) if isinstance(a, Path) and a.is_relative_to(PROJECT_ROOT) else str(a) for a in args]
    proc = subprocess.run([sys.executable, "-m", "mqtool", *argv], capture_output=True, text=True, env=env, cwd=cwd, check=False)
    return proc.returncode, "".join(line.rstrip() + "\n" for line in proc.stdout.splitlines())


def _damaged(tmp: Path) -> Path:
    root = tmp / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    os.truncate(root / "commitlog" / "00000000000000081920", 4000)
    with open(root / "commitlog" / "00000000000000032768", "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 4)
    return root


@pytest.fixture
def fixed_tmp() -> Iterator[Path]:
    """A scratch directory whose path has the same length on every run: the damaged store's path
    is in validate's table, where lines wrap, so the golden output must not depend on the
    runner's ``tmp_path`` (``pytest-N``, a pytest-xdist worker's ``popen-gwN``)."""
    path = Path(tempfile.mkdtemp(prefix="mqtool-tables-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _identifiers_whole(text: str, root: Path) -> None:
    """Every segment name the store holds that the output mentions is on one line, whole."""
    names = {p.name for p in root.rglob("*") if p.is_file() and re.fullmatch(r"\d{20}", p.name)}
    tokens = re.findall(r"(?<!\d)\d{10,19}(?!\d)", text)  # digit runs shorter than a name
    broken = sorted({t for t in tokens if any(n.startswith(t) or n.endswith(t) for n in names)})
    assert not broken, f"segment names broken across lines: {broken}"


@pytest.mark.parametrize("width", WIDTHS)
def test_validate_table(fixed_tmp, width):
    for name, root, expected in (("healthy", FIXTURES / "rocketmq-store", 0), ("damaged", _damaged(fixed_tmp), 1)):
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


VERDICT_FIRST = {
    "info": r"(HEALTHY|WARNINGS|DAMAGED): \d+ error\(s\), \d+ warning\(s\)",
    "stats": r"(OK|WARNINGS|DAMAGED): \d+ error\(s\), \d+ warning\(s\) met while reading",
}


def _damaged_kafka(tmp: Path) -> Path:
    """A copy of the Kafka fixture whose orders-0 segment 30 is cut mid-entry (a torn tail)."""
    root = tmp / "kafka-logs"
    shutil.copytree(FIXTURES / "kafka-logs", root)
    os.truncate(root / "orders-0" / "00000000000000000030.log", 2000)
    return root


def _truncated_rocketmq(tmp: Path) -> Path:
    """A copy of the RocketMQ fixture whose last CommitLog file is cut short."""
    root = tmp / "rocketmq-store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    os.truncate(root / "commitlog" / "00000000000000081920", 3000)
    return root


def _check_table(out: str, width: int, root: Path) -> None:
    lines = out.splitlines()
    assert max(map(len, lines)) <= width
    _identifiers_whole(out, root)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["info", "stats"])
@pytest.mark.parametrize("store", ["rocketmq-store", "kafka-logs", "jafka-data", "metaq-data"])
def test_info_and_stats_lead_with_the_verdict(command, store, width):
    code, out = table(width, command, FIXTURES / store)
    assert code == 0
    assert re.match(VERDICT_FIRST[command], out), out.splitlines()[0]
    assert re.match(r"(HEALTHY|OK): ", out)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["info", "stats"])
@pytest.mark.parametrize("damage", ["rocketmq", "kafka"])
def test_damaged_store_verdict_and_what_is_wrong(tmp_path, command, damage, width):
    root = _truncated_rocketmq(tmp_path) if damage == "rocketmq" else _damaged_kafka(tmp_path)
    code, out = table(width, command, root.name, cwd=tmp_path)  # relative: the golden holds no temporary path
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("DAMAGED: "), lines[0]
    assert "what is wrong" in lines[:12]
    _check_table(out, width, root)
    text = re.sub(r"\d+(\.\d+)? ?(Bytes|KiB|MiB|GiB|TiB)", "SIZE", out.replace(str(root), "STORE"))
    if command == "stats":  # disk figures vary with the machine: only the verdict, counts and findings
        text = text[: text.index("\nper ")]
        text = re.sub(r"forecast: .*?(?=\n\n)", "forecast: FORECAST", text, flags=re.S)
    check_golden(f"{command}.{damage}-damaged.table{width}.txt", text)


@pytest.mark.parametrize("width", WIDTHS)
def test_clean_plan_leads_with_plan_line(width):
    root = FIXTURES / "rocketmq-store"
    code, out = table(width, "clean", root, "--allow-unconsumed", "--reserved-hours", "0", "--manual", "--now", "1800000000000")
    assert code == 1
    lines = out.splitlines()
    assert re.match(r"PLAN: delete \d+ file\(s\) \(", lines[0])
    assert "consumer group(s) would lose unconsumed data" in " ".join(lines[:2])
    _check_table(out, width, root)
    text = re.sub(r"disk \d+% used\n", "", out)
    text = re.sub(r"last modified [\d.]+ h ago", "last modified AGE", text)
    check_golden(f"clean.rocketmq-plan.table{width}.txt", text)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("store", ["kafka-logs", "jafka-data", "metaq-data"])
def test_clean_nothing_or_plan_first(store, width):
    code, out = table(width, "clean", FIXTURES / store)
    assert re.match(r"(PLAN: delete \d+ file\(s\)|nothing to clean)", out), out[:200]
    assert (code == 0) == out.startswith("nothing to clean")
    _check_table(out, width, FIXTURES / store)


def test_clean_long_plan_cut_unless_all():
    args = ("clean", FIXTURES / "kafka-logs", "--retention-ms", "1", "--now", "1800000000000")
    _, short = table(200, *args)
    _, every = table(200, *args, "--all")
    steps = len(re.findall(r"^ *\d+\. ", every, flags=re.M))
    assert steps > 20
    assert len(re.findall(r"^ *\d+\. ", short, flags=re.M)) == 15
    assert f"... {steps - 15} more step(s) (--all lists them)" in short


@pytest.mark.parametrize("width", WIDTHS)
def test_diff_leads_with_the_verdict(tmp_path, width):
    code, out = table(width, "diff", FIXTURES / "kafka-logs", FIXTURES / "kafka-logs")
    assert code == 0 and out.startswith("IDENTICAL: 7 log(s) compared")
    damaged = _truncated_rocketmq(tmp_path)
    code, out = table(width, "diff", str(FIXTURES / "rocketmq-store"), damaged.name, cwd=tmp_path)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("DIFFER"), lines[0]
    assert "what is wrong" in lines[:8]
    _check_table(out, width, damaged)
    check_golden(f"diff.rocketmq-damaged.table{width}.txt", re.sub(r"\d+(\.\d+)? ?(Bytes|KiB)", "SIZE", out.replace(str(FIXTURES), "FIXTURES")))


def test_rows_to_show_rule():
    from mqtool.cli.render import ALL_ROWS_UP_TO, rows_to_show

    small = list(range(ALL_ROWS_UP_TO))
    assert rows_to_show(small, lambda r: r == 3, all_rows=False) == small  # a small store: every row
    large = list(range(ALL_ROWS_UP_TO + 5))
    assert rows_to_show(large, lambda r: r in (3, 7), all_rows=False) == [3, 7]
    assert rows_to_show(large, lambda r: r in (3, 7), all_rows=True) == large
