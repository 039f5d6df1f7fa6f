"""The report's data model (mqtool.ops.report.gather) on the fixture store and damaged copies."""

import shutil
from pathlib import Path

import pytest

from mqtool.ops.report import gather

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(FIXTURE, dst)
    return dst


def test_healthy_store_is_ok_with_no_cuts(store: Path) -> None:
    r = gather(store, "rocketmq")
    assert r.verdict == "OK" and r.exit_code == 0
    assert r.recover == []
    assert all(not s.cuts and s.end_kind != "missing" for log in r.logs for s in log.segments)
    assert [log.name for log in r.logs][0] == "commitlog" and r.logs[-1].name == "index"


def test_torn_tail_gives_a_recover_cut_at_the_valid_end(store: Path) -> None:
    last = sorted((store / "commitlog").iterdir())[-1]
    data = bytearray(last.read_bytes())
    end = len(data.rstrip(b"\0"))
    data[end - 30 : end] = b"\xff" * 30  # tear the last record
    last.write_bytes(bytes(data))
    r = gather(store, "rocketmq")
    assert r.exit_code == 1
    rel = f"commitlog/{last.name}"
    cut = next(c for c in r.recover if c["path"] == rel)
    assert cut["action"] == "cut"
    valid_end = next(g["position"] for g in r.groups if g["code"] == "RMQ-CL-VALID-END")
    assert cut["position"] == valid_end and cut["bytes"] == end - valid_end  # up to the last written byte
    seg = next(s for s in r.logs[0].segments if s.path == rel)
    assert seg.end_kind == "torn" and [c.position for c in seg.cuts] == [valid_end]


def test_missing_middle_commitlog_file_is_drawn_missing(store: Path) -> None:
    files = sorted((store / "commitlog").iterdir())
    gone = files[len(files) // 2]
    gone.unlink()
    r = gather(store, "rocketmq")
    segs = r.logs[0].segments
    assert [s.path for s in segs] == [f"commitlog/{f.name}" for f in files]
    missing = [s for s in segs if s.end_kind == "missing"]
    assert [s.path for s in missing] == [f"commitlog/{gone.name}"]
    assert missing[0].start == int(gone.name) - int(files[0].name)
    assert any(g["code"] == "RMQ-FILE-GAP" for g in r.groups)


def test_unconsumed_data_gives_consumer_marks_and_lag(store: Path) -> None:
    r = gather(store, "rocketmq")
    behind = [row for row in r.lag if row["lag_messages"]]
    assert behind, "the fixture has groups behind the log end"
    marks = {(c.group, c.log, c.offset) for log in r.logs for c in log.consumers}
    for row in behind:
        assert (row["group"], f"consumequeue/{row['topic']}/{row['queue']}", row["committed"]) in marks


def test_clean_plan_keeps_unconsumed_files_and_says_so(store: Path) -> None:
    r = gather(store, "rocketmq", now_ms=10**13)  # far future: every file is past retention
    assert r.clean_totals["files"] == len(r.clean)
    drawn = {c.path for log in r.logs for s in log.segments for c in s.cuts if c.kind == "clean"}
    assert drawn == {c["path"] for c in r.clean}
    assert r.clean_notes, "consumer protection holds files back and notes it"


def test_kafka_torn_tail_is_drawn_torn_and_logs_are_partitions(tmp_path: Path) -> None:
    store = tmp_path / "kafka"
    shutil.copytree(FIXTURE.parent / "kafka-logs", store)
    seg = store / "events-0" / "00000000000000000000.log"
    seg.write_bytes(seg.read_bytes() + b"\x00" * 7 + b"\x09\x00\x00\x01\x00\x01\x02")  # a header cut short
    r = gather(store, "kafka")
    names = [log.name for log in r.logs]
    assert "events-0" in names and names[-1] == "(root)" and "." not in names
    drawn = {s.path: s.end_kind for log in r.logs for s in log.segments}
    assert drawn["events-0/00000000000000000000.log"] == "torn"
    assert any(g["code"] == "KAFKA-LOG-TORN-TAIL" for g in r.groups)


def test_the_last_commitlog_file_ends_in_preallocated_zeros() -> None:
    """The healthy fixture's last CommitLog file holds data up to validate's RMQ-CL-VALID-END and
    the broker's pre-allocated zeros after it: drawn as ``zeros`` with its data share."""
    import json
    import subprocess
    import sys

    from mqtool.ops.report import gather

    fixture = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"
    report = gather(fixture, "rocketmq")
    commitlog = next(log for log in report.logs if log.name == "commitlog")
    last = commitlog.segments[-1]
    doc = json.loads(subprocess.run([sys.executable, "-m", "mqtool", "validate", str(fixture), "--json"], capture_output=True, text=True).stdout)
    end = next(f for f in doc["findings"] if f["code"] == "RMQ-CL-VALID-END")
    assert last.end_kind == "zeros" and last.data_pct == round(100.0 * end["position"] / last.size, 3)
    assert all(s.end_kind == "healthy" for s in commitlog.segments[:-1])


def test_a_recover_step_on_a_log_directory_is_drawn_over_its_files(store: Path) -> None:
    last = sorted((store / "commitlog").iterdir())[-1]
    data = bytearray(last.read_bytes())
    end = len(data.rstrip(b"\0"))
    data[end - 30 : end] = b"\xff" * 30  # torn: the index holds keys past the valid end, so recover rebuilds the index directory
    last.write_bytes(bytes(data))
    r = gather(store, "rocketmq")
    steps = [s for s in r.recover if s["action"] == "rebuild-index"]
    assert steps and steps[0]["path"] == "index"
    index = next(log for log in r.logs if log.name == "index")
    assert index.segments and all(
        [(c.kind, c.action, c.left, c.width) for c in s.cuts] == [("recover", "rebuild-index", 0.0, 100.0)] for s in index.segments
    )


def test_the_restart_preview_is_a_table_of_the_plans_preview(store: Path) -> None:
    """The report shows what the modelled broker's restart does as a table of its own, from the
    recover plan's preview (the object ``info --json`` gives as ``restart``), not as a note."""
    from mqtool.ops.recover.rocketmq import restart_preview

    preview = restart_preview(store)
    rows = dict(gather(store, "rocketmq").restart)
    assert rows["broker modelled"] == preview["broker_version"]
    assert rows["recovery"] == preview["recovery"] == "normal"
    assert rows["bytes it scans"] == str(preview["scan_bytes"])
    assert preview["starts_at"]["file"] in rows["starts at"]
    assert rows["drops"].startswith("records: 0; bytes: 0")


def test_the_restart_preview_says_what_an_unclean_restart_drops(store: Path) -> None:
    (store / "abort").write_bytes(b"")
    last = sorted((store / "commitlog").iterdir())[-1]
    data = bytearray(last.read_bytes())
    end = len(data.rstrip(b"\0"))
    data[end - 30 : end] = b"\xff" * 30  # tear the last record
    last.write_bytes(bytes(data))
    r = gather(store, "rocketmq")
    rows = dict(r.restart)
    assert rows["recovery"] == "abnormal"
    assert not rows["drops"].startswith("records: 0; bytes: 0")
    assert "broker modelled" in rows and "takes" in rows


def test_restart_rows_keep_the_known_order_and_show_other_fields_by_name() -> None:
    from mqtool.ops.report import restart_rows

    rows = restart_rows(
        {"estimated_seconds": None, "scan_bytes": 10, "broker_version": "3.9", "partitions": [{"name": "t-0", "recovery_point": 5}], "evidence": ["x"]}
    )
    assert rows == [
        ("broker modelled", "3.9"),
        ("bytes it scans", "10"),
        ("takes", "unknown (the disk's read speed could not be measured)"),
        ("partitions", "name: t-0; recovery point: 5"),
    ]
    assert restart_rows({}) == []


def test_restart_rows_name_only_the_logs_a_recovery_reads() -> None:
    from mqtool.ops.report import restart_rows

    starts = [{"directory": "m-0", "file": "m-0/0.log"}] + [{"directory": f"t-{i}", "file": None} for i in range(5)]
    rows = dict(restart_rows({"starts_at": starts}))
    assert rows["starts at"] == "directory: m-0; file: m-0/0.log, 5 other log(s): nothing to recover"


def test_a_missing_kafka07_segment_is_drawn_with_its_own_suffix(tmp_path: Path) -> None:
    from mqtool.formats import jafka as jf
    from mqtool.store.jafka import KAFKA07, JafkaLogWriter

    part = JafkaLogWriter(tmp_path / "logs" / "events-0", log_file_size=300, dialect=KAFKA07)
    for batch in range(4):
        part.append([jf.Message(b"m%d-%d" % (batch, i) * 10, jf.MAGIC_V0) for i in range(5)])
    (tmp_path / "logs" / ".kafka_cleanshutdown").touch()
    segments = sorted((tmp_path / "logs" / "events-0").iterdir())
    assert len(segments) >= 3
    segments[1].unlink()
    r = gather(tmp_path / "logs", "jafka")
    missing = [s.path for log in r.logs for s in log.segments if s.end_kind == "missing"]
    assert missing == [f"events-0/{segments[1].name}"]


def test_a_timer_store_has_its_place_in_the_report(tmp_path: Path) -> None:
    """Issue 29 point 1: the 5.x timer store's pending messages by due time, as stats counts them."""
    from mqtool.ops.report.html import render_html
    from mqtool.ops.stats import store_stats
    from tests.timer_store import make_timer_store

    make_timer_store(tmp_path / "store")
    r = gather(tmp_path / "store", "rocketmq")
    assert r.timer is not None and r.timer == store_stats(tmp_path / "store", "rocketmq").timer
    assert r.timer["pending"] == 6 and sum(b["count"] for b in r.timer["by_due"]) == 6
    html = render_html(r, utc=True)
    assert 'id="timer"' in html and "6 timer message(s) not delivered yet" in html
    assert gather(FIXTURE, "rocketmq").timer is None
