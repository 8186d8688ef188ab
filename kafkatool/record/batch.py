"""What every message format shares: constants, timestamp types, control types, and the ``Record``.

Sources: ``Records.java``, ``RecordBatch.java``, ``TimestampType.java``, ``ControlRecordType.java``
(kafka-clients 3.9). Formats live in ``legacy_records`` (magic 0/1) and ``default_records`` (magic 2).
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

# Log entry framing shared by every magic (Records.java): [offset int64][size int32] then the entry,
# whose magic byte sits at absolute offset 16.
OFFSET_OFFSET = 0
SIZE_OFFSET = 8
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2
CURRENT_MAGIC = MAGIC_V2

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# [offset int64][size int32]
LOG_HEADER = struct.Struct(">qi")


class TimestampType(enum.IntEnum):
    """``TimestampType``: its ``name`` field is what Kafka prints (``CreateTime`` ...)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        return _TS_LABELS[self]


_TS_LABELS = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


class ControlRecordType(enum.IntEnum):
    """Control record key types (``ControlRecordType``); anything else is UNKNOWN (-1)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def from_type_id(cls, type_id: int) -> ControlRecordType:
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


class Header(NamedTuple):
    key: str
    value: bytes | None


class Record(NamedTuple):
    """One record as Kafka's ``Record`` interface exposes it.

    ``crc``/``crc_valid`` are set for legacy (v0/v1) records only: they are messages with their own CRC.
    ``timestamp`` is already resolved the way Kafka reports it (the batch's max timestamp for
    LogAppendTime v2 batches, the wrapper's time for LogAppendTime v1 wrappers, -1 for v0).
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = NO_SEQUENCE
    size: int = 0
    crc: int | None = None
    crc_valid: bool | None = None


def new_record(fields: tuple[object, ...]) -> Record:
    """Build a Record without the Python-level ``__new__`` (the hot path builds millions)."""
    return _tuple_new(Record, fields)


_tuple_new = tuple.__new__


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: wraps past Integer.MAX_VALUE to 0."""
    if sequence > 0x7FFFFFFF - increment:
        return increment - (0x7FFFFFFF - sequence) - 1
    return sequence + increment


def _configure_speedups() -> None:
    # The compiled parse builds these same classes (without them it declines and the Python path runs).
    from kafkatool._accel import speedups

    if speedups is not None:
        speedups.configure(Record, Header)


_configure_speedups()
