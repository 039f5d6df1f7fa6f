"""What the ``kafka_log``, ``jafka_log`` and ``metaq_log`` sources share: partition directories,
segment files, and the walk of one segment's byte range into rows.

The three layouts keep a log per partition directory (``topic-N``, Kafka's rule:
``formats.kafka.checkpoint_file.parse_partition_dir_name``) of segment files named by their base
offset.  ``plan_partitioned`` gives a partition per ``splitSize`` byte range of every segment (a
``.meta.zip`` archive whole); ``read_framed`` takes a range's records, findings and end from the
store model's range reading (``store.model.framed.read_range``) under the family's framing
(``store.model.kafka_reads``, ``store.model.legacy``) and turns each record into rows with the family's
``rows`` function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from mqtool.errors import MqError, StoreLayoutError
from mqtool.formats.data_end import DataEnd
from mqtool.formats.kafka import checkpoint_file as kcp
from mqtool.pipeline import files as fs
from mqtool.pipeline.files import AnyFile
from mqtool.pipeline.sources.common import (
    Batches,
    FilePart,
    ReadOptions,
    end_row,
    problem_row,
    ranges,
    roots,
)
from mqtool.pipeline.walk import Problem
from mqtool.store.model import legacy as model_legacy
from mqtool.store.model.framed import RangeFraming, RangeProblem, read_range

#: A segment's base offset from its file name (None: not a segment of the layout).
Accept = Callable[[str], "int | None"]
#: The rows of one record: ``rows(part, position, record, opts)``.
RowsOf = Callable[[FilePart, int, object, ReadOptions], Iterator[dict[str, object]]]


def _partition_of(name: str) -> tuple[str, int] | None:
    """``topic-N`` → (topic, N) (Kafka's rule; deleted/future/stray replicas are skipped)."""
    try:
        parsed = kcp.parse_partition_dir_name(name)
    except MqError:
        return None
    return None if parsed.suffix else (parsed.topic, parsed.partition)


def partition_files(path: str, accept: Accept, topics: frozenset[str] | None) -> list[tuple[str | None, int | None, list[tuple[fs.Entry, int]]]]:
    """``(topic, partition, [(segment file, base offset)])`` for a log/data dir, a partition dir
    or one file; ``accept(name)`` gives a segment's base offset (None: not a segment)."""
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not entry.is_dir:
        parent = path.rstrip("/").rsplit("/", 2)
        owner = _partition_of(parent[-2]) if len(parent) >= 2 else None
        base = accept(name)
        return [(owner[0] if owner else None, owner[1] if owner else None, [(entry, base or 0)])]

    def segments(directory: str) -> list[tuple[fs.Entry, int]]:
        found: list[tuple[fs.Entry, int]] = []
        for e in fs.listdir(directory):
            if not e.is_dir:
                base = accept(e.name)
                if base is not None:
                    found.append((e, base))
        return sorted(found, key=lambda t: (t[1], t[0].name))

    own = segments(path)
    owner = _partition_of(name)
    if own or owner is not None:
        if topics is not None and (owner is None or owner[0] not in topics):
            return []
        return [(owner[0] if owner else None, owner[1] if owner else None, own)]
    out: list[tuple[str | None, int | None, list[tuple[fs.Entry, int]]]] = []
    for child in fs.listdir(path):
        if not child.is_dir:
            continue
        owner = _partition_of(child.name)
        if owner is None or (topics is not None and owner[0] not in topics):
            continue
        out.append((owner[0], owner[1], segments(child.path)))
    return out


def plan_partitioned(opts: ReadOptions, accept: Accept, splittable: Callable[[str], bool] = lambda name: True) -> list[FilePart]:
    """A partition per ``splitSize`` byte range of every segment (a segment ``splittable`` refuses: whole)."""
    parts: list[FilePart] = []
    for source, root in roots(opts):
        for topic, partition, segs in partition_files(root, accept, opts.topics):
            for entry, base in segs:
                spans = ranges(entry.size, opts.split_size) if splittable(entry.name) else ([(0, entry.size)] if entry.size else [])
                for start, stop in spans:
                    parts.append(FilePart(source, entry.path, base, start, stop, topic=topic, partition=partition))
    return parts


def _open_segment(path: str) -> AnyFile | model_legacy.MemoryFile:
    """A segment to read: a ``.meta.zip`` archive inflated in memory (the store model's), else the file."""
    return model_legacy.open_range_segment(path, fs.open_file)


def read_framed(part: FilePart, opts: ReadOptions, schema: pa.Schema, framing: RangeFraming, rows: RowsOf) -> Iterator[pa.RecordBatch]:
    """The rows of a partition of one segment: ``rows`` of each record ``read_range`` yields
    (with ``withProblems``, each carrying the code of the problem it was kept despite: the
    ``kept`` problem just before it, at its position), then its
    problem and end rows (a segment that cannot be opened, a ``.meta.zip`` that does not inflate:
    one problem row)."""
    out = Batches(schema)
    try:
        f = _open_segment(part.path)
    except MqError as exc:
        if opts.with_problems:
            out.add(problem_row(part, 0, Problem(framing.region_code, exc.position, str(exc))))
            batch = out.flush()
            if batch is not None:
                yield batch
        return
    with f:
        stop = min(f.size, part.stop)
        kept: tuple[int, str] | None = None  # the last problem a record was kept despite: (position, code)
        for event in read_range(framing, f, part.start, stop):
            if type(event) is tuple:  # a record: (position, item)
                pos, item = event
                finding = kept[1] if kept is not None and kept[0] == pos else None
                for row in rows(part, pos, item, opts):
                    if opts.with_problems:
                        row["row_kind"] = "record"
                        row["finding"] = finding
                    batch = out.add(row)
                    if batch is not None:
                        yield batch
                continue
            if isinstance(event, RangeProblem):
                if event.kept:
                    kept = (event.at, event.code)
                if not opts.with_problems:
                    continue
                row = problem_row(part, event.at, Problem(event.code, event.position, event.message, event.length, kept=event.kept))
            elif isinstance(event, DataEnd):
                if not opts.with_problems:
                    continue
                row = end_row(part, event.position, event.kind)
            else:
                continue
            row["topic"] = part.meta.get("topic")
            row["partition"] = part.meta.get("partition")
            if "batch_position" in out.names:
                row["batch_position"] = row.pop("position")
            batch = out.add(row)
            if batch is not None:
                yield batch
    last = out.flush()
    if last is not None:
        yield last
