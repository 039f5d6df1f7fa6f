"""``recover`` on RocketMQ stores: correct, loses nothing, crash-safe.

Stores are written by ``StoreWriter`` with a tiny geometry (4096-byte CommitLog files, 200-byte
ConsumeQueue files, 16-slot / 64-entry IndexFiles) and a fixed clock, damaged on purpose, and
recovered through the API or the CLI.  Every recovery is checked against

* an oracle: the same messages written without the ones the damage destroyed give exactly the
  ConsumeQueues and IndexFiles the recovered store must have (byte for byte);
* ``validate``: no errors;
* the records: every record intact before recovery and before the valid end is still there,
  with the same topic, queue, queue offset, body and properties;
* the quarantine: every entry holds the original bytes of where it came from, and every byte the
  run changed or removed is held by an entry;
* ``--undo``: the damaged store comes back byte for byte (files and directories).

The crash tests run the real command in a subprocess, SIGKILLed at every mutation in turn
(``MQTOOL_FAULT_INJECT=kill@N``), then rerun it: the result must be the uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
import json
import os
import shutil
import tempfile
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from mqtool.cli.app import run
from mqtool.errors import LockBusyError, MqError, PlanChangedError
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.ops.recover import RecoverPlan, undo_manifest
from mqtool.ops.recover.rocketmq import INDEX_STAGING, RecoverOptions, apply_rocketmq, plan_rocketmq
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.lock import MQTOOL_LOCK_NAME, ExclusiveLock
from mqtool.store.model.commitlog_walk import FileRecords
from mqtool.store.writer import StoreWriter, WriterConfig, index_keys
from tests.conftest import lock_held_elsewhere, real_path
from tests.ops.crashkit import IO_FAULTS, io_error_at, kill_and_rerun, kill_at, make_case, subprocess_recover

SMALL = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)
T0 = 1_700_000_000_000
COUNT = 60  # messages of the standard store: 3 CommitLog files, 2 queues, 2 IndexFiles
#: Modest example counts, the same examples every run; no shrinking: an example costs a store and
#: a recovery, and the draws are labelled, so a failure is reported as generated (in seconds
#: rather than minutes).
PROPERTY = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow],
)


# --- building stores --------------------------------------------------------------------------------


class Clock:
    """The writer's fixed clock: ``step`` ms per message, shared by the writers of one store."""

    def __init__(self, start: int = T0, step: int = 10) -> None:
        self.now, self.step = start, step

    def __call__(self) -> int:
        self.now += self.step
        return self.now


def message(i: int, queues: int = 2) -> cl.MessageRecord:
    return cl.MessageRecord(
        topic="T",
        queue_id=i % queues,
        body=bytes([97 + i % 26]) * (40 + i * 7 % 45),
        properties={"KEYS": f"k{i}", "TAGS": f"Tag{i % 3}", "UNIQ_KEY": f"U{i:04d}"},
    )


def build(root: Path, count: int = COUNT, *, crash: bool = True, clock: Clock | None = None, first: int = 0) -> list:
    """Append messages ``first .. first+count-1`` (a store is continued when it exists);
    ``crash`` leaves ``abort`` behind and no checkpoint, like a killed broker."""
    writer = StoreWriter(root, SMALL, clock=clock or Clock())
    results = [writer.append(message(i)) for i in range(first, first + count)]
    writer.close(clean=not crash)
    return results


@dataclasses.dataclass(frozen=True)
class Rec:
    offset: int  # commitlog offset
    size: int
    content: tuple  # topic, queue id, queue offset, body, properties
    unguarded: int  # position in the record from which no check notices a tear: the properties

    @property
    def end(self) -> int:
        return self.offset + self.size


def records(root: Path) -> list[Rec]:
    """Every intact record: each CommitLog file walked until its first failure."""
    out = []
    for seg in rmq.open_store(root).commitlog:
        if seg.size == 0:
            continue
        with ReadOnlyFile(seg.path) as f:
            for pos, r in FileRecords(f):
                content = (r.topic, r.queue_id, r.queue_offset, r.body, tuple(sorted(r.properties.items())))
                unguarded = cl.body_position(r.sys_flag) + len(r.body) + 1 + len(r.topic.encode()) + 2
                out.append(Rec(seg.base + pos, r.total_size, content, unguarded))
    return out


def segment_of(root: Path, offset: int) -> tuple[Path, int]:
    found = rmq.open_store(root).commitlog_segment_for(offset)
    assert found is not None
    return found[0].path, found[1]


def write_at(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def zero(path: Path, position: int, length: int) -> None:
    write_at(path, position, bytes(length))


# --- observing stores --------------------------------------------------------------------------------

DIR = "<dir>"


def tree(root: Path, *, skip: tuple[str, ...] = ()) -> dict:
    """Every file (bytes) and directory under ``root``, mqtool's lock file left out."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.name == MQTOOL_LOCK_NAME or rel.split("/")[0] in skip:
            continue
        out[rel] = DIR if p.is_dir() else p.read_bytes()
    return out


def subtree(t: dict, top: str) -> dict:
    """The files under ``top`` (an empty queue directory left by the broker's truncation is no
    difference)."""
    return {k: v for k, v in t.items() if k.startswith(top + "/") and v is not DIR}


def validate(root: Path):
    return validate_rocketmq(root, ValidateOptions())


def assert_clean(root: Path, *, warnings: bool = True) -> None:
    report = validate(root)
    problems = [f"{f.code} {f.path}:{f.position}: {f.message}" for f in report.findings if f.level.name == "error" or (not warnings and f.level.name == "warning")]
    assert not problems, "\n".join(problems)


def manifest_entries(manifest: Path) -> list[tuple[dict, bytes]]:
    doc = json.loads(Path(manifest).read_text())
    assert doc["tool"] == "mqtool" and doc["command"] == "recover"
    out = []
    for e in doc["entries"]:
        data = bytes(e["length"]) if e["zero"] else (Path(manifest).parent / e["file"]).read_bytes()
        assert len(data) == e["length"] and zlib.crc32(data) & 0xFFFFFFFF == e["crc32"], e
        out.append((e, data))
    return out


def check_quarantine(original: dict, final: dict, manifests: list[Path]) -> None:
    """The manifests (in the order the runs made them) hold exactly the bytes that went: each
    entry equals the original bytes where it came from (unless an earlier entry already kept
    them, i.e. they had been changed since), each marks a real change, and every byte the runs
    changed or removed is held by one."""
    kept_files: set[str] = set()
    kept: dict[str, set[int]] = {}
    created: set[str] = set()
    for manifest in manifests:
        for e, data in manifest_entries(manifest):
            path = e["path"]
            assert not Path(path).is_absolute(), e
            if e["kind"] == "created":
                assert path not in original or path in kept_files, e
                assert path in final, f"{path}: created, then gone"
                created.add(path)
                continue
            if e["kind"] == "file":
                assert final.get(path) != data, f"{path}: kept whole but not changed"
                if path not in kept_files and not kept.get(path):
                    assert data == original[path], f"{path}: the kept file is not the original"
                kept_files.add(path)
                continue
            if e["kind"] == "extended":  # zeros appended past the original end: nothing went
                assert len(final.get(path, b"")) >= e["position"] + e["length"], e
                continue
            assert e["kind"] == "range", e
            pos, length = e["position"], e["length"]
            assert final.get(path, b"")[pos : pos + length] != data, f"{path}@{pos}+{length}: kept but not changed"
            mine = kept.setdefault(path, set())
            if path in original and path not in kept_files:
                orig = original[path]
                for i in range(length):
                    if pos + i not in mine:
                        expected = orig[pos + i] if pos + i < len(orig) else 0
                        assert data[i] == expected, f"{path}@{pos + i}: quarantined byte differs from the original"
            elif path not in created:
                pytest.fail(f"{path}: a range kept from a file that was not there")
            mine.update(range(pos, pos + length))
    for path, before in original.items():
        after = final.get(path)
        if before == DIR:
            assert after == DIR, f"{path}: directory removed"
            continue
        if after == before or path in kept_files:
            continue
        assert after is not None, f"{path}: removed without being quarantined"
        changed = {i for i in range(len(before)) if i >= len(after) or after[i] != before[i]}
        lost = changed - kept.get(path, set())
        assert not lost, f"{path}: {len(lost)} changed byte(s) not quarantined, first at {min(lost)}"
    for path in final:
        assert path in original or path in created, f"{path}: added without a 'created' entry (undo would keep it)"


# --- recovering ---------------------------------------------------------------------------------------


def cli(*args) -> tuple[int, str, str]:
    """The CLI in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def recover(root: Path, quarantine: Path, *, force: bool = False, via_cli: bool = False, options: RecoverOptions | None = None):
    """Plan and apply; returns (plan, manifest or None)."""
    options = options or RecoverOptions()
    plan = plan_rocketmq(root, options)
    if via_cli:
        args = ["recover", root, "--apply", "--quarantine", quarantine, "--json", "--jobs", "1", "--mode", options.mode]
        code, out, err = cli(*args, *(["--force"] if force else []))
        assert code == 0, err
        doc = json.loads(out)
        assert [s["action"] for s in doc.get("applied", [])] == [s.action for s in plan.steps]
        return plan, doc["manifest"] and Path(doc["manifest"])
    result = apply_rocketmq(plan, quarantine_root=quarantine, force=force, jobs=1)
    assert [s.action for s in result.applied] == [s.action for s in plan.steps]
    assert not result.notes, result.notes
    return plan, result.manifest and Path(result.manifest)


def recover_and_check(root: Path, quarantine: Path, *, oracle: Path | None = None, force: bool = False, via_cli: bool = False) -> RecoverPlan:
    """Recover ``root`` and check everything the module docstring promises; undo at the end."""
    original = tree(root)
    before = records(root)
    plan, manifest = recover(root, quarantine, force=force, via_cli=via_cli)
    assert plan.has_work
    assert_clean(root)
    assert not (root / "abort").exists()
    final = tree(root)
    # no intact record before the valid end is lost, none after it survives
    after = records(root)
    assert [r.content for r in after] == [r.content for r in before if r.end <= plan.valid_end]
    assert [r.offset for r in after] == [r.offset for r in before if r.end <= plan.valid_end]
    if oracle is not None:
        want = tree(oracle)
        assert subtree(final, "consumequeue") == subtree(want, "consumequeue")
        assert subtree(final, "index") == subtree(want, "index")
    check_quarantine(original, final, [manifest] if manifest else [])
    # nothing left to do, then undo brings the damaged store back
    assert not plan_rocketmq(root).has_work
    if manifest:
        if via_cli:
            code, _, err = cli("recover", "--undo", manifest)
            assert code == 0, err
        else:
            undo_manifest(manifest)
    assert tree(root) == original
    return plan


class Workdir:
    """``mktemp(name)``: a new directory under ``base``."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.base))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Where the stores live: on tmpfs when there is one.  recover fsyncs every mutation, which
    on a disk is most of the run time; durability across power loss is not what these tests
    observe (a SIGKILL keeps the page cache), so tmpfs changes nothing they check."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        base = Path(tempfile.mkdtemp(prefix="mqtool-recover-", dir=shm))
        yield Workdir(base)
        shutil.rmtree(base, ignore_errors=True)
    else:
        yield Workdir(tmp_path_factory.mktemp("work"))


@pytest.fixture(scope="module")
def pristine(work) -> Path:
    """The standard crashed store (abort present, no checkpoint) before any damage."""
    root = work.mktemp("pristine") / "store"
    build(root)
    return root


_oracles: dict[int, Path] = {}


@pytest.fixture(scope="module")
def oracle(work):
    """``oracle(n)``: the standard store's first ``n`` messages, written alone (cached)."""

    def make(n: int) -> Path:
        if n not in _oracles:
            root = work.mktemp(f"oracle{n}") / "store"
            build(root, n)
            _oracles[n] = root
        return _oracles[n]

    return make


def fresh(work, pristine: Path) -> tuple[Path, Path]:
    base = work.mktemp("case")
    shutil.copytree(pristine, base / "store")
    return base / "store", base / "quarantine"


def last_data_file(root: Path) -> Path:
    return [s for s in rmq.open_store(root).commitlog if s.size > 0][-1].path


# --- 1. damage, property-tested ------------------------------------------------------------------------


def test_standard_store_shape(pristine):
    """The damage below assumes this shape: 3 CommitLog files, both queues over several CQ files,
    IndexFiles that fill up in the middle of a record's keys."""
    store = rmq.open_store(pristine)
    assert [s.size for s in store.commitlog] == [4096] * 3
    assert sorted(store.queues()) == [("T", 0), ("T", 1)]
    assert all(len(store.cq_segments("T", q)) == 3 for q in (0, 1))
    assert len(store.index_files()) == 2
    assert len(records(pristine)) == COUNT
    assert validate(pristine).counts["error"] == 0


@PROPERTY
@given(data=st.data(), via_cli=st.booleans())
def test_torn_last_record(work, pristine, oracle, data, via_cli):
    """A crash while the last record was written: its first ``k`` bytes are there, the rest zero."""
    root, q = fresh(work, pristine)
    last = records(root)[-1]
    k = data.draw(st.integers(1, last.unguarded - 1), label="bytes written")
    path, pos = segment_of(root, last.offset)
    zero(path, pos + k, last.size - k)
    plan = recover_and_check(root, q, oracle=oracle(COUNT - 1), via_cli=via_cli)
    assert plan.valid_end == last.offset
    assert plan.records_dropped == 0 and not plan.needs_force
    assert {s.action for s in plan.steps} <= {"cut", "delete", "rebuild-index", "write-checkpoint", "remove-abort"}


@PROPERTY
@given(garbage=st.binary(min_size=1, max_size=300), gap=st.integers(0, 40), via_cli=st.booleans())
def test_garbage_tail(work, pristine, oracle, garbage, gap, via_cli):
    """Bytes that are no record after the last one: cut; everything else stays as it was."""
    assume(garbage[4:8] != cl.BLANK_MAGIC.to_bytes(4, "big") or gap > 0)
    root, q = fresh(work, pristine)
    last = records(root)[-1]
    path, pos = segment_of(root, last.end)
    write_at(path, pos + gap, garbage)
    plan = recover_and_check(root, q, oracle=oracle(COUNT), via_cli=via_cli)
    assert plan.valid_end == last.end
    cuts = [s for s in plan.steps if s.action == "cut"]
    nonzero = garbage.strip(b"\x00")
    if nonzero:
        first = pos + gap + len(garbage) - len(garbage.lstrip(b"\x00"))
        assert [(s.path, s.length) for s in cuts] == [(f"commitlog/{path.name}", first + len(nonzero) - pos)]
        assert cuts[0].position == pos
    else:
        assert not cuts


@PROPERTY
@given(data=st.data(), via_cli=st.booleans())
def test_zero_filled_tail(work, pristine, oracle, data, via_cli):
    """The tail never reached the disk: zeros from some byte of record ``i`` on, in its file and
    every later one (which then hold nothing and are deleted)."""
    root, q = fresh(work, pristine)
    recs = records(root)
    i = data.draw(st.integers(1, len(recs) - 1), label="first record lost")
    into = data.draw(st.integers(0, recs[i].unguarded - 1), label="bytes of it kept")
    path, pos = segment_of(root, recs[i].offset)
    zero(path, pos + into, 4096 - pos - into)
    for seg in rmq.open_store(root).commitlog:
        if seg.base > recs[i].offset:
            zero(seg.path, 0, seg.size)
    plan = recover_and_check(root, q, oracle=oracle(i), via_cli=via_cli)
    assert plan.valid_end == recs[i].offset
    assert not plan.needs_force


@PROPERTY
@given(data=st.data())
def test_bit_flip_mid_file_needs_force(work, pristine, oracle, data):
    """A flipped bit in a record's body: the valid end is that record, and the intact records
    after it (which the broker would drop silently) make the plan need --force."""
    root, q = fresh(work, pristine)
    recs = records(root)
    i = data.draw(st.integers(1, len(recs) - 2), label="damaged record")
    body_len = len(recs[i].content[3])
    at = data.draw(st.integers(0, body_len - 1), label="body byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    path, pos = segment_of(root, recs[i].offset)
    with open(path, "r+b") as f:
        f.seek(pos + cl.body_position(0) + at)
        byte = f.read(1)[0]
        f.seek(pos + cl.body_position(0) + at)
        f.write(bytes([byte ^ (1 << bit)]))
    original = tree(root)
    plan = plan_rocketmq(root)
    assert plan.valid_end == recs[i].offset
    assert plan.records_dropped == len(recs) - i - 1
    assert plan.needs_force
    with pytest.raises(PlanChangedError, match="--force"):
        apply_rocketmq(plan, quarantine_root=q, jobs=1)
    code, _, err = cli("recover", root, "--apply", "--quarantine", q)
    assert code == 1 and "--force" in err and "Traceback" not in err
    assert tree(root) == original and not q.exists()
    recover_and_check(root, q, oracle=oracle(i), force=True, via_cli=data.draw(st.booleans(), label="via_cli"))


def test_first_record_broken_leaves_an_empty_store(work, pristine):
    """Damage in the very first record: every record goes (with --force, all quarantined), the
    store is empty but sound, and abort is removed."""
    root, q = fresh(work, pristine)
    write_at(root / "commitlog" / segnames.rocketmq_file_name(0), cl.body_position(0), b"\xff")
    plan = plan_rocketmq(root)
    assert plan.valid_end == 0 and plan.records_dropped == COUNT - 1  # every record but the broken one
    recover_and_check(root, q, force=True)


@PROPERTY
@given(zero_length=st.booleans(), via_cli=st.booleans())
def test_missing_or_zero_length_last_file(work, pristine, oracle, zero_length, via_cli):
    """The last CommitLog file is gone (or zero-length): the valid end is the BLANK closing the
    file before it, as the broker leaves it; queues and IndexFiles follow."""
    root, q = fresh(work, pristine)
    recs = records(root)
    last = last_data_file(root)
    base = int(last.name)
    if zero_length:
        last.write_bytes(b"")
    else:
        last.unlink()
    survivors = [r for r in recs if r.offset < base]
    plan = recover_and_check(root, q, oracle=oracle(len(survivors)), via_cli=via_cli)
    assert plan.valid_end == survivors[-1].end  # the BLANK's position
    assert [s.path for s in plan.steps if s.action == "delete" and s.path.startswith("commitlog/")] == (
        [f"commitlog/{last.name}"] if zero_length else []
    )


def test_zero_length_file_after_the_last(work, pristine, oracle):
    """A zero-length file after a healthy last file (4.x refuses to start; 5.1.3+ deletes it)."""
    root, q = fresh(work, pristine)
    (root / "commitlog" / segnames.rocketmq_file_name(3 * 4096)).write_bytes(b"")
    plan = recover_and_check(root, q, oracle=oracle(COUNT))
    assert [s.action for s in plan.steps] == ["delete", "write-checkpoint", "remove-abort"]
    assert plan.valid_end == records(pristine)[-1].end


@PROPERTY
@given(data=st.data(), via_cli=st.booleans())
def test_consume_queue_ahead(work, oracle, data, via_cli):
    """Units past a queue's end pointing past the CommitLog's end (the queue was written, the
    records were not): cut, or deleted with a file they begin, as truncateDirtyLogicFiles does;
    the queue is as it was."""
    n = data.draw(st.integers(40, COUNT), label="messages")
    root, q = fresh(work, oracle(n))
    qid = data.draw(st.integers(0, 1), label="queue")
    extra = data.draw(st.integers(1, 14), label="units")
    end = records(root)[-1].end
    qdir = root / "consumequeue" / "T" / str(qid)
    next_qoff = [u.queue_offset for u in rmq.QueueWalk(rmq.list_segments(qdir))][-1] + 1
    for k in range(extra):
        qoff = next_qoff + k
        unit = cqf.encode_cq_unit(cqf.CqUnit(end + 200 * k + data.draw(st.integers(0, 199)), 150 + k, 7))
        name = qdir / segnames.rocketmq_file_name(qoff * 20 - qoff * 20 % 200)
        if not name.exists():
            name.write_bytes(bytes(200))
        write_at(name, qoff * 20 % 200, unit)
    plan = recover_and_check(root, q, oracle=oracle(n), via_cli=via_cli)
    assert plan.valid_end == end
    assert {s.action for s in plan.steps if s.path.startswith("consumequeue/")} <= {"cut", "delete"}


@PROPERTY
@given(data=st.data(), via_cli=st.booleans())
def test_consume_queue_behind(work, pristine, oracle, data, via_cli):
    """Dispatch lag: a queue lost its last units (zeroed, files deleted, or the whole queue
    directory): the missing units are dispatched again, exactly as the writer made them."""
    root, q = fresh(work, pristine)
    qid = data.draw(st.integers(0, 1), label="queue")
    qdir = root / "consumequeue" / "T" / str(qid)
    how = data.draw(st.sampled_from(["zero", "delete-files", "delete-queue"]), label="how")
    if how == "delete-queue":
        shutil.rmtree(qdir)
    else:
        keep = data.draw(st.integers(0, 29), label="units kept")
        for seg in rmq.list_segments(qdir):
            first = seg.base // 20
            if first >= keep and how == "delete-files":
                seg.path.unlink()
            elif keep < first + 10:
                start = max(keep - first, 0) * 20
                zero(seg.path, start, 200 - start)
    plan = recover_and_check(root, q, oracle=oracle(COUNT), via_cli=via_cli)
    assert [s.details["queue_id"] for s in plan.steps if s.action == "dispatch-cq"] == [qid]
    assert not plan.notes


@PROPERTY
@given(data=st.data())
def test_index_entries_past_the_end(work, pristine, oracle, data):
    """An IndexFile with entries for records the CommitLog does not have: rebuilt from the
    CommitLog, continuing where the previous file stops, equal to the writer's."""
    root, q = fresh(work, pristine)
    end = records(root)[-1].end
    newest = max(rmq.open_store(root).index_files())
    buf = bytearray(newest.read_bytes())
    writer = idxf.IndexWriter(buf, 16, 64)
    for n in range(data.draw(st.integers(1, 5), label="entries")):
        assert writer.put_key(f"T#ghost{n}", end + data.draw(st.integers(0, 5000)), T0 + 10_000)
    newest.write_bytes(bytes(buf))
    plan = recover_and_check(root, q, oracle=oracle(COUNT))
    assert [s.action for s in plan.steps] == ["rebuild-index", "write-checkpoint", "remove-abort"]


def test_index_newer_than_checkpoint(work, oracle):
    """A clean shutdown (checkpoint), then a crash while more was written: the current IndexFile
    is newer than the checkpoint's indexMsgTimestamp and holds a key of the torn record.  The
    broker would destroy it and lose its older keys; recover keeps every key of every record."""
    base = work.mktemp("newer")
    root, want = base / "store", base / "oracle"
    for target, second in ((root, 25), (want, 24)):
        clock = Clock()
        build(target, 35, crash=False, clock=clock)
        build(target, second, clock=clock, first=35)
    cp = cpf.decode_checkpoint((root / "checkpoint").read_bytes())
    newest = max(rmq.open_store(root).index_files())
    with rmq.IndexFileView(newest) as view:
        assert view.header.end_timestamp > cp.index_msg_timestamp > 0
    last = records(root)[-1]
    path, pos = segment_of(root, last.offset)
    zero(path, pos + 40, last.size - 40)
    plan = recover_and_check(root, base / "q", oracle=want)
    assert any(s.action == "rebuild-index" for s in plan.steps)
    store = rmq.open_store(root)
    for r in records(root):
        msg = cl.MessageRecord(topic=r.content[0], properties=dict(r.content[4]))
        for key in index_keys(msg):
            found = []
            for p in store.index_files():
                with rmq.IndexFileView(p) as view:
                    found += idxf.select_phy_offsets(view.buf, key, 64, 0, 2**62, 16, 64)
            assert r.offset in found, key


def test_rebuild_index_all(work, pristine):
    """--rebuild-index rebuilds every IndexFile: same bytes as the writer's."""
    root, q = fresh(work, pristine)
    before = subtree(tree(root), "index")
    plan = plan_rocketmq(root, RecoverOptions(rebuild_index=True))
    step = next(s for s in plan.steps if s.action == "rebuild-index")
    assert step.details["replace"] == list(before)
    apply_rocketmq(plan, quarantine_root=q, jobs=1)
    assert subtree(tree(root), "index") == before
    assert not (root / INDEX_STAGING).exists()


def test_rebuild_index_applies_a_plan_saved_before_the_field_rename(work, pristine):
    """A plan file written before ``prev_end_phy_offset`` became ``prev_end_commitlog_offset``
    (``recover --from-plan``) still rebuilds the IndexFiles, byte for byte."""
    root, q = fresh(work, pristine)
    before = subtree(tree(root), "index")
    plan = plan_rocketmq(root, RecoverOptions(rebuild_index=True))
    step = next(s for s in plan.steps if s.action == "rebuild-index")
    step.details["prev_end_phy_offset"] = step.details.pop("prev_end_commitlog_offset")
    apply_rocketmq(plan, quarantine_root=q, jobs=1)
    assert subtree(tree(root), "index") == before


def test_rebuild_index_keeps_an_unlisted_geometry(work):
    """A store written with maxHashSlotNum 500 / maxIndexNum 3000 (a length no known geometry
    has): the IndexFiles are rebuilt with the geometry their bytes show, not the 420 MB
    default, and come out as the writer's."""
    root = work.mktemp("odd") / "store"
    writer = StoreWriter(root, dataclasses.replace(SMALL, index_hash_slot_num=500, index_num=3000), clock=Clock())
    for i in range(COUNT):
        writer.append(message(i))
    writer.close(clean=False)
    before = subtree(tree(root), "index")
    plan = plan_rocketmq(root, RecoverOptions(rebuild_index=True))
    step = next(s for s in plan.steps if s.action == "rebuild-index")
    assert (step.details["hash_slot_num"], step.details["index_num"]) == (500, 3000)
    assert not [n for n in plan.notes if "unreadable IndexFile" in n]
    apply_rocketmq(plan, quarantine_root=work.mktemp("odd-q"), jobs=1)
    assert subtree(tree(root), "index") == before


def test_rebuild_cq_killed_with_every_file_gone_keeps_the_geometry(work, pristine):
    """--rebuild-cq journals the ConsumeQueue file size before deleting: a run killed after the
    last file went (found by ``python -m fuzz.faults``) is finished by a rerun with 200-byte files,
    not the 6,000,000-byte default a broker configured for 200 would refuse."""
    root, q = fresh(work, pristine)
    before = tree(root)
    plan = plan_rocketmq(root, RecoverOptions(rebuild_cq=True))
    actions = [s.action for s in plan.steps]
    assert actions.index("begin-cq-rebuild") < actions.index("delete")
    assert actions.index("end-cq-rebuild") > max(i for i, a in enumerate(actions) if a == "dispatch-cq")
    # the state such a kill leaves: the journal written, every ConsumeQueue file deleted
    begin = next(s for s in plan.steps if s.action == "begin-cq-rebuild")
    assert begin.details == {"cq_file_size": 200}
    (root / begin.path).write_text(json.dumps(begin.details))
    for f in (root / "consumequeue").glob("*/*/*"):
        f.unlink()
    rerun = plan_rocketmq(root, RecoverOptions())
    assert {s.details["cq_file_size"] for s in rerun.steps if s.action == "dispatch-cq"} == {200}
    assert "end-cq-rebuild" in [s.action for s in rerun.steps]
    apply_rocketmq(rerun, quarantine_root=q, force=True, jobs=1)
    assert subtree(tree(root), "consumequeue") == subtree(before, "consumequeue")
    assert not (root / begin.path).exists()
    assert_clean(root)


def test_rebuild_cq_one_queue(work, pristine):
    """--rebuild-cq --queue T/1 deletes that queue's files (quarantined) and dispatches it anew."""
    root, q = fresh(work, pristine)
    before = tree(root)
    code, out, err = cli("recover", root, "--rebuild-cq", "--queue", "T/1", "--json")
    assert code == 1, err
    steps = json.loads(out)["steps"]
    assert {s["path"] for s in steps if s["action"] == "delete"} == {f"consumequeue/T/1/{segnames.rocketmq_file_name(n)}" for n in (0, 200, 400)}
    assert [s["details"]["queue_id"] for s in steps if s["action"] == "dispatch-cq"] == [1]
    code, _, err = cli("recover", root, "--rebuild-cq", "--queue", "T/1", "--apply", "--quarantine", q, "--jobs", "1")
    assert code == 0, err
    assert subtree(tree(root), "consumequeue") == subtree(before, "consumequeue")


# --- 2. crash safety: SIGKILL at every mutation -----------------------------------------------------------


def crash_store(root: Path) -> None:
    """A tiny store with something for every action: a zero-length file after the last
    CommitLog file, a torn last record (CommitLog cut, queue cut, IndexFile rebuild), the file
    holding that queue unit cut short too (zero-filled to size after the cut), a queue behind
    (dispatch), no checkpoint (written) and ``abort`` (removed)."""
    build(root, 44)
    recs = records(root)
    last = recs[-1]
    assert last.content[1] == 1  # the torn record is queue 1's; queue 0 lags
    path, pos = segment_of(root, last.offset)
    zero(path, pos + 100, last.size - 100)
    (root / "commitlog" / segnames.rocketmq_file_name(int(last_data_file(root).name) + 4096)).write_bytes(b"")
    (root / "consumequeue" / "T" / "0" / segnames.rocketmq_file_name(400)).unlink()
    zero(root / "consumequeue" / "T" / "0" / segnames.rocketmq_file_name(200), 120, 80)
    with open(root / "consumequeue" / "T" / "1" / segnames.rocketmq_file_name(400), "r+b") as f:
        f.truncate(50)  # 2 units (the second the torn record's), then 10 bytes of zeros


def _rerun(store: Path, q: Path):
    return apply_rocketmq(plan_rocketmq(store), quarantine_root=q, jobs=1)


def _clean(store: Path) -> None:
    assert_clean(store, warnings=False)


def _sample(mutations: int) -> list[int]:
    """The kill points always tested: the first and last three, every fourth between."""
    return sorted({1, 2, 3, mutations - 2, mutations - 1, mutations} | set(range(4, mutations, 4)))


@pytest.fixture(scope="module")
def crash_case(work):
    """The damaged store, and the result of an uninterrupted run of the real command on a copy
    (the mutations counted by a run in-process)."""
    base = work.mktemp("crash")
    damaged = base / "damaged"
    crash_store(damaged)
    plan = plan_rocketmq(damaged)
    assert {s.action for s in plan.steps} == {"delete", "cut", "extend", "dispatch-cq", "rebuild-index", "write-checkpoint", "remove-abort"}
    case = make_case(base, damaged, _rerun)
    assert_clean(base / "reference", warnings=False)
    return case


def test_kill_at_sampled_mutations(work, crash_case, monkeypatch):
    """SIGKILL at the sampled mutations (always run; the others are the ``slow`` test below):
    after each, a rerun without faults gives the uninterrupted run's store, validate is clean,
    and the quarantines of both runs together hold every byte that went."""
    monkeypatch.delenv("MQTOOL_FAULT_INJECT", raising=False)
    case = crash_case
    assert case.mutations >= 30  # every action ran, each with several mutations
    kill_at(work.mktemp("kills"), case, _sample(case.mutations), _rerun, _clean)


@pytest.mark.slow
def test_kill_at_every_other_mutation(work, crash_case, monkeypatch):
    """The exhaustive variant: every kill point the sample leaves out, N upward until a run is
    no longer killed (capped at 300); that N must be one past the in-process count."""
    monkeypatch.delenv("MQTOOL_FAULT_INJECT", raising=False)
    case = crash_case
    base = work.mktemp("kills-all")
    started = time.monotonic()
    sample = _sample(case.mutations)
    for n in range(1, 301):
        if n in sample:
            continue
        if not kill_and_rerun(base, case, n, _rerun, _clean):
            break
    else:
        pytest.fail("the run was still being killed after 300 mutations")
    assert n == case.mutations + 1, "the subprocess ran a different number of mutations than the in-process run"
    print(f"\n{case.mutations} kill points ({len(sample)} sampled), the rest in {time.monotonic() - started:.1f} s")


# --- 3. ENOSPC and EIO -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,text", IO_FAULTS)
def test_enospc_and_eio_at_every_mutation(work, crash_case, monkeypatch, kind, text):
    """An I/O error at mutation 1, 2, ... until a run finishes: a StoreIOError that the CLI shows
    as one line and exit 3 (checked through the CLI every tenth time); the store is untouched (at
    the first mutation) or partly recovered so that a plain rerun finishes it, to the same store."""
    points = range(1, crash_case.mutations + 1)
    io_error_at(work.mktemp(kind), crash_case, points, kind, text, _rerun, monkeypatch, cli_every=10, still_work=lambda s: plan_rocketmq(s).has_work)


@pytest.mark.parametrize("fault", ["enospc@1", "eio@7"])
def test_io_error_in_a_real_process(work, crash_case, fault):
    """The real command: exit 3, one line on stderr, no traceback; untouched at mutation 1."""
    damaged, original = crash_case.damaged, crash_case.original
    base = work.mktemp("ioerr")
    store = base / "store"
    shutil.copytree(damaged, store)
    done = subprocess_recover(store, base / "q", fault)
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("mqtool: error: ")
    if fault == "enospc@1":
        assert tree(store) == original


# --- 4. plan / apply contract ---------------------------------------------------------------------------------


def test_plan_json_is_stable(work, pristine):
    root, q = fresh(work, pristine)
    last = records(root)[-1]
    path, pos = segment_of(root, last.offset)
    zero(path, pos + 60, last.size - 60)
    written = len(path.read_bytes()[pos : pos + 60].rstrip(b"\x00"))
    code, out, err = cli("recover", root, "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert {"layout", "root", "mode", "has_work", "valid_end", "records_dropped", "bytes_cut", "files_deleted", "needs_force", "notes", "facts", "steps"} <= set(doc)
    assert doc["layout"] == "rocketmq" and doc["mode"] == "abnormal" and doc["has_work"] is True
    assert doc["valid_end"] == last.offset
    for step in doc["steps"]:
        assert {"action", "path", "position", "length", "reason", "expect"} <= set(step)
        assert isinstance(step["reason"], str) and step["reason"]
        assert not Path(step["path"]).is_absolute()
    cut = doc["steps"][0]
    assert (cut["action"], cut["path"], cut["position"], cut["length"]) == ("cut", f"commitlog/{path.name}", pos, written)
    assert set(cut["expect"]) == {"exists", "size", "mtime_ns", "crc32"}
    # the same store gives the same plan, and the JSON round-trips through RecoverPlan
    assert json.loads(cli("recover", root, "--json")[1]) == doc
    assert RecoverPlan.from_dict(doc).to_dict() == doc
    plan_file = q.parent / "plan.json"
    assert cli("recover", root, "--plan-out", plan_file)[0] == 1
    assert json.loads(plan_file.read_text()) == doc


def test_from_plan_applies_the_saved_plan(work, pristine):
    base = work.mktemp("fromplan")
    root, other = base / "store", base / "other"
    shutil.copytree(pristine, root)
    (root / "commitlog" / segnames.rocketmq_file_name(3 * 4096)).write_bytes(b"")
    shutil.copytree(root, other)
    plan_file = base / "plan.json"
    assert cli("recover", root, "--plan-out", plan_file)[0] == 1
    code, out, err = cli("recover", "--from-plan", plan_file, "--apply", "--quarantine", base / "q", "--json", "--jobs", "1")
    assert code == 0, err
    assert [s["action"] for s in json.loads(out)["applied"]] == ["delete", "write-checkpoint", "remove-abort"]
    assert cli("recover", other, "--apply", "--quarantine", base / "q2", "--jobs", "1")[0] == 0
    assert tree(root) == tree(other)
    # applying the same plan again: its files are not as planned any more
    code, _, err = cli("recover", "--from-plan", plan_file, "--apply", "--quarantine", base / "q")
    assert code == 1 and "changed since the plan" in err


def _touch_commitlog_tail(root: Path) -> None:
    path = last_data_file(root)
    write_at(path, 4000, b"\x01")


def _rewrite_checkpoint(root: Path) -> None:
    (root / "checkpoint").write_bytes(cpf.encode_checkpoint(cpf.Checkpoint(1, 1, 0)))


def _touch_index(root: Path) -> None:
    newest = max(rmq.open_store(root).index_files())
    data = newest.read_bytes()
    newest.write_bytes(data)  # same bytes, new mtime
    os.utime(newest, ns=(time.time_ns(), time.time_ns() + 10**9))


def _touch_abort(root: Path) -> None:
    (root / "abort").write_bytes(b"4242")


@pytest.mark.parametrize("change", [_touch_commitlog_tail, _rewrite_checkpoint, _touch_index, _touch_abort], ids=lambda f: f.__name__.strip("_"))
def test_apply_refuses_a_changed_store_and_changes_nothing(work, pristine, change):
    """A file of any step (the first, a middle one, the last) changed after planning: apply
    refuses before touching anything, with exit 1 and 'changed since the plan'."""
    base = work.mktemp("changed")
    root = base / "store"
    shutil.copytree(pristine, root)
    last = records(root)[-1]
    path, pos = segment_of(root, last.offset)
    zero(path, pos + 60, last.size - 60)
    (root / "checkpoint").write_bytes(cpf.encode_checkpoint(cpf.Checkpoint(5, 5, 0)))
    plan_file = base / "plan.json"
    assert cli("recover", root, "--plan-out", plan_file)[0] == 1
    assert [s["action"] for s in json.loads(plan_file.read_text())["steps"]] == ["cut", "cut", "rebuild-index", "write-checkpoint", "remove-abort"]
    change(root)
    before = tree(root)
    code, _, err = cli("recover", "--from-plan", plan_file, "--apply", "--quarantine", base / "q")
    assert code == 1
    assert "changed since the plan" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert tree(root) == before
    assert not (base / "q").exists()


def test_exit_codes(work, pristine):
    root, q = fresh(work, pristine)
    assert cli("recover", root)[0] == 1  # a plan with work
    assert cli("recover", root, "--apply", "--quarantine", q, "--jobs", "1")[0] == 0  # applied
    assert cli("recover", root)[0] == 0  # nothing to do
    code, out, _ = cli("recover", root, "--apply", "--quarantine", q, "--json")
    assert code == 0 and json.loads(out)["applied"] == []
    assert cli("recover", root, "--mode", "sideways")[0] == 2
    assert cli("recover", root, "--queue", "T/1")[0] == 2  # --queue needs --rebuild-cq
    assert cli("recover", q.parent / "nothing-here")[0] == 3


def test_lock_held_by_another_mqtool_exits_75(work, pristine):
    root, q = fresh(work, pristine)
    before = tree(root)
    with ExclusiveLock(root):
        code, _, err = cli("recover", root, "--apply", "--quarantine", q)
        assert code == 75 and "another mqtool run holds the lock" in err
        assert cli("recover", root)[0] == 1  # planning reads only: no lock needed
        with pytest.raises(LockBusyError):
            apply_rocketmq(plan_rocketmq(root), quarantine_root=q)
    assert tree(root) == before and not q.exists()
    _, manifest = recover(root, q)
    with ExclusiveLock(root):
        assert cli("recover", "--undo", manifest)[0] == 75


def test_broker_lock_refuses_unless_force(work, pristine):
    """The broker's fcntl lock on <root>/lock, held by another process: exit 5, nothing
    changed; with --force the plan is applied."""
    root, q = fresh(work, pristine)
    before = tree(root)
    with lock_held_elsewhere(root / "lock") as broker_pid:
        code, _, err = cli("recover", root, "--apply", "--quarantine", q)
        assert code == 5 and f"pid {broker_pid}" in err and "--force" in err
        assert tree(root) == before and not q.exists()
        code, _, err = cli("recover", root, "--apply", "--force", "--quarantine", q, "--jobs", "1")
        assert code == 0, err
    assert not (root / "abort").exists()


# --- 5. real captures ---------------------------------------------------------------------------------------


def test_real_crashed_4_2_store(tmp_path):
    """EricPanGopher's ConsumeQueueTest store (4.2, crashed: abort, zero checkpoint, zero-length
    last file, queue behind): recovers to a store with no errors and no warnings; undo brings
    back every byte."""
    source = real_path("rocketmq", "EricPanGopher-rocketmq", "store", "unit_test_store")
    root = tmp_path / "store"
    shutil.copytree(source, root)
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    original = tree(root)
    before = records(root)
    code, out, err = cli("recover", root, "--json")
    assert code == 1, err
    plan = json.loads(out)
    assert [s["action"] for s in plan["steps"]] == ["delete", "dispatch-cq", "write-checkpoint", "remove-abort"]
    assert plan["valid_end"] == 31112 and plan["records_dropped"] == 0
    code, out, err = cli("recover", root, "--apply", "--quarantine", tmp_path / "q", "--json", "--jobs", "1")
    assert code == 0, err
    manifest = Path(json.loads(out)["manifest"])
    report = validate(root)
    assert report.counts["error"] == 0 and report.counts["warning"] == 0, [f.message for f in report.findings]
    assert not (root / "abort").exists()
    assert [r.content for r in records(root)] == [r.content for r in before]
    units = list(rmq.QueueWalk(rmq.open_store(root).cq_segments("abc", 0)))
    assert [u.queue_offset for u in units] == list(range(len(before)))
    check_quarantine(original, tree(root), [manifest])
    code, _, err = cli("recover", "--undo", manifest)
    assert code == 0, err
    assert tree(root) == original
    assert tree(source) == original  # the capture itself is untouched


# --- 6. normal vs abnormal mode -------------------------------------------------------------------------------


def broker_valid_end(root: Path, start: int) -> int:
    """The broker's scan (spec §3.1, §7.2): from file ``start``, record by record; BLANK moves to
    the next file (stays put when there is none); the first failure ends it."""
    files = [s for s in rmq.open_store(root).commitlog if s.size > 0]
    for i in range(start, len(files)):
        data = files[i].path.read_bytes()
        pos = 0
        while pos + 8 <= len(data):
            total = int.from_bytes(data[pos : pos + 4], "big", signed=True)
            magic = int.from_bytes(data[pos + 4 : pos + 8], "big")
            if magic == cl.BLANK_MAGIC:
                break
            if magic not in cl.MESSAGE_MAGICS or not 0 < total <= len(data) - pos:
                return files[i].base + pos
            try:
                cl.decode_message(data[pos : pos + total], 0, check_crc=True)
            except MqError:
                return files[i].base + pos
            pos += total
        else:
            return files[i].base + pos
        if i + 1 == len(files):
            return files[i].base + pos
    return files[start].base


@pytest.fixture(scope="module")
def long_store(work) -> tuple[Path, list[Rec], list[rmq.Segment]]:
    """Six CommitLog files, one message a second (so the checkpoint's 3 s margin is 3 records)."""
    root = work.mktemp("long") / "store"
    build(root, 125, clock=Clock(step=1000))
    files = [s for s in rmq.open_store(root).commitlog if s.size > 0]
    assert len(files) == 6
    return root, records(root), files


def _flip_first_body_byte(root: Path, recs: list[Rec], base: int) -> Rec:
    victim = next(r for r in recs if r.offset >= base + 300)
    path, pos = segment_of(root, victim.offset)
    with open(path, "r+b") as f:
        f.seek(pos + cl.body_position(0))
        byte = f.read(1)[0]
        f.seek(pos + cl.body_position(0))
        f.write(bytes([byte ^ 0x40]))
    return victim


@pytest.mark.parametrize("damaged_file", [0, 2, 3, 5])
def test_normal_mode_scans_from_the_third_last_file(work, long_store, damaged_file):
    """--mode normal of RocketMQ 4.x-5.3.1 starts at the third-last file: damage before it is not
    the broker's concern (the plan leaves it alone), damage from there on ends the valid data."""
    source, recs, files = long_store
    root = work.mktemp("normal") / "store"
    shutil.copytree(source, root)
    victim = _flip_first_body_byte(root, recs, files[damaged_file].base)
    plan = plan_rocketmq(root, RecoverOptions(mode="normal", broker_version="5.3.1"))
    assert plan.mode == "normal"
    assert plan.facts["scan_start_file"] == files[3].path.name
    assert plan.valid_end == broker_valid_end(root, 3)
    touched = {s.path for s in plan.steps if s.action in ("cut", "delete")}
    if damaged_file < 3:
        assert plan.valid_end == recs[-1].end
        assert not any(p.startswith("commitlog/") for p in touched)
    else:
        assert plan.valid_end == victim.offset
        assert f"commitlog/{files[damaged_file].path.name}" in touched
        assert plan.needs_force


@pytest.mark.parametrize("damaged_file", [0, 4, 5])
def test_normal_mode_of_5_3_2_scans_from_the_consume_queue_maximum(work, long_store, damaged_file):
    """--mode normal of RocketMQ 5.3.2+ starts at the newest file at or below the highest
    CommitLog offset a ConsumeQueue unit points to (here the last file: every record is
    dispatched): damage before it stays, as the broker keeps it."""
    source, recs, files = long_store
    root = work.mktemp("normal532") / "store"
    shutil.copytree(source, root)
    victim = _flip_first_body_byte(root, recs, files[damaged_file].base)
    plan = plan_rocketmq(root, RecoverOptions(mode="normal", broker_version="5.3.2"))
    assert plan.facts["consume_queue_max_commitlog_offset"] == recs[-1].end
    assert plan.facts["scan_start_file"] == files[5].path.name
    assert plan.valid_end == broker_valid_end(root, 5)
    touched = {s.path for s in plan.steps if s.action in ("cut", "delete") and s.path.startswith("commitlog/")}
    if damaged_file < 5:
        assert plan.valid_end == recs[-1].end and not touched and not plan.needs_force
    else:
        assert plan.valid_end == victim.offset and touched == {f"commitlog/{files[5].path.name}"}


@pytest.mark.parametrize("damaged_file", [1, 2, 4])
def test_abnormal_mode_scans_from_the_checkpoint_file(work, long_store, damaged_file):
    """--mode abnormal (and auto with abort) starts at the newest file whose first record is
    older than the checkpoint's min timestamp (3 s before its oldest time)."""
    source, recs, files = long_store
    root = work.mktemp("abnormal") / "store"
    shutil.copytree(source, root)
    first_of_2 = next(r for r in recs if r.offset == files[2].base)
    with ReadOnlyFile(files[2].path) as f:
        ts = cl.decode_message(f.pread(0, first_of_2.size), 0).store_timestamp
    # min(physic, logics) - 3000 ms = the first record of file 2, so the scan starts there
    (root / "checkpoint").write_bytes(cpf.encode_checkpoint(cpf.Checkpoint(ts + 3000, ts + 5000, 0)))
    victim = _flip_first_body_byte(root, recs, files[damaged_file].base)
    for mode in ("abnormal", "auto"):
        plan = plan_rocketmq(root, RecoverOptions(mode=mode))
        assert plan.mode == "abnormal"
        assert plan.facts["scan_start_file"] == files[2].path.name
        assert plan.valid_end == broker_valid_end(root, 2)
        assert plan.valid_end == (victim.offset if damaged_file >= 2 else recs[-1].end)
    normal = plan_rocketmq(root, RecoverOptions(mode="normal", broker_version="4.9.8"))
    assert normal.facts["scan_start_file"] == files[3].path.name
    assert normal.valid_end == (victim.offset if damaged_file >= 3 else recs[-1].end)


def test_a_linked_queue_directory_is_neither_read_nor_written_through(tmp_path):
    """A queue directory that is a symbolic link is not followed: its records are not dispatched
    into it (recover would write where the link leads) and the plan says why."""
    root = tmp_path / "store"
    build(root, crash=False)
    qdir = root / "consumequeue" / "T" / "1"
    outside = tmp_path / "outside-queue"
    shutil.move(qdir, outside)
    qdir.symlink_to(outside)
    before = tree(outside)
    plan = plan_rocketmq(root)
    assert not plan.has_work and not [s for s in plan.steps if s.action == "dispatch-cq"]
    (note,) = plan.notes
    assert note.startswith(f"T/1: {COUNT // 2} record(s) not dispatched: {qdir} is a symlink, not followed")
    code, out, _ = cli("recover", root, "--apply")
    assert code == 0 and "is a symlink, not followed" in out.replace("\n", " ")
    assert tree(outside) == before and qdir.is_symlink()


def test_short_consume_queue_file_is_zero_filled_and_undone_exactly(tmp_path):
    """The broker refuses to load a ConsumeQueue file shorter than the store's file size: recover
    fills it up with zeros (store-wide size, not the short file's own), quarantining it whole."""
    from tests.conftest import FIXTURES

    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    short = root / "consumequeue" / "TopicTest" / "1" / segnames.rocketmq_file_name(0)
    original = short.read_bytes()[:500]
    short.write_bytes(original)
    plan = plan_rocketmq(root)
    assert [(s.action, s.path, s.position, s.length) for s in plan.steps] == [("extend", "consumequeue/TopicTest/1/" + short.name, 500, 500)]
    result = apply_rocketmq(plan, quarantine_root=tmp_path / "q", jobs=1)
    assert short.read_bytes() == original + bytes(500)
    assert_clean(root)
    undo_manifest(Path(result.manifest))
    assert short.read_bytes() == original


# --- 7. CommitLog files of the wrong size, missing files (issue 18) ----------------------------------------------
#
# The bundled fixture (16 KiB CommitLog files, six of them; 1000-byte ConsumeQueue files).
# ``MappedFileQueue.load`` refuses a CommitLog file of another length, the last one included.

FIXTURE_CL_SIZE = 16384
FIXTURE_CQ_SIZE = 1000


def fixture_store(tmp_path: Path) -> tuple[Path, Path]:
    from tests.conftest import FIXTURES

    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    return root, tmp_path / "quarantine"


def cl_file(root: Path, n: int) -> Path:
    """The ``n``-th CommitLog file of the fixture (0-based; -1 the last)."""
    return sorted((root / "commitlog").iterdir())[n]


def assert_configured_sizes(root: Path) -> None:
    store = rmq.open_store(root)
    assert [s.size for s in store.commitlog] == [FIXTURE_CL_SIZE] * len(store.commitlog)
    for key in store.queues():
        assert {s.size for s in store.cq_segments(*key)} <= {FIXTURE_CQ_SIZE}, key


def _last_file_records(root: Path) -> list[Rec]:
    base = int(cl_file(root, -1).name)
    return [r for r in records(root) if r.offset >= base]


def _cut_last_file(root: Path, size: int) -> None:
    os.truncate(cl_file(root, -1), size)


def _garbage_after_valid_end(root: Path) -> None:
    end = _last_file_records(root)[-1].end - int(cl_file(root, -1).name)
    write_at(cl_file(root, -1), end + 10, bytes((i * 31 + 5) % 255 + 1 for i in range(3000)))


def _garbage_past_the_size(root: Path) -> None:
    with open(cl_file(root, -1), "ab") as f:
        f.write(bytes((i * 31 + 5) % 255 + 1 for i in range(3000)))


def _zeroed_region_at_the_end(root: Path) -> None:
    recs = _last_file_records(root)[-2:]
    base = int(cl_file(root, -1).name)
    zero(cl_file(root, -1), recs[0].offset - base, recs[-1].end - recs[0].offset)


RECOVERABLE = {
    "torn-tail-in-a-cut-last-file": lambda root: _cut_last_file(root, 4000),  # the fixture's valid end is 4479
    "short-last-file-zeros-only": lambda root: _cut_last_file(root, 5000),
    "garbage-after-the-valid-end": _garbage_after_valid_end,
    "garbage-past-the-size": _garbage_past_the_size,
    "zeros-past-the-size": lambda root: _cut_last_file(root, 20000),
    "zeroed-region-at-the-end": _zeroed_region_at_the_end,
    "zeroed-region-in-a-cut-last-file": lambda root: (_zeroed_region_at_the_end(root), _cut_last_file(root, 4300)),
    # the first file's BLANK record starts at 16019: cut after its header, only filler is lost
    "short-first-file-after-its-blank": lambda root: os.truncate(cl_file(root, 0), 16100),
}


@pytest.mark.parametrize("via_cli", [False, True], ids=["ops", "cli"])
@pytest.mark.parametrize("kind", sorted(RECOVERABLE))
def test_recoverable_damage_leaves_a_store_the_broker_loads(tmp_path, kind, via_cli):
    """After ``recover --apply`` the store validates clean, every CommitLog and ConsumeQueue file
    has the configured size, a second plan has nothing to do, and ``--undo`` restores the damaged
    store byte for byte."""
    root, q = fixture_store(tmp_path)
    RECOVERABLE[kind](root)
    original, before = tree(root), records(root)
    plan, manifest = recover(root, q, via_cli=via_cli)
    assert plan.has_work and not plan.unfixable and not plan.needs_force
    assert_clean(root)
    assert_configured_sizes(root)
    assert [r.content for r in records(root)] == [r.content for r in before if r.end <= plan.valid_end]
    check_quarantine(original, tree(root), [manifest])
    again = plan_rocketmq(root)
    assert not again.has_work and not again.unfixable
    code, _, err = cli("recover", root)
    assert code == 0, err
    if via_cli:
        code, _, err = cli("recover", "--undo", manifest)
        assert code == 0, err
    else:
        undo_manifest(manifest)
    assert tree(root) == original


def test_cut_last_file_plan_extends_after_the_cut(tmp_path):
    """The torn record is zeroed up to the file's old end, then the file is zero-filled to the
    configured size: both steps name their range."""
    root, _ = fixture_store(tmp_path)
    _cut_last_file(root, 4000)
    plan = plan_rocketmq(root)
    name = f"commitlog/{cl_file(root, -1).name}"
    assert [(s.action, s.position, s.length) for s in plan.steps if s.path == name] == [("cut", 3754, 246), ("extend", 4000, FIXTURE_CL_SIZE - 4000)]
    extend = next(s for s in plan.steps if s.action == "extend")
    assert "RMQ-FILE-SIZE" in extend.reason


def test_short_file_before_the_last_is_filled_and_later_files_need_force(tmp_path):
    """A file before the last one cut short: its lost bytes held records (the broker had moved
    on to later files).  Filled up with zeros, the broker's recovery would stop at its valid end
    and delete the later files (``truncateDirtyFiles``): the plan does exactly that, names the
    lost range, and needs --force.  (RocketMQ 4.x-5.3.1: the third-last file is where their
    recovery starts; 5.3.2+ starts at the last file and never reads it.)"""
    root, q = fixture_store(tmp_path)
    short = cl_file(root, 3)
    os.truncate(short, 10000)
    original = tree(root)
    plan = plan_rocketmq(root, RecoverOptions(broker_version="5.3.1"))
    name = f"commitlog/{short.name}"
    assert ("extend", name, 10000, FIXTURE_CL_SIZE - 10000) in [(s.action, s.path, s.position, s.length) for s in plan.steps]
    assert [s.path for s in plan.steps if s.action == "delete" and s.path.startswith("commitlog/")] == [f"commitlog/{cl_file(root, i).name}" for i in (4, 5)]
    assert any(f"{name} lacks its bytes 10000..16383" in r for r in plan.needs_force)
    assert not plan.unfixable
    with pytest.raises(PlanChangedError, match="lacks its bytes"):
        apply_rocketmq(plan, quarantine_root=q, jobs=1)
    assert tree(root) == original
    result = apply_rocketmq(plan, quarantine_root=q, force=True, jobs=1)
    assert_clean(root)
    assert_configured_sizes(root)
    undo_manifest(Path(result.manifest))
    assert tree(root) == original


def _missing_middle_file(root: Path) -> tuple[str, int | None]:
    cl_file(root, 2).unlink()
    return "RMQ-FILE-GAP", None


def _zero_length_middle_file(root: Path) -> tuple[str, int | None]:
    os.truncate(cl_file(root, 2), 0)
    return "RMQ-FILE-ZERO-LENGTH", 0


def _short_first_file(root: Path) -> tuple[str, int | None]:
    os.truncate(cl_file(root, 0), 10000)  # before the scan of normal recovery: its records are gone
    return "RMQ-FILE-SIZE", 10000


def _gap_and_torn_tail(root: Path) -> tuple[str, int | None]:
    _cut_last_file(root, 4000)
    return _missing_middle_file(root)


UNRECOVERABLE = {
    "missing-middle-file": _missing_middle_file,
    "zero-length-middle-file": _zero_length_middle_file,
    "short-first-file": _short_first_file,
    "missing-middle-file-and-torn-tail": _gap_and_torn_tail,
}


@pytest.mark.parametrize("kind", sorted(UNRECOVERABLE))
def test_unrecoverable_damage_is_named_and_refused(tmp_path, kind):
    """What recover cannot fix is the finding validate gives (same code, path and position):
    the dry run names it and exits 1, --apply refuses it without touching the store."""
    root, q = fixture_store(tmp_path)
    code_, position = UNRECOVERABLE[kind](root)
    original = tree(root)
    plan = plan_rocketmq(root)
    found = [(f.code, f.path, f.position) for f in validate(root).findings if f.family == "files" and f.level.name == "error"]
    want = [(c, p, pos) for c, p, pos in found if c == code_]  # the plan repairs the rest (a short last file)
    assert len(want) == 1 and want[0][2] == position
    assert [(f["code"], f["path"], f["position"]) for f in plan.unfixable] == want
    with pytest.raises(PlanChangedError, match=code_):
        apply_rocketmq(plan, quarantine_root=q, jobs=1)
    assert tree(root) == original
    path = next(p for c, p, _ in want if c == code_)
    where = f"{code_} {path}:{'-' if position is None else position}"
    code, out, err = cli("recover", root)
    assert code == 1, err
    assert where in out.replace("\n", "")
    code, out, _ = cli("recover", root, "--json")
    assert code == 1 and [(f["code"], f["path"], f["position"]) for f in json.loads(out)["unfixable"]] == want
    code, out, err = cli("recover", root, "--apply", "--quarantine", q)
    assert code == 1 and code_ in (out + err).replace("\n", "")
    assert tree(root) == original


def test_records_past_the_configured_size_are_refused(tmp_path):
    """A file longer than the configured size whose records run past it: cutting the excess
    would drop records, so recover leaves it and names the finding validate gives."""
    root, q = fixture_store(tmp_path)
    for extra in sorted((root / "commitlog").iterdir())[1:]:
        extra.unlink()
    plan = plan_rocketmq(root, RecoverOptions(commitlog_file_size=8192))
    assert not [s for s in plan.steps if s.action == "truncate"]
    want = [(f.code, f.path, f.position) for f in validate_rocketmq(root, ValidateOptions(commitlog_file_size=8192)).findings if f.code == "RMQ-FILE-SIZE"]
    assert want == [("RMQ-FILE-SIZE", str(cl_file(root, 0)), 8192)]
    assert [(f["code"], f["path"], f["position"]) for f in plan.unfixable] == want
    with pytest.raises(PlanChangedError, match="RMQ-FILE-SIZE"):
        apply_rocketmq(plan, quarantine_root=q, jobs=1)


def test_verification_names_every_finding_it_still_sees(tmp_path):
    """--apply --force on a store with a missing middle file: the torn tail is repaired, the gap
    stays, and the verification names it (table and JSON), not just a count."""
    root, q = fixture_store(tmp_path)
    _gap_and_torn_tail(root)
    gap = str(cl_file(root, 2))
    code, out, err = cli("recover", root, "--apply", "--force", "--quarantine", q, "--jobs", "1", "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["verified"] is False and doc["verification"]["ok"] is False
    errors = [(f["code"], f["path"]) for f in doc["verification"]["findings"] if f["severity"] == "error"]
    assert errors == [("RMQ-FILE-GAP", gap)]
    assert doc["verification"]["counts"]["error"] == 1
    manifest = doc["manifest"]
    code, _, err = cli("recover", "--undo", manifest)
    assert code == 0, err
    code, out, err = cli("recover", root, "--apply", "--force", "--quarantine", q, "--jobs", "1")
    assert code == 1, err
    flat = out.replace("\n", "")
    assert "verification: FAILED (1 error(s)" in flat and f"error RMQ-FILE-GAP {gap}:-:" in flat
