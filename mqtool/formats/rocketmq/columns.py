"""The fast path over CommitLog bytes: healthy records framed straight into compact columns.

``walk_columns`` reads the message records of one buffer (a CommitLog file's data) with two
short Python loops -- one frames the records by TOTALSIZE and MAGICCODE, one computes the masked
body CRC (``BODYCRC``) of each -- and checks everything else for all the records at once with
numpy: the fixed header, PHYSICALOFFSET against the record's real address, TOPIC and PROPERTIES
inside TOTALSIZE, properties in the broker's canonical form.  It keeps flat arrays of what the
cross-file checks need: position, TOTALSIZE, queue id, QUEUEOFFSET, STORETIMESTAMP, SYSFLAG,
topic number, the ConsumeQueue ``tagsCode`` the broker dispatches
(``CommitLog.checkMessageAndReturnSize`` / ``MessageExtBrokerInner.tagsString2tagsCode``, the
delivery time for ``SCHEDULE_TOPIC_XXXX``), and the ``IndexFile`` key hashes of the record
(``IndexService.buildIndex``: ``topic#UNIQ_KEY`` and ``topic#key`` for each token of ``KEYS``).
QUEUEOFFSET continuity per topic/queue is checked over the columns.

It is deliberately strict: the walk stops, with ``stop.kind == "anomaly"``, at the first record
that is anything but a healthy, ordinary record -- a broken frame or CRC, a PHYSICALOFFSET that
is not the record's address, properties the broker would drop or that carry the ``__CRC32#``
record CRC, bytes that are not UTF-8 (a torn write's zeros break the properties' frame).  The
caller then runs the precise decoders (:mod:`mqtool.formats.rocketmq.commitlog`) over the file
to name the exact finding; on healthy bytes the two paths agree by construction, and tests hold
them to it.

Other stops are the clean ends of ``RecordWalker``: ``zeros`` (a zero header: pre-allocated
tail), ``blank`` (an END_OF_FILE record, ``length`` its TOTALSIZE) and ``eof`` (the buffer ends
right after a record).

:func:`record_fields` reads the other fields of chosen records in bulk (the Spark source's
rows, ``dump``'s JSON lines).
"""

from __future__ import annotations

import struct
import zlib
from array import array
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mqtool.formats import data_end
from mqtool.formats.column_ops import Spans, gather_clipped, joined, offsets_of
from mqtool.formats.rocketmq.commitlog import (
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK,
    SYSFLAG_TRANSACTION_PREPARED,
    SYSFLAG_TRANSACTION_ROLLBACK,
)
from mqtool.formats.rocketmq.hashing import SCHEDULE_TOPIC, delivery_tags_code, index_key_hashes, java_hashes, java_string_hash, tags_code
from mqtool.formats.rocketmq.properties import CRC32

_HEAD8 = struct.Struct(">iI")
_HOST_BITS = SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6
StopKind = Literal["zeros", "blank", "eof", "partial", "anomaly"]

#: Where and why the fast walk stopped (``formats.data_end.DataEnd``, the one type for where data
#: ends, with the column walk's kinds): ``position`` in the buffer; ``length`` is the BLANK
#: record's TOTALSIZE (``blank``) or the bytes a record header claims past the data (``partial``:
#: the caller decides whether more data follows).
ColumnDataEnd = data_end.DataEnd[StopKind]


@dataclass
class QueueRun:
    """The QUEUEOFFSETs one topic/queue has in the walked records: ``first`` .. ``last``, one
    record each, ``count`` records, the first at buffer position ``first_position``."""

    first: int
    last: int
    count: int
    first_position: int


@dataclass
class CommitLogColumns:
    """The records of one walk as numpy columns, one element per record."""

    position: np.ndarray  # int64, position in the buffer
    size: np.ndarray  # int32, TOTALSIZE
    queue_id: np.ndarray  # int32
    queue_offset: np.ndarray  # int64
    store_timestamp: np.ndarray  # int64
    sys_flag: np.ndarray  # int32
    topic: np.ndarray  # int32, index into ``topics``
    tags_code: np.ndarray  # int64, the ConsumeQueue tagsCode the broker dispatches
    #: Topic names, indexed by the ``topic`` column.
    topics: list[str]
    #: ``IndexFile`` keys: the record number of each key, and the key's hash.
    key_record: np.ndarray  # int32
    key_hash: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.position)

    def dispatched(self) -> np.ndarray:
        """Records the broker dispatches to a ConsumeQueue (not prepared or rolled back)."""
        txn = self.sys_flag & SYSFLAG_TRANSACTION_MASK
        return np.asarray((txn != SYSFLAG_TRANSACTION_PREPARED) & (txn != SYSFLAG_TRANSACTION_ROLLBACK), dtype=bool)

    def queue_runs(self) -> dict[tuple[str, int], QueueRun] | None:
        """The run of QUEUEOFFSETs of every dispatched topic/queue (in the order the queues first
        appear), or None when some queue's offsets do not go up by one record after record."""
        keep = np.flatnonzero(self.dispatched())
        if not len(keep):
            return {}
        topic = self.topic[keep].astype(np.int64)
        qid = self.queue_id[keep].astype(np.int64)
        order = np.lexsort((keep, qid, topic))  # stable: by queue, then by position
        rows = keep[order]
        t, q, off = topic[order], qid[order], self.queue_offset[rows]
        new = np.ones(len(rows), dtype=bool)
        new[1:] = (t[1:] != t[:-1]) | (q[1:] != q[:-1])
        if np.any(~new[1:] & (off[1:] != off[:-1] + 1)):
            return None
        starts = np.flatnonzero(new)
        stops = np.append(starts[1:], len(rows))
        runs = [((self.topics[int(t[a])], int(q[a])), QueueRun(int(off[a]), int(off[b - 1]), int(b - a), int(self.position[rows[a]]))) for a, b in zip(starts, stops)]
        # in the order the queues first appear, as a record-by-record walk meets them
        return dict(sorted(runs, key=lambda item: item[1].first_position))


@dataclass
class ColumnWalk:
    """The outcome of :func:`walk_columns`: the columns of every record before ``stop``."""

    columns: CommitLogColumns
    stop: ColumnDataEnd
    #: the walk's PROPERTIES, already split into pairs: :func:`record_fields` takes them
    #: (``properties=``) instead of splitting them again
    properties: Properties | None = None

    @property
    def max_store_timestamp(self) -> int:
        return int(self.columns.store_timestamp.max()) if len(self.columns) else 0

    @property
    def last_store_timestamp(self) -> int:
        return int(self.columns.store_timestamp[-1]) if len(self.columns) else 0


#: The fixed part of a record whose two hosts are IPv4 (the common case), as numpy reads it; a
#: record with an IPv6 host has its STORETIMESTAMP and BODYLEN further on (read apart).
_HEAD = np.dtype(
    [
        ("total", ">i4"), ("magic", ">u4"), ("body_crc", ">u4"), ("queue_id", ">i4"), ("flag", ">i4"),
        ("queue_offset", ">i8"), ("physical_offset", ">i8"), ("sys_flag", ">i4"), ("born_timestamp", ">i8"),
        ("born_host", "V8"), ("store_timestamp", ">i8"), ("store_host", "V8"), ("reconsume_times", ">i4"),
        ("prepared_transaction_offset", ">i8"), ("body_len", ">i4"),
    ]
)  # fmt: skip
_MIN_FIXED = _HEAD.itemsize
_MASK32 = np.uint64(0xFFFFFFFF)
_INT_MIN = -(1 << 31)
CRC32_NAME = CRC32.encode()
#: 31**i mod 2**32 for i < len: Java ``String.hashCode`` weights (grown on demand).
_POW31 = np.ones(1, dtype=np.uint64)


def _pow31(n: int) -> np.ndarray:
    global _POW31
    if len(_POW31) < n:
        # a product that wraps mod 2**64 is still right mod 2**32
        _POW31 = np.concatenate((np.ones(1, dtype=np.uint64), np.cumprod(np.full(n - 1, 31, dtype=np.uint64)))) & _MASK32
    return _POW31


def _first_false(ok: np.ndarray) -> int:
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if len(bad) else len(ok)


def _signed(h: np.ndarray) -> np.ndarray:
    """Unsigned 32-bit values as Java's signed ints."""
    return h.astype(np.uint32).view(np.int32).astype(np.int64)


def _frame(buf: bytes, start: int) -> tuple[array[int], ColumnDataEnd]:
    """Frame records by TOTALSIZE and MAGICCODE from ``start``: their positions, and the stop."""
    size = len(buf)
    pos = start
    head8 = _HEAD8.unpack_from
    magic_v1, magic_v2, least = MAGIC_V1, MAGIC_V2, _MIN_FIXED
    positions = array("q")
    append = positions.append
    while True:
        remaining = size - pos
        if remaining < 8:
            return positions, ColumnDataEnd("eof", pos) if not remaining else ColumnDataEnd("zeros" if not any(buf[pos:size]) else "anomaly", pos)
        total, magic = head8(buf, pos)
        if magic != magic_v1 and magic != magic_v2:
            if magic == BLANK_MAGIC:
                return positions, ColumnDataEnd("blank", pos, total)
            return positions, ColumnDataEnd("zeros" if total == 0 and magic == 0 else "anomaly", pos)
        if total > remaining:
            return positions, ColumnDataEnd("partial", pos, total)
        if total < least:
            return positions, ColumnDataEnd("anomaly", pos)
        append(pos)
        pos += total


def walk_columns(buf: bytes, base: int, *, start: int = 0, key_hashes: bool = True, tags_codes: bool = True) -> ColumnWalk:
    """Frame the records of ``buf`` from ``start`` into columns until a clean end or the first
    anomaly.  ``base`` is the commitlog offset of ``buf[0]`` (PHYSICALOFFSET must equal
    ``base + position``).  ``key_hashes=False`` leaves the ``key_record`` and ``key_hash``
    columns empty, ``tags_codes=False`` the ``tags_code`` column (for a reader that neither checks
    IndexFile entries or ConsumeQueue units against the records nor selects records by key or
    tag: ``dump``, the Spark source without ``withKeyHashes``); the walk, its checks and its stop
    are the same.

    One Python loop frames the records (TOTALSIZE, MAGICCODE) and a second computes their body
    CRCs (``zlib.crc32`` over views of the buffer); every other check and field is computed for
    all the records at once with numpy, and the walk keeps the records before the first one any
    check refuses.  Queue offset continuity is checked over the columns
    (:meth:`CommitLogColumns.queue_runs`).  ``key_hashes=False`` leaves ``key_record`` and
    ``key_hash`` empty (a reader that does not need them; the walk's verdict is the same)."""
    positions, stop = _frame(buf, start)
    data = np.frombuffer(buf, dtype=np.uint8)
    at = np.frombuffer(positions, dtype=np.int64) if len(positions) else np.zeros(0, dtype=np.int64)
    head = data[at[:, None] + np.arange(_MIN_FIXED)].view(_HEAD).ravel()
    # the frame of each record: fixed part, body, TOPIC, PROPERTIES within TOTALSIZE
    total = head["total"].astype(np.int64)
    end = at + total
    sys_flag = head["sys_flag"].astype(np.int32)
    body_len = head["body_len"].astype(np.int64)
    store_timestamp = head["store_timestamp"].astype(np.int64)
    fixed = np.full(len(at), _MIN_FIXED, dtype=np.int64)
    v6 = np.flatnonzero(sys_flag & _HOST_BITS)
    if len(v6):
        born_v6 = (sys_flag[v6] & SYSFLAG_BORNHOST_V6) != 0
        fixed[v6] += 12 * born_v6 + 12 * ((sys_flag[v6] & SYSFLAG_STOREHOST_V6) != 0)
        body_len[v6] = gather_clipped(data, at[v6] + fixed[v6] - 4, ">i4")
        store_timestamp[v6] = gather_clipped(data, at[v6] + 48 + np.where(born_v6, 20, 8), ">i8")
    body_at = at + fixed
    body_end = body_at + body_len
    v2 = head["magic"] == MAGIC_V2
    # TOPICLEN: a short (v2) or a signed byte (v1: above 127 it is negative), the high byte of that short
    topic_len = gather_clipped(data, body_end, ">i2").astype(np.int64)
    topic_len = np.where(v2, topic_len, topic_len >> 8)
    topic_at = body_end + 1 + v2
    props_at = topic_at + topic_len + 2
    ok = (
        (total >= fixed)
        & (head["physical_offset"] == base + at)
        & (body_len >= 0)
        & (body_end + 3 <= end)
        & (topic_len >= 0)
        & (props_at <= end)
        & (gather_clipped(data, props_at - 2, ">i2").astype(np.int64) == end - props_at)
        # a last byte of zero is how a torn write looks (``torn_record_tail``): the precise path judges it
        & (data[np.clip(end - 1, 0, max(len(data) - 1, 0))] != 0)
    )
    count = _first_false(ok)
    # BODYCRC: the masked CRC32 of the body (0 for an empty body)
    view = memoryview(buf)
    crcs = np.fromiter(map(zlib.crc32, map(view.__getitem__, map(slice, body_at[:count].tolist(), body_end[:count].tolist()))), dtype=np.int64, count=count)
    count = _first_false((crcs & 0x7FFFFFFF) == head["body_crc"][:count])
    topic_id, topics, count = _topics(buf, topic_at[:count], topic_len[:count])
    props = Properties(buf, props_at[:count], end[:count])
    count = min(count, props.first_bad())
    props.keep(count)
    at, topic_id, store_timestamp = at[:count], topic_id[:count], store_timestamp[:count]
    topics = topics[: int(topic_id.max()) + 1] if count else []
    if key_hashes:
        key_record, key_hash = props.key_hashes(topics, topic_id)
    else:
        key_record, key_hash = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
    tags_code = props.tags_codes(topics, topic_id, store_timestamp) if tags_codes else np.zeros(0, dtype=np.int64)
    columns = CommitLogColumns(
        position=at.copy(),
        size=total[:count].astype(np.int32),
        queue_id=head["queue_id"][:count].astype(np.int32),
        queue_offset=head["queue_offset"][:count].astype(np.int64),
        store_timestamp=store_timestamp,
        sys_flag=sys_flag[:count],
        topic=topic_id.astype(np.int32),
        tags_code=tags_code,
        topics=topics,
        key_record=key_record,
        key_hash=key_hash,
    )
    if count < len(positions):
        stop = ColumnDataEnd("anomaly", int(positions[count]))
    return ColumnWalk(columns, stop, props)


def _topics(buf: bytes, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, list[str], int]:
    """A number for each record's TOPIC (in the order topics first appear), the topics' names,
    and how many records come before the first whose TOPIC is not UTF-8."""
    count = len(starts)
    if not count:
        return np.zeros(0, dtype=np.int64), [], 0
    width = int(lengths.max()) + 1
    if width > 256:
        return _topics_exactly(buf, starts, lengths)
    # one row per record: the length, then the topic zero-padded: alike rows, alike topics
    data = np.frombuffer(buf, dtype=np.uint8)
    rows = np.empty((count, width), dtype=np.uint8)
    rows[:, 0] = lengths
    step = max(1, (1 << 20) // width)  # rows at a time: bounded index arrays
    for a in range(0, count, step):
        block = rows[a : a + step, 1:]
        block[:] = data[np.minimum(starts[a : a + step, None] + np.arange(width - 1), len(data) - 1)]
        block[np.arange(width - 1) >= lengths[a : a + step, None]] = 0
    _, first, inverse = np.unique(rows.view(f"V{width}").ravel(), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), dtype=np.int64)
    rank[order] = np.arange(len(first))
    names: list[str] = []
    for j in order.tolist():
        r = int(first[j])
        try:
            names.append(bytes(rows[r, 1 : 1 + int(lengths[r])]).decode("utf-8"))
        except UnicodeDecodeError:
            count = r
            break
    return rank[inverse.ravel()], names, count


def _topics_exactly(buf: bytes, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, list[str], int]:
    """``_topics`` record by record (for topics too long to compare as rows)."""
    ids: dict[bytes, int] = {}
    names: list[str] = []
    out = np.zeros(len(starts), dtype=np.int64)
    for i, (a, n) in enumerate(zip(starts.tolist(), lengths.tolist())):
        raw = buf[a : a + n]
        number = ids.get(raw)
        if number is None:
            try:
                names.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                return out, names, i
            number = ids[raw] = len(names) - 1
        out[i] = number
    return out, names, len(starts)


class Properties:
    """The PROPERTIES of the records of a walk, packed end to end (``chars``; record ``i``'s are
    ``chars[offsets[i]:offsets[i + 1]]``), checked and split into name/value pairs in bulk.

    The broker writes ``name 0x01 value 0x02`` repeated (``MessageDecoder.messageProperties2String``),
    names and values non-empty and free of separators: anything else holds a segment the broker
    drops, and a ``__CRC32#`` pair needs its own check (the precise path does both).  A repeated
    name counts with its last value, as the broker's map keeps it."""

    def __init__(self, buf: bytes, starts: np.ndarray, stops: np.ndarray) -> None:
        self.lengths = stops - starts
        self.offsets = offsets_of(self.lengths)
        self.chars = joined(buf, starts, stops)
        self.sep = np.flatnonzero((self.chars == 1) | (self.chars == 2))
        self.sep_record = np.searchsorted(self.offsets, self.sep, side="right") - 1
        empty = np.zeros(0, dtype=np.int64)
        self.pair_record, self.name_at, self.name_len, self.value_at, self.value_len = empty, empty, empty, empty, empty

    def first_bad(self) -> int:
        """The number of the first record whose properties are not the broker's canonical form,
        are not UTF-8 or hold ``__CRC32#`` (the number of records when there is none); the pairs
        of the records before it are split."""
        chars, sep, rec, offsets = self.chars, self.sep, self.sep_record, self.offsets
        count = len(self.lengths)
        bad = np.zeros(count, dtype=bool)
        kind = chars[sep]
        first = np.searchsorted(sep, offsets[:-1])
        ordinal = np.arange(len(sep)) - first[rec]
        run_from = np.where(ordinal == 0, offsets[rec], np.concatenate(([0], sep[:-1] + 1)))
        # separators alternate 0x01, 0x02 from the first, each after a non-empty name or value
        bad[rec[(kind != np.where(ordinal & 1, 2, 1)) | (sep == run_from)]] = True
        full = np.flatnonzero(self.lengths > 0)
        bad[full[chars[offsets[full + 1] - 1] != 2]] = True  # and the last byte closes a value
        count = _first_false(~bad)
        if len(chars) and int(chars.max()) >= 0x80:
            wide = full[full < count]
            padded = np.append(chars, np.uint8(0))
            bounds = np.stack((offsets[wide], offsets[wide + 1]), axis=1).ravel()
            for r in wide[np.maximum.reduceat(padded, bounds)[::2] >= 0x80].tolist():
                try:
                    bytes(chars[offsets[r] : offsets[r + 1]]).decode("utf-8")
                except UnicodeDecodeError:
                    count = r
                    break
        # the pairs of the well-formed records: name from the run's start to 0x01, value to 0x02
        keep = rec < count
        ones, twos = sep[keep & (kind == 1)], sep[keep & (kind == 2)]
        self.pair_record = rec[keep & (kind == 2)]
        opens = np.ones(len(twos), dtype=bool)
        opens[1:] = self.pair_record[1:] != self.pair_record[:-1]
        self.name_at = np.where(opens, offsets[self.pair_record], np.concatenate(([0], twos[:-1] + 1)))
        self.name_len = ones - self.name_at
        self.value_at, self.value_len = ones + 1, twos - ones - 1
        crc = self._named(CRC32_NAME)
        return min(count, int(self.pair_record[crc[0]])) if len(crc) else count

    def keep(self, count: int) -> None:
        """Forget the pairs of records ``count`` and after."""
        n = int(np.searchsorted(self.pair_record, count))
        self.pair_record, self.name_at, self.name_len = self.pair_record[:n], self.name_at[:n], self.name_len[:n]
        self.value_at, self.value_len = self.value_at[:n], self.value_len[:n]

    def pairs_of(self, rows: np.ndarray) -> tuple[Spans, Spans, np.ndarray, np.ndarray]:
        """What :func:`_property_pairs` gives for records ``rows`` (numbers, ascending, all before
        the walk's stop), from the pairs this walk has split already."""
        number = np.full(len(self.lengths), -1, dtype=np.int64)
        number[rows] = np.arange(len(rows))
        record_of_pair = number[self.pair_record]
        name_at, name_len, value_at, value_len = self.name_at, self.name_len, self.value_at, self.value_len
        if len(record_of_pair) and int(record_of_pair.min()) < 0:
            chosen = record_of_pair >= 0
            record_of_pair = record_of_pair[chosen]
            name_at, name_len, value_at, value_len = name_at[chosen], name_len[chosen], value_at[chosen], value_len[chosen]
        pair_offsets = offsets_of(np.bincount(record_of_pair, minlength=len(rows)))
        return self.packed(name_at, name_len), self.packed(value_at, value_len), pair_offsets.astype(np.int32), record_of_pair

    def packed(self, at: np.ndarray, length: np.ndarray) -> Spans:
        """The spans ``[at, at + length)`` of ``chars`` packed end to end."""
        offsets = offsets_of(length)
        index = np.repeat(at - offsets[:-1], length) + np.arange(offsets[-1], dtype=np.int64)
        return Spans(self.chars[index], offsets.astype(np.int32))

    def _named(self, name: bytes) -> np.ndarray:
        pairs = np.flatnonzero(self.name_len == len(name))
        for k, byte in enumerate(name):
            pairs = pairs[self.chars[self.name_at[pairs] + k] == byte]
        return pairs

    def _last_named(self, name: bytes) -> tuple[np.ndarray, np.ndarray]:
        """The records with a property ``name`` and the pair holding its (last) value."""
        pairs = self._named(name)
        records = self.pair_record[pairs]
        last = np.ones(len(pairs), dtype=bool)
        last[:-1] = records[1:] != records[:-1]
        return records[last], pairs[last]

    def _text(self, at: int, length: int) -> str:
        return bytes(self.chars[at : at + length]).decode("utf-8")

    def tags_codes(self, topics: list[str], topic_id: np.ndarray, store_timestamp: np.ndarray) -> np.ndarray:
        """The ConsumeQueue tagsCode the broker dispatches for each record: ``TAGS.hashCode()``
        (``MessageExtBrokerInner.tagsString2tagsCode``), or the delivery time of a delayed
        message in ``SCHEDULE_TOPIC_XXXX`` (``CommitLog.checkMessageAndReturnSize``)."""
        out = np.zeros(len(topic_id), dtype=np.int64)
        records, pairs = self._last_named(b"TAGS")
        at, length = self.value_at[pairs], self.value_len[pairs]
        h, ascii_ = java_hashes(self.chars, at, length)
        out[records] = _signed(h)
        for r, a, n in zip(records[~ascii_].tolist(), at[~ascii_].tolist(), length[~ascii_].tolist()):
            out[r] = tags_code(self._text(a, n))
        if SCHEDULE_TOPIC in topics:
            scheduled = topics.index(SCHEDULE_TOPIC)
            records, pairs = self._last_named(b"DELAY")
            for r, p in zip(records.tolist(), pairs.tolist()):
                if topic_id[r] == scheduled:
                    out[r] = delivery_tags_code(int(store_timestamp[r]), self._text(int(self.value_at[p]), int(self.value_len[p])))
        return out

    def key_hashes(self, topics: list[str], topic_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``IndexFile`` keys of the records (``IndexService.buildIndex``: ``topic#UNIQ_KEY``
        and ``topic#key`` for each non-empty token of KEYS split on a space): the record of each,
        in record order (UNIQ_KEY first), and its hash (``IndexFile.indexKeyHashMethod``)."""
        uniq_records, uniq_pairs = self._last_named(b"UNIQ_KEY")
        keys_records, keys_pairs = self._last_named(b"KEYS")
        # the tokens of KEYS: runs of bytes other than a space
        lengths = self.value_len[keys_pairs]
        offsets = offsets_of(lengths)
        index = np.repeat(self.value_at[keys_pairs] - offsets[:-1], lengths) + np.arange(offsets[-1], dtype=np.int64)
        token = self.chars[index] != 0x20
        begins, ends = token.copy(), token.copy()
        begins[1:] &= ~token[:-1]
        ends[:-1] &= ~token[1:]
        begins[offsets[:-1]] = token[offsets[:-1]]  # values are never empty
        ends[offsets[1:] - 1] = token[offsets[1:] - 1]
        first, last = np.flatnonzero(begins), np.flatnonzero(ends)
        records = np.concatenate((uniq_records, keys_records[np.searchsorted(offsets, first, side="right") - 1]))
        at = np.concatenate((self.value_at[uniq_pairs], index[first]))
        length = np.concatenate((self.value_len[uniq_pairs], index[last] - index[first] + 1))
        order = np.argsort(records, kind="stable")
        records, at, length = records[order], at[order], length[order]
        if not len(records):
            return records.astype(np.int32), np.zeros(0, dtype=np.int64)
        # hashCode(topic + "#" + key) = hashCode(topic + "#") * 31**len(key) + hashCode(key)
        prefix = np.array([java_string_hash(t + "#") & 0xFFFFFFFF for t in topics], dtype=np.uint64)
        h, ascii_ = java_hashes(self.chars, at, length)
        h = _signed((prefix[topic_id[records]] * _pow31(int(length.max()) + 1)[length] + h) & _MASK32)
        h = np.where(h == _INT_MIN, 0, np.abs(h))
        for i in np.flatnonzero(~ascii_).tolist():
            key = topics[int(topic_id[records[i]])].encode("utf-8") + b"#" + bytes(self.chars[at[i] : at[i] + length[i]])
            h[i] = index_key_hashes([key])[0]
        return records.astype(np.int32), h


def concat_columns(parts: list[tuple[int, CommitLogColumns]]) -> CommitLogColumns:
    """One set of columns from the columns of consecutive chunks: ``(shift, columns)`` pairs,
    ``shift`` being the chunk's position (added to its positions); topic numbers are remapped to
    one ``topics`` list."""
    topics: list[str] = []
    number: dict[str, int] = {}
    topic_parts = []
    for _, cols in parts:
        remap = np.array([number.setdefault(t, len(number)) for t in cols.topics] or [0], dtype=np.int32)
        topic_parts.append(remap[cols.topic] if len(cols) else cols.topic)
    topics = list(number)
    counts = np.cumsum([0] + [len(cols) for _, cols in parts])

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(cols, name) for _, cols in parts]) if parts else np.zeros(0, dtype=np.int64)

    return CommitLogColumns(
        position=np.concatenate([cols.position + shift for shift, cols in parts]) if parts else np.zeros(0, dtype=np.int64),
        size=cat("size"),
        queue_id=cat("queue_id"),
        queue_offset=cat("queue_offset"),
        store_timestamp=cat("store_timestamp"),
        sys_flag=cat("sys_flag"),
        topic=np.concatenate(topic_parts) if parts else np.zeros(0, dtype=np.int32),
        tags_code=cat("tags_code"),
        topics=topics,
        key_record=np.concatenate([cols.key_record + int(counts[i]) for i, (_, cols) in enumerate(parts)]) if parts else np.zeros(0, dtype=np.int32),
        key_hash=cat("key_hash"),
    )


#: A ConsumeQueue unit as numpy reads it: commitlog offset, size, tagsCode (big-endian).
