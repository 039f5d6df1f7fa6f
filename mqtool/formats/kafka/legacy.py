"""Kafka message format v0 / v1 (``LegacyRecord``, ``AbstractLegacyRecordBatch``).

v0 = Kafka 0.8-0.9, v1 = 0.10+ (KIP-32, adds a timestamp).  A ``.log`` entry is the 12-byte
log header followed by one message.  Positions are from the start of the entry::

    pos  size  field        meaning
    0    8     offset       offset of this message; for a compressed wrapper the offset of its
                            *last* inner message
    8    4     size         bytes that follow this field (the message); >= 14 (v0) / 22 (v1)
    12   4     crc          uint32 CRC-32 (zlib) over bytes 16 .. end of the message
    16   1     magic        0 or 1
    17   1     attributes   bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 timestamp type
                            (v1: 0 CreateTime, 1 LogAppendTime), bits 4-7 unused
    18   8     timestamp    v1 only, ms (-1 = none)
    18|26 4    key length   -1 = null key
         K     key
         4     value length -1 = null value
         V     value        for a wrapper (codec != 0): the compressed inner message set

Compressed wrappers: the value decompresses to a message set (entries as above).  v0 inner
offsets are absolute; v1 inner offsets are relative (0 .. n-1, or with gaps after compaction)
and absolute = wrapper offset - last inner offset + inner offset (wrapper offset 0 means base
0: produce data from some librdkafka versions).  Inner v1 messages take the wrapper's timestamp
type, and the wrapper's timestamp when that type is LogAppendTime.  Inner messages must not be
compressed; zstd wrappers are invalid (zstd needs v2).  Inner messages must have the wrapper's
magic and valid CRCs: the broker's ``LogValidator`` enforces both before a compressed v0/v1 set
reaches the log (upstream's read-side deep iterator checks neither; ``check_crc=False`` skips
the inner CRCs here too).

What the CRC covers: magic through the last byte of the value; the offset and size are outside
it (the broker assigns offsets without recomputing CRCs of v0/v1 messages).

A partial write on disk: the entry's size reaches past the end of the file (the log walker
reports a ``partial`` end), or zeros where the next entry should start (pre-allocated file).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError, hexint
from mqtool.formats._binary import I32, Buffer, need
from mqtool.formats.checksums import crc32
from mqtool.formats.kafka import compression
from mqtool.formats.kafka.compression import DEFAULT_MAX_DECOMPRESSED_SIZE

MAGIC_V0 = 0
MAGIC_V1 = 1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1
TIMESTAMP_TYPE_NAMES = {None: "NoTimestampType", CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime"}

_LOG_HEADER = struct.Struct(">qi")  # offset, size
_MESSAGE_HEADER = struct.Struct(">Ibb")  # crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_LENGTH = I32

LOG_OVERHEAD = _LOG_HEADER.size  # 12
SIZE_POSITION = LOG_OVERHEAD - _LENGTH.size  # 8
CRC_POSITION = LOG_OVERHEAD
MAGIC_POSITION = CRC_POSITION + struct.calcsize(">I")  # 16
ATTRIBUTES_POSITION = MAGIC_POSITION + 1
_HEADER_V0 = LOG_OVERHEAD + _MESSAGE_HEADER.size  # 18: key length of v0
_HEADER_V1 = _HEADER_V0 + _TIMESTAMP.size  # 26: key length of v1
RECORD_OVERHEAD_V0 = _MESSAGE_HEADER.size + 2 * _LENGTH.size  # 14
RECORD_OVERHEAD_V1 = RECORD_OVERHEAD_V0 + _TIMESTAMP.size  # 22


def record_overhead(magic: int) -> int:
    return RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1


@dataclass(frozen=True)
class LegacyRecord:
    """One v0/v1 message with its log offset (upstream ``LegacyRecord`` + its entry offset).

    ``crc`` is the stored checksum, filled by the decoder and recomputed by the encoder, so it
    does not take part in equality; ``computed_crc`` is the CRC-32 the decoder computed over
    the message's bytes as stored (None for a record not decoded from bytes), so ``is_valid``
    answers as upstream's ``LegacyRecord.isValid`` does, whether or not the decoder was asked
    to check it.  Records returned by ``decode_inner_messages`` carry the *effective* offset
    (absolute), timestamp and timestamp type, as upstream's deep iterator, and the checksums of
    their own stored bytes.
    """

    offset: int
    value: bytes | None
    key: bytes | None = None
    magic: int = MAGIC_V1
    attributes: int = 0
    timestamp: int = NO_TIMESTAMP
    crc: int = field(default=0, compare=False)
    computed_crc: int | None = field(default=None, compare=False)

    @property
    def is_valid(self) -> bool:
        """The stored CRC is the one computed over the stored bytes (``LegacyRecord.isValid``);
        True for a record not decoded from bytes."""
        return self.computed_crc is None or self.crc == self.computed_crc

    @property
    def compression_type(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def is_compressed(self) -> bool:
        return self.compression_type != compression.NONE

    @property
    def timestamp_type(self) -> int | None:
        """None (``NoTimestampType``) for v0, else ``CREATE_TIME``/``LOG_APPEND_TIME``."""
        if self.magic == MAGIC_V0:
            return None
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def timestamp_type_name(self) -> str:
        return TIMESTAMP_TYPE_NAMES[self.timestamp_type]

    @property
    def size(self) -> int:
        """Bytes of the whole log entry (12-byte header + message)."""
        return LOG_OVERHEAD + message_size(self.magic, self.key, self.value)


def message_size(magic: int, key: bytes | None, value: bytes | None) -> int:
    """The ``size`` field of a message with this key and value."""
    return record_overhead(magic) + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)


# --- peek / decode ---------------------------------------------------------------------------


def peek_message(buf: Buffer, position: int = 0) -> tuple[int, int, int]:
    """``(offset, size, magic)`` of the entry at ``position`` (checked; 17 bytes)."""
    need(buf, position, MAGIC_POSITION + 1, "log entry header (offset, size, crc, magic)")
    offset, size = _LOG_HEADER.unpack_from(buf, position)
    return offset, size, buf[position + MAGIC_POSITION]


def decode_message(buf: Buffer, position: int = 0, *, check_crc: bool = True) -> LegacyRecord:
    """Decode the v0/v1 entry at ``position`` (shallow: a wrapper's value stays compressed)."""
    offset, size, magic = peek_message(buf, position)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise CorruptDataError(position=position + MAGIC_POSITION, expected="message magic 0 or 1", found=str(magic), kind="magic")
    overhead = record_overhead(magic)
    if size < overhead:
        raise CorruptDataError(
            position=position + SIZE_POSITION,
            expected=f"a message size >= {overhead} (magic {magic} overhead)",
            found=str(size),
            kind="magic",
        )
    need(buf, position, LOG_OVERHEAD + size, f"message of {size} bytes")
    view = memoryview(buf)[position : position + LOG_OVERHEAD + size]
    try:
        return _decode_view(view, offset, size, magic, check_crc)
    except MqError as exc:
        raise exc.at(None, position) from None


def _decode_view(view: memoryview, offset: int, size: int, magic: int, check_crc: bool) -> LegacyRecord:
    stored_crc, _, attributes = _MESSAGE_HEADER.unpack_from(view, CRC_POSITION)
    end = LOG_OVERHEAD + size
    computed = crc32(view[MAGIC_POSITION:end])
    if check_crc:
        if computed != stored_crc:
            raise ChecksumError(
                "message CRC mismatch",
                position=CRC_POSITION,
                expected=f"CRC-32 {hexint(computed)} (over bytes {MAGIC_POSITION}..{end} of the entry)",
                found=hexint(stored_crc),
            )
    if magic == MAGIC_V1:
        (timestamp,) = _TIMESTAMP.unpack_from(view, _HEADER_V0)
        pos = _HEADER_V1
    else:
        timestamp = NO_TIMESTAMP
        pos = _HEADER_V0
    key, pos = _sized(view, pos, end, "key")
    value, pos = _sized(view, pos, end, "value")
    if pos != end:
        raise CorruptDataError(
            position=SIZE_POSITION,
            expected=f"message size {pos - LOG_OVERHEAD} (from the key and value lengths)",
            found=str(size),
        )
    return LegacyRecord(offset=offset, value=value, key=key, magic=magic, attributes=attributes, timestamp=timestamp, crc=stored_crc, computed_crc=computed)


def _sized(view: memoryview, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    if end - pos < _LENGTH.size:
        raise TruncatedDataError(position=pos, expected=f"4-byte {what} length", found=f"{end - pos} bytes left in the message")
    (length,) = _LENGTH.unpack_from(view, pos)
    pos += _LENGTH.size
    if length < 0:  # upstream: any negative length reads as null
        return None, pos
    if length > end - pos:
        raise TruncatedDataError(position=pos - _LENGTH.size, expected=f"{length} bytes of {what}", found=f"{end - pos} bytes left in the message")
    return bytes(view[pos : pos + length]), pos + length


def iter_message_set(buf: Buffer, *, check_crc: bool = True) -> Iterator[tuple[int, LegacyRecord]]:
    """``(position, record)`` for every entry of a complete message set (an inner set).

    Unlike a ``.log`` file, a message set has no clean partial end: every byte must belong to
    a whole entry (a short tail raises ``TruncatedDataError``).
    """
    size = len(buf)
    pos = 0
    while pos < size:
        record = decode_message(buf, pos, check_crc=check_crc)
        yield pos, record
        pos += record.size


# --- compressed wrappers ----------------------------------------------------------------------


def decode_inner_messages(wrapper: LegacyRecord, *, check_crc: bool = True, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> tuple[LegacyRecord, ...]:
    """The inner messages of a compressed wrapper, with absolute offsets (``DeepRecordsIterator``).

    Positions in errors are relative to the decompressed inner message set; errors in the
    compressed stream itself carry no position and say where in the value they are.
    """
    codec = wrapper.compression_type
    if codec == compression.NONE:
        raise ValueError("not a compressed wrapper message")
    if codec not in (compression.GZIP, compression.SNAPPY, compression.LZ4):
        raise CorruptDataError(
            position=ATTRIBUTES_POSITION,
            expected="wrapper codec gzip, snappy or lz4 (zstd needs message format v2)",
            found=f"codec {codec}",
        )
    if wrapper.value is None:
        raise CorruptDataError(expected="a compressed inner message set in the wrapper value", found="a null value")
    try:
        raw = compression.decompress(codec, wrapper.value, magic=wrapper.magic, max_size=max_size)
    except CorruptDataError as exc:
        # Not a position in the inner set: say where in the compressed value it is.
        where = "in the compressed wrapper value" + (f" at byte {exc.position}" if exc.position is not None else "")
        message = f"{where}: {exc.message}" if exc.message else where
        raise exc.__class__(message, expected=exc.expected, found=exc.found, kind="compression") from None
    inner: list[LegacyRecord] = []
    wrapper_type = wrapper.attributes & TIMESTAMP_TYPE_MASK
    for pos, record in iter_message_set(raw, check_crc=check_crc):
        if record.magic != wrapper.magic:
            raise CorruptDataError(
                position=pos + MAGIC_POSITION,
                expected=f"inner magic {wrapper.magic} (the wrapper's)",
                found=str(record.magic),
                kind="magic",
            )
        if record.is_compressed:
            raise CorruptDataError(position=pos + ATTRIBUTES_POSITION, expected="an uncompressed inner message", found=f"codec {record.compression_type}")
        if record.magic == MAGIC_V1:
            timestamp = wrapper.timestamp if wrapper_type else record.timestamp
            attributes = (record.attributes & ~TIMESTAMP_TYPE_MASK) | wrapper_type
            record = replace(record, timestamp=timestamp, attributes=attributes)
        inner.append(record)
    if not inner:
        raise CorruptDataError(expected="at least one inner message in the compressed wrapper", found="none")
    if wrapper.magic == MAGIC_V1:
        last_inner = inner[-1].offset
        if wrapper.offset == 0:
            base = 0
        elif wrapper.offset < last_inner:
            raise CorruptDataError(expected=f"a wrapper offset >= the last inner offset {last_inner}", found=str(wrapper.offset))
        else:
            base = wrapper.offset - last_inner
        inner = [replace(r, offset=base + r.offset) for r in inner]
    return tuple(inner)


def deep_messages(record: LegacyRecord, *, check_crc: bool = True, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> tuple[LegacyRecord, ...]:
    """The logical messages of an entry: itself, or a wrapper's inner messages."""
    if not record.is_compressed:
        return (record,)
    return decode_inner_messages(record, check_crc=check_crc, max_size=max_size)


# --- encode ----------------------------------------------------------------------------------


def encode_message(record: LegacyRecord) -> bytes:
    """The log entry bytes of ``record``; the CRC is computed."""
    magic = record.magic
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    if magic == MAGIC_V0 and record.timestamp != NO_TIMESTAMP:
        raise ValueError("a v0 message has no timestamp (use -1)")
    if not -128 <= record.attributes <= 127:
        raise ValueError("attributes is a signed byte")
    size = message_size(magic, record.key, record.value)
    body = bytearray()
    body += bytes((magic & 0xFF, record.attributes & 0xFF))
    if magic == MAGIC_V1:
        body += _TIMESTAMP.pack(record.timestamp)
    for part in (record.key, record.value):
        if part is None:
            body += _LENGTH.pack(-1)
        else:
            body += _LENGTH.pack(len(part))
            body += part
    return _LOG_HEADER.pack(record.offset, size) + struct.pack(">I", crc32(body)) + bytes(body)


def encode_message_set(records: Sequence[LegacyRecord]) -> bytes:
    return b"".join(encode_message(r) for r in records)


def encode_wrapper(
    records: Sequence[LegacyRecord],
    *,
    codec: int,
    magic: int | None = None,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int | None = None,
    level: int | None = None,
) -> LegacyRecord:
    """Build a compressed wrapper the way the producer/broker does (``MemoryRecordsBuilder``).

    ``records`` carry absolute offsets.  v0 keeps them; v1 writes them relative to the first one.
    The wrapper offset is the last record's offset; its v1 timestamp is the largest inner
    timestamp (CreateTime) or ``log_append_time`` (LogAppendTime).
    """
    if not records:
        raise ValueError("a wrapper needs at least one inner message")
    if codec not in (compression.GZIP, compression.SNAPPY, compression.LZ4):
        raise ValueError("legacy wrappers use gzip, snappy or lz4")
    magic = records[0].magic if magic is None else magic
    base = records[0].offset
    inner = []
    for r in records:
        if r.magic != magic or r.is_compressed:
            raise ValueError("inner messages must be uncompressed and of the wrapper's magic")
        inner.append(r if magic == MAGIC_V0 else replace(r, offset=r.offset - base))
    value = compression.compress(codec, encode_message_set(inner), magic=magic, level=level)
    attributes = codec
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        if timestamp_type == LOG_APPEND_TIME:
            if log_append_time is None:
                raise ValueError("LogAppendTime needs log_append_time")
            attributes |= TIMESTAMP_TYPE_MASK
            timestamp = log_append_time
        else:
            timestamp = max(r.timestamp for r in records)
    return LegacyRecord(offset=records[-1].offset, value=value, key=None, magic=magic, attributes=attributes, timestamp=timestamp)


__all__ = [
    "MAGIC_V0",
    "MAGIC_V1",
    "LOG_OVERHEAD",
    "MAGIC_POSITION",
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "NO_TIMESTAMP",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "LegacyRecord",
    "message_size",
    "record_overhead",
    "peek_message",
    "decode_message",
    "iter_message_set",
    "decode_inner_messages",
    "deep_messages",
    "encode_message",
    "encode_message_set",
    "encode_wrapper",
]
