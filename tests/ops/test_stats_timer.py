"""``mqtool stats`` on RocketMQ 5.x timer stores: the timer messages not delivered yet, by due time,
as the store model reads the TimerLog (what recovery keeps), with validate's findings on it."""

from __future__ import annotations

import json
import struct

import jsonschema

from mqtool.cli.app import run
from mqtool.ops.stats import StatsOptions, store_stats
from mqtool.schemas import schema
from tests.timer_store import T0, UNIT_LEN, make_timer_store


def _stats(root):
    return store_stats(root, "rocketmq", StatsOptions()).to_dict()


def test_pending_timer_messages_by_due_time(tmp_path):
    root = tmp_path / "s"
    # due 5 s, 5.4 s, 65 s, 1 h, 5.9 s, 1 day after T0 (the checkpoint's lastReadTimeMs)
    timer = make_timer_store(root)
    e = timer.enqueued[0]
    timer.enqueue(e.commitlog_offset, e.size, T0 + 7_200_000, T0 + 200, "Real0", magic=1 | 2)  # rolled to 2 h
    timer.enqueue(e.commitlog_offset, e.size, T0 + 10_000, T0 + 201, "Real0", magic=1 | 4)  # a delete mark
    timer.enqueue(e.commitlog_offset, e.size, T0 - 1_000, T0 + 202, "Real0")  # due before the read time
    timer.write()
    timer.write_checkpoint(T0, 9)
    doc = _stats(root)
    t = doc["timer"]
    assert (t["read_time_ms"], t["read_time_source"]) == (T0, "timercheck lastReadTimeMs")
    assert (t["pending"], t["rolled"], t["deletes"]) == (7, 1, 1)
    assert (t["first_due_ms"], t["last_due_ms"]) == (T0 + 5_000, T0 + 86_400_000)
    assert {b["due_within_s"]: b["count"] for b in t["by_due"]} == {5: 0, 60: 3, 300: 1, 900: 0, 3600: 0, 14400: 2, 28800: 0, 86400: 0, None: 1}
    jsonschema.Draft202012Validator(schema("stats")).validate(doc)


def test_without_timercheck_the_newest_enqueue_time_is_the_read_time(tmp_path):
    root = tmp_path / "s"
    make_timer_store(root, delays=[100, 200_000])
    (root / "config" / "timercheck").unlink()
    t = _stats(root)["timer"]
    assert t["read_time_ms"] == T0 + 101 and t["read_time_source"].startswith("the newest unit's enqueue time")
    assert t["pending"] == 1  # the one due at T0 + 100 is before it


def test_a_store_without_timerlog_has_no_timer_section(tmp_path):
    root = tmp_path / "s"
    make_timer_store(root, delays=[])
    import shutil

    shutil.rmtree(root / "timerlog")
    assert "timer" not in _stats(root)


def test_units_after_where_recovery_stops_are_not_counted_and_the_finding_is_stated(tmp_path, capsys):
    root = tmp_path / "s"
    timer = make_timer_store(root)
    e = timer.enqueued[2]
    with open(root / "timerlog" / f"{0:020d}", "r+b") as f:
        f.seek(e.position)
        f.write(struct.pack(">i", UNIT_LEN + 1))
    doc = _stats(root)
    assert doc["timer"]["pending"] == 2  # the units before the broken one
    assert [(f["code"], f["position"]) for f in doc["findings"]] == [("RMQ-TIMER-LOG-UNIT", e.position)]
    code = run(["stats", str(root)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "timer messages: 2 pending" in out
    assert f"RMQ-TIMER-LOG-UNIT {root / 'timerlog' / f'{0:020d}'}:{e.position}" in out + err
    code = run(["stats", str(root), "--json"])
    assert json.loads(capsys.readouterr().out)["timer"]["pending"] == 2
