"""The v2 records of one batch framed into columns, without building a ``Record`` each: where
each record's key, value and headers lie, its offset and timestamp deltas (``dump --deep``'s
healthy path, as ``record_scan`` is ``validate --deep``'s).

The contract: ``frame_records`` either returns ``None`` (unsure) or the columns of exactly the
records ``record_batch.iter_records`` (the precise walk, ``DefaultRecordBatch.iterator``) reads
from the same bytes: the same count, deltas, keys, values (null where a length is negative) and
headers in order.  It may refuse bytes the precise walk accepts (a rare encoding: a varint in a
longer form than needed, a 10-byte timestamp delta); it never accepts bytes the precise walk
rejects, so the caller runs the precise walk whenever this says ``None``, and any error is named
by it.

Two implementations of that contract: ``frame_records_py`` (pure Python, a couple of
microseconds a record) and a compiled one (``_record_columns_jit``, numba, the ``fast`` extra),
which ``frame_records(..., compiled=True)`` uses when numba imports.  Loading the compiled one
costs about 0.2 s once (numba's import and its cache), so callers ask for it only for large
inputs.  A test holds the two equal to each other and to the precise walk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mqtool.formats._binary import Buffer
from mqtool.formats.kafka.record_scan import raw_uvarint as _uvarint

__all__ = ["RecordColumns", "compiled_available", "frame_records", "frame_records_py"]

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


_Kernel = Callable[..., Any]
_kernel: _Kernel | None = None
_loaded = False


def _load() -> _Kernel | None:
    """The compiled framer, imported (and compiled, or loaded from numba's cache) at first use."""
    global _kernel, _loaded
    if not _loaded:
        _loaded = True
        try:
            from mqtool.formats.kafka import _record_columns_jit
        except ImportError:
            return None
        _kernel = _record_columns_jit.frame
    return _kernel


def compiled_available() -> bool:
    """Whether ``frame_records(..., compiled=True)`` runs the compiled framer (numba is installed)."""
    return _load() is not None


def frame_records(buf: Buffer, pos: int, end: int, count: int, *, compiled: bool = False) -> RecordColumns | None:
    """The columns of the ``count`` records filling ``buf[pos:end]``, or ``None`` when the fast
    framer is unsure (the precise walk decides).  ``compiled``: with the compiled framer when
    numba is installed (loading it the first time)."""
    kernel = _load() if compiled else None
    if kernel is None:
        return frame_records_py(buf, pos, end, count)
    data = np.frombuffer(buf, dtype=np.uint8)
    ok, records, headers, header_total = kernel(data, pos, end, count)
    if not ok:
        return None
    return RecordColumns(*records, *headers[:, :header_total])


def frame_records_py(buf: Buffer, pos: int, end: int, count: int) -> RecordColumns | None:
    """The pure-Python framer (see ``frame_records``)."""
    if count <= 0 or pos < 0 or end > len(buf) or count * _MIN_RECORD_SIZE > end - pos:
        return None
    od_col: list[int] = []
    ts_col: list[int] = []
    key_at: list[int] = []
    key_len: list[int] = []
    value_at: list[int] = []
    value_len: list[int] = []
    header_count: list[int] = []
    hk_at: list[int] = []
    hk_len: list[int] = []
    hv_at: list[int] = []
    hv_len: list[int] = []
    for _ in range(count):
        b = buf[pos] if pos < end else 0x80
        if b < 0x80:  # record length: most records are under 64 bytes or 8 KiB
            raw, p = b, pos + 1
        else:
            raw, p = _uvarint(buf, pos, end, 5)
            if p < 0 or raw >= _INT32_RAW_LIMIT:
                return None
        if raw & 1:
            return None
        length = raw >> 1
        if length < 1 or length > end - p:
            return None
        rec_end = p + length
        p += 1  # attributes (unused)
        raw, p = _uvarint(buf, p, rec_end, 10)  # timestamp delta (varlong)
        if p < 0 or raw >= _INT64_RAW_LIMIT:
            return None
        ts_col.append((raw >> 1) ^ -(raw & 1))
        raw, p = _uvarint(buf, p, rec_end, 5)  # offset delta
        if p < 0 or raw >= _INT32_RAW_LIMIT:
            return None
        od_col.append((raw >> 1) ^ -(raw & 1))
        for at_col, len_col in ((key_at, key_len), (value_at, value_len)):
            raw, p = _uvarint(buf, p, rec_end, 5)
            if p < 0 or raw >= _INT32_RAW_LIMIT:
                return None
            if raw & 1:  # any negative length is null
                at_col.append(p)
                len_col.append(-1)
                continue
            n = raw >> 1
            if n > rec_end - p:
                return None
            at_col.append(p)
            len_col.append(n)
            p += n
        raw, p = _uvarint(buf, p, rec_end, 5)  # headers count
        if p < 0 or raw >= _INT32_RAW_LIMIT or raw & 1 or (raw >> 1) > rec_end - p:
            return None
        headers = raw >> 1
        header_count.append(headers)
        for _ in range(headers):
            raw, p = _uvarint(buf, p, rec_end, 5)  # header key length: never null
            if p < 0 or raw >= _INT32_RAW_LIMIT or raw & 1 or (raw >> 1) > rec_end - p:
                return None
            hk_at.append(p)
            hk_len.append(raw >> 1)
            p += raw >> 1
            raw, p = _uvarint(buf, p, rec_end, 5)  # header value
            if p < 0 or raw >= _INT32_RAW_LIMIT:
                return None
            hv_at.append(p)
            if raw & 1:
                hv_len.append(-1)
                continue
            n = raw >> 1
            if n > rec_end - p:
                return None
            hv_len.append(n)
            p += n
        if p != rec_end:
            return None
        pos = rec_end
    if pos != end:
        return None
    columns = (od_col, ts_col, key_at, key_len, value_at, value_len, header_count, hk_at, hk_len, hv_at, hv_len)
    return RecordColumns(*(np.array(c, dtype=np.int64) for c in columns))
