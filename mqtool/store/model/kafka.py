"""The Kafka store model: one streaming reading of a log dir, a partition dir or a segment file.

What the broker's loader and recovery (``LogLoader.load``, ``LogSegment.recover``,
``UnifiedLog``, ``OffsetIndex``, ``TimeIndex``, ``TransactionIndex``, ``ProducerStateManager``,
``LeaderEpochFileCache``) would make of the files, stated once as findings for every command:
``validate`` assembles them into its report, the readers (dump, stats, info, query, diff,
recover's plan) name them on their path, and nothing else judges a Kafka segment's bytes.

``read_store`` yields, in this order:

1. the files: partition dir names, unknown files, leftovers of interrupted operations
   (``.deleted``/``.cleaned``/``.swap``/``.tmp``), links and special files, logs without
   indexes (index files without a ``.log`` are held back: a partition that lost its data is
   their cause);
2. one ``SegmentRead`` per ``.log`` (and per KRaft snapshot), read as independent tasks (the
   caller's ``run`` may spread them over processes; the reading of one segment is
   :mod:`mqtool.store.model.kafka_segment`'s): what ``LogSegment.recover`` checks --
   entry framing, sizes, CRC-32C/CRC-32, the end-transaction marker of control batches with a
   producer id -- plus offsets (increasing, inside the segment's 32-bit relative range),
   partition leader epochs, and, streamed side by side with the log, every ``.index`` entry
   (a batch boundary holding the indexed offset, or a multi-batch append whose last batch has
   it), every ``.timeindex`` entry (the max timestamp of the batch holding its offset, never
   below an earlier batch's) and every ``.txnindex`` entry (an ABORT marker of that producer;
   every ABORT indexed).  How the segment ends: clean, zero tail, torn tail (position and
   length), garbage; after a broken entry the walk resynchronises on the next valid entry so
   the rest is still checked.  ``deep`` also decodes every record: varint framing, sizes,
   record count, offset and timestamp deltas against the header, decompression, inner
   messages of v0/v1 wrappers (a big segment's records in ``DeepRangeTask`` shares);
3. per partition (then a ``PartitionRead`` with its offsets): segment continuity (a gap is
   information, an overlap an error), producer snapshots, a log that ends below what its own
   state vouches for (``KAFKA-LOG-MISSING``), ``leader-epoch-checkpoint`` (increasing, and
   agreeing with the batches), ``partition.metadata``;
4. the log dir: the offset checkpoints (recovery point, high watermark, log start, cleaner
   offset) against each log end offset, ``meta.properties``, ``.kafka_cleanshutdown``,
   ``.lock``.

Every finding comes as a ``Placed``: the finding and the file whose summary it counts toward.
Memory stays flat: a segment task streams its files and returns findings plus a few numbers.
The checks of phases 1, 3 and 4 are :mod:`mqtool.store.model.kafka_state`'s; this module runs the
reading and its tasks.

A consumer of the entries (``read_store_entries``) may stop the reading where it has what it needs
(``EntryReading.stop``: ``dump --limit``) or read some partitions only (``dump --topic``), and
have each segment's entries folded into its own count by the same walk (``fold``: a
``SegmentFold``, stats').  Inside ``shared_reading`` validate's reading also folds each segment
into ``LogSegment.recover`` and into the block's ``fold``, and keeps it, so that recover's plan,
stats, lag and clean's plan after it read no segment again (``report``;
:mod:`mqtool.store.model.kafka_shared`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Generator, Iterable, Iterator
from dataclasses import dataclass, field, replace

from mqtool.errors import MqError
from mqtool.findings import FAMILIES, Finding
from mqtool.findings.code_ids import (
    KAFKA_LOG_IN_PROGRESS,
    KAFKA_LOG_TORN_TAIL,
)
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import record_scan
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, piece_size
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import kafka_broker
from mqtool.store.model.kafka_commits import CommitsFold, is_commits_partition
from mqtool.store.model.kafka_entries import (
    EntryDecode as EntryDecode,
)
from mqtool.store.model.kafka_entries import (
    FirstWalk as FirstWalk,
)
from mqtool.store.model.kafka_entries import (
    Folds as Folds,
)
from mqtool.store.model.kafka_entries import (
    ScannedEntry as ScannedEntry,
)
from mqtool.store.model.kafka_entries import (
    SegmentFold as SegmentFold,
)
from mqtool.store.model.kafka_entries import (
    SegmentFolder as SegmentFolder,
)
from mqtool.store.model.kafka_entries import (
    joined as joined,
)
from mqtool.store.model.kafka_indexes import (
    IndexFileResult as IndexFileResult,
)
from mqtool.store.model.kafka_segment import (
    RECOVERY_INTERVAL as RECOVERY_INTERVAL,
)
from mqtool.store.model.kafka_segment import (
    WALK_CHUNK as WALK_CHUNK,
)

# the segment reading (phase 2) lives in kafka_segment; its results are this model's too
from mqtool.store.model.kafka_segment import (
    DeepRangeTask as DeepRangeTask,
)
from mqtool.store.model.kafka_segment import (
    Placed as Placed,
)
from mqtool.store.model.kafka_segment import (
    SegmentResult as SegmentResult,
)
from mqtool.store.model.kafka_segment import (
    SegmentScan as SegmentScan,
)
from mqtool.store.model.kafka_segment import (
    SegmentTask as SegmentTask,
)
from mqtool.store.model.kafka_segment import (
    Sink as Sink,
)
from mqtool.store.model.kafka_segment import (
    check_deep_range as check_deep_range,
)
from mqtool.store.model.kafka_segment import (
    check_segment as check_segment,
)
from mqtool.store.model.kafka_shared import _SHARED, _Shared
from mqtool.store.model.kafka_shared import shared_reading as shared_reading
from mqtool.store.model.kafka_state import (
    _check_continuity,
    _check_files,
    _check_leader_epochs,
    _check_log_dir_checkpoints,
    _check_log_dir_state,
    _check_partition_files,
    _check_snapshot_offsets,
    _first_gone,
    _lost_data,
    _partition_offsets,
    _PartitionState,
    _read_offset_checkpoints,
    _read_snapshots,
)

# --- the reading ------------------------------------------------------------------------------------


#: --deep with --jobs: segments of at least twice this size have their record checks shared out
#: in ranges of about this size (boundaries from a framing walk: cheap next to record decoding).
DEEP_SPLIT_BYTES = 32 << 20

#: --deep: a run with at least this many bytes of ``.log`` walks the records of healthy v2
#: batches with the compiled walk (``record_scan``, numba; about 0.05 us a record against about
#: 1.2 us for the pure-Python walk).  Loading it costs a fixed 0.3-0.6 s of CPU once per run
#: (numba's import and its cache of the compiled code; about 1 s more the very first time, to
#: compile), and some 150 MiB of memory: what the Python walk spends on 0.5 M records, which
#: 1 GiB of 1 KiB records outnumbers two to one (smaller records: many more).
COMPILED_WALK_MIN_BYTES = 1 << 30


def _deep_ranges(seg: ks.KafkaSegment, jobs: int) -> list[DeepRangeTask]:
    """Batch-aligned ranges covering the segment up to its first framing error."""
    assert seg.log is not None  # a segment of log_segments()
    try:
        f = ReadOnlyFile(seg.log)
    except MqError:
        return []
    target = max(DEEP_SPLIT_BYTES, f.size // (jobs * 4))
    ranges = []
    with f:
        start, prior, last = 0, None, None
        walk = ks.LogFileWalk(f, 0, mode="framing", chunk=WALK_CHUNK)
        for pos, entry in walk:
            if pos - start >= target:
                ranges.append(DeepRangeTask(str(seg.log), seg.base_offset, seg.named, start, pos, prior))
                start, prior = pos, last
            offset = entry.offset
            if entry.magic == 2:
                offset += rb.peek_last_offset_delta(walk.buffer, pos - walk.buffer_start)
            last = offset if last is None else max(last, offset)
        if walk.valid_end > start:
            ranges.append(DeepRangeTask(str(seg.log), seg.base_offset, seg.named, start, walk.valid_end, prior))
    return ranges if len(ranges) > 1 else []


def _tasks(store: ks.KafkaStore, *, deep: bool, jobs: int, indexes: bool) -> tuple[list[SegmentTask | DeepRangeTask], list[_PartitionState]]:
    tasks: list[SegmentTask | DeepRangeTask] = []
    states = []
    for part in store.partitions:
        state = _PartitionState(part)
        states.append(state)
        segments = part.log_segments()
        for i, seg in enumerate(segments):
            ranges: list[DeepRangeTask] = []
            if deep and jobs > 1 and seg.log_size >= 2 * DEEP_SPLIT_BYTES:
                ranges = _deep_ranges(seg, jobs)
            tasks.append(
                SegmentTask(
                    str(part.path),
                    str(seg.log),
                    seg.base_offset,
                    seg.named,
                    str(seg.index) if seg.index else None,
                    str(seg.timeindex) if seg.timeindex else None,
                    str(seg.txnindex) if seg.txnindex else None,
                    is_last=i == len(segments) - 1,
                    deep=deep,
                    indexes=indexes,
                    deep_from=ranges[-1].stop if ranges else 0,
                    piece=piece_size(WALK_CHUNK),
                )
            )
            tasks.extend(ranges)
        if store.kind != "segment":
            for snap in part.kraft_snapshots:
                tasks.append(SegmentTask(str(part.path), str(snap), 0, False, deep=deep, kraft_snapshot=True))
    bootstrap = store.log_dir_file(ks.BOOTSTRAP_CHECKPOINT) if store.kind == "log-dir" else None
    if bootstrap is not None:
        tasks.append(SegmentTask(str(store.root), str(bootstrap), 0, False, deep=deep, kraft_snapshot=True))
    return tasks, states


Task = SegmentTask | DeepRangeTask
#: How the reading's segment tasks run: ``run(fn, tasks)`` yields ``fn(task)`` for each task, in
#: order (``map``; validate spreads them over processes for ``--jobs``).
Runner = Callable[[Callable[[Task], SegmentResult], list[Task]], Iterable[SegmentResult]]


def run_task(task: Task) -> SegmentResult:
    """One task of the reading: a segment's every check, or a share of its --deep record checks."""
    return check_deep_range(task) if isinstance(task, DeepRangeTask) else check_segment(task)


@dataclass(frozen=True)
class SegmentRead:
    """What one task found.  ``counted``: a segment of its partition's log (a KRaft snapshot,
    the bootstrap checkpoint and a --deep share are read but are no segment of the log)."""

    task: Task
    result: SegmentResult
    counted: bool
    #: ``read_store_entries``: the segment's first walk (its ``end``, or its ``error`` where a
    #: walk that stops at a broken entry stops)
    first_walk: ks.LogFileWalk | None = None
    #: ``read_store_entries``: the segment's last walk (the first, or the one resumed after the
    #: last broken entry: how the data after it ends)
    last_walk: ks.LogFileWalk | None = None
    #: ``read_store_entries``: the error that stopped the reading of the ``.log`` (it cannot be
    #: opened or read; the finding is KAFKA-FILE-UNREADABLE)
    io_error: MqError | None = None


@dataclass(frozen=True)
class PartitionRead:
    """A partition's offsets as its segments give them (the log start offset raised to the
    log-start checkpoint's, as ``UnifiedLog`` does) and how many segments were read."""

    name: str
    log_start_offset: int
    log_end_offset: int
    segments: int


Item = Placed | SegmentRead | PartitionRead


def _serial(fn: Callable[[Task], SegmentResult], tasks: list[Task]) -> Iterable[SegmentResult]:
    return map(fn, tasks)


def _scanning(tasks: list[Task], decode: EntryDecode, kept: _Shared | None = None) -> Iterator[SegmentResult | SegmentScan]:
    """``read_store(entries=...)``'s tasks: each segment as a ``SegmentScan`` (the reading yields
    its entries, then takes its result), a --deep share run as it is; with ``kept`` (inside
    ``shared_reading``, for a reader of results: ``read_store_entries(kept=True)``) a segment read
    there before, unchanged since, as its kept result alone (a copy: no entries, nothing read)."""
    for task in tasks:
        if not isinstance(task, SegmentTask):
            yield run_task(task)
            continue
        got = kept.result(task, recovery=task.fold is None) if kept is not None else None
        yield got if got is not None else SegmentScan(task, decode)


def _serving(tasks: list[Task], shared: _Shared, run: Runner) -> Iterator[SegmentResult]:
    """``read_store``'s tasks inside ``shared_reading``: a segment read there before, unchanged
    since, as its kept result (nothing read; without the recovery fold, which no reader of
    ``read_store`` takes), the others run by ``run``."""
    served = [shared.result(task, recovery=False) if isinstance(task, SegmentTask) else None for task in tasks]
    ran = iter(run(run_task, [task for task, got in zip(tasks, served) if got is None]))
    for got in served:
        yield got if got is not None else next(ran)


def _in_progress(res: SegmentResult) -> None:
    """The active segment of a running broker ends in an entry being written, not in damage."""
    res.findings = [
        Finding(
            KAFKA_LOG_IN_PROGRESS,
            f.path,
            f.position,
            f"the active segment of a running broker ends in an entry being written ({f.length} bytes so far)",
            length=f.length,
        )
        if f.code == KAFKA_LOG_TORN_TAIL
        else f
        for f in res.findings
    ]


def read_store(
    store: ks.KafkaStore,
    *,
    checks: frozenset[str] = frozenset(FAMILIES),
    deep: bool = False,
    jobs: int = 1,
    run: Runner = _serial,
) -> Iterator[Item]:
    """Everything the model states about ``store``, streamed in the order of the module
    docstring.  ``checks`` leaves out the reading a family needs when the family is not among
    them (``index``: the index files; ``offsets``: segment continuity); ``jobs`` is how many
    workers ``run`` spreads the tasks over (--deep: a big segment's records are shared out)."""
    for item in _reading(store, checks, deep, jobs, run, None):
        assert not isinstance(item, ScannedEntry)  # none asked for
        yield item


def read_store_entries(
    store: ks.KafkaStore,
    decode: EntryDecode,
    *,
    checks: frozenset[str] = frozenset(FAMILIES),
    partitions: Collection[str] | None = None,
    kept: bool = False,
    fold: SegmentFold | None = None,
    commits: bool = False,
    cuts: bool = False,
) -> EntryReading:
    """``read_store``, also yielding each entry of each segment's walk as it is read
    (``ScannedEntry``, decoded as ``decode`` asks), before the segment's ``SegmentRead``: a
    consumer that builds its own answer from the entries (dump, stats) reads each byte once.
    The tasks run here, one after the other.  A consumer that needs no more (``dump --limit``)
    stops the reading with ``EntryReading.stop``, which states what was read.  ``partitions``
    (partition dir paths): only those are read -- their segments and their partition's checks;
    the files of the log dir are listed as ever, its checkpoints are not judged (they speak of
    every partition) -- for a consumer of some partitions of a log dir (``dump --topic``).
    ``kept``: inside ``shared_reading``, a segment read there before comes as its ``SegmentRead``
    alone (its result holds ``recovery``), without entries: for a consumer of results.
    ``fold``: each segment's entries are folded into it too, by the same walk
    (``SegmentResult.fold_result``); with ``kept``, a segment kept with an equal fold comes with
    what that fold made of it (``shared_reading(fold=...)``), one kept without it is read.
    ``commits``: the ``__consumer_offsets`` segments' walks also fold their committed offsets
    (``kafka_commits.CommitsFold``, in ``SegmentResult.fold_result``; ``lag``), so that
    ``consumers.kafka_committed`` takes them from this reading.  ``cuts``: each segment's walk
    also says what a cut where ``LogSegment.recover`` stops removes (``SegmentResult.cut``; recover)."""
    return EntryReading(store, decode, checks, partitions, kept, fold, commits, cuts)


@dataclass
class _Progress:
    """Where ``_reading`` is, for ``EntryReading.stop``: the segment being scanned, the
    partitions' states (the segments read so far; the checks of the first ``checked`` stated),
    the topic configs for a gap, and whether the reading is over."""

    checks: frozenset[str]
    scan: SegmentScan | None = None
    states: list[_PartitionState] = field(default_factory=list)
    policies: kafka_broker.LazyPolicies | None = None
    checked: int = 0
    over: bool = False


class EntryReading:
    """``read_store_entries``' reading, item by item (``Iterator[Item | ScannedEntry]``), which a
    consumer may stop where it has what it needs (``stop``): nothing after the last entry it
    took is read, and what was read is still judged."""

    def __init__(
        self,
        store: ks.KafkaStore,
        decode: EntryDecode,
        checks: frozenset[str],
        partitions: Collection[str] | None = None,
        kept: bool = False,
        fold: SegmentFold | None = None,
        commits: bool = False,
        cuts: bool = False,
    ) -> None:
        self._progress = _Progress(checks)
        only = None if partitions is None else frozenset(partitions)
        self._items = _reading(store, checks, False, 1, _serial, decode, self._progress, only, kept, fold, commits=commits, cuts=cuts)

    def __iter__(self) -> EntryReading:
        return self

    def __next__(self) -> Item | ScannedEntry:
        return next(self._items)

    @property
    def over(self) -> bool:
        """The reading has yielded its last item (``stop`` has nothing to add)."""
        return self._progress.over

    def stop(self) -> list[Placed]:
        """End the reading where the consumer left it, and what the model states about the bytes
        read that it has not yielded yet: the findings of the segment being read, up to the last
        entry yielded (the model judges an entry before yielding it), and the continuity of the
        segments read in each partition (``_check_continuity``: an overlap or gap between two of
        them; the one being read counts from its base offset, known from its name).  The
        partition's and the log dir's other checks (checkpoints, snapshots, leader epochs, the
        log end) need the whole log: they are about what was not read, so not stated.  Nothing
        when the reading is over (its items said everything)."""
        progress = self._progress
        if progress.over:
            return []
        self._items.close()  # the segment's walk ends here: its file and indexes are closed
        progress.over = True
        out = Sink()
        scan, states = progress.scan, progress.states
        read = {id(s): list(s.results) for s in states}
        if scan is not None:
            res = scan.result
            for finding in res.findings:
                out.add(finding, res.path)
            for state in states:
                if str(state.part.path) == res.partition and res.path in {str(s.log) for s in state.part.log_segments()}:
                    read[id(state)].append(res)
        if "offsets" in progress.checks and progress.policies is not None:
            for state in states[progress.checked :]:
                if read[id(state)]:
                    _check_continuity(_PartitionState(state.part, read[id(state)]), out, progress.policies)
        return out.drain()


def _reading(
    store: ks.KafkaStore,
    checks: frozenset[str],
    deep: bool,
    jobs: int,
    run: Runner,
    entries: EntryDecode | None,
    progress: _Progress | None = None,
    only: frozenset[str] | None = None,
    kept: bool = False,
    fold: SegmentFold | None = None,
    *,
    commits: bool = False,
    cuts: bool = False,
) -> Generator[Item | ScannedEntry, None, None]:
    out = Sink()
    orphans = _check_files(store, out)
    yield from out.drain()

    tasks, states = _tasks(store, deep=deep, jobs=jobs, indexes="index" in checks)
    if only is not None:  # some partitions: the others' segments are not read, nor judged
        tasks = [t for t in tasks if isinstance(t, SegmentTask) and t.partition in only]
        states = [s for s in states if str(s.part.path) in only]
    shared = _SHARED.get()
    # the group coordinator's partitions: their walks also fold the committed offsets (kept for
    # lag and clean inside shared_reading; asked by ``commits``)
    coordinator = {str(p.path) for p in store.partitions if is_commits_partition(p)}

    def also(t: SegmentTask, wanted: bool) -> CommitsFold | None:
        return CommitsFold() if wanted and t.partition in coordinator else None

    if shared is not None and entries is None and not deep:  # validate's reading: recover's fold and the block's too, kept
        tasks = [
            replace(t, recovery_interval=RECOVERY_INTERVAL, fold=joined(shared.fold, also(t, True))) if isinstance(t, SegmentTask) and not t.kraft_snapshot else t
            for t in tasks
        ]
    elif fold is not None or commits:
        tasks = [replace(t, fold=joined(fold, also(t, commits))) if isinstance(t, SegmentTask) and not t.kraft_snapshot else t for t in tasks]
    if cuts:
        tasks = [replace(t, cuts=True) if isinstance(t, SegmentTask) and not t.kraft_snapshot else t for t in tasks]
    if deep and sum(seg.log_size for s in states for seg in s.part.log_segments()) >= COMPILED_WALK_MIN_BYTES:
        if record_scan.compiled_available():  # loaded here, before ``run`` forks its workers
            tasks = [replace(t, compiled_walk=True) for t in tasks]
    by_partition = {str(s.part.path): s for s in states}
    policies = kafka_broker.LazyPolicies(store)  # the metadata log's topic configs, read only for a gap between segments
    if progress is not None:
        progress.states, progress.policies = states, policies
    # a running broker (its .lock held): the end of each partition's active segment is being
    # written, so a partial entry there is in progress, not damage
    live = store.log_dir is not None and probe_record_lock(store.log_dir / ks.LOCK_FILE) is not None
    active = {str(s.part.log_segments()[-1].log) for s in states if s.part.log_segments()} if live else set()
    results: Iterable[SegmentResult | SegmentScan]
    if entries is not None:
        results = _scanning(tasks, entries, shared if kept else None)
    elif shared is not None and not deep:
        results = _serving(tasks, shared, run)
    else:
        results = run(run_task, tasks)
    started = time.perf_counter()
    for task, res in zip(tasks, results):
        first_walk = last_walk = None
        io_error = None
        if isinstance(res, SegmentScan):
            scan = res
            if progress is not None:
                progress.scan = scan
            yield from scan
            res, first_walk, last_walk, io_error = scan.result, scan.first_walk, scan.last_walk, scan.io_error
        counted = False
        if isinstance(task, SegmentTask):
            if res.path in active:
                _in_progress(res)
            state = by_partition.get(res.partition)
            if state is not None and res.path in {str(s.log) for s in state.part.log_segments()}:
                state.results.append(res)
                counted = True
        if progress is not None:
            progress.scan = None  # its findings are the SegmentRead's
        if shared is not None:
            shared.keep(task, res, time.perf_counter() - started)
        yield SegmentRead(task, res, counted, first_walk, last_walk, io_error)
        started = time.perf_counter()

    checkpoints = _read_offset_checkpoints(store, out) if store.kind != "segment" and store.log_dir is not None else {}
    yield from out.drain()
    _, log_starts = checkpoints.get(cpf.LOG_START_OFFSET_CHECKPOINT, (None, None))
    for state in states:
        _partition_offsets(state)
        if log_starts and state.part.key in log_starts:
            # the broker's log start offset: max(checkpoint, first segment base)
            state.log_start_offset = max(state.log_start_offset, log_starts[state.part.key])
        mine = orphans.get(str(state.part.path), [])
        snapshots: list[ks.ProducerSnapshotFile] = []
        if store.kind != "segment":
            snapshots = _read_snapshots(state, out)
            if state.part.suffix is None and not live:  # a running broker's log grows past what was read
                state.lost = _lost_data(state, checkpoints, snapshots, mine)
                if state.lost is not None:
                    out.add(state.lost)
        for base, finding in mine:
            if state.lost is not None and base >= _first_gone(state):
                finding = finding.caused_by(state.lost)
            out.add(finding)
        if "offsets" in checks:
            _check_continuity(state, out, policies)
        if store.kind != "segment":
            _check_leader_epochs(state, out)
            _check_snapshot_offsets(state, snapshots, out)
            _check_partition_files(state.part, out)
        if progress is not None:
            progress.checked += 1  # its continuity is among the items below
        yield from out.drain()
        yield PartitionRead(state.part.name, state.log_start_offset, state.log_end_offset, len(state.results))
    if store.kind != "segment" and only is None:
        _check_log_dir_checkpoints(store, states, checkpoints, out, live)
        _check_log_dir_state(store, states, out)
        yield from out.drain()
    if progress is not None:
        progress.over = True


def findings(store: ks.KafkaStore, *, checks: frozenset[str] = frozenset(FAMILIES)) -> Iterator[Finding]:
    """Every finding of ``read_store`` (in its order) whose family is among ``checks``."""
    for item in read_store(store, checks=checks):
        if isinstance(item, Placed):
            if item.finding.family in checks:
                yield item.finding
        elif isinstance(item, SegmentRead):
            yield from (f for f in item.result.findings if f.family in checks)
