"""``mqtool dump timerlog|timerwheel|timercheck|timermetrics``: the RocketMQ 5.x timer store's files."""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqtool.cli.common import finish_dump, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import ColumnsOpt, FormatOpt, JsonlOpt, JsonOpt, LimitOpt, OutputFormat
from mqtool.cli.render import Column, markup, render_generic, styled
from mqtool.cli.times import iso_ms

if TYPE_CHECKING:
    from rich.console import Console

TimerConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", metavar="<path>", help="The broker's broker.conf: its timerPrecisionMs is the slot width (else 1000 ms)."),
]
TimerPathArg = Annotated[Path, typer.Argument(help="A store root, or the timer file (timerlog/: the directory or one file).")]

TIMERLOG_COLUMNS = [
    Column("timerlog_offset", "OFFSET", 12, ">"),
    Column("prev_pos", "PREV", 12, ">"),
    Column("kind", "KIND", 7),
    Column("delayed", "DUE", 29),
    Column("write", "ENQUEUED", 29),
    Column("commitlog_offset", "COMMITLOG OFFSET", 16, ">"),
    Column("size", "SIZE", 7, ">"),
    Column("hash_topic", "TOPIC HASH", 11, ">"),
]


def _kind(row: dict[str, Any]) -> str:
    return "delete" if row["delete"] else "roll" if row["roll"] else "timer"


def dump_timerlog(
    path: TimerPathArg,
    limit: LimitOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
) -> int:
    """TimerLog units (5.x timer store): previous unit of the slot, magic, due time, and the CommitLog record each one holds."""
    from mqtool.cli.common import choose_columns
    from mqtool.ops.dump import timer as ops

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    engine = ops.TimerLogDump(path, limit)
    table = out.fmt is OutputFormat.table

    def rows() -> Iterator[dict[str, Any]]:
        for at in engine:
            row = ops.unit_row(at)
            if table:
                row.update(kind=_kind(row), delayed=iso_ms(row["delayed_time"]), write=iso_ms(row["curr_write_time"]))
            yield row

    out.stream(rows(), TIMERLOG_COLUMNS)
    # validate's findings (code, file, position) for the files walked: a unit recovery refuses, a
    # BLANK of the wrong size, a file ending without one, garbage, names and sizes
    return finish_dump(out, [], extra_failures=out.findings(engine.findings))


WHEEL_COLUMNS = [
    Column("slot", "SLOT", 8, ">"),
    Column("due", "DUE", 29),
    Column("first_pos", "FIRST", 12, ">"),
    Column("last_pos", "LAST", 12, ">"),
    Column("num", "NUM", 7, ">"),
    Column("magic", "MAGIC", 6, ">"),
]


def dump_timerwheel(
    path: TimerPathArg,
    limit: LimitOpt = None,
    config: TimerConfigOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
) -> int:
    """The timer wheel's used slots (5.x): delivery time, first and last TimerLog unit, count (slots of timerPrecisionMs from --config, else 1000 ms)."""
    from mqtool.cli.common import broker_settings, choose_columns
    from mqtool.ops.dump import timer as ops

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    precision_ms = broker_settings(config).timer_precision_ms or ops.DEFAULT_PRECISION_MS
    engine = ops.WheelDump(path, limit)
    table = out.fmt is OutputFormat.table

    def rows() -> Iterator[dict[str, Any]]:
        for at in engine:
            assert engine.file is not None
            row = ops.slot_row(engine.file, at, precision_ms)
            if table:
                row["due"] = iso_ms(row["time_ms"])
            yield row

    out.stream(rows(), WHEEL_COLUMNS)
    return finish_dump(out, [], extra_failures=out.findings(engine.findings))


def dump_timercheck(
    path: TimerPathArg,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """config/timercheck (5.x TimerCheckpoint): how far the timer dequeue read, the TimerLog flushed, the timer queue enqueued."""
    from mqtool.ops.dump import timer as ops

    out = renderer(fmt, as_json, as_jsonl)
    doc = ops.timercheck_document(path)

    def table(console: "Console") -> None:
        for k, v in doc.items():
            shown = f"{v}  ({iso_ms(v)})" if k in ("last_read_time_ms", "data_version_timestamp") and v is not None else v
            console.print(markup("[bold]{}[/bold] {}", f"{k:<27}", shown))

    out.document(doc, table)
    return ExitCode.OK


def dump_timermetrics(
    path: TimerPathArg,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """config/timermetrics (5.x TimerMetrics): timer messages counted per real topic, and the data version."""
    from mqtool.ops.dump import timer as ops

    out = renderer(fmt, as_json, as_jsonl)
    doc = ops.timermetrics_document(path)

    def table(console: "Console") -> None:
        console.print(styled(doc["file"], "bold"))
        render_generic(console, {k: v for k, v in doc.items() if k != "file"})

    out.document(doc, table)
    return ExitCode.OK
