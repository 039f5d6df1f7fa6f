"""Byte-range walks of segment files, for the data sources' input partitions.

A file bigger than the split size is read as several byte ranges ``[start, stop)``.  A range
owns the records of the file's record chain that start inside it.  It finds its first record
with a *sync point* search (the first position >= ``start`` where a record decodes with a good
checksum -- for RocketMQ also with a PHYSICALOFFSET equal to its own address -- and, for the
formats without a magic code, where the next record decodes too), walks the chain from there,
and stops at the first sync point at or after ``stop``: exactly where the next range starts.
Records met after ``stop`` that are *not* sync points (a RocketMQ record with a stale
PHYSICALOFFSET) are still this range's, since the next range skips them.

After a broken record the walk resynchronises like ``validate``: at the end of the broken
record when the data goes on cleanly there, else at the next sync point (the bytes in between
are an unreadable region).  A clean end of data (zeros, a RocketMQ END_OF_FILE record, a
partial last record) ends the walk.

Each walk yields ``("record", position, item)``, ``("problem", position, Problem)`` and one
``("end", position, kind)`` when it reaches the end of the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats.rocketmq.commitlog import (
    BLANK_MAGIC,
    RecordWalker,
    decode_message,
)
from mqtool.store.files import CHUNK_SIZE
from mqtool.store.rocketmq import MAX_RECORD_SIZE, find_next_record, nonzero_extent

from mqtool.pipeline.files import AnyFile
from mqtool.store import rocketmq as rmq


@dataclass(frozen=True)
class Problem:
    """A finding-to-be: a validate code, where, what, and the commitlog/offset range it spoils."""

    code: str
    position: int | None
    message: str
    length: int | None = None
    damaged: tuple[int, int] | None = None  # global [from, to) (commitlog offsets for RocketMQ)


def error_text(exc: MqError) -> str:
    parts = []
    if exc.message:
        parts.append(exc.message)
    if exc.expected is not None or exc.found is not None:
        parts.append(f"expected {exc.expected}, found {exc.found}")
    return ": ".join(parts)


# --- RocketMQ CommitLog ------------------------------------------------------------------------
# The classification and resynchronisation rules are validate's (ops.validate_rocketmq), so that
# scan reports the same code at the same position for the same damage.


def rmq_record_starts_at(f: AnyFile, base: int, pos: int) -> bool:
    """A message record with PHYSICALOFFSET ``base + pos`` decodes cleanly at ``pos``."""
    head = f.pread(pos, 36)
    if len(head) < 36 or int.from_bytes(head[28:36], "big", signed=True) != base + pos:
        return False
    total = int.from_bytes(head[0:4], "big", signed=True)
    if not 0 < total <= min(f.size - pos, MAX_RECORD_SIZE):
        return False
    try:
        decode_message(f.pread(pos, total), 0)
    except MqError:
        return False
    return True


def _rmq_clean_at(f: AnyFile, base: int, pos: int) -> bool:
    if pos == f.size:
        return True
    head = f.pread(pos, 8)
    if len(head) == 8:
        if int.from_bytes(head[4:8], "big") == BLANK_MAGIC or head == bytes(8):
            return True
    elif not head.strip(b"\x00"):
        return True
    return rmq_record_starts_at(f, base, pos)


def _rmq_torn_tail(f: AnyFile, base: int, bad: int) -> Problem | None:
    """In the last file: a record whose bytes stop early, followed only by zeros (a crash) —
    the store layer's rule (``rmq.torn_tail_at``), so scan and validate call the same bytes torn."""
    torn = rmq.torn_tail_at(f, bad, f.size)
    if torn is None:
        return None
    return Problem(
        "RMQ-CL-TORN-TAIL",
        bad,
        f"torn tail: {torn.what} (crash while writing); `mqtool recover` truncates it",
        torn.stop - bad,
        (base + bad, base + bad + max(torn.total, torn.stop - bad, 1)),
    )


def walk_commitlog(f: AnyFile, base: int, start: int, stop: int, is_last: bool) -> Iterator[tuple[str, int, object]]:
    """The records of ``f`` (a CommitLog file named ``base``) owned by the range ``[start, stop)``."""
    if start:
        first = find_next_record(f, base, start)
        if first is None:
            return
        pos = first
    else:
        pos = 0
    want = CHUNK_SIZE
    while True:
        data = f.pread(pos, want)
        want = CHUNK_SIZE
        walker = RecordWalker(data, 0, check_crc=True)
        try:
            for p, rec in walker:
                at = pos + p
                if at >= stop and rec.physical_offset == base + at:
                    return
                if is_last and data[p + rec.total_size - 1] == 0 and (rec.properties or rec.dropped_properties):
                    # properties always end with 0x02: a zero there is a record never written whole
                    torn = _rmq_torn_tail(f, base, at)
                    if torn is not None:
                        yield "problem", at, torn
                        yield "end", at, "torn"
                        return
                yield "record", at, rec
        except MqError as exc:
            bad = pos + (walker.failed_at or 0)
            torn = _rmq_torn_tail(f, base, bad) if is_last else None
            if torn is not None:
                yield "problem", bad, torn
                yield "end", bad, "torn"
                return
            code, located, frames = rmq.classify_broken_record(f, bad, exc.at(f.path, pos))
            resume = next((bad + n for n in sorted(frames) if _rmq_clean_at(f, base, bad + n)), None)
            region = None
            if resume is None:
                resume = find_next_record(f, base, bad + 1)
                if resume is None:
                    extent = nonzero_extent(f, bad)
                    end = extent[1] if extent else bad
                    region = Problem(
                        "RMQ-CL-UNREADABLE-REGION",
                        bad,
                        f"no valid record after the broken one: {end - bad} bytes up to position {end} cannot be read",
                        end - bad,
                        (base + bad, base + max(end, bad + 1)),
                    )
                else:
                    region = Problem(
                        "RMQ-CL-UNREADABLE-REGION",
                        bad,
                        f"{resume - bad} bytes between the broken record and the next valid record at {resume} were skipped",
                        resume - bad,
                        (base + bad, base + resume),
                    )
            damaged = (base + bad, base + resume) if resume is not None else region.damaged  # type: ignore[union-attr]
            yield "problem", bad, Problem(code, located.position, error_text(located), None, damaged)
            if region is not None:
                yield "problem", bad, region
            if resume is None:
                yield "end", bad, "unreadable"
                return
            pos = resume
            continue
        end = walker.end
        assert end is not None
        if end.kind in ("partial", "eof") and pos + len(data) < f.size:
            if end.kind == "partial" and end.position == 0:
                if end.length > MAX_RECORD_SIZE:
                    yield "problem", pos, Problem("RMQ-CL-SIZE", pos, f"expected TOTALSIZE at most {MAX_RECORD_SIZE}, found {end.length}")
                    yield "end", pos, "size"
                    return
                want = max(end.length, CHUNK_SIZE)
            pos += end.position
            continue
        end_pos = pos + end.position
        if end.kind == "partial" and is_last:
            torn = _rmq_torn_tail(f, base, end_pos)
            if torn is not None:
                yield "problem", end_pos, torn
        yield "end", end_pos, end.kind
        return


# --- formats without a magic code: Kafka, Jafka, MetaQ ------------------------------------------


@dataclass(frozen=True)
class Framing:
    """How to walk one family: a walker over a buffer, and the checks a sync point needs.

    ``walker(data)`` iterates ``(position, item, size)`` and has ``failed_at`` and ``end``
    (``kind``, ``position``, ``length``) like the ``formats`` walkers; ``decodes(f, pos)`` returns
    the size of a valid non-empty record at ``pos`` (None otherwise); ``classify(exc)`` gives
    the validate code of a broken record; ``region_code`` the code of skipped bytes.
    """

    walker: Callable[[bytes], object]
    decodes: Callable[[AnyFile, int], "int | None"]
    candidates: Callable[[bytes], Iterator[int]]
    classify: Callable[[MqError], str]
    region_code: str
    max_record: int = MAX_RECORD_SIZE
    #: ``torn_check(head, length, last_item)``: why a record cut by the end of the file cannot be a
    #: torn write (an ``MqError`` positioned in the record), or None; None: every cut record is one
    torn_check: "Callable[[bytes, int, object], MqError | None] | None" = None


def is_sync(framing: Framing, f: AnyFile, pos: int) -> bool:
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


def find_sync(framing: Framing, f: AnyFile, start: int) -> int | None:
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


def walk_framed(framing: Framing, f: AnyFile, start: int, stop: int) -> Iterator[tuple[str, int, object]]:
    if start:
        first = find_sync(framing, f, start)
        if first is None:
            return
        pos = first
    else:
        pos = 0
    want = CHUNK_SIZE
    last_item = None
    while True:
        data = f.pread(pos, want)
        want = CHUNK_SIZE
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
            resume = find_sync(framing, f, bad + 1)
            yield "problem", bad, Problem(framing.classify(exc), located.position, error_text(located))
            if resume is None:
                extent = nonzero_extent(f, bad)
                end = extent[1] if extent else bad
                yield "problem", bad, Problem(framing.region_code, bad, f"no valid record after the broken one: {end - bad} bytes cannot be read", end - bad)
                yield "end", bad, "unreadable"
                return
            if resume > bad:
                yield "problem", bad, Problem(
                    framing.region_code, bad, f"{resume - bad} bytes between the broken record and the next valid one at {resume} were skipped", resume - bad
                )
            pos = resume
            continue
        end = walker.end
        assert end is not None
        if end.kind in ("partial", "eof") and pos + len(data) < f.size:
            if end.kind == "partial" and end.position == 0:
                if end.length > framing.max_record:
                    yield "problem", pos, Problem(framing.classify(CorruptDataError(kind="size")), pos, f"a record of {end.length} bytes: more than mqtool reads ({framing.max_record})")
                    yield "end", pos, "size"
                    return
                want = max(end.length, CHUNK_SIZE)
            pos += end.position
            continue
        at = pos + end.position
        if end.kind == "partial" and framing.torn_check is not None:
            exc = framing.torn_check(data[end.position : end.position + 64], end.length, last_item)
            if exc is not None:
                located = exc.at(f.path, at)
                yield "problem", at, Problem(framing.classify(located), located.position, error_text(located))
                yield "problem", at, Problem(framing.region_code, at, f"no valid record after the broken one: {f.size - at} bytes cannot be read", f.size - at)
                yield "end", at, "unreadable"
                return
        yield "end", at, end.kind
        return
