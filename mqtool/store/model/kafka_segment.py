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
segment (``SegmentResult.fold_result``).

This module holds what the reading is asked and what it yields, and runs it; the walk and its
rules are in :mod:`mqtool.store.model.kafka_segment_walk` (the walk),
:mod:`mqtool.store.model.kafka_batch_checks` (each entry),
:mod:`mqtool.store.model.kafka_index_checks` (the indexes against the log),
:mod:`mqtool.store.model.kafka_record_checks` (``--deep``) and
:mod:`mqtool.store.model.kafka_segment_end` (how a segment ends, resuming after damage).  The
types a consumer meets are :mod:`mqtool.store.model.kafka_entries`'s; the index files read side by
side are :mod:`mqtool.store.model.kafka_indexes`' streams.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqtool.errors import MqError, StoreIOError
from mqtool.findings import Finding
from mqtool.findings.code_ids import KAFKA_FILE_TOO_LARGE, KAFKA_FILE_UNREADABLE
from mqtool.formats.kafka import compression
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, piece_size
from mqtool.store.model.kafka_entries import EntryDecode, FirstWalk, Folds, ScannedEntry, SegmentFold, SegmentFolder, folds_of
from mqtool.store.model.kafka_indexes import IndexFileResult
from mqtool.store.model.kafka_record_checks import check_range
from mqtool.store.model.kafka_segment_walk import FIRST_PIECE as FIRST_PIECE
from mqtool.store.model.kafka_segment_walk import HEADS_KEPT as HEADS_KEPT
from mqtool.store.model.kafka_segment_walk import HEADS_SPAN as HEADS_SPAN
from mqtool.store.model.kafka_segment_walk import TAIL_KEPT as TAIL_KEPT
from mqtool.store.model.kafka_segment_walk import SegmentChecker

if TYPE_CHECKING:
    from mqtool.store.model.kafka_recovery import CutFacts, RecoveryScan

#: Bytes of ``.log`` read at a time by the walks of this module.  Smaller than the store's
#: default chunk: a fresh 8 MiB buffer per read costs page faults that a 1 MiB one, reused by the
#: allocator, does not (measured: 13 ms against 3 ms to read 33 MiB); an entry larger than this
#: is still read whole.
WALK_CHUNK = 1 << 20
#: ``index.interval.bytes`` the broker defaults to (``LogConfig``): what recover's fold of a
#: segment uses when its plan does not say otherwise (``kafka_recovery.DEFAULT_INTERVAL``).
RECOVERY_INTERVAL = 4096


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


def check_deep_range(task: DeepRangeTask) -> SegmentResult:
    """The --deep checks of one range of a segment.  Never raises on data."""
    res = SegmentResult(task.log, "", task.base_offset, False)
    seg_task = SegmentTask("", task.log, task.base_offset, task.named, deep=True, max_decompressed_size=task.max_decompressed_size, compiled_walk=task.compiled_walk)
    try:
        with ReadOnlyFile(task.log) as f:
            check_range(task, seg_task, f, res, piece_size(WALK_CHUNK))
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
            checker = SegmentChecker(task, f, res, folders)
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
