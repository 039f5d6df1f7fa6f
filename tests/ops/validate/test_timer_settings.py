"""The timer store's gaps closed by issue 29: the wheel's slot width read from broker.conf
(``timerPrecisionMs``, snapped as ``MessageStoreConfig.setTimerPrecisionMs`` snaps it), timermetrics
counts checked against the TimerLog's units (``TimerMessageStore.checkAndReviseMetrics``), and
``info`` naming the timer store (its table line and its JSON ``timer`` field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store.broker_config import read_broker_settings
from tests.conftest import run_cli
from tests.timer_store import T0, make_timer_store

#: two delivery times 600 ms apart: one slot at 1000 ms precision, two at 500 ms
DELAYS = [5_000, 5_600, 65_000, 3_600_000]


@pytest.mark.parametrize(("value", "snapped"), [("1000", 1000), ("500", 500), ("700", 500), ("200", 200), ("499", 200), ("150", 100), ("0", 100), ("5000", 1000)])
def test_timer_precision_is_snapped_as_the_broker_snaps_it(tmp_path, value, snapped):
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b\ntimerPrecisionMs={value}\n")
    assert read_broker_settings(conf).timer_precision_ms == snapped


def test_without_the_key_the_precision_is_unset(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\n")
    assert read_broker_settings(conf).timer_precision_ms is None


def test_a_store_of_500_ms_slots_validates_clean_only_with_its_precision(tmp_path):
    root = tmp_path / "store"
    make_timer_store(root, DELAYS, precision_ms=500)
    at_default = validate_rocketmq(root, ValidateOptions(checks=frozenset({"timer"})))
    # at 1000 ms the two units 600 ms apart share a slot the wheel does not hold for them
    assert {f.code for f in at_default.findings} & {"RMQ-TIMER-UNIT-PREV", "RMQ-TIMER-SLOT", "RMQ-TIMER-SLOT-CHAIN"}
    assert at_default.facts["timer"]["precision_ms"] == 1000
    at_500 = validate_rocketmq(root, ValidateOptions(checks=frozenset({"timer"}), timer_precision_ms=500))
    assert at_500.findings == []
    assert at_500.facts["timer"]["precision_ms"] == 500


def test_validate_takes_the_precision_from_config(tmp_path):
    root = tmp_path / "store"
    make_timer_store(root, DELAYS, precision_ms=500)
    conf = tmp_path / "broker.conf"
    conf.write_text("timerPrecisionMs=500\n")
    code, out, _ = run_cli("validate", root, "--checks", "timer", "--json")
    assert code == 1 and json.loads(out)["facts"]["timer"]["precision_ms"] == 1000
    code, out, err = run_cli("validate", root, "--checks", "timer", "--json", "--config", conf)
    doc = json.loads(out)
    assert code == 0, err
    assert doc["findings"] == [] and doc["facts"]["timer"]["precision_ms"] == 500


def test_dump_timerwheel_shows_slot_times_at_the_configured_precision(tmp_path):
    root = tmp_path / "store"
    make_timer_store(root, DELAYS, precision_ms=500)
    conf = tmp_path / "broker.conf"
    conf.write_text("timerPrecisionMs=500\n")
    code, out, _ = run_cli("dump", "timerwheel", root, "--jsonl", "--config", conf)
    assert code == 0
    times = sorted(json.loads(line)["time_ms"] for line in out.splitlines())
    assert times == sorted((T0 + d) // 500 * 500 for d in DELAYS)


def _metrics(root: Path) -> dict:
    return json.loads((root / "config" / "timermetrics").read_text())


def test_timermetrics_that_agree_with_the_timerlog_give_no_finding(tmp_path):
    root = tmp_path / "store"
    make_timer_store(root)
    report = validate_rocketmq(root, ValidateOptions(checks=frozenset({"timer"})))
    assert [f for f in report.findings if f.code == "RMQ-TIMER-METRICS"] == []


def test_a_timermetrics_count_the_timerlog_does_not_hold_is_an_info_finding(tmp_path):
    root = tmp_path / "store"
    make_timer_store(root)
    doc = _metrics(root)
    held = doc["timingCount"]["Real1"]["count"]
    doc["timingCount"]["Real1"]["count"] = held + 7
    (root / "config" / "timermetrics").write_text(json.dumps(doc))
    report = validate_rocketmq(root, ValidateOptions(checks=frozenset({"timer"})))
    found = [f for f in report.findings if f.code == "RMQ-TIMER-METRICS"]
    assert len(found) == 1
    f = found[0]
    assert f.path == str(root / "config" / "timermetrics") and f.level.value == "info"
    assert f"'Real1'].count {held}" in f.message and f"found {held + 7}" in f.message
    assert not report.failed  # advisory: the broker revises it itself


def test_units_due_before_the_read_time_are_not_counted(tmp_path):
    root = tmp_path / "store"
    # read time past the first two deliveries (Real0 at +5000, Real1 at +5400): the broker no longer counts them
    make_timer_store(root, read_ms=T0 + 6_000)
    report = validate_rocketmq(root, ValidateOptions(checks=frozenset({"timer"})))
    by_topic = {f.message.split("'")[1]: f for f in report.findings if f.code == "RMQ-TIMER-METRICS"}
    assert sorted(by_topic) == ["Real0", "Real1"]


def test_info_names_the_timer_store(tmp_path):
    root = tmp_path / "store"
    make_timer_store(root)
    code, out, _ = run_cli("info", root, "--json")
    timer = json.loads(out)["timer"]
    assert timer["timerlog_files"] == 1 and timer["timerlog_bytes"] == 64 * 1024
    assert timer["wheel_bytes"] == (root / "timerwheel").stat().st_size
    assert timer["checkpoint"]["last_read_time_ms"] == T0
    assert timer["metrics_topics"] == 3
    code, out, _ = run_cli("info", root)
    text = " ".join(out.split())  # the table wraps at the terminal's width
    assert "timer store timerlog 1 file(s), 64.0 KiB, wheel" in text and "3 topic(s) in timermetrics" in text


def test_info_without_a_timer_store_says_null(tmp_path):
    root = tmp_path / "store"
    make_timer_store(root)
    for p in ("timerwheel", "config/timercheck", "config/timermetrics"):
        (root / p).unlink()
    for p in (root / "timerlog").iterdir():
        p.unlink()
    (root / "timerlog").rmdir()
    code, out, _ = run_cli("info", root, "--json")
    assert json.loads(out)["timer"] is None
    _, out, _ = run_cli("info", root)
    assert "timer store" not in out
