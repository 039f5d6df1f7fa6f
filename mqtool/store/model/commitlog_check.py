"""The judge of one RocketMQ CommitLog file: every record, every damaged region, how the file ends.

One task (:class:`CommitLogTask`) names a file: its path, the commitlog offset its name says
(``base``), the configured file size, whether it is the newest file holding data (``is_last``),
whether a writer holds the store's lock (``live``), the base it would have after its predecessor
when its name says otherwise (``alt_base``), the piece size, and the fast-path options.

:func:`read_events` is the reading, as typed events: one :class:`Columns` for a healthy file, or
the precise walk's :class:`Record`, :class:`Rebased` and :class:`Damage` events in file order
(each finding with its position, the commitlog range it covers, the bytes it skips), then how the
file ends (its findings as :class:`Damage`) and one :class:`FileEnd`.  :func:`check_commitlog_file`
folds them, with the queue-offset continuity rule and the bulk cross-checks of a healthy file's
ConsumeQueue units and IndexFile keys, into a :class:`CommitLogFileResult` (picklable: validate
runs tasks in worker processes).  It never raises on data.

The reading has two speeds:

* **Healthy files as columns.** :func:`mqtool.store.model.commitlog.read_file_columns` frames the
  file's records in vectorised steps; when every record is healthy and the file ends the way the
  broker ends one, the result is filled from the columns (records, queue-offset runs, store
  timestamps, how the file ends), and the file's ConsumeQueue units and IndexFile keys are
  cross-checked in bulk.
* **The precise walk around an anomaly.** Otherwise the file is read again in pieces
  (``CommitLogTask.piece`` bytes, default :func:`mqtool.store.files.piece_size`) with the record
  decoders, which judge every record as upstream ``CommitLog.checkMessageAndReturnSize`` does
  (TOTALSIZE, MAGICCODE, body CRC, every length, properties, PHYSICALOFFSET = its address) and
  name each finding.  Where ``CommitLog.recoverAbnormally`` would stop (the first broken record),
  this walk reports the record, resynchronises -- right after the record when its frame still
  holds, else at the next valid record (:func:`mqtool.store.rocketmq.find_next_record`), the bytes
  between an RMQ-CL-UNREADABLE-REGION -- and goes on, so that the rest of the file is checked
  too.  A record that crosses a piece boundary is read whole by the next piece
  (:func:`mqtool.store.rocketmq.piece_goes_on`, the one rule of every CommitLog walk).

How the file ends follows the broker: a file before the last ends in an END_OF_FILE blank
(``CommitLog.BLANK_MAGIC_CODE``, RMQ-CL-NO-BLANK otherwise); the newest file's valid data ends at
zeros, a blank, or the end of the file (RMQ-CL-VALID-END says where), and what the broker would
overwrite after it is a torn tail (a crash while writing), stale data (a copy of records that
belong elsewhere), or garbage.  A live store's newest file is read a second time when its tail
looks wrong: a tail that grew meanwhile was an append in progress (RMQ-CL-IN-PROGRESS).

Each damage is reported once, where it is: the result carries the commitlog ranges it reported
(broken records, skipped regions, a torn tail, an unreadable file), so that ConsumeQueue units
and IndexFile entries pointing into them are not reported again (:func:`in_ranges`), and the
records its skipped bytes may have held (``store.model.queue_offsets``).

Why the precise walk is its own piecewise loop here and not a
:class:`mqtool.store.rocketmq.CommitLogFileWalk`: that walk ends at the first broken record
(``CommitLog.recoverNormally``'s view, which recover, dump and info want), while this one reports
and resynchronises; it also decides a misnamed file's base from its first record, keeps a record
whose TOTALSIZE reaches past the end of a file that was cut short for RMQ-FILE-SIZE, and judges
each record's bytes in the piece it was read in (no copy).  Rebuilding those on the walk's
``start``/``stop`` would restart it at every resync and rebuild these rules around it; the loop
stays here, the only code that judges a CommitLog file's bytes for validate.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace

from mqtool.errors import MqError, StoreIOError, TruncatedDataError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import (
    RMQ_CL_AFTER_BLANK,
    RMQ_CL_PHYS_OFFSET,
    RMQ_CL_UNREADABLE_REGION,
    RMQ_CL_VALID_END,
    RMQ_FILE_UNREADABLE,
)
from mqtool.formats.rocketmq.commitlog import (
    BORNHOST_POSITION,
    MessageRecord,
    RecordWalker,
    host_size,
    peek_physical_offset,
    peek_store_timestamp,
)
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, nonzero_extent, piece_size
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import rocketmq as model
from mqtool.store.model.queue_offsets import FileQueueOffsets


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
    #: Every topic/queue's QUEUEOFFSETs in this file, and the records its skipped bytes may have
    #: held (``store.model.queue_offsets``: the continuity rule every reader applies too).
    offsets: FileQueueOffsets = field(init=False)

    def __post_init__(self) -> None:
        self.offsets = FileQueueOffsets(self.path)


@dataclass(frozen=True)
class CommitLogTask:
    path: str
    base: int
    file_size: int
    is_last: bool  # the last file holding data: ends in zeros, not END_OF_FILE
    check_properties: bool = True
    #: A writer holds the store's lock: a tail that changes while we read it is in progress.
    live: bool = False
    #: The base the file would have after its predecessor, when its name says otherwise.
    alt_base: int | None = None
    #: Bytes per read of the precise walk (0: ``store.files.piece_size()``).
    piece: int = 0
    #: The fast path (healthy files read as columns; see ``mqtool.store.model.commitlog``):
    #: the store root and ConsumeQueue file size to verify the file's units against (0: no
    #: ConsumeQueue check), the directory to leave the file's index key table in (None: no
    #: IndexFile check).  ``fast=False`` reads every file with the precise decoders.
    fast: bool = True
    root: str = ""
    cq_file_size: int = 0
    keys_dir: str | None = None


def _header_store_timestamp(f: ReadOnlyFile, base: int, pos: int) -> int:
    """STORETIMESTAMP of a broken record whose header can be trusted (its own PHYSICALOFFSET):
    the checkpoint may count it.  0 otherwise."""
    head = f.pread(pos, BORNHOST_POSITION + host_size(True) + 8)
    if len(head) < BORNHOST_POSITION + host_size(False) + 8:
        return 0
    if peek_physical_offset(head) != base + pos:
        return 0
    try:
        return peek_store_timestamp(head)
    except TruncatedDataError:  # an IPv6 BORNHOST pushes it past the bytes there are
        return 0


# --- the events of one file's reading ----------------------------------------------------------------


@dataclass(frozen=True)
class Columns:
    """The whole file is healthy and was read as columns (the fast path): its records, their
    queue runs, where and how its data ends.  Followed by the findings of how it ends (info
    only: RMQ-CL-VALID-END) and :class:`FileEnd`."""

    columns: model_cl.FileColumns


@dataclass(slots=True)
class Record:
    """One record the precise walk decoded at file ``position``; the findings about its own
    bytes (``model.record_findings``) are the :class:`Damage` events just before it."""

    position: int
    record: MessageRecord


@dataclass(frozen=True)
class Rebased:
    """The file's records say it starts at commitlog offset ``base``, not at its name's (a
    misnamed file, RMQ-FILE-OVERLAP/GAP/ALIGN): every address after this event is from it."""

    base: int


@dataclass(frozen=True)
class Damage:
    """What the reading states about one region of the file, in file order: ``finding`` (a
    broken record, a region it skipped, a torn tail, stale data, garbage, a missing or odd
    END_OF_FILE; also the info RMQ-CL-VALID-END saying where the valid data ends), or None for
    an event that only covers or skips bytes or moves the valid end.  ``covers``: the commitlog
    range [start, stop) reported (what points into it is not reported again); ``skipped``: bytes
    the reading skipped (the records they may have held, ``FileQueueOffsets.skip``); ``torn``:
    it ended at one record it does not take; ``valid_end``: where the valid data ends as far as
    the reading knows, before it reads on (at a broken record, at the end of the records);
    ``store_timestamp``: a broken record's STORETIMESTAMP when its header is trusted."""

    finding: Finding | None
    covers: tuple[int, int] | None = None
    skipped: int | None = None
    torn: bool = False
    valid_end: int | None = None
    store_timestamp: int = 0


@dataclass(frozen=True)
class FileEnd:
    """How the reading of the file ended: ``valid_end`` (the file position where its valid
    records stop), ``kind`` -- the clean ends ``blank``, ``zeros``, ``eof``, ``partial`` (a file
    cut short), ``stale`` and ``torn`` in the newest file, or ``broken`` (a broken record with no
    valid record after it) -- ``first_broken`` (the file position of its first broken record;
    the reading went on past it) and the bytes it read."""

    valid_end: int
    kind: str
    bytes_read: int
    first_broken: int | None = None


Event = Columns | Record | Rebased | Damage | FileEnd


def read_events(f: ReadOnlyFile, task: CommitLogTask) -> Iterator[Event]:
    """The judge's reading of one open CommitLog file, as events (see the module docstring): a
    healthy file (with ``task.fast``) as one :class:`Columns`, any other file by the precise walk
    as :class:`Record`, :class:`Rebased` and :class:`Damage` events in file order; then how the
    file ends (its :class:`Damage` findings) and one :class:`FileEnd`.  Raises ``StoreIOError``
    when the file cannot be read."""
    if task.fast:
        cols = model_cl.read_file_columns(f, task.base, file_size=task.file_size, is_last=task.is_last)
        if cols is not None:
            end = cols.end
            if end.kind == "blank":
                ends = list(_blank_damage(f, task, task.base, end.position, end.length))
            elif task.is_last:
                ends = [Damage(_valid_end_finding(task.path, task.base, end.position, end.kind))]
            else:
                ends = []
            if all(d.finding is None or d.finding.level is Severity.info for d in ends):
                yield Columns(cols)
                yield from ends
                yield FileEnd(end.position, end.kind, cols.bytes_read)
                return
    yield from _walk_commitlog_file(f, task)


# --- validate's result ---------------------------------------------------------------------------


def check_commitlog_file(task: CommitLogTask) -> CommitLogFileResult:
    """Every record of one CommitLog file and how the file ends.  Never raises on data."""
    res = CommitLogFileResult(task.path, task.base, 0)
    try:
        f = ReadOnlyFile(task.path)
    except MqError as exc:
        res.findings.append(Finding(RMQ_FILE_UNREADABLE, task.path, None, str(exc)))
        # as for a read that fails midway: what points into the file is not reported again
        res.damaged.append((task.base, task.base + task.file_size))
        res.offsets.skip(task.file_size)  # and it may have held records of any queue
        return res
    with f:
        res.size = f.size
        try:
            _assemble(task, res, read_events(f, task))
            if task.live and task.is_last and any(x.level is not Severity.info for x in res.findings):
                res = _recheck_live_tail(task, res)
        except StoreIOError as exc:
            res.findings.append(Finding(RMQ_FILE_UNREADABLE, task.path, exc.position, str(exc)))
            # What could not be read is reported once, not again by what points into it.
            start, stop = exc.position or 0, max(task.file_size, f.size)
            res.damaged.append((task.base + start, task.base + stop))
            res.offsets.skip(stop - start)
    return res


def _assemble(task: CommitLogTask, res: CommitLogFileResult, events: Iterator[Event]) -> None:
    """Fold one file's events into ``res``: records, queue offsets (the store model's continuity
    rule, ``FileQueueOffsets.record``), timestamps, findings, the ranges they cover."""
    base = task.base
    offsets = res.offsets
    for ev in events:
        if type(ev) is Record:
            at, rec = ev.position, ev.record
            if (broke := offsets.record(at, rec)) is not None:
                res.findings.append(broke)
                res.damaged.append((base + at, base + at + rec.total_size))
            res.records += 1
            res.max_store_timestamp = max(res.max_store_timestamp, rec.store_timestamp)
            res.last_store_timestamp = rec.store_timestamp
        elif isinstance(ev, Damage):
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
            base = res.content_base = ev.base
        elif isinstance(ev, Columns):
            cols = ev.columns
            if task.cq_file_size and task.root:
                store = rmq.open_store(task.root, commitlog_file_size=task.file_size)
                res.verified = model_cl.verify_queue_units(store, task.base, cols, task.cq_file_size)
            if task.keys_dir is not None:
                model_cl.save_key_table(task.keys_dir, task.base, cols)
            res.records = len(cols.columns)
            res.offsets = offsets = FileQueueOffsets.from_runs(task.path, cols.queues)
            res.max_store_timestamp = int(cols.columns.store_timestamp.max(initial=0))
            res.last_store_timestamp = int(cols.columns.store_timestamp[-1]) if len(cols.columns) else 0
        elif isinstance(ev, FileEnd):
            res.valid_end = ev.valid_end
            res.first_broken = ev.first_broken
            res.bytes_read = ev.bytes_read


def _recheck_live_tail(task: CommitLogTask, first: CommitLogFileResult) -> CommitLogFileResult:
    """A writer is appending to this file: what looked wrong at its tail may be a record being
    written.  Read the file again a moment later; if more valid data now follows, the first
    read's tail findings were an in-progress append, reported as one RMQ-CL-IN-PROGRESS."""
    for delay in model.LIVE_TAIL_DELAYS:
        time.sleep(delay)
        second = CommitLogFileResult(task.path, task.base, 0)
        with ReadOnlyFile(task.path) as f:
            second.size = f.size
            _assemble(task, second, _walk_commitlog_file(f, task))
        if second.valid_end > first.valid_end:
            tail = first.valid_end
            kept = [x for x in first.findings if x.level is Severity.info or x.position is None or x.position < tail]
            kept = [x for x in kept if x.code != RMQ_CL_VALID_END]
            kept.append(model.in_progress_finding(task.path, tail, second.valid_end - tail))
            first.findings = kept
            first.damaged = [r for r in first.damaged if r[0] < task.base + tail]
            return first
    return first


# --- the precise walk ------------------------------------------------------------------------------


@dataclass
class _Walk:
    """Where the precise walk stands: the records' base, records so far, the first broken
    record, the valid end as far as known, bytes read."""

    base: int
    records: int = 0
    first_broken: int | None = None
    valid_end: int = 0
    bytes_read: int = 0
    #: how a walk that stops at a broken record stopped: ``torn`` or ``broken``
    stopped: str = "broken"

    def end(self, kind: str) -> FileEnd:
        return FileEnd(self.valid_end, kind, self.bytes_read, self.first_broken)


def _walk_commitlog_file(f: ReadOnlyFile, task: CommitLogTask) -> Iterator[Event]:
    """The precise walk over the whole file, a piece (``task.piece``) at a time."""
    path = task.path
    st = _Walk(task.base)  # st.base becomes the records' base for a misnamed file
    pos = 0
    piece = want = task.piece or piece_size()
    while True:
        data = f.pread(pos, want)
        want = piece
        st.bytes_read += len(data)
        walker = RecordWalker(data, 0, check_crc=True)
        try:
            for p, rec in walker:
                at = pos + p
                if rec.physical_offset != st.base + at:
                    if not st.records and task.alt_base is not None and rec.physical_offset == task.alt_base + at:
                        st.base = task.alt_base  # misnamed: RMQ-FILE-OVERLAP/GAP/ALIGN say so
                        yield Rebased(st.base)
                    elif task.is_last and rmq.is_stale_copy(f, st.base, at, rec, task.file_size):
                        # A record at ``at`` of the last file that claims another place, with no
                        # record at its own place after it: valid data ends here and the rest is
                        # stale (copied or left behind) data.
                        extent = nonzero_extent(f, at)
                        stop = extent[1] if extent else at + rec.total_size
                        st.valid_end = at
                        yield Damage(model.stale_finding(path, at, stop, rec.physical_offset))
                        yield Damage(Finding(RMQ_CL_VALID_END, path, at, f"valid data ends at commitlog offset {st.base + at} (stale data follow)"))
                        yield st.end("stale")
                        return
                # the store model's rule (every reader's walk applies it): a decoded record whose
                # last byte is zero is a torn tail when only zeros follow
                if task.is_last and not data[p + rec.total_size - 1]:
                    torn = rmq.torn_record_tail(f, at, rec, 0, task.file_size)
                    if torn is not None:
                        yield _torn_damage(task, torn, st.base)
                        st.valid_end = at
                        yield st.end("torn")
                        return
                found = model.record_findings(path, st.base, at, rec, memoryview(data)[p : p + rec.total_size], check_properties=task.check_properties)
                if found:
                    covers = (st.base + at, st.base + at + rec.total_size) if any(x.code == RMQ_CL_PHYS_OFFSET for x in found) else None
                    for x in found:
                        yield Damage(x)
                    if covers is not None:
                        yield Damage(None, covers=covers)
                yield Record(at, rec)
                st.records += 1
        except MqError as exc:
            resume = yield from _after_broken_record(f, task, pos + (walker.failed_at or 0), exc.at(path, pos), st)
            if resume is None:
                yield st.end(st.stopped)
                return
            pos = resume
            continue
        end = walker.end
        assert end is not None
        end_pos = pos + end.position
        more = pos + len(data) < f.size
        cut_short = f.size < task.file_size and not task.is_last  # its end is RMQ-FILE-SIZE's
        if end.kind == "partial" and not cut_short and (not more or end.length > rmq.MAX_RECORD_SIZE):
            # A record reaching past the end of the file: a torn write in the last file, else a
            # broken TOTALSIZE (the broker never writes a record past the end of a file).
            resume = yield from _after_broken_record(f, task, end_pos, rmq.past_the_end_error(f, end_pos, end.length), st)
            if resume is None:
                yield st.end(st.stopped)
                return
            pos = resume
            continue
        if rmq.piece_goes_on(end.kind, end.position, len(data), more):
            if end.kind == "partial" and end.position == 0:
                want = max(end.length, piece)
            pos = end_pos
            continue
        break
    yield from _end_damage(f, task, st, end_pos, end.kind, end.length)
    yield st.end(end.kind)


def _end_damage(f: ReadOnlyFile, task: CommitLogTask, st: _Walk, end_pos: int, kind: str, length: int) -> Iterator[Damage]:
    """How a file the precise walk read to its end ends (``kind`` at ``end_pos``)."""
    path = task.path
    base = st.base
    st.valid_end = end_pos
    yield Damage(None, valid_end=end_pos)  # known before the end's bytes are read
    if kind == "blank":
        yield from _blank_damage(f, task, base, end_pos, length)
        return
    if not task.is_last:
        if f.size < task.file_size and kind in ("partial", "eof"):
            # The file was cut short (RMQ-FILE-SIZE): what is missing is not a second finding.
            yield Damage(None, covers=(base + end_pos, base + task.file_size), skipped=task.file_size - end_pos)
            return
        yield Damage(model.no_blank_finding(path, end_pos, kind))
        return
    if kind == "zeros":
        extent = nonzero_extent(f, end_pos)
        if extent is not None:
            ignored = st.first_broken is None and model.ignored_tail(f, base, end_pos)
            yield Damage(model.garbage_finding(path, end_pos, extent, ignored=ignored))
    if st.first_broken is not None:  # where recover and the broker stop, not only where the records end
        bad = st.first_broken
        yield Damage(
            Finding(
                RMQ_CL_VALID_END,
                path,
                bad,
                f"valid data ends at commitlog offset {base + bad} (a broken record: the broker's recovery and "
                f"`mqtool recover` stop there); records go on to {base + end_pos} ({kind} follow)",
            )
        )
        return
    yield Damage(_valid_end_finding(path, base, end_pos, kind))


def _valid_end_finding(path: str, base: int, pos: int, kind: str) -> Finding:
    return Finding(RMQ_CL_VALID_END, path, pos, f"valid data ends at commitlog offset {base + pos} ({kind} follow)")


def _after_broken_record(f: ReadOnlyFile, task: CommitLogTask, bad: int, exc: MqError, st: _Walk) -> Generator[Damage, None, int | None]:
    """Report the record that fails at ``bad`` (or the torn tail it is) and return where the walk
    goes on: right after it when its TOTALSIZE or its length fields end where the data goes on,
    else at the next valid record (the bytes between are an unreadable region).  None: stop."""
    st.valid_end = bad
    yield Damage(None, valid_end=bad)  # known before the record's bytes are read again
    base = st.base
    if task.is_last:
        # In the last file, a record whose bytes stop early and are followed only by zeros is a
        # torn tail (a crash while writing), not damage (``rmq.torn_tail_at``).
        torn = rmq.torn_tail_at(f, bad, task.file_size)
        if torn is not None:
            st.stopped = "torn"
            yield _torn_damage(task, torn, base)
            return None
    if st.first_broken is None:
        st.first_broken = bad
    code, located, frames = rmq.classify_broken_record(f, bad, exc)
    # at the valid end of the newest file, bytes the broker overwrites (the store model's rule): a warning
    ignored = task.is_last and st.first_broken == bad and model.ignored_tail(f, base, bad)
    level = Severity.warning if ignored else None
    reason = located.reason + (f"; {model.IGNORED_TAIL.format(end=bad)}" if ignored else "")
    yield Damage(Finding(code, task.path, located.position, reason, severity=level), store_timestamp=_header_store_timestamp(f, base, bad))
    resume = next((bad + n for n in sorted(frames) if rmq.clean_at(f, base, bad + n)), None)
    region = None
    if resume is None:
        resume = rmq.find_next_record(f, base, bad + 1)
        if resume is None:
            extent = nonzero_extent(f, bad)
            stop = extent[1] if extent else bad
            st.stopped = "broken"
            yield Damage(
                Finding(
                    RMQ_CL_UNREADABLE_REGION,
                    task.path,
                    bad,
                    f"no valid record after the broken one: {stop - bad} bytes up to position {stop} cannot be read",
                    length=stop - bad,
                    severity=level,
                ),
                covers=(base + bad, base + max(stop, bad + 1)),
                skipped=f.size - bad,
            )
            return None
        region = Finding(
            RMQ_CL_UNREADABLE_REGION,
            task.path,
            bad,
            f"{resume - bad} bytes between the broken record and the next valid record at {resume} were skipped",
            length=resume - bad,
            severity=level,
        )
    yield Damage(region, covers=(base + bad, base + resume), skipped=resume - bad)
    return resume


def _torn_damage(task: CommitLogTask, torn: rmq.TornTail, base: int) -> Damage:
    return Damage(model.torn_tail_finding(task.path, torn.position, torn), covers=torn.damaged(base), torn=True)


def _blank_damage(f: ReadOnlyFile, task: CommitLogTask, base: int, pos: int, total: int) -> Iterator[Damage]:
    """The END_OF_FILE record at ``pos`` (``total`` its TOTALSIZE) and the bytes after its header."""
    # the configured size: a file of the wrong size is RMQ-FILE-SIZE
    blank = model.blank_size_finding(task.path, pos, total, task.file_size)
    if blank is not None:
        yield Damage(blank)
    if task.is_last:
        yield Damage(Finding(RMQ_CL_VALID_END, task.path, pos, f"valid data ends at commitlog offset {base + pos} (END_OF_FILE)"))
    extent = nonzero_extent(f, pos + 8)
    if extent is not None:
        first, stop = extent
        yield Damage(
            Finding(
                RMQ_CL_AFTER_BLANK,
                task.path,
                first,
                f"{stop - first} non-zero bytes after the END_OF_FILE header; never read by the broker "
                "(4.x writes the whole blank from its reused encode buffer, 5.x only the 8-byte header)",
                length=stop - first,
            )
        )


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
