"""Every command gives the same answer whatever the size of the pieces the walks read log files in.

The walks read ``.log``, CommitLog, ``.jafka`` and ``.meta`` files in pieces; a record, batch or
message that a piece boundary cuts is read again from its start (``store.files.read_in_pieces``
sets the piece size of every walk at once).  Each command that reads log bytes -- validate, dump,
stats, info and recover's plan -- is run through the CLI on each layout's fixture, healthy and
damaged, with small pieces that put boundaries at every alignment of the small fixture files'
records, and must print exactly what it prints with one piece holding each whole file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.cli.app import run
from mqtool.store.files import read_in_pieces
from tests.conftest import FIXTURES

WHOLE = 1 << 30

#: layout -> (fixture, the dump family, extra validate/dump options, one log file of it)
LAYOUTS = {
    "rocketmq": ("rocketmq-store", "commitlog", (), "commitlog/00000000000000016384"),
    "kafka": ("kafka-logs", "kafka-log", ("--deep",), "orders-0/00000000000000000000.log"),
    "jafka": ("jafka-data", "jafka", (), "orders-0/00000000000000000771.jafka"),
    "metaq": ("metaq-data", "metaq", (), "trade-0/00000000000000001602.meta"),
}


def _log_file(root: Path, rel: str) -> Path:
    path = root / rel
    if path.is_dir():  # the first segment of the partition
        path = sorted(p for p in path.iterdir() if p.is_file())[0]
    return path


def _outputs(capsys: pytest.CaptureFixture[str], root: Path, layout: str) -> dict[str, tuple[int, str]]:
    _fixture, family, extra, _rel = LAYOUTS[layout]
    commands = {
        "validate": ["validate", root, "--json", *extra],
        "dump": ["dump", family, root, "--jsonl", *(("--deep",) if layout == "kafka" else ())],
        "stats": ["stats", root, "--json"],
        "info": ["info", root, "--json"],
        "recover": ["recover", root, "--json"],
    }
    out = {}
    for name, args in commands.items():
        code = run([str(a) for a in args])
        text, _err = capsys.readouterr()
        out[name] = (code, _steady(text) if name == "stats" else text)
    return out


#: stats' disk forecast reads the file system's free space, which other processes change
_VOLATILE = ("disk", "filesystem_available", "bytes_to_threshold", "hours_to_threshold", "used_ratio", "forecast")


def _steady(text: str) -> str:
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(json.loads(text)), sort_keys=True)


def _damage(root: Path, layout: str, kind: str, at: int) -> None:
    path = _log_file(root, LAYOUTS[layout][3])
    data = bytearray(path.read_bytes())
    if kind == "flip":
        data[at % len(data)] ^= 0x5A
    elif kind == "cut":
        del data[len(data) - 1 - at % 40 :]
    elif kind == "garbage":
        data += bytes((at + 7 * i) % 251 | 1 for i in range(60))
    path.write_bytes(bytes(data))


def _store(tmp_path: Path, layout: str, kind: str, at: int) -> Path:
    root = tmp_path / f"{layout}-{kind}-{at}"
    shutil.copytree(FIXTURES / LAYOUTS[layout][0], root)
    if kind != "healthy":
        _damage(root, layout, kind, at)
    return root


def _same_in_pieces(capsys: pytest.CaptureFixture[str], root: Path, layout: str, pieces: list[int]) -> dict[str, tuple[int, str]]:
    with read_in_pieces(WHOLE):
        whole = _outputs(capsys, root, layout)
    for piece in pieces:
        with read_in_pieces(piece):
            got = _outputs(capsys, root, layout)
        for name, value in whole.items():
            assert got[name] == value, (layout, name, piece)
    return whole


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_healthy_fixture_reads_the_same_in_pieces_of_every_size(tmp_path, capsys, layout):
    """Pieces of 64..160 bytes put a boundary at every offset of the first records' headers."""
    root = _store(tmp_path, layout, "healthy", 0)
    whole = _same_in_pieces(capsys, root, layout, list(range(64, 161, 3)) + [997, 4096])
    assert whole["validate"][0] == 0 and whole["dump"][0] == 0


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("kind", ["flip", "cut", "garbage"])
def test_a_damaged_fixture_reads_the_same_in_pieces(tmp_path, capsys, layout, kind):
    root = _store(tmp_path, layout, kind, 333)
    whole = _same_in_pieces(capsys, root, layout, [64, 77, 128, 129, 300, 513])
    assert whole["validate"][0] == 1, (layout, kind)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.sampled_from(sorted(LAYOUTS)),
    kind=st.sampled_from(["healthy", "flip", "cut", "garbage"]),
    at=st.integers(0, 10**6),
    piece=st.integers(64, 3000),
)
def test_any_piece_size_reads_as_one(tmp_path_factory, capsys, layout, kind, at, piece):
    root = _store(tmp_path_factory.mktemp("p"), layout, kind, at)
    _same_in_pieces(capsys, root, layout, [piece])
