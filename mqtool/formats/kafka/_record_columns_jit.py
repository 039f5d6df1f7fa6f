"""The compiled framer of ``record_columns`` (numba): imported only when numba is installed.

The same contract as ``record_columns.frame_records_py`` -- accept only what
``record_batch.iter_records`` accepts, and give the same columns -- written with every read
bounded by the record or the batch (numba does not check array bounds).  It refuses more than
the Python framer: a 10-byte timestamp delta goes to the precise walk.
"""

from __future__ import annotations

import numba
import numpy as np

from mqtool.formats.kafka._record_scan_jit import _skip_blob, _uvarint, _varint32


@numba.njit(cache=True, nogil=True)
def _blob(data: np.ndarray, p: int, limit: int) -> tuple[int, int]:
    """``(length, position after)`` of a nullable ``varint length, bytes`` field (length -1
    for null: any negative length); ``(-1, -1)`` if it is not one within ``limit``."""
    end = _skip_blob(data, p, limit)
    if end < 0:
        return -1, -1
    raw, q = _varint32(data, p, limit)
    if raw & 1:
        return -1, q
    return raw >> 1, q


@numba.njit(cache=True, nogil=True)
def frame(data: np.ndarray, pos: int, end: int, count: int) -> tuple[bool, np.ndarray, np.ndarray, int]:
    """``(accepted, records, headers, header total)``: ``records`` holds, a row each, the
    offset delta, timestamp delta, key position and length, value position and length and
    header count of the ``count`` records filling ``data[pos:end]``; ``headers`` the key
    position and length and value position and length of each header (the first ``header
    total`` columns)."""
    records = np.empty((7, max(count, 0)), dtype=np.int64)
    headers = np.empty((4, max(count, 1)), dtype=np.int64)
    total = 0
    if pos < 0 or end > data.shape[0] or count <= 0 or count * 7 > end - pos:
        return False, records, headers, 0
    for i in range(count):
        raw, p = _varint32(data, pos, end)  # record length
        if p < 0 or raw & 1:
            return False, records, headers, 0
        length = raw >> 1
        if length > end - p or length < 1:  # the attributes byte at least
            return False, records, headers, 0
        rec_end = p + length
        p += 1  # attributes (unused)
        raw, p = _uvarint(data, p, rec_end, 9)  # timestamp delta: a varlong, below 2^63 raw
        if p < 0:
            return False, records, headers, 0
        records[1, i] = (raw >> 1) ^ -(raw & 1)
        raw, p = _varint32(data, p, rec_end)  # offset delta
        if p < 0:
            return False, records, headers, 0
        records[0, i] = (raw >> 1) ^ -(raw & 1)
        n, q = _blob(data, p, rec_end)  # key
        if q < 0:
            return False, records, headers, 0
        records[2, i] = q
        records[3, i] = n
        p = q + max(n, 0)
        n, q = _blob(data, p, rec_end)  # value
        if q < 0:
            return False, records, headers, 0
        records[4, i] = q
        records[5, i] = n
        p = q + max(n, 0)
        raw, p = _varint32(data, p, rec_end)  # headers count
        if p < 0 or raw & 1 or (raw >> 1) > rec_end - p:
            return False, records, headers, 0
        records[6, i] = raw >> 1
        for _ in range(raw >> 1):
            if total == headers.shape[1]:
                grown = np.empty((4, 2 * total), dtype=np.int64)
                grown[:, :total] = headers[:, :total]
                headers = grown
            raw, p = _varint32(data, p, rec_end)  # header key length: never null
            if p < 0 or raw & 1 or (raw >> 1) > rec_end - p:
                return False, records, headers, 0
            headers[0, total] = p
            headers[1, total] = raw >> 1
            p += raw >> 1
            n, q = _blob(data, p, rec_end)  # header value
            if q < 0:
                return False, records, headers, 0
            headers[2, total] = q
            headers[3, total] = n
            p = q + max(n, 0)
            total += 1
        if p != rec_end:
            return False, records, headers, 0
        pos = rec_end
    if pos != end:
        return False, records, headers, 0
    return True, records, headers, total
