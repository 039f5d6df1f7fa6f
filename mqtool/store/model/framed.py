"""The range reading of the length-framed logs (Kafka ``.log``, Jafka and MetaQ segments): the
records of one byte range ``[start, stop)`` of a segment file, judged, as typed events.

A file bigger than a reader's split size is read as several byte ranges.  A range owns the
records of the file's record chain that start inside it.  It finds its first record with a *sync
point* search (the first position >= ``start`` where a record decodes with a good checksum and
the next record decodes too, or the data ends cleanly there: these formats have no magic code to
search for), walks the chain from there, and stops at the first sync point at or after ``stop``:
exactly where the next range starts.

The reading owns the pieces: it reads the range in pieces of ``store.files.piece_size()`` bytes
and carries a record that crosses a piece's end into the next piece (a stop fewer than
``RangeFraming.judged`` bytes before a piece's end is the piece's, not the data's).  Around a
broken record it applies the family's rules once (``RangeFraming``): a record whose frame holds
around a failed checksum is stated (``RangeProblem(kept=True)``) and yielded all the same, as
every reader lists it (upstream ``FileMessageSet``/``MessageUtils`` readers serve it; the
brokers' recoveries truncate there); any other broken record is stated with the family's code
for what broke (``MqError.kind``), the walk resynchronises at the next sync point and the bytes
in between are an unreadable region; a record cut by the end of the file is a torn write unless
the family's ``torn_check`` says why it cannot be one (Kafka: ``store.kafka.not_a_torn_write``).

``read_range`` yields a ``RangeRecord`` pair ``(position, item)`` for each record, a
``RangeProblem`` for each finding-to-be and one ``RangeEnd`` where the data ends (``zeros``, ``partial``, ``eof``, ``unreadable``,
``size``).  The families' framings are the store model's: ``store.model.kafka_reads.KAFKA_RANGE``,
``store.model.legacy.JAFKA_RANGE`` and ``METAQ_RANGE``; the Spark sources (``pipeline.sources``) turn the events into rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from mqtool.errors import CorruptDataError, MqError
from mqtool.store.files import CHUNK_SIZE, Readable, nonzero_extent, piece_size


class DataEndLike(Protocol):
    """Where a walker's valid records stop (the ``DataEnd`` of each ``formats`` walker)."""

    @property
    def kind(self) -> str: ...

    @property
    def position(self) -> int: ...

    @property
    def length(self) -> int: ...


class FramedWalker(Protocol):
    """A walker over one buffer: ``(position, item, size)`` per record, then ``failed_at`` (where
    a broken record stopped it) or ``end`` (where the data stopped)."""

    def __iter__(self) -> Iterator[tuple[int, object, int]]: ...

    @property
    def failed_at(self) -> int | None: ...

    @property
    def end(self) -> DataEndLike | None: ...


class FormatsWalker(Protocol):
    """A ``formats`` walker over one buffer: its items, then ``failed_at`` or ``end``."""

    def __iter__(self) -> Iterator[Any]: ...

    @property
    def failed_at(self) -> int | None: ...

    @property
    def end(self) -> DataEndLike | None: ...


class Adapt:
    """A formats walker whose items become ``(position, item, size)`` (``FramedWalker``)."""

    def __init__(self, walker: FormatsWalker, unpack: Callable[[object], tuple[int, object, int]]) -> None:
        self.walker = walker
        self.unpack = unpack

    def __iter__(self) -> Iterator[tuple[int, object, int]]:
        for item in self.walker:
            yield self.unpack(item)

    @property
    def failed_at(self) -> int | None:
        return self.walker.failed_at

    @property
    def end(self) -> DataEndLike | None:
        return self.walker.end


@dataclass(frozen=True)
class RangeFraming:
    """How to read one family's ranges: a walker over a buffer, and the checks a sync point needs.

    ``walker(data)`` iterates ``(position, item, size)`` and has ``failed_at`` and ``end``
    (``kind``, ``position``, ``length``) like the ``formats`` walkers; ``decodes(f, pos)`` returns
    the size of a valid non-empty record at ``pos`` (None otherwise); ``candidates(chunk)`` the
    positions in a chunk where a record may start; ``classify(exc)`` gives the validate code of
    a broken record; ``region_code`` the code of skipped bytes.
    """

    walker: Callable[[bytes], FramedWalker]
    decodes: Callable[[Readable, int], int | None]
    candidates: Callable[[bytes], Iterator[int]]
    classify: Callable[[MqError], str]
    region_code: str
    #: the largest record the family reads (a longer length field is damage, never an allocation)
    max_record: int
    #: ``torn_check(head, length, last_item)``: why a record cut by the end of the file cannot be a
    #: torn write (an ``MqError`` positioned in the record), or None; None: every cut record is one
    torn_check: Callable[[bytes, int, object], MqError | None] | None = None
    #: Bytes of a record the walker needs in hand to judge a stop (its header up to the magic):
    #: a stop fewer bytes than that before a piece's end is the piece's, not the data's.
    judged: int = 8
    #: ``framed(data, position, exc)``: the record at ``data[position:]`` that ``exc`` rejected
    #: and its size, when its frame holds and only its checksum failed (the store's rule:
    #: ``store.kafka.framed_entry``, ``store.legacy.framed_message``); None otherwise
    framed: Callable[[bytes, int, MqError], tuple[object, int] | None] | None = None


#: A record of the range: ``(position, item)``, its file position and the family's decoded item
#: (a plain pair: the reading yields one per record, and a pair costs a tenth of an object)
RangeRecord = tuple[int, object]


@dataclass(frozen=True, slots=True)
class RangeProblem:
    """A finding-to-be met where the walk stood at ``at``: validate's ``code``, the finding's
    ``position`` and ``message``, the ``length`` of the bytes it covers.  ``kept``: the record
    that fails here is yielded next all the same (its frame holds: only its checksum failed)."""

    at: int
    code: str
    position: int | None
    message: str
    length: int | None = None
    kept: bool = False


@dataclass(frozen=True, slots=True)
class RangeEnd:
    """Where the range's data ends, at file ``position``, and what follows (``kind``)."""

    position: int
    kind: str


RangeEvent = RangeRecord | RangeProblem | RangeEnd


def is_sync(framing: RangeFraming, f: Readable, pos: int) -> bool:
    """A valid record at ``pos`` followed by a valid record or a clean end (zeros, end of file)."""
    size = framing.decodes(f, pos)
    if size is None:
        return False
    nxt = pos + size
    if nxt >= f.size:
        return True
    if framing.decodes(f, nxt) is not None:
        return True
    return not f.pread(nxt, 64).strip(b"\x00")


def find_sync(framing: RangeFraming, f: Readable, start: int) -> int | None:
    """The first sync point (``is_sync``) at or after ``start``, None when there is none."""
    pos = start
    overlap = 64
    while pos < f.size:
        chunk = f.pread(pos, CHUNK_SIZE + overlap)
        for i in framing.candidates(chunk):
            if i >= len(chunk) - overlap and pos + len(chunk) < f.size:
                break
            if is_sync(framing, f, pos + i):
                return pos + i
        if len(chunk) <= overlap:
            break
        pos += len(chunk) - overlap
    return None


def read_range(framing: RangeFraming, f: Readable, start: int, stop: int) -> Iterator[RangeEvent]:
    """The events of the records of ``f`` owned by the range ``[start, stop)`` (module docstring)."""
    if start:
        first = find_sync(framing, f, start)
        if first is None:
            return
        pos = first
    else:
        pos = 0
    piece = want = piece_size()
    last_item: object = None
    while True:
        data = f.pread(pos, want)
        want = piece
        walker = framing.walker(data)
        try:
            for p, item, _size in walker:
                at = pos + p
                if at >= stop and is_sync(framing, f, at):
                    return
                last_item = item
                yield at, item
        except MqError as exc:
            bad = pos + (walker.failed_at or 0)
            located = exc.at(f.path, pos)
            kept = framing.framed(data, walker.failed_at or 0, exc) if framing.framed is not None else None
            if kept is not None:
                # the frame holds (a checksum mismatch): stated as validate states it and yielded
                # too, as every reader lists it; the walk reads on where the frame says
                item, size = kept
                yield RangeProblem(bad, framing.classify(exc), located.position, located.reason, kept=True)
                last_item = item
                yield bad, item
                pos = bad + size
                continue
            resume = find_sync(framing, f, bad + 1)
            yield RangeProblem(bad, framing.classify(exc), located.position, located.reason)
            if resume is None:
                extent = nonzero_extent(f, bad)
                data_end = extent[1] if extent else bad
                yield RangeProblem(bad, framing.region_code, bad, f"no valid record after the broken one: {data_end - bad} bytes cannot be read", data_end - bad)
                yield RangeEnd(bad, "unreadable")
                return
            if resume > bad:
                yield RangeProblem(
                    bad, framing.region_code, bad, f"{resume - bad} bytes between the broken record and the next valid one at {resume} were skipped", resume - bad
                )
            pos = resume
            continue
        end = walker.end
        assert end is not None
        more = pos + len(data) < f.size
        if more and (end.kind in ("partial", "eof") or len(data) - end.position < framing.judged):
            if end.kind == "partial" and end.position == 0:
                if end.length > framing.max_record:
                    too_big = f"a record of {end.length} bytes: more than mqtool reads ({framing.max_record})"
                    yield RangeProblem(pos, framing.classify(CorruptDataError(kind="size")), pos, too_big)
                    yield RangeEnd(pos, "size")
                    return
                want = max(end.length, piece)
            pos += end.position
            continue
        at = pos + end.position
        if end.kind == "partial" and framing.torn_check is not None:
            not_torn = framing.torn_check(data[end.position : end.position + 64], end.length, last_item)
            if not_torn is not None:
                located = not_torn.at(f.path, at)
                yield RangeProblem(at, framing.classify(located), located.position, located.reason)
                yield RangeProblem(at, framing.region_code, at, f"no valid record after the broken one: {f.size - at} bytes cannot be read", f.size - at)
                yield RangeEnd(at, "unreadable")
                return
        yield RangeEnd(at, end.kind)
        return
