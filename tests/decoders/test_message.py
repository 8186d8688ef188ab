"""The message-definition engine against Kafka's own generated classes and JSON converters.

Vectors: ``tests/vectors/decoders/kafka-clients-3.9.1-messages.txt``, produced by
``GenMessageVectors.java`` (beside it) with kafka-clients 3.9.1's generated message classes,
``MessageUtil.toVersionPrefixedBytes`` and ``*JsonConverter.write(...).toString()`` (Jackson).
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatool.decoders.message import (
    ArrayOf,
    F,
    MessageError,
    MessageSpec,
    StructSpec,
    Versions,
    json_string,
    read_message,
    to_json,
    uuid_from_string,
    uuid_to_string,
    version_prefixed,
    write_message,
)
from kafkatool.decoders.offsets import (
    CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_VALUE,
)
from tests.support.paths import VECTORS

# clients/src/main/resources/common/message/ConsumerGroupHeartbeatResponse.json (v0, flexible 0+)
_HB_TOPIC_PARTITIONS = StructSpec("TopicPartitions", (
    F("TopicId", "uuid", "0+"), F("Partitions", ArrayOf("int32"), "0+")))
HEARTBEAT_RESPONSE = MessageSpec.of("ConsumerGroupHeartbeatResponseData", "0", "0+", [
    F("ThrottleTimeMs", "int32", "0+"),
    F("ErrorCode", "int16", "0+"),
    F("ErrorMessage", "string", "0+", nullable="0+", default=None),
    F("MemberId", "string", "0+", nullable="0+", default=None),
    F("MemberEpoch", "int32", "0+"),
    F("HeartbeatIntervalMs", "int32", "0+"),
    F("Assignment", StructSpec("Assignment", (F("TopicPartitions", ArrayOf(_HB_TOPIC_PARTITIONS), "0+"),)), "0+",
      nullable="0+", default=None),
])
# clients/src/main/resources/common/message/ApiVersionsResponse.json (v0-3, flexible 3+, tagged fields)
API_VERSIONS_RESPONSE = MessageSpec.of("ApiVersionsResponseData", "0-3", "3+", [
    F("ErrorCode", "int16", "0+"),
    F("ApiKeys", ArrayOf(StructSpec("ApiVersion", (
        F("ApiKey", "int16", "0+"), F("MinVersion", "int16", "0+"), F("MaxVersion", "int16", "0+")))), "0+"),
    F("ThrottleTimeMs", "int32", "1+"),
    F("SupportedFeatures", ArrayOf(StructSpec("SupportedFeatureKey", (
        F("Name", "string", "3+"), F("MinVersion", "int16", "3+"), F("MaxVersion", "int16", "3+")))), "3+",
      tagged="3+", tag=0),
    F("FinalizedFeaturesEpoch", "int64", "3+", tagged="3+", tag=1, default=-1),
    F("FinalizedFeatures", ArrayOf(StructSpec("FinalizedFeatureKey", (
        F("Name", "string", "3+"), F("MaxVersionLevel", "int16", "3+"),
        F("MinVersionLevel", "int16", "3+")))), "3+", tagged="3+", tag=2),
    F("ZkMigrationReady", "bool", "3+", tagged="3+", tag=3, default=False),
])
SPECS = {s.name: s for s in (CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT, HEARTBEAT_RESPONSE,
                             API_VERSIONS_RESPONSE)}


def _kafka_vectors() -> list[tuple[str, int, bytes, str]]:
    out = []
    for line in (VECTORS / "decoders" / "kafka-clients-3.9.1-messages.txt").read_text(encoding="utf-8").splitlines():
        name, version, hexdata, js = line.split("|", 3)
        out.append((name, int(version), bytes.fromhex(hexdata), js))
    return out


KAFKA_VECTORS = _kafka_vectors()


@pytest.mark.parametrize("name,version,data,expected_json", KAFKA_VECTORS,
                         ids=[f"{n}-v{v}-{i}" for i, (n, v, _, _) in enumerate(KAFKA_VECTORS)])
def test_kafka_generated_classes_agree(name: str, version: int, data: bytes, expected_json: str) -> None:
    spec = SPECS[name]
    assert struct.unpack_from(">h", data)[0] == version
    values, end = read_message(spec, data, version, 2)
    assert end == len(data)
    assert to_json(spec, values, version) == expected_json
    assert version_prefixed(spec, values, version) == data  # byte-identical re-encoding


def test_vectors_cover_the_tricky_parts() -> None:
    jsons = "\n".join(v[3] for v in KAFKA_VECTORS)
    assert '\\u001F' in jsons and '\\b\\f' in jsons and "/end" in jsons  # Jackson's escapes, '/' kept
    assert '"finalizedFeaturesEpoch":9000000000' in jsons  # a non-default tagged int64 is printed
    assert '"assignment":null' in jsons and '"topicId":"Uj5wn_FqTXirEASvVZRY1w"' in jsons


def test_offset_commit_value_v3_hand_built() -> None:
    # OffsetCommitValue v3 (not flexible): int16 version | int64 offset | int32 leaderEpoch |
    # int16-length string metadata | int64 commitTimestamp
    data = bytes.fromhex(
        "0003"                  # version 3
        "000000000000002a"      # offset 42
        "00000007"              # leaderEpoch 7
        "0002" "6869"           # metadata "hi"
        "0000018bcfe56800"      # commitTimestamp 1700000000000
    )
    values, end = read_message(OFFSET_COMMIT_VALUE, data, 3, 2)
    assert end == len(data)
    assert values == {"offset": 42, "leaderEpoch": 7, "metadata": "hi", "commitTimestamp": 1700000000000,
                      "expireTimestamp": -1}
    assert to_json(OFFSET_COMMIT_VALUE, values, 3) == \
        '{"offset":42,"leaderEpoch":7,"metadata":"hi","commitTimestamp":1700000000000}'
    assert version_prefixed(OFFSET_COMMIT_VALUE, values, 3) == data


def test_offset_commit_value_v4_is_flexible() -> None:
    # v4: compact string (varint length + 1) and an empty tagged-field section at the end.
    data = bytes.fromhex("0004" "000000000000002a" "ffffffff" "01" "0000018bcfe56800" "00")
    values, end = read_message(OFFSET_COMMIT_VALUE, data, 4, 2)
    assert end == len(data) and values["metadata"] == "" and values["leaderEpoch"] == -1


def test_version_conditions_follow_the_generated_code() -> None:
    # A version above validVersions keeps the bounds inside the valid range: OffsetCommitValue v7 reads as
    # v4 (flexible, leaderEpoch present, expireTimestamp "1" absent); a "0+" field is read at version -1.
    v7 = bytes.fromhex("0007" "0000000000000001" "00000002" "01" "0000000000000003" "00")
    values, end = read_message(OFFSET_COMMIT_VALUE, v7, 7, 2)
    assert end == len(v7)
    assert to_json(OFFSET_COMMIT_VALUE, values, 7) == \
        '{"offset":1,"leaderEpoch":2,"metadata":"","commitTimestamp":3}'
    assert Versions.parse("0+").present(-1, Versions.parse("0-4"))
    assert not Versions.parse("1").present(7, Versions.parse("0-4"))
    assert Versions.parse("3+").present(9, Versions.parse("0-4"))
    assert not Versions.parse("none").present(0, Versions.parse("0-4"))


@pytest.mark.parametrize("data,message", [
    pytest.param(bytes.fromhex("ffffffff"), "non-nullable field topics was serialized as null", id="null-array"),
    pytest.param(bytes.fromhex("00000009"), "Tried to allocate a collection of size 9, but there are only 0 bytes "
                 "remaining.", id="array-too-long"),
    pytest.param(bytes.fromhex("00000001ffff"), "non-nullable field topics element was serialized as null",
                 id="null-element"),
    pytest.param(bytes.fromhex("000000010005666f"), "Error reading byte array of 5 byte(s): only 2 byte(s) "
                 "available", id="short-string"),
    pytest.param(bytes.fromhex("0000000000"), "null", id="underflow-is-null"),
])
def test_reader_errors_carry_the_java_messages(data: bytes, message: str) -> None:
    with pytest.raises(MessageError) as e:
        read_message(CONSUMER_PROTOCOL_SUBSCRIPTION, data, 0)
    assert str(e.value) == message


def test_nested_struct_above_highest_version() -> None:
    # ConsumerProtocolSubscription read at v5: the top level has no check, the TopicPartition struct has.
    data = bytes.fromhex("00000000" "ffffffff" "00000001" "0001" "61" "00000000")
    with pytest.raises(MessageError, match=r"^Can't read version 5 of TopicPartition$"):
        read_message(CONSUMER_PROTOCOL_SUBSCRIPTION, data, 5)


def test_compact_string_length_and_varint_limits() -> None:
    spec = MessageSpec.of("S", "0", "0+", [F("Name", "string", "0+")])
    with pytest.raises(MessageError, match=r"^string field name had invalid length 32768$"):
        read_message(spec, bytes.fromhex("818002"), 0)  # varint 32769 - 1
    with pytest.raises(MessageError, match=r"^Varint is too long, the most significant bit in the 5th byte is set, "
                                           r"converted value: fffffff$"):
        read_message(spec, bytes.fromhex("ffffffff80"), 0)


def test_tagged_fields_known_unknown_and_nullable_struct() -> None:
    spec = CONSUMER_GROUP_MEMBER_METADATA_VALUE
    base = {"InstanceId": None, "RackId": "r1", "ClientId": "c", "ClientHost": "/127.0.0.1",
            "SubscribedTopicNames": ["t"], "SubscribedTopicRegex": None, "RebalanceTimeoutMs": 30000,
            "ServerAssignor": "uniform"}
    plain = write_message(spec, base, 0)
    assert plain.endswith(b"\x00")  # no tagged field
    classic = {"SessionTimeoutMs": 45000, "SupportedProtocols": [{"Name": "range", "Metadata": b"\x00\x03"}]}
    tagged = write_message(spec, dict(base, ClassicMemberMetadata=classic), 0)
    # tag 0, size = struct size + 1, KIP-893 varint marker 1, then the struct
    struct_bytes = bytes.fromhex("0000afc8" "02" "0672616e6765" "03" "0003" "00" "00")
    assert tagged == plain[:-1] + b"\x01" + b"\x00" + bytes([len(struct_bytes) + 1]) + b"\x01" + struct_bytes
    values, _ = read_message(spec, tagged, 0)
    assert values["ClassicMemberMetadata"] == classic
    assert to_json(spec, values, 0).endswith(
        '"serverAssignor":"uniform","classicMemberMetadata":{"sessionTimeoutMs":45000,'
        '"supportedProtocols":[{"name":"range","metadata":"AAM="}]}}')
    # An unknown tag (as a later Kafka may add) is skipped and not printed.
    unknown = plain[:-1] + bytes.fromhex("01" "05" "03" "aabbcc")
    values, end = read_message(spec, unknown, 0)
    assert end == len(unknown) and values["ClassicMemberMetadata"] is None
    assert "classicMemberMetadata" not in to_json(spec, values, 0)


def test_uuid_text_form() -> None:
    raw = uuid_from_string("Uj5wn_FqTXirEASvVZRY1w")
    assert raw.hex() == "523e709ff16a4d78ab1004af559458d7"
    assert uuid_to_string(raw) == "Uj5wn_FqTXirEASvVZRY1w"
    assert uuid_to_string(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert json_string(None) == "null" and json_string('a"\u2028') == '"a\\"\u2028"'


_MEMBER = st.fixed_dictionaries({
    "memberId": st.text(max_size=8), "groupInstanceId": st.none() | st.text(max_size=8),
    "clientId": st.text(max_size=8), "clientHost": st.text(max_size=8),
    "rebalanceTimeout": st.integers(-2**31, 2**31 - 1), "sessionTimeout": st.integers(-2**31, 2**31 - 1),
    "subscription": st.binary(max_size=16), "assignment": st.binary(max_size=16)})


@settings(max_examples=150, deadline=None)
@given(version=st.integers(3, 4), values=st.fixed_dictionaries({
    "protocolType": st.text(max_size=10), "generation": st.integers(-2**31, 2**31 - 1),
    "protocol": st.none() | st.text(max_size=10), "leader": st.none() | st.text(max_size=10),
    "currentStateTimestamp": st.integers(-2**63, 2**63 - 1), "members": st.lists(_MEMBER, max_size=3)}))
def test_group_metadata_value_round_trip(version: int, values: dict[str, object]) -> None:
    data = write_message(GROUP_METADATA_VALUE, values, version)
    decoded, end = read_message(GROUP_METADATA_VALUE, data, version)
    assert end == len(data)
    assert decoded == values


def test_utf8_replacement_matches_java() -> None:
    """``GenJavaUtf8.java``: 1500 malformed-leaning byte strings decoded by JDK 17's ``new String(b, UTF_8)``."""
    from kafkatool.decoders.message import java_utf8
    lines = (VECTORS / "decoders" / "java-utf8-replacement.txt").read_text().splitlines()
    assert len(lines) == 1500
    for line in lines:
        hexdata, units = line.split(" ") if " " in line else (line, "")
        assert java_utf8(bytes.fromhex(hexdata)).encode("utf-16-be", "surrogatepass").hex() == units, hexdata
    assert java_utf8(bytes.fromhex("eda080")) == "\ufffd"  # Python alone would give three
