"""bench flush: each policy's syncs and durability window, driven by a manual clock and counted
syncs (no timing), the writer's io paths, and short real runs whose stores validate clean."""

from __future__ import annotations

import datetime as dt
import os
import threading

import pytest

from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.ops import bench
from mqtool.ops.bench import (
    POLICIES,
    BenchOptions,
    BenchProgress,
    DurabilityWindow,
    FlushEngine,
    FsyncCounter,
    LatencyHistogram,
    ManualClock,
    parse_mode,
    run_bench,
)
from mqtool.ops.validate import ValidateOptions, validate_path
from mqtool.store.writer import OS_PAGE_SIZE, StoreWriter, WriterConfig


def _setup(tmp_path, name, params=None, *, file_size=1 << 20):
    clock = ManualClock()
    cls = POLICIES[name]
    config = WriterConfig(commitlog_file_size=file_size, enable_index=False, write_buffer=cls.write_buffer)
    writer = StoreWriter(tmp_path / name, config, clock=clock.time_ms)
    counter = FsyncCounter(clock)
    engine = FlushEngine(writer, clock, counter)
    policy = cls(params)
    policy.bind(engine)
    return policy, engine, clock, counter


def _msg(size=100):
    return MessageRecord(topic="T", body=b"x" * size, properties={"TAGS": "t"})


def _services(policy):
    return {svc.name: svc for svc in policy.services}


# --- RocketMQ ------------------------------------------------------------------------------------


def test_sync_group_commit_acks_only_after_its_flush(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "rocketmq-sync")
    service = _services(policy)["GroupCommitService"]
    for i in range(10):
        ticket = policy.submit(_msg())
        assert not ticket.acked and service.event.is_set()  # the put woke the service
        service.event.clear()
        clock.advance(3)
        service.step()
        assert ticket.acked
        assert engine.writer.flushed_offset >= ticket.end
        assert engine.window.pending_bytes == 0  # window 0 after each ack
        assert counter.count == i + 1
    assert (engine.window.max_bytes, engine.window.max_messages, engine.window.max_ns) == (0, 0, 0)


def test_sync_group_commit_shares_one_fsync(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "rocketmq-sync")
    tickets = [policy.submit(_msg()) for _ in range(7)]  # seven producers waiting together
    _services(policy)["GroupCommitService"].step()
    assert all(t.acked for t in tickets)
    assert counter.count == 1
    assert engine.window.max_bytes == 0


def test_sync_timeout_is_counted_and_widens_the_window(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "rocketmq-sync", {"syncFlushTimeout": 1})
    ticket = policy.submit(_msg())
    policy.wait(ticket)  # no service runs: FLUSH_DISK_TIMEOUT after 1 ms
    assert ticket.acked and ticket.timed_out and engine.timeouts == 1
    assert engine.window.max_messages == 1 and counter.count == 0


def test_async_timed_flushes_by_least_pages_and_thorough_interval(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "rocketmq-async")
    service = _services(policy)["FlushRealTimeService"]
    assert not service.wakeable  # Thread.sleep(flushIntervalCommitLog)
    first = policy.submit(_msg(1000))
    assert first.acked  # acknowledged on append
    clock.advance(500)
    service.step()
    assert counter.count == 0  # less than 4 pages wait
    while engine.writer.write_offset < 4 * OS_PAGE_SIZE:
        policy.submit(_msg(1000))
    assert not service.event.is_set()  # puts do not wake a timed service
    clock.advance(500)
    service.step()
    assert counter.count == 1
    assert engine.window.max_bytes == engine.writer.flushed_offset == engine.bytes
    assert engine.window.max_ns == 1000 * 1_000_000  # the first ack waited two intervals
    policy.submit(_msg(10))
    clock.advance(500)
    service.step()
    assert counter.count == 1  # one small record: not enough pages
    clock.advance(9500)  # 10 s since the last thorough flush
    service.step()
    assert counter.count == 2 and engine.window.pending_messages == 0


def test_async_wakeup_is_woken_by_every_put(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "rocketmq-async-wakeup", {"flushCommitLogLeastPages": 1})
    service = _services(policy)["FlushRealTimeService"]
    assert service.wakeable
    policy.submit(_msg(5000))
    assert service.event.is_set()
    service.step()
    assert counter.count == 1 and engine.window.max_messages == 1


def test_transient_pool_commits_before_it_can_flush(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "rocketmq-transient")
    svc = _services(policy)
    commit, flush = svc["CommitRealTimeService"], svc["FlushRealTimeService"]
    tickets = [policy.submit(_msg(2000)) for _ in range(3)]
    assert all(t.acked for t in tickets) and commit.event.is_set()
    assert engine.writer.committed_offset == 0  # in the write buffer, not in the file
    commit.step()
    assert engine.commits == 0  # under 4 pages and the thorough interval has not passed
    clock.advance(10_000)
    flush.step()
    assert counter.count == 0  # nothing committed: nothing to flush
    commit.step()  # 200 ms since the last commit: everything goes
    assert engine.commits == 1 and engine.writer.committed_offset == engine.bytes
    assert flush.event.is_set()
    clock.advance(10_000)
    flush.step()
    assert counter.count == 1 and engine.writer.flushed_offset == engine.bytes
    assert engine.window.max_messages == 3 and engine.window.max_ns == 20_000 * 1_000_000


# --- MetaQ ---------------------------------------------------------------------------------------


def test_metaq_group_commit_appends_in_the_writer_and_acks_after_fsync(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "metaq-group-commit")
    tickets = [policy.submit(_msg()) for _ in range(5)]
    assert engine.messages == 0 and not any(t.acked for t in tickets)
    writer_service = _services(policy)["GroupCommit writer"]
    writer_service.step()
    assert engine.messages == 5 and all(t.acked for t in tickets)
    assert counter.count == 1 and engine.window.max_bytes == 0


def test_metaq_group_commit_fsyncs_past_the_batch_limit(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "metaq-group-commit", file_size=8 << 20)
    tickets = [policy.submit(_msg(100_000)) for _ in range(14)]
    _services(policy)["GroupCommit writer"].step()
    expected, unflushed = 0, 0
    for t in tickets:
        unflushed += t.size
        if unflushed > bench.METAQ_MAX_BATCH:  # maxTransferSize 1 MiB clamped to 512 KiB
            expected, unflushed = expected + 1, 0
    expected += 1 if unflushed else 0
    assert counter.count == expected == 3
    assert all(t.acked for t in tickets) and engine.window.max_bytes == 0


def test_metaq_threshold_time_check_in_append(tmp_path):
    policy, engine, clock, counter = _setup(tmp_path, "metaq-threshold", {"unflushThreshold": 100, "unflushInterval": 1000})
    policy.submit(_msg())
    clock.advance(1000)
    policy.submit(_msg())
    assert counter.count == 0  # not *more* than the interval yet
    clock.advance(1)
    policy.submit(_msg())
    assert counter.count == 1 and engine.window.pending_messages == 0
    assert engine.window.max_messages == 2 and engine.window.max_ns == 1001 * 1_000_000
    runner = _services(policy)["MetaQ flusher"]
    policy.submit(_msg())
    runner.step()  # FlushRunner flushes whatever is unflushed
    assert counter.count == 2


# --- count and interval policies (Kafka, Jafka, MetaQ) --------------------------------------------


@pytest.mark.parametrize(
    "name,key,n,most_unflushed",
    [
        ("kafka-count", "log.flush.interval.messages", 5, 4),  # flush when unflushed >= N
        ("jafka-count", "log.flush.interval", 5, 4),
        ("metaq-threshold", "unflushThreshold", 5, 5),  # flush when unflushed > N
    ],
)
def test_count_policies_bound_the_unflushed_messages(tmp_path, name, key, n, most_unflushed):
    policy, engine, clock, counter = _setup(tmp_path, name, {key: n})
    total = 23
    for _ in range(total):
        ticket = policy.submit(_msg())
        assert ticket.acked
        assert engine.window.pending_messages <= most_unflushed
    assert engine.window.max_messages == most_unflushed
    assert counter.count == total // (most_unflushed + 1)
    assert engine.window.max_ns == 0  # the clock never moved


@pytest.mark.parametrize(
    "name,interval",
    [("kafka-interval", 1000), ("jafka-interval", 1000), ("jafka-count", 3000)],
)
def test_interval_flushers(tmp_path, name, interval):
    policy, engine, clock, counter = _setup(tmp_path, name)
    (flusher,) = policy.services
    assert flusher.interval_ms == interval
    policy.submit(_msg())
    clock.advance(interval - 1)
    flusher.step()
    assert counter.count == 0
    clock.advance(1)
    flusher.step()
    assert counter.count == 1
    assert engine.window.max_ns == interval * 1_000_000 and engine.window.max_messages == 1


def test_kafka_count_has_no_timer_and_none_never_flushes(tmp_path):
    policy, *_ = _setup(tmp_path, "kafka-count")
    assert policy.services == []
    policy, engine, clock, counter = _setup(tmp_path, "none")
    sizes = [policy.submit(_msg(50 + i)).size for i in range(40)]
    clock.advance(2500)
    engine.window.finish(clock.monotonic_ns())
    assert counter.count == 0 and policy.services == []
    assert engine.window.max_bytes == sum(sizes) and engine.window.max_messages == 40
    assert engine.window.max_ns == 2500 * 1_000_000


# --- building blocks -------------------------------------------------------------------------------


def test_window_epochs_split_at_flush_start():
    w = DurabilityWindow()
    w.on_ack(0, 100, 0)
    w.on_flush_start(100)  # a flush snapshots 100 bytes...
    w.on_ack(100, 50, 5)  # ...a record lands meanwhile
    w.on_flushed(100, 10)
    assert (w.pending_bytes, w.pending_messages, w.max_ns) == (50, 1, 10)
    w.on_flush_start(150)
    w.on_flushed(150, 30)
    assert (w.pending_bytes, w.max_ns, w.max_bytes) == (0, 25, 150)
    w.on_ack(0, 100, 40)  # flushed before its ack: not at risk
    assert w.pending_bytes == 0


def test_histogram_percentiles_within_one_percent():
    h = LatencyHistogram()
    values = list(range(1000, 1_001_000, 1000))  # 1 us .. 1 ms
    for v in reversed(values):
        h.record(v)
    for q in (0.5, 0.99, 0.999):
        exact = values[int(q * len(values)) - 1]
        assert abs(h.percentile(q) - exact) <= exact * 0.011
    assert h.max_ns == values[-1] and h.percentile(1.0) == values[-1]
    cdf = h.cdf(20)
    assert len(cdf) <= 20 and cdf[-1][1] == 1.0
    assert [x for x, _ in cdf] == sorted(x for x, _ in cdf)


def test_parse_mode():
    assert parse_mode("kafka-count:log.flush.interval.messages=7") == ("kafka-count", {"log.flush.interval.messages": 7})
    assert parse_mode("none") == ("none", {})
    for bad in ("nope", "kafka-count:flush=1", "kafka-count:log.flush.interval.messages=x", "kafka-count:oops"):
        with pytest.raises(ValueError):
            parse_mode(bad)


@pytest.mark.parametrize("config", [dict(io="mmap"), dict(write_buffer=True), dict(io="mmap", write_buffer=True)])
def test_writer_io_paths_write_the_same_bytes(tmp_path, config):
    base = dict(commitlog_file_size=8192, cq_file_size=400, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)

    def write(root, **extra):
        clock = ManualClock()
        with StoreWriter(root, WriterConfig(**base, **extra), clock=clock.time_ms) as w:
            for i in range(60):
                clock.advance(1)
                w.append(MessageRecord(topic="T", queue_id=i % 3, body=bytes([i]) * (20 + i * 7), properties={"KEYS": f"k{i}"}))
                if i % 9 == 0:
                    w.commit()
                    w.flush_commitlog(least_pages=1)
        return root

    plain = write(tmp_path / "plain")
    other = write(tmp_path / "other", **config)
    names = sorted(p.relative_to(plain) for p in plain.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file())
    for name in names:
        assert (plain / name).read_bytes() == (other / name).read_bytes(), name
    assert not validate_path(other, ValidateOptions(), "rocketmq").failed


def test_writer_flush_positions(tmp_path):
    w = StoreWriter(tmp_path, WriterConfig(commitlog_file_size=16384, enable_index=False, write_buffer=True))
    r = w.append(_msg(3000))
    assert (w.write_offset, w.committed_offset, w.flushed_offset) == (r.size, 0, 0)
    assert w.begin_flush() is None  # nothing in the file yet
    assert w.commit(least_pages=1) == 0 and w.commit() == r.size
    assert w.flush_commitlog(least_pages=1) is False  # under one page past the flushed one
    assert w.flush_commitlog() is True and w.flushed_offset == r.size
    while w.write_offset < 16384:
        w.append(_msg(3000))  # until it rolls: the closed file waits for a sync
    ticket = w.begin_flush(least_pages=100)
    assert ticket is not None and ticket.rolled  # a full file may always flush
    ticket.run()
    w.end_flush(ticket)
    assert w.flushed_offset == w.committed_offset
    w.close()


# --- real runs ---------------------------------------------------------------------------------------


def _options(tmp_path, **kw):
    base = dict(
        directory=tmp_path / "bench",
        size=200,
        producers=2,
        messages=240,
        duration_s=None,
        commitlog_file_size=64 << 10,
    )
    base.update(kw)
    return BenchOptions(**base)


@pytest.mark.parametrize("io", ["mmap", "write"])
def test_short_runs_write_stores_that_validate_clean(tmp_path, io):
    modes = tuple((name, {}) for name in POLICIES) if io == "mmap" else (("rocketmq-sync", {}), ("rocketmq-transient", {}))
    report = run_bench(_options(tmp_path, io=io, modes=modes, keep=True, validate=True))
    assert not report.interrupted and [r.mode for r in report.results] == [m for m, _ in modes]
    for result in report.results:
        assert result.messages == 240 and result.latency.count == 240
        assert result.bytes > 240 * 200 and result.seconds > 0
        assert result.validation["ok"] and result.validation["error"] == 0, result.mode
        # and validate once more here, on the files the run kept
        store = validate_path(result.store, ValidateOptions(), "rocketmq")
        assert not store.failed and store.facts is not None
        records = sum(f.records for f in store.files if f.family == "commitlog")
        assert records == 240
    by_mode = {r.mode: r for r in report.results}
    assert by_mode["rocketmq-sync"].window_bytes == 0 and by_mode["rocketmq-sync"].fsyncs > 0
    if "none" in by_mode:
        assert by_mode["none"].fsyncs == 0 and by_mode["none"].window_messages == 240
        assert by_mode["metaq-group-commit"].window_bytes == 0
    assert report.kept and os.path.isdir(report.kept)


def test_files_are_removed_and_non_empty_dirs_refused(tmp_path):
    opts = _options(tmp_path, producers=1, modes=(("kafka-count", {"log.flush.interval.messages": 10}),))
    report = run_bench(opts)
    assert report.results[0].fsyncs == 24 and report.results[0].store is None
    assert not (tmp_path / "bench").exists()  # created by the run, removed by it
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "precious").write_text("keep me")
    with pytest.raises(Exception, match="empty directory"):
        run_bench(opts)
    report = run_bench(BenchOptions(**{**opts.__dict__, "force": True}))
    assert report.results and sorted(os.listdir(tmp_path / "bench")) == ["precious"]


def test_ctrl_c_stops_cleanly_and_reports_what_ran(tmp_path):
    class Interrupting(BenchProgress):
        def update(self, mode, done):
            if mode == "rocketmq-async" and done > 0:
                raise KeyboardInterrupt

    modes = (("none", {}), ("rocketmq-async", {}), ("kafka-count", {}))
    opts = _options(tmp_path, modes=modes, messages=None, duration_s=0.3)
    before = threading.active_count()
    report = run_bench(opts, progress=Interrupting())
    assert report.interrupted and report.not_run == ["kafka-count"]
    assert [r.mode for r in report.results] == ["none", "rocketmq-async"]
    assert not report.results[0].interrupted and report.results[1].interrupted
    assert report.results[0].messages > 0 and report.results[1].latency.count == report.results[1].messages
    assert not (tmp_path / "bench").exists()
    assert threading.active_count() == before
