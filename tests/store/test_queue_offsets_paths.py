"""``store.model.queue_offsets.file_queue_offsets`` walks a CommitLog file smaller than
``COLUMN_WALK_MIN_SIZE`` record by record (no numpy) and a larger one as columns: both readings
give the same queue offsets, on the fixture's healthy files and on a damaged copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mqtool.store import rocketmq as rmq
from mqtool.store.model import queue_offsets as qo
from tests.conftest import FIXTURES


def _readings(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[qo.FileQueueOffsets], list[qo.FileQueueOffsets]]:
    store = rmq.open_store(root)
    files = qo.data_files(store)
    last = files[-1][0]
    walked = [qo.file_queue_offsets(store, seg, last=i == last) for i, seg in files]
    monkeypatch.setattr(qo, "COLUMN_WALK_MIN_SIZE", 0)
    columns = [qo.file_queue_offsets(store, seg, last=i == last) for i, seg in files]
    return walked, columns


def test_small_files_are_walked_and_agree_with_the_columns(monkeypatch: pytest.MonkeyPatch):
    assert all(seg.size < qo.COLUMN_WALK_MIN_SIZE for seg in rmq.open_store(FIXTURES / "rocketmq-store").commitlog)
    walked, columns = _readings(FIXTURES / "rocketmq-store", monkeypatch)
    assert walked == columns
    assert sum(len(f.queues) for f in walked) > 0


def test_a_damaged_file_reads_the_same_either_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    second = sorted((root / "commitlog").iterdir())[1]
    data = bytearray(second.read_bytes())
    data[200:204] = b"\xff\xff\xff\xff"  # inside the first records: the walk stops there
    second.write_bytes(bytes(data))
    walked, columns = _readings(root, monkeypatch)
    assert walked == columns
    assert any(f.skipped for f in walked)
