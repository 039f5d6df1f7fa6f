"""The units of RocketMQ's derived files as numpy record arrays: ConsumeQueue units (``ConsumeQueue``:
commitlog offset, size, tagsCode), IndexFile entries and hash slots (``IndexFile``), and the
``position << 32 | key hash`` table of a CommitLog file's records that the IndexFile entries are
checked against (``IndexService.buildIndex``'s keys, from :mod:`mqtool.formats.rocketmq.columns`)."""

from __future__ import annotations

import numpy as np

from mqtool.formats._binary import Buffer
from mqtool.formats.rocketmq.columns import CommitLogColumns

CQ_UNIT_DTYPE = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags_code", ">i8")])
#: An IndexFile entry: key hash, commitlog offset, time diff, previous entry.
INDEX_ENTRY_DTYPE = np.dtype([("key_hash", ">i4"), ("phy_offset", ">i8"), ("time_diff", ">i4"), ("prev_index", ">i4")])


def cq_units(buf: Buffer) -> np.ndarray:
    """The whole 20-byte ConsumeQueue units of ``buf`` as a structured array (no copy)."""
    return np.frombuffer(buf, dtype=CQ_UNIT_DTYPE, count=len(buf) // CQ_UNIT_DTYPE.itemsize)


def index_entries(buf: Buffer) -> np.ndarray:
    """The whole 20-byte IndexFile entries of ``buf`` as a structured array (no copy)."""
    return np.frombuffer(buf, dtype=INDEX_ENTRY_DTYPE, count=len(buf) // INDEX_ENTRY_DTYPE.itemsize)


def record_key_table(columns: CommitLogColumns) -> np.ndarray:
    """Sorted ``position << 32 | key hash`` (uint64) of every indexed key of the records: an
    IndexFile entry is right about a record of this file exactly when its pair is in here."""
    pairs = (columns.position[columns.key_record].astype(np.uint64) << np.uint64(32)) | columns.key_hash.astype(np.uint64)
    return np.sort(pairs)


def index_slots(buf: Buffer, hash_slot_num: int) -> np.ndarray:
    """The hash slot table of an IndexFile (big-endian int32 entry numbers, no copy)."""
    return np.frombuffer(buf, dtype=">i4", count=hash_slot_num, offset=40)


# --- the other fields of a row, for the records of a walk (the Spark ``rocketmq_commitlog`` source) --
