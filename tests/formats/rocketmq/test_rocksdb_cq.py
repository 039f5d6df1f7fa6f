"""The RocksDB ConsumeQueue codec (formats.rocketmq.rocksdb_cq) against the upstream layout.

``tests/rocksdb_cq_store.py`` packs keys and values itself as ``RocksDBConsumeQueueTable`` and
``RocksDBConsumeQueueOffsetTable`` build them; the codec must read those bytes and write the same
bytes back, for any topic, queue and offsets, and name where a damaged key breaks.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError
from mqtool.formats.rocketmq import rocksdb_cq as rcq
from tests import rocksdb_cq_store as w

topics = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60)
ints = st.integers(-(2**31), 2**31 - 1)
longs = st.integers(-(2**63), 2**63 - 1)


@given(topic=topics, queue_id=ints, queue_offset=longs)
def test_cq_key_round_trip(topic, queue_id, queue_offset):
    raw = w.cq_key(topic, queue_id, queue_offset)
    key = rcq.decode_cq_key(raw)
    assert key == rcq.CqKey(topic, queue_id, queue_offset)
    assert rcq.encode_cq_key(key) == raw
    assert raw.startswith(rcq.cq_queue_prefix(topic, queue_id))


@given(phy=longs, size=ints, tags=longs, ts=longs)
def test_cq_value_round_trip(phy, size, tags, ts):
    raw = w.cq_value(phy, size, tags, ts)
    value = rcq.decode_cq_value(raw)
    assert value == rcq.CqValue(phy, size, tags, ts)
    assert rcq.encode_cq_value(value) == raw


@given(topic=topics, kind=st.sampled_from(["max", "min"]), queue_id=ints, phy=longs, qoff=longs)
def test_offset_entry_round_trip(topic, kind, queue_id, phy, qoff):
    raw = w.offset_key(topic, kind, queue_id)
    key = rcq.decode_offset_key(raw)
    assert key == rcq.OffsetKey(topic, kind, queue_id)
    assert rcq.encode_offset_key(key) == raw
    value = rcq.decode_offset_value(rcq.encode_offset_value(rcq.OffsetValue(phy, qoff)))
    assert value == rcq.OffsetValue(phy, qoff)


def test_checkpoint_entry():
    key = rcq.decode_offset_key(w.offset_key("CHECKPOINT_TOPIC", "max", 0))
    assert rcq.is_checkpoint_key(key)
    assert rcq.decode_checkpoint_value(rcq.encode_checkpoint_value(123456)) == 123456


@given(topic=topics, queue_id=ints, queue_offset=longs, data=st.data())
def test_damaged_key_is_an_error_at_its_byte(topic, queue_id, queue_offset, data):
    raw = bytearray(w.cq_key(topic, queue_id, queue_offset))
    t = len(topic.encode())
    at = data.draw(st.sampled_from([4, 5 + t, 10 + t]))  # one of the three CTRL_1 bytes
    raw[at] = data.draw(st.sampled_from([0x00, 0x02, 0xFF]))
    with pytest.raises(CorruptDataError) as exc:
        rcq.decode_cq_key(bytes(raw))
    assert exc.value.position == at


@given(topic=topics, cut=st.integers(1, 8))
def test_short_or_long_keys_and_values_are_errors(topic, cut):
    raw = w.cq_key(topic, 0, 1)
    with pytest.raises(CorruptDataError):
        rcq.decode_cq_key(raw[:-cut])
    with pytest.raises(CorruptDataError):
        rcq.decode_cq_key(raw + b"\x00" * cut)
    with pytest.raises(CorruptDataError):
        rcq.decode_cq_value(w.cq_value(1, 2, 3, 4)[:-cut])
    with pytest.raises(CorruptDataError):
        rcq.decode_offset_value(b"\x00" * (16 - cut))


def test_topic_not_utf8_is_an_encoding_error():
    raw = bytearray(w.cq_key("ab", 0, 0))
    raw[6] = 0xFF
    with pytest.raises(CorruptDataError) as exc:
        rcq.decode_cq_key(bytes(raw))
    assert exc.value.kind == "encoding" and exc.value.position == 6
