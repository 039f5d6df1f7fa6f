"""Derived data a RocketMQ CommitLog should have and does not: the one rule validate and recover apply.

The broker derives two kinds of files from the CommitLog as it dispatches records
(``CommitLog.doDispatch``): ConsumeQueue units (``CommitLogDispatcherBuildConsumeQueue``) and
IndexFile entries (``CommitLogDispatcherBuildIndex`` -> ``IndexService.buildIndex``).  Damage
to those files is judged where they are read (validate's ConsumeQueue and IndexFile phases);
this module states what is *missing* from them while the CommitLog still holds the records:

* **a queue's head** (RMQ-CQ-MISSING-HEAD): the queue's first ConsumeQueue file starts after
  the first QUEUEOFFSET the CommitLog holds of that queue.  The broker deletes ConsumeQueue
  files only when every unit of them points below the CommitLog's first file
  (``ConsumeQueue.deleteExpiredFile`` after ``CommitLog.deleteExpiredFile``), so a first file
  that starts later lost files whose records are still there: the broker's min offset of the
  queue is its first file's (``ConsumeQueue.getMinOffsetInQueue``), and consumers never reach
  the records before it.  :func:`queue_heads` finds them, :func:`queue_head_finding` states one.
* **keyed records no IndexFile covers** (RMQ-IDX-MISSING): ``IndexService.buildIndex`` puts
  ``topic#UNIQ_KEY`` and ``topic#key`` for every KEYS token of every record but a rolled-back
  transaction record (:func:`is_indexed`), in CommitLog order, each IndexFile from its first
  entry's offset (``IndexHeader.beginPhyOffset``) to its last's (``endPhyOffset``); a new file
  starts at the record the previous one indexed last.  The IndexFiles therefore cover the
  keyed records of ``[beginPhyOffset, endPhyOffset]`` of each file (:func:`index_coverage`),
  and a keyed record outside every such range (``index/`` absent, its head or a middle file
  deleted, or the IndexFiles ending before the CommitLog's last keyed records) is one a query by
  key cannot find.  The broker re-indexes only what it re-dispatches after a crash
  (``CommitLog.recoverAbnormally``; ``buildIndex`` skips offsets below the newest file's
  ``endPhyOffset``), never the records before its IndexFiles, and never on a normal start.
  :func:`unindexed_records` counts them, :func:`index_missing_finding` states it.

``mqtool recover`` rebuilds both from the CommitLog (``dispatch-cq`` for the head units,
``rebuild-index`` for the IndexFiles), so validate after it is clean.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mqtool.errors import MqError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import RMQ_CQ_MISSING_HEAD, RMQ_IDX_MISSING
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.columns import CommitLogColumns
from mqtool.formats.rocketmq.commitlog import SYSFLAG_TRANSACTION_MASK, SYSFLAG_TRANSACTION_ROLLBACK, MessageRecord
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, read_small_file
from mqtool.store.model import commitlog_walk as cl_walk
from mqtool.store.model.commitlog import read_file_columns
from mqtool.store.model.queue_offsets import QueueEdge
from mqtool.store.writer import index_keys

QueueKey = tuple[str, int]


# --- ConsumeQueue heads ------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueHead:
    """The records of ``topic``/``queue_id`` the CommitLog holds below its first ConsumeQueue
    file: queue offsets ``[first, stop)`` (``stop``: the first file's first queue offset, or the
    queue's last record + 1 when that is lower)."""

    topic: str
    queue_id: int
    first: int
    stop: int
    first_file: Path

    @property
    def count(self) -> int:
        return self.stop - self.first


def queue_heads(edges: Mapping[QueueKey, QueueEdge], segments: Mapping[QueueKey, list[rmq.Segment]]) -> list[QueueHead]:
    """The queues of ``segments`` (their ConsumeQueue files, which exist) whose first file starts
    after the first QUEUEOFFSET ``edges`` (the CommitLog's queue offsets,
    ``store.model.queue_offsets``) holds of them: their head files are missing."""
    out: list[QueueHead] = []
    for key, segs in sorted(segments.items()):
        edge = edges.get(key)
        if not segs or edge is None:
            continue
        start = segs[0].base // cqf.CQ_UNIT_SIZE
        if edge.first < start:
            out.append(QueueHead(key[0], key[1], edge.first, min(start, edge.last_queue_offset + 1), segs[0].path))
    return out


def queue_head_finding(store: rmq.RocketMQStore, head: QueueHead, *, live: bool = False) -> Finding:
    """RMQ-CQ-MISSING-HEAD for ``head`` (on the queue's directory)."""
    return Finding(
        RMQ_CQ_MISSING_HEAD,
        str(rmq.queue_dir(store, head.topic, head.queue_id)),
        None,
        f"{head.topic}/{head.queue_id}: expected the queue's first ConsumeQueue file to hold queue offset {head.first} (the CommitLog holds "
        f"the queue's records from there), found {head.first_file.name} starting at queue offset {head.stop}: {head.count} record(s) "
        f"(queue offsets {head.first}..{head.stop - 1}) are in no ConsumeQueue file, and consumers never reach them (the broker's min "
        "offset of the queue is its first file's); `mqtool recover` rebuilds the missing file(s) from the CommitLog",
        details={"topic": head.topic, "queue_id": head.queue_id, "from_queue_offset": head.first, "to_queue_offset": head.stop, "missing_units": head.count},
        severity=Severity.info if live else None,
    )


# --- IndexFile coverage ------------------------------------------------------------------------


def is_indexed(record: MessageRecord) -> bool:
    """``IndexService.buildIndex`` puts keys for the record: it has a UNIQ_KEY or KEYS and is not a
    rolled-back transaction record."""
    return (record.sys_flag & SYSFLAG_TRANSACTION_MASK) != SYSFLAG_TRANSACTION_ROLLBACK and bool(index_keys(record))


@dataclass(frozen=True)
class IndexCoverage:
    """The commitlog offsets the IndexFiles cover: ``ranges`` of ``[first, last]`` (both ends
    included: the records indexed first and last), sorted and merged, of every IndexFile holding
    an entry; ``files``: how many IndexFiles there are; ``unknown``: an IndexFile could not be
    read (its geometry unknown, or an I/O error): what it covers is not known, so no keyed record
    is called missing (its own finding says what is wrong); ``expected``: :func:`index_expected`."""

    ranges: tuple[tuple[int, int], ...]
    files: int
    unknown: bool = False
    expected: bool = True
    #: ``messageIndexEnable`` as broker.conf states it (None: not given): what ``expected`` follows
    configured: bool | None = None

    def covers(self, offset: int) -> bool:
        i = bisect.bisect_right(self.ranges, (offset, 1 << 63)) - 1
        return i >= 0 and self.ranges[i][0] <= offset <= self.ranges[i][1]

    def gaps(self, start: int, stop: int) -> list[tuple[int, int]]:
        """Where the records of ``[start, stop)`` that no range covers lie, as ``[from, to)`` runs a
        walk can start at: ``from`` is ``start`` or the last record a range covers (a record
        offset, itself covered: the walk starts there and the records after it are the uncovered
        ones), ``to`` the next range's first record or ``stop``."""
        out: list[tuple[int, int]] = []
        at = start
        for low, high in self.ranges:
            if high < at:
                continue
            if low >= stop:
                break
            if low > at:
                out.append((at, low))
            at = max(at, high)
        if at < stop:
            out.append((at, stop))
        return out


def index_expected(store: rmq.RocketMQStore, configured: bool | None = None) -> bool:
    """Whether the broker writes IndexFiles for this store: what broker.conf's
    ``messageIndexEnable`` says (``configured``, when given: ``CommitLogDispatcherBuildIndex``
    builds nothing when it is false); else whether it wrote any: ``index/`` exists (the broker
    creates it with its first IndexFile), or the checkpoint records an IndexFile flush
    (``indexMsgTimestamp``, set by ``IndexService.flush``).  Neither: the broker most likely runs
    with ``messageIndexEnable=false``, which nothing else in the store says."""
    if configured is not None:
        return configured
    if store.index_dir.is_dir():
        return True
    try:
        return cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20)).index_msg_timestamp > 0
    except (MqError, OSError):
        return False


def _file_span(view: rmq.IndexFileView) -> tuple[int, int] | None:
    """``[first, last]`` commitlog offsets an IndexFile's entries cover: its header's
    ``beginPhyOffset``/``endPhyOffset`` widened by its first and last written entries (a damaged
    header field, RMQ-IDX-HEADER, does not shrink what the entries cover); None without entries."""
    header, geo = view.header, view.geometry
    buf = view.buf
    assert buf is not None  # an open view
    count = min(header.effective_index_count, geo.index_num)
    if count <= 1:
        return None
    values = [header.begin_phy_offset, header.end_phy_offset]
    for number in (1, count - 1):
        entry = idxf.decode_index_entry(buf, geo.entry_position(number))
        if entry.key_hash or entry.phy_offset:
            values.append(entry.phy_offset)
    values = [v for v in values if v >= 0]
    return (min(values), max(values)) if values else None


def index_coverage(
    store: rmq.RocketMQStore, *, hash_slot_num: int | None = None, index_num: int | None = None, message_index_enable: bool | None = None
) -> IndexCoverage:
    """The IndexFiles' coverage (:class:`IndexCoverage`): each file's span (``_file_span``), read
    with the geometry its size gives (or ``hash_slot_num``/``index_num``); ``message_index_enable``:
    broker.conf's ``messageIndexEnable`` when given (``index_expected``)."""
    spans: list[tuple[int, int]] = []
    files = store.index_files()
    unknown = False
    for path in files:
        try:
            with rmq.IndexFileView(path, hash_slot_num=hash_slot_num, index_num=index_num) as view:
                span = _file_span(view)
        except MqError:
            unknown = True
            continue
        if span is not None:
            spans.append(span)
    merged: list[tuple[int, int]] = []
    for low, high in sorted(spans):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return IndexCoverage(tuple(merged), len(files), unknown, index_expected(store, message_index_enable), message_index_enable)


@dataclass
class Unindexed:
    """Keyed records (:func:`is_indexed`) no IndexFile covers: how many, and the commitlog
    offsets of the first and the last."""

    count: int = 0
    first: int | None = None
    last: int | None = None

    def add(self, offsets: list[int]) -> None:
        if not offsets:
            return
        self.count += len(offsets)
        self.first = offsets[0] if self.first is None else min(self.first, offsets[0])
        self.last = offsets[-1] if self.last is None else max(self.last, offsets[-1])


def unindexed_records(store: rmq.RocketMQStore, coverage: IndexCoverage, end: int, keyed: Mapping[Path, np.ndarray] | None = None) -> Unindexed:
    """The keyed records of ``[commitlog min, end)`` (``end``: where the CommitLog's valid data
    ends) outside ``coverage``.  Only the uncovered runs are read (``IndexCoverage.gaps``: on a
    store whose index is complete, the records after the newest IndexFile's last entry); a run
    starts at a file's start or at a record an IndexFile names, so it is walked from there.  A
    healthy file wholly in a run is read as columns; a broken record ends a file's walk (its own
    finding says so), a body CRC mismatch does not (the broker serves and indexes that record).
    ``keyed``: the file positions of the keyed records of healthy files a reading read already (by
    path: ``keyed_positions`` of their columns), taken for a file wholly in a run instead of
    reading it again."""
    out = Unindexed()
    gaps = coverage.gaps(store.commitlog_min_offset, end)
    if not gaps:
        return out
    size = store.commitlog_file_size
    segments = [seg for seg in store.commitlog if seg.size > 0]
    for i, seg in enumerate(segments):
        span = size or seg.size
        for low, high in gaps:
            if high <= seg.base or low >= seg.base + span:
                continue
            start = max(low, seg.base) - seg.base
            stop = min(high, seg.base + span) - seg.base
            known = keyed.get(seg.path) if keyed is not None and start == 0 and stop >= span else None
            found = [seg.base + int(p) for p in known.tolist()] if known is not None else _keyed_in_file(seg, start, stop, span, last=i == len(segments) - 1)
            out.add([o for o in found if not coverage.covers(o)])
    return out


def keyed_positions(columns: CommitLogColumns) -> np.ndarray:
    """File positions of the records of a healthy file's columns the broker indexes: those with
    keys (``IndexService.buildIndex``: UNIQ_KEY, KEYS), but a rolled-back transaction record."""
    rows = np.unique(columns.key_record)
    rows = rows[(columns.sys_flag[rows] & SYSFLAG_TRANSACTION_MASK) != SYSFLAG_TRANSACTION_ROLLBACK]
    return np.asarray(columns.position[rows])


def _keyed_in_file(seg: rmq.Segment, start: int, stop: int, file_size: int, *, last: bool) -> list[int]:
    """Commitlog offsets of the keyed records at file positions ``[start, stop)`` of ``seg``."""
    try:
        f = ReadOnlyFile(seg.path)
    except MqError:
        return []
    with f:
        if start == 0 and stop >= file_size:
            cols = read_file_columns(f, seg.base, file_size=file_size, is_last=last)
            if cols is not None:
                return [seg.base + int(p) for p in keyed_positions(cols.columns).tolist()]
        out: list[int] = []
        # the walk's recovery reading of the range (no byte after ``stop`` read), the healthy
        # records as columns: a body CRC mismatch its frame survives is served and indexed by the
        # broker (kept), a broken record ends the file's data, stale data is read as records
        task = cl_walk.CommitLogTask(
            str(seg.path), seg.base, file_size, last, start=start, limit=stop, recovery=True, keep_damaged=True, stale_ends=False, key_hashes=True
        )
        try:
            for ev in cl_walk.read_events(f, task):
                if isinstance(ev, cl_walk.Stretch):
                    out.extend(seg.base + ev.position + p for p in keyed_positions(ev.columns).tolist())
                elif isinstance(ev, cl_walk.Record) and is_indexed(ev.record):
                    out.append(seg.base + ev.position)
        except MqError:  # unreadable: its own finding
            pass
        return out


def index_missing_finding(store: rmq.RocketMQStore, coverage: IndexCoverage, unindexed: Unindexed, *, live: bool = False) -> Finding | None:
    """RMQ-IDX-MISSING when keyed records are in no IndexFile (on ``index/``); None when every
    one is, or when an IndexFile could not be read (``coverage.unknown``).  A warning; info on a
    live store (a writer holds the lock: the index normally trails the CommitLog) and on a store
    whose broker never wrote an IndexFile (``index_expected``: most likely
    ``messageIndexEnable=false``; recover builds them only with ``--rebuild-index``)."""
    if not unindexed.count or coverage.unknown:
        return None
    if not store.index_dir.is_dir():
        where = "index/ is absent"
    elif not coverage.ranges:
        where = f"index/ holds {coverage.files} IndexFile(s) with no entry"
    else:
        where = "the IndexFiles cover commitlog offsets " + ", ".join(f"{a}..{b}" for a, b in coverage.ranges)
    head = (
        f"expected every record with keys (UNIQ_KEY, KEYS) in an IndexFile, found {unindexed.count} in none (commitlog offsets "
        f"{unindexed.first}..{unindexed.last}; {where}): a query by key does not find them"
    )
    if not coverage.expected and coverage.configured is False:
        text = head + "; broker.conf sets messageIndexEnable=false: the broker builds no IndexFile (`mqtool recover --rebuild-index` builds them)"
    elif not coverage.expected:
        text = (
            head + "; the checkpoint records no IndexFile either (indexMsgTimestamp 0): the broker most likely runs with "
            "messageIndexEnable=false (`mqtool recover --rebuild-index` builds them)"
        )
    else:
        text = (
            head + ", and the broker re-indexes none of them on a normal start; `mqtool recover` rebuilds the IndexFiles from the "
            "CommitLog" + (" (a writer holds the lock: the index normally trails the CommitLog)" if live else "")
        )
    return Finding(
        RMQ_IDX_MISSING,
        str(store.index_dir),
        None,
        text,
        details={"unindexed_records": unindexed.count, "from_commitlog_offset": unindexed.first, "to_commitlog_offset": unindexed.last},
        severity=Severity.info if live or not coverage.expected else None,
    )


__all__ = [
    "IndexCoverage",
    "QueueHead",
    "Unindexed",
    "index_coverage",
    "index_expected",
    "index_missing_finding",
    "is_indexed",
    "queue_head_finding",
    "queue_heads",
    "unindexed_records",
]
