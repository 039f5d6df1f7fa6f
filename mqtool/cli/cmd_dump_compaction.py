"""``mqtool dump compactionlog|compactioncq``: RocketMQ's compaction store (``compaction/``)."""

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from mqtool.cli.common import choose_columns, finish_dump, renderer
from mqtool.cli.options import BodyDecode, ColumnsOpt, DecodeOpt, FormatOpt, JsonlOpt, JsonOpt, LimitOpt, OutputFormat, QueueOpt, TopicOpt
from mqtool.cli.render import Column
from mqtool.cli.times import iso_ms

CompactionPathArg = Annotated[
    Path, typer.Argument(help="A store root, compaction/, its compactionLog/ or compactionCq/, a topic's or queue's directory there, or one file.")
]

LOG_COLUMNS = [
    Column("compaction_offset", "OFFSET", 12, ">"),
    Column("topic", "TOPIC", 20),
    Column("queue_id", "QID", 4, ">"),
    Column("queue_offset", "QOFFSET", 9, ">"),
    Column("total_size", "SIZE", 7, ">"),
    Column("store_time", "STORE TIME", 29),
    Column("keys", "KEYS", 20),
    Column("body", "BODY"),
]


def dump_compactionlog(
    path: CompactionPathArg,
    topic: TopicOpt = None,
    queue_id: QueueOpt = None,
    limit: LimitOpt = None,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Compaction-log records (5.x compaction topics): CommitLog records whose PHYSICALOFFSET is their compaction-log offset."""
    from mqtool.cli.rows import message_row
    from mqtool.ops.dump import compaction as ops

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    engine = ops.CompactionLogDump(path, topic, queue_id, limit)
    table = out.fmt is OutputFormat.table
    body_mode = decode if not table or decode is not BodyDecode.base64 else BodyDecode.utf8

    def rows() -> Iterator[dict[str, Any]]:
        for at in engine:
            row = message_row(at.record, file=str(at.path), position=at.position, address=at.offset, decode=body_mode)
            row = {("compaction_offset" if k == "commitlog_offset" else k): v for k, v in row.items()}
            if table:
                row["store_time"] = iso_ms(at.record.store_timestamp)
            yield row

    out.stream(rows(), LOG_COLUMNS)
    # validate's findings (code, file, position) for the files walked
    return finish_dump(out, [], extra_failures=out.findings(engine.findings))


CQ_COLUMNS = [
    Column("topic", "TOPIC", 20),
    Column("queue_id", "QID", 4, ">"),
    Column("queue_offset", "QOFFSET", 9, ">"),
    Column("compaction_offset", "OFFSET", 12, ">"),
    Column("size", "SIZE", 7, ">"),
    Column("tags_code", "TAGS CODE", 12, ">"),
    Column("store_time", "STORE TIME", 29),
]


def dump_compactioncq(
    path: CompactionPathArg,
    topic: TopicOpt = None,
    queue_id: QueueOpt = None,
    limit: LimitOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Sparse consume queue units of the compaction store: queue offset, compaction-log offset, size, tagsCode, store time."""
    from mqtool.ops.dump import compaction as ops

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    engine = ops.CompactionCqDump(path, topic, queue_id, limit)
    table = out.fmt is OutputFormat.table

    def rows() -> Iterator[dict[str, Any]]:
        for topic_name, qid, at in engine:
            row = ops.unit_row(topic_name, qid, at)
            if table:
                row["store_time"] = iso_ms(row["store_timestamp"])
            yield row

    out.stream(rows(), CQ_COLUMNS)
    return finish_dump(out, [], extra_failures=out.findings(engine.findings))
