"""Presentation of decoded items as rows (dicts of JSON-able values) and times for people."""

from __future__ import annotations

import binascii
import datetime as _dt
import re
from collections.abc import Callable
from json.encoder import encode_basestring

import typer

from mqtool.cli.render import BodyDecode, encode_bytes
from mqtool.errors import hexint
from mqtool.ops.dump import RecordChunk, body_bytes, header_record


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


# --- the same rows as JSON text, straight from the lean reading ------------------------------------
#
# ``message_lines`` writes, for the rows of a ``RecordChunk``, exactly the text ``dumps`` writes for
# ``message_row`` of the same record (json's separators, ``ensure_ascii=False``, the key order
# above): strings go through ``json.encoder.encode_basestring``, the function json itself escapes
# them with; integers print as json prints them.  A test holds the two to each other.

_JSON_STR = encode_basestring


def _json_str_or_null(value: str | None) -> str:
    return "null" if value is None else _JSON_STR(value)


def _body_text(decode: BodyDecode) -> Callable[[bytes], str]:
    """``encode_bytes(body, decode)`` as JSON text."""
    if decode is BodyDecode.base64:
        b2a = binascii.b2a_base64
        return lambda body: f'"{b2a(body, newline=False).decode("ascii")}"'
    if decode is BodyDecode.hex:
        return lambda body: f'"{body.hex()}"'
    if decode is BodyDecode.utf8:
        return lambda body: _JSON_STR(body.decode("utf-8", "backslashreplace"))
    return lambda body: "null"


_MAGIC_TEXT: dict[int, str] = {}
_SYSFLAG_TEXT: dict[int, str] = {}


def _magic_text(magic: int) -> str:
    """``"magic_code": ..., "version": ...`` for a MAGICCODE."""
    text = _MAGIC_TEXT.get(magic)
    if text is None:
        record = header_record(magic, 0)
        text = _MAGIC_TEXT[magic] = f'"magic_code": {_JSON_STR(hexint(record.magic_code))}, "version": {record.version}'
    return text


def _sys_flag_text(sys_flag: int) -> str:
    """``"sys_flag": ..., "transaction_type": ..., "compression": ...`` for a SYSFLAG."""
    text = _SYSFLAG_TEXT.get(sys_flag)
    if text is None:
        if len(_SYSFLAG_TEXT) > 4096:
            _SYSFLAG_TEXT.clear()
        record = header_record(0, sys_flag)
        text = _SYSFLAG_TEXT[sys_flag] = (
            f'"sys_flag": {sys_flag}, "transaction_type": {_JSON_STR(record.transaction_type)}, '
            f'"compression": {_json_str_or_null(record.compression_type)}'
        )
    return text


def message_lines(chunk: RecordChunk, decode: BodyDecode, start: int = 0, stop: int | None = None) -> list[str]:
    """``dumps(message_row(...))`` of rows ``start:stop`` of ``chunk`` (``decode`` as given,
    bodies as stored: ``--uncompress`` needs the precise rows)."""
    file_text = _JSON_STR(str(chunk.path))
    offset = chunk.offset
    base = chunk.base
    b64 = decode is BodyDecode.base64
    b2a = binascii.b2a_base64
    body_text = _body_text(decode)
    magic_texts = _MAGIC_TEXT
    sys_flag_texts = _SYSFLAG_TEXT
    string = _JSON_STR
    topics: dict[str, str] = {}
    lines = []
    append = lines.append
    for pos, f, body, topic, props, born, store, msg_id in chunk.rows[start:stop]:
        topic_text = topics.get(topic)
        if topic_text is None:
            topic_text = topics[topic] = string(topic)
        tags = props.get("TAGS")
        keys = props.get("KEYS")
        uniq = props.get("UNIQ_KEY")
        if not keys:
            keys_text = ""
        elif " " in keys:
            keys_text = ", ".join([string(k) for k in keys.split(" ") if k])
        else:
            keys_text = string(keys)
        props_text = ", ".join([f"{string(k)}: {string(v)}" for k, v in props.items()])
        body_json = '"' + b2a(body, newline=False).decode("ascii") + '"' if b64 else body_text(body)
        # born/store host and msg id are digits, hex, '.', ':', '[' and ']': nothing to escape
        append(
            f'{{"file": {file_text}, "position": {offset + pos}, "commitlog_offset": {base + pos}, "total_size": {f[0]}, '
            f'{magic_texts.get(f[1]) or _magic_text(f[1])}, "body_crc": {f[2]}, "queue_id": {f[3]}, "flag": {f[4]}, '
            f'"queue_offset": {f[5]}, "physical_offset": {f[6]}, {sys_flag_texts.get(f[7]) or _sys_flag_text(f[7])}, '
            f'"born_timestamp": {f[8]}, "born_host": "{born}", "store_timestamp": {f[10]}, "store_host": "{store}", '
            f'"reconsume_times": {f[12]}, "prepared_transaction_offset": {f[13]}, "topic": {topic_text}, '
            f'"tags": {"null" if tags is None else string(tags)}, "keys": [{keys_text}], '
            f'"uniq_key": {"null" if uniq is None else string(uniq)}, "msg_id": "{msg_id}", '
            f'"properties": {{{props_text}}}, "body_size": {len(body)}, '
            f'"body": {body_json}}}'
        )
    return lines
