"""The Kafka restart preview (``store.model.kafka_broker``) against the recovery it models: on the
healthy fixture and damaged copies, ``info --json``'s ``restart`` and ``recover --json``'s
``facts.restart`` agree, and ``scan_bytes`` is what ``LogSegment.recover`` reads of the segments the
modelled broker recovers (``kafka_recovery.scan_segment``'s valid bytes), per broker version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.store.model import kafka_broker as kb
from mqtool.store.model.kafka_recovery import scan_segment
from tests.conftest import FIXTURES, copy_fixture, run_cli


def _log(root: Path, partition: str, base: int, kind: str = "log") -> Path:
    return root / partition / segnames.kafka_file_name(base, kind)


def _valid(root: Path, partition: str, base: int) -> int:
    return scan_segment(_log(root, partition, base), base, 4096).valid_bytes


def _previews(root: Path, *extra: object) -> tuple[dict, dict]:
    code, out, err = run_cli("info", root, "--json", *extra)
    assert code in (0, 1), err
    info = json.loads(out)["restart"]
    code, out, err = run_cli("recover", root, "--json", *extra)
    assert code in (0, 1), err
    plan = json.loads(out)["facts"]["restart"]
    return info, plan


def _same(info: dict, plan: dict) -> None:
    """The two previews say the same, but for the read speed each measured on its own reading."""
    for key in ("broker_version", "broker_model", "recovery", "starts_at", "scan_bytes", "drops", "rebuilds"):
        assert info[key] == plan[key], key


def _set_recovery_point(root: Path, topic: str, partition: int, offset: int) -> None:
    path = root / cpf.RECOVERY_POINT_OFFSET_CHECKPOINT
    lines = path.read_text().splitlines()
    lines = [f"{topic} {partition} {offset}" if line.startswith(f"{topic} {partition} ") else line for line in lines]
    path.write_text("\n".join(lines) + "\n")


def test_healthy_clean_store_reads_only_the_metadata_log(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    info, plan = _previews(root)
    _same(info, plan)
    metadata = _log(root, "__cluster_metadata-0", 0)
    assert info["recovery"] == "normal" and info["broker_model"] == "3.0+"
    assert info["scan_bytes"] == _valid(root, "__cluster_metadata-0", 0) == metadata.stat().st_size
    assert info["rebuilds"]["segments_recovered"] == ["__cluster_metadata-0/00000000000000000000.log"]
    assert info["drops"] == {"records": 0, "records_complete": True, "bytes": 0, "cut": [], "files_deleted": []}
    # before 3.0.0 the metadata log skipped recovery after a clean shutdown too
    info, plan = _previews(root, "--broker-version", "2.8.2")
    _same(info, plan)
    assert info["broker_version"] == "2.8.2" and info["broker_model"] == "2.3-2.8" and info["scan_bytes"] == 0
    assert info["estimated_seconds"] == 0.0


def test_unclean_store_reads_from_each_recovery_point(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    (root / cpf.CLEAN_SHUTDOWN).unlink()
    _set_recovery_point(root, "orders", 0, 40)  # orders-0 recovers from segment 30 on
    info, plan = _previews(root)
    _same(info, plan)
    assert info["recovery"] == "abnormal"
    expected = _valid(root, "__cluster_metadata-0", 0) + sum(_valid(root, "orders-0", b) for b in (30, 60, 90))
    rps = {"__consumer_offsets-0": 22, "__transaction_state-0": 7, "events-0": 65, "legacy-0": 14, "orders-1": 96}
    for directory, rp in rps.items():  # each from the segment holding its recovery point (the last one here)
        bases = sorted(int(p.name.split(".")[0]) for p in (root / directory).glob("*.log"))
        base = max(b for b in bases if b <= rp)
        expected += _valid(root, directory, base)
    assert info["scan_bytes"] == expected
    (orders,) = [s for s in info["starts_at"] if s["directory"] == "orders-0"]
    assert orders == {
        "directory": "orders-0",
        "recovery_point": 40,
        "file": "orders-0/00000000000000000030.log",
        "base_offset": 30,
        "rule": "the segment holding the recovery point (LogLoader.recoverLog)",
    }
    assert info["estimated_seconds"] is not None and info["read_bytes_per_second"] is not None


def test_broken_batch_cuts_and_deletes_the_later_segments(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    (root / cpf.CLEAN_SHUTDOWN).unlink()
    _set_recovery_point(root, "orders", 0, 40)
    seg = _log(root, "orders-0", 30)
    raw = bytearray(seg.read_bytes())
    raw[2000] ^= 0xFF  # a byte inside a batch: its CRC fails
    seg.write_bytes(bytes(raw))
    valid = _valid(root, "orders-0", 30)
    assert 0 < valid <= 2000
    info, plan = _previews(root)
    _same(info, plan)
    drops = info["drops"]
    assert drops["cut"] == [{"file": "orders-0/00000000000000000030.log", "position": valid, "length": len(raw) - valid}]
    assert drops["files_deleted"] == ["orders-0/00000000000000000060.log", "orders-0/00000000000000000090.log"]
    assert drops["bytes"] == len(raw) - valid + _log(root, "orders-0", 60).stat().st_size + _log(root, "orders-0", 90).stat().st_size
    # the records the plan counts as dropped (its --force reason) are the preview's
    assert drops["records"] == json.loads(run_cli("recover", root, "--json")[1])["records_dropped"] > 0
    # the scan stops at the cut: segments 60 and 90 are not read
    assert sum(1 for f in info["rebuilds"]["segments_recovered"] if f.startswith("orders-0/")) == 1


def test_torn_tail_of_the_active_segment(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    (root / cpf.CLEAN_SHUTDOWN).unlink()
    bases = sorted(int(p.name.split(".")[0]) for p in (root / "orders-1").glob("*.log"))
    seg = _log(root, "orders-1", bases[-1])
    with open(seg, "r+b") as f:
        f.truncate(seg.stat().st_size - 30)
    info, plan = _previews(root)
    _same(info, plan)
    (cut,) = info["drops"]["cut"]
    assert cut["file"] == f"orders-1/{seg.name}" and cut["position"] == _valid(root, "orders-1", bases[-1])
    assert info["drops"]["files_deleted"] == []


def test_odd_size_index_is_rebuilt_at_load_only_before_2_3(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    with open(_log(root, "orders-0", 0, "index"), "ab") as f:
        f.write(b"\x01\x02\x03")
    old, plan = _previews(root, "--broker-version", "2.2.1")
    _same(old, plan)
    assert old["broker_model"] == "0.11-2.2" and old["recovery"] == "normal"
    assert old["scan_bytes"] == _valid(root, "orders-0", 0)  # recovered at load although the shutdown was clean
    (orders,) = [s for s in old["starts_at"] if s["directory"] == "orders-0"]
    assert orders["file"] == "orders-0/00000000000000000000.log" and "before 2.3.0" in orders["rule"]
    new, plan = _previews(root, "--broker-version", "3.7.0")
    _same(new, plan)
    assert new["scan_bytes"] == _valid(root, "__cluster_metadata-0", 0)  # the odd index is kept: only the metadata log is read


def test_missing_offset_index_is_recovered_at_load_in_every_version(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    _log(root, "orders-0", 30, "index").unlink()
    info, plan = _previews(root, "--broker-version", "2.8.0")
    _same(info, plan)
    assert info["scan_bytes"] == _valid(root, "orders-0", 30)
    (orders,) = [s for s in info["starts_at"] if s["directory"] == "orders-0"]
    assert orders["rule"].startswith("no .index")


@pytest.mark.parametrize(
    "version,model",
    [("0.11.0", "0.11-2.2"), ("2.2.9", "0.11-2.2"), ("2.3.0", "2.3-2.8"), ("2.8.2", "2.3-2.8"), ("3.0.0", "3.0+"), ("3.9.1", "3.0+")],
)
def test_version_chooses_the_model(version, model):
    broker = kb.model_for(kb.parse_version(version), exact=True, source="--broker-version")
    assert broker.model == model and broker.version == version
    assert broker.checks_indexes_at_load == (model == "0.11-2.2")
    assert broker.recovers_metadata_log == (model == "3.0+")


def test_store_marks_and_default(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    from mqtool.store import kafka as ks

    broker = kb.resolve_broker(ks.open_kafka(root))
    assert broker.model == "3.0+" and "store marks of 3.7.0+" in broker.source and broker.evidence
    bare = tmp_path / "bare" / "orders-0"
    bare.parent.mkdir()
    import shutil

    shutil.copytree(root / "orders-0", bare)
    (bare / "partition.metadata").unlink()
    broker = kb.resolve_broker(ks.open_kafka(bare))
    assert broker.model == "3.0+" and broker.source.startswith("no version given")


def test_validate_and_info_name_the_version():
    code, out, _ = run_cli("validate", FIXTURES / "kafka-logs", "-j", "1", "--broker-version", "2.2.1")
    assert code == 0 and "broker modelled: Kafka 2.2.1 (--broker-version)" in out
    code, out, _ = run_cli("info", FIXTURES / "kafka-logs", "--broker-version", "2.2.1")
    assert code == 0 and "Kafka 2.2.1 (--broker-version)" in out
    code, _, _err = run_cli("info", FIXTURES / "jafka-data", "--broker-version", "2.2.1")
    assert code == 2


# --- every Kafka damage kind of the consistency matrix ---------------------------------------------


def _expected_scan(root: Path) -> int:
    """What the newest model's start reads, worked out here from ``scan_segment`` alone: segments
    without ``.index`` at load; without ``.kafka_cleanshutdown``, every segment from the one holding
    the recovery point to the first one cut; the metadata log from its first segment always."""
    from mqtool.store import kafka as ks

    clean = (root / cpf.CLEAN_SHUTDOWN).exists()
    rps = kb.recovery_points(ks.open_kafka(root))
    total = 0
    for part in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.endswith("-delete") and "-" in p.name):
        topic, _, number = part.name.rpartition("-")
        bases = sorted(int(p.name.split(".")[0]) for p in part.glob("*.log"))
        for base in bases:
            if not _log(root, part.name, base, "index").exists():
                total += _valid(root, part.name, base)
        metadata = topic == "__cluster_metadata"
        if clean and not metadata:
            continue
        rp = 0 if metadata else rps.get((topic, int(number)), 0)
        start = max([i for i, b in enumerate(bases) if b <= rp], default=0)
        for base in bases[start:]:
            valid = _valid(root, part.name, base)
            total += valid
            if valid < _log(root, part.name, base).stat().st_size:
                break
    return total


def _kit():
    from tests import matrix_logs_kit as kit

    return kit


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "crashed"])
@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("kind", sorted(_kit().damages("kafka")))
def test_preview_on_every_matrix_damage(tmp_path, kind, where, clean):
    kit = _kit()
    layout = kit.kafka()
    root = kit.copy(layout.fixture, tmp_path / "logs")
    kit.damages("kafka")[kind](layout, root, lambda lo, hi: lo if where == "first" else hi)
    if not clean:
        (root / cpf.CLEAN_SHUTDOWN).unlink(missing_ok=True)
        _set_recovery_point(root, "orders", 0, 0)
        _set_recovery_point(root, "orders", 1, 0)
    info, plan = _previews(root)
    _same(info, plan)
    # (some damages take the marker away themselves: a torn write is a crash's)
    assert info["recovery"] == ("normal" if (root / cpf.CLEAN_SHUTDOWN).exists() else "abnormal")
    assert info["scan_bytes"] == _expected_scan(root)
    assert info["drops"]["bytes"] == sum(c["length"] for c in info["drops"]["cut"]) + sum(
        (root / f).stat().st_size for f in info["drops"]["files_deleted"]
    )
