"""clean for Kafka: ``UnifiedLog.deleteOldSegments`` rule by rule, Kafka's ``.deleted`` two-step,
the checkpoints the broker updates, and safe under cron (lock, kill -9, ENOSPC, symlinks)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.cli.exit_codes import ExitCode
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import legacy as klegacy
from mqtool.formats.kafka import record_batch as rb
from mqtool.ops.clean.kafka import DEFAULT_RETENTION_MS, CleanOptions, apply_custom, plan_clean_kafka
from mqtool.ops.recover import apply_plan
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.kafka import validate_kafka
from mqtool.store import kafka as ks
from mqtool.store.kafka_writer import LogDirWriter, PartitionConfig
from mqtool.store.lock import ExclusiveLock
from tests.conftest import FIXTURES, PROJECT_ROOT
from tests.ops.crashkit import count_mutations

HOUR = 3_600_000
T0 = 1_700_000_000_000
CONFIG = PartitionConfig(segment_bytes=1200, index_interval_bytes=256)
FIXTURE_NOW = 1_700_000_000_000  # the bundled fixture's clock: nothing is older than 7 days
LATER = T0 + 30 * 24 * HOUR  # everything in the fixture is older than 7 days


def build(root: Path, batches: int = 40, *, step_ms: int = HOUR, topic: str = "t", partition: int = 0, clean: bool = True) -> Path:
    """A log dir with one partition of single-batch appends, batch ``i`` at ``T0 + i * step_ms``."""
    w = LogDirWriter(root, meta=cpf.MetaProperties(1, node_id=1, cluster_id="c", directory_id=cpf.encode_kafka_uuid(bytes(range(16)))))
    p = w.partition(topic, partition, CONFIG)
    for i in range(batches):
        if i == 5:
            p.leader_epoch = 2
        recs = [rb.Record(offset_delta=j, key=f"k{i}".encode(), value=b"v" * 40) for j in range(1 + i % 2)]
        p.append(rb.build_batch(recs, base_timestamp=T0 + i * step_ms))
    w.close(clean=clean)
    return root / f"{topic}-{partition}"


def segments(part: Path) -> list[ks.KafkaSegment]:
    return ks.list_partition(part).log_segments()


def largest_ts(seg: ks.KafkaSegment) -> int:
    return ks.last_time_entry(seg.timeindex, seg.base_offset).timestamp


def removed_logs(plan) -> list[str]:
    return [s.path for s in plan.steps if s.action == "remove" and s.path.endswith(".log.deleted")]


def tree(root: Path) -> dict:
    out = {}
    for p in sorted(Path(root).rglob("*")):  # the lock file included: a run leaves none behind
        out[p.relative_to(root).as_posix()] = "<dir>" if p.is_dir() else p.read_bytes()
    return out


def apply(plan) -> None:
    apply_plan(plan, custom=apply_custom, command="clean", broker_lock=".lock")


def assert_clean(root: Path) -> None:
    report = validate_kafka(root, ValidateOptions(jobs=1))
    bad = [f"{f.code} {f.path}: {f.message}" for f in report.findings if f.level.name in ("error", "warning") and f.code != "KAFKA-UNCLEAN-SHUTDOWN"]
    assert not bad, "\n".join(bad)


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def read_offsets(path: Path) -> dict:
    return cpf.decode_offset_checkpoint(path.read_bytes()).as_dict()


def write_offsets(path: Path, table: dict) -> None:
    path.write_bytes(cpf.encode_offset_checkpoint(cpf.OffsetCheckpoint(tuple(cpf.TopicPartitionOffset(t, p, o) for (t, p), o in table.items()))))


@pytest.fixture
def work():
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="mqtool-clean-kafka-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def fixture_copy(work: Path) -> Path:
    shutil.copytree(FIXTURES / "kafka-logs", work / "kafka-logs")
    return work / "kafka-logs"


# --- the rules -----------------------------------------------------------------------------------------------


def test_time_rule_with_the_upstream_default_is_a_prefix(work):
    part = build(work / "logs", 60)
    segs = segments(part)
    assert len(segs) >= 6
    now = largest_ts(segs[3]) + DEFAULT_RETENTION_MS + 1  # segments 0..3 are past 7 days
    plan = plan_clean_kafka(work / "logs", CleanOptions(), now_ms=now)
    assert plan.facts["retention_ms"] == 7 * 24 * HOUR and plan.facts["retention_bytes"] == -1
    assert removed_logs(plan) == [f"t-0/{s.log.name}.deleted" for s in segs[:4]]
    # Kafka's deletion: each file renamed .deleted, then removed
    first = [(s.action, s.path) for s in plan.steps if s.path.startswith(f"t-0/{segs[0].log.name[:20]}")]
    assert first[:2] == [("rename", f"t-0/{segs[0].log.name}"), ("remove", f"t-0/{segs[0].log.name}.deleted")]
    assert {p for a, p in first if a == "rename"} == {f"t-0/{segs[0].log.name[:20]}.{k}" for k in ("log", "index", "timeindex")}
    # the leader-epoch checkpoint is truncated at the new log start offset, before any deletion
    actions = [s.action for s in plan.steps]
    assert actions.index("write-leader-epochs") < actions.index("rename")
    old_epochs = cpf.decode_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes()).entries
    apply(plan)
    remaining = segments(part)
    assert [s.base_offset for s in remaining] == [s.base_offset for s in segs[4:]]
    assert not list(part.glob("*.deleted"))
    epochs = cpf.decode_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes()).entries
    # truncateFromStart: the latest epoch starting at or below the new log start offset now starts there
    assert old_epochs == (cpf.EpochEntry(0, 0), cpf.EpochEntry(2, 7))
    assert epochs == (cpf.EpochEntry(2, segs[4].base_offset),)
    # snapshots at the deleted segments' base offsets went with them
    assert not [p for p in part.glob("*.snapshot") if int(p.name[:20]) <= segs[3].base_offset]
    assert_clean(work / "logs")
    assert not plan_clean_kafka(work / "logs", CleanOptions(), now_ms=now).has_work


def test_the_rule_stops_at_the_first_segment_it_spares(work):
    part = build(work / "logs", 60)
    segs = segments(part)
    # segment 1 got a newer timestamp (a late producer): 2, 3... are not deleted either
    now = largest_ts(segs[3]) + DEFAULT_RETENTION_MS + 1
    ti = segs[1].timeindex
    data = bytearray(ti.read_bytes())
    data[-12:-4] = (now - 1000).to_bytes(8, "big")
    ti.write_bytes(bytes(data))
    plan = plan_clean_kafka(work / "logs", CleanOptions(), now_ms=now)
    assert removed_logs(plan) == [f"t-0/{segs[0].log.name}.deleted"]


def test_size_rule(work):
    part = build(work / "logs", 60)
    segs = segments(part)
    total = sum(s.log_size for s in segs)
    keep = total - segs[0].log_size - segs[1].log_size - 1  # the excess covers two segments, not three
    plan = plan_clean_kafka(work / "logs", CleanOptions(retention_ms=-1, retention_bytes=keep), now_ms=T0)
    assert removed_logs(plan) == [f"t-0/{s.log.name}.deleted" for s in segs[:2]]
    plan = plan_clean_kafka(work / "logs", CleanOptions(retention_ms=-1, retention_bytes=total), now_ms=T0)
    assert not plan.has_work  # size >= retention.bytes, but the excess (0) covers no segment
    plan = plan_clean_kafka(work / "logs", CleanOptions(retention_ms=-1, retention_bytes=total + 1), now_ms=T0)
    assert not plan.has_work
    # size then time: the time rule continues where the size rule stopped
    now = largest_ts(segs[3]) + 10 * HOUR + 1
    plan = plan_clean_kafka(work / "logs", CleanOptions(retention_ms=10 * HOUR, retention_bytes=total - segs[0].log_size), now_ms=now)
    assert removed_logs(plan) == [f"t-0/{s.log.name}.deleted" for s in segs[:4]]
    assert "retention.bytes" in next(s.reason for s in plan.steps if s.path.startswith(f"t-0/{segs[0].log.name}"))
    assert "retention.ms" in next(s.reason for s in plan.steps if s.path.startswith(f"t-0/{segs[1].log.name}"))


def test_log_start_offset_rule_also_for_compacted_topics(work):
    """DeleteRecords moved the log start offset: segments wholly below it go, also from the
    compacted ``__consumer_offsets`` (whose time and size rules do not apply)."""
    root = fixture_copy(work)
    table = read_offsets(root / "log-start-offset-checkpoint")
    table[("__consumer_offsets", 0)] = 15
    table[("orders", 0)] = 61
    write_offsets(root / "log-start-offset-checkpoint", table)
    plan = plan_clean_kafka(root, CleanOptions(), now_ms=LATER)
    gone = removed_logs(plan)
    assert "__consumer_offsets-0/00000000000000000000.log.deleted" in gone
    assert not [p for p in gone if p.startswith("__consumer_offsets-0/00000000000000000012")]
    assert not [p for p in gone if p.startswith(("__transaction_state", "__cluster_metadata"))]
    reason = next(s.reason for s in plan.steps if s.path == "orders-0/00000000000000000000.log")
    assert "log start offset" in reason
    apply(plan)
    lso = read_offsets(root / "log-start-offset-checkpoint")
    assert lso[("__consumer_offsets", 0)] == 15  # above the new first segment (12): listed
    assert ("orders", 0) not in lso  # 90 (the new first segment's base): not listed, as the broker writes it
    assert_clean(root)


def test_active_segment_rule(work):
    """Everything expired: the safe policy keeps the active segment and says why; the broker
    policy rolls an empty segment at the log end offset first, then deletes the old one."""
    part = build(work / "logs", 30)
    segs = segments(part)
    now = T0 + 100 * 24 * HOUR
    plan = plan_clean_kafka(work / "logs", CleanOptions(), now_ms=now)
    assert removed_logs(plan) == [f"t-0/{s.log.name}.deleted" for s in segs[:-1]]
    assert any("active segment" in n and "kept" in n for n in plan.notes)
    plan = plan_clean_kafka(work / "logs", CleanOptions(policy="broker"), now_ms=now)
    assert removed_logs(plan) == [f"t-0/{s.log.name}.deleted" for s in segs]
    leo = 30 + 15  # 15 batches hold two records
    roll = [s for s in plan.steps if s.action == "create-segment"]
    assert [s.path for s in roll] == [f"t-0/{segnames.kafka_file_name(leo, 'log')}"]
    actions = [(s.action, s.path) for s in plan.steps]
    assert actions.index(("create-segment", f"t-0/{segnames.kafka_file_name(leo, 'log')}")) < actions.index(("rename", f"t-0/{segs[-1].log.name}"))
    apply(plan)
    [new] = segments(part)
    assert new.base_offset == leo and new.log_size == 0 and new.index is not None and new.timeindex is not None
    assert_clean(work / "logs")
    assert read_offsets(work / "logs" / "log-start-offset-checkpoint") == {}
    # an empty last segment is never deleted
    assert not plan_clean_kafka(work / "logs", CleanOptions(policy="broker"), now_ms=now).has_work


def test_mtime_fallback_for_v0_data(work):
    """Message format v0 has no timestamps: the time index stays empty and retention judges a
    segment by its .log's mtime."""
    root = work / "logs"
    w = LogDirWriter(root)
    p = w.partition("old", 0, PartitionConfig(segment_bytes=300, index_interval_bytes=100))
    for i in range(20):
        p.append_legacy([klegacy.LegacyRecord(0, b"v0 message %d" % i, magic=0)])
    w.close(clean=True)
    segs = segments(root / "old-0")
    assert len(segs) >= 3 and all(largest_ts(s) == -1 for s in segs)
    now = T0
    for i, seg in enumerate(segs):
        t = (now - (10 - i) * 24 * HOUR) / 1000
        os.utime(seg.log, (t, t))
    plan = plan_clean_kafka(root, CleanOptions(), now_ms=now)
    expected = [s for i, s in enumerate(segs[:-1]) if 10 - i > 7]
    assert removed_logs(plan) == [f"old-0/{s.log.name}.deleted" for s in expected]
    assert "mtime" in next(s.reason for s in plan.steps if s.action == "rename")


def test_high_watermark_limits_deletion(work):
    part = build(work / "logs", 60)
    segs = segments(part)
    write_offsets(work / "logs" / "replication-offset-checkpoint", {("t", 0): segs[2].base_offset})
    plan = plan_clean_kafka(work / "logs", CleanOptions(), now_ms=T0 + 100 * 24 * HOUR)
    assert removed_logs(plan) == [f"t-0/{s.log.name}.deleted" for s in segs[:2]]


def test_unreadable_high_watermark_checkpoint_cleans_nothing(work):
    # a bad line in replication-offset-checkpoint must not let the log end offsets stand in for
    # high watermarks that may be far lower: the run stops, naming the file and the byte
    root = fixture_copy(work)
    hwc = root / "replication-offset-checkpoint"
    text = hwc.read_text().replace("orders 0 110\n", "orders 0 5\n")
    hwc.write_text(text + "garbage\n")
    before = tree(root)
    for target in (root, root / "orders-0"):
        code, out, err = cli("clean", target, "--now", LATER, "--apply")
        assert code == ExitCode.FINDINGS and out == ""
        assert f"{hwc}:{len(text.encode())}:" in err and "found 'garbage'" in err and "nothing is cleaned" in err
    assert tree(root) == before
    hwc.write_bytes(text.encode() + b"\xff\n")
    code, _out, err = cli("clean", root, "--now", LATER)
    assert code == ExitCode.FINDINGS and f"{hwc}:{len(text.encode())}:" in err and "expected UTF-8 text" in err


def test_partition_missing_from_high_watermark_checkpoint_keeps_to_log_start(work):
    # Kafka: no checkpointed high watermark -> 0, raised to the log start offset: only that rule deletes
    part = build(work / "logs", 60)
    build(work / "logs", 60, partition=1)
    segs = segments(part)
    write_offsets(work / "logs" / "replication-offset-checkpoint", {("t", 1): 10**6})
    write_offsets(work / "logs" / "log-start-offset-checkpoint", {("t", 0): segs[1].base_offset})
    plan = plan_clean_kafka(work / "logs", CleanOptions(), now_ms=T0 + 100 * 24 * HOUR)
    gone = removed_logs(plan)
    assert [p for p in gone if p.startswith("t-0/")] == [f"t-0/{segs[0].log.name}.deleted"]
    assert len([p for p in gone if p.startswith("t-1/")]) == len(segs) - 1
    assert any("t-0: no entry in replication-offset-checkpoint" in n for n in plan.notes)
    (work / "logs" / "replication-offset-checkpoint").unlink()
    plan = plan_clean_kafka(work / "logs", CleanOptions(), now_ms=T0 + 100 * 24 * HOUR)
    assert len(removed_logs(plan)) == 2 * (len(segs) - 1) and any("log end offset stands for" in n for n in plan.notes)


def test_protect_unconsumed_lists_the_groups(work):
    root = fixture_copy(work)
    plan = plan_clean_kafka(root, CleanOptions(protect_unconsumed=True), now_ms=LATER)
    gone = removed_logs(plan)
    # billing committed orders-0 at 90: segments 0, 30, 60 (offsets < 90) may go, 90 may not
    assert [p for p in gone if p.startswith("orders-0/")] == [f"orders-0/{segnames.kafka_file_name(b, 'log', 'deleted')}" for b in (0, 30, 60)]
    # orders-1: billing at 52: segments 0 and 24 (offsets < 48) only
    assert [p for p in gone if p.startswith("orders-1/")] == [f"orders-1/{segnames.kafka_file_name(b, 'log', 'deleted')}" for b in (0, 24)]
    held = {p["directory"]: p.get("protected_by") for p in plan.facts["partitions"]}
    assert held["orders-1"] == ["billing"] and held["events-0"] == ["audit", "billing"]
    assert any("not yet consumed by: billing" in n for n in plan.notes)
    # legacy-0 has no committed offsets: not protected
    assert held["legacy-0"] is None
    # the default is the same plan; --allow-unconsumed deletes more and names who loses data
    assert removed_logs(plan_clean_kafka(root, CleanOptions(), now_ms=LATER)) == gone
    allowed = plan_clean_kafka(root, CleanOptions(protect_unconsumed=False), now_ms=LATER)
    assert set(removed_logs(allowed)) > set(gone)
    lost = {p["directory"]: p.get("unconsumed_deleted_for") for p in allowed.facts["partitions"]}
    assert lost["orders-1"] == ["billing"] and lost["events-0"] == ["audit", "billing"]
    assert any(n.startswith("--allow-unconsumed: orders-1: ") and n.endswith("not yet consumed by: billing") for n in allowed.notes)


def test_config_file_and_flags(work):
    build(work / "logs", 60)
    props = work / "server.properties"
    props.write_text("log.retention.hours=1\nlog.retention.bytes=-1\nlog.dirs=/tmp/x\n")
    now = T0 + 59 * HOUR + 30 * 60_000
    code, out, err = cli("clean", work / "logs", "--config", props, "--now", now, "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["facts"]["retention_ms"] == HOUR
    n_config = len([s for s in doc["steps"] if s["path"].endswith(".log.deleted")])
    assert n_config >= 3
    code, out, err = cli("clean", work / "logs", "--config", props, "--retention-ms", DEFAULT_RETENTION_MS, "--now", now, "--json")
    assert code == 0 and json.loads(out)["facts"]["retention_ms"] == DEFAULT_RETENTION_MS  # the flag wins
    code, out, err = cli("clean", work / "logs", "--retention-bytes", 0, "--retention-ms", -1, "--now", now, "--json")
    assert code == 1 and json.loads(out)["facts"]["retention_bytes"] == 0
    assert cli("clean", work / "logs", "--retention-hours", 1)[0] == ExitCode.USAGE  # a Jafka setting
    assert cli("clean", work / "logs", "--reserved-hours", 1)[0] == ExitCode.USAGE  # a RocketMQ setting


def test_max_delete_report_and_exit_codes(work):
    root = build(work / "logs", 60).parent
    now = T0 + 100 * 24 * HOUR
    code, out, _ = cli("clean", root, "--max-delete", 2, "--now", now, "--json")
    assert code == 1
    plan = json.loads(out)
    assert len([s for s in plan["steps"] if s["path"].endswith(".log.deleted")]) == 2
    assert any("--max-delete" in n for n in plan["notes"])
    code, out, err = cli("clean", root, "--max-delete", 2, "--now", now, "--apply", "--interval-ms", 0, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert all(s["action"] == "remove" for s in doc["deleted"])
    assert doc["bytes_freed"] == sum(s["details"]["size"] for s in doc["deleted"] if s["details"]["kind"] in ("log", "index", "snapshot"))
    assert len([s for s in doc["deleted"] if s["path"].endswith(".log.deleted")]) == 2
    assert_clean(root)
    code, out, _ = cli("clean", root, "--now", FIXTURE_NOW)
    assert code == 0 and "nothing to clean" in out


def test_bundled_fixture_has_nothing_to_delete_at_its_own_time():
    code, out, err = cli("clean", FIXTURES / "kafka-logs", "--now", FIXTURE_NOW, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert not doc["has_work"]
    skipped = {p["directory"]: p.get("skipped") for p in doc["facts"]["partitions"]}
    assert "KRaft" in skipped["__cluster_metadata-0"]


# --- safety -----------------------------------------------------------------------------------------------------------


def test_never_leaves_the_root_or_follows_symlinks_and_ignores_unknown_files(work):
    root = fixture_copy(work)
    outside = work / "outside"
    shutil.copytree(root / "orders-1", outside / "orders-1")
    shutil.rmtree(root / "orders-1")
    (root / "orders-1").symlink_to(outside / "orders-1")
    (root / "notes.txt").write_text("an operator's notes")
    (root / "orders-0" / "README").write_text("keep me")
    link_target = work / "elsewhere.log"
    shutil.copy(root / "events-0" / "00000000000000000000.log", link_target)
    (root / "events-0" / "00000000000000000000.log").unlink()
    (root / "events-0" / "00000000000000000000.log").symlink_to(link_target)
    before_outside = tree(outside)
    plan = plan_clean_kafka(root, CleanOptions(), now_ms=LATER)
    assert not [s for s in plan.steps if s.path.startswith(("orders-1/", "events-0/")) or "notes" in s.path or "README" in s.path]
    assert any("orders-1" in n and "symbolic link" in n for n in plan.notes)
    assert any("events-0" in n and "symbolic link" in n for n in plan.notes)
    assert any("unrecognised" in n and "notes.txt" in n and "orders-0/README" in n for n in plan.notes)
    code, _, err = cli("clean", root, "--now", LATER, "--apply", "--interval-ms", 0)
    assert code == 0, err
    assert tree(outside) == before_outside and link_target.exists()
    assert (root / "notes.txt").exists() and (root / "orders-0" / "README").exists()


def test_leftovers_of_an_interrupted_deletion_are_removed(work):
    root = fixture_copy(work)
    part = root / "orders-0"
    (part / "00000000000000000000.log").rename(part / "00000000000000000000.log.deleted")  # killed after the first rename
    plan = plan_clean_kafka(root, CleanOptions(), now_ms=FIXTURE_NOW)
    acts = [(s.action, s.path) for s in plan.steps]
    assert ("remove", "orders-0/00000000000000000000.log.deleted") in acts
    assert ("remove", "orders-0/00000000000000000000.index") in acts  # orphaned: the broker deletes it at load
    apply(plan)
    assert not list(part.glob("00000000000000000000.*"))


def test_second_run_exits_75_and_a_running_broker_5(work):
    root = build(work / "logs", 40).parent
    now = T0 + 100 * 24 * HOUR
    before = tree(root)
    with ExclusiveLock(root):
        code, _, err = cli("clean", root, "--now", now, "--apply")
        assert code == 75 and "another mqtool run holds the lock" in err and len(err.strip().splitlines()) == 1
    assert tree(root) == before
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", str(root / ".lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, _, err = cli("clean", root, "--now", now, "--apply")
        assert code == 5 and f"pid {holder.pid}" in err  # the broker is running: not "busy" (issue 19)
        assert tree(root) == before
        code, _, err = cli("clean", root, "--now", now, "--apply", "--live", "--interval-ms", 0)
        assert code == 0, err
    finally:
        holder.kill()
        holder.wait()


def _subprocess_clean(root: Path, fault: str | None, *extra) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MQTOOL_FAULT_INJECT"}
    if fault:
        env["MQTOOL_FAULT_INJECT"] = fault
    args = [sys.executable, "-m", "mqtool", "clean", str(root), "--apply", "--interval-ms", "0", "--now", str(LATER), *extra]
    return subprocess.run(args, env=env, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120, check=False)


def _damaged_fixture(work: Path) -> Path:
    root = fixture_copy(work)
    table = read_offsets(root / "log-start-offset-checkpoint")
    table[("__consumer_offsets", 0)] = 15
    write_offsets(root / "log-start-offset-checkpoint", table)
    return root


@pytest.mark.parametrize("policy", ["safe", "broker"])
def test_kill_at_mutation_after_mutation_then_rerun_converges(work, policy, monkeypatch):
    """SIGKILL at 30+ mutations of the real command, then a plain rerun: the same final store as an
    uninterrupted run, and validate is clean."""
    monkeypatch.delenv("MQTOOL_FAULT_INJECT", raising=False)
    pristine = _damaged_fixture(work / "pristine")
    reference = work / "reference"
    shutil.copytree(pristine, reference)
    done = _subprocess_clean(reference, None, "--policy", policy)
    assert done.returncode == 0, done.stderr
    expected = tree(reference)
    assert_clean(reference)
    counted = work / "counted"
    shutil.copytree(pristine, counted)
    total = count_mutations(lambda: apply(plan_clean_kafka(counted, CleanOptions(policy=policy), now_ms=LATER)))
    assert total >= 30 and tree(counted) == expected
    step = max(1, total // 40)
    points = sorted(set(range(1, total + 1, step)) | {total - 1, total})
    assert len(points) >= 30
    for n in points:
        store = work / f"store-{n}"
        shutil.copytree(pristine, store)
        killed = _subprocess_clean(store, f"kill@{n}", "--policy", policy)
        assert killed.returncode == -signal.SIGKILL, (n, killed.stderr)
        rerun = _subprocess_clean(store, None, "--policy", policy)
        assert rerun.returncode == 0, (n, rerun.stderr)
        assert tree(store) == expected, f"kill@{n}: differs from the uninterrupted run"
        shutil.rmtree(store)


def test_enospc_then_rerun(work, monkeypatch):
    pristine = _damaged_fixture(work / "pristine")
    reference = work / "reference"
    shutil.copytree(pristine, reference)
    assert _subprocess_clean(reference, None).returncode == 0
    expected = tree(reference)
    for n in (1, 2, 5, 11, 23, 40):
        store = work / f"store-{n}"
        shutil.copytree(pristine, store)
        monkeypatch.setenv("MQTOOL_FAULT_INJECT", f"enospc@{n}")
        code, _, err = cli("clean", store, "--apply", "--interval-ms", 0, "--now", LATER)
        monkeypatch.delenv("MQTOOL_FAULT_INJECT")
        if code == 0:
            break
        assert code == ExitCode.IO, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "No space left on device" in lines[0] and f"injected at mutation {n}" in lines[0]
        if n == 1:
            assert tree(store) == tree(pristine)
        code, _, err = cli("clean", store, "--apply", "--interval-ms", 0, "--now", LATER)
        assert code == 0, err
        assert tree(store) == expected, n
