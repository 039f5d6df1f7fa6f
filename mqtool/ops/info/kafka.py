"""info for Kafka: what a log dir, partition dir or segment file is, from its cheap facts.

Reads names and checkpoint files, and takes the rest from the store model's one reading of the
log (``store.model.kafka.read_store_entries``), which names the damage on the way: each
partition's first entry (decoded: its first offset and timestamp) and its active segment from
its last ``.index`` entry on (where the broker's recovery would look; from its start when no
entry starts there), as a walk that stops at a broken entry sees them (``LogFileWalk``, header
mode): the log end offset, how the data ends and the largest timestamp come from there (and the
last ``.timeindex`` entry of every segment).  The same reading gives the restart preview
(``restart``: ``store.model.kafka_broker.restart_preview``, for the Kafka version modelled) where
each segment's recovery would stop, and its pace the read speed the estimate uses, so info reads
each log byte once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from mqtool.errors import MqError, StoreIOError
from mqtool.findings import Finding
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import compression
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.log import LogEntry
from mqtool.ops import log_findings
from mqtool.store import kafka as ks
from mqtool.store.files import read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import kafka as km
from mqtool.store.model import kafka_broker as kb

_MAGIC_HINTS = {
    0: "message format v0 (Kafka 0.8-0.9 producers or log.message.format.version < 0.10)",
    1: "message format v1 (Kafka 0.10+, timestamps)",
    2: "message format v2 (Kafka 0.11+, record batches)",
}

T = TypeVar("T")

#: a log-dir checkpoint file's entries, by file name: ``(topic, partition)`` -> offset
Checkpoints = dict[str, dict[tuple[str, int], int]]


class MetaPropertiesDoc(TypedDict):
    """``meta.properties`` as ``meta_properties`` shows it."""

    version: int
    node_id: int | None
    cluster_id: str | None
    directory_id: str | None


class CheckpointFileDoc(TypedDict):
    """One row of ``checkpoint_files``: whether the file is there and how many entries it holds."""

    name: str
    present: bool
    entries: int | None


@dataclass
class PartitionInfo:
    directory: str  # the partition directory's name
    topic: str | None
    partition: int | None
    state: str  # live, delete, future, stray
    internal: bool
    segments: int
    log_bytes: int
    index_bytes: int
    log_start_offset: int | None
    log_end_offset: int | None
    offsets: int | None  # log end - log start: how many offsets the log spans
    first_timestamp: int | None
    max_timestamp: int | None
    magic: list[int]
    compression: list[str]
    end_kind: str | None  # how the active segment ends: eof, zeros, partial, corrupt
    leader_epoch: int | None
    topic_id: str | None
    recovery_point: int | None = None
    high_watermark: int | None = None
    log_start_checkpoint: int | None = None
    cleaner_offset: int | None = None
    producer_snapshots: int = 0


@dataclass
class KafkaInfo:
    layout: str
    root: str
    kind: str  # log-dir, partition, segment
    log_dir: str | None
    version_hints: list[str]
    mode: str | None  # KRaft, ZooKeeper
    meta_properties: MetaPropertiesDoc | None
    shutdown: str
    broker_epoch: int | None
    broker_lock_pid: int | None
    checkpoint_files: list[CheckpointFileDoc]
    totals: dict[str, int]
    partitions: list[PartitionInfo]
    leftovers: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: damaged log data met where info reads (each partition's first entry and active segment) and
    #: every error validate finds in the log (``CODE path:position: message``): exit 1
    errors: list[str] = field(default_factory=list)
    #: validate's errors and warnings (``ops.log_findings``); the warnings also in ``problems``
    findings: list[dict[str, object]] = field(default_factory=list)
    #: what the modelled broker's next start does (``kafka_broker.restart_preview``); None for a segment file
    restart: dict[str, object] | None = None

    #: ``partitions`` rows hold offsets and sizes, ``partition_details`` formats and ids (both
    #: carry ``directory``, ``topic`` and ``partition``), so that each renders as a readable table;
    #: ``magic``/``compression`` are those seen in the first batch and the active segment.
    #: ``topic`` and ``partition`` come last: the directory's name shows them in a narrow table.
    DETAILS = (
        "directory", "state", "magic", "compression", "first_timestamp", "leader_epoch", "topic_id",
        "log_start_checkpoint", "cleaner_offset", "producer_snapshots", "topic", "partition",
    )  # fmt: skip
    OVERVIEW = (
        "directory", "segments", "log_bytes", "log_start_offset", "log_end_offset", "recovery_point",
        "high_watermark", "max_timestamp", "end_kind", "topic", "partition",
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self)
        rows = doc.pop("partitions")
        doc["partitions"] = [{k: row[k] for k in self.OVERVIEW} for row in rows]
        doc["partition_details"] = [{k: row[k] for k in self.DETAILS} for row in rows]
        return doc


def _read(path: Path | None, decode: Callable[[bytes], T], problems: list[str]) -> T | None:
    if path is None:
        return None
    try:
        return decode(read_small_file(path, 64 << 20))
    except MqError as exc:
        problems.append(str(exc.at(path)))
    except (UnicodeDecodeError, ValueError) as exc:
        problems.append(f"{path}: {exc}")
    return None


def _note(entry: LogEntry, hints: set[str], magics: set[int] | None = None, codecs: set[str] | None = None) -> None:
    hints.add(_MAGIC_HINTS.get(entry.magic, f"magic {entry.magic}"))
    h = entry.header
    if h is None:
        return
    if magics is not None:
        magics.add(entry.magic)
    codec = h.compression_type
    if codecs is not None:
        codecs.add(compression.CODEC_NAMES.get(codec, str(codec)))
    if codec == compression.ZSTD:
        hints.add("2.1.0+ (zstd compression)")
    if isinstance(h, rb.BatchHeader):
        if h.has_delete_horizon_ms:
            hints.add("3.1.0+ (a compacted batch with a delete horizon)")
        if h.is_transactional:
            hints.add("0.11.0+ transactions in use")


def _max_timestamp(entry: LogEntry) -> int:
    """An entry's largest timestamp: a v2 batch's ``max_timestamp``, a v0/v1 message's own."""
    h = entry.header
    assert h is not None  # the header and full modes decode every entry's header
    return h.max_timestamp if isinstance(h, rb.BatchHeader) else h.timestamp


@dataclass
class _Walk:
    """What a walk of a segment from one position meets, as a walk that stops at a broken entry
    sees it (``LogFileWalk``, header mode, CRC checked): the entries' marks, the last offset, the
    largest timestamp, and how it ends (``corrupt`` with the ``error`` of the broken entry)."""

    count: int = 0
    last: int | None = None
    max_ts: int | None = None
    hints: set[str] = field(default_factory=set)
    magics: set[int] = field(default_factory=set)
    codecs: set[str] = field(default_factory=set)
    error: MqError | None = None
    end: str | None = None
    #: where the next entry of the walk starts (an entry elsewhere belongs to another walk)
    next_position: int | None = None

    def add(self, scanned: km.ScannedEntry) -> bool:
        """One entry of the walk; False when it stops the walk (it does not decode)."""
        if self.end is not None:
            return False
        try:
            if scanned.entry is None:
                assert scanned.error is not None  # a broken frame comes with its error
                raise scanned.error
            entry = scanned.decoded("header", check_crc=True)
        except MqError as exc:
            self.error, self.end = exc, "corrupt"
            return False
        _note(entry, self.hints, self.magics, self.codecs)
        self.count += 1
        self.last = entry.last_offset
        ts = _max_timestamp(entry)
        self.max_ts = ts if self.max_ts is None else max(self.max_ts, ts)
        self.next_position = scanned.position + entry.size
        return True


@dataclass
class _Ends:
    """What info takes of one partition from the store model's reading: its first entry, decoded
    (the first offset and timestamp), and its active segment (the last one holding bytes) walked
    from its last ``.index`` entry on, where the broker's recovery would look -- else, when no
    entry starts there, from its start."""

    first_log: str | None
    active_log: str | None
    index_position: int = 0
    first: tuple[int | None, int | None] | None = None
    first_hints: set[str] = field(default_factory=set)
    from_start: _Walk = field(default_factory=_Walk)
    from_index: _Walk | None = None
    first_error: MqError | None = None
    active_error: MqError | None = None

    def entry(self, scanned: km.ScannedEntry) -> None:
        log = scanned.task.log
        if log == self.first_log and self.first is None and not scanned.resumed:
            self.first = (None, None)
            if scanned.entry is not None:
                try:
                    entry = scanned.decoded("full", check_crc=False)
                except MqError:
                    pass  # the first entry does not decode: no first record
                else:
                    _note(entry, self.first_hints)
                    records = entry.records or ()
                    self.first = (records[0].offset, records[0].timestamp) if records else (entry.offset, None)
        if log != self.active_log:
            return
        if not scanned.resumed:
            self.from_start.add(scanned)
        if not self.index_position:
            return
        walk = self.from_index
        if walk is None:
            if scanned.position == self.index_position:
                self.from_index = walk = _Walk()
                walk.add(scanned)
        elif walk.end is None:
            if scanned.position != walk.next_position:
                walk.end = "zeros"  # its walk ended in zeros that other data follows
            else:
                walk.add(scanned)

    def read(self, item: km.SegmentRead) -> None:
        log = item.task.log
        if log == self.first_log and self.first is None:
            self.first = (None, None)
            self.first_error = item.io_error
        if log != self.active_log:
            return
        self.active_error = item.io_error
        if item.first_walk is not None and item.first_walk.end is not None and self.from_start.end is None:
            self.from_start.end = item.first_walk.end.kind
        walk = self.from_index
        if walk is not None and walk.end is None and item.last_walk is not None and item.last_walk.end is not None:
            walk.end = item.last_walk.end.kind

    def active(self) -> _Walk:
        """The walk from the last index entry, or from the start when no entry starts there."""
        return self.from_index if self.from_index is not None and self.from_index.count else self.from_start


def _ends(part: ks.KafkaPartition) -> _Ends:
    """Which segments of ``part`` info reads the ends of, and where its active segment's last
    ``.index`` entry points."""
    segments = part.log_segments()
    holding = [s for s in segments if s.log_size]
    first = holding[0] if holding else None
    active = holding[-1] if holding else (segments[0] if segments else None)
    ends = _Ends(str(first.log) if first is not None else None, str(active.log) if active is not None else None)
    if active is not None:
        try:
            entry, slot = ks.lookup_offset(active.index, active.base_offset, 2**63 - 1)
            ends.index_position = entry.position if slot >= 0 else 0
        except MqError:
            ends.index_position = 0
        if ends.index_position >= active.log_size:
            ends.index_position = 0
    return ends


def _partition_info(part: ks.KafkaPartition, ends: _Ends, checkpoints: Checkpoints, hints: set[str], problems: list[str], errors: list[MqError]) -> PartitionInfo:
    segments = part.log_segments()
    log_bytes = sum(s.log_size for s in segments)
    index_bytes = sum(s.index_size + s.timeindex_size + s.txnindex_size for s in part.segments)
    first_ts = None
    for exc in (ends.first_error, ends.active_error):
        if exc is not None:
            if isinstance(exc, StoreIOError):  # unreadable files are problems
                problems.append(str(exc))
            else:  # damage
                errors.append(exc)
    if ends.first is not None:
        hints |= ends.first_hints
        _offset, first_ts = ends.first
    magics: set[int] = set()
    codecs: set[str] = set()
    last_offset = max_ts = None
    end_kind = None
    if ends.active_error is None:
        walk = ends.active()
        hints |= walk.hints
        magics, codecs = walk.magics, walk.codecs
        last_offset, max_ts, end_kind = walk.last, walk.max_ts, walk.end
        if walk.error is not None:
            errors.append(walk.error)
    for seg in segments:
        try:
            entry = ks.last_time_entry(seg.timeindex, seg.base_offset)
        except MqError:
            continue
        if last_offset is not None and entry.offset > last_offset:
            continue  # an entry for data past the valid end (a torn tail): recovery drops it
        if entry.timestamp >= 0:
            max_ts = entry.timestamp if max_ts is None else max(max_ts, entry.timestamp)
    log_end = None
    if segments:
        log_end = last_offset + 1 if last_offset is not None else segments[-1].base_offset
    log_start = segments[0].base_offset if segments else None
    key = part.key if part.suffix is None else None  # the log-dir checkpoints belong to the live partition dir
    lso_cp = checkpoints.get(cpf.LOG_START_OFFSET_CHECKPOINT, {}).get(key) if key else None
    if log_start is not None and lso_cp is not None:
        log_start = max(log_start, lso_cp)
    epochs = _read(part.leader_epoch_checkpoint, cpf.decode_leader_epoch_checkpoint, problems)
    metadata = _read(part.partition_metadata, cpf.decode_partition_metadata, problems)
    if part.partition_metadata is not None:
        hints.add("2.8.0+ (partition.metadata: topic ids)")
    if part.leader_epoch_checkpoint is not None:
        hints.add("0.11.0+ (leader-epoch-checkpoint)")
    return PartitionInfo(
        directory=part.name,
        topic=part.topic,
        partition=part.partition,
        state=part.suffix or "live",
        internal=part.internal_topic is not None,
        segments=len(segments),
        log_bytes=log_bytes,
        index_bytes=index_bytes,
        log_start_offset=log_start,
        log_end_offset=log_end,
        offsets=(log_end - log_start) if log_end is not None and log_start is not None else None,
        first_timestamp=first_ts if first_ts is not None and first_ts >= 0 else None,
        max_timestamp=max_ts if max_ts is not None and max_ts >= 0 else None,
        magic=sorted(magics),
        compression=sorted(codecs),
        end_kind=end_kind,
        leader_epoch=epochs.entries[-1].epoch if epochs and epochs.entries else None,
        topic_id=metadata.topic_id if metadata else None,
        recovery_point=checkpoints.get(cpf.RECOVERY_POINT_OFFSET_CHECKPOINT, {}).get(key) if key else None,
        high_watermark=checkpoints.get(cpf.REPLICATION_OFFSET_CHECKPOINT, {}).get(key) if key else None,
        log_start_checkpoint=lso_cp,
        cleaner_offset=checkpoints.get(cpf.CLEANER_OFFSET_CHECKPOINT, {}).get(key) if key else None,
        producer_snapshots=len(part.snapshots),
    )


def _model_reading(store: ks.KafkaStore, ends: dict[str, _Ends]) -> tuple[list[Finding], dict[tuple[str, int], kb.SegmentRead], kb.Stopwatch]:
    """The store model's reading of the log (``log_findings.LOG`` families), once: its findings,
    what each segment's recovery reads (size, valid end, records) and how fast it was read; each
    partition's first entry and active segment (``ends``, by partition directory) from its entries."""
    import time

    found: list[Finding] = []
    reads: dict[tuple[str, int], kb.SegmentRead] = {}
    watch = kb.Stopwatch()
    items = km.read_store_entries(store, km.EntryDecode(mode="framing"), checks=log_findings.LOG)
    started = time.perf_counter()
    while True:
        item = next(items, None)
        if item is None:
            break
        if isinstance(item, km.ScannedEntry):
            mine = ends.get(item.task.partition)
            if mine is not None and not item.task.kraft_snapshot:
                mine.entry(item)
        elif isinstance(item, km.Placed):
            if item.finding.family in log_findings.LOG:
                found.append(item.finding)
        elif isinstance(item, km.SegmentRead):
            res = item.result
            found.extend(f for f in res.findings if f.family in log_findings.LOG)
            mine = ends.get(item.task.partition) if isinstance(item.task, km.SegmentTask) else None
            if mine is not None:
                mine.read(item)
            if item.counted:
                watch.time(res.size, started)
                reads[(Path(res.partition).name, res.base_offset)] = kb.SegmentRead(res.size, res.valid_end, res.records)
        if not isinstance(item, km.ScannedEntry):  # a segment's time runs from its first entry to its end
            started = time.perf_counter()
    return found, reads, watch


def kafka_info(path: str | Path, *, broker_version: str | None = None) -> KafkaInfo:
    """``broker_version``: the Kafka version whose restart ``restart`` previews (``--broker-version``)."""
    store = ks.open_kafka(path)
    broker = kb.resolve_broker(store, broker_version)
    hints: set[str] = set()
    problems: list[str] = []
    checkpoints: Checkpoints = {}
    checkpoint_files: list[CheckpointFileDoc] = []
    meta_doc: MetaPropertiesDoc | None = None
    mode = None
    shutdown = "unknown (no log dir)"
    broker_epoch = None
    lock_pid = None
    if store.log_dir is not None:
        for name in cpf.OFFSET_CHECKPOINT_FILES:
            p = store.log_dir_file(name)
            cp = _read(p, cpf.decode_offset_checkpoint, problems)
            if cp is not None:
                checkpoints[name] = cp.as_dict()
            checkpoint_files.append({"name": name, "present": p is not None, "entries": len(cp.entries) if cp is not None else None})
        meta = _read(store.log_dir_file(cpf.META_PROPERTIES), cpf.decode_meta_properties, problems)
        if meta is not None:
            mode = "KRaft" if meta.version == 1 else "ZooKeeper"
            meta_doc = {"version": meta.version, "node_id": meta.node_id, "cluster_id": meta.cluster_id, "directory_id": meta.directory_id}
            hints.add("KRaft mode (meta.properties version 1)" if meta.version == 1 else "ZooKeeper mode (meta.properties version 0)")
            if meta.directory_id is not None:
                hints.add("3.7.0+ (directory.id in meta.properties)")
        clean_path = store.log_dir_file(cpf.CLEAN_SHUTDOWN)
        if clean_path is not None:
            clean = _read(clean_path, cpf.decode_clean_shutdown, problems)
            shutdown = "clean (.kafka_cleanshutdown present)"
            if clean is not None and clean.version is not None:
                broker_epoch = clean.broker_epoch
                hints.add("3.7.0+ (.kafka_cleanshutdown holds the broker epoch)")
        else:
            shutdown = "unclean or running (no .kafka_cleanshutdown): recovery runs at start"
        lock_pid = probe_record_lock(store.log_dir / ks.LOCK_FILE)
        if store.log_dir_file(ks.BOOTSTRAP_CHECKPOINT) is not None:
            hints.add("KRaft controller (bootstrap.checkpoint)")
    ends = {str(part.path): _ends(part) for part in store.partitions}
    found, reads, watch = _model_reading(store, ends)
    partitions = []
    errors: list[MqError] = []
    for part in store.partitions:
        partitions.append(_partition_info(part, ends[str(part.path)], checkpoints, hints, problems, errors))
        if part.topic == ks.CLUSTER_METADATA:
            hints.add("KRaft metadata log (__cluster_metadata)")
            if part.quorum_state is not None:
                _read(part.quorum_state, lambda raw: json.loads(raw.decode("utf-8")), problems)
        if part.suffix == "stray":
            hints.add("3.7.0+ (a -stray partition dir)")
    leftovers = [str(p) for p in store.leftovers] + [str(p) for part in store.partitions for p in part.leftovers]
    totals = {
        "partitions": len(partitions),
        "segments": sum(p.segments for p in partitions),
        "log_bytes": sum(p.log_bytes for p in partitions),
        "index_bytes": sum(p.index_bytes for p in partitions),
    }
    problems, texts, met = log_findings.merged(path, "kafka", problems, errors, found=log_findings.select(found))
    restart = None
    if store.kind != "segment":
        restart = kb.restart_preview(store, broker, lambda part, seg: reads.get((part.name, seg.base_offset)), watch.device_speed(store.root))
    return KafkaInfo(
        layout="kafka",
        root=str(store.root),
        kind=store.kind,
        log_dir=str(store.log_dir) if store.log_dir is not None else None,
        version_hints=sorted(hints),
        mode=mode,
        meta_properties=meta_doc,
        shutdown=shutdown,
        broker_epoch=broker_epoch,
        broker_lock_pid=lock_pid,
        checkpoint_files=checkpoint_files,
        totals=totals,
        partitions=partitions,
        leftovers=leftovers,
        problems=problems,
        errors=texts,
        findings=[f.to_dict() for f in met],
        restart=restart,
    )
