"""info for Jafka (and Kafka 0.7) and MetaQ data dirs: partitions, segments, offset ranges, how the data ends.

The names and sizes of every file, and the store model's one reading of the segments
(``store.model.legacy.read_store``, each log byte read once): where each partition's valid data
ends and how its last segment ends come from it, and so do the errors and warnings validate
states (a damaged length in an earlier segment, which hides the rest of it from consumers, a
torn tail the broker's recovery repairs).  Archives are measured from their names and sizes (a
``.meta.zip`` from its central directory) and read like the live segments.

``errors`` holds damage met (``CODE path:position: message``, as validate: the command exits 1);
``problems`` holds what is worth a look but not damage (a torn or zero tail the broker's recovery
repairs, names the broker rejects, links).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.findings import Finding
from mqtool.ops import log_findings
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.legacy import DataDir, Partition
from mqtool.store.model import legacy as lm


@dataclass
class PartitionInfo:
    topic: str | None
    partition: int | None
    directory: str  # the partition directory's name (it lives in ``root``, or is ``root``)
    segments: int
    bytes_on_disk: int  # segments and archives
    log_start_offset: int | None  # the first live segment's start offset
    log_end_offset: int | None  # where valid data ends: the offset the next message would take
    end_kind: str | None  # how the last segment's data ends: eof, zeros, partial, corrupt, unreadable
    last_segment: str | None
    zero_length_files: list[str] = field(default_factory=list)
    #: MetaQ: ``{"files", "bytes", "start_offset", "end_offset"}`` of the .meta.arc/.meta.zip archives
    archived: dict[str, int | None] | None = None


@dataclass
class LegacyInfo:
    layout: str
    root: str
    kind: str  # data-dir, partition or segment
    #: Jafka layout: the broker its files are named for, ``jafka`` or ``kafka07`` (Kafka 0.7)
    variant: str | None
    clean_shutdown_marker: bool | None  # Jafka: .jafka_cleanshutdown present
    topics: int
    segments: int
    bytes_on_disk: int
    partitions: list[PartitionInfo]
    unexpected: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: damaged data met: ``path:position: expected X, found Y``, and every error validate finds
    #: in the data (``CODE path:position: message``)
    errors: list[str] = field(default_factory=list)
    #: validate's errors and warnings (``ops.log_findings``); the warnings also in ``problems``
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self)
        if self.layout == "jafka":
            for p in doc["partitions"]:
                p.pop("archived")
        else:
            doc.pop("clean_shutdown_marker")
            doc.pop("variant")
        return doc


def _partition_info(data: DataDir, part: Partition, ends: dict[str, lm.SegmentRead]) -> PartitionInfo:
    """A partition's facts; ``ends``: the reading of each segment by path (its last segment's
    tells where the valid data ends and how)."""
    segs = part.segments
    max_offset = end_kind = None
    last = part.last
    read = ends.get(str(last.path)) if last is not None else None
    if last is not None and read is not None:
        res = read.result
        if res.opened:
            max_offset = last.start_offset + res.valid_end
            end_kind = res.end_kind or "corrupt"
        else:
            end_kind = "unreadable"
    info = PartitionInfo(
        topic=part.topic,
        partition=part.partition,
        directory=part.path.name,
        segments=len(segs),
        bytes_on_disk=sum(s.file_size for s in (*segs, *part.archives)),
        log_start_offset=segs[0].start_offset if segs else None,
        log_end_offset=max_offset,
        end_kind=end_kind,
        last_segment=last.name if last is not None else None,
        zero_length_files=[s.name for s in segs if s.size == 0],
    )
    if data.layout == "metaq" and part.archives:
        info.archived = {
            "files": len(part.archives),
            "bytes": sum(a.file_size for a in part.archives),
            "start_offset": min(a.start_offset for a in part.archives),
            "end_offset": max((a.end_offset for a in part.archives if a.end_offset is not None), default=None),
        }
    return info


def _info(data: DataDir, marker: bool | None) -> LegacyInfo:
    problems: list[str] = list(data.notes)
    found: list[Finding] = []
    reads: dict[str, lm.SegmentRead] = {}
    for item in lm.read_store(data, data.layout):
        if isinstance(item, lm.SegmentRead):
            reads[item.task.path] = item
            found.extend(item.result.findings)
        else:
            found.extend(item)
    partitions = [_partition_info(data, p, reads) for p in data.partitions]
    for p in data.partitions:
        last = p.last
        read = reads.get(str(last.path)) if last is not None else None
        end = read.result.tail() if read is not None else None
        if end is not None:
            problems.append(f"{read.task.path}:{end.position}: the data ends in {end.kind} bytes; `mqtool validate` explains them")  # type: ignore[union-attr]
        for a in p.archives:
            if a.size is None:
                problems.append(f"{a.path}: the zip archive's directory cannot be read")
    for path, reason in data.bad_dirs:
        problems.append(f"{path}: {reason}")
    for p in data.partitions:
        for bad in p.bad_names:
            problems.append(f"{bad}: not a number before the suffix: the broker fails to load this partition")
        for path, kind in p.irregular:
            problems.append(f"{path}: {kind} named like a segment: not read")
    for link in [*data.links, *(link for p in data.partitions for link in p.links)]:
        problems.append(f"{link}: a symbolic link: not followed")
    unexpected = [str(p) for p in data.unexpected]
    unexpected += [str(p) for p in data.ignored_dirs if p.name != sm.TRANSACTIONS_DIR]
    for p in data.partitions:
        unexpected += [str(u) for u in p.unexpected]
    problems, texts, met = log_findings.merged(data.root, data.layout, problems, [], log_findings.select(found))
    return LegacyInfo(
        layout=data.layout,
        root=str(data.root),
        kind=data.kind,
        variant=data.variant,
        clean_shutdown_marker=marker,
        topics=len({p.topic for p in data.partitions}),
        segments=sum(len(p.segments) for p in data.partitions),
        bytes_on_disk=sum(p.bytes_on_disk for p in partitions),
        partitions=partitions,
        unexpected=unexpected,
        problems=problems,
        errors=texts,
        findings=[f.to_dict() for f in met],
    )


def jafka_info(path: str | Path) -> LegacyInfo:
    data = sj.open_jafka(path)
    return _info(data, sj.clean_shutdown_marker(data))


def metaq_info(path: str | Path) -> LegacyInfo:
    return _info(sm.open_metaq(path), None)
