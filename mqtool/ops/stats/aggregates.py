"""What the stats pass keeps, whatever the layout: per unit (topic/queue or partition) counters
and sketches (:class:`UnitStats`), the store-wide largest messages (:class:`Top`), the bytes
written per minute over the last 24 h of data and per hour over the lifetime (:class:`RecentBytes`,
:class:`LifetimeBytes`: bounded whatever the timestamps), and the result (:class:`StoreStats`) with
its derived views: per topic, the disk forecast, the JSON document (``docs/json.md``).
:func:`state_findings` states a pass's findings as validate states them (Kafka, Jafka, MetaQ).
"""

from __future__ import annotations

import functools
import heapq
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.findings import Finding, Severity
from mqtool.ops.clean import DiskUsage
from mqtool.ops.stats.hyperloglog import HyperLogLog

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MINUTE_MS = 60_000
#: RocketMQ ``diskMaxUsedSpaceRatio`` default: the space rule of CleanCommitLogService.
ROCKETMQ_CLEAN_RATIO = 0.75

#: told the bytes read since it was last told (for a progress bar)
Progress = Callable[[int], object]
#: a tag or key, as text or as the raw bytes (hashed as they are)
TagValue = str | bytes


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
        self.add_texts(tags, keys)

    def add_texts(self, tags: Iterable[TagValue] = (), keys: Iterable[TagValue] = ()) -> None:
        """Count TAGS and KEYS values into the sketches (a value met again changes nothing, so a
        caller may hand each distinct value of many messages once)."""
        for tag in tags:
            if self.tags is None:
                self.tags = HyperLogLog()
            self.tags.add(tag)
        for key in keys:
            if self.keys is None:
                self.keys = HyperLogLog()
            self.keys.add(key)

    def merge(self, other: UnitStats) -> None:
        """Count ``other`` (the same unit, counted from other files) in: what ``add`` would have
        made of both files' messages (``other``'s sketches are taken, not copied)."""
        self.messages += other.messages
        self.bytes += other.bytes
        self.max_size = max(self.max_size, other.max_size)
        self.first_timestamp = _min(self.first_timestamp, other.first_timestamp)
        self.last_timestamp = _max(self.last_timestamp, other.last_timestamp)
        for attr in ("tags", "keys"):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            if theirs is None:
                continue
            if mine is None:
                setattr(self, attr, theirs)
            else:
                mine.merge(theirs)
        self.segment_times.extend(other.segment_times)

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


class Top:
    """The N largest messages seen (a min-heap of N)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.heap: list[tuple[int, int, LargeMessage]] = []
        self.seq = 0

    def wants(self, size: int) -> bool:
        """A message of ``size`` would be kept now (``offer`` would call its ``make``)."""
        return self.n > 0 and (len(self.heap) < self.n or size > self.heap[0][0])

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

    def merge(self, other: Top) -> None:
        """Offer ``other``'s messages (seen after this one's) in the order it met them: the N
        largest of both, ties kept by who came first, as one ``Top`` over both would keep them."""
        for size, _seq, item in sorted(other.heap, key=lambda t: -t[1]):
            self.offer(size, functools.partial(_same, item))


def _same(item: LargeMessage) -> LargeMessage:
    return item


class LifetimeBytes:
    """Bytes written per bucket over the whole span of times seen: hours, widened (doubled) while
    more than ``MAX_BUCKETS`` buckets would be kept, so memory stays flat whatever the timestamps."""

    MAX_BUCKETS = 20_000

    def __init__(self) -> None:
        self.bucket_ms = HOUR_MS
        self.buckets: dict[int, int] = {}

    def add(self, timestamp: int, size: int) -> None:
        key = timestamp // self.bucket_ms
        self.buckets[key] = self.buckets.get(key, 0) + size
        while len(self.buckets) > self.MAX_BUCKETS:  # buckets two apart do not merge: widen again
            self._widen()

    def _widen(self) -> None:
        self.bucket_ms *= 2
        merged: dict[int, int] = {}
        for k, b in self.buckets.items():
            merged[k // 2] = merged.get(k // 2, 0) + b
        self.buckets = merged

    def merge(self, other: LifetimeBytes) -> None:
        """Add ``other``'s bytes: the buckets ``add`` would have made of both (the narrowest
        width that keeps at most ``MAX_BUCKETS`` of them, whatever the order)."""
        theirs = dict(other.buckets)
        width = other.bucket_ms
        while self.bucket_ms < width:
            self._widen()
        while width < self.bucket_ms:
            widened: dict[int, int] = {}
            for k, b in theirs.items():
                widened[k // 2] = widened.get(k // 2, 0) + b
            theirs, width = widened, width * 2
        for k, b in theirs.items():
            self.buckets[k] = self.buckets.get(k, 0) + b
        while len(self.buckets) > self.MAX_BUCKETS:
            self._widen()

    def to_dict(self) -> dict[str, Any]:
        return {"bucket_ms": self.bucket_ms, "buckets": [[k * self.bucket_ms, b] for k, b in sorted(self.buckets.items())]}


class RecentBytes:
    """Bytes per minute for the 24 h before the newest time seen (bounded: at most ~1441 keys),
    and bytes per hour over the whole lifetime (``lifetime``)."""

    def __init__(self) -> None:
        self.minutes: dict[int, int] = {}
        self.newest: int | None = None
        self.oldest: int | None = None
        self.lifetime = LifetimeBytes()

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

    def merge(self, other: RecentBytes) -> None:
        """Add ``other``'s bytes (of other files): the minutes and hours ``add`` would have kept of
        both (a minute ``add`` skips is before the final window, which ``last_day`` drops too)."""
        self.lifetime.merge(other.lifetime)
        self.oldest = _min(self.oldest, other.oldest)
        for minute, size in other.minutes.items():
            self.minutes[minute] = self.minutes.get(minute, 0) + size
        self.newest = _max(self.newest, other.newest)
        if self.newest is not None and len(self.minutes) > 2 * 24 * 60:
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
class StatsPartial:
    """What the stats pass counts of some files of a store (one file, or several merged): its
    units by (topic, queue), the bytes by time, the largest messages and how many of its messages
    are damaged.  A fold of one file's records makes one (per file, in a worker process too);
    ``merge`` in file order makes the store's, equal to one pass over all of them."""

    top_n: int = 10
    units: dict[tuple[str | None, int | None], UnitStats] = field(default_factory=dict)
    recent: RecentBytes = field(default_factory=RecentBytes)
    top: Top = field(init=False)
    damaged_messages: int = 0

    def __post_init__(self) -> None:
        self.top = Top(self.top_n)

    def merge(self, other: StatsPartial) -> None:
        """Count ``other`` (the files after this one's) in."""
        for key, unit in other.units.items():
            mine = self.units.get(key)
            if mine is None:
                self.units[key] = unit
            else:
                mine.merge(unit)
        self.recent.merge(other.recent)
        self.top.merge(other.top)
        self.damaged_messages += other.damaged_messages

    def into(self, stats: StoreStats, top: Top) -> None:
        """Hand the counts to the pass's result: units in key order, bytes by time, largest, damaged."""
        stats.units = [self.units[k] for k in sorted(self.units, key=lambda k: (k[0] or "", k[1] if k[1] is not None else -1))]
        stats.recent = self.recent
        stats.damaged_messages += self.damaged_messages
        top.merge(self.top)


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
    recent: RecentBytes = field(default_factory=RecentBytes)
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


def state_findings(stats: StoreStats, path: Path, layout: str, own: list[tuple[str, int | None, str]], options: StatsOptions, found: list[Finding] | None = None) -> None:
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
