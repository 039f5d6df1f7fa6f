"""stats of a Kafka log dir: every record of every ``.log`` segment by partition, counted by a fold
the Kafka store model's one reading runs over each segment as it walks it
(:class:`KafkaStatsFold`, ``store.model.kafka.read_store_entries(fold=...)``); control records are
not counted as messages, ``bytes`` are the batches' bytes, times are the records' timestamps
(CreateTime or LogAppendTime), keys are the records' keys.

Each segment's count is a ``StatsPartial`` (with the segment's own problems); the partials merged
in file order are the store's counts, equal to one pass over every record.  Inside
``store.model.kafka.shared_reading(fold=KafkaStatsFold(...))`` (``report``) validate's reading
(in-process or in its worker processes) runs the same fold over each segment and keeps what it
made; stats then takes the kept counts of an unchanged segment instead of reading it again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import UnsupportedFormatError
from mqtool.findings import Finding
from mqtool.ops.stats.aggregates import LargeMessage, Progress, StatsOptions, StatsPartial, StoreStats, Top, UnitStats, state_findings
from mqtool.store import kafka as kstore
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import kafka as km

#: A problem of the count's own: (path, position, text).
Problem = tuple[str, int | None, str]


@dataclass
class SegmentStats:
    """What :class:`KafkaStatsFold` makes of one segment: its records counted (``partial``, its one
    unit the segment's partition), the count's own problems (a broken entry that ends the count,
    a segment before the last that does not end after its last entry), the entries whose records
    were not counted (a codec not installed), and whether the ``.log`` could not be read."""

    partial: StatsPartial
    own: list[Problem] = field(default_factory=list)
    undecoded: list[Finding] = field(default_factory=list)
    unreadable: bool = False


@dataclass(frozen=True)
class KafkaStatsFold:
    """stats' fold of a segment (``store.model.kafka_segment.SegmentFold``): ``top`` largest
    messages kept, ``check_crc`` as ``--no-crc`` says.  Picklable and compared by value: it goes
    with each segment's task to the process that reads the segment."""

    top: int = 10
    check_crc: bool = True

    @property
    def decode(self) -> km.EntryDecode:
        return km.EntryDecode("full", self.check_crc)

    def start(self, task: km.SegmentTask) -> SegmentCount:
        return SegmentCount(self, task)


class SegmentCount:
    """The count of one segment (``SegmentFolder``): every record of the entries of its first walk
    (a walk resumed after a broken entry is not counted; a broken entry ends the count, as a walk
    that stops there does); the records of a batch whose frame holds but whose CRC fails are
    counted, and counted apart in ``damaged_messages`` (kafka-dump-log lists them too)."""

    def __init__(self, fold: KafkaStatsFold, task: km.SegmentTask) -> None:
        self.task = task
        directory = Path(task.partition)
        parsed = kstore.parse_partition_name(directory.name)
        self.topic = parsed.topic if parsed is not None else None
        self.partition = parsed.partition if parsed is not None else None
        self.unit = UnitStats(self.topic, self.partition, directory.name)
        self.result = SegmentStats(StatsPartial(fold.top, {(self.topic, self.partition): self.unit}))
        self.stopped = False

    def entry(self, item: km.ScannedEntry) -> None:
        if item.resumed or self.stopped:
            return
        entry, error = item.entry, item.error
        result, unit = self.result, self.unit
        if entry is None:  # a broken entry: the count of this segment stops here
            self.stopped = True
            if error is not None:
                result.own.append((str(error.path), error.position, str(error)))
            return
        partial = result.partial
        unit.bytes += entry.size
        share = entry.size
        damaged = error is not None and not isinstance(error, UnsupportedFormatError)  # kept despite its CRC
        if isinstance(error, UnsupportedFormatError):
            result.undecoded.append(Finding(kstore.entry_error_code(error), self.task.log, item.position, f"records not counted: {error.reason}"))
        for rec in entry.records or ():
            if rec.is_control:
                continue
            if damaged:
                partial.damaged_messages += 1
            size = len(rec.key or b"") + len(rec.value or b"") + sum(len(h.key) + len(h.value or b"") for h in rec.headers)
            keys = (rec.key,) if rec.key is not None else ()
            unit.add(size, rec.timestamp, (), keys)
            if rec.timestamp is not None and rec.timestamp >= 0:
                partial.recent.add(rec.timestamp, share)
                share = 0
            partial.top.offer(size, functools.partial(LargeMessage, size, unit.name, self.topic, self.partition, rec.offset, rec.timestamp))

    def finish(self, result: km.SegmentResult, first_walk: km.FirstWalk | None) -> SegmentStats:
        got = self.result
        got.unreadable = first_walk is None
        walk = first_walk
        if walk is not None and walk.error is None and not self.task.is_last and walk.end is not None:
            data_end, size, log = walk.end, result.size, self.task.log
            if data_end.kind in ("partial", "zeros") and data_end.position < size:
                # only the active segment can end in a torn write or pre-allocated zeros
                what = "a cut entry" if data_end.kind == "partial" else "zero bytes"
                got.own.append(
                    (
                        log,
                        data_end.position,
                        f"{log}:{data_end.position}: expected the segment to end after its last entry (a segment before the last is complete), "
                        f"found {what} ({size - data_end.position} bytes; recovery truncates here and deletes every later segment)",
                    )
                )
        return got


def kafka_stats(path: Path, stats: StoreStats, top: Top, options: StatsOptions, progress: Progress) -> Path:
    """Every record of every ``.log`` segment, counted by :class:`KafkaStatsFold` in the store
    model's one reading (``store.model.kafka.read_store_entries``: each log byte read once; inside
    ``shared_reading`` with an equal fold, a segment validate's reading counted is not read
    again).  The segments' counts merge in file order.  The gaps and damage the reading finds are
    stated as validate states them."""
    from mqtool.ops import log_findings

    store = kstore.open_kafka(path)
    stats.time_source = "record timestamps"
    own: list[Problem] = []  # the count's own problems
    found: list[Finding] = []
    units = {str(part.path): UnitStats(part.topic, part.partition, part.name) for part in store.partitions}
    segments = {str(seg.log) for part in store.partitions for seg in part.log_segments()}
    merged = StatsPartial(options.top)  # every segment's count but its unit's, in file order
    fold = KafkaStatsFold(options.top, options.check_crc)
    done = 0
    for item in km.read_store_entries(store, km.EntryDecode("framing"), checks=log_findings.LOG, kept=True, fold=fold):
        if isinstance(item, km.Placed):
            found.append(item.finding)
        elif isinstance(item, km.ScannedEntry):  # for the progress bar: the count is the fold's
            if item.task.log not in segments:
                continue
            end = item.position + (item.entry.size if item.entry is not None else 0)
            if end - done >= 1 << 20:
                progress(end - done)
                done = end
        elif isinstance(item, km.SegmentRead):
            res, log = item.result, item.task.log
            found.extend(res.findings)
            if log not in segments:
                continue
            got = res.fold_result
            assert isinstance(got, SegmentStats)  # the fold of every segment of the log
            if got.unreadable:  # the file could not be read: the error it raises, as a reader's own
                ReadOnlyFile(Path(log)).close()
            progress(res.size - done)
            done = 0
            stats.findings.extend(got.undecoded)  # a codec not installed: no damage, but not counted
            own.extend(got.own)
            for unit in got.partial.units.values():
                units[res.partition].merge(unit)
            got.partial.units = {}
            merged.merge(got.partial)
    merged.into(stats, top)  # bytes by time, the largest messages, the damaged ones
    stats.units = list(units.values())
    state_findings(stats, path, "kafka", own, options, found)
    return Path(store.root)
