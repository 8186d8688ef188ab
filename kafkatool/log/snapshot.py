"""Producer state snapshots (``<offset>.snapshot``, ``ProducerStateManager``). Spec §4.4.

Layout (version 1)::

    version int16 = 1 | crc uint32 (CRC-32C of bytes 6..end) | count int32 |
    count x [producerId int64 | producerEpoch int16 | lastSequence int32 | lastOffset int64 |
             offsetDelta int32 | timestamp int64 | coordinatorEpoch int32 | currentTxnFirstOffset int64]
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from kafkatool._accel import crc32c as _crc32c
from kafkatool.constants import INT32_MAX
from kafkatool.errors import CorruptDataError, InputError
from kafkatool.util.regular import open_regular

VERSION = 1
HEADER = struct.Struct(
    ">h"  # version  int16   1
    "I"   # crc      uint32  CRC-32C of the rest of the file: count and entries
    "i"   # count    int32
)
CRC_OFFSET = struct.calcsize(">h")
COUNT_OFFSET = struct.calcsize(">hI")  # the CRC covers everything from here
ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = ENTRY.size  # 46
MAX_SNAPSHOT_READ = 1 << 30


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1 when no transaction is open

    @property
    def first_sequence(self) -> int:
        """``BatchMetadata.firstSeq``: ``decrementSequence(lastSeq, offsetDelta)``."""
        if self.last_sequence < self.offset_delta:
            return INT32_MAX - (self.offset_delta - self.last_sequence) + 1
        return self.last_sequence - self.offset_delta

    @property
    def has_batch_metadata(self) -> bool:
        return self.last_offset >= 0


def read_snapshot(path: str | os.PathLike[str]) -> list[ProducerSnapshotEntry]:
    """``ProducerStateManager.readSnapshot``: version and CRC checked (``CorruptSnapshotException``)."""
    p = Path(path)
    try:
        with open_regular(p) as f:
            if f.size > MAX_SNAPSHOT_READ:
                raise InputError("producer snapshot is implausibly large", path=p)
            data = f.read_all()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=p) from None
    if len(data) < HEADER.size:
        raise CorruptDataError(f"Snapshot is corrupt: {len(data)} bytes is too short for the header", path=p,
                               position=0)
    version, crc, count = HEADER.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptDataError(f"Snapshot contained an unknown file version {version}", path=p, position=0)
    computed = _crc32c.crc32c(memoryview(data)[COUNT_OFFSET:])
    if crc != computed:
        raise CorruptDataError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: "
                               f"{computed}", path=p, position=CRC_OFFSET)
    if count < 0 or HEADER.size + count * ENTRY_SIZE > len(data):
        raise CorruptDataError(f"Snapshot is corrupt: {count} entries do not fit in {len(data)} bytes", path=p,
                               position=COUNT_OFFSET)
    return [ProducerSnapshotEntry(*ENTRY.unpack_from(data, HEADER.size + i * ENTRY_SIZE)) for i in range(count)]


def encode_snapshot(entries: list[ProducerSnapshotEntry]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(
        ENTRY.pack(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
                   e.coordinator_epoch, e.current_txn_first_offset) for e in entries)
    return struct.pack(">hI", VERSION, _crc32c.crc32c(body)) + body
