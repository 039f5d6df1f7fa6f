"""RocketMQ's compaction store (``compaction/``) judged: each queue's compaction log against its
sparse consume queue, as the broker loads and serves them (validate's ``compaction`` family,
``store.model.rocketmq_read`` runs it).

What ``store.model.compaction`` reads (each compaction-log file's records and how
it ends, each sparse-CQ file's units and how it ends, ``position-checkpoint``) is tied together
here:

* the two directories and file lists of a queue: ``CompactionStore.load`` skips a compaction log
  without a sparse CQ directory ("compactionLog mismatch with compactionCq"), and
  ``TopicPartitionLog.sanityCheck`` refuses to load a queue whose log and CQ file names differ:
  the broker serves nothing of it (``RMQ-COMPACTION-PAIR``);
* ``compacting/`` and ``replicating/`` folders: a compaction (``CompactionLog.compaction``) or a
  slave's pull from its master (``pullMessageFromMaster``) that did not finish
  (``RMQ-COMPACTION-IN-PROGRESS``);
* each unit against the record it points at, read side by side in compaction-log order (both
  are appended in that order): a unit whose offset does not go up, or whose ``msgBaseOffset``
  does not (``getBatchMsgIndexOrNextBuffer`` binary-searches them: ``RMQ-COMPACTION-CQ-ORDER``);
  a unit where no record starts, in a CQ file not named as the log file holding its record, or
  whose size, ``msgBaseOffset``, ``storeTime``, ``tagsCode`` or ``batchSize`` is not its
  record's, or whose ``compactedOffset`` (-1) and reserved bytes (0) are not what the broker
  always writes (``RMQ-COMPACTION-CQ-MISMATCH``);
* records no unit points at: after the last unit ``TopicPartitionLog.recover`` cuts the
  compaction log at load; between units ``getMessage`` never reaches them
  (``RMQ-COMPACTION-UNINDEXED``, one finding per run);
* ``position-checkpoint`` that does not parse, or that says a queue was compacted past the last
  queue offset its log holds: compaction skips the messages up to it (``RMQ-COMPACTION-POSITION``).

Every walk is bounded by the files' sizes; the side-by-side reading keeps one record and one
unit at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.findings import code_ids as ids
from mqtool.formats.rocketmq import compaction as cf
from mqtool.formats.rocketmq.hashing import tags_code
from mqtool.formats.rocketmq.properties import TAGS
from mqtool.store import rocketmq as rmq
from mqtool.store.model import compaction as model


@dataclass
class CompactionCheck:
    """What the compaction checks found, and the facts a report states about the compaction store."""

    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Run:
    """Records in a row that no unit points at."""

    first: model.RecordAt
    count: int = 1


def check_compaction(store: rmq.RocketMQStore) -> CompactionCheck:
    """Every compaction finding of ``store`` (none when it has no ``compaction/`` directory)."""
    out = CompactionCheck()
    paths = model.CompactionPaths(store.root)
    if not paths.present():
        return out
    dirs = model.queue_dirs(paths)
    totals = {"queues": 0, "log_files": 0, "records": 0, "units": 0}
    max_queue_offset: dict[tuple[str, int], int] = {}
    for topic, qid in dirs.all:
        totals["queues"] += 1
        log_dir, cq_dir = paths.queue_log_dir(topic, qid), paths.queue_cq_dir(topic, qid)
        if (topic, qid) not in dirs.cqs:
            out.findings.append(
                Finding(
                    ids.RMQ_COMPACTION_PAIR,
                    str(log_dir),
                    None,
                    f"expected the sparse consume queue directory {cq_dir.relative_to(store.root)} beside the compaction log, found none: "
                    "CompactionStore.load skips the queue (compactionLog mismatch with compactionCq)",
                )
            )
        for leftover in model.in_progress_dirs(paths, topic, qid):
            out.findings.append(
                Finding(
                    ids.RMQ_COMPACTION_IN_PROGRESS,
                    str(leftover),
                    None,
                    f"expected no {leftover.name}/ folder in a stopped broker's store, found one: a "
                    + ("compaction" if leftover.name == "compacting" else "pull from the master")
                    + " that did not finish left it",
                )
            )
        log_segments = rmq.list_segments(log_dir) if (topic, qid) in dirs.logs else []
        cq_segments = rmq.list_segments(cq_dir) if (topic, qid) in dirs.cqs else []
        out.findings.extend(_pair_findings(log_segments, cq_segments))
        log = model.LogWalk(topic, qid, log_segments, directory=log_dir if log_segments else None)
        cq = model.CqWalk(cq_segments)
        top = _match(log, cq, out.findings)
        out.findings.extend(log.findings)
        out.findings.extend(cq.findings)
        totals["log_files"] += len(log_segments)
        totals["records"] += log.records
        totals["units"] += cq.units
        if top is not None:
            max_queue_offset[(topic, qid)] = top
    if paths.position.exists():
        out.findings.extend(_position_findings(paths, max_queue_offset))
    out.facts = totals
    return out


def _pair_findings(log_segments: list[rmq.Segment], cq_segments: list[rmq.Segment]) -> list[Finding]:
    """``TopicPartitionLog.sanityCheck``: every log file has a CQ file of its name and back."""
    out = []
    log_names = {s.name for s in log_segments}
    cq_names = {s.name for s in cq_segments}
    for seg, other, what in [(s, "sparse consume queue", "compaction log") for s in log_segments if s.name not in cq_names] + [
        (s, "compaction log", "sparse consume queue") for s in cq_segments if s.name not in log_names
    ]:
        out.append(
            Finding(
                ids.RMQ_COMPACTION_PAIR,
                str(seg.path),
                None,
                f"expected a {other} file named {seg.name} beside this {what} file, found none: "
                "TopicPartitionLog.sanityCheck refuses to load the queue and the broker serves none of it",
            )
        )
    return out


def _match(log: model.LogWalk, cq: model.CqWalk, out: list[Finding]) -> int | None:
    """Walk the records and the units side by side; the highest QUEUEOFFSET a unit reaches."""
    records: Iterator[model.RecordAt] = iter(log)
    rec = next(records, None)
    run: _Run | None = None
    last_offset = -1
    last_base = -1
    top: int | None = None

    def close_run(after: bool) -> None:
        nonlocal run
        if run is None:
            return
        first = run.first
        why = (
            "TopicPartitionLog.recover cuts the compaction log where the last unit's record ends, at load"
            if after
            else "getMessage reads only through units: consumers never get them"
        )
        out.append(
            Finding(
                ids.RMQ_COMPACTION_UNINDEXED,
                str(first.path),
                first.position,
                f"expected a sparse consume queue unit for every record, found {run.count} record(s) from compaction-log offset {first.offset} "
                f"(QUEUEOFFSET {first.record.queue_offset}) without one: {why}",
            )
        )
        run = None

    def unindexed(until: int | None) -> None:
        """The records before compaction-log offset ``until`` (None: all that are left): no unit
        points at them (one run, ``close_run`` states it)."""
        nonlocal rec, run
        while rec is not None and (until is None or rec.offset < until):
            if run is None:
                run = _Run(rec)
            else:
                run.count += 1
            rec = next(records, None)

    for at in cq:
        u = at.unit
        where = (str(at.path), at.position)
        if u.commitlog_offset <= last_offset or u.msg_base_offset <= last_base:
            out.append(
                Finding(
                    ids.RMQ_COMPACTION_CQ_ORDER,
                    *where,
                    f"expected offset and msgBaseOffset above the previous unit's ({last_offset}, {last_base}), found ({u.commitlog_offset}, {u.msg_base_offset}): "
                    "the broker's binary search over the units goes astray",
                    length=46,
                )
            )
            continue
        last_offset, last_base = u.commitlog_offset, u.msg_base_offset
        unindexed(u.commitlog_offset)
        close_run(after=False)
        if rec is None or rec.offset != u.commitlog_offset:
            out.append(
                Finding(
                    ids.RMQ_COMPACTION_CQ_MISMATCH,
                    *where,
                    f"expected a unit pointing at a record of the compaction log, found offset {u.commitlog_offset} where no record starts",
                    length=12,
                )
            )
            continue
        r = rec.record
        problems = []
        if rec.path.name != at.path.name:
            problems.append(f"in the CQ file named as the log file holding its record ({rec.path.name}), found in {at.path.name}")
        for name, want, got in (
            ("size", r.total_size, u.size),
            ("msgBaseOffset", r.queue_offset, u.msg_base_offset),
            ("storeTime", r.store_timestamp, u.store_time),
            ("tagsCode", tags_code(r.properties.get(TAGS)), u.tags_code),
            ("batchSize", cf.UNIT_BATCH_SIZE, u.batch_size),
            ("compactedOffset", cf.END_UNIT.compacted_offset, u.compacted_offset),
            ("reserved", 0, u.reserved),
        ):
            if want != got:
                problems.append(f"{name} {want}, found {got}")
        if problems:
            out.append(
                Finding(
                    ids.RMQ_COMPACTION_CQ_MISMATCH,
                    *where,
                    f"expected the unit of the record at compaction-log offset {rec.offset}: " + "; ".join(problems),
                    length=46,
                )
            )
        top = r.queue_offset
        rec = next(records, None)
    unindexed(None)
    close_run(after=True)
    return top


def _position_findings(paths: model.CompactionPaths, max_queue_offset: dict[tuple[str, int], int]) -> list[Finding]:
    try:
        positions = model.read_positions(paths.position)
    except MqError as exc:
        return [Finding(ids.RMQ_COMPACTION_POSITION, str(paths.position), exc.position, f"{exc.reason}: CompactionPositionMgr cannot load it")]
    out = []
    for p in positions:
        top = max_queue_offset.get((p.topic, p.queue_id))
        if top is not None and p.offset > top:
            out.append(
                Finding(
                    ids.RMQ_COMPACTION_POSITION,
                    str(paths.position),
                    None,
                    f"expected queueOffsetMap[{p.key!r}] at most the last queue offset {top} the compaction log holds, found {p.offset}: "
                    "compaction skips the messages up to it",
                )
            )
    return out


__all__ = ["CompactionCheck", "check_compaction"]
