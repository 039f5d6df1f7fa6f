"""stats of a RocketMQ store: every CommitLog record by topic and queue id (transactional
PREPARED/ROLLBACK records included, as in the CommitLog), its TAGS and KEYS properties and store
timestamp, taken from the store model's one reading of each CommitLog file
(``store.model.commitlog.read_file_rows``: healthy records as columns, the precise decoders from
the first record that is not); the 5.x timer store's pending messages
(``store.model.timer.timer_pending``).

The gaps and damage met are stated as validate states them (``store.model.rocketmq``): a broken
frame ends its file's records, as upstream ``CommitLog.recoverNormally`` stops there, and a
missing file's records are not counted; a record whose frame holds but whose bytes are damaged
(a body CRC mismatch) is counted, and counted apart in ``damaged_messages``, as are the records
validate states a finding about (a PHYSICALOFFSET that is not their address, dropped
properties); a record that breaks its queue's QUEUEOFFSET sequence is named by
``store.model.queue_offsets``.
"""

from __future__ import annotations

import functools
from pathlib import Path

from mqtool.findings import Finding, Severity
from mqtool.ops.stats.aggregates import ROCKETMQ_CLEAN_RATIO, LargeMessage, Progress, StatsOptions, StoreStats, TagValue, Top, UnitStats
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import commitlog as reading

#: report progress at least every this many bytes of records
_PROGRESS_STEP = 1 << 20


def rocketmq_stats(path: Path, stats: StoreStats, top: Top, options: StatsOptions, progress: Progress) -> Path:
    """Count every record of the store at (or under) ``path`` into ``stats`` and ``top``; returns
    the store's root."""
    from mqtool.findings import finding_text
    from mqtool.store import rocketmq as rmq
    from mqtool.store.model import rocketmq as model
    from mqtool.store.model import timer as model_timer
    from mqtool.store.model.queue_offsets import QueueOffsets
    from mqtool.store.root_rocketmq import find_rocketmq_root

    root = find_rocketmq_root(path) or path
    store = rmq.open_store(root)
    units: dict[tuple[str, int], UnitStats] = {}
    last_index = model.last_data_file(store.commitlog)
    met: list[Finding] = model.segment_findings_on_path(model.commitlog_findings(store), [s.path for s in store.commitlog])
    joined = QueueOffsets()
    for i, seg in enumerate(store.commitlog):
        if seg.size == 0:
            continue
        with ReadOnlyFile(seg.path) as f:
            done = 0
            rows = reading.read_file_rows(
                f,
                seg.base,
                file_size=store.commitlog_file_size,
                last=i == last_index,
                after_last=i > last_index,  # the files after it are pre-allocated
                check_crc=options.check_crc,
                keep_damaged=True,
                texts=True,
            )
            for item in rows:
                if isinstance(item, reading.FileEnd):
                    progress(f.size - done)
                    met.extend(item.findings)
                    offsets = item.queue_offsets
                    if offsets is not None:
                        met.extend(offsets.findings)
                        met.extend(joined.add_file(offsets, seg.base, store.commitlog_file_size))
                    break
                _count(item, seg.base, units, stats, top)
                end = item.position[-1] + item.size[-1]
                if end - done >= _PROGRESS_STEP:
                    progress(end - done)
                    done = end
    pending = model_timer.timer_pending(root)  # the 5.x timer store, when there is one
    if pending is not None:
        stats.timer = pending.to_dict()
        met.extend(pending.findings)
    stats.findings.extend(met)
    stats.problems.extend(finding_text(x) for x in met if x.level is Severity.error)
    stats.units = [units[k] for k in sorted(units)]
    stats.threshold, stats.threshold_name = ROCKETMQ_CLEAN_RATIO, "RocketMQ clean threshold (diskMaxUsedSpaceRatio)"
    return root


def _count(rows: reading.RecordRows, base: int, units: dict[tuple[str, int], UnitStats], stats: StoreStats, top: Top) -> None:
    """The records of one ``RecordRows``, in file order, into their units, the recent bytes and the
    top; the distinct TAGS and KEYS values of each unit go to its sketches once per batch."""
    tags_of: dict[tuple[str, int], set[TagValue]] = {}
    keys_of: dict[tuple[str, int], set[TagValue]] = {}
    recent = stats.recent
    for pos, size, topic, queue_id, timestamp, tags, keys, code in zip(
        rows.position, rows.size, rows.topic, rows.queue_id, rows.store_timestamp, rows.tags, rows.keys, rows.code
    ):
        if code is not None:
            stats.damaged_messages += 1
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
