"""``dump kafka-log --deep`` rows of v0/v1 messages carry the message's own ``crc`` and
``is_valid`` (issue 29, point 4), as kafka-dump-log (upstream ``DumpLogSegments``) prints
``crc: ... isvalid: ...`` for every record of a batch of magic 0 or 1; v2 record rows do not
(their batch holds the checksum)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from mqtool.formats.checksums import crc32
from mqtool.formats.kafka import compression
from mqtool.formats.kafka import legacy as kl
from mqtool.formats.kafka import record_batch as rb
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter
from tests.conftest import run_cli

CRC = slice(12, 16)  # a v0/v1 entry's stored CRC-32 (offset 8 bytes, size 4 bytes, then the CRC)


def _stored_crc(entry: bytes) -> int:
    return int(struct.unpack(">I", entry[CRC])[0])


def _rows(*args: object) -> tuple[int, list[dict[str, object]], str]:
    code, out, err = run_cli("dump", "kafka-log", *args, "--deep", "--jsonl")
    return code, [json.loads(line) for line in out.splitlines()], err


def _partition(tmp_path: Path) -> tuple[Path, list[kl.LegacyRecord]]:
    """legacy-0: two v0 messages, two v1 messages, a gzip wrapper of three v1 messages, a v2 batch."""
    part = tmp_path / "legacy-0"
    w = PartitionWriter(part, PartitionConfig(), snapshots=False)
    v0 = [kl.LegacyRecord(0, b"v0 value %d" % i, b"k%d" % i, magic=0) for i in range(2)]
    v1 = [kl.LegacyRecord(0, b"v1 value %d" % i, None, magic=1, timestamp=1_700_000_000_000 + i) for i in range(2)]
    inner = [kl.LegacyRecord(0, b"inner %d" % i, b"i%d" % i, magic=1, timestamp=1_700_000_000_100 + i) for i in range(3)]
    for m in (*v0, *v1):
        w.append_legacy([m])
    w.append_legacy(inner, codec=compression.GZIP)
    w.append(rb.build_batch([rb.Record(offset_delta=0, timestamp_delta=0, key=b"k", value=b"v2")], base_timestamp=1_700_000_000_200))
    w.close()
    return part, [*v0, *v1, *inner]


def test_legacy_record_rows_carry_crc_and_is_valid(tmp_path):
    part, messages = _partition(tmp_path)
    log = part / "00000000000000000000.log"
    data = log.read_bytes()
    code, rows, _ = _rows(part)
    assert code == 0
    records = [r for r in rows if r["kind"] == "record"]
    batches = [r for r in rows if r["kind"] == "batch"]
    assert [r["offset"] for r in records] == list(range(8))
    # an uncompressed message is its own record: the entry's CRC, as the batch row has it
    for batch, record in zip(batches[:4], records[:4]):
        assert record["crc"] == batch["crc"] == _stored_crc(data[batch["position"] :]) and record["is_valid"] is True
    # a wrapper's inner messages: each its own CRC-32 (over its magic..value), not the wrapper's
    wrapper = batches[4]
    assert wrapper["compresscodec"] == "gzip"
    for record, m in zip(records[4:7], messages[4:]):
        own = kl.encode_message(kl.LegacyRecord(record["offset"] - wrapper["last_offset"] + 2, m.value, m.key, magic=1, timestamp=m.timestamp))
        assert record["crc"] == _stored_crc(own) == crc32(own[16:]) and record["crc"] != wrapper["crc"]
        assert record["is_valid"] is True
    # a v2 record has neither: its batch holds the checksum
    assert "crc" not in records[7] and "is_valid" not in records[7]
    assert list(records[0])[10:14] == ["sequence", "crc", "is_valid", "header_keys"]


def test_a_damaged_message_is_not_valid_in_its_record_row(tmp_path):
    part, _ = _partition(tmp_path)
    log = part / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    second = kl.LOG_OVERHEAD + int(struct.unpack(">i", data[8:12])[0])  # the second v0 message
    data[second + 30] ^= 0xFF  # a byte of its value: the frame holds, the CRC fails
    log.write_bytes(bytes(data))
    code, rows, err = _rows(log)
    assert code == 1 and "KAFKA-LOG-CRC" in err
    record = next(r for r in rows if r["kind"] == "record" and r["batch_position"] == second)
    assert record["is_valid"] is False and record["crc"] == _stored_crc(data[second:]) and record["finding"] == "KAFKA-LOG-CRC"
    assert [r["is_valid"] for r in rows if r["kind"] == "record" and "is_valid" in r].count(False) == 1
    code, rows, _ = _rows(log, "--no-crc")
    assert code == 0
    record = next(r for r in rows if r["kind"] == "record" and r["batch_position"] == second)
    assert record["is_valid"] is False
    _code, out, _ = run_cli("dump", "kafka-log", log, "--deep")
    assert f"crc={record['crc']} INVALID" in out


def test_an_inner_message_whose_crc_fails(tmp_path):
    """A wrapper whose own CRC holds around an inner message whose CRC fails: with --no-crc its
    row says is_valid false (kafka-dump-log's deep iteration prints isvalid: false); with the
    check, the wrapper's records do not decode (the broker's LogValidator refuses such a set)."""
    inner = [kl.LegacyRecord(i, b"inner %d" % i, None, magic=1, timestamp=1_700_000_000_000) for i in range(3)]
    inner_set = bytearray(kl.encode_message_set(inner))  # v1 inner offsets relative: 0, 1, 2
    first = kl.LOG_OVERHEAD + int(struct.unpack(">i", inner_set[8:12])[0])
    inner_set[first + 36] ^= 0x01  # a byte of the second inner message's value (it starts at 34)
    value = compression.compress(compression.GZIP, bytes(inner_set), magic=1)
    wrapper = kl.LegacyRecord(2, value, None, magic=1, attributes=compression.GZIP, timestamp=1_700_000_000_000)
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(kl.encode_message(wrapper))
    code, rows, _ = _rows(log, "--no-crc")
    assert code == 0
    assert [(r["offset"], r["is_valid"]) for r in rows if r["kind"] == "record"] == [(0, True), (1, False), (2, True)]
    assert rows[2]["crc"] == _stored_crc(bytes(inner_set[first:]))
    code, rows, err = _rows(log)
    assert code == 1 and [r["kind"] for r in rows] == ["batch"] and "records do not decode" in rows[0]["records_error"]
