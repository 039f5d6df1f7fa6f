"""``mqtool query``: find messages offline by key, message id, unique key or queue offset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mqtool.cli.app import app
from mqtool.cli.common import DecodeOpt, FormatOpt, JsonlOpt, JsonOpt, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.render import BodyDecode, Column, OutputFormat
from mqtool.cli.rows import iso_ms, message_row, parse_time
from mqtool.ops import query as ops_query
from mqtool.store.rocketmq import open_store

QUERY_COLUMNS = [
    Column("msg_id", "MSG ID", 32),
    Column("topic", "TOPIC", 20),
    Column("queue_id", "QID", 4, ">"),
    Column("queue_offset", "QOFFSET", 9, ">"),
    Column("commitlog_offset", "OFFSET", 14, ">"),
    Column("store_time", "STORE TIME", 23),
    Column("keys", "KEYS", 20),
    Column("body", "BODY"),
]


@app.command("query")
def query(
    store_path: Annotated[Path, typer.Argument(metavar="STORE", help="A RocketMQ store root.")],
    key: Annotated[Optional[str], typer.Option("--key", help="Messages with this KEYS token (queryMsgByKey).")] = None,
    msg_id: Annotated[Optional[str], typer.Option("--msg-id", help="An offsetMsgId (queryMsgById).")] = None,
    uniq_key: Annotated[Optional[str], typer.Option("--uniq-key", help="A client message id / UNIQ_KEY (queryMsgByUniqueKey).")] = None,
    topic: Annotated[Optional[str], typer.Option("--topic", help="Topic (required with --queue-offset; narrows key queries).")] = None,
    queue_id: Annotated[Optional[int], typer.Option("--queue-id", help="Queue id, with --queue-offset.")] = None,
    queue_offset: Annotated[Optional[int], typer.Option("--queue-offset", help="Queue offset (queryMsgByOffset).")] = None,
    begin: Annotated[Optional[str], typer.Option("--begin", help="Window start (ms since epoch or ISO-8601).")] = None,
    end: Annotated[Optional[str], typer.Option("--end", help="Window end (ms since epoch or ISO-8601).")] = None,
    max_results: Annotated[Optional[int], typer.Option("--max", min=1, help="At most this many results (default: all).")] = None,
    scan: Annotated[bool, typer.Option("--scan", help="Search by scanning the CommitLog instead of the IndexFiles.")] = False,
    index_slots: Annotated[Optional[int], typer.Option("--index-hash-slots", help="maxHashSlotNum when not the default.")] = None,
    index_num: Annotated[Optional[int], typer.Option("--index-num", help="maxIndexNum when not the default.")] = None,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Find messages: --key, --msg-id, --uniq-key, or --topic/--queue-id/--queue-offset.

    Exit 0 when something was found, 1 when nothing matched (or data was damaged), 3 when STORE
    is not a store."""
    out = renderer(fmt, as_json, as_jsonl)
    modes = [m for m in (key, msg_id, uniq_key, queue_offset) if m is not None]
    if len(modes) != 1:
        raise typer.BadParameter("give exactly one of --key, --msg-id, --uniq-key, --queue-offset")
    store = open_store(store_path)
    begin_ms = parse_time(begin, "--begin") or 0
    end_ms = parse_time(end, "--end")
    end_ms = ops_query.LONG_MAX if end_ms is None else end_ms
    if queue_offset is not None:
        if topic is None or queue_id is None:
            raise typer.BadParameter("--queue-offset needs --topic and --queue-id")
        result = ops_query.query_by_queue_offset(store, topic, queue_id, queue_offset)
    elif msg_id is not None:
        result = ops_query.query_by_msg_id(store, msg_id)
    else:
        result = ops_query.query_by_key(
            store,
            key if key is not None else uniq_key,
            topic=topic,
            begin=begin_ms,
            end=end_ms,
            max_results=max_results,
            uniq=uniq_key is not None,
            scan=scan,
            hash_slot_num=index_slots,
            index_num=index_num,
        )
    table = out.fmt is OutputFormat.table
    body_mode = BodyDecode.utf8 if table and decode is BodyDecode.base64 else decode

    def rows():
        for hit in result.hits:
            row = message_row(hit.record, file=str(hit.path), position=hit.position, address=hit.commitlog_offset, decode=body_mode)
            row["found_via"] = hit.via
            if table:
                row["store_time"] = iso_ms(hit.record.store_timestamp)
            yield row

    out.stream(rows(), QUERY_COLUMNS)
    for note in result.notes:
        out.warn(note)
    for problem in result.problems:
        out.error(str(problem))
    if result.collisions:
        out.warn(f"{result.collisions} index candidate(s) were hash collisions and were filtered out")
    if result.problems:
        return ExitCode.FINDINGS
    return ExitCode.OK if result.hits else ExitCode.FINDINGS
