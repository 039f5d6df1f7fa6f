"""The CommitLog walk (``store.model.commitlog_walk``) on a run of records its column walk
declines: the precise decoder reads them with a backoff, so the columns (which frame their whole
piece before they judge) are not called again for each record -- a store whose every record
carries a ``__CRC32#`` property is read in linear time, with the records and findings of the
precise walk alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import commitlog_check as judge
from mqtool.store.model import commitlog_walk as cl_walk
from mqtool.store.writer import StoreWriter, WriterConfig

FILE_SIZE = 1 << 20


def _store(root: Path, count: int, crc_every: int) -> Path:
    """A file of ``count`` records, one in ``crc_every`` with a ``__CRC32#`` property (declined
    by the columns); 1: all of them."""
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE_SIZE, append_crc_property=crc_every == 1, enable_index=False)) as w:
        for i in range(count):
            props = {"TAGS": "a", "KEYS": f"k{i}"}
            if crc_every > 1 and i % crc_every == 0:
                props["__CRC32#"] = "12345"
            w.append(cl.MessageRecord(topic="T", queue_id=i % 2, body=bytes(40), properties=props))
    return rmq.list_segments(root / "commitlog")[0].path


def _read(path: Path, fast: bool) -> tuple[list[int], list[tuple[str, int | None]]]:
    records: list[int] = []
    findings: list[tuple[str, int | None]] = []
    with ReadOnlyFile(path) as f:
        for e in cl_walk.read_events(f, cl_walk.CommitLogTask(str(path), 0, FILE_SIZE, True, fast=fast)):
            if isinstance(e, cl_walk.Stretch):
                records += [e.position + int(p) for p in e.columns.position]
            elif isinstance(e, cl_walk.Record):
                records.append(e.position)
            elif isinstance(e, cl_walk.Damage) and e.finding is not None:
                findings.append((e.finding.code, e.finding.position))
    return records, findings


@pytest.mark.parametrize("crc_every", [1, 2, 7])
def test_records_the_columns_decline_are_read_once(tmp_path, monkeypatch, crc_every):
    path = _store(tmp_path / "store", 3000, crc_every)
    calls = []
    framed = cl_walk.walk_columns

    def counting(buf, base, **kw):  # type: ignore[no-untyped-def]
        calls.append(kw.get("start", 0))
        return framed(buf, base, **kw)

    precise = _read(path, fast=False)
    monkeypatch.setattr(cl_walk, "walk_columns", counting)
    fast = _read(path, fast=True)
    assert fast == precise and len(precise[0]) == 3000
    # records declined one after another or every few records: a few calls, not one per record
    assert len(calls) < 3000 // 40, len(calls)
    res = judge.check_commitlog_file(judge.CommitLogTask(str(path), 0, FILE_SIZE, True))
    assert res.records == 3000
