"""``queue_offsets.shared_reading``: validate's reading of each healthy CommitLog file is kept and
``read_commitlog`` (recover's plan) takes it instead of reading the unchanged file again -- the
same queue offsets, end, records, last store time, tails and end findings ``read_file`` sees, the
columns of the two newest files -- so ``report`` reads the CommitLog once.  A damaged file, or one
changed since, is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.ops.validate import ValidateOptions, validate_path
from mqtool.store import rocketmq as rmq
from mqtool.store.files import count_reads
from mqtool.store.model import queue_offsets
from mqtool.store.writer import StoreWriter, WriterConfig

FILE = 1 << 20


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    body = bytes(range(256)) * 2
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE, index_hash_slot_num=4096, index_num=16384)) as writer:
        end = n = 0
        while end < 3 * FILE + FILE // 3:  # three full files and part of a fourth
            res = writer.append(cl.MessageRecord(topic=f"T{n % 3}", queue_id=n % 2, body=body, properties={"KEYS": f"k{n}"}))
            end, n = res.commitlog_offset + res.size, n + 1
    return root


def _view(reading: queue_offsets.FileReading) -> tuple[object, ...]:
    return (reading.offsets, reading.end, reading.records, reading.last_store_timestamp, reading.tails, reading.bytes_read)


def _readings(root: Path) -> dict[str, queue_offsets.FileReading]:
    store = rmq.open_store(root)
    return {str(seg.path): reading for _i, seg, _f, reading in queue_offsets.read_commitlog(store, end_findings=True)}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_kept_reading_is_what_read_file_sees(store: Path, jobs: int) -> None:
    fresh = _readings(store)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=jobs), "rocketmq")
        with count_reads() as reads:
            kept = _readings(store)
    assert {p: _view(r) for p, r in kept.items()} == {p: _view(r) for p, r in fresh.items()}
    newest = sorted(kept)[-2:]
    assert [p for p, r in kept.items() if r.columns is not None] == newest
    for path in newest:
        assert kept[path].columns.columns.position.tolist() == fresh[path].columns.columns.position.tolist()
    assert sum(n for p, n in reads.items() if "/commitlog/" in p) <= 4096 * len(kept)  # a peek at each end, no file read again


def test_a_file_changed_since_or_damaged_is_read_again(store: Path) -> None:
    files = sorted((store / "commitlog").iterdir())
    with open(files[1], "r+b") as f:  # a broken record in the second file: validate keeps no reading of it
        f.seek(FILE // 2)
        f.write(b"\xff" * 16)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=1), "rocketmq")
        os.utime(files[0], ns=(1, 1))  # the first changed since (its mtime)
        with count_reads() as reads:
            _readings(store)
    read = {Path(p).name: n for p, n in reads.items() if "/commitlog/" in p}
    assert read[files[0].name] >= FILE and read[files[1].name] >= FILE // 2
    assert read.get(files[2].name, 0) <= 4096


def test_without_a_shared_reading_nothing_is_kept(store: Path) -> None:
    validate_path(store, ValidateOptions(jobs=1), "rocketmq")
    with count_reads() as reads:
        _readings(store)
    assert sum(n for p, n in reads.items() if "/commitlog/" in p) >= 3 * FILE


def test_kept_columns_stay_within_their_budget(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The columns kept are the newest files' within ``KEPT_COLUMN_ROWS`` records: a file with more
    keeps its offsets and end only (a dispatch scan walks it again)."""
    from mqtool.store.model import commitlog_check

    fresh = _readings(store)
    newest = sorted(fresh)[-1]
    budget = len(fresh[newest].columns.columns)  # the newest file's records: the one before it does not fit too
    monkeypatch.setattr(queue_offsets, "KEPT_COLUMN_ROWS", budget)
    monkeypatch.setattr(commitlog_check, "KEPT_COLUMN_ROWS", budget)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=1), "rocketmq")
        kept = _readings(store)
    assert [p for p, r in kept.items() if r.columns is not None] == [newest]
    assert {p: _view(r) for p, r in kept.items()} == {p: _view(r) for p, r in fresh.items()}
