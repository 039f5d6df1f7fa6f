"""Bulk checks of a RocketMQ ``IndexFile`` over its mapped bytes, in bounded chunks.

``IndexFile.putKey`` appends entry ``indexCount`` (key hash, commitlog offset, time diff, previous
entry of the same slot) and makes it the head of its slot's chain.  On a healthy file therefore
every written entry 1 .. indexCount-1 is named exactly once -- by a slot or by the prevIndex of
one newer entry, which always points back -- every entry of a chain hashes to that chain's slot,
and the header's counts and ranges agree with the entries.  :func:`structure_ok` decides all of
that with numpy, a chunk of entries at a time (the mapping's pages are released as it goes, so the
resident set stays bounded however many entries a file holds); when it says no, the caller walks
the chains one by one to name each finding.

:func:`unverified_entries` keeps, of a range of entries, those the CommitLog's key tables
(:class:`mqtool.store.model.commitlog.KeyTables`) do not vouch for: the caller reads those records
back and checks them one by one.

:func:`read_entries` is the reading of an IndexFile's written entries, in write order, that
commands (``dump index``) consume instead of decoding the entries themselves;
:func:`read_layout` and :func:`read_entry_columns` read any ``Readable`` (the Spark source's
files too): the header and geometry, and a range of entries as columns.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.index_file import IndexEntry, iter_entries
from mqtool.formats.rocketmq.unit_columns import index_entries, index_slots
from mqtool.store import rocketmq as rmq
from mqtool.store.files import Readable
from mqtool.store.model.commitlog import KeyTables

#: Entries per numpy step (20 bytes each: 5 MiB of entries).
CHUNK_ENTRIES = 1 << 18


def _entries(view: rmq.IndexFileView, first: int, stop: int) -> np.ndarray:
    geo = view.geometry
    assert view.buf is not None  # open (memoryview(None) fails)
    return index_entries(memoryview(view.buf)[geo.entry_position(first) : geo.entry_position(stop)])


def read_entries(view: rmq.IndexFileView) -> Iterator[tuple[int, IndexEntry]]:
    """``(entry number, IndexEntry)`` for every written entry 1 .. indexCount-1 of the open view's
    IndexFile, in write order (``IndexFile.putKey`` appends them so).

    Raises ``CorruptDataError`` (its position in the file; the caller names the file) when the
    header's indexCount exceeds the file's indexNum, before the first entry."""
    geo = view.geometry
    assert view.buf is not None  # open (memoryview(None) fails)
    yield from iter_entries(view.buf, geo.hash_slot_num, geo.index_num)


def structure_ok(view: rmq.IndexFileView, written: int) -> bool:
    """Header, slots and chains hold every rule of the precise chain walk (see the module
    docstring); entries ``1 .. written-1`` are the written ones.

    One sequential pass over the entries (a chunk at a time, its mapped pages released after)
    keeps each entry's slot in a compact int32 array; the slot table is then read the same way.
    Memory: 5 bytes an entry, nothing of the mapping stays resident."""
    geo = view.geometry
    header = view.header
    slots = geo.hash_slot_num
    if header.index_count > geo.index_num or header.effective_index_count != written:
        return False
    size = max(written, 1)
    named = np.zeros(size, dtype=bool)
    key_slot = np.zeros(size, dtype=np.int32)
    max_diff = -1
    for first in range(1, written, CHUNK_ENTRIES):
        stop = min(first + CHUNK_ENTRIES, written)
        entries = _entries(view, first, stop)
        key_slot[first:stop] = entries["key_hash"].astype(np.int64) % slots
        prev = entries["prev_index"].astype(np.int64)
        number = np.arange(first, stop, dtype=np.int64)
        if np.any((prev != 0) & ((prev <= 0) | (prev >= number))):
            return False
        linked = np.flatnonzero(prev)
        targets = prev[linked]
        before = int(np.count_nonzero(named))
        if np.any(named[targets]):
            return False
        named[targets] = True
        if int(np.count_nonzero(named)) - before != len(targets):  # a target named twice in this chunk
            return False
        if np.any(key_slot[targets] != key_slot[first + linked]):
            return False
        diffs = entries["time_diff"].astype(np.int64)
        diffs = diffs[diffs >= 0]
        if len(diffs):
            max_diff = max(max_diff, int(diffs.max()))
        del entries
        view.release(geo.entry_position(first), geo.entry_position(stop))
    used_total = 0
    table_start = geo.slot_position(0)
    for first_slot in range(0, slots, CHUNK_ENTRIES):
        count = min(CHUNK_ENTRIES, slots - first_slot)
        assert view.buf is not None
        table = index_slots(view.buf, slots)[first_slot : first_slot + count]
        used = np.flatnonzero(table)
        heads = table[used].astype(np.int64)
        del table
        view.release(table_start + first_slot * 4, table_start + (first_slot + count) * 4)
        used_total += len(used)
        if np.any((heads <= 0) | (heads >= written)):
            return False
        before = int(np.count_nonzero(named))
        if np.any(named[heads]):
            return False
        named[heads] = True
        if int(np.count_nonzero(named)) - before != len(heads):
            return False
        if np.any(key_slot[heads] != used + first_slot):
            return False
    if used_total != header.hash_slot_count:
        return False
    if written <= 1:
        return True
    if not named[1:written].all():
        return False
    first_entry = _entries(view, 1, 2)[0]
    last_entry = _entries(view, written - 1, written)[0]
    if header.end_phy_offset != int(last_entry["phy_offset"]) or header.begin_phy_offset != int(first_entry["phy_offset"]):
        return False
    if header.end_timestamp < header.begin_timestamp:
        return False
    max_ts = header.begin_timestamp + max_diff * 1000 if max_diff >= 0 else 0
    return max_ts <= header.end_timestamp + 999


def unverified_entries(
    view: rmq.IndexFileView, first: int, stop: int, tables: KeyTables, *, commitlog_min: int, commitlog_end: int, commitlog_file_size: int
) -> list[int]:
    """The entry numbers in ``[first, stop)`` that do not name a record of a healthy CommitLog file
    and one of its keys, inside ``[commitlog_min, commitlog_end)``: the ones to check one by one."""
    out: list[int] = []
    geo = view.geometry
    for start in range(first, stop, CHUNK_ENTRIES):
        end = min(start + CHUNK_ENTRIES, stop)
        entries = _entries(view, start, end)
        phy = entries["phy_offset"].astype(np.int64)
        ok = tables.verified(phy, entries["key_hash"].astype(np.int64), commitlog_file_size)
        ok &= (phy >= commitlog_min) & (phy < commitlog_end)
        out.extend((start + np.flatnonzero(~ok)).tolist())
        view.release(geo.entry_position(start), geo.entry_position(end))
    return out


def read_layout(f: Readable) -> tuple[idxf.IndexHeader, idxf.IndexGeometry]:
    """The header of the IndexFile ``f`` and its geometry (hash slots, entries), read from its own
    bytes as validate and query read them; raises ``MqError`` when it is not an IndexFile."""
    header = idxf.decode_index_header(f.pread(0, idxf.INDEX_HEADER_SIZE))
    return header, idxf.detect_index_geometry(f.pread, f.size)


def read_entry_columns(f: Readable, entries_position: int, first: int, stop: int) -> np.ndarray:
    """Entries ``first .. stop`` of the IndexFile ``f`` (entries from ``entries_position``) as
    ``index_entries`` columns."""
    size = idxf.INDEX_ENTRY_SIZE
    return index_entries(f.pread(entries_position + first * size, (stop - first) * size))
