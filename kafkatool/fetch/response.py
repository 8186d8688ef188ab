"""FetchResponse v0..v3 wire framing (the versions that down-convert), as a 3.9 broker sends it.

From Kafka's ``FetchResponse.json`` (valid versions 0-12, flexible from 12) and ``ResponseHeader``
(header v0 = correlation id only, for every non-flexible response)::

    size            int32   bytes that follow (the Send's size prefix)
    correlation_id  int32   response header v0
    throttle_time_ms int32  v1+ ("Version 1 adds throttle time. Version 2 and 3 are the same as version 1.")
    responses       int32 count, then per topic:
      topic         int16 length + UTF-8 (STRING)
      partitions    int32 count, then per partition:
        partition_index  int32
        error_code       int16
        high_watermark   int64
        records          int32 length + bytes (NULLABLE records; -1 = null)

Fields from v4 on (last_stable_offset, log_start_offset, aborted_transactions, ...) are absent in
v0..v3. Partitions are grouped into a topic entry only while consecutive partitions share the topic
(``FetchResponse.toMessage`` keeps the request order). The size prefix counts each partition's records
at the size the records object reports *before* any byte is converted: ``LazyDownConversionRecords``'
committed size (spec §5.3), so the prefix is written before the conversion runs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kafkatool.errors import CorruptDataError, UsageError

MIN_VERSION = 0
MAX_VERSION = 3  # the down-converting versions: Fetch v0-1 -> magic 0, v2-3 -> magic 1

# protocol/Errors.java codes a fetch simulation can produce
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNSUPPORTED_COMPRESSION_TYPE = 76
ERROR_NAMES = {
    NONE: "NONE",
    OFFSET_OUT_OF_RANGE: "OFFSET_OUT_OF_RANGE",
    CORRUPT_MESSAGE: "CORRUPT_MESSAGE",
    UNSUPPORTED_COMPRESSION_TYPE: "UNSUPPORTED_COMPRESSION_TYPE",
}
INVALID_HIGH_WATERMARK = -1  # FetchResponse.INVALID_HIGH_WATERMARK

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqi")  # partition_index, error_code, high_watermark, records length


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"ERROR_{code}")


def has_throttle_time(version: int) -> bool:
    return version >= 1


def check_version(version: int) -> None:
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise UsageError(f"FetchResponse v{version} is not a down-converting version (0..3)", field="fetch_version")


@dataclass(frozen=True, slots=True)
class PartitionHeader:
    """One partition's fields; ``records_size`` is -1 for null records."""

    topic: str
    partition: int
    error_code: int
    high_watermark: int
    records_size: int


def _topic_groups(partitions: Sequence[PartitionHeader]) -> list[tuple[str, list[int]]]:
    groups: list[tuple[str, list[int]]] = []
    for i, p in enumerate(partitions):
        if groups and groups[-1][0] == p.topic:
            groups[-1][1].append(i)
        else:
            groups.append((p.topic, [i]))
    return groups


def response_size(version: int, partitions: Sequence[PartitionHeader]) -> int:
    """The size prefix: every byte after it (header, body, and each partition's committed records size)."""
    check_version(version)
    size = 4 + (4 if has_throttle_time(version) else 0) + 4
    for topic, members in _topic_groups(partitions):
        size += 2 + len(topic.encode("utf-8")) + 4
        for i in members:
            size += _PARTITION.size + max(0, partitions[i].records_size)
    return size


def framing(version: int, correlation_id: int, throttle_time_ms: int,
            partitions: Sequence[PartitionHeader]) -> Iterator[bytes | int]:
    """The response as a stream: ``bytes`` to write, and ``int`` i where partition i's records go."""
    check_version(version)
    head = _I32.pack(response_size(version, partitions)) + _I32.pack(correlation_id)
    if has_throttle_time(version):
        head += _I32.pack(throttle_time_ms)
    groups = _topic_groups(partitions)
    yield head + _I32.pack(len(groups))
    for topic, members in groups:
        name = topic.encode("utf-8")
        yield _I16.pack(len(name)) + name + _I32.pack(len(members))
        for i in members:
            p = partitions[i]
            yield _PARTITION.pack(p.partition, p.error_code, p.high_watermark, p.records_size)
            if p.records_size > 0:
                yield i


@dataclass(frozen=True, slots=True)
class ParsedPartition:
    topic: str
    partition: int
    error_code: int
    high_watermark: int
    records: bytes | None


@dataclass(frozen=True, slots=True)
class ParsedResponse:
    size: int
    correlation_id: int
    throttle_time_ms: int | None
    partitions: tuple[ParsedPartition, ...]


def parse_response(data: bytes, version: int) -> ParsedResponse:
    """Parse a size-prefixed FetchResponse v0..v3 (the inverse of :func:`framing`), strictly."""
    check_version(version)
    mv = memoryview(data)
    p = 0

    def take(n: int) -> memoryview:
        nonlocal p
        if n < 0 or p + n > len(mv):
            raise CorruptDataError(f"FetchResponse v{version} ends inside a field ({n} bytes needed, "
                                   f"{len(mv) - p} left)", position=p)
        out = mv[p:p + n]
        p += n
        return out

    def i16() -> int:
        return int(_I16.unpack(take(2))[0])

    def i32() -> int:
        return int(_I32.unpack(take(4))[0])

    size = i32()
    if size != len(mv) - 4:
        raise CorruptDataError(f"size prefix says {size} bytes but {len(mv) - 4} follow", position=0)
    correlation_id = i32()
    throttle = i32() if has_throttle_time(version) else None
    parts: list[ParsedPartition] = []
    for _ in range(_count(i32(), p)):
        n = i16()
        if n < 0:
            raise CorruptDataError(f"null topic name (length {n})", position=p - 2)
        at = p
        try:
            topic = bytes(take(n)).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptDataError(f"topic name is not UTF-8 ({e.reason} at byte {at + e.start})",
                                   position=at + e.start) from None
        for _ in range(_count(i32(), p)):
            partition, error_code, hw, rsize = _PARTITION.unpack(take(_PARTITION.size))
            records = None if rsize == -1 else bytes(take(rsize))
            parts.append(ParsedPartition(topic, partition, error_code, hw, records))
    if p != len(mv):
        raise CorruptDataError(f"{len(mv) - p} bytes after the last partition", position=p)
    return ParsedResponse(size, correlation_id, throttle, tuple(parts))


def _count(n: int, position: int) -> int:
    if n < 0:
        raise CorruptDataError(f"negative array length {n}", position=position - 4)
    return n
