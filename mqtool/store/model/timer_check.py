"""The RocketMQ 5.x timer store judged across its files and against the CommitLog (validate's
``timer`` family, ``store.model.rocketmq_read`` runs it).

What ``store.model.timer`` reads (each TimerLog file's units and how it ends,
the wheel's size and used slots, the checkpoint) is tied together here, as the broker's timer
store (``TimerMessageStore``) relies on it:

* wheel slot -> TimerLog units: the dequeue (``dequeue``) reads a slot's units from ``lastPos``
  back through ``prevPos`` until -1, and delivers each one; a chain that reaches no unit, a unit of
  another delivery time (delivered at the wrong time), a position that does not go back (the
  dequeue loops), or never reaches ``firstPos`` is ``RMQ-TIMER-SLOT-CHAIN``; a slot pointing at or
  past the TimerLog's valid end is ``RMQ-TIMER-SLOT-PAST-END`` (``checkPhyPos``); ``num`` against
  its chain is ``RMQ-TIMER-SLOT-NUM`` (statistics);
* TimerLog unit -> its slot: ``prevPos`` must be the previous unit of the same delivery time
  (``doEnqueue`` links each unit to its slot's ``lastPos``: ``RMQ-TIMER-UNIT-PREV``); a unit due
  after the checkpoint's read time that its slot does not reach, before the point recovery relinks
  from (``lastTimerLogFlushPos`` minus one file), is never delivered (``RMQ-TIMER-UNIT-ORPHAN``);
* TimerLog unit -> CommitLog record: ``offsetPy`` at or past the CommitLog's valid end
  (``RMQ-TIMER-PAST-END``, linked to the damage that ends the CommitLog: after a cut CommitLog the
  dequeue gets stuck on them), below its first file (``RMQ-TIMER-EXPIRED``), where no record starts
  (``RMQ-TIMER-NOT-A-RECORD``), or at a record that is not this timer message: not of topic
  ``rmq_sys_wheel_timer`` with ``TIMER_OUT_MS``, another TOTALSIZE than ``sizePy``, another
  ``REAL_TOPIC`` hash than ``hashTopic``, another delivery time (a unit not rolled is due at
  ``TIMER_OUT_MS``; a rolled one before it), a delete mark on one side only
  (``RMQ-TIMER-MISMATCH``); fields the broker always writes one way (``RMQ-TIMER-UNIT-FIELD``);
* the checkpoint against the files: ``lastTimerLogFlushPos`` past the TimerLog's valid end,
  ``lastTimerQueueOffset`` past the end of the ``rmq_sys_wheel_timer`` queue or after
  ``masterTimerQueueOffset`` (``RMQ-TIMER-CHECKPOINT``).
* ``timermetrics`` against the TimerLog: each topic's ``count`` against the units due at or after
  the checkpoint's ``lastReadTimeMs`` whose ``hashTopic`` is the topic's hash, a delete mark counting
  -1, as ``TimerMessageStore.checkAndReviseMetrics`` counts them (``RMQ-TIMER-METRICS``, info:
  TimerMetrics is advisory, statistics only; the broker revises the counts below
  ``timerMetricSmallThreshold`` from the TimerLog itself once a day, at ``timerCheckMetricsWhen``).
  Topics whose hashes collide are left out (the broker reads their records to tell them apart).

The slot width is ``timerPrecisionMs`` (1000 ms unless broker.conf says otherwise: ``--config``).

Units pointing into CommitLog ranges that validate already reported damaged are not reported
again.  Every walk goes back strictly or stops, and no unit is followed twice: hostile chains end.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.findings import code_ids as ids
from mqtool.formats.rocketmq import timer as tf
from mqtool.store import rocketmq as rmq
from mqtool.store.model import consumers as model_consumers
from mqtool.store.model import rocketmq as model_rocketmq
from mqtool.store.model import timer as model_timer


@dataclass
class TimerCheck:
    """What the timer checks found, and the facts a report states about the timer store."""

    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Units:
    """The units recovery keeps (below the TimerLog's valid end), as columns in TimerLog order."""

    offset: list[int] = field(default_factory=list)
    prev: list[int] = field(default_factory=list)
    slot_time: list[int] = field(default_factory=list)
    delete: list[bool] = field(default_factory=list)
    due: list[int] = field(default_factory=list)
    hash_topic: list[int] = field(default_factory=list)


def _in_ranges(ranges: tuple[tuple[int, int], ...], offset: int) -> bool:
    i = bisect.bisect_right(ranges, (offset, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= offset < ranges[i][1]


class _Locator:
    """TimerLog offset -> (file, position)."""

    def __init__(self, segments: list[rmq.Segment]) -> None:
        self.segments = segments
        self.bases = [s.base for s in segments]

    def __call__(self, offset: int) -> tuple[str, int]:
        i = bisect.bisect_right(self.bases, offset) - 1
        if i < 0:
            return str(self.segments[0].path.parent) if self.segments else "timerlog", offset
        seg = self.segments[i]
        return str(seg.path), offset - seg.base


def check_timer(
    store: rmq.RocketMQStore,
    *,
    commitlog_end: int,
    damaged: tuple[tuple[int, int], ...] = (),
    end_cause: Finding | None = None,
    live: bool = False,
    precision_ms: int | None = None,
) -> TimerCheck:
    """Every timer finding of ``store`` (none when it has no timer files), given where its
    CommitLog's valid data ends (``commitlog_end``), the ranges already reported damaged, and the
    finding that ends the CommitLog's valid data (``end_cause``); ``precision_ms``: the broker's
    ``timerPrecisionMs`` (None: its default, 1000)."""
    precision_ms = precision_ms or tf.DEFAULT_PRECISION_MS
    out = TimerCheck()
    paths = model_timer.TimerPaths(store.root)
    if not paths.present():
        return out
    # the checkpoint
    kinds = {p: rmq.entry_kind(p) for p in (paths.wheel, paths.timerlog_dir, paths.checkpoint)}  # links are never followed
    wanted = {paths.wheel: ("a regular file", "the timer wheel as a regular file"), paths.timerlog_dir: ("a directory", "the TimerLog directory")}
    wanted[paths.checkpoint] = ("a regular file", "the timer checkpoint as a regular file")
    for p, kind in kinds.items():
        if kind is not None and kind != wanted[p][0]:
            out.findings.extend(model_rocketmq.irregular_findings([(p, kind)], wanted[p][1]))
    has_wheel = kinds[paths.wheel] == "a regular file"
    has_timerlog = kinds[paths.timerlog_dir] == "a directory"
    checkpoint: tf.TimerCheckpoint | None = None
    if kinds[paths.checkpoint] == "a regular file":
        checkpoint, problem = model_timer.timer_checkpoint_finding(paths.checkpoint)
        if problem is not None:
            out.findings.append(problem)
    # timermetrics is a config JSON file: it parses, or its .bak is what the broker loads
    metrics = model_consumers.load_config(store, paths.metrics.name, tf.parse_timer_metrics)
    out.findings.extend(model_consumers.config_findings(metrics))

    # the TimerLog
    segments = rmq.list_segments(paths.timerlog_dir) if has_timerlog else []
    walk = model_timer.TimerLogWalk(segments, directory=paths.timerlog_dir if has_timerlog else None)
    locate = _Locator(segments)
    units = _Units()
    records = _RecordCheck(store, commitlog_end, damaged, end_cause, live)
    last_of: dict[int, int] = {}  # slot time -> the last unit of that time so far
    for at in walk:
        if walk.valid_end is not None and at.offset >= walk.valid_end:
            continue  # after a unit recovery stops at: truncated at restart, reported there
        u = at.unit
        path, pos = str(at.path), at.position
        t = tf.slot_time(u.delayed_time, precision_ms)
        expected = last_of.get(t)
        if u.prev_pos != (tf.NO_POS if expected is None else expected) and not (expected is None and 0 <= u.prev_pos < walk.start):
            want = "-1 (the first unit of its delivery time)" if expected is None else f"{expected} (the previous unit of delivery time {t * precision_ms})"
            out.findings.append(Finding(ids.RMQ_TIMER_UNIT_PREV, path, pos + 4, f"expected prevPos {want}, found {u.prev_pos}", length=8))
        last_of[t] = at.offset
        if u.reserved != 0 or not u.magic & tf.MAGIC_DEFAULT or u.magic & 0x8:
            out.findings.append(
                Finding(
                    ids.RMQ_TIMER_UNIT_FIELD,
                    path,
                    pos,
                    f"expected magic with MAGIC_DEFAULT and no bit 8, reserved 0, found magic {u.magic}, reserved {u.reserved}",
                    length=tf.UNIT_SIZE,
                )
            )
        out.findings.extend(records.check(path, pos, u))
        units.offset.append(at.offset)
        units.prev.append(u.prev_pos)
        units.slot_time.append(t)
        units.delete.append(u.is_delete)
        units.due.append(u.delayed_time)
        units.hash_topic.append(u.hash_topic)
    records.close()
    out.findings.extend(walk.findings)
    out.findings.extend(records.expired_findings())
    valid_end = walk.valid_end if walk.valid_end is not None else 0

    # the wheel
    slots: list[model_timer.SlotAt] = []
    if has_wheel:
        wheel = model_timer.WheelWalk(paths.wheel)
        try:
            slots = list(wheel)
        except MqError as exc:
            out.findings.append(Finding(ids.RMQ_FILE_UNREADABLE, str(paths.wheel), exc.position, exc.reason))
        out.findings.extend(wheel.findings)
    elif units.offset and kinds[paths.wheel] is None:
        out.findings.append(
            Finding(ids.RMQ_TIMER_WHEEL_SIZE, str(paths.wheel), None, f"expected the timer wheel beside {len(units.offset)} TimerLog unit(s), found no timerwheel file")
        )
    col_offset = np.asarray(units.offset, dtype=np.int64)
    col_prev = np.asarray(units.prev, dtype=np.int64)
    col_time = np.asarray(units.slot_time, dtype=np.int64)
    col_delete = np.asarray(units.delete, dtype=bool)
    reached = np.zeros(len(col_offset), dtype=bool)
    wheel_path = str(paths.wheel)
    by_index: dict[int, tf.Slot] = {}
    for s in slots:
        by_index[s.index] = s.slot
        if model_timer.slot_problem(s.index, s.slot) is not None:
            continue  # RMQ-TIMER-SLOT says what is wrong with it
        out.findings.extend(_walk_chain(s, wheel_path, walk.start, valid_end, col_offset, col_prev, col_time, col_delete, reached, locate, precision_ms))

    # units the wheel does not reach: pending, and before where recovery relinks from
    read_ms = checkpoint.last_read_time_ms if checkpoint is not None else 0
    flush_pos = checkpoint.last_timer_log_flush_pos if checkpoint is not None else 0
    file_size = walk.file_size or tf.DEFAULT_TIMERLOG_FILE_SIZE
    relinked_from = max(0, flush_pos - file_size)
    if has_wheel and len(col_offset):
        for i in np.flatnonzero(~reached & (col_offset < relinked_from) & (col_time * precision_ms >= read_ms)).tolist():
            t = int(col_time[i])
            slot = by_index.get(t % tf.WHEEL_SLOTS)
            if slot is not None and slot.time > t:
                continue  # the slot was used again for a later time: this one was delivered
            path, pos = locate(int(col_offset[i]))
            held = "an empty slot" if slot is None else f"slot time {slot.time}" + (" whose chain does not reach it" if slot.time == t else "")
            out.findings.append(
                Finding(
                    ids.RMQ_TIMER_UNIT_ORPHAN,
                    path,
                    pos,
                    f"expected the unit due at {t * precision_ms} (after the checkpoint's read time {read_ms}) in the chain of wheel slot "
                    f"{t % tf.WHEEL_SLOTS}, found {held}: it is never delivered (recovery relinks units from TimerLog offset {relinked_from} only)",
                    length=tf.UNIT_SIZE,
                )
            )

    # the checkpoint against the files
    if checkpoint is not None:
        out.findings.extend(_checkpoint_findings(store, paths.checkpoint, checkpoint, valid_end, bool(segments)))

    if metrics.value is not None and metrics.path is not None and segments:
        out.findings.extend(_metrics_findings(metrics.path, metrics.value, units, read_ms))

    pending = int(np.count_nonzero((col_time * precision_ms >= read_ms) & ~col_delete)) if len(col_time) else 0
    out.facts = {
        "precision_ms": precision_ms,
        "timerlog": {"files": len(segments), "units": int(len(col_offset)), "valid_end": valid_end, "start": walk.start},
        "wheel_slots_used": len(slots),
        "pending_units": pending,
        **({"checkpoint": {"last_read_time_ms": checkpoint.last_read_time_ms, "last_timer_log_flush_pos": checkpoint.last_timer_log_flush_pos}} if checkpoint else {}),
    }
    return out


#: ``MessageStoreConfig.timerMetricSmallThreshold``: the counts ``checkAndReviseMetrics`` revises
METRIC_SMALL_THRESHOLD = 1_000_000


def _metrics_findings(path: Path, metrics: tf.TimerMetrics, units: _Units, read_ms: int) -> list[Finding]:
    """``RMQ-TIMER-METRICS`` for each topic of ``timermetrics`` whose count is not what the
    TimerLog holds for it (``TimerMessageStore.checkAndReviseMetrics``: the units due at or after
    the read time, by ``hashTopic``, a delete mark -1)."""
    held: dict[int, int] = {}
    for due, hsh, delete in zip(units.due, units.hash_topic, units.delete, strict=True):
        if due >= read_ms:
            held[hsh] = held.get(hsh, 0) + (-1 if delete else 1)
    by_hash: dict[int, list[str]] = {}
    for topic in metrics.timing_count:
        by_hash.setdefault(tf.java_string_hash(topic), []).append(topic)
    out: list[Finding] = []
    for topic, metric in sorted(metrics.timing_count.items()):
        hsh = tf.java_string_hash(topic)
        if len(by_hash[hsh]) > 1 or metric.count >= METRIC_SMALL_THRESHOLD:
            continue  # the broker reads the records to tell colliding topics apart; big counts it leaves
        count = held.get(hsh, 0)
        if count != metric.count:
            out.append(
                Finding(
                    ids.RMQ_TIMER_METRICS,
                    str(path),
                    None,
                    f"expected timingCount[{topic!r}].count {count} (the TimerLog's units due at or after {read_ms} with its topic hash {hsh}), "
                    f"found {metric.count}: TimerMetrics is statistics only, the broker revises it from the TimerLog (checkAndReviseMetrics)",
                )
            )
    return out


def _walk_chain(
    s: model_timer.SlotAt,
    wheel_path: str,
    start: int,
    valid_end: int,
    offsets: np.ndarray,
    prevs: np.ndarray,
    times: np.ndarray,
    deletes: np.ndarray,
    reached: np.ndarray,
    locate: _Locator,
    precision_ms: int,
) -> list[Finding]:
    """The findings about one slot's chain (from ``lastPos`` back through ``prevPos``)."""
    slot = s.slot
    out: list[Finding] = []
    for name, pos_in_slot, value in (("lastPos", 16, slot.last_pos), ("firstPos", 8, slot.first_pos)):
        if value >= valid_end:
            out.append(
                Finding(
                    ids.RMQ_TIMER_SLOT_PAST_END,
                    wheel_path,
                    s.position + pos_in_slot,
                    f"expected the {name} of slot {s.index} (due {slot.time * precision_ms}) before the TimerLog's valid end {valid_end}, found {value}",
                    length=8,
                )
            )
            return out
    pos = slot.last_pos
    count = 0
    end = pos
    where = f"the chain of slot {s.index} (due {slot.time * precision_ms}) from its lastPos"

    def broken(expected: str, found: str) -> list[Finding]:
        # stated on the slot: its chain is what the dequeue reads
        return [Finding(ids.RMQ_TIMER_SLOT_CHAIN, wheel_path, s.position + 16, f"expected {where} {expected}, found {found}", length=8)]

    while pos != tf.NO_POS:
        if pos < start:
            return out  # into TimerLog files already deleted: the dequeue stops there too
        i = int(np.searchsorted(offsets, pos))
        if i >= len(offsets) or offsets[i] != pos:
            return broken("to go through TimerLog units", f"no unit at {pos}")
        if reached[i]:
            return broken("to hold units of its own", f"the unit at {pos} in another slot's chain too")
        reached[i] = True
        if int(times[i]) != slot.time:
            path, upos = locate(pos)
            return broken(
                "to hold units due at the slot's time",
                f"the unit at {pos} ({path}:{upos}) due at {int(times[i]) * precision_ms}: the dequeue delivers it at the slot's time",
            )
        count += -1 if deletes[i] else 1
        end = pos
        prev = int(prevs[i])
        if prev != tf.NO_POS and prev >= pos:
            return broken("to go back unit by unit", f"the unit at {pos} linking to {prev}: the dequeue loops")
        pos = prev
    if end != slot.first_pos:
        return [
            Finding(ids.RMQ_TIMER_SLOT_CHAIN, wheel_path, s.position + 8, f"expected {where} to end at its firstPos {slot.first_pos}, found it ends at {end}", length=8)
        ]
    if count != slot.num:
        out.append(Finding(ids.RMQ_TIMER_SLOT_NUM, wheel_path, s.position + 24, f"expected num {count} (units minus deletes in {where}), found {slot.num}", length=4))
    return out


class _RecordCheck:
    """Each unit against the CommitLog record it points at."""

    def __init__(self, store: rmq.RocketMQStore, commitlog_end: int, damaged: tuple[tuple[int, int], ...], end_cause: Finding | None, live: bool) -> None:
        self.reader = rmq.CommitLogReader(store)
        self.start = store.commitlog_min_offset
        self.end = commitlog_end
        self.damaged = damaged
        self.end_cause = end_cause
        self.live = live
        self.expired: dict[str, tuple[int, int]] = {}  # file -> (first position, count)

    def close(self) -> None:
        self.reader.close()

    def expired_findings(self) -> list[Finding]:
        return [
            Finding(ids.RMQ_TIMER_EXPIRED, path, first, f"{n} unit(s) from here point below the CommitLog's first offset {self.start} (expired by retention)")
            for path, (first, n) in self.expired.items()
        ]

    def check(self, path: str, pos: int, u: tf.TimerUnit) -> list[Finding]:
        off = u.offset_py
        at = pos + tf.OFFSET_PY_POSITION
        if off < self.start:
            first, n = self.expired.get(path, (pos, 0))
            self.expired[path] = (first, n + 1)
            return []
        if _in_ranges(self.damaged, off):
            return []  # the CommitLog finding there says what is wrong with this record
        if off >= self.end or off + u.size_py > self.end:
            if self.live:
                return []
            f = Finding(
                ids.RMQ_TIMER_PAST_END,
                path,
                at,
                f"expected offsetPy + sizePy ({off} + {u.size_py}) within the CommitLog's valid data (ending at {self.end}), found it past the end: "
                "the timer dequeue stops on it",
                length=12,
            )
            return [f.caused_by(self.end_cause) if self.end_cause is not None else f]
        try:
            record = self.reader.read(off, size_hint=min(max(u.size_py, 64), 1 << 16))  # a bigger record is read again whole
        except MqError as exc:
            return [Finding(ids.RMQ_TIMER_NOT_A_RECORD, path, at, f"expected a CommitLog record at offsetPy {off}, found none: {exc.reason}", length=8)]
        if record.physical_offset != off:
            return [
                Finding(
                    ids.RMQ_TIMER_NOT_A_RECORD,
                    path,
                    at,
                    f"expected a CommitLog record at offsetPy {off}, found one whose PHYSICALOFFSET is {record.physical_offset}",
                    length=8,
                )
            ]
        props = record.properties
        out_ms = props.get(tf.PROPERTY_TIMER_OUT_MS)
        if record.topic != tf.TIMER_TOPIC or out_ms is None or not out_ms.lstrip("-").isdigit():
            return [
                Finding(
                    ids.RMQ_TIMER_MISMATCH,
                    path,
                    at,
                    f"expected a timer message (topic {tf.TIMER_TOPIC} with {tf.PROPERTY_TIMER_OUT_MS}) at offsetPy {off}, "
                    f"found a record of topic {record.topic!r}" + ("" if out_ms is None else f" with {tf.PROPERTY_TIMER_OUT_MS}={out_ms!r}"),
                    length=8,
                )
            ]
        problems: list[tuple[int, int, str, str]] = []  # (position in the unit, length, expected, found)
        if record.total_size != u.size_py:
            problems.append((36, 4, f"sizePy = the record's TOTALSIZE {record.total_size}", f"sizePy {u.size_py}"))
        real = props.get(tf.PROPERTY_REAL_TOPIC)
        want_hash = tf.java_string_hash(real) if real is not None else 0
        if u.hash_topic != want_hash:
            problems.append((40, 4, f"hashTopic = the hash {want_hash} of REAL_TOPIC {real!r}", f"hashTopic {u.hash_topic}"))
        deliver = int(out_ms)
        if u.is_roll and not u.delayed_time < deliver:
            problems.append((16, 12, f"a rolled unit due before TIMER_OUT_MS {deliver}", f"currWriteTime + delayTime = {u.delayed_time}"))
        elif not u.is_roll and u.delayed_time != deliver:
            problems.append((16, 12, f"currWriteTime + delayTime = TIMER_OUT_MS {deliver}", f"{u.delayed_time}"))
        has_key = tf.PROPERTY_TIMER_DEL_UNIQKEY in props
        if u.is_delete != has_key:
            mark = "a delete mark (MAGIC_DELETE)" if has_key else "no delete mark"
            problems.append((12, 4, f"{mark} as the record {'has' if has_key else 'has no'} {tf.PROPERTY_TIMER_DEL_UNIQKEY}", f"magic {u.magic}"))
        return [
            Finding(ids.RMQ_TIMER_MISMATCH, path, pos + field_at, f"expected {want} (the timer message at offsetPy {off}), found {got}", length=length)
            for field_at, length, want, got in problems
        ]


def _checkpoint_findings(store: rmq.RocketMQStore, path: Path, cp: tf.TimerCheckpoint, valid_end: int, has_timerlog: bool) -> list[Finding]:
    out: list[Finding] = []
    where = str(path)
    if cp.last_timer_log_flush_pos > valid_end:
        held = f"the TimerLog's valid end {valid_end}" if has_timerlog else "no TimerLog file"
        out.append(
            Finding(
                ids.RMQ_TIMER_CHECKPOINT,
                where,
                8,
                f"expected lastTimerLogFlushPos <= the TimerLog's valid end, found {cp.last_timer_log_flush_pos} with {held}: flushed timer units are missing",
                length=8,
            )
        )
    if cp.last_timer_queue_offset > cp.master_timer_queue_offset:
        out.append(
            Finding(
                ids.RMQ_TIMER_CHECKPOINT,
                where,
                16,
                "expected lastTimerQueueOffset <= masterTimerQueueOffset (it is written as their minimum), "
                f"found {cp.last_timer_queue_offset} > {cp.master_timer_queue_offset}",
                length=8,
            )
        )
    queue = rmq.queue_range(store, tf.TIMER_TOPIC, 0)
    has_queue = bool(store.cq_segments(tf.TIMER_TOPIC, 0))
    if cp.last_timer_queue_offset > queue.max_offset and (has_queue or store.commitlog):
        out.append(
            Finding(
                ids.RMQ_TIMER_CHECKPOINT,
                where,
                16,
                f"expected lastTimerQueueOffset <= the end {queue.max_offset} of the {tf.TIMER_TOPIC} queue 0, found {cp.last_timer_queue_offset}: "
                "timer messages the checkpoint says were enqueued are missing (the broker starts from the queue's end)",
                length=8,
            )
        )
    return out


__all__ = ["TimerCheck", "check_timer"]
