"""The judge of one CommitLog file (``store.model.commitlog_check``): one answer whatever its piece size.

Healthy files whose records start anywhere relative to the precise walk's pieces (from a few
hundred bytes up to a piece holding the whole file) give every record and no finding but where
the data ends; damaged ones give the same findings at the same positions and the same covered
ranges as with one piece.  The events are what the result is folded from.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.findings import Severity
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import commitlog_check as judge
from mqtool.store.model.commitlog_walk import FileRecords
from mqtool.store.writer import StoreWriter, WriterConfig

FILE_SIZE = 64 * 1024
WHOLE = 1 << 30


def _write_store(root: Path, bodies: list[int]) -> Path:
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE_SIZE, cq_file_size=60 * 20, enable_index=False)) as w:
        for i, n in enumerate(bodies):
            w.append(cl.MessageRecord(topic="T", queue_id=i % 3, body=bytes([65 + i % 26]) * n, properties={"KEYS": f"k{i}"}))
    return rmq.list_segments(root / "commitlog")[0].path


def _answer(path: Path, piece: int, fast: bool = False) -> tuple[object, ...]:
    res = judge.check_commitlog_file(judge.CommitLogTask(str(path), 0, FILE_SIZE, True, fast=fast, piece=piece))
    findings = [(x.code, x.position, x.length) for x in res.findings]
    return (res.records, res.valid_end, findings, sorted(res.damaged), res.max_store_timestamp, res.last_store_timestamp, res.offsets.skipped)


def _events(path: Path, piece: int, fast: bool) -> list[judge.Event]:
    with ReadOnlyFile(path) as f:
        return list(judge.read_events(f, judge.CommitLogTask(str(path), 0, FILE_SIZE, True, fast=fast, piece=piece)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(st.integers(1, 700), min_size=1, max_size=40), piece=st.integers(200, 4096))
def test_a_healthy_file_gives_every_record_whatever_the_piece_size(tmp_path_factory, bodies: list[int], piece: int) -> None:
    path = _write_store(tmp_path_factory.mktemp("store"), bodies)
    whole = _answer(path, WHOLE)
    assert whole[0] == len(bodies)
    assert [code for code, _, _ in whole[2]] == ["RMQ-CL-VALID-END"]  # info: where the data ends
    assert _answer(path, piece) == whole
    assert _answer(path, piece, fast=True) == whole  # the columns say the same


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    bodies=st.lists(st.integers(1, 700), min_size=2, max_size=30),
    where=st.floats(0, 1, exclude_max=True),
    damage=st.binary(min_size=1, max_size=12),
    piece=st.integers(200, 4096),
)
def test_damage_gives_the_same_findings_at_the_same_positions_whatever_the_piece_size(
    tmp_path_factory, bodies: list[int], where: float, damage: bytes, piece: int
) -> None:
    path = _write_store(tmp_path_factory.mktemp("store"), bodies)
    data = bytearray(path.read_bytes())
    with ReadOnlyFile(path) as f:
        end = FileRecords(f).valid_end
    at = int(where * end)
    data[at : at + len(damage)] = bytes(b ^ 0xA5 for b in damage)  # every byte changed
    path.write_bytes(bytes(data))
    whole = _answer(path, WHOLE)  # (a changed STORETIMESTAMP, say, is no finding)
    assert _answer(path, piece) == whole
    assert _answer(path, piece, fast=True) == whole  # the fast path declines, the precise walk says it


def _record_positions(events: list[judge.Event]) -> list[int]:
    """The file positions of the records the events carry, as columns or decoded one by one."""
    out: list[int] = []
    for e in events:
        if isinstance(e, judge.Stretch):
            out.extend(e.position + int(p) for p in e.columns.position)
        elif isinstance(e, judge.Record):
            out.append(e.position)
    return out


def test_events_of_a_healthy_file_are_its_columns_then_its_end(tmp_path: Path) -> None:
    """One reading, two speeds inside it: a healthy file is columns only (one stretch per piece,
    no record decoded one by one), the same records the precise decoder gives one by one."""
    path = _write_store(tmp_path / "store", [100] * 20)
    events = _events(path, 0, fast=True)
    assert [type(e) for e in events] == [judge.Stretch, judge.Damage, judge.Damage, judge.FileWalked]
    cols, moved, valid_end, end = events
    assert isinstance(cols, judge.Stretch) and len(cols.columns) == 20
    assert isinstance(moved, judge.Damage) and moved.finding is None and moved.valid_end == cols.walk.stop.position
    assert isinstance(valid_end, judge.Damage) and valid_end.finding is not None and valid_end.finding.level is Severity.info
    assert isinstance(end, judge.FileWalked) and end.kind == "zeros" and end.valid_end == cols.walk.stop.position
    precise = _events(path, 0, fast=False)
    assert not any(isinstance(e, judge.Stretch) for e in precise)
    assert _record_positions(precise) == _record_positions(events)
    assert precise[-1] == end
    # small pieces: one stretch per piece, the same records and end
    small = _events(path, 500, fast=True)
    assert sum(isinstance(e, judge.Stretch) for e in small) > 1 and not any(isinstance(e, judge.Record) for e in small)
    assert _record_positions(small) == _record_positions(events) and small[-1].valid_end == end.valid_end  # type: ignore[union-attr]


def test_a_broken_record_is_one_damage_event_and_the_walk_goes_on(tmp_path: Path) -> None:
    path = _write_store(tmp_path / "store", [100] * 10)
    with ReadOnlyFile(path) as f:
        positions = [pos for pos, _ in FileRecords(f)]
    data = bytearray(path.read_bytes())
    data[positions[4] + 4] ^= 0xFF  # MAGICCODE of the fifth record
    path.write_bytes(bytes(data))
    events = _events(path, 0, fast=True)
    damage = [e for e in events if isinstance(e, judge.Damage) and e.finding is not None and e.finding.level is not Severity.info]
    assert damage and damage[0].finding is not None and damage[0].finding.position == positions[4] + 4  # at the field
    records = _record_positions(events)
    assert positions[4] not in records and positions[5] in records  # resynchronised after it
    end = events[-1]
    assert isinstance(end, judge.FileWalked) and end.first_broken == positions[4]
    res = judge.check_commitlog_file(judge.CommitLogTask(str(path), 0, FILE_SIZE, True))
    assert pickle.loads(pickle.dumps(res)).findings == res.findings  # workers send it back
    assert res.records == len(records) and res.first_broken == positions[4]
