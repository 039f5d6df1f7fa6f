"""RocketMQ store root: detection, segment lists, random access to records, and the CommitLog rules.

A store root holds ``commitlog/``, ``consumequeue/<topic>/<queueId>/``, ``index/``, ``checkpoint``,
``abort``, ``lock`` and ``config/`` (``StorePathConfigHelper``).  Segment files are named by the 20-digit offset
of their first byte; the CommitLog file size is detected from the files (the most common size
among non-empty files) unless the caller gives it.

The rules a reading of a CommitLog file applies live here -- where a piece ends
(``piece_goes_on``), a torn tail (``torn_tail_at``, ``torn_record_tail``), a record served
despite its body CRC (``framed_record``), where the newest file's data ends at a record
(``data_ends_at``: a torn record, a stale copy), where a reading resynchronises
(``clean_at``, ``find_next_record``) and a broken record's finding code -- and the one reading
that applies them is the store model's walk (``store.model.commitlog_walk``); nothing here reads
a CommitLog file in pieces but ``find_next_record``'s search for the next record.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mqtool.errors import CorruptDataError, MqError, StoreLayoutError, TruncatedDataError
from mqtool.findings.code_ids import RMQ_CL_BODY_CRC, RMQ_CL_ENCODING, RMQ_CL_MAGIC, RMQ_CL_SIZE, RMQ_CL_TRUNCATED
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import (
    BLANK_MAGIC,
    MESSAGE_MAGICS,
    MIN_MESSAGE_SIZE,
    SYSFLAG_POSITION,
    DataEnd,
    MessageRecord,
    body_length_position,
    body_position,
    decode_message,
    message_size,
    peek_body_length,
    peek_physical_offset,
    peek_properties_length,
    peek_record,
    peek_sys_flag,
    peek_topic_length,
    topic_length_size,
)
from mqtool.formats.rocketmq.properties import CRC32
from mqtool.store.files import CHUNK_SIZE, Readable, ReadOnlyFile, file_size, is_regular_file, nonzero_extent, safe_listdir
from mqtool.store.root_rocketmq import ROOT_MARKERS, find_rocketmq_root, is_rocketmq_path, is_rocketmq_root  # noqa: F401 (re-exported)

#: Largest record mqtool will read (maxMessageSize is 4 MiB by default; the broker allows
#: body + 64 KiB).  Anything bigger is a corrupt length field, never an allocation.
MAX_RECORD_SIZE = 64 << 20

DEFAULT_COMMITLOG_FILE_SIZE = 1 << 30
DEFAULT_CQ_FILE_SIZE = 6_000_000


@dataclass(frozen=True)
class Segment:
    """One segment file: its path, the offset in its name, and its size on disk."""

    path: Path
    base: int
    size: int
    mtime: float

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class RocketMQStore:
    root: Path
    commitlog_dir: Path
    commitlog: list[Segment]
    commitlog_file_size: int | None
    consumequeue_dir: Path
    index_dir: Path
    config_dir: Path
    unexpected: list[Path] = field(default_factory=list)

    @property
    def checkpoint_path(self) -> Path:
        return self.root / "checkpoint"

    @property
    def abort_path(self) -> Path:
        return self.root / "abort"

    @property
    def lock_path(self) -> Path:
        return self.root / "lock"

    @property
    def has_abort(self) -> bool:
        return self.abort_path.exists()

    @property
    def commitlog_min_offset(self) -> int:
        return self.commitlog[0].base if self.commitlog else 0

    def queues(self) -> list[tuple[str, int]]:
        """``(topic, queue_id)`` for every ConsumeQueue directory (non-numeric ids skipped).  Topic
        and queue directories that are symbolic links are never followed (see
        ``irregular_queue_dirs``)."""
        found = []
        for topic in safe_listdir(self.consumequeue_dir):
            tdir = self.consumequeue_dir / topic
            if not is_real_directory(tdir):
                continue
            for qid in safe_listdir(tdir):
                if qid.lstrip("-").isdigit() and is_real_directory(tdir / qid):
                    found.append((topic, int(qid)))
        return found

    def irregular_queue_dirs(self) -> list[tuple[Path, str]]:
        """Entries of ``consumequeue/`` standing where a topic directory, or a numeric queue
        directory, would be that are symbolic links or special files: ``(path, kind)``.  None of
        them is followed or opened."""
        found = []
        for topic in safe_listdir(self.consumequeue_dir):
            tdir = self.consumequeue_dir / topic
            kind = entry_kind(tdir)
            if kind == "a directory":
                for qid in safe_listdir(tdir):
                    if qid.lstrip("-").isdigit():
                        qkind = entry_kind(tdir / qid)
                        if qkind not in (None, "a directory", "a regular file"):
                            found.append((tdir / qid, qkind))
            elif kind not in (None, "a regular file"):
                found.append((tdir, kind))
        return found

    def cq_segments(self, topic: str, queue_id: int) -> list[Segment]:
        """The ConsumeQueue files of ``topic``/``queue_id`` (none when the topic, read from a
        record or a config file, cannot name a directory: see ``is_topic_dir_name``, or when the
        topic or queue directory is a symbolic link: never followed)."""
        if not is_topic_dir_name(topic):
            return []
        tdir = self.consumequeue_dir / topic
        qdir = tdir / str(queue_id)
        if not (is_real_directory(tdir) and is_real_directory(qdir)):
            return []
        return list_segments(qdir)

    def index_files(self) -> list[Path]:
        """The regular files of ``index/``.  Symbolic links (wherever they lead) and special
        files (FIFOs, devices) are never read or opened: see ``irregular_index_files``."""
        return list_index_files(self.index_dir)

    def irregular_index_files(self) -> list[tuple[Path, str]]:
        """Entries of ``index/`` that are not regular files: ``(path, kind)``, none followed."""
        return irregular_entries(self.index_dir)

    def config_file(self, name: str) -> Path | None:
        path = self.config_dir / name
        return path if is_regular_file(path) else None

    def commitlog_segment_for(self, commitlog_offset: int) -> tuple[Segment, int] | None:
        """The CommitLog file holding ``commitlog_offset`` and the position inside it."""
        for seg in reversed(self.commitlog):
            if seg.base <= commitlog_offset:
                pos = commitlog_offset - seg.base
                if pos < max(seg.size, 1):
                    return seg, pos
                return None
        return None


def list_segments(directory: Path) -> list[Segment]:
    """Regular files named by 20-digit offsets, sorted by offset.  Symbolic links and other
    non-regular entries are never read as segments (see ``irregular_segments``)."""
    segments = []
    for name in safe_listdir(directory):
        if not segnames.ROCKETMQ_FILE_NAME.match(name):
            continue
        path = directory / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        segments.append(Segment(path, int(name), st.st_size, st.st_mtime))
    segments.sort(key=lambda s: s.base)
    return segments


def irregular_segments(directory: Path) -> list[tuple[Path, str]]:
    """Entries with segment names that are not regular files: ``(path, "a symlink" | kind)``."""
    return irregular_entries(directory, segnames.ROCKETMQ_FILE_NAME)


def entry_kind(path: Path) -> str | None:
    """What ``path`` itself is, a link not followed (``lstat``; nothing is opened): ``"a regular
    file"``, ``"a directory"``, ``"a symlink"``, ``"a FIFO"``, ``"a device file"``, ``"a socket"``,
    or None when it does not exist (any more)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device file"


def is_real_directory(path: Path) -> bool:
    """A directory, and not a symbolic link to one."""
    return entry_kind(path) == "a directory"


def irregular_entries(directory: Path, pattern: re.Pattern[str] | None = None) -> list[tuple[Path, str]]:
    """Entries of ``directory`` (with names matching ``pattern``) that are not regular files:
    ``(path, kind)`` as ``entry_kind`` says; none is followed or opened."""
    found = []
    for name in safe_listdir(directory):
        if pattern is not None and not pattern.match(name):
            continue
        kind = entry_kind(directory / name)
        if kind not in (None, "a regular file"):
            found.append((directory / name, kind))
    return found


def list_index_files(directory: Path) -> list[Path]:
    """The regular files of an ``index/`` directory, by name; symbolic links and special files
    are never read (see ``irregular_entries``)."""
    return [directory / n for n in safe_listdir(directory) if entry_kind(directory / n) == "a regular file"]


def unexpected_entries(directory: Path) -> list[Path]:
    return [directory / n for n in safe_listdir(directory) if not segnames.ROCKETMQ_FILE_NAME.match(n)]


def detect_file_size(segments: list[Segment]) -> int | None:
    sizes = Counter(s.size for s in segments if s.size > 0)
    if not sizes:
        return None
    return sizes.most_common(1)[0][0]


@dataclass(frozen=True)
class TimerPaths:
    """Where a store root keeps its timer files (``TimerMessageStore.getTimerWheelPath`` and
    ``getTimerLogPath``, ``BrokerPathConfigHelper.getTimerCheckPath`` and ``getTimerMetricsPath``)."""

    root: Path

    @property
    def wheel(self) -> Path:
        return self.root / "timerwheel"

    @property
    def timerlog_dir(self) -> Path:
        return self.root / "timerlog"

    @property
    def checkpoint(self) -> Path:
        return self.root / "config" / "timercheck"

    @property
    def metrics(self) -> Path:
        return self.root / "config" / "timermetrics"

    def present(self) -> bool:
        """Whether the store has any timer file (a 4.x store has none)."""
        return any(p.exists() for p in (self.wheel, self.timerlog_dir, self.checkpoint, self.metrics))


def open_store(path: str | Path, *, commitlog_file_size: int | None = None) -> RocketMQStore:
    """Open a RocketMQ store root (read-only); ``StoreLayoutError`` if it is not one."""
    root = Path(path)
    if not root.exists():
        raise StoreLayoutError("no such file or directory", path=root)
    if not is_rocketmq_root(root):
        raise StoreLayoutError(
            expected="a RocketMQ store root (commitlog/, consumequeue/, index/, checkpoint, config/)",
            found="none of them",
            path=root,
        )
    # consumequeue/ may be a RocksDB ConsumeQueue (5.2+, storeType=defaultRocksDB): its files stand
    # beside any topic directories; store.rocksdb_cq reads them
    cl_dir = root / "commitlog"
    segments = list_segments(cl_dir)
    size = commitlog_file_size or detect_file_size(segments)
    return RocketMQStore(
        root=root,
        commitlog_dir=cl_dir,
        commitlog=segments,
        commitlog_file_size=size,
        consumequeue_dir=root / "consumequeue",
        index_dir=root / "index",
        config_dir=root / "config",
        unexpected=unexpected_entries(cl_dir),
    )


# --- the rules of a CommitLog reading, and random access -----------------------------------------


#: Bytes of a record a CommitLog walk needs in hand to judge where it stands: TOTALSIZE and MAGICCODE.
JUDGED_HEADER = 8


def piece_goes_on(kind: str, position: int, piece_len: int, more: bool) -> bool:
    """Whether a walk over one piece of a CommitLog file (``piece_len`` bytes, more of the file
    after it when ``more``) stopped at ``position`` only because the piece ended, so the reading
    goes on from ``position`` with the next piece: a record cut by the piece (``partial``), the
    piece's end between records (``eof``), and any stop fewer than ``JUDGED_HEADER`` bytes before
    the piece's end -- a header cut there reads as ``zeros`` (TOTALSIZE's high bytes are zeros)
    or as an ``anomaly`` (its low bytes), and is neither.  The one rule of every CommitLog walk."""
    return more and (kind in ("partial", "eof") or piece_len - position < JUDGED_HEADER)


def framed_record(data: bytes, pos: int, exc: MqError) -> MessageRecord | None:
    """The record at ``pos`` of ``data`` that failed with ``exc``, when only its body CRC is
    wrong: its frame (TOTALSIZE, MAGICCODE, every length) decodes, so the next record is where
    the frame says.  None for any other damage (the frame itself is broken).  The broker serves
    such a record (``CommitLog.recoverNormally`` reads on after it)."""
    if exc.kind != "crc":
        return None
    try:
        return decode_message(data, pos, check_crc=False)
    except MqError:
        return None


def has_record_findings(record: MessageRecord, address: int) -> bool:
    """Whether validate has something to say about a record that decodes at commitlog offset
    ``address`` (``model.record_findings``): a PHYSICALOFFSET that is not ``address``, property
    segments the broker drops, a ``__CRC32#`` property to check."""
    return record.physical_offset != address or bool(record.dropped_properties) or CRC32 in record.properties


def data_ends_at(f: ReadOnlyFile, at: int, record: MessageRecord, last_byte: int, file_size: int, base: int | None) -> DataEnd | None:
    """A record at ``at`` of the newest file that decodes but is where its data ends, as validate
    ends it: a torn tail (its last bytes zeros, ``torn_record_tail``: kind ``torn``, ``length`` its
    TOTALSIZE, ``unit`` the :class:`TornTail`) or, knowing the file's ``base``, a stale copy
    (``is_stale_copy``: kind ``stale``); None for a record of the data."""
    if not last_byte:
        torn = torn_record_tail(f, at, record, 0, file_size)
        if torn is not None:
            return DataEnd("torn", at, torn.total, unit=torn)
    if base is not None and record.physical_offset != base + at and is_stale_copy(f, base, at, record, file_size):
        return DataEnd("stale", at)
    return None


def is_stale_copy(f: ReadOnlyFile, base: int, at: int, rec: MessageRecord, file_size: int) -> bool:
    """The record at ``at`` of the file named ``base`` (which says another PHYSICALOFFSET) is a
    byte-for-byte copy of the record at the offset it says, and no record at its own place
    follows it: stale data (left after a truncation, or copied here), not a damaged
    PHYSICALOFFSET."""
    claimed = rec.physical_offset
    if not 0 <= claimed < base + at or not file_size:
        return False
    source = f.path.with_name(segnames.rocketmq_file_name(claimed - claimed % file_size))
    try:
        with ReadOnlyFile(source) as g:
            original = g.pread(claimed % file_size, rec.total_size)
    except MqError:
        return False
    return original == f.pread(at, rec.total_size) and find_next_record(f, base, at + 1) is None


def read_record_at(f: ReadOnlyFile, position: int, *, check_crc: bool = True, max_record_size: int = MAX_RECORD_SIZE, size_hint: int = 4096) -> MessageRecord:
    """Decode the single record at ``position`` of an open CommitLog file (one read when the
    record fits ``size_hint``)."""
    try:
        data = f.pread(position, max(8, min(size_hint, max_record_size)))
        total, _magic = peek_record(data, 0)
        if total > max_record_size:
            raise CorruptDataError(position=0, expected=f"TOTALSIZE at most {max_record_size}", found=str(total))
        if total > len(data):
            data = f.pread(position, total)
        return decode_message(data, 0, check_crc=check_crc)
    except MqError as exc:
        raise exc.at(f.path, position) from None


class CommitLogReader:
    """Random access to records by commitlog offset, keeping the last file open."""

    def __init__(self, store: RocketMQStore, *, check_crc: bool = True) -> None:
        self.store = store
        self.check_crc = check_crc
        self._open: tuple[Path, ReadOnlyFile] | None = None

    def _file(self, seg: Segment) -> ReadOnlyFile:
        if self._open is None or self._open[0] != seg.path:
            self.close()
            self._open = (seg.path, ReadOnlyFile(seg.path))
        return self._open[1]

    def read(self, commitlog_offset: int, size_hint: int = 4096) -> MessageRecord:
        found = self.store.commitlog_segment_for(commitlog_offset)
        if found is None:
            raise StoreLayoutError(
                expected=f"a commitlog offset inside the CommitLog [{self.store.commitlog_min_offset}, {commitlog_end(self.store)})",
                found=str(commitlog_offset),
                path=self.store.commitlog_dir,
            )
        seg, pos = found
        return read_record_at(self._file(seg), pos, check_crc=self.check_crc, size_hint=size_hint)

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def __enter__(self) -> CommitLogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def commitlog_end(store: RocketMQStore) -> int:
    """Upper bound of the CommitLog address space (last file base + its size)."""
    if not store.commitlog:
        return 0
    last = store.commitlog[-1]
    return last.base + last.size


def is_topic_dir_name(topic: str) -> bool:
    """Whether ``topic`` can be one directory name under ``consumequeue/``.  Topics come from
    CommitLog records and config files, i.e. from bytes that may be damaged: a name with a
    slash or NUL, ``.``/``..``, or longer than a file name may be (255 bytes) never maps to a
    path, so it can neither escape the store nor turn into an OS error."""
    if not topic or topic in (".", "..") or "/" in topic or "\0" in topic:
        return False
    return len(topic.encode("utf-8", "surrogateescape")) <= 255


def queue_dir(store: RocketMQStore, topic: str, queue_id: int) -> Path:
    """The directory of a ConsumeQueue (for reading or reporting; anything that creates it
    checks ``is_topic_dir_name`` first)."""
    return store.consumequeue_dir / topic / str(queue_id)


def segment_size_or_zero(path: Path) -> int:
    return file_size(path) if path.exists() else 0


# --- ConsumeQueue access ----------------------------------------------------------------------


def common_cq_file_size(segments: Iterable[Segment]) -> int | None:
    """The ConsumeQueue file size the files show: the most common size among the non-empty
    files that hold whole 20-byte units (None when no file does).

    ``mappedFileSizeConsumeQueue`` is one broker-wide setting and the broker creates every
    ConsumeQueue file at that full size (the mapping extends it), so pass the files of *every*
    queue: a queue whose only file is short is then told apart from a small configured size.
    On a tie the larger size wins: damage cuts files short, it does not grow them."""
    sizes = Counter(s.size for s in segments if s.size > 0 and s.size % cqf.CQ_UNIT_SIZE == 0)
    if not sizes:
        return None
    return max(sizes, key=lambda size: (sizes[size], size))


def detect_cq_file_size(segments: Iterable[Segment]) -> int:
    """``common_cq_file_size``, else the 6,000,000-byte upstream default."""
    return common_cq_file_size(segments) or DEFAULT_CQ_FILE_SIZE


@dataclass(frozen=True)
class QueueUnit:
    """A ConsumeQueue unit with where it is and which queue offset it stands for."""

    segment: Segment
    position: int
    queue_offset: int
    unit: cqf.CqUnit


@dataclass
class QueueWalk:
    """Every valid unit of one queue, file by file; ``ends`` keeps each file's end."""

    segments: list[Segment]
    start_queue_offset: int = 0
    ends: list[tuple[Segment, cqf.QueueDataEnd]] = field(default_factory=list)

    def __iter__(self) -> Iterator[QueueUnit]:
        for seg in self.segments:
            if seg.size == 0:
                continue
            first_qoff = seg.base // cqf.CQ_UNIT_SIZE
            last_qoff = (seg.base + seg.size) // cqf.CQ_UNIT_SIZE
            if last_qoff <= self.start_queue_offset:
                continue
            with ReadOnlyFile(seg.path) as f:
                data = f.read_all()
            start = max(0, (self.start_queue_offset - first_qoff) * cqf.CQ_UNIT_SIZE)
            walker = cqf.CqWalker(data, min(start, len(data) - len(data) % cqf.CQ_UNIT_SIZE))
            for pos, unit in walker:
                yield QueueUnit(seg, pos, cqf.cq_queue_offset(seg.base, pos), unit)
            assert walker.end is not None
            self.ends.append((seg, walker.end))
            if walker.end.kind != "eof":
                return


def last_cq_unit(seg: Segment) -> cqf.CqUnit | None:
    """The unit at ``fileSize - 20`` of a ConsumeQueue file (what upstream
    ``MappedFileQueue.deleteExpiredFileByOffset`` reads of each file); None when the file holds
    none or it cannot be read."""
    if seg.size < cqf.CQ_UNIT_SIZE:
        return None
    try:
        with ReadOnlyFile(seg.path) as f:
            return cqf.decode_cq_unit(f.pread(seg.size - cqf.CQ_UNIT_SIZE, cqf.CQ_UNIT_SIZE))
    except MqError:
        return None


def read_cq_unit(store: RocketMQStore, topic: str, queue_id: int, queue_offset: int) -> QueueUnit | None:
    """The unit for ``queue_offset`` (None when the queue has no such unit or it is not valid)."""
    segments = store.cq_segments(topic, queue_id)
    if not segments or queue_offset < 0:
        return None
    byte_offset = queue_offset * cqf.CQ_UNIT_SIZE
    for seg in reversed(segments):
        if seg.base <= byte_offset:
            pos = byte_offset - seg.base
            if pos + cqf.CQ_UNIT_SIZE > seg.size:
                return None
            with ReadOnlyFile(seg.path) as f:
                unit = cqf.decode_cq_unit(f.pread(pos, cqf.CQ_UNIT_SIZE))
            return QueueUnit(seg, pos, queue_offset, unit) if unit.is_valid else None
    return None


@dataclass(frozen=True)
class QueueRange:
    min_offset: int  # first queue offset with a real (non-filler) unit
    max_offset: int  # one past the last valid unit (the broker's maxOffset)
    max_physic_offset: int | None  # offset + size of the last valid unit


def queue_range(store: RocketMQStore, topic: str, queue_id: int) -> QueueRange:
    """Cheap min/max: the first file's first real unit, and the last file's valid end."""
    segments = [s for s in store.cq_segments(topic, queue_id) if s.size > 0]
    if not segments:
        return QueueRange(0, 0, None)
    min_offset = None
    with ReadOnlyFile(segments[0].path) as f:
        for pos, unit in cqf.CqWalker(f.read_all()):
            if not unit.is_filler:
                min_offset = cqf.cq_queue_offset(segments[0].base, pos)
                break
    max_offset, max_phys = segments[0].base // cqf.CQ_UNIT_SIZE, None
    for seg in reversed(segments):
        with ReadOnlyFile(seg.path) as f:
            walker = cqf.CqWalker(f.read_all())
        walker.scan()
        assert walker.end is not None
        if walker.count or seg is segments[0]:
            max_offset = cqf.cq_queue_offset(seg.base, walker.end.position)
            max_phys = walker.max_physic_offset
            break
    if min_offset is None:
        min_offset = max_offset
    return QueueRange(min_offset, max_offset, max_phys)


# --- IndexFile access ---------------------------------------------------------------------------


class IndexFileView:
    """An IndexFile mapped read-only (``ACCESS_READ``), with its geometry and header.

    The geometry (``maxHashSlotNum``/``maxIndexNum``, which ``IndexHeader`` does not record) is
    read from the file's own bytes by ``detect_index_geometry`` -- the one place validate,
    query, dump, info, clean and recover get it from; explicit values win.

    IndexFiles are up to 420 MB and lookups touch a few entries, so they are mapped rather than
    read.  The broker never truncates an IndexFile (it deletes whole files, which keeps an open
    mapping valid), so the mapping cannot fault under us.
    """

    def __init__(self, path: Path, *, hash_slot_num: int | None = None, index_num: int | None = None) -> None:
        self.path = Path(path)
        self._file = ReadOnlyFile(path)
        try:
            head = self._file.pread(0, idxf.INDEX_HEADER_SIZE)
            try:
                self.header = idxf.decode_index_header(head)
                self.geometry = idxf.detect_index_geometry(self._file.pread, self._file.size, hash_slot_num=hash_slot_num, index_num=index_num)
            except MqError as exc:
                raise exc.at(self.path) from None
            assert self._file._fd is not None
            #: The mapping; None once closed.
            self.buf: mmap.mmap | None = mmap.mmap(self._file._fd, self._file.size, access=mmap.ACCESS_READ)
        except BaseException:
            self._file.close()
            raise

    @property
    def size(self) -> int:
        return self._file.size

    def release(self, start: int, stop: int) -> None:
        """Drop the mapped pages of ``[start, stop)`` from memory (they are read back from the
        file if touched again): a pass over millions of entries keeps a bounded resident set."""
        page = mmap.PAGESIZE
        first = start - start % page
        if self.buf is not None and stop > first and hasattr(mmap, "MADV_DONTNEED"):
            self.buf.madvise(mmap.MADV_DONTNEED, first, min(stop, self.size) - first)

    def close(self) -> None:
        buf = getattr(self, "buf", None)
        if buf is not None:
            buf.close()
            self.buf = None
        self._file.close()

    def __enter__(self) -> IndexFileView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- scanning helpers shared by validate and recover --------------------------------------------


#: Magic codes a torn record header may hold the first bytes of.
TORN_MAGICS = tuple(m.to_bytes(4, "big") for m in (*MESSAGE_MAGICS, BLANK_MAGIC))


@dataclass(frozen=True)
class TornTail:
    """A record at ``position`` of the last CommitLog file that a crash cut short: ``total``
    bytes were due (its TOTALSIZE, or the header bytes present), non-zero data stops at
    ``stop``; ``what`` says so in words."""

    position: int
    total: int
    stop: int
    what: str
    #: ``nonzero_extent`` from ``position`` as the judgement read it (None: only zeros), for a
    #: reader judging the same bytes next (a recover plan's cut)
    extent: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    @property
    def reason(self) -> str:
        """The RMQ-CL-TORN-TAIL finding's text."""
        return f"torn tail: {self.what} (crash while writing); `mqtool recover` truncates it"

    def damaged(self, base: int) -> tuple[int, int]:
        """The commitlog offsets ``[from, to)`` the torn record would have covered (in a file
        named ``base``): units and index entries pointing there are not reported again."""
        return base + self.position, base + self.position + max(self.total, self.stop - self.position, 1)


def past_the_end_error(f: Readable, pos: int, total: int) -> CorruptDataError:
    """The error of a record at ``pos`` whose TOTALSIZE (``total``, or its 8-byte header) does
    not fit the file: the broker never writes a record past the end of a file
    (``CommitLog.DefaultAppendMessageCallback.doAppend`` writes END_OF_FILE instead), so unless it
    is a torn tail (``torn_tail_at``) its TOTALSIZE is damaged."""
    rest = f.size - pos
    if rest < 8:
        return TruncatedDataError(path=f.path, position=pos, expected="an 8-byte record header", found=f"{rest} bytes before the end of the file")
    if total > MAX_RECORD_SIZE:
        return CorruptDataError(path=f.path, position=pos, expected=f"TOTALSIZE at most {MAX_RECORD_SIZE} (the largest record)", found=str(total), kind="size")
    return CorruptDataError(path=f.path, position=pos, expected=f"TOTALSIZE at most {rest} (the rest of the file)", found=str(total), kind="size")


def torn_tail_at(f: Readable, bad: int, file_size: int, tails: dict[int, tuple[int, int] | None] | None = None) -> TornTail | None:
    """Whether the record that fails at ``bad`` in the *last* CommitLog file is a torn tail: its
    bytes stop early and only zeros follow (a crash while writing), not damage.  A record whose
    last byte is on disk (non-zero) was written whole, so its damage is not a torn write; nor is a
    TOTALSIZE the broker never writes (past ``file_size``), nor a record whose length fields
    describe bytes that are all there (TOTALSIZE itself is damaged).  Reads ``[bad, size)``;
    ``tails``: the non-zero extents after positions judged already (``nonzero_extent``), the one
    from ``bad`` taken from there or noted there."""
    head = f.pread(bad, 8)
    if tails is not None and bad in tails:
        extent = tails[bad]
    else:
        extent = nonzero_extent(f, bad)
        if tails is not None:
            tails[bad] = extent
    stop = extent[1] if extent else bad
    if len(head) == 8:
        total, _magic = peek_record(head)
        if total <= 0:
            return None
        if head[4:8] in TORN_MAGICS[:-1]:
            if stop >= bad + total or bad + total > file_size:
                return None
            computed = computed_record_size(f, bad)
            if computed is not None and computed != total and stop >= bad + computed:
                return None
        elif stop > bad + 8 or not any(head[4:8] == m[:k] + bytes(4 - k) for m in TORN_MAGICS for k in range(4)):
            return None
        what = f"a {total}-byte record starts here but only {stop - bad} of its bytes were written"
    else:
        total = len(head)
        what = f"{len(head)} bytes of a record header at the end of the file"
    return TornTail(bad, total, stop, what, extent)


def torn_record_tail(f: Readable, pos: int, record: MessageRecord, last_byte: int, file_size: int) -> TornTail | None:
    """Whether a record of the *last* CommitLog file that decodes at ``pos`` is a torn tail all
    the same: its properties always end with 0x02, so a zero ``last_byte`` (the record's last byte,
    from the caller's buffer: no read on the healthy path) with properties present is a record
    whose tail was never written; it is torn when only zeros follow (``torn_tail_at``), as for a
    record that does not decode.  ``CommitLog.checkMessageAndReturnSize`` upstream accepts such a
    record (it only checks the body CRC); every mqtool reading ends the data before it."""
    if last_byte or not (record.properties or record.dropped_properties):
        return None
    return torn_tail_at(f, pos, file_size)


def record_starts_at(f: Readable, base: int, pos: int, *, decode: bool = True) -> bool:
    """A message record with PHYSICALOFFSET ``base + pos`` starts at ``pos`` (its header fits the
    file) and, with ``decode``, decodes cleanly."""
    head = f.pread(pos, 36)
    if len(head) < 36:
        return False
    total, magic = peek_record(head)
    if magic not in MESSAGE_MAGICS:
        return False
    if peek_physical_offset(head) != base + pos:
        return False
    if not 0 < total <= min(f.size - pos, MAX_RECORD_SIZE):
        return False
    if decode:
        try:
            decode_message(f.pread(pos, total), 0)
        except MqError:
            return False
    return True


def clean_at(f: Readable, base: int, pos: int) -> bool:
    """A walk of the CommitLog file named ``base`` can go on at ``pos`` after a broken record:
    the end of the file, zeros, END_OF_FILE (BLANK), or the header of a record at its own
    PHYSICALOFFSET (``record_starts_at`` without decoding: if that record is broken too, the
    walk reports it next).  ``CommitLog.checkMessageAndReturnSize`` upstream stops at the first
    broken record; this is where mqtool's walks resume to report the rest."""
    if pos == f.size:
        return True
    head = f.pread(pos, 8)
    if len(head) == 8:
        if peek_record(head)[1] == BLANK_MAGIC or head == bytes(8):
            return True
    elif not head.strip(b"\x00"):
        return True
    return record_starts_at(f, base, pos, decode=False)


def find_next_record(f: ReadOnlyFile, base: int, start: int, stop: int | None = None) -> int | None:
    """First position >= ``start`` where a record with a message magic and a PHYSICALOFFSET equal
    to its own address (``base`` + position) decodes cleanly: the resynchronisation point after a
    broken record (the earliest candidate, whichever magic it has).  ``stop``: only zeros lie at or
    after it (``nonzero_extent``'s end), where no record starts: the search reads no further."""
    pos = start
    overlap = 64
    end = f.size if stop is None else min(f.size, stop + overlap)
    while pos < end:
        chunk = f.pread(pos, min(CHUNK_SIZE + overlap, end - pos))
        candidates = []
        for magic in MESSAGE_MAGICS:
            pattern = magic.to_bytes(4, "big")
            i = chunk.find(pattern, 4)
            while i != -1:
                if pos + i - 4 >= start:
                    candidates.append(pos + i - 4)
                i = chunk.find(pattern, i + 1)
        for candidate in sorted(candidates):
            if record_starts_at(f, base, candidate):
                return candidate
        if len(chunk) <= overlap:
            break
        pos += len(chunk) - overlap
    return None


class ListedFile(Protocol):
    """A file of a directory listing: a local :class:`Segment`, or a Spark source's entry."""

    @property
    def path(self) -> str | Path: ...

    @property
    def size(self) -> int: ...


def last_data_index(segments: Sequence[ListedFile], open_file: Callable[[Any], AbstractContextManager[Readable]] | None = None) -> int:
    """Index of the last CommitLog file whose first record header is not zeros (-1: none): the
    active file; files after it are pre-allocated.  ``open_file`` opens a segment's ``path``
    (default: a local :class:`ReadOnlyFile`; the Spark sources pass their file system's)."""
    opener: Callable[[Any], AbstractContextManager[Readable]] = open_file or ReadOnlyFile
    for i in range(len(segments) - 1, -1, -1):
        seg = segments[i]
        if seg.size == 0:
            continue
        try:
            with opener(seg.path) as f:
                if f.pread(0, 8).strip(b"\x00"):
                    return i
        except MqError:
            return i
    return -1


def blank_at(f: Readable, position: int) -> bool:
    """Whether an END_OF_FILE record (MAGICCODE ``BLANK_MAGIC``) starts at ``position`` of ``f``."""
    head = f.pread(position, JUDGED_HEADER)
    return len(head) == JUDGED_HEADER and peek_record(head)[1] == BLANK_MAGIC


# --- classifying a broken record (validate and the Spark pipeline) ---------------------------


#: The finding code of a broken CommitLog record, by the ``kind`` of its error
#: (``mqtool.errors.KINDS``); any other kind is a length field that does not fit: RMQ-CL-SIZE.
RECORD_CODES: dict[str | None, str] = {
    "crc": RMQ_CL_BODY_CRC,
    "truncated": RMQ_CL_TRUNCATED,
    "magic": RMQ_CL_MAGIC,
    "encoding": RMQ_CL_ENCODING,
    "size": RMQ_CL_SIZE,
}


def broken_record_code(exc: MqError) -> str:
    """The validate code of a record that ``decode_message`` (``CommitLog.checkMessageAndReturnSize``
    upstream) rejected, from what its error says broke -- never from its wording."""
    return RECORD_CODES.get(exc.kind, RMQ_CL_SIZE)


def active_file_index(segments: list[Segment]) -> int | None:
    """Index of the file the broker was writing: the last one whose first record header is not
    zeros (the broker pre-allocates the next file, all zeros, before it needs it; every file's
    first record starts at position 0).  None when no file holds a record."""
    for i in range(len(segments) - 1, -1, -1):
        seg = segments[i]
        if seg.size == 0:
            continue
        with ReadOnlyFile(seg.path) as f:
            if f.pread(0, 8).strip(b"\x00"):
                return i
    return None


def computed_record_size(f: Readable, pos: int) -> int | None:
    """``calMsgLength`` of the record at ``pos`` from its SYSFLAG, BODYLEN, TOPICLEN and PROPLEN
    (None when those fields cannot be read or make no sense)."""
    head = f.pread(pos, 8 + SYSFLAG_POSITION)
    if len(head) < SYSFLAG_POSITION + 4:
        return None
    _total, magic = peek_record(head)
    sys_flag = peek_sys_flag(head)
    body_at = pos + body_position(sys_flag)
    raw = f.pread(pos + body_length_position(sys_flag), 4)
    if len(raw) < 4:
        return None
    body_len = peek_body_length(raw)
    if not 0 <= body_len <= MAX_RECORD_SIZE:
        return None
    topic_len_size = topic_length_size(magic)
    raw = f.pread(body_at + body_len, topic_len_size)
    if len(raw) < topic_len_size:
        return None
    topic_len = peek_topic_length(raw, 0, magic)
    raw = f.pread(body_at + body_len + topic_len_size + topic_len, 2) if topic_len >= 0 else b""
    if len(raw) < 2:
        return None
    prop_len = peek_properties_length(raw)
    if prop_len < 0:
        return None
    return message_size(body_len, topic_len, prop_len, sys_flag=sys_flag, magic_code=magic)


def classify_broken_record(f: Readable, bad: int, exc: MqError) -> tuple[str, MqError, set[int]]:
    """Code and error for the record that failed at ``bad``, and the sizes it may span (its
    TOTALSIZE and the size its length fields give).  A record that decodes once TOTALSIZE is
    replaced by the computed size has exactly one damaged field: TOTALSIZE (RMQ-CL-SIZE)."""
    head = f.pread(bad, 8)
    total = peek_record(head)[0] if len(head) == 8 else 0
    computed = computed_record_size(f, bad)
    frames = {n for n in (total, computed) if n is not None and MIN_MESSAGE_SIZE <= n <= min(f.size - bad, MAX_RECORD_SIZE)}
    code = broken_record_code(exc)
    if code == RMQ_CL_TRUNCATED and computed in frames and computed != total:
        fixed = bytearray(f.pread(bad, computed))
        fixed[:4] = computed.to_bytes(4, "big")
        try:
            decode_message(fixed, 0)
        except MqError:
            pass
        else:
            sized = CorruptDataError(
                path=f.path,
                position=bad,
                expected=f"TOTALSIZE {computed} (from its BODYLEN, TOPICLEN and PROPLEN)",
                found=str(total),
                kind="size",
            )
            return RMQ_CL_SIZE, sized, frames
    return code, exc, frames
