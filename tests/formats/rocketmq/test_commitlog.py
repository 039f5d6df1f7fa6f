"""CommitLog record codec: spec vectors, real captures, round trips, hostile bytes."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError
from mqtool.formats.checksums import masked_crc32
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq.hashing import index_key_hash, java_string_hash, tags_code
from mqtool.formats.rocketmq.properties import decode_properties, encode_properties
from tests.conftest import real_path
from tests.strategies import message_records

# --- spec §13 vectors ---------------------------------------------------------------------


def test_java_hash_vectors():
    assert java_string_hash("TopicTest#KEY1") == -1656969516
    assert index_key_hash("TopicTest#KEY1") == 1656969516
    assert index_key_hash("TopicTest#KEY1") % 5_000_000 == 1969516
    assert java_string_hash("TopicTest#ORDER_1001") == 1605611091
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert index_key_hash("polygenelubricants") == 0
    assert java_string_hash("0") == 48
    assert tags_code("TAG1") == 2567159
    assert tags_code("TagA") == 2598919
    assert tags_code("") == 0 and tags_code(None) == 0


def test_java_hash_counts_utf16_code_units():
    # U+1F600 is a surrogate pair in Java: two code units 0xD83D 0xDE00.
    assert java_string_hash("\U0001F600") == ((0xD83D * 31 + 0xDE00) & 0xFFFFFFFF)


def test_body_crc_vectors():
    assert masked_crc32(b"hello") == 907060870
    assert masked_crc32(b"123456789") == 0x4BF43926
    assert masked_crc32(b"Once, there was a chance for me!") == 151131488
    assert masked_crc32(b"") == 0


def test_crc_property_vector():
    assert cl.crc_property_digits(907060870) == "0780607090"
    assert cl.parse_crc_property_digits("0780607090") == 907060870


@pytest.mark.parametrize(
    "kwargs,size",
    [
        (dict(topic="TopicTest", body=b"hello"), 105),
        (
            dict(
                topic="TopicTest",
                body=b"hello",
                sys_flag=cl.SYSFLAG_BORNHOST_V6 | cl.SYSFLAG_STOREHOST_V6,
                born_host=cl.HostAddress("::1", 1),
                store_host=cl.HostAddress("fe80::1", 2),
            ),
            129,
        ),
        (dict(topic="TopicTest", body=b"hello", magic_code=cl.MAGIC_V2), 106),
        (dict(topic="a"), 92),
    ],
)
def test_size_vectors(kwargs, size):
    data = cl.encode_message(cl.MessageRecord(**kwargs))
    assert len(data) == size
    assert struct.unpack_from(">i", data)[0] == size


def test_properties_vector_and_fixture_size():
    props = {"KEYS": "KEY1", "TAGS": "TagA", "UNIQ_KEY": "7F0000014E6C18B4AAC2157A4E9D0000", "WAIT": "true"}
    assert len(encode_properties(props)) == 72
    fixture_props = b"0\x01imagoodperson0\x02KEYS\x011632821159368\x02TAGS\x01TAG1\x02"
    assert len(fixture_props) == 46
    assert cl.message_size(32, 3, 46) == 172


def test_properties_drop_what_java_drops():
    decoded = decode_properties(b"A\x01\x02B\x01x\x02\x01v\x02junk\x02")
    assert decoded.properties == {"B": "x"}
    assert set(decoded.dropped) == {"A\x01", "\x01v", "junk"}


def test_offset_msg_id_vector():
    msg_id = cl.encode_offset_msg_id(cl.HostAddress("192.168.71.1", 8123), 172)
    assert msg_id == "C0A8470100001FBB00000000000000AC"
    assert cl.decode_offset_msg_id(msg_id) == (cl.HostAddress("192.168.71.1", 8123), 172)
    v6 = cl.encode_offset_msg_id(cl.HostAddress("2001:db8::7", 10911), 2**40)
    assert len(v6) == 56 and cl.decode_offset_msg_id(v6) == (cl.HostAddress("2001:db8::7", 10911), 2**40)


@pytest.mark.parametrize("bad", ["", "XYZ", "C0A84701", "Z" * 32])
def test_offset_msg_id_rejects(bad):
    with pytest.raises(CorruptDataError):
        cl.decode_offset_msg_id(bad)


def test_uniq_key_vector():
    info = cl.decode_uniq_key("7F0000014E6C18B4AAC2157A4E9D0000")
    assert info == cl.UniqKeyInfo("127.0.0.1", 20076, 414493378, 360337053, 0)
    assert cl.encode_uniq_key(info) == "7F0000014E6C18B4AAC2157A4E9D0000"


def test_whole_record_crc_property():
    data = cl.encode_message(cl.MessageRecord(topic="TopicTest", body=b"hello", properties={"KEYS": "k"}), append_crc_property=True)
    record = cl.decode_message(data)
    assert "__CRC32#" in record.properties
    stored, computed = cl.check_crc_property(data)
    assert stored == computed
    flipped = bytearray(data)
    flipped[20] ^= 1  # queue offset byte: covered by the record CRC, not by the body CRC
    stored, computed = cl.check_crc_property(bytes(flipped))
    assert stored != computed
    assert cl.check_crc_property(cl.encode_message(cl.MessageRecord(topic="t"))) is None


# --- real captures --------------------------------------------------------------------------


def test_pr3535_commitlog_walk():
    path = real_path("rocketmq", "apache-rocketmq", "pr3535-4e25b979", "store", "commitlog", "00000000000000000000")
    buf = path.read_bytes()
    walker = cl.RecordWalker(buf)
    records = list(walker)
    assert len(records) == 47
    assert walker.end == cl.DataEnd("blank", 8084, 108)
    pos0, rec0 = records[0]
    assert pos0 == 0 and rec0.total_size == 172 and rec0.magic_code == cl.MAGIC_V1
    assert rec0.body_crc == 151131488 and rec0.queue_offset == 0 and rec0.physical_offset == 0
    assert rec0.born_timestamp == 1632821159368 and str(rec0.born_host) == "127.0.0.1:0"
    assert rec0.store_timestamp == 1632821159372 and str(rec0.store_host) == "192.168.71.1:8123"
    assert rec0.body == b"Once, there was a chance for me!"
    assert rec0.properties == {"0": "imagoodperson0", "KEYS": "1632821159368", "TAGS": "TAG1"}
    assert records[1][1].msg_id == "C0A8470100001FBB00000000000000AC"
    for pos, rec in records:
        assert rec.physical_offset == pos
        assert cl.encode_message(rec) == buf[pos : pos + rec.total_size]  # byte-exact re-encoding


def test_ericpan_commitlog_files():
    base = real_path("rocketmq", "EricPanGopher-rocketmq", "store", "unit_test_store", "commitlog")
    counts = []
    for name in ["00000000000000000000", "00000000000000008192", "00000000000000016384", "00000000000000024576"]:
        walker = cl.RecordWalker((base / name).read_bytes())
        counts.append(sum(1 for _ in walker))
        last_end = walker.end
    assert counts == [47, 47, 47, 38]
    assert last_end == cl.DataEnd("zeros", 6536)


# --- properties of the codec ----------------------------------------------------------------


@given(message_records())
def test_round_trip(record):
    data = cl.encode_message(record)
    decoded = cl.decode_message(data)
    assert decoded == record
    assert decoded.total_size == len(data)
    assert cl.encode_message(decoded) == data


@given(message_records(), st.integers(0, 8))
def test_peeks_read_what_the_decoder_reads(record, at):
    """The single-field peeks (for records not decoded) agree with ``decode_message``."""
    data = bytes(at) + cl.encode_message(record)
    decoded = cl.decode_message(data, at)
    assert cl.peek_record(data, at) == (decoded.total_size, record.magic_code)
    assert cl.peek_physical_offset(data, at) == record.physical_offset
    assert cl.peek_sys_flag(data, at) == record.sys_flag
    assert cl.peek_store_timestamp(data, at) == record.store_timestamp
    body_at = at + cl.body_position(record.sys_flag)
    assert cl.peek_body_length(data, at + cl.body_length_position(record.sys_flag)) == len(record.body)
    topic_at = body_at + len(record.body)
    assert cl.peek_topic_length(data, topic_at, record.magic_code) == len(record.topic.encode())
    props_at = topic_at + cl.topic_length_size(record.magic_code) + len(record.topic.encode())
    assert cl.peek_properties_length(data, props_at) == decoded.total_size - (props_at - at) - 2


def test_peeks_on_short_data_raise_truncated():
    record = cl.encode_message(cl.MessageRecord(topic="T", body=b"x", sys_flag=cl.SYSFLAG_BORNHOST_V6, born_host=cl.HostAddress("::1", 1)))
    for peek, need in (
        (cl.peek_physical_offset, cl.PHYSICAL_OFFSET_POSITION + 8),
        (cl.peek_sys_flag, cl.SYSFLAG_POSITION + 4),
        (cl.peek_store_timestamp, cl.store_timestamp_position(cl.SYSFLAG_BORNHOST_V6) + 8),
    ):
        assert isinstance(peek(record[:need]), int)
        with pytest.raises(TruncatedDataError):
            peek(record[: need - 1])
    with pytest.raises(TruncatedDataError):
        cl.peek_topic_length(b"\x00", 0, cl.MAGIC_V2)
    assert cl.peek_topic_length(b"\xff", 0, cl.MAGIC_V1) == -1


@given(message_records(), st.data())
def test_any_truncation_is_an_error_or_partial(record, data):
    encoded = cl.encode_message(record)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(TruncatedDataError):
        cl.decode_message(encoded[:cut])
    walker = cl.RecordWalker(encoded[:cut])
    assert list(walker) == []
    assert walker.end.kind in ("partial", "zeros", "eof")


@given(message_records(), st.data())
def test_body_bit_flip_is_a_checksum_error(record, data):
    if not record.body:
        return
    encoded = bytearray(cl.encode_message(record))
    body_start = cl.body_position(record.sys_flag)
    i = data.draw(st.integers(body_start, body_start + len(record.body) - 1))
    encoded[i] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(ChecksumError) as info:
        cl.decode_message(bytes(encoded))
    assert info.value.position == 8


@given(st.binary(max_size=600), st.integers(0, 64))
def test_arbitrary_bytes_raise_only_mq_errors(blob, start):
    try:
        walker = cl.RecordWalker(blob, min(start, len(blob)))
        for _ in walker:
            pass
    except MqError:
        pass
    try:
        cl.decode_message(blob)
    except MqError:
        pass


@given(st.binary(min_size=8, max_size=400))
def test_valid_magic_with_arbitrary_tail(blob):
    data = struct.pack(">iI", len(blob) + 8, cl.MAGIC_V1) + blob
    try:
        cl.decode_message(data)
    except MqError:
        pass


def test_blank_record():
    assert cl.decode_blank(cl.encode_blank(108) + bytes(100)) == cl.BlankRecord(108)
    with pytest.raises(ValueError):
        cl.encode_blank(4)


def test_walker_reports_failed_position():
    good = cl.encode_message(cl.MessageRecord(topic="t", body=b"x"))
    bad_body = bytearray(cl.encode_message(cl.MessageRecord(topic="t", body=b"y", physical_offset=len(good))))
    bad_body[cl.body_position(0)] ^= 1
    walker = cl.RecordWalker(good + bytes(bad_body))
    with pytest.raises(ChecksumError) as info:
        list(walker)
    assert walker.failed_at == len(good)
    assert info.value.position == len(good) + 8


def test_inner_batch_round_trip():
    msgs = [cl.InnerMessage(b"a", {"UNIQ_KEY": "X"}, 1), cl.InnerMessage(b"bb", {}, 0)]
    body = b"".join(cl.encode_inner_message(m) for m in msgs)
    assert [m for _, m in cl.iter_inner_messages(body)] == msgs
    with pytest.raises(MqError):
        list(cl.iter_inner_messages(body[:-1]))


def test_decompress_zlib_body():
    import zlib

    record = dataclasses.replace(cl.MessageRecord(topic="t", body=zlib.compress(b"payload" * 10)), sys_flag=cl.SYSFLAG_COMPRESSED)
    assert cl.decompress_body(record) == b"payload" * 10
    broken = dataclasses.replace(record, body=b"not zlib")
    with pytest.raises(CorruptDataError):
        cl.decompress_body(broken)
