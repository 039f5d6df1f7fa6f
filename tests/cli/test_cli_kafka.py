"""The Kafka commands: exit codes, JSON shapes, golden outputs, and every real capture."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mqtool.cli import app as cli_app
from mqtool.cli.app import run
from mqtool.errors import StoreLayoutError
from mqtool.formats.kafka.log import LogWalker
from tests.conftest import FIXTURES, PROJECT_ROOT, REAL_ROOT, real_path

LOGS = FIXTURES / "kafka-logs"
GOLDEN = PROJECT_ROOT / "tests" / "golden"
UPDATE = os.environ.get("MQTOOL_UPDATE_GOLDEN") == "1"
REAL = REAL_ROOT / "kafka"


def mqtool(capsys, *args):
    cli_app._state["debug"] = False  # another test's --debug must not leak into this run
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _relative(text: str) -> str:
    return text.replace(str(PROJECT_ROOT) + "/", "")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    text = _relative(text)
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"golden file {name} was missing and has been written; rerun")
    assert text == path.read_text(), f"output differs from tests/golden/{name} (MQTOOL_UPDATE_GOLDEN=1 to accept)"


def jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize(
    "args,golden",
    [
        (["dump", "kafka-log", LOGS / "events-0", "--deep-iteration", "--jsonl", "--decode", "utf8"], "kafka-logs.events-0.deep.jsonl"),
        (["dump", "kafka-log", LOGS / "legacy-0", "--deep", "--jsonl", "--decode", "utf8"], "kafka-logs.legacy-0.deep.jsonl"),
        (["dump", "kafka-log", LOGS / "__consumer_offsets-0", "--records-only", "--jsonl"], "kafka-logs.consumer-offsets.records.jsonl"),
        (["dump", "kafka-log", LOGS / "__transaction_state-0", "--records-only", "--jsonl"], "kafka-logs.transaction-state.records.jsonl"),
        (["dump", "kafka-log", LOGS / "__cluster_metadata-0", "--deep", "--jsonl"], "kafka-logs.cluster-metadata.deep.jsonl"),
        (["dump", "kafka-log", LOGS / "orders-0", "--jsonl"], "kafka-logs.orders-0.batches.jsonl"),
        (["dump", "kafka-index", LOGS / "orders-1", "--verify", "--jsonl"], "kafka-logs.orders-1.index-verify.jsonl"),
        (["dump", "kafka-timeindex", LOGS / "orders-0", "--verify", "--jsonl"], "kafka-logs.orders-0.timeindex-verify.jsonl"),
        (["dump", "kafka-txnindex", LOGS, "--verify", "--jsonl"], "kafka-logs.txnindex-verify.jsonl"),
        (["dump", "kafka-snapshot", LOGS / "events-0", "--jsonl"], "kafka-logs.events-0.snapshot.jsonl"),
        (["dump", "kafka-checkpoint", LOGS, "--json"], "kafka-logs.checkpoint.json"),
        (["info", LOGS, "--json"], "kafka-logs.info.json"),
        (["validate", LOGS, "--deep", "--json", "--jobs", "1"], "kafka-logs.validate.json"),
        (["query", LOGS, "--topic", "orders", "--partition", "1", "--offset", "40", "--max", "3", "--jsonl", "--decode", "utf8"], "kafka-logs.query-offset.jsonl"),
        (["query", LOGS / "events-0", "--timestamp", "1700000004700", "--jsonl"], "kafka-logs.query-timestamp.jsonl"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_golden_outputs(capsys, args, golden):
    code, out, err = mqtool(capsys, *args)
    assert code == 0, err
    if args[0] == "validate":  # the check families of every layout are not this golden's business
        doc = json.loads(out)
        del doc["checks"]
        out = json.dumps(doc, indent=2) + "\n"
    if args[0] == "info":  # the restart preview's read speed is this disk's, measured per run
        doc = json.loads(out)
        doc["restart"]["read_bytes_per_second"] = doc["restart"]["estimated_seconds"] = "MEASURED"
        out = json.dumps(doc, indent=2) + "\n"
    check_golden(golden, out)


def test_dump_log_fields_are_kafka_dump_logs(capsys):
    _code, out, _err = mqtool(capsys, "dump", "kafka-log", LOGS / "events-0", "--deep", "--jsonl")
    rows = jsonl(out)
    batch = next(r for r in rows if r["kind"] == "batch")
    assert list(batch) == [
        "kind", "file", "topic", "partition", "position", "base_offset", "last_offset", "count", "base_sequence", "last_sequence",
        "producer_id", "producer_epoch", "partition_leader_epoch", "is_transactional", "is_control", "delete_horizon_ms",
        "timestamp_type", "max_timestamp", "base_timestamp", "size", "magic", "compresscodec", "attributes", "crc", "is_valid",
    ]
    record = next(r for r in rows if r["kind"] == "record")
    assert list(record)[:14] == [
        "kind", "file", "topic", "partition", "batch_position", "offset", "timestamp_type", "timestamp", "key_size", "value_size",
        "sequence", "header_keys", "headers", "key",
    ]
    assert record["headers"][1] == {"key": "nullable", "value": None}
    markers = [r["control"] for r in rows if r.get("control")]
    assert [m["type"] for m in markers] == ["COMMIT", "ABORT"] and markers[0]["value"]["coordinator_epoch"] == 7
    codecs = {r["compresscodec"] for r in rows if r["kind"] == "batch"}
    assert {"none", "gzip"} <= codecs
    assert any(r["timestamp_type"] == "LogAppendTime" for r in rows if r["kind"] == "batch")
    sequences = [r["sequence"] for r in rows if r["kind"] == "record" and r["sequence"] >= 0]
    assert sequences[:4] == [0, 1, 2, 3]


def test_dump_log_options(capsys):
    seg = LOGS / "orders-0" / "00000000000000000030.log"
    entries = list(LogWalker(seg.read_bytes()))
    code, out, _ = mqtool(capsys, "dump", "kafka-log", seg, "--jsonl", "--max-bytes", entries[3].position + 1)
    assert code == 0 and [r["position"] for r in jsonl(out)] == [e.position for e in entries[:3]]
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS, "--topic", "orders", "--partition", "0", "--from-offset", 58, "--records-only", "--jsonl", "--limit", 3)
    assert [r["offset"] for r in jsonl(out)] == [58, 59, 60]
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS / "orders-1", "--records-only", "--jsonl", "--since", 1700000003000, "--until", 1700000003100)
    assert jsonl(out) and all(1700000003000 <= r["timestamp"] <= 1700000003100 for r in jsonl(out))
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS / "orders-0", "--records-only", "--jsonl", "--decode", "none", "--limit", 1)
    assert jsonl(out)[0]["payload"] is None and jsonl(out)[0]["value_size"] > 0
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS / "orders-0", "--records-only", "--jsonl", "--decode", "hex", "--limit", 1)
    assert jsonl(out)[0]["key"] == b"order-7".hex() or jsonl(out)[0]["key"] == b"order-0".hex()
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS / "orders-0", "--records-only", "--jsonl", "--no-decoders", "--limit", 1)
    assert code == 0 and "decoded" not in jsonl(out)[0]
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS / "__consumer_offsets-0", "--records-only", "--jsonl", "--no-decoders")
    assert all("decoded" not in r for r in jsonl(out))
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS / "__transaction_state-0" / "00000000000000000000.log", "--offsets-decoder", "--jsonl")
    assert all("error" in r["decoded"] for r in jsonl(out) if r["kind"] == "record")  # the wrong decoder says so


def test_dump_log_table_is_plain(capsys):
    code, out, _ = mqtool(capsys, "dump", "kafka-log", LOGS / "events-0", "--deep", "--limit", 6)
    assert code == 0 and "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0].split() == ["POSITION", "OFFSET", "TIME", "SIZE", "DETAILS"] and len(lines) == 7
    assert "producer=1000/0 seq=0..2" in lines[1] and lines[2].lstrip().startswith("-")


def test_dump_kraft_snapshot_and_carved_records(capsys, tmp_path):
    snap = LOGS / "__cluster_metadata-0" / "00000000000000000003-0000000001.checkpoint"
    code, out, _ = mqtool(capsys, "dump", "kafka-log", snap, "--records-only", "--jsonl")
    rows = jsonl(out)
    assert rows[0]["control"]["type"] == "SNAPSHOT_HEADER" and rows[-1]["control"]["type"] == "SNAPSHOT_FOOTER"
    assert rows[1]["decoded"]["payload"]["type"] == "FeatureLevelRecord"
    carved = tmp_path / "carved.records"
    carved.write_bytes((LOGS / "orders-0" / "00000000000000000060.log").read_bytes()[:2000])
    code, out, err = mqtool(capsys, "dump", "kafka-log", carved, "--jsonl")
    assert code == 0 and jsonl(out)[0]["base_offset"] == 60 and "torn tail" in err


def test_dump_log_damage_exit_1(capsys, tmp_path):
    data = bytearray((LOGS / "orders-0" / "00000000000000000000.log").read_bytes())
    entries = list(LogWalker(bytes(data)))
    data[entries[1].position + 100] ^= 0xFF
    target = tmp_path / "00000000000000000000.log"
    target.write_bytes(bytes(data))
    code, out, err = mqtool(capsys, "dump", "kafka-log", target, "--jsonl")
    rows = jsonl(out)
    assert code == 1 and len(rows) == len(entries) and rows[1]["is_valid"] is False and rows[0]["is_valid"] is True
    # the damage is stated once, by the store model's finding (issue 30), not again by the dump
    assert f"KAFKA-LOG-CRC {target}:{entries[1].position + 17}: " in err
    assert err.count(f"{target}:{entries[1].position + 17}:") == 1, err
    code, out, err = mqtool(capsys, "dump", "kafka-log", target, "--jsonl", "--no-crc")
    assert code == 0
    data[entries[2].position + 16] = 9  # a framing error ends the file's walk
    target.write_bytes(bytes(data))
    code, out, err = mqtool(capsys, "dump", "kafka-log", target, "--jsonl", "--no-crc")
    assert code == 1 and len(jsonl(out)) == 2 and f"{target}:{entries[2].position + 16}" in err


def test_index_family_findings_exit_1(capsys, tmp_path):
    part = tmp_path / "orders-0"
    shutil.copytree(LOGS / "orders-0", part)
    index = part / "00000000000000000000.index"
    raw = bytearray(index.read_bytes())
    raw[12:16] = (int.from_bytes(raw[12:16], "big") + 1).to_bytes(4, "big")
    index.write_bytes(bytes(raw))
    code, out, err = mqtool(capsys, "dump", "kafka-index", index, "--verify", "--jsonl")
    rows = jsonl(out)
    assert code == 1 and rows[1]["verify"]["status"] == "not-a-batch" and rows[0]["verify"]["status"] == "exact"
    code, out, _ = mqtool(capsys, "dump", "kafka-index", index, "--jsonl")
    assert code == 0 and rows[1]["log_position"] == jsonl(out)[1]["log_position"]
    with open(index, "ab") as f:
        f.write(bytes(64))
    code, out, err = mqtool(capsys, "dump", "kafka-index", index, "--jsonl")
    assert code == 0 and "64 bytes of unused zero slots" in err


def test_empty_and_preallocated_indexes(capsys, tmp_path):
    empty = tmp_path / "t-0" / "00000000000000000000.index"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    code, out, err = mqtool(capsys, "dump", "kafka-index", empty)
    assert code == 0 and out == "" and "is empty" in err
    empty.write_bytes(bytes(4096))
    code, out, err = mqtool(capsys, "dump", "kafka-index", empty, "--jsonl")
    assert code == 0 and out == "" and "4096 bytes of unused zero slots after 0 entries" in err


def test_checkpoint_dump_filters_and_errors(capsys, tmp_path):
    code, out, _ = mqtool(capsys, "dump", "kafka-checkpoint", LOGS, "--topic", "orders", "--partition", "1", "--json")
    doc = json.loads(out)
    assert {d["name"] for d in doc["files"]} >= {"recovery-point-offset-checkpoint", "leader-epoch-checkpoint", "meta.properties"}
    assert all((d.get("topic"), d.get("partition")) in ((None, None), ("orders", 1)) for d in doc["files"])
    rp = next(d for d in doc["files"] if d["name"] == "recovery-point-offset-checkpoint")
    assert rp["entries"] == [{"topic": "orders", "partition": 1, "offset": 96}]
    bad = tmp_path / "replication-offset-checkpoint"
    bad.write_text("0\n2\norders 0 5\n")
    code, out, _err = mqtool(capsys, "dump", "kafka-checkpoint", bad, "--json")
    assert code == 1 and "entry count mismatch" in json.loads(out)["files"][0]["error"]
    code, out, _ = mqtool(capsys, "dump", "kafka-checkpoint", LOGS / "__cluster_metadata-0")
    assert code == 0 and "quorum-state" in out and "\x1b[" not in out


def test_info_exits_1_on_damaged_data_it_reads(capsys, tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs)
    active = logs / "orders-0" / "00000000000000000090.log"
    end = active.stat().st_size
    with open(active, "ab") as out:
        out.write(bytes(range(8)) + b"\x20" * 300)  # appended junk: a 540 MB "entry", not a torn write
    code, out, err = mqtool(capsys, "info", logs, "--json")
    doc = json.loads(out)
    # validate's finding at the same place is the error (info named it without a code); info's
    # own line about the same bytes is not printed beside it (issue 30: one line per finding)
    error, *_ = doc["errors"]
    assert code == 1 and error.startswith(f"KAFKA-LOG-SIZE {active}:{end + 8}: ") and error in err
    assert not [p for p in doc["problems"] if p.startswith(f"{active}:{end + 8}: ")]
    assert len([line for line in err.splitlines() if f"{active}:{end + 8}:" in line]) == 1, err
    assert next(p for p in doc["partitions"] if p["directory"] == "orders-0")["end_kind"] == "corrupt"


def test_info_log_end_offset_agrees_with_validate_on_a_torn_indexed_batch(capsys, tmp_path):
    # the last .index entry points at the batch the crash tore: info walked from there, found no
    # batch and answered the segment's base offset (90) where validate says 106
    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs)
    active = logs / "orders-0" / "00000000000000000090.log"
    last = list(LogWalker(active.read_bytes(), mode="header"))[-1]
    os.truncate(active, last.position + 127)
    code, out, _ = mqtool(capsys, "info", logs, "--json")
    orders = next(p for p in json.loads(out)["partitions"] if p["directory"] == "orders-0")
    code_v, out_v, _ = mqtool(capsys, "validate", logs, "--json")
    # the checkpoints of the clean shutdown vouch for offsets the cut lost: validate's
    # KAFKA-LOG-MISSING, an error info names too (it exited 0)
    assert code == code_v == 1 and orders["end_kind"] == "partial"
    assert any(f["code"] == "KAFKA-LOG-MISSING" for f in json.loads(out)["findings"])
    assert orders["log_end_offset"] == json.loads(out_v)["facts"]["partitions"]["orders-0"]["log_end_offset"] == last.header.base_offset
    assert orders["max_timestamp"] < last.header.max_timestamp  # the torn batch's time index entry is not counted


def test_info_gives_a_delete_dir_no_checkpoint_values_of_the_live_partition(capsys, tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs)
    shutil.copytree(LOGS / "orders-0", logs / "orders-0.0123456789abcdef0123456789abcdef-delete")
    code, out, _ = mqtool(capsys, "info", logs, "--json")
    rows = {p["directory"]: p for p in json.loads(out)["partitions"]}
    gone = rows["orders-0.0123456789abcdef0123456789abcdef-delete"]
    assert code == 0 and gone["recovery_point"] is None and gone["high_watermark"] is None and gone["log_start_offset"] == 0
    assert rows["orders-0"]["recovery_point"] == 110 and rows["orders-0"]["log_start_offset"] == 7


def test_info_json_shape(capsys):
    code, out, _err = mqtool(capsys, "info", LOGS, "--json")
    doc = json.loads(out)
    assert doc["layout"] == "kafka" and doc["kind"] == "log-dir" and doc["mode"] == "KRaft"
    assert doc["shutdown"].startswith("clean") and doc["broker_epoch"] == 42 and doc["problems"] == []
    orders = next(p for p in doc["partitions"] if p["directory"] == "orders-0")
    assert orders == {
        "directory": "orders-0", "topic": "orders", "partition": 0, "segments": 4, "log_bytes": orders["log_bytes"], "log_start_offset": 7, "log_end_offset": 110,
        "recovery_point": 110, "high_watermark": 110, "max_timestamp": orders["max_timestamp"], "end_kind": "eof",
    }
    details = {d["directory"]: d for d in doc["partition_details"]}
    assert details["events-0"]["leader_epoch"] == 3 and details["orders-0"]["log_start_checkpoint"] == 7
    code, out, _ = mqtool(capsys, "info", LOGS / "orders-1")
    assert code == 0 and "partition" in out and "\x1b[" not in out
    code, out, _ = mqtool(capsys, "info", LOGS / "orders-1" / "00000000000000000048.log", "--json")
    assert code == 0 and json.loads(out)["kind"] == "segment"


def test_validate_exit_codes(capsys, tmp_path):
    code, out, _ = mqtool(capsys, "validate", LOGS, "--jsonl")
    assert code == 0 and all(json.loads(line)["severity"] == "info" for line in out.splitlines())
    root = tmp_path / "logs"
    shutil.copytree(LOGS, root)
    seg = root / "orders-1" / "00000000000000000024.log"
    data = bytearray(seg.read_bytes())
    data[500] ^= 0x55
    seg.write_bytes(bytes(data))
    code, out, _ = mqtool(capsys, "validate", root, "--json", "--jobs", "1")
    doc = json.loads(out)
    assert code == 1 and not doc["ok"] and doc["counts"]["error"] >= 1
    assert any(f["code"] == "KAFKA-LOG-CRC" and f["path"] == str(seg) for f in doc["findings"])
    code, out, _ = mqtool(capsys, "validate", root, "--checks", "index,checkpoint", "--json")
    assert code == 0 and not any(f["family"] == "log" for f in json.loads(out)["findings"])
    (root / ".kafka_cleanshutdown").unlink()
    code, _, _ = mqtool(capsys, "validate", root, "--checks", "checkpoint", "--fail-on", "warning")
    assert code == 1
    code, out, _ = mqtool(capsys, "validate", root, "--format", "junit")
    assert code == 1 and "KAFKA-LOG-CRC" in out
    code, out, _ = mqtool(capsys, "validate", root / "orders-1" / "00000000000000000024.log", "--json")
    assert code == 1 and json.loads(out)["facts"]["kind"] == "segment"


def test_query_cli(capsys):
    code, out, err = mqtool(capsys, "query", LOGS, "--topic", "orders", "--partition", "0", "--offset", "50", "--verbose")
    assert code == 0 and "orders-0" in out and "lookup: 00000000000000000030.index entry #2" in err
    code, out, err = mqtool(capsys, "query", LOGS, "--topic", "orders", "--partition", "0", "--offset", "50")
    assert code == 0 and "orders-0" in out and "lookup:" not in err  # the steps only with --verbose (issue 19)
    code, out, err = mqtool(capsys, "query", LOGS, "--topic", "orders", "--partition", "0", "--offset", "3", "--jsonl")
    assert code == 1 and out == "" and "below the log start offset 7" in err
    code, out, _ = mqtool(capsys, "query", LOGS / "orders-0", "--timestamp", "2023-11-14T22:13:21Z", "--json")
    (row,) = json.loads(out)
    assert code == 0 and row["timestamp"] >= 1700000001000 and row["found_via"] == "timeindex"


@pytest.mark.parametrize(
    "args,code",
    [
        (["query", LOGS, "--topic", "orders", "--partition", "0"], 2),
        (["query", LOGS, "--topic", "orders", "--partition", "0", "--offset", "1", "--timestamp", "5"], 2),
        (["query", LOGS, "--offset", "1", "--key", "x"], 2),
        (["query", LOGS, "--topic", "orders", "--offset", "1"], 3),
        (["query", LOGS, "--topic", "nope", "--partition", "0", "--offset", "1"], 3),
        (["query", LOGS, "--layout", "jafka", "--offset", "1"], 3),  # query handles jafka: this is not a jafka dir
        (["dump", "kafka-log", LOGS, "--offsets-decoder", "--metadata-decoder"], 2),
        (["dump", "kafka-log", "/nonexistent/kafka"], 3),
        (["dump", "kafka-index", LOGS / "orders-0" / "00000000000000000000.index", "--json", "--jsonl"], 2),
        (["dump", "kafka-log", FIXTURES / "rocketmq-store"], 3),
        (["info", "--layout", "kafka", FIXTURES / "rocketmq-store"], 3),
        (["validate", "--layout", "kafka", PROJECT_ROOT / "tests"], 3),
    ],
)
def test_error_exit_codes_without_traceback(capsys, args, code):
    got, out, err = mqtool(capsys, *args)
    assert got == code, err
    assert "Traceback" not in err and "Traceback" not in out


def test_rocketmq_query_is_unchanged(capsys):
    code, out, _ = mqtool(capsys, "query", FIXTURES / "rocketmq-store", "--key", "KEY42", "--jsonl")
    assert code == 0 and json.loads(out)["commitlog_offset"] == 14354


def test_broken_pipe_is_quiet():
    proc = subprocess.run(
        f"{sys.executable} -m mqtool dump kafka-log {LOGS} --deep --jsonl | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert len(proc.stdout.splitlines()) == 1 and proc.stderr == ""


# --- every real capture ------------------------------------------------------------------------------


def _real_targets() -> list[str]:
    if not REAL.exists():
        return ["(no real fixtures)"]
    from mqtool.store.kafka import is_log_dir

    dirs = sorted(str(p.relative_to(REAL)) for p in REAL.rglob("*") if p.is_dir() and is_log_dir(p) and not is_log_dir(p.parent))
    carved = sorted(str(p.relative_to(REAL)) for p in REAL.glob("segmentio-kafka-go/carved/*.records"))
    return dirs + carved


def _verify_counts() -> dict[str, int]:
    path = REAL / "VERIFY.txt"
    if not path.exists():
        return {}
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\./(\S+): size=\d+ batches=(\d+)", path.read_text(), re.M)}


@pytest.mark.parametrize("rel", _real_targets())
def test_real_capture(rel):
    """info, validate --deep and every dump family on each capture (through the engines: the CLI
    around them is exercised above and on three captures below); healthy captures give no error."""
    from mqtool.ops.dump import kafka as dump_kafka
    from mqtool.ops.info.kafka import kafka_info
    from mqtool.ops.validate import ValidateOptions
    from mqtool.ops.validate.kafka import validate_kafka

    path = real_path("kafka", *Path(rel).parts)
    info = kafka_info(path).to_dict()
    assert info["layout"] == "kafka" and info["problems"] == []
    report = validate_kafka(path, ValidateOptions(jobs=1, deep=True))
    assert report.counts["error"] == 0, [f.to_dict() for f in report.findings if f.level.value == "error"]
    engine = dump_kafka.LogDump(dump_kafka.log_targets(path), dump_kafka.LogDumpOptions(deep=True))
    items = list(engine)
    assert engine.problems == [] and all(i.records is not None for i in items)
    assert all(end.end.kind == "eof" for end in engine.ends)
    counts = _verify_counts()
    for end in engine.ends:
        key = str(end.path.relative_to(REAL))
        if key in counts:
            assert end.entries == counts[key]
    if path.is_dir():
        for kind in ("index", "timeindex", "txnindex"):
            dump = dump_kafka.IndexDump(dump_kafka.index_targets(path, kind), kind, verify=True)
            rows = list(dump)
            assert dump.problems == [] and dump.mismatches == 0, [r.verify for r in rows]
        problems: list = []
        list(dump_kafka.snapshot_rows(dump_kafka.index_targets(path, "snapshot"), problems))
        assert problems == []
        try:
            files = dump_kafka.checkpoint_files(path)
        except StoreLayoutError:  # a dir without any checkpoint file
            files = []
        assert all("error" not in dump_kafka.read_checkpoint_file(f) for f in files)


def test_real_gzip_v0_matches_the_golden_text(capsys):
    root = real_path("kafka", "asayers-kafkalite", "tests", "test-data")
    code, out, _err = mqtool(capsys, "dump", "kafka-log", root / "fs-data" / "hamlet-gzip-0", "--records-only", "--jsonl", "--decode", "utf8")
    rows = jsonl(out)
    golden = (root / "golden" / "hamlet-gzip-0").read_text().splitlines()
    assert code == 0 and len(rows) == len(golden) == 5382
    assert [r["offset"] for r in rows] == list(range(5382))
    first = golden[0].split(": ", 1)
    assert first[0] == "0" and json.loads(first[1]) == rows[0]["payload"]


def test_real_snapshot_and_compacted_partition(capsys):
    logs = real_path("kafka", "DonaldY-kafka-2.7.1", "kafka-logs")
    code, out, err = mqtool(capsys, "dump", "kafka-snapshot", logs / "myTopic-0", "--jsonl")
    assert code == 0 and len(jsonl(out)) == 3
    code, out, _err = mqtool(capsys, "dump", "kafka-log", logs / "__consumer_offsets-39", "--records-only", "--jsonl")
    rows = jsonl(out)
    assert code == 0 and all("error" not in r["decoded"] for r in rows)
    offsets = [r["offset"] for r in rows]
    assert offsets == sorted(offsets) and offsets[-1] == 19
    code, out, _err = mqtool(capsys, "dump", "kafka-timeindex", logs / "__consumer_offsets-39", "--verify", "--jsonl")
    assert code == 0 and [r["verify"]["status"] for r in jsonl(out)] == ["ok"]
    code, out, _err = mqtool(capsys, "validate", logs, "--json")
    findings = json.loads(out)["findings"]
    assert any(f["code"] == "KAFKA-OFFSET-GAP" and "__consumer_offsets-39" in f["path"] for f in findings)


def test_real_kraft_metadata_log(capsys):
    logs = real_path("kafka", "Jeong-Rae-KafkaDemo", "kraft-combined-logs")
    code, out, _err = mqtool(capsys, "dump", "kafka-log", logs / "__cluster_metadata-0", "--records-only", "--jsonl")
    rows = jsonl(out)
    assert code == 0 and len(rows) >= 3068
    assert not [r for r in rows if "decoded" in r and "error" in r["decoded"]]
    kinds = {r["decoded"]["value"]["type"] for r in rows if "decoded" in r}
    assert kinds == {"MetadataRecord"}
    assert any(r.get("control", {}).get("type") == "LEADER_CHANGE" for r in rows)
    code, out, _err = mqtool(capsys, "dump", "kafka-log", logs / "bootstrap.checkpoint", "--records-only", "--jsonl")
    assert code == 0 and jsonl(out)[0]["control"]["type"] == "SNAPSHOT_HEADER"


def test_kafka_07_segment_is_pointed_to_jafka(capsys):
    part = real_path("kafka", "apache-kafka", "642da2f28c", "core", "src", "test", "resources", "test-kafka-logs", "MagicByte0-0")
    code, _, err = mqtool(capsys, "dump", "kafka-log", part / "00000000000000000000.kafka")
    assert code == 4 and "--layout jafka" in err
    code, out, _ = mqtool(capsys, "validate", part, "--layout", "kafka", "--json")
    findings = json.loads(out)["findings"]
    assert code == 0 and [f["code"] for f in findings] == ["KAFKA-FILE-NAME"] and "Kafka 0.7" in findings[0]["message"]


@pytest.mark.parametrize(
    "family,name,found",
    [
        ("kafka-timeindex", "00000000000000000090.index", ".index"),
        ("kafka-txnindex", "00000000000000000090.timeindex", ".timeindex"),
        ("kafka-index", "00000000000000000090.log", ".log"),
        ("kafka-log", "00000000000000000090.index", ".index"),
        ("kafka-snapshot", "00000000000000000090.log", ".log"),
    ],
)
def test_dump_refuses_a_file_of_another_kind(capsys, family, name, found):
    # read as the asked kind it gave made-up rows (timestamps in 1971 and 2173) and exit 0
    path = LOGS / "orders-0" / name
    code, out, err = mqtool(capsys, "dump", family, path)
    assert code == 3 and out == "" and f"{path}: expected a " in err and f"found a {found} file" in err


@pytest.mark.parametrize("family", ["kafka-log", "kafka-index", "kafka-timeindex", "kafka-snapshot"])
def test_dump_topic_or_partition_that_is_not_there(capsys, family):
    code, out, err = mqtool(capsys, "dump", family, LOGS, "--topic", "nosuch")
    assert code == 3 and out == "" and "expected partition nosuch-<any partition>, found topics" in err and "orders" in err
    code, _, err = mqtool(capsys, "dump", family, LOGS, "--topic", "orders", "--partition", "7")
    assert code == 3 and "expected partition orders-7" in err
