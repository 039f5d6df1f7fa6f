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

The reading of a range is the store model's one CommitLog walk
(``store.model.commitlog_walk.read_events`` with ``CommitLogTask.start``/``stop``): healthy
stretches framed into numpy columns (``formats.rocketmq.columns.walk_columns``) and the precise
decoder (upstream ``CommitLog.checkMessageAndReturnSize``) around each record the columns
decline, the pieces, a record that crosses a piece's end, the torn tail of the newest file
(where upstream ``CommitLog.recoverAbnormally`` stops and truncates) and the resynchronisation
after a broken record (at the end of the broken record when the data goes on cleanly there, else
at the next sync point, the bytes in between an unreadable region) are that walk's, validate's.
A record whose frame holds but whose body CRC fails is yielded as a record after its problem
(``Problem(kept=True)``), as the broker serves it (``keep_damaged``).  This module only names
what the walk met in the terms of a range:

* :func:`read_range`, the one stream the Spark source reads: :class:`ColumnPiece` for each
  healthy stretch (the piece's bytes, its column walk, how many of its records are the range's)
  and, in file order between them, ``("record", position, MessageRecord)`` for each record the
  precise decoder read, ``("problem", position, Problem)``, ``("damaged", position, (from,
  to))`` (the commitlog offsets a file before the last that is shorter than the store's file
  size lacks, which RMQ-FILE-SIZE reports -- validate's rule -- so nothing pointing there is
  reported again) and one ``("end", position, kind)`` when it reaches the end of the data
  (``unreadable``: a broken record with no valid record after it).
* :func:`read_commitlog_range`, the same range record by record (the walk without its columns):
  only the tuples.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from mqtool.findings import Finding
from mqtool.formats.rocketmq import columns as rcols
from mqtool.formats.rocketmq.commitlog import MessageRecord, decode_message
from mqtool.store.files import Readable
from mqtool.store.model import commitlog_walk as cl_walk
from mqtool.store.model import rocketmq as rmq_model
from mqtool.store.rocketmq import find_next_record

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


def range_start(f: Readable, base: int, start: int) -> int | None:
    """Where the range starting at ``start`` of ``f`` (a CommitLog file named ``base``) reads its
    first record: 0 for the file's first range, else the first sync point at or after ``start``
    (None: no record starts in or after the range)."""
    # find_next_record reads only ``size`` and ``pread`` (a Readable); its signature names ReadOnlyFile
    return find_next_record(f, base, start) if start else 0  # type: ignore[arg-type]


@dataclass(frozen=True)
class ColumnPiece:
    """One healthy stretch of a range: the bytes read at ``position``, their column walk (its
    records from ``start`` in ``data`` on), and how many of its records are the range's
    (``count``; ``done``: a record at the range's stop follows them, the range is read)."""

    position: int
    data: bytes
    walk: rcols.ColumnWalk
    count: int
    start: int = 0

    @property
    def done(self) -> bool:
        return self.count < len(self.walk.columns)

    def record(self, i: int) -> MessageRecord:
        """Record ``i`` of the stretch, decoded (for a reader that builds its row on its own: a
        properties map that is not its list of pairs); the column walk judged it healthy."""
        return decode_message(self.data, int(self.walk.columns.position[i]))


def read_range(
    f: Readable, base: int, start: int, stop: int, is_last: bool, file_size: int | None = None, *, fast: bool = True, key_hashes: bool = False
) -> Iterator[ColumnPiece | Event]:
    """The records of ``f`` (a CommitLog file named ``base``) owned by the range ``[start, stop)``,
    as the walk reads them (see the module docstring): :class:`ColumnPiece` for each healthy
    stretch (with ``fast``; ``key_hashes``: the IndexFile hashes of their keys too), the
    ``record``, ``problem``, ``damaged`` and ``end`` tuples for the rest.

    ``is_last``: the last file holding data (a record cut by a crash there is a torn tail);
    ``file_size``: the store's CommitLog file size (``mappedFileSizeCommitLog``; default: this
    file's size)."""
    first = range_start(f, base, start)
    if first is None:
        return
    task = cl_walk.CommitLogTask(
        str(f.path),
        base,
        file_size or f.size,
        is_last,
        check_properties=False,
        fast=fast,
        key_hashes=key_hashes,
        tags_codes=True,
        start=first,
        stop=stop,
        keep_damaged=True,
    )
    broken: cl_walk.Damage | None = None  # a broken record's finding, until the walk says where it resumes
    for ev in cl_walk.read_events(f, task):
        if isinstance(ev, cl_walk.Stretch):
            yield ColumnPiece(ev.position, ev.data, ev.walk, ev.records, ev.start)
        elif isinstance(ev, cl_walk.Record):
            yield "record", ev.position, ev.record
        elif isinstance(ev, cl_walk.Damage):
            if ev.cause == "broken":
                broken = ev
            elif ev.cause == "region":
                assert broken is not None and broken.finding is not None and ev.at is not None
                yield from _broken_problems(broken, ev)
                broken = None
            elif ev.cause in ("kept", "torn"):
                assert ev.finding is not None and ev.at is not None
                yield "problem", ev.at, _problem(ev.finding, ev.covers, kept=ev.cause == "kept")
            elif ev.cause == "missing":
                assert ev.at is not None and ev.covers is not None
                yield "damaged", ev.at, ev.covers
        elif isinstance(ev, cl_walk.FileWalked) and ev.kind != "stop":
            yield "end", ev.valid_end, "unreadable" if ev.kind == "broken" else ev.kind


def _problem(finding: Finding, damaged: tuple[int, int] | None, *, kept: bool = False, ignored: str | None = None) -> Problem:
    return Problem(finding.code, finding.position, finding.message, finding.length, damaged, kept=kept, ignored=ignored)


def _broken_problems(broken: cl_walk.Damage, region: cl_walk.Damage) -> Iterator[Event]:
    """The problems of a broken record (``broken``) and of where the walk resynchronised after it
    (``region``: the commitlog range it spoils, the unreadable region between when there is one).
    ``Problem.ignored``: the store model's judgement of the bytes at the broken record
    (``ignored_tail``, what the finding adds when it is a warning; "" for its region)."""
    assert broken.finding is not None and broken.at is not None
    bad = broken.at
    ignored = rmq_model.IGNORED_TAIL.format(end=bad) if broken.tail else None
    yield "problem", bad, Problem(broken.finding.code, broken.finding.position, broken.finding.message, None, region.covers, ignored=ignored)
    if region.finding is not None:
        yield "problem", bad, _problem(region.finding, region.covers, ignored=None if ignored is None else "")


def read_commitlog_range(f: Readable, base: int, start: int, stop: int, is_last: bool, file_size: int | None = None) -> Iterator[Event]:
    """The records of ``f`` (a CommitLog file named ``base``) owned by the range ``[start, stop)``,
    record by record: :func:`read_range` without its columns (every record by the precise
    decoder), its ``record``, ``problem``, ``damaged`` and ``end`` tuples."""
    for item in read_range(f, base, start, stop, is_last, file_size, fast=False):
        assert not isinstance(item, ColumnPiece)
        yield item
