"""What Kafka's ``LogSegment.recover`` makes of a segment, read once by the Kafka model for recover.

``recover`` plans the broker's load (``LogLoader.load``): this module is the part of it that reads
``.log`` bytes, so that no ``ops`` module walks a segment itself.

* :class:`RecoveryFold` is ``LogSegment.recover`` over the entries of one walk of a ``.log``:
  batches are read while their size and CRC are valid and, for a control batch with a producer
  id, its end-transaction marker reads (``LogSegment.recover`` -> ``ProducerStateManager``); a
  batch whose offset cannot be stored relative to the segment's base offset stops it
  (``LogSegmentOffsetOverflowException``: the broker splits the segment); an index entry every
  ``index.interval.bytes`` (``OffsetIndex``/``TimeIndex.maybeAppend``), and an index entry whose
  offset goes backwards empties the segment (``InvalidOffsetException``).  It gives where valid
  data ends, the indexes recovery builds, the epochs and the transaction markers met.
* :class:`RecoveryReading` feeds the folds from the store model's reading of the whole store
  (``store.model.kafka.read_store_entries``), pulled segment by segment as the plan asks, and
  keeps the findings ``validate`` states from that same reading: the plan, the damage it reports
  and what would remain after it come from one reading of each log byte.  Inside
  ``store.model.kafka.shared_reading`` a segment validate's reading folded there before comes
  folded (``SegmentResult.recovery``: :func:`feed` and :func:`finish_fold` are the one way a
  reading feeds a fold), and is not read again.
  :func:`scan_segment` runs a fold over a walk of its own, for a ``.log`` that reading does not
  walk (a ``.swap`` file) and for ``--apply``'s rebuild of the indexes.
* :class:`CutFold` is fed the same walk by the model's checker of a segment: where
  ``LogSegment.recover`` stops for every index interval, and what a cut there removes
  (:class:`CutFacts`: the CRC-32 of the cut bytes, taken as the walk reads them, and
  :func:`count_valid_from`'s count, from the walk's entries), so the plan reads no byte again for it.
* :func:`count_valid_from` counts the records of the valid batches from a position on, resyncing
  on the next batch with a valid size and CRC: what a cut drops.
* :func:`next_offset` is ``LogSegment.readNextOffset``; :func:`batch_starts` the positions of the
  batches up to a position, from their headers alone (to infer ``index.interval.bytes`` from an
  existing ``.index``); :func:`transaction_events` the producer-id batches of a segment (to replay
  producer state).
"""

from __future__ import annotations

import bisect
import os
import time
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from mqtool.errors import MqError, StoreLayoutError
from mqtool.findings import Finding
from mqtool.findings.code_ids import KAFKA_FILE_UNREADABLE
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.formats.kafka.legacy import LegacyRecord
from mqtool.formats.kafka.log import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MIN_ENTRY_SIZE_FIELD, DataEnd, LogEntry, peek_entry
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, nonzero_extent
from mqtool.store.model import kafka as km
from mqtool.store.model.kafka_entries import EntryDecode, ScannedEntry

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
    #: compressed v0/v1 wrappers among the entries (``records`` counts each once, not its inner messages)
    wrappers: int = 0
    #: the ``index.interval.bytes`` ``index`` and ``timeindex`` were built with
    interval: int | None = None
    #: every entry read ends at a higher offset than the ones before it: no index interval makes
    #: ``LogSegment.recover`` stop at an index point (``InvalidOffsetException``), so the scan with
    #: another interval differs in its ``index`` and ``timeindex`` alone
    increasing: bool = True
    #: from the store model's walk (``CutFold``): ``count_valid_from(valid_bytes)`` -- the valid
    #: records a cut at ``valid_bytes`` drops -- and the CRC-32 of the bytes the cut removes
    #: (``valid_bytes`` to the end); None when not known.
    #: Facts about the file, not of the scan: a scan equals another without them.
    cut_records: tuple[int, bool] | None = field(default=None, compare=False)
    cut_crc: int | None = field(default=None, compare=False)
    #: and ``count_valid_from(0)`` of a segment holding damage and no compressed v0/v1 wrapper
    #: (what a cut in an earlier segment drops of it)
    records_from_start: tuple[int, bool] | None = field(default=None, compare=False)

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


class RecoveryFold:
    """``LogSegment.recover`` folded over the entries of one walk of a segment, fed in order from
    position 0: ``entry`` for each valid entry (decoded in ``header`` mode, its CRC checked) until it
    returns False (recovery stops there), ``broken`` for the first entry that does not read, then
    ``finish`` with how the walk ended.  :func:`scan_segment` feeds it from a walk of its own;
    :class:`RecoveryReading` from the store model's reading (``read_store_entries``), so that
    ``recover``'s plan and the findings it reports come from one reading of the log."""

    def __init__(self, base: int, interval: int) -> None:
        self.base = base
        self.interval = interval
        self.scan = RecoveryScan(0, interval=interval)
        self.max_ts = -1
        self.offset_of_max = -1
        self.last_index_pos = 0
        self.epoch_seen = -1
        #: (end kind, position, detail) where recovery stopped before the walk's end
        self.stop: tuple[str, int, str] | None = None
        #: (position, error) of the first entry that does not read
        self.failure: tuple[int, MqError] | None = None

    @property
    def over(self) -> bool:
        """Whether recovery stopped: later entries are not its."""
        return self.stop is not None or self.failure is not None

    def entry(self, pos: int, entry: LogEntry, buffer: bytes, rel: int) -> bool:
        """One valid entry at file position ``pos`` (its bytes at ``buffer[rel:]``); False when
        recovery stops at it."""
        scan, base = self.scan, self.base
        last, ts, epoch, pid, control, transactional = entry_facts(entry)
        if not 0 <= last - base <= INT32_MAX:
            self.stop = ("overflow", pos, f"offset {last} cannot be stored relative to the base offset {base} (the broker splits the segment)")
            return False
        marker = None
        if control and pid >= 0:
            try:
                marker = marker_type(buffer, rel)
            except MqError as exc:
                self.stop = ("control", pos, f"the end-transaction marker of the control batch at {pos} does not read ({exc})")
                return False
        if ts > self.max_ts:
            self.max_ts, self.offset_of_max = ts, last
        if pos - self.last_index_pos > self.interval:
            if scan.index and last <= scan.index[-1].offset:
                self.stop = ("invalid-offset", pos, f"the batch at {pos} ends at offset {last}, not after the indexed offset {scan.index[-1].offset}")
                return False
            if scan.timeindex and self.offset_of_max < scan.timeindex[-1].offset:
                self.stop = ("invalid-offset", pos, f"time-index offset {self.offset_of_max} below the previous entry's {scan.timeindex[-1].offset}")
                return False
            scan.index.append(kidx.OffsetPosition(last, pos))
            if self.max_ts > (scan.timeindex[-1].timestamp if scan.timeindex else -1):
                scan.timeindex.append(kidx.TimestampOffset(self.max_ts, self.offset_of_max))
            self.last_index_pos = pos
        scan.entries += 1
        scan.records += records_of(entry)
        if isinstance(entry.header, LegacyRecord) and entry.header.is_compressed:
            scan.wrappers += 1
        if scan.last_offset is not None and last <= scan.last_offset:
            scan.increasing = False
        scan.last_offset = last if scan.last_offset is None else max(scan.last_offset, last)
        if epoch >= 0 and epoch > self.epoch_seen and entry.offset >= 0:
            scan.epochs.append((epoch, entry.offset))
            self.epoch_seen = epoch
        if pid >= 0:
            if marker is not None:
                scan.txn.append(("abort" if marker == rb.ABORT else "commit", pid, entry.offset))
            elif transactional and not control:
                scan.txn.append(("data", pid, entry.offset))
        scan.valid_bytes = pos + entry.size
        return True

    def broken(self, pos: int, error: MqError) -> None:
        """The first entry that does not read (its size, magic or CRC): recovery stops there."""
        if not self.over:
            self.failure = (pos, error)

    def finish(self, size: int, end: DataEnd | None) -> RecoveryScan:
        """The scan of a ``size``-byte segment whose walk ended at ``end`` (None when it met a
        broken entry)."""
        scan = self.scan
        scan.size = size
        if self.stop is None and scan.timeindex and self.offset_of_max < scan.timeindex[-1].offset:
            self.stop = (
                "invalid-offset",
                scan.valid_bytes,
                f"the largest timestamp is at offset {self.offset_of_max}, below the time index's {scan.timeindex[-1].offset}",
            )
        if self.stop is not None:
            scan.end, position, scan.detail = self.stop
            if scan.end == "overflow":
                scan.valid_bytes = size  # left alone: the broker splits it, mqtool does not
            elif scan.end == "invalid-offset":
                scan.valid_bytes = 0  # InvalidOffsetException: "Deleting the corrupt segment and creating an empty one"
                scan.index, scan.timeindex, scan.txn, scan.epochs = [], [], [], []
                scan.last_offset = None
            else:
                scan.valid_bytes = position
            return scan
        if self.failure is not None:
            scan.end = "corrupt"
            scan.valid_bytes, error = self.failure
            scan.detail = f"invalid batch at {scan.valid_bytes}: {error}"
        else:
            assert end is not None  # a walk ends cleanly or at a broken entry
            scan.end = end.kind
            scan.valid_bytes = end.position
            if end.kind == "zeros" and scan.valid_bytes < size:
                scan.detail = f"{size - scan.valid_bytes} zero bytes after the last batch (read as a batch of size 0)"
            elif end.kind == "partial":
                scan.detail = f"a partially written batch of {size - scan.valid_bytes} bytes at {scan.valid_bytes}"
        # the final entry ``LogSegment.recover`` forces (``maybeAppend(..., skipFullCheck=true)``)
        if self.max_ts > (scan.timeindex[-1].timestamp if scan.timeindex else -1):
            scan.timeindex.append(kidx.TimestampOffset(self.max_ts, self.offset_of_max))
        return scan


def too_large(size: int) -> RecoveryScan | None:
    """The scan of a ``.log`` larger than the broker opens (nothing of it is read), else None."""
    if size <= ks.MAX_SEGMENT_SIZE:
        return None
    return RecoveryScan(size, size, "too-large", f"a .log of {size} bytes, more than the broker opens")


def scan_segment(path: Path, base: int, interval: int) -> RecoveryScan:
    """Run ``LogSegment.recover`` over one ``.log`` (read-only): where valid data ends, and the
    indexes recovery builds for it."""
    with ReadOnlyFile(path) as f:
        large = too_large(f.size)
        if large is not None:
            return large
        fold = RecoveryFold(base, interval)
        walk = ks.LogFileWalk(f, 0, mode="header", check_crc=True)
        for pos, entry in walk:
            if not fold.entry(pos, entry, walk.buffer, pos - walk.buffer_start):
                break
        if not fold.over and walk.error is not None:
            fold.broken(walk.failed_at if walk.failed_at is not None else fold.scan.valid_bytes, walk.error)
        return fold.finish(f.size, walk.end)


#: ``index.interval.bytes`` of a segment ``RecoveryReading`` folds for no one in particular
#: (the broker's default): what the restart preview reads of a segment the plan did not scan.
DEFAULT_INTERVAL = km.RECOVERY_INTERVAL


class RecoveryReading:
    """The store model's one reading of a store (``read_store_entries``, the families ``checks``),
    pulled segment by segment as ``recover``'s plan asks: each segment's entries fold into
    ``LogSegment.recover`` (:class:`RecoveryFold`) as the model's walk judges them, and the
    findings ``validate`` states come from the same reading (``findings`` once it is over).

    ``scan(log, base, interval)`` before the reading reaches ``log`` folds it with ``interval``;
    a segment it passes without being asked is folded with :data:`DEFAULT_INTERVAL`.  A ``.log``
    the reading does not walk (a ``.swap`` file, one that cannot be read, one larger than the
    broker opens) has no scan here: ``scan`` returns None and the caller reads it itself."""

    def __init__(self, store: ks.KafkaStore, checks: frozenset[str]) -> None:
        self.checks = checks
        self._items = iter(km.read_store_entries(store, EntryDecode(mode="header", check_crc=True), checks=checks, kept=True, cuts=True))
        self._folds: dict[str, RecoveryFold] = {}
        self._done: dict[str, tuple[int, RecoveryScan | None]] = {}  # log -> (interval, scan)
        #: log -> the reading's task of the segment and every finding of it (the families read)
        self._segments: dict[str, tuple[km.SegmentTask, list[Finding]]] = {}
        self._found: list[Finding] = []
        self._over = False
        #: seconds the reading spent on each segment (log path): its read speed
        self.seconds: dict[str, float] = {}
        self._spent = 0.0  # seconds of the segment being read so far

    def scan(self, log: str, base: int, interval: int) -> RecoveryScan | None:
        """``LogSegment.recover`` of ``log`` with ``interval``, from the reading (None: not in it).
        A segment the reading folded with another interval comes as that scan when its offsets
        increase (``RecoveryScan.increasing``: no interval stops recovery at an index point) -- a
        copy whose ``index`` and ``timeindex`` are those of its own ``interval`` (recover makes the
        ones of ``interval`` when it needs them) -- else None."""
        if log not in self._done and log not in self._folds:
            self._folds[log] = RecoveryFold(base, interval)
        while log not in self._done and not self._over:
            self._pull()
        got = self._done.get(log)
        if got is None:
            return None
        done, scan = got
        if done == interval or scan is None:
            return scan
        if not scan.increasing or scan.end == "invalid-offset":
            return None
        return replace(scan, index=list(scan.index), timeindex=list(scan.timeindex), aborts=list(scan.aborts))

    def folded(self, log: str) -> RecoveryScan | None:
        """The scan of ``log`` with :data:`DEFAULT_INTERVAL` the reading made, if it made one."""
        got = self._done.get(log)
        return got[1] if got is not None and got[0] == DEFAULT_INTERVAL else None

    def valid_records(self, log: str) -> tuple[int, bool] | None:
        """``count_valid_from(log, 0)`` from the reading (reading on to ``log``): when every byte
        of it is a valid batch -- its walk ended cleanly at the end of the file -- holding no
        compressed v0/v1 wrapper (whose inner messages the count opens), its records; for a
        segment with damage, the model's walk's count (``RecoveryScan.records_from_start``); else
        None."""
        while log not in self._done and not self._over:
            self._pull()
        got = self._done.get(log)
        scan = got[1] if got is not None else None
        if scan is None:
            return None
        if scan.end == "eof" and scan.valid_bytes == scan.size and not scan.wrappers:
            return scan.records, True
        return scan.records_from_start

    def segment_findings(self, task: km.SegmentTask) -> list[Finding] | None:
        """Every finding of ``task``'s segment (``check_segment(task).findings``) when the reading
        checked that segment as ``task`` asks (the same files, the same place in its partition,
        its indexes read), reading on to it; None otherwise."""
        log = task.log
        while log not in self._segments and not self._over:
            self._pull()
        got = self._segments.get(log)
        if got is None:
            return None
        read, found = got
        same = (read.partition, read.base_offset, read.named, read.index, read.timeindex, read.txnindex, read.is_last, read.indexes) == (
            task.partition,
            task.base_offset,
            task.named,
            task.index,
            task.timeindex,
            task.txnindex,
            task.is_last,
            task.indexes,
        )
        return found if same and not read.deep and not read.kraft_snapshot else None

    @property
    def findings(self) -> list[Finding]:
        """Every finding of the reading whose family is among ``checks`` (``km.findings``'s, in
        its order); reads what is left of the store."""
        while not self._over:
            self._pull()
        return self._found

    def _pull(self) -> None:
        started = time.perf_counter()
        item = next(self._items, None)
        self._spent += time.perf_counter() - started
        if item is None:
            self._over = True
            return
        if isinstance(item, ScannedEntry):
            task = item.task
            if task.kraft_snapshot or item.resumed:
                return
            fold = self._folds.get(task.log)
            if fold is None:
                fold = self._folds[task.log] = RecoveryFold(task.base_offset, DEFAULT_INTERVAL)
            feed(fold, item)
        elif isinstance(item, km.Placed):
            if item.finding.family in self.checks:
                self._found.append(item.finding)
        elif isinstance(item, km.SegmentRead):
            res = item.result
            self._found.extend(f for f in res.findings if f.family in self.checks)
            read = item.task
            if not isinstance(read, km.SegmentTask) or read.kraft_snapshot:
                return
            self._segments[read.log] = (read, res.findings)
            if res.recovery is not None:  # kept inside ``shared_reading``: folded by the reading before
                self._folds.pop(read.log, None)
                assert read.recovery_interval is None  # this reading's tasks fold nothing themselves
                if res.read_seconds is not None:
                    self.seconds[read.log] = res.read_seconds
                self._spent = 0.0
                self._done[read.log] = (DEFAULT_INTERVAL, res.recovery)
                return
            self.seconds[read.log], self._spent = self._spent, 0.0
            fold = self._folds.pop(read.log, None) or RecoveryFold(read.base_offset, DEFAULT_INTERVAL)
            self._done[read.log] = (fold.interval, finish_fold(fold, res, item.first_walk))


def feed(fold: RecoveryFold, item: ScannedEntry) -> None:
    """One entry of a segment's first walk, as the store model's reading yields it, into ``fold``
    (a broken frame, or an entry whose CRC fails, stops it)."""
    if fold.over:
        return
    if item.error is not None or item.entry is None:
        assert item.error is not None  # a broken frame comes with its error
        fold.broken(item.position, item.error)
    else:
        fold.entry(item.position, item.entry, item.buffer, item.rel)


def finish_fold(fold: RecoveryFold, res: km.SegmentResult, first_walk: ks.LogFileWalk | None) -> RecoveryScan | None:
    """The scan of the segment ``res`` is the reading of, its entries fed to ``fold``; None where
    the reading did not walk it (too large for the broker to open, unreadable)."""
    if too_large(res.size) is not None or first_walk is None or any(f.code == KAFKA_FILE_UNREADABLE and f.path == res.path for f in res.findings):
        return None
    scan = fold.finish(res.size, None if fold.over else first_walk.end)
    attach_cut(scan, res.cut)
    return scan


# --- counting what a cut drops ------------------------------------------------------------------------


def count_valid_from(path: Path, start: int) -> tuple[int, bool]:
    """Records of the valid batches from ``start`` on (resynchronising on the next batch with a
    valid size and CRC after anything else), and whether the count is complete (False: more than
    ``RESYNC_LIMIT`` bytes were left unexamined).  The store model's walk of a segment counts the
    same from where ``LogSegment.recover`` stops (``CutFold``): recover's plan reads the file for
    it only where that count is not known."""
    with ReadOnlyFile(path) as f:
        budget_end = start + RESYNC_LIMIT
        return _count_on(f, ks.resync(f, start, limit=budget_end), budget_end, 0, False, start)


def _count_on(f: ReadOnlyFile, pos: int | None, budget_end: int, count: int, undecoded: bool, searched_from: int) -> tuple[int, bool]:
    """``count_valid_from`` on from a walk at ``pos`` (None: the search found nothing), the records
    counted so far, whether a wrapper's were not, where the last search started."""
    while pos is not None:
        walk = ks.LogFileWalk(f, pos, mode="header", garbage_extent=False)
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
        if stop + HEADER_SIZE_UP_TO_MAGIC > f.size:
            return count, not undecoded
        searched_from = stop + 1
        pos = ks.resync(f, searched_from, limit=budget_end)
    # the search gave up at the budget: is there anything past it?
    beyond = max(searched_from, budget_end)
    complete = beyond >= f.size or nonzero_extent(f, beyond) is None
    return count, complete and not undecoded


# --- what a cut removes, from the model's walk ------------------------------------------------------------

#: ``index.interval.bytes`` of ``CutFold``'s own ``LogSegment.recover``: no index point, so it stops
#: only where recovery stops for every interval (an entry that does not read, an unreadable
#: end-transaction marker, an offset overflow, the end of the data).
_NO_INDEX = 1 << 62
_ZEROS = bytes(1 << 20)
#: The reads ``CutFold`` keeps for ``_DropCount`` are pieces at least this long (not the headers
#: the checker peeks at).
_RECENT_MIN = 4096
#: At most this many bytes past the checker's reads are kept for it (``CutFold.ahead``): a false
#: start after damage may claim an entry of up to ``store.kafka.MAX_ENTRY_SIZE`` bytes; past this,
#: bytes a search reads ahead are read again by the walk (the answer is the same).
_AHEAD_MAX = 16 << 20


@dataclass(frozen=True)
class CutFacts:
    """What a cut of a segment at ``position`` removes, as the store model's walk read it: the
    bytes' CRC-32 (``position`` to the end of the file: recover's precondition on them) and
    ``count_valid_from(position)``, the valid records it drops (``kind``: where recovery stops)."""

    position: int | None  # None: nothing is cut (the data ends at the end of the file, an offset overflows)
    kind: str
    crc32: int
    records: tuple[int, bool] | None
    #: ``count_valid_from(0)`` (None when the segment holds a compressed v0/v1 wrapper)
    from_start: tuple[int, bool] | None = None


class _DropCount:
    """``count_valid_from(start)``, fed the entries of the store model's walk of the segment from
    ``start`` on (each decoded in ``header`` mode with its CRC checked): its walks are the model's
    entries -- the same framing -- and its search for the next valid batch looks only at the bytes
    the model's walk stepped over (inside an entry that does not read, what a resynchronisation
    skipped, a torn tail), where the model has just read them.  Where the search finds a batch the
    model's walk does not start at, the count goes on reading the file itself (``_count_on``)."""

    def __init__(self, f: ReadOnlyFile, start: int, *, wrappers: bool = True) -> None:
        self.f = f
        #: False: a compressed v0/v1 wrapper ends the count unanswered (``given_up``), its inner
        #: messages not decompressed
        self.wrappers = wrappers
        self.given_up = False
        self.budget_end = start + RESYNC_LIMIT
        self.count = 0
        self.undecoded = False
        self.searched_from = start
        #: searching: the first position not searched yet (None while walking)
        self.search: int | None = start
        #: walking: where the walk's next entry starts (None while searching)
        self.expect: int | None = None
        self.result: tuple[int, bool] | None = None

    def _found(self, start: int, stop: int) -> bool:
        """Search ``[start, stop)`` (within the budget); True when a batch is found there: the
        count then goes on from it by its own reading."""
        stop = min(stop, self.budget_end)
        if start >= stop:
            return False
        hit = ks.resync(self.f, start, limit=stop)
        if hit is None:
            return False
        self.result = _count_on(self.f, hit, self.budget_end, self.count, self.undecoded, self.searched_from)
        return True

    def _own_walk(self) -> None:
        """The model's walk does not go where this count's walk goes: read on from there."""
        assert self.expect is not None
        self.result = _count_on(self.f, self.expect, self.budget_end, self.count, self.undecoded, self.searched_from)

    def _stopped(self, stop: int) -> None:
        """The count's walk stops at ``stop`` (an entry that does not read, or the data's end)."""
        self.expect = None
        if stop + HEADER_SIZE_UP_TO_MAGIC > self.f.size:
            self.result = (self.count, not self.undecoded)
            return
        self.searched_from = self.search = stop + 1

    def _add(self, item: ScannedEntry) -> None:
        entry = item.entry
        assert entry is not None
        if isinstance(entry.header, LegacyRecord) and entry.header.is_compressed:
            if not self.wrappers:
                self.given_up = True
                self.result = (self.count, False)
                return
            try:
                self.count += len(item.decoded("full").records or ())
            except MqError:
                self.count += 1
                self.undecoded = True
        else:
            self.count += records_of(entry)

    def entry(self, item: ScannedEntry, size: int) -> None:
        if self.result is not None:
            return
        pos = item.position
        valid = item.error is None and item.entry is not None
        if self.expect is not None:
            if pos != self.expect:
                self._own_walk()
                return
            if valid:
                self._add(item)
                self.expect = pos + size
                return
            self._stopped(pos)  # the walk stops at it; the search goes on inside it
            if self.result is None and not self._found(pos + 1, pos + size):
                self.search = pos + size
            return
        search = self.search
        assert search is not None
        if pos < search:
            self.result = _count_on(self.f, ks.resync(self.f, search, limit=self.budget_end), self.budget_end, self.count, self.undecoded, self.searched_from)
            return
        if pos >= self.budget_end:
            if not self._found(search, pos):
                self._give_up()
            return
        if self._found(search, pos):
            return
        if valid:
            self._add(item)
            self.search, self.expect = None, pos + size
            return
        if not self._found(pos, pos + size):
            self.search = pos + size

    def broken(self, position: int) -> None:
        """The model's walk met a broken frame at ``position``."""
        if self.result is not None:
            return
        if self.expect is not None:
            if position != self.expect:
                self._own_walk()
                return
            self._stopped(position)
            return
        assert self.search is not None
        if not self._found(self.search, position + 1):
            self.search = max(self.search, position + 1)

    def end(self, kind: str, position: int, zeros_to_end: bool) -> None:
        """A walk of the model's ended cleanly at ``position`` (``zeros_to_end``: only zeros follow)."""
        if self.result is not None:
            return
        if self.expect is None:  # searching: ``finish`` searches what is left, but a zero run
            if zeros_to_end:
                assert self.search is not None
                if not self._found(self.search, position):
                    if max(self.searched_from, self.budget_end) >= position:
                        self.result = (self.count, not self.undecoded)  # nothing but zeros left
                    else:
                        self._give_up()
            return
        if position != self.expect:
            self._own_walk()
            return
        if kind == "eof":
            self.result = (self.count, not self.undecoded)
            return
        self._stopped(position)
        if self.result is None and kind == "zeros" and zeros_to_end:
            self.result = (self.count, not self.undecoded)  # a zero run holds no batch, nor does anything after it

    def finish(self) -> tuple[int, bool]:
        if self.result is None:
            if self.expect is not None:
                self._own_walk()
            else:
                assert self.search is not None
                if not self._found(self.search, self.f.size):
                    self._give_up()
        assert self.result is not None
        return self.result

    def _give_up(self) -> None:
        beyond = max(self.searched_from, self.budget_end)
        complete = beyond >= self.f.size or nonzero_extent(self.f, beyond) is None
        self.result = (self.count, complete and not self.undecoded)


class _Recent(ReadOnlyFile):
    """The segment's file as ``_DropCount`` reads it (``CutFold.fetch``): the bytes the checker
    has just read (``CutFold.recent``) are not read again, so the count's search over the bytes the
    model's walk stepped over reads them no more; and the bytes past the checker's reads that a
    search reads from the file (a false start whose claimed size runs past them) are kept for the
    checker's next reads (``CutFold.ahead``)."""

    def __init__(self, cut: CutFold) -> None:  # the file stays the checker's: not opened again
        f = cut.f
        self._cut = cut
        self.path, self.size, self.mtime, self.stat = f.path, f.size, f.mtime, f.stat
        self._fd = None
        self._kept = None

    def pread(self, position: int, size: int) -> bytes:
        return self._cut.fetch(position, size, ahead=True)


class CutFold:
    """Where ``LogSegment.recover`` stops in a segment for every index interval, and what a cut
    there removes (``CutFacts``), from the store model's walk of the segment (``kafka_segment``'s
    checker feeds it): recover's plan reads no byte of the segment again for its cut.

    The checker reads the file through :meth:`read` (every piece its walks, searches and zero runs
    read), so the CRC-32 of the bytes from the stop on is taken from the bytes as they are read; the
    entries of the first walk go to a ``RecoveryFold`` without index points (it stops where every
    interval's does), and from the stop on to ``count_valid_from``'s count (``_DropCount``)."""

    def __init__(self, f: ReadOnlyFile, base: int) -> None:
        self.f = f
        self.stopper = RecoveryFold(base, _NO_INDEX)
        self.position: int | None = None
        self.kind = ""
        self.dead = False  # no cut: the data ends at the end of the file, or an offset overflows
        self.crc = 0
        self.upto: int | None = None
        self.count: _DropCount | None = None
        #: the last pieces the checker read (file position, bytes): what ``_DropCount`` reads first
        self.recent: deque[tuple[int, bytes]] = deque(maxlen=2)
        #: where the checker's furthest read ends
        self.frontier = 0
        #: bytes past ``frontier`` the counts read from the file (file position, bytes; disjoint,
        #: in file order, ``ahead_bytes`` in all): what the checker's next reads take first
        self.ahead: list[tuple[int, bytes]] = []
        self.ahead_bytes = 0
        #: ``count_valid_from(0)``, for a segment with damage after a cut in an earlier one
        self.whole = _DropCount(_Recent(self), 0, wrappers=False)

    @property
    def wants_entries(self) -> bool:
        """Whether the next entries matter (before the stop, or to the counts)."""
        if self.whole.result is None:
            return True
        if self.dead:
            return False
        if self.position is None:
            return True
        return self.count is not None and self.count.result is None

    def fetch(self, position: int, size: int, *, ahead: bool) -> bytes:
        """Up to ``size`` bytes of the segment at ``position`` (fewer only at its end), for the
        checker (``_Tee``) or, ``ahead``, for the counts (``_Recent``): what the pieces in hand hold
        (``recent``, ``ahead``) is taken from them, the rest read from the file.  The counts'
        reads of bytes the checker has not read yet are kept in ``ahead`` (up to ``_AHEAD_MAX``
        bytes), so that the checker's walk does not read them again: each byte of the segment is
        read from the file once, however many false starts a search after damage meets."""
        size = max(0, min(size, self.f.size - position))
        end = position + size
        pieces = [*self.recent, *self.ahead]
        for start, data in reversed(pieces):
            if start <= position and end <= start + len(data):
                return data[position - start : end - start]
        parts: list[bytes] = []
        pos = position
        while pos < end:
            held: tuple[int, bytes] | None = None
            gap_end = end
            for start, data in pieces:
                stop = start + len(data)
                if start <= pos < stop:
                    if held is None or stop > held[0] + len(held[1]):
                        held = (start, data)
                elif pos < start < gap_end:
                    gap_end = start
            if held is not None:
                start, data = held
                take = min(end, start + len(data))
                parts.append(data[pos - start : take - start])
                pos = take
                continue
            data = self.f.pread(pos, gap_end - pos)
            if ahead and pos >= self.frontier and self.ahead_bytes + len(data) <= _AHEAD_MAX:
                bisect.insort(self.ahead, (pos, data), key=lambda piece: piece[0])
                self.ahead_bytes += len(data)
            parts.append(data)
            pos = gap_end
        return b"".join(parts)

    def read(self, position: int, data: bytes) -> None:
        """Bytes the checker read at ``position``: the CRC goes on with those past what it took."""
        if len(data) >= _RECENT_MIN:
            self.recent.append((position, data))
            self.frontier = max(self.frontier, position + len(data))
            if self.ahead:  # what the checker has read past: the recent pieces hold what is needed
                behind = self.recent[0][0]
                kept = [(start, piece) for start, piece in self.ahead if start + len(piece) > behind]
                if len(kept) < len(self.ahead):
                    self.ahead = kept
                    self.ahead_bytes = sum(len(piece) for _start, piece in kept)
        else:
            self.frontier = max(self.frontier, position + len(data))
        upto = self.upto
        if upto is not None and position <= upto < position + len(data):
            self.crc = zlib.crc32(memoryview(data)[upto - position :], self.crc)
            self.upto = position + len(data)

    def _arm(self, position: int, kind: str, buffer: bytes, buffer_start: int) -> None:
        self.position, self.kind = position, kind
        self.upto = position
        self.read(buffer_start, buffer)
        self.count = _DropCount(_Recent(self), position)

    def _zeros(self, length: int) -> None:
        while length > 0:
            n = min(length, len(_ZEROS))
            self.crc = zlib.crc32(memoryview(_ZEROS)[:n], self.crc)
            length -= n

    def entry(self, item: ScannedEntry, size: int, walk: ks.LogFileWalk, *, first: bool) -> None:
        """An entry of the model's walks (``first``: of its first walk), decoded in ``header`` mode
        with its CRC checked."""
        self.whole.entry(item, size)
        if self.dead:
            return
        if self.position is None:
            if not first:
                return
            feed(self.stopper, item)
            if not self.stopper.over:
                return
            stop, failure = self.stopper.stop, self.stopper.failure
            if stop is not None:
                if stop[0] != "control":  # overflow: the broker splits the segment, nothing is cut
                    self.dead = True
                    return
                self._arm(stop[1], "control", walk.buffer, walk.buffer_start)
            else:
                assert failure is not None
                self._arm(failure[0], "corrupt", walk.buffer, walk.buffer_start)
        if self.count is not None:
            self.count.entry(item, size)

    def broken(self, walk: ks.LogFileWalk, *, first: bool) -> None:
        """A walk of the model's met a broken frame (at ``walk.failed_at``)."""
        at = walk.failed_at
        if at is None:
            return
        self.whole.broken(at)
        if self.dead:
            return
        if self.position is None:
            if not first:
                return
            self._arm(at, "corrupt", walk.buffer, walk.buffer_start)
        if self.count is not None:
            self.count.broken(at)

    def end(self, walk: ks.LogFileWalk, *, first: bool) -> None:
        """A walk of the model's ended cleanly (``walk.end``)."""
        end = walk.end
        if end is None:
            return
        zeros_to_end = end.kind == "zeros" and walk.data_after_zeros is None
        self.whole.end(end.kind, end.position, zeros_to_end)
        if self.dead:
            return
        if self.position is None:
            if not first:
                return
            size = self.f.size
            if end.kind == "eof" or end.position >= size:
                self.dead = True
                return
            self.position, self.kind = end.position, end.kind
            self.count = _DropCount(_Recent(self), end.position)
            if end.kind == "zeros":  # the zero run, read by the walk: its CRC needs no bytes
                stop = size if zeros_to_end else walk.data_after_zeros
                assert stop is not None
                self._zeros(stop - end.position)
                self.upto = stop
                if zeros_to_end:  # no batch starts in zeros, nor after them
                    self.count.result = (0, True)
            else:
                self.upto = end.position
                self.read(walk.buffer_start, walk.buffer)
            return
        if self.count is not None:
            self.count.end(end.kind, end.position, zeros_to_end)

    def finish(self) -> CutFacts:
        """What a cut removes, once the model's walk of the segment is over (the file still open)."""
        whole = self.whole.finish()
        from_start = None if self.whole.given_up else whole
        if self.dead or self.position is None or self.upto is None:
            return CutFacts(None, "", 0, None, from_start)
        records = self.count.finish() if self.count is not None else None
        size = self.f.size
        while self.upto < size:  # what no read of the walk's covered (read once more)
            self.read(self.upto, self.fetch(self.upto, min(1 << 20, size - self.upto), ahead=False))
        return CutFacts(self.position, self.kind, self.crc & 0xFFFFFFFF, records, from_start)


def attach_cut(scan: RecoveryScan | None, cut: CutFacts | None) -> None:
    """Give ``scan`` the facts of its cut, when the model's walk stopped where it does."""
    if scan is None or cut is None:
        return
    scan.records_from_start = cut.from_start
    if scan.valid_bytes != cut.position or scan.end != cut.kind:
        return
    scan.cut_crc = cut.crc32
    scan.cut_records = cut.records


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
    """Positions of the entries of a ``.log`` whose framing holds (offset, size, magic: what a
    ``framing`` walk checks) and that end by ``upto``, up to the first that does not.  Only each
    entry's first 17 bytes are read: the answer is where entries start, not what they hold (the
    store model's reading judges that), so the log is not read a second time for it.  Inside
    ``store.model.kafka.shared_reading``, from the kept reading's entry positions
    (``SegmentResult.heads``) when they reach ``upto`` (the file unchanged since): nothing read."""
    from mqtool.store.model.kafka_shared import kept_heads

    kept = kept_heads(str(path))
    if kept is not None:
        heads, end = kept
        stop = min(os.stat(path).st_size, upto)
        if end >= stop:  # the entries that end by ``stop``: the first ones, one after the other
            ends = [*heads[1:], end]
            return [pos for pos, after in zip(heads, ends) if after <= stop]
    starts: list[int] = []
    with ReadOnlyFile(path) as f:
        stop = min(f.size, upto)
        pos = 0
        while pos + HEADER_SIZE_UP_TO_MAGIC <= stop:
            _offset, size, magic = peek_entry(f.pread(pos, HEADER_SIZE_UP_TO_MAGIC))
            total = LOG_OVERHEAD + size
            if not 0 <= magic <= rb.MAGIC_V2 or size < MIN_ENTRY_SIZE_FIELD or total > ks.MAX_ENTRY_SIZE or pos + total > stop:
                break
            starts.append(pos)
            pos += total
    return starts


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
    "DEFAULT_INTERVAL",
    "RESYNC_LIMIT",
    "CutFacts",
    "CutFold",
    "RecoveryFold",
    "RecoveryReading",
    "RecoveryScan",
    "attach_cut",
    "batch_starts",
    "count_valid_from",
    "entry_facts",
    "feed",
    "finish_fold",
    "marker_type",
    "next_offset",
    "records_of",
    "scan_segment",
    "too_large",
    "transaction_events",
]
