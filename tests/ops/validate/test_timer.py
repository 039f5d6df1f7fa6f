"""validate on RocketMQ 5.x timer stores written by ``tests/timer_store.py``: clean stores, each
damage the checks name, damage placed anywhere in the written units and slots (hypothesis), and
the real 5.3.1 volume's timer files."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.findings import Finding
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store.files import read_in_pieces
from tests.conftest import real_path
from tests.timer_store import SLOT_LEN, SLOTS, T0, UNIT_LEN, checkpoint_bytes, make_timer_store

TIMER_ONLY = ValidateOptions(checks=frozenset({"timer", "config"}))


def timer_findings(root: Path, options: ValidateOptions = TIMER_ONLY) -> list[Finding]:
    report = validate_rocketmq(root, options)
    return [f for f in report.findings if f.code.startswith("RMQ-TIMER") or "timer" in f.path]


def codes(findings: list[Finding]) -> list[str]:
    return sorted({f.code for f in findings})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("timer") / "store"
    timer = make_timer_store(root)
    return root, timer


@pytest.fixture
def copy(store, tmp_path):
    root, timer = store
    dst = tmp_path / "store"
    shutil.copytree(root, dst)
    return dst, timer


def _unit_path(root: Path) -> Path:
    return root / "timerlog" / f"{0:020d}"


def _patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def test_a_clean_timer_store_has_no_findings(store):
    root, timer = store
    report = validate_rocketmq(root, ValidateOptions())
    assert [f for f in report.findings if f.family == "timer"] == []
    facts = report.facts["timer"]
    assert facts["timerlog"] == {"files": 1, "units": 6, "valid_end": 6 * UNIT_LEN, "start": 0}
    assert facts["wheel_slots_used"] == 4
    assert facts["pending_units"] == 6


def test_a_store_without_timer_files_has_no_timer_facts(tmp_path):
    root = tmp_path / "s"
    make_timer_store(root)
    for p in ("timerwheel", "config/timercheck", "config/timermetrics"):
        (root / p).unlink()
    shutil.rmtree(root / "timerlog")
    report = validate_rocketmq(root, ValidateOptions())
    assert "timer" not in report.facts


def test_timerlog_across_files_with_blanks(tmp_path):
    root = tmp_path / "s"
    timer = make_timer_store(root, delays=[1000 * i + 500 for i in range(1, 12)], timerlog_file_size=UNIT_LEN * 3 + 20)
    assert len(timer.files) == 4
    report = validate_rocketmq(root, TIMER_ONLY)
    assert [f for f in report.findings if f.family == "timer"] == []
    assert report.facts["timer"]["timerlog"]["units"] == 11
    for piece in (64, 97, 130, 700):  # no answer depends on where a piece ends
        with read_in_pieces(piece):
            again = validate_rocketmq(root, TIMER_ONLY)
        assert again.findings == report.findings and again.facts["timer"] == report.facts["timer"]


def test_a_commitlog_cut_leaves_units_past_its_end(copy):
    """apache/rocketmq#10668: a slave truncates its CommitLog; TimerLog units keep pointing past it."""
    root, timer = copy
    cut = timer.enqueued[3].commitlog_offset
    cl = root / "commitlog" / f"{0:020d}"
    size = cl.stat().st_size
    _patch(cl, cut, bytes(size - cut))  # the CommitLog ends (zeros) before the 4th timer message
    found = [f for f in timer_findings(root) if f.code == "RMQ-TIMER-PAST-END"]
    expected = [(f"{0:020d}", e.position + 28) for e in sorted(timer.enqueued, key=lambda e: e.position) if e.commitlog_offset >= cut]
    assert [(Path(f.path).name, f.position) for f in found] == expected


def test_a_unit_pointing_at_a_plain_message(copy):
    root, timer = copy
    e = timer.enqueued[0]
    plain_size = struct.unpack(">i", (root / "commitlog" / f"{0:020d}").read_bytes()[:4])[0]
    _patch(_unit_path(root), e.position + 28, struct.pack(">qi", 0, plain_size))  # offsetPy 0: TopicTest's record
    found = timer_findings(root)
    assert ("RMQ-TIMER-MISMATCH", e.position + 28) in [(f.code, f.position) for f in found]
    assert "not a timer message" not in " ".join(f.message for f in found)  # stated as expected/found
    assert any("found a record of topic 'TopicTest'" in f.message for f in found)


def test_a_unit_pointing_between_records(copy):
    root, timer = copy
    e = timer.enqueued[1]
    _patch(_unit_path(root), e.position + 28, struct.pack(">q", e.commitlog_offset + 3))
    assert ("RMQ-TIMER-NOT-A-RECORD", e.position + 28) in [(f.code, f.position) for f in timer_findings(root)]


def test_a_unit_outside_its_slot(copy):
    """A unit whose delivery time moved to another second: the record's TIMER_OUT_MS disagrees
    and its slot's chain holds a unit of another time."""
    root, timer = copy
    e = timer.enqueued[1]  # in the slot of T0 + 5 s with units 0 and 4
    _patch(_unit_path(root), e.position + 24, struct.pack(">i", 60_000))
    found = timer_findings(root)
    got = {(f.code, Path(f.path).name, f.position) for f in found}
    assert ("RMQ-TIMER-MISMATCH", f"{0:020d}", e.position + 16) in got
    index = (T0 + 5000) // 1000 % SLOTS
    assert ("RMQ-TIMER-SLOT-CHAIN", "timerwheel", index * SLOT_LEN + 16) in got


def test_a_slot_pointing_past_the_timerlog_end(copy):
    root, _ = copy
    index = (T0 + 65_000) // 1000 % SLOTS
    _patch(root / "timerwheel", index * SLOT_LEN + 16, struct.pack(">q", 10 * UNIT_LEN))
    found = timer_findings(root)
    assert [(f.code, f.position) for f in found if f.code == "RMQ-TIMER-SLOT-PAST-END"] == [("RMQ-TIMER-SLOT-PAST-END", index * SLOT_LEN + 16)]


def test_a_slot_whose_num_is_not_its_chain(copy):
    """A slot's num (statistics: recovery does not revise it) that is not the units of its chain."""
    root, _ = copy
    index = (T0 + 5000) // 1000 % SLOTS  # a slot with units
    _patch(root / "timerwheel", index * SLOT_LEN + 24, struct.pack(">i", 99))
    found = [(f.code, Path(f.path).name, f.position) for f in timer_findings(root) if f.code.startswith("RMQ-TIMER-SLOT")]
    assert found == [("RMQ-TIMER-SLOT-NUM", "timerwheel", index * SLOT_LEN + 24)]


def test_a_unit_field_the_broker_never_writes(copy):
    """reserved is always 0 (``TimerLog`` writes it so): anything else is RMQ-TIMER-UNIT-FIELD at the unit."""
    root, timer = copy
    e = timer.enqueued[3]
    _patch(_unit_path(root), e.position + 44, struct.pack(">q", 7))
    found = [(f.code, f.position) for f in timer_findings(root) if f.code == "RMQ-TIMER-UNIT-FIELD"]
    assert found == [("RMQ-TIMER-UNIT-FIELD", e.position)]


def test_units_of_commitlog_files_retention_deleted_are_expired(tmp_path):
    """The first CommitLog file deleted by retention: the units pointing into it are counted as
    RMQ-TIMER-EXPIRED at the first of them, not reported as pointing at nothing."""
    root = tmp_path / "store"
    timer = make_timer_store(root, [5_000 + i for i in range(40)], commitlog_file_size=4096, plain=0)
    first = root / "commitlog" / f"{0:020d}"
    assert first.exists() and (root / "commitlog" / f"{4096:020d}").exists()
    first.unlink()
    expired = [e for e in timer.enqueued if e.commitlog_offset < 4096]
    assert 0 < len(expired) < len(timer.enqueued)
    found = [(f.code, f.position, f.message.split(" ")[0]) for f in timer_findings(root) if f.code == "RMQ-TIMER-EXPIRED"]
    assert found == [("RMQ-TIMER-EXPIRED", expired[0].position, str(len(expired)))]


def test_a_chain_that_loops(copy):
    root, timer = copy
    e = timer.enqueued[4]  # the last unit of the T0 + 5 s slot
    _patch(_unit_path(root), e.position + 4, struct.pack(">q", e.position))
    got = {(f.code, f.position) for f in timer_findings(root)}
    assert ("RMQ-TIMER-UNIT-PREV", e.position + 4) in got
    index = (T0 + 5000) // 1000 % SLOTS
    assert ("RMQ-TIMER-SLOT-CHAIN", index * SLOT_LEN + 16) in got


def test_a_broken_unit_ends_the_timerlog(copy):
    root, timer = copy
    e = timer.enqueued[2]
    _patch(_unit_path(root), e.position, struct.pack(">i", 40))
    found = timer_findings(root)
    assert ("RMQ-TIMER-LOG-UNIT", e.position) in [(f.code, f.position) for f in found]
    # slots whose units lie after it point past the TimerLog's valid end
    assert "RMQ-TIMER-SLOT-PAST-END" in codes(found)


def test_garbage_after_the_units_and_a_wrong_blank(tmp_path):
    root = tmp_path / "s"
    make_timer_store(root, delays=[1500, 2500, 3500, 4500], timerlog_file_size=UNIT_LEN * 3 + 20)
    first = root / "timerlog" / f"{0:020d}"
    _patch(first, 3 * UNIT_LEN, struct.pack(">i", 17))
    last = root / "timerlog" / f"{UNIT_LEN * 3 + 20:020d}"
    _patch(last, 2 * UNIT_LEN + 30, b"\x07")  # after the zero unit that ends the TimerLog
    got = {(f.code, Path(f.path).name, f.position) for f in timer_findings(root)}
    assert ("RMQ-TIMER-LOG-BLANK", first.name, 3 * UNIT_LEN) in got
    assert ("RMQ-TIMER-LOG-GARBAGE", last.name, 2 * UNIT_LEN + 30) in got


def test_a_file_before_the_last_without_a_blank(tmp_path):
    root = tmp_path / "s"
    make_timer_store(root, delays=[1500, 2500, 3500, 4500], timerlog_file_size=UNIT_LEN * 3 + 20)
    first = root / "timerlog" / f"{0:020d}"
    _patch(first, 2 * UNIT_LEN, bytes(UNIT_LEN + 16))
    got = {(f.code, Path(f.path).name, f.position) for f in timer_findings(root)}
    assert ("RMQ-TIMER-LOG-NO-BLANK", first.name, 2 * UNIT_LEN) in got


def test_a_wheel_of_the_wrong_size(copy):
    root, _ = copy
    os.truncate(root / "timerwheel", 4096)
    assert ("RMQ-TIMER-WHEEL-SIZE", None) in [(f.code, f.position) for f in timer_findings(root)]


def test_an_orphan_unit_before_where_recovery_relinks(copy):
    """apache/rocketmq#9735: the wheel lost a slot; recovery relinks only from the checkpoint's
    flush position minus one file, so the units before it are never delivered."""
    root, timer = copy
    index = (T0 + 3_600_000) // 1000 % SLOTS
    _patch(root / "timerwheel", index * SLOT_LEN, bytes(SLOT_LEN))
    # a checkpoint flushed two files further: recovery relinks nothing of the first file
    _patch(root / "config" / "timercheck", 0, checkpoint_bytes(T0, 3 * 64 * 1024, 6, 6)[:56])
    e = next(e for e in timer.enqueued if e.delayed_time == T0 + 3_600_000)
    got = {(f.code, f.position) for f in timer_findings(root)}
    assert ("RMQ-TIMER-UNIT-ORPHAN", e.position) in got
    assert ("RMQ-TIMER-CHECKPOINT", 8) in got  # flushed past the TimerLog's end too


def test_checkpoint_against_the_files(copy):
    root, _ = copy
    _patch(root / "config" / "timercheck", 0, checkpoint_bytes(T0, 6 * UNIT_LEN, 9, 7)[:56])
    got = {(f.code, f.position) for f in timer_findings(root)}
    assert ("RMQ-TIMER-CHECKPOINT", 16) in got  # after masterTimerQueueOffset and past the queue's end 6
    assert len([f for f in timer_findings(root) if f.code == "RMQ-TIMER-CHECKPOINT"]) == 2


def test_a_short_checkpoint_and_broken_metrics(copy):
    root, _ = copy
    os.truncate(root / "config" / "timercheck", 20)
    (root / "config" / "timermetrics").write_text('{"timingCount":{"a":')
    got = {(f.code, Path(f.path).name) for f in timer_findings(root)}
    assert ("RMQ-TIMER-CHECKPOINT-FORMAT", "timercheck") in got
    assert ("RMQ-CONFIG-PARSE", "timermetrics") in got


# --- damage placed anywhere ------------------------------------------------------------------

UNITS = 6


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_damage_anywhere_in_the_units_and_slots_gives_a_finding_there(store, data):
    """One byte of a written unit, of a used slot, or of the zeros after the last unit changed:
    validate names it at its unit (a finding positioned in the same 52 bytes), its slot (the same
    32 bytes) or, after the units, at that very byte."""
    root, timer = store
    where = data.draw(st.sampled_from(["unit", "slot", "tail"]))
    if where == "unit":
        path, pos = _unit_path(root), data.draw(st.integers(0, UNITS * UNIT_LEN - 1))
        span = (pos // UNIT_LEN * UNIT_LEN, UNIT_LEN)
    elif where == "slot":
        index = data.draw(st.sampled_from(sorted(timer.slots)))
        path, pos = root / "timerwheel", index * SLOT_LEN + data.draw(st.integers(0, SLOT_LEN - 1))
        span = (index * SLOT_LEN, SLOT_LEN)
    else:
        path = _unit_path(root)
        pos = data.draw(st.integers(UNITS * UNIT_LEN, path.stat().st_size - 1))
        span = (pos // UNIT_LEN * UNIT_LEN, UNIT_LEN) if pos < (UNITS + 1) * UNIT_LEN else (pos, 1)
    old = path.read_bytes()[pos]
    new = data.draw(st.integers(0, 255).filter(lambda b: b != old))
    _patch(path, pos, bytes([new]))
    try:
        found = timer_findings(root)
    finally:
        _patch(path, pos, bytes([old]))
    there = [f for f in found if f.path == str(path) and f.position is not None and span[0] <= f.position < span[0] + span[1]]
    assert there, f"byte {pos} of {path.name} 0x{old:02x} -> 0x{new:02x}: {[(f.code, f.path, f.position) for f in found]}"


# --- the real 5.3.1 volume --------------------------------------------------------------------


def test_real_531_volume_timer_files_validate_clean():
    """The 5.3.1 docker volume has ``config/timercheck`` and ``config/timermetrics`` but no TimerLog,
    no wheel and no CommitLog: nothing was enqueued, and the checkpoint says so (flush position
    0, queue offsets 0), so no timer finding."""
    root = real_path("rocketmq", "guoming-docker-compose-rocketmq", "store")
    report = validate_rocketmq(root, ValidateOptions())
    assert [f for f in report.findings if f.family == "timer" or "timer" in f.path] == []
    assert report.facts["timer"]["timerlog"]["units"] == 0
    assert report.facts["timer"]["checkpoint"]["last_read_time_ms"] == 1_778_241_104_000


def test_timer_files_that_are_links_or_fifos_are_never_followed_or_opened(copy):
    root, _ = copy
    wheel = root / "timerwheel"
    wheel.rename(root / "elsewhere")
    wheel.symlink_to(root / "elsewhere")
    os.mkfifo(root / "config" / "timercheck.fifo")
    (root / "config" / "timercheck").unlink()
    (root / "config" / "timercheck.fifo").rename(root / "config" / "timercheck")
    report = validate_rocketmq(root, ValidateOptions())  # a FIFO opened for reading would block here
    got = {(f.code, Path(f.path).name) for f in report.findings}
    assert ("RMQ-FILE-LINK", "timerwheel") in got
    assert ("RMQ-FILE-UNREADABLE", "timercheck") in got
    assert not any(f.code.startswith("RMQ-TIMER-SLOT") for f in report.findings)
