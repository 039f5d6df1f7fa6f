"""bench flush, what is measured: the injectable clock, the fsync counter, the latency histogram
and the durability window (what was acknowledged but not yet flushed)."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mqtool.store.writer import CommitLogSync

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
