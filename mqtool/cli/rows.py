"""Presentation of decoded items as rows (dicts of JSON-able values) and times for people."""

from __future__ import annotations

import datetime as _dt
import re

import typer

from mqtool.cli.render import BodyDecode, encode_bytes
from mqtool.errors import hexint
from mqtool.ops.dump import body_bytes


def iso_ms(ms: int | None) -> str | None:
    """Local-time ISO rendering of a millisecond timestamp (``-`` style None passes through)."""
    if ms is None:
        return None
    try:
        return _dt.datetime.fromtimestamp(ms / 1000).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return str(ms)


_DIGITS = re.compile(r"^-?\d+$")


def parse_time(text: str | None, option: str) -> int | None:
    """``--since/--until``: milliseconds since the epoch, or ISO-8601 (local time when no zone)."""
    if text is None:
        return None
    value = text.strip()
    if _DIGITS.match(value):
        ms = int(value)
    else:
        try:
            ms = int(_dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            raise typer.BadParameter(
                f"expected milliseconds since the epoch or an ISO-8601 time, found {text!r}", param_hint=option
            ) from None
    if ms < 0:  # before 1970: no store holds such a time (Kafka's -1/-2 are ListOffsets codes, not times)
        raise typer.BadParameter(f"expected a time at or after 1970-01-01, found {text!r}", param_hint=option)
    return ms


def message_row(
    record, *, file: str, position: int, address: int, decode: BodyDecode, uncompress: bool = False
) -> dict:
    body = body_bytes(record, uncompress)
    return {
        "file": file,
        "position": position,
        "commitlog_offset": address,
        "total_size": record.total_size,
        "magic_code": hexint(record.magic_code),
        "version": record.version,
        "body_crc": record.body_crc,
        "queue_id": record.queue_id,
        "flag": record.flag,
        "queue_offset": record.queue_offset,
        "physical_offset": record.physical_offset,
        "sys_flag": record.sys_flag,
        "transaction_type": record.transaction_type,
        "compression": record.compression_type,
        "born_timestamp": record.born_timestamp,
        "born_host": str(record.born_host),
        "store_timestamp": record.store_timestamp,
        "store_host": str(record.store_host),
        "reconsume_times": record.reconsume_times,
        "prepared_transaction_offset": record.prepared_transaction_offset,
        "topic": record.topic,
        "tags": record.tags,
        "keys": record.keys,
        "uniq_key": record.uniq_key,
        "msg_id": record.msg_id,
        "properties": record.properties,
        "body_size": len(record.body),
        "body": encode_bytes(body, decode),
    }
