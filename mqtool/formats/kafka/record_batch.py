"""Kafka record batch v2 (magic 2, Kafka 0.11+, KIP-98): ``DefaultRecordBatch``, ``DefaultRecord``.

Batch header (61 bytes, big-endian)::

    pos  size  field                  meaning
    0    8     base_offset            offset of the first record (kept by compaction)
    8    4     batch_length           bytes after this field (batch size - 12), >= 49
    12   4     partition_leader_epoch -1 = none; set by the broker, NOT covered by the CRC
    16   1     magic                  2
    17   4     crc                    uint32 CRC-32C (Castagnoli) over bytes 21 .. end of batch
    21   2     attributes             bits 0-2 codec, 3 timestamp type (LogAppendTime), 4
                                      transactional, 5 control, 6 has delete horizon
    23   4     last_offset_delta      last offset = base_offset + last_offset_delta
    27   8     base_timestamp         first timestamp; the delete horizon when bit 6 is set
    35   8     max_timestamp          largest record timestamp (or the LogAppendTime)
    43   8     producer_id            -1 = none
    51   2     producer_epoch         -1 = none
    53   4     base_sequence          -1 = none
    57   4     records_count          number of records (>= 0; 0 after compaction)
    61   ...   records                back to back, or ONE compressed stream of all records

Record (varints are zig-zag; "varint" fits int32, "varlong" int64)::

    length            varint   bytes from attributes to the end of the headers
    attributes        int8     unused (0)
    timestamp_delta   varlong  timestamp = base_timestamp + delta (LogAppendTime: max_timestamp)
    offset_delta      varint   offset = base_offset + delta; sequence = base_sequence + delta
    key length, key   varint (-1 = null), bytes
    value length, ... varint (-1 = null: a tombstone), bytes
    headers count     varint, then per header: key length varint (>= 0), UTF-8 key,
                      value length varint (-1 = null), value

Control batches (attribute bit 5) hold control records: key = int16 version + int16 type (0
ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION,
6 KRAFT_VOTERS); ABORT/COMMIT values = int16 version + int32 coordinator epoch; the KRaft
values are generated-message structs (``LeaderChangeMessage``, ``VotersRecord``, ...).

What the CRC covers: ``buffer[21 : 12 + batch_length]`` -- attributes to the last byte, so the
broker can rewrite ``partition_leader_epoch`` without recomputing it.

A partial write on disk: ``batch_length`` reaches past the end of the file (the log walker
reports a ``partial`` end), or zeros where the next batch should start (pre-allocated file).
A batch whose bytes are present but wrong fails the CRC.

Three speeds: ``peek_batch`` (17 bytes of framing), ``decode_batch_header`` (61-byte header +
CRC over the batch), ``decode_batch`` (records, decompressed).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError, hexint
from mqtool.formats._binary import Buffer, encode_varint, need
from mqtool.formats.checksums import crc32c
from mqtool.formats.kafka import compression
from mqtool.formats.kafka._schema import Reader, TaggedFields, Writer
from mqtool.formats.kafka.compression import DEFAULT_MAX_DECOMPRESSED_SIZE

MAGIC_V2 = 2

_FRAMING = struct.Struct(">qiib")  # base_offset, batch_length, partition_leader_epoch, magic
_CRC = struct.Struct(">I")
_BODY = struct.Struct(">hiqqqhii")  # attributes .. records_count (covered by the CRC)
_HEADER = struct.Struct(">qiibIhiqqqhii")

LENGTH_POSITION = struct.calcsize(">q")  # 8
LOG_OVERHEAD = struct.calcsize(">qi")  # 12: base offset + batch length
PARTITION_LEADER_EPOCH_POSITION = LOG_OVERHEAD
MAGIC_POSITION = _FRAMING.size - 1  # 16
HEADER_SIZE_UP_TO_MAGIC = _FRAMING.size  # 17
CRC_POSITION = _FRAMING.size  # 17
ATTRIBUTES_POSITION = CRC_POSITION + _CRC.size  # 21
RECORD_BATCH_OVERHEAD = _HEADER.size  # 61
LAST_OFFSET_DELTA_POSITION = ATTRIBUTES_POSITION + 2  # 23
_INT32 = struct.Struct(">i")
RECORDS_COUNT_POSITION = RECORD_BATCH_OVERHEAD - struct.calcsize(">i")  # 57
RECORDS_POSITION = RECORD_BATCH_OVERHEAD
assert RECORD_BATCH_OVERHEAD == _FRAMING.size + _CRC.size + _BODY.size

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

NO_PARTITION_LEADER_EPOCH = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1
INT32_MAX = 2**31 - 1

#: Smallest record: length, attributes, timestamp delta, offset delta, key length, value
#: length, headers count -- one byte each.
MIN_RECORD_SIZE = 7
#: ``DefaultRecord.MAX_RECORD_OVERHEAD``: 5 length + 1 attributes + 10 timestamp + 5 offset.
MAX_RECORD_OVERHEAD = 21


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: wraps at Integer.MAX_VALUE to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


@dataclass(frozen=True)
class BatchHeader:
    """The 61-byte header of a v2 batch (``DefaultRecordBatch`` accessors, snake_case).

    ``batch_length``, ``crc`` and ``records_count`` are filled by the decoder and recomputed by
    the encoder, so they do not take part in equality.
    """

    base_offset: int = 0
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    attributes: int = 0
    last_offset_delta: int = 0
    base_timestamp: int = NO_TIMESTAMP
    max_timestamp: int = NO_TIMESTAMP
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    magic: int = MAGIC_V2
    batch_length: int = field(default=0, compare=False)
    crc: int = field(default=0, compare=False)
    records_count: int = field(default=0, compare=False)

    @property
    def size(self) -> int:
        """Bytes of the whole batch (``sizeInBytes``)."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def compression_type(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def timestamp_type_name(self) -> str:
        return "LogAppendTime" if self.timestamp_type == LOG_APPEND_TIME else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon_ms(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.has_delete_horizon_ms else None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


@dataclass(frozen=True)
class RecordHeader:
    """A record header: UTF-8 key (never null; undecodable bytes kept via surrogateescape)."""

    key: str
    value: bytes | None = None


@dataclass(frozen=True)
class Record:
    """One record as stored (``DefaultRecord`` wire fields); see ``RecordBatch`` for offsets."""

    offset_delta: int = 0
    timestamp_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[RecordHeader, ...] = ()
    attributes: int = 0


@dataclass(frozen=True)
class RecordBatch:
    """A decoded batch: header and records (records decompressed)."""

    header: BatchHeader
    records: tuple[Record, ...] = ()

    def offset_of(self, record: Record) -> int:
        return self.header.base_offset + record.offset_delta

    def timestamp_of(self, record: Record) -> int:
        """``baseTimestamp + delta``, or ``max_timestamp`` for LogAppendTime batches."""
        if self.header.timestamp_type == LOG_APPEND_TIME:
            return self.header.max_timestamp
        return self.header.base_timestamp + record.timestamp_delta

    def sequence_of(self, record: Record) -> int:
        if self.header.base_sequence < 0:
            return NO_SEQUENCE
        return increment_sequence(self.header.base_sequence, record.offset_delta)


# --- peek / header ---------------------------------------------------------------------------


def peek_batch(buf: Buffer, position: int = 0) -> tuple[int, int, int]:
    """``(base_offset, batch_length, magic)`` at ``position`` (17 bytes, checked)."""
    need(buf, position, _FRAMING.size, "batch framing (base offset, length, epoch, magic)")
    base_offset, batch_length, _, magic = _FRAMING.unpack_from(buf, position)
    return base_offset, batch_length, magic


class V2Header(NamedTuple):
    """The 61 header bytes of a v2 batch as read, unchecked (``peek_v2_header``)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


def peek_v2_header(buf: Buffer, position: int = 0) -> V2Header:
    """The header fields of the v2 batch at ``position``, neither size nor magic nor CRC checked
    (``decode_batch_header`` checks them): for a walk that has checked the framing itself and
    checks the CRC with ``crc_matches``.  The 61 bytes must be present."""
    return V2Header._make(_HEADER.unpack_from(buf, position))


def crc_matches(buf: Buffer, position: int, size: int, stored: int) -> bool:
    """Whether the CRC-32C of the ``size``-byte batch at ``position`` (over its bytes from the
    attributes on, ``DefaultRecordBatch.isValid``) is ``stored``."""
    return crc32c(memoryview(buf)[position + ATTRIBUTES_POSITION : position + size]) == stored


def peek_last_offset_delta(buf: Buffer, position: int = 0) -> int:
    """``lastOffsetDelta`` of the v2 batch at ``position`` (its base offset plus this is its last
    offset), unchecked."""
    need(buf, position, LAST_OFFSET_DELTA_POSITION + 4, "batch header up to lastOffsetDelta")
    return int(_INT32.unpack_from(buf, position + LAST_OFFSET_DELTA_POSITION)[0])


def decode_batch_header(buf: Buffer, position: int = 0, *, check_crc: bool = True) -> BatchHeader:
    """The header of the batch at ``position``; the whole batch must be present.

    Raises ``CorruptDataError`` for a size under 61 or a magic other than 2,
    ``TruncatedDataError`` when the batch reaches past the buffer, ``ChecksumError`` on a
    CRC-32C mismatch.
    """
    _, batch_length, magic = peek_batch(buf, position)
    if magic != MAGIC_V2:
        raise CorruptDataError(position=position + MAGIC_POSITION, expected="batch magic 2", found=str(magic), kind="magic")
    size = LOG_OVERHEAD + batch_length
    if size < RECORD_BATCH_OVERHEAD:
        raise CorruptDataError(
            position=position + LENGTH_POSITION,
            expected=f"a batch length >= {RECORD_BATCH_OVERHEAD - LOG_OVERHEAD} (batch overhead {RECORD_BATCH_OVERHEAD})",
            found=str(batch_length),
            kind="size",
        )
    need(buf, position, size, f"record batch of {size} bytes")
    fields = _HEADER.unpack_from(buf, position)
    (base_offset, batch_length, ple, magic, crc, attributes, last_delta, base_ts, max_ts, pid, epoch, base_seq, count) = fields
    if check_crc:
        computed = crc32c(memoryview(buf)[position + ATTRIBUTES_POSITION : position + size])
        if computed != crc:
            raise ChecksumError(
                "record batch CRC mismatch",
                position=position + CRC_POSITION,
                expected=f"CRC-32C {hexint(computed)} (over bytes {ATTRIBUTES_POSITION}..{size} of the batch)",
                found=hexint(crc),
            )
    return BatchHeader(
        base_offset=base_offset,
        partition_leader_epoch=ple,
        attributes=attributes,
        last_offset_delta=last_delta,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=base_seq,
        magic=magic,
        batch_length=batch_length,
        crc=crc,
        records_count=count,
    )


# --- records ---------------------------------------------------------------------------------


def _varint(buf: memoryview, pos: int, end: int, what: str, max_bytes: int = 5) -> tuple[int, int]:
    """Zig-zag varint (``max_bytes`` 5: int32, 10: int64) inside ``[pos, end)``."""
    start = pos
    raw = 0
    shift = 0
    while True:
        if pos >= end:
            raise TruncatedDataError(position=start, expected=f"a complete varint ({what})", found="end of the record")
        if pos - start >= max_bytes:
            raise CorruptDataError(position=start, expected=f"a varint of at most {max_bytes} bytes ({what})", found="more")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    value = (raw >> 1) ^ -(raw & 1)
    bits = 32 if max_bytes == 5 else 64
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise CorruptDataError(position=start, expected=f"an int{bits} varint ({what})", found=str(value))
    return value, pos


def _blob(buf: memoryview, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    length, pos = _varint(buf, pos, end, f"{what} length")
    if length < 0:  # upstream: any negative length reads as null
        return None, pos
    if length > end - pos:
        raise TruncatedDataError(position=pos, expected=f"{length} bytes of {what}", found=f"{end - pos} bytes left in the record")
    return bytes(buf[pos : pos + length]), pos + length


def _decode_record(buf: memoryview, pos: int, end: int) -> tuple[Record, int]:
    """One record at ``pos`` (``DefaultRecord.readFrom``); returns it and the next position."""
    start = pos
    length, pos = _varint(buf, pos, end, "record length")
    if length < 0:
        raise CorruptDataError(position=start, expected="a record length >= 0", found=str(length))
    if length > end - pos:
        raise TruncatedDataError(position=start, expected=f"a record of {length} bytes", found=f"{end - pos} bytes left in the batch")
    body_start = pos
    rec_end = pos + length
    if rec_end - pos < 1:
        raise TruncatedDataError(position=pos, expected="record attributes", found="end of the record")
    attributes = buf[pos]
    if attributes >= 0x80:
        attributes -= 0x100
    pos += 1
    timestamp_delta, pos = _varint(buf, pos, rec_end, "timestamp delta", 10)
    offset_delta, pos = _varint(buf, pos, rec_end, "offset delta")
    key, pos = _blob(buf, pos, rec_end, "key")
    value, pos = _blob(buf, pos, rec_end, "value")
    count_pos = pos
    count, pos = _varint(buf, pos, rec_end, "headers count")
    if count < 0 or count > rec_end - pos:
        raise CorruptDataError(position=count_pos, expected=f"a headers count between 0 and {rec_end - pos}", found=str(count))
    headers = []
    for _ in range(count):
        key_pos = pos
        key_len, pos = _varint(buf, pos, rec_end, "header key length")
        if key_len < 0:
            raise CorruptDataError(position=key_pos, expected="a header key length >= 0", found=str(key_len))
        if key_len > rec_end - pos:
            raise TruncatedDataError(position=pos, expected=f"{key_len} bytes of header key", found=f"{rec_end - pos} bytes")
        header_key = bytes(buf[pos : pos + key_len]).decode("utf-8", "surrogateescape")
        pos += key_len
        header_value, pos = _blob(buf, pos, rec_end, "header value")
        headers.append(RecordHeader(header_key, header_value))
    if pos != rec_end:
        raise CorruptDataError(
            position=start,
            expected=f"a record length of {pos - body_start} (its fields)",
            found=f"{length}",
        )
    return Record(offset_delta, timestamp_delta, key, value, tuple(headers), attributes), rec_end


def iter_records(data: Buffer, count: int, base: int = 0) -> Iterator[Record]:
    """Exactly ``count`` records filling ``data`` (uncompressed records of one batch).

    ``base`` is added to error positions (61 for records read in place from a batch).
    """
    view = memoryview(data)
    end = len(view)
    if count < 0:
        raise CorruptDataError(position=base, expected="a records count >= 0", found=str(count))
    if count * MIN_RECORD_SIZE > end:
        raise CorruptDataError(
            position=base,
            expected=f"at most {end // MIN_RECORD_SIZE} records in {end} bytes",
            found=f"records count {count}",
        )
    pos = 0
    try:
        for _ in range(count):
            record, pos = _decode_record(view, pos, end)
            yield record
    except MqError as exc:
        raise exc.at(None, base) from None
    if pos != end:
        raise CorruptDataError(
            "incorrect declared batch size, records still remaining",
            position=base + pos,
            expected=f"the end of the records after {count} records",
            found=f"{end - pos} more bytes",
        )


def decode_batch(buf: Buffer, position: int = 0, *, check_crc: bool = True, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> RecordBatch:
    """Full decode of the batch at ``position``: header (CRC checked) and every record.

    Compressed records are decompressed (``UnsupportedFormatError`` if the codec is missing or
    the data exceeds ``max_decompressed_size``).  An error inside the decompressed records is
    positioned at the batch and names the byte of the decompressed stream in its message.
    """
    header = decode_batch_header(buf, position, check_crc=check_crc)
    start = position + RECORDS_POSITION
    end = position + header.size
    view = memoryview(buf)[start:end]
    codec = header.compression_type
    count = header.records_count
    if count < 0:
        raise CorruptDataError(position=position + RECORDS_COUNT_POSITION, expected="a records count >= 0", found=str(count))
    if count == 0:
        # ``DefaultRecordBatch.iterator``: an empty batch (compaction) has no records to read;
        # upstream does not look at the bytes after the header, nor at the codec's stream.
        records: tuple[Record, ...] = ()
    elif codec == compression.NONE:
        records = tuple(iter_records(view, count, start))
    else:
        compression.check_codec(codec, position + ATTRIBUTES_POSITION + 1)
        try:
            raw = compression.decompress(codec, view, magic=MAGIC_V2, max_size=max_decompressed_size)
        except CorruptDataError as exc:
            raise exc.at(None, start) from None
        try:
            records = tuple(iter_records(raw, count))
        except CorruptDataError as exc:
            raise in_decompressed(exc, position, "records") from None
    return RecordBatch(header, records)


def in_decompressed(exc: CorruptDataError, position: int, what: str) -> CorruptDataError:
    """Relocate an error found inside decompressed data onto the entry at ``position``.

    Offsets inside a decompressed stream are not file positions: the error keeps its class,
    names the inner position in its message and points at the entry itself.
    """
    if exc.position is None:
        return exc.__class__(exc.message, position=position, expected=exc.expected, found=exc.found, kind=exc.kind)
    inner = f"at byte {exc.position} of the decompressed {what}"
    message = f"{inner}: {exc.message}" if exc.message else inner
    return exc.__class__(message, position=position, expected=exc.expected, found=exc.found, kind=exc.kind)


# --- encode ----------------------------------------------------------------------------------


def encode_record(record: Record) -> bytes:
    """``DefaultRecord.writeTo``: the length varint followed by the record body."""
    body = bytearray()
    body.append(record.attributes & 0xFF)
    body += encode_varint(record.timestamp_delta)
    body += encode_varint(record.offset_delta)
    for blob in (record.key, record.value):
        if blob is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(blob))
            body += blob
    body += encode_varint(len(record.headers))
    for h in record.headers:
        raw_key = h.key.encode("utf-8", "surrogateescape")
        body += encode_varint(len(raw_key))
        body += raw_key
        if h.value is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(h.value))
            body += h.value
    return encode_varint(len(body)) + bytes(body)


def encode_batch(batch: RecordBatch, *, compression_level: int | None = None) -> bytes:
    """The bytes of ``batch``: records compressed per ``attributes``; length, count, CRC computed."""
    h = batch.header
    if h.magic != MAGIC_V2:
        raise ValueError("record batches are magic 2")
    records = b"".join(encode_record(r) for r in batch.records)
    codec = h.compression_type
    if codec != compression.NONE:
        records = compression.compress(codec, records, magic=MAGIC_V2, level=compression_level)
    body = (
        _BODY.pack(
            h.attributes,
            h.last_offset_delta,
            h.base_timestamp,
            h.max_timestamp,
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            len(batch.records),
        )
        + records
    )
    batch_length = _FRAMING.size - LOG_OVERHEAD + _CRC.size + len(body)  # epoch, magic, crc, body
    return _FRAMING.pack(h.base_offset, batch_length, h.partition_leader_epoch, MAGIC_V2) + _CRC.pack(crc32c(body)) + body


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    base_timestamp: int | None = None,
    compression_type: int = compression.NONE,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int | None = None,
    is_transactional: bool = False,
    is_control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    delete_horizon_ms: int | None = None,
    last_offset_delta: int | None = None,
) -> RecordBatch:
    """A consistent ``RecordBatch`` the way ``MemoryRecordsBuilder`` fills the header.

    ``records`` carry their deltas; ``base_timestamp`` defaults to -1 for an empty batch (and
    is what the deltas are relative to); ``max_timestamp`` is the largest record timestamp or
    ``log_append_time``; ``last_offset_delta`` defaults to the largest offset delta.
    """
    attributes = compression_type & COMPRESSION_CODEC_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if base_timestamp is None:
        base_timestamp = NO_TIMESTAMP if not records else 0
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
        stamp_base = delete_horizon_ms
    else:
        stamp_base = base_timestamp
    if timestamp_type == LOG_APPEND_TIME:
        if log_append_time is None:
            raise ValueError("LogAppendTime needs log_append_time")
        max_timestamp = log_append_time
    elif records:
        max_timestamp = max(stamp_base + r.timestamp_delta for r in records)
    else:
        max_timestamp = NO_TIMESTAMP
    if last_offset_delta is None:
        last_offset_delta = max((r.offset_delta for r in records), default=0)
    header = BatchHeader(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=stamp_base,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=len(records),
    )
    return RecordBatch(header, tuple(records))


# --- control records -------------------------------------------------------------------------

ABORT = 0
COMMIT = 1
LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6
UNKNOWN = -1
CONTROL_RECORD_TYPES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_MARKER = struct.Struct(">hi")
CONTROL_RECORD_KEY_SIZE = _CONTROL_KEY.size
END_TXN_MARKER_VALUE_SIZE = _END_TXN_MARKER.size


@dataclass(frozen=True)
class ControlRecordKey:
    version: int
    type: int

    @property
    def type_name(self) -> str:
        """``ABORT`` ... ``KRAFT_VOTERS``, or ``UNKNOWN`` (upstream ignores unknown types)."""
        return CONTROL_RECORD_TYPES.get(self.type, "UNKNOWN")


@dataclass(frozen=True)
class EndTransactionMarker:
    """Value of an ABORT/COMMIT control record."""

    version: int
    coordinator_epoch: int


@dataclass(frozen=True)
class LeaderChangeMessage:
    """Value of a LEADER_CHANGE control record (read with schema version 0, as upstream)."""

    version: int
    leader_id: int
    voters: tuple[int, ...] = ()
    granting_voters: tuple[int, ...] = ()
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class SnapshotHeaderRecord:
    version: int
    last_contained_log_timestamp: int
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class SnapshotFooterRecord:
    version: int
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class KRaftVersionRecord:
    version: int
    kraft_version: int
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class VoterEndpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True)
class Voter:
    voter_id: int
    voter_directory_id: str
    endpoints: tuple[VoterEndpoint, ...] = ()
    min_supported_version: int = 0
    max_supported_version: int = 0


@dataclass(frozen=True)
class VotersRecord:
    version: int
    voters: tuple[Voter, ...] = ()
    tagged_fields: TaggedFields = ()


ControlValue = EndTransactionMarker | LeaderChangeMessage | SnapshotHeaderRecord | SnapshotFooterRecord | KRaftVersionRecord | VotersRecord | bytes


def decode_control_key(key: bytes | None) -> ControlRecordKey:
    """``ControlRecordType.parseTypeId``: at least 4 bytes, version >= 0."""
    if key is None or len(key) < CONTROL_RECORD_KEY_SIZE:
        raise CorruptDataError(
            expected=f"a control record key of at least {CONTROL_RECORD_KEY_SIZE} bytes",
            found="null" if key is None else f"{len(key)} bytes",
        )
    version, type_id = _CONTROL_KEY.unpack_from(key, 0)
    if version < 0:
        raise CorruptDataError(position=0, expected="a control record key version >= 0", found=str(version))
    return ControlRecordKey(version, type_id)


def encode_control_key(key: ControlRecordKey) -> bytes:
    return _CONTROL_KEY.pack(key.version, key.type)


def decode_end_txn_marker(value: bytes | None) -> EndTransactionMarker:
    if value is None or len(value) < END_TXN_MARKER_VALUE_SIZE:
        raise CorruptDataError(
            expected=f"an end transaction marker of at least {END_TXN_MARKER_VALUE_SIZE} bytes",
            found="null" if value is None else f"{len(value)} bytes",
        )
    version, epoch = _END_TXN_MARKER.unpack_from(value, 0)
    if version < 0:
        raise CorruptDataError(position=0, expected="an end transaction marker version >= 0", found=str(version))
    return EndTransactionMarker(version, epoch)


def encode_end_txn_marker(marker: EndTransactionMarker) -> bytes:
    return _END_TXN_MARKER.pack(marker.version, marker.coordinator_epoch)


def _voter_ids(r: Reader, name: str) -> tuple[int, ...]:
    ids = []
    for _ in range(r.array(name, True, 5)):
        ids.append(r.int32("voter_id"))
        r.unknown_tagged_fields()
    return tuple(ids)


def decode_control_value(key: ControlRecordKey, value: bytes | None) -> ControlValue:
    """The value of a control record by its key type; the raw bytes for an unknown type."""
    if key.type in (ABORT, COMMIT):
        return decode_end_txn_marker(value)
    if value is None:
        if key.type in CONTROL_RECORD_TYPES:
            raise CorruptDataError(expected=f"a {key.type_name} control record value", found="null")
        return b""
    r = Reader(value, what=key.type_name)
    if key.type == LEADER_CHANGE:
        out: ControlValue = LeaderChangeMessage(
            r.int16("version"), r.int32("leader_id"), _voter_ids(r, "voters"), _voter_ids(r, "granting_voters"), r.unknown_tagged_fields()
        )
    elif key.type == SNAPSHOT_HEADER:
        out = SnapshotHeaderRecord(r.int16("version"), r.int64("last_contained_log_timestamp"), r.unknown_tagged_fields())
    elif key.type == SNAPSHOT_FOOTER:
        out = SnapshotFooterRecord(r.int16("version"), r.unknown_tagged_fields())
    elif key.type == KRAFT_VERSION:
        out = KRaftVersionRecord(r.int16("version"), r.int16("kraft_version"), r.unknown_tagged_fields())
    elif key.type == KRAFT_VOTERS:
        version = r.int16("version")
        voters = []
        for _ in range(r.array("voters", True, 4 + 16 + 1 + 4 + 1)):
            voter_id = r.int32("voter_id")
            directory = r.uuid("voter_directory_id")
            endpoints = []
            for _ in range(r.array("endpoints", True, 5)):
                endpoints.append(VoterEndpoint(r.string("name", True), r.string("host", True), r.uint16("port")))
                r.unknown_tagged_fields()
            lo, hi = r.int16("min_supported_version"), r.int16("max_supported_version")
            r.unknown_tagged_fields()  # of KRaftVersionFeature
            r.unknown_tagged_fields()  # of Voter
            voters.append(Voter(voter_id, directory, tuple(endpoints), lo, hi))
        out = VotersRecord(version, tuple(voters), r.unknown_tagged_fields())
    else:
        return bytes(value)
    r.finish()
    return out


def encode_control_value(value: ControlValue) -> bytes:
    if isinstance(value, EndTransactionMarker):
        return encode_end_txn_marker(value)
    if isinstance(value, bytes):
        return value
    w = Writer()
    w.int16(value.version)
    if isinstance(value, LeaderChangeMessage):
        w.int32(value.leader_id)
        for ids in (value.voters, value.granting_voters):
            w.array(len(ids), True)
            for voter_id in ids:
                w.int32(voter_id)
                w.tagged_fields(())
    elif isinstance(value, SnapshotHeaderRecord):
        w.int64(value.last_contained_log_timestamp)
    elif isinstance(value, KRaftVersionRecord):
        w.int16(value.kraft_version)
    elif isinstance(value, VotersRecord):
        w.array(len(value.voters), True)
        for v in value.voters:
            w.int32(v.voter_id)
            w.uuid(v.voter_directory_id)
            w.array(len(v.endpoints), True)
            for e in v.endpoints:
                w.string(e.name, True)
                w.string(e.host, True)
                w.uint16(e.port)
                w.tagged_fields(())
            w.int16(v.min_supported_version)
            w.int16(v.max_supported_version)
            w.tagged_fields(())
            w.tagged_fields(())
    w.tagged_fields(value.tagged_fields)
    return w.getvalue()


def decode_control_record(record: Record) -> tuple[ControlRecordKey, ControlValue]:
    key = decode_control_key(record.key)
    return key, decode_control_value(key, record.value)


def control_record(type_id: int, value: ControlValue, *, offset_delta: int = 0, timestamp_delta: int = 0) -> Record:
    """A control ``Record`` with key version 0 (as the broker writes them)."""
    return Record(
        offset_delta=offset_delta,
        timestamp_delta=timestamp_delta,
        key=encode_control_key(ControlRecordKey(0, type_id)),
        value=encode_control_value(value),
    )


__all__ = [
    "MAGIC_V2",
    "RECORD_BATCH_OVERHEAD",
    "HEADER_SIZE_UP_TO_MAGIC",
    "CRC_POSITION",
    "ATTRIBUTES_POSITION",
    "BatchHeader",
    "Record",
    "RecordHeader",
    "RecordBatch",
    "increment_sequence",
    "peek_batch",
    "decode_batch_header",
    "iter_records",
    "decode_batch",
    "in_decompressed",
    "encode_record",
    "encode_batch",
    "build_batch",
    "ControlRecordKey",
    "EndTransactionMarker",
    "LeaderChangeMessage",
    "SnapshotHeaderRecord",
    "SnapshotFooterRecord",
    "KRaftVersionRecord",
    "Voter",
    "VoterEndpoint",
    "VotersRecord",
    "CONTROL_RECORD_TYPES",
    "decode_control_key",
    "encode_control_key",
    "decode_end_txn_marker",
    "encode_end_txn_marker",
    "decode_control_value",
    "encode_control_value",
    "decode_control_record",
    "control_record",
]
