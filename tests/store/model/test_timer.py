"""The store model's reading of the timer store (``store.model.timer``): the TimerLog walk as
``recoverAndRevise`` stops, whatever piece the files are read in, and the wheel's used slots."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import timer as tf
from mqtool.store import rocketmq as rmq
from mqtool.store.files import read_in_pieces
from mqtool.store.model import timer as model_timer
from tests.timer_store import BLANK_FMT, BLANK_MAGIC, SLOT_LEN, UNIT_LEN, make_timer_store

FILE_SIZE = UNIT_LEN * 5 + 30  # five units, then 30 bytes: a BLANK closes each full file


def _walk(root: Path):
    directory = root / "timerlog"
    walk = model_timer.TimerLogWalk(rmq.list_segments(directory), directory=directory)
    units = [(str(u.path), u.position, u.offset, u.unit) for u in walk]
    return units, [(f.code, f.path, f.position, f.message) for f in walk.findings], walk.valid_end


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("model-timer") / "store"
    timer = make_timer_store(root, delays=[700 * i + 100 for i in range(1, 14)], timerlog_file_size=FILE_SIZE)
    return root, timer


def test_the_walk_reads_every_unit_and_ends_at_the_last_one(store):
    root, timer = store
    units, findings, valid_end = _walk(root)
    assert findings == []
    assert [o for _, _, o, _ in units] == [e.unit_offset for e in timer.enqueued]
    assert valid_end == timer.wrote
    first = root / "timerlog" / f"{0:020d}"
    assert struct.unpack_from(BLANK_FMT, first.read_bytes(), 5 * UNIT_LEN) == (30, 0, BLANK_MAGIC)


def _damaged(root: Path, tmp: Path, edits: list[tuple[str, int, bytes]]) -> Path:
    import shutil

    copy = tmp / "copy"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(root / "timerlog", copy / "timerlog")
    for name, pos, data in edits:
        with open(copy / "timerlog" / name, "r+b") as f:
            f.seek(pos)
            f.write(data)
    return copy


NAMES = [f"{i * FILE_SIZE:020d}" for i in range(3)]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(NAMES), st.integers(0, FILE_SIZE - 1), st.binary(min_size=1, max_size=6)),
        max_size=2,
    ),
    piece=st.integers(64, 3 * UNIT_LEN + 7),
)
def test_no_answer_depends_on_the_piece_size(store, tmp_path, edits, piece):
    """Units, findings and the valid end are those of one whole piece per file, for pieces that end
    anywhere in a unit, a BLANK head or the zeros, on healthy and damaged files."""
    root, _ = store
    copy = _damaged(root, tmp_path, edits)
    whole = _walk(copy)
    with read_in_pieces(piece):
        assert _walk(copy) == whole


@pytest.mark.parametrize(
    ("name", "pos", "data", "code", "at"),
    [
        (NAMES[0], 2 * UNIT_LEN, struct.pack(">i", 53), "RMQ-TIMER-LOG-UNIT", 2 * UNIT_LEN),
        (NAMES[0], 2 * UNIT_LEN + 12, struct.pack(">i", 0x20), "RMQ-TIMER-LOG-UNIT", 2 * UNIT_LEN + 12),
        (NAMES[0], 5 * UNIT_LEN, struct.pack(">i", 29), "RMQ-TIMER-LOG-BLANK", 5 * UNIT_LEN),
        (NAMES[1], 3 * UNIT_LEN, bytes(2 * UNIT_LEN + 16), "RMQ-TIMER-LOG-NO-BLANK", 3 * UNIT_LEN),
        (NAMES[2], FILE_SIZE - 3, b"\x01", "RMQ-TIMER-LOG-GARBAGE", FILE_SIZE - 3),
    ],
)
def test_where_recovery_stops(store, tmp_path, name, pos, data, code, at):
    root, _ = store
    units, findings, valid_end = _walk(_damaged(root, tmp_path, [(name, pos, data)]))
    assert (code, name, at) in [(c, Path(p).name, q) for c, p, q, _ in findings]
    if code != "RMQ-TIMER-LOG-GARBAGE":
        assert valid_end == int(name) + pos // UNIT_LEN * UNIT_LEN  # where recoverAndRevise stops


def test_a_timerlog_file_of_another_size_is_stated_as_the_commitlogs(store, tmp_path):
    root, _ = store
    copy = _damaged(root, tmp_path, [])
    with open(copy / "timerlog" / NAMES[1], "r+b") as f:
        f.truncate(FILE_SIZE - 10)
    _, findings, _ = _walk(copy)
    assert ("RMQ-FILE-SIZE", NAMES[1]) in [(c, Path(p).name) for c, p, _, _ in findings]


def test_the_wheel_walk_in_pieces(store):
    root, timer = store
    whole = list(model_timer.WheelWalk(root / "timerwheel"))
    assert {s.index: (s.slot.time, s.slot.first_pos, s.slot.last_pos, s.slot.num, s.slot.magic) for s in whole} == timer.slots
    for piece in (64, 100, 4096):
        with read_in_pieces(piece):
            assert list(model_timer.WheelWalk(root / "timerwheel")) == whole


def test_a_slot_wrong_by_itself(store, tmp_path):
    root, timer = store
    wheel = tmp_path / "timerwheel"
    data = bytearray((root / "timerwheel").read_bytes())
    index = sorted(timer.slots)[0]
    struct.pack_into(">q", data, index * SLOT_LEN, timer.slots[index][0] + 1)  # another second's time
    wheel.write_bytes(bytes(data))
    walk = model_timer.WheelWalk(wheel)
    list(walk)
    assert [(f.code, f.position) for f in walk.findings] == [("RMQ-TIMER-SLOT", index * SLOT_LEN)]


def test_timer_family_by_name(tmp_path):
    assert model_timer.timer_family(Path("store/config/timercheck")) == "timercheck"
    assert model_timer.timer_family(Path("store/config/timermetrics.bak")) == "timermetrics"
    assert model_timer.timer_family(Path("store/timerlog/00000000000000000000")) == "timerlog"
    assert model_timer.timer_family(Path("store/commitlog/00000000000000000000")) is None
    assert model_timer.timer_family(Path("store/checkpoint")) is None
    assert tf.WHEEL_SIZE == 38_707_200
