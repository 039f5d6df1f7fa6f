"""The CLI's structure and what it costs to start (issue 19, item 12).

* Commands are registered one way: ``mqtool/cli/main.py`` imports the command modules and
  registers their functions; a command module imports neither the app nor another command module.
* ``mqtool --help`` (and any command's ``--help``) loads no layout registry, store, format or ops
  module, no numpy, no pydantic: command modules import those inside the command that needs them.
* ``mqtool info`` loads only the detected layout's modules, and no numpy for a small store.
  ``bench/startup.py`` measures the time; this holds the imports.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from mqtool.cli import main
from tests.conftest import PROJECT_ROOT

CLI = PROJECT_ROOT / "mqtool" / "cli"
COMMAND_MODULES = sorted(CLI.glob("cmd_*.py"))

#: what no ``--help`` may load (module name prefixes)
NOT_AT_HELP = ("mqtool.layouts", "mqtool.store", "mqtool.formats", "mqtool.ops", "mqtool.pipeline", "numpy", "pydantic", "humanize", "pyspark", "pyarrow")
#: what a command module may import at its top (the rest: inside the command)
TOP_LEVEL = ("typer", "rich.text", "mqtool.cli.options", "mqtool.cli.common", "mqtool.cli.render", "mqtool.cli.exit_codes", "mqtool.cli.completion", "mqtool.cli.times",
             "mqtool.errors", "mqtool.findings")


def _loaded_after(args: list[str]) -> list[str]:
    script = (
        "import contextlib, io, json, sys\n"
        "from mqtool.cli.main import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = run({args!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    code, modules = json.loads(proc.stdout)
    assert code == 0, proc.stderr
    return modules


@pytest.mark.parametrize("args", [["--help"], ["info", "--help"], ["dump", "kafka-log", "--help"], ["bench", "flush", "--help"], ["--version"]], ids=" ".join)
def test_help_loads_nothing_heavy(args):
    heavy = [m for m in _loaded_after(args) if m.startswith(NOT_AT_HELP)]
    assert not heavy, f"mqtool {' '.join(args)} imported {heavy[:10]}"


#: what ``mqtool info`` must not load for a store of each layout (module name prefixes): numpy
#: (the column walks: a small store is read record by record), the other layouts' readers, Spark
INFO_MUST_NOT_LOAD = {
    "rocketmq-store": ("numpy", "mqtool.store.kafka", "mqtool.store.jafka", "mqtool.store.metaq", "mqtool.store.legacy", "mqtool.store.model.kafka",
                       "mqtool.store.model.legacy", "mqtool.formats.kafka", "mqtool.formats.jafka", "mqtool.formats.metaq", "mqtool.ops.info.kafka",
                       "mqtool.ops.info.legacy", "mqtool.ops.log_findings", "crc32c", "pyspark", "pyarrow"),
    "kafka-logs": ("numpy", "mqtool.store.jafka", "mqtool.store.metaq", "mqtool.store.legacy", "mqtool.store.model.legacy", "mqtool.formats.jafka",
                   "mqtool.formats.metaq", "mqtool.ops.info.rocketmq", "mqtool.ops.info.legacy", "mqtool.store.rocketmq",
                   "mqtool.store.model.rocketmq", "mqtool.formats.rocketmq", "pyspark", "pyarrow"),
    # detection asks the RocketMQ predicate (``store.root_rocketmq``: names only) and the Kafka one
    # (which loads the Kafka store module) first
    "jafka-data": ("numpy", "mqtool.store.rocketmq", "mqtool.formats.rocketmq", "mqtool.store.model.kafka", "mqtool.ops.info.rocketmq", "mqtool.ops.info.kafka", "crc32c", "pyspark", "pyarrow"),
}


@pytest.mark.parametrize("store", list(INFO_MUST_NOT_LOAD))
def test_info_loads_only_its_layout(store):
    """``mqtool info`` dispatches to its layout's module after detection and reads a small store
    without numpy: what it must not load is absent from ``sys.modules`` after the run (in a
    subprocess), while what it does load proves the run read the store."""
    loaded = _loaded_after(["info", str(PROJECT_ROOT / "fixtures" / store), "--json"])
    wrong = [m for m in loaded if m.startswith(INFO_MUST_NOT_LOAD[store])]
    assert not wrong, f"mqtool info {store} imported {wrong[:10]}"
    module = {"rocketmq-store": "mqtool.ops.info.rocketmq", "kafka-logs": "mqtool.ops.info.kafka", "jafka-data": "mqtool.ops.info.legacy"}[store]
    assert module in loaded


@pytest.mark.parametrize("args", [["--help"], ["info", "--help"], ["info", "fixtures/rocketmq-store", "--json"], ["info", "fixtures/kafka-logs", "--json"]], ids=" ".join)
def test_no_pydantic_and_no_rich_help_panels(args):
    """typer 0.29 coerces every option value through pydantic (~75 ms to load) and typer's rich help
    panels load rich's Markdown and traceback modules (~60 ms): the typer pin (< 0.29) and plain help
    (``rich_markup_mode=None``) keep both out; this fails on a typer that brings them back."""
    loaded = _loaded_after(args)
    wrong = [m for m in loaded if m.startswith(("pydantic", "typer.rich_utils", "rich.markdown", "markdown_it", "rich.traceback"))]
    assert not wrong, f"mqtool {' '.join(args)} imported {wrong[:10]}"


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node, node.module


def _top_level_imports(tree: ast.Module):
    """The imports a module runs when it is imported (``if TYPE_CHECKING:`` blocks excluded)."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from (name for _, name in _imports(node))


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: p.name)
def test_a_command_module_imports_neither_the_app_nor_another_command(path):
    tree = ast.parse(path.read_text())
    for _, name in _imports(tree):
        assert name not in ("mqtool.cli.main", "mqtool.cli.app"), f"{path.name} imports {name}"
        assert not name.startswith("mqtool.cli.cmd_"), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: p.name)
def test_a_command_module_imports_heavy_modules_inside_its_commands(path):
    tree = ast.parse(path.read_text())
    stdlib = sys.stdlib_module_names
    for name in _top_level_imports(tree):
        if name.split(".")[0] in stdlib or name == "__future__":
            continue
        assert name.startswith(TOP_LEVEL), f"{path.name} imports {name} when the CLI starts: import it inside the command"


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: p.name)
def test_command_signatures_are_not_strings(path):
    """typer reads every command's signature when the CLI starts; string annotations (``from
    __future__ import annotations``) are compiled and evaluated there, twice each."""
    tree = ast.parse(path.read_text())
    futures = [alias.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "__future__" for alias in node.names]
    assert "annotations" not in futures


def test_every_command_module_is_registered_by_main():
    registered = {function.__module__ for _, _, function, _ in main.COMMANDS}
    assert registered == {f"mqtool.cli.{p.stem}" for p in COMMAND_MODULES}
    names = [(group, name) for group, name, _, _ in main.COMMANDS]
    assert len(names) == len(set(names))


def test_no_callable_is_assigned_onto_click_objects():
    """No patching of typer/click objects (``param.display_type_rich = lambda ...``): help layout
    comes from the options' ``metavar`` and typer's ``cls`` hook."""
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                assert not any(isinstance(t, ast.Attribute) for t in node.targets), f"{path.name}:{node.lineno}: a lambda assigned to an attribute"


def test_bench_flush_help_lists_the_benchmark_s_own_modes():
    """``bench flush --help`` lists the modes without importing the benchmark (~140 ms): its table
    is kept in the command module, equal to the benchmark's."""
    from mqtool.cli.cmd_bench import FLUSH_MODES
    from mqtool.ops import bench as ops_bench

    current = tuple(tuple(m) for m in ops_bench.mode_help())
    assert FLUSH_MODES == current, "update FLUSH_MODES in mqtool/cli/cmd_bench.py to:\n" + "".join(f"    {m!r},\n" for m in current)

