"""``dump kafka-log --deep`` rows as JSON text straight from the lean reading's columns.

``run_lines`` writes, for a ``RecordRun``, exactly the text ``dumps`` writes for ``batch_row``
and ``record_row`` of the same batches and records (json's separators, ``ensure_ascii=False``,
the key order of ``record_row``), encoded as UTF-8, a line each: strings go through
``json.encoder.encode_basestring``, the function json itself escapes them with; integers print
as json prints them.  A test holds the two to each other.

The text is built a column at a time: the bytes of each key, value and header value are encoded
(base64 or hex by binascii) by one ``map`` over the column, and every record's line is one
``%``-format of its values -- no dict, no JSON encoder, no ``RecordInfo`` per record.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from functools import partial
from json.encoder import encode_basestring

import numpy as np

from mqtool.cli.render import BodyDecode, dumps
from mqtool.cli.rows_kafka import batch_row, record_row
from mqtool.ops.dump.kafka import BatchInfo, DumpItem, LogTarget, RecordRun

_JSON_STR = encode_basestring
_B64 = partial(binascii.b2a_base64, newline=False)
_QUOTE = b'"'

#: A record's line after its batch's own text (file, topic, partition, batch position): offset,
#: timestamp type and timestamp, sizes, sequence, headers, key and payload (each key, payload and
#: header value between the quote or nothing either side of it: null has none).
_RECORD_HEAD = b'%s%d, "timestamp_type": %s, "timestamp": %d, "key_size": %d, "value_size": %d, "sequence": %d, '
_NO_HEADERS = b'"header_keys": [], "headers": []'
_HEADERS = b'"header_keys": [%s], "headers": [%s]'


def _utf8(data: bytes) -> bytes:
    return _JSON_STR(data.decode("utf-8", "backslashreplace")).encode("utf-8")


def _encoder(decode: BodyDecode) -> tuple[Callable[[bytes], bytes] | None, bytes]:
    """(encode the bytes of one value, the quote around the result): ``encode_bytes`` as JSON."""
    if decode is BodyDecode.base64:
        return _B64, _QUOTE
    if decode is BodyDecode.hex:
        return binascii.hexlify, _QUOTE
    if decode is BodyDecode.utf8:
        return _utf8, b""
    return None, b""


def _values(data: bytes, at: np.ndarray, length: np.ndarray, decode: BodyDecode) -> tuple[bytes, list[list[bytes]]]:
    """The format of a value's JSON text and the columns that fill it: the text of each span
    (``null`` where its length is -1) between the quote or nothing either side (none for null;
    in the format itself when no span is null)."""
    encode, quote = _encoder(decode)
    count = len(at)
    if encode is None:
        return b"null", []
    texts = _short_texts(data, at, length, decode)
    if texts is None:
        ends = at + np.maximum(length, 0)
        texts = list(map(encode, map(data.__getitem__, map(slice, at.tolist(), ends.tolist()))))
    nulls = np.flatnonzero(length < 0).tolist()
    if not nulls:
        return quote + b"%s" + quote, [texts]
    quotes = [quote] * count
    for i in nulls:
        texts[i] = b"null"
        quotes[i] = b""
    return b"%s%s%s", [quotes, texts, quotes]


#: Spans of at most this many bytes are encoded a column at a time (``_short_texts``).
SHORT_SPAN = 48
_B64_PAD = ord("=")


def _short_texts(data: bytes, at: np.ndarray, length: np.ndarray, decode: BodyDecode) -> list[bytes] | None:
    """The base64 or hex text of each span (empty for null) when every span is short: the spans
    copied into the rows of one zero-padded array, encoded by one binascii call (a row of a
    multiple of 3 bytes encodes on its own in base64), the padding of each row's last group made
    ``=`` and the text past its end zero, read back as a column of bytes (numpy drops a fixed-width
    bytes value's trailing zeros: neither encoding writes one).  None when a span is longer than
    ``SHORT_SPAN`` or the decode is neither (each span is encoded on its own then)."""
    if decode not in (BodyDecode.base64, BodyDecode.hex) or not len(at):
        return None
    n = np.maximum(length, 0)
    longest = int(n.max())
    if longest > SHORT_SPAN:
        return None
    if longest == 0:
        return [b""] * len(at)
    width = (longest + 2) // 3 * 3 if decode is BodyDecode.base64 else longest
    d = np.frombuffer(data, dtype=np.uint8)
    columns = np.arange(width)
    rows = d[np.minimum(at[:, None] + columns, len(d) - 1)]
    rows[columns >= n[:, None]] = 0
    if decode is BodyDecode.base64:
        text_width = width // 3 * 4
        text = np.frombuffer(_B64(rows.tobytes()), dtype=np.uint8).reshape(len(at), text_width).copy()
        used = (n + 2) // 3 * 4
        short = n % 3
        index = np.arange(len(at))
        text[index[short > 0], used[short > 0] - 1] = _B64_PAD
        text[index[short == 1], used[short == 1] - 2] = _B64_PAD
    else:
        text_width = 2 * width
        text = np.frombuffer(binascii.hexlify(rows.tobytes()), dtype=np.uint8).reshape(len(at), text_width).copy()
        used = 2 * n
    text[np.arange(text_width) >= used[:, None]] = 0
    texts: list[bytes] = text.view(f"S{text_width}").ravel().tolist()
    return texts


class _HeaderKeys(dict[bytes, bytes]):
    """Header key bytes -> their JSON string (as ``RecordHeader.key`` decodes them)."""

    def __missing__(self, raw: bytes) -> bytes:
        if len(self) > 4096:
            self.clear()
        text = self[raw] = _JSON_STR(raw.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        return text


_HEADER_KEYS = _HeaderKeys()


def _header_keys(run: RecordRun) -> list[bytes]:
    """The JSON string of each header's key (one lookup when they are all the same bytes)."""
    data, at, length = run.data, run.header_key_at, run.header_key_len
    first = int(length[0])
    if first * len(at) <= 1 << 22 and (length == first).all():
        raw = np.frombuffer(data, dtype=np.uint8)[at[:, None] + np.arange(first)]
        if (raw == raw[0]).all():
            return [_HEADER_KEYS[bytes(raw[0])]] * len(at)
    return list(map(_HEADER_KEYS.__getitem__, map(data.__getitem__, map(slice, at.tolist(), (at + length).tolist()))))


def _headers(run: RecordRun, decode: BodyDecode) -> tuple[bytes, list[list[bytes]]]:
    """The headers' part of the record line's format and the columns that fill it."""
    count = len(run)
    counts = run.header_count
    if not len(run.header_key_at):
        return _NO_HEADERS, []
    keys = _header_keys(run)
    value_format, value_columns = _values(run.data, run.header_value_at, run.header_value_len, decode)
    header = b'{"key": %s, "value": ' + value_format + b"}"
    if (counts == 1).all():
        return b'"header_keys": [%s], "headers": [' + header + b"]", [keys, keys, *value_columns]
    texts = list(map(header.__mod__, zip(keys, *value_columns))) if value_columns else [header % k for k in keys]
    key_rows, text_rows = [b""] * count, [b""] * count
    starts = (np.cumsum(counts) - counts).tolist()
    for r in np.flatnonzero(counts).tolist():
        a = starts[r]
        b = a + int(counts[r])
        key_rows[r] = b", ".join(keys[a:b])
        text_rows[r] = b", ".join(texts[a:b])
    return _HEADERS, [key_rows, text_rows]


def _text(value: str | None) -> bytes:
    return b"null" if value is None else _JSON_STR(value).encode("utf-8", "surrogateescape")


def run_lines(run: RecordRun, *, decode: BodyDecode, records_only: bool) -> bytes:
    """The JSON lines of ``run``: each batch's row (unless ``records_only``) followed by its
    records' rows, as ``dumps(batch_row(...))`` and ``dumps(record_row(...))`` have them."""
    target = run.target
    head = b'{"kind": "record", "file": %s, "topic": %s, "partition": %s, "batch_position": ' % (
        _text(str(target.path)),
        _text(target.topic),
        b"null" if target.partition_id is None else b"%d" % target.partition_id,
    )
    counts = run.counts.tolist()
    prefixes = np.repeat(np.array([head + b'%d, "offset": ' % b.position for b in run.batches], dtype=object), counts).tolist()
    types = np.repeat(np.array([_text(b.timestamp_type) for b in run.batches], dtype=object), counts).tolist()
    data = run.data
    key_format, key_columns = _values(data, run.key_at, run.key_len, decode)
    value_format, value_columns = _values(data, run.value_at, run.value_len, decode)
    header_format, header_columns = _headers(run, decode)
    columns = [
        prefixes, run.offset.tolist(), types, run.timestamp.tolist(), run.key_len.tolist(), run.value_len.tolist(), run.sequence.tolist(),
        *header_columns, *key_columns, *value_columns,
    ]  # fmt: skip
    record = _RECORD_HEAD + header_format + b', "key": ' + key_format + b', "payload": ' + value_format + b"}\n"
    lines = list(map(record.__mod__, zip(*columns)))
    if records_only:
        return b"".join(lines)
    out: list[bytes] = []
    at = 0
    for batch, n in zip(run.batches, counts):
        out.append(_batch_line(target, batch, decode))
        out.extend(lines[at : at + n])
        at += n
    return b"".join(out)


def _batch_line(target: LogTarget, batch: BatchInfo, decode: BodyDecode) -> bytes:
    return (dumps(batch_row(DumpItem(target, batch), decode=decode, table=False)) + "\n").encode("utf-8", "surrogateescape")


def item_lines(item: DumpItem, *, decode: BodyDecode, records_only: bool) -> bytes:
    """The JSON lines of a precise ``DumpItem``: its batch row (unless ``records_only``) and its
    records' rows, as the row stream writes them."""
    lines = [] if records_only else [dumps(batch_row(item, decode=decode, table=False))]
    target = item.target
    for record in item.records or ():
        lines.append(dumps(record_row(item.batch, target.topic, target.partition_id, record, decode=decode, table=False, finding=item.finding)))
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")
