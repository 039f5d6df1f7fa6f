"""``mqtool lag`` through the CLI: exit codes, JSON documents, and the table at 80 columns."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from mqtool.cli.app import run
from tests.conftest import FIXTURES, PROJECT_ROOT


def mqtool(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_lag_json_rocketmq(capsys):
    code, out, err = mqtool(capsys, "lag", FIXTURES / "rocketmq-store", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert set(doc) == {"layout", "root", "offsets_from", "lag", "totals", "findings"}
    assert doc["offsets_from"].endswith("consumerOffset.json")
    order = [r for r in doc["lag"] if r["group"] == "order-consumer"]
    assert [r["queue_id"] for r in order] == [0, 1, 2, 3] and all(r["lag_messages"] == 5 for r in order)
    assert {t["group"]: t["lag_messages"] for t in doc["totals"]} == {"order-consumer": 20, "please_rename_unique_group_name_4": 0}


def test_lag_jsonl_kafka_one_row_a_line(capsys):
    code, out, _ = mqtool(capsys, "lag", FIXTURES / "kafka-logs", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 4
    assert {(r["group"], r["topic"], r["partition"]) for r in rows} == {
        ("audit", "events", 0),
        ("billing", "events", 0),
        ("billing", "orders", 0),
        ("billing", "orders", 1),
    }


def test_offset_ahead_is_validates_warning_exit_0(capsys, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    path = root / "config" / "consumerOffset.json"
    path.write_text(path.read_text().replace("{0:15,", "{0:99,"))
    code, out, err = mqtool(capsys, "lag", root, "--json")
    assert code == 0  # a warning, as in validate
    assert f"RMQ-CONSUMER-OFFSET {path}: group order-consumer on OrderTopic/0" in err
    assert [f["code"] for f in json.loads(out)["findings"]] == ["RMQ-CONSUMER-OFFSET"]


def test_layout_without_offsets_exits_4(capsys):
    code, _, err = mqtool(capsys, "lag", FIXTURES / "jafka-data")
    assert code == 4 and "`mqtool lag` does not handle the jafka layout" in err


def test_table_at_80_columns_keeps_names_and_numbers_whole():
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT), "TZ": "UTC"}
    for store, names in (
        (FIXTURES / "rocketmq-store", ["please_rename_unique_group_name_4", "order-consumer", "OrderTopic"]),
        (FIXTURES / "kafka-logs", ["billing", "orders"]),
    ):
        proc = subprocess.run([sys.executable, "-m", "mqtool", "lag", str(store)], capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("2 group(s), "), lines[0]  # the verdict first
        assert all(len(line) <= 80 for line in lines)
        for name in names:
            assert any(name in line for line in lines), name
        assert "2023-11-14T22:13:26+00:00" in proc.stdout or "2023-11-14T22:13:21+00:00" in proc.stdout


def test_damaged_record_of_the_oldest_unconsumed_message_exits_1(capsys, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    with open(root / "commitlog" / "00000000000000065536", "r+b") as f:  # OrderTopic/0 @15 is at 66379
        f.seek(843 + 4)
        f.write(bytes(4))
    code, out, err = mqtool(capsys, "lag", root)
    assert code == 1
    assert f"RMQ-CL-MAGIC {root / 'commitlog' / '00000000000000065536'}:847: " in err
