"""The range reading of CommitLog files (``store.model.commitlog_range``): the ranges of a file
together hold each of its records once, in the store walk's order; the column-wise reading
(``column_pieces``) frames the same records as the per-record one (``read_commitlog_range``); a
body CRC failure is stated and the record kept, a broken TOTALSIZE is stated and the walk goes
on at the next record; and no answer depends on the size of the pieces a file is read in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mqtool.findings.code_ids import RMQ_CL_TORN_TAIL
from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, read_in_pieces
from mqtool.store.model.commitlog_range import Problem, column_pieces, range_start, read_commitlog_range

STORE = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"
NAME = "00000000000000016384"
BASE = int(NAME)


def _positions(path: Path) -> list[int]:
    with ReadOnlyFile(path) as f:
        return [pos for pos, _ in rmq.CommitLogFileWalk(f)]


def _events(path: Path, split: int, is_last: bool = False) -> list[tuple[str, int, object]]:
    """Every range's events, ranges in order, records as (position, queue offset)."""
    out: list[tuple[str, int, object]] = []
    with ReadOnlyFile(path) as f:
        for start in range(0, f.size, split):
            for kind, pos, item in read_commitlog_range(f, BASE, start, min(start + split, f.size), is_last):
                out.append((kind, pos, item.queue_offset if isinstance(item, MessageRecord) else item))
    return out


def _column_positions(path: Path, split: int) -> list[int]:
    """The records the column-wise reading frames in each range (a healthy file)."""
    out: list[int] = []
    with ReadOnlyFile(path) as f:
        for start in range(0, f.size, split):
            stop = min(start + split, f.size)
            pos = range_start(f, BASE, start)
            if pos is None:
                continue
            pieces = column_pieces(f, BASE, pos, stop, key_hashes=False)
            for piece in pieces:
                out += [piece.position + int(p) for p in piece.walk.columns.position[: piece.count]]
                if piece.done:
                    break
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
