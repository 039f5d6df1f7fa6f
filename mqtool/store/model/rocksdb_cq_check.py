"""The RocksDB ConsumeQueue of a RocketMQ 5.2+ store (``storeType=defaultRocksDB``) judged.

Part of the RocketMQ reading (``store.model.rocketmq_read`` calls ``check_rocksdb_cq`` after the
file ConsumeQueues), in its ``consumequeue`` family and finding vocabulary.  What is read and judged
is the store model's (``store.model.rocksdb_cq.judge``: units against the CommitLog, holes between
a queue's keys, the offset table, the dispatch checkpoint); here it is tied to the rest of the store:

* with no file ConsumeQueue (the broker reads the RocksDB one only: ``RocksDBMessageStore``), the
  RocksDB units must cover every queue's CommitLog records (``RMQ-CQ-LAG``,
  ``RMQ-CQ-MISSING-QUEUE``), and the file check's ``RMQ-CQ-MISSING-QUEUE`` is not said of the
  queues it holds;
* with a file ConsumeQueue too (``rocksdbCQDoubleWriteEnable`` / ``CombineConsumeQueueStore``),
  each queue's two sets of units are compared (``RMQ-CQ-ROCKSDB-DIVERGE``: what the double write
  lost, apache/rocketmq#8589);
* a database RocksDB cannot open read-only is ``RMQ-FILE-UNREADABLE`` on ``consumequeue/``; without
  the ``rocksdb`` extra validate exits 4 naming it.

The queues' ``[min, max)`` ranges it returns are what the consumer-offset checks compare against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mqtool.errors import CorruptDataError
from mqtool.findings import Finding
from mqtool.findings import code_ids as ids
from mqtool.store import rocketmq as rmq
from mqtool.store import rocksdb_cq as store_rcq
from mqtool.store.model import rocketmq as model
from mqtool.store.model import rocksdb_cq as model_rcq

QueueKey = tuple[str, int]


@dataclass
class RocksCheck:
    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    #: ``[min, max)`` of each queue the RocksDB ConsumeQueue holds (as the broker serves them)
    ranges: dict[QueueKey, tuple[int, int]] = field(default_factory=dict)
    #: the database, as one entry of validate's files: its path (None: the store has none), its
    #: bytes and its units
    path: str | None = None
    size: int = 0
    units: int = 0


def check_rocksdb_cq(
    store: rmq.RocketMQStore,
    *,
    commitlog_end: int,
    last_queue_offsets: Mapping[QueueKey, int],
    damaged: tuple[tuple[int, int], ...] = (),
    end_cause: Finding | None = None,
    live: bool = False,
) -> RocksCheck:
    """Every finding of the store's RocksDB ConsumeQueue (none when it has none)."""
    out = RocksCheck()
    if not store_rcq.is_rocksdb_cq(store.root):
        return out
    path = store_rcq.db_dir(store.root)
    try:
        db = store_rcq.RocksCq(path)
    except CorruptDataError as exc:
        out.findings.append(Finding(ids.RMQ_FILE_UNREADABLE, str(path), None, f"the RocksDB ConsumeQueue: {exc.reason}"))
        out.path = str(path)
        return out
    with db:
        try:
            judged = model_rcq.judge(db, store, commitlog_end=commitlog_end, damaged=damaged)
        except CorruptDataError as exc:  # RocksDB refused to read on (a block checksum, a truncated SST)
            out.findings.append(Finding(ids.RMQ_FILE_UNREADABLE, str(path), None, f"the RocksDB ConsumeQueue: {exc.reason}"))
            out.path, out.size = str(path), db.size
            return out
        out.findings.extend(model.link_knock_on(f, end_cause) for f in judged.findings)
        out.ranges = judged.ranges()
        out.path, out.size, out.units = str(path), db.size, judged.units
        if store.queues():
            out.findings.extend(model_rcq.divergence_findings(db, store, set(judged.spans)))
        else:
            out.findings.extend(model_rcq.lag_findings(db, judged, last_queue_offsets, live=live))
        out.facts = {
            "path": str(path),
            "column_families": db.column_families,
            "units": judged.units,
            "queues": len(out.ranges),
            "expired_units": judged.expired,
            "dispatch_checkpoint": judged.table.checkpoint,
        }
    return out


__all__ = ["RocksCheck", "check_rocksdb_cq"]
