"""query for Kafka against a brute-force oracle: every offset and timestamp of the bundled log dir."""

from __future__ import annotations

import shutil

import pytest

from mqtool.formats.kafka.log import LogWalker
from mqtool.ops.query.kafka import query_offset, query_timestamp, segment_largest_timestamp
from mqtool.store.kafka import open_kafka
from tests.conftest import FIXTURES, real_path

LOGS = FIXTURES / "kafka-logs"
STORE = open_kafka(LOGS)
LOG_START = {"orders-0": 7}


def all_records(partition: str) -> list:
    """(offset, timestamp, file name) of every record, in log order."""
    out = []
    for path in sorted((LOGS / partition).glob("*.log")):
        for entry in LogWalker(path.read_bytes(), mode="full"):
            out.extend((r.offset, r.timestamp, path.name) for r in entry.records)
    return out


PARTITIONS = ["orders-0", "orders-1", "events-0", "legacy-0", "__consumer_offsets-0", "__cluster_metadata-0"]


@pytest.mark.parametrize("name", PARTITIONS)
def test_every_offset(name):
    topic, number = name.rsplit("-", 1)
    records = all_records(name)
    start = LOG_START.get(name, 0)
    for target in range(0, records[-1][0] + 3):
        result = query_offset(STORE, topic, int(number), target, max_results=2)
        expected = [r for r in records if r[0] >= target][:2] if target >= start else []
        got = [(h.record.offset, h.record.timestamp, h.file.name) for h in result.hits]
        assert got == expected, (name, target, result.steps, result.notes)
        if target < start:
            assert "below the log start offset" in result.notes[0]
        elif got and got[0][0] != target:
            assert "compacted away" in result.notes[-1]


@pytest.mark.parametrize("name", ["orders-0", "orders-1", "events-0", "legacy-0", "__consumer_offsets-0"])
def test_every_timestamp(name):
    topic, number = name.rsplit("-", 1)
    records = all_records(name)
    start = LOG_START.get(name, 0)
    stamps = sorted({t + d for _, t, _ in records for d in (-1, 0, 1)} | {0, 1 << 62})
    for target in stamps:
        result = query_timestamp(STORE, topic, int(number), target)
        expected = next(((o, t) for o, t, _ in records if t >= target and o >= start), None)
        got = (result.hits[0].record.offset, result.hits[0].record.timestamp) if result.hits else None
        assert got == expected, (name, target, result.steps)


def test_offset_query_uses_the_index():
    result = query_offset(STORE, "orders", 0, 50)
    (hit,) = result.hits
    assert hit.via == "index" and hit.record.offset == 50
    assert result.steps[0] == "00000000000000000030.index entry #2: offset 49 at position 2155"
    assert hit.batch.base_offset == 50 and hit.batch.is_valid
    result = query_offset(STORE, "orders", 0, 5000)
    assert not result.hits and "no record at or after offset 5000" in result.notes[0]


def test_timestamp_query_uses_the_time_index():
    result = query_timestamp(STORE, "orders", 0, 1_700_000_001_300, max_results=3)
    assert [h.via for h in result.hits] == ["timeindex"] * 3
    assert "timeindex entry #" in result.steps[-2]
    offsets = [h.record.offset for h in result.hits]
    assert offsets == sorted(offsets) and len(set(offsets)) == 3


def test_internal_records_are_decoded():
    (hit,) = query_offset(STORE, "__consumer_offsets", 0, 1).hits
    assert type(hit.record.decoded["key"]).__name__ == "OffsetCommitKey" and hit.record.decoded["value"].offset == 40
    (hit,) = query_offset(STORE, "__cluster_metadata", 0, 0).hits
    assert hit.record.control["type"] == "LEADER_CHANGE"


def test_partition_dir_needs_no_topic():
    store = open_kafka(LOGS / "events-0")
    (hit,) = query_offset(store, None, None, 33).hits
    assert (hit.topic, hit.partition) == ("events", 0) and hit.record.offset == 33


def test_broken_index_falls_back_to_a_scan(tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(LOGS, root)
    index = root / "orders-0" / "00000000000000000030.index"
    raw = bytearray(index.read_bytes())
    raw[20:24] = (7).to_bytes(4, "big")  # entry 2 points into the middle of a batch
    index.write_bytes(bytes(raw))
    result = query_offset(open_kafka(root), "orders", 0, 50)  # entry 2 (offset 49) is the one used
    assert [h.record.offset for h in result.hits] == [50]
    assert "no valid batch starts" in result.notes[0]
    raw[20:24] = raw[28:32]  # entry 2 now points at the (valid) batch of entry 3: too far
    index.write_bytes(bytes(raw))
    result = query_offset(open_kafka(root), "orders", 0, 50)
    assert [h.record.offset for h in result.hits] == [50] and result.notes


def test_a_batch_whose_crc_fails_is_stepped_over_not_the_end_of_the_answer(tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(LOGS, root)
    log = root / "orders-0" / "00000000000000000090.log"
    raw = bytearray(log.read_bytes())
    entries = list(LogWalker(bytes(raw), mode="header"))
    bad = next(e for e in entries if e.header.base_offset == 96)  # offsets 96..99, indexed as 99
    raw[bad.position + 61] ^= 0x40  # its first record's length: its CRC fails and its records do not decode
    log.write_bytes(bytes(raw))
    store = open_kafka(root)
    for offset in (100, 97):  # through the index entry pointing at the damaged batch; by a scan
        result = query_offset(store, "orders", 0, offset, max_results=2)
        assert [h.record.offset for h in result.hits] == [100, 101]
        # the damage is stated once, by validate's finding for the partition (the lookup's own
        # reading of the same CRC is not printed again)
        (validated,) = result.problems
        assert validated.startswith(f"KAFKA-LOG-CRC {log}:{bad.position + 17}: "), validated
        assert not any("no record" in n or "no valid batch" in n for n in result.notes)
    assert any(f"offset 97 is in the batch at {log}:{bad.position} (offsets 96..99), whose CRC fails and whose records cannot be read" in n for n in result.notes)
    (ts_hit,) = query_timestamp(store, "orders", 0, bad.header.max_timestamp).hits  # max_timestamp of the bad batch
    assert ts_hit.record.offset == 100


def test_a_batch_whose_crc_fails_but_whose_records_decode_gives_them_with_its_finding(tmp_path):
    """Issue 30: the frame holds and the records decode (a flipped payload byte): the record
    asked is found, carrying KAFKA-LOG-CRC, as dump lists it; the finding is stated once."""
    root = tmp_path / "logs"
    shutil.copytree(LOGS, root)
    log = root / "orders-0" / "00000000000000000090.log"
    raw = bytearray(log.read_bytes())
    entries = list(LogWalker(bytes(raw), mode="header"))
    bad = next(e for e in entries if e.header.base_offset == 96)
    raw[bad.position + bad.size - 5] ^= 0x01  # a byte of the last record's value (its headers follow: none)
    log.write_bytes(bytes(raw))
    assert len(list(LogWalker(bytes(raw), mode="full", check_crc=False))) == len(entries)  # the records decode
    store = open_kafka(root)
    result = query_offset(store, "orders", 0, 97, max_results=4)
    assert [(h.record.offset, h.finding) for h in result.hits] == [(97, "KAFKA-LOG-CRC"), (98, "KAFKA-LOG-CRC"), (99, "KAFKA-LOG-CRC"), (100, None)]
    (validated,) = result.problems
    assert validated.startswith(f"KAFKA-LOG-CRC {log}:{bad.position + 17}: "), validated
    assert any("its record is listed with the finding KAFKA-LOG-CRC" in n for n in result.notes)


def test_a_batch_whose_records_do_not_decode_is_named_at_its_real_position(tmp_path):
    import crc32c

    root = tmp_path / "logs"
    shutil.copytree(LOGS, root)
    log = root / "events-0" / "00000000000000000000.log"
    raw = bytearray(log.read_bytes())
    bad = next(e for e in LogWalker(bytes(raw), mode="header") if e.header.compression_type != 0 and e.header.base_offset > 0)
    raw[bad.position + 81 : bad.position + 89] = bytes.fromhex("deadbeefdeadbeef")  # inside the compressed records
    raw[bad.position + 17 : bad.position + 21] = crc32c.crc32c(bytes(raw[bad.position + 21 : bad.position + bad.size])).to_bytes(4, "big")
    log.write_bytes(bytes(raw))
    first, last = bad.header.base_offset, bad.header.last_offset
    positions = set()
    for start in (first + 1, 0):  # via the index or a scan from another position: the same error position
        result = query_offset(open_kafka(root), "events", 0, start, max_results=1 if start else last + 2)
        (problem,) = result.problems
        assert problem.path == str(log) and bad.position < problem.position < bad.position + bad.size
        positions.add(problem.position)
        if start == first + 1:
            assert [h.record.offset for h in result.hits] == [last + 1]
            assert any(f"offset {start} is in the batch at {log}:{bad.position} (offsets {first}..{last}), whose records cannot be read" in n for n in result.notes)
            assert not any("compacted away" in n for n in result.notes)
    assert len(positions) == 1


def test_segment_largest_timestamp_reads_past_the_last_time_entry():
    part = STORE.find_partition("orders", 0)
    last = part.log_segments()[-1]
    stamps = [e.header.max_timestamp for e in LogWalker(last.log.read_bytes())]
    assert segment_largest_timestamp(last) == max(stamps)


def test_real_metadata_log_queries():
    logs = real_path("kafka", "Jeong-Rae-KafkaDemo", "kraft-combined-logs")
    store = open_kafka(logs)
    (hit,) = query_offset(store, "__cluster_metadata", 0, 1500).hits
    assert hit.record.offset == 1500 and hit.via == "scan"  # the capture has no .index
    first = query_timestamp(store, "__cluster_metadata", 0, 0).hits[0]
    assert first.record.offset == 0
