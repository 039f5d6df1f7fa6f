"""The reading of one RocketMQ ConsumeQueue file as columns, for readers that list its units.

A ConsumeQueue file is a run of 20-byte units (commitLogOffset, size, tagsCode; upstream
``ConsumeQueue``).  The broker's reading of a queue stops at the first slot that is not a unit
(``ConsumeQueue.recover`` keeps units while ``offset >= 0 && size > 0``); the queue's data ends
there, in this file, and later files hold nothing of it.  :func:`read_cq_file` reads a file in
one piece (the files are 6 MB by default) and gives its units up to that point, and whether the
queue ends in it; :func:`read_cq_recovery` reads it as recover's plan needs it (where the broker's
recovery cuts it); :func:`units_past_end` counts a queue's units that recovery cuts;
:class:`ExtUnits` looks tagsCodes up in a queue's ``ConsumeQueueExt`` files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mqtool.errors import MqError, StoreLayoutError
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.store.files import Readable, ReadOnlyFile

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class CqFileUnits:
    """The units of one ConsumeQueue file before its data ends (``cq_units`` columns), and
    whether the queue's data ends in this file (a slot that is not a unit, or a partial unit)."""

    units: np.ndarray
    queue_ends: bool


def read_cq_file(f: Readable, *, limit: int = 64 << 20) -> CqFileUnits:
    """The units of the ConsumeQueue file ``f``; a file over ``limit`` bytes is refused (no
    ConsumeQueue is that big: 300,000 units make 6 MB)."""
    if f.size > limit:
        raise StoreLayoutError("file too large to read at once", path=f.path, expected=f"at most {limit} bytes", found=f"{f.size} bytes")
    import numpy as np  # here: recover's plan and info import this module without loading numpy

    from mqtool.formats.rocketmq.unit_columns import cq_units

    data = f.pread(0, f.size)
    units = cq_units(data)
    ends = np.flatnonzero((units["offset"] < 0) | (units["size"] <= 0))
    kept = int(ends[0]) if len(ends) else len(units)
    return CqFileUnits(units[:kept], kept < len(units) or len(data) % cqf.CQ_UNIT_SIZE != 0)


@dataclass(frozen=True)
class CqRecovery:
    """One ConsumeQueue file as the broker's recovery of its queue reads it, against the CommitLog's
    valid end (``process_offset``): upstream ``ConsumeQueue.recover`` keeps units while they are
    units, ``ConsumeQueue.truncateDirtyLogicFiles`` cuts from the first unit that points at or past
    the CommitLog's end (a file whose first unit does is deleted).

    ``cut_at``: the file position where the queue's data ends in this file (None: every slot of
    the file is a unit below the end); ``cause``: ``"past-end"`` (a unit at or past the CommitLog
    end is there) or ``"invalid"`` (a slot that is not a unit: zeros or stale data);
    ``tail_length``: the bytes from ``cut_at`` to the last non-zero byte (0: only zeros follow);
    ``max_offset`` / ``max_physic_offset``: the queue offset after the last unit kept and the
    CommitLog offset of the last non-filler unit kept (None when the file kept none of them);
    ``nonzero``: whether the file holds any non-zero byte."""

    cut_at: int | None
    cause: str
    tail_length: int
    max_offset: int | None
    max_physic_offset: int | None
    nonzero: bool


def read_cq_recovery(f: Readable, base: int, process_offset: int, *, limit: int = 64 << 20) -> CqRecovery:
    """:class:`CqRecovery` of the ConsumeQueue file ``f`` (named ``base``)."""
    if f.size > limit:
        raise StoreLayoutError("file too large to read at once", path=f.path, expected=f"at most {limit} bytes", found=f"{f.size} bytes")
    data = f.pread(0, f.size)
    walker = cqf.CqWalker(data)
    cut_at: int | None = None
    max_offset: int | None = None
    max_physic: int | None = None
    for pos, unit in walker:
        if not unit.is_filler and unit.commitlog_offset + unit.size > process_offset:
            cut_at = pos
            break
        max_offset = cqf.cq_queue_offset(base, pos + cqf.CQ_UNIT_SIZE)
        if not unit.is_filler:
            max_physic = unit.commitlog_offset
    cause = "past-end"
    if cut_at is None:
        assert walker.end is not None
        if walker.end.kind != "eof":
            cut_at, cause = walker.end.position, "invalid"
    tail = len(data[cut_at:].rstrip(b"\x00")) if cut_at is not None else 0
    return CqRecovery(cut_at, cause, tail, max_offset, max_physic, bool(data.strip(b"\x00")))


def units_past_end(files: list[tuple[int, Path]], process_offset: int, max_offset: int) -> int:
    """How many units of a queue point at or past the CommitLog's valid end (``process_offset``):
    the ones upstream ``ConsumeQueue.truncateDirtyLogicFiles`` cuts at the broker's next start.
    ``files``: the queue's non-empty files as ``(base, path)``, oldest first; ``max_offset``: the
    queue offset after its last unit.  Reads the files from the newest back, only as far as the
    first one whose units all stay below the end."""
    cut = max_offset
    for base, path in reversed(files):
        with ReadOnlyFile(path) as f:
            rec = read_cq_recovery(f, base, process_offset)
        if rec.cut_at is None or rec.cause != "past-end":
            break
        cut = cqf.cq_queue_offset(base, rec.cut_at)
        if rec.cut_at > 0:
            break
    return max(max_offset - cut, 0)


class _ClosableFile(Readable, Protocol):
    def close(self) -> None: ...


class ExtUnits:
    """The ConsumeQueueExt files of one queue (``(base, path, size)`` each; upstream
    ``ConsumeQueueExt``), read a file at a time, whole, as units are looked up by address."""

    def __init__(self, files: list[tuple[int, str, int]], open_file: Callable[[str], _ClosableFile]) -> None:
        self.files = sorted(files)
        self.open_file = open_file
        self._cache: tuple[str, bytes] | None = None

    def tags_code(self, ext_offset: int) -> int | None:
        """The tagsCode of the ext unit at ``ext_offset`` (None: no unit there)."""
        for base, path, size in reversed(self.files):
            if base <= ext_offset < base + size:
                if self._cache is None or self._cache[0] != path:
                    f = self.open_file(path)
                    try:
                        if f.size > 64 << 20:
                            raise StoreLayoutError("file too large to read at once", path=path, expected=f"at most {64 << 20} bytes", found=f"{f.size} bytes")
                        self._cache = (path, f.pread(0, f.size))
                    finally:
                        f.close()
                try:
                    return cqf.decode_cq_ext_unit(self._cache[1], ext_offset - base).tags_code
                except MqError:
                    return None
        return None
