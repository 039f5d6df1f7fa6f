"""The v2 records of healthy batches framed into columns, without building a ``Record`` each:
where each record's key, value and headers lie, its offset and timestamp deltas (``dump
--deep``'s healthy path, as ``record_scan`` is ``validate --deep``'s).

The contract: ``frame_records`` accepts a batch and gives the columns of exactly the records
``record_batch.iter_records`` (the precise walk, ``DefaultRecordBatch.iterator``) reads from
the same bytes -- the same count, deltas, keys, values (null where a length is negative) and
headers in order -- or refuses it.  It may refuse bytes the precise walk accepts (a rare
encoding: a 10-byte timestamp delta, a record of more than ``MAX_COLUMN_HEADERS`` headers); it
never accepts bytes the precise walk rejects, so the caller runs the precise walk on every batch
it refuses, and any error is named by it.  A test holds it to the precise walk.

It frames many batches in one call, in pure Python and numpy: a Python loop follows the record
lengths (each record's position depends on the one before), and every other field is read for
all the records at once, a column of varints at a time (about 0.5 us a record in all, against
about 2 us for a Python loop over every field; no compiled code, so nothing to load).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mqtool.formats.kafka.record_scan import raw_uvarint as _uvarint

__all__ = ["HEADER_FIELDS", "MAX_COLUMN_HEADERS", "RECORD_FIELDS", "RecordColumns", "frame_records"]

I64 = npt.NDArray[np.int64]

_INT32_RAW_LIMIT = 1 << 32  # a zig-zag varint whose raw value is below this fits int32
_INT64_RAW_LIMIT = 1 << 64
_MIN_RECORD_SIZE = 7


@dataclass(frozen=True)
class RecordColumns:
    """The records of one batch as columns (positions are in the buffer that was framed).

    ``key_len`` / ``value_len`` are -1 for null; a record's headers are the next
    ``header_count[i]`` entries of the ``header_*`` columns (a null header value: length -1).
    """

    offset_delta: I64
    timestamp_delta: I64
    key_at: I64
    key_len: I64
    value_at: I64
    value_len: I64
    header_count: I64
    header_key_at: I64
    header_key_len: I64
    header_value_at: I64
    header_value_len: I64

    def __len__(self) -> int:
        return len(self.offset_delta)


#: ``RecordColumns``' fields of one value a record, and those of one value a header.
RECORD_FIELDS = ("offset_delta", "timestamp_delta", "key_at", "key_len", "value_at", "value_len", "header_count")
HEADER_FIELDS = ("header_key_at", "header_key_len", "header_value_at", "header_value_len")


#: A record with more headers than this sends its batch to the precise walk (the column framer
#: reads the j-th header of every record in one step, so its steps are the most headers a record has).
MAX_COLUMN_HEADERS = 64
_LEN_LIMIT = np.int64(1 << 32)


def _varints(d: npt.NDArray[np.uint8], p: I64, limit: I64, max_bytes: int) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """The raw varint at each position ``p`` (each read bounded by its ``limit``), the position
    after it, and whether it is one of at most ``max_bytes`` bytes before the limit (``raw_uvarint``
    a column at a time; ``max_bytes`` <= 9 keeps the raw value below 2**63)."""
    last = len(d) - 1
    b = d[np.minimum(p, last)].astype(np.int64)
    ok = p < limit
    raw = b & 0x7F
    after = p + 1
    going = np.flatnonzero(b >= 0x80)
    for k in range(1, max_bytes):
        if not len(going):
            break
        q = p[going] + k
        ok[going] &= q < limit[going]
        bk = d[np.minimum(q, last)].astype(np.int64)
        raw[going] |= (bk & 0x7F) << (7 * k)
        after[going] = q + 1
        going = going[bk >= 0x80]
    ok[going] = False  # longer than max_bytes
    return raw, after, ok


def _zigzag(raw: I64) -> I64:
    return (raw >> 1) ^ -(raw & 1)


def _blobs(d: npt.NDArray[np.uint8], p: I64, limit: I64, ok: npt.NDArray[np.bool_]) -> tuple[I64, I64, I64]:
    """``(at, length, after)`` of the nullable ``varint length, bytes`` field at each ``p``
    (length -1 for null: any negative length); clears ``ok`` where it is not one."""
    raw, at, good = _varints(d, p, limit, 5)
    null = (raw & 1).astype(bool)
    n = raw >> 1
    ok &= good & (raw < _LEN_LIMIT) & (null | (n <= limit - at))
    length = np.where(null, -1, n)
    return at, length, at + np.maximum(length, 0)


def frame_records(buf: bytes, pos: list[int], end: list[int], count: list[int]) -> tuple[list[bool], RecordColumns]:
    """The records of several batches framed at once: batch ``i``'s ``count[i]`` records fill
    ``buf[pos[i]:end[i]]``.  Returns whether each batch was accepted and the columns of the
    records of the accepted ones, in order (positions in ``buf``; see the module docstring for
    what an accepted batch holds and what is refused)."""
    accepted: list[bool] = []
    starts: list[int] = []
    ends: list[int] = []
    kept_counts: list[int] = []
    start, finish = starts.append, ends.append
    for p, e, c in zip(pos, end, count):
        mark = len(starts)
        whole = 0 < c and c * _MIN_RECORD_SIZE <= e - p and 0 <= p and e <= len(buf)
        if whole:
            for _ in range(c):
                if p >= e:
                    whole = False
                    break
                raw = buf[p]
                if raw < 0x80:  # most records are under 64 bytes or 8 KiB: one or two bytes
                    p += 1
                elif p + 1 < e and buf[p + 1] < 0x80:
                    raw = (raw & 0x7F) | (buf[p + 1] << 7)
                    p += 2
                else:
                    raw, p = _uvarint(buf, p, e, 5)
                    if p < 0 or raw >= _INT32_RAW_LIMIT:
                        whole = False
                        break
                length = raw >> 1
                if raw & 1 or length < 1 or length > e - p:
                    whole = False
                    break
                start(p)
                p += length
                finish(p)
            whole = whole and p == e
        if not whole:
            del starts[mark:], ends[mark:]
        else:
            kept_counts.append(c)
        accepted.append(whole)
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return accepted, RecordColumns(*([empty] * 11))
    d = np.frombuffer(buf, dtype=np.uint8)
    rec_end = np.array(ends, dtype=np.int64)
    cur = np.array(starts, dtype=np.int64) + 1  # after the attributes byte (unused)
    v, cur, ok = _varints(d, cur, rec_end, 9)  # timestamp delta: a varlong, below 2**63 v
    timestamp_delta = _zigzag(v)
    v, cur, good = _varints(d, cur, rec_end, 5)  # offset delta
    ok &= good & (v < _LEN_LIMIT)
    offset_delta = _zigzag(v)
    key_at, key_len, cur = _blobs(d, cur, rec_end, ok)
    value_at, value_len, cur = _blobs(d, cur, rec_end, ok)
    v, cur, good = _varints(d, cur, rec_end, 5)  # headers count
    header_count = v >> 1
    ok &= good & (v < _LEN_LIMIT) & ((v & 1) == 0) & (header_count <= rec_end - cur) & (header_count <= MAX_COLUMN_HEADERS)
    header_count[~ok] = 0
    total = int(header_count.sum())
    first_header = np.cumsum(header_count) - header_count
    hk_at = np.empty(total, dtype=np.int64)
    hk_len = np.empty(total, dtype=np.int64)
    hv_at = np.empty(total, dtype=np.int64)
    hv_len = np.empty(total, dtype=np.int64)
    for j in range(int(header_count.max()) if total else 0):
        lanes = np.flatnonzero(header_count > j)
        q, limit, lane_ok = cur[lanes], rec_end[lanes], ok[lanes]
        v, q, good = _varints(d, q, limit, 5)  # header key length: never null
        n = v >> 1
        lane_ok &= good & (v < _LEN_LIMIT) & ((v & 1) == 0) & (n <= limit - q)
        slot = first_header[lanes] + j
        hk_at[slot] = q
        hk_len[slot] = n
        value_at_, value_len_, q = _blobs(d, q + n, limit, lane_ok)  # header value
        hv_at[slot] = value_at_
        hv_len[slot] = value_len_
        cur[lanes] = q
        ok[lanes] = lane_ok
    ok &= cur == rec_end
    columns: list[I64] = [offset_delta, timestamp_delta, key_at, key_len, value_at, value_len, header_count, hk_at, hk_len, hv_at, hv_len]
    if not ok.all():  # refuse every batch holding a record that is not framed
        owner = np.repeat(np.arange(len(kept_counts)), kept_counts)
        bad = np.zeros(len(kept_counts), dtype=bool)
        bad[owner[~ok]] = True
        keep = ~bad[owner]
        header_keep = np.repeat(keep, header_count)
        columns = [c[keep] for c in columns[:7]] + [c[header_keep] for c in columns[7:]]
        bad_batches = iter(bad.tolist())
        accepted = [a and not next(bad_batches) for a in accepted]
    return accepted, RecordColumns(*columns)
