"""``--help`` reads well on an 80-column terminal: nothing cropped, no type on flags, paragraphs
reflowed (each option's ``metavar``, ``flag`` in mqtool/cli/options.py, and ``reflowed`` in
mqtool/cli/main.py)."""

from __future__ import annotations

import json

import pytest

from mqtool.cli.app import _click_command, run
from tests.conftest import FIXTURES


def _paths(cmd=None, path=()):
    cmd = cmd or _click_command()
    yield list(path)
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _paths(sub, (*path, name))


COMMANDS = list(_paths())


def _help(capsys, monkeypatch, path, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    code = run([*path, "--help"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "mqtool")
@pytest.mark.parametrize("columns", [80, 120])
def test_help_is_not_cropped(capsys, monkeypatch, path, columns):
    out = _help(capsys, monkeypatch, path, columns)
    assert "Usage:" in out
    cropped = [line.strip() for line in out.splitlines() if "…" in line]
    assert not cropped, f"cropped at {columns} columns: {cropped}"
    assert "<bool>" not in out and " range>" not in out
    # a repeatable option shows its item type (``<str>...``); a variadic argument (``scan
    # paths...``) shows typer's ``<list[str]>``: no supported typer setting changes an argument's type
    assert not [line for line in out.splitlines() if "<list[" in line and "--" in line]


def test_flags_show_no_type_and_lists_their_item_type(capsys, monkeypatch):
    out = _help(capsys, monkeypatch, ["recover"], 120)
    apply_line = next(line for line in out.splitlines() if "--apply" in line)
    assert "<" not in apply_line.split("Execute")[0]
    queue_line = next(line for line in out.splitlines() if "--queue " in line)
    assert "<str>..." in queue_line


def test_paragraphs_are_reflowed():
    for path in COMMANDS:
        cmd = _click_command()
        for name in path:
            cmd = cmd.commands[name]
        for paragraph in (cmd.help or "").split("\n\n"):
            assert "\n" not in paragraph, f"{' '.join(path)}: line break inside a paragraph: {paragraph!r}"


def test_root_help_lists_the_exit_codes(capsys, monkeypatch):
    out = " ".join(_help(capsys, monkeypatch, [], 80).split())
    for text in ("0 clean", "1 findings", "2 usage", "3 I/O error", "4 unsupported", "70 internal", "75 busy"):
        assert text in out


def test_metadata_decoder_is_still_accepted(capsys):
    part = FIXTURES / "kafka-logs" / "__cluster_metadata-0"
    rows = {}
    for flag in ("--cluster-metadata-decoder", "--metadata-decoder"):
        code = run(["dump", "kafka-log", str(part), flag, "--jsonl"])
        out, err = capsys.readouterr()
        assert code == 0, err
        rows[flag] = [json.loads(line) for line in out.splitlines()]
    assert rows["--metadata-decoder"] == rows["--cluster-metadata-decoder"]
    assert any(r.get("payload") for r in rows["--metadata-decoder"])
