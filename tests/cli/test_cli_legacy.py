"""CLI for the Jafka and MetaQ layouts: golden outputs, JSON shapes, exit codes, archives, filters,
and the read-by-offset engine ``mqtool query`` builds on."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import zipfile

import pytest

from mqtool.cli.app import run
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.ops.dump import legacy as dump_legacy
from mqtool.store.jafka import open_jafka
from mqtool.store.metaq import open_metaq
from tests.cli.test_cli import check_golden
from tests.conftest import FIXTURES, real_path

JAFKA = FIXTURES / "jafka-data"
METAQ = FIXTURES / "metaq-data"
ZIP = METAQ / "trade-0" / "00000000000000000000.meta.zip"


def mqtool(capsys, *args):
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize(
    "args,golden",
    [
        (["dump", "jafka", JAFKA, "--jsonl"], "jafka-data.dump.jsonl"),
        (
            ["dump", "jafka", JAFKA / "orders-1", "--jsonl", "--from-offset", 4294969071, "--limit", 3, "--decode", "utf8"],
            "jafka-data.orders-1.from-offset.jsonl",
        ),
        (["dump", "jafka", JAFKA, "--topic", "user-events", "--shallow", "--jsonl", "--decode", "hex"], "jafka-data.user-events.shallow.jsonl"),
        (["validate", JAFKA, "--jsonl", "-j", 1], "jafka-data.validate.jsonl"),
        (["dump", "metaq", METAQ, "--jsonl"], "metaq-data.dump.jsonl"),
        (["dump", "metaq", METAQ / "meta-test-2", "--jsonl", "--decode", "utf8"], "metaq-data.meta-test-2.jsonl"),
        (["validate", METAQ, "--jsonl", "-j", 1], "metaq-data.validate.jsonl"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_golden_outputs(capsys, args, golden):
    code, out, err = mqtool(capsys, *args)
    assert code == 0, err
    check_golden(golden, out)


@pytest.mark.parametrize("path,golden", [(JAFKA, "jafka-data.info.json"), (METAQ, "metaq-data.info.json")])
def test_info_golden(capsys, path, golden):
    code, out, err = mqtool(capsys, "info", path, "--json")
    assert code == 0 and err == ""
    check_golden(golden, out)


# --- JSON shapes -------------------------------------------------------------------------------------------

JAFKA_ROW = {
    "file", "topic", "partition", "segment_start", "position", "offset", "next_offset", "kind", "depth", "inner_index",
    "inner_position", "length", "magic", "attribute", "codec", "crc", "crc_computed", "crc_valid", "payload_size", "payload",
}  # fmt: skip
METAQ_ROW = {
    "file", "archive", "segment", "topic", "partition", "segment_start", "position", "offset", "next_offset", "msg_len",
    "checksum", "checksum_computed", "checksum_valid", "id", "id_time", "broker_id", "sequence", "flag", "has_attribute",
    "attribute", "attribute_error", "payload_size", "payload",
}  # fmt: skip


def test_dump_jafka_rows(capsys):
    code, out, _ = mqtool(capsys, "dump", "jafka", JAFKA, "--jsonl", "--decode", "utf8")
    got = rows(out)
    assert code == 0 and all(set(r) == JAFKA_ROW for r in got)
    assert all(r["crc_valid"] and r["magic"] == 1 for r in got)
    wrappers = [r for r in got if r["kind"] == "wrapper"]
    assert [(r["topic"], r["codec"]) for r in wrappers] == [("orders", "gzip"), ("user-events", "gzip")]
    inner = [r for r in got if r["kind"] == "inner" and r["topic"] == "orders"]
    w = wrappers[0]
    assert [r["inner_index"] for r in inner] == [0, 1, 2, 3] and {r["offset"] for r in inner} == {w["offset"]}
    # Jafka's deep iterator: all but the last inner message report the wrapper's start
    assert [r["next_offset"] for r in inner] == [w["offset"]] * 3 + [w["next_offset"]]
    assert json.loads(inner[0]["payload"])["order"] == 1100
    shallow = [r for r in got if r["kind"] != "inner"]
    for a, b in zip(shallow, shallow[1:]):
        if a["topic"] == b["topic"] and a["partition"] == b["partition"]:
            assert b["offset"] == a["next_offset"] == a["offset"] + 4 + a["length"]
    big = [r for r in got if r["partition"] == 1]
    assert big[0]["offset"] == 2**32 + 1000 and big[-1]["next_offset"] > 2**32


def test_dump_metaq_rows(capsys):
    code, out, _ = mqtool(capsys, "dump", "metaq", METAQ, "--jsonl", "--decode", "utf8")
    got = rows(out)
    assert code == 0 and all(set(r) == METAQ_ROW for r in got)
    trade = [r for r in got if r["topic"] == "trade" and r["partition"] == 0]
    assert [r["archive"] for r in trade[:21:10]] == ["zip", "arc", None]
    assert [r["offset"] for r in trade] == sorted(r["offset"] for r in trade) and trade[0]["offset"] == 0
    assert all(b["offset"] == a["next_offset"] for a, b in zip(trade, trade[1:]))
    assert {r["broker_id"] for r in trade} == {3} and [r["sequence"] for r in trade] == list(range(40))
    with_attr = [r for r in trade if r["has_attribute"]]
    assert with_attr and {r["attribute"] for r in with_attr} == {"region=cn-hangzhou", "type=pay;retry=0"}
    assert all(r["msg_len"] == len(r["attribute"]) + 4 + r["payload_size"] for r in with_attr)
    test = [r for r in got if r["topic"] == "meta-test"]
    assert test[0]["attribute"] == "地域=华东" and test[0]["payload"] == "订单已支付" and test[0]["offset"] == 2**31
    assert test[1]["payload"] == "" and test[2]["flag"] == 0x10 and not test[2]["has_attribute"]


def test_info_json_shapes(capsys):
    doc = json.loads(mqtool(capsys, "info", JAFKA, "--json")[1])
    assert doc["layout"] == "jafka" and doc["kind"] == "data-dir" and doc["clean_shutdown_marker"] is True
    assert doc["topics"] == 2 and doc["problems"] == [] and doc["unexpected"] == []
    orders1 = next(p for p in doc["partitions"] if p["directory"] == "orders-1")
    assert orders1["log_start_offset"] == 4294968296 and orders1["end_kind"] == "eof" and "archived" not in orders1
    doc = json.loads(mqtool(capsys, "info", METAQ / "trade-0", "--json")[1])
    assert doc["layout"] == "metaq" and doc["kind"] == "partition" and "clean_shutdown_marker" not in doc
    (part,) = doc["partitions"]
    assert part["archived"] == {"files": 2, "bytes": part["archived"]["bytes"], "start_offset": 0, "end_offset": 1602}
    assert part["log_start_offset"] == 1602 and part["log_end_offset"] == 3162


def test_info_and_validate_detect_the_layout(capsys):
    for path, layout in ((JAFKA / "orders-0", "jafka"), (ZIP, "metaq"), (METAQ, "metaq")):
        code, out, err = mqtool(capsys, "info", path, "--json")
        assert code == 0, err
        assert json.loads(out)["layout"] == layout
        code, out, err = mqtool(capsys, "validate", path, "--json", "-j", "1")
        assert code == 0 and json.loads(out)["layout"] == layout


def test_tables_are_plain_when_piped(capsys):
    code, out, _ = mqtool(capsys, "dump", "metaq", METAQ / "meta-test-2", "--limit", "2")
    lines = out.splitlines()
    assert code == 0 and "\x1b[" not in out and lines[0].split()[:3] == ["OFFSET", "PARTITION", "ID"]
    assert "地域=华东" in lines[1] and "订单已支付" in lines[1] and len(lines) == 3
    code, out, _ = mqtool(capsys, "dump", "jafka", JAFKA, "--topic", "user-events", "--limit", "5")
    assert "wrapper" in out and "click 0 on /home" in out
    code, out, _ = mqtool(capsys, "info", METAQ)
    assert code == 0 and "partitions" in out and "metaq" in out


# --- archives -------------------------------------------------------------------------------------------------


def test_zip_dump_equals_the_original_segment(capsys, tmp_path):
    part = tmp_path / "trade-0"
    part.mkdir()
    with zipfile.ZipFile(ZIP) as z:
        (part / "00000000000000000000.meta").write_bytes(z.read("00000000000000000000.meta"))
    code, zipped, _ = mqtool(capsys, "dump", "metaq", ZIP, "--jsonl")
    assert code == 0
    code, plain, _ = mqtool(capsys, "dump", "metaq", part / "00000000000000000000.meta", "--jsonl")
    assert code == 0
    a, b = rows(zipped), rows(plain)
    assert len(a) == 10 and {r["archive"] for r in a} == {"zip"} and {r["archive"] for r in b} == {None}
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("file", "archive")} for r in rs]  # noqa: E731
    assert strip(a) == strip(b)


def test_no_archives(capsys):
    code, out, _ = mqtool(capsys, "dump", "metaq", METAQ, "--topic", "trade", "--partition", "0", "--no-archives", "--jsonl")
    got = rows(out)
    assert code == 0 and len(got) == 20 and {r["archive"] for r in got} == {None} and got[0]["offset"] == 1602


def test_damaged_zip_is_reported(capsys, tmp_path):
    part = tmp_path / "trade-0"
    part.mkdir()
    raw = bytearray(ZIP.read_bytes())
    raw[60] ^= 0xFF  # inside the deflate stream
    (part / ZIP.name).write_bytes(bytes(raw))
    code, out, err = mqtool(capsys, "dump", "metaq", part / ZIP.name, "--jsonl")
    assert code == 1 and str(part / ZIP.name) in err and "Traceback" not in err
    code, out, err = mqtool(capsys, "validate", part, "--json", "-j", "1")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert {f["code"] for f in doc["findings"]} & {"METAQ-ZIP", "METAQ-ZIP-CRC", "METAQ-CRC", "METAQ-SIZE"}


def test_a_zip_that_is_no_zip_says_what_was_found_and_where(capsys, tmp_path):
    part = tmp_path / "trade-0"
    part.mkdir()
    path = part / ZIP.name
    path.write_bytes(b"\x00\x00\x00\x1c" + bytes(96))  # a .meta segment's bytes under a .zip name
    code, out, err = mqtool(capsys, "validate", part, "--json", "-j", "1")
    (f,) = [f for f in json.loads(out)["findings"] if f["code"] == "METAQ-ZIP"]
    assert code == 1 and f["position"] == 0 and "BadZipFile" not in f["message"]
    assert "found none; its first bytes are 00 00 00 1c 00 00 00 00 (no zip signature" in f["message"]
    assert "end-of-central-directory record" in f["message"]
    code, _, err = mqtool(capsys, "dump", "metaq", path, "--jsonl")
    assert code == 1 and f"{path}:0: not a readable zip archive: expected an end-of-central-directory record" in err


# --- damage that looks like a tail -------------------------------------------------------------------------------


def _set_byte(path, at: int, value: int) -> None:
    b = bytearray(path.read_bytes())
    b[at] = value
    path.write_bytes(bytes(b))


@pytest.mark.parametrize(
    "layout,fixture,segment,at",
    [("jafka", "jafka-data", "orders-0/00000000000000000771.jafka", 61), ("metaq", "metaq-data", "trade-1/00000000000000000000.meta", 139)],
)
def test_a_damaged_length_before_the_last_segment_fails_every_reader(capsys, tmp_path, layout, fixture, segment, at):
    """A LENGTH/msgLen running past the end of a segment before the last, over valid messages:
    dump, stats and info exit 1 naming file:position and what was expected and found."""
    root = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, root)
    path = root / segment
    _set_byte(path, at, 0x7F)
    position = at - 2 if layout == "jafka" else at - 1
    for args in (("dump", layout, root, "--jsonl"), ("stats", root, "--json"), ("info", root, "--json")):
        code, _, err = mqtool(capsys, *args)
        assert code == 1, (args, err)
        assert f"{path}:{position}: damaged " in err and "expected " in err and "a valid message starts at position" in err, (args, err)
        assert "partial message" not in err, (args, err)
        # stated once, by validate's finding (issue 30: no second line in the reader's own words)
        assert len([line for line in err.splitlines() if f"{path}:{position}: damaged " in line]) == 1, (args, err)
    doc = json.loads(mqtool(capsys, "info", root, "--json")[1])
    # validate's errors (info listed one error, in its own words, where validate has two: the
    # broken length and the bytes skipped after it)
    assert doc["errors"][0].startswith(f"{layout.upper()}-SIZE {path}:{position}: ")
    assert not any(p.startswith(f"{path}:{position}: ") for p in doc["problems"])
    assert [f["code"] for f in doc["findings"]] == [f"{layout.upper()}-SIZE", f"{layout.upper()}-UNREADABLE-REGION"]


def test_a_torn_tail_of_the_last_segment_is_no_damage_for_readers(capsys, tmp_path):
    root = tmp_path / "jafka-data"
    shutil.copytree(JAFKA, root)
    last = root / "orders-0" / "00000000000000002348.jafka"
    last.write_bytes(last.read_bytes() + jf.encode_message(jf.Message(b"x" * 40))[:20])
    # with .jafka_cleanshutdown Jafka skips recovery and keeps the torn bytes: validate's
    # JAFKA-UNRECOVERED, an error the readers name too (they exited 0 there)
    marker = root / ".jafka_cleanshutdown"
    assert mqtool(capsys, "validate", root)[0] == 1
    for args in (("dump", "jafka", root, "--jsonl"), ("stats", root, "--json"), ("info", root, "--json")):
        code, _, err = mqtool(capsys, *args)
        assert code == 1 and f"JAFKA-UNRECOVERED {last}:177: " in err, (args, err)
    marker.unlink()  # a crash: the broker's recovery cuts the torn tail at start-up
    for args in (("dump", "jafka", root, "--jsonl"), ("stats", root, "--json"), ("info", root, "--json")):
        code, _, err = mqtool(capsys, *args)
        assert code == 0, (args, err)
    code, _, err = mqtool(capsys, "dump", "jafka", root / "orders-0", "--jsonl")
    assert code == 0 and "data ends with a partial message" in err


def test_a_partial_message_at_the_end_of_an_earlier_segment_is_damage(capsys, tmp_path):
    """Nothing valid after it, but in a segment before the last nothing ever repairs it."""
    root = tmp_path / "metaq-data"
    shutil.copytree(METAQ, root)
    first = root / "trade-1" / "00000000000000000000.meta"
    data = first.read_bytes()
    first.write_bytes(data[:-9])
    (root / "trade-1" / "00000000000000000832.meta").rename(root / "trade-1" / segnames.metaq_file_name(len(data) - 9))
    # dump states it once, as the store model's finding (issue 30: no second line of its own)
    code, _, err = mqtool(capsys, "dump", "metaq", root / "trade-1", "--jsonl")
    assert code == 1 and err.count("METAQ-SEGMENT-TAIL") == 1 and "ends in a partial message" in err, err
    assert "a segment before the last one to end exactly after its last message" not in err
    for args in (("stats", root / "trade-1", "--json"), ("info", root / "trade-1", "--json")):  # the same, once
        code, _, err = mqtool(capsys, *args)
        assert code == 1 and err.count("METAQ-SEGMENT-TAIL") == 1 and "ends in a partial message" in err, (args, err)
        assert "a segment before the last one to end exactly after its last message" not in err, (args, err)


# --- filters ---------------------------------------------------------------------------------------------------


def test_from_offset_and_limit(capsys):
    code, out, err = mqtool(capsys, "dump", "jafka", JAFKA, "--topic", "orders", "--partition", "0", "--from-offset", "771", "--limit", "2", "--jsonl")
    got = rows(out)
    assert code == 0 and err == "" and [r["offset"] for r in got] == [771, got[0]["next_offset"]]
    code, out, err = mqtool(capsys, "dump", "jafka", JAFKA / "orders-0", "--from-offset", "775", "--limit", "1", "--jsonl")
    (row,) = rows(out)
    assert row["offset"] > 775 and "not the start of a valid message" in err
    code, out, _ = mqtool(capsys, "dump", "metaq", METAQ / "trade-0", "--from-offset", "800", "--limit", "1", "--jsonl")
    (row,) = rows(out)
    assert row["archive"] == "arc" and row["offset"] > 800
    code, out, _ = mqtool(capsys, "dump", "metaq", METAQ / "trade-0", "--from-offset", "100", "--limit", "1", "--jsonl")
    (row,) = rows(out)
    assert row["archive"] == "zip" and row["offset"] >= 100


def test_shallow_keeps_wrappers_whole(capsys):
    code, out, _ = mqtool(capsys, "dump", "jafka", JAFKA / "orders-0", "--shallow", "--jsonl")
    got = rows(out)
    assert code == 0 and {r["kind"] for r in got} == {"message", "wrapper"} and len(got) == 41


def test_json_array_and_decode_none(capsys):
    code, out, _ = mqtool(capsys, "dump", "metaq", METAQ / "trade-1", "--json", "--decode", "none", "--limit", "3")
    doc = json.loads(out)
    assert code == 0 and len(doc) == 3 and all(r["payload"] is None for r in doc)


# --- damage and exit codes ----------------------------------------------------------------------------------------


@pytest.fixture
def damaged_jafka(tmp_path):
    root = tmp_path / "jafka"
    shutil.copytree(JAFKA, root)
    seg = root / "orders-0" / "00000000000000000000.jafka"
    data = bytearray(seg.read_bytes())
    first_len = int.from_bytes(data[:4], "big")
    data[4 + first_len + 4 + 10] ^= 0x20  # a payload byte of the second message
    seg.write_bytes(bytes(data))
    return root, seg, 4 + first_len


def test_dump_shows_bad_crc_and_keeps_going(capsys, damaged_jafka):
    root, seg, second = damaged_jafka
    code, out, err = mqtool(capsys, "dump", "jafka", root / "orders-0", "--jsonl")
    got = rows(out)
    assert code == 1 and len(got) == 45
    bad = [r for r in got if not r["crc_valid"]]
    assert [(r["position"], r["file"]) for r in bad] == [(second, str(seg))]
    assert f"{seg}:{second + 6}: message CRC mismatch" in err


def test_validate_exit_codes_and_json(capsys, damaged_jafka):
    root, seg, second = damaged_jafka
    code, out, _ = mqtool(capsys, "validate", root, "--json", "-j", "1")
    doc = json.loads(out)
    assert code == 1 and doc["layout"] == "jafka" and doc["ok"] is False and doc["counts"]["error"] == 1
    (crc,) = [f for f in doc["findings"] if f["code"] == "JAFKA-CRC"]
    assert crc["path"] == str(seg) and crc["position"] == second + 6 and crc["family"] == "log"
    assert set(doc) >= {"files", "facts", "counts", "checks", "fail_on", "bytes_checked"}
    code, out, _ = mqtool(capsys, "validate", root, "--checks", "files", "--jsonl", "-j", "1")
    assert code == 0 and out == ""
    code, out, _ = mqtool(capsys, "validate", root, "--format", "junit", "-j", "1")
    assert code == 1 and "JAFKA-CRC" in out


def test_torn_tail_fails_only_on_warning(capsys, tmp_path):
    root = tmp_path / "metaq"
    shutil.copytree(METAQ, root)
    last = root / "trade-1" / "00000000000000000832.meta"
    last.write_bytes(last.read_bytes() + mq.encode_message(mq.Message(5, b"x" * 40))[:33])
    code, out, _ = mqtool(capsys, "validate", root, "--jsonl", "-j", "1")
    found = rows(out)
    assert code == 0 and [f["code"] for f in found if f["severity"] == "warning"] == ["METAQ-TORN-TAIL"]
    assert mqtool(capsys, "validate", root, "--fail-on", "warning", "-j", "1")[0] == 1


@pytest.mark.parametrize(
    "args,code",
    [
        (["dump", "jafka", METAQ], 3),
        (["dump", "metaq", JAFKA / "orders-0"], 3),
        (["dump", "metaq", "/nonexistent/metaq"], 3),
        (["dump", "jafka", JAFKA, "--json", "--jsonl"], 2),
        (["dump", "jafka", JAFKA, "--decode", "rot13"], 2),
        (["dump", "metaq", METAQ, "--from-offset", "-1"], 2),
        (["validate", "--layout", "jafka", FIXTURES / "rocketmq-store" / "config"], 3),
    ],
)
def test_error_exit_codes_without_traceback(capsys, args, code):
    got, out, err = mqtool(capsys, *args)
    assert got == code, err
    assert "Traceback" not in err and "Traceback" not in out


def test_broken_pipe_is_quiet():
    proc = subprocess.run(
        f"{sys.executable} -m mqtool dump metaq {METAQ} --jsonl | head -n 1", shell=True, capture_output=True, text=True, timeout=60
    )
    assert len(proc.stdout.splitlines()) == 1 and proc.stderr == ""


def test_real_kafka07_magic0_segment(capsys):
    path = real_path("kafka", "apache-kafka", "642da2f28c", "core", "src", "test", "resources", "test-kafka-logs", "MagicByte0-0", "00000000000000000000.kafka")
    code, out, err = mqtool(capsys, "dump", "jafka", path, "--jsonl", "--limit", "3")
    got = rows(out)
    # Kafka 0.7's own segment is read as the Kafka 0.7 dialect of the layout (issue 29): magic 0 is
    # its format, not damage (dump exited 1 with JAFKA-MAGIC here), and its name carries its offset
    assert code == 0 and "JAFKA-MAGIC" not in err, err
    assert [r["magic"] for r in got] == [0, 0, 0] and got[0]["payload"] == base64.b64encode(b"x" * 100).decode()
    assert got[0]["length"] == 105 and got[0]["crc"] == 0x5E0E5D8F and got[0]["crc_valid"] and got[1]["offset"] == 109
    code, out, _ = mqtool(capsys, "validate", "--layout", "jafka", path, "--json", "-j", "1")
    doc = json.loads(out)
    assert code == 0 and not [f for f in doc["findings"] if f["severity"] == "error"]


# --- read by offset (what `mqtool query --offset` runs) --------------------------------------------------------------


def test_lookup_offset_jafka_wrapper():
    data = open_jafka(JAFKA)
    part = dump_legacy.find_partition(data, "orders", 0)
    code_rows = [r for r in dump_legacy.JafkaDump(data, "orders", 0) if r.kind == "wrapper"]
    wrapper = code_rows[0]
    found = dump_legacy.lookup_offset(data, part, wrapper.where.offset)
    assert [i.kind for i in found.items] == ["wrapper", "inner", "inner", "inner", "inner"] and found.reason is None
    miss = dump_legacy.lookup_offset(data, part, wrapper.where.offset + 3)
    assert not miss.items and miss.previous_offset == wrapper.where.offset and miss.next_offset == wrapper.next_offset
    out = dump_legacy.lookup_offset(data, part, 10**9)
    assert "outside the partition's data [0, 2525)" in out.reason
    with pytest.raises(Exception, match="one partition"):
        dump_legacy.find_partition(data, "orders", None)


def test_lookup_offset_metaq_archives():
    data = open_metaq(METAQ)
    part = dump_legacy.find_partition(data, "trade", 0)
    for offset, archive in ((0, "zip"), (780, "arc"), (1602, None)):
        found = dump_legacy.lookup_offset(data, part, offset)
        (item,) = found.items
        assert item.where.segment.archive == archive and item.where.offset == offset and item.checksum_valid
    miss = dump_legacy.lookup_offset(data, part, 5)
    assert miss.previous_offset == 0 and miss.next_offset is not None and "not the start" in miss.reason


def test_lookup_offset_reports_bad_crc(tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    data = bytearray(jf.encode_message(jf.Message(b"payload!")))
    data[-1] ^= 1
    (d / segnames.jafka_file_name(0)).write_bytes(bytes(data))
    store = open_jafka(d)
    found = dump_legacy.lookup_offset(store, store.partitions[0], 0)
    (item,) = found.items
    assert not item.crc_valid and found.problems and "CRC mismatch" in str(found.problems[0])


@pytest.mark.parametrize("layout,data", [("jafka", "jafka-data"), ("metaq", "metaq-data")])
def test_dump_topic_that_is_not_there_names_the_topics(capsys, layout, data):
    # a typo'd --topic printed nothing and exited 0
    code, out, err = mqtool(capsys, "dump", layout, FIXTURES / data, "--topic", "nosuch")
    assert code == 3 and out == "" and "expected a partition nosuch-*, found topics" in err
