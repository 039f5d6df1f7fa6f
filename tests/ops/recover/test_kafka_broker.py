"""Kafka's load path by broker version, a lost middle segment and the restart preview, through the
CLI (issue 28, points 1, 3, 5 and 6): what validate, recover and info say of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqtool.formats import segment_names as segnames
from tests.conftest import copy_fixture, run_cli
from tests.ops.validate.test_kafka import append_topic_config


def _drop(root: Path, partition: str, base: int) -> None:
    for kind in ("log", "index", "timeindex"):
        (root / partition / segnames.kafka_file_name(base, kind)).unlink()


@pytest.mark.parametrize("policy,severity,validate_exit", [("delete", "error", 1), (None, "warning", 0)])
def test_lost_middle_segment_validate_recover_validate(tmp_path, policy, severity, validate_exit):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    if policy is not None:
        append_topic_config(root, 2, "orders", "cleanup.policy", policy)
    _drop(root, "orders-0", 30)
    code, out, _ = run_cli("validate", root, "-j", "1", "--json")
    lost = [f for f in json.loads(out)["findings"] if f["code"] == "KAFKA-SEGMENT-MISSING"]
    assert code == validate_exit and [f["severity"] for f in lost] == [severity]
    assert lost[0]["path"].endswith("orders-0/00000000000000000060.log")
    # recover cannot rebuild the offsets: the plan says so, names the finding and exits 1
    code, out, _ = run_cli("recover", root, "--json")
    plan = json.loads(out)
    assert code == 1
    assert [u["code"] for u in plan["unfixable"]] == ["KAFKA-SEGMENT-MISSING"]
    (note,) = [n for n in plan["notes"] if "offsets 30..59" in n]
    assert "mqtool cannot rebuild them" in note and "serves the offset after it" in note
    assert not [s for s in plan["steps"] if s["path"].startswith("orders-0/")]  # nothing of the partition is touched
    # applied, it has nothing to do and still exits 1 naming the loss; validate says the same after it
    assert not plan["has_work"]
    code, out, err = run_cli("recover", root, "--apply", "--force", "--quarantine", tmp_path / "q")
    assert code == 1 and "cannot fix" in out and "KAFKA-SEGMENT-MISSING" in out, err
    # counted by its severity: only an error makes the store fail validation
    said = f"cannot fix (1 {severity}(s)"
    assert said in out and ("the store would still fail validation" in out) == (severity == "error"), out
    code, out, _ = run_cli("validate", root, "-j", "1", "--json")
    again = [f for f in json.loads(out)["findings"] if f["code"] == "KAFKA-SEGMENT-MISSING"]
    assert code == validate_exit and again == lost


def test_compacted_topic_gap_stays_info(tmp_path):
    root = copy_fixture("kafka-logs", tmp_path / "logs")
    append_topic_config(root, 2, "orders", "cleanup.policy", "compact")
    _drop(root, "orders-0", 30)
    code, out, _ = run_cli("validate", root, "-j", "1", "--json")
    codes = {f["code"]: f["severity"] for f in json.loads(out)["findings"] if "orders-0" in f["path"]}
    assert code == 0 and codes.get("KAFKA-OFFSET-GAP") == "info" and "KAFKA-SEGMENT-MISSING" not in codes
    code, out, _ = run_cli("recover", root, "--json")
    assert code == 0 and json.loads(out)["unfixable"] == []
