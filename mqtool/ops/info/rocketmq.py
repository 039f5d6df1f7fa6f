"""info: what a store directory is, in one pass over its cheap facts.

Reads headers and the ends of files, never whole stores: the last non-empty CommitLog file is
walked to find where the valid data ends (the broker does the same at start-up), each queue's
first and last ConsumeQueue files give its offset range, IndexFile headers give their ranges.
Whether that file's records continue their queues' QUEUEOFFSET sequences is read from the files
before it only as far back as each of those queues' last record
(``store.model.queue_offsets.queue_offsets_before``; healthy files with the column walk).

The restart preview (``ops.recover.rocketmq.read_restart``: ``DefaultMessageStore.recover``,
``CommitLog.recoverNormally`` / ``recoverAbnormally`` of the broker version modelled) reads the
files the broker's recovery reads; when those include the last non-empty file, that reading is
the walk of it (record by record, each record's version hints taken), so the file is read once.
The first file's first record is one small read.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.errors import MqError
from mqtool.findings import Finding, Severity, finding_location
from mqtool.findings import end_kind as end_kind_of
from mqtool.findings.code_ids import RMQ_CHECKPOINT, RMQ_CHECKPOINT_FORMAT
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import config as cfgf
from mqtool.formats.rocketmq.commitlog import MAGIC_V2, SYSFLAG_BORNHOST_V6, SYSFLAG_COMPRESSION_MASK, SYSFLAG_STOREHOST_V6, MessageRecord
from mqtool.ops.recover.rocketmq import RecoverOptions, RestartReading, read_restart
from mqtool.store import rocketmq as rmq
from mqtool.store.files import is_directory, read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import rocketmq as model
from mqtool.store.model.queue_offsets import queue_offsets_before, read_newest_file
from mqtool.store.model.rocketmq_broker import VersionHint
from mqtool.store.rocksdb_cq import RocksCq, db_dir, is_rocksdb_cq


@dataclass
class CommitLogInfo:
    directory: str
    files: int
    file_size: int | None
    bytes_on_disk: int
    log_start_offset: int  # the first file's base: the first CommitLog offset the store holds
    log_end_offset: int  # where valid data ends (exclusive CommitLog offset)
    first_store_timestamp: int | None
    last_store_timestamp: int | None
    end_kind: str | None  # how the last file's data ends: zeros, blank, partial, eof, torn, garbage, in-progress, unreadable, corrupt
    zero_length_files: list[str]
    preallocated_files: list[str]  # files after the valid end that hold only zeros (not checked byte-wise)


@dataclass
class QueueInfo:
    topic: str
    queue_id: int
    files: int
    log_start_offset: int  # the first queue offset the ConsumeQueue holds
    log_end_offset: int  # the queue offset the next unit would take (exclusive)
    max_commitlog_offset: int | None  # the last unit's CommitLog offset + size
    #: units pointing at or past the CommitLog's valid end (the broker's next start cuts them)
    units_past_end: int = 0


@dataclass
class IndexInfo:
    name: str
    size: int
    begin_timestamp: int | None = None
    end_timestamp: int | None = None
    begin_commitlog_offset: int | None = None
    end_commitlog_offset: int | None = None
    hash_slot_count: int | None = None
    index_count: int | None = None
    hash_slot_num: int | None = None
    index_num: int | None = None
    error: str | None = None


@dataclass
class StoreInfo:
    layout: str
    root: str
    version_hints: list[str]
    shutdown: str  # "clean" or "unclean (abort file present)"
    abort_pid: int | None
    broker_lock_pid: int | None  # pid holding <root>/lock, None when free
    commitlog: CommitLogInfo
    queues: list[QueueInfo]
    index_files: list[IndexInfo]
    checkpoint: dict[str, Any] | None
    config_files: list[str]
    topics_in_config: int | None
    consumer_groups: int | None
    problems: list[str] = field(default_factory=list)
    #: damaged data met where info reads (the first, the active and the pre-allocated CommitLog files): the command exits 1
    errors: list[str] = field(default_factory=list)
    #: every gap and damage on info's path as validate states them (``store.model.rocketmq``): the
    #: CommitLog directory's continuity and how the active file ends; ``errors`` holds the errors
    findings: list[Finding] = field(default_factory=list)
    #: what the modelled broker's restart would do (``ops.recover.rocketmq.restart_preview``): the
    #: version, normal or abnormal recovery, where it starts, the bytes it scans, what it drops,
    #: re-dispatches and re-indexes, and about how long it takes at this disk's read speed
    restart: dict[str, Any] | None = None
    #: the 5.x timer store when the store has one (``_timer_info``): None otherwise
    timer: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self)
        doc["findings"] = [f.to_dict() for f in self.findings]
        return doc


def _commitlog_info(store: rmq.RocketMQStore, hints: set[str], findings: list[Finding], read: RestartReading | None = None) -> CommitLogInfo:
    """The CommitLog's files, offsets and times from the first record of the first file and the
    active file (``store.model.rocketmq.last_data_file``: the broker's last mapped file), walked to
    where its data ends.  ``findings`` gets the directory's continuity facts, how the active file
    ends and whether the pre-allocated files after it hold only zeros, as validate states them
    (``commitlog_findings``, ``commitlog_file_findings``, ``preallocated_findings``), and the
    active file's records that break their queue's QUEUEOFFSET sequence (``store.model.queue_offsets``).
    ``read``: what the restart preview's reading read: the active file (walked record by record,
    its records' hints taken), when its scan read it, and the files before it: not read again."""
    segments = store.commitlog
    zero_length = [s.name for s in segments if s.size == 0]
    non_empty = [s for s in segments if s.size > 0]
    first_ts = last_ts = None
    end_kind: str | None = None
    max_offset = store.commitlog_min_offset
    preallocated: list[str] = []
    findings.extend(model.segment_findings_on_path(model.commitlog_findings(store), [s.path for s in segments]))
    if non_empty:
        first = model.first_record(non_empty[0].path)  # one small read, not a piece of the file
        if first is not None:
            first_ts = first.store_timestamp
            _hints_from_record(first, hints)
        last_index = model.last_data_file(segments)
        seg = segments[last_index]
        preallocated = [s.name for s in segments[last_index + 1 :] if s.size > 0]
        if seg.size > 0:
            newest = read.newest if read is not None else None
            if newest is not None and newest.walk is not None and not newest.failed and newest.offsets.path == str(seg.path):
                reading = newest
            else:
                reading = read_newest_file(seg, store.commitlog_file_size, lambda _pos, record: _hints_from_record(record, hints))
            walk, offsets = reading.walk, reading.offsets
            assert walk is not None  # both readings walk the file record by record
            end = offsets.end_findings or []
            last_ts = reading.last_store_timestamp if reading.records else None
            if any(x.level is not Severity.info for x in end) and probe_record_lock(store.lock_path) is not None:
                # a writer holds the lock: a tail that grows while we read it is being written
                for delay in model.LIVE_TAIL_DELAYS:
                    time.sleep(delay)
                    again = read_newest_file(seg, store.commitlog_file_size)
                    assert again.walk is not None
                    if again.walk.valid_end > walk.valid_end:
                        end = [model.in_progress_finding(str(seg.path), walk.valid_end, again.walk.valid_end - walk.valid_end)]
                        walk, offsets = again.walk, again.offsets
                        last_ts = again.last_store_timestamp if again.records else None
                        break
            findings.extend(end)
            # its records against each other, and its first record of each queue against the
            # queue's last record in the files before it
            findings.extend(offsets.findings)
            before = queue_offsets_before(store, last_index, offsets.queues, read.file_offsets if read is not None else None)
            findings.extend(before.add_file(offsets, seg.base, store.commitlog_file_size))
            max_offset = seg.base + walk.valid_end
            # how it ends: as its findings say (the finding vocabulary's rule), else as the walk stopped
            end_kind = end_kind_of({x.code for x in end})
            if end_kind is None:
                end_kind = "corrupt" if walk.end is None or any(x.level is Severity.error for x in end) else walk.end.kind
        # the pre-allocated files after it hold only zeros, or validate's RMQ-CL-GARBAGE
        findings.extend(model.preallocated_findings(store))
    return CommitLogInfo(
        directory=str(store.commitlog_dir),
        files=len(segments),
        file_size=store.commitlog_file_size,
        bytes_on_disk=sum(s.size for s in segments),
        log_start_offset=store.commitlog_min_offset,
        log_end_offset=max_offset,
        first_store_timestamp=first_ts,
        last_store_timestamp=last_ts,
        end_kind=end_kind,
        zero_length_files=zero_length,
        preallocated_files=preallocated,
    )


def _units_past_end(store: rmq.RocketMQStore, topic: str, qid: int, valid_end: int, max_offset: int) -> int:
    """The queue's units the broker's next start cuts (``store.model.consume_queue.units_past_end``)."""
    from mqtool.store.model.consume_queue import units_past_end

    files = [(seg.base, seg.path) for seg in store.cq_segments(topic, qid) if seg.size > 0]
    try:
        return units_past_end(files, valid_end, max_offset)
    except MqError:  # an unreadable file: validate names it; the count stays as the ConsumeQueue says
        return 0


def _hints_from_record(record: MessageRecord, hints: set[str]) -> None:
    if record.magic_code == MAGIC_V2:
        hints.add("5.1.0+ (magic v2 record for a topic longer than 127 characters)")
    if record.sys_flag & (SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6):
        hints.add("4.6.0+ (IPv6 host in a record)")
    if record.sys_flag & SYSFLAG_COMPRESSION_MASK:
        hints.add("4.9.4+ (compression type bits in SYSFLAG)")
    if "__CRC32#" in record.properties:
        hints.add("5.2.0+ (__CRC32# record CRC property)")


def _index_info(store: rmq.RocketMQStore) -> list[IndexInfo]:
    out = []
    for path in store.index_files():
        try:
            with rmq.IndexFileView(path) as view:
                h = view.header
                out.append(
                    IndexInfo(
                        path.name,
                        view.size,
                        h.begin_timestamp,
                        h.end_timestamp,
                        h.begin_phy_offset,
                        h.end_phy_offset,
                        h.hash_slot_count,
                        h.index_count,
                        view.geometry.hash_slot_num,
                        view.geometry.index_num,
                    )
                )
        except MqError as exc:
            out.append(IndexInfo(path.name, path.stat().st_size if path.exists() else 0, error=str(exc)))
    return out


def _rocksdb_queues(root: Path) -> list[QueueInfo]:
    """The queues of a RocksDB ConsumeQueue (5.2+, ``RocksDBConsumeQueueStore``) from its offset
    table alone, as the broker serves them (``store.model.rocksdb_cq.queue_range``: min and max
    queue offset), with the CommitLog end of each queue's last unit (one unit read per queue)."""
    from mqtool.store.model import rocksdb_cq as rocks_model

    out: list[QueueInfo] = []
    with RocksCq(db_dir(root)) as db:
        table = rocks_model.offset_table(db)
        for key in sorted(table.max):
            span = rocks_model.queue_range(table, None, key)
            if span is None:
                continue
            low, high = span
            last = rocks_model.unit_at(db, key[0], key[1], high - 1) if high > low else None
            end = last.value.commitlog_offset + last.value.size if isinstance(last, rocks_model.RocksUnit) else None
            out.append(QueueInfo(key[0], key[1], 0, low, high, end))
    return out


def _shutdown_findings(store: rmq.RocketMQStore, commitlog: CommitLogInfo) -> list[Finding]:
    """What the abort file and the checkpoint say, as validate states it (``model.shutdown_findings``;
    the table shows both, the headline counts them): RMQ-ABORT, and RMQ-CHECKPOINT where info's
    reading is validate's -- the IndexFile headers, and a store without CommitLog data; a
    physicMsgTimestamp against records would need every record's store time (info reads two
    files), and an unreadable checkpoint is one of info's problems already."""
    newest = max(commitlog.first_store_timestamp or 0, commitlog.last_store_timestamp or 0)
    live = probe_record_lock(store.lock_path) is not None
    held = any(seg.size > 0 for seg in store.commitlog)
    return [
        x
        for x in model.shutdown_findings(store, max_store_ts=newest, live=live)
        if x.code != RMQ_CHECKPOINT_FORMAT and not (x.code == RMQ_CHECKPOINT and x.position in (0, 8) and held)
    ]


def rocketmq_info(path: str | Path, *, broker_version: str | None = None, version_hints: tuple[VersionHint, ...] = (), config_path: str | None = None) -> StoreInfo:
    """The store's cheap facts, and the restart preview of the broker modelled for it
    (``--broker-version``, else ``version_hints`` from ``--config``, else the store's marks)."""
    store = rmq.open_store(path)
    hints: set[str] = set()
    problems: list[str] = []
    findings: list[Finding] = []
    # the restart preview reads the files the modelled broker's recovery reads: the newest one
    # among them, walked record by record (its records' hints taken), is the active file's reading
    restart: dict[str, Any] | None = None
    restart_problem = None
    read = None
    try:
        restart, read = read_restart(
            path,
            RecoverOptions(broker_version=broker_version, version_hints=version_hints, config_path=config_path),
            on_last_record=lambda _pos, record: _hints_from_record(record, hints),
        )
    except MqError as exc:
        restart_problem = f"restart preview: {exc}"
    commitlog = _commitlog_info(store, hints, findings, read)
    # info reads every queue's files (their count, min and max offset): their sizes and continuity
    # as validate states them
    for topic, qid in store.queues():
        findings.extend(model.queue_segment_findings(store, topic, qid))
    errors = [finding_location(x) for x in findings if x.level is Severity.error]

    queues = []
    for topic, qid in store.queues():
        try:
            qr = rmq.queue_range(store, topic, qid)
        except MqError as exc:
            problems.append(str(exc))
            continue
        past = 0
        if qr.max_physic_offset is not None and qr.max_physic_offset > commitlog.log_end_offset:
            past = _units_past_end(store, topic, qid, commitlog.log_end_offset, qr.max_offset)
        queues.append(QueueInfo(topic, qid, len(store.cq_segments(topic, qid)), qr.min_offset, qr.max_offset, qr.max_physic_offset, past))
    if is_rocksdb_cq(store.root):
        hints.add("5.2.0+ (consumequeue/ is a RocksDB database: storeType=defaultRocksDB)")
        try:
            queues += _rocksdb_queues(store.root)
        except MqError as exc:
            problems.append(f"RocksDB ConsumeQueue: {exc}")
    if is_directory(store.root / "batchconsumequeue"):
        hints.add("5.0.0+ (batchconsumequeue/ present)")

    checkpoint = None
    if store.checkpoint_path.exists():
        try:
            cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path))
            checkpoint = dataclasses.asdict(cp)
            if cp.master_flushed_offset or cp.confirm_phy_offset:
                hints.add("5.x (checkpoint fields after byte 24 in use)")
        except MqError as exc:
            problems.append(str(exc.at(store.checkpoint_path)))

    abort_pid = None
    if store.has_abort:
        try:
            abort_pid = cpf.decode_abort(read_small_file(store.abort_path, 4096))
            if abort_pid is not None:
                hints.add("5.0.0+ (abort file holds the broker pid)")
        except MqError as exc:
            problems.append(str(exc.at(store.abort_path)))
    findings.extend(_shutdown_findings(store, commitlog))

    config_files = sorted(p.name for p in store.config_dir.iterdir()) if is_directory(store.config_dir) else []
    topics_count = groups = None
    topics_path = store.config_file("topics.json")
    if topics_path is not None:
        try:
            text = read_small_file(topics_path).decode("utf-8")
            topics_count = len(cfgf.parse_topics(text))
            if '"attributes"' in text:
                hints.add("5.x (topic attributes in topics.json)")
        except (MqError, UnicodeDecodeError) as exc:
            problems.append(f"{topics_path}: {exc}")
    offsets_path = store.config_file("consumerOffset.json")
    if offsets_path is not None:
        try:
            offsets = cfgf.parse_consumer_offsets(read_small_file(offsets_path).decode("utf-8"))
            groups = len({group for (_topic, group) in offsets})
        except (MqError, UnicodeDecodeError) as exc:
            problems.append(f"{offsets_path}: {exc}")

    if restart_problem is not None:
        problems.append(restart_problem)
    return StoreInfo(
        layout="rocketmq",
        root=str(store.root),
        version_hints=sorted(hints),
        shutdown="unclean (abort file present)" if store.has_abort else "clean",
        abort_pid=abort_pid,
        broker_lock_pid=probe_record_lock(store.lock_path),
        commitlog=commitlog,
        queues=queues,
        index_files=_index_info(store),
        checkpoint=checkpoint,
        config_files=config_files,
        topics_in_config=topics_count,
        consumer_groups=groups,
        problems=problems,
        errors=errors,
        findings=findings,
        restart=restart,
        timer=_timer_info(store, problems),
    )


def _timer_info(store: rmq.RocketMQStore, problems: list[str]) -> dict[str, Any] | None:
    """The 5.x timer store's cheap facts (``TimerMessageStore``'s files; None without any): the
    wheel's size, the TimerLog's files and bytes, ``timercheck``'s positions and how many topics
    ``timermetrics`` counts.  Nothing is walked: ``validate`` (family ``timer``) reads the units."""
    paths = rmq.TimerPaths(store.root)
    if not paths.present():
        return None
    from mqtool.store.model import timer as model_timer  # numpy: only for a store with timer files

    segments = rmq.list_segments(paths.timerlog_dir) if is_directory(paths.timerlog_dir) else []
    wheel = paths.wheel.stat().st_size if paths.wheel.is_file() else None
    checkpoint: dict[str, Any] | None = None
    if paths.checkpoint.is_file():
        try:
            cp = model_timer.read_timer_checkpoint(paths.checkpoint)
            checkpoint = {
                "last_read_time_ms": cp.last_read_time_ms,
                "last_timer_log_flush_pos": cp.last_timer_log_flush_pos,
                "last_timer_queue_offset": cp.last_timer_queue_offset,
                "master_timer_queue_offset": cp.master_timer_queue_offset,
            }
        except MqError as exc:
            problems.append(str(exc))
    metrics_topics: int | None = None
    metrics_path = store.config_file(paths.metrics.name)
    if metrics_path is not None:
        try:
            metrics_topics = len(model_timer.read_timer_metrics(metrics_path).timing_count)
        except MqError as exc:
            problems.append(str(exc))
    return {
        "wheel_bytes": wheel,
        "timerlog_files": len(segments),
        "timerlog_bytes": sum(s.size for s in segments),
        "timerlog_start": segments[0].base if segments else None,
        "checkpoint": checkpoint,
        "metrics_topics": metrics_topics,
    }
