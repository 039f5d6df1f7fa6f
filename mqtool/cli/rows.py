"""Presentation of RocketMQ CommitLog records as rows (dicts of JSON-able values), one at a time
(``message_row``) or a column chunk at a time (``column_lines``)."""

from __future__ import annotations

import binascii
from collections.abc import Callable
from functools import partial
from itertools import repeat
from json.encoder import encode_basestring

import numpy as np

from mqtool.cli.render import BodyDecode, dumps, encode_bytes
from mqtool.errors import hexint
from mqtool.ops.dump.rocketmq import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, ColumnChunk, RecordFields, body_bytes, header_record, span_texts


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


#: The bytes JSON escapes in a string (``"``, ``\\``, control characters): properties (and the
#: tags, keys and UNIQ_KEY inside them) free of these print as they are; the separators 0x01 and
#: 0x02 between names and values are replaced.
_ESCAPED = np.zeros(256, dtype=bool)
_ESCAPED[:0x20] = True
_ESCAPED[[0x22, 0x5C]] = True
_ESCAPED[[1, 2]] = False

_ROW = (
    '{"file": %s, "position": %d, "commitlog_offset": %d, "total_size": %d, %s, "body_crc": %d, "queue_id": %d, '
    '"flag": %d, "queue_offset": %d, "physical_offset": %d, %s, "born_timestamp": %d, "born_host": "%s", '
    '"store_timestamp": %d, "store_host": "%s", "reconsume_times": %d, "prepared_transaction_offset": %d, '
    '"topic": %s, "tags": %s, "keys": [%s], "uniq_key": %s, "msg_id": "%s", "properties": {%s}, "body_size": %d, '
    '"body": %s}'
)


def _quoted_or_null(count: int, which: np.ndarray, values: list[str]) -> list[str]:
    out = np.full(count, "null", dtype=object)
    out[which] = list(map('"%s"'.__mod__, values))
    return list(out)


def _bodies(chunk: ColumnChunk, fields: RecordFields, decode: BodyDecode) -> list[str]:
    """``encode_bytes(body, decode)`` of each row as JSON text."""
    if decode is BodyDecode.none:
        return ["null"] * len(chunk)
    bodies = chunk.bodies(fields)
    if decode is BodyDecode.base64:
        return list(map('"%s"'.__mod__, map(bytes.decode, map(partial(binascii.b2a_base64, newline=False), bodies))))
    if decode is BodyDecode.hex:
        return list(map('"%s"'.__mod__, map(bytes.hex, bodies)))
    return [_JSON_STR(body.decode("utf-8", "backslashreplace")) for body in bodies]


def column_lines(chunk: ColumnChunk, decode: BodyDecode) -> list[str]:
    """``dumps(message_row(...))`` of the rows of ``chunk`` (``decode`` as given, bodies as
    stored: ``--uncompress`` needs the precise rows), built a column at a time; a row whose
    properties need JSON escapes or repeat a name takes the precise path."""
    cols, rows = chunk.walk.columns, chunk.rows
    count = len(rows)
    if not count:
        return []
    fields = chunk.fields()
    at = cols.position[rows]
    # PROPERTIES "n1\x01v1\x02n2\x01v2\x02" as '"n1": "v1", "n2": "v2"'
    props = chunk.texts(fields.props_at, fields.props_end)
    props = [f'"{p[:-1]}"'.replace(NAME_VALUE_SEPARATOR, '": "').replace(PROPERTY_SEPARATOR, '", "') if p else "" for p in props]
    # KEYS: its non-empty tokens
    with_keys = np.flatnonzero(fields.keys_pair >= 0)
    keys = np.full(count, "", dtype=object)
    tokens = span_texts(fields.key_tokens)
    token_offsets = fields.token_offsets.tolist()
    keys[with_keys] = [", ".join(map('"%s"'.__mod__, tokens[token_offsets[r] : token_offsets[r + 1]])) for r in with_keys.tolist()]
    tags = np.flatnonzero(fields.tags_pair >= 0)
    uniq = np.flatnonzero(fields.uniq_pair >= 0)
    topics = [_JSON_STR(t) for t in cols.topics]
    hosts = fields.hosts
    sys_flags = cols.sys_flag[rows].tolist()
    magics = fields.magic.tolist()
    lines = list(
        map(
            _ROW.__mod__,
            zip(
                repeat(_JSON_STR(str(chunk.path))),
                (at + chunk.offset).tolist(),
                (at + chunk.base).tolist(),
                cols.size[rows].tolist(),
                [_MAGIC_TEXT.get(m) or _magic_text(m) for m in magics],
                fields.body_crc.tolist(),
                cols.queue_id[rows].tolist(),
                fields.flag.tolist(),
                cols.queue_offset[rows].tolist(),
                fields.physical_offset.tolist(),
                [_SYSFLAG_TEXT.get(f) or _sys_flag_text(f) for f in sys_flags],
                fields.born_timestamp.tolist(),
                map(hosts.__getitem__, fields.born_host.tolist()),
                cols.store_timestamp[rows].tolist(),
                map(hosts.__getitem__, fields.store_host.tolist()),
                fields.reconsume_times.tolist(),
                fields.prepared_transaction_offset.tolist(),
                map(topics.__getitem__, cols.topic[rows].tolist()),
                _quoted_or_null(count, tags, span_texts(fields.values, fields.tags_pair[tags])),
                keys,
                _quoted_or_null(count, uniq, span_texts(fields.values, fields.uniq_pair[uniq])),
                span_texts(fields.msg_id),
                props,
                fields.body_size.tolist(),
                _bodies(chunk, fields, decode),
            ),
        )
    )
    # the rows the text above would get wrong: escapes, a repeated name (the map keeps the last
    # value at the first name's place), read and printed the precise way
    for r in chunk.rows_holding(fields, _ESCAPED).tolist():
        loc, record = chunk.record(r)
        lines[r] = dumps(message_row(record, file=str(loc.path), position=loc.position, address=loc.address, decode=decode))
    return lines
