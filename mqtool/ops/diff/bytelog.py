"""Byte-addressed logs (the RocketMQ CommitLog, Jafka and MetaQ partitions) compared by offset.

Both sides hold the same bytes at the same offsets: HA replication copies the master's CommitLog
byte for byte.  The range both hold (from the larger first offset to the smaller valid end) is
compared block by block through the digests of each side's one reading (``digest``): equal
digests are equal bytes; a block whose digests differ, or that a side's reading did not read, is
read on both sides and compared byte by byte, and the first differing byte is mapped to the
record holding it on each side.  Bytes after a RocketMQ END_OF_FILE header are filler and not
compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mqtool.errors import MqError
from mqtool.findings import Finding, finding_text
from mqtool.ops.diff.digest import BLOCK, ReadDigests
from mqtool.ops.diff.report import Extra, LogDiff, damaged_verdict
from mqtool.store.files import CHUNK_SIZE


class Reader(Protocol):
    def pread(self, position: int, size: int) -> bytes: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Seg:
    base: int
    size: int  # bytes of log this segment holds (its valid end for the last one)
    path: Path
    opener: Callable[[], Reader]


#: ``(log, offset) -> (record start, record dict or None, END_OF_FILE filler range or None)``
Describe = Callable[["ByteLog", int], "tuple[int, dict[str, Any] | None, tuple[int, int] | None]"]
#: ``(log, offset) -> (offset, size)`` of each record from ``offset`` on
WalkFrom = Callable[["ByteLog", int], Iterator[tuple[int, int]]]


class ByteLog:
    """A byte-addressed log: segments by base offset, the layout's record walker, and the digests
    of what the side's reading read (``digests``, None: the bytes are read here).

    ``damage`` collects the broken records met (where the log's end was found, and by
    ``walk_from``): ``{"file", "position", "offset", "error"}``, at most one per position;
    ``notes`` what is worth saying about the log itself (a torn tail)."""

    def __init__(self, name: str, segments: list[Seg], describe: Describe, walk_from: WalkFrom, digests: ReadDigests | None = None) -> None:
        self.name = name
        self.segments = segments
        self._describe = describe
        self._walk_from = walk_from
        self.digests = digests
        self._open: tuple[Seg, Reader] | None = None
        self.damage: list[dict[str, Any]] = []
        self.notes: list[str] = []
        #: the gaps and damage of this side as validate states them
        self.findings: list[Finding] = []
        #: RocketMQ: the configured CommitLog file size
        self.file_size: int | None = None

    def add_damage(self, path: Path, position: int, offset: int, error: MqError | str, finding: Finding | None = None) -> None:
        """A broken record at ``position`` of ``path``; ``finding``: validate's finding for it
        (its code and the position of the field that is wrong)."""
        if not any(d["offset"] == offset for d in self.damage):
            entry: dict[str, Any] = {"file": str(path), "position": position, "offset": offset, "error": str(error)}
            if finding is not None:
                entry.update(code=finding.code, code_position=finding.position, finding=finding_text(finding))
            self.damage.append(entry)
        if finding is not None and finding not in self.findings:
            self.findings.append(finding)

    @property
    def start(self) -> int:
        return self.segments[0].base if self.segments else 0

    @property
    def end(self) -> int:
        return self.segments[-1].base + self.segments[-1].size if self.segments else 0

    def segment_for(self, offset: int) -> Seg | None:
        for seg in reversed(self.segments):
            if seg.base <= offset < seg.base + seg.size:
                return seg
            if seg.base <= offset:
                return None
        return None

    def reader(self, seg: Seg) -> Reader:
        if self._open is None or self._open[0] is not seg:
            self.close()
            self._open = (seg, seg.opener())
        return self._open[1]

    def read(self, offset: int, size: int) -> bytes:
        """Bytes from ``offset`` up to ``size`` but never past its segment's end (from the tail the
        side's reading kept when it holds them)."""
        seg = self.segment_for(offset)
        if seg is None:
            return b""
        size = min(size, seg.base + seg.size - offset)
        held = self.digests.get(str(seg.path)) if self.digests is not None else None
        if held is not None:
            kept = held.tail_bytes(offset - seg.base, size)
            if kept is not None:
                return kept
        return self.reader(seg).pread(offset - seg.base, size)

    def block(self, offset: int) -> tuple[Seg, bytes] | None:
        """``(segment, digest)`` of the block starting at ``offset`` when the side's reading read all
        of it and all of it is data of the segment; None otherwise."""
        seg = self.segment_for(offset)
        if seg is None or self.digests is None:
            return None
        at = offset - seg.base
        if at % BLOCK or at + BLOCK > seg.size:
            return None
        held = self.digests.get(str(seg.path))
        value = held.block(at // BLOCK) if held is not None else None
        return None if value is None else (seg, value)

    def describe(self, offset: int) -> tuple[int, dict[str, Any] | None, tuple[int, int] | None]:
        return self._describe(self, offset)

    def walk_from(self, offset: int) -> Iterator[tuple[int, int]]:
        return self._walk_from(self, offset)

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None


def _first_difference(a: bytes, b: bytes) -> int:
    """Index of the first differing byte of two equal-length, unequal buffers."""
    lo, hi = 0, len(a)
    while hi - lo > 64:  # bisect on slices: memcmp speed
        mid = (lo + hi) // 2
        if a[lo:mid] != b[lo:mid]:
            hi = mid
        else:
            lo = mid
    for i in range(lo, hi):
        if a[i] != b[i]:
            return i
    return hi


def _same_block(a: ByteLog, b: ByteLog, pos: int, hi: int) -> bool | None:
    """Whether the blocks at ``pos`` hold the same bytes on both sides, from the digests (both
    files at the same base, the whole block data on both and before ``hi``); None: not known."""
    if pos + BLOCK > hi:
        return None
    da, db = a.block(pos), b.block(pos)
    if da is None or db is None or da[0].base != db[0].base:
        return None
    return da[1] == db[1]


def _want(a: ByteLog, b: ByteLog, pos: int, hi: int) -> int:
    """Bytes to read at ``pos`` where the digests do not answer: up to the next block boundary of
    a file both sides' readings hold from its start, else a chunk."""
    for log in (a, b):
        seg = log.segment_for(pos)
        held = log.digests.get(str(seg.path)) if seg is not None and log.digests is not None else None
        if seg is not None and held is not None and pos - seg.base < held.held:
            return min(hi - pos, BLOCK - (pos - seg.base) % BLOCK)
    return min(hi - pos, CHUNK_SIZE)


def compare_byte_logs(a: ByteLog, b: ByteLog, *, progress: Callable[[int], object] | None = None) -> LogDiff:
    advance: Callable[[int], object] = progress or (lambda n: None)
    diff = LogDiff(a.name, {"start": a.start, "end": a.end}, {"start": b.start, "end": b.end}, "byte")
    lo, hi = max(a.start, b.start), min(a.end, b.end)
    a_has, b_has = a.end > a.start, b.end > b.start
    if not a_has or not b_has:
        diff.verdict = "identical" if not a_has and not b_has else ("b-prefix" if a_has else "a-prefix")
        if a_has:
            diff.only_a = extra(a, a.start, a.end)
        if b_has:
            diff.only_b = extra(b, b.start, b.end)
        return with_damage(diff, a, b)
    if lo >= hi:
        diff.verdict = "disjoint"
        diff.notes.append("the two logs share no offset: nothing to compare")
        return with_damage(diff, a, b)
    if a.start < b.start:
        diff.only_a_before = Extra(a.start, b.start, bytes=b.start - a.start)
    elif b.start < a.start:
        diff.only_b_before = Extra(b.start, a.start, bytes=a.start - b.start)
    pos = lo
    skipped_filler = 0
    divergence: dict[str, Any] | None = None
    while pos < hi:
        same = _same_block(a, b, pos, hi)
        if same:
            pos += BLOCK
            advance(BLOCK)
            continue
        want = BLOCK if same is False else _want(a, b, pos, hi)
        da, db = a.read(pos, want), b.read(pos, want)
        n = min(len(da), len(db))
        if n == 0:
            diff.problems.append(f"offset {pos}: no segment holds it on side {'A' if not da else 'B'}")
            diff.verdict = "diverged"
            divergence = diff.divergence = {"offset": pos, "byte_offset": pos, "a": None, "b": None}
            break
        if da[:n] != db[:n]:
            chunk_start = pos
            at = pos + _first_difference(da[:n], db[:n])
            start_a, rec_a, filler_a = a.describe(at)
            start_b, rec_b, filler_b = b.describe(at)
            if filler_a is not None and filler_a == filler_b:
                skipped_filler += 1
                advance(filler_a[1] - pos)
                pos = filler_a[1]  # END_OF_FILE filler: not data
                continue
            diff.verdict = "diverged"
            advance(at - pos)
            pos = at
            divergence = diff.divergence = {
                "offset": min(start_a, start_b),
                "byte_offset": at,
                "a_byte": f"0x{da[at - chunk_start]:02X}",
                "b_byte": f"0x{db[at - chunk_start]:02X}",
                "a": rec_a,
                "b": rec_b,
            }
            break
        pos += n
        advance(n)
    diff.compared = {"from": lo, "to": pos, "bytes": pos - lo}
    if skipped_filler:
        diff.notes.append(f"{skipped_filler} END_OF_FILE filler region(s) differ (not data)")
    if divergence is not None:
        diff.only_a = extra(a, divergence["offset"], a.end) if divergence["a"] is not None else None
        diff.only_b = extra(b, divergence["offset"], b.end) if divergence["b"] is not None else None
        return with_damage(diff, a, b)
    if a.end > b.end:
        diff.verdict = "b-prefix"
        diff.only_a = extra(a, b.end, a.end)
    elif b.end > a.end:
        diff.verdict = "a-prefix"
        diff.only_b = extra(b, a.end, b.end)
    return with_damage(diff, a, b)


def with_damage(diff: LogDiff, a: ByteLog, b: ByteLog) -> LogDiff:
    """Copy both sides' damage and notes into ``diff``; with no divergence found, a side holding
    a broken record makes the verdict ``damaged``: a copy with damage is never a clean prefix."""
    diff.damage = [{"side": "A", **d} for d in a.damage] + [{"side": "B", **d} for d in b.damage]
    diff.notes = [*(f"A: {n}" for n in a.notes), *(f"B: {n}" for n in b.notes), *diff.notes]
    diff.findings = [*(("A", f) for f in a.findings), *(("B", f) for f in b.findings)]
    return damaged_verdict(diff)


def extra(log: ByteLog, start: int, end: int) -> Extra:
    out = Extra(start, end)
    for _offset, size in log.walk_from(start):
        out.records += 1
        out.bytes += size
    return out
