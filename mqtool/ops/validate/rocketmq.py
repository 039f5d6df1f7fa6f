"""validate for RocketMQ store roots (CommitLog, ConsumeQueue, IndexFile, StoreCheckpoint, config,
the 5.x timer and compaction stores).

The judging is the store model's (``store.model.rocketmq_read.read_store``: its phases -- files,
CommitLog, ConsumeQueues, IndexFiles, checkpoint and config, timer, compaction -- and its codes);
this module turns that one reading into validate's report: a summary per file (records, valid
bytes, its findings counted), the findings in the model's order kept to the families chosen
(``--checks``), the bytes checked, progress, the facts, and the folds ``ValidateOptions.rows``
asked for.  Tasks run in a process pool with ``--jobs``.  ``facts["broker"]`` names the broker
modelled (``store.model.rocketmq_broker``), and the findings say what its recovery does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from mqtool.ops.validate import FileSummary, Progress, ValidateOptions, ValidationReport, Workers
from mqtool.store import rocketmq as rmq
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import rocketmq_broker as brokers
from mqtool.store.model import rocketmq_read as rr

T = TypeVar("T")
R = TypeVar("R")


def validate_rocketmq(path: str | Path, options: ValidateOptions, progress: Progress | None = None) -> ValidationReport:
    with model_cl.key_table_directory() as keys_dir, Workers(options.jobs) as workers:
        report = _validate_rocketmq(path, options, progress, keys_dir if options.fast and options.wants("index") else None, workers)
    # the broker modelled, and what the findings say of its recovery made true for it
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    broker = brokers.resolve_broker(store.root, options.broker_version, options.version_hints, options.config_path)
    report.facts["broker"], report.findings = brokers.as_the_broker_sees_it(store, broker, report.findings)
    return report


def _validate_rocketmq(path: str | Path, options: ValidateOptions, progress: Progress | None, keys_dir: str | None, workers: Workers) -> ValidationReport:
    store = rmq.open_store(path, commitlog_file_size=options.commitlog_file_size)
    report = ValidationReport("rocketmq", str(store.root), options)
    advance = progress or (lambda n: None)

    def run(fn: Callable[[T], R], tasks: list[T], /) -> Iterable[R]:
        return workers.map(fn, tasks)

    summaries: dict[str, FileSummary] = {}
    reading = rr.read_store(
        store,
        checks=options.checks,
        jobs=options.jobs,
        run=run,
        listed=lambda: report.findings,
        fast=options.fast,
        cq_file_size=options.cq_file_size,
        index_hash_slot_num=options.index_hash_slot_num,
        index_num=options.index_num,
        message_index_enable=options.message_index_enable,
        timer_precision_ms=options.timer_precision_ms,
        keys_dir=keys_dir,
        rows=options.rows,
    )
    for item in reading:
        if isinstance(item, rr.Placed):
            report.add(item.finding, summaries.get(item.file) if item.file is not None else None)
        elif isinstance(item, rr.FileRead):
            summary = summaries[item.path] = FileSummary(item.path, item.family, item.size, item.records, item.valid_bytes)
            report.files.append(summary)
            if item.rows is not None:
                report.rows.append(item.rows)
            if item.checked is not None:
                report.bytes_checked += item.checked
                advance(item.checked)
        else:
            report.facts[item.name] = item.value
    return report


__all__ = ["validate_rocketmq"]
