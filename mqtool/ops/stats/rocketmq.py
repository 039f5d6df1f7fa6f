"""stats of a RocketMQ store: every CommitLog record the broker serves, by topic and queue id
(transactional PREPARED/ROLLBACK records included, as in the CommitLog), its TAGS and KEYS
properties and store timestamp, counted by a fold (:class:`RecordCount`) of the store model's one
reading of each CommitLog file -- the reading validate folds (``store.model.commitlog_check``:
``commitlog_tasks``, ``check_commitlog_file``), so that ``report`` counts its stats from
validate's reading (``rocketmq_stats(counted=...)``) and reads no byte twice; the 5.x timer
store's pending messages (``store.model.timer.timer_pending``).

What is counted is what the broker serves: a file's records up to where upstream
``CommitLog.recoverNormally`` stops taking them (its first broken record, a torn tail or stale
data in the newest file), and a record whose frame holds around a failed body CRC, counted apart
in ``damaged_messages`` as are the records validate states a finding about (a PHYSICALOFFSET that
is not their address, dropped properties); a missing file's records are not counted.  The gaps and
damage met are stated as validate states them (the findings of the same reading); a record that
breaks its queue's QUEUEOFFSET sequence is named by ``store.model.queue_offsets``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import RMQ_CL_VALID_END
from mqtool.ops.stats.aggregates import ROCKETMQ_CLEAN_RATIO, LargeMessage, Progress, StatsOptions, StatsPartial, StoreStats, TagValue, Top, UnitStats
from mqtool.store.model import commitlog as reading


class RecordCount:
    """stats' count of one CommitLog file: a ``store.model.commitlog_check.RowsFold`` the file's
    reading feeds (in a worker process too: it is pickled there and back)."""

    def __init__(self, top: int) -> None:
        self.partial = StatsPartial(top)

    def feed(self, rows: reading.RecordRows, base: int) -> None:
        _count(rows, base, self.partial)


def record_count(options: StatsOptions) -> functools.partial[RecordCount]:
    """A fresh :class:`RecordCount` per CommitLog file (``ValidateOptions.rows``)."""
    return functools.partial(RecordCount, options.top)


def rocketmq_stats(
    path: Path, stats: StoreStats, top: Top, options: StatsOptions, progress: Progress, counted: tuple[Sequence[RecordCount], Sequence[Finding]] | None = None
) -> Path:
    """Count every record of the store at (or under) ``path`` into ``stats`` and ``top``; returns
    the store's root.  ``counted``: the counts a validation of the store made with
    ``ValidateOptions.rows = record_count(options)`` (``ValidationReport.rows``) and its findings:
    the CommitLog is not read again, the findings about its files are the validation's."""
    from mqtool.findings import finding_text
    from mqtool.store import rocketmq as rmq
    from mqtool.store.lock import probe_record_lock
    from mqtool.store.model import commitlog_check as cl_check
    from mqtool.store.model import rocketmq as model
    from mqtool.store.model import timer as model_timer
    from mqtool.store.root_rocketmq import find_rocketmq_root

    root = find_rocketmq_root(path) or path
    store = rmq.open_store(root)
    total = StatsPartial(options.top)
    met: list[Finding] = []
    if counted is not None:
        folds, findings = counted
        for fold in folds:
            total.merge(fold.partial)
        directory = str(store.commitlog_dir)
        met.extend(f for f in findings if f.path is not None and (f.path == directory or f.path.startswith(directory + "/")))
    else:
        live = probe_record_lock(store.lock_path) is not None
        met.extend(model.segment_findings_on_path(model.commitlog_findings(store, live=live), [s.path for s in store.commitlog]))
        join = cl_check.CommitLogJoin(store)
        tasks = cl_check.commitlog_tasks(store, live=live, check_crc=options.check_crc, rows=record_count(options))
        for task in tasks:
            res = cl_check.check_commitlog_file(task)
            met.extend(res.findings)
            met.extend(join.add(res))
            assert isinstance(res.rows, RecordCount)
            total.merge(res.rows.partial)
            progress(res.size)
        last = model.last_data_file(store.commitlog)
        for i, seg in enumerate(store.commitlog):
            if i > last and seg.size > 0:
                met.extend(cl_check.preallocated_file_findings(str(seg.path), store.commitlog_file_size))
    met = [x for x in met if x.code != RMQ_CL_VALID_END]  # where the valid data ends is no damage
    total.into(stats, top)
    pending = model_timer.timer_pending(root)  # the 5.x timer store, when there is one
    if pending is not None:
        stats.timer = pending.to_dict()
        met.extend(pending.findings)
    stats.findings.extend(met)
    stats.problems.extend(finding_text(x) for x in met if x.level is Severity.error)
    stats.threshold, stats.threshold_name = ROCKETMQ_CLEAN_RATIO, "RocketMQ clean threshold (diskMaxUsedSpaceRatio)"
    return root


def _count(rows: reading.RecordRows, base: int, part: StatsPartial) -> None:
    """The records of one ``RecordRows``, in file order, into their units, the recent bytes and the
    top; the distinct TAGS and KEYS values of each unit go to its sketches once per batch."""
    tags_of: dict[tuple[str, int], set[TagValue]] = {}
    keys_of: dict[tuple[str, int], set[TagValue]] = {}
    units = part.units
    recent = part.recent
    top = part.top
    for pos, size, topic, queue_id, timestamp, tags, keys, code in zip(
        rows.position, rows.size, rows.topic, rows.queue_id, rows.store_timestamp, rows.tags, rows.keys, rows.code
    ):
        if code is not None:
            part.damaged_messages += 1
        key = (topic, queue_id)
        unit = units.get(key)
        if unit is None:
            unit = units[key] = UnitStats(topic, queue_id, f"{topic}/{queue_id}")
        unit.bytes += size
        unit.add(size, timestamp)
        if tags:
            tags_of.setdefault(key, set()).add(tags)
        if keys:
            keys_of.setdefault(key, set()).update(keys)
        recent.add(timestamp, size)
        if top.wants(size):
            top.offer(size, functools.partial(LargeMessage, size, unit.name, topic, queue_id, base + pos, timestamp))
    for key, values in tags_of.items():
        units[key].add_texts(tags=values)
    for key, values in keys_of.items():
        units[key].add_texts(keys=values)
