"""validate for Jafka and MetaQ data dirs (spec jafka.md B2-B4, metaq.md C2-C5).

The judging is the store model's (``store.model.legacy.read_store``: the files as each broker's
loader sees them, every message of every segment and how each file ends, judged as the broker's
recovery would, with its codes); this module turns that one reading into validate's report: a
summary per segment file, the findings in the model's order kept to the families chosen, the
bytes checked, progress, and per-partition facts (messages, where valid data ends, where
recovery stops and what it truncates).  Segments run as independent tasks, in a process pool
with ``--jobs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mqtool.ops.validate import FileSummary, Progress, ValidateOptions, ValidationReport, Workers
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.legacy import DataDir
from mqtool.store.model import legacy as lm


def _validate(data: DataDir, layout: str, options: ValidateOptions, progress: Progress | None) -> ValidationReport:
    with Workers(options.jobs) as workers:
        return _read(data, layout, options, progress, workers)


def _read(data: DataDir, layout: str, options: ValidateOptions, progress: Progress | None, workers: Workers) -> ValidationReport:
    report = ValidationReport(layout, str(data.root), options)
    advance = progress or (lambda n: None)

    def run(fn: Callable[[lm.SegmentTask], lm.SegmentResult], tasks: list[lm.SegmentTask]) -> Iterable[lm.SegmentResult]:
        return workers.map(fn, tasks)

    partitions: dict[str, dict[str, Any]] = {}
    for item in lm.read_store(data, layout, run=run):
        if not isinstance(item, lm.SegmentRead):
            for finding in item:
                report.add(finding)
            continue
        task, part, res = item.task, item.partition, item.result
        summary = FileSummary(res.path, "log", res.size, res.records, res.valid_end if res.opened else None)
        report.files.append(summary)
        for finding in res.findings:
            report.add(finding, summary)
        report.bytes_checked += res.size
        advance(res.size)
        fact = partitions.setdefault(
            str(part.path),
            {
                "topic": part.topic,
                "partition": part.partition,
                "directory": part.name,
                "segments": len(part.segments),
                "log_start_offset": part.segments[0].start_offset if part.segments else None,
                "messages": 0,
            },
        )
        if layout == "jafka":
            fact["inner_messages"] = fact.get("inner_messages", 0) + res.inner
        else:
            fact["archives"] = len(part.archives)
        fact["messages"] += res.records
        if task.is_last:
            fact["log_end_offset"] = task.start_offset + res.valid_end
            fact["recovery_end_offset"] = task.start_offset + (res.recovery_end if res.recovery_end is not None else res.size)
            fact["recovery_truncates"] = res.size - (res.recovery_end if res.recovery_end is not None else res.size)
            if layout == "metaq":
                fact["recovery_empty_messages"] = res.empty_messages
    report.facts["partitions"] = list(partitions.values())
    return report


def validate_jafka(path: str | Path, options: ValidateOptions, progress: Progress | None = None) -> ValidationReport:
    data = sj.open_jafka(path)
    report = _validate(data, "jafka", options, progress)
    report.facts["clean_shutdown_marker"] = sj.clean_shutdown_marker(data)
    return report


def validate_metaq(path: str | Path, options: ValidateOptions, progress: Progress | None = None) -> ValidationReport:
    data = sm.open_metaq(path)
    return _validate(data, "metaq", options, progress)


__all__ = ["validate_jafka", "validate_metaq"]
