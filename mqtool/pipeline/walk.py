"""Byte-range walks of segment files, for the data sources' input partitions.

A file bigger than the split size is read as several byte ranges ``[start, stop)``.  A range
owns the records of the file's record chain that start inside it.  It finds its first record
with a *sync point* search (the first position >= ``start`` where a record decodes with a good
checksum -- for RocketMQ also with a PHYSICALOFFSET equal to its own address -- and, for the
formats without a magic code, where the next record decodes too), walks the chain from there,
and stops at the first sync point at or after ``stop``: exactly where the next range starts.
Records met after ``stop`` that are *not* sync points (a RocketMQ record with a stale
PHYSICALOFFSET) are still this range's, since the next range skips them.

A record whose frame holds but whose body CRC fails (``CommitLogFileWalk.framed_record``) is
yielded as a record after its problem, and the walk goes on where its frame says, as the
store's walk does with ``keep_damaged`` (the broker serves such a record).  After a broken
frame the walk resynchronises like ``validate``: at the end of the broken
record when the data goes on cleanly there, else at the next sync point (the bytes in between
are an unreadable region).  A clean end of data (zeros, a RocketMQ END_OF_FILE record, a
partial last record) ends the walk.

Each walk yields ``("record", position, item)``, ``("problem", position, Problem)`` and one
``("end", position, kind)`` when it reaches the end of the data; the CommitLog walk may also
yield ``("damaged", position, (from, to))``: commitlog offsets a file-level finding covers.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Protocol

from mqtool.errors import CorruptDataError, MqError
from mqtool.findings.code_ids import RMQ_CL_TORN_TAIL, RMQ_CL_UNREADABLE_REGION
from mqtool.pipeline.files import AnyFile
from mqtool.store import rocketmq as rmq
from mqtool.store.files import CHUNK_SIZE, Readable, ReadOnlyFile, nonzero_extent, piece_size
from mqtool.store.model import rocketmq as rmq_model
from mqtool.store.rocketmq import MAX_RECORD_SIZE, find_next_record

#: What a walk yields: ``("record", position, item)``, ``("problem", position, Problem)``,
#: ``("end", position, kind)`` and, for the CommitLog, ``("damaged", position, (from, to))``.
Event = tuple[str, int, object]


@dataclass(frozen=True)
class Problem:
    """A finding-to-be: a validate code, where, what, and the commitlog/offset range it spoils."""

    code: str
    position: int | None
    message: str
    length: int | None = None
    damaged: tuple[int, int] | None = None  # global [from, to) (commitlog offsets for RocketMQ)
    #: the record that fails here is yielded next all the same (its frame holds: only its
    #: checksum failed); its rows carry this problem's code as their ``finding``
    kept: bool = False
    #: the store model's judgement of the bytes at this broken record of the newest CommitLog
    #: file (``store.model.rocketmq.ignored_tail``): None when the broker may lose data there,
    #: else what the finding's message adds when it is a warning (``IGNORED_TAIL``, what the
    #: broker does with the bytes, for the record; "" for the region after it).  It is a warning
    #: when this is the first broken record of its file (validate's rule: where the broker's
    #: recovery stops), which only the whole file's problems tell (``jobs.problem_findings``)
    ignored: str | None = None


# --- RocketMQ CommitLog ------------------------------------------------------------------------
# The store's walk reads the bytes (``mqtool.store.rocketmq.CommitLogFileWalk``); every rule that
# judges them is the store layer's (torn_tail_at, past_the_end_error, classify_broken_record,
# clean_at, find_next_record, nonzero_extent), called in the order validate calls them
# (``ops.validate.rocketmq._walk_commitlog_file``), so that scan reports the same code at the same
# position for the same damage.


def _ignored_tail(f: AnyFile, base: int, bad: int, is_last: bool) -> str | None:
    """``Problem.ignored`` of the broken record at ``bad``: the store model's ``ignored_tail``
    (validate's judgement), for a local file of the newest CommitLog file; None elsewhere (a
    file read through pyarrow has no store around it to tell what points at the bytes)."""
    if is_last and isinstance(f, ReadOnlyFile) and rmq_model.ignored_tail(f, base, bad):
        return rmq_model.IGNORED_TAIL.format(end=bad)
    return None


def _after_broken_record(f: AnyFile, base: int, bad: int, exc: MqError, is_last: bool, file_size: int) -> Generator[Event, None, int | None]:
    """Report the record that fails at ``bad`` (or the torn tail it is) and return where the walk
    goes on (None: it stops) -- validate's ``_after_broken_record``."""
    if is_last:
        torn = rmq.torn_tail_at(f, bad, file_size)
        if torn is not None:
            yield "problem", bad, Problem(RMQ_CL_TORN_TAIL, bad, torn.reason, torn.stop - bad, torn.damaged(base))
            yield "end", bad, "torn"
            return None
    code, located, frames = rmq.classify_broken_record(f, bad, exc)
    ignored = _ignored_tail(f, base, bad, is_last)
    resume = next((bad + n for n in sorted(frames) if rmq.clean_at(f, base, bad + n)), None)
    region = None
    if resume is None:
        # find_next_record reads only ``size`` and ``pread`` (store.files.Readable), which an
        # ArrowFile has; its signature names ReadOnlyFile alone
        resume = find_next_record(f, base, bad + 1)  # type: ignore[arg-type]
        if resume is None:
            extent = nonzero_extent(f, bad)
            end = extent[1] if extent else bad
            region = Problem(
                RMQ_CL_UNREADABLE_REGION,
                bad,
                f"no valid record after the broken one: {end - bad} bytes up to position {end} cannot be read",
                end - bad,
                (base + bad, base + max(end, bad + 1)),
                ignored=None if ignored is None else "",
            )
        else:
            region = Problem(
                RMQ_CL_UNREADABLE_REGION,
                bad,
                f"{resume - bad} bytes between the broken record and the next valid record at {resume} were skipped",
                resume - bad,
                (base + bad, base + resume),
                ignored=None if ignored is None else "",
            )
    damaged: tuple[int, int] | None
    if resume is not None:
        damaged = (base + bad, base + resume)
    else:
        assert region is not None  # no record after the broken one: the unreadable region is stated
        damaged = region.damaged
    yield "problem", bad, Problem(code, located.position, located.reason, None, damaged, ignored=ignored)
    if region is not None:
        yield "problem", bad, region
    if resume is None:
        yield "end", bad, "unreadable"
    return resume


def walk_commitlog(f: AnyFile, base: int, start: int, stop: int, is_last: bool, file_size: int | None = None) -> Iterator[Event]:
    """The records of ``f`` (a CommitLog file named ``base``) owned by the range ``[start, stop)``.

    ``is_last``: the last file holding data (a record cut by a crash there is a torn tail);
    ``file_size``: the store's CommitLog file size (``mappedFileSizeCommitLog``; default: this
    file's size).  Besides records and problems, a file before the last that is shorter than
    ``file_size`` yields ``("damaged", position, (from, to))``: the commitlog offsets it lacks,
    which RMQ-FILE-SIZE reports (validate's rule), so nothing pointing there is reported again.

    The bytes are read by the store's walk (``store.rocketmq.CommitLogFileWalk``, which serves a
    record whose frame holds around a failed body CRC and ends the newest file at a torn tail);
    this walk only states what it met and resynchronises after a broken record.
    """
    file_size = file_size or f.size
    if start:
        first = find_next_record(f, base, start)  # type: ignore[arg-type]  # reads size and pread only, as above
        if first is None:
            return
        pos = first
    else:
        pos = 0
    cut_short = f.size < file_size and not is_last  # its end is RMQ-FILE-SIZE's
    while True:
        # CommitLogFileWalk reads only ``size``, ``path`` and ``pread`` (an ArrowFile has them)
        walk = rmq.CommitLogFileWalk(f, pos, last=is_last, file_size=file_size, keep_damaged=True)  # type: ignore[arg-type]
        for at, rec in walk:
            if at >= stop and rec.physical_offset == base + at:
                return
            damage = walk.damaged.get(at)
            if damage is not None:
                # the frame holds (a body CRC mismatch): the record is stated as validate states
                # it and exported too, as the broker serves it
                code, located, _frames = rmq.classify_broken_record(f, at, damage)
                yield "problem", at, Problem(code, located.position, located.reason, None, (base + at, base + at + rec.total_size), kept=True)
            yield "record", at, rec
        end = walk.end
        if walk.error is not None and walk.failed_at is not None:
            bad, error = walk.failed_at, walk.error
        elif end is not None and end.kind == "torn":
            assert walk.torn is not None
            torn = walk.torn
            yield "problem", end.position, Problem(RMQ_CL_TORN_TAIL, end.position, torn.reason, torn.stop - end.position, torn.damaged(base))
            yield "end", end.position, "torn"
            return
        elif end is not None and end.kind == "partial" and not cut_short:
            # a record reaching past the end of the file: a torn write in the last file, else a
            # broken TOTALSIZE
            bad, error = end.position, rmq.past_the_end_error(f, end.position, end.length)
        else:
            break
        resume = yield from _after_broken_record(f, base, bad, error, is_last, file_size)
        if resume is None:
            return
        pos = resume
    assert end is not None
    if cut_short and end.kind in ("partial", "eof"):
        yield "damaged", end.position, (base + end.position, base + file_size)
    yield "end", end.position, end.kind


# --- formats without a magic code: Kafka, Jafka, MetaQ ------------------------------------------


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


@dataclass(frozen=True)
class Framing:
    """How to walk one family: a walker over a buffer, and the checks a sync point needs.

    ``walker(data)`` iterates ``(position, item, size)`` and has ``failed_at`` and ``end``
    (``kind``, ``position``, ``length``) like the ``formats`` walkers; ``decodes(f, pos)`` returns
    the size of a valid non-empty record at ``pos`` (None otherwise); ``classify(exc)`` gives
    the validate code of a broken record; ``region_code`` the code of skipped bytes.
    """

    walker: Callable[[bytes], FramedWalker]
    decodes: Callable[[Readable, int], int | None]
    candidates: Callable[[bytes], Iterator[int]]
    classify: Callable[[MqError], str]
    region_code: str
    max_record: int = MAX_RECORD_SIZE
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


def is_sync(framing: Framing, f: Readable, pos: int) -> bool:
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


def find_sync(framing: Framing, f: Readable, start: int) -> int | None:
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


def walk_framed(framing: Framing, f: Readable, start: int, stop: int) -> Iterator[Event]:
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
                yield "record", at, item
        except MqError as exc:
            bad = pos + (walker.failed_at or 0)
            located = exc.at(f.path, pos)
            kept = framing.framed(data, walker.failed_at or 0, exc) if framing.framed is not None else None
            if kept is not None:
                # the frame holds (a checksum mismatch): stated as validate states it and exported
                # too, as every reader lists it; the walk reads on where the frame says
                item, size = kept
                yield "problem", bad, Problem(framing.classify(exc), located.position, located.reason, kept=True)
                last_item = item
                yield "record", bad, item
                pos = bad + size
                continue
            resume = find_sync(framing, f, bad + 1)
            yield "problem", bad, Problem(framing.classify(exc), located.position, located.reason)
            if resume is None:
                extent = nonzero_extent(f, bad)
                data_end = extent[1] if extent else bad
                yield "problem", bad, Problem(framing.region_code, bad, f"no valid record after the broken one: {data_end - bad} bytes cannot be read", data_end - bad)
                yield "end", bad, "unreadable"
                return
            if resume > bad:
                yield (
                    "problem",
                    bad,
                    Problem(framing.region_code, bad, f"{resume - bad} bytes between the broken record and the next valid one at {resume} were skipped", resume - bad),
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
                    yield "problem", pos, Problem(framing.classify(CorruptDataError(kind="size")), pos, too_big)
                    yield "end", pos, "size"
                    return
                want = max(end.length, piece)
            pos += end.position
            continue
        at = pos + end.position
        if end.kind == "partial" and framing.torn_check is not None:
            not_torn = framing.torn_check(data[end.position : end.position + 64], end.length, last_item)
            if not_torn is not None:
                located = not_torn.at(f.path, at)
                yield "problem", at, Problem(framing.classify(located), located.position, located.reason)
                yield "problem", at, Problem(framing.region_code, at, f"no valid record after the broken one: {f.size - at} bytes cannot be read", f.size - at)
                yield "end", at, "unreadable"
                return
        yield "end", at, end.kind
        return
