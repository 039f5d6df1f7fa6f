"""RocketMQ's compaction store (``compaction/``) in the store model: each queue's compaction log
and sparse consume queue read once, for every command, as located items and findings.

* The compaction log of a queue (``CompactionLog``'s ``MappedFileQueue``) is walked file by file
  with the CommitLog's own walker (``commitlog_walk.FileRecords``: the bytes are CommitLog
  records, ``formats.rocketmq.compaction``).  A record the broker's ``MessageDecoder`` refuses, or
  one cut by the end of its file, ends the file's valid data (``RMQ-COMPACTION-RECORD``); a record
  whose PHYSICALOFFSET is not its compaction-log offset, whose topic or queue is not its
  directory's, or whose QUEUEOFFSET does not grow is ``RMQ-COMPACTION-RECORD-FIELD``; bytes that
  are not zero after a file's valid data are ``RMQ-COMPACTION-GARBAGE``.  The files' names and
  sizes follow the CommitLog's rules (``store.model.rocketmq.segment_findings``).
* The sparse consume queue (``SparseConsumeQueue``) is read in pieces of whole 46-byte units; each
  file's units stop, as ``SparseConsumeQueue.recover`` stops, at the first invalid one: the end
  unit (``putEndPositionInfo``) or zeros end a file cleanly, anything else is
  ``RMQ-COMPACTION-CQ-UNIT`` (recovery drops it and every unit after it in the file).
* ``position-checkpoint`` is a config JSON file (``CompactionPositionMgr``).

What ties them together (units to records, the two file lists, the position) is checked by
``store.model.compaction_check`` from what this module reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import MqError, StoreLayoutError
from mqtool.findings import Finding
from mqtool.findings import code_ids as ids
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import compaction as cf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, check_path, is_directory, is_regular_file, piece_size, read_small_file, safe_listdir
from mqtool.store.model import rocketmq as model
from mqtool.store.model.commitlog_walk import FileRecords
from mqtool.store.root_rocketmq import is_rocketmq_root


@dataclass(frozen=True)
class CompactionPaths:
    """Where a store root keeps its compaction store (``CompactionStore``'s paths)."""

    root: Path

    @property
    def directory(self) -> Path:
        return self.root / cf.COMPACTION_DIR

    @property
    def log_dir(self) -> Path:
        return self.directory / cf.COMPACTION_LOG_DIR

    @property
    def cq_dir(self) -> Path:
        return self.directory / cf.COMPACTION_CQ_DIR

    @property
    def position(self) -> Path:
        return self.directory / cf.POSITION_FILE

    def present(self) -> bool:
        return is_directory(self.directory)

    def queue_log_dir(self, topic: str, queue_id: int) -> Path:
        return self.log_dir / topic / str(queue_id)

    def queue_cq_dir(self, topic: str, queue_id: int) -> Path:
        return self.cq_dir / topic / str(queue_id)


def _queue_dirs(parent: Path) -> set[tuple[str, int]]:
    """``<topic>/<queueId>`` directories under ``parent`` (``CompactionStore.load``'s walk)."""
    out: set[tuple[str, int]] = set()
    if not is_directory(parent):
        return out
    for topic in safe_listdir(parent):
        if not is_directory(parent / topic):
            continue
        for qid in safe_listdir(parent / topic):
            if qid.isdigit() and is_directory(parent / topic / qid):
                out.add((topic, int(qid)))
    return out


@dataclass(frozen=True)
class QueueDirs:
    """The queues of a compaction store: those with a compaction log, those with a sparse CQ."""

    logs: frozenset[tuple[str, int]]
    cqs: frozenset[tuple[str, int]]

    @property
    def all(self) -> list[tuple[str, int]]:
        return sorted(self.logs | self.cqs)


def queue_dirs(paths: CompactionPaths) -> QueueDirs:
    return QueueDirs(frozenset(_queue_dirs(paths.log_dir)), frozenset(_queue_dirs(paths.cq_dir)))


def in_progress_dirs(paths: CompactionPaths, topic: str, queue_id: int) -> list[Path]:
    """The ``compacting/`` and ``replicating/`` folders a queue holds (``TopicPartitionLog``)."""
    out = []
    for parent in (paths.queue_log_dir(topic, queue_id), paths.queue_cq_dir(topic, queue_id)):
        out += [parent / name for name in cf.IN_PROGRESS_DIRS if is_directory(parent / name)]
    return out


def compaction_root(path: Path) -> Path | None:
    """The store root of a path inside (or at) a compaction store, or None."""
    path = Path(path)
    return next((p for p in [path, *path.parents][:6] if is_rocketmq_root(p) and is_directory(p / cf.COMPACTION_DIR)), None)


def compaction_family(path: Path) -> str | None:
    """The ``dump`` family of a path inside a compaction store (``compactionlog`` under
    ``compactionLog/``, ``compactioncq`` under ``compactionCq/``), or None for another path: the
    other families name it instead of reading its records as their own."""
    parts = Path(path).parts
    for i, part in enumerate(parts[1:], start=1):
        if parts[i - 1] == cf.COMPACTION_DIR and part in (cf.COMPACTION_LOG_DIR, cf.COMPACTION_CQ_DIR):
            return "compactionlog" if part == cf.COMPACTION_LOG_DIR else "compactioncq"
    return None


def resolve(path: Path, want: str) -> tuple[Path, list[tuple[str, int, Path]]]:
    """The directories of ``want`` (``log`` or ``cq``) that PATH names: a store root, ``compaction/``,
    ``compactionLog/`` or ``compactionCq/``, a topic's or a queue's directory, or one file; as the
    store root and ``(topic, queue id, directory or file)`` in order."""
    path = Path(path)
    check_path(path)
    root = compaction_root(path)
    if root is None:
        raise StoreLayoutError(expected="a store root with a compaction/ directory, or a path inside compaction/", found="none", path=path)
    paths = CompactionPaths(root)
    family_dir = paths.log_dir if want == "log" else paths.cq_dir
    other_dir = paths.cq_dir if want == "log" else paths.log_dir
    if path == other_dir or other_dir in path.parents:
        other = "compactioncq" if want == "log" else "compactionlog"
        raise StoreLayoutError(expected=f"a path of {family_dir.name}/", found=f"one of {other_dir.name}/: read it with `mqtool dump {other}`", path=path)
    dirs = queue_dirs(paths)
    held = sorted(dirs.logs if want == "log" else dirs.cqs)
    if path in (root, paths.directory, family_dir):
        return root, [(t, q, family_dir / t / str(q)) for t, q in held]
    rel = path.relative_to(family_dir).parts
    if len(rel) == 1:
        return root, [(t, q, family_dir / t / str(q)) for t, q in held if t == rel[0]]
    if len(rel) >= 2 and rel[1].isdigit():
        topic, qid = rel[0], int(rel[1])
        if len(rel) == 2:
            return root, [(topic, qid, path)]
        if len(rel) == 3 and is_regular_file(path) and segnames.ROCKETMQ_FILE_NAME.match(path.name):
            return root, [(topic, qid, path)]
    raise StoreLayoutError(expected=f"a topic or queue directory of {family_dir.name}/ or one of its files", found=str(path.relative_to(root)), path=path)


def segments_of(target: Path) -> list[rmq.Segment]:
    """The files of a queue directory, or the one file ``target`` names."""
    if is_regular_file(target):
        st = target.stat()
        return [rmq.Segment(target, int(target.name), st.st_size, st.st_mtime)]
    return rmq.list_segments(target) if is_directory(target) else []


# --- the compaction log -----------------------------------------------------------------------


@dataclass(frozen=True)
class RecordAt:
    """A compaction-log record and where it is: its file, its position there, its compaction-log offset."""

    path: Path
    position: int
    offset: int
    record: MessageRecord


@dataclass
class LogWalk:
    """Every record of one queue's compaction-log files ``segments`` in order (``__iter__``), with
    the findings about them (``findings``) and, per file, where its valid data ends (``ends``:
    compaction-log offsets).  ``directory`` given: its files' names and sizes come first."""

    topic: str
    queue_id: int
    segments: list[rmq.Segment]
    directory: Path | None = None
    file_size: int | None = None
    findings: list[Finding] = field(default_factory=list)
    ends: dict[str, int] = field(default_factory=dict)
    records: int = 0

    def __post_init__(self) -> None:
        if self.file_size is None:
            self.file_size = rmq.detect_file_size(self.segments)

    def __iter__(self) -> Iterator[RecordAt]:
        if self.directory is not None:
            found = model.segment_findings(self.directory, self.segments, self.file_size, "compaction log")
            self.findings.extend(f for f in found if Path(f.path).name not in cf.IN_PROGRESS_DIRS)
        last_queue_offset: int | None = None
        for seg in self.segments:
            if seg.size == 0:
                continue
            with ReadOnlyFile(seg.path) as f:
                walk = FileRecords(f, check_crc=True, file_size=self.file_size)
                for pos, record in walk:
                    at = RecordAt(seg.path, pos, seg.base + pos, record)
                    problem = self._field_problem(at, last_queue_offset)
                    if problem is not None:
                        self.findings.append(Finding(ids.RMQ_COMPACTION_RECORD_FIELD, str(seg.path), pos, problem, length=record.total_size))
                    last_queue_offset = record.queue_offset
                    self.records += 1
                    yield at
                self._file_end(f, seg, walk)

    def _field_problem(self, at: RecordAt, last_queue_offset: int | None) -> str | None:
        r = at.record
        if r.physical_offset != at.offset:
            return f"expected PHYSICALOFFSET {at.offset} (the record's compaction-log offset, CompactionAppendMessageCallback), found {r.physical_offset}"
        if r.topic != self.topic or r.queue_id != self.queue_id:
            return f"expected a record of {self.topic}:{self.queue_id} (its directory), found one of {r.topic}:{r.queue_id}"
        if last_queue_offset is not None and r.queue_offset <= last_queue_offset:
            return f"expected a QUEUEOFFSET above the previous record's {last_queue_offset}, found {r.queue_offset}"
        return None

    def _file_end(self, f: ReadOnlyFile, seg: rmq.Segment, walk: FileRecords) -> None:
        path = str(seg.path)
        if walk.error is not None:
            at = walk.failed_at if walk.failed_at is not None else 0
            self.findings.append(Finding(ids.RMQ_COMPACTION_RECORD, path, at, f"{walk.error.reason}: the broker's MessageDecoder stops reading this file here"))
            self.ends[path] = seg.base + at
            return
        end = walk.end
        assert end is not None
        self.ends[path] = seg.base + end.position
        if end.kind == "partial":
            self.findings.append(
                Finding(
                    ids.RMQ_COMPACTION_RECORD,
                    path,
                    end.position,
                    f"expected a whole record, a BLANK or zeros, found a record of TOTALSIZE {end.length} cut by the end of the file at {f.size}",
                    length=f.size - end.position,
                )
            )
        elif end.kind == "blank" and end.length != f.size - end.position:
            self.findings.append(
                Finding(
                    ids.RMQ_COMPACTION_RECORD,
                    path,
                    end.position,
                    f"expected a BLANK record of the {f.size - end.position} bytes left in the file, found TOTALSIZE {end.length}",
                    length=8,
                )
            )
        elif end.kind == "zeros":
            garbage = model.zero_tail_finding(f, ids.RMQ_COMPACTION_GARBAGE, end.position, "the file's valid data")
            if garbage is not None:
                self.findings.append(garbage)


# --- the sparse consume queue ----------------------------------------------------------------


@dataclass(frozen=True)
class UnitAt:
    """A sparse-CQ unit, its file (named as the compaction-log file it indexes) and position."""

    path: Path
    base: int
    position: int
    unit: cqf.BcqUnit


@dataclass
class CqWalk:
    """Every valid unit of one queue's sparse-CQ files in order (``__iter__``) and the findings
    about them: a unit ``SparseConsumeQueue.recover`` stops at that is neither the end unit nor
    zeros, or one cut by the end of the file (``RMQ-COMPACTION-CQ-UNIT``)."""

    segments: list[rmq.Segment]
    findings: list[Finding] = field(default_factory=list)
    units: int = 0

    def __iter__(self) -> Iterator[UnitAt]:
        piece = max(piece_size() // cqf.BCQ_UNIT_SIZE, 2) * cqf.BCQ_UNIT_SIZE
        for seg in self.segments:
            if seg.size == 0:
                continue
            with ReadOnlyFile(seg.path) as f:
                offset = 0
                while offset < f.size:
                    data = f.pread(offset, piece)
                    walk = cqf.BcqWalker(data)
                    for pos, unit in walk:
                        self.units += 1
                        yield UnitAt(seg.path, seg.base, offset + pos, unit)
                    end = walk.end
                    assert end is not None
                    if end.kind == "eof":
                        offset += len(data)
                        continue
                    self._file_end(seg, offset + end.position, end, f.size)
                    break

    def _file_end(self, seg: rmq.Segment, at: int, end: cqf.QueueDataEnd, size: int) -> None:
        path = str(seg.path)
        if end.kind == "partial":
            found = f"{size - at} byte(s) cut by the end of the file"
        elif end.kind == "invalid" and isinstance(end.unit, cqf.BcqUnit) and not cf.is_end_unit(end.unit):
            u = end.unit
            found = f"offset {u.commitlog_offset}, size {u.size}, msgBaseOffset {u.msg_base_offset}, batchSize {u.batch_size}"
        else:
            return  # the end unit or zeros: the file's clean end
        self.findings.append(
            Finding(
                ids.RMQ_COMPACTION_CQ_UNIT,
                path,
                at,
                f"expected a sparse consume queue unit (offset >= 0, size > 0, msgBaseOffset >= 0, batchSize > 0), the end unit or zeros, found {found}: "
                "SparseConsumeQueue.recover drops it and every unit after it in the file",
                length=min(cqf.BCQ_UNIT_SIZE, size - at),
            )
        )


# --- position-checkpoint ----------------------------------------------------------------------


def read_positions(path: Path) -> list[cf.QueuePosition]:
    """``position-checkpoint`` decoded; its errors located in it."""
    try:
        return cf.parse_position_checkpoint(read_small_file(path, 64 << 20))
    except MqError as exc:
        raise exc.at(path) from None


__all__ = [
    "CompactionPaths",
    "QueueDirs",
    "queue_dirs",
    "in_progress_dirs",
    "compaction_root",
    "compaction_family",
    "resolve",
    "segments_of",
    "RecordAt",
    "LogWalk",
    "UnitAt",
    "CqWalk",
    "read_positions",
]
