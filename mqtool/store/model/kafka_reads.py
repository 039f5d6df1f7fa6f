"""The Kafka store model's short reads of a segment: what a command reads of a ``.log`` when it
does not read the whole store, walked here so that no ``ops`` module walks log bytes itself.

* :func:`next_offset_from` is ``LogSegment.readNextOffset``: from the last ``.index`` entry's
  position, the last valid batch's offset + 1 (``clean``'s high-watermark bound);
* :func:`largest_batch_timestamp` is the largest batch timestamp of a segment
  (``LogSegment.largestTimestamp`` of an active segment, whose ``TimeIndex`` lags its appends;
  ``clean``'s time rule); inside :func:`short_reads` the two share one walk of a file from 0;
* :class:`BatchScan` reads batches from a position on as the fetch path does
  (``LogSegment.read`` after ``OffsetIndex.lookup``; ``query``): each with its header, its
  bytes and, on demand, its records; a batch whose CRC fails but whose frame holds is kept with
  its error (``DumpLogSegments`` lists such a batch, the broker's consumers stop there);
* :func:`partition_batches` walks a partition's batches in order, segment after segment, each
  segment's walk stopping at its first broken entry (``diff``, which compares two stores batch by
  batch where the store model's reading cannot tell them equal);
* for ``dump``: :func:`log_walk` reads one ``.log`` on its own where the store model's reading
  does not serve the dump (``--max-bytes``, ``--from-offset``, ``--no-crc``), as
  ``DumpLogSegments`` lists it (a batch whose CRC fails but whose frame holds is kept,
  ``isValid: false``); :func:`entry_records` decodes one entry's records;
  :func:`frame_batch_records` frames the records of healthy v2 batches as columns (the
  ``--deep --jsonl`` fast path builds its rows from them); :func:`entry_at` and
  :func:`entries_from` read the entry an index entry points at and the entries from there on
  (``dump kafka-index --verify``: ``OffsetIndex``, ``TimeIndex``, ``TransactionIndex`` entries
  against the log);
* :data:`KAFKA_RANGE` is the ``.log`` framing for ``store.model.framed.read_range``: one byte
  range of a segment, as the Spark ``kafka_log`` source splits a file (upstream
  ``FileRecords``/``LogSegment.recover`` read a log as a chain of entries: offset, size, then
  the batch or message).

A walk that stops at a broken entry names it with the ``MqError`` located in the file, as
``validate`` (the store model's reading) does.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mqtool.errors import CorruptDataError, MqError
from mqtool.findings.code_ids import KAFKA_LOG_GARBAGE
from mqtool.formats import data_end
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import record_columns as rcol
from mqtool.formats.kafka.legacy import LegacyRecord
from mqtool.formats.kafka.log import (
    HEADER_SIZE_UP_TO_MAGIC,
    DataEnd,
    LogEntry,
    LogRecord,
    LogWalker,
    decode_entry,
    peek_entry,
    records_of_batch,
    records_of_message,
)
from mqtool.store import kafka as ks
from mqtool.store.files import Readable, ReadOnlyFile
from mqtool.store.model.framed import Adapt, RangeFraming


def next_offset_from(path: Path, base: int, start: int) -> int:
    """``readNextOffset`` of the segment ``path`` (base offset ``base``), walking from ``start``
    (its last ``.index`` entry's position): the last offset of its valid batches + 1, the base
    offset when it holds none.  When nothing valid starts at ``start`` it walks from 0.  Inside
    ``store.model.kafka.shared_reading`` the walk from 0 is the kept reading's
    (``SegmentResult.next_offset``, the file unchanged since), and so is the walk from ``start``
    when it starts at one of the last entries the kept reading keeps (``SegmentResult.tail``):
    not read again."""
    from mqtool.store.model.kafka_shared import kept_next_offset, kept_tail

    last = None
    tail = (kept_tail(str(path)) or _memo_tail(path)) if start > 0 else None
    at = next((k for k, (pos, _last, _reads) in enumerate(tail or ()) if pos == start), None)
    if tail is not None and at is not None:
        for _pos, off, reads in tail[at:]:
            if not reads:  # the walk from ``start`` stops at it
                break
            last = off if last is None else max(last, off)
        if last is not None:
            return last + 1
        start = 0  # nothing valid starts at ``start``: the walk from it reads nothing, walk from 0
    for attempt in dict.fromkeys((start, 0)):
        if attempt == 0 and (kept := kept_next_offset(str(path))) is not None:
            return kept
        if attempt == 0 and (walked := _from_zero(path)) is not None:
            top = walked[0]
            if top is not None:
                last = top if last is None else max(last, top)
            break
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
    v0/v1 message's own), -1 when there is none or the file cannot be read.  Inside
    ``store.model.kafka.shared_reading``, from the kept reading of the file when there is one
    (unchanged since): not read again."""
    from mqtool.store.model.kafka_shared import kept_largest_timestamp

    kept = kept_largest_timestamp(str(path))
    if kept is not None:
        return kept
    walked = _from_zero(path)
    return walked[1] if walked is not None else -1


#: A file as it is now: (path, (device, inode, size, modification time)).
_FileKey = tuple[str, tuple[int, int, int, int]]
#: Inside ``short_reads``: a file -> ``_from_zero``'s answer, and the walk's last entries when a
#: reading that kept them told (``remember_from_zero``).
_FROM_ZERO: ContextVar[dict[_FileKey, tuple[tuple[int | None, int], list[tuple[int, int, bool]] | None]] | None] = ContextVar("mqtool_kafka_from_zero", default=None)


def _file_key(path: Path) -> _FileKey | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (str(path), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))


@contextmanager
def short_reads() -> Iterator[None]:
    """Inside the block, the walk from position 0 that ``next_offset_from`` and
    ``largest_batch_timestamp`` both make of a segment is made once per file (unchanged since):
    a command that asks both of an active segment (``clean``) reads it once."""
    token = _FROM_ZERO.set({})
    try:
        yield
    finally:
        _FROM_ZERO.reset(token)


def remember_from_zero(path: Path, walked: tuple[int | None, int], tail: list[tuple[int, int, bool]]) -> None:
    """Inside ``short_reads``: what a reading of ``path`` under way made of its walk from 0 (the
    store model's: ``kafka_commits.SegmentCommits.header_walk``, and the walk's last entries as
    ``SegmentResult.tail`` keeps them), so that it is not walked again."""
    memo = _FROM_ZERO.get()
    key = _file_key(path) if memo is not None else None
    if memo is not None and key is not None:
        memo[key] = (walked, tail)


def _memo_tail(path: Path) -> list[tuple[int, int, bool]] | None:
    memo = _FROM_ZERO.get()
    key = _file_key(path) if memo is not None else None
    got = memo.get(key) if memo is not None and key is not None else None
    return got[1] if got is not None else None


def _from_zero(path: Path) -> tuple[int | None, int] | None:
    """The valid entries of ``path`` from position 0 (a ``header`` walk, stopping at the first
    whose header or CRC does not read): (their largest last offset, None for none; their largest
    timestamp, -1 for none).  None when the file cannot be read (each caller says what then)."""
    memo = _FROM_ZERO.get()
    key = _file_key(path) if memo is not None else None
    if memo is not None:
        if key is None:
            return None
        if key in memo:
            return memo[key][0]
    last: int | None = None
    best = -1
    try:
        with ReadOnlyFile(path) as f:
            for _pos, entry in ks.LogFileWalk(f, 0, mode="header"):
                h = entry.header  # never None in the header mode
                off = h.last_offset if isinstance(h, rb.BatchHeader) else entry.offset
                last = off if last is None else max(last, off)
                if h is not None:
                    best = max(best, h.max_timestamp if isinstance(h, rb.BatchHeader) else h.timestamp)
    except MqError:
        return None
    if memo is not None and key is not None:
        memo[key] = ((last, best), None)
    return last, best


@dataclass(frozen=True)
class WalkedBatch:
    """One valid entry of a partition's walk: its segment's ``path``, its file ``position``, the
    ``entry`` (header decoded, CRC checked) and its ``raw`` bytes."""

    path: Path
    position: int
    entry: LogEntry
    raw: bytes


@dataclass(frozen=True)
class BrokenSegment:
    """A segment whose walk stopped at a broken entry: the segment (``path``, ``base_offset``),
    where its valid entries end (``end``: a ``broken`` ``DataEnd`` whose ``error`` is the located
    ``MqError`` there), and how many valid entries the walk read before it (``walked``)."""

    path: Path
    base_offset: int
    end: data_end.DataEnd[str]
    walked: int


def partition_batches(part: ks.KafkaPartition) -> Iterator[WalkedBatch | BrokenSegment]:
    """The partition's entries in order, segment after segment; a segment's walk stops at its
    first broken entry (a batch that does not decode, which is damage) -- a torn tail (a
    ``partial`` end) only ends the last segment: before a later one it is lost data, a broken
    entry too -- yielded as a ``BrokenSegment``, and the walk goes on with the next segment."""
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
            yield BrokenSegment(seg.log, seg.base_offset, data_end.DataEnd("broken", walk.valid_end, error=error), walk.count)


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


# --- dump: a .log read on its own, the records of one entry, healthy batches' records as columns -----


class EntryWalk(Protocol):
    """A walk of one ``.log`` as a dump consumes it: ``(position, entry)`` pairs, the piece of the
    file the current entry lies in (``buffer`` from ``buffer_start``), the entries kept despite a
    failing CRC (``damaged``, ``finding_code``) and, once over, how it ended (``end``, or
    ``error`` at ``valid_end``).  Both :func:`log_walk` and a walk through the store model's
    reading (``read_store_entries``) are one."""

    @property
    def buffer(self) -> bytes: ...
    @property
    def buffer_start(self) -> int: ...
    @property
    def damaged(self) -> dict[int, MqError]: ...
    @property
    def error(self) -> MqError | None: ...
    @property
    def end(self) -> DataEnd | None: ...
    @property
    def limited(self) -> bool: ...
    @property
    def count(self) -> int: ...
    @property
    def valid_end(self) -> int: ...
    def finding_code(self, position: int) -> str | None: ...
    def __iter__(self) -> Iterator[tuple[int, LogEntry]]: ...


def log_walk(f: ReadOnlyFile, start: int, *, check_crc: bool, limit: int | None) -> EntryWalk:
    """One ``.log`` read on its own from ``start`` (a dump with ``--max-bytes``, ``--from-offset``
    or ``--no-crc``, which the store model's reading does not serve): header mode, each entry's
    CRC checked unless ``check_crc`` is off, an entry whose CRC fails but whose frame holds kept
    (as ``kafka-dump-log`` lists it, ``isValid: false``), ``limit`` the position it stops at."""
    return ks.LogFileWalk(f, start, mode="header", check_crc=check_crc, limit=limit, keep_damaged=True)


#: An entry's logical records and, for a v2 batch, its records as stored.
EntryRecords = tuple[tuple[LogRecord, ...], tuple[rb.Record, ...] | None]


def entry_records(path: Path, at: int, entry: LogEntry, buffer: bytes, rel: int, *, check_crc: bool, max_size: int) -> EntryRecords:
    """The logical records of the entry at file position ``at`` (its bytes at ``buffer[rel:]``)
    and, for a v2 batch, its records as stored: a v2 batch's records decompressed (at most
    ``max_size`` bytes) without its CRC checked (the walk judged it), a v0/v1 message's or its
    wrapper's inner ones, their CRCs checked when ``check_crc``.  Raises the ``MqError`` (located
    in the file) of records that do not decode, ``UnsupportedFormatError`` for a codec that is not
    installed."""
    h = entry.header
    if isinstance(h, rb.BatchHeader):
        try:
            batch = rb.decode_batch(buffer, rel, check_crc=False, max_decompressed_size=max_size)
        except MqError as exc:
            raise exc.at(path, at - rel) from None
        return records_of_batch(batch), batch.records
    assert isinstance(h, LegacyRecord)  # a v0/v1 entry of a header or full walk
    return records_of_message(h, at, check_crc=check_crc, max_size=max_size), None


def frame_batch_records(data: bytes, starts: list[int], ends: list[int], counts: list[int]) -> tuple[list[bool], rcol.RecordColumns]:
    """The records of healthy v2 batches as columns: ``data`` holds each batch's records
    (decompressed) back to back, batch ``i``'s in ``data[starts[i]:ends[i]]``, ``counts[i]`` of
    them; returns which batches the framer accepted and the accepted batches' records
    (``record_columns.frame_records``; a refused batch is read precisely by the caller)."""
    return rcol.frame_records(data, starts, ends, counts)


def entry_at(log: ReadOnlyFile, position: int) -> LogEntry:
    """The entry at ``position`` of an open ``.log``, header decoded, CRC checked (raises the
    located ``MqError`` when none reads there): what an index entry points at."""
    return ks.read_entry_at(log, position, mode="header")


def entries_from(log: ReadOnlyFile, position: int, *, full: bool = False) -> Iterator[tuple[int, LogEntry]]:
    """The valid entries of an open ``.log`` from ``position`` on (from 0 when it is at or past
    the end), CRCs not checked: header decoded, or with ``full`` their records too."""
    start = position if position < log.size else 0
    yield from ks.LogFileWalk(log, start, mode="full" if full else "header", check_crc=False)


# --- ranges of a segment (the Spark kafka_log source's splits) ----------------------------------------
# A range is read by ``store.model.framed.read_range`` with the ``formats.kafka.log.LogWalker``
# over each piece, a sync point where an entry decodes with a good CRC, the store's rules for a
# broken entry's code (``store.kafka.entry_error_code``), a frame that holds around a failed CRC
# (``store.kafka.framed_entry``) and a cut last entry that cannot be a torn write
# (``store.kafka.not_a_torn_write``).


def _range_decodes(f: Readable, pos: int) -> int | None:
    head = f.pread(pos, 17)
    if len(head) < 17:
        return None
    _offset, size, magic = peek_entry(head, 0)
    if not 0 <= magic <= 2 or size < (49 if magic == 2 else 14) or 12 + size > min(f.size - pos, ks.MAX_ENTRY_SIZE):
        return None
    try:
        decode_entry(f.pread(pos, 12 + size), 0, mode="header", check_crc=True)
    except MqError:
        return None
    return 12 + size


def _range_candidates(chunk: bytes) -> Iterator[int]:
    unpack = struct.Struct(">i").unpack_from
    for i in range(max(0, len(chunk) - 16)):
        if chunk[i + 16] <= 2 and unpack(chunk, i + 8)[0] >= 14:
            yield i


def _range_framed(data: bytes, rel: int, exc: MqError) -> tuple[object, int] | None:
    entry = ks.framed_entry(data, rel, exc, "full")
    return (entry, entry.size) if entry is not None else None


def _range_item(entry: object) -> tuple[int, object, int]:
    assert isinstance(entry, LogEntry)
    return entry.position, entry, entry.size


def _range_torn_check(head: bytes, length: int, last: object) -> MqError | None:
    """Why an entry cut by the end of the segment cannot be a torn write (the store's rule)."""
    return ks.not_a_torn_write(head, length, last.last_offset if isinstance(last, LogEntry) else None)


#: Kafka's ``.log`` range framing (``store.model.framed.read_range``)
KAFKA_RANGE = RangeFraming(
    walker=lambda data: Adapt(LogWalker(data, 0, mode="full"), _range_item),
    framed=_range_framed,
    decodes=_range_decodes,
    candidates=_range_candidates,
    classify=ks.entry_error_code,
    region_code=KAFKA_LOG_GARBAGE,
    max_record=ks.MAX_ENTRY_SIZE,
    torn_check=_range_torn_check,
    judged=HEADER_SIZE_UP_TO_MAGIC,
)
