"""The consistency matrix (issue 18): the readers -- dump, stats, info, query, diff -- name every
gap and damage on their path with validate's code and position, and exit as validate does.

A copy of ``fixtures/rocketmq-store`` (six 16 KiB CommitLog files) is damaged one way per case;
``validate`` on the copy gives the first finding that matters (its first error, else its first
warning: a torn tail); each reader, run through the CLI, must print that code at that path and
position (on stderr, ``CODE path:position: message``; in the JSON document too where it writes
one) and exit 1 on an error, 0 on a warning.  ``query`` asks for the record whose read crosses the
damage; damage a reader never reads (``info`` reads the first record and the active file, not the
files between; ``query`` one record) is not on its path and not in its cases.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq.commitlog import MessageRecord, body_position
from mqtool.ops.dump.rocketmq import CommitLogDump, commitlog_files
from mqtool.ops.validate import ValidateOptions, validate_path
from tests.conftest import FIXTURES

FIXTURE = FIXTURES / "rocketmq-store"
ACTIVE = 5  # index of the active (last) CommitLog file of the fixture


@dataclass(frozen=True)
class Rec:
    path: Path  # in the fixture
    position: int
    size: int
    record: MessageRecord


def _records() -> list[Rec]:
    return [Rec(loc.path, loc.position, rec.total_size, rec) for loc, rec in CommitLogDump(commitlog_files(FIXTURE))]


RECORDS = _records()
FILES = sorted((FIXTURE / "commitlog").iterdir())


def _in(index: int) -> list[Rec]:
    return [r for r in RECORDS if r.path == FILES[index]]


def _zero(path: Path, start: int, length: int) -> None:
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(bytes(length))


def _flip(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ 0x01]))


def _put(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


# Each damage: (copy's commitlog dir) -> the record whose read crosses the damage (query's
# target), or None when no single-record read does (see OFF_PATH).
Damage = Callable[[Path], "Rec | None"]


def _gap(cl: Path) -> Rec | None:
    (cl / FILES[2].name).unlink()  # a missing middle file
    return _in(2)[0]


def _torn_tail(cl: Path) -> Rec | None:
    rec = _in(ACTIVE)[-1]
    _zero(cl / rec.path.name, rec.position + rec.size // 2, rec.size - rec.size // 2)
    return rec


def _cut_older(cl: Path) -> Rec | None:
    rec = _in(1)[20]
    os.truncate(cl / rec.path.name, rec.position + rec.size // 2)  # cut mid-record
    return _in(1)[0]


def _garbage(cl: Path, gap: int) -> Rec | None:
    rec = _in(ACTIVE)[-1]
    _put(cl / rec.path.name, rec.position + rec.size + gap, random.Random(18).randbytes(400))
    return None


def _zeroed(index: int) -> Damage:
    def damage(cl: Path) -> Rec | None:
        rec = _in(index)[10 if index < ACTIVE else 5]
        _zero(cl / rec.path.name, rec.position + 8, 300)
        return rec

    return damage


def _decodable_torn_tail(cl: Path) -> Rec | None:
    rec = _in(ACTIVE)[-1]
    _zero(cl / rec.path.name, rec.position + rec.size - 5, 5)  # its properties' last bytes: it still decodes
    return rec


def _zeroed_header(index: int, number: int) -> Damage:
    def damage(cl: Path) -> Rec | None:
        rec = _in(index)[number]
        _zero(cl / rec.path.name, rec.position, 8)  # TOTALSIZE and MAGICCODE: the file's data ends there
        return rec

    return damage


def _body_flip(index: int) -> Damage:
    def damage(cl: Path) -> Rec | None:
        rec = _in(index)[5]
        _flip(cl / rec.path.name, rec.position + body_position(rec.record.sys_flag) + 1)
        return rec

    return damage


def _last_size(size: int) -> Damage:
    def damage(cl: Path) -> Rec | None:
        os.truncate(cl / FILES[ACTIVE].name, size)
        return _in(ACTIVE)[0]

    return damage


DAMAGES: dict[str, Damage] = {
    "missing-middle-file": _gap,
    "torn-tail": _torn_tail,
    "torn-tail-that-decodes": _decodable_torn_tail,
    "zeroed-header-older-file": _zeroed_header(1, 5),
    "zeroed-header-active-file": _zeroed_header(ACTIVE, 5),
    "zeroed-first-header-active-file": _zeroed_header(ACTIVE, 0),
    "older-file-cut-mid-record": _cut_older,
    "garbage-at-the-valid-end": lambda cl: _garbage(cl, 0),
    "garbage-after-zeros": lambda cl: _garbage(cl, 64),
    "zeroed-region-older-file": _zeroed(0),
    "zeroed-region-active-file": _zeroed(ACTIVE),
    "body-flip-older-file": _body_flip(1),
    "body-flip-active-file": _body_flip(ACTIVE),
    "short-last-file": _last_size(8192),
    "oversize-last-file": _last_size(16384 + 4096),
}

#: damage a reader never reads: not on its path
OFF_PATH = {
    # info reads the first record, the active file and the pre-allocated files after it
    "info": {"zeroed-region-older-file", "body-flip-older-file", "zeroed-header-older-file"},
    "query": {"garbage-at-the-valid-end", "garbage-after-zeros"},  # after the last record: no record's read crosses it
}


@dataclass(frozen=True)
class Case:
    root: Path
    target: Rec | None
    code: str
    path: str
    position: int | None
    exit: int  # validate's: 1 on an error, 0 on a warning only

    @property
    def line(self) -> str:
        """How a reader names the finding: ``CODE path:position:`` (``CODE path:`` without a position)."""
        where = self.path if self.position is None else f"{self.path}:{self.position}"
        return f"{self.code} {where}: "


_CASES: dict[str, Case] = {}


def _case(kind: str, tmp_path_factory) -> Case:
    """The fixture damaged one way (made once per module) and validate's first finding on it."""
    if kind not in _CASES:
        root = tmp_path_factory.mktemp(kind) / "store"
        shutil.copytree(FIXTURE, root)
        target = DAMAGES[kind](root / "commitlog")
        report = validate_path(root, ValidateOptions(jobs=1), "rocketmq")
        errors = [f for f in report.findings if f.level.value == "error"]
        warnings = [f for f in report.findings if f.level.value == "warning" and f.family in ("files", "commitlog")]
        first = (errors or warnings)[0]
        assert first.family in ("files", "commitlog"), f"{kind}: validate's first finding is {first}"
        _CASES[kind] = Case(root, target, first.code, first.path, first.position, 1 if errors else 0)
    return _CASES[kind]


def kinds(reader: str) -> list[str]:
    return sorted(set(DAMAGES) - OFF_PATH.get(reader, set()))


def mqtool(capsys, *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _in_document(doc_findings: list[dict], case: Case) -> bool:
    return any((f["code"], f["path"], f["position"]) == (case.code, case.path, case.position) for f in doc_findings)


@pytest.mark.parametrize("kind", kinds("dump"))
def test_dump_commitlog(kind, tmp_path_factory, capsys):
    case = _case(kind, tmp_path_factory)
    code, out, err = mqtool(capsys, "dump", "commitlog", case.root, "--jsonl")
    assert case.line in err and code == case.exit, err
    assert all(json.loads(line)["commitlog_offset"] >= 0 for line in out.splitlines())  # stdout stays data


@pytest.mark.parametrize("kind", kinds("stats"))
def test_stats(kind, tmp_path_factory, capsys):
    case = _case(kind, tmp_path_factory)
    code, _, err = mqtool(capsys, "stats", case.root)
    assert case.line in err and code == case.exit, err
    code, out, _ = mqtool(capsys, "stats", case.root, "--json")
    assert _in_document(json.loads(out)["findings"], case) and code == case.exit


@pytest.mark.parametrize("kind", kinds("info"))
def test_info(kind, tmp_path_factory, capsys):
    case = _case(kind, tmp_path_factory)
    code, _, err = mqtool(capsys, "info", case.root)
    assert case.line in err and code == case.exit, err
    code, out, _ = mqtool(capsys, "info", case.root, "--json")
    assert _in_document(json.loads(out)["findings"], case) and code == case.exit


@pytest.mark.parametrize("kind", kinds("query"))
def test_query_by_queue_offset(kind, tmp_path_factory, capsys):
    case = _case(kind, tmp_path_factory)
    assert case.target is not None
    rec = case.target.record
    code, out, err = mqtool(capsys, "query", case.root, "--topic", rec.topic, "--queue-id", rec.queue_id, "--queue-offset", rec.queue_offset)
    assert case.line in err, err
    # 1 on an error; on a torn tail the asked record is the torn one: not found, 1 too
    assert code == 1 if case.exit or not out.strip() else code == 0


@pytest.mark.parametrize("kind", kinds("diff"))
def test_diff_against_the_healthy_fixture(kind, tmp_path_factory, capsys):
    case = _case(kind, tmp_path_factory)
    code, _, err = mqtool(capsys, "diff", FIXTURE, case.root)
    assert case.line in err and code == case.exit, err
    code, out, _ = mqtool(capsys, "diff", FIXTURE, case.root, "--json")
    (log,) = json.loads(out)["logs"]
    assert _in_document(log["findings"], case) and code == case.exit


@pytest.mark.parametrize("cut", [2000, 1948, 0])
def test_dump_index_names_validates_past_end_entries(tmp_path, capsys, cut):
    """The active file zeroed from ``cut`` (a torn record at 1948, a clean cut at a record, the
    whole file): dump index names exactly validate's RMQ-IDX-PAST-END entries -- not those that
    point into the torn record, which its RMQ-CL-TORN-TAIL already covers."""
    root = tmp_path / "s"
    shutil.copytree(FIXTURE, root)
    active = sorted((root / "commitlog").iterdir())[ACTIVE]
    data = bytearray(active.read_bytes())
    data[cut:] = bytes(len(data) - cut)
    active.write_bytes(bytes(data))
    report = validate_path(root, ValidateOptions(jobs=1), "rocketmq")
    expected = {(f.path, f.position) for f in report.findings if f.code == "RMQ-IDX-PAST-END"}
    assert expected
    code = run(["dump", "index", str(root), "--jsonl"])
    err = capsys.readouterr().err
    named = set()
    for line in err.splitlines():
        if "RMQ-IDX-PAST-END " in line:
            where = line.split("RMQ-IDX-PAST-END ", 1)[1].split(": ", 1)[0]
            path, _, position = where.rpartition(":")
            named.add((path, int(position)))
    assert named == expected
    assert code == 1
