"""recover: what a CommitLog cut leaves stale in the RocketMQ 5.x timer store.

When the CommitLog ends before records the TimerLog still points at (``recover`` cuts a broken
tail, or an HA slave truncated its CommitLog: apache/rocketmq#10668), the broker's timer dequeue
reads those units, finds no message and stops making progress, and recovery does not notice (it
checks units by size and magic only, ``recoverAndRevise``).  The plan puts the timer store back
in the shape the broker would have written had those records never existed:

* the TimerLog ends before its first unit whose record lies past the CommitLog's new end (``cut``
  of the rest of that file's units, ``delete`` of the later TimerLog files: recovery stops at the
  zeros, as at any TimerLog end);
* wheel slots whose chain starts at or after that point are cleared (``cut`` of the 32-byte slot:
  a never-used slot); a slot whose chain reaches before it gets its ``lastPos`` set to the last
  unit it keeps and ``num`` lowered by the units it loses (``patch`` of the slot);
* ``timercheck``'s ``lastTimerLogFlushPos`` past the new TimerLog end is set to it (``patch``).

Units after the first stale one whose records the CommitLog still holds are dropped too (a log
cannot keep a hole); the plan counts them and needs ``--force`` then.  Every byte changed is
quarantined first, as for every step.
"""

from __future__ import annotations

import struct
from pathlib import Path

from mqtool.errors import MqError
from mqtool.formats.rocketmq import timer as tf
from mqtool.ops.recover import RecoverPlan, Step, observe, relative
from mqtool.store import rocketmq as rmq
from mqtool.store.files import is_directory, is_regular_file
from mqtool.store.model import timer as model_timer

_LONG = struct.Struct(">q")


def plan_timer(store: rmq.RocketMQStore, plan: RecoverPlan, commitlog_end: int) -> None:
    """Add the steps that make the timer store of ``store`` agree with a CommitLog whose valid data
    ends at ``commitlog_end`` (where the plan leaves it)."""
    paths = model_timer.TimerPaths(store.root)
    if not is_directory(paths.timerlog_dir):
        return
    root = store.root
    walk = model_timer.TimerLogWalk(rmq.list_segments(paths.timerlog_dir))
    kept = [at for at in walk if walk.valid_end is None or at.offset < walk.valid_end]
    start = store.commitlog_min_offset

    def stale(u: tf.TimerUnit) -> bool:
        return u.offset_py >= start and u.offset_py + u.size_py > commitlog_end

    first = next((i for i, at in enumerate(kept) if stale(at.unit)), None)
    if first is None:
        return
    cut_at = kept[first].offset
    dropped = kept[first:]
    still_held = sum(1 for at in dropped if not stale(at.unit) and at.unit.offset_py >= start)
    plan.facts["timer"] = {
        "timerlog_end": cut_at,
        "stale_units": len(dropped) - still_held,
        "units_dropped_with_them": still_held,
    }
    if still_held:
        plan.needs_force.append(f"{still_held} TimerLog unit(s) after the first stale one point at records the CommitLog keeps; they go with the rest of the TimerLog")

    # the TimerLog: the rest of the file holding the first stale unit, and every later file
    head = kept[first]
    ends = {e.path: e for e in walk.ends}
    end = ends.get(head.path)
    stop = head.position + tf.UNIT_SIZE
    if end is not None and end.end is not None:
        stop = max(stop, end.end.position + (tf.MIN_BLANK_LEN if end.end.kind == "blank" else 0))
    elif end is not None and end.error is not None and end.error.position is not None:
        stop = max(stop, end.error.position - end.error.position % tf.UNIT_SIZE + tf.UNIT_SIZE)
    why = (
        f"TimerLog units from TimerLog offset {cut_at} on point past the CommitLog's valid end {commitlog_end} "
        "(their timer messages are gone): the timer dequeue would stop on them"
    )
    plan.add(Step("cut", relative(root, head.path), why, head.position, stop - head.position, expect=observe(head.path, head.position, stop - head.position)))
    base = cut_at - head.position
    for seg in rmq.list_segments(paths.timerlog_dir):
        if seg.base > base:
            plan.add(Step("delete", relative(root, seg.path), f"a TimerLog file after the new TimerLog end {cut_at}", expect=observe(seg.path)))

    # the wheel
    if is_regular_file(paths.wheel):
        prev_of = {at.offset: at.unit for at in dropped}
        for s in model_timer.WheelWalk(paths.wheel):
            slot = s.slot
            if model_timer.slot_problem(s.index, slot) is not None or slot.last_pos < cut_at:
                continue
            if slot.first_pos >= cut_at:
                plan.add(
                    Step(
                        "cut",
                        relative(root, paths.wheel),
                        f"wheel slot {s.index} (due {slot.time_ms()}) holds only units after the new TimerLog end {cut_at}: cleared",
                        s.position,
                        tf.SLOT_SIZE,
                        expect=_expect(plan, root, paths.wheel, s.position, tf.SLOT_SIZE),
                    )
                )
                continue
            pos, removed = slot.last_pos, 0
            while pos >= cut_at and pos in prev_of:
                unit = prev_of[pos]
                removed += -1 if unit.is_delete else 1
                pos = unit.prev_pos
            if pos >= cut_at:
                continue  # a chain that does not lead back before the cut: validate names it
            new = tf.Slot(slot.time, slot.first_pos, pos, slot.num - removed, slot.magic)
            _patch(
                plan,
                root,
                paths.wheel,
                s.position,
                tf.encode_slot(new),
                f"wheel slot {s.index} (due {slot.time_ms()}): lastPos {slot.last_pos} -> {pos}, the last unit it keeps; num {slot.num} -> {new.num}",
            )

    # the checkpoint
    if is_regular_file(paths.checkpoint):
        try:
            cp = model_timer.read_timer_checkpoint(paths.checkpoint)
        except MqError:  # validate names an unreadable timercheck; nothing to adjust
            cp = None
        if cp is not None and cp.last_timer_log_flush_pos > cut_at:
            _patch(
                plan,
                root,
                paths.checkpoint,
                8,
                _LONG.pack(cut_at),
                f"timercheck lastTimerLogFlushPos {cp.last_timer_log_flush_pos} -> {cut_at}, the new TimerLog end",
            )
        queue_end = _timer_queue_end(store, commitlog_end)
        if cp is not None and queue_end is not None and max(cp.last_timer_queue_offset, cp.master_timer_queue_offset) > queue_end:
            last, master = min(cp.last_timer_queue_offset, queue_end), min(cp.master_timer_queue_offset, queue_end)
            _patch(
                plan,
                root,
                paths.checkpoint,
                16,
                _LONG.pack(last) + _LONG.pack(master),
                f"timercheck lastTimerQueueOffset {cp.last_timer_queue_offset} -> {last}, masterTimerQueueOffset "
                f"{cp.master_timer_queue_offset} -> {master}: the end of the {tf.TIMER_TOPIC} queue once its units past the CommitLog's end go",
            )


def _timer_queue_end(store: rmq.RocketMQStore, commitlog_end: int) -> int | None:
    """The queue offset after the last ``rmq_sys_wheel_timer`` queue 0 unit whose record the
    CommitLog keeps (None without that queue)."""
    segments = store.cq_segments(tf.TIMER_TOPIC, 0)
    if not segments:
        return None
    end = None
    for qu in rmq.QueueWalk(segments):
        if qu.unit.is_filler:
            continue
        if qu.unit.commitlog_offset + qu.unit.size > commitlog_end:
            return qu.queue_offset
        end = qu.queue_offset + 1
    return end if end is not None else segments[0].base // 20


def _expect(plan: RecoverPlan, root: Path, path: Path, position: int, length: int) -> dict[str, object]:
    """What a step on ``path`` expects: the file as planned (size, mtime) and the region's CRC;
    after an earlier step of the plan on the same file (which changes its mtime), its size and
    the region only (the regions of one file's steps do not overlap)."""
    expect = observe(path, position, length)
    name = relative(root, path)
    if any(step.path == name for step in plan.steps):
        expect.pop("mtime_ns", None)
    return expect


def _patch(plan: RecoverPlan, root: Path, path: Path, position: int, data: bytes, reason: str) -> None:
    plan.add(Step("patch", relative(root, path), reason, position, len(data), expect=_expect(plan, root, path, position, len(data)), details={"hex": data.hex()}))


__all__ = ["plan_timer"]
