"""The Kafka store model's reading of one segment: what ``LogSegment.recover`` and the loader
check of a ``.log`` and its indexes, stated as findings (phase 2 of ``store.model.kafka``'s reading).

A ``SegmentTask`` (or, for a big segment read ``deep`` over several processes, a ``DeepRangeTask``)
streams its ``.log`` in pieces of ``WALK_CHUNK`` bytes (``store.kafka.LogFileWalk``) and its
``.index``, ``.timeindex`` and ``.txnindex`` side by side: entry framing, sizes, CRC-32C/CRC-32,
the end-transaction marker of control batches with a producer id (``LogSegment.recover``),
offsets increasing inside the segment's 32-bit relative range, partition leader epochs, every
index entry against the batch it points at (``OffsetIndex``, ``TimeIndex``,
``TransactionIndex``), how the segment ends (clean, zero tail, torn tail, garbage), and with
``deep`` every record (``DefaultRecordBatch``, v0/v1 wrappers).  After a broken entry the walk
resynchronises on the next valid one.  The result is a ``SegmentResult``: findings as ``Placed``
and a few numbers; ``SegmentScan`` hands each judged entry to a consumer as it reads
(``read_store_entries``), so a command reads the segment once, and a consumer's ``SegmentFold``
(``SegmentTask.fold``) is fed the same entries by the same walk, in whichever process reads the
segment (``SegmentResult.fold_result``).  The types a consumer meets are
:mod:`mqtool.store.model.kafka_entries`'s; the index files read side by side are
:mod:`mqtool.store.model.kafka_indexes`' streams.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from mqtool.errors import ChecksumError, CorruptDataError, MqError, StoreIOError, UnsupportedFormatError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import (
    KAFKA_FILE_TOO_LARGE,
    KAFKA_FILE_UNREADABLE,
    KAFKA_INDEX_MULTI_BATCH,
    KAFKA_INDEX_OFFSET,
    KAFKA_INDEX_POSITION,
    KAFKA_LOG_COMPRESSION,
    KAFKA_LOG_CONTROL,
    KAFKA_LOG_CRC,
    KAFKA_LOG_EPOCH,
    KAFKA_LOG_GARBAGE,
    KAFKA_LOG_MAGIC,
    KAFKA_LOG_RECORD_OFFSET,
    KAFKA_LOG_RECORDS,
    KAFKA_LOG_SIZE,
    KAFKA_LOG_TIMESTAMP,
    KAFKA_LOG_TORN_TAIL,
    KAFKA_LOG_UNSUPPORTED,
    KAFKA_LOG_VALID_END,
    KAFKA_LOG_ZERO_TAIL,
    KAFKA_OFFSET_GAP,
    KAFKA_OFFSET_ORDER,
    KAFKA_OFFSET_RANGE,
    KAFKA_TIMEINDEX_ENTRY,
    KAFKA_TIMEINDEX_STALE,
    KAFKA_TXNINDEX_ENTRY,
    KAFKA_TXNINDEX_MISSING,
)
from mqtool.formats.kafka import compression, record_scan
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import legacy as klegacy
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.formats.kafka.log import LogEntry, decode_entry, records_of_message
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, nonzero_extent, piece_size
from mqtool.store.model.kafka_entries import EntryDecode, FirstWalk, Folds, ScannedEntry, SegmentFold, SegmentFolder, folds_of
from mqtool.store.model.kafka_indexes import IndexFileResult, _IndexStream

if TYPE_CHECKING:
    from mqtool.store.model.kafka_recovery import CutFacts, CutFold, RecoveryFold, RecoveryScan

_V2_MIN_LENGTH = rb.RECORD_BATCH_OVERHEAD - rb.LOG_OVERHEAD  # 49
INT32_MAX = 2**31 - 1
#: Bytes of ``.log`` read at a time by the walks of this module.  Smaller than the store's
#: default chunk: a fresh 8 MiB buffer per read costs page faults that a 1 MiB one, reused by the
#: allocator, does not (measured: 13 ms against 3 ms to read 33 MiB); an entry larger than this
#: is still read whole.
WALK_CHUNK = 1 << 20
#: Bytes of a segment's first read; each next read is twice as large, up to the piece
#: (``LogFileWalk(first_piece=...)``): a consumer of the reading that stops after a few entries
#: (``dump --limit``) reads little more than them.
FIRST_PIECE = 64 << 10
#: ``index.interval.bytes`` the broker defaults to (``LogConfig``): what recover's fold of a
#: segment uses when its plan does not say otherwise (``kafka_recovery.DEFAULT_INTERVAL``).
RECOVERY_INTERVAL = 4096
E, W = Severity.error, Severity.warning
T = TypeVar("T")
#: Checkpoint file name -> (its path, its ``(topic, partition) -> offset`` table when readable).
OffsetCheckpoints = dict[str, tuple[Path | None, dict[tuple[str, int], int] | None]]


# --- what the reading yields ------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    """A finding and the file whose summary it counts toward (None: the store's, or no file's)."""

    finding: Finding
    file: str | None = None


class Sink:
    """Findings in the order the reading states them; ``drain`` hands them over."""

    def __init__(self) -> None:
        self.items: list[Placed] = []

    def add(self, finding: Finding, file: str | None = None) -> None:
        self.items.append(Placed(finding, file))

    def drain(self) -> list[Placed]:
        items, self.items = self.items, []
        return items


# --- phase 2: one segment ---------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentTask:
    partition: str
    log: str
    base_offset: int
    named: bool = True
    index: str | None = None
    timeindex: str | None = None
    txnindex: str | None = None
    is_last: bool = True
    deep: bool = False
    indexes: bool = True
    kraft_snapshot: bool = False
    max_decompressed_size: int = compression.DEFAULT_MAX_DECOMPRESSED_SIZE
    #: --deep: walk healthy batches' records with the compiled walk (``record_scan``).
    compiled_walk: bool = False
    #: --deep: record checks only for entries at or after this position (the ones before are
    #: shared out to ``DeepRangeTask``s when a big segment is split for ``--jobs``).
    deep_from: int = 0
    #: Bytes of ``.log`` read at a time (``WALK_CHUNK``): the answer never depends on it.
    piece: int = WALK_CHUNK
    #: Also fold the segment into ``LogSegment.recover`` with this ``index.interval.bytes``
    #: (``SegmentResult.recovery``): the reading inside ``shared_reading`` keeps it for recover's
    #: plan, which then reads the segment no more.
    recovery_interval: int | None = None
    #: Also say what a cut where ``LogSegment.recover`` stops removes (``SegmentResult.cut``: the
    #: records ``count_valid_from`` counts there, the bytes' CRC-32), as the walk reads the
    #: segment: recover's plan then reads none of it again (implied by ``recovery_interval``).
    cuts: bool = False
    #: A consumer's fold of the segment's entries (``SegmentFold``; ``Folds`` for several), run by
    #: the same walk as the checks; what it makes is ``SegmentResult.fold_result``.
    fold: SegmentFold | Folds | None = None


@dataclass(frozen=True)
class DeepRangeTask:
    """--deep record checks of the entries starting in ``[start, stop)`` of one segment (batch
    boundaries found by a framing walk), so one big segment's records are decoded in parallel.
    The segment's own task does every other check; this one only reports the deep codes."""

    log: str
    base_offset: int
    named: bool
    start: int
    stop: int
    prior: int | None  # the last offset before ``start``
    max_decompressed_size: int = compression.DEFAULT_MAX_DECOMPRESSED_SIZE
    compiled_walk: bool = False


@dataclass
class SegmentResult:
    path: str
    partition: str
    base_offset: int
    is_last: bool
    size: int = 0
    entries: int = 0
    records: int = 0
    valid_end: int = 0
    end_kind: str | None = None
    first_offset: int | None = None
    last_offset: int | None = None
    max_timestamp: int = -1
    #: ``[epoch, first offset, last offset]`` runs of partition leader epochs (v2 batches).
    epochs: list[list[int]] = field(default_factory=list)
    magics: set[int] = field(default_factory=set)
    codecs: set[int] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)
    indexes: list[IndexFileResult] = field(default_factory=list)
    #: ``SegmentTask.recovery_interval``: what ``LogSegment.recover`` makes of the segment
    #: (``kafka_recovery.RecoveryScan``; None when it does not read it: too large, unreadable)
    recovery: RecoveryScan | None = None
    #: a reading kept inside ``shared_reading``: the seconds the reading of the segment took
    #: (None from a worker process)
    read_seconds: float | None = None
    #: ``SegmentTask.fold``: what the consumer's fold made of the segment's entries
    fold_result: object | None = None
    #: ``SegmentTask.recovery_interval``: the largest timestamp of the valid entries of the
    #: segment's first walk (a v2 batch's ``maxTimestamp``, a v0/v1 message's own; -1 for none),
    #: the walk stopping at the first entry whose header or CRC does not read -- what
    #: ``kafka_reads.largest_batch_timestamp`` reads the file for
    largest_timestamp: int | None = None
    #: ``SegmentTask.recovery_interval``: the largest last offset of the same entries + 1 (the base
    #: offset when there is none) -- ``LogSegment.readNextOffset`` walking from position 0, what
    #: ``kafka_reads.next_offset_from`` reads the file for when no ``.index`` entry says where to start
    next_offset: int | None = None
    #: ``SegmentTask.recovery_interval``: (the positions of the first walk's first entries, where
    #: the last of them ends) -- at most ``HEADS_KEPT`` entries starting before ``HEADS_SPAN``, one
    #: after the other from position 0 -- what ``kafka_recovery.batch_starts`` reads the entries'
    #: heads for (recover's plan infers ``index.interval.bytes`` from the first ``.index`` entries)
    heads: tuple[array[int], int] | None = None
    #: ``SegmentTask.recovery_interval``: the last ``TAIL_KEPT`` entries of the same walk as
    #: ``next_offset``'s, up to the first whose header or CRC does not read (included, False): (its
    #: position, its last offset, it reads) -- what ``kafka_reads.next_offset_from`` reads the
    #: file for when it walks from the last ``.index`` entry (``LogSegment.readNextOffset``)
    tail: list[tuple[int, int, bool]] | None = None
    #: ``SegmentTask.cuts`` (or ``recovery_interval``): what a cut where ``LogSegment.recover``
    #: stops removes (``kafka_recovery.CutFacts``; None: nothing is cut, or the walk did not end)
    cut: CutFacts | None = None


class _Tee(ReadOnlyFile):
    """A segment's ``.log`` as the checker reads it when a ``CutFold`` watches the reading: every
    read is handed to the fold too (the CRC of the bytes a cut removes is taken as they are read),
    and takes first what the fold's counts have read ahead of the walk (``CutFold.fetch``)."""

    def __init__(self, f: ReadOnlyFile, cut: CutFold) -> None:  # the file stays ``f``'s: not opened again
        self._cut = cut
        self.path, self.size, self.mtime, self.stat = f.path, f.size, f.mtime, f.stat
        self._fd = None
        self._kept = None

    def pread(self, position: int, size: int) -> bytes:
        data = self._cut.fetch(position, size, ahead=False)
        self._cut.read(position, data)
        return data


#: How many entry positions of a segment's start a reading kept inside ``shared_reading`` keeps
#: (``SegmentResult.heads``; 4 bytes each), and before which position: recover's plan looks at
#: the entries before the first 64 ``.index`` entries (256 KiB of log at the default interval).
HEADS_KEPT = 4096
HEADS_SPAN = 1 << 20
#: How many of a segment's last entries a reading kept inside ``shared_reading`` keeps
#: (``SegmentResult.tail``): the last ``.index`` entry points at most ``index.interval.bytes``
#: (4 KiB by default) before the end of the data, a few batches.
TAIL_KEPT = 64

#: How recover's fold reads each entry (``RecoveryReading``'s decode).
_FOLDED = EntryDecode(mode="header", check_crc=True)


def _feed(fold: RecoveryFold, item: ScannedEntry) -> None:
    from mqtool.store.model.kafka_recovery import feed

    feed(fold, item)


def _scanned(task: SegmentTask, pos: int, framed: LogEntry, buf: bytes, rel: int, decode: EntryDecode, *, resumed: bool) -> ScannedEntry:
    entry: LogEntry | None = framed
    error: MqError | None = None
    if decode.mode != "framing":
        try:
            entry = decode_entry(buf, rel, mode=decode.mode, check_crc=decode.check_crc)
        except MqError as exc:
            error = exc.at(task.log, pos - rel)
            entry = ks.framed_entry(buf, rel, exc, decode.mode)
    return ScannedEntry(task, pos, entry, error, buf, rel, resumed)


class _SegmentChecker:
    #: the segment's first walk (from position 0) once it is over: its ``error`` or ``end``
    first_walk: ks.LogFileWalk | None = None
    #: the segment's last walk (the first, or the one after the last resynchronisation)
    last_walk: ks.LogFileWalk | None = None

    def __init__(self, task: SegmentTask, f: ReadOnlyFile, res: SegmentResult, folders: list[tuple[EntryDecode, SegmentFolder]] | None = None) -> None:
        self.t = task
        #: each fold's folder with the decoding its fold asks for
        self.folders = folders or []
        #: ``recovery_interval``: the largest timestamp of the first walk's valid entries so far
        #: (``SegmentResult.largest_timestamp``), and whether an entry that does not read ended it
        self.largest = -1
        self.largest_over = False
        #: and the largest last offset of those entries (None: none)
        self.largest_offset: int | None = None
        #: ``recovery_interval``: where the first walk's first entries start (``SegmentResult.heads``)
        self.heads = array("I")
        self.heads_end = 0
        #: and its last entries (``SegmentResult.tail``), up to the first whose header does not read
        self.tail: deque[tuple[int, int, bool]] = deque(maxlen=TAIL_KEPT)
        self.f = f
        self.res = res
        self.path = task.log
        self.base = task.base_offset
        self.prev_last: int | None = None
        self.prev_pos: int | None = None
        self.max_epoch = -1
        self.running_max_ts = -1
        self.gaps = 0
        self.first_gap: tuple[int, int, int] | None = None
        self.oi: _IndexStream[kidx.OffsetPosition] | None = None
        self.ti: _IndexStream[kidx.TimestampOffset] | None = None
        self.tx: _IndexStream[ktxn.AbortedTxn] | None = None
        self.pending: tuple[int, kidx.OffsetPosition] | None = None
        self.multi_batch = 0
        self.first_break: int | None = None
        self.fold: RecoveryFold | None = None
        if task.recovery_interval is not None and not task.kraft_snapshot:
            from mqtool.store.model.kafka_recovery import RecoveryFold

            self.fold = RecoveryFold(task.base_offset, task.recovery_interval)
        self.cut: CutFold | None = None
        if (task.cuts or task.recovery_interval is not None) and not task.kraft_snapshot:
            from mqtool.store.model.kafka_recovery import CutFold

            self.cut = CutFold(f, task.base_offset)
            self.f = _Tee(f, self.cut)

    def find(self, code: str, position: int | None, message: str, **kw: Any) -> None:
        self.res.findings.append(Finding(code, self.path, position, message, **kw))

    def broken(self, position: int) -> None:
        if self.first_break is None:
            self.first_break = position

    # --- the walk ----------------------------------------------------------------------------
    def run(self) -> None:
        for _ in self.scan(None):
            pass

    def scan(self, decode: EntryDecode | None) -> Iterator[ScannedEntry]:
        """The checks of the segment, yielding each entry of its walk after judging it (decoded
        as ``decode`` asks, for a consumer of the reading; none when None)."""
        t = self.t
        if t.indexes and not t.kraft_snapshot:
            self.oi = _IndexStream(t.index, "index", self.base, self.res, t.is_last)
            self.ti = _IndexStream(t.timeindex, "timeindex", self.base, self.res, t.is_last)
            self.tx = _IndexStream(t.txnindex, "txnindex", self.base, self.res, t.is_last)
        try:
            yield from self._walk(decode)
            self._finish_indexes()
        finally:
            for stream in (self.oi, self.ti, self.tx):
                if stream is not None:
                    stream.close()

    def _walk(self, decode: EntryDecode | None) -> Iterator[ScannedEntry]:
        f = self.f
        res = self.res
        start = 0
        held = 0  # where the last piece read ends: a walk resumed before it reads the rest of it first
        while True:
            first = held - start if held - start > FIRST_PIECE else FIRST_PIECE
            walk = ks.LogFileWalk(f, start, mode="framing", chunk=self.t.piece, first_piece=first, garbage_extent=False)
            fold = self.fold if start == 0 else None  # LogSegment.recover reads the first walk only
            cut = self.cut
            folders = self.folders
            for pos, entry in walk:
                rel = pos - walk.buffer_start
                self._entry(pos, entry, walk.buffer, rel)
                item = None
                if decode is not None:
                    item = _scanned(self.t, pos, entry, walk.buffer, rel, decode, resumed=start > 0)
                    yield item
                if folders:
                    made: dict[EntryDecode, ScannedEntry] = {}  # one decoding for the folds that ask alike
                    for how, folder in folders:
                        item = made.get(how)
                        if item is None:
                            item = made[how] = _scanned(self.t, pos, entry, walk.buffer, rel, how, resumed=start > 0)
                        folder.entry(item)
                if fold is not None and self.heads_end == pos and len(self.heads) < HEADS_KEPT and pos < HEADS_SPAN and entry.size <= ks.MAX_ENTRY_SIZE:
                    self.heads.append(pos)
                    self.heads_end = pos + entry.size
                folds = fold is not None and not (fold.over and self.largest_over)
                if folds or (cut is not None and cut.wants_entries):
                    folded = item if item is not None and decode == _FOLDED else _scanned(self.t, pos, entry, walk.buffer, rel, _FOLDED, resumed=False)
                    if fold is not None and folds:
                        if not fold.over:
                            _feed(fold, folded)
                        self._largest(folded)
                    if cut is not None:
                        cut.entry(folded, entry.size, walk, first=start == 0)
            if fold is not None and walk.error is not None:
                assert walk.failed_at is not None  # set with the error
                fold.broken(walk.failed_at, walk.error)
            if cut is not None:
                if walk.error is not None:
                    cut.broken(walk, first=start == 0)
                else:
                    cut.end(walk, first=start == 0)
            if start == 0:  # the first walk: where a walk that stops at a broken entry stops
                self.first_walk = walk
            self.last_walk = walk
            if walk.error is not None and (decode is not None or self.folders):
                assert walk.failed_at is not None  # set with the error
                broken = ScannedEntry(self.t, walk.failed_at, None, walk.error, walk.buffer, walk.failed_at - walk.buffer_start, start > 0)
                for _how, folder in self.folders:
                    folder.entry(broken)
                if decode is not None:
                    yield broken
            if walk.error is not None:
                bad = walk.failed_at
                assert bad is not None  # set with the error
                self.broken(bad)
                exc = walk.error
                code = KAFKA_LOG_MAGIC if exc.kind == "magic" else KAFKA_OFFSET_ORDER if exc.kind == "offset-order" else KAFKA_LOG_SIZE
                self.find(code, exc.position, exc.reason + self._truncation_note(bad))
                nxt = self._resync(bad + 1, walk)
                if nxt is None:
                    extent = nonzero_extent(f, bad)
                    stop = extent[1] if extent else bad
                    if stop > bad:
                        self.find(
                            KAFKA_LOG_GARBAGE,
                            bad,
                            f"no valid entry after the broken one: {stop - bad} bytes up to position {stop} cannot be read",
                            length=stop - bad,
                        )
                    res.end_kind = "corrupt"
                    assert self.first_break is not None  # broken() above
                    res.valid_end = self.first_break
                    return
                self.find(
                    KAFKA_LOG_GARBAGE,
                    bad,
                    f"{nxt - bad} bytes between the broken entry and the next valid entry at {nxt} were skipped",
                    length=nxt - bad,
                )
                start, held = nxt, walk.buffer_start + len(walk.buffer)
                continue
            end = walk.end
            assert end is not None
            if end.kind == "zeros" and walk.data_after_zeros is not None:
                first = walk.data_after_zeros
                self.broken(end.position)
                self.find(
                    KAFKA_LOG_SIZE,
                    end.position + 8,
                    f"expected an entry size >= 14, found 0: {first - end.position} zero bytes before more data at {first}" + self._truncation_note(end.position),
                    length=first - end.position,
                )
                nxt = self._resync(first - 11 if first - 11 > end.position else end.position + 1, walk)
                if nxt is None:
                    garbage = walk.garbage_after_zeros
                    assert garbage is not None  # data_after_zeros is set
                    stop = garbage[1]
                    self.find(KAFKA_LOG_GARBAGE, first, f"{stop - first} bytes after the zero run do not start a valid entry", length=stop - first)
                    res.end_kind = "corrupt"
                    assert self.first_break is not None  # broken() above
                    res.valid_end = self.first_break
                    return
                if nxt > first:
                    self.find(KAFKA_LOG_GARBAGE, first, f"{nxt - first} bytes before the next valid entry at {nxt} were skipped", length=nxt - first)
                start, held = nxt, walk.buffer_start + len(walk.buffer)
                continue
            self._end(end.kind, end.position, end.length)
            return

    def _largest(self, item: ScannedEntry) -> None:
        """``largest_timestamp``: the entry of the first walk decoded as ``_FOLDED`` (its header,
        its CRC checked); the first that does not read ends the count, as it ends a walk in the
        ``header`` mode (``kafka_reads.largest_batch_timestamp``'s)."""
        if self.largest_over:
            return
        header = item.entry.header if item.entry is not None and item.error is None else None
        if header is None:
            self.largest_over = True
            self.tail.append((item.position, -1, False))
            return
        self.largest = max(self.largest, header.max_timestamp if isinstance(header, rb.BatchHeader) else header.timestamp)
        assert item.entry is not None  # its header read
        last = header.last_offset if isinstance(header, rb.BatchHeader) else item.entry.offset
        self.largest_offset = last if self.largest_offset is None else max(self.largest_offset, last)
        self.tail.append((item.position, last, True))

    def _truncation_note(self, position: int) -> str:
        if self.t.kraft_snapshot:
            return ""
        later = "" if self.t.is_last else " and deletes every later segment"
        return f" (recovery truncates the segment at {position}{later})"

    def _end(self, kind: str, position: int, length: int) -> None:
        res = self.res
        res.end_kind = kind if self.first_break is None else "corrupt"
        res.valid_end = position if self.first_break is None else self.first_break
        size = self.f.size
        last = self.t.is_last or self.t.kraft_snapshot
        severity = None if last else E
        if kind == "zeros" and size > position:
            self.find(
                KAFKA_LOG_ZERO_TAIL,
                position,
                f"{size - position} zero bytes after the last entry (pre-allocated segment, log.preallocate=true); "
                f"recovery reads them as an entry of size 0 and truncates{'' if last else ' -- in a segment before the last, and deletes every later segment'}",
                length=size - position,
                severity=severity,
            )
        elif kind == "partial":
            present = size - position
            if present < 17:
                what = f"{present} bytes, less than a 17-byte entry header"
            else:
                _offset, length, magic = rb.peek_batch(self.f.pread(position, rb.HEADER_SIZE_UP_TO_MAGIC))
                what = f"an entry of {rb.LOG_OVERHEAD + length} bytes (magic {magic}) with only {present} present"
            self.find(
                KAFKA_LOG_TORN_TAIL,
                position,
                f"torn tail: {what}; the broker ignores it and recovery truncates the segment to {position}" + ("" if last else ", deleting every later segment"),
                length=present,
                severity=severity,
            )
        if self.t.is_last and not self.t.kraft_snapshot and self.first_break is None and (res.entries or position):
            leo = self.prev_last + 1 if self.prev_last is not None else self.base
            self.find(KAFKA_LOG_VALID_END, position, f"valid data ends at position {position} (log end offset {leo}, {kind} follow)")

    def _resync(self, start: int, walk: ks.LogFileWalk) -> int | None:
        """First position >= ``start`` where an entry with a valid CRC starts, of a magic the
        segment holds, continuing the offsets seen so far when there are any (``ks.resync``).
        The search reads first what is left of ``walk``'s last piece, which the file keeps."""
        held = walk.buffer_start + len(walk.buffer) - start
        return ks.resync(self.f, start, magics=self.res.magics or (0, 1, 2), after=self.prev_last, first=held if held > 0 else None)

    # --- one entry ---------------------------------------------------------------------------
    def _entry(self, pos: int, entry: LogEntry, buf: bytes, rel: int) -> None:
        res = self.res
        prior = self.prev_last
        size = entry.size
        magic = entry.magic
        res.entries += 1
        res.magics.add(magic)
        control_abort: int | None = None
        if magic == 2:
            if size - 12 < _V2_MIN_LENGTH:
                self._entry_error(pos, buf, rel)
                return
            (base, _blen, ple, _m, stored, attrs, lod, base_ts, max_ts, pid, _pep, _bseq, count) = rb.peek_v2_header(buf, rel)
            if not rb.crc_matches(buf, rel, size, stored):
                self._entry_error(pos, buf, rel)
                self._damaged(pos, base, base + lod)
                return
            lower = base
            last = base + lod
            res.codecs.add(attrs & 7)
            if attrs & rb.CONTROL_FLAG_MASK and pid >= 0:
                control_abort = self._control(pos, buf, rel, pid)
            if ple >= 0:
                self._epoch(pos, ple, base, last)
        else:
            try:
                # a v0/v1 entry's header is its shallow message
                message = cast(klegacy.LegacyRecord, decode_entry(buf, rel, mode="header").header)
            except MqError as exc:
                self._entry_exception(pos, rel, exc)
                if isinstance(exc, ChecksumError):
                    prev = self.prev_last
                    self._damaged(pos, min(prev + 1, entry.offset) if prev is not None else entry.offset, entry.offset)
                return
            last = message.offset
            compressed = message.is_compressed
            lower = (self.prev_last + 1 if self.prev_last is not None else (self.base if self.t.named else last)) if compressed else last
            if compressed and lower > last:
                lower = last
            max_ts = message.timestamp
            res.codecs.add(message.compression_type)
            count = -1
            attrs = message.attributes
        before = self.prev_pos  # the entry an index position below ``pos`` falls inside
        self._offsets(pos, magic, lower, last)
        if self.oi is not None:
            self._match_offset_index(pos, lower, last, before)
        if self.ti is not None:
            self._match_time_index(pos, lower, last, max_ts)
        if max_ts > self.running_max_ts:
            self.running_max_ts = max_ts
        if control_abort is not None and self.tx is not None:
            self._match_abort(pos, control_abort, last)
        if self.t.deep and pos >= self.t.deep_from:
            if magic == 2:
                self._deep_v2(pos, buf, rel, size, attrs, lod, base_ts, max_ts, count)
            else:
                self._deep_legacy(pos, message, prior, last)
        elif not self.t.deep:
            res.records += max(count, 0) if magic == 2 else 1
        if res.first_offset is None:
            res.first_offset = lower
        res.last_offset = last if res.last_offset is None else max(res.last_offset, last)
        if max_ts > res.max_timestamp:
            res.max_timestamp = max_ts

    def _damaged(self, pos: int, lower: int, last: int) -> None:
        """A batch whose CRC fails but whose framing holds (the walk went on after it): its header's
        offsets, when they fit between its neighbours, keep the offset and index accounting in step,
        so its offsets are not reported again as a gap, nor index entries pointing at it as
        misplaced.  Its records stay unverified; the CRC error is the finding."""
        prev = self.prev_last
        if lower > last or (prev is not None and lower <= prev) or (self.t.named and not self.t.kraft_snapshot and lower < self.base):
            return
        if prev is not None and lower > prev + 1:
            self.gaps += 1
            if self.first_gap is None:
                self.first_gap = (pos, prev + 1, lower - 1)
        before = self.prev_pos
        self.prev_last = last
        self.prev_pos = pos
        if self.oi is not None:
            self._match_offset_index(pos, lower, last, before)
        ti = self.ti
        while ti is not None and ti.current is not None and ti.current[1].offset <= last:
            ti.advance()  # an entry for the damaged batch: its max timestamp cannot be checked

    def _entry_error(self, pos: int, buf: bytes, rel: int) -> None:
        """The exact error of an entry the fast checks rejected (size or CRC)."""
        try:
            decode_entry(buf, rel, mode="header")
        except MqError as exc:
            self._entry_exception(pos, rel, exc)
            return
        self.broken(pos)
        self.find(KAFKA_LOG_SIZE, pos, "entry rejected" + self._truncation_note(pos))

    def _entry_exception(self, pos: int, rel: int, exc: MqError) -> None:
        """An error of ``decode_entry(buf, rel)``: its position is in the chunk buffer."""
        self.broken(pos)
        if isinstance(exc, ChecksumError):
            code = KAFKA_LOG_CRC
        elif exc.kind == "magic":
            code = KAFKA_LOG_MAGIC
        else:
            code = KAFKA_LOG_SIZE
        position = pos - rel + exc.position if exc.position is not None else pos
        self.find(code, position, exc.reason + self._truncation_note(pos))

    def _control(self, pos: int, buf: bytes, rel: int, pid: int) -> int | None:
        """Recovery decodes the first record of a control batch with a producer id as an
        end-transaction marker; returns the producer id when it is an ABORT."""
        try:
            batch = rb.decode_batch(buf, rel, check_crc=False, max_decompressed_size=self.t.max_decompressed_size)
            if not batch.records:
                raise CorruptDataError(position=rel + rb.RECORDS_COUNT_POSITION, expected="a control record in the control batch", found="no records")
            key, _value = rb.decode_control_record(batch.records[0])
            if key.type not in (rb.ABORT, rb.COMMIT):
                raise CorruptDataError(expected="an ABORT or COMMIT control record (a batch with a producer id)", found=key.type_name)
        except UnsupportedFormatError as exc:
            self.find(KAFKA_LOG_UNSUPPORTED, pos, f"control batch not decoded: {exc.reason}")
            return None
        except MqError as exc:
            self.broken(pos)
            self.find(KAFKA_LOG_CONTROL, pos, f"control batch of producer {pid}: {exc.reason}" + self._truncation_note(pos))
            return None
        return pid if key.type == rb.ABORT else None

    def _epoch(self, pos: int, epoch: int, first: int, last: int) -> None:
        runs = self.res.epochs
        if epoch < self.max_epoch:
            self.find(
                KAFKA_LOG_EPOCH,
                pos + rb.PARTITION_LEADER_EPOCH_POSITION,
                f"expected a partition leader epoch >= {self.max_epoch} (an earlier batch's), found {epoch}",
            )
        else:
            self.max_epoch = epoch
        if runs and runs[-1][0] == epoch:
            runs[-1][2] = last
        else:
            runs.append([epoch, first, last])

    def _offsets(self, pos: int, magic: int, lower: int, last: int) -> None:
        base = self.base
        if self.t.named and not self.t.kraft_snapshot:
            if lower < base:
                self.find(
                    KAFKA_OFFSET_RANGE,
                    pos,
                    f"expected offsets >= the segment's base offset {base}, found a batch starting at {lower} (offsets {lower}..{last})",
                )
            elif last - base > INT32_MAX:
                self.find(
                    KAFKA_OFFSET_RANGE,
                    pos,
                    f"expected offsets below {base + INT32_MAX + 1} (a 32-bit offset relative to the base {base}), found {last} "
                    "(LogSegmentOffsetOverflowException: the broker splits the segment)",
                )
        prev = self.prev_last
        if prev is not None:
            if lower <= prev or last <= prev:
                self.find(
                    KAFKA_OFFSET_ORDER,
                    pos,
                    f"expected offsets after {prev} (the previous entry at {self.prev_pos} ends there), found {lower}..{last}",
                )
            elif lower > prev + 1:
                self.gaps += 1
                if self.first_gap is None:
                    self.first_gap = (pos, prev + 1, lower - 1)
        if prev is None or last > prev:
            self.prev_last = last
        self.prev_pos = pos

    # --- indexes -----------------------------------------------------------------------------
    def _match_offset_index(self, pos: int, lower: int, last: int, before: int | None) -> None:
        oi = self.oi
        assert oi is not None
        pending = self.pending
        if pending is not None:
            nxt = oi.current
            if nxt is not None and nxt[1].position <= pos:
                self._index_offset_error(pending, "the batches of its append end before the next entry's position")
                self.pending = None
            elif last == pending[1].offset:
                self.multi_batch += 1
                self.pending = None
            elif last > pending[1].offset:
                self._index_offset_error(pending, f"the batches after it skip past it (the batch at {pos} holds {lower}..{last})")
                self.pending = None
        while oi.current is not None and oi.current[1].position < pos:
            ipos, e = oi.current
            where = f"inside the entry at {before}" if before is not None else "before the first entry"
            self.res.findings.append(
                Finding(
                    KAFKA_INDEX_POSITION,
                    oi.file,
                    ipos,
                    f"entry for offset {e.offset}: expected the position of a batch start, found {e.position} ({where})",
                )
            )
            oi.advance()
        cur = oi.current
        if cur is None or cur[1].position != pos:
            return
        offset = cur[1].offset
        if lower <= offset <= last:
            pass  # the batch's last offset (recovery, one-batch appends) or inside it (Kafka <= 0.10: the first)
        elif offset > last and self.pending is None:
            self.pending = cur
        else:
            self.res.findings.append(
                Finding(
                    KAFKA_INDEX_OFFSET,
                    oi.file,
                    cur[0],
                    f"entry at log position {pos}: expected offset {last} (the last offset of the batch there, {lower}..{last}) "
                    f"or the last offset of a later batch of the same append, found {offset}",
                )
            )
        oi.advance()

    def _index_offset_error(self, pending: tuple[int, kidx.OffsetPosition], why: str) -> None:
        ipos, e = pending
        assert self.oi is not None
        self.res.findings.append(
            Finding(
                KAFKA_INDEX_OFFSET,
                self.oi.file,
                ipos,
                f"entry at log position {e.position}: expected an offset of the batch there or the last offset of a later batch "
                f"of the same append, found {e.offset} ({why})",
            )
        )

    def _match_time_index(self, pos: int, lower: int, last: int, max_ts: int) -> None:
        ti = self.ti
        assert ti is not None
        while ti.current is not None and ti.current[1].offset <= last:
            ipos, e = ti.current
            if e.offset < lower:
                msg = f"entry ({e.timestamp}, offset {e.offset}): expected an offset inside a batch, found one before the batch at {pos} ({lower}..{last})"
            elif e.timestamp != max_ts:
                msg = f"entry for offset {e.offset}: expected timestamp {max_ts} (the max timestamp of the batch at {pos} holding it), found {e.timestamp}"
            elif self.running_max_ts > e.timestamp:
                msg = (
                    f"entry ({e.timestamp}, offset {e.offset}): an earlier batch has the larger timestamp {self.running_max_ts}, "
                    "so the entry is not the largest timestamp so far"
                )
            else:
                msg = None
            if msg is not None:
                self.res.findings.append(Finding(KAFKA_TIMEINDEX_ENTRY, ti.file, ipos, msg))
            ti.advance()

    def _match_abort(self, pos: int, pid: int, offset: int) -> None:
        tx = self.tx
        assert tx is not None
        while tx.current is not None and tx.current[1].last_offset < offset:
            self._txn_no_marker(*tx.current)
            tx.advance()
        cur = tx.current
        if cur is not None and cur[1].last_offset == offset:
            ipos, e = cur
            if e.producer_id != pid:
                self.res.findings.append(
                    Finding(
                        KAFKA_TXNINDEX_ENTRY,
                        tx.file,
                        ipos + ktxn.PRODUCER_ID_POSITION,
                        f"aborted transaction ending at offset {offset}: expected producer {pid} (the ABORT marker's), found {e.producer_id}",
                    )
                )
            elif e.first_offset > offset:
                self.res.findings.append(
                    Finding(
                        KAFKA_TXNINDEX_ENTRY,
                        tx.file,
                        ipos + ktxn.FIRST_OFFSET_POSITION,
                        f"aborted transaction of producer {pid}: expected firstOffset <= lastOffset {offset}, found {e.first_offset}",
                    )
                )
            tx.advance()
            return
        self.res.findings.append(
            Finding(
                KAFKA_TXNINDEX_MISSING,
                self.path,
                pos,
                f"ABORT marker of producer {pid} at offset {offset} has no entry in "
                f"{Path(tx.path).name if tx.path else 'a .txnindex (there is none)'}: read_committed consumers would receive the aborted records",
                severity=W if self.t.is_last else None,
            )
        )

    def _txn_no_marker(self, ipos: int, e: ktxn.AbortedTxn) -> None:
        assert self.tx is not None
        self.res.findings.append(
            Finding(
                KAFKA_TXNINDEX_ENTRY,
                self.tx.file,
                ipos + ktxn.LAST_OFFSET_POSITION,
                f"aborted transaction of producer {e.producer_id}: expected an ABORT marker of that producer at offset {e.last_offset}, found none",
            )
        )

    def _finish_indexes(self) -> None:
        end = self.res.valid_end
        sev = W if self.t.is_last else None
        if self.oi is not None:
            if self.pending is not None:
                self._index_offset_error(self.pending, "no later batch has it")
                self.pending = None
            past = []
            while self.oi.current is not None:
                past.append(self.oi.current)
                self.oi.advance()
            if past:
                ipos, e = past[0]
                inside = e.position < end
                self.res.findings.append(
                    Finding(
                        KAFKA_INDEX_POSITION,
                        self.oi.file,
                        ipos,
                        f"{len(past)} entr{'y' if len(past) == 1 else 'ies'} from offset {e.offset} at log position {e.position}: "
                        + (
                            f"expected a batch start, found a position inside the last batch at {self.prev_pos}" if inside else f"past the end of the valid data at {end}"
                        ),
                        severity=None if inside else sev,
                    )
                )
            if self.multi_batch:
                self.res.findings.append(
                    Finding(
                        KAFKA_INDEX_MULTI_BATCH,
                        self.oi.file,
                        None,
                        f"{self.multi_batch} entr{'y was' if self.multi_batch == 1 else 'ies were'} written by multi-batch appends "
                        "(follower fetch or cleaner): the last batch's offset at the first batch's position; lookups are correct",
                    )
                )
        if self.ti is not None:
            past_t = []
            while self.ti.current is not None:
                past_t.append(self.ti.current)
                self.ti.advance()
            if past_t:
                ipos, te = past_t[0]
                self.res.findings.append(
                    Finding(
                        KAFKA_TIMEINDEX_ENTRY,
                        self.ti.file,
                        ipos,
                        f"{len(past_t)} entr{'y' if len(past_t) == 1 else 'ies'} from offset {te.offset}: expected offsets of the log, found {self._past_the_log()}",
                        severity=sev,
                    )
                )
            if not self.t.is_last and self.running_max_ts >= 0 and self.first_break is None:
                last_entry = self.ti.last_entry
                if last_entry is None or last_entry.timestamp < self.running_max_ts:
                    found = f"{last_entry.timestamp}" if last_entry is not None else "no entry"
                    self.res.findings.append(
                        Finding(
                            KAFKA_TIMEINDEX_STALE,
                            self.t.timeindex or self.path,
                            None,
                            f"expected a last entry with the segment's largest timestamp {self.running_max_ts}, found {found}: "
                            "time-based retention judges the segment by that entry (or the file's mtime)",
                        )
                    )
        if self.tx is not None:
            while self.tx.current is not None:
                self._txn_no_marker(*self.tx.current)
                self.tx.advance()
        if self.gaps:
            assert self.first_gap is not None  # set with the first gap
            pos, a, b = self.first_gap
            self.find(
                KAFKA_OFFSET_GAP,
                pos,
                f"{self.gaps} gap(s) between batches (first: offsets {a}..{b} absent before position {pos}); compaction leaves such gaps",
            )

    def _past_the_log(self) -> str:
        """What index entries left over after the walk lie past, in words (the segment may have
        no readable batch, so no last offset)."""
        if self.prev_last is not None:
            return f"offsets past its last offset {self.prev_last}"
        if self.first_break is not None:
            why = f"its first entry, at position {self.first_break}, is broken"
        elif self.f.size == 0:
            why = "the .log is empty"
        else:
            why = f"its {self.f.size} bytes hold no entry"
        return f"offsets of a segment with no readable batch, so no last offset ({why})"

    # --- deep --------------------------------------------------------------------------------
    def _deep_v2(self, pos: int, buf: bytes, rel: int, size: int, attrs: int, lod: int, base_ts: int, max_ts: int, count: int) -> None:
        res = self.res
        if count < 0:
            self.find(KAFKA_LOG_RECORDS, pos + rb.RECORDS_COUNT_POSITION, f"expected a records count >= 0, found {count}")
            return
        if count == 0:
            return
        codec = attrs & rb.COMPRESSION_CODEC_MASK
        start, stop = rel + rb.RECORDS_POSITION, rel + size
        data = buf
        if codec != compression.NONE:
            try:
                compression.check_codec(codec)
                data = compression.decompress(codec, memoryview(buf)[start:stop], magic=2, max_size=self.t.max_decompressed_size)
            except UnsupportedFormatError as exc:
                self.find(KAFKA_LOG_UNSUPPORTED, pos, f"records not checked: {exc.reason}")
                return
            except MqError as exc:
                self.find(
                    KAFKA_LOG_COMPRESSION,
                    pos + rb.RECORDS_POSITION + (exc.position or 0),
                    f"{compression.CODEC_NAMES.get(codec, codec)} records of the batch at {pos} do not decompress: {exc.reason}",
                )
                return
            start, stop = 0, len(data)
        control = attrs & rb.CONTROL_FLAG_MASK
        try:
            if control:
                raise record_scan.RecordScanUnsure
            first, last, max_delta, increasing = record_scan.scan_records(data, start, stop, count, compiled=self.t.compiled_walk)
        except record_scan.RecordScanUnsure:
            try:
                records = list(rb.iter_records(memoryview(data)[start:stop], count, 0))
                if control:
                    for r in records:
                        rb.decode_control_record(r)
            except MqError as exc:
                if codec:
                    at = f"at byte {exc.position} of the decompressed records: " if exc.position is not None else ""
                    self.find(KAFKA_LOG_RECORDS, pos, f"batch at {pos} ({count} records): {at}{exc.reason}")
                else:
                    where = pos + rb.RECORDS_POSITION + (exc.position or 0)
                    self.find(KAFKA_LOG_RECORDS, where, f"batch at {pos} ({count} records): {exc.reason}")
                return
            deltas = [r.offset_delta for r in records]
            first, last = deltas[0], deltas[-1]
            increasing = all(b > a for a, b in zip(deltas, deltas[1:])) and first >= 0
            max_delta = max(r.timestamp_delta for r in records)
        res.records += count
        if not increasing:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"batch at {pos}: expected record offset deltas >= 0 and increasing, found them out of order")
        elif last > lod:
            self.find(
                KAFKA_LOG_RECORD_OFFSET,
                pos + 23,
                f"batch at {pos}: expected lastOffsetDelta >= the last record's offset delta {last}, found {lod}",
            )
        if not attrs & rb.TIMESTAMP_TYPE_MASK and not control and base_ts + max_delta != max_ts:
            self.find(
                KAFKA_LOG_TIMESTAMP,
                pos + 35,
                f"batch at {pos}: expected maxTimestamp {base_ts + max_delta} (its largest record timestamp), found {max_ts}",
            )

    def _deep_legacy(self, pos: int, message: klegacy.LegacyRecord, prior: int | None, last: int) -> None:
        if not message.is_compressed:
            self.res.records += 1
            return
        try:
            inner = records_of_message(message, 0, max_size=self.t.max_decompressed_size)
        except UnsupportedFormatError as exc:
            self.find(KAFKA_LOG_UNSUPPORTED, pos, f"wrapper not checked: {exc.reason}")
            return
        except MqError as exc:
            code = KAFKA_LOG_COMPRESSION if exc.kind == "compression" else KAFKA_LOG_RECORDS
            self.find(code, pos, f"wrapper at {pos} (offset {last}): {exc.reason}")
            return
        self.res.records += len(inner)
        offsets = [r.offset for r in inner]
        if any(b <= a for a, b in zip(offsets, offsets[1:])):
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected increasing inner offsets, found {offsets[:8]}")
        elif offsets[-1] != last:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected the wrapper offset to be its last inner offset {offsets[-1]}, found {last}")
        elif prior is not None and offsets[0] <= prior:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected inner offsets after {prior}, found {offsets[0]}")
        elif prior is None and self.t.named and offsets[0] < self.base:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected inner offsets >= the segment's base offset {self.base}, found {offsets[0]}")


class _DeepRangeChecker(_SegmentChecker):
    """Only the --deep checks, over the entries starting in ``[start, stop)``."""

    def run_range(self, task: DeepRangeTask) -> None:
        self.prev_last = task.prior
        walk = ks.LogFileWalk(self.f, task.start, mode="framing", limit=task.stop, chunk=piece_size(WALK_CHUNK))
        for pos, entry in walk:
            buf, rel = walk.buffer, pos - walk.buffer_start
            prior = self.prev_last
            if entry.magic == 2:
                size = entry.size
                if size - 12 < _V2_MIN_LENGTH:
                    continue
                h = rb.peek_v2_header(buf, rel)
                if not rb.crc_matches(buf, rel, size, h.crc):
                    continue  # reported by the segment's own task
                base, lod = h.base_offset, h.last_offset_delta
                self._deep_v2(pos, buf, rel, size, h.attributes, lod, h.base_timestamp, h.max_timestamp, h.records_count)
                last = base + lod
            else:
                try:
                    # a v0/v1 entry's header is its shallow message
                    message = cast(klegacy.LegacyRecord, decode_entry(buf, rel, mode="header").header)
                except MqError:
                    continue
                last = message.offset
                self._deep_legacy(pos, message, prior, last)
            if prior is None or last > prior:
                self.prev_last = last


def check_deep_range(task: DeepRangeTask) -> SegmentResult:
    """The --deep checks of one range of a segment.  Never raises on data."""
    res = SegmentResult(task.log, "", task.base_offset, False)
    seg_task = SegmentTask("", task.log, task.base_offset, task.named, deep=True, max_decompressed_size=task.max_decompressed_size, compiled_walk=task.compiled_walk)
    try:
        with ReadOnlyFile(task.log) as f:
            _DeepRangeChecker(seg_task, f, res).run_range(task)
    except MqError:
        pass  # unreadable: the segment's own task says so
    return res


def check_segment(task: SegmentTask) -> SegmentResult:
    """Every check of one segment (its ``.log`` and indexes).  Never raises on data."""
    scan = SegmentScan(task)
    for _ in scan:
        pass
    return scan.result


class SegmentScan:
    """One segment's checks as a stream: iterating yields each entry of its walk (``ScannedEntry``,
    decoded as ``decode`` asks; nothing when it is None) right after the model judged it, so a
    consumer builds its answer from the same reading; ``result`` holds the findings, counts and
    end once the iteration is over, and ``first_walk`` the segment's first walk (its ``error`` or
    ``end``: where a walk that stops at a broken entry stops)."""

    def __init__(self, task: SegmentTask, decode: EntryDecode | None = None) -> None:
        self.task = task
        self.decode = decode
        self.result = SegmentResult(task.log, task.partition, task.base_offset, task.is_last)
        self.first_walk: ks.LogFileWalk | None = None
        self.last_walk: ks.LogFileWalk | None = None
        #: the error that stopped the reading of the ``.log`` (it cannot be opened or read)
        self.io_error: MqError | None = None

    def __iter__(self) -> Iterator[ScannedEntry]:
        task, res = self.task, self.result
        folds = folds_of(task.fold) if not task.kraft_snapshot else ()
        folders = [(fold.decode, fold.start(task)) for fold in folds]
        yield from self._read(folders)
        if folders:
            walk = self.first_walk
            first = FirstWalk(walk.end, walk.error) if walk is not None else None
            made = tuple(folder.finish(res, first) for _how, folder in folders)
            res.fold_result = made if isinstance(task.fold, Folds) else made[0]

    def _read(self, folders: list[tuple[EntryDecode, SegmentFolder]]) -> Iterator[ScannedEntry]:
        task, res = self.task, self.result
        try:
            f = ReadOnlyFile(task.log)
        except MqError as exc:
            self.io_error = exc
            res.findings.append(Finding(KAFKA_FILE_UNREADABLE, task.log, None, str(exc)))
            return
        with f:
            res.size = f.size
            if f.size > ks.MAX_SEGMENT_SIZE:
                res.findings.append(Finding(KAFKA_FILE_TOO_LARGE, task.log, None, f"expected a .log of at most {ks.MAX_SEGMENT_SIZE} bytes, found {f.size}"))
            checker = _SegmentChecker(task, f, res, folders)
            try:
                yield from checker.scan(self.decode)
            except StoreIOError as exc:
                self.io_error = exc
                res.findings.append(Finding(KAFKA_FILE_UNREADABLE, task.log, exc.position, str(exc)))
            finally:
                self.first_walk, self.last_walk = checker.first_walk, checker.last_walk
            if checker.cut is not None and self.io_error is None and checker.first_walk is not None:
                try:
                    res.cut = checker.cut.finish()
                except MqError:
                    res.cut = None  # the file cannot be read there any more: recover reads it itself
            if checker.fold is not None:
                from mqtool.store.model.kafka_recovery import finish_fold

                res.recovery = finish_fold(checker.fold, res, checker.first_walk)
                res.largest_timestamp = checker.largest if checker.first_walk is not None else None
                if checker.first_walk is not None:
                    res.next_offset = task.base_offset if checker.largest_offset is None else checker.largest_offset + 1
                    res.heads = (checker.heads, checker.heads_end)
                    res.tail = list(checker.tail)
