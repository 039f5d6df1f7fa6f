"""``mqtool query``: find messages offline by key, message id, unique key or queue offset
(RocketMQ), or by offset or timestamp (Kafka)."""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mqtool.cli.common import broker_settings, choose_columns, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import (
    INT,
    BodyDecode,
    BrokerConfigOpt,
    ColumnsOpt,
    DecodeOpt,
    FormatOpt,
    IndexNumOpt,
    IndexSlotsOpt,
    JsonlOpt,
    JsonOpt,
    LayoutOpt,
    OutputFormat,
    flag,
)
from mqtool.cli.render import Column
from mqtool.cli.times import iso_ms, parse_time

if TYPE_CHECKING:
    from mqtool.cli.render import Renderer

QUERY_COLUMNS = [
    Column("msg_id", "MSG ID", 32),
    Column("topic", "TOPIC", 20),
    Column("queue_id", "QID", 4, ">"),
    Column("queue_offset", "QOFFSET", 9, ">"),
    Column("commitlog_offset", "OFFSET", 14, ">"),
    Column("store_time", "STORE TIME", 29),
    Column("keys", "KEYS", 20),
    Column("body", "BODY"),
]


def query(
    store_path: Annotated[Path, typer.Argument(metavar="STORE", help="A RocketMQ store root, a Kafka log dir or partition dir, or a Jafka or MetaQ data dir.")],
    key: Annotated[str | None, typer.Option("--key", help="Messages with this KEYS token (queryMsgByKey).")] = None,
    msg_id: Annotated[str | None, typer.Option("--msg-id", help="An offsetMsgId (queryMsgById).")] = None,
    uniq_key: Annotated[str | None, typer.Option("--uniq-key", help="A client message id / UNIQ_KEY (queryMsgByUniqueKey).")] = None,
    topic: Annotated[
        str | None,
        typer.Option("--topic", help="Topic (required with --queue-offset; narrows key queries; alone, with --begin/--end/--tag, lists the topic's messages)."),
    ] = None,
    queue_id: Annotated[int | None, typer.Option("--queue-id", min=0, metavar=INT, help="Queue id, with --queue-offset.")] = None,
    queue_offset: Annotated[int | None, typer.Option("--queue-offset", min=0, metavar=INT, help="Queue offset (queryMsgByOffset).")] = None,
    begin: Annotated[str | None, typer.Option("--begin", help="Window start (ms since epoch or ISO-8601).")] = None,
    end: Annotated[str | None, typer.Option("--end", help="Window end (ms since epoch or ISO-8601).")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only messages whose TAGS is this tag (with --key, or --topic alone).")] = None,
    max_results: Annotated[int | None, typer.Option("--max", min=1, metavar=INT, help="At most this many results (default: all).")] = None,
    scan: Annotated[bool, flag("--scan", help="Search by scanning the CommitLog instead of the IndexFiles.")] = False,
    index_slots: IndexSlotsOpt = None,
    index_num: IndexNumOpt = None,
    config: BrokerConfigOpt = None,
    partition: Annotated[
        int | None, typer.Option("--partition", min=0, metavar=INT, help="Kafka: partition number (with --topic; optional for a partition dir).")
    ] = None,
    offset: Annotated[
        int | None,
        typer.Option(
            "--offset",
            min=0,
            metavar=INT,
            help="Kafka: the record at this offset (.index lookup, then a short log scan); Jafka/MetaQ: the message at this byte offset.",
        ),
    ] = None,
    timestamp: Annotated[
        str | None,
        typer.Option("--timestamp", help="Kafka: the first record with timestamp >= this (ms or ISO-8601; .timeindex lookup, as ListOffsets)."),
    ] = None,
    layout: LayoutOpt = None,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Find messages: --key, --msg-id, --uniq-key, --topic/--queue-id/--queue-offset, or --topic with
    --begin/--end and --tag (the topic's messages in a time window, as mqadmin printMsg) (RocketMQ);
    --offset or --timestamp with --topic/--partition (Kafka; --max N returns N records from there);
    --offset with --topic/--partition (Jafka and MetaQ, whose offsets are byte positions).

    Exit 0 when something was found, 1 when nothing matched (or data was damaged), 3 when STORE
    is not a store."""
    from mqtool.cli.rows import message_row
    from mqtool.ops.query import rocketmq as ops_query
    from mqtool.store.rocketmq import open_store

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    legacy = _legacy_layout(store_path, layout)
    if legacy is not None:
        if any(v is not None for v in (key, msg_id, uniq_key, queue_id, queue_offset, begin, end, timestamp, max_results, tag)) or scan:
            raise typer.BadParameter(
                f"a {legacy} query takes --offset (with --topic/--partition), nothing else; for several messages: mqtool dump {legacy} --from-offset N --limit M"
            )
        if offset is None:
            raise typer.BadParameter(f"a {legacy} query needs --offset")
        return _query_legacy(out, store_path, legacy, topic, partition, offset, decode)
    if _is_kafka(store_path, layout, offset is not None or timestamp is not None or partition is not None):
        if any(v is not None for v in (key, msg_id, uniq_key, queue_id, queue_offset, begin, end, tag)) or scan:
            raise typer.BadParameter("a Kafka query takes --offset or --timestamp (with --topic/--partition), not RocketMQ options")
        return _query_kafka(out, store_path, topic, partition, offset, timestamp, max_results, decode)
    modes = [m for m in (key, msg_id, uniq_key, queue_offset) if m is not None]
    by_topic = not modes and topic is not None and (begin is not None or end is not None or tag is not None)
    if len(modes) != 1 and not by_topic:
        raise typer.BadParameter("give exactly one of --key, --msg-id, --uniq-key, --queue-offset, or --topic with --begin/--end/--tag")
    if tag is not None and (msg_id is not None or queue_offset is not None):
        raise typer.BadParameter("--tag narrows --key, --uniq-key or --topic searches; --msg-id and --queue-offset name one record")
    if scan and (msg_id is not None or queue_offset is not None):
        raise typer.BadParameter("--scan searches by --key or --uniq-key; --msg-id and --queue-offset read one record directly")
    if (begin is not None or end is not None) and (msg_id is not None or queue_offset is not None):
        raise typer.BadParameter("--begin/--end narrow --key or --uniq-key searches; --msg-id and --queue-offset name one record")
    if msg_id is not None:
        try:
            msg_id = ops_query.check_msg_id(msg_id)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--msg-id") from None
    begin_ms = parse_time(begin, "--begin") or 0
    end_ms = parse_time(end, "--end")
    end_ms = ops_query.LONG_MAX if end_ms is None else end_ms
    if begin_ms > end_ms:
        raise typer.BadParameter(f"--begin ({begin}) is after --end ({end})")
    cfg = broker_settings(config)
    index_slots, index_num = index_slots or cfg.index_hash_slot_num, index_num or cfg.index_num
    store = open_store(store_path, commitlog_file_size=cfg.commitlog_file_size)
    if queue_offset is not None:
        if topic is None or queue_id is None:
            raise typer.BadParameter("--queue-offset needs --topic and --queue-id")
        result = ops_query.query_by_queue_offset(store, topic, queue_id, queue_offset)
    elif msg_id is not None:
        result = ops_query.query_by_msg_id(store, msg_id)
    elif by_topic:
        assert topic is not None
        result = ops_query.query_by_topic(store, topic, begin=begin_ms, end=end_ms, tag=tag, max_results=max_results)
    else:
        search = key if key is not None else uniq_key
        assert search is not None  # exactly one of --key, --msg-id, --uniq-key, --queue-offset (checked above)
        result = ops_query.query_by_key(
            store,
            search,
            topic=topic,
            begin=begin_ms,
            end=end_ms,
            max_results=max_results,
            uniq=uniq_key is not None,
            scan=scan,
            hash_slot_num=index_slots,
            index_num=index_num,
            tag=tag,
        )
    table = out.fmt is OutputFormat.table
    body_mode = BodyDecode.utf8 if table and decode is BodyDecode.base64 else decode

    def rows() -> Iterator[dict[str, object]]:
        for hit in result.hits:
            row = message_row(hit.record, file=str(hit.path), position=hit.position, address=hit.commitlog_offset, decode=body_mode, finding=hit.finding)
            row["found_via"] = hit.via
            if table:
                row["store_time"] = iso_ms(hit.record.store_timestamp)
                if hit.finding is not None:  # a record found despite damage: marked, its code first
                    row["body"] = f"[{hit.finding}] {row['body']}"
            yield row

    out.stream(rows(), QUERY_COLUMNS)
    for note in result.notes:
        out.warn(note)
    for problem in result.problems:
        out.error(str(problem))
    # every gap and damage on the query's path, with validate's code and position
    damaged = out.findings(result.findings)
    if result.collisions:
        out.warn(f"{result.collisions} index candidate(s) were hash collisions and were filtered out")
    if result.problems or damaged:
        return ExitCode.FINDINGS
    if not result.hits and not result.notes and not result.findings:
        out.warn("no message matched")  # exit 1 alone would leave a person at a shell guessing
    return ExitCode.OK if result.hits else ExitCode.FINDINGS


def _legacy_layout(path: Path, layout: str | None) -> str | None:
    """``jafka``/``metaq`` when forced or detected, else None."""
    from mqtool.errors import MqError
    from mqtool.layouts import detect_layout

    if layout is not None:
        return layout if layout in ("jafka", "metaq") else None
    try:
        detected = detect_layout(path)
    except MqError:
        return None
    return detected if detected in ("jafka", "metaq") else None


def _query_legacy(out: "Renderer", path: Path, layout: str, topic: str | None, partition: int | None, offset: int, decode: BodyDecode) -> int:
    """Jafka/MetaQ: the message at a byte offset (offsets are byte positions in those logs)."""
    from mqtool.cli.rows_legacy import JAFKA_COLUMNS, METAQ_COLUMNS, Row, jafka_row, metaq_row, table_row
    from mqtool.ops.dump import legacy as dump_legacy
    from mqtool.store.jafka import open_jafka
    from mqtool.store.metaq import open_metaq

    data = open_jafka(path) if layout == "jafka" else open_metaq(path)
    part = dump_legacy.find_partition(data, topic, partition)
    result = dump_legacy.lookup_offset(data, part, offset)
    table = out.fmt is OutputFormat.table
    mode = BodyDecode.utf8 if table and decode is BodyDecode.base64 else decode

    def rows() -> Iterator[Row]:
        for item in result.items:  # a Jafka data dir holds Jafka messages, a MetaQ one MetaQ messages
            row = jafka_row(item, mode) if isinstance(item, dump_legacy.JafkaItem) else metaq_row(item, mode)
            row["found_via"] = "offset"
            yield table_row(row, layout) if table else row

    out.stream(rows(), JAFKA_COLUMNS if layout == "jafka" else METAQ_COLUMNS)
    if result.reason:
        near = ", ".join(f"{label} message at {value}" for label, value in (("previous", result.previous_offset), ("next", result.next_offset)) if value is not None)
        out.warn(result.reason + (f" ({near})" if near else ""))
    for problem in result.problems:
        out.error(str(problem))
    if result.problems or not result.items:
        return ExitCode.FINDINGS
    return ExitCode.OK


def _is_kafka(path: Path, layout: str | None, kafka_options: bool) -> bool:
    """Kafka when forced or detected; any other path keeps the RocketMQ behaviour (and errors)."""
    from mqtool.errors import MqError, UnsupportedFormatError
    from mqtool.layouts import detect_layout

    if layout is not None and layout not in ("rocketmq", "kafka"):
        raise UnsupportedFormatError("`mqtool query` handles the rocketmq, kafka, jafka and metaq layouts", expected="a layout name", found=layout)
    if layout is not None:
        return layout == "kafka"
    if kafka_options:
        return True
    try:
        return detect_layout(path) == "kafka"
    except MqError:
        return False


def _query_kafka(
    out: "Renderer", path: Path, topic: str | None, partition: int | None, offset: int | None, timestamp: str | None, max_results: int | None, decode: BodyDecode
) -> int:
    from mqtool.cli.rows_kafka import QUERY_COLUMNS as KAFKA_QUERY_COLUMNS
    from mqtool.cli.rows_kafka import hit_row
    from mqtool.ops.query import kafka as query_kafka
    from mqtool.store.kafka import open_kafka

    if (offset is None) == (timestamp is None):
        raise typer.BadParameter("give exactly one of --offset, --timestamp")
    store = open_kafka(path)
    count = max_results or 1
    if offset is not None:
        result = query_kafka.query_offset(store, topic, partition, offset, max_results=count)
    else:
        assert timestamp is not None  # exactly one of --offset, --timestamp (checked above)
        result = query_kafka.query_timestamp(store, topic, partition, parse_time(timestamp, "--timestamp"), max_results=count)
    table = out.fmt is OutputFormat.table
    mode = BodyDecode.utf8 if table and decode is BodyDecode.base64 else decode
    out.stream((hit_row(hit, decode=mode, table=table) for hit in result.hits), KAFKA_QUERY_COLUMNS)
    from mqtool.cli import settings

    if settings.verbose():  # how the answer was found: --verbose (issue 19)
        for step in result.steps:
            out.warn(f"lookup: {step}")
    for note in result.notes:
        out.warn(note)
    for problem in result.problems:
        out.error(str(problem))
    if result.problems:
        return ExitCode.FINDINGS
    if not result.hits and not result.notes:
        out.warn("no message matched")  # exit 1 alone would leave a person at a shell guessing
    return ExitCode.OK if result.hits else ExitCode.FINDINGS
