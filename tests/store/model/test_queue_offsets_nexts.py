"""``FileReading.nexts``: the search for the next record after where a CommitLog file's data ends
runs once for a reading that states how the file ends (``ignored_tail``: is a record after it?)
and a recover plan that counts the records a cut there drops (``count_records_after``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import queue_offsets
from mqtool.store.writer import StoreWriter, WriterConfig

FILE_SIZE = 1 << 20  # the column walk reads files of at least ``COLUMN_WALK_MIN_SIZE``


def _newest_with_a_broken_size(root: Path) -> tuple[Path, int]:
    """A newest file whose record mid file has TOTALSIZE -1 (garbage: no record header), records after it."""
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE_SIZE, enable_index=False)) as w:
        end = i = 0
        while end < FILE_SIZE // 2:
            res = w.append(cl.MessageRecord(topic="T", queue_id=i % 2, body=bytes(range(256)), properties={"KEYS": f"k{i}"}))
            end, i = res.commitlog_offset + res.size, i + 1
    path = rmq.list_segments(root / "commitlog")[0].path
    data = bytearray(path.read_bytes())
    bad = next(p for p, _ in cl.RecordWalker(bytes(data), 0) if p > FILE_SIZE // 4)
    data[bad : bad + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))
    return path, bad


def test_the_next_record_is_searched_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, bad = _newest_with_a_broken_size(tmp_path / "store")
    with ReadOnlyFile(path) as f:
        expected = queue_offsets.count_records_after(f, 0, bad)
    assert expected > 0
    searches: list[int] = []
    search = rmq.find_next_record

    def counted(f: ReadOnlyFile, base: int, start: int, stop: int | None = None) -> int | None:
        searches.append(start)
        return search(f, base, start, stop)

    monkeypatch.setattr(rmq, "find_next_record", counted)
    with ReadOnlyFile(path) as f:
        reading = queue_offsets.read_file(f, 0, FILE_SIZE, last=True, end_findings=True)
        assert reading.walk is not None and reading.walk.failed_at == bad
        assert searches == [bad + 1]  # the reading asked whether a record follows the broken one
        assert queue_offsets.count_records_after(f, 0, bad, reading.nexts) == expected
    assert searches == [bad + 1]
