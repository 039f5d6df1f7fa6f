"""Kafka text files (checkpoints, partition.metadata, meta.properties, clean-shutdown marker) and names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, StoreLayoutError, UnsupportedFormatError
from mqtool.formats.kafka import checkpoint_file as cf
from tests.conftest import real_path

TPO = cf.TopicPartitionOffset

# --- offset checkpoints -------------------------------------------------------------------


def test_spec_vector():
    raw = b"0\n2\ntopicA 0 1234\ntopicA 1 99\n"
    cp = cf.OffsetCheckpoint((TPO("topicA", 0, 1234), TPO("topicA", 1, 99)))
    assert cf.decode_offset_checkpoint(raw) == cp
    assert cf.encode_offset_checkpoint(cp) == raw
    assert cp.as_dict() == {("topicA", 0): 1234, ("topicA", 1): 99}


def test_leader_epoch_spec_example():
    raw = b"0\n5\n1 0\n2 298\n3 354\n5 711\n6 712\n"
    cp = cf.decode_leader_epoch_checkpoint(raw)
    assert [(e.epoch, e.start_offset) for e in cp.entries] == [(1, 0), (2, 298), (3, 354), (5, 711), (6, 712)]
    assert cf.encode_leader_epoch_checkpoint(cp) == raw


def test_empty_and_version_only_files_are_empty():
    assert cf.decode_offset_checkpoint(b"") == cf.OffsetCheckpoint(())
    assert cf.decode_offset_checkpoint(b"0\n") == cf.OffsetCheckpoint(())
    assert cf.decode_leader_epoch_checkpoint(b"0") == cf.LeaderEpochCheckpoint(())
    assert cf.encode_offset_checkpoint(cf.OffsetCheckpoint()) == b"0\n0\n"


def test_java_line_ends_and_whitespace():
    cp = cf.decode_offset_checkpoint(b"0\r\n2\rt\t1   5\nu 2 -1")
    assert cp.entries == (TPO("t", 1, 5), TPO("u", 2, -1))
    assert cf.decode_offset_checkpoint(b"0\n1\nt 1 5 \n").entries == (TPO("t", 1, 5),)  # trailing blank dropped
    assert cf.decode_offset_checkpoint(b"0\n1\nt +1 +5\n").entries == (TPO("t", 1, 5),)  # Integer.parseInt takes '+'


@pytest.mark.parametrize(
    "raw,position",
    [
        (b"x\n0\n", 0),  # version not a number
        (b"1\n0\n", 0),  # unrecognised version
        (b"0\nx\n", 2),  # count not a number
        (b"0\n-1\n", 2),  # negative count
        (b"0\n2\nt 0 1\n", 2),  # count mismatch: located at the count line
        (b"0\n1\nt 0\n", 4),  # two tokens
        (b"0\n1\n t 0 1\n", 4),  # leading blank makes an empty first token: 4 tokens
        (b"0\n2\nt 0 1\n\n", 10),  # an empty line is a malformed entry
        (b"0\n1\nt 0 99999999999999999999\n", 4),  # long overflow
        (b"0\n1\nt 2147483648 1\n", 4),  # int overflow
        (b"0\n1\nt \xff 1\n", 6),  # bad UTF-8 located at its byte
    ],
)
def test_malformed_offset_checkpoints(raw, position):
    with pytest.raises(CorruptDataError) as info:
        cf.decode_offset_checkpoint(raw)
    assert info.value.position == position


def test_malformed_leader_epoch_lines():
    with pytest.raises(CorruptDataError) as info:
        cf.decode_leader_epoch_checkpoint(b"0\n2\n1 0\n2 3 4\n")
    assert info.value.position == 8
    with pytest.raises(CorruptDataError):
        cf.decode_leader_epoch_checkpoint(b"0\n1\n2147483648 0\n")


def test_encoder_refuses_unparsable_topics():
    for topic in ("", "a b", "a\nb"):
        with pytest.raises(ValueError):
            cf.encode_offset_checkpoint(cf.OffsetCheckpoint((TPO(topic, 0, 0),)))
    with pytest.raises(ValueError):
        cf.encode_leader_epoch_checkpoint(cf.LeaderEpochCheckpoint((cf.EpochEntry(2**31, 0),)))


TOPICS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\x0b\f\r"), min_size=1, max_size=30)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


@given(st.lists(st.builds(TPO, TOPICS, INT32, INT64), max_size=10))
def test_offset_checkpoint_round_trip(entries):
    cp = cf.OffsetCheckpoint(tuple(entries))
    assert cf.decode_offset_checkpoint(cf.encode_offset_checkpoint(cp)) == cp


@given(st.lists(st.builds(cf.EpochEntry, INT32, INT64), max_size=10))
def test_leader_epoch_round_trip(entries):
    cp = cf.LeaderEpochCheckpoint(tuple(entries))
    assert cf.decode_leader_epoch_checkpoint(cf.encode_leader_epoch_checkpoint(cp)) == cp


# --- partition.metadata -------------------------------------------------------------------


def test_partition_metadata_vector():
    raw = b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    meta = cf.decode_partition_metadata(raw)
    assert meta == cf.PartitionMetadata(cf.METADATA_TOPIC_ID, 0)
    assert meta.topic_id_bytes == bytes(15) + b"\x01"
    assert cf.encode_partition_metadata(meta) == raw


def test_partition_metadata_reader_quirks():
    # later lines ignored, key names unchecked, '==' padding and any whitespace after ':' accepted
    meta = cf.decode_partition_metadata(b"v:\t3\r\nid:  AAAAAAAAAAAAAAAAAAAAAQ==\nmore stuff\n")
    assert meta == cf.PartitionMetadata("AAAAAAAAAAAAAAAAAAAAAQ==", 3)


@pytest.mark.parametrize(
    "raw,error,position",
    [
        (b"", CorruptDataError, 0),
        (b"version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", CorruptDataError, 0),  # no whitespace after ':'
        (b"version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", CorruptDataError, 0),
        (b"version: 0", CorruptDataError, 10),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", CorruptDataError, 11),  # zero uuid
        (b"version: 0\ntopic_id: AAAA", CorruptDataError, 11),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAA+", CorruptDataError, 11),  # not base64url
        (b"version: 0\ntopic_id: a: b", CorruptDataError, 11),
    ],
)
def test_malformed_partition_metadata(raw, error, position):
    with pytest.raises(error) as info:
        cf.decode_partition_metadata(raw)
    assert info.value.position == position


def test_kafka_uuid_helpers():
    raw = bytes(range(16))
    text = cf.encode_kafka_uuid(raw)
    assert len(text) == 22 and "=" not in text
    assert cf.decode_kafka_uuid(text) == raw
    with pytest.raises(ValueError):
        cf.encode_kafka_uuid(b"short")


@given(st.binary(min_size=16, max_size=16).filter(any), st.integers(0, 2**31 - 1))
def test_partition_metadata_round_trip(raw, version):
    meta = cf.PartitionMetadata(cf.encode_kafka_uuid(raw), version)
    assert cf.decode_partition_metadata(cf.encode_partition_metadata(meta)) == meta


# --- meta.properties ----------------------------------------------------------------------


def test_meta_properties_v0_and_v1():
    v0 = b"#\n#Sat Jun 03 20:13:09 CST 2023\ncluster.id=d0053poFTbGwSWThjV1DEg\nversion=0\nbroker.id=0\n"
    meta = cf.decode_meta_properties(v0)
    assert meta == cf.MetaProperties(0, 0, "d0053poFTbGwSWThjV1DEg")
    assert meta.broker_id == 0
    v1 = b"node.id=1\nversion=1\ncluster.id=hSCzevIQRUa-ojqTd_8C5w\ndirectory.id=UDsAHoJmRmGkfOLp2W80Uw\n"
    assert cf.decode_meta_properties(v1) == cf.MetaProperties(1, 1, "hSCzevIQRUa-ojqTd_8C5w", "UDsAHoJmRmGkfOLp2W80Uw")
    encoded = cf.encode_meta_properties(cf.decode_meta_properties(v1), date_comment="Tue Nov 14 06:46:06 UTC 2023")
    assert encoded.startswith(b"#\n#Tue Nov 14 06:46:06 UTC 2023\nversion=1\n")
    assert cf.decode_meta_properties(encoded) == cf.decode_meta_properties(v1)


def test_old_broker_without_cluster_id_and_default_version():
    assert cf.decode_meta_properties(b"broker.id=3\n") == cf.MetaProperties(0, 3)
    assert cf.decode_meta_properties(b"version=0\n") == cf.MetaProperties(0)


def test_java_properties_syntax():
    raw = (
        b"  # comment\n! other comment\n\n"
        b"a = 1\n"
        b"b:2\n"
        b"c 3\n"
        b"d\\ key=multi\\\n    line\\\\\n"
        b"e=\\u0041\\t\\=x\n"
        b"lat=caf\xe9\n"
        b"a=dup\n"
        b"version=0\n"
    )
    props = {p.key: p.value for p in cf.load_java_properties(raw)}
    assert props == {
        "a": "dup",
        "b": "2",
        "c": "3",
        "d key": "multiline\\",
        "e": "A\t=x",
        "lat": "caf\u00e9",
        "version": "0",
    }
    meta = cf.decode_meta_properties(raw)
    assert meta.extra["a"] == "dup" and meta.extra["lat"] == "caf\u00e9"


def test_comment_line_does_not_continue():
    props = cf.load_java_properties(b"# comment \\\nkey=value\n")
    assert [(p.key, p.value, p.position) for p in props] == [("key", "value", 12)]


@pytest.mark.parametrize(
    "raw,error,position",
    [
        (b"version=2\nnode.id=1\ncluster.id=x\n", UnsupportedFormatError, 0),
        (b"version=one\n", CorruptDataError, 0),
        (b"version=1\ncluster.id=x\n", CorruptDataError, 0),  # node.id missing
        (b"version=1\nnode.id=1\n", CorruptDataError, 0),  # cluster.id missing
        (b"version=0\nbroker.id=0 \n", CorruptDataError, 10),  # parseInt without trim
        (b"version=0\n\ndirectory.id=nope\n", CorruptDataError, 11),
        (b"x=\\u00zz\n", None, None),  # malformed \\uxxxx: only fails when parsed
    ],
)
def test_bad_meta_properties(raw, error, position):
    if error is None:
        with pytest.raises(CorruptDataError) as info:
            cf.load_java_properties(raw)
        assert info.value.position == 0
        return
    with pytest.raises(error) as info:
        cf.decode_meta_properties(raw)
    assert info.value.position == position


def test_empty_cluster_id_is_present_not_missing():
    # Kafka's MetaProperties.Builder keeps `cluster.id=` as Optional.of(""): a v1 file with it
    # builds (only a missing key fails, see test_bad_meta_properties); keep "" apart from None.
    raw = b"#\n#Mon Apr 13 08:19:15 GMT 2026\ncluster.id=\ndirectory.id=gIODMx0B20PHQLXVLoRD7w\nnode.id=1\nversion=1\n"
    meta = cf.decode_meta_properties(raw)
    assert meta == cf.MetaProperties(1, 1, "", "gIODMx0B20PHQLXVLoRD7w")
    encoded = cf.encode_meta_properties(meta)
    assert b"\ncluster.id=\n" in encoded and cf.decode_meta_properties(encoded) == meta
    assert cf.decode_meta_properties(b"version=0\ncluster.id=\nbroker.id=0\n").cluster_id == ""
    assert cf.decode_meta_properties(b"version=0\nbroker.id=0\n").cluster_id is None


def test_version_is_trimmed_like_java():
    assert cf.decode_meta_properties(b"version = 1 \t\nnode.id=2\ncluster.id=c\n").version == 1


def test_encode_meta_properties_checks():
    with pytest.raises(ValueError):
        cf.encode_meta_properties(cf.MetaProperties(1, None, "c"))
    with pytest.raises(ValueError):
        cf.encode_meta_properties(cf.MetaProperties(0, 1, extra={"broker.id": "2"}))
    with pytest.raises(ValueError):
        cf.encode_meta_properties(cf.MetaProperties(2))
    with pytest.raises(CorruptDataError):
        cf.encode_meta_properties(cf.MetaProperties(0, directory_id="bad"))


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@st.composite
def meta_properties(draw):
    version = draw(st.sampled_from([0, 1]))
    node_id = draw(INT32) if version == 1 else draw(st.one_of(st.none(), INT32))
    cluster_id = draw(TEXT) if version == 1 else draw(st.one_of(st.none(), TEXT))
    raw_dir = draw(st.one_of(st.none(), st.binary(min_size=16, max_size=16)))
    directory_id = None if raw_dir is None else cf.encode_kafka_uuid(raw_dir)
    modeled = {"version", "broker.id" if version == 0 else "node.id", "cluster.id", "directory.id"}
    extra = draw(st.dictionaries(TEXT.filter(lambda k: k not in modeled), TEXT, max_size=4))
    return cf.MetaProperties(version, node_id, cluster_id, directory_id, extra)


@given(meta_properties(), st.one_of(st.none(), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)))
def test_meta_properties_round_trip(meta, date):
    encoded = cf.encode_meta_properties(meta, date_comment=date)
    assert encoded.isascii()
    assert cf.decode_meta_properties(encoded) == meta


@given(st.lists(st.tuples(TEXT, TEXT), max_size=6))
def test_java_properties_round_trip(items):
    expected = dict(items)
    loaded = {p.key: p.value for p in cf.load_java_properties(cf.encode_java_properties(items))}
    assert loaded == expected


# --- .kafka_cleanshutdown -----------------------------------------------------------------


def test_clean_shutdown():
    assert cf.decode_clean_shutdown(b"") == cf.CleanShutdown()
    assert cf.encode_clean_shutdown(cf.CleanShutdown()) == b""
    raw = b'{"version":0,"brokerEpoch":-1}'
    assert cf.decode_clean_shutdown(raw) == cf.CleanShutdown(0, -1)
    assert cf.encode_clean_shutdown(cf.CleanShutdown(0, -1)) == raw
    assert cf.decode_clean_shutdown(b'{"version":0,"brokerEpoch":null,"x":1}') == cf.CleanShutdown(0, None)
    for bad in (b"{", b"[]", b'{"brokerEpoch":"1"}', b'{"brokerEpoch":true}', b"\xff"):
        with pytest.raises(CorruptDataError):
            cf.decode_clean_shutdown(bad)
    with pytest.raises(ValueError):
        cf.encode_clean_shutdown(cf.CleanShutdown(None, 5))


@given(st.one_of(st.just(cf.CleanShutdown()), st.builds(cf.CleanShutdown, INT32, st.one_of(st.none(), INT64))))
def test_clean_shutdown_round_trip(content):
    assert cf.decode_clean_shutdown(cf.encode_clean_shutdown(content)) == content


# --- names --------------------------------------------------------------------------------


def test_partition_dir_names():
    assert cf.parse_partition_dir_name("__consumer_offsets-17") == cf.PartitionDirName("__consumer_offsets", 17)
    assert cf.parse_partition_dir_name("alter-reassignments-topic-1-0") == cf.PartitionDirName(
        "alter-reassignments-topic-1", 0
    )
    deleted = cf.parse_partition_dir_name("test-topic-0.2308294e39dc4a44ab8183f587805af2-delete")
    assert deleted == cf.PartitionDirName("test-topic", 0, "delete", "2308294e39dc4a44ab8183f587805af2")
    assert deleted.name == "test-topic-0.2308294e39dc4a44ab8183f587805af2-delete"
    future = cf.parse_partition_dir_name("a.b-3.0123456789abcdef0123456789abcdef-future")
    assert future == cf.PartitionDirName("a.b", 3, "future", "0123456789abcdef0123456789abcdef")
    assert cf.parse_partition_dir_name("t-1.x-stray").suffix == "stray"


@pytest.mark.parametrize(
    "name", ["", "topic", "-1", "topic-", "topic-x", "topic-1-delete", "t-1.x y-delete", "topic-99999999999"]
)
def test_bad_partition_dir_names(name):
    with pytest.raises(StoreLayoutError):
        cf.parse_partition_dir_name(name)


def test_delete_dir_name_is_capped_at_255():
    uid = "f" * 32
    name = cf.partition_dir_name("t" * 300, 7, "delete", uid)
    assert len(name) == 255 and name.endswith(f"-7.{uid}-delete")
    parsed = cf.parse_partition_dir_name(name)
    assert parsed.partition == 7 and parsed.topic == "t" * (255 - len(f"-7.{uid}-delete"))
    assert len(cf.partition_dir_name("t" * 300, 7, "future", uid)) > 255  # -future is not capped
    with pytest.raises(ValueError):
        cf.partition_dir_name("t", 0, "delete")


DIR_TOPICS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\x0b\f\r"), min_size=1, max_size=40)


@given(
    DIR_TOPICS,
    st.integers(0, 2**31 - 1),
    st.sampled_from([None, "delete", "future", "stray"]),
    st.text("0123456789abcdef", min_size=32, max_size=32),
)
def test_partition_dir_round_trip(topic, partition, suffix, uid):
    parsed = cf.parse_partition_dir_name(cf.partition_dir_name(topic, partition, suffix, uid if suffix else None))
    assert parsed == cf.PartitionDirName(topic, partition, suffix, uid if suffix else None)


# --- hostile input ------------------------------------------------------------------------


@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_mq_errors(blob):
    for decode in (
        cf.decode_offset_checkpoint,
        cf.decode_leader_epoch_checkpoint,
        cf.decode_partition_metadata,
        cf.decode_meta_properties,
        cf.decode_clean_shutdown,
        cf.load_java_properties,
    ):
        try:
            decode(blob)
        except MqError:
            pass


@given(st.text(max_size=80))
def test_arbitrary_names_raise_only_mq_errors(name):
    try:
        cf.parse_partition_dir_name(name)
    except MqError:
        pass


@given(st.text(max_size=200))
def test_arbitrary_text_checkpoints(text):
    for decode in (cf.decode_offset_checkpoint, cf.decode_leader_epoch_checkpoint, cf.decode_partition_metadata):
        try:
            decode(("0\n1\n" + text).encode("utf-8", "surrogatepass"))
        except MqError:
            pass


# --- real captures ------------------------------------------------------------------------


def _real(name_test):
    return sorted(p for p in real_path("kafka").rglob("*") if p.is_file() and name_test(p.name))


def test_every_real_offset_checkpoint_decodes_and_re_encodes():
    files = _real(lambda n: n.removesuffix(".tmp") in cf.OFFSET_CHECKPOINT_FILES)
    assert len(files) >= 100
    for path in files:
        data = path.read_bytes()
        cp = cf.decode_offset_checkpoint(data)
        if data:
            assert cf.encode_offset_checkpoint(cp) == data, path


def test_every_real_leader_epoch_checkpoint_decodes_and_re_encodes():
    files = _real(lambda n: n == cf.LEADER_EPOCH_CHECKPOINT)
    assert len(files) >= 90
    for path in files:
        data = path.read_bytes()
        cp = cf.decode_leader_epoch_checkpoint(data)
        if data:
            assert cf.encode_leader_epoch_checkpoint(cp) == data, path


def test_every_real_partition_metadata_decodes_and_re_encodes():
    files = _real(lambda n: n == cf.PARTITION_METADATA)
    assert len(files) >= 40
    for path in files:
        data = path.read_bytes()
        assert cf.encode_partition_metadata(cf.decode_partition_metadata(data)) == data, path


def test_every_real_meta_properties_decodes():
    # cluster.id may be missing or empty in real files, and Kafka accepts both:
    # MetaProperties.Builder reads it as Optional.ofNullable(getProperty("cluster.id")), so only a
    # missing key is absent; build() and MetaPropertiesEnsemble.verify() require it to be present
    # in a v1 file, never non-empty.  userchic-MyMicroservices (cp-kafka KRaft) has v1 with an empty
    # `cluster.id=`; iechenyb-data, mscaldas2012 (Kafka 2.1) and xpxwo100 (0.10.1) are v0 files
    # written before brokers stored cluster.id (2.4), so they have none.
    files = _real(lambda n: n == cf.META_PROPERTIES)
    assert len(files) >= 20
    versions = set()
    for path in files:
        data = path.read_bytes()
        meta = cf.decode_meta_properties(data)
        versions.add(meta.version)
        assert meta.node_id is not None and not meta.extra, path
        if meta.cluster_id is None:
            # truly absent (not an empty value), and only a v0 file may lack it
            assert meta.version == 0, path
            assert cf.CLUSTER_ID_PROP not in {p.key for p in cf.load_java_properties(data)}, path
        assert cf.decode_meta_properties(cf.encode_meta_properties(meta)) == meta
    assert versions == {0, 1}


def test_every_real_clean_shutdown_decodes():
    # Both formats occur in real log dirs: the 0-byte marker (Kafka <= 3.6, rjmfernandes-flink-on-prem
    # is CP 7.6.0) and the JSON one, with brokerEpoch -1 from Kafka's own test brokers
    # (apache-kafka/) and real epochs from production brokers (e.g. 6326 from apache/kafka:4.0.0).
    files = _real(lambda n: n == cf.CLEAN_SHUTDOWN)
    assert len(files) >= 3
    for path in files:
        data = path.read_bytes()
        content = cf.decode_clean_shutdown(data)
        if not data:
            assert content == cf.CleanShutdown(), path
        else:
            assert content.version == 0 and content.broker_epoch is not None, path
        if "apache-kafka" in path.parts:
            assert content == cf.CleanShutdown(0, -1), path
        assert cf.encode_clean_shutdown(content) == data, path


def test_every_real_directory_name_parses():
    root = real_path("kafka")
    partition_dirs = {p.parent for p in root.rglob("*") if p.name in (cf.LEADER_EPOCH_CHECKPOINT, cf.PARTITION_METADATA)}
    assert len(partition_dirs) >= 50
    for directory in partition_dirs:
        parsed = cf.parse_partition_dir_name(directory.name)
        assert parsed.name == directory.name


def test_real_files_by_hand():
    # SOURCE.md (DonaldY-kafka-2.7.1): cleaner-offset-checkpoint holds
    # __consumer_offsets 28 2, 17 1, 39 18; replication-offset-checkpoint 53 entries;
    # log-start-offset-checkpoint 0 entries; meta.properties version=0, broker.id=0.
    logs = real_path("kafka", "DonaldY-kafka-2.7.1", "kafka-logs")
    cleaner = cf.decode_offset_checkpoint((logs / "cleaner-offset-checkpoint").read_bytes())
    assert cleaner.as_dict() == {("__consumer_offsets", 28): 2, ("__consumer_offsets", 17): 1, ("__consumer_offsets", 39): 18}
    assert len(cf.decode_offset_checkpoint((logs / "replication-offset-checkpoint").read_bytes()).entries) == 53
    assert cf.decode_offset_checkpoint((logs / "log-start-offset-checkpoint").read_bytes()).entries == ()
    meta = cf.decode_meta_properties((logs / "meta.properties").read_bytes())
    assert meta == cf.MetaProperties(0, 0, "d0053poFTbGwSWThjV1DEg")
    # Jeong-Rae-KafkaDemo: KRaft v1 meta.properties, 5 leader epochs, the fixed metadata topic id.
    kraft = real_path("kafka", "Jeong-Rae-KafkaDemo", "kraft-combined-logs")
    assert cf.decode_meta_properties((kraft / "meta.properties").read_bytes()) == cf.MetaProperties(
        1, 1, "hSCzevIQRUa-ojqTd_8C5w"
    )
    epochs = cf.decode_leader_epoch_checkpoint((kraft / "__cluster_metadata-0" / "leader-epoch-checkpoint").read_bytes())
    assert epochs.entries[-1] == cf.EpochEntry(6, 712) and len(epochs.entries) == 5
    metadata = cf.decode_partition_metadata((kraft / "__cluster_metadata-0" / "partition.metadata").read_bytes())
    assert metadata.topic_id == cf.METADATA_TOPIC_ID
    # apache-kafka 37d8903a58: v1 with directory.id (KIP-858)
    v1 = real_path("kafka", "apache-kafka", "37d8903a58", "tools", "data", "kafka-5400443850796749907", "meta.properties")
    assert cf.decode_meta_properties(v1.read_bytes()).directory_id == "UDsAHoJmRmGkfOLp2W80Uw"
