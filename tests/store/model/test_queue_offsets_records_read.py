"""``store.model.queue_offsets.read_file``'s ``RecordsRead``: what the reading of a CommitLog file
that is not healthy keeps of its records for a recover plan's dispatch scan.

The truth is the precise walk of the file (``queue_offsets.file_records`` without body CRCs, the
walk the dispatch scan takes of a file it has no records of): the kept records are exactly the
ones it yields before ``through`` (every one when ``through`` is None), in file order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import queue_offsets
from mqtool.store.writer import StoreWriter, WriterConfig

FILE_SIZE = 1 << 20  # the column walk reads files of at least ``COLUMN_WALK_MIN_SIZE``


def _store(root: Path) -> list[Path]:
    body = bytes(range(256)) * 2
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE_SIZE, enable_index=False)) as w:
        end = i = 0
        while end < FILE_SIZE + FILE_SIZE // 2:  # one full file and half of a second
            flag = cl.SYSFLAG_TRANSACTION_PREPARED if i % 7 == 3 else 0
            res = w.append(cl.MessageRecord(topic=f"T{i % 3}", queue_id=i % 2, body=body, sys_flag=flag, properties={"KEYS": f"k{i}"}))
            end, i = res.commitlog_offset + res.size, i + 1
    return [seg.path for seg in rmq.list_segments(root / "commitlog")]


def _record_starts(path: Path) -> list[int]:
    return [pos for pos, _ in cl.RecordWalker(path.read_bytes(), 0)]


def _damage(files: list[Path], damage: str) -> Path:
    """Damage a file and return it: ``body`` (a body byte of a record mid file: the recovery's
    data ends there), ``phys`` (a record's PHYSICALOFFSET: the recovery keeps it, decoded by the
    precise decoders, and the file ends in END_OF_FILE), ``tail`` (a byte in the newest file's
    zeros: its records all healthy, the file not)."""
    path = files[-1] if damage == "tail" else files[0]
    data = bytearray(path.read_bytes())
    if damage == "tail":
        data[len(data) - 1000] ^= 0xFF
    else:
        at = next(p for p in _record_starts(path) if p > len(data) // 2)
        if damage == "body":
            data[at + 300] ^= 0xFF
        else:
            data[at + cl.PHYSICAL_OFFSET_POSITION : at + cl.PHYSICAL_OFFSET_POSITION + 8] = (12345).to_bytes(8, "big")
    path.write_bytes(bytes(data))
    return path


def _read(path: Path, last: bool) -> queue_offsets.FileReading:
    with ReadOnlyFile(path) as f:
        return queue_offsets.read_file(f, int(path.name), FILE_SIZE, last=last)


@pytest.mark.parametrize(("damage", "through_none"), [("body", False), ("phys", True), ("tail", False)])
def test_kept_records_are_those_the_precise_walk_yields(tmp_path: Path, damage: str, through_none: bool) -> None:
    files = _store(tmp_path / "store")
    path = _damage(files, damage)
    reading = _read(path, last=path == files[-1])
    assert reading.columns is None and reading.records_read is not None  # not healthy, kept
    kept = reading.records_read
    assert (kept.through is None) == through_none
    with ReadOnlyFile(path) as f:
        walked = [(pos, rec) for pos, rec in queue_offsets.file_records(f, check_crc=False) if kept.through is None or pos < kept.through]
    cols = kept.columns()
    assert len(cols) == len(walked) == len(kept) > 0
    assert cols.position.tolist() == [pos for pos, _ in walked]
    assert cols.size.tolist() == [rec.total_size for _, rec in walked]
    assert [cols.topics[t] for t in cols.topic.tolist()] == [rec.topic for _, rec in walked]
    assert cols.queue_id.tolist() == [rec.queue_id for _, rec in walked]
    assert cols.queue_offset.tolist() == [rec.queue_offset for _, rec in walked]
    assert cols.store_timestamp.tolist() == [rec.store_timestamp for _, rec in walked]
    assert cols.dispatched().tolist() == [queue_offsets.is_dispatched(rec.sys_flag) for _, rec in walked]
    if damage == "phys":
        assert kept.position  # the record the column walk declined, decoded
    if damage == "body":
        assert kept.through < path.stat().st_size // 2 + 1024
        # a scan that needs the records after ``through`` (without body CRCs) walks on from there
        with ReadOnlyFile(path) as f:
            whole = [(pos, rec) for pos, rec in queue_offsets.file_records(f, check_crc=False) if pos >= kept.through]
            on = list(queue_offsets.file_records(f, check_crc=False, start=kept.through))
        assert on == whole and len(on) > 1  # the record whose body CRC fails, and the ones after it


def test_a_healthy_file_keeps_its_columns_not_records_read(tmp_path: Path) -> None:
    files = _store(tmp_path / "store")
    reading = _read(files[0], last=False)
    assert reading.columns is not None and reading.records_read is None


def test_no_more_than_kept_column_rows_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _store(tmp_path / "store")
    path = _damage(files, "body")
    monkeypatch.setattr(queue_offsets, "KEPT_COLUMN_ROWS", 10)
    reading = _read(path, last=False)
    assert reading.columns is None and reading.records_read is None
