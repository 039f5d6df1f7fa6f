"""``mqtool lag`` on a Kafka log dir: each group's committed offsets in ``__consumer_offsets``
against the partitions, as ``kafka-consumer-groups --describe`` shows them: CURRENT-OFFSET is
the committed offset, LOG-END-OFFSET the partition's next offset on disk (the store model's log
end offset), LAG their difference.  The lag in bytes counts the log from the entry holding the
first unconsumed record to the end of the valid data; the oldest unconsumed message's time is
that record's timestamp (CreateTime or LogAppendTime, as its batch says)."""

from __future__ import annotations

from pathlib import Path

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.layouts import Layout
from mqtool.ops.lag import LagReport, LagRow, counts
from mqtool.store import kafka as ks
from mqtool.store.model import consumers as model_consumers
from mqtool.store.model import kafka as model_kafka


def kafka_lag(path: str | Path) -> LagReport:
    store = ks.open_kafka(path)
    by_key = {p.key: p for p in store.partitions if p.key is not None and p.suffix is None}
    coordinator = {str(seg.log) for p in store.partitions if p.topic == ks.CONSUMER_OFFSETS and p.suffix is None for seg in p.log_segments()}
    # one reading of the log dir (each .log byte once): the partitions' offsets; the
    # __consumer_offsets segments' commits, folded by their walk (``commits=True``); and, once the
    # commits are known, each group's first unconsumed record, found in the walk of its partition
    ends: dict[str, tuple[int, int]] = {}
    valid: dict[str, int] = {}  # .log path -> end of its valid entries
    reads: list[model_kafka.SegmentRead] = []  # of the __consumer_offsets segments
    found: list[tuple[str, Finding]] = []  # (partition dir name, finding): kept for the partitions a group committed to
    committed: model_consumers.KafkaCommitted | None = None
    searches: dict[str, model_consumers.FirstRecordSearches] = {}  # partition dir path -> its searches
    items = model_kafka.read_store_entries(store, model_kafka.EntryDecode("framing"), checks=frozenset({"offsets"}), kept=True, commits=True)
    for item in items:
        if committed is None and len(reads) == len(coordinator):  # every commit read: search the records
            committed = model_consumers.kafka_committed(store, reads)
            searches = _searches(store, committed, by_key)
        if isinstance(item, model_kafka.ScannedEntry):
            if (search := searches.get(item.task.partition)) is not None:
                search.entry(item)
        elif isinstance(item, model_kafka.PartitionRead):
            ends[item.name] = (item.log_start_offset, item.log_end_offset)
        elif isinstance(item, model_kafka.SegmentRead):
            if item.result.path in coordinator:
                reads.append(item)  # its commits
            if (search := searches.get(item.result.partition)) is not None:
                search.segment(item)
            if item.counted:
                valid[item.result.path] = item.result.valid_end
                if item.result.partition:
                    found.extend((Path(item.result.partition).name, f) for f in item.result.findings if f.level.value != "info")
        elif isinstance(item, model_kafka.Placed) and item.finding.level.value != "info":
            found.append((Path(item.finding.path).parent.name, item.finding))
    if committed is None:
        committed = model_consumers.kafka_committed(store, reads)
    offsets_dir = next((p.path for p in store.partitions if p.topic == ks.CONSUMER_OFFSETS and p.suffix is None), None)
    report = LagReport(Layout.KAFKA.value, str(path), str(offsets_dir) if offsets_dir is not None else None)
    for exc in committed.problems:
        report.findings.append(Finding(ks.entry_error_code(exc), exc.path or "", exc.position, exc.reason))
    wanted = {by_key[k].name for k in committed.table if k in by_key}
    report.findings.extend(f for name, f in found if name in wanted)
    # the first unconsumed record of every group: found in the reading, or searched now (a
    # partition read before the commits were known, an offset the reading could not answer)
    firsts: dict[tuple[str, int], dict[int, model_consumers.FirstRecord | MqError | None]] = {}
    for key, groups in committed.table.items():
        part = by_key.get(key)
        if part is None or part.name not in ends:
            continue
        start, end = ends[part.name]
        offsets = {first for offset in groups.values() if (first := counts(offset, start, end)[2]) < end}
        search = searches.get(str(part.path))
        firsts[key] = search.results(offsets) if search is not None else model_consumers.kafka_first_records(part, offsets)
    for (topic, partition), groups in sorted(committed.table.items()):
        part = by_key.get((topic, partition))
        for group, offset in sorted(groups.items()):
            if part is None or part.name not in ends:
                report.rows.append(LagRow(group, topic, partition, offset, None, None, None, 0, None, None, "partition not in this log dir"))
                continue
            start, end = ends[part.name]
            lag, expired, first = counts(offset, start, end)
            lag_bytes: int | None = 0
            oldest: int | None = None
            if first < end:
                lag_bytes, oldest = _unconsumed(part, firsts[(topic, partition)][first], valid, report)
            report.rows.append(LagRow(group, topic, partition, offset, start, end, lag, expired, lag_bytes, oldest))
    return report


def _searches(
    store: ks.KafkaStore, committed: model_consumers.KafkaCommitted, by_key: dict[tuple[str, int], ks.KafkaPartition]
) -> dict[str, model_consumers.FirstRecordSearches]:
    """The searches for each group's first unconsumed record, made in the reading of the
    partitions still to come: at its committed offset, or at the partition's log start offset
    when that is higher (as the checkpoint and the first segment tell: the reading's own log start
    offset comes with the partition's end; an offset it makes otherwise is searched after)."""
    starts = model_consumers.log_start_offsets(store)
    out: dict[str, model_consumers.FirstRecordSearches] = {}
    for key, groups in committed.table.items():
        part = by_key.get(key)
        if part is None or not groups:
            continue
        segments = part.log_segments()
        low = max(starts.get(key, 0), segments[0].base_offset if segments else 0)
        out[str(part.path)] = model_consumers.FirstRecordSearches(part, {max(offset, low) for offset in groups.values()})
    return out


def _unconsumed(part: ks.KafkaPartition, first: model_consumers.FirstRecord | MqError | None, valid: dict[str, int], report: LagReport) -> tuple[int | None, int | None]:
    """(bytes from the entry holding the first unconsumed record -- ``first``, what
    ``kafka_first_records`` found -- to the end of the valid data, that record's timestamp);
    (None, None) when damage stops the read (a finding)."""
    if isinstance(first, MqError):
        exc = first
        report.findings.append(Finding(ks.entry_error_code(exc), exc.path or "", exc.position, exc.reason))
        return None, None
    if first is None:
        return 0, None
    total, counting = 0, False
    for seg in part.log_segments():
        if seg.log is None:
            continue
        end = valid.get(str(seg.log), seg.log_size)
        if seg.log == first.segment:
            counting = True
            total += max(0, end - first.position)
        elif counting:
            total += end
    return total, first.timestamp


__all__ = ["kafka_lag"]
