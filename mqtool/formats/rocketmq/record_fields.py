"""The other fields of chosen CommitLog records, read in bulk from their columns: hosts, message
ids (offsetMsgId), property name/value pairs and KEYS tokens as packed byte spans, and the records
with a tag or a key (``dump``'s and the Spark source's rows; ``query``'s filters).  The records were
framed and checked by :func:`mqtool.formats.rocketmq.columns.walk_columns`; this reads what the
cross-file checks do not need."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mqtool.formats.column_ops import Spans, gather, joined, offsets_of
from mqtool.formats.rocketmq.columns import CommitLogColumns, Properties
from mqtool.formats.rocketmq.commitlog import (
    MAGIC_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
)
from mqtool.formats.rocketmq.hashing import SCHEDULE_TOPIC, index_key_hashes, tags_code


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
    return Spans(joined(buf, starts, starts + lengths), offsets_of(lengths).astype(np.int32))


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
    (:class:`Properties`): names, values, the pairs of each record, and each pair's record."""
    props = Properties(buf, starts, stops)
    props.first_bad()
    pair_offsets = offsets_of(np.bincount(props.pair_record, minlength=len(starts)))
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
    properties: Properties | None = None,
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
    body_size = gather(data, tail_at + 12, ">i4")
    magic = gather(data, at + 4, ">u4").astype(np.int64)
    body_end = body_at + body_size
    topic_len = np.where(magic == MAGIC_V2, gather(data, body_end, ">i2").astype(np.int64), data[body_end].astype(np.int64))
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
        body_crc=gather(data, at + 8, ">u4").astype(np.int64),
        flag=gather(data, at + 16, ">i4"),
        physical_offset=gather(data, at + 28, ">i8"),
        born_timestamp=gather(data, at + 40, ">i8"),
        reconsume_times=gather(data, tail_at, ">i4"),
        prepared_transaction_offset=gather(data, tail_at + 4, ">i8"),
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
