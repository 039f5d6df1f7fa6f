"""diff of two RocketMQ CommitLogs: each side read once, by the store model's reading.

A side's CommitLog is read as validate reads it for the findings diff states: the directory's
gaps and wrong sizes (``store.model.rocketmq.commitlog_findings``), every data file's records for
their queues' QUEUEOFFSET sequences (``store.model.queue_offsets``: the files before the last
through ``file_queue_offsets``, the last one through the store model's reading of a file,
``store.model.commitlog.read_file_rows``, which also says how the file ends and states it as
validate does), and the pre-allocated files (``preallocated_findings``).  That reading is watched (``store.files.observe_reads``) and its
bytes kept as block digests (``ops.diff.digest``), which the comparison (``ops.diff.bytelog``)
compares instead of reading the CommitLog again.  Only what the comparison has to look at
closer is read again: the blocks where the two sides differ, the records there (to describe
them), and the records one side holds past the other's end (to count them), both decoded by the
model's precise reading (``store.model.commitlog.read_file_records``).

Where a side's data ends is stated as validate states it: a torn tail is the end (noted, a
warning); garbage after the valid end is a finding, and so is a broken "record" there that is
bytes the broker overwrites (a warning, ``ignored_tail``); a broken record is damage, and the log
then goes on to the file's last non-zero byte, so the damaged bytes are compared too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mqtool.errors import MqError
from mqtool.findings import Severity, finding_location, finding_text
from mqtool.findings.code_ids import RMQ_CL_BLANK, RMQ_CL_GARBAGE, RMQ_CL_TORN_TAIL, RMQ_FILE_SIZE
from mqtool.ops.diff.bytelog import ByteLog, Seg
from mqtool.ops.diff.digest import ReadDigests
from mqtool.ops.diff.report import torn_note
from mqtool.store.files import ReadOnlyFile, nonzero_extent, observe_reads
from mqtool.store.model import commitlog as reading


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
            with ReadOnlyFile(seg.path) as f:
                # the last file's one reading: its records' queue offsets and how it ends
                end = reading.file_end(reading.read_file_rows(f, seg.base, file_size=store.commitlog_file_size, last=True, records=False))
                assert end.queue_offsets is not None  # a data file's reading follows its queue offsets
                offsets.add_file(end.queue_offsets, seg.base, store.commitlog_file_size)
                last_end = end.valid_end
                if end.end is not None and end.end.kind == "blank":
                    last_end = end.end.position + end.end.length
                for x in end.findings:
                    if x.code == RMQ_CL_TORN_TAIL:
                        torn = torn_note(seg.path, end.valid_end, end.torn.what if end.torn is not None else x.message)
                        findings.append(x)
                    elif x.code in (RMQ_CL_GARBAGE, RMQ_CL_BLANK) or x.level is not Severity.error:
                        # after the data: not compared (a warning: bytes the broker overwrites, ``ignored_tail``)
                        findings.append(x)
                    else:
                        bad = end.valid_end
                        error: MqError | str = end.error if end.error is not None else finding_location(x)
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


def rocketmq_damage(log: ByteLog, f: ReadOnlyFile, seg: Seg, end: reading.FileRead) -> None:
    """The broken record a reading of ``seg`` stopped at, with validate's finding for it."""
    from mqtool.store.model import rocketmq as model

    size = log.file_size or f.size
    finding = model.broken_record_finding(f, str(seg.path), end.valid_end, end.error, size, False)
    log.add_damage(seg.path, end.valid_end, seg.base + end.valid_end, end.error if end.error is not None else finding_location(finding), finding)


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

    seg = log.segment_for(offset)
    if seg is None:
        return offset, None, None
    with ReadOnlyFile(seg.path) as f:
        walk: reading.FileRead | None = None
        for item in reading.read_file_records(f, seg.base, file_size=log.file_size):
            if isinstance(item, reading.FileRead):
                walk = item
                break
            pos, rec = item.position, item.record
            if seg.base + pos + rec.total_size > offset:
                # what validate says of the record itself (a PHYSICALOFFSET that is not its address...)
                found = item.findings[0] if item.findings else None
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
        assert walk is not None
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
            for finding in walk.findings:
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
    """(commitlog offset, size) of each record from ``offset`` on, file after file (over an
    END_OF_FILE record), until the data this side holds ends; a broken record inside it is damage."""
    pos = offset
    while True:
        seg = log.segment_for(pos)
        if seg is None:
            return
        with ReadOnlyFile(seg.path) as f:
            end: reading.FileRead | None = None
            for item in reading.read_file_records(f, seg.base, pos - seg.base, judge=False):
                if isinstance(item, reading.FileRead):
                    end = item
                    break
                if seg.base + item.position >= seg.base + seg.size:
                    return
                yield seg.base + item.position, item.record.total_size
            assert end is not None
            if end.error is not None and end.valid_end < seg.size:
                rocketmq_damage(log, f, seg, end)  # inside the data this side holds
        if end.end is None or end.end.kind != "blank":
            return
        pos = seg.base + end.end.position + end.end.length
