"""``recover`` follows the recovery of the RocketMQ version it models (issue 28, points 1 and 2).

Copies of ``fixtures/rocketmq-store`` (six CommitLog files, a clean shutdown) get one body byte
flipped in a record of the last, second-last or third-last CommitLog file, with and without an
``abort`` file.  For each broker rule the plan's valid end, its CommitLog cuts and deletions must
be what that broker's restart does, computed here from the files themselves, independently of
mqtool's model:

* 4.x-5.3.1, clean shutdown: ``CommitLog.recoverNormally`` scans from the third-last file;
* 5.3.2+, clean shutdown (apache/rocketmq 9a891f1d49, #8915): from the newest file whose first
  offset is at or below the highest ``offset + size`` of any ConsumeQueue unit;
* either, with ``abort``: ``recoverAbnormally`` from the newest file whose first record's store
  time is at or before the checkpoint's min timestamp (physic/logics minus 3 s).

The scan stops at the damaged record when it reaches it (the broker cuts from there and deletes
every later file); otherwise nothing of the CommitLog is cut, and under ``--force`` the files
stay byte for byte.  Run through the CLI, as the operator does; the output names the version.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import struct
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import commitlog as cl

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"
UNIT = struct.Struct(">qiq")  # ConsumeQueue unit: commitlog offset, size, tags code


def cli(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def commitlog_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "commitlog").iterdir() if p.stat().st_size > 0)


def records(path: Path) -> list[tuple[int, int, int]]:
    """(position, size, store timestamp) of every record of a CommitLog file, to its end."""
    data, pos, out = path.read_bytes(), 0, []
    while pos + 8 <= len(data):
        total, magic = struct.unpack_from(">iI", data, pos)
        if magic not in cl.MESSAGE_MAGICS or total <= 0:
            break
        out.append((pos, total, cl.decode_message(data[pos : pos + total], 0, check_crc=False).store_timestamp))
        pos += total
    return out


def cq_max(root: Path) -> int:
    """The highest offset + size of a valid unit in the last three files of any queue."""
    best = -1
    for qdir in (root / "consumequeue").glob("*/*"):
        for path in sorted(qdir.iterdir())[-3:]:
            data = path.read_bytes()
            for pos in range(0, len(data) - len(data) % UNIT.size, UNIT.size):
                offset, size, _ = UNIT.unpack_from(data, pos)
                if offset < 0 or size <= 0:
                    break
                best = max(best, offset + size)
    return best


def start_file(root: Path, rule: str, abort: bool) -> int:
    """The index of the CommitLog file the modelled broker's recovery starts at."""
    files = commitlog_files(root)
    if abort:
        cp = cpf.decode_checkpoint((root / "checkpoint").read_bytes())
        bound = max(0, min(cp.physic_msg_timestamp, cp.logics_msg_timestamp) - 3000)
        return next((i for i in range(len(files) - 1, -1, -1) if 0 < records(files[i])[0][2] <= bound), 0)
    if rule == "old":
        return max(0, len(files) - 3)
    highest = cq_max(root)
    return next((i for i in range(len(files) - 1, 0, -1) if int(files[i].name) <= highest), 0)


def damage(root: Path, which: int) -> tuple[Path, int]:
    """Flip the first body byte of the fifth record of CommitLog file ``which`` (-1: the last)."""
    path = commitlog_files(root)[which]
    pos, _size, _ts = records(path)[4]
    data = bytearray(path.read_bytes())
    sys_flag = struct.unpack_from(">i", data, pos + 36)[0]
    data[pos + cl.body_position(sys_flag)] ^= 0x40
    path.write_bytes(bytes(data))
    return path, pos


RULES = {"old": ("5.3.1", "4.x-5.3.1"), "new": ("5.3.3", "5.3.2+")}


@pytest.mark.parametrize("abort", [False, True], ids=["clean", "abort"])
@pytest.mark.parametrize("which", [-1, -2, -3], ids=["last", "second-last", "third-last"])
@pytest.mark.parametrize("rule", ["old", "new"])
def test_plan_follows_the_modelled_broker(tmp_path: Path, rule: str, which: int, abort: bool) -> None:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    if abort:
        (root / "abort").write_bytes(b"")
    files = commitlog_files(root)
    store_end = int(files[-1].name) + sum(size for _, size, _ in records(files[-1]))
    victim_path, victim_pos = damage(root, which)
    victim_index = files.index(victim_path)
    start = start_file(root, rule, abort)
    version, model = RULES[rule]

    code, out, err = cli("recover", root, "--broker-version", version, "--json")
    plan = json.loads(out)
    assert plan["facts"]["broker"] == {"broker_version": version, "broker_model": model, "source": "--broker-version", "evidence": []}
    assert plan["mode"] == ("abnormal" if abort else "normal")
    assert plan["facts"]["scan_start_file"] == files[start].name
    cuts = {(s["path"], s["position"]) for s in plan["steps"] if s["action"] == "cut" and s["path"].startswith("commitlog/")}
    deleted = {s["path"] for s in plan["steps"] if s["action"] == "delete" and s["path"].startswith("commitlog/")}
    if victim_index >= start:
        # the broker's scan reaches the damaged record: it ends the valid data there
        assert plan["valid_end"] == int(victim_path.name) + victim_pos
        assert cuts == {(f"commitlog/{victim_path.name}", victim_pos)}
        assert deleted == {f"commitlog/{p.name}" for p in files[victim_index + 1 :]}
        assert plan["records_dropped"] > 0
        (reason,) = plan["needs_force"]
        assert f"RocketMQ {version}'s {plan['mode']} recovery" in reason and "drops them too" in reason
    else:
        # the broker never re-reads the file: it keeps every message, so does the plan
        assert plan["valid_end"] == store_end
        assert not cuts and not deleted and plan["records_dropped"] == 0
        assert not any("drops them too" in r for r in plan["needs_force"])
        assert any(f"RocketMQ {version}'s normal recovery starts at {files[start].name}" in n and "keeps their records" in n for n in plan["notes"])
        assert [f["code"] for f in plan["unfixable"]] == ["RMQ-CL-BODY-CRC"]
    code, table, _ = cli("recover", root, "--broker-version", version)
    assert code == 1
    assert f"broker modelled: RocketMQ {version} (--broker-version)" in " ".join(table.split())


def test_force_keeps_what_the_new_broker_keeps(tmp_path: Path) -> None:
    """5.3.2+, clean shutdown, damage in the second-last file: ``--apply --force`` changes no
    CommitLog byte (the broker keeps every message; mqtool does no more than it)."""
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    damage(root, -2)
    before = {p.name: p.read_bytes() for p in (root / "commitlog").iterdir()}
    code, out, err = cli("recover", root, "--broker-version", "5.3.2", "--apply", "--force", "--quarantine", tmp_path / "q", "--json")
    assert code == 1, err  # the damaged record stays: validation still fails
    assert {p.name: p.read_bytes() for p in (root / "commitlog").iterdir()} == before
    # the old broker cuts the second-last file and deletes the last
    shutil.rmtree(root)
    shutil.copytree(FIXTURE, root)
    _path, pos = damage(root, -2)
    files = commitlog_files(root)
    code, out, err = cli("recover", root, "--broker-version", "4.9.8", "--apply", "--force", "--quarantine", tmp_path / "q2", "--json")
    assert not files[-1].exists()
    assert files[-2].read_bytes()[pos:].strip(b"\x00") == b""


def test_the_version_comes_from_the_config_then_the_store_then_the_newest(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    damage(root, -2)

    def broker(*args: object) -> dict:
        code, out, err = cli("recover", root, "--json", *args)
        return json.loads(out)["facts"]["broker"]

    newest = broker()
    assert newest["broker_model"] == "5.3.2+" and newest["source"].startswith("no version given")
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nrocketmqHome=/opt/rocketmq-all-4.9.8-bin-release\n")
    assert broker("--config", conf) == {
        "broker_version": "4.9.8",
        "broker_model": "4.x-5.3.1",
        "source": f"--config {conf}",
        "evidence": ["rocketmqHome=/opt/rocketmq-all-4.9.8-bin-release (4.9.8)"],
    }
    assert broker("--config", conf, "--broker-version", "5.3.3")["broker_model"] == "5.3.2+"  # the flag wins
    conf.write_text("timerWheelEnable=true\n")
    assert broker("--config", conf)["evidence"] == ["timerWheelEnable (5.0.0+)"]
    (root / "config" / "timercheck").write_bytes(b"\0" * 8)
    marked = broker()
    assert marked["broker_model"] == "5.3.2+" and marked["evidence"] == ["config/timercheck (5.0.0+)"]
    code, _, err = cli("recover", root, "--broker-version", "five")
    assert code == 2 and "--broker-version" in err


# --- the restart preview (issue 28, point 5) ---------------------------------------------------------


def _truncate_last(root: Path) -> None:
    last = commitlog_files(root)[-1]
    data = last.read_bytes()
    last.write_bytes(data[: records(last)[-1][0] + 30] + b"\0" * (len(data) - records(last)[-1][0] - 30))


PREVIEW_CASES = {
    "healthy": lambda root: None,
    "last": lambda root: damage(root, -1),
    "second-last": lambda root: damage(root, -2),
    "third-last": lambda root: damage(root, -3),
    "torn-tail": _truncate_last,
}


@pytest.mark.parametrize("abort", [False, True], ids=["clean", "abort"])
@pytest.mark.parametrize("case", list(PREVIEW_CASES))
@pytest.mark.parametrize("version", ["4.9.8", "5.3.3"])
def test_info_previews_the_restart_the_plan_models(tmp_path: Path, version: str, case: str, abort: bool) -> None:
    """``info``'s restart preview is the plan's: the same start, scan bytes (valid end minus the
    start offset), drops and deleted files; it names the version, in JSON and in the table."""
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    if abort:
        (root / "abort").write_bytes(b"")
    PREVIEW_CASES[case](root)
    _code, out, _err = cli("recover", root, "--broker-version", version, "--json")
    plan = json.loads(out)
    _code, out, _err = cli("info", root, "--broker-version", version, "--json")
    restart = json.loads(out)["restart"]
    assert restart["broker_version"] == version and restart["source"] == "--broker-version"
    assert restart["recovery"] == plan["mode"] == ("abnormal" if abort else "normal")
    assert restart["starts_at"]["file"] == f"commitlog/{plan['facts']['scan_start_file']}"
    assert restart["starts_at"]["commitlog_offset"] == plan["facts"]["scan_start_offset"] == int(plan["facts"]["scan_start_file"])
    assert restart["valid_end"] == plan["valid_end"]
    assert restart["scan_bytes"] == plan["valid_end"] - plan["facts"]["scan_start_offset"] > 0
    assert restart["drops"]["records"] == plan["records_dropped"]
    deleted = [s["path"] for s in plan["steps"] if s["action"] == "delete" and s["path"].startswith("commitlog/")]
    assert restart["drops"]["files_deleted"] == deleted
    cut = [(s["path"], s["position"], s["length"]) for s in plan["steps"] if s["action"] == "cut" and s["path"].startswith("commitlog/")]
    assert [(c["file"], c["position"], c["length"]) for c in restart["drops"]["cut"]] == cut
    sizes = {f"commitlog/{p.name}": p.stat().st_size for p in (root / "commitlog").iterdir()}
    assert restart["drops"]["bytes"] == sum(length for _, _, length in cut) + sum(sizes[d] for d in deleted)
    assert restart["read_bytes_per_second"] > 0
    assert restart["estimated_seconds"] == pytest.approx(restart["scan_bytes"] / restart["read_bytes_per_second"], abs=1e-3)
    plan_restart = {k: v for k, v in plan["facts"]["restart"].items() if k not in ("read_bytes_per_second", "estimated_seconds")}
    assert plan_restart == {k: v for k, v in restart.items() if k not in ("read_bytes_per_second", "estimated_seconds")}
    if abort:
        # recoverAbnormally re-dispatches every record it scans; IndexService.load destroys the
        # IndexFiles ending after the checkpoint's indexMsgTimestamp
        assert restart["rebuilds"]["dispatch_from_commitlog_offset"] == restart["starts_at"]["commitlog_offset"]
        assert restart["rebuilds"]["index_msg_timestamp"] == cpf.decode_checkpoint((root / "checkpoint").read_bytes()).index_msg_timestamp
    _code, table, _err = cli("info", root, "--broker-version", version)
    flat = " ".join(table.split())
    assert f"broker modelled RocketMQ {version} (--broker-version)" in flat
    assert f"{restart['recovery']} recovery from {restart['starts_at']['file']}" in flat


def test_the_abort_step_says_what_the_broker_would_destroy(tmp_path: Path) -> None:
    """After a crash the broker's IndexService.load destroys the IndexFiles ending after the
    checkpoint's indexMsgTimestamp; mqtool keeps them and its remove-abort step says so."""
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    (root / "abort").write_bytes(b"")
    _code, out, _err = cli("info", root, "--json")
    destroyed = json.loads(out)["restart"]["rebuilds"]["index_files_destroyed"]
    assert destroyed  # the fixture's checkpoint indexMsgTimestamp is older than its last IndexFile's end
    _code, out, _err = cli("recover", root, "--json")
    (step,) = [s for s in json.loads(out)["steps"] if s["action"] == "remove-abort"]
    assert f"the broker would start abnormally and destroy {len(destroyed)} IndexFile(s)" in step["reason"]
    assert all(name in step["reason"] for name in destroyed) and "mqtool keeps them" in step["reason"]


def test_a_deleted_last_consume_queue_file_is_rebuilt_and_the_step_says_the_broker_would_not(tmp_path: Path) -> None:
    """The last ConsumeQueue file of a queue deleted: its records lie before the highest CommitLog
    offset the other queues point to, which the broker never dispatches again (it would hand their
    queue offsets out a second time); mqtool writes their units, and its step says so."""
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    qdir = root / "consumequeue" / "AuditLog" / "0"
    last = sorted(qdir.iterdir())[-1]
    data = last.read_bytes()
    units = [UNIT.unpack_from(data, pos) for pos in range(0, len(data), UNIT.size)]
    units = [(offset, size) for offset, size, _tags in units if size > 0]
    last.unlink()
    highest = cq_max(root)
    before = sum(1 for offset, size in units if offset + size <= highest)
    assert 0 < before < len(units)  # the store's last record is in it: the broker would dispatch that one
    _code, out, _err = cli("recover", root, "--json")
    plan = json.loads(out)
    (step,) = [s for s in plan["steps"] if s["action"] == "dispatch-cq"]
    assert step["path"] == "consumequeue/AuditLog/0" and step["details"]["count"] == len(units)
    assert plan["facts"]["consume_queue_max_commitlog_offset"] == highest
    assert f"the broker would dispatch only the {len(units) - before} of them after the ConsumeQueues' highest CommitLog offset {highest}" in step["reason"]
    assert f"would hand out the queue offsets of the {before} before it again" in step["reason"]
    assert "mqtool writes all their units" in step["reason"]
    code, out, err = cli("recover", root, "--apply", "--quarantine", tmp_path / "q", "--json")
    assert code == 0, err
    assert last.exists()


@pytest.mark.parametrize("version", ["5.3.1", "5.3.3"])
def test_validate_says_of_the_broker_what_the_modelled_version_does(tmp_path: Path, version: str) -> None:
    """The third-last CommitLog file's records stop early without END_OF_FILE: 4.x-5.3.1 start
    their clean recovery there and stop (dropping every later file); 5.3.2+ start at the last
    file and never read it.  validate's RMQ-CL-NO-BLANK says which, and names the version."""
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    third = commitlog_files(root)[-3]
    data = bytearray(third.read_bytes())
    pos = records(third)[4][0]
    data[pos:] = bytes(len(data) - pos)
    third.write_bytes(bytes(data))
    code, out, _err = cli("validate", root, "--broker-version", version, "--json")
    report = json.loads(out)
    assert code == 1
    broker = report["facts"]["broker"]
    start = commitlog_files(root)[start_file(root, "old" if version == "5.3.1" else "new", False)]
    assert (broker["broker_version"], broker["recovery"], broker["recovery_starts_at"]["file"]) == (version, "normal", f"commitlog/{start.name}")
    (no_blank,) = [f for f in report["findings"] if f["code"] == "RMQ-CL-NO-BLANK"]
    assert no_blank["path"] == str(third) and no_blank["position"] == pos
    if version == "5.3.1":
        assert no_blank["message"].endswith("the broker's recovery stops here and drops every later file")
    else:
        assert no_blank["message"].endswith(f"RocketMQ 5.3.3's normal recovery starts at {start.name}, after this file, and does not read it")
    _code, table, _err = cli("validate", root, "--broker-version", version)
    assert f"broker modelled: RocketMQ {version} (--broker-version)" in " ".join(table.split())
