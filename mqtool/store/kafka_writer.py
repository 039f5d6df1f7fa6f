"""A Kafka log writer that lays partitions out the way a broker's ``UnifiedLog`` does.

Used by the fixtures, the tests and ``bench``.  It reproduces what the offline checks look at:

* **segments**: a new segment is rolled before an append when the active one is not empty and
  ``size + append size > segment.bytes`` (``LogSegment.shouldRoll``); the file name is the next
  offset (20 digits);
* **one append = one produce request (or one follower fetch)**, possibly several batches:
  offsets are assigned from the log end offset, the partition leader epoch is stamped into
  v2 batches, and -- the append path of Kafka up to 3.9 -- an index entry is added *before*
  the append's bytes are counted, when more than ``index.interval.bytes`` were written since
  the previous entry: ``.index`` gets ``(largest offset of the append, position of its first
  batch)`` and ``.timeindex`` ``(max timestamp so far, last offset of the batch holding it)``
  when that timestamp is larger than the last entry's.  A follower append of several batches
  therefore indexes the *last* batch's offset at the *first* batch's position;
* **roll / clean close**: a final time-index entry is forced (``onBecomeInactiveSegment``),
  index files are trimmed to their entries, a producer snapshot is written at the new base
  offset; an unclean close leaves the active segment's indexes pre-allocated (zero tail);
* **transactions**: the first offset of each producer's open transaction is tracked; an ABORT
  marker appends ``(producerId, firstOffset, markerOffset, lastStableOffset)`` to the
  segment's ``.txnindex``;
* **leader epochs**: ``(epoch, base offset)`` is added to ``leader-epoch-checkpoint`` when a
  batch carries an epoch larger than the latest one;
* ``LogDirWriter`` adds the log-dir files: ``meta.properties``, the four offset checkpoints
  (recovery point and high watermark = log end offset at a clean close), ``.kafka_cleanshutdown``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mqtool.errors import LockBusyError
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import legacy as klegacy
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import snapshot as ksnap
from mqtool.formats.kafka import txn_index as ktxn


@dataclass(frozen=True)
class PartitionConfig:
    segment_bytes: int = 1 << 30
    index_interval_bytes: int = 4096
    #: Pre-allocated size of an active segment's index files (left on disk by an unclean close).
    max_index_bytes: int = 10 << 20


@dataclass
class _Producer:
    epoch: int = 0
    last_sequence: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    txn_first_offset: int = -1


@dataclass
class _Segment:
    base_offset: int
    path: Path
    size: int = 0
    bytes_since_index: int = 0
    index: list[kidx.OffsetPosition] = field(default_factory=list)
    timeindex: list[kidx.TimestampOffset] = field(default_factory=list)
    txnindex: list[ktxn.AbortedTxn] = field(default_factory=list)
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1


@dataclass(frozen=True)
class AppendResult:
    first_offset: int
    last_offset: int
    positions: tuple[int, ...]
    segment: Path


def _entry_last_offset(entry: rb.RecordBatch | klegacy.LegacyRecord) -> int:
    if isinstance(entry, rb.RecordBatch):
        return entry.header.last_offset
    return entry.offset


class PartitionWriter:
    """Append batches to one partition directory (created if missing)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        config: PartitionConfig = PartitionConfig(),
        *,
        start_offset: int = 0,
        leader_epoch: int = 0,
        topic_id: str | None = None,
        snapshots: bool = True,
    ) -> None:
        self.path = Path(directory)
        self.path.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.leader_epoch = leader_epoch
        self.snapshots = snapshots
        self.next_offset = start_offset
        self.log_start_offset = start_offset
        self.epochs: list[cpf.EpochEntry] = []
        self.producers: dict[int, _Producer] = {}
        self.segments: list[_Segment] = []
        if topic_id is not None:
            (self.path / cpf.PARTITION_METADATA).write_bytes(cpf.encode_partition_metadata(cpf.PartitionMetadata(topic_id)))
        self._roll(start_offset, first=True)

    @property
    def active(self) -> _Segment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.next_offset

    # --- segments ----------------------------------------------------------------------------
    def _roll(self, base: int, *, first: bool = False) -> None:
        if not first:
            self._finish_segment(self.active, trim=True)
            if self.snapshots:
                self.write_snapshot(base)
        seg = _Segment(base, self.path / segnames.kafka_file_name(base, "log"))
        seg.path.write_bytes(b"")
        self.segments.append(seg)

    def roll(self, base_offset: int | None = None) -> None:
        """Roll a new segment at the log end offset, or at ``base_offset`` beyond it (a segment
        whose first offsets were compacted away)."""
        base = self.next_offset if base_offset is None else base_offset
        if base < self.next_offset:
            raise ValueError(f"a new segment cannot start below the log end offset {self.next_offset}")
        if self.active.size:
            self.next_offset = base
            self._roll(base)

    def _finish_segment(self, seg: _Segment, *, trim: bool) -> None:
        if seg.max_timestamp >= 0 and (not seg.timeindex or seg.max_timestamp > seg.timeindex[-1].timestamp):
            seg.timeindex.append(kidx.TimestampOffset(seg.max_timestamp, seg.offset_of_max_timestamp))
        self._write_indexes(seg, preallocate=not trim)

    def _write_indexes(self, seg: _Segment, *, preallocate: bool) -> None:
        size_index = self.config.max_index_bytes if preallocate else None
        stem = seg.path.with_suffix("")
        Path(f"{stem}.index").write_bytes(kidx.encode_offset_index(seg.index, seg.base_offset, size=size_index))
        Path(f"{stem}.timeindex").write_bytes(kidx.encode_time_index(seg.timeindex, seg.base_offset, size=size_index))
        if seg.txnindex:
            Path(f"{stem}.txnindex").write_bytes(ktxn.encode_txn_index(seg.txnindex))

    # --- appends -----------------------------------------------------------------------------
    def append(self, batches: rb.RecordBatch | Sequence[rb.RecordBatch], *, assign_offsets: bool = True) -> AppendResult:
        """One append of v2 batches (a produce request, or a follower fetch when several).

        With ``assign_offsets`` the batches get consecutive offsets from the log end offset
        (their records keep their offset deltas); without, their own base offsets are kept
        (a follower or the log cleaner: gaps are allowed, going backwards is not).
        """
        if isinstance(batches, rb.RecordBatch):
            batches = [batches]
        placed: list[rb.RecordBatch] = []
        offset = self.next_offset
        for batch in batches:
            h = batch.header
            base = offset if assign_offsets else h.base_offset
            if base < offset:
                raise ValueError(f"batch base offset {base} is below the log end offset {offset}")
            epoch = self.leader_epoch if assign_offsets or h.partition_leader_epoch < 0 else h.partition_leader_epoch
            header = replace(h, base_offset=base, partition_leader_epoch=epoch)
            placed.append(rb.RecordBatch(header, batch.records))
            offset = header.last_offset + 1
        encoded = [rb.encode_batch(b) for b in placed]
        return self._append_entries(placed, encoded)

    def append_legacy(self, messages: Sequence[klegacy.LegacyRecord], *, codec: int = 0) -> AppendResult:
        """One append of v0/v1 messages: each on its own, or all in one compressed wrapper."""
        offset = self.next_offset
        numbered = []
        for m in messages:
            numbered.append(replace(m, offset=offset))
            offset += 1
        if codec:
            entries = [klegacy.encode_wrapper(numbered, codec=codec)]
        else:
            entries = numbered
        encoded = [klegacy.encode_message(e) for e in entries]
        return self._append_entries(entries, encoded)

    def _append_entries(self, entries: Sequence[rb.RecordBatch | klegacy.LegacyRecord], encoded: list[bytes]) -> AppendResult:
        cfg = self.config
        append_size = sum(len(e) for e in encoded)
        first_base = entries[0].header.base_offset if isinstance(entries[0], rb.RecordBatch) else self.next_offset
        if self.active.size > 0 and self.active.size + append_size > cfg.segment_bytes:
            self._roll(first_base)
        seg = self.active
        position = seg.size
        positions = []
        with open(seg.path, "ab") as f:
            pos = position
            for data in encoded:
                positions.append(pos)
                f.write(data)
                pos += len(data)
        largest_offset = _entry_last_offset(entries[-1])
        # the max timestamp of this append and the batch holding it
        append_max_ts, append_max_offset = -1, -1
        for entry in entries:
            ts = entry.header.max_timestamp if isinstance(entry, rb.RecordBatch) else entry.timestamp
            if ts > append_max_ts:
                append_max_ts, append_max_offset = ts, _entry_last_offset(entry)
        if append_max_ts > seg.max_timestamp:
            seg.max_timestamp, seg.offset_of_max_timestamp = append_max_ts, append_max_offset
        if seg.bytes_since_index > cfg.index_interval_bytes:
            seg.index.append(kidx.OffsetPosition(largest_offset, position))
            if seg.max_timestamp >= 0 and (not seg.timeindex or seg.max_timestamp > seg.timeindex[-1].timestamp):
                seg.timeindex.append(kidx.TimestampOffset(seg.max_timestamp, seg.offset_of_max_timestamp))
            seg.bytes_since_index = 0
        seg.bytes_since_index += append_size
        seg.size += append_size
        for entry in entries:
            if isinstance(entry, rb.RecordBatch):
                self._track_batch(entry, seg)
        self.next_offset = largest_offset + 1
        return AppendResult(_first_offset(entries[0]), largest_offset, tuple(positions), seg.path)

    def _track_batch(self, batch: rb.RecordBatch, seg: _Segment) -> None:
        h = batch.header
        if h.partition_leader_epoch >= 0 and (not self.epochs or h.partition_leader_epoch > self.epochs[-1].epoch):
            self.epochs.append(cpf.EpochEntry(h.partition_leader_epoch, h.base_offset))
        if not h.has_producer_id:
            return
        state = self.producers.setdefault(h.producer_id, _Producer())
        state.epoch = h.producer_epoch
        if h.is_control_batch:
            key, value = rb.decode_control_record(batch.records[0])
            first = state.txn_first_offset if state.txn_first_offset >= 0 else h.base_offset
            state.txn_first_offset = -1
            if isinstance(value, rb.EndTransactionMarker):
                state.coordinator_epoch = value.coordinator_epoch
            if key.type == rb.ABORT:
                open_firsts = [p.txn_first_offset for p in self.producers.values() if p.txn_first_offset >= 0]
                lso = min(open_firsts) if open_firsts else h.base_offset + 1
                seg.txnindex.append(ktxn.AbortedTxn(h.producer_id, first, h.base_offset, lso))
        else:
            if h.is_transactional and state.txn_first_offset < 0:
                state.txn_first_offset = h.base_offset
            state.last_sequence = h.last_sequence
            state.offset_delta = h.last_offset_delta
            state.last_offset = h.last_offset  # markers add no batch metadata (appendEndTxnMarker)
        state.timestamp = h.max_timestamp

    # --- state files ---------------------------------------------------------------------------
    def write_snapshot(self, offset: int) -> Path:
        entries = tuple(
            ksnap.ProducerEntry(
                producer_id=pid,
                epoch=p.epoch,
                last_sequence=p.last_sequence,
                last_offset=p.last_offset,
                offset_delta=p.offset_delta,
                timestamp=p.timestamp,
                coordinator_epoch=p.coordinator_epoch,
                current_txn_first_offset=p.txn_first_offset,
            )
            for pid, p in sorted(self.producers.items())
        )
        path = self.path / segnames.kafka_file_name(offset, "snapshot")
        path.write_bytes(ksnap.encode_snapshot(ksnap.ProducerSnapshot(entries)))
        return path

    def write_leader_epoch_checkpoint(self) -> None:
        data = cpf.encode_leader_epoch_checkpoint(cpf.LeaderEpochCheckpoint(tuple(self.epochs)))
        (self.path / cpf.LEADER_EPOCH_CHECKPOINT).write_bytes(data)

    def close(self, *, clean: bool = True) -> None:
        """Clean: final time-index entry, trimmed indexes, a snapshot at the log end offset.
        Unclean (a crash): the active segment's indexes stay pre-allocated, no snapshot."""
        if clean:
            self._finish_segment(self.active, trim=True)
            if self.snapshots:
                self.write_snapshot(self.next_offset)
        else:
            self._write_indexes(self.active, preallocate=True)
        self.write_leader_epoch_checkpoint()


def _first_offset(entry: rb.RecordBatch | klegacy.LegacyRecord) -> int:
    if isinstance(entry, rb.RecordBatch):
        return entry.header.base_offset
    return entry.offset


class LogDirWriter:
    """A log dir: ``meta.properties``, partitions, and the log-dir checkpoint files at close."""

    def __init__(self, root: str | os.PathLike[str], *, meta: cpf.MetaProperties | None = None, hold_lock: bool = False) -> None:
        """``hold_lock``: hold ``.lock`` while open (an fcntl record lock, what the broker's
        ``FileChannel.tryLock`` takes), so readers see a running broker."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.partitions: dict[tuple[str, int], PartitionWriter] = {}
        #: Partitions left out of the offset checkpoints (the KRaft metadata log is raft's).
        self.unmanaged: set[tuple[str, int]] = set()
        self.cleaner_offsets: dict[tuple[str, int], int] = {}
        if meta is not None:
            (self.root / cpf.META_PROPERTIES).write_bytes(cpf.encode_meta_properties(meta, date_comment="Tue Nov 14 22:13:20 UTC 2023"))
        (self.root / ".lock").write_bytes(b"")
        self._lock_fd: int | None = None
        if hold_lock:
            fd = os.open(self.root / ".lock", os.O_RDWR)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise LockBusyError("another writer holds the log dir's .lock", path=self.root / ".lock") from None
            self._lock_fd = fd

    def partition(self, topic: str, partition: int, config: PartitionConfig = PartitionConfig(), *, managed: bool = True, **kw: Any) -> PartitionWriter:
        writer = PartitionWriter(self.root / cpf.partition_dir_name(topic, partition), config, **kw)
        self.partitions[(topic, partition)] = writer
        if not managed:
            self.unmanaged.add((topic, partition))
        return writer

    def close(self, *, clean: bool = True, broker_epoch: int | None = None) -> None:
        try:
            self._close(clean=clean, broker_epoch=broker_epoch)
        finally:
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the lock
                self._lock_fd = None

    def _close(self, *, clean: bool, broker_epoch: int | None) -> None:
        for writer in self.partitions.values():
            writer.close(clean=clean)
        managed = {k: w for k, w in sorted(self.partitions.items()) if k not in self.unmanaged}

        def offsets(pairs: Iterable[tuple[tuple[str, int], int]]) -> bytes:
            return cpf.encode_offset_checkpoint(cpf.OffsetCheckpoint(tuple(cpf.TopicPartitionOffset(t, p, o) for (t, p), o in pairs)))

        (self.root / cpf.RECOVERY_POINT_OFFSET_CHECKPOINT).write_bytes(offsets((k, w.log_end_offset) for k, w in managed.items()))
        (self.root / cpf.REPLICATION_OFFSET_CHECKPOINT).write_bytes(offsets((k, w.log_end_offset) for k, w in managed.items()))
        (self.root / cpf.LOG_START_OFFSET_CHECKPOINT).write_bytes(
            offsets((k, w.log_start_offset) for k, w in managed.items() if w.log_start_offset > w.segments[0].base_offset)
        )
        (self.root / cpf.CLEANER_OFFSET_CHECKPOINT).write_bytes(offsets(sorted(self.cleaner_offsets.items())))
        if clean:
            content = cpf.CleanShutdown(0, broker_epoch) if broker_epoch is not None else cpf.CleanShutdown()
            (self.root / cpf.CLEAN_SHUTDOWN).write_bytes(cpf.encode_clean_shutdown(content))
