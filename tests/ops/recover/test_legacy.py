"""``recover`` on Jafka and MetaQ data dirs: the brokers' last-segment recovery, safely.

Stores are written with mqtool's writers (small segments), damaged on purpose, and recovered
through the API or the CLI.  Every recovery is checked against

* the messages: every valid message before the cut point is still there, at the same offset;
* ``validate``: no errors afterwards;
* the quarantine: every byte the run changed or removed is held by a manifest entry with the
  original bytes;
* ``--undo``: the damaged store comes back byte for byte.

The crash tests run the real command in a subprocess, SIGKILLed at every mutation in turn
(``MQTOOL_FAULT_INJECT=kill@N``), then rerun it: the result must be the uninterrupted run's.
The I/O-error tests fail each mutation in turn with ENOSPC/EIO: a clear error, then a plain rerun
finishes the job.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from fuzz.faults import check_quarantine, tree
from mqtool.cli.app import run
from mqtool.errors import LockBusyError, PlanChangedError
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.ops.recover import undo_manifest
from mqtool.ops.recover.legacy import apply_legacy, plan_jafka, plan_metaq
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.legacy import validate_jafka, validate_metaq
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.legacy import SegmentWalk
from mqtool.store.lock import MQTOOL_LOCK_NAME, ExclusiveLock
from tests.ops.crashkit import IO_FAULTS, check_undo, io_error_at, kill_at, make_case

PROPERTY = settings(
    max_examples=10, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate), suppress_health_check=[HealthCheck.too_slow]
)
SEGMENT = 300  # log.file.size / maxSegmentSize of the test stores
PLAN = {"jafka": plan_jafka, "metaq": plan_metaq}
#: warnings a recovered store may keep: no marker (Jafka) / the archived history's hole (MetaQ)
ALLOWED_WARNINGS = {"JAFKA-UNCLEAN-SHUTDOWN", "METAQ-ARCHIVE-GAP"}


# --- building stores ------------------------------------------------------------------------------------------


def jafka_message(i: int) -> jf.Message:
    return jf.Message(f"jafka {i:04d} ".encode() * (1 + i % 4))


def metaq_message(i: int) -> mq.Message:
    return mq.make_message(10_000 + i, f"metaq {i:04d} ".encode() * (1 + i % 4), "k=v" if i % 3 == 1 else None)


def encoded(layout: str, i: int) -> bytes:
    return jf.encode_message(jafka_message(i)) if layout == "jafka" else mq.encode_message(metaq_message(i))


def build(layout: str, root: Path, partitions: dict[str, int], *, marker: bool = False) -> None:
    """A data dir with ``{"topic-N": message count}``; Jafka without the clean-shutdown marker."""
    root.mkdir(parents=True, exist_ok=True)
    for name, count in partitions.items():
        topic, _, number = name.rpartition("-")
        if layout == "jafka":
            w = sj.JafkaLogWriter(sj.partition_dir(root, topic, int(number)), log_file_size=SEGMENT)
            for i in range(count):
                w.append([jafka_message(i)])
        else:
            m = sm.MetaqStoreWriter(sm.partition_dir(root, topic, int(number)), max_segment_size=SEGMENT)
            for i in range(count):
                m.append(metaq_message(i))
    if marker:
        (root / sj.CLEAN_SHUTDOWN_FILE).touch()


def last_segment(layout: str, part: Path) -> Path:
    suffix = ".jafka" if layout == "jafka" else ".meta"
    return sorted(part.glob("*" + suffix))[-1]


def append(path: Path, data: bytes) -> int:
    """Append ``data``; returns the position it starts at."""
    with open(path, "ab") as f:
        pos = f.tell()
        f.write(data)
    return pos


def write_at(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


# --- observing stores ---------------------------------------------------------------------------------------------


def messages(layout: str, root: Path) -> list[tuple[str, int, bytes]]:
    """``(partition, offset, payload)`` of every valid message of the live segments (each
    segment walked to its first break)."""
    data = sj.open_jafka(root) if layout == "jafka" else sm.open_metaq(root)
    framing = sj.FRAMING if layout == "jafka" else sm.FRAMING
    out = []
    for part in data.partitions:
        for seg in part.segments:
            with (sj.open_segment(seg) if layout == "jafka" else sm.open_segment(seg)) as reader:
                for pos, m in SegmentWalk(reader, framing, 0):
                    out.append((part.name, seg.start_offset + pos, m.payload if layout == "jafka" else m.data))
    return out


def validate(layout: str, root: Path):
    return (validate_jafka if layout == "jafka" else validate_metaq)(root, ValidateOptions())


def assert_clean(layout: str, root: Path) -> None:
    report = validate(layout, root)
    problems = [
        f"{f.code} {f.path}:{f.position}: {f.message}"
        for f in report.findings
        if f.level.name == "error" or (f.level.name == "warning" and f.code not in ALLOWED_WARNINGS)
    ]
    assert not problems, "\n".join(problems)


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def recover_and_check(layout: str, root: Path, q: Path, *, force: bool = False, via_cli: bool = False):
    """Recover ``root``: messages before the cut kept, validate clean, quarantine complete,
    nothing left to do, then undo brings the damaged store back."""
    original = tree(root)
    before = messages(layout, root)
    plan = PLAN[layout](root)
    assert plan.has_work
    if via_cli:
        code, out, err = cli("recover", root, "--apply", "--quarantine", q, "--json", "--jobs", "1", *(["--force"] if force else []))
        assert code == 0, err
        doc = json.loads(out)
        assert [s["action"] for s in doc["applied"]] == [s.action for s in plan.steps]
        manifest = doc["manifest"] and Path(doc["manifest"])
    else:
        result = apply_legacy(plan, quarantine_root=q, force=force, jobs=1)
        assert [s.action for s in result.applied] == [s.action for s in plan.steps]
        assert not result.notes, result.notes
        manifest = result.manifest and Path(result.manifest)
    assert_clean(layout, root)
    final = tree(root)
    cut = {(s.path.split("/")[0], s.details["log_end_offset"]) for s in plan.steps if s.action == "truncate"}
    after = messages(layout, root)
    assert set(after) <= set(before)
    for part, end in cut:
        assert [m for m in after if m[0] == part] == [m for m in before if m[0] == part and m[1] < end]
    check_quarantine(original, final, [manifest] if manifest else [])
    assert not PLAN[layout](root).has_work
    if manifest:
        if via_cli:
            assert cli("recover", "--undo", manifest)[0] == 0
        else:
            undo_manifest(manifest)
    assert tree(root) == original
    return plan


class Workdir:
    def __init__(self, base: Path) -> None:
        self.base = base

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.base))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """On tmpfs when there is one: recover fsyncs every mutation (a SIGKILL keeps the page cache,
    so tmpfs changes nothing these tests observe)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        base = Path(tempfile.mkdtemp(prefix="mqtool-recover-legacy-", dir=shm))
        yield Workdir(base)
        shutil.rmtree(base, ignore_errors=True)
    else:
        yield Workdir(tmp_path_factory.mktemp("work"))


@pytest.fixture(scope="module")
def pristine(work):
    """One clean data dir per layout: ``t-0`` with 33 messages, 4-5 segments, 6 in the last."""
    out = {}
    for layout in ("jafka", "metaq"):
        root = work.mktemp(f"pristine-{layout}") / "data"
        build(layout, root, {"t-0": 33})
        out[layout] = root
    return out


def fresh(work, pristine, layout: str) -> tuple[Path, Path, Path]:
    """A copy of the pristine store: (root, partition dir, quarantine dir)."""
    base = work.mktemp("case")
    shutil.copytree(pristine[layout], base / "data")
    return base / "data", base / "data" / "t-0", base / "quarantine"


# --- 1. tails ---------------------------------------------------------------------------------------------------------


def test_pristine_stores_need_nothing(pristine):
    for layout in ("jafka", "metaq"):
        plan = PLAN[layout](pristine[layout])
        assert not plan.has_work and plan.valid_end is not None
        assert cli("recover", pristine[layout])[0] == 0
        segs = (sj.open_jafka if layout == "jafka" else sm.open_metaq)(pristine[layout]).partitions[0].segments
        assert len(segs) >= 4 and segs[-1].size > 0


@PROPERTY
@given(layout=st.sampled_from(["jafka", "metaq"]), data=st.data(), zero_fill=st.booleans(), via_cli=st.booleans())
def test_torn_last_message(work, pristine, layout, data, zero_fill, via_cli):
    """A crash while a message was appended: its first ``k`` bytes are there (then, with
    ``zero_fill``, zeros up to its full length, as delayed allocation leaves it)."""
    root, part, q = fresh(work, pristine, layout)
    raw = encoded(layout, 99)
    k = data.draw(st.integers(1, len(raw) - 1), label="bytes written")
    seg = last_segment(layout, part)
    pos = append(seg, raw[:k] + (bytes(len(raw) - k) if zero_fill else b""))
    plan = recover_and_check(layout, root, q, via_cli=via_cli)
    [step] = plan.steps
    assert (step.action, step.path, step.position) == ("truncate", f"t-0/{seg.name}", pos)
    assert plan.records_dropped == 0 and not plan.needs_force
    assert plan.valid_end == int(seg.name.split(".")[0]) + pos


@PROPERTY
@given(layout=st.sampled_from(["jafka", "metaq"]), garbage=st.binary(min_size=1, max_size=200))
@example(layout="jafka", garbage=b" P\xc1")  # fewer bytes than LENGTH and MAGIC: validate read a 5th byte that is not there
def test_garbage_tail(work, pristine, layout, garbage):
    """Bytes that are no message after the last one: cut (MetaQ: a garbage of whole zero
    headers followed by nothing is what MetaQ keeps; the draw makes it non-zero)."""
    root, part, q = fresh(work, pristine, layout)
    garbage = b"\xff" + garbage
    seg = last_segment(layout, part)
    pos = append(seg, garbage)
    plan = recover_and_check(layout, root, q)
    assert [(s.action, s.position, s.length) for s in plan.steps] == [("truncate", pos, len(garbage))]


def test_jafka_spec_recovery_examples(work):
    """jafka.md test vectors: hello+world + 7 torn bytes -> 30; a CRC mismatch -> 15; a trailing
    ``00 00 00 00`` -> the 4 bytes go."""
    hello = bytes.fromhex("0000000b01003610a686") + b"hello"
    world = bytes.fromhex("0000000b01003a771143") + b"world"
    cases = [
        (hello + world + bytes.fromhex("0000000b010036"), 30),
        (hello + world[:-1] + b"D", 15),
        (hello + world + bytes(4), 30),
    ]
    for i, (content, valid) in enumerate(cases):
        root = work.mktemp(f"vector{i}") / "data"
        (root / "v-0").mkdir(parents=True)
        (root / "v-0" / "00000000000000001000.jafka").write_bytes(content)
        plan = plan_jafka(root)
        [step] = plan.steps
        assert (step.position, step.length) == (valid, len(content) - valid)
        assert plan.valid_end == 1000 + valid
        apply_legacy(plan, quarantine_root=root.parent / "q", jobs=1)
        assert (root / "v-0" / "00000000000000001000.jafka").read_bytes() == content[:valid]


def test_metaq_spec_recovery_examples(work):
    """metaq.md test vectors: 10 bytes of a torn header go; a header with msgLen 100 but 30 data
    bytes -> the 50-byte tail goes; one flipped data byte -> cut from that message's start."""
    first = bytes.fromhex("0000000536 10a686 0000000000002710 00000000".replace(" ", "")) + b"hello"
    third = bytes.fromhex("0000000d4b62e51c000000000000271100000001000000046174747268656c6c6f")
    base = first + third
    assert len(base) == 58
    cases = [
        (base + bytes.fromhex("00000064abcdef0102ff"), 58),
        (base + (100).to_bytes(4, "big") + bytes(range(1, 17)) + bytes(range(1, 31)), 58),
        (first + third[:-1] + b"X", 25),
    ]
    for i, (content, valid) in enumerate(cases):
        root = work.mktemp(f"mvector{i}") / "data"
        (root / "v-0").mkdir(parents=True)
        (root / "v-0" / "00000000001073741845.meta").write_bytes(content)
        plan = plan_metaq(root)
        [step] = plan.steps
        assert (step.position, step.length) == (valid, len(content) - valid), i
        assert plan.valid_end == 1073741845 + valid
        apply_legacy(plan, quarantine_root=root.parent / "q", jobs=1)
        assert (root / "v-0" / "00000000001073741845.meta").read_bytes() == content[:valid]


def test_jafka_magic_zero_ends_the_valid_data(work, pristine):
    """A complete, CRC-valid Kafka 0.7 magic-0 message: Jafka's recovery throws on it (the broker
    does not start); recover cuts it."""
    root, part, q = fresh(work, pristine, "jafka")
    seg = last_segment("jafka", part)
    pos = append(seg, jf.encode_message(jf.Message(b"x" * 100, magic=0)))
    assert any(f.code == "JAFKA-RECOVERY-CRASH" for f in validate("jafka", root).findings)
    plan = recover_and_check("jafka", root, q)
    [step] = plan.steps
    assert step.position == pos and "magic byte 0" in step.reason


def test_zero_tail_metaq_cut_where_the_broker_keeps_empty_messages(work, pristine):
    """45 zero bytes: MetaQ's recovery keeps two 20-byte zero headers as empty messages (id 0)
    and truncates 5 bytes; mqtool cuts all 45 (nothing wrote those messages)."""
    root, part, q = fresh(work, pristine, "metaq")
    seg = last_segment("metaq", part)
    pos = append(seg, bytes(45))
    plan = recover_and_check("metaq", root, q, via_cli=True)
    [step] = plan.steps
    assert (step.position, step.length) == (pos, 45)
    start = int(seg.name.split(".")[0])
    fact = plan.facts["partitions"][0]
    assert fact["log_end_offset"] == start + pos and fact["broker_recovery_end_offset"] == start + pos + 40
    assert "2 empty message(s)" in step.reason


def test_metaq_zero_gap_is_kept_as_the_loader_reads_it(work):
    """Zeros between messages, a multiple of 20 long: MetaQ's recovery reads them as empty
    messages and keeps the messages after them, so recover keeps them too (no cut, a note)."""
    root = work.mktemp("gap") / "data"
    part = root / "t-0"
    part.mkdir(parents=True)
    content = encoded("metaq", 1) + bytes(40) + encoded("metaq", 2) + encoded("metaq", 3)
    (part / "00000000000000000000.meta").write_bytes(content)
    plan = plan_metaq(root)
    assert not plan.has_work
    assert plan.facts["partitions"][0]["kept_zero_gaps"] == [{"offset": len(encoded("metaq", 1)), "length": 40}]
    assert any("empty message(s)" in n for n in plan.notes)
    assert plan.valid_end == len(content)


def test_metaq_zero_gap_the_loader_cannot_cross_needs_force(work):
    """A zero gap of 30 bytes: MetaQ's recovery reads one empty message of zeros, then one made of
    the last 10 zeros and the next message's first 10 bytes (msgLen 0, checksum 0), then fails
    in the middle of that message and truncates there, dropping the messages after.  recover
    cuts at the gap (neither empty message was written by anyone), counts the dropped messages
    and needs --force."""
    root = work.mktemp("gap30") / "data"
    part = root / "t-0"
    part.mkdir(parents=True)
    m1 = encoded("metaq", 1)
    content = m1 + bytes(30) + encoded("metaq", 2) + encoded("metaq", 3)
    (part / "00000000000000000000.meta").write_bytes(content)
    plan = plan_metaq(root)
    [step] = plan.steps
    assert (step.position, step.length) == (len(m1), len(content) - len(m1))
    assert plan.records_dropped == 2 and plan.needs_force
    assert plan.facts["partitions"][0]["broker_recovery_end_offset"] == len(m1) + 40
    with pytest.raises(PlanChangedError, match="--force"):
        apply_legacy(plan, quarantine_root=root.parent / "q", jobs=1)
    code, _, err = cli("recover", root, "--apply", "--quarantine", root.parent / "q")
    assert code == 1 and "--force" in err
    recover_and_check("metaq", root, root.parent / "q2", force=True)


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_broken_message_in_the_middle_needs_force(work, pristine, layout):
    """One flipped payload byte in the middle of the last segment: the broker drops every message
    after it; the plan counts them and needs --force; all of it is quarantined."""
    root, part, q = fresh(work, pristine, layout)
    seg = last_segment(layout, part)
    size = seg.stat().st_size
    start = int(seg.name.split(".")[0])
    offsets = [o for p, o, _ in messages(layout, root) if o >= start]
    assert len(offsets) >= 3
    victim = offsets[1] - start
    data = bytearray(seg.read_bytes())
    data[victim + (10 if layout == "jafka" else 20)] ^= 0xFF
    seg.write_bytes(bytes(data))
    plan = PLAN[layout](root)
    [step] = plan.steps
    assert step.position == victim and step.length == size - victim
    assert plan.records_dropped == len(offsets) - 2 and plan.needs_force
    recover_and_check(layout, root, q, force=True, via_cli=True)


def test_jafka_with_the_clean_shutdown_marker_is_repaired_too(work, pristine):
    """With .jafka_cleanshutdown Jafka skips recovery and appends after a torn tail: recover cuts
    it all the same and leaves the marker alone (and never creates one)."""
    root, part, q = fresh(work, pristine, "jafka")
    (root / sj.CLEAN_SHUTDOWN_FILE).touch()
    append(last_segment("jafka", part), encoded("jafka", 5)[:7])
    assert any(f.code == "JAFKA-UNRECOVERED" for f in validate("jafka", root).findings)
    plan = recover_and_check("jafka", root, q)
    assert plan.facts["clean_shutdown_marker"] is True and any(sj.CLEAN_SHUTDOWN_FILE in n for n in plan.notes)
    root2, part2, q2 = fresh(work, pristine, "jafka")
    append(last_segment("jafka", part2), encoded("jafka", 5)[:7])
    apply_legacy(plan_jafka(root2), quarantine_root=q2, jobs=1)
    assert not (root2 / sj.CLEAN_SHUTDOWN_FILE).exists()


def test_every_partition_and_an_empty_last_segment(work):
    """A data dir: only damaged partitions get a step; an empty last segment needs nothing."""
    root = work.mktemp("multi") / "data"
    build("jafka", root, {"a-0": 9, "a-1": 9, "b-b-3": 9})
    append(last_segment("jafka", root / "a-1"), b"\x00\x00\x00\x20\x01")
    last = last_segment("jafka", root / "b-b-3")
    if last.stat().st_size:  # roll: an empty last segment where the previous one ends
        (root / "b-b-3" / segnames.jafka_file_name(int(last.name.split(".")[0]) + last.stat().st_size)).write_bytes(b"")
    assert last_segment("jafka", root / "b-b-3").stat().st_size == 0
    plan = plan_jafka(root)
    assert [s.path.split("/")[0] for s in plan.steps] == ["a-1"]
    assert plan.valid_end is None and len(plan.facts["partitions"]) == 3
    code, out, _ = cli("recover", root)
    assert code == 1 and "valid data ends at None" not in out


# --- 2. holes between segments ---------------------------------------------------------------------------------------------


def test_metaq_hole_archives_the_segments_before_it(work):
    """A middle segment gone (MetaQ's own non-prefix delete policy does this): the loader refuses
    the partition.  The segments before the hole are renamed to .meta.arc (with --force); the
    live log joins again; undo restores it all."""
    root = work.mktemp("mhole") / "data"
    build("metaq", root, {"t-0": 30})
    part = root / "t-0"
    segs = sorted(part.glob("*.meta"))
    assert len(segs) >= 5
    segs[2].unlink()
    assert any(f.code == "METAQ-SEGMENT-GAP" for f in validate("metaq", root).findings)
    before = messages("metaq", root)
    plan = plan_metaq(root)
    assert [(s.action, s.path) for s in plan.steps] == [("archive-segment", f"t-0/{p.name}") for p in segs[:2]]
    assert plan.needs_force and "renamed to .meta.arc" in plan.needs_force[0]
    original = tree(root)
    result = apply_legacy(plan, quarantine_root=root.parent / "q", force=True, jobs=1)
    assert not result.verification.failed
    assert sorted(p.name for p in part.iterdir()) == sorted([p.name + ".arc" for p in segs[:2]] + [p.name for p in segs[3:]])
    for p in segs[:2]:
        assert (part / (p.name + ".arc")).read_bytes() == original[f"t-0/{p.name}"]
    assert messages("metaq", root) == [m for m in before if m[1] >= int(segs[3].name.split(".")[0])]
    assert_clean("metaq", root)
    check_quarantine(original, tree(root), [Path(result.manifest)])
    undo_manifest(Path(result.manifest))
    assert tree(root) == original


def test_jafka_hole_deletes_the_segments_before_it_into_the_quarantine(work):
    root = work.mktemp("jhole") / "data"
    build("jafka", root, {"t-0": 30})
    part = root / "t-0"
    segs = sorted(part.glob("*.jafka"))
    segs[1].unlink()
    plan = plan_jafka(root)
    assert [(s.action, s.path) for s in plan.steps] == [("delete", f"t-0/{segs[0].name}")]
    assert plan.needs_force
    code, _, err = cli("recover", root, "--apply", "--quarantine", root.parent / "q")
    assert code == 1 and "--force" in err
    recover_and_check("jafka", root, root.parent / "q", force=True)


# --- 3. crash safety: kill -9 at every mutation ---------------------------------------------------------------------------------


def damage(layout: str, root: Path) -> None:
    """Every kind of tail damage, one partition each, and a hole in partition ``h-0``."""
    parts = ["p-0", "p-1", "p-2", "p-3", "p-4"]
    build(layout, root, {**{p: 11 + i for i, p in enumerate(parts)}, "h-0": 30})
    torn = encoded(layout, 77)
    append(last_segment(layout, root / "p-0"), torn[: len(torn) // 2])
    append(last_segment(layout, root / "p-1"), bytes(45))
    append(last_segment(layout, root / "p-2"), b"\x7f\x01garbage that is not a message")
    seg = last_segment(layout, root / "p-3")
    if seg.stat().st_size == 0:
        append(seg, encoded(layout, 1))
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0x55
    seg.write_bytes(bytes(data))
    append(last_segment(layout, root / "p-4"), torn[:5] + bytes(len(torn) - 5))
    suffix = ".jafka" if layout == "jafka" else ".meta"
    sorted((root / "h-0").glob("*" + suffix))[2].unlink()


def _rerun_for(layout: str):
    def rerun(store: Path, q: Path):
        return apply_legacy(PLAN[layout](store), quarantine_root=q, force=True, jobs=1)

    return rerun


@pytest.fixture(scope="module", params=["jafka", "metaq"])
def crash_case(work, request):
    layout = request.param
    base = work.mktemp(f"crash-{layout}")
    damaged = base / "damaged"
    damage(layout, damaged)
    plan = PLAN[layout](damaged)
    actions = [s.action for s in plan.steps]
    assert actions.count("truncate") == 5
    assert ("archive-segment" if layout == "metaq" else "delete") in actions
    case = make_case(base, damaged, _rerun_for(layout), "--force", layout=layout)
    assert_clean(layout, base / "reference")
    return case


def test_kill_at_every_mutation_then_rerun(work, crash_case, monkeypatch):
    """SIGKILL at each mutation of the real command (at least 20): a rerun gives the
    uninterrupted run's store, validate is clean, and the quarantines of both runs together hold
    every byte that went."""
    monkeypatch.delenv("MQTOOL_FAULT_INJECT", raising=False)
    case = crash_case
    assert case.mutations >= 20
    kill_at(work.mktemp("kills"), case, range(1, case.mutations + 1), _rerun_for(case.layout))


@pytest.mark.parametrize("kind,text", IO_FAULTS)
def test_io_error_at_every_mutation_then_rerun(work, crash_case, monkeypatch, kind, text):
    """An I/O error at mutation 1, 2, ...: a one-line error (exit 3 through the CLI); the store is
    untouched at the first mutation and a plain rerun finishes the job, to the same store."""
    case = crash_case
    io_error_at(work.mktemp(kind), case, range(1, case.mutations + 1), kind, text, _rerun_for(case.layout), monkeypatch, cli_every=8)


def test_undo_restores_byte_for_byte(work, crash_case):
    check_undo(work.mktemp("undo"), crash_case)


# --- 4. plan / apply contract, locks, paths ----------------------------------------------------------------------------------------


def test_plan_json_and_exit_codes(work, pristine):
    root, part, q = fresh(work, pristine, "metaq")
    seg = last_segment("metaq", part)
    pos = append(seg, bytes(12))
    code, out, err = cli("recover", root, "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["layout"] == "metaq" and doc["has_work"] and doc["mode"] == "last-segment"
    [step] = doc["steps"]
    assert (step["action"], step["path"], step["position"], step["length"]) == ("truncate", f"t-0/{seg.name}", pos, 12)
    assert set(step["expect"]) == {"exists", "size", "mtime_ns", "crc32"}
    assert json.loads(cli("recover", root, "--json")[1]) == doc  # the same store, the same plan
    assert cli("recover", root, "--mode", "abnormal")[0] == 2  # no such option for this layout
    assert cli("recover", root, "--rebuild-index")[0] == 2
    assert cli("recover", seg)[0] == 3  # a segment file: recover takes a partition or data dir
    assert cli("recover", root, "--apply", "--quarantine", q, "--jobs", "1")[0] == 0
    assert cli("recover", root)[0] == 0
    code, out, _ = cli("recover", root, "--apply", "--quarantine", q, "--json")
    assert code == 0 and json.loads(out)["applied"] == []


def test_from_plan_and_a_changed_store(work, pristine):
    """--from-plan applies exactly the saved plan; a file changed since planning refuses it
    (exit 1, nothing touched)."""
    root, part, q = fresh(work, pristine, "jafka")
    seg = last_segment("jafka", part)
    append(seg, b"\x00\x00\x01")
    plan_file = root.parent / "plan.json"
    assert cli("recover", root, "--plan-out", plan_file)[0] == 1
    append(seg, b"\x02")
    before = tree(root)
    code, _, err = cli("recover", "--from-plan", plan_file, "--apply", "--quarantine", q)
    assert code == 1 and "changed since the plan" in err and len(err.strip().splitlines()) == 1
    assert tree(root) == before and not q.exists()
    assert cli("recover", root, "--plan-out", plan_file)[0] == 1
    code, out, err = cli("recover", "--from-plan", plan_file, "--apply", "--quarantine", q, "--json", "--jobs", "1")
    assert code == 0, err
    assert [s["action"] for s in json.loads(out)["applied"]] == ["truncate"]
    assert_clean("jafka", root)


def test_lock_held_by_another_mqtool_exits_75(work, pristine):
    root, part, q = fresh(work, pristine, "metaq")
    append(last_segment("metaq", part), b"\x01\x02")
    before = tree(root)
    with ExclusiveLock(root):
        code, _, err = cli("recover", root, "--apply", "--quarantine", q)
        assert code == 75 and "another mqtool run holds the lock" in err
        assert cli("recover", root)[0] == 1  # planning needs no lock
        with pytest.raises(LockBusyError):
            apply_legacy(plan_metaq(root), quarantine_root=q)
    assert tree(root) == before and not q.exists()
    result = apply_legacy(plan_metaq(root), quarantine_root=q, jobs=1)
    with ExclusiveLock(root):
        assert cli("recover", "--undo", result.manifest)[0] == 75
    # the run removes its lock file when it ends; while a run holds it, validate does not report
    # it as a stray file
    assert not (root / MQTOOL_LOCK_NAME).exists()
    (root / MQTOOL_LOCK_NAME).write_text("1\n")
    assert not [f for f in validate("metaq", root).findings if f.code == "METAQ-UNEXPECTED-FILE"]


def test_partition_path_quarantines_beside_the_data_dir(work, pristine):
    """recover on one partition: the default quarantine is beside the data dir, never inside it
    (a ``mqtool-quarantine`` directory in the data dir would stop both brokers' loaders)."""
    for layout in ("jafka", "metaq"):
        root, part, _ = fresh(work, pristine, layout)
        append(last_segment(layout, part), b"\x05\x06\x07")
        code, out, err = cli("recover", part, "--apply", "--json", "--jobs", "1")
        assert code == 0, err
        manifest = Path(json.loads(out)["manifest"])
        assert manifest.parent.parent == root.parent / "mqtool-quarantine"
        assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["t-0"]
        assert_clean(layout, root)
        assert not (part / MQTOOL_LOCK_NAME).exists()  # removed when the run ends
        (part / MQTOOL_LOCK_NAME).write_text("1\n")  # a run in progress: not a stray file
        assert not [f for f in validate(layout, root).findings if f.code.endswith("UNEXPECTED-FILE")]
