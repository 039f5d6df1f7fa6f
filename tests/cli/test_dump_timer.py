"""``mqtool dump timerlog|timerwheel|timercheck|timermetrics`` through the CLI, on timer stores written by
``tests/timer_store.py``, damaged copies, hostile files and the real 5.3.1 volume; and ``dump
config``/``dump checkpoint`` refusing a timer file with the family that reads it."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.cli.app import run
from mqtool.store.files import read_in_pieces
from tests.conftest import real_path
from tests.timer_store import SLOT_LEN, T0, UNIT_LEN, make_timer_store


def mqtool(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("dump-timer") / "store"
    timer = make_timer_store(root, delays=[1000 * i + 250 for i in range(1, 9)] + [5_000, 3_600_000], timerlog_file_size=UNIT_LEN * 4 + 20)
    return root, timer


def test_dump_timerlog_lists_every_unit_the_writer_wrote(capsys, store):
    root, timer = store
    code, out, err = mqtool(capsys, "dump", "timerlog", root, "--jsonl")
    assert code == 0 and err == ""
    rows = lines(out)
    assert [(r["timerlog_offset"], r["commitlog_offset"], r["size"], r["delayed_time"]) for r in rows] == [
        (e.unit_offset, e.commitlog_offset, e.size, e.delayed_time) for e in timer.enqueued
    ]
    assert {Path(r["file"]).name for r in rows} == {f"{b:020d}" for b in timer.files}
    assert all(r["position"] == r["timerlog_offset"] - int(Path(r["file"]).name) for r in rows)
    # the same rows whatever piece the files are read in
    for piece in (64, 100, 333):
        with read_in_pieces(piece):
            again = mqtool(capsys, "dump", "timerlog", root, "--jsonl")
        assert again == (code, out, err)


def test_dump_timerlog_one_file_and_limit(capsys, store):
    root, timer = store
    second = sorted(timer.files)[1]
    code, out, _ = mqtool(capsys, "dump", "timerlog", root / "timerlog" / f"{second:020d}", "--jsonl")
    assert code == 0
    assert [r["timerlog_offset"] for r in lines(out)] == [e.unit_offset for e in timer.enqueued if e.file_base == second]
    code, out, _ = mqtool(capsys, "dump", "timerlog", root, "--jsonl", "--limit", 3)
    assert code == 0 and len(lines(out)) == 3
    code, out, _ = mqtool(capsys, "dump", "timerlog", root)
    assert code == 0 and "COMMITLOG OFFSET" in out and "2023-11-14T22:13:2" in out


def test_dump_timerwheel_lists_the_used_slots(capsys, store):
    root, timer = store
    code, out, err = mqtool(capsys, "dump", "timerwheel", root, "--jsonl")
    assert code == 0 and err == ""
    rows = lines(out)
    assert {r["slot"]: (r["time"], r["first_pos"], r["last_pos"], r["num"], r["magic"]) for r in rows} == timer.slots
    assert all(r["position"] == r["slot"] * SLOT_LEN and r["time_ms"] == r["time"] * 1000 for r in rows)


def test_dump_timercheck_and_timermetrics(capsys, store):
    root, timer = store
    code, out, _ = mqtool(capsys, "dump", "timercheck", root, "--json")
    doc = json.loads(out)
    assert code == 0
    assert (doc["last_read_time_ms"], doc["last_timer_log_flush_pos"], doc["last_timer_queue_offset"]) == (T0, timer.wrote, len(timer.enqueued))
    code, out, _ = mqtool(capsys, "dump", "timermetrics", root / "config" / "timermetrics", "--json")
    doc = json.loads(out)
    assert code == 0
    assert sum(t["count"] for t in doc["timing_count"]) == len(timer.enqueued)
    assert doc["data_version"]["counter"] == len(timer.enqueued)


def test_a_damaged_timerlog_is_stated_with_validates_code(capsys, store, tmp_path):
    root, timer = store
    copy = tmp_path / "s"
    shutil.copytree(root, copy)
    e = timer.enqueued[1]
    path = copy / "timerlog" / f"{e.file_base:020d}"
    with open(path, "r+b") as f:
        f.seek(e.position)
        f.write(struct.pack(">i", 7))
    code, out, err = mqtool(capsys, "dump", "timerlog", copy, "--jsonl")
    assert code == 1
    assert f"RMQ-TIMER-LOG-UNIT {path}:{e.position}:" in err
    assert "Traceback" not in err
    rows = lines(out)
    assert e.unit_offset not in [r["timerlog_offset"] for r in rows]  # the file's walk stops there


def test_a_wheel_of_the_wrong_size(capsys, store, tmp_path):
    wheel = tmp_path / "timerwheel"
    wheel.write_bytes((root_wheel := store[0] / "timerwheel").read_bytes()[: 1000 * SLOT_LEN])
    assert root_wheel.exists()
    code, _, err = mqtool(capsys, "dump", "timerwheel", wheel, "--jsonl")
    assert code == 1 and f"RMQ-TIMER-WHEEL-SIZE {wheel}:" in err


@pytest.mark.parametrize("family", ["timerlog", "timerwheel", "timercheck", "timermetrics"])
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=st.binary(max_size=400))
def test_hostile_bytes_give_an_error_or_a_finding_never_a_traceback(capsys, tmp_path_factory, family, data):
    d = tmp_path_factory.mktemp("hostile")
    name = {"timerlog": f"{0:020d}", "timerwheel": "timerwheel", "timercheck": "timercheck", "timermetrics": "timermetrics"}[family]
    target = d / ("timerlog" if family == "timerlog" else "") / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    code, _, err = mqtool(capsys, "dump", family, target, "--jsonl")
    assert code in (0, 1, 3), err
    assert "Traceback" not in err and "internal error" not in err.lower()
    if code == 1 or code == 3:
        assert str(target) in err


# --- timer files given to another family ----------------------------------------------------------

REAL = ("rocketmq", "guoming-docker-compose-rocketmq", "store")


@pytest.mark.parametrize("family", ["config", "checkpoint"])
def test_a_timercheck_is_refused_with_the_family_that_reads_it(capsys, family):
    path = real_path(*REAL, "config", "timercheck")
    code, out, err = mqtool(capsys, "dump", family, path)
    assert code == 3 and out == ""
    assert f"{path}: expected" in err and "read it with `mqtool dump timercheck`" in err
    assert "0x9E" not in err and "physic_msg_timestamp" not in out


def test_real_531_timer_files_dump(capsys):
    """The 5.3.1 volume: timercheck and timermetrics through their families (no TimerLog: a clear error)."""
    root = real_path(*REAL)
    code, out, _ = mqtool(capsys, "dump", "timercheck", root, "--json")
    assert code == 0 and json.loads(out)["last_read_time_ms"] == 1_778_241_104_000
    assert json.loads(out)["data_version_counter"] == 426
    code, out, _ = mqtool(capsys, "dump", "timermetrics", root, "--json")
    assert code == 0 and json.loads(out)["timing_count"] == []
    code, out, err = mqtool(capsys, "dump", "timerlog", root)
    assert code == 3 and "timerlog" in err and "found none" in err
