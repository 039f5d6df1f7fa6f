"""clean for RocketMQ: each policy deletes exactly the expected files, safe under cron."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq.config import encode_fastjson
from mqtool.ops.clean import DiskUsage
from mqtool.ops.clean.rocketmq import CleanOptions, plan_clean_rocketmq
from mqtool.ops.recover import apply_plan
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store import rocketmq as rmq
from mqtool.store.writer import StoreWriter, WriterConfig

HOUR = 3600
NOW_MS = 1_800_000_000_000
CONFIG = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)


def low_disk(_path):
    return DiskUsage(total=100, free=80, available=80)  # 20 % used


def disk_at(percent):
    return lambda _path: DiskUsage(total=100, free=100 - percent, available=100 - percent)


def build(root: Path, messages: int = 120, ages_h=None) -> list[rmq.Segment]:
    """A store with several CommitLog files; file i gets mtime NOW - ages_h[i] hours."""
    clock = [NOW_MS - 500 * HOUR * 1000]

    def tick():
        clock[0] += 1000
        return clock[0]

    with StoreWriter(root, CONFIG, clock=tick) as w:
        for i in range(messages):
            w.append(cl.MessageRecord(topic="T", queue_id=i % 2, body=b"x" * 80, properties={"KEYS": f"k{i}", "TAGS": "A"}))
    segs = rmq.open_store(root).commitlog
    ages = ages_h or [200 - 10 * i for i in range(len(segs))]
    for seg, age in zip(segs, ages):
        t = NOW_MS / 1000 - age * HOUR
        os.utime(seg.path, (t, t))
    return segs


def removed(plan):
    return [s.path for s in plan.steps if s.action == "remove"]


def test_safe_policy_deletes_expired_commitlog_then_cq_and_index(tmp_path):
    segs = build(tmp_path)
    n = len(segs)
    assert n >= 5
    plan = plan_clean_rocketmq(tmp_path, CleanOptions(), now_ms=NOW_MS, probe=low_disk)
    cl_removed = [p for p in removed(plan) if p.startswith("commitlog/")]
    # all files are older than 72 h except none: ages 200,190,...; the active (last) file is kept
    assert cl_removed == [f"commitlog/{s.name}" for s in segs[: n - 1]]
    new_min = segs[n - 1].base
    assert plan.facts["commitlog"] == {"new_log_start_offset": new_min}
    store = rmq.open_store(tmp_path)
    for topic, qid in store.queues():
        cq = store.cq_segments(topic, qid)
        expected = [f"consumequeue/{topic}/{qid}/{s.name}" for s in cq[:-1] if rmq.read_cq_unit(store, topic, qid, (s.base + s.size) // 20 - 1).unit.commitlog_offset < new_min]
        assert [p for p in removed(plan) if p.startswith(f"consumequeue/{topic}/{qid}/")] == expected
    apply_plan(plan, command="clean")
    report = validate_rocketmq(tmp_path, ValidateOptions())
    assert not report.failed, [f.to_dict() for f in report.findings if f.level.value == "error"]
    assert rmq.open_store(tmp_path).commitlog[0].base == new_min


def test_stops_at_first_unexpired_file_no_holes(tmp_path):
    segs = build(tmp_path)
    ages = [100, 10, 100, 100] + [100] * (len(segs) - 4)
    for seg, age in zip(segs, ages):
        t = NOW_MS / 1000 - age * HOUR
        os.utime(seg.path, (t, t))
    plan = plan_clean_rocketmq(tmp_path, CleanOptions(), now_ms=NOW_MS, probe=low_disk)
    assert [p for p in removed(plan) if p.startswith("commitlog/")] == [f"commitlog/{segs[0].name}"]


def test_reserved_hours_and_batch_max(tmp_path):
    segs = build(tmp_path)
    plan = plan_clean_rocketmq(tmp_path, CleanOptions(file_reserved_hours=185), now_ms=NOW_MS, probe=low_disk)
    assert [p for p in removed(plan) if p.startswith("commitlog/")] == [f"commitlog/{s.name}" for s in segs[:2]]
    plan = plan_clean_rocketmq(tmp_path, CleanOptions(batch_max=1), now_ms=NOW_MS, probe=low_disk)
    assert len([p for p in removed(plan) if p.startswith("commitlog/")]) == 1
    plan = plan_clean_rocketmq(tmp_path, CleanOptions(max_delete=2), now_ms=NOW_MS, probe=low_disk)
    assert len([p for p in removed(plan) if p.startswith("commitlog/")]) == 2


def test_broker_policy_hour_gate_and_space(tmp_path):
    build(tmp_path)
    four_am = int(dt.datetime(2027, 1, 15, 4, 30).timestamp() * 1000)
    noon = int(dt.datetime(2027, 1, 15, 12, 0).timestamp() * 1000)
    assert removed(plan_clean_rocketmq(tmp_path, CleanOptions(policy="broker"), now_ms=noon, probe=low_disk)) == []
    assert removed(plan_clean_rocketmq(tmp_path, CleanOptions(policy="broker"), now_ms=four_am, probe=low_disk))
    # above diskMaxUsedSpaceRatio the hour does not matter
    assert removed(plan_clean_rocketmq(tmp_path, CleanOptions(policy="broker"), now_ms=noon, probe=disk_at(80)))
    # manual request (deleteExpiredCommitLog)
    assert removed(plan_clean_rocketmq(tmp_path, CleanOptions(policy="broker", manual=True), now_ms=noon, probe=low_disk))
    # safe policy with an explicit --delete-when gate
    assert removed(plan_clean_rocketmq(tmp_path, CleanOptions(delete_when="04"), now_ms=noon, probe=low_disk)) == []


def test_forced_deletion_when_disk_full(tmp_path):
    segs = build(tmp_path, ages_h=[1] * 50)  # nothing expired
    assert removed(plan_clean_rocketmq(tmp_path, CleanOptions(), now_ms=NOW_MS, probe=disk_at(91))) == []
    plan = plan_clean_rocketmq(tmp_path, CleanOptions(), now_ms=NOW_MS, probe=disk_at(91))
    assert any("--force-when-full" in n for n in plan.notes) and any("diskSpaceWarningLevelRatio" in n for n in plan.notes)
    forced = plan_clean_rocketmq(tmp_path, CleanOptions(force_when_full=True), now_ms=NOW_MS, probe=disk_at(91))
    assert [p for p in removed(forced) if p.startswith("commitlog/")] == [f"commitlog/{s.name}" for s in segs[:-1]]
    broker = plan_clean_rocketmq(tmp_path, CleanOptions(policy="broker"), now_ms=NOW_MS, probe=disk_at(91))
    assert len([p for p in removed(broker) if p.startswith("commitlog/")]) == min(10, len(segs) - 1)
    off = plan_clean_rocketmq(tmp_path, CleanOptions(policy="broker", clean_file_forcibly_enable=False), now_ms=NOW_MS, probe=disk_at(91))
    assert removed(off) == []


def test_active_file_survives_and_preallocated_next(tmp_path):
    segs = build(tmp_path, ages_h=[500] * 50)
    nxt = tmp_path / "commitlog" / segnames.rocketmq_file_name(segs[-1].base + 4096)
    nxt.write_bytes(bytes(4096))  # pre-allocated next file
    t = NOW_MS / 1000 - 500 * HOUR
    os.utime(nxt, (t, t))
    safe = removed(plan_clean_rocketmq(tmp_path, CleanOptions(), now_ms=NOW_MS, probe=low_disk))
    assert f"commitlog/{segs[-1].name}" not in safe and f"commitlog/{nxt.name}" not in safe
    broker = removed(plan_clean_rocketmq(tmp_path, CleanOptions(policy="broker", manual=True, batch_max=100), now_ms=NOW_MS, probe=low_disk))
    assert f"commitlog/{segs[-1].name}" in broker and f"commitlog/{nxt.name}" not in broker  # the broker only spares the last file


def test_protect_unconsumed(tmp_path):
    segs = build(tmp_path, ages_h=[500] * 50)
    store = rmq.open_store(tmp_path)
    # group g has consumed queue 0 up to offset 10 only: the file holding that message stays
    unit = rmq.read_cq_unit(store, "T", 0, 10)
    (tmp_path / "config" / "consumerOffset.json").write_text(encode_fastjson({"offsetTable": {"T@g": {0: 10, 1: 60}}}))
    plan = plan_clean_rocketmq(tmp_path, CleanOptions(protect_unconsumed=True), now_ms=NOW_MS, probe=low_disk)
    kept_from = next(s for s in segs if s.base <= unit.unit.commitlog_offset < s.base + s.size)
    assert [p for p in removed(plan) if p.startswith("commitlog/")] == [f"commitlog/{s.name}" for s in segs if s.base < kept_from.base]
    assert any("g (T/0)" in n for n in plan.notes)
    # the default keeps them too; --allow-unconsumed deletes them and names the group in the plan
    assert removed(plan_clean_rocketmq(tmp_path, CleanOptions(), now_ms=NOW_MS, probe=low_disk)) == removed(plan)
    allowed = plan_clean_rocketmq(tmp_path, CleanOptions(protect_unconsumed=False), now_ms=NOW_MS, probe=low_disk)
    assert f"commitlog/{kept_from.name}" in removed(allowed)
    assert allowed.facts["unconsumed_deleted_for"] == ["g (T/0)"]
    assert any(n.startswith("--allow-unconsumed: deletes messages not yet consumed by: g (T/0)") for n in allowed.notes)


def test_clean_cli_default_names_the_groups_holding_files_back(tmp_path):
    build(tmp_path, ages_h=[500] * 50)
    (tmp_path / "config" / "consumerOffset.json").write_text(encode_fastjson({"offsetTable": {"T@g": {0: 10, 1: 60}}}))
    keep = _run("clean", tmp_path, "--now", NOW_MS, "--json", "--manual")
    allow = _run("clean", tmp_path, "--now", NOW_MS, "--json", "--manual", "--allow-unconsumed")
    kept, allowed = json.loads(keep.stdout), json.loads(allow.stdout)
    assert any("not yet consumed by: g (T/0)" in n for n in kept["notes"])
    assert len(allowed["steps"]) > len(kept["steps"]) and allowed["facts"]["unconsumed_deleted_for"] == ["g (T/0)"]
    both = _run("clean", tmp_path, "--protect-unconsumed", "--allow-unconsumed")
    assert both.returncode == 2 and "contradict" in both.stderr


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "mqtool", *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


def test_second_run_exits_75(tmp_path):
    build(tmp_path)
    fd = os.open(tmp_path / ".mqtool.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = _run("clean", tmp_path, "--apply", "--now", NOW_MS)
    finally:
        os.close(fd)
    assert proc.returncode == 75
    assert len(proc.stderr.strip().splitlines()) == 1 and "another mqtool run holds the lock" in proc.stderr


def test_two_concurrent_processes_one_works_one_busy(tmp_path):
    build(tmp_path)
    cmd = [sys.executable, "-m", "mqtool", "clean", str(tmp_path), "--apply", "--now", str(NOW_MS), "--interval-ms", "400", "--quiet"]
    a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.8)
    b = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    a.communicate(timeout=60)
    assert sorted([a.returncode, b.returncode]) in ([0, 75], [0, 0])
    if b.returncode == 75:
        assert "another mqtool run holds the lock" in b.stderr


def test_broker_lock_refused_unless_live(tmp_path):
    build(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0); print('locked', flush=True); time.sleep(30)", str(tmp_path / "lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        proc = _run("clean", tmp_path, "--apply", "--now", NOW_MS, "--interval-ms", "0")
        assert proc.returncode == 5 and "the broker" in proc.stderr  # running, not busy (issue 19)
        assert "pass --live" in proc.stderr and "--force" not in proc.stderr  # the flag clean has
        assert len(rmq.open_store(tmp_path).commitlog) > 2
        proc = _run("clean", tmp_path, "--apply", "--now", NOW_MS, "--interval-ms", "0", "--live", "--quiet")
        assert proc.returncode == 0 and proc.stdout == ""
    finally:
        holder.kill()
        holder.wait()


def _tree(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kill_at", [1, 2, 3, 5, 8, 13])
def test_kill_mid_run_then_rerun_converges(tmp_path, kill_at):
    reference = tmp_path / "ref"
    victim = tmp_path / "victim"
    build(reference)
    build(victim)
    ref = _run("clean", reference, "--apply", "--now", NOW_MS, "--interval-ms", "0")
    assert ref.returncode == 0, ref.stderr
    env = {**os.environ, "MQTOOL_FAULT_INJECT": f"kill@{kill_at}"}
    killed = _run("clean", victim, "--apply", "--now", NOW_MS, "--interval-ms", "0", env=env)
    assert killed.returncode in (-9, 0)
    rerun = _run("clean", victim, "--apply", "--now", NOW_MS, "--interval-ms", "0")
    assert rerun.returncode == 0, rerun.stderr
    assert _tree(victim).keys() == _tree(reference).keys()
    assert not validate_rocketmq(victim, ValidateOptions()).failed


def test_cli_plan_exit_codes_and_report(tmp_path):
    build(tmp_path)
    proc = _run("clean", tmp_path, "--now", NOW_MS, "--json")
    assert proc.returncode == 1
    import json

    doc = json.loads(proc.stdout)
    assert doc["has_work"] and all(s["action"] == "remove" for s in doc["steps"])
    proc = _run("clean", tmp_path, "--now", NOW_MS, "--apply", "--json", "--interval-ms", "0")
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["deleted"] and report["bytes_freed"] > 0
    proc = _run("clean", tmp_path, "--now", NOW_MS)
    assert proc.returncode == 0 and "nothing to clean" in proc.stdout


def test_config_file_settings(tmp_path):
    segs = build(tmp_path)
    conf = tmp_path.parent / "broker.conf"
    conf.write_text("brokerName=b\nfileReservedTime=185\ndeleteWhen=04\n")
    import json

    proc = _run("clean", tmp_path, "--now", NOW_MS, "--config", conf, "--json", "--delete-when", "00;01;02;03;04;05;06;07;08;09;10;11;12;13;14;15;16;17;18;19;20;21;22;23")
    doc = json.loads(proc.stdout)
    assert [s["path"] for s in doc["steps"] if s["path"].startswith("commitlog/")] == [f"commitlog/{s.name}" for s in segs[:2]]


@pytest.mark.parametrize(
    "kwargs,says",
    [
        ({"delete_when": "25"}, "deleteWhen"),
        ({"delete_when": "04;abc"}, "deleteWhen"),
        ({"file_reserved_hours": -1}, "fileReservedTime"),
        ({"disk_max_used_ratio": 101}, "diskMaxUsedSpaceRatio"),
        ({"warning_ratio": -3}, "diskSpaceWarningLevelRatio"),
    ],
)
def test_options_the_broker_would_never_act_on_are_refused(kwargs, says):
    with pytest.raises(ValueError, match=says):
        CleanOptions(**kwargs)


def test_options_delete_when_hours_are_parsed():
    assert CleanOptions(delete_when="04;16").delete_when == "04;16"
    assert CleanOptions(delete_when=" 0 ; 23 ").delete_when == " 0 ; 23 "
