"""stats: per topic/queue (or partition) numbers of a store, in one streaming pass.

Every record is read once, in file order, in bounded chunks; what is kept per queue is a few
counters, the largest size, and two HyperLogLog sketches (TAGS and KEYS), so memory depends on
the number of queues, not on the number of messages:

* ``messages``, ``bytes`` (bytes of the records on disk), first/last store time (the smallest
  and largest timestamp met), write rate over that retained window, the largest message;
* distinct TAGS and KEYS estimated with HyperLogLog (Flajolet, Fusy, Gandouet, Meunier 2007;
  64-bit BLAKE2b hashes, 2**12 registers = 4 KiB per sketch, relative standard error
  1.04/sqrt(4096) = 1.6 %; up to 256 distinct values the hashes themselves are kept (2 KiB at
  most), as in HyperLogLog++'s sparse mode, so small counts are exact);
* the store-wide top-N largest messages (a bounded heap);
* disk usage: the store's files (apparent and allocated bytes) and the file system's, with a
  forecast: at the write rate of the last 24 h of data (the 24 h before the newest record, per
  minute), how long until the disk reaches the clean threshold -- RocketMQ's
  ``diskMaxUsedSpaceRatio`` 75 % (used ratio computed as the broker does), 100 % (full) for the
  other layouts, or ``threshold``.

What a layout offers: RocketMQ -- every CommitLog record by topic and queue id (transactional
PREPARED/ROLLBACK records included, as in the CommitLog); TAGS and KEYS properties; store
timestamps.  Kafka -- records by partition (control records not counted as messages; ``bytes``
are the batches' bytes); record keys; record timestamps (CreateTime or LogAppendTime).  Jafka
and MetaQ -- messages by partition (compressed Jafka wrappers opened); MetaQ attributes count as
tags; their messages carry no time, so times and rates come from segment modification times
(each segment's bytes dated at its mtime).
"""

from __future__ import annotations

import functools
import heapq
import math
import os
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.errors import MqError
from mqtool.findings import Finding, Severity
from mqtool.formats.checksums import hash64
from mqtool.ops.clean import DiskProbe, DiskUsage, statvfs_usage
from mqtool.store.files import ReadOnlyFile

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MINUTE_MS = 60_000
#: RocketMQ ``diskMaxUsedSpaceRatio`` default: the space rule of CleanCommitLogService.
ROCKETMQ_CLEAN_RATIO = 0.75

#: told the bytes read since it was last told (for a progress bar)
Progress = Callable[[int], object]
#: a tag or key, as text or as the raw bytes (hashed as they are)
TagValue = str | bytes


class HyperLogLog:
    """A HyperLogLog sketch with ``2**p`` one-byte registers (64-bit hashes: no large-range
    correction needed).  Like HyperLogLog++'s sparse mode, the first ``EXACT_LIMIT`` distinct
    hashes are kept as they are, so small cardinalities (typical for tags) are exact and a
    sketch costs a few hundred bytes until it needs its registers."""

    EXACT_LIMIT = 256

    def __init__(self, p: int = 12) -> None:
        if not 4 <= p <= 16:
            raise ValueError("p must be in 4..16")
        self.p = p
        self.m = 1 << p
        self.exact: array[int] | None = array("Q")  # distinct hashes, until EXACT_LIMIT of them
        self.registers: bytearray | None = None

    @property
    def relative_error(self) -> float:
        return 1.04 / math.sqrt(self.m)

    @staticmethod
    def hash(value: str | bytes) -> int:
        data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
        return hash64(data)

    def add(self, value: str | bytes) -> None:
        h = self.hash(value)
        if self.exact is not None:
            if h not in self.exact:
                self.exact.append(h)
                if len(self.exact) > self.EXACT_LIMIT:
                    self._to_registers()
            return
        self._put(h)

    def _put(self, h: int) -> None:
        assert self.registers is not None
        index = h >> (64 - self.p)
        rest = h & ((1 << (64 - self.p)) - 1)
        rank = (64 - self.p) - rest.bit_length() + 1
        if rank > self.registers[index]:
            self.registers[index] = rank

    def _to_registers(self) -> None:
        hashes, self.exact = self.exact if self.exact is not None else array("Q"), None
        self.registers = bytearray(self.m)
        for h in hashes:
            self._put(h)

    def merge(self, other: HyperLogLog) -> None:
        if other.p != self.p:
            raise ValueError("sketches of different precision")
        if self.exact is not None and other.exact is not None:
            for h in other.exact:
                if h not in self.exact:
                    self.exact.append(h)
            if len(self.exact) > self.EXACT_LIMIT:
                self._to_registers()
            return
        if self.exact is not None:
            self._to_registers()
        assert self.registers is not None
        if other.exact is not None:
            for h in other.exact:
                self._put(h)
        else:
            assert other.registers is not None
            self.registers = bytearray(max(a, b) for a, b in zip(self.registers, other.registers))

    def estimate(self) -> int:
        if self.exact is not None:
            return len(self.exact)
        assert self.registers is not None
        m = self.m
        alpha = 0.7213 / (1 + 1.079 / m) if m >= 128 else {16: 0.673, 32: 0.697, 64: 0.709}[m]
        zeros = self.registers.count(0)
        raw = alpha * m * m / sum(2.0**-r for r in self.registers)
        if raw <= 2.5 * m and zeros:
            return round(m * math.log(m / zeros))
        return round(raw)


@dataclass
class UnitStats:
    """One topic/queue (RocketMQ) or partition (Kafka, Jafka, MetaQ)."""

    topic: str | None
    queue: int | None
    name: str
    messages: int = 0
    bytes: int = 0
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    max_size: int = 0
    tags: HyperLogLog | None = None
    keys: HyperLogLog | None = None
    #: for layouts without message times: (bytes, mtime ms) per segment
    segment_times: list[tuple[int, int]] = field(default_factory=list)

    def add(self, size: int, timestamp: int | None, tags: Iterable[TagValue] = (), keys: Iterable[TagValue] = ()) -> None:
        self.messages += 1
        if size > self.max_size:
            self.max_size = size
        if timestamp is not None and timestamp >= 0:
            if self.first_timestamp is None or timestamp < self.first_timestamp:
                self.first_timestamp = timestamp
            if self.last_timestamp is None or timestamp > self.last_timestamp:
                self.last_timestamp = timestamp
        for tag in tags:
            if self.tags is None:
                self.tags = HyperLogLog()
            self.tags.add(tag)
        for key in keys:
            if self.keys is None:
                self.keys = HyperLogLog()
            self.keys.add(key)

    def rate(self) -> tuple[float | None, float | None]:
        """(messages/s, bytes/s) over the retained window."""
        if self.segment_times:
            return _segment_rate(self.segment_times, self.messages, self.bytes)
        if self.first_timestamp is None or self.last_timestamp is None or self.last_timestamp <= self.first_timestamp:
            return None, None
        seconds = (self.last_timestamp - self.first_timestamp) / 1000
        return self.messages / seconds, self.bytes / seconds


def _segment_rate(times: list[tuple[int, int]], messages: int, total: int) -> tuple[float | None, float | None]:
    """Rate from segment mtimes: the bytes written after the first segment was last written,
    over the time between the first and the last segment's last writes."""
    if len(times) < 2:
        return None, None
    ordered = sorted(times, key=lambda t: t[1])
    span = (ordered[-1][1] - ordered[0][1]) / 1000
    if span <= 0:
        return None, None
    after_first = total - ordered[0][0]
    share = after_first / total if total else 0
    return messages * share / span, after_first / span


@dataclass(frozen=True)
class LargeMessage:
    size: int
    unit: str
    topic: str | None
    queue: int | None
    offset: int
    timestamp: int | None


class _Top:
    """The N largest messages seen (a min-heap of N)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.heap: list[tuple[int, int, LargeMessage]] = []
        self.seq = 0

    def offer(self, size: int, make: Callable[[], LargeMessage]) -> None:
        """Keep the message ``make()`` builds if ``size`` is among the N largest; ``make`` is called
        at most once, before ``offer`` returns (a ``functools.partial`` of ``LargeMessage``: the
        message is built only for the sizes kept)."""
        if self.n <= 0:
            return
        if len(self.heap) < self.n:
            self.seq += 1
            heapq.heappush(self.heap, (size, -self.seq, make()))
        elif size > self.heap[0][0]:
            self.seq += 1
            heapq.heapreplace(self.heap, (size, -self.seq, make()))

    def items(self) -> list[LargeMessage]:
        return [item for _, _, item in sorted(self.heap, key=lambda t: (-t[0], -t[1]))]


class _LifetimeBytes:
    """Bytes written per bucket over the whole span of times seen: hours, widened (doubled) while
    more than ``MAX_BUCKETS`` buckets would be kept, so memory stays flat whatever the timestamps."""

    MAX_BUCKETS = 20_000

    def __init__(self) -> None:
        self.bucket_ms = HOUR_MS
        self.buckets: dict[int, int] = {}

    def add(self, timestamp: int, size: int) -> None:
        key = timestamp // self.bucket_ms
        self.buckets[key] = self.buckets.get(key, 0) + size
        if len(self.buckets) > self.MAX_BUCKETS:
            self.bucket_ms *= 2
            merged: dict[int, int] = {}
            for k, b in self.buckets.items():
                merged[k // 2] = merged.get(k // 2, 0) + b
            self.buckets = merged

    def to_dict(self) -> dict[str, Any]:
        return {"bucket_ms": self.bucket_ms, "buckets": [[k * self.bucket_ms, b] for k, b in sorted(self.buckets.items())]}


class _RecentBytes:
    """Bytes per minute for the 24 h before the newest time seen (bounded: at most ~1441 keys),
    and bytes per hour over the whole lifetime (``lifetime``)."""

    def __init__(self) -> None:
        self.minutes: dict[int, int] = {}
        self.newest: int | None = None
        self.oldest: int | None = None
        self.lifetime = _LifetimeBytes()

    def add(self, timestamp: int, size: int) -> None:
        self.lifetime.add(timestamp, size)
        if self.oldest is None or timestamp < self.oldest:
            self.oldest = timestamp
        minute = timestamp // MINUTE_MS
        if self.newest is not None and minute < self.newest // MINUTE_MS - 24 * 60:
            return
        self.minutes[minute] = self.minutes.get(minute, 0) + size
        if self.newest is None or timestamp > self.newest:
            self.newest = timestamp
            if len(self.minutes) > 2 * 24 * 60:
                self._prune()

    def _prune(self) -> None:
        assert self.newest is not None
        floor = self.newest // MINUTE_MS - 24 * 60
        self.minutes = {m: b for m, b in self.minutes.items() if m >= floor}

    def last_day(self) -> tuple[int, float]:
        """(bytes in the 24 h before the newest time, the hours that window covers)."""
        if self.newest is None:
            return 0, 0.0
        self._prune()
        floor = self.newest // MINUTE_MS - 24 * 60
        total = sum(b for m, b in self.minutes.items() if m > floor)
        assert self.oldest is not None
        span_ms = min(DAY_MS, self.newest - self.oldest)
        return total, span_ms / HOUR_MS


@dataclass
class StatsOptions:
    top: int = 10
    threshold: float | None = None  # the disk used ratio to forecast; None: the layout's
    check_crc: bool = True


@dataclass
class StoreStats:
    layout: str
    root: str
    units: list[UnitStats] = field(default_factory=list)
    largest: list[LargeMessage] = field(default_factory=list)
    recent: _RecentBytes = field(default_factory=_RecentBytes)
    store_bytes: int = 0
    store_allocated_bytes: int = 0
    disk: DiskUsage | None = None
    threshold: float = 1.0
    threshold_name: str = "(a full disk)"
    problems: list[str] = field(default_factory=list)
    time_source: str = "store timestamps"
    #: RocketMQ: every gap and damage the pass met, as validate states them (errors are in
    #: ``problems`` too, as ``CODE path:position: message``)
    findings: list[Finding] = field(default_factory=list)
    #: RocketMQ: messages counted although validate states a finding about their bytes (a frame
    #: that holds around a body CRC mismatch, a wrong PHYSICALOFFSET, dropped properties: the
    #: walk keeps them, as the broker serves them); they are among ``messages`` too
    damaged_messages: int = 0
    #: RocketMQ 5.x: the timer messages not delivered yet, by due time (``store.model.timer.TimerPending``)
    timer: dict[str, object] | None = None

    # --- derived -----------------------------------------------------------------------------
    def topics(self) -> list[dict[str, Any]]:
        out: dict[str | None, dict[str, Any]] = {}
        for u in self.units:
            t = out.setdefault(
                u.topic,
                {
                    "topic": u.topic,
                    "queues": 0,
                    "messages": 0,
                    "bytes": 0,
                    "first_timestamp": None,
                    "last_timestamp": None,
                    "max_message_size": 0,
                    "_tags": None,
                    "_keys": None,
                },
            )
            t["queues"] += 1
            t["messages"] += u.messages
            t["bytes"] += u.bytes
            t["max_message_size"] = max(t["max_message_size"], u.max_size)
            t["first_timestamp"] = _min(t["first_timestamp"], u.first_timestamp)
            t["last_timestamp"] = _max(t["last_timestamp"], u.last_timestamp)
            for attr, key in (("tags", "_tags"), ("keys", "_keys")):
                sketch = getattr(u, attr)
                if sketch is not None:
                    if t[key] is None:
                        t[key] = HyperLogLog(sketch.p)
                    t[key].merge(sketch)
        rows = []
        for t in out.values():
            t["tags_estimate"] = t.pop("_tags").estimate() if t["_tags"] is not None else 0
            t["keys_estimate"] = t.pop("_keys").estimate() if t["_keys"] is not None else 0
            t.pop("_tags", None)
            t.pop("_keys", None)
            rows.append(t)
        return rows

    def forecast(self) -> dict[str, Any]:
        day_bytes, hours = self.recent.last_day()
        rate = day_bytes / hours if hours > 0 else None
        doc: dict[str, Any] = {
            "store_bytes": self.store_bytes,
            "store_allocated_bytes": self.store_allocated_bytes,
            "filesystem_total": None,
            "filesystem_available": None,
            "used_ratio": None,
            "threshold": self.threshold,
            "threshold_name": self.threshold_name,
            "last_24h_bytes": day_bytes,
            "last_24h_window_hours": round(hours, 3),
            "write_rate_bytes_per_hour": round(rate, 1) if rate is not None else None,
            "bytes_to_threshold": None,
            "hours_to_threshold": None,
            "forecast": None,
        }
        if self.disk is None:
            return doc
        d = self.disk
        used = d.total - d.free
        capacity = used + d.available
        doc.update(filesystem_total=d.total, filesystem_available=d.available, used_ratio=round(d.used_ratio, 4))
        to_go = int(self.threshold * capacity - used)
        doc["bytes_to_threshold"] = to_go
        pct = f"{self.threshold:.0%} {self.threshold_name}"
        if self.threshold_name.startswith("RocketMQ") or self.threshold_name == "threshold":
            pct = "the " + pct
        if to_go <= 0:
            doc["hours_to_threshold"] = 0.0
            doc["forecast"] = f"the disk is already at or above {pct} ({d.used_ratio:.0%} used)"
        elif not rate:
            doc["forecast"] = f"no writes in the last 24 h of data: the disk stays below {pct}"
        else:
            hours_left = to_go / rate
            doc["hours_to_threshold"] = round(hours_left, 2)
            window = "the last 24 h write rate" if hours >= 23.99 else f"the write rate of the data's {_span_text(hours)}"
            doc["forecast"] = f"at {window}, disk reaches {pct} in {_hours_text(hours_left)}"
        return doc

    def to_dict(self) -> dict[str, Any]:
        units = []
        total_messages = total_bytes = 0
        first = last = None
        queue_key = "queue_id" if self.layout == "rocketmq" else "partition"
        for u in self.units:
            mps, bps = u.rate()
            total_messages += u.messages
            total_bytes += u.bytes
            first = _min(first, u.first_timestamp)
            last = _max(last, u.last_timestamp)
            units.append(
                {
                    "name": u.name,
                    "topic": u.topic,
                    queue_key: u.queue,
                    "messages": u.messages,
                    "bytes": u.bytes,
                    "first_timestamp": u.first_timestamp,
                    "last_timestamp": u.last_timestamp,
                    "messages_per_s": round(mps, 3) if mps is not None else None,
                    "bytes_per_s": round(bps, 1) if bps is not None else None,
                    "max_message_size": u.max_size,
                    "tags_estimate": u.tags.estimate() if u.tags is not None else 0,
                    "keys_estimate": u.keys.estimate() if u.keys is not None else 0,
                }
            )
        span = (last - first) / 1000 if first is not None and last is not None and last > first else None
        return {
            "layout": self.layout,
            "root": self.root,
            "time_source": self.time_source,
            "totals": {
                "queues": len(self.units),
                "messages": total_messages,
                "damaged_messages": self.damaged_messages,
                "bytes": total_bytes,
                "first_timestamp": first,
                "last_timestamp": last,
                "messages_per_s": round(total_messages / span, 3) if span else None,
                "bytes_per_s": round(total_bytes / span, 1) if span else None,
            },
            "cardinality": {
                "estimator": "HyperLogLog",
                "registers": HyperLogLog().m,
                "relative_standard_error": round(HyperLogLog().relative_error, 4),
                "exact_up_to": HyperLogLog.EXACT_LIMIT,
            },
            "units": units,
            "topics": self.topics(),
            "largest": [{"size": m.size, "name": m.unit, "topic": m.topic, queue_key: m.queue, "offset": m.offset, "timestamp": m.timestamp} for m in self.largest],
            "bytes_written": self.recent.lifetime.to_dict(),
            "disk": self.forecast(),
            "problems": list(self.problems),
            "findings": [f.to_dict() for f in self.findings],
            **({"timer": self.timer} if self.timer is not None else {}),
        }


def _hours_text(hours: float) -> str:
    if hours < 48:
        return f"{hours:,.1f} h"
    if hours < 24 * 365 * 2:
        return f"{hours:,.0f} h ({hours / 24:,.0f} days)"
    years = hours / (24 * 365)
    return f"{years:,.0f} years" if years < 1000 else "more than a thousand years"


def _span_text(hours: float) -> str:
    seconds = hours * 3600
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{hours:.1f} h"


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


# --- per layout -------------------------------------------------------------------------------------


def _rocketmq(path: Path, stats: StoreStats, top: _Top, options: StatsOptions, progress: Progress) -> Path:
    """Every record of every CommitLog file; the gaps and damage met are stated as validate states
    them (``store.model.rocketmq``): a broken frame ends its file's walk, as upstream
    ``CommitLog.recoverNormally`` stops there, and a missing file's records are not counted; a
    record whose frame holds but whose bytes are damaged (a body CRC mismatch) is counted, and
    counted apart in ``damaged_messages`` (``CommitLogFileWalk(keep_damaged=True)``); a record
    that breaks its queue's QUEUEOFFSET sequence is named by ``store.model.queue_offsets``."""
    from mqtool.findings import finding_text
    from mqtool.ops.dump.rocketmq import walk_findings
    from mqtool.store import rocketmq as rmq
    from mqtool.store.model import rocketmq as model
    from mqtool.store.model import timer as model_timer
    from mqtool.store.model.queue_offsets import FileQueueOffsets, QueueOffsets
    from mqtool.store.root_rocketmq import find_rocketmq_root

    root = find_rocketmq_root(path) or path
    store = rmq.open_store(root)
    units: dict[tuple[str, int], UnitStats] = {}
    last_index = model.last_data_file(store.commitlog)
    met = model.segment_findings_on_path(model.commitlog_findings(store), [s.path for s in store.commitlog])
    joined = QueueOffsets()
    for i, seg in enumerate(store.commitlog):
        if seg.size == 0:
            continue
        offsets = FileQueueOffsets(str(seg.path)) if i <= last_index else None  # the files after it are pre-allocated
        with ReadOnlyFile(seg.path) as f:
            walk = rmq.CommitLogFileWalk(f, check_crc=options.check_crc, last=i == last_index, file_size=store.commitlog_file_size, base=seg.base, keep_damaged=True)
            done = 0
            for pos, record in walk:
                if offsets is not None:
                    offsets.record(pos, record)
                if walk.finding_code(pos) is not None:
                    stats.damaged_messages += 1
                key = (record.topic, record.queue_id)
                unit = units.get(key)
                if unit is None:
                    unit = units[key] = UnitStats(record.topic, record.queue_id, f"{record.topic}/{record.queue_id}")
                size = record.total_size
                unit.bytes += size
                tags = (record.tags,) if record.tags else ()
                unit.add(size, record.store_timestamp, tags, record.keys)
                stats.recent.add(record.store_timestamp, size)
                top.offer(
                    size,
                    functools.partial(LargeMessage, size, unit.name, record.topic, record.queue_id, seg.base + pos, record.store_timestamp),
                )
                end = pos + size
                if end - done >= 1 << 20:
                    progress(end - done)
                    done = end
            progress(f.size - done)
            met.extend(walk_findings(f, walk, store.commitlog_file_size, last=i == last_index, after_last=i > last_index))
            if offsets is not None:
                offsets.walk_end(walk, store.commitlog_file_size)
                met.extend(offsets.findings)
                met.extend(joined.add_file(offsets, seg.base, store.commitlog_file_size))
    pending = model_timer.timer_pending(root)  # the 5.x timer store, when there is one
    if pending is not None:
        stats.timer = pending.to_dict()
        met.extend(pending.findings)
    stats.findings.extend(met)
    stats.problems.extend(finding_text(x) for x in met if x.level is Severity.error)
    stats.units = [units[k] for k in sorted(units)]
    stats.threshold, stats.threshold_name = ROCKETMQ_CLEAN_RATIO, "RocketMQ clean threshold (diskMaxUsedSpaceRatio)"
    return root


def _kafka(path: Path, stats: StoreStats, top: _Top, options: StatsOptions, progress: Progress) -> Path:
    """Every record of every ``.log`` segment, from the store model's one reading
    (``store.model.kafka.read_store_entries``: each log byte read once); the records of a batch
    whose frame holds but whose CRC fails are counted, and counted apart in ``damaged_messages``
    (kafka-dump-log lists them too); a broken entry ends its segment's count, as a walk that stops
    there does.  The gaps and damage the reading finds are stated as validate states them."""
    from mqtool.errors import UnsupportedFormatError
    from mqtool.ops import log_findings
    from mqtool.store import kafka as kstore
    from mqtool.store.model import kafka as km

    store = kstore.open_kafka(path)
    stats.time_source = "record timestamps"
    own: list[tuple[str, int | None, str]] = []  # the walk's own problems: (path, position, text)
    found: list[Finding] = []
    units = {str(part.path): UnitStats(part.topic, part.partition, part.name) for part in store.partitions}
    segments = {str(seg.log): (part, seg is part.log_segments()[-1]) for part in store.partitions for seg in part.log_segments()}
    stopped: set[str] = set()
    undecoded: list[Finding] = []
    done = 0
    for item in km.read_store_entries(store, km.EntryDecode("full", options.check_crc), checks=log_findings.LOG):
        if isinstance(item, km.Placed):
            found.append(item.finding)
            continue
        if isinstance(item, km.PartitionRead):
            continue
        log = item.task.log
        if isinstance(item, km.SegmentRead):
            found.extend(item.result.findings)
            if log not in segments:
                continue
            if item.first_walk is None:  # the file could not be read: the error it raises, as a reader's own
                ReadOnlyFile(Path(log)).close()
            progress(item.result.size - done)
            done = 0
            stats.findings.extend(undecoded)  # a codec not installed: no damage, but not counted
            undecoded = []
            walk = item.first_walk
            if walk is not None and walk.error is None and not segments[log][1] and walk.end is not None:
                data_end = walk.end
                size = item.result.size
                if data_end.kind in ("partial", "zeros") and data_end.position < size:
                    # only the active segment can end in a torn write or pre-allocated zeros
                    what = "a cut entry" if data_end.kind == "partial" else "zero bytes"
                    own.append(
                        (
                            log,
                            data_end.position,
                            f"{log}:{data_end.position}: expected the segment to end after its last entry (a segment before the last is complete), "
                            f"found {what} ({size - data_end.position} bytes; recovery truncates here and deletes every later segment)",
                        )
                    )
            continue
        if log not in segments or item.resumed or log in stopped:
            continue
        part, _last = segments[log]
        entry, error = item.entry, item.error
        if entry is None:  # a broken entry: the count of this segment stops here
            stopped.add(log)
            if error is not None:
                own.append((str(error.path), error.position, str(error)))
            continue
        unit = units[str(part.path)]
        unit.bytes += entry.size
        share = entry.size
        damaged = error is not None and not isinstance(error, UnsupportedFormatError)  # kept despite its CRC
        if isinstance(error, UnsupportedFormatError):
            undecoded.append(Finding(kstore.entry_error_code(error), log, item.position, f"records not counted: {error.reason}"))
        for rec in entry.records or ():
            if rec.is_control:
                continue
            if damaged:
                stats.damaged_messages += 1
            size = len(rec.key or b"") + len(rec.value or b"") + sum(len(h.key) + len(h.value or b"") for h in rec.headers)
            keys = (rec.key,) if rec.key is not None else ()
            unit.add(size, rec.timestamp, (), keys)
            if rec.timestamp is not None and rec.timestamp >= 0:
                stats.recent.add(rec.timestamp, share)
                share = 0
            top.offer(
                size,
                functools.partial(LargeMessage, size, unit.name, part.topic, part.partition, rec.offset, rec.timestamp),
            )
        end = item.position + entry.size
        if end - done >= 1 << 20:
            progress(end - done)
            done = end
    stats.units.extend(units.values())
    _state_findings(stats, path, "kafka", own, options, found)
    return Path(store.root)


def _state_findings(
    stats: StoreStats, path: Path, layout: str, own: list[tuple[str, int | None, str]], options: StatsOptions, found: list[Finding] | None = None
) -> None:
    """Kafka, Jafka, MetaQ: every gap and damage of the pass as validate states it (its code and
    position: ``ops.log_findings``), errors also in ``problems`` as ``CODE path:position:
    message``, after the walk's own problems.  With
    ``--no-crc`` (no checksum read) only the walk's own problems.  ``found``: the findings of a
    reading the pass consumed itself (Jafka, MetaQ), chosen as ``on_path`` chooses them."""
    from mqtool.findings import finding_text
    from mqtool.ops import log_findings

    met: list[Finding]
    if not options.check_crc:
        met = []
    else:
        met = log_findings.on_path(path, layout) if found is None else log_findings.select(found)
    stats.findings.extend(met)
    # a problem of the walk's own at the file and position of a finding is that finding: stated once
    stated = {(os.path.abspath(f.path), f.position) for f in met if f.path is not None and f.position is not None}
    stats.problems.extend(text for where, position, text in own if (os.path.abspath(where), position) not in stated)
    stats.problems.extend(finding_text(f) for f in met if f.level is Severity.error)


def _legacy(path: Path, stats: StoreStats, top: _Top, options: StatsOptions, progress: Progress, layout: str) -> Path:
    """Every message of every live segment, from the store model's one reading
    (``store.model.legacy.read_store``: each log byte read once); a message whose frame holds but
    whose checksum fails is counted, and counted apart in ``damaged_messages``; the gaps and
    damage the reading finds are stated as validate states them (``ops.log_findings.select``)."""
    from mqtool.formats import jafka as jf
    from mqtool.formats import metaq as mq
    from mqtool.store import jafka as sj
    from mqtool.store import metaq as sm
    from mqtool.store.model import legacy as lm

    if layout == "jafka":
        data = sj.open_jafka(path)
        snappy = jf.CODEC_SNAPPY in sj.dialect_of(data).codecs
    else:
        data = sm.open_metaq(path)
        snappy = False
    stats.time_source = "segment modification times (the messages carry no time)"
    own: list[tuple[str, int | None, str]] = []  # the rows' own problems: (path, position, text)
    found: list[Finding] = []
    reading = lm.plan_reading(data, layout)
    found.extend(reading.files)
    units: dict[int, UnitStats] = {}
    for task, part in reading.tasks:
        if task.archive is not None:
            continue  # live segments only
        unit = units.get(id(part))
        if unit is None:
            unit = units[id(part)] = UnitStats(part.topic, part.partition, part.name)
        seg_path = Path(task.path)
        mtime_ms = int(os.stat(seg_path).st_mtime * 1000)
        seg_bytes = 0
        scan = lm.SegmentScan(task)
        for scanned in scan:
            pos, message, damaged = scanned.position, scanned.message, scanned.code is not None
            offset = task.start_offset + pos
            if layout == "jafka":
                assert isinstance(message, jf.Message)  # the scan of a Jafka segment
                size_on_disk = message.serialized_size
                unit.bytes += size_on_disk
                seg_bytes += size_on_disk
                if message.compressed:
                    try:
                        inner_messages = [m.message for m in jf.iter_wrapper(message, snappy=snappy) if not m.message.compressed]
                    except MqError as exc:
                        if not damaged:
                            located = exc.at(seg_path, pos)
                            own.append((str(located.path), located.position, str(located)))
                        inner_messages = []  # a wrapper that does not inflate: its finding says so
                else:
                    inner_messages = [message]
                for inner in inner_messages:
                    if damaged:
                        stats.damaged_messages += 1
                    size = len(inner.payload)
                    unit.add(size, None)
                    top.offer(size, functools.partial(LargeMessage, size, unit.name, part.topic, part.partition, offset, None))
            else:
                if damaged:
                    stats.damaged_messages += 1
                assert isinstance(message, mq.Message)  # the scan of a MetaQ segment
                unit.bytes += message.size
                seg_bytes += message.size
                # a malformed attribute block leaves the whole data as payload (its METAQ-ATTRIBUTE finding says so)
                raw_attribute, payload, _ = sm.split_message(message)
                size = len(payload)
                attribute = None if raw_attribute is None else raw_attribute.decode("utf-8", "replace")
                unit.add(size, None, (attribute,) if attribute is not None else ())
                top.offer(size, functools.partial(LargeMessage, size, unit.name, part.topic, part.partition, offset, None))
        found.extend(scan.result.findings)
        if scan.reader_error is not None:
            located = scan.reader_error
            own.append((str(located.path or seg_path), located.position, str(located)))
        progress(scan.result.size)
        unit.segment_times.append((seg_bytes, mtime_ms))
        stats.recent.add(mtime_ms, seg_bytes)
    found.extend(reading.closing)
    for part in data.partitions:
        unit = units.get(id(part)) or UnitStats(part.topic, part.partition, part.name)
        if unit.segment_times:
            times = [t for _, t in unit.segment_times]
            unit.first_timestamp, unit.last_timestamp = min(times), max(times)
        stats.units.append(unit)
    _state_findings(stats, path, layout, own, options, found)
    return Path(data.root)


def tree_usage(root: Path) -> tuple[int, int]:
    """(apparent bytes, allocated bytes) of the regular files under ``root`` (symlinks not followed)."""
    apparent = allocated = 0
    if root.is_file():
        st = root.stat()
        return st.st_size, st.st_blocks * 512
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(dirpath, name)):
                apparent += st.st_size
                allocated += st.st_blocks * 512
    return apparent, allocated


def store_stats(
    path: str | Path,
    layout: str,
    options: StatsOptions | None = None,
    *,
    probe: DiskProbe = statvfs_usage,
    progress: Progress | None = None,
) -> StoreStats:
    """Stats of the store at ``path`` (``layout`` from ``store.layout.detect_layout``)."""
    path = Path(path)
    if options is None:
        options = StatsOptions()
    report: Progress = progress or (lambda n: None)
    stats = StoreStats(layout, str(path))
    top = _Top(options.top)
    if layout == "rocketmq":
        root = _rocketmq(path, stats, top, options, report)
    elif layout == "kafka":
        root = _kafka(path, stats, top, options, report)
    elif layout in ("jafka", "metaq"):
        root = _legacy(path, stats, top, options, report, layout)
    else:
        from mqtool.errors import UnsupportedFormatError

        raise UnsupportedFormatError(f"`mqtool stats` does not handle the {layout} layout", expected="rocketmq, kafka, jafka or metaq", found=layout)
    stats.root = str(root)
    stats.largest = top.items()
    stats.store_bytes, stats.store_allocated_bytes = tree_usage(root)
    if options.threshold is not None:
        stats.threshold, stats.threshold_name = options.threshold, "threshold"
    try:
        stats.disk = probe(root if root.is_dir() else root.parent)
    except OSError as exc:
        stats.problems.append(f"{root}: disk usage unavailable: {exc.strerror or exc}")
    return stats


def input_size(path: str | Path, layout: str) -> int:
    """Bytes the stats pass will read (for a progress bar)."""
    root = Path(path)
    if layout == "rocketmq":
        from mqtool.store import rocketmq as rmq
        from mqtool.store.root_rocketmq import find_rocketmq_root

        found = find_rocketmq_root(root)
        return sum(s.size for s in rmq.open_store(found).commitlog) if found else 0
    return tree_usage(root)[0]
