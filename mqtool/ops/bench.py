"""bench flush: the brokers' flush policies measured on this disk, through the shared writer.

Every mode writes a real RocketMQ store with ``store.writer.StoreWriter`` (the same record bytes
for every mode, so only the flush policy differs) and reproduces one broker's flush policy:

==========================  ==============================================================
mode                        policy (upstream setting)
==========================  ==============================================================
``rocketmq-sync``           SYNC_FLUSH, GroupCommitService: the producer waits until a
                            flush covers its record; the service wakes on a request or
                            every 10 ms and one flush serves every waiting producer;
                            ``syncFlushTimeout`` (5000 ms) ends a wait (FLUSH_DISK_TIMEOUT)
``rocketmq-async``          ASYNC_FLUSH, FlushRealTimeService, ``flushCommitLogTimed=true``:
                            sleep ``flushIntervalCommitLog`` (500 ms), flush when at least
                            ``flushCommitLogLeastPages`` (4) pages wait, everything every
                            ``flushCommitLogThoroughInterval`` (10 s)
``rocketmq-async-wakeup``   the same with ``flushCommitLogTimed=false``: a wake-able wait
                            that every put interrupts
``rocketmq-transient``      ``transientStorePoolEnable``: records go to a write buffer,
                            CommitRealTimeService commits them to the file (200 ms, 4 pages,
                            all after 200 ms), then the async flush service syncs
``metaq-group-commit``      MetaQ ``unflushThreshold=0``: a writer thread appends queued
                            requests and fsyncs when the queue is momentarily empty or more
                            than ``maxTransferSize`` (clamped to 512 KiB) is unflushed; acks
                            follow the fsync
``metaq-threshold``         MetaQ ``unflushThreshold`` (1000) / ``unflushInterval`` (10 s):
                            fsync after an append when more than the threshold is unflushed
                            or the interval has passed, plus a flush runner every interval
``jafka-count``             Jafka ``log.flush.interval`` (500 messages) and its flusher
                            (``log.default.flush.scheduler.interval.ms`` 3000)
``jafka-interval``          Jafka's sample config: flush every second, no count
``kafka-count``             Kafka ``log.flush.interval.messages`` (10000, server.properties)
``kafka-interval``          Kafka ``log.flush.interval.ms`` (1000) with the flusher every 1 s
``none``                    page cache only: nothing is synced while producing
==========================  ==============================================================

A policy is an object driven by an injectable ``Clock`` and ``FsyncCounter``: producers call
``submit`` (append, or queue for a writer thread) then ``wait`` (until acknowledged); background
services expose one loop body each (``Service.step``), which the runner calls from a thread after
a timed sleep or a wake-able wait, and tests call directly, so every policy is checked without
timing.  The ``DurabilityWindow`` follows what was acknowledged but not yet flushed: the largest
number of bytes and messages at any ack, and the longest time an acknowledged message waited for
its flush (or for the end of the run, when nothing flushed it).
"""

from __future__ import annotations

import math
import os
import queue
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mqtool.errors import StoreLayoutError
from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.store.writer import CommitLogSync, StoreWriter, WriterConfig

BENCH_TOPIC = "BenchTopic"
#: MetaQ clamps the group-commit batch to 512 KiB (``ONE_M_BYTES = 512 * 1024``).
METAQ_MAX_BATCH = 512 * 1024
#: Java's ``Integer.MAX_VALUE``: a count threshold that never triggers.
INT_MAX = 2**31 - 1


# --- clock and fsync counter ------------------------------------------------------------------


class Clock(Protocol):
    def monotonic_ns(self) -> int: ...

    def time_ms(self) -> int: ...


class SystemClock:
    """The real clocks: monotonic for intervals and latencies, wall time for store timestamps."""

    def monotonic_ns(self) -> int:
        return time.monotonic_ns()

    def time_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told (``advance``): policies become deterministic."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._ns = 0
        self._start_ms = start_ms

    def advance(self, ms: float) -> None:
        self._ns += int(ms * 1_000_000)

    def monotonic_ns(self) -> int:
        return self._ns

    def time_ms(self) -> int:
        return self._start_ms + self._ns // 1_000_000


class FsyncCounter:
    """Runs, counts and times CommitLog syncs.  ``sync`` replaces the real one in tests."""

    def __init__(self, clock: Clock, sync: Callable[[CommitLogSync], None] | None = None) -> None:
        self.clock = clock
        self._sync = sync
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0

    def __call__(self, ticket: CommitLogSync) -> None:
        start = self.clock.monotonic_ns()
        try:
            if self._sync is None:
                ticket.run()
            else:
                self._sync(ticket)
        finally:
            ticket.release()
            elapsed = self.clock.monotonic_ns() - start
            self.count += 1
            self.total_ns += elapsed
            self.max_ns = max(self.max_ns, elapsed)


# --- measurements -----------------------------------------------------------------------------


class LatencyHistogram:
    """Log-bucketed histogram (HdrHistogram's idea): constant memory, each value known within
    ``GROWTH`` (1 %); ``max``, ``min``, count and mean are exact."""

    GROWTH = 1.01
    _SCALE = 1 / math.log(GROWTH)

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0
        self.min_ns: int | None = None

    def record(self, ns: int) -> None:
        ns = max(int(ns), 0)
        bucket = int(math.log(ns) * self._SCALE) if ns > 1 else 0
        self.buckets[bucket] = self.buckets.get(bucket, 0) + 1
        self.count += 1
        self.total_ns += ns
        if ns > self.max_ns:
            self.max_ns = ns
        if self.min_ns is None or ns < self.min_ns:
            self.min_ns = ns

    def merge(self, other: LatencyHistogram) -> None:
        for bucket, n in other.buckets.items():
            self.buckets[bucket] = self.buckets.get(bucket, 0) + n
        self.count += other.count
        self.total_ns += other.total_ns
        self.max_ns = max(self.max_ns, other.max_ns)
        if other.min_ns is not None and (self.min_ns is None or other.min_ns < self.min_ns):
            self.min_ns = other.min_ns

    def _upper(self, bucket: int) -> float:
        return math.exp((bucket + 1) / self._SCALE)

    def percentile(self, q: float) -> int:
        """The value at quantile ``q`` (0..1): the upper edge of its bucket, capped by max."""
        if not self.count:
            return 0
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen >= rank:
                return int(min(self._upper(bucket), self.max_ns))
        return self.max_ns

    def cdf(self, points: int = 60) -> list[tuple[float, float]]:
        """``(latency ms, fraction of appends at or below it)``, at most ``points`` of them."""
        if not self.count:
            return []
        ordered = sorted(self.buckets)
        out: list[tuple[float, float]] = []
        seen = 0
        for bucket in ordered:
            seen += self.buckets[bucket]
            out.append((min(self._upper(bucket), self.max_ns) / 1e6, seen / self.count))
        if len(out) > points:
            step = len(out) / points
            out = [out[int(i * step)] for i in range(points - 1)] + [out[-1]]
        return out


@dataclass
class _Epoch:
    """Acknowledged, unflushed messages whose records start at or after ``start``."""

    start: int
    first_ack_ns: int | None = None
    bytes: int = 0
    messages: int = 0


class DurabilityWindow:
    """What a crash would lose: acknowledged messages not yet flushed.

    A flush syncs everything committed when it starts (its ``offset``); so records are grouped
    in epochs cut at each flush's start offset.  An epoch keeps its earliest ack and its sizes,
    so memory stays flat however far the flushes lag."""

    def __init__(self) -> None:
        self.durable = 0
        self._epochs: deque[_Epoch] = deque([_Epoch(0)])
        self.pending_bytes = 0
        self.pending_messages = 0
        self.max_bytes = 0
        self.max_messages = 0
        self.max_ns = 0

    def on_flush_start(self, offset: int) -> None:
        if offset > self._epochs[-1].start:
            self._epochs.append(_Epoch(offset))

    def on_ack(self, start: int, size: int, now_ns: int) -> None:
        if start + size <= self.durable:
            return  # flushed before it was acknowledged: nothing at risk
        for epoch in reversed(self._epochs):
            if epoch.start <= start:
                break
        else:
            epoch = self._epochs[0]
        if epoch.first_ack_ns is None:
            epoch.first_ack_ns = now_ns
        epoch.bytes += size
        epoch.messages += 1
        self.pending_bytes += size
        self.pending_messages += 1
        self.max_bytes = max(self.max_bytes, self.pending_bytes)
        self.max_messages = max(self.max_messages, self.pending_messages)

    def on_flushed(self, offset: int, now_ns: int) -> None:
        self.durable = max(self.durable, offset)
        while len(self._epochs) > 1 and self._epochs[1].start <= offset:
            self._retire(self._epochs.popleft(), now_ns)
        if len(self._epochs) == 1 and self._epochs[0].start < offset:
            head = self._epochs[0]
            self._retire(head, now_ns)
            self._epochs[0] = _Epoch(offset)

    def _retire(self, epoch: _Epoch, now_ns: int) -> None:
        if epoch.first_ack_ns is not None:
            self.max_ns = max(self.max_ns, now_ns - epoch.first_ack_ns)
        self.pending_bytes -= epoch.bytes
        self.pending_messages -= epoch.messages

    def finish(self, now_ns: int) -> None:
        """The run ends: messages still unflushed waited until now (at least)."""
        for epoch in self._epochs:
            if epoch.first_ack_ns is not None:
                self.max_ns = max(self.max_ns, now_ns - epoch.first_ack_ns)


# --- the engine every policy drives -----------------------------------------------------------


@dataclass(eq=False)
class Ticket:
    """One produced message: where it went and whether it was acknowledged."""

    message: MessageRecord
    start: int = -1
    size: int = 0
    acked: bool = False
    timed_out: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def end(self) -> int:
        return self.start + self.size


class FlushEngine:
    """A store under test: the writer, the append lock (``putMessageLock``), one flush at a time,
    and the bookkeeping every policy shares."""

    def __init__(self, writer: StoreWriter, clock: Clock, fsync: FsyncCounter) -> None:
        self.writer = writer
        self.clock = clock
        self.fsync = fsync
        self.lock = threading.Lock()
        self.flush_lock = threading.Lock()
        self.window = DurabilityWindow()
        self.messages = 0
        self.bytes = 0
        self.body_bytes = 0
        self.commits = 0
        self.flushed_messages = 0  # messages covered by the last completed flush
        self.last_flush_ns = clock.monotonic_ns()
        self.timeouts = 0
        #: set when a service died: producers waiting for an ack stop waiting
        self.failed = threading.Event()

    def wait_ack(self, ticket: Ticket, timeout_s: float | None = None) -> bool:
        """Wait for ``ticket``'s ack (at most ``timeout_s``); False when it did not come."""
        waited = 0.0
        while not ticket.done.wait(0.05):
            waited += 0.05
            if self.failed.is_set() or (timeout_s is not None and waited >= timeout_s):
                return ticket.done.is_set()
        return True

    def append(self, ticket: Ticket) -> None:
        with self.lock:
            self.append_locked(ticket)

    def append_locked(self, ticket: Ticket) -> None:
        result = self.writer.append(ticket.message)
        ticket.start = result.commitlog_offset
        ticket.size = result.size
        self.messages += 1
        self.bytes += result.size
        self.body_bytes += len(ticket.message.body)

    @property
    def unflushed_messages(self) -> int:
        return self.messages - self.flushed_messages

    @property
    def unflushed_bytes(self) -> int:
        return self.writer.write_offset - self.writer.flushed_offset

    def ack(self, ticket: Ticket) -> None:
        """Acknowledge ``ticket`` to its producer (once)."""
        with self.lock:
            if ticket.acked:
                return
            ticket.acked = True
            self.window.on_ack(ticket.start, ticket.size, self.clock.monotonic_ns())
        ticket.done.set()

    def commit(self, least_pages: int = 0) -> int:
        with self.lock:
            moved = self.writer.commit(least_pages)
        if moved:
            self.commits += 1
        return moved

    def flush(self, least_pages: int = 0) -> bool:
        """One CommitLog flush if ``least_pages`` allows (``MappedFileQueue.flush``)."""
        with self.flush_lock:
            with self.lock:
                ticket = self.writer.begin_flush(least_pages)
                if ticket is None:
                    return False
                covered = self.messages
                self.window.on_flush_start(ticket.offset)
            self.fsync(ticket)
            now = self.clock.monotonic_ns()
            with self.lock:
                self.writer.end_flush(ticket)
                self.window.on_flushed(ticket.offset, now)
                self.flushed_messages = max(self.flushed_messages, covered)
                self.last_flush_ns = now
            return True

    def ms_since_flush(self) -> float:
        return (self.clock.monotonic_ns() - self.last_flush_ns) / 1e6


@dataclass
class Service:
    """One background loop of a policy: ``step`` is its body; the runner waits ``interval_ms``
    between steps, in a wake-able wait (``wakeable``; ``wakeup()`` ends it) or a plain sleep."""

    name: str
    interval_ms: float
    step: Callable[[], None]
    wakeable: bool = False
    event: threading.Event = field(default_factory=threading.Event)

    def wakeup(self) -> None:
        self.event.set()


class FlushPolicy:
    """A broker flush policy.  Subclasses set the class attributes and override the hooks."""

    name = ""
    system = ""
    setting = ""
    summary = ""
    defaults: dict[str, int] = {}
    #: transientStorePoolEnable: the writer buffers appends until a commit
    write_buffer = False

    def __init__(self, params: dict[str, int] | None = None) -> None:
        unknown = set(params or {}) - set(self.defaults)
        if unknown:
            raise ValueError(f"{self.name}: unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(self.defaults) or 'none'}")
        self.params = {**self.defaults, **(params or {})}
        self.engine: FlushEngine | None = None
        self.services: list[Service] = []

    def bind(self, engine: FlushEngine) -> None:
        self.engine = engine
        self.services = self.make_services()

    @property
    def e(self) -> FlushEngine:
        assert self.engine is not None, "bind() the policy to an engine first"
        return self.engine

    def make_services(self) -> list[Service]:
        return []

    def submit(self, message: MessageRecord) -> Ticket:
        """The producer's non-blocking part: append (default) and acknowledge at once."""
        ticket = Ticket(message)
        self.e.append(ticket)
        self.after_append(ticket)
        return ticket

    def after_append(self, ticket: Ticket) -> None:
        self.e.ack(ticket)

    def wait(self, ticket: Ticket) -> None:
        """Block until ``ticket`` is acknowledged (policies whose acks wait for a flush)."""
        self.e.wait_ack(ticket)

    def produce(self, message: MessageRecord) -> Ticket:
        ticket = self.submit(message)
        if not ticket.acked:
            self.wait(ticket)
        return ticket

    def release_waiters(self) -> None:
        """The run is over: nothing will flush again; free producers still waiting."""


class NoFlush(FlushPolicy):
    name = "none"
    system = "any"
    setting = "page cache only"
    summary = "Nothing is synced while producing: the durability window is the whole run."


class RocketMQGroupCommit(FlushPolicy):
    name = "rocketmq-sync"
    system = "RocketMQ"
    setting = "flushDiskType=SYNC_FLUSH (GroupCommitService)"
    summary = (
        "The producer waits until a flush covers its record; the service wakes on a request or "
        "every 10 ms and one flush serves every producer waiting (syncFlushTimeout ends a wait)."
    )
    defaults = {"syncFlushTimeout": 5000}
    WAKE_MS = 10

    def make_services(self) -> list[Service]:
        self._requests: list[Ticket] = []
        self._requests_lock = threading.Lock()
        self.service = Service("GroupCommitService", self.WAKE_MS, self.do_commit, wakeable=True)
        return [self.service]

    def after_append(self, ticket: Ticket) -> None:
        with self._requests_lock:
            self._requests.append(ticket)
        self.service.wakeup()

    def do_commit(self) -> None:
        with self._requests_lock:
            requests, self._requests = self._requests, []
        if not requests:
            return
        engine = self.e
        target = max(t.end for t in requests)
        if engine.writer.flushed_offset < target:
            engine.flush(0)
        for ticket in requests:
            if not ticket.done.is_set():
                engine.ack(ticket)

    def wait(self, ticket: Ticket) -> None:
        if not self.e.wait_ack(ticket, self.params["syncFlushTimeout"] / 1000):
            # PutMessageStatus.FLUSH_DISK_TIMEOUT: the message is stored, the producer told so
            ticket.timed_out = True
            with self.e.lock:
                self.e.timeouts += 1
            self.e.ack(ticket)

    def release_waiters(self) -> None:
        self.do_commit()


class RocketMQAsyncFlush(FlushPolicy):
    name = "rocketmq-async"
    system = "RocketMQ"
    setting = "flushDiskType=ASYNC_FLUSH (FlushRealTimeService, flushCommitLogTimed=true)"
    summary = (
        "Acknowledged on append; the flush service sleeps flushIntervalCommitLog and flushes when "
        "flushCommitLogLeastPages 4 KiB pages wait, everything every flushCommitLogThoroughInterval."
    )
    defaults = {"flushIntervalCommitLog": 500, "flushCommitLogLeastPages": 4, "flushCommitLogThoroughInterval": 10000}
    timed = True

    def make_services(self) -> list[Service]:
        self._last_thorough_ns = self.e.clock.monotonic_ns()
        self.flush_service = Service(
            "FlushRealTimeService", self.params["flushIntervalCommitLog"], self.flush_step, wakeable=not self.timed
        )
        return [self.flush_service]

    def flush_step(self) -> None:
        now = self.e.clock.monotonic_ns()
        least = self.params["flushCommitLogLeastPages"]
        if now >= self._last_thorough_ns + self.params["flushCommitLogThoroughInterval"] * 1_000_000:
            self._last_thorough_ns = now
            least = 0
        self.e.flush(least)

    def after_append(self, ticket: Ticket) -> None:
        self.e.ack(ticket)
        if not self.timed:
            self.flush_service.wakeup()  # CommitLog.handleDiskFlush: flushCommitLogService.wakeup()


class RocketMQAsyncFlushWakeup(RocketMQAsyncFlush):
    name = "rocketmq-async-wakeup"
    setting = "flushDiskType=ASYNC_FLUSH (FlushRealTimeService, flushCommitLogTimed=false)"
    summary = (
        "As rocketmq-async, but the service waits in a wake-able wait that every put interrupts, "
        "so it flushes as soon as flushCommitLogLeastPages pages wait."
    )
    timed = False


class RocketMQTransientPool(RocketMQAsyncFlush):
    name = "rocketmq-transient"
    setting = "transientStorePoolEnable=true (CommitRealTimeService + FlushRealTimeService)"
    summary = (
        "Records go to a write buffer and are acknowledged; CommitRealTimeService writes them to "
        "the file (woken by every put; 4 pages, or all after commitCommitLogThoroughInterval), "
        "then the async flush service syncs."
    )
    defaults = {
        "commitIntervalCommitLog": 200,
        "commitCommitLogLeastPages": 4,
        "commitCommitLogThoroughInterval": 200,
        **RocketMQAsyncFlush.defaults,
    }
    write_buffer = True

    def make_services(self) -> list[Service]:
        services = super().make_services()
        self._last_commit_ns = self.e.clock.monotonic_ns()
        self.commit_service = Service("CommitRealTimeService", self.params["commitIntervalCommitLog"], self.commit_step, wakeable=True)
        return [self.commit_service, *services]

    def commit_step(self) -> None:
        engine = self.e
        begin = engine.clock.monotonic_ns()
        least = self.params["commitCommitLogLeastPages"]
        if begin >= self._last_commit_ns + self.params["commitCommitLogThoroughInterval"] * 1_000_000:
            self._last_commit_ns = begin
            least = 0
        if engine.commit(least):
            self._last_commit_ns = engine.clock.monotonic_ns()
            self.flush_service.wakeup()

    def after_append(self, ticket: Ticket) -> None:
        self.e.ack(ticket)
        self.commit_service.wakeup()  # handleDiskFlush with a transient pool: commitLogService.wakeup()


class MetaQGroupCommit(FlushPolicy):
    name = "metaq-group-commit"
    system = "MetaQ"
    setting = "unflushThreshold=0 (group commit)"
    summary = (
        "Producers queue requests; a writer thread appends them and fsyncs when the queue is "
        "momentarily empty or more than maxTransferSize (at most 512 KiB) is unflushed; acks follow the fsync."
    )
    defaults = {"maxTransferSize": 1048576}

    def make_services(self) -> list[Service]:
        self._queue: queue.SimpleQueue[Ticket] = queue.SimpleQueue()
        self.writer_service = Service("GroupCommit writer", 100, self.drain, wakeable=True)
        return [self.writer_service]

    @property
    def batch_limit(self) -> int:
        return min(self.params["maxTransferSize"], METAQ_MAX_BATCH)

    def submit(self, message: MessageRecord) -> Ticket:
        ticket = Ticket(message)
        self._queue.put(ticket)
        self.writer_service.wakeup()
        return ticket

    def drain(self) -> None:
        engine = self.e
        appended: list[Ticket] = []
        unflushed = 0
        while True:
            try:
                ticket = self._queue.get_nowait()
            except queue.Empty:
                break
            engine.append(ticket)
            appended.append(ticket)
            unflushed += ticket.size
            if unflushed > self.batch_limit:
                engine.flush(0)
                for done in appended:
                    engine.ack(done)
                appended, unflushed = [], 0
        if appended:
            engine.flush(0)
            for done in appended:
                engine.ack(done)

    def release_waiters(self) -> None:
        self.drain()


class CountIntervalFlush(FlushPolicy):
    """Flush in the producer's append by unflushed message count, plus a periodic flusher.

    ``strict``: MetaQ flushes when the count is *greater than* the threshold (and also when the
    interval passed since the last flush, checked at append); Jafka and Kafka when it is *at
    least* the setting.  The flusher flushes every ``scheduler`` ms when ``interval`` ms passed
    since the last flush (MetaQ's FlushRunner flushes unconditionally: ``interval`` 0)."""

    count_key = ""
    scheduler_key = ""
    interval_key = ""
    strict = False
    append_checks_time = False

    def count_limit(self) -> int:
        return self.params[self.count_key]

    def scheduler_ms(self) -> int:
        return self.params[self.scheduler_key]

    def interval_ms(self) -> int:
        return self.params[self.interval_key]

    def make_services(self) -> list[Service]:
        if self.scheduler_ms() <= 0:
            return []
        return [Service(f"{self.system} flusher", self.scheduler_ms(), self.scheduled_flush)]

    def due_by_count(self) -> bool:
        limit = self.count_limit()
        if limit <= 0:
            return False
        unflushed = self.e.unflushed_messages
        return unflushed > limit if self.strict else unflushed >= limit

    def after_append(self, ticket: Ticket) -> None:
        engine = self.e
        due = self.due_by_count()
        if not due and self.append_checks_time and engine.unflushed_messages:
            due = engine.ms_since_flush() > self.interval_ms()
        if due:
            engine.flush(0)
        engine.ack(ticket)

    def scheduled_flush(self) -> None:
        engine = self.e
        if engine.ms_since_flush() >= self.interval_ms():
            engine.flush(0)


class MetaQThreshold(CountIntervalFlush):
    name = "metaq-threshold"
    system = "MetaQ"
    setting = "unflushThreshold / unflushInterval"
    summary = (
        "fsync in the append when more than unflushThreshold messages are unflushed or "
        "unflushInterval ms passed since the last flush; a FlushRunner flushes every unflushInterval."
    )
    defaults = {"unflushThreshold": 1000, "unflushInterval": 10000}
    count_key = "unflushThreshold"
    strict = True
    append_checks_time = True

    def scheduler_ms(self) -> int:
        return self.params["unflushInterval"]

    def interval_ms(self) -> int:
        return self.params["unflushInterval"]

    def scheduled_flush(self) -> None:
        self.e.flush(0)  # FlushRunner: MessageStore.flush() on every partition, unconditionally


class JafkaCount(CountIntervalFlush):
    name = "jafka-count"
    system = "Jafka"
    setting = "log.flush.interval (messages) + log flusher"
    summary = (
        "flush in the append once log.flush.interval messages are unflushed; the flusher runs every "
        "log.default.flush.scheduler.interval.ms and flushes logs idle for log.default.flush.interval.ms."
    )
    defaults = {
        "log.flush.interval": 500,
        "log.default.flush.scheduler.interval.ms": 3000,
        "log.default.flush.interval.ms": 3000,
    }
    count_key = "log.flush.interval"
    scheduler_key = "log.default.flush.scheduler.interval.ms"
    interval_key = "log.default.flush.interval.ms"


class JafkaInterval(JafkaCount):
    name = "jafka-interval"
    setting = "log.default.flush.interval.ms (time) + log flusher"
    summary = "Jafka flushing by time only (the sample config's 1 s flusher; log.flush.interval never reached)."
    defaults = {
        "log.flush.interval": INT_MAX,
        "log.default.flush.scheduler.interval.ms": 1000,
        "log.default.flush.interval.ms": 1000,
    }


class KafkaCount(CountIntervalFlush):
    name = "kafka-count"
    system = "Kafka"
    setting = "log.flush.interval.messages (flush.messages)"
    summary = "UnifiedLog.append flushes once log.flush.interval.messages are unflushed (server.properties: 10000); no timer."
    defaults = {"log.flush.interval.messages": 10000, "log.flush.scheduler.interval.ms": 0, "log.flush.interval.ms": 0}
    count_key = "log.flush.interval.messages"
    scheduler_key = "log.flush.scheduler.interval.ms"
    interval_key = "log.flush.interval.ms"


class KafkaInterval(KafkaCount):
    name = "kafka-interval"
    setting = "log.flush.interval.ms (flush.ms) + log.flush.scheduler.interval.ms"
    summary = "The kafka-log-flusher task runs every log.flush.scheduler.interval.ms and flushes a log not flushed for flush.ms (server.properties: 1000)."
    defaults = {"log.flush.interval.messages": 0, "log.flush.scheduler.interval.ms": 1000, "log.flush.interval.ms": 1000}


POLICIES: dict[str, type[FlushPolicy]] = {
    cls.name: cls
    for cls in (
        RocketMQGroupCommit,
        RocketMQAsyncFlush,
        RocketMQAsyncFlushWakeup,
        RocketMQTransientPool,
        MetaQGroupCommit,
        MetaQThreshold,
        JafkaCount,
        JafkaInterval,
        KafkaCount,
        KafkaInterval,
        NoFlush,
    )
}


def parse_mode(text: str) -> tuple[str, dict[str, int]]:
    """``NAME`` or ``NAME:key=value,key=value`` (upstream setting names, integer values)."""
    name, _, rest = text.partition(":")
    name = name.strip()
    if name not in POLICIES:
        raise ValueError(f"unknown mode {name!r}; choose from {', '.join(POLICIES)}")
    params: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"{name}: expected key=value, found {item!r}")
        try:
            params[key.strip()] = int(value)
        except ValueError:
            raise ValueError(f"{name}: {key.strip()} must be an integer, found {value!r}") from None
    POLICIES[name](params)  # check the keys now
    return name, params


# --- running -----------------------------------------------------------------------------------


class BenchProgress:
    """Progress callbacks (the CLI draws bars; the default does nothing)."""

    def start(self, mode: str, total: int, unit: str) -> None:
        """``unit`` is ``messages`` or ``ms``."""

    def update(self, mode: str, done: int) -> None: ...

    def finish(self, mode: str) -> None: ...


@dataclass(frozen=True)
class BenchOptions:
    directory: Path
    modes: tuple[tuple[str, dict[str, int]], ...] = tuple((name, {}) for name in POLICIES)
    size: int = 1024
    producers: int = 4
    duration_s: float | None = 5.0
    messages: int | None = None
    io: str = "mmap"
    commitlog_file_size: int = 1 << 30
    queues: int = 4
    keep: bool = False
    force: bool = False
    validate: bool = False


@dataclass
class ModeResult:
    mode: str
    system: str
    setting: str
    params: dict[str, int]
    io: str
    messages: int = 0
    bytes: int = 0
    body_bytes: int = 0
    seconds: float = 0.0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    fsyncs: int = 0
    fsync_total_ns: int = 0
    fsync_max_ns: int = 0
    commits: int = 0
    window_bytes: int = 0
    window_messages: int = 0
    window_ns: int = 0
    flush_timeouts: int = 0
    interrupted: bool = False
    store: str | None = None
    validation: dict | None = None

    @property
    def messages_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        lat = self.latency
        ms = lambda ns: round(ns / 1e6, 4)  # noqa: E731
        return {
            "mode": self.mode,
            "system": self.system,
            "setting": self.setting,
            "params": dict(self.params),
            "io": self.io,
            "messages": self.messages,
            "bytes": self.bytes,
            "body_bytes": self.body_bytes,
            "seconds": round(self.seconds, 4),
            "messages_per_s": round(self.messages_per_s, 1),
            "bytes_per_s": round(self.bytes_per_s, 1),
            "latency_ms": {
                "p50": ms(lat.percentile(0.50)),
                "p99": ms(lat.percentile(0.99)),
                "p999": ms(lat.percentile(0.999)),
                "max": ms(lat.max_ns),
                "mean": ms(lat.total_ns / lat.count) if lat.count else 0.0,
            },
            "latency_cdf": [[round(x, 4), round(y, 5)] for x, y in lat.cdf()],
            "fsyncs": self.fsyncs,
            "fsync_avg_ms": ms(self.fsync_total_ns / self.fsyncs) if self.fsyncs else None,
            "fsync_max_ms": ms(self.fsync_max_ns) if self.fsyncs else None,
            "commits": self.commits,
            "durability_window": {
                "max_bytes": self.window_bytes,
                "max_messages": self.window_messages,
                "max_ms": ms(self.window_ns),
            },
            "flush_timeouts": self.flush_timeouts,
            "interrupted": self.interrupted,
            "store": self.store,
            "validation": self.validation,
        }


@dataclass
class BenchReport:
    options: BenchOptions
    directory: str
    results: list[ModeResult] = field(default_factory=list)
    interrupted: bool = False
    kept: str | None = None
    not_run: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        o = self.options
        return {
            "directory": self.directory,
            "io": o.io,
            "size": o.size,
            "producers": o.producers,
            "duration_s": o.duration_s if o.messages is None else None,
            "messages": o.messages,
            "commitlog_file_size": o.commitlog_file_size,
            "interrupted": self.interrupted,
            "not_run": list(self.not_run),
            "kept": self.kept,
            "modes": [r.to_dict() for r in self.results],
        }


def directory_entries(path: Path) -> list[str]:
    """What is in ``path`` (empty when it does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    if not path.is_dir():
        raise StoreLayoutError(expected="a directory for the benchmark files", found="a file", path=path)
    return sorted(os.listdir(path))


def bench_message(index: int, size: int, queues: int, clock: Clock) -> MessageRecord:
    body = (b"mqtool-bench " * (size // 13 + 1))[:size]
    return MessageRecord(
        topic=BENCH_TOPIC,
        queue_id=index % max(queues, 1),
        body=body,
        born_timestamp=clock.time_ms(),
        properties={"TAGS": "bench", "WAIT": "true"},
    )


class _Run:
    """One mode running: producers, services, and the stop signals."""

    def __init__(self, policy: FlushPolicy, engine: FlushEngine, options: BenchOptions, clock: Clock) -> None:
        self.policy = policy
        self.engine = engine
        self.options = options
        self.clock = clock
        self.stop_producers = threading.Event()
        self.stop_services = threading.Event()
        self.issued = 0
        self.issue_lock = threading.Lock()
        self.histograms = [LatencyHistogram() for _ in range(options.producers)]
        self.errors: list[BaseException] = []
        self.finished_producers = 0

    def _take(self) -> bool:
        if self.options.messages is None:
            return not self.stop_producers.is_set()
        with self.issue_lock:
            if self.stop_producers.is_set() or self.issued >= self.options.messages:
                return False
            self.issued += 1
            return True

    def producer(self, index: int) -> None:
        hist = self.histograms[index]
        clock = self.clock
        policy = self.policy
        template = bench_message(index, self.options.size, self.options.queues, clock)
        try:
            while self._take():
                message = MessageRecord(
                    topic=template.topic,
                    queue_id=template.queue_id,
                    body=template.body,
                    born_timestamp=clock.time_ms(),
                    properties=template.properties,
                )
                start = clock.monotonic_ns()
                policy.produce(message)
                hist.record(clock.monotonic_ns() - start)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.errors.append(exc)
            self.stop_producers.set()
        finally:
            with self.issue_lock:
                self.finished_producers += 1

    def service(self, svc: Service) -> None:
        try:
            while not self.stop_services.is_set():
                if svc.wakeable:
                    svc.event.wait(svc.interval_ms / 1000)
                    svc.event.clear()
                else:
                    self.stop_services.wait(svc.interval_ms / 1000)
                if self.stop_services.is_set():
                    break
                svc.step()
        except BaseException as exc:  # noqa: BLE001
            self.errors.append(exc)
            self.engine.failed.set()
            self.stop_producers.set()

    @property
    def producers_done(self) -> bool:
        return self.finished_producers >= self.options.producers


def run_mode(
    name: str,
    params: dict[str, int],
    root: Path,
    options: BenchOptions,
    *,
    clock: Clock | None = None,
    progress: BenchProgress | None = None,
    fsync: FsyncCounter | None = None,
) -> ModeResult:
    """Run one mode into a new store at ``root``; the store is closed cleanly afterwards.

    A ``KeyboardInterrupt`` stops the producers, finishes the services and the store, and
    returns the partial result marked ``interrupted``."""
    clock = clock or SystemClock()
    progress = progress or BenchProgress()
    policy = POLICIES[name](params)
    config = WriterConfig(
        commitlog_file_size=options.commitlog_file_size,
        enable_index=False,
        io=options.io,
        write_buffer=policy.write_buffer,
    )
    writer = StoreWriter(root, config, clock=clock.time_ms)
    engine = FlushEngine(writer, clock, fsync or FsyncCounter(clock))
    policy.bind(engine)
    run = _Run(policy, engine, options, clock)
    result = ModeResult(name, policy.system, policy.setting, dict(policy.params), options.io, store=str(root))
    service_threads = [
        threading.Thread(target=run.service, args=(svc,), name=f"bench-{svc.name}", daemon=True) for svc in policy.services
    ]
    producer_threads = [
        threading.Thread(target=run.producer, args=(i,), name=f"bench-producer-{i}", daemon=True) for i in range(options.producers)
    ]
    total, unit = (options.messages, "messages") if options.messages is not None else (int((options.duration_s or 0) * 1000), "ms")
    progress.start(name, total, unit)
    started = clock.monotonic_ns()
    try:
        for t in service_threads + producer_threads:
            t.start()
        while not run.producers_done:
            elapsed_ms = (clock.monotonic_ns() - started) // 1_000_000
            if options.messages is None and elapsed_ms >= total:
                break
            progress.update(name, engine.messages if unit == "messages" else min(elapsed_ms, total))
            run.stop_producers.wait(0.05)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        run.stop_producers.set()
        try:
            _join(producer_threads, policy, run)
        except KeyboardInterrupt:
            result.interrupted = True
            _join(producer_threads, policy, run)
        ended = clock.monotonic_ns()
        run.stop_services.set()
        for svc in policy.services:
            svc.wakeup()
        for t in service_threads:
            t.join()
        policy.release_waiters()
        engine.window.finish(ended)
        writer.flush()  # the broker's shutdown flush; not part of the measurement
        writer.close(clean=True)
        progress.finish(name)
    if run.errors:
        raise run.errors[0]
    for hist in run.histograms:
        result.latency.merge(hist)
    result.messages = engine.messages
    result.bytes = engine.bytes
    result.body_bytes = engine.body_bytes
    result.seconds = (ended - started) / 1e9
    result.fsyncs = engine.fsync.count
    result.fsync_total_ns = engine.fsync.total_ns
    result.fsync_max_ns = engine.fsync.max_ns
    result.commits = engine.commits
    result.window_bytes = engine.window.max_bytes
    result.window_messages = engine.window.max_messages
    result.window_ns = engine.window.max_ns
    result.flush_timeouts = engine.timeouts
    return result


def _join(threads: list[threading.Thread], policy: FlushPolicy, run: _Run) -> None:
    """Wait for producers; one blocked on an ack that no service will give is released."""
    for t in threads:
        while t.is_alive():
            t.join(0.1)
            if t.is_alive() and run.stop_services.is_set():
                policy.release_waiters()


def validate_store(root: Path) -> dict:
    from mqtool.ops.validate import ValidateOptions, validate_path

    report = validate_path(root, ValidateOptions(jobs=1), "rocketmq")
    return {"ok": not report.failed, **report.counts}


def run_bench(
    options: BenchOptions,
    *,
    clock: Clock | None = None,
    progress: BenchProgress | None = None,
) -> BenchReport:
    """Run every mode of ``options`` in turn, each into its own store under a fresh directory in
    ``options.directory``; remove what was written unless ``keep``.  Ctrl-C stops the current
    mode cleanly, skips the rest and returns what ran (``interrupted``)."""
    directory = Path(options.directory)
    entries = directory_entries(directory)
    if entries and not options.force:
        raise StoreLayoutError(
            expected="an empty directory for the benchmark (or --force)", found=f"{len(entries)} entries", path=directory
        )
    created = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="mqtool-bench-", dir=directory))
    report = BenchReport(options, str(directory))
    try:
        for index, (name, params) in enumerate(options.modes):
            root = run_dir / name
            n = 2
            while root.exists():  # the same mode twice with other settings
                root = run_dir / f"{name}-{n}"
                n += 1
            try:
                result = run_mode(name, params, root, options, clock=clock, progress=progress)
            except KeyboardInterrupt:
                report.interrupted = True
                report.not_run = [m for m, _ in options.modes[index:]]
                break
            if options.validate:
                result.validation = validate_store(root)
            report.results.append(result)
            if not options.keep:
                shutil.rmtree(root, ignore_errors=True)
                result.store = None
            if result.interrupted:
                report.interrupted = True
                report.not_run = [m for m, _ in options.modes[index + 1 :]]
                break
    finally:
        if options.keep:
            report.kept = str(run_dir)
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
            if created:
                try:
                    directory.rmdir()
                except OSError:
                    pass
    return report


def mode_help() -> Iterable[tuple[str, str, str, dict[str, int]]]:
    """``(name, system + setting, summary, defaults)`` per mode, for ``--help`` and the README."""
    for name, cls in POLICIES.items():
        yield name, f"{cls.system}: {cls.setting}", cls.summary, dict(cls.defaults)
