"""query for Kafka: a record by offset (the broker's fetch path) or by timestamp (ListOffsets).

* by offset (``UnifiedLog.read`` / ``LogSegment.translateOffset``): the segment whose base
  offset is the largest <= the target, the ``.index`` entry with the largest offset <= the
  target (a binary search reading O(log n) entries), then a short forward scan of the ``.log``
  from that position to the first batch whose last offset reaches the target; the record with
  the target offset (or the first one after it, when compaction removed it) is the answer;
* by timestamp (``UnifiedLog.fetchOffsetByTimestamp``, ``LogSegment.findOffsetByTimestamp``):
  the first segment whose largest timestamp (its last ``.timeindex`` entry, or the batches
  after that entry when the segment is still active) reaches the target, then the
  ``.timeindex`` entry with the largest timestamp <= the target, its offset looked up in the
  ``.index``, and a scan for the first record with timestamp >= the target.

Index entries are only a hint: the scan re-reads and CRC-checks the log, and when an index
points at something that is not a batch, the segment is scanned from its start instead (said
in ``notes``).  ``max_results`` records are returned from the one found onwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import MqError
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.legacy import LegacyRecord
from mqtool.formats.kafka.log import LogEntry, LogRecord
from mqtool.ops.dump.kafka import BatchInfo, Decoder, LogTarget, RecordInfo, batch_info, decoder_for, entry_max_timestamp, record_info
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, read_small_file
from mqtool.store.model import kafka_reads as kr


@dataclass(frozen=True)
class KafkaHit:
    topic: str | None
    partition: int | None
    file: Path
    batch: BatchInfo
    record: RecordInfo
    via: str  # "index", "timeindex", "scan"
    #: the code of the finding the record's batch carries: a batch the walk kept despite damage
    #: that leaves its frame intact (``kafka_reads.ScannedBatch.finding``: KAFKA-LOG-CRC); None when healthy
    finding: str | None = None


@dataclass
class KafkaQueryResult:
    partition: str | None = None
    hits: list[KafkaHit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: damage met (``MqError``) and validate's errors on the partition (``CODE path:position: message``)
    problems: list[MqError | str] = field(default_factory=list)
    #: How the answer was found, step by step (index entries used, batches scanned).
    steps: list[str] = field(default_factory=list)
    log_start_offset: int | None = None
    log_end_offset: int | None = None


def _log_start(store: ks.KafkaStore, part: ks.KafkaPartition) -> int:
    segments = part.log_segments()
    start = segments[0].base_offset if segments else 0
    path = store.log_dir_file(cpf.LOG_START_OFFSET_CHECKPOINT)
    if path is not None and part.key is not None:
        try:
            table = cpf.decode_offset_checkpoint(read_small_file(path, 64 << 20)).as_dict()
        except MqError:
            return start
        start = max(start, table.get(part.key, start))
    return start


#: Whether a record is one the query asks for.
Accept = Callable[[LogRecord], bool]


class _Collector:
    """Walks forward from a position collecting ``max_results`` records >= a start condition."""

    def __init__(self, part: ks.KafkaPartition, result: KafkaQueryResult, max_results: int, decoder: Decoder) -> None:
        self.part = part
        self.result = result
        self.max_results = max_results
        self.decoder = decoder
        #: batches skipped, their CRC failing or their records not decoding: (first offset, last
        #: offset, file:position, why) -- the offsets are the header's
        self.damaged: list[tuple[int, int, str, str]] = []

    @property
    def done(self) -> bool:
        return len(self.result.hits) >= self.max_results

    def _collect(
        self,
        log: Path,
        scanned: kr.ScannedBatch,
        accept: Accept,
        via: str,
        decoder: str | None,
        batch_filter: Callable[[LogEntry], bool] | None,
    ) -> bool:
        """Add the accepted records of one batch; True once ``max_results`` are in.  A batch the
        walk kept despite its CRC (its frame holds) gives its records with its finding."""
        hits = self.result.hits
        entry, pos = scanned.entry, scanned.position
        if hits and entry.last_offset <= hits[-1].record.offset:
            return False
        if not hits and batch_filter is not None and not batch_filter(entry):
            return False
        damage, finding = scanned.damage, scanned.finding
        if damage is not None:
            self.result.problems.append(damage)
        info = batch_info(log, pos, entry, scanned.buffer, scanned.rel, checked=damage is None)
        try:
            logical, raw = scanned.records()
        except MqError as exc:
            if damage is None:
                self.result.problems.append(exc)
            why = "whose CRC fails and whose records cannot be read" if damage is not None else "whose records cannot be read"
            self.damaged.append((_first_offset(entry), entry.last_offset, f"{log}:{pos}", why))
            return False
        if damage is not None:
            self.damaged.append((_first_offset(entry), entry.last_offset, f"{log}:{pos}", "whose CRC fails"))
        for i, r in enumerate(logical):
            if hits:
                if r.offset <= hits[-1].record.offset:
                    continue
            elif not accept(r):
                continue
            rec = record_info(r, raw[i] if raw is not None and r.is_control else None, decoder)
            hits.append(KafkaHit(self.part.topic, self.part.partition, log, info, rec, via, finding))
            if self.done:
                return True
        return False

    def scan(
        self,
        seg: ks.KafkaSegment,
        position: int,
        accept: Accept,
        via: str,
        *,
        batch_filter: Callable[[LogEntry], bool] | None = None,
        indexed_offset: int | None = None,
    ) -> tuple[int, bool]:
        """Scan ``seg`` from ``position``; returns (batches read, whether the position was a valid
        entry).  ``indexed_offset``: the offset the index gave for ``position``; the entry there
        must not start after it (else the index is wrong and the caller scans from 0).  A batch
        whose CRC fails but whose frame holds is read (``keep_damaged``): its records come with
        their finding, and the batches after it are read on (the broker's consumers stop there;
        an operator wants the rest)."""
        read = 0
        log = seg.log
        assert log is not None  # the partition's log_segments() only
        target = LogTarget(log, seg.base_offset, self.part, seg)
        decoder = decoder_for(target, self.decoder)
        with ReadOnlyFile(log) as f:
            if position >= f.size:
                return 0, position == f.size
            walk = kr.BatchScan(f, position)
            for scanned in walk:
                read += 1
                if read == 1 and indexed_offset is not None and position and _first_offset(scanned.entry) > indexed_offset:
                    return 0, False
                if self._collect(log, scanned, accept, via, decoder, batch_filter):
                    self.result.steps.append(f"{log.name}: read {read} batch(es) from position {position}")
                    return read, True
            if read == 0 and position:
                return 0, False  # an index never points at the end of the data or at garbage
            if walk.error is not None:
                self.result.problems.append(walk.error)
        self.result.steps.append(f"{log.name}: read {read} batch(es) from position {position}")
        return read, True


def _first_offset(entry: LogEntry) -> int:
    """The first offset of an entry (a v0/v1 wrapper's is not known without decompressing: its last)."""
    h = entry.header
    if isinstance(h, rb.BatchHeader):
        return h.base_offset
    assert isinstance(h, LegacyRecord)  # a v0/v1 entry of a "header" walk
    return -1 if h.is_compressed else h.offset


def with_findings(result: KafkaQueryResult, part: ks.KafkaPartition) -> KafkaQueryResult:
    """Every gap and damage of the partition asked -- its log and the indexes a lookup reads -- as
    validate states it (``ops.log_findings``): errors after the problems (exit 1), warnings after
    the notes, each as ``CODE path:position: message``."""
    from mqtool.findings import finding_text, not_stated
    from mqtool.ops import log_findings

    met = log_findings.on_path(part.path, "kafka", [part.path], families=log_findings.INDEX)
    errors = log_findings.errors(met)
    result.problems = [p for p in not_stated(list(result.problems), errors) if isinstance(p, (MqError, str))]  # stated once: by the finding
    result.problems.extend(finding_text(f) for f in errors)
    result.notes.extend(finding_text(f) for f in met if f not in log_findings.errors(met))
    return result


def query_offset(store: ks.KafkaStore, topic: str | None, partition: int | None, offset: int, *, max_results: int = 1, decoder: Decoder = "auto") -> KafkaQueryResult:
    """The record at ``offset`` (and the ``max_results - 1`` after it), with the partition's
    gaps and damage as validate names them (``with_findings``)."""
    part = store.find_partition(topic, partition)
    return with_findings(_query_offset(store, part, offset, max_results=max_results, decoder=decoder), part)


def _query_offset(store: ks.KafkaStore, part: ks.KafkaPartition, offset: int, *, max_results: int, decoder: Decoder) -> KafkaQueryResult:
    result = KafkaQueryResult(part.name)
    segments = part.log_segments()
    if not segments:
        result.notes.append(f"{part.name} has no segments")
        return result
    start = _log_start(store, part)
    result.log_start_offset = start
    if offset < start:
        result.notes.append(f"offset {offset} is below the log start offset {start} of {part.name} (deleted or compacted away)")
        return result
    collector = _Collector(part, result, max_results, decoder)
    index = next(i for i, s in reversed(list(enumerate(segments))) if s.base_offset <= offset or i == 0)
    for i, seg in enumerate(segments[index:]):
        position = 0
        via = "scan"
        if i == 0:
            try:
                entry, slot = ks.lookup_offset(seg.index, seg.base_offset, offset)
            except MqError as exc:
                result.problems.append(exc)
                entry, slot = None, -1
            if entry is not None and slot >= 0:
                position = entry.position
                via = "index"
                result.steps.append(f"{seg.name}.index entry #{slot}: offset {entry.offset} at position {entry.position}")
            elif seg.index is not None:
                via = "index"
                result.steps.append(f"{seg.name}.index: no entry <= {offset} (lookup answers the segment start), scanning from position 0")
            else:
                result.steps.append(f"{seg.name}: no .index, scanning from position 0")

        def accept(r: LogRecord) -> bool:
            return r.offset >= offset

        def batch_ok(e: LogEntry) -> bool:
            return e.last_offset >= offset

        indexed = entry.offset if i == 0 and entry is not None and slot >= 0 else None
        _read, ok = collector.scan(seg, position, accept, via, batch_filter=batch_ok, indexed_offset=indexed)
        if not ok and position:
            result.notes.append(f"the .index of {seg.name} points at position {position}, where no valid batch starts; scanned from 0")
            collector.scan(seg, 0, accept, "scan", batch_filter=batch_ok)
        if collector.done:
            break
    damaged = next((d for d in collector.damaged if d[0] <= offset <= d[1]), None)
    if damaged is not None and result.hits and result.hits[0].finding is not None and result.hits[0].record.offset == offset:
        result.notes.append(
            f"offset {offset} is in the batch at {damaged[2]} (offsets {damaged[0]}..{damaged[1]}), {damaged[3]}: "
            f"its record is listed with the finding {result.hits[0].finding}, its bytes cannot be trusted"
        )
    elif damaged is not None:
        nxt = f"; the next readable record is at offset {result.hits[0].record.offset}" if result.hits else ""
        result.notes.append(f"offset {offset} is in the batch at {damaged[2]} (offsets {damaged[0]}..{damaged[1]}), {damaged[3]}: its records cannot be trusted{nxt}")
    elif not result.hits:
        result.notes.append(f"no record at or after offset {offset} in {part.name}")
    elif result.hits[0].record.offset != offset:
        result.notes.append(f"offset {offset} is not in the log (compacted away); the next record is at offset {result.hits[0].record.offset}")
    return result


def segment_largest_timestamp(seg: ks.KafkaSegment) -> int:
    """``LogSegment.largestTimestamp`` as the broker rebuilds it: the last ``.timeindex`` entry,
    or a larger timestamp among the batches after it (an active segment's index lags)."""
    last = ks.last_time_entry(seg.timeindex, seg.base_offset)
    try:
        start, _slot = ks.lookup_offset(seg.index, seg.base_offset, max(last.offset, seg.base_offset))
    except MqError:
        start = None
    position = start.position if start is not None else 0
    assert seg.log is not None  # a segment of log_segments()
    after = kr.largest_timestamp_from(seg.log, position)
    return last.timestamp if after is None else max(last.timestamp, after)


def query_timestamp(
    store: ks.KafkaStore, topic: str | None, partition: int | None, timestamp: int, *, max_results: int = 1, decoder: Decoder = "auto"
) -> KafkaQueryResult:
    """ListOffsets: the first record with timestamp >= ``timestamp`` (and the ones after it), with
    the partition's gaps and damage as validate names them (``with_findings``)."""
    part = store.find_partition(topic, partition)
    return with_findings(_query_timestamp(store, part, timestamp, max_results=max_results, decoder=decoder), part)


def _query_timestamp(store: ks.KafkaStore, part: ks.KafkaPartition, timestamp: int, *, max_results: int, decoder: Decoder) -> KafkaQueryResult:
    result = KafkaQueryResult(part.name)
    segments = part.log_segments()
    start = _log_start(store, part)
    result.log_start_offset = start
    collector = _Collector(part, result, max_results, decoder)
    found_segment = False
    for seg in segments:
        if not result.hits:
            largest = segment_largest_timestamp(seg)
            if largest < timestamp:
                result.steps.append(f"{seg.name}: largest timestamp {largest} < {timestamp}, skipped")
                continue
            found_segment = True
            entry, slot = ks.lookup_timestamp(seg.timeindex, seg.base_offset, timestamp)
            position_entry, oslot = ks.lookup_offset(seg.index, seg.base_offset, max(entry.offset, start))
            position = position_entry.position
            result.steps.append(
                f"{seg.name}.timeindex entry #{slot}: ({entry.timestamp}, offset {entry.offset}); "
                f".index entry #{oslot}: offset {position_entry.offset} at position {position}"
                if slot >= 0
                else f"{seg.name}.timeindex: no entry <= {timestamp}; .index entry #{oslot} at position {position}"
            )

            def accept(r: LogRecord) -> bool:
                return r.timestamp >= timestamp and r.offset >= start

            def batch_ok(e: LogEntry) -> bool:
                return entry_max_timestamp(e) >= timestamp and e.last_offset >= start

            _read, ok = collector.scan(seg, position, accept, "timeindex", batch_filter=batch_ok, indexed_offset=position_entry.offset if oslot >= 0 else None)
            if not ok and position:
                result.notes.append(f"the indexes of {seg.name} point at position {position}, where no valid batch starts; scanned from 0")
                collector.scan(seg, 0, accept, "scan", batch_filter=batch_ok)
        else:
            collector.scan(seg, 0, lambda r: True, "timeindex")  # the records after the first hit
        if collector.done:
            break
    if not result.hits:
        result.notes.append(f"no record with a timestamp >= {timestamp} in {part.name}" + ("" if found_segment else " (every segment's largest timestamp is below it)"))
    return result
