"""validate for Kafka log dirs, partition dirs and segment files (``LogSegment``, ``OffsetIndex``, ``TimeIndex``, ``LogLoader.load``).

The judging is the store model's (``store.model.kafka.read_store``: what the broker's loader and
``LogSegment.recover`` make of the files, its phases -- files, segments, partitions, the log dir
-- and its codes); this module turns that one reading into validate's report: a summary per
``.log`` and index file (records, valid bytes, its findings counted), the findings in the
model's order kept to the families chosen (``--checks``), the bytes checked, progress, and the
facts (kind, per-partition log start and end offsets, segment, entry and record counts).
Segments run as independent tasks, in a process pool with ``--jobs``.  ``facts["broker"]``
names the Kafka version modelled (``store.model.kafka_broker``: ``--broker-version``, else the
store's marks, else the newest) and the recovery its next start runs (normal with
``.kafka_cleanshutdown``, else abnormal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.ops.validate import FileSummary, Progress, ValidateOptions, ValidationReport, Workers
from mqtool.store import kafka as ks
from mqtool.store.model import kafka as km
from mqtool.store.model import kafka_broker as kb
from mqtool.store.model.kafka import SegmentResult


def validate_kafka(path: str | Path, options: ValidateOptions, progress: Progress | None = None) -> ValidationReport:
    with Workers(options.jobs) as workers:
        return _validate_kafka(path, options, progress, workers)


def _validate_kafka(path: str | Path, options: ValidateOptions, progress: Progress | None, workers: Workers) -> ValidationReport:
    store = ks.open_kafka(path)
    broker = kb.resolve_broker(store, options.broker_version)
    report = ValidationReport("kafka", str(store.root), options)
    advance = progress or (lambda n: None)

    def run(fn: Callable[[km.Task], SegmentResult], tasks: list[km.Task]) -> Iterable[SegmentResult]:
        return workers.map(fn, tasks)

    summaries: dict[str, FileSummary] = {}
    partitions = {}
    totals = {"segments": 0, "entries": 0, "records": 0}
    for item in km.read_store(store, checks=options.checks, deep=options.deep, jobs=options.jobs, run=run):
        if isinstance(item, km.Placed):
            report.add(item.finding, summaries.get(item.file) if item.file is not None else None)
        elif isinstance(item, km.PartitionRead):
            partitions[item.name] = {"log_start_offset": item.log_start_offset, "log_end_offset": item.log_end_offset, "segments": item.segments}
        elif isinstance(item.task, km.DeepRangeTask):  # a share of a big segment's record checks
            res = item.result
            summary = summaries[res.path]
            summary.records += res.records
            totals["records"] += res.records
            for finding in res.findings:
                report.add(finding, summary)
        else:
            res = item.result
            summary = FileSummary(res.path, "log", res.size, res.records if options.deep else res.entries, res.valid_end)
            summaries[res.path] = summary
            report.files.append(summary)
            index_summaries = {}
            for ir in res.indexes:
                s = FileSummary(ir.path, "index", ir.size, ir.entries, ir.valid_bytes)
                index_summaries[ir.path] = s
                report.files.append(s)
            for finding in res.findings:
                report.add(finding, index_summaries.get(finding.path, summary))
            report.bytes_checked += res.size
            totals["entries"] += res.entries
            totals["records"] += res.records
            advance(res.size)
            if item.counted:
                totals["segments"] += 1
    report.facts.update(
        {
            "kind": store.kind,
            "partitions": partitions,
            "segments": totals["segments"],
            "entries": totals["entries"],
            "records": totals["records"],
            "deep": options.deep,
        }
    )
    if store.kind != "segment":  # the broker whose load the findings speak of, and the recovery its next start runs
        clean = store.log_dir_file(cpf.CLEAN_SHUTDOWN) is not None
        report.facts["broker"] = {**broker.to_dict(), "recovery": "normal" if clean else "abnormal"}
    return report


__all__ = ["validate_kafka"]
