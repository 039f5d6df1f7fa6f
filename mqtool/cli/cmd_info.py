"""``mqtool info``: what a store directory is (layout, files, offsets, time ranges, shutdown)."""

from typing import TYPE_CHECKING, Annotated, Any

from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import BrokerConfigOpt, BrokerVersionOpt, FormatOpt, JsonlOpt, JsonOpt, LayoutOpt, OutputFormat, StorePathArg, flag

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from mqtool.findings import Finding
    from mqtool.ops.info.rocketmq import StoreInfo


def info(
    path: StorePathArg,
    layout: LayoutOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
    all_rows: Annotated[bool, flag("--all", help="List every queue / partition / file, not only those with something to report.")] = False,
    config: BrokerConfigOpt = None,
    broker_version: BrokerVersionOpt = None,
) -> int:
    """Describe a store: layout, version hints, files, offsets, time ranges, queues, shutdown state.

    Sizes and times are humanized in the table and raw (bytes, ms since epoch) in JSON."""
    from mqtool.cli.common import renderer
    from mqtool.cli.render import paged
    from mqtool.layouts import Layout, detect_layout
    from mqtool.ops.info import store_info

    out = renderer(fmt, as_json, as_jsonl)
    detected = detect_layout(path, layout)
    # only what was given: the broker.conf reader (and its Java properties parser) loads for --config alone
    options: dict[str, object] = {}
    if detected is Layout.ROCKETMQ:
        if config is not None:
            from mqtool.cli.common import broker_settings

            options.update(version_hints=broker_settings(config).version_hints, config_path=str(config))
        if broker_version is not None:
            options["broker_version"] = broker_version
    elif detected is Layout.KAFKA and config is None:
        if broker_version is not None:  # the Kafka whose restart the preview models
            options["broker_version"] = broker_version
    elif config is not None or broker_version is not None:
        import typer

        raise typer.BadParameter(f"--config models a RocketMQ broker and --broker-version a RocketMQ or Kafka one, not a {detected} store's")
    result = store_info(path, detected, **options)
    doc = result.to_dict()  # type: ignore[attr-defined]
    rocketmq = _rocketmq_info(result) if detected is Layout.ROCKETMQ else None
    if rocketmq is not None:
        out.document(doc, lambda console: paged(console, lambda c: render_info(c, rocketmq, all_rows=all_rows)))
    else:
        out.document(doc, lambda console: paged(console, lambda c: render_other(c, doc, all_rows=all_rows)))
    for problem in doc.get("problems", []):
        out.warn(str(problem))
    if rocketmq is not None:
        # every gap and damage on info's path, with validate's code and position (a torn tail is
        # a warning: exit 0, as in validate)
        out.findings(rocketmq.findings)
    else:
        for error in doc.get("errors", []):  # damaged data met where info reads
            out.error(str(error))
    return ExitCode.FINDINGS if doc.get("errors") else ExitCode.OK


def _restart_rows(facts: Any, restart: dict[str, Any]) -> None:
    """The restart preview: the broker modelled, where its recovery starts, what it scans and drops."""
    import humanize

    more = f"; {', '.join(restart['evidence'])}" if restart.get("evidence") else ""
    facts.add_row("broker modelled", f"RocketMQ {restart['broker_version']} ({restart['source']}{more})")
    start = restart["starts_at"]
    seconds = restart.get("estimated_seconds")
    # the measured speed itself is in the JSON: it changes from run to run
    took = "" if seconds is None else (" (under a second" if seconds < 1 else f" (about {humanize.naturaldelta(seconds)}") + " at this disk's read speed)"
    facts.add_row(
        "restart",
        f"{restart['recovery']} recovery from {start['file'] or '-'} (commitlog offset {start['commitlog_offset']}), "
        f"scans {humanize.naturalsize(restart['scan_bytes'], binary=True)} to {restart['valid_end']}{took}",
    )
    drops = restart["drops"]
    dropped = (
        "nothing"
        if not drops["bytes"]
        else (
            f"{humanize.naturalsize(drops['bytes'], binary=True)}, {drops['records']} decodable record(s)"
            + (f", {len(drops['files_deleted'])} file(s) deleted" if drops["files_deleted"] else "")
        )
    )
    facts.add_row("restart drops", dropped)
    rebuilds = restart["rebuilds"]
    redo = []
    if rebuilds["dispatch_bytes"]:
        redo.append(f"dispatches {humanize.naturalsize(rebuilds['dispatch_bytes'], binary=True)} from commitlog offset {rebuilds['dispatch_from_commitlog_offset']}")
    if rebuilds["index_files_destroyed"]:
        redo.append(f"destroys {len(rebuilds['index_files_destroyed'])} IndexFile(s) and re-indexes what it re-dispatches")
    if redo:
        facts.add_row("restart rebuilds", "; ".join(redo))
    if restart["refuses_to_start"]:
        facts.add_row("restart refused", f"{len(restart['refuses_to_start'])} CommitLog file(s) of the wrong size (MappedFileQueue.load)")


def _kafka_restart(console: "Console", restart: dict[str, Any]) -> None:
    """Kafka's restart preview: the broker modelled, what its recovery reads, where, and what it drops."""
    import humanize
    from rich.table import Table

    facts = Table(show_header=False, box=None, pad_edge=False)
    facts.add_column(style="bold")
    facts.add_column()
    more = f"; {', '.join(restart['evidence'])}" if restart.get("evidence") else ""
    facts.add_row("broker modelled", f"Kafka {restart['broker_version']} ({restart['source']}{more})")
    seconds = restart.get("estimated_seconds")
    took = "" if seconds is None else (" (under a second" if seconds < 1 else f" (about {humanize.naturaldelta(seconds)}") + " at this disk's read speed)"
    recovered = restart["rebuilds"]["segments_recovered"]
    facts.add_row(
        "restart",
        f"{restart['recovery']} recovery: reads {humanize.naturalsize(restart['scan_bytes'], binary=True)} of .log in {len(recovered)} segment recovery(ies){took}",
    )
    starts = [s for s in restart["starts_at"] if s["file"]]
    if starts:
        shown = ", ".join(f"{s['file']} (recovery point {s['recovery_point']})" for s in starts[:4]) + (f" and {len(starts) - 4} more" if len(starts) > 4 else "")
        facts.add_row("restart starts at", shown)
    drops = restart["drops"]
    dropped = (
        "nothing"
        if not drops["bytes"]
        else (
            f"{humanize.naturalsize(drops['bytes'], binary=True)}, {drops['records']} record(s)"
            + (f", {len(drops['files_deleted'])} segment(s) deleted" if drops["files_deleted"] else "")
        )
    )
    facts.add_row("restart drops", dropped)
    console.print(facts)
    console.print()


def _rocketmq_info(result: object) -> "StoreInfo | None":
    """``result`` as the RocketMQ report (its module is loaded only for a RocketMQ store)."""
    from mqtool.ops.info.rocketmq import StoreInfo

    return result if isinstance(result, StoreInfo) else None


def _span(first: int | None, last: int | None) -> str:
    from mqtool.cli.times import iso_ms

    if first is None:
        return "-"
    return f"{iso_ms(first)} .. {iso_ms(last)}"


def _verdict(console: "Console", layout: str, findings: "list[Finding]", problems: list[Any], ends: list[str | None], counts: str) -> None:
    """The first line: HEALTHY / WARNINGS / DAMAGED as the store model read the store on info's
    path (its findings, problems and how each log ends), then the counts."""
    from rich.text import Text

    from mqtool.cli.render import HEALTHY_ENDS

    errors = sum(1 for f in findings if f.level.value == "error")
    warnings = sum(1 for f in findings if f.level.value == "warning")
    unhealthy = sum(1 for e in ends if e not in HEALTHY_ENDS)
    if errors:
        word, style = "DAMAGED", "bold red"
    elif warnings or problems or unhealthy:
        word, style = "WARNINGS", "bold yellow"
    else:
        word, style = "HEALTHY", "bold green"
    said = f"{errors} error(s), {warnings} warning(s)" + (f", {len(problems)} problem(s)" if problems else "")
    said += f", {unhealthy} log(s) not ending cleanly" if unhealthy else ""
    console.print(Text.assemble((word, style), f": {said}; {layout} store"), overflow="fold")
    console.print(counts, highlight=False)
    console.print(Text("as read on info's path; `mqtool validate` checks every byte", style="dim"))


def _mentions(findings: "list[Finding]", *parts: str) -> bool:
    """Whether a finding's path lies under the store path made of ``parts``."""
    needle = "/" + "/".join(parts)
    return any(needle + "/" in f.path or f.path.endswith(needle) for f in findings)


def _timer_row(facts: "Table", t: dict[str, Any]) -> None:
    """One line on the 5.x timer store: the TimerLog's size, the wheel, how far the dequeue read."""
    import humanize

    from mqtool.cli.times import iso_ms

    parts = [f"timerlog {t['timerlog_files']} file(s), {humanize.naturalsize(t['timerlog_bytes'], binary=True)}"]
    parts.append("wheel " + (humanize.naturalsize(t["wheel_bytes"], binary=True) if t["wheel_bytes"] is not None else "missing"))
    cp = t["checkpoint"]
    parts.append(f"read up to {iso_ms(cp['last_read_time_ms'])}" if cp else "no timercheck")
    if t["metrics_topics"] is not None:
        parts.append(f"{t['metrics_topics']} topic(s) in timermetrics")
    facts.add_row("timer store", ", ".join(parts))


def render_info(console: "Console", r: "StoreInfo", *, all_rows: bool = False) -> None:
    """The verdict and counts; what is wrong, grouped by cause; the store's facts; then the
    queues and index files (only those with something to report in a large store, unless
    ``all_rows``)."""
    import humanize
    from rich.table import Table

    from mqtool.cli.render import fit_table, render_findings_by_cause, rows_left_out, rows_to_show
    from mqtool.cli.times import iso_ms

    cl = r.commitlog
    # the messages the broker serves after its next start: the units that point past the
    # CommitLog's valid end are cut then (as ``stats`` counts the records before it)
    past = sum(q.units_past_end for q in r.queues)
    messages = sum(q.log_end_offset - q.log_start_offset for q in r.queues) - past
    topics = len({q.topic for q in r.queues})
    counts = (
        f"{cl.files + sum(q.files for q in r.queues) + len(r.index_files)} files, "
        f"{humanize.naturalsize(cl.bytes_on_disk, binary=True)} of CommitLog, {topics} topic(s), {len(r.queues)} queue(s), "
        f"{humanize.intcomma(messages)} message(s)" + (f" ({humanize.intcomma(past)} more queued past the CommitLog's valid end)" if past else "")
    )
    _verdict(console, r.layout, list(r.findings), list(r.problems), [cl.end_kind], counts)
    render_findings_by_cause(console, r.findings, r.root)
    console.print()
    facts = Table(show_header=False, box=None, pad_edge=False)
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("layout", r.layout)
    facts.add_row("root", r.root)
    facts.add_row("version hints", "; ".join(r.version_hints) or "none (any 4.x/5.x)")
    shutdown = r.shutdown + (f", broker pid {r.abort_pid}" if r.abort_pid else "")
    facts.add_row("last shutdown", shutdown)
    facts.add_row("broker lock", f"held by pid {r.broker_lock_pid}" if r.broker_lock_pid is not None else "free")
    size = humanize.naturalsize(cl.file_size, binary=True) if cl.file_size else "-"
    facts.add_row("commitlog", f"{cl.files} files of {size}, {humanize.naturalsize(cl.bytes_on_disk, binary=True)} on disk")
    facts.add_row("commitlog offsets", f"{cl.log_start_offset} .. {cl.log_end_offset} (data ends with: {cl.end_kind or '-'})")
    facts.add_row("store times", _span(cl.first_store_timestamp, cl.last_store_timestamp))
    if cl.zero_length_files:
        facts.add_row("zero-length files", ", ".join(cl.zero_length_files))
    if cl.preallocated_files:
        facts.add_row("pre-allocated files", ", ".join(cl.preallocated_files))
    if r.checkpoint:
        cp = r.checkpoint
        facts.add_row(
            "checkpoint",
            f"physic {iso_ms(cp['physic_msg_timestamp'])}, logics {iso_ms(cp['logics_msg_timestamp'])}, index {iso_ms(cp['index_msg_timestamp'])}",
        )
    facts.add_row("config", ", ".join(r.config_files) or "-")
    if r.topics_in_config is not None:
        facts.add_row("topics (config)", str(r.topics_in_config))
    if r.consumer_groups is not None:
        facts.add_row("consumer groups", str(r.consumer_groups))
    if r.restart:
        _restart_rows(facts, r.restart)
    if r.timer:
        _timer_row(facts, r.timer)
    console.print(facts)
    findings = list(r.findings)
    queues = rows_to_show(r.queues, lambda q: _mentions(findings, "consumequeue", q.topic, str(q.queue_id)), all_rows=all_rows)
    if queues:
        rows = [
            [q.topic, str(q.queue_id), str(q.files), str(q.log_start_offset), str(q.log_end_offset), humanize.intcomma(q.log_end_offset - q.log_start_offset)]
            for q in queues
        ]
        fit_table(console, "consume queues", ["topic", "queue", "files", "log start offset", "log end offset", "messages"], rows, justify=["left"] + ["right"] * 5)
    rows_left_out(console, len(queues), len(r.queues), "consume queues")
    index_files = rows_to_show(r.index_files, lambda i: bool(i.error) or _mentions(findings, "index", i.name), all_rows=all_rows)
    rows_left_out(console, len(index_files), len(r.index_files), "index files")
    if index_files:
        rows = []
        for i in index_files:
            if i.error:
                rows.append([i.name, humanize.naturalsize(i.size, binary=True), "-", "-", "-", "-", "-"])
            else:
                rows.append(
                    [
                        i.name,
                        humanize.naturalsize(i.size, binary=True),
                        humanize.intcomma(max((i.index_count or 1) - 1, 0)),
                        str(i.begin_commitlog_offset),
                        str(i.end_commitlog_offset),
                        iso_ms(i.begin_timestamp) or "-",
                        iso_ms(i.end_timestamp) or "-",
                    ]
                )
        headers = ["file", "size", "entries", "first offset", "last offset", "first time", "last time"]
        fit_table(console, "index files", headers, rows, justify=["left", "right", "right", "right", "right", "left", "left"])
        for i in index_files:
            if i.error:
                console.print(f"{i.name}: {i.error}", overflow="fold", highlight=False)


def render_other(console: "Console", doc: dict[str, Any], *, all_rows: bool = False) -> None:
    """Kafka, Jafka and MetaQ: the verdict and counts, what is wrong grouped by cause, then the
    document (``render_generic``) with its partition lists cut to the partitions with something
    to report in a large store, unless ``all_rows``."""
    import humanize

    from mqtool.cli.render import HEALTHY_ENDS, finding_from_dict, render_findings_by_cause, render_generic, rows_left_out, rows_to_show
    from mqtool.layouts import describe

    findings = [finding_from_dict(f) for f in doc.get("findings", [])]
    parts = [p for p in doc.get("partitions", []) if isinstance(p, dict)]
    if doc["layout"] == "kafka":
        tot = doc.get("totals", {})
        messages = sum((p.get("log_end_offset") or 0) - (p.get("log_start_offset") or 0) for p in parts)
        counts = (
            f"{tot.get('segments', 0)} segment(s), {humanize.naturalsize(tot.get('log_bytes', 0), binary=True)} of log, "
            f"{len({p['topic'] for p in parts})} topic(s), {tot.get('partitions', len(parts))} partition(s), "
            f"{humanize.intcomma(messages)} message(s)"
        )
    else:
        counts = (
            f"{doc.get('segments', 0)} segment(s), {humanize.naturalsize(doc.get('bytes_on_disk', 0), binary=True)}, "
            f"{doc.get('topics', 0)} topic(s), {len(parts)} partition(s)"
        )
    _verdict(console, describe(doc["layout"], doc.get("variant")), findings, list(doc.get("problems", [])), [p.get("end_kind") for p in parts], counts)
    render_findings_by_cause(console, findings, str(doc.get("root", "")))
    console.print()
    if doc.get("restart"):
        _kafka_restart(console, doc["restart"])

    def partition_name(p: dict[str, Any]) -> str:
        return str(p.get("directory") or "")

    def interesting(p: dict[str, Any]) -> bool:
        return p.get("end_kind") not in HEALTHY_ENDS or bool(p.get("zero_length_files")) or _mentions(findings, partition_name(p))

    shown = rows_to_show(parts, interesting, all_rows=all_rows)
    keep = {partition_name(p) for p in shown}
    trimmed = dict(doc)
    trimmed.pop("restart", None)  # rendered above
    trimmed["partitions"] = shown
    if "partition_details" in doc:
        trimmed["partition_details"] = [p for p in doc["partition_details"] if partition_name(p) in keep]
    if doc["layout"] == "kafka":  # the directory name says topic and partition: no columns repeating it
        for key in ("partitions", "partition_details"):
            if key in trimmed:
                trimmed[key] = [{k: v for k, v in p.items() if k not in ("topic", "partition")} for p in trimmed[key]]
    render_generic(console, trimmed)
    rows_left_out(console, len(shown), len(parts), "partitions")
