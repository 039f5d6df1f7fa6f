"""Kafka message format v0/v1: spec vectors, round trips, wrapper offset rules, hostile input,
and a differential test against kafka-python's ``MemoryRecordsBuilder``/``MemoryRecords``."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError
from mqtool.formats.kafka import compression as c
from mqtool.formats.kafka import legacy as lg
from mqtool.formats.kafka.log import LogWalker


def hx(text: str) -> bytes:
    return bytes.fromhex("".join(line.split(":", 1)[-1] for line in text.strip().splitlines()).replace(" ", ""))


# Test vectors from the spec (shared/spec/kafka-log.md, "Test vectors").
V0_HI = hx("""
0000: 00 00 00 00 00 00 00 00 00 00 00 10 fd 6e bd db
0010: 00 00 ff ff ff ff 00 00 00 02 68 69
""")
V1_HI = hx("""
0000: 00 00 00 00 00 00 00 00 00 00 00 18 db a4 e6 e2
0010: 01 00 00 00 01 8b cf e5 68 00 ff ff ff ff 00 00
0020: 00 02 68 69
""")
V1_GZIP_INNER = hx("""
0000: 00 00 00 00 00 00 00 00 00 00 00 17 42 b4 af 02
0010: 01 00 00 00 01 8b cf e5 68 00 ff ff ff ff 00 00
0020: 00 01 61 00 00 00 00 00 00 00 01 00 00 00 17 db
0030: bd fe b8 01 00 00 00 01 8b cf e5 68 00 ff ff ff
0040: ff 00 00 00 01 62
""")
V1_GZIP_WRAPPER = hx("""
0000: 00 00 00 00 00 00 00 29 00 00 00 4d 4a 22 48 55
0010: 01 01 00 00 01 8b cf e5 68 00 ff ff ff ff 00 00
0020: 00 37 1f 8b 08 00 00 00 00 00 02 03 63 60 80 03
0030: 71 a7 2d eb 99 18 81 0c c6 ee f3 4f 33 18 fe 03
0040: 01 88 93 08 95 06 c9 88 df de fb 6f 07 a6 92 24
0050: 00 84 ca 97 ee 46 00 00 00
""")
TS = 1700000000000


def need_codec(codec: int) -> None:
    if not c.is_available(codec):
        pytest.skip(f"{c.CODEC_NAMES[codec]} library not installed")


def codec_params(codecs):
    return [pytest.param(x, marks=pytest.mark.skipif(not c.is_available(x), reason="codec library not installed")) for x in codecs]


LEGACY_CODECS_HERE = [x for x in (c.GZIP, c.SNAPPY, c.LZ4) if c.is_available(x)]


# --- spec vectors -----------------------------------------------------------------------------


def test_v0_vector():
    record = lg.decode_message(V0_HI)
    assert record == lg.LegacyRecord(offset=0, value=b"hi", key=None, magic=0)
    assert record.crc == 0xFD6EBDDB and record.timestamp == -1 and record.timestamp_type_name == "NoTimestampType"
    assert record.size == 28 == len(V0_HI)
    assert lg.encode_message(record) == V0_HI


def test_v1_vector():
    record = lg.decode_message(V1_HI)
    assert record == lg.LegacyRecord(offset=0, value=b"hi", magic=1, timestamp=TS)
    assert record.crc == 0xDBA4E6E2 and record.timestamp_type_name == "CreateTime"
    assert lg.encode_message(record) == V1_HI


def test_v1_gzip_wrapper_vector():
    wrapper = lg.decode_message(V1_GZIP_WRAPPER)
    assert (wrapper.offset, wrapper.crc, wrapper.compression_type, wrapper.key) == (41, 0x4A224855, c.GZIP, None)
    assert c.decompress(c.GZIP, wrapper.value) == V1_GZIP_INNER
    inner = lg.decode_inner_messages(wrapper)
    assert [(m.offset, m.value, m.timestamp) for m in inner] == [(40, b"a", TS), (41, b"b", TS)]
    assert lg.encode_message(wrapper) == V1_GZIP_WRAPPER
    # the inner set holds relative offsets 0, 1
    assert [r.offset for _, r in lg.iter_message_set(V1_GZIP_INNER)] == [0, 1]


def test_encode_wrapper_rebuilds_the_vector():
    records = [lg.LegacyRecord(40, b"a", magic=1, timestamp=TS), lg.LegacyRecord(41, b"b", magic=1, timestamp=TS)]
    wrapper = lg.encode_wrapper(records, codec=c.GZIP)
    assert wrapper.offset == 41 and wrapper.timestamp == TS
    assert c.decompress(c.GZIP, wrapper.value) == V1_GZIP_INNER
    assert lg.decode_inner_messages(lg.decode_message(lg.encode_message(wrapper))) == tuple(records)


def test_layout_constants():
    assert (lg.LOG_OVERHEAD, lg.MAGIC_POSITION, lg.RECORD_OVERHEAD_V0, lg.RECORD_OVERHEAD_V1) == (12, 16, 14, 22)


# --- wrapper offset rules ---------------------------------------------------------------------


def _wrapper(inner_bytes: bytes, offset: int, magic: int = 1, attributes: int = c.GZIP, timestamp: int = TS) -> lg.LegacyRecord:
    value = c.compress(attributes & 7, inner_bytes, magic=magic)
    return lg.LegacyRecord(offset, value, magic=magic, attributes=attributes, timestamp=timestamp if magic else -1)


def test_v0_inner_offsets_are_absolute():
    inner = lg.encode_message_set([lg.LegacyRecord(o, str(o).encode(), magic=0) for o in (250, 251, 253)])
    msgs = lg.decode_inner_messages(_wrapper(inner, 253, magic=0))
    assert [m.offset for m in msgs] == [250, 251, 253]


def test_v1_relative_offsets_with_gaps():
    inner = lg.encode_message_set([lg.LegacyRecord(o, b"v", magic=1, timestamp=TS) for o in (0, 2, 5)])
    msgs = lg.decode_inner_messages(_wrapper(inner, 105))
    assert [m.offset for m in msgs] == [100, 102, 105]


def test_v1_wrapper_offset_zero_means_base_zero():
    inner = lg.encode_message_set([lg.LegacyRecord(o, b"v", magic=1, timestamp=TS) for o in (0, 1, 2)])
    assert [m.offset for m in lg.decode_inner_messages(_wrapper(inner, 0))] == [0, 1, 2]


def test_v1_wrapper_offset_below_last_inner_is_invalid():
    inner = lg.encode_message_set([lg.LegacyRecord(o, b"v", magic=1, timestamp=TS) for o in (0, 1, 2)])
    with pytest.raises(CorruptDataError, match="wrapper offset"):
        lg.decode_inner_messages(_wrapper(inner, 1))


def test_v1_log_append_time_wrapper_overrides_inner_timestamps():
    records = [lg.LegacyRecord(7, b"a", magic=1, timestamp=5), lg.LegacyRecord(8, b"b", magic=1, timestamp=6)]
    wrapper = lg.encode_wrapper(records, codec=c.GZIP, timestamp_type=lg.LOG_APPEND_TIME, log_append_time=99)
    assert wrapper.timestamp_type == lg.LOG_APPEND_TIME and wrapper.timestamp == 99
    inner = lg.decode_inner_messages(wrapper)
    assert [(m.offset, m.timestamp, m.timestamp_type_name) for m in inner] == [(7, 99, "LogAppendTime"), (8, 99, "LogAppendTime")]
    create = lg.encode_wrapper(records, codec=c.GZIP)
    assert create.timestamp == 6 and [m.timestamp for m in lg.decode_inner_messages(create)] == [5, 6]


def test_invalid_wrappers():
    one = lg.encode_message_set([lg.LegacyRecord(0, b"v", magic=1, timestamp=TS)])
    with pytest.raises(CorruptDataError, match="zstd"):
        lg.decode_inner_messages(lg.LegacyRecord(0, b"x", magic=1, attributes=c.ZSTD, timestamp=TS))
    with pytest.raises(CorruptDataError, match="null"):
        lg.decode_inner_messages(lg.LegacyRecord(0, None, magic=1, attributes=c.GZIP, timestamp=TS))
    with pytest.raises(CorruptDataError, match="at least one inner message"):
        lg.decode_inner_messages(_wrapper(b"", 0))
    nested = lg.encode_message(_wrapper(one, 0))
    with pytest.raises(CorruptDataError, match="uncompressed inner"):
        lg.decode_inner_messages(_wrapper(nested, 0))
    v0_inside_v1 = lg.encode_message_set([lg.LegacyRecord(0, b"v", magic=0)])
    with pytest.raises(CorruptDataError, match="inner magic"):
        lg.decode_inner_messages(_wrapper(v0_inside_v1, 0))
    with pytest.raises(TruncatedDataError):
        lg.decode_inner_messages(_wrapper(one[:-1], 0))
    with pytest.raises(ValueError):
        lg.decode_inner_messages(lg.LegacyRecord(0, b"x"))


# --- errors -----------------------------------------------------------------------------------


def test_crc_mismatch_names_both_values():
    broken = bytearray(V1_HI)
    broken[-1] ^= 0x01
    with pytest.raises(ChecksumError) as info:
        lg.decode_message(bytes(broken))
    assert info.value.position == 12 and info.value.found == "0xDBA4E6E2"
    assert lg.decode_message(bytes(broken), check_crc=False).value == b"hh"


def test_size_below_overhead_and_bad_magic():
    small = struct.pack(">qi", 0, 13) + b"\x00" * 13
    with pytest.raises(CorruptDataError, match=">= 14"):
        lg.decode_message(small)
    v1_small = bytearray(V0_HI)
    v1_small[16] = 1  # magic 1 with a 16-byte message (< 22)
    with pytest.raises(CorruptDataError, match=">= 22"):
        lg.decode_message(bytes(v1_small))
    bad_magic = bytearray(V0_HI)
    bad_magic[16] = 2
    with pytest.raises(CorruptDataError, match="magic 0 or 1") as info:
        lg.decode_message(bytes(bad_magic))
    assert info.value.position == 16


def test_truncated_entry_and_lengths_overflowing_the_message():
    with pytest.raises(TruncatedDataError):
        lg.decode_message(V1_HI[:-1])
    with pytest.raises(TruncatedDataError):
        lg.decode_message(V1_HI[:10])
    body = bytearray(V0_HI)
    body[18:22] = struct.pack(">i", 100)  # key length beyond the message
    with pytest.raises(TruncatedDataError, match="key"):
        lg.decode_message(bytes(body), check_crc=False)
    padded = bytearray(V0_HI + b"\x00")
    padded[8:12] = struct.pack(">i", 17)  # one unexplained byte after the value
    with pytest.raises(CorruptDataError, match="message size"):
        lg.decode_message(bytes(padded), check_crc=False)


def test_errors_are_positioned_in_the_buffer():
    buf = b"\x00" * 5 + V0_HI[:-1]
    with pytest.raises(TruncatedDataError) as info:
        lg.decode_message(buf, 5)
    assert info.value.position == 5


def test_encode_rejects_invalid_records():
    with pytest.raises(ValueError):
        lg.encode_message(lg.LegacyRecord(0, b"x", magic=0, timestamp=5))
    with pytest.raises(ValueError):
        lg.encode_message(lg.LegacyRecord(0, b"x", magic=2))
    with pytest.raises(ValueError):
        lg.encode_wrapper([], codec=c.GZIP)
    with pytest.raises(ValueError):
        lg.encode_wrapper([lg.LegacyRecord(0, b"x", magic=1, timestamp=1)], codec=c.ZSTD)


# --- property tests ---------------------------------------------------------------------------

blobs = st.none() | st.binary(max_size=64)


@st.composite
def legacy_records(draw, magic=None):
    magic = draw(st.sampled_from([0, 1])) if magic is None else magic
    return lg.LegacyRecord(
        offset=draw(st.integers(-(2**63), 2**63 - 1)),
        value=draw(blobs),
        key=draw(blobs),
        magic=magic,
        attributes=draw(st.integers(-128, 127)),
        timestamp=draw(st.integers(-(2**63), 2**63 - 1)) if magic == 1 else -1,
    )


@given(legacy_records())
def test_decode_encode_round_trip(record):
    data = lg.encode_message(record)
    decoded = lg.decode_message(data)
    assert decoded == record
    assert decoded.size == len(data)
    assert lg.encode_message(decoded) == data


@pytest.mark.parametrize("codec", codec_params([c.GZIP, c.SNAPPY, c.LZ4]))
@pytest.mark.parametrize("magic", [0, 1])
@given(data=st.data())
@settings(max_examples=25)
def test_wrapper_round_trip(codec, magic, data):
    first = data.draw(st.integers(0, 2**40))
    gaps = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=8))
    offsets = [first]
    for g in gaps[1:]:
        offsets.append(offsets[-1] + g)
    records = [
        lg.LegacyRecord(o, data.draw(blobs), data.draw(blobs), magic=magic, timestamp=data.draw(st.integers(0, 2**41)) if magic else -1)
        for o in offsets
    ]
    wrapper = lg.encode_wrapper(records, codec=codec)
    decoded = lg.decode_message(lg.encode_message(wrapper))
    assert decoded == wrapper
    assert lg.decode_inner_messages(decoded) == tuple(records)
    assert lg.deep_messages(records[0]) == (records[0],)


@given(st.binary(max_size=200))
@settings(max_examples=300)
def test_arbitrary_bytes_raise_only_mq_errors(data):
    for check in (True, False):
        try:
            record = lg.decode_message(data, check_crc=check)
        except MqError:
            continue
        try:
            lg.deep_messages(record, check_crc=check, max_size=1 << 20)
        except MqError:
            pass
    try:
        list(lg.iter_message_set(data, check_crc=False))
    except MqError:
        pass


@given(data=st.data())
@settings(max_examples=200)
def test_mutated_wrappers_raise_only_mq_errors(data):
    codec = data.draw(st.sampled_from(LEGACY_CODECS_HERE))
    magic = data.draw(st.sampled_from([0, 1]))
    records = [lg.LegacyRecord(i, b"value-%d" % i, magic=magic, timestamp=TS if magic else -1) for i in range(3)]
    blob = bytearray(lg.encode_message(lg.encode_wrapper(records, codec=codec)))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    try:
        record = lg.decode_message(bytes(blob), check_crc=False)
        lg.deep_messages(record, max_size=1 << 20)
    except MqError:
        pass


# --- kafka-python differential ----------------------------------------------------------------

def _kafka_python():
    return pytest.importorskip("kafka.record.memory_records")


def _kp_codec_available(codec: int) -> bool:
    from kafka import codec as kc

    return {c.NONE: True, c.GZIP: kc.has_gzip(), c.SNAPPY: kc.has_snappy(), c.LZ4: kc.has_lz4()}[codec]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [c.NONE, c.GZIP, c.SNAPPY, c.LZ4])
def test_differential_kafka_python_builds_we_decode(magic, codec):
    mr = _kafka_python()
    need_codec(codec)
    if not _kp_codec_available(codec):
        pytest.skip("kafka-python lacks this codec")
    if codec == c.LZ4 and magic == 0:
        pytest.importorskip("xxhash")
    builder = mr.MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 20, offset=0)
    expected = []
    for i in range(25):
        key = None if i % 3 == 0 else b"key-%d" % i
        value = None if i % 7 == 6 else (b"value %d " % i) * (i % 5 + 1)
        ts = TS + i if magic else None
        builder.append(timestamp=ts, key=key, value=value)
        expected.append((i, ts if magic else -1, key, value))
    builder.close()
    buf = bytes(builder.buffer())
    walker = LogWalker(buf, mode="full")
    ours = [(r.offset, r.timestamp, r.key, r.value) for e in walker for r in e.records]
    assert walker.end.kind == "eof"
    theirs = [(r.offset, r.timestamp if magic else -1, r.key, r.value) for batch in mr.MemoryRecords(buf) for r in batch]
    assert ours == theirs == expected


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [c.NONE, c.GZIP, c.SNAPPY, c.LZ4])
def test_differential_we_build_kafka_python_decodes(magic, codec):
    mr = _kafka_python()
    need_codec(codec)
    if not _kp_codec_available(codec):
        pytest.skip("kafka-python lacks this codec")
    if codec == c.LZ4 and magic == 0:
        pytest.importorskip("xxhash")
    records = [
        lg.LegacyRecord(100 + i, b"v%d" % i if i != 3 else None, b"k%d" % i if i % 2 else None, magic=magic, timestamp=TS + i if magic else -1)
        for i in range(10)
    ]
    if codec == c.NONE:
        buf = lg.encode_message_set(records)
    else:
        buf = lg.encode_message(lg.encode_wrapper(records, codec=codec))
    theirs = []
    for batch in mr.MemoryRecords(buf):
        assert batch.validate_crc()
        for r in batch:
            theirs.append((r.offset, r.timestamp if magic else -1, r.key, r.value))
    assert theirs == [(r.offset, r.timestamp, r.key, r.value) for r in records]


def test_differential_uncompressed_bytes_identical_to_kafka_python():
    mr = _kafka_python()
    for magic in (0, 1):
        builder = mr.MemoryRecordsBuilder(magic=magic, compression_type=0, batch_size=1 << 16, offset=0)
        builder.append(timestamp=TS if magic else None, key=None, value=b"hi")
        builder.close()
        assert bytes(builder.buffer()) == (V0_HI if magic == 0 else V1_HI)
