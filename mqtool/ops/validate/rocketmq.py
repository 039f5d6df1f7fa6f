"""validate for RocketMQ store roots (CommitLog, ConsumeQueue, IndexFile, StoreCheckpoint, config).

Phases, each made of independent tasks (parallel with ``--jobs``):

1. files: names, sizes, continuity of CommitLog and ConsumeQueue segments;
2. CommitLog, one task per file: every record (magic, sizes, body CRC, ``__CRC32#``, properties,
   PHYSICALOFFSET = real position), queue-offset continuity, how each file ends (END_OF_FILE in
   every file but the last, zeros after the valid end of the last, torn tails, garbage), and
   resynchronisation after a broken record so the rest of the file is still checked;
3. ConsumeQueue, one task per queue: every unit checked against the record it points at (read
   back from the CommitLog), tagsCode, the queue's end vs the CommitLog end, lag;
4. IndexFile, one task per file: header vs entries, slot chains (in range, acyclic, every entry
   reachable and in the right slot), every entry against the record it points at;
5. checkpoint vs the newest records, ``abort``, every config JSON file (and ``.bak``) the broker
   loads parsed and of the right shape, consumer offsets vs queue ranges.

Each damage is reported once, where it is: the CommitLog phase returns the commitlog ranges it
reported (broken records, skipped regions, a torn tail, missing files), and units and index
entries pointing into them are not reported again; a QUEUEOFFSET may jump over records that
skipped bytes may have held; a misnamed file's records are read at the offsets they say.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from mqtool.errors import MqError, StoreIOError, TruncatedDataError, UnsupportedFormatError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import (
    RMQ_CL_AFTER_BLANK,
    RMQ_CL_PHYS_OFFSET,
    RMQ_CL_UNREADABLE_REGION,
    RMQ_CL_VALID_END,
    RMQ_CQ_AFTER_END,
    RMQ_CQ_EXPIRED,
    RMQ_CQ_MISMATCH,
    RMQ_CQ_NOT_A_RECORD,
    RMQ_CQ_PAST_END,
    RMQ_CQ_TAGS,
    RMQ_FILE_UNREADABLE,
    RMQ_IDX_CHAIN,
    RMQ_IDX_ENTRY,
    RMQ_IDX_EXPIRED,
    RMQ_IDX_GEOMETRY,
    RMQ_IDX_HEADER,
    RMQ_IDX_IN_PROGRESS,
    RMQ_IDX_SLOT,
)
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import config as cfgf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import (
    BORNHOST_POSITION,
    MessageRecord,
    RecordWalker,
    host_size,
    peek_physical_offset,
    peek_store_timestamp,
)
from mqtool.formats.rocketmq.hashing import index_key_hash
from mqtool.formats.rocketmq.properties import split_keys
from mqtool.formats.rocketmq.unit_columns import cq_units
from mqtool.ops.validate import FileSummary, Progress, ValidateOptions, ValidationReport, run_tasks
from mqtool.ops.validate import compaction as validate_compaction
from mqtool.ops.validate import rocksdb_cq as validate_rocksdb_cq
from mqtool.ops.validate import timer as validate_timer
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, nonzero_extent, piece_size, read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import consumers as model_consumers
from mqtool.store.model import derived
from mqtool.store.model import index as model_idx
from mqtool.store.model import queue_offsets as queue_offsets_model
from mqtool.store.model import rocketmq as model
from mqtool.store.model import rocketmq_broker as brokers
from mqtool.store.model.queue_offsets import FileQueueOffsets, QueueOffsets
from mqtool.store.writer import cq_tags_code

# --- phase 1: files ------------------------------------------------------------------------------


# --- phase 2: CommitLog files --------------------------------------------------------------------


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


def validate_commitlog_file(task: CommitLogTask) -> CommitLogFileResult:
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
    piece = want = piece_size()
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


# --- phase 3: ConsumeQueues ---------------------------------------------------------------------


@dataclass(frozen=True)
class QueueTask:
    root: str
    topic: str
    queue_id: int
    cq_file_size: int
    commitlog_file_size: int
    commitlog_min: int
    commitlog_end: int  # commitlog offset where valid data ends
    max_queue_offset_in_commitlog: int | None  # last QUEUEOFFSET seen in the CommitLog for this queue
    ext_dir: str | None
    damaged: tuple[tuple[int, int], ...] = ()  # commitlog ranges already reported (see CommitLogFileResult)
    rebased: tuple[tuple[str, int], ...] = ()  # misnamed CommitLog files and the base their records say
    live: bool = False  # a writer holds the store's lock
    #: Queue-offset runs [first, stop) whose units the CommitLog phase verified against their
    #: records (fast path): they need no per-unit check.
    verified: tuple[tuple[int, int], ...] = ()


@dataclass
class QueueResult:
    topic: str
    queue_id: int
    findings: list[Finding] = field(default_factory=list)
    files: list[tuple[str, int, int, int]] = field(default_factory=list)  # path, size, units, valid_bytes
    min_offset: int = 0
    max_offset: int = 0
    expired: int = 0
    in_progress: int = 0  # units pointing at records appended after the CommitLog was read


def validate_queue(task: QueueTask) -> QueueResult:
    res = QueueResult(task.topic, task.queue_id)
    store = _open_store(task.root, task.commitlog_file_size, task.rebased)
    qdir = rmq.queue_dir(store, task.topic, task.queue_id)
    segments = rmq.list_segments(qdir)
    ext = _ExtReader(Path(task.ext_dir)) if task.ext_dir else None
    ended_at: tuple[str, int] | None = None
    first_real: int | None = None
    max_offset = segments[0].base // cqf.CQ_UNIT_SIZE if segments else 0
    # Records were CRC-checked in the CommitLog phase: read them back without it.
    with rmq.CommitLogReader(store, check_crc=False) as reader:
        for seg in segments:
            if seg.size == 0:
                res.files.append((str(seg.path), 0, 0, 0))
                continue
            try:
                with ReadOnlyFile(seg.path) as f:
                    data = f.read_all()
            except MqError as exc:
                res.findings.append(Finding(RMQ_FILE_UNREADABLE, str(seg.path), None, str(exc)))
                continue
            if ended_at is not None:
                extent = _nonzero_units(data, 0)
                if extent is not None:
                    res.findings.append(
                        Finding(
                            RMQ_CQ_AFTER_END,
                            str(seg.path),
                            extent[0],
                            f"units after the end of the queue at {ended_at[0]}:{ended_at[1]} (the broker drops them)",
                            length=extent[1] - extent[0],
                        )
                    )
                res.files.append((str(seg.path), seg.size, 0, 0))
                continue
            # The units, as CqWalker reads them (the first with offset < 0 or size <= 0 ends the
            # queue), checked in bulk: only units the CommitLog phase did not verify against
            # their records are checked one by one.
            arr = cq_units(data)
            bad = (arr["offset"] < 0) | (arr["size"] <= 0)
            units = int(np.argmax(bad)) if bad.any() else len(arr)
            valid = arr[:units]
            real = ~((valid["offset"] == 0) & (valid["size"] == cqf.FILLER_SIZE) & (valid["tags_code"] == 0))
            first_qoff = cqf.cq_queue_offset(seg.base, 0)
            if first_real is None:
                live_units = np.flatnonzero(real & (valid["offset"] >= task.commitlog_min))
                if len(live_units):
                    first_real = first_qoff + int(live_units[0])  # correctMinOffset: the first unit not expired by retention
            to_check = real & ~_in_runs(task.verified, first_qoff + np.arange(units, dtype=np.int64))
            for i in np.flatnonzero(to_check).tolist():
                unit = cqf.CqUnit(int(valid["offset"][i]), int(valid["size"][i]), int(valid["tags_code"][i]))
                _check_unit(task, reader, ext, str(seg.path), i * cqf.CQ_UNIT_SIZE, first_qoff + i, unit, res)
            end = cqf.CqWalker(data, units * cqf.CQ_UNIT_SIZE).scan()
            res.files.append((str(seg.path), seg.size, units, end.position))
            max_offset = cqf.cq_queue_offset(seg.base, end.position)
            if end.kind == "eof":
                continue
            ended_at = (str(seg.path), end.position)
            end_finding = model.cq_end_finding(str(seg.path), end)
            if end_finding is not None:
                res.findings.append(end_finding)
            extent = None
            if end.kind != "partial":
                extent = _nonzero_units(data, end.position + (cqf.CQ_UNIT_SIZE if end.kind == "invalid" else 0))
            if extent is not None:
                res.findings.append(
                    Finding(
                        RMQ_CQ_AFTER_END,
                        str(seg.path),
                        extent[0],
                        f"non-zero units after the end of the queue at {end.position} (the broker drops them)",
                        length=extent[1] - extent[0],
                    )
                )
    if ext is not None:
        ext.close()
    if res.expired:
        res.findings.append(
            Finding(
                RMQ_CQ_EXPIRED,
                str(qdir),
                None,
                f"{res.expired} unit(s) point below the CommitLog's first file ({task.commitlog_min}): expired by retention",
            )
        )
    res.min_offset = first_real if first_real is not None else max_offset
    res.max_offset = max_offset
    lag = queue_offsets_model.queue_lag_finding(store, task.topic, task.queue_id, task.max_queue_offset_in_commitlog, max_offset, live=task.live)
    if lag is not None:
        res.findings.append(lag)
    return res


def _written_since(reader: rmq.CommitLogReader, off: int) -> bool:
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


def _nonzero_units(data: bytes, start: int) -> tuple[int, int] | None:
    """(first, end) of the units holding non-zero bytes in ``data[start:]``, unit-aligned from
    ``start`` (a unit-aligned position), or None when all zero."""
    if not np.frombuffer(data, dtype=np.uint8)[start:].any():  # the common case, at memory speed
        return None
    rest = data[start:]
    stripped = rest.lstrip(b"\x00")
    size = cqf.CQ_UNIT_SIZE
    first = (len(rest) - len(stripped)) // size * size
    last = -(-len(rest.rstrip(b"\x00")) // size) * size
    return start + first, start + min(last, len(rest))


def _check_unit(task: QueueTask, reader: rmq.CommitLogReader, ext: _ExtReader | None, path: str, pos: int, qoff: int, unit: cqf.CqUnit, res: QueueResult) -> None:
    off = unit.commit_log_offset
    if off < task.commitlog_min:
        res.expired += 1
        return
    if _in_ranges(task.damaged, off):
        return  # the CommitLog finding there says what is wrong with this record
    if off >= task.commitlog_end and task.live and _written_since(reader, off):
        res.in_progress += 1
        return
    if off >= task.commitlog_end:
        res.findings.append(
            Finding(
                RMQ_CQ_PAST_END,
                path,
                pos,
                f"queue offset {qoff}: expected a commitlog offset below {task.commitlog_end} (end of valid CommitLog data), found {off}",
            )
        )
        return
    try:
        rec = reader.read(off, size_hint=unit.size if 0 < unit.size <= rmq.MAX_RECORD_SIZE else 4096)
    except MqError as exc:
        res.findings.append(Finding(RMQ_CQ_NOT_A_RECORD, path, pos, f"queue offset {qoff}: commitlog offset {off} is not the start of a valid record ({exc})"))
        return
    if rec.physical_offset != off:
        res.findings.append(
            Finding(
                RMQ_CQ_NOT_A_RECORD,
                path,
                pos,
                f"queue offset {qoff}: the record at commitlog offset {off} says PHYSICALOFFSET {rec.physical_offset}",
            )
        )
        return
    problems = []
    if rec.total_size != unit.size:
        problems.append(f"size {unit.size} vs record TOTALSIZE {rec.total_size}")
    if rec.topic != task.topic or rec.queue_id != task.queue_id:
        problems.append(f"queue {task.topic}/{task.queue_id} vs record {rec.topic}/{rec.queue_id}")
    if rec.queue_offset != qoff:
        problems.append(f"queue offset {qoff} vs record QUEUEOFFSET {rec.queue_offset}")
    if problems:
        res.findings.append(Finding(RMQ_CQ_MISMATCH, path, pos, f"unit at queue offset {qoff} -> commitlog offset {off}: " + "; ".join(problems)))
        return
    if rec.dropped_properties and "TAGS" not in rec.properties:
        return  # its tags may be in a segment the broker drops (RMQ-CL-PROPERTIES says so)
    expected_tags = cq_tags_code(rec)
    tags = unit.tags_code
    if cqf.is_ext_address(tags):
        if ext is None:
            return
        ext_unit = ext.read(cqf.undecorate_ext_address(tags))
        if ext_unit is None:
            res.findings.append(Finding(RMQ_CQ_TAGS, path, pos + 12, f"queue offset {qoff}: ConsumeQueueExt address {tags} points at no ext unit"))
            return
        tags = ext_unit.tags_code
    if tags != expected_tags:
        what = "delivery time (store time + delay level)" if rec.topic == "SCHEDULE_TOPIC_XXXX" else f"TAGS {rec.tags!r} hash"
        res.findings.append(Finding(RMQ_CQ_TAGS, path, pos + 12, f"queue offset {qoff}: expected tagsCode {expected_tags} ({what}), found {tags}"))


class _ExtReader:
    """ConsumeQueueExt units by ext offset (file size detected from the files)."""

    def __init__(self, directory: Path) -> None:
        self.segments = rmq.list_segments(directory)
        self.file_size = rmq.detect_file_size(self.segments) or cqf.CQ_EXT_FILE_SIZE
        self._cache: tuple[Path, bytes] | None = None

    def read(self, ext_offset: int) -> cqf.CqExtUnit | None:
        for seg in reversed(self.segments):
            if seg.base <= ext_offset < seg.base + seg.size:
                if self._cache is None or self._cache[0] != seg.path:
                    with ReadOnlyFile(seg.path) as f:
                        self._cache = (seg.path, f.read_all())
                try:
                    return cqf.decode_cq_ext_unit(self._cache[1], ext_offset - seg.base)
                except MqError:
                    return None
        return None

    def close(self) -> None:
        self._cache = None


# --- phase 4: IndexFiles ------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexTask:
    root: str
    path: str
    commitlog_file_size: int
    commitlog_min: int
    commitlog_end: int
    hash_slot_num: int | None
    index_num: int | None
    #: Entry numbers [first, stop) whose records this task checks; None: all of them.
    entries: tuple[int, int] | None = None
    #: Check the header, slots and chains (one task per file does).
    structure: bool = True
    #: ``written_index_count`` of the file (computed by the task when None).
    written: int | None = None
    damaged: tuple[tuple[int, int], ...] = ()  # commitlog ranges already reported
    rebased: tuple[tuple[str, int], ...] = ()  # misnamed CommitLog files and the base their records say
    live: bool = False  # a writer holds the store's lock
    #: The CommitLog phase's key tables (fast path; see ``mqtool.store.model.commitlog``).
    keys_dir: str | None = None


@dataclass
class IndexResult:
    path: str
    size: int = 0
    entries: int = 0
    findings: list[Finding] = field(default_factory=list)
    end_timestamp: int = 0


def validate_index_file(task: IndexTask) -> IndexResult:
    res = IndexResult(task.path)
    try:
        view = rmq.IndexFileView(Path(task.path), hash_slot_num=task.hash_slot_num, index_num=task.index_num)
    except UnsupportedFormatError as exc:
        res.findings.append(Finding(RMQ_IDX_GEOMETRY, task.path, None, f"{exc.reason} (pass --index-hash-slots/--index-num)"))
        return res
    except MqError as exc:
        res.findings.append(Finding(RMQ_IDX_GEOMETRY, task.path, exc.position, exc.reason))
        return res
    store = _open_store(task.root, task.commitlog_file_size, task.rebased)
    with view, rmq.CommitLogReader(store, check_crc=False) as reader:
        res.size = view.size
        res.end_timestamp = view.header.end_timestamp
        written = task.written if task.written is not None else written_index_count(view)
        res.entries = max(written - 1, 0)
        if task.structure:
            _check_index_structure(view, task, written, res)
        _check_index_entries(view, task, written, reader, res)
    return res


def written_index_count(view: rmq.IndexFileView) -> int:
    """The indexCount the entries and slots show (entries 1 .. n-1 are written).

    Every putKey makes its entry the head of its slot's chain, so the newest entry, indexCount-1,
    is a slot value and the entry after it is still zeros.  When the header agrees with that, it
    is taken; otherwise the newest written entry any slot names tells (a header that lost an
    update, or damage)."""
    buf = view.buf
    assert buf is not None  # an open view: close() drops the mapping
    geo = view.geometry
    n = min(view.header.effective_index_count, geo.index_num)
    newest = n - 1
    consistent = newest == 0 or idxf.read_slot(buf, idxf.decode_index_entry(buf, geo.entry_position(newest)).key_hash % geo.hash_slot_num, geo.hash_slot_num) == newest
    if consistent and (n == geo.index_num or not any(buf[geo.entry_position(n) : geo.entry_position(n + 1)])):
        return n
    heads = [
        value
        for _, value in idxf.iter_used_slots(buf, geo.hash_slot_num)
        if 0 < value < geo.index_num and any(buf[geo.entry_position(value) : geo.entry_position(value + 1)])
    ]
    return max(heads, default=0) + 1


def index_entry_count(path: Path, hash_slot_num: int | None, index_num: int | None) -> int:
    """Used entries of an IndexFile (0 when its header cannot be read)."""
    try:
        with rmq.IndexFileView(path, hash_slot_num=hash_slot_num, index_num=index_num) as view:
            return written_index_count(view) - 1
    except MqError:
        return 0


def _check_index_structure(view: rmq.IndexFileView, task: IndexTask, written: int, res: IndexResult) -> None:
    if task.keys_dir is not None and model_idx.structure_ok(view, written):
        return
    buf = view.buf
    assert buf is not None  # an open view: close() drops the mapping (iter_used_slots below reads it)
    geo = view.geometry
    header = view.header
    slots = geo.hash_slot_num
    path = task.path
    if header.index_count > geo.index_num:
        res.findings.append(Finding(RMQ_IDX_HEADER, path, idxf.INDEX_COUNT_POSITION, f"expected indexCount <= {geo.index_num}, found {header.index_count}"))
    elif header.effective_index_count != written:
        res.findings.append(
            Finding(
                RMQ_IDX_HEADER,
                path,
                idxf.INDEX_COUNT_POSITION,
                f"expected indexCount {written} (the newest written entry is #{written - 1}), found {header.index_count}",
            )
        )
    # slots: in range, and the entry they name belongs to them
    reached = bytearray(written)
    broken: set[int] = set()  # slots whose chain is cut: its older entries are unreachable by that
    used_slots = 0
    for slot, value in idxf.iter_used_slots(buf, slots):
        used_slots += 1
        if not 0 < value < written:
            res.findings.append(Finding(RMQ_IDX_CHAIN, path, geo.slot_position(slot), f"slot {slot}: expected an entry number in 1..{written - 1}, found {value}"))
            broken.add(slot)
            continue
        number = value
        steps = 0
        while number and steps < written:
            if reached[number]:
                res.findings.append(Finding(RMQ_IDX_CHAIN, path, geo.entry_position(number), f"entry #{number} is reached from two chains (slot {slot})"))
                broken.add(slot)
                break
            reached[number] = 1
            entry = idxf.decode_index_entry(buf, geo.entry_position(number))
            if entry.key_hash % slots != slot:
                res.findings.append(
                    Finding(
                        RMQ_IDX_SLOT,
                        path,
                        geo.entry_position(number),
                        f"entry #{number} in the chain of slot {slot}: expected a key hash with hash % {slots} == {slot}, found {entry.key_hash}",
                    )
                )
            prev = entry.prev_index
            if prev and not 0 < prev < number:
                res.findings.append(
                    Finding(
                        RMQ_IDX_CHAIN,
                        path,
                        geo.entry_position(number) + idxf.PREV_INDEX_POSITION,
                        f"entry #{number}: expected prevIndex 0 or an older entry 1..{number - 1}, found {prev}" + (" (a cycle)" if prev >= number else ""),
                    )
                )
                broken.add(slot)
                break
            number = prev
            steps += 1
    if used_slots != header.hash_slot_count:
        res.findings.append(
            Finding(
                RMQ_IDX_HEADER,
                path,
                idxf.HASH_SLOT_COUNT_POSITION,
                f"expected hashSlotCount {used_slots} (slots in use), found {header.hash_slot_count}",
            )
        )
    unreached = [n for n in range(1, written) if not reached[n] and idxf.decode_index_entry(buf, geo.entry_position(n)).key_hash % slots not in broken]
    if unreached:
        res.findings.append(
            Finding(
                RMQ_IDX_CHAIN,
                path,
                geo.entry_position(unreached[0]),
                f"{len(unreached)} entr{'y is' if len(unreached) == 1 else 'ies are'} reachable from no slot (first: #{unreached[0]})",
            )
        )
    if written > 1:
        first = idxf.decode_index_entry(buf, geo.entry_position(1))
        last = idxf.decode_index_entry(buf, geo.entry_position(written - 1))
        if header.end_phy_offset != last.phy_offset:
            res.findings.append(Finding(RMQ_IDX_HEADER, path, 24, f"expected endPhyOffset {last.phy_offset} (the last entry's), found {header.end_phy_offset}"))
        if header.begin_phy_offset != first.phy_offset:
            res.findings.append(Finding(RMQ_IDX_HEADER, path, 16, f"expected beginPhyOffset {first.phy_offset} (the first entry's), found {header.begin_phy_offset}"))
        if header.end_timestamp < header.begin_timestamp:
            res.findings.append(Finding(RMQ_IDX_HEADER, path, 8, f"expected endTimestamp >= beginTimestamp {header.begin_timestamp}, found {header.end_timestamp}"))
        else:
            entries = memoryview(buf)[geo.entry_position(1) : geo.entry_position(written)]
            max_diff = max((diff for _, _, diff, _ in idxf.INDEX_ENTRY.iter_unpack(entries) if diff >= 0), default=None)
            entries.release()
            max_ts = header.begin_timestamp + max_diff * 1000 if max_diff is not None else 0
            if max_ts > header.end_timestamp + 999:
                res.findings.append(Finding(RMQ_IDX_HEADER, path, 8, f"expected endTimestamp >= the newest entry's time {max_ts}, found {header.end_timestamp}"))


def _check_index_entries(view: rmq.IndexFileView, task: IndexTask, written: int, reader: rmq.CommitLogReader, res: IndexResult) -> None:
    """Every entry (of the task's range) against the record it points at."""
    buf = view.buf
    geo = view.geometry
    path = task.path
    first, stop = task.entries if task.entries is not None else (1, written)
    stop = min(stop, written)
    expired = 0
    cached: tuple[int, bool, set[int] | None] | None = None
    numbers: Iterable[int] = range(first, stop)
    if task.keys_dir is not None and stop > first:
        # Entries naming a record of a healthy file and one of its keys are right; only the
        # others are read back and checked one by one.
        numbers = model_idx.unverified_entries(
            view,
            first,
            stop,
            model_cl.KeyTables(task.keys_dir),
            commitlog_min=task.commitlog_min,
            commitlog_end=task.commitlog_end,
            commitlog_file_size=task.commitlog_file_size,
        )
    for number in numbers:
        pos = geo.entry_position(number)
        assert buf is not None  # an open view: close() drops the mapping
        entry = idxf.decode_index_entry(buf, pos)
        off = entry.phy_offset
        if off < task.commitlog_min:
            expired += 1
            continue
        if _in_ranges(task.damaged, off):
            continue  # the CommitLog finding there says what is wrong with this record
        if off >= task.commitlog_end and task.live and _written_since(reader, off):
            continue  # appended after the CommitLog was read
        if off >= task.commitlog_end:
            res.findings.append(model.index_past_end_finding(path, pos, number, task.commitlog_end, off))
            continue
        if cached is None or cached[0] != off:
            try:
                rec = reader.read(off)
                is_record = rec.physical_offset == off
            except MqError:
                is_record = False
            cached = (off, is_record, _index_hashes(rec) if is_record else None)
        _, is_record, hashes = cached
        if not is_record:
            res.findings.append(Finding(RMQ_IDX_ENTRY, path, pos, f"entry #{number}: commitlog offset {off} is not the start of a valid record"))
        elif hashes is not None and entry.key_hash not in hashes:
            res.findings.append(
                Finding(
                    RMQ_IDX_ENTRY,
                    path,
                    pos,
                    f"entry #{number}: the record at commitlog offset {off} has no key hashing to {entry.key_hash} (its keys hash to {sorted(hashes)})",
                )
            )
    if expired:
        res.findings.append(Finding(RMQ_IDX_EXPIRED, path, None, f"{expired} entr{'y points' if expired == 1 else 'ies point'} below the CommitLog's first file"))


def _index_hashes(rec: MessageRecord) -> set[int] | None:
    """Hashes of the keys the broker indexed for ``rec``; None when its properties are malformed
    (RMQ-CL-PROPERTIES) and so its keys are not known."""
    if rec.dropped_properties:
        return None
    keys = []
    if rec.uniq_key:
        keys.append(f"{rec.topic}#{rec.uniq_key}")
    keys.extend(f"{rec.topic}#{k}" for k in split_keys(rec.properties))
    return {index_key_hash(k) for k in keys}


# --- the run ----------------------------------------------------------------------------------------


def _open_store(root: str, commitlog_file_size: int, rebased: tuple[tuple[str, int], ...]) -> rmq.RocketMQStore:
    """The store as the CommitLog phase found it: a misnamed CommitLog file at the base its
    records say (its name is reported once, by RMQ-FILE-OVERLAP/GAP/ALIGN)."""
    store = rmq.open_store(root, commitlog_file_size=commitlog_file_size)
    if rebased:
        bases = dict(rebased)
        store.commitlog = sorted((replace(s, base=bases.get(str(s.path), s.base)) for s in store.commitlog), key=lambda s: s.base)
    return store


def _merge_ranges(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def _in_runs(runs: tuple[tuple[int, int], ...], values: np.ndarray) -> np.ndarray:
    """Which ``values`` lie in one of the sorted, disjoint ``[start, stop)`` ``runs``."""
    if not runs or not len(values):
        return np.zeros(len(values), dtype=bool)
    starts = np.array([a for a, _ in runs], dtype=np.int64)
    stops = np.array([b for _, b in runs], dtype=np.int64)
    at = np.searchsorted(starts, values, side="right") - 1
    return (at >= 0) & (values < stops[np.maximum(at, 0)])


def _in_ranges(ranges: tuple[tuple[int, int], ...], offset: int) -> bool:
    """``offset`` lies in one of the sorted, disjoint ``ranges``."""
    i = bisect.bisect_right(ranges, (offset, 1 << 64)) - 1
    return i >= 0 and ranges[i][0] <= offset < ranges[i][1]


def validate_rocketmq(path: str | Path, options: ValidateOptions, progress: Progress | None = None) -> ValidationReport:
    with model_cl.key_table_directory() as keys_dir:
        report = _validate_rocketmq(path, options, progress, keys_dir if options.fast and options.wants("index") else None)
    # the broker modelled, and what the findings say of its recovery made true for it
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    broker = brokers.resolve_broker(store.root, options.broker_version, options.version_hints, options.config_path)
    report.facts["broker"], report.findings = brokers.as_the_broker_sees_it(store, broker, report.findings)
    return report


def _validate_rocketmq(path: str | Path, options: ValidateOptions, progress: Progress | None, keys_dir: str | None) -> ValidationReport:
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    report = ValidationReport("rocketmq", str(store.root), options)
    advance = progress or (lambda n: None)
    segments = store.commitlog
    file_size = store.commitlog_file_size
    report.facts["commitlog_file_size"] = file_size

    # phase 1: files
    # A writer (the broker, or mqtool's own writer) holds <root>/lock: the store is live.
    live = probe_record_lock(store.lock_path) is not None
    report.facts["live"] = live
    for finding in model.segment_findings(store.commitlog_dir, segments, file_size, "commitlog", live=live):
        report.add(finding)
    queues = store.queues()
    cq_segments = {key: store.cq_segments(*key) for key in queues}
    cq_file_size, cq_size_source = model.cq_file_size(options.cq_file_size, cq_segments)
    report.facts["cq_file_size"] = cq_file_size
    for (topic, qid), segs in cq_segments.items():
        for finding in model.segment_findings(rmq.queue_dir(store, topic, qid), segs, cq_file_size, "consumequeue", live=live, size_source=cq_size_source):
            report.add(finding)
    irregular_queues = store.irregular_queue_dirs()
    for finding in model.irregular_findings(irregular_queues, "a consumequeue directory"):
        report.add(finding)
    for finding in model.irregular_findings(store.irregular_index_files(), "a regular index file"):
        report.add(finding)

    # phase 2: CommitLog
    # The last file holding data ends in zeros; with no data at all, the first file is that file.
    last = max(rmq.last_data_index(segments), 0)
    tasks = [
        CommitLogTask(
            str(seg.path),
            seg.base,
            file_size or seg.size,
            i == last,
            live=live,
            alt_base=segments[i - 1].base + file_size if i and file_size and seg.base != segments[i - 1].base + file_size else None,
            fast=options.fast,
            root=str(store.root),
            cq_file_size=cq_file_size if options.wants("consumequeue") else 0,
            keys_dir=keys_dir,
        )
        for i, seg in enumerate(segments)
        if seg.size > 0 and i <= last
    ]
    verified: dict[tuple[str, int], list[tuple[int, int]]] = {}
    summaries: dict[str, FileSummary] = {}
    queue_offsets = QueueOffsets()  # the continuity rule across files (``store.model.queue_offsets``)
    commitlog_end = store.commitlog_min_offset
    max_store_ts = 0
    prev_file_result: CommitLogFileResult | None = None
    damaged: list[tuple[int, int]] = []
    rebased: list[tuple[str, int]] = []
    for res in run_tasks(validate_commitlog_file, tasks, options.jobs):
        summary = FileSummary(res.path, "commitlog", res.size, res.records, res.valid_end)
        summaries[res.path] = summary
        report.files.append(summary)
        for finding in res.findings:
            report.add(finding, summary)
        res_base = res.base if res.content_base is None else res.content_base
        if res.content_base is not None:
            rebased.append((res.path, res.content_base))
        damaged.extend(res.damaged)
        for key, runs in res.verified.items():
            verified.setdefault(key, []).extend(runs)
        # Bytes missing before this file (a missing or zero-length file): records they held are
        # reported by RMQ-FILE-GAP / RMQ-FILE-ZERO-LENGTH, not again by what points there (and a
        # queue may skip the records they held: ``QueueOffsets.add_file``).
        if prev_file_result is not None and file_size:
            prev_base = prev_file_result.base if prev_file_result.content_base is None else prev_file_result.content_base
            gap = model.missing_between(prev_base, res_base, file_size)
            if gap is not None:
                damaged.append(gap)
        for finding in queue_offsets.add_file(res.offsets, res_base, file_size):
            report.add(finding, summary)
        commitlog_end = res_base + res.valid_end
        max_store_ts = max(max_store_ts, res.max_store_timestamp)
        report.bytes_checked += res.size
        advance(res.size)
        prev_file_result = res
    damaged_ranges = _merge_ranges(damaged)
    for i, seg in enumerate(segments):
        if i > last and seg.size > 0:
            summary = FileSummary(str(seg.path), "commitlog", seg.size, 0, 0)
            report.files.append(summary)
            with ReadOnlyFile(seg.path) as f:  # a pre-allocated file: the store model's rule
                for finding in model.commitlog_file_findings(f, None, file_size, last=False, after_last=True):
                    report.add(finding, summary)
    report.facts["commitlog"] = {"log_start_offset": store.commitlog_min_offset, "log_end_offset": commitlog_end}
    report.facts["max_store_timestamp"] = max_store_ts

    # Units and entries pointing past the valid end are knock-ons of the damage that ends it.
    end_cause = model.valid_end_cause(report.findings, {str(seg.path): seg.base for seg in segments}, commitlog_end)

    # phase 3: ConsumeQueues
    queue_ranges: dict[tuple[str, int], tuple[int, int]] = {}
    if queues and (options.wants("consumequeue") or options.wants("config")):
        ext_root = store.root / "consumequeue_ext"
        qtasks = [
            QueueTask(
                str(store.root),
                topic,
                qid,
                cq_file_size,
                file_size or 0,
                store.commitlog_min_offset,
                commitlog_end,
                queue_offsets.last_queue_offset((topic, qid)),
                str(ext_root / topic / str(qid)) if (ext_root / topic / str(qid)).is_dir() else None,
                damaged_ranges,
                tuple(rebased),
                live,
                verified=tuple(_merge_ranges(verified.get((topic, qid), []))),
            )
            for topic, qid in queues
        ]
        for qres in run_tasks(validate_queue, qtasks, options.jobs):
            queue_ranges[(qres.topic, qres.queue_id)] = (qres.min_offset, qres.max_offset)
            file_summaries = {}
            for fpath, fsize, units, valid in qres.files:
                s = FileSummary(fpath, "consumequeue", fsize, units, valid)
                file_summaries[fpath] = s
                report.files.append(s)
            for finding in qres.findings:
                report.add(model.link_knock_on(finding, end_cause), file_summaries.get(finding.path))
    # phase 3b: the RocksDB ConsumeQueue (5.2+, storeType=defaultRocksDB), when consumequeue/ is one
    rocks = validate_rocksdb_cq.RocksCheck()
    if options.wants("consumequeue") or options.wants("config"):
        last_offsets = {key: edge.last for key, edge in queue_offsets.edges.items()}
        rocks = validate_rocksdb_cq.check_rocksdb_cq(
            store, commitlog_end=commitlog_end, last_queue_offsets=last_offsets, damaged=damaged_ranges, end_cause=end_cause, live=live
        )
        if rocks.summary is not None:
            report.files.append(rocks.summary)
        for finding in rocks.findings:
            report.add(finding, rocks.summary)
        if rocks.facts:
            report.facts["rocksdb_consumequeue"] = rocks.facts
        queue_ranges = {**rocks.ranges, **queue_ranges}
    edges = {key: edge for key, edge in queue_offsets.edges.items() if key not in rocks.ranges}  # what the RocksDB queues hold is said there
    for finding in queue_offsets_model.missing_queue_findings(store, edges, live=live):
        report.add(finding)
    if options.wants("consumequeue"):
        for head in derived.queue_heads(queue_offsets.edges, cq_segments):
            report.add(derived.queue_head_finding(store, head, live=live))

    # phase 4: IndexFiles
    index_end_ts = 0
    if options.wants("index"):
        itasks = []
        index_paths = store.index_files()
        for p in index_paths:
            active = live and p == index_paths[-1]
            count = index_entry_count(p, options.index_hash_slot_num, options.index_num)
            if active:
                # The writer is changing this file's header, slots and chains right now: only its
                # written entries are checked against the records.
                report.add(
                    Finding(
                        RMQ_IDX_IN_PROGRESS,
                        str(p),
                        None,
                        f"the active IndexFile of a live store: its {count} written entries are checked, its header and chains are not",
                    )
                )
            common = (str(store.root), str(p), file_size or 0, store.commitlog_min_offset, commitlog_end, options.index_hash_slot_num, options.index_num)
            parts = max(1, min(options.jobs * 2, count // 50_000)) if options.jobs > 1 else 1
            step = -(-count // parts) if count else 1
            for k in range(parts):
                itasks.append(
                    IndexTask(
                        *common,
                        entries=(1 + k * step, 1 + (k + 1) * step) if parts > 1 else None,
                        structure=k == 0 and not active,
                        written=count + 1,
                        damaged=damaged_ranges,
                        rebased=tuple(rebased),
                        live=live,
                        keys_dir=keys_dir,
                    )
                )
        index_summaries: dict[str, FileSummary] = {}
        for ires in run_tasks(validate_index_file, itasks, options.jobs):
            isum = index_summaries.get(ires.path)
            if isum is None:
                isum = index_summaries[ires.path] = FileSummary(ires.path, "index", ires.size, ires.entries, None)
                report.files.append(isum)
            index_end_ts = max(index_end_ts, ires.end_timestamp)
            for finding in ires.findings:
                report.add(model.link_knock_on(finding, end_cause), isum)
        coverage = derived.index_coverage(
            store, hash_slot_num=options.index_hash_slot_num, index_num=options.index_num, message_index_enable=options.message_index_enable
        )
        unindexed = derived.index_missing_finding(store, coverage, derived.unindexed_records(store, coverage, commitlog_end), live=live)
        if unindexed is not None:
            report.add(unindexed)

    # phase 5: checkpoint, abort, config
    _check_shutdown_state(store, report, max_store_ts, index_end_ts, live)
    _check_config(store, report, queue_ranges)

    # phase 6: the 5.x timer store (wheel slots -> TimerLog units -> CommitLog records, timercheck)
    if options.wants("timer"):
        timer = validate_timer.check_timer(
            store, commitlog_end=commitlog_end, damaged=damaged_ranges, end_cause=end_cause, live=live, precision_ms=options.timer_precision_ms
        )
        for finding in timer.findings:
            report.add(finding)
        if timer.facts:
            report.facts["timer"] = timer.facts
    # phase 7: the compaction store (each queue's compaction log against its sparse consume queue)
    if options.wants("compaction"):
        compaction = validate_compaction.check_compaction(store)
        for finding in compaction.findings:
            report.add(finding)
        if compaction.facts:
            report.facts["compaction"] = compaction.facts
    return report


def _check_shutdown_state(store: rmq.RocketMQStore, report: ValidationReport, max_store_ts: int, index_end_ts: int, live: bool = False) -> None:
    for finding in model.shutdown_findings(store, max_store_ts=max_store_ts, index_end_ts=index_end_ts, live=live):
        report.add(finding)
    try:
        cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20)) if store.checkpoint_path.exists() else None
    except MqError:
        cp = None  # RMQ-CHECKPOINT-FORMAT
    if cp is not None:
        report.facts["checkpoint"] = {
            "physic_msg_timestamp": cp.physic_msg_timestamp,
            "logics_msg_timestamp": cp.logics_msg_timestamp,
            "index_msg_timestamp": cp.index_msg_timestamp,
        }


#: The config JSON files validate reads (``BrokerPathConfigHelper`` names) and the parser that
#: checks each one's shape.  Each may have a ``<name>.bak`` twin (``ConfigManager.loadBak``).
CONFIG_FILES = (
    ("topics.json", cfgf.parse_topics),
    ("consumerOffset.json", cfgf.parse_consumer_offsets),
    ("lmqConsumerOffset.json", cfgf.parse_consumer_offsets),
    ("delayOffset.json", cfgf.parse_delay_offsets),
    ("subscriptionGroup.json", cfgf.parse_subscription_groups),
    ("consumerFilter.json", cfgf.parse_consumer_filters),
)


def _check_config(store: rmq.RocketMQStore, report: ValidationReport, ranges: dict[tuple[str, int], tuple[int, int]]) -> None:
    """Each config file as the broker loads it (``model_consumers.load_config``: ``<name>``, or
    its ``.bak`` twin), and the consumer offsets of what it loads against the queues read."""
    offsets = model_consumers.load_consumer_offsets(store)
    for name, parse in CONFIG_FILES:
        load: model_consumers.ConfigLoad[Any] = offsets if name == offsets.name else model_consumers.load_config(store, name, parse)
        for finding in model_consumers.config_findings(load):
            report.add(finding)
    if offsets.path is not None and offsets.value is not None:
        for finding in model_consumers.offset_findings(offsets.path, offsets.value, ranges, set(store.queues())):
            report.add(finding)
