"""A Kafka ``.log`` segment: entries of any magic, walked entry by entry (``FileLogInputStream``).

A segment is a plain concatenation of entries -- legacy v0/v1 messages and v2 record batches
can be mixed after a message-format upgrade -- with no file header, padding or footer.  Every
entry starts the same way::

    pos  size  field
    0    8     offset        v0/v1: the message offset (a wrapper: its last inner offset);
                             v2: base_offset
    8    4     size          bytes that follow this field; entry size = 12 + size
    12   4     crc (v0/v1) | partition_leader_epoch (v2)
    16   1     magic         0, 1 or 2: selects ``legacy`` or ``record_batch`` for the rest

What the checksums cover: see ``legacy`` (CRC-32 over magic..end of a message) and
``record_batch`` (CRC-32C over attributes..end of a batch).

How the walk ends (``DataEnd.kind``):

    eof      the data ends exactly after the last entry
    zeros    zero bytes from the next entry position to the end (a pre-allocated segment,
             ``log.preallocate=true``, whose tail was never written)
    partial  a tail the broker ignores: fewer than 17 bytes, or an entry whose size reaches
             past the end of the data (a write cut short by a crash); ``length`` is the
             entry size claimed (or the bytes left)

Anything else raises ``CorruptDataError`` (``ChecksumError`` for a CRC mismatch) positioned in
the buffer: a size under the minimum overhead (14 bytes; 61 for v2) that is not a zero tail, a
magic other than 0..2, a bad CRC, and -- when records are decoded -- a malformed record.
Kafka's own recovery truncates the segment at the position of the first such entry
(``failed_at``).  Positions are Python ints (no 32-bit limit).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats import data_end
from mqtool.formats._binary import Buffer, is_zero, need
from mqtool.formats.kafka import legacy, record_batch
from mqtool.formats.kafka.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from mqtool.formats.kafka.legacy import LegacyRecord
from mqtool.formats.kafka.record_batch import BatchHeader, RecordBatch, RecordHeader, in_decompressed

_FRAMING = struct.Struct(">qi4xb")  # offset, size, (crc | partition leader epoch), magic
LOG_OVERHEAD = struct.calcsize(">qi")  # 12: offset + size
SIZE_POSITION = LOG_OVERHEAD - struct.calcsize(">i")  # 8
HEADER_SIZE_UP_TO_MAGIC = _FRAMING.size  # 17
MAGIC_POSITION = HEADER_SIZE_UP_TO_MAGIC - 1  # 16
#: ``LegacyRecord.RECORD_OVERHEAD_V0``: the smallest ``size`` of any entry.
MIN_ENTRY_SIZE_FIELD = legacy.RECORD_OVERHEAD_V0

Mode = Literal["framing", "header", "full"]
EndKind = Literal["eof", "zeros", "partial"]


#: Where the valid entries of a buffer stop, and why (see the module docstring).
DataEnd = data_end.DataEnd[EndKind]


@dataclass(frozen=True)
class LogRecord:
    """One logical record of any magic, as a consumer sees it (offsets absolute)."""

    offset: int
    timestamp: int
    timestamp_type: str  # NoTimestampType, CreateTime, LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[RecordHeader, ...] = ()
    sequence: int = record_batch.NO_SEQUENCE
    is_control: bool = False
    #: v0/v1 only (None for a v2 record, whose batch holds the checksum): the message's stored
    #: CRC-32 and whether it is the one computed over its bytes (``LegacyRecord.checksumOrNull``,
    #: ``isValid``)
    crc: int | None = None
    is_valid: bool | None = None


@dataclass(frozen=True)
class LogEntry:
    """One entry of a segment.

    ``header`` is a ``BatchHeader`` (v2) or the shallow ``LegacyRecord`` (v0/v1) in the
    ``header`` and ``full`` modes, None in ``framing`` mode.  ``batch`` is the decoded
    ``RecordBatch`` (v2, ``full`` mode).  ``records`` are the logical records (``full`` mode:
    a wrapper's inner messages, a batch's records).
    """

    position: int
    offset: int
    size: int
    magic: int
    header: BatchHeader | LegacyRecord | None = None
    batch: RecordBatch | None = None
    records: tuple[LogRecord, ...] | None = None

    @property
    def last_offset(self) -> int:
        """v2: base + last_offset_delta; v0/v1: the entry offset (a wrapper's last inner offset)."""
        if isinstance(self.header, BatchHeader):
            return self.header.last_offset
        return self.offset


def peek_entry(buf: Buffer, position: int = 0) -> tuple[int, int, int]:
    """``(offset, size field, magic)`` of the entry at ``position`` (17 bytes, checked)."""
    need(buf, position, HEADER_SIZE_UP_TO_MAGIC, "log entry header (offset, size, crc/epoch, magic)")
    return _FRAMING.unpack_from(buf, position)


def records_of_batch(batch: RecordBatch) -> tuple[LogRecord, ...]:
    h = batch.header
    type_name = h.timestamp_type_name
    control = h.is_control_batch
    return tuple(
        LogRecord(
            offset=batch.offset_of(r),
            timestamp=batch.timestamp_of(r),
            timestamp_type=type_name,
            key=r.key,
            value=r.value,
            headers=r.headers,
            sequence=batch.sequence_of(r),
            is_control=control,
        )
        for r in batch.records
    )


def records_of_message(message: LegacyRecord, position: int = 0, *, check_crc: bool = True, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> tuple[LogRecord, ...]:
    """A legacy entry's logical records (a wrapper decompressed); errors point at ``position``."""
    try:
        messages = legacy.deep_messages(message, check_crc=check_crc, max_size=max_size)
    except CorruptDataError as exc:
        raise in_decompressed(exc, position, "inner message set") from None
    return tuple(
        LogRecord(offset=m.offset, timestamp=m.timestamp, timestamp_type=m.timestamp_type_name, key=m.key, value=m.value, crc=m.crc, is_valid=m.is_valid)
        for m in messages
    )


def decode_entry(
    buf: Buffer,
    position: int = 0,
    *,
    mode: Mode = "header",
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> LogEntry:
    """Decode the complete entry at ``position`` at the speed ``mode`` asks for."""
    offset, size, magic = peek_entry(buf, position)
    if magic > record_batch.MAGIC_V2 or magic < 0:
        raise CorruptDataError(position=position + MAGIC_POSITION, expected="magic 0, 1 or 2", found=str(magic), kind="magic")
    if size < MIN_ENTRY_SIZE_FIELD:
        raise CorruptDataError(
            position=position + SIZE_POSITION,
            expected=f"an entry size >= {MIN_ENTRY_SIZE_FIELD} (minimum record overhead)",
            found=str(size),
            kind="size",
        )
    total = LOG_OVERHEAD + size
    need(buf, position, total, f"log entry of {total} bytes")
    if mode == "framing":
        return LogEntry(position, offset, total, magic)
    if magic == record_batch.MAGIC_V2:
        if mode == "full":
            batch = record_batch.decode_batch(buf, position, check_crc=check_crc, max_decompressed_size=max_decompressed_size)
            return LogEntry(position, offset, total, magic, batch.header, batch, records_of_batch(batch))
        header = record_batch.decode_batch_header(buf, position, check_crc=check_crc)
        return LogEntry(position, offset, total, magic, header)
    message = legacy.decode_message(buf, position, check_crc=check_crc)
    records = None
    if mode == "full":
        records = records_of_message(message, position, check_crc=check_crc, max_size=max_decompressed_size)
    return LogEntry(position, offset, total, magic, message, None, records)


class LogWalker:
    """Iterate ``LogEntry`` from ``start`` until a clean end (``end``) or a broken entry (raise).

    ``mode``: ``framing`` (offset/size/magic only; no CRC -- the fastest walk), ``header``
    (v2 header + CRC, legacy message + CRC; the speed of ``validate``) or ``full`` (records
    decoded and decompressed; for ``dump``).  The walk streams: nothing is kept but the
    current entry, so a memory-mapped 1 GiB segment costs no more than a small one.
    """

    def __init__(
        self,
        buf: Buffer,
        start: int = 0,
        *,
        mode: Mode = "header",
        check_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> None:
        self.buf = buf
        self.start = start
        self.mode = mode
        self.check_crc = check_crc
        self.max_decompressed_size = max_decompressed_size
        self.end: DataEnd | None = None
        self.failed_at: int | None = None
        self.count = 0
        #: Bytes of complete valid entries from ``start`` (Kafka's ``validBytes``).
        self.valid_bytes = 0

    def __iter__(self) -> Iterator[LogEntry]:
        buf = self.buf
        size = len(buf)
        pos = self.start
        framing = _FRAMING
        while True:
            remaining = size - pos
            if remaining == 0:
                self.end = DataEnd("eof", pos)
                return
            if remaining < HEADER_SIZE_UP_TO_MAGIC:
                self.end = DataEnd("zeros", pos) if is_zero(buf, pos, size) else DataEnd("partial", pos, remaining)
                return
            _, entry_size, magic = framing.unpack_from(buf, pos)
            if entry_size == 0 and is_zero(buf, pos, size):
                self.end = DataEnd("zeros", pos)
                return
            if entry_size >= MIN_ENTRY_SIZE_FIELD and LOG_OVERHEAD + entry_size > remaining:
                self.end = DataEnd("partial", pos, LOG_OVERHEAD + entry_size)
                return
            try:
                entry = decode_entry(buf, pos, mode=self.mode, check_crc=self.check_crc, max_decompressed_size=self.max_decompressed_size)
            except MqError:
                self.failed_at = pos
                raise
            self.count += 1
            pos += entry.size
            self.valid_bytes = pos - self.start
            yield entry


def iter_entries(buf: Buffer, start: int = 0, *, mode: Mode = "header", check_crc: bool = True) -> Iterator[LogEntry]:
    """Shorthand for ``iter(LogWalker(...))`` when the end reason is not needed."""
    return iter(LogWalker(buf, start, mode=mode, check_crc=check_crc))


def iter_log_records(buf: Buffer, start: int = 0, *, check_crc: bool = True) -> Iterator[LogRecord]:
    """Every logical record of a segment in order (deep iteration), any magic."""
    for entry in LogWalker(buf, start, mode="full", check_crc=check_crc):
        yield from entry.records or ()


__all__ = [
    "LOG_OVERHEAD",
    "HEADER_SIZE_UP_TO_MAGIC",
    "MAGIC_POSITION",
    "DataEnd",
    "LogEntry",
    "LogRecord",
    "LogWalker",
    "peek_entry",
    "decode_entry",
    "records_of_batch",
    "records_of_message",
    "iter_entries",
    "iter_log_records",
]
