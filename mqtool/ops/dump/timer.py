"""dump: the RocketMQ 5.x timer store's files (``timerlog``, ``timerwheel``, ``timercheck``, ``timermetrics``).

The engines take every answer from the store model (``store.model.timer``): the TimerLog's units
and the findings on its files (how each one ends, a unit recovery refuses, its files' names and
sizes), the wheel's used slots and the findings on them; they yield rows and collect findings,
and never print.  A path names a store root, the family's directory, or one file; a file of
another timer family gets an error naming the right ``dump`` family.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from mqtool.findings import Finding
from mqtool.formats.rocketmq.timer import DEFAULT_PRECISION_MS  # the wheel's slot width without a broker.conf
from mqtool.store.files import is_regular_file
from mqtool.store.model import timer as model_timer


@dataclass
class TimerLogDump:
    """The units of the TimerLog files PATH names, in TimerLog order, at most ``limit``;
    ``findings``: what the store model states about the files walked (validate's codes)."""

    path: Path
    limit: int | None = None
    findings: list[Finding] = field(default_factory=list)
    units: int = 0
    valid_end: int | None = None

    def __iter__(self) -> Iterator[model_timer.UnitAt]:
        target = model_timer.resolve(self.path, "timerlog")
        directory, segments = model_timer.timerlog_files(target)
        # a directory's files: their names, sizes and gaps too; one file: that file only
        walk = model_timer.TimerLogWalk(segments, directory=None if is_regular_file(target) else directory)
        try:
            yield from islice(walk, self.limit)  # at most ``limit`` (None: all), nothing read past it
        finally:
            self.findings.extend(walk.findings)
            self.units = walk.units
            self.valid_end = walk.valid_end


def unit_row(at: model_timer.UnitAt) -> dict[str, Any]:
    """One unit as the documented ``dump timerlog`` row."""
    u = at.unit
    return {
        "file": str(at.path),
        "position": at.position,
        "timerlog_offset": at.offset,
        "prev_pos": u.prev_pos,
        "magic": u.magic,
        "roll": u.is_roll,
        "delete": u.is_delete,
        "curr_write_time": u.curr_write_time,
        "delay_time": u.delay_time,
        "delayed_time": u.delayed_time,
        "commitlog_offset": u.offset_py,
        "size": u.size_py,
        "hash_topic": u.hash_topic,
        "reserved": u.reserved,
    }


@dataclass
class WheelDump:
    """The used slots of a timer wheel file, in slot order, at most ``limit``; ``findings``: its
    size and the slots wrong by themselves (validate's codes)."""

    path: Path
    limit: int | None = None
    findings: list[Finding] = field(default_factory=list)
    file: Path | None = None

    def __iter__(self) -> Iterator[model_timer.SlotAt]:
        self.file = model_timer.resolve(self.path, "timerwheel")
        walk = model_timer.WheelWalk(self.file)
        try:
            yield from islice(walk, self.limit)  # at most ``limit`` (None: all), nothing read past it
        finally:
            self.findings.extend(walk.findings)


def slot_row(path: Path, at: model_timer.SlotAt, precision_ms: int = DEFAULT_PRECISION_MS) -> dict[str, Any]:
    """One used slot as the documented ``dump timerwheel`` row."""
    s = at.slot
    return {
        "file": str(path),
        "position": at.position,
        "slot": at.index,
        "time": s.time,
        "time_ms": s.time_ms(precision_ms),
        "first_pos": s.first_pos,
        "last_pos": s.last_pos,
        "num": s.num,
        "magic": s.magic,
    }


def timercheck_document(path: Path) -> dict[str, Any]:
    """``config/timercheck`` as the documented document (errors located in the file)."""
    file = model_timer.resolve(path, "timercheck")
    cp = model_timer.read_timer_checkpoint(file)
    return {
        "file": str(file),
        "last_read_time_ms": cp.last_read_time_ms,
        "last_timer_log_flush_pos": cp.last_timer_log_flush_pos,
        "last_timer_queue_offset": cp.last_timer_queue_offset,
        "master_timer_queue_offset": cp.master_timer_queue_offset,
        "state_version": cp.state_version,
        "data_version_timestamp": cp.data_version_timestamp,
        "data_version_counter": cp.data_version_counter,
    }


def timermetrics_document(path: Path) -> dict[str, Any]:
    """``config/timermetrics`` as the documented document (errors located in the file)."""
    file = model_timer.resolve(path, "timermetrics")
    metrics = model_timer.read_timer_metrics(file)
    version = metrics.data_version
    return {
        "file": str(file),
        "data_version": None if version is None else {"counter": version.counter, "state_version": version.state_version, "timestamp": version.timestamp},
        "timing_count": [{"topic": t, "count": m.count, "time_stamp": m.time_stamp} for t, m in sorted(metrics.timing_count.items())],
    }


__all__ = ["DEFAULT_PRECISION_MS", "TimerLogDump", "unit_row", "WheelDump", "slot_row", "timercheck_document", "timermetrics_document"]
