"""``__consumer_offsets``, ``__transaction_state`` and ``__cluster_metadata`` keys/values."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats.kafka import internal_topics as it
from mqtool.formats.kafka._schema import Reader, Writer, uuid_from_str, uuid_to_str


def s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def b32(raw: bytes) -> bytes:
    return struct.pack(">i", len(raw)) + raw


# --- hand-built vectors (written from the JSON schemas with struct, not with our encoder) -----


def test_offset_commit_key_v1_bytes():
    raw = struct.pack(">h", 1) + s16("group-a") + s16("orders") + struct.pack(">i", 7)
    key = it.decode_consumer_offsets_key(raw)
    assert key == it.OffsetCommitKey(1, "group-a", "orders", 7)
    assert it.encode_consumer_offsets_key(key) == raw


def test_group_metadata_key_bytes():
    raw = struct.pack(">h", 2) + s16("console-consumer-1")
    assert it.decode_consumer_offsets_key(raw) == it.GroupMetadataKey("console-consumer-1")
    assert it.encode_consumer_offsets_key(it.GroupMetadataKey("console-consumer-1")) == raw


@pytest.mark.parametrize(
    "version,raw,expected",
    [
        (0, struct.pack(">hq", 0, 42) + s16("meta") + struct.pack(">q", 1000), it.OffsetCommitValue(0, 42, "meta", 1000)),
        (1, struct.pack(">hq", 1, 42) + s16("") + struct.pack(">qq", 1000, 2000), it.OffsetCommitValue(1, 42, "", 1000, -1, 2000)),
        (2, struct.pack(">hq", 2, 42) + s16("m") + struct.pack(">q", 1000), it.OffsetCommitValue(2, 42, "m", 1000)),
        (3, struct.pack(">hqi", 3, 9, 5) + s16("") + struct.pack(">q", 1685814551579), it.OffsetCommitValue(3, 9, "", 1685814551579, 5)),
        (4, struct.pack(">hqi", 4, 9, 5) + b"\x02m" + struct.pack(">q", 77) + b"\x01\x03\x02hi", it.OffsetCommitValue(4, 9, "m", 77, 5, -1, ((3, b"hi"),))),
    ],
)
def test_offset_commit_value_versions(version, raw, expected):
    assert it.decode_offset_commit_value(raw) == expected
    assert it.encode_offset_commit_value(expected) == raw


def test_group_metadata_value_v3_bytes():
    member = (
        s16("member-1") + struct.pack(">h", -1) + s16("client") + s16("/10.0.0.1") + struct.pack(">ii", 300000, 10000)
        + b32(b"\x00\x01sub") + b32(b"\x00\x01asg")
    )
    raw = struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 1) + s16("range") + s16("member-1") + struct.pack(">q", 1685794400556) + struct.pack(">i", 1) + member
    value = it.decode_group_metadata_value(raw)
    assert value == it.GroupMetadataValue(
        3, "consumer", 1, "range", "member-1",
        (it.MemberMetadata("member-1", "client", "/10.0.0.1", 10000, b"\x00\x01sub", b"\x00\x01asg", None, 300000),),
        1685794400556,
    )
    assert it.encode_group_metadata_value(value) == raw


def test_empty_group_with_null_protocol_and_leader():
    raw = struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 2) + struct.pack(">hh", -1, -1) + struct.pack(">qi", 5, 0)
    assert it.decode_group_metadata_value(raw) == it.GroupMetadataValue(3, "consumer", 2, None, None, (), 5)


def test_tombstones_and_dispatch():
    key = struct.pack(">h", 1) + s16("g") + s16("t") + struct.pack(">i", 0)
    assert it.decode_consumer_offsets_record(key, None) == (it.OffsetCommitKey(1, "g", "t", 0), None)
    other = it.decode_consumer_offsets_key(struct.pack(">h", 3) + b"\x02g\x00")
    assert isinstance(other, it.CoordinatorRecordKey) and other.name == "ConsumerGroupMetadataKey"
    assert it.decode_consumer_offsets_value(other, b"\x00\x00raw") == b"\x00\x00raw"


def test_consumer_offsets_errors():
    with pytest.raises(CorruptDataError, match="version >= 0"):
        it.decode_consumer_offsets_key(struct.pack(">h", -1))
    with pytest.raises(CorruptDataError, match="null"):
        it.decode_consumer_offsets_key(None)
    with pytest.raises(TruncatedDataError):
        it.decode_consumer_offsets_key(b"\x00")
    with pytest.raises(TruncatedDataError):
        it.decode_consumer_offsets_key(struct.pack(">h", 1) + s16("group")[:-1])
    with pytest.raises(CorruptDataError, match="the end of OffsetCommitKey"):
        it.decode_consumer_offsets_key(struct.pack(">h", 1) + s16("g") + s16("t") + struct.pack(">i", 0) + b"!")
    with pytest.raises(UnsupportedFormatError):
        it.decode_offset_commit_value(struct.pack(">hq", 5, 0))
    with pytest.raises(UnsupportedFormatError):
        it.decode_group_metadata_value(struct.pack(">h", 9))
    with pytest.raises(CorruptDataError, match="members"):
        it.decode_group_metadata_value(struct.pack(">h", 0) + s16("consumer") + struct.pack(">i", 1) + struct.pack(">hh", -1, -1) + struct.pack(">i", 2**31 - 1))
    with pytest.raises(CorruptDataError, match="UTF-8"):
        it.decode_consumer_offsets_key(struct.pack(">hh", 2, 1) + b"\xff")


# --- transaction state ------------------------------------------------------------------------


def test_transaction_log_v0_bytes():
    key_raw = struct.pack(">h", 0) + s16("txn-1")
    assert it.decode_transaction_log_key(key_raw) == it.TransactionLogKey("txn-1")
    assert it.encode_transaction_log_key(it.TransactionLogKey("txn-1")) == key_raw
    value_raw = (
        struct.pack(">hqhib", 0, 1000, 5, 60000, 1)
        + struct.pack(">i", 1) + s16("orders") + struct.pack(">iii", 2, 0, 3)
        + struct.pack(">qq", 1700000000500, 1700000000000)
    )
    value = it.decode_transaction_log_value(value_raw)
    assert value == it.TransactionLogValue(0, 1000, 5, 60000, 1, (it.TopicPartitions("orders", (0, 3)),), 1700000000500, 1700000000000)
    assert value.state == "Ongoing"
    assert it.encode_transaction_log_value(value) == value_raw


def test_transaction_log_v1_tagged_fields():
    value = it.TransactionLogValue(
        1, 2000, 1, 30000, 4, None, 10, 9, previous_producer_id=1999, next_producer_id=2001, client_transaction_version=2,
        tagged_fields=((9, b"\x01"),),
    )
    raw = it.encode_transaction_log_value(value)
    assert it.decode_transaction_log_value(raw) == value and value.state == "CompleteCommit"
    # null partitions in a flexible version are a single 0 byte
    assert raw[2 + 8 + 2 + 4 + 1] == 0
    with pytest.raises(UnsupportedFormatError):
        it.decode_transaction_log_key(struct.pack(">h", 1) + s16("x"))
    assert it.TransactionLogValue(0, 1, 1, 1, 42, None, 0, 0).state == "Unknown(42)"


# --- cluster metadata -------------------------------------------------------------------------


def test_metadata_frame_and_names():
    topic = it.TopicRecord("orders", "X5HJ16TOTVq6t4OyiVmQOw")
    payload = it.encode_metadata_payload(topic)
    framed = it.encode_metadata_record(it.MetadataRecord(2, 0, payload))
    assert framed[:3] == b"\x01\x02\x00"
    record = it.decode_metadata_record(framed)
    assert record.name == "TopicRecord" and it.decode_metadata_payload(record) == topic
    feature = it.MetadataRecord(12, 0, it.encode_metadata_payload(it.FeatureLevelRecord("metadata.version", 14)))
    assert it.decode_metadata_payload(it.decode_metadata_record(it.encode_metadata_record(feature))) == it.FeatureLevelRecord("metadata.version", 14)
    assert it.METADATA_RECORD_TYPES[0] == "RegisterBrokerRecord" and it.METADATA_RECORD_TYPES[3] == "PartitionRecord"
    assert it.METADATA_RECORD_API_KEYS["NoOpRecord"] == 20
    assert it.decode_metadata_record(b"\x01\x63\x00").name == "UnknownRecord(99)"
    assert it.decode_metadata_payload(it.MetadataRecord(20, 0, b"\x00")) == b"\x00"


def test_metadata_frame_errors():
    with pytest.raises(CorruptDataError, match="frame version 1"):
        it.decode_metadata_record(b"\x00\x02\x00")
    with pytest.raises(TruncatedDataError):
        it.decode_metadata_record(b"\x01\x80")
    with pytest.raises(CorruptDataError, match="<= 32767"):
        it.decode_metadata_record(b"\x01\x80\x80\x04\x00")
    with pytest.raises(CorruptDataError, match="the end of TopicRecord"):
        it.decode_metadata_payload(it.MetadataRecord(2, 0, it.encode_metadata_payload(it.TopicRecord("t", "AAAAAAAAAAAAAAAAAAAAAQ")) + b"x"))


def test_uuid_text_form():
    raw = bytes(15) + b"\x01"
    assert uuid_to_str(raw) == "AAAAAAAAAAAAAAAAAAAAAQ" and uuid_from_str("AAAAAAAAAAAAAAAAAAAAAQ") == raw


def test_schema_reader_checks_counts_and_tag_order():
    w = Writer()
    w.uvarint(2)  # two tagged fields: tag 5 (empty), then tag 2 (empty) -- out of order
    w.uvarint(5)
    w.uvarint(0)
    w.uvarint(2)
    w.uvarint(0)
    with pytest.raises(CorruptDataError, match="ascending"):
        Reader(w.getvalue()).tagged_fields()
    with pytest.raises(CorruptDataError, match="at most"):
        Reader(b"\xff\xff\xff\x7f").array("items", True)


# --- property tests ---------------------------------------------------------------------------

text = st.text(max_size=12)
opt_text = st.none() | text
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
tags = st.lists(st.tuples(st.integers(0, 1000), st.binary(max_size=5)), max_size=2, unique_by=lambda t: t[0]).map(lambda x: tuple(sorted(x)))


@st.composite
def offset_commit_values(draw):
    version = draw(st.integers(0, 4))
    return it.OffsetCommitValue(
        version, draw(INT64), draw(text), draw(INT64),
        draw(INT32) if version >= 3 else -1,
        draw(INT64) if version == 1 else -1,
        draw(tags) if version >= 4 else (),
    )


@st.composite
def group_metadata_values(draw):
    version = draw(st.integers(0, 4))
    flexible = version >= 4
    members = tuple(
        it.MemberMetadata(
            draw(text), draw(text), draw(text), draw(INT32), draw(st.binary(max_size=20)), draw(st.binary(max_size=20)),
            draw(opt_text) if version >= 3 else None,
            draw(INT32) if version >= 1 else -1,
            draw(tags) if flexible else (),
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    return it.GroupMetadataValue(
        version, draw(text), draw(INT32), draw(opt_text), draw(opt_text), members,
        draw(INT64) if version >= 2 else -1, draw(tags) if flexible else (),
    )


@st.composite
def transaction_values(draw):
    version = draw(st.integers(0, 1))
    partitions = draw(st.none() | st.lists(st.builds(it.TopicPartitions, text, st.lists(INT32, max_size=4).map(tuple)), max_size=3).map(tuple))
    extra = version >= 1
    return it.TransactionLogValue(
        version, draw(INT64), draw(st.integers(-(2**15), 2**15 - 1)), draw(INT32), draw(st.integers(-128, 127)), partitions,
        draw(INT64), draw(INT64),
        draw(INT64) if extra else -1, draw(INT64) if extra else -1, draw(st.integers(-(2**15), 2**15 - 1)) if extra else 0,
        draw(st.lists(st.tuples(st.integers(3, 50), st.binary(max_size=4)), max_size=2, unique_by=lambda t: t[0]).map(lambda x: tuple(sorted(x)))) if extra else (),
    )


@given(st.one_of(
    st.builds(it.OffsetCommitKey, st.integers(0, 1), text, text, INT32),
    st.builds(it.GroupMetadataKey, text),
))
def test_key_round_trip(key):
    assert it.decode_consumer_offsets_key(it.encode_consumer_offsets_key(key)) == key


@given(offset_commit_values())
def test_offset_commit_value_round_trip(value):
    assert it.decode_offset_commit_value(it.encode_consumer_offsets_value(value)) == value


@given(group_metadata_values())
def test_group_metadata_value_round_trip(value):
    assert it.decode_group_metadata_value(it.encode_consumer_offsets_value(value)) == value


@given(transaction_values(), text)
def test_transaction_round_trip(value, txn_id):
    assert it.decode_transaction_log_value(it.encode_transaction_log_value(value)) == value
    assert it.decode_transaction_log_key(it.encode_transaction_log_key(it.TransactionLogKey(txn_id))).transactional_id == txn_id


@given(st.integers(0, 27), st.integers(0, 32767), st.binary(max_size=30))
def test_metadata_frame_round_trip(api_key, version, data):
    record = it.MetadataRecord(api_key, version, data)
    assert it.decode_metadata_record(it.encode_metadata_record(record)) == record


@given(st.binary(max_size=120))
@settings(max_examples=400)
def test_arbitrary_bytes_raise_only_mq_errors(data):
    calls = [
        lambda: it.decode_consumer_offsets_record(data, data),
        lambda: it.decode_offset_commit_value(data),
        lambda: it.decode_group_metadata_value(data),
        lambda: it.decode_transaction_log_key(data),
        lambda: it.decode_transaction_log_value(data),
        lambda: it.decode_metadata_payload(it.decode_metadata_record(data)),
        lambda: it.decode_metadata_payload(it.MetadataRecord(2, 0, data)),
        lambda: it.decode_metadata_payload(it.MetadataRecord(12, 0, data)),
    ]
    for call in calls:
        try:
            call()
        except MqError:
            pass


@given(data=st.data())
@settings(max_examples=200)
def test_mutated_values_raise_only_mq_errors(data):
    value = data.draw(group_metadata_values() | transaction_values())
    raw = bytearray(
        it.encode_group_metadata_value(value) if isinstance(value, it.GroupMetadataValue) else it.encode_transaction_log_value(value)
    )
    if raw:
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] = data.draw(st.integers(0, 255))
    for decode in (it.decode_group_metadata_value, it.decode_transaction_log_value):
        try:
            decode(bytes(raw))
        except MqError:
            pass


def test_config_record_bytes():
    # ConfigRecord v0 (flexible): int8 resourceType, compact string resourceName, compact string
    # name, compact nullable string value, tagged fields
    raw = bytes([2]) + bytes([7]) + b"orders" + bytes([15]) + b"cleanup.policy" + bytes([7]) + b"delete" + bytes([0])
    record = it.MetadataRecord(it.METADATA_RECORD_API_KEYS["ConfigRecord"], 0, raw)
    assert it.decode_metadata_payload(record) == it.ConfigRecord(2, "orders", "cleanup.policy", "delete")
    deleted = it.ConfigRecord(4, "", "log.cleanup.policy", None)
    again = it.MetadataRecord(record.api_key, 0, it.encode_metadata_payload(deleted))
    assert it.decode_metadata_payload(again) == deleted


@given(st.integers(-128, 127), st.text(max_size=30), st.text(max_size=30), st.none() | st.text(max_size=30))
def test_config_record_round_trip(kind, resource, name, value):
    payload = it.ConfigRecord(kind, resource, name, value)
    record = it.MetadataRecord(it.METADATA_RECORD_API_KEYS["ConfigRecord"], 0, it.encode_metadata_payload(payload))
    assert it.decode_metadata_payload(record) == payload
