"""RocketMQ consume queues: ConsumeQueue, ConsumeQueueExt and BatchConsumeQueue units.

All integers big-endian (Java ``ByteBuffer``).  Files are named by the 20-digit byte offset
of their first unit inside the queue (``UtilAll.offset2FileName``).

ConsumeQueue unit (``ConsumeQueue.CQ_STORE_UNIT_SIZE`` = 20), ``consumequeue/<topic>/<queueId>/``::

    pos  size  field              meaning
    0    8     commitLogOffset    CommitLog offset (PHYSICALOFFSET) of the record
    8    4     size               the record's TOTALSIZE
    12   8     tagsCode           TAGS ``String.hashCode`` sign-extended (0 = no tags); the delivery
                                  time for SCHEDULE_TOPIC_XXXX; a decorated ConsumeQueueExt
                                  address (<= -2147483649) when ConsumeQueueExt is enabled

Queue offset ``q`` is at byte ``q * 20`` of the queue: file ``q*20 - (q*20) % fileSize``,
position ``(q*20) % fileSize``; ``fileSize`` defaults to 300,000 units = 6,000,000 bytes.  A queue
whose first file starts at a non-zero queue offset is padded with *pre-blank* filler units
``(0, 0x7FFFFFFF, 0)`` (``fillPreBlank``).  A unit is valid iff ``commitLogOffset >= 0 and
size > 0`` (``ConsumeQueue.recover``); the first other unit (normally all zeros) ends the queue.

ConsumeQueueExt unit (``CqExtUnit``), ``consumequeue_ext/<topic>/<queueId>/``, 48 MiB files::

    pos  size  field              meaning
    0    2     size               20 + bitMapSize (``MIN_EXT_UNIT_SIZE`` 20, max 32767)
    2    8     tagsCode           TAGS hash (as in the ConsumeQueue unit)
    10   8     msgStoreTime       STORETIMESTAMP of the record
    18   2     bitMapSize         length of the filter bitmap
    20   B     filterBitMap       consumer-filter bloom bits

A unit that does not fit (``size > fileSize - writePos - 4``) is replaced by the short ``-1``
(end marker) and written to the next file.  Recovery walks each file until a ``size <= 0``.  The
ConsumeQueue's tagsCode holds ``extOffset + Long.MIN_VALUE`` (``decorate``).

BatchConsumeQueue unit [5.0.0+] (``BatchConsumeQueue.CQ_STORE_UNIT_SIZE`` = 46),
``batchconsumequeue/<topic>/<queueId>/``, 300,000 units = 13,800,000-byte files::

    pos  size  field              meaning
    0    8     commitLogOffset
    8    4     size
    12   8     tagsCode
    20   8     storeTime
    28   8     msgBaseOffset      queue offset of the first message of the batch
    36   2     batchSize          messages in the batch
    38   4     compactedOffset    written as -1
    42   4     reserved           0

Valid iff ``commitLogOffset >= 0 and size > 0 and msgBaseOffset >= 0 and batchSize > 0``.

No checksums.  Partial writes: every file is mapped at its full size, so its unwritten tail is
zeros; a unit lost in a crash reads as zeros (or, rarely, as a half-written unit whose size or
offset is still zero) and simply ends the valid data.  A file shorter than a whole number of
units only appears when something other than the broker cut it: the trailing bytes are reported
as a ``partial`` end.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats import data_end
from mqtool.formats._binary import I16, Buffer, need, take
from mqtool.formats.segment_names import rocketmq_file_name

_LONG_MIN = -(1 << 63)
_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1
_SHORT_MAX = (1 << 15) - 1


def _check_range(name: str, value: int, bits: int) -> None:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} {value!r} does not fit a signed {bits}-bit field")


def _placement(byte_offset: int, file_size: int, unit_size: int) -> tuple[str, int]:
    if file_size <= 0 or file_size % unit_size:
        raise ValueError(f"file size {file_size} is not a positive multiple of the {unit_size}-byte unit")
    position = byte_offset % file_size
    return rocketmq_file_name(byte_offset - position), position


# --- ConsumeQueue --------------------------------------------------------------------------

CQ_UNIT = struct.Struct(">qiq")
CQ_UNIT_SIZE = CQ_UNIT.size  # 20
#: ``MSG_TAG_OFFSET_INDEX``: where tagsCode starts inside a unit.
CQ_TAGS_CODE_POSITION = struct.calcsize(">qi")  # 12
CQ_FILE_UNITS = 300_000
CQ_FILE_SIZE = CQ_FILE_UNITS * CQ_UNIT_SIZE  # 6,000,000

#: ``fillPreBlank`` size field.
FILLER_SIZE = _INT_MAX

#: ``ConsumeQueueExt.MAX_ADDR``: tagsCode values at or below it are ext addresses.
EXT_MAX_ADDRESS = _INT_MIN - 1  # -2147483649
#: ``ConsumeQueueExt.MAX_REAL_OFFSET``: the largest ext byte offset that can be decorated.
EXT_MAX_REAL_OFFSET = EXT_MAX_ADDRESS - _LONG_MIN


def is_ext_address(tags_code: int) -> bool:
    """``ConsumeQueueExt.isExtAddr``: a decorated ext address, not a tag hash."""
    return tags_code <= EXT_MAX_ADDRESS


def decorate_ext_address(ext_offset: int) -> int:
    """``decorate``: the tagsCode that points at ext byte offset ``ext_offset``."""
    if not 0 <= ext_offset <= EXT_MAX_REAL_OFFSET:
        raise ValueError(f"ext offset {ext_offset} outside 0..{EXT_MAX_REAL_OFFSET}")
    return ext_offset + _LONG_MIN


def undecorate_ext_address(address: int) -> int:
    """``unDecorate``: the ext byte offset a decorated tagsCode points at."""
    if not _LONG_MIN <= address <= EXT_MAX_ADDRESS:
        raise ValueError(f"{address} is not a ConsumeQueueExt address (check is_ext_address first)")
    return address - _LONG_MIN


def cq_file_size(mapped_file_size_consume_queue: int) -> int:
    """``getMappedFileSizeConsumeQueue``: the configured size rounded up to whole units."""
    units = -(-mapped_file_size_consume_queue // CQ_UNIT_SIZE)
    return units * CQ_UNIT_SIZE


def cq_file_name_for(queue_offset: int, file_size: int = CQ_FILE_SIZE) -> tuple[str, int]:
    """``(file name, position)`` holding queue offset ``queue_offset``."""
    if queue_offset < 0:
        raise ValueError(f"queue offset cannot be negative: {queue_offset}")
    return _placement(queue_offset * CQ_UNIT_SIZE, file_size, CQ_UNIT_SIZE)


def cq_queue_offset(file_from_offset: int, position: int) -> int:
    """Queue offset of the unit at ``position`` of the file named ``file_from_offset``."""
    return (file_from_offset + position) // CQ_UNIT_SIZE


@dataclass(frozen=True)
class CqUnit:
    """One 20-byte ConsumeQueue unit."""

    commitlog_offset: int
    size: int
    tags_code: int

    def __str__(self) -> str:  # messages quote units in upstream terms, not as a Python repr
        return f"commitLogOffset {self.commitlog_offset}, size {self.size}, tagsCode {self.tags_code}"

    @property
    def is_valid(self) -> bool:
        """The recovery rule: ``offset >= 0 && size > 0`` (pre-blank fillers are valid)."""
        return self.commitlog_offset >= 0 and self.size > 0

    @property
    def is_filler(self) -> bool:
        """A ``fillPreBlank`` unit ``(0, 0x7FFFFFFF, 0)``: padding, not a message."""
        return self.commitlog_offset == 0 and self.size == FILLER_SIZE and self.tags_code == 0

    @property
    def has_ext_address(self) -> bool:
        return is_ext_address(self.tags_code)

    @property
    def ext_offset(self) -> int | None:
        """The ConsumeQueueExt byte offset in tagsCode, or None when it holds a tag hash."""
        return self.tags_code - _LONG_MIN if is_ext_address(self.tags_code) else None

    @property
    def end_offset(self) -> int:
        """``offset + size``: the ``maxPhysicOffset`` this unit accounts for."""
        return self.commitlog_offset + self.size


#: The pre-blank filler unit.
FILLER_UNIT = CqUnit(0, FILLER_SIZE, 0)


def decode_cq_unit(buf: Buffer, position: int = 0) -> CqUnit:
    """The unit at ``position`` (any 20 bytes decode; validity is ``CqUnit.is_valid``)."""
    need(buf, position, CQ_UNIT_SIZE, "ConsumeQueue unit")
    return CqUnit(*CQ_UNIT.unpack_from(buf, position))


def encode_cq_unit(unit: CqUnit) -> bytes:
    _check_range("commitlog_offset", unit.commitlog_offset, 64)
    _check_range("size", unit.size, 32)
    _check_range("tags_code", unit.tags_code, 64)
    return CQ_UNIT.pack(unit.commitlog_offset, unit.size, unit.tags_code)


# --- where the valid units end -------------------------------------------------------------

EndKind = Literal["eof", "zeros", "invalid", "end_marker", "partial"]


#: Where the valid units of a buffer stop, and why.
#:
#: ``eof``: the data ends exactly after the last valid unit (a full file: recovery goes on with
#: the next file).  ``zeros``: the next unit is all zero bytes (the normal end).  ``invalid``:
#: the next unit fails the validity rule but is not all zeros (``unit`` holds it; RocketMQ ends
#: the queue there all the same; for ConsumeQueueExt a negative size other than -1, kept in
#: ``length``).  ``end_marker``: ConsumeQueueExt's ``-1`` short (``length`` -1).
#: ``partial``: fewer bytes than a unit remain (``length`` of them), or an ext unit whose size
#: reaches past the data (``length`` = that size).
QueueDataEnd = data_end.DataEnd[EndKind]


def _end_of_units(buf: Buffer, position: int, unit_size: int, unit: object) -> QueueDataEnd:
    raw = memoryview(buf)[position : position + unit_size]
    if raw.tobytes().count(0) == unit_size:
        return QueueDataEnd("zeros", position)
    return QueueDataEnd("invalid", position, unit_size, unit)


def _check_start(buf: Buffer, start: int) -> None:
    if not 0 <= start <= len(buf):
        raise ValueError(f"start {start} outside the buffer of {len(buf)} bytes")


class CqWalker:
    """Iterate ``(position, CqUnit)`` over the valid units from ``start``.

    Never raises on data: every unit decodes, and the first invalid one ends the walk.  After the
    loop (or ``scan()``), ``end`` says where and why; ``count``, ``filler_count``, ``last``,
    ``max_physic_offset`` (``offset + size`` of the last valid unit, fillers included, as
    ``recover`` computes it) and ``max_ext_address`` (last ext address seen) summarise the run.
    """

    def __init__(self, buf: Buffer, start: int = 0) -> None:
        _check_start(buf, start)
        self.buf = buf
        self.start = start
        self.end: QueueDataEnd | None = None
        self.count = 0
        self.filler_count = 0
        self.max_ext_address: int | None = None
        self._last_raw: tuple[int, int, int] | None = None

    @property
    def last(self) -> CqUnit | None:
        """The last valid unit seen so far."""
        return None if self._last_raw is None else CqUnit(*self._last_raw)

    @property
    def max_physic_offset(self) -> int | None:
        return None if self._last_raw is None else self._last_raw[0] + self._last_raw[1]

    def _iter_raw(self) -> Iterator[tuple[int, tuple[int, int, int]]]:
        buf = self.buf
        size = len(buf)
        pos = self.start
        whole_end = pos + (size - pos) // CQ_UNIT_SIZE * CQ_UNIT_SIZE
        for raw in CQ_UNIT.iter_unpack(memoryview(buf)[pos:whole_end]):
            offset, unit_size, tags = raw
            if offset < 0 or unit_size <= 0:
                self.end = _end_of_units(buf, pos, CQ_UNIT_SIZE, CqUnit(*raw))
                return
            self._last_raw = raw
            self.count += 1
            if unit_size == FILLER_SIZE and offset == 0 and tags == 0:
                self.filler_count += 1
            if tags <= EXT_MAX_ADDRESS:
                self.max_ext_address = tags
            yield pos, raw
            pos += CQ_UNIT_SIZE
        if whole_end == size:
            self.end = QueueDataEnd("eof", pos)
        else:
            self.end = QueueDataEnd("partial", pos, size - whole_end)

    def __iter__(self) -> Iterator[tuple[int, CqUnit]]:
        for pos, raw in self._iter_raw():
            yield pos, CqUnit(*raw)

    def scan(self) -> QueueDataEnd:
        """Walk without building units; return ``end``."""
        for _ in self._iter_raw():
            pass
        assert self.end is not None
        return self.end


def iter_cq_units(buf: Buffer, start: int = 0) -> Iterator[tuple[int, CqUnit]]:
    """``(position, CqUnit)`` for every valid unit from ``start`` (see ``CqWalker`` for the end)."""
    return iter(CqWalker(buf, start))


#: a unit as numpy reads it (big-endian OFFSET, SIZE, TAGSCODE): :func:`peek_valid_units`
_UNIT_DTYPE = [("offset", ">i8"), ("size", ">i4"), ("tags", ">i8")]


#: below this many units :func:`peek_valid_units` walks the units instead of loading numpy
PEEK_NUMPY_MIN_UNITS = 4096


def peek_valid_units(buf: Buffer) -> tuple[int, int | None]:
    """Framing only, column by column: how many units ``buf`` starts with before the first one
    ``CqWalker`` ends at (offset < 0 or size <= 0), and the ``offset + size`` of the last of them
    (None: none) -- ``CqWalker``'s ``count`` and ``max_physic_offset``, at numpy's speed (the
    OFFSET and SIZE columns compared at once: a 6 MB file in about a millisecond) instead of
    unpacking every unit.  A buffer of fewer than ``PEEK_NUMPY_MIN_UNITS`` units is walked
    (``CqWalker``): a small store's ``info`` does not load numpy."""
    units = memoryview(buf).nbytes // CQ_UNIT_SIZE
    if not units:
        return 0, None
    if units < PEEK_NUMPY_MIN_UNITS:
        walker = CqWalker(buf)
        walker.scan()
        return walker.count, walker.max_physic_offset
    import numpy as np

    table = np.frombuffer(buf, dtype=np.dtype(_UNIT_DTYPE), count=units)
    bad = (table["offset"] < 0) | (table["size"] <= 0)
    first_bad = int(bad.argmax()) if bad.any() else units
    if first_bad == 0:
        return 0, None
    offset, size, _tags = CQ_UNIT.unpack_from(buf, (first_bad - 1) * CQ_UNIT_SIZE)
    return first_bad, offset + size


# --- ConsumeQueueExt -----------------------------------------------------------------------

CQ_EXT_HEAD = struct.Struct(">hqqh")
#: ``CqExtUnit.MIN_EXT_UNIT_SIZE``.
CQ_EXT_MIN_UNIT_SIZE = CQ_EXT_HEAD.size  # 20
#: ``CqExtUnit.MAX_EXT_UNIT_SIZE`` (Short.MAX_VALUE).
CQ_EXT_MAX_UNIT_SIZE = _SHORT_MAX
#: ``mappedFileSizeConsumeQueueExt``: 48 MiB.
CQ_EXT_FILE_SIZE = 48 * 1024 * 1024
#: Short written where a unit did not fit the rest of the file.
CQ_EXT_END_MARKER = -1
#: ``END_BLANK_DATA_LENGTH``: room always left at the end of an ext file for the marker.
CQ_EXT_END_BLANK_LENGTH = 4


@dataclass(frozen=True)
class CqExtUnit:
    """One ConsumeQueueExt unit; ``size`` and ``bitmap_size`` follow from the bitmap."""

    tags_code: int
    msg_store_time: int
    filter_bitmap: bytes = b""

    @property
    def bitmap_size(self) -> int:
        return len(self.filter_bitmap)

    @property
    def size(self) -> int:
        return CQ_EXT_MIN_UNIT_SIZE + len(self.filter_bitmap)


def cq_ext_file_name_for(ext_offset: int, file_size: int = CQ_EXT_FILE_SIZE) -> tuple[str, int]:
    """``(file name, position)`` of ext byte offset ``ext_offset``."""
    if ext_offset < 0:
        raise ValueError(f"ext offset cannot be negative: {ext_offset}")
    return _placement(ext_offset, file_size, 1)


def decode_cq_ext_unit(buf: Buffer, position: int = 0) -> CqExtUnit:
    """The ext unit at ``position``; a size below 20, a negative bitmap size or a size that
    disagrees with ``20 + bitMapSize`` is corruption."""
    need(buf, position, CQ_EXT_HEAD.size, "ConsumeQueueExt unit header")
    size, tags_code, store_time, bitmap_size = CQ_EXT_HEAD.unpack_from(buf, position)
    if size < CQ_EXT_MIN_UNIT_SIZE:
        raise CorruptDataError(position=position, expected=f"ext unit size >= {CQ_EXT_MIN_UNIT_SIZE}", found=str(size))
    if bitmap_size < 0 or size != CQ_EXT_MIN_UNIT_SIZE + bitmap_size:
        raise CorruptDataError(
            position=position + CQ_EXT_HEAD.size - 2,
            expected=f"bitMapSize {size - CQ_EXT_MIN_UNIT_SIZE} (unit size {size} - {CQ_EXT_MIN_UNIT_SIZE})",
            found=str(bitmap_size),
        )
    bitmap = take(buf, position + CQ_EXT_HEAD.size, bitmap_size, "ConsumeQueueExt filter bitmap")
    return CqExtUnit(tags_code, store_time, bitmap)


def encode_cq_ext_unit(unit: CqExtUnit) -> bytes:
    if unit.size > CQ_EXT_MAX_UNIT_SIZE:
        raise ValueError(f"ext unit of {unit.size} bytes exceeds {CQ_EXT_MAX_UNIT_SIZE}")
    _check_range("tags_code", unit.tags_code, 64)
    _check_range("msg_store_time", unit.msg_store_time, 64)
    return CQ_EXT_HEAD.pack(unit.size, unit.tags_code, unit.msg_store_time, unit.bitmap_size) + bytes(unit.filter_bitmap)


def encode_cq_ext_end_marker() -> bytes:
    """The 2 bytes ``fullFillToEnd`` writes (the rest of the file stays zero)."""
    return I16.pack(CQ_EXT_END_MARKER)


class CqExtWalker:
    """Iterate ``(position, CqExtUnit)`` from ``start`` until ``size <= 0`` (``ConsumeQueueExt.recover``).

    ``end`` kinds: ``end_marker`` (-1), ``zeros``, ``invalid`` (another negative size; RocketMQ
    stops there too), ``partial`` (a size reaching past the data, or one lone non-zero byte),
    ``eof``.  A unit with a positive but impossible size raises ``CorruptDataError``
    (``failed_at`` = its position).
    """

    def __init__(self, buf: Buffer, start: int = 0) -> None:
        _check_start(buf, start)
        self.buf = buf
        self.start = start
        self.end: QueueDataEnd | None = None
        self.failed_at: int | None = None
        self.count = 0

    def __iter__(self) -> Iterator[tuple[int, CqExtUnit]]:
        buf = self.buf
        total = len(buf)
        pos = self.start
        while True:
            remaining = total - pos
            if remaining == 0:
                self.end = QueueDataEnd("eof", pos)
                return
            if remaining < I16.size:
                kind: EndKind = "zeros" if buf[pos] == 0 else "partial"
                self.end = QueueDataEnd(kind, pos, 0 if kind == "zeros" else remaining)
                return
            (size,) = I16.unpack_from(buf, pos)
            if size == 0:
                self.end = QueueDataEnd("zeros", pos)
                return
            if size < 0:
                kind = "end_marker" if size == CQ_EXT_END_MARKER else "invalid"
                self.end = QueueDataEnd(kind, pos, size)
                return
            if size > remaining:
                self.end = QueueDataEnd("partial", pos, size)
                return
            try:
                unit = decode_cq_ext_unit(buf, pos)
            except MqError:
                self.failed_at = pos
                raise
            self.count += 1
            yield pos, unit
            pos += size


def iter_cq_ext_units(buf: Buffer, start: int = 0) -> Iterator[tuple[int, CqExtUnit]]:
    return iter(CqExtWalker(buf, start))


# --- BatchConsumeQueue ---------------------------------------------------------------------

BCQ_UNIT = struct.Struct(">qiqqqhii")
BCQ_UNIT_SIZE = BCQ_UNIT.size  # 46
BCQ_FILE_UNITS = 300_000
BCQ_FILE_SIZE = BCQ_FILE_UNITS * BCQ_UNIT_SIZE  # 13,800,000
#: ``INVALID_POS``: what the broker writes as compactedOffset.
BCQ_INVALID_POS = -1


@dataclass(frozen=True)
class BcqUnit:
    """One 46-byte BatchConsumeQueue unit."""

    commitlog_offset: int
    size: int
    tags_code: int
    store_time: int
    msg_base_offset: int
    batch_size: int
    compacted_offset: int = BCQ_INVALID_POS
    reserved: int = 0

    @property
    def is_valid(self) -> bool:
        """``offset >= 0 && size > 0 && msgBaseOffset >= 0 && batchSize > 0`` (``recover``)."""
        return self.commitlog_offset >= 0 and self.size > 0 and self.msg_base_offset >= 0 and self.batch_size > 0

    @property
    def next_offset(self) -> int:
        """Queue offset after the batch (the queue's max offset when this unit is the last)."""
        return self.msg_base_offset + self.batch_size


def bcq_file_name_for(unit_index: int, file_size: int = BCQ_FILE_SIZE) -> tuple[str, int]:
    """``(file name, position)`` of the ``unit_index``-th unit (names are byte offsets of units)."""
    if unit_index < 0:
        raise ValueError(f"unit index cannot be negative: {unit_index}")
    return _placement(unit_index * BCQ_UNIT_SIZE, file_size, BCQ_UNIT_SIZE)


def decode_bcq_unit(buf: Buffer, position: int = 0) -> BcqUnit:
    need(buf, position, BCQ_UNIT_SIZE, "BatchConsumeQueue unit")
    return BcqUnit(*BCQ_UNIT.unpack_from(buf, position))


def encode_bcq_unit(unit: BcqUnit) -> bytes:
    for name, bits in (
        ("commitlog_offset", 64),
        ("size", 32),
        ("tags_code", 64),
        ("store_time", 64),
        ("msg_base_offset", 64),
        ("batch_size", 16),
        ("compacted_offset", 32),
        ("reserved", 32),
    ):
        _check_range(name, getattr(unit, name), bits)
    return BCQ_UNIT.pack(
        unit.commitlog_offset,
        unit.size,
        unit.tags_code,
        unit.store_time,
        unit.msg_base_offset,
        unit.batch_size,
        unit.compacted_offset,
        unit.reserved,
    )


class BcqWalker:
    """Iterate ``(position, BcqUnit)`` over the valid units from ``start``; never raises on data.

    ``end`` as for ``CqWalker``; ``last`` is the last valid unit and ``max_offset`` its
    ``msgBaseOffset + batchSize``.
    """

    def __init__(self, buf: Buffer, start: int = 0) -> None:
        _check_start(buf, start)
        self.buf = buf
        self.start = start
        self.end: QueueDataEnd | None = None
        self.count = 0
        self.last: BcqUnit | None = None

    @property
    def max_offset(self) -> int | None:
        return None if self.last is None else self.last.next_offset

    def __iter__(self) -> Iterator[tuple[int, BcqUnit]]:
        buf = self.buf
        size = len(buf)
        pos = self.start
        whole_end = pos + (size - pos) // BCQ_UNIT_SIZE * BCQ_UNIT_SIZE
        for raw in BCQ_UNIT.iter_unpack(memoryview(buf)[pos:whole_end]):
            unit = BcqUnit(*raw)
            if not unit.is_valid:
                self.end = _end_of_units(buf, pos, BCQ_UNIT_SIZE, unit)
                return
            self.count += 1
            self.last = unit
            yield pos, unit
            pos += BCQ_UNIT_SIZE
        if whole_end == size:
            self.end = QueueDataEnd("eof", pos)
        else:
            self.end = QueueDataEnd("partial", pos, size - whole_end)


def iter_bcq_units(buf: Buffer, start: int = 0) -> Iterator[tuple[int, BcqUnit]]:
    return iter(BcqWalker(buf, start))


__all__ = [
    "CQ_UNIT",
    "CQ_UNIT_SIZE",
    "CQ_TAGS_CODE_POSITION",
    "CQ_FILE_UNITS",
    "CQ_FILE_SIZE",
    "FILLER_SIZE",
    "FILLER_UNIT",
    "EXT_MAX_ADDRESS",
    "EXT_MAX_REAL_OFFSET",
    "CqUnit",
    "decode_cq_unit",
    "encode_cq_unit",
    "is_ext_address",
    "decorate_ext_address",
    "undecorate_ext_address",
    "cq_file_size",
    "cq_file_name_for",
    "cq_queue_offset",
    "QueueDataEnd",
    "CqWalker",
    "iter_cq_units",
    "peek_valid_units",
    "CQ_EXT_HEAD",
    "CQ_EXT_MIN_UNIT_SIZE",
    "CQ_EXT_MAX_UNIT_SIZE",
    "CQ_EXT_FILE_SIZE",
    "CQ_EXT_END_MARKER",
    "CQ_EXT_END_BLANK_LENGTH",
    "CqExtUnit",
    "cq_ext_file_name_for",
    "decode_cq_ext_unit",
    "encode_cq_ext_unit",
    "encode_cq_ext_end_marker",
    "CqExtWalker",
    "iter_cq_ext_units",
    "BCQ_UNIT",
    "BCQ_UNIT_SIZE",
    "BCQ_FILE_UNITS",
    "BCQ_FILE_SIZE",
    "BCQ_INVALID_POS",
    "BcqUnit",
    "bcq_file_name_for",
    "decode_bcq_unit",
    "encode_bcq_unit",
    "BcqWalker",
    "iter_bcq_units",
]
