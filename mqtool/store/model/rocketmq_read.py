"""What the store model states about a RocketMQ store root, phase by phase, as one stream of
neutral events (validate's reading of RocketMQ; ``ops.validate.rocketmq`` turns it into a report).

Phases, each made of independent tasks (run by the caller's ``run``: a process pool with ``--jobs``):

1. files: names, sizes, continuity of CommitLog and ConsumeQueue segments;
2. CommitLog, one task per file (``store.model.commitlog_check``): every record (magic, sizes, body
   CRC, ``__CRC32#``, properties, PHYSICALOFFSET = real position), queue-offset continuity, how each
   file ends (END_OF_FILE in every file but the last, zeros after the valid end of the last, torn
   tails, garbage), and resynchronisation after a broken record so the rest of the file is still
   checked;
3. ConsumeQueue, one task per queue (``store.model.queue_check``): every unit checked against the
   record it points at (read back from the CommitLog), tagsCode, the queue's end vs the CommitLog
   end, lag; then the RocksDB ConsumeQueue of a 5.2+ store (``store.model.rocksdb_cq_check``);
4. IndexFile, one task per file or per share of a big file's entries (``store.model.index_check``):
   header vs entries, slot chains (in range, acyclic, every entry reachable and in the right slot),
   every entry against the record it points at; the records no IndexFile holds;
5. checkpoint vs the newest records, ``abort``, every config JSON file (and ``.bak``) the broker
   loads parsed and of the right shape, consumer offsets vs queue ranges;
6. the 5.x timer store (``store.model.timer_check``);
7. the compaction store (``store.model.compaction_check``).

Each damage is stated once, where it is: the CommitLog phase returns the commitlog ranges it
reported (broken records, skipped regions, a torn tail, missing files), and units and index
entries pointing into them are not reported again; a QUEUEOFFSET may jump over records that
skipped bytes may have held; a misnamed file's records are read at the offsets they say.  Units
and entries pointing past the CommitLog's valid end are knock-ons of the damage that ends it
(``store.model.rocketmq.valid_end_cause``, looked for among the findings the consumer lists).

The events: ``FileRead`` (a file as validate's files list shows it, before the findings placed on
it), ``Placed`` (a finding, and the file whose count it adds to), ``Fact`` (a fact of the store,
in the order validate's facts list them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from mqtool.errors import MqError
from mqtool.findings import FAMILIES, Finding
from mqtool.findings.code_ids import RMQ_IDX_IN_PROGRESS
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import config as cfgf
from mqtool.store import rocketmq as rmq
from mqtool.store.files import read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import commitlog_check as cl_check
from mqtool.store.model import compaction_check, derived, index_check, queue_check, rocksdb_cq_check, timer_check
from mqtool.store.model import consumers as model_consumers
from mqtool.store.model import queue_offsets as queue_offsets_model
from mqtool.store.model import rocketmq as model

T = TypeVar("T")
R = TypeVar("R")


class Runner(Protocol):
    """How the tasks of a phase run: ``map(fn, tasks)`` in order (in a process pool with ``--jobs``)."""

    def __call__(self, fn: Callable[[T], R], tasks: list[T], /) -> Iterable[R]: ...


def _serial(fn: Callable[[T], R], tasks: list[T], /) -> Iterable[R]:
    return map(fn, tasks)


@dataclass(frozen=True)
class FileRead:
    """A file as the reading saw it: its family, bytes, records (units, entries) and valid bytes.
    ``checked``: the bytes of it read record by record (a CommitLog file), None for the others;
    ``rows``: what the ``rows`` fold made of the file's records (a CommitLog file, when asked)."""

    path: str
    family: str
    size: int
    records: int
    valid_bytes: int | None
    checked: int | None = None
    rows: Any = None


@dataclass(frozen=True)
class Placed:
    """A finding, and the path of the ``FileRead`` it counts against (None: none)."""

    finding: Finding
    file: str | None = None


@dataclass(frozen=True)
class Fact:
    """A fact of the store (``name``: its key in validate's facts)."""

    name: str
    value: Any


Item = FileRead | Placed | Fact


#: The config JSON files the broker loads (``BrokerPathConfigHelper`` names) and the parser that
#: checks each one's shape.  Each may have a ``<name>.bak`` twin (``ConfigManager.loadBak``).
CONFIG_FILES = (
    ("topics.json", cfgf.parse_topics),
    ("consumerOffset.json", cfgf.parse_consumer_offsets),
    ("lmqConsumerOffset.json", cfgf.parse_consumer_offsets),
    ("delayOffset.json", cfgf.parse_delay_offsets),
    ("subscriptionGroup.json", cfgf.parse_subscription_groups),
    ("consumerFilter.json", cfgf.parse_consumer_filters),
)


def read_store(
    store: rmq.RocketMQStore,
    *,
    checks: frozenset[str] = frozenset(FAMILIES),
    jobs: int = 1,
    run: Runner = _serial,
    listed: Callable[[], Iterable[Finding]] | None = None,
    fast: bool = True,
    cq_file_size: int | None = None,
    index_hash_slot_num: int | None = None,
    index_num: int | None = None,
    message_index_enable: bool | None = None,
    timer_precision_ms: int | None = None,
    keys_dir: str | None = None,
    rows: Callable[[], Any] | None = None,
) -> Iterator[Item]:
    """Everything the model states about ``store``, streamed in the order of the module docstring.

    ``checks`` leaves out the phases of families not among them (ConsumeQueue, IndexFile, timer,
    compaction); ``jobs`` is how many workers ``run`` spreads the tasks over (a big IndexFile's
    entries are shared out); ``listed`` gives the findings the consumer lists so far (its filters
    applied), among which the cause of the CommitLog's valid end is looked for (None: every
    finding yielded).  ``cq_file_size``, ``index_hash_slot_num``, ``index_num``,
    ``message_index_enable``, ``timer_precision_ms``: the broker's settings when given (else
    judged from the store); ``fast``: healthy records through the columnar walk; ``keys_dir``: the
    CommitLog's key tables for the IndexFile checks; ``rows``: a fold fed by each CommitLog file's
    reading (``commitlog_check.RowsFold``)."""
    yielded: list[Finding] = []

    def placed(finding: Finding, file: str | None = None) -> Placed:
        if listed is None:
            yielded.append(finding)
        return Placed(finding, file)

    segments = store.commitlog
    file_size = store.commitlog_file_size
    yield Fact("commitlog_file_size", file_size)

    # phase 1: files
    # A writer (the broker, or mqtool's own writer) holds <root>/lock: the store is live.
    live = probe_record_lock(store.lock_path) is not None
    yield Fact("live", live)
    for finding in model.segment_findings(store.commitlog_dir, segments, file_size, "commitlog", live=live):
        yield placed(finding)
    queues = store.queues()
    cq_segments = {key: store.cq_segments(*key) for key in queues}
    cq_size, cq_size_source = model.cq_file_size(cq_file_size, cq_segments)
    yield Fact("cq_file_size", cq_size)
    for (topic, qid), segs in cq_segments.items():
        for finding in model.segment_findings(rmq.queue_dir(store, topic, qid), segs, cq_size, "consumequeue", live=live, size_source=cq_size_source):
            yield placed(finding)
    for finding in model.irregular_findings(store.irregular_queue_dirs(), "a consumequeue directory"):
        yield placed(finding)
    for finding in model.irregular_findings(store.irregular_index_files(), "a regular index file"):
        yield placed(finding)

    # phase 2: CommitLog
    tasks = cl_check.commitlog_tasks(
        store,
        live=live,
        fast=fast,
        cq_file_size=cq_size if "consumequeue" in checks else 0,
        keys_dir=keys_dir,
        rows=rows,
    )
    join = cl_check.CommitLogJoin(store)
    for res in run(cl_check.check_commitlog_file, tasks):
        yield FileRead(res.path, "commitlog", res.size, res.records, res.valid_end, checked=res.size, rows=res.rows)
        for finding in res.findings:
            yield placed(finding, res.path)
        for finding in join.add(res):
            yield placed(finding, res.path)
    last = model.last_data_file(segments)
    queue_offsets, commitlog_end = join.queue_offsets, join.commitlog_end
    damaged_ranges = cl_check.merge_ranges(join.damaged)
    rebased = tuple(join.rebased)
    for i, seg in enumerate(segments):
        if i > last and seg.size > 0:
            yield FileRead(str(seg.path), "commitlog", seg.size, 0, 0)
            for finding in cl_check.preallocated_file_findings(str(seg.path), file_size):
                yield placed(finding, str(seg.path))
    yield Fact("commitlog", {"log_start_offset": store.commitlog_min_offset, "log_end_offset": commitlog_end})
    yield Fact("max_store_timestamp", join.max_store_timestamp)

    # Units and entries pointing past the valid end are knock-ons of the damage that ends it.
    end_cause = model.valid_end_cause(yielded if listed is None else listed(), {str(seg.path): seg.base for seg in segments}, commitlog_end)

    # phase 3: ConsumeQueues
    queue_ranges: dict[tuple[str, int], tuple[int, int]] = {}
    if queues and ("consumequeue" in checks or "config" in checks):
        ext_root = store.root / "consumequeue_ext"
        qtasks = [
            queue_check.QueueTask(
                str(store.root),
                topic,
                qid,
                cq_size,
                file_size or 0,
                store.commitlog_min_offset,
                commitlog_end,
                queue_offsets.last_queue_offset((topic, qid)),
                str(ext_root / topic / str(qid)) if (ext_root / topic / str(qid)).is_dir() else None,
                damaged_ranges,
                rebased,
                live,
                verified=tuple(cl_check.merge_ranges(join.verified.get((topic, qid), []))),
            )
            for topic, qid in queues
        ]
        for qres in run(queue_check.check_queue, qtasks):
            queue_ranges[(qres.topic, qres.queue_id)] = (qres.min_offset, qres.max_offset)
            paths = set()
            for fpath, fsize, units, valid in qres.files:
                paths.add(fpath)
                yield FileRead(fpath, "consumequeue", fsize, units, valid)
            for finding in qres.findings:
                yield placed(model.link_knock_on(finding, end_cause), finding.path if finding.path in paths else None)
    # the RocksDB ConsumeQueue (5.2+, storeType=defaultRocksDB), when consumequeue/ is one
    rocks = rocksdb_cq_check.RocksCheck()
    if "consumequeue" in checks or "config" in checks:
        last_offsets = {key: edge.last for key, edge in queue_offsets.edges.items()}
        rocks = rocksdb_cq_check.check_rocksdb_cq(
            store, commitlog_end=commitlog_end, last_queue_offsets=last_offsets, damaged=damaged_ranges, end_cause=end_cause, live=live
        )
        if rocks.path is not None:
            yield FileRead(rocks.path, "consumequeue", rocks.size, rocks.units, None)
        for finding in rocks.findings:
            yield placed(finding, rocks.path)
        if rocks.facts:
            yield Fact("rocksdb_consumequeue", rocks.facts)
        queue_ranges = {**rocks.ranges, **queue_ranges}
    edges = {key: edge for key, edge in queue_offsets.edges.items() if key not in rocks.ranges}  # what the RocksDB queues hold is said there
    for finding in queue_offsets_model.missing_queue_findings(store, edges, live=live):
        yield placed(finding)
    if "consumequeue" in checks:
        for head in derived.queue_heads(queue_offsets.edges, cq_segments):
            yield placed(derived.queue_head_finding(store, head, live=live))

    # phase 4: IndexFiles
    index_end_ts = 0
    if "index" in checks:
        itasks = []
        index_paths = store.index_files()
        for p in index_paths:
            active = live and p == index_paths[-1]
            count = index_check.index_entry_count(p, index_hash_slot_num, index_num)
            if active:
                # The writer is changing this file's header, slots and chains right now: only its
                # written entries are checked against the records.
                yield placed(
                    Finding(
                        RMQ_IDX_IN_PROGRESS,
                        str(p),
                        None,
                        f"the active IndexFile of a live store: its {count} written entries are checked, its header and chains are not",
                    )
                )
            common = (str(store.root), str(p), file_size or 0, store.commitlog_min_offset, commitlog_end, index_hash_slot_num, index_num)
            parts = max(1, min(jobs * 2, count // 50_000)) if jobs > 1 else 1
            step = -(-count // parts) if count else 1
            for k in range(parts):
                itasks.append(
                    index_check.IndexTask(
                        *common,
                        entries=(1 + k * step, 1 + (k + 1) * step) if parts > 1 else None,
                        structure=k == 0 and not active,
                        written=count + 1,
                        damaged=damaged_ranges,
                        rebased=rebased,
                        live=live,
                        keys_dir=keys_dir,
                    )
                )
        seen: set[str] = set()
        for ires in run(index_check.check_index_file, itasks):
            if ires.path not in seen:
                seen.add(ires.path)
                yield FileRead(ires.path, "index", ires.size, ires.entries, None)
            index_end_ts = max(index_end_ts, ires.end_timestamp)
            for finding in ires.findings:
                yield placed(model.link_knock_on(finding, end_cause), ires.path)
        coverage = derived.index_coverage(store, hash_slot_num=index_hash_slot_num, index_num=index_num, message_index_enable=message_index_enable)
        unindexed = derived.index_missing_finding(store, coverage, derived.unindexed_records(store, coverage, commitlog_end), live=live)
        if unindexed is not None:
            yield placed(unindexed)

    # phase 5: checkpoint, abort, config
    for finding in model.shutdown_findings(store, max_store_ts=join.max_store_timestamp, index_end_ts=index_end_ts, live=live):
        yield placed(finding)
    try:
        cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20)) if store.checkpoint_path.exists() else None
    except MqError:
        cp = None  # RMQ-CHECKPOINT-FORMAT
    if cp is not None:
        yield Fact(
            "checkpoint",
            {
                "physic_msg_timestamp": cp.physic_msg_timestamp,
                "logics_msg_timestamp": cp.logics_msg_timestamp,
                "index_msg_timestamp": cp.index_msg_timestamp,
            },
        )
    for finding in config_findings(store, queue_ranges):
        yield placed(finding)

    # phase 6: the 5.x timer store (wheel slots -> TimerLog units -> CommitLog records, timercheck)
    if "timer" in checks:
        timer = timer_check.check_timer(store, commitlog_end=commitlog_end, damaged=damaged_ranges, end_cause=end_cause, live=live, precision_ms=timer_precision_ms)
        for finding in timer.findings:
            yield placed(finding)
        if timer.facts:
            yield Fact("timer", timer.facts)
    # phase 7: the compaction store (each queue's compaction log against its sparse consume queue)
    if "compaction" in checks:
        compaction = compaction_check.check_compaction(store)
        for finding in compaction.findings:
            yield placed(finding)
        if compaction.facts:
            yield Fact("compaction", compaction.facts)


def config_findings(store: rmq.RocketMQStore, ranges: dict[tuple[str, int], tuple[int, int]]) -> Iterator[Finding]:
    """Each config file as the broker loads it (``model_consumers.load_config``: ``<name>``, or
    its ``.bak`` twin), and the consumer offsets of what it loads against the queues read."""
    offsets = model_consumers.load_consumer_offsets(store)
    for name, parse in CONFIG_FILES:
        load: model_consumers.ConfigLoad[Any] = offsets if name == offsets.name else model_consumers.load_config(store, name, parse)
        yield from model_consumers.config_findings(load)
    if offsets.path is not None and offsets.value is not None:
        yield from model_consumers.offset_findings(offsets.path, offsets.value, ranges, set(store.queues()))


__all__ = ["CONFIG_FILES", "Fact", "FileRead", "Item", "Placed", "Runner", "config_findings", "read_store"]
