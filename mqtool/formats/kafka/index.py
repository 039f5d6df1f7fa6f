"""Kafka offset index (``.index``) and time index (``.timeindex``).

Upstream: ``storage/.../log/OffsetIndex.java``, ``TimeIndex.java``, ``AbstractIndex.java``.
Both files are flat arrays of fixed-size big-endian entries, no header, no footer.  Offsets
are stored relative to the segment's base offset (the number in the file name)::

    .index entry (8 bytes)
    pos  size  field            meaning
    0    4     relativeOffset   offset - baseOffset, int32 in 0..2^31-1 (``OffsetPosition.offset``)
    4    4     position         byte position in the ``.log`` of the batch holding that offset

    .timeindex entry (12 bytes)
    pos  size  field            meaning
    0    8     timestamp        largest timestamp seen in the segment up to ``offset`` (ms)
    8    4     relativeOffset   offset - baseOffset of the batch holding that timestamp

Entries are sparse (one per ``index.interval.bytes`` of log, 4096 by default) and sorted: the
writer refuses an ``.index`` offset that is not larger than the last one, and appends to the
``.timeindex`` only when the timestamp is larger than the last one (offsets there may repeat).
The broker never indexes log position 0, so a lookup below the first entry answers
``(baseOffset, 0)`` (``.index``) or ``(-1, baseOffset)`` (``.timeindex``).

Checksum: none.  Nothing protects an entry; monotonicity is the only consistency check.

Partial writes and pre-allocation: the active segment's index files are created at their
maximum size (``segment.index.bytes`` rounded down to a multiple of the entry size, 10 MiB by
default) and memory-mapped, so unused slots are zero; they are trimmed to ``entries x size``
when the segment is rolled or the broker shuts down cleanly.  After a crash the file therefore
ends in a zero tail (and, since mmap pages reach the disk in any order, possibly in a page of
zeros followed by a later page of entries).  The broker itself trusts ``fileLength / entrySize``
entries and rebuilds the active segment's indexes during recovery.

Where the valid entries end (mqtool's rule, a stricter form of ``DumpLogSegments``'s):

* complete entries only: trailing bytes shorter than one entry end the walk (``partial``,
  or ``zeros`` when they are all zero);
* entry 0 is always an entry, even when all zero (``(baseOffset, 0)`` / ``(0, baseOffset)``:
  a fully zero pre-allocated file therefore shows one entry, as ``kafka-dump-log`` prints);
* the first all-zero entry at index ``i > 0`` ends the walk (``zeros``);
  ``DumpLogSegments`` stops at the first ``i > 0`` whose relative offset is 0;
* any other entry must keep the order the writer guarantees (``.index``: offset and position
  strictly increasing; ``.timeindex``: timestamp strictly increasing, offset not decreasing);
  an entry that breaks it, or has a negative relative offset or position, raises
  ``CorruptDataError`` (upstream ``sanityCheck`` would throw ``CorruptIndexException``).

``lookup_offset``/``lookup_timestamp`` follow ``AbstractIndex.largestLowerBoundSlotFor``: the
entry with the largest key <= target, found by binary search over the entries before the zero
tail (the tail itself is located by binary search too, assuming it is a suffix).  Upstream
first searches the "warm" last 8192 bytes; with sorted keys the answer is the same.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from mqtool.errors import CorruptDataError
from mqtool.formats import data_end
from mqtool.formats._binary import I32, I64, Buffer, unpack

OFFSET_ENTRY = struct.Struct(">ii")  # relativeOffset, position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relativeOffset

OFFSET_ENTRY_SIZE = OFFSET_ENTRY.size  # 8
TIME_ENTRY_SIZE = TIME_ENTRY.size  # 12
#: Field positions inside an entry.
LOG_POSITION_FIELD = I32.size  # .index: position after relativeOffset
TIME_RELATIVE_OFFSET_FIELD = I64.size  # .timeindex: relativeOffset after timestamp

#: ``RecordBatch.NO_TIMESTAMP``: what an empty time index answers for a timestamp.
NO_TIMESTAMP = -1

#: ``log.index.size.max.bytes`` default: pre-allocated size of an active segment's index files.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class OffsetPosition:
    """One ``.index`` entry with its offset made absolute (upstream ``OffsetPosition``)."""

    offset: int
    position: int


@dataclass(frozen=True)
class TimestampOffset:
    """One ``.timeindex`` entry with its offset made absolute (upstream ``TimestampOffset``)."""

    timestamp: int
    offset: int


EndKind = Literal["zeros", "partial", "eof"]


#: Where the valid entries of an index buffer stop, and why.
#:
#: ``zeros``: an all-zero entry at index > 0, or all-zero bytes shorter than an entry
#: (pre-allocated tail); ``length`` = bytes from ``position`` to the end of the buffer.
#: ``partial``: non-zero bytes shorter than one entry (``length`` of them).
#: ``eof``: the buffer ends exactly after the last entry.
#: ``position`` is also the number of valid bytes.
DataEnd = data_end.DataEnd[EndKind]


Entry = TypeVar("Entry", OffsetPosition, TimestampOffset)


@dataclass(frozen=True)
class IndexContents(Generic[Entry]):
    """All valid entries of an index buffer and where they end."""

    entries: tuple[Entry, ...]
    end: DataEnd


# --- single entries -----------------------------------------------------------------------


def _check_relative(relative: int, position: int) -> None:
    if relative < 0:
        raise CorruptDataError(position=position, expected="relativeOffset >= 0 (offset - baseOffset)", found=str(relative))


def peek_relative_offset(buf: Buffer, position: int = 0) -> int:
    """relativeOffset of the ``.index`` entry at ``position`` as stored (checked for length, not
    judged: ``decode_offset_entry`` rejects a negative one)."""
    relative: int = unpack(OFFSET_ENTRY, buf, position, ".index entry (relativeOffset, position)")[0]
    return relative


def peek_log_position(buf: Buffer, position: int = 0) -> int:
    """The log position of the ``.index`` entry at ``position`` as stored (not judged)."""
    log_position: int = unpack(OFFSET_ENTRY, buf, position, ".index entry (relativeOffset, position)")[1]
    return log_position


def peek_timestamp(buf: Buffer, position: int = 0) -> int:
    """The timestamp of the ``.timeindex`` entry at ``position`` as stored (not judged)."""
    timestamp: int = unpack(TIME_ENTRY, buf, position, ".timeindex entry (timestamp, relativeOffset)")[0]
    return timestamp


def decode_offset_entry(buf: Buffer, position: int = 0, base_offset: int = 0) -> OffsetPosition:
    """Decode the 8-byte ``.index`` entry at ``position`` of the index buffer."""
    relative, log_position = unpack(OFFSET_ENTRY, buf, position, ".index entry (relativeOffset, position)")
    _check_relative(relative, position)
    if log_position < 0:
        raise CorruptDataError(position=position + LOG_POSITION_FIELD, expected="log position >= 0", found=str(log_position))
    return OffsetPosition(base_offset + relative, log_position)


def decode_time_entry(buf: Buffer, position: int = 0, base_offset: int = 0) -> TimestampOffset:
    """Decode the 12-byte ``.timeindex`` entry at ``position`` of the index buffer."""
    timestamp, relative = unpack(TIME_ENTRY, buf, position, ".timeindex entry (timestamp, relativeOffset)")
    _check_relative(relative, position + TIME_RELATIVE_OFFSET_FIELD)
    return TimestampOffset(timestamp, base_offset + relative)


def _relative(offset: int, base_offset: int) -> int:
    relative = offset - base_offset
    if not 0 <= relative <= INT32_MAX:
        raise ValueError(f"offset {offset} cannot be stored relative to base offset {base_offset} (int32)")
    return relative


def encode_offset_entry(entry: OffsetPosition, base_offset: int = 0) -> bytes:
    if not 0 <= entry.position <= INT32_MAX:
        raise ValueError(f"log position {entry.position} does not fit an int32")
    return OFFSET_ENTRY.pack(_relative(entry.offset, base_offset), entry.position)


def encode_time_entry(entry: TimestampOffset, base_offset: int = 0) -> bytes:
    if not -(2**63) <= entry.timestamp < 2**63:
        raise ValueError(f"timestamp {entry.timestamp} does not fit an int64")
    return TIME_ENTRY.pack(entry.timestamp, _relative(entry.offset, base_offset))


# --- whole files --------------------------------------------------------------------------


def _preallocated(body: bytes, size: int | None, entry_size: int) -> bytes:
    if size is None:
        return body
    size -= size % entry_size
    if size < len(body):
        raise ValueError(f"{len(body)} bytes of entries do not fit a {size}-byte pre-allocated index")
    return body + bytes(size - len(body))


def encode_offset_index(entries: Iterable[OffsetPosition], base_offset: int = 0, *, size: int | None = None) -> bytes:
    """Encode ``.index`` entries as ``OffsetIndex.append`` lays them out.

    ``size`` pads the file with zeros the way an active (pre-allocated) index looks; it is
    rounded down to a multiple of 8 like ``AbstractIndex.resize``.
    """
    out = bytearray()
    last: OffsetPosition | None = None
    for entry in entries:
        if last is not None and (entry.offset <= last.offset or entry.position <= last.position):
            raise ValueError(f"index entries must increase: {entry} after {last}")
        out += encode_offset_entry(entry, base_offset)
        last = entry
    return _preallocated(bytes(out), size, OFFSET_ENTRY_SIZE)


def encode_time_index(entries: Iterable[TimestampOffset], base_offset: int = 0, *, size: int | None = None) -> bytes:
    """Encode ``.timeindex`` entries as ``TimeIndex.maybeAppend`` lays them out (see ``size`` above)."""
    out = bytearray()
    last: TimestampOffset | None = None
    for entry in entries:
        if last is not None and (entry.timestamp <= last.timestamp or entry.offset < last.offset):
            raise ValueError(f"time index entries must increase: {entry} after {last}")
        out += encode_time_entry(entry, base_offset)
        last = entry
    return _preallocated(bytes(out), size, TIME_ENTRY_SIZE)


def _check_offset_order(entry: OffsetPosition, previous: OffsetPosition, position: int) -> None:
    if entry.offset <= previous.offset:
        raise CorruptDataError(
            "index offsets must strictly increase",
            position=position,
            expected=f"offset > {previous.offset}",
            found=str(entry.offset),
        )
    if entry.position <= previous.position:
        raise CorruptDataError(
            "index positions must strictly increase",
            position=position + LOG_POSITION_FIELD,
            expected=f"position > {previous.position}",
            found=str(entry.position),
        )


def _check_time_order(entry: TimestampOffset, previous: TimestampOffset, position: int) -> None:
    if entry.timestamp <= previous.timestamp:
        raise CorruptDataError(
            "time index timestamps must strictly increase",
            position=position,
            expected=f"timestamp > {previous.timestamp}",
            found=str(entry.timestamp),
        )
    if entry.offset < previous.offset:
        raise CorruptDataError(
            "time index offsets must not decrease",
            position=position + TIME_RELATIVE_OFFSET_FIELD,
            expected=f"offset >= {previous.offset}",
            found=str(entry.offset),
        )


class _IndexWalker(Generic[Entry]):
    """Shared loop of the two walkers: complete entries, zero-tail stop, order check."""

    def __init__(
        self,
        buf: Buffer,
        base_offset: int,
        entry_size: int,
        decode: Callable[[Buffer, int, int], Entry],
        check_order: Callable[[Entry, Entry, int], None],
    ) -> None:
        self.buf = buf
        self.base_offset = base_offset
        self.entry_size = entry_size
        self._decode: Callable[[Buffer, int, int], Entry] = decode
        self._check_order: Callable[[Entry, Entry, int], None] = check_order
        self.end: DataEnd | None = None
        self.count = 0
        self.last: Entry | None = None

    def __iter__(self) -> Iterator[tuple[int, Entry]]:
        view = memoryview(self.buf)
        size = len(view)
        step = self.entry_size
        zero = bytes(step)
        pos = 0
        while True:
            remaining = size - pos
            if remaining == 0:
                self.end = DataEnd("eof", pos)
                return
            if remaining < step:
                tail = bytes(view[pos:size])
                kind: EndKind = "zeros" if tail.count(0) == len(tail) else "partial"
                self.end = DataEnd(kind, pos, remaining)
                return
            if pos > 0 and view[pos : pos + step] == zero:
                self.end = DataEnd("zeros", pos, remaining)
                return
            entry = self._decode(view, pos, self.base_offset)
            if self.last is not None:
                self._check_order(entry, self.last, pos)
            self.count += 1
            self.last = entry
            yield pos, entry
            pos += step


class OffsetIndexWalker(_IndexWalker[OffsetPosition]):
    """Iterate ``(position_in_index, OffsetPosition)`` up to the zero tail; ``end`` says why it stopped.

    ``count`` and ``last`` describe the entries seen so far.
    """

    def __init__(self, buf: Buffer, base_offset: int = 0) -> None:
        super().__init__(buf, base_offset, OFFSET_ENTRY_SIZE, decode_offset_entry, _check_offset_order)


class TimeIndexWalker(_IndexWalker[TimestampOffset]):
    """Iterate ``(position_in_index, TimestampOffset)`` up to the zero tail; ``end`` says why it stopped."""

    def __init__(self, buf: Buffer, base_offset: int = 0) -> None:
        super().__init__(buf, base_offset, TIME_ENTRY_SIZE, decode_time_entry, _check_time_order)


def decode_offset_index(buf: Buffer, base_offset: int = 0) -> IndexContents[OffsetPosition]:
    """Every valid ``.index`` entry (see the module docstring for where they end)."""
    walker = OffsetIndexWalker(buf, base_offset)
    entries = tuple(entry for _, entry in walker)
    assert walker.end is not None
    return IndexContents(entries, walker.end)


def decode_time_index(buf: Buffer, base_offset: int = 0) -> IndexContents[TimestampOffset]:
    """Every valid ``.timeindex`` entry (see the module docstring for where they end)."""
    walker = TimeIndexWalker(buf, base_offset)
    entries = tuple(entry for _, entry in walker)
    assert walker.end is not None
    return IndexContents(entries, walker.end)


# --- lookups ------------------------------------------------------------------------------


def index_entry_count(buf: Buffer, entry_size: int) -> int:
    """Entries before the zero tail, found by binary search (O(log n), assumes a zero suffix).

    Upstream trusts ``fileLength / entrySize``; this also skips the zero slots of a
    pre-allocated file.  Entry 0 always counts (module docstring).  Use a walker to *verify*.
    """
    if entry_size <= 0:
        raise ValueError("entry_size must be positive")
    view = memoryview(buf)
    total = len(view) // entry_size
    zero = bytes(entry_size)
    lo, hi = 1, total  # answer in [1, total]: the first all-zero slot at i >= 1, or total
    if total <= 1:
        return total
    while lo < hi:
        mid = (lo + hi) // 2
        if view[mid * entry_size : (mid + 1) * entry_size] == zero:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _largest_lower_bound(count: int, key: Callable[[int], int], target: int) -> int:
    """``AbstractIndex.indexSlotRangeFor(..., LARGEST_LOWER_BOUND)``: slot of the largest key <= target, or -1."""
    if count == 0 or key(0) > target:
        return -1
    lo, hi = 0, count - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        found = key(mid)
        if found > target:
            hi = mid - 1
        elif found < target:
            lo = mid
        else:
            return mid
    return lo


def _checked_count(buf: Buffer, entry_size: int, entries: int | None) -> int:
    available = len(buf) // entry_size
    if entries is None:
        return index_entry_count(buf, entry_size)
    if not 0 <= entries <= available:
        raise CorruptDataError(expected=f"at most {available} entries in a {len(buf)}-byte index", found=f"{entries} entries")
    return entries


def lookup_offset(buf: Buffer, base_offset: int, target_offset: int, *, entries: int | None = None) -> OffsetPosition:
    """``OffsetIndex.lookup``: the entry with the largest offset <= ``target_offset``.

    Below the first entry (or in an empty index) the answer is ``(base_offset, 0)``: start
    scanning the log from its first byte.  ``entries`` overrides the zero-tail search (e.g. the
    ``count`` of a walker that verified the file).
    """
    count = _checked_count(buf, OFFSET_ENTRY_SIZE, entries)
    view = memoryview(buf)

    def key(slot: int) -> int:
        relative: int = OFFSET_ENTRY.unpack_from(view, slot * OFFSET_ENTRY_SIZE)[0]
        return base_offset + relative

    slot = _largest_lower_bound(count, key, target_offset)
    if slot == -1:
        return OffsetPosition(base_offset, 0)
    return decode_offset_entry(view, slot * OFFSET_ENTRY_SIZE, base_offset)


def lookup_timestamp(buf: Buffer, base_offset: int, target_timestamp: int, *, entries: int | None = None) -> TimestampOffset:
    """``TimeIndex.lookup``: the entry with the largest timestamp <= ``target_timestamp``.

    Below the first entry (or in an empty index) the answer is ``(-1, base_offset)``.
    """
    count = _checked_count(buf, TIME_ENTRY_SIZE, entries)
    view = memoryview(buf)

    def key(slot: int) -> int:
        timestamp: int = TIME_ENTRY.unpack_from(view, slot * TIME_ENTRY_SIZE)[0]
        return timestamp

    slot = _largest_lower_bound(count, key, target_timestamp)
    if slot == -1:
        return TimestampOffset(NO_TIMESTAMP, base_offset)
    return decode_time_entry(view, slot * TIME_ENTRY_SIZE, base_offset)


def last_time_entry(buf: Buffer, base_offset: int = 0) -> TimestampOffset:
    """``TimeIndex.lastEntry`` (the segment's ``largestTimestamp`` for time retention).

    An empty index answers ``(-1, base_offset)``.
    """
    count = index_entry_count(buf, TIME_ENTRY_SIZE)
    if count == 0:
        return TimestampOffset(NO_TIMESTAMP, base_offset)
    return decode_time_entry(buf, (count - 1) * TIME_ENTRY_SIZE, base_offset)
