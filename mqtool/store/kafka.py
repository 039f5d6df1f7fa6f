"""Kafka log dirs, partition dirs and segment files: detection, listing, bounded streaming reads.

A log dir (one entry of ``log.dirs``) holds ``meta.properties``, ``.lock``, the four offset
checkpoint files, ``.kafka_cleanshutdown`` after a clean shutdown, ``bootstrap.checkpoint`` on a
KRaft controller, and one directory per partition (``<topic>-<partition>``, or with a
``.<uuid>-delete|-future|-stray`` suffix).  A partition dir holds segments named by their base
offset (``<20 digits>.log .index .timeindex [.txnindex]``), producer snapshots
(``<offset>.snapshot``), ``leader-epoch-checkpoint``, ``partition.metadata`` and, for the KRaft
metadata log, ``quorum-state`` and ``<offset>-<epoch>.checkpoint`` snapshots (``KafkaRaftClient``'s ``QuorumStateStore`` and ``SnapshotPath``).

Everything here is read-only.  ``.log`` files are streamed in bounded chunks (``LogFileWalk``),
index files likewise (``IndexFileWalk``), so memory stays flat whatever the segment size; an
entry whose size field is larger than ``MAX_ENTRY_SIZE`` is never allocated.  ``resync`` is the
one rule by which a reading resumes after damage (the next entry whose framing and CRC hold).
"""

from __future__ import annotations

import heapq
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mqtool.errors import ChecksumError, CorruptDataError, MqError, StoreLayoutError, UnsupportedFormatError
from mqtool.findings.code_ids import KAFKA_LOG_COMPRESSION, KAFKA_LOG_CRC, KAFKA_LOG_MAGIC, KAFKA_LOG_RECORDS, KAFKA_LOG_SIZE, KAFKA_LOG_UNSUPPORTED, KAFKA_OFFSET_ORDER
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.formats.kafka.log import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MIN_ENTRY_SIZE_FIELD, DataEnd, LogEntry, LogWalker, Mode, decode_entry, peek_entry
from mqtool.store.files import ReadOnlyFile, is_directory, is_regular_file, nonzero_extent, piece_size, safe_listdir
from mqtool.store.lock import MQTOOL_LOCK_NAME

#: Largest log entry mqtool reads into memory.  Kafka's default ``max.message.bytes`` is 1 MiB;
#: a size field beyond this is reported, never allocated.
MAX_ENTRY_SIZE = 64 << 20
#: ``Integer.MAX_VALUE``: the largest ``.log`` the broker opens (``FileRecords``).
MAX_SEGMENT_SIZE = 2**31 - 1
_ZERO_FRAMING = bytes(LOG_OVERHEAD)
#: Chunk used to stream index files (a multiple of 8, 12 and 34 bytes).
INDEX_CHUNK = 8 * 12 * 34 * 1024

SEGMENT_KINDS = ("log", "index", "timeindex", "txnindex")
QUORUM_STATE = "quorum-state"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
LOCK_FILE = ".lock"
#: Files a log dir may hold besides partition dirs.
LOG_DIR_FILES = (
    *cpf.OFFSET_CHECKPOINT_FILES,
    cpf.META_PROPERTIES,
    cpf.CLEAN_SHUTDOWN,
    LOCK_FILE,
    BOOTSTRAP_CHECKPOINT,
)
#: Directories a log dir may hold that are not partitions.
KNOWN_DIRS = ("remote-log-index-cache",)

#: Kafka 0.7 segment files (``<offset>.kafka``): the Jafka message format, not the log format.
KAFKA_07_SUFFIX = ".kafka"

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
CLUSTER_METADATA = "__cluster_metadata"
INTERNAL_TOPICS = (CONSUMER_OFFSETS, TRANSACTION_STATE, CLUSTER_METADATA)

StoreKind = Literal["log-dir", "partition", "segment"]


# --- the model -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class KafkaSegment:
    """One segment: its base offset and the files that carry it (any may be missing)."""

    base_offset: int
    log: Path | None = None
    log_size: int = 0
    index: Path | None = None
    index_size: int = 0
    timeindex: Path | None = None
    timeindex_size: int = 0
    txnindex: Path | None = None
    txnindex_size: int = 0
    #: False for a lone file whose name is not ``<offset>.log`` (base offset then unknown: 0).
    named: bool = True

    @property
    def name(self) -> str:
        return segnames.kafka_offset_prefix(self.base_offset)


@dataclass(frozen=True)
class ProducerSnapshotFile:
    offset: int
    path: Path
    size: int


@dataclass
class KafkaPartition:
    """A partition directory (or a lone segment file) and its files."""

    path: Path
    topic: str | None
    partition: int | None
    suffix: str | None = None  # delete, future, stray
    segments: list[KafkaSegment] = field(default_factory=list)
    snapshots: list[ProducerSnapshotFile] = field(default_factory=list)
    kraft_snapshots: list[Path] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)  # .deleted, .cleaned, .swap, *.tmp
    unexpected: list[Path] = field(default_factory=list)
    links: list[Path] = field(default_factory=list)  # symbolic links: never followed
    special: list[Path] = field(default_factory=list)  # FIFOs, devices, sockets: never opened
    leader_epoch_checkpoint: Path | None = None
    partition_metadata: Path | None = None
    quorum_state: Path | None = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def key(self) -> tuple[str, int] | None:
        """``(topic, partition)`` as checkpoint files name it, when known."""
        if self.topic is None or self.partition is None:
            return None
        return self.topic, self.partition

    @property
    def internal_topic(self) -> str | None:
        """``__consumer_offsets``, ``__transaction_state`` or ``__cluster_metadata`` (else None)."""
        return self.topic if self.topic in INTERNAL_TOPICS else None

    def log_segments(self) -> list[KafkaSegment]:
        """Segments that have a ``.log`` file, in base-offset order."""
        return [s for s in self.segments if s.log is not None]

    def segment_for(self, offset: int) -> KafkaSegment | None:
        """The segment whose base offset is the largest <= ``offset`` (``floorSegment``)."""
        found = None
        for seg in self.log_segments():
            if seg.base_offset <= offset:
                found = seg
            else:
                break
        return found


@dataclass
class KafkaStore:
    """What a path is: a log dir, a partition dir, or a single segment file."""

    root: Path
    kind: StoreKind
    partitions: list[KafkaPartition]
    #: The directory holding the log-dir files (the root of a log dir, or the parent of a
    #: partition dir when that parent is a log dir); None for a standalone partition or file.
    log_dir: Path | None = None
    leftovers: list[Path] = field(default_factory=list)
    unexpected: list[Path] = field(default_factory=list)
    other_dirs: list[Path] = field(default_factory=list)
    links: list[Path] = field(default_factory=list)  # symbolic links in the log dir: never followed

    def log_dir_file(self, name: str) -> Path | None:
        if self.log_dir is None:
            return None
        path = self.log_dir / name
        return path if entry_kind(path) == "file" else None  # a link is never followed

    def find_partition(self, topic: str | None, partition: int | None) -> KafkaPartition:
        """The one partition matching ``topic``/``partition`` (either may be omitted when unique)."""
        matches = [p for p in self.partitions if (topic is None or p.topic == topic) and (partition is None or p.partition == partition) and p.suffix is None]
        if not matches:
            matches = [p for p in self.partitions if (topic is None or p.topic == topic) and (partition is None or p.partition == partition)]
        if len(matches) == 1:
            return matches[0]
        wanted = f"{topic if topic is not None else '<any topic>'}-{partition if partition is not None else '<any partition>'}"
        if not matches:
            raise StoreLayoutError(expected=f"partition {wanted}", found=f"none of {len(self.partitions)} partition(s)", path=self.root)
        raise StoreLayoutError(
            expected=f"one partition matching {wanted} (give --topic and --partition)",
            found=", ".join(p.name for p in matches[:8]) + (" ..." if len(matches) > 8 else ""),
            path=self.root,
        )


def total_log_bytes(store: KafkaStore) -> int:
    """Bytes of every ``.log`` of a store (for progress bars)."""
    return sum(seg.log_size for part in store.partitions for seg in part.log_segments())


# --- detection -----------------------------------------------------------------------------------


def may_hold_kafka07_segments(path: Path, peek: int = 8) -> bool:
    """Whether a name ending in ``.kafka`` is where ``store.jafka.is_kafka07_path`` looks for a
    segment: ``path`` itself, its entries, or the entries of its first ``peek`` directories named
    ``<topic>-<partition>``.  Never False where that rule says True (it looks at no fewer places
    and checks less), so ``layouts`` tells a Kafka log dir apart without loading the Jafka readers."""
    if path.name.endswith(".kafka"):
        return True
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return False
    if any(name.endswith(".kafka") for name in entries):
        return True
    looked = 0
    for name in entries:
        if segnames.parse_topic_partition(name) is None or not os.path.isdir(path / name):
            continue
        try:
            if any(sub.endswith(".kafka") for sub in os.listdir(path / name)):
                return True
        except OSError:
            pass
        looked += 1
        if looked >= peek:
            break
    return False


def parse_partition_name(name: str) -> cpf.PartitionDirName | None:
    try:
        return cpf.parse_partition_dir_name(name)
    except StoreLayoutError:
        return None


def _is_partition_file(name: str) -> bool:
    if name in (cpf.LEADER_EPOCH_CHECKPOINT, cpf.PARTITION_METADATA, QUORUM_STATE):
        return True
    return segnames.parse_kafka_file_name_or_none(name) is not None or segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match(name) is not None


def is_partition_dir(path: Path) -> bool:
    """A ``topic-partition`` directory holding at least one Kafka partition file."""
    if not is_directory(path) or parse_partition_name(path.name) is None:
        return False
    return any(_is_partition_file(n) for n in safe_listdir(path))


def is_log_dir(path: Path) -> bool:
    """A directory with log-dir files (checkpoints, meta.properties...) or partition dirs."""
    if not is_directory(path):
        return False
    names = safe_listdir(path)
    if any(n in (*cpf.OFFSET_CHECKPOINT_FILES, cpf.META_PROPERTIES, cpf.CLEAN_SHUTDOWN, BOOTSTRAP_CHECKPOINT) for n in names):
        return True
    return any(is_partition_dir(path / n) for n in names)


def is_segment_file(path: Path) -> bool:
    """``<offset>.log`` (or another segment file) or a KRaft ``.checkpoint`` snapshot."""
    if not is_regular_file(path):
        return False
    parsed = segnames.parse_kafka_file_name_or_none(path.name)
    if parsed is not None and parsed.kind in SEGMENT_KINDS + ("snapshot",):
        return True
    return path.name == BOOTSTRAP_CHECKPOINT or segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match(path.name) is not None


def is_kafka_path(path: Path) -> bool:
    """A Kafka log dir, a partition dir, or a file inside one (a segment, index, checkpoint...)."""
    path = Path(path)
    if is_directory(path):
        return is_partition_dir(path) or is_log_dir(path)
    if not is_regular_file(path):
        return False
    if is_segment_file(path):
        return True
    if path.name in LOG_DIR_FILES or path.name.endswith(".tmp"):
        return is_log_dir(path.parent)
    if _is_partition_file(path.name):
        return is_partition_dir(path.parent)
    return False


# --- listing -------------------------------------------------------------------------------------


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def entry_kind(path: Path) -> str | None:
    """``file``, ``dir``, ``link`` (never followed: it may lead out of the log dir or loop),
    ``special`` (a FIFO, device or socket: opening one could block), or None when it vanished."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "special"


def list_partition(path: Path) -> KafkaPartition:
    """Classify every entry of a partition directory (names only; nothing is read)."""
    path = Path(path)
    parsed = parse_partition_name(path.name)
    part = KafkaPartition(
        path,
        parsed.topic if parsed else None,
        parsed.partition if parsed else None,
        parsed.suffix if parsed else None,
    )
    files: dict[int, dict[str, Path]] = {}
    for name in safe_listdir(path):
        if name == MQTOOL_LOCK_NAME:
            continue  # mqtool's own lock (recover/clean on a partition directory)
        full = path / name
        kind = entry_kind(full)
        if kind is None:
            continue  # vanished since the listing
        if kind == "link":
            part.links.append(full)
            continue
        if kind == "special":
            part.special.append(full)
            continue
        if kind == "dir":
            part.unexpected.append(full)
            continue
        if name == cpf.LEADER_EPOCH_CHECKPOINT:
            part.leader_epoch_checkpoint = full
            continue
        if name == cpf.PARTITION_METADATA:
            part.partition_metadata = full
            continue
        if name == QUORUM_STATE:
            part.quorum_state = full
            continue
        if name.endswith(".tmp"):
            part.leftovers.append(full)
            continue
        snap = segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match(name)
        if snap:
            if snap.group(3):
                part.leftovers.append(full)
            else:
                part.kraft_snapshots.append(full)
            continue
        seg = segnames.parse_kafka_file_name_or_none(name)
        if seg is None:
            part.unexpected.append(full)
            continue
        if seg.operation is not None:
            part.leftovers.append(full)
        elif seg.kind == "snapshot":
            part.snapshots.append(ProducerSnapshotFile(seg.base_offset, full, _size(full)))
        else:
            files.setdefault(seg.base_offset, {})[seg.kind] = full
    for base in sorted(files):
        kinds = files[base]
        kw: dict[str, Any] = {}
        for kind in SEGMENT_KINDS:
            p = kinds.get(kind)
            if p is not None:
                kw[kind] = p
                kw[f"{kind}_size"] = _size(p)
        part.segments.append(KafkaSegment(base, **kw))
    part.snapshots.sort(key=lambda s: s.offset)
    return part


def lone_segment(path: Path) -> KafkaPartition:
    """A partition made of one log-format file (``.log``, a carved ``.records``, a KRaft snapshot).

    A ``<offset>.log`` inside a partition dir keeps its index siblings; any other name has
    base offset 0 and no indexes (``named=False``)."""
    path = Path(path)
    parsed = segnames.parse_kafka_file_name_or_none(path.name)
    if parsed is not None and parsed.kind == "log" and parsed.operation is None:
        owner = list_partition(path.parent) if parse_partition_name(path.parent.name) else None
        seg = None
        if owner is not None:
            seg = next((s for s in owner.segments if s.base_offset == parsed.base_offset), None)
        if seg is None:
            seg = KafkaSegment(parsed.base_offset, path, _size(path))
        topic = owner.topic if owner else None
        number = owner.partition if owner else None
        return KafkaPartition(path.parent, topic, number, owner.suffix if owner else None, [seg])
    owner_name = parse_partition_name(path.parent.name)
    return KafkaPartition(
        path.parent,
        owner_name.topic if owner_name else None,
        owner_name.partition if owner_name else None,
        None,
        [KafkaSegment(0, path, _size(path), named=False)],
    )


def refuse_kafka_07(path: Path) -> None:
    """A Kafka 0.7 ``.kafka`` segment is the Jafka message format, not Kafka's log format."""
    if path.name.endswith(KAFKA_07_SUFFIX):
        raise UnsupportedFormatError(
            "a Kafka 0.7 segment (the [length][magic][crc][payload] format Jafka kept): read it with `--layout jafka` / `mqtool dump jafka`",
            path=path,
            expected="a Kafka 0.8+ log segment",
            found=path.name,
        )


def open_kafka(path: str | Path) -> KafkaStore:
    """Open a log dir, a partition dir or a segment file (read-only; nothing is read yet)."""
    root = Path(path)
    if not root.exists():
        raise StoreLayoutError("no such file or directory", path=root)
    if is_regular_file(root):
        refuse_kafka_07(root)
        if root.name.endswith((".index", ".timeindex", ".txnindex", ".snapshot")) or root.name in LOG_DIR_FILES:
            raise StoreLayoutError(
                expected="a Kafka log dir, partition dir or log segment (use `mqtool dump kafka-...` for index, snapshot and checkpoint files)",
                found=root.name,
                path=root,
            )
        log_dir = root.parent.parent if is_log_dir(root.parent.parent) and parse_partition_name(root.parent.name) else None
        return KafkaStore(root, "segment", [lone_segment(root)], log_dir=log_dir)
    if is_partition_dir(root) or (parse_partition_name(root.name) is not None and not is_log_dir(root)):
        log_dir = root.parent if is_log_dir(root.parent) else None
        return KafkaStore(root, "partition", [list_partition(root)], log_dir=log_dir)
    if not is_log_dir(root):
        raise StoreLayoutError(
            expected="a Kafka log dir (topic-partition dirs, checkpoint files, meta.properties) or a partition dir",
            found="none of them",
            path=root,
        )
    store = KafkaStore(root, "log-dir", [], log_dir=root)
    for name in safe_listdir(root):
        full = root / name
        kind = entry_kind(full)
        if kind is None:
            continue
        if kind == "link":
            store.links.append(full)
            continue
        if kind == "dir":
            if parse_partition_name(name) is not None:
                store.partitions.append(list_partition(full))
            elif name in KNOWN_DIRS:
                continue
            else:
                store.other_dirs.append(full)
        elif name in LOG_DIR_FILES or name == MQTOOL_LOCK_NAME:
            continue  # (mqtool's own lock: recover/clean take it in the log dir)
        elif name.endswith(".tmp"):
            store.leftovers.append(full)
        else:
            store.unexpected.append(full)
    store.partitions.sort(key=lambda p: (p.topic or "", p.partition if p.partition is not None else -1, p.name))
    return store


# --- streaming reads -----------------------------------------------------------------------------


#: The finding code of an entry a decode rejects, by what its error says broke (``MqError.kind``;
#: never by its wording).
ENTRY_CODES: dict[str | None, str] = {
    "crc": KAFKA_LOG_CRC,
    "unsupported": KAFKA_LOG_UNSUPPORTED,
    "magic": KAFKA_LOG_MAGIC,
    "offset-order": KAFKA_OFFSET_ORDER,
    "compression": KAFKA_LOG_COMPRESSION,
    "size": KAFKA_LOG_SIZE,
}


def entry_error_code(exc: MqError) -> str:
    """The code of an entry a full decode rejects (``ENTRY_CODES``)."""
    return ENTRY_CODES.get(exc.kind, KAFKA_LOG_RECORDS)


class LogFileWalk:
    """Stream ``(position, LogEntry)`` from one ``.log`` file in bounded chunks.

    ``mode`` is ``LogWalker``'s (``framing``, ``header``, ``full``).  While iterating,
    ``buffer``/``buffer_start`` hold the chunk the current entry lies in (a consumer may decode
    the entry's bytes itself at ``buffer[position - buffer_start:]``).

    ``limit`` stops the walk at that file position (``--max-bytes``): only entries that end
    within it are returned and the end is reported as ``eof`` at the last such entry.

    ``first_piece``: the first read is that small, each next one twice the one before, up to
    ``chunk`` (a reader that stops after a few entries -- ``dump --limit`` -- reads little
    more than them); by default every read is ``chunk`` bytes.  No answer depends on either.
    ``garbage_extent=False``: a ``zeros`` end followed by other bytes reads the zero run only
    (``data_after_zeros``); where those bytes end is read when ``garbage_after_zeros`` is asked.

    After iteration: ``end`` is the clean end (a ``DataEnd`` in file positions: ``eof``,
    ``zeros`` -- zeros from there to the end of the file -- or ``partial``), or ``error`` is the
    ``MqError`` (located in the file) of the first broken entry, at ``failed_at``.

    With ``keep_damaged`` an entry whose frame is intact -- its size and magic hold, so the next
    entry is where its size says -- but whose CRC fails (a v2 batch's CRC-32C, a v0/v1 message's
    CRC-32) is yielded too, decoded without the check, and the walk goes on after it: ``damaged``
    maps its file position to the error (located in the file; ``finding_code`` names its finding,
    KAFKA-LOG-CRC).  In ``full`` mode such an entry whose records do not decode comes with
    ``records`` None.  This is how ``kafka-dump-log`` (upstream ``DumpLogSegments``) lists such a
    batch, ``isValid: false``; Kafka's own recovery (``LogSegment.recover``) truncates the segment
    there instead, which the store model states as the finding.  Likewise, in ``full`` mode, an
    entry whose records need a codec that is not installed (no damage: the broker reads it) comes
    with ``records`` None, its position mapped to the error in ``undecoded`` (KAFKA-LOG-UNSUPPORTED,
    a warning).  Without ``keep_damaged`` the walk stops at either.
    """

    def __init__(
        self,
        f: ReadOnlyFile,
        start: int = 0,
        *,
        mode: Mode = "header",
        check_crc: bool = True,
        limit: int | None = None,
        chunk: int | None = None,
        max_entry_size: int = MAX_ENTRY_SIZE,
        keep_damaged: bool = False,
        first_piece: int | None = None,
        garbage_extent: bool = True,
    ) -> None:
        self.f = f
        self.start = start
        self.mode = mode
        self.keep_damaged = keep_damaged
        #: ``keep_damaged``: file position -> error of each frame-intact entry yielded despite it
        self.damaged: dict[int, MqError] = {}
        #: ``keep_damaged``: file position -> why the records of an entry yielded without them were
        #: not decoded (a codec not installed)
        self.undecoded: dict[int, MqError] = {}
        self.check_crc = check_crc
        self.stop = f.size if limit is None else min(limit, f.size)
        self.limited = limit is not None and limit < f.size
        self.chunk = chunk or piece_size()
        self.first_piece = min(self.chunk, first_piece) if first_piece else self.chunk
        self.max_entry_size = max_entry_size
        self.end: DataEnd | None = None
        self.error: MqError | None = None
        self.failed_at: int | None = None
        self.count = 0
        self.last_offset: int | None = None  # of the last entry walked (its base offset in framing mode, v2)
        self.last_offset_is = "ends"
        self.buffer: bytes = b""
        self.buffer_start = start
        #: For a ``zeros`` end followed by other bytes: the first non-zero position after the run
        #: (``garbage_after_zeros`` has the end of those bytes too).
        self.data_after_zeros: int | None = None
        self._garbage: tuple[int, int] | None = None
        self._garbage_extent = garbage_extent

    @property
    def garbage_after_zeros(self) -> tuple[int, int] | None:
        """For a ``zeros`` end followed by other bytes: (first non-zero position, end of them),
        the end found when first asked, the file still open (it reads the rest of the walk's
        extent)."""
        first = self.data_after_zeros
        if first is None:
            return None
        if self._garbage is None:
            extent = nonzero_extent(self.f, first, self.stop)
            self._garbage = (first, extent[1] if extent is not None else first)
        return self._garbage

    @property
    def valid_end(self) -> int:
        """File position where the valid entries stop."""
        if self.end is not None:
            return self.end.position
        return self.failed_at if self.failed_at is not None else self.start

    def __iter__(self) -> Iterator[tuple[int, LogEntry]]:
        f = self.f
        base = self.start
        grow = self.first_piece
        want = grow
        stop = self.stop
        while True:
            data = f.pread(base, min(want, stop - base))
            grow = min(self.chunk, 2 * grow)
            want = grow
            self.buffer = data
            self.buffer_start = base
            resume = 0
            while True:  # once, and again after each damaged entry kept (in the same piece)
                walker = LogWalker(data, resume, mode=self.mode, check_crc=self.check_crc)
                try:
                    for entry in walker:
                        self._note(entry)
                        yield base + entry.position, entry
                except MqError as exc:
                    rel = walker.failed_at or 0
                    if not self.limited and data[rel : rel + LOG_OVERHEAD] == _ZERO_FRAMING:
                        # a zero run that other bytes follow, seen whole: the same end as below
                        self._zeros_then_data(base + rel, stop, data, base)
                        return
                    kept = self._framed_entry(data, rel, exc) if self.keep_damaged else None
                    if kept is not None:  # the frame holds: listed, and the walk reads on after it
                        (self.undecoded if isinstance(exc, UnsupportedFormatError) else self.damaged)[base + rel] = exc.at(f.path, base)
                        self._note(kept)
                        yield base + rel, kept
                        resume = rel + kept.size
                        continue
                    self.failed_at = base + rel
                    self.error = exc.at(f.path, base)
                    return
                break
            end = walker.end
            assert end is not None
            at = base + end.position
            more = base + len(data) < stop
            if end.kind == "zeros" and more and base + len(data) - at < LOG_OVERHEAD:
                # Fewer zero bytes than an entry's framing before the end of this piece: the
                # start of an entry the piece cuts (its offset's high bytes are zeros), or a
                # zero run the next piece goes on with.  Read on from there.
                base = at
                continue
            if end.kind == "eof" and more:
                base = at
                continue
            if end.kind == "partial" and more:
                if end.length > self.max_entry_size and end.length > want and end.position and end.position + HEADER_SIZE_UP_TO_MAGIC <= len(data):
                    # an entry larger than mqtool reads, its header in hand, more than the next
                    # read would hold: what reading it again from its start would say, said now
                    if at + want < stop:
                        self._too_large(f.path, at, end.length)
                        return
                    self._cut_at_end(data, end.position, at, end.length)  # that read would reach the end
                    return
                if end.position == 0:
                    if end.length > self.max_entry_size:
                        self._too_large(f.path, at, end.length)
                        return
                    want = max(end.length, self.chunk)
                base = at
                continue
            if end.kind == "zeros" and more:
                self._zeros_then_data(at, stop, data, base)
                return
            if end.kind == "partial":
                self._cut_at_end(data, end.position, at, end.length)
                return
            if self.limited and end.kind == "zeros":
                # the --max-bytes window cuts the entry: not a property of the file
                self.end = DataEnd("eof", at)
                return
            self.end = DataEnd(end.kind, at, end.length)
            return

    def _too_large(self, path: Path, at: int, length: int) -> None:
        """The entry at ``at`` claims ``length`` bytes, more than mqtool reads: the walk stops there."""
        self.failed_at = at
        self.error = CorruptDataError(
            path=path,
            position=at + 8,
            expected=f"an entry size of at most {self.max_entry_size} bytes (the largest entry mqtool reads)",
            found=f"{length - 12} (an entry of {length} bytes)",
            kind="size",
        )

    def _cut_at_end(self, data: bytes, rel: int, at: int, length: int) -> None:
        """The end at ``at`` (``data[rel:]``), where an entry of ``length`` bytes is cut by the end
        of the walk: a torn write (a ``partial`` end), unless the broker could not have written it
        (``error``); an ``eof`` end where the ``--max-bytes`` window cuts it."""
        if self.limited:
            # the --max-bytes window cuts the entry: not a property of the file
            self.end = DataEnd("eof", at)
            return
        problem = self._not_a_torn_write(data, rel, length)
        if problem is not None:
            self.failed_at = at
            self.error = problem.at(self.f.path, at)
            return
        self.end = DataEnd("partial", at, length)

    def _note(self, entry: LogEntry) -> None:
        self.count += 1
        self.last_offset = entry.last_offset
        self.last_offset_is = "starts" if entry.header is None and entry.magic == 2 else "ends"

    def _framed_entry(self, data: bytes, rel: int, exc: MqError) -> LogEntry | None:
        return framed_entry(data, rel, exc, self.mode)

    def finding_code(self, position: int) -> str | None:
        """The code of the finding validate states about the entry the walk yielded at file
        ``position`` despite its damage (``damaged``), None for a healthy entry."""
        exc = self.damaged.get(position)
        return entry_error_code(exc) if exc is not None else None

    def _zeros_then_data(self, at: int, stop: int, data: bytes, base: int) -> None:
        """The end at ``at``, where a zero run of at least an entry's framing starts (an entry of
        size 0): a ``zeros`` end, with the extent of whatever non-zero bytes follow the run --
        decided from the file, so the answer is the same wherever a piece of the read ends (a
        ``--max-bytes`` window that ends in it ends at ``at``).  Without ``garbage_extent`` only
        the zero run is read here: where the bytes after it end is read when asked
        (``garbage_after_zeros``).  The run's bytes in the piece in hand (``data`` at ``base``)
        are not read again."""
        if self.limited:
            self.end = DataEnd("eof", at)
            return
        held = data[at - base :]
        lead = len(held) - len(held.lstrip(b"\x00"))
        if lead < len(held):
            self.data_after_zeros = at + lead
        else:
            self.data_after_zeros = first_nonzero(self.f, base + len(data), stop)
        self.end = DataEnd("zeros", at)
        if self._garbage_extent:
            _ = self.garbage_after_zeros

    def _not_a_torn_write(self, data: bytes, rel: int, length: int) -> CorruptDataError | None:
        return not_a_torn_write(data[rel : rel + HEADER_SIZE_UP_TO_MAGIC], length, self.last_offset, self.last_offset_is, self.max_entry_size)


def first_nonzero(f: ReadOnlyFile, start: int, stop: int) -> int | None:
    """The first non-zero byte in ``[start, stop)`` of ``f``, or None: ``nonzero_extent``'s rule
    (holes of a sparse file skipped), over windows that double from 64 KiB, so that finding the end
    of a zero run reads the run (and at most as much again), not the file after it."""
    pos, window = start, 64 << 10
    while pos < stop:
        end = min(stop, pos + window)
        extent = nonzero_extent(f, pos, end)
        if extent is not None:
            return extent[0]
        pos, window = end, min(2 * window, 8 << 20)
    return None


def framed_entry(data: bytes, rel: int, exc: MqError, mode: Mode = "full") -> LogEntry | None:
    """The entry at ``data[rel:]`` that ``exc`` rejected, when only its checksum failed (its size
    and magic, checked before the CRC, hold, so the next entry is where its size says): decoded
    without the check -- in ``full`` mode without its records when they do not decode either.
    None when anything but the checksum is broken.  The one rule of every walk that keeps such
    an entry (``LogFileWalk(keep_damaged=True)``, the Spark walk).  An entry whose records need a
    codec that is not installed (``UnsupportedFormatError``: its CRC held) comes without them."""
    if isinstance(exc, UnsupportedFormatError) and mode == "full":
        try:
            return decode_entry(data, rel, mode="header", check_crc=False)
        except MqError:
            return None
    if not isinstance(exc, ChecksumError):
        return None
    try:
        return decode_entry(data, rel, mode=mode, check_crc=False)
    except MqError:
        if mode != "full":
            return None
    try:
        return decode_entry(data, rel, mode="header", check_crc=False)
    except MqError:
        return None


def not_a_torn_write(head: bytes, length: int, last_offset: int | None, last_offset_is: str = "ends", max_entry_size: int = MAX_ENTRY_SIZE) -> CorruptDataError | None:
    """Why a cut entry at the end of a ``.log`` cannot be a torn write, or None when it can.

    A torn write is the start of an entry the broker wrote: a size it could write, a known magic
    byte, an offset after the entry before it (``last_offset``, where that entry ``ends`` -- or
    ``starts``, when only its base offset is known).  Anything else (random bytes appended, a header
    overwritten) is damage, though recovery truncates at the same place.  ``head`` is the cut
    entry's first bytes (up to 17), ``length`` its claimed size with the 12-byte framing; positions
    in the error are relative to the entry."""
    if length - 12 > max_entry_size:
        return CorruptDataError(
            "not a torn write",
            position=8,
            expected=f"an entry size of at most {max_entry_size} bytes (the largest entry mqtool reads)",
            found=f"{length - 12} (an entry of {length} bytes)",
            kind="size",
        )
    if len(head) < HEADER_SIZE_UP_TO_MAGIC:
        return None
    if head[16] > 2:
        return CorruptDataError(
            "not a torn write", position=16, expected="magic 0, 1 or 2 in the cut entry at the end of the file", found=f"magic {head[16]}", kind="magic"
        )
    offset, _size, _magic = peek_entry(head)
    if last_offset is not None and offset <= last_offset:
        return CorruptDataError(
            "not a torn write",
            position=0,
            expected=f"an offset above {last_offset} (where the entry before it {last_offset_is})",
            found=str(offset),
            kind="offset-order",
        )
    return None


def read_entry_at(f: ReadOnlyFile, position: int, *, mode: Mode = "full", check_crc: bool = True, size_hint: int = 65536) -> LogEntry:
    """Decode the single entry at ``position`` of an open ``.log`` (one read when it fits ``size_hint``)."""
    try:
        data = f.pread(position, max(HEADER_SIZE_UP_TO_MAGIC, size_hint))
        if len(data) < HEADER_SIZE_UP_TO_MAGIC:
            raise CorruptDataError(position=0, expected="a log entry header (17 bytes)", found=f"{len(data)} bytes before the end of the file")
        size = LOG_OVERHEAD + peek_entry(data)[1]
        if size > MAX_ENTRY_SIZE:
            raise CorruptDataError(position=8, expected=f"an entry of at most {MAX_ENTRY_SIZE} bytes", found=str(size), kind="size")
        if size > len(data):
            data = f.pread(position, size)
        return decode_entry(data, 0, mode=mode, check_crc=check_crc)
    except MqError as exc:
        raise exc.at(f.path, position) from None


def resync(
    f: ReadOnlyFile,
    start: int,
    *,
    limit: int | None = None,
    magics: Iterable[int] = (0, 1, 2),
    after: int | None = None,
    chunk: int | None = None,
    first: int | None = None,
) -> int | None:
    """The first position in ``[start, limit)`` of ``f`` where an entry starts whose framing and
    CRC hold (``read_entry_at(mode="header")``: a size the broker could write, whose bytes are in
    the file, and a valid CRC-32C / CRC-32), or None: where the reading of a ``.log`` resumes
    after damage.  The one rule of every Kafka resync: validate's walk of a segment (it goes on
    checking past a broken entry: ``magics`` the ones the segment holds, ``after`` the last offset
    read, so an entry continues the offsets) and recover's count of what a cut drops (``limit``:
    how far it looks).  Kafka's own recovery never resyncs (``LogSegment.recover`` truncates at the
    first invalid batch); this is mqtool's, to name what lies past the damage.

    The file is searched ``chunk`` bytes at a time (``piece_size()``: no answer depends on it) for
    the magic byte at an entry's byte 16; zero runs are skipped at memory speed (an entry whose
    size field is zero is none), so a pre-allocated tail costs one read.  ``first``: the first read
    is that long (overlap included) -- the bytes a caller has just read, which the file keeps."""
    end = f.size if limit is None else min(limit, f.size)
    piece = chunk or piece_size()
    patterns = [bytes([m]) for m in sorted(set(magics))]
    overlap = HEADER_SIZE_UP_TO_MAGIC - 1  # a candidate's header may start in the piece before
    pos = start
    step = first - overlap if first is not None and first > 4 * overlap else piece
    while pos < end and pos + HEADER_SIZE_UP_TO_MAGIC <= f.size:
        data = f.pread(pos, min(step, end - pos) + overlap)
        step = piece
        n = len(data)
        lead = n - len(data.lstrip(b"\x00"))
        if lead == n:  # all zeros: only an entry whose size field reaches past them may start here
            pos += n - _SIZE_END + 1
            continue
        # a candidate's size field (bytes 8-11) must hold a byte past the leading zeros
        first = max(overlap, lead - _SIZE_END + 1 + overlap)
        found = heapq.merge(*(_find_all(data, pat, first) for pat in patterns)) if len(patterns) > 1 else _find_all(data, patterns[0], first)
        for i in found:
            rel = i - overlap
            candidate = pos + rel
            if candidate >= end:
                break
            offset, size, _magic = peek_entry(data, rel)  # the same framing for v0/v1 messages and v2 batches
            if size < MIN_ENTRY_SIZE_FIELD or size > MAX_ENTRY_SIZE or candidate + LOG_OVERHEAD + size > f.size:
                continue
            if after is not None and offset <= after:
                continue
            try:
                if rel + LOG_OVERHEAD + size <= n:  # the whole entry is in the piece: no read
                    decode_entry(data, rel, mode="header")
                else:
                    read_entry_at(f, candidate, mode="header", size_hint=LOG_OVERHEAD + size)
            except MqError:
                continue
            return candidate
        pos += n - overlap
    return None


#: One past the last byte of an entry's size field (bytes 8-11 of its framing).
_SIZE_END = 12


def _find_all(data: bytes, pattern: bytes, start: int) -> Iterator[int]:
    i = data.find(pattern, start)
    while i != -1:
        yield i
        i = data.find(pattern, i + 1)


IndexKind = Literal["index", "timeindex", "txnindex"]
_ENTRY_SIZES = {"index": kidx.OFFSET_ENTRY_SIZE, "timeindex": kidx.TIME_ENTRY_SIZE, "txnindex": ktxn.ENTRY_SIZE}


class IndexFileWalk:
    """Stream ``(position, entry)`` of a ``.index`` / ``.timeindex`` / ``.txnindex`` in chunks.

    The formats walkers do the work; chunks overlap by one entry so their order checks and the
    zero-tail rule (entry 0 is always an entry; an all-zero entry after it ends the walk) see
    exactly what a whole-file walk sees.  After iteration ``end`` is the ``DataEnd`` (file
    positions) or ``error`` the located ``MqError``; ``count`` and ``last`` describe the entries.
    ``first_is_zero`` tells that entry 0 is all zero (an unused pre-allocated slot when nothing
    follows it).
    """

    def __init__(self, f: ReadOnlyFile, kind: IndexKind, base_offset: int = 0, *, chunk: int = INDEX_CHUNK) -> None:
        self.f = f
        self.kind = kind
        self.base_offset = base_offset
        self.entry_size = _ENTRY_SIZES[kind]
        self.chunk = max(chunk - chunk % self.entry_size, self.entry_size * 2)
        self.end: kidx.DataEnd | ktxn.DataEnd | None = None
        self.error: MqError | None = None
        self.count = 0
        self.last: kidx.OffsetPosition | kidx.TimestampOffset | ktxn.AbortedTxn | None = None
        self.first_is_zero = False

    def _walker(self, data: bytes) -> kidx.OffsetIndexWalker | kidx.TimeIndexWalker | ktxn.TxnIndexWalker:
        if self.kind == "index":
            return kidx.OffsetIndexWalker(data, self.base_offset)
        if self.kind == "timeindex":
            return kidx.TimeIndexWalker(data, self.base_offset)
        return ktxn.TxnIndexWalker(data, base_offset=self.base_offset)

    def __iter__(self) -> Iterator[tuple[int, object]]:
        f = self.f
        size = f.size
        step = self.entry_size
        start = 0
        if size >= step and f.pread(0, step) == bytes(step):
            self.first_is_zero = True
        while True:
            overlap = step if start > 0 else 0
            data = f.pread(start - overlap, min(self.chunk + overlap, size - start + overlap))
            walker = self._walker(data)
            try:
                for pos, entry in walker:
                    if pos < overlap:
                        continue
                    self.count += 1
                    self.last = entry
                    yield start - overlap + pos, entry
            except MqError as exc:
                self.error = exc.at(f.path, start - overlap)
                return
            end = walker.end
            assert end is not None  # set by every walk that did not raise
            stop = start - overlap + end.position
            if end.kind == "eof" and start - overlap + len(data) < size:
                start = stop
                continue
            self.end = end.__class__(end.kind, stop, size - stop if end.kind != "eof" else 0)
            return


# --- index lookups with bounded reads ----------------------------------------------------------


def _slot(f: ReadOnlyFile, number: int, size: int) -> bytes:
    return f.pread(number * size, size)


def index_log_positions(path: Path, limit: int) -> list[int]:
    """The ``.log`` positions of the first ``limit`` entries of the offset index at ``path``, up to
    the first that does not go forward (the written entries are strictly increasing)."""
    with ReadOnlyFile(path) as f:
        count = min(index_entry_count(f, kidx.OFFSET_ENTRY_SIZE), limit)
        data = f.pread(0, count * kidx.OFFSET_ENTRY_SIZE)
    positions: list[int] = []
    for i in range(0, len(data) - len(data) % kidx.OFFSET_ENTRY_SIZE, kidx.OFFSET_ENTRY_SIZE):
        position = kidx.peek_log_position(data, i)
        if position <= (positions[-1] if positions else 0):
            break
        positions.append(position)
    return positions


def index_entry_count(f: ReadOnlyFile, entry_size: int) -> int:
    """Entries before the zero tail (binary search with ``pread``; ``index.index_entry_count``'s rule)."""
    total = f.size // entry_size
    if total <= 1:
        return total
    zero = bytes(entry_size)
    lo, hi = 1, total
    while lo < hi:
        mid = (lo + hi) // 2
        if _slot(f, mid, entry_size) == zero:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _largest_lower_bound(f: ReadOnlyFile, count: int, entry_size: int, key: Callable[[bytes], int], target: int) -> int:
    """``AbstractIndex.largestLowerBoundSlotFor``: slot of the largest key <= target, or -1."""
    if count == 0 or key(_slot(f, 0, entry_size)) > target:
        return -1
    lo, hi = 0, count - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if key(_slot(f, mid, entry_size)) > target:
            hi = mid - 1
        else:
            lo = mid
    return lo


def lookup_offset(path: Path | None, base_offset: int, target: int) -> tuple[kidx.OffsetPosition, int]:
    """``OffsetIndex.lookup`` on an index file: ``(entry, slot)``; ``((base, 0), -1)`` below the
    first entry or without an index.  Reads O(log n) entries."""
    if path is None:
        return kidx.OffsetPosition(base_offset, 0), -1
    try:
        with ReadOnlyFile(path) as f:
            count = index_entry_count(f, kidx.OFFSET_ENTRY_SIZE)
            slot = _largest_lower_bound(f, count, kidx.OFFSET_ENTRY_SIZE, lambda raw: base_offset + kidx.peek_relative_offset(raw), target)
            if slot < 0:
                return kidx.OffsetPosition(base_offset, 0), -1
            return kidx.decode_offset_entry(_slot(f, slot, kidx.OFFSET_ENTRY_SIZE), 0, base_offset), slot
    except MqError as exc:
        raise exc.at(path, 0) from None


def lookup_timestamp(path: Path | None, base_offset: int, target: int) -> tuple[kidx.TimestampOffset, int]:
    """``TimeIndex.lookup``: ``(entry, slot)``; ``((-1, base), -1)`` below the first entry."""
    if path is None:
        return kidx.TimestampOffset(kidx.NO_TIMESTAMP, base_offset), -1
    try:
        with ReadOnlyFile(path) as f:
            count = index_entry_count(f, kidx.TIME_ENTRY_SIZE)
            slot = _largest_lower_bound(f, count, kidx.TIME_ENTRY_SIZE, kidx.peek_timestamp, target)
            if slot < 0:
                return kidx.TimestampOffset(kidx.NO_TIMESTAMP, base_offset), -1
            return kidx.decode_time_entry(_slot(f, slot, kidx.TIME_ENTRY_SIZE), 0, base_offset), slot
    except MqError as exc:
        raise exc.at(path, 0) from None


def last_time_entry(path: Path | None, base_offset: int) -> kidx.TimestampOffset:
    """``TimeIndex.lastEntry``: ``(-1, base)`` when empty or missing."""
    if path is None:
        return kidx.TimestampOffset(kidx.NO_TIMESTAMP, base_offset)
    try:
        with ReadOnlyFile(path) as f:
            count = index_entry_count(f, kidx.TIME_ENTRY_SIZE)
            if count == 0 or (count == 1 and _slot(f, 0, kidx.TIME_ENTRY_SIZE) == bytes(kidx.TIME_ENTRY_SIZE)):
                return kidx.TimestampOffset(kidx.NO_TIMESTAMP, base_offset)
            return kidx.decode_time_entry(_slot(f, count - 1, kidx.TIME_ENTRY_SIZE), 0, base_offset)
    except MqError as exc:
        raise exc.at(path, 0) from None
