"""The check of one RocketMQ IndexFile: header, slots and chains, every entry against its record.

An IndexFile (upstream ``IndexFile``/``IndexHeader``) is a 40-byte header, ``hashSlotNum`` 4-byte
slots and up to ``indexNum`` 20-byte entries (key hash, commitlog offset, time diff, prevIndex).
``IndexFile.putKey`` appends entry ``indexCount`` and makes it the head of its slot's chain, so a
healthy file names every written entry exactly once, every entry of a chain hashes to that slot,
and the header's counts, offsets and timestamps agree with the entries.  :func:`check_index_file`
judges one file (or, for a large file split across workers, one range of its entries):

* structure (one task per file): indexCount against the written entries
  (:func:`written_index_count`), hashSlotCount against the slots in use, every slot and prevIndex
  in range and acyclic, every entry in the right slot and reachable (RMQ-IDX-HEADER,
  RMQ-IDX-CHAIN, RMQ-IDX-SLOT); the bulk rule :func:`mqtool.store.model.index.structure_ok`
  decides a healthy file first and the chains are walked one by one only when it says no;
* entries: each one's commitlog offset below the CommitLog's first file is expired
  (RMQ-IDX-EXPIRED), past the valid end is ``model.index_past_end_finding``, and otherwise it must
  be the start of a record with a key hashing to the entry's hash (RMQ-IDX-ENTRY: the keys the
  broker indexes, ``topic#UNIQ_KEY`` and ``topic#KEY`` for every key of ``KEYS``).  Entries the
  CommitLog phase's key tables vouch for (:class:`mqtool.store.model.commitlog.KeyTables`) and
  entries pointing into ranges it already reported are not read back.

The result (:class:`IndexResult`) is picklable: validate runs these tasks in worker processes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import MqError, UnsupportedFormatError
from mqtool.findings import Finding
from mqtool.findings.code_ids import (
    RMQ_IDX_CHAIN,
    RMQ_IDX_ENTRY,
    RMQ_IDX_EXPIRED,
    RMQ_IDX_GEOMETRY,
    RMQ_IDX_HEADER,
    RMQ_IDX_SLOT,
)
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.formats.rocketmq.hashing import index_key_hash
from mqtool.formats.rocketmq.properties import split_keys
from mqtool.store import rocketmq as rmq
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import index as model_idx
from mqtool.store.model import rocketmq as model
from mqtool.store.model.commitlog_check import in_ranges, rebased_store, written_since


@dataclass(frozen=True)
class IndexTask:
    root: str
    path: str
    commitlog_file_size: int
    commitlog_min: int
    commitlog_end: int
    hash_slot_num: int | None
    index_num: int | None
    #: Entry numbers [first, stop) whose records this task checks; None: all of them.
    entries: tuple[int, int] | None = None
    #: Check the header, slots and chains (one task per file does).
    structure: bool = True
    #: ``written_index_count`` of the file (computed by the task when None).
    written: int | None = None
    damaged: tuple[tuple[int, int], ...] = ()  # commitlog ranges already reported
    rebased: tuple[tuple[str, int], ...] = ()  # misnamed CommitLog files and the base their records say
    live: bool = False  # a writer holds the store's lock
    #: The CommitLog phase's key tables (fast path; see ``mqtool.store.model.commitlog``).
    keys_dir: str | None = None


@dataclass
class IndexResult:
    path: str
    size: int = 0
    entries: int = 0
    findings: list[Finding] = field(default_factory=list)
    end_timestamp: int = 0


def check_index_file(task: IndexTask) -> IndexResult:
    res = IndexResult(task.path)
    try:
        view = rmq.IndexFileView(Path(task.path), hash_slot_num=task.hash_slot_num, index_num=task.index_num)
    except UnsupportedFormatError as exc:
        res.findings.append(Finding(RMQ_IDX_GEOMETRY, task.path, None, f"{exc.reason} (pass --index-hash-slots/--index-num)"))
        return res
    except MqError as exc:
        res.findings.append(Finding(RMQ_IDX_GEOMETRY, task.path, exc.position, exc.reason))
        return res
    store = rebased_store(task.root, task.commitlog_file_size, task.rebased)
    with view, rmq.CommitLogReader(store, check_crc=False) as reader:
        res.size = view.size
        res.end_timestamp = view.header.end_timestamp
        written = task.written if task.written is not None else written_index_count(view)
        res.entries = max(written - 1, 0)
        if task.structure:
            _check_index_structure(view, task, written, res)
        _check_index_entries(view, task, written, reader, res)
    return res


def written_index_count(view: rmq.IndexFileView) -> int:
    """The indexCount the entries and slots show (entries 1 .. n-1 are written).

    Every putKey makes its entry the head of its slot's chain, so the newest entry, indexCount-1,
    is a slot value and the entry after it is still zeros.  When the header agrees with that, it
    is taken; otherwise the newest written entry any slot names tells (a header that lost an
    update, or damage)."""
    buf = view.buf
    assert buf is not None  # an open view: close() drops the mapping
    geo = view.geometry
    n = min(view.header.effective_index_count, geo.index_num)
    newest = n - 1
    consistent = newest == 0 or idxf.read_slot(buf, idxf.decode_index_entry(buf, geo.entry_position(newest)).key_hash % geo.hash_slot_num, geo.hash_slot_num) == newest
    if consistent and (n == geo.index_num or not any(buf[geo.entry_position(n) : geo.entry_position(n + 1)])):
        return n
    heads = [
        value
        for _, value in idxf.iter_used_slots(buf, geo.hash_slot_num)
        if 0 < value < geo.index_num and any(buf[geo.entry_position(value) : geo.entry_position(value + 1)])
    ]
    return max(heads, default=0) + 1


def index_entry_count(path: Path, hash_slot_num: int | None, index_num: int | None) -> int:
    """Used entries of an IndexFile (0 when its header cannot be read)."""
    try:
        with rmq.IndexFileView(path, hash_slot_num=hash_slot_num, index_num=index_num) as view:
            return written_index_count(view) - 1
    except MqError:
        return 0


def _check_index_structure(view: rmq.IndexFileView, task: IndexTask, written: int, res: IndexResult) -> None:
    if task.keys_dir is not None and model_idx.structure_ok(view, written):
        return
    buf = view.buf
    assert buf is not None  # an open view: close() drops the mapping (iter_used_slots below reads it)
    geo = view.geometry
    header = view.header
    slots = geo.hash_slot_num
    path = task.path
    if header.index_count > geo.index_num:
        res.findings.append(Finding(RMQ_IDX_HEADER, path, idxf.INDEX_COUNT_POSITION, f"expected indexCount <= {geo.index_num}, found {header.index_count}"))
    elif header.effective_index_count != written:
        res.findings.append(
            Finding(
                RMQ_IDX_HEADER,
                path,
                idxf.INDEX_COUNT_POSITION,
                f"expected indexCount {written} (the newest written entry is #{written - 1}), found {header.index_count}",
            )
        )
    # slots: in range, and the entry they name belongs to them
    reached = bytearray(written)
    broken: set[int] = set()  # slots whose chain is cut: its older entries are unreachable by that
    used_slots = 0
    for slot, value in idxf.iter_used_slots(buf, slots):
        used_slots += 1
        if not 0 < value < written:
            res.findings.append(Finding(RMQ_IDX_CHAIN, path, geo.slot_position(slot), f"slot {slot}: expected an entry number in 1..{written - 1}, found {value}"))
            broken.add(slot)
            continue
        number = value
        steps = 0
        while number and steps < written:
            if reached[number]:
                res.findings.append(Finding(RMQ_IDX_CHAIN, path, geo.entry_position(number), f"entry #{number} is reached from two chains (slot {slot})"))
                broken.add(slot)
                break
            reached[number] = 1
            entry = idxf.decode_index_entry(buf, geo.entry_position(number))
            if entry.key_hash % slots != slot:
                res.findings.append(
                    Finding(
                        RMQ_IDX_SLOT,
                        path,
                        geo.entry_position(number),
                        f"entry #{number} in the chain of slot {slot}: expected a key hash with hash % {slots} == {slot}, found {entry.key_hash}",
                    )
                )
            prev = entry.prev_index
            if prev and not 0 < prev < number:
                res.findings.append(
                    Finding(
                        RMQ_IDX_CHAIN,
                        path,
                        geo.entry_position(number) + idxf.PREV_INDEX_POSITION,
                        f"entry #{number}: expected prevIndex 0 or an older entry 1..{number - 1}, found {prev}" + (" (a cycle)" if prev >= number else ""),
                    )
                )
                broken.add(slot)
                break
            number = prev
            steps += 1
    if used_slots != header.hash_slot_count:
        res.findings.append(
            Finding(
                RMQ_IDX_HEADER,
                path,
                idxf.HASH_SLOT_COUNT_POSITION,
                f"expected hashSlotCount {used_slots} (slots in use), found {header.hash_slot_count}",
            )
        )
    unreached = [n for n in range(1, written) if not reached[n] and idxf.decode_index_entry(buf, geo.entry_position(n)).key_hash % slots not in broken]
    if unreached:
        res.findings.append(
            Finding(
                RMQ_IDX_CHAIN,
                path,
                geo.entry_position(unreached[0]),
                f"{len(unreached)} entr{'y is' if len(unreached) == 1 else 'ies are'} reachable from no slot (first: #{unreached[0]})",
            )
        )
    if written > 1:
        first = idxf.decode_index_entry(buf, geo.entry_position(1))
        last = idxf.decode_index_entry(buf, geo.entry_position(written - 1))
        if header.end_phy_offset != last.phy_offset:
            res.findings.append(Finding(RMQ_IDX_HEADER, path, 24, f"expected endPhyOffset {last.phy_offset} (the last entry's), found {header.end_phy_offset}"))
        if header.begin_phy_offset != first.phy_offset:
            res.findings.append(Finding(RMQ_IDX_HEADER, path, 16, f"expected beginPhyOffset {first.phy_offset} (the first entry's), found {header.begin_phy_offset}"))
        if header.end_timestamp < header.begin_timestamp:
            res.findings.append(Finding(RMQ_IDX_HEADER, path, 8, f"expected endTimestamp >= beginTimestamp {header.begin_timestamp}, found {header.end_timestamp}"))
        else:
            entries = memoryview(buf)[geo.entry_position(1) : geo.entry_position(written)]
            max_diff = max((diff for _, _, diff, _ in idxf.INDEX_ENTRY.iter_unpack(entries) if diff >= 0), default=None)
            entries.release()
            max_ts = header.begin_timestamp + max_diff * 1000 if max_diff is not None else 0
            if max_ts > header.end_timestamp + 999:
                res.findings.append(Finding(RMQ_IDX_HEADER, path, 8, f"expected endTimestamp >= the newest entry's time {max_ts}, found {header.end_timestamp}"))


def _check_index_entries(view: rmq.IndexFileView, task: IndexTask, written: int, reader: rmq.CommitLogReader, res: IndexResult) -> None:
    """Every entry (of the task's range) against the record it points at."""
    buf = view.buf
    geo = view.geometry
    path = task.path
    first, stop = task.entries if task.entries is not None else (1, written)
    stop = min(stop, written)
    expired = 0
    cached: tuple[int, bool, set[int] | None] | None = None
    numbers: Iterable[int] = range(first, stop)
    if task.keys_dir is not None and stop > first:
        # Entries naming a record of a healthy file and one of its keys are right; only the
        # others are read back and checked one by one.
        numbers = model_idx.unverified_entries(
            view,
            first,
            stop,
            model_cl.KeyTables(task.keys_dir),
            commitlog_min=task.commitlog_min,
            commitlog_end=task.commitlog_end,
            commitlog_file_size=task.commitlog_file_size,
        )
    for number in numbers:
        pos = geo.entry_position(number)
        assert buf is not None  # an open view: close() drops the mapping
        entry = idxf.decode_index_entry(buf, pos)
        off = entry.phy_offset
        if off < task.commitlog_min:
            expired += 1
            continue
        if in_ranges(task.damaged, off):
            continue  # the CommitLog finding there says what is wrong with this record
        if off >= task.commitlog_end and task.live and written_since(reader, off):
            continue  # appended after the CommitLog was read
        if off >= task.commitlog_end:
            res.findings.append(model.index_past_end_finding(path, pos, number, task.commitlog_end, off))
            continue
        if cached is None or cached[0] != off:
            try:
                rec = reader.read(off)
                is_record = rec.physical_offset == off
            except MqError:
                is_record = False
            cached = (off, is_record, _index_hashes(rec) if is_record else None)
        _, is_record, hashes = cached
        if not is_record:
            res.findings.append(Finding(RMQ_IDX_ENTRY, path, pos, f"entry #{number}: commitlog offset {off} is not the start of a valid record"))
        elif hashes is not None and entry.key_hash not in hashes:
            res.findings.append(
                Finding(
                    RMQ_IDX_ENTRY,
                    path,
                    pos,
                    f"entry #{number}: the record at commitlog offset {off} has no key hashing to {entry.key_hash} (its keys hash to {sorted(hashes)})",
                )
            )
    if expired:
        res.findings.append(Finding(RMQ_IDX_EXPIRED, path, None, f"{expired} entr{'y points' if expired == 1 else 'ies point'} below the CommitLog's first file"))


def _index_hashes(rec: MessageRecord) -> set[int] | None:
    """Hashes of the keys the broker indexed for ``rec``; None when its properties are malformed
    (RMQ-CL-PROPERTIES) and so its keys are not known."""
    if rec.dropped_properties:
        return None
    keys = []
    if rec.uniq_key:
        keys.append(f"{rec.topic}#{rec.uniq_key}")
    keys.extend(f"{rec.topic}#{k}" for k in split_keys(rec.properties))
    return {index_key_hash(k) for k in keys}
