"""``__consumer_offsets`` decoding as Kafka 3.9's ``kafka-dump-log.sh --offsets-decoder``.

The first group of expectations is Kafka's own: ``DumpLogSegmentsTest.testOffsetsMessageParser``
(apache/kafka ``core/src/test/scala/unit/kafka/tools/DumpLogSegmentsTest.scala``), with the records that
test serializes rebuilt from the record definitions.
"""

from __future__ import annotations

import struct

import pytest

from kafkatool.decoders.message import uuid_from_string, version_prefixed, write_message
from kafkatool.decoders.offsets import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    CONSUMER_GROUP_MEMBER_METADATA_KEY,
    CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    CONSUMER_GROUP_METADATA_KEY,
    CONSUMER_GROUP_METADATA_VALUE,
    CONSUMER_GROUP_PARTITION_METADATA_KEY,
    CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    MissingKeyError,
    decode_offsets_record,
)


def key(spec, values, record_type: int) -> bytes:  # type: ignore[no-untyped-def]
    """``MessageUtil.toVersionPrefixedBytes(recordType, key)``: the key's version is its record type."""
    return struct.pack(">h", record_type) + write_message(spec, values, record_type)


# ---- DumpLogSegmentsTest.testOffsetsMessageParser (Kafka's expected strings, verbatim) -----------------------

def _member(subscription: bytes, assignment: bytes) -> dict[str, object]:
    return {"memberId": "member", "clientId": "client", "clientHost": "host", "groupInstanceId": "instance",
            "sessionTimeout": 100, "rebalanceTimeout": 1000, "subscription": subscription, "assignment": assignment}


def _group_value(member: dict[str, object]) -> bytes:
    return version_prefixed(GROUP_METADATA_VALUE, {"protocolType": "consumer", "protocol": "range", "leader": "member",
                                                   "generation": 10, "members": [member]}, 4)


def test_kafka_valid_key_and_value() -> None:
    assert decode_offsets_record(key(CONSUMER_GROUP_METADATA_KEY, {"GroupId": "group"}, 3),
                                 version_prefixed(CONSUMER_GROUP_METADATA_VALUE, {"Epoch": 10}, 0), 0) == (
        '{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')


def test_kafka_consumer_embedded_protocol_is_parsed() -> None:
    # ConsumerProtocol.serializeSubscription/serializeAssignment write version 3 in kafka-clients 3.9.
    subscription = version_prefixed(CONSUMER_PROTOCOL_SUBSCRIPTION, {
        "Topics": ["foo"], "UserData": None, "OwnedPartitions": [{"Topic": "foo", "Partitions": [0]}],
        "GenerationId": 0, "RackId": "rack"}, 3)
    assignment = version_prefixed(CONSUMER_PROTOCOL_ASSIGNMENT, {
        "AssignedPartitions": [{"Topic": "foo", "Partitions": [0]}]}, 3)
    assert decode_offsets_record(key(GROUP_METADATA_KEY, {"group": "group"}, 2),
                                 _group_value(_member(subscription, assignment)), 0) == (
        '{"type":"2","data":{"group":"group"}}',
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
        '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}')


def test_kafka_malformed_embedded_protocol_stays_bytes() -> None:
    assert decode_offsets_record(key(GROUP_METADATA_KEY, {"group": "group"}, 2),
                                 _group_value(_member(b"Subscription", b"Assignment")), 0) == (
        '{"type":"2","data":{"group":"group"}}',
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":"U3Vic2NyaXB0aW9u",'
        '"assignment":"QXNzaWdubWVudA=="}]}}')


def test_kafka_tombstone() -> None:
    assert decode_offsets_record(key(CONSUMER_GROUP_METADATA_KEY, {"GroupId": "group"}, 3), None, 0) == (
        '{"type":"3","data":{"groupId":"group"}}', "<DELETE>")


def test_kafka_unknown_record_type() -> None:
    k = struct.pack(">h", 32767) + write_message(CONSUMER_GROUP_METADATA_KEY, {"GroupId": "group"}, 3)
    assert decode_offsets_record(k, version_prefixed(CONSUMER_GROUP_METADATA_VALUE, {"Epoch": 10}, 0), 0) == (
        "Unknown record type 32767 at offset 0, skipping.", None)


def test_kafka_parse_error_is_swallowed_and_reported() -> None:
    # A ConsumerGroupMemberMetadataValue with default fields, read as the ConsumerGroupMetadataValue the key
    # announces: its bytes 01 01 01 01 are the epoch, then "1 tagged field, tag 1, size ff ff ff ff 01".
    value = version_prefixed(CONSUMER_GROUP_MEMBER_METADATA_VALUE, {}, 0)
    assert value.hex() == "0000" "01010101" "0101" "ffffffff" "01" "00"
    assert decode_offsets_record(key(CONSUMER_GROUP_METADATA_KEY, {"GroupId": "group"}, 3), value, 0) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "Error reading byte array of 536870911 byte(s): only 1 byte(s) available.", None)


def test_kafka_missing_key_is_an_error() -> None:
    with pytest.raises(MissingKeyError, match=r"Failed to decode message at offset 0 using offset topic decoder "
                                              r"\(message had a missing key\)"):
        decode_offsets_record(None, None, 0)


# ---- classic records, hand-built from the wire layout ------------------------------------------------------

OFFSET_KEY_V1 = bytes.fromhex(
    "0001"                  # record type 1 (OffsetCommitKey, read as version 1)
    "0002" "6731"           # group "g1"
    "0006" "6f7264657273"   # topic "orders"
    "00000003"              # partition 3
)


@pytest.mark.parametrize("value_hex,expected", [
    pytest.param("0000" "0000000000000064" "0000" "0000018bcfe56800",
                 '{"version":"0","data":{"offset":100,"metadata":"","commitTimestamp":1700000000000}}', id="v0"),
    pytest.param("0001" "0000000000000064" "0002" "6d64" "0000018bcfe56800" "0000018bd50bc400",
                 '{"version":"1","data":{"offset":100,"metadata":"md","commitTimestamp":1700000000000,'
                 '"expireTimestamp":1700086400000}}', id="v1-expire"),
    pytest.param("0002" "0000000000000064" "0000" "0000018bcfe56800",
                 '{"version":"2","data":{"offset":100,"metadata":"","commitTimestamp":1700000000000}}', id="v2"),
    pytest.param("0003" "0000000000000064" "ffffffff" "0000" "0000018bcfe56800",
                 '{"version":"3","data":{"offset":100,"leaderEpoch":-1,"metadata":"","commitTimestamp":1700000000000}}',
                 id="v3"),
    pytest.param("0004" "0000000000000064" "00000005" "03" "6d64" "0000018bcfe56800" "00",
                 '{"version":"4","data":{"offset":100,"leaderEpoch":5,"metadata":"md","commitTimestamp":1700000000000}}',
                 id="v4-flexible"),
])
def test_offset_commit_values(value_hex: str, expected: str) -> None:
    k, v = decode_offsets_record(OFFSET_KEY_V1, bytes.fromhex(value_hex), 12)
    assert k == '{"type":"1","data":{"group":"g1","topic":"orders","partition":3}}'
    assert v == expected


def test_offset_commit_key_v0_and_short_buffers() -> None:
    k0 = key(OFFSET_COMMIT_KEY, {"group": "g", "topic": "t", "partition": 0}, 0)
    assert decode_offsets_record(k0, None, 5) == (
        '{"type":"0","data":{"group":"g","topic":"t","partition":0}}', "<DELETE>")
    assert decode_offsets_record(b"\x00", None, 5) == (
        "Error at offset 5, skipping. Could not read version from key's buffer.", None)
    assert decode_offsets_record(k0, b"\x00", 5) == (
        "Error at offset 5, skipping. Could not read version from value's buffer.", None)
    assert decode_offsets_record(k0[:-2], None, 5) == (
        "Error at offset 5, skipping. Could not read record with version 0 from key's buffer due to: null.", None)


def test_group_metadata_v0_and_other_protocol_types() -> None:
    # GroupMetadataValue v0: no currentStateTimestamp, no groupInstanceId, no rebalanceTimeout; a "connect"
    # group's member metadata is not the consumer protocol, so it stays base64.
    member = {"memberId": "w1", "clientId": "c", "clientHost": "/10.0.0.1", "sessionTimeout": 10000,
              "subscription": b"\x00\x01", "assignment": b""}
    value = version_prefixed(GROUP_METADATA_VALUE, {"protocolType": "connect", "generation": 1, "protocol": None,
                                                    "leader": None, "members": [member]}, 0)
    assert value.hex() == ("0000" "0007636f6e6e656374" "00000001" "ffff" "ffff" "00000001"
                           "00027731" "000163" "00092f31302e302e302e31" "00002710" "000000020001" "00000000")
    _, v = decode_offsets_record(key(GROUP_METADATA_KEY, {"group": "connect-cluster"}, 2), value, 0)
    assert v == ('{"version":"0","data":{"protocolType":"connect","generation":1,"protocol":null,"leader":null,'
                 '"members":[{"memberId":"w1","clientId":"c","clientHost":"/10.0.0.1","sessionTimeout":10000,'
                 '"subscription":"AAE=","assignment":""}]}}')


def test_embedded_subscription_versions_0_to_2() -> None:
    for version, tail in ((0, ""), (1, ',"ownedPartitions":[]'), (2, ',"ownedPartitions":[],"generationId":-1')):
        sub = version_prefixed(CONSUMER_PROTOCOL_SUBSCRIPTION, {"Topics": ["a", "b"], "UserData": b"\x01"}, version)
        asg = version_prefixed(CONSUMER_PROTOCOL_ASSIGNMENT, {"AssignedPartitions": []}, version)
        value = version_prefixed(GROUP_METADATA_VALUE, {"protocolType": "consumer", "generation": 3,
                                                        "protocol": "roundrobin", "leader": "m",
                                                        "members": [_member(sub, asg)]}, 3)
        _, v = decode_offsets_record(key(GROUP_METADATA_KEY, {"group": "g"}, 2), value, 0)
        assert v is not None
        assert f'"subscription":{{"topics":["a","b"],"userData":"AQ=="{tail}}}' in v
        assert '"assignment":{"assignedPartitions":[],"userData":null}' in v


TOPIC_ID = uuid_from_string("Uj5wn_FqTXirEASvVZRY1w")


@pytest.mark.parametrize("record_type,key_spec,key_values,value_spec,value_values,key_json,value_json", [
    pytest.param(4, CONSUMER_GROUP_PARTITION_METADATA_KEY, {"GroupId": "g"}, CONSUMER_GROUP_PARTITION_METADATA_VALUE,
                 {"Topics": [{"TopicId": TOPIC_ID, "TopicName": "orders", "NumPartitions": 2,
                              "PartitionMetadata": [{"Partition": 0, "Racks": ["r1", "r2"]}]}]},
                 '{"groupId":"g"}',
                 '{"topics":[{"topicId":"Uj5wn_FqTXirEASvVZRY1w","topicName":"orders","numPartitions":2,'
                 '"partitionMetadata":[{"partition":0,"racks":["r1","r2"]}]}]}', id="4-partition-metadata"),
    pytest.param(5, CONSUMER_GROUP_MEMBER_METADATA_KEY, {"GroupId": "g", "MemberId": "m1"},
                 CONSUMER_GROUP_MEMBER_METADATA_VALUE,
                 {"InstanceId": None, "RackId": None, "ClientId": "c", "ClientHost": "/127.0.0.1",
                  "SubscribedTopicNames": ["orders"], "SubscribedTopicRegex": None, "RebalanceTimeoutMs": 300000,
                  "ServerAssignor": "uniform"},
                 '{"groupId":"g","memberId":"m1"}',
                 '{"instanceId":null,"rackId":null,"clientId":"c","clientHost":"/127.0.0.1",'
                 '"subscribedTopicNames":["orders"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":300000,'
                 '"serverAssignor":"uniform"}', id="5-member-metadata"),
    pytest.param(6, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, {"GroupId": "g"},
                 CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, {"AssignmentEpoch": 4},
                 '{"groupId":"g"}', '{"assignmentEpoch":4}', id="6-target-assignment-metadata"),
    pytest.param(7, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, {"GroupId": "g", "MemberId": "m1"},
                 CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
                 {"TopicPartitions": [{"TopicId": TOPIC_ID, "Partitions": [0, 1]}]},
                 '{"groupId":"g","memberId":"m1"}',
                 '{"topicPartitions":[{"topicId":"Uj5wn_FqTXirEASvVZRY1w","partitions":[0,1]}]}',
                 id="7-target-assignment-member"),
    pytest.param(8, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, {"GroupId": "g", "MemberId": "m1"},
                 CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
                 {"MemberEpoch": 4, "PreviousMemberEpoch": 3, "State": 0,
                  "AssignedPartitions": [{"TopicId": TOPIC_ID, "Partitions": [1]}],
                  "PartitionsPendingRevocation": [{"TopicId": TOPIC_ID, "Partitions": [0]}]},
                 '{"groupId":"g","memberId":"m1"}',
                 '{"memberEpoch":4,"previousMemberEpoch":3,"state":0,"assignedPartitions":'
                 '[{"topicId":"Uj5wn_FqTXirEASvVZRY1w","partitions":[1]}],"partitionsPendingRevocation":'
                 '[{"topicId":"Uj5wn_FqTXirEASvVZRY1w","partitions":[0]}]}', id="8-current-member-assignment"),
])
def test_kip_848_records(record_type, key_spec, key_values, value_spec, value_values,  # type: ignore[no-untyped-def]
                         key_json, value_json) -> None:
    k, v = decode_offsets_record(key(key_spec, key_values, record_type),
                                 version_prefixed(value_spec, value_values, 0), 9)
    assert k == f'{{"type":"{record_type}","data":{key_json}}}'
    assert v == f'{{"version":"0","data":{value_json}}}'


def test_kip_848_wire_layout_is_flexible() -> None:
    # ConsumerGroupTargetAssignmentMemberValue v0: compact array (n+1), uuid, compact int32 array, tag sections.
    value = version_prefixed(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
                             {"TopicPartitions": [{"TopicId": TOPIC_ID, "Partitions": [0, 1]}]}, 0)
    assert value.hex() == "0000" "02" + TOPIC_ID.hex() + "03" "00000000" "00000001" "00" "00"


@pytest.mark.parametrize("record_type", [9, 10, 14, 15, 16, -1])
def test_share_group_and_later_types_are_unknown_in_3_9(record_type: int) -> None:
    k = struct.pack(">h", record_type) + b"\x00\x01g"
    assert decode_offsets_record(k, b"\x00\x00", 77) == (f"Unknown record type {record_type} at offset 77, skipping.",
                                                         None)


def test_record_builders() -> None:
    from kafkatool.decoders.offsets import (
        consumer_assignment,
        consumer_subscription,
        group_metadata_record,
        offset_commit_record,
    )
    k, v = offset_commit_record("g1", "orders", 3, 100, commit_timestamp=1700000000000, metadata="md",
                                expire_timestamp=1700086400000)
    assert k == OFFSET_KEY_V1
    assert v.hex() == "0001" "0000000000000064" "0002" "6d64" "0000018bcfe56800" "0000018bd50bc400"
    k, v = offset_commit_record("g1", "orders", 3, 100, commit_timestamp=1700000000000, leader_epoch=5)
    assert decode_offsets_record(k, v, 0)[1] == (
        '{"version":"3","data":{"offset":100,"leaderEpoch":5,"metadata":"","commitTimestamp":1700000000000}}')
    sub = consumer_subscription(["foo"], {"foo": [0]}, generation_id=0, rack_id="rack")
    asg = consumer_assignment({"foo": [0]})
    k, v = group_metadata_record("group", protocol_type="consumer", generation=10, protocol="range",
                                 leader="member", members=[_member(sub, asg)], value_version=4)
    assert (k, v) == (key(GROUP_METADATA_KEY, {"group": "group"}, 2), _group_value(_member(sub, asg)))
