"""diff of two RocketMQ CommitLogs: each side read once, by the store model's reading.

A side's CommitLog is read as validate reads it for the findings diff states: the directory's
gaps and wrong sizes (``store.model.rocketmq.commitlog_findings``), every data file's records for
their queues' QUEUEOFFSET sequences (``store.model.queue_offsets``: the files before the last
through ``file_queue_offsets``, the last one walked record by record, ``CommitLogFileWalk``, which
also says how the file ends: ``commitlog_file_findings``), and the pre-allocated files
(``preallocated_findings``).  That reading is watched (``store.files.observe_reads``) and its
bytes kept as block digests (``ops.diff.digest``), which the comparison (``ops.diff.bytelog``)
compares instead of reading the CommitLog again.  Only what the comparison has to look at
closer is read again: the blocks where the two sides differ, the records there (to describe
them), and the records one side holds past the other's end (to count them).

Where a side's data ends is stated as validate states it: a torn tail is the end (noted, a
warning); garbage after the valid end is a finding, and so is a broken "record" there that is
bytes the broker overwrites (a warning, ``ignored_tail``); a broken record is damage, and the log
then goes on to the file's last non-zero byte, so the damaged bytes are compared too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqtool.errors import MqError
from mqtool.findings import Severity, finding_location, finding_text
from mqtool.findings.code_ids import RMQ_CL_BLANK, RMQ_CL_GARBAGE, RMQ_CL_TORN_TAIL, RMQ_FILE_SIZE
from mqtool.ops.diff.bytelog import ByteLog, Seg
from mqtool.ops.diff.digest import ReadDigests
from mqtool.ops.diff.report import torn_note
from mqtool.store.files import ReadOnlyFile, nonzero_extent, observe_reads

if TYPE_CHECKING:
    from mqtool.store import rocketmq as rmq


def _opener(path: Path) -> Callable[[], ReadOnlyFile]:
    return lambda: ReadOnlyFile(path)


def _is_commitlog(path: str) -> bool:
    return Path(path).parent.name == "commitlog"


def rocketmq_log(path: Path, problems: list[str], progress: Callable[[int], object] | None = None) -> ByteLog:
    """The CommitLog of the store at ``path``, ending where its data ends (in
    ``store.model.rocketmq.last_data_file``, the broker's last mapped file), read once (the
    module docstring): its findings, where it ends, and the digests of what was read."""
    from mqtool.store import rocketmq as rmq
    from mqtool.store.model import queue_offsets
    from mqtool.store.model import rocketmq as model
    from mqtool.store.root_rocketmq import find_rocketmq_root

    root = find_rocketmq_root(path) or path
    digests = ReadDigests(_is_commitlog, progress)
    with observe_reads(digests.observe):
        store = rmq.open_store(root)
        findings = model.segment_findings_on_path(model.commitlog_findings(store), [s.path for s in store.commitlog])
        files = queue_offsets.data_files(store)
        offsets = queue_offsets.QueueOffsets()
        valid: list[Seg] = []
        damage = torn = None
        for _i, s in files[:-1]:
            offsets.add_file(queue_offsets.file_queue_offsets(store, s, last=False), s.base, store.commitlog_file_size)
            valid.append(Seg(s.base, s.size, s.path, _opener(s.path)))
        if files:
            seg = files[-1][1]
            file_size = store.commitlog_file_size or seg.size
            with ReadOnlyFile(seg.path) as f:
                # the last file's one walk: its records' queue offsets and how it ends
                walk = rmq.CommitLogFileWalk(f, check_crc=True, last=True, file_size=store.commitlog_file_size, base=seg.base)
                own = queue_offsets.FileQueueOffsets(str(seg.path))
                for pos, record in walk:
                    own.record(pos, record)
                own.walk_end(walk, file_size)
                offsets.add_file(own, seg.base, store.commitlog_file_size)
                last_end = walk.valid_end
                if walk.end is not None and walk.end.kind == "blank":
                    last_end = walk.end.position + walk.end.length
                for x in model.commitlog_file_findings(f, walk, store.commitlog_file_size, last=True):
                    if x.code == RMQ_CL_TORN_TAIL:
                        torn = torn_note(seg.path, walk.valid_end, walk.torn.what if walk.torn is not None else x.message)
                        findings.append(x)
                    elif x.code in (RMQ_CL_GARBAGE, RMQ_CL_BLANK) or x.level is not Severity.error:
                        # after the data: not compared (a warning: bytes the broker overwrites, ``ignored_tail``)
                        findings.append(x)
                    else:
                        bad = walk.valid_end
                        error: MqError | str = walk.error if walk.error is not None else finding_location(x)
                        problems.append(str(error))
                        damage = (seg.path, bad, seg.base + bad, error, x)
                        extent = nonzero_extent(f, bad)
                        last_end = max(bad + 1, extent[1] if extent else bad)
            valid.append(Seg(seg.base, last_end, seg.path, _opener(seg.path)))
        findings.extend(model.preallocated_findings(store))  # zeros, or validate's RMQ-CL-GARBAGE
        findings.extend(offsets.findings)
    log = ByteLog(f"{root}/commitlog", valid, rocketmq_describe, rocketmq_walk, digests)
    log.findings.extend(findings)
    log.file_size = store.commitlog_file_size
    if damage is not None:
        log.add_damage(*damage)
    if torn is not None:
        log.notes.append(torn)
    return log


def rocketmq_damage(log: ByteLog, f: ReadOnlyFile, seg: Seg, walk: rmq.CommitLogFileWalk) -> None:
    """The broken record a walk of ``seg`` stopped at, with validate's finding for it."""
    from mqtool.store.model import rocketmq as model

    size = log.file_size or f.size
    finding = model.broken_record_finding(f, str(seg.path), walk.valid_end, walk.error, size, False)
    log.add_damage(seg.path, walk.valid_end, seg.base + walk.valid_end, walk.error if walk.error is not None else finding_location(finding), finding)


def rocketmq_missing(log: ByteLog, offset: int) -> dict[str, Any] | None:
    """What a side holds at ``offset`` where no file of it does: the gap or the short file
    validate names (``store.model.rocketmq``), or None (the data ends)."""
    from mqtool.store.model import rocketmq as model

    finding = model.gap_holding(log.findings, offset)
    if finding is None:
        size = log.file_size
        for x in log.findings:
            if x.code == RMQ_FILE_SIZE and size and log.segments:
                base = next((s.base for s in log.segments if str(s.path) == x.path), None)
                if base is not None and base <= offset < base + size:
                    finding = x
    if finding is None:
        return None
    return {"commitlog_offset": offset, "missing": True, "code": finding.code, "file": finding.path, "position": finding.position, "error": finding.message}


def rocketmq_describe(log: ByteLog, offset: int) -> tuple[int, dict[str, Any] | None, tuple[int, int] | None]:
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
                return (
                    seg.base + pos,
                    {
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
                        **({"code": found.code, "code_position": found.position, "finding": finding_text(found)} if found is not None else {}),
                    },
                    None,
                )
        end = walk.end
        if end is not None and end.kind == "blank":
            start = seg.base + end.position
            if offset >= start + 8:
                return start, {"commitlog_offset": start, "size": end.length, "kind": "END_OF_FILE"}, (start + 8, start + end.length)
            return start, {"commitlog_offset": start, "size": end.length, "kind": "END_OF_FILE"}, None
        where = seg.base + walk.valid_end
        what = str(walk.error) if walk.error is not None else f"no valid record (data ends: {end.kind if end else '?'})"
        if walk.error is not None:
            rocketmq_damage(log, f, seg, walk)
            met = next(d for d in log.damage if d["offset"] == where)
            return (
                where,
                {
                    "commitlog_offset": where,
                    "file": str(seg.path),
                    "position": walk.valid_end,
                    "error": what,
                    **{k: met[k] for k in ("code", "code_position", "finding") if k in met},
                },
                None,
            )
        if seg is not log.segments[-1]:
            # a file before the last whose records stop early (zeros, the end of the file): how it
            # ends as validate states it (RMQ-CL-NO-BLANK); the last file's end is stated by _rocketmq_log
            size = log.file_size
            for finding in model.commitlog_file_findings(f, walk, size, last=False):
                log.add_damage(seg.path, walk.valid_end, where, finding.message, finding)
                return (
                    where,
                    {
                        "commitlog_offset": where,
                        "file": str(seg.path),
                        "position": walk.valid_end,
                        "error": what,
                        "code": finding.code,
                        "code_position": finding.position,
                        "finding": finding_text(finding),
                    },
                    None,
                )
        return where, {"commitlog_offset": where, "file": str(seg.path), "position": walk.valid_end, "error": what}, None


def rocketmq_walk(log: ByteLog, offset: int) -> Iterator[tuple[int, int]]:
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
                rocketmq_damage(log, f, seg, walk)  # inside the data this side holds
        if walk.end is None or walk.end.kind != "blank":
            return
        pos = seg.base + walk.end.position + walk.end.length
