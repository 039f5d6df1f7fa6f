"""Hostile filesystems: links, FIFOs, devices, vanishing and huge numbers of files.

Every case ends in findings or a clear error (never a hang, a traceback or a read outside the
store through a link), and mutating commands never act outside the store root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats import segment_names as segnames
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    return root


def cli(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def codes(report):
    return {f.code for f in report.findings}


def test_symlink_loop_in_consumequeue(store, capsys):
    (store / "consumequeue" / "Loop").symlink_to(store / "consumequeue")
    (store / "consumequeue" / "TopicTest" / "9").symlink_to(store / "consumequeue" / "TopicTest")
    for command in (["validate", store, "--jobs", "1"], ["info", store], ["dump", "consumequeue", store, "--jsonl"]):
        code, _, _ = cli(capsys, *command)
        assert code in (0, 1)


def test_segment_symlink_out_of_the_root_is_not_followed(store, tmp_path, capsys):
    outside = tmp_path / "outside-secret"
    outside.write_bytes(b"secret" * 1000)
    link = store / "commitlog" / segnames.rocketmq_file_name(6 * 16384)
    link.symlink_to(outside)
    report = validate_rocketmq(store, ValidateOptions())
    assert "RMQ-FILE-LINK" in codes(report)
    code, out, _ = cli(capsys, "dump", "commitlog", store, "--jsonl", "--decode", "utf8")
    assert "secret" not in out


def test_fifo_and_device_named_like_segments(store, capsys):
    os.mkfifo(store / "commitlog" / segnames.rocketmq_file_name(6 * 16384))
    (store / "consumequeue" / "TopicTest" / "0" / "00000000000000001000").symlink_to("/dev/zero")
    report = validate_rocketmq(store, ValidateOptions())
    assert {"RMQ-FILE-UNREADABLE", "RMQ-FILE-LINK"} & codes(report)
    for command in (["validate", store, "--jobs", "1"], ["info", store], ["dump", "commitlog", store, "--jsonl"], ["recover", store]):
        code, _, _ = cli(capsys, *command)
        assert code in (0, 1, 3)


def test_index_and_queue_links_out_of_the_root_are_not_followed(store, tmp_path, capsys):
    (index, *_) = sorted((store / "index").iterdir())
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(index, outside / "20991231235959999")
    (store / "index" / "20991231235959999").symlink_to(outside / "20991231235959999")
    os.mkfifo(store / "index" / "20991231235959998")
    shutil.copytree(store / "consumequeue" / "TopicTest" / "0", outside / "queue")
    (store / "consumequeue" / "TopicTest" / "7").symlink_to(outside / "queue")
    (store / "consumequeue" / "OrderTopic" / "7").symlink_to("../..")
    report = validate_rocketmq(store, ValidateOptions())
    flagged = {f.path for f in report.findings if f.code in ("RMQ-FILE-LINK", "RMQ-FILE-UNREADABLE")}
    assert {str(store / "index" / "20991231235959999"), str(store / "index" / "20991231235959998")} <= flagged
    assert {str(store / "consumequeue" / "TopicTest" / "7"), str(store / "consumequeue" / "OrderTopic" / "7")} <= flagged
    for command in (["dump", "index", store, "--jsonl"], ["dump", "index", store / "index", "--jsonl"], ["dump", "consumequeue", store, "--jsonl"], ["info", store, "--json"]):
        code, out, _ = cli(capsys, *command)
        assert code in (0, 1) and "20991231235959999" not in out and str(outside) not in out, command
        assert '"queue_id": 7' not in out and "TopicTest/7" not in out, command


def test_recover_and_clean_never_touch_files_outside(store, tmp_path, capsys):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"\xff" * 16384)
    (store / "commitlog" / segnames.rocketmq_file_name(6 * 16384)).symlink_to(outside)
    code, _, _ = cli(capsys, "recover", store, "--apply", "--force")
    assert outside.read_bytes() == b"\xff" * 16384
    code, _, _ = cli(capsys, "clean", store, "--apply", "--now", "1900000000000", "--interval-ms", "0")
    assert outside.exists() and outside.read_bytes() == b"\xff" * 16384


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_permission_denied_is_a_finding(store, capsys):
    target = store / "consumequeue" / "TopicTest" / "1" / "00000000000000000000"
    target.chmod(0)
    try:
        report = validate_rocketmq(store, ValidateOptions())
        assert "RMQ-FILE-UNREADABLE" in codes(report)
        code, _, err = cli(capsys, "dump", "consumequeue", target)
        assert code == 3 and "Permission denied" in err
    finally:
        target.chmod(0o644)


def test_file_vanishing_mid_scan(store, monkeypatch):
    from mqtool.store import rocketmq as rmq

    real = rmq.list_segments
    ghost = store / "consumequeue" / "TopicTest" / "0" / "00000000000000001000"

    def with_ghost(directory):
        segs = real(directory)
        if directory.name == "0" and directory.parent.name == "TopicTest":
            segs.append(rmq.Segment(ghost, 1000, 1000, 0.0))
        return segs

    monkeypatch.setattr(rmq, "list_segments", with_ghost)
    report = validate_rocketmq(store, ValidateOptions())
    assert "RMQ-FILE-UNREADABLE" in codes(report)


def test_zero_byte_and_sparse_files(store):
    (store / "consumequeue" / "TopicTest" / "3" / "00000000000000001000").write_bytes(b"")
    with open(store / "commitlog" / segnames.rocketmq_file_name(6 * 16384), "wb") as f:
        f.truncate(16384)  # sparse, all zeros: a pre-allocated next file
    report = validate_rocketmq(store, ValidateOptions())
    assert "RMQ-FILE-ZERO-LENGTH" in codes(report)
    assert not [f for f in report.findings if f.code.startswith("RMQ-CL-") and f.level.value == "error"]


def test_ten_thousand_consumequeue_files(tmp_path):
    """10,000 queue files: validate and info finish, memory stays bounded."""
    script = f"""
import resource, shutil, sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from mqtool.cli.app import run
from mqtool.formats import segment_names as segnames
root = Path({str(tmp_path)!r}) / "store"
shutil.copytree({str(STORE)!r}, root)
qdir = root / "consumequeue" / "Empty" / "0"
qdir.mkdir(parents=True)
for i in range(10_000):
    (qdir / segnames.rocketmq_file_name(i * 20)).write_bytes(bytes(20))
for cmd in (["validate", str(root), "--jobs", "1", "--jsonl"], ["info", str(root), "--json"]):
    code = run(cmd)
    assert code in (0, 1), code
print("peak", next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")) // 1024 if sys.platform == "linux" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)  # VmHWM: this image only (ru_maxrss counts the forking parent too)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split("peak")[-1]) < 500


def test_permission_denied_simulated(store, monkeypatch, capsys):
    """The same as above for root: EACCES injected at open()."""
    import errno

    import mqtool.store.files as files

    target = store / "consumequeue" / "TopicTest" / "1" / "00000000000000000000"
    real_open = os.open

    def guarded(path, flags, *args, **kwargs):  # os.open's signature (dir_fd: shutil.rmtree uses it)
        if Path(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", guarded)
    report = validate_rocketmq(store, ValidateOptions())
    assert "RMQ-FILE-UNREADABLE" in codes(report)
    code, _, err = cli(capsys, "dump", "consumequeue", target)
    assert code == 3 and "Permission denied" in err and str(target) in err
