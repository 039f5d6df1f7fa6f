"""fastjson config files under config/ (spec §6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError
from mqtool.formats.rocketmq.config import (
    PERM_READ,
    PERM_WRITE,
    DataVersion,
    SubscriptionGroupConfig,
    TopicConfig,
    encode_consumer_offsets,
    encode_delay_offsets,
    encode_fastjson,
    encode_subscription_groups,
    encode_topics,
    parse_consumer_filters,
    parse_consumer_offsets,
    parse_data_version,
    parse_delay_offsets,
    parse_fastjson,
    parse_subscription_groups,
    parse_topics,
    split_topic_group,
)
from tests.conftest import real_path

SHAOXUBAO = ("rocketmq", "Shaoxubao-rocketmq-study", "store", "config")
LIUSHANGQING = ("rocketmq", "liushangqing9803-rocketmq-tech", "store", "config")
PR3535 = ("rocketmq", "apache-rocketmq", "pr3535-4e25b979", "store", "config")


def _config_files() -> list[Path]:
    files: list[Path] = []
    for parts in (SHAOXUBAO, LIUSHANGQING, PR3535):
        files.extend(sorted(real_path(*parts).iterdir()))
    return files


# --- real fixtures -------------------------------------------------------------------------


def test_real_files_parse_and_reencode_byte_exact():
    files = _config_files()
    assert len(files) >= 18
    for path in files:
        raw = path.read_bytes()
        doc = parse_fastjson(raw)
        assert isinstance(doc, dict)
        assert encode_fastjson(doc).encode("utf-8") == raw, path


def test_real_files_are_not_plain_json():
    text = real_path(*LIUSHANGQING, "consumerOffset.json").read_text()
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_real_consumer_offsets_liushangqing():
    offsets = parse_consumer_offsets(real_path(*LIUSHANGQING, "consumerOffset.json").read_bytes())
    assert offsets[("lsqTopic1", "lsqGroup")] == {0: 8, 1: 15, 2: 14, 3: 12}
    assert offsets[("%RETRY%lsqGroup", "lsqGroup")] == {0: 0}
    assert len(offsets) == 4
    assert parse_data_version(real_path(*LIUSHANGQING, "consumerOffset.json").read_text()) is None


def test_real_consumer_offsets_shaoxubao():
    offsets = parse_consumer_offsets(real_path(*SHAOXUBAO, "consumerOffset.json").read_text())
    assert offsets == {
        ("TopicTest", "please_rename_unique_group_name_4"): {0: 250, 1: 250, 2: 250, 3: 250},
        ("%RETRY%please_rename_unique_group_name_4", "please_rename_unique_group_name_4"): {0: 0},
    }
    assert encode_consumer_offsets(offsets) == real_path(*SHAOXUBAO, "consumerOffset.json").read_text()


def test_real_topics():
    text = real_path(*SHAOXUBAO, "topics.json").read_text()
    topics = parse_topics(text)
    assert topics["TopicTest"] == TopicConfig("TopicTest", 4, 4, 6, "SINGLE_TAG", 0, False)
    assert topics["BenchmarkTest"].read_queue_nums == 1024
    assert topics["TBW102"].perm == 7 and topics["TBW102"].readable and topics["TBW102"].writable
    assert topics["TopicTest"].queue_type == "SimpleCQ"
    version = parse_data_version(text)
    assert version == DataVersion(timestamp=1551626364371, counter=3)
    assert encode_topics(topics, version) == text
    lsq = parse_topics(real_path(*LIUSHANGQING, "topics.json").read_bytes())
    assert "lsqTopic1" in lsq and lsq["%RETRY%lsqGroup"].write_queue_nums == 1


def test_real_subscription_groups():
    for parts in (SHAOXUBAO, LIUSHANGQING):
        text = real_path(*parts, "subscriptionGroup.json").read_text()
        groups = parse_subscription_groups(text)
        assert groups["SELF_TEST_C_GROUP"] == SubscriptionGroupConfig("SELF_TEST_C_GROUP")
        assert encode_subscription_groups(groups, parse_data_version(text)) == text
    lsq = parse_subscription_groups(real_path(*LIUSHANGQING, "subscriptionGroup.json").read_text())
    assert lsq["lsqGroup"].retry_max_times == 16 and lsq["lsqGroup"].consume_enable


def test_real_delay_offsets_and_filters():
    for parts in (SHAOXUBAO, LIUSHANGQING, PR3535):
        assert parse_delay_offsets(real_path(*parts, "delayOffset.json").read_text()) == {}
    assert parse_fastjson(real_path(*SHAOXUBAO, "consumerFilter.json").read_text()) == {"filterDataByTopic": {}}
    for parts in (SHAOXUBAO, LIUSHANGQING):
        assert parse_consumer_filters(real_path(*parts, "consumerFilter.json").read_text()) == {}


# --- the quoting pass ----------------------------------------------------------------------


def test_bare_keys_become_int_keys():
    doc = parse_fastjson('{"offsetTable":{0:250,1:250,\n\t\t-3 : 7\n\t\t}}')
    assert doc == {"offsetTable": {0: 250, 1: 250, -3: 7}}


def test_digits_inside_strings_untouched():
    text = '{"k":"x,1:y","q\\",2:":{3:"{4:5}"},6:"a\\\\",7:[]}'
    assert parse_fastjson(text) == {"k": "x,1:y", 'q",2:': {3: "{4:5}"}, 6: "a\\", 7: []}


def test_quoted_numeric_keys_stay_strings():
    doc = parse_fastjson('{"123":{0:1},"topicConfigTable":{"9":{}}}')
    assert doc == {"123": {0: 1}, "topicConfigTable": {"9": {}}}
    assert list(doc) == ["123", "topicConfigTable"]
    assert parse_fastjson(encode_fastjson(doc)) == doc


def test_private_use_characters_in_keys_survive():
    doc = {"\ue000" + "1": {"\\ue001": 2}, 5: "\ue002"}
    assert parse_fastjson(encode_fastjson(doc)) == doc
    assert parse_fastjson('{"\\ue0007":1,8:2}') == {"\ue0007": 1, 8: 2}


def test_raw_tabs_in_strings_accepted():
    assert parse_fastjson('{"a":"x\ty"}') == {"a": "x\ty"}


def test_encode_shape():
    doc = {"offsetTable": {"t@g": {0: 250, 1: 250}}, "empty": {}, "list": [1, {"a": True}], "none": None}
    assert encode_fastjson(doc) == (
        '{\n\t"offsetTable":{\n\t\t"t@g":{0:250,1:250\n\t\t}\n\t},\n\t"empty":{},'
        '\n\t"list":[\n\t\t1,\n\t\t{\n\t\t\t"a":true\n\t\t}\n\t],\n\t"none":null\n}'
    )
    assert encode_fastjson([]) == "[]" and encode_fastjson("é") == '"é"'
    with pytest.raises(TypeError):
        encode_fastjson({True: 1})
    with pytest.raises(TypeError):
        encode_fastjson({"a": object()})
    with pytest.raises(ValueError):
        encode_fastjson(float("nan"))


# --- errors --------------------------------------------------------------------------------


def test_error_position_is_original_byte_offset():
    text = '{\n\t"a":{0:1,1:}\n}'
    with pytest.raises(CorruptDataError) as info:
        parse_fastjson(text)
    assert info.value.position == text.index("}")
    assert "line 2 column 13" in str(info.value)


def test_error_position_counts_utf8_bytes():
    text = '{"é":{10:1,2 3}}'
    with pytest.raises(CorruptDataError) as info:
        parse_fastjson(text.encode())
    # "2 3" is not a key (no colon), so the error is at the "2": char 11, byte 12 (é is 2 bytes)
    assert info.value.position == len(text[: text.index("2 3")].encode()) == 12


def test_truncated_file():
    text = real_path(*SHAOXUBAO, "topics.json").read_text()
    with pytest.raises(CorruptDataError) as info:
        parse_fastjson(text[:500])
    assert info.value.position == 500


@pytest.mark.parametrize("text", ["", "  \n", "NaN", '{"a":Infinity}', "[" * 100_000, "{0:1", '{"a":1}x'])
def test_bad_documents(text):
    with pytest.raises(CorruptDataError):
        parse_fastjson(text)


def test_bad_utf8_located():
    with pytest.raises(CorruptDataError) as info:
        parse_fastjson(b'{"a":"\xff"}')
    assert info.value.position == 6


def test_typed_shape_errors():
    with pytest.raises(CorruptDataError):
        parse_consumer_offsets("[]")
    with pytest.raises(CorruptDataError):
        parse_consumer_offsets('{"offsetTable":{"noSeparator":{0:1}}}')
    with pytest.raises(CorruptDataError):
        parse_consumer_offsets('{"offsetTable":{"t@g":{0:"x"}}}')
    with pytest.raises(CorruptDataError):
        parse_consumer_offsets('{"offsetTable":{"t@g":{"q":1}}}')
    with pytest.raises(CorruptDataError):
        parse_consumer_offsets('{"offsetTable":{"t@g":{0:true}}}')
    with pytest.raises(CorruptDataError):
        parse_topics('{"topicConfigTable":{"t":{"perm":"rw"}}}')
    with pytest.raises(CorruptDataError):
        parse_subscription_groups('{"subscriptionGroupTable":{"g":{"consumeEnable":1}}}')
    with pytest.raises(CorruptDataError):
        parse_delay_offsets("{}")
    with pytest.raises(CorruptDataError):
        parse_consumer_filters('{"filterDataByTopic":[]}')
    with pytest.raises(CorruptDataError):
        parse_consumer_filters('{"filterDataByTopic":{"T":1}}')
    with pytest.raises(CorruptDataError):
        parse_consumer_filters('{"filterDataByTopic":{"T":{"groupFilterData":[]}}}')


def test_consumer_filters():
    """``ConsumerFilterManager.decode`` skips a missing or null table."""
    assert parse_consumer_filters("{}") == parse_consumer_filters('{"filterDataByTopic":null}') == {}
    doc = {"filterDataByTopic": {"T": {"groupFilterData": {"g": {"expression": "a > 1"}}, "topic": "T"}}}
    assert parse_consumer_filters(encode_fastjson(doc)) == doc["filterDataByTopic"]


def test_split_topic_group():
    assert split_topic_group("TopicTest@group") == ("TopicTest", "group")
    assert split_topic_group("%RETRY%g@g") == ("%RETRY%g", "g")
    assert split_topic_group("t@g@x") == ("t", "g@x")
    for bad in ("nogroup", "@g", "t@"):
        with pytest.raises(CorruptDataError):
            split_topic_group(bad)


def test_quoted_queue_ids_accepted():
    assert parse_consumer_offsets('{"offsetTable":{"t@g":{"0":5}}}') == {("t", "g"): {0: 5}}


def test_typed_parsers_accept_documents_and_keep_extras():
    doc = {
        "dataVersion": {"counter": 2, "stateVersion": 1, "timestamp": 99},
        "topicConfigTable": {"b": {"topicName": "b", "attributes": {"+queue.type": "BatchCQ"}, "newField": [1]}},
    }
    topics = parse_topics(doc)
    assert topics["b"].attributes == {"+queue.type": "BatchCQ"} and topics["b"].extra == {"newField": [1]}
    assert topics["b"].read_queue_nums == 16  # upstream default when absent
    assert parse_data_version(doc) == DataVersion(99, 2, 1)
    assert parse_topics(encode_topics(topics, parse_data_version(doc))) == topics
    batch = parse_topics({"topicConfigTable": {"q": {"attributes": {"queue.type": "BatchCQ"}}}})
    assert batch["q"].queue_type == "BatchCQ"


# --- properties ----------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
KEYS = st.text(max_size=8) | st.integers(-(2**31), 2**31 - 1)
JSONISH = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


@given(JSONISH)
def test_fastjson_round_trip(obj):
    assert parse_fastjson(encode_fastjson(obj)) == obj


@given(JSONISH)
def test_fastjson_round_trip_bytes(obj):
    text = encode_fastjson(obj)
    assert encode_fastjson(parse_fastjson(text.encode("utf-8", "surrogatepass"))) == text


@given(st.text(max_size=80))
def test_parse_text_raises_only_mq_errors(text):
    try:
        parse_fastjson(text)
    except MqError:
        pass


@given(st.binary(max_size=80))
def test_parse_bytes_raises_only_mq_errors(data):
    for parse in (parse_fastjson, parse_consumer_offsets, parse_topics, parse_delay_offsets, parse_subscription_groups):
        try:
            parse(data)
        except MqError:
            pass


NAME = st.text(alphabet="%|abcXYZ019_-", min_size=1, max_size=10)
OFFSETS = st.dictionaries(
    st.tuples(NAME, NAME), st.dictionaries(st.integers(0, 1024), st.integers(0, 2**63 - 1), max_size=5), max_size=5
)
VERSIONS = st.none() | st.builds(
    DataVersion, st.integers(0, 2**62), st.integers(0, 2**62), st.none() | st.integers(0, 9)
)


@given(OFFSETS, VERSIONS)
def test_consumer_offsets_round_trip(offsets, version):
    text = encode_consumer_offsets(offsets, version)
    assert parse_consumer_offsets(text) == offsets
    assert parse_data_version(text) == version


@given(st.dictionaries(st.integers(1, 18), st.integers(0, 2**40), max_size=18), VERSIONS)
def test_delay_offsets_round_trip(offsets, version):
    assert parse_delay_offsets(encode_delay_offsets(offsets, version)) == offsets


TOPIC = st.builds(
    TopicConfig,
    NAME,
    st.integers(0, 1024),
    st.integers(0, 1024),
    st.integers(0, 15),
    st.sampled_from(["SINGLE_TAG", "MULTI_TAG"]),
    st.integers(0, 3),
    st.booleans(),
    st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
)
GROUP = st.builds(
    SubscriptionGroupConfig,
    NAME,
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 8),
    st.integers(-1, 32),
    st.integers(0, 3),
    st.integers(0, 3),
    st.booleans(),
)


@given(st.lists(TOPIC, max_size=4), VERSIONS)
def test_topics_round_trip(topics, version):
    table = {t.topic_name: t for t in topics}
    assert parse_topics(encode_topics(table, version)) == table
    assert all(t.readable == bool(t.perm & PERM_READ) and t.writable == bool(t.perm & PERM_WRITE) for t in topics)


@given(st.lists(GROUP, max_size=4), VERSIONS)
def test_subscription_groups_round_trip(groups, version):
    table = {g.group_name: g for g in groups}
    assert parse_subscription_groups(encode_subscription_groups(table, version)) == table
