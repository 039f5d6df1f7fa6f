"""bench flush, the policies: the engine every policy drives (``FlushEngine``) and one class per
broker flush policy (``POLICIES``), each citing the upstream service it reproduces."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.ops.bench.measure import Clock, DurabilityWindow, FsyncCounter
from mqtool.store.writer import StoreWriter

#: MetaQ clamps the group-commit batch to 512 KiB (``ONE_M_BYTES = 512 * 1024``).
METAQ_MAX_BATCH = 512 * 1024
#: Java's ``Integer.MAX_VALUE``: a count threshold that never triggers.
INT_MAX = 2**31 - 1


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
        self.flush_service = Service("FlushRealTimeService", self.params["flushIntervalCommitLog"], self.flush_step, wakeable=not self.timed)
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
    summary = "As rocketmq-async, but the service waits in a wake-able wait that every put interrupts, so it flushes as soon as flushCommitLogLeastPages pages wait."
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
