"""``recover`` on Kafka log dirs: ``LogLoader`` + ``LogSegment.recover``, safely.

Stores are the bundled ``fixtures/kafka-logs`` (copied) or written with ``kafka_writer`` (small
segments), damaged on purpose, and recovered through the API or the CLI.  Every recovery is
checked against

* an oracle: the same batches without the ones the damage destroyed, written by the writer and
  closed cleanly, give exactly the ``.log``/``.index``/``.timeindex`` the recovered segment must
  have (the writer follows the broker's append path, whose indexes are the ones recovery builds
  for single-batch appends; a clean close forces the final time-index entry recovery forces);
* ``validate``: no errors, no warnings (but the unclean-shutdown one when there is no marker);
* the records: every batch before the cut is still there;
* the quarantine: every byte the run changed or removed is held by an entry, with the original
  bytes; ``--undo`` brings the damaged store back byte for byte.

The crash tests run the real command in a subprocess, SIGKILLed at mutation after mutation
(``MQTOOL_FAULT_INJECT=kill@N``), then rerun it: the result must be the uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from fuzz.faults import check_quarantine, tree
from mqtool.cli.app import run
from mqtool.errors import LockBusyError, PlanChangedError
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.ops.recover import undo_manifest
from mqtool.ops.recover.kafka import RecoverOptions, apply_kafka, plan_kafka
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.kafka import validate_kafka
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile
from mqtool.store.kafka_writer import LogDirWriter, PartitionConfig
from mqtool.store.lock import MQTOOL_LOCK_NAME, ExclusiveLock
from tests.conftest import FIXTURES, real_path
from tests.ops.crashkit import IO_FAULTS, check_undo, io_error_at, kill_at, kill_points, make_case

PROPERTY = settings(
    max_examples=10, deadline=None, derandomize=True, phases=(Phase.explicit, Phase.generate), suppress_health_check=[HealthCheck.too_slow]
)
#: warnings a recovered store may keep: no .kafka_cleanshutdown (recover never writes one)
ALLOWED_WARNINGS = {"KAFKA-UNCLEAN-SHUTDOWN"}
T0 = 1_700_000_000_000
SMALL = PartitionConfig(segment_bytes=1500, index_interval_bytes=256, max_index_bytes=4096)


# --- building and observing stores -------------------------------------------------------------------------


def records(i: int, n: int = 2) -> list[rb.Record]:
    return [rb.Record(offset_delta=j, timestamp_delta=j, key=f"k{i}-{j}".encode(), value=f"value {i}-{j} ".encode() * (1 + (i + j) % 4)) for j in range(n)]


def build(root: Path, batches: int, *, clean: bool = True, partitions: tuple[str, ...] = ("t-0",)) -> LogDirWriter:
    """A log dir whose partitions hold ``batches`` single-batch appends each (epoch 3 from batch 7)."""
    w = LogDirWriter(root, meta=cpf.MetaProperties(1, node_id=1, cluster_id="test-cluster", directory_id=cpf.encode_kafka_uuid(bytes(range(16)))))
    for name in partitions:
        topic, _, number = name.rpartition("-")
        p = w.partition(topic, int(number), SMALL)
        for i in range(batches):
            if i == 7:
                p.leader_epoch = 3
            p.append(rb.build_batch(records(i, 1 + i % 3), base_timestamp=T0 + 100 * i))
    w.close(clean=clean)
    return w


def segment_files(part: Path) -> list[Path]:
    return sorted(part.glob("*.log"))


def batch_ends(path: Path) -> list[tuple[int, int, int]]:
    """``(position, end position, last offset)`` of every valid batch of a ``.log``."""
    out = []
    with ReadOnlyFile(path) as f:
        for pos, e in ks.LogFileWalk(f, 0, mode="header"):
            out.append((pos, pos + e.size, e.last_offset))
    return out


def validate(root: Path):
    return validate_kafka(root, ValidateOptions(jobs=1))


def problems(root: Path, *, allowed: set[str] = ALLOWED_WARNINGS) -> list[str]:
    report = validate(root)
    return [
        f"{f.code} {f.path}:{f.position}: {f.message}"
        for f in report.findings
        if f.level.name == "error" or (f.level.name == "warning" and f.code not in allowed)
    ]


def assert_clean(root: Path, **kw) -> None:
    found = problems(root, **kw)
    assert not found, "\n".join(found)


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def recover_and_check(root: Path, q: Path, *, options: RecoverOptions | None = None, force: bool = False, via_cli: bool = False, allowed=ALLOWED_WARNINGS):
    """Recover ``root``: validate clean, quarantine complete, nothing left to do, then undo
    brings the damaged store back."""
    options = options or RecoverOptions()
    original = tree(root)
    plan = plan_kafka(root, options)
    assert plan.has_work
    if via_cli:
        flags = (["--full"] if options.full else []) + (["--rebuild-index"] if options.rebuild_index else []) + (["--force"] if force else [])
        code, out, err = cli("recover", root, "--apply", "--quarantine", q, "--json", "--jobs", "1", *flags)
        assert code == 0, err
        doc = json.loads(out)
        assert [s["action"] for s in doc["applied"]] == [s.action for s in plan.steps]
        manifest = doc["manifest"] and Path(doc["manifest"])
    else:
        result = apply_kafka(plan, quarantine_root=q, force=force, jobs=1)
        assert [s.action for s in result.applied] == [s.action for s in plan.steps]
        assert not result.notes, result.notes
        manifest = result.manifest and Path(result.manifest)
    assert_clean(root, allowed=allowed)
    final = tree(root)
    check_quarantine(original, final, [manifest] if manifest else [])
    again = plan_kafka(root, options)
    assert not again.has_work, [s.to_dict() for s in again.steps]
    if manifest:
        if via_cli:
            assert cli("recover", "--undo", manifest)[0] == 0
        else:
            undo_manifest(manifest)
    assert tree(root) == original
    return plan, final


class Workdir:
    def __init__(self, base: Path) -> None:
        self.base = base

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.base))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """On tmpfs when there is one (every mutation is fsynced)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        base = Path(tempfile.mkdtemp(prefix="mqtool-recover-kafka-", dir=shm))
        yield Workdir(base)
        shutil.rmtree(base, ignore_errors=True)
    else:
        yield Workdir(tmp_path_factory.mktemp("work"))


def fixture_copy(work: Workdir, name: str = "case") -> tuple[Path, Path]:
    base = work.mktemp(name)
    shutil.copytree(FIXTURES / "kafka-logs", base / "kafka-logs")
    return base / "kafka-logs", base / "quarantine"


def cut_tail(path: Path, nbytes: int) -> None:
    os.truncate(path, path.stat().st_size - nbytes)


def patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def write_offsets(path: Path, table: dict) -> None:
    path.write_bytes(cpf.encode_offset_checkpoint(cpf.OffsetCheckpoint(tuple(cpf.TopicPartitionOffset(t, p, o) for (t, p), o in table.items()))))


def read_offsets(path: Path) -> dict:
    return cpf.decode_offset_checkpoint(path.read_bytes()).as_dict()


# --- 1. clean stores, plans, the CLI contract ------------------------------------------------------------------------


def test_bundled_log_dir_needs_nothing():
    for options in (RecoverOptions(), RecoverOptions(full=True)):
        plan = plan_kafka(FIXTURES / "kafka-logs", options)
        assert not plan.has_work, [s.to_dict() for s in plan.steps]
        assert plan.mode == ("full" if options.full else "recovery-point")
        leos = {p["directory"]: p["log_end_offset"] for p in plan.facts["partitions"]}
        assert leos["orders-0"] == 110 and leos["orders-1"] == 96 and leos["events-0"] == 65
        intervals = {p["directory"]: p["index_interval_bytes"] for p in plan.facts["partitions"]}
        assert intervals["orders-0"] == 512 and intervals["legacy-0"] == 128  # what the fixture was written with
    assert cli("recover", FIXTURES / "kafka-logs")[0] == 0
    # every index of the fixture is what LogSegment.recover builds, but the follower's (multi-batch appends)
    plan = plan_kafka(FIXTURES / "kafka-logs", RecoverOptions(full=True, rebuild_index=True))
    assert {s.path.split("/")[0] for s in plan.steps} == {"orders-1"}
    assert all(s.action == "rebuild-index" and "--rebuild-index" in s.reason for s in plan.steps)


def test_plan_json_exit_codes_and_flags(work):
    root, q = fixture_copy(work)
    seg = root / "orders-0" / "00000000000000000090.log"
    cut_tail(seg, 30)
    code, out, err = cli("recover", root, "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["layout"] == "kafka" and doc["has_work"] and doc["mode"] == "recovery-point"
    truncate = [s for s in doc["steps"] if s["action"] == "truncate"]
    [step] = truncate
    assert step["path"] == "orders-0/00000000000000000090.log"
    assert set(step["expect"]) == {"exists", "size", "mtime_ns", "crc32"}
    assert json.loads(cli("recover", root, "--json")[1]) == doc  # the same store, the same plan
    assert cli("recover", root, "--mode", "abnormal")[0] == 2  # no such option for Kafka
    assert cli("recover", root, "--rebuild-cq")[0] == 2
    assert cli("recover", seg)[0] == 3  # a segment file: recover takes a partition or log dir
    code, out, err = cli("recover", root, "--apply", "--quarantine", q, "--jobs", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["verified"] is True
    assert cli("recover", root)[0] == 0
    code, out, _ = cli("recover", root, "--apply", "--quarantine", q, "--json")
    assert code == 0 and json.loads(out)["applied"] == []


# --- 2. torn tails: the oracle -------------------------------------------------------------------------------------------


@PROPERTY
@given(data=st.data(), clean=st.booleans(), via_cli=st.booleans())
def test_torn_last_segment_recovers_like_kafka(work, data, clean, via_cli):
    """A crash in the middle of an append: the last segment ends in ``k`` bytes of a batch (or a
    zero-filled tail of the batch's length, as delayed allocation leaves it).  The recovered
    segment equals the one a broker that never appended that batch closes cleanly."""
    base = work.mktemp("torn")
    n = data.draw(st.integers(12, 40), label="batches")
    root = base / "logs"
    build(root, n, clean=clean)
    part = root / "t-0"
    last = segment_files(part)[-1]
    ends = batch_ends(last)
    assert ends
    keep = data.draw(st.integers(0, len(ends) - 1), label="batches kept in the last segment")
    pos, end, _ = ends[keep]
    cut_to = data.draw(st.integers(pos + 1, end - 1), label="bytes left of the torn batch")
    raw = last.read_bytes()
    zero_fill = data.draw(st.booleans(), label="zero fill")
    rest = raw[pos:cut_to] + (bytes(end - cut_to) if zero_fill else b"")
    last.write_bytes(raw[:pos] + rest)
    # the oracle: the batches wholly before the cut, written and closed cleanly
    dropped = len(ends) - keep
    oracle = base / "oracle"
    build(oracle, n - dropped, clean=True)
    plan, final = recover_and_check(root, base / "q", via_cli=via_cli)
    assert plan.records_dropped == 0 and not plan.needs_force
    assert plan.valid_end == (ends[keep - 1][2] + 1 if keep else int(last.name[:20]))
    expected = tree(oracle)
    for name in (last.name, last.name.replace(".log", ".index"), last.name.replace(".log", ".timeindex")):
        key = f"t-0/{name}"
        if key in expected:
            assert final[key] == expected[key], key
        else:  # the cut emptied a segment the oracle never rolled
            assert final[key] == b"", key
    # every batch before the cut is intact
    assert final[f"t-0/{last.name}"] == raw[:pos]
    # checkpoints: recovery point and high watermark at the new log end
    leo = plan.valid_end
    assert cpf.decode_offset_checkpoint(final["recovery-point-offset-checkpoint"]).as_dict()[("t", 0)] == leo
    assert cpf.decode_offset_checkpoint(final["replication-offset-checkpoint"]).as_dict()[("t", 0)] == leo


@pytest.mark.parametrize("partition", ["orders-0", "orders-1", "events-0", "legacy-0", "__consumer_offsets-0", "__cluster_metadata-0"])
def test_torn_tail_of_every_fixture_partition(work, partition):
    """The last batch of each partition's active segment is cut short: v2, a follower's
    multi-batch appends, compressed/transactional, v0/v1 + v2, compacted, the KRaft metadata log."""
    root, q = fixture_copy(work, partition)
    last = segment_files(root / partition)[-1]
    ends = batch_ends(last)
    raw = last.read_bytes()
    cut_tail(last, 7)
    plan, final = recover_and_check(root, q)
    assert final[f"{partition}/{last.name}"] == raw[: ends[-1][0]]
    [truncate] = [s for s in plan.steps if s.action == "truncate"]
    assert (truncate.path, truncate.position) == (f"{partition}/{last.name}", ends[-1][0])
    assert plan.records_dropped == 0
    facts = {p["directory"]: p for p in plan.facts["partitions"]}
    assert facts[partition]["log_end_offset"] == ends[-2][2] + 1


def test_leader_epoch_starting_in_the_cut_batch_is_dropped(work):
    """The cut removes the batch that started epoch 5: the entry goes (``truncateFromEnd``)."""
    root, q = fixture_copy(work)
    part = root / "orders-0"
    epochs = cpf.decode_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes()).entries
    latest = epochs[-1]
    for seg in segment_files(part):
        for pos, end, last in batch_ends(seg):
            with ReadOnlyFile(seg) as f:
                base = int.from_bytes(f.pread(pos, 8), "big")
            if base == latest.start_offset:
                victim, at = seg, pos
    os.truncate(victim, at + 20)
    plan, final = recover_and_check(root, q, force=True, options=RecoverOptions(full=True))
    new = cpf.decode_leader_epoch_checkpoint(final["orders-0/leader-epoch-checkpoint"]).entries
    assert new == epochs[:-1]
    assert any(s.action == "write-leader-epochs" for s in plan.steps)


# --- 3. broken batches, later segments, --full ------------------------------------------------------------------------


def test_broken_batch_in_the_middle_needs_force(work):
    """One flipped byte in a batch of the active segment: the broker truncates there and drops the
    valid batches after it; the plan counts them and needs --force."""
    root, q = fixture_copy(work)
    last = root / "orders-0" / "00000000000000000090.log"
    ends = batch_ends(last)
    victim = ends[2]
    patch(last, victim[0] + 40, b"\xff")
    plan = plan_kafka(root)
    [step] = [s for s in plan.steps if s.action == "truncate"]
    assert step.position == victim[0] and step.length == last.stat().st_size - victim[0]
    dropped = sum(e.header.records_count for _p, e in ks.LogFileWalk(ReadOnlyFile(last), victim[1], mode="header"))
    assert plan.records_dropped == dropped > 0 and plan.needs_force
    with pytest.raises(PlanChangedError, match="--force"):
        apply_kafka(plan, quarantine_root=q, jobs=1)
    code, _, err = cli("recover", root, "--apply", "--quarantine", q)
    assert code == 1 and "--force" in err
    recover_and_check(root, q, force=True, via_cli=True)


def test_damage_in_a_segment_after_the_recovery_point_deletes_later_segments(work):
    """The recovery point of orders-1 is in segment 24; a CRC error in segment 48: the broker
    truncates 48 and deletes 72 (newest first, before the cut); the recovery point follows."""
    root, q = fixture_copy(work)
    table = read_offsets(root / "recovery-point-offset-checkpoint")
    table[("orders", 1)] = 30
    write_offsets(root / "recovery-point-offset-checkpoint", table)
    part = root / "orders-1"
    seg48 = part / "00000000000000000048.log"
    ends = batch_ends(seg48)
    patch(seg48, ends[4][0] + 30, b"\x00\x01")
    plan = plan_kafka(root)
    actions = [(s.action, s.path) for s in plan.steps]
    deletes = [p for a, p in actions if a == "delete"]
    assert deletes[:3] == ["orders-1/00000000000000000072.log", "orders-1/00000000000000000072.index", "orders-1/00000000000000000072.timeindex"]
    assert actions.index(("truncate", "orders-1/00000000000000000048.log")) > actions.index(("delete", "orders-1/00000000000000000072.log"))
    assert "orders-1/00000000000000000072.snapshot" in deletes and "orders-1/00000000000000000096.snapshot" in deletes
    assert plan.needs_force and plan.records_dropped > 0
    _, final = recover_and_check(root, q, force=True)
    assert read_offsets_bytes(final["recovery-point-offset-checkpoint"])[("orders", 1)] == ends[3][2] + 1
    assert not any(k.startswith("orders-1/00000000000000000072") for k in final)


def read_offsets_bytes(data: bytes) -> dict:
    return cpf.decode_offset_checkpoint(data).as_dict()


def test_damage_before_the_recovery_point_needs_full(work):
    """A CRC error in a rolled segment below the recovery point: the broker does not look there;
    recover's default plan leaves it (the verification says so), --full recovers it."""
    root, q = fixture_copy(work)
    seg = root / "orders-0" / "00000000000000000030.log"
    patch(seg, batch_ends(seg)[3][0] + 50, b"\x99")
    plan = plan_kafka(root)
    assert not plan.has_work
    assert any("recovered from their recovery points" in n and "--full" in n for n in plan.notes)  # said, not silent
    plan = plan_kafka(root, RecoverOptions(full=True))
    assert plan.needs_force
    assert {s.path for s in plan.steps if s.action == "delete"} >= {"orders-0/00000000000000000060.log", "orders-0/00000000000000000090.log"}
    recover_and_check(root, q, options=RecoverOptions(full=True), force=True, via_cli=True)


def test_a_segment_the_broker_would_split_leaves_its_partition_alone(work):
    """baseOffset is outside the CRC: a batch claiming offsets below its segment's base passes the
    CRC, and the broker splits the segment (LogSegmentOffsetOverflowException).  mqtool does not
    split, so it must not act on the partition at all: lowering the recovery point and high
    watermark to the batches before it, or deleting the producer snapshot, disowns kept data."""
    root, q = fixture_copy(work)
    seg = root / "orders-0" / "00000000000000000090.log"
    patch(seg, 446, (80).to_bytes(8, "big"))  # the batch 93..95 now says 80..82
    before = tree(root)
    plan = plan_kafka(root)
    orders = next(p for p in plan.facts["partitions"] if p["directory"] == "orders-0")
    assert orders["left_alone"] == "overflow" and orders["log_end_offset"] is None
    assert not [s for s in plan.steps if "orders-0" in s.path or "orders 0" in json.dumps(s.details)]
    assert plan.facts["unrepaired"] == ["orders-0/00000000000000000090.log"]
    assert any("leaves the partition as it is" in n for n in plan.notes)
    code, _out, err = cli("recover", root)
    assert code == 1 and "nothing to recover" in _out + err
    code, _out, _err = cli("recover", root, "--apply", "--quarantine", q)
    assert code == 1 and tree(root) == before


def test_dropped_records_of_compressed_v0_v1_wrappers_are_their_inner_messages(work):
    root, _q = fixture_copy(work)
    log = root / "legacy-0" / "00000000000000000000.log"
    with ReadOnlyFile(log) as f:
        entries = list(ks.LogFileWalk(f, mode="full"))
    assert any(e.header.is_compressed for _p, e in entries)  # the fixture holds wrappers
    for k in (1, 3):  # break the k-th message's CRC: every valid record after it is dropped
        shutil.copyfile(FIXTURES / "kafka-logs" / "legacy-0" / log.name, log)
        pos, broken = entries[k]
        patch(log, pos + 12, bytes(4))
        after = sum(len(e.records) for _p, e in entries[k + 1 :])
        plan = plan_kafka(root)
        assert after > len(entries) - k - 1  # more records than wrappers
        assert plan.records_dropped == after and plan.needs_force


def test_zero_tail_preallocated_segment(work):
    """log.preallocate=true after a crash: zeros after the last batch are read as a batch of size 0."""
    root, q = fixture_copy(work)
    last = root / "events-0" / "00000000000000000053.log"
    size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(bytes(4096))
    plan, final = recover_and_check(root, q)
    [step] = [s for s in plan.steps if s.action == "truncate"]
    assert (step.position, step.length) == (size, 4096) and plan.records_dropped == 0
    assert final["events-0/00000000000000000053.log"] == (FIXTURES / "kafka-logs/events-0/00000000000000000053.log").read_bytes()


def test_offsets_going_backwards_at_an_index_point_empty_the_segment(work):
    """``InvalidOffsetException`` during recovery: the broker empties the segment ("Deleting the
    corrupt segment and creating an empty one") and deletes the later ones."""
    root = work.mktemp("invalid") / "logs"
    w = LogDirWriter(root)
    p = w.partition("t", 0, PartitionConfig(segment_bytes=100_000, index_interval_bytes=256))
    for i in range(12):
        p.append(rb.build_batch(records(i, 2), base_timestamp=T0 + i))
    w.close(clean=True)
    log = segment_files(root / "t-0")[0]
    ends = batch_ends(log)
    idx_positions = [e.position for e in kidx.decode_offset_index((root / "t-0" / log.name.replace(".log", ".index")).read_bytes()).entries]
    assert len(idx_positions) >= 2
    # rewrite the batch at the second index point with a base offset below the first entry's
    pos = idx_positions[1]
    k = next(i for i, e in enumerate(ends) if e[0] == pos)
    raw = bytearray(log.read_bytes())
    batch = rb.build_batch(records(k, 1 + 0), base_offset=0, base_timestamp=T0 + k)
    enc = rb.encode_batch(batch)
    assert len(enc) <= ends[k][1] - ends[k][0]
    # keep sizes: pad with one record sized to fit exactly
    size = ends[k][1] - ends[k][0]
    value = b"x"
    while len(rb.encode_batch(rb.build_batch([rb.Record(key=b"k", value=value)], base_offset=0, base_timestamp=T0))) < size:
        value += b"x"
    enc = rb.encode_batch(rb.build_batch([rb.Record(key=b"k", value=value)], base_offset=0, base_timestamp=T0))
    assert len(enc) == size
    raw[pos : pos + size] = enc
    log.write_bytes(bytes(raw))
    plan = plan_kafka(root, RecoverOptions(full=True))
    [step] = [s for s in plan.steps if s.action == "truncate"]
    assert (step.position, step.length) == (0, len(raw)) and "InvalidOffsetException" in step.reason
    with ReadOnlyFile(log) as f:
        valid = sum(e.header.records_count for _p, e in ks.LogFileWalk(f, 0, mode="header"))
    assert plan.needs_force and plan.records_dropped == valid == 23
    recover_and_check(root, root.parent / "q", options=RecoverOptions(full=True), force=True)


def test_log_end_below_log_start_restarts_the_log(work):
    """The log start offset checkpoint is past the log end (a torn tail cut below it): the broker
    deletes every segment and creates an empty one at the log start offset."""
    root, q = fixture_copy(work)
    table = read_offsets(root / "log-start-offset-checkpoint")
    table[("legacy", 0)] = 20
    write_offsets(root / "log-start-offset-checkpoint", table)
    plan = plan_kafka(root)
    assert plan.needs_force
    assert [s.action for s in plan.steps if s.path.startswith("legacy-0/")][-1] == "create-segment"
    _, final = recover_and_check(root, q, force=True, allowed=ALLOWED_WARNINGS)
    assert final["legacy-0/00000000000000000020.log"] == b""
    assert not [k for k in final if k.startswith("legacy-0/00000000000000000000")]
    assert read_offsets_bytes(final["recovery-point-offset-checkpoint"])[("legacy", 0)] == 20


# --- 4. indexes ------------------------------------------------------------------------------------------------------


def test_unclean_shutdown_preallocated_indexes_are_trimmed(work):
    """A broker killed with its active segment's indexes pre-allocated (zero tails): recovery
    rebuilds (trims) them, exactly as a clean close leaves them."""
    base = work.mktemp("unclean")
    build(base / "crashed", 30, clean=False)
    build(base / "oracle", 30, clean=True)
    plan, final = recover_and_check(base / "crashed", base / "q")
    assert [s.action for s in plan.steps] == ["rebuild-index"]
    oracle = tree(base / "oracle")
    for key, value in oracle.items():
        if key.endswith((".index", ".timeindex", ".log")):
            assert final[key] == value, key


def test_missing_and_inconsistent_indexes(work):
    """A non-empty .log without .index (recovered wherever it is, as at load), a rolled segment's
    .timeindex whose entry lies, an orphaned .index: rebuilt / deleted."""
    root, q = fixture_copy(work)
    part = root / "orders-0"
    (part / "00000000000000000030.index").unlink()
    ti = part / "00000000000000000060.timeindex"
    patch(ti, 0, (1).to_bytes(8, "big"))
    (part / "00000000000000000999.index").write_bytes(bytes(16))
    plan = plan_kafka(root, RecoverOptions(full=True))
    paths = {(s.action, s.path) for s in plan.steps}
    assert ("delete", "orders-0/00000000000000000999.index") in paths
    assert ("rebuild-index", "orders-0/00000000000000000030.log") in paths
    assert ("rebuild-index", "orders-0/00000000000000000060.log") in paths
    _, final = recover_and_check(root, q, options=RecoverOptions(full=True))
    for name in ("00000000000000000030.index", "00000000000000000060.timeindex"):
        assert final[f"orders-0/{name}"] == (FIXTURES / "kafka-logs/orders-0" / name).read_bytes()


def test_txnindex_rebuilt_from_the_producer_state(work):
    """The .txnindex of events-0's first segment is lost: --full rebuilds it from the ABORT marker,
    the transaction's first offset and the last stable offset, byte for byte."""
    root, q = fixture_copy(work)
    txn = root / "events-0" / "00000000000000000000.txnindex"
    original = txn.read_bytes()
    txn.unlink()
    assert any(f.code == "KAFKA-TXNINDEX-MISSING" for f in validate(root).findings)
    plan = plan_kafka(root)
    assert not plan.has_work  # below the recovery point: the broker does not look there
    _, final = recover_and_check(root, q, options=RecoverOptions(full=True))
    assert final["events-0/00000000000000000000.txnindex"] == original
    entries = ktxn.decode_txn_index(original).entries
    assert len(entries) == 1 and entries[0].first_offset < entries[0].last_offset


def test_txnindex_first_offset_from_a_snapshot(work):
    """A transaction open across a roll: its first offset is in an earlier segment; the rebuild of
    the later segment takes it from the producer snapshot at the segment's base."""
    root = work.mktemp("txsnap") / "logs"
    w = LogDirWriter(root)
    p = w.partition("tx", 0, PartitionConfig(segment_bytes=600, index_interval_bytes=100))
    for i in range(4):
        p.append(rb.build_batch(records(i, 2), base_timestamp=T0 + i))
    p.append(rb.build_batch(records(9, 1), base_timestamp=T0 + 9, producer_id=77, producer_epoch=0, base_sequence=0, is_transactional=True))
    for i in range(5, 9):
        p.append(rb.build_batch(records(i, 2), base_timestamp=T0 + i, producer_id=88, producer_epoch=0, base_sequence=2 * (i - 5), is_transactional=True))
    marker = rb.control_record(rb.ABORT, rb.EndTransactionMarker(0, 3))
    p.append(rb.build_batch([marker], base_timestamp=T0 + 20, producer_id=77, producer_epoch=0, is_transactional=True, is_control=True))
    w.close(clean=True)
    part = root / "tx-0"
    txns = sorted(part.glob("*.txnindex"))
    assert len(txns) == 1 and txns[0].name != "00000000000000000000.txnindex"
    original = txns[0].read_bytes()
    [entry] = ktxn.decode_txn_index(original).entries
    assert entry.first_offset < int(txns[0].name[:20])  # opened in an earlier segment
    assert entry.last_stable_offset != entry.last_offset + 1  # producer 88's transaction is still open
    txns[0].unlink()
    _, final = recover_and_check(root, root.parent / "q", options=RecoverOptions(full=False))
    assert final[f"tx-0/{txns[0].name}"] == original


# --- 5. leftovers of interrupted operations ---------------------------------------------------------------------------------


def test_deleted_cleaned_tmp_and_kraft_leftovers(work):
    root, q = fixture_copy(work)
    (root / "orders-0" / "00000000000000000000.log.deleted").write_bytes(b"old segment")
    (root / "orders-0" / "00000000000000000000.index.deleted").write_bytes(bytes(8))
    (root / "orders-1" / "00000000000000000024.log.cleaned").write_bytes(b"cleaner output")
    (root / "orders-1" / "00000000000000000048.log.swap").write_bytes(b"a split past the .cleaned offset")
    (root / "recovery-point-offset-checkpoint.tmp").write_bytes(b"0\n")
    (root / "events-0" / "leader-epoch-checkpoint.tmp").write_bytes(b"0\n")
    (root / "__cluster_metadata-0" / "00000000000000000009-0000000001.checkpoint.part").write_bytes(b"partial")
    (root / "__cluster_metadata-0" / "00000000000000000002-0000000001.checkpoint.deleted").write_bytes(b"old")
    assert any(f.code == "KAFKA-FILE-LEFTOVER" for f in validate(root).findings)
    plan, final = recover_and_check(root, q)
    assert {s.action for s in plan.steps} == {"delete"}
    assert len(plan.steps) == 8
    assert not [k for k in final if k.endswith((".deleted", ".cleaned", ".swap", ".tmp", ".part"))]


def test_interrupted_swap_is_completed(work):
    """The log cleaner merged segments 0 and 30 of orders-0 into ``0.log.swap`` and crashed before
    the swap: the old files in [0, 60) go (their snapshot too), the swap is renamed into place;
    its indexes (no .swap written) are rebuilt."""
    root, q = fixture_copy(work)
    part = root / "orders-0"
    merged = (part / "00000000000000000000.log").read_bytes() + (part / "00000000000000000030.log").read_bytes()
    (part / "00000000000000000000.log.swap").write_bytes(merged)
    plan = plan_kafka(root)
    acts = [(s.action, s.path) for s in plan.steps]
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000030.log", "00000000000000000030.snapshot"):
        assert ("delete", f"orders-0/{name}") in acts
    assert ("rename-swap", "orders-0/00000000000000000000.log.swap") in acts
    # the swapped segment holds offsets 0..59 and is a rolled segment (indexes missing: recovered)
    assert ("rebuild-index", "orders-0/00000000000000000000.log.swap") in acts
    _, final = recover_and_check(root, q)
    assert final["orders-0/00000000000000000000.log"] == merged
    assert "orders-0/00000000000000000030.log" not in final


def test_swap_with_its_index_swaps(work):
    root, q = fixture_copy(work)
    part = root / "orders-1"
    for kind in ("log", "index", "timeindex"):
        shutil.copy(part / f"00000000000000000024.{kind}", part / f"00000000000000000024.{kind}.swap")
    plan = plan_kafka(root)
    renames = [s.path for s in plan.steps if s.action == "rename-swap"]
    assert renames == [f"orders-1/00000000000000000024.{k}.swap" for k in ("log", "index", "timeindex")]
    recover_and_check(root, q)


# --- 6. crash safety: kill -9 at mutation after mutation ---------------------------------------------------------------------


def damage(root: Path) -> None:
    """Every kind of damage recover handles, in one log dir (a copy of the fixture)."""
    shutil.copytree(FIXTURES / "kafka-logs", root)
    cut_tail(root / "orders-0" / "00000000000000000090.log", 50)  # torn tail
    table = read_offsets(root / "recovery-point-offset-checkpoint")
    table[("orders", 1)] = 30
    write_offsets(root / "recovery-point-offset-checkpoint", table)
    seg48 = root / "orders-1" / "00000000000000000048.log"
    patch(seg48, batch_ends(seg48)[4][0] + 30, b"\x00\x01")  # CRC error: later segment deleted
    with open(root / "events-0" / "00000000000000000053.log", "ab") as f:
        f.write(bytes(3000))  # zero tail
    with open(root / "__transaction_state-0" / "00000000000000000000.index", "ab") as f:
        f.write(bytes(4096))  # a pre-allocated index
    (root / "legacy-0" / "00000000000000000000.log.deleted").write_bytes(b"gone")
    (root / "legacy-0" / "00000000000000000000.timeindex.cleaned").write_bytes(b"cleaner")
    (root / "replication-offset-checkpoint.tmp").write_bytes(b"0\n0\n")
    (root / ".kafka_cleanshutdown").unlink()


def _rerun(store: Path, q: Path):
    return apply_kafka(plan_kafka(store), quarantine_root=q, force=True, jobs=1)


@pytest.fixture(scope="module")
def crash_case(work):
    base = work.mktemp("crash")
    damaged = base / "damaged"
    damage(damaged)
    plan = plan_kafka(damaged)
    actions = {s.action for s in plan.steps}
    assert {"truncate", "delete", "rebuild-index", "write-checkpoint"} <= actions
    case = make_case(base, damaged, _rerun, "--force")
    assert_clean(base / "reference")
    return case


def test_kill_at_mutation_after_mutation_then_rerun(work, crash_case, monkeypatch):
    """SIGKILL at 30+ mutations of the real command: a rerun gives the uninterrupted run's store,
    validate is clean, and the quarantines of both runs together hold every byte that went."""
    monkeypatch.delenv("MQTOOL_FAULT_INJECT", raising=False)
    case = crash_case
    assert case.mutations >= 30
    points = kill_points(case.mutations)
    assert len(points) >= 30
    kill_at(work.mktemp("kills"), case, points, _rerun)


@pytest.mark.parametrize("kind,text", IO_FAULTS)
def test_io_error_at_mutation_after_mutation_then_rerun(work, crash_case, monkeypatch, kind, text):
    """An I/O error at mutation 1, 2, ...: a one-line error (exit 3 through the CLI); the store is
    untouched at the first mutation and a plain rerun finishes the job, to the same store."""
    io_error_at(work.mktemp(kind), crash_case, kill_points(crash_case.mutations, most=40), kind, text, _rerun, monkeypatch, cli_every=7)


def test_undo_restores_byte_for_byte(work, crash_case):
    check_undo(work.mktemp("undo"), crash_case)


# --- 7. locks, saved plans, partitions ------------------------------------------------------------------------------------


def test_locks_exit_75(work):
    """mqtool's own lock held: exit 75, nothing touched.  The broker's .lock held (an fcntl lock,
    as Kafka's FileChannel.tryLock takes it): refused (5) unless --force."""
    root, q = fixture_copy(work)
    cut_tail(root / "orders-0" / "00000000000000000090.log", 5)
    before = tree(root)
    with ExclusiveLock(root):
        code, _, err = cli("recover", root, "--apply", "--quarantine", q)
        assert code == 75 and "another mqtool run holds the lock" in err
        assert cli("recover", root)[0] == 1  # planning needs no lock
        with pytest.raises(LockBusyError):
            apply_kafka(plan_kafka(root), quarantine_root=q)
    assert tree(root) == before and not q.exists()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", str(root / ".lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, _, err = cli("recover", root, "--apply", "--quarantine", q)
        assert code == 5 and "broker" in err and f"pid {holder.pid}" in err  # running, not busy (issue 19)
        assert tree(root) == before
        code, _, err = cli("recover", root, "--apply", "--force", "--quarantine", q, "--jobs", "1")
        assert code == 0, err
    finally:
        holder.kill()
        holder.wait()
    # the run removes its lock file when it ends; while a run holds it, validate does not report
    # it as a stray file
    assert not (root / MQTOOL_LOCK_NAME).exists()
    (root / MQTOOL_LOCK_NAME).write_text("1\n")
    assert not [f for f in validate(root).findings if f.code == "KAFKA-FILE-NAME"]


def test_from_plan_and_a_changed_store(work):
    root, q = fixture_copy(work)
    seg = root / "orders-0" / "00000000000000000090.log"
    cut_tail(seg, 9)
    plan_file = root.parent / "plan.json"
    assert cli("recover", root, "--plan-out", plan_file)[0] == 1
    with open(seg, "ab") as f:
        f.write(b"\x02")
    before = tree(root)
    code, _, err = cli("recover", "--from-plan", plan_file, "--apply", "--quarantine", q)
    assert code == 1 and "changed since the plan" in err and len(err.strip().splitlines()) == 1
    assert tree(root) == before and not q.exists()
    assert cli("recover", root, "--plan-out", plan_file)[0] == 1
    code, _out, err = cli("recover", "--from-plan", plan_file, "--apply", "--quarantine", q, "--json", "--jobs", "1")
    assert code == 0, err
    assert_clean(root)


def test_partition_path_recovers_that_partition_only(work):
    """recover on one partition dir: only its files change (and its checkpoint entries); the lock
    and the default quarantine are beside / outside the log dir (a directory in the log dir that
    is not topic-partition takes the whole log dir offline)."""
    root, _ = fixture_copy(work)
    cut_tail(root / "orders-0" / "00000000000000000090.log", 11)
    cut_tail(root / "orders-1" / "00000000000000000072.log", 11)
    before = tree(root)
    code, out, err = cli("recover", root / "orders-0", "--apply", "--json", "--jobs", "1")
    assert code == 0, err
    doc = json.loads(out)
    manifest = Path(doc["manifest"])
    assert manifest.parent.parent == root.parent / "mqtool-quarantine"
    after = tree(root)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert {k.split("/")[0] for k in changed} <= {"orders-0", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"}
    rp = read_offsets_bytes(after["recovery-point-offset-checkpoint"])
    assert rp[("orders", 1)] == 96 and rp[("orders", 0)] < 110
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == sorted(p.name for p in (FIXTURES / "kafka-logs").iterdir() if p.is_dir())
    assert not problems(root / "orders-0")


def test_delete_dir_is_left_alone(work):
    root, _q = fixture_copy(work)
    doomed = root / f"orders-0.{'ab' * 16}-delete"
    shutil.copytree(root / "orders-0", doomed)
    cut_tail(doomed / "00000000000000000090.log", 5)
    plan = plan_kafka(root)
    assert not plan.has_work and any("-delete" in n for n in plan.notes)


# --- 8. a real broker's log dir --------------------------------------------------------------------------------------------


def _writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dst


def _expected_indexes(log: bytes, base: int, interval: int = 4096) -> tuple[bytes, bytes]:
    """LogSegment.recover's indexes, computed here from the batch headers (no mqtool code)."""
    pos, last_index, max_ts, off_max = 0, 0, -1, -1
    index, times = [], []
    while pos + 61 <= len(log):
        size = 12 + int.from_bytes(log[pos + 8 : pos + 12], "big")
        base_offset = int.from_bytes(log[pos : pos + 8], "big")
        last = base_offset + int.from_bytes(log[pos + 23 : pos + 27], "big")
        ts = int.from_bytes(log[pos + 35 : pos + 43], "big", signed=True)
        if ts > max_ts:
            max_ts, off_max = ts, last
        if pos - last_index > interval:
            index.append(kidx.OffsetPosition(last, pos))
            if max_ts > (times[-1].timestamp if times else -1):
                times.append(kidx.TimestampOffset(max_ts, off_max))
            last_index = pos
        pos += size
    if max_ts > (times[-1].timestamp if times else -1):
        times.append(kidx.TimestampOffset(max_ts, off_max))
    return kidx.encode_offset_index(index, base), kidx.encode_time_index(times, base)


@pytest.mark.parametrize(
    "capture,partition",
    [
        ("DonaldY-kafka-2.7.1/kafka-logs", "__consumer_offsets-33"),  # three batches in one segment
        ("DonaldY-kafka-2.7.1/kafka-logs", "__consumer_offsets-39"),  # the last of two segments holds one batch
        ("Jeong-Rae-KafkaDemo/kraft-combined-logs", "__cluster_metadata-0"),  # 221 KB of KRaft metadata batches
    ],
)
def test_real_log_dir_with_its_last_segment_cut(work, capture, partition):
    """A copy of a real broker's log dir, the last segment of a partition cut in the middle of its
    last batch: recover truncates it at the last whole batch and builds its indexes (the capture
    has none for active segments) exactly as LogSegment.recover does; validate is clean."""
    src = real_path("kafka", *capture.split("/"))
    base = work.mktemp("real")
    root = _writable_copy(src, base / "logs")
    part = root / partition
    last = segment_files(part)[-1]
    raw = last.read_bytes()
    ends = batch_ends(last)
    assert ends and ends[-1][1] == len(raw)
    cut = ends[-1][0] + (ends[-1][1] - ends[-1][0]) // 2
    last.write_bytes(raw[:cut])
    plan = plan_kafka(root)
    [step] = [s for s in plan.steps if s.action == "truncate"]
    assert (step.path, step.position, step.length) == (f"{partition}/{last.name}", ends[-1][0], cut - ends[-1][0])
    assert plan.records_dropped == 0 and not plan.needs_force
    result = apply_kafka(plan, quarantine_root=base / "q", jobs=1)
    assert not result.verification.failed, [f.to_dict() for f in result.verification.findings if f.level.name == "error"]
    kept = raw[: ends[-1][0]]
    assert last.read_bytes() == kept
    want_index, want_time = _expected_indexes(kept, int(last.name[:20]))
    for kind, want in (("index", want_index), ("timeindex", want_time)):
        path = part / last.name.replace(".log", f".{kind}")
        if kept:
            assert path.read_bytes() == want, kind
        else:  # the segment is empty now: nothing to index, an absent file says as much as an empty one
            assert not path.exists() or path.read_bytes() == b"", kind
    assert_clean(root, allowed=ALLOWED_WARNINGS | {"KAFKA-LEADER-EPOCH-LOG"})
    assert not plan_kafka(root).has_work
    undo_manifest(Path(result.manifest))
