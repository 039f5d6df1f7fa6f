"""Reading a Kafka log dir beside a live writer: no false corruption, the tail in progress.

A subprocess appends batches at full speed through mqtool's log-dir writer (holding ``.lock``
the way the broker does, rolling small segments) while validate, dump, info and stats run;
clean runs with ``--live`` and must spare each partition's active segment.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.kafka import validate_kafka
from mqtool.store import kafka as ks

PROJECT = Path(__file__).resolve().parents[2]

WRITER = f"""
import os, sys
sys.path.insert(0, {str(PROJECT)!r})
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import record_batch as rb
from mqtool.store.kafka_writer import LogDirWriter, PartitionConfig
meta = cpf.MetaProperties(1, node_id=1, cluster_id="live", directory_id=cpf.encode_kafka_uuid(bytes(range(16))))
w = LogDirWriter(sys.argv[1], meta=meta, hold_lock=True)
cfg = PartitionConfig(segment_bytes=64 * 1024, index_interval_bytes=1024)
parts = [w.partition("live", p, cfg) for p in range(2)]
# Appends at full speed until the test creates the stop file; the cap on appends only bounds
# the disk a forgotten writer can fill (the rounds stop it long before, whatever the machine's load).
stop_file, cap = sys.argv[2], 200_000
i = 0
while not (i % 16 == 0 and (os.path.exists(stop_file) or i >= cap)):
    p = parts[i % 2]
    recs = [rb.Record(offset_delta=j, key=b"k%d" % i, value=b"payload-%d" % i * 8) for j in range(1 + i % 3)]
    p.append(rb.build_batch(recs, base_timestamp=1_700_000_000_000 + i))
    if i == 20:
        print("writing", flush=True)
    i += 1
w.close(clean=True)
print("wrote", i, flush=True)
"""


@pytest.fixture
def live_dir(tmp_path):
    root = tmp_path / "logs"
    stop_file = tmp_path / "stop-writing"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(stop_file)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    yield root, proc, stop_file
    proc.kill()
    proc.wait()


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue(), err.getvalue()


def test_reads_beside_a_live_writer(live_dir):
    root, proc, stop_file = live_dir
    codes_seen: set[str] = set()
    for _ in range(2):  # the writer appends until told to stop: every round runs beside it
        report = validate_kafka(root, ValidateOptions(jobs=1))
        bad = [f.to_dict() for f in report.findings if f.level.value != "info"]
        assert not bad, bad
        codes_seen |= {f.code for f in report.findings}
        active = ks.open_kafka(root).partitions[0].segments[-1].log
        for command in (("dump", "kafka-log", active, "--jsonl"), ("info", root, "--json"), ("stats", root, "--json")):
            code, _, err = cli(*command)
            assert code == 0, (command, err)
        assert proc.poll() is None, "the writer reached its cap of appends before the round ended"
    assert "KAFKA-LOCK-HELD" in codes_seen
    stop_file.touch()
    proc.wait(timeout=60)
    assert "wrote" in proc.stdout.read()
    final = validate_kafka(root, ValidateOptions(jobs=1))
    assert not [f.to_dict() for f in final.findings if f.level.value != "info"]
    assert "KAFKA-LOCK-HELD" not in {f.code for f in final.findings}


def test_clean_beside_a_live_writer_spares_the_active_segments(live_dir):
    root, proc, stop_file = live_dir
    time.sleep(1.5)
    refused = subprocess.run([sys.executable, "-m", "mqtool", "clean", str(root), "--apply", "--retention-ms", "1"], capture_output=True, text=True, check=False)
    assert refused.returncode == 5, refused.stderr  # the broker (writer) is running
    done = subprocess.run(
        [sys.executable, "-m", "mqtool", "clean", str(root), "--apply", "--live", "--retention-ms", "1", "--interval-ms", "0", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    deleted = {s["path"] for s in json.loads(done.stdout)["deleted"]}
    assert proc.poll() is None, "the writer reached its cap of appends before clean ended"
    stop_file.touch()
    proc.wait(timeout=60)
    assert "wrote" in proc.stdout.read()
    for part in ks.open_kafka(root).partitions:
        assert part.segments, f"{part.name}: the active segment must survive"
        assert all(f"{part.name}/{s.log.name}" not in deleted for s in part.segments if s.log is not None)
    report = validate_kafka(root, ValidateOptions(jobs=1))
    assert not report.failed, [f.to_dict() for f in report.findings if f.level.value == "error"]


def test_partial_entry_at_the_active_end_is_in_progress_while_the_lock_is_held(tmp_path):
    """The same torn tail is damage (KAFKA-LOG-TORN-TAIL) when the broker is stopped and an
    entry being written (KAFKA-LOG-IN-PROGRESS, info) while a process holds .lock."""
    import os
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(PROJECT / "fixtures" / "kafka-logs", root)
    active = root / "orders-0" / "00000000000000000090.log"
    os.truncate(active, active.stat().st_size - 30)
    stopped = validate_kafka(root, ValidateOptions(jobs=1))
    assert "KAFKA-LOG-TORN-TAIL" in {f.code for f in stopped.findings}
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(root / ".lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        running = validate_kafka(root, ValidateOptions(jobs=1))
    finally:
        holder.kill()
        holder.wait()
    codes = {f.code: f for f in running.findings}
    assert "KAFKA-LOG-TORN-TAIL" not in codes and codes["KAFKA-LOG-IN-PROGRESS"].path == str(active)
    assert codes["KAFKA-LOG-IN-PROGRESS"].level.value == "info" and "KAFKA-LOCK-HELD" in codes
