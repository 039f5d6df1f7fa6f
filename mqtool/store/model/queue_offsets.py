"""Queue-offset continuity of a RocketMQ CommitLog: the one rule validate and every reader apply.

The broker gives every record it dispatches (all but prepared and rolled-back transaction
records) the next QUEUEOFFSET of its topic/queue (``CommitLog.DefaultAppendMessageCallback``
takes it from the queue's offset table and adds one), so in a healthy CommitLog each queue's
QUEUEOFFSETs go up by exactly one, record after record and file after file.  A record that breaks
that sequence is RMQ-CL-QUEUE-OFFSET at its QUEUEOFFSET field.

Two exceptions keep the rule from calling damage twice:

* bytes a reading skipped (a broken record and what follows it up to the next readable one, a
  torn tail, a file cut short, a missing file) may have held records: a QUEUEOFFSET may jump
  forward by as many records as those bytes could hold (``records_in``) without a finding;
* after a discontinuity, the record that broke the sequence may be the odd one out (a damaged
  QUEUEOFFSET): the next record may continue the old sequence instead (``QueueEdge.alt_next``).

:class:`FileQueueOffsets` follows one CommitLog file's records (fed one by one, or a chunk of
healthy records at a time from the column walk) and names the breaks inside the file;
:class:`QueueOffsets` joins the files in order and names a file whose first record of a queue
does not follow the previous file's last.  ``validate`` feeds them from its walks; the readers
(dump, stats, info, query, diff) from theirs or through :func:`commitlog_queue_offsets`, so all
of them name the same records.  The last QUEUEOFFSET of each queue (``last_queue_offset``) is
what the ConsumeQueue checks compare a queue's end with (RMQ-CQ-LAG, RMQ-CQ-MISSING-QUEUE:
:func:`queue_lag_finding`, :func:`missing_queue_findings`).

:func:`read_commitlog` is that reading file by file, each file open while its consumer looks at
what the reading saw (``FileReading``: the columns of a healthy file, else the precise walk): a
recover plan judges the broker's recovery window (``CommitLog.recoverNormally``) from the same
reading instead of walking those files again.  :func:`read_newest_file` is the record-by-record
reading of the newest file alone (``info``'s active file); :func:`walk_file`,
:func:`file_records`, :func:`count_records_after` and :func:`count_records_in` are the precise walks a
recover plan and its steps take of a file (the recovery's walk of a file the reading did not read,
the records of an offset range, the records a cut drops), so that no command walks a file itself.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mqtool.errors import MqError, StoreIOError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import RMQ_CL_QUEUE_OFFSET, RMQ_CQ_LAG, RMQ_CQ_MISSING_QUEUE
from mqtool.formats import data_end as de
from mqtool.formats.rocketmq.commitlog import (
    MIN_MESSAGE_SIZE,
    QUEUE_OFFSET_POSITION,
    SYSFLAG_TRANSACTION_MASK,
    SYSFLAG_TRANSACTION_PREPARED,
    SYSFLAG_TRANSACTION_ROLLBACK,
    DataEnd,
    MessageRecord,
)
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import rocketmq as model

if TYPE_CHECKING:
    from mqtool.formats.rocketmq.columns import ColumnDataEnd, CommitLogColumns, QueueRun
    from mqtool.store.model.commitlog import FileColumns, HandoverReading
    from mqtool.store.model.commitlog_walk import FileRecords, FileWalked

QueueKey = tuple[str, int]


def records_in(length: int) -> int:
    """How many records ``length`` skipped bytes may have held (at least one)."""
    return max(1, length // MIN_MESSAGE_SIZE)


def continues(last: int, alt_next: int | None, slack: int, queue_offset: int) -> bool:
    """``queue_offset`` may follow ``last``: the next one, the next of the old sequence after an
    outlier (``alt_next``), or a forward jump over the ``slack`` records skipped bytes may have held."""
    return queue_offset == last + 1 or queue_offset == alt_next or last < queue_offset <= last + 1 + slack


def is_dispatched(sys_flag: int) -> bool:
    """The broker gives the record a QUEUEOFFSET of its own (not a prepared or rolled-back
    transaction record, which carries another record's)."""
    txn = sys_flag & SYSFLAG_TRANSACTION_MASK
    return txn != SYSFLAG_TRANSACTION_PREPARED and txn != SYSFLAG_TRANSACTION_ROLLBACK


@dataclass
class QueueEdge:
    """The QUEUEOFFSETs of one topic/queue seen in one file (or, joined, in the whole CommitLog)."""

    first: int
    last: int
    count: int
    first_position: int = 0  # file position of the record holding ``first``
    #: Records that bytes skipped before ``first`` (``lead``) or after ``last`` (``trail``, or
    #: ``mark``: the file's ``skipped`` count when ``last`` was seen) may have held; a
    #: QUEUEOFFSET may jump forward by that much without a finding.
    lead: int = 0
    mark: int = 0
    trail: int = 0
    #: After a discontinuity: the offset that continues the old sequence (the record that broke
    #: it may be the odd one out).
    alt_next: int | None = None

    @property
    def last_queue_offset(self) -> int:
        """The queue's last QUEUEOFFSET (when its last record broke the sequence, the offset the
        sequence says it should have had)."""
        return self.last if self.alt_next is None else self.alt_next - 1


def _finding(path: str, at: int, key: QueueKey, message: str) -> Finding:
    return Finding(RMQ_CL_QUEUE_OFFSET, path, at + QUEUE_OFFSET_POSITION, f"{key[0]}/{key[1]}: {message}", details={"topic": key[0], "queue_id": key[1]})


@dataclass
class FileQueueOffsets:
    """The queue offsets of one CommitLog file's records, fed in file order; ``findings`` are
    the records that break their queue's sequence inside the file."""

    path: str
    queues: dict[QueueKey, QueueEdge] = field(default_factory=dict)
    #: records the bytes this file's reading skipped may have held (see ``records_in``)
    skipped: int = 0
    findings: list[Finding] = field(default_factory=list)
    #: how the file ends, as validate states it (``model.commitlog_file_findings``): filled by
    #: ``file_queue_offsets(..., end_findings=True)`` when the whole file was read, else None
    end_findings: list[Finding] | None = None

    @classmethod
    def from_runs(cls, path: str, runs: Mapping[QueueKey, QueueRun], offset: int = 0) -> FileQueueOffsets:
        """A healthy file read as columns (``CommitLogColumns.queue_runs``, positions ``offset``
        before the file's): every queue's offsets go up by one and nothing was skipped."""
        out = cls(path)
        out.add_runs(runs, offset)
        return out

    def skip(self, length: int) -> None:
        """The reading skipped ``length`` bytes (a broken record and what follows it, a file cut short)."""
        self.skipped += records_in(length)

    def skip_record(self) -> None:
        """The reading ended at one record it does not take (a torn tail)."""
        self.skipped += 1

    def record(self, at: int, record: MessageRecord) -> Finding | None:
        """The record at file position ``at``; its finding when it breaks its queue's sequence."""
        if not is_dispatched(record.sys_flag):
            return None
        return self._step((record.topic, record.queue_id), at, record.queue_offset)

    def _step(self, key: QueueKey, at: int, queue_offset: int) -> Finding | None:
        edge = self.queues.get(key)
        if edge is None:
            self.queues[key] = QueueEdge(queue_offset, queue_offset, 1, at, lead=self.skipped, mark=self.skipped)
            return None
        found = None
        if continues(edge.last, edge.alt_next, self.skipped - edge.mark, queue_offset):
            edge.alt_next = None
        else:
            found = _finding(self.path, at, key, f"expected QUEUEOFFSET {edge.last + 1} after {edge.last}, found {queue_offset}")
            self.findings.append(found)
            edge.alt_next = edge.last + 2
        edge.last = queue_offset
        edge.count += 1
        edge.mark = self.skipped
        return found

    def add_runs(self, runs: Mapping[QueueKey, QueueRun], offset: int = 0) -> list[Finding]:
        """A run of healthy records (``CommitLogColumns.queue_runs``: each queue's offsets go up
        by one within it; positions ``offset`` before the file's), as feeding them one by one would."""
        out: list[Finding] = []
        for key, run in runs.items():
            at = offset + run.first_position
            edge = self.queues.get(key)
            if edge is None:
                self.queues[key] = QueueEdge(run.first, run.last, run.count, at, lead=self.skipped, mark=self.skipped)
                continue
            found = self._step(key, at, run.first)
            if found is not None:
                out.append(found)
            if run.count > 1:  # the rest of the run follows its first record
                edge.alt_next = None
                edge.last = run.last
                edge.count += run.count - 1
        if out:  # in file order, as a record-by-record reading meets them
            self.findings.sort(key=lambda x: x.position or 0)
        return out

    def add_columns(self, columns: CommitLogColumns, offset: int = 0) -> list[Finding]:
        """The records of a column walk (positions ``offset`` before the file's), in order."""
        runs = columns.queue_runs()
        if runs is not None:
            return self.add_runs(runs, offset)
        out: list[Finding] = []
        dispatched = columns.dispatched()
        for row in range(len(columns)):
            if dispatched[row]:
                key = (columns.topics[int(columns.topic[row])], int(columns.queue_id[row]))
                found = self._step(key, offset + int(columns.position[row]), int(columns.queue_offset[row]))
                if found is not None:
                    out.append(found)
        return out

    def walk_end(self, walk: FileRecords, file_size: int | None) -> None:
        """How a reader's walk of the file ended, as bytes it skipped: a torn tail is one record;
        a broken record ends the walk of its file, so the rest of the file (which validate reads
        on past it) may have held any number of records; so may the bytes a file before the last
        lacks (cut short).  ``walk`` must have run to its end."""
        size = max(file_size or 0, walk.f.size)
        if walk.torn is not None:
            self.skip_record()
        elif walk.error is not None and walk.failed_at is not None:
            self.skip(size - walk.failed_at)
        elif walk.end is not None and (walk.end.kind == "partial" or (walk.end.kind == "eof" and walk.f.size < size)):
            self.skip(size - walk.end.position)


@dataclass
class QueueOffsets:
    """The queue offsets of a CommitLog: its files joined in order (:meth:`add_file`);
    ``findings`` holds every break, in validate's order (each file's own, then the file's first
    records that do not follow the files before)."""

    edges: dict[QueueKey, QueueEdge] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: per file path: how the file ends, as validate states it (``FileQueueOffsets.end_findings``),
    #: for the files read whole when asked for (``commitlog_queue_offsets(..., end_findings=True)``)
    end_findings: dict[str, list[Finding]] = field(default_factory=dict)
    _prev_base: int | None = None
    _prev_path: str | None = None

    def add_file(self, file: FileQueueOffsets, base: int, file_size: int | None) -> list[Finding]:
        """The next file holding records (named ``base``), after the previous one: a file's first
        record of a queue must follow the queue's last record in the files before (a file missing
        between them, ``model.missing_between``, may have held records).  Returns those findings
        (``findings`` gets the file's own before them)."""
        missing = 0
        if self._prev_base is not None and file_size:
            gap = model.missing_between(self._prev_base, base, file_size)
            if gap is not None:
                missing = records_in(gap[1] - gap[0])
        self.findings.extend(file.findings)
        if file.end_findings is not None:
            self.end_findings[file.path] = file.end_findings
        out: list[Finding] = []
        for key, queued in self.edges.items():
            if key not in file.queues:
                queued.trail += missing + file.skipped
        for key, edge in file.queues.items():
            prev = self.edges.get(key)
            if prev is None:
                self.edges[key] = QueueEdge(edge.first, edge.last, edge.count, trail=file.skipped - edge.mark, alt_next=edge.alt_next)
                continue
            if not continues(prev.last, prev.alt_next, prev.trail + missing + edge.lead, edge.first):
                before = Path(self._prev_path).name if self._prev_path else "an earlier file"
                expected = f"expected the file's first QUEUEOFFSET {prev.last + 1} (after {prev.last} in {before}), found {edge.first}"
                out.append(_finding(file.path, edge.first_position, key, expected))
            prev.last = edge.last
            prev.count += edge.count
            prev.trail = file.skipped - edge.mark
            prev.alt_next = edge.alt_next
        self._prev_base, self._prev_path = base, file.path
        self.findings.extend(out)
        return out

    def findings_of(self, keys: Iterable[QueueKey]) -> list[Finding]:
        """The breaks in the sequences of the queues ``keys``."""
        wanted = set(keys)
        return [x for x in self.findings if (x.details.get("topic"), x.details.get("queue_id")) in wanted]

    def last_queue_offset(self, key: QueueKey) -> int | None:
        """The last QUEUEOFFSET of a queue in the files joined so far (None: no record of it)."""
        edge = self.edges.get(key)
        return edge.last_queue_offset if edge is not None else None


# --- reading a store's CommitLog for its queue offsets ---------------------------------------------


def data_files(store: rmq.RocketMQStore) -> list[tuple[int, rmq.Segment]]:
    """The CommitLog files that hold records, with their index in ``store.commitlog``: every
    non-empty file up to ``model.last_data_file`` (the files after it are pre-allocated)."""
    last = model.last_data_file(store.commitlog)
    return [(i, seg) for i, seg in enumerate(store.commitlog) if seg.size > 0 and i <= last]


def file_queue_offsets(store: rmq.RocketMQStore, seg: rmq.Segment, *, last: bool, end_findings: bool = False) -> FileQueueOffsets:
    """One CommitLog file's queue offsets: a healthy file from its columns
    (``store.model.commitlog.read_file_columns``), any other one walked record by record to where
    the walk stops (``FileQueueOffsets.walk_end`` says what the rest may have held).
    ``end_findings``: also state how the file ends, as validate does
    (``model.commitlog_file_findings``), from the same reading: a recover plan asks for it so as
    not to read the files again for the damage it leaves."""
    size = store.commitlog_file_size or seg.size
    try:
        f = ReadOnlyFile(seg.path)
    except MqError:  # RMQ-FILE-UNREADABLE: none of its records is known, any may have been there
        out = FileQueueOffsets(str(seg.path))
        out.skip(size)
        return out
    with f:
        return read_file(f, seg.base, size, last=last, end_findings=end_findings).offsets


@dataclass
class FileReading:
    """What one reading of a CommitLog file (``read_file``) saw: its queue offsets, and the
    reading itself for a consumer that needs more of it than the offsets (a recover plan's
    recovery window: where the valid data ends, the store time of the last record): the file's
    columns when it is healthy, else the precise walk, run to its end.  ``failed``: an I/O error
    cut the reading short (neither is complete).  ``seconds``: the time the reading took."""

    offsets: FileQueueOffsets
    columns: FileColumns | None = None
    walk: FileRecords | None = None
    #: records read, and the STORETIMESTAMP of the last one
    records: int = 0
    last_store_timestamp: int = 0
    failed: bool = False
    seconds: float = 0.0
    #: the non-zero extents after file positions the reading judged (``nonzero_extent``; None:
    #: only zeros), for a consumer judging the same bytes: the zeros after a healthy last file's
    #: data, the bytes after where the precise walk's data ends
    tails: dict[int, tuple[int, int] | None] = field(default_factory=dict)
    #: the records found after file positions the reading judged (``model.next_record``), for a
    #: consumer searching the same bytes (the records a cut at the valid end drops)
    nexts: model.NextRecords = field(default_factory=dict)
    #: what validate states about the records read before the precise walk took over (in file
    #: order; the walk's own are ``model.walk_record_findings(walk)``)
    record_findings: list[Finding] = field(default_factory=list)

    #: a healthy file (its records all healthy, it ends the way the broker ends one): where and how
    #: its data ends, with its ``columns`` or without (a reading kept from validate's, ``KeptReading``)
    end: ColumnDataEnd | None = None
    #: the bytes the reading judged, when it kept no columns
    judged: int = 0
    #: a file read as columns up to its handover but not healthy: the records the reading read
    #: (``RecordsRead``), for a recover plan's dispatch scan; None when not kept (a healthy file,
    #: a file read record by record, more than ``KEPT_COLUMN_ROWS`` records)
    records_read: RecordsRead | None = None

    @property
    def bytes_read(self) -> int:
        """The bytes of the file the reading judged (for a read speed)."""
        if self.columns is not None:
            return self.columns.bytes_read
        if self.walk is not None:
            return self.walk.valid_end
        return self.judged


@dataclass
class RecordsRead:
    """The records a reading of a CommitLog file that is not healthy read, in file order: its
    healthy stretches as columns (``parts``: ``(file position, columns)``) and each record the
    precise decoders read (file position, TOTALSIZE, TOPIC, QUEUEID, QUEUEOFFSET, STORETIMESTAMP,
    SYSFLAG) -- every
    record the precise walk of the file (``file_records``; with body CRCs unchecked, as a recover
    plan's dispatch scan walks it) yields before file position ``through``, where the reading's
    data ends (None: every record, the data ends in an END_OF_FILE record, where that walk ends
    too) or, kept from validate's reading (``KeptPrefix.continued``), where the records that reading
    read on past a broken record stop being that walk's.  At most ``KEPT_COLUMN_ROWS`` records are
    kept (``full``: more)."""

    parts: list[tuple[int, CommitLogColumns]] = field(default_factory=list)
    position: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    topic: list[str] = field(default_factory=list)
    queue_id: list[int] = field(default_factory=list)
    queue_offset: list[int] = field(default_factory=list)
    store_timestamp: list[int] = field(default_factory=list)
    sys_flag: list[int] = field(default_factory=list)
    through: int | None = None
    full: bool = False
    _rows: int = 0

    def __len__(self) -> int:
        return self._rows

    def add_columns(self, position: int, columns: CommitLogColumns) -> None:
        """A healthy stretch at file ``position``."""
        self._rows += len(columns)
        if self._rows > KEPT_COLUMN_ROWS:
            self._drop()
        elif not self.full:
            self.parts.append((position, columns))

    def add_record(self, position: int, record: MessageRecord) -> None:
        """A record the precise decoders read at file ``position``."""
        self._rows += 1
        if self._rows > KEPT_COLUMN_ROWS:
            self._drop()
        elif not self.full:
            self.position.append(position)
            self.size.append(record.total_size)
            self.topic.append(record.topic)
            self.queue_id.append(record.queue_id)
            self.queue_offset.append(record.queue_offset)
            self.store_timestamp.append(record.store_timestamp)
            self.sys_flag.append(record.sys_flag)

    def columns(self) -> CommitLogColumns:
        """The records as columns, in file order, without their tagsCode (zeros) and keys (none):
        what is kept of the records decoded one by one."""
        import numpy as np  # loaded already: the file was read as columns up to its handover

        from mqtool.formats.rocketmq.columns import CommitLogColumns, concat_columns

        cols = concat_columns(self.parts)
        number = {name: i for i, name in enumerate(cols.topics)}
        topic = np.array([number.setdefault(name, len(number)) for name in self.topic], dtype=np.int32)
        position = np.concatenate([cols.position, np.array(self.position, dtype=np.int64)])
        order = np.argsort(position, kind="stable")

        def cat(column: np.ndarray, decoded: list[int], dtype: type) -> np.ndarray:
            return np.asarray(np.concatenate([column, np.array(decoded, dtype=dtype)])[order])

        return CommitLogColumns(
            position=position[order],
            size=cat(cols.size, self.size, np.int32),
            queue_id=cat(cols.queue_id, self.queue_id, np.int32),
            queue_offset=cat(cols.queue_offset, self.queue_offset, np.int64),
            store_timestamp=cat(cols.store_timestamp, self.store_timestamp, np.int64),
            sys_flag=cat(cols.sys_flag, self.sys_flag, np.int32),
            topic=np.asarray(np.concatenate([cols.topic, topic])[order]),
            tags_code=np.zeros(len(position), dtype=np.int64),
            topics=list(number),
            key_record=np.zeros(0, dtype=np.int32),
            key_hash=np.zeros(0, dtype=np.int64),
        )

    def _drop(self) -> None:
        if not self.full:
            self.full = True
            self.parts.clear()
            for column in (self.position, self.size, self.topic, self.queue_id, self.queue_offset, self.store_timestamp, self.sys_flag):
                column.clear()


@dataclass
class KeptReading:
    """What validate's reading of a healthy CommitLog file (``store.model.commitlog_check`` with
    ``CommitLogTask.keep_reading``: every record healthy, read as columns, the file ending the way
    the broker ends one) saw that :func:`read_file` would see: the file's queue offsets, where and
    how its data ends, its records, the STORETIMESTAMP of the last one, the bytes read and the
    time taken; its ``columns`` for the newest files (``CommitLogTask.keep_columns``).  Of a file
    that is not healthy, ``prefix`` says what the recovery's reading of it takes (``end`` None).
    ``stat``: the file as it was read (device, inode, size, mtime): a kept reading serves only that
    file."""

    stat: tuple[int, int, int, int]
    offsets: FileQueueOffsets
    #: a healthy file's end (None: a file that is not healthy, ``prefix``)
    end: ColumnDataEnd | None
    records: int
    last_store_timestamp: int
    bytes_read: int
    seconds: float
    columns: FileColumns | None = None
    #: a file that is not healthy: what the recovery's reading of it takes (``offsets``,
    #: ``records`` and ``last_store_timestamp`` are of those records)
    prefix: KeptPrefix | None = None


@dataclass
class KeptPrefix:
    """What validate's reading of a CommitLog file that is not healthy saw that :func:`read_file`
    would (``store.model.commitlog_check``): the records its reading up to the handover reads
    (``commitlog.read_to_handover``; ``read``, in file order, and ``record_findings``, the findings
    about those it decoded precisely) and how the recovery's reading (``FileRecords``) read on from
    there ends (``walked``: the walk's ``RecoveryEnd``) -- at once: no record lies between.
    ``last`` and ``file_size``: the file as validate read it (the newest file holding data, the
    configured size); the kept reading serves a reading of the file as the same."""

    walked: FileWalked
    read: RecordsRead
    record_findings: list[Finding]
    last: bool
    file_size: int
    #: what validate's reading judged of the bytes after positions (``FileReading.tails``, ``.nexts``)
    tails: dict[int, tuple[int, int] | None] = field(default_factory=dict)
    nexts: model.NextRecords = field(default_factory=dict)
    #: ``read`` goes on past the recovery's end (a broken record of a file before the newest)
    #: with the records a dispatch scan's walk of the file (``file_records`` with body CRCs
    #: unchecked, as the broker dispatches) reads next, up to ``through`` (None: every record)
    continued: bool = False
    through: int | None = None


_SHARED: ContextVar[dict[str, KeptReading] | None] = ContextVar("mqtool_commitlog_shared_reading", default=None)

#: records whose columns a shared reading keeps at most (~60 bytes each), the newest files' first:
#: what a recover plan's dispatch scan keeps of them (its ``DISPATCH_ROWS_KEPT``)
KEPT_COLUMN_ROWS = 1 << 20


@contextlib.contextmanager
def shared_reading() -> Iterator[None]:
    """Inside the block, validate's reading of each CommitLog file is kept (:class:`KeptReading`,
    :func:`keep`) and :func:`read_commitlog` takes it instead of reading the same unchanged file
    again: a command that runs several verbs over one store (``report``: validate, then recover's
    plan) reads each file once.  What is kept per file: of a healthy file its queue offsets and
    end, and the columns of the newest files only; of a damaged one what the broker's recovery
    reads of it (:class:`KeptPrefix`), whose end is judged from the bytes after it."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def sharing() -> bool:
    """A :func:`shared_reading` is open: a reading should keep what it saw (:func:`keep`)."""
    return _SHARED.get() is not None


def keep(path: str, kept: KeptReading) -> None:
    """Keep ``kept``, validate's reading of the file ``path``, for the next reading of it."""
    shared = _SHARED.get()
    if shared is None:
        return
    shared[path] = kept
    # the newest files' columns, within ``KEPT_COLUMN_ROWS``: the oldest go first
    holding = [k for k in shared.values() if k.columns is not None]
    total = sum(len(k.columns.columns) for k in holding if k.columns is not None)
    for old in holding:
        if total <= KEPT_COLUMN_ROWS or old.columns is None:
            break
        total -= len(old.columns.columns)
        old.columns = None


def file_stat(path: str) -> tuple[int, int, int, int] | None:
    """The file as a kept reading names it (device, inode, size, mtime); None: not there."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _kept(path: str) -> KeptReading | None:
    shared = _SHARED.get()
    kept = shared.get(path) if shared else None
    if kept is None or kept.stat != file_stat(path):
        return None
    return kept


def _from_kept(f: ReadOnlyFile, kept: KeptReading, base: int, size: int, last: bool, end_findings: bool) -> FileReading | None:
    """The :class:`FileReading` :func:`read_file` makes of a file, from a kept reading (None: it
    was kept for another reading of the file: another newest file, another size)."""
    if kept.prefix is not None:
        return _from_prefix(f, kept, kept.prefix, base, size, last, end_findings)
    if kept.end is None:
        return None
    reading = FileReading(kept.offsets, columns=kept.columns, records=kept.records, last_store_timestamp=kept.last_store_timestamp, seconds=kept.seconds)
    reading.end, reading.judged = kept.end, kept.bytes_read
    if kept.end.kind == "zeros":  # the reading found only zeros after it
        reading.tails[kept.end.position] = None
    if end_findings:  # healthy records: only an END_OF_FILE record can be wrong
        blank = model.blank_size_finding(str(f.path), kept.end.position, kept.end.length, size) if kept.end.kind == "blank" else None
        kept.offsets.end_findings = [blank] if blank is not None else []
    return reading


def _scan_through(end: de.DataEnd[str]) -> int | None:
    """Where a dispatch scan's walk of a file (body CRCs unchecked) reads on from after the records
    a reading that ended at ``end`` read (``RecordsRead.through``): nowhere (None) after an
    END_OF_FILE record, or after a broken record whose damage is not its body CRC (that walk fails
    there too); else where the reading's data ends."""
    if end.kind == "blank" or (end.kind == "broken" and end.error is not None and end.error.kind != "crc"):
        return None
    return end.position


def _from_prefix(f: ReadOnlyFile, kept: KeptReading, prefix: KeptPrefix, base: int, size: int, last: bool, end_findings: bool) -> FileReading | None:
    """The :class:`FileReading` :func:`read_file` makes of a file that is not healthy, from
    validate's reading of it: the records up to the handover as read, the recovery's reading from
    there ended where validate's marked it (``FileRecords.ended``: nothing between is read); only
    how the file ends is judged here, from the bytes after that end (``commitlog_file_findings``)."""
    import copy

    from mqtool.store.model.commitlog_walk import FileRecords

    if prefix.last != last or prefix.file_size != size:
        return None
    out = copy.deepcopy(kept.offsets)  # the walk's end is added to it: the kept one stays as read
    reading = FileReading(out, records=kept.records, last_store_timestamp=kept.last_store_timestamp, seconds=kept.seconds)
    reading.record_findings = list(prefix.record_findings)
    reading.tails.update(prefix.tails)
    reading.nexts.update(prefix.nexts)
    walk = reading.walk = FileRecords(f, prefix.walked.valid_end, check_crc=True, last=last, file_size=size, base=base)
    walk.ended(prefix.walked)
    out.walk_end(walk, size)
    read = copy.copy(prefix.read)
    if not read.full and walk.data_end is not None:
        read.through = prefix.through if prefix.continued else _scan_through(walk.data_end)
        reading.records_read = read
    if end_findings:
        out.end_findings = reading.record_findings + model.commitlog_file_findings(f, walk, size, last=last, tails=reading.tails, nexts=reading.nexts)
    return reading


def read_file(
    f: ReadOnlyFile,
    base: int,
    size: int,
    *,
    last: bool,
    end_findings: bool = False,
    on_record: Callable[[int, MessageRecord], None] | None = None,
    raise_errors: bool = False,
) -> FileReading:
    """Read the open CommitLog file ``f`` (named ``base``; ``size`` the configured file size) once
    for its queue offsets (``file_queue_offsets``), keeping what the reading saw (``FileReading``).
    The precise walk is the recovery's (``CommitLog.recoverNormally``: body CRCs checked, the newest
    file ending at a torn tail), so a plan takes its valid end from it.  ``on_record``: the file is
    walked record by record (never as columns), each record handed to it (``info`` reads the
    newest file's records for the broker version they show).  A read that fails is
    ``FileReading.failed`` (what it could not read may have held any records), or, with
    ``raise_errors``, raises its ``StoreIOError``."""
    import time

    started = time.perf_counter()
    out = FileQueueOffsets(str(f.path))
    reading = FileReading(out)
    kept = RecordsRead()
    try:
        fast = _handover(f, base, size, last, out, kept) if on_record is None else None
        if fast is not None and fast.columns is not None:
            cols = reading.columns = fast.columns
            reading.end = cols.end
            reading.records = fast.records
            if cols.end.kind == "zeros":  # ``read_to_handover`` found only zeros after it
                reading.tails[cols.end.position] = None
            reading.last_store_timestamp = fast.last_store_timestamp
            if end_findings:  # healthy records: only an END_OF_FILE record can be wrong
                blank = model.blank_size_finding(str(f.path), cols.end.position, cols.end.length, size) if cols.end.kind == "blank" else None
                out.end_findings = [blank] if blank is not None else []
        else:
            # the precise walk reads on from where the one reading handed over (the file's first
            # broken record, a torn tail, stale data, the end of its records): nothing before it again
            start = 0
            if fast is not None:
                start, reading.records, reading.last_store_timestamp = fast.position, fast.records, fast.last_store_timestamp
                reading.record_findings = fast.record_findings
            from mqtool.store.model.commitlog_walk import FileRecords

            walk = reading.walk = FileRecords(f, start, check_crc=True, last=last, file_size=size, base=base)
            for pos, record in walk:
                out.record(pos, record)
                if on_record is not None:
                    on_record(pos, record)
                elif fast is not None:
                    kept.add_record(pos, record)
                reading.records += 1
                reading.last_store_timestamp = record.store_timestamp
            out.walk_end(walk, size)
            reading.tails.update(walk.tails)
            if fast is not None and not kept.full and walk.data_end is not None:
                kept.through = _scan_through(walk.data_end)
                reading.records_read = kept
            if end_findings:
                out.end_findings = reading.record_findings + model.commitlog_file_findings(f, walk, size, last=last, tails=reading.tails, nexts=reading.nexts)
    except StoreIOError as exc:  # what could not be read may have held records
        if raise_errors:
            raise
        out.skip(max(size, f.size) - (exc.position or 0))
        reading.failed = True
    reading.seconds = time.perf_counter() - started
    return reading


def read_newest_file(seg: rmq.Segment, file_size: int | None, on_record: Callable[[int, MessageRecord], None] | None = None) -> FileReading:
    """Walk the newest CommitLog file holding records (``model.last_data_file``: the broker's last
    mapped file) record by record to where its data ends -- a torn tail ends it, as in validate --
    each record handed to ``on_record``: its queue offsets, and how it ends as validate states it
    (``FileQueueOffsets.end_findings``, ``model.commitlog_file_findings``).  ``file_size``: the
    configured CommitLog file size (None: the file's own).  ``info`` reads the active file so when
    the restart preview's reading did not; an error opening or reading the file is raised.
    The reading is :func:`read_file`'s, record by record."""
    with ReadOnlyFile(seg.path) as f:
        return read_file(f, seg.base, file_size or f.size, last=True, end_findings=True, on_record=on_record or _any_record, raise_errors=True)


def _any_record(_pos: int, _record: MessageRecord) -> None:
    """An ``on_record`` that only asks for the record-by-record walk."""


@dataclass(frozen=True)
class WalkResult:
    """What a precise walk of a CommitLog file (``walk_file``) found: ``data_end``, where its
    valid records stop (``valid_end``, a file position) and why -- a clean end (``end``: kinds
    ``blank``, ``zeros``, ``eof``, ``partial``, ``torn``, ``stale``) or the first broken record
    (``broken``, its located ``error``); ``record_findings``: what validate states about the
    records it read (``model.walk_record_findings``: only with the file's ``base``)."""

    data_end: de.DataEnd[str]
    record_findings: list[Finding]

    @classmethod
    def of(cls, walk: FileRecords, record_findings: list[Finding]) -> WalkResult:
        """The result of ``walk``, run to its end."""
        assert walk.data_end is not None
        return cls(walk.data_end, record_findings)

    @property
    def valid_end(self) -> int:
        return self.data_end.position

    @property
    def end(self) -> DataEnd | None:
        """The clean end (None at a broken record)."""
        return cast("DataEnd", self.data_end) if self.data_end.kind != "broken" else None

    @property
    def error(self) -> MqError | None:
        return self.data_end.error


def walk_file(
    f: ReadOnlyFile,
    *,
    check_crc: bool = True,
    last: bool = False,
    file_size: int | None = None,
    base: int | None = None,
    on_record: Callable[[int, MessageRecord], None] | None = None,
) -> WalkResult:
    """The precise walk (``store.model.commitlog_walk.FileRecords``) of the open CommitLog file ``f``
    from its start to where its data ends, each ``(file position, record)`` handed to
    ``on_record``: a recover plan judges the broker's recovery (``CommitLog.recoverNormally``:
    body CRCs with ``check_crc``, the newest file, ``last``, ending at a torn tail) of a file the
    one reading did not read, and where a file's END_OF_FILE record is.  Reads no byte after the
    walk's end."""
    from mqtool.store.model.commitlog_walk import FileRecords

    walk = FileRecords(f, check_crc=check_crc, last=last, file_size=file_size, base=base)
    for pos, record in walk:
        if on_record is not None:
            on_record(pos, record)
    return WalkResult.of(walk, model.walk_record_findings(walk))


def file_records(f: ReadOnlyFile, *, check_crc: bool = True, start: int = 0) -> Iterator[tuple[int, MessageRecord]]:
    """``(file position, record)`` of the open CommitLog file ``f`` from its start (or the record
    at ``start``, one the walk from the start reaches: a reader holding the records before it), in file order,
    by the precise walk (``store.model.commitlog_walk.FileRecords``), to where its valid data ends (an
    END_OF_FILE record, zeros, the first broken record).  Lazy: a consumer that stops early (a
    recover step's range of offsets) reads no further."""
    from mqtool.store.model.commitlog_walk import FileRecords

    yield from FileRecords(f, start, check_crc=check_crc)


def count_records_after(f: ReadOnlyFile, base: int, start: int, nexts: model.NextRecords | None = None, stop: int | None = None) -> int:
    """Decodable records of the open CommitLog file ``f`` (named ``base``) from the first one
    after the failed record at ``start`` (a sync point: PHYSICALOFFSET = its address), resynchronising
    after broken ones: what a cut there would drop.  Counted from the file's one reading; ``nexts``:
    the first one, when the reading found it already (``FileReading.nexts``); ``stop``: where the
    non-zero bytes after ``start`` end (``nonzero_extent``), when known: no record starts after it."""
    first = model.next_record(f, base, start + 1, nexts, stop) if start < f.size else None
    return 0 if first is None else _count_walked(f, base, first)


def count_records_in(f: ReadOnlyFile, base: int) -> int:
    """Decodable records of the open CommitLog file ``f`` (named ``base``), resynchronising after
    broken ones: what a file wholly after the valid end holds.  Counted from the file's one
    reading (``store.model.commitlog_walk``: its healthy stretches as columns, each other record
    decoded), read once."""
    return _count_walked(f, base, 0)


def _count_walked(f: ReadOnlyFile, base: int, start: int) -> int:
    """The records the CommitLog walk reads in ``f`` from the record at ``start`` on."""
    from mqtool.store.model import commitlog_walk as cl_walk

    task = cl_walk.CommitLogTask(str(f.path), base, f.size, False, start=start)
    count = 0
    for ev in cl_walk.read_events(f, task):
        if isinstance(ev, cl_walk.Stretch):
            count += ev.records
        elif isinstance(ev, cl_walk.Record):
            count += 1
    return count


#: CommitLog files smaller than this are walked record by record (the precise walk, which gives the
#: same offsets): for them loading numpy for the column walk costs more than it saves (~100 ms,
#: the precise walk reads ~30 MB/s), and ``mqtool info`` on a small store starts without it.
COLUMN_WALK_MIN_SIZE = 1 << 20


def _handover(f: ReadOnlyFile, base: int, size: int, last: bool, out: FileQueueOffsets, kept: RecordsRead) -> HandoverReading | None:
    """The file read up to its handover (``read_to_handover``, its records given to ``kept``), or
    None: too small to be worth the column walk (the precise walk reads it from its start)."""
    if f.size < COLUMN_WALK_MIN_SIZE:
        return None
    from mqtool.store.model.commitlog import read_to_handover

    return read_to_handover(f, base, file_size=size, is_last=last, offsets=out, kept=kept)


def commitlog_queue_offsets(store: rmq.RocketMQStore, start: int = 0, *, end_findings: bool = False) -> QueueOffsets:
    """The queue offsets of a store's CommitLog, read from ``store.commitlog[start]`` on (the fast
    column walk for healthy files): every break of a queue's sequence (``findings``) and every
    queue's last QUEUEOFFSET, as validate finds them; with ``end_findings``, how each file ends too
    (``QueueOffsets.end_findings``), from the same reading."""
    out = QueueOffsets()
    for _i, seg, _f, reading in read_commitlog(store, start, end_findings=end_findings):
        out.add_file(reading.offsets, seg.base, store.commitlog_file_size)
    return out


def read_commitlog(
    store: rmq.RocketMQStore,
    start: int = 0,
    stop: int | None = None,
    *,
    end_findings: bool = False,
    on_last_record: Callable[[int, MessageRecord], None] | None = None,
) -> Iterator[tuple[int, rmq.Segment, ReadOnlyFile | None, FileReading]]:
    """Read each CommitLog file that holds records (``data_files``) from ``store.commitlog[start]``
    up to before ``store.commitlog[stop]`` once (``read_file``), in order: ``(index, file, the open
    file, its reading)``, the file still open while the consumer looks at the reading (a read inside
    the piece it keeps costs no I/O); None for a file that cannot be opened (its reading says so).
    ``on_last_record``: the last data file is walked record by record, each record handed to it,
    and its reading states how it ends (``FileQueueOffsets.end_findings``)."""
    newest = model.last_data_file(store.commitlog)
    files = [(i, seg) for i, seg in enumerate(store.commitlog) if seg.size > 0 and i <= newest]  # ``data_files``
    last = files[-1][0] if files else -1
    for i, seg in files:
        if i < start or (stop is not None and i >= stop):
            continue
        size = store.commitlog_file_size or seg.size
        try:
            f = ReadOnlyFile(seg.path)
        except MqError:  # RMQ-FILE-UNREADABLE: none of its records is known, any may have been there
            offsets = FileQueueOffsets(str(seg.path))
            offsets.skip(size)
            yield i, seg, None, FileReading(offsets, failed=True)
            continue
        with f:
            hook = on_last_record if i == newest else None
            kept = _kept(str(seg.path)) if hook is None else None
            from_kept = _from_kept(f, kept, seg.base, size, i == last, end_findings) if kept is not None else None
            if from_kept is not None:
                yield i, seg, f, from_kept
                continue
            yield i, seg, f, read_file(f, seg.base, size, last=i == last, end_findings=end_findings or hook is not None, on_record=hook)


def queue_offsets_before(store: rmq.RocketMQStore, index: int, keys: Iterable[QueueKey], known: Mapping[str, FileQueueOffsets] | None = None) -> QueueOffsets:
    """The queue offsets the files before ``store.commitlog[index]`` leave for the queues ``keys``:
    the files are read backwards only as far as the last record of each of them (a queue's state
    after a file depends only on the last file holding it and the bytes skipped after), then
    joined in order.  What the next file's first records of those queues must follow.
    ``known``: the queue offsets of files a reading read already (by path), not read again."""
    wanted = set(keys)
    files = [(i, seg) for i, seg in data_files(store) if i < index]
    read: list[tuple[rmq.Segment, FileQueueOffsets]] = []
    for _i, seg in reversed(files):
        if not wanted:
            break
        offsets = known.get(str(seg.path)) if known else None
        if offsets is None:
            offsets = file_queue_offsets(store, seg, last=False)
        read.append((seg, offsets))
        wanted -= set(offsets.queues)
    out = QueueOffsets()
    for seg, offsets in reversed(read):
        out.add_file(offsets, seg.base, store.commitlog_file_size)
    out.findings.clear()  # the breaks of those files are theirs, not the next file's
    return out


# --- the ConsumeQueue's end against the CommitLog --------------------------------------------------


def queue_lag_finding(store: rmq.RocketMQStore, topic: str, queue_id: int, last_queue_offset: int | None, max_offset: int, *, live: bool = False) -> Finding | None:
    """RMQ-CQ-LAG when the queue's ConsumeQueue ends (``max_offset``) before the CommitLog's last
    record of it (``last_queue_offset``, ``QueueOffsets.last_queue_offset``): records not
    dispatched.  On a live store (a writer holds the lock) dispatch normally trails: info."""
    if last_queue_offset is None or last_queue_offset + 1 <= max_offset:
        return None
    return Finding(
        RMQ_CQ_LAG,
        str(rmq.queue_dir(store, topic, queue_id)),
        None,
        f"{topic}/{queue_id}: expected the queue to reach offset {last_queue_offset + 1} (the CommitLog holds records up to "
        f"queue offset {last_queue_offset}), found max offset {max_offset}: {last_queue_offset + 1 - max_offset} record(s) not dispatched"
        + (" (a writer holds the lock: dispatch normally trails the CommitLog)" if live else ""),
        details={"missing_units": last_queue_offset + 1 - max_offset},
        severity=Severity.info if live else None,
    )


def missing_queue_findings(store: rmq.RocketMQStore, edges: Mapping[QueueKey, QueueEdge], *, live: bool = False) -> list[Finding]:
    """RMQ-CQ-MISSING-QUEUE for each queue of ``edges`` (its CommitLog records) that has no
    ConsumeQueue directory in a store that has ``consumequeue/``.  A queue under a symbolic link
    is reported as the link (RMQ-FILE-LINK), not as missing; on a live store a directory created
    since the queues were listed is not missing."""
    if not store.consumequeue_dir.is_dir():
        return []
    queues = set(store.queues())
    linked = {p.relative_to(store.consumequeue_dir).parts for p, _ in store.irregular_queue_dirs()}
    out: list[Finding] = []
    for (topic, queue_id), edge in sorted(edges.items()):
        if (topic, queue_id) in queues or {(topic,), (topic, str(queue_id))} & linked:
            continue
        qdir = rmq.queue_dir(store, topic, queue_id)
        if live and qdir.is_dir():
            continue  # created by the writer after the queues were listed
        out.append(
            Finding(
                RMQ_CQ_MISSING_QUEUE,
                str(qdir),
                None,
                f"{edge.count} CommitLog record(s) of {topic}/{queue_id} (queue offsets {edge.first}..{edge.last}) have no ConsumeQueue directory",
            )
        )
    return out
