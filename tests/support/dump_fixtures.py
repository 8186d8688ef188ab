"""Small segment/partition fixtures for the dump tests.

Batches come from the library's writers, which are byte-identical to Kafka 3.9.1's for uncompressed data
(``tests/record/test_records.py`` proves it against the golden vectors); ``.index``/``.timeindex`` come from
``recover.recover_segment`` (Kafka's ``LogSegment.recover`` rules), i.e. what a broker rebuilds.
"""

from __future__ import annotations

import struct
from pathlib import Path

from kafkatool.log.index import encode_offset_index, encode_time_index
from kafkatool.log.recovery import recover_segment
from kafkatool.record import default_records as v2
from tests.support.paths import VECTORS, golden

TS = 1_700_000_000_000
G = golden()


def golden_commit_marker() -> bytes:
    """The golden ``v2_commit_marker`` line carries a `` size=78`` suffix the generic parser skips."""
    for line in (VECTORS / "kafka-3.9.1-golden.txt").read_text().splitlines():
        if line.startswith("v2_commit_marker"):
            return bytes.fromhex(line.split("=", 1)[1].split()[0])
    raise KeyError("v2_commit_marker")


def v2_batches(n: int, per_batch: int = 5, *, base: int = 0, value_size: int = 100, epoch: int = 0) -> list[bytes]:
    out = []
    off = base
    for _ in range(n):
        recs = [(off + j, TS + off + j, b"key-%d" % (off + j), b"v" * value_size, [("h", b"x")])
                for j in range(per_batch)]
        out.append(v2.build_batch(recs, partition_leader_epoch=epoch))
        off += per_batch
    return out


def write_segment(directory: Path, batches: list[bytes], *, base: int = 0, indexes: bool = True,
                  interval: int = 4096) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{base:020d}.log"
    log.write_bytes(b"".join(batches))
    if indexes:
        r = recover_segment(log, base, index_interval_bytes=interval)
        log.with_suffix(".index").write_bytes(encode_offset_index(r.offset_entries, base))
        log.with_suffix(".timeindex").write_bytes(encode_time_index(r.time_entries, base))
    return log


def patch_index_entry(path: Path, slot: int, *, rel_delta: int = 0, pos_delta: int = 0) -> None:
    data = bytearray(path.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, slot * 8)
    struct.pack_into(">ii", data, slot * 8, rel + rel_delta, pos + pos_delta)
    path.write_bytes(bytes(data))


def patch_time_entry(path: Path, slot: int, *, ts_delta: int = 0, rel_delta: int = 0) -> None:
    data = bytearray(path.read_bytes())
    ts, rel = struct.unpack_from(">qi", data, slot * 12)
    struct.pack_into(">qi", data, slot * 12, ts + ts_delta, rel + rel_delta)
    path.write_bytes(bytes(data))
