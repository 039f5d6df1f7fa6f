"""The fast reading of RocketMQ CommitLog files: healthy files as columns, cross-checked in bulk.

A CommitLog file is read in 8 MiB chunks by :func:`mqtool.formats.rocketmq.columns.walk_columns`.
When every record of the file is healthy and the file ends the way the broker ends it (an
END_OF_FILE record in a file before the last; zeros, END_OF_FILE or the end of the file in the
last one, with nothing but zeros after the valid data), :func:`read_file_columns` returns the
file's records as columns; otherwise it returns None and the caller reads the file with the
precise decoders, which name every finding (``CommitLog.recoverAbnormally`` stops at the first
record ``checkMessageAndReturnSize`` refuses; the precise reading says why).

The columns answer the cross-file checks without decoding a record again:

* :func:`verify_queue_units` reads, for every topic/queue of the file, exactly the ConsumeQueue
  units of the file's QUEUEOFFSETs (a unit sits at ``queue offset * 20``) and compares them with
  the records in one vectorised step (commitlog offset, size, tagsCode).  The units that agree
  need no other check; the others go to the precise per-unit check.
* :func:`save_key_table` / :class:`KeyTables` keep, per file, the sorted
  ``position << 32 | key hash`` pairs of the records' ``IndexFile`` keys; an index entry whose
  pair is there is right (its record exists and has a key of that hash), every other entry goes
  to the precise per-entry check.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq.columns import (
    ColumnStop,
    CommitLogColumns,
    QueueRun,
    concat_columns,
    walk_columns,
)
from mqtool.formats.rocketmq.unit_columns import cq_units, record_key_table
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, nonzero_extent, piece_size
from mqtool.store.model import rocketmq as model


@dataclass
class FileColumns:
    """A healthy CommitLog file: its records, their queue runs, and where and how data ends."""

    columns: CommitLogColumns
    queues: dict[tuple[str, int], QueueRun]
    end: ColumnStop  # position is a file position
    bytes_read: int


def read_file_columns(f: ReadOnlyFile, base: int, *, file_size: int, is_last: bool) -> FileColumns | None:
    """The records of the CommitLog file ``f`` (named ``base``) as columns, or None when anything
    about the file needs the precise reading: a record that is not healthy, a file of another
    size than ``file_size``, a file before the last that does not end in END_OF_FILE, non-zero
    bytes after the valid data of the last file."""
    if f.size != file_size:
        return None
    parts: list[tuple[int, CommitLogColumns]] = []
    pos = 0
    piece = want = piece_size()
    bytes_read = 0
    while True:
        data = f.pread(pos, want)
        bytes_read += len(data)
        want = piece
        walk = walk_columns(data, base + pos)
        if len(walk.columns):
            parts.append((pos, walk.columns))
        stop = walk.stop
        more = pos + len(data) < f.size
        if rmq.piece_goes_on(stop.kind, stop.position, len(data), more):
            if stop.kind == "partial" and stop.position == 0:
                if stop.length > rmq.MAX_RECORD_SIZE:
                    return None
                want = max(stop.length, piece)
            pos += stop.position
            continue
        break
    end = ColumnStop(stop.kind, pos + stop.position, stop.length)
    if end.kind == "anomaly" or end.kind == "partial":
        return None
    if not is_last and end.kind != "blank":
        return None
    if end.kind == "zeros" and nonzero_extent(f, end.position) is not None:
        return None
    columns = concat_columns(parts)
    queues = columns.queue_runs()
    if queues is None:
        return None
    return FileColumns(columns, queues, end, bytes_read)


def verify_queue_units(store: rmq.RocketMQStore, base: int, cols: FileColumns, cq_file_size: int) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """For every topic/queue of a healthy CommitLog file: the runs ``[first, stop)`` of queue
    offsets whose ConsumeQueue unit points at exactly its record (commitlog offset, size and
    tagsCode agree).  Units that are missing, differ, or hold a ConsumeQueueExt address are left
    out: the precise per-unit check names what is wrong with them."""
    columns = cols.columns
    dispatched = columns.dispatched()
    verified: dict[tuple[str, int], list[tuple[int, int]]] = {}
    if not cols.queues:
        return verified
    topic_number = {name: i for i, name in enumerate(columns.topics)}
    for (topic, queue_id), run in cols.queues.items():
        if not rmq.is_topic_dir_name(topic):
            continue
        rows = np.flatnonzero(dispatched & (columns.topic == topic_number[topic]) & (columns.queue_id == queue_id))
        units = _read_units(store, topic, queue_id, run.first, run.count, cq_file_size)
        if units is None or len(units) != len(rows):
            continue
        ok = (
            (units["offset"] == columns.position[rows] + base)
            & (units["size"] == columns.size[rows])
            & (units["tags_code"] == columns.tags_code[rows])
            & ~_ext_address(units["tags_code"])
        )
        verified[(topic, queue_id)] = _runs(run.first, ok)
    return verified


def _ext_address(tags_code: np.ndarray) -> np.ndarray:
    return np.asarray(tags_code <= cqf.EXT_MAX_ADDRESS)


def _runs(first: int, ok: np.ndarray) -> list[tuple[int, int]]:
    """``[start, stop)`` queue-offset runs where ``ok`` holds (``ok[i]`` is offset ``first + i``)."""
    if ok.all():
        return [(first, first + len(ok))]
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.astype(np.int8), [0]))))
    return [(first + int(a), first + int(b)) for a, b in zip(edges[0::2], edges[1::2])]


def _read_units(store: rmq.RocketMQStore, topic: str, queue_id: int, first: int, count: int, cq_file_size: int) -> np.ndarray | None:
    """Units ``first .. first + count - 1`` of a queue (None when a file holding them is missing,
    unreadable or of another size: the precise check reports it)."""
    try:
        segments = store.cq_segments(topic, queue_id)
    except MqError:
        return None
    by_base = {seg.base: seg for seg in segments}
    unit = cqf.CQ_UNIT_SIZE
    start, stop = first * unit, (first + count) * unit
    chunks: list[bytes] = []
    at = start
    while at < stop:
        file_base = at - at % cq_file_size
        seg = by_base.get(file_base)
        if seg is None or seg.size != cq_file_size:
            return None
        take = min(stop, file_base + cq_file_size) - at
        try:
            with ReadOnlyFile(seg.path) as f:
                data = f.pread(at - file_base, take)
        except MqError:
            return None
        if len(data) != take:
            return None
        chunks.append(data)
        at += take
    return cq_units(b"".join(chunks))


def save_key_table(directory: str, base: int, cols: FileColumns) -> None:
    """Write the file's sorted key pairs (see :func:`record_key_table`) for the index checks."""
    table = record_key_table(cols.columns)
    path = os.path.join(directory, segnames.rocketmq_file_name(base) + ".npy")
    np.save(path + ".tmp.npy", table)
    os.replace(path + ".tmp.npy", path)


class KeyTables:
    """The key tables :func:`save_key_table` wrote, loaded one file at a time."""

    def __init__(self, directory: str | None) -> None:
        self.bases: list[int] = []
        self.directory = directory
        if directory is not None:
            self.bases = sorted(int(p.name[:20]) for p in Path(directory).glob("*.npy") if not p.name.endswith(".tmp.npy"))
        self._loaded: tuple[int, np.ndarray] | None = None

    def verified(self, phy_offset: np.ndarray, key_hash: np.ndarray, file_size: int) -> np.ndarray:
        """Which ``(phy_offset, key_hash)`` entries name a record of a healthy file and one of
        its keys (bool array)."""
        ok = np.zeros(len(phy_offset), dtype=bool)
        if not self.bases or not len(phy_offset):
            return ok
        bases = np.array(self.bases, dtype=np.int64)
        slot = np.searchsorted(bases, phy_offset, side="right") - 1
        inside = (slot >= 0) & (phy_offset - bases[np.maximum(slot, 0)] < file_size) & (key_hash >= 0)
        for s in np.unique(slot[inside]):
            rows = np.flatnonzero(inside & (slot == s))
            file_base = int(bases[s])
            table = self._table(file_base)
            pairs = ((phy_offset[rows] - file_base).astype(np.uint64) << np.uint64(32)) | key_hash[rows].astype(np.uint64)
            at = np.searchsorted(table, pairs)
            found = at < len(table)
            found[found] = table[at[found]] == pairs[found]
            ok[rows] = found
        return ok

    def _table(self, base: int) -> np.ndarray:
        if self._loaded is None or self._loaded[0] != base:
            assert self.directory is not None
            self._loaded = (base, np.load(os.path.join(self.directory, segnames.rocketmq_file_name(base) + ".npy")))
        return self._loaded[1]


@contextlib.contextmanager
def key_table_directory() -> Iterator[str]:
    """A private temporary directory for the key tables of one validation (removed after)."""
    with tempfile.TemporaryDirectory(prefix="mqtool-keys-") as directory:
        yield directory


@dataclass(frozen=True)
class DataExtent:
    """The commitlog offsets a store's records occupy: ``first`` (the first byte it still
    holds), ``end`` (where its valid data ends) and ``damaged`` (the bytes a torn tail at the
    end would have covered: what points there is the torn tail's finding, not its own)."""

    first: int
    end: int
    damaged: tuple[tuple[int, int], ...] = ()
    #: The last data file (its path, base and configured size): where the damage that ends the
    #: valid data is, read only when an entry points past the end (``end_cause``).
    last: tuple[str, int, int] | None = None
    _cause: dict[str, Finding | None] = field(default_factory=dict, compare=False, repr=False)

    def end_cause(self) -> Finding | None:
        """The CommitLog finding that ends the valid data (``model.valid_end_cause`` over how the
        last data file ends, as validate states it: a torn tail, a broken record, garbage after
        the valid end); None when the data ends cleanly.  Reads the last file once, on demand."""
        if self.last is None:
            return None
        if "end" not in self._cause:
            path, base, size = self.last
            with ReadOnlyFile(Path(path)) as f:
                walk = rmq.CommitLogFileWalk(f, check_crc=True, last=True, file_size=size, base=base)
                for _ in walk:
                    pass
                found = model.commitlog_file_findings(f, walk, size, last=True)
            self._cause["end"] = model.valid_end_cause(found, {path: base}, self.end)
        return self._cause["end"]

    def past_end(self, offset: int) -> bool:
        """``offset`` lies past the valid data, outside the damaged bytes: validate's
        RMQ-IDX-PAST-END / RMQ-CQ-PAST-END."""
        return offset >= self.end and not any(a <= offset < b for a, b in self.damaged)

    def index_entry_finding(self, path: str, position: int, number: int, offset: int) -> Finding | None:
        """RMQ-IDX-PAST-END for IndexFile entry ``number`` (at ``position`` of ``path``) pointing
        at commitlog ``offset`` past the valid data (``past_end``), as validate names it; None
        when it does not.  Every reader of IndexFile entries (dump index, query by key) asks this."""
        if not self.past_end(offset):
            return None
        return model.link_knock_on(model.index_past_end_finding(path, position, number, self.end, offset), self.end_cause())


def data_extent(store: rmq.RocketMQStore) -> DataExtent:
    """Where a store's CommitLog data lies, as validate finds it: the last data file is read
    with the fast walk, and with the precise walk when the fast one declines."""
    held = [seg for seg in store.commitlog if seg.size > 0]
    if not held:
        return DataExtent(0, 0)
    seg = store.commitlog[model.last_data_file(store.commitlog)]
    size = store.commitlog_file_size or seg.size
    with ReadOnlyFile(seg.path) as f:
        fast = read_file_columns(f, seg.base, file_size=size, is_last=True)
        if fast is not None:
            return DataExtent(held[0].base, seg.base + fast.end.position, last=(str(seg.path), seg.base, size))
        walk = rmq.CommitLogFileWalk(f, check_crc=True, last=True, file_size=size, base=seg.base)
        for _ in walk:
            pass
        damaged: tuple[tuple[int, int], ...] = (walk.torn.damaged(seg.base),) if walk.torn is not None else ()
        if walk.error is not None and walk.failed_at is not None:
            # a broken record: validate names it and reads on past it (its valid end lies further,
            # where it finds it), so no offset from it on is called past the end here
            damaged += ((seg.base + walk.failed_at, seg.base + max(size, f.size)),)
        return DataExtent(held[0].base, seg.base + walk.valid_end, damaged, last=(str(seg.path), seg.base, size))
