"""The one reading of a CommitLog file's records (``store.model.commitlog.read_file_rows``).

It must give, whatever the size of the pieces it reads a file in, exactly what the precise walk
(``store.rocketmq.CommitLogFileWalk``) gives over the whole file: the same records (position,
size, topic, queue, QUEUEOFFSET, store time, TAGS, KEYS tokens, whether validate states a finding
about the record), the same end, the same findings and queue offsets -- on a healthy file (read as
columns), on one with a record whose body CRC fails (the precise walk takes over at it) and on
one whose frame breaks -- and read each byte of the file once.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store.files import ReadOnlyFile, count_reads, read_in_pieces
from mqtool.store.model import commitlog as reading
from mqtool.store.model import rocketmq as model
from mqtool.store.model.commitlog_walk import FileRecords
from mqtool.store.model.queue_offsets import FileQueueOffsets
from mqtool.store.writer import StoreWriter, WriterConfig

FILE_SIZE = 2 << 20


def walk_findings(f: ReadOnlyFile, walk: FileRecords, file_size: int | None, *, last: bool) -> list:
    """What validate states about a file the precise walk (``keep_damaged``) read to its end: its
    records' findings, with those of the frame-intact records it kept (stated as a broken record,
    ``model.broken_record_finding``) among them in position order, then how the file ends
    (``model.commitlog_file_findings``).  The reference the model's reading is held to (it was
    dump's own statement of a walk before dump read through the model)."""
    records = model.walk_record_findings(walk)
    whole = model.commitlog_file_findings(f, walk, file_size, last=last)
    if walk.damaged:
        path = str(f.path)
        kept = [model.broken_record_finding(f, path, pos, exc, file_size or f.size, last) for pos, exc in walk.damaged.items()]
        records_sorted = sorted(kept + records, key=lambda x: x.position or 0)
    else:
        records_sorted = records
    return records_sorted + whole[len(records) :]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two CommitLog files of 2 MiB: the first full (END_OF_FILE), the second the last, part full;
    records of varied sizes, so piece boundaries fall everywhere in them."""
    root = tmp_path_factory.mktemp("rows") / "store"
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE_SIZE)) as writer:
        end = count = 0
        while end < FILE_SIZE + (1500 << 10):
            properties = {"TAGS": f"Tag{count % 7}", "UNIQ_KEY": f"{count:032X}"}
            if count % 3:
                properties["KEYS"] = f"key-{count}  k{count % 11} "
            body = bytes([count % 251]) * (100 + count * 37 % 900)
            res = writer.append(cl.MessageRecord(topic=f"Topic{count % 3}", queue_id=count % 4, body=body, properties=properties))
            end, count = res.commitlog_offset + res.size, count + 1
    return root


def _files(root: Path) -> list[Path]:
    return sorted((root / "commitlog").iterdir())


def _text(value: str | bytes | None) -> str | None:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _rows(path: Path, base: int, *, last: bool, keep_damaged: bool = False) -> tuple[object, ...]:
    rows: list[tuple[object, ...]] = []
    with ReadOnlyFile(path) as f:
        for item in reading.read_file_rows(f, base, file_size=FILE_SIZE, last=last, keep_damaged=keep_damaged, texts=True):
            if isinstance(item, reading.FileRead):
                end = item
                continue
            for i in range(len(item)):
                tags = _text(item.tags[i])
                keys = [_text(k) for k in item.keys[i]]
                rows.append((item.position[i], item.size[i], item.topic[i], item.queue_id[i], item.queue_offset[i], item.store_timestamp[i], tags, keys, item.code[i]))
    offsets = end.queue_offsets
    assert offsets is not None
    queues = {k: (e.first, e.last, e.count, e.lead, e.trail) for k, e in offsets.queues.items()}
    kind = (end.end.kind, end.end.position) if end.end is not None else None
    return rows, (end.valid_end, kind, end.failed_at, str(end.error)), [x.to_dict() for x in end.findings], queues, offsets.skipped


def _walked(path: Path, base: int, *, last: bool, keep_damaged: bool = False) -> tuple[object, ...]:
    """The same, from the precise walk over the whole file."""
    rows: list[tuple[object, ...]] = []
    offsets = FileQueueOffsets(str(path))
    with ReadOnlyFile(path) as f:
        walk = FileRecords(f, last=last, file_size=FILE_SIZE, base=base, keep_damaged=keep_damaged)
        for pos, rec in walk:
            offsets.record(pos, rec)
            rows.append((pos, rec.total_size, rec.topic, rec.queue_id, rec.queue_offset, rec.store_timestamp, rec.tags, rec.keys, walk.finding_code(pos)))
        offsets.walk_end(walk, FILE_SIZE)
        findings = walk_findings(f, walk, FILE_SIZE, last=last)
    queues = {k: (e.first, e.last, e.count, e.lead, e.trail) for k, e in offsets.queues.items()}
    kind = (walk.end.kind, walk.end.position) if walk.end is not None else None
    return rows, (walk.valid_end, kind, walk.failed_at, str(walk.error)), [x.to_dict() for x in findings], queues, offsets.skipped


def _damaged(store: Path, tmp_path: Path, how: str) -> Path:
    root = tmp_path / "store"
    shutil.copytree(store, root)
    first = _files(root)[0]
    with ReadOnlyFile(first) as f:
        positions = [pos for pos, _ in FileRecords(f)]
    at = positions[len(positions) // 2]
    with open(first, "r+b") as out:
        if how == "crc":
            out.seek(at + 200)  # inside the body
            byte = out.read(1)
            out.seek(at + 200)
            out.write(bytes([byte[0] ^ 0xFF]))
        else:
            out.seek(at + 4)  # MAGICCODE
            out.write(b"\x01\x02\x03\x04")
    return root


@pytest.fixture(scope="module")
def walked(store: Path) -> list[tuple[object, ...]]:
    files = _files(store)
    return [_walked(path, int(path.name), last=i == len(files) - 1) for i, path in enumerate(files)]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(piece=st.one_of(st.integers(1024, 8192), st.integers(8192, 3 << 20)))
def test_a_healthy_file_reads_as_the_precise_walk_whatever_the_pieces(store: Path, walked: list[tuple[object, ...]], piece: int) -> None:
    files = _files(store)
    for i, path in enumerate(files):
        with read_in_pieces(piece):
            assert _rows(path, int(path.name), last=i == len(files) - 1) == walked[i]


@pytest.mark.parametrize("keep_damaged", [True, False])
@pytest.mark.parametrize("how", ["crc", "frame"])
def test_a_damaged_file_reads_as_the_precise_walk(store: Path, tmp_path: Path, how: str, keep_damaged: bool) -> None:
    path = _files(_damaged(store, tmp_path, how))[0]
    expected = _walked(path, 0, last=False, keep_damaged=keep_damaged)
    got = _rows(path, 0, last=False, keep_damaged=keep_damaged)
    assert got == expected
    assert got[2], "the damage is a finding"
    if how == "crc" and keep_damaged:
        assert [row[8] for row in got[0] if row[8] is not None] == ["RMQ-CL-BODY-CRC"]


@pytest.mark.parametrize("how", [None, "crc", "frame"])
def test_the_reading_reads_each_byte_once(store: Path, tmp_path: Path, how: str | None) -> None:
    root = store if how is None else _damaged(store, tmp_path, how)
    path = _files(root)[0]
    with count_reads() as reads:
        _rows(path, 0, last=False, keep_damaged=True)
    assert reads[str(path)] <= path.stat().st_size + (64 << 10)


def test_the_records_of_a_range_are_the_precise_walks(store: Path) -> None:
    path = _files(store)[0]
    with ReadOnlyFile(path) as f:
        walked = [(pos, rec.total_size) for pos, rec in FileRecords(f, base=0)]
        start = walked[5][0]
        got = [(x.position, x.record.total_size) for x in reading.read_file_records(f, 0, start) if isinstance(x, reading.DecodedRecord)]
        ends = [x for x in reading.read_file_records(f, 0, start) if isinstance(x, reading.FileRead)]
    assert got == walked[5:]
    assert len(ends) == 1 and ends[0].end is not None and ends[0].end.kind == "blank"
