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

from mqtool.formats._binary import Buffer
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


@dataclass(frozen=True)
class ColumnStop:
    """Where and why the fast walk stopped: ``position`` in the buffer; ``length`` is the BLANK
    record's TOTALSIZE (``blank``) or the bytes a record header claims past the data
    (``partial``: the caller decides whether more data follows)."""

    kind: StopKind
    position: int
    length: int = 0


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
    stop: ColumnStop
    #: the walk's PROPERTIES, already split into pairs: :func:`record_fields` takes them
    #: (``properties=``) instead of splitting them again
    properties: _Properties | None = None

    @property
    def max_store_timestamp(self) -> int:
        return int(self.columns.store_timestamp.max()) if len(self.columns) else 0

    @property
    def last_store_timestamp(self) -> int:
        return int(self.columns.store_timestamp[-1]) if len(self.columns) else 0


def _gather(data: np.ndarray, at: np.ndarray, dtype: str) -> np.ndarray:
    """The big-endian integers of ``dtype`` at byte positions ``at`` of ``data``."""
    width = np.dtype(dtype).itemsize
    if not len(at):
        return np.zeros(0, dtype=np.dtype(dtype).newbyteorder("="))
    raw = data[at[:, None] + np.arange(width)]
    return raw.view(dtype).ravel().astype(np.dtype(dtype).newbyteorder("="))


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


def _at(data: np.ndarray, at: np.ndarray, dtype: str) -> np.ndarray:
    """``_gather`` at positions clipped into ``data``: a position a damaged record computes may lie
    anywhere; what is read there only matters for records whose checks hold."""
    width = np.dtype(dtype).itemsize
    return _gather(data, np.clip(at, 0, max(len(data) - width, 0)), dtype)


def _joined(buf: bytes, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The byte ranges ``[starts[i], stops[i])`` of ``buf`` packed end to end (one copy of each)."""
    view = memoryview(buf)
    return np.frombuffer(b"".join(map(view.__getitem__, map(slice, starts.tolist(), stops.tolist()))), dtype=np.uint8)


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _first_false(ok: np.ndarray) -> int:
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if len(bad) else len(ok)


def _signed(h: np.ndarray) -> np.ndarray:
    """Unsigned 32-bit values as Java's signed ints."""
    return h.astype(np.uint32).view(np.int32).astype(np.int64)


def _frame(buf: bytes, start: int) -> tuple[array[int], ColumnStop]:
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
            return positions, ColumnStop("eof", pos) if not remaining else ColumnStop("zeros" if not any(buf[pos:size]) else "anomaly", pos)
        total, magic = head8(buf, pos)
        if magic != magic_v1 and magic != magic_v2:
            if magic == BLANK_MAGIC:
                return positions, ColumnStop("blank", pos, total)
            return positions, ColumnStop("zeros" if total == 0 and magic == 0 else "anomaly", pos)
        if total > remaining:
            return positions, ColumnStop("partial", pos, total)
        if total < least:
            return positions, ColumnStop("anomaly", pos)
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
        body_len[v6] = _at(data, at[v6] + fixed[v6] - 4, ">i4")
        store_timestamp[v6] = _at(data, at[v6] + 48 + np.where(born_v6, 20, 8), ">i8")
    body_at = at + fixed
    body_end = body_at + body_len
    v2 = head["magic"] == MAGIC_V2
    # TOPICLEN: a short (v2) or a signed byte (v1: above 127 it is negative), the high byte of that short
    topic_len = _at(data, body_end, ">i2").astype(np.int64)
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
        & (_at(data, props_at - 2, ">i2").astype(np.int64) == end - props_at)
        # a last byte of zero is how a torn write looks (``torn_record_tail``): the precise path judges it
        & (data[np.clip(end - 1, 0, max(len(data) - 1, 0))] != 0)
    )
    count = _first_false(ok)
    # BODYCRC: the masked CRC32 of the body (0 for an empty body)
    view = memoryview(buf)
    crcs = np.fromiter(map(zlib.crc32, map(view.__getitem__, map(slice, body_at[:count].tolist(), body_end[:count].tolist()))), dtype=np.int64, count=count)
    count = _first_false((crcs & 0x7FFFFFFF) == head["body_crc"][:count])
    topic_id, topics, count = _topics(buf, topic_at[:count], topic_len[:count])
    props = _Properties(buf, props_at[:count], end[:count])
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
        stop = ColumnStop("anomaly", int(positions[count]))
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


class _Properties:
    """The PROPERTIES of the records of a walk, packed end to end (``chars``; record ``i``'s are
    ``chars[offsets[i]:offsets[i + 1]]``), checked and split into name/value pairs in bulk.

    The broker writes ``name 0x01 value 0x02`` repeated (``MessageDecoder.messageProperties2String``),
    names and values non-empty and free of separators: anything else holds a segment the broker
    drops, and a ``__CRC32#`` pair needs its own check (the precise path does both).  A repeated
    name counts with its last value, as the broker's map keeps it."""

    def __init__(self, buf: bytes, starts: np.ndarray, stops: np.ndarray) -> None:
        self.lengths = stops - starts
        self.offsets = _offsets(self.lengths)
        self.chars = _joined(buf, starts, stops)
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
        pair_offsets = _offsets(np.bincount(record_of_pair, minlength=len(rows)))
        return self.packed(name_at, name_len), self.packed(value_at, value_len), pair_offsets.astype(np.int32), record_of_pair

    def packed(self, at: np.ndarray, length: np.ndarray) -> Spans:
        """The spans ``[at, at + length)`` of ``chars`` packed end to end."""
        offsets = _offsets(length)
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
        offsets = _offsets(lengths)
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


@dataclass
class Spans:
    """Variable-length values packed end to end: value ``i`` is ``values[offsets[i]:offsets[i + 1]]``."""

    values: np.ndarray  # uint8 (int32 for key hashes)
    offsets: np.ndarray  # int32, one more than there are values

    def __len__(self) -> int:
        return len(self.offsets) - 1


@dataclass
class RecordFields:
    """The fields of the selected records of a walk that :class:`CommitLogColumns` leaves out,
    read from the same buffer, one element per selected record (``MessageRecord``'s fields).

    Properties are name/value pairs in stored order (``pair_offsets``: the pairs of each record);
    ``tags_pair``, ``uniq_pair`` and ``keys_pair`` are the pair holding TAGS, UNIQ_KEY and KEYS
    (-1: none); ``key_tokens`` are the non-empty tokens of KEYS split on a space
    (``token_offsets``: the tokens of each record); ``msg_id`` is the offsetMsgId text."""

    magic: np.ndarray  # int64
    body_crc: np.ndarray  # int64
    flag: np.ndarray  # int32
    physical_offset: np.ndarray  # int64
    born_timestamp: np.ndarray  # int64
    reconsume_times: np.ndarray  # int32
    prepared_transaction_offset: np.ndarray  # int64
    body_size: np.ndarray  # int32
    body_at: np.ndarray  # int64, buffer position of the body
    body: Spans | None
    hosts: list[str]  # host texts (``ip:port``, ``[ipv6]:port``), indexed by the two host columns
    born_host: np.ndarray  # int32
    store_host: np.ndarray  # int32
    msg_id: Spans
    names: Spans
    values: Spans
    pair_offsets: np.ndarray  # int32
    tags_pair: np.ndarray  # int64
    uniq_pair: np.ndarray  # int64
    keys_pair: np.ndarray  # int64
    key_tokens: Spans
    token_offsets: np.ndarray  # int32
    props_at: np.ndarray  # int64, buffer positions of PROPERTIES ...
    props_end: np.ndarray  # int64, ... and of the record's end


def texts(buf: bytes, starts: np.ndarray, stops: np.ndarray) -> list[str]:
    """The UTF-8 text of each byte range ``[starts[i], stops[i])`` of ``buf`` (ranges the walk
    found to be UTF-8)."""
    return list(map(bytes.decode, map(buf.__getitem__, map(slice, starts.tolist(), stops.tolist()))))


def span_texts(spans: Spans, which: np.ndarray | None = None) -> list[str]:
    """The UTF-8 text of values ``which`` (all when None) of ``spans``."""
    offsets = spans.offsets.astype(np.int64)
    picked = np.arange(len(spans)) if which is None else which
    return texts(spans.values.tobytes(), offsets[picked], offsets[picked + 1])


def gather_spans(buf: bytes, starts: np.ndarray, lengths: np.ndarray) -> Spans:
    """The byte ranges ``[starts[i], starts[i] + lengths[i])`` of ``buf`` packed end to end."""
    return Spans(_joined(buf, starts, starts + lengths), _offsets(lengths).astype(np.int32))


def _bytes_equal(spans: Spans, literal: bytes) -> np.ndarray:
    """Which values of ``spans`` are exactly ``literal``."""
    starts, lengths = spans.offsets[:-1].astype(np.int64), np.diff(spans.offsets)
    same = lengths == len(literal)
    for k, byte in enumerate(literal):
        rows = np.flatnonzero(same)
        same[rows] = spans.values[starts[rows] + k] == byte
    return np.asarray(same, dtype=bool)


_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


def _hosts(data: np.ndarray, at: np.ndarray, v6: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The text of the host (IP and int port) at each position, as numbers into a list of texts."""
    import socket

    from mqtool.formats.rocketmq.commitlog import HostAddress

    if not len(at):
        return [], np.zeros(0, dtype=np.int32)
    raw = data[at[:, None] + np.arange(20)]
    raw[~v6, 8:] = 0
    keyed = np.concatenate([raw, v6[:, None].astype(np.uint8)], axis=1)
    key = np.ascontiguousarray(keyed).view("V21").ravel()
    if not v6.any():  # IPv4 only: the 8 bytes as one number sort alike, ten times faster
        _, first, number = np.unique(np.ascontiguousarray(raw[:, :8]).view(">u8").ravel(), return_index=True, return_inverse=True)
        unique = key[first]
    else:
        unique, number = np.unique(key, return_inverse=True)
    texts = []
    for key in unique:
        packed = bytes(key)
        width = 16 if packed[20] else 4
        ip = socket.inet_ntop(socket.AF_INET6 if packed[20] else socket.AF_INET, packed[:width])
        texts.append(str(HostAddress(ip, int.from_bytes(packed[width : width + 4], "big", signed=True))))
    return texts, number.astype(np.int32).ravel()


def _msg_ids(data: np.ndarray, store_at: np.ndarray, v6: np.ndarray, physical_at: np.ndarray) -> Spans:
    """offsetMsgId texts: store host IP and port, then PHYSICALOFFSET, in uppercase hex."""
    widths = np.where(v6, 56, 32)
    offsets = np.zeros(len(store_at) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    for flag, host in ((False, 8), (True, 20)):
        rows = np.flatnonzero(v6 == flag)
        if not len(rows):
            continue
        raw = np.concatenate([data[store_at[rows, None] + np.arange(host)], data[physical_at[rows, None] + np.arange(8)]], axis=1)
        text = np.stack([_HEX[raw >> 4], _HEX[raw & 15]], axis=2).reshape(len(rows), -1)
        out[offsets[rows, None] + np.arange(text.shape[1])] = text
    return Spans(out, offsets.astype(np.int32))


def _property_pairs(buf: bytes, starts: np.ndarray, stops: np.ndarray) -> tuple[Spans, Spans, np.ndarray, np.ndarray]:
    """The name/value pairs of properties the fast walk accepted, split as the walk splits them
    (:class:`_Properties`): names, values, the pairs of each record, and each pair's record."""
    props = _Properties(buf, starts, stops)
    props.first_bad()
    pair_offsets = _offsets(np.bincount(props.pair_record, minlength=len(starts)))
    return props.packed(props.name_at, props.name_len), props.packed(props.value_at, props.value_len), pair_offsets.astype(np.int32), props.pair_record


def repeated_property_names(names: Spans, pair_offsets: np.ndarray) -> np.ndarray:
    """The records (numbers, ascending) whose properties hold a name twice: their map is not
    their list of pairs (the broker's map keeps the last value at the first name's place)."""
    if len(names) < 2:
        return np.zeros(0, dtype=np.int64)
    record_of_pair = np.repeat(np.arange(len(pair_offsets) - 1), np.diff(pair_offsets))
    starts = names.offsets[:-1].astype(np.int64)
    lengths = np.diff(names.offsets).astype(np.int64)
    total = np.add.reduceat(names.values.astype(np.int64), starts)
    first = names.values[starts].astype(np.int64)
    last = names.values[starts + lengths - 1].astype(np.int64)
    # pairs of one record alike in length, first and last byte and byte sum: compared exactly
    order = np.lexsort((total, last, first, lengths, record_of_pair))
    keys = np.stack([record_of_pair, lengths, first, last, total])[:, order]
    alike = np.flatnonzero(np.all(keys[:, 1:] == keys[:, :-1], axis=0))
    repeated = []
    for record in np.unique(record_of_pair[order[alike]]).tolist():
        found = [names.values[names.offsets[p] : names.offsets[p + 1]].tobytes() for p in range(pair_offsets[record], pair_offsets[record + 1])]
        if len(set(found)) < len(found):
            repeated.append(record)
    return np.array(repeated, dtype=np.int64)


def _pair_named(names: Spans, record_of_pair: np.ndarray, count: int, name: bytes) -> np.ndarray:
    """For each record, its pair named ``name`` (-1: none); names are not repeated."""
    out = np.full(count, -1, dtype=np.int64)
    pairs = np.flatnonzero(_bytes_equal(names, name))
    out[record_of_pair[pairs]] = pairs
    return out


def _key_tokens(values: Spans, keys_pair: np.ndarray) -> tuple[Spans, np.ndarray]:
    """The non-empty space-separated tokens of each record's KEYS value (``MessageRecord.keys``)."""
    count = len(keys_pair)
    has = np.flatnonzero(keys_pair >= 0)
    pairs = keys_pair[has]
    starts = values.offsets[pairs].astype(np.int64)
    stops = values.offsets[pairs + 1].astype(np.int64)
    chars = values.values
    # the bytes of KEYS values that are not spaces, and where each token starts
    depth = np.zeros(len(chars) + 1, dtype=np.int64)
    np.add.at(depth, starts, 1)
    np.add.at(depth, stops, -1)
    inside = np.cumsum(depth[:-1]) > 0
    token = inside & (chars != 0x20)
    begins = token.copy()
    begins[1:] &= ~token[:-1]
    begins[starts[starts < len(chars)]] = token[starts[starts < len(chars)]]
    token_number = np.cumsum(begins) - 1
    token_starts = np.flatnonzero(begins)
    lengths = np.bincount(token_number[token], minlength=len(token_starts))
    offsets = np.zeros(len(token_starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # each token's record: the KEYS value it starts in
    value_of_token = np.searchsorted(starts, token_starts, side="right") - 1
    record_of_token = has[value_of_token]
    token_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(record_of_token, minlength=count), out=token_offsets[1:])
    return Spans(chars[token], offsets.astype(np.int32)), token_offsets.astype(np.int32)


def record_fields(
    buf: bytes,
    columns: CommitLogColumns,
    rows: np.ndarray,
    *,
    with_body: bool = True,
    with_key_tokens: bool = True,
    properties: _Properties | None = None,
) -> RecordFields:
    """The fields of records ``rows`` (numbers in ``columns``, ascending) of a walk of ``buf``
    that its columns leave out, read from ``buf`` in bulk.  Records whose properties repeat a
    name are found by :func:`repeated_property_names` (the caller reads those with the precise
    decoders: the pairs are not their map).  ``with_key_tokens=False`` leaves ``key_tokens``
    empty (no record has a token) for a caller that splits the KEYS value itself.
    ``properties``: the walk's (``ColumnWalk.properties``), whose pairs are then taken as they
    are instead of being split again."""
    data = np.frombuffer(buf, dtype=np.uint8)
    at = columns.position[rows]
    sys_flag = columns.sys_flag[rows]
    born_v6 = (sys_flag & SYSFLAG_BORNHOST_V6) != 0
    store_v6 = (sys_flag & SYSFLAG_STOREHOST_V6) != 0
    born_at = at + 48
    store_at = born_at + np.where(born_v6, 20, 8) + 8
    tail_at = store_at + np.where(store_v6, 20, 8)  # RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET, BODYLEN
    body_at = tail_at + 16
    body_size = _gather(data, tail_at + 12, ">i4")
    magic = _gather(data, at + 4, ">u4").astype(np.int64)
    body_end = body_at + body_size
    topic_len = np.where(magic == MAGIC_V2, _gather(data, body_end, ">i2").astype(np.int64), data[body_end].astype(np.int64))
    props_at = body_end + np.where(magic == MAGIC_V2, 2, 1) + topic_len + 2
    if properties is not None:
        names, values, pair_offsets, record_of_pair = properties.pairs_of(rows)
    else:
        names, values, pair_offsets, record_of_pair = _property_pairs(buf, props_at, at + columns.size[rows])
    hosts, numbers = _hosts(data, np.concatenate([born_at, store_at]), np.concatenate([born_v6, store_v6]))
    keys_pair = _pair_named(names, record_of_pair, len(rows), b"KEYS")
    if with_key_tokens:
        key_tokens, token_offsets = _key_tokens(values, keys_pair)
    else:
        key_tokens, token_offsets = Spans(np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int32)), np.zeros(len(rows) + 1, dtype=np.int32)
    return RecordFields(
        magic=magic,
        body_crc=_gather(data, at + 8, ">u4").astype(np.int64),
        flag=_gather(data, at + 16, ">i4"),
        physical_offset=_gather(data, at + 28, ">i8"),
        born_timestamp=_gather(data, at + 40, ">i8"),
        reconsume_times=_gather(data, tail_at, ">i4"),
        prepared_transaction_offset=_gather(data, tail_at + 4, ">i8"),
        body_size=body_size,
        body_at=body_at,
        body=gather_spans(buf, body_at, body_size) if with_body else None,
        hosts=hosts,
        born_host=numbers[: len(rows)],
        store_host=numbers[len(rows) :],
        msg_id=_msg_ids(data, store_at, store_v6, at + 28),
        names=names,
        values=values,
        pair_offsets=pair_offsets,
        tags_pair=_pair_named(names, record_of_pair, len(rows), b"TAGS"),
        uniq_pair=_pair_named(names, record_of_pair, len(rows), b"UNIQ_KEY"),
        keys_pair=keys_pair,
        key_tokens=key_tokens,
        token_offsets=token_offsets,
        props_at=props_at,
        props_end=at + columns.size[rows],
    )


def key_hash_lists(columns: CommitLogColumns, rows: np.ndarray) -> Spans:
    """The sorted distinct ``IndexFile`` key hashes of each of records ``rows`` (as a list per
    record: ``values`` int32 hashes, ``offsets`` per record)."""
    number = np.full(len(columns), -1, dtype=np.int64)
    number[rows] = np.arange(len(rows))
    keep = number[columns.key_record] >= 0 if len(columns.key_record) else np.zeros(0, dtype=bool)
    record = number[columns.key_record[keep]]
    hashes = columns.key_hash[keep]
    order = np.lexsort((hashes, record))
    record, hashes = record[order], hashes[order]
    distinct = np.ones(len(record), dtype=bool)
    distinct[1:] = (record[1:] != record[:-1]) | (hashes[1:] != hashes[:-1])
    record, hashes = record[distinct], hashes[distinct]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(record, minlength=len(rows)), out=offsets[1:])
    return Spans(hashes.astype(np.int32), offsets.astype(np.int32))


def records_with_tag(buf: bytes, columns: CommitLogColumns, rows: np.ndarray, tag: str) -> np.ndarray:
    """Which of records ``rows`` have TAGS equal to ``tag``: the records whose ConsumeQueue
    tagsCode is the tag's hash (``tagsString2tagsCode``, as the broker filters a subscription)
    -- or that are delayed messages, whose tagsCode is a delivery time -- are read and compared
    exactly."""
    found = np.zeros(len(rows), dtype=bool)
    if not len(rows):
        return found
    candidates = columns.tags_code[rows] == tags_code(tag)
    if SCHEDULE_TOPIC in columns.topics:
        candidates |= columns.topic[rows] == columns.topics.index(SCHEDULE_TOPIC)
    which = np.flatnonzero(candidates)
    if not len(which):
        return found
    fields = record_fields(buf, columns, rows[which], with_body=False)
    tagged = np.flatnonzero(fields.tags_pair >= 0)
    for i, value in zip(tagged.tolist(), span_texts(fields.values, fields.tags_pair[tagged])):
        found[which[i]] = value == tag
    return found


def records_with_key(buf: bytes, columns: CommitLogColumns, rows: np.ndarray, key: str) -> np.ndarray:
    """Which of records ``rows`` have ``key`` as their UNIQ_KEY or a token of their KEYS (the
    keys ``IndexService.buildIndex`` indexes them by): the records whose key hashes hold the
    key's hash are read and compared exactly."""
    found = np.zeros(len(rows), dtype=bool)
    if not len(rows) or not len(columns.key_record):
        return found
    wanted = np.array([index_key_hashes([f"{t}#{key}".encode()])[0] for t in columns.topics], dtype=np.int64)
    number = np.full(len(columns), -1, dtype=np.int64)
    number[rows] = np.arange(len(rows))
    hit = (number[columns.key_record] >= 0) & (columns.key_hash == wanted[columns.topic[columns.key_record]])
    candidates = np.unique(number[columns.key_record[hit]])
    if not len(candidates):
        return found
    fields = record_fields(buf, columns, rows[candidates], with_body=False)
    uniq = np.flatnonzero(fields.uniq_pair >= 0)
    tokens = span_texts(fields.key_tokens)
    values = dict(zip(uniq.tolist(), span_texts(fields.values, fields.uniq_pair[uniq])))
    offsets = fields.token_offsets.tolist()
    for i, row in enumerate(candidates.tolist()):
        found[row] = values.get(i) == key or key in tokens[offsets[i] : offsets[i + 1]]
    return found
