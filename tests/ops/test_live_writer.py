"""Reading beside a live writer: no false corruption, the tail reported as in progress.

A subprocess appends to a store at full speed through mqtool's writer (which holds ``lock`` the
way the broker does) while validate, dump, info and stats run, and clean runs with ``--live``.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store import rocketmq as rmq
from mqtool.store.writer import StoreWriter, WriterConfig

PROJECT = Path(__file__).resolve().parents[2]

WRITER = f"""
import os, sys
sys.path.insert(0, {str(PROJECT)!r})
import datetime as dt
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store.writer import StoreWriter, WriterConfig
cfg = WriterConfig(commitlog_file_size=64 * 1024, cq_file_size=2000, index_hash_slot_num=1024, index_num=4096, index_tz=dt.timezone.utc)
# Appends at full speed until the test creates the stop file; the cap on appends only bounds
# the disk a forgotten writer can fill (the rounds stop it long before, whatever the machine's load).
stop_file, cap = sys.argv[2], 200_000
with StoreWriter(sys.argv[1], cfg) as w:
    print("writing", flush=True)
    i = 0
    while not (i % 16 == 0 and (os.path.exists(stop_file) or i >= cap)):
        w.append(cl.MessageRecord(topic=f"Live{{i % 3}}", queue_id=i % 2, body=b"payload-%d" % i * 8, properties={{"KEYS": f"k{{i}}", "TAGS": "T"}}))
        i += 1
print("wrote", i, flush=True)
"""


@pytest.fixture
def live_store(tmp_path):
    root = tmp_path / "store"
    cfg = WriterConfig(commitlog_file_size=64 * 1024, cq_file_size=2000, index_hash_slot_num=1024, index_num=4096, index_tz=dt.timezone.utc)
    with StoreWriter(root, cfg) as w:  # some data before the writer starts
        for i in range(50):
            w.append(cl.MessageRecord(topic="Live0", queue_id=0, body=b"seed", properties={"KEYS": f"s{i}", "TAGS": "T"}))
    stop_file = tmp_path / "stop-writing"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(stop_file)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    yield root, proc, stop_file
    proc.kill()
    proc.wait()


def _quiet_run(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_reads_beside_a_live_writer(live_store, capsys):
    root, proc, stop_file = live_store
    for _ in range(2):  # the writer appends until told to stop: every round runs beside it
        report = validate_rocketmq(root, ValidateOptions())
        assert report.facts["live"] is True
        bad = [f.to_dict() for f in report.findings if f.level.value != "info"]
        assert not bad, bad
        assert any(f.code == "RMQ-IDX-IN-PROGRESS" for f in report.findings)  # the active IndexFile
        for command in (("dump", "commitlog", root, "--jsonl"), ("info", root, "--json"), ("stats", root, "--json")):
            code, out, err = _quiet_run(capsys, *command)
            assert code == 0, (command, err)
        assert proc.poll() is None, "the writer reached its cap of appends before the round ended"
    stop_file.touch()
    proc.wait(timeout=60)
    # once the writer has stopped the store is clean
    final = validate_rocketmq(root, ValidateOptions())
    assert not final.failed and final.facts["live"] is False
    assert not [f for f in final.findings if f.level.value != "info"]


def test_clean_beside_a_live_writer_spares_the_active_file(live_store):
    root, proc, stop_file = live_store
    time.sleep(1.0)
    refused = subprocess.run([sys.executable, "-m", "mqtool", "clean", str(root), "--apply", "--reserved-hours", "0"], capture_output=True, text=True)
    assert refused.returncode == 5 and "the broker" in refused.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mqtool", "clean", str(root), "--apply", "--live", "--reserved-hours", "0", "--interval-ms", "0", "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    deleted = [s["path"] for s in json.loads(done.stdout)["deleted"]]
    assert proc.poll() is None, "the writer reached its cap of appends before clean ended"
    stop_file.touch()
    proc.wait(timeout=60)
    assert "wrote" in proc.stdout.read()
    segments = rmq.open_store(root).commitlog
    assert segments, "the active file must survive"
    assert all(f"commitlog/{s.name}" not in deleted for s in segments)
    assert not validate_rocketmq(root, ValidateOptions()).failed
