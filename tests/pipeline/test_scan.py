"""``mqtool scan``: the integrity report equals validate's findings on the same damaged stores,
the CLI writes the datasets and report.json, and fails clearly without pyspark or Java."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqtool.cli.app import run as cli_run
from mqtool.findings import CODES
from mqtool.ops.validate import ValidateOptions, validate_path
from tests.conftest import FIXTURES
from tests.pipeline.damage import CASES, make_cases

STORE = FIXTURES / "rocketmq-store"


def _rel(path: str, root: Path) -> str:
    return path[len(str(root)) :].lstrip("/") if path.startswith(str(root)) else path


@pytest.fixture(scope="module")
def damaged(spark, tmp_path_factory):
    """Every damage case scanned in ONE Spark run (each store is its own source)."""
    from mqtool.pipeline import jobs

    base = tmp_path_factory.mktemp("damaged")
    roots = make_cases(base / "stores")
    cfg = jobs.ScanConfig(
        tuple(jobs.ScanInput(code, str(root), "rocketmq") for code, root in roots.items()),
        str(base / "out"),
    
    )
    return roots, jobs.run(spark, cfg)


def test_scan_codes_are_validate_codes():
    from mqtool.pipeline.jobs import SCAN_CODES

    assert SCAN_CODES <= set(CODES), sorted(SCAN_CODES - set(CODES))


@pytest.mark.parametrize("case", sorted(CASES))
def test_scan_findings_equal_validate_findings(damaged, case):
    from mqtool.pipeline.jobs import SCAN_CODES

    roots, result = damaged
    root = roots[case]
    report = validate_path(root, ValidateOptions(jobs=1), "rocketmq")
    expected = sorted((f.code, _rel(f.path, root), f.position) for f in report.findings if f.code in SCAN_CODES)
    got = sorted((f["code"], _rel(f["path"], root), f["position"]) for f in result.findings if f["source"] == case)
    assert case in {c for c, _, _ in expected}, "the damage case must produce its own code in validate"
    assert got == expected


def test_scan_cli_on_the_clean_fixture_as_two_sources(spark, tmp_path, capsys):
    """The bundled store scanned twice under two labels: no finding, every dataset written,
    per-source topic counts, and every UNIQ_KEY reported stored twice."""
    out = tmp_path / "out"
    code = cli_run(["scan", f"a={STORE}", f"b={STORE}", "--out", str(out), "--json", "--split-size", "8k"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"], doc["findings"]
    assert doc == json.loads((out / "report.json").read_text())
    assert doc["rows"] == {"messages": 2 * 245, "queue_units": 2 * 244, "index_entries": 2 * 724}
    for source in ("a", "b"):
        topics = {t["topic"]: t for t in doc["topics"] if t["source"] == source}
        assert sum(t["messages"] for t in topics.values()) == 245
        assert topics["TopicTest"]["queues"] == 4 and topics["TopicTest"]["first_timestamp"] <= topics["TopicTest"]["last_timestamp"]
    for name in ("messages", "queue_units", "index_entries", "findings"):
        assert (out / name / "_SUCCESS").exists()
    assert (out / "messages" / "source=a" / "topic=TopicTest").is_dir()
    dups = doc["uniq_key_duplicates"]
    keyed = spark.read.parquet(str(out / "messages")).where("source = 'a' and uniq_key is not null").count()
    assert dups["keys"] == keyed and dups["copies"] == 2 * keyed
    assert all(e["sources"] == ["a", "b"] for e in dups["examples"])


def test_report_of_a_damaged_store(damaged):
    """The report document and table for a damaged run: validate's severities and families,
    FAILED, and exit code 1 (ops.findings decides, as for validate)."""
    from rich.console import Console

    from mqtool.cli.cmd_scan import build_report, render_table
    from mqtool.findings import Severity
    from mqtool.pipeline import jobs

    roots, result = damaged
    cfg = jobs.ScanConfig(tuple(jobs.ScanInput(c, str(r), "rocketmq") for c, r in roots.items()), "out")
    report = build_report(cfg, result, Severity.error)
    assert not report["ok"] and report["counts"]["error"] >= len(CASES) - 1
    mismatch = next(f for f in report["findings"] if f["code"] == "RMQ-CQ-MISMATCH" and f["source"] == "RMQ-CQ-MISMATCH")
    assert mismatch["severity"] == "error" and mismatch["family"] == "consumequeue"
    console = Console(record=True, width=200)
    render_table(console, report)
    text = console.export_text()
    assert "FAILED" in text and "RMQ-IDX-PAST-END" in text
    assert build_report(cfg, result, Severity.error)["ok"] is False


def test_missing_pyspark_is_one_line_and_exit_4(monkeypatch, tmp_path, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    code = cli_run(["scan", str(STORE), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert len(err) == 1 and "pip install 'mqtool[spark]'" in err[0]


def test_missing_java_is_one_line_and_exit_4(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    code = cli_run(["scan", str(STORE), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert len(err) == 1 and "openjdk-17-jre-headless" in err[0] and "Java 17" in err[0]
