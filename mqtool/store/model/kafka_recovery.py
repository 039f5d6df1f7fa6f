"""What Kafka's ``LogSegment.recover`` makes of a segment, read once by the Kafka model for recover.

``recover`` plans the broker's load (``LogLoader.load``): this module is the part of it that reads
``.log`` bytes, so that no ``ops`` module walks a segment itself.

* :func:`scan_segment` runs ``LogSegment.recover`` over one ``.log`` (read-only): batches are read
  while their size and CRC are valid and, for a control batch with a producer id, its
  end-transaction marker reads (``LogSegment.recover`` -> ``ProducerStateManager``); a batch whose
  offset cannot be stored relative to the segment's base offset stops it
  (``LogSegmentOffsetOverflowException``: the broker splits the segment); an index entry every
  ``index.interval.bytes`` (``OffsetIndex``/``TimeIndex.maybeAppend``), and an index entry whose
  offset goes backwards empties the segment (``InvalidOffsetException``).  It returns where valid
  data ends, the indexes recovery builds, the epochs and the transaction markers met.
* :func:`count_valid_from` counts the records of the valid batches from a position on, resyncing
  on the next batch with a valid size and CRC: what a cut drops.
* :func:`next_offset` is ``LogSegment.readNextOffset``; :func:`batch_starts` the positions of the
  batches up to a position (to infer ``index.interval.bytes`` from an existing ``.index``);
  :func:`transaction_events` the producer-id batches of a segment (to replay producer state).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import MqError, StoreLayoutError
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.formats.kafka.legacy import LegacyRecord
from mqtool.formats.kafka.log import LogEntry, peek_entry
from mqtool.store import kafka as ks
from mqtool.store.files import CHUNK_SIZE, ReadOnlyFile, nonzero_extent

INT32_MAX = 2**31 - 1
#: How far past a broken batch the count of the valid batches it condemns looks (bytes).
RESYNC_LIMIT = 64 << 20


@dataclass
class RecoveryScan:
    """What ``LogSegment.recover`` makes of one segment."""

    size: int
    valid_bytes: int = 0
    end: str = "eof"  # eof, zeros, partial, corrupt, control, invalid-offset, overflow, too-large
    detail: str = ""
    entries: int = 0
    records: int = 0
    last_offset: int | None = None
    index: list[kidx.OffsetPosition] = field(default_factory=list)
    timeindex: list[kidx.TimestampOffset] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)  # (epoch, base offset) where the epoch grows
    txn: list[tuple[str, int, int]] = field(default_factory=list)  # ("data"|"abort"|"commit", producer id, offset)
    aborts: list[ktxn.AbortedTxn] = field(default_factory=list)  # filled by the partition's txn replay

    @property
    def cut(self) -> int:
        return self.size - self.valid_bytes


def records_of(entry: LogEntry) -> int:
    """The records of a batch as its header counts them; 1 for a v0/v1 entry (a wrapper counts once)."""
    h = entry.header
    if isinstance(h, rb.BatchHeader):
        return max(h.records_count, 0)
    return 1


def entry_facts(entry: LogEntry) -> tuple[int, int, int, int, bool, bool]:
    """``(last offset, max timestamp, leader epoch, producer id, control, transactional)``."""
    h = entry.header
    if isinstance(h, rb.BatchHeader):
        return h.last_offset, h.max_timestamp, h.partition_leader_epoch, h.producer_id, h.is_control_batch, h.is_transactional
    return entry.offset, h.timestamp if isinstance(h, LegacyRecord) else -1, -1, -1, False, False


def marker_type(buf: bytes, rel: int) -> int:
    """Type of the end-transaction marker of the control batch at ``buf[rel:]`` (raises MqError)."""
    batch = rb.decode_batch(buf, rel, check_crc=False)
    if not batch.records:
        raise StoreLayoutError("control batch without records")
    key, _value = rb.decode_control_record(batch.records[0])
    if key.type not in (rb.ABORT, rb.COMMIT):
        raise StoreLayoutError(f"control record {key.type_name} where an end-transaction marker belongs")
    return key.type


def scan_segment(path: Path, base: int, interval: int) -> RecoveryScan:
    """Run ``LogSegment.recover`` over one ``.log`` (read-only): where valid data ends, and the
    indexes recovery builds for it."""
    with ReadOnlyFile(path) as f:
        scan = RecoveryScan(f.size)
        if f.size > ks.MAX_SEGMENT_SIZE:
            scan.end, scan.valid_bytes = "too-large", f.size
            scan.detail = f"a .log of {f.size} bytes, more than the broker opens"
            return scan
        walk = ks.LogFileWalk(f, 0, mode="header", check_crc=True)
        max_ts, offset_of_max = -1, -1
        last_index_pos = 0
        epoch_seen = -1
        stop: tuple[str, int, str] | None = None
        for pos, entry in walk:
            last, ts, epoch, pid, control, transactional = entry_facts(entry)
            if not 0 <= last - base <= INT32_MAX:
                stop = ("overflow", pos, f"offset {last} cannot be stored relative to the base offset {base} (the broker splits the segment)")
                break
            marker = None
            if control and pid >= 0:
                try:
                    marker = marker_type(walk.buffer, pos - walk.buffer_start)
                except MqError as exc:
                    stop = ("control", pos, f"the end-transaction marker of the control batch at {pos} does not read ({exc})")
                    break
            if ts > max_ts:
                max_ts, offset_of_max = ts, last
            if pos - last_index_pos > interval:
                if scan.index and last <= scan.index[-1].offset:
                    stop = ("invalid-offset", pos, f"the batch at {pos} ends at offset {last}, not after the indexed offset {scan.index[-1].offset}")
                    break
                if scan.timeindex and offset_of_max < scan.timeindex[-1].offset:
                    stop = ("invalid-offset", pos, f"time-index offset {offset_of_max} below the previous entry's {scan.timeindex[-1].offset}")
                    break
                scan.index.append(kidx.OffsetPosition(last, pos))
                if max_ts > (scan.timeindex[-1].timestamp if scan.timeindex else -1):
                    scan.timeindex.append(kidx.TimestampOffset(max_ts, offset_of_max))
                last_index_pos = pos
            scan.entries += 1
            scan.records += records_of(entry)
            scan.last_offset = last if scan.last_offset is None else max(scan.last_offset, last)
            if epoch >= 0 and epoch > epoch_seen and entry.offset >= 0:
                scan.epochs.append((epoch, entry.offset))
                epoch_seen = epoch
            if pid >= 0:
                if marker is not None:
                    scan.txn.append(("abort" if marker == rb.ABORT else "commit", pid, entry.offset))
                elif transactional and not control:
                    scan.txn.append(("data", pid, entry.offset))
            scan.valid_bytes = pos + entry.size
        if stop is None and scan.timeindex and offset_of_max < scan.timeindex[-1].offset:
            stop = ("invalid-offset", scan.valid_bytes, f"the largest timestamp is at offset {offset_of_max}, below the time index's {scan.timeindex[-1].offset}")
        if stop is not None:
            scan.end, position, scan.detail = stop
            if scan.end == "overflow":
                scan.valid_bytes = f.size  # left alone: the broker splits it, mqtool does not
            elif scan.end == "invalid-offset":
                scan.valid_bytes = 0  # InvalidOffsetException: "Deleting the corrupt segment and creating an empty one"
                scan.index, scan.timeindex, scan.txn, scan.epochs = [], [], [], []
                scan.last_offset = None
            else:
                scan.valid_bytes = position
            return scan
        if walk.error is not None:
            scan.end = "corrupt"
            scan.valid_bytes = walk.failed_at if walk.failed_at is not None else scan.valid_bytes
            scan.detail = f"invalid batch at {scan.valid_bytes}: {walk.error}"
        else:
            assert walk.end is not None
            scan.end = walk.end.kind
            scan.valid_bytes = walk.end.position
            if walk.end.kind == "zeros" and scan.valid_bytes < f.size:
                scan.detail = f"{f.size - scan.valid_bytes} zero bytes after the last batch (read as a batch of size 0)"
            elif walk.end.kind == "partial":
                scan.detail = f"a partially written batch of {f.size - scan.valid_bytes} bytes at {scan.valid_bytes}"
        # the final entry ``LogSegment.recover`` forces (``maybeAppend(..., skipFullCheck=true)``)
        if max_ts > (scan.timeindex[-1].timestamp if scan.timeindex else -1):
            scan.timeindex.append(kidx.TimestampOffset(max_ts, offset_of_max))
        return scan


# --- counting what a cut drops ------------------------------------------------------------------------


def _resync(f: ReadOnlyFile, start: int, limit: int) -> int | None:
    """First position in ``[start, limit)`` where a batch with a valid size and CRC starts."""
    pos = start
    overlap = 16
    while pos + 17 <= min(f.size, limit):
        chunk = f.pread(pos, min(CHUNK_SIZE, limit - pos) + overlap)
        n = len(chunk)
        candidates = sorted(i for m in (b"\x00", b"\x01", b"\x02") for i in _find_all(chunk, m, 16))
        for i in candidates:
            rel = i - 16
            size = peek_entry(chunk, rel)[1]  # the candidate magic at rel + 16: 17 bytes are there
            if size < 14 or size > ks.MAX_ENTRY_SIZE or pos + rel + 12 + size > f.size:
                continue
            try:
                ks.read_entry_at(f, pos + rel, mode="header")
            except MqError:
                continue
            return pos + rel
        if n <= overlap + 17:
            break
        pos += n - overlap
    return None


def _find_all(data: bytes, pattern: bytes, start: int) -> Iterator[int]:
    i = data.find(pattern, start)
    while i >= 0:
        yield i
        i = data.find(pattern, i + 1)


def count_valid_from(path: Path, start: int) -> tuple[int, bool]:
    """Records of the valid batches from ``start`` on (resynchronising on the next batch with a
    valid size and CRC after anything else), and whether the count is complete (False: more than
    ``RESYNC_LIMIT`` bytes were left unexamined)."""
    count = 0
    undecoded = False  # a compressed v0/v1 wrapper whose inner messages could not be counted
    with ReadOnlyFile(path) as f:
        budget_end = start + RESYNC_LIMIT
        searched_from = start
        pos = _resync(f, start, budget_end)
        while pos is not None:
            walk = ks.LogFileWalk(f, pos, mode="header")
            for p, entry in walk:
                if isinstance(entry.header, LegacyRecord) and entry.header.is_compressed:
                    # a v0/v1 wrapper: its inner messages are the records an operator loses
                    try:
                        count += len(ks.read_entry_at(f, p, mode="full").records or ())
                    except MqError:
                        count += 1
                        undecoded = True
                else:
                    count += records_of(entry)
            if walk.error is None and walk.end is not None and walk.end.kind == "eof":
                return count, not undecoded
            stop = walk.failed_at if walk.error is not None and walk.failed_at is not None else walk.valid_end
            if stop + 17 > f.size:
                return count, not undecoded
            searched_from = stop + 1
            pos = _resync(f, searched_from, budget_end)
        # the search gave up at the budget: is there anything past it?
        beyond = max(searched_from, budget_end)
        complete = beyond >= f.size or nonzero_extent(f, beyond) is None
    return count, complete and not undecoded


def next_offset(path: Path, base: int) -> int:
    """``readNextOffset`` of a segment file: one past the last valid batch (the base when empty)."""
    last = None
    try:
        with ReadOnlyFile(path) as f:
            for _pos, entry in ks.LogFileWalk(f, 0, mode="header"):
                off = entry_facts(entry)[0]
                last = off if last is None else max(last, off)
    except MqError:
        pass
    return base if last is None else last + 1


def batch_starts(path: Path, upto: int) -> list[int]:
    """Positions of the valid batches of a ``.log`` that start before ``upto``."""
    with ReadOnlyFile(path) as f:
        return [pos for pos, _entry in ks.LogFileWalk(f, 0, mode="framing", limit=min(f.size, upto))]


def transaction_events(path: Path, from_offset: int | None) -> Iterator[tuple[int, str, int]]:
    """``(producer id, "end" | "data", base offset)`` of the valid batches of a ``.log`` that carry
    a producer id (at or after ``from_offset``): an end-transaction marker whose control record
    reads, or transactional data."""
    with ReadOnlyFile(path) as f:
        walk = ks.LogFileWalk(f, 0, mode="header")
        for pos, entry in walk:
            _last, _ts, _e, pid, control, transactional = entry_facts(entry)
            if pid < 0 or (from_offset is not None and entry.offset < from_offset):
                continue
            if control:
                try:
                    marker_type(walk.buffer, pos - walk.buffer_start)
                except MqError:
                    continue
                yield pid, "end", entry.offset
            elif transactional:
                yield pid, "data", entry.offset


__all__ = [
    "RESYNC_LIMIT",
    "RecoveryScan",
    "batch_starts",
    "count_valid_from",
    "entry_facts",
    "marker_type",
    "next_offset",
    "records_of",
    "scan_segment",
    "transaction_events",
]
