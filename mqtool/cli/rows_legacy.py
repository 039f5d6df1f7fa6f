"""Presentation of Jafka and MetaQ messages as rows (dicts of JSON-able values), for ``dump`` and
``query`` alike."""

from __future__ import annotations

from mqtool.cli.render import BodyDecode, Column, encode_bytes
from mqtool.errors import hexint
from mqtool.ops.dump import legacy as ops

#: A message as a row: JSON-able values by column key.  It stays open: a command adds keys of its
#: own (``found_via``) and ``table_row`` the columns only tables show.
Row = dict[str, object]

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


def jafka_row(item: ops.JafkaItem, decode: BodyDecode) -> Row:
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
        **_finding(item.finding),
    }


def _finding(code: str | None) -> dict[str, str]:
    """A message the walk kept despite damage that leaves its frame intact carries its finding's
    code as a last ``finding`` field; a healthy one has no such field."""
    return {"finding": code} if code is not None else {}


def metaq_row(item: ops.MetaqItem, decode: BodyDecode) -> Row:
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
        **_finding(item.finding),
    }


def table_row(row: Row, layout: str) -> Row:
    """The columns only tables show (``JAFKA_COLUMNS``/``METAQ_COLUMNS``), for dump and query alike:
    ``topic-partition``, the checksum verdict, a MetaQ id in hex."""
    row["partition_name"] = f"{row['topic']}-{row['partition']}" if row["topic"] is not None else "-"
    crc_key = "crc_valid" if layout == "jafka" else "checksum_valid"
    row[crc_key.replace("_valid", "_ok")] = "ok" if row[crc_key] else "BAD"
    if row.get("finding") is not None and isinstance(row.get("payload"), str):  # marked, its code first
        row["payload"] = f"[{row['finding']}] {row['payload']}"
    if layout == "metaq":
        message_id = row["id"]
        assert isinstance(message_id, int)  # metaq_row's ``id``
        row["id"] = hexint(message_id, 16)
    return row
