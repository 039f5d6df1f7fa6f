"""validate: the engine every layout plugs its checks into.

A layout's checker turns a path into a ``ValidationReport``: per-file summaries and findings
(stable codes from ``ops.findings.CODES``).  ``ValidateOptions`` carries what the user chose:
check families, the failing severity, a cap on collected findings, and parallel jobs.

Work is split into independent tasks (one per CommitLog file, one per queue, one per IndexFile)
that run in-process or on worker processes (``jobs``: one set of workers per validation,
:class:`Workers`, shared by its phases), so memory stays flat: a task streams its file and
returns findings plus a few numbers.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mqtool.findings import FAMILIES, Finding, Severity
from mqtool.layouts import Layout, for_layout

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class ValidateOptions:
    checks: frozenset[str] = frozenset(FAMILIES)
    fail_on: Severity = Severity.error
    max_findings: int | None = None
    jobs: int = 1
    commitlog_file_size: int | None = None
    cq_file_size: int | None = None
    index_hash_slot_num: int | None = None
    index_num: int | None = None
    deep: bool = False
    #: Finding codes the operator chose to ignore (``--ignore``): counted apart, never in the verdict.
    ignore: frozenset[str] = frozenset()
    #: Read healthy bytes through the fast columnar path (the precise decoders still name every
    #: finding); False reads everything with the precise decoders (tests compare the two).
    fast: bool = True
    #: RocketMQ: the broker modelled (``--broker-version``, else ``--config``'s hints, else the
    #: store's marks): what findings say of "the broker's recovery" is true for it
    broker_version: str | None = None
    version_hints: tuple[Any, ...] = ()
    config_path: str | None = None
    #: RocketMQ 5.x: the timer wheel's slot width (``timerPrecisionMs`` from ``--config``; None: 1000 ms)
    timer_precision_ms: int | None = None
    #: RocketMQ: broker.conf's ``messageIndexEnable`` (``--config``; None: not given, judged from the store)
    message_index_enable: bool | None = None
    #: RocketMQ: a fold of the records the broker serves, made fresh for each CommitLog file and
    #: fed by that file's one reading (``store.model.commitlog_check.RowsFold``: report counts its
    #: stats from validate's reading); the fed folds are ``ValidationReport.rows``, in file order
    rows: Callable[[], Any] | None = None

    def wants(self, family: str) -> bool:
        return family in self.checks


@dataclass
class FileSummary:
    path: str
    family: str
    size: int
    records: int = 0
    valid_bytes: int | None = None
    errors: int = 0
    warnings: int = 0
    infos: int = 0

    @property
    def status(self) -> str:
        if self.errors:
            return "error"
        if self.warnings:
            return "warning"
        return "ok"

    def count(self, finding: Finding) -> None:
        level = finding.level
        if level is Severity.error:
            self.errors += 1
        elif level is Severity.warning:
            self.warnings += 1
        else:
            self.infos += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "family": self.family,
            "status": self.status,
            "size": self.size,
            "records": self.records,
            "valid_bytes": self.valid_bytes,
            "errors": self.errors,
            "warnings": self.warnings,
            "infos": self.infos,
        }


@dataclass
class ValidationReport:
    layout: str
    root: str
    options: ValidateOptions
    files: list[FileSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"error": 0, "warning": 0, "info": 0})
    truncated: bool = False  # more findings than --max-findings were found
    facts: dict[str, Any] = field(default_factory=dict)
    bytes_checked: int = 0
    #: findings of ``options.ignore`` codes, by code (not listed, not counted in the verdict)
    ignored: dict[str, int] = field(default_factory=dict)
    #: ``options.rows``'s folds, one per CommitLog file read, in file order
    rows: list[Any] = field(default_factory=list)

    def add(self, finding: Finding, summary: FileSummary | None = None) -> None:
        if finding.family not in self.options.checks:
            return
        if finding.code in self.options.ignore:
            self.ignored[finding.code] = self.ignored.get(finding.code, 0) + 1
            return
        self.counts[finding.level.value] += 1
        if summary is not None:
            summary.count(finding)
        cap = self.options.max_findings
        if cap is not None and len(self.findings) >= cap:
            self.truncated = True
            return
        self.findings.append(finding)

    @property
    def failed(self) -> bool:
        rank = self.options.fail_on.rank
        return any(n for level, n in self.counts.items() if Severity(level).rank >= rank)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "root": self.root,
            "ok": not self.failed,
            "fail_on": self.options.fail_on.value,
            "checks": sorted(self.options.checks),
            "counts": dict(self.counts),
            **({"ignored": dict(sorted(self.ignored.items()))} if self.options.ignore else {}),
            "truncated": self.truncated,
            "bytes_checked": self.bytes_checked,
            "facts": self.facts,
            "files": [f.to_dict() for f in self.files],
            "findings": [f.to_dict() for f in self.findings],
        }


#: What a checker calls with the bytes it has just checked (a progress bar's advance).
Progress = Callable[[int], object]

#: A layout's checker: ``(path, options, progress) -> ValidationReport``.
Validator = Callable[..., ValidationReport]


def validators() -> dict[Layout, Validator]:
    """layout -> checker.  Imported here, not at the top: each checker imports this module, and
    ``mqtool --help`` does not load them."""
    from mqtool.ops.validate import kafka as validate_kafka
    from mqtool.ops.validate import legacy as validate_legacy
    from mqtool.ops.validate import rocketmq as validate_rocketmq

    return {
        Layout.ROCKETMQ: validate_rocketmq.validate_rocketmq,
        Layout.KAFKA: validate_kafka.validate_kafka,
        Layout.JAFKA: validate_legacy.validate_jafka,
        Layout.METAQ: validate_legacy.validate_metaq,
    }


def validate_path(path: str | Path, options: ValidateOptions, layout: str, progress: Progress | None = None) -> ValidationReport:
    """Validate ``path`` as ``layout`` with the layout's checker."""
    return for_layout(validators(), layout, "validate")(path, options, progress)


class Workers:
    """The worker processes of one validation (``jobs``), shared by all its phases: started by
    the first phase with more than one task and kept until the validation ends, so that no
    later phase pays for starting and stopping processes (and for warming them up: a fresh
    worker's first task runs slower).  With ``jobs`` 1 (or one CPU) there are none and every
    task runs in this process.  A context manager: leaving it stops the workers (tasks not
    started are cancelled)."""

    def __init__(self, jobs: int) -> None:
        self._count = min(jobs, os.cpu_count() or 1)
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T], /) -> Iterator[R]:
        """``map(fn, items)``, results in order: on the workers when there are several items
        (else in this process, lazily)."""
        items = list(items)
        if self._count <= 1 or len(items) <= 1:
            return map(fn, items)
        if self._pool is not None:
            return _in_order([self._pool.submit(fn, item) for item in items])
        # The workers fork at the first submit.  Frozen, the objects they share with this process
        # are left alone by their garbage collector, which would otherwise write to every page
        # holding one (a copy of each page, ~30 ms of a worker's first task).
        gc.freeze()
        try:
            self._pool = ProcessPoolExecutor(max_workers=self._count)
            futures = [self._pool.submit(fn, item) for item in items]
        finally:
            gc.unfreeze()
        return _in_order(futures)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _in_order(futures: list[Future[R]]) -> Iterator[R]:
    try:
        for future in futures:
            yield future.result()
    finally:
        for future in futures:
            future.cancel()


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
