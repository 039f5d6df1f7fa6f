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
    committed = model_consumers.kafka_committed(store)
    offsets_dir = next((p.path for p in store.partitions if p.topic == ks.CONSUMER_OFFSETS and p.suffix is None), None)
    report = LagReport(Layout.KAFKA.value, str(path), str(offsets_dir) if offsets_dir is not None else None)
    for exc in committed.problems:
        report.findings.append(Finding(ks.entry_error_code(exc), exc.path or "", exc.position, exc.reason))
    by_key = {p.key: p for p in store.partitions if p.key is not None and p.suffix is None}
    wanted = {by_key[k].name for k in committed.table if k in by_key}
    ends: dict[str, tuple[int, int]] = {}
    valid: dict[str, int] = {}  # .log path -> end of its valid entries
    for item in model_kafka.read_store(store, checks=frozenset({"offsets"})):
        if isinstance(item, model_kafka.PartitionRead):
            ends[item.name] = (item.log_start_offset, item.log_end_offset)
        elif isinstance(item, model_kafka.SegmentRead) and item.counted:
            valid[item.result.path] = item.result.valid_end
            if item.result.partition and Path(item.result.partition).name in wanted:
                report.findings.extend(f for f in item.result.findings if f.level.value != "info")
        elif isinstance(item, model_kafka.Placed) and item.finding.level.value != "info" and any(Path(item.finding.path).parent.name == name for name in wanted):
            report.findings.append(item.finding)
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
                lag_bytes, oldest = _unconsumed(part, first, valid, report)
            report.rows.append(LagRow(group, topic, partition, offset, start, end, lag, expired, lag_bytes, oldest))
    return report


def _unconsumed(part: ks.KafkaPartition, offset: int, valid: dict[str, int], report: LagReport) -> tuple[int | None, int | None]:
    """(bytes from the entry holding the first record at or after ``offset`` to the end of the
    valid data, that record's timestamp); (None, None) when damage stops the read (a finding)."""
    try:
        first = model_consumers.kafka_first_record(part, offset)
    except MqError as exc:
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
