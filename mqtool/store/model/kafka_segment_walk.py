"""The store model's walk of one Kafka segment (phase 2 of ``store.model.kafka``'s reading): the
``.log`` streamed in pieces (``store.kafka.LogFileWalk``; the first ``FIRST_PIECE`` bytes, each next
read twice as large up to ``SegmentTask.piece``), each entry judged as it is read and handed on to
whoever consumes the reading, resuming after damage on the next valid entry.

:class:`SegmentChecker` runs the walk; the rules live beside it, one module per concern: each
entry's checks (:mod:`mqtool.store.model.kafka_batch_checks`, which hands each batch on to the
index cross-checks of :mod:`mqtool.store.model.kafka_index_checks` and to the ``--deep`` record
checks of :mod:`mqtool.store.model.kafka_record_checks`), how the walk ends or goes on after damage
(:mod:`mqtool.store.model.kafka_segment_end`).  The same walk feeds the consumers' folds
(``SegmentTask.fold``), ``LogSegment.recover``'s fold and what a cut removes (``kafka_recovery``'s
``RecoveryFold`` and ``CutFold``), and keeps what recover's plan would read the file again for
(the first entries' positions, the last entries, the largest timestamp).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mqtool.errors import MqError
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.log import LogEntry, decode_entry
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import kafka_segment_end as ends
from mqtool.store.model.kafka_batch_checks import BatchChecks
from mqtool.store.model.kafka_entries import EntryDecode, ScannedEntry, SegmentFolder
from mqtool.store.model.kafka_index_checks import IndexChecks

if TYPE_CHECKING:
    from mqtool.store.model.kafka_recovery import CutFold, RecoveryFold
    from mqtool.store.model.kafka_segment import SegmentResult, SegmentTask

#: Bytes of a segment's first read; each next read is twice as large, up to the piece
#: (``LogFileWalk(first_piece=...)``): a consumer of the reading that stops after a few entries
#: (``dump --limit``) reads little more than them.
FIRST_PIECE = 64 << 10


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


class SegmentChecker:
    """The walk of one segment's ``.log`` (``f``) with its checks (findings and counts on ``res``),
    each entry handed to the consumers' ``folders`` and, as the task asks, recover's folds."""

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
        #: each entry's checks
        self.checks = BatchChecks(task, res)
        self.fold: RecoveryFold | None = None
        if task.recovery_interval is not None and not task.kraft_snapshot:
            from mqtool.store.model.kafka_recovery import RecoveryFold

            self.fold = RecoveryFold(task.base_offset, task.recovery_interval)
        self.cut: CutFold | None = None
        if (task.cuts or task.recovery_interval is not None) and not task.kraft_snapshot:
            from mqtool.store.model.kafka_recovery import CutFold

            self.cut = CutFold(f, task.base_offset)
            self.f = _Tee(f, self.cut)

    def run(self) -> None:
        for _ in self.scan(None):
            pass

    def scan(self, decode: EntryDecode | None) -> Iterator[ScannedEntry]:
        """The checks of the segment, yielding each entry of its walk after judging it (decoded
        as ``decode`` asks, for a consumer of the reading; none when None)."""
        t = self.t
        checks = self.checks
        indexes = checks.indexes = IndexChecks(t, self.res) if t.indexes and not t.kraft_snapshot else None
        try:
            yield from self._walk(decode)
            if indexes is not None:
                indexes.finish(checks.prev_pos, checks.prev_last, checks.first_break, self.f.size)
            checks.finish()
        finally:
            if indexes is not None:
                indexes.close()

    def _walk(self, decode: EntryDecode | None) -> Iterator[ScannedEntry]:
        f = self.f
        checks = self.checks
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
                checks.entry(pos, entry, walk.buffer, rel)
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
                nxt = ends.after_broken_entry(checks, f, walk)
                if nxt is None:
                    return
                start, held = nxt, walk.buffer_start + len(walk.buffer)
                continue
            end = walk.end
            assert end is not None
            if end.kind == "zeros" and walk.data_after_zeros is not None:
                nxt = ends.after_zero_run(checks, f, walk)
                if nxt is None:
                    return
                start, held = nxt, walk.buffer_start + len(walk.buffer)
                continue
            ends.judge_end(checks, f, end.kind, end.position, end.length)
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
