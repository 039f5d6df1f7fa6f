"""The range reading of CommitLog files (``store.model.commitlog_range``): the ranges of a file
together hold each of its records once, in the store walk's order; the column-wise reading
(``read_range``'s column pieces and the records between them) gives the same records as the
per-record one (``read_commitlog_range``); a
body CRC failure is stated and the record kept, a broken TOTALSIZE is stated and the walk goes
on at the next record; and no answer depends on the size of the pieces a file is read in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.findings.code_ids import RMQ_CL_BODY_CRC, RMQ_CL_TORN_TAIL
from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.store import rocketmq as rmq
from mqtool.store.files import Readable, ReadOnlyFile, read_in_pieces
from mqtool.store.model import commitlog_walk as cl_walk
from mqtool.store.model.commitlog_range import ColumnPiece, Problem, range_start, read_commitlog_range, read_range
from mqtool.store.model.commitlog_walk import FileRecords

STORE = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"
NAME = "00000000000000016384"
BASE = int(NAME)


def _positions(path: Path) -> list[int]:
    with ReadOnlyFile(path) as f:
        return [pos for pos, _ in FileRecords(f)]


def _events(path: Path, split: int, is_last: bool = False) -> list[tuple[str, int, object]]:
    """Every range's events, ranges in order, records as (position, queue offset)."""
    out: list[tuple[str, int, object]] = []
    with ReadOnlyFile(path) as f:
        for start in range(0, f.size, split):
            for kind, pos, item in read_commitlog_range(f, BASE, start, min(start + split, f.size), is_last):
                out.append((kind, pos, item.queue_offset if isinstance(item, MessageRecord) else item))
    return out


def _column_positions(path: Path, split: int) -> list[int]:
    """The records the column-wise reading gives in each range (a healthy file: every one in a
    column piece)."""
    out: list[int] = []
    with ReadOnlyFile(path) as f:
        for start in range(0, f.size, split):
            for item in read_range(f, BASE, start, min(start + split, f.size), False):
                if isinstance(item, ColumnPiece):
                    out += [item.position + int(p) for p in item.walk.columns.position[: item.count]]
    return out


@pytest.mark.parametrize("split", [100, 1000, 4096, 1 << 20])
def test_the_ranges_hold_each_record_once(split):
    path = STORE / "commitlog" / NAME
    positions = _positions(path)
    events = _events(path, split)
    assert [pos for kind, pos, _ in events if kind == "record"] == positions
    assert [kind for kind, _, _ in events if kind != "record"] == ["end"]
    assert _column_positions(path, split) == positions


def test_no_answer_depends_on_the_piece_size():
    path = STORE / "commitlog" / NAME
    whole = (_events(path, 4096), _column_positions(path, 4096))
    for piece in [pos + k for pos in _positions(path)[1:6] for k in range(9) if pos + k >= 64]:
        with read_in_pieces(piece):
            assert (_events(path, 4096), _column_positions(path, 4096)) == whole, piece


def _damaged(tmp_path: Path, at: int, flip: int) -> tuple[Path, int]:
    path = tmp_path / NAME
    shutil.copy(STORE / "commitlog" / NAME, path)
    data = bytearray(path.read_bytes())
    rec = _positions(path)[7]
    data[rec + at] ^= flip
    path.write_bytes(bytes(data))
    return path, rec


def test_a_body_crc_failure_is_stated_and_the_record_kept(tmp_path):
    path, rec = _damaged(tmp_path, 200, 0x41)
    events = _events(path, 1 << 20)
    i = next(i for i, (kind, pos, _) in enumerate(events) if kind == "problem")
    problem = events[i][2]
    assert isinstance(problem, Problem) and problem.kept and events[i][1] == rec
    assert events[i + 1][:2] == ("record", rec)
    assert [pos for kind, pos, _ in events if kind == "record"] == _positions(STORE / "commitlog" / NAME)


def test_a_broken_totalsize_is_stated_and_the_walk_goes_on(tmp_path):
    path, rec = _damaged(tmp_path, 2, 0x10)
    healthy = _positions(STORE / "commitlog" / NAME)
    events = _events(path, 1 << 20)
    problems = [(pos, item) for kind, pos, item in events if kind == "problem"]
    assert problems and problems[0][0] == rec and not problems[0][1].kept  # type: ignore[attr-defined]
    records = [pos for kind, pos, _ in events if kind == "record"]
    assert rec not in records and records == [p for p in healthy if p != rec]


def test_a_record_cut_in_the_newest_file_is_a_torn_tail(tmp_path):
    path = tmp_path / NAME
    positions = _positions(STORE / "commitlog" / NAME)
    data = (STORE / "commitlog" / NAME).read_bytes()
    path.write_bytes(data[: positions[-1] + 40] + bytes(len(data) - positions[-1] - 40))
    events = _events(path, 1 << 20, is_last=True)
    assert events[-1] == ("end", positions[-1], "torn")
    problem = events[-2][2]
    assert isinstance(problem, Problem) and problem.code == RMQ_CL_TORN_TAIL and problem.position == positions[-1]


# --- the walk's range options (``store.model.commitlog_walk``: start, stop, keep_damaged, a Readable)


def _store_file(root: Path, bodies: list[int]) -> Path:
    from mqtool.formats.rocketmq import commitlog as cl
    from mqtool.store.writer import StoreWriter, WriterConfig

    with StoreWriter(root, WriterConfig(commitlog_file_size=64 * 1024, cq_file_size=60 * 20, enable_index=False)) as w:
        for i, n in enumerate(bodies):
            w.append(cl.MessageRecord(topic="T", queue_id=i % 3, body=bytes([65 + i % 26]) * n, properties={"KEYS": f"k{i}"}))
    return rmq.list_segments(root / "commitlog")[0].path


def _walk(f: Readable, task: cl_walk.CommitLogTask) -> tuple[list[int], cl_walk.Event]:
    """The positions of the records a walk gives (columns and decoded) and its last event."""
    events = list(cl_walk.read_events(f, task))
    out: list[int] = []
    for e in events:
        if isinstance(e, cl_walk.Stretch):
            out += [e.position + int(p) for p in e.columns.position[: e.records]]
        elif isinstance(e, cl_walk.Record):
            out.append(e.position)
    return out, events[-1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    bodies=st.lists(st.integers(1, 700), min_size=2, max_size=40),
    cut=st.floats(0, 1),
    piece=st.integers(200, 4096),
    fast=st.booleans(),
)
def test_a_range_walk_ends_at_the_first_sync_point_at_its_stop(tmp_path_factory, bodies, cut, piece, fast):
    """Whatever the pieces: the records from the range's first sync point to the first record
    at or after its stop, then one FileWalked ``stop`` there (or how the data ends)."""
    path = _store_file(tmp_path_factory.mktemp("store"), bodies)
    with ReadOnlyFile(path) as f:
        positions = [pos for pos, _ in FileRecords(f)]
        start = int(cut * positions[-1])
        stop = start + (positions[-1] - start) // 2 + 1
        first = range_start(f, 0, start)
        assert first is not None
        task = cl_walk.CommitLogTask(str(path), 0, 64 * 1024, True, fast=fast, piece=piece, start=first, stop=stop, keep_damaged=True)
        got, end = _walk(f, task)
    ends = [p for p in positions if p >= stop]
    assert got == [p for p in positions if first <= p < stop]
    assert isinstance(end, cl_walk.FileWalked)
    if ends:
        assert (end.kind, end.valid_end) == ("stop", ends[0])
    else:
        assert end.kind == "zeros"


def test_a_record_after_the_stop_that_is_no_sync_point_belongs_to_the_range(tmp_path):
    from mqtool.formats.rocketmq.commitlog import PHYSICAL_OFFSET_POSITION

    path = _store_file(tmp_path / "store", [100] * 12)
    with ReadOnlyFile(path) as f:
        positions = [pos for pos, _ in FileRecords(f)]
    data = bytearray(path.read_bytes())
    k = positions[6]
    data[k + PHYSICAL_OFFSET_POSITION : k + PHYSICAL_OFFSET_POSITION + 8] = (k + 7).to_bytes(8, "big")  # not its address
    path.write_bytes(bytes(data))
    with ReadOnlyFile(path) as f:
        head = [pos for kind, pos, _ in read_commitlog_range(f, 0, 0, k, False) if kind == "record"]
        tail = [pos for kind, pos, _ in read_commitlog_range(f, 0, k, f.size, False) if kind == "record"]
    assert head == positions[:7]  # the record at the stop is no sync point: still this range's
    assert tail == positions[7:]  # the next range starts at the sync point after it


def test_keep_damaged_yields_a_record_whose_frame_holds_after_its_damage(tmp_path):
    path = _store_file(tmp_path / "store", [100] * 12)
    with ReadOnlyFile(path) as f:
        positions = [pos for pos, _ in FileRecords(f)]
    data = bytearray(path.read_bytes())
    k = positions[5]
    data[data.index(b"F" * 100, k) + 50] ^= 0x41  # a byte of the sixth record's body: only its CRC fails
    path.write_bytes(bytes(data))
    for fast in (True, False):
        with ReadOnlyFile(path) as f:
            task = cl_walk.CommitLogTask(str(path), 0, 64 * 1024, True, fast=fast, start=0, stop=f.size, keep_damaged=True)
            events = list(cl_walk.read_events(f, task))
            judged = list(cl_walk.read_events(f, cl_walk.CommitLogTask(str(path), 0, 64 * 1024, True, fast=fast)))
        i = next(i for i, e in enumerate(events) if isinstance(e, cl_walk.Damage) and e.cause == "kept")
        kept = events[i]
        assert isinstance(kept, cl_walk.Damage) and kept.at == k and kept.finding is not None and kept.finding.code == RMQ_CL_BODY_CRC
        assert isinstance(events[i + 1], cl_walk.Record) and events[i + 1].position == k  # type: ignore[union-attr]
        assert _walk(ReadOnlyFile(path), task)[0] == positions
        # validate's walk (no keep_damaged) states it and resynchronises after it, without it
        assert not any(isinstance(e, cl_walk.Record) and e.position == k for e in judged)
        assert any(isinstance(e, cl_walk.Damage) and e.finding is not None and e.finding.code == RMQ_CL_BODY_CRC for e in judged)


class _ArrowLike:
    """What a pyarrow file gives the range reading: ``size``, ``path`` (a string) and ``pread``."""

    def __init__(self, path: Path) -> None:
        self._data = path.read_bytes()
        self.size = len(self._data)
        self.path = str(path)

    def pread(self, position: int, size: int) -> bytes:
        return self._data[position : position + size]


def test_a_range_reads_any_readable_and_a_whole_file_only_a_local_one(tmp_path):
    path, rec = _damaged(tmp_path, 2, 0x10)
    with ReadOnlyFile(path) as f:
        local = [(k, p, i.queue_offset if isinstance(i, MessageRecord) else i) for k, p, i in read_commitlog_range(f, BASE, 0, f.size, False)]
    remote = [(k, p, i.queue_offset if isinstance(i, MessageRecord) else i) for k, p, i in read_commitlog_range(_ArrowLike(path), BASE, 0, path.stat().st_size, False)]
    assert remote == local and any(k == "problem" for k, _, _ in local)
    with pytest.raises(TypeError):
        cl_walk.read_events(_ArrowLike(path), cl_walk.CommitLogTask(str(path), BASE, 16384, False))


def test_a_file_cut_short_inside_a_record_is_what_validate_says(tmp_path):
    """Behaviour the range takes from the walk: a file before the last, cut short, whose last
    record claims more than any record has, is RMQ-FILE-SIZE's (the commitlog offsets it lacks,
    ``damaged``), as validate says -- not an RMQ-CL-SIZE of its own."""
    from mqtool.store.model import commitlog_check as judge

    path = tmp_path / NAME
    data = bytearray((STORE / "commitlog" / NAME).read_bytes())
    rec = _positions(STORE / "commitlog" / NAME)[3]
    data[rec] ^= 0x08  # TOTALSIZE past any record
    path.write_bytes(bytes(data[: rec + 500]))
    with ReadOnlyFile(path) as f:
        events = list(read_commitlog_range(f, BASE, 0, f.size, False, 16384))
    res = judge.check_commitlog_file(judge.CommitLogTask(str(path), BASE, 16384, False))
    assert [k for k, _, _ in events if k != "record"] == ["damaged", "end"]
    assert events[-2] == ("damaged", rec, (BASE + rec, BASE + 16384))
    assert not [x for x in res.findings if x.level.value != "info"] and (BASE + rec, BASE + 16384) in res.damaged
