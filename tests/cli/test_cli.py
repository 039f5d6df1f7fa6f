"""CLI behaviour: exit codes, JSON shapes, golden outputs, no tracebacks, quiet broken pipes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import RecordWalker
from tests.conftest import FIXTURES, PROJECT_ROOT, real_path

STORE = FIXTURES / "rocketmq-store"
GOLDEN = PROJECT_ROOT / "tests" / "golden"
UPDATE = os.environ.get("MQTOOL_UPDATE_GOLDEN") == "1"


def mqtool(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _relative(text: str) -> str:
    return text.replace(str(PROJECT_ROOT) + "/", "")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    text = _relative(text)
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"golden file {name} was missing and has been written; rerun")
    assert text == path.read_text(), f"output differs from tests/golden/{name} (MQTOOL_UPDATE_GOLDEN=1 to accept)"


@pytest.mark.parametrize(
    "args,golden",
    [
        (["dump", "commitlog", STORE, "--jsonl"], "rocketmq-store.commitlog.jsonl"),
        (["dump", "consumequeue", STORE, "--jsonl"], "rocketmq-store.consumequeue.jsonl"),
        (["dump", "index", STORE, "--jsonl"], "rocketmq-store.index.jsonl"),
        (["dump", "checkpoint", STORE, "--json"], "rocketmq-store.checkpoint.json"),
        (["dump", "config", STORE, "--json"], "rocketmq-store.config.json"),
        (["query", STORE, "--key", "order-4", "--jsonl"], "rocketmq-store.query-order-4.jsonl"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_golden_outputs(capsys, args, golden):
    code, out, err = mqtool(capsys, *args)
    assert code == 0, err
    check_golden(golden, out)


def test_info_json(capsys):
    code, out, err = mqtool(capsys, "info", STORE, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["layout"] == "rocketmq" and doc["shutdown"] == "clean"
    assert doc["commitlog"]["files"] == 6 and doc["commitlog"]["end_kind"] == "zeros"
    assert {(q["topic"], q["queue_id"]) for q in doc["queues"]} >= {("TopicTest", 0), ("OrderTopic", 3)}
    assert len(doc["index_files"]) == 2 and all(i["error"] is None for i in doc["index_files"])
    assert doc["topics_in_config"] == 4 and doc["consumer_groups"] == 2
    assert any("IPv6" in h for h in doc["version_hints"])


def test_info_exits_1_on_damaged_data_it_reads(capsys, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    code, out, _ = mqtool(capsys, "info", store, "--json")
    assert code == 0 and json.loads(out)["errors"] == []
    active = sorted((store / "commitlog").iterdir())[-1]
    data = bytearray(active.read_bytes())
    end = len(data.rstrip(b"\0"))
    data[end - 5] ^= 0xFF  # inside the last record's properties
    active.write_bytes(bytes(data))
    code, out, err = mqtool(capsys, "info", store, "--json")
    (error,) = json.loads(out)["errors"]
    assert code == 1 and error.startswith(f"{active}:") and error in err and json.loads(out)["problems"] == []


def test_info_table_is_plain_when_piped(capsys):
    code, out, _ = mqtool(capsys, "info", STORE)
    assert code == 0 and "\x1b[" not in out and "commitlog offsets" in out


def test_dump_counts_and_filters(capsys):
    code, out, _ = mqtool(capsys, "dump", "commitlog", STORE, "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 245
    assert {r["version"] for r in rows} == {1, 2}
    code, out, _ = mqtool(capsys, "dump", "commitlog", STORE, "--jsonl", "--topic", "OrderTopic", "--queue-id", "1", "--limit", "3")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["queue_offset"] for r in rows] == [0, 1, 2] and {r["topic"] for r in rows} == {"OrderTopic"}
    code, out, _ = mqtool(capsys, "dump", "commitlog", STORE, "--jsonl", "--from-offset", "16384", "--limit", "1")
    assert json.loads(out)["commitlog_offset"] == 16384
    code, out, _ = mqtool(capsys, "dump", "commitlog", STORE, "--json", "--key", "KEY42", "--decode", "utf8")
    (row,) = json.loads(out)
    assert row["body"].startswith("message 42 for TopicTest")


def test_dump_since_until(capsys):
    code, out, _ = mqtool(capsys, "dump", "commitlog", STORE, "--jsonl", "--since", "1700000002000", "--until", "1700000002100")
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and all(1700000002000 <= r["store_timestamp"] <= 1700000002100 for r in rows)
    code, _, err = mqtool(capsys, "dump", "commitlog", STORE, "--since", "yesterday-ish")
    assert code == 2 and "ISO-8601" in err


@pytest.mark.parametrize(
    "args",
    [
        ["--msg-id", "C0A8000A00002A9F0000000000003812"],
        ["--topic", "TopicTest", "--queue-id", "2", "--queue-offset", "3"],
        ["--uniq-key", "0A000007109218B4AAC200000412002A"],
        ["--key", "KEY42"],
        ["--key", "KEY42", "--scan"],
    ],
)
def test_query_modes_find_the_same_message(capsys, args):
    code, out, err = mqtool(capsys, "query", STORE, *args, "--jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["commitlog_offset"] for r in rows] == [14354]
    assert rows[0]["keys"] == ["KEY42", "order-4"]


def test_query_nothing_found_exits_1(capsys):
    code, out, _ = mqtool(capsys, "query", STORE, "--key", "no-such-key", "--jsonl")
    assert code == 1 and out == ""


def test_query_usage_errors(capsys):
    assert mqtool(capsys, "query", STORE)[0] == 2
    assert mqtool(capsys, "query", STORE, "--key", "a", "--msg-id", "b")[0] == 2
    assert mqtool(capsys, "query", STORE, "--queue-offset", "1")[0] == 2
    code, _, err = mqtool(capsys, "query", STORE, "--msg-id", "XYZ")
    assert code == 2 and "offsetMsgId" in err  # a bad argument is a usage error, not "not a store"


@pytest.mark.parametrize(
    "args",
    [
        ["query", STORE, "--key", "K", "--begin", "1700000002000", "--end", "1700000001000"],
        ["query", STORE, "--topic", "TopicTest", "--queue-id", "-1", "--queue-offset", "0"],
        ["query", STORE, "--topic", "TopicTest", "--queue-id", "0", "--queue-offset", "-1"],
        ["query", STORE, "--msg-id", "C0A8000A00002A9F0000000000003812", "--scan"],
        ["query", STORE, "--topic", "TopicTest", "--queue-id", "0", "--queue-offset", "0", "--begin", "0"],
        ["query", STORE, "--key", "K", "--index-num", "0"],
        ["validate", STORE, "--index-hash-slots", "-5"],
        ["dump", "index", STORE, "--index-hash-slots", "0"],
        ["dump", "index", STORE, "--index-num", "-1"],
        ["info", STORE, "--layout", "bogus"],
        ["info", STORE, "-f", "jsonl", "--json"],
        ["validate", STORE, "--format", "json", "--jsonl"],
        ["clean", STORE, "--delete-when", "25"],
        ["clean", STORE, "--delete-when", "abc"],
        ["clean", STORE, "--delete-when", "04;"],
        ["clean", STORE, "--reserved-hours", "-5"],
        ["clean", STORE, "--disk-max-used", "500"],
        ["clean", STORE, "--clean-forcibly-ratio", "-1"],
        ["clean", FIXTURES / "kafka-logs", "--retention-ms", "-2"],
        ["clean", FIXTURES / "jafka-data", "--retention-hours", "-1"],
        ["recover", STORE, "--rebuild-cq", "--queue", "bogus"],
        ["recover", STORE, "--apply", "--quarantine", STORE / "commitlog" / "q"],
        ["validate", FIXTURES / "kafka-logs", "--checks", "commitlog"],
        ["validate", FIXTURES / "jafka-data", "--checks", "index"],
        ["validate", FIXTURES / "metaq-data", "--checks", "log,config"],
        ["validate", FIXTURES / "kafka-logs", "--commitlog-file-size", "5"],
        ["validate", FIXTURES / "kafka-logs", "--index-num", "5"],
        ["validate", STORE, "--deep"],
        ["query", FIXTURES / "kafka-logs", "--topic", "orders", "--partition", "-1", "--offset", "5"],
        ["query", FIXTURES / "kafka-logs", "--topic", "orders", "--partition", "0", "--timestamp", "-5"],
        ["dump", "commitlog", STORE, "--since", "-1"],
        ["dump", "consumequeue", STORE, "--queue-id", "-1"],
        ["dump", "kafka-log", FIXTURES / "kafka-logs", "--partition", "-1"],
        ["dump", "jafka", FIXTURES / "jafka-data", "--partition", "-1"],
        ["query", FIXTURES / "jafka-data", "--topic", "orders", "--partition", "0", "--offset", "0", "--max", "3"],
        ["query", FIXTURES / "metaq-data", "--offset", "0", "--max", "3"],
        ["clean", FIXTURES / "jafka-data", "--retention-hours", "0"],
        ["clean", FIXTURES / "jafka-data", "--delete-policy", "delete,1"],
        ["clean", FIXTURES / "metaq-data", "--retention-hours", "5"],
        ["clean", FIXTURES / "metaq-data", "--delete-policy", "bogus"],
        ["clean", FIXTURES / "metaq-data", "--delete-policy", "delete,-5"],
        ["clean", FIXTURES / "metaq-data", "--delete-policy", "archive,0h"],
        ["recover", STORE, "--rebuild-cq", "--queue", "TopicTest/x"],
    ],
    ids=lambda a: " ".join(str(x) for x in a[2:] if x is not STORE) if isinstance(a, list) else a,
)
def test_bad_argument_values_are_usage_errors(capsys, args):
    code, out, err = mqtool(capsys, *args)
    assert code == 2 and out == "" and "Traceback" not in err, err


def test_query_no_match_says_so(capsys):
    code, out, err = mqtool(capsys, "query", STORE, "--key", "KEY42", "--begin", "1700000001592")
    assert code == 1 and out == "" and "no message matched" in err


@pytest.mark.parametrize(
    "args,code",
    [
        (["info", "/nonexistent/store"], 3),
        (["dump", "commitlog", "/nonexistent"], 3),
        (["dump", "commitlog", "--bogus"], 2),
        (["dump", "commitlog", STORE, "--json", "--jsonl"], 2),
        (["info", PROJECT_ROOT / "tests"], 3),
    ],
)
def test_error_exit_codes_without_traceback(capsys, args, code):
    got, out, err = mqtool(capsys, *args)
    assert got == code
    assert "Traceback" not in err and "Traceback" not in out


def test_corrupt_record_is_reported_with_position(capsys, tmp_path):
    data = bytearray((STORE / "commitlog" / "00000000000000000000").read_bytes())
    data[400] ^= 0xFF  # inside the body of the second record (284..544)
    target = tmp_path / "00000000000000000000"
    target.write_bytes(bytes(data))
    code, out, err = mqtool(capsys, "dump", "commitlog", target, "--jsonl")
    assert code == 1
    # the record's frame holds: it is listed with its finding and the file is read on (issue 30)
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == len(list(RecordWalker(STORE.joinpath("commitlog", "00000000000000000000").read_bytes())))
    assert [(r["position"], r["finding"]) for r in rows if "finding" in r] == [(284, "RMQ-CL-BODY-CRC")]
    assert f"{target}:292: body CRC mismatch" in err and "expected BODYCRC" in err


def test_fifo_is_refused_not_read(capsys, tmp_path):
    fifo = tmp_path / "00000000000000000000"
    os.mkfifo(fifo)
    code, _, err = mqtool(capsys, "dump", "commitlog", fifo)
    assert code == 3 and "found a FIFO" in err


def test_debug_shows_traceback(capsys):
    code, _, err = mqtool(capsys, "--debug", "info", "/nonexistent/store")
    assert code == 3 and "Traceback" in err


def _run_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "mqtool", *map(str, args)], capture_output=True, text=True, **kw)


def test_broken_pipe_is_quiet():
    proc = subprocess.Popen(
        f"{sys.executable} -m mqtool dump commitlog {STORE} --jsonl | head -n 1",
        shell=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=60)
    assert len(out.splitlines()) == 1
    assert err == ""


@pytest.mark.parametrize("command", ["info", "validate", "stats"])
def test_table_reader_that_stops_early_is_not_a_failure(command):
    # rich's own broken-pipe handling exited 1 before the renderer could see it
    proc = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m mqtool {command} {STORE} | head -n 1 >/dev/null; echo "rc=${{PIPESTATUS[0]}}"'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.strip() == "rc=0" and "Traceback" not in proc.stderr


def test_version_and_module_entry():
    proc = _run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("mqtool ")


def test_no_color_when_env_set():
    proc = _run_cli("info", STORE, env={**os.environ, "NO_COLOR": "1", "FORCE_COLOR": ""})
    assert proc.returncode == 0 and "\x1b[" not in proc.stdout


def test_real_pr3535_dump_matches_source_md(capsys):
    path = real_path("rocketmq", "apache-rocketmq", "pr3535-4e25b979", "store", "commitlog", "00000000000000000000")
    code, out, err = mqtool(capsys, "dump", "commitlog", path, "--jsonl", "--decode", "utf8")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 47
    assert all(r["total_size"] == 172 and r["topic"] == "abc" and r["queue_id"] == 0 for r in rows)
    assert [r["commitlog_offset"] for r in rows] == list(range(0, 47 * 172, 172))
    assert {r["store_host"] for r in rows} == {"192.168.71.1:8123"} and {r["born_host"] for r in rows} == {"127.0.0.1:0"}
    assert {r["body"] for r in rows} == {"Once, there was a chance for me!"}
    assert all(r["properties"]["TAGS"] == "TAG1" and r["properties"]["0"] == "imagoodperson0" for r in rows)
    assert rows[1]["msg_id"] == "C0A8470100001FBB00000000000000AC"


def test_real_ericpan_crashed_store(capsys):
    root = real_path("rocketmq", "EricPanGopher-rocketmq", "store", "unit_test_store")
    code, out, err = mqtool(capsys, "info", root, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["shutdown"].startswith("unclean")
    assert doc["commitlog"]["zero_length_files"] == ["00000000000000032768"]
    assert doc["commitlog"]["log_end_offset"] == 24576 + 6536
    assert doc["queues"] == [{"topic": "abc", "queue_id": 0, "files": 6, "log_start_offset": 0, "log_end_offset": 56, "max_commitlog_offset": 9740, "units_past_end": 0}]
    code, out, _ = mqtool(capsys, "dump", "commitlog", root, "--jsonl")
    assert code == 0 and len(out.splitlines()) == 179
    code, out, _ = mqtool(capsys, "dump", "consumequeue", root, "--jsonl")
    units = [json.loads(line) for line in out.splitlines()]
    assert len(units) == 56 and all(u["kind"] == "ext-address" for u in units)
    code, out, _ = mqtool(capsys, "query", root, "--topic", "abc", "--queue-id", "0", "--queue-offset", "55", "--jsonl")
    assert code == 0 and json.loads(out)["commitlog_offset"] == 9568


def test_real_index_file(capsys):
    path = real_path("rocketmq", "apache-rocketmq", "pr6495-65a086a2", "store", "100")
    code, out, err = mqtool(capsys, "dump", "index", path, "--jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0] == {
        "record": "header", "file": str(path), "begin_timestamp": 1679290200025, "end_timestamp": 1679290200025,
        "begin_commitlog_offset": 0, "end_commitlog_offset": 0, "hash_slot_count": 1, "index_count": 2, "hash_slot_num": 100, "index_num": 400,
    }
    assert rows[1]["number"] == 1 and rows[1]["position"] == 460 and rows[1]["key_hash"] == 48 and rows[1]["slot"] == 48


def test_real_broker_metadata(capsys):
    root = real_path("rocketmq", "Shaoxubao-rocketmq-study", "store")
    code, out, err = mqtool(capsys, "dump", "checkpoint", root, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["physic_msg_timestamp"] == doc["logics_msg_timestamp"] == 1551626238066 and doc["index_msg_timestamp"] == 0
    code, out, err = mqtool(capsys, "dump", "config", real_path("rocketmq", "liushangqing9803-rocketmq-tech", "store", "config", "consumerOffset.json"), "--json")
    assert code == 0, err
    (doc,) = json.loads(out)
    assert doc["content"]["offsetTable"]["lsqTopic1@lsqGroup"] == {"0": 8, "1": 15, "2": 14, "3": 12}


@pytest.mark.parametrize("name", ["mk[/x]", "mk[bold]", "mk[/]"])
def test_data_is_never_parsed_as_markup(tmp_path, name):
    """Paths, topics and finding messages that look like rich markup print as they are: a "[/x]"
    raised MarkupError (an internal error) before tables stopped parsing markup."""
    import shutil

    clean, damaged = tmp_path / name / "clean", tmp_path / name / "damaged"
    shutil.copytree(FIXTURES / "jafka-data", clean)
    shutil.copytree(FIXTURES / "jafka-data", damaged)
    with open(damaged / "orders-0" / "00000000000000002348.jafka", "ab") as f:
        f.write(b"garbage")
    for argv, expected in (
        (["validate", str(damaged)], 1),
        (["recover", str(damaged)], 1),
        (["validate", str(clean)], 0),
        (["info", str(clean)], 0),
        (["stats", str(clean)], 0),
    ):
        env = {**os.environ, "COLUMNS": "400"}  # no wrapping inside the path
        proc = subprocess.run([sys.executable, "-m", "mqtool", *argv], capture_output=True, text=True, cwd=PROJECT_ROOT, env=env, check=False)
        assert proc.returncode == expected, (argv, proc.stderr)
        assert "internal error" not in proc.stderr
        assert name in proc.stdout, (argv, proc.stdout[:500])


def test_index_file_of_unknown_geometry_names_the_flags(capsys, tmp_path):
    """A lone IndexFile whose length fits no known geometry: exit 4 (unsupported), one line that
    says which broker settings are needed and which flags take them; with them, it dumps."""
    path = tmp_path / "20261122000000000"
    geometry = idxf.IndexGeometry(7, 9)
    path.write_bytes(bytes(geometry.size))
    code, out, err = mqtool(capsys, "dump", "index", path, "--jsonl")
    assert code == 4 and out == ""
    assert len(err.strip().splitlines()) == 1 and "maxHashSlotNum" in err and "--index-hash-slots N --index-num N" in err
    assert f"found {geometry.size} bytes" in err
    code, out, err = mqtool(capsys, "dump", "index", path, "--jsonl", "--index-hash-slots", "7", "--index-num", "9", "--header-only")
    assert code == 0, err
    assert json.loads(out)["hash_slot_num"] == 7


def test_index_file_of_unlisted_geometry_dumps_without_flags(capsys, tmp_path):
    """A written IndexFile tells its geometry by its entries: dump index needs no flags."""
    path = tmp_path / "20261122000000000"
    geometry = idxf.IndexGeometry(7, 9)
    buf = bytearray(geometry.size)
    writer = idxf.IndexWriter(buf, 7, 9)
    for n in range(5):
        assert writer.put_key(f"TopicTest#key{n}", 1000 + 100 * n, 1_700_000_000_000 + n)
    path.write_bytes(bytes(buf))
    code, out, err = mqtool(capsys, "dump", "index", path, "--jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["commitlog_offset"] for r in rows if r["record"] == "entry"] == [1000, 1100, 1200, 1300, 1400]
    assert [r["hash_slot_num"] for r in rows if r["record"] != "entry"] == [7]


@pytest.mark.parametrize(
    "args",
    [
        ["commitlog", STORE],
        ["consumequeue", STORE],
        ["index", STORE],
        ["jafka", FIXTURES / "jafka-data"],
        ["metaq", FIXTURES / "metaq-data"],
        ["kafka-log", FIXTURES / "kafka-logs" / "orders-0"],
    ],
    ids=lambda a: a[0],
)
def test_dump_limit_zero_outputs_no_rows_and_one_means_one(capsys, args):
    def rows(out):  # dump index starts each file with its header record, which is not a row
        return [line for line in out.splitlines() if json.loads(line).get("record") != "header"]

    code, out, _ = mqtool(capsys, "dump", *args, "--limit", "0", "--jsonl")
    assert code == 0 and rows(out) == []
    code, out, _ = mqtool(capsys, "dump", *args, "--limit", "1", "--jsonl")
    assert code == 0 and len(rows(out)) == 1


def test_clean_refuses_a_config_file_value_the_broker_never_acts_on(tmp_path, capsys):
    conf = tmp_path / "broker.conf"
    conf.write_text("deleteWhen=4am\n")
    code, out, err = mqtool(capsys, "clean", STORE, "--config", conf)
    assert code == 2 and "deleteWhen" in err and "4am" in err and "broker.conf" in err


def test_recover_names_a_queue_the_store_does_not_have(capsys):
    code, out, _ = mqtool(capsys, "recover", STORE, "--rebuild-cq", "--queue", "TopicTest/99")
    assert "TopicTest/99: consumequeue/ has no such queue" in " ".join(out.split())


def test_dump_index_header_only_prints_the_headers_on_stdout(capsys):
    code, out, err = mqtool(capsys, "dump", "index", STORE, "--header-only")
    lines = out.splitlines()
    assert code == 0 and err == ""  # the headers were only a stderr summary in table mode
    assert lines[0].split()[:2] == ["BEGIN", "TIME"] and len(lines) == 3
    assert "399" in lines[1] and "94/100" in lines[1] and lines[1].endswith("index/20231114221320037")
    code, out, _ = mqtool(capsys, "dump", "index", STORE, "--header-only", "--jsonl", "--limit", "1")
    assert code == 0 and [json.loads(line)["record"] for line in out.splitlines()] == ["header"]


def test_dump_index_json_entries_have_the_documented_keys(capsys):
    code, out, _ = mqtool(capsys, "dump", "index", STORE, "--jsonl", "--limit", "1")
    entry = json.loads(out.splitlines()[1])
    assert list(entry) == ["record", "file", "position", "number", "slot", "key_hash", "commitlog_offset", "time_diff", "timestamp", "prev_index"]


def test_dump_consumequeue_invalid_unit_is_an_error_in_upstream_terms(capsys, tmp_path):
    import shutil
    import struct

    shutil.copytree(STORE, tmp_path / "s")
    cq = sorted((tmp_path / "s" / "consumequeue" / "TopicTest" / "0").iterdir())[0]
    data = bytearray(cq.read_bytes())
    data[40:60] = struct.pack(">qiq", -5, 0, 7)
    cq.write_bytes(bytes(data))
    code, out, err = mqtool(capsys, "dump", "consumequeue", tmp_path / "s", "--topic", "TopicTest", "--queue-id", "0", "--jsonl")
    assert code == 1 and len(out.splitlines()) == 2
    assert f"{cq}:40: expected a unit with offset >= 0 and size > 0 or zeros, found commitLogOffset -5, size 0, tagsCode 7" in err
    assert "CqUnit(" not in err


def test_dump_commitlog_file_cut_mid_record(capsys, tmp_path):
    import shutil

    shutil.copytree(STORE, tmp_path / "s")
    files = sorted((tmp_path / "s" / "commitlog").iterdir())
    with open(files[-1], "r+b") as f:
        f.truncate(3000)
    code, _, err = mqtool(capsys, "dump", "commitlog", tmp_path / "s", "--jsonl")
    # validate's reading: the cut record is a torn tail (a warning), the cut last file a wrong
    # size (an error: the broker refuses to load it), so exit 1 (it was 0)
    assert code == 1 and f"RMQ-CL-TORN-TAIL {files[-1]}:2785: torn tail: a 322-byte record starts here but only 215 of its bytes were written" in err
    assert f"RMQ-FILE-SIZE {files[-1]}:3000: expected 16384 bytes (the commitlog file size), found 3000" in err
    with open(files[0], "r+b") as f:
        f.truncate(3000)
    code, _, err = mqtool(capsys, "dump", "commitlog", tmp_path / "s", "--jsonl")
    assert code == 1  # an older file cut short: it was exit 0 without a word
    # at validate's position: the file's end (RMQ-FILE-SIZE), not where its last whole record ends
    assert f"RMQ-FILE-SIZE {files[0]}:3000: expected 16384 bytes (the commitlog file size), found 3000" in err


def test_validate_checks_are_the_layouts_families(capsys):
    # a family the store lacks checked nothing and printed OK (exit 0) on a damaged store
    code, _, err = mqtool(capsys, "validate", FIXTURES / "kafka-logs", "--checks", "commitlog")
    assert code == 2 and "commitlog: no such check for a kafka store (its families: files, index, checkpoint, log, offsets)" in " ".join(err.split())
    assert mqtool(capsys, "validate", FIXTURES / "kafka-logs", "--checks", "log,index", "-j", "1")[0] == 0
    assert mqtool(capsys, "validate", STORE, "--checks", "commitlog,consumequeue", "-j", "1")[0] == 0


def test_recover_prints_its_undo_command_whole_and_it_runs(tmp_path):
    """At COLUMNS=80 with a quarantine path far longer than a line, the undo command is one line
    (never wrapped: a path and a command to copy whole) and running it as printed restores the
    store byte for byte."""
    import shlex

    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    last = sorted((root / "commitlog").iterdir())[-1]
    with open(last, "r+b") as f:
        f.truncate(4000)
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    quarantine = tmp_path / ("a-quarantine-directory-with-a-long-name-" * 3) / "q"
    env = {**os.environ, "COLUMNS": "80"}
    proc = _run_cli("recover", root, "--apply", "--quarantine", quarantine, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    undo = [line for line in proc.stdout.splitlines() if line.startswith("undo: ")]
    assert len(undo) == 1 and len(undo[0]) > 80
    argv = shlex.split(undo[0].removeprefix("undo: "))
    assert argv[:3] == ["mqtool", "recover", "--undo"] and os.path.isfile(argv[3])
    restored = _run_cli(*argv[1:], env=env, timeout=120)
    assert restored.returncode == 0, restored.stderr
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert after == before
