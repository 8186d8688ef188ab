"""Building small real segments for the reindex tests, with kafkatool's record builders.

The builders write Kafka's byte layout (``MemoryRecordsBuilder`` rules, checked against kafka-clients
3.9.1 in test_records.py); these helpers only choose offsets, timestamps and sizes so that expected
index entries can be worked out by hand.
"""

from __future__ import annotations

import struct
from pathlib import Path

from kafkatool.log.layout import filename_prefix_from_offset
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_batch
from kafkatool.record.legacy_records import build_entries

T0 = 1_700_000_000_000


def v2(first: int, count: int = 1, *, ts: int | list[int] = T0, value: int = 10, codec: Codec = Codec.NONE,
       log_append_time: int | None = None, **kw: object) -> bytes:
    """One v2 batch of ``count`` records at offsets first.., timestamps ``ts`` (one or per record)."""
    stamps = ts if isinstance(ts, list) else [ts] * count
    recs = [(first + i, stamps[i], None, b"v" * value, ()) for i in range(count)]
    if log_append_time is not None:
        return build_batch(recs, codec=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                           log_append_time=log_append_time, **kw)  # type: ignore[arg-type]
    return build_batch(recs, codec=codec, **kw)  # type: ignore[arg-type]


def v2_sized(offset: int, size: int, *, ts: int = T0, **kw: object) -> bytes:
    """A one-record uncompressed v2 batch of exactly ``size`` bytes."""
    for value in range(max(0, size - 80), size):
        b = v2(offset, ts=ts, value=value, **kw)
        if len(b) == size:
            return b
    raise ValueError(f"no one-record batch of {size} bytes")


def legacy(magic: int, first: int, count: int = 1, *, ts: int = T0, value: int = 10, codec: Codec = Codec.NONE,
           log_append_time: int | None = None) -> bytes:
    recs = [(first + i, ts + i, None, b"v" * value) for i in range(count)]
    if log_append_time is not None:
        return build_entries(recs, magic=magic, codec=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                             log_append_time=log_append_time)
    return build_entries(recs, magic=magic, codec=codec)


def positions(batches: list[bytes]) -> list[int]:
    out, p = [], 0
    for b in batches:
        out.append(p)
        p += len(b)
    return out


def write_segment(directory: Path, base_offset: int, batches: list[bytes] | bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (filename_prefix_from_offset(base_offset) + ".log")
    path.write_bytes(batches if isinstance(batches, bytes) else b"".join(batches))
    return path


def append_path_indexes(batches: list[bytes], chunks: list[int] | None = None, *, base: int = 0,
                        interval: int = 4096, record_level: bool = False, roll: bool = True) -> tuple[bytes, bytes]:
    """The .index/.timeindex a 3.9 broker writes through ``LogSegment.append`` (KAFKA-FORMATS §4.2), then
    ``onBecomeInactiveSegment`` at roll (the final time entry) when ``roll``.

    ``chunks`` are the number of batches per ``append()`` call: a leader appends one produce batch at a
    time (all 1s); a follower or the cleaner appends multi-batch chunks, indexed as (largest offset of the
    chunk, position of its first batch). ``record_level`` is a <= 3.6 leader: for an uncompressed v2
    CreateTime batch, the shallow offset of the max timestamp is the *record's* offset, not the batch's last.
    """
    from kafkatool.record.file_records import iter_batches

    parsed = list(iter_batches(b"".join(batches)))
    chunks = chunks or [1] * len(parsed)
    assert sum(chunks) == len(parsed)
    offsets, times = [], []
    size = since = 0
    max_ts, max_off = -1, base
    t_last_ts = -1
    i = 0
    for n in chunks:
        group = parsed[i:i + n]
        i += n
        largest = group[-1].last_offset
        largest_ts, shallow = -1, -1
        for b in group:
            ts, off = b.max_timestamp, b.last_offset
            if record_level and b.magic == 2 and not b.is_compressed and b.timestamp_type.label == "CreateTime":
                rec = max(b.records(), key=lambda r: (r.timestamp, -r.offset))
                off = rec.offset
            if ts > largest_ts:
                largest_ts, shallow = ts, off
        position = size
        size += sum(b.size for b in group)
        if largest_ts > max_ts:
            max_ts, max_off = largest_ts, shallow
        if since > interval:
            offsets.append(struct.pack(">ii", largest - base, position))
            if max_ts > t_last_ts:
                times.append(struct.pack(">qi", max_ts, max_off - base))
                t_last_ts = max_ts
            since = 0
        since += sum(b.size for b in group)
    if roll and max_ts > t_last_ts:
        times.append(struct.pack(">qi", max_ts, max_off - base))
    return b"".join(offsets), b"".join(times)
