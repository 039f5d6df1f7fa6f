"""Presentation of Kafka dump and query items as rows (dicts of JSON-able values).

Field names follow ``kafka-dump-log`` in snake_case (``base_offset``, ``last_sequence``,
``partition_leader_epoch``, ``compresscodec``, ``is_valid``, ``key_size``, ``payload``...).
Bytes go through ``encode_bytes`` (``--decode``); decoded internal-topic structures are turned
into plain dicts with their type name.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

from mqtool.cli.render import BodyDecode, Column, encode_bytes
from mqtool.cli.times import iso_ms
from mqtool.ops.dump.kafka import AbortedTxn, BatchInfo, DumpItem, IndexRow, OffsetPosition, RecordInfo, SnapshotRow, TimestampOffset

if TYPE_CHECKING:
    from mqtool.ops.query.kafka import KafkaHit

#: An item as a row: JSON-able values by column key.  It stays open: tables add the columns only
#: they show, a query row adds its batch's fields.
Row = dict[str, object]

LOG_COLUMNS = [
    Column("position", "POSITION", 10, ">"),
    Column("offsets", "OFFSET", 17, ">"),
    Column("time", "TIME", 29),
    Column("size", "SIZE", 7, ">"),
    Column("summary", "DETAILS"),
]

INDEX_COLUMNS = [
    Column("file", "FILE", 28),
    Column("entry", "ENTRY", 7, ">"),
    Column("offset", "OFFSET", 12, ">"),
    Column("log_position", "POSITION", 11, ">"),
    Column("status", "CHECK"),
]

TIMEINDEX_COLUMNS = [
    Column("file", "FILE", 32),
    Column("entry", "ENTRY", 7, ">"),
    Column("time", "TIMESTAMP", 29),
    Column("offset", "OFFSET", 12, ">"),
    Column("status", "CHECK"),
]

TXNINDEX_COLUMNS = [
    Column("file", "FILE", 31),
    Column("producer_id", "PRODUCER", 12, ">"),
    Column("first_offset", "FIRST", 12, ">"),
    Column("last_offset", "LAST", 12, ">"),
    Column("last_stable_offset", "LSO", 12, ">"),
    Column("status", "CHECK"),
]

SNAPSHOT_COLUMNS = [
    Column("file", "FILE", 31),
    Column("producer_id", "PRODUCER", 12, ">"),
    Column("producer_epoch", "EPOCH", 6, ">"),
    Column("last_sequence", "LAST SEQ", 10, ">"),
    Column("last_offset", "LAST OFFSET", 12, ">"),
    Column("current_txn_first_offset", "TXN FIRST", 10, ">"),
    Column("time", "TIMESTAMP"),
]


#: Read-only properties of decoded structures worth showing next to their fields.
_NAMED_PROPERTIES = ("name", "state", "type_name")


def jsonable(value: object, decode: BodyDecode) -> object:
    """Decoded structures (frozen dataclasses, tuples, bytes) as JSON values; dataclasses get
    their type name under ``type``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, object] = {"type": type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = jsonable(getattr(value, f.name), decode)
        for name in _NAMED_PROPERTIES:  # e.g. MetadataRecord.name "TopicRecord", the transaction state
            if isinstance(getattr(type(value), name, None), property):
                out[name] = getattr(value, name)
        return out
    if isinstance(value, (bytes, bytearray, memoryview)):
        return encode_bytes(bytes(value), decode)
    if isinstance(value, dict):
        return {str(k): jsonable(v, decode) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, decode) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


def batch_row(item: DumpItem, *, decode: BodyDecode, table: bool) -> Row:
    b = item.batch
    row: Row = {
        "kind": "batch",
        "file": str(b.file),
        "topic": item.target.topic,
        "partition": item.target.partition_id,
        "position": b.position,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "count": b.count,
        "base_sequence": b.base_sequence,
        "last_sequence": b.last_sequence,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "partition_leader_epoch": b.partition_leader_epoch,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
        "timestamp_type": b.timestamp_type,
        "max_timestamp": b.max_timestamp,
        "base_timestamp": b.base_timestamp,
        "size": b.size,
        "magic": b.magic,
        "compresscodec": b.compresscodec,
        "attributes": b.attributes,
        "crc": b.crc,
        "is_valid": b.is_valid,
    }
    if item.records_error is not None:
        row["records_error"] = item.records_error
    if item.finding is not None:  # an entry the walk kept despite damage: the finding it carries
        row["finding"] = item.finding
    if table:
        first: int | str = b.base_offset if b.base_offset is not None else "…"
        row["offsets"] = f"{first}..{b.last_offset}" if first != b.last_offset else str(b.last_offset)
        row["time"] = iso_ms(b.max_timestamp) if b.max_timestamp >= 0 else None
        parts = [f"magic={b.magic}", f"count={b.count if b.count is not None else '?'}", b.compresscodec]
        parts.append(f"crc={b.crc}" + ("" if b.is_valid else f" INVALID (computed {b.computed_crc})"))
        if b.producer_id >= 0:
            parts.append(f"producer={b.producer_id}/{b.producer_epoch} seq={b.base_sequence}..{b.last_sequence}")
        if b.partition_leader_epoch >= 0:
            parts.append(f"leader-epoch={b.partition_leader_epoch}")
        if b.is_transactional:
            parts.append("transactional")
        if b.is_control:
            parts.append("control")
        if b.timestamp_type == "LogAppendTime":
            parts.append("LogAppendTime")
        if b.delete_horizon_ms is not None:
            parts.append(f"delete-horizon={b.delete_horizon_ms}")
        if item.records_error is not None:
            parts.append(f"RECORDS: {item.records_error}")
        if item.finding is not None:  # marked, its code first
            parts.insert(0, f"[{item.finding}]")
        row["summary"] = " ".join(parts)
    return row


def record_row(batch: BatchInfo, topic: str | None, partition: int | None, record: RecordInfo, *, decode: BodyDecode, table: bool, finding: str | None = None) -> Row:
    """A record's row; ``finding``: the code of the finding its batch carries (a batch the walk
    kept despite damage), written as a last ``finding`` field and, in a table, first."""
    row: Row = {
        "kind": "record",
        "file": str(batch.file),
        "topic": topic,
        "partition": partition,
        "batch_position": batch.position,
        "offset": record.offset,
        "timestamp_type": record.timestamp_type,
        "timestamp": record.timestamp,
        "key_size": len(record.key) if record.key is not None else -1,
        "value_size": len(record.value) if record.value is not None else -1,
        "sequence": record.sequence,
    }
    if record.crc is not None:  # v0/v1: kafka-dump-log's "crc: ... isvalid: ..." of every such record
        row["crc"] = record.crc
        row["is_valid"] = record.is_valid
    row |= {
        "header_keys": [k for k, _ in record.headers],
        "headers": [{"key": k, "value": encode_bytes(v, decode)} for k, v in record.headers],
        "key": encode_bytes(record.key, decode),
        "payload": encode_bytes(record.value, decode),
    }
    if record.control is not None:
        row["control"] = jsonable(record.control, decode)
    if record.decoded is not None:
        row["decoded"] = jsonable(record.decoded, decode)
    if finding is not None:
        row["finding"] = finding
    if table:
        row["position"] = None
        row["offsets"] = str(record.offset)
        row["time"] = iso_ms(record.timestamp) if record.timestamp >= 0 else None
        row["size"] = None
        row["summary"] = "| " + (f"[{finding}] " if finding is not None else "") + record_summary(row)
    return row


def record_summary(row: Row) -> str:
    parts: list[str] = []
    if row.get("is_valid") is False:  # a v0/v1 message whose CRC-32 fails
        parts.append(f"crc={row['crc']} INVALID")
    if "control" in row:
        control = row["control"]
        value = control.get("value") if isinstance(control, dict) else None
        text = f"control {control.get('type', '?')}" if isinstance(control, dict) else "control"
        if isinstance(value, dict) and "coordinator_epoch" in value:
            text += f" coordinatorEpoch={value['coordinator_epoch']}"
        parts.append(text)
    if row.get("decoded") is not None:
        parts.append(_decoded_summary(row["decoded"]))
    else:
        if row["key"] is not None:
            parts.append(f"key={row['key']}")
        headers = row["headers"]
        if headers:
            assert isinstance(headers, list)  # record_row's list of {"key", "value"}
            parts.append("headers=[" + ",".join(f"{h['key']}={'null' if h['value'] is None else h['value']}" for h in headers) + "]")
        if "control" not in row:
            parts.append(f"payload={row['payload']}" if row["payload"] is not None else "payload=null")
    return " ".join(parts)


def _decoded_summary(decoded: object) -> str:
    if not isinstance(decoded, dict):
        return str(decoded)
    if "error" in decoded:
        return f"undecodable: {decoded['error']}"

    def brief(obj: object) -> str:
        if obj is None:
            return "null (tombstone)"
        if isinstance(obj, dict):
            fields = ", ".join(f"{k}={v}" for k, v in obj.items() if k != "type" and not isinstance(v, (dict, list)))
            return f"{obj.get('type', '')}({fields})"
        return str(obj)

    parts = []
    if decoded.get("key") is not None:
        parts.append(brief(decoded["key"]))
    parts.append(brief(decoded.get("payload") or decoded.get("value")))
    return " -> ".join(parts)


def index_row(row: IndexRow, kind: str, *, table: bool) -> Row:
    out: Row = {"file": str(row.file), "position": row.position, "entry": row.number}
    e = row.entry
    if kind == "index":
        assert isinstance(e, OffsetPosition)  # IndexDump yields the entries of its kind
        out.update({"offset": e.offset, "relative_offset": row.relative_offset, "log_position": e.position})
    elif kind == "timeindex":
        assert isinstance(e, TimestampOffset)
        out.update({"timestamp": e.timestamp, "offset": e.offset, "relative_offset": row.relative_offset})
        if table:
            out["time"] = iso_ms(e.timestamp) if e.timestamp >= 0 else str(e.timestamp)
    else:
        assert isinstance(e, AbortedTxn)
        out.update(
            {
                "version": e.version,
                "producer_id": e.producer_id,
                "first_offset": e.first_offset,
                "last_offset": e.last_offset,
                "last_stable_offset": e.last_stable_offset,
            }
        )
    if row.verify is not None:
        out["verify"] = row.verify
        if table:
            out["status"] = ", ".join(f"{k}={v}" if k != "status" else str(v) for k, v in row.verify.items())
    if table:
        out["file"] = row.file.name
    return out


def snapshot_row(row: SnapshotRow, *, table: bool) -> Row:
    e = row.entry
    out: Row = {
        "file": str(row.file),
        "snapshot_offset": row.offset,
        "version": row.version,
        "crc": row.crc,
        "producer_id": e.producer_id,
        "producer_epoch": e.epoch,
        "coordinator_epoch": e.coordinator_epoch,
        "current_txn_first_offset": e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None,
        "last_timestamp": e.timestamp,
        "first_sequence": e.first_sequence if e.has_batch_metadata else None,
        "last_sequence": e.last_sequence if e.has_batch_metadata else None,
        "last_offset": e.last_offset if e.has_batch_metadata else None,
        "offset_delta": e.offset_delta if e.has_batch_metadata else None,
        "timestamp": e.timestamp if e.has_batch_metadata else None,
    }
    if table:
        out["file"] = f"{row.file.parent.name}/{row.file.name}"
        out["time"] = iso_ms(e.timestamp) if e.timestamp >= 0 else None
    return out


def hit_row(hit: KafkaHit, *, decode: BodyDecode, table: bool) -> Row:
    """A query answer: the record row plus its batch's main fields and how it was found."""
    row = record_row(hit.batch, hit.topic, hit.partition, hit.record, decode=decode, table=False, finding=hit.finding)
    b = hit.batch
    row.update(
        {
            "batch_base_offset": b.base_offset,
            "batch_last_offset": b.last_offset,
            "producer_id": b.producer_id,
            "partition_leader_epoch": b.partition_leader_epoch,
            "magic": b.magic,
            "compresscodec": b.compresscodec,
            "found_via": hit.via,
        }
    )
    row.pop("kind")
    if table:
        row["partition_name"] = f"{hit.topic}-{hit.partition}" if hit.topic is not None else None
        row["time"] = iso_ms(hit.record.timestamp) if hit.record.timestamp >= 0 else None
        row["summary"] = (f"[{hit.finding}] " if hit.finding is not None else "") + record_summary(row)
    return row


QUERY_COLUMNS = [
    Column("partition_name", "PARTITION", 20),
    Column("offset", "OFFSET", 12, ">"),
    Column("time", "TIME", 29),
    Column("batch_position", "POSITION", 10, ">"),
    Column("found_via", "VIA", 9),
    Column("summary", "RECORD"),
]
