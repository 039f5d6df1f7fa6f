"""What a consumer of the Kafka store model's reading gets of each segment's entries, and how it
folds them (the types of store.model.kafka.read_store_entries' items and folds).

* :class:`EntryDecode`: how the consumer wants each entry decoded (``LogWalker``'s modes, the CRC
  checked or not);
* :class:`ScannedEntry`: one entry of a segment's walk, after the model judged it (the walk that
  reads the segment is ``kafka_segment``'s checker: ``LogSegment.recover``'s checks and the
  index checks);
* :class:`FirstWalk`: how the segment's first walk ended (where ``LogSegment.recover``, which
  never resynchronises, stops);
* :class:`SegmentFold` / :class:`SegmentFolder` / :class:`Folds`: a consumer's count of each
  segment, fed by the same walk in whichever process reads the segment (stats, lag's commits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mqtool.errors import MqError
from mqtool.formats.kafka.log import DataEnd, LogEntry, Mode, decode_entry

if TYPE_CHECKING:
    from mqtool.store.model.kafka_segment import SegmentResult, SegmentTask


@dataclass(frozen=True)
class EntryDecode:
    """How a consumer of the reading wants each entry (``read_store(entries=...)``): decoded in
    ``mode`` (``LogWalker``'s), its CRC checked or not, an entry whose frame holds but whose CRC
    fails (or whose codec is not installed) kept as ``LogFileWalk(keep_damaged=True)`` keeps it."""

    mode: Mode = "full"
    check_crc: bool = True


@dataclass(frozen=True)
class ScannedEntry:
    """One entry of a segment as the model's walk reads it, after the model judged it: its file
    ``position``, the ``entry`` decoded as the consumer asked (None when it does not decode, or
    for a broken frame the walk met: the ``error`` where a walk that stops at a broken entry
    stops), and ``error`` also for an entry kept despite it (a CRC, a codec not installed:
    ``kept``).  ``buffer[rel:]`` holds its bytes.
    ``resumed``: read after the segment's walk met a broken frame and resynchronised (a walk that
    stops at a broken entry never reads it)."""

    task: SegmentTask
    position: int
    entry: LogEntry | None
    error: MqError | None
    buffer: bytes
    rel: int
    resumed: bool

    @property
    def kept(self) -> bool:
        return self.entry is not None and self.error is not None

    def decoded(self, mode: Mode, *, check_crc: bool = True) -> LogEntry:
        """The entry decoded in ``mode`` from the bytes the walk read (a consumer that asked for
        less -- ``framing`` -- decodes the few entries it needs); raises the ``MqError`` (located
        in the file) of an entry that does not decode so."""
        try:
            return decode_entry(self.buffer, self.rel, mode=mode, check_crc=check_crc)
        except MqError as exc:
            raise exc.at(self.task.log, self.position - self.rel) from None


@dataclass(frozen=True)
class FirstWalk:
    """How a segment's first walk (from position 0) ended: its clean ``end``, or the ``error`` of
    the broken entry it stopped at (where a walk that stops at a broken entry stops)."""

    end: DataEnd | None
    error: MqError | None


class SegmentFolder(Protocol):
    """A consumer's count of one segment, fed by the model's walk of it as the walk judges it."""

    def entry(self, item: ScannedEntry) -> None:
        """One entry of the segment's walks, decoded as the fold's ``decode`` asks (``resumed``
        after a resynchronisation); a broken frame the walk met comes with ``entry`` None and
        its ``error``, where a walk that stops at a broken entry stops."""

    def finish(self, result: SegmentResult, first_walk: FirstWalk | None) -> object:
        """What the fold made of the segment once its walk is over (``SegmentResult.fold_result``):
        how its first walk ended, None when the ``.log`` could not be read."""


class SegmentFold(Protocol):
    """What a consumer folds each segment of a reading into (stats' counts): given to the reading
    (``store.model.kafka.read_store_entries(fold=...)``, ``shared_reading(fold=...)``) and carried
    by each ``SegmentTask`` to the process that reads the segment, so it is picklable, and
    compared with ``==``: a segment kept inside ``shared_reading`` serves a consumer whose fold
    equals the one it was read with.  ``start`` makes the fold of one segment."""

    @property
    def decode(self) -> EntryDecode:
        """How the fold wants each entry decoded."""

    def start(self, task: SegmentTask) -> SegmentFolder:
        """The fold of the segment ``task`` reads."""


@dataclass(frozen=True)
class Folds:
    """Several consumers' folds of the same segments, fed by one walk (a ``SegmentFold``'s task
    carries them as its ``fold``): each folder is fed the entries decoded as its own fold asks
    (one decoding shared by the folds that ask alike), and ``SegmentResult.fold_result`` is the
    tuple of what each made, in order.  A segment kept inside ``shared_reading`` with ``Folds``
    serves a consumer of any one of them (``part``)."""

    folds: tuple[SegmentFold, ...]

    def part(self, fold: SegmentFold | Folds, result: object) -> tuple[bool, object]:
        """What ``fold`` -- one of these, or ``Folds`` of some of them -- made, taken from this
        composite's ``result``: (True, its result), or (False, None) when it is not among them."""
        if not isinstance(result, tuple) or len(result) != len(self.folds):
            return False, None
        if isinstance(fold, Folds):
            parts = [self.part(one, result) for one in fold.folds]
            return (True, tuple(got for _ok, got in parts)) if all(ok for ok, _got in parts) else (False, None)
        for i, one in enumerate(self.folds):
            if one == fold:
                return True, result[i]
        return False, None


def folds_of(fold: SegmentFold | Folds | None) -> tuple[SegmentFold, ...]:
    """The folds a task's ``fold`` stands for (none, one, or a ``Folds``' own)."""
    if fold is None:
        return ()
    return fold.folds if isinstance(fold, Folds) else (fold,)


def joined(*folds: SegmentFold | Folds | None) -> SegmentFold | Folds | None:
    """One task's ``fold`` for all of ``folds`` (None when there is none, the fold itself when
    there is one)."""
    every: list[SegmentFold] = []
    for fold in folds:
        every.extend(f for f in folds_of(fold) if f not in every)
    if not every:
        return None
    return every[0] if len(every) == 1 else Folds(tuple(every))
