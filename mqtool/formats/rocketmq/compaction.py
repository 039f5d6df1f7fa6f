"""RocketMQ's compaction store (``compaction/``, 5.x compaction topics): what differs from the
CommitLog and the BatchConsumeQueue, whose decoders it reuses.

A topic whose ``cleanup.policy`` attribute is ``COMPACTION`` (``CleanupPolicyUtils``) has each of
its messages copied, as the CommitLog holds it, into a log of its own queue
(``CompactionService`` -> ``CompactionStore.doDispatch`` -> ``CompactionLog.asyncPutMessage``).
Layout under the store root (``CompactionStore``, ``CompactionLog``, ``CompactionPositionMgr``;
the same in every release from 5.0.0 to 5.3.3)::

    compaction/
      position-checkpoint                  JSON {"queueOffsetMap": {"<topic>_<queueId>": offset}}
                                           (``CompactionPositionMgr``, a ``ConfigManager``: a
                                           ``.bak`` beside it): the last queue offset compacted
      compactionLog/<topic>/<queueId>/<offset>   the compaction log (``MappedFileQueue``)
      compactionLog/<topic>/<queueId>/compacting/ , replicating/   a compaction or a pull from the
                                           master in progress (``TopicPartitionLog`` subfolders)
      compactionCq/<topic>/<queueId>/<offset>    its sparse consume queue (``SparseConsumeQueue``)

**The compaction log** holds CommitLog records byte for byte (``MessageDecoder``'s layout:
``formats.rocketmq.commitlog``) with one field rewritten: PHYSICALOFFSET is the record's offset in
the compaction log (file base + position; ``CompactionAppendMessageCallback.doAppend``), not its
CommitLog offset; QUEUEOFFSET stays the message's offset in its queue, so after a compaction the
offsets of a log have gaps.  A file ends as a CommitLog file does: a BLANK (TOTALSIZE = the bytes
left, magic ``0xCBD43194``) when the next record does not fit, else the zeros of its mapping (the
end a compaction leaves, ``putEndMessage``, writes no byte).  Files are named by their offset
and sized ``getCompactionLogSize``: a whole number of sparse-CQ files (at least 5) near
``compactionMappedFileSize`` (default 100 MiB: 104,857,460 bytes).

**The sparse consume queue** holds one 46-byte BatchConsumeQueue unit per record
(``BatchConsumeQueue.putBatchMessagePositionInfo``, ``formats.rocketmq.consume_queue.BcqUnit``)::

    pos  size  field
    0    8     offset           the record's compaction-log offset
    8    4     size             its TOTALSIZE
    12   8     tagsCode         its TAGS' hash (``tagsString2tagsCode``)
    20   8     storeTime        its STORETIMESTAMP
    28   8     msgBaseOffset    its QUEUEOFFSET
    36   2     batchSize        1
    38   4     compactedOffset  -1 (``INVALID_POS``)
    42   4     reserved         0

Unlike a ConsumeQueue its files are not named by queue offset: each is named as the compaction
log file whose records it indexes (``TopicPartitionLog.roll`` creates both with one offset) and
``TopicPartitionLog.sanityCheck`` refuses to load a queue whose two file lists differ.  A file
ends in an end unit (offset -1, size 0, batchSize 0: ``SparseConsumeQueue.putEndPositionInfo``)
or in zeros; file size ``compactionCqMappedFileSize`` (default 10 MiB) rounded down to whole units.
At load ``SparseConsumeQueue.recover`` keeps the units up to the first invalid one, and
``TopicPartitionLog.recover`` cuts the compaction log where the last unit's record ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mqtool.errors import CorruptDataError
from mqtool.formats.rocketmq.config import parse_fastjson
from mqtool.formats.rocketmq.consume_queue import BCQ_INVALID_POS, BCQ_UNIT_SIZE, BcqUnit

#: ``CompactionStore.COMPACTION_DIR``, ``COMPACTION_LOG_DIR``, ``COMPACTION_CQ_DIR``
COMPACTION_DIR = "compaction"
COMPACTION_LOG_DIR = "compactionLog"
COMPACTION_CQ_DIR = "compactionCq"
#: ``CompactionPositionMgr.CHECKPOINT_FILE``
POSITION_FILE = "position-checkpoint"
#: ``CompactionLog.COMPACTING_SUB_FOLDER``, ``REPLICATING_SUB_FOLDER``
IN_PROGRESS_DIRS = ("compacting", "replicating")

#: ``MessageStoreConfig.compactionMappedFileSize``, ``compactionCqMappedFileSize``
DEFAULT_LOG_MAPPED_FILE_SIZE = 100 * 1024 * 1024
DEFAULT_CQ_MAPPED_FILE_SIZE = 10 * 1024 * 1024
#: ``CompactionLog.getCompactionLogSize`` keeps at least this many sparse-CQ files per log file
_MIN_CQ_FILES_PER_LOG_FILE = 5

#: the units ``putBatchMessagePositionInfo`` writes: one record per unit, no compacted offset
UNIT_BATCH_SIZE = 1
#: ``SparseConsumeQueue.putEndPositionInfo``: the unit that closes a full file
END_UNIT = BcqUnit(-1, 0, 0, 0, 0, 0, BCQ_INVALID_POS, 0)


def cq_file_size(mapped_file_size: int = DEFAULT_CQ_MAPPED_FILE_SIZE) -> int:
    """``CompactionLog``: the sparse-CQ file size, ``compactionCqMappedFileSize`` in whole units."""
    if mapped_file_size < BCQ_UNIT_SIZE:
        raise ValueError(f"expected a compactionCqMappedFileSize of at least one {BCQ_UNIT_SIZE}-byte unit, found {mapped_file_size}")
    return mapped_file_size // BCQ_UNIT_SIZE * BCQ_UNIT_SIZE


def log_file_size(cq_size: int, log_mapped_file_size: int = DEFAULT_LOG_MAPPED_FILE_SIZE) -> int:
    """``CompactionLog.getCompactionLogSize``: a whole number of sparse-CQ file sizes near
    ``compactionMappedFileSize``, at least five."""
    n, m = divmod(log_mapped_file_size, cq_size)
    if n < _MIN_CQ_FILES_PER_LOG_FILE:
        return cq_size * _MIN_CQ_FILES_PER_LOG_FILE
    if 0 < m < cq_size >> 1:
        return n * cq_size
    return (n + 1) * cq_size


DEFAULT_CQ_FILE_SIZE = cq_file_size()
DEFAULT_LOG_FILE_SIZE = log_file_size(DEFAULT_CQ_FILE_SIZE)


def is_end_unit(unit: BcqUnit) -> bool:
    """The unit ``putEndPositionInfo`` writes (offset -1, size 0, batchSize 0)."""
    return unit.commitlog_offset == -1 and unit.size == 0 and unit.batch_size == 0


def unit_for(offset: int, size: int, tags_code: int, store_time: int, queue_offset: int) -> BcqUnit:
    """The unit ``CompactionAppendMessageCallback`` writes for a record at compaction-log ``offset``."""
    return BcqUnit(offset, size, tags_code, store_time, queue_offset, UNIT_BATCH_SIZE, BCQ_INVALID_POS, 0)


@dataclass(frozen=True)
class QueuePosition:
    """One entry of ``position-checkpoint``: the last queue offset compacted in a queue."""

    key: str
    topic: str
    queue_id: int
    offset: int


def split_queue_key(key: str) -> tuple[str, int] | None:
    """``<topic>_<queueId>`` (``CompactionPositionMgr.setOffset``) as (topic, queue id); None when
    it does not end in ``_`` and a number (topics may hold ``_``: the last one splits)."""
    topic, sep, qid = key.rpartition("_")
    if not sep or not topic or not qid.isdigit():
        return None
    return topic, int(qid)


def parse_position_checkpoint(source: str | bytes | bytearray | memoryview | Mapping[Any, Any]) -> list[QueuePosition]:
    """``compaction/position-checkpoint`` as its entries (``CorruptDataError`` naming the key for
    an entry that is not ``<topic>_<queueId>`` with an integer offset)."""
    doc = source if isinstance(source, Mapping) else parse_fastjson(source)
    if not isinstance(doc, Mapping):
        raise CorruptDataError(expected="a JSON object at the top level", found=type(doc).__name__)
    raw = doc.get("queueOffsetMap")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        raise CorruptDataError(expected='an object "queueOffsetMap"', found=type(raw).__name__)
    out: list[QueuePosition] = []
    for key, value in raw.items():
        split = split_queue_key(str(key))
        if split is None:
            raise CorruptDataError(expected="queueOffsetMap keys of the form <topic>_<queueId>", found=repr(key))
        if isinstance(value, bool) or not isinstance(value, int):
            raise CorruptDataError(expected=f"an integer offset at queueOffsetMap[{key!r}]", found=type(value).__name__)
        out.append(QueuePosition(str(key), split[0], split[1], value))
    return out


__all__ = [
    "COMPACTION_DIR",
    "COMPACTION_LOG_DIR",
    "COMPACTION_CQ_DIR",
    "POSITION_FILE",
    "IN_PROGRESS_DIRS",
    "DEFAULT_LOG_MAPPED_FILE_SIZE",
    "DEFAULT_CQ_MAPPED_FILE_SIZE",
    "DEFAULT_CQ_FILE_SIZE",
    "DEFAULT_LOG_FILE_SIZE",
    "UNIT_BATCH_SIZE",
    "END_UNIT",
    "cq_file_size",
    "log_file_size",
    "is_end_unit",
    "unit_for",
    "QueuePosition",
    "split_queue_key",
    "parse_position_checkpoint",
]
