"""dump: RocketMQ's compaction store (``compactionlog``: the compaction logs' records,
``compactioncq``: the sparse consume queues' units).

The engines take every answer from the store model (``store.model.compaction``): the records of
each queue's compaction log as the CommitLog walker reads them, the units of its sparse consume
queue, and the findings on their files (validate's codes); they yield items and collect findings,
and never print.  A path names a store root, ``compaction/``, ``compactionLog/`` or
``compactionCq/``, a topic's or a queue's directory, or one file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from mqtool.findings import Finding
from mqtool.formats.rocketmq import compaction as cf
from mqtool.store.files import is_directory
from mqtool.store.model import compaction as model


def _targets(path: Path, want: str, topic: str | None, queue_id: int | None) -> list[tuple[str, int, Path]]:
    _root, targets = model.resolve(path, want)
    return [(t, q, p) for t, q, p in targets if (topic is None or t == topic) and (queue_id is None or q == queue_id)]


@dataclass
class CompactionLogDump:
    """The records of the compaction logs PATH names, queue by queue in offset order, at most
    ``limit``; ``findings``: what the store model states about the files walked."""

    path: Path
    topic: str | None = None
    queue_id: int | None = None
    limit: int | None = None
    findings: list[Finding] = field(default_factory=list)
    records: int = 0

    def _walk(self) -> Iterator[model.RecordAt]:
        for topic, qid, target in _targets(self.path, "log", self.topic, self.queue_id):
            walk = model.LogWalk(topic, qid, model.segments_of(target), directory=target if is_directory(target) else None)
            try:
                yield from walk
            finally:
                self.findings.extend(walk.findings)
                self.records += walk.records

    def __iter__(self) -> Iterator[model.RecordAt]:
        yield from islice(self._walk(), self.limit)  # at most ``limit`` (None: all), nothing read past it


@dataclass
class CompactionCqDump:
    """The units of the sparse consume queues PATH names, queue by queue, at most ``limit``."""

    path: Path
    topic: str | None = None
    queue_id: int | None = None
    limit: int | None = None
    findings: list[Finding] = field(default_factory=list)

    def _walk(self) -> Iterator[tuple[str, int, model.UnitAt]]:
        for topic, qid, target in _targets(self.path, "cq", self.topic, self.queue_id):
            walk = model.CqWalk(model.segments_of(target))
            try:
                for at in walk:
                    yield topic, qid, at
            finally:
                self.findings.extend(walk.findings)

    def __iter__(self) -> Iterator[tuple[str, int, model.UnitAt]]:
        yield from islice(self._walk(), self.limit)


def unit_row(topic: str, queue_id: int, at: model.UnitAt) -> dict[str, Any]:
    """One unit as the documented ``dump compactioncq`` row."""
    u = at.unit
    return {
        "file": str(at.path),
        "position": at.position,
        "topic": topic,
        "queue_id": queue_id,
        "queue_offset": u.msg_base_offset,
        "compaction_offset": u.commitlog_offset,
        "size": u.size,
        "tags_code": u.tags_code,
        "store_timestamp": u.store_time,
        "batch_size": u.batch_size,
        "compacted_offset": u.compacted_offset,
        "reserved": u.reserved,
    }


__all__ = ["CompactionLogDump", "CompactionCqDump", "unit_row", "cf"]
