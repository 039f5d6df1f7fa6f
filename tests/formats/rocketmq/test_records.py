"""The lean record walk frames exactly as the column walk does and, on every record it takes,
reads what the precise decoder reads."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq.columns import walk_columns
from mqtool.formats.rocketmq.records import walk_records
from tests.strategies import message_records

BASE = 1 << 30


def _log(records: list[cl.MessageRecord], keep_offsets: list[bool], crc_property: list[bool]) -> bytes:
    out = bytearray()
    for i, rec in enumerate(records):
        if not keep_offsets[i % len(keep_offsets)]:
            rec = cl.with_offsets(rec, queue_offset=i, physical_offset=BASE + len(out))
        out += cl.encode_message(rec, append_crc_property=crc_property[i % len(crc_property)])
    return bytes(out)


damage = st.one_of(st.none(), st.tuples(st.integers(0, 10_000), st.integers(1, 255)))


@settings(max_examples=200)
@given(
    st.lists(message_records(max_body=64), min_size=1, max_size=6),
    st.lists(st.sampled_from([False, False, True]), min_size=1, max_size=3),
    st.lists(st.sampled_from([False, False, True]), min_size=1, max_size=3),
    st.sampled_from(["zeros", "eof", "blank", "cut"]),
    damage,
    st.booleans(),
)
def test_records_frame_as_columns_and_read_as_the_precise_decoder(records, keep, crc, ending, flip, zero_last) -> None:
    data = bytearray(_log(records, keep, crc))
    if ending == "zeros":
        data += bytes(64)
    elif ending == "blank":
        data += cl.encode_blank(64) + bytes(56)
    elif ending == "cut":
        data = data[: max(len(data) - 7, 1)]
    if flip is not None:
        at, xor = flip
        data[at % len(data)] ^= xor
    buf = bytes(data)
    walk = walk_records(buf, BASE, stop_at_zero_last_byte=zero_last)
    columns = walk_columns(buf, BASE)
    assert walk.stop == columns.stop
    assert [row[0] for row in walk.rows] == columns.columns.position.tolist()
    for pos, fields, body, topic, props, born, store, msg_id in walk.rows:
        rec = cl.decode_message(buf, pos)
        assert (fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7], fields[8]) == (
            rec.total_size, rec.magic_code, rec.body_crc, rec.queue_id, rec.flag, rec.queue_offset, rec.physical_offset,
            rec.sys_flag, rec.born_timestamp,
        )
        assert (fields[10], fields[12], fields[13], fields[14]) == (
            rec.store_timestamp, rec.reconsume_times, rec.prepared_transaction_offset, len(rec.body),
        )
        assert (body, topic, props, born, store, msg_id) == (
            rec.body, rec.topic, rec.properties, str(rec.born_host), str(rec.store_host), rec.msg_id,
        )
        assert list(props) == list(rec.properties)  # the same order (the JSON key order)


def test_without_crc_check_a_bad_body_is_read() -> None:
    buf = bytearray(_log([cl.MessageRecord(topic="T", body=b"abc", properties={"TAGS": "a"})], [False], [False]))
    buf[cl.body_position(0)] ^= 1
    assert walk_records(bytes(buf), BASE).stop.kind == "anomaly"
    unchecked = walk_records(bytes(buf), BASE, check_crc=False)
    assert unchecked.stop.kind == "eof" and unchecked.rows[0][2] == cl.decode_message(bytes(buf), 0, check_crc=False).body


def test_repeated_property_keeps_first_place_and_last_value() -> None:
    buf = bytearray(_log([cl.MessageRecord(topic="T", properties={"A": "1", "B": "2", "C": "3"})], [False], [False]))
    buf = bytearray(bytes(buf).replace(b"C\x013", b"A\x019"))  # the same length: A twice
    rows = walk_records(bytes(buf), BASE).rows
    assert list(rows[0][4].items()) == [("A", "9"), ("B", "2")] == list(cl.decode_message(bytes(buf), 0).properties.items())
