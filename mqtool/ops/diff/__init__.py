"""diff: two copies of one log -- a RocketMQ master and its HA slave, two replicas of a Kafka
partition, two copies of a Jafka or MetaQ partition -- compared by offset, streaming.

Each side is read once, by the store model's reading that states the findings validate reports
(its gaps and damage are diff's findings too); that reading's bytes are kept as block digests
(``digest``) and compared, so a side's log bytes are read once, and only where the comparison
looks closer (a block that differs, the records there, the records one side holds past the
other's end) are they read again.

Byte-addressed logs (the RocketMQ CommitLog, Jafka and MetaQ partitions) hold the same bytes at
the same offsets on both sides: HA replication copies the master's CommitLog byte for byte.  They
are compared over the range both hold (from the larger first offset to the smaller valid end); the
first differing byte is mapped to the record holding it on each side (``bytelog``).  Bytes after
a RocketMQ END_OF_FILE header are filler and not compared.

Kafka replicas hold the same record batches at the same offsets (followers append the leader's
batches as they are) but may roll segments at other places, so partitions are compared batch by
batch, aligned by offset.

Where a side's data ends matters: a clean stop (zeros, an END_OF_FILE record, a torn tail -- a
last record a crash cut short, followed only by zeros) makes a side a prefix, but a broken record
with data after it (a flipped byte, a file overwritten with other bytes) is damage.  The damaged
bytes are compared like any others (the first differing byte is then a divergence whose record
says why it does not decode); damage the comparison does not reach (past the other side's end, or
held identically by both) is reported on its own.

Verdicts per log: ``identical``; ``b-prefix`` (B holds the start of A: normal replication lag);
``a-prefix`` (A holds the start of B); ``diverged`` (the first divergence is reported); ``damaged``
(no divergence in the bytes both hold, but a side holds a broken record: ``damage`` names the file
and position); ``disjoint`` (no offset in common, nothing to compare).  Records one side holds past
the other's end are counted; data before the other's first offset (retention, or a slave that
started later) is reported, not a divergence.  The CLI exits 0 for identical and prefix, 1 for
diverged/damaged/disjoint.

The room: ``report`` (the answer), ``digest`` (what a side's reading read), ``bytelog`` (the
byte-addressed comparison), one module per layout (``rocketmq``, ``kafka``, ``legacy``: Jafka and
MetaQ) with its side's reading; ``diff_stores`` below joins them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mqtool.errors import MqError, StoreLayoutError
from mqtool.findings import Finding
from mqtool.ops.diff.bytelog import ByteLog, compare_byte_logs
from mqtool.ops.diff.kafka import compare_kafka_partitions
from mqtool.ops.diff.report import OK_VERDICTS, DiffReport, Extra, LogDiff

if TYPE_CHECKING:
    from mqtool.store.kafka import KafkaPartition

Progress = Callable[[int], object]


def diff_stores(path_a: str | Path, path_b: str | Path, layout: str, *, progress: Progress | None = None) -> DiffReport:
    """Compare two copies of a store of ``layout`` (both detected as the same layout);
    ``progress(n)``: ``n`` more log bytes of either side read."""
    path_a, path_b = Path(path_a), Path(path_b)
    report = DiffReport(layout, str(path_a), str(path_b))
    if layout == "rocketmq":
        return _diff_rocketmq(report, path_a, path_b, progress)
    if layout == "kafka":
        return _diff_kafka(report, path_a, path_b, progress)
    if layout in ("jafka", "metaq"):
        return _diff_legacy(report, path_a, path_b, layout, progress)
    from mqtool.errors import UnsupportedFormatError

    raise UnsupportedFormatError(f"`mqtool diff` does not handle the {layout} layout", expected="rocketmq, kafka, jafka or metaq", found=layout)


def _diff_rocketmq(report: DiffReport, path_a: Path, path_b: Path, progress: Progress | None) -> DiffReport:
    from mqtool.ops.diff.rocketmq import rocketmq_log, rocketmq_missing

    pa: list[str] = []
    pb: list[str] = []
    la, lb = rocketmq_log(path_a, pa, progress), rocketmq_log(path_b, pb, progress)
    try:
        d = compare_byte_logs(la, lb)
    finally:
        la.close()
        lb.close()
    d.name = "commitlog"
    d.problems = [*(f"A: {p}" for p in pa), *(f"B: {p}" for p in pb), *d.problems]
    div = d.divergence
    if div is not None and "a_byte" not in div:  # a side holds no file there: say why, as validate does
        at = div["byte_offset"]
        for key, log in (("a", la), ("b", lb)):
            if div[key] is None:
                div[key] = log.describe(at)[1] if log.segment_for(at) is not None else rocketmq_missing(log, at)
                log.close()
    report.logs.append(d)
    return report


def _diff_kafka(report: DiffReport, path_a: Path, path_b: Path, progress: Progress | None) -> DiffReport:
    from mqtool.ops.diff.kafka import from_readings, read_side

    side_a, side_b = read_side(path_a, progress), read_side(path_b, progress)
    sa, sb = side_a.store, side_b.store
    if len(sa.partitions) == 1 and len(sb.partitions) == 1 and sa.kind != "log-dir" and sb.kind != "log-dir":
        one_a, one_b = sa.partitions[0], sb.partitions[0]
        pairs: list[tuple[str, KafkaPartition | None, KafkaPartition | None]] = [
            (one_a.name if one_a.name == one_b.name else f"{one_a.name} / {one_b.name}", one_a, one_b)
        ]
    else:
        by_a = {p.name: p for p in sa.partitions}
        by_b = {p.name: p for p in sb.partitions}
        pairs = [(n, by_a.get(n), by_b.get(n)) for n in sorted(set(by_a) | set(by_b))]
    for name, part_a, part_b in pairs:
        if part_a is None or part_b is None:
            d = LogDiff(name, {"start": None, "end": None}, {"start": None, "end": None}, "offset", verdict="only-a" if part_b is None else "only-b")
            d.notes.append(f"partition only in {'A' if part_b is None else 'B'}")
            report.logs.append(d)
            continue
        known = from_readings(name, part_a, part_b, side_a, side_b)
        report.logs.append(known if known is not None else compare_kafka_partitions(name, part_a, part_b))
    _attach_findings(report, path_a, side_a.findings, path_b, side_b.findings)
    return report


def _diff_legacy(report: DiffReport, path_a: Path, path_b: Path, layout: str, progress: Progress | None) -> DiffReport:
    from mqtool.ops.diff.legacy import legacy_logs

    pa: list[str] = []
    pb: list[str] = []
    (logs_a, found_a), (logs_b, found_b) = legacy_logs(path_a, layout, pa, progress), legacy_logs(path_b, layout, pb, progress)
    if len(logs_a) == 1 and len(logs_b) == 1 and set(logs_a) != set(logs_b):
        (na, one_a), (nb, one_b) = next(iter(logs_a.items())), next(iter(logs_b.items()))
        logs_a, logs_b = {f"{na} / {nb}": one_a}, {f"{na} / {nb}": one_b}
    for name in sorted(set(logs_a) | set(logs_b)):
        la: ByteLog | None = logs_a.get(name)
        lb: ByteLog | None = logs_b.get(name)
        if la is None or lb is None:
            d = LogDiff(name, {}, {}, "byte", verdict="only-a" if lb is None else "only-b")
            d.notes.append(f"partition only in {'A' if lb is None else 'B'}")
            report.logs.append(d)
            continue
        try:
            d = compare_byte_logs(la, lb)
        finally:
            la.close()
            lb.close()
        d.name = name
        report.logs.append(d)
    if report.logs:
        report.logs[0].problems[:0] = [*(f"A: {p}" for p in pa), *(f"B: {p}" for p in pb)]
    _attach_findings(report, path_a, found_a, path_b, found_b)
    return report


def _attach_findings(report: DiffReport, path_a: Path, found_a: list[Finding], path_b: Path, found_b: list[Finding]) -> None:
    """Kafka, Jafka, MetaQ: every gap and damage of either side as validate states it (the side's
    reading, ``ops.log_findings.select``), given to the compared log of its partition (the first
    log when a side is one partition, or no log holds the partition's name): errors make the
    diff fail."""
    if not report.logs:
        return
    for side, root, found in (("A", path_a, found_a), ("B", path_b, found_b)):
        for finding in found:
            where = Path(finding.path)
            rel = where.relative_to(root).parts if where.is_relative_to(root) else ()
            name = rel[0] if rel else None
            log = next((d for d in report.logs if name is not None and name in d.name.split(" / ")), report.logs[0])
            log.findings.append((side, finding))


def check_same_layout(layout_a: str, layout_b: str, path_b: Path) -> None:
    if layout_a != layout_b:
        raise StoreLayoutError(expected=f"two stores of one layout ({layout_a})", found=layout_b, path=path_b)


__all__ = ["OK_VERDICTS", "DiffReport", "LogDiff", "Extra", "diff_stores", "compare_byte_logs", "compare_kafka_partitions", "check_same_layout", "MqError"]
