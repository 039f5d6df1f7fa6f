"""Kafka producer-state snapshots (``<offset>.snapshot``).

Upstream: ``storage/.../log/ProducerStateManager.java`` (``readSnapshot``/``writeSnapshot``)
and the generated message ``storage/src/main/resources/message/ProducerSnapshot.json``
(``validVersions: 1``, not flexible).  Version 1 is the only version ever written, from
Kafka 0.11.0 (then a hand-built ``Schema`` in ``ProducerStateManager.scala``) to 4.x.
All integers big-endian::

    pos      size  field                   meaning
    0        2     version                 int16 = 1
    2        4     crc                     uint32, CRC-32C of bytes [6, end of file)
    6        4     producerEntries count   int32 (non-nullable array: -1 is corruption)
    10       46*n  producerEntries         n entries of:
      +0     8       producerId            int64
      +8     2       epoch                 int16, producer epoch
      +10    4       lastSequence          int32, last written sequence
      +14    8       lastOffset            int64, last written offset (-1: no batch metadata)
      +22    4       offsetDelta           int32, lastSequence - firstSequence of that batch
      +26    8       timestamp             int64, max timestamp of the last batch (ms)
      +34    4       coordinatorEpoch      int32, epoch of the last end-txn marker's coordinator
      +38    8       currentTxnFirstOffset int64, first offset of the ongoing transaction, -1 none

An empty snapshot is the 10 bytes ``00 01 48 67 4B C7 00 00 00 00``.  The file name holds the
log offset the state was captured *at* (exclusive), 20 digits.

Checksum: CRC-32C (Castagnoli) over everything after the CRC field (count and entries).
Upstream checks version and structure first ("Snapshot failed schema validation"), then the
CRC ("Snapshot is corrupt (CRC is no longer valid)"); this module does the same.

Partial writes: the file is written in one ``FileChannel.write`` without a temp file and
without truncating an existing file, so a crash leaves a short file (the entry count then
claims more bytes than exist: ``TruncatedDataError``) or stale bytes after the new content
(CRC mismatch).  The broker deletes a snapshot it cannot read and rebuilds producer state
from the log.  Upstream ignores bytes after the last entry when the CRC (which covers them)
matches; mqtool reports them as ``CorruptDataError`` so that encode(decode(b)) == b holds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from mqtool.errors import ChecksumError, CorruptDataError, hexint
from mqtool.formats._binary import I16, U32, Buffer, need, unpack
from mqtool.formats.checksums import crc32c

VERSION = 1
HEADER = struct.Struct(">hIi")  # version, crc, entry count
ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = ENTRY.size  # 46
CRC_POSITION = I16.size
#: ``PRODUCER_ENTRIES_OFFSET``: the CRC covers the buffer from here to its end.
CRC_START = CRC_POSITION + U32.size
COUNT_POSITION = CRC_START
ENTRIES_POSITION = HEADER.size  # 10

NO_OFFSET = -1
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class ProducerEntry:
    """One ``ProducerSnapshot.ProducerEntry`` (upstream field names, snake_case)."""

    producer_id: int
    epoch: int = 0
    last_sequence: int = -1
    last_offset: int = NO_OFFSET
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = NO_OFFSET

    @property
    def has_batch_metadata(self) -> bool:
        """``readSnapshot`` keeps a ``BatchMetadata`` only when ``lastOffset >= 0``."""
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        """``BatchMetadata.firstSeq``: ``lastSequence - offsetDelta`` wrapping at ``Integer.MAX_VALUE``."""
        if self.last_sequence < self.offset_delta:
            return INT32_MAX - (self.offset_delta - self.last_sequence) + 1
        return self.last_sequence - self.offset_delta

    @property
    def first_offset(self) -> int:
        """``BatchMetadata.firstOffset``: ``lastOffset - offsetDelta``."""
        return self.last_offset - self.offset_delta

    @property
    def has_ongoing_transaction(self) -> bool:
        return self.current_txn_first_offset >= 0


@dataclass(frozen=True)
class ProducerSnapshot:
    entries: tuple[ProducerEntry, ...] = ()
    version: int = VERSION
    #: CRC as stored; filled by the decoder, recomputed by the encoder.
    crc: int = field(default=0, compare=False)


def compute_crc(buf: Buffer) -> int:
    """CRC-32C of ``buf[6:]``, what the ``crc`` field must hold."""
    return crc32c(memoryview(buf)[CRC_START:])


def peek_snapshot(buf: Buffer) -> tuple[int, int, int]:
    """``(version, crc, entry count)`` from the 10-byte header (checked for length only)."""
    return unpack(HEADER, buf, 0, "producer snapshot header (version, crc, count)")


def decode_snapshot(buf: Buffer, *, check_crc: bool = True) -> ProducerSnapshot:
    """Decode a whole ``.snapshot`` file; raise on an unknown version, short data or bad CRC."""
    version, crc, count = peek_snapshot(buf)
    if version != VERSION:
        raise CorruptDataError("unknown producer snapshot version", position=0, expected=f"version {VERSION}", found=str(version))
    if count < 0:
        raise CorruptDataError(
            "producer entries array serialized as null",
            position=COUNT_POSITION,
            expected="an entry count >= 0",
            found=str(count),
        )
    body_size = count * ENTRY_SIZE
    need(buf, ENTRIES_POSITION, body_size, f"{count} producer entries of {ENTRY_SIZE} bytes")
    if check_crc:
        computed = compute_crc(buf)
        if computed != crc:
            raise ChecksumError(
                "producer snapshot CRC mismatch",
                position=CRC_POSITION,
                expected=f"crc {hexint(computed)} (CRC-32C of bytes 6..{len(buf)})",
                found=hexint(crc),
            )
    end = ENTRIES_POSITION + body_size
    if len(buf) != end:
        raise CorruptDataError(
            "bytes after the last producer entry",
            position=end,
            expected=f"end of file after {count} entries",
            found=f"{len(buf) - end} more bytes",
        )
    entries = tuple(ProducerEntry(*ENTRY.unpack_from(buf, ENTRIES_POSITION + i * ENTRY_SIZE)) for i in range(count))
    return ProducerSnapshot(entries, version, crc)


def encode_snapshot(snapshot: ProducerSnapshot) -> bytes:
    """Encode as ``writeSnapshot`` does: version-prefixed message, then the CRC filled in."""
    if snapshot.version != VERSION:
        raise ValueError(f"only producer snapshot version {VERSION} exists")
    out = bytearray(HEADER.pack(snapshot.version, 0, len(snapshot.entries)))
    for entry in snapshot.entries:
        try:
            out += ENTRY.pack(
                entry.producer_id,
                entry.epoch,
                entry.last_sequence,
                entry.last_offset,
                entry.offset_delta,
                entry.timestamp,
                entry.coordinator_epoch,
                entry.current_txn_first_offset,
            )
        except struct.error as exc:
            raise ValueError(f"producer entry field out of range: {exc}") from None
    U32.pack_into(out, CRC_POSITION, compute_crc(out))
    return bytes(out)
