"""One unreadable CommitLog file in a store of 1,000+ files: validate names it once, and what
points into it (ConsumeQueue units, IndexFile entries, the queue offsets of the records it may
have held) is not reported again (issue 19: the 194 knock-on errors of a ``chmod 000`` file).
The file is made unreadable by refusing its open, as EACCES does for a non-root user."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.errors import StoreIOError
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store import files
from mqtool.store.writer import StoreWriter, WriterConfig


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("big") / "store"
    cfg = WriterConfig(commitlog_file_size=4096, cq_file_size=400, index_hash_slot_num=64, index_num=256, index_tz=dt.timezone.utc)
    with StoreWriter(root, cfg) as w:
        for i in range(8000):
            w.append(cl.MessageRecord(topic=f"T{i % 3}", queue_id=i % 2, body=b"x" * 200, properties={"KEYS": f"k{i}", "TAGS": "a"}))
    assert sum(1 for p in root.rglob("*") if p.is_file()) >= 1000
    return root


@pytest.mark.parametrize("which", [1, -2])
def test_one_unreadable_file_is_one_error(big_store, monkeypatch, capsys, which):
    target = sorted((big_store / "commitlog").iterdir())[which]
    init = files.ReadOnlyFile.__init__

    def refuse(self, path, *args, **kwargs):
        if Path(path) == target:
            raise StoreIOError("Permission denied", path=path)
        init(self, path, *args, **kwargs)

    monkeypatch.setattr(files.ReadOnlyFile, "__init__", refuse)
    assert run(["validate", str(big_store), "-j", "1", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    errors = [(f["code"], f["path"]) for f in doc["findings"] if f["severity"] != "info"]
    assert errors == [("RMQ-FILE-UNREADABLE", str(target))]
    assert run(["validate", str(big_store), "-j", "1"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAILED: 1 error(s)")
    assert out.count("RMQ-FILE-UNREADABLE") == 1 and "RMQ-" not in out.replace("RMQ-FILE-UNREADABLE", "").replace("RMQ-CL-VALID-END", "")
