"""Derived data missing while the CommitLog holds its records (issue 28, point 3), through the CLI.

On copies of ``fixtures/rocketmq-store`` (245 records, 244 of them with a UNIQ_KEY and KEYS; two
IndexFiles; AuditLog/0 in two 1000-byte ConsumeQueue files of 50 units):

* ``index/`` deleted, or one of its two IndexFiles: validate warns RMQ-IDX-MISSING with the count
  of keyed records no IndexFile covers (a query by key finds nothing and names it); recover
  rebuilds the IndexFiles; validate after it is clean and the query finds the record;
* AuditLog/0's first ConsumeQueue file deleted: validate errs RMQ-CQ-MISSING-HEAD (50 records,
  queue offsets 0..49, are in no ConsumeQueue file); recover writes the file again; validate
  after it is clean and the queue serves offset 0 again; with the CommitLog's first file expired
  too, the rebuilt file starts with filler units (``ConsumeQueue.fillPreBlank``) before the
  first record still there.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from mqtool.formats.rocketmq.index_file import decode_index_header
from mqtool.ops.dump.rocketmq import CommitLogDump, commitlog_files
from mqtool.store.model.derived import is_indexed
from tests.conftest import FIXTURES, copy_fixture
from tests.conftest import run_cli as mqtool

FIXTURE = FIXTURES / "rocketmq-store"
INDEX_FILES = sorted(p.name for p in (FIXTURE / "index").iterdir())
#: commitlog offset and UNIQ_KEY of every record with keys (all but the rolled-back transaction record)
KEYED = [(loc.address, rec.uniq_key) for loc, rec in CommitLogDump(commitlog_files(FIXTURE)) if is_indexed(rec)]
#: where the first IndexFile ends and the second begins (the record both hold keys of)
INDEX_SPLIT = decode_index_header((FIXTURE / "index" / INDEX_FILES[0]).read_bytes()[:40]).end_phy_offset
#: TopicTest's first record: KEYS "KEY0 order-0", at commitlog offset 0 (in the first IndexFile)
FIRST_KEY = ("KEY0", "TopicTest", "0A000007109218B4AAC2000003E80000")


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    return copy_fixture("rocketmq-store", tmp_path / "store")


def findings(root: Path, *codes: str) -> tuple[int, list[dict]]:
    code, out, _err = mqtool("validate", root, "--json")
    return code, [f for f in json.loads(out)["findings"] if not codes or f["code"] in codes]


def serious(root: Path) -> list[tuple[str, str]]:
    """validate's errors and warnings: none on a clean store."""
    _code, found = findings(root)
    return [(f["code"], f["message"]) for f in found if f["severity"] != "info"]


def recover(root: Path, tmp_path: Path) -> dict:
    code, out, err = mqtool("recover", root, "--json")
    assert code == 1, err  # a plan with work
    plan = json.loads(out)
    code, _out, err = mqtool("recover", root, "--apply", "--quarantine", tmp_path / "quarantine")
    assert code == 0, err
    return plan


@pytest.mark.parametrize("gone", ["index", *INDEX_FILES])
def test_keys_no_indexfile_covers_are_found_and_rebuilt(store, tmp_path, gone):
    target = store / "index" if gone == "index" else store / "index" / gone
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    code, found = findings(store, "RMQ-IDX-MISSING")
    assert code == 0  # a warning: the records are all there, a query by key misses them
    assert [(f["severity"], f["path"], f["position"]) for f in found] == [("warning", str(store / "index"), None)]
    # the whole index: every keyed record; one of the two files: the records only it covered (the
    # first file ends, and the second begins, at the record both hold keys of)
    only = {"index": lambda at: True, INDEX_FILES[0]: lambda at: at < INDEX_SPLIT, INDEX_FILES[1]: lambda at: at > INDEX_SPLIT}[gone]
    keyed = [at for at, uniq in KEYED if only(at)]
    assert found[0]["details"] == {"unindexed_records": len(keyed), "from_commitlog_offset": keyed[0], "to_commitlog_offset": keyed[-1]}
    if gone == "index":
        assert "index/ is absent" in found[0]["message"]

    key, topic, uniq = FIRST_KEY
    if gone in ("index", INDEX_FILES[0]):
        code, out, err = mqtool("query", store, "--key", key, "--topic", topic, "--json")
        assert code == 1 and json.loads(out) == []
        assert f"RMQ-IDX-MISSING {store / 'index'}: " in err

    plan = recover(store, tmp_path)
    assert [s["action"] for s in plan["steps"]] == ["rebuild-index"]
    assert serious(store) == []
    for args in (["--key", key], ["--uniq-key", uniq]):
        code, out, err = mqtool("query", store, *args, "--topic", topic, "--json")
        assert code == 0, err
        assert [h["commitlog_offset"] for h in json.loads(out)] == [0]


def test_a_complete_index_is_no_finding(store):
    assert findings(store, "RMQ-IDX-MISSING") == (0, [])


def test_a_missing_head_consumequeue_file_is_found_and_rebuilt(store, tmp_path):
    qdir = store / "consumequeue" / "AuditLog" / "0"
    head = qdir / "00000000000000000000"
    original = head.read_bytes()
    head.unlink()
    code, found = findings(store, "RMQ-CQ-MISSING-HEAD")
    assert code == 1
    assert [(f["severity"], f["path"], f["position"]) for f in found] == [("error", str(qdir), None)]
    assert found[0]["details"] == {"topic": "AuditLog", "queue_id": 0, "from_queue_offset": 0, "to_queue_offset": 50, "missing_units": 50}

    code, out, err = mqtool("query", store, "--topic", "AuditLog", "--queue-id", 0, "--queue-offset", 0, "--json")
    assert code == 1 and json.loads(out) == []
    assert f"RMQ-CQ-MISSING-HEAD {qdir}: " in err

    plan = recover(store, tmp_path)
    [step] = plan["steps"]
    assert (step["action"], step["path"]) == ("dispatch-cq", "consumequeue/AuditLog/0")
    assert (step["details"]["from_queue_offset"], step["details"]["to_queue_offset"], step["details"]["count"]) == (0, 50, 50)
    assert head.read_bytes() == original  # the broker's own units, byte for byte
    assert serious(store) == []
    code, out, err = mqtool("query", store, "--topic", "AuditLog", "--queue-id", 0, "--queue-offset", 0, "--json")
    assert code == 0, err
    assert [h["queue_offset"] for h in json.loads(out)] == [0]


def test_a_head_rebuilt_after_retention_starts_with_fillers(store, tmp_path):
    """The CommitLog's first file expired (AuditLog/0's queue offsets 0..14 are gone with it) and
    the head ConsumeQueue file deleted: the records of queue offsets 15..49 are rebuilt, after 15
    filler units, as the broker's ``fillPreBlank`` writes a queue's first file."""
    (store / "commitlog" / "00000000000000000000").unlink()
    head = store / "consumequeue" / "AuditLog" / "0" / "00000000000000000000"
    head.unlink()
    _code, found = findings(store, "RMQ-CQ-MISSING-HEAD")
    assert [(f["details"]["from_queue_offset"], f["details"]["to_queue_offset"]) for f in found] == [(15, 50)]
    recover(store, tmp_path)
    assert serious(store) == []
    units = [struct.unpack_from(">qiq", head.read_bytes(), i * 20) for i in range(50)]
    assert units[:15] == [(0, 2**31 - 1, 0)] * 15
    assert all(offset >= 16384 and size > 0 for offset, size, _tags in units[15:])
    code, out, _err = mqtool("info", store, "--json")
    [queue] = [q for q in json.loads(out)["queues"] if (q["topic"], q["queue_id"]) == ("AuditLog", 0)]
    assert (queue["log_start_offset"], queue["log_end_offset"]) == (15, 80)


@pytest.mark.parametrize("enabled", ["false", "FALSE"])
def test_broker_conf_without_message_index_makes_a_missing_index_info_and_not_rebuilt(store, tmp_path, enabled):
    """``messageIndexEnable=false`` in the broker.conf given with ``--config``: the broker builds
    no IndexFile (``CommitLogDispatcherBuildIndex``), so keyed records in none are no warning, and
    recover builds none unless asked (``--rebuild-index``)."""
    shutil.rmtree(store / "index")
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b\nmessageIndexEnable={enabled}\n")
    code, out, _ = mqtool("validate", store, "--json", "--config", conf)
    (found,) = [f for f in json.loads(out)["findings"] if f["code"] == "RMQ-IDX-MISSING"]
    assert code == 0 and found["severity"] == "info" and "broker.conf sets messageIndexEnable=false" in found["message"]
    code, out, _ = mqtool("recover", store, "--json", "--config", conf)
    plan = json.loads(out)
    assert "rebuild-index" not in [s["action"] for s in plan["steps"]]
    assert any("broker.conf sets messageIndexEnable=false" in n for n in plan["notes"])


def test_broker_conf_with_message_index_makes_a_never_written_index_a_warning(store, tmp_path):
    """No ``index/`` and a checkpoint recording no IndexFile flush look like an index turned off;
    ``messageIndexEnable=true`` in broker.conf says the broker should have built one."""
    shutil.rmtree(store / "index")
    cp = bytearray((store / "checkpoint").read_bytes())
    cp[16:24] = bytes(8)  # indexMsgTimestamp 0 (StoreCheckpoint: physic, logics, index)
    (store / "checkpoint").write_bytes(bytes(cp))
    _code, found = findings(store, "RMQ-IDX-MISSING")
    assert [f["severity"] for f in found] == ["info"]
    conf = tmp_path / "broker.conf"
    conf.write_text("messageIndexEnable=true\n")
    code, out, _ = mqtool("validate", store, "--json", "--config", conf)
    assert [f["severity"] for f in json.loads(out)["findings"] if f["code"] == "RMQ-IDX-MISSING"] == ["warning"]
    code, out, _ = mqtool("recover", store, "--json", "--config", conf)
    assert "rebuild-index" in [s["action"] for s in json.loads(out)["steps"]]
