"""The compaction store's own decoding (``formats.rocketmq.compaction``): file sizes as
``CompactionLog.getCompactionLogSize`` computes them, the end unit, and ``position-checkpoint``
(``CompactionPositionMgr``) round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError
from mqtool.formats.rocketmq import compaction as cf
from mqtool.formats.rocketmq.consume_queue import decode_bcq_unit, encode_bcq_unit


def test_default_sizes_are_the_brokers():
    # compactionCqMappedFileSize 10 MiB in whole 46-byte units; the log a whole number of them near 100 MiB
    assert cf.DEFAULT_CQ_FILE_SIZE == 10 * 1024 * 1024 // 46 * 46 == 10_485_746
    assert cf.DEFAULT_LOG_FILE_SIZE == 10 * 10_485_746 == 104_857_460


def test_the_log_holds_at_least_five_cq_files_and_rounds_as_the_broker():
    assert cf.log_file_size(1000, 3000) == 5000
    assert cf.log_file_size(1000, 10_400) == 10_000  # remainder below half a CQ file: rounded down
    assert cf.log_file_size(1000, 10_600) == 11_000  # at or above half: up
    assert cf.log_file_size(1000, 10_000) == 11_000  # no remainder: n + 1, as the broker computes it
    with pytest.raises(ValueError):
        cf.cq_file_size(45)


def test_the_end_unit_round_trips_and_is_recognised():
    raw = encode_bcq_unit(cf.END_UNIT)
    assert len(raw) == 46 and cf.is_end_unit(decode_bcq_unit(raw))
    assert not decode_bcq_unit(raw).is_valid
    assert not cf.is_end_unit(cf.unit_for(0, 100, 0, 1, 0))


topics = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters='"\\'), min_size=1, max_size=20)


@given(st.dictionaries(st.tuples(topics, st.integers(0, 1023)), st.integers(-1, 2**62), max_size=8))
def test_position_checkpoint_round_trips(entries):
    doc = {"queueOffsetMap": {f"{t}_{q}": n for (t, q), n in entries.items()}}
    parsed = cf.parse_position_checkpoint(json.dumps(doc))
    assert {(p.topic, p.queue_id): p.offset for p in parsed} == {k: v for k, v in entries.items() if f"{k[0]}_{k[1]}" in doc["queueOffsetMap"]}


def test_a_topic_with_underscores_splits_at_the_last_one():
    assert cf.split_queue_key("my_topic_3") == ("my_topic", 3)
    assert cf.split_queue_key("notopic") is None and cf.split_queue_key("_3") is None


@pytest.mark.parametrize("text", ['{"queueOffsetMap": []}', '{"queueOffsetMap": {"t": 1}}', '{"queueOffsetMap": {"t_1": "x"}}', "[1]"])
def test_a_bad_position_checkpoint_says_what_it_expected(text):
    with pytest.raises(CorruptDataError):
        cf.parse_position_checkpoint(text)


def test_an_empty_position_checkpoint_has_no_entries():
    assert cf.parse_position_checkpoint("{}") == []
