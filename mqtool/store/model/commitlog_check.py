"""The judge of one RocketMQ CommitLog file: every record, every damaged region, how the file ends.

One task (:class:`CommitLogTask`) names a file: its path, the commitlog offset its name says
(``base``), the configured file size, whether it is the newest file holding data (``is_last``),
whether a writer holds the store's lock (``live``), the base it would have after its predecessor
when its name says otherwise (``alt_base``), the piece size, and the fast-path options.

:func:`read_events` is the reading, as typed events in file order: :class:`Stretch` for each
run of healthy records, :class:`Record`, :class:`Rebased` and :class:`Damage` for what the
precise decoder reads around an anomaly (each finding with its position, the commitlog range it
covers, the bytes it skips), then how the file ends (its findings as :class:`Damage`) and one
:class:`FileEnd`.  :func:`check_commitlog_file` folds them, with the queue-offset continuity rule
and, for a file that is columns only, the bulk cross-checks of its ConsumeQueue units and
IndexFile keys, into a :class:`CommitLogFileResult` (picklable: validate runs tasks in worker
processes).  It never raises on data.

The reading is one walk over the file, a piece at a time (``CommitLogTask.piece`` bytes, default
:func:`mqtool.store.files.piece_size`), with two speeds inside it:

* **Healthy records as columns.** :func:`mqtool.formats.rocketmq.columns.walk_columns` frames the
  piece's records in vectorised steps and makes every check the precise decoder makes of a
  healthy record (TOTALSIZE, MAGICCODE, body CRC, lengths, properties, PHYSICALOFFSET = its
  address, a last byte that is not a torn write's zero); it stops at the first record it
  declines.
* **The precise decoder around an anomaly.** That record is decoded by
  :class:`mqtool.formats.rocketmq.commitlog.RecordWalker`, which judges it as upstream
  ``CommitLog.checkMessageAndReturnSize`` does and names each finding; then the columns take
  over again after it.  Where ``CommitLog.recoverAbnormally`` would stop (the first broken
  record), this walk reports the record, resynchronises -- right after the record when its frame
  still holds, else at the next valid record (:func:`mqtool.store.rocketmq.find_next_record`),
  the bytes between an RMQ-CL-UNREADABLE-REGION -- and goes on in the same piece, so that the
  rest of the file is checked too and each byte is read once.

A record that crosses a piece boundary is read whole by the next piece
(:func:`mqtool.store.rocketmq.piece_goes_on`, the one rule of every CommitLog walk).
``task.fast=False`` turns the columns off (every record by the precise decoder).

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

This walk does not end at the first broken record as
:class:`mqtool.store.rocketmq.CommitLogFileWalk` does (``CommitLog.recoverNormally``'s view):
it reports and resynchronises, decides a misnamed file's base from its first record, and keeps a
record whose TOTALSIZE reaches past the end of a file that was cut short for RMQ-FILE-SIZE.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from mqtool.errors import MqError, StoreIOError, TruncatedDataError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import (
    RMQ_CL_AFTER_BLANK,
    RMQ_CL_PHYS_OFFSET,
    RMQ_CL_UNREADABLE_REGION,
    RMQ_CL_VALID_END,
    RMQ_FILE_UNREADABLE,
)
from mqtool.formats.rocketmq.columns import ColumnStop, ColumnWalk, CommitLogColumns, concat_columns, walk_columns
from mqtool.formats.rocketmq.commitlog import (
    BORNHOST_POSITION,
    DataEnd,
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
class Stretch:
    """Healthy records the column walk framed in one piece read at file ``position``: ``data``
    is the piece, ``walk.columns`` the records (positions in ``data``); every check the precise
    decoder makes of a record holds for them (``formats.rocketmq.columns.walk_columns``)."""

    position: int
    data: bytes
    walk: ColumnWalk

    @property
    def columns(self) -> CommitLogColumns:
        return self.walk.columns


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


Event = Stretch | Record | Rebased | Damage | FileEnd


def read_events(f: ReadOnlyFile, task: CommitLogTask) -> Iterator[Event]:
    """The judge's reading of one open CommitLog file, as events in file order (see the module
    docstring): :class:`Stretch` for each run of healthy records (with ``task.fast``),
    :class:`Record`, :class:`Rebased` and :class:`Damage` for what the precise decoder reads
    around an anomaly, then how the file ends (its :class:`Damage` findings) and one
    :class:`FileEnd`.  Raises ``StoreIOError`` when the file cannot be read."""
    return _walk_commitlog_file(f, task)


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
    # a healthy file's units and keys are checked in bulk against its columns (``_check_in_bulk``)
    bulk = task.fast and (bool(task.cq_file_size and task.root) or task.keys_dir is not None)
    parts: list[tuple[int, CommitLogColumns]] = []
    precise = False  # a record was decoded precisely: the file is not all columns
    for ev in events:
        if type(ev) is Record:
            precise = True
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
            precise = True
            base = res.content_base = ev.base
        elif isinstance(ev, Stretch):
            cols = ev.walk.columns
            for broke in offsets.add_columns(cols, ev.position):
                res.findings.append(broke)  # at the record's QUEUEOFFSET field: the record is covered
                row = int(np.searchsorted(cols.position, (broke.position or 0) - ev.position, side="right")) - 1
                at = ev.position + int(cols.position[row])
                res.damaged.append((base + at, base + at + int(cols.size[row])))
            res.records += len(cols)
            res.max_store_timestamp = max(res.max_store_timestamp, int(cols.store_timestamp.max(initial=0)))
            res.last_store_timestamp = int(cols.store_timestamp[-1])
            if bulk:
                parts.append((ev.position, cols))
        elif isinstance(ev, FileEnd):
            res.valid_end = ev.valid_end
            res.first_broken = ev.first_broken
            res.bytes_read = ev.bytes_read
            healthy = ev.kind in ("blank", "zeros", "eof") and res.size == task.file_size and not precise
            if bulk and healthy and all(x.level is Severity.info for x in res.findings):
                columns = concat_columns(parts)
                queues = columns.queue_runs()
                if queues is not None:  # else a queue's offsets do not go up by one: units are checked one by one
                    _check_in_bulk(task, res, model_cl.FileColumns(columns, queues, ColumnStop(ev.kind, ev.valid_end), ev.bytes_read))  # type: ignore[arg-type]  # one of the three clean kinds


def _check_in_bulk(task: CommitLogTask, res: CommitLogFileResult, cols: model_cl.FileColumns) -> None:
    """A file whose every record the column walk framed and that ends the way the broker ends
    one: its ConsumeQueue units are verified against its records and its index keys tabled in
    bulk (``store.model.commitlog``)."""
    if task.cq_file_size and task.root:
        store = rmq.open_store(task.root, commitlog_file_size=task.file_size)
        res.verified = model_cl.verify_queue_units(store, task.base, cols, task.cq_file_size)
    if task.keys_dir is not None:
        model_cl.save_key_table(task.keys_dir, task.base, cols)


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
    """The walk over the whole file, a piece (``task.piece``) at a time: healthy stretches as
    columns (:class:`Stretch`, with ``task.fast``), each record the column walk declines by the
    precise decoder (:class:`Record` and its :class:`Damage`), a broken record reported and
    resynchronised after, then how the file ends."""
    path = task.path
    st = _Walk(task.base)  # st.base becomes the records' base for a misnamed file
    pos = 0
    piece = want = task.piece or piece_size()
    fast = task.fast
    # the columns a fold asks for: key hashes for the IndexFile check, TAGS codes for the units'
    hashes = fast and task.keys_dir is not None
    codes = fast and bool(task.cq_file_size and task.root)
    while True:
        data = f.pread(pos, want)
        want = piece
        st.bytes_read += len(data)
        more = pos + len(data) < f.size
        at = 0  # where the walk stands in the piece
        end: ColumnStop | DataEnd | None = None
        resume: int | None = -1  # -1: no broken record met in this piece
        while end is None:
            if fast:
                cw = walk_columns(data, st.base + pos, start=at, key_hashes=hashes, tags_codes=codes)
                if len(cw.columns):
                    yield Stretch(pos, data, cw)
                    st.records += len(cw.columns)
                at = cw.stop.position
                if cw.stop.kind != "anomaly" or rmq.piece_goes_on("anomaly", at, len(data), more):
                    end = cw.stop
                    break
            # the precise decoder: the record the column walk declined (and, without ``fast``,
            # every record of the piece)
            walker = RecordWalker(data, at, check_crc=True)
            try:
                for p, rec in walker:
                    here = pos + p
                    if rec.physical_offset != st.base + here:
                        if not st.records and task.alt_base is not None and rec.physical_offset == task.alt_base + here:
                            st.base = task.alt_base  # misnamed: RMQ-FILE-OVERLAP/GAP/ALIGN say so
                            yield Rebased(st.base)
                        elif task.is_last and rmq.is_stale_copy(f, st.base, here, rec, task.file_size):
                            # A record at ``here`` of the last file that claims another place, with no
                            # record at its own place after it: valid data ends here and the rest is
                            # stale (copied or left behind) data.
                            extent = nonzero_extent(f, here)
                            stop = extent[1] if extent else here + rec.total_size
                            st.valid_end = here
                            yield Damage(model.stale_finding(path, here, stop, rec.physical_offset))
                            yield Damage(Finding(RMQ_CL_VALID_END, path, here, f"valid data ends at commitlog offset {st.base + here} (stale data follow)"))
                            yield st.end("stale")
                            return
                    # the store model's rule (every reader's walk applies it): a decoded record whose
                    # last byte is zero is a torn tail when only zeros follow
                    if task.is_last and not data[p + rec.total_size - 1]:
                        torn = rmq.torn_record_tail(f, here, rec, 0, task.file_size)
                        if torn is not None:
                            yield _torn_damage(task, torn, st.base)
                            st.valid_end = here
                            yield st.end("torn")
                            return
                    found = model.record_findings(path, st.base, here, rec, memoryview(data)[p : p + rec.total_size], check_properties=task.check_properties)
                    if found:
                        covers = (st.base + here, st.base + here + rec.total_size) if any(x.code == RMQ_CL_PHYS_OFFSET for x in found) else None
                        for x in found:
                            yield Damage(x)
                        if covers is not None:
                            yield Damage(None, covers=covers)
                    yield Record(here, rec)
                    st.records += 1
                    at = p + rec.total_size
                    if fast:
                        break  # back to the columns after it
                else:
                    end = walker.end
            except MqError as exc:
                resume = yield from _after_broken_record(f, task, pos + (walker.failed_at or 0), exc.at(path, pos), st)
                if resume is not None and pos + at < resume < pos + len(data) - rmq.JUDGED_HEADER:
                    at, resume = resume - pos, -1  # the walk goes on in the piece in hand
                    continue
                break
        if resume != -1:
            if resume is None:
                yield st.end(st.stopped)
                return
            pos = resume
            continue
        assert end is not None
        end_pos = pos + end.position
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
