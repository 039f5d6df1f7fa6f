"""Jafka / Kafka 0.7 message codec and segment walker: spec vectors, recovery ends, real 0.7 segment."""

from __future__ import annotations

import gzip
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats import jafka as jf
from mqtool.formats import segment_names as segnames
from mqtool.formats.checksums import crc32
from tests.conftest import real_path

HELLO = bytes.fromhex("0000000b 01 00 3610a686 68656c6c6f".replace(" ", ""))
WORLD = bytes.fromhex("0000000b 01 00 3a771143 776f726c64".replace(" ", ""))
GZIP_WRAPPER = bytes.fromhex(
    "00 00 00 35 01 01 10 62 74 5c 1f 8b 08 00 00 00"
    "00 00 02 03 63 60 60 e0 66 64 30 13 58 d6 96 91"
    "9a 93 93 cf 00 e6 5a 95 0b 3a 97 e7 17 e5 a4 00"
    "00 a5 d2 eb 83 1e 00 00 00"
)

# --- spec vectors -------------------------------------------------------------------------


def test_crc_vectors():
    assert crc32(b"hello") == 0x3610A686
    assert crc32(b"world") == 0x3A771143
    assert crc32(b"123456789") == 0xCBF43926


def test_message_vectors():
    assert jf.encode_message(jf.Message(b"hello")) == HELLO
    assert jf.encode_message(jf.Message(b"world")) == WORLD
    decoded = jf.decode_message(HELLO)
    assert decoded == jf.Message(b"hello") and decoded.crc == 0x3610A686
    assert decoded.size == 11 and decoded.serialized_size == 15
    assert jf.peek_message(HELLO) == (11, 1)


def test_empty_payload_is_legal():
    raw = jf.encode_message(jf.Message(b""))
    assert raw == bytes.fromhex("00000006 01 00 00000000".replace(" ", ""))
    assert jf.decode_message(raw) == jf.Message(b"")


def test_segment_vector_offsets():
    segment = HELLO + WORLD
    walker = jf.MessageWalker(segment, start_offset=1000)
    positions = [p for p, _ in walker]
    assert positions == [0, 15]
    assert [walker.offset_of(p) for p in positions] == [1000, 1015]
    assert walker.end == jf.DataEnd("eof", 30)
    # iterators report the offset after each message (the next fetch offset)
    assert [o for o, _ in jf.iter_message_and_offsets(segment, 1000)] == [1015, 1030]
    assert segnames.jafka_file_name(1000 + walker.end.position) == "00000000000000001030.jafka"


def test_gzip_wrapper_vector():
    wrapper = jf.compress_messages([jf.Message(b"hello"), jf.Message(b"world")])
    assert jf.encode_message(wrapper) == GZIP_WRAPPER
    decoded = jf.decode_message(GZIP_WRAPPER)
    assert decoded.compressed and decoded.compression_codec == jf.CODEC_GZIP and decoded.crc == 0x1062745C
    assert jf.decompress_payload(decoded) == HELLO + WORLD
    assert [m.payload for _, m in jf.iter_inner_messages(decoded)] == [b"hello", b"world"]


def test_deep_offsets_of_a_wrapper():
    # every inner message but the last reports the wrapper's start, the last the position after it
    segment = HELLO + GZIP_WRAPPER + WORLD
    deep = [(o, m.payload) for o, m in jf.iter_message_and_offsets(segment, 100)]
    assert deep == [(115, b"hello"), (115, b"hello"), (100 + 15 + 57, b"world"), (100 + 15 + 57 + 15, b"world")]


def test_jdk_gzip_wrapper_decodes():
    # the JDK writes a different gzip header (no mtime, OS 0); any gzip member must decode
    inner = HELLO + WORLD
    member = gzip.compress(inner, compresslevel=1, mtime=1234)
    wrapper = jf.decode_message(jf.encode_message(jf.Message(member, 1, jf.CODEC_GZIP)))
    assert jf.decompress_payload(wrapper) == inner


# --- recovery ends (spec B4 examples) -----------------------------------------------------


def test_torn_tail_is_partial():
    walker = jf.MessageWalker(HELLO + WORLD + bytes.fromhex("0000000b010036"))
    assert len(list(walker)) == 2
    assert walker.end == jf.DataEnd("partial", 30, 15)


def test_crc_mismatch_raises_at_the_crc():
    bad = bytearray(WORLD)
    bad[-1] ^= 1
    walker = jf.MessageWalker(HELLO + bytes(bad))
    with pytest.raises(ChecksumError) as info:
        list(walker)
    assert walker.failed_at == 15
    assert info.value.position == 15 + 6
    assert walker.count == 1


def test_zero_length_is_zeros_end():
    walker = jf.MessageWalker(HELLO + WORLD + bytes(4))
    assert len(list(walker)) == 2
    assert walker.end == jf.DataEnd("zeros", 30, 4)
    two_zeros = jf.MessageWalker(HELLO + b"\x00\x00")
    assert len(list(two_zeros)) == 1 and two_zeros.end == jf.DataEnd("zeros", 15, 2)
    short = jf.MessageWalker(HELLO + b"\x00\x01")
    list(short)
    assert short.end == jf.DataEnd("partial", 15, 2)


@pytest.mark.parametrize(
    "raw,error,position",
    [
        (bytes.fromhex("00000005 01 00 000000"), CorruptDataError, 0),  # LENGTH below the magic-1 header
        (bytes.fromhex("ffffffff 01"), CorruptDataError, 0),  # negative LENGTH
        (bytes.fromhex("0000000b 02 00 3610a686 68656c6c6f"), CorruptDataError, 4),  # unknown magic
        (bytes.fromhex("7fffffff 07 00 00"), CorruptDataError, 4),  # huge LENGTH, not a message
    ],
)
def test_broken_entries_raise(raw, error, position):
    walker = jf.MessageWalker(HELLO + raw)
    with pytest.raises(error) as info:
        list(walker)
    assert info.value.position == 15 + position
    assert walker.failed_at == 15


def test_decode_truncated():
    with pytest.raises(TruncatedDataError):
        jf.decode_message(HELLO[:-1])
    with pytest.raises(TruncatedDataError):
        jf.decode_message(HELLO[:4])


def test_codecs():
    snappy = jf.decode_message(jf.encode_message(jf.Message(b"x", 1, jf.CODEC_SNAPPY)))
    with pytest.raises(UnsupportedFormatError):
        jf.decompress_payload(snappy)
    unknown = jf.Message(b"x", 1, 3)
    with pytest.raises(CorruptDataError):
        jf.decompress_payload(unknown)
    not_gzip = jf.Message(b"not gzip", 1, jf.CODEC_GZIP)
    with pytest.raises(CorruptDataError):
        list(jf.iter_inner_messages(not_gzip))
    torn_inner = jf.Message(gzip.compress(HELLO + WORLD[:-2], mtime=0), 1, jf.CODEC_GZIP)
    with pytest.raises(CorruptDataError):
        list(jf.iter_inner_messages(torn_inner))
    with pytest.raises(ValueError):
        jf.compress_messages([jf.Message(b"x")], jf.CODEC_SNAPPY)
    with pytest.raises(ValueError):
        jf.encode_message(jf.Message(b"x", 0, 1))
    with pytest.raises(ValueError):
        jf.encode_message(jf.Message(b"x", 2))


def test_nested_wrappers_are_flattened_with_a_limit():
    inner = jf.compress_messages([jf.Message(b"a")])
    outer = jf.compress_messages([inner, jf.Message(b"b")])
    data = jf.encode_message(outer)
    assert [m.payload for _, m in jf.iter_message_and_offsets(data)] == [b"a", b"b"]
    deep = jf.Message(b"z")
    for _ in range(jf.MAX_NESTING + 1):
        deep = jf.compress_messages([deep])
    with pytest.raises(CorruptDataError):
        list(jf.iter_message_and_offsets(jf.encode_message(deep)))


# --- properties ---------------------------------------------------------------------------

messages = st.one_of(
    st.builds(jf.Message, st.binary(max_size=200), st.just(1), st.integers(0, 255)),
    st.builds(jf.Message, st.binary(max_size=200), st.just(0), st.just(0)),
)


@given(st.lists(messages, max_size=8), st.integers(0, 2**40))
def test_segment_round_trip(items, start_offset):
    data = jf.encode_message_set(items)
    walker = jf.MessageWalker(data, start_offset=start_offset)
    assert [m for _, m in walker] == items
    assert walker.end == jf.DataEnd("eof", len(data))


@given(st.lists(st.builds(jf.Message, st.binary(max_size=100)), min_size=1, max_size=6))
def test_wrapper_round_trip(items):
    wrapper = jf.decode_message(jf.encode_message(jf.compress_messages(items)))
    assert [m for _, m in jf.iter_inner_messages(wrapper)] == items


@given(st.binary(max_size=400), st.integers(0, 64))
def test_arbitrary_bytes_raise_only_mq_errors(blob, start):
    walker = jf.MessageWalker(blob, min(start, len(blob)))
    try:
        for _ in walker:
            pass
        assert walker.end is not None
    except MqError:
        assert walker.failed_at is not None
    for call in (jf.decode_message, lambda b: list(jf.iter_message_and_offsets(b))):
        try:
            call(blob)
        except MqError:
            pass


@given(st.binary(max_size=300), st.integers(0, 3))
def test_arbitrary_wrapper_payloads(payload, codec):
    wrapper = jf.Message(payload, 1, codec)
    try:
        list(jf.iter_inner_messages(wrapper))
    except MqError:
        pass


@given(st.binary(max_size=200))
def test_gzip_of_arbitrary_inner_sets(inner):
    wrapper = jf.Message(gzip.compress(inner, mtime=0), 1, jf.CODEC_GZIP)
    try:
        list(jf.iter_inner_messages(wrapper))
    except MqError:
        pass




# --- the real Kafka 0.7 magic-0 segment ---------------------------------------------------


def test_real_kafka_07_magic0_segment():
    # SOURCE.md / VERIFY.txt: 10,900 bytes, 100 messages, magic 0, 100-byte payloads of 'x',
    # first message LENGTH 105 CRC 0x5E0E5D8F, no trailing bytes.
    path = real_path(
        "kafka",
        "apache-kafka",
        "642da2f28c",
        "core",
        "src",
        "test",
        "resources",
        "test-kafka-logs",
        "MagicByte0-0",
        "00000000000000000000.kafka",
    )
    data = path.read_bytes()
    assert data[:9] == bytes.fromhex("00000069005e0e5d8f")
    walker = jf.MessageWalker(data, start_offset=0)
    messages_ = [m for _, m in walker]
    assert len(messages_) == 100
    assert walker.end == jf.DataEnd("eof", 10900)
    assert all(m.magic == 0 and m.payload == b"x" * 100 and m.crc == 0x5E0E5D8F for m in messages_)
    assert messages_[0].size == struct.unpack(">i", data[:4])[0] == 105
    assert jf.encode_message_set(messages_) == data


def test_peek_length_reads_the_prefix_as_stored():
    data = jf.encode_message(jf.Message(b"abc"))
    assert jf.peek_length(data) == jf.peek_message(data)[0] == jf.Message(b"abc").size
    assert jf.peek_length(b"\x00" + b"\xff\xff\xff\xfe", 1) == -2
    with pytest.raises(TruncatedDataError):
        jf.peek_length(data[:3])


def test_every_inflation_is_bounded(monkeypatch):
    """decompress_payload / iter_inner_messages (stats, the Spark source) inflate a wrapper within
    MAX_INFLATED_SIZE, as iter_wrapper (dump, validate) does: a gzip bomb is an error, not memory."""
    monkeypatch.setattr(jf, "MAX_INFLATED_SIZE", 4096)
    bomb = jf.Message(gzip.compress(bytes(1 << 20), mtime=0), jf.MAGIC_V1, jf.CODEC_GZIP)
    with pytest.raises(CorruptDataError) as raised:
        jf.decompress_payload(bomb)
    assert raised.value.kind == "compression"
    with pytest.raises(CorruptDataError):
        list(jf.iter_inner_messages(bomb))


# --- Kafka 0.7 (the kafka07 variant): magics 0 and 1, snappy wrappers --------------------------------


def test_kafka07_segment_names():
    assert segnames.kafka07_file_name(1030) == "00000000000000001030.kafka"
    assert segnames.parse_jafka_file_name("00000000000000001030.kafka", segnames.KAFKA07_SUFFIX) == 1030
    with pytest.raises(MqError):
        segnames.parse_jafka_file_name("00000000000000001030.jafka", segnames.KAFKA07_SUFFIX)
    with pytest.raises(ValueError):
        segnames.kafka07_file_name(-1)


def test_magic_error_by_dialect():
    assert jf.magic_error(0, 4) is not None and jf.magic_error(1, 4) is None  # Jafka reads magic 1 only
    assert jf.magic_error(0, 4, magics=(0, 1), broker="Kafka 0.7") is None
    error = jf.magic_error(2, 4, magics=(0, 1), broker="Kafka 0.7")
    assert error is not None and error.position == 4 and error.expected == "magic 0 or 1" and "Kafka 0.7 reads no other magic" in error.found


@given(st.lists(st.binary(max_size=60), min_size=1, max_size=6))
def test_kafka07_snappy_wrapper_round_trip(payloads):
    pytest.importorskip("cramjam")
    from mqtool.formats.kafka import compression

    inner = [jf.Message(p, jf.MAGIC_V0 if i % 2 else jf.MAGIC_V1) for i, p in enumerate(payloads)]
    wrapper = jf.Message(compression.compress(compression.SNAPPY, jf.encode_message_set(inner), magic=1), jf.MAGIC_V1, jf.CODEC_SNAPPY)
    decoded = jf.decode_message(jf.encode_message(wrapper))
    got = list(jf.iter_wrapper(decoded, snappy=True))
    assert [m.message for m in got] == inner and all(m.crc_computed == m.message.crc for m in got)
    with pytest.raises(UnsupportedFormatError):  # Jafka has no snappy codec
        list(jf.iter_wrapper(decoded))
