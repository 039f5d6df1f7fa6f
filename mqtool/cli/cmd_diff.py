"""``mqtool diff``: master vs slave, or two replicas of a partition, compared by offset."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from mqtool.cli.common import renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import FormatOpt, JsonlOpt, JsonOpt, LayoutOpt, OutputFormat, flag
from mqtool.cli.render import markup, paged, styled

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console

    from mqtool.findings import Finding

#: verdicts under which the copies agree (identical, or one a clean prefix of the other)
AGREE = frozenset({"identical", "b-prefix", "a-prefix", "prefixes"})

VERDICTS = {
    "identical": "[green]identical[/green]",
    "b-prefix": "[green]B is a clean prefix of A[/green] (B lags: normal replication lag)",
    "a-prefix": "[green]A is a clean prefix of B[/green] (A lags)",
    "prefixes": "[green]clean prefixes[/green] (some logs lag on A, some on B)",
    "only-a": "only in A",
    "only-b": "only in B",
    "diverged": "[red]DIVERGED[/red]",
    "damaged": "[red]DAMAGED[/red] (a copy holds a broken record: not a clean prefix)",
    "disjoint": "[red]no common offsets[/red] (nothing to compare)",
}


def diff(
    store_a: Annotated[Path, typer.Argument(help="The reference copy: the RocketMQ master, the Kafka leader (a store root, log dir or partition).")],
    store_b: Annotated[Path, typer.Argument(help="The other copy: the slave / follower.")],
    layout: LayoutOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
    all_rows: Annotated[bool, flag("--all", help="Detail every log compared, not only those that differ (a store of up to 20 logs always shows all).")] = False,
) -> int:
    """Compare two copies of a log by offset: the RocketMQ CommitLog of a master and its HA slave,
    two replicas of a Kafka partition (or of Jafka/MetaQ partitions).

    Reports the first divergent byte and record, records only on one side, and whether B is a
    clean prefix of A (replication lag) or the copies truly diverged. A broken record (other than
    a torn tail) is damage, never part of a clean prefix. Streaming.
    Exit 0 when identical or a clean prefix, 1 when diverged or damaged (or no offset in common),
    3 when a path is not a store or the two are of different layouts."""
    from mqtool.layouts import detect_layout
    from mqtool.ops.diff import check_same_layout, diff_stores
    from mqtool.ops.stats import input_size

    out = renderer(fmt, as_json, as_jsonl)
    layout_a = detect_layout(store_a, layout)
    layout_b = detect_layout(store_b, layout)
    check_same_layout(layout_a, layout_b, store_b)
    total = input_size(store_a, layout_a) + input_size(store_b, layout_b)  # each side is read once
    with out.progress(total, "diff") as advance:
        report = diff_stores(store_a, store_b, layout_a, progress=advance)
    doc = report.to_dict()
    found = [f for diffed in report.logs for _side, f in diffed.findings]
    out.document(doc, lambda console: paged(console, lambda c: render_diff(c, doc, found, all_rows=all_rows)))
    for log in doc["logs"]:
        for problem in log["problems"]:
            out.warn(f"{log['name']}: {problem}")
    for diffed in report.logs:  # every gap and damage met, as validate states them (CODE path:position: message)
        out.findings(f for _side, f in diffed.findings)
    return ExitCode.OK if report.ok else ExitCode.FINDINGS


def _range(side: "dict[str, Any]") -> str:
    if side.get("start") is None:
        return "empty"
    return f"[{side['start']:,}, {side['end']:,})" if side.get("end") is not None else f"from {side['start']:,}"


def _record(rec: "dict[str, Any] | None") -> str:
    if rec is None:
        return "nothing (the data ends)"
    if rec.get("missing"):  # no file holds the offset: validate's finding says why
        where = rec["file"] if rec.get("position") is None else f"{rec['file']}:{rec['position']}"
        return f"nothing: {rec['code']} {where}: {rec['error']}"
    if rec.get("finding"):  # a record that does not decode: validate's code at the wrong field
        head = {k: v for k, v in rec.items() if k not in ("code", "code_position", "error", "finding")}
        return ", ".join(f"{k}={v}" for k, v in head.items()) + f": {rec['finding']}"
    return ", ".join(f"{k}={v}" for k, v in rec.items())


def _extra(label: str, extra: "dict[str, Any] | None", unit: str) -> str | None:
    import humanize

    if not extra:
        return None
    span = f"[{extra['from']:,}, {extra['to']:,})"
    return f"{label}: {humanize.intcomma(extra['records'])} record(s), {humanize.naturalsize(extra['bytes'], binary=True)} at {unit}s {span}"


def _headline(doc: "dict[str, Any]") -> Text:
    """``IDENTICAL`` / ``CLEAN PREFIX`` / ``DIFFER at <log> <unit> <offset>``, and the verdict's words."""
    import humanize

    logs = doc["logs"]
    if doc["verdict"] == "identical":
        return Text.assemble(("IDENTICAL", "bold green"), f": {len(logs)} log(s) compared, every offset equal")
    if doc["verdict"] in AGREE:
        return Text.assemble(("CLEAN PREFIX", "bold green"), ": ", _verdict(doc["verdict"]))
    where = ""
    for log in logs:
        at = (log["divergence"] or {}).get("offset")
        if at is None and log.get("damage"):
            at = log["damage"][0]["offset"]
        if at is not None:
            where = f" at {log['name']} {log['unit']} {humanize.intcomma(at)}"
            break
    return Text.assemble(("DIFFER", "bold red"), f"{where}: ", _verdict(doc["verdict"]))


def render_diff(console: "Console", doc: "dict[str, Any]", findings: "Iterable[Finding]" = (), *, all_rows: bool = False) -> None:
    """The verdict first (``IDENTICAL`` / ``DIFFER at <log> offset ...``), the two copies; then
    what is wrong, grouped by cause; then each log compared (only those that do not agree in a
    store of more than ``ALL_ROWS_UP_TO`` logs, unless ``all_rows``)."""
    import humanize

    from mqtool.cli.render import render_findings_by_cause, rows_left_out, rows_to_show

    console.print(_headline(doc), overflow="fold")
    disagree = sum(1 for log in doc["logs"] if log["verdict"] not in AGREE)
    console.print(f"{len(doc['logs'])} {doc['layout']} log(s) compared, {disagree} not in agreement", highlight=False)
    console.print(Text(f"A={doc['a']}", style="dim"), overflow="fold")
    console.print(Text(f"B={doc['b']}", style="dim"), overflow="fold")
    found = list(findings)
    render_findings_by_cause(console, found, (str(doc["b"]), str(doc["a"])))
    logs = rows_to_show(doc["logs"], lambda log: log["verdict"] != "identical", all_rows=all_rows)
    for log in logs:
        unit = log["unit"]
        console.print(Text.assemble("\n", styled(log["name"], "bold"), ": ", _verdict(log["verdict"])))
        if log["a"] or log["b"]:
            console.print(f"  A {unit}s {_range(log['a'])}   B {unit}s {_range(log['b'])}")
        if log["compared"]:
            c = log["compared"]
            amount = f"{humanize.naturalsize(c['bytes'], binary=True)}" if "bytes" in c else f"{humanize.intcomma(c['entries'])} batches"
            console.print(f"  compared {unit}s [{c['from']:,}, {c['to']:,}): {amount} equal")
        d = log["divergence"]
        if d:
            where = f"byte {d['byte_offset']:,} (A {d['a_byte']}, B {d['b_byte']}), " if "byte_offset" in d and "a_byte" in d else ""
            console.print(markup("  [red]first divergence[/red] at {}record at {} {}", where, unit, f"{d['offset']:,}"))
            console.print(f"    A: {_record(d['a'])}")
            console.print(f"    B: {_record(d['b'])}")
        for label, key in (
            ("only in A", "only_in_a"),
            ("only in B", "only_in_b"),
            ("only in A, before B starts", "only_in_a_before_b"),
            ("only in B, before A starts", "only_in_b_before_a"),
        ):
            line = _extra(label, log[key], unit)
            if line:
                console.print(f"  {line}")
        for damage in log.get("damage") or ():
            text = markup("  [red]damaged[/red] {} at {} {}: {}", damage["side"], unit, f"{damage['offset']:,}", damage.get("finding") or damage["error"])
            console.print(text, overflow="fold")
        for note in log["notes"]:
            console.print(Text(f"  note: {note}"), overflow="fold")
    console.print()
    rows_left_out(console, len(logs), len(doc["logs"]), "logs (identical)")


def _verdict(verdict: str) -> Text:
    """The verdict's description (mqtool's markup); an unknown verdict is shown as data."""
    return Text.from_markup(VERDICTS[verdict]) if verdict in VERDICTS else Text(verdict)
