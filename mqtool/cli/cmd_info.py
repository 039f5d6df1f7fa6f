"""``mqtool info``: what a store directory is (layout, files, offsets, time ranges, shutdown)."""

from typing import TYPE_CHECKING

from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import FormatOpt, JsonlOpt, JsonOpt, LayoutOpt, OutputFormat, StorePathArg

if TYPE_CHECKING:
    from rich.console import Console

    from mqtool.ops.info.rocketmq import StoreInfo


def info(
    path: StorePathArg,
    layout: LayoutOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Describe a store: layout, version hints, files, offsets, time ranges, queues, shutdown state.

    Sizes and times are humanized in the table and raw (bytes, ms since epoch) in JSON."""
    from mqtool.cli.common import renderer
    from mqtool.cli.render import render_generic
    from mqtool.layouts import Layout, detect_layout
    from mqtool.ops.info import store_info

    out = renderer(fmt, as_json, as_jsonl)
    detected = detect_layout(path, layout)
    result = store_info(path, detected)
    doc = result.to_dict()  # type: ignore[attr-defined]
    rocketmq = _rocketmq_info(result) if detected is Layout.ROCKETMQ else None
    if rocketmq is not None:
        out.document(doc, lambda console: render_info(console, rocketmq))
    else:
        out.document(doc, lambda console: render_generic(console, doc))
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


def _rocketmq_info(result: object) -> "StoreInfo | None":
    """``result`` as the RocketMQ report (its module is loaded only for a RocketMQ store)."""
    from mqtool.ops.info.rocketmq import StoreInfo

    return result if isinstance(result, StoreInfo) else None


def _span(first: int | None, last: int | None) -> str:
    from mqtool.cli.times import iso_ms

    if first is None:
        return "-"
    return f"{iso_ms(first)} .. {iso_ms(last)}"


def render_info(console: "Console", r: "StoreInfo") -> None:
    import humanize
    from rich.table import Table

    from mqtool.cli.render import fit_table
    from mqtool.cli.times import iso_ms

    cl = r.commitlog
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
    console.print(facts)
    if r.queues:
        rows = [
            [q.topic, str(q.queue_id), str(q.files), str(q.log_start_offset), str(q.log_end_offset), humanize.intcomma(q.log_end_offset - q.log_start_offset)]
            for q in r.queues
        ]
        fit_table(console, "consume queues", ["topic", "queue", "files", "min offset", "max offset", "messages"], rows, justify=["left"] + ["right"] * 5)
    if r.index_files:
        rows = []
        for i in r.index_files:
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
        for i in r.index_files:
            if i.error:
                console.print(f"{i.name}: {i.error}", overflow="fold", highlight=False)
