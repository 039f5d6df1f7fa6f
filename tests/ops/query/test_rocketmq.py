"""ops/query/rocketmq.py: RocketMQ lookups by key, offsetMsgId and queue offset on the bundled fixture."""

from __future__ import annotations

import pytest

from mqtool.ops.query import rocketmq as q
from mqtool.store import rocketmq as rmq
from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"
KEY42_OFFSET = 14354
KEY42_MSG_ID = "C0A8000A00002A9F0000000000003812"  # 192.168.0.10:10911, commitlog offset 14354


@pytest.fixture(scope="module")
def store():
    return rmq.open_store(STORE)


def test_key_window_is_exact_although_index_times_are_whole_seconds(store):
    stored = q.query_by_key(store, "KEY42").hits[0].record.store_timestamp
    # the IndexFile entry's time is up to 999 ms earlier than the store time: a window that
    # starts at the store time itself must still find the message (it was dropped before)
    at = q.query_by_key(store, "KEY42", begin=stored, end=stored)
    assert [h.commitlog_offset for h in at.hits] == [KEY42_OFFSET]
    after = q.query_by_key(store, "KEY42", begin=stored + 1)
    assert after.hits == [] and after.collisions == 0  # outside the window is not a hash collision
    before = q.query_by_key(store, "KEY42", end=stored - 1)
    assert before.hits == []


def test_msg_id_finds_its_record(store):
    result = q.query_by_msg_id(store, KEY42_MSG_ID)
    assert [h.commitlog_offset for h in result.hits] == [KEY42_OFFSET] and result.notes == []


def test_msg_id_of_another_broker_is_no_match(store):
    other = "C0A8000B" + KEY42_MSG_ID[8:]  # 192.168.0.11: same offset, another broker's message
    result = q.query_by_msg_id(store, other)
    assert result.hits == []
    assert "192.168.0.11" in result.notes[0] and "another broker" in result.notes[0]


@pytest.mark.parametrize("bad", ["ZZZ", "Z" * 32, KEY42_MSG_ID[:-1]])
def test_check_msg_id_says_why(bad):
    with pytest.raises(ValueError, match="not an offsetMsgId: expected"):
        q.check_msg_id(bad)
    assert q.check_msg_id(f" {KEY42_MSG_ID} ") == KEY42_MSG_ID
