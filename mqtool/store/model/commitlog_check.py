"""The judge of one RocketMQ CommitLog file: every record, every damaged region, how the file ends.

One task (:class:`CommitLogTask`) names a file: its path, the commitlog offset its name says
(``base``), the configured file size, whether it is the newest file holding data (``is_last``),
whether a writer holds the store's lock (``live``), the base it would have after its predecessor
when its name says otherwise (``alt_base``), and the fast-path options.  :func:`check_commitlog_file`
reads it and returns a :class:`CommitLogFileResult` (picklable: validate runs tasks in worker
processes).  It never raises on data.

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
            if task.fast and _fast_commitlog_file(f, task, res):
                return res
            _walk_commitlog_file(f, task, res)
            if task.live and task.is_last and any(x.level is not Severity.info for x in res.findings):
                res = _recheck_live_tail(task, res)
        except StoreIOError as exc:
            res.findings.append(Finding(RMQ_FILE_UNREADABLE, task.path, exc.position, str(exc)))
            # What could not be read is reported once, not again by what points into it.
            start, stop = exc.position or 0, max(task.file_size, f.size)
            res.damaged.append((task.base + start, task.base + stop))
            res.offsets.skip(stop - start)
    return res


def _fast_commitlog_file(f: ReadOnlyFile, task: CommitLogTask, res: CommitLogFileResult) -> bool:
    """Fill ``res`` from the file's columns when the file is healthy (True), else leave it alone
    (False: the precise walk reads the file).  Gives exactly what the precise walk gives for a
    healthy file: the records, queue edges, timestamps, how the file ends."""
    cols = model_cl.read_file_columns(f, task.base, file_size=task.file_size, is_last=task.is_last)
    if cols is None:
        return False
    end = cols.end
    fast = CommitLogFileResult(task.path, task.base, f.size, records=len(cols.columns), valid_end=end.position, bytes_read=cols.bytes_read)
    fast.offsets = FileQueueOffsets.from_runs(task.path, cols.queues)
    fast.max_store_timestamp = cols.columns.store_timestamp.max(initial=0)
    fast.last_store_timestamp = int(cols.columns.store_timestamp[-1]) if len(cols.columns) else 0
    fast.max_store_timestamp = int(fast.max_store_timestamp)
    if end.kind == "blank":
        _check_blank(f, task, end.position, end.length, fast)
    elif task.is_last:
        fast.findings.append(Finding(RMQ_CL_VALID_END, task.path, end.position, f"valid data ends at commitlog offset {task.base + end.position} ({end.kind} follow)"))
    if any(x.level is not Severity.info for x in fast.findings):
        return False
    if task.cq_file_size and task.root:
        store = rmq.open_store(task.root, commitlog_file_size=task.file_size)
        fast.verified = model_cl.verify_queue_units(store, task.base, cols, task.cq_file_size)
    if task.keys_dir is not None:
        model_cl.save_key_table(task.keys_dir, task.base, cols)
    res.__dict__.update(fast.__dict__)
    return True


def _recheck_live_tail(task: CommitLogTask, first: CommitLogFileResult) -> CommitLogFileResult:
    """A writer is appending to this file: what looked wrong at its tail may be a record being
    written.  Read the file again a moment later; if more valid data now follows, the first
    read's tail findings were an in-progress append, reported as one RMQ-CL-IN-PROGRESS."""
    for delay in model.LIVE_TAIL_DELAYS:
        time.sleep(delay)
        second = CommitLogFileResult(task.path, task.base, 0)
        with ReadOnlyFile(task.path) as f:
            second.size = f.size
            _walk_commitlog_file(f, task, second)
        if second.valid_end > first.valid_end:
            tail = first.valid_end
            kept = [x for x in first.findings if x.level is Severity.info or x.position is None or x.position < tail]
            kept = [x for x in kept if x.code != RMQ_CL_VALID_END]
            kept.append(model.in_progress_finding(task.path, tail, second.valid_end - tail))
            first.findings = kept
            first.damaged = [r for r in first.damaged if r[0] < task.base + tail]
            return first
    return first


def _walk_commitlog_file(f: ReadOnlyFile, task: CommitLogTask, res: CommitLogFileResult) -> None:
    path = task.path
    base = task.base  # becomes the records' base for a misnamed file
    offsets = res.offsets
    pos = 0
    piece = want = task.piece or piece_size()
    end = None
    while True:
        data = f.pread(pos, want)
        want = piece
        res.bytes_read += len(data)
        walker = RecordWalker(data, 0, check_crc=True)
        try:
            for p, rec in walker:
                at = pos + p
                if rec.physical_offset != base + at:
                    if not res.records and task.alt_base is not None and rec.physical_offset == task.alt_base + at:
                        base = res.content_base = task.alt_base  # misnamed: RMQ-FILE-OVERLAP/GAP/ALIGN say so
                    elif task.is_last and rmq.is_stale_copy(f, base, at, rec, task.file_size):
                        _stale_tail(f, task, at, rec, base, res)
                        return
                # the store model's rule (every reader's walk applies it): a decoded record whose
                # last byte is zero is a torn tail when only zeros follow
                if task.is_last and not data[p + rec.total_size - 1]:
                    torn = rmq.torn_record_tail(f, at, rec, 0, task.file_size)
                    if torn is not None:
                        _report_torn(task, torn, base, res)
                        res.valid_end = at
                        return
                _check_record(rec, base, at, path, res, task.check_properties, data, p)
                if (broke := offsets.record(at, rec)) is not None:  # the store model's queue-offset continuity rule
                    res.findings.append(broke)
                    res.damaged.append((base + at, base + at + rec.total_size))
                res.records += 1
                res.max_store_timestamp = max(res.max_store_timestamp, rec.store_timestamp)
                res.last_store_timestamp = rec.store_timestamp
        except MqError as exc:
            resume = _after_broken_record(f, task, pos + (walker.failed_at or 0), exc.at(path, pos), base, res)
            if resume is None:
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
            resume = _after_broken_record(f, task, end_pos, rmq.past_the_end_error(f, end_pos, end.length), base, res)
            if resume is None:
                return
            pos = resume
            continue
        if rmq.piece_goes_on(end.kind, end.position, len(data), more):
            if end.kind == "partial" and end.position == 0:
                want = max(end.length, piece)
            pos = end_pos
            continue
        break
    res.valid_end = end_pos
    if end.kind == "blank":
        _check_blank(f, task, end_pos, end.length, res)
        return
    if not task.is_last:
        if f.size < task.file_size and end.kind in ("partial", "eof"):
            # The file was cut short (RMQ-FILE-SIZE): what is missing is not a second finding.
            res.damaged.append((base + end_pos, base + task.file_size))
            res.offsets.skip(task.file_size - end_pos)
            return
        res.findings.append(model.no_blank_finding(path, end_pos, end.kind))
        return
    if end.kind == "zeros":
        extent = nonzero_extent(f, end_pos)
        if extent is not None:
            ignored = res.first_broken is None and model.ignored_tail(f, base, end_pos)
            res.findings.append(model.garbage_finding(path, end_pos, extent, ignored=ignored))
    if res.first_broken is not None:  # where recover and the broker stop, not only where the records end
        bad = res.first_broken
        res.findings.append(
            Finding(
                RMQ_CL_VALID_END,
                path,
                bad,
                f"valid data ends at commitlog offset {base + bad} (a broken record: the broker's recovery and "
                f"`mqtool recover` stop there); records go on to {base + end_pos} ({end.kind} follow)",
            )
        )
        return
    res.findings.append(Finding(RMQ_CL_VALID_END, path, end_pos, f"valid data ends at commitlog offset {base + end_pos} ({end.kind} follow)"))


def _after_broken_record(f: ReadOnlyFile, task: CommitLogTask, bad: int, exc: MqError, base: int, res: CommitLogFileResult) -> int | None:
    """Report the record that fails at ``bad`` (or the torn tail it is) and return where the walk
    goes on: right after it when its TOTALSIZE or its length fields end where the data goes on,
    else at the next valid record (the bytes between are an unreadable region).  None: stop."""
    res.valid_end = bad
    if _torn_tail(f, task, bad, base, res):
        return None
    if res.first_broken is None:
        res.first_broken = bad
    code, located, frames = rmq.classify_broken_record(f, bad, exc)
    # at the valid end of the newest file, bytes the broker overwrites (the store model's rule): a warning
    ignored = task.is_last and res.first_broken == bad and model.ignored_tail(f, base, bad)
    level = Severity.warning if ignored else None
    res.findings.append(Finding(code, task.path, located.position, located.reason + (f"; {model.IGNORED_TAIL.format(end=bad)}" if ignored else ""), severity=level))
    res.max_store_timestamp = max(res.max_store_timestamp, _header_store_timestamp(f, base, bad))
    resume = next((bad + n for n in sorted(frames) if rmq.clean_at(f, base, bad + n)), None)
    if resume is None:
        resume = rmq.find_next_record(f, base, bad + 1)
        if resume is None:
            extent = nonzero_extent(f, bad)
            stop = extent[1] if extent else bad
            res.findings.append(
                Finding(
                    RMQ_CL_UNREADABLE_REGION,
                    task.path,
                    bad,
                    f"no valid record after the broken one: {stop - bad} bytes up to position {stop} cannot be read",
                    length=stop - bad,
                    severity=level,
                )
            )
            res.damaged.append((base + bad, base + max(stop, bad + 1)))
            res.offsets.skip(f.size - bad)
            return None
        res.findings.append(
            Finding(
                RMQ_CL_UNREADABLE_REGION,
                task.path,
                bad,
                f"{resume - bad} bytes between the broken record and the next valid record at {resume} were skipped",
                length=resume - bad,
                severity=level,
            )
        )
    res.damaged.append((base + bad, base + resume))
    res.offsets.skip(resume - bad)
    return resume


def _stale_tail(f: ReadOnlyFile, task: CommitLogTask, at: int, rec: MessageRecord, base: int, res: CommitLogFileResult) -> None:
    """A record at ``at`` of the last file that claims another place, with no record at its own
    place after it: valid data ends here and the rest is stale (copied or left behind) data."""
    extent = nonzero_extent(f, at)
    stop = extent[1] if extent else at + rec.total_size
    res.valid_end = at
    res.findings.append(model.stale_finding(task.path, at, stop, rec.physical_offset))
    res.findings.append(Finding(RMQ_CL_VALID_END, task.path, at, f"valid data ends at commitlog offset {base + at} (stale data follow)"))


def _torn_tail(f: ReadOnlyFile, task: CommitLogTask, bad: int, base: int, res: CommitLogFileResult) -> bool:
    """In the last file, a record whose bytes stop early and are followed only by zeros is a
    torn tail (a crash while writing), not damage (``rmq.torn_tail_at``): report it as such.
    Returns True when it was one."""
    if not task.is_last:
        return False
    torn = rmq.torn_tail_at(f, bad, task.file_size)
    if torn is None:
        return False
    _report_torn(task, torn, base, res)
    return True


def _report_torn(task: CommitLogTask, torn: rmq.TornTail, base: int, res: CommitLogFileResult) -> None:
    res.findings.append(model.torn_tail_finding(task.path, torn.position, torn))
    res.damaged.append(torn.damaged(base))
    res.offsets.skip_record()


def _check_blank(f: ReadOnlyFile, task: CommitLogTask, pos: int, total: int, res: CommitLogFileResult) -> None:
    # the configured size: a file of the wrong size is RMQ-FILE-SIZE
    blank = model.blank_size_finding(task.path, pos, total, task.file_size)
    if blank is not None:
        res.findings.append(blank)
    if task.is_last:
        base = task.base if res.content_base is None else res.content_base
        res.findings.append(Finding(RMQ_CL_VALID_END, task.path, pos, f"valid data ends at commitlog offset {base + pos} (END_OF_FILE)"))
    extent = nonzero_extent(f, pos + 8)
    if extent is not None:
        first, stop = extent
        res.findings.append(
            Finding(
                RMQ_CL_AFTER_BLANK,
                task.path,
                first,
                f"{stop - first} non-zero bytes after the END_OF_FILE header; never read by the broker "
                "(4.x writes the whole blank from its reused encode buffer, 5.x only the 8-byte header)",
                length=stop - first,
            )
        )


def _check_record(rec: MessageRecord, base: int, pos: int, path: str, res: CommitLogFileResult, check_props: bool, data: bytes, p: int) -> None:
    found = model.record_findings(path, base, pos, rec, memoryview(data)[p : p + rec.total_size], check_properties=check_props)
    res.findings.extend(found)
    if any(x.code == RMQ_CL_PHYS_OFFSET for x in found):
        res.damaged.append((base + pos, base + pos + rec.total_size))


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
