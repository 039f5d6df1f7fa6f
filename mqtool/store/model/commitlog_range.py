"""The range reading of CommitLog files: the records of one byte range ``[start, stop)`` of a
CommitLog file, judged, as events -- what the Spark ``rocketmq_commitlog`` source turns into rows.

A file bigger than a reader's split size is read as several byte ranges ``[start, stop)``.  A
range owns the records of the file's record chain that start inside it.  It finds its first
record with a *sync point* search (:func:`range_start`: the first position >= ``start`` where a
record decodes with a good checksum and a PHYSICALOFFSET equal to its own address), walks the
chain from there, and stops at the first sync point at or after ``stop``: exactly where the next
range starts.  Records met after ``stop`` that are *not* sync points (a record with a stale
PHYSICALOFFSET) are still this range's, since the next range skips them.  (The formats without
a magic code -- Kafka, Jafka, MetaQ -- are read in ranges by ``store.model.framed.read_range``.)

Two readings of a range, which give the same records:

* :func:`read_commitlog_range`, record by record.  The bytes are read by the store's walk
  (``store.rocketmq.CommitLogFileWalk``, upstream ``CommitLog.checkMessageAndReturnSize`` per
  record).  A record whose frame holds but whose body CRC fails is yielded as a record after its
  problem (``Problem(kept=True)``), and the walk goes on where its frame says, as the store's walk
  does with ``keep_damaged`` (the broker serves such a record).  After a broken frame the walk
  resynchronises like ``validate``: at the end of the broken record when the data goes on cleanly
  there, else at the next sync point (the bytes in between are an unreadable region).  A clean
  end of data (zeros, a RocketMQ END_OF_FILE record, a partial last record) ends the walk; in the
  newest file a record cut by a crash is a torn tail (where upstream
  ``CommitLog.recoverAbnormally`` stops and truncates).
* :func:`column_pieces`, the fast reading of a healthy stretch: from a record on, piece by piece
  (``store.files.piece_size()``), each piece framed into numpy columns by
  ``formats.rocketmq.columns.walk_columns``; a record cut by a piece's end is read whole with the
  next piece (``store.rocketmq.piece_goes_on``).  It stops where the column walk declines a
  record or the data ends; the per-record reading goes on from there.

The rules that judge the bytes are the store layer's (``torn_tail_at``, ``past_the_end_error``,
``classify_broken_record``, ``clean_at``, ``find_next_record``, ``nonzero_extent``,
``store.model.rocketmq.ignored_tail``), called in the order validate's judge calls them
(``store.model.commitlog_check.read_events``), so that a scan reports the same code at the same
position for the same damage.  The resynchronisation after a broken record
(``_after_broken_record``) is a copy of the order of calls of ``commitlog_check``'s, kept here as
it was moved from the pipeline: validate's yields its ``Damage`` values (findings with severities,
what they cover) into the state of a whole-file check (``CommitLogTask``), while this one yields
``Problem`` values for one range, so calling it is not a straight substitution.

:func:`read_commitlog_range` yields ``("record", position, MessageRecord)``, ``("problem",
position, Problem)``, ``("damaged", position, (from, to))`` (commitlog offsets a file-level
finding covers) and one ``("end", position, kind)`` when it reaches the end of the data.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass

import numpy as np

from mqtool.errors import MqError
from mqtool.findings.code_ids import RMQ_CL_TORN_TAIL, RMQ_CL_UNREADABLE_REGION
from mqtool.formats.rocketmq import columns as rcols
from mqtool.store import rocketmq as rmq
from mqtool.store.files import Readable, ReadOnlyFile, nonzero_extent, piece_size
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
    #: recovery stops), which only the whole file's problems tell (the Spark job's
    #: ``pipeline.jobs.problem_findings``)
    ignored: str | None = None


def _ignored_tail(f: Readable, base: int, bad: int, is_last: bool) -> str | None:
    """``Problem.ignored`` of the broken record at ``bad``: the store model's ``ignored_tail``
    (validate's judgement), for a local file of the newest CommitLog file; None elsewhere (a
    file read through pyarrow has no store around it to tell what points at the bytes)."""
    if is_last and isinstance(f, ReadOnlyFile) and rmq_model.ignored_tail(f, base, bad):
        return rmq_model.IGNORED_TAIL.format(end=bad)
    return None


def _after_broken_record(f: Readable, base: int, bad: int, exc: MqError, is_last: bool, file_size: int) -> Generator[Event, None, int | None]:
    """Report the record that fails at ``bad`` (or the torn tail it is) and return where the walk
    goes on (None: it stops) -- the calls of ``store.model.commitlog_check._after_broken_record``,
    in its order."""
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
        # find_next_record reads only ``size`` and ``pread`` (store.files.Readable); its
        # signature names ReadOnlyFile alone
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


def read_commitlog_range(f: Readable, base: int, start: int, stop: int, is_last: bool, file_size: int | None = None) -> Iterator[Event]:
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
        # CommitLogFileWalk reads only ``size``, ``path`` and ``pread`` (a Readable has them)
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


def range_start(f: Readable, base: int, start: int) -> int | None:
    """Where the range starting at ``start`` of ``f`` (a CommitLog file named ``base``) reads its
    first record: 0 for the file's first range, else the first sync point at or after ``start``
    (None: no record starts in or after the range)."""
    # find_next_record reads only ``size`` and ``pread`` (a Readable); its signature names ReadOnlyFile
    return find_next_record(f, base, start) if start else 0  # type: ignore[arg-type]


#: Bytes a fast stretch reads past its range's stop (a longer record there is read whole next).
PAST_STOP = 64 << 10


@dataclass(frozen=True)
class ColumnPiece:
    """One piece of a fast stretch: the bytes read at ``position``, their column walk, and how
    many of its records start before the range's stop (``count``; ``done``: a record at or after
    the stop was met, the range is read)."""

    position: int
    data: bytes
    walk: rcols.ColumnWalk
    count: int

    @property
    def done(self) -> bool:
        return self.count < len(self.walk.columns)


def column_pieces(f: Readable, base: int, pos: int, stop: int, *, key_hashes: bool) -> Generator[ColumnPiece, None, int]:
    """The pieces of the healthy stretch of ``f`` (a CommitLog file named ``base``) from the
    record at ``pos`` on, each framed by ``walk_columns``, as long as the column walk frames
    them; the pieces continue exactly as :func:`read_commitlog_range`'s do.  After a piece that is
    ``done`` the consumer stops; otherwise the generator returns where the column walk stopped
    (a record it declines, the end of the data)."""
    want = 0
    piece = piece_size()
    while True:
        # up to a piece, no further past the range's stop than a record needs to be seen whole
        data = f.pread(pos, want or min(piece, max(stop - pos, 0) + PAST_STOP))
        want = 0
        walk = rcols.walk_columns(data, base + pos, key_hashes=key_hashes)
        count = int(np.searchsorted(walk.columns.position, stop - pos))  # the records before the range's stop
        yield ColumnPiece(pos, data, walk, count)
        end = walk.stop
        if rmq.piece_goes_on(end.kind, end.position, len(data), pos + len(data) < f.size) and not (end.kind == "partial" and end.length > MAX_RECORD_SIZE):
            if end.kind == "partial" and end.position == 0:
                want = max(end.length, piece)
            pos += end.position
            continue
        return pos + end.position
