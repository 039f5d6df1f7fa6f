"""The fast path over CommitLog bytes: healthy records framed straight into compact columns.

``walk_columns`` frames the message records of one buffer (a CommitLog file's data) in a single
tight loop -- TOTALSIZE and MAGICCODE, the fixed header in one ``struct`` unpack, the masked body
CRC (``BODYCRC``), TOPIC, PROPERTIES split into name/value pairs, the record's PHYSICALOFFSET
against its real address, QUEUEOFFSET continuity per topic/queue -- and appends what the
cross-file checks need to flat arrays: position, TOTALSIZE, queue id, QUEUEOFFSET,
STORETIMESTAMP, SYSFLAG, topic number, the ConsumeQueue ``tagsCode`` the broker dispatches
(``CommitLog.checkMessageAndReturnSize`` / ``MessageExtBrokerInner.tagsString2tagsCode``, the
delivery time for ``SCHEDULE_TOPIC_XXXX``), and the ``IndexFile`` key hashes of the record
(``IndexService.buildIndex``: ``topic#UNIQ_KEY`` and ``topic#key`` for each token of ``KEYS``).

It is deliberately strict: the walk stops, with ``stop.kind == "anomaly"``, at the first record
that is anything but a healthy, ordinary record -- a broken frame or CRC, a PHYSICALOFFSET that
is not the record's address, a QUEUEOFFSET that does not continue its queue, properties the broker
would drop or that carry the ``__CRC32#`` record CRC, bytes that are not UTF-8, a record whose last
byte is zero (a torn write leaves zeros).  The caller then runs the precise decoders
(:mod:`mqtool.formats.rocketmq.commitlog`) over the file to name the exact finding; on healthy
bytes the two paths agree by construction, and a test holds them to it.

Other stops are the clean ends of ``RecordWalker``: ``zeros`` (a zero header: pre-allocated
tail), ``blank`` (an END_OF_FILE record, ``length`` its TOTALSIZE) and ``eof`` (the buffer ends
right after a record).
"""

from __future__ import annotations

import re
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
from mqtool.formats.rocketmq.hashing import SCHEDULE_TOPIC, delivery_tags_code, index_key_hashes, tags_code

_HEAD8 = struct.Struct(">iI")
_I16 = struct.Struct(">h")


def _fixed(born_v6: bool, store_v6: bool) -> struct.Struct:
    born = "16si" if born_v6 else "4si"
    store = "16si" if store_v6 else "4si"
    # TOTALSIZE MAGIC BODYCRC QUEUEID FLAG QUEUEOFFSET PHYSICALOFFSET SYSFLAG BORNTIMESTAMP
    # BORNHOST STORETIMESTAMP STOREHOST RECONSUMETIMES PREPARED_TRANSACTION_OFFSET BODYLEN
    return struct.Struct(f">iIIiiqqiq{born}q{store}iqi")


#: The fixed part for each combination of the two IPv6 host bits.
_FIXED = {
    0: _fixed(False, False),
    SYSFLAG_BORNHOST_V6: _fixed(True, False),
    SYSFLAG_STOREHOST_V6: _fixed(False, True),
    SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6: _fixed(True, True),
}
_HOST_BITS = SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6
_SYSFLAG = struct.Struct(">i")
_SYSFLAG_POSITION = 36
#: Properties as the broker writes them (``MessageDecoder.messageProperties2String``):
#: ``name 0x01 value 0x02`` repeated, names and values non-empty and free of separators; the
#: groups catch the ones the ConsumeQueue and the IndexFile are built from
#: (``MessageConst.PROPERTY_TAGS``, ``PROPERTY_KEYS``, ``PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX``,
#: ``PROPERTY_DELAY_TIME_LEVEL``) and the ``__CRC32#`` record CRC.
PROPERTIES = re.compile(
    rb"(?:(?:TAGS\x01(?P<tags>[^\x01\x02]+)|KEYS\x01(?P<keys>[^\x01\x02]+)|UNIQ_KEY\x01(?P<uniq>[^\x01\x02]+)"
    rb"|DELAY\x01(?P<delay>[^\x01\x02]+)|__CRC32#\x01(?P<crc>[^\x01\x02]+)|[^\x01\x02]+\x01[^\x01\x02]+)\x02)*+"
)

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
        runs = [
            ((self.topics[int(t[a])], int(q[a])), QueueRun(int(off[a]), int(off[b - 1]), int(b - a), int(self.position[rows[a]])))
            for a, b in zip(starts, stops)
        ]
        # in the order the queues first appear, as a record-by-record walk meets them
        return dict(sorted(runs, key=lambda item: item[1].first_position))


@dataclass
class ColumnWalk:
    """The outcome of :func:`walk_columns`: the columns of every record before ``stop``."""

    columns: CommitLogColumns
    stop: ColumnStop

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


def walk_columns(buf: bytes, base: int, *, start: int = 0, stop_at_zero_last_byte: bool = False) -> ColumnWalk:
    """Frame the records of ``buf`` from ``start`` into columns until a clean end or the first
    anomaly.  ``base`` is the commitlog offset of ``buf[0]`` (PHYSICALOFFSET must equal
    ``base + position``).  ``stop_at_zero_last_byte``: a record with properties whose last byte
    is zero is an anomaly (in the last file that is how a torn write looks).

    The loop checks every record and keeps only what takes Python to compute (position, topic,
    tagsCode, keys); the fixed header fields are gathered afterwards with numpy.  Queue offset
    continuity is checked over the columns (:meth:`CommitLogColumns.queue_runs`)."""
    size = len(buf)
    pos = start
    head8 = _HEAD8.unpack_from
    sysflag_at = _SYSFLAG.unpack_from
    fixed_v4 = _FIXED[0].unpack_from
    fixed_size = _FIXED[0].size
    fixed_by_hosts = _FIXED
    host_mask = _HOST_BITS
    magic_v1, magic_v2 = MAGIC_V1, MAGIC_V2
    crc32 = zlib.crc32
    properties_of = PROPERTIES.fullmatch
    i16 = _I16.unpack_from
    topic_ids: dict[bytes, int] = {}
    topics: list[str] = []
    tags_cache: dict[bytes, int] = {}
    positions = array("q")
    topic_col = array("i")
    tags_col = array("q")
    key_record = array("i")
    keys: list[bytes] = []
    a_pos, a_topic, a_tags, a_krec, a_key = positions.append, topic_col.append, tags_col.append, key_record.append, keys.append
    record = 0
    stop: ColumnStop
    while True:
        remaining = size - pos
        if remaining < 8:
            stop = ColumnStop("eof", pos) if not remaining else ColumnStop("zeros" if not any(buf[pos:size]) else "anomaly", pos)
            break
        if remaining >= fixed_size:
            # the whole fixed part in one unpack (both hosts IPv4, the common case)
            fields = fixed_v4(buf, pos)
            total, magic = fields[0], fields[1]
        else:
            total, magic = head8(buf, pos)
            fields = ()
        if magic != magic_v1 and magic != magic_v2:
            if magic == BLANK_MAGIC:
                stop = ColumnStop("blank", pos, total)
            elif total == 0 and magic == 0:
                stop = ColumnStop("zeros", pos)
            else:
                stop = ColumnStop("anomaly", pos)
            break
        if total > remaining:
            stop = ColumnStop("partial" if total > 0 else "anomaly", pos, total)
            break
        if total < fixed_size:  # smaller than the smallest fixed part (both hosts IPv4)
            stop = ColumnStop("anomaly", pos)
            break
        host_bits = fields[7] & host_mask if fields else sysflag_at(buf, pos + _SYSFLAG_POSITION)[0] & host_mask
        fixed = fixed_by_hosts[host_bits]
        if total < fixed.size:
            stop = ColumnStop("anomaly", pos)
            break
        if host_bits or not fields:
            fields = fixed.unpack_from(buf, pos)
        body_len = fields[16]
        body_pos = pos + fixed.size
        body_end = body_pos + body_len
        end = pos + total
        if fields[6] != base + pos or body_len < 0 or body_end + 3 > end:
            stop = ColumnStop("anomaly", pos)
            break
        if (crc32(buf[body_pos:body_end]) & 0x7FFFFFFF if body_len else 0) != fields[2]:
            stop = ColumnStop("anomaly", pos)
            break
        if magic == magic_v1:
            topic_len = buf[body_end]
            topic_pos = body_end + 1
            if topic_len > 127:  # a negative TOPICLEN byte
                stop = ColumnStop("anomaly", pos)
                break
        else:
            topic_len = i16(buf, body_end)[0]
            topic_pos = body_end + 2
        props_pos = topic_pos + topic_len + 2
        if topic_len < 0 or props_pos > end or i16(buf, props_pos - 2)[0] != end - props_pos:
            stop = ColumnStop("anomaly", pos)
            break
        raw_topic = buf[topic_pos : props_pos - 2]
        topic_id = topic_ids.get(raw_topic)
        if topic_id is None:
            try:
                topics.append(raw_topic.decode("utf-8"))
            except UnicodeDecodeError:
                stop = ColumnStop("anomaly", pos)
                break
            topic_id = topic_ids[raw_topic] = len(topics) - 1
        code = 0
        if props_pos < end:
            raw = buf[props_pos:end]
            # name 0x01 value 0x02, names and values non-empty and free of separators: anything
            # else holds a segment the broker drops; __CRC32# needs its own check (the precise
            # path does both).  One match also yields the properties the queues and the index
            # are built from (a repeated name: its last value, as the broker's map keeps it).
            props = properties_of(raw)
            if props is None or (stop_at_zero_last_byte and not buf[end - 1]):
                stop = ColumnStop("anomaly", pos)
                break
            tags, keys_value, uniq, delay, crc = props.group("tags", "keys", "uniq", "delay", "crc")
            if crc is not None:
                stop = ColumnStop("anomaly", pos)
                break
            if not raw.isascii():
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    stop = ColumnStop("anomaly", pos)
                    break
            if tags is not None:
                code = tags_cache.get(tags)  # type: ignore[assignment]
                if code is None:
                    code = tags_cache[tags] = tags_code(tags.decode("utf-8"))
            if delay is not None and topics[topic_id] == SCHEDULE_TOPIC:
                code = delivery_tags_code(fields[11], delay.decode("utf-8"))
            if uniq is not None:
                a_krec(record)
                a_key(raw_topic + b"#" + uniq)
            if keys_value is not None:
                for key in keys_value.split(b" "):
                    if key:
                        a_krec(record)
                        a_key(raw_topic + b"#" + key)
        a_pos(pos)
        a_topic(topic_id)
        a_tags(code)
        record += 1
        pos = end
    return ColumnWalk(_columns(buf, positions, topic_col, tags_col, topics, key_record, keys), stop)


def _columns(
    buf: bytes, positions: array[int], topic_col: array[int], tags_col: array[int], topics: list[str], key_record: array[int], keys: list[bytes]
) -> CommitLogColumns:
    data = np.frombuffer(buf, dtype=np.uint8)
    at = np.frombuffer(positions, dtype=np.int64) if len(positions) else np.zeros(0, dtype=np.int64)
    sys_flag = _gather(data, at + _SYSFLAG_POSITION, ">i4")
    born_v6 = (sys_flag & SYSFLAG_BORNHOST_V6) != 0
    store_at = at + 48 + np.where(born_v6, 20, 8)
    return CommitLogColumns(
        position=at.copy(),
        size=_gather(data, at, ">i4"),
        queue_id=_gather(data, at + 12, ">i4"),
        queue_offset=_gather(data, at + 20, ">i8"),
        store_timestamp=_gather(data, store_at, ">i8"),
        sys_flag=sys_flag,
        topic=np.array(topic_col, dtype=np.int32),
        tags_code=np.array(tags_col, dtype=np.int64),
        topics=topics,
        key_record=np.array(key_record, dtype=np.int32),
        key_hash=index_key_hashes(keys),
    )


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


def gather_spans(buf: bytes, starts: np.ndarray, lengths: np.ndarray) -> Spans:
    """The byte ranges ``[starts[i], starts[i] + lengths[i])`` of ``buf`` packed end to end."""
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    view = memoryview(buf)
    packed = b"".join([view[a : a + n] for a, n in zip(starts.tolist(), lengths.tolist())])
    return Spans(np.frombuffer(packed, dtype=np.uint8), offsets.astype(np.int32))


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
    unique, number = np.unique(np.ascontiguousarray(keyed).view("V21").ravel(), return_inverse=True)
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
    """The name/value pairs of properties the fast walk accepted (``name 0x01 value 0x02``
    repeated, no separator inside a name or value): names, values, the pairs of each record, and
    each pair's record."""
    blob = gather_spans(buf, starts, stops - starts)
    chars = blob.values
    separator = (chars == 1) | (chars == 2)
    # a byte after an even number of separators is in a name, after an odd number in a value
    odd = (np.cumsum(separator) & 1).astype(bool)
    in_name = ~separator & ~odd
    in_value = ~separator & odd
    name_ends = np.flatnonzero(chars == 1)
    value_ends = np.flatnonzero(chars == 2)
    name_count = np.cumsum(in_name)
    value_count = np.cumsum(in_value)
    names = Spans(chars[in_name], np.concatenate(([0], name_count[name_ends])).astype(np.int32))
    values = Spans(chars[in_value], np.concatenate(([0], value_count[value_ends])).astype(np.int32))
    record_of_pair = np.searchsorted(blob.offsets, value_ends, side="right") - 1
    pair_offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(np.bincount(record_of_pair, minlength=len(starts)), out=pair_offsets[1:])
    return names, values, pair_offsets.astype(np.int32), record_of_pair


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


def record_fields(buf: bytes, columns: CommitLogColumns, rows: np.ndarray, *, with_body: bool = True) -> RecordFields:
    """The fields of records ``rows`` (numbers in ``columns``, ascending) of a walk of ``buf``
    that its columns leave out, read from ``buf`` in bulk.  Records whose properties repeat a
    name are found by :func:`repeated_property_names` (the caller reads those with the precise
    decoders: the pairs are not their map)."""
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
    names, values, pair_offsets, record_of_pair = _property_pairs(buf, props_at, at + columns.size[rows])
    hosts, numbers = _hosts(data, np.concatenate([born_at, store_at]), np.concatenate([born_v6, store_v6]))
    keys_pair = _pair_named(names, record_of_pair, len(rows), b"KEYS")
    key_tokens, token_offsets = _key_tokens(values, keys_pair)
    return RecordFields(
        magic=magic,
        body_crc=_gather(data, at + 8, ">u4").astype(np.int64),
        flag=_gather(data, at + 16, ">i4"),
        physical_offset=_gather(data, at + 28, ">i8"),
        born_timestamp=_gather(data, at + 40, ">i8"),
        reconsume_times=_gather(data, tail_at, ">i4"),
        prepared_transaction_offset=_gather(data, tail_at + 4, ">i8"),
        body_size=body_size,
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
