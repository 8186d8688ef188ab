"""What every message format shares: constants, timestamp types, control types, and the ``Record``.

Sources: ``Records.java``, ``RecordBatch.java``, ``TimestampType.java``, ``ControlRecordType.java``
(kafka-clients 3.9). Formats live in ``legacy_records`` (magic 0/1) and ``default_records`` (magic 2).
"""

from __future__ import annotations

import enum
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import NamedTuple

from kafkatool.constants import INT32_MAX
from kafkatool.util import budget as _budget

# In front of every log entry, whatever its magic (Records.java).
LOG_HEADER = struct.Struct(
    ">q"  # offset  int64   v2: baseOffset; v0/v1: the message's offset (a compressed wrapper's: its last inner one)
    "i"   # size    int32   bytes of the entry after this field
)
OFFSET_OFFSET = 0
SIZE_OFFSET = struct.calcsize(">q")
LOG_OVERHEAD = LOG_HEADER.size  # 12: what the size field does not count

# What FileLogInputStream reads at every position before it knows the format (HEADER_SIZE_UP_TO_MAGIC bytes),
# then dispatches on the magic: below 2 a LegacyRecordBatch, else a DefaultRecordBatch (magic 3+ included).
LOG_ENTRY_PREFIX = struct.Struct(
    LOG_HEADER.format
    + "4x"  # v2: partitionLeaderEpoch int32; v0/v1: crc uint32
    + "b"  # magic   int8
)
MAGIC_OFFSET = struct.calcsize(LOG_HEADER.format + "4x")  # 16 in every format
HEADER_SIZE_UP_TO_MAGIC = LOG_ENTRY_PREFIX.size  # 17

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2
CURRENT_MAGIC = MAGIC_V2

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


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
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


class RecordSource:
    """The records of one batch, decoded a chunk at a time from its records area (decompressed once), never
    all at once: a valid batch of a few MB can hold millions of records.

    ``batch.record_source()`` makes one after checking the whole batch, so reading it does not raise: a damaged
    record fails the batch before any record is handed out, as ``batch.records()`` fails it. ``read(position,
    n)`` decodes the ``n`` records that start at byte ``position`` of the area and returns them with the
    position after them; a record's ``size`` is its length in the area, so the position of any record read is
    known (``start`` plus the sizes before it) and a run of records can be read again from there.
    """

    __slots__ = ("count", "start", "held", "_read")

    def __init__(self, count: int, start: int, read: Callable[[int, int], tuple[list[Record], int]],
                 held: list[Record] | None = None) -> None:
        self.count = count
        self.start = start
        self.held = held  # every record, when they were few enough to decode at once
        self._read = read

    @classmethod
    def of(cls, records: list[Record]) -> RecordSource:
        """A source over records already decoded (``held``; positions are the sums of their sizes)."""
        starts = [0]
        for r in records:
            starts.append(starts[-1] + r.size)

        def read(position: int, n: int) -> tuple[list[Record], int]:
            i = bisect_left(starts, position)
            out = records[i:i + n]
            return out, starts[i + len(out)]

        return cls(len(records), 0, read, records)

    def read(self, position: int, n: int) -> tuple[list[Record], int]:
        return self._read(position, n)

    def chunks(self, size: int | None = None, *, position: int | None = None,
               count: int | None = None) -> Iterator[list[Record]]:
        """``count`` records (default: all) from ``position`` (default: the first), ``size`` at a time (default:
        the memory budget's ``record_chunk``)."""
        n = _budget.record_chunk() if size is None else max(1, size)
        p = self.start if position is None else position
        left = self.count if count is None else count
        while left > 0:
            recs, p = self._read(p, min(n, left))
            if not recs:
                return
            left -= len(recs)
            yield recs

    def __iter__(self) -> Iterator[Record]:
        for chunk in self.chunks():
            yield from chunk


def _configure_speedups() -> None:
    # The compiled parse builds these same classes (without them it declines and the Python path runs).
    from kafkatool._accel import speedups

    if speedups is not None:
        speedups.configure(Record, Header)


_configure_speedups()
