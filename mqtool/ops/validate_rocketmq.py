"""validate for RocketMQ store roots (spec §3.1, §3.2, §4, §5, §6).

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
5. checkpoint vs the newest records, ``abort``, consumer offsets vs queue ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import ChecksumError, MqError, StoreIOError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import config as cfgf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import (
    MESSAGE_MAGICS,
    SYSFLAG_TRANSACTION_MASK,
    SYSFLAG_TRANSACTION_PREPARED,
    SYSFLAG_TRANSACTION_ROLLBACK,
    MessageRecord,
    RecordWalker,
    check_crc_property,
    decode_message,
)
from mqtool.formats.rocketmq.hashing import index_key_hash
from mqtool.formats.rocketmq.properties import CRC32, split_keys
from mqtool.ops.findings import Finding
from mqtool.ops.validate import FileSummary, ValidateOptions, ValidationReport, run_tasks
from mqtool.store import rocketmq as rmq
from mqtool.store.files import CHUNK_SIZE, ReadOnlyFile, read_small_file
from mqtool.store.writer import cq_tags_code

# --- phase 1: files ------------------------------------------------------------------------------


def _check_segments(
    directory: Path, segments: list[rmq.Segment], file_size: int | None, family: str, report: ValidationReport
) -> None:
    for path in rmq.unexpected_entries(directory):
        if path.name.startswith(".mqtool"):
            continue
        report.add(Finding("RMQ-FILE-NAME", str(path), None, f"unexpected entry in a {family} directory: {path.name!r}"))
    if not segments or not file_size:
        return
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        if seg.size == 0:
            where = "the last file" if i == last else "a file before the last one"
            report.add(
                Finding(
                    "RMQ-FILE-ZERO-LENGTH",
                    str(seg.path),
                    0,
                    f"zero-length {family} file ({where}); RocketMQ 4.x refuses to start, 5.1.3+ deletes a zero-length last file",
                )
            )
        elif seg.size != file_size:
            report.add(
                Finding(
                    "RMQ-FILE-SIZE",
                    str(seg.path),
                    min(seg.size, file_size),
                    f"expected {file_size} bytes (the {family} file size), found {seg.size}",
                    length=abs(seg.size - file_size),
                )
            )
        if seg.base % file_size:
            report.add(Finding("RMQ-FILE-ALIGN", str(seg.path), None, f"expected a name that is a multiple of {file_size}, found {seg.base}"))
        if i:
            prev = segments[i - 1]
            expected = prev.base + file_size
            if seg.base > expected:
                missing = (seg.base - expected) // file_size
                report.add(
                    Finding(
                        "RMQ-FILE-GAP",
                        str(seg.path),
                        None,
                        f"expected the file after {prev.name} to be {expected:020d}, found {seg.name} "
                        f"({missing or 'part of a'} file(s) missing: offsets {expected}..{seg.base - 1})",
                        length=seg.base - expected,
                    )
                )
            elif seg.base < expected:
                report.add(
                    Finding(
                        "RMQ-FILE-OVERLAP",
                        str(seg.path),
                        None,
                        f"expected the file after {prev.name} to be {expected:020d}, found {seg.name} (overlaps by {expected - seg.base} bytes)",
                        length=expected - seg.base,
                    )
                )


# --- phase 2: CommitLog files --------------------------------------------------------------------


@dataclass
class QueueEdge:
    first: int
    last: int
    count: int


@dataclass
class CommitLogFileResult:
    path: str
    base: int
    size: int
    records: int = 0
    valid_end: int = 0  # file position where valid data ends
    findings: list[Finding] = field(default_factory=list)
    queues: dict[tuple[str, int], QueueEdge] = field(default_factory=dict)
    max_store_timestamp: int = 0
    last_store_timestamp: int = 0
    bytes_read: int = 0


@dataclass(frozen=True)
class CommitLogTask:
    path: str
    base: int
    file_size: int
    is_last: bool  # the last file holding data: ends in zeros, not END_OF_FILE
    check_properties: bool = True


def _error_code(exc: MqError) -> str:
    if isinstance(exc, ChecksumError):
        return "RMQ-CL-BODY-CRC"
    if isinstance(exc, TruncatedDataError):
        return "RMQ-CL-TRUNCATED"
    text = str(exc)
    if "magic" in text:
        return "RMQ-CL-MAGIC"
    if "UTF-8" in text:
        return "RMQ-CL-ENCODING"
    return "RMQ-CL-SIZE"


def _find_next_record(f: ReadOnlyFile, base: int, start: int) -> int | None:
    """First position >= ``start`` where a record with a message magic and a PHYSICALOFFSET equal
    to its own address decodes cleanly (the resynchronisation after a broken record)."""
    pos = start
    overlap = 64
    while pos < f.size:
        chunk = f.pread(pos, CHUNK_SIZE + overlap)
        for magic in MESSAGE_MAGICS:
            pattern = magic.to_bytes(4, "big")
            i = chunk.find(pattern, 4)
            while i != -1:
                candidate = pos + i - 4
                if candidate >= start:
                    try:
                        head = f.pread(candidate, 36)
                        if len(head) == 36 and int.from_bytes(head[28:36], "big", signed=True) == base + candidate:
                            total = int.from_bytes(head[0:4], "big", signed=True)
                            if 0 < total <= f.size - candidate:
                                decode_message(f.pread(candidate, total), 0)
                                return candidate
                    except MqError:
                        pass
                i = chunk.find(pattern, i + 1)
        if len(chunk) <= overlap:
            break
        pos += len(chunk) - overlap
    return None


def _nonzero_extent(f: ReadOnlyFile, start: int) -> tuple[int, int] | None:
    """(first, last+1) of the non-zero bytes in ``[start, size)``, or None when all zero."""
    first = last = None
    pos = start
    while pos < f.size:
        data = f.pread(pos, CHUNK_SIZE)
        stripped = data.lstrip(b"\x00")
        if stripped:
            if first is None:
                first = pos + len(data) - len(stripped)
            last = pos + len(data.rstrip(b"\x00"))
        pos += len(data)
    return (first, last) if first is not None else None


def validate_commitlog_file(task: CommitLogTask) -> CommitLogFileResult:
    """Every record of one CommitLog file and how the file ends.  Never raises on data."""
    res = CommitLogFileResult(task.path, task.base, 0)
    try:
        f = ReadOnlyFile(task.path)
    except MqError as exc:
        res.findings.append(Finding("RMQ-FILE-UNREADABLE", task.path, None, str(exc)))
        return res
    with f:
        res.size = f.size
        try:
            _walk_commitlog_file(f, task, res)
        except StoreIOError as exc:
            res.findings.append(Finding("RMQ-FILE-UNREADABLE", task.path, exc.position, str(exc)))
    return res


def _walk_commitlog_file(f: ReadOnlyFile, task: CommitLogTask, res: CommitLogFileResult) -> None:
    path = task.path
    base = task.base
    queues = res.queues
    pos = 0
    want = CHUNK_SIZE
    end = None
    while True:
        data = f.pread(pos, want)
        want = CHUNK_SIZE
        res.bytes_read += len(data)
        walker = RecordWalker(data, 0, check_crc=True)
        try:
            for p, rec in walker:
                _check_record(rec, base, pos + p, path, res, task.check_properties, data, p)
                q = rec.sys_flag & SYSFLAG_TRANSACTION_MASK
                if q != SYSFLAG_TRANSACTION_PREPARED and q != SYSFLAG_TRANSACTION_ROLLBACK:
                    key = (rec.topic, rec.queue_id)
                    edge = queues.get(key)
                    if edge is None:
                        queues[key] = QueueEdge(rec.queue_offset, rec.queue_offset, 1)
                    else:
                        if rec.queue_offset != edge.last + 1:
                            res.findings.append(
                                Finding(
                                    "RMQ-CL-QUEUE-OFFSET",
                                    path,
                                    pos + p + 20,
                                    f"{rec.topic}/{rec.queue_id}: expected QUEUEOFFSET {edge.last + 1} after {edge.last}, found {rec.queue_offset}",
                                )
                            )
                        edge.last = rec.queue_offset
                        edge.count += 1
                res.records += 1
                if rec.store_timestamp > res.max_store_timestamp:
                    res.max_store_timestamp = rec.store_timestamp
                res.last_store_timestamp = rec.store_timestamp
        except MqError as exc:
            bad = pos + (walker.failed_at or 0)
            res.valid_end = bad
            located = exc.at(path, pos)
            if not _torn_tail(f, task, bad, res):
                res.findings.append(Finding(_error_code(exc), path, located.position, _message(located)))
                nxt = _find_next_record(f, base, bad + 1)
                if nxt is None:
                    extent = _nonzero_extent(f, bad)
                    stop = extent[1] if extent else bad
                    res.findings.append(
                        Finding(
                            "RMQ-CL-UNREADABLE-REGION",
                            path,
                            bad,
                            f"no valid record after the broken one: {stop - bad} bytes up to position {stop} cannot be read",
                            length=stop - bad,
                        )
                    )
                    return
                res.findings.append(
                    Finding(
                        "RMQ-CL-UNREADABLE-REGION",
                        path,
                        bad,
                        f"{nxt - bad} bytes between the broken record and the next valid record at {nxt} were skipped",
                        length=nxt - bad,
                    )
                )
                pos = nxt
                continue
            return
        end = walker.end
        assert end is not None
        if end.kind in ("partial", "eof") and pos + len(data) < f.size:
            if end.kind == "partial" and end.position == 0:
                if end.length > rmq.MAX_RECORD_SIZE:
                    res.valid_end = pos
                    res.findings.append(
                        Finding("RMQ-CL-SIZE", path, pos, f"expected TOTALSIZE at most {rmq.MAX_RECORD_SIZE}, found {end.length}")
                    )
                    return
                want = max(end.length, CHUNK_SIZE)
            pos += end.position
            continue
        break
    end_pos = pos + end.position
    res.valid_end = end_pos
    if end.kind == "blank":
        _check_blank(f, task, end_pos, end.length, res)
        return
    if not task.is_last:
        res.findings.append(
            Finding(
                "RMQ-CL-NO-BLANK",
                path,
                end_pos,
                f"expected END_OF_FILE (BLANK) record at the end of a file before the last, found "
                f"{'zeros' if end.kind == 'zeros' else 'the end of the file' if end.kind == 'eof' else 'a partial record'}: "
                "the broker's recovery stops here and drops every later file",
            )
        )
        return
    if end.kind == "partial":
        if not _torn_tail(f, task, end_pos, res):
            res.findings.append(Finding("RMQ-CL-GARBAGE", path, end_pos, "a partial record followed by other data", length=f.size - end_pos))
        return
    if end.kind == "zeros":
        extent = _nonzero_extent(f, end_pos)
        if extent is not None:
            first, stop = extent
            res.findings.append(
                Finding(
                    "RMQ-CL-GARBAGE",
                    path,
                    first,
                    f"expected zeros after the end of valid data at {end_pos}, found {stop - first} bytes of other data "
                    f"(from {first} to {stop}); stale data left by a truncation, or damage",
                    length=stop - first,
                )
            )
    res.findings.append(
        Finding("RMQ-CL-VALID-END", path, end_pos, f"valid data ends at commitlog offset {base + end_pos} ({end.kind} follow)")
    )


def _message(exc: MqError) -> str:
    parts = []
    if exc.message:
        parts.append(exc.message)
    if exc.expected is not None or exc.found is not None:
        parts.append(f"expected {exc.expected}, found {exc.found}")
    return ": ".join(parts)


def _torn_tail(f: ReadOnlyFile, task: CommitLogTask, bad: int, res: CommitLogFileResult) -> bool:
    """In the last file, a record that breaks off followed only by zeros is a torn tail (a crash
    while writing), not damage: report it as such.  Returns True when it was one."""
    if not task.is_last:
        return False
    head = f.pread(bad, 8)
    if len(head) < 8:
        res.findings.append(
            Finding("RMQ-CL-TORN-TAIL", task.path, bad, f"torn tail: {len(head)} bytes of a record header at the end of the file", length=len(head))
        )
        return True
    total = int.from_bytes(head[:4], "big", signed=True)
    magic = int.from_bytes(head[4:8], "big")
    if magic not in MESSAGE_MAGICS:
        return False
    if total <= 0:
        return False
    record_end = min(bad + total, f.size)
    if _nonzero_extent(f, record_end) is not None:
        return False
    extent = _nonzero_extent(f, bad)
    stop = extent[1] if extent else bad
    res.findings.append(
        Finding(
            "RMQ-CL-TORN-TAIL",
            task.path,
            bad,
            f"torn tail: a {total}-byte record starts here but only {stop - bad} of its bytes were written "
            f"(crash while writing); `mqtool recover` truncates it",
            length=stop - bad,
        )
    )
    return True


def _check_blank(f: ReadOnlyFile, task: CommitLogTask, pos: int, total: int, res: CommitLogFileResult) -> None:
    rest = f.size - pos
    if total != rest:
        res.findings.append(
            Finding(
                "RMQ-CL-BLANK",
                task.path,
                pos,
                f"expected END_OF_FILE TOTALSIZE {rest} (the rest of the file), found {total}",
            )
        )
    if task.is_last:
        res.findings.append(Finding("RMQ-CL-VALID-END", task.path, pos, f"valid data ends at commitlog offset {task.base + pos} (END_OF_FILE)"))
    extent = _nonzero_extent(f, pos + 8)
    if extent is not None:
        first, stop = extent
        res.findings.append(
            Finding(
                "RMQ-CL-AFTER-BLANK",
                task.path,
                first,
                f"{stop - first} non-zero bytes after the END_OF_FILE header; never read by the broker "
                "(4.x writes the whole blank from its reused encode buffer, 5.x only the 8-byte header)",
                length=stop - first,
            )
        )


def _check_record(rec: MessageRecord, base: int, pos: int, path: str, res: CommitLogFileResult, check_props: bool, data: bytes, p: int) -> None:
    if rec.physical_offset != base + pos:
        res.findings.append(
            Finding(
                "RMQ-CL-PHYS-OFFSET",
                path,
                pos + 28,
                f"expected PHYSICALOFFSET {base + pos} (the record's position), found {rec.physical_offset}",
            )
        )
    if not check_props:
        return
    if rec.dropped_properties:
        res.findings.append(
            Finding(
                "RMQ-CL-PROPERTIES",
                path,
                pos,
                f"expected name\\x01value\\x02 property segments, found {len(rec.dropped_properties)} the broker drops: "
                + ", ".join(repr(s) for s in rec.dropped_properties[:3]),
            )
        )
    if CRC32 in rec.properties:
        try:
            checked = check_crc_property(memoryview(data)[p : p + rec.total_size])
        except MqError as exc:
            res.findings.append(Finding("RMQ-CL-PROP-CRC", path, pos + rec.total_size - 11, _message(exc)))
            return
        if checked is not None and checked[0] != checked[1]:
            res.findings.append(
                Finding(
                    "RMQ-CL-PROP-CRC",
                    path,
                    pos + rec.total_size - 11,
                    f"expected __CRC32# {checked[1]} (CRC of the record's first {rec.total_size - 20} bytes), found {checked[0]}",
                )
            )


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


@dataclass
class QueueResult:
    topic: str
    queue_id: int
    findings: list[Finding] = field(default_factory=list)
    files: list[tuple[str, int, int, int]] = field(default_factory=list)  # path, size, units, valid_bytes
    min_offset: int = 0
    max_offset: int = 0
    expired: int = 0


def validate_queue(task: QueueTask) -> QueueResult:
    res = QueueResult(task.topic, task.queue_id)
    store = rmq.open_store(task.root, commitlog_file_size=task.commitlog_file_size)
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
                res.findings.append(Finding("RMQ-FILE-UNREADABLE", str(seg.path), None, str(exc)))
                continue
            if ended_at is not None:
                if data.strip(b"\x00"):
                    res.findings.append(
                        Finding(
                            "RMQ-CQ-AFTER-END",
                            str(seg.path),
                            0,
                            f"units after the end of the queue at {ended_at[0]}:{ended_at[1]} (the broker drops them)",
                        )
                    )
                res.files.append((str(seg.path), seg.size, 0, 0))
                continue
            walker = cqf.CqWalker(data)
            units = 0
            for pos, unit in walker:
                units += 1
                qoff = cqf.cq_queue_offset(seg.base, pos)
                if unit.is_filler:
                    continue
                if first_real is None:
                    first_real = qoff
                _check_unit(task, reader, ext, str(seg.path), pos, qoff, unit, res)
            end = walker.end
            assert end is not None
            res.files.append((str(seg.path), seg.size, units, end.position))
            max_offset = cqf.cq_queue_offset(seg.base, end.position)
            if end.kind == "eof":
                continue
            ended_at = (str(seg.path), end.position)
            if end.kind == "invalid":
                res.findings.append(
                    Finding(
                        "RMQ-CQ-INVALID-UNIT",
                        str(seg.path),
                        end.position,
                        f"expected a unit with offset >= 0 and size > 0 or zeros, found {end.unit}; the queue ends here",
                    )
                )
            elif end.kind == "partial":
                res.findings.append(Finding("RMQ-CQ-PARTIAL-UNIT", str(seg.path), end.position, f"{end.length} trailing bytes", length=end.length))
            rest = data[end.position + cqf.CQ_UNIT_SIZE :] if end.kind == "invalid" else data[end.position :]
            if end.kind != "partial" and rest.strip(b"\x00"):
                first_nz = len(rest) - len(rest.lstrip(b"\x00"))
                start = end.position + (cqf.CQ_UNIT_SIZE if end.kind == "invalid" else 0) + first_nz
                res.findings.append(
                    Finding(
                        "RMQ-CQ-AFTER-END",
                        str(seg.path),
                        start,
                        f"non-zero units after the end of the queue at {end.position} (the broker drops them)",
                    )
                )
    if ext is not None:
        ext.close()
    if res.expired:
        res.findings.append(
            Finding(
                "RMQ-CQ-EXPIRED",
                str(qdir),
                None,
                f"{res.expired} unit(s) point below the CommitLog's first file ({task.commitlog_min}): expired by retention",
            )
        )
    res.min_offset = first_real if first_real is not None else max_offset
    res.max_offset = max_offset
    cl_max = task.max_queue_offset_in_commitlog
    if cl_max is not None and cl_max + 1 > max_offset:
        res.findings.append(
            Finding(
                "RMQ-CQ-LAG",
                str(qdir),
                None,
                f"{task.topic}/{task.queue_id}: expected the queue to reach offset {cl_max + 1} (the CommitLog holds records up to "
                f"queue offset {cl_max}), found max offset {max_offset}: {cl_max + 1 - max_offset} record(s) not dispatched",
                details={"missing_units": cl_max + 1 - max_offset},
            )
        )
    return res


def _check_unit(
    task: QueueTask, reader: rmq.CommitLogReader, ext: "_ExtReader | None", path: str, pos: int, qoff: int, unit: cqf.CqUnit, res: QueueResult
) -> None:
    off = unit.commit_log_offset
    if off < task.commitlog_min:
        res.expired += 1
        return
    if off >= task.commitlog_end:
        res.findings.append(
            Finding(
                "RMQ-CQ-PAST-END",
                path,
                pos,
                f"queue offset {qoff}: expected a commitlog offset below {task.commitlog_end} (end of valid CommitLog data), found {off}",
            )
        )
        return
    try:
        rec = reader.read(off, size_hint=unit.size if 0 < unit.size <= rmq.MAX_RECORD_SIZE else 4096)
    except MqError as exc:
        res.findings.append(
            Finding("RMQ-CQ-NOT-A-RECORD", path, pos, f"queue offset {qoff}: commitlog offset {off} is not the start of a valid record ({exc})")
        )
        return
    if rec.physical_offset != off:
        res.findings.append(
            Finding(
                "RMQ-CQ-NOT-A-RECORD",
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
        res.findings.append(
            Finding("RMQ-CQ-MISMATCH", path, pos, f"unit at queue offset {qoff} -> commitlog offset {off}: " + "; ".join(problems))
        )
        return
    expected_tags = cq_tags_code(rec)
    tags = unit.tags_code
    if cqf.is_ext_address(tags):
        if ext is None:
            return
        ext_unit = ext.read(cqf.undecorate_ext_address(tags))
        if ext_unit is None:
            res.findings.append(Finding("RMQ-CQ-TAGS", path, pos + 12, f"queue offset {qoff}: ConsumeQueueExt address {tags} points at no ext unit"))
            return
        tags = ext_unit.tags_code
    if tags != expected_tags:
        what = "delivery time (store time + delay level)" if rec.topic == "SCHEDULE_TOPIC_XXXX" else f"TAGS {rec.tags!r} hash"
        res.findings.append(
            Finding("RMQ-CQ-TAGS", path, pos + 12, f"queue offset {qoff}: expected tagsCode {expected_tags} ({what}), found {tags}")
        )


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
        res.findings.append(Finding("RMQ-IDX-GEOMETRY", task.path, None, f"{_message(exc)} (pass --index-hash-slots/--index-num)"))
        return res
    except MqError as exc:
        res.findings.append(Finding("RMQ-IDX-GEOMETRY", task.path, exc.position, _message(exc)))
        return res
    store = rmq.open_store(task.root, commitlog_file_size=task.commitlog_file_size)
    with view, rmq.CommitLogReader(store, check_crc=False) as reader:
        res.size = view.size
        res.end_timestamp = view.header.end_timestamp
        written = min(view.header.effective_index_count, view.geometry.index_num)
        res.entries = max(written - 1, 0)
        if task.structure:
            _check_index_structure(view, task, res)
        _check_index_entries(view, task, reader, res)
    return res


def index_entry_count(path: Path, hash_slot_num: int | None, index_num: int | None) -> int:
    """Used entries of an IndexFile (0 when its header cannot be read)."""
    try:
        with rmq.IndexFileView(path, hash_slot_num=hash_slot_num, index_num=index_num) as view:
            return max(min(view.header.effective_index_count, view.geometry.index_num) - 1, 0)
    except MqError:
        return 0


def _check_index_structure(view: rmq.IndexFileView, task: IndexTask, res: IndexResult) -> None:
    buf = view.buf
    geo = view.geometry
    header = view.header
    slots = geo.hash_slot_num
    written = min(header.effective_index_count, geo.index_num)
    path = task.path
    if header.index_count > geo.index_num:
        res.findings.append(
            Finding("RMQ-IDX-HEADER", path, idxf.INDEX_COUNT_POSITION, f"expected indexCount <= {geo.index_num}, found {header.index_count}")
        )
    # slots: in range, and the entry they name belongs to them
    reached = bytearray(written)
    used_slots = 0
    for slot, value in idxf.iter_used_slots(buf, slots):
        used_slots += 1
        if not 0 < value < written:
            res.findings.append(
                Finding("RMQ-IDX-CHAIN", path, geo.slot_position(slot), f"slot {slot}: expected an entry number in 1..{written - 1}, found {value}")
            )
            continue
        number = value
        steps = 0
        while number and steps < written:
            if reached[number]:
                res.findings.append(
                    Finding("RMQ-IDX-CHAIN", path, geo.entry_position(number), f"entry #{number} is reached from two chains (slot {slot})")
                )
                break
            reached[number] = 1
            entry = idxf.decode_index_entry(buf, geo.entry_position(number))
            if entry.key_hash % slots != slot:
                res.findings.append(
                    Finding(
                        "RMQ-IDX-SLOT",
                        path,
                        geo.entry_position(number),
                        f"entry #{number} in the chain of slot {slot}: expected a key hash with hash % {slots} == {slot}, found {entry.key_hash}",
                    )
                )
            prev = entry.prev_index
            if prev and not 0 < prev < number:
                res.findings.append(
                    Finding(
                        "RMQ-IDX-CHAIN",
                        path,
                        geo.entry_position(number) + 16,
                        f"entry #{number}: expected prevIndex 0 or an older entry 1..{number - 1}, found {prev}"
                        + (" (a cycle)" if prev >= number else ""),
                    )
                )
                break
            number = prev
            steps += 1
    if used_slots != header.hash_slot_count:
        res.findings.append(
            Finding(
                "RMQ-IDX-HEADER",
                path,
                idxf.HASH_SLOT_COUNT_POSITION,
                f"expected hashSlotCount {used_slots} (slots in use), found {header.hash_slot_count}",
            )
        )
    unreached = [n for n in range(1, written) if not reached[n]]
    if unreached:
        res.findings.append(
            Finding(
                "RMQ-IDX-CHAIN",
                path,
                geo.entry_position(unreached[0]),
                f"{len(unreached)} entr{'y is' if len(unreached) == 1 else 'ies are'} reachable from no slot (first: #{unreached[0]})",
            )
        )
    if written > 1:
        first = idxf.decode_index_entry(buf, geo.entry_position(1))
        last = idxf.decode_index_entry(buf, geo.entry_position(written - 1))
        if header.end_phy_offset != last.phy_offset:
            res.findings.append(
                Finding("RMQ-IDX-HEADER", path, 24, f"expected endPhyOffset {last.phy_offset} (the last entry's), found {header.end_phy_offset}")
            )
        if header.begin_phy_offset != first.phy_offset:
            res.findings.append(
                Finding("RMQ-IDX-HEADER", path, 16, f"expected beginPhyOffset {first.phy_offset} (the first entry's), found {header.begin_phy_offset}")
            )
        if header.end_timestamp < header.begin_timestamp:
            res.findings.append(
                Finding("RMQ-IDX-HEADER", path, 8, f"expected endTimestamp >= beginTimestamp {header.begin_timestamp}, found {header.end_timestamp}")
            )
        else:
            max_ts = max(
                (header.begin_timestamp + e.time_diff * 1000 for _, e in idxf.iter_entries(buf, slots, geo.index_num) if e.time_diff >= 0),
                default=0,
            )
            if max_ts > header.end_timestamp + 999:
                res.findings.append(
                    Finding("RMQ-IDX-HEADER", path, 8, f"expected endTimestamp >= the newest entry's time {max_ts}, found {header.end_timestamp}")
                )


def _check_index_entries(view: rmq.IndexFileView, task: IndexTask, reader: rmq.CommitLogReader, res: IndexResult) -> None:
    """Every entry (of the task's range) against the record it points at."""
    buf = view.buf
    geo = view.geometry
    path = task.path
    written = min(view.header.effective_index_count, geo.index_num)
    first, stop = task.entries if task.entries is not None else (1, written)
    stop = min(stop, written)
    expired = 0
    cached: tuple[int, set[int] | None] | None = None
    for number in range(first, stop):
        pos = geo.entry_position(number)
        entry = idxf.decode_index_entry(buf, pos)
        off = entry.phy_offset
        if off < task.commitlog_min:
            expired += 1
            continue
        if off >= task.commitlog_end:
            res.findings.append(
                Finding("RMQ-IDX-PAST-END", path, pos, f"entry #{number}: expected a commitlog offset below {task.commitlog_end}, found {off}")
            )
            continue
        if cached is None or cached[0] != off:
            try:
                rec = reader.read(off)
                hashes = None if rec.physical_offset != off else _index_hashes(rec)
            except MqError:
                hashes = None
            cached = (off, hashes)
        hashes = cached[1]
        if hashes is None:
            res.findings.append(Finding("RMQ-IDX-ENTRY", path, pos, f"entry #{number}: commitlog offset {off} is not the start of a valid record"))
        elif entry.key_hash not in hashes:
            res.findings.append(
                Finding(
                    "RMQ-IDX-ENTRY",
                    path,
                    pos,
                    f"entry #{number}: the record at commitlog offset {off} has no key hashing to {entry.key_hash} (its keys hash to {sorted(hashes)})",
                )
            )
    if expired:
        res.findings.append(Finding("RMQ-IDX-EXPIRED", path, None, f"{expired} entr{'y points' if expired == 1 else 'ies point'} below the CommitLog's first file"))


def _index_hashes(rec: MessageRecord) -> set[int]:
    keys = []
    if rec.uniq_key:
        keys.append(f"{rec.topic}#{rec.uniq_key}")
    keys.extend(f"{rec.topic}#{k}" for k in split_keys(rec.properties))
    return {index_key_hash(k) for k in keys}


# --- the run ----------------------------------------------------------------------------------------


def _last_data_index(segments: list[rmq.Segment]) -> int:
    """Index of the last CommitLog file whose first record header is not zeros (-1: none)."""
    for i in range(len(segments) - 1, -1, -1):
        seg = segments[i]
        if seg.size == 0:
            continue
        try:
            with ReadOnlyFile(seg.path) as f:
                if f.pread(0, 8).strip(b"\x00"):
                    return i
        except MqError:
            return i
    return -1


def validate_rocketmq(path: str | Path, options: ValidateOptions, progress=None) -> ValidationReport:
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    report = ValidationReport("rocketmq", str(store.root), options)
    advance = progress or (lambda n: None)
    segments = store.commitlog
    file_size = store.commitlog_file_size
    report.facts["commitlog_file_size"] = file_size

    # phase 1: files
    _check_segments(store.commitlog_dir, segments, file_size, "commitlog", report)
    queues = store.queues()
    cq_sizes: dict[tuple[str, int], int] = {}
    all_cq_segments = []
    for topic, qid in queues:
        segs = store.cq_segments(topic, qid)
        all_cq_segments.extend(segs)
        cq_sizes[(topic, qid)] = options.cq_file_size or rmq.detect_cq_file_size(segs)
    for topic, qid in queues:
        _check_segments(rmq.queue_dir(store, topic, qid), store.cq_segments(topic, qid), cq_sizes[(topic, qid)], "consumequeue", report)

    # phase 2: CommitLog
    last = _last_data_index(segments)
    tasks = [
        CommitLogTask(str(seg.path), seg.base, file_size or seg.size, i == last)
        for i, seg in enumerate(segments)
        if seg.size > 0 and i <= max(last, 0)
    ]
    summaries: dict[str, FileSummary] = {}
    queue_edges: dict[tuple[str, int], QueueEdge] = {}
    commitlog_end = store.commitlog_min_offset
    max_store_ts = 0
    prev_file_result: CommitLogFileResult | None = None
    for res in run_tasks(validate_commitlog_file, tasks, options.jobs):
        summary = FileSummary(res.path, "commitlog", res.size, res.records, res.valid_end)
        summaries[res.path] = summary
        report.files.append(summary)
        for finding in res.findings:
            report.add(finding, summary)
        for key, edge in res.queues.items():
            prev = queue_edges.get(key)
            if prev is None:
                queue_edges[key] = QueueEdge(edge.first, edge.last, edge.count)
            else:
                if edge.first != prev.last + 1:
                    report.add(
                        Finding(
                            "RMQ-CL-QUEUE-OFFSET",
                            res.path,
                            None,
                            f"{key[0]}/{key[1]}: expected the file's first QUEUEOFFSET {prev.last + 1} (after {prev.last} in "
                            f"{Path(prev_file_result.path).name if prev_file_result else 'an earlier file'}), found {edge.first}",
                        ),
                        summary,
                    )
                prev.last = edge.last
                prev.count += edge.count
        commitlog_end = res.base + res.valid_end
        max_store_ts = max(max_store_ts, res.max_store_timestamp)
        report.bytes_checked += res.size
        advance(res.size)
        prev_file_result = res
    for i, seg in enumerate(segments):
        if i > max(last, 0) and seg.size > 0:
            summary = FileSummary(str(seg.path), "commitlog", seg.size, 0, 0)
            report.files.append(summary)
            extent = None
            with ReadOnlyFile(seg.path) as f:
                extent = _nonzero_extent(f, 0)
            if extent is not None:
                report.add(
                    Finding("RMQ-CL-GARBAGE", str(seg.path), extent[0], "non-zero bytes in a file after the last file holding records", length=extent[1] - extent[0]),
                    summary,
                )
    report.facts["commitlog_min_offset"] = store.commitlog_min_offset
    report.facts["commitlog_valid_end"] = commitlog_end
    report.facts["max_store_timestamp"] = max_store_ts

    # phase 3: ConsumeQueues
    queue_ranges: dict[tuple[str, int], tuple[int, int]] = {}
    if queues and (options.wants("consumequeue") or options.wants("config")):
        ext_root = store.root / "consumequeue_ext"
        qtasks = [
            QueueTask(
                str(store.root),
                topic,
                qid,
                cq_sizes[(topic, qid)],
                file_size or 0,
                store.commitlog_min_offset,
                commitlog_end,
                queue_edges[(topic, qid)].last if (topic, qid) in queue_edges else None,
                str(ext_root / topic / str(qid)) if (ext_root / topic / str(qid)).is_dir() else None,
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
                report.add(finding, file_summaries.get(finding.path))
    if store.consumequeue_dir.is_dir():
        for (topic, qid), edge in sorted(queue_edges.items()):
            if (topic, qid) not in queue_ranges and (topic, qid) not in set(queues):
                report.add(
                    Finding(
                        "RMQ-CQ-MISSING-QUEUE",
                        str(rmq.queue_dir(store, topic, qid)),
                        None,
                        f"{edge.count} CommitLog record(s) of {topic}/{qid} (queue offsets {edge.first}..{edge.last}) have no ConsumeQueue directory",
                    )
                )

    # phase 4: IndexFiles
    index_end_ts = 0
    if options.wants("index"):
        itasks = []
        for p in store.index_files():
            count = index_entry_count(p, options.index_hash_slot_num, options.index_num)
            common = (str(store.root), str(p), file_size or 0, store.commitlog_min_offset, commitlog_end, options.index_hash_slot_num, options.index_num)
            parts = max(1, min(options.jobs * 2, count // 50_000)) if options.jobs > 1 else 1
            step = -(-count // parts) if count else 1
            for k in range(parts):
                itasks.append(IndexTask(*common, entries=(1 + k * step, 1 + (k + 1) * step) if parts > 1 else None, structure=k == 0))
        index_summaries: dict[str, FileSummary] = {}
        for ires in run_tasks(validate_index_file, itasks, options.jobs):
            s = index_summaries.get(ires.path)
            if s is None:
                s = index_summaries[ires.path] = FileSummary(ires.path, "index", ires.size, ires.entries, None)
                report.files.append(s)
            index_end_ts = max(index_end_ts, ires.end_timestamp)
            for finding in ires.findings:
                report.add(finding, s)

    # phase 5: checkpoint, abort, config
    _check_shutdown_state(store, report, max_store_ts, index_end_ts)
    _check_consumer_offsets(store, report, queue_ranges)
    return report


def _check_shutdown_state(store: rmq.RocketMQStore, report: ValidationReport, max_store_ts: int, index_end_ts: int) -> None:
    if store.has_abort:
        report.add(
            Finding(
                "RMQ-ABORT",
                str(store.abort_path),
                None,
                "the abort file is present: the broker did not shut down cleanly (or is running); it will recover abnormally at start",
            )
        )
    if not store.checkpoint_path.exists():
        return
    try:
        cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20))
    except MqError as exc:
        report.add(Finding("RMQ-CHECKPOINT-FORMAT", str(store.checkpoint_path), exc.position, _message(exc)))
        return
    report.facts["checkpoint"] = {
        "physic_msg_timestamp": cp.physic_msg_timestamp,
        "logics_msg_timestamp": cp.logics_msg_timestamp,
        "index_msg_timestamp": cp.index_msg_timestamp,
    }
    for name, value, pos in (
        ("physicMsgTimestamp", cp.physic_msg_timestamp, 0),
        ("logicsMsgTimestamp", cp.logics_msg_timestamp, 8),
    ):
        if value > max_store_ts and store.commitlog:
            report.add(
                Finding(
                    "RMQ-CHECKPOINT",
                    str(store.checkpoint_path),
                    pos,
                    f"expected {name} <= the newest record's store time {max_store_ts}, found {value}: records flushed before the "
                    "checkpoint was written are missing",
                )
            )
    if cp.index_msg_timestamp > max(index_end_ts, 0) and store.index_files():
        report.add(
            Finding(
                "RMQ-CHECKPOINT",
                str(store.checkpoint_path),
                16,
                f"expected indexMsgTimestamp <= the newest IndexFile end time {index_end_ts}, found {cp.index_msg_timestamp}",
            )
        )


def _check_consumer_offsets(store: rmq.RocketMQStore, report: ValidationReport, ranges: dict[tuple[str, int], tuple[int, int]]) -> None:
    path = store.config_file("consumerOffset.json")
    if path is None:
        return
    try:
        offsets = cfgf.parse_consumer_offsets(read_small_file(path, 256 << 20))
    except MqError as exc:
        report.add(Finding("RMQ-CONFIG-PARSE", str(path), exc.position, _message(exc)))
        return
    for (topic, group), table in sorted(offsets.items()):
        for qid, offset in sorted(table.items()):
            rng = ranges.get((topic, qid))
            if rng is None:
                if (topic, qid) not in set(store.queues()):
                    report.add(
                        Finding("RMQ-CONSUMER-UNKNOWN-QUEUE", str(path), None, f"group {group}: offset {offset} for {topic}/{qid}, which has no ConsumeQueue")
                    )
                continue
            low, high = rng
            if offset > high:
                report.add(
                    Finding(
                        "RMQ-CONSUMER-OFFSET",
                        str(path),
                        None,
                        f"group {group} on {topic}/{qid}: expected an offset in [{low}, {high}], found {offset} (ahead of the queue by {offset - high})",
                    )
                )
            elif offset < low:
                report.add(
                    Finding(
                        "RMQ-CONSUMER-BEHIND",
                        str(path),
                        None,
                        f"group {group} on {topic}/{qid}: offset {offset} is below the queue's min offset {low} ({low - offset} messages expired unconsumed)",
                    )
                )

