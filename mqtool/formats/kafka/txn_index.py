"""Kafka transaction index (``.txnindex``): one entry per aborted transaction.

Upstream: ``storage/.../log/TransactionIndex.java`` and ``AbortedTxn.java``.  A flat array of
34-byte big-endian entries, no header, appended (never pre-allocated) and created only when
the segment holds the abort marker of a transaction::

    pos  size  field              meaning
    0    2     version            int16, ``AbortedTxn.CURRENT_VERSION`` = 0
    2    8     producerId         producer of the aborted transaction
    10   8     firstOffset        first offset of the transaction's data
    18   8     lastOffset         offset of the ABORT marker (control batch)
    26   8     lastStableOffset   LSO when the abort was written

``lastOffset`` strictly increases from entry to entry (``TransactionIndex.append`` refuses
anything else) and is never below the segment's base offset (``sanityCheck``, run at every
load: ``CorruptIndexException`` "Last offset of aborted transaction ... is less than start
offset").

Checksum: none.

Partial writes: entries are appended with a plain channel write, so a crash can leave a
trailing fragment shorter than 34 bytes; upstream's iterator only reads while 34 bytes remain
and so ignores it (``partial`` end here).  A file extended with zeros by the file system after
a crash reads, upstream, as entries of producer 0 with offsets 0; an aborted transaction whose
data and marker share offset 0 cannot exist, so mqtool ends the walk at the first all-zero
entry (``zeros``).

Version quirk: upstream *reads* the version as one byte at position 0 (the high byte of the
int16) and rejects it only when > 0.  mqtool reads the int16 and accepts only 0.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from mqtool.errors import CorruptDataError
from mqtool.formats import data_end
from mqtool.formats._binary import I16, I64, Buffer, unpack

ENTRY = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
ENTRY_SIZE = ENTRY.size  # 34
CURRENT_VERSION = 0

VERSION_POSITION = 0
PRODUCER_ID_POSITION = VERSION_POSITION + I16.size
FIRST_OFFSET_POSITION = PRODUCER_ID_POSITION + I64.size
LAST_OFFSET_POSITION = FIRST_OFFSET_POSITION + I64.size
LAST_STABLE_OFFSET_POSITION = LAST_OFFSET_POSITION + I64.size
assert LAST_STABLE_OFFSET_POSITION + I64.size == ENTRY_SIZE


@dataclass(frozen=True)
class AbortedTxn:
    """One ``.txnindex`` entry (upstream ``AbortedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION


EndKind = Literal["zeros", "partial", "eof"]


#: Where the valid entries stop: ``eof`` (exactly after the last entry), ``partial`` (a
#: fragment of ``length`` < 34 bytes, ignored by the broker) or ``zeros`` (an all-zero entry or
#: fragment; ``length`` = bytes to the end of the buffer).  ``position`` = valid bytes.
DataEnd = data_end.DataEnd[EndKind]


@dataclass(frozen=True)
class TxnIndexContents:
    entries: tuple[AbortedTxn, ...]
    end: DataEnd


def decode_aborted_txn(buf: Buffer, position: int = 0) -> AbortedTxn:
    """Decode the 34-byte entry at ``position``; a version other than 0 is corruption."""
    version, producer_id, first, last, lso = unpack(ENTRY, buf, position, "aborted transaction entry")
    if version != CURRENT_VERSION:
        raise CorruptDataError(
            "unexpected aborted transaction version",
            position=position + VERSION_POSITION,
            expected=f"version {CURRENT_VERSION}",
            found=str(version),
        )
    return AbortedTxn(producer_id, first, last, lso, version)


def encode_aborted_txn(txn: AbortedTxn) -> bytes:
    try:
        return ENTRY.pack(txn.version, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)
    except struct.error as exc:
        raise ValueError(f"aborted transaction field out of range: {exc}") from None


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """Encode entries as ``TransactionIndex.append`` writes them (``lastOffset`` must increase)."""
    out = bytearray()
    last: int | None = None
    for txn in entries:
        if last is not None and txn.last_offset <= last:
            raise ValueError(f"lastOffset {txn.last_offset} does not increase past {last}")
        out += encode_aborted_txn(txn)
        last = txn.last_offset
    return bytes(out)


class TxnIndexWalker:
    """Iterate ``(position, AbortedTxn)`` until a clean end; ``end`` says where and why.

    With ``base_offset`` (the segment's base offset) each entry gets upstream's sanity check
    (``lastOffset >= base_offset``).  Entries whose ``lastOffset`` does not increase raise
    ``CorruptDataError``.
    """

    def __init__(self, buf: Buffer, start: int = 0, *, base_offset: int | None = None) -> None:
        self.buf = buf
        self.start = start
        self.base_offset = base_offset
        self.end: DataEnd | None = None
        self.count = 0
        self.last: AbortedTxn | None = None

    def __iter__(self) -> Iterator[tuple[int, AbortedTxn]]:
        view = memoryview(self.buf)
        size = len(view)
        pos = self.start
        zero = bytes(ENTRY_SIZE)
        while True:
            remaining = size - pos
            if remaining <= 0:
                self.end = DataEnd("eof", min(pos, size))
                return
            if remaining < ENTRY_SIZE:
                tail = bytes(view[pos:size])
                self.end = DataEnd("zeros" if tail.count(0) == len(tail) else "partial", pos, remaining)
                return
            if view[pos : pos + ENTRY_SIZE] == zero:
                self.end = DataEnd("zeros", pos, remaining)
                return
            txn = decode_aborted_txn(view, pos)
            if self.base_offset is not None and txn.last_offset < self.base_offset:
                raise CorruptDataError(
                    "last offset of aborted transaction is less than the segment's start offset",
                    position=pos + LAST_OFFSET_POSITION,
                    expected=f"lastOffset >= {self.base_offset}",
                    found=str(txn.last_offset),
                )
            if self.last is not None and txn.last_offset <= self.last.last_offset:
                raise CorruptDataError(
                    "aborted transactions must be in increasing lastOffset order",
                    position=pos + LAST_OFFSET_POSITION,
                    expected=f"lastOffset > {self.last.last_offset}",
                    found=str(txn.last_offset),
                )
            self.count += 1
            self.last = txn
            yield pos, txn
            pos += ENTRY_SIZE


def decode_txn_index(buf: Buffer, *, base_offset: int | None = None) -> TxnIndexContents:
    """Every valid entry of a ``.txnindex`` buffer and where they end."""
    walker = TxnIndexWalker(buf, base_offset=base_offset)
    entries = tuple(txn for _, txn in walker)
    assert walker.end is not None
    return TxnIndexContents(entries, walker.end)


@dataclass(frozen=True)
class TxnIndexSearchResult:
    """Upstream ``TxnIndexSearchResult``: the matches, and whether later segments can be skipped."""

    aborted_transactions: tuple[AbortedTxn, ...]
    is_complete: bool


def collect_aborted_txns(entries: Iterable[AbortedTxn], fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
    """``TransactionIndex.collectAbortedTxns``: transactions overlapping ``[fetch_offset, upper_bound_offset)``.

    ``is_complete`` is True once an entry's ``lastStableOffset >= upper_bound_offset``: no later
    segment can hold an aborted transaction overlapping the range.
    """
    found = []
    for txn in entries:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
            found.append(txn)
        if txn.last_stable_offset >= upper_bound_offset:
            return TxnIndexSearchResult(tuple(found), True)
    return TxnIndexSearchResult(tuple(found), False)
