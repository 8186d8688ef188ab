"""The Kafka protocol requests ``canary rehearse`` sends its sandbox broker, and their responses.

Transcribed from kafka-clients' message definitions (``common/message/*.json`` of 3.9.2 and 4.4.0); only
non-flexible versions, so every request has header v1 and every response header v0::

    request   size int32, api_key int16, api_version int16, correlation_id int32, client_id int16-length string
    response  size int32, correlation_id int32, then the body

Strings are an int16 length + UTF-8 (-1: null), bytes and arrays an int32 length (-1: null). The versions:

=====================  =====  ============================================================================
API                    used   why this version
=====================  =====  ============================================================================
ApiVersions (18)       1      every broker answers it; its answer says what else the broker takes
Metadata (3)           5      leaders of the canary partitions (3.9: 0-12, 4.4: 0-13)
CreateTopics (19)      4      the canary's topics (4.0 removed v0-1, KIP-896; v5+ is flexible)
FindCoordinator (10)   2      creates ``__consumer_offsets`` / ``__transaction_state`` (internal topics)
Produce (0)            1, 2   old producers: message format v0 (0.9) and v1 (0.10); 4.0 removed v0-2
Produce (0)            8      a new producer: format v2 batches; v8 adds the broker's error message
Fetch (1)              0-3    old consumers (:mod:`kafkatool.fetch.request`): the broker down-converts
Fetch (1)              11     a modern consumer: v2 batches as stored, read_committed (v4+), rack (v11)
=====================  =====  ============================================================================
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from kafkatool.errors import KafkaToolError

API_PRODUCE = 0
API_FETCH = 1
API_METADATA = 3
API_FIND_COORDINATOR = 10
API_API_VERSIONS = 18
API_CREATE_TOPICS = 19
API_NAMES = {API_PRODUCE: "Produce", API_FETCH: "Fetch", API_METADATA: "Metadata",
             API_FIND_COORDINATOR: "FindCoordinator", API_API_VERSIONS: "ApiVersions",
             API_CREATE_TOPICS: "CreateTopics"}

API_VERSIONS_VERSION = 1
METADATA_VERSION = 5
CREATE_TOPICS_VERSION = 4
FIND_COORDINATOR_VERSION = 2
PRODUCE_V2_VERSION = 8  # the new producer's request (its batches are message format v2)
MODERN_FETCH_VERSION = 11

COORDINATOR_GROUP = 0
COORDINATOR_TRANSACTION = 1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1

# protocol/Errors.java (3.9.2): the codes a rehearsal can meet, with Kafka's name and message.
ERRORS: dict[int, tuple[str, str]] = {
    -1: ("UNKNOWN_SERVER_ERROR", "The server experienced an unexpected error when processing the request."),
    0: ("NONE", ""),
    1: ("OFFSET_OUT_OF_RANGE", "The requested offset is not within the range of offsets maintained by the server."),
    2: ("CORRUPT_MESSAGE", "This message has failed its CRC checksum, exceeds the valid size, has a null key for a "
                           "compacted topic, or is otherwise corrupt."),
    3: ("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition."),
    5: ("LEADER_NOT_AVAILABLE", "There is no leader for this topic-partition as we are in the middle of a leadership "
                                "election."),
    6: ("NOT_LEADER_OR_FOLLOWER", "For requests intended only for the leader, this error indicates that the broker is "
                                  "not the current leader."),
    7: ("REQUEST_TIMED_OUT", "The request timed out."),
    10: ("MESSAGE_TOO_LARGE", "The request included a message larger than the max message size the server will "
                              "accept."),
    14: ("COORDINATOR_LOAD_IN_PROGRESS", "The coordinator is loading and hence can't process requests."),
    15: ("COORDINATOR_NOT_AVAILABLE", "The coordinator is not available."),
    16: ("NOT_COORDINATOR", "This is not the correct coordinator."),
    18: ("RECORD_LIST_TOO_LARGE", "The request included message batch larger than the configured segment size on the "
                                  "server."),
    32: ("INVALID_TIMESTAMP", "The timestamp of the message is out of acceptable range."),
    35: ("UNSUPPORTED_VERSION", "The version of API is not supported."),
    36: ("TOPIC_ALREADY_EXISTS", "Topic with this name already exists."),
    37: ("INVALID_PARTITIONS", "Number of partitions is below 1."),
    38: ("INVALID_REPLICATION_FACTOR", "Replication factor is below 1 or larger than the number of available "
                                       "brokers."),
    40: ("INVALID_CONFIG", "Configuration is invalid."),
    42: ("INVALID_REQUEST", "This most likely occurs because of a request being malformed by the client library or "
                            "the message was sent to an incompatible broker. See the broker logs for more details."),
    43: ("UNSUPPORTED_FOR_MESSAGE_FORMAT", "The message format version on the broker does not support the request."),
    44: ("POLICY_VIOLATION", "Request parameters do not satisfy the configured policy."),
    45: ("OUT_OF_ORDER_SEQUENCE_NUMBER", "The broker received an out of order sequence number."),
    74: ("FENCED_LEADER_EPOCH", "The leader epoch in the request is older than the epoch on the broker."),
    75: ("UNKNOWN_LEADER_EPOCH", "The leader epoch in the request is newer than the epoch on the broker."),
    76: ("UNSUPPORTED_COMPRESSION_TYPE", "The requesting client does not support the compression type of given "
                                         "partition."),
    87: ("INVALID_RECORD", "This record has failed the validation on broker and hence will be rejected."),
}


def error_name(code: int) -> str:
    return ERRORS.get(code, (f"ERROR_{code}", ""))[0]


def error_text(code: int, message: str | None = None) -> str:
    """``NAME (message)``: the broker's own message when it sent one, else Kafka's for that code."""
    name, default = ERRORS.get(code, (f"ERROR_{code}", ""))
    text = message or default
    return f"{name} ({text})" if text else name


class ProtocolError(KafkaToolError):
    """A response that does not parse as the version asked for."""


# ---------------------------------------------------------------------------------------------- primitives

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_HEADER = struct.Struct(">hhi")  # request header v1: api_key, api_version, correlation_id


class Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def i8(self, v: int) -> Writer:
        self.buf += _I8.pack(v)
        return self

    def i16(self, v: int) -> Writer:
        self.buf += _I16.pack(v)
        return self

    def i32(self, v: int) -> Writer:
        self.buf += _I32.pack(v)
        return self

    def i64(self, v: int) -> Writer:
        self.buf += _I64.pack(v)
        return self

    def boolean(self, v: bool) -> Writer:
        return self.i8(1 if v else 0)

    def string(self, v: str | None) -> Writer:
        if v is None:
            return self.i16(-1)
        data = v.encode("utf-8")
        if len(data) > 0x7FFF:
            raise ProtocolError(f"a protocol string of {len(data)} bytes is too long")
        self.i16(len(data))
        self.buf += data
        return self

    def bytes_(self, v: bytes | None) -> Writer:
        if v is None:
            return self.i32(-1)
        self.i32(len(v))
        self.buf += v
        return self

    def count(self, n: int) -> Writer:
        return self.i32(n)


def request(api_key: int, version: int, correlation_id: int, client_id: str, body: Writer) -> bytes:
    """A whole request, size prefix included (header v1)."""
    head = Writer()
    head.buf += _HEADER.pack(api_key, version, correlation_id)
    head.string(client_id)
    frame = bytes(head.buf) + bytes(body.buf)
    return _I32.pack(len(frame)) + frame


class Reader:
    """A response body; every read bounded by the bytes that arrived."""

    def __init__(self, data: bytes, what: str) -> None:
        self.mv = memoryview(data)
        self.p = 0
        self.what = what

    def take(self, n: int) -> memoryview:
        if n < 0 or self.p + n > len(self.mv):
            raise ProtocolError(f"{self.what}: the response ends inside a field ({n} bytes needed, "
                                f"{len(self.mv) - self.p} left)", position=self.p)
        out = self.mv[self.p:self.p + n]
        self.p += n
        return out

    def i8(self) -> int:
        return int(_I8.unpack(self.take(1))[0])

    def i16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self.take(8))[0])

    def boolean(self) -> bool:
        return self.i8() != 0

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        return bytes(self.take(n)).decode("utf-8", "replace")

    def text(self) -> str:
        s = self.string()
        if s is None:
            raise ProtocolError(f"{self.what}: a null string where one is required", position=self.p)
        return s

    def bytes_(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else bytes(self.take(n))

    def count(self) -> int:
        n = self.i32()
        if n < -1 or n > len(self.mv) - self.p:
            raise ProtocolError(f"{self.what}: an array of {n} entries in {len(self.mv) - self.p} bytes",
                                position=self.p - 4)
        return max(n, 0)

    def done(self) -> None:
        if self.p != len(self.mv):
            raise ProtocolError(f"{self.what}: {len(self.mv) - self.p} bytes after the response", position=self.p)


def body_of(response: bytes, correlation_id: int, what: str) -> Reader:
    """The body of a size-prefixed response (header v0), its correlation id checked."""
    r = Reader(response, what)
    r.i32()
    got = r.i32()
    if got != correlation_id:
        raise ProtocolError(f"{what}: the response has correlation id {got}, not {correlation_id}")
    return r


# ---------------------------------------------------------------------------------------------- ApiVersions

@dataclass(frozen=True, slots=True)
class ApiVersions:
    """``ApiVersionsResponse`` v1: error_code int16, api_keys [api_key int16, min int16, max int16],
    throttle_time_ms int32."""

    error_code: int
    ranges: dict[int, tuple[int, int]]

    def supports(self, api_key: int, version: int) -> bool:
        lo, hi = self.ranges.get(api_key, (0, -1))
        return lo <= version <= hi

    def range_text(self, api_key: int) -> str:
        if api_key not in self.ranges:
            return "none"
        lo, hi = self.ranges[api_key]
        return f"v{lo}-v{hi}"


def encode_api_versions(correlation_id: int, client_id: str) -> bytes:
    return request(API_API_VERSIONS, API_VERSIONS_VERSION, correlation_id, client_id, Writer())


def parse_api_versions(response: bytes, correlation_id: int) -> ApiVersions:
    r = body_of(response, correlation_id, "ApiVersions")
    error = r.i16()
    ranges = {}
    for _ in range(r.count()):
        key, lo, hi = r.i16(), r.i16(), r.i16()
        ranges[key] = (lo, hi)
    if error == 0:
        r.i32()
        r.done()
    return ApiVersions(error, ranges)


# ---------------------------------------------------------------------------------------------- Metadata

@dataclass(frozen=True, slots=True)
class PartitionMeta:
    error_code: int
    partition: int
    leader: int


@dataclass(frozen=True, slots=True)
class TopicMeta:
    error_code: int
    name: str
    internal: bool
    partitions: tuple[PartitionMeta, ...]


def encode_metadata(correlation_id: int, client_id: str, topics: Sequence[str]) -> bytes:
    """``MetadataRequest`` v5: topics [name] (nullable), allow_auto_topic_creation bool (v4+)."""
    w = Writer().count(len(topics))
    for t in topics:
        w.string(t)
    w.boolean(False)
    return request(API_METADATA, METADATA_VERSION, correlation_id, client_id, w)


def parse_metadata(response: bytes, correlation_id: int) -> list[TopicMeta]:
    """``MetadataResponse`` v5: throttle_time_ms, brokers [node_id, host, port, rack], cluster_id, controller_id,
    topics [error_code, name, is_internal, partitions [error_code, partition_index, leader_id, replica_nodes
    [int32], isr_nodes [int32], offline_replicas [int32]]]."""
    r = body_of(response, correlation_id, "Metadata")
    r.i32()
    for _ in range(r.count()):
        r.i32()
        r.text()
        r.i32()
        r.string()
    r.string()
    r.i32()
    topics = []
    for _ in range(r.count()):
        error, name, internal = r.i16(), r.text(), r.boolean()
        parts = []
        for _ in range(r.count()):
            perr, index, leader = r.i16(), r.i32(), r.i32()
            for _ in range(3):
                for _ in range(r.count()):
                    r.i32()
            parts.append(PartitionMeta(perr, index, leader))
        topics.append(TopicMeta(error, name, internal, tuple(parts)))
    r.done()
    return topics


# ---------------------------------------------------------------------------------------------- CreateTopics

@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    partitions: int
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    error_code: int
    error_message: str | None


def encode_create_topics(correlation_id: int, client_id: str, topics: Sequence[NewTopic],
                         timeout_ms: int) -> bytes:
    """``CreateTopicsRequest`` v4: topics [name, num_partitions int32, replication_factor int16, assignments [],
    configs [name, value (nullable)]], timeout_ms int32, validate_only bool."""
    w = Writer().count(len(topics))
    for t in topics:
        w.string(t.name).i32(t.partitions).i16(1).count(0).count(len(t.configs))
        for k, v in t.configs:
            w.string(k).string(v)
    w.i32(timeout_ms).boolean(False)
    return request(API_CREATE_TOPICS, CREATE_TOPICS_VERSION, correlation_id, client_id, w)


def parse_create_topics(response: bytes, correlation_id: int) -> list[TopicResult]:
    """``CreateTopicsResponse`` v4: throttle_time_ms, topics [name, error_code, error_message (nullable)]."""
    r = body_of(response, correlation_id, "CreateTopics")
    r.i32()
    out = [TopicResult(r.text(), r.i16(), r.string()) for _ in range(r.count())]
    r.done()
    return out


# ---------------------------------------------------------------------------------------------- FindCoordinator

def encode_find_coordinator(correlation_id: int, client_id: str, key: str, key_type: int) -> bytes:
    """``FindCoordinatorRequest`` v2: key string, key_type int8 (0 group, 1 transaction)."""
    w = Writer().string(key).i8(key_type)
    return request(API_FIND_COORDINATOR, FIND_COORDINATOR_VERSION, correlation_id, client_id, w)


def parse_find_coordinator(response: bytes, correlation_id: int) -> tuple[int, str | None]:
    """``FindCoordinatorResponse`` v2: throttle_time_ms, error_code, error_message, node_id, host, port."""
    r = body_of(response, correlation_id, "FindCoordinator")
    r.i32()
    error, message = r.i16(), r.string()
    r.i32()
    r.text()
    r.i32()
    r.done()
    return error, message


# ---------------------------------------------------------------------------------------------- Produce

@dataclass(frozen=True, slots=True)
class ProduceResult:
    error_code: int
    base_offset: int
    log_append_time: int
    error_message: str | None = None
    record_errors: tuple[str, ...] = ()


def encode_produce(version: int, correlation_id: int, client_id: str, topic: str, partition: int, records: bytes,
                   *, timeout_ms: int = 30_000) -> bytes:
    """``ProduceRequest``: transactional_id (nullable, v3+), acks int16 (-1: all), timeout_ms int32, topic_data
    [name, partition_data [index int32, records]]. v3+ carries exactly one v2 batch per partition."""
    w = Writer()
    if version >= 3:
        w.string(None)
    w.i16(-1).i32(timeout_ms).count(1).string(topic).count(1).i32(partition).bytes_(records)
    return request(API_PRODUCE, version, correlation_id, client_id, w)


def parse_produce(response: bytes, correlation_id: int, version: int) -> ProduceResult:
    """``ProduceResponse``: responses [name, partition_responses [index, error_code, base_offset,
    log_append_time_ms (v2+), log_start_offset (v5+), record_errors [batch_index, message] (v8+),
    error_message (v8+)]], throttle_time_ms (v1+)."""
    r = body_of(response, correlation_id, f"Produce v{version}")
    results = []
    for _ in range(r.count()):
        r.text()
        for _ in range(r.count()):
            r.i32()
            error, base = r.i16(), r.i64()
            lat = r.i64() if version >= 2 else -1
            if version >= 5:
                r.i64()
            errors: list[str] = []
            message = None
            if version >= 8:
                for _ in range(r.count()):
                    index, text = r.i32(), r.string()
                    errors.append(f"batch {index}: {text}")
                message = r.string()
            results.append(ProduceResult(error, base, lat, message, tuple(errors)))
    if version >= 1:
        r.i32()
    r.done()
    if len(results) != 1:
        raise ProtocolError(f"Produce v{version}: {len(results)} partition results for one partition")
    return results[0]


# ---------------------------------------------------------------------------------------------- Fetch v4+

@dataclass(frozen=True, slots=True)
class FetchedPartition:
    topic: str
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[tuple[int, int], ...]  # (producer_id, first_offset)
    records: bytes


@dataclass(frozen=True, slots=True)
class ModernFetch:
    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    log_start_offset: int = -1


def encode_modern_fetch(correlation_id: int, client_id: str, parts: Sequence[ModernFetch], *, isolation: int,
                        max_bytes: int = 50 << 20, max_wait_ms: int = 0, min_bytes: int = 0) -> bytes:
    """``FetchRequest`` v11: replica_id -1, max_wait_ms, min_bytes, max_bytes, isolation_level int8, session_id 0,
    session_epoch -1 (no fetch session: a full fetch), topics [topic, partitions [partition,
    current_leader_epoch -1 (no KIP-320 fencing), fetch_offset, log_start_offset, partition_max_bytes]],
    forgotten_topics_data [], rack_id ''."""
    w = Writer().i32(-1).i32(max_wait_ms).i32(min_bytes).i32(max_bytes).i8(isolation).i32(0).i32(-1)
    groups: list[tuple[str, list[ModernFetch]]] = []
    for p in parts:
        if groups and groups[-1][0] == p.topic:
            groups[-1][1].append(p)
        else:
            groups.append((p.topic, [p]))
    w.count(len(groups))
    for topic, members in groups:
        w.string(topic).count(len(members))
        for p in members:
            w.i32(p.partition).i32(-1).i64(p.fetch_offset).i64(p.log_start_offset).i32(p.partition_max_bytes)
    w.count(0).string("")
    return request(API_FETCH, MODERN_FETCH_VERSION, correlation_id, client_id, w)


@dataclass(frozen=True, slots=True)
class ModernFetchResponse:
    error_code: int
    partitions: tuple[FetchedPartition, ...] = field(default_factory=tuple)


def parse_modern_fetch(response: bytes, correlation_id: int) -> ModernFetchResponse:
    """``FetchResponse`` v11: throttle_time_ms, error_code, session_id, responses [topic, partitions
    [partition_index, error_code, high_watermark, last_stable_offset, log_start_offset, aborted_transactions
    (nullable) [producer_id, first_offset], preferred_read_replica, records (nullable)]]."""
    r = body_of(response, correlation_id, f"Fetch v{MODERN_FETCH_VERSION}")
    r.i32()
    error = r.i16()
    r.i32()
    parts = []
    for _ in range(r.count()):
        topic = r.text()
        for _ in range(r.count()):
            index, perr, hw, lso, lstart = r.i32(), r.i16(), r.i64(), r.i64(), r.i64()
            aborted = tuple((r.i64(), r.i64()) for _ in range(r.count()))
            r.i32()
            parts.append(FetchedPartition(topic, index, perr, hw, lso, lstart, aborted, r.bytes_() or b""))
    r.done()
    return ModernFetchResponse(error, tuple(parts))
