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

A consumer of the entries (``read_store_entries``) may stop the reading where it has what it needs
(``EntryReading.stop``: ``dump --limit``) or read some partitions only (``dump --topic``), and
have each segment's entries folded into its own count by the same walk (``fold``: a
``SegmentFold``, stats').  Inside ``shared_reading`` validate's reading also folds each segment
into ``LogSegment.recover`` and into the block's ``fold``, and keeps it, so that recover's plan,
stats, lag and clean's plan after it read no segment again (``report``).
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Callable, Collection, Generator, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from mqtool.errors import CorruptDataError, MqError
from mqtool.findings import FAMILIES, Finding, Severity
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
    KAFKA_LOG_IN_PROGRESS,
    KAFKA_LOG_MISSING,
    KAFKA_LOG_START_OFFSET,
    KAFKA_LOG_TORN_TAIL,
    KAFKA_OFFSET_OVERLAP,
    KAFKA_RECOVERY_POINT,
    KAFKA_SNAPSHOT,
    KAFKA_SNAPSHOT_OFFSET,
    KAFKA_UNCLEAN_SHUTDOWN,
)
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import record_scan
from mqtool.formats.kafka import snapshot as ksnap
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, piece_size, read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import kafka_broker
from mqtool.store.model.kafka_commits import CommitsFold, is_commits_partition
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
    EntryDecode as EntryDecode,
)
from mqtool.store.model.kafka_segment import (
    FirstWalk as FirstWalk,
)
from mqtool.store.model.kafka_segment import (
    Folds as Folds,
)
from mqtool.store.model.kafka_segment import (
    IndexFileResult as IndexFileResult,
)
from mqtool.store.model.kafka_segment import (
    Placed as Placed,
)
from mqtool.store.model.kafka_segment import (
    ScannedEntry as ScannedEntry,
)
from mqtool.store.model.kafka_segment import (
    SegmentFold as SegmentFold,
)
from mqtool.store.model.kafka_segment import (
    SegmentFolder as SegmentFolder,
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
from mqtool.store.model.kafka_segment import (
    joined as joined,
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


# --- one reading for several commands (report) ------------------------------------------------------------

#: A segment as read: its task (without what only says how to read it) and the identity and state
#: (device, inode, size, modification time) of its ``.log`` and index files when it was read.
_Key = tuple[SegmentTask, tuple[tuple[int, int, int, int] | None, ...]]

#: The index findings, which a reading that does not read the indexes (``SegmentTask.indexes``
#: False) does not state.
_INDEX_FAMILY = "index"


@dataclass
class _Shared:
    """The segment readings kept inside ``shared_reading``, and the fold its ``read_store`` runs."""

    fold: SegmentFold | None
    #: each segment read with a recovery fold: the fold its task ran, its result
    kept: dict[_Key, tuple[SegmentFold | Folds | None, SegmentResult]] = field(default_factory=dict)
    #: ``.log`` path -> the key of its last kept reading
    logs: dict[str, _Key] = field(default_factory=dict)

    def keep(self, task: Task, res: SegmentResult, seconds: float | None) -> None:
        """Keep a segment's reading made here (with its recovery fold) for the next reader."""
        if isinstance(task, SegmentTask) and task.recovery_interval is not None and res.recovery is not None and (key := _key(task)) is not None:
            kept = copy.deepcopy(res)
            kept.read_seconds = seconds
            self.kept[key] = (task.fold, kept)
            self.logs[task.log] = key

    def result(self, task: SegmentTask, *, recovery: bool) -> SegmentResult | None:
        """The kept reading of ``task``'s segment -- the same task, or the same with the indexes
        read where ``task`` does not read them (their findings left out); its files unchanged
        since; read with ``task``'s fold when it has one -- as a copy (``recovery``: with the
        recovery fold's scan); None when there is none."""
        key = _key(task) if not task.kraft_snapshot else None
        if key is None:
            return None
        got = self.kept.get(key)
        narrow = False
        if got is None and not task.indexes:
            got, narrow = self.kept.get((replace(key[0], indexes=True), key[1])), True
        if got is None:
            return None
        fold, res = got
        made: object | None = None
        if task.fold is not None:
            if res.fold_result is None:
                return None
            if fold == task.fold:
                made = res.fold_result
            elif isinstance(fold, Folds):  # read with several folds, this one's among them
                ok, made = fold.part(task.fold, res.fold_result)
                if not ok:
                    return None
            else:
                return None
        out = replace(
            res,
            findings=list(res.findings),
            indexes=copy.deepcopy(res.indexes),
            epochs=copy.deepcopy(res.epochs),
            magics=set(res.magics),
            codecs=set(res.codecs),
            recovery=copy.deepcopy(res.recovery) if recovery else None,
            fold_result=copy.deepcopy(made) if task.fold is not None else None,
        )
        if narrow:
            own = {p for p in (task.index, task.timeindex, task.txnindex) if p is not None}
            out.findings = [f for f in out.findings if f.family != _INDEX_FAMILY and not (f.code == KAFKA_FILE_UNREADABLE and f.path in own)]
            out.indexes = []
        return out

    def largest_timestamp(self, log: str) -> int | None:
        """``SegmentResult.largest_timestamp`` of the kept reading of ``log``, when the file is
        unchanged since."""
        res = self.of_log(log)
        return res.largest_timestamp if res is not None else None

    def of_log(self, log: str) -> SegmentResult | None:
        """The kept reading of ``log`` (not a copy), when the file is unchanged since."""
        key = self.logs.get(log)
        if key is None or _stat(log) != key[1][0]:
            return None
        return self.kept[key][1]


#: The segment readings kept inside ``shared_reading`` (None: outside it, nothing is kept).
_SHARED: ContextVar[_Shared | None] = ContextVar("mqtool_kafka_shared_reading", default=None)


@contextmanager
def shared_reading(fold: SegmentFold | None = None) -> Iterator[None]:
    """Inside the block, ``read_store`` (validate's reading, in-process or from its pool) also folds
    each segment into ``LogSegment.recover`` (``SegmentResult.recovery``, with the broker's default
    ``index.interval.bytes``) and into ``fold`` (``SegmentResult.fold_result``: stats' counts, so
    the worker that reads a segment counts it too), and keeps each segment's result; a reading
    that takes results is handed the kept one -- the same task, its files unchanged since --
    instead of reading the segment again: recover's plan (``read_store_entries(kept=True)``), a
    consumer of ``fold`` (``read_store_entries(kept=True, fold=fold)``: stats), a ``read_store``
    (lag), ``kafka_reads.largest_batch_timestamp`` (clean's plan).  A command that runs several
    verbs over one store (``report``) reads each segment once.  A reader of the entries themselves
    (dump) still reads them.  The kept results are findings, counts, the recovery's index points
    (one per 4 KiB of log) and what ``fold`` made of each segment."""
    token = _SHARED.set(_Shared(fold))
    try:
        yield
    finally:
        _SHARED.reset(token)


def kept_next_offset(log: str) -> int | None:
    """Inside ``shared_reading``: ``LogSegment.readNextOffset`` of ``log`` walking from position 0
    (``SegmentResult.next_offset``) from a kept reading of the file, unchanged since; else None."""
    shared = _SHARED.get()
    res = shared.of_log(log) if shared is not None else None
    return res.next_offset if res is not None else None


def kept_tail(log: str) -> list[tuple[int, int, bool]] | None:
    """Inside ``shared_reading``: ``SegmentResult.tail`` of a kept reading of ``log`` (unchanged
    since); else None."""
    shared = _SHARED.get()
    res = shared.of_log(log) if shared is not None else None
    return res.tail if res is not None else None


def kept_heads(log: str) -> tuple[list[int], int] | None:
    """Inside ``shared_reading``: ``SegmentResult.heads`` of a kept reading of ``log`` (unchanged
    since): the positions of the file's first entries, one after the other from 0, and where the
    last of them ends; else None."""
    shared = _SHARED.get()
    res = shared.of_log(log) if shared is not None else None
    if res is None or res.heads is None:
        return None
    return list(res.heads[0]), res.heads[1]


def kept_largest_timestamp(log: str) -> int | None:
    """Inside ``shared_reading``: the largest timestamp of the valid entries of ``log``'s first walk
    (``SegmentResult.largest_timestamp``) from a kept reading of the file, unchanged since; else None."""
    shared = _SHARED.get()
    return shared.largest_timestamp(log) if shared is not None else None


def _stat(path: str | None) -> tuple[int, int, int, int] | None:
    if path is None:
        return None
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _key(task: SegmentTask) -> _Key | None:
    log = _stat(task.log)
    if log is None:
        return None
    return (replace(task, recovery_interval=None, cuts=False, piece=WALK_CHUNK, fold=None), (log, _stat(task.index), _stat(task.timeindex), _stat(task.txnindex)))


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
