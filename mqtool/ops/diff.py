"""diff: two copies of one log -- a RocketMQ master and its HA slave, two replicas of a Kafka
partition, two copies of a Jafka or MetaQ partition -- compared by offset, streaming.

Byte-addressed logs (the RocketMQ CommitLog, Jafka and MetaQ partitions) hold the same bytes at
the same offsets on both sides: HA replication copies the master's CommitLog byte for byte.  They
are compared in bounded chunks over the range both hold (from the larger first offset to the
smaller valid end); the first differing byte is mapped to the record holding it on each side.
Bytes after a RocketMQ END_OF_FILE header are filler and not compared.

Kafka replicas hold the same record batches at the same offsets (followers append the leader's
batches as they are) but may roll segments at other places, so partitions are compared batch by
batch, aligned by offset.

Where a side's data ends matters: a clean stop (zeros, an END_OF_FILE record, a torn tail -- a
last record a crash cut short, followed only by zeros) makes a side a prefix, but a broken record
with data after it (a flipped byte, a file overwritten with other bytes) is damage.  The damaged
bytes are compared like any others (the first differing byte is then a divergence whose record
says why it does not decode); damage the comparison does not reach (past the other side's end, or
held identically by both) is reported on its own.

Verdicts per log: ``identical``; ``b-prefix`` (B holds the start of A: normal replication lag);
``a-prefix`` (A holds the start of B); ``diverged`` (the first divergence is reported); ``damaged``
(no divergence in the bytes both hold, but a side holds a broken record: ``damage`` names the file
and position); ``disjoint`` (no offset in common, nothing to compare).  Records one side holds past
the other's end are counted; data before the other's first offset (retention, or a slave that
started later) is reported, not a divergence.  The CLI exits 0 for identical and prefix, 1 for
diverged/damaged/disjoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import MqError, StoreLayoutError
from mqtool.findings import Finding, Severity
from mqtool.store.files import CHUNK_SIZE, ReadOnlyFile

OK_VERDICTS = ("identical", "b-prefix", "a-prefix", "only-a", "only-b")


@dataclass
class Extra:
    """Data one side holds that the other does not: ``[start, end)`` and what is in it."""

    start: int
    end: int
    records: int = 0
    bytes: int = 0

    def to_dict(self) -> dict:
        return {"from": self.start, "to": self.end, "records": self.records, "bytes": self.bytes}


@dataclass
class LogDiff:
    name: str
    a: dict  # {"start", "end"} offsets (bytes or Kafka offsets)
    b: dict
    unit: str  # "byte" or "offset"
    verdict: str = "identical"
    compared: dict | None = None  # {"from", "to", "bytes"}
    divergence: dict | None = None
    only_a: Extra | None = None
    only_b: Extra | None = None
    only_a_before: Extra | None = None
    only_b_before: Extra | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    damage: list[dict] = field(default_factory=list)  # {"side", "file", "position", "offset", "error"} (+ "code", "code_position")
    #: (side, finding): every gap and damage met on either side, as validate states them
    #: (RocketMQ: ``store.model.rocketmq``)
    findings: list[tuple[str, Finding]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict in OK_VERDICTS and not self.damage and not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for _side, f in self.findings if f.level is Severity.error]

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "unit": self.unit,
            "verdict": self.verdict,
            "a": self.a,
            "b": self.b,
            "compared": self.compared,
            "divergence": self.divergence,
            "only_in_a": self.only_a.to_dict() if self.only_a else None,
            "only_in_b": self.only_b.to_dict() if self.only_b else None,
            "only_in_a_before_b": self.only_a_before.to_dict() if self.only_a_before else None,
            "only_in_b_before_a": self.only_b_before.to_dict() if self.only_b_before else None,
            "notes": list(self.notes),
            "problems": list(self.problems),
            "damage": [dict(d) for d in self.damage],
            "findings": [{"side": side, **f.to_dict()} for side, f in self.findings],
        }


@dataclass
class DiffReport:
    layout: str
    a: str
    b: str
    logs: list[LogDiff] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        verdicts = {d.verdict for d in self.logs}
        for v in ("diverged", "damaged", "disjoint"):
            if v in verdicts:
                return v
        if verdicts <= {"identical"}:
            return "identical"
        if verdicts <= {"identical", "b-prefix", "only-a"}:
            return "b-prefix"
        if verdicts <= {"identical", "a-prefix", "only-b"}:
            return "a-prefix"
        return "prefixes"  # some logs lag on one side, some on the other

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.logs)

    def to_dict(self) -> dict:
        return {
            "layout": self.layout,
            "a": self.a,
            "b": self.b,
            "verdict": self.verdict,
            "ok": self.ok,
            "logs": [d.to_dict() for d in self.logs],
        }


# --- byte-addressed logs ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Seg:
    base: int
    size: int  # bytes of log this segment holds (its valid end for the last one)
    path: Path
    opener: Callable[[], object]  # -> object with pread(position, size), close()


class _ByteLog:
    """A byte-addressed log: segments by base offset, and the layout's record walker.

    ``damage`` collects the broken records met (where the log's end was found, and by
    ``walk_from``): ``{"file", "position", "offset", "error"}``, at most one per position;
    ``notes`` what is worth saying about the log itself (a torn tail)."""

    def __init__(self, name: str, segments: list[_Seg], describe, walk_from) -> None:
        self.name = name
        self.segments = segments
        self._describe = describe  # (log, offset) -> (record start, dict, filler range | None)
        self._walk_from = walk_from  # (log, offset) -> iterator of (offset, size)
        self._open: tuple[_Seg, object] | None = None
        self.damage: list[dict] = []
        self.notes: list[str] = []
        #: the gaps and damage of this side as validate states them (RocketMQ)
        self.findings: list[Finding] = []

    def add_damage(self, path: Path, position: int, offset: int, error: MqError | str, finding: Finding | None = None) -> None:
        """A broken record at ``position`` of ``path``; ``finding``: validate's finding for it
        (its code and the position of the field that is wrong)."""
        if not any(d["offset"] == offset for d in self.damage):
            entry: dict = {"file": str(path), "position": position, "offset": offset, "error": str(error)}
            if finding is not None:
                entry.update(code=finding.code, code_position=finding.position, finding=_finding_text(finding))
            self.damage.append(entry)
        if finding is not None and finding not in self.findings:
            self.findings.append(finding)

    @property
    def start(self) -> int:
        return self.segments[0].base if self.segments else 0

    @property
    def end(self) -> int:
        return self.segments[-1].base + self.segments[-1].size if self.segments else 0

    def segment_for(self, offset: int) -> _Seg | None:
        for seg in reversed(self.segments):
            if seg.base <= offset < seg.base + seg.size:
                return seg
            if seg.base <= offset:
                return None
        return None

    def reader(self, seg: _Seg):
        if self._open is None or self._open[0] is not seg:
            self.close()
            self._open = (seg, seg.opener())
        return self._open[1]

    def read(self, offset: int, size: int) -> bytes:
        """Bytes from ``offset`` up to ``size`` but never past its segment's end."""
        seg = self.segment_for(offset)
        if seg is None:
            return b""
        size = min(size, seg.base + seg.size - offset)
        return self.reader(seg).pread(offset - seg.base, size)  # type: ignore[attr-defined]

    def describe(self, offset: int):
        return self._describe(self, offset)

    def walk_from(self, offset: int) -> Iterator[tuple[int, int]]:
        return self._walk_from(self, offset)

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()  # type: ignore[attr-defined]
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


def compare_byte_logs(a: _ByteLog, b: _ByteLog, *, progress=None) -> LogDiff:
    progress = progress or (lambda n: None)
    diff = LogDiff(a.name, {"start": a.start, "end": a.end}, {"start": b.start, "end": b.end}, "byte")
    lo, hi = max(a.start, b.start), min(a.end, b.end)
    a_has, b_has = a.end > a.start, b.end > b.start
    if not a_has or not b_has:
        diff.verdict = "identical" if not a_has and not b_has else ("b-prefix" if a_has else "a-prefix")
        if a_has:
            diff.only_a = _extra(a, a.start, a.end)
        if b_has:
            diff.only_b = _extra(b, b.start, b.end)
        return _with_damage(diff, a, b)
    if lo >= hi:
        diff.verdict = "disjoint"
        diff.notes.append("the two logs share no offset: nothing to compare")
        return _with_damage(diff, a, b)
    if a.start < b.start:
        diff.only_a_before = Extra(a.start, b.start, bytes=b.start - a.start)
    elif b.start < a.start:
        diff.only_b_before = Extra(b.start, a.start, bytes=a.start - b.start)
    pos = lo
    skipped_filler = 0
    while pos < hi:
        want = min(CHUNK_SIZE, hi - pos)
        da, db = a.read(pos, want), b.read(pos, want)
        n = min(len(da), len(db))
        if n == 0:
            diff.problems.append(f"offset {pos}: no segment holds it on side {'A' if not da else 'B'}")
            diff.verdict = "diverged"
            diff.divergence = {"offset": pos, "byte_offset": pos, "a": None, "b": None}
            break
        if da[:n] != db[:n]:
            chunk_start = pos
            at = pos + _first_difference(da[:n], db[:n])
            start_a, rec_a, filler_a = a.describe(at)
            start_b, rec_b, filler_b = b.describe(at)
            if filler_a is not None and filler_a == filler_b:
                skipped_filler += 1
                progress(filler_a[1] - pos)
                pos = filler_a[1]  # END_OF_FILE filler: not data
                continue
            diff.verdict = "diverged"
            progress(at - pos)
            pos = at
            diff.divergence = {
                "offset": min(start_a, start_b),
                "byte_offset": at,
                "a_byte": f"0x{da[at - chunk_start]:02X}",
                "b_byte": f"0x{db[at - chunk_start]:02X}",
                "a": rec_a,
                "b": rec_b,
            }
            break
        pos += n
        progress(n)
    diff.compared = {"from": lo, "to": pos, "bytes": pos - lo}
    if skipped_filler:
        diff.notes.append(f"{skipped_filler} END_OF_FILE filler region(s) differ (not data)")
    if diff.verdict == "diverged":
        diff.only_a = _extra(a, diff.divergence["offset"], a.end) if diff.divergence["a"] is not None else None
        diff.only_b = _extra(b, diff.divergence["offset"], b.end) if diff.divergence["b"] is not None else None
        return _with_damage(diff, a, b)
    if a.end > b.end:
        diff.verdict = "b-prefix"
        diff.only_a = _extra(a, b.end, a.end)
    elif b.end > a.end:
        diff.verdict = "a-prefix"
        diff.only_b = _extra(b, a.end, b.end)
    return _with_damage(diff, a, b)


def _with_damage(diff: LogDiff, a: _ByteLog, b: _ByteLog) -> LogDiff:
    """Copy both sides' damage and notes into ``diff``; with no divergence found, a side holding
    a broken record makes the verdict ``damaged``: a copy with damage is never a clean prefix."""
    diff.damage = [{"side": "A", **d} for d in a.damage] + [{"side": "B", **d} for d in b.damage]
    diff.notes = [*(f"A: {n}" for n in a.notes), *(f"B: {n}" for n in b.notes), *diff.notes]
    diff.findings = [*(("A", f) for f in a.findings), *(("B", f) for f in b.findings)]
    return _damaged_verdict(diff)


def _damaged_verdict(diff: LogDiff) -> LogDiff:
    if (diff.damage or diff.errors) and diff.verdict not in ("diverged", "disjoint"):
        diff.verdict = "damaged"
    return diff


def _torn_note(path: Path, position: int, what: str) -> str:
    return f"torn tail at {path}:{position}: {what} (a crash while writing): the data ends there"


def _extra(log: _ByteLog, start: int, end: int) -> Extra:
    extra = Extra(start, end)
    for _offset, size in log.walk_from(start):
        extra.records += 1
        extra.bytes += size
    return extra


# --- RocketMQ ------------------------------------------------------------------------------------


def _rocketmq_log(path: Path, problems: list[str]) -> _ByteLog:
    """The CommitLog of the store at ``path``, ending where its data ends (in
    ``store.model.rocketmq.last_data_file``, the broker's last mapped file).  How that file ends is
    stated as validate states it (``commitlog_file_findings``): a torn tail is the end (noted, a
    warning); garbage after the valid end is a finding, and so is a broken "record" there that is
    bytes the broker overwrites (a warning, ``ignored_tail``); a broken record is damage, and the log then
    goes on to the file's last non-zero byte, so the damaged bytes are compared too.  The
    directory's gaps and wrong sizes (``commitlog_findings``) and the records that break their
    queue's QUEUEOFFSET sequence (``store.model.queue_offsets``: diff reads every byte of the
    side's records) are findings of the side."""
    from mqtool.store import rocketmq as rmq
    from mqtool.store.model import queue_offsets
    from mqtool.store.model import rocketmq as model

    root = rmq.find_rocketmq_root(path) or path
    store = rmq.open_store(root)
    findings = model.segment_findings_on_path(model.commitlog_findings(store), [s.path for s in store.commitlog])
    segments = [s for s in store.commitlog[: model.last_data_file(store.commitlog) + 1] if s.size > 0]
    valid: list[_Seg] = []
    damage = torn = None
    if segments:
        seg = segments[-1]
        with ReadOnlyFile(seg.path) as f:
            walk = rmq.CommitLogFileWalk(f, last=True, file_size=store.commitlog_file_size, base=seg.base)
            for _ in walk:
                pass
            last_end = walk.valid_end
            if walk.end is not None and walk.end.kind == "blank":
                last_end = walk.end.position + walk.end.length
            for x in model.commitlog_file_findings(f, walk, store.commitlog_file_size, last=True):
                if x.code == "RMQ-CL-TORN-TAIL":
                    torn = _torn_note(seg.path, walk.valid_end, walk.torn.what if walk.torn is not None else x.message)
                    findings.append(x)
                elif x.code in ("RMQ-CL-GARBAGE", "RMQ-CL-BLANK") or x.level is not Severity.error:
                    # after the data: not compared (a warning: bytes the broker overwrites, ``ignored_tail``)
                    findings.append(x)
                else:
                    bad = walk.valid_end
                    error = walk.error if walk.error is not None else model.finding_location(x)
                    problems.append(str(error))
                    damage = (seg.path, bad, seg.base + bad, error, x)
                    extent = rmq.nonzero_extent(f, bad)
                    last_end = max(bad + 1, extent[1] if extent else bad)
        for s in segments[:-1]:
            valid.append(_Seg(s.base, s.size, s.path, lambda p=s.path: ReadOnlyFile(p)))
        valid.append(_Seg(seg.base, last_end, seg.path, lambda p=seg.path: ReadOnlyFile(p)))
    findings.extend(model.preallocated_findings(store))  # zeros, or validate's RMQ-CL-GARBAGE
    findings.extend(queue_offsets.commitlog_queue_offsets(store).findings)
    log = _ByteLog(f"{root}/commitlog", valid, _rocketmq_describe, _rocketmq_walk)
    log.findings.extend(findings)
    log.file_size = store.commitlog_file_size  # type: ignore[attr-defined]
    if damage is not None:
        log.add_damage(*damage)
    if torn is not None:
        log.notes.append(torn)
    return log


def _finding_text(finding: Finding) -> str:
    from mqtool.store.model import rocketmq as model

    return model.finding_text(finding)


def _rocketmq_damage(log: _ByteLog, f: ReadOnlyFile, seg: _Seg, walk) -> None:
    """The broken record a walk of ``seg`` stopped at, with validate's finding for it."""
    from mqtool.store.model import rocketmq as model

    size = getattr(log, "file_size", None) or f.size
    finding = model.broken_record_finding(f, str(seg.path), walk.valid_end, walk.error, size, False)
    log.add_damage(seg.path, walk.valid_end, seg.base + walk.valid_end, walk.error, finding)


def _rocketmq_missing(log: _ByteLog, offset: int) -> dict | None:
    """What a side holds at ``offset`` where no file of it does: the gap or the short file
    validate names (``store.model.rocketmq``), or None (the data ends)."""
    from mqtool.store.model import rocketmq as model

    finding = model.gap_holding(log.findings, offset)
    if finding is None:
        size = getattr(log, "file_size", None)
        for x in log.findings:
            if x.code == "RMQ-FILE-SIZE" and size and log.segments:
                base = next((s.base for s in log.segments if str(s.path) == x.path), None)
                if base is not None and base <= offset < base + size:
                    finding = x
    if finding is None:
        return None
    return {"commitlog_offset": offset, "missing": True, "code": finding.code, "file": finding.path, "position": finding.position, "error": finding.message}


def _rocketmq_describe(log: _ByteLog, offset: int):
    """(record start, record dict, END_OF_FILE filler range or None) for the byte at ``offset``."""
    from mqtool.formats.rocketmq.commitlog import encode_offset_msg_id
    from mqtool.store import rocketmq as rmq
    from mqtool.store.model import rocketmq as model

    seg = log.segment_for(offset)
    if seg is None:
        return offset, None, None
    with ReadOnlyFile(seg.path) as f:
        walk = rmq.CommitLogFileWalk(f, base=seg.base)
        for pos, rec in walk:
            if seg.base + pos + rec.total_size > offset:
                # what validate says of the record itself (a PHYSICALOFFSET that is not its address...)
                judged = model.record_findings(str(seg.path), seg.base, *walk.odd[-1]) if walk.odd and walk.odd[-1][0] == pos else []
                found = judged[0] if judged else None
                if found is not None:
                    log.add_damage(seg.path, pos, seg.base + pos, found.message, found)
                return seg.base + pos, {
                    "commitlog_offset": seg.base + pos,
                    "file": str(seg.path),
                    "position": pos,
                    "size": rec.total_size,
                    "topic": rec.topic,
                    "queue_id": rec.queue_id,
                    "queue_offset": rec.queue_offset,
                    "store_timestamp": rec.store_timestamp,
                    "msg_id": encode_offset_msg_id(rec.store_host, rec.physical_offset),
                    "body_crc": rec.body_crc,
                    **({"code": found.code, "code_position": found.position, "finding": _finding_text(found)} if found is not None else {}),
                }, None
        end = walk.end
        if end is not None and end.kind == "blank":
            start = seg.base + end.position
            if offset >= start + 8:
                return start, {"commitlog_offset": start, "size": end.length, "kind": "END_OF_FILE"}, (start + 8, start + end.length)
            return start, {"commitlog_offset": start, "size": end.length, "kind": "END_OF_FILE"}, None
        where = seg.base + walk.valid_end
        what = str(walk.error) if walk.error is not None else f"no valid record (data ends: {end.kind if end else '?'})"
        if walk.error is not None:
            _rocketmq_damage(log, f, seg, walk)
            found = next(d for d in log.damage if d["offset"] == where)
            return where, {
                "commitlog_offset": where,
                "file": str(seg.path),
                "position": walk.valid_end,
                "error": what,
                **{k: found[k] for k in ("code", "code_position", "finding") if k in found},
            }, None
        if seg is not log.segments[-1]:
            # a file before the last whose records stop early (zeros, the end of the file): how it
            # ends as validate states it (RMQ-CL-NO-BLANK); the last file's end is stated by _rocketmq_log
            size = getattr(log, "file_size", None)
            for finding in model.commitlog_file_findings(f, walk, size, last=False):
                log.add_damage(seg.path, walk.valid_end, where, finding.message, finding)
                return where, {
                    "commitlog_offset": where,
                    "file": str(seg.path),
                    "position": walk.valid_end,
                    "error": what,
                    "code": finding.code,
                    "code_position": finding.position,
                    "finding": _finding_text(finding),
                }, None
        return where, {"commitlog_offset": where, "file": str(seg.path), "position": walk.valid_end, "error": what}, None


def _rocketmq_walk(log: _ByteLog, offset: int) -> Iterator[tuple[int, int]]:
    from mqtool.store import rocketmq as rmq

    pos = offset
    while True:
        seg = log.segment_for(pos)
        if seg is None:
            return
        with ReadOnlyFile(seg.path) as f:
            walk = rmq.CommitLogFileWalk(f, pos - seg.base, base=seg.base)
            for p, rec in walk:
                if seg.base + p >= seg.base + seg.size:
                    return
                yield seg.base + p, rec.total_size
            if walk.error is not None and walk.valid_end < seg.size:
                _rocketmq_damage(log, f, seg, walk)  # inside the data this side holds
        if walk.end is None or walk.end.kind != "blank":
            return
        pos = seg.base + walk.end.position + walk.end.length


# --- Jafka / MetaQ ----------------------------------------------------------------------------


def _legacy_logs(path: Path, layout: str, problems: list[str]) -> dict[str, _ByteLog]:
    """A byte log per partition, ending where its data ends: a broken message in the last
    segment is a torn tail (the end) or damage (the log goes on to the last non-zero byte)."""
    from mqtool.store.legacy import SegmentWalk, is_torn_message, nonzero_extent

    if layout == "jafka":
        from mqtool.store import jafka as mod

        data = mod.open_jafka(path)
    else:
        from mqtool.store import metaq as mod  # type: ignore[no-redef]

        data = mod.open_metaq(path)
    logs = {}
    for part in data.partitions:
        segs = list(part.segments)
        valid: list[_Seg] = []
        damage = note = None
        for i, seg in enumerate(segs):
            size = seg.size or 0
            if i == len(segs) - 1:
                with mod.open_segment(seg) as reader:
                    walk = SegmentWalk(reader, mod.FRAMING)
                    for _ in walk:
                        pass
                    size = walk.valid_end
                    if walk.error is not None:
                        if is_torn_message(reader, size, mod.FRAMING):
                            note = _torn_note(seg.path, size, f"a message starts here but not all of its bytes were written ({reader.size - size} bytes left)")
                        else:
                            problems.append(str(walk.error))
                            damage = (seg.path, size, seg.start_offset + size, walk.error)
                            extent = nonzero_extent(reader, size)
                            size = max(size + 1, extent[1] if extent else size)
            valid.append(_Seg(seg.start_offset, size, seg.path, lambda s=seg: mod.open_segment(s)))

        def describe(log: _ByteLog, offset: int, mod=mod):
            seg = log.segment_for(offset)
            if seg is None:
                return offset, None, None
            with seg.opener() as reader:  # type: ignore[attr-defined]
                walk = SegmentWalk(reader, mod.FRAMING)
                for pos, message in walk:
                    size = message.serialized_size if layout == "jafka" else message.size
                    if seg.base + pos + size > offset:
                        info = {"offset": seg.base + pos, "file": str(seg.path), "position": pos, "size": size}
                        if layout == "metaq":
                            info.update(id=message.id, flag=message.flag, checksum=message.checksum)
                        else:
                            info.update(magic=message.magic, crc=message.crc)
                        return seg.base + pos, info, None
                where = seg.base + walk.valid_end
                if walk.error is not None:
                    log.add_damage(seg.path, walk.valid_end, where, walk.error)
                return where, {"offset": where, "file": str(seg.path), "position": walk.valid_end, "error": str(walk.error) if walk.error else "no valid message"}, None

        def walk_from(log: _ByteLog, offset: int, mod=mod):
            pos = offset
            while True:
                seg = log.segment_for(pos)
                if seg is None:
                    return
                with seg.opener() as reader:  # type: ignore[attr-defined]
                    walk = SegmentWalk(reader, mod.FRAMING, pos - seg.base)
                    for p, message in walk:
                        if p >= seg.size:
                            return
                        yield seg.base + p, message.serialized_size if layout == "jafka" else message.size
                if walk.error is not None and walk.valid_end < seg.size:
                    log.add_damage(seg.path, walk.valid_end, seg.base + walk.valid_end, walk.error)  # inside the data this side holds
                    return
                pos = seg.base + seg.size

        log = logs[part.name] = _ByteLog(part.name, valid, describe, walk_from)
        if damage is not None:
            log.add_damage(*damage)
        if note is not None:
            log.notes.append(note)
    return logs


# --- Kafka ------------------------------------------------------------------------------------------


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

    def describe(self) -> dict:
        if self.error is not None:
            return {"base_offset": self.offset, "file": str(self.path), "position": self.position, "error": self.error}
        h = self.header
        info = {"base_offset": self.offset, "last_offset": self.last_offset, "size": self.size, "file": str(self.path), "position": self.position}
        for name in ("partition_leader_epoch", "crc", "max_timestamp", "producer_id", "magic"):
            value = getattr(h, name, None)
            if value is not None:
                info[name] = value
        return info


def _kafka_entries(part, problems: list[str], damage: list[dict]) -> Iterator[_Entry]:
    """The partition's batches in order; a broken entry (a batch that does not decode, which is
    damage, unlike a torn tail: a ``partial`` end) is yielded as an ``_Entry`` with ``error``
    at the offset expected there, and the walk goes on with the next segment."""
    from mqtool.errors import CorruptDataError
    from mqtool.store import kafka as kstore

    expected = None
    segments = part.log_segments()
    for i, seg in enumerate(segments):
        with ReadOnlyFile(seg.log) as f:
            walk = kstore.LogFileWalk(f, mode="header")
            for pos, entry in walk:
                start = pos - walk.buffer_start
                raw = bytes(walk.buffer[start : start + entry.size])
                expected = entry.last_offset + 1
                yield _Entry(entry.offset, entry.last_offset, entry.size, raw, entry.header, pos, seg.log)
            error: MqError | None = walk.error
            if error is None and walk.end is not None and walk.end.kind == "partial" and i < len(segments) - 1:
                # a torn tail only ends the last segment; before a later one it is lost data
                error = CorruptDataError(
                    path=seg.log,
                    position=walk.end.position,
                    expected="whole entries up to the end of a segment that is not the last",
                    found=f"an entry of {walk.end.length} bytes with {f.size - walk.end.position} present",
                )
        if error is not None:
            problems.append(str(error))
            bad = walk.valid_end
            offset = expected if expected is not None and walk.count else seg.base_offset
            damage.append({"file": str(seg.log), "position": bad, "offset": offset, "error": str(error)})
            yield _Entry(offset, offset, 0, b"", None, bad, seg.log, error=str(error))


def compare_kafka_partitions(name: str, pa, pb) -> LogDiff:
    problems: list[str] = []
    damage_a: list[dict] = []
    damage_b: list[dict] = []
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
    return _damaged_verdict(diff)


# --- entry point ---------------------------------------------------------------------------------------


def diff_stores(path_a: str | Path, path_b: str | Path, layout: str, *, progress=None) -> DiffReport:
    """Compare two copies of a store of ``layout`` (both detected as the same layout)."""
    path_a, path_b = Path(path_a), Path(path_b)
    report = DiffReport(layout, str(path_a), str(path_b))
    if layout == "rocketmq":
        pa: list[str] = []
        pb: list[str] = []
        la, lb = _rocketmq_log(path_a, pa), _rocketmq_log(path_b, pb)
        try:
            d = compare_byte_logs(la, lb, progress=progress)
        finally:
            la.close()
            lb.close()
        d.name = "commitlog"
        d.problems = [*(f"A: {p}" for p in pa), *(f"B: {p}" for p in pb), *d.problems]
        div = d.divergence
        if div is not None and "a_byte" not in div:  # a side holds no file there: say why, as validate does
            at = div["byte_offset"]
            for key, log in (("a", la), ("b", lb)):
                if div[key] is None:
                    div[key] = log.describe(at)[1] if log.segment_for(at) is not None else _rocketmq_missing(log, at)
                    log.close()
        report.logs.append(d)
        return report
    if layout == "kafka":
        from mqtool.store import kafka as kstore

        sa, sb = kstore.open_kafka(path_a), kstore.open_kafka(path_b)
        if len(sa.partitions) == 1 and len(sb.partitions) == 1 and sa.kind != "log-dir" and sb.kind != "log-dir":
            part_a, part_b = sa.partitions[0], sb.partitions[0]
            pairs = [(part_a.name if part_a.name == part_b.name else f"{part_a.name} / {part_b.name}", part_a, part_b)]
        else:
            by_a = {p.name: p for p in sa.partitions}
            by_b = {p.name: p for p in sb.partitions}
            pairs = [(n, by_a.get(n), by_b.get(n)) for n in sorted(set(by_a) | set(by_b))]
        for name, part_a, part_b in pairs:
            if part_a is None or part_b is None:
                d = LogDiff(name, {"start": None, "end": None}, {"start": None, "end": None}, "offset", verdict="only-a" if part_b is None else "only-b")
                d.notes.append(f"partition only in {'A' if part_b is None else 'B'}")
                report.logs.append(d)
                continue
            report.logs.append(compare_kafka_partitions(name, part_a, part_b))
        _attach_findings(report, path_a, path_b, layout)
        return report
    if layout in ("jafka", "metaq"):
        pa, pb = [], []
        logs_a, logs_b = _legacy_logs(path_a, layout, pa), _legacy_logs(path_b, layout, pb)
        if len(logs_a) == 1 and len(logs_b) == 1 and set(logs_a) != set(logs_b):
            (na, la), (nb, lb) = next(iter(logs_a.items())), next(iter(logs_b.items()))
            logs_a, logs_b = {f"{na} / {nb}": la}, {f"{na} / {nb}": lb}
        for name in sorted(set(logs_a) | set(logs_b)):
            la, lb = logs_a.get(name), logs_b.get(name)
            if la is None or lb is None:
                d = LogDiff(name, {}, {}, "byte", verdict="only-a" if lb is None else "only-b")
                d.notes.append(f"partition only in {'A' if lb is None else 'B'}")
                report.logs.append(d)
                continue
            try:
                d = compare_byte_logs(la, lb, progress=progress)
            finally:
                la.close()
                lb.close()
            d.name = name
            report.logs.append(d)
        if report.logs:
            report.logs[0].problems[:0] = [*(f"A: {p}" for p in pa), *(f"B: {p}" for p in pb)]
        _attach_findings(report, path_a, path_b, layout)
        return report
    from mqtool.errors import UnsupportedFormatError

    raise UnsupportedFormatError(f"`mqtool diff` does not handle the {layout} layout", expected="rocketmq, kafka, jafka or metaq", found=layout)


def _attach_findings(report: DiffReport, path_a: Path, path_b: Path, layout: str) -> None:
    """Kafka, Jafka, MetaQ: every gap and damage of either side as validate states it
    (``ops.log_findings``), given to the compared log of its partition (the first log when a
    side is one partition, or no log holds the partition's name): errors make the diff fail."""
    from mqtool.ops import log_findings

    if not report.logs:
        return
    for side, root in (("A", path_a), ("B", path_b)):
        for finding in log_findings.on_path(root, layout):
            where = Path(finding.path)
            rel = where.relative_to(root).parts if where.is_relative_to(root) else ()
            name = rel[0] if rel else None
            log = next((d for d in report.logs if name is not None and name in d.name.split(" / ")), report.logs[0])
            log.findings.append((side, finding))


def check_same_layout(layout_a: str, layout_b: str, path_b: Path) -> None:
    if layout_a != layout_b:
        raise StoreLayoutError(expected=f"two stores of one layout ({layout_a})", found=layout_b, path=path_b)


__all__ = ["DiffReport", "LogDiff", "Extra", "diff_stores", "compare_byte_logs", "compare_kafka_partitions", "check_same_layout", "MqError"]
