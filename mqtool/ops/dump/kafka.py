"""dump for Kafka: log segments (batches and records), indexes, producer snapshots, checkpoints.

Every engine streams: ``.log`` files are read in bounded chunks by the store model (its reading,
``store.model.kafka.read_store_entries``, or for a dump it does not serve -- ``--max-bytes``,
``--from-offset``, ``--no-crc`` -- ``store.model.kafka_reads.log_walk``), index files entry by entry;
the model also decodes an entry's records (``kafka_reads.entry_records``) and frames healthy batches'
records as columns (``kafka_reads.frame_batch_records``), from which the dump builds its rows.  What ``kafka-dump-log`` prints is here as data (``BatchInfo``,
``RecordInfo``...): the CLI only presents it.  A broken entry does not end the dump when its
framing is intact (a CRC mismatch is shown as ``is_valid: false``, as kafka-dump-log does); a
broken framing ends the walk of that file; both are collected in ``problems``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np

from mqtool.errors import CorruptDataError, MqError, StoreLayoutError, UnsupportedFormatError
from mqtool.findings import Finding
from mqtool.formats import data_end
from mqtool.formats import segment_names as segnames
from mqtool.formats.checksums import crc32, crc32c
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import compression
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import internal_topics as it
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import record_columns as rcol
from mqtool.formats.kafka import snapshot as ksnap
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.formats.kafka.legacy import LegacyRecord
from mqtool.formats.kafka.log import DataEnd, LogEntry, LogRecord
from mqtool.ops import log_findings
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, check_path, is_regular_file, read_small_file
from mqtool.store.model import kafka as km
from mqtool.store.model import kafka_reads as kr

Decoder = Literal["auto", "none", "offsets", "transaction-log", "metadata"]
DECODERS = ("offsets", "transaction-log", "metadata")
_AUTO = {ks.CONSUMER_OFFSETS: "offsets", ks.TRANSACTION_STATE: "transaction-log", ks.CLUSTER_METADATA: "metadata"}


# --- targets -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogTarget:
    """One log-format file to dump and what is known about it."""

    path: Path
    base_offset: int
    partition: ks.KafkaPartition | None
    segment: ks.KafkaSegment | None
    kind: str = "log"  # log, kraft-snapshot, bootstrap

    @property
    def topic(self) -> str | None:
        return self.partition.topic if self.partition is not None else None

    @property
    def partition_id(self) -> int | None:
        """The partition number (``None`` for a lone segment or a directory that names none)."""
        return self.partition.partition if self.partition is not None and self.partition.topic is not None else None


def _select(store: ks.KafkaStore, topic: str | None, partition: int | None) -> list[ks.KafkaPartition]:
    """The partitions ``--topic``/``--partition`` pick; none is an error (a typo printed nothing
    and exited 0), naming the topics there are."""
    parts = [p for p in store.partitions if (topic is None or p.topic == topic) and (partition is None or p.partition == partition)]
    if not parts and (topic is not None or partition is not None):
        wanted = f"{topic if topic is not None else '<any topic>'}-{partition if partition is not None else '<any partition>'}"
        topics = sorted({p.topic for p in store.partitions if p.topic is not None})
        raise StoreLayoutError(
            path=store.root,
            expected=f"partition {wanted}",
            found=f"topics {', '.join(topics[:12])}{' ...' if len(topics) > 12 else ''}" if topics else "no partition",
        )
    return parts


_KINDS = {"log": ".log", "index": ".index", "timeindex": ".timeindex", "txnindex": ".txnindex", "snapshot": ".snapshot"}
_LEFTOVERS = (".deleted", ".cleaned", ".swap", ".tmp")


def _refuse_other_kind(path: Path, kind: str) -> None:
    """A file named as another Kafka file kind (``dump kafka-timeindex X.index``) would be read
    as this kind and give made-up rows: refuse it.  Names with no known suffix (carved files)
    are read as asked."""
    name = path.name
    for leftover in _LEFTOVERS:
        if name.endswith(leftover):
            name = name[: -len(leftover)]
    found = next((k for k, ext in _KINDS.items() if name.endswith(ext)), None)
    if found is not None and found != kind:
        raise StoreLayoutError(path=path, expected=f"a {_KINDS[kind]} file", found=f"a {_KINDS[found]} file (use `mqtool dump kafka-{found}`)")


def log_targets(path: Path, *, topic: str | None = None, partition: int | None = None) -> list[LogTarget]:
    """``.log`` files for PATH: a log dir, a partition dir, or one file (any log-format file:
    a segment, a carved record set, a KRaft ``.checkpoint`` snapshot, ``bootstrap.checkpoint``)."""
    path = Path(path)
    check_path(path)
    if is_regular_file(path):
        _refuse_other_kind(path, "log")
        ks.refuse_kafka_07(path)
        part = ks.lone_segment(path)
        kind = "bootstrap" if path.name == ks.BOOTSTRAP_CHECKPOINT else "kraft-snapshot" if segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match(path.name) else "log"
        seg = part.segments[0]
        return [LogTarget(path, seg.base_offset, part, seg, kind)]
    store = ks.open_kafka(path)
    targets = []
    for part in _select(store, topic, partition):
        for seg in part.log_segments():
            assert seg.log is not None  # log_segments() are the segments with a .log
            targets.append(LogTarget(seg.log, seg.base_offset, part, seg))
    return targets


def findings_on_path(path: Path, *, topic: str | None = None, partition: int | None = None, families: frozenset[str] = log_findings.LOG) -> list[Finding]:
    """validate's errors and warnings in the partitions a reader of PATH (with ``--topic`` /
    ``--partition``) reads, or in the one file PATH, with validate's codes and positions
    (``ops.log_findings``) -- a partition whose segments are all gone included."""
    path = Path(path)
    if is_regular_file(path):
        return log_findings.on_path(path, "kafka", [path], families=families)
    parts = _select(ks.open_kafka(path), topic, partition)
    return log_findings.on_path(path, "kafka", [p.path for p in parts], families=families) if parts else []


def decoder_for(target: LogTarget, choice: Decoder) -> str | None:
    if choice == "none":
        return None
    if choice != "auto":
        return choice
    if target.kind in ("kraft-snapshot", "bootstrap"):
        return "metadata"
    return _AUTO.get(target.topic or "")


class _ScannedWalk:
    """One ``.log`` of the model's reading, walked as ``kafka_reads.log_walk`` walks it: the entries up to the first broken one, each kept despite a
    failing CRC listed in ``damaged``, then the end or the error, from the entries the model
    yields as it judges them (``read_store_entries``)."""

    limited = False

    def __init__(self, reading: ModelReading, log: str) -> None:
        self.reading = reading
        self.log = log
        self.buffer: bytes = b""
        self.buffer_start = 0
        self.damaged: dict[int, MqError] = {}
        self.count = 0
        self.error: MqError | None = None
        self.failed_at: int | None = None
        self.end: DataEnd | None = None

    @property
    def valid_end(self) -> int:
        if self.end is not None:
            return self.end.position
        return self.failed_at if self.failed_at is not None else 0

    def finding_code(self, position: int) -> str | None:
        exc = self.damaged.get(position)
        return ks.entry_error_code(exc) if exc is not None else None

    def __iter__(self) -> Iterator[tuple[int, LogEntry]]:
        for item in self.reading.until(self.log):
            if item.resumed or self.error is not None:
                continue
            if item.entry is None:  # a broken entry: the walk stops here (the model reads on)
                self.error, self.failed_at = item.error, item.position
                continue
            self.buffer, self.buffer_start = item.buffer, item.position - item.rel
            if item.error is not None:
                self.damaged[item.position] = item.error
            self.count += 1
            yield item.position, item.entry
        read = self.reading.last
        assert read is not None and read.task.log == self.log  # the reading's segment of this file
        first = read.first_walk
        if self.error is None and first is not None:
            self.error, self.failed_at, self.end = first.error, first.failed_at, first.end


#: A ``.log``'s walk as the dump consumes it: the model's walk of the file alone, or through its reading.
Walk = kr.EntryWalk


class ModelReading:
    """The store model's reading of the partitions a dump reads (``model_reading``), consumed as
    the dump's walk of each file (``walk``), so the rows and validate's findings on them come
    from one reading of each log byte."""

    def __init__(self, store: ks.KafkaStore, within: list[str], logs: list[str], *, partitions: list[str] | None = None) -> None:
        self.items = km.read_store_entries(store, km.EntryDecode("header", True), checks=log_findings.LOG, partitions=partitions)
        self.within = within
        self.found: list[Finding] = []
        self.last: km.SegmentRead | None = None
        #: the dump's files not yet walked to their end
        self.left = set(logs)

    def walk(self, log: str) -> _ScannedWalk:
        """The walk of ``log``: its entries are the next ones of the reading (the dump's files come
        in the reading's order)."""
        return _ScannedWalk(self, log)

    def until(self, log: str) -> Iterator[km.ScannedEntry]:
        """The reading's entries of ``log`` up to its ``SegmentRead`` (kept in ``last``), the
        findings of everything read on the way collected."""
        for item in self.items:
            if isinstance(item, km.ScannedEntry):
                if item.task.log == log:
                    yield item
            elif isinstance(item, km.Placed):
                self.found.append(item.finding)
            elif isinstance(item, km.SegmentRead):
                self.found.extend(item.result.findings)
                if item.task.log == log:
                    self.last = item
                    self.left.discard(log)
                    return
        raise AssertionError(f"{log} is not in the model's reading")  # the dump's files are the reading's

    def findings(self) -> list[Finding]:
        """validate's errors and warnings on what the dump read (``findings_on_path``'s on the
        partitions read): when the dump walked each of its files to the end, the reading read to
        its end first (what is left: other segments' and the partitions' small files); when it
        stopped early (``--limit``), the reading stops there too (``EntryReading.stop``: what the
        model states about the bytes read), so a dump reads only what it shows."""
        if self.left:
            self.found.extend(p.finding for p in self.items.stop())
            return log_findings.select(self.found, self.within)
        for item in self.items:
            if isinstance(item, km.Placed):
                self.found.append(item.finding)
            elif isinstance(item, km.SegmentRead):
                self.found.extend(item.result.findings)
        return log_findings.select(self.found, self.within)


def model_reading(path: Path, options: LogDumpOptions, targets: list[LogTarget], *, topic: str | None = None, partition: int | None = None) -> ModelReading | None:
    """The store model's reading of PATH (a log dir, a partition dir or a segment) for a dump
    that reads each of its ``.log`` files whole with validate's checks (no ``--max-bytes``,
    ``--from-offset`` or ``--no-crc``): the dump walks ``targets`` through it.  None when the
    dump walks the files itself: those options, a file the model does not read as a segment (a
    carved record set, a KRaft snapshot), or files the reading does not hold in the dump's order."""
    path = Path(path)
    if not targets or options.max_bytes is not None or options.from_offset is not None or not options.check_crc:
        return None
    try:
        store = ks.open_kafka(path)
        within = [str(path)] if is_regular_file(path) else [str(p.path) for p in _select(store, topic, partition)]
    except StoreLayoutError:
        return None
    wanted = [str(t.path) for t in targets]
    held = {str(seg.log) for part in store.partitions for seg in part.log_segments()}
    in_order = [str(seg.log) for part in store.partitions for seg in part.log_segments() if str(seg.log) in set(wanted)]
    if in_order != wanted or not set(wanted) <= held:
        return None
    # the partitions chosen (--topic, --partition) are read, not the rest of the log dir
    return ModelReading(store, within, wanted, partitions=None if is_regular_file(path) else within)


# --- what a row holds ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchInfo:
    """One entry as ``kafka-dump-log`` prints it (v2 batch or v0/v1 message)."""

    file: Path
    position: int
    magic: int
    base_offset: int | None  # None for a v0/v1 wrapper (its first inner offset needs decompression)
    last_offset: int
    count: int | None
    base_sequence: int
    last_sequence: int
    producer_id: int
    producer_epoch: int
    partition_leader_epoch: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    timestamp_type: str
    max_timestamp: int
    base_timestamp: int | None
    size: int
    compresscodec: str
    attributes: int
    crc: int
    computed_crc: int

    @property
    def is_valid(self) -> bool:
        return self.crc == self.computed_crc


@dataclass(frozen=True)
class RecordInfo:
    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    sequence: int
    #: control records: ``{"type": "COMMIT", ...}``; decoded internal-topic records:
    #: ``{"key": obj, "value": obj}`` (dataclasses, None for a tombstone) or ``{"error": str}``
    control: object | None = None
    decoded: dict[str, object] | None = None
    #: a v0/v1 message's stored CRC-32 and whether it holds (``LogRecord.crc``, ``is_valid``), as
    #: kafka-dump-log prints them for every such record; None for a v2 record
    crc: int | None = None
    is_valid: bool | None = None


@dataclass(frozen=True)
class DumpItem:
    target: LogTarget
    batch: BatchInfo
    records: tuple[RecordInfo, ...] | None = None  # deep iteration
    records_error: str | None = None
    #: the code of the finding validate states about an entry the walk kept despite damage that
    #: leaves its frame intact (``kafka_reads.EntryWalk.finding_code``: KAFKA-LOG-CRC); None when healthy
    finding: str | None = None


@dataclass(frozen=True)
class FileDumped:
    """How the dump's walk of one ``.log`` of ``size`` bytes ended, after ``entries`` entries:
    ``end`` is where its valid entries stop -- ``eof``, ``zeros``, ``partial``; ``broken`` with the
    located error of the entry it stopped at; ``stop`` where ``--max-bytes`` stopped it before the
    end of the file."""

    path: Path
    entries: int
    size: int
    end: data_end.DataEnd[str]


def batch_info(path: Path, position: int, entry: LogEntry, raw: bytes | memoryview, rel: int, *, checked: bool = False) -> BatchInfo:
    """The fields kafka-dump-log prints of the entry at ``raw[rel:]``; ``checked``: the walk has
    verified its CRC already (the stored CRC is the computed one, not computed again)."""
    h = entry.header
    if isinstance(h, rb.BatchHeader):
        computed = h.crc if checked else crc32c(memoryview(raw)[rel + rb.ATTRIBUTES_POSITION : rel + h.size])
        codec = compression.CODEC_NAMES.get(h.compression_type, f"unknown({h.compression_type})")
        return BatchInfo(
            path,
            position,
            2,
            h.base_offset,
            h.last_offset,
            h.records_count,
            h.base_sequence,
            h.last_sequence,
            h.producer_id,
            h.producer_epoch,
            h.partition_leader_epoch,
            h.is_transactional,
            h.is_control_batch,
            h.delete_horizon_ms,
            h.timestamp_type_name,
            h.max_timestamp,
            h.base_timestamp,
            h.size,
            codec,
            h.attributes,
            h.crc,
            computed,
        )
    assert isinstance(h, LegacyRecord)
    computed = h.crc if checked else crc32(memoryview(raw)[rel + 16 : rel + entry.size])
    codec = compression.CODEC_NAMES.get(h.compression_type, f"unknown({h.compression_type})")
    return BatchInfo(
        path,
        position,
        h.magic,
        None if h.is_compressed else h.offset,
        h.offset,
        None if h.is_compressed else 1,
        -1,
        -1,
        -1,
        -1,
        -1,
        False,
        False,
        None,
        h.timestamp_type_name,
        h.timestamp,
        None,
        entry.size,
        codec,
        h.attributes,
        h.crc,
        computed,
    )


def _control_of(record: rb.Record) -> object:
    try:
        key, value = rb.decode_control_record(record)
    except MqError as exc:
        return {"error": str(exc)}
    return {"type": key.type_name, "version": key.version, "value": value}


def decode_internal(decoder: str | None, key: bytes | None, value: bytes | None) -> dict[str, object] | None:
    """The key and value of an internal-topic record as data (``{"error": ...}`` if they do not decode)."""
    if decoder is None:
        return None
    try:
        if decoder == "offsets":
            k, v = it.decode_consumer_offsets_record(key, value)
            return {"key": k, "value": v}
        if decoder == "transaction-log":
            txn_key = it.decode_transaction_log_key(key)
            return {"key": txn_key, "value": it.decode_transaction_log_value(value) if value is not None else None}
        if decoder == "metadata":
            record = it.decode_metadata_record(value)
            payload = it.decode_metadata_payload(record)
            return {"key": None, "value": record, "payload": payload if not isinstance(payload, bytes) else None}
    except MqError as exc:
        return {"error": str(exc)}
    raise ValueError(f"unknown decoder {decoder!r}")


# --- the log dump ----------------------------------------------------------------------------------


@dataclass
class LogDumpOptions:
    deep: bool = False
    from_offset: int | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    max_bytes: int | None = None
    check_crc: bool = True
    decoder: Decoder = "auto"
    max_decompressed_size: int = compression.DEFAULT_MAX_DECOMPRESSED_SIZE


@dataclass
class LogDump:
    """Iterate the entries (and with ``deep`` the records) of ``.log`` files in order."""

    targets: list[LogTarget]
    options: LogDumpOptions = field(default_factory=LogDumpOptions)
    problems: list[MqError] = field(default_factory=list)
    ends: list[FileDumped] = field(default_factory=list)
    bytes_done: int = 0
    #: the store model's reading the files are walked through (``model_reading``), or None: each
    #: file is walked on its own (and the findings are another reading: ``findings_on_path``)
    reading: ModelReading | None = None

    @property
    def total_bytes(self) -> int:
        return sum(t.path.stat().st_size for t in self.targets if t.path.exists())

    def _start_position(self, target: LogTarget) -> int:
        """With ``from_offset``: the ``.index`` entry at or below it (``OffsetIndex.lookup``)."""
        opts = self.options
        if opts.from_offset is None or target.segment is None or not target.segment.named:
            return 0
        try:
            entry, _slot = ks.lookup_offset(target.segment.index, target.base_offset, opts.from_offset)
        except MqError:
            return 0
        return entry.position

    def _skip_target(self, i: int, target: LogTarget) -> bool:
        start = self.options.from_offset
        if start is None or target.kind != "log":
            return False
        nxt = self.targets[i + 1] if i + 1 < len(self.targets) else None
        if nxt is None or nxt.partition is not target.partition or nxt.segment is None or not nxt.segment.named:
            return False  # not a next segment of the same partition
        return nxt.base_offset <= start

    def __iter__(self) -> Iterator[DumpItem]:
        for target, walk, size in self._walks():
            yield from self._walk(target, walk, size)

    def _walks(self) -> Iterator[tuple[LogTarget, Walk, int]]:
        """Each target's walk and its file's size, ``bytes_done`` counted after the consumer is
        done with it: the store's walk of the file, or the model's reading of it (``reading``)."""
        for i, target in enumerate(self.targets):
            if self._skip_target(i, target):
                self.bytes_done += target.segment.log_size if target.segment else 0
                continue
            try:
                f = ReadOnlyFile(target.path)
            except MqError as exc:
                self.problems.append(exc)
                continue
            if self.reading is not None:
                f.close()  # opened to tell an unreadable file as before (and its size); the model reads it
                yield target, self.reading.walk(str(target.path)), f.size
                self.bytes_done += f.size
                continue
            with f:
                yield target, self._log_walk(f, self._start_position(target)), f.size
                self.bytes_done += f.size

    def _walk(self, target: LogTarget, walk: Walk, size: int) -> Iterator[DumpItem]:
        opts = self.options
        decoder = decoder_for(target, opts.decoder)
        for pos, entry in walk:
            rel = pos - walk.buffer_start
            info = batch_info(target.path, pos, entry, walk.buffer, rel, checked=opts.check_crc and pos not in walk.damaged)
            item = self._precise(target, pos, entry, info, walk.buffer, rel, decoder, walk)
            if item is not None:
                yield item
        self._file_end(target, size, walk)

    def _log_walk(self, f: ReadOnlyFile, start: int) -> Walk:
        """The model's walk of one ``.log`` on its own: it checks each entry's CRC (unless
        ``--no-crc``) and keeps an entry whose CRC fails but whose frame holds, as kafka-dump-log
        lists it."""
        opts = self.options
        return kr.log_walk(f, start, check_crc=opts.check_crc, limit=opts.max_bytes)

    def findings(self, path: Path, *, topic: str | None = None, partition: int | None = None) -> list[Finding]:
        """validate's errors and warnings on what was read (``findings_on_path``): from the
        model's reading the dump walked through (read to its end first, when the dump stopped
        early), else from a reading of their own."""
        if self.reading is not None:
            return self.reading.findings()
        return findings_on_path(path, topic=topic, partition=partition)

    # --- the lean reading: healthy batches' records as columns ---------------------------------

    def lean(self) -> Iterator[DumpItem | RecordRun]:
        """The same items as iterating, with the same ``problems``, ``ends`` and ``bytes_done``,
        but consecutive healthy v2 batches (valid CRC, no control records, no internal-topic
        decoder, records that ``record_columns`` frames) come as ``RecordRun``: their records as
        columns.  Every other batch (and what is around damage) is a ``DumpItem`` of the precise
        reading.  Side effects happen in the order the precise reading has them: a run is yielded
        before the problems of the entry after it are recorded and before its file's end is, so
        a reader that stops early (``--limit``) leaves the same state."""
        for target, walk, size in self._walks():
            yield from self._walk_lean(target, walk, size)

    def _walk_lean(self, target: LogTarget, walk: Walk, size: int) -> Iterator[DumpItem | RecordRun]:
        opts = self.options
        decoder = decoder_for(target, opts.decoder)
        if not opts.deep or decoder is not None:
            yield from self._walk(target, walk, size)
            return
        run = _RunBuilder(target, opts)
        cap = min(FIRST_RUN_RECORDS, RUN_RECORDS)
        for pos, entry in walk:
            rel = pos - walk.buffer_start
            info = batch_info(target.path, pos, entry, walk.buffer, rel, checked=opts.check_crc and pos not in walk.damaged)
            h = entry.header
            if isinstance(h, rb.BatchHeader) and info.is_valid and not info.is_control:
                if opts.from_offset is not None and info.last_offset < opts.from_offset:
                    continue
                if not self._batch_in_time(info):
                    continue
                if run.add(pos, entry, info, walk.buffer, rel):
                    if len(run) >= cap:
                        yield from self._take(run, target, decoder, walk)
                        cap = min(2 * cap, RUN_RECORDS)
                    continue
            if run:
                yield from self._take(run, target, decoder, walk)
            # the precise reading of this entry, as ``_walk`` has it
            item = self._precise(target, pos, entry, info, walk.buffer, rel, decoder, walk)
            if item is not None:
                yield item
        if run:
            yield from self._take(run, target, decoder, walk)
        self._file_end(target, size, walk)

    def _take(self, run: _RunBuilder, target: LogTarget, decoder: str | None, walk: Walk) -> Iterator[DumpItem | RecordRun]:
        """The batches added to ``run`` since the last take: runs of the ones framed, and the
        precise reading of each one the column framer refused, in file order."""
        for part in run.take():
            if isinstance(part, RecordRun):
                yield part
                continue
            item = self._precise(target, part.position, part.entry, part.info, part.raw, 0, decoder, walk)
            if item is not None:
                yield item

    def _file_end(self, target: LogTarget, size: int, walk: Walk) -> None:
        """How the file's walk ended: its broken entry (a problem), or its end kind (``stop``
        where ``--max-bytes`` stopped it before the end of the file)."""
        if walk.error is not None:
            self.problems.append(walk.error)
            kind = "broken"
        else:
            assert walk.end is not None  # a walk stops at a broken entry or at its end
            kind = walk.end.kind
        if walk.end is not None and walk.limited and kind == "eof" and walk.end.position < size:
            kind = "stop"
        self.ends.append(FileDumped(target.path, walk.count, size, data_end.DataEnd(kind, walk.valid_end, error=walk.error)))

    def _precise(self, target: LogTarget, pos: int, entry: LogEntry, info: BatchInfo, buf: bytes, rel: int, decoder: str | None, walk: Walk) -> DumpItem | None:
        """The entry at ``pos`` read precisely: the damage the walk kept it despite (a problem, the
        walk's error; the item names its finding), the filters, and with ``--deep`` its records;
        None when a filter leaves it out."""
        opts = self.options
        damage = walk.damaged.get(pos)
        if damage is not None:
            self.problems.append(damage)
        finding = walk.finding_code(pos)
        if opts.from_offset is not None and info.last_offset < opts.from_offset:
            return None
        if not self._batch_in_time(info):
            return None
        if not opts.deep:
            return DumpItem(target, info, finding=finding)
        records, error, unsupported = self._records(target, entry, buf, rel, pos, decoder)
        if error is not None and damage is None:  # records of a damaged entry: the same damage
            # a codec that is not installed is no damage: exit 4 (unsupported), as validate's
            # KAFKA-LOG-UNSUPPORTED is a warning
            kind = UnsupportedFormatError if unsupported else CorruptDataError
            self.problems.append(kind(error, path=target.path, position=pos))
        return DumpItem(target, info, records, error, finding)

    def _batch_in_time(self, info: BatchInfo) -> bool:
        since, until = self.options.since_ms, self.options.until_ms
        if since is not None and info.max_timestamp < since:
            return False
        if until is not None:
            first = info.base_timestamp if info.base_timestamp is not None and info.delete_horizon_ms is None else info.max_timestamp
            if info.timestamp_type != "LogAppendTime" and first is not None and first > until and info.magic == 2:
                return False
            if info.magic < 2 and info.max_timestamp > until and info.base_offset is not None:
                return False
        return True

    def _records(self, target: LogTarget, entry: LogEntry, buf: bytes, rel: int, at: int, decoder: str | None) -> tuple[tuple[RecordInfo, ...] | None, str | None, bool]:
        """The records of the entry at ``buf[rel:]``, which is at ``at`` in its file (an error's
        byte is a file position, whatever piece of the file ``buf`` holds); else why not, and
        whether that is a codec not installed (no damage)."""
        opts = self.options
        try:
            logical, raw = kr.entry_records(target.path, at, entry, buf, rel, check_crc=opts.check_crc, max_size=opts.max_decompressed_size)
        except UnsupportedFormatError as exc:
            return None, f"records not decoded: {exc.reason}", True
        except MqError as exc:
            return None, f"records do not decode: {_plain(exc)}", False
        out: list[RecordInfo] = []
        for i, r in enumerate(logical):
            if opts.from_offset is not None and r.offset < opts.from_offset:
                continue
            if opts.since_ms is not None and r.timestamp < opts.since_ms:
                continue
            if opts.until_ms is not None and r.timestamp > opts.until_ms:
                continue
            out.append(record_info(r, raw[i] if raw is not None and r.is_control else None, decoder))
        return tuple(out), None, False


def _plain(exc: MqError) -> str:
    where = f"byte {exc.position}: " if exc.position is not None else ""
    return where + exc.reason


def record_info(r: LogRecord, raw: rb.Record | None, decoder: str | None) -> RecordInfo:
    control = _control_of(raw) if raw is not None else None
    decoded = None if r.is_control else decode_internal(decoder, r.key, r.value)
    return RecordInfo(
        r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple((h.key, h.value) for h in r.headers), r.sequence, control, decoded,
        r.crc, r.is_valid,
    )  # fmt: skip


#: Records of a ``RecordRun`` at most (the CLI writes a run's rows as one text).
RUN_RECORDS = 8192
#: Records of a file's first ``RecordRun`` at most; each next run may hold twice as many, up to
#: ``RUN_RECORDS``: a reader that stops early (``--limit``) reads little more than it shows.
FIRST_RUN_RECORDS = 64
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1


def _records_bytes(h: rb.BatchHeader, raw: bytes, max_size: int) -> bytes | memoryview | None:
    """The records of the batch ``raw`` (decompressed), or None where the precise reading decides
    (a codec missing or failing)."""
    records = memoryview(raw)[rb.RECORDS_POSITION :]
    codec = h.compression_type
    if codec == compression.NONE:
        return records
    try:
        compression.check_codec(codec, 0)
        return bytes(compression.decompress(codec, records, magic=rb.MAGIC_V2, max_size=max_size))
    except Exception:  # the precise reading names it (or fails the same way)
        return None


@dataclass(frozen=True)
class RecordRun:
    """Consecutive healthy v2 batches of one file and their records (those the record filters
    keep) as columns: what the precise reading gives as ``DumpItem``s with ``RecordInfo``s.

    ``counts[i]`` records belong to ``batches[i]``; keys, values and header keys and values are
    spans of ``data`` (the batches' records, decompressed, back to back), a length of -1 for
    null; a record's headers are the next ``header_count`` entries of the ``header_*`` columns.
    """

    target: LogTarget
    batches: tuple[BatchInfo, ...]
    counts: np.ndarray
    data: bytes
    offset: np.ndarray
    timestamp: np.ndarray
    sequence: np.ndarray
    key_at: np.ndarray
    key_len: np.ndarray
    value_at: np.ndarray
    value_len: np.ndarray
    header_count: np.ndarray
    header_key_at: np.ndarray
    header_key_len: np.ndarray
    header_value_at: np.ndarray
    header_value_len: np.ndarray

    def __len__(self) -> int:
        return len(self.offset)


_RECORD_COLUMNS = ("offset", "timestamp", "sequence", "key_at", "key_len", "value_at", "value_len", "header_count")
_HEADER_COLUMNS = ("header_key_at", "header_key_len", "header_value_at", "header_value_len")


@dataclass(frozen=True)
class _Pending:
    """A healthy v2 batch waiting in a ``_RunBuilder``: its entry, its bytes (``raw``, for the
    precise reading if the column framer refuses it) and its records' bytes, decompressed."""

    position: int
    entry: LogEntry
    info: BatchInfo
    raw: bytes
    records: bytes | memoryview


def _count(p: _Pending) -> int:
    h = p.entry.header
    assert isinstance(h, rb.BatchHeader)  # a run holds v2 batches
    return h.records_count


class _Columns(NamedTuple):
    """A take's records as columns (the record filters applied), the records each batch keeps,
    and where each batch's records (by batch) and each record's headers (by record) start."""

    columns: dict[str, np.ndarray]
    kept: np.ndarray
    record_start: np.ndarray
    header_start: np.ndarray


class _RunBuilder:
    """Collects healthy v2 batches and frames their records a run at a time
    (the model's ``kafka_reads.frame_batch_records``) into ``RecordRun``s: absolute offsets, timestamps and
    sequences as ``record_info`` has them, the record filters applied."""

    def __init__(self, target: LogTarget, options: LogDumpOptions) -> None:
        self.target = target
        self.options = options
        self.pending: list[_Pending] = []
        self.records = 0

    def __len__(self) -> int:
        return self.records

    def add(self, position: int, entry: LogEntry, info: BatchInfo, buf: bytes, rel: int) -> bool:
        """Add the batch at ``buf[rel:]``; False (nothing added) when its records cannot be had
        without the precise reading (a codec missing or failing)."""
        h = entry.header
        assert isinstance(h, rb.BatchHeader)
        raw = buf[rel : rel + h.size]
        records = _records_bytes(h, raw, self.options.max_decompressed_size)
        if records is None:
            return False
        self.pending.append(_Pending(position, entry, info, raw, records))
        self.records += h.records_count
        return True

    def take(self) -> list[RecordRun | _Pending]:
        """The batches added since the last ``take``, in order: runs of consecutive batches
        framed, and each batch the framer refused or whose numbers do not fit 64 bits (the
        precise reading has Python integers) on its own."""
        pending, self.pending, self.records = self.pending, [], 0
        starts, ends, counts = [], [], []
        at = 0
        for p in pending:
            starts.append(at)
            at += len(p.records)
            ends.append(at)
            counts.append(_count(p))
        data = b"".join(p.records for p in pending)
        accepted, c = kr.frame_batch_records(data, starts, ends, counts)
        framed = [p for p, ok in zip(pending, accepted) if ok]
        n = np.array([_count(p) for p in framed], dtype=np.int64)
        # 64-bit: each batch's base plus its smallest and largest delta (as Python integers)
        firsts = (np.cumsum(n) - n).tolist()
        od_min = np.minimum.reduceat(c.offset_delta, firsts).tolist() if len(n) else []
        od_max = np.maximum.reduceat(c.offset_delta, firsts).tolist() if len(n) else []
        td_min = np.minimum.reduceat(c.timestamp_delta, firsts).tolist() if len(n) else []
        td_max = np.maximum.reduceat(c.timestamp_delta, firsts).tolist() if len(n) else []
        fits = []
        for i, p in enumerate(framed):
            info = p.info
            base = info.base_offset
            assert base is not None
            ok = _INT64_MIN <= base + od_min[i] and base + od_max[i] <= _INT64_MAX
            if info.timestamp_type != "LogAppendTime":
                bts = info.base_timestamp
                assert bts is not None
                ok = ok and _INT64_MIN <= bts + td_min[i] and bts + td_max[i] <= _INT64_MAX
            fits.append(ok)
        if not all(fits):
            keep_batch = np.array(fits, dtype=bool)
            keep = np.repeat(keep_batch, n)
            keep_headers = np.repeat(keep, c.header_count)
            c = rcol.RecordColumns(*(getattr(c, name)[keep] for name in rcol.RECORD_FIELDS), *(getattr(c, name)[keep_headers] for name in rcol.HEADER_FIELDS))
            n = n[keep_batch]
            fitting = iter(fits)
            accepted = [ok and next(fitting) for ok in accepted]
            framed = [p for p, ok in zip(framed, fits) if ok]
        columns = self._columns(framed, n, c) if framed else None
        out: list[RecordRun | _Pending] = []
        group: list[int] = []  # indexes into framed of the batches of the run being gathered
        index = 0
        for p, ok in zip(pending, accepted):
            if ok:
                group.append(index)
                index += 1
                continue
            if group:
                assert columns is not None
                out.append(self._run(framed, group, columns, data))
                group = []
            out.append(p)
        if group:
            assert columns is not None
            out.append(self._run(framed, group, columns, data))
        return out

    def _columns(self, framed: list[_Pending], n: np.ndarray, c: rcol.RecordColumns) -> _Columns:
        """The run's columns (the record filters applied), the records each batch keeps, and where
        each batch's records and headers start in them."""
        infos = [p.info for p in framed]
        od = c.offset_delta
        base = np.repeat(np.array([i.base_offset for i in infos], dtype=np.int64), n)
        offset = od + base
        append_time = np.repeat(np.array([i.timestamp_type == "LogAppendTime" for i in infos], dtype=bool), n)
        base_ts = np.repeat(np.array([i.max_timestamp if i.timestamp_type == "LogAppendTime" else i.base_timestamp for i in infos], dtype=np.int64), n)
        # LogAppendTime: every record has the batch's max timestamp, whatever its delta
        timestamp = np.where(append_time, base_ts, c.timestamp_delta + np.where(append_time, 0, base_ts))
        base_seq = np.repeat(np.array([i.base_sequence for i in infos], dtype=np.int64), n)
        sequence = od + base_seq  # ``increment_sequence``: wraps past Integer.MAX_VALUE to 0
        sequence[sequence > _INT32_MAX] -= 1 << 31
        sequence[base_seq < 0] = rb.NO_SEQUENCE
        cols = {
            "offset": offset, "timestamp": timestamp, "sequence": sequence,
            "key_at": c.key_at, "key_len": c.key_len, "value_at": c.value_at, "value_len": c.value_len,
            "header_count": c.header_count, "header_key_at": c.header_key_at, "header_key_len": c.header_key_len,
            "header_value_at": c.header_value_at, "header_value_len": c.header_value_len,
        }  # fmt: skip
        opts = self.options
        keep = None
        if opts.from_offset is not None:
            keep = offset >= opts.from_offset
        if opts.since_ms is not None:
            keep = (timestamp >= opts.since_ms) if keep is None else keep & (timestamp >= opts.since_ms)
        if opts.until_ms is not None:
            keep = (timestamp <= opts.until_ms) if keep is None else keep & (timestamp <= opts.until_ms)
        owner = np.repeat(np.arange(len(n)), n)
        if keep is not None and not keep.all():
            kept_headers = np.repeat(keep, c.header_count)
            for name in _RECORD_COLUMNS:
                cols[name] = cols[name][keep]
            for name in _HEADER_COLUMNS:
                cols[name] = cols[name][kept_headers]
            owner = owner[keep]
        kept = np.bincount(owner, minlength=len(n)).astype(np.int64)
        record_start = np.concatenate(([0], np.cumsum(kept)))
        header_start = np.concatenate(([0], np.cumsum(cols["header_count"])))
        return _Columns(cols, kept, record_start, header_start)

    def _run(self, framed: list[_Pending], group: list[int], columns: _Columns, data: bytes) -> RecordRun:
        """The run of the framed batches ``group`` (consecutive)."""
        cols, kept, record_start, header_start = columns
        first, last = group[0], group[-1]
        r0, r1 = int(record_start[first]), int(record_start[last + 1])
        h0, h1 = int(header_start[r0]), int(header_start[r1])
        part = {name: cols[name][r0:r1] for name in _RECORD_COLUMNS} | {name: cols[name][h0:h1] for name in _HEADER_COLUMNS}
        return RecordRun(self.target, tuple(framed[i].info for i in group), kept[first : last + 1], data, **part)


# --- index families --------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexTarget:
    path: Path
    base_offset: int
    segment: ks.KafkaSegment | None


def index_targets(path: Path, kind: str, *, topic: str | None = None, partition: int | None = None) -> list[IndexTarget]:
    """Files of ``kind`` (index, timeindex, txnindex, snapshot) for PATH: a file, a partition dir
    or a log dir."""
    path = Path(path)
    check_path(path)
    if is_regular_file(path):
        _refuse_other_kind(path, kind)
        try:
            parsed = segnames.parse_kafka_file_name(path.name)
            base = parsed.base_offset
        except StoreLayoutError:
            base = 0
        seg = None
        if ks.parse_partition_name(path.parent.name) is not None:
            seg = next((s for s in ks.list_partition(path.parent).segments if s.base_offset == base), None)
        return [IndexTarget(path, base, seg)]
    store = ks.open_kafka(path)
    out: list[IndexTarget] = []
    for part in _select(store, topic, partition):
        if kind == "snapshot":
            out.extend(IndexTarget(s.path, s.offset, None) for s in part.snapshots)
            continue
        for seg in part.segments:
            p = getattr(seg, kind)
            if p is not None:
                out.append(IndexTarget(p, seg.base_offset, seg))
    return out


#: The entries of the index families (``.index``, ``.timeindex``, ``.txnindex``), named here for
#: the CLI, which reads ``IndexRow.entry`` and does not import ``formats``.
OffsetPosition = kidx.OffsetPosition
TimestampOffset = kidx.TimestampOffset
AbortedTxn = ktxn.AbortedTxn
IndexEntry = OffsetPosition | TimestampOffset | AbortedTxn


@dataclass(frozen=True)
class IndexRow:
    file: Path
    position: int
    number: int
    entry: IndexEntry  # OffsetPosition (.index), TimestampOffset (.timeindex) or AbortedTxn (.txnindex)
    relative_offset: int | None
    #: ``--verify``: how the entry relates to the log (see ``verify_offset_entry``)
    verify: dict[str, object] | None = None


@dataclass
class IndexDump:
    targets: list[IndexTarget]
    kind: Literal["index", "timeindex", "txnindex"]
    verify: bool = False
    problems: list[MqError] = field(default_factory=list)
    ends: list[tuple[Path, int, object]] = field(default_factory=list)  # (file, entries, DataEnd)
    mismatches: int = 0

    def __iter__(self) -> Iterator[IndexRow]:
        for target in self.targets:
            try:
                f = ReadOnlyFile(target.path)
            except MqError as exc:
                self.problems.append(exc)
                continue
            with f:
                log = None
                if self.verify and target.segment is not None and target.segment.log is not None:
                    try:
                        log = ReadOnlyFile(target.segment.log)
                    except MqError as exc:
                        self.problems.append(exc)
                try:
                    yield from self._walk(target, f, log)
                finally:
                    if log is not None:
                        log.close()

    def _walk(self, target: IndexTarget, f: ReadOnlyFile, log: ReadOnlyFile | None) -> Iterator[IndexRow]:
        walk = ks.IndexFileWalk(f, self.kind, target.base_offset)
        entries = iter(walk)
        cur = next(entries, None)
        nxt = next(entries, None) if cur is not None else None
        zero_slot = cur is not None and nxt is None and walk.first_is_zero and walk.error is None
        if zero_slot:  # entry 0 all zero and nothing after it: an unused pre-allocated slot
            cur = None
        n = 0
        while cur is not None:
            pos, entry = cur
            assert isinstance(entry, (OffsetPosition, TimestampOffset, AbortedTxn))  # the walk of an index family
            relative = entry.offset - target.base_offset if not isinstance(entry, AbortedTxn) else None
            check: dict[str, object] | None = None
            if self.verify:
                if log is None:
                    check = {"status": "no-log"}
                elif isinstance(entry, OffsetPosition):
                    following = nxt[1] if nxt is not None else None
                    assert following is None or isinstance(following, OffsetPosition)  # the next entry of the same .index
                    check = verify_offset_entry(log, entry, following.position if following is not None else None)
                elif isinstance(entry, TimestampOffset):
                    check = verify_time_entry(log, target, entry)
                else:
                    check = verify_txn_entry(log, target, entry)
                if check["status"] not in ("exact", "multi-batch", "within", "ok"):
                    self.mismatches += 1
            yield IndexRow(target.path, pos, n, entry, relative, check)
            n += 1
            cur, nxt = nxt, (next(entries, None) if nxt is not None else None)
        if walk.error is not None:
            self.problems.append(walk.error)
        self.ends.append((target.path, n, kidx.DataEnd("zeros", 0, f.size) if zero_slot else walk.end))


def _legacy_header(entry: LogEntry) -> LegacyRecord:
    """The message of a v0/v1 entry (a walk in ``header`` or ``full`` mode gives each entry its header)."""
    h = entry.header
    assert isinstance(h, LegacyRecord)
    return h


def entry_max_timestamp(entry: LogEntry) -> int:
    """The largest timestamp of an entry: a v2 batch's ``max_timestamp``, a v0/v1 message's own."""
    h = entry.header
    return h.max_timestamp if isinstance(h, rb.BatchHeader) else _legacy_header(entry).timestamp


def _entry_span(entry: LogEntry, prev_last: int | None) -> tuple[int, int]:
    h = entry.header
    if isinstance(h, rb.BatchHeader):
        return h.base_offset, h.last_offset
    h = _legacy_header(entry)
    if h.is_compressed:
        return (prev_last + 1 if prev_last is not None else h.offset), h.offset
    return h.offset, h.offset


def verify_offset_entry(log: ReadOnlyFile, entry: kidx.OffsetPosition, next_position: int | None) -> dict[str, object]:
    """Check one ``.index`` entry against the log, the way validate does:

    ``exact`` (the offset is the last offset of the batch at the position), ``within`` (inside
    that batch: the first-offset entries of Kafka <= 0.10), ``multi-batch`` (the last offset of a
    later batch of the same append, before the next entry's position), ``mismatch``,
    ``not-a-batch`` (no valid batch starts at the position), ``past-end``.
    """
    if entry.position >= log.size:
        return {"status": "past-end", "log_size": log.size}
    try:
        first = kr.entry_at(log, entry.position)
    except MqError as exc:
        return {"status": "not-a-batch", "error": str(exc)}
    lower, last = _entry_span(first, None)
    wrapper = not isinstance(first.header, rb.BatchHeader) and _legacy_header(first).is_compressed
    out = {"batch_base_offset": lower if not wrapper else None, "batch_last_offset": last}
    if entry.offset == last:
        return {"status": "exact", **out}
    if lower <= entry.offset < last:
        return {"status": "within", **out}
    if entry.offset > last:
        pos = entry.position + first.size
        stop = next_position if next_position is not None else log.size
        while pos < stop:
            try:
                nxt = kr.entry_at(log, pos)
            except MqError:
                break
            if nxt.last_offset == entry.offset:
                return {"status": "multi-batch", "append_last_batch_position": pos, **out}
            if nxt.last_offset > entry.offset:
                break
            pos += nxt.size
    return {"status": "mismatch", **out}


def verify_time_entry(log: ReadOnlyFile, target: IndexTarget, entry: kidx.TimestampOffset) -> dict[str, object]:
    """The batch holding the entry's offset (found through the ``.index``) must have the entry's
    timestamp as its max timestamp: ``ok``, ``timestamp-mismatch`` or ``offset-not-found``."""
    seg = target.segment
    try:
        start, _slot = ks.lookup_offset(seg.index if seg else None, target.base_offset, entry.offset)
    except MqError:
        start = kidx.OffsetPosition(target.base_offset, 0)
    prev_last = None
    for pos, e in kr.entries_from(log, start.position):
        lower, last = _entry_span(e, prev_last)
        prev_last = last
        if last < entry.offset:
            continue
        if lower > entry.offset:
            break
        ts = entry_max_timestamp(e)
        status = "ok" if ts == entry.timestamp else "timestamp-mismatch"
        return {"status": status, "batch_position": pos, "batch_max_timestamp": ts}
    return {"status": "offset-not-found"}


def verify_txn_entry(log: ReadOnlyFile, target: IndexTarget, entry: ktxn.AbortedTxn) -> dict[str, object]:
    """The entry's last offset must be an ABORT control record of its producer."""
    seg = target.segment
    try:
        start, _slot = ks.lookup_offset(seg.index if seg else None, target.base_offset, entry.last_offset)
    except MqError:
        start = kidx.OffsetPosition(target.base_offset, 0)
    for pos, e in kr.entries_from(log, start.position, full=True):
        if e.last_offset < entry.last_offset:
            continue
        h = e.header
        if isinstance(h, rb.BatchHeader) and e.batch is not None and h.base_offset == entry.last_offset and h.is_control_batch and e.batch.records:
            try:
                key, _ = rb.decode_control_record(e.batch.records[0])
            except MqError:
                break
            if key.type == rb.ABORT and h.producer_id == entry.producer_id:
                return {"status": "ok", "marker_position": pos}
        break
    return {"status": "no-abort-marker"}


# --- producer snapshots ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotRow:
    file: Path
    offset: int
    version: int
    crc: int
    entry: ksnap.ProducerEntry


def snapshot_rows(targets: list[IndexTarget], problems: list[MqError]) -> Iterator[SnapshotRow]:
    for target in targets:
        try:
            snap = ksnap.decode_snapshot(read_small_file(target.path, 256 << 20))
        except MqError as exc:
            problems.append(exc.at(target.path))
            continue
        for entry in snap.entries:
            yield SnapshotRow(target.path, target.base_offset, snap.version, snap.crc, entry)


# --- checkpoint files --------------------------------------------------------------------------------


def _classify(name: str) -> str:
    base = name[:-4] if name.endswith(".tmp") else name
    if base in cpf.OFFSET_CHECKPOINT_FILES:
        return "offset-checkpoint"
    if base == cpf.LEADER_EPOCH_CHECKPOINT:
        return "leader-epoch-checkpoint"
    if base == cpf.PARTITION_METADATA:
        return "partition.metadata"
    if base == cpf.META_PROPERTIES:
        return "meta.properties"
    if base == cpf.CLEAN_SHUTDOWN:
        return "clean-shutdown"
    if base == ks.QUORUM_STATE:
        return "quorum-state"
    return "offset-checkpoint"


def checkpoint_files(path: Path) -> list[Path]:
    """The text state files for PATH: one file, a partition dir, or a log dir (its own files and
    every partition's)."""
    path = Path(path)
    check_path(path)
    if is_regular_file(path):
        return [path]
    store = ks.open_kafka(path)
    files: list[Path] = []
    if store.kind == "log-dir":
        for name in (*cpf.OFFSET_CHECKPOINT_FILES, cpf.META_PROPERTIES, cpf.CLEAN_SHUTDOWN):
            p = store.log_dir_file(name)
            if p is not None:
                files.append(p)
        files.extend(p for p in store.leftovers if p.name.endswith(".tmp"))
    for part in store.partitions:
        for p in (part.leader_epoch_checkpoint, part.partition_metadata, part.quorum_state):
            if p is not None:
                files.append(p)
        files.extend(p for p in part.leftovers if p.name.endswith(".tmp"))
    if not files:
        raise StoreLayoutError(expected="Kafka checkpoint files", found="none", path=path)
    return files


def read_checkpoint_file(path: Path, *, topic: str | None = None, partition: int | None = None) -> dict[str, object]:
    """One state file as data: ``{"file", "kind", ...content}``; ``error`` when it does not parse."""
    kind = _classify(path.name)
    doc: dict[str, object] = {"file": str(path), "kind": kind, "name": path.name}
    owner = ks.parse_partition_name(path.parent.name)
    if owner is not None and kind in ("leader-epoch-checkpoint", "partition.metadata", "quorum-state"):
        doc["topic"] = owner.topic
        doc["partition"] = owner.partition
    try:
        raw = read_small_file(path, 256 << 20)
        if kind == "offset-checkpoint":
            cp = cpf.decode_offset_checkpoint(raw)
            doc["entries"] = [
                {"topic": e.topic, "partition": e.partition, "offset": e.offset}
                for e in cp.entries
                if (topic is None or e.topic == topic) and (partition is None or e.partition == partition)
            ]
        elif kind == "leader-epoch-checkpoint":
            epochs = cpf.decode_leader_epoch_checkpoint(raw)
            doc["entries"] = [{"epoch": e.epoch, "start_offset": e.start_offset} for e in epochs.entries]
        elif kind == "partition.metadata":
            md = cpf.decode_partition_metadata(raw)
            doc["version"] = md.version
            doc["topic_id"] = md.topic_id
        elif kind == "meta.properties":
            meta = cpf.decode_meta_properties(raw)
            doc["version"] = meta.version
            doc["mode"] = "KRaft" if meta.version == 1 else "ZooKeeper"
            doc["node_id"] = meta.node_id
            doc["cluster_id"] = meta.cluster_id
            doc["directory_id"] = meta.directory_id
            doc["extra"] = meta.extra
        elif kind == "clean-shutdown":
            cs = cpf.decode_clean_shutdown(raw)
            doc["version"] = cs.version
            doc["broker_epoch"] = cs.broker_epoch
        elif kind == "quorum-state":
            doc["content"] = json.loads(raw.decode("utf-8"))
    except MqError as exc:
        doc["error"] = str(exc.at(path))
    except (UnicodeDecodeError, ValueError) as exc:
        doc["error"] = f"{path}: {exc}"
    return doc


def partition_filter(docs: list[dict[str, object]], topic: str | None, partition: int | None) -> list[dict[str, object]]:
    """Keep per-partition files of the selected partitions (log-dir files are filtered by entry)."""
    out = []
    for d in docs:
        if d.get("partition") is not None:
            if (topic is not None and d["topic"] != topic) or (partition is not None and d["partition"] != partition):
                continue
        out.append(d)
    return out
