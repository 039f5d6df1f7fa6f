"""``--format openmetrics`` and ``--metrics-file`` on validate, stats, clean and lag: parsed with
prometheus_client's own parsers, the counts equal ``--json``'s."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from mqtool.cli.app import run
from mqtool.cli.metrics import METRICS
from tests.conftest import FIXTURES

NOW = "1800000000000"


def mqtool(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def samples(text: str, *, openmetrics: bool = True) -> dict[str, list]:
    parse = parse_openmetrics if openmetrics else parse_text
    out: dict[str, list] = {}
    for family in parse(text):
        out.setdefault(family.name, []).extend(family.samples)
    return out


def _torn(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    with open(root / "commitlog" / "00000000000000032768", "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 8)
    return root


@pytest.mark.parametrize("damaged", [False, True])
def test_validate_findings_by_code_equal_json(capsys, tmp_path, damaged):
    root = _torn(tmp_path) if damaged else FIXTURES / "rocketmq-store"
    code, out, _ = mqtool(capsys, "validate", root, "--json")
    doc = json.loads(out)
    code2, text, _ = mqtool(capsys, "validate", root, "--format", "openmetrics")
    assert code == code2 == (1 if damaged else 0)
    got = samples(text)
    counted = {(s.labels["code"], s.labels["severity"]): s.value for s in got["mqtool_findings"] if s.labels["code"]}
    assert counted == dict(Counter((f["code"], f["severity"]) for f in doc["findings"]))
    assert got["mqtool_exit_status"][0].value == code
    assert got["mqtool_bytes_checked"][0].value == doc["bytes_checked"]
    assert got["mqtool_files_checked"][0].value == len(doc["files"])
    assert samples(text.replace("# EOF\n", ""), openmetrics=False).keys() == got.keys()  # the classic parser reads it too


def test_stats_topics_equal_json(capsys):
    _, out, _ = mqtool(capsys, "stats", FIXTURES / "kafka-logs", "--json")
    doc = json.loads(out)
    _, text, _ = mqtool(capsys, "stats", FIXTURES / "kafka-logs", "-f", "openmetrics")
    got = samples(text)
    assert {s.labels["topic"]: s.value for s in got["mqtool_topic_messages"]} == {t["topic"]: t["messages"] for t in doc["topics"]}
    assert {s.labels["topic"]: s.value for s in got["mqtool_topic_bytes"]} == {t["topic"]: t["bytes"] for t in doc["topics"]}


def test_clean_plan_equals_json(capsys):
    args = ("clean", FIXTURES / "kafka-logs", "--now", NOW, "--allow-unconsumed")
    code, out, _ = mqtool(capsys, *args, "--json")
    plan = json.loads(out)
    code2, text, _ = mqtool(capsys, *args, "--format", "openmetrics")
    assert code == code2 == 1
    got = samples(text)
    kinds = Counter(s["details"]["kind"] for s in plan["steps"] if s["action"] == "remove")
    assert {s.labels["kind"]: s.value for s in got["mqtool_clean_files"]} == dict(kinds)
    assert got["mqtool_clean_bytes"][0].value == plan["bytes_cut"]
    losing = {g for p in plan["facts"]["partitions"] for g in p.get("unconsumed_deleted_for") or []}
    assert got["mqtool_clean_groups_losing_data"][0].value == len(losing) > 0


@pytest.mark.parametrize("store", ["rocketmq-store", "kafka-logs"])
def test_lag_equals_json_and_the_metrics_file_is_written_whole(capsys, tmp_path, store):
    path = tmp_path / "mqtool.prom"
    code, out, _ = mqtool(capsys, "lag", FIXTURES / store, "--json", "--metrics-file", path)
    doc = json.loads(out)  # stdout stays the JSON document
    queue = "partition" if store == "kafka-logs" else "queue_id"
    got = samples(path.read_text(), openmetrics=False)
    want = {(r["group"], r["topic"], str(r[queue])): r["lag_messages"] for r in doc["lag"]}
    assert {(s.labels["group"], s.labels["topic"], s.labels["queue"]): s.value for s in got["mqtool_lag_messages"]} == want
    assert {s.value for s in got["mqtool_exit_status"]} == {code}
    assert [p.name for p in tmp_path.iterdir()] == ["mqtool.prom"]  # no temporary file left


def test_every_metric_is_documented():
    from tests.conftest import PROJECT_ROOT

    page = (PROJECT_ROOT / "docs" / "metrics.md").read_text()  # the manual's page (README links it)
    assert [m for m in METRICS if m not in page] == []
