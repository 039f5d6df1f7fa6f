"""Issue 18: one layout registry of plain imports.

Detection and every verb's dispatch go through ``mqtool.layouts``: a layout a verb lacks is
"unsupported" (exit 4), while a broken module (an ImportError, a misspelt name) is a bug (exit 70),
never mistaken for an unsupported layout.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

import mqtool.ops
from mqtool.cli.app import run
from mqtool.cli.exit_codes import ExitCode
from mqtool.errors import StoreLayoutError, UnsupportedFormatError
from mqtool.layouts import DETECTORS, LAYOUTS, Layout, detect_layout, for_layout, parse_layout
from mqtool.ops.clean import cleaners
from mqtool.ops.info import info_functions
from mqtool.ops.recover import recoverers
from mqtool.ops.validate import validators
from tests.conftest import FIXTURES, PROJECT_ROOT

COMMAND_PAGES = PROJECT_ROOT / "docs" / "commands"
DISPLAY = {Layout.ROCKETMQ: "RocketMQ", Layout.KAFKA: "Kafka", Layout.JAFKA: "Jafka", Layout.METAQ: "MetaQ"}
STORES = {
    Layout.ROCKETMQ: FIXTURES / "rocketmq-store",
    Layout.KAFKA: FIXTURES / "kafka-logs",
    Layout.JAFKA: FIXTURES / "jafka-data",
    Layout.METAQ: FIXTURES / "metaq-data",
}
#: verb -> (its table, the modules its table imports)
TABLES = {
    "info": (info_functions, ("info.kafka", "info.legacy")),
    "validate": (validators, ("validate.rocketmq", "validate.kafka", "validate.legacy")),
    "recover": (recoverers, ("recover.rocketmq", "recover.kafka", "recover.legacy")),
    "clean": (cleaners, ("clean.rocketmq", "clean.kafka", "clean.legacy")),
}


def cli(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def readme_section(verb: str) -> str:
    """The manual's page on ``verb`` (docs/commands/<verb>.md, linked from the README)."""
    page = COMMAND_PAGES / f"{verb}.md"
    assert page.exists(), f"the manual has no page for mqtool {verb}"
    return page.read_text()


def readme_layouts(verb: str) -> set[Layout]:
    """The layouts the manual's page on ``verb`` names (all four when it says 'every layout')."""
    text = readme_section(verb)
    if "every layout" in text:
        return set(Layout)
    return {layout for layout, name in DISPLAY.items() if name in text}


# --- the registry ------------------------------------------------------------------------------


def test_layout_names():
    assert LAYOUTS == ("rocketmq", "kafka", "jafka", "metaq")
    assert [str(layout) for layout in Layout] == list(LAYOUTS)
    assert Layout.KAFKA == "kafka" and f"{Layout.METAQ}" == "metaq"


def test_every_layout_has_a_detector():
    assert set(DETECTORS) == set(Layout)
    assert all(callable(predicate) for predicate in DETECTORS.values())
    # the most specific markers first: a MetaQ data dir is tried before a Jafka one
    assert list(DETECTORS) == [Layout.ROCKETMQ, Layout.KAFKA, Layout.METAQ, Layout.JAFKA]


@pytest.mark.parametrize("layout", list(Layout), ids=str)
def test_each_fixture_is_detected_as_its_layout(layout: Layout):
    assert detect_layout(STORES[layout]) is layout
    assert [other for other, predicate in DETECTORS.items() if predicate(STORES[layout])] == [layout]


def test_forced_layout_skips_detection_and_must_be_a_layout(tmp_path: Path):
    assert detect_layout(tmp_path, "kafka") is Layout.KAFKA
    with pytest.raises(StoreLayoutError, match="--layout one of rocketmq, kafka, jafka, metaq"):
        detect_layout(tmp_path, "kafak")
    with pytest.raises(StoreLayoutError):
        parse_layout("RocketMQ")


def test_an_empty_directory_is_no_store(tmp_path: Path):
    with pytest.raises(StoreLayoutError, match="none of them"):
        detect_layout(tmp_path)


def test_a_detector_that_raises_is_a_bug_not_another_layout(monkeypatch: pytest.MonkeyPatch):
    def broken(path: Path) -> bool:
        raise NameError("name 'segmnets' is not defined")

    monkeypatch.setitem(DETECTORS, Layout.KAFKA, broken)
    code, _, err = cli("info", STORES[Layout.KAFKA], "--json")
    assert code == ExitCode.INTERNAL, err
    assert "internal error (NameError" in err


# --- the verbs' tables -------------------------------------------------------------------------


@pytest.mark.parametrize("verb", list(TABLES))
def test_each_verb_table_covers_the_layouts_readme_says(verb: str):
    table = TABLES[verb][0]()
    documented = readme_layouts(verb)
    assert documented, f"docs/commands/{verb}.md names no layout"
    assert set(table) == documented
    assert all(isinstance(key, Layout) for key in table)
    for entry in table.values():
        functions = entry if isinstance(entry, tuple) else (entry,)
        assert all(callable(f) for f in functions)


@pytest.mark.parametrize("verb", list(TABLES))
@pytest.mark.parametrize("layout", list(Layout), ids=str)
def test_verb_table_entries_come_from_their_layout_module(verb: str, layout: Layout):
    entry = TABLES[verb][0]()[layout]
    plan_or_run = entry[0] if isinstance(entry, tuple) else entry
    package, module = plan_or_run.__module__.rsplit(".", 2)[-2:]
    assert package == verb  # ops/<verb>/<layout>.py
    assert module == ("legacy" if layout in (Layout.JAFKA, Layout.METAQ) else str(layout))


def test_for_layout_names_what_the_verb_handles():
    table = {Layout.ROCKETMQ: "r", Layout.KAFKA: "k"}
    assert for_layout(table, "kafka", "x") == "k"
    assert for_layout(table, Layout.ROCKETMQ, "x") == "r"
    with pytest.raises(UnsupportedFormatError) as info:
        for_layout(table, "metaq", "dump")
    assert str(info.value) == "`mqtool dump` does not handle the metaq layout: expected rocketmq or kafka, found metaq"
    with pytest.raises(UnsupportedFormatError, match="does not handle the bogus layout"):
        for_layout(table, "bogus", "dump")


def test_a_layout_absent_from_a_table_is_unsupported(monkeypatch: pytest.MonkeyPatch):
    from mqtool.ops import validate

    def without_kafka():
        table = validators()
        del table[Layout.KAFKA]
        return table

    monkeypatch.setattr(validate, "validators", without_kafka)
    code, _, err = cli("validate", STORES[Layout.KAFKA], "--json")
    assert code == ExitCode.UNSUPPORTED, err
    assert "`mqtool validate` does not handle the kafka layout: expected rocketmq, jafka or metaq, found kafka" in err


VERB_ARGS = {
    "info": ("info", "--json"),
    "validate": ("validate", "--json", "--jobs", "1"),
    "recover": ("recover", "--json"),
    "clean": ("clean", "--json"),
}


@pytest.mark.parametrize("verb", list(TABLES))
def test_an_import_error_in_a_layout_module_is_an_internal_error(verb: str, monkeypatch: pytest.MonkeyPatch):
    """Before issue 18 a module that failed to import was reported as 'does not handle the kafka
    layout' (exit 4), hiding the bug."""
    name = next(m for m in TABLES[verb][1] if "kafka" in m)
    package, _, module = name.partition(".")
    monkeypatch.delattr(importlib.import_module(f"mqtool.ops.{package}"), module, raising=False)
    monkeypatch.setitem(sys.modules, f"mqtool.ops.{name}", None)  # the next import of it fails
    command, *options = VERB_ARGS[verb]
    code, _, err = cli(command, STORES[Layout.KAFKA], *options)
    assert code == ExitCode.INTERNAL, err
    assert "internal error (ModuleNotFoundError" in err
    assert "does not handle" not in err


@pytest.mark.parametrize("verb", list(TABLES))
def test_a_misspelt_function_is_an_internal_error(verb: str, monkeypatch: pytest.MonkeyPatch):
    entry = TABLES[verb][0]()[Layout.KAFKA]
    function = entry[0] if isinstance(entry, tuple) else entry
    monkeypatch.delattr(sys.modules[function.__module__], function.__name__)
    command, *options = VERB_ARGS[verb]
    code, _, err = cli(command, STORES[Layout.KAFKA], *options)
    assert code == ExitCode.INTERNAL, err
    assert "internal error (AttributeError" in err


# --- no dispatch by string, and a lean start-up --------------------------------------------------


def test_no_module_is_imported_by_name():
    offenders = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}"
        for path in sorted((PROJECT_ROOT / "mqtool").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "import_module" in line or "__import__" in line
    ]
    assert not offenders, "import layouts' modules plainly, not by name:\n" + "\n".join(offenders)


def test_starting_the_cli_loads_no_verb_implementation():
    """The verbs' tables import their layout modules on first dispatch, not when ``mqtool --help``
    builds the app.  The CLI imports neither the registry nor the tables when it starts (their
    commands do: ``tests/cli/test_startup.py``), so they are imported here beside it, as a command
    imports them."""
    tables = ", ".join(f"mqtool.ops.{verb}" for verb in TABLES)
    script = f"import sys, mqtool.cli.app, mqtool.layouts, {tables}; print('\\n'.join(m for m in sys.modules if m.startswith('mqtool.')))"
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT).stdout.split()
    assert "mqtool.layouts" in loaded
    lazy = [f"mqtool.ops.{m}" for _, modules in TABLES.values() for m in modules]
    assert not [m for m in lazy if m in loaded]


def test_a_kafka07_log_dir_is_told_apart_behind_dirs_that_are_no_partitions(tmp_path):
    """``layouts`` looks for a ``.kafka`` name before it loads the Jafka readers; it must look at
    no fewer places than ``store.jafka.is_kafka07_path``: directories whose names are no
    ``<topic>-<partition>`` do not use up the directories it looks into."""
    from mqtool.formats import jafka as jf
    from mqtool.layouts import Layout, detect_layout
    from mqtool.store.jafka import KAFKA07, JafkaLogWriter, is_kafka07_path

    root = tmp_path / "logs"
    for i in range(10):
        (root / f"a-{i}x").mkdir(parents=True)  # sorted first, not partitions
    for i in range(3):
        (root / f"a-{i}").mkdir()  # partitions without segments
    JafkaLogWriter(root / "zz-0", dialect=KAFKA07).append([jf.Message(b"one")])
    (root / ".kafka_cleanshutdown").touch()
    assert is_kafka07_path(root)
    assert detect_layout(root) is Layout.JAFKA
