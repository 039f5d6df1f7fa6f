"""The compiled record walk of ``record_scan`` (numba): imported only when numba is installed.

The same contract as ``record_scan.scan_records_py`` -- accept only what
``record_batch.iter_records`` (``DefaultRecord.readFrom`` for each of the batch's records)
accepts, and give the same answer -- written with every read bounded by the record or the
batch (numba does not check array bounds).  It refuses more than the Python walk: a 10-byte
timestamp delta (a varlong whose value needs the 10th byte is legal but never written by a
client for a delta) goes to the precise walk.
"""

from __future__ import annotations

import numba
import numpy as np

from mqtool.formats.kafka.record_scan import raw_uvarint

_INT32_RAW_LIMIT = 1 << 32  # a zig-zag varint whose raw value is below this fits int32
_INT64_MIN = -(1 << 63)


#: The raw (un-zig-zagged) varint at ``p`` of at most ``max_bytes`` bytes, all before ``limit``,
#: and the position after it; ``(-1, -1)`` when it is not that: ``record_scan.raw_uvarint``,
#: the Python walks' reader, compiled.
_uvarint = numba.njit(cache=True, nogil=True)(raw_uvarint)


@numba.njit(cache=True, nogil=True)
def _varint32(data: np.ndarray, p: int, limit: int) -> tuple[int, int]:
    """A varint of an int32 field (``ByteUtils.readVarint``: at most 5 bytes, in range)."""
    raw, p = _uvarint(data, p, limit, 5)
    if p < 0 or raw >= _INT32_RAW_LIMIT:
        return -1, -1
    return raw, p


@numba.njit(cache=True, nogil=True)
def _skip_blob(data: np.ndarray, p: int, limit: int) -> int:
    """Past a nullable ``varint length, bytes`` field (any negative length is null); -1 if the
    bytes reach past ``limit``."""
    raw, p = _varint32(data, p, limit)
    if p < 0:
        return -1
    if raw & 1:
        return p
    n = raw >> 1
    if n > limit - p:
        return -1
    return p + n


@numba.njit(cache=True, nogil=True)
def scan(data: np.ndarray, pos: int, end: int, count: int) -> tuple[bool, int, int, int, bool]:
    """``(accepted, first offset delta, last offset delta, max timestamp delta, deltas >= 0
    and increasing)`` of the ``count`` records filling ``data[pos:end]``."""
    first = 0
    last = 0
    max_ts = _INT64_MIN
    increasing = True
    if pos < 0 or end > data.shape[0] or count <= 0 or count * 7 > end - pos:
        return False, 0, 0, 0, False
    for i in range(count):
        raw, p = _varint32(data, pos, end)  # record length
        if p < 0 or raw & 1:
            return False, 0, 0, 0, False
        length = raw >> 1
        if length > end - p or length < 1:  # the attributes byte at least
            return False, 0, 0, 0, False
        rec_end = p + length
        p += 1  # attributes (int8, unused)
        raw, p = _uvarint(data, p, rec_end, 9)  # timestamp delta: a varlong, below 2^63 raw
        if p < 0:
            return False, 0, 0, 0, False
        ts = (raw >> 1) ^ -(raw & 1)
        if ts > max_ts:
            max_ts = ts
        raw, p = _varint32(data, p, rec_end)  # offset delta
        if p < 0:
            return False, 0, 0, 0, False
        od = (raw >> 1) ^ -(raw & 1)
        if i == 0:
            first = od
            if od < 0:
                increasing = False
        elif od <= last:
            increasing = False
        last = od
        p = _skip_blob(data, p, rec_end)  # key
        if p < 0:
            return False, 0, 0, 0, False
        p = _skip_blob(data, p, rec_end)  # value
        if p < 0:
            return False, 0, 0, 0, False
        raw, p = _varint32(data, p, rec_end)  # headers count
        if p < 0 or raw & 1 or (raw >> 1) > rec_end - p:
            return False, 0, 0, 0, False
        for _ in range(raw >> 1):
            raw, p = _varint32(data, p, rec_end)  # header key length: never null
            if p < 0 or raw & 1 or (raw >> 1) > rec_end - p:
                return False, 0, 0, 0, False
            p = _skip_blob(data, p + (raw >> 1), rec_end)  # header value
            if p < 0:
                return False, 0, 0, 0, False
        if p != rec_end:
            return False, 0, 0, 0, False
        pos = rec_end
    if pos != end:
        return False, 0, 0, 0, False
    return True, first, last, max_ts, increasing
