"""validate, dump consumequeue on a RocksDB ConsumeQueue (RocketMQ 5.2+, storeType=defaultRocksDB).

The stores are written by ``tests/rocksdb_cq_store.py`` (keys and values packed as
``RocksDBConsumeQueueTable`` / ``RocksDBConsumeQueueOffsetTable`` lay them out, with rocksdict).
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import shutil

import pytest

from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from tests import rocksdb_cq_store as w
from tests.conftest import run_cli


@pytest.fixture(scope="module", autouse=True)
def _rocksdict():
    w.require_rocksdict()


def validate(root):
    return validate_rocketmq(root, ValidateOptions(jobs=1))


def codes(report):
    return sorted(f.code for f in report.findings if f.level.value != "info")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("rocks") / "store"
    units = w.make_rocksdb_store(root)
    return root, units


@pytest.fixture
def store(base, tmp_path):
    root, units = base
    dest = tmp_path / "store"
    shutil.copytree(root, dest)
    return dest, units


def snapshot(root):
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            with open(p, "rb") as f:
                out[p] = (st.st_mtime_ns, st.st_size, hashlib.sha256(f.read()).hexdigest())
    return out


def test_validates_clean_and_never_writes(store):
    root, units = store
    before = snapshot(root)
    report = validate(root)
    assert codes(report) == []
    facts = report.facts["rocksdb_consumequeue"]
    assert facts["units"] == len(units) and facts["queues"] == 3
    assert facts["column_families"] == ["default", "offset"]
    code, out, _ = run_cli("dump", "consumequeue", root, "--jsonl")
    assert code == 0
    # read-only: no file of the store was added, changed or touched (rocksdict's own config file
    # goes to a private directory of links)
    assert snapshot(root) == before


def test_dump_rows(store):
    root, units = store
    code, out, _ = run_cli("dump", "consumequeue", root, "--jsonl")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    got = sorted((r["topic"], r["queue_id"], r["queue_offset"], r["commitlog_offset"], r["size"], r["tags_code"], r["store_timestamp"]) for r in rows)
    assert got == sorted((u.topic, u.queue_id, u.queue_offset, u.phy, u.size, u.tags_code, u.store_ts) for u in units)
    assert all(r["position"] is None and r["file"] == str(root / "consumequeue") for r in rows)
    code, out, _ = run_cli("dump", "consumequeue", root, "--topic", "TopicA", "--queue-id", "1", "--from-offset", "1", "--limit", "2", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [(r["topic"], r["queue_id"], r["queue_offset"]) for r in rows] == [("TopicA", 1, 1), ("TopicA", 1, 2)]


def test_dump_rows_match_schema(store):
    jsonschema = pytest.importorskip("jsonschema")
    from mqtool.schemas import schema

    root, _ = store
    _, out, _ = run_cli("dump", "consumequeue", root, "--jsonl")
    for line in out.splitlines():
        jsonschema.validate(json.loads(line), schema("dump-consumequeue"))


def test_unit_past_the_commitlog_end_is_found_at_its_key(tmp_path):
    root = tmp_path / "store"
    bad = w.Unit("TopicA", 0, 4, 1 << 19, 121, 0, w.T0)
    w.make_rocksdb_store(root, extra_units=[bad])
    report = validate(root)
    past = [f for f in report.findings if f.code == "RMQ-CQ-PAST-END"]
    assert len(past) == 1
    key = w.cq_key("TopicA", 0, 4).hex()
    assert past[0].path == str(root / "consumequeue") and past[0].details["key"] == key and key in past[0].message
    assert past[0].details["queue_offset"] == 4
    # the offset table's max entry is that unit (the writer wrote it so); the dispatch checkpoint
    # the writer put past it is past the CommitLog's end too
    assert codes(report) == ["RMQ-CQ-PAST-END", "RMQ-CQ-ROCKSDB-CHECKPOINT"]


def test_gap_offset_table_and_lag(tmp_path):
    root = tmp_path / "store"
    w.make_rocksdb_store(root, drop={("TopicA", 1, 1), ("TopicB", 0, 3)})
    report = validate(root)
    found = codes(report)
    assert "RMQ-CQ-ROCKSDB-GAP" in found  # TopicA/1: offset 1 missing between 0 and 2
    assert "RMQ-CQ-LAG" in found  # TopicB/0: its last record (queue offset 3) not in the RocksDB
    gap = next(f for f in report.findings if f.code == "RMQ-CQ-ROCKSDB-GAP")
    assert gap.details["queue_offset"] == 2 and gap.details["topic"] == "TopicA"


def test_mismatch_and_checkpoint(tmp_path):
    root = tmp_path / "store"
    units = w.make_rocksdb_store(root, checkpoint=1 << 30, drop={("TopicB", 0, 0)},
                                 extra_units=[w.Unit("TopicB", 0, 0, 118, 121, 98, w.T0)])  # the record of TopicA/1 #0
    del units
    report = validate(root)
    assert "RMQ-CQ-MISMATCH" in codes(report)
    assert "RMQ-CQ-ROCKSDB-CHECKPOINT" in codes(report)


def test_malformed_entry_and_wrong_max(tmp_path):
    from rocksdict import AccessType, Options, Rdict  # noqa: F401

    root = tmp_path / "store"
    w.make_rocksdb_store(root)
    db = Rdict(str(root / "consumequeue"), options=Options(raw_mode=True), column_families={"offset": Options(raw_mode=True)})
    db[b"\x00\x00\x00\x02\x01ab\x02"] = b"short"
    db.get_column_family("offset")[w.offset_key("TopicA", "max", 0)] = w.struct.pack(">qq", 0, 99)
    db.close()
    (root / "consumequeue" / "rocksdict-config.json").unlink(missing_ok=True)
    report = validate(root)
    assert "RMQ-CQ-ROCKSDB-ENTRY" in codes(report)
    off = [f for f in report.findings if f.code == "RMQ-CQ-ROCKSDB-OFFSET"]
    assert len(off) == 1 and off[0].details["topic"] == "TopicA" and off[0].details["queue_id"] == 0


def test_file_and_rocksdb_consume_queues_compared(tmp_path):
    root = tmp_path / "store"
    w.make_rocksdb_store(root, keep_file_cq=True)
    assert codes(validate(root)) == []
    root2 = tmp_path / "lost"
    w.make_rocksdb_store(root2, keep_file_cq=True, drop={("TopicA", 0, 3)})  # the double write lost a unit (apache/rocketmq#8589)
    report = validate(root2)
    div = [f for f in report.findings if f.code == "RMQ-CQ-ROCKSDB-DIVERGE"]
    assert len(div) == 1 and div[0].details == {"topic": "TopicA", "queue_id": 0, "only_file": 1, "only_rocksdb": 0, "differ": 0}
    # dump reads the file ConsumeQueue there, the RocksDB one when asked
    _, files, _ = run_cli("dump", "consumequeue", root2, "--topic", "TopicA", "--queue-id", "0", "--jsonl")
    _, rocks, _ = run_cli("dump", "consumequeue", root2, "--topic", "TopicA", "--queue-id", "0", "--jsonl", "--rocksdb")
    assert len(files.splitlines()) == len(rocks.splitlines()) + 1


def test_unopenable_database_is_unreadable(tmp_path):
    root = tmp_path / "store"
    w.make_rocksdb_store(root)
    for p in (root / "consumequeue").glob("MANIFEST-*"):
        p.write_bytes(b"not a manifest")
    report = validate(root)
    assert [f.code for f in report.findings if f.path == str(root / "consumequeue")] == ["RMQ-FILE-UNREADABLE"]


def test_without_the_extra_exit_4_names_it(store, monkeypatch):
    root, _ = store
    real_import = builtins.__import__

    def no_rocksdict(name, *args, **kwargs):
        if name == "rocksdict" or name.startswith("rocksdict."):
            raise ImportError("No module named 'rocksdict'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_rocksdict)
    for args in (["validate", root], ["dump", "consumequeue", root]):
        code, _, err = run_cli(*args)
        assert code == 4, (args, err)
        assert "mqtool[rocksdb]" in err


def test_query_by_queue_offset(store):
    root, units = store
    u = next(u for u in units if (u.topic, u.queue_id, u.queue_offset) == ("TopicA", 1, 2))
    code, out, _ = run_cli("query", root, "--topic", "TopicA", "--queue-id", "1", "--queue-offset", "2", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 1
    assert rows[0]["commitlog_offset"] == u.phy and rows[0]["queue_offset"] == 2 and rows[0]["found_via"] == "consumequeue"
    code, _, err = run_cli("query", root, "--topic", "TopicA", "--queue-id", "1", "--queue-offset", "9")
    assert code == 1 and "no RocksDB ConsumeQueue unit" in err and "[0, 4)" in err


def test_lag(store):
    root, units = store
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"TopicA@g1":{0:2,1:4},"TopicB@g1":{0:1},"TopicC@g1":{0:0}}}')
    code, out, _ = run_cli("lag", root, "--json")
    rows = {(r["topic"], r["queue_id"]): r for r in json.loads(out)["lag"]}
    a0 = sorted((u for u in units if (u.topic, u.queue_id) == ("TopicA", 0)), key=lambda u: u.queue_offset)
    assert rows[("TopicA", 0)]["log_end_offset"] == len(a0) and rows[("TopicA", 0)]["lag_messages"] == len(a0) - 2
    assert rows[("TopicA", 0)]["lag_bytes"] == sum(u.size for u in a0[2:])
    assert rows[("TopicA", 0)]["oldest_unconsumed_timestamp"] == a0[2].store_ts
    assert rows[("TopicA", 1)]["lag_messages"] == 0
    assert rows[("TopicC", 0)]["log_end_offset"] is None  # no such queue: unknown, never 0


def test_info_reads_the_queues_from_the_offset_table_and_names_the_version_mark(store):
    root, units = store
    before = snapshot(root)
    code, out, err = run_cli("info", root, "--json")
    info = json.loads(out)
    queues = {(q["topic"], q["queue_id"]): q for q in info["queues"]}
    for key in {(u.topic, u.queue_id) for u in units}:
        mine = sorted((u for u in units if (u.topic, u.queue_id) == key), key=lambda u: u.queue_offset)
        assert (queues[key]["log_start_offset"], queues[key]["log_end_offset"]) == (0, len(mine))
        assert queues[key]["max_commitlog_offset"] == mine[-1].phy + mine[-1].size
    assert any("RocksDB" in h for h in info["version_hints"])
    # the restart preview models a file ConsumeQueue: for a RocksDB one it says so instead of guessing
    assert info["restart"] is None and any("restart preview does not model a RocksDB ConsumeQueue" in p for p in info["problems"])
    assert "restart preview" in err and snapshot(root) == before


def test_query_by_time_window(store):
    root, units = store
    a = sorted((u for u in units if u.topic == "TopicA"), key=lambda u: u.store_ts)
    begin, end = a[2].store_ts, a[5].store_ts
    code, out, _ = run_cli("query", root, "--topic", "TopicA", "--begin", begin, "--end", end, "--json")
    rows = json.loads(out)
    assert code == 0
    assert sorted(r["commitlog_offset"] for r in rows) == sorted(u.phy for u in a if begin <= u.store_ts <= end)
    code, out, _ = run_cli("query", root, "--topic", "TopicA", "--tag", "tag1", "--json")
    assert code == 0 and sorted(r["commitlog_offset"] for r in json.loads(out)) == sorted(u.phy for u in a if u.tags_code == w.java_hash("tag1"))


def test_recover_refuses_and_report_says_so(tmp_path):
    from mqtool.ops.report import gather

    root = tmp_path / "store"
    w.make_rocksdb_store(root, extra_units=[w.Unit("TopicA", 0, 4, 1 << 19, 121, 0, w.T0)])
    before = snapshot(root)
    # recover's dispatch steps write file ConsumeQueue units: not beside a RocksDB one (exit 4)
    code, _, err = run_cli("recover", root)
    assert code == 4 and "RocksDB ConsumeQueue" in err
    report = gather(root, "rocketmq", jobs=1)
    assert any("no recover plan" in n for n in report.notes)
    seg = next(s for log in report.logs for s in log.segments if s.path == "consumequeue")
    assert [m.code for m in seg.marks] == ["RMQ-CQ-PAST-END", "RMQ-CQ-ROCKSDB-CHECKPOINT"]
    assert snapshot(root) == before


@pytest.mark.parametrize("which", [0, -1])  # the two column families' SSTs
@pytest.mark.parametrize("where", [0.0, 0.3, 0.6, 0.95])
def test_damaged_sst_is_a_finding_or_read_on(tmp_path, which, where):
    """A flipped byte anywhere in an SST: RocksDB's block checksums refuse it (RMQ-FILE-UNREADABLE on
    consumequeue/) or the bytes it lands in are not read by a scan; never a crash."""
    root = tmp_path / "store"
    w.make_rocksdb_store(root)
    ssts = sorted((root / "consumequeue").glob("*.sst"), key=lambda p: p.stat().st_size)
    assert len(ssts) == 2
    sst = ssts[which]
    data = bytearray(sst.read_bytes())
    data[int(len(data) * where)] ^= 0xFF
    sst.write_bytes(bytes(data))
    report = validate(root)
    found = {f.code for f in report.findings if f.path == str(root / "consumequeue")}
    assert found <= {"RMQ-FILE-UNREADABLE", "RMQ-CQ-ROCKSDB-ENTRY", "RMQ-CQ-ROCKSDB-GAP", "RMQ-CQ-ROCKSDB-OFFSET", "RMQ-CQ-MISMATCH", "RMQ-CQ-LAG"}
    if where == 0.0:  # the first data block: its checksum fails (rocksdict's items() would end there silently)
        assert "RMQ-FILE-UNREADABLE" in found
    code, _, err = run_cli("dump", "consumequeue", root, "--jsonl")
    assert code in (0, 1) and "Traceback" not in err


def test_stats_reads_the_commitlog_of_a_rocksdb_store(store):
    # stats counts CommitLog records; a RocksDB ConsumeQueue no longer makes it exit 4
    root, units = store
    code, out, _ = run_cli("stats", root, "--json")
    totals = json.loads(out)["totals"]
    assert code == 0 and totals["messages"] == len(units) and totals["queues"] == 3
