"""The C heap under a streaming dump.

A dump's lean JSON path builds each batch of rows in a few buffers of some MiB (the store
model's 8 MiB pieces, the rows' text, the batch written), freed and allocated again for every
batch.  glibc's malloc gives a block above its mmap threshold (128 KiB at first, raised
dynamically up to the size of the largest block freed) fresh pages from the kernel, and trims
the heap's top back to the kernel once more than twice that threshold is free there: over a
128 MiB CommitLog ``dump --jsonl`` took 91,000 page faults, a tenth of its CPU time, where a heap
that keeps those buffers takes 23,000.  :func:`keep_batch_buffers` sets the two thresholds
(``mallopt`` ``M_MMAP_THRESHOLD`` to 32 MiB, its ceiling on 64-bit glibc, and
``M_TRIM_THRESHOLD`` to 128 MiB) for the rest of the process; the memory in use is the same,
only returned to the kernel later.  Elsewhere than glibc (no ``mallopt``, or one that refuses
the values) nothing changes.
"""

from __future__ import annotations

import ctypes

#: ``malloc.h``'s parameter numbers
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20

_kept = False


def keep_batch_buffers() -> bool:
    """Keep blocks up to 32 MiB on the heap, and up to 128 MiB of free heap before trimming;
    True when the C library took both values (glibc), False when it has no ``mallopt`` or
    refused one."""
    global _kept
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _kept = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _kept


def buffers_kept() -> bool:
    """Whether :func:`keep_batch_buffers` took effect in this process: a buffer that grows as it
    is written (``bytes`` formatting) is then cheap; otherwise each of its reallocations maps
    fresh pages, and text is better joined from parts of known size."""
    return _kept


__all__ = ["buffers_kept", "keep_batch_buffers"]
