"""``mqtool bench flush``: the brokers' flush policies measured on this disk.

Tables, a terminal chart, ``--json``, and ``--plot FILE.png`` (``bench_report``).  The benchmark
(``ops.bench``) loads when the command runs: ``FLUSH_MODES`` is its table of modes for ``--help``,
kept equal to ``ops.bench.mode_help()`` by ``tests/cli/test_startup.py``.
"""

import enum
from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.common import renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import FLOAT, INT, FormatOpt, JsonlOpt, JsonOpt, OutputFormat, flag


class IoMode(str, enum.Enum):
    mmap = "mmap"
    write = "write"


#: ``(name, system: setting, summary, defaults)`` of every mode, as ``ops.bench.mode_help()`` yields them
FLUSH_MODES: tuple[tuple[str, str, str, dict[str, int]], ...] = (
    (
        "rocketmq-sync",
        "RocketMQ: flushDiskType=SYNC_FLUSH (GroupCommitService)",
        "The producer waits until a flush covers its record; the service wakes on a request or every 10 ms and one "
        "flush serves every producer waiting (syncFlushTimeout ends a wait).",
        {"syncFlushTimeout": 5000},
    ),
    (
        "rocketmq-async",
        "RocketMQ: flushDiskType=ASYNC_FLUSH (FlushRealTimeService, flushCommitLogTimed=true)",
        "Acknowledged on append; the flush service sleeps flushIntervalCommitLog and flushes when "
        "flushCommitLogLeastPages 4 KiB pages wait, everything every flushCommitLogThoroughInterval.",
        {"flushIntervalCommitLog": 500, "flushCommitLogLeastPages": 4, "flushCommitLogThoroughInterval": 10000},
    ),
    (
        "rocketmq-async-wakeup",
        "RocketMQ: flushDiskType=ASYNC_FLUSH (FlushRealTimeService, flushCommitLogTimed=false)",
        "As rocketmq-async, but the service waits in a wake-able wait that every put interrupts, so it flushes as soon as flushCommitLogLeastPages pages wait.",
        {"flushIntervalCommitLog": 500, "flushCommitLogLeastPages": 4, "flushCommitLogThoroughInterval": 10000},
    ),
    (
        "rocketmq-transient",
        "RocketMQ: transientStorePoolEnable=true (CommitRealTimeService + FlushRealTimeService)",
        "Records go to a write buffer and are acknowledged; CommitRealTimeService writes them to the file (woken by "
        "every put; 4 pages, or all after commitCommitLogThoroughInterval), then the async flush service syncs.",
        {
            "commitIntervalCommitLog": 200,
            "commitCommitLogLeastPages": 4,
            "commitCommitLogThoroughInterval": 200,
            "flushIntervalCommitLog": 500,
            "flushCommitLogLeastPages": 4,
            "flushCommitLogThoroughInterval": 10000,
        },
    ),
    (
        "metaq-group-commit",
        "MetaQ: unflushThreshold=0 (group commit)",
        "Producers queue requests; a writer thread appends them and fsyncs when the queue is momentarily empty or more "
        "than maxTransferSize (at most 512 KiB) is unflushed; acks follow the fsync.",
        {"maxTransferSize": 1048576},
    ),
    (
        "metaq-threshold",
        "MetaQ: unflushThreshold / unflushInterval",
        "fsync in the append when more than unflushThreshold messages are unflushed or unflushInterval ms passed since "
        "the last flush; a FlushRunner flushes every unflushInterval.",
        {"unflushThreshold": 1000, "unflushInterval": 10000},
    ),
    (
        "jafka-count",
        "Jafka: log.flush.interval (messages) + log flusher",
        "flush in the append once log.flush.interval messages are unflushed; the flusher runs every "
        "log.default.flush.scheduler.interval.ms and flushes logs idle for log.default.flush.interval.ms.",
        {"log.flush.interval": 500, "log.default.flush.scheduler.interval.ms": 3000, "log.default.flush.interval.ms": 3000},
    ),
    (
        "jafka-interval",
        "Jafka: log.default.flush.interval.ms (time) + log flusher",
        "Jafka flushing by time only (the sample config's 1 s flusher; log.flush.interval never reached).",
        {"log.flush.interval": 2147483647, "log.default.flush.scheduler.interval.ms": 1000, "log.default.flush.interval.ms": 1000},
    ),
    (
        "kafka-count",
        "Kafka: log.flush.interval.messages (flush.messages)",
        "UnifiedLog.append flushes once log.flush.interval.messages are unflushed (server.properties: 10000); no timer.",
        {"log.flush.interval.messages": 10000, "log.flush.scheduler.interval.ms": 0, "log.flush.interval.ms": 0},
    ),
    (
        "kafka-interval",
        "Kafka: log.flush.interval.ms (flush.ms) + log.flush.scheduler.interval.ms",
        "The kafka-log-flusher task runs every log.flush.scheduler.interval.ms and flushes a log not flushed for flush.ms (server.properties: 1000).",
        {"log.flush.interval.messages": 0, "log.flush.scheduler.interval.ms": 1000, "log.flush.interval.ms": 1000},
    ),
    (
        "none",
        "any: page cache only",
        "Nothing is synced while producing: the durability window is the whole run.",
        {},
    ),
)


def _modes_help() -> str:
    lines = []
    for name, setting, summary, defaults in FLUSH_MODES:
        settings = ", ".join(f"{k}={v}" for k, v in defaults.items())
        lines.append(f"{name} -- {setting}. {summary}" + (f" Defaults: {settings}." if settings else ""))
    return "\n\n".join(lines)


FLUSH_HELP = "\n\n".join(
    [
        "Measure the brokers' flush policies on this disk: throughput, append latency, fsyncs and the durability window (bytes and ms acknowledged but not yet flushed).",
        "Every mode writes a real RocketMQ store in --dir through mqtool's store writer (the same records for "
        "every mode, so only the flush policy differs); the files validate clean (--validate checks) and are "
        "removed afterwards unless --keep. Ctrl-C stops the running mode cleanly and reports what ran (exit 130).",
        "Modes (--mode NAME or NAME:setting=value,...; default: all):",
        _modes_help(),
    ]
)


def complete_mode(incomplete: str) -> list[tuple[str, str]]:
    return [(name, setting) for name, setting, _, _ in FLUSH_MODES if name.startswith(incomplete)]


def bench_flush(
    mode: Annotated[
        list[str] | None,
        typer.Option("--mode", "-m", metavar="<str>...", autocompletion=complete_mode, help="A mode to run, NAME[:setting=value,...] (repeatable; default all)."),
    ] = None,
    size: Annotated[int, typer.Option("--size", min=0, metavar=INT, help="Message body size in bytes.")] = 1024,
    producers: Annotated[int, typer.Option("--producers", min=1, metavar=INT, help="Producer threads.")] = 4,
    duration: Annotated[float | None, typer.Option("--duration", min=0.1, metavar=FLOAT, help="Seconds per mode (default 5).")] = None,
    messages: Annotated[int | None, typer.Option("--messages", min=1, metavar=INT, help="Messages per mode, instead of --duration.")] = None,
    directory: Annotated[Path, typer.Option("--dir", help="Where to write: a directory on the disk being judged (empty, or created).")] = Path("mqtool-bench"),
    force: Annotated[bool, flag("--force", help="Run in a non-empty --dir (only the run's own files are removed).")] = False,
    keep: Annotated[bool, flag("--keep", help="Keep the written stores (their path is printed).")] = False,
    validate: Annotated[bool, flag("--validate", help="Run `mqtool validate` on each written store; exit 1 if one fails.")] = False,
    io: Annotated[IoMode, typer.Option("--io", help="mmap: records copied into a mapping (the broker's default); write: pwrite.", case_sensitive=False)] = IoMode.mmap,
    commitlog_file_size: Annotated[int, typer.Option("--commitlog-file-size", min=65536, metavar=INT, help="CommitLog file size (mappedFileSizeCommitLog).")] = 1 << 30,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a PNG: throughput vs p99 latency, and a latency CDF per mode (needs matplotlib: the 'plot' extra).")
    ] = None,
    no_chart: Annotated[bool, flag("--no-chart", help="Table output without the terminal chart.")] = False,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    from mqtool.cli.bench_report import ProgressBars, render_bench, render_png, require_matplotlib
    from mqtool.ops import bench as ops_bench

    out = renderer(fmt, as_json, as_jsonl)
    if duration is not None and messages is not None:
        raise typer.BadParameter("give --duration or --messages, not both", param_hint="--duration")
    try:
        modes = tuple(ops_bench.parse_mode(m) for m in mode) if mode else tuple((name, {}) for name in ops_bench.POLICIES)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--mode") from None
    entries = ops_bench.directory_entries(directory)
    if entries and not force:
        raise typer.BadParameter(
            f"{directory} is not empty ({len(entries)} entries): choose an empty directory on the disk to judge, or --force",
            param_hint="--dir",
        )
    if plot is not None:
        require_matplotlib()
    options = ops_bench.BenchOptions(
        directory=directory,
        modes=modes,
        size=size,
        producers=producers,
        duration_s=None if messages is not None else (duration if duration is not None else 5.0),
        messages=messages,
        io=io.value,
        commitlog_file_size=commitlog_file_size,
        keep=keep,
        force=force,
        validate=validate,
    )
    with ProgressBars(out, len(modes)) as progress:
        report = ops_bench.run_bench(options, progress=progress)
    doc = report.to_dict()
    out.document(doc, lambda console: render_bench(console, doc, chart=not no_chart))
    if plot is not None and report.results:
        render_png(doc, plot)
        out.warn(f"plot written to {plot}")
    if report.kept:
        out.warn(f"stores kept in {report.kept}")
    if report.interrupted:
        skipped = f"; not run: {', '.join(report.not_run)}" if report.not_run else ""
        out.warn(f"interrupted: {len(report.results)} mode(s) reported{skipped}")
        return ExitCode.INTERRUPTED
    if any(r.validation is not None and not r.validation["ok"] for r in report.results):
        out.error("a written store did not validate: run with --keep and `mqtool validate` it")
        return ExitCode.FINDINGS
    return ExitCode.OK
