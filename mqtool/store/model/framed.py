"""The reading of the length-framed logs (Kafka ``.log``, Jafka and MetaQ segments) in pieces, and
the range reading built on it: the records of one byte range ``[start, stop)`` of a segment file,
judged, as typed events.

Two loops read these files in pieces, each once for every family and every reader:

* ``PieceWalk``, the walk: the records from a position through the family's ``formats`` walker
  over each piece.  The piece size is its parameter (``piece``; default
  ``store.files.piece_size()``); a record a piece's end cuts -- anywhere, in its length field
  too -- is read again from its start with the next piece, so no answer depends on where the
  pieces end.  The Jafka and MetaQ segment walk (``store.legacy.SegmentWalk``, under validate's
  judge, dump, stats, info, diff and recover's plan) and ``read_range`` are this walk.
* ``scan``, the search: the first place in a stretch of the file that a test accepts, read in
  pieces with the bytes a candidate cut by a piece's end needs: resynchronisation after a broken
  record (``find_sync`` here, ``store.legacy.next_message``) and the end of a zero run
  (``zero_run``).

A file bigger than a reader's split size is read as several byte ranges.  A range owns the
records of the file's record chain that start inside it.  It finds its first record with a *sync
point* search (the first position >= ``start`` where a record decodes with a good checksum and
the next record decodes too, or the data ends cleanly there: these formats have no magic code to
search for), walks the chain from there, and stops at the first sync point at or after ``stop``:
exactly where the next range starts.

Around a broken record ``read_range`` applies the family's rules once (``RangeFraming``): a record
whose frame holds around a failed checksum is stated (``RangeProblem(kept=True)``) and yielded all
the same, as every reader lists it (upstream ``FileMessageSet``/``MessageUtils`` readers serve it;
the brokers' recoveries truncate there); any other broken record is stated with the family's code
for what broke (``MqError.kind``), the walk resynchronises at the next sync point and the bytes
in between are an unreadable region; a record cut by the end of the file is a torn write unless
the family's ``torn_check`` says why it cannot be one (Kafka: ``store.kafka.not_a_torn_write``).

``read_range`` yields a ``RangeRecord`` pair ``(position, item)`` for each record, a
``RangeProblem`` for each finding-to-be and one ``DataEnd`` where the data ends (``zeros``, ``partial``, ``eof``, ``unreadable``,
``size``).  The families' framings are the store model's: ``store.model.kafka_reads.KAFKA_RANGE``,
``store.model.legacy.JAFKA_RANGE`` and ``METAQ_RANGE``; the Spark sources (``pipeline.sources``) turn the events into rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats.data_end import DataEnd
from mqtool.store.files import Readable, nonzero_extent, piece_size


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


class PieceWalker(Protocol):
    """A walker over one piece for ``PieceWalk``: tuples whose first two items are a record's
    position in the piece and the record, then ``failed_at`` or ``end``."""

    def __iter__(self) -> Iterator[tuple[Any, ...]]: ...

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


#: A range's events: its records, its findings-to-be, and where its data ends (a ``DataEnd`` at a
#: file position, of kind ``zeros``, ``partial``, ``eof``, ``unreadable`` or ``size``).
RangeEvent = RangeRecord | RangeProblem | DataEnd[str]


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


# --- the one resync scan ------------------------------------------------------------------------------


def scan(
    f: Readable,
    start: int,
    stop: int,
    candidates: Callable[[bytes, int], Iterator[int]],
    accept: Callable[[int, bytes, int], bool],
    *,
    overlap: int = 0,
    piece: int | None = None,
) -> int | None:
    """The first position in ``[start, stop)`` of ``f`` that ``accept`` takes, None when there
    is none: the one search of a length-framed log for a place (resynchronisation after a broken
    record, the end of a zero run).  It reads ``[start, stop)`` in pieces of ``piece`` bytes
    (``store.files.piece_size()``) plus ``overlap`` bytes of the next one, so that a candidate a
    piece's end cuts has the bytes its test needs in hand; ``candidates(chunk, span)`` gives the
    indices ``< span`` of ``chunk`` where one may be, in order, and ``accept(position, chunk, i)``
    judges the candidate at file ``position`` (``chunk[i]``).  A candidate is tested once, in the
    piece it starts in, whatever the piece size."""
    step = piece or piece_size()
    stop = min(stop, f.size)
    pos = start
    while pos < stop:
        chunk = f.pread(pos, min(step, stop - pos) + overlap)
        if not chunk:
            break
        span = min(len(chunk), stop - pos, step)
        for i in candidates(chunk, span):
            if accept(pos + i, chunk, i):
                return pos + i
        pos += span
    return None


def first_nonzero(chunk: bytes, span: int) -> Iterator[int]:
    """``scan``'s candidates for the end of a zero run: the first non-zero byte of ``chunk[:span]``."""
    i = len(chunk) - len(chunk.lstrip(b"\x00"))
    if i < span:
        yield i


def _accept_any(_position: int, _chunk: bytes, _i: int) -> bool:
    return True


def zero_run(f: Readable, start: int, *, piece: int | None = None) -> int:
    """How many zero bytes follow ``start`` in ``f`` (up to its end)."""
    found = scan(f, start, f.size, first_nonzero, _accept_any, piece=piece)
    return (f.size if found is None else found) - start


def find_sync(framing: RangeFraming, f: Readable, start: int, *, piece: int | None = None) -> int | None:
    """The first sync point (``is_sync``) at or after ``start``, None when there is none."""

    def candidates(chunk: bytes, span: int) -> Iterator[int]:
        for i in framing.candidates(chunk):
            if i >= span:
                return
            yield i

    return scan(f, start, f.size, candidates, lambda position, _chunk, _i: is_sync(framing, f, position), overlap=64, piece=piece)


# --- the one piece loop ---------------------------------------------------------------------------------


class PieceWalk:
    """The one loop that reads a length-framed log (Kafka ``.log``, Jafka and MetaQ segments) in
    pieces: ``(position, item)`` for each record from ``start``, through the format's walker over
    each piece.

    The piece size is its parameter (``piece``; default ``store.files.piece_size()``); the first
    piece is ``first`` bytes (default: ``piece``) and each next one twice the last, up to
    ``piece``, so a reader that stops after a few records reads little more than they hold.  A
    record that a piece's end cuts -- anywhere, in its length field too -- is read again from its
    start with the next piece (a record longer than the piece with a piece its size, up to
    ``max_record``), and so is a stop fewer than ``judged`` bytes before the end of a piece that
    is not the end of the file: no answer depends on the piece size.

    ``walker(data, start)`` walks the records of ``data`` from ``start`` (``PieceWalker``: tuples
    whose first two items are a record's position in ``data`` and the item, then ``failed_at`` and
    ``end`` like the ``formats`` walkers).  After iteration either ``end`` is set (a ``DataEnd``
    in file positions: ``zeros``, ``partial`` or ``eof``; ``length`` as the format walker reports
    it, a partial record's full size) or ``error`` is the located ``MqError`` of the first broken
    record, at ``failed_at``; ``oversize`` is set when that error is a length field larger than
    ``max_record`` (never an allocation).  With ``keep(data, position, exc)`` a record whose frame
    holds around a failed check is yielded too (``keep`` returns it and its size), the walk going
    on after it: ``damaged`` maps its position to the located error, ``kept_at`` is the position of
    the last one.  Errors of the reader itself (I/O, a damaged zip) propagate.
    """

    def __init__(
        self,
        f: Readable,
        walker: Callable[[bytes, int], PieceWalker],
        start: int = 0,
        *,
        judged: int,
        max_record: int,
        piece: int | None = None,
        first: int | None = None,
        keep: Callable[[bytes, int, MqError], tuple[object, int] | None] | None = None,
        resumes: bool = True,
        length_field: str = "length",
        overhead: int = 0,
    ) -> None:
        self.f = f
        self.walker = walker
        self.start = start
        self.judged = judged
        self.max_record = max_record
        self.piece = piece or piece_size()
        self.first = min(first or self.piece, self.piece)
        self.keep = keep
        #: whether ``walker(data, start)`` takes a ``start`` inside ``data``: else the walk goes on
        #: after a kept record with a new piece there
        self.resumes = resumes
        self.length_field = length_field
        self.overhead = overhead
        self.end: DataEnd[str] | None = None
        self.error: MqError | None = None
        self.failed_at: int | None = None
        self.oversize: int | None = None
        #: ``keep``: file position -> located error of each frame-intact record yielded despite it
        self.damaged: dict[int, MqError] = {}
        self.kept_at = -1
        self.count = 0
        self.bytes_read = 0
        #: the piece the walk stopped in and its file position (the bytes around ``end``)
        self.data = b""
        self.base = start

    @property
    def valid_end(self) -> int:
        if self.end is not None:
            return self.end.position
        return self.failed_at if self.failed_at is not None else self.start

    def __iter__(self) -> Iterator[tuple[int, object]]:
        f = self.f
        walker_of = self.walker
        keep = self.keep
        judged = self.judged
        base = self.start
        grow = want = self.first
        while True:
            if base >= f.size:
                self.end = DataEnd("eof", base)
                return
            data = f.pread(base, want)
            self.data, self.base = data, base
            self.bytes_read += len(data)
            grow = min(self.piece, grow * 2)
            want = grow
            resume = 0
            while True:  # once, and again after each damaged record kept (in the same piece)
                walker = walker_of(data, resume)
                try:
                    for t in walker:
                        self.count += 1
                        yield base + t[0], t[1]
                except MqError as exc:
                    rel = walker.failed_at or 0
                    kept = keep(data, rel, exc) if keep is not None else None
                    if kept is not None:  # the frame holds: listed, and the walk reads on after it
                        item, size = kept
                        self.damaged[base + rel] = exc.at(f.path, base)
                        self.kept_at = base + rel
                        self.count += 1
                        yield base + rel, item
                        resume = rel + size
                        if self.resumes:
                            continue
                        base += resume
                        break
                    self.failed_at = base + rel
                    self.error = exc.at(f.path, base)
                    return
                break
            if resume and not self.resumes:
                want = self.piece
                continue
            end = walker.end
            assert end is not None
            if base + len(data) < f.size and (end.kind in ("partial", "eof") or len(data) - end.position < judged):
                if end.position == 0:
                    if end.kind == "partial" and end.length > len(data):
                        if end.length > self.max_record:
                            self.failed_at = base
                            self.oversize = end.length
                            self.error = CorruptDataError(
                                kind="size",
                                path=f.path,
                                position=base,
                                expected=f"{self.length_field} at most {self.max_record}",
                                found=str(end.length - self.overhead),
                            )
                            return
                        want = max(end.length, grow)
                    elif len(data) >= want:
                        want = len(data) + judged
                base += end.position
                continue
            self.end = DataEnd(end.kind, base + end.position, end.length)
            return


def read_range(framing: RangeFraming, f: Readable, start: int, stop: int, *, piece: int | None = None) -> Iterator[RangeEvent]:
    """The events of the records of ``f`` owned by the range ``[start, stop)`` (module docstring),
    read in pieces of ``piece`` bytes (``store.files.piece_size()``): the answer is the same
    whatever the piece size."""
    if start:
        first = find_sync(framing, f, start, piece=piece)
        if first is None:
            return
        pos = first
    else:
        pos = 0
    last_item: object = None
    walker = framing.walker

    def walk_from(data: bytes, _start: int) -> FramedWalker:
        return walker(data)

    while True:
        walk = PieceWalk(f, walk_from, pos, judged=framing.judged, max_record=framing.max_record, piece=piece, keep=framing.framed, resumes=False)
        for at, item in walk:
            if at >= stop and is_sync(framing, f, at):
                return
            if at == walk.kept_at:
                # the frame holds (a checksum mismatch): stated as validate states it and yielded
                # too, as every reader lists it; the walk reads on where the frame says
                located = walk.damaged[at]
                yield RangeProblem(at, framing.classify(located), located.position, located.reason, kept=True)
            last_item = item
            yield at, item
        if walk.error is not None:
            bad = walk.failed_at
            assert bad is not None
            if walk.oversize is not None:
                too_big = f"a record of {walk.oversize} bytes: more than mqtool reads ({framing.max_record})"
                yield RangeProblem(bad, framing.classify(CorruptDataError(kind="size")), bad, too_big)
                yield DataEnd("size", bad)
                return
            located = walk.error
            resume = find_sync(framing, f, bad + 1, piece=piece)
            yield RangeProblem(bad, framing.classify(located), located.position, located.reason)
            if resume is None:
                extent = nonzero_extent(f, bad)
                data_end = extent[1] if extent else bad
                yield RangeProblem(bad, framing.region_code, bad, f"no valid record after the broken one: {data_end - bad} bytes cannot be read", data_end - bad)
                yield DataEnd("unreadable", bad)
                return
            if resume > bad:
                yield RangeProblem(
                    bad, framing.region_code, bad, f"{resume - bad} bytes between the broken record and the next valid one at {resume} were skipped", resume - bad
                )
            pos = resume
            continue
        end = walk.end
        assert end is not None
        at = end.position
        if end.kind == "partial" and end.length > framing.max_record and framing.torn_check is None:
            # a length no record has, cut by the end of the file: stated as where a piece ends
            # inside it (``PieceWalk.oversize``), whatever the piece size
            too_big = f"a record of {end.length} bytes: more than mqtool reads ({framing.max_record})"
            yield RangeProblem(at, framing.classify(CorruptDataError(kind="size")), at, too_big)
            yield DataEnd("size", at)
            return
        if end.kind == "partial" and framing.torn_check is not None:
            rel = at - walk.base
            not_torn = framing.torn_check(walk.data[rel : rel + 64], end.length, last_item)
            if not_torn is not None:
                located = not_torn.at(f.path, at)
                yield RangeProblem(at, framing.classify(located), located.position, located.reason)
                yield RangeProblem(at, framing.region_code, at, f"no valid record after the broken one: {f.size - at} bytes cannot be read", f.size - at)
                yield DataEnd("unreadable", at)
                return
        yield DataEnd(end.kind, at)
        return
