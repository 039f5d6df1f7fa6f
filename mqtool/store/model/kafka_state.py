"""The Kafka store model's judgement of what surrounds the segments: phases 1, 3 and 4 of the
reading (``store.model.kafka.read_store``), which calls these with its ``Sink``.

* the files: partition dir names, unknown files, leftovers of interrupted operations
  (``.deleted``/``.cleaned``/``.swap``/``.tmp``, as ``LogLoader`` deals with them), links and
  special files, logs without indexes, index files without a ``.log``;
* a partition's state against its segments: continuity (a gap is information, an overlap an
  error), producer snapshots (``ProducerStateManager``), a log that ends below what its own state
  vouches for, ``leader-epoch-checkpoint`` (``LeaderEpochFileCache``), ``partition.metadata``;
* the log dir: the offset checkpoints (recovery point, high watermark, log start, cleaner offset:
  ``LogManager``, ``UnifiedLog``) against each log end offset, ``meta.properties``,
  ``.kafka_cleanshutdown``, ``.lock``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mqtool.errors import CorruptDataError, MqError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import (
    KAFKA_CHECKPOINT_FORMAT,
    KAFKA_CHECKPOINT_MISSING,
    KAFKA_CHECKPOINT_STALE,
    KAFKA_CLEANER_OFFSET,
    KAFKA_DIR_NAME,
    KAFKA_DIR_STATE,
    KAFKA_FILE_LEFTOVER,
    KAFKA_FILE_LINK,
    KAFKA_FILE_NAME,
    KAFKA_FILE_NO_INDEX,
    KAFKA_FILE_ORPHAN_INDEX,
    KAFKA_FILE_UNREADABLE,
    KAFKA_HIGH_WATERMARK,
    KAFKA_LEADER_EPOCH,
    KAFKA_LEADER_EPOCH_LOG,
    KAFKA_LOCK_HELD,
    KAFKA_LOG_MISSING,
    KAFKA_LOG_START_OFFSET,
    KAFKA_OFFSET_OVERLAP,
    KAFKA_RECOVERY_POINT,
    KAFKA_SNAPSHOT,
    KAFKA_SNAPSHOT_OFFSET,
    KAFKA_UNCLEAN_SHUTDOWN,
)
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import snapshot as ksnap
from mqtool.store import kafka as ks
from mqtool.store.files import read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import kafka_broker
from mqtool.store.model.kafka_segment import (
    SegmentResult,
    Sink,
)

T = TypeVar("T")
#: Checkpoint file name -> (its path, its ``(topic, partition) -> offset`` table when readable).
OffsetCheckpoints = dict[str, tuple[Path | None, dict[tuple[str, int], int] | None]]


# --- phase 1: files ---------------------------------------------------------------------------------

_LEFTOVER_WHY = {
    "deleted": "a segment file renamed for deletion; the broker deletes it at the next load",
    "cleaned": "an unfinished log-cleaner output; the broker deletes it at the next load",
    "swap": "a cleaner/split output ready to replace its originals; the broker completes the swap at the next load",
    "tmp": "a state file written but not renamed into place (a crash while checkpointing)",
    "part": "an unfinished KRaft snapshot",
}


def _leftover_kind(name: str) -> str:
    for kind in ("deleted", "cleaned", "swap", "tmp", "part"):
        if name.endswith("." + kind):
            return kind
    return "tmp"


def _check_files(store: ks.KafkaStore, out: Sink) -> dict[str, list[tuple[int, Finding]]]:
    """The files family; returns the ``KAFKA-FILE-ORPHAN-INDEX`` findings per partition dir,
    not yet reported: a partition that lost its data (``KAFKA-LOG-MISSING``) is their cause."""
    orphans: dict[str, list[tuple[int, Finding]]] = {}
    for path in store.other_dirs:
        out.add(
            Finding(
                KAFKA_DIR_NAME,
                str(path),
                None,
                f"expected a partition directory topic-partition (or topic-partition.uniqueId-delete|-future|-stray), found {path.name!r}: "
                "the broker fails to load this log dir",
            )
        )
    for path in store.unexpected:
        out.add(Finding(KAFKA_FILE_NAME, str(path), None, f"unexpected file in a log dir: {path.name!r}"))
    _report_links(store.links, out)
    for path in store.leftovers:
        out.add(Finding(KAFKA_FILE_LEFTOVER, str(path), None, f"{path.name}: {_LEFTOVER_WHY[_leftover_kind(path.name)]}"))
    lone = store.kind == "segment"
    live: dict[tuple[str, int], ks.KafkaPartition] = {}
    for part in store.partitions:
        if part.suffix is None and part.key is not None and not lone:
            first = live.setdefault(part.key, part)
            if first is not part:  # orders-1 and orders-01: Kafka parses the partition as an int
                out.add(
                    Finding(
                        KAFKA_DIR_NAME,
                        str(part.path),
                        None,
                        f"expected one directory per partition, found {part.name!r} beside {first.name!r} (both partition {part.key[1]} of {part.key[0]!r}): "
                        "the broker fails to load this log dir (duplicate log directories)",
                    )
                )
    for part in store.partitions:
        if lone:
            continue
        mine = orphans.setdefault(str(part.path), [])
        if part.suffix is not None:
            what = {
                "delete": "a partition marked for deletion (deleted asynchronously by the broker)",
                "future": "a future replica being moved between log dirs",
                "stray": "a KRaft stray replica (a partition this broker no longer hosts)",
            }[part.suffix]
            out.add(Finding(KAFKA_DIR_STATE, str(part.path), None, f"{part.name}: {what}"))
        for path in part.unexpected:
            what = f"unexpected {'directory' if path.is_dir() else 'file'} in a partition dir: {path.name!r}"
            if path.name.endswith(ks.KAFKA_07_SUFFIX):
                what += " (a Kafka 0.7 segment: validate it with --layout jafka)"
            out.add(Finding(KAFKA_FILE_NAME, str(path), None, what))
        for path in part.leftovers:
            out.add(Finding(KAFKA_FILE_LEFTOVER, str(path), None, f"{path.name}: {_LEFTOVER_WHY[_leftover_kind(path.name)]}"))
        _report_links(part.links, out)
        for path in part.special:
            out.add(Finding(KAFKA_FILE_UNREADABLE, str(path), None, "expected a regular file, found a FIFO, device or socket: not opened"))
        for seg in part.segments:
            if seg.log is None:
                for p in (seg.index, seg.timeindex, seg.txnindex):
                    if p is not None:
                        mine.append((seg.base_offset, Finding(KAFKA_FILE_ORPHAN_INDEX, str(p), None, f"{p.name} has no {seg.name}.log: the broker deletes it at load")))
            elif seg.log_size > 0 and (seg.index is None or seg.timeindex is None):
                missing = " and ".join(n for n, p in (("index", seg.index), ("timeindex", seg.timeindex)) if p is None)
                out.add(
                    Finding(
                        KAFKA_FILE_NO_INDEX,
                        str(seg.log),
                        None,
                        f"{seg.name}.log has no .{missing}: " + kafka_broker.no_index_consequence(seg.index is None),
                    )
                )
    return orphans


def _report_links(links: list[Path], out: Sink) -> None:
    for path in links:
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        out.add(Finding(KAFKA_FILE_LINK, str(path), None, f"expected a regular file or directory, found a symbolic link to {target!r}: not followed"))


# --- phase 3/4: partitions and the log dir ------------------------------------------------------


@dataclass
class _PartitionState:
    part: ks.KafkaPartition
    results: list[SegmentResult] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0
    has_data: bool = False
    #: ``KAFKA-LOG-MISSING``, when the partition's own state files vouch for offsets its log lacks.
    lost: Finding | None = None


def _read_checkpoint(path: Path | None, out: Sink, decode: Callable[[bytes], T]) -> T | None:
    if path is None:
        return None
    try:
        return decode(read_small_file(path, 256 << 20))
    except (MqError, UnicodeDecodeError) as exc:
        position = exc.position if isinstance(exc, MqError) else exc.start
        message = exc.reason if isinstance(exc, MqError) else f"not UTF-8 text: {exc.reason}"
        out.add(Finding(KAFKA_CHECKPOINT_FORMAT, str(path), position, f"{path.name}: {message}"))
        return None


def _partition_offsets(state: _PartitionState) -> None:
    part = state.part
    segments = [r for r in state.results]
    state.log_start_offset = part.log_segments()[0].base_offset if part.log_segments() else 0
    if not segments:
        state.log_end_offset = state.log_start_offset
        return
    last = segments[-1]
    data_ends = [r.last_offset for r in segments if r.last_offset is not None]
    state.has_data = bool(data_ends)
    if last.last_offset is not None:
        state.log_end_offset = last.last_offset + 1
    else:
        state.log_end_offset = max(last.base_offset, (data_ends[-1] + 1) if data_ends else 0)


def _check_continuity(state: _PartitionState, out: Sink, policies: kafka_broker.LazyPolicies) -> None:
    prev: SegmentResult | None = None
    for r in state.results:
        if prev is not None and prev.last_offset is not None:
            if r.base_offset <= prev.last_offset:
                out.add(
                    Finding(
                        KAFKA_OFFSET_OVERLAP,
                        r.path,
                        None,
                        f"expected a base offset > {prev.last_offset} (the last offset of {Path(prev.path).name}), found {r.base_offset}: "
                        f"the two segments overlap by {prev.last_offset - r.base_offset + 1} offset(s)",
                    ),
                    r.path,
                )
            elif r.base_offset > prev.last_offset + 1:  # compaction's gap, or a lost segment: by the topic's cleanup.policy
                out.add(kafka_broker.segment_gap_finding(state.part.topic, prev.path, prev.last_offset, r.path, r.base_offset, policies, prev.end_kind), r.path)
        if r.last_offset is not None:
            prev = r


def _check_leader_epochs(state: _PartitionState, out: Sink) -> None:
    part = state.part
    path = part.leader_epoch_checkpoint
    cp = _read_checkpoint(path, out, cpf.decode_leader_epoch_checkpoint)
    if cp is None:
        return
    entries = list(cp.entries)
    for a, b in zip(entries, entries[1:]):
        if b.epoch <= a.epoch or b.start_offset <= a.start_offset:
            out.add(
                Finding(
                    KAFKA_LEADER_EPOCH,
                    str(path),
                    _line_position(path, b.epoch, b.start_offset),
                    f"expected entries with increasing epochs and start offsets, found ({a.epoch} {a.start_offset}) then "
                    f"({b.epoch} {b.start_offset}); the broker drops the conflicting entries at load",
                )
            )
    beyond = [e for e in entries if e.start_offset > state.log_end_offset]
    if beyond:
        out.add(
            Finding(
                KAFKA_LEADER_EPOCH,
                str(path),
                _line_position(path, beyond[0].epoch, beyond[0].start_offset),
                f"expected start offsets <= the log end offset {state.log_end_offset}, found epoch {beyond[0].epoch} starting at "
                f"{beyond[0].start_offset}" + (f" and {len(beyond) - 1} more" if len(beyond) > 1 else "") + "; the broker truncates the cache at load",
            )
        )
    runs: list[list[int]] = []
    for r in state.results:
        for epoch, first, last in r.epochs:
            if runs and runs[-1][0] == epoch:
                runs[-1][2] = last
            else:
                runs.append([epoch, first, last])
    if not runs or not entries:
        return
    ordered = sorted(entries, key=lambda e: e.start_offset)

    def epoch_for(offset: int) -> int | None:
        found = None
        for e in ordered:
            if e.start_offset <= offset:
                found = e.epoch
            else:
                break
        return found

    # Offsets below the first entry are below the log start offset the cache was truncated to
    # (``truncateFromStart``), which the log-start checkpoint may not show (a -delete dir).
    floor = max(state.log_start_offset, ordered[0].start_offset)
    bad = []
    for epoch, first, last in runs:
        if last < floor:
            continue
        lo = max(first, floor)
        got = {epoch_for(lo), epoch_for(last)}
        if got != {epoch}:
            bad.append((epoch, first, last, sorted(g for g in got if g is not None) or None))
    if bad:
        epoch, first, last, named = bad[0]
        out.add(
            Finding(
                KAFKA_LEADER_EPOCH_LOG,
                str(path),
                None,
                f"batches at offsets {first}..{last} carry leader epoch {epoch}, the checkpoint gives "
                f"{'no epoch' if named is None else 'epoch ' + '/'.join(map(str, named))} for them" + (f" ({len(bad) - 1} more run(s) disagree)" if len(bad) > 1 else ""),
            )
        )


def _read_snapshots(state: _PartitionState, out: Sink) -> list[ks.ProducerSnapshotFile]:
    """The partition's producer snapshots that decode; the others are ``KAFKA-SNAPSHOT``
    (``ProducerStateManager`` deletes a snapshot it cannot read and rebuilds from the log)."""
    readable = []
    for snap in state.part.snapshots:
        try:
            ksnap.decode_snapshot(read_small_file(snap.path, 256 << 20))
        except MqError as exc:
            out.add(
                Finding(
                    KAFKA_SNAPSHOT,
                    str(snap.path),
                    exc.position,
                    f"{exc.reason}: the broker deletes the snapshot and rebuilds producer state from the log",
                )
            )
            continue
        readable.append(snap)
    return readable


def _check_snapshot_offsets(state: _PartitionState, snapshots: list[ks.ProducerSnapshotFile], out: Sink) -> None:
    cause = state.lost.ref if state.lost is not None else None
    for snap in snapshots:
        if state.results and snap.offset > state.log_end_offset:
            out.add(
                Finding(
                    KAFKA_SNAPSHOT_OFFSET,
                    str(snap.path),
                    None,
                    f"expected a snapshot offset <= the log end offset {state.log_end_offset}, found {snap.offset} (deleted at load)",
                    cause=cause,
                )
            )


def _first_gone(state: _PartitionState) -> int:
    """Orphan index files of segments above the last ``.log`` (all of them when none is left)
    are what remains of the lost segments."""
    segments = state.part.log_segments()
    return segments[-1].base_offset + 1 if segments else -1


def _lost_data(
    state: _PartitionState,
    checkpoints: OffsetCheckpoints,
    snapshots: list[ks.ProducerSnapshotFile],
    orphans: list[tuple[int, Finding]],
) -> Finding | None:
    """``KAFKA-LOG-MISSING``: a log that ends below an offset the partition's own state vouches it
    reached.  The recovery point (``UnifiedLog.recoveryPoint``, from
    ``recovery-point-offset-checkpoint``: flushed up to there), the high watermark
    (``UnifiedLog.highWatermark``, from ``replication-offset-checkpoint``: committed up to there)
    and the newest readable producer snapshot (``ProducerStateManager.takeSnapshot`` names it
    after the log end offset it was taken at) are never above the log end offset of a replica
    that kept its data.  A partition without any ``.log`` has no log end offset beyond its log
    start offset (``LogLoader`` recreates an empty segment there), so every offset vouched for
    above that is gone, whatever the broker then does (truncate, refetch from the leader)."""
    part = state.part
    vouched: list[tuple[str, int]] = []
    if part.key is not None:
        for name, what in ((cpf.RECOVERY_POINT_OFFSET_CHECKPOINT, "recovery point"), (cpf.REPLICATION_OFFSET_CHECKPOINT, "high watermark")):
            _path, table = checkpoints.get(name, (None, None))
            if table and part.key in table:
                vouched.append((f"{name} ({what})", table[part.key]))
    if snapshots:
        newest = max(snapshots, key=lambda snap: snap.offset)
        vouched.append((f"producer snapshot {newest.path.name}", newest.offset))
    low = state.log_end_offset if state.has_data else max(state.log_end_offset, state.log_start_offset)
    behind = [(what, offset) for what, offset in vouched if offset > low]
    if not behind:
        return None
    top = max(offset for _, offset in behind)
    segments = part.log_segments()
    gone = sorted({base for base, _ in orphans if base >= _first_gone(state)})
    left = [Path(f.path).name for base, f in orphans if base in gone]
    if not segments:
        on_disk = "no segment at all (not one .log file"
    elif not state.has_data:
        on_disk = f"log end offset {state.log_end_offset} ({len(segments)} segment(s) holding no batch"
    else:
        first = next(r.first_offset for r in state.results if r.first_offset is not None)
        on_disk = f"log end offset {state.log_end_offset} (offsets {first}..{state.log_end_offset - 1} in {len(segments)} segment(s)"
    if gone:
        on_disk += f"; the .log of segment {', '.join(segnames.kafka_offset_prefix(b) for b in gone)} is gone, {', '.join(left)} remain"
    on_disk += ")"
    says = "; ".join(f"{what} says {offset}" for what, offset in behind)
    return Finding(
        KAFKA_LOG_MISSING,
        str(part.path),
        None,
        f"{part.name}: expected a log end offset >= {top} ({says}), found {on_disk}: offsets {low}..{top - 1} it held are lost",
        details={"log_end_offset": low, "vouched": dict(behind)},
    )


def _check_partition_files(part: ks.KafkaPartition, out: Sink) -> None:
    _read_checkpoint(part.partition_metadata, out, cpf.decode_partition_metadata)
    if part.quorum_state is not None:
        _read_checkpoint(part.quorum_state, out, _decode_json)


def _decode_json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptDataError(position=exc.start, expected="UTF-8 JSON", found=f"byte 0x{raw[exc.start]:02X}") from None
    except ValueError as exc:
        raise CorruptDataError(position=getattr(exc, "pos", None), expected="JSON", found=str(exc).split(":")[0]) from None


def _line_position(path: Path | None, *fields: object) -> int | None:
    """Byte position of the checkpoint line whose first tokens are ``fields`` (None if absent)."""
    if path is None:
        return None
    try:
        raw = read_small_file(path, 256 << 20)
    except MqError:
        return None
    pattern = rb"(?m)^" + rb"[ \t]+".join(re.escape(str(f).encode()) for f in fields) + rb"(?:[ \t]|$)"
    found = re.search(pattern, raw)
    return found.start() if found else None


def _read_offset_checkpoints(store: ks.KafkaStore, out: Sink) -> OffsetCheckpoints:
    files: OffsetCheckpoints = {}
    for name in cpf.OFFSET_CHECKPOINT_FILES:
        path = store.log_dir_file(name)
        cp = _read_checkpoint(path, out, cpf.decode_offset_checkpoint)
        files[name] = (path, cp.as_dict() if cp is not None else None)
    return files


def _check_log_dir_checkpoints(store: ks.KafkaStore, states: list[_PartitionState], files: OffsetCheckpoints, out: Sink, live: bool = False) -> None:
    """``live``: a running broker appended after the logs were read, so a checkpoint ahead of the
    log end offset seen is expected (info), not missing data."""
    if store.log_dir is None:
        return
    known = {s.part.key for s in states if s.part.key is not None}
    for state in states:
        key = state.part.key
        if key is None or state.part.suffix is not None or not state.results:
            continue
        leo = state.log_end_offset
        metadata_log = key[0] == ks.CLUSTER_METADATA
        for name, code, why in (
            (cpf.RECOVERY_POINT_OFFSET_CHECKPOINT, KAFKA_RECOVERY_POINT, "data flushed up to it is missing"),
            (cpf.REPLICATION_OFFSET_CHECKPOINT, KAFKA_HIGH_WATERMARK, "committed data is missing on this replica"),
        ):
            path, table = files[name]
            if table is None:
                continue
            value = table.get(key)
            if value is None:
                if state.has_data and not metadata_log:
                    out.add(
                        Finding(
                            KAFKA_CHECKPOINT_MISSING,
                            str(path),
                            None,
                            f"{state.part.name} has data but no entry in {name}"
                            + (
                                ": after an unclean shutdown the broker recovers it from offset 0"
                                if name.startswith("recovery")
                                else ": its high watermark restarts at 0"
                            ),
                        )
                    )
            elif value > leo:
                out.add(
                    Finding(
                        code,
                        str(path),
                        _line_position(path, *key),
                        f"{state.part.name}: expected at most the log end offset {leo}, found {value}: "
                        + ("the log grew after it was read (the broker is running)" if live else why),
                        severity=Severity.info if live else None,
                        cause=state.lost.ref if state.lost is not None else None,
                    )
                )
        path, table = files[cpf.LOG_START_OFFSET_CHECKPOINT]
        if table is not None and key in table and table[key] > leo:
            out.add(
                Finding(
                    KAFKA_LOG_START_OFFSET,
                    str(path),
                    _line_position(path, *key),
                    f"{state.part.name}: expected a log start offset <= the log end offset {leo}, found {table[key]}: "
                    "the broker deletes every segment at load and restarts the log there",
                )
            )
        start = state.log_start_offset
        path, table = files[cpf.CLEANER_OFFSET_CHECKPOINT]
        if table is not None and key in table and not start <= table[key] <= leo:
            out.add(
                Finding(
                    KAFKA_CLEANER_OFFSET,
                    str(path),
                    _line_position(path, *key),
                    f"{state.part.name}: expected a first dirty offset in [{start}, {leo}], found {table[key]} (the cleaner resets it)",
                )
            )
    if store.kind != "log-dir":
        return
    for _name, (path, table) in files.items():
        if not table:
            continue
        stale = sorted(k for k in table if k not in known)
        if stale:
            shown = ", ".join(f"{t}-{p}" for t, p in stale[:5]) + (" ..." if len(stale) > 5 else "")
            out.add(
                Finding(
                    KAFKA_CHECKPOINT_STALE,
                    str(path),
                    _line_position(path, *stale[0]),
                    f"{len(stale)} entr{'y' if len(stale) == 1 else 'ies'} for partitions not in the log dir: {shown}",
                )
            )


def _check_log_dir_state(store: ks.KafkaStore, states: list[_PartitionState], out: Sink) -> None:
    if store.log_dir is None:
        return
    meta = store.log_dir_file(cpf.META_PROPERTIES)
    _read_checkpoint(meta, out, cpf.decode_meta_properties)
    clean = store.log_dir_file(cpf.CLEAN_SHUTDOWN)
    broker_files = meta is not None or any(store.log_dir_file(n) for n in cpf.OFFSET_CHECKPOINT_FILES)
    lock = store.log_dir / ks.LOCK_FILE
    pid = probe_record_lock(lock)
    if clean is not None:
        _read_checkpoint(clean, out, cpf.decode_clean_shutdown)
    elif broker_files and any(s.has_data for s in states) and pid is None:  # (a running broker: KAFKA-LOCK-HELD)
        out.add(
            Finding(
                KAFKA_UNCLEAN_SHUTDOWN,
                str(store.log_dir / cpf.CLEAN_SHUTDOWN),
                None,
                "no .kafka_cleanshutdown: the broker is running or did not shut down cleanly; at start it recovers every segment after each partition's recovery point",
            )
        )
    if pid is not None:
        out.add(Finding(KAFKA_LOCK_HELD, str(lock), None, f"the log dir lock is held (pid {pid or 'unknown'}): a broker is running; files may change while read"))
