"""stats of a Jafka or MetaQ store: every message of every live segment by partition, from the
legacy store model's one reading (``store.model.legacy``); compressed Jafka wrappers are opened,
MetaQ attributes count as tags; the messages carry no time, so times and rates come from the
segments' modification times (each segment's bytes dated at its mtime).

The count of one segment is a fold of the model's walk of it (``SegmentCounter``, a
``store.model.legacy.SegmentFold``): the walk that judges the segment feeds it, so inside
``store.model.legacy.shared_reading(fold=counter)`` (``report``) validate's reading -- in its
worker processes too -- also counts each segment, and stats takes that count instead of reading the
segment again (``store.model.legacy.read_folded``).  The counts of the segments, merged in file
order, are the count of one pass (``ops.stats.aggregates.StatsPartial.merge``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.ops.stats.aggregates import LargeMessage, Progress, StatsOptions, StatsPartial, StoreStats, Top, UnitStats, state_findings
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm

if TYPE_CHECKING:
    from mqtool.store.legacy import Partition
    from mqtool.store.model.legacy import ScannedMessage, SegmentResult, SegmentTask

#: a problem of the pass's own: (path, position, text)
Problem = tuple[str, int | None, str]


@dataclass
class SegmentCount:
    """What stats counts of one live segment: ``partial`` (its partition's unit -- messages,
    bytes, largest size, MetaQ tags -- its largest messages and damaged messages; no times: the
    pass dates a segment's ``bytes`` at its mtime) and the problems of its own the pass met
    (a Jafka wrapper that does not inflate, the reader's failure)."""

    partial: StatsPartial
    bytes: int = 0
    own: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class SegmentCounter:
    """Makes stats' fold of one live segment of a partition (``store.model.legacy.SegmentFolder``):
    picklable, and equal counters count alike."""

    layout: str
    topic: str | None
    partition: int | None
    name: str
    top_n: int

    def __call__(self, task: SegmentTask) -> _Counting:
        return _Counting(self, task)


def counter(task: SegmentTask, part: Partition, top_n: int = StatsOptions.top) -> SegmentCounter | None:
    """stats' counter of a segment of ``part`` (``store.model.legacy.FoldMaker``); None for a MetaQ
    archive: stats counts live segments only."""
    if task.archive is not None:
        return None
    return SegmentCounter(task.layout, part.topic, part.partition, part.name, top_n)


class _Counting:
    """stats' fold of one segment's messages (``store.model.legacy.SegmentFold``): a message whose
    frame holds but whose checksum fails is counted, and counted apart in ``damaged_messages``."""

    def __init__(self, counter: SegmentCounter, task: SegmentTask) -> None:
        self.jafka = counter.layout == "jafka"
        self.snappy = self.jafka and jf.CODEC_SNAPPY in sj.DIALECTS.get(task.variant or "jafka", sj.JAFKA).codecs
        self.path = task.path
        self.start_offset = task.start_offset
        self.topic, self.partition = counter.topic, counter.partition
        self.unit = UnitStats(counter.topic, counter.partition, counter.name)
        self.count = SegmentCount(StatsPartial(counter.top_n, {(counter.topic, counter.partition): self.unit}))

    def add(self, scanned: ScannedMessage) -> None:
        pos, message, damaged = scanned.position, scanned.message, scanned.code is not None
        partial, unit = self.count.partial, self.unit
        offset = self.start_offset + pos
        if self.jafka:
            assert isinstance(message, jf.Message)  # the scan of a Jafka segment
            size_on_disk = message.serialized_size
            unit.bytes += size_on_disk
            if message.compressed:
                try:
                    inner_messages = [m.message for m in jf.iter_wrapper(message, snappy=self.snappy) if not m.message.compressed]
                except MqError as exc:
                    if not damaged:
                        located = exc.at(Path(self.path), pos)
                        self.count.own.append((str(located.path), located.position, str(located)))
                    inner_messages = []  # a wrapper that does not inflate: its finding says so
            else:
                inner_messages = [message]
            for inner in inner_messages:
                if damaged:
                    partial.damaged_messages += 1
                size = len(inner.payload)
                unit.add(size, None)
                partial.top.offer(size, functools.partial(LargeMessage, size, unit.name, self.topic, self.partition, offset, None))
        else:
            if damaged:
                partial.damaged_messages += 1
            assert isinstance(message, mq.Message)  # the scan of a MetaQ segment
            unit.bytes += message.size
            # a malformed attribute block leaves the whole data as payload (its METAQ-ATTRIBUTE finding says so)
            raw_attribute, payload, _ = sm.split_message(message)
            size = len(payload)
            attribute = None if raw_attribute is None else raw_attribute.decode("utf-8", "replace")
            unit.add(size, None, (attribute,) if attribute is not None else ())
            partial.top.offer(size, functools.partial(LargeMessage, size, unit.name, self.topic, self.partition, offset, None))

    def finish(self, result: SegmentResult, error: MqError | None) -> SegmentCount:
        if error is not None:
            self.count.own.append((str(error.path or self.path), error.position, str(error)))
        self.count.bytes = self.unit.bytes
        return self.count


def legacy_stats(path: Path, stats: StoreStats, top: Top, options: StatsOptions, progress: Progress, layout: str) -> Path:
    """Every message of every live segment, from the store model's one reading (each segment's
    walk feeds ``SegmentCounter``'s fold; inside ``shared_reading`` the count validate's reading
    made: ``store.model.legacy.read_folded``); the gaps and damage the reading finds are stated as
    validate states them (``ops.log_findings.select``)."""
    from mqtool.store.model import legacy as lm

    data = sj.open_jafka(path) if layout == "jafka" else sm.open_metaq(path)
    stats.time_source = "segment modification times (the messages carry no time)"
    own: list[Problem] = []
    found: list[Finding] = []
    reading = lm.plan_reading(data, layout)
    found.extend(reading.files)
    units: dict[int, UnitStats] = {}
    for task, part in reading.tasks:
        folder = counter(task, part, options.top)
        if folder is None:
            continue  # live segments only
        unit = units.get(id(part))
        if unit is None:
            unit = units[id(part)] = UnitStats(part.topic, part.partition, part.name)
        mtime_ms = int(os.stat(task.path).st_mtime * 1000)
        res = lm.read_folded(task, folder)
        count = cast(SegmentCount, res.folded)
        partial = count.partial
        unit.merge(partial.units[(part.topic, part.partition)])
        top.merge(partial.top)
        stats.damaged_messages += partial.damaged_messages
        found.extend(res.findings)
        own.extend(count.own)
        progress(res.size)
        unit.segment_times.append((count.bytes, mtime_ms))
        stats.recent.add(mtime_ms, count.bytes)
    found.extend(reading.closing)
    for part in data.partitions:
        unit = units.get(id(part)) or UnitStats(part.topic, part.partition, part.name)
        if unit.segment_times:
            times = [t for _, t in unit.segment_times]
            unit.first_timestamp, unit.last_timestamp = min(times), max(times)
        stats.units.append(unit)
    state_findings(stats, path, layout, own, options, found)
    return Path(data.root)
