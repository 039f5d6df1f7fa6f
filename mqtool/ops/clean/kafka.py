"""clean for Kafka log dirs and partition dirs (``UnifiedLog.deleteOldSegments``).

The broker's retention, rule by rule, each a prefix scan from the oldest segment that stops at the
first segment the rule spares (a later rule sees what the earlier ones left):

1. **log start offset** (every topic, compacted ones too): a segment goes when the next segment's
   base offset is at or below the log start offset (``log-start-offset-checkpoint``, raised by
   ``DeleteRecords``);
2. **size** (``retention.bytes``, default -1 = off): when the partition holds at least that many
   bytes, segments go while the excess still covers them;
3. **time** (``retention.ms``, default 7 days; negative = off): a segment goes when
   ``now - largest timestamp > retention.ms``, the largest timestamp being the last ``.timeindex``
   entry, or the ``.log``'s mtime when the time index has none (v0 data).

Constraints as upstream: only segments whose offsets are all below the high watermark
(``replication-offset-checkpoint``; a partition without an entry gets its log start offset, as the
broker's ``Partition.createLog`` gives it; with no checkpoint file at all the log end offsets stand in,
and a checkpoint that cannot be read stops the run) go, and a last segment that is empty never does.

**The active segment** (the last one, which the broker appends to): Kafka deletes it too when it
breaks a rule, after rolling a new empty segment at the log end offset.  mqtool's default
(``policy="safe"``) keeps it, so a store is never left without the segment its producers write to
while the broker is stopped; ``policy="broker"`` applies Kafka's rule (an empty
``<log end offset>.log`` with empty indexes is created first, then the old one goes).

Deletion is Kafka's: each file of a segment (``.log``, ``.index``, ``.timeindex``, ``.txnindex``) is
renamed with the ``.deleted`` suffix, then removed (the broker waits ``file.delete.delay.ms``
between the two; a run interrupted in between leaves ``.deleted`` files, which the next run -- or
the broker at load -- removes); the producer snapshot at a deleted segment's base offset goes the
same way.  Before the first deletion of a partition its ``leader-epoch-checkpoint`` is truncated
at the new log start offset (``truncateFromStart``); after all deletions ``log-start-offset-
checkpoint`` is rewritten as the broker writes it (only partitions whose log start offset is above
their first segment's base offset).

Topics whose cleanup policy is compaction cannot be told from the files, except the internal
ones: ``__consumer_offsets`` and ``__transaction_state`` get rule 1 only; ``__cluster_metadata``
(the raft layer's own retention), and partition dirs being deleted, moved (``-future``) or stray
are left alone.  ``protect_unconsumed`` (the default): no segment holding an offset some consumer
group has not committed past (``__consumer_offsets`` in the log dir; commits inside transactions
are not counted, the conservative reading) is deleted; the plan names the groups holding files
back.  Without it (``--allow-unconsumed``) the plan names each group whose unconsumed data it
deletes.
Unrecognised files are never touched (the plan lists them); symbolic links are never followed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqtool.errors import MqError, StoreLayoutError
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.ops.recover import ApplyContext, RecoverPlan, Step, observe, relative, resolve
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, read_small_file
from mqtool.store.model import consumers as model_consumers
from mqtool.store.model import kafka_reads as kr

#: Upstream defaults (``ServerLogConfigs``): log.retention.hours=168, log.retention.bytes=-1.
DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000
DEFAULT_RETENTION_BYTES = -1
COMPACTED_INTERNAL = (ks.CONSUMER_OFFSETS, ks.TRANSACTION_STATE)
MQTOOL_TMP_PREFIX = ".mqtool-tmp-"


@dataclass(frozen=True)
class CleanOptions:
    policy: str = "safe"  # safe: the active segment is kept; broker: Kafka's rule (roll, then delete it)
    retention_ms: int = DEFAULT_RETENTION_MS
    retention_bytes: int = DEFAULT_RETENTION_BYTES
    max_delete: int | None = None  # at most this many segments deleted per run
    protect_unconsumed: bool = True

    def __post_init__(self) -> None:
        if self.retention_ms < -1:  # Kafka's own validator: atLeast(-1), -1 meaning no time limit
            raise ValueError(f"retention.ms (--retention-ms): expected -1 (no limit) or >= 0, found {self.retention_ms}")


@dataclass
class _Seg:
    seg: ks.KafkaSegment

    @property
    def base(self) -> int:
        return self.seg.base_offset

    @property
    def size(self) -> int:
        return self.seg.log_size


def _is_link(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:
        return True


def _inside(root: Path, path: Path) -> bool:
    try:
        resolved = Path(path).resolve()
    except OSError:
        return False
    return resolved == root or root in resolved.parents


def _log_of(seg: ks.KafkaSegment) -> Path:
    """The ``.log`` of a segment ``KafkaPartition.log_segments`` gave (each has one)."""
    assert seg.log is not None, "log_segments() gives the segments that have a .log"
    return seg.log


#: A partition's (topic, partition) as the checkpoint files name it.
PartitionKey = tuple[str, int]
#: A retention rule: why ``seg`` goes (``nxt``, the segment after it, None for the active one), or None.
Rule = Callable[[ks.KafkaSegment, ks.KafkaSegment | None], str | None]


def _next_offset(seg: ks.KafkaSegment) -> int:
    """``readNextOffset``: from the last ``.index`` entry's position, the last batch's offset + 1
    (the base offset when the segment holds no batch)."""
    start = 0
    if seg.index is not None:
        try:
            with ReadOnlyFile(seg.index) as f:
                count = ks.index_entry_count(f, 8)
                if count:
                    indexed, _slot = ks.lookup_offset(seg.index, seg.base_offset, 2**63 - 1)
                    start = indexed.position
        except MqError:
            start = 0
    return kr.next_offset_from(_log_of(seg), seg.base_offset, start)


def _largest_timestamp(seg: ks.KafkaSegment, *, scan: bool = False) -> tuple[int, str]:
    """``LogSegment.largestTimestamp``: the last time-index entry, else the ``.log``'s mtime.
    ``scan``: the largest batch timestamp (the active segment, whose index lags its appends)."""
    if scan:
        best = kr.largest_batch_timestamp(_log_of(seg))
        if best >= 0:
            return best, "the largest batch timestamp"
    try:
        last = ks.last_time_entry(seg.timeindex, seg.base_offset)
        if last.timestamp >= 0:
            return last.timestamp, "the last .timeindex entry"
    except MqError:
        pass
    try:
        return int(_log_of(seg).stat().st_mtime * 1000), "the .log's mtime (no time-index entry)"
    except OSError:
        return 0, "unknown (the .log cannot be read)"


def _read_high_watermarks(path: Path) -> list[cpf.TopicPartitionOffset] | None:
    """The high watermarks bound what retention may delete: a checkpoint that exists but cannot be
    read stops the run (the broker takes the log dir offline on it), rather than letting every
    partition's log end offset stand in for a high watermark that may be far lower."""
    if not path.exists() and not path.is_symlink():
        return None
    why = (
        "the high watermarks in it bound what retention may delete, so nothing is cleaned until it is repaired or restored "
        "(the broker takes this log dir offline on it too)"
    )
    if path.is_symlink() or not path.is_file():
        raise StoreLayoutError(f"{why}", path=path, expected="a regular file", found="a symbolic link" if path.is_symlink() else "not a regular file")
    try:
        return list(cpf.decode_offset_checkpoint(read_small_file(path, 256 << 20)).entries)
    except MqError as exc:
        located = exc.at(path)
        raise type(located)(
            f"{located.message}; {why}" if located.message else why, path=located.path, position=located.position, expected=located.expected, found=located.found
        ) from None


def _read_offsets(path: Path | None) -> list[cpf.TopicPartitionOffset] | None:
    if path is None or not path.exists():
        return None
    try:
        return list(cpf.decode_offset_checkpoint(read_small_file(path, 256 << 20)).entries)
    except (MqError, UnicodeDecodeError, ValueError):
        return None


def plan_clean_kafka(path: str | Path, options: CleanOptions = CleanOptions(), *, now_ms: int | None = None) -> RecoverPlan:
    """The clean plan; each ``.log`` byte it needs read once: the committed offsets from the
    store model's reading of ``__consumer_offsets``, which also answers those segments' next
    offsets, and an active segment's next offset and largest timestamp from one walk
    (``kafka_reads.short_reads``)."""
    with kr.short_reads():
        return _plan_clean_kafka(path, options, now_ms=now_ms)


def _plan_clean_kafka(path: str | Path, options: CleanOptions, *, now_ms: int | None) -> RecoverPlan:
    if options.policy not in ("safe", "broker"):
        raise StoreLayoutError(f"unknown clean policy {options.policy!r}", expected="safe or broker", found=options.policy)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    store = ks.open_kafka(path)
    if store.kind == "segment":
        raise StoreLayoutError(
            "`mqtool clean` applies retention to whole partitions: give the partition directory or the log dir",
            path=path,
            expected="a Kafka log dir or partition directory",
            found="a segment file",
        )
    root = Path(store.log_dir if store.log_dir is not None else store.root).resolve()
    plan = RecoverPlan("kafka", str(root), f"clean ({options.policy} policy)")
    broker = options.policy == "broker"
    plan.facts.update(
        {
            "now_ms": now_ms,
            "retention_ms": options.retention_ms,
            "retention_bytes": options.retention_bytes,
            "active_segment": "deleted after rolling an empty segment (Kafka's rule)" if broker else "kept (--policy broker applies Kafka's rule)",
            "partitions": [],
        }
    )

    def rel(p: Path) -> str:
        return relative(root, p)

    log_dir = store.log_dir

    # --- unrecognised files: listed, never touched; leftovers of interrupted deletions removed ------
    ignored = [p for p in (*store.unexpected, *store.other_dirs) if not p.name.startswith(MQTOOL_TMP_PREFIX)]
    for p in store.unexpected:
        if p.name.startswith(MQTOOL_TMP_PREFIX) and not _is_link(p) and p.is_file():
            plan.add(Step("remove", rel(p), "a temporary file of an interrupted mqtool run", expect=observe(p), details={"kind": "leftover"}))

    lso_path = log_dir / cpf.LOG_START_OFFSET_CHECKPOINT if log_dir is not None else None
    hw_entries = _read_high_watermarks(log_dir / cpf.REPLICATION_OFFSET_CHECKPOINT) if log_dir is not None else None
    lso_entries = _read_offsets(lso_path)
    hws = {(e.topic, e.partition): e.offset for e in hw_entries or ()}
    plan.facts["high_watermarks"] = "replication-offset-checkpoint" if hw_entries is not None else "absent: the log end offsets stand for them"
    if log_dir is not None and hw_entries is None:
        plan.notes.append(f"no {cpf.REPLICATION_OFFSET_CHECKPOINT} in {log_dir}: each partition's log end offset stands for its high watermark")
    lsos = {(e.topic, e.partition): e.offset for e in lso_entries or ()}
    if lso_path is not None and lso_path.exists() and lso_entries is None:
        plan.notes.append(
            f"{cpf.LOG_START_OFFSET_CHECKPOINT} cannot be read: the log start offsets are taken as the first segments' base offsets, and the file is left alone"
        )

    # every group's committed offsets: kept by default, named when --allow-unconsumed deletes them
    committed = model_consumers.kafka_committed(store)
    commits: dict[PartitionKey, dict[str, int]] = committed.table
    plan.facts["consumer_offsets_found"] = committed.found
    if not committed.found and options.protect_unconsumed:
        plan.notes.append("no __consumer_offsets partition in the log dir: no committed offsets to keep unconsumed data for")
    for problem in committed.problems:
        plan.notes.append(f"__consumer_offsets: {problem}: commits after it are not known")

    budget = [options.max_delete if options.max_delete is not None else -1]
    new_lsos: dict[PartitionKey, tuple[int, int]] = {}  # key -> (new log start offset, new first base)
    for link in store.links:
        plan.notes.append(f"{link.name}: a symbolic link: not followed")
    for part in store.partitions:
        facts: dict[str, Any] = {"topic": part.topic, "partition": part.partition, "directory": part.name}
        plan.facts["partitions"].append(facts)
        if _is_link(part.path) or not _inside(root, part.path):
            plan.notes.append(f"{part.name}: a symbolic link (or outside {root}): not followed")
            facts["skipped"] = "symlink"
            continue
        if part.links or part.special:
            names = ", ".join(p.name for p in (*part.links, *part.special))
            plan.notes.append(f"{part.name}: symbolic links or special files ({names}) are not followed: nothing in this partition is deleted")
            facts["skipped"] = "symlink"
            continue
        for p in part.unexpected:
            if p.name.startswith(MQTOOL_TMP_PREFIX) and not _is_link(p) and p.is_file():
                plan.add(Step("remove", rel(p), "a temporary file of an interrupted mqtool run", expect=observe(p), details={"kind": "leftover"}))
            else:
                ignored.append(p)
        if part.suffix is not None:
            state = "deleted" if part.suffix == "delete" else "moved" if part.suffix == "future" else "left as a stray"
            plan.notes.append(f"{part.name}: a partition dir being {state} (-{part.suffix}): left to the broker")
            facts["skipped"] = part.suffix
            continue
        if part.topic == ks.CLUSTER_METADATA:
            facts["skipped"] = "the KRaft metadata log (the raft layer's own snapshot-based retention)"
            continue
        _plan_partition(plan, root, part, options, now_ms, hws, lsos, commits, budget, new_lsos, facts, broker, hw_entries is not None)

    if ignored:
        shown = ", ".join(rel(p) for p in ignored[:10]) + (" ..." if len(ignored) > 10 else "")
        plan.notes.append(f"{len(ignored)} unrecognised file(s) or dir(s) ignored: {shown}")
        plan.facts["ignored"] = [rel(p) for p in ignored]

    # --- log-start-offset-checkpoint as the broker writes it (last) -------------------------------------
    if lso_path is not None and (lso_entries is not None or not lso_path.exists()) and new_lsos:
        current = {(e.topic, e.partition): e.offset for e in lso_entries or ()}
        out: list[cpf.TopicPartitionOffset] = []
        changed = False
        for e in lso_entries or ():
            key = (e.topic, e.partition)
            if key in new_lsos:
                lso, first = new_lsos[key]
                if lso > first:
                    out.append(cpf.TopicPartitionOffset(e.topic, e.partition, lso))
                    changed |= lso != e.offset
                else:
                    changed = True  # the broker writes only log start offsets above the first segment
            else:
                out.append(e)
        for key, (lso, first) in sorted(new_lsos.items()):
            if key not in current and lso > first:
                out.append(cpf.TopicPartitionOffset(key[0], key[1], lso))
                changed = True
        if changed:
            plan.add(
                Step(
                    "write-checkpoint",
                    rel(lso_path),
                    "log start offsets after the deletions (the broker lists only those above their first segment's base offset)",
                    expect=observe(lso_path),
                    details={"kind": "checkpoint", "entries": [[e.topic, e.partition, e.offset] for e in out]},
                )
            )
    return plan


def _plan_partition(
    plan: RecoverPlan,
    root: Path,
    part: ks.KafkaPartition,
    options: CleanOptions,
    now_ms: int,
    hws: dict[PartitionKey, int],
    lsos: dict[PartitionKey, int],
    commits: dict[PartitionKey, dict[str, int]],
    budget: list[int],
    new_lsos: dict[PartitionKey, tuple[int, int]],
    facts: dict[str, Any],
    broker: bool,
    hw_known: bool = False,
) -> None:
    def rel(p: Path) -> str:
        return relative(root, p)

    key = part.key
    # leftovers of interrupted deletions: .deleted files, index files whose .log is gone
    for p in part.leftovers:
        if p.name.endswith(".deleted") and not p.name.endswith(".checkpoint.deleted") and not _is_link(p):
            plan.add(Step("remove", rel(p), "a file renamed for deletion (.deleted): the broker removes it", expect=observe(p), details={"kind": "leftover"}))
        elif p.name.endswith((".swap", ".cleaned")):
            plan.notes.append(f"{rel(p)}: left by an interrupted log-cleaner run; `mqtool recover` completes it (clean leaves it)")
    for seg in part.segments:
        if seg.log is None:
            for index in (seg.index, seg.timeindex, seg.txnindex):
                if index is not None and not _is_link(index):
                    orphan = f"{index.name} has no .log: the broker deletes an orphaned index file at load"
                    plan.add(Step("remove", rel(index), orphan, expect=observe(index), details={"kind": "leftover"}))
    segments = part.log_segments()
    if not segments:
        return
    compacted = part.topic in COMPACTED_INTERNAL
    last = segments[-1]
    leo = _next_offset(last)
    hw = hws.get(key) if key is not None else None
    lso = max(lsos.get(key, 0) if key is not None else 0, segments[0].base_offset)
    if hw is None:
        if hw_known:
            # Kafka (Partition.createLog): no checkpointed high watermark -> 0, raised to the log start offset
            hw = lso
            plan.notes.append(
                f"{part.name}: no entry in replication-offset-checkpoint: as the broker does, the log start offset {lso} stands for the high watermark, "
                "so only the log-start-offset rule can delete"
            )
        else:
            hw = leo
    facts.update({"log_start_offset": lso, "log_end_offset": leo, "high_watermark": hw, "segments": len(segments), "bytes": sum(s.log_size for s in segments)})
    if compacted:
        facts["cleanup_policy"] = "compact (internal topic): only the log start offset rule applies"
    committed = commits.get(key, {}) if key is not None else {}

    remaining = list(segments)
    deleted: list[tuple[ks.KafkaSegment, str, str]] = []  # (segment, rule, why)
    roll = [False]
    blocked: list[str] = []

    def prefix(rule: str, predicate: Rule) -> None:
        while remaining and not blocked:
            seg = remaining[0]
            nxt = remaining[1] if len(remaining) > 1 else None
            if nxt is None and seg.log_size == 0:
                return  # a final empty segment is never deleted
            upper = nxt.base_offset if nxt is not None else leo
            why = predicate(seg, nxt)
            if why is None or hw < upper:
                return
            if nxt is None and not broker:
                plan.notes.append(
                    f"{part.name}: the active segment {_log_of(seg).name} breaks the {rule} rule; "
                    "it is kept (--policy broker rolls a new segment and deletes it, as Kafka does)"
                )
                return
            if _is_link(_log_of(seg)) or any(p is not None and _is_link(p) for p in (seg.index, seg.timeindex, seg.txnindex)):
                plan.notes.append(f"{part.name}: {_log_of(seg).name} (or one of its indexes) is a symbolic link: not followed; retention stops there")
                blocked.append("symlink")
                return
            if committed:
                holding = sorted(g for g, off in committed.items() if off < upper)
                if holding and options.protect_unconsumed:
                    plan.notes.append(
                        f"{part.name}: {_log_of(seg).name} and later segments hold offsets not yet consumed by: {', '.join(holding[:10])} "
                        "(--allow-unconsumed deletes them)"
                    )
                    facts["protected_by"] = holding
                    blocked.append("unconsumed")
                    return
                if holding:
                    losing = facts.setdefault("unconsumed_deleted_for", [])
                    new = [g for g in holding if g not in losing]
                    if new:
                        losing.extend(new)
                        plan.notes.append(f"--allow-unconsumed: {part.name}: {_log_of(seg).name} holds offsets not yet consumed by: {', '.join(new[:10])}")
            if budget[0] == 0:
                plan.notes.append(f"at most {options.max_delete} segment(s) per run (--max-delete); run again for more")
                blocked.append("max-delete")
                return
            if budget[0] > 0:
                budget[0] -= 1
            if nxt is None:
                roll[0] = True
            deleted.append((seg, rule, why))
            remaining.pop(0)

    def lso_rule(seg: ks.KafkaSegment, nxt: ks.KafkaSegment | None) -> str | None:
        return f"the next segment starts at {nxt.base_offset}, at or below the log start offset {lso}" if nxt is not None and nxt.base_offset <= lso else None

    prefix("log start offset", lso_rule)
    if not compacted and options.retention_bytes >= 0:
        total = sum(s.log_size for s in remaining)
        if total >= options.retention_bytes:
            diff = [total - options.retention_bytes]

            def size_rule(seg: ks.KafkaSegment, nxt: ks.KafkaSegment | None) -> str | None:
                if diff[0] - seg.log_size >= 0:
                    diff[0] -= seg.log_size
                    return f"the partition holds {total} bytes, {total - options.retention_bytes} over retention.bytes {options.retention_bytes}"
                return None

            prefix("retention.bytes", size_rule)
    if not compacted and options.retention_ms >= 0:

        def time_rule(seg: ks.KafkaSegment, nxt: ks.KafkaSegment | None) -> str | None:
            ts, source = _largest_timestamp(seg, scan=nxt is None)
            age = now_ms - ts
            if age > options.retention_ms:
                return f"largest timestamp {ts} ({source}) is {age / 3_600_000:.1f} h old, over retention.ms {options.retention_ms}"
            return None

        prefix("retention.ms", time_rule)

    if not deleted:
        if key is not None:
            new_lsos[key] = (lso, segments[0].base_offset)
        return
    first = remaining[0].base_offset if remaining else leo
    new_lso = max(lso, first)
    if key is not None:
        new_lsos[key] = (new_lso, first)
    facts["deleted_segments"] = len(deleted)
    facts["new_log_start_offset"] = new_lso

    # the leader-epoch cache follows the log start offset (truncateFromStart), before any deletion
    _plan_epochs(plan, root, part, new_lso)
    if roll[0]:
        stem = segnames.kafka_offset_prefix(leo)
        plan.add(
            Step(
                "create-segment",
                rel(part.path / f"{stem}.log"),
                f"{part.name}: Kafka rolls a new empty segment at the log end offset {leo} before deleting the active one",
                expect={},
                details={"kind": "roll", "files": [rel(part.path / f"{stem}.{k}") for k in ("index", "timeindex", "log")]},
            )
        )
    snapshots = {s.offset: s for s in part.snapshots}
    for seg, rule, why in deleted:
        # the snapshot first: once the segment is gone nothing would tie the snapshot to it (a
        # rerun after an interruption must plan the same deletions)
        snap = snapshots.get(seg.base_offset)
        if snap is not None and not _is_link(snap.path):
            _rename_then_remove(plan, rel, snap.path, f"{part.name}: the producer snapshot of deleted segment {_log_of(seg).name}", kind="snapshot", size=snap.size)
        files = [p for p in (seg.log, seg.index, seg.timeindex, seg.txnindex) if p is not None]
        for p in files:
            _rename_then_remove(plan, rel, p, f"{part.name}: {why} ({rule})", kind="log" if p == seg.log else "index", size=p.stat().st_size)


def _rename_then_remove(plan: RecoverPlan, rel: Callable[[Path], str], path: Path, why: str, *, kind: str, size: int) -> None:
    """Kafka's deletion: rename to ``<name>.deleted``, then remove (the remove's file is the rename's
    target, which does not exist yet when planning: its precondition is the rename's)."""
    target = path.with_name(path.name + ".deleted")
    plan.add(Step("rename", rel(path), why + f"; renamed {target.name}", expect=observe(path), details={"to": rel(target), "kind": "rename", "size": size}))
    plan.add(Step("remove", rel(target), why, expect={}, details={"kind": kind, "size": size}))
    plan.bytes_cut += size


def _plan_epochs(plan: RecoverPlan, root: Path, part: ks.KafkaPartition, new_lso: int) -> None:
    path = part.leader_epoch_checkpoint
    if path is None or _is_link(path):
        return
    try:
        entries = list(cpf.decode_leader_epoch_checkpoint(read_small_file(path, 64 << 20)).entries)
    except (MqError, UnicodeDecodeError, ValueError):
        return
    removed = [e for e in entries if e.start_offset <= new_lso]
    if not removed:
        return
    new = [cpf.EpochEntry(removed[-1].epoch, new_lso)] + [e for e in entries if e.start_offset > new_lso]
    if new == entries:
        return
    plan.add(
        Step(
            "write-leader-epochs",
            relative(root, path),
            f"{part.name}: leader epochs before the new log start offset {new_lso} dropped (truncateFromStart), before the segments go",
            expect=observe(path),
            details={"kind": "checkpoint", "entries": [[e.epoch, e.start_offset] for e in new]},
        )
    )


# --- apply: the actions the generic engine does not know ----------------------------------------------


def apply_custom(step: Step, ctx: ApplyContext) -> None:
    path = resolve(ctx.root, step.path)
    if step.action == "write-checkpoint":
        offsets = tuple(cpf.TopicPartitionOffset(t, p, o) for t, p, o in step.details["entries"])
        _replace(ctx, path, cpf.encode_offset_checkpoint(cpf.OffsetCheckpoint(offsets)))
    elif step.action == "write-leader-epochs":
        epochs = tuple(cpf.EpochEntry(e, s) for e, s in step.details["entries"])
        _replace(ctx, path, cpf.encode_leader_epoch_checkpoint(cpf.LeaderEpochCheckpoint(epochs)))
    elif step.action == "create-segment":
        # indexes first, the .log last: the new segment exists for a later plan only once complete
        for name in step.details["files"]:
            target = resolve(ctx.root, name)
            if not target.exists():
                ctx.quarantine.record_created(target)
                ctx.mutator.create_file(target, b"")
    else:
        raise StoreLayoutError(f"unknown Kafka clean action {step.action!r}", path=path)


def _replace(ctx: ApplyContext, path: Path, data: bytes) -> None:
    if path.exists():
        ctx.quarantine.keep_file(path)
    else:
        ctx.quarantine.record_created(path)
    ctx.mutator.replace_file(path, data)


__all__ = ["DEFAULT_RETENTION_BYTES", "DEFAULT_RETENTION_MS", "CleanOptions", "apply_custom", "plan_clean_kafka"]
