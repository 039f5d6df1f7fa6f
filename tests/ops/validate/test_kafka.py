"""validate for Kafka: the bundled log dir is clean, and every KAFKA- code is raised by the damage it
names, at the exact file and position."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import MqError, UnsupportedFormatError
from mqtool.formats.checksums import crc32c
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import compression
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import record_scan
from mqtool.formats.kafka.log import LogWalker
from mqtool.ops.validate import kafka as vk
from mqtool.store.model import kafka as km
from mqtool.findings.codes_kafka import CODES
from mqtool.findings import Severity
from mqtool.ops.validate import ValidateOptions
from mqtool.store.kafka_writer import PartitionWriter
from mqtool.formats import segment_names as segnames
from tests.conftest import FIXTURES

LOGS = FIXTURES / "kafka-logs"


@pytest.fixture
def logs(tmp_path) -> Path:
    root = tmp_path / "kafka-logs"
    shutil.copytree(LOGS, root)
    return root


def validate(path, *, deep: bool = False, jobs: int = 1):
    return vk.validate_kafka(path, ValidateOptions(jobs=jobs, deep=deep))


def found(report, code: str, path=None, position="any", severity: Severity | None = None):
    """The findings of ``code`` (at ``path``/``position`` when given); at least one must exist."""
    hits = [
        f
        for f in report.findings
        if f.code == code and (path is None or f.path == str(path)) and (position == "any" or f.position == position)
    ]
    assert hits, f"no {code} at {path}:{position}; got {[(f.code, f.path, f.position) for f in report.findings]}"
    if severity is not None:
        assert hits[0].level is severity, hits[0]
    return hits


def entries(path: Path):
    return list(LogWalker(path.read_bytes(), mode="header"))


def patch(path: Path, position: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[position : position + len(data)] = data
    path.write_bytes(bytes(raw))


def fix_crc(path: Path, position: int) -> None:
    raw = bytearray(path.read_bytes())
    size = 12 + int.from_bytes(raw[position + 8 : position + 12], "big")
    raw[position + 17 : position + 21] = struct.pack(">I", crc32c(bytes(raw[position + 21 : position + size])))
    path.write_bytes(bytes(raw))


def write_offsets(path: Path, table: dict) -> None:
    entries = tuple(cpf.TopicPartitionOffset(t, p, o) for (t, p), o in table.items())
    path.write_bytes(cpf.encode_offset_checkpoint(cpf.OffsetCheckpoint(entries)))


def read_offsets(path: Path) -> dict:
    return cpf.decode_offset_checkpoint(path.read_bytes()).as_dict()


def seg(root: Path, partition: str, base: int, kind: str = "log") -> Path:
    return root / partition / segnames.kafka_file_name(base, kind)


# --- a healthy log dir ---------------------------------------------------------------------------


@pytest.mark.parametrize("deep", [False, True])
def test_bundled_log_dir_is_clean(deep):
    report = validate(LOGS, deep=deep)
    assert report.counts["error"] == 0 and report.counts["warning"] == 0, [f.to_dict() for f in report.findings if f.level.rank]
    assert not report.failed
    assert report.facts["segments"] == 15 and report.facts["partitions"]["orders-0"] == {"log_start_offset": 7, "log_end_offset": 110, "segments": 4}
    assert report.facts["partitions"]["__consumer_offsets-0"]["log_end_offset"] == 22
    if deep:
        files = [*LOGS.glob("*/*.log"), *LOGS.glob("*/*.checkpoint"), LOGS / "bootstrap.checkpoint"]
        assert report.facts["records"] == sum(len(e.records) for p in files for e in LogWalker(p.read_bytes(), mode="full"))
    found(report, "KAFKA-LOG-VALID-END", seg(LOGS, "orders-0", 90), os.path.getsize(seg(LOGS, "orders-0", 90)), Severity.info)
    found(report, "KAFKA-INDEX-MULTI-BATCH", seg(LOGS, "orders-1", 0, "index"), None, Severity.info)
    co = seg(LOGS, "__consumer_offsets-0", 0)
    found(report, "KAFKA-OFFSET-GAP", co, entries(co)[2].position, Severity.info)  # inside a segment
    found(report, "KAFKA-OFFSET-GAP", seg(LOGS, "__consumer_offsets-0", 12), None)  # between segments


def test_parallel_run_finds_the_same(logs):
    patch(seg(logs, "orders-0", 0), entries(seg(logs, "orders-0", 0))[1].position + 80, b"\xff")
    one = validate(logs)
    two = validate(logs, jobs=2)
    assert [f.to_dict() for f in one.findings] == [f.to_dict() for f in two.findings]
    assert one.counts["error"] >= 1


# --- log family -------------------------------------------------------------------------------------


def test_crc_mismatch(logs):
    path = seg(logs, "orders-0", 0)
    e = entries(path)[1]
    patch(path, e.position + 90, b"\xee")
    report = validate(logs)
    (f,) = found(report, "KAFKA-LOG-CRC", path, e.position + rb.CRC_POSITION, Severity.error)
    assert "expected CRC-32C" in f.message and "deletes every later segment" in f.message


def test_a_batch_whose_crc_fails_is_one_finding_not_a_gap_and_misplaced_index_entries(logs):
    log = seg(logs, "orders-0", 90)
    bad = next(e for e in entries(log) if e.header.base_offset == 96)  # offsets 96..99; the .index and .timeindex point at it
    patch(log, bad.position + 100, bytes([log.read_bytes()[bad.position + 100] ^ 0xFF]))
    report = validate(logs)
    mine = [(f.code, f.path, f.position) for f in report.findings if "orders-0" in f.path and f.code != "KAFKA-LOG-VALID-END"]
    assert mine == [("KAFKA-LOG-CRC", str(log), bad.position + 17)]


def test_two_dirs_of_one_partition_are_an_error(logs):
    shutil.copytree(logs / "orders-1", logs / "orders-01")  # Kafka reads "01" as partition 1
    (f,) = found(validate(logs), "KAFKA-DIR-NAME", severity=Severity.error)
    assert "'orders-01'" in f.message and "'orders-1'" in f.message and "duplicate" in f.message


def test_bad_magic_resynchronises(logs):
    path = seg(logs, "orders-0", 0)
    es = entries(path)
    patch(path, es[2].position + 16, b"\x07")
    report = validate(logs)
    found(report, "KAFKA-LOG-MAGIC", path, es[2].position + 16)
    (g,) = found(report, "KAFKA-LOG-GARBAGE", path, es[2].position)
    assert g.length == es[3].position - es[2].position
    summary = next(s for s in report.files if s.path == str(path))
    assert summary.valid_bytes == es[2].position and summary.records == len(es) - 1


def test_batch_size_below_overhead(logs):
    path = seg(logs, "orders-0", 0)
    e = entries(path)[3]
    patch(path, e.position + 8, (40).to_bytes(4, "big"))
    found(validate(logs), "KAFKA-LOG-SIZE", path, e.position + 8)


def test_legacy_message_crc_and_size(logs):
    path = seg(logs, "legacy-0", 0)
    es = entries(path)
    patch(path, es[1].position + 25, b"X")
    found(validate(logs), "KAFKA-LOG-CRC", path, es[1].position + 12)


def test_control_batch_with_bad_marker(logs):
    path = seg(logs, "events-0", 0)
    e = next(x for x in entries(path) if x.magic == 2 and x.header.is_control_batch)
    # record: length, attributes, timestamp delta, offset delta, key length, then the key (version int16)
    patch(path, e.position + 61 + 5, b"\xff\xff")
    fix_crc(path, e.position)
    report = validate(logs)
    (f,) = found(report, "KAFKA-LOG-CONTROL", path, e.position)
    assert "producer 2000" in f.message


def test_torn_tail_last_and_earlier_segment(logs):
    last = seg(logs, "orders-0", 90)
    e = entries(last)[-1]
    os.truncate(last, e.position + 30)
    middle = seg(logs, "orders-0", 60)
    m = entries(middle)[-1]
    os.truncate(middle, m.position + 15)  # past the zero high bytes of the base offset
    report = validate(logs)
    (f,) = found(report, "KAFKA-LOG-TORN-TAIL", last, e.position, Severity.warning)
    assert f.length == 30 and "only 30 present" in f.message
    (g,) = found(report, "KAFKA-LOG-TORN-TAIL", middle, m.position, Severity.error)
    assert g.length == 15 and "deleting every later segment" in g.message


@pytest.mark.parametrize(
    "head, code",
    [
        (struct.pack(">qii", 110, 500, 0) + bytes([2]), "KAFKA-LOG-TORN-TAIL"),  # a start the broker wrote
        (struct.pack(">qii", 110, 540_319_531, 0) + bytes([236]), "KAFKA-LOG-SIZE"),  # random bytes: 515 MiB claimed
        (struct.pack(">qii", 110, 500, 0) + bytes([7]), "KAFKA-LOG-MAGIC"),
        (struct.pack(">qii", 50, 500, 0) + bytes([2]), "KAFKA-OFFSET-ORDER"),  # offsets going back
    ],
)
def test_bytes_appended_after_the_last_entry_are_damage_unless_they_could_be_a_torn_write(logs, monkeypatch, head, code):
    last = seg(logs, "orders-0", 90)
    end = last.stat().st_size
    with open(last, "ab") as out:
        out.write(head + b"\x01" * 40)
    for running in (False, True):  # beside a running broker too: junk is not a write in progress
        monkeypatch.setattr(km, "probe_record_lock", lambda path: 4242 if running else None)
        report = validate(logs)
        if code == "KAFKA-LOG-TORN-TAIL":
            f = found(report, "KAFKA-LOG-IN-PROGRESS" if running else code, last, end)[0]
            assert f.level is (Severity.info if running else Severity.warning) and report.counts["error"] == 0
            continue
        (f,) = found(report, code, last, severity=Severity.error)
        assert f.position == end + {"KAFKA-LOG-SIZE": 8, "KAFKA-LOG-MAGIC": 16, "KAFKA-OFFSET-ORDER": 0}[code]
        assert "not a torn write" in f.message and f"truncates the segment at {end}" in f.message
        assert not [x for x in report.findings if x.code in ("KAFKA-LOG-TORN-TAIL", "KAFKA-LOG-IN-PROGRESS")]


def test_torn_tail_of_a_running_broker_is_in_progress(logs, monkeypatch):
    """With .lock held (a running broker) the active segment's partial entry is being written;
    a torn tail in an earlier segment stays an error."""
    last = seg(logs, "orders-0", 90)
    e = entries(last)[-1]
    os.truncate(last, e.position + 30)
    middle = seg(logs, "orders-0", 60)
    m = entries(middle)[-1]
    os.truncate(middle, m.position + 15)
    monkeypatch.setattr(km, "probe_record_lock", lambda path: 4242)
    report = validate(logs)
    (f,) = found(report, "KAFKA-LOG-IN-PROGRESS", last, e.position, Severity.info)
    assert f.length == 30
    found(report, "KAFKA-LOG-TORN-TAIL", middle, m.position, Severity.error)
    assert not [x for x in report.findings if x.code == "KAFKA-LOG-TORN-TAIL" and x.path == str(last)]
    assert "KAFKA-UNCLEAN-SHUTDOWN" not in {x.code for x in report.findings}


def test_zero_tail(logs):
    last = seg(logs, "orders-0", 90)
    size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(bytes(4000))
    middle = seg(logs, "orders-0", 30)
    msize = middle.stat().st_size
    with open(middle, "ab") as f:
        f.write(bytes(100))
    report = validate(logs)
    (f,) = found(report, "KAFKA-LOG-ZERO-TAIL", last, size, Severity.warning)
    assert f.length == 4000
    found(report, "KAFKA-LOG-ZERO-TAIL", middle, msize, Severity.error)


def test_zero_hole_then_data(logs):
    path = seg(logs, "orders-0", 0)
    es = entries(path)
    patch(path, es[2].position, bytes(es[3].position - es[2].position))
    report = validate(logs)
    found(report, "KAFKA-LOG-SIZE", path, es[2].position + 8)
    # the walk resumes at the next entry: nothing after it is lost
    summary = next(s for s in report.files if s.path == str(path))
    assert summary.records == len(es) - 1


def test_decreasing_leader_epoch(tmp_path):
    w = PartitionWriter(tmp_path / "t-0", leader_epoch=3)
    w.append(rb.build_batch([rb.Record(value=b"a")], base_timestamp=1))
    w.leader_epoch = 1
    second = w.append(rb.build_batch([rb.Record(value=b"b")], base_timestamp=2))
    w.close()
    report = validate(tmp_path / "t-0")
    found(report, "KAFKA-LOG-EPOCH", second.segment, second.positions[0] + 12, Severity.error)


def _writer_with(tmp_path, batch: rb.RecordBatch):
    w = PartitionWriter(tmp_path / "t-0")
    w.append(rb.build_batch([rb.Record(value=b"first")], base_timestamp=10))
    res = w.append(batch)
    w.close()
    return res


def test_deep_record_offsets(tmp_path):
    records = [rb.Record(offset_delta=d, value=b"x") for d in (0, 2, 1)]
    res = _writer_with(tmp_path, rb.build_batch(records, base_timestamp=5))
    assert "KAFKA-LOG-RECORD-OFFSET" not in {f.code for f in validate(tmp_path / "t-0").findings}
    found(validate(tmp_path / "t-0", deep=True), "KAFKA-LOG-RECORD-OFFSET", res.segment, res.positions[0])


def test_deep_last_offset_delta_too_small(tmp_path):
    records = [rb.Record(offset_delta=d, value=b"x") for d in (0, 1, 2)]
    res = _writer_with(tmp_path, rb.build_batch(records, base_timestamp=5, last_offset_delta=1))
    found(validate(tmp_path / "t-0", deep=True), "KAFKA-LOG-RECORD-OFFSET", res.segment, res.positions[0] + 23)


def test_deep_max_timestamp(tmp_path):
    from dataclasses import replace

    b = rb.build_batch([rb.Record(timestamp_delta=d, value=b"x", offset_delta=i) for i, d in enumerate((0, 9))], base_timestamp=100)
    b = rb.RecordBatch(replace(b.header, max_timestamp=105), b.records)
    res = _writer_with(tmp_path, b)
    (f,) = found(validate(tmp_path / "t-0", deep=True), "KAFKA-LOG-TIMESTAMP", res.segment, res.positions[0] + 35, Severity.warning)
    assert "expected maxTimestamp 109" in f.message


def test_deep_record_structure(logs):
    path = seg(logs, "orders-0", 0)
    e = entries(path)[0]
    raw = path.read_bytes()
    length_size = 2 if raw[e.position + 61] >= 0x80 else 1
    # record: length varint, attributes, timestamp delta, offset delta, then the key length
    patch(path, e.position + 61 + length_size + 3, b"\x7e")  # a key of 63 bytes: past the record
    fix_crc(path, e.position)
    assert "KAFKA-LOG-RECORDS" not in {f.code for f in validate(logs).findings}
    region = path.read_bytes()[e.position + 61 : e.position + e.size]
    with pytest.raises(MqError) as exc:
        list(rb.iter_records(region, 1))
    found(validate(logs, deep=True), "KAFKA-LOG-RECORDS", path, e.position + 61 + exc.value.position)


def test_deep_compression(logs):
    path = seg(logs, "events-0", 0)
    e = next(x for x in entries(path) if x.magic == 2 and x.header.compression_type == compression.GZIP)
    patch(path, e.position + 61 + 30, b"\x00\x00\x00\x00")
    fix_crc(path, e.position)
    region = path.read_bytes()[e.position + 61 : e.position + e.size]
    with pytest.raises(MqError) as exc:
        compression.decompress(compression.GZIP, region)
    found(validate(logs, deep=True), "KAFKA-LOG-COMPRESSION", path, e.position + 61 + (exc.value.position or 0))


def test_deep_unsupported_codec(logs, monkeypatch):
    def missing(*args, **kw):
        raise UnsupportedFormatError("gzip compression needs a package", expected="the codec", found="not installed")

    monkeypatch.setattr(compression, "decompress", missing)
    path = seg(logs, "events-0", 0)
    e = next(x for x in entries(path) if x.magic == 2 and x.header.compression_type == compression.GZIP)
    found(validate(logs, deep=True), "KAFKA-LOG-UNSUPPORTED", path, e.position, Severity.warning)


def test_deep_legacy_wrapper(logs):
    path = seg(logs, "legacy-0", 0)
    wrapper = next(x for x in entries(path) if x.magic == 0 and x.header.is_compressed)
    # a v0 wrapper's offset is its last inner offset: make it one less (the offset is outside the CRC)
    patch(path, wrapper.position, (wrapper.offset - 1).to_bytes(8, "big"))
    assert "KAFKA-LOG-RECORD-OFFSET" not in {f.code for f in validate(logs).findings}
    (f,) = found(validate(logs, deep=True), "KAFKA-LOG-RECORD-OFFSET", path, wrapper.position)
    assert f"last inner offset {wrapper.offset}, found {wrapper.offset - 1}" in f.message


# --- offsets -------------------------------------------------------------------------------------


def test_offsets_going_backwards(logs):
    path = seg(logs, "orders-0", 0)
    es = entries(path)
    patch(path, es[2].position, (1).to_bytes(8, "big"))  # base offset: outside the CRC
    (f,) = found(validate(logs), "KAFKA-OFFSET-ORDER", path, es[2].position)
    assert "expected offsets after 2" in f.message


def test_offset_below_segment_base_and_overflow(logs):
    path = seg(logs, "orders-0", 30)
    patch(path, 0, (10).to_bytes(8, "big"))
    last_path = seg(logs, "orders-0", 90)
    last = entries(last_path)[-1]
    patch(last_path, last.position, (90 + 2**31).to_bytes(8, "big"))
    report = validate(logs)
    found(report, "KAFKA-OFFSET-RANGE", path, 0)
    (f,) = found(report, "KAFKA-OFFSET-RANGE", last_path, last.position)
    assert "LogSegmentOffsetOverflowException" in f.message


def test_segment_overlap(logs):
    for kind in ("log", "index", "timeindex"):
        seg(logs, "orders-0", 30, kind).rename(seg(logs, "orders-0", 29, kind))
    (f,) = found(validate(logs), "KAFKA-OFFSET-OVERLAP", seg(logs, "orders-0", 29), None, Severity.error)
    assert "expected a base offset > 29" in f.message


# --- index family ----------------------------------------------------------------------------------


def test_index_size(logs):
    path = seg(logs, "orders-0", 0, "index")
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b"\x01\x02\x03")
    (f,) = found(validate(logs), "KAFKA-INDEX-SIZE", path, size, Severity.warning)
    assert f.length == 3
    # what the broker does: it keeps the file (2.3.0+, no offset/time index check at load)
    assert "2.3.0+" in f.message and "index-sanity-check" in f.message and "throws CorruptIndexException)" not in f.message


def test_no_timeindex_is_created_empty_not_recovered(logs):
    """A .log without its .timeindex alone: the broker makes an empty one (LogSegment.sanityCheck), it
    does not recover the segment for it."""
    seg(logs, "orders-0", 30, "timeindex").unlink()
    (f,) = found(validate(logs), "KAFKA-FILE-NO-INDEX", seg(logs, "orders-0", 30), None, Severity.info)
    assert "creates an empty .timeindex" in f.message and "recovers the segment at load" not in f.message


def append_topic_config(logs: Path, resource_type: int, resource: str, name: str, value: str | None) -> None:
    """Append a ``ConfigRecord`` batch to the fixture's KRaft metadata log (after its last offset)."""
    from mqtool.formats.kafka import internal_topics as it
    from mqtool.store import kafka as ks
    from mqtool.store.files import ReadOnlyFile

    log = logs / "__cluster_metadata-0" / "00000000000000000000.log"
    with ReadOnlyFile(log) as f:
        last = max(entry.last_offset for _pos, entry in ks.LogFileWalk(f, 0, mode="header"))
    payload = it.encode_metadata_payload(it.ConfigRecord(resource_type, resource, name, value))
    value_bytes = it.encode_metadata_record(it.MetadataRecord(it.METADATA_RECORD_API_KEYS["ConfigRecord"], 0, payload))
    batch = rb.build_batch([rb.Record(offset_delta=0, key=None, value=value_bytes)], base_offset=last + 1, base_timestamp=1_700_000_900_000, partition_leader_epoch=1)
    with open(log, "ab") as out:
        out.write(rb.encode_batch(batch))


def drop_segment(logs: Path, partition: str, base: int) -> None:
    for kind in ("log", "index", "timeindex"):
        seg(logs, partition, base, kind).unlink()


@pytest.mark.parametrize(
    "config,severity",
    [
        ((2, "orders", "cleanup.policy", "delete"), Severity.error),
        ((4, "", "log.cleanup.policy", "delete"), Severity.error),  # the cluster default, no topic config
        (None, Severity.warning),  # the metadata log says nothing: unknown
        ((2, "orders", "cleanup.policy", "compact,delete"), None),  # compacted: the gap is compaction's
    ],
)
def test_segment_missing_by_cleanup_policy(logs, config, severity):
    if config is not None:
        append_topic_config(logs, *config)
    drop_segment(logs, "orders-0", 30)
    report = validate(logs)
    later = seg(logs, "orders-0", 60)
    if severity is None:
        (f,) = found(report, "KAFKA-OFFSET-GAP", later, None, Severity.info)
        assert "compacted" in f.message
        assert not [f for f in report.findings if f.code == "KAFKA-SEGMENT-MISSING"]
        return
    (f,) = found(report, "KAFKA-SEGMENT-MISSING", later, None, severity)
    assert "offsets 30..59 are in no segment" in f.message and "LocalLog.read" in f.message
    assert f.details["missing_from"] == 30 and f.details["missing_to"] == 60
    assert ("unknown" in f.message) == (severity is Severity.warning)


def test_segment_missing_policy_deleted_config(logs):
    """A ConfigRecord with a null value deletes the topic's setting: the policy is unknown again."""
    append_topic_config(logs, 2, "orders", "cleanup.policy", "delete")
    append_topic_config(logs, 2, "orders", "cleanup.policy", None)
    drop_segment(logs, "orders-0", 30)
    found(validate(logs), "KAFKA-SEGMENT-MISSING", seg(logs, "orders-0", 60), None, Severity.warning)


def test_index_order(logs):
    path = seg(logs, "orders-0", 0, "index")
    raw = bytearray(path.read_bytes())
    raw[8:16], raw[16:24] = raw[16:24], raw[8:16]
    path.write_bytes(bytes(raw))
    found(validate(logs), "KAFKA-INDEX-ORDER", path, 16)


def test_index_zero_tail(logs):
    last = seg(logs, "orders-0", 90, "index")
    size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(bytes(80))
    first = seg(logs, "orders-0", 0, "index")
    fsize = first.stat().st_size
    with open(first, "ab") as f:
        f.write(bytes(16))
    report = validate(logs)
    (f,) = found(report, "KAFKA-INDEX-ZERO-TAIL", last, size, Severity.info)
    assert f.length == 80
    found(report, "KAFKA-INDEX-ZERO-TAIL", first, fsize, Severity.warning)


def test_index_position_not_a_batch_and_past_end(logs):
    path = seg(logs, "orders-0", 0, "index")
    raw = bytearray(path.read_bytes())
    pos = int.from_bytes(raw[12:16], "big")
    raw[12:16] = (pos + 1).to_bytes(4, "big")
    path.write_bytes(bytes(raw))
    (f,) = found(validate(logs), "KAFKA-INDEX-POSITION", path, 8, Severity.error)
    assert f.message.endswith(f"found {pos + 1} (inside the entry at {pos})")  # the batch it falls in, not the next
    last = seg(logs, "orders-0", 90, "index")
    raw = bytearray(last.read_bytes())
    n = len(raw) // 8
    raw[(n - 1) * 8 + 4 : n * 8] = (10**6).to_bytes(4, "big")
    last.write_bytes(bytes(raw))
    (f,) = found(validate(logs), "KAFKA-INDEX-POSITION", last, (n - 1) * 8, Severity.warning)
    assert "past the end of the valid data" in f.message


def test_index_offset_mismatch(logs):
    path = seg(logs, "orders-0", 0, "index")
    raw = bytearray(path.read_bytes())
    first = int.from_bytes(raw[0:4], "big")
    raw[8:12] = (first + 1).to_bytes(4, "big")
    path.write_bytes(bytes(raw))
    (f,) = found(validate(logs), "KAFKA-INDEX-OFFSET", path, 8)
    assert f"found {first + 1}" in f.message


def test_multi_batch_index_entries_are_not_mismatches():
    report = validate(LOGS / "orders-1")
    assert not [f for f in report.findings if f.code in ("KAFKA-INDEX-OFFSET", "KAFKA-INDEX-POSITION")]
    (f,) = found(report, "KAFKA-INDEX-MULTI-BATCH", seg(LOGS, "orders-1", 24, "index"))
    assert f.message.startswith("3 entries")


def test_time_index_entry(logs):
    path = seg(logs, "orders-0", 0, "timeindex")
    raw = bytearray(path.read_bytes())
    ts = int.from_bytes(raw[12:20], "big", signed=True)
    raw[12:20] = (ts + 1).to_bytes(8, "big")
    path.write_bytes(bytes(raw))
    (f,) = found(validate(logs), "KAFKA-TIMEINDEX-ENTRY", path, 12)
    assert f"found {ts + 1}" in f.message


@pytest.mark.parametrize(
    "content,why",
    [
        (lambda n: b"", "(the .log is empty)"),
        (lambda n: b"\xff" * n, "(its first entry, at position 0, is broken)"),
        (lambda n: b"\x00" * n, "bytes hold no entry)"),
    ],
)
def test_time_index_entries_of_a_segment_without_a_readable_batch(logs, content, why):
    path = seg(logs, "orders-0", 0)
    size = path.stat().st_size
    path.write_bytes(content(size))
    (f,) = found(validate(logs), "KAFKA-TIMEINDEX-ENTRY", seg(logs, "orders-0", 0, "timeindex"), 0)
    assert "found offsets of a segment with no readable batch, so no last offset " in f.message and f.message.endswith(why)
    assert "None" not in f.message


def test_time_index_stale(logs):
    path = seg(logs, "orders-0", 0, "timeindex")
    os.truncate(path, path.stat().st_size - 12)
    found(validate(logs), "KAFKA-TIMEINDEX-STALE", path, None, Severity.info)


def test_txn_index_entry_and_missing(logs):
    path = seg(logs, "events-0", 0, "txnindex")
    patch(path, 2, (9999).to_bytes(8, "big"))
    (f,) = found(validate(logs), "KAFKA-TXNINDEX-ENTRY", path, 2)
    assert "expected producer 2000" in f.message
    path.unlink()
    log = seg(logs, "events-0", 0)
    abort = next(
        x for x in LogWalker(log.read_bytes(), mode="full") if x.magic == 2 and x.header.is_control_batch and rb.decode_control_key(x.batch.records[0].key).type == rb.ABORT
    )
    found(validate(logs), "KAFKA-TXNINDEX-MISSING", log, abort.position, Severity.error)


# --- files -----------------------------------------------------------------------------------------


def test_file_family(logs, monkeypatch):
    (logs / "orders-0" / "notes.txt").write_text("x")
    (logs / "backup").mkdir()
    (logs / "orders-1").rename(logs / "orders-1.0123456789abcdef0123456789abcdef-delete")
    (logs / "orders-0" / "00000000000000000999.index").write_bytes(b"")
    seg(logs, "orders-0", 30, "index").unlink()
    (logs / "orders-0" / "00000000000000000030.log.deleted").write_bytes(b"")
    (logs / "recovery-point-offset-checkpoint.tmp").write_text("0\n0\n")
    monkeypatch.setattr(km.ks, "MAX_SEGMENT_SIZE", 3000)
    report = validate(logs)
    found(report, "KAFKA-FILE-NAME", logs / "orders-0" / "notes.txt", None, Severity.warning)
    found(report, "KAFKA-DIR-NAME", logs / "backup", None, Severity.error)
    found(report, "KAFKA-DIR-STATE", logs / "orders-1.0123456789abcdef0123456789abcdef-delete", None, Severity.info)
    found(report, "KAFKA-FILE-ORPHAN-INDEX", logs / "orders-0" / "00000000000000000999.index", None)
    (f,) = found(report, "KAFKA-FILE-NO-INDEX", seg(logs, "orders-0", 30), None, Severity.info)
    assert "recovers the segment at load" in f.message
    found(report, "KAFKA-FILE-LEFTOVER", logs / "orders-0" / "00000000000000000030.log.deleted")
    found(report, "KAFKA-FILE-LEFTOVER", logs / "recovery-point-offset-checkpoint.tmp")
    found(report, "KAFKA-FILE-TOO-LARGE", seg(logs, "orders-0", 0), None, Severity.error)


def test_unreadable_segment(logs):
    path = seg(logs, "orders-0", 60)
    path.unlink()
    os.mkfifo(path)
    (f,) = found(validate(logs), "KAFKA-FILE-UNREADABLE", path, None, Severity.error)
    assert "FIFO" in f.message


def test_lock_held_by_a_broker(logs):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('ok', flush=True); time.sleep(30)",
            str(logs / ".lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ok"
        (f,) = found(validate(logs), "KAFKA-LOCK-HELD", logs / ".lock", None, Severity.info)
        assert str(holder.pid) in f.message
    finally:
        holder.kill()
        holder.wait()


# --- checkpoint family -----------------------------------------------------------------------------


def test_checkpoint_format(logs):
    path = logs / "replication-offset-checkpoint"
    path.write_text("0\n1\nbroken line\n")
    found(validate(logs), "KAFKA-CHECKPOINT-FORMAT", path, 4, Severity.error)
    (logs / "orders-0" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    found(validate(logs), "KAFKA-CHECKPOINT-FORMAT", logs / "orders-0" / "partition.metadata")


@pytest.mark.parametrize(
    "name,code,severity",
    [
        (cpf.RECOVERY_POINT_OFFSET_CHECKPOINT, "KAFKA-RECOVERY-POINT", Severity.warning),
        (cpf.REPLICATION_OFFSET_CHECKPOINT, "KAFKA-HIGH-WATERMARK", Severity.warning),
        (cpf.LOG_START_OFFSET_CHECKPOINT, "KAFKA-LOG-START-OFFSET", Severity.error),
    ],
)
def test_checkpoint_beyond_log_end(logs, name, code, severity):
    path = logs / name
    table = read_offsets(path)
    table[("orders", 0)] = 999
    write_offsets(path, table)
    raw = path.read_bytes()
    (f,) = found(validate(logs), code, path, raw.index(b"orders 0 999"), severity)
    assert "log end offset 110, found 999" in f.message


def test_cleaner_offset_stale_and_missing_entries(logs):
    cleaner = logs / cpf.CLEANER_OFFSET_CHECKPOINT
    write_offsets(cleaner, {("__consumer_offsets", 0): 999})
    recovery = logs / cpf.RECOVERY_POINT_OFFSET_CHECKPOINT
    table = read_offsets(recovery)
    del table[("orders", 1)]
    table[("ghost", 3)] = 5
    write_offsets(recovery, table)
    report = validate(logs)
    found(report, "KAFKA-CLEANER-OFFSET", cleaner, cleaner.read_bytes().index(b"__consumer_offsets 0"), Severity.info)
    found(report, "KAFKA-CHECKPOINT-STALE", recovery, recovery.read_bytes().index(b"ghost 3 5"), Severity.info)
    (f,) = found(report, "KAFKA-CHECKPOINT-MISSING", recovery, None, Severity.info)
    assert f.message.startswith("orders-1 has data")


def test_leader_epoch_checkpoint(logs):
    path = logs / "orders-0" / cpf.LEADER_EPOCH_CHECKPOINT
    path.write_text("0\n3\n0 0\n5 36\n2 73\n")
    found(validate(logs), "KAFKA-LEADER-EPOCH", path, path.read_bytes().index(b"2 73"), Severity.warning)
    path.write_text("0\n4\n0 0\n2 36\n5 73\n9 500\n")
    found(validate(logs), "KAFKA-LEADER-EPOCH", path, path.read_bytes().index(b"9 500"))
    path.write_text("0\n3\n0 0\n2 40\n5 73\n")
    (f,) = found(validate(logs), "KAFKA-LEADER-EPOCH-LOG", path, None, Severity.warning)
    assert "carry leader epoch 2" in f.message


def test_producer_snapshots(logs):
    snap = logs / "orders-0" / "00000000000000000030.snapshot"
    shutil.copy(snap, logs / "orders-0" / "00000000000000000999.snapshot")
    events = logs / "events-0" / "00000000000000000053.snapshot"
    patch(events, 20, b"\xff")
    report = validate(logs)
    found(report, "KAFKA-SNAPSHOT", events, 2, Severity.warning)
    found(report, "KAFKA-SNAPSHOT-OFFSET", logs / "orders-0" / "00000000000000000999.snapshot", None, Severity.info)


def test_links_and_special_files_are_not_followed(logs, tmp_path):
    """A segment linked out of the log dir, a partition dir linked to the log dir (a loop) and a
    FIFO named like a segment: reported, never opened (reading the FIFO would block)."""
    outside = tmp_path / "outside.log"
    outside.write_bytes(b"secret" * 100)
    link = logs / "orders-0" / "00000000000000009999.log"
    link.symlink_to(outside)
    loop = logs / "loop-0"
    loop.symlink_to(logs)
    fifo = logs / "orders-1" / "00000000000000009999.log"
    os.mkfifo(fifo)
    report = validate(logs)
    found(report, "KAFKA-FILE-LINK", link, None, Severity.warning)
    found(report, "KAFKA-FILE-LINK", loop, None, Severity.warning)
    found(report, "KAFKA-FILE-UNREADABLE", fifo, None, Severity.error)
    assert not [f for f in report.findings if str(outside) in f.path]


def test_unclean_shutdown(logs):
    (logs / cpf.CLEAN_SHUTDOWN).unlink()
    found(validate(logs), "KAFKA-UNCLEAN-SHUTDOWN", logs / cpf.CLEAN_SHUTDOWN, None, Severity.warning)


def test_every_kafka_code_has_a_damage_test():
    """Every code of codes_kafka is asserted (``found(...)``, directly or through a parametrized
    test) by a test of this module."""
    source = Path(__file__).read_text()
    asserted = set(re.findall(r'found\(.*"(KAFKA-[A-Z0-9-]+)"', source)) | set(re.findall(r'\(cpf\.\w+, "(KAFKA-[A-Z0-9-]+)"', source))
    missing = sorted(set(CODES) - asserted)
    assert not missing, f"codes without a test: {missing}"


# --- the fast record scanner -------------------------------------------------------------------------

header_st = st.builds(rb.RecordHeader, st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=80)))
record_st = st.builds(
    lambda ts, key, value, headers: (ts, key, value, tuple(headers)),
    st.integers(-(2**40), 2**40),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(header_st, max_size=3),
)


def _compiled_scan(buf, pos, end, count):
    return record_scan.scan_records(buf, pos, end, count, compiled=True)


needs_compiled = pytest.mark.skipif(not record_scan.compiled_available(), reason="numba is not installed (the fast extra)")
SCANNERS = [pytest.param(record_scan.scan_records_py, id="python"), pytest.param(_compiled_scan, id="compiled", marks=needs_compiled)]


@pytest.mark.parametrize("scan", SCANNERS)
@settings(max_examples=150)
@given(st.lists(record_st, min_size=1, max_size=8), st.lists(st.integers(0, 3), min_size=1, max_size=8), st.data())
def test_scanner_agrees_with_the_exact_decoder(scan, specs, gaps, data):
    offsets, od = [], 0
    for i in range(len(specs)):
        offsets.append(od)
        od += 1 + gaps[i % len(gaps)]
    records = [rb.Record(offset_delta=o, timestamp_delta=ts, key=k, value=v, headers=h) for o, (ts, k, v, h) in zip(offsets, specs)]
    raw = bytearray(b"".join(rb.encode_record(r) for r in records))
    if data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    raw = bytes(raw)
    try:
        exact = list(rb.iter_records(raw, len(records)))
    except MqError:
        exact = None
    try:
        fast = scan(b"pad" + raw + b"tail", 3, 3 + len(raw), len(records))
    except record_scan.RecordScanUnsure:
        fast = None
    if exact is None:
        assert fast is None  # never accept what the decoder rejects
    elif fast is not None:
        deltas = [r.offset_delta for r in exact]
        increasing = deltas[0] >= 0 and all(b > a for a, b in zip(deltas, deltas[1:]))
        assert fast == (deltas[0], deltas[-1], max(r.timestamp_delta for r in exact), increasing)


@pytest.mark.parametrize("scan", SCANNERS)
def test_scanner_leaves_overlong_varints_to_the_decoder(scan):
    record = rb.encode_record(rb.Record(offset_delta=0, timestamp_delta=5, value=b"v"))
    # a 10-byte timestamp delta beyond int64: the decoder rejects it, so must the scanner
    body = bytes([0]) + b"\xff" * 9 + b"\x7f" + record[3:]
    raw = bytes([len(body) * 2]) + body
    with pytest.raises(MqError):
        list(rb.iter_records(raw, 1))
    with pytest.raises(record_scan.RecordScanUnsure):
        scan(raw, 0, len(raw), 1)


def test_deep_checks_of_a_big_segment_are_shared_out(logs, monkeypatch):
    path = seg(logs, "orders-0", 0)
    e = entries(path)[-2]
    raw = path.read_bytes()
    length_size = 2 if raw[e.position + 61] >= 0x80 else 1
    patch(path, e.position + 61 + length_size + 3, b"\x7e")
    fix_crc(path, e.position)
    monkeypatch.setattr(km, "DEEP_SPLIT_BYTES", 600)  # orders-0's 4 KiB segments split in ranges
    part = km.ks.list_partition(logs / "orders-0")
    ranges = km._deep_ranges(part.segments[0], 2)
    assert len(ranges) > 2 and ranges[0].start == 0 and all(a.stop == b.start for a, b in zip(ranges, ranges[1:]))
    assert ranges[-1].stop == path.stat().st_size and ranges[1].prior is not None
    one = validate(logs, deep=True)
    two = validate(logs, deep=True, jobs=2)
    key = lambda r: sorted((f.code, f.path, f.position) for f in r.findings)
    assert key(one) == key(two) and one.facts["records"] == two.facts["records"]
    found(two, "KAFKA-LOG-RECORDS", path)
    assert [s.records for s in one.files] == [s.records for s in two.files]


# --- a partition that lost its data ------------------------------------------------------------------


def _log_dir(tmp_path, batches: int = 3, segment_bytes: int = 1 << 30) -> tuple[Path, Path]:
    """A cleanly closed log dir with one partition ``t-0`` of ``batches`` batches of 10 records:
    its checkpoints and producer snapshot say 10 * batches."""
    from mqtool.store.kafka_writer import LogDirWriter, PartitionConfig

    w = LogDirWriter(tmp_path / "logs")
    p = w.partition("t", 0, PartitionConfig(segment_bytes=segment_bytes))
    for i in range(batches):
        p.append(rb.build_batch([rb.Record(offset_delta=j, value=b"v%d" % j) for j in range(10)], base_timestamp=1000 + i))
    w.close()
    return w.root, w.root / "t-0"


def test_a_partition_whose_only_log_is_gone_lost_its_data(tmp_path):
    root, part = _log_dir(tmp_path)
    assert read_offsets(root / cpf.RECOVERY_POINT_OFFSET_CHECKPOINT)[("t", 0)] == 30
    assert not validate(root).failed
    seg(root, "t-0", 0).unlink()  # the .index and .timeindex remain
    report = validate(root)
    (lost,) = found(report, "KAFKA-LOG-MISSING", part, None, Severity.error)
    assert report.failed
    assert "expected a log end offset >= 30" in lost.message
    for says in (
        "recovery-point-offset-checkpoint (recovery point) says 30",
        "replication-offset-checkpoint (high watermark) says 30",
        "producer snapshot 00000000000000000030.snapshot says 30",
        "found no segment at all",
        "00000000000000000000.index, 00000000000000000000.timeindex remain",
        "offsets 0..29 it held are lost",
    ):
        assert says in lost.message, lost.message
    orphans = found(report, "KAFKA-FILE-ORPHAN-INDEX")
    assert {f.path for f in orphans} == {str(seg(root, "t-0", 0, "index")), str(seg(root, "t-0", 0, "timeindex"))}
    assert all(f.cause == lost.ref and f.level is Severity.warning for f in orphans)
    assert vk.validate_kafka(root, ValidateOptions(checks={"files"})).findings == orphans  # the files family alone


def test_a_replica_behind_its_high_watermark_is_an_error(logs):
    path = logs / cpf.REPLICATION_OFFSET_CHECKPOINT
    table = read_offsets(path)
    table[("orders", 0)] = 999
    write_offsets(path, table)
    report = validate(logs)
    (lost,) = found(report, "KAFKA-LOG-MISSING", logs / "orders-0", None, Severity.error)
    assert "replication-offset-checkpoint (high watermark) says 999" in lost.message and "recovery point" not in lost.message
    assert "found log end offset 110 (offsets 0..109 in 4 segment(s))" in lost.message and "offsets 110..998" in lost.message
    (hw,) = found(report, "KAFKA-HIGH-WATERMARK", path, severity=Severity.warning)
    assert hw.cause == lost.ref


def test_a_lost_last_segment_is_named_and_an_earlier_orphan_is_not_its_knock_on(tmp_path):
    root, part = _log_dir(tmp_path, batches=6, segment_bytes=300)  # one batch a segment
    bases = sorted(int(p.stem) for p in part.glob("*.log"))
    assert len(bases) == 6
    seg(root, "t-0", bases[2]).unlink()  # a hole in the middle: a gap, not lost data
    seg(root, "t-0", bases[-1]).unlink()  # the last segment: its offsets are vouched for
    report = validate(root)
    (lost,) = found(report, "KAFKA-LOG-MISSING", part, None, Severity.error)
    assert f"found log end offset {bases[-1]} (offsets 0..{bases[-1] - 1} in 4 segment(s)" in lost.message
    assert f"the .log of segment {segnames.kafka_offset_prefix(bases[-1])} is gone" in lost.message and segnames.kafka_offset_prefix(bases[2]) not in lost.message
    orphans = {f.path: f for f in found(report, "KAFKA-FILE-ORPHAN-INDEX")}
    assert orphans[str(seg(root, "t-0", bases[-1], "index"))].cause == lost.ref
    assert orphans[str(seg(root, "t-0", bases[2], "index"))].cause is None
    assert found(report, "KAFKA-RECOVERY-POINT", root / cpf.RECOVERY_POINT_OFFSET_CHECKPOINT)[0].cause == lost.ref


# --- the compiled record walk (validate --deep's healthy path) -----------------------------------------


@needs_compiled
def test_compiled_walk_refuses_what_it_leaves_to_the_precise_walk(tmp_path, monkeypatch):
    """A 10-byte timestamp delta (legal, never written by a client): the compiled walk refuses it,
    the precise walk accepts it, so the batch is checked and nothing is reported."""
    record = rb.encode_record(rb.Record(offset_delta=0, timestamp_delta=-(2**62) - 1, value=b"v"))
    assert record[2] >= 0x80 and all(b >= 0x80 for b in record[3:11]) and record[11] < 0x80  # 10 bytes
    assert next(rb.iter_records(record, 1)).timestamp_delta == -(2**62) - 1
    with pytest.raises(record_scan.RecordScanUnsure):
        _compiled_scan(record, 0, len(record), 1)
    assert record_scan.scan_records_py(record, 0, len(record), 1) == (0, 0, -(2**62) - 1, True)
    b = rb.build_batch([rb.Record(offset_delta=0, timestamp_delta=-(2**62) - 1, value=b"v")], base_timestamp=2**62 + 10)
    res = _writer_with(tmp_path, b)
    monkeypatch.setattr(km, "COMPILED_WALK_MIN_BYTES", 0)
    report = validate(tmp_path / "t-0", deep=True)
    assert report.facts["records"] == 2 and not [f for f in report.findings if f.family == "log" and f.code != "KAFKA-LOG-VALID-END"], res


@needs_compiled
def test_compiled_walk_runs_on_healthy_batches_and_finds_the_same(logs, monkeypatch):
    python = validate(logs, deep=True)
    monkeypatch.setattr(km, "COMPILED_WALK_MIN_BYTES", 0)

    def refuse(*args):
        raise AssertionError("the Python walk ran")

    monkeypatch.setattr(record_scan, "scan_records_py", refuse)
    compiled = validate(logs, deep=True)
    assert [f.to_dict() for f in compiled.findings] == [f.to_dict() for f in python.findings]
    assert compiled.facts["records"] == python.facts["records"]
    # damaged records: the compiled walk refuses the batch, the precise walk names the error
    path = seg(logs, "orders-0", 0)
    e = entries(path)[0]
    length_size = 2 if path.read_bytes()[e.position + 61] >= 0x80 else 1
    patch(path, e.position + 61 + length_size + 3, b"\x7e")
    fix_crc(path, e.position)
    monkeypatch.undo()
    python = validate(logs, deep=True)
    monkeypatch.setattr(km, "COMPILED_WALK_MIN_BYTES", 0)
    compiled = validate(logs, deep=True, jobs=2)
    key = lambda r: sorted((f.code, f.path, f.position, f.message) for f in r.findings)
    assert key(compiled) == key(python)
    found(compiled, "KAFKA-LOG-RECORDS", path)


def test_compiled_walk_only_for_big_runs(logs, monkeypatch):
    """Loading the compiled walk costs a fixed ~0.45 s: a run with less .log than
    COMPILED_WALK_MIN_BYTES keeps the Python walk."""
    used = []
    real = record_scan.scan_records

    def spy(*args, compiled=True):
        used.append(compiled)
        return real(*args, compiled=compiled)

    monkeypatch.setattr(record_scan, "scan_records", spy)
    validate(logs, deep=True)
    assert used and not any(used)
    if record_scan.compiled_available():
        monkeypatch.setattr(km, "COMPILED_WALK_MIN_BYTES", 1)
        used.clear()
        validate(logs, deep=True)
        assert used and all(used)
