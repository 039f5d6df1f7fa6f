"""RocketMQ 5.2+ RocksDB ConsumeQueue (``storeType=defaultRocksDB``): key and value bytes.

Modelled on RocketMQ 5.2.0 to 5.3.3 (the layout is the same in all of them):
``RocksDBConsumeQueueTable`` (units), ``RocksDBConsumeQueueOffsetTable`` (max/min offsets and the
dispatch checkpoint), ``ConsumeQueueRocksDBStorage`` (column families), ``AbstractRocksDBStorage``
(the control bytes ``CTRL_0`` = 0x00, ``CTRL_1`` = 0x01, ``CTRL_2`` = 0x02).  All integers are
big-endian and signed (Java ``ByteBuffer``); topics are UTF-8.

The database is the directory ``<store root>/consumequeue`` itself (``RocksDBConsumeQueueStore``
opens ``StorePathConfigHelper.getStorePathConsumeQueue``): its ``CURRENT``, ``MANIFEST-*``,
``*.sst`` and ``*.log`` files stand beside the topic directories of a file ConsumeQueue when the
broker writes both (``rocksdbCQDoubleWriteEnable``, ``CombineConsumeQueueStore``).  Two column
families:

``default`` -- one ConsumeQueue unit per key (``RocksDBConsumeQueueTable``)::

    key    pos    size  field
           0      4     topic length t
           4      1     CTRL_1
           5      t     topic (UTF-8)
           5+t    1     CTRL_1
           6+t    4     queueId
           10+t   1     CTRL_1
           11+t   8     queue offset (ConsumeQueue offset)      -> 19 + t bytes

    value  0      8     CommitLog physical offset of the record
           8      4     size (the record's TOTALSIZE)
           12     8     tagsCode (TAGS hash, as in a file ConsumeQueue unit)
           20     8     store timestamp (STORETIMESTAMP)       -> 28 bytes

A topic/queue's units are deleted with ``deleteRange`` between the keys ending ``... queueId,
CTRL_0`` and ``... queueId, CTRL_2`` (``destroyCQ``); units below the CommitLog's first file are
dropped by compaction (``ConsumeQueueCompactionFilterFactory``), so a queue's first units may be gone.

``offset`` -- per topic/queue the last and first unit (``RocksDBConsumeQueueOffsetTable``)::

    key    pos    size  field
           0      4     topic length t
           4      1     CTRL_1
           5      t     topic (UTF-8)
           5+t    1     CTRL_1
           6+t    3     "max" or "min"
           9+t    1     CTRL_1
           10+t   4     queueId                                  -> 14 + t bytes

    value  0      8     CommitLog physical offset
           8      8     queue offset                             -> 16 bytes

The ``max`` entry holds the last unit written (the queue's max offset is its queue offset + 1:
``RocksDBConsumeQueueStore.getMaxOffsetInQueue``), the ``min`` entry the first unit kept.  The
key of topic ``CHECKPOINT_TOPIC`` (``TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC``), ``max``,
queue 0 holds an 8-byte value: the CommitLog offset dispatch has reached
(``appendMaxPhyOffset``; a restart dispatches from there, ``getMaxPhyOffsetInConsumeQueue``).

This module only turns bytes into values and back; it knows no database (``store.rocksdb_cq``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mqtool.errors import CorruptDataError

CTRL_0 = 0x00
CTRL_1 = 0x01
CTRL_2 = 0x02

#: Column families (``RocksDB.DEFAULT_COLUMN_FAMILY``, ``ConsumeQueueRocksDBStorage.OFFSET_COLUMN_FAMILY``).
UNITS_COLUMN_FAMILY = "default"
OFFSET_COLUMN_FAMILY = "offset"

#: ``RocksDBConsumeQueueTable.CQ_UNIT_SIZE``
CQ_VALUE_SIZE = 28
#: ``CQ_KEY_LENGTH_WITHOUT_TOPIC_BYTES``
CQ_KEY_FIXED = 4 + 1 + 1 + 4 + 1 + 8
#: ``OFFSET_KEY_LENGTH_WITHOUT_TOPIC_BYTES``
OFFSET_KEY_FIXED = 4 + 1 + 1 + 3 + 1 + 4
#: ``OFFSET_VALUE_LENGTH``
OFFSET_VALUE_SIZE = 16
#: the checkpoint entry's value: one long
CHECKPOINT_VALUE_SIZE = 8
#: ``TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC``
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"
MAX = "max"
MIN = "min"

_VALUE = struct.Struct(">qiqq")
_OFFSET_VALUE = struct.Struct(">qq")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


@dataclass(frozen=True)
class CqKey:
    topic: str
    queue_id: int
    queue_offset: int


@dataclass(frozen=True)
class CqValue:
    commitlog_offset: int
    size: int
    tags_code: int
    store_timestamp: int


@dataclass(frozen=True)
class OffsetKey:
    topic: str
    kind: str  # "max" or "min"
    queue_id: int


@dataclass(frozen=True)
class OffsetValue:
    commitlog_offset: int
    queue_offset: int


def _bad(what: str, position: int, expected: str, found: str, kind: str = "size") -> CorruptDataError:
    return CorruptDataError(what, position=position, expected=expected, found=found, kind=kind)  # type: ignore[arg-type]


def _ctrl(data: bytes, pos: int, what: str) -> None:
    if data[pos] != CTRL_1:
        raise _bad(f"{what}: control byte", pos, "0x01 (CTRL_1)", f"0x{data[pos]:02X}", "magic")


def _topic(data: bytes, fixed: int, what: str) -> tuple[str, int]:
    """The topic of a key and its byte length, after checking the key's length against it."""
    if len(data) < fixed:
        raise _bad(f"{what}: key length", 0, f"at least {fixed} bytes", f"{len(data)}", "truncated")
    (t,) = _INT.unpack_from(data, 0)
    if t < 0 or len(data) != fixed + t:
        raise _bad(f"{what}: topic length", 0, f"{len(data) - fixed} (the key's length less {fixed})", str(t))
    _ctrl(data, 4, what)
    try:
        topic = data[5 : 5 + t].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(f"{what}: topic", 5 + exc.start, "UTF-8 text", f"byte 0x{data[5 + exc.start]:02X}", "encoding") from None
    _ctrl(data, 5 + t, what)
    return topic, t


def encode_cq_key(key: CqKey) -> bytes:
    """The key ``RocksDBConsumeQueueTable.buildCQKeyByteBuffer`` builds."""
    tb = key.topic.encode("utf-8")
    return _INT.pack(len(tb)) + bytes([CTRL_1]) + tb + bytes([CTRL_1]) + _INT.pack(key.queue_id) + bytes([CTRL_1]) + _LONG.pack(key.queue_offset)


def decode_cq_key(data: bytes) -> CqKey:
    """A unit key; ``CorruptDataError`` (position inside the key) when it is not one."""
    topic, t = _topic(data, CQ_KEY_FIXED, "ConsumeQueue key")
    (queue_id,) = _INT.unpack_from(data, 6 + t)
    _ctrl(data, 10 + t, "ConsumeQueue key")
    (queue_offset,) = _LONG.unpack_from(data, 11 + t)
    return CqKey(topic, queue_id, queue_offset)


def encode_cq_value(value: CqValue) -> bytes:
    """The value ``RocksDBConsumeQueueTable.buildCQValueByteBuffer`` builds."""
    return _VALUE.pack(value.commitlog_offset, value.size, value.tags_code, value.store_timestamp)


def decode_cq_value(data: bytes) -> CqValue:
    if len(data) != CQ_VALUE_SIZE:
        raise _bad("ConsumeQueue value length", 0, f"{CQ_VALUE_SIZE} bytes", str(len(data)))
    return CqValue(*_VALUE.unpack(data))


def cq_queue_prefix(topic: str, queue_id: int) -> bytes:
    """The bytes every unit key of ``topic``/``queue_id`` starts with (its keys sort by queue
    offset after them, for queue offsets >= 0)."""
    return encode_cq_key(CqKey(topic, queue_id, 0))[:-8]


def encode_offset_key(key: OffsetKey) -> bytes:
    """The key ``RocksDBConsumeQueueOffsetTable.buildOffsetKeyByteBuffer`` builds."""
    tb = key.topic.encode("utf-8")
    kind = key.kind.encode("ascii")
    return _INT.pack(len(tb)) + bytes([CTRL_1]) + tb + bytes([CTRL_1]) + kind + bytes([CTRL_1]) + _INT.pack(key.queue_id)


def decode_offset_key(data: bytes) -> OffsetKey:
    topic, t = _topic(data, OFFSET_KEY_FIXED, "offset key")
    kind = data[6 + t : 9 + t]
    if kind not in (b"max", b"min"):
        raise _bad("offset key: kind", 6 + t, '"max" or "min"', repr(bytes(kind)), "magic")
    _ctrl(data, 9 + t, "offset key")
    (queue_id,) = _INT.unpack_from(data, 10 + t)
    return OffsetKey(topic, kind.decode("ascii"), queue_id)


def encode_offset_value(value: OffsetValue) -> bytes:
    return _OFFSET_VALUE.pack(value.commitlog_offset, value.queue_offset)


def decode_offset_value(data: bytes) -> OffsetValue:
    if len(data) != OFFSET_VALUE_SIZE:
        raise _bad("offset value length", 0, f"{OFFSET_VALUE_SIZE} bytes", str(len(data)))
    return OffsetValue(*_OFFSET_VALUE.unpack(data))


def is_checkpoint_key(key: OffsetKey) -> bool:
    return key.topic == CHECKPOINT_TOPIC


def encode_checkpoint_value(max_physical_offset: int) -> bytes:
    return _LONG.pack(max_physical_offset)


def decode_checkpoint_value(data: bytes) -> int:
    """The CommitLog offset dispatch reached (``getMaxPhyOffset``)."""
    if len(data) != CHECKPOINT_VALUE_SIZE:
        raise _bad("checkpoint value length", 0, f"{CHECKPOINT_VALUE_SIZE} bytes", str(len(data)))
    return int(_LONG.unpack(data)[0])


def key_hex(data: bytes) -> str:
    """A key as it is named in findings and errors (its bytes in hex)."""
    return data.hex()
