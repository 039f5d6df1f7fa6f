"""Kafka record batch v2, control records and the ``.log`` walker: spec vectors, round trips,
hostile input, and a differential test against kafka-python's ``MemoryRecordsBuilder``."""

from __future__ import annotations

import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats._binary import encode_varint
from mqtool.formats.checksums import crc32c
from mqtool.formats.kafka import compression as c
from mqtool.formats.kafka import legacy as lg
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.log import LogWalker, decode_entry, iter_log_records, peek_entry


def hx(text: str) -> bytes:
    return bytes.fromhex("".join(line.split(":", 1)[-1] for line in text.strip().splitlines()).replace(" ", ""))


TS = 1700000000000
MINIMAL = hx("""
0000: 00 00 00 00 00 00 00 00 00 00 00 3a ff ff ff ff
0010: 02 bb cc 41 15 00 00 00 00 00 00 00 00 01 8b cf
0020: e5 68 00 00 00 01 8b cf e5 68 00 ff ff ff ff ff
0030: ff ff ff ff ff ff ff ff ff 00 00 00 01 10 00 00
0040: 00 01 04 68 69 00
""")
TWO_RECORDS = hx("""
0000: 00 00 00 00 00 00 00 64 00 00 00 49 00 00 00 03
0010: 02 34 73 fe cf 00 00 00 00 00 01 00 00 01 8b cf
0020: e5 68 00 00 00 01 8b cf e5 68 05 00 00 00 00 00
0030: 00 0f a1 00 00 00 00 00 0b 00 00 00 02 1c 00 00
0040: 00 04 6b 31 04 76 31 02 02 68 02 78 10 00 0a 02
0050: 04 6b 32 01 00
""")
COMMIT = hx("""
0000: 00 00 00 00 00 00 00 0a 00 00 00 42 00 00 00 00
0010: 02 40 d5 14 e9 00 30 00 00 00 00 00 00 01 8b cf
0020: e5 68 00 00 00 01 8b cf e5 68 00 00 00 00 00 00
0030: 00 03 e8 00 05 ff ff ff ff 00 00 00 01 20 00 00
0040: 00 08 00 00 00 01 0c 00 00 00 00 00 07 00
""")


def need_codec(codec: int) -> None:
    if not c.is_available(codec):
        pytest.skip(f"{c.CODEC_NAMES[codec]} library not installed")


# --- spec vectors -----------------------------------------------------------------------------


def test_minimal_batch_vector():
    assert rb.peek_batch(MINIMAL) == (0, 58, 2)
    batch = rb.decode_batch(MINIMAL)
    h = batch.header
    assert (h.base_offset, h.batch_length, h.partition_leader_epoch, h.crc, h.attributes) == (0, 58, -1, 0xBBCC4115, 0)
    assert (h.crc, h.size, h.last_offset, h.last_sequence) == (3150725397, 70, 0, -1)
    assert (h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence) == (TS, TS, -1, -1, -1)
    assert h.delete_horizon_ms is None and not h.is_control_batch and h.timestamp_type_name == "CreateTime"
    assert batch.records == (rb.Record(0, 0, None, b"hi"),)
    assert rb.encode_batch(batch) == MINIMAL
    assert rb.decode_batch_header(MINIMAL) == h


def test_two_record_batch_vector():
    batch = rb.decode_batch(TWO_RECORDS)
    assert batch.header.crc == 0x3473FECF and batch.header.records_count == 2
    assert [(batch.offset_of(r), batch.timestamp_of(r), batch.sequence_of(r), r.key, r.value) for r in batch.records] == [
        (100, TS, 11, b"k1", b"v1"),
        (101, TS + 5, 12, b"k2", None),
    ]
    assert batch.records[0].headers == (rb.RecordHeader("h", b"x"),)
    assert batch.header.last_sequence == 12
    assert rb.encode_batch(batch) == TWO_RECORDS


def test_two_record_batch_gzip_vector():
    batch = rb.decode_batch(TWO_RECORDS)
    gz = rb.RecordBatch(rb.BatchHeader(**{**_header_fields(batch.header), "attributes": 1}), batch.records)
    data = rb.encode_batch(gz)
    decoded = rb.decode_batch(data)
    assert decoded.header.compression_type == c.GZIP and decoded.records == batch.records
    assert decoded == gz


def _header_fields(h: rb.BatchHeader) -> dict:
    return {k: getattr(h, k) for k in rb.BatchHeader.__dataclass_fields__}


def test_commit_marker_vector():
    batch = rb.decode_batch(COMMIT)
    h = batch.header
    assert (h.attributes, h.is_transactional, h.is_control_batch, h.crc) == (0x30, True, True, 0x40D514E9)
    assert (h.producer_id, h.producer_epoch, h.base_offset, h.partition_leader_epoch) == (1000, 5, 10, 0)
    key, value = rb.decode_control_record(batch.records[0])
    assert key == rb.ControlRecordKey(0, rb.COMMIT) and key.type_name == "COMMIT"
    assert value == rb.EndTransactionMarker(0, 7)
    rebuilt = rb.build_batch(
        [rb.control_record(rb.COMMIT, rb.EndTransactionMarker(0, 7))],
        base_offset=10, base_timestamp=TS, is_transactional=True, is_control=True,
        producer_id=1000, producer_epoch=5, partition_leader_epoch=0,
    )
    assert rb.encode_batch(rebuilt) == COMMIT


def test_partition_leader_epoch_is_outside_the_crc():
    data = bytearray(MINIMAL)
    data[12:16] = struct.pack(">i", 7)
    header = rb.decode_batch_header(bytes(data))
    assert header.partition_leader_epoch == 7 and header.crc == 0xBBCC4115
    assert crc32c(bytes(data[21:])) == 0xBBCC4115


def test_layout_constants():
    assert (rb.RECORD_BATCH_OVERHEAD, rb.HEADER_SIZE_UP_TO_MAGIC, rb.CRC_POSITION, rb.ATTRIBUTES_POSITION) == (61, 17, 17, 21)


# --- header semantics -------------------------------------------------------------------------


def test_increment_sequence_wraps_like_upstream():
    assert rb.increment_sequence(5, 3) == 8
    assert rb.increment_sequence(2**31 - 1, 1) == 0
    assert rb.increment_sequence(2**31 - 2, 5) == 3
    h = rb.BatchHeader(base_sequence=2**31 - 1, last_offset_delta=2)
    assert h.last_sequence == 1


def test_attribute_bits_and_delete_horizon():
    batch = rb.build_batch([rb.Record(0, -5, b"k", None)], delete_horizon_ms=TS, is_transactional=True, producer_id=3, producer_epoch=0, base_sequence=0)
    h = batch.header
    assert h.has_delete_horizon_ms and h.delete_horizon_ms == TS == h.base_timestamp
    assert h.is_transactional and not h.is_control_batch and h.has_producer_id
    decoded = rb.decode_batch(rb.encode_batch(batch))
    assert decoded == batch and decoded.timestamp_of(decoded.records[0]) == TS - 5


def test_log_append_time_uses_max_timestamp():
    batch = rb.build_batch([rb.Record(0, 0), rb.Record(1, 40)], base_timestamp=TS, timestamp_type=rb.LOG_APPEND_TIME, log_append_time=TS + 999)
    decoded = rb.decode_batch(rb.encode_batch(batch))
    assert decoded.header.timestamp_type_name == "LogAppendTime"
    assert [decoded.timestamp_of(r) for r in decoded.records] == [TS + 999, TS + 999]


def test_empty_batch_after_compaction_is_legal():
    batch = rb.build_batch([], base_offset=50, last_offset_delta=9, base_sequence=4, producer_id=8, producer_epoch=1)
    data = rb.encode_batch(batch)
    assert len(data) == 61
    decoded = rb.decode_batch(data)
    assert decoded.records == () and decoded.header.last_offset == 59 and decoded.header.last_sequence == 13
    assert decoded.header.base_timestamp == -1
    # upstream's iterator returns nothing for count 0 without reading the record bytes
    assert rb.decode_batch(_raw_batch(b"ignored", 0)).records == ()
    assert rb.decode_batch(_raw_batch(b"not gzip", 0, attributes=c.GZIP)).records == ()


# --- control records --------------------------------------------------------------------------

CONTROL_VALUES = [
    (rb.ABORT, rb.EndTransactionMarker(0, 3)),
    (rb.LEADER_CHANGE, rb.LeaderChangeMessage(0, 1, (1, 2, 3), (1, 3))),
    (rb.SNAPSHOT_HEADER, rb.SnapshotHeaderRecord(0, TS)),
    (rb.SNAPSHOT_FOOTER, rb.SnapshotFooterRecord(0)),
    (rb.KRAFT_VERSION, rb.KRaftVersionRecord(0, 1)),
    (
        rb.KRAFT_VOTERS,
        rb.VotersRecord(0, (rb.Voter(1, "AAAAAAAAAAAAAAAAAAAAAQ", (rb.VoterEndpoint("CONTROLLER", "localhost", 9093),), 0, 1),)),
    ),
]


@pytest.mark.parametrize("type_id,value", CONTROL_VALUES)
def test_control_values_round_trip(type_id, value):
    record = rb.control_record(type_id, value)
    batch = rb.build_batch([record], is_control=True)
    decoded = rb.decode_batch(rb.encode_batch(batch))
    key, out = rb.decode_control_record(decoded.records[0])
    assert key.type == type_id and out == value


def test_leader_change_known_bytes():
    # version 0, leader 1, voters [1], granting [1], no tagged fields (as in real KRaft logs)
    raw = bytes.fromhex("0000" "00000001" "02" "00000001" "00" "02" "00000001" "00" "00")
    assert rb.decode_control_value(rb.ControlRecordKey(0, 2), raw) == rb.LeaderChangeMessage(0, 1, (1,), (1,))
    assert rb.encode_control_value(rb.LeaderChangeMessage(0, 1, (1,), (1,))) == raw


def test_control_key_and_marker_errors():
    with pytest.raises(CorruptDataError, match="at least 4 bytes"):
        rb.decode_control_key(b"\x00\x00\x01")
    with pytest.raises(CorruptDataError, match="version >= 0"):
        rb.decode_control_key(b"\xff\xff\x00\x01")
    with pytest.raises(CorruptDataError, match="at least 6 bytes"):
        rb.decode_end_txn_marker(b"\x00\x00\x00")
    with pytest.raises(CorruptDataError):
        rb.decode_control_value(rb.ControlRecordKey(0, rb.LEADER_CHANGE), b"\x00\x00\x00\x00\x00\x01\x05")
    key = rb.decode_control_key(b"\x00\x00\x00\x63")
    assert key.type_name == "UNKNOWN" and rb.decode_control_value(key, b"opaque") == b"opaque"
    # a newer key version is parsed as version 0 (upstream logs and carries on)
    assert rb.decode_control_key(b"\x00\x01\x00\x00").type_name == "ABORT"


# --- errors -----------------------------------------------------------------------------------


def test_crc_mismatch():
    data = bytearray(TWO_RECORDS)
    data[-3] ^= 0x40
    with pytest.raises(ChecksumError) as info:
        rb.decode_batch_header(bytes(data))
    assert info.value.position == 17 and info.value.found == "0x3473FECF"
    with pytest.raises(ChecksumError):
        rb.decode_batch(bytes(data))
    assert rb.decode_batch(bytes(data), check_crc=False).records[1].key == b"kr"  # the flipped byte


def test_size_below_overhead_and_wrong_magic():
    small = bytearray(MINIMAL)
    small[8:12] = struct.pack(">i", 48)
    with pytest.raises(CorruptDataError, match=">= 49") as info:
        rb.decode_batch_header(bytes(small))
    assert info.value.position == 8
    magic3 = bytearray(MINIMAL)
    magic3[16] = 3
    with pytest.raises(CorruptDataError, match="batch magic 2") as info:
        rb.decode_batch_header(bytes(magic3))
    assert info.value.position == 16


def test_truncated_batch():
    with pytest.raises(TruncatedDataError):
        rb.decode_batch(MINIMAL[:-1])
    with pytest.raises(TruncatedDataError):
        rb.peek_batch(MINIMAL[:16])


def _raw_batch(records_bytes: bytes, count: int, attributes: int = 0) -> bytes:
    body = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), TS, TS, -1, -1, -1, count) + records_bytes
    return struct.pack(">qiib", 0, 4 + 1 + 4 + len(body), -1, 2) + struct.pack(">I", crc32c(body)) + body


def test_record_count_beyond_the_bytes_fails_fast():
    data = _raw_batch(rb.encode_record(rb.Record(0, 0, None, b"x")), 2**31 - 1)
    start = time.perf_counter()
    with pytest.raises(CorruptDataError, match="records count"):
        rb.decode_batch(data)
    assert time.perf_counter() - start < 0.1
    with pytest.raises(CorruptDataError, match=">= 0"):
        rb.decode_batch(_raw_batch(b"", -1))


def test_declared_batch_size_mismatches():
    one = rb.encode_record(rb.Record(0, 0, None, b"x"))
    with pytest.raises(CorruptDataError, match="still remaining"):
        rb.decode_batch(_raw_batch(one + one, 1))
    with pytest.raises(TruncatedDataError):
        rb.decode_batch(_raw_batch(one + one[:-1], 2))


def test_record_level_corruption():
    def rec(body: bytes) -> bytes:
        return encode_varint(len(body)) + body

    good_tail = encode_varint(-1) + encode_varint(1) + b"x" + encode_varint(0)
    cases = {
        "record length of": rec(b"\x00" + encode_varint(0) + encode_varint(0) + good_tail + b"\x00"),
        "headers count": rec(b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-1) + encode_varint(-1) + encode_varint(-2)),
        "header key length": rec(b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-1) + encode_varint(-1) + encode_varint(1) + encode_varint(-1) + encode_varint(-1)),
        "varint of at most 5": rec(b"\x00" + encode_varint(0) + b"\x80\x80\x80\x80\x80\x01" + good_tail),
        "int32 varint": rec(b"\x00" + encode_varint(0) + encode_varint(2**31) + good_tail),
        "record length >= 0": encode_varint(-3) + b"\x00" * 6,
    }
    for expected, records in cases.items():
        with pytest.raises(CorruptDataError, match=expected):
            rb.decode_batch(_raw_batch(records, 1))


def test_errors_inside_compressed_records_point_at_the_batch():
    need_codec(c.GZIP)
    garbage = c.compress(c.GZIP, b"\x00\x00\x00")
    data = b"\x00" * 9 + _raw_batch(garbage, 1, attributes=c.GZIP)
    with pytest.raises(CorruptDataError) as info:
        rb.decode_batch(data, 9)
    assert info.value.position == 9 and "decompressed records" in str(info.value)
    broken_stream = _raw_batch(b"\x1f\x8b\x08garbage", 1, attributes=c.GZIP)
    with pytest.raises(CorruptDataError) as info:
        rb.decode_batch(broken_stream)
    assert info.value.position >= 61


def test_unknown_codec_in_attributes():
    with pytest.raises(CorruptDataError, match="codec"):
        rb.decode_batch(_raw_batch(b"\x00" * 10, 1, attributes=6))


def test_decompression_limit():
    need_codec(c.ZSTD)
    big = rb.build_batch([rb.Record(i, 0, None, b"\x00" * 100_000) for i in range(30)], compression_type=c.ZSTD)
    data = rb.encode_batch(big)
    with pytest.raises(UnsupportedFormatError, match="exceeds the limit"):
        rb.decode_batch(data, max_decompressed_size=1 << 20)
    assert rb.decode_batch(data) == big


# --- property tests ---------------------------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
blobs = st.none() | st.binary(max_size=40)
records = st.builds(
    rb.Record,
    offset_delta=INT32,
    timestamp_delta=INT64,
    key=blobs,
    value=blobs,
    headers=st.lists(st.builds(rb.RecordHeader, st.text(max_size=10), blobs), max_size=3).map(tuple),
    attributes=st.integers(-128, 127),
)


@st.composite
def batches(draw, codecs=(0, 1, 2, 3, 4)):
    codec = draw(st.sampled_from(codecs))
    attributes = (draw(st.integers(-(2**15), 2**15 - 1)) & ~0x07) | codec
    header = rb.BatchHeader(
        base_offset=draw(INT64),
        partition_leader_epoch=draw(INT32),
        attributes=attributes,
        last_offset_delta=draw(INT32),
        base_timestamp=draw(INT64),
        max_timestamp=draw(INT64),
        producer_id=draw(INT64),
        producer_epoch=draw(st.integers(-(2**15), 2**15 - 1)),
        base_sequence=draw(INT32),
    )
    return rb.RecordBatch(header, tuple(draw(st.lists(records, max_size=6))))


AVAILABLE_CODECS = tuple(x for x in range(5) if c.is_available(x))


@given(batches(codecs=AVAILABLE_CODECS))
@settings(max_examples=200)
def test_batch_round_trip(batch):
    data = rb.encode_batch(batch)
    decoded = rb.decode_batch(data)
    assert decoded == batch
    assert decoded.header.records_count == len(batch.records) and decoded.header.size == len(data)
    assert rb.decode_batch_header(data) == batch.header
    assert rb.encode_batch(decoded) == data or batch.header.compression_type != c.NONE


@given(records)
def test_record_round_trip(record):
    data = rb.encode_record(record)
    assert tuple(rb.iter_records(data, 1)) == (record,)


@given(st.binary(max_size=300))
@settings(max_examples=400)
def test_arbitrary_bytes_raise_only_mq_errors(data):
    for call in (
        lambda: rb.peek_batch(data),
        lambda: rb.decode_batch_header(data),
        lambda: rb.decode_batch(data, check_crc=False, max_decompressed_size=1 << 20),
        lambda: list(rb.iter_records(data, data[0] if data else 0)),
        lambda: rb.decode_control_record(rb.Record(key=data[:4], value=data[4:])),
        lambda: list(LogWalker(data, mode="full", check_crc=False, max_decompressed_size=1 << 20)),
        lambda: list(LogWalker(data, mode="framing")),
    ):
        try:
            call()
        except MqError:
            pass


@given(data=st.data())
@settings(max_examples=300)
def test_mutated_batches_raise_only_mq_errors(data):
    batch = data.draw(batches(codecs=AVAILABLE_CODECS))
    blob = bytearray(rb.encode_batch(batch))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    blob = blob[: data.draw(st.integers(0, len(blob)))] if data.draw(st.booleans()) else blob
    start = time.perf_counter()
    try:
        rb.decode_batch(bytes(blob), check_crc=False, max_decompressed_size=1 << 20)
    except MqError:
        pass
    try:
        list(LogWalker(bytes(blob), mode="full", check_crc=False, max_decompressed_size=1 << 20))
    except MqError:
        pass
    assert time.perf_counter() - start < 1


# --- the .log walker --------------------------------------------------------------------------


def _segment() -> tuple[bytes, list[int]]:
    parts = [
        lg.encode_message(lg.LegacyRecord(0, b"zero", magic=0)),
        lg.encode_message(lg.LegacyRecord(1, b"one", magic=1, timestamp=TS)),
        MINIMAL,
        TWO_RECORDS,
        COMMIT,
    ]
    positions, pos = [], 0
    for p in parts:
        positions.append(pos)
        pos += len(p)
    return b"".join(parts), positions


def test_walker_mixed_magics_eof():
    seg, positions = _segment()
    walker = LogWalker(seg, mode="header")
    entries = list(walker)
    assert [e.position for e in entries] == positions
    assert [e.magic for e in entries] == [0, 1, 2, 2, 2]
    assert walker.end.kind == "eof" and walker.end.position == len(seg) == walker.valid_bytes
    assert walker.count == 5 and [e.last_offset for e in entries] == [0, 1, 0, 101, 10]
    framing = list(LogWalker(seg, mode="framing"))
    assert [(e.offset, e.size, e.magic, e.header) for e in framing] == [(e.offset, e.size, e.magic, None) for e in entries]
    full = list(LogWalker(seg, mode="full"))
    assert [len(e.records) for e in full] == [1, 1, 1, 2, 1]
    assert full[4].records[0].is_control and full[3].records[1].sequence == 12
    assert [r.value for r in iter_log_records(seg)] == [b"zero", b"one", b"hi", b"v1", None, b"\x00\x00\x00\x00\x00\x07"]
    assert peek_entry(seg, positions[3]) == (100, 73, 2)
    assert decode_entry(seg, positions[1]).header.value == b"one"


def test_walker_zero_tail_is_a_preallocated_end():
    seg = MINIMAL + TWO_RECORDS
    walker = LogWalker(seg + bytes(64 << 20))
    start = time.perf_counter()
    assert len(list(walker)) == 2
    assert time.perf_counter() - start < 2
    assert walker.end.kind == "zeros" and walker.end.position == len(seg) == walker.valid_bytes
    short = LogWalker(seg + bytes(10))
    list(short)
    assert short.end.kind == "zeros"


def test_walker_partial_last_entry():
    seg = MINIMAL + TWO_RECORDS
    for cut in (len(MINIMAL) + 40, len(MINIMAL) + 17, len(seg) - 1):
        walker = LogWalker(seg[:cut])
        assert len(list(walker)) == 1
        assert walker.end.kind == "partial" and walker.end.position == len(MINIMAL) and walker.end.length == len(TWO_RECORDS)
    walker = LogWalker(seg[: len(MINIMAL) + 9])  # 8 zero bytes then 0x64
    list(walker)
    assert (walker.end.kind, walker.end.length) == ("partial", 9)


def test_walker_raises_on_corruption_with_position():
    seg = bytearray(MINIMAL + TWO_RECORDS + MINIMAL)
    seg[len(MINIMAL) + 70] ^= 0xFF
    walker = LogWalker(bytes(seg))
    seen = []
    with pytest.raises(ChecksumError) as info:
        for e in walker:
            seen.append(e.position)
    assert seen == [0] and walker.failed_at == len(MINIMAL) == walker.valid_bytes
    assert info.value.position == len(MINIMAL) + 17
    # framing mode does not read CRCs
    assert len(list(LogWalker(bytes(seg), mode="framing"))) == 3


def test_walker_small_size_and_bad_magic():
    not_zero_tail = MINIMAL + struct.pack(">qib", 0, 0, 0) + b"\x00\x00\x00\x00\x01" + b"\x00" * 30
    walker = LogWalker(not_zero_tail)
    with pytest.raises(CorruptDataError, match=">= 14") as info:
        list(walker)
    assert info.value.position == len(MINIMAL) + 8 and walker.failed_at == len(MINIMAL)
    bad = bytearray(MINIMAL)
    bad[16] = 7
    with pytest.raises(CorruptDataError, match="magic 0, 1 or 2"):
        list(LogWalker(bytes(bad)))


def test_walker_start_and_large_offsets():
    batch = rb.build_batch([rb.Record(0, 0, None, b"x")], base_offset=2**63 - 10, base_timestamp=TS)
    data = rb.encode_batch(batch)
    seg = b"\x00" * 100 + data
    walker = LogWalker(memoryview(seg), start=100)
    (entry,) = list(walker)
    assert entry.position == 100 and entry.offset == 2**63 - 10 and walker.end == type(walker.end)("eof", 100 + len(data))


# --- kafka-python differential ----------------------------------------------------------------


def _kafka_python():
    return pytest.importorskip("kafka.record.memory_records")


def _kp_has(codec: int) -> bool:
    from kafka import codec as kc

    return {0: True, 1: kc.has_gzip(), 2: kc.has_snappy(), 3: kc.has_lz4(), 4: kc.has_zstd()}[codec]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_differential_kafka_python_builds_we_decode(codec):
    mr = _kafka_python()
    need_codec(codec)
    if not _kp_has(codec):
        pytest.skip("kafka-python lacks this codec")
    builder = mr.MemoryRecordsBuilder(
        magic=2, compression_type=codec, batch_size=1 << 20, offset=300, producer_id=77, producer_epoch=3, base_sequence=40
    )
    for i in range(30):
        builder.append(
            timestamp=TS + 3 * i,
            key=None if i % 4 == 0 else b"k%d" % i,
            value=None if i == 5 else b"value-%d-" % i * (i % 6 + 1),
            headers=[("h%d" % j, b"x" * j if j else None) for j in range(i % 3)],
        )
    builder.close()
    buf = bytes(builder.buffer())
    (batch,) = list(mr.MemoryRecords(buf))
    theirs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    entries = list(LogWalker(buf, mode="full"))
    ours = [(r.offset, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers]) for e in entries for r in e.records]
    assert ours == theirs and len(ours) == 30
    h = entries[0].header
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.compression_type) == (77, 3, 40, codec)
    # kafka-python writes base_offset 0 and offset deltas 300..329; sequence = base + delta
    assert h.crc == batch.crc and [r.sequence for r in entries[0].records] == list(range(340, 370))


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_differential_we_build_kafka_python_decodes(codec):
    mr = _kafka_python()
    need_codec(codec)
    if not _kp_has(codec):
        pytest.skip("kafka-python lacks this codec")
    records = [
        rb.Record(i, 7 * i, b"key%d" % i if i % 2 else None, b"val%d" % i, (rb.RecordHeader("trace", b"%d" % i),))
        for i in range(12)
    ]
    batch = rb.build_batch(records, base_offset=1000, base_timestamp=TS, compression_type=codec, producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True)
    data = rb.encode_batch(batch)
    (theirs,) = list(mr.MemoryRecords(data))
    assert theirs.validate_crc() and theirs.is_transactional and not theirs.is_control_batch
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs] == [
        (1000 + i, TS + 7 * i, r.key, r.value, [("trace", b"%d" % i)]) for i, r in enumerate(records)
    ]


def test_differential_control_batch_seen_by_kafka_python():
    mr = _kafka_python()
    (batch,) = list(mr.MemoryRecords(COMMIT))
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
