"""``mqtool stats``: per topic/queue (or partition) numbers and a disk forecast."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqtool.cli.common import broker_settings, metrics_renderer, report_metrics
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import FLOAT, INT, BrokerConfigOpt, JsonlOpt, JsonOpt, LayoutOpt, MetricsFileOpt, MetricsFormat, MetricsFormatOpt, StorePathArg, flag
from mqtool.cli.render import markup

if TYPE_CHECKING:
    from collections.abc import Iterable, Set

    from rich.console import Console

    from mqtool.findings import Finding


def stats(
    path: StorePathArg,
    layout: LayoutOpt = None,
    top: Annotated[int, typer.Option("--top", min=0, metavar=INT, help="How many of the largest messages to list.")] = 10,
    threshold: Annotated[
        float | None,
        typer.Option("--threshold", min=1, max=100, metavar=FLOAT, help="Disk used percent to forecast (default: RocketMQ 75, others 100)."),
    ] = None,
    config: BrokerConfigOpt = None,
    no_crc: Annotated[bool, flag("--no-crc", help="Do not verify checksums while reading (faster).")] = False,
    fmt: MetricsFormatOpt = MetricsFormat.table,
    metrics_file: MetricsFileOpt = None,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
    all_rows: Annotated[bool, flag("--all", help="List every queue / partition and topic, not only those with something to report.")] = False,
) -> int:
    """Messages, bytes, first/last store time, write rate, largest messages and distinct tags/keys
    (HyperLogLog estimate, 1.6 % standard error) per topic/queue or partition; disk usage and when
    the disk reaches the clean threshold at the last 24 h write rate.

    One streaming pass, flat memory. Exit 0, or 1 when a gap or damaged data is met (named with
    validate's code and position; a torn tail is a warning, exit 0)."""
    from mqtool.findings import Severity
    from mqtool.layouts import detect_layout
    from mqtool.ops.stats import StatsOptions, input_size, store_stats

    out, as_metrics = metrics_renderer(fmt, as_json, as_jsonl)
    detected = detect_layout(path, layout)
    if threshold is None and detected == "rocketmq":
        ratio = broker_settings(config).disk_max_used_ratio
        threshold = float(ratio) if ratio is not None else None
    options = StatsOptions(top=top, threshold=threshold / 100 if threshold is not None else None, check_crc=not no_crc)
    with out.progress(input_size(path, detected), "stats") as advance:
        result = store_stats(path, detected, options, progress=advance)
    doc = result.to_dict()
    if not as_metrics:
        from mqtool.cli.render import paged

        out.document(doc, lambda console: paged(console, lambda c: render_stats(c, doc, result.findings, all_rows=all_rows)))
    for problem in doc["problems"]:  # RocketMQ's error findings among them, as CODE path:position: message
        out.error(problem)
    out.findings(f for f in result.findings if f.level is Severity.warning)  # a torn tail: exit 0, as validate
    code = ExitCode.FINDINGS if doc["problems"] else ExitCode.OK
    report_metrics("stats", doc, code, to_stdout=as_metrics, metrics_file=metrics_file)
    return code


def _time(ms: int | None, *, short: bool = False) -> str:
    if ms is None:
        return "-"
    try:
        from mqtool.cli.times import iso_ms

        return iso_ms(ms, timespec="minutes" if short else "seconds") or "-"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _timer_text(timer: "dict[str, Any]") -> str:
    """The 5.x timer store's pending messages in one line: how many, when due, by due time ahead."""
    import humanize

    spans = []
    low = 0
    for bucket in timer["by_due"]:
        limit = bucket["due_within_s"]
        if bucket["count"]:
            span = f">= {humanize.naturaldelta(low)}" if limit is None else f"< {humanize.naturaldelta(limit)}"
            spans.append(f"{span}: {humanize.intcomma(bucket['count'])}")
        low = limit or low
    due = f", due {_time(timer['first_due_ms'])} .. {_time(timer['last_due_ms'])}" if timer["pending"] else ""
    ahead = f" ({'; '.join(spans)} after {_time(timer['read_time_ms'])})" if spans else ""
    deletes = f", {humanize.intcomma(timer['deletes'])} delete mark(s)" if timer["deletes"] else ""
    return f"timer messages: {humanize.intcomma(timer['pending'])} pending{due}{ahead}{deletes}"


def _size(n: int | float | None) -> str:
    import humanize

    if n is None:
        return "-"
    return f"{n:.0f} B" if n < 1024 else humanize.naturalsize(n, binary=True)


def _rate(v: float | None) -> str:
    import humanize

    if v is None:
        return "-"
    return f"{v:,.1f}" if v < 100 else humanize.intcomma(round(v))


def _print_table(console: "Console", title: str, headers: list[str], rows: list[list[str]], left: "Set[str]" = frozenset()) -> None:
    """``fit_table``: names and numbers whole; the first column left-aligned, numbers right."""
    from mqtool.cli.render import fit_table

    fit_table(console, title, headers, rows, justify=["left"] + ["left" if h in left else "right" for h in headers[1:]])


def render_stats(console: "Console", doc: "dict[str, Any]", findings: "Iterable[Finding]" = (), *, all_rows: bool = False) -> None:
    """The verdict (OK / DAMAGED and the findings count), the totals and the disk forecast first;
    what is wrong, grouped by cause; then the per-queue (per-partition) and per-topic tables --
    only the rows with findings in a large store, unless ``all_rows`` -- and the largest messages."""
    import humanize
    from rich.text import Text

    from mqtool.cli.render import render_findings_by_cause, rows_left_out, rows_to_show

    found = list(findings)
    errors = sum(1 for f in found if f.level.value == "error")
    warnings = sum(1 for f in found if f.level.value == "warning")
    queue_key = "queue_id" if doc["layout"] == "rocketmq" else "partition"
    tot = doc["totals"]
    word, style = ("DAMAGED", "bold red") if errors or doc["problems"] else ("WARNINGS", "bold yellow") if warnings else ("OK", "bold green")
    console.print(Text.assemble((word, style), f": {errors} error(s), {warnings} warning(s) met while reading; {doc['layout']} store"))
    console.print(Text(str(doc["root"]), style="dim"), overflow="fold")
    console.print(
        f"{len(doc['topics'])} topic(s), {tot['queues']} {'queue(s)' if queue_key == 'queue_id' else 'partition(s)'}, "
        f"{humanize.intcomma(tot['messages'])} message(s)"
        + (f" ({humanize.intcomma(tot['damaged_messages'])} damaged)" if tot.get("damaged_messages") else "")
        + f", {_size(tot['bytes'])}",
        highlight=False,
    )
    console.print(f"{_time(tot['first_timestamp'])} .. {_time(tot['last_timestamp'])} ({doc['time_source']})", highlight=False)
    if doc.get("timer"):
        console.print(_timer_text(doc["timer"]), highlight=False)
    d = doc["disk"]
    if d["forecast"]:
        console.print(markup("[bold]forecast:[/bold] {}", d["forecast"]))
    render_findings_by_cause(console, found, doc["root"])
    console.print()

    def has_findings(name: str) -> bool:
        return any(f"/{name}/" in f.path or f.path.endswith(f"/{name}") for f in found)

    units = rows_to_show(doc["units"], lambda u: has_findings(str(u["name"])), all_rows=all_rows)
    doc_units = doc["units"]
    sep = "/" if queue_key == "queue_id" else "-"
    doc = {**doc, "units": units}
    unit_col = "queue" if queue_key == "queue_id" else "partition"
    rows = [
        [
            u["name"],
            humanize.intcomma(u["messages"]),
            _size(u["bytes"]),
            _rate(u["messages_per_s"]),
            _size(u["bytes_per_s"]),
            _size(u["max_message_size"]),
            humanize.intcomma(u["tags_estimate"]),
            humanize.intcomma(u["keys_estimate"]),
        ]
        for u in doc["units"]
    ]
    rows_left_out(console, len(units), len(doc_units), "queues" if queue_key == "queue_id" else "partitions")
    _print_table(
        console, "per queue" if queue_key == "queue_id" else "per partition", [unit_col, "messages", "bytes", "msg/s", "bytes/s", "largest", "tags~", "keys~"], rows
    )
    rows = [
        [
            str(t["topic"]),
            str(t["queues"]),
            humanize.intcomma(t["messages"]),
            _size(t["bytes"]),
            _time(t["first_timestamp"], short=True),
            _time(t["last_timestamp"], short=True),
        ]
        for t in rows_to_show(doc["topics"], lambda t: any(str(u["name"]).rsplit(sep, 1)[0] == str(t["topic"]) for u in units), all_rows=all_rows)
    ]
    _print_table(console, "per topic", ["topic", "queues" if queue_key == "queue_id" else "parts", "messages", "bytes", "first", "last"], rows, left={"first", "last"})
    if doc["largest"]:
        rows = [[_size(m["size"]), m["name"], str(m["offset"]), _time(m["timestamp"])] for m in doc["largest"]]
        headers = ["size", "queue" if queue_key == "queue_id" else "partition", "offset", "time"]
        _print_table(console, "largest messages", headers, rows, left={"queue", "partition", "time"})
    console.print(f"store files: {_size(d['store_bytes'])} ({_size(d['store_allocated_bytes'])} allocated)")
    if d["filesystem_total"] is not None:
        console.print(
            f"file system: {d['used_ratio']:.0%} used, {_size(d['filesystem_available'])} available of {_size(d['filesystem_total'])}; "
            f"last 24 h of data: {_size(d['last_24h_bytes'])} written" + (f" ({_size(d['write_rate_bytes_per_hour'])}/h)" if d["write_rate_bytes_per_hour"] else "")
        )
    card = doc["cardinality"]
    console.print(f"tags~/keys~: distinct values estimated by {card['estimator']} ({card['relative_standard_error']:.1%} standard error)")
