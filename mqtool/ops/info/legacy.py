"""info for Jafka and MetaQ data dirs: partitions, segments, offset ranges, how the data ends.

Cheap like RocketMQ's info: names and sizes of every file, one walk of each partition's last
segment (the one the broker recovers at start-up) to find where its valid data ends, and a hop
over the length fields of every earlier live segment (headers only: no payload, no checksum) to
see that its messages end exactly at its end -- nothing ever repairs those segments, and a
damaged length there hides the rest of the segment from consumers.  Archives are measured from
their names and sizes (a ``.meta.zip`` from its central directory), not read.

``errors`` holds damage met (located, what was expected and found: the command exits 1);
``problems`` holds what is worth a look but not damage (a torn or zero tail the broker's recovery
repairs, names the broker rejects, links).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import MqError
from mqtool.ops import log_findings
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.legacy import (
    DataDir,
    Framing,
    Partition,
    Segment,
    SegmentWalk,
    end_damage,
    hop_end,
)


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
    archived: dict | None = None


@dataclass
class LegacyInfo:
    layout: str
    root: str
    kind: str  # data-dir, partition or segment
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
    findings: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        doc = dataclasses.asdict(self)
        if self.layout == "jafka":
            for p in doc["partitions"]:
                p.pop("archived")
        else:
            doc.pop("clean_shutdown_marker")
        return doc


def _check_earlier(seg: Segment, opener, framing: Framing, errors: list[MqError]) -> None:
    """A live segment before the last: do its length fields lead exactly to its end?"""
    if not seg.size:
        return
    try:
        with opener(seg) as reader:
            stop = hop_end(reader, framing)
            if stop >= reader.size:
                return
            walk = SegmentWalk(reader, framing, stop, check_crc=False)
            for _ in walk:
                pass
            damage = walk.error if walk.error is not None else end_damage(reader, framing, walk.end, last=False)
    except MqError as exc:
        damage = exc
    if damage is not None:
        errors.append(damage)


def _partition_info(data: DataDir, part: Partition, problems: list[str], errors: list[MqError]) -> PartitionInfo:
    segs = part.segments
    framing = sj.FRAMING if data.layout == "jafka" else sm.FRAMING
    opener = sj.open_segment if data.layout == "jafka" else sm.open_segment
    max_offset = end_kind = None
    last = part.last
    for seg in segs[:-1]:
        _check_earlier(seg, opener, framing, errors)
    if last is not None:
        try:
            with opener(last) as reader:
                walk = SegmentWalk(reader, framing)
                for _ in walk:
                    pass
                damage = walk.error if walk.error is not None else end_damage(reader, framing, walk.end, last=True)
            max_offset = last.start_offset + walk.valid_end
            end_kind = walk.end.kind if walk.end is not None else "corrupt"
            if damage is not None:
                errors.append(damage)
            elif walk.end is not None and walk.end.kind != "eof":
                problems.append(f"{last.path}:{walk.end.position}: the data ends in {walk.end.kind} bytes; `mqtool validate` explains them")
        except MqError as exc:
            errors.append(exc)
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
        for a in part.archives:
            if a.size is None:
                problems.append(f"{a.path}: the zip archive's directory cannot be read")
    return info


def _info(data: DataDir, marker: bool | None) -> LegacyInfo:
    problems: list[str] = list(data.notes)
    errors: list[MqError] = []
    partitions = [_partition_info(data, p, problems, errors) for p in data.partitions]
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
    problems, texts, met = log_findings.merged(data.root, data.layout, problems, errors)
    return LegacyInfo(
        layout=data.layout,
        root=str(data.root),
        kind=data.kind,
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
