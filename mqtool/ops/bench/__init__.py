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

The room: ``measure`` (clock, fsync counter, latency histogram, durability window), ``policies``
(the engine and one class per broker policy, ``POLICIES``, ``parse_mode``) and ``run`` (producers
and services per mode, the report, ``run_bench``); the names below are the room's interface.
"""

from __future__ import annotations

from mqtool.ops.bench.measure import Clock, DurabilityWindow, FsyncCounter, LatencyHistogram, ManualClock, SystemClock
from mqtool.ops.bench.policies import (
    INT_MAX,
    METAQ_MAX_BATCH,
    POLICIES,
    CountIntervalFlush,
    FlushEngine,
    FlushPolicy,
    JafkaCount,
    JafkaInterval,
    KafkaCount,
    KafkaInterval,
    MetaQGroupCommit,
    MetaQThreshold,
    NoFlush,
    RocketMQAsyncFlush,
    RocketMQAsyncFlushWakeup,
    RocketMQGroupCommit,
    RocketMQTransientPool,
    Service,
    Ticket,
    parse_mode,
)
from mqtool.ops.bench.run import (
    BENCH_TOPIC,
    BenchOptions,
    BenchProgress,
    BenchReport,
    ModeResult,
    bench_message,
    directory_entries,
    mode_help,
    run_bench,
    run_mode,
    validate_store,
)

__all__ = [
    "BENCH_TOPIC",
    "INT_MAX",
    "METAQ_MAX_BATCH",
    "POLICIES",
    "BenchOptions",
    "BenchProgress",
    "BenchReport",
    "Clock",
    "CountIntervalFlush",
    "DurabilityWindow",
    "FlushEngine",
    "FlushPolicy",
    "FsyncCounter",
    "JafkaCount",
    "JafkaInterval",
    "KafkaCount",
    "KafkaInterval",
    "LatencyHistogram",
    "ManualClock",
    "MetaQGroupCommit",
    "MetaQThreshold",
    "ModeResult",
    "NoFlush",
    "RocketMQAsyncFlush",
    "RocketMQAsyncFlushWakeup",
    "RocketMQGroupCommit",
    "RocketMQTransientPool",
    "Service",
    "SystemClock",
    "Ticket",
    "bench_message",
    "directory_entries",
    "mode_help",
    "parse_mode",
    "run_bench",
    "run_mode",
    "validate_store",
]
