"""Keys and values of Kafka's internal topics (records inside v2 batches of these partitions).

``__consumer_offsets`` (``group-coordinator/.../common/message/*.json``): key and value each
start with an int16 schema version; a null value is a tombstone (offset deleted, group gone)::

    key version 0, 1   OffsetCommitKey      group string, topic string, partition int32
    key version 2      GroupMetadataKey     group string
    key version 3..    KIP-848/932 records  (consumer/share group records; named, kept raw)

    OffsetCommitValue v0..v4      offset int64, [v3+ leader_epoch int32], metadata string,
                                  commit_timestamp int64, [v1 only: expire_timestamp int64],
                                  [v4+: tagged fields]
    GroupMetadataValue v0..v4     protocol_type string, generation int32, protocol string?,
                                  leader string?, [v2+ current_state_timestamp int64],
                                  members [member_id, [v3+ group_instance_id?], client_id,
                                  client_host, [v1+ rebalance_timeout int32], session_timeout
                                  int32, subscription bytes, assignment bytes]; v4+ flexible

``__transaction_state`` (``transaction-coordinator/.../TransactionLog*.json``)::

    key   version int16 (0), transactional_id string
    value version int16 (0..1; v1 flexible), producer_id int64, producer_epoch int16,
          transaction_timeout_ms int32, transaction_status int8 (0 Empty, 1 Ongoing,
          2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort, 6 Dead,
          7 PrepareEpochFence), transaction_partitions [topic string, partition_ids [int32]]?,
          transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64;
          v1 tagged: 0 previous_producer_id, 1 next_producer_id, 2 client_transaction_version

``__cluster_metadata`` (KRaft, ``metadata/.../common/metadata/*.json``): key null, value =
uvarint frame version (1) + uvarint api key (record type) + uvarint record version + the
record (flexible struct).  ``METADATA_RECORD_TYPES`` names every api key.

Strings are UTF-8 with an int16 length (compact uvarint length+1 in flexible versions).  No
checksum at this level: the enclosing batch's CRC-32C covers these bytes.  A value cut short
raises ``TruncatedDataError``; trailing bytes after a struct raise ``CorruptDataError``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtool.errors import CorruptDataError, UnsupportedFormatError
from mqtool.formats._binary import I16, I64, Buffer
from mqtool.formats.kafka._schema import Reader, TaggedFields, Writer, read_version_prefix

# --- __consumer_offsets ----------------------------------------------------------------------

#: Key schema versions ("record types") of the group coordinator at the spec snapshot.
GROUP_COORDINATOR_KEY_TYPES = {
    0: "OffsetCommitKey",
    1: "OffsetCommitKey",
    2: "GroupMetadataKey",
    3: "ConsumerGroupMetadataKey",
    4: "ConsumerGroupPartitionMetadataKey",
    5: "ConsumerGroupMemberMetadataKey",
    6: "ConsumerGroupTargetAssignmentMetadataKey",
    7: "ConsumerGroupTargetAssignmentMemberKey",
    8: "ConsumerGroupCurrentMemberAssignmentKey",
    9: "ShareGroupPartitionMetadataKey",
    10: "ShareGroupMemberMetadataKey",
    11: "ShareGroupMetadataKey",
    12: "ShareGroupTargetAssignmentMetadataKey",
    13: "ShareGroupTargetAssignmentMemberKey",
    14: "ShareGroupCurrentMemberAssignmentKey",
    15: "ShareGroupStatePartitionMetadataKey",
}
OFFSET_COMMIT_VALUE_VERSIONS = range(0, 5)
GROUP_METADATA_VALUE_VERSIONS = range(0, 5)


@dataclass(frozen=True)
class OffsetCommitKey:
    version: int
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str
    version: int = 2


@dataclass(frozen=True)
class CoordinatorRecordKey:
    """A group-coordinator key this module does not decode (KIP-848/932 record types)."""

    version: int
    data: bytes

    @property
    def name(self) -> str:
        return GROUP_COORDINATOR_KEY_TYPES.get(self.version, "UnknownKey")


@dataclass(frozen=True)
class OffsetCommitValue:
    version: int
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None
    rebalance_timeout: int = -1
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class GroupMetadataValue:
    version: int
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...] = ()
    current_state_timestamp: int = -1
    tagged_fields: TaggedFields = ()


ConsumerOffsetsKey = OffsetCommitKey | GroupMetadataKey | CoordinatorRecordKey
ConsumerOffsetsValue = OffsetCommitValue | GroupMetadataValue | bytes | None


def _need_bytes(data: Buffer | None, what: str) -> Buffer:
    if data is None:
        raise CorruptDataError(expected=f"a {what}", found="null")
    return data


def decode_consumer_offsets_key(key: Buffer | None) -> ConsumerOffsetsKey:
    """``GroupMetadataManager.readMessageKey`` / ``CoordinatorRecordSerde``."""
    key = _need_bytes(key, "__consumer_offsets key")
    version = read_version_prefix(key, "__consumer_offsets key")
    if version in (0, 1):
        r = Reader(key, 2, what="OffsetCommitKey")
        out: ConsumerOffsetsKey = OffsetCommitKey(version, r.string("group", False), r.string("topic", False), r.int32("partition"))
    elif version == 2:
        r = Reader(key, 2, what="GroupMetadataKey")
        out = GroupMetadataKey(r.string("group", False), version)
    elif version >= 3:
        return CoordinatorRecordKey(version, bytes(key[2:]))
    else:
        raise CorruptDataError(position=0, expected="a __consumer_offsets key version >= 0", found=str(version))
    r.finish()
    return out


def encode_consumer_offsets_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    w = Writer()
    w.int16(key.version)
    if isinstance(key, OffsetCommitKey):
        if key.version not in (0, 1):
            raise ValueError("OffsetCommitKey versions are 0 and 1")
        w.string(key.group, False)
        w.string(key.topic, False)
        w.int32(key.partition)
    else:
        if key.version != 2:
            raise ValueError("GroupMetadataKey is version 2")
        w.string(key.group, False)
    return w.getvalue()


def decode_offset_commit_value(value: Buffer) -> OffsetCommitValue:
    version = read_version_prefix(value, "OffsetCommitValue")
    if version not in OFFSET_COMMIT_VALUE_VERSIONS:
        raise UnsupportedFormatError(position=0, expected="OffsetCommitValue version 0..4", found=str(version))
    flexible = version >= 4
    r = Reader(value, 2, what="OffsetCommitValue")
    offset = r.int64("offset")
    leader_epoch = r.int32("leader_epoch") if version >= 3 else -1
    metadata = r.string("metadata", flexible)
    commit_timestamp = r.int64("commit_timestamp")
    expire_timestamp = r.int64("expire_timestamp") if version == 1 else -1
    tagged = r.unknown_tagged_fields() if flexible else ()
    r.finish()
    return OffsetCommitValue(version, offset, metadata, commit_timestamp, leader_epoch, expire_timestamp, tagged)


def encode_offset_commit_value(v: OffsetCommitValue) -> bytes:
    if v.version not in OFFSET_COMMIT_VALUE_VERSIONS:
        raise ValueError("OffsetCommitValue versions are 0..4")
    flexible = v.version >= 4
    w = Writer()
    w.int16(v.version)
    w.int64(v.offset)
    if v.version >= 3:
        w.int32(v.leader_epoch)
    w.string(v.metadata, flexible)
    w.int64(v.commit_timestamp)
    if v.version == 1:
        w.int64(v.expire_timestamp)
    if flexible:
        w.tagged_fields(v.tagged_fields)
    return w.getvalue()


def decode_group_metadata_value(value: Buffer) -> GroupMetadataValue:
    version = read_version_prefix(value, "GroupMetadataValue")
    if version not in GROUP_METADATA_VALUE_VERSIONS:
        raise UnsupportedFormatError(position=0, expected="GroupMetadataValue version 0..4", found=str(version))
    flexible = version >= 4
    r = Reader(value, 2, what="GroupMetadataValue")
    protocol_type = r.string("protocol_type", flexible)
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol", flexible)
    leader = r.nullable_string("leader", flexible)
    current_state_timestamp = r.int64("current_state_timestamp") if version >= 2 else -1
    members = []
    for _ in range(r.array("members", flexible, 4)):
        member_id = r.string("member_id", flexible)
        group_instance_id = r.nullable_string("group_instance_id", flexible) if version >= 3 else None
        client_id = r.string("client_id", flexible)
        client_host = r.string("client_host", flexible)
        rebalance_timeout = r.int32("rebalance_timeout") if version >= 1 else -1
        session_timeout = r.int32("session_timeout")
        subscription = r.bytes_field("subscription", flexible)
        assignment = r.bytes_field("assignment", flexible)
        member_tags = r.unknown_tagged_fields() if flexible else ()
        members.append(
            MemberMetadata(
                member_id,
                client_id,
                client_host,
                session_timeout,
                subscription,
                assignment,
                group_instance_id,
                rebalance_timeout,
                member_tags,
            )
        )
    tagged = r.unknown_tagged_fields() if flexible else ()
    r.finish()
    return GroupMetadataValue(version, protocol_type, generation, protocol, leader, tuple(members), current_state_timestamp, tagged)


def encode_group_metadata_value(v: GroupMetadataValue) -> bytes:
    if v.version not in GROUP_METADATA_VALUE_VERSIONS:
        raise ValueError("GroupMetadataValue versions are 0..4")
    flexible = v.version >= 4
    w = Writer()
    w.int16(v.version)
    w.string(v.protocol_type, flexible)
    w.int32(v.generation)
    w.nullable_string(v.protocol, flexible)
    w.nullable_string(v.leader, flexible)
    if v.version >= 2:
        w.int64(v.current_state_timestamp)
    w.array(len(v.members), flexible)
    for m in v.members:
        w.string(m.member_id, flexible)
        if v.version >= 3:
            w.nullable_string(m.group_instance_id, flexible)
        w.string(m.client_id, flexible)
        w.string(m.client_host, flexible)
        if v.version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_field(m.subscription, flexible)
        w.bytes_field(m.assignment, flexible)
        if flexible:
            w.tagged_fields(m.tagged_fields)
    if flexible:
        w.tagged_fields(v.tagged_fields)
    return w.getvalue()


def decode_consumer_offsets_value(key: ConsumerOffsetsKey, value: Buffer | None) -> ConsumerOffsetsValue:
    """The value for ``key``: None is a tombstone; raw bytes for key types not decoded here."""
    if value is None:
        return None
    if isinstance(key, OffsetCommitKey):
        return decode_offset_commit_value(value)
    if isinstance(key, GroupMetadataKey):
        return decode_group_metadata_value(value)
    return bytes(value)


def decode_consumer_offsets_record(key: Buffer | None, value: Buffer | None) -> tuple[ConsumerOffsetsKey, ConsumerOffsetsValue]:
    k = decode_consumer_offsets_key(key)
    return k, decode_consumer_offsets_value(k, value)


def encode_consumer_offsets_value(value: OffsetCommitValue | GroupMetadataValue) -> bytes:
    if isinstance(value, OffsetCommitValue):
        return encode_offset_commit_value(value)
    return encode_group_metadata_value(value)


# --- __transaction_state ---------------------------------------------------------------------

TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
_TAG_PREVIOUS_PRODUCER_ID = 0
_TAG_NEXT_PRODUCER_ID = 1
_TAG_CLIENT_TRANSACTION_VERSION = 2


@dataclass(frozen=True)
class TransactionLogKey:
    transactional_id: str
    version: int = 0


@dataclass(frozen=True)
class TopicPartitions:
    topic: str
    partition_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class TransactionLogValue:
    version: int
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    transaction_partitions: tuple[TopicPartitions, ...] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0
    tagged_fields: TaggedFields = ()

    @property
    def state(self) -> str:
        """The ``TransactionState`` name (``Unknown(N)`` for an id not defined upstream)."""
        return TRANSACTION_STATES.get(self.transaction_status, f"Unknown({self.transaction_status})")


def decode_transaction_log_key(key: Buffer | None) -> TransactionLogKey:
    key = _need_bytes(key, "__transaction_state key")
    version = read_version_prefix(key, "TransactionLogKey")
    if version != 0:
        raise UnsupportedFormatError(position=0, expected="TransactionLogKey version 0", found=str(version))
    r = Reader(key, 2, what="TransactionLogKey")
    out = TransactionLogKey(r.string("transactional_id", False), version)
    r.finish()
    return out


def encode_transaction_log_key(key: TransactionLogKey) -> bytes:
    w = Writer()
    w.int16(key.version)
    w.string(key.transactional_id, False)
    return w.getvalue()


def decode_transaction_log_value(value: Buffer) -> TransactionLogValue:
    version = read_version_prefix(value, "TransactionLogValue")
    if version not in (0, 1):
        raise UnsupportedFormatError(position=0, expected="TransactionLogValue version 0..1", found=str(version))
    flexible = version >= 1
    r = Reader(value, 2, what="TransactionLogValue")
    producer_id = r.int64("producer_id")
    producer_epoch = r.int16("producer_epoch")
    timeout = r.int32("transaction_timeout_ms")
    status = r.int8("transaction_status")
    count = r.nullable_array("transaction_partitions", flexible, 2)
    partitions = None
    if count is not None:
        items = []
        for _ in range(count):
            topic = r.string("topic", flexible)
            ids = tuple(r.int32("partition_id") for _ in range(r.array("partition_ids", flexible, 4)))
            if flexible:
                r.unknown_tagged_fields()
            items.append(TopicPartitions(topic, ids))
        partitions = tuple(items)
    last_update = r.int64("transaction_last_update_timestamp_ms")
    start = r.int64("transaction_start_timestamp_ms")
    previous_pid, next_pid, client_version, unknown = -1, -1, 0, []
    if flexible:
        for tag, pos, data in r.tagged_fields():
            sub = Reader(data, what=f"TransactionLogValue tag {tag}")
            try:
                if tag == _TAG_PREVIOUS_PRODUCER_ID:
                    previous_pid = sub.int64("previous_producer_id")
                elif tag == _TAG_NEXT_PRODUCER_ID:
                    next_pid = sub.int64("next_producer_id")
                elif tag == _TAG_CLIENT_TRANSACTION_VERSION:
                    client_version = sub.int16("client_transaction_version")
                else:
                    unknown.append((tag, data))
                    continue
                sub.finish()
            except CorruptDataError as exc:
                raise exc.at(None, pos) from None
    r.finish()
    return TransactionLogValue(
        version,
        producer_id,
        producer_epoch,
        timeout,
        status,
        partitions,
        last_update,
        start,
        previous_pid,
        next_pid,
        client_version,
        tuple(unknown),
    )


def encode_transaction_log_value(v: TransactionLogValue) -> bytes:
    if v.version not in (0, 1):
        raise ValueError("TransactionLogValue versions are 0..1")
    flexible = v.version >= 1
    w = Writer()
    w.int16(v.version)
    w.int64(v.producer_id)
    w.int16(v.producer_epoch)
    w.int32(v.transaction_timeout_ms)
    w.int8(v.transaction_status)
    if v.transaction_partitions is None:
        w.array(None, flexible)
    else:
        w.array(len(v.transaction_partitions), flexible)
        for tp in v.transaction_partitions:
            w.string(tp.topic, flexible)
            w.array(len(tp.partition_ids), flexible)
            for pid in tp.partition_ids:
                w.int32(pid)
            if flexible:
                w.tagged_fields(())
    w.int64(v.transaction_last_update_timestamp_ms)
    w.int64(v.transaction_start_timestamp_ms)
    if flexible:
        tags = list(v.tagged_fields)
        if v.previous_producer_id != -1:
            tags.append((_TAG_PREVIOUS_PRODUCER_ID, I64.pack(v.previous_producer_id)))
        if v.next_producer_id != -1:
            tags.append((_TAG_NEXT_PRODUCER_ID, I64.pack(v.next_producer_id)))
        if v.client_transaction_version != 0:
            tags.append((_TAG_CLIENT_TRANSACTION_VERSION, I16.pack(v.client_transaction_version)))
        w.tagged_fields(tags)
    return w.getvalue()


# --- __cluster_metadata ----------------------------------------------------------------------

METADATA_FRAME_VERSION = 1

#: api key -> record type (``metadata/src/main/resources/common/metadata/*.json``; 6 and 16
#: were removed record types, kept so old logs still name them).
METADATA_RECORD_TYPES = {
    0: "RegisterBrokerRecord",
    1: "UnregisterBrokerRecord",
    2: "TopicRecord",
    3: "PartitionRecord",
    4: "ConfigRecord",
    5: "PartitionChangeRecord",
    6: "AccessControlRecord",
    7: "FenceBrokerRecord",
    8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord",
    10: "DelegationTokenRecord",
    11: "UserScramCredentialRecord",
    12: "FeatureLevelRecord",
    14: "ClientQuotaRecord",
    15: "ProducerIdsRecord",
    16: "RemoveFeatureLevelRecord",
    17: "BrokerRegistrationChangeRecord",
    18: "AccessControlEntryRecord",
    19: "RemoveAccessControlEntryRecord",
    20: "NoOpRecord",
    21: "ZkMigrationStateRecord",
    22: "RemoveUserScramCredentialRecord",
    23: "BeginTransactionRecord",
    24: "EndTransactionRecord",
    25: "AbortTransactionRecord",
    26: "RemoveDelegationTokenRecord",
    27: "RegisterControllerRecord",
}
METADATA_RECORD_API_KEYS = {name: key for key, name in METADATA_RECORD_TYPES.items()}


@dataclass(frozen=True)
class MetadataRecord:
    """A framed ``__cluster_metadata`` record: type, version and the undecoded struct bytes."""

    api_key: int
    version: int
    data: bytes
    frame_version: int = METADATA_FRAME_VERSION

    @property
    def name(self) -> str:
        return METADATA_RECORD_TYPES.get(self.api_key, f"UnknownRecord({self.api_key})")


@dataclass(frozen=True)
class TopicRecord:
    name: str
    topic_id: str
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class FeatureLevelRecord:
    name: str
    feature_level: int
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class RemoveTopicRecord:
    topic_id: str
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConfigRecord:
    """``ConfigRecord`` (v0, flexible): a config set (``value``) or deleted (None) on a resource
    (``resource_type`` 2: a topic named ``resource_name``; 4: a broker, "" the cluster default)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None
    tagged_fields: TaggedFields = ()


MetadataPayload = TopicRecord | FeatureLevelRecord | RemoveTopicRecord | ConfigRecord


def decode_metadata_record(value: Buffer | None) -> MetadataRecord:
    """``AbstractApiMessageSerde.read``: frame version 1, api key, version, then the struct."""
    value = _need_bytes(value, "__cluster_metadata record value")
    r = Reader(value, what="metadata record frame")
    frame_version = r.uvarint("frame_version")
    if frame_version != METADATA_FRAME_VERSION:
        raise CorruptDataError(position=0, expected=f"metadata frame version {METADATA_FRAME_VERSION}", found=str(frame_version))
    key_pos = r.pos
    api_key = r.uvarint("api_key")
    version_pos = r.pos
    version = r.uvarint("version")
    if api_key > 32767:
        raise CorruptDataError(position=key_pos, expected="a metadata record type <= 32767", found=str(api_key))
    if version > 32767:
        raise CorruptDataError(position=version_pos, expected="a metadata record version <= 32767", found=str(version))
    return MetadataRecord(api_key, version, bytes(value[r.pos :]), frame_version)


def encode_metadata_record(record: MetadataRecord) -> bytes:
    w = Writer()
    w.uvarint(record.frame_version)
    w.uvarint(record.api_key)
    w.uvarint(record.version)
    return w.getvalue() + record.data


def decode_metadata_payload(record: MetadataRecord) -> MetadataPayload | bytes:
    """The struct of the few record types decoded here; the raw bytes for any other."""
    r = Reader(record.data, what=record.name)
    if record.name == "TopicRecord":
        out: MetadataPayload = TopicRecord(r.string("name", True), r.uuid("topic_id"), r.unknown_tagged_fields())
    elif record.name == "FeatureLevelRecord":
        out = FeatureLevelRecord(r.string("name", True), r.int16("feature_level"), r.unknown_tagged_fields())
    elif record.name == "RemoveTopicRecord":
        out = RemoveTopicRecord(r.uuid("topic_id"), r.unknown_tagged_fields())
    elif record.name == "ConfigRecord":
        out = ConfigRecord(r.int8("resource_type"), r.string("resource_name", True), r.string("name", True), r.nullable_string("value", True), r.unknown_tagged_fields())
    else:
        return record.data
    r.finish()
    return out


def encode_metadata_payload(payload: MetadataPayload) -> bytes:
    w = Writer()
    if isinstance(payload, ConfigRecord):
        w.int8(payload.resource_type)
        w.nullable_string(payload.resource_name, True)
        w.nullable_string(payload.name, True)
        w.nullable_string(payload.value, True)
    elif isinstance(payload, TopicRecord):
        w.string(payload.name, True)
        w.uuid(payload.topic_id)
    elif isinstance(payload, FeatureLevelRecord):
        w.string(payload.name, True)
        w.int16(payload.feature_level)
    else:
        w.uuid(payload.topic_id)
    w.tagged_fields(payload.tagged_fields)
    return w.getvalue()


__all__ = [
    "ConfigRecord",
    "MetadataPayload",
    "GROUP_COORDINATOR_KEY_TYPES",
    "OffsetCommitKey",
    "GroupMetadataKey",
    "CoordinatorRecordKey",
    "OffsetCommitValue",
    "MemberMetadata",
    "GroupMetadataValue",
    "decode_consumer_offsets_key",
    "encode_consumer_offsets_key",
    "decode_offset_commit_value",
    "encode_offset_commit_value",
    "decode_group_metadata_value",
    "encode_group_metadata_value",
    "decode_consumer_offsets_value",
    "encode_consumer_offsets_value",
    "decode_consumer_offsets_record",
    "TRANSACTION_STATES",
    "TransactionLogKey",
    "TopicPartitions",
    "TransactionLogValue",
    "decode_transaction_log_key",
    "encode_transaction_log_key",
    "decode_transaction_log_value",
    "encode_transaction_log_value",
    "METADATA_RECORD_TYPES",
    "METADATA_RECORD_API_KEYS",
    "MetadataRecord",
    "TopicRecord",
    "FeatureLevelRecord",
    "RemoveTopicRecord",
    "decode_metadata_record",
    "encode_metadata_record",
    "decode_metadata_payload",
    "encode_metadata_payload",
]
