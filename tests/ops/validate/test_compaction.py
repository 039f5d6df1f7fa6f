"""validate and dump on RocketMQ compaction stores written by ``tests/compaction_store.py``: a clean
store (compacted or not) validates clean and dumps every record and unit; each damage the checks
name; damage placed anywhere in the written records and units gives a finding at its position
(hypothesis)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.findings import Finding
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from tests.compaction_store import UNIT_LEN, make_compaction_store
from tests.conftest import run_cli

ONLY = ValidateOptions(checks=frozenset({"compaction", "files"}))


def compaction_findings(root: Path) -> list[Finding]:
    report = validate_rocketmq(root, ONLY)
    return [f for f in report.findings if f.path.startswith(str(root / "compaction"))]


def codes(findings: list[Finding]) -> list[str]:
    return sorted({f.code for f in findings})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("compaction") / "store"
    writer = make_compaction_store(root, 120)
    return root, writer


@pytest.fixture
def copy(store, tmp_path):
    root, writer = store
    dst = tmp_path / "store"
    shutil.copytree(root, dst)
    return dst, writer


def _at(path: Path, root: Path, new_root: Path) -> Path:
    return new_root / path.relative_to(root)


def _patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def test_a_clean_compaction_store_validates_clean(store):
    root, writer = store
    report = validate_rocketmq(root, ValidateOptions())
    assert [f for f in report.findings if f.family == "compaction" or f.path.startswith(str(root / "compaction"))] == []
    files = {p.log_file for p in writer.placed}
    assert report.facts["compaction"] == {"queues": 2, "log_files": len(files), "records": 120, "units": 120}
    assert len(files) > 4  # the writer rolled files (a full sparse CQ file, a full log file)


def test_a_compacted_store_with_gaps_in_its_queue_offsets_validates_clean(tmp_path):
    root = tmp_path / "store"
    writer = make_compaction_store(root, 90, keep=lambda i: i % 3 != 1, positions={"Compacted_0": 10, "Compacted_1": 12})
    assert compaction_findings(root) == []
    offsets = [p.queue_offset for p in writer.placed if p.queue_id == 0]
    assert offsets != list(range(len(offsets)))  # gaps


def test_dump_compactionlog_lists_every_record_the_writer_placed(store):
    root, writer = store
    code, out, _ = run_cli("dump", "compactionlog", root, "--jsonl")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    want = sorted((p.topic, p.queue_id, p.offset, p.queue_offset, p.size, str(p.log_file), p.position) for p in writer.placed)
    got = sorted((r["topic"], r["queue_id"], r["compaction_offset"], r["queue_offset"], r["total_size"], r["file"], r["position"]) for r in rows)
    assert got == want
    assert all(r["physical_offset"] == r["compaction_offset"] for r in rows)


def test_dump_compactioncq_lists_every_unit(store):
    root, writer = store
    code, out, _ = run_cli("dump", "compactioncq", root / "compaction" / "compactionCq" / "Compacted", "--jsonl")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    want = sorted((p.queue_id, p.queue_offset, p.offset, p.size, str(p.cq_file), p.cq_position) for p in writer.placed)
    assert sorted((r["queue_id"], r["queue_offset"], r["compaction_offset"], r["size"], r["file"], r["position"]) for r in rows) == want
    assert {r["batch_size"] for r in rows} == {1} and {r["compacted_offset"] for r in rows} == {-1}


def test_dump_filters_and_limits(store):
    root, writer = store
    code, out, _ = run_cli("dump", "compactionlog", root, "--queue-id", "1", "--limit", "4", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 4 and {r["queue_id"] for r in rows} == {1}
    one = writer.placed[5].log_file
    code, out, _ = run_cli("dump", "compactionlog", one, "--jsonl")
    assert code == 0 and {json.loads(line)["file"] for line in out.splitlines()} == {str(one)}


def test_dump_names_the_family_of_the_other_directory(store):
    root, _ = store
    code, _, err = run_cli("dump", "compactionlog", root / "compaction" / "compactionCq")
    assert code != 0 and "mqtool dump compactioncq" in err
    code, _, err = run_cli("dump", "compactioncq", root / "commitlog")
    assert code != 0 and "compaction" in err


def test_a_log_file_without_its_cq_file_is_a_pair_finding(copy):
    root, writer = copy
    cq = root / "compaction" / "compactionCq" / "Compacted" / "0"
    last = sorted(cq.iterdir())[-1]
    last.unlink()
    found = [f for f in compaction_findings(root) if f.code == "RMQ-COMPACTION-PAIR"]
    assert [f.path for f in found] == [str(root / "compaction" / "compactionLog" / "Compacted" / "0" / last.name)]


def test_a_queue_without_its_cq_directory_is_a_pair_finding(copy):
    root, _ = copy
    shutil.rmtree(root / "compaction" / "compactionCq" / "Compacted" / "1")
    found = compaction_findings(root)
    assert str(root / "compaction" / "compactionLog" / "Compacted" / "1") in [f.path for f in found if f.code == "RMQ-COMPACTION-PAIR"]
    assert "RMQ-COMPACTION-UNINDEXED" in codes(found)


def test_a_compacting_folder_is_an_unfinished_compaction(copy):
    root, _ = copy
    (root / "compaction" / "compactionLog" / "Compacted" / "0" / "compacting").mkdir()
    assert codes(compaction_findings(root)) == ["RMQ-COMPACTION-IN-PROGRESS"]


def test_a_unit_of_the_wrong_size_is_found_at_its_position(copy):
    root, writer = copy
    p = writer.placed[7]
    cq = _at(p.cq_file, writer.root, root)
    _patch(cq, p.cq_position + 8, struct.pack(">i", p.size + 1))
    found = compaction_findings(root)
    assert [(f.code, f.path, f.position) for f in found] == [("RMQ-COMPACTION-CQ-MISMATCH", str(cq), p.cq_position)]
    assert f"size {p.size}, found {p.size + 1}" in found[0].message


def test_a_zeroed_unit_leaves_the_records_after_it_unindexed(copy):
    root, writer = copy
    p = writer.placed[8]
    cq = _at(p.cq_file, writer.root, root)
    _patch(cq, p.cq_position, bytes(UNIT_LEN))
    found = compaction_findings(root)
    unindexed = [f for f in found if f.code == "RMQ-COMPACTION-UNINDEXED"]
    assert [(f.path, f.position) for f in unindexed] == [(str(_at(p.log_file, writer.root, root)), p.position)]


def test_a_broken_record_and_a_rewritten_physical_offset(copy):
    root, writer = copy
    a, b = writer.placed[3], writer.placed[10]  # queue 1, queue 0
    assert (a.queue_id, b.queue_id) == (1, 0)
    _patch(_at(a.log_file, writer.root, root), a.position + a.size - 5, b"\xff")  # its properties / topic: a decode error
    _patch(_at(b.log_file, writer.root, root), b.position + 28, struct.pack(">q", b.offset + 4096))
    found = compaction_findings(root)
    by_code = {f.code: (f.path, f.position) for f in found if f.code.startswith("RMQ-COMPACTION-RECORD")}
    assert by_code["RMQ-COMPACTION-RECORD-FIELD"] == (str(_at(b.log_file, writer.root, root)), b.position)
    assert by_code["RMQ-COMPACTION-RECORD"][0] == str(_at(a.log_file, writer.root, root))


def test_garbage_after_the_valid_data(copy):
    root, writer = copy
    last = max((p for p in writer.placed if p.queue_id == 0), key=lambda p: p.offset)
    log = _at(last.log_file, writer.root, root)
    _patch(log, last.position + last.size + 100, b"junk")
    found = [f for f in compaction_findings(root) if f.code == "RMQ-COMPACTION-GARBAGE"]
    assert [(f.path, f.position) for f in found] == [(str(log), last.position + last.size + 100)]


def test_a_position_past_the_log_and_an_unparseable_checkpoint(copy):
    root, _ = copy
    pos = root / "compaction" / "position-checkpoint"
    pos.write_text(json.dumps({"queueOffsetMap": {"Compacted_0": 10_000}}))
    found = compaction_findings(root)
    assert [(f.code, f.path) for f in found] == [("RMQ-COMPACTION-POSITION", str(pos))]
    pos.write_text("{not json")
    assert codes(compaction_findings(root)) == ["RMQ-COMPACTION-POSITION"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damage_placed_anywhere_is_found_at_its_position(store, tmp_path_factory, data):
    root, writer = store
    dst = tmp_path_factory.mktemp("damaged") / "store"
    shutil.copytree(root, dst)
    p = data.draw(st.sampled_from(writer.placed), label="record")
    in_unit = data.draw(st.booleans(), label="in its unit")
    if in_unit:
        target, at = _at(p.cq_file, writer.root, dst), p.cq_position + data.draw(st.integers(0, UNIT_LEN - 1), label="byte")
    else:
        start, length = data.draw(st.sampled_from([(0, 16), (20, 16), (56, 8), (88, 2)]), label="field")
        target, at = _at(p.log_file, writer.root, dst), p.position + data.draw(st.integers(start, start + length - 1), label="byte")
    flip = data.draw(st.integers(1, 255), label="xor")
    raw = bytearray(target.read_bytes())
    raw[at] ^= flip
    target.write_bytes(bytes(raw))
    found = compaction_findings(dst)
    places = {(str(_at(p.cq_file, writer.root, dst)), p.cq_position), (str(_at(p.log_file, writer.root, dst)), p.position)}
    assert any((f.path, f.position) in places for f in found), (target, at, [(f.code, f.path, f.position) for f in found])


def test_dump_commitlog_and_consumequeue_name_the_compaction_families(store):
    root, writer = store
    code, _, err = run_cli("dump", "commitlog", writer.placed[0].log_file)
    assert code != 0 and "mqtool dump compactionlog" in err
    code, _, err = run_cli("dump", "consumequeue", writer.placed[0].cq_file.parent)
    assert code != 0 and "mqtool dump compactioncq" in err


def test_a_unit_recovery_stops_at_is_found_at_its_position(copy):
    """A unit that is neither valid, the end unit nor zeros (its size field negative): the broker's
    ``SparseConsumeQueue.recover`` drops it and every unit after it in the file."""
    root, writer = copy
    p = writer.placed[9]
    cq = _at(p.cq_file, writer.root, root)
    _patch(cq, p.cq_position + 8, struct.pack(">i", -5))
    found = compaction_findings(root)
    units = [(f.code, f.path, f.position) for f in found if f.code == "RMQ-COMPACTION-CQ-UNIT"]
    assert units == [("RMQ-COMPACTION-CQ-UNIT", str(cq), p.cq_position)]
    assert "size -5" in next(f.message for f in found if f.code == "RMQ-COMPACTION-CQ-UNIT")


def test_a_unit_whose_base_offset_goes_back_is_out_of_order(copy):
    """Units must grow in offset and msgBaseOffset: the broker binary-searches them."""
    root, writer = copy
    p = writer.placed[10]
    cq = _at(p.cq_file, writer.root, root)
    _patch(cq, p.cq_position + 28, struct.pack(">q", 0))  # msgBaseOffset (BatchConsumeQueue unit: q i q q q h i i)
    found = compaction_findings(root)
    order = [(f.code, f.path, f.position) for f in found if f.code == "RMQ-COMPACTION-CQ-ORDER"]
    assert order == [("RMQ-COMPACTION-CQ-ORDER", str(cq), p.cq_position)]
