"""A fast walk over the v2 records of one batch (``DefaultRecord``) that checks them without
building them: ``validate --deep``'s healthy path.

The contract: ``scan_records`` either raises ``RecordScanUnsure`` or accepts bytes that
``record_batch.iter_records`` (the precise walk, ``DefaultRecordBatch.iterator``) accepts too,
and returns what that walk would give -- the first and last offset delta, the largest timestamp
delta, and whether the offset deltas are >= 0 and increasing.  It may refuse bytes the precise
walk accepts (a rare encoding); the caller then runs the precise walk, which also names the
error of damaged records.  So the findings never depend on which walk ran.

Two implementations of that contract: a compiled one (``_record_scan_jit``, numba, about
0.05 us a record; the ``fast`` extra installs it), used when numba imports, and
``scan_records_py`` (pure Python, about 1 us a record) otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mqtool.formats._binary import Buffer

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["RecordScanUnsure", "compiled_available", "raw_uvarint", "scan_records", "scan_records_py"]

_Kernel = Callable[[Any, int, int, int], tuple[bool, int, int, int, bool]]
_kernel: _Kernel | None = None
_frombuffer: Callable[[Buffer], Any] | None = None
_loaded = False


def _load() -> _Kernel | None:
    """The compiled walk, imported (and compiled, or loaded from numba's cache) at first use."""
    global _kernel, _frombuffer, _loaded
    if not _loaded:
        _loaded = True
        try:
            import numpy as np

            from mqtool.formats.kafka import _record_scan_jit
        except ImportError:
            return None
        _kernel = _record_scan_jit.scan
        _frombuffer = lambda buf: np.frombuffer(buf, dtype=np.uint8)  # noqa: E731 (no copy)
    return _kernel


def compiled_available() -> bool:
    """Whether ``scan_records`` runs the compiled walk (numba is installed)."""
    return _load() is not None


def scan_records(buf: Buffer, pos: int, end: int, count: int, *, compiled: bool = True) -> tuple[int, int, int, bool]:
    """Walk the ``count`` records filling ``buf[pos:end]``: ``(first offset delta, last offset
    delta, max timestamp delta, deltas >= 0 and increasing)``, or ``RecordScanUnsure``.
    ``compiled``: with the compiled walk when numba is installed (loading it the first time)."""
    kernel = _load() if compiled else None
    if kernel is None:
        return scan_records_py(buf, pos, end, count)
    assert _frombuffer is not None
    ok, first, last, max_ts, increasing = kernel(_frombuffer(buf), pos, end, count)
    if not ok:
        raise RecordScanUnsure
    return first, last, max_ts, increasing


class RecordScanUnsure(Exception):
    """The fast scanner met something it does not accept; the precise walk
    (``record_batch.iter_records``) decides."""


def raw_uvarint(buf: Buffer | npt.NDArray[np.uint8], p: int, limit: int, max_bytes: int) -> tuple[int, int]:
    """The raw (un-zig-zagged) varint at ``p``, all its bytes before ``limit``, and the position
    after it; ``(-1, -1)`` when it is longer than ``max_bytes`` or cut by ``limit``.

    The one varint reader of the fast record walks: ``scan_records_py`` and
    ``record_columns.frame_records`` (its record lengths) call it, and the compiled walk
    (``_record_scan_jit``) compiles this same function with numba.  The precise walk
    (``record_batch``) reads its varints with its own errors.  numba's on-disk cache of the
    compiled walk is keyed on its own file, not on this one: after changing this function,
    delete its cache files (``__pycache__/_record_scan_jit.*.nb[ci]``).
    """
    raw = 0
    shift = 0
    for _ in range(max_bytes):
        if p >= limit:
            return -1, -1
        b = buf[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return raw, p
        shift += 7
    return -1, -1


def scan_records_py(buf: Buffer, pos: int, end: int, count: int) -> tuple[int, int, int, bool]:
    """The pure-Python walk of ``count`` v2 records in ``buf[pos:end]``, without building them.

    Returns ``(first offset delta, last offset delta, max timestamp delta, deltas increasing)``.
    Raises ``RecordScanUnsure`` for anything unusual (a structure error, or a rare encoding this fast
    path leaves to ``record_batch.iter_records``, which then gives the exact answer); it never
    accepts bytes the exact decoder would reject.  Written for speed: one- and two-byte varints
    inline, the rest through ``raw_uvarint`` (bounded by ``end``: a varint reaching past it
    is refused here, where a record reaching past it was refused anyway).
    """
    first = last = 0
    increasing = True
    max_ts = -(1 << 63)
    i = 0
    try:
        while i < count:
            b = buf[pos]  # record length
            if b < 0x80:
                p = pos + 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    p = pos + 2
                else:
                    b, p = raw_uvarint(buf, pos, end, 5)
            if p < 0 or b & 1 or b >= 1 << 32:
                raise RecordScanUnsure
            rec_end = p + (b >> 1)
            b = buf[p + 1]  # timestamp delta, after the attributes byte
            if b < 0x80:
                p += 2
            else:
                c = buf[p + 2]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    p += 3
                else:
                    b, p = raw_uvarint(buf, p + 1, end, 10)
                    if p < 0 or b >= 1 << 64:
                        raise RecordScanUnsure
            ts = (b >> 1) ^ -(b & 1)
            if ts > max_ts:
                max_ts = ts
            b = buf[p]  # offset delta
            if b < 0x80:
                p += 1
            else:
                c = buf[p + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    p += 2
                else:
                    b, p = raw_uvarint(buf, p, end, 5)
                    if p < 0 or b >= 1 << 32:
                        raise RecordScanUnsure
            if b & 1:
                increasing = False
                od = (b >> 1) ^ -1
            else:
                od = b >> 1
                if i and od <= last:
                    increasing = False
            if not i:
                first = od
            last = od
            b = buf[p]  # key length: any negative length is a null key
            if b < 0x80:
                p += 1
            else:
                c = buf[p + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    p += 2
                else:
                    b, p = raw_uvarint(buf, p, end, 5)
                    if p < 0 or b >= 1 << 32:
                        raise RecordScanUnsure
            if not b & 1:
                p += b >> 1
            b = buf[p]  # value length
            if b < 0x80:
                p += 1
            else:
                c = buf[p + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    p += 2
                else:
                    b, p = raw_uvarint(buf, p, end, 5)
                    if p < 0 or b >= 1 << 32:
                        raise RecordScanUnsure
            if not b & 1:
                p += b >> 1
            h = buf[p]  # headers count
            p += 1
            if h:
                if h >= 0x80 or h & 1:
                    raise RecordScanUnsure
                h >>= 1
                if h > rec_end - p:
                    raise RecordScanUnsure
                while h:
                    b = buf[p]  # header key length (never null)
                    if b < 0x80:
                        p += 1
                    else:
                        b, p = raw_uvarint(buf, p, end, 5)
                        if p < 0 or b >= 1 << 32:
                            raise RecordScanUnsure
                    if b & 1:
                        raise RecordScanUnsure
                    p += b >> 1
                    b = buf[p]  # header value length
                    if b < 0x80:
                        p += 1
                    else:
                        b, p = raw_uvarint(buf, p, end, 5)
                        if p < 0 or b >= 1 << 32:
                            raise RecordScanUnsure
                    if not b & 1:
                        p += b >> 1
                    h -= 1
            if p != rec_end:
                raise RecordScanUnsure
            pos = rec_end
            i += 1
    except IndexError:
        raise RecordScanUnsure from None
    if pos != end:
        raise RecordScanUnsure
    return first, last, max_ts, increasing
