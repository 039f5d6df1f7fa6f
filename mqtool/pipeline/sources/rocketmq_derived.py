"""The ``rocketmq_consumequeue`` and ``rocketmq_index`` sources: ConsumeQueue units and IndexFile
entries, one row each.

ConsumeQueue files are read a queue at a time (``plan_consumequeue`` groups whole queues into
partitions of about ``splitSize / ROW_EQUIVALENT_BYTES`` units): a queue's units go on file after
file up to the first unit that is not one (a negative commitlog offset or a size that is not
positive, where upstream ``ConsumeQueue.recover`` stops), fillers and ConsumeQueueExt addresses
marked, the ext unit's tagsCode read from ``consumequeue_ext`` (upstream ``ConsumeQueueExt``).
IndexFile entries are planned as ranges of used entries (the header's ``indexCount``, as upstream
``IndexFile`` counts them) and read a column at a time, each entry's timestamp as upstream
``IndexFile.selectPhyOffset`` computes it (``beginTimestamp + timeDiff * 1000``).  Both are fixed-size
20-byte units decoded in bulk by ``formats.rocketmq.unit_columns``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from mqtool.errors import MqError, StoreLayoutError
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.pipeline import files as fs
from mqtool.pipeline.sources.commitlog import rmq_root_dir
from mqtool.pipeline.sources.common import FilePart, ReadOptions, constant, roots
from mqtool.pipeline.sources.schema import BATCH_ROWS, ROW_EQUIVALENT_BYTES
from mqtool.store.model import consume_queue as model_cq
from mqtool.store.model import index as model_idx

#: One queue of a ConsumeQueue partition: topic, queue id, ``(path, base, size)`` of its files,
#: its ``consumequeue_ext`` directory (None: none).
Queue = tuple[str | None, int | None, list[tuple[str, int, int]], str | None]

# --- ConsumeQueue ----------------------------------------------------------------------------


def consumequeue_queues(path: str, topics: frozenset[str] | None) -> list[tuple[str | None, int | None, list[fs.Entry], str | None]]:
    """``(topic, queue id, segment files, ext dir)`` for a store root, ``consumequeue/``, a topic
    dir, a queue dir or one file."""
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    parts = path.rstrip("/").split("/")
    if not entry.is_dir:
        qid = int(parts[-2]) if len(parts) >= 2 and parts[-2].lstrip("-").isdigit() else None
        topic = parts[-3] if qid is not None and len(parts) >= 3 else None
        return [(topic, qid, [entry], None)]
    root_cq = rmq_root_dir(path, "consumequeue")
    if root_cq is not None:
        path, parts = root_cq, root_cq.rstrip("/").split("/")
    children = fs.listdir(path)
    segs = [c for c in children if not c.is_dir and segnames.ROCKETMQ_FILE_NAME.match(c.name)]
    if segs:  # a queue directory
        qid = int(parts[-1]) if parts[-1].lstrip("-").isdigit() else None
        topic = parts[-2] if len(parts) >= 2 else None
        return [(topic, qid, sorted(segs, key=lambda e: int(e.name)), _ext_dir(path, topic, qid))]
    dirs = [c for c in children if c.is_dir]
    if dirs and all(c.name.lstrip("-").isdigit() for c in dirs):  # a topic directory
        topic_dirs = [(parts[-1], path)]
    else:
        topic_dirs = [(c.name, c.path) for c in dirs]
    out: list[tuple[str | None, int | None, list[fs.Entry], str | None]] = []
    for topic, tdir in topic_dirs:
        if topics is not None and topic not in topics:
            continue
        for q in fs.listdir(tdir):
            if q.is_dir and q.name.lstrip("-").isdigit():
                qsegs = sorted((e for e in fs.listdir(q.path) if not e.is_dir and segnames.ROCKETMQ_FILE_NAME.match(e.name)), key=lambda e: int(e.name))
                out.append((topic, int(q.name), qsegs, _ext_dir(q.path, topic, int(q.name))))
    return out


def _ext_dir(queue_dir: str, topic: str | None, qid: int | None) -> str | None:
    """``<root>/consumequeue_ext/<topic>/<qid>`` when the queue is ``<root>/consumequeue/<topic>/<qid>``."""
    parts = queue_dir.rstrip("/").split("/")
    if topic is None or qid is None or len(parts) < 3 or parts[-3] != "consumequeue":
        return None
    ext = "/".join([*parts[:-3], "consumequeue_ext", topic, str(qid)])
    entry = fs.stat_path(ext)
    return ext if entry is not None and entry.is_dir else None


def _split_rows(opts: ReadOptions) -> int:
    """Rows of 20-byte units or entries per partition (see ``ROW_EQUIVALENT_BYTES``)."""
    return max(1, opts.split_size // ROW_EQUIVALENT_BYTES)


def plan_consumequeue(opts: ReadOptions) -> list[FilePart]:
    """One partition per group of queues of about ``splitSize / ROW_EQUIVALENT_BYTES`` units
    (a queue is never split: its end is where the first file that does not end full stops)."""
    parts: list[FilePart] = []
    budget = _split_rows(opts) * cqf.CQ_UNIT_SIZE
    for source, root in roots(opts):
        group: list[Queue] = []
        size = 0
        for topic, qid, segs, ext in consumequeue_queues(root, opts.topics):
            if not opts.wants(topic):
                continue
            group.append((topic, qid, [(s.path, int(s.name) if segnames.ROCKETMQ_FILE_NAME.match(s.name) else 0, s.size) for s in segs], ext))
            size += sum(s.size for s in segs)
            if size >= budget:
                parts.append(FilePart(source, root, queues=group))
                group, size = [], 0
        if group:
            parts.append(FilePart(source, root, queues=group))
    return parts


class _ExtUnits(model_cq.ExtUnits):
    """The ConsumeQueueExt files of one queue (a directory of the source's file system)."""

    def __init__(self, directory: str) -> None:
        files = [(int(e.name), e.path, e.size) for e in fs.listdir(directory) if not e.is_dir and segnames.ROCKETMQ_FILE_NAME.match(e.name)]
        super().__init__(files, fs.open_file)


def _cq_batch(
    part: FilePart,
    schema: pa.Schema,
    topic: str | None,
    qid: int | None,
    path: str,
    base: int,
    start: int,
    units: np.ndarray,
    ext: _ExtUnits | None,
) -> pa.RecordBatch:
    """The rows of ConsumeQueue units ``units`` (``cq_units``, the first at position ``start``
    of the file named ``base``), built a column at a time; ext addresses are read unit by unit."""
    count = len(units)
    position = start + np.arange(count, dtype=np.int64) * cqf.CQ_UNIT_SIZE
    offset = units["offset"].astype(np.int64)
    size = units["size"].astype(np.int32)
    tags = units["tags_code"].astype(np.int64)
    ext_address = tags <= cqf.EXT_MAX_ADDRESS
    filler = (offset == 0) & (size == cqf.FILLER_SIZE) & (tags == 0)
    kind = np.where(filler, 0, np.where(ext_address, 1, 2))
    ext_tags = pa.nulls(count, pa.int64())
    ext_missing = np.zeros(count, dtype=bool)
    with_ext = np.flatnonzero(ext_address)
    if ext is not None and len(with_ext):
        found = [ext.tags_code(cqf.undecorate_ext_address(int(tags[i]))) for i in with_ext.tolist()]
        values = np.zeros(count, dtype=np.int64)
        mask = np.ones(count, dtype=bool)
        for i, code in zip(with_ext.tolist(), found):
            if code is None:
                ext_missing[i] = True
            else:
                values[i], mask[i] = code, False
        ext_tags = pa.array(values, mask=mask)
    columns = {
        "source": constant(part.source, pa.string(), count),
        "file": constant(path, pa.string(), count),
        "position": pa.array(position),
        "topic": constant(topic, pa.string(), count),
        "queue_id": constant(qid, pa.int32(), count),
        "queue_offset": pa.array((base + position) // cqf.CQ_UNIT_SIZE),
        "commitlog_offset": pa.array(offset),
        "size": pa.array(size),
        "tags_code": pa.array(tags),
        "ext_offset": pa.array(np.where(ext_address, tags - (-(1 << 63)), 0), mask=~ext_address),
        "kind": pa.array(["filler", "ext-address", "message"]).take(pa.array(kind)),
        "ext_tags_code": ext_tags,
        "ext_missing": pa.array(ext_missing),
    }
    return pa.RecordBatch.from_arrays([columns[name].cast(f.type) for name, f in zip(schema.names, schema)], schema=schema)


def read_consumequeue(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The units of each queue of the partition, file after file until the queue's data ends
    (the first unit that is not one, as the broker and ``dump consumequeue`` see it)."""
    for topic, qid, segs, ext_dir in part.meta["queues"]:
        ext = _ExtUnits(ext_dir) if ext_dir else None
        for path, base, size in segs:
            if size == 0:
                continue
            with fs.open_file(path) as f:
                read = model_cq.read_cq_file(f)
            units, kept = read.units, len(read.units)
            for first in range(0, kept, BATCH_ROWS):
                yield _cq_batch(part, schema, topic, qid, path, base, first * cqf.CQ_UNIT_SIZE, units[first : min(first + BATCH_ROWS, kept)], ext)
            if read.queue_ends:
                break  # the queue ends in this file


# --- IndexFile -------------------------------------------------------------------------------


def index_files(path: str) -> list[fs.Entry]:
    """The IndexFiles of a store root, an ``index/`` directory, or one file."""
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    if not entry.is_dir:
        return [entry]
    directory = rmq_root_dir(path, "index") or path
    return [e for e in fs.listdir(directory) if not e.is_dir]


def plan_index(opts: ReadOptions) -> list[FilePart]:
    """Ranges of ``splitSize / ROW_EQUIVALENT_BYTES`` used entries per partition."""
    parts: list[FilePart] = []
    per_part = _split_rows(opts)
    for source, root in roots(opts):
        for entry in index_files(root):
            with fs.open_file(entry.path) as f:
                try:
                    header, geo = model_idx.read_layout(f)  # what validate/query read (IndexFileView)
                except MqError:
                    continue  # not an IndexFile (validate reports RMQ-IDX-GEOMETRY)
            count = min(header.effective_index_count, geo.index_num)
            for first in range(1, max(count, 1), per_part):
                parts.append(
                    FilePart(
                        source,
                        entry.path,
                        0,
                        first,
                        min(first + per_part, count),
                        slots=geo.hash_slot_num,
                        entries_position=geo.entries_position,
                        begin_timestamp=header.begin_timestamp,
                    )
                )
    return parts


def read_index(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The used entries ``start .. stop`` of an IndexFile, a column at a time."""
    slots = part.meta["slots"]
    begin = part.meta["begin_timestamp"]
    entries_at = part.meta["entries_position"]
    size = idxf.INDEX_ENTRY_SIZE
    with fs.open_file(part.path) as f:
        for first in range(part.start, part.stop, BATCH_ROWS):
            stop = min(first + BATCH_ROWS, part.stop)
            entries = model_idx.read_entry_columns(f, entries_at, first, stop)
            count = len(entries)
            number = np.arange(first, first + count, dtype=np.int64)
            key_hash = entries["key_hash"].astype(np.int32)
            time_diff = entries["time_diff"].astype(np.int64)
            columns = {
                "source": constant(part.source, pa.string(), count),
                "file": constant(part.path, pa.string(), count),
                "position": pa.array(entries_at + number * size),
                "number": pa.array(number.astype(np.int32)),
                "slot": pa.array(np.where(key_hash >= 0, key_hash % slots, -1).astype(np.int32)),
                "key_hash": pa.array(key_hash),
                "commitlog_offset": pa.array(entries["phy_offset"].astype(np.int64)),
                "time_diff": pa.array(time_diff.astype(np.int32)),
                # beginTimestamp + timeDiff * 1000 as a Java long (``IndexEntry.timestamp``)
                "timestamp": pa.array(np.int64(begin) + time_diff * 1000),
                "prev_index": pa.array(entries["prev_index"].astype(np.int32)),
            }
            yield pa.RecordBatch.from_arrays([columns[name].cast(field.type) for name, field in zip(schema.names, schema)], schema=schema)
            if count < stop - first:
                break  # the file is shorter than its header says
