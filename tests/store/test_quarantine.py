"""The destructive-operation units: the Mutator (confinement, fault injection), the quarantine
(what it keeps, its manifest) and undo (which puts everything back), and the locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from mqtool.errors import CorruptDataError, LockBusyError, StoreIOError, StoreLayoutError
from mqtool.store.lock import MQTOOL_LOCK_NAME, ExclusiveLock, probe_record_lock
from mqtool.store.mutate import Faults, Mutator
from mqtool.store.quarantine import MANIFEST, Quarantine, default_quarantine_root, load_manifest, undo
from tests.conftest import PROJECT_ROOT, lock_held_elsewhere


@pytest.fixture
def store(tmp_path) -> Path:
    root = tmp_path / "store"
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / "a").write_bytes(bytes(range(256)) * 4)
    (root / "checkpoint").write_bytes(b"\x01" * 64)
    (root / "empty").write_bytes(bytes(100))
    return root


def snapshot(root: Path) -> dict:
    return {
        p.relative_to(root).as_posix(): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.name != MQTOOL_LOCK_NAME
    }


def factory(root, qdir):
    return Mutator(root, extra_roots=(qdir,))


# --- Mutator -----------------------------------------------------------------------------------------


def test_mutations_do_what_they_say_and_are_counted(store):
    m = Mutator(store)
    a = store / "commitlog" / "a"
    m.write_at(a, 10, b"xyz")
    assert a.read_bytes()[8:14] == bytes([8, 9]) + b"xyz" + bytes([13])
    m.zero_range(a, 0, 4)
    assert a.read_bytes()[:5] == bytes(4) + b"\x04"
    m.truncate(a, 100)
    assert a.stat().st_size == 100
    m.create_file(store / "new", b"ab", size=10)
    assert (store / "new").read_bytes() == b"ab" + bytes(8)
    m.copy_file(a, store / "part", position=20, length=5)
    assert (store / "part").read_bytes() == bytes(range(20, 25))
    m.replace_file(store / "checkpoint", b"fresh")
    assert (store / "checkpoint").read_bytes() == b"fresh"
    assert not list(store.glob(".mqtool-tmp-*"))  # the temp file was renamed into place
    m.rename(store / "part", store / "renamed")
    m.delete(store / "renamed")
    m.delete(store / "renamed")  # already gone: nothing to do
    m.mkdir(store / "d" / "e")
    m.rmdir(store / "d" / "e")
    assert not (store / "renamed").exists() and not (store / "d" / "e").exists()
    # write, zero, truncate, create, copy, replace (create + rename), rename, delete x2, rmdir
    assert m.count == 11


@pytest.mark.parametrize(
    "target",
    [lambda root, out: out / "x", lambda root, out: root / ".." / "outside" / "x", lambda root, out: root / "link" / "x"],
    ids=["outside", "dot-dot", "symlinked-dir"],
)
def test_mutator_refuses_paths_outside_the_store(store, tmp_path, target):
    out = tmp_path / "outside"
    out.mkdir()
    (store / "link").symlink_to(out)
    m = Mutator(store)
    with pytest.raises(StoreLayoutError, match="outside the store"):
        m.create_file(target(store, out), b"no")
    assert not (out / "x").exists()
    Mutator(store, extra_roots=(out,)).create_file(out / "x", b"yes")  # an extra root is allowed
    assert (out / "x").read_bytes() == b"yes"


def test_mutator_refuses_to_write_through_a_symlink(store):
    (store / "commitlog" / "b").symlink_to(store / "checkpoint")
    m = Mutator(store)
    with pytest.raises(StoreLayoutError, match="symbolic link"):
        m.write_at(store / "commitlog" / "b", 0, b"no")
    assert (store / "checkpoint").read_bytes() == b"\x01" * 64


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("kill@3", ("kill", 3)),
        ("ENOSPC@12", ("enospc", 12)),
        (" eio @ 1", ("eio", 1)),
        ("", (None, 0)),
        ("kill", (None, 0)),
        ("kill@soon", (None, 0)),
    ],
)
def test_faults_from_env(monkeypatch, spec, expected):
    monkeypatch.setenv("MQTOOL_FAULT_INJECT", spec)
    faults = Faults.from_env()
    assert (faults.kind, faults.at) == expected


@pytest.mark.parametrize("kind,text", [("enospc", "No space left on device"), ("eio", "Input/output error")])
def test_injected_io_error_stops_at_the_nth_mutation(store, kind, text):
    m = Mutator(store, faults=Faults(kind, 3))
    a = store / "commitlog" / "a"
    m.write_at(a, 0, b"1")
    m.write_at(a, 1, b"2")
    with pytest.raises(StoreIOError, match=rf"{text} \(injected at mutation 3: write\)") as failure:
        m.write_at(a, 2, b"3")
    assert failure.value.path == str(a)
    assert a.read_bytes()[:3] == b"12\x02"  # the failing write did not happen
    m.write_at(a, 2, b"3")  # only the N-th faults
    assert a.read_bytes()[:3] == b"123"


def test_injected_kill_sigkills_the_process_at_the_nth_mutation(store):
    script = (
        "import sys; from pathlib import Path; from mqtool.store.mutate import Mutator, Faults\n"
        "root = Path(sys.argv[1]); m = Mutator(root, faults=Faults.from_env())\n"
        "for i in range(5): m.create_file(root / f'f{i}', b'x')\n"
    )
    env = dict(os.environ, MQTOOL_FAULT_INJECT="kill@3")
    done = subprocess.run([sys.executable, "-c", script, str(store)], env=env, cwd=PROJECT_ROOT, capture_output=True, check=False)
    assert done.returncode == -9
    assert sorted(p.name for p in store.glob("f*")) == ["f0", "f1"]


# --- Quarantine ----------------------------------------------------------------------------------------


def test_quarantine_keeps_bytes_with_a_manifest(store, tmp_path):
    qroot = tmp_path / "q"
    m = Mutator(store, extra_roots=(qroot,))
    q = Quarantine(m, store, qroot, "recover")
    a = store / "commitlog" / "a"
    kept = q.keep_range(a, 100, 50)
    zero = q.keep_range(store / "empty", 10, 20)
    whole = q.keep_file(store / "checkpoint")
    empty = q.keep_file(store / "empty")
    made = q.record_created(store / "commitlog" / "new")
    assert q.directory.parent == qroot.resolve() and q.directory.name.endswith(f"-{os.getpid()}")
    assert (kept.kind, kept.path, kept.position, kept.length, kept.zero, kept.size_before) == ("range", "commitlog/a", 100, 50, False, 1024)
    assert (q.directory / kept.file).read_bytes() == a.read_bytes()[100:150]
    assert kept.crc32 == zlib.crc32(a.read_bytes()[100:150])
    assert zero.zero and zero.file is None  # zeros are recorded, not copied
    assert whole.kind == "file" and (q.directory / whole.file).read_bytes() == b"\x01" * 64
    assert empty.zero and empty.file is None and empty.length == 100
    assert made.kind == "created" and made.path == "commitlog/new"
    doc = json.loads((q.directory / MANIFEST).read_text())
    assert doc["tool"] == "mqtool" and doc["command"] == "recover" and doc["store"] == str(store.resolve())
    assert [e["kind"] for e in doc["entries"]] == ["range", "range", "file", "file", "created"]
    assert doc["entries"][0] == kept.to_dict()
    assert load_manifest(q.directory / MANIFEST) == doc
    assert sorted(p.name for p in q.directory.iterdir()) == sorted([MANIFEST, kept.file, whole.file])  # no temp left
    assert snapshot(store)["commitlog/a"] == bytes(range(256)) * 4  # keeping changes nothing


def test_quarantine_writes_the_manifest_before_the_store_changes(store, tmp_path):
    """Each entry is in the manifest on disk when keep_* returns, i.e. before the caller cuts."""
    qroot = tmp_path / "q"
    q = Quarantine(Mutator(store, extra_roots=(qroot,)), store, qroot, "recover")
    for n in range(1, 4):
        q.keep_range(store / "commitlog" / "a", n * 10, 5)
        assert len(load_manifest(q.manifest_path)["entries"]) == n


def test_two_runs_never_share_a_quarantine_directory(store, tmp_path):
    """Same pid, same second (an in-process caller): the second run gets its own directory and
    the first run's manifest survives."""
    qroot = tmp_path / "q"
    first = Quarantine(Mutator(store, extra_roots=(qroot,)), store, qroot, "recover")
    first.keep_range(store / "commitlog" / "a", 0, 10)
    second = Quarantine(Mutator(store, extra_roots=(qroot,)), store, qroot, "recover")
    second.directory = first.directory  # force the collision whatever the clock says
    second.keep_range(store / "commitlog" / "a", 10, 10)
    assert second.directory != first.directory
    assert load_manifest(first.manifest_path)["entries"][0]["position"] == 0
    assert load_manifest(second.manifest_path)["entries"][0]["position"] == 10


def test_default_quarantine_root_is_a_store_sibling(store):
    assert default_quarantine_root(store) == store.resolve().parent / "mqtool-quarantine"


# --- undo ----------------------------------------------------------------------------------------------


def test_undo_restores_every_kind_of_change(store, tmp_path):
    """A run that cuts a range, truncates, replaces a file, deletes files, creates a file in a new
    directory and writes over zeros: undo returns the store byte for byte (directories too)."""
    before = snapshot(store)
    qroot = tmp_path / "q"
    m = Mutator(store, extra_roots=(qroot,))
    q = Quarantine(m, store, qroot, "recover")
    a = store / "commitlog" / "a"
    q.keep_range(a, 1000, 24)
    m.zero_range(a, 1000, 24)
    q.keep_range(a, 512, 512)
    m.truncate(a, 512)
    q.keep_file(store / "checkpoint")
    m.replace_file(store / "checkpoint", b"new checkpoint")
    q.keep_file(store / "empty")
    m.delete(store / "empty")
    q.record_created(store / "consumequeue")
    m.mkdir(store / "consumequeue")
    q.record_created(store / "consumequeue" / "f")
    m.create_file(store / "consumequeue" / "f", b"", size=40)
    q.keep_range(store / "consumequeue" / "f", 0, 20)
    m.write_at(store / "consumequeue" / "f", 0, b"u" * 20)
    assert snapshot(store) != before
    restored = undo(q.manifest_path, factory)
    assert snapshot(store) == before
    assert [r.kind for r in restored] == ["range", "created", "created", "file", "file", "range", "range"]


def test_undo_recreates_a_file_whose_range_was_kept_then_the_file_removed(store, tmp_path):
    qroot = tmp_path / "q"
    m = Mutator(store, extra_roots=(qroot,))
    q = Quarantine(m, store, qroot, "recover")
    a = store / "commitlog" / "a"
    original = a.read_bytes()
    q.keep_range(a, 0, len(original))
    m.delete(a)
    undo(q.manifest_path, factory)
    assert a.read_bytes() == original


def test_undo_keeps_a_created_directory_that_holds_other_files(store, tmp_path):
    qroot = tmp_path / "q"
    m = Mutator(store, extra_roots=(qroot,))
    q = Quarantine(m, store, qroot, "recover")
    q.record_created(store / "index")
    m.mkdir(store / "index")
    (store / "index" / "someone-elses").write_bytes(b"x")
    undo(q.manifest_path, factory)
    assert (store / "index" / "someone-elses").read_bytes() == b"x"


def test_undo_refuses_tampered_quarantine_bytes(store, tmp_path):
    qroot = tmp_path / "q"
    m = Mutator(store, extra_roots=(qroot,))
    q = Quarantine(m, store, qroot, "recover")
    kept = q.keep_range(store / "commitlog" / "a", 0, 16)
    m.zero_range(store / "commitlog" / "a", 0, 16)
    (q.directory / kept.file).write_bytes(b"\xff" * 16)
    with pytest.raises(CorruptDataError, match="changed since they were kept"):
        undo(q.manifest_path, factory)
    assert (store / "commitlog" / "a").read_bytes()[:16] == bytes(16)  # not restored from bad bytes


def test_load_manifest_errors(tmp_path):
    with pytest.raises(StoreIOError):
        load_manifest(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(StoreLayoutError, match="manifest"):  # exit 3 like a bad --from-plan file
        load_manifest(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"entries": []}))
    with pytest.raises(StoreLayoutError, match="mqtool quarantine manifest"):
        load_manifest(tmp_path / "other.json")
    (tmp_path / "list.json").write_text("[1]")  # was an AttributeError: exit 70
    with pytest.raises(StoreLayoutError, match="another JSON document"):
        load_manifest(tmp_path / "list.json")


# --- locks ---------------------------------------------------------------------------------------------


def test_exclusive_lock_excludes_a_second_holder(store):
    with ExclusiveLock(store, what="the test store"):
        assert (store / MQTOOL_LOCK_NAME).read_text() == f"{os.getpid()}\n"
        with pytest.raises(LockBusyError, match="another mqtool run holds the lock on the store again"):
            ExclusiveLock(store, what="the store again").acquire()
    with ExclusiveLock(store):  # released on exit
        pass


def test_probe_record_lock_sees_another_process(store):
    lock = store / "lock"
    assert probe_record_lock(lock) is None  # absent
    lock.write_bytes(b"lock")
    assert probe_record_lock(lock) is None  # nobody holds it
    with lock_held_elsewhere(lock) as pid:
        assert probe_record_lock(lock) == pid
    assert probe_record_lock(lock) is None
