"""recover for RocketMQ stores (``DefaultMessageStore.recover``, ``CommitLog.recoverAbnormally``): the state the broker reaches on a clean start, safely.

Planning follows the recovery of the broker version modelled (``store.model.rocketmq_broker``:
``--broker-version``, else ``--config``'s broker.conf, else the store's marks, else the newest;
the plan's ``facts["broker"]`` names it):

* mode ``normal`` (no ``abort``, ``CommitLog.recoverNormally``): RocketMQ 4.x-5.3.1 scan from the
  third-last CommitLog file, 5.3.2+ (apache/rocketmq 9a891f1d49, #8915) from the newest file at
  or below the highest CommitLog offset any ConsumeQueue unit points to (``ConsumeQueue.recover``);
  damage in the files before the start stays, as the broker keeps it (a plan note says so);
  ``abnormal`` (``abort`` present, ``recoverAbnormally``, the same in both): from the newest file
  whose first record is older than the checkpoint's ``min_timestamp()``; ``auto`` picks by the
  ``abort`` file;
* the scan ends at the first record that fails (BLANK goes to the next file): that is the valid
  end (``processOffset``).  What follows it is cut: the rest of that file is zeroed (files keep
  their pre-allocated size, as the broker requires) and later files are deleted
  (``truncateDirtyFiles``); a zero-length last file is deleted (5.1.3+ does the same);
* every CommitLog file the store keeps gets the configured size (``MappedFileQueue.load``
  refuses any other length): a short one whose data ends within it is zero-filled, the excess
  of a long one whose data ends within the size is cut off;
* what the plan cannot fix (a missing middle file, a short file whose records are gone, records
  past the size) is named before ``--apply`` as the store model's findings, and needs ``--force``;
* ConsumeQueues: units pointing at or past the valid end are cut, a file whose first unit does and
  later CQ files are deleted (``truncateDirtyLogicFiles``); bytes after a queue's end are cut;
  records the queues lack (dispatch lag) are dispatched into them;
* IndexFiles whose entries point past the valid end, or that lack keys of records before it, are
  rebuilt from the CommitLog (``--rebuild-index`` rebuilds all of them), continuing where the
  last kept file stops; the new files are swapped in under a journal that the next run finishes
  if this one is interrupted;
* the checkpoint gets the store time of the last valid record; ``abort`` is removed last, and only
  when a validation of the result finds no errors.

The plan reads each CommitLog byte once: one reading per file (``queue_offsets.read_commitlog``:
the column walk of a healthy file, else the precise record walk the recovery itself makes, body
CRCs checked) gives every file's queue offsets and how it ends, the recovery window's valid end
(``_Window``, judged while the file is open, its cut too), the records the dispatch steps count
(``ReputMessageService``'s work: kept as columns for the newest healthy files, ``_DispatchRows``;
an older or damaged file is walked again) and the read speed of the restart estimate (that
reading's own bytes and time).

Where the broker would silently drop valid records (a broken record followed by good ones), the
plan counts them and needs ``--force``; they are quarantined either way.  Where mqtool
deliberately does more than the broker, the step says so ("the broker would ...; mqtool ..."):
after a crash ``IndexService.load`` destroys the IndexFiles that end after the checkpoint's
``indexMsgTimestamp``, while mqtool keeps those it verified (``remove-abort``); records before
the ConsumeQueues' highest offset that their queue lacks (a deleted last ConsumeQueue file) are
never dispatched by the broker, which would hand their queue offsets out again, while mqtool
writes their units (``dispatch-cq``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.errors import MqError, PlanChangedError, StoreLayoutError, UnsupportedFormatError
from mqtool.findings import Finding, Severity
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import (
    SYSFLAG_TRANSACTION_MASK,
    SYSFLAG_TRANSACTION_PREPARED,
    SYSFLAG_TRANSACTION_ROLLBACK,
    MessageRecord,
)
from mqtool.formats.rocketmq.properties import split_keys
from mqtool.ops.recover import ApplyContext, ApplyResult, RecoverPlan, Step, apply_plan, observe, relative, resolve
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, nonzero_extent, read_small_file
from mqtool.store.model import consume_queue as model_cq
from mqtool.store.model import queue_offsets
from mqtool.store.model import rocketmq as model
from mqtool.store.model import rocketmq_broker as brokers
from mqtool.store.quarantine import region_crc
from mqtool.store.rocksdb_cq import is_rocksdb_cq
from mqtool.store.writer import IndexBuilder, cq_tags_code

MODES = ("auto", "normal", "abnormal")

#: Where ``rebuild-index`` builds the new IndexFiles, and the journal that marks them complete.
INDEX_STAGING = ".mqtool-staging-index"
SWAP_JOURNAL = "swap.json"


@dataclass(frozen=True)
class RecoverOptions:
    mode: str = "auto"
    rebuild_cq: bool = False  # rebuild every ConsumeQueue from the CommitLog
    rebuild_index: bool = False  # rebuild every IndexFile
    queues: tuple[str, ...] = ()  # "topic/queueId" limits --rebuild-cq
    commitlog_file_size: int | None = None
    cq_file_size: int | None = None
    index_hash_slot_num: int | None = None
    index_num: int | None = None
    broker_version: str | None = None  # --broker-version X.Y.Z
    version_hints: tuple[brokers.VersionHint, ...] = ()  # what --config's broker.conf says of the version
    config_path: str | None = None
    message_index_enable: bool | None = None  # broker.conf's messageIndexEnable (None: judged from the store)


@dataclass
class _QueueState:
    topic: str
    queue_id: int
    directory: Path
    file_size: int
    max_offset: int = 0  # queue offset after the planned cuts
    max_physic_offset: int = -1  # offset of the last kept unit (-1: none)
    missing_from: int | None = None  # commitlog offset of the first record to dispatch
    dispatch: int = 0
    first_dispatch_qoff: int | None = None
    before_cq_max: int = 0  # records to dispatch before the ConsumeQueues' highest offset (the broker never does)


def _is_dispatched(sys_flag: int) -> bool:
    tx = sys_flag & SYSFLAG_TRANSACTION_MASK
    return tx != SYSFLAG_TRANSACTION_PREPARED and tx != SYSFLAG_TRANSACTION_ROLLBACK


def _start_index(store: rmq.RocketMQStore, segments: list[rmq.Segment], mode: str, broker: brokers.BrokerModel, cq_max: int) -> int:
    return brokers.recovery_start_index(store, segments, mode, broker, cq_max)


@dataclass
class _Scan:
    """What the CommitLog part of a plan established: the broker modelled, the ConsumeQueues'
    highest CommitLog offset, and where that broker's recovery reads."""

    broker: brokers.BrokerModel
    cq_max: int
    segments: list[rmq.Segment]
    start: int
    last_store_ts: int = 0
    kept_damage: list[Finding] = field(default_factory=list)
    #: the queue offsets of the whole CommitLog, from the same reading (a plan's, not a preview's)
    offsets: queue_offsets.QueueOffsets | None = None
    #: bytes the recovery window's reading judged and the seconds it took: the read speed
    read_bytes: int = 0
    read_seconds: float = 0.0
    #: the records of the newest healthy files the reading read as columns (``_DispatchRows``, by
    #: path): the dispatch scan takes them from there instead of walking those files again
    rows: dict[Path, _DispatchRows] = field(default_factory=dict)
    #: the reading of the last data file, when the recovery's scan read it for ``on_last_record``
    newest: queue_offsets.FileReading | None = None
    #: the queue offsets of each file the reading read (by path)
    file_offsets: dict[str, queue_offsets.FileQueueOffsets] = field(default_factory=dict)


#: records a plan keeps for its dispatch scan (``_DispatchRows``, ~40 bytes each) of the files its
#: reading read as columns (healthy ones, and the records of others up to where their data ends):
#: the newest files, as many as fit; an older file the scan needs is walked again
DISPATCH_ROWS_KEPT = 1 << 20


@dataclass(frozen=True)
class _DispatchRows:
    """What the dispatch scan (``_scan_undispatched``) needs of the records of a healthy CommitLog
    file, from the columns its one reading produced (``FileColumns``): file position, TOTALSIZE,
    topic (a number into ``topics``), queue id, QUEUEOFFSET, dispatched (not a prepared or rolled
    back transaction record)."""

    position: Any  # numpy arrays: numpy is loaded only where a file was read as columns
    size: Any
    topic: Any
    queue_id: Any
    queue_offset: Any
    dispatched: Any
    topics: list[str]
    #: file positions of the records the broker indexes (``derived.keyed_positions``), for the
    #: IndexFile steps' search for keyed records no IndexFile holds; None: not known (a file
    #: that is not healthy: the IndexFile steps walk it)
    keyed: Any
    #: the rows are every record of the file before this file position (None: every record of
    #: the file): a scan that needs records after it walks the file
    through: int | None = None

    @classmethod
    def of(cls, columns: Any) -> _DispatchRows:
        from mqtool.store.model.derived import keyed_positions  # numpy: loaded already, the columns are numpy's

        return cls(columns.position, columns.size, columns.topic, columns.queue_id, columns.queue_offset, columns.dispatched(), columns.topics, keyed_positions(columns))

    @classmethod
    def of_read(cls, read: queue_offsets.RecordsRead) -> _DispatchRows:
        """The records the reading of a file that is not healthy read (``queue_offsets.RecordsRead``)."""
        columns = read.columns()
        return cls(columns.position, columns.size, columns.topic, columns.queue_id, columns.queue_offset, columns.dispatched(), columns.topics, None, read.through)

    def __len__(self) -> int:
        return len(self.position)


def _keep_rows(kept: dict[Path, _DispatchRows], path: Path, rows: _DispatchRows) -> None:
    """Keep ``rows`` of the file ``path``, dropping the oldest files kept beyond ``DISPATCH_ROWS_KEPT``."""
    kept[path] = rows
    total = sum(len(r) for r in kept.values())
    while total > DISPATCH_ROWS_KEPT and kept:
        oldest = next(iter(kept))
        total -= len(kept.pop(oldest))


class _Window:
    """The modelled broker's recovery scan (``CommitLog.recoverNormally`` / ``recoverAbnormally``)
    over ``segments[start:]``, judged from the one reading of each file
    (``queue_offsets.read_commitlog``: the columns of a healthy file, else the precise walk with body
    CRCs checked, the newest file ending at a torn tail): it goes on past a file that ends in an
    END_OF_FILE record, and stops at the first file whose data ends otherwise (``process_offset``).
    The file holding the valid end is judged for the cut while it is open (``cut``), each file
    after it for its deletion (``later``); a file the reading does not cover (not a data file, or
    one it could not read) is walked here."""

    def __init__(self, store: rmq.RocketMQStore, segments: list[rmq.Segment], start: int, process_offset: int) -> None:
        self.store, self.segments = store, segments
        self.next = start  # index in ``segments`` of the next file the scan reads
        self.done = not segments
        self.process_offset = process_offset
        self.end_index: int | None = None
        self.stop_kind = "no-data"
        self.last_store_ts = 0
        #: records the recovery keeps that validate still calls damaged (a PHYSICALOFFSET that is
        #: not the record's address, a bad __CRC32#): the plan cannot fix them (``_plan_unfixable``)
        self.kept_damage: list[Finding] = []
        #: the file holding the valid end: non-zero extent after it, whether an END_OF_FILE record
        #: is there, decodable records a cut drops, bytes it zeroes
        self.cut: tuple[tuple[int, int] | None, bool, int, int] = (None, False, 0, 0)
        #: each data file after it: its non-zero extent and the decodable records it holds
        self.later: dict[Path, tuple[tuple[int, int] | None, int]] = {}
        self.read_bytes = 0
        self.read_seconds = 0.0
        # the newest file's walk ends at a torn tail as validate's does (the store model's rule): a
        # last record whose tail is zeros is cut like any torn tail, even where it decodes
        self.last_path = store.commitlog[model.last_data_file(store.commitlog)].path if store.commitlog else None

    def wants(self, seg: rmq.Segment) -> bool:
        return not self.done and self.segments[self.next].path == seg.path

    def is_later(self, seg: rmq.Segment) -> bool:
        return self.done and self.end_index is not None and seg.base > self.segments[self.end_index].base

    def take(self, seg: rmq.Segment, f: ReadOnlyFile | None, reading: queue_offsets.FileReading) -> None:
        """The next file of the scan, as the one reading read it."""
        if f is None or reading.failed:
            self._walk(seg)  # the recovery's walk meets what the reading met, and says so
            return
        self.read_bytes += reading.bytes_read
        self.read_seconds += reading.seconds
        if reading.records:
            self.last_store_ts = reading.last_store_timestamp
        if reading.end is not None:
            # a healthy file (``read_file_columns``, or validate's reading of it kept): no record
            # validate calls damaged, and only zeros after data that ends in zeros
            end = reading.end
            self._ended(seg, f, end.position, end.kind, end.kind, reading.tails, reading.nexts)
            return
        walk = reading.walk
        assert walk is not None  # a reading that did not fail has one or the other
        self._walked(seg, f, queue_offsets.WalkResult.of(walk, reading.record_findings + model.walk_record_findings(walk)), reading.tails, reading.nexts)

    def _walk(self, seg: rmq.Segment) -> None:
        def last_store_ts(_pos: int, rec: MessageRecord) -> None:
            self.last_store_ts = rec.store_timestamp

        with ReadOnlyFile(seg.path) as f:
            started = time.perf_counter()
            walked = queue_offsets.walk_file(
                f, check_crc=True, last=seg.path == self.last_path, file_size=self.store.commitlog_file_size, base=seg.base, on_record=last_store_ts
            )
            self.read_seconds += time.perf_counter() - started
            self.read_bytes += walked.valid_end
            self._walked(seg, f, walked, {})

    def _walked(
        self, seg: rmq.Segment, f: ReadOnlyFile, walked: queue_offsets.WalkResult, tails: dict[int, tuple[int, int] | None], nexts: model.NextRecords | None = None
    ) -> None:
        self.kept_damage += walked.record_findings
        kind = walked.end.kind if walked.end is not None else None
        self._ended(seg, f, walked.valid_end, kind, kind or f"broken record ({walked.error})", tails, nexts)

    def _ended(
        self,
        seg: rmq.Segment,
        f: ReadOnlyFile,
        valid_end: int,
        kind: str | None,
        stop_kind: str,
        tails: dict[int, tuple[int, int] | None],
        nexts: model.NextRecords | None = None,
    ) -> None:
        """The file's data ends at ``valid_end`` (``kind``): the scan goes on to the next file after
        an END_OF_FILE record, else it stops here (``tails``: the non-zero extents after positions
        the reading judged already, ``FileReading.tails``; ``nexts``: the records it found after
        positions, ``FileReading.nexts``)."""
        self.process_offset = seg.base + valid_end
        self.end_index = self.next
        if kind == "blank" and self.next + 1 < len(self.segments):
            self.next += 1
            return
        self.stop_kind = stop_kind
        self.done = True
        file_size = self.store.commitlog_file_size
        # bytes past the configured file size go with the excess (``_plan_commitlog_sizes``)
        limit = file_size if file_size and seg.size > file_size and valid_end <= file_size else seg.size
        if valid_end < f.size and rmq.blank_at(f, valid_end):
            return
        extent = tails[valid_end] if valid_end in tails else nonzero_extent(f, valid_end)
        if extent is None:
            return
        dropped = queue_offsets.count_records_after(f, seg.base, valid_end, nexts, stop=extent[1])
        # non-zero bytes only past the size: nothing to zero before it
        length = min(extent[1], limit) - valid_end if extent[0] < limit else 0
        self.cut = (extent, False, dropped, length)

    def take_later(self, seg: rmq.Segment, f: ReadOnlyFile | None) -> None:
        """A data file after the one holding the valid end (``truncateDirtyFiles`` deletes it)."""
        if f is not None:
            self.later[seg.path] = _later_extent(f, seg)

    def finish(self) -> None:
        """The rest of the scan: files the reading does not cover (after the last data file)."""
        while not self.done:
            self._walk(self.segments[self.next])


def _later_file(seg: rmq.Segment) -> tuple[tuple[int, int] | None, int]:
    with ReadOnlyFile(seg.path) as f:
        return _later_extent(f, seg)


def _later_extent(f: ReadOnlyFile, seg: rmq.Segment) -> tuple[tuple[int, int] | None, int]:
    """A file wholly after the valid end: its non-zero extent and the decodable records it holds."""
    extent = nonzero_extent(f, 0)
    return extent, (queue_offsets.count_records_in(f, seg.base) if extent else 0)


def plan_rocketmq(path: str | Path, options: RecoverOptions = RecoverOptions()) -> RecoverPlan:
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    # its dispatch steps would write file ConsumeQueue units beside the broker's RocksDB one
    _refuse_rocksdb_cq(store, "recover does not plan for")
    plan, scan = _plan_commitlog(store, options, whole=True)
    root, mode, broker, segments, start, cq_max = store.root, plan.mode, scan.broker, scan.segments, scan.start, scan.cq_max
    process_offset = plan.valid_end if plan.valid_end is not None else store.commitlog_min_offset
    last_store_ts, kept_damage = scan.last_store_ts, scan.kept_damage
    _estimate_restart(store, plan.facts["restart"], scan)

    # --- 3. ConsumeQueues -----------------------------------------------------------------------------
    # every queue's QUEUEOFFSETs in the whole CommitLog, from the plan's one reading (the store
    # model's continuity rule, the column walk for healthy files): the queues that have records and
    # no ConsumeQueue, and the records that break their queue's sequence
    offsets = scan.offsets
    assert offsets is not None  # a whole reading
    journal = _read_cq_journal(store)
    first_cq_step = len(plan.steps)
    queues = _plan_queues(store, plan, process_offset, options, journal)
    _plan_dispatch(store, plan, queues, segments, start, process_offset, options, offsets, cq_max, scan.rows)
    _plan_queue_heads(store, plan, queues, process_offset, options, offsets)
    _plan_cq_journal(store, plan, queues, first_cq_step, journal, options)

    # --- 4. IndexFiles ------------------------------------------------------------------------------
    _plan_index(store, plan, process_offset, options, {p: r.keyed for p, r in scan.rows.items() if r.keyed is not None})

    # --- 4b. the 5.x timer store: TimerLog units and wheel slots the CommitLog's end leaves stale
    # (imported here: its formats load numpy, which info's restart preview, built on this module, must not)
    from mqtool.ops.recover.timer import plan_timer

    plan_timer(store, plan, process_offset)

    # --- 5. checkpoint, abort ---------------------------------------------------------------------
    _plan_checkpoint(store, plan, last_store_ts)
    if store.has_abort:
        plan.add(
            Step(
                "remove-abort",
                relative(root, store.abort_path),
                "unclean-shutdown marker; removed last, only when the recovered store validates without errors" + _index_kept_text(store, plan, broker),
                expect=observe(store.abort_path),
            )
        )
    # a record the recovery keeps that breaks its queue's QUEUEOFFSET sequence stays as it is (the
    # broker keeps it too): recover cannot rewrite it
    bases = {str(seg.path): seg.base for seg in store.commitlog}
    kept_damage += [x for x in offsets.findings if x.path in bases and bases[x.path] + (x.position or 0) < process_offset]
    _plan_unfixable(store, plan, store.commitlog.index(segments[start]) if segments else 0, kept_damage, offsets.end_findings)
    _note_unscanned_damage(plan, broker, mode, segments[start] if segments else None)
    return plan


def restart_preview(path: str | Path, options: RecoverOptions = RecoverOptions()) -> dict[str, Any]:
    """What the modelled broker's restart does to the store at ``path`` (``info``'s ``restart``,
    and ``facts["restart"]`` of a plan, from the same code): which recovery (``abort``), where it
    starts (file and CommitLog offset: ``store.model.rocketmq_broker``), how many bytes it scans
    (from there to the valid end), what its ``truncateDirtyFiles`` drops (records, bytes, files),
    what it re-dispatches and re-indexes, whether a file's size stops it from starting
    (``MappedFileQueue.load``), and about how long the scan takes at this disk's measured read speed."""
    return read_restart(path, options)[0]


@dataclass(frozen=True)
class RestartReading:
    """What the restart preview's reading read: the newest CommitLog file holding records, when
    the recovery's scan read it (None when it stops before), and the queue offsets of every file
    it read (by path)."""

    newest: queue_offsets.FileReading | None
    file_offsets: Mapping[str, queue_offsets.FileQueueOffsets]


def read_restart(
    path: str | Path, options: RecoverOptions = RecoverOptions(), *, on_last_record: Callable[[int, MessageRecord], None] | None = None
) -> tuple[dict[str, Any], RestartReading]:
    """``restart_preview``, and what its reading read (``RestartReading``): with ``on_last_record``
    the newest file is walked record by record, each record handed to it, and its reading states
    how it ends (``queue_offsets.read_commitlog``), so ``info`` takes the newest file, and the
    queue offsets of the files before it, from the same reading."""
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    # the broker's restart takes the ConsumeQueue maximum from RocksDB's dispatch checkpoint then
    # (``RocksDBConsumeQueueStore``), which this model does not read
    _refuse_rocksdb_cq(store, "the restart preview does not model")
    plan, scan = _plan_commitlog(store, options, on_last_record=on_last_record)
    restart: dict[str, Any] = plan.facts["restart"]
    _estimate_restart(store, restart, scan)
    return restart, RestartReading(scan.newest, scan.file_offsets)


def _refuse_rocksdb_cq(store: rmq.RocketMQStore, what: str) -> None:
    """UnsupportedFormatError (exit 4) for a store whose ConsumeQueue is a RocksDB database
    (``storeType=defaultRocksDB``, 5.2+): ``what`` does not cover it yet."""
    if is_rocksdb_cq(store.root):
        raise UnsupportedFormatError(
            f"{what} a RocksDB ConsumeQueue (storeType=defaultRocksDB) yet",
            path=store.consumequeue_dir,
            expected="consumequeue/<topic>/<queueId>/ files",
            found="a RocksDB database",
        )


def _estimate_restart(store: rmq.RocketMQStore, restart: dict[str, Any], scan: _Scan) -> None:
    """How long the restart's scan takes at this disk's read speed: the first figure of the
    process, else the speed of the plan's own reading of the recovery window (``_Window``), else,
    when that read nothing, a timed read of the files the recovery reads."""
    speed = brokers.device_speed(store.root, scan.read_bytes, scan.read_seconds, [s.path for s in scan.segments[scan.start :]])
    restart["read_bytes_per_second"] = round(speed) if speed else None
    restart["estimated_seconds"] = round(restart["scan_bytes"] / speed, 3) if speed else None


def _restart_facts(store: rmq.RocketMQStore, plan: RecoverPlan, scan: _Scan) -> dict[str, Any]:
    """The broker's restart as the CommitLog part of ``plan`` models it (before mqtool's own
    ConsumeQueue and IndexFile steps, which the broker does not take)."""
    start_offset = int(plan.facts["scan_start_offset"])
    valid_end = plan.valid_end if plan.valid_end is not None else start_offset
    steps = [s for s in plan.steps if s.path.startswith("commitlog/")]
    cuts: list[dict[str, Any]] = [{"file": s.path, "position": s.position, "length": s.length} for s in steps if s.action == "cut"]
    deleted = [s for s in steps if s.action == "delete" and "valid_records_cut" in s.details]
    if plan.mode == "abnormal":
        dispatch_from = start_offset  # recoverAbnormally dispatches every record it reads
    else:
        dispatch_from = max(scan.cq_max, store.commitlog_min_offset)
    index_ts, destroyed = _index_files_destroyed(store) if plan.mode == "abnormal" else (None, [])
    return {
        **scan.broker.to_dict(),
        "recovery": plan.mode,
        "starts_at": {
            "file": f"commitlog/{plan.facts['scan_start_file']}" if plan.facts.get("scan_start_file") else None,
            "commitlog_offset": start_offset,
            "rule": _start_rule(scan.broker, plan.mode),
        },
        "valid_end": valid_end,
        "stops_at": plan.facts.get("valid_end_reason"),
        "scan_bytes": max(0, valid_end - start_offset),
        "drops": {
            "records": plan.records_dropped,
            "bytes": sum(c["length"] or 0 for c in cuts) + sum(s.expect.get("size", 0) or 0 for s in deleted),
            "cut": cuts,
            "files_deleted": [s.path for s in deleted],
        },
        "rebuilds": {
            "dispatch_from_commitlog_offset": dispatch_from,
            "dispatch_bytes": max(0, valid_end - dispatch_from),
            "index_msg_timestamp": index_ts,
            "index_files_destroyed": destroyed,
        },
        "refuses_to_start": [s.reason for s in steps if s.action in ("extend", "truncate")],
    }


def _start_rule(broker: brokers.BrokerModel, mode: str) -> str:
    if mode == "abnormal":
        return "CommitLog.recoverAbnormally: the newest file whose first record is at or before the checkpoint's min timestamp"
    if broker.starts_at_cq_max:
        return "CommitLog.recoverNormally (5.3.2+): the newest file at or below the ConsumeQueues' highest CommitLog offset"
    return "CommitLog.recoverNormally (4.x-5.3.1): the third-last file"


def _plan_commitlog(
    store: rmq.RocketMQStore,
    options: RecoverOptions,
    *,
    whole: bool = False,
    on_last_record: Callable[[int, MessageRecord], None] | None = None,
) -> tuple[RecoverPlan, _Scan]:
    """Steps 0-2 of a plan: the broker modelled, where its recovery starts and ends, and the
    CommitLog cuts and deletions (``truncateDirtyFiles``); ``facts["restart"]`` describes them.
    ``whole``: the reading covers every CommitLog file holding records, for the plan's queue
    offsets (``_Scan.offsets``); else only the files the recovery reads (the restart preview).
    ``on_last_record``: the last data file, when the scan reads it, is walked record by record,
    each record handed to it (``queue_offsets.read_commitlog``; ``_Scan.newest`` is its reading)."""
    root = store.root
    mode = options.mode
    if mode == "auto":
        mode = "abnormal" if store.has_abort else "normal"
    plan = RecoverPlan("rocketmq", str(root), mode)
    broker = brokers.resolve_broker(root, options.broker_version, options.version_hints, options.config_path)
    cq_max = brokers.consume_queue_max_physic_offset(store)
    plan.facts["broker"] = broker.to_dict()
    plan.facts["consume_queue_max_commitlog_offset"] = cq_max
    segments = [s for s in store.commitlog if s.size > 0]
    # zero-length files after the last one holding bytes (5.1.3+ deletes a zero-length last file);
    # one before it is a file whose data is gone: deleting it would leave a gap, so it stays and
    # ``_plan_unfixable`` names it
    for seg in store.commitlog:
        if seg.size == 0 and (not segments or seg.base > segments[-1].base):
            plan.add(
                Step(
                    "delete",
                    relative(root, seg.path),
                    "zero-length CommitLog file after the last one holding data (RocketMQ 4.x-5.1.2 refuse to start with it; "
                    "5.1.3+ delete it at load, MappedFileQueue.load, as this step does)",
                    expect=observe(seg.path),
                )
            )

    # --- 1. where valid data ends --------------------------------------------------------------
    start = _start_index(store, segments, mode, broker, cq_max)
    plan.facts["scan_start_file"] = segments[start].name if segments else None
    plan.facts["scan_start_offset"] = segments[start].base if segments else store.commitlog_min_offset
    window = _Window(store, segments, start, segments[start].base if segments else store.commitlog_min_offset)
    # one reading of the CommitLog: the files the recovery reads (and, for a plan, every file
    # holding records: their queue offsets and how each ends), each read once, its window and
    # cut judged from that reading while the file is open
    offsets = queue_offsets.QueueOffsets() if whole else None
    first = store.commitlog.index(segments[start]) if segments and offsets is None else 0
    rows: dict[Path, _DispatchRows] = {}
    newest = None
    file_offsets: dict[str, queue_offsets.FileQueueOffsets] = {}
    for _i, seg, f, reading in queue_offsets.read_commitlog(store, first, end_findings=offsets is not None, on_last_record=on_last_record):
        file_offsets[str(seg.path)] = reading.offsets
        if seg.path == window.last_path and on_last_record is not None:
            newest = reading  # kept for the caller (its columns are not held otherwise)
        if offsets is not None:
            offsets.add_file(reading.offsets, seg.base, store.commitlog_file_size)
            if reading.columns is not None:
                _keep_rows(rows, seg.path, _DispatchRows.of(reading.columns.columns))
            elif reading.records_read is not None:
                _keep_rows(rows, seg.path, _DispatchRows.of_read(reading.records_read))
        if window.wants(seg):
            window.take(seg, f, reading)
        elif window.is_later(seg):
            window.take_later(seg, f)
        if offsets is None and window.done and on_last_record is None:
            break  # a preview reads no further, unless its caller wants the newest file's reading
    window.finish()
    process_offset, end_seg_index, stop_kind = window.process_offset, window.end_index, window.stop_kind
    plan.valid_end = process_offset
    plan.facts["valid_end_reason"] = stop_kind
    plan.facts["last_store_timestamp"] = window.last_store_ts

    # --- 2. CommitLog cuts ------------------------------------------------------------------------
    if end_seg_index is not None:
        seg = segments[end_seg_index]
        cut_from = process_offset - seg.base
        extent, walk_blank, dropped, length = window.cut
        if extent is not None and not walk_blank:
            plan.records_dropped += dropped
        if extent is not None and not walk_blank and length > 0:
            plan.add(
                Step(
                    "cut",
                    relative(root, seg.path),
                    f"{'torn tail' if dropped == 0 else 'data after a broken record'} after the valid end at commitlog offset {process_offset}"
                    + (f" ({dropped} decodable record(s) follow it)" if dropped else ""),
                    position=cut_from,
                    length=length,
                    expect=observe(seg.path, cut_from, length),
                    details={"valid_records_cut": dropped},
                )
            )
        for later in segments[end_seg_index + 1 :]:
            later_extent, dropped = window.later.get(later.path) or _later_file(later)
            plan.records_dropped += dropped
            plan.add(
                Step(
                    "delete",
                    relative(root, later.path),
                    f"CommitLog file wholly after the valid end {process_offset} (truncateDirtyFiles deletes it)"
                    + ("; all zeros" if later_extent is None else f"; {dropped} decodable record(s)"),
                    expect=observe(later.path),
                    details={"valid_records_cut": dropped},
                )
            )
    _plan_commitlog_sizes(store, plan, segments, start, end_seg_index, process_offset, stop_kind)
    if plan.records_dropped:
        recovery = "recoverNormally" if mode == "normal" else "recoverAbnormally"
        plan.needs_force.append(
            f"{plan.records_dropped} decodable record(s) after the valid end would be cut "
            f"(RocketMQ {broker.version}'s {mode} recovery, CommitLog.{recovery}, scanning from {plan.facts['scan_start_file']}, drops them too on restart)"
        )
    scan = _Scan(broker, cq_max, segments, start, window.last_store_ts, window.kept_damage, offsets, window.read_bytes, window.read_seconds, rows, newest, file_offsets)
    plan.facts["restart"] = _restart_facts(store, plan, scan)
    return plan, scan


def _note_unscanned_damage(plan: RecoverPlan, broker: brokers.BrokerModel, mode: str, start: rmq.Segment | None) -> None:
    """Say why damage before the scan's first file stays: the broker does not re-read it."""
    if start is None:
        return
    before = [f for f in plan.unfixable if f.get("path") and Path(f["path"]).parent.name == "commitlog" and Path(f["path"]).name < start.name]
    if not before:
        return
    rule = (
        "the newest CommitLog file at or below the ConsumeQueues' highest offset"
        if mode == "normal" and broker.starts_at_cq_max
        else "the third-last CommitLog file"
        if mode == "normal"
        else "the newest CommitLog file older than the checkpoint"
    )
    plan.notes.append(
        f"RocketMQ {broker.version}'s {mode} recovery starts at {start.name} ({rule}): it does not re-read the {len(before)} damaged "
        "place(s) before it and keeps their records (a record with a bad body CRC is served as it is); mqtool leaves them as the broker does"
    )


def _index_kept_text(store: rmq.RocketMQStore, plan: RecoverPlan, broker: brokers.BrokerModel) -> str:
    """What ``IndexService.load`` would destroy on the broker's abnormal start (IndexFiles whose
    end timestamp is after the checkpoint's ``indexMsgTimestamp``) that mqtool keeps, verified:
    removing ``abort`` spares them."""
    rebuilt = {Path(name).name for s in plan.steps if s.action == "rebuild-index" for name in s.details.get("replace", [])}
    index_ts, destroyed = _index_files_destroyed(store)
    newer = [name for name in destroyed if name not in rebuilt]
    if not newer:
        return ""
    return (
        f"; the broker would start abnormally and destroy {len(newer)} IndexFile(s) ending after the checkpoint's indexMsgTimestamp {index_ts} "
        f"({', '.join(newer)}: IndexService.load in RocketMQ {broker.version}), re-indexing only what it re-dispatches; "
        "mqtool keeps them: it checked them against the CommitLog"
    )


def _index_files_destroyed(store: rmq.RocketMQStore) -> tuple[int, list[str]]:
    """The checkpoint's ``indexMsgTimestamp`` and the IndexFiles whose end timestamp is later:
    those ``IndexService.load`` destroys on an abnormal start (unreadable files are left out)."""
    try:
        cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20)) if store.checkpoint_path.exists() else None
    except MqError:
        cp = None
    index_ts = cp.index_msg_timestamp if cp is not None else 0
    newer = []
    for path in store.index_files():
        try:
            with rmq.IndexFileView(path) as view:
                if view.header.end_timestamp > index_ts:
                    newer.append(path.name)
        except MqError:
            continue
    return index_ts, newer


def _plan_commitlog_sizes(
    store: rmq.RocketMQStore,
    plan: RecoverPlan,
    segments: list[rmq.Segment],
    start: int,
    end_seg_index: int | None,
    process_offset: int,
    stop_kind: str,
) -> None:
    """Give every CommitLog file the store keeps the configured size, where nothing is lost.

    Upstream ``MappedFileQueue.load`` refuses a CommitLog file of any other length (the last one
    included: the broker pre-allocates every file at ``mappedFileSizeCommitLog``), so a store
    that keeps one does not start, whatever its records.  For each kept file (those up to the
    one holding the valid end; later ones are deleted above):

    * shorter, with its data ending before its size -- the file holding the valid end (the broker's
      recovery, ``CommitLog.recoverNormally`` / ``recoverAbnormally``, stops there), or a file
      closed by a BLANK record -- is zero-filled to the size (``extend``: the manifest notes the
      old size, ``--undo`` cuts the zeros off again).  When the file holding the valid end is not
      the last one, the broker had filled it: the bytes past its size held records that are gone,
      which ``--force`` must accept;
    * longer, with its data ending within the size: the excess is cut off (``truncate``, its
      bytes quarantined);
    * anything else (a short file before the scan whose records stop early, records past the
      size) is left as it is: ``_plan_unfixable`` names the finding that remains.
    """
    file_size = store.commitlog_file_size
    if not file_size or end_seg_index is None:
        return
    root = store.root
    for i, seg in enumerate(segments[: end_seg_index + 1]):
        if seg.size == file_size:
            continue
        if i == end_seg_index:
            data_end: int | None = process_offset - seg.base
        else:
            # the scan went on after it (it ends in a BLANK record), or it lies before the scan (the
            # broker does not read it): where its BLANK record is, if it has one, is where it ends
            with ReadOnlyFile(seg.path) as f:
                walked = queue_offsets.walk_file(f, check_crc=i < start)
            data_end = walked.end.position if walked.end is not None and walked.end.kind == "blank" else None
        rel = relative(root, seg.path)
        if seg.size < file_size:
            if data_end is None or data_end > seg.size:
                continue
            lost = i == end_seg_index and i + 1 < len(segments) and stop_kind != "blank"
            plan.add(
                Step(
                    "extend",
                    rel,
                    f"CommitLog file is {seg.size} bytes, the configured size {file_size} (RMQ-FILE-SIZE; the broker refuses to load it): "
                    f"zero-filled after its valid data (ends at {data_end})"
                    + (f"; the later files show it was full: its bytes {seg.size}..{file_size - 1} are lost" if lost else ""),
                    position=seg.size,
                    length=file_size - seg.size,
                    expect={"exists": True, "size": seg.size},
                    details={"file_size": file_size},
                )
            )
            if lost:
                plan.needs_force.append(f"{rel} lacks its bytes {seg.size}..{file_size - 1} (later files exist: they held records)")
        else:
            if data_end is None or data_end > file_size:
                continue
            length = seg.size - file_size
            with ReadOnlyFile(seg.path) as f:
                zeros = nonzero_extent(f, file_size) is None
            plan.add(
                Step(
                    "truncate",
                    rel,
                    f"CommitLog file is {seg.size} bytes, the configured size {file_size} (RMQ-FILE-SIZE; the broker refuses to load it): "
                    f"the {length} bytes past the size ({'zeros' if zeros else 'not records: its valid data ends at ' + str(data_end)}) are cut off",
                    position=file_size,
                    length=length,
                    # no mtime: a cut planned before it on the same file changes that, not these bytes
                    expect={"exists": True, "size": seg.size, "crc32": region_crc(seg.path, file_size, length)},
                    details={"file_size": file_size},
                )
            )


def _plan_unfixable(
    store: rmq.RocketMQStore, plan: RecoverPlan, scan_start: int = 0, kept: list[Finding] | None = None, read: Mapping[str, list[Finding]] | None = None
) -> None:
    """Name the errors the store would still have after the plan: the store model's CommitLog
    findings (``planned_commitlog_findings``: a missing file, a wrong size, an overlap) for the
    files as the plan leaves them, the damage in the files before ``scan_start`` (the index in
    ``store.commitlog`` of the first file the recovery reads: ``unscanned_commitlog_findings``),
    which the plan never touches (``read``: those of the files the plan has read already, by path),
    and ``kept``: what validate says of records the recovery keeps
    (``model.record_findings``; a break in a queue's QUEUEOFFSET sequence).  Applying such a plan
    needs ``--force``: the store would not validate, and the broker would refuse it
    (``MappedFileQueue.load``) or read the wrong file for an offset
    (``MappedFileQueue.findMappedFileByOffset`` assumes no file is missing)."""
    outcome: dict[Path, int | None] = {}
    for step in plan.steps:
        if not step.path.startswith("commitlog/"):
            continue
        path = store.commitlog_dir / Path(step.path).name
        if step.action == "delete":
            outcome[path] = None
        elif step.action == "extend" and step.position is not None and step.length is not None:
            outcome[path] = step.position + step.length
        elif step.action == "truncate" and step.position is not None:
            outcome[path] = step.position
    left = [f for f in model.planned_commitlog_findings(store, outcome) if f.level is Severity.error]
    left += [f for f in model.unscanned_commitlog_findings(store, scan_start, read) if f.level is Severity.error]
    left += [f for f in kept or [] if f.level is Severity.error]
    plan.unfixable = [f.to_dict() for f in left]


CQ_JOURNAL = ".mqtool-cq-rebuild.json"


def _read_cq_journal(store: rmq.RocketMQStore) -> int | None:
    """The ConsumeQueue file size recorded by a rebuild that was interrupted, if any."""
    path = store.consumequeue_dir / CQ_JOURNAL
    try:
        size = json.loads(path.read_bytes()).get("cq_file_size")
    except (OSError, ValueError, AttributeError):
        return None
    return size if isinstance(size, int) and size > 0 and size % cqf.CQ_UNIT_SIZE == 0 else None


def _plan_cq_journal(
    store: rmq.RocketMQStore,
    plan: RecoverPlan,
    queues: dict[tuple[str, int], _QueueState],
    first_cq_step: int,
    journal: int | None,
    options: RecoverOptions,
) -> None:
    """Bracket ConsumeQueue work that deletes files with a journal naming their file size.

    Removing a queue's files and dispatching it again is not atomic: a run killed after the
    last file of the last queue went would leave nothing to learn the geometry from, and the
    rerun would write files of the default size the broker (configured otherwise) refuses to
    load.  ``consumequeue/.mqtool-cq-rebuild.json`` is written before the first such delete and
    removed after the last dispatch; a rerun takes the size from it.  (The broker ignores
    regular files in ``consumequeue/``: it only descends into directories.)"""
    steps = plan.steps[first_cq_step:]
    deletes = options.rebuild_cq and any(s.action == "delete" and s.path.startswith("consumequeue/") for s in steps)
    if not deletes and journal is None:
        return
    path = relative(store.root, store.consumequeue_dir / CQ_JOURNAL)
    if deletes:
        sizes = sorted({q.file_size for q in queues.values()})
        size = journal or (sizes[0] if len(sizes) == 1 else None)
        if size is not None:
            plan.steps.insert(
                first_cq_step,
                Step(
                    "begin-cq-rebuild",
                    path,
                    f"journal: ConsumeQueue files of {size} bytes are rebuilt (a rerun after a crash keeps the size)",
                    details={"cq_file_size": size},
                ),
            )
    plan.add(Step("end-cq-rebuild", path, "the ConsumeQueue rebuild is complete: its journal goes"))


def _plan_queues(
    store: rmq.RocketMQStore, plan: RecoverPlan, process_offset: int, options: RecoverOptions, journal: int | None = None
) -> dict[tuple[str, int], _QueueState]:
    root = store.root
    queues: dict[tuple[str, int], _QueueState] = {}
    wanted = {q for q in options.queues}
    all_segs = {key: store.cq_segments(*key) for key in store.queues()}
    for name in sorted(wanted - {f"{t}/{q}" for t, q in all_segs}):
        plan.notes.append(f"--queue {name}: consumequeue/ has no such queue (only records the CommitLog holds for it are dispatched)")
    # mappedFileSizeConsumeQueue is one broker-wide setting: every queue gets the size the store's
    # files show (as validate judges them), so a queue whose only file is short is not rebuilt at
    # that short size; with no file left, the size an interrupted rebuild recorded
    common = rmq.detect_cq_file_size([s for segs in all_segs.values() for s in segs]) if any(all_segs.values()) or journal is None else journal
    for (topic, qid), segs in all_segs.items():
        state = _QueueState(topic, qid, rmq.queue_dir(store, topic, qid), options.cq_file_size or common)
        queues[(topic, qid)] = state
        rebuild = options.rebuild_cq and (not wanted or f"{topic}/{qid}" in wanted)
        if rebuild:
            for seg in segs:
                plan.add(Step("delete", relative(root, seg.path), f"--rebuild-cq: {topic}/{qid} is rebuilt from the CommitLog", expect=observe(seg.path)))
            continue
        ended = False
        state.max_offset = segs[0].base // cqf.CQ_UNIT_SIZE if segs else 0
        for seg in segs:
            if seg.size == 0:
                plan.add(Step("delete", relative(root, seg.path), "zero-length ConsumeQueue file", expect=observe(seg.path)))
                continue
            with ReadOnlyFile(seg.path) as f:
                read = model_cq.read_cq_recovery(f, seg.base, process_offset)
            if ended:
                if read.nonzero:
                    plan.add(Step("delete", relative(root, seg.path), f"ConsumeQueue file after the end of {topic}/{qid}", expect=observe(seg.path)))
                else:
                    plan.add(Step("delete", relative(root, seg.path), f"empty ConsumeQueue file after the end of {topic}/{qid}", expect=observe(seg.path)))
                continue
            if read.max_offset is not None:
                state.max_offset = read.max_offset
            if read.max_physic_offset is not None:
                state.max_physic_offset = read.max_physic_offset
            cut_at = read.cut_at
            if cut_at is None:
                _plan_extend(root, plan, seg, state.file_size, topic, qid)
                continue
            if read.cause == "invalid":
                reason = f"bytes after the end of {topic}/{qid} (an invalid unit or stale data)"
            elif cut_at == 0:
                # truncateDirtyLogicFiles deletes a file whose first unit is at or past the end
                ended = True
                reason = f"ConsumeQueue file of {topic}/{qid} whose first unit points at or past the CommitLog valid end {process_offset}"
                plan.add(Step("delete", relative(root, seg.path), reason, expect=observe(seg.path)))
                continue
            else:
                reason = f"units of {topic}/{qid} pointing at or past the CommitLog valid end {process_offset}"
            ended = True
            if read.tail_length:
                length = read.tail_length
                plan.add(Step("cut", relative(root, seg.path), reason, position=cut_at, length=length, expect=observe(seg.path, cut_at, length)))
            _plan_extend(root, plan, seg, state.file_size, topic, qid)  # after the cut: it expects the size the cut keeps
    return queues


def _plan_extend(root: Path, plan: RecoverPlan, seg: rmq.Segment, file_size: int, topic: str, qid: int) -> None:
    """A ConsumeQueue file shorter than the store's file size: the broker refuses to start on
    it ("length not matched"), so it is filled up with zeros (its bytes stay; the manifest notes
    the old size, ``--undo`` cuts the zeros off again).  The step expects only the size: a cut planned before it on the same
    file changes its mtime, not its size."""
    if seg.size >= file_size:
        return
    plan.add(
        Step(
            "extend",
            relative(root, seg.path),
            f"ConsumeQueue file of {topic}/{qid} is {seg.size} bytes, the store's files {file_size}: zero-filled to that size",
            position=seg.size,
            length=file_size - seg.size,
            expect={"exists": True, "size": seg.size},
        )
    )


def _plan_dispatch(
    store: rmq.RocketMQStore,
    plan: RecoverPlan,
    queues: dict[tuple[str, int], _QueueState],
    segments: list[rmq.Segment],
    start: int,
    process_offset: int,
    options: RecoverOptions,
    offsets: queue_offsets.QueueOffsets,
    cq_max: int = -1,
    rows: Mapping[Path, _DispatchRows] | None = None,
) -> None:
    """Records before the valid end that their queue lacks: dispatch them (one CommitLog scan,
    a second one from the start when a queue has no files at all; ``rows``: the records the plan's
    reading kept, taken instead of walking their files again).  A queue validate calls
    missing (RMQ-CQ-MISSING-QUEUE: records in ``offsets``, the CommitLog's queue offsets, and no
    ConsumeQueue directory) lacks all its records, wherever they lie: the scan starts at the
    CommitLog's first record."""
    if not segments:
        return
    rebuilt = {k for k in queues if options.rebuild_cq and (not options.queues or f"{k[0]}/{k[1]}" in options.queues)}
    # Scan from the oldest point any queue may lack: the last kept unit of each queue; rebuilt
    # queues and queues without units need the whole CommitLog.
    scan_from = min([q.max_physic_offset for k, q in queues.items() if k not in rebuilt and q.max_physic_offset >= 0] or [store.commitlog_min_offset])
    if rebuilt or any(q.max_physic_offset < 0 for q in queues.values()) or queue_offsets.missing_queue_findings(store, offsets.edges):
        scan_from = store.commitlog_min_offset
    missing_queues = _scan_undispatched(store, queues, segments, scan_from, process_offset, options, cq_max, rows)
    if missing_queues and scan_from > store.commitlog_min_offset:
        # a queue without any file lacks its records before ``scan_from`` too
        missing_queues = _scan_undispatched(store, queues, segments, store.commitlog_min_offset, process_offset, options, cq_max, rows)
    root = store.root
    # a topic or queue directory that is a symbolic link is never followed: nor written through
    linked = {path: kind for path, kind in store.irregular_queue_dirs()}
    for state in [*queues.values(), *missing_queues.values()]:
        if not state.dispatch:
            continue
        link = next((d for d in (state.directory, state.directory.parent) if d in linked), None)
        if link is not None:
            plan.notes.append(
                f"{state.topic}/{state.queue_id}: {state.dispatch} record(s) not dispatched: {link} is {linked[link]}, not followed "
                "(replace it with a real directory, or remove it, and run again)"
            )
            continue
        if state.first_dispatch_qoff is not None and state.first_dispatch_qoff > state.max_offset and (state.topic, state.queue_id) in queues:
            plan.notes.append(
                f"{state.topic}/{state.queue_id}: the queue ends at offset {state.max_offset} but the next record in the CommitLog has "
                f"queue offset {state.first_dispatch_qoff}: those messages are not in the CommitLog any more"
            )
        plan.add(
            Step(
                "dispatch-cq",
                relative(root, state.directory),
                f"{state.dispatch} record(s) of {state.topic}/{state.queue_id} have no ConsumeQueue unit (dispatch behind the CommitLog)" + _dispatch_text(state, cq_max),
                details={
                    "topic": state.topic,
                    "queue_id": state.queue_id,
                    "from_queue_offset": state.first_dispatch_qoff,
                    "count": state.dispatch,
                    "from_commitlog_offset": state.missing_from,
                    "to_commitlog_offset": process_offset,
                    "cq_file_size": state.file_size,
                },
            )
        )


def _plan_queue_heads(
    store: rmq.RocketMQStore,
    plan: RecoverPlan,
    queues: dict[tuple[str, int], _QueueState],
    process_offset: int,
    options: RecoverOptions,
    offsets: queue_offsets.QueueOffsets,
) -> None:
    """A queue whose head ConsumeQueue files are missing while the CommitLog holds their records
    (RMQ-CQ-MISSING-HEAD, ``derived.queue_heads``): the units of those queue offsets are written
    again from the CommitLog, in new files before the queue's first (the units of expired records
    before the first one are fillers, as ``ConsumeQueue.fillPreBlank`` writes them).  The broker
    never rebuilds them: its min offset of the queue stays the first file's."""
    rebuilt = {k for k in queues if options.rebuild_cq and (not options.queues or f"{k[0]}/{k[1]}" in options.queues)}
    # the files the plan keeps: a zero-length file is deleted above (RMQ-FILE-ZERO-LENGTH)
    segments = {key: [s for s in store.cq_segments(*key) if s.size > 0] for key in queues if key not in rebuilt}
    from mqtool.store.model import derived  # numpy: not loaded by info's restart preview, built on this module

    for head in derived.queue_heads(offsets.edges, segments):
        state = queues[(head.topic, head.queue_id)]
        plan.add(
            Step(
                "dispatch-cq",
                relative(store.root, state.directory),
                f"{head.count} record(s) of {head.topic}/{head.queue_id} (queue offsets {head.first}..{head.stop - 1}) are in the CommitLog but in no "
                f"ConsumeQueue file: the queue's first file {head.first_file.name} starts at queue offset {head.stop} (RMQ-CQ-MISSING-HEAD); "
                "the broker would never serve them (its min offset is the first file's); mqtool writes their units in new files before it",
                details={
                    "topic": head.topic,
                    "queue_id": head.queue_id,
                    "from_queue_offset": head.first,
                    "to_queue_offset": head.stop,
                    "count": head.count,
                    "from_commitlog_offset": store.commitlog_min_offset,
                    "to_commitlog_offset": process_offset,
                    "cq_file_size": state.file_size,
                },
            )
        )


def _dispatch_text(state: _QueueState, cq_max: int) -> str:
    """What the broker would do with these records: it dispatches only those after the highest
    CommitLog offset any ConsumeQueue points to (``recoverNormally`` 5.3.2+, ``ReputMessageService``)."""
    before, after = state.before_cq_max, state.dispatch - state.before_cq_max
    if before == 0:
        return f"; the broker dispatches them too (they follow the ConsumeQueues' highest CommitLog offset {cq_max})"
    return (
        f"; the broker would dispatch {f'only the {after}' if after else 'none'} of them after the ConsumeQueues' highest CommitLog offset {cq_max}, "
        f"and would hand out the queue offsets of the {before} before it again (recoverTopicQueueTable takes the queue's next offset "
        "from its ConsumeQueue); mqtool writes all their units"
    )


def _scan_undispatched(
    store: rmq.RocketMQStore,
    queues: dict[tuple[str, int], _QueueState],
    segments: list[rmq.Segment],
    scan_from: int,
    process_offset: int,
    options: RecoverOptions,
    cq_max: int = -1,
    rows: Mapping[Path, _DispatchRows] | None = None,
) -> dict[tuple[str, int], _QueueState]:
    """Count the records before ``process_offset`` of the files from the one holding ``scan_from``
    on that are past their queue's end (``dispatch``, ``missing_from`` of each state); returns the
    states of queues that have no files at all.  A file in ``rows`` is not walked: its records are
    there (a healthy file: the walk would yield every one of them; another file the plan's reading
    read as far as its data goes, ``_DispatchRows.through``: the walk reads on from there when the
    scan needs records after it)."""
    for queue in queues.values():
        queue.missing_from = queue.first_dispatch_qoff = None
        queue.dispatch = queue.before_cq_max = 0
    missing_queues: dict[tuple[str, int], _QueueState] = {}

    def count(off: int, topic: str, queue_id: int, queue_offset: int, total_size: int) -> None:
        """A dispatched record at commitlog offset ``off``."""
        key = (topic, queue_id)
        state = queues.get(key) or missing_queues.get(key)
        if state is None and not rmq.is_topic_dir_name(topic):
            return  # a topic that cannot name a directory: no queue is created for it
        if state is None:
            state = missing_queues[key] = _QueueState(topic, queue_id, rmq.queue_dir(store, *key), options.cq_file_size or _default_cq_size(queues))
            state.max_offset = queue_offset  # a new queue starts at its first record
        if queue_offset >= state.max_offset:
            if state.missing_from is None:
                state.missing_from = off
                state.first_dispatch_qoff = queue_offset
            state.dispatch += 1
            if off + total_size <= cq_max:
                state.before_cq_max += 1

    for seg in segments:
        if seg.base + seg.size <= scan_from or seg.base >= process_offset:
            continue
        kept = rows.get(seg.path) if rows else None
        start = 0
        if kept is not None:
            for row in _rows_past_queue_ends(kept, seg.base, process_offset, queues):
                count(seg.base + int(kept.position[row]), kept.topics[kept.topic[row]], int(kept.queue_id[row]), int(kept.queue_offset[row]), int(kept.size[row]))
            if kept.through is None or process_offset - seg.base <= kept.through:
                continue
            start = kept.through  # the rows hold the records before it: the walk reads on from there
        with ReadOnlyFile(seg.path) as f:
            for pos, rec in queue_offsets.file_records(f, check_crc=False, start=start):
                off = seg.base + pos
                if off >= process_offset:
                    break
                if _is_dispatched(rec.sys_flag):
                    count(off, rec.topic, rec.queue_id, rec.queue_offset, rec.total_size)
    return missing_queues


def _rows_past_queue_ends(rows: _DispatchRows, base: int, process_offset: int, queues: Mapping[tuple[str, int], _QueueState]) -> Any:
    """The rows, in file order, of the dispatched records before ``process_offset`` that ``count``
    may count: of a queue with a state, those at or past its ``max_offset`` (``count`` skips the
    others without a trace); of any other queue, all of them (its state starts at its first record)."""
    import numpy as np  # loaded already: the rows come from a column walk

    picked = np.flatnonzero(rows.dispatched & (rows.position < process_offset - base))
    topic, queue_id, queue_offset = rows.topic[picked], rows.queue_id[picked], rows.queue_offset[picked]
    floor = np.full(len(picked), np.iinfo(np.int64).min, dtype=np.int64)
    for t, q in {(int(t), int(q)) for t, q in zip(topic.tolist(), queue_id.tolist(), strict=True)}:
        state = queues.get((rows.topics[t], q))
        if state is not None:
            floor[(topic == t) & (queue_id == q)] = state.max_offset
    return picked[queue_offset >= floor]


def _default_cq_size(queues: dict[tuple[str, int], _QueueState], journal: int | None = None) -> int:
    if journal:
        return journal
    sizes = [q.file_size for q in queues.values()]
    return max(set(sizes), key=sizes.count) if sizes else rmq.DEFAULT_CQ_FILE_SIZE


def _plan_index(store: rmq.RocketMQStore, plan: RecoverPlan, process_offset: int, options: RecoverOptions, keyed: Mapping[Path, Any] | None = None) -> None:
    """IndexFile steps: finish an interrupted swap, else rebuild the files that point past the valid
    end or lack keyed records (``keyed``: the keyed records of files the plan's reading kept, by
    path: ``derived.unindexed_records`` does not read those files again)."""
    staging = store.root / INDEX_STAGING
    if (staging / SWAP_JOURNAL).exists():
        # a run was interrupted while swapping in IndexFiles it had completed: finish that swap
        plan.add(
            Step(
                "finish-index-swap",
                relative(store.root, staging),
                "an interrupted IndexFile rebuild left its complete new files and swap journal: the swap is finished",
                expect={"files": {relative(store.root, staging / SWAP_JOURNAL): observe(staging / SWAP_JOURNAL)}},
            )
        )
        return
    planned = len(plan.steps)
    _plan_index_files(store, plan, process_offset, options, keyed)
    if staging.is_dir() and not any(s.action == "rebuild-index" for s in plan.steps[planned:]):
        plan.add(
            Step(
                "finish-index-swap",
                relative(store.root, staging),
                "staging files of an interrupted IndexFile rebuild (the old IndexFiles were kept): removed",
                expect={"exists": True},
            )
        )


def _plan_index_files(store: rmq.RocketMQStore, plan: RecoverPlan, process_offset: int, options: RecoverOptions, keyed: Mapping[Path, Any] | None = None) -> None:
    files = store.index_files()
    # each IndexFile with its header and geometry; (path, None, None): unreadable, it is rebuilt
    headers: list[tuple[Path, idxf.IndexHeader | None, idxf.IndexGeometry | None]] = []
    geometry: idxf.IndexGeometry | None = None
    for p in files:
        try:
            with rmq.IndexFileView(p, hash_slot_num=options.index_hash_slot_num, index_num=options.index_num) as view:
                headers.append((p, view.header, view.geometry))
                geometry = geometry or view.geometry
        except MqError as exc:
            headers.append((p, None, None))
            plan.notes.append(f"{p}: unreadable IndexFile ({exc}); it is rebuilt")
    if geometry is None:
        geometry = idxf.IndexGeometry(options.index_hash_slot_num or idxf.DEFAULT_HASH_SLOT_NUM, options.index_num or idxf.DEFAULT_INDEX_NUM)
    rebuild_from = None  # index of the first file to rebuild
    if options.rebuild_index:
        rebuild_from = 0
    else:
        for i, (_path, header, _geo) in enumerate(headers):
            if header is None or header.end_phy_offset >= process_offset:
                rebuild_from = i
                break
        if rebuild_from is None:
            # keyed records no IndexFile covers (RMQ-IDX-MISSING: index/ absent, a file deleted, the
            # index ending early): rebuilt from the first file that starts after the first of them
            # (the files before it cover what they hold), else from the last file
            from mqtool.store.model import derived  # numpy: see _plan_queue_heads

            coverage = derived.index_coverage(
                store, hash_slot_num=options.index_hash_slot_num, index_num=options.index_num, message_index_enable=options.message_index_enable
            )
            unindexed = derived.unindexed_records(store, coverage, process_offset, keyed)
            if unindexed.first is not None and not coverage.expected:
                why = (
                    "broker.conf sets messageIndexEnable=false"
                    if coverage.configured is False
                    else "the broker never wrote one (no index/, indexMsgTimestamp 0 in the checkpoint: most likely messageIndexEnable=false)"
                )
                plan.notes.append(f"{unindexed.count} record(s) with keys are in no IndexFile, and {why}: not built; --rebuild-index builds them")
            elif unindexed.first is not None:
                after = [i for i, (_p, h, _g) in enumerate(headers) if h is not None and h.entry_count and h.begin_phy_offset > unindexed.first]
                rebuild_from = after[0] if after else max(len(headers) - 1, 0)
                plan.facts["index_missing_from"] = unindexed.first
    if rebuild_from is None:
        return
    # Files before ``rebuild_from`` are readable (an unreadable one would be rebuilt itself).
    # The rebuild continues where the previous file stops, as the index service does: from the
    # record it indexed last, minus the keys of that record already in it (a file can fill up
    # between two keys of one record).
    prev = headers[rebuild_from - 1][1] if rebuild_from > 0 else None
    from_offset, skip_keys = store.commitlog_min_offset, 0
    if prev is not None:
        prev_path, _, prev_geometry = headers[rebuild_from - 1]
        assert prev_geometry is not None  # read with its header: both or neither
        from_offset = prev.end_phy_offset
        skip_keys = _trailing_entries_at(prev_path, prev_geometry, prev, from_offset)
    replaced = [relative(store.root, p) for p, _, _ in headers[rebuild_from:]]
    plan.add(
        Step(
            "rebuild-index",
            relative(store.root, store.index_dir),
            f"IndexFiles from {replaced[0] if replaced else 'the first'} on are rebuilt from the CommitLog "
            f"[{from_offset}, {process_offset}) (entries past the valid end, or keys missing)",
            expect={"files": {r: observe(resolve(store.root, r)) for r in replaced}},
            details={
                "replace": replaced,
                "from_commitlog_offset": from_offset,
                "skip_keys": skip_keys,
                "to_commitlog_offset": process_offset,
                "hash_slot_num": geometry.hash_slot_num,
                "index_num": geometry.index_num,
                "prev_end_commitlog_offset": prev.end_phy_offset if prev is not None else 0,
                "prev_end_timestamp": prev.end_timestamp if prev is not None else 0,
            },
        )
    )


def _trailing_entries_at(path: Path, geometry: idxf.IndexGeometry, header: idxf.IndexHeader, phy_offset: int) -> int:
    """How many of the last entries of an IndexFile point at ``phy_offset``."""
    count = 0
    with rmq.IndexFileView(path, hash_slot_num=geometry.hash_slot_num, index_num=geometry.index_num) as view:
        buf = view.buf
        assert buf is not None  # an open view: close() drops the mapping
        for number in range(min(header.effective_index_count, geometry.index_num) - 1, 0, -1):
            if idxf.decode_index_entry(buf, geometry.entry_position(number)).phy_offset != phy_offset:
                break
            count += 1
    return count


def _plan_checkpoint(store: rmq.RocketMQStore, plan: RecoverPlan, last_store_ts: int) -> None:
    current = None
    if store.checkpoint_path.exists():
        try:
            current = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20))
        except MqError:
            current = None
    if not last_store_ts:
        return
    index_ts = current.index_msg_timestamp if current is not None else 0
    index_ts = min(index_ts, last_store_ts)
    new = cpf.Checkpoint(
        last_store_ts,
        last_store_ts,
        index_ts,
        current.master_flushed_offset if current is not None else None,
        current.confirm_phy_offset if current is not None else None,
    )
    if current is not None and dataclasses.astuple(current)[:3] == dataclasses.astuple(new)[:3]:
        return
    plan.add(
        Step(
            "write-checkpoint",
            relative(store.root, store.checkpoint_path),
            f"checkpoint to the store time of the last valid record ({last_store_ts})",
            expect=observe(store.checkpoint_path),
            details={
                "physic_msg_timestamp": new.physic_msg_timestamp,
                "logics_msg_timestamp": new.logics_msg_timestamp,
                "index_msg_timestamp": new.index_msg_timestamp,
                "master_flushed_offset": new.master_flushed_offset,
                "confirm_phy_offset": new.confirm_phy_offset,
            },
        )
    )


# --- apply: RocketMQ actions -------------------------------------------------------------------------


def apply_custom(step: Step, ctx: ApplyContext) -> None:
    if step.action == "dispatch-cq":
        _apply_dispatch(step, ctx)
    elif step.action == "rebuild-index":
        _apply_rebuild_index(step, ctx)
    elif step.action == "finish-index-swap":
        _finish_index_swap(ctx, resolve(ctx.root, step.path))
    elif step.action == "write-checkpoint":
        path = resolve(ctx.root, step.path)
        if path.exists():
            ctx.quarantine.keep_file(path)
        else:
            ctx.quarantine.record_created(path)
        d = step.details
        data = cpf.encode_checkpoint(
            cpf.Checkpoint(d["physic_msg_timestamp"], d["logics_msg_timestamp"], d["index_msg_timestamp"], d.get("master_flushed_offset"), d.get("confirm_phy_offset"))
        )
        ctx.mutator.replace_file(path, data)
    elif step.action == "begin-cq-rebuild":
        path = resolve(ctx.root, step.path)
        if path.exists():
            ctx.quarantine.keep_file(path)
        else:
            ctx.quarantine.record_created(path)
        ctx.mutator.replace_file(path, json.dumps({"cq_file_size": step.details["cq_file_size"]}).encode() + b"\n")
    elif step.action == "end-cq-rebuild":
        path = resolve(ctx.root, step.path)
        if path.exists():
            ctx.quarantine.keep_file(path)
            ctx.mutator.delete(path)
    elif step.action == "remove-abort":
        path = resolve(ctx.root, step.path)
        if path.exists():
            ctx.quarantine.keep_file(path)
            ctx.mutator.delete(path)
    else:
        raise StoreLayoutError(f"unknown RocketMQ plan action {step.action!r}", path=resolve(ctx.root, step.path))


@dataclass
class _PendingRun:
    path: Path
    position: int
    data: bytearray = field(default_factory=bytearray)


def _apply_dispatch(step: Step, ctx: ApplyContext) -> None:
    """Write the missing ConsumeQueue units of one queue (contiguous runs, fsynced)."""
    d = step.details
    store = rmq.open_store(ctx.root)
    qdir = resolve(ctx.root, step.path)
    _make_dirs(ctx, qdir)
    file_size = d["cq_file_size"]
    start = d["from_commitlog_offset"]
    stop = d["to_commitlog_offset"]
    from_qoff = d["from_queue_offset"]
    to_qoff = d.get("to_queue_offset")  # a queue's missing head: the units below its first file
    pending: _PendingRun | None = None

    def flush() -> None:
        nonlocal pending
        if pending is not None and pending.data:
            # the region is normally zeros: recorded (not copied) so --undo can zero it again
            ctx.quarantine.keep_range(pending.path, pending.position, len(pending.data))
            ctx.mutator.write_at(pending.path, pending.position, bytes(pending.data))
        pending = None

    for seg in store.commitlog:
        if seg.size == 0 or seg.base + seg.size <= start or seg.base >= stop:
            continue
        with ReadOnlyFile(seg.path) as f:
            for pos, rec in queue_offsets.file_records(f, check_crc=False):
                off = seg.base + pos
                if off < start:
                    continue
                if off >= stop:
                    break
                if rec.topic != d["topic"] or rec.queue_id != d["queue_id"] or not _is_dispatched(rec.sys_flag):
                    continue
                if rec.queue_offset < from_qoff or (to_qoff is not None and rec.queue_offset >= to_qoff):
                    continue
                byte_offset = rec.queue_offset * cqf.CQ_UNIT_SIZE
                base = byte_offset - byte_offset % file_size
                path = qdir / segnames.rocketmq_file_name(base)
                if not path.exists():
                    flush()
                    ctx.quarantine.record_created(path)
                    ctx.mutator.create_file(path, _lead_fillers(qdir, base, byte_offset), size=file_size)
                unit = cqf.encode_cq_unit(cqf.CqUnit(off, rec.total_size, cq_tags_code(rec)))
                position = byte_offset - base
                if pending is not None and pending.path == path and pending.position + len(pending.data) == position and len(pending.data) < (1 << 20):
                    pending.data += unit
                else:
                    flush()
                    pending = _PendingRun(path, position, bytearray(unit))
    flush()


def _lead_fillers(qdir: Path, base: int, byte_offset: int) -> bytes:
    """The units before ``byte_offset`` of a new ConsumeQueue file named ``base``: filler units
    when it becomes the queue's first file (``ConsumeQueue.fillPreBlank``: a queue whose first
    record is not at the file's start; a zero unit would end the queue there), else none."""
    if any(seg.base < base for seg in rmq.list_segments(qdir)):
        return b""
    return cqf.encode_cq_unit(cqf.FILLER_UNIT) * ((byte_offset - base) // cqf.CQ_UNIT_SIZE)


def _make_dirs(ctx: ApplyContext, directory: Path) -> None:
    """Create ``directory`` and its missing parents, each recorded so that ``--undo`` removes it."""
    missing = []
    while not directory.exists() and directory != ctx.root:
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        ctx.quarantine.record_created(d)
        ctx.mutator.mkdir(d)


def _apply_rebuild_index(step: Step, ctx: ApplyContext) -> None:
    """Build the replacement IndexFiles in a staging directory, then swap them in.

    The swap is journaled, like Kafka's ``.swap`` segments: once the new files are complete and
    fsynced, ``swap.json`` in the staging directory names the files they replace.  A crash
    before that leaves the old files untouched (the next plan is the same rebuild); a crash after
    it leaves the journal, and the next plan finishes the swap instead of judging a half-swapped
    index."""
    d = step.details
    store = rmq.open_store(ctx.root)
    staging = ctx.root / INDEX_STAGING
    _remove_staging_files(ctx, staging)
    ctx.mutator.mkdir(staging)
    # a plan file written before the field's rename (``recover --from-plan``) says prev_end_phy_offset
    prev_end = d["prev_end_commitlog_offset"] if "prev_end_commitlog_offset" in d else d["prev_end_phy_offset"]
    builder = IndexBuilder(staging, d["hash_slot_num"], d["index_num"], prev_end=(prev_end, d["prev_end_timestamp"]))
    start, stop, skip = d["from_commitlog_offset"], d["to_commitlog_offset"], d.get("skip_keys", 0)
    for seg in store.commitlog:
        if seg.size == 0 or seg.base + seg.size <= start or seg.base >= stop:
            continue
        with ReadOnlyFile(seg.path) as f:
            for pos, rec in queue_offsets.file_records(f, check_crc=False):
                off = seg.base + pos
                if start <= off < stop:
                    builder.put_record(_without_first_keys(rec, skip) if off == start and skip else rec, off)
    builder.close()
    ctx.mutator.fsync_dir(staging)
    journal = {"replace": d["replace"], "files": [new.name for new in builder.files]}
    ctx.mutator.replace_file(staging / SWAP_JOURNAL, (json.dumps(journal, indent=2) + "\n").encode())
    _finish_index_swap(ctx, staging)


def _without_first_keys(rec: MessageRecord, skip: int) -> MessageRecord:
    """``rec`` with index keys ``index_keys(rec)[skip:]``: the first ``skip`` are already in the
    previous IndexFile (it filled up between two keys of this record)."""
    props = dict(rec.properties)
    if skip and rec.uniq_key:
        del props["UNIQ_KEY"]
        skip -= 1
    if skip:
        props["KEYS"] = " ".join(split_keys(props)[skip:])
    return dataclasses.replace(rec, properties=props)


def _finish_index_swap(ctx: ApplyContext, staging: Path) -> None:
    """Carry out a journaled IndexFile swap (each action is skipped when a crashed run already
    did it): old files are quarantined and removed, new files renamed into place (a same-named
    old file is replaced atomically, after it is quarantined); then the staging directory goes."""
    journal_path = staging / SWAP_JOURNAL
    if journal_path.exists():
        try:
            journal = json.loads(journal_path.read_text())
        except (OSError, ValueError) as exc:
            raise StoreLayoutError("unreadable IndexFile swap journal", path=journal_path, found=str(exc)) from None
        index_dir = rmq.open_store(ctx.root).index_dir
        new_names = set(journal["files"])
        for name in journal["replace"]:
            old = resolve(ctx.root, name)
            if old.name not in new_names and old.exists():
                ctx.quarantine.keep_file(old)
                ctx.mutator.delete(old)
        _make_dirs(ctx, index_dir)
        for name in journal["files"]:
            new, target = staging / name, index_dir / name
            if not new.exists():
                continue  # moved in before a crash
            if target.exists():
                ctx.quarantine.keep_file(target)
            else:
                ctx.quarantine.record_created(target)
            ctx.mutator.rename(new, target)
    _remove_staging_files(ctx, staging)
    if staging.is_dir():
        ctx.mutator.rmdir(staging)


def _remove_staging_files(ctx: ApplyContext, staging: Path) -> None:
    """Remove what an interrupted rebuild left in the staging directory (mqtool's own files)."""
    if staging.is_dir():
        for leftover in sorted(staging.iterdir()):
            ctx.mutator.delete(leftover)


def unfixable_lines(plan: RecoverPlan) -> list[str]:
    """``CODE path:position: message`` of each finding the plan cannot fix."""
    return [f"{f['code']} {f['path']}:{f['position'] if f['position'] is not None else '-'}: {f['message']}" for f in plan.unfixable]


def apply_rocketmq(plan: RecoverPlan, *, quarantine_root: Path | None = None, force: bool = False, verify: bool = True, jobs: int = 1) -> ApplyResult:
    """Apply a RocketMQ plan.  Before ``abort`` is removed the store is validated; if errors
    remain, ``abort`` stays (the broker will recover abnormally) and the result says why."""
    from mqtool.ops.validate import ValidateOptions
    from mqtool.ops.validate.rocketmq import validate_rocketmq

    if plan.unfixable and not force:
        raise PlanChangedError(
            f"the plan cannot fix {len(plan.unfixable)} error(s): "
            + "; ".join(unfixable_lines(plan))
            + " (the store would still fail validation; pass --force to apply the rest of the plan)",
            path=Path(plan.root),
        )
    verification = {}

    def before_step(step: Step, ctx: ApplyContext) -> bool:
        if step.action != "remove-abort" or not verify:
            return True
        report = validate_rocketmq(ctx.root, ValidateOptions(jobs=jobs))
        verification["report"] = report
        return not report.failed

    result = apply_plan(plan, custom=apply_custom, quarantine_root=quarantine_root, force=force, broker_lock="lock", before_step=before_step)
    if verify:
        report = verification.get("report") or validate_rocketmq(plan.root, ValidateOptions(jobs=jobs))
        result.verification = report
        if report.failed and any(s.action == "remove-abort" for s in plan.steps):
            result.notes.append("the recovered store still has validation errors: abort was kept (see `mqtool validate`)")
    return result
