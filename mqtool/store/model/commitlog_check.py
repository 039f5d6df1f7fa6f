"""The judge of one RocketMQ CommitLog file: every record, every damaged region, how the file ends.

:func:`check_commitlog_file` folds the file's one reading (``store.model.commitlog_walk``: its
healthy stretches as columns, each record the precise decoder reads around an anomaly, each
damaged region with its finding, how the file ends) with the queue-offset continuity rule and,
for a file that is columns only, the bulk cross-checks of its ConsumeQueue units and IndexFile
keys, into a :class:`CommitLogFileResult` (picklable: validate runs tasks in worker processes).
It never raises on data.  ``CommitLogTask.live``: a writer holds the store's lock, and a newest
file whose tail looks wrong is read a second time a moment later: a tail that grew meanwhile was
an append in progress (RMQ-CL-IN-PROGRESS).

Each damage is reported once, where it is: the result carries the commitlog ranges it reported
(broken records, skipped regions, a torn tail, an unreadable file), so that ConsumeQueue units
and IndexFile entries pointing into them are not reported again (:func:`in_ranges`), and the
records its skipped bytes may have held (``store.model.queue_offsets``).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol, cast

import numpy as np

from mqtool.errors import MqError, StoreIOError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import RMQ_CL_GARBAGE, RMQ_CL_VALID_END, RMQ_FILE_UNREADABLE
from mqtool.formats.rocketmq.columns import ColumnDataEnd, CommitLogColumns, concat_columns
from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import rocketmq as model
from mqtool.store.model.commitlog_walk import (
    CommitLogTask,
    Damage,
    Event,
    FileWalked,
    Handover,
    Rebased,
    Record,
    RecoveryEnd,
    Served,
    Stretch,
    read_events,
)
from mqtool.store.model.commitlog_walk import _walk_commitlog_file as _walk_commitlog_file
from mqtool.store.model.queue_offsets import (
    COLUMN_WALK_MIN_SIZE,
    KEPT_COLUMN_ROWS,
    FileQueueOffsets,
    KeptPrefix,
    KeptReading,
    QueueOffsets,
    RecordsRead,
    file_stat,
    keep,
    sharing,
)

__all__ = [
    "CommitLogFileResult",
    "CommitLogJoin",
    "CommitLogTask",
    "Damage",
    "Event",
    "FileWalked",
    "Handover",
    "Rebased",
    "Record",
    "RowsFold",
    "Served",
    "Stretch",
    "check_commitlog_file",
    "commitlog_tasks",
    "read_events",
]


@dataclass
class CommitLogFileResult:
    path: str
    base: int
    size: int
    records: int = 0
    valid_end: int = 0  # file position where valid data ends
    findings: list[Finding] = field(default_factory=list)
    max_store_timestamp: int = 0
    last_store_timestamp: int = 0
    bytes_read: int = 0
    #: The commitlog offset the records say this file starts at, when that is not its name
    #: (a misnamed file: its records are all off by the same amount).
    content_base: int | None = None
    #: Commitlog offset ranges [start, end) already reported (broken records, skipped regions,
    #: a torn tail): ConsumeQueue units and index entries pointing into them are not reported again.
    damaged: list[tuple[int, int]] = field(default_factory=list)
    #: File position of the first broken record (the walk goes on past it to report the rest).
    first_broken: int | None = None
    #: Fast path only: per topic/queue, the queue-offset runs [first, stop) whose ConsumeQueue
    #: units were verified against this file's records (they need no per-unit check).
    verified: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    #: ``CommitLogTask.rows`` after the reading fed it (from a worker process: its copy)
    rows: object = None
    #: ``CommitLogTask.keep_reading``: what a reader of the whole file would see of it, when it
    #: is healthy (``queue_offsets.keep`` hands it on)
    kept: KeptReading | None = None
    #: Every topic/queue's QUEUEOFFSETs in this file, and the records its skipped bytes may have
    #: held (``store.model.queue_offsets``: the continuity rule every reader applies too).
    offsets: FileQueueOffsets = field(init=False)

    def __post_init__(self) -> None:
        self.offsets = FileQueueOffsets(self.path)


# --- validate's result ---------------------------------------------------------------------------


def check_commitlog_file(task: CommitLogTask) -> CommitLogFileResult:
    """Every record of one CommitLog file and how the file ends.  Never raises on data."""
    res = CommitLogFileResult(task.path, task.base, 0, rows=task.rows)
    try:
        f = ReadOnlyFile(task.path)
    except MqError as exc:
        res.findings.append(Finding(RMQ_FILE_UNREADABLE, task.path, None, str(exc)))
        # as for a read that fails midway: what points into the file is not reported again
        res.damaged.append((task.base, task.base + task.file_size))
        res.offsets.skip(task.file_size)  # and it may have held records of any queue
        return res
    stat = file_stat(task.path) if task.keep_reading else None
    started = time.perf_counter()
    with f:
        res.size = f.size
        try:
            _assemble(task, res, read_events(f, task))
            if res.kept is not None:
                if stat is None or stat != file_stat(task.path):
                    res.kept = None  # the file changed while it was read
                else:
                    res.kept.stat, res.kept.seconds = stat, time.perf_counter() - started
            if task.live and task.is_last and any(x.level is not Severity.info for x in res.findings):
                res = _recheck_live_tail(task, res)
        except StoreIOError as exc:
            res.findings.append(Finding(RMQ_FILE_UNREADABLE, task.path, exc.position, str(exc)))
            # What could not be read is reported once, not again by what points into it.
            start, stop = exc.position or 0, max(task.file_size, f.size)
            res.damaged.append((task.base + start, task.base + stop))
            res.offsets.skip(stop - start)
    res.rows = task.rows
    return res


class RowsFold(Protocol):
    """A fold of the records the broker serves of one CommitLog file (stats' count), fed by
    validate's fold as the file's one reading goes (``CommitLogTask.rows``): each run of records
    as ``RecordRows`` with their TAGS and KEYS texts, in file order, with the commitlog offset the
    file's records start at.  The records are those ``CommitLog.recoverNormally`` takes (up to
    the first broken record, a torn tail or stale data), and a record whose frame holds around a
    failed body CRC (:class:`Served`, its ``code`` the finding's), as the broker serves it."""

    def feed(self, rows: model_cl.RecordRows, base: int) -> None: ...


class _Rows:
    """Feeds ``CommitLogTask.rows`` from the events validate's fold reads."""

    def __init__(self, fold: RowsFold) -> None:
        self.fold = fold
        self.batch: list[model_cl.DecodedRecord] = []
        self.served: model_cl.DecodedRecord | None = None
        self.open = True  # no broken record met yet

    def stretch(self, ev: Stretch, base: int) -> None:
        self.flush(base)
        self.fold.feed(model_cl.column_rows(ev.data, ev.position, ev.walk, True), base)

    def record(self, position: int, record: MessageRecord, code: str | None, base: int) -> None:
        self.batch.append(model_cl.DecodedRecord(position, record, [], code))
        if len(self.batch) >= model_cl.ROWS_BATCH:
            self.flush(base)

    def broken(self, ev: Damage, base: int) -> None:
        served, self.served = self.served, None
        if served is not None and served.position == ev.at and ev.finding is not None:
            self.record(served.position, served.record, ev.finding.code, base)
            return
        self.flush(base)
        self.open = False  # the broker's recovery stops at a broken record: so do its records

    def flush(self, base: int) -> None:
        if self.batch:
            self.fold.feed(model_cl.decoded_rows(self.batch, True), base)
            self.batch = []


def _assemble(task: CommitLogTask, res: CommitLogFileResult, events: Iterator[Event]) -> None:
    """Fold one file's events into ``res``: records, queue offsets (the store model's continuity
    rule, ``FileQueueOffsets.record``), timestamps, findings, the ranges they cover; and, with
    ``task.rows``, feed the records the broker serves to that fold (:class:`RowsFold`)."""
    base = task.base
    offsets = res.offsets
    rows = _Rows(cast("RowsFold", task.rows)) if task.rows is not None else None
    # a healthy file's units and keys are checked in bulk against its columns (``_check_in_bulk``)
    bulk = task.fast and (bool(task.cq_file_size and task.root) or task.keys_dir is not None)
    keeping = task.fast and task.keep_reading and not task.live
    parts: list[tuple[int, CommitLogColumns]] = []
    precise = False  # a record was decoded precisely: the file is not all columns
    # what the recovery's reading takes of a file that is not healthy (its records up to the
    # ``RecoveryEnd``: a recover plan reads none of them again)
    # (body CRCs checked, as the recovery's reading checks them: else a record it stops at reads as healthy)
    prefix = _Prefix(task.is_last, task.served) if keeping and task.check_crc else None
    for ev in events:
        if type(ev) is Record:
            precise = True
            at, rec = ev.position, ev.record
            if prefix is not None:
                prefix.record(at, rec)
            if (broke := offsets.record(at, rec)) is not None:
                res.findings.append(broke)
                res.damaged.append((base + at, base + at + rec.total_size))
            res.records += 1
            res.max_store_timestamp = max(res.max_store_timestamp, rec.store_timestamp)
            res.last_store_timestamp = rec.store_timestamp
            if rows is not None and rows.open:
                rows.record(at, rec, ev.code, base)
        elif isinstance(ev, Damage):
            if prefix is not None:
                prefix.damage(ev)
            if rows is not None and rows.open and ev.cause == "broken":
                rows.broken(ev, base)
            if ev.finding is not None:
                res.findings.append(ev.finding)
            if ev.covers is not None:
                res.damaged.append(ev.covers)
            if ev.skipped is not None:
                offsets.skip(ev.skipped)
            if ev.torn:
                offsets.skip_record()
            if ev.valid_end is not None:
                res.valid_end = ev.valid_end
            res.max_store_timestamp = max(res.max_store_timestamp, ev.store_timestamp)
        elif isinstance(ev, Rebased):
            precise = True
            base = res.content_base = ev.base
        elif isinstance(ev, RecoveryEnd):
            if prefix is not None:
                prefix.close(ev, offsets, res, precise)
        elif isinstance(ev, Served):
            if prefix is not None:
                prefix.served(ev)
            if rows is not None and rows.open:
                rows.served = model_cl.DecodedRecord(ev.position, ev.record, [], None)
        elif isinstance(ev, Stretch):
            if rows is not None and rows.open:
                rows.stretch(ev, base)
            cols = ev.walk.columns
            for broke in offsets.add_columns(cols, ev.position):
                res.findings.append(broke)  # at the record's QUEUEOFFSET field: the record is covered
                row = int(np.searchsorted(cols.position, (broke.position or 0) - ev.position, side="right")) - 1
                at = ev.position + int(cols.position[row])
                res.damaged.append((base + at, base + at + int(cols.size[row])))
            if prefix is not None:
                prefix.stretch(ev.position, cols)
            res.records += len(cols)
            res.max_store_timestamp = max(res.max_store_timestamp, int(cols.store_timestamp.max(initial=0)))
            res.last_store_timestamp = int(cols.store_timestamp[-1])
            if bulk or keeping:
                parts.append((ev.position, cols))
        elif isinstance(ev, FileWalked):
            if prefix is not None:
                prefix.walked(ev)
            if rows is not None:
                rows.flush(base)
            res.valid_end = ev.valid_end
            res.first_broken = ev.first_broken
            res.bytes_read = ev.bytes_read
            healthy = ev.kind in ("blank", "zeros", "eof") and res.size == task.file_size and not precise
            if bulk and parts and base == task.base and not task.live and not (healthy and all(x.level is Severity.info for x in res.findings)):
                _check_stretches_in_bulk(task, res, parts)
            if (bulk or keeping) and healthy and all(x.level is Severity.info for x in res.findings):
                columns = concat_columns(parts)
                queues = columns.queue_runs()
                if queues is not None:  # else a queue's offsets do not go up by one: units are checked one by one
                    # an END_OF_FILE record's TOTALSIZE is the rest of the file (else RMQ-CL-BLANK, an error)
                    length = task.file_size - ev.valid_end if ev.kind == "blank" else 0
                    whole = model_cl.FileColumns(columns, queues, ColumnDataEnd(ev.kind, ev.valid_end, length), ev.bytes_read)  # type: ignore[arg-type]  # one of the three clean kinds
                    if bulk:
                        _check_in_bulk(task, res, whole)
                    # what ``queue_offsets.read_file`` sees of the file: its columns, a clean end
                    # (a file before the last ends in END_OF_FILE; only info findings: no garbage)
                    if keeping and res.size >= COLUMN_WALK_MIN_SIZE and (task.is_last or ev.kind == "blank"):
                        kept_columns = whole if task.keep_columns and len(columns) <= KEPT_COLUMN_ROWS else None
                        res.kept = KeptReading((0, 0, 0, 0), offsets, whole.end, res.records, res.last_store_timestamp, ev.bytes_read, 0.0, kept_columns)
            if prefix is not None and res.kept is None and res.content_base is None and res.size >= COLUMN_WALK_MIN_SIZE:
                res.kept = prefix.kept(task, res, ev.bytes_read, parts)


class _Prefix:
    """What ``queue_offsets.read_file`` reads of a file that is not healthy, taken from validate's
    fold of the same reading: the records before the :class:`RecoveryEnd` (healthy stretches as
    columns, the others decoded: ``RecordsRead``), their queue offsets, the findings about the
    records decoded precisely before it (``read_to_handover``'s ``record_findings``: those of a
    record, not those of a region no record follows), and how the recovery's reading ends there."""

    def __init__(self, last: bool, served: bool) -> None:
        self.last = last
        #: the reading says which broken records the broker serves (:class:`Served`, ``task.served``):
        #: without it a record past the recovery's end whose body CRC alone fails is not told from
        #: one the dispatch scan's walk fails at too, and ``read`` does not go on past that end
        self.serving = served
        self.read = RecordsRead()
        #: after the recovery's end at a broken record of a file before the newest: the records
        #: the dispatch scan's walk (``queue_offsets.file_records`` with body CRCs unchecked) reads
        #: on from there, as long as validate's reading reads the same ones (``next_at``: where the
        #: next one is due; ``through``: where that walk reads on by itself, None: nowhere)
        self.continued = False
        self.next_at: int | None = None
        self.through: int | None = None
        self.served_at: int | None = None
        self.pending: Served | None = None
        self.own: list[Finding] = []
        self.said: list[Finding] = []
        self.end: RecoveryEnd | None = None
        self.offsets: FileQueueOffsets | None = None
        self.records = self.last_store_timestamp = 0
        self.precise = False
        #: the bytes skipped (``FileQueueOffsets.skipped``) when ``offsets`` is the fold's own
        self.skipped: int | None = None
        #: what the reading judged of the bytes after positions (``Damage.tails``, ``Damage.nexts``)
        self.tails: dict[int, tuple[int, int] | None] = {}
        self.nexts: model.NextRecords = {}

    @property
    def open(self) -> bool:
        """The recovery's reading has not ended yet: what the fold reads is its."""
        return self.end is None

    def damage(self, ev: Damage) -> None:
        if self.open and ev.finding is not None:
            self.own.append(ev.finding)
        if ev.tails:
            self.tails.update(ev.tails)
        if ev.nexts:
            self.nexts.update(ev.nexts)
        if ev.cause == "broken" and self.next_at is not None and ev.at != self.served_at:
            # a record the dispatch scan's walk fails at too: that walk ends there, with the records
            # kept (None: none to read on from), unless validate's reading left a gap before it
            self.through = None if ev.at == self.next_at else self.next_at
            self.next_at = None

    def record(self, at: int, rec: MessageRecord) -> None:
        if self.open:
            self.said.extend(self.own)
            self.own = []
            self.read.add_record(at, rec)
        elif self._follows(at):
            self.read.add_record(at, rec)
            self.next_at = at + rec.total_size

    def stretch(self, position: int, cols: CommitLogColumns) -> None:
        if self.open:
            self.read.add_columns(position, cols)
        elif len(cols) and self._follows(position + int(cols.position[0])):
            self.read.add_columns(position, cols)
            self.next_at = position + int(cols.position[-1]) + int(cols.size[-1])

    def served(self, ev: Served) -> None:
        """A broken record whose frame holds around a failed body CRC: the dispatch scan's walk
        (body CRCs not checked) takes it.  Before the recovery's end, the one that end is at."""
        if self.open:
            self.pending = ev
        elif self._follows(ev.position):
            self.read.add_record(ev.position, ev.record)
            self.next_at, self.served_at = ev.position + ev.record.total_size, ev.position

    def _follows(self, at: int) -> bool:
        """The record at ``at`` is the next one of the dispatch scan's walk (else that walk reads on
        from where validate's left it: ``through``)."""
        if self.next_at is None:
            return False
        if at == self.next_at:
            return True
        self.through, self.next_at = self.next_at, None
        return False

    def walked(self, ev: FileWalked) -> None:
        """How validate's reading of the file ended: the records after the recovery's end go on
        to there (an END_OF_FILE record: every record is read)."""
        if self.next_at is not None:
            self.through = None if ev.kind == "blank" and ev.valid_end == self.next_at else self.next_at
            self.next_at = None

    def close(self, ev: RecoveryEnd, offsets: FileQueueOffsets, res: CommitLogFileResult, precise: bool) -> None:
        """The recovery's reading ends here (``ev``): what the fold has read so far is its."""
        import copy

        self.end = ev
        walked = ev.walked
        if walked.kind == "broken" and not self.last and self.serving:
            # the dispatch scan of a recover plan walks on past it (body CRCs not checked, as the
            # broker dispatches): the records validate's reading reads next are that walk's too
            pending, self.pending = self.pending, None
            self.continued, self.next_at = True, walked.valid_end
            if pending is not None:
                self.served(pending)
        if ev.walked.kind in ("blank", "zeros", "eof"):
            # where the records end: what comes after only skips bytes (a file cut short), which
            # ``kept`` takes back -- no copy for each healthy file
            self.offsets, self.skipped = offsets, offsets.skipped
        else:  # validate's reading goes on past a broken record: the recovery's stops here
            self.offsets = copy.deepcopy(offsets)
        self.records, self.last_store_timestamp, self.precise = res.records, res.last_store_timestamp, precise

    def kept(self, task: CommitLogTask, res: CommitLogFileResult, bytes_read: int, parts: list[tuple[int, CommitLogColumns]]) -> KeptReading | None:
        """The reading to keep for ``queue_offsets.read_file`` (``KeptPrefix``), or None when
        that reading would take the file's columns (``parts``, all before the end then) as a
        healthy file's (``commitlog.read_to_handover``: no record decoded precisely, the
        configured size, the end the broker gives a file, each queue's offsets going up by one)
        -- the kept prefix describes the precise reading only."""
        if self.end is None or self.offsets is None:
            return None
        walked = self.end.walked
        kind = walked.kind
        garbage = kind == "zeros" and any(x.code == RMQ_CL_GARBAGE for x in res.findings)
        if not self.precise and res.size == task.file_size and kind in ("blank", "zeros", "eof") and (task.is_last or kind == "blank") and not garbage:
            if concat_columns(parts).queue_runs() is not None:
                return None
        offsets = self.offsets
        if self.skipped is not None and offsets.skipped != self.skipped:
            offsets = replace(offsets, queues={k: replace(edge) for k, edge in offsets.queues.items()}, findings=list(offsets.findings), skipped=self.skipped)
        prefix = KeptPrefix(walked, self.read, self.said, task.is_last, task.file_size, self.tails, self.nexts, self.continued, self.through)
        return KeptReading((0, 0, 0, 0), offsets, None, self.records, self.last_store_timestamp, bytes_read, 0.0, None, prefix)


def _check_in_bulk(task: CommitLogTask, res: CommitLogFileResult, cols: model_cl.FileColumns) -> None:
    """A file whose every record the column walk framed and that ends the way the broker ends
    one: its ConsumeQueue units are verified against its records and its index keys tabled in
    bulk (``store.model.commitlog``)."""
    if task.cq_file_size and task.root:
        store = rmq.open_store(task.root, commitlog_file_size=task.file_size)
        res.verified = model_cl.verify_queue_units(store, task.base, cols, task.cq_file_size)
    if task.keys_dir is not None:
        model_cl.save_key_table(task.keys_dir, task.base, cols)


def _check_stretches_in_bulk(task: CommitLogTask, res: CommitLogFileResult, parts: list[tuple[int, CommitLogColumns]]) -> None:
    """A damaged file's healthy stretches, each as :func:`_check_in_bulk` checks a healthy file:
    the units and index keys of the records the column walk framed are verified against them in
    bulk, so that only what points at a record the precise decoder read, into the damage or past
    the valid end is read back one by one (else every unit and entry of the file is).  In the
    newest file only the records before its valid end count: what points past it is
    RMQ-CQ-PAST-END / RMQ-IDX-PAST-END."""
    parts = [(at, cols) for at, cols in parts if len(cols) and (not task.is_last or _stretch_end(at, cols) <= res.valid_end)]
    if not parts:
        return
    if task.cq_file_size and task.root:
        store = rmq.open_store(task.root, commitlog_file_size=task.file_size)
        for at, cols in parts:
            columns = concat_columns([(at, cols)])
            queues = columns.queue_runs()
            if queues is None:  # a queue's offsets do not go up by one here: its units are checked one by one
                continue
            stretch = model_cl.FileColumns(columns, queues, ColumnDataEnd("eof", _stretch_end(at, cols), 0), 0)
            for key, runs in model_cl.verify_queue_units(store, task.base, stretch, task.cq_file_size).items():
                res.verified.setdefault(key, []).extend(runs)
    if task.keys_dir is not None:
        columns = concat_columns(parts)
        model_cl.save_key_table(task.keys_dir, task.base, model_cl.FileColumns(columns, {}, ColumnDataEnd("eof", 0, 0), 0))


def _stretch_end(at: int, cols: CommitLogColumns) -> int:
    """The file position after the last record of the stretch at ``at``."""
    return at + int(cols.position[-1]) + int(cols.size[-1])


def _recheck_live_tail(task: CommitLogTask, first: CommitLogFileResult) -> CommitLogFileResult:
    """A writer is appending to this file: what looked wrong at its tail may be a record being
    written.  Read the file again a moment later; if more valid data now follows, the first
    read's tail findings were an in-progress append, reported as one RMQ-CL-IN-PROGRESS."""
    for delay in model.LIVE_TAIL_DELAYS:
        time.sleep(delay)
        second = CommitLogFileResult(task.path, task.base, 0)
        with ReadOnlyFile(task.path) as f:
            second.size = f.size
            _assemble(replace(task, rows=None), second, _walk_commitlog_file(f, task))  # the first reading fed the rows
        if second.valid_end > first.valid_end:
            tail = first.valid_end
            kept = [x for x in first.findings if x.level is Severity.info or x.position is None or x.position < tail]
            kept = [x for x in kept if x.code != RMQ_CL_VALID_END]
            kept.append(model.in_progress_finding(task.path, tail, second.valid_end - tail))
            first.findings = kept
            first.damaged = [r for r in first.damaged if r[0] < task.base + tail]
            return first
    return first


# --- the store's CommitLog files, one task each ------------------------------------------------


def commitlog_tasks(
    store: rmq.RocketMQStore,
    *,
    live: bool = False,
    fast: bool = True,
    cq_file_size: int = 0,
    keys_dir: str | None = None,
    check_crc: bool = True,
    rows: Callable[[], RowsFold] | None = None,
    keep: bool | None = None,
) -> list[CommitLogTask]:
    """One task per CommitLog file that holds data, up to the newest one (``model.last_data_file``:
    the files after it are pre-allocated, :func:`preallocated_file_findings`), in order: the
    reading of the store's CommitLog that validate, stats and report fold.  ``cq_file_size`` and
    ``keys_dir``: validate's bulk cross-checks of a healthy file (0 / None: none); ``rows``: a
    fresh :class:`RowsFold` for each file (stats' count); ``keep``: keep what a reader of a whole
    healthy file would see (``CommitLogFileResult.kept``), with the columns of the two newest --
    by default when a ``queue_offsets.shared_reading`` is open (:meth:`CommitLogJoin.add` hands
    it on there)."""
    if keep is None:
        keep = sharing()
    segments = store.commitlog
    file_size = store.commitlog_file_size
    last = model.last_data_file(segments)
    return [
        CommitLogTask(
            str(seg.path),
            seg.base,
            file_size or seg.size,
            i == last,
            live=live,
            alt_base=segments[i - 1].base + file_size if i and file_size and seg.base != segments[i - 1].base + file_size else None,
            fast=fast,
            root=str(store.root),
            cq_file_size=cq_file_size,
            keys_dir=keys_dir,
            check_crc=check_crc,
            served=rows is not None,
            rows=rows() if rows is not None else None,
            keep_reading=keep,
            keep_columns=keep and i >= last - 1,
        )
        for i, seg in enumerate(segments)
        if seg.size > 0 and i <= last
    ]


class CommitLogJoin:
    """The CommitLog files' results (:func:`check_commitlog_file` of :func:`commitlog_tasks`)
    joined in file order: the queue-offset continuity across files
    (``QueueOffsets.add_file``), the commitlog ranges reported or missing between files, the
    misnamed files, the verified ConsumeQueue runs, where the CommitLog's valid data ends and
    its newest store time."""

    def __init__(self, store: rmq.RocketMQStore) -> None:
        self.file_size = store.commitlog_file_size
        self.queue_offsets = QueueOffsets()
        self.commitlog_end = store.commitlog_min_offset
        self.max_store_timestamp = 0
        self.damaged: list[tuple[int, int]] = []
        self.rebased: list[tuple[str, int]] = []
        self.verified: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self._prev_base: int | None = None

    def add(self, res: CommitLogFileResult) -> list[Finding]:
        """Join the next file's result; returns the findings the join states about it (a queue
        whose QUEUEOFFSETs break across files).  A reading of a healthy file that was kept
        (``CommitLogTask.keep_reading``) goes to the open ``queue_offsets.shared_reading``."""
        if res.kept is not None:
            keep(res.path, res.kept)
        base = res.base if res.content_base is None else res.content_base
        if res.content_base is not None:
            self.rebased.append((res.path, res.content_base))
        self.damaged.extend(res.damaged)
        for key, runs in res.verified.items():
            self.verified.setdefault(key, []).extend(runs)
        # Bytes missing before this file (a missing or zero-length file): records they held are
        # reported by RMQ-FILE-GAP / RMQ-FILE-ZERO-LENGTH, not again by what points there (and a
        # queue may skip the records they held: ``QueueOffsets.add_file``).
        if self._prev_base is not None and self.file_size:
            gap = model.missing_between(self._prev_base, base, self.file_size)
            if gap is not None:
                self.damaged.append(gap)
        found = self.queue_offsets.add_file(res.offsets, base, self.file_size)
        self.commitlog_end = base + res.valid_end
        self.max_store_timestamp = max(self.max_store_timestamp, res.max_store_timestamp)
        self._prev_base = base
        return list(found)


# --- what the other checks need of this one ------------------------------------------------------


def rebased_store(root: str, commitlog_file_size: int, rebased: tuple[tuple[str, int], ...]) -> rmq.RocketMQStore:
    """The store as the CommitLog phase found it: a misnamed CommitLog file at the base its
    records say (its name is reported once, by RMQ-FILE-OVERLAP/GAP/ALIGN)."""
    store = rmq.open_store(root, commitlog_file_size=commitlog_file_size)
    if rebased:
        bases = dict(rebased)
        store.commitlog = sorted((replace(s, base=bases.get(str(s.path), s.base)) for s in store.commitlog), key=lambda s: s.base)
    return store


def merge_ranges(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``ranges`` sorted, overlapping and touching ones merged."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def in_ranges(ranges: tuple[tuple[int, int], ...], offset: int) -> bool:
    """``offset`` lies in one of the sorted, disjoint ``ranges``."""
    i = bisect.bisect_right(ranges, (offset, 1 << 64)) - 1
    return i >= 0 and ranges[i][0] <= offset < ranges[i][1]


def written_since(reader: rmq.CommitLogReader, off: int) -> bool:
    """A record starting at ``off`` exists now (appended after the CommitLog phase read the tail,
    possibly into a file created since the store was listed)."""
    for attempt in range(2):
        try:
            rec = reader.read(off)
            return rec.physical_offset == off
        except MqError:
            if attempt:
                return False
            reader.close()
            reader.store = rmq.open_store(reader.store.root, commitlog_file_size=reader.store.commitlog_file_size)
    return False


def preallocated_file_findings(path: str, file_size: int | None) -> list[Finding]:
    """A CommitLog file after the newest one holding data (pre-allocated, or left behind): what
    the store model's rule (``model.commitlog_file_findings``) says of its bytes."""
    with ReadOnlyFile(path) as f:
        return list(model.commitlog_file_findings(f, None, file_size, last=False, after_last=True))
