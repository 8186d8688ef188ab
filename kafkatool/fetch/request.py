"""FetchRequest v0..v3 as an old consumer sends it (the versions a 3.x broker answers by down-converting).

From Kafka's ``FetchRequest.json`` (valid versions 0-17 in 3.9, flexible from 12; 4.0 removed 0-3, KIP-896) and
``RequestHeader`` (header v1 for every non-flexible request)::

    size              int32   bytes that follow
    request_api_key   int16   1 (Fetch)
    request_api_version int16
    correlation_id    int32
    client_id         int16 length + UTF-8 (NULLABLE_STRING)
    replica_id        int32   -1: a consumer
    max_wait_ms       int32
    min_bytes         int32
    max_bytes         int32   v3+ ("Version 3 adds the response maximum bytes", KIP-74)
    topics            int32 count, then per topic:
      topic           int16 length + UTF-8 (STRING)
      partitions      int32 count, then per partition:
        partition         int32
        fetch_offset      int64
        partition_max_bytes int32

Consecutive partitions of one topic share a topic entry, as the Java client builds them; the broker answers in
request order (its response is parsed by :func:`kafkatool.fetch.response.parse_response`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kafkatool.errors import UsageError
from kafkatool.fetch.response import check_version

FETCH_API_KEY = 1
CONSUMER_REPLICA_ID = -1

_HEADER = struct.Struct(">hhi")  # request_api_key, request_api_version, correlation_id
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_LIMITS_V0 = struct.Struct(">iii")  # replica_id, max_wait_ms, min_bytes
_LIMITS_V3 = struct.Struct(">iiii")  # ... and max_bytes
_PARTITION = struct.Struct(">iqi")  # partition, fetch_offset, partition_max_bytes


@dataclass(frozen=True, slots=True)
class FetchPartition:
    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > 0x7FFF:
        raise UsageError(f"{len(data)} bytes is too long for a protocol string", field="topic")
    return _I16.pack(len(data)) + data


def encode_fetch_request(version: int, correlation_id: int, partitions: Sequence[FetchPartition], *,
                         max_wait_ms: int = 500, min_bytes: int = 1, max_bytes: int = 50 << 20,
                         client_id: str | None = "kafkatool") -> bytes:
    """The whole request, size prefix included. ``max_bytes`` is sent from v3 on (v0-v2 have no such field)."""
    check_version(version)
    body = bytearray(_HEADER.pack(FETCH_API_KEY, version, correlation_id))
    body += _I16.pack(-1) if client_id is None else _string(client_id)
    if version >= 3:
        body += _LIMITS_V3.pack(CONSUMER_REPLICA_ID, max_wait_ms, min_bytes, max_bytes)
    else:
        body += _LIMITS_V0.pack(CONSUMER_REPLICA_ID, max_wait_ms, min_bytes)
    groups: list[tuple[str, list[FetchPartition]]] = []
    for p in partitions:
        if groups and groups[-1][0] == p.topic:
            groups[-1][1].append(p)
        else:
            groups.append((p.topic, [p]))
    body += _I32.pack(len(groups))
    for topic, members in groups:
        body += _string(topic) + _I32.pack(len(members))
        for p in members:
            body += _PARTITION.pack(p.partition, p.fetch_offset, p.partition_max_bytes)
    return _I32.pack(len(body)) + bytes(body)
