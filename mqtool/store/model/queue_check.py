"""The check of one RocketMQ ConsumeQueue: every unit against the record it points at.

A ConsumeQueue (upstream ``ConsumeQueue``) is a run of 20-byte units per topic/queue -- commitlog
offset, size, tagsCode -- in files of ``mappedFileSizeConsumeQueue`` bytes; unit ``n`` of the
queue is queue offset ``n``.  :func:`check_queue` reads one queue's files and judges them as the
broker's ``ConsumeQueue.load``/``recover`` and its readers do:

* the units end at the first one with a negative offset or a size <= 0 (``CqWalker``); units
  after that end are dropped by the broker (RMQ-CQ-AFTER-END), and how the queue ends is the store
  model's rule (``model.cq_end_finding``);
* a unit below the CommitLog's first file is expired by retention (one RMQ-CQ-EXPIRED per queue);
  one at or past the end of valid CommitLog data is RMQ-CQ-PAST-END (or, in a live store, a record
  appended since the CommitLog was read); one that does not name a record is RMQ-CQ-NOT-A-RECORD;
  one whose record is of another size, queue or QUEUEOFFSET is RMQ-CQ-MISMATCH; a tagsCode other
  than the record's (``CommitLog.checkMessageAndReturnSize``'s tagsCode: the TAGS hash, or the
  delivery time in ``SCHEDULE_TOPIC_XXXX``; a ``ConsumeQueueExt`` address resolved first) is
  RMQ-CQ-TAGS;
* the queue's end against the CommitLog's last QUEUEOFFSET of the queue: the store model's lag
  rule (``queue_offsets.queue_lag_finding``).

Units the CommitLog phase already verified in bulk against its columns (``QueueTask.verified``)
and units pointing into ranges it already reported (``QueueTask.damaged``) are not read back.
The result (:class:`QueueResult`) is picklable: validate runs one task per queue in worker
processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.findings.code_ids import (
    RMQ_CQ_AFTER_END,
    RMQ_CQ_EXPIRED,
    RMQ_CQ_MISMATCH,
    RMQ_CQ_NOT_A_RECORD,
    RMQ_CQ_PAST_END,
    RMQ_CQ_TAGS,
    RMQ_FILE_UNREADABLE,
)
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq.unit_columns import cq_units
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import queue_offsets as queue_offsets_model
from mqtool.store.model import rocketmq as model
from mqtool.store.model.commitlog_check import in_ranges, rebased_store, written_since
from mqtool.store.writer import cq_tags_code


@dataclass(frozen=True)
class QueueTask:
    root: str
    topic: str
    queue_id: int
    cq_file_size: int
    commitlog_file_size: int
    commitlog_min: int
    commitlog_end: int  # commitlog offset where valid data ends
    max_queue_offset_in_commitlog: int | None  # last QUEUEOFFSET seen in the CommitLog for this queue
    ext_dir: str | None
    damaged: tuple[tuple[int, int], ...] = ()  # commitlog ranges already reported (see CommitLogFileResult)
    rebased: tuple[tuple[str, int], ...] = ()  # misnamed CommitLog files and the base their records say
    live: bool = False  # a writer holds the store's lock
    #: Queue-offset runs [first, stop) whose units the CommitLog phase verified against their
    #: records (fast path): they need no per-unit check.
    verified: tuple[tuple[int, int], ...] = ()


@dataclass
class QueueResult:
    topic: str
    queue_id: int
    findings: list[Finding] = field(default_factory=list)
    files: list[tuple[str, int, int, int]] = field(default_factory=list)  # path, size, units, valid_bytes
    min_offset: int = 0
    max_offset: int = 0
    expired: int = 0
    in_progress: int = 0  # units pointing at records appended after the CommitLog was read


def check_queue(task: QueueTask) -> QueueResult:
    res = QueueResult(task.topic, task.queue_id)
    store = rebased_store(task.root, task.commitlog_file_size, task.rebased)
    qdir = rmq.queue_dir(store, task.topic, task.queue_id)
    segments = rmq.list_segments(qdir)
    ext = _ExtReader(Path(task.ext_dir)) if task.ext_dir else None
    ended_at: tuple[str, int] | None = None
    first_real: int | None = None
    max_offset = segments[0].base // cqf.CQ_UNIT_SIZE if segments else 0
    # Records were CRC-checked in the CommitLog phase: read them back without it.
    with rmq.CommitLogReader(store, check_crc=False) as reader:
        for seg in segments:
            if seg.size == 0:
                res.files.append((str(seg.path), 0, 0, 0))
                continue
            try:
                with ReadOnlyFile(seg.path) as f:
                    data = f.read_all()
            except MqError as exc:
                res.findings.append(Finding(RMQ_FILE_UNREADABLE, str(seg.path), None, str(exc)))
                continue
            if ended_at is not None:
                extent = _nonzero_units(data, 0)
                if extent is not None:
                    res.findings.append(
                        Finding(
                            RMQ_CQ_AFTER_END,
                            str(seg.path),
                            extent[0],
                            f"units after the end of the queue at {ended_at[0]}:{ended_at[1]} (the broker drops them)",
                            length=extent[1] - extent[0],
                        )
                    )
                res.files.append((str(seg.path), seg.size, 0, 0))
                continue
            # The units, as CqWalker reads them (the first with offset < 0 or size <= 0 ends the
            # queue), checked in bulk: only units the CommitLog phase did not verify against
            # their records are checked one by one.
            arr = cq_units(data)
            bad = (arr["offset"] < 0) | (arr["size"] <= 0)
            units = int(np.argmax(bad)) if bad.any() else len(arr)
            valid = arr[:units]
            real = ~((valid["offset"] == 0) & (valid["size"] == cqf.FILLER_SIZE) & (valid["tags_code"] == 0))
            first_qoff = cqf.cq_queue_offset(seg.base, 0)
            if first_real is None:
                live_units = np.flatnonzero(real & (valid["offset"] >= task.commitlog_min))
                if len(live_units):
                    first_real = first_qoff + int(live_units[0])  # correctMinOffset: the first unit not expired by retention
            to_check = real & ~_in_runs(task.verified, first_qoff + np.arange(units, dtype=np.int64))
            for i in np.flatnonzero(to_check).tolist():
                unit = cqf.CqUnit(int(valid["offset"][i]), int(valid["size"][i]), int(valid["tags_code"][i]))
                _check_unit(task, reader, ext, str(seg.path), i * cqf.CQ_UNIT_SIZE, first_qoff + i, unit, res)
            end = cqf.CqWalker(data, units * cqf.CQ_UNIT_SIZE).scan()
            res.files.append((str(seg.path), seg.size, units, end.position))
            max_offset = cqf.cq_queue_offset(seg.base, end.position)
            if end.kind == "eof":
                continue
            ended_at = (str(seg.path), end.position)
            end_finding = model.cq_end_finding(str(seg.path), end)
            if end_finding is not None:
                res.findings.append(end_finding)
            extent = None
            if end.kind != "partial":
                extent = _nonzero_units(data, end.position + (cqf.CQ_UNIT_SIZE if end.kind == "invalid" else 0))
            if extent is not None:
                res.findings.append(
                    Finding(
                        RMQ_CQ_AFTER_END,
                        str(seg.path),
                        extent[0],
                        f"non-zero units after the end of the queue at {end.position} (the broker drops them)",
                        length=extent[1] - extent[0],
                    )
                )
    if ext is not None:
        ext.close()
    if res.expired:
        res.findings.append(
            Finding(
                RMQ_CQ_EXPIRED,
                str(qdir),
                None,
                f"{res.expired} unit(s) point below the CommitLog's first file ({task.commitlog_min}): expired by retention",
            )
        )
    res.min_offset = first_real if first_real is not None else max_offset
    res.max_offset = max_offset
    lag = queue_offsets_model.queue_lag_finding(store, task.topic, task.queue_id, task.max_queue_offset_in_commitlog, max_offset, live=task.live)
    if lag is not None:
        res.findings.append(lag)
    return res


def _nonzero_units(data: bytes, start: int) -> tuple[int, int] | None:
    """(first, end) of the units holding non-zero bytes in ``data[start:]``, unit-aligned from
    ``start`` (a unit-aligned position), or None when all zero."""
    if not np.frombuffer(data, dtype=np.uint8)[start:].any():  # the common case, at memory speed
        return None
    rest = data[start:]
    stripped = rest.lstrip(b"\x00")
    size = cqf.CQ_UNIT_SIZE
    first = (len(rest) - len(stripped)) // size * size
    last = -(-len(rest.rstrip(b"\x00")) // size) * size
    return start + first, start + min(last, len(rest))


def _check_unit(task: QueueTask, reader: rmq.CommitLogReader, ext: _ExtReader | None, path: str, pos: int, qoff: int, unit: cqf.CqUnit, res: QueueResult) -> None:
    off = unit.commitlog_offset
    if off < task.commitlog_min:
        res.expired += 1
        return
    if in_ranges(task.damaged, off):
        return  # the CommitLog finding there says what is wrong with this record
    if off >= task.commitlog_end and task.live and written_since(reader, off):
        res.in_progress += 1
        return
    if off >= task.commitlog_end:
        res.findings.append(
            Finding(
                RMQ_CQ_PAST_END,
                path,
                pos,
                f"queue offset {qoff}: expected a commitlog offset below {task.commitlog_end} (end of valid CommitLog data), found {off}",
            )
        )
        return
    try:
        rec = reader.read(off, size_hint=unit.size if 0 < unit.size <= rmq.MAX_RECORD_SIZE else 4096)
    except MqError as exc:
        res.findings.append(Finding(RMQ_CQ_NOT_A_RECORD, path, pos, f"queue offset {qoff}: commitlog offset {off} is not the start of a valid record ({exc})"))
        return
    if rec.physical_offset != off:
        res.findings.append(
            Finding(
                RMQ_CQ_NOT_A_RECORD,
                path,
                pos,
                f"queue offset {qoff}: the record at commitlog offset {off} says PHYSICALOFFSET {rec.physical_offset}",
            )
        )
        return
    problems = []
    if rec.total_size != unit.size:
        problems.append(f"size {unit.size} vs record TOTALSIZE {rec.total_size}")
    if rec.topic != task.topic or rec.queue_id != task.queue_id:
        problems.append(f"queue {task.topic}/{task.queue_id} vs record {rec.topic}/{rec.queue_id}")
    if rec.queue_offset != qoff:
        problems.append(f"queue offset {qoff} vs record QUEUEOFFSET {rec.queue_offset}")
    if problems:
        res.findings.append(Finding(RMQ_CQ_MISMATCH, path, pos, f"unit at queue offset {qoff} -> commitlog offset {off}: " + "; ".join(problems)))
        return
    if rec.dropped_properties and "TAGS" not in rec.properties:
        return  # its tags may be in a segment the broker drops (RMQ-CL-PROPERTIES says so)
    expected_tags = cq_tags_code(rec)
    tags = unit.tags_code
    if cqf.is_ext_address(tags):
        if ext is None:
            return
        ext_unit = ext.read(cqf.undecorate_ext_address(tags))
        if ext_unit is None:
            res.findings.append(Finding(RMQ_CQ_TAGS, path, pos + 12, f"queue offset {qoff}: ConsumeQueueExt address {tags} points at no ext unit"))
            return
        tags = ext_unit.tags_code
    if tags != expected_tags:
        what = "delivery time (store time + delay level)" if rec.topic == "SCHEDULE_TOPIC_XXXX" else f"TAGS {rec.tags!r} hash"
        res.findings.append(Finding(RMQ_CQ_TAGS, path, pos + 12, f"queue offset {qoff}: expected tagsCode {expected_tags} ({what}), found {tags}"))


class _ExtReader:
    """ConsumeQueueExt units by ext offset (file size detected from the files)."""

    def __init__(self, directory: Path) -> None:
        self.segments = rmq.list_segments(directory)
        self.file_size = rmq.detect_file_size(self.segments) or cqf.CQ_EXT_FILE_SIZE
        self._cache: tuple[Path, bytes] | None = None

    def read(self, ext_offset: int) -> cqf.CqExtUnit | None:
        for seg in reversed(self.segments):
            if seg.base <= ext_offset < seg.base + seg.size:
                if self._cache is None or self._cache[0] != seg.path:
                    with ReadOnlyFile(seg.path) as f:
                        self._cache = (seg.path, f.read_all())
                try:
                    return cqf.decode_cq_ext_unit(self._cache[1], ext_offset - seg.base)
                except MqError:
                    return None
        return None

    def close(self) -> None:
        self._cache = None


def _in_runs(runs: tuple[tuple[int, int], ...], values: np.ndarray) -> np.ndarray:
    """Which ``values`` lie in one of the sorted, disjoint ``[start, stop)`` ``runs``."""
    if not runs or not len(values):
        return np.zeros(len(values), dtype=bool)
    starts = np.array([a for a, _ in runs], dtype=np.int64)
    stops = np.array([b for _, b in runs], dtype=np.int64)
    at = np.searchsorted(starts, values, side="right") - 1
    return (at >= 0) & (values < stops[np.maximum(at, 0)])
