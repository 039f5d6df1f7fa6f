"""diff of two Kafka log dirs or partitions: each side read once, by the store model's reading.

Kafka replicas hold the same record batches at the same offsets (followers append the leader's
batches as they are) but may roll segments at other places, so partitions are compared batch by
batch, aligned by offset.

A side is read as validate reads it (``store.model.kafka.read_store``, the log families a reader
states: ``ops.log_findings``) for the findings diff states; that reading is watched
(``store.files.observe_reads``) and the ``.log`` bytes kept as block digests (``ops.diff.digest``).
Two partitions whose segments start at the same offsets and hold the same bytes (equal digests),
or where one side's last segment holds the first bytes of the other's same segment (and the
other may have more segments after it), every batch a v2 batch the model found no fault in and
no offset missing, are identical or a clean prefix (replication lag): their offsets, batch counts
and what only one side holds are the model's (``SegmentResult``), and nothing is read again.  Any
other pair is walked batch by batch (the store model's ``kafka_reads.partition_batches``) to find where the two differ; a broken entry (a batch
that does not decode, which is damage, unlike a torn tail: a ``partial`` end) is met there at
the offset expected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqtool.findings import Finding, Severity
from mqtool.ops.diff.digest import BLOCK, FileDigests, ReadDigests
from mqtool.ops.diff.report import Extra, LogDiff, damaged_verdict
from mqtool.store.files import observe_reads, read_range

if TYPE_CHECKING:
    from mqtool.store import kafka as ks
    from mqtool.store.model import kafka as km


@dataclass
class KafkaSide:
    """One side read once: its store, its findings as a reader states them, each ``.log``'s
    ``SegmentResult`` by path, and the digests of the ``.log`` bytes read."""

    store: ks.KafkaStore
    findings: list[Finding]
    results: dict[str, km.SegmentResult]
    digests: ReadDigests


def read_side(path: Path, progress: Callable[[int], object] | None = None) -> KafkaSide:
    from mqtool.ops import log_findings
    from mqtool.store import kafka as kstore
    from mqtool.store.model import kafka as kmodel

    digests = ReadDigests(lambda p: p.endswith(".log"), progress)
    found: list[Finding] = []
    results: dict[str, km.SegmentResult] = {}
    with observe_reads(digests.observe):
        store = kstore.open_kafka(path)
        for item in kmodel.read_store(store, checks=log_findings.LOG):
            if isinstance(item, kmodel.Placed):
                if item.finding.family in log_findings.LOG:
                    found.append(item.finding)
            elif isinstance(item, kmodel.SegmentRead):
                results[item.result.path] = item.result
                found.extend(f for f in item.result.findings if f.family in log_findings.LOG)
    return KafkaSide(store, log_findings.select(found), results, digests)


def _clean_results(part: ks.KafkaPartition, side: KafkaSide) -> list[tuple[ks.KafkaSegment, km.SegmentResult]] | None:
    """The partition's segments holding batches, with their results, when the model found nothing
    wrong in any, every batch is a v2 batch, the offsets run without a gap (as many records as
    offsets) and the reading read every byte; None otherwise."""
    out = []
    for seg in part.log_segments():
        res = side.results.get(str(seg.log))
        if res is None or res.magics - {2} or any(f.level in (Severity.error, Severity.warning) for f in res.findings):
            return None
        if not res.size:
            continue
        held = side.digests.get(str(seg.log))
        if held is None or held.held < res.size or res.valid_end != res.size or res.first_offset is None or res.last_offset is None:
            return None
        if res.records != res.last_offset - res.first_offset + 1:
            return None
        out.append((seg, res))
    return out


def _starts_with(longer: FileDigests, path: str, shorter: FileDigests) -> bool:
    """Whether the bytes ``shorter`` was read from are the first bytes of the file ``longer`` was
    read from (``path``): its blocks, then its tail (read from ``path`` when the longer file's
    reading no longer holds those bytes)."""
    n = shorter.count
    if longer.count < n or longer.blocks[: len(shorter.blocks)] != shorter.blocks:
        return False
    if not shorter.tail:
        return True
    start = n * BLOCK
    there = longer.tail_bytes(start, len(shorter.tail))
    if there is None:
        there = read_range(path, start, len(shorter.tail))
    return there == bytes(shorter.tail)


def from_readings(name: str, pa: ks.KafkaPartition, pb: ks.KafkaPartition, a: KafkaSide, b: KafkaSide) -> LogDiff | None:
    """The diff of two partitions one of which holds the other's bytes from its start (the same
    segments, the shorter side's last one a prefix of the other's same segment): identical, or a
    clean prefix (replication lag), from the two readings alone; None when that is not so (or not
    known: then the partitions are walked batch by batch)."""
    ra, rb = _clean_results(pa, a), _clean_results(pb, b)
    if not ra or not rb:
        return None
    n = min(len(ra), len(rb))
    for i in range(n):
        (sx, x), (sy, y) = ra[i], rb[i]
        if sx.base_offset != sy.base_offset or (i < n - 1 and x.size != y.size):
            return None
        hx, hy = a.digests.get(x.path), b.digests.get(y.path)
        assert hx is not None and hy is not None  # _clean_results
        if not (_starts_with(hx, x.path, hy) if x.size >= y.size else _starts_with(hy, y.path, hx)):
            return None
    (_, last_a), (_, last_b) = ra[n - 1], rb[n - 1]
    a_more = len(ra) > n or last_a.size > last_b.size
    b_more = len(rb) > n or last_b.size > last_a.size
    if a_more and b_more:
        return None
    start = ra[0][1].first_offset
    end_a, end_b = _end(ra), _end(rb)
    diff = LogDiff(name, {"start": start, "end": end_a}, {"start": start, "end": end_b}, "offset")
    shorter, longer = (rb, ra) if a_more else (ra, rb)
    diff.compared = {"from": start, "to": _end(shorter), "entries": sum(r.entries for _s, r in shorter)}
    if a_more or b_more:
        extra = Extra(_end(shorter), _end(longer))
        extra.records = extra.end - extra.start  # no gap: one record per offset
        extra.bytes = sum(r.size for _s, r in longer) - sum(r.size for _s, r in shorter)
        if a_more:
            diff.verdict, diff.only_a = "b-prefix", extra
        else:
            diff.verdict, diff.only_b = "a-prefix", extra
    return diff


def _end(results: list[tuple[ks.KafkaSegment, km.SegmentResult]]) -> int:
    last = results[-1][1].last_offset
    assert last is not None  # _clean_results
    return last + 1


@dataclass
class _Entry:
    offset: int
    last_offset: int
    size: int
    raw: bytes
    header: object
    position: int
    path: Path
    error: str | None = None  # a broken entry: ``offset`` is the one expected there

    def describe(self) -> dict[str, Any]:
        if self.error is not None:
            return {"base_offset": self.offset, "file": str(self.path), "position": self.position, "error": self.error}
        h = self.header
        info: dict[str, Any] = {"base_offset": self.offset, "last_offset": self.last_offset, "size": self.size, "file": str(self.path), "position": self.position}
        for name in ("partition_leader_epoch", "crc", "max_timestamp", "producer_id", "magic"):
            value = getattr(h, name, None)
            if value is not None:
                info[name] = value
        return info


def _kafka_entries(part: ks.KafkaPartition, problems: list[str], damage: list[dict[str, Any]]) -> Iterator[_Entry]:
    """The partition's batches in order (the store model's ``kafka_reads.partition_batches``); a
    broken entry (a batch that does not decode, which is damage, unlike a torn tail: a
    ``partial`` end) is yielded as an ``_Entry`` with ``error`` at the offset expected there, and
    the walk goes on with the next segment."""
    from mqtool.store.model import kafka_reads as kr

    expected = None
    for item in kr.partition_batches(part):
        if isinstance(item, kr.WalkedBatch):
            entry = item.entry
            expected = entry.last_offset + 1
            yield _Entry(entry.offset, entry.last_offset, entry.size, item.raw, entry.header, item.position, item.path)
            continue
        error = str(item.end.error)
        problems.append(error)
        offset = expected if expected is not None and item.walked else item.base_offset
        damage.append({"file": str(item.path), "position": item.end.position, "offset": offset, "error": error})
        yield _Entry(offset, offset, 0, b"", None, item.end.position, item.path, error=error)


def compare_kafka_partitions(name: str, pa: ks.KafkaPartition, pb: ks.KafkaPartition) -> LogDiff:
    problems: list[str] = []
    damage_a: list[dict[str, Any]] = []
    damage_b: list[dict[str, Any]] = []
    ea, eb = _kafka_entries(pa, problems, damage_a), _kafka_entries(pb, problems, damage_b)
    a, b = next(ea, None), next(eb, None)
    diff = LogDiff(name, {"start": a.offset if a else None, "end": None}, {"start": b.offset if b else None, "end": None}, "offset")
    before_a = before_b = None
    while a is not None and b is not None and a.last_offset < b.offset:
        before_a = before_a or Extra(a.offset, b.offset)
        before_a.records += a.last_offset - a.offset + 1
        before_a.bytes += a.size
        a = next(ea, None)
    while a is not None and b is not None and b.last_offset < a.offset:
        before_b = before_b or Extra(b.offset, a.offset)
        before_b.records += b.last_offset - b.offset + 1
        before_b.bytes += b.size
        b = next(eb, None)
    diff.only_a_before, diff.only_b_before = before_a, before_b
    compared_from = a.offset if a is not None and b is not None else None
    compared_entries = 0
    last_equal = None
    while a is not None and b is not None:
        if a.raw != b.raw:
            diff.verdict = "diverged"
            diff.divergence = {"offset": min(a.offset, b.offset), "a": a.describe(), "b": b.describe()}
            break
        compared_entries += 1
        last_equal = a.last_offset
        a, b = next(ea, None), next(eb, None)
    if compared_from is not None:
        diff.compared = {"from": compared_from, "to": (last_equal + 1) if last_equal is not None else compared_from, "entries": compared_entries}
    elif a is not None and b is not None:
        pass
    if a is not None:
        diff.only_a = Extra(a.offset, a.offset)
    if b is not None:
        diff.only_b = Extra(b.offset, b.offset)
    for extra, entry, it in ((diff.only_a, a, ea), (diff.only_b, b, eb)):
        while extra is not None and entry is not None and entry.error is None:
            extra.records += entry.last_offset - entry.offset + 1
            extra.bytes += entry.size
            extra.end = entry.last_offset + 1
            entry = next(it, None)
        for _ in it:  # the rest is not counted (past a broken entry), but its damage is
            pass
    diff.a["end"] = diff.only_a.end if diff.only_a else (last_equal + 1 if last_equal is not None else None)
    diff.b["end"] = diff.only_b.end if diff.only_b else (last_equal + 1 if last_equal is not None else None)
    if diff.verdict != "diverged":
        has_a = diff.a["start"] is not None
        has_b = diff.b["start"] is not None
        if has_a and has_b and compared_from is None:
            diff.verdict = "disjoint"
            diff.notes.append("the two partitions share no offset: nothing to compare")
        elif diff.only_a and not diff.only_b:
            diff.verdict = "b-prefix"
        elif diff.only_b and not diff.only_a:
            diff.verdict = "a-prefix"
    diff.problems.extend(problems)
    diff.damage = [{"side": "A", **d} for d in damage_a] + [{"side": "B", **d} for d in damage_b]
    return damaged_verdict(diff)
