"""``mqtool info``: what a store directory is (layout, files, offsets, time ranges, shutdown)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import humanize
import typer
from rich.console import Console
from rich.table import Table

from mqtool.cli.app import app
from mqtool.cli.common import FormatOpt, JsonlOpt, JsonOpt, LayoutOpt, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.render import OutputFormat
from mqtool.cli.rows import iso_ms
from mqtool.layouts import detect_layout
from mqtool.ops.info import store_info
from mqtool.ops.info.rocketmq import StoreInfo


@app.command("info")
def info(
    path: Annotated[Path, typer.Argument(help="A store root, Kafka log dir or partition, Jafka or MetaQ data dir.")],
    layout: LayoutOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Describe a store: layout, version hints, files, offsets, time ranges, queues, shutdown state.

    Sizes and times are humanized in the table and raw (bytes, ms since epoch) in JSON."""
    out = renderer(fmt, as_json, as_jsonl)
    result = store_info(path, detect_layout(path, layout))
    doc = result.to_dict()
    if isinstance(result, StoreInfo):
        out.document(doc, lambda console: render_info(console, result))
    else:
        out.document(doc, lambda console: render_generic(console, doc))
    for problem in doc.get("problems", []):
        out.warn(str(problem))
    if isinstance(result, StoreInfo):
        # every gap and damage on info's path, with validate's code and position (a torn tail is
        # a warning: exit 0, as in validate)
        out.findings(result.findings)
    else:
        for error in doc.get("errors", []):  # damaged data met where info reads
            out.error(str(error))
    return ExitCode.FINDINGS if doc.get("errors") else ExitCode.OK


def render_generic(console: Console, doc: dict, title: str | None = None) -> None:
    """Any layout's info document: scalars as facts, lists of records as tables, nested
    documents recursively.  Byte sizes (keys ending in ``size``/``bytes``) and ``*_timestamp``
    values are humanized."""
    facts = Table(show_header=False, box=None, pad_edge=False, title=title, title_justify="left")
    facts.add_column(style="bold")
    facts.add_column()
    nested: list[tuple[str, object]] = []
    for key, value in doc.items():
        if isinstance(value, dict):
            nested.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            nested.append((key, value))
        else:
            facts.add_row(key.replace("_", " "), _human(key, value))
    console.print(facts)
    for key, value in nested:
        if isinstance(value, dict):
            render_generic(console, value, key.replace("_", " "))
            continue
        columns = list(dict.fromkeys(k for row in value for k in row))
        table = Table(title=key.replace("_", " "), title_justify="left")
        for col in columns:
            table.add_column(col.replace("_", " "), overflow="fold")
        for row in value:
            table.add_row(*(_human(col, row.get(col)) for col in columns))
        console.print(table)


def _human(key: str, value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and (key.endswith("size") or key.endswith("bytes")):
        return humanize.naturalsize(value, binary=True)
    if isinstance(value, int) and key.endswith("timestamp") and value > 0:
        return f"{iso_ms(value)}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
    return str(value)


def _span(first: int | None, last: int | None) -> str:
    if first is None:
        return "-"
    return f"{iso_ms(first)} .. {iso_ms(last)}"


def render_info(console: Console, r: StoreInfo) -> None:
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
    facts.add_row("commitlog offsets", f"{cl.min_offset} .. {cl.max_offset} (data ends with: {cl.end_kind or '-'})")
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
        table = Table(title="consume queues", title_justify="left")
        for col in ("topic", "queue", "files", "min offset", "max offset", "messages"):
            table.add_column(col, justify="right" if col != "topic" else "left")
        for q in r.queues:
            table.add_row(q.topic, str(q.queue_id), str(q.files), str(q.min_offset), str(q.max_offset), humanize.intcomma(q.max_offset - q.min_offset))
        console.print(table)
    if r.index_files:
        table = Table(title="index files", title_justify="left")
        for col in ("file", "size", "entries", "time range", "commitlog offsets"):
            table.add_column(col)
        for i in r.index_files:
            if i.error:
                table.add_row(i.name, humanize.naturalsize(i.size, binary=True), "-", i.error, "-")
            else:
                table.add_row(
                    i.name,
                    humanize.naturalsize(i.size, binary=True),
                    humanize.intcomma(max((i.index_count or 1) - 1, 0)),
                    _span(i.begin_timestamp, i.end_timestamp),
                    f"{i.begin_phy_offset} .. {i.end_phy_offset}",
                )
        console.print(table)
