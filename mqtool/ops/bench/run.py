"""bench flush, the run: each mode writes its own RocketMQ store through ``StoreWriter`` with producer
threads and the policy's services, and the report says what each mode measured."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import StoreLayoutError
from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.ops.bench.measure import Clock, FsyncCounter, LatencyHistogram, SystemClock
from mqtool.ops.bench.policies import POLICIES, FlushEngine, FlushPolicy, Service
from mqtool.store.writer import StoreWriter, WriterConfig

BENCH_TOPIC = "BenchTopic"

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
    validation: dict[str, object] | None = None

    @property
    def messages_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, object]:
        lat = self.latency

        def ms(ns: float) -> float:
            return round(ns / 1e6, 4)

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

    def to_dict(self) -> dict[str, object]:
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
    service_threads = [threading.Thread(target=run.service, args=(svc,), name=f"bench-{svc.name}", daemon=True) for svc in policy.services]
    producer_threads = [threading.Thread(target=run.producer, args=(i,), name=f"bench-producer-{i}", daemon=True) for i in range(options.producers)]
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


def validate_store(root: Path) -> dict[str, object]:
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
        raise StoreLayoutError(expected="an empty directory for the benchmark (or --force)", found=f"{len(entries)} entries", path=directory)
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
