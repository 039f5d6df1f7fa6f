"""mqtool's own lock: exclusive, and gone from the broker's directory when the run ends."""

from __future__ import annotations

import os

import pytest

from mqtool.errors import LockBusyError
from mqtool.store import lock as lk


def test_lock_excludes_a_second_run_and_leaves_no_file(tmp_path):
    with lk.ExclusiveLock(tmp_path) as held:
        assert held.path.exists() and held.path.read_text() == f"{os.getpid()}\n"
        with pytest.raises(LockBusyError):
            lk.ExclusiveLock(tmp_path).acquire()
    assert list(tmp_path.iterdir()) == []
    with lk.ExclusiveLock(tmp_path):  # and it can be taken again
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_run_that_locks_a_removed_file_takes_a_fresh_one(tmp_path, monkeypatch):
    """Run B opened the lock file before run A removed it; B's flock then succeeds on a file no
    path names: B must not count that as the lock (a run C could lock a new file meanwhile)."""
    a = lk.ExclusiveLock(tmp_path).acquire()
    stale = os.open(a.path, os.O_RDWR)  # B's open, before A ends
    a.release()
    assert not a.path.exists()
    real_open, calls = os.open, []

    def opening(path, flags, mode=0o777):
        calls.append(path)
        return stale if len(calls) == 1 else real_open(path, flags, mode)

    monkeypatch.setattr(lk.os, "open", opening)
    b = lk.ExclusiveLock(tmp_path).acquire()
    assert len(calls) == 2  # the stale file was let go, a fresh one locked
    assert os.fstat(b._fd).st_ino == os.stat(b.path).st_ino
    b.release()
    assert list(tmp_path.iterdir()) == []


def test_release_in_a_read_only_directory_keeps_the_lock_usable(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    held = lk.ExclusiveLock(tmp_path).acquire()
    tmp_path.chmod(0o555)
    try:
        held.release()
        assert held.path.exists()
        with lk.ExclusiveLock(tmp_path):
            pass
    finally:
        tmp_path.chmod(0o755)
