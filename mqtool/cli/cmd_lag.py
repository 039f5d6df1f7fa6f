"""``mqtool lag``: each consumer group's lag per topic and queue (partition), offline."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import JsonlOpt, JsonOpt, LayoutOpt, MetricsFileOpt, MetricsFormat, MetricsFormatOpt

if TYPE_CHECKING:
    from rich.console import Console


def lag(
    path: Annotated[Path, typer.Argument(help="A RocketMQ store root or a Kafka log dir.")],
    layout: LayoutOpt = None,
    fmt: MetricsFormatOpt = MetricsFormat.table,
    metrics_file: MetricsFileOpt = None,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Consumer lag per group, topic and queue (partition), with no broker: committed offset, log
    end offset, lag in messages and bytes, and the store time of the oldest unconsumed message.

    RocketMQ: config/consumerOffset.json against the ConsumeQueues (as mqadmin consumerProgress);
    Kafka: __consumer_offsets against the partitions (as kafka-consumer-groups --describe).
    Exit 0, or 1 when the offsets or the data lag reads are damaged (named with validate's code)
    or a group's offset is ahead of its queue."""
    from mqtool.cli.common import metrics_renderer, pick_format, report_metrics
    from mqtool.layouts import detect_layout
    from mqtool.ops.lag import store_lag

    chosen = pick_format(fmt, as_json, as_jsonl)
    out, as_metrics = metrics_renderer(fmt, as_json, as_jsonl)
    report = store_lag(path, detect_layout(path, layout))
    doc = report.to_dict()
    if as_metrics:
        pass
    elif chosen is MetricsFormat.jsonl:
        out.stream(doc["lag"], [])
    else:
        out.document(doc, lambda console: render_lag(console, doc))
    errors = out.findings(report.findings)
    code = ExitCode.FINDINGS if errors else ExitCode.OK
    report_metrics("lag", doc, code, to_stdout=as_metrics, metrics_file=metrics_file)
    return code


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        from mqtool.cli.times import iso_ms

        return iso_ms(ms, timespec="seconds") or "-"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def render_lag(console: "Console", doc: dict[str, Any]) -> None:
    import humanize
    from rich import box
    from rich.table import Table

    from mqtool.cli.render import markup

    rows, totals = doc["lag"], doc["totals"]
    # an unknown lag (a queue not in the store) is said so, never counted as 0
    known = [t for t in totals if t["lag_messages"] is not None]
    behind = sum(t["lag_messages"] for t in known)
    size = sum(t["lag_bytes"] or 0 for t in known)
    unknown = sum(t.get("unknown_queues", 0) for t in totals)
    oldest = min((t["oldest_unconsumed_timestamp"] for t in totals if t["oldest_unconsumed_timestamp"] is not None), default=None)
    groups = len({r["group"] for r in rows})
    if doc["offsets_from"] is None:
        console.print("no consumer offsets in this store")
        return
    if known:
        head = f"{groups} group(s), {behind:,} message(s) behind ({humanize.naturalsize(size, binary=True)})"
        if unknown:
            head += f"; lag unknown for {unknown} queue(s)"
    else:
        head = f"{groups} group(s), lag unknown: none of their {unknown} queue(s) is in the store"
    if oldest is not None:
        head += f", oldest unconsumed {_time(oldest)}"
    expired = sum(t["expired_messages"] for t in totals)
    if expired:
        head += f"; {expired:,} expired unconsumed"
    console.print(head, highlight=False)
    if doc["layout"] == "kafka":
        console.print("end: the log end offset on disk; bytes: from the batch holding the first unconsumed record", style="dim")
    queue = "partition" if doc["layout"] == "kafka" else "queue_id"
    # a section per group and topic (names whole on their own line), a narrow table of its queues
    for t in totals:
        console.print()
        if t["lag_messages"] is None:
            console.print(markup("[bold]{}[/bold] on [bold]{}[/bold]: lag unknown (no queue of it in the store)", t["group"], t["topic"]))
        else:
            size = humanize.naturalsize(t["lag_bytes"] or 0, binary=True)
            more = f"; lag unknown for {t['unknown_queues']} queue(s)" if t.get("unknown_queues") else ""
            console.print(markup("[bold]{}[/bold] on [bold]{}[/bold]: {} behind ({}){}", t["group"], t["topic"], f"{t['lag_messages']:,}", size, more))
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        table.add_column("partition" if queue == "partition" else "queue", justify="right", no_wrap=True)
        for name in ("committed", "end", "lag", "bytes"):
            table.add_column(name, justify="right", no_wrap=True)
        table.add_column("oldest unconsumed", no_wrap=True)
        for r in rows:
            if (r["group"], r["topic"]) != (t["group"], t["topic"]):
                continue
            table.add_row(
                str(r[queue]),
                str(r["committed_offset"]),
                "-" if r["log_end_offset"] is None else str(r["log_end_offset"]),
                "-" if r["lag_messages"] is None else f"{r['lag_messages']:,}",
                "-" if r["lag_bytes"] is None else humanize.naturalsize(r["lag_bytes"], binary=True, format="%.0f"),
                r["note"] or _time(r["oldest_unconsumed_timestamp"]),
            )
        console.print(table)
