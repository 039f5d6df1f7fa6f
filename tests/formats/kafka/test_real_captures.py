"""Every real Kafka segment in ``shared/fixtures-real/kafka`` decoded and compared with the facts
recorded next to it (VERIFY.txt, asayers-kafkalite's golden decodings) and with kafka-python."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mqtool.formats.kafka import compression
from mqtool.formats.kafka import internal_topics as it
from mqtool.formats.kafka import legacy as lg
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.log import LogWalker
from tests.conftest import REAL_ROOT, real_path

KAFKA = REAL_ROOT / "kafka"
SEGMENT_SUFFIXES = (".log", ".records", ".checkpoint")


def _segments() -> list[str]:
    if not KAFKA.exists():
        return []
    return sorted(
        str(p.relative_to(KAFKA))
        for p in KAFKA.rglob("*")
        if p.is_file() and p.suffix in SEGMENT_SUFFIXES and p.stat().st_size > 0 and not p.name.endswith(".part")
    )


SEGMENTS = _segments() or ["(no real fixtures)"]

# Torn by design: tulios-kafkajs/SOURCE.md says its carved record sets include "four 1,024-byte
# record sets that are ONE PARTIAL message each (fetch max-bytes cut: a real torn tail)"; they are
# the ones carved from the v2_response_partial_messages_* fixture, whose names hold "partial".
TORN_CAPTURE = "tulios-kafkajs/carved/"
TORN_BY_DESIGN = frozenset(rel for rel in SEGMENTS if rel.startswith(TORN_CAPTURE) and "partial" in Path(rel).name)
CLEAN_SEGMENTS = [rel for rel in SEGMENTS if rel not in TORN_BY_DESIGN]


def _verify_facts() -> dict[str, dict]:
    path = KAFKA / "VERIFY.txt"
    facts = {}
    if not path.exists():
        return facts
    for line in path.read_text().splitlines():
        m = re.match(r"\./(\S+): size=(\d+) batches=(\d+) crc_ok=(\d+) magic=(\[[^\]]*\]) codecs=(\[[^\]]*\]) trailing=(\d+)", line)
        if m:
            facts[m.group(1)] = {
                "size": int(m.group(2)),
                "batches": int(m.group(3)),
                "crc_ok": int(m.group(4)),
                "magic": ast.literal_eval(m.group(5)),
                "codecs": ast.literal_eval(m.group(6)),
                "trailing": int(m.group(7)),
            }
    return facts


def _read(rel: str) -> bytes:
    """The segment's bytes; skip when it needs a codec library that is not installed."""
    data = real_path("kafka", *Path(rel).parts).read_bytes()
    codecs = {e.header.compression_type for e in LogWalker(data, mode="header")}
    missing = [compression.CODEC_NAMES[x] for x in codecs if not compression.is_available(x)]
    if missing:
        pytest.skip(f"{rel} needs codec libraries not installed: {missing}")
    return data


@pytest.mark.parametrize("rel", CLEAN_SEGMENTS)
def test_every_segment_walks_to_a_clean_end(rel):
    data = _read(rel)
    walker = LogWalker(data, mode="full")
    entries = list(walker)
    assert walker.end.kind == "eof" and walker.valid_bytes == len(data)
    facts = _verify_facts().get(rel)
    if facts is not None:
        assert facts["size"] == len(data) and facts["trailing"] == 0
        assert len(entries) == facts["batches"] == facts["crc_ok"]
        assert sorted({e.magic for e in entries}) == facts["magic"]
        codecs = {e.header.compression_type for e in entries}
        assert sorted(codecs) == facts["codecs"]
    # the fast walk sees the same entries
    framing = [(e.position, e.offset, e.size, e.magic) for e in LogWalker(data, mode="framing")]
    assert framing == [(e.position, e.offset, e.size, e.magic) for e in entries]


def test_torn_by_design_set_is_what_source_md_describes():
    source = real_path("kafka", "tulios-kafkajs", "SOURCE.md").read_text()
    m = re.search(r"(\w+) ([\d,]+)-byte record sets that are ONE PARTIAL message each", source)
    assert m is not None, "tulios-kafkajs/SOURCE.md no longer documents the torn record sets"
    count = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}[m.group(1).lower()]
    size = int(m.group(2).replace(",", ""))
    assert len(TORN_BY_DESIGN) == count
    assert all((KAFKA / rel).stat().st_size == size for rel in TORN_BY_DESIGN)


@pytest.mark.parametrize("rel", sorted(TORN_BY_DESIGN) or ["(no torn captures)"])
def test_torn_by_design_captures_end_in_a_partial_entry(rel):
    """Each is one message cut by the fetch size: no complete entry, then a partial tail whose
    claimed size reaches past the end of the data (what the broker's reader stops at)."""
    data = _read(rel)
    walker = LogWalker(data, mode="full")
    entries = list(walker)
    assert walker.end.kind == "partial"
    # the entries before the tear (decoded, CRC-checked in full mode) are contiguous and the tear
    # starts right after them; SOURCE.md: each set is ONE partial message, so there are none
    assert walker.valid_bytes == walker.end.position == sum(e.size for e in entries)
    assert entries == []
    assert walker.end.length > len(data) - walker.end.position
    framing = LogWalker(data, mode="framing")
    assert list(framing) == [] and framing.end == walker.end


def test_verify_txt_lists_segments_we_walk():
    facts = _verify_facts()
    if not facts:
        pytest.skip("VERIFY.txt not available")
    assert set(facts) <= set(SEGMENTS)


@pytest.mark.parametrize("rel", SEGMENTS)
def test_every_entry_re_encodes_to_the_same_bytes(rel):
    data = _read(rel)
    for entry in LogWalker(data, mode="full"):
        original = data[entry.position : entry.position + entry.size]
        if entry.magic == 2:
            if entry.header.compression_type == 0:
                assert rb.encode_batch(entry.batch) == original
            else:
                again = rb.decode_batch(rb.encode_batch(entry.batch))
                assert again == entry.batch
        else:
            assert lg.encode_message(entry.header) == original


# --- asayers-kafkalite: magic 0, none/gzip/snappy, golden decodings ---------------------------

_ASCII_NAMES = [
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "a", "b", "t", "n", "v", "f", "r", "SO", "SI",
    "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
]


def haskell_show(raw: bytes) -> str:
    """Haskell's ``show`` of a Char8 ByteString, which is how the golden files print values."""
    out = ['"']
    for i, b in enumerate(raw):
        nxt = raw[i + 1] if i + 1 < len(raw) else None
        if b == 0x22:
            out.append('\\"')
        elif b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        elif b < 0x20:
            esc = "\\" + _ASCII_NAMES[b]
            if esc == "\\SO" and nxt == ord("H"):
                esc += "\\&"
            out.append(esc)
        else:
            esc = "\\DEL" if b == 0x7F else f"\\{b}"
            if b != 0x7F and nxt is not None and 0x30 <= nxt <= 0x39:
                esc += "\\&"
            out.append(esc)
    out.append('"')
    return "".join(out)


def test_haskell_show_matches_known_escapes():
    assert haskell_show(b'[Within]\tLord "x"\\') == '"[Within]\\tLord \\"x\\"\\\\"'
    assert haskell_show(b"\x0eH\xe91") == '"\\SO\\&H\\233\\&1"'


@pytest.mark.parametrize("topic", ["numbers-0", "hamlet-none-0", "hamlet-gzip-0", "hamlet-snappy-0"])
def test_kafkalite_golden_decodings(topic):
    log = real_path("kafka", "asayers-kafkalite", "tests", "test-data", "fs-data", topic, "00000000000000000000.log")
    golden = real_path("kafka", "asayers-kafkalite", "tests", "test-data", "golden", topic).read_text().splitlines()
    walker = LogWalker(_read(str(log.relative_to(KAFKA))), mode="full")
    lines = [f"{r.offset}: {haskell_show(r.value)}" for e in walker for r in e.records]
    assert walker.end.kind == "eof"
    assert lines == golden


def test_kafkalite_gzip_wrapper_offsets():
    log = real_path("kafka", "asayers-kafkalite", "tests", "test-data", "fs-data", "hamlet-gzip-0", "00000000000000000000.log")
    entries = list(LogWalker(log.read_bytes(), mode="full"))
    first = entries[0]
    assert (first.magic, first.offset, first.header.compression_type) == (0, 253, 1)
    assert [r.offset for r in first.records] == list(range(254))
    assert [r.timestamp_type for r in first.records][:1] == ["NoTimestampType"]
    all_offsets = [r.offset for e in entries for r in e.records]
    assert all_offsets == list(range(len(all_offsets))) and len(all_offsets) == 5382
    assert all(e.offset == e.records[-1].offset for e in entries)


# --- segmentio-kafka-go: v1, v1 wrappers with relative offsets, mixed v1 + v2 -------------------


def test_mixed_v1_v2_record_set():
    data = _read("segmentio-kafka-go/carved/v1-v1c-v2-v2c-v2b-v2b-v2b-v2bc-v1b-v1bc.at73.records")
    entries = list(LogWalker(data, mode="full"))
    records = [r for e in entries for r in e.records]
    assert [r.offset for r in records] == list(range(20))
    assert [e.magic for e in entries] == [1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1]
    assert all(r.timestamp_type == "CreateTime" and r.timestamp > 1_600_000_000_000 for r in records)
    assert records[0].key == b"alpha" and records[4].key == b"gamma"
    wrapper = entries[-1]
    assert wrapper.magic == 1 and wrapper.header.compression_type == 1 and wrapper.offset == 19
    assert [r.offset for r in wrapper.records] == [18, 19]


def test_v1_wrapper_with_relative_inner_offsets():
    data = _read("segmentio-kafka-go/carved/v1c-v1-v1c.at77.records")
    first = next(iter(LogWalker(data, mode="full")))
    inner = lg.iter_message_set(compression.decompress(compression.GZIP, first.header.value))
    assert [m.offset for _, m in inner] == [0, 1]  # stored relative
    assert [r.offset for r in first.records] == [0, 1] and first.offset == 1


# --- DonaldY-kafka-2.7.1: __consumer_offsets ---------------------------------------------------


def test_consumer_offsets_partitions_decode():
    root = real_path("kafka", "DonaldY-kafka-2.7.1", "kafka-logs")
    seen_keys = []
    for log in sorted(root.glob("__consumer_offsets-*/*.log")):
        for entry in LogWalker(log.read_bytes(), mode="full"):
            for record in entry.batch.records:
                key, value = it.decode_consumer_offsets_record(record.key, record.value)
                seen_keys.append((log.parent.name, type(key).__name__, type(value).__name__))
                if isinstance(value, it.GroupMetadataValue):
                    assert value.version == 3 and value.protocol_type == "consumer"
                    for m in value.members:
                        assert m.member_id.startswith("consumer-") and m.subscription and m.assignment
    assert ("__consumer_offsets-39", "OffsetCommitKey", "OffsetCommitValue") in seen_keys
    assert ("__consumer_offsets-17", "GroupMetadataKey", "NoneType") in seen_keys  # tombstone


def test_consumer_offsets_39_offset_commit_and_compaction_gap():
    log = real_path("kafka", "DonaldY-kafka-2.7.1", "kafka-logs", "__consumer_offsets-39", "00000000000000000000.log")
    entries = list(LogWalker(log.read_bytes(), mode="full"))
    commits = []
    for e in entries:
        for r in e.batch.records:
            key, value = it.decode_consumer_offsets_record(r.key, r.value)
            if isinstance(key, it.OffsetCommitKey) and value is not None:
                commits.append((key.group, key.topic, key.partition, value.offset))
    assert ("console-consumer-65070", "test_topic_0603", 0, 9) in commits
    offsets = [r.offset for e in entries for r in e.records]
    assert offsets == sorted(offsets) and offsets != list(range(offsets[0], offsets[0] + len(offsets)))  # compacted


# --- KRaft metadata logs -----------------------------------------------------------------------


def test_cluster_metadata_records_have_known_names():
    logs = [Path(KAFKA / rel) for rel in SEGMENTS if "__cluster_metadata-0" in rel or rel.endswith(".checkpoint")]
    if not logs:
        pytest.skip("no KRaft metadata log available")
    names, controls = set(), set()
    for log in logs:
        for entry in LogWalker(log.read_bytes(), mode="full"):
            for record in entry.batch.records:
                if entry.header.is_control_batch:
                    key, value = rb.decode_control_record(record)
                    controls.add(key.type_name)
                    if key.type == rb.LEADER_CHANGE:
                        assert value.leader_id in value.voters
                else:
                    frame = it.decode_metadata_record(record.value)
                    assert frame.name in it.METADATA_RECORD_TYPES.values()
                    names.add(frame.name)
                    it.decode_metadata_payload(frame)
    assert {"RegisterBrokerRecord", "FeatureLevelRecord", "TopicRecord", "PartitionRecord", "NoOpRecord"} <= names
    assert {"LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"} <= controls


def test_jeong_rae_metadata_log_counts():
    log = real_path("kafka", "Jeong-Rae-KafkaDemo", "kraft-combined-logs", "__cluster_metadata-0", "00000000000000000000.log")
    walker = LogWalker(log.read_bytes(), mode="header")
    headers = [e.header for e in walker]
    assert len(headers) == 3068 and walker.end.kind == "eof"
    assert all(h.magic == 2 and h.compression_type == 0 for h in headers)
    assert all(a.next_offset <= b.base_offset for a, b in zip(headers, headers[1:]))
    assert any(h.is_control_batch for h in headers)


# --- kafka-python reads the same real bytes ----------------------------------------------------


@pytest.mark.parametrize("rel", SEGMENTS)
def test_kafka_python_agrees_on_real_segments(rel):
    mr = pytest.importorskip("kafka.record.memory_records")
    from kafka import codec as kc

    data = _read(rel)
    entries = list(LogWalker(data, mode="full"))
    if any(e.header.compression_type == 2 for e in entries) and not kc.has_snappy():
        pytest.skip("kafka-python has no snappy here")
    theirs = []
    for batch in mr.MemoryRecords(data):
        for r in batch:
            ts = r.timestamp if r.timestamp is not None else -1
            theirs.append((r.offset, ts, r.key, r.value))
    ours = [(r.offset, r.timestamp, r.key, r.value) for e in entries for r in e.records]
    assert ours == theirs
