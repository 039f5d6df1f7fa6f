"""validate for RocketMQ store roots (CommitLog, ConsumeQueue, IndexFile, StoreCheckpoint, config).

Phases, each made of independent tasks (parallel with ``--jobs``):

1. files: names, sizes, continuity of CommitLog and ConsumeQueue segments;
2. CommitLog, one task per file: every record (magic, sizes, body CRC, ``__CRC32#``, properties,
   PHYSICALOFFSET = real position), queue-offset continuity, how each file ends (END_OF_FILE in
   every file but the last, zeros after the valid end of the last, torn tails, garbage), and
   resynchronisation after a broken record so the rest of the file is still checked;
3. ConsumeQueue, one task per queue: every unit checked against the record it points at (read
   back from the CommitLog), tagsCode, the queue's end vs the CommitLog end, lag;
4. IndexFile, one task per file: header vs entries, slot chains (in range, acyclic, every entry
   reachable and in the right slot), every entry against the record it points at;
5. checkpoint vs the newest records, ``abort``, every config JSON file (and ``.bak``) the broker
   loads parsed and of the right shape, consumer offsets vs queue ranges.

Each damage is reported once, where it is: the CommitLog phase returns the commitlog ranges it
reported (broken records, skipped regions, a torn tail, missing files), and units and index
entries pointing into them are not reported again; a QUEUEOFFSET may jump over records that
skipped bytes may have held; a misnamed file's records are read at the offsets they say.

This module assembles: it builds the tasks, runs them with ``run_tasks`` and merges their results
into the report.  The bytes are judged in the store model, one module per file family:
``store.model.commitlog_check`` (a CommitLog file), ``store.model.queue_check`` (a ConsumeQueue),
``store.model.index_check`` (an IndexFile), ``store.model.rocksdb_cq_check``, ``timer_check`` and
``compaction_check``; ``store.model.rocketmq`` holds the store-wide rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.findings.code_ids import RMQ_IDX_IN_PROGRESS
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import config as cfgf
from mqtool.ops.validate import FileSummary, Progress, ValidateOptions, ValidationReport, run_tasks
from mqtool.store import rocketmq as rmq
from mqtool.store.files import read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import commitlog_check as cl_check
from mqtool.store.model import compaction_check as validate_compaction
from mqtool.store.model import consumers as model_consumers
from mqtool.store.model import derived, index_check, queue_check
from mqtool.store.model import queue_offsets as queue_offsets_model
from mqtool.store.model import rocketmq as model
from mqtool.store.model import rocketmq_broker as brokers
from mqtool.store.model import rocksdb_cq_check as validate_rocksdb_cq
from mqtool.store.model import timer_check as validate_timer


def validate_rocketmq(path: str | Path, options: ValidateOptions, progress: Progress | None = None) -> ValidationReport:
    with model_cl.key_table_directory() as keys_dir:
        report = _validate_rocketmq(path, options, progress, keys_dir if options.fast and options.wants("index") else None)
    # the broker modelled, and what the findings say of its recovery made true for it
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    broker = brokers.resolve_broker(store.root, options.broker_version, options.version_hints, options.config_path)
    report.facts["broker"], report.findings = brokers.as_the_broker_sees_it(store, broker, report.findings)
    return report


def _validate_rocketmq(path: str | Path, options: ValidateOptions, progress: Progress | None, keys_dir: str | None) -> ValidationReport:
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    report = ValidationReport("rocketmq", str(store.root), options)
    advance = progress or (lambda n: None)
    segments = store.commitlog
    file_size = store.commitlog_file_size
    report.facts["commitlog_file_size"] = file_size

    # phase 1: files
    # A writer (the broker, or mqtool's own writer) holds <root>/lock: the store is live.
    live = probe_record_lock(store.lock_path) is not None
    report.facts["live"] = live
    for finding in model.segment_findings(store.commitlog_dir, segments, file_size, "commitlog", live=live):
        report.add(finding)
    queues = store.queues()
    cq_segments = {key: store.cq_segments(*key) for key in queues}
    cq_file_size, cq_size_source = model.cq_file_size(options.cq_file_size, cq_segments)
    report.facts["cq_file_size"] = cq_file_size
    for (topic, qid), segs in cq_segments.items():
        for finding in model.segment_findings(rmq.queue_dir(store, topic, qid), segs, cq_file_size, "consumequeue", live=live, size_source=cq_size_source):
            report.add(finding)
    irregular_queues = store.irregular_queue_dirs()
    for finding in model.irregular_findings(irregular_queues, "a consumequeue directory"):
        report.add(finding)
    for finding in model.irregular_findings(store.irregular_index_files(), "a regular index file"):
        report.add(finding)

    # phase 2: CommitLog
    tasks = cl_check.commitlog_tasks(
        store,
        live=live,
        fast=options.fast,
        cq_file_size=cq_file_size if options.wants("consumequeue") else 0,
        keys_dir=keys_dir,
        rows=options.rows,
    )
    join = cl_check.CommitLogJoin(store)
    for res in run_tasks(cl_check.check_commitlog_file, tasks, options.jobs):
        summary = FileSummary(res.path, "commitlog", res.size, res.records, res.valid_end)
        report.files.append(summary)
        for finding in res.findings:
            report.add(finding, summary)
        for finding in join.add(res):
            report.add(finding, summary)
        if res.rows is not None:
            report.rows.append(res.rows)
        report.bytes_checked += res.size
        advance(res.size)
    last = model.last_data_file(segments)
    queue_offsets, commitlog_end, max_store_ts = join.queue_offsets, join.commitlog_end, join.max_store_timestamp
    verified, damaged, rebased = join.verified, join.damaged, join.rebased
    damaged_ranges = cl_check.merge_ranges(damaged)
    for i, seg in enumerate(segments):
        if i > last and seg.size > 0:
            summary = FileSummary(str(seg.path), "commitlog", seg.size, 0, 0)
            report.files.append(summary)
            for finding in cl_check.preallocated_file_findings(str(seg.path), file_size):
                report.add(finding, summary)
    report.facts["commitlog"] = {"log_start_offset": store.commitlog_min_offset, "log_end_offset": commitlog_end}
    report.facts["max_store_timestamp"] = max_store_ts

    # Units and entries pointing past the valid end are knock-ons of the damage that ends it.
    end_cause = model.valid_end_cause(report.findings, {str(seg.path): seg.base for seg in segments}, commitlog_end)

    # phase 3: ConsumeQueues
    queue_ranges: dict[tuple[str, int], tuple[int, int]] = {}
    if queues and (options.wants("consumequeue") or options.wants("config")):
        ext_root = store.root / "consumequeue_ext"
        qtasks = [
            queue_check.QueueTask(
                str(store.root),
                topic,
                qid,
                cq_file_size,
                file_size or 0,
                store.commitlog_min_offset,
                commitlog_end,
                queue_offsets.last_queue_offset((topic, qid)),
                str(ext_root / topic / str(qid)) if (ext_root / topic / str(qid)).is_dir() else None,
                damaged_ranges,
                tuple(rebased),
                live,
                verified=tuple(cl_check.merge_ranges(verified.get((topic, qid), []))),
            )
            for topic, qid in queues
        ]
        for qres in run_tasks(queue_check.check_queue, qtasks, options.jobs):
            queue_ranges[(qres.topic, qres.queue_id)] = (qres.min_offset, qres.max_offset)
            file_summaries = {}
            for fpath, fsize, units, valid in qres.files:
                s = FileSummary(fpath, "consumequeue", fsize, units, valid)
                file_summaries[fpath] = s
                report.files.append(s)
            for finding in qres.findings:
                report.add(model.link_knock_on(finding, end_cause), file_summaries.get(finding.path))
    # phase 3b: the RocksDB ConsumeQueue (5.2+, storeType=defaultRocksDB), when consumequeue/ is one
    rocks = validate_rocksdb_cq.RocksCheck()
    if options.wants("consumequeue") or options.wants("config"):
        last_offsets = {key: edge.last for key, edge in queue_offsets.edges.items()}
        rocks = validate_rocksdb_cq.check_rocksdb_cq(
            store, commitlog_end=commitlog_end, last_queue_offsets=last_offsets, damaged=damaged_ranges, end_cause=end_cause, live=live
        )
        rocks_summary = None
        if rocks.path is not None:
            rocks_summary = FileSummary(rocks.path, "consumequeue", rocks.size, rocks.units, None)
            report.files.append(rocks_summary)
        for finding in rocks.findings:
            report.add(finding, rocks_summary)
        if rocks.facts:
            report.facts["rocksdb_consumequeue"] = rocks.facts
        queue_ranges = {**rocks.ranges, **queue_ranges}
    edges = {key: edge for key, edge in queue_offsets.edges.items() if key not in rocks.ranges}  # what the RocksDB queues hold is said there
    for finding in queue_offsets_model.missing_queue_findings(store, edges, live=live):
        report.add(finding)
    if options.wants("consumequeue"):
        for head in derived.queue_heads(queue_offsets.edges, cq_segments):
            report.add(derived.queue_head_finding(store, head, live=live))

    # phase 4: IndexFiles
    index_end_ts = 0
    if options.wants("index"):
        itasks = []
        index_paths = store.index_files()
        for p in index_paths:
            active = live and p == index_paths[-1]
            count = index_check.index_entry_count(p, options.index_hash_slot_num, options.index_num)
            if active:
                # The writer is changing this file's header, slots and chains right now: only its
                # written entries are checked against the records.
                report.add(
                    Finding(
                        RMQ_IDX_IN_PROGRESS,
                        str(p),
                        None,
                        f"the active IndexFile of a live store: its {count} written entries are checked, its header and chains are not",
                    )
                )
            common = (str(store.root), str(p), file_size or 0, store.commitlog_min_offset, commitlog_end, options.index_hash_slot_num, options.index_num)
            parts = max(1, min(options.jobs * 2, count // 50_000)) if options.jobs > 1 else 1
            step = -(-count // parts) if count else 1
            for k in range(parts):
                itasks.append(
                    index_check.IndexTask(
                        *common,
                        entries=(1 + k * step, 1 + (k + 1) * step) if parts > 1 else None,
                        structure=k == 0 and not active,
                        written=count + 1,
                        damaged=damaged_ranges,
                        rebased=tuple(rebased),
                        live=live,
                        keys_dir=keys_dir,
                    )
                )
        index_summaries: dict[str, FileSummary] = {}
        for ires in run_tasks(index_check.check_index_file, itasks, options.jobs):
            isum = index_summaries.get(ires.path)
            if isum is None:
                isum = index_summaries[ires.path] = FileSummary(ires.path, "index", ires.size, ires.entries, None)
                report.files.append(isum)
            index_end_ts = max(index_end_ts, ires.end_timestamp)
            for finding in ires.findings:
                report.add(model.link_knock_on(finding, end_cause), isum)
        coverage = derived.index_coverage(
            store, hash_slot_num=options.index_hash_slot_num, index_num=options.index_num, message_index_enable=options.message_index_enable
        )
        unindexed = derived.index_missing_finding(store, coverage, derived.unindexed_records(store, coverage, commitlog_end), live=live)
        if unindexed is not None:
            report.add(unindexed)

    # phase 5: checkpoint, abort, config
    _check_shutdown_state(store, report, max_store_ts, index_end_ts, live)
    _check_config(store, report, queue_ranges)

    # phase 6: the 5.x timer store (wheel slots -> TimerLog units -> CommitLog records, timercheck)
    if options.wants("timer"):
        timer = validate_timer.check_timer(
            store, commitlog_end=commitlog_end, damaged=damaged_ranges, end_cause=end_cause, live=live, precision_ms=options.timer_precision_ms
        )
        for finding in timer.findings:
            report.add(finding)
        if timer.facts:
            report.facts["timer"] = timer.facts
    # phase 7: the compaction store (each queue's compaction log against its sparse consume queue)
    if options.wants("compaction"):
        compaction = validate_compaction.check_compaction(store)
        for finding in compaction.findings:
            report.add(finding)
        if compaction.facts:
            report.facts["compaction"] = compaction.facts
    return report


def _check_shutdown_state(store: rmq.RocketMQStore, report: ValidationReport, max_store_ts: int, index_end_ts: int, live: bool = False) -> None:
    for finding in model.shutdown_findings(store, max_store_ts=max_store_ts, index_end_ts=index_end_ts, live=live):
        report.add(finding)
    try:
        cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20)) if store.checkpoint_path.exists() else None
    except MqError:
        cp = None  # RMQ-CHECKPOINT-FORMAT
    if cp is not None:
        report.facts["checkpoint"] = {
            "physic_msg_timestamp": cp.physic_msg_timestamp,
            "logics_msg_timestamp": cp.logics_msg_timestamp,
            "index_msg_timestamp": cp.index_msg_timestamp,
        }


#: The config JSON files validate reads (``BrokerPathConfigHelper`` names) and the parser that
#: checks each one's shape.  Each may have a ``<name>.bak`` twin (``ConfigManager.loadBak``).
CONFIG_FILES = (
    ("topics.json", cfgf.parse_topics),
    ("consumerOffset.json", cfgf.parse_consumer_offsets),
    ("lmqConsumerOffset.json", cfgf.parse_consumer_offsets),
    ("delayOffset.json", cfgf.parse_delay_offsets),
    ("subscriptionGroup.json", cfgf.parse_subscription_groups),
    ("consumerFilter.json", cfgf.parse_consumer_filters),
)


def _check_config(store: rmq.RocketMQStore, report: ValidationReport, ranges: dict[tuple[str, int], tuple[int, int]]) -> None:
    """Each config file as the broker loads it (``model_consumers.load_config``: ``<name>``, or
    its ``.bak`` twin), and the consumer offsets of what it loads against the queues read."""
    offsets = model_consumers.load_consumer_offsets(store)
    for name, parse in CONFIG_FILES:
        load: model_consumers.ConfigLoad[Any] = offsets if name == offsets.name else model_consumers.load_config(store, name, parse)
        for finding in model_consumers.config_findings(load):
            report.add(finding)
    if offsets.path is not None and offsets.value is not None:
        for finding in model_consumers.offset_findings(offsets.path, offsets.value, ranges, set(store.queues())):
            report.add(finding)
