"""Partition dirs for the conversion tests.

Batches come from kafkatool's builders, which reproduce kafka-clients 3.9.1's bytes exactly for
uncompressed data (pinned by tests/record/test_records.py against tests/vectors/kafka-3.9.1-golden.txt); the
interop tests repeat the important cases on files written by Kafka's own MemoryRecordsBuilder.
"""

from __future__ import annotations

import os
from pathlib import Path

from kafkatool.log.checkpoints import EpochEntry, encode_leader_epoch_checkpoint, encode_partition_metadata
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import iter_batches

TS = 1_700_000_000_000
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def v2_txn_log(first: int = 0, batches: int = 6, per_batch: int = 4, codec: Codec = Codec.NONE,
               headers: bool = True, epoch: int = 3) -> bytes:
    """Transactional v2 batches with headers, each followed by a COMMIT or ABORT marker."""
    out = []
    off = first
    for i in range(batches):
        recs = [(off + j, TS + off + j, f"k{off + j}".encode() if j % 3 else None, f"value-{off + j}".encode() * 3,
                 [("h", b"x"), ("trace", None)] if headers and j % 2 == 0 else []) for j in range(per_batch)]
        out.append(v2.build_batch(recs, codec=codec, producer_id=77, producer_epoch=1, base_sequence=off - first,
                                  is_transactional=True, partition_leader_epoch=epoch))
        off += per_batch
        out.append(v2.build_end_txn_marker(offset=off, timestamp=TS + off, producer_id=77, producer_epoch=1,
                                           commit=i % 3 != 1, coordinator_epoch=2, partition_leader_epoch=epoch))
        off += 1
    return b"".join(out)


def v2_log(first: int = 0, batches: int = 5, per_batch: int = 5, codec: Codec = Codec.NONE, value_bytes: int = 40,
           lat: bool = False, payload: bytes | None = None) -> bytes:
    out = []
    off = first
    for _ in range(batches):
        recs = [(off + j, TS + off + j, f"key-{off + j}".encode(),
                 (payload if payload is not None else f"v{off + j}-".encode() * (value_bytes // 4 + 1))[:value_bytes],
                 ()) for j in range(per_batch)]
        out.append(v2.build_batch(recs, codec=codec, timestamp_type=TimestampType.LOG_APPEND_TIME if lat else
                                  TimestampType.CREATE_TIME, log_append_time=TS + 999))
        off += per_batch
    return b"".join(out)


ALL_LEGACY_CODECS = (Codec.NONE, Codec.GZIP, Codec.LZ4, Codec.SNAPPY)


def legacy_log(magic: int, first: int = 0, batches: int = 6, per_batch: int = 3,
               codecs: tuple[Codec, ...] = ALL_LEGACY_CODECS, lat: bool = False) -> bytes:
    """v0/v1 data as old producers wrote it: runs of uncompressed messages and compressed wrappers."""
    out = []
    off = first
    for i in range(batches):
        codec = codecs[i % len(codecs)]
        recs = [(off + j, TS + 10 * (off + j), f"k{off + j}".encode() if j else None, f"legacy-{off + j}".encode())
                for j in range(per_batch)]
        out.append(legacy.build_entries(recs, magic=magic, codec=codec,
                                        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else
                                        TimestampType.CREATE_TIME, log_append_time=TS + 5000 + i))
        off += per_batch
    return b"".join(out)


def make_partition(root: Path, name: str, segments: dict[int, bytes], *, metadata: bool = True,
                   extra: dict[str, bytes] | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    for base, data in segments.items():
        (d / f"{base:020d}.log").write_bytes(data)
    if metadata:
        (d / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([EpochEntry(3, 0)]))
        (d / "partition.metadata").write_bytes(encode_partition_metadata(TOPIC_ID))
    for fname, data in (extra or {}).items():
        (d / fname).write_bytes(data)
    return d


def records_of(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every data record, as Kafka's reader reports them."""
    return [(r.offset, r.timestamp, r.key, r.value) for b in iter_batches(data) if not b.is_control
            for r in b.records()]


def read_segments(d: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))


def tree_digest(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = os.stat(p)
            out[str(p.relative_to(root))] = (st.st_size, hash(p.read_bytes()))
    return out
