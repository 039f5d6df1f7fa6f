"""The Kafka store model's short reads of a segment: what a command reads of a ``.log`` when it
does not read the whole store, walked here so that no ``ops`` module walks log bytes itself.

* :func:`next_offset_from` is ``LogSegment.readNextOffset``: from the last ``.index`` entry's
  position, the last valid batch's offset + 1 (``clean``'s high-watermark bound);
* :func:`largest_batch_timestamp` is the largest batch timestamp of a segment
  (``LogSegment.largestTimestamp`` of an active segment, whose ``TimeIndex`` lags its appends;
  ``clean``'s time rule);
* :class:`BatchScan` reads batches from a position on as the fetch path does
  (``LogSegment.read`` after ``OffsetIndex.lookup``; ``query``): each with its header, its
  bytes and, on demand, its records; a batch whose CRC fails but whose frame holds is kept with
  its error (``DumpLogSegments`` lists such a batch, the broker's consumers stop there);
* :func:`partition_batches` walks a partition's batches in order, segment after segment, each
  segment's walk stopping at its first broken entry (``diff``, which compares two stores batch by
  batch where the store model's reading cannot tell them equal).

A walk that stops at a broken entry names it with the ``MqError`` located in the file, as
``validate`` (the store model's reading) does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.legacy import LegacyRecord
from mqtool.formats.kafka.log import LogEntry, LogRecord, records_of_batch, records_of_message
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile


def next_offset_from(path: Path, base: int, start: int) -> int:
    """``readNextOffset`` of the segment ``path`` (base offset ``base``), walking from ``start``
    (its last ``.index`` entry's position): the last offset of its valid batches + 1, the base
    offset when it holds none.  When nothing valid starts at ``start`` it walks from 0."""
    last = None
    for attempt in (start, 0):
        try:
            with ReadOnlyFile(path) as f:
                if attempt > f.size:
                    continue
                walk = ks.LogFileWalk(f, attempt, mode="header")
                for _pos, entry in walk:
                    h = entry.header
                    off = h.last_offset if isinstance(h, rb.BatchHeader) else entry.offset
                    last = off if last is None else max(last, off)
                if walk.error is not None and attempt and last is None:
                    continue
        except MqError:
            continue
        break
    return base if last is None else last + 1


def largest_batch_timestamp(path: Path) -> int:
    """The largest timestamp of the valid batches of ``path`` (a v2 batch's ``max_timestamp``, a
    v0/v1 message's own), -1 when there is none or the file cannot be read."""
    best = -1
    try:
        with ReadOnlyFile(path) as f:
            for _pos, entry in ks.LogFileWalk(f, 0, mode="header"):
                h = entry.header  # never None in the header mode
                if h is not None:
                    best = max(best, h.max_timestamp if isinstance(h, rb.BatchHeader) else h.timestamp)
    except MqError:
        best = -1
    return best


@dataclass(frozen=True)
class WalkedBatch:
    """One valid entry of a partition's walk: its segment's ``path``, its file ``position``, the
    ``entry`` (header decoded, CRC checked) and its ``raw`` bytes."""

    path: Path
    position: int
    entry: LogEntry
    raw: bytes


@dataclass(frozen=True)
class WalkStop:
    """Where a segment's walk stopped at a broken entry: the segment (``path``, ``base_offset``),
    the ``position`` where its valid entries end, the ``error`` there, and how many valid entries
    the walk read before it (``walked``)."""

    path: Path
    base_offset: int
    position: int
    error: MqError
    walked: int


def partition_batches(part: ks.KafkaPartition) -> Iterator[WalkedBatch | WalkStop]:
    """The partition's entries in order, segment after segment; a segment's walk stops at its
    first broken entry (a batch that does not decode, which is damage) -- a torn tail (a
    ``partial`` end) only ends the last segment: before a later one it is lost data, a broken
    entry too -- yielded as a ``WalkStop``, and the walk goes on with the next segment."""
    segments = part.log_segments()
    for i, seg in enumerate(segments):
        if seg.log is None:  # (log_segments: every one has its .log)
            continue
        with ReadOnlyFile(seg.log) as f:
            walk = ks.LogFileWalk(f, mode="header")
            for pos, entry in walk:
                start = pos - walk.buffer_start
                yield WalkedBatch(seg.log, pos, entry, bytes(walk.buffer[start : start + entry.size]))
            error: MqError | None = walk.error
            if error is None and walk.end is not None and walk.end.kind == "partial" and i < len(segments) - 1:
                # a torn tail only ends the last segment; before a later one it is lost data
                error = CorruptDataError(
                    path=seg.log,
                    position=walk.end.position,
                    expected="whole entries up to the end of a segment that is not the last",
                    found=f"an entry of {walk.end.length} bytes with {f.size - walk.end.position} present",
                )
        if error is not None:
            yield WalkStop(seg.log, seg.base_offset, walk.valid_end, error, walk.count)


@dataclass(frozen=True)
class ScannedBatch:
    """One entry a ``BatchScan`` read: its file ``position``, the ``entry`` (header decoded), its
    bytes at ``buffer[rel:]``, the ``damage`` of an entry kept despite its CRC (None when it
    holds) and the ``finding`` code that damage is (KAFKA-LOG-CRC)."""

    path: Path
    position: int
    entry: LogEntry
    buffer: bytes
    rel: int
    damage: MqError | None
    finding: str | None

    def records(self) -> tuple[tuple[LogRecord, ...], tuple[rb.Record, ...] | None]:
        """The entry's logical records (a v2 batch's, a v0/v1 message's or its wrapper's inner
        ones) and, for a v2 batch, its records as stored (control records' keys and values);
        CRCs checked unless the entry is kept despite its CRC.  Raises the ``MqError`` (located
        in the file) of records that do not decode."""
        check = self.damage is None
        try:
            if self.entry.magic == 2:
                batch = rb.decode_batch(self.buffer, self.rel, check_crc=check)
                return records_of_batch(batch), batch.records
            header = self.entry.header
            assert isinstance(header, LegacyRecord)  # a v0/v1 entry of a "header" walk
            return records_of_message(header, 0, check_crc=check), None
        except MqError as exc:
            raise exc.at(self.path, self.position - self.rel) from None


class BatchScan:
    """The entries of an open ``.log`` from ``position`` on, as the fetch path reads them
    (``LogSegment.read``): header decoded, CRC checked; an entry whose CRC fails but whose frame
    holds is kept with its damage and the scan reads on after it.  ``error``: the broken entry
    the scan stopped at, once it is over (None at a clean end)."""

    def __init__(self, f: ReadOnlyFile, position: int) -> None:
        self._walk = ks.LogFileWalk(f, position, mode="header", check_crc=True, keep_damaged=True)
        self._path = Path(f.path)

    def __iter__(self) -> Iterator[ScannedBatch]:
        walk = self._walk
        for pos, entry in walk:
            yield ScannedBatch(self._path, pos, entry, walk.buffer, pos - walk.buffer_start, walk.damaged.get(pos), walk.finding_code(pos))

    @property
    def error(self) -> MqError | None:
        return self._walk.error


def largest_timestamp_from(path: Path, position: int) -> int | None:
    """The largest timestamp of the valid entries of ``path`` from ``position`` on (from 0 when
    ``position`` is at or past its end; CRCs not checked: a hint, as the broker's
    ``LogSegment.largestTimestamp`` rebuilt from the batches after the last time-index entry),
    None when there is none."""
    largest: int | None = None
    with ReadOnlyFile(path) as f:
        if position >= f.size:
            position = 0
        for _pos, entry in ks.LogFileWalk(f, position, mode="header", check_crc=False):
            h = entry.header
            if h is None:
                continue
            ts = h.max_timestamp if isinstance(h, rb.BatchHeader) else h.timestamp
            largest = ts if largest is None else max(largest, ts)
    return largest
