"""``__consumer_offsets`` records, printed as Kafka 3.9's ``kafka-dump-log.sh --offsets-decoder`` prints them.

Kafka 3.9 (``DumpLogSegments.OffsetsMessageParser`` over ``GroupCoordinatorRecordSerde``/
``CoordinatorRecordSerde.deserialize``):

* the key starts with an int16 *record type* (the "key version"): 0 and 1 OffsetCommitKey, 2
  GroupMetadataKey, 3-8 the KIP-848 consumer-group records; the key message is read at that type as
  its version, the value message at its own int16 version (no range check: Kafka reads an unknown
  higher version with the fields of the versions it knows);
* key ``{"type":"<type>","data":<key JSON>}``, value ``{"version":"<version>","data":<value JSON>}``
  (``*JsonConverter.write``), ``<DELETE>`` for a tombstone;
* GroupMetadataValue members' ``subscription``/``assignment`` bytes are replaced by their
  ConsumerProtocolSubscription/Assignment JSON when ``protocolType`` is ``consumer`` and they decode
  (int16 version + message); otherwise they stay base64;
* ``Unknown record type N at offset O, skipping.`` for any other type (3.9's parser has no case for the
  KIP-932 share-group records 9-14: KAFKA-16733 added them in 4.0), and
  ``Error at offset O, skipping. <message>`` when a read fails (no value printed);
* a record without a key makes Kafka throw and stop: kafkatool raises :class:`MissingKeyError` with
  Kafka's message instead, for the caller to report.

The record definitions below are transcribed from ``group-coordinator/src/main/resources/common/message``
as of 3.9 and ``clients/src/main/resources/common/message/ConsumerProtocol*.json`` (checked against the
``SCHEMAS`` of kafka-clients 3.9.1).
"""

from __future__ import annotations

import struct
from typing import Any

from kafkatool.decoders.message import (
    ArrayOf,
    F,
    FieldSpec,
    MessageError,
    MessageSpec,
    StructSpec,
    java_string_hash,
    read_message,
    to_json,
    version_prefixed,
    write_message,
)
from kafkatool.errors import InvalidRecordError

# --- group-coordinator/src/main/resources/common/message (3.9) -------------------------------------------

OFFSET_COMMIT_KEY = MessageSpec.of("OffsetCommitKey", "0-1", "none", [
    F("group", "string", "0+"),
    F("topic", "string", "0+"),
    F("partition", "int32", "0+"),
])
# Version 4 is the first flexible version (KIP-915); expireTimestamp exists in version 1 only.
OFFSET_COMMIT_VALUE = MessageSpec.of("OffsetCommitValue", "0-4", "4+", [
    F("offset", "int64", "0+"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string", "0+"),
    F("commitTimestamp", "int64", "0+"),
    F("expireTimestamp", "int64", "1", default=-1),
])
GROUP_METADATA_KEY = MessageSpec.of("GroupMetadataKey", "2", "none", [
    F("group", "string", "2"),
])
MEMBER_METADATA = StructSpec("MemberMetadata", (
    F("memberId", "string", "0+"),
    F("groupInstanceId", "string", "3+", nullable="3+", default=None),
    F("clientId", "string", "0+"),
    F("clientHost", "string", "0+"),
    F("rebalanceTimeout", "int32", "1+"),
    F("sessionTimeout", "int32", "0+"),
    F("subscription", "bytes", "0+"),
    F("assignment", "bytes", "0+"),
))
GROUP_METADATA_VALUE = MessageSpec.of("GroupMetadataValue", "0-4", "4+", [
    F("protocolType", "string", "0+"),
    F("generation", "int32", "0+"),
    F("protocol", "string", "0+", nullable="0+"),
    F("leader", "string", "0+", nullable="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", ArrayOf(MEMBER_METADATA), "0+"),
])


def _group_key(name: str, record_type: int, member: bool = False) -> MessageSpec:
    v = str(record_type)
    fields = [F("GroupId", "string", v)] + ([F("MemberId", "string", v)] if member else [])
    return MessageSpec.of(name, v, "none", fields)


CONSUMER_GROUP_METADATA_KEY = _group_key("ConsumerGroupMetadataKey", 3)
CONSUMER_GROUP_METADATA_VALUE = MessageSpec.of("ConsumerGroupMetadataValue", "0", "0+", [
    F("Epoch", "int32", "0+"),
])
CONSUMER_GROUP_PARTITION_METADATA_KEY = _group_key("ConsumerGroupPartitionMetadataKey", 4)
_PARTITION_METADATA = StructSpec("PartitionMetadata", (
    F("Partition", "int32", "0+"),
    F("Racks", ArrayOf("string"), "0+"),
))
_TOPIC_METADATA = StructSpec("TopicMetadata", (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
    F("NumPartitions", "int32", "0+"),
    F("PartitionMetadata", ArrayOf(_PARTITION_METADATA), "0+"),
))
CONSUMER_GROUP_PARTITION_METADATA_VALUE = MessageSpec.of("ConsumerGroupPartitionMetadataValue", "0", "0+", [
    F("Topics", ArrayOf(_TOPIC_METADATA), "0+"),
])
CONSUMER_GROUP_MEMBER_METADATA_KEY = _group_key("ConsumerGroupMemberMetadataKey", 5, member=True)
_CLASSIC_PROTOCOL = StructSpec("ClassicProtocol", (
    F("Name", "string", "0+"),
    F("Metadata", "bytes", "0+"),
))
_CLASSIC_MEMBER_METADATA = StructSpec("ClassicMemberMetadata", (
    F("SessionTimeoutMs", "int32", "0+"),
    F("SupportedProtocols", ArrayOf(_CLASSIC_PROTOCOL), "0+"),
))
CONSUMER_GROUP_MEMBER_METADATA_VALUE = MessageSpec.of("ConsumerGroupMemberMetadataValue", "0", "0+", [
    F("InstanceId", "string", "0+", nullable="0+"),
    F("RackId", "string", "0+", nullable="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("SubscribedTopicNames", ArrayOf("string"), "0+"),
    F("SubscribedTopicRegex", "string", "0+", nullable="0+"),
    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
    F("ServerAssignor", "string", "0+", nullable="0+"),
    # KIP-848 online migration (3.8): a tagged, nullable struct (KIP-893 encoding).
    F("ClassicMemberMetadata", _CLASSIC_MEMBER_METADATA, "0+", nullable="0+", tagged="0+", tag=0, default=None),
])
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key("ConsumerGroupTargetAssignmentMetadataKey", 6)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = MessageSpec.of(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", [F("AssignmentEpoch", "int32", "0+")])
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key("ConsumerGroupTargetAssignmentMemberKey", 7, member=True)
_TOPIC_PARTITION_IDS = StructSpec("TopicPartition", (
    F("TopicId", "uuid", "0+"),
    F("Partitions", ArrayOf("int32"), "0+"),
))
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = MessageSpec.of(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+", [F("TopicPartitions", ArrayOf(_TOPIC_PARTITION_IDS), "0+")])
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key("ConsumerGroupCurrentMemberAssignmentKey", 8, member=True)
_TOPIC_PARTITIONS = StructSpec("TopicPartitions", (
    F("TopicId", "uuid", "0+"),
    F("Partitions", ArrayOf("int32"), "0+"),
))
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = MessageSpec.of(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+", [
        F("MemberEpoch", "int32", "0+"),
        F("PreviousMemberEpoch", "int32", "0+"),
        F("State", "int8", "0+"),
        F("AssignedPartitions", ArrayOf(_TOPIC_PARTITIONS), "0+"),
        F("PartitionsPendingRevocation", ArrayOf(_TOPIC_PARTITIONS), "0+"),
    ])

# --- clients/src/main/resources/common/message (3.9: versions 0-3, not flexible) -------------------------

_CP_TOPIC_PARTITION = StructSpec("TopicPartition", (
    F("Topic", "string", "0+"),
    F("Partitions", ArrayOf("int32"), "0+"),
))
CONSUMER_PROTOCOL_SUBSCRIPTION = MessageSpec.of("ConsumerProtocolSubscription", "0-3", "none", [
    F("Topics", ArrayOf("string"), "0+"),
    F("UserData", "bytes", "0+", nullable="0+", default=None),
    F("OwnedPartitions", ArrayOf(_CP_TOPIC_PARTITION), "1+"),
    F("GenerationId", "int32", "2+", default=-1),
    F("RackId", "string", "3+", nullable="3+", default=None),
])
CONSUMER_PROTOCOL_ASSIGNMENT = MessageSpec.of("ConsumerProtocolAssignment", "0-3", "none", [
    F("AssignedPartitions", ArrayOf(_CP_TOPIC_PARTITION), "0+"),
    F("UserData", "bytes", "0+", nullable="0+", default=None),
])

#: record type (key version) -> (key, value) definitions, as GroupCoordinatorRecordSerde maps them in 3.9.
RECORD_TYPES: dict[int, tuple[MessageSpec, MessageSpec]] = {
    0: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
}

#: ``ConsumerProtocol.PROTOCOL_TYPE``
CONSUMER_PROTOCOL_TYPE = "consumer"
DELETE = "<DELETE>"


class MissingKeyError(InvalidRecordError):
    """A ``__consumer_offsets`` record without a key: Kafka's decoder throws (and kafka-dump-log stops)."""


class _Skip(Exception):
    """``UnknownRecordTypeException``."""

    def __init__(self, record_type: int) -> None:
        super().__init__(record_type)
        self.record_type = record_type


def _read_version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise MessageError(f"Could not read version from {what}'s buffer.")
    return int(struct.unpack_from(">h", data)[0])


def _read(spec: MessageSpec, data: bytes, version: int, what: str) -> dict[str, Any]:
    try:
        return read_message(spec, data, version, 2)[0]
    except MessageError as e:
        raise MessageError(f"Could not read record with version {version} from {what}'s buffer due to: {e}.") from e


def _consumer_protocol_json(spec: MessageSpec, data: bytes) -> str | None:
    """DumpLogSegments' ``replace``: decode an embedded consumer protocol blob, or None to keep the bytes."""
    if len(data) < 2:
        return None
    version = int(struct.unpack_from(">h", data)[0])
    try:
        values = read_message(spec, data, version, 2)[0]
    except MessageError:
        return None  # "Swallow and keep the original bytes."
    return to_json(spec, values, version)


def _embedded_protocol(field: FieldSpec, value: Any) -> str | None:
    if field is MEMBER_METADATA.fields[6]:
        return _consumer_protocol_json(CONSUMER_PROTOCOL_SUBSCRIPTION, value)
    if field is MEMBER_METADATA.fields[7]:
        return _consumer_protocol_json(CONSUMER_PROTOCOL_ASSIGNMENT, value)
    return None


def _value_json(spec: MessageSpec, values: dict[str, Any], version: int) -> str:
    if spec is GROUP_METADATA_VALUE and values["protocolType"] == CONSUMER_PROTOCOL_TYPE:
        return to_json(spec, values, version, _embedded_protocol)
    return to_json(spec, values, version)


def decode_offsets_record(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """The (key, payload) texts ``OffsetsMessageParser.parse`` gives a ``__consumer_offsets`` record."""
    if key is None:
        raise MissingKeyError(f"Failed to decode message at offset {offset} using offset topic decoder "
                              "(message had a missing key)")
    try:
        key_json, value_json = _decode(key, value)
    except _Skip as skip:
        return f"Unknown record type {skip.record_type} at offset {offset}, skipping.", None
    except MessageError as e:
        return f"Error at offset {offset}, skipping. {e}", None
    return key_json, value_json


def _decode(key: bytes, value: bytes | None) -> tuple[str, str]:
    record_type = _read_version(key, "key")
    specs = RECORD_TYPES.get(record_type)
    if specs is None:
        raise _Skip(record_type)
    key_spec, value_spec = specs
    key_values = _read(key_spec, key, record_type, "key")
    key_json = f'{{"type":"{record_type}","data":{to_json(key_spec, key_values, record_type)}}}'
    if value is None:
        return key_json, DELETE
    value_version = _read_version(value, "value")
    value_values = _read(value_spec, value, value_version, "value")
    value_json = _value_json(value_spec, value_values, value_version)
    return key_json, f'{{"version":"{value_version}","data":{value_json}}}'


# --- writers: the records a 3.9 group coordinator appends (fixtures, ``kafkatool sample``) ---------------------


#: ``Topic.GROUP_METADATA_TOPIC_NAME``
GROUP_METADATA_TOPIC = "__consumer_offsets"


def partition_for_group(group_id: str, partitions: int) -> int:
    """``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``
    (``Utils.abs(Integer.MIN_VALUE)`` is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """An OffsetCommitKey as 3.9 writes it: record type (key version) 1; type 0 has the same layout."""
    return struct.pack(">h", 1) + write_message(OFFSET_COMMIT_KEY, {"group": group, "topic": topic,
                                                                     "partition": partition}, 1)


def offset_commit_value(offset: int, *, commit_timestamp: int, metadata: str = "", leader_epoch: int = -1,
                        expire_timestamp: int | None = None, value_version: int | None = None) -> bytes:
    """An OffsetCommitValue: v3 (what the 3.x coordinator writes without an expire timestamp, also with a
    transactional producer), v1 when an expire timestamp is given."""
    if value_version is None:
        value_version = 1 if expire_timestamp is not None else 3
    return version_prefixed(OFFSET_COMMIT_VALUE, {
        "offset": offset, "leaderEpoch": leader_epoch if value_version >= 3 else -1, "metadata": metadata,
        "commitTimestamp": commit_timestamp,
        "expireTimestamp": expire_timestamp if expire_timestamp is not None and value_version == 1 else -1,
    }, value_version)


def offset_commit_record(group: str, topic: str, partition: int, offset: int, *, commit_timestamp: int,
                         metadata: str = "", leader_epoch: int = -1, expire_timestamp: int | None = None,
                         value_version: int | None = None) -> tuple[bytes, bytes]:
    """(key, value) of an offset commit: :func:`offset_commit_key` and :func:`offset_commit_value`."""
    return offset_commit_key(group, topic, partition), offset_commit_value(
        offset, commit_timestamp=commit_timestamp, metadata=metadata, leader_epoch=leader_epoch,
        expire_timestamp=expire_timestamp, value_version=value_version)


def read_offset_commit_key(data: bytes) -> dict[str, Any]:
    """The fields of an OffsetCommitKey (record type 0 or 1); raises :class:`InvalidRecordError` otherwise."""
    return _read_offset_commit(data, OFFSET_COMMIT_KEY, "key")


def read_offset_commit_value(data: bytes) -> dict[str, Any]:
    """The fields of an OffsetCommitValue (any version 0-4); raises :class:`InvalidRecordError` otherwise."""
    return _read_offset_commit(data, OFFSET_COMMIT_VALUE, "value")


def _read_offset_commit(data: bytes, spec: MessageSpec, what: str) -> dict[str, Any]:
    try:
        version = _read_version(data, what)
        if version not in spec.valid:
            raise MessageError(f"{spec.name} has no version {version}")
        values, end = read_message(spec, data, version, 2)
    except MessageError as e:
        raise InvalidRecordError(f"not an offset commit {what}: {e}") from e
    if end != len(data):
        raise InvalidRecordError(f"offset commit {what} has {len(data) - end} bytes after its fields")
    return values


def consumer_subscription(topics: list[str], owned: dict[str, list[int]] | None = None, *, generation_id: int = -1,
                          rack_id: str | None = None, user_data: bytes | None = None, version: int = 3) -> bytes:
    """``ConsumerProtocol.serializeSubscription`` bytes (version 3 in kafka-clients 3.9)."""
    return version_prefixed(CONSUMER_PROTOCOL_SUBSCRIPTION, {
        "Topics": topics, "UserData": user_data, "GenerationId": generation_id, "RackId": rack_id,
        "OwnedPartitions": [{"Topic": t, "Partitions": p} for t, p in (owned or {}).items()]}, version)


def consumer_assignment(assigned: dict[str, list[int]], *, user_data: bytes | None = None, version: int = 3) -> bytes:
    """``ConsumerProtocol.serializeAssignment`` bytes."""
    return version_prefixed(CONSUMER_PROTOCOL_ASSIGNMENT, {
        "AssignedPartitions": [{"Topic": t, "Partitions": p} for t, p in assigned.items()],
        "UserData": user_data}, version)


def group_metadata_record(group: str, *, protocol_type: str, generation: int, protocol: str | None,
                          leader: str | None, members: list[dict[str, Any]], current_state_timestamp: int = -1,
                          value_version: int = 3) -> tuple[bytes, bytes]:
    """(key, value) of a classic group's metadata: key type 2, ``members`` as GroupMetadataValue.MemberMetadata
    field dicts (memberId, groupInstanceId, clientId, clientHost, rebalanceTimeout, sessionTimeout, subscription,
    assignment)."""
    key = struct.pack(">h", 2) + write_message(GROUP_METADATA_KEY, {"group": group}, 2)
    value = version_prefixed(GROUP_METADATA_VALUE, {
        "protocolType": protocol_type, "generation": generation, "protocol": protocol, "leader": leader,
        "currentStateTimestamp": current_state_timestamp, "members": members}, value_version)
    return key, value
