"""Offset-commit records of ``__consumer_offsets`` (classic group coordinator, Kafka 3.9).

Key (``OffsetCommitKey``, written with version 1; 0 has the same layout)::

    version int16 = 1 | group string | topic string | partition int32

Value (``OffsetCommitValue`` version 3, what 3.x writes when no expire timestamp is set)::

    version int16 = 3 | offset int64 | leaderEpoch int32 | metadata string | commitTimestamp int64

``string`` is an int16 length then UTF-8 bytes. A null value is a tombstone (offsets expired or
deleted). Group metadata records (key version 2) are not produced here. The coordinator writes each
commit as one v2 batch, CreateTime, producer id -1 and base sequence **0** (``MemoryRecords.builder(...,
producerId, producerEpoch, 0, isTxnOffsetCommit, ...)`` in ``GroupMetadataManager``), or with the
producer's id and epoch for a transactional offset commit. The partition of a group is
``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkatool.errors import InvalidRecordError

OFFSET_COMMIT_KEY_VERSION = 1
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_TOPIC = "__consumer_offsets"

_I16 = struct.Struct(">h")
_VALUE_V3 = struct.Struct(">hqi")


def java_string_hash(s: str) -> int:
    """``String.hashCode``: over UTF-16 code units, 32-bit wrap-around."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_group(group_id: str, partitions: int) -> int:
    """``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) % partitions``."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return _I16.pack(len(b)) + b


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _I16.pack(OFFSET_COMMIT_KEY_VERSION) + _string(group) + _string(topic) + struct.pack(">i", partition)


def encode_offset_commit_value(offset: int, leader_epoch: int, metadata: str, commit_timestamp: int) -> bytes:
    return (_VALUE_V3.pack(OFFSET_COMMIT_VALUE_VERSION, offset, leader_epoch) + _string(metadata)
            + struct.pack(">q", commit_timestamp))


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    version: int
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    version: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


def _read_string(data: bytes, p: int) -> tuple[str, int]:
    if p + 2 > len(data):
        raise InvalidRecordError("offset commit record ends inside a string length")
    (n,) = _I16.unpack_from(data, p)
    p += 2
    if n < 0 or p + n > len(data):
        raise InvalidRecordError(f"offset commit record string of length {n} runs past the end")
    return data[p:p + n].decode("utf-8", "replace"), p + n


def decode_offset_commit_key(data: bytes) -> OffsetCommitKey:
    if len(data) < 2:
        raise InvalidRecordError("offset commit key is shorter than its version")
    (version,) = _I16.unpack_from(data, 0)
    if version not in (0, 1):
        raise InvalidRecordError(f"not an offset commit key (key version {version})")
    group, p = _read_string(data, 2)
    topic, p = _read_string(data, p)
    if p + 4 != len(data):
        raise InvalidRecordError("offset commit key has a bad length")
    return OffsetCommitKey(version, group, topic, struct.unpack_from(">i", data, p)[0])


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    if len(data) < _VALUE_V3.size:
        raise InvalidRecordError("offset commit value is too short")
    version, offset, epoch = _VALUE_V3.unpack_from(data, 0)
    if version != 3:
        raise InvalidRecordError(f"offset commit value version {version} is not decoded here (only 3)")
    metadata, p = _read_string(data, _VALUE_V3.size)
    if p + 8 != len(data):
        raise InvalidRecordError("offset commit value has a bad length")
    return OffsetCommitValue(version, offset, epoch, metadata, struct.unpack_from(">q", data, p)[0])
