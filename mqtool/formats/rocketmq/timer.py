"""RocketMQ 5.x timer store: ``timerwheel``, ``timerlog/``, ``config/timercheck``, ``config/timermetrics``.

The timer store (``TimerMessageStore``, RIP-43, 5.0.0+) holds messages with an arbitrary delivery
time.  A producer's timer message is first written to the CommitLog under the system topic
``rmq_sys_wheel_timer`` (queue 0) with its real topic in the ``REAL_TOPIC`` property and its
delivery time in ``TIMER_OUT_MS``; the timer store then appends a *unit* for it to the TimerLog
and links the unit into the TimerWheel slot of its delivery time.  All integers are big-endian
(Java ``ByteBuffer``).  The byte layouts below are the same in every release from 5.0.0 to 5.3.3
and the 2025 development line (only logging and shutdown code changed around them).

``timerwheel`` (``TimerWheel``, one file of ``slotsTotal * 2`` slots; ``slotsTotal`` =
``TIMER_WHEEL_TTL_DAY`` 7 * 86400 = 604,800, so 1,209,600 slots = 38,707,200 bytes; the broker
refuses to start on a file of another non-zero length).  Slot (``Slot.SIZE`` = 32)::

    pos  size  field       meaning
    0    8     timeMs      delivery time of the slot / ``timerPrecisionMs`` (1000 by default):
                           the slot is in use for that time iff the value is exactly it
    8    8     firstPos    TimerLog offset of the slot's first unit (-1: none)
    16   8     lastPos     TimerLog offset of the slot's last unit: the head of its chain
    24   4     num         units added minus deletes (statistics only)
    28   4     magic       unused (0)

The slot of delivery time ``t`` is number ``t / precisionMs % (slotsTotal * 2)``
(``getSlotIndex``); a slot whose stored time is another one's is empty for ``t``
(``getSlot`` returns ``Slot(-1, -1, -1)``).  A slot never used is all zeros.

``timerlog/<20-digit offset>`` (``TimerLog``, a ``MappedFileQueue`` of ``mappedFileSizeTimerLog``
= 100 MiB files; offsets are byte addresses across the files, as in the CommitLog).
Unit (``TimerLog.UNIT_SIZE`` = 52)::

    pos  size  field           meaning
    0    4     size            52
    4    8     prevPos         TimerLog offset of the previous unit of the same slot (-1: none)
    12   4     magic           bit set: 1 ``MAGIC_DEFAULT``, 2 ``MAGIC_ROLL`` (re-enqueued for a
                               later round), 4 ``MAGIC_DELETE`` (cancels a timer message);
                               ``isMagicOK``: no bit above the low four
    16   8     currWriteTime   enqueue time (ms)
    24   4     delayTime       delivery time - currWriteTime (ms)
    28   8     offsetPy        commitlog offset of the timer message (``UNIT_PRE_SIZE_FOR_MSG``)
    36   4     sizePy          its TOTALSIZE
    40   4     hashTopic       ``String.hashCode`` of its real topic (0 when none)
    44   8     reserved        0

A unit that does not fit the rest of a file (``len + 16 > fileSize - wrotePosition``) is preceded
by a BLANK record ``(rest of file: int, 0: long, BLANK_MAGIC_CODE: int)`` (``MIN_BLANK_LEN`` 16)
and written at the start of the next file.  Recovery (``TimerMessageStore.recoverAndRevise``)
walks each file unit by unit from its start: a BLANK ends the file, a unit whose size is not 52 or
whose magic fails ``isMagicOK`` ends the TimerLog (``truncateDirtyFiles`` cuts the rest), and
every other unit is linked back into the wheel slot of ``currWriteTime + delayTime``.

``config/timercheck`` (``TimerCheckpoint``, one mapped 4096-byte page)::

    pos  size  field                   meaning
    0    8     lastReadTimeMs          delivery time the dequeue has reached (a slot boundary)
    8    8     lastTimerLogFlushPos    TimerLog offset flushed when the checkpoint was written
    16   8     lastTimerQueueOffset    next queue offset of rmq_sys_wheel_timer to enqueue
    24   8     masterTimerQueueOffset  the master's (a slave reads it from the master)
    32   8     stateVersion            ``DataVersion`` of the checkpoint
    40   8     timestamp               ``DataVersion`` time (ms)
    48   8     counter                 ``DataVersion`` counter
    56   4040  (unused)                zero

``config/timermetrics`` (``TimerMetrics``, a ``ConfigManager`` JSON file, written by fastjson
with ``BrowserCompatible``: non-ASCII characters as ``\\uXXXX``)::

    {"dataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},
     "timingCount":{"<real topic>":{"count":3,"timeStamp":1700000000000}}}

No checksums anywhere.  Partial writes: the wheel and the checkpoint are mapped pages written
field by field and forced; a crash can leave a mix of old and new values, each long written
whole.  TimerLog files are mapped at their full size, so their unwritten tail is zeros, and a
unit lost in a crash reads as zeros (its size is then 0, which ends the TimerLog).
``timermetrics``: [5.0.0 … 5.3.3] written to ``timermetrics.tmp``, the old file copied to
``timermetrics.bak`` and the new one renamed into place (a crash leaves the ``.tmp``, or no
``timermetrics`` beside a whole ``.bak``); [after 5.3.3] the file is moved to ``.bak`` and
written anew in place (a crash can leave it missing or cut); the broker then loads the ``.bak``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from mqtool.errors import CorruptDataError
from mqtool.formats import data_end
from mqtool.formats._binary import Buffer, is_zero, need
from mqtool.formats.rocketmq.config import DataVersion, parse_data_version, parse_fastjson

# --- common -----------------------------------------------------------------------------------

#: The system topic timer messages are written under (``TimerMessageStore.TIMER_TOPIC``).
TIMER_TOPIC = "rmq_sys_wheel_timer"
#: Message properties of a timer message (``MessageConst``).
PROPERTY_TIMER_OUT_MS = "TIMER_OUT_MS"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"


def _java_long(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def _java_int(value: int) -> int:
    value &= (1 << 32) - 1
    return value - (1 << 32) if value >> 31 else value


def _java_div(a: int, b: int) -> int:
    """Java's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _java_rem(a: int, b: int) -> int:
    """Java's ``%`` (the sign of the dividend)."""
    return a - _java_div(a, b) * b


def _check_range(name: str, value: int, bits: int) -> None:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} {value!r} does not fit a signed {bits}-bit field")


@lru_cache(maxsize=4096)  # a store has few real topics and many units of each
def java_string_hash(text: str) -> int:
    """``String.hashCode`` (UTF-16 code units, 32-bit wrap-around): the TimerLog's ``hashTopic``."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _java_int(h)


# --- timerwheel -------------------------------------------------------------------------------

SLOT = struct.Struct(">qqqii")
SLOT_SIZE = SLOT.size  # 32
#: ``TimerMessageStore.TIMER_WHEEL_TTL_DAY`` * ``DAY_SECS``.
SLOTS_TOTAL = 7 * 24 * 3600  # 604,800
#: Slots in the file: ``slotsTotal * 2``.
WHEEL_SLOTS = SLOTS_TOTAL * 2
WHEEL_SIZE = WHEEL_SLOTS * SLOT_SIZE  # 38,707,200
DEFAULT_PRECISION_MS = 1000
#: ``TimerWheel.BLANK``: no unit (a slot's firstPos/lastPos, a unit's prevPos).
NO_POS = -1

#: The slot as numpy reads it (big-endian), for finding the used ones of a 38 MB wheel at once.
SLOT_DTYPE = np.dtype([("time", ">i8"), ("first_pos", ">i8"), ("last_pos", ">i8"), ("num", ">i4"), ("magic", ">i4")])


@dataclass(frozen=True)
class Slot:
    """One 32-byte wheel slot; ``time`` as stored (delivery time / precisionMs)."""

    time: int = 0
    first_pos: int = 0
    last_pos: int = 0
    num: int = 0
    magic: int = 0

    @property
    def is_empty(self) -> bool:
        """Never used: all fields zero."""
        return not (self.time or self.first_pos or self.last_pos or self.num or self.magic)

    def time_ms(self, precision_ms: int = DEFAULT_PRECISION_MS) -> int:
        """The slot's delivery time in ms (``getRawSlot``: ``timeMs * precisionMs``)."""
        return _java_long(self.time * precision_ms)

    def belongs_at(self, index: int, slots: int = WHEEL_SLOTS) -> bool:
        """Whether the stored time is one whose slot number is ``index`` (``getSlotIndex``)."""
        return _java_rem(self.time, slots) == index


def slot_index(time_ms: int, precision_ms: int = DEFAULT_PRECISION_MS, slots: int = WHEEL_SLOTS) -> int:
    """``TimerWheel.getSlotIndex``: ``(int) (timeMs / precisionMs % (slotsTotal * 2))``."""
    if precision_ms <= 0:
        raise ValueError(f"precision must be positive, found {precision_ms}")
    return _java_int(_java_rem(_java_div(time_ms, precision_ms), slots))


def slot_time(time_ms: int, precision_ms: int = DEFAULT_PRECISION_MS) -> int:
    """The slot time of delivery time ``time_ms``: ``timeMs / precisionMs`` (Java division)."""
    if precision_ms <= 0:
        raise ValueError(f"precision must be positive, found {precision_ms}")
    return _java_div(time_ms, precision_ms)


def slot_position(index: int) -> int:
    """Byte position of slot ``index`` in the wheel file."""
    return index * SLOT_SIZE


def decode_slot(buf: Buffer, position: int = 0) -> Slot:
    """The slot at ``position`` (any 32 bytes decode; what they mean is judged by the store model)."""
    need(buf, position, SLOT_SIZE, "TimerWheel slot")
    return Slot(*SLOT.unpack_from(buf, position))


def encode_slot(slot: Slot) -> bytes:
    for name in ("time", "first_pos", "last_pos"):
        _check_range(name, getattr(slot, name), 64)
    _check_range("num", slot.num, 32)
    _check_range("magic", slot.magic, 32)
    return SLOT.pack(slot.time, slot.first_pos, slot.last_pos, slot.num, slot.magic)


def slot_for(time_ms: int, first_pos: int, last_pos: int, num: int = 0, magic: int = 0, precision_ms: int = DEFAULT_PRECISION_MS) -> Slot:
    """The slot ``TimerWheel.putSlot`` writes for delivery time ``time_ms``."""
    return Slot(_java_div(time_ms, precision_ms), first_pos, last_pos, num, magic)


def used_slots(buf: Buffer, first_index: int = 0) -> Iterator[tuple[int, Slot]]:
    """``(slot number, slot)`` of every slot of ``buf`` that is not all zeros, in order;
    ``buf`` holds whole slots starting with slot ``first_index`` (trailing bytes that make no
    whole slot are not read: the caller judges the file's size)."""
    count = len(buf) // SLOT_SIZE
    if count == 0:
        return
    raw = np.frombuffer(buf, dtype=np.uint8, count=count * SLOT_SIZE).reshape(count, SLOT_SIZE)
    rows = np.flatnonzero(raw.any(axis=1))
    if len(rows) == 0:
        return
    slots = np.frombuffer(buf, dtype=SLOT_DTYPE, count=count)[rows]
    for row, s in zip(rows.tolist(), slots.tolist(), strict=True):
        yield first_index + row, Slot(*(int(v) for v in s))


def encode_wheel(slots: Mapping[int, Slot], slot_count: int = WHEEL_SLOTS) -> bytes:
    """A whole wheel file holding ``slots`` (by slot number), the rest zero."""
    out = bytearray(slot_count * SLOT_SIZE)
    for index, slot in slots.items():
        if not 0 <= index < slot_count:
            raise ValueError(f"slot number {index} outside 0..{slot_count - 1}")
        out[index * SLOT_SIZE : (index + 1) * SLOT_SIZE] = encode_slot(slot)
    return bytes(out)


# --- timerlog ---------------------------------------------------------------------------------

UNIT = struct.Struct(">iqiqiqiiq")
UNIT_SIZE = UNIT.size  # 52
#: ``UNIT_PRE_SIZE_FOR_MSG``: where offsetPy starts inside a unit.
OFFSET_PY_POSITION = struct.calcsize(">iqiqi")  # 28
#: The head a BLANK record and a unit share: size, prevPos, magic (``MIN_BLANK_LEN``).
UNIT_HEAD = struct.Struct(">iqi")
MIN_BLANK_LEN = UNIT_HEAD.size  # 16
#: ``TimerLog.BLANK_MAGIC_CODE`` (``0xBBCCDDEE ^ 1880681586 + 8``: Java adds before it XORs).
BLANK_MAGIC_CODE = _java_int(0xBBCCDDEE ^ (1880681586 + 8))
MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2
#: ``MessageStoreConfig.mappedFileSizeTimerLog``.
DEFAULT_TIMERLOG_FILE_SIZE = 100 << 20


def is_magic_ok(magic: int) -> bool:
    """``TimerMessageStore.isMagicOK``: ``(magic | 0xF) == 0xF`` on a Java int."""
    return 0 <= magic <= 0xF


@dataclass(frozen=True)
class TimerUnit:
    """One 52-byte TimerLog unit, fields as upstream names them."""

    prev_pos: int = NO_POS
    magic: int = MAGIC_DEFAULT
    curr_write_time: int = 0
    delay_time: int = 0
    offset_py: int = 0
    size_py: int = 0
    hash_topic: int = 0
    reserved: int = 0
    size: int = UNIT_SIZE

    @property
    def delayed_time(self) -> int:
        """The delivery time (ms): ``currWriteTime + delayTime``, the slot the unit belongs to."""
        return _java_long(self.curr_write_time + self.delay_time)

    @property
    def is_roll(self) -> bool:
        return bool(self.magic & MAGIC_ROLL)

    @property
    def is_delete(self) -> bool:
        return bool(self.magic & MAGIC_DELETE)


def decode_unit(buf: Buffer, position: int = 0) -> TimerUnit:
    """The 52 bytes at ``position`` as a unit, whatever they hold (``walk_units`` judges them)."""
    need(buf, position, UNIT_SIZE, "TimerLog unit")
    size, prev, magic, write, delay, off, sz, hsh, res = UNIT.unpack_from(buf, position)
    return TimerUnit(prev, magic, write, delay, off, sz, hsh, res, size)


def encode_unit(unit: TimerUnit) -> bytes:
    for name, bits in (
        ("size", 32),
        ("prev_pos", 64),
        ("magic", 32),
        ("curr_write_time", 64),
        ("delay_time", 32),
        ("offset_py", 64),
        ("size_py", 32),
        ("hash_topic", 32),
        ("reserved", 64),
    ):
        _check_range(name, getattr(unit, name), bits)
    return UNIT.pack(unit.size, unit.prev_pos, unit.magic, unit.curr_write_time, unit.delay_time, unit.offset_py, unit.size_py, unit.hash_topic, unit.reserved)


def encode_blank(rest: int) -> bytes:
    """The BLANK record that ends a file with ``rest`` bytes left (``TimerLog.append``)."""
    _check_range("rest", rest, 32)
    return UNIT_HEAD.pack(rest, 0, BLANK_MAGIC_CODE)


def is_blank_head(buf: Buffer, position: int) -> bool:
    """Whether the bytes at ``position`` are a BLANK record's head: its magic, whatever its size
    says (recovery tests the magic first)."""
    if len(buf) - position < MIN_BLANK_LEN:
        return False
    return bool(UNIT_HEAD.unpack_from(buf, position)[2] == BLANK_MAGIC_CODE)


def unit_check(buf: Buffer, position: int) -> CorruptDataError | None:
    """What is wrong with the unit at ``position`` as recovery judges it (size 52 and
    ``isMagicOK``), or None for a unit recovery links into the wheel."""
    size, _prev, magic = UNIT_HEAD.unpack_from(buf, position)
    if size != UNIT_SIZE:
        return CorruptDataError(position=position, expected=f"a TimerLog unit of size {UNIT_SIZE}", found=f"size {size}", kind="size")
    if not is_magic_ok(magic):
        return CorruptDataError(
            position=position + 12, expected="a TimerLog unit magic with no bit above the low four (isMagicOK)", found=f"0x{magic & 0xFFFFFFFF:08X}", kind="magic"
        )
    return None


TimerLogEndKind = Literal["eof", "zeros", "blank", "partial"]


#: Where the units of a buffer stop without damage: ``eof`` (the buffer ends between
#: units), ``zeros`` (an all-zero unit: the unwritten tail), ``blank`` (the BLANK record that ends a
#: file) or ``partial`` (fewer bytes than a unit left, not all zero and not a BLANK).
TimerLogEnd = data_end.DataEnd[TimerLogEndKind]


@dataclass
class UnitWalker:
    """Walk the units of ``buf`` from ``start`` (a multiple of 52 from the file's start).

    Yields ``(position, unit)`` for every unit recovery links into the wheel, and stops with
    ``end`` set at a clean end, or raises ``CorruptDataError`` (located in ``buf``) at a unit
    recovery stops at: a size that is not 52, a magic ``isMagicOK`` refuses, a BLANK whose size
    is not the rest of the file (``rest``: bytes from ``buf``'s start to the file's end; None:
    the buffer is the rest of the file)."""

    buf: Buffer
    start: int = 0
    rest: int | None = None
    end: TimerLogEnd | None = field(default=None, init=False)
    #: Where the walk stands: the unit (or BLANK) it stopped at, when it ends or raises.
    stopped_at: int = field(default=0, init=False)

    def __iter__(self) -> Iterator[tuple[int, TimerUnit]]:
        buf = self.buf
        n = len(buf)
        rest = n if self.rest is None else self.rest
        pos = self.start
        while True:
            self.stopped_at = pos
            left = n - pos
            if left <= 0:
                self.end = TimerLogEnd("eof", pos)
                return
            if is_blank_head(buf, pos):
                size = UNIT_HEAD.unpack_from(buf, pos)[0]
                if size != rest - pos:
                    raise CorruptDataError(
                        position=pos, expected=f"a TimerLog BLANK record of size {rest - pos} (the rest of the file)", found=f"size {size}", kind="size"
                    )
                self.end = TimerLogEnd("blank", pos)
                return
            if left < UNIT_SIZE:
                self.end = TimerLogEnd("zeros" if is_zero(buf, pos, n) else "partial", pos)
                return
            if is_zero(buf, pos, pos + UNIT_SIZE):
                self.end = TimerLogEnd("zeros", pos)
                return
            problem = unit_check(buf, pos)
            if problem is not None:
                raise problem
            yield pos, decode_unit(buf, pos)
            pos += UNIT_SIZE


def walk_units(buf: Buffer, start: int = 0, rest: int | None = None) -> UnitWalker:
    return UnitWalker(buf, start, rest)


def unit_file_name(offset: int, file_size: int = DEFAULT_TIMERLOG_FILE_SIZE) -> tuple[int, int]:
    """``(file base, position)`` of TimerLog offset ``offset`` (``offsetPy % fileSize``)."""
    if file_size <= 0:
        raise ValueError(f"file size must be positive, found {file_size}")
    position = offset % file_size
    return offset - position, position


def last_unit_position(file_size: int) -> int:
    """``TimerLog.getOffsetForLastUnit``: where the last unit of a full file starts."""
    return file_size - (file_size - MIN_BLANK_LEN) % UNIT_SIZE - MIN_BLANK_LEN - UNIT_SIZE


# --- timercheck -------------------------------------------------------------------------------

TIMER_CHECKPOINT_SIZE = 4096
#: The four longs every 5.x release reads.
TIMER_CHECKPOINT_HEAD = struct.Struct(">qqqq")
#: With the ``DataVersion`` (state version, timestamp, counter) after them.
TIMER_CHECKPOINT_FIELDS = struct.Struct(">qqqqqqq")
TIMER_CHECKPOINT_USED_SIZE = TIMER_CHECKPOINT_FIELDS.size  # 56


@dataclass(frozen=True)
class TimerCheckpoint:
    last_read_time_ms: int = 0
    last_timer_log_flush_pos: int = 0
    last_timer_queue_offset: int = 0
    master_timer_queue_offset: int = 0
    #: None when the buffer ends before byte 56 (``TimerCheckpoint.decode`` of a 32-byte buffer).
    state_version: int | None = None
    data_version_timestamp: int | None = None
    data_version_counter: int | None = None


def decode_timer_checkpoint(buf: Buffer, position: int = 0) -> TimerCheckpoint:
    """The timer checkpoint at ``position``: at least its four longs (32 bytes)."""
    need(buf, position, TIMER_CHECKPOINT_HEAD.size, "timer checkpoint (lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset, masterTimerQueueOffset)")
    if len(buf) - position >= TIMER_CHECKPOINT_USED_SIZE:
        return TimerCheckpoint(*TIMER_CHECKPOINT_FIELDS.unpack_from(buf, position))
    return TimerCheckpoint(*TIMER_CHECKPOINT_HEAD.unpack_from(buf, position))


def encode_timer_checkpoint(cp: TimerCheckpoint) -> bytes:
    """The full 4096-byte page (None fields written as 0, the rest zero)."""
    values = (
        cp.last_read_time_ms,
        cp.last_timer_log_flush_pos,
        cp.last_timer_queue_offset,
        cp.master_timer_queue_offset,
        cp.state_version or 0,
        cp.data_version_timestamp or 0,
        cp.data_version_counter or 0,
    )
    for value in values:
        _check_range("timer checkpoint field", value, 64)
    page = bytearray(TIMER_CHECKPOINT_SIZE)
    TIMER_CHECKPOINT_FIELDS.pack_into(page, 0, *values)
    return bytes(page)


# --- timermetrics -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TimerMetric:
    """``TimerMetrics.Metric``: timer messages pending for one real topic, and when it last changed."""

    count: int = 0
    time_stamp: int = 0


@dataclass(frozen=True)
class TimerMetrics:
    timing_count: dict[str, TimerMetric] = field(default_factory=dict)
    data_version: DataVersion | None = None


def _int_field(obj: Mapping[Any, Any], name: str, where: str) -> int:
    value = obj.get(name, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptDataError(expected=f"an integer at {where}.{name}", found="null" if value is None else type(value).__name__)
    return value


def parse_timer_metrics(source: str | bytes | bytearray | memoryview | Mapping[Any, Any]) -> TimerMetrics:
    """``config/timermetrics`` (its text, or the document parsed) as data: ``timingCount``
    (topic -> count, timeStamp) and ``dataVersion``."""
    doc = source if isinstance(source, Mapping) else parse_fastjson(source)
    if not isinstance(doc, Mapping):
        raise CorruptDataError(expected="a JSON object at the top level", found=type(doc).__name__)
    raw = doc.get("timingCount")
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise CorruptDataError(expected='an object "timingCount"', found=type(raw).__name__)
    table: dict[str, TimerMetric] = {}
    for topic, metric in raw.items():
        where = f"timingCount[{topic!r}]"
        if not isinstance(metric, Mapping):
            raise CorruptDataError(expected=f"an object at {where}", found="null" if metric is None else type(metric).__name__)
        table[str(topic)] = TimerMetric(_int_field(metric, "count", where), _int_field(metric, "timeStamp", where))
    return TimerMetrics(table, parse_data_version(dict(doc)))


def encode_timer_metrics(metrics: TimerMetrics) -> str:
    """``TimerMetrics.persist``'s text: fastjson's compact ``BrowserCompatible`` output (bean
    fields in name order, non-ASCII characters as ``\\uXXXX``)."""
    body: dict[str, Any] = {}
    if metrics.data_version is not None:
        body["dataVersion"] = metrics.data_version.to_json()
    body["timingCount"] = {t: {"count": m.count, "timeStamp": m.time_stamp} for t, m in metrics.timing_count.items()}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True)


__all__ = [
    "TIMER_TOPIC",
    "PROPERTY_TIMER_OUT_MS",
    "PROPERTY_REAL_TOPIC",
    "PROPERTY_TIMER_DEL_UNIQKEY",
    "java_string_hash",
    "SLOT",
    "SLOT_SIZE",
    "SLOTS_TOTAL",
    "WHEEL_SLOTS",
    "WHEEL_SIZE",
    "DEFAULT_PRECISION_MS",
    "NO_POS",
    "Slot",
    "slot_index",
    "slot_time",
    "slot_position",
    "decode_slot",
    "encode_slot",
    "slot_for",
    "used_slots",
    "encode_wheel",
    "UNIT",
    "UNIT_SIZE",
    "OFFSET_PY_POSITION",
    "MIN_BLANK_LEN",
    "BLANK_MAGIC_CODE",
    "MAGIC_DEFAULT",
    "MAGIC_ROLL",
    "MAGIC_DELETE",
    "DEFAULT_TIMERLOG_FILE_SIZE",
    "is_magic_ok",
    "TimerUnit",
    "decode_unit",
    "encode_unit",
    "encode_blank",
    "is_blank_head",
    "unit_check",
    "TimerLogEnd",
    "UnitWalker",
    "walk_units",
    "unit_file_name",
    "last_unit_position",
    "TIMER_CHECKPOINT_SIZE",
    "TIMER_CHECKPOINT_USED_SIZE",
    "TimerCheckpoint",
    "decode_timer_checkpoint",
    "encode_timer_checkpoint",
    "TimerMetric",
    "TimerMetrics",
    "parse_timer_metrics",
    "encode_timer_metrics",
]
