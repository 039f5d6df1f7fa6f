"""recover for Kafka log dirs and partition dirs (``LogLoader.load``, ``LogSegment.recover``).

Planning follows the broker's load, partition by partition:

1. **temporary files** (``LogLoader.removeTempFilesAndCollectSwapFiles``): ``*.deleted`` files are
   deleted (KRaft ``.checkpoint.deleted``/``.checkpoint.part`` too, as the raft layer does);
   ``.swap`` files at or above the lowest ``.cleaned`` base offset (an unfinished split) and every
   ``.cleaned`` file are deleted; for the remaining ``.log.swap`` files, every non-swap file whose
   base offset falls in ``[min swap base, max swap next offset)`` is deleted (it was replaced) and
   the swap files are renamed into place, the log before its indexes.  Index files without a
   ``.log`` are deleted; ``*.tmp`` checkpoints (written, never renamed) and mqtool's own
   ``.mqtool-tmp-*`` files are deleted;
2. **segments** from the one holding the partition's recovery point (``recovery-point-offset-
   checkpoint``; floor semantics; 0 when the partition has no entry, or every segment with
   ``--full``) to the end go through ``LogSegment.recover``: batches are read while their size and
   CRC are valid (and, for a control batch with a producer id, its end-transaction marker reads);
   the segment is truncated after the last valid batch and, when bytes were cut, every later
   segment is deleted and recovery stops.  A segment whose batch offsets go backwards at an index
   point (``InvalidOffsetException``) is truncated to nothing, as the broker does.  A non-empty
   ``.log`` without ``.index`` or ``.timeindex`` is recovered wherever it is;
3. **indexes** of every recovered segment are rebuilt the way ``recover`` builds them (one
   ``.index`` entry, and a ``.timeindex`` entry when the max timestamp grew, every
   ``index.interval.bytes``; a final time-index entry; trimmed files).  ``index.interval.bytes``
   is a topic setting mqtool cannot read: the largest value the partition's existing indexes are
   consistent with is used (4096, the default, when they hold no entry).  The ``.txnindex`` is
   rebuilt from the ABORT markers, each transaction's first offset and the last stable offset
   coming from the producer state (the latest ``.snapshot`` at or below the first recovered
   segment, then the log).  A file is only replaced when it differs from the rebuilt one and
   either the segment was cut, the file is missing, or ``validate`` finds it inconsistent (an
   index written by multi-batch follower appends is valid and kept); ``--rebuild-index`` replaces
   every one that differs;
4. **partition state**: ``leader-epoch-checkpoint`` gains the epochs recovery meets and loses
   entries at or past the new log end (``truncateFromEnd``); producer snapshots past the log end,
   or unreadable, are deleted; when the log end is below the log start offset checkpoint every
   segment goes and an empty one is created at the log start offset (the broker does the same);
5. **log dir**: ``recovery-point-offset-checkpoint`` gets each recovered partition's log end offset
   (its segments are fsynced first), ``replication-offset-checkpoint`` high watermarks past the log
   end are lowered to it (as the broker does at load).

Every step is ordered so that a run killed at any point and run again converges to the same store:
derived files (indexes, the leader-epoch checkpoint) are rewritten from data the cut does not
touch *before* the cut, later segments are deleted (newest first) before the segment whose damage
condemns them is truncated, the checkpoints come last.

Where the broker would silently drop valid records (a broken batch followed by good ones, later
segments, an emptied segment), the plan counts them and needs ``--force``; every byte is
quarantined either way.  ``.kafka_cleanshutdown`` is left alone: with it the broker skips
recovery, so damage found behind it is noted (mqtool repairs it all the same).  Partition dirs
being deleted (``-delete``) are not recovered (the broker does not either).  Producer snapshots are
not written (the broker rebuilds producer state from the latest snapshot and the log).

The plan reads each log byte once: the Kafka store model's reading of the store
(``kafka_recovery.RecoveryReading``) gives each segment's ``LogSegment.recover`` as the plan asks
for it, what a cut where it stops removes (the valid records after it, the CRC-32 of the cut bytes:
``kafka_recovery.CutFold``), and from the same reading the findings ``validate`` states, which the
plan reports (a lost segment, what it cannot fix).  A segment the reading folded with another
``index.interval.bytes`` is read again only for an index the plan rebuilds.
"""

from __future__ import annotations

import os
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from mqtool.errors import MqError, PlanChangedError, StoreLayoutError
from mqtool.findings import Severity, code_ids
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import snapshot as ksnap
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.ops import log_findings
from mqtool.ops.recover import ApplyContext, ApplyResult, RecoverPlan, Step, apply_plan, observe, relative, resolve
from mqtool.store import kafka as ks
from mqtool.store.files import file_holds, is_regular_file, read_small_file, safe_listdir
from mqtool.store.model import kafka_broker as kb
from mqtool.store.model.kafka_recovery import RecoveryReading, RecoveryScan, batch_starts, count_valid_from, next_offset, scan_segment, transaction_events

#: ``log.index.interval.bytes`` default (``index.interval.bytes``).
DEFAULT_INDEX_INTERVAL = 4096
MQTOOL_TMP_PREFIX = ".mqtool-tmp-"
INDEX_KINDS = ("index", "timeindex", "txnindex")


@dataclass(frozen=True)
class RecoverOptions:
    """``full``: recover every segment, not only those from the recovery point on;
    ``rebuild_index``: replace every index file of a recovered segment that differs from the one
    ``LogSegment.recover`` builds (by default a consistent index is kept)."""

    full: bool = False
    rebuild_index: bool = False
    broker_version: str | None = None  # --broker-version X.Y.Z: the Kafka whose restart facts.restart previews


# --- the model of a partition after its temporary files are dealt with ------------------------------------


@dataclass
class _Seg:
    base: int
    stem: str  # the file-name prefix the broker wrote (normally 20 digits)
    files: dict[str, Path] = field(default_factory=dict)  # kind -> current path (maybe a .swap)

    @property
    def log(self) -> Path | None:
        return self.files.get("log")

    def final(self, directory: Path, kind: str) -> Path:
        return directory / f"{self.stem}.{kind}"


@dataclass
class _LiveSeg(_Seg):
    """A segment of the log the broker loads: one with its ``.log`` (``_Planner.leftovers``
    deletes index files without one)."""

    @property
    def log(self) -> Path:
        return self.files["log"]


class _PartitionIds(TypedDict):
    topic: str | None
    partition: int | None
    directory: str


def _partition_ids(part: ks.KafkaPartition) -> _PartitionIds:
    """How a fact or a step names its partition: ``topic``, ``partition`` (the number; both null
    when the directory's name names none) and the ``directory``'s name."""
    return {"topic": part.topic, "partition": part.partition, "directory": part.name}


# --- small file helpers ------------------------------------------------------------------------------


def _read_offsets(path: Path | None) -> tuple[list[cpf.TopicPartitionOffset] | None, bool]:
    """Entries of an offset checkpoint (None when absent or unreadable) and whether it is unreadable."""
    if path is None or not path.exists():
        return None, False
    try:
        return list(cpf.decode_offset_checkpoint(read_small_file(path, 256 << 20)).entries), False
    except (MqError, UnicodeDecodeError, ValueError):
        return None, True


def _file_bytes_equal(path: Path | None, data: bytes) -> bool:
    return path is not None and file_holds(path, data)


#: index entries ``_infer_interval`` reads of each ``.index`` (and the ``.log`` up to the last of
#: them): at the default interval about 256 KiB of the log, which bounds the interval as tightly as
#: the whole segment would for an index written one batch at a time
INFER_ENTRIES = 64


def _infer_interval(segs: list[_LiveSeg]) -> int:
    """The ``index.interval.bytes`` the partition's existing ``.index`` files were written with,
    as far as they tell (a topic setting mqtool cannot read; 4096, the default, without entries).

    An entry is added at the first batch more than the interval past the previous entry (or the
    segment start), so for each entry at ``p`` after one at ``prev``, with ``q`` the batch before
    ``p``: ``q - prev <= interval < p - prev``.  A value in that range is taken: 4096 if it fits,
    else the largest power of two that does, else the smallest.  Indexes written by multi-batch
    appends give no consistent range: then the largest value the gaps allow."""
    lower, upper = 0, None
    looked = 0
    for seg in segs:
        p = seg.files.get("index")
        if p is None or looked >= 3:
            continue
        try:
            positions = ks.index_log_positions(p, INFER_ENTRIES)
            if not positions:
                continue
            looked += 1
            starts = batch_starts(seg.log, positions[-1] + 1)
        except MqError:
            continue
        prev, k = 0, 0
        for position in positions:
            while k + 1 < len(starts) and starts[k + 1] < position:
                k += 1
            before = starts[k] if starts and starts[k] < position else prev
            lower = max(lower, before - prev)
            gap = position - prev
            upper = gap - 1 if upper is None else min(upper, gap - 1)
            prev = position
    if upper is None:
        return DEFAULT_INDEX_INTERVAL
    if lower > upper:
        return max(1, upper)
    if lower <= DEFAULT_INDEX_INTERVAL <= upper:
        return DEFAULT_INDEX_INTERVAL
    power = 1 << max(upper, 1).bit_length()
    while power > upper:
        power >>= 1
    return power if power >= lower and power >= 1 else max(1, lower)


def _stem(name: str) -> str:
    return name.split(".", 1)[0]


def _offset_of(name: str) -> int | None:
    stem = _stem(name)
    return int(stem) if stem.isascii() and stem.isdigit() and len(stem) <= 20 else None


# --- planning -----------------------------------------------------------------------------------------


@dataclass
class _PartFacts:
    name: str
    key: tuple[str, int] | None
    recovery_point: int | None = None
    scanned_from: int | None = None
    log_end_offset: int | None = None
    interval: int = DEFAULT_INDEX_INTERVAL
    truncated_at: dict[str, Any] | None = None
    fsync: list[str] = field(default_factory=list)
    left_alone: str | None = None  # why nothing of the partition is changed (overflow, too-large)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.key[0] if self.key is not None else None,
            "partition": self.key[1] if self.key is not None else None,
            "directory": self.name,
            "recovery_point": self.recovery_point,
            "recovered_from_offset": self.scanned_from,
            "log_end_offset": self.log_end_offset,
            "index_interval_bytes": self.interval,
            "truncated": self.truncated_at,
            "left_alone": self.left_alone,
        }


class _Planner:
    def __init__(self, plan: RecoverPlan, root: Path, store: ks.KafkaStore, options: RecoverOptions) -> None:
        self.plan = plan
        self.root = root
        self.store = store
        self.options = options
        #: paths a step removes or replaces before a later step acts on them (no precondition then)
        self.touched: set[Path] = set()
        self.dropped_unknown: list[str] = []
        #: partitions whose segments before the recovery point were not read (not --full)
        self.unread_before_rp = 0
        #: what the plan's scans read of each segment (partition dir, base offset), and how fast:
        #: the restart preview (``kafka_broker.restart_preview``) reads nothing the plan read
        self.reads: dict[tuple[str, int], kb.SegmentRead] = {}
        #: ``count_valid_from`` of each (log, position) asked for: the plan's cuts and the restart
        #: preview count the records a cut drops once
        self.counts: dict[tuple[str, int], tuple[int, bool]] = {}
        self.watch = kb.Stopwatch()
        #: the store model's one reading: the segments' scans and validate's findings
        self.reading = RecoveryReading(store, log_findings.INDEX)

    def scan(self, part: ks.KafkaPartition, log: Path, base: int, interval: int) -> RecoveryScan:
        """``LogSegment.recover`` of one segment from the store model's reading (a log it does
        not walk: ``scan_segment``), timed and remembered for the restart preview."""
        scan = self.reading.scan(str(log), base, interval)
        if scan is not None:
            self.watch.seconds += self.reading.seconds.get(str(log), 0.0)
            self.watch.bytes += scan.size
        else:
            started = time.perf_counter()
            scan = scan_segment(log, base, interval)
            self.watch.time(scan.size, started)
        self.reads[(part.name, base)] = kb.SegmentRead(scan.size, scan.valid_bytes, scan.records)
        if scan.cut_records is not None:  # counted by the reading's walk: what the cut drops
            self.counts.setdefault((str(log), scan.valid_bytes), scan.cut_records)
        return scan

    def indexes(self, log: Path, base: int, scan: RecoveryScan, interval: int) -> RecoveryScan:
        """``scan`` with the indexes ``LogSegment.recover`` builds with ``interval``: the reading's
        scan of a segment folded with another interval differs in them alone (its offsets increase:
        ``RecoveryReading.scan``), so the segment is read again for them only when they are needed
        (an index recover rebuilds)."""
        if scan.interval in (None, interval):
            return scan
        again = scan_segment(log, base, interval)
        scan.index, scan.timeindex, scan.interval = again.index, again.timeindex, interval
        return scan

    def valid_from(self, log: Path, start: int) -> tuple[int, bool]:
        """``count_valid_from(log, start)``, counted once: from position 0, the store model's
        reading counted it (``RecoveryReading.valid_records``), at a cut its walk did (``scan``)."""
        key = (str(log), start)
        got = self.counts.get(key)
        if got is None:
            known = self.reading.valid_records(str(log)) if start == 0 else None
            got = self.counts[key] = known if known is not None else count_valid_from(log, start)
        return got

    def segment_read(self, part: ks.KafkaPartition, seg: ks.KafkaSegment) -> kb.SegmentRead | None:
        """What ``LogSegment.recover`` reads of ``seg``: the plan's scan, else the reading's."""
        got = self.reads.get((part.name, seg.base_offset))
        if got is None and seg.log is not None:
            folded = self.reading.folded(str(seg.log))
            if folded is not None:
                return kb.SegmentRead(folded.size, folded.valid_bytes, folded.records)
            try:
                self.scan(part, seg.log, seg.base_offset, DEFAULT_INDEX_INTERVAL)
            except MqError:
                return None
            got = self.reads[(part.name, seg.base_offset)]
        return got

    def transaction_events(self, log: Path, from_offset: int | None) -> list[tuple[int, str, int]]:
        """``kafka_recovery.transaction_events(log, from_offset)``: from the reading's scan of the
        segment when its walk stopped where that one stops (at the first entry whose header or CRC
        does not read, or at the end of the data), else from the file."""
        folded = self.reading.folded(str(log))
        if folded is None or folded.end not in ("eof", "zeros", "partial", "corrupt"):
            return list(transaction_events(log, from_offset))
        return [(pid, "data" if kind == "data" else "end", offset) for kind, pid, offset in folded.txn if from_offset is None or offset >= from_offset]

    def rel(self, path: Path) -> str:
        return relative(self.root, path)

    def delete(self, path: Path, reason: str, **details: Any) -> None:
        self.plan.add(Step("delete", self.rel(path), reason, expect=observe(path), details=details))
        self.touched.add(path)

    # --- 1. temporary files ---------------------------------------------------------------------
    def leftovers(self, part: ks.KafkaPartition) -> list[_LiveSeg]:
        """Plan the temporary-file steps of ``LogLoader``; returns the segments as the broker sees
        them afterwards (current paths, ``.swap`` files standing for their targets)."""
        cleaned: list[tuple[Path, int]] = []
        swaps: list[tuple[Path, int]] = []
        for path in part.leftovers:
            name = path.name
            if name.endswith(".cleaned"):
                cleaned.append((path, _offset_of(name) or 0))
            elif name.endswith(".swap"):
                swaps.append((path, _offset_of(name) or 0))
            elif name.endswith(".deleted"):
                self.delete(path, "a file renamed for deletion (.deleted): the broker deletes it at load")
            elif name.endswith(".part"):
                self.delete(path, "an unfinished KRaft snapshot (.part): the raft layer deletes it at start")
            else:
                self.delete(path, "a state file written but never renamed into place (.tmp): the broker ignores it and writes a new one")
        for path in part.unexpected:
            if path.name.startswith(MQTOOL_TMP_PREFIX) and path.is_file():
                self.delete(path, "a temporary file of an interrupted mqtool run")
        min_cleaned = min((o for _, o in cleaned), default=None)
        valid_swaps = []
        for path, offset in swaps:
            if min_cleaned is not None and offset >= min_cleaned:
                self.delete(path, f"a .swap file at or above the lowest .cleaned offset {min_cleaned} (an unfinished segment split, KAFKA-6264): the broker deletes it")
            else:
                valid_swaps.append((path, offset))
        for path, _ in cleaned:
            self.delete(path, "an unfinished log-cleaner output (.cleaned): the broker deletes it at load")
        # the swap range: files it replaced are deleted
        lo: int | None = None
        hi: int | None = None
        for path, offset in valid_swaps:
            if path.name.endswith(".log.swap"):
                nxt = next_offset(path, offset)
                lo = offset if lo is None else min(lo, offset)
                hi = nxt if hi is None else max(hi, nxt)
        segs: dict[int, _Seg] = {}
        snapshots = []
        for seg in part.segments:
            for kind in ks.SEGMENT_KINDS:
                p = getattr(seg, kind)
                if p is None:
                    continue
                if lo is not None and hi is not None and lo <= seg.base_offset < hi:
                    self.delete(p, f"replaced by the interrupted swap of offsets [{lo}, {hi}) (the broker deletes it before renaming the .swap files)")
                    continue
                segs.setdefault(seg.base_offset, _Seg(seg.base_offset, _stem(p.name))).files[kind] = p
        for snap in part.snapshots:
            if lo is not None and hi is not None and lo <= snap.offset < hi:
                self.delete(snap.path, f"a producer snapshot in the range [{lo}, {hi}) of an interrupted swap (the broker deletes it)")
            else:
                snapshots.append(snap)
        for path, offset in valid_swaps:
            kind = path.name.split(".")[1]
            if kind in ks.SEGMENT_KINDS:
                swapped = segs.setdefault(offset, _Seg(offset, _stem(path.name)))
                old = swapped.files.get(kind)
                if old is not None:
                    self.touched.add(old)  # replaced by the rename
                swapped.files[kind] = path
            else:  # a snapshot swap (not written by the broker): renamed like the others
                self.swap_renames.append(path)
        self.snapshots = snapshots
        ordered = [segs[b] for b in sorted(segs)]
        # index files without their .log: deleted at load
        out: list[_LiveSeg] = []
        for entry in ordered:
            if entry.log is None:
                for kind in INDEX_KINDS:
                    p = entry.files.get(kind)
                    if p is not None:
                        self.delete(p, f"{p.name} has no .log: the broker deletes an orphaned index file at load")
                continue
            out.append(_LiveSeg(entry.base, entry.stem, entry.files))
        return out

    swap_renames: list[Path]
    snapshots: list[ks.ProducerSnapshotFile]


def plan_kafka(path: str | Path, options: RecoverOptions = RecoverOptions()) -> RecoverPlan:
    store = ks.open_kafka(path)
    if store.kind == "segment":
        raise StoreLayoutError(
            f"`mqtool recover` repairs whole partitions: give the partition directory ({Path(path).parent}) or the log dir",
            path=path,
            expected="a Kafka log dir or partition directory",
            found="a segment file",
        )
    root = store.log_dir if store.log_dir is not None else store.root
    plan = RecoverPlan("kafka", str(Path(root).resolve()), "full" if options.full else "recovery-point")
    root = Path(plan.root)
    planner = _Planner(plan, root, store, options)
    broker = kb.resolve_broker(store, options.broker_version)
    log_dir = store.log_dir
    clean = log_dir is not None and (log_dir / cpf.CLEAN_SHUTDOWN).exists()
    plan.facts.update({"kind": store.kind, "target": str(Path(store.root).resolve()), "log_dir": log_dir is not None, "clean_shutdown_marker": clean, "partitions": []})

    rp_path = log_dir / cpf.RECOVERY_POINT_OFFSET_CHECKPOINT if log_dir is not None else None
    hw_path = log_dir / cpf.REPLICATION_OFFSET_CHECKPOINT if log_dir is not None else None
    lso_path = log_dir / cpf.LOG_START_OFFSET_CHECKPOINT if log_dir is not None else None
    rp_entries, rp_corrupt = _read_offsets(rp_path)
    hw_entries, _ = _read_offsets(hw_path)
    lso_entries, _ = _read_offsets(lso_path)
    rps = {(e.topic, e.partition): e.offset for e in rp_entries or ()}
    lsos = {(e.topic, e.partition): e.offset for e in lso_entries or ()}
    if rp_corrupt:
        plan.notes.append(f"{cpf.RECOVERY_POINT_OFFSET_CHECKPOINT} cannot be read: as the broker does, every partition is recovered from offset 0")

    # log-dir leftovers: *.tmp checkpoints, mqtool's own temporary files
    if log_dir is not None:
        names = safe_listdir(log_dir)
        for n in names:
            p = log_dir / n
            if n.endswith(".tmp") and is_regular_file(p) and not p.is_symlink():
                planner.delete(p, "a checkpoint written but never renamed into place (.tmp): the broker ignores it and writes a new one")
        for n in names:
            p = log_dir / n
            if n.startswith(MQTOOL_TMP_PREFIX) and p.is_file() and not p.is_symlink():
                planner.delete(p, "a temporary file of an interrupted mqtool run")

    new_rp: dict[tuple[str, int], tuple[int, list[str]]] = {}
    leos: dict[tuple[str, int], int] = {}
    for link in store.links:
        plan.notes.append(f"{link.name}: a symbolic link: not followed (nothing behind it is recovered)")
    for part in store.partitions:
        if part.links or part.special:
            shown = ", ".join(p.name for p in (*part.links, *part.special))
            plan.notes.append(f"{part.name}: symbolic links or special files ({shown}) are not followed: the partition is left as it is")
            continue
        facts = _plan_partition(planner, part, rps, lsos, options, clean)
        plan.facts["partitions"].append(facts.to_dict())
        if facts.key is not None and part.suffix is None and facts.log_end_offset is not None:
            leos[facts.key] = facts.log_end_offset
            if part.topic != ks.CLUSTER_METADATA:
                new_rp[facts.key] = (facts.log_end_offset, facts.fsync)
    if len(plan.facts["partitions"]) == 1:
        plan.valid_end = plan.facts["partitions"][0]["log_end_offset"]
    if planner.unread_before_rp:
        plan.notes.append(
            f"{planner.unread_before_rp} partition(s) recovered from their recovery points, as the broker does after a crash: "
            "the segments before them were not read (`mqtool validate` checks them; `--full` recovers them too)"
        )
    if plan.records_dropped:
        plan.needs_force.append(f"{plan.records_dropped} valid record(s) after a broken batch would be dropped (the broker drops them too)")
    if planner.dropped_unknown:
        plan.needs_force.append("the count of dropped records is incomplete (" + "; ".join(planner.dropped_unknown) + ")")

    # --- 5. log-dir checkpoints (last) ------------------------------------------------------------
    if rp_path is not None and rp_path.exists() and new_rp:
        base = [] if rp_corrupt else list(rp_entries or ())
        updated, fsync = _updated_offsets(base, {k: v for k, (v, _f) in new_rp.items()}, add_missing=True)
        if updated is not None or (rp_corrupt and new_rp):
            entries = updated if updated is not None else base
            for k, (value, files) in new_rp.items():
                if rps.get(k) != value or rp_corrupt:
                    fsync.extend(files)
            plan.add(
                Step(
                    "write-checkpoint",
                    planner.rel(rp_path),
                    "recovery points to the recovered log end offsets (the segments are fsynced first)",
                    expect=observe(rp_path),
                    details={"entries": [[e.topic, e.partition, e.offset] for e in entries], "fsync": sorted(set(fsync))},
                )
            )
    if hw_path is not None and hw_entries is not None and leos:
        hws = {(e.topic, e.partition): e.offset for e in hw_entries}
        lowered = {k: leo for k, leo in leos.items() if k in hws and hws[k] > leo}
        if lowered:
            updated, _ = _updated_offsets(list(hw_entries), lowered, add_missing=False)
            assert updated is not None  # every lowered value differs from the checkpoint's
            plan.add(
                Step(
                    "write-checkpoint",
                    planner.rel(hw_path),
                    "high watermarks past the recovered log end lowered to it (the broker clamps them at load)",
                    expect=observe(hw_path),
                    details={"entries": [[e.topic, e.partition, e.offset] for e in updated], "fsync": []},
                )
            )
    if clean and plan.has_work:
        plan.notes.append(
            f"{cpf.CLEAN_SHUTDOWN} is present: the broker would skip recovery (and append after any damaged bytes); mqtool recovers anyway and leaves the marker"
        )
    # what validate still finds after the plan (a log below its checkpoints, damage before a
    # recovery point, a lost segment): named, the plan exits 1
    met = log_findings.select(planner.reading.findings)
    lost = [f for f in met if f.code == code_ids.KAFKA_SEGMENT_MISSING]
    for f in lost:
        plan.notes.append(
            f"{relative(root, Path(f.path))}: offsets {f.details['missing_from']}..{int(f.details['missing_to']) - 1} are in no segment and "  # type: ignore[call-overload]
            "mqtool cannot rebuild them (their data is gone): the broker starts with the gap and serves the offset after it to a "
            "consumer fetching from inside it; copy the partition from an in-sync replica, or accept the loss"
        )
    plan.unfixable = [f.to_dict() for f in log_findings.unfixed(path, "kafka", plan.root, plan.steps, found=met)]
    plan.unfixable += [f.to_dict() for f in lost if f.level is not Severity.error]  # a warning: still named, recover cannot fix it
    plan.facts["broker"] = broker.to_dict()
    plan.facts["restart"] = kb.restart_preview(store, broker, planner.segment_read, planner.watch.device_speed(root), planner.valid_from)
    return plan


def _updated_offsets(
    entries: list[cpf.TopicPartitionOffset], values: dict[tuple[str, int], int], *, add_missing: bool
) -> tuple[list[cpf.TopicPartitionOffset] | None, list[str]]:
    """``entries`` with ``values`` applied (None when nothing changes), and an empty fsync list."""
    out: list[cpf.TopicPartitionOffset] = []
    seen: set[tuple[str, int]] = set()
    changed = False
    for e in entries:
        key = (e.topic, e.partition)
        if key in values:  # every occurrence (a later duplicate is the one the broker reads)
            seen.add(key)
            if e.offset != values[key]:
                changed = True
                e = cpf.TopicPartitionOffset(e.topic, e.partition, values[key])
        out.append(e)
    if add_missing:
        for key in sorted(k for k in values if k not in seen):
            changed = True
            out.append(cpf.TopicPartitionOffset(key[0], key[1], values[key]))
    return (out if changed else None), []


def _plan_partition(
    planner: _Planner, part: ks.KafkaPartition, rps: dict[tuple[str, int], int], lsos: dict[tuple[str, int], int], options: RecoverOptions, clean: bool
) -> _PartFacts:
    plan = planner.plan
    facts = _PartFacts(part.name, part.key)
    if part.suffix == "delete":
        plan.notes.append(f"{part.name}: a partition being deleted (-delete): the broker does not recover it, neither does mqtool")
        return facts
    planner.swap_renames = []
    segs = planner.leftovers(part)
    facts.interval = interval = _infer_interval(segs)
    directory = part.path
    key = part.key
    rp = rps.get(key) if key is not None and part.suffix is None else None
    facts.recovery_point = rp
    lso = lsos.get(key, 0) if key is not None and part.suffix is None else 0
    n = len(segs)
    if n == 0:
        if key is not None and part.suffix is None and key in lsos and part.topic != ks.CLUSTER_METADATA:
            # no segment (a restart interrupted before its empty segment was complete): the broker
            # creates one at the log start offset
            facts.log_end_offset = lso
            _plan_create(planner, part, lso)
        return facts
    start = 0
    if not options.full and rp is not None:
        for i, seg in enumerate(segs):
            if seg.base <= rp:
                start = i
    facts.scanned_from = segs[start].base
    if start > 0:
        planner.unread_before_rp += 1

    # --- 2. scan ----------------------------------------------------------------------------------------
    scans: dict[int, RecoveryScan] = {}
    cut_index: int | None = None
    for i, seg in enumerate(segs):
        missing = seg.log is not None and _size(seg.log) > 0 and ("index" not in seg.files or "timeindex" not in seg.files)
        if i < start and not missing:
            continue
        try:
            scan = planner.scan(part, seg.log, seg.base, interval)
        except MqError as exc:
            plan.notes.append(f"{part.name}: {seg.log.name} cannot be read ({exc}); left as it is")
            continue
        scans[i] = scan
        if scan.end in ("overflow", "too-large"):
            # the broker splits (or refuses) such a segment; mqtool does neither, so nothing of the
            # partition is changed: a log end offset, recovery point, high watermark or snapshot
            # pruning derived from the batches before it would disown the data it keeps
            plan.notes.append(
                f"{part.name}: {seg.log.name}: {scan.detail}; mqtool leaves the partition as it is "
                "(no truncation, no index, checkpoint or snapshot change; `mqtool validate` names the damage)"
            )
            facts.left_alone = scan.end
            plan.facts.setdefault("unrepaired", []).append(f"{part.name}/{seg.log.name}")
            return facts
        if scan.cut > 0 and i >= start:
            cut_index = i
            break
    last_i = cut_index if cut_index is not None else n - 1
    # the log end offset after recovery: readNextOffset of the (new) last segment
    last_scan = scans.get(last_i)
    if last_scan is not None:
        leo = last_scan.last_offset + 1 if last_scan.last_offset is not None else segs[last_i].base
    else:
        leo = next_offset(segs[last_i].log, segs[last_i].base)
    facts.log_end_offset = leo

    # --- the log start offset rule: LEO below the checkpointed log start -> the log restarts there ----
    if key is not None and part.suffix is None and key in lsos and leo < lso and part.topic != ks.CLUSTER_METADATA:
        _plan_restart(planner, part, segs, scans, lso, facts)
        return facts

    # --- 3. producer state, epochs, indexes --------------------------------------------------------------
    if any(ev[0] == "abort" for i in scans if i <= last_i for ev in scans[i].txn):
        _replay_txns(part, segs, scans, start, last_i, planner)
    _plan_epochs(planner, part, segs, scans, last_i, leo, cut_index is not None)
    for i in range(last_i + 1):
        if i in scans:
            _plan_indexes(planner, part, segs[i], scans[i], interval=interval, is_last=i == n - 1, truncated=scans[i].cut > 0 and scans[i].end != "overflow")
    # segments before the recovery point recovered for a missing index: cut, later segments kept
    # (LogLoader.loadSegmentFiles recovers them without deleting anything after them)
    for i in sorted(scans):
        if i < start and scans[i].cut > 0 and scans[i].end not in ("overflow", "too-large"):
            _plan_cut(planner, part, segs[i], scans[i], None, later=0)

    # --- the cut: later segments first (newest first), then the segment itself ---------------------------
    if cut_index is not None:
        seg, scan = segs[cut_index], scans[cut_index]
        dropped = 0
        for j in range(n - 1, cut_index, -1):
            later = segs[j]
            count, complete = planner.valid_from(later.log, 0)
            if not complete:
                planner.dropped_unknown.append(f"{part.name}/{later.log.name}")
            dropped += count
            for kind in ks.SEGMENT_KINDS:
                p = later.files.get(kind)
                if p is not None:
                    planner.delete(
                        p,
                        f"segment {later.stem} follows the cut in {seg.stem}: the broker deletes every later segment (renamed .deleted, then removed)",
                        partition=part.name,
                        valid_records_cut=count if kind == "log" else 0,
                    )
        plan.records_dropped += dropped
        _plan_cut(planner, part, seg, scan, leo, later=n - 1 - cut_index)
        facts.truncated_at = {"segment": seg.stem, "position": scan.valid_bytes, "bytes": scan.cut, "later_segments": n - 1 - cut_index}

    # --- swap renames: each log before its indexes --------------------------------------------------------
    for i, seg in enumerate(segs):
        if cut_index is not None and i > cut_index:
            continue
        for kind in ("log", "index", "timeindex", "txnindex"):
            p = seg.files.get(kind)
            if p is not None and p.name.endswith(".swap"):
                _rename_swap(planner, p, seg.final(directory, kind))
    for p in planner.swap_renames:
        _rename_swap(planner, p, p.with_name(p.name[: -len(".swap")]))

    # --- snapshots past the log end, or unreadable ----------------------------------------------------------
    for snap in planner.snapshots:
        problem = None
        try:
            ksnap.decode_snapshot(read_small_file(snap.path, 256 << 20))
        except MqError as exc:
            problem = f"an unreadable producer snapshot ({exc}): the broker deletes it and rebuilds the producer state from the log"
        if problem is None and snap.offset > leo:
            problem = f"a producer snapshot at offset {snap.offset}, past the recovered log end offset {leo}: the broker deletes it at load"
        if problem is not None:
            planner.delete(snap.path, f"{part.name}: {problem}")

    # files the recovery point's advance relies on: fsynced before the checkpoint names it
    for i in range(start, last_i + 1):
        for kind in ("log", "index", "timeindex", "txnindex"):
            p = segs[i].files.get(kind)
            if p is not None:
                final = segs[i].final(directory, kind)
                facts.fsync.append(planner.rel(final))
    return facts


def _plan_cut(planner: _Planner, part: ks.KafkaPartition, seg: _LiveSeg, scan: RecoveryScan, leo: int | None, *, later: int) -> None:
    """The ``truncate`` step of one segment (its bytes from the valid end on are quarantined)."""
    if scan.end == "invalid-offset":
        inside, complete = planner.valid_from(seg.log, 0)
    elif scan.end in ("corrupt", "control"):
        # the valid batches from the cut on, as the restart preview counts them (the batch at
        # the cut is one when its CRC holds: an unreadable end-transaction marker)
        inside, complete = planner.valid_from(seg.log, scan.valid_bytes)
    else:
        inside, complete = 0, True
    if not complete:
        planner.dropped_unknown.append(f"{part.name}/{seg.log.name}")
    planner.plan.records_dropped += inside
    why = {
        "partial": "torn tail",
        "zeros": "zero tail",
        "corrupt": "invalid batch",
        "control": "unreadable end-transaction marker",
        "invalid-offset": "offsets not increasing at an index point (InvalidOffsetException): the broker empties the segment",
    }.get(scan.end, scan.end)
    where = f" (log end offset {leo})" if leo is not None else " (a segment before the recovery point, recovered for its missing index)"
    expect = observe(seg.log)
    if scan.cut_crc is not None and expect.get("size") == scan.size:
        expect["crc32"] = scan.cut_crc  # the bytes the cut removes, as the reading read them
    else:
        expect = observe(seg.log, scan.valid_bytes, scan.cut)
    planner.plan.add(
        Step(
            "truncate",
            planner.rel(seg.log),
            f"{part.name}: {why}: {scan.detail}; recovery truncates {seg.log.name} to {scan.valid_bytes} bytes{where}"
            + (f"; {inside} valid record(s) follow in the segment" if inside else ""),
            position=scan.valid_bytes,
            length=scan.cut,
            expect=expect,
            details={**_partition_ids(part), "log_end_offset": leo, "valid_records_cut": inside, "later_segments_deleted": later},
        )
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _rename_swap(planner: _Planner, source: Path, target: Path) -> None:
    # a source that does not exist yet is created by an earlier step of this plan (no precondition)
    expect = observe(source) if source.exists() else {}
    planner.plan.add(
        Step(
            "rename-swap",
            planner.rel(source),
            f"completes the interrupted swap: {source.name} becomes {target.name} (the broker renames .swap files at load)",
            expect=expect,
            details={"to": planner.rel(target)},
        )
    )
    planner.touched.add(target)


# --- transactions -------------------------------------------------------------------------------------


def _replay_txns(part: ks.KafkaPartition, segs: list[_LiveSeg], scans: dict[int, RecoveryScan], start: int, last_i: int, planner: _Planner) -> None:
    """Fill ``scan.aborts`` of the scanned segments: the producer state at the first scanned
    segment (latest readable snapshot at or below it, then the log), then the scanned batches."""
    first = min(i for i in scans if i <= last_i)
    base = segs[first].base
    ongoing: dict[int, int] = {}
    snap_offset = None
    for snap in sorted(planner.snapshots, key=lambda s: s.offset, reverse=True):
        if snap.offset > base:
            continue
        try:
            decoded = ksnap.decode_snapshot(read_small_file(snap.path, 256 << 20))
        except MqError:
            continue
        snap_offset = snap.offset
        ongoing = {e.producer_id: e.current_txn_first_offset for e in decoded.entries if e.current_txn_first_offset >= 0}
        break
    # replay the batches between the snapshot (or the log start) and the first scanned segment
    for i in range(first):
        seg = segs[i]
        nxt = segs[i + 1].base if i + 1 < len(segs) else None
        if snap_offset is not None and nxt is not None and nxt <= snap_offset:
            continue
        try:
            for pid, event, offset in planner.transaction_events(seg.log, snap_offset):
                if event == "end":
                    ongoing.pop(pid, None)
                else:
                    ongoing.setdefault(pid, offset)
        except MqError:
            continue
    for i in range(first, last_i + 1):
        scan = scans.get(i)
        if scan is None:
            continue
        existing = _existing_aborts(segs[i].files.get("txnindex"))
        for kind, pid, offset in scan.txn:
            if kind == "data":
                ongoing.setdefault(pid, offset)
                continue
            first_offset = ongoing.pop(pid, None)
            if kind != "abort":
                continue
            others = [f for p, f in ongoing.items() if p != pid]
            lso = min(others) if others else offset + 1
            if first_offset is None:
                # the transaction's data is not in the log (compacted, or before the log start):
                # keep the broker's entry when there is one, else an empty range ending at the marker
                kept = existing.get((pid, offset))
                scan.aborts.append(kept or ktxn.AbortedTxn(pid, offset, offset, lso))
            else:
                scan.aborts.append(ktxn.AbortedTxn(pid, first_offset, offset, lso))


def _existing_aborts(path: Path | None) -> dict[tuple[int, int], ktxn.AbortedTxn]:
    if path is None:
        return {}
    try:
        contents = ktxn.decode_txn_index(read_small_file(path, 64 << 20))
    except (MqError, ValueError):
        return {}
    return {(e.producer_id, e.last_offset): e for e in contents.entries}


# --- leader epochs ------------------------------------------------------------------------------------


def _plan_epochs(planner: _Planner, part: ks.KafkaPartition, segs: list[_LiveSeg], scans: dict[int, RecoveryScan], last_i: int, leo: int, cut: bool) -> None:
    path = part.leader_epoch_checkpoint
    entries: list[cpf.EpochEntry] = []
    unreadable = False
    if path is not None:
        try:
            entries = list(cpf.decode_leader_epoch_checkpoint(read_small_file(path, 64 << 20)).entries)
        except (MqError, UnicodeDecodeError, ValueError):
            unreadable = True
    new = list(entries)
    for i in sorted(scans):
        if i > last_i:
            break
        for epoch, base in scans[i].epochs:
            latest = new[-1].epoch if new else -1
            if epoch > latest:
                # LeaderEpochFileCache.assign: entries with a larger epoch or a start at/after it go
                new = [e for e in new if e.epoch < epoch and e.start_offset < base]
                new.append(cpf.EpochEntry(epoch, base))
    # truncateFromEnd: the broker drops entries at or past the log end; without a cut only entries
    # past it are dropped (an entry at the log end of an undamaged log is the leader's current epoch)
    new = [e for e in new if e.start_offset < leo or (not cut and e.start_offset == leo)]
    if new == entries and not unreadable:
        return
    if path is None and not new:
        return
    target = path if path is not None else part.path / cpf.LEADER_EPOCH_CHECKPOINT
    why = "unreadable: rebuilt from the recovered batches" if unreadable else "epochs the recovered batches start, entries past the log end dropped"
    planner.plan.add(
        Step(
            "write-leader-epochs",
            planner.rel(target),
            f"{part.name}: leader-epoch-checkpoint {why} (log end offset {leo})",
            expect=observe(target),
            details={"entries": [[e.epoch, e.start_offset] for e in new]},
        )
    )


# --- indexes --------------------------------------------------------------------------------------------


def _encode(kind: str, scan: RecoveryScan, base: int) -> bytes:
    if kind == "index":
        return kidx.encode_offset_index(scan.index, base)
    if kind == "timeindex":
        return kidx.encode_time_index(scan.timeindex, base)
    return ktxn.encode_txn_index(scan.aborts)


def _index_problems(planner: _Planner, part: ks.KafkaPartition, seg: _LiveSeg, is_last: bool) -> set[str]:
    """Index kinds ``validate`` finds inconsistent with the log (an index written by multi-batch
    appends is consistent; a pre-allocated zero tail is not kept): from the plan's reading of the
    store when it checked the segment so, else from a check of the segment alone."""
    from mqtool.store.model.kafka import SegmentTask, check_segment

    files = seg.files
    task = SegmentTask(
        str(part.path),
        str(files["log"]),
        seg.base,
        True,
        str(files["index"]) if "index" in files else None,
        str(files["timeindex"]) if "timeindex" in files else None,
        str(files["txnindex"]) if "txnindex" in files else None,
        is_last=is_last,
    )
    by_path = {str(p): k for k, p in files.items() if k in INDEX_KINDS}
    kinds = set()
    found = planner.reading.segment_findings(task)
    for finding in found if found is not None else check_segment(task).findings:
        code = finding.code
        if code == code_ids.KAFKA_INDEX_MULTI_BATCH:
            continue
        if code == code_ids.KAFKA_TXNINDEX_MISSING:
            kinds.add("txnindex")
        elif code.startswith(("KAFKA-INDEX-", "KAFKA-TIMEINDEX-", "KAFKA-TXNINDEX-")) or (code == code_ids.KAFKA_FILE_UNREADABLE and finding.path in by_path):
            kinds.add(by_path.get(finding.path, "timeindex" if code.startswith("KAFKA-TIMEINDEX") else "index"))
    return kinds


def _plan_indexes(planner: _Planner, part: ks.KafkaPartition, seg: _LiveSeg, scan: RecoveryScan, *, interval: int, is_last: bool, truncated: bool) -> None:
    """Rebuild an index file that differs from the one ``LogSegment.recover`` builds when the
    segment is cut, the file is missing, ``--rebuild-index`` asks, or ``validate`` finds it
    inconsistent.  Which kinds could be rebuilt is known before the indexes are: ``scan``'s
    indexes are made (``_Planner.indexes``) only for those."""
    if scan.end in ("overflow", "too-large"):
        return
    directory = part.path
    problems: set[str] | None = None
    rebuild: dict[str, bytes] = {}
    for kind in INDEX_KINDS:
        current = seg.files.get(kind)
        if not (truncated or current is None or planner.options.rebuild_index):
            if problems is None:
                problems = _index_problems(planner, part, seg, is_last)
            if kind not in problems:
                continue  # kept, whatever recovery would build
        if kind != "txnindex":
            scan = planner.indexes(seg.log, seg.base, scan, interval)
        try:
            data = _encode(kind, scan, seg.base)
        except ValueError:
            continue  # entries the format cannot hold: left to validate to report
        if not data and (kind == "txnindex" or scan.valid_bytes == 0) and (current is None or _size(current) == 0):
            continue  # nothing to index (an empty segment, no aborted transaction): a missing file says as much
        if _file_bytes_equal(current, data):
            continue
        rebuild[kind] = data
    if not rebuild:
        return
    scan = planner.indexes(seg.log, seg.base, scan, interval)  # the step counts its entries
    files = {}
    expect_files = {}
    for kind, data in rebuild.items():
        current = seg.files.get(kind)
        # a swapped segment's indexes are written to their final names; a pending .swap index is
        # dropped instead of renamed over the rebuilt one
        if current is not None and current.name.endswith(".swap"):
            planner.delete(current, f"{part.name}: {current.name} is replaced by the index recovery rebuilds")
            del seg.files[kind]
        target = seg.final(directory, kind)
        rel = planner.rel(target)
        files[kind] = {"path": rel, "size": len(data), "crc32": zlib.crc32(data) & 0xFFFFFFFF}
        if target not in planner.touched:
            expect_files[rel] = observe(target)
        planner.touched.add(target)
    names = ", ".join(f".{k}" for k in rebuild)
    if truncated:
        why = "the segment is cut"
    elif any(seg.files.get(k) is None for k in rebuild):
        why = "missing"
    elif planner.options.rebuild_index and not (problems or set()) & set(rebuild):
        why = "--rebuild-index"
    else:
        why = "inconsistent with the log"
    planner.plan.add(
        Step(
            "rebuild-index",
            planner.rel(seg.log),
            f"{part.name}: {seg.stem}{names} rebuilt as LogSegment.recover builds them ({why}; "
            f"{len(scan.index)} offset entr{'y' if len(scan.index) == 1 else 'ies'}, {len(scan.timeindex)} time entr{'y' if len(scan.timeindex) == 1 else 'ies'}, "
            f"{len(scan.aborts)} aborted transaction(s))",
            expect={"files": expect_files},
            details={
                **_partition_ids(part),
                "base_offset": seg.base,
                "valid_bytes": scan.valid_bytes,
                "index_interval_bytes": interval,
                "files": files,
                "aborted": [[a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset] for a in scan.aborts],
            },
        )
    )


# --- the log start offset rule ------------------------------------------------------------------------


def _plan_restart(planner: _Planner, part: ks.KafkaPartition, segs: list[_LiveSeg], scans: dict[int, RecoveryScan], lso: int, facts: _PartFacts) -> None:
    """The log end is below the checkpointed log start: the broker deletes every segment and
    starts an empty one at the log start offset (``LogLoader``)."""
    plan = planner.plan
    dropped = 0
    if part.leader_epoch_checkpoint is not None:
        plan.add(
            Step(
                "write-leader-epochs",
                planner.rel(part.leader_epoch_checkpoint),
                f"{part.name}: the log restarts at {lso}: the leader-epoch cache is cleared",
                expect=observe(part.leader_epoch_checkpoint),
                details={"entries": []},
            )
        )
    for seg in reversed(segs):
        count, complete = planner.valid_from(seg.log, 0)
        if not complete:
            planner.dropped_unknown.append(f"{part.name}/{seg.log.name}")
        dropped += count
        for kind in ks.SEGMENT_KINDS:
            p = seg.files.get(kind)
            if p is not None:
                planner.delete(
                    p,
                    f"{part.name}: the log end offset {facts.log_end_offset} is below the log start offset {lso}: the broker deletes every segment",
                    partition=part.name,
                    valid_records_cut=count if kind == "log" else 0,
                )
    for snap in planner.snapshots:
        planner.delete(snap.path, f"{part.name}: the log restarts at {lso}: producer state starts empty")
    plan.records_dropped += dropped
    _plan_create(planner, part, lso)
    facts.log_end_offset = lso
    facts.truncated_at = {"restart_at": lso}


def _plan_create(planner: _Planner, part: ks.KafkaPartition, lso: int) -> None:
    stem = segnames.kafka_offset_prefix(lso)
    planner.plan.add(
        Step(
            "create-segment",
            planner.rel(part.path / f"{stem}.log"),
            f"{part.name}: an empty segment at the log start offset {lso}, as the broker creates it",
            expect={},
            # the .log last: the segment exists for a later plan only once it is complete
            details={"files": [planner.rel(part.path / f"{stem}.{k}") for k in ("index", "timeindex", "log")]},
        )
    )


# --- apply ------------------------------------------------------------------------------------------------


def apply_custom(step: Step, ctx: ApplyContext) -> None:
    path = resolve(ctx.root, step.path)
    if step.action == "rebuild-index":
        _apply_rebuild(step, ctx)
    elif step.action == "rename-swap":
        target = resolve(ctx.root, step.details["to"])
        if not path.exists():
            return  # renamed before an interruption
        # undo (entries restored last first): the target goes, the .swap comes back, then the
        # file the rename replaced
        if target.exists():
            ctx.quarantine.keep_file(target)
        ctx.quarantine.keep_file(path)
        ctx.quarantine.record_created(target)
        ctx.mutator.rename(path, target)
    elif step.action == "write-leader-epochs":
        data = cpf.encode_leader_epoch_checkpoint(cpf.LeaderEpochCheckpoint(tuple(cpf.EpochEntry(e, s) for e, s in step.details["entries"])))
        _replace(ctx, path, data)
    elif step.action == "write-checkpoint":
        for name in step.details.get("fsync", []):
            _fsync(resolve(ctx.root, name))
        entries = tuple(cpf.TopicPartitionOffset(t, p, o) for t, p, o in step.details["entries"])
        _replace(ctx, path, cpf.encode_offset_checkpoint(cpf.OffsetCheckpoint(entries)))
    elif step.action == "create-segment":
        for name in step.details["files"]:
            target = resolve(ctx.root, name)
            if target.exists():
                continue
            ctx.quarantine.record_created(target)
            ctx.mutator.create_file(target, b"")
    else:
        raise StoreLayoutError(f"unknown Kafka plan action {step.action!r}", path=path)


def _replace(ctx: ApplyContext, path: Path, data: bytes) -> None:
    if path.exists():
        ctx.quarantine.keep_file(path)
    else:
        ctx.quarantine.record_created(path)
    ctx.mutator.replace_file(path, data)


def _fsync(path: Path) -> None:
    """Make a file durable before a checkpoint says it is (read-only descriptor; a missing file
    -- deleted by the plan -- needs nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _apply_rebuild(step: Step, ctx: ApplyContext) -> None:
    """Rebuild the index files of one segment from its log (up to the planned valid end); the
    result must be what planning computed, else the log changed and the plan is refused."""
    d = step.details
    log = resolve(ctx.root, step.path)
    base = d["base_offset"]
    try:
        scan = scan_segment(log, base, d["index_interval_bytes"])
    except MqError as exc:
        raise PlanChangedError(f"{step.path} cannot be read any more ({exc}); plan again", path=log) from None
    scan.aborts = [ktxn.AbortedTxn(*a) for a in d["aborted"]]
    if scan.end == "invalid-offset":
        scan.index, scan.timeindex = [], []
    elif scan.valid_bytes > d["valid_bytes"]:
        raise PlanChangedError(
            f"{step.path} changed since the plan was made; plan again", path=log, expected=f"valid data up to {d['valid_bytes']}", found=str(scan.valid_bytes)
        )
    for kind, spec in d["files"].items():
        data = _encode(kind, scan, base)
        if len(data) != spec["size"] or zlib.crc32(data) & 0xFFFFFFFF != spec["crc32"]:
            raise PlanChangedError(
                f"{step.path} changed since the plan was made: the rebuilt .{kind} differs; plan again",
                path=log,
                expected=f"{spec['size']} bytes with CRC-32 {spec['crc32']}",
                found=f"{len(data)} bytes with CRC-32 {zlib.crc32(data) & 0xFFFFFFFF}",
            )
        _replace(ctx, resolve(ctx.root, spec["path"]), data)


def apply_kafka(plan: RecoverPlan, *, quarantine_root: Path | None = None, force: bool = False, verify: bool = True, jobs: int = 1) -> ApplyResult:
    """Apply a Kafka plan under mqtool's lock (refused while the broker holds ``.lock``, unless
    ``force``), then validate the recovered partitions."""
    from mqtool.ops.validate import ValidateOptions
    from mqtool.ops.validate.kafka import validate_kafka

    broker_lock = ks.LOCK_FILE if plan.facts.get("log_dir", True) else None
    result = apply_plan(plan, custom=apply_custom, quarantine_root=quarantine_root, force=force, broker_lock=broker_lock, command="recover")
    if verify:
        target = plan.facts.get("target") or plan.root
        report = validate_kafka(target, ValidateOptions(jobs=jobs))
        result.verification = report
        if report.failed:
            result.notes.append(
                f"the recovered store still has validation errors that recover does not repair (see `mqtool validate {target}`"
                + ("; segments before the recovery point are only recovered with --full)" if plan.mode != "full" else ")")
            )
    return result


__all__ = ["RecoverOptions", "apply_custom", "apply_kafka", "count_valid_from", "plan_kafka", "scan_segment"]
