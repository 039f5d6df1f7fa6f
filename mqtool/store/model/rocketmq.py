"""The RocketMQ store model: segment continuity of the CommitLog and ConsumeQueue directories.

A RocketMQ segment directory (``commitlog/``, ``consumequeue/<topic>/<queue>/``) holds files named
by the 20-digit offset of their first byte, each of the directory's configured size
(``mappedFileSizeCommitLog`` / ``mappedFileSizeConsumeQueue``; upstream ``MappedFileQueue`` refuses
to load a file of another length, the last one included, and its ``checkSelf`` reports names
that do not follow each other).  This module states those facts once, as findings, for every
command: a missing file (``RMQ-FILE-GAP``), an overlap, a wrong size, a zero-length file, a
misaligned name, an unexpected entry, a link or a special file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mqtool.errors import CorruptDataError, MqError
from mqtool.findings import Finding, Severity, finding_location, finding_text  # noqa: F401 (re-exported)
from mqtool.findings.code_ids import (
    RMQ_ABORT,
    RMQ_CHECKPOINT,
    RMQ_CHECKPOINT_FORMAT,
    RMQ_CL_BLANK,
    RMQ_CL_GARBAGE,
    RMQ_CL_IN_PROGRESS,
    RMQ_CL_NO_BLANK,
    RMQ_CL_PHYS_OFFSET,
    RMQ_CL_PROP_CRC,
    RMQ_CL_PROPERTIES,
    RMQ_CL_TORN_TAIL,
    RMQ_CQ_INVALID_UNIT,
    RMQ_CQ_PARTIAL_UNIT,
    RMQ_CQ_PAST_END,
    RMQ_FILE_ALIGN,
    RMQ_FILE_GAP,
    RMQ_FILE_LINK,
    RMQ_FILE_NAME,
    RMQ_FILE_OVERLAP,
    RMQ_FILE_SIZE,
    RMQ_FILE_UNREADABLE,
    RMQ_FILE_ZERO_LENGTH,
    RMQ_IDX_PAST_END,
)
from mqtool.formats import segment_names as segnames
from mqtool.formats._binary import Buffer
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import (
    BLANK_MAGIC,
    MESSAGE_MAGICS,
    MIN_MESSAGE_SIZE,
    PHYSICAL_OFFSET_POSITION,
    MessageRecord,
    check_crc_property,
    peek_record,
)
from mqtool.formats.rocketmq.properties import CRC32
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, link_target, nonzero_extent, read_small_file

if TYPE_CHECKING:  # the walk builds on this module
    from mqtool.store.model.commitlog_walk import FileRecords


def irregular_findings(entries: Iterable[tuple[Path, str]], expected: str) -> list[Finding]:
    """Symbolic links (never followed, wherever they lead) and special files (never opened: a
    FIFO could block) where the store holds regular files or directories."""
    out: list[Finding] = []
    for path, kind in entries:
        if kind == "a symlink":
            out.append(Finding(RMQ_FILE_LINK, str(path), None, f"expected {expected}, found {kind} to {link_target(path)!r}: not followed"))
        else:
            out.append(Finding(RMQ_FILE_UNREADABLE, str(path), None, f"expected {expected}, found {kind}: not read"))
    return out


def cq_file_size(forced: int | None, queues: dict[tuple[str, int], list[rmq.Segment]]) -> tuple[int, str]:
    """The ConsumeQueue file size every file of the store must have, and where it comes from.

    One size for the whole store (``mappedFileSizeConsumeQueue`` is a broker setting, rounded
    up to whole units by its getter): ``forced`` (``--cq-file-size``), else the size most of the
    store's files have, else the upstream default.  The broker creates every ConsumeQueue file at
    that size and refuses to load one of another size, the last file of a queue included."""
    if forced:
        return cqf.cq_file_size(forced), "--cq-file-size"
    detected = rmq.common_cq_file_size(seg for segs in queues.values() for seg in segs)
    if detected is not None:
        return detected, "detected: the most common size of the store's ConsumeQueue files"
    return rmq.DEFAULT_CQ_FILE_SIZE, "the upstream default: no ConsumeQueue file holds whole 20-byte units; pass --cq-file-size"


def segment_findings(
    directory: Path,
    segments: list[rmq.Segment],
    file_size: int | None,
    family: str,
    *,
    live: bool = False,
    size_source: str | None = None,
) -> list[Finding]:
    """Every fact about the files of one segment directory as a list of findings: unexpected
    entries, links, special files, zero-length and wrong-size files, misaligned names, and the
    gaps and overlaps between consecutive names.  ``family`` is ``commitlog`` or
    ``consumequeue``; ``live`` (a writer holds the store's lock) makes a zero-length last file
    a file being created."""
    out: list[Finding] = []
    for path in rmq.unexpected_entries(directory):
        if path.name.startswith(".mqtool"):
            continue
        out.append(Finding(RMQ_FILE_NAME, str(path), None, f"unexpected entry in a {family} directory: {path.name!r}"))
    out.extend(irregular_findings(rmq.irregular_segments(directory), f"a regular {family} file"))
    if not segments or not file_size:
        return out
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        if seg.size == 0:
            where = "the last file" if i == last else "a file before the last one"
            out.append(
                Finding(
                    RMQ_FILE_ZERO_LENGTH,
                    str(seg.path),
                    0,
                    f"zero-length {family} file ({where}); "
                    + ("a live writer is creating it" if live and i == last else "RocketMQ 4.x refuses to start, 5.1.3+ deletes a zero-length last file"),
                    # Before the last file no version starts, and the file's data is gone.
                    severity=(Severity.info if live else None) if i == last else Severity.error,
                )
            )
        elif seg.size != file_size:
            out.append(
                Finding(
                    RMQ_FILE_SIZE,
                    str(seg.path),
                    min(seg.size, file_size),
                    f"expected {file_size} bytes (the {family} file size{'; ' + size_source if size_source else ''}), found {seg.size}"
                    + (f": {seg.size % cqf.CQ_UNIT_SIZE} bytes of a partial unit" if family == "consumequeue" and seg.size % cqf.CQ_UNIT_SIZE else ""),
                    length=abs(seg.size - file_size),
                )
            )
        if seg.base % file_size:
            out.append(Finding(RMQ_FILE_ALIGN, str(seg.path), None, f"expected a name that is a multiple of {file_size}, found {seg.base}"))
        if i:
            prev = segments[i - 1]
            expected = prev.base + file_size
            if seg.base > expected:
                missing = (seg.base - expected) // file_size
                out.append(
                    Finding(
                        RMQ_FILE_GAP,
                        str(seg.path),
                        None,
                        f"expected the file after {prev.name} to be {segnames.rocketmq_file_name(expected)}, found {seg.name} "
                        f"({missing or 'part of a'} file(s) missing: offsets {expected}..{seg.base - 1})",
                        length=seg.base - expected,
                        details={"missing_from": expected, "missing_to": seg.base},
                    )
                )
            elif seg.base < expected:
                out.append(
                    Finding(
                        RMQ_FILE_OVERLAP,
                        str(seg.path),
                        None,
                        f"expected the file after {prev.name} to be {segnames.rocketmq_file_name(expected)}, found {seg.name} (overlaps by {expected - seg.base} bytes)",
                        length=expected - seg.base,
                    )
                )
    return out


def missing_between(prev_base: int, base: int, file_size: int) -> tuple[int, int] | None:
    """The commitlog offsets ``[start, stop)`` no file holds between a CommitLog file whose records
    start at ``prev_base`` and the next one holding records, at ``base`` (a missing or zero-length
    file between them: RMQ-FILE-GAP / RMQ-FILE-ZERO-LENGTH say so, so nothing pointing there is
    reported again, and a queue may skip the records they held); None when they join."""
    if file_size and base > prev_base + file_size:
        return prev_base + file_size, base
    return None


#: How long a reader waits, and how often, before it calls the changing tail of the active file of
#: a live store (a writer holds the lock) in progress rather than damaged.
LIVE_TAIL_DELAYS = (0.05, 0.2, 0.5)


def in_progress_finding(path: str, tail: int, grown: int) -> Finding:
    """RMQ-CL-IN-PROGRESS: a writer holds the store's lock and ``grown`` more valid bytes appeared
    after ``tail`` while the file was read: what looked wrong there was a record being written."""
    return Finding(
        RMQ_CL_IN_PROGRESS,
        path,
        tail,
        f"the tail from {tail} is being written (a writer holds the store's lock; {grown} more valid bytes appeared while validating): checked up to here",
    )


def commitlog_findings(store: rmq.RocketMQStore, *, live: bool = False) -> list[Finding]:
    """The continuity facts of a store's CommitLog directory (what every command that reads the
    CommitLog reports before its own answer: a missing middle file is damage for all of them)."""
    return segment_findings(store.commitlog_dir, store.commitlog, store.commitlog_file_size, "commitlog", live=live)


# --- damage on the path of a CommitLog read (dump, stats, info, query, diff) ----------------------


def first_record(path: Path) -> MessageRecord | None:
    """The first record of a CommitLog file, as a walk of the file yields it first: a message at
    position 0 that decodes, body CRC checked; None when there is none (zeros, END_OF_FILE, a
    broken record, an unreadable file).  One small read, not a piece of the file."""
    try:
        with ReadOnlyFile(path) as f:
            return rmq.read_record_at(f, 0)
    except MqError:
        return None


def last_data_file(segments: list[rmq.Segment]) -> int:
    """Index of the CommitLog file that ends in zeros rather than END_OF_FILE (upstream
    ``MappedFileQueue``'s last mapped file): the last file whose first record header is not zeros,
    the first file when none holds a record.  Files after it are pre-allocated."""
    return max(rmq.last_data_index(segments), 0)


def torn_tail_finding(path: str, bad: int, torn: rmq.TornTail) -> Finding:
    """RMQ-CL-TORN-TAIL for the record ``rmq.torn_tail_at`` found cut short at ``bad``."""
    return Finding(RMQ_CL_TORN_TAIL, path, bad, torn.reason, length=torn.stop - bad)


def torn_record_finding(f: ReadOnlyFile, path: str, pos: int, record: MessageRecord, file_size: int) -> Finding | None:
    """RMQ-CL-TORN-TAIL for a record of the last file read on its own (not by a walk, which applies
    ``rmq.torn_record_tail`` itself) that decodes but is a torn tail; None when it is not one."""
    tail = f.pread(pos + record.total_size - 1, 1)
    torn = rmq.torn_record_tail(f, pos, record, tail[0] if tail else 0, file_size)
    return torn_tail_finding(path, pos, torn) if torn is not None else None


def no_blank_finding(path: str, end: int, kind: str) -> Finding:
    """RMQ-CL-NO-BLANK: a file before the last whose records stop at ``end`` (``kind``: what
    follows) without the END_OF_FILE record ``CommitLog.recoverNormally`` moves on at."""
    return Finding(
        RMQ_CL_NO_BLANK,
        path,
        end,
        f"expected END_OF_FILE (BLANK) record at the end of a file before the last, found "
        f"{'zeros' if kind == 'zeros' else 'the end of the file'}: the broker's recovery stops here and drops every later file",
    )


def blank_size_finding(path: str, position: int, total: int, file_size: int) -> Finding | None:
    """RMQ-CL-BLANK when an END_OF_FILE record's TOTALSIZE is not the rest of the (configured
    size of the) file; None when it is."""
    rest = file_size - position
    if total == rest:
        return None
    return Finding(RMQ_CL_BLANK, path, position, f"expected END_OF_FILE TOTALSIZE {rest} (the rest of the file), found {total}")


def garbage_finding(path: str, end: int, extent: tuple[int, int], *, ignored: bool = False) -> Finding:
    """RMQ-CL-GARBAGE: non-zero bytes ``extent`` after the valid end ``end`` of the last file; a
    warning when they are bytes the broker overwrites (``ignored``: ``ignored_tail``)."""
    first, stop = extent
    return Finding(
        RMQ_CL_GARBAGE,
        path,
        first,
        f"expected zeros after the end of valid data at {end}, found {stop - first} bytes of other data "
        f"(from {first} to {stop}); " + (IGNORED_TAIL.format(end=end) if ignored else "stale data left by a truncation, or damage"),
        length=stop - first,
        severity=Severity.warning if ignored else None,
    )


#: What the broker does with bytes ``ignored_tail`` accepts (the tail of a finding's message).
IGNORED_TAIL = (
    "not a record, no record follows and nothing points there: the broker's recovery stops at {end} "
    "and its next append overwrites these bytes (nothing is lost); `mqtool recover` zeroes them"
)


def ignored_tail(f: ReadOnlyFile, base: int | None, end: int, nexts: NextRecords | None = None) -> bool:
    """Whether the bytes of the newest CommitLog file from ``end`` on -- where its valid data ends
    and the broker's recovery stops -- are bytes the broker loses nothing by.

    Upstream ``CommitLog.checkMessageAndReturnSize`` refuses a header whose magic code is neither a
    message's nor BLANK's, or whose TOTALSIZE reaches past the file, and
    ``recoverNormally``/``recoverAbnormally`` stop there: ``MappedFileQueue.truncateDirtyFiles``
    sets the file's write position to ``end`` (it zeroes nothing) and the next append overwrites
    the bytes.  That loses a record only if one is there, so this is True when

    * the bytes at ``end`` are no record header the broker wrote: a TOTALSIZE the broker never
      writes (below the smallest record, past the file or ``MAX_RECORD_SIZE``; zeros included), or
      a magic code that is not a message's with length fields that do not give TOTALSIZE
      (``computed_record_size``: a record whose magic alone is damaged still frames);
    * no record decodes after ``end`` at its own PHYSICALOFFSET (``find_next_record``);
    * nothing of the store points at or past ``end``: no ConsumeQueue's last unit, no IndexFile's
      ``endPhyOffset`` (a dispatched record was there).

    ``base``: the file's commitlog offset (its name when None; False when it has none).
    ``nexts``: the records found after positions already (``next_record``), noted there too."""
    if base is None:
        try:
            base = segnames.parse_rocketmq_file_name(f.path.name)
        except (MqError, ValueError):
            return False
    head = f.pread(end, 8)
    if len(head) == 8:
        total, magic = peek_record(head)
        if MIN_MESSAGE_SIZE <= total <= min(f.size - end, rmq.MAX_RECORD_SIZE) and (
            magic in MESSAGE_MAGICS or magic == BLANK_MAGIC or rmq.computed_record_size(f, end) == total
        ):
            return False
    if next_record(f, base, end + 1, nexts) is not None:
        return False
    return not _referenced_from(f.path.parent.parent, base + end)


#: ``(base, position)`` -> the first record ``rmq.find_next_record`` finds from there (None: none)
NextRecords = dict[tuple[int, int], int | None]


def next_record(f: ReadOnlyFile, base: int, start: int, nexts: NextRecords | None, stop: int | None = None) -> int | None:
    """``rmq.find_next_record(f, base, start, stop)``, from ``nexts`` when found there already,
    else noted there: a reading that judged the bytes after a file's valid end (``ignored_tail``)
    and a recover plan counting the records a cut there drops search them once.  ``stop``: only
    zeros from there on (it changes no answer, only what is read)."""
    if nexts is None:
        return rmq.find_next_record(f, base, start, stop)
    if (base, start) not in nexts:
        nexts[(base, start)] = rmq.find_next_record(f, base, start, stop)
    return nexts[(base, start)]


def _referenced_from(root: Path, offset: int) -> bool:
    """Whether the ConsumeQueues (each queue's last unit) or the IndexFiles (their headers'
    ``endPhyOffset``) of the store at ``root`` point at commitlog ``offset`` or past it; True
    when the store cannot be read (nothing can be ruled out)."""
    try:
        store = rmq.open_store(root)
        for topic, queue_id in store.queues():
            segments = [s for s in store.cq_segments(topic, queue_id) if s.size > 0]
            for seg in reversed(segments):
                with ReadOnlyFile(seg.path) as q:
                    walker = cqf.CqWalker(q.read_all())
                walker.scan()
                last = walker.last
                if last is not None:
                    if not last.is_filler and last.commitlog_offset >= offset:
                        return True
                    break
        for path in store.index_files():
            with ReadOnlyFile(path) as i:
                raw = i.pread(0, idxf.INDEX_HEADER_SIZE)
            if len(raw) == idxf.INDEX_HEADER_SIZE and idxf.decode_index_header(raw).end_phy_offset >= offset:
                return True
    except MqError:
        return True
    return False


def broken_record_finding(
    f: ReadOnlyFile,
    path: str,
    bad: int,
    exc: MqError | None,
    file_size: int,
    last: bool,
    nexts: NextRecords | None = None,
    tails: dict[int, tuple[int, int] | None] | None = None,
) -> Finding:
    """The record that fails at ``bad``: a torn tail in the last file (``rmq.torn_tail_at``, a
    warning), else damage with the code ``rmq.classify_broken_record`` gives (validate's).
    ``nexts``, ``tails``: what a reading found of the bytes after positions already."""
    if last:
        torn = rmq.torn_tail_at(f, bad, file_size, tails)
        if torn is not None:
            return torn_tail_finding(path, bad, torn)
    if exc is None:
        try:
            rmq.read_record_at(f, bad)
            exc = CorruptDataError(path=f.path, position=bad, expected="a record that decodes", found="a record cut short")
        except MqError as err:
            exc = err
    code, located, _frames = rmq.classify_broken_record(f, bad, exc)
    if last and ignored_tail(f, None, bad, nexts):
        return Finding(code, path, located.position, f"{located.reason}; {IGNORED_TAIL.format(end=bad)}", severity=Severity.warning)
    return Finding(code, path, located.position, located.reason)


def commitlog_file_findings(
    f: ReadOnlyFile,
    walk: FileRecords | None,
    file_size: int | None,
    *,
    last: bool,
    after_last: bool = False,
    tails: dict[int, tuple[int, int] | None] | None = None,
    nexts: NextRecords | None = None,
) -> list[Finding]:
    """How one CommitLog file a reader walked ends, stated as validate states it: its first broken
    record (``rmq.classify_broken_record``'s code at its position) or torn tail, a file before the
    last without its END_OF_FILE record (RMQ-CL-NO-BLANK) or with a wrong one (RMQ-CL-BLANK),
    non-zero bytes after the valid end of the last file (RMQ-CL-GARBAGE) or anywhere in a
    pre-allocated file after it (``after_last``, ``walk`` not needed).  ``walk`` must have run to
    its end; ``last``: ``last_data_file``'s file (upstream ``CommitLog.recoverNormally`` reads
    every file but the last to its END_OF_FILE record, the last to where its data stops).
    A file cut short before the last is RMQ-FILE-SIZE's (``segment_findings``), not a second
    finding.  Reads only the bytes after where the walk stopped.  ``tails``: the non-zero extents
    (``nonzero_extent``) after file positions, known already or, when judged here, noted there for
    a caller that judges the same bytes next (a recover plan's cut), so they are read once;
    ``nexts``: likewise the records found after positions (``next_record``: the records a cut drops)."""
    path = str(f.path)
    size = file_size or f.size
    if after_last:
        extent = nonzero_extent(f, 0)
        if extent is None:
            return []
        return [Finding(RMQ_CL_GARBAGE, path, extent[0], "non-zero bytes in a file after the last file holding records", length=extent[1] - extent[0])]
    assert walk is not None
    return walk_record_findings(walk) + _file_end_findings(f, walk, path, size, last, {} if tails is None else tails, nexts)


def walk_record_findings(walk: FileRecords) -> list[Finding]:
    """``record_findings`` of the records a walk (with ``base``) has read so far."""
    return list(walk.record_findings)


def _tail(f: ReadOnlyFile, position: int, tails: dict[int, tuple[int, int] | None]) -> tuple[int, int] | None:
    """``nonzero_extent(f, position)``, from ``tails`` when known there, else noted there."""
    if position not in tails:
        tails[position] = nonzero_extent(f, position)
    return tails[position]


def _file_end_findings(
    f: ReadOnlyFile, walk: FileRecords, path: str, size: int, last: bool, tails: dict[int, tuple[int, int] | None], nexts: NextRecords | None
) -> list[Finding]:
    end = walk.end
    if walk.error is not None and walk.failed_at is not None:
        return [broken_record_finding(f, path, walk.failed_at, walk.error, size, last, nexts, tails)]
    if end is None:
        return []
    if end.kind == "stale":
        extent = _tail(f, end.position, tails)
        return [stale_finding(path, end.position, extent[1] if extent else end.position, walk.stale_claim)]
    if end.kind == "torn":
        if walk.torn is not None:
            return [torn_tail_finding(path, end.position, walk.torn)]
        return [broken_record_finding(f, path, end.position, None, size, last, nexts, tails)]
    if end.kind == "partial":
        if f.size < size and not last:
            return []  # cut short: RMQ-FILE-SIZE
        return [broken_record_finding(f, path, end.position, rmq.past_the_end_error(f, end.position, end.length), size, last, nexts, tails)]
    if end.kind == "blank":
        blank = blank_size_finding(path, end.position, end.length, size)
        return [blank] if blank is not None else []
    if not last:
        if f.size < size:
            return []  # cut short: RMQ-FILE-SIZE
        return [no_blank_finding(path, end.position, end.kind)]
    if end.kind == "zeros":
        extent = _tail(f, end.position, tails)
        if extent is not None:
            if extent[0] < end.position + 8 and walk.base is not None and rmq.record_starts_at(f, walk.base, end.position):
                # zeros when the walk got there, a valid record now: a writer appended since (the
                # file is growing), not garbage -- a file at rest cannot be both
                return []
            return [garbage_finding(path, end.position, extent, ignored=ignored_tail(f, walk.base, end.position, nexts))]
    return []


def shutdown_findings(store: rmq.RocketMQStore, *, max_store_ts: int, index_end_ts: int | None = None, live: bool = False) -> list[Finding]:
    """What the ``abort`` file and the checkpoint (``StoreCheckpoint``) say against the data, as
    validate states it and every reader showing them (info) does: RMQ-ABORT (the broker will
    recover abnormally; info while a writer holds the lock), RMQ-CHECKPOINT-FORMAT, and
    RMQ-CHECKPOINT for a physicMsgTimestamp or logicsMsgTimestamp later than the newest record's
    store time ``max_store_ts`` (0: no record) -- in a store with no CommitLog data at all too:
    the checkpoint says records were flushed and none is there -- or an indexMsgTimestamp later
    than the newest IndexFile's end time (``index_end_ts``; read from the IndexFile headers when
    None).  ``live``: a writer holds the store's lock (what changes while read is info)."""
    out: list[Finding] = []
    if store.has_abort:
        out.append(
            Finding(
                RMQ_ABORT,
                str(store.abort_path),
                None,
                "the abort file is present and a writer holds the store's lock: the broker is running"
                if live
                else "the abort file is present: the broker did not shut down cleanly (or is running); it will recover abnormally at start",
                severity=Severity.info if live else None,
            )
        )
    if not store.checkpoint_path.exists():
        return out
    try:
        cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20))
    except MqError as exc:
        out.append(Finding(RMQ_CHECKPOINT_FORMAT, str(store.checkpoint_path), exc.position, exc.reason))
        return out
    held = any(seg.size > 0 for seg in store.commitlog)
    for name, value, pos in (
        ("physicMsgTimestamp", cp.physic_msg_timestamp, 0),
        ("logicsMsgTimestamp", cp.logics_msg_timestamp, 8),
    ):
        if value > max_store_ts:
            expected = f"expected {name} <= the newest record's store time {max_store_ts}" if held else f"expected {name} 0 (the store has no CommitLog data)"
            out.append(
                Finding(
                    RMQ_CHECKPOINT,
                    str(store.checkpoint_path),
                    pos,
                    f"{expected}, found {value}: records flushed before the checkpoint was written are missing"
                    + (" (or were written after this run read them: the store is live)" if live else ""),
                    severity=Severity.info if live else None,
                )
            )
    index_files = store.index_files()
    if index_end_ts is None:
        index_end_ts = 0
        for path in index_files:
            try:
                with ReadOnlyFile(path) as f:
                    raw = f.pread(0, idxf.INDEX_HEADER_SIZE)
                index_end_ts = max(index_end_ts, idxf.decode_index_header(raw).end_timestamp)
            except MqError:
                continue
    if cp.index_msg_timestamp > max(index_end_ts, 0) and index_files:
        out.append(
            Finding(
                RMQ_CHECKPOINT,
                str(store.checkpoint_path),
                16,
                f"expected indexMsgTimestamp <= the newest IndexFile end time {index_end_ts}, found {cp.index_msg_timestamp}"
                + (" (the store is live: files may have changed while this run read them)" if live else ""),
                severity=Severity.info if live else None,
            )
        )
    return out


def record_findings_in(path: Path, base: int, pos: int, rec: MessageRecord) -> list[Finding]:
    """:func:`record_findings` of the record ``rec`` decoded at ``pos`` of the file ``path``
    (named ``base``), its bytes read from the file."""
    with ReadOnlyFile(path) as f:
        raw = f.pread(pos, rec.total_size)
    return record_findings(str(path), base, pos, rec, raw)


def record_findings(path: str, base: int, pos: int, rec: MessageRecord, raw: Buffer, *, check_properties: bool = True) -> list[Finding]:
    """What validate says about one record that decodes, at position ``pos`` of the file named
    ``base`` (``raw``: its bytes): a PHYSICALOFFSET that is not its address (RMQ-CL-PHYS-OFFSET),
    property segments the broker drops (RMQ-CL-PROPERTIES), a ``__CRC32#`` property that is not
    the CRC of the record's bytes before it (RMQ-CL-PROP-CRC)."""
    out: list[Finding] = []
    if rec.physical_offset != base + pos:
        out.append(
            Finding(
                RMQ_CL_PHYS_OFFSET,
                path,
                pos + PHYSICAL_OFFSET_POSITION,
                f"expected PHYSICALOFFSET {base + pos} (the record's position), found {rec.physical_offset}",
            )
        )
    if not check_properties:
        return out
    if rec.dropped_properties:
        out.append(
            Finding(
                RMQ_CL_PROPERTIES,
                path,
                pos,
                f"expected name\\x01value\\x02 property segments, found {len(rec.dropped_properties)} the broker drops: "
                + ", ".join(repr(s) for s in rec.dropped_properties[:3]),
            )
        )
    if CRC32 in rec.properties:
        try:
            checked = check_crc_property(raw)
        except MqError as exc:
            out.append(Finding(RMQ_CL_PROP_CRC, path, pos + rec.total_size - 11, exc.reason))
            return out
        if checked is not None and checked[0] != checked[1]:
            out.append(
                Finding(
                    RMQ_CL_PROP_CRC,
                    path,
                    pos + rec.total_size - 11,
                    f"expected __CRC32# {checked[1]} (CRC of the record's first {rec.total_size - 20} bytes), found {checked[0]}",
                )
            )
    return out


def stale_finding(path: str, at: int, stop: int, claimed: int) -> Finding:
    """The bytes from ``at`` to ``stop`` of the last file are stale records (``is_stale_copy``),
    the first a copy of the record at commitlog offset ``claimed``."""
    return Finding(
        RMQ_CL_GARBAGE,
        path,
        at,
        f"expected zeros after the end of valid data at {at}, found {stop - at} bytes of stale records "
        f"(the first is a copy of the record at commitlog offset {claimed}): data left after a truncation, or copied here",
        length=stop - at,
    )


def index_past_end_finding(path: str, position: int, number: int, end: int, offset: int) -> Finding:
    """IndexFile entry ``number`` (at ``position``) points at or past ``end``, where the
    CommitLog's valid data ends."""
    return Finding(RMQ_IDX_PAST_END, path, position, f"entry #{number}: expected a commitlog offset below {end}, found {offset}")


def preallocated_findings(store: rmq.RocketMQStore) -> list[Finding]:
    """How the files after ``last_data_file`` (pre-allocated by the broker: zeros) are, as
    validate states it: non-zero bytes in one are RMQ-CL-GARBAGE (``commitlog_file_findings``
    with ``after_last``).  Reads each of them whole (``nonzero_extent``, in bounded chunks)."""
    out: list[Finding] = []
    last = last_data_file(store.commitlog)
    for seg in store.commitlog[last + 1 :]:
        if seg.size > 0:
            with ReadOnlyFile(seg.path) as f:
                out.extend(commitlog_file_findings(f, None, store.commitlog_file_size, last=False, after_last=True))
    return out


def unreadable_record_findings(store: rmq.RocketMQStore, seg: rmq.Segment, pos: int, exc: MqError) -> list[Finding]:
    """Why the record at ``pos`` of ``seg``, read on its own (a ConsumeQueue unit, an index entry or
    a msgId points there), does not decode, as validate states it.  When the walk of the file
    (``commitlog_walk.FileRecords``, as validate's, to where its data ends) stops at or before ``pos``, the
    record lies past the file's valid data: how the file ends names it (``commitlog_file_findings``:
    RMQ-CL-GARBAGE after the zeros that end the last file, RMQ-CL-NO-BLANK in an older one, the
    first broken record, RMQ-CL-GARBAGE in a pre-allocated file); otherwise the record itself is
    broken (``broken_record_finding``).  Reads the file up to where its walk stops: only on the
    path of a read that failed."""
    index = store.commitlog.index(seg)
    last_index = last_data_file(store.commitlog)
    size = store.commitlog_file_size
    with ReadOnlyFile(seg.path) as f:
        if index > last_index:
            found = commitlog_file_findings(f, None, size, last=False, after_last=True)
            if found:
                return found
        else:
            from mqtool.store.model.commitlog_walk import FileRecords

            walk = FileRecords(f, check_crc=True, last=index == last_index, file_size=size, base=seg.base)
            for at, record in walk:
                if at + record.total_size > pos:
                    break  # a record of the walk holds ``pos``: the data goes on past it
            else:
                found = commitlog_file_findings(f, walk, size, last=index == last_index)
                if found:
                    return found
        return [broken_record_finding(f, str(seg.path), pos, exc, size or f.size, index == last_index)]


def gap_holding(findings: Iterable[Finding], offset: int) -> Finding | None:
    """The RMQ-FILE-GAP finding whose missing range holds commitlog ``offset``, if any."""
    for finding in findings:
        if finding.code == RMQ_FILE_GAP:
            low, high = finding.details.get("missing_from"), finding.details.get("missing_to")
            if isinstance(low, int) and isinstance(high, int) and low <= offset < high:
                return finding
    return None


def segment_findings_on_path(findings: Iterable[Finding], read: Iterable[Path], start: int | None = None) -> list[Finding]:
    """The findings of ``commitlog_findings`` a reader met: those about a file it read (a gap is
    stated on the file after the missing ones: met when the read started before the gap) and those
    about the directory's other entries (links, unexpected names)."""
    paths = {str(p) for p in read}
    out: list[Finding] = []
    for finding in findings:
        if finding.code == RMQ_FILE_GAP:
            high = finding.details.get("missing_to")
            if finding.path in paths and (start is None or not isinstance(high, int) or start < high):
                out.append(finding)
        elif finding.path in paths or finding.code in (RMQ_FILE_NAME, RMQ_FILE_LINK, RMQ_FILE_UNREADABLE):
            out.append(finding)
    return out


def planned_commitlog_findings(store: rmq.RocketMQStore, outcome: dict[Path, int | None], *, file_size: int | None = None) -> list[Finding]:
    """The continuity facts of the CommitLog directory as a plan would leave it: ``outcome``
    maps a file's path to its size after the plan (``None``: the plan deletes it); files it does
    not name keep their size.  The rules are ``segment_findings``'s, so what recover says it
    cannot fix is exactly what validate will report (upstream ``MappedFileQueue.load`` refuses a
    file of another length, ``MappedFileQueue.checkSelf`` names files that do not follow each
    other)."""
    after: list[rmq.Segment] = []
    for seg in store.commitlog:
        if seg.path in outcome:
            size = outcome[seg.path]
            if size is None:
                continue
            seg = rmq.Segment(seg.path, seg.base, size, seg.mtime)
        after.append(seg)
    return segment_findings(store.commitlog_dir, after, file_size or store.commitlog_file_size, "commitlog")


def zero_tail_finding(f: ReadOnlyFile, code: str, position: int, after: str) -> Finding | None:
    """``code`` for non-zero bytes in what should be the zero tail of ``f`` from ``position`` (the
    first extent of them, ``nonzero_extent``), or None when it is all zeros; ``after`` names the
    valid data they follow ("the file's valid data", "the TimerLog's valid end")."""
    extent = nonzero_extent(f, position)
    if extent is None:
        return None
    first, stop = extent
    return Finding(code, str(f.path), first, f"expected zeros after {after} at {position}, found non-zero bytes up to {stop}", length=stop - first)


def unscanned_commitlog_findings(store: rmq.RocketMQStore, stop: int, known: Mapping[str, list[Finding]] | None = None) -> list[Finding]:
    """How each CommitLog file before ``store.commitlog[stop]`` ends, as validate states it
    (``commitlog_file_findings``): its first broken record, a missing or wrong END_OF_FILE record.
    For a plan whose recovery, like upstream ``CommitLog.recoverNormally``, reads only the files
    from ``stop`` on: damage before them is damage it does not fix (cutting there would drop every
    later file).  Files cut short are ``segment_findings``'s (RMQ-FILE-SIZE), not stated again.
    ``known``: the findings of files already read (by path, ``QueueOffsets.end_findings``), which
    are taken as they are instead of reading the file again."""
    out: list[Finding] = []
    last = last_data_file(store.commitlog)
    for i, seg in enumerate(store.commitlog[:stop]):
        if seg.size == 0 or i > last:
            continue
        if known is not None and str(seg.path) in known:
            out.extend(known[str(seg.path)])
            continue
        with ReadOnlyFile(seg.path) as f:
            from mqtool.store.model.commitlog_walk import FileRecords

            walk = FileRecords(f, check_crc=True, last=i == last, file_size=store.commitlog_file_size, base=seg.base)
            for _ in walk:
                pass
            out.extend(commitlog_file_findings(f, walk, store.commitlog_file_size, last=i == last))
    return out


def consumequeue_file_size(store: rmq.RocketMQStore, forced: int | None = None) -> tuple[int, str]:
    """``cq_file_size`` over every queue of ``store`` (the size validate judges each file by)."""
    return cq_file_size(forced, {key: store.cq_segments(*key) for key in store.queues()})


def queue_segment_findings(store: rmq.RocketMQStore, topic: str, queue_id: int, forced: int | None = None) -> list[Finding]:
    """``segment_findings`` of one queue's directory, judged by the store's ConsumeQueue file size
    (``consumequeue_file_size``), as validate states them: what every command reading the queue's
    files reports (a file of the wrong size, a missing file between two others)."""
    size, source = consumequeue_file_size(store, forced)
    return segment_findings(rmq.queue_dir(store, topic, queue_id), store.cq_segments(topic, queue_id), size, "consumequeue", size_source=source)


def cq_end_finding(path: str, end: cqf.QueueDataEnd) -> Finding | None:
    """How a ConsumeQueue file's units end when not at the end of the file (``CqWalker``'s end):
    an invalid unit (RMQ-CQ-INVALID-UNIT: the broker ends the queue there) or a partial unit
    (RMQ-CQ-PARTIAL-UNIT); None for the end of the file or zeros."""
    if end.kind == "invalid":
        return Finding(RMQ_CQ_INVALID_UNIT, path, end.position, f"expected a unit with offset >= 0 and size > 0 or zeros, found {end.unit}; the queue ends here")
    if end.kind == "partial":
        return Finding(RMQ_CQ_PARTIAL_UNIT, path, end.position, f"expected whole 20-byte units, found {end.length} trailing byte(s)", length=end.length)
    return None


# --- cause links: knock-on findings folded under the CommitLog damage that explains them --------

#: Findings about a ConsumeQueue unit or an IndexFile entry pointing at or past where the
#: CommitLog's valid data ends: the damage that ends the data there (a torn tail, a broken record,
#: garbage after the valid end) explains them, so they name it as their ``cause``.
PAST_END_CODES = frozenset({RMQ_CQ_PAST_END, RMQ_IDX_PAST_END})


def valid_end_cause(findings: Iterable[Finding], bases: Mapping[str, int], commitlog_end: int) -> Finding | None:
    """The CommitLog finding that ends the valid data at commitlog offset ``commitlog_end`` (upstream
    ``CommitLog.recoverNormally`` stops there): among the findings about a CommitLog file (damage,
    not an info-level note such as RMQ-CL-VALID-END) whose commitlog offset (the file's base plus
    the finding's position) is at or after ``commitlog_end``, the first; ``bases`` maps each
    CommitLog file's path to its base.  None when no damage is there (the data ends cleanly).
    Structural: positions only."""
    best: tuple[int, Finding] | None = None
    for finding in findings:
        base = bases.get(finding.path)
        if base is None or finding.position is None or finding.cause is not None or finding.level == Severity.info:
            continue
        at = base + finding.position
        if at < commitlog_end:
            continue
        if best is None or at < best[0]:
            best = (at, finding)
    return best[1] if best is not None else None


def link_knock_on(finding: Finding, end_cause: Finding | None) -> Finding:
    """``finding`` linked to ``end_cause`` (``valid_end_cause``) when it is a knock-on of it: a
    unit or entry pointing past the CommitLog's valid end (``PAST_END_CODES``).  Any other finding,
    or a past-end one with no damage at the end, is returned as it is (its own root)."""
    if end_cause is not None and finding.cause is None and finding.code in PAST_END_CODES:
        return finding.caused_by(end_cause)
    return finding
