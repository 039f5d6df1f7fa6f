"""clean for Jafka and MetaQ: each policy removes exactly the expected segments, safe under cron.

Stores are written with mqtool's writers (small segments); every segment gets an mtime of
``NOW - age`` hours, and plans are made as of ``NOW`` (``--now``).  The crash tests run the real
command in a subprocess, SIGKILLed at each mutation in turn, then rerun it: the result must be
the uninterrupted run's.
"""

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
import zipfile
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.cli.exit_codes import ExitCode
from mqtool.errors import CorruptDataError
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.ops.clean import legacy as clean_legacy
from mqtool.ops.clean.config import read_policy_file
from mqtool.ops.clean.legacy import CleanOptions, apply_custom, plan_clean_jafka, plan_clean_metaq
from mqtool.ops.recover import apply_plan
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.legacy import validate_jafka, validate_metaq
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.lock import MQTOOL_LOCK_NAME, ExclusiveLock
from tests.conftest import PROJECT_ROOT
from tests.ops.crashkit import count_mutations

HOUR_MS = 3_600_000
NOW_MS = 1_800_000_000_000
SEGMENT = 300


# --- building stores ----------------------------------------------------------------------------------------


def build(layout: str, root: Path, partitions: dict[str, int]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, count in partitions.items():
        topic, _, number = name.rpartition("-")
        if layout == "jafka":
            w = sj.JafkaLogWriter(sj.partition_dir(root, topic, int(number)), log_file_size=SEGMENT)
            for i in range(count):
                w.append([jf.Message(f"jafka {name} {i:04d} ".encode() * (1 + i % 4))])
        else:
            m = sm.MetaqStoreWriter(sm.partition_dir(root, topic, int(number)), max_segment_size=SEGMENT)
            for i in range(count):
                m.append(mq.make_message(10_000 + i, f"metaq {name} {i:04d} ".encode() * (1 + i % 4), "k=v" if i % 3 == 1 else None))


def segments(layout: str, part: Path) -> list[Path]:
    return sorted(part.glob("*.jafka" if layout == "jafka" else "*.meta"))


def age(paths: list[Path], hours: list[float]) -> None:
    """Give ``paths[i]`` the mtime ``NOW - hours[i]``."""
    for p, h in zip(paths, hours, strict=True):
        t = (NOW_MS - h * HOUR_MS) / 1000
        os.utime(p, (t, t))


def age_all(layout: str, root: Path, hours: float) -> None:
    for part in sorted(p for p in root.iterdir() if p.is_dir()):
        segs = segments(layout, part)
        age(segs, [hours] * len(segs))


def tree(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(Path(root).rglob("*")) if p.is_file()}


def names(plan, action: str | None = None) -> list[str]:
    return [s.path for s in plan.steps if action is None or s.action == action]


def validate(layout: str, root: Path):
    return (validate_jafka if layout == "jafka" else validate_metaq)(root, ValidateOptions())


def assert_valid(layout: str, root: Path) -> None:
    report = validate(layout, root)
    errors = [f"{f.code} {f.path}: {f.message}" for f in report.findings if f.level.name == "error"]
    assert not errors, "\n".join(errors)


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def clean_cli(root: Path, *extra) -> tuple[int, str, str]:
    return cli("clean", root, "--now", NOW_MS, "--interval-ms", "0", *extra)


def subprocess_clean(root: Path, fault: str | None, *extra) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MQTOOL_FAULT_INJECT"}
    if fault:
        env["MQTOOL_FAULT_INJECT"] = fault
    args = [sys.executable, "-m", "mqtool", "clean", str(root), "--apply", "--now", str(NOW_MS), "--interval-ms", "0", "--quiet", *map(str, extra)]
    return subprocess.run(args, env=env, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120, check=False)


@pytest.fixture
def work(tmp_path):
    """On tmpfs when there is one (every deletion and archive is fsynced)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        base = Path(tempfile.mkdtemp(prefix="mqtool-clean-legacy-", dir=shm))
        yield base
        shutil.rmtree(base, ignore_errors=True)
    else:
        yield tmp_path


# --- Jafka ------------------------------------------------------------------------------------------------------


def test_jafka_time_rule_is_a_prefix_with_the_upstream_default(work):
    """log.retention.hours 168 by default, ``now - mtime > retention`` (strictly); the scan
    stops at the first young segment even when older ones follow (Jafka's markDeletedWhile
    would collect those and then delete the wrong, first N segments)."""
    root = work / "data"
    build("jafka", root, {"t-0": 60})
    segs = segments("jafka", root / "t-0")
    assert len(segs) >= 7
    age(segs, [500, 168 + 1e-3, 168, 500, 500, 500] + [1] * (len(segs) - 6))
    plan = plan_clean_jafka(root, now_ms=NOW_MS)
    assert names(plan) == [f"t-0/{s.name}" for s in segs[:2]]
    assert plan.facts["retention_hours"] == 168 and plan.facts["retention_bytes"] == -1
    assert all(s.action == "remove" and s.details["kind"] == "segment" for s in plan.steps)
    step = plan.steps[0]
    assert step.details["size"] == segs[0].stat().st_size and step.details["offsets"] == [0, segs[0].stat().st_size]
    apply_plan(plan, command="clean")
    assert segments("jafka", root / "t-0") == segs[2:]
    assert_valid("jafka", root)
    assert not plan_clean_jafka(root, now_ms=NOW_MS).has_work


def test_jafka_never_the_active_segment(work):
    root = work / "data"
    build("jafka", root, {"a-0": 40, "b-0": 3})
    age_all("jafka", root, 10_000)
    plan = plan_clean_jafka(root, CleanOptions(retention_hours=1), now_ms=NOW_MS)
    a = segments("jafka", root / "a-0")
    assert names(plan) == [f"a-0/{s.name}" for s in a[:-1]]  # b-0 has one segment: it stays


def test_jafka_size_rule(work):
    """``diff = size - limit``; oldest first ``diff -= segment``; delete while ``diff >= 0``;
    applied after the time rule, never to the active segment."""
    root = work / "data"
    build("jafka", root, {"t-0": 60})
    segs = segments("jafka", root / "t-0")
    age(segs, [1] * len(segs))
    sizes = [s.stat().st_size for s in segs]
    total = sum(sizes)
    limit = total - sizes[0] - sizes[1] - 1  # the first two must go; the third would go below
    plan = plan_clean_jafka(root, CleanOptions(retention_bytes=limit), now_ms=NOW_MS)
    assert names(plan) == [f"t-0/{s.name}" for s in segs[:2]]
    assert "log.retention.size" in plan.steps[0].reason
    assert not plan_clean_jafka(root, CleanOptions(retention_bytes=total), now_ms=NOW_MS).has_work
    assert not plan_clean_jafka(root, CleanOptions(retention_bytes=total - 1), now_ms=NOW_MS).has_work  # 1 byte over: s0 would undershoot
    assert names(plan_clean_jafka(root, CleanOptions(retention_bytes=total - sizes[0]), now_ms=NOW_MS)) == [f"t-0/{segs[0].name}"]
    assert names(plan_clean_jafka(root, CleanOptions(retention_bytes=0), now_ms=NOW_MS)) == [f"t-0/{s.name}" for s in segs[:-1]]
    # time rule first, then the size rule on what is left
    age(segs[:1], [200])
    plan = plan_clean_jafka(root, CleanOptions(retention_bytes=total - sizes[0] - sizes[1]), now_ms=NOW_MS)
    assert names(plan) == [f"t-0/{s.name}" for s in segs[:2]]
    assert "expired" in plan.steps[0].reason and "log.retention.size" in plan.steps[1].reason


def test_jafka_size_rule_past_2_gib(work):
    """Jafka sums segment sizes into an int: a partition over 2 GiB overflows and its size rule
    misfires.  mqtool counts in 64 bits (segments here are sparse files: the plan only stats)."""
    root = work / "data"
    part = root / "big-0"
    part.mkdir(parents=True)
    gib = 1 << 30
    for i in range(4):
        path = part / segnames.jafka_file_name(i * gib)
        with open(path, "wb") as f:
            f.truncate(gib)
    (part / segnames.jafka_file_name(4 * gib)).write_bytes(b"")
    age(segments("jafka", part), [1] * 5)
    plan = plan_clean_jafka(root, CleanOptions(retention_bytes=3 * gib), now_ms=NOW_MS)  # a limit past 2**31 too
    assert names(plan) == [f"big-0/{segnames.jafka_file_name(0)}"]
    plan = plan_clean_jafka(root, CleanOptions(retention_bytes=gib + 5), now_ms=NOW_MS)
    assert names(plan) == [f"big-0/{segnames.jafka_file_name(i * gib)}" for i in range(2)]
    assert plan.bytes_cut == 2 * gib


def test_jafka_config_file_and_topic_overrides(work):
    """--config server.properties: log.retention.hours, log.retention.size and the per-topic
    topic.log.retention.hours; flags override the file."""
    root = work / "data"
    build("jafka", root, {"keep-0": 30, "go-0": 30})
    age_all("jafka", root, 100)
    conf = work / "server.properties"
    conf.write_text("log.dir=/tmp/jafka-data\nlog.retention.hours=24\ntopic.log.retention.hours=keep:1000,other:5\n")
    assert read_policy_file(conf, "jafka") == {"retention_hours": 24.0, "topic_retention_hours": {"keep": 1000.0, "other": 5.0}}
    code, out, err = clean_cli(root, "--config", conf, "--json")
    assert code == 1, err
    doc = json.loads(out)
    go = segments("jafka", root / "go-0")
    assert [s["path"] for s in doc["steps"]] == [f"go-0/{s.name}" for s in go[:-1]]
    code, out, _ = clean_cli(root, "--config", conf, "--retention-hours", "200", "--json")
    assert code == 0 and json.loads(out)["steps"] == []


def test_jafka_rejects_metaq_settings(work):
    root = work / "data"
    build("jafka", root, {"t-0": 5})
    # bad option values are usage errors (exit 2), as on the other layouts (they were 4 and 1)
    code, _, err = clean_cli(root, "--delete-policy", "delete,1")
    assert code == ExitCode.USAGE and "--delete-policy" in err
    code, _, err = clean_cli(root, "--retention-hours", "0")
    assert code == ExitCode.USAGE and "log.retention.hours" in err


# --- MetaQ -------------------------------------------------------------------------------------------------------


def test_metaq_delete_policy_default(work):
    """deletePolicy ``delete,168`` by default: a prefix of the immutable segments."""
    root = work / "data"
    build("metaq", root, {"t-0": 40})
    segs = segments("metaq", root / "t-0")
    age(segs, [170, 169, 167, 500] + [500] * (len(segs) - 4))
    plan = plan_clean_metaq(root, now_ms=NOW_MS)
    assert names(plan) == [f"t-0/{s.name}" for s in segs[:2]] and plan.facts["delete_policy"] == "delete,168"
    assert names(plan_clean_metaq(root, CleanOptions(delete_policy="delete,30m"), now_ms=NOW_MS)) == [f"t-0/{s.name}" for s in segs[:-1]]
    apply_plan(plan, command="clean")
    assert_valid("metaq", root)


def dump_rows(path: Path) -> list[dict]:
    code, out, err = cli("dump", "metaq", path, "--jsonl")
    assert code == 0, err
    return [{k: v for k, v in json.loads(line).items() if k not in ("file", "archive")} for line in out.splitlines()]


@pytest.mark.parametrize("compress", [False, True], ids=["arc", "zip"])
def test_metaq_archive_round_trip(work, compress):
    """``archive,72h`` renames to ``.meta.arc``; ``archive,72h,true`` writes ``.meta.zip`` (one
    DEFLATE entry ``NNN.meta``) and deletes the segment only after the zip reads back: opened
    again by ``dump``, each archive gives exactly the original segment's rows."""
    root = work / "data"
    build("metaq", root, {"t-0": 40, "u-1": 20})
    age_all("metaq", root, 100)
    originals = {p: p.read_bytes() for part in ("t-0", "u-1") for p in segments("metaq", root / part)[:-1]}
    rows = {p: dump_rows(p) for p in originals}
    policy = "archive,72h,true" if compress else "archive,72h"
    code, out, err = clean_cli(root, "--delete-policy", policy, "--apply", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["deleted"] == [] and len(report["archived"]) == len(originals) and report["bytes_freed"] == 0
    for step in report["archived"]:
        assert step["action"] == ("archive" if compress else "rename")
        assert step["details"]["archive"] == ("zip" if compress else "arc") and step["details"]["size"] > 0
        assert step["details"]["offsets"][1] - step["details"]["offsets"][0] == step["details"]["size"]
    for path, data in originals.items():
        assert not path.exists()
        archived = path.with_name(segnames.metaq_archive_name(path.name, compress=compress))
        if compress:
            with zipfile.ZipFile(archived) as z:
                [info] = z.infolist()
                assert info.filename == path.name and info.compress_type == zipfile.ZIP_DEFLATED
                assert z.read(info) == data
            assert mq.decode_zip_archive(archived.read_bytes(), expected_name=path.name) == data
        else:
            assert archived.read_bytes() == data
        assert dump_rows(archived) == rows[path]
    report = validate("metaq", root)
    assert not report.failed and not [f for f in report.findings if f.level.name == "warning"]
    assert not plan_clean_metaq(root, CleanOptions(delete_policy=policy), now_ms=NOW_MS).has_work


def test_metaq_server_ini_sections(work):
    """server.ini: ``[system] deletePolicy`` for every topic, ``[topic=NAME] deletePolicy`` for
    its own; a topic's section never stands in for the system one (an INI file is not read as
    flat Java properties)."""
    root = work / "data"
    build("metaq", root, {"keep-0": 30, "go-0": 30, "zip-0": 30})
    age_all("metaq", root, 100)
    ini = work / "server.ini"
    ini.write_text(
        "[system]\nbrokerId=0\ndeletePolicy=delete,24\n\n[zookeeper]\nzk.zkConnect=localhost:2181\n\n"
        "[topic=keep]\ndeletePolicy=delete,1000\n[topic=zip]\ndeletePolicy = archive,10,true\n; a comment\n[topic=blank]\ndeletePolicy=\n"
    )
    assert read_policy_file(ini, "metaq") == {"delete_policy": "delete,24", "topic_delete_policies": {"keep": "delete,1000", "zip": "archive,10,true"}}
    code, out, err = clean_cli(root, "--config", ini, "--json")
    assert code == 1, err
    steps = json.loads(out)["steps"]
    go, zipped = segments("metaq", root / "go-0"), segments("metaq", root / "zip-0")
    assert [(s["action"], s["path"]) for s in steps] == [("remove", f"go-0/{s.name}") for s in go[:-1]] + [("archive", f"zip-0/{s.name}") for s in zipped[:-1]]


def test_metaq_existing_archive_stops_the_scan(work):
    """An ``NNN.meta.arc`` already beside a live ``NNN.meta`` is never replaced: the partition's
    scan stops there (with a note)."""
    root = work / "data"
    build("metaq", root, {"t-0": 40})
    age_all("metaq", root, 100)
    segs = segments("metaq", root / "t-0")
    (root / "t-0" / (segs[1].name + ".arc")).write_bytes(b"someone else's")
    plan = plan_clean_metaq(root, CleanOptions(delete_policy="archive,1"), now_ms=NOW_MS)
    assert names(plan) == [f"t-0/{segs[0].name}"]
    assert any("already exists" in n for n in plan.notes)


def test_interrupted_zip_is_finished_and_a_foreign_zip_is_not_replaced(work):
    """A complete ``NNN.meta.zip`` beside its segment (a run killed between the rename and the
    deletion): the plan re-checks it and only deletes the segment.  A zip that does not hold the
    segment stops the scan."""
    root = work / "data"
    build("metaq", root, {"t-0": 40})
    age_all("metaq", root, 100)
    segs = segments("metaq", root / "t-0")
    done = work / "done"
    shutil.copytree(root, done)
    assert clean_cli(done, "--delete-policy", "archive,1,true", "--apply")[0] == 0
    first_zip = segs[0].name + ".zip"
    (root / "t-0" / first_zip).write_bytes((done / "t-0" / first_zip).read_bytes())
    plan = plan_clean_metaq(root, CleanOptions(delete_policy="archive,1,true"), now_ms=NOW_MS)
    assert "interrupted run" in plan.steps[0].reason and plan.steps[0].expect["files"][f"t-0/{first_zip}"]["exists"]
    assert clean_cli(root, "--delete-policy", "archive,1,true", "--apply")[0] == 0
    assert tree(root) == tree(done)
    # a zip of other bytes
    other = work / "other"
    build("metaq", other, {"t-0": 40})
    age_all("metaq", other, 100)
    (other / "t-0" / first_zip).write_bytes(mq.encode_zip_archive(segs[0].name, b"not the segment"))
    plan = plan_clean_metaq(other, CleanOptions(delete_policy="archive,1,true"), now_ms=NOW_MS)
    assert not plan.has_work and any("not this segment's archive" in n for n in plan.notes)


def test_archive_that_does_not_read_back_keeps_the_segment(work, monkeypatch):
    """The written zip is read back before the segment goes: a damaged archive is removed, the
    segment stays, the error names it."""
    root = work / "data"
    build("metaq", root, {"t-0": 20})
    age_all("metaq", root, 100)
    before = tree(root)
    real_write = clean_legacy._write_zip

    def damaged_write(mutator, source, tmp, entry, size, mtime_ms):
        crc = real_write(mutator, source, tmp, entry, size, mtime_ms)
        data = bytearray(tmp.read_bytes())
        data[len(entry) + 40] ^= 0xFF  # a byte of the DEFLATE stream
        tmp.write_bytes(bytes(data))
        return crc

    monkeypatch.setattr(clean_legacy, "_write_zip", damaged_write)
    plan = plan_clean_metaq(root, CleanOptions(delete_policy="archive,1,true"), now_ms=NOW_MS)
    with pytest.raises(CorruptDataError, match="does not read back"):
        apply_plan(plan, custom=apply_custom, command="clean")
    assert tree(root) == before


# --- both: safety -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_ignores_what_it_does_not_know_and_never_leaves_the_root(work, layout):
    """Symbolic links (a partition directory, a segment) leading out of the store are never
    followed; unknown files and stray directories are left alone and named in the notes."""
    root = work / "data"
    outside = work / "outside"
    build(layout, root, {"t-0": 30})
    build(layout, outside, {"x-0": 30})
    age_all(layout, root, 10_000)
    age_all(layout, outside, 10_000)
    suffix = ".jafka" if layout == "jafka" else ".meta"
    name = segnames.jafka_file_name if layout == "jafka" else segnames.metaq_file_name
    (root / "x-0").symlink_to(outside / "x-0")
    (root / "t-0" / name(10**12)).symlink_to(segments(layout, outside / "x-0")[0])
    (root / "t-0" / "notes.txt").write_text("keep me")
    (root / "t-0" / f"00000000000000000000{suffix}.bak").write_text("keep me")
    (root / "README").write_text("keep me")
    outside_before = tree(outside)
    plan = (plan_clean_jafka if layout == "jafka" else plan_clean_metaq)(root, CleanOptions(**({"retention_hours": 1} if layout == "jafka" else {"delete_policy": "delete,1"})), now_ms=NOW_MS)
    assert all(s.path.startswith("t-0/") and not Path(root / s.path).is_symlink() for s in plan.steps)
    notes = " ".join(plan.notes)
    assert "symbolic links" in notes and "x-0" in notes and "notes.txt" in notes and "README" in notes
    assert str(outside) not in notes  # links are named, never resolved
    apply_plan(plan, custom=apply_custom, command="clean")
    assert tree(outside) == outside_before
    assert (root / "x-0").is_symlink() and (root / "t-0" / "notes.txt").read_text() == "keep me" and (root / "README").exists()
    assert len(segments(layout, root / "t-0")) == 2  # the active segment and the (never followed) link


def test_leftover_temporary_zip_is_removed(work):
    root = work / "data"
    build("metaq", root, {"t-0": 20})
    age_all("metaq", root, 1)
    leftover = root / "t-0" / ".mqtool-tmp-00000000000000000000.meta.zip"
    leftover.write_bytes(b"PK\x03\x04 partial")
    plan = plan_clean_metaq(root, now_ms=NOW_MS)
    assert [(s.action, s.path, s.details["kind"]) for s in plan.steps] == [("remove", f"t-0/{leftover.name}", "leftover")]
    assert clean_cli(root, "--apply")[0] == 0 and not leftover.exists()


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_max_delete_plan_exit_codes_and_report(work, layout):
    root = work / "data"
    build(layout, root, {"a-0": 30, "b-0": 30})
    age_all(layout, root, 1000)
    code, out, _ = clean_cli(root, "--json", "--max-delete", "3")
    assert code == 1
    doc = json.loads(out)
    assert len(doc["steps"]) == 3 and any("--max-delete" in n for n in doc["notes"])
    code, out, err = clean_cli(root, "--apply", "--json", "--max-delete", "3")
    assert code == 0, err
    report = json.loads(out)
    assert len(report["deleted"]) == 3 and report["bytes_freed"] == sum(s["details"]["size"] for s in report["deleted"])
    for step in report["deleted"]:
        assert {"start_offset", "end_offset", "offsets", "size", "mtime_ms", "topic", "partition", "directory"} <= set(step["details"])
    code, out, _ = clean_cli(root, "--apply")
    assert code == 0 and "deleted" in out
    code, out, _ = clean_cli(root)
    assert code == 0 and "nothing to clean" in out
    code, out, _ = clean_cli(root, "--apply", "--quiet")
    assert code == 0 and out == ""
    assert clean_cli(segments(layout, root / "a-0")[-1])[0] == ExitCode.IO  # a segment file is not a store
    assert_valid(layout, root)


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_second_run_exits_75(work, layout):
    root = work / "data"
    build(layout, root, {"t-0": 30})
    age_all(layout, root, 1000)
    before = tree(root)
    with ExclusiveLock(root):
        code, _, err = clean_cli(root, "--apply")
        assert code == 75 and len(err.strip().splitlines()) == 1 and "another mqtool run holds the lock" in err
        assert clean_cli(root)[0] == 1  # planning reads only
    assert tree(root) == before
    assert clean_cli(root, "--apply")[0] == 0
    assert not [f for f in validate(layout, root).findings if f.code.endswith("UNEXPECTED-FILE")]  # .mqtool.lock is mqtool's


# --- crash safety ---------------------------------------------------------------------------------------------------


CRASH = {
    "jafka": ({"a-0": 60, "b-0": 60, "c-0": 60}, ()),
    "metaq": ({"a-0": 40, "b-0": 24}, ("--delete-policy", "archive,72h,true")),
}


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_kill_at_every_mutation_then_rerun_converges(work, layout, monkeypatch):
    """SIGKILL at each mutation of the real command (at least 20): every killed run leaves a
    store that validates, and a rerun gives exactly the uninterrupted run's store."""
    monkeypatch.delenv("MQTOOL_FAULT_INJECT", raising=False)
    partitions, extra = CRASH[layout]
    damaged = work / "start"
    build(layout, damaged, partitions)
    age_all(layout, damaged, 1000)
    reference = work / "reference"
    shutil.copytree(damaged, reference)
    done = subprocess_clean(reference, None, *extra)
    assert done.returncode == 0, done.stderr
    expected = tree(reference)
    counted = work / "counted"
    shutil.copytree(damaged, counted)

    def uninterrupted() -> None:
        assert clean_cli(counted, "--apply", *extra)[0] == 0

    mutations = count_mutations(uninterrupted)
    assert tree(counted) == expected and mutations >= 20
    for n in range(1, mutations + 2):
        store = work / f"store-{n}"
        shutil.copytree(damaged, store)
        killed = subprocess_clean(store, f"kill@{n}", *extra)
        if n > mutations:
            assert killed.returncode == 0, killed.stderr
            assert tree(store) == expected
            break
        assert killed.returncode == -signal.SIGKILL, (n, killed.stderr)
        assert_valid(layout, store)  # a killed run leaves a loadable store
        code, _, err = clean_cli(store, "--apply", *extra)
        assert code == 0, (n, err)
        assert tree(store) == expected, f"kill@{n}: differs from the uninterrupted run"
        assert not (plan_clean_jafka if layout == "jafka" else plan_clean_metaq)(
            store, CleanOptions(delete_policy=extra[1]) if extra else CleanOptions(), now_ms=NOW_MS
        ).has_work
        shutil.rmtree(store)


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_enospc_at_every_mutation_then_rerun(work, layout, monkeypatch):
    """ENOSPC at mutation 1, 2, ...: one line on stderr, exit 3, a consistent store; a rerun
    without the fault completes it to the uninterrupted run's store."""
    partitions, extra = CRASH[layout]
    damaged = work / "start"
    build(layout, damaged, {k: v // 2 for k, v in partitions.items()})
    age_all(layout, damaged, 1000)
    reference = work / "reference"
    shutil.copytree(damaged, reference)
    assert clean_cli(reference, "--apply", *extra)[0] == 0
    expected = tree(reference)
    for n in range(1, 200):
        store = work / f"store-{n}"
        shutil.copytree(damaged, store)
        monkeypatch.setenv("MQTOOL_FAULT_INJECT", f"enospc@{n}")
        code, _, err = clean_cli(store, "--apply", *extra)
        monkeypatch.delenv("MQTOOL_FAULT_INJECT")
        if code == 0:
            assert tree(store) == expected
            break
        assert code == ExitCode.IO, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "No space left on device" in lines[0] and f"injected at mutation {n}" in lines[0]
        assert_valid(layout, store)
        assert clean_cli(store, "--apply", *extra)[0] == 0
        assert tree(store) == expected, n
        shutil.rmtree(store)
    else:
        pytest.fail("still failing after 200 mutations")
    assert n > 5


@pytest.mark.parametrize(
    "kwargs,says",
    [
        ({"retention_hours": 0}, "log.retention.hours"),
        ({"topic_retention_hours": {"orders": -1}}, "topic.log.retention.hours of orders"),
        ({"delete_policy": "bogus"}, "expected delete or archive"),
        ({"delete_policy": "delete"}, "expected delete,<time>"),
        ({"delete_policy": "delete,-5"}, "expected a time > 0"),
        ({"topic_delete_policies": {"trade": "archive,0h,true"}}, "deletePolicy of topic trade"),
    ],
)
def test_options_a_cron_job_must_not_run_with_are_refused(kwargs, says):
    with pytest.raises(ValueError, match=says):
        CleanOptions(**kwargs)
