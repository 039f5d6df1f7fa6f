"""recover on RocketMQ 5.x timer stores: what a CommitLog cut leaves stale in the TimerLog, the wheel
and timercheck is planned, applied (quarantined, undoable) and leaves a store validate finds clean."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from mqtool.ops.recover import undo_manifest
from mqtool.ops.recover.rocketmq import RecoverOptions, apply_rocketmq, plan_rocketmq
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from tests.timer_store import SLOT_LEN, SLOTS, T0, UNIT_LEN, make_timer_store


def _cut_commitlog(root: Path, at: int) -> None:
    """What a slave's truncation leaves (apache/rocketmq#10668): the CommitLog ends at ``at`` (zeros after)."""
    path = root / "commitlog" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    data[at:] = bytes(len(data) - at)
    path.write_bytes(bytes(data))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".mqtool" not in p.name}


def _timer_steps(plan):
    return [(s.action, s.path, s.position, s.length) for s in plan.steps if s.path.startswith(("timer", "config/timer"))]


def test_a_commitlog_cut_is_followed_into_the_timer_store(tmp_path):
    root = tmp_path / "s"
    timer = make_timer_store(root)  # units at 0, 52, ..., 260; the 4th (156) is the first past the cut
    _cut_commitlog(root, timer.enqueued[3].commitlog_offset)
    assert {f.code for f in validate_rocketmq(root, ValidateOptions()).findings} >= {"RMQ-TIMER-PAST-END"}
    plan = plan_rocketmq(root, RecoverOptions())
    slot5 = (T0 + 5000) // 1000 % SLOTS
    assert _timer_steps(plan) == [
        ("cut", f"timerlog/{0:020d}", 3 * UNIT_LEN, 3 * UNIT_LEN),
        ("patch", "timerwheel", slot5 * SLOT_LEN, SLOT_LEN),  # lastPos 208 -> 52, num 3 -> 2
        ("cut", "timerwheel", (T0 + 3_600_000) // 1000 % SLOTS * SLOT_LEN, SLOT_LEN),
        ("cut", "timerwheel", (T0 + 86_400_000) // 1000 % SLOTS * SLOT_LEN, SLOT_LEN),
        ("patch", "config/timercheck", 8, 8),  # lastTimerLogFlushPos 312 -> 156
        ("patch", "config/timercheck", 16, 16),  # the timer queue offsets 6 -> 3
    ]
    assert plan.facts["timer"] == {"timerlog_end": 3 * UNIT_LEN, "stale_units": 3, "units_dropped_with_them": 0}
    assert not any("TimerLog" in n for n in plan.needs_force)
    before = _snapshot(root)
    result = apply_rocketmq(plan, quarantine_root=tmp_path / "q")
    report = validate_rocketmq(root, ValidateOptions())
    assert [f.code for f in report.findings if f.level.value != "info"] == []
    assert report.facts["timer"]["timerlog"]["units"] == 3
    wheel = (root / "timerwheel").read_bytes()
    assert struct.unpack_from(">qqqii", wheel, slot5 * SLOT_LEN) == ((T0 + 5000) // 1000, 0, 52, 2, 0)
    # every byte changed is back after --undo
    undo_manifest(Path(result.manifest))
    assert _snapshot(root) == before


def test_a_cut_in_the_first_of_several_timerlog_files_deletes_the_later_ones(tmp_path):
    root = tmp_path / "s"
    file_size = UNIT_LEN * 3 + 20
    timer = make_timer_store(root, delays=[1000 * i + 500 for i in range(1, 9)], timerlog_file_size=file_size)
    assert len(timer.files) == 3
    _cut_commitlog(root, timer.enqueued[1].commitlog_offset)
    plan = plan_rocketmq(root, RecoverOptions())
    steps = _timer_steps(plan)
    assert steps[0] == ("cut", f"timerlog/{0:020d}", UNIT_LEN, 2 * UNIT_LEN + 16)  # two units and the BLANK
    assert [s for s in steps if s[0] == "delete"] == [("delete", f"timerlog/{b:020d}", None, None) for b in sorted(timer.files)[1:]]
    apply_rocketmq(plan, quarantine_root=tmp_path / "q")
    report = validate_rocketmq(root, ValidateOptions())
    assert [f.code for f in report.findings if f.level.value != "info"] == []
    assert report.facts["timer"]["timerlog"] == {"files": 1, "units": 1, "valid_end": UNIT_LEN, "start": 0}


def test_a_healthy_timer_store_gets_no_timer_step(tmp_path):
    root = tmp_path / "s"
    make_timer_store(root)
    plan = plan_rocketmq(root, RecoverOptions())
    assert _timer_steps(plan) == [] and "timer" not in plan.facts


def test_units_the_commitlog_still_holds_after_a_stale_one_need_force(tmp_path):
    root = tmp_path / "s"
    timer = make_timer_store(root)
    shutil.copy(root / "timerlog" / f"{0:020d}", tmp_path / "keep")
    # unit 1 points past the CommitLog's end; units 2..5 still point at records it holds
    e = timer.enqueued[1]
    with open(root / "timerlog" / f"{0:020d}", "r+b") as f:
        f.seek(e.position + 28)
        f.write(struct.pack(">q", 1 << 40))
    plan = plan_rocketmq(root, RecoverOptions())
    assert plan.facts["timer"] == {"timerlog_end": UNIT_LEN, "stale_units": 1, "units_dropped_with_them": 4}
    assert any("4 TimerLog unit(s)" in n for n in plan.needs_force)
    with pytest.raises(Exception, match="--force"):
        apply_rocketmq(plan, quarantine_root=tmp_path / "q")
