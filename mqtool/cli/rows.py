"""Presentation of RocketMQ CommitLog records as rows (dicts of JSON-able values), one at a time
(``message_row``) or a column chunk at a time (``column_lines``)."""

from __future__ import annotations

import binascii
from functools import partial
from json.encoder import encode_basestring

import numpy as np

from mqtool.cli.render import BodyDecode, dumps, encode_bytes
from mqtool.errors import hexint
from mqtool.ops.dump.heap import buffers_kept

# the reading's record types come through ops.dump.rocketmq, which re-exports them: cli/ does not
# import formats/ (tests/test_layering.py)
from mqtool.ops.dump.rocketmq import ColumnChunk, Located, MessageRecord, RecordFields, body_bytes, header_record


def message_row(
    record: MessageRecord, *, file: str, position: int, address: int, decode: BodyDecode, uncompress: bool = False, finding: str | None = None
) -> dict[str, object]:
    """A record's row; ``finding``: the code of the finding a record the walk kept despite
    frame-intact damage carries (``Located.finding``), written as a last ``finding`` field of
    that row only (a healthy record's row has none)."""
    body = body_bytes(record, uncompress)
    row: dict[str, object] = {
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
    if finding is not None:
        row["finding"] = finding
    return row


# --- the same rows as JSON text, straight from the lean reading ------------------------------------
#
# ``column_lines`` writes, for the rows of a ``ColumnChunk``, exactly the text ``dumps`` writes
# for ``message_row`` of the same record (json's separators, ``ensure_ascii=False``, the key order
# above), encoded as UTF-8, a line each: strings go through ``json.encoder.encode_basestring``,
# the function json itself escapes them with; integers print as json prints them.  A test holds
# the two to each other.
#
# The text of a whole chunk is built a field at a time with numpy, not a row at a time: each
# field becomes a matrix of one row per record, its text left in place and the rest of the row
# filled with 0xFF (a byte UTF-8 text never holds); the fields' matrices side by side, less their
# 0xFF bytes, are the rows' text, with a mark where each body goes.  Only the bodies (base64 or
# hex by binascii, one call each) are per row: one ``bytes`` formatting of the whole text puts
# them in at the marks (where the dump keeps its buffers on the heap, ``ops.dump.heap``; else a
# join of the text's pieces and the bodies, whose size is known before it is written).

_JSON_STR = encode_basestring
#: Bytes the widest matrix of a call may take (PROPERTIES, a byte for each byte of the longest):
#: a chunk with a longer one is done in halves, so memory stays bounded whatever a record holds.
MATRIX_BUDGET = 8 << 20
_PAD = 0xFF
#: "0000" .. "9999" as ASCII digits, one row each.
_DIGITS4 = (np.arange(10000)[:, None] // np.array([1000, 100, 10, 1]) % 10 + 48).astype(np.uint8)
_TEN_THOUSAND = np.uint64(10000)
#: The same four digits as one 32-bit word each (a quarter of the elements to gather).
_DIGITS4_WORDS = _DIGITS4.view(np.uint32).ravel()
#: 10**1 .. 10**19: how many of them a magnitude reaches is its number of digits less one.
_POWERS_OF_TEN = np.array([10**k for k in range(1, 20)], dtype=np.uint64)
_MINUS = ord("-")
_PAD_BYTE = bytes([_PAD])
_BODY = b"\xfe"


def _json_str_or_null(value: str | None) -> str:
    return "null" if value is None else _JSON_STR(value)


_MAGIC_TEXT: dict[int, bytes] = {}
_SYSFLAG_TEXT: dict[int, bytes] = {}


def _magic_text(magic: int) -> bytes:
    """``"magic_code": ..., "version": ...`` for a MAGICCODE."""
    text = _MAGIC_TEXT.get(magic)
    if text is None:
        record = header_record(magic, 0)
        text = _MAGIC_TEXT[magic] = f'"magic_code": {_JSON_STR(hexint(record.magic_code))}, "version": {record.version}'.encode()
    return text


def _sys_flag_text(sys_flag: int) -> bytes:
    """``"sys_flag": ..., "transaction_type": ..., "compression": ...`` for a SYSFLAG."""
    text = _SYSFLAG_TEXT.get(sys_flag)
    if text is None:
        if len(_SYSFLAG_TEXT) > 4096:
            _SYSFLAG_TEXT.clear()
        record = header_record(0, sys_flag)
        text = _SYSFLAG_TEXT[sys_flag] = (
            f'"sys_flag": {sys_flag}, "transaction_type": {_JSON_STR(record.transaction_type)}, "compression": {_json_str_or_null(record.compression_type)}'
        ).encode()
    return text


#: The bytes JSON escapes in a string (``"``, ``\\``, control characters): properties (and the
#: tags, keys and UNIQ_KEY inside them) free of these print as they are; the separators 0x01 and
#: 0x02 between names and values are replaced.
_ESCAPED = np.zeros(256, dtype=bool)
_ESCAPED[:0x20] = True
_ESCAPED[[0x22, 0x5C]] = True
_ESCAPED[[1, 2]] = False


def _assemble(count: int, blocks: list[bytes | np.ndarray]) -> np.ndarray:
    """The blocks side by side, a row per record: a ``bytes`` block is the same on every row."""
    merged: list[bytes | np.ndarray] = []
    for block in blocks:  # neighbouring texts as one
        if isinstance(block, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += block
        else:
            merged.append(block)
    blocks = merged
    widths = [len(b) if isinstance(b, bytes) else b.shape[1] for b in blocks]
    out = np.empty((count, sum(widths)), dtype=np.uint8)
    at = 0
    for block, width in zip(blocks, widths):
        out[:, at : at + width] = np.frombuffer(block, dtype=np.uint8) if isinstance(block, bytes) else block
        at += width
    return out


def _spans(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int = 0) -> np.ndarray:
    """The byte ranges ``[starts[i], starts[i] + lengths[i])`` of ``data``, a row each, padded
    (to at least ``width``).  Each row is copied whole from a window of ``data`` (no index per
    byte); the few rows whose window would run past its end take the byte-wise path."""
    width = max(width, int(lengths.max()) if len(lengths) else 0)
    count = len(starts)
    if not count or not width or len(data) < width:
        return _spans_bytewise(data, starts, lengths, width)
    windows = np.lib.stride_tricks.sliding_window_view(data, width)
    inside = starts <= len(data) - width
    out: np.ndarray
    if inside.all():
        out = windows[starts]
    else:
        out = np.empty((count, width), dtype=np.uint8)
        out[inside] = windows[starts[inside]]
        out[~inside] = _spans_bytewise(data, starts[~inside], lengths[~inside], width)
    out[np.arange(width) >= lengths[:, None]] = _PAD
    return out


def _spans_bytewise(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """``_spans`` a byte index at a time (``width`` at least the longest length)."""
    columns = np.arange(width)
    index = starts[:, None] + columns
    out = data[np.minimum(index, max(len(data) - 1, 0))] if len(data) else np.full(index.shape, _PAD, dtype=np.uint8)
    out[columns >= lengths[:, None]] = _PAD
    return out


def _table(texts: list[bytes]) -> np.ndarray:
    """A padded row for each of ``texts``."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return _spans(np.frombuffer(b"".join(texts), dtype=np.uint8), _offsets(lengths), lengths)


def _offsets(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)


def _decimals(columns: list[np.ndarray]) -> list[bytes | np.ndarray]:
    """The decimal text of each integer of each column, as ``%d`` prints it, a padded row each
    (one pass over all the columns: numpy's cost is per call more than per value), or the text
    itself when the column holds one value."""
    stacked = np.stack(columns, axis=1).astype(np.int64)
    # a column of one value (FLAG, RECONSUMETIMES, ... are often all 0) is printed once
    lowest, highest = stacked.min(axis=0).tolist(), stacked.max(axis=0).tolist()
    varying = [c for c in range(len(columns)) if lowest[c] != highest[c]]
    out: list[bytes | np.ndarray] = [b"%d" % lowest[c] for c in range(len(columns))]
    if varying:
        for c, text in zip(varying, _decimal_text(stacked[:, varying])):
            out[c] = text
    return out


def _decimal_text(stacked: np.ndarray) -> list[np.ndarray]:
    """``_decimals`` of the columns of ``stacked`` (int64, a row per record)."""
    count, columns = stacked.shape
    v = stacked.ravel()
    negative = v < 0
    magnitude = v.astype(np.uint64)
    np.negative(magnitude, out=magnitude, where=negative)  # two's complement: |v|, INT64_MIN too
    # the first digit shown: as many from the end as the magnitude has (one for zero); a sign
    # just before it
    shown = np.searchsorted(_POWERS_OF_TEN, magnitude, side="right") + 1
    groups = []
    while True:  # four digits at a time
        magnitude, low = np.divmod(magnitude, _TEN_THOUSAND)
        groups.append(low)
        if not magnitude.any():
            break
    width = 4 * len(groups) + 1
    text = np.empty((len(v), width), dtype=np.uint8)
    text[:, 0] = _PAD
    text[:, 1:] = _DIGITS4_WORDS[np.stack(groups[::-1], axis=1).astype(np.intp)].view(np.uint8).reshape(len(v), -1)
    first = width - shown
    text[np.arange(width) < first[:, None]] = _PAD
    signed = np.flatnonzero(negative)
    text[signed, first[signed] - 1] = _MINUS
    starts = (first - negative).reshape(count, columns).min(axis=0).tolist()
    by_column = text.reshape(count, columns, width)
    return [by_column[:, c, start:] for c, start in enumerate(starts)]


def _quoted_or_null(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, present: np.ndarray) -> np.ndarray:
    """``"value"`` for the rows ``present`` (their spans in ``values``), ``null`` for the others."""
    count = len(present)
    which = np.flatnonzero(present)
    inner = _spans(values, starts[which], lengths[which], 2)
    out = np.full((count, inner.shape[1] + 2), _PAD, dtype=np.uint8)
    out[~present, :4] = np.frombuffer(b"null", dtype=np.uint8)
    out[which, 0] = out[which, -1] = ord('"')
    out[which, 1:-1] = inner
    return out


#: In the rows' text before its last step, 0x01 and 0x02 stand for what goes between a property's
#: name and value and between two values (or two KEYS tokens): JSON text never holds them raw
#: (rows whose strings hold control characters take the precise path), so one ``bytes.replace``
#: each puts them in for the whole batch, instead of four bytes of matrix for every byte.
_NAME_VALUE, _NEXT = b"\x01", b"\x02"
_NAME_VALUE_TEXT, _NEXT_TEXT = b'": "', b'", "'


def _properties(data: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PROPERTIES ``n1 0x01 v1 0x02 n2 0x01 v2 0x02`` as ``"n1 0x01 v1 0x02 n2 0x01 v2"`` (the
    separators as they are: see ``_NAME_VALUE``), and which rows hold a byte JSON escapes (their
    text is not this)."""
    lengths = stops - starts
    raw = _spans(data, starts, lengths)
    count, width = raw.shape
    out = np.empty((count, width + 1), dtype=np.uint8)
    out[:, 0] = np.where(lengths > 0, ord('"'), _PAD)
    out[:, 1:] = raw
    full = np.flatnonzero(lengths > 0)
    out[full, lengths[full]] = ord('"')  # the last 0x02 closes the last value
    return out, _ESCAPED[raw].any(axis=1)


def _keys(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The non-empty tokens of KEYS (split on a space) as ``"k1 0x02 k2"`` (see ``_NEXT``)."""
    raw = _spans(data, starts, lengths)
    count, width = raw.shape
    token = (raw != 0x20) & (raw != _PAD)
    after = np.logical_or.accumulate(token[:, ::-1], axis=1)[:, ::-1]  # a token here or further on
    out = np.full((count, width + 2), _PAD, dtype=np.uint8)
    inner = out[:, 1:-1]
    inner[token] = raw[token]
    # the first space of a run between two tokens separates them
    between = np.zeros_like(token)
    between[:, 1:] = ~token[:, 1:] & token[:, :-1] & after[:, 1:]
    inner[between] = _NEXT[0]
    held = token.any(axis=1)
    out[held, 0] = out[held, -1] = ord('"')
    return out


def _body_texts(chunk: ColumnChunk, fields: RecordFields, decode: BodyDecode) -> list[bytes]:
    """``encode_bytes(body, decode)`` of each row: base64 or hex digits (quoted by the row), or
    (utf8) a JSON string."""
    view = memoryview(chunk.buf)  # the bodies as views: no copy before the encoding's
    bodies = map(view.__getitem__, map(slice, fields.body_at.tolist(), (fields.body_at + fields.body_size).tolist()))
    if decode is BodyDecode.base64:
        return list(map(partial(binascii.b2a_base64, newline=False), bodies))
    if decode is BodyDecode.hex:
        return list(map(binascii.hexlify, bodies))
    return [_JSON_STR(bytes(body).decode("utf-8", "backslashreplace")).encode() for body in bodies]


def column_lines(chunk: ColumnChunk, decode: BodyDecode) -> bytes:
    """``dumps(message_row(...))`` of the rows of ``chunk`` (``decode`` as given, bodies as
    stored: ``--uncompress`` needs the precise rows), as UTF-8, each followed by a newline, built
    a column at a time; a row whose properties need JSON escapes or repeat a name takes the
    precise path."""
    cols, rows = chunk.walk.columns, chunk.rows
    count = len(rows)
    if not count:
        return b""
    fields = chunk.fields()
    widest = int((fields.props_end - fields.props_at).max())
    if count > 1 and widest * count > MATRIX_BUDGET:  # one long PROPERTIES pads every row to it
        half = count // 2
        return column_lines(chunk.part(0, half), decode) + column_lines(chunk.part(half, count), decode)
    data = np.frombuffer(chunk.buf, dtype=np.uint8)
    path = _JSON_STR(str(chunk.path)).encode("utf-8", "surrogateescape")
    if _PAD in path:  # a file name that is not UTF-8 holds the byte the text is padded with
        return b"".join(_precise_line(chunk, r, decode) for r in range(count))
    at = cols.position[rows]
    has_body = decode is not BodyDecode.none
    quoted = decode in (BodyDecode.base64, BodyDecode.hex)
    magics, magic_of = np.unique(fields.magic, return_inverse=True)
    flags, flag_of = np.unique(cols.sys_flag[rows], return_inverse=True)
    hosts = _table([h.encode() for h in fields.hosts])
    values, value_offsets = fields.values.values, fields.values.offsets.astype(np.int64)
    value_at, value_len = value_offsets[:-1], np.diff(value_offsets)

    def value(pair: np.ndarray) -> bytes | np.ndarray:
        """The value of each row's pair (``-1``: none)."""
        return _quoted_or_null(values, value_at[np.maximum(pair, 0)], value_len[np.maximum(pair, 0)], pair >= 0) if len(value_at) else b"null"

    properties, escaped = _properties(data, fields.props_at, fields.props_end)
    has_keys = fields.keys_pair >= 0
    keys_pair = np.maximum(fields.keys_pair, 0)
    msg_offsets = fields.msg_id.offsets.astype(np.int64)
    # PHYSICALOFFSET is the record's commitlog offset: the walk takes no record where it is not
    (
        position, commitlog_offset, total_size, body_crc, queue_id, flag, queue_offset,
        born_timestamp, store_timestamp, reconsume_times, prepared_transaction_offset, body_size,
    ) = _decimals([
        at + chunk.offset, at + chunk.base, cols.size[rows], fields.body_crc, cols.queue_id[rows], fields.flag,
        cols.queue_offset[rows], fields.born_timestamp, cols.store_timestamp[rows],
        fields.reconsume_times, fields.prepared_transaction_offset, fields.body_size,
    ])  # fmt: skip
    # each row's text, with 0xFE (never in UTF-8 text either) where its body goes
    tail = b'"}\n' if quoted else b"}\n"
    blocks: list[bytes | np.ndarray] = [
        b'{"file": ' + path + b', "position": ',
        position,
        b', "commitlog_offset": ',
        commitlog_offset,
        b', "total_size": ',
        total_size,
        b", ",
        _table([_magic_text(int(m)) for m in magics])[magic_of.ravel()],
        b', "body_crc": ',
        body_crc,
        b', "queue_id": ',
        queue_id,
        b', "flag": ',
        flag,
        b', "queue_offset": ',
        queue_offset,
        b', "physical_offset": ',
        commitlog_offset,
        b", ",
        _table([_sys_flag_text(int(f)) for f in flags])[flag_of.ravel()],
        b', "born_timestamp": ',
        born_timestamp,
        b', "born_host": "',
        hosts[fields.born_host],
        b'", "store_timestamp": ',
        store_timestamp,
        b', "store_host": "',
        hosts[fields.store_host],
        b'", "reconsume_times": ',
        reconsume_times,
        b', "prepared_transaction_offset": ',
        prepared_transaction_offset,
        b', "topic": ',
        _table([_JSON_STR(t).encode() for t in cols.topics])[cols.topic[rows]],
        b', "tags": ',
        value(fields.tags_pair),
        b', "keys": [',
        _keys(values, np.where(has_keys, value_at[keys_pair], 0), np.where(has_keys, value_len[keys_pair], 0)) if len(value_at) else b"",
        b'], "uniq_key": ',
        value(fields.uniq_pair),
        b', "msg_id": "',
        _spans(fields.msg_id.values, msg_offsets[:-1], np.diff(msg_offsets)),
        b'", "properties": {',
        properties,
        b'}, "body_size": ',
        body_size,
        (b', "body": "' if quoted else b', "body": ' if has_body else b', "body": null') + _BODY + tail,
    ]
    text = _assemble(count, blocks).tobytes().translate(None, _PAD_BYTE).replace(_NAME_VALUE, _NAME_VALUE_TEXT).replace(_NEXT, _NEXT_TEXT)
    # the rows the text above would get wrong: escapes, a repeated name (the map keeps the last
    # value at the first name's place), read and printed the precise way
    held = np.union1d(np.flatnonzero(escaped), chunk.rows_repeating_names(fields)).tolist()
    if not held and (not has_body or buffers_kept()):  # the bodies put in by one formatting of the whole text
        if not has_body:
            return text.replace(_BODY, b"")
        return text.replace(b"%", b"%%").replace(_BODY, b"%s") % tuple(_body_texts(chunk, fields, decode))
    # the text of row r is heads[r] (after the end of row r - 1: none for the first), its body
    heads = text.split(_BODY)
    parts: list[bytes] = [b""] * (2 * count + 1)
    parts[0::2] = heads
    if has_body:
        parts[1::2] = _body_texts(chunk, fields, decode)
    precise = set(held)
    for r in held:
        parts[2 * r] = (tail if r and r - 1 not in precise else b"") + _precise_line(chunk, r, decode)
        parts[2 * r + 1] = b""
        parts[2 * r + 2] = parts[2 * r + 2][len(tail) :]  # the end of row r, opening the next
    return b"".join(parts)


def _precise_line(chunk: ColumnChunk, row: int, decode: BodyDecode) -> bytes:
    """Row ``row`` of ``chunk`` read by the precise decoder, as a JSON line."""
    return record_line(*chunk.record(row), decode)


def record_line(loc: Located, record: MessageRecord, decode: BodyDecode) -> bytes:
    """``dumps(message_row(...))`` of a record the precise decoder read, as a UTF-8 line (a file
    name that is not UTF-8 as its bytes)."""
    line = dumps(message_row(record, file=str(loc.path), position=loc.position, address=loc.address, decode=decode, finding=loc.finding))
    return (line + "\n").encode("utf-8", "surrogateescape")
