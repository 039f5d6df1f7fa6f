"""One reading for several commands (``report``), Kafka: inside ``shared_reading`` the store
model's reading (``store.model.kafka.read_store``) also folds each segment into ``LogSegment.recover`` and into the
block's fold, and keeps each segment's result; a later reading of the same segment, its files
unchanged since, is handed the kept result instead of reading the file again.  ``kept_next_offset``,
``kept_tail``, ``kept_heads`` and ``kept_largest_timestamp`` answer from a kept reading what
``kafka_reads`` and ``kafka_recovery`` would read the file for (``LogSegment.readNextOffset``, the
entries before an ``.index`` entry, a segment's largest timestamp).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from mqtool.findings.code_ids import (
    KAFKA_FILE_UNREADABLE,
)
from mqtool.store.model.kafka_entries import Folds, SegmentFold
from mqtool.store.model.kafka_segment import (
    WALK_CHUNK,
    DeepRangeTask,
    SegmentResult,
    SegmentTask,
)

# --- one reading for several commands (report) ------------------------------------------------------------

#: A segment as read: its task (without what only says how to read it) and the identity and state
#: (device, inode, size, modification time) of its ``.log`` and index files when it was read.
_Key = tuple[SegmentTask, tuple[tuple[int, int, int, int] | None, ...]]

#: The index findings, which a reading that does not read the indexes (``SegmentTask.indexes``
#: False) does not state.
_INDEX_FAMILY = "index"


@dataclass
class _Shared:
    """The segment readings kept inside ``shared_reading``, and the fold its ``read_store`` runs."""

    fold: SegmentFold | None
    #: each segment read with a recovery fold: the fold its task ran, its result
    kept: dict[_Key, tuple[SegmentFold | Folds | None, SegmentResult]] = field(default_factory=dict)
    #: ``.log`` path -> the key of its last kept reading
    logs: dict[str, _Key] = field(default_factory=dict)

    def keep(self, task: SegmentTask | DeepRangeTask, res: SegmentResult, seconds: float | None) -> None:
        """Keep a segment's reading made here (with its recovery fold) for the next reader."""
        if isinstance(task, SegmentTask) and task.recovery_interval is not None and res.recovery is not None and (key := _key(task)) is not None:
            kept = copy.deepcopy(res)
            kept.read_seconds = seconds
            self.kept[key] = (task.fold, kept)
            self.logs[task.log] = key

    def result(self, task: SegmentTask, *, recovery: bool) -> SegmentResult | None:
        """The kept reading of ``task``'s segment -- the same task, or the same with the indexes
        read where ``task`` does not read them (their findings left out); its files unchanged
        since; read with ``task``'s fold when it has one -- as a copy (``recovery``: with the
        recovery fold's scan); None when there is none."""
        key = _key(task) if not task.kraft_snapshot else None
        if key is None:
            return None
        got = self.kept.get(key)
        narrow = False
        if got is None and not task.indexes:
            got, narrow = self.kept.get((replace(key[0], indexes=True), key[1])), True
        if got is None:
            return None
        fold, res = got
        made: object | None = None
        if task.fold is not None:
            if res.fold_result is None:
                return None
            if fold == task.fold:
                made = res.fold_result
            elif isinstance(fold, Folds):  # read with several folds, this one's among them
                ok, made = fold.part(task.fold, res.fold_result)
                if not ok:
                    return None
            else:
                return None
        out = replace(
            res,
            findings=list(res.findings),
            indexes=copy.deepcopy(res.indexes),
            epochs=copy.deepcopy(res.epochs),
            magics=set(res.magics),
            codecs=set(res.codecs),
            recovery=copy.deepcopy(res.recovery) if recovery else None,
            fold_result=copy.deepcopy(made) if task.fold is not None else None,
        )
        if narrow:
            own = {p for p in (task.index, task.timeindex, task.txnindex) if p is not None}
            out.findings = [f for f in out.findings if f.family != _INDEX_FAMILY and not (f.code == KAFKA_FILE_UNREADABLE and f.path in own)]
            out.indexes = []
        return out

    def largest_timestamp(self, log: str) -> int | None:
        """``SegmentResult.largest_timestamp`` of the kept reading of ``log``, when the file is
        unchanged since."""
        res = self.of_log(log)
        return res.largest_timestamp if res is not None else None

    def of_log(self, log: str) -> SegmentResult | None:
        """The kept reading of ``log`` (not a copy), when the file is unchanged since."""
        key = self.logs.get(log)
        if key is None or _stat(log) != key[1][0]:
            return None
        return self.kept[key][1]


#: The segment readings kept inside ``shared_reading`` (None: outside it, nothing is kept).
_SHARED: ContextVar[_Shared | None] = ContextVar("mqtool_kafka_shared_reading", default=None)


@contextmanager
def shared_reading(fold: SegmentFold | None = None) -> Iterator[None]:
    """Inside the block, ``read_store`` (validate's reading, in-process or from its pool) also folds
    each segment into ``LogSegment.recover`` (``SegmentResult.recovery``, with the broker's default
    ``index.interval.bytes``) and into ``fold`` (``SegmentResult.fold_result``: stats' counts, so
    the worker that reads a segment counts it too), and keeps each segment's result; a reading
    that takes results is handed the kept one -- the same task, its files unchanged since --
    instead of reading the segment again: recover's plan (``read_store_entries(kept=True)``), a
    consumer of ``fold`` (``read_store_entries(kept=True, fold=fold)``: stats), a ``read_store``
    (lag), ``kafka_reads.largest_batch_timestamp`` (clean's plan).  A command that runs several
    verbs over one store (``report``) reads each segment once.  A reader of the entries themselves
    (dump) still reads them.  The kept results are findings, counts, the recovery's index points
    (one per 4 KiB of log) and what ``fold`` made of each segment."""
    token = _SHARED.set(_Shared(fold))
    try:
        yield
    finally:
        _SHARED.reset(token)


def kept_next_offset(log: str) -> int | None:
    """Inside ``shared_reading``: ``LogSegment.readNextOffset`` of ``log`` walking from position 0
    (``SegmentResult.next_offset``) from a kept reading of the file, unchanged since; else None."""
    shared = _SHARED.get()
    res = shared.of_log(log) if shared is not None else None
    return res.next_offset if res is not None else None


def kept_tail(log: str) -> list[tuple[int, int, bool]] | None:
    """Inside ``shared_reading``: ``SegmentResult.tail`` of a kept reading of ``log`` (unchanged
    since); else None."""
    shared = _SHARED.get()
    res = shared.of_log(log) if shared is not None else None
    return res.tail if res is not None else None


def kept_heads(log: str) -> tuple[list[int], int] | None:
    """Inside ``shared_reading``: ``SegmentResult.heads`` of a kept reading of ``log`` (unchanged
    since): the positions of the file's first entries, one after the other from 0, and where the
    last of them ends; else None."""
    shared = _SHARED.get()
    res = shared.of_log(log) if shared is not None else None
    if res is None or res.heads is None:
        return None
    return list(res.heads[0]), res.heads[1]


def kept_largest_timestamp(log: str) -> int | None:
    """Inside ``shared_reading``: the largest timestamp of the valid entries of ``log``'s first walk
    (``SegmentResult.largest_timestamp``) from a kept reading of the file, unchanged since; else None."""
    shared = _SHARED.get()
    return shared.largest_timestamp(log) if shared is not None else None


def _stat(path: str | None) -> tuple[int, int, int, int] | None:
    if path is None:
        return None
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _key(task: SegmentTask) -> _Key | None:
    log = _stat(task.log)
    if log is None:
        return None
    return (replace(task, recovery_interval=None, cuts=False, piece=WALK_CHUNK, fold=None), (log, _stat(task.index), _stat(task.timeindex), _stat(task.txnindex)))
