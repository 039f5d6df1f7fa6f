"""How the store model's walk of a Kafka segment ends or goes on after damage (``kafka_segment``'s
checker): the rules of a segment's end as ``LogSegment.recover`` meets it.

The data ends cleanly at the end of the file, or before a pre-allocated zero tail
(``log.preallocate``: recovery reads the zeros as an entry of size 0 and truncates), or before a
torn tail (the start of an entry the broker was writing).  Before the last segment each of these
is an error: recovery truncates there and deletes every later segment.  An entry that does not
read (a size or magic field the broker could not write, offsets going back), or a zero run that
other bytes follow, is where recovery truncates; mqtool's walk goes on at the next valid entry
(``store.kafka.resync``, of a magic the segment holds and continuing its offsets) to name what lies
past the damage, and what it skipped is garbage.
"""

from __future__ import annotations

from mqtool.findings import Severity
from mqtool.findings.code_ids import (
    KAFKA_LOG_GARBAGE,
    KAFKA_LOG_MAGIC,
    KAFKA_LOG_SIZE,
    KAFKA_LOG_TORN_TAIL,
    KAFKA_LOG_VALID_END,
    KAFKA_LOG_ZERO_TAIL,
    KAFKA_OFFSET_ORDER,
)
from mqtool.formats.kafka import record_batch as rb
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, nonzero_extent
from mqtool.store.model.kafka_batch_checks import BatchChecks

E = Severity.error


def resync(checks: BatchChecks, f: ReadOnlyFile, start: int, walk: ks.LogFileWalk) -> int | None:
    """First position >= ``start`` where an entry with a valid CRC starts, of a magic the
    segment holds, continuing the offsets seen so far when there are any (``ks.resync``).
    The search reads first what is left of ``walk``'s last piece, which the file keeps."""
    held = walk.buffer_start + len(walk.buffer) - start
    return ks.resync(f, start, magics=checks.res.magics or (0, 1, 2), after=checks.prev_last, first=held if held > 0 else None)


def after_broken_entry(checks: BatchChecks, f: ReadOnlyFile, walk: ks.LogFileWalk) -> int | None:
    """``walk`` stopped at an entry that does not read (``walk.error``): its finding, and where
    the walk goes on (the next valid entry), or None when none follows: the segment's data ends
    at the first broken entry (``res.end_kind`` ``corrupt``) and what follows is garbage."""
    bad = walk.failed_at
    exc = walk.error
    assert bad is not None and exc is not None  # set together
    res = checks.res
    checks.broken(bad)
    code = KAFKA_LOG_MAGIC if exc.kind == "magic" else KAFKA_OFFSET_ORDER if exc.kind == "offset-order" else KAFKA_LOG_SIZE
    checks.find(code, exc.position, exc.reason + checks.truncation_note(bad))
    nxt = resync(checks, f, bad + 1, walk)
    if nxt is None:
        extent = nonzero_extent(f, bad)
        stop = extent[1] if extent else bad
        if stop > bad:
            checks.find(
                KAFKA_LOG_GARBAGE,
                bad,
                f"no valid entry after the broken one: {stop - bad} bytes up to position {stop} cannot be read",
                length=stop - bad,
            )
        res.end_kind = "corrupt"
        assert checks.first_break is not None  # broken() above
        res.valid_end = checks.first_break
        return None
    checks.find(
        KAFKA_LOG_GARBAGE,
        bad,
        f"{nxt - bad} bytes between the broken entry and the next valid entry at {nxt} were skipped",
        length=nxt - bad,
    )
    return nxt


def after_zero_run(checks: BatchChecks, f: ReadOnlyFile, walk: ks.LogFileWalk) -> int | None:
    """``walk`` ended at a zero run that other bytes follow (``walk.data_after_zeros``): recovery
    truncates at the run; where the walk goes on (the next valid entry), or None when none
    follows: the segment's data ends there (``corrupt``) and the bytes after the run are garbage."""
    end = walk.end
    first = walk.data_after_zeros
    assert end is not None and first is not None  # a zeros end with data after it
    res = checks.res
    checks.broken(end.position)
    checks.find(
        KAFKA_LOG_SIZE,
        end.position + 8,
        f"expected an entry size >= 14, found 0: {first - end.position} zero bytes before more data at {first}" + checks.truncation_note(end.position),
        length=first - end.position,
    )
    nxt = resync(checks, f, first - 11 if first - 11 > end.position else end.position + 1, walk)
    if nxt is None:
        garbage = walk.garbage_after_zeros
        assert garbage is not None  # data_after_zeros is set
        stop = garbage[1]
        checks.find(KAFKA_LOG_GARBAGE, first, f"{stop - first} bytes after the zero run do not start a valid entry", length=stop - first)
        res.end_kind = "corrupt"
        assert checks.first_break is not None  # broken() above
        res.valid_end = checks.first_break
        return None
    if nxt > first:
        checks.find(KAFKA_LOG_GARBAGE, first, f"{nxt - first} bytes before the next valid entry at {nxt} were skipped", length=nxt - first)
    return nxt


def judge_end(checks: BatchChecks, f: ReadOnlyFile, kind: str, position: int, length: int) -> None:
    """The walk's data ended cleanly at ``position`` (``kind``: ``eof``, ``zeros``, ``partial``):
    where the segment's valid data ends, and the findings of its tail."""
    res = checks.res
    t = checks.t
    res.end_kind = kind if checks.first_break is None else "corrupt"
    res.valid_end = position if checks.first_break is None else checks.first_break
    size = f.size
    last = t.is_last or t.kraft_snapshot
    severity = None if last else E
    if kind == "zeros" and size > position:
        checks.find(
            KAFKA_LOG_ZERO_TAIL,
            position,
            f"{size - position} zero bytes after the last entry (pre-allocated segment, log.preallocate=true); "
            f"recovery reads them as an entry of size 0 and truncates{'' if last else ' -- in a segment before the last, and deletes every later segment'}",
            length=size - position,
            severity=severity,
        )
    elif kind == "partial":
        present = size - position
        if present < 17:
            what = f"{present} bytes, less than a 17-byte entry header"
        else:
            _offset, length, magic = rb.peek_batch(f.pread(position, rb.HEADER_SIZE_UP_TO_MAGIC))
            what = f"an entry of {rb.LOG_OVERHEAD + length} bytes (magic {magic}) with only {present} present"
        checks.find(
            KAFKA_LOG_TORN_TAIL,
            position,
            f"torn tail: {what}; the broker ignores it and recovery truncates the segment to {position}" + ("" if last else ", deleting every later segment"),
            length=present,
            severity=severity,
        )
    if t.is_last and not t.kraft_snapshot and checks.first_break is None and (res.entries or position):
        leo = checks.prev_last + 1 if checks.prev_last is not None else checks.base
        checks.find(KAFKA_LOG_VALID_END, position, f"valid data ends at position {position} (log end offset {leo}, {kind} follow)")
