"""``mqtool lag`` on a RocketMQ store: each group's offsets in ``config/consumerOffset.json``
(or its ``.bak``, as ``ConfigManager.load`` falls back) against the ConsumeQueues, as
``mqadmin consumerProgress`` shows them: the broker offset is the queue's max offset
(``ConsumeQueue.getMaxOffsetInQueue``), the diff is broker offset less consumer offset.  The lag in
bytes sums the ConsumeQueue units' sizes; the oldest unconsumed message's time is the
STORETIMESTAMP of the CommitLog record the first unconsumed unit points at."""

from __future__ import annotations

from pathlib import Path

from mqtool.errors import MqError, StoreIOError
from mqtool.layouts import Layout
from mqtool.ops.lag import LagReport, LagRow, counts
from mqtool.store import rocketmq as rmq
from mqtool.store import rocksdb_cq as store_rcq
from mqtool.store.model import consumers as model_consumers
from mqtool.store.model import rocketmq as model
from mqtool.store.model import rocksdb_cq as model_rcq


def rocketmq_lag(path: str | Path) -> LagReport:
    store = rmq.open_store(path)
    load = model_consumers.load_consumer_offsets(store)
    report = LagReport(Layout.ROCKETMQ.value, str(store.root), str(load.path) if load.path is not None else None)
    report.findings.extend(model_consumers.config_findings(load))
    if load.value is None:
        return report
    queues = set(store.queues())
    ranges: dict[tuple[str, int], tuple[int, int]] = {}
    if not queues and store_rcq.is_rocksdb_cq(store.root):
        # a RocksDB ConsumeQueue (5.2+): the broker offset and oldest store time are its own
        with store_rcq.RocksCq(store_rcq.db_dir(store.root)) as db:
            _rocksdb_lag(db, load.value, report, ranges)
        assert load.path is not None
        report.findings.extend(model_consumers.offset_findings(load.path, load.value, ranges, set(ranges)))
        return report
    with rmq.CommitLogReader(store) as reader:
        for (topic, group), table in sorted(load.value.items()):
            for qid, committed in sorted(table.items()):
                if (topic, qid) not in queues:
                    report.rows.append(LagRow(group, topic, qid, committed, None, None, None, 0, None, None, "no ConsumeQueue for this queue"))
                    continue
                rng = rmq.queue_range(store, topic, qid)
                ranges[(topic, qid)] = (rng.min_offset, rng.max_offset)
                lag, expired, first = counts(committed, rng.min_offset, rng.max_offset)
                lag_bytes, oldest = 0, None
                if first < rng.max_offset:
                    lag_bytes = model_consumers.queue_bytes(store, topic, qid, first, rng.max_offset)
                    oldest = _store_time(store, reader, topic, qid, first, report)
                report.rows.append(LagRow(group, topic, qid, committed, rng.min_offset, rng.max_offset, lag, expired, lag_bytes, oldest))
    assert load.path is not None
    report.findings.extend(model_consumers.offset_findings(load.path, load.value, ranges, queues))
    return report


def _rocksdb_lag(db: store_rcq.RocksCq, offsets: dict[tuple[str, str], dict[int, int]], report: LagReport, ranges: dict[tuple[str, int], tuple[int, int]]) -> None:
    """Lag rows against a RocksDB ConsumeQueue: the broker offset is the offset table's max + 1
    (``RocksDBConsumeQueueStore.getMaxOffsetInQueue``), the lag in bytes sums the units' sizes, the
    oldest unconsumed message's time is its unit's store time."""
    table = model_rcq.offset_table(db)
    for (topic, group), qtable in sorted(offsets.items()):
        for qid, committed in sorted(qtable.items()):
            rng = model_rcq.queue_range(table, None, (topic, qid))
            if rng is None:
                report.rows.append(LagRow(group, topic, qid, committed, None, None, None, 0, None, None, "no ConsumeQueue for this queue"))
                continue
            ranges[(topic, qid)] = rng
            lag, expired, first = counts(committed, rng[0], rng[1])
            lag_bytes, oldest = 0, None
            for item in model_rcq.queue_units(db, topic, qid, first):
                if isinstance(item, model_rcq.BadEntry):
                    report.findings.append(model_rcq.bad_entry_finding(db, item))
                    continue
                if item.cq.queue_offset >= rng[1]:
                    break
                oldest = item.value.store_timestamp if oldest is None else oldest
                lag_bytes += item.value.size
            report.rows.append(LagRow(group, topic, qid, committed, rng[0], rng[1], lag, expired, lag_bytes, oldest))


def _store_time(store: rmq.RocketMQStore, reader: rmq.CommitLogReader, topic: str, qid: int, offset: int, report: LagReport) -> int | None:
    """STORETIMESTAMP of the message at queue offset ``offset`` (None when its unit or record
    cannot be read: the record's damage is a finding with validate's code)."""
    unit = rmq.read_cq_unit(store, topic, qid, offset)
    if unit is None or unit.unit.is_filler:
        return None
    offset = unit.unit.commitlog_offset
    found = store.commitlog_segment_for(offset)
    if found is None:  # in a missing file: the CommitLog's continuity findings name it
        gap = model.gap_holding(model.commitlog_findings(store), offset)
        if gap is not None and gap not in report.findings:
            report.findings.append(gap)
        return None
    try:
        return reader.read(offset, unit.unit.size).store_timestamp
    except StoreIOError:
        raise
    except MqError as exc:
        report.findings.extend(f for f in model.unreadable_record_findings(store, found[0], found[1], exc) if f not in report.findings)
        return None


__all__ = ["rocketmq_lag"]
