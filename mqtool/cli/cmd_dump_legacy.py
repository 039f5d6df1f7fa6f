"""``mqtool dump jafka`` and ``mqtool dump metaq``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.cmd_dump import LimitOpt, TopicOpt, dump_app
from mqtool.cli.common import DecodeOpt, FormatOpt, JsonlOpt, JsonOpt, finish_dump, renderer
from mqtool.cli.render import BodyDecode, Column, OutputFormat, Renderer, encode_bytes
from mqtool.errors import hexint
from mqtool.ops.dump import legacy as ops
from mqtool.store.jafka import open_jafka
from mqtool.store.metaq import open_metaq

PartitionOpt = Annotated[int | None, typer.Option("--partition", min=0, help="Only this partition number.")]
FromOffsetOpt = Annotated[
    int | None,
    typer.Option("--from-offset", min=0, help="Start at this offset (a byte offset of the partition, like a consumer fetch)."),
]

#: How many problems are listed one by one on stderr before they are only counted.

JAFKA_COLUMNS = [
    Column("offset", "OFFSET", 20, ">"),
    Column("partition_name", "PARTITION", 16),
    Column("kind", "KIND", 7),
    Column("length", "LENGTH", 8, ">"),
    Column("codec", "CODEC", 6),
    Column("crc_ok", "CRC", 4),
    Column("payload", "PAYLOAD"),
]

METAQ_COLUMNS = [
    Column("offset", "OFFSET", 20, ">"),
    Column("partition_name", "PARTITION", 16),
    Column("id", "ID", 20, ">"),
    Column("flag", "FLAG", 5, ">"),
    Column("msg_len", "MSGLEN", 8, ">"),
    Column("checksum_ok", "CRC", 4),
    Column("attribute", "ATTRIBUTE", 24),
    Column("payload", "PAYLOAD"),
]


def _body_mode(out: Renderer, decode: BodyDecode) -> BodyDecode:
    """Tables show text unless another --decode was asked for (as ``dump commitlog`` does)."""
    return BodyDecode.utf8 if out.fmt is OutputFormat.table and decode is BodyDecode.base64 else decode


def jafka_row(item: ops.JafkaItem, decode: BodyDecode) -> dict:
    where = item.where
    m = item.message
    return {
        "file": str(where.segment.path),
        "topic": where.partition.topic,
        "partition": where.partition.partition,
        "segment_start": where.segment.start_offset,
        "position": where.position,
        "offset": where.offset,
        "next_offset": item.next_offset,
        "kind": item.kind,
        "depth": item.depth,
        "inner_index": item.inner_index,
        "inner_position": item.inner_position,
        "length": m.size,
        "magic": m.magic,
        "attribute": m.attributes,
        "codec": item.codec,
        "crc": m.crc,
        "crc_computed": item.crc_computed,
        "crc_valid": item.crc_valid,
        "payload_size": len(m.payload),
        "payload": encode_bytes(m.payload, decode),
    }


def metaq_row(item: ops.MetaqItem, decode: BodyDecode) -> dict:
    where = item.where
    m = item.message
    return {
        "file": str(where.segment.path),
        "archive": where.segment.archive,
        "segment": item.segment_name,
        "topic": where.partition.topic,
        "partition": where.partition.partition,
        "segment_start": where.segment.start_offset,
        "position": where.position,
        "offset": where.offset,
        "next_offset": item.next_offset,
        "msg_len": len(m.data),
        "checksum": m.checksum,
        "checksum_computed": item.checksum_computed,
        "checksum_valid": item.checksum_valid,
        "id": m.id,
        **ops.id_parts(m.id),
        "flag": m.flag,
        "has_attribute": m.has_attribute,
        "attribute": None if item.attribute is None else item.attribute.decode("utf-8", "backslashreplace"),
        "attribute_error": item.attribute_error,
        "payload_size": len(item.payload),
        "payload": encode_bytes(item.payload, decode),
    }


def table_row(row: dict, layout: str) -> dict:
    """The columns only tables show (``JAFKA_COLUMNS``/``METAQ_COLUMNS``), for dump and query alike:
    ``topic-partition``, the checksum verdict, a MetaQ id in hex."""
    row["partition_name"] = f"{row['topic']}-{row['partition']}" if row["topic"] is not None else "-"
    crc_key = "crc_valid" if layout == "jafka" else "checksum_valid"
    row[crc_key.replace("_valid", "_ok")] = "ok" if row[crc_key] else "BAD"
    if layout == "metaq":
        row["id"] = hexint(row["id"], 16)
    return row


@dump_app.command("jafka")
def dump_jafka(
    path: Annotated[Path, typer.Argument(help="A Jafka data dir (log.dir), a <topic>-<partition> directory, or one .jafka file.")],
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    from_offset: FromOffsetOpt = None,
    limit: LimitOpt = None,
    shallow: Annotated[
        bool, typer.Option("--shallow", help="Do not expand gzip wrappers into their inner messages (as Jafka's Dumper).")
    ] = False,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Jafka messages: offset, position, LENGTH, magic, attribute/codec, CRC (checked), payload; gzip
    wrappers followed by their inner messages with the offsets consumers see.

    Exit 0 when every message is intact, 1 when damage was met (listed on stderr), 3 when PATH is
    not a Jafka store."""
    out = renderer(fmt, as_json, as_jsonl)
    engine = ops.JafkaDump(open_jafka(path), topic, partition, from_offset, limit, deep=not shallow)
    mode = _body_mode(out, decode)
    table = out.fmt is OutputFormat.table

    def rows():
        with out.progress(engine.total_bytes, "dump jafka", streaming=True) as advance:
            done = 0
            for item in engine:
                row = jafka_row(item, mode)
                if table:
                    table_row(row, "jafka")
                advance(engine.bytes_done - done)
                done = engine.bytes_done
                yield row

    out.stream(rows(), JAFKA_COLUMNS)
    return _finish(out, path, engine)


@dump_app.command("metaq")
def dump_metaq(
    path: Annotated[
        Path, typer.Argument(help="A MetaQ data dir (dataPath), a <topic>-<partition> directory, or one .meta/.meta.arc/.meta.zip file.")
    ],
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    from_offset: FromOffsetOpt = None,
    limit: LimitOpt = None,
    archives: Annotated[
        bool, typer.Option("--archives/--no-archives", help="Also read .meta.arc and .meta.zip archives (the older offsets).")
    ] = True,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """MetaQ messages: offset, position, msgLen, checksum (checked), id (with its IdWorker broker id and
    sequence), flag, attribute, payload; archives (.meta.zip inflated on the fly) in offset order.

    Exit 0 when every message is intact, 1 when damage was met (listed on stderr), 3 when PATH is
    not a MetaQ store."""
    out = renderer(fmt, as_json, as_jsonl)
    engine = ops.MetaqDump(open_metaq(path), topic, partition, from_offset, limit, archives=archives)
    mode = _body_mode(out, decode)
    table = out.fmt is OutputFormat.table

    def rows():
        with out.progress(engine.total_bytes, "dump metaq", streaming=True) as advance:
            done = 0
            for item in engine:
                row = metaq_row(item, mode)
                if table:
                    table_row(row, "metaq")
                advance(engine.bytes_done - done)
                done = engine.bytes_done
                yield row

    out.stream(rows(), METAQ_COLUMNS)
    return _finish(out, path, engine)


def _finish(out: Renderer, path: Path, engine: ops.JafkaDump | ops.MetaqDump) -> int:
    """Every gap and damage in the partitions dumped as validate states it (CODE path:position:
    message), besides the walk's own lines."""
    findings = ops.findings_on_path(path, engine.data, engine.partitions)
    damaged = out.findings(findings)
    return finish_dump(
        out, engine.problems, notes=engine.notes, extra_failures=damaged, hint="the data is damaged at the position(s) above; `mqtool validate` explains the damage"
    )
