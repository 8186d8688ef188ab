"""Batches built from records read a chunk at a time, for the converters' batches of more records than a run may
hold (a valid 3 MB batch can carry millions): a v2 batch with ``default_records.build_batch``'s bytes, a v0/v1
compressed wrapper with ``legacy_records.build_entries``' bytes, and uncompressed legacy messages a chunk at a
time. A built batch is kept only while it fits the output limit it is built under (the converters' is
``max.message.bytes``); past it only its size is counted, which is all KIP-126's split needs
(``estimator.stream_within_limit``). A record the format cannot hold (a timestamp below -1, offsets that do not
increase) is an ``InvalidRecordError`` at ``position`` (the source batch's). zstd is the one codec whose streamed
bytes may differ from the one-shot ones (``codecs.StreamCompressor``): the records are the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, cast

from kafkatool.errors import InvalidRecordError
from kafkatool.record.batch import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Record,
    TimestampType,
)
from kafkatool.record.codecs import Codec, StreamCompressor
from kafkatool.record.default_records import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    _assemble,
    encode_records,
)
from kafkatool.record.estimator import Built
from kafkatool.record.legacy_records import (
    compute_attributes,
    encode_entries,
    encode_entry,
    encode_message,
    record_overhead,
)


class _Kept:
    """Output pieces while their total stays within ``cap``; past it, only the total."""

    __slots__ = ("parts", "size", "cap")

    def __init__(self, cap: int) -> None:
        self.parts: list[bytes] | None = []
        self.size = 0
        self.cap = cap

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.parts is not None:
            if self.size > self.cap:
                self.parts = None  # too large: nothing of it will be written
            elif piece:
                self.parts.append(piece)


def v2_batch(chunks: Iterable[list[Record]], *, cap: int, codec: Codec | int, keep_headers: bool = True,
             base_offset: int | None = None, timestamp_type: TimestampType = TimestampType.CREATE_TIME,
             log_append_time: int = NO_TIMESTAMP, producer_id: int = NO_PRODUCER_ID,
             producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
             is_transactional: bool = False, is_control: bool = False,
             partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH, delete_horizon_ms: int | None = None,
             override_last_offset: int | None = None, position: int | None = None) -> Built:
    """``build_batch`` of the records in ``chunks`` (``keep_headers`` False: every record without headers, as
    the up-conversion of legacy records builds them), holding one chunk of records and at most ``cap`` bytes of
    output: ``data`` is None when the batch is larger than ``cap``."""
    comp = StreamCompressor(codec)
    body = _Kept(cap - RECORD_BATCH_OVERHEAD)
    base = base_ts = first = None
    last = NO_TIMESTAMP
    max_ts = NO_TIMESTAMP
    count = area = 0
    for chunk in chunks:
        if not chunk:
            continue
        if base is None:
            first = chunk[0][0]
            base = first if base_offset is None else base_offset
            base_ts = delete_horizon_ms if delete_horizon_ms is not None else chunk[0][1]
        elif chunk[0][0] <= last:
            raise InvalidRecordError(f"offsets must increase: {chunk[0][0]} after {last}", position=position)
        recs = [(r[0], r[1], r[2], r[3], r[4] if keep_headers else ()) for r in chunk]
        assert base_ts is not None
        try:
            piece, last, ts = encode_records(recs, base, base_ts)
        except ValueError as e:
            raise InvalidRecordError(str(e), position=position) from None
        max_ts = max(max_ts, ts)
        count += len(chunk)
        area += len(piece)
        body.add(comp.feed(piece))
    if base is None or base_ts is None or first is None:
        raise ValueError("a v2 batch built from records needs at least one record (see build_empty_batch)")
    body.add(comp.finish())
    last_record = last
    if override_last_offset is not None:
        if override_last_offset < last:
            raise ValueError(f"override_last_offset {override_last_offset} is below the last record's offset {last}")
        last = override_last_offset
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        max_ts = log_append_time
    attributes = int(codec) & COMPRESSION_CODEC_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
    data = None
    if body.parts is not None:
        data = _assemble(base, partition_leader_epoch, attributes, last - base, base_ts, max_ts, producer_id,
                         producer_epoch, base_sequence, count, b"".join(body.parts))
    return Built(data, RECORD_BATCH_OVERHEAD + body.size, area, first, last_record, count)


def legacy_wrapper(chunks: Iterable[list[Record]], *, cap: int, magic: int, codec: Codec | int,
                   timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                   log_append_time: int = NO_TIMESTAMP, position: int | None = None) -> Built:
    """``build_entries`` of the records in ``chunks`` with a compression ``codec``: one wrapper (its offset the
    last record's, v1 inner offsets relative to the first), holding one chunk of records and at most ``cap``
    bytes of output: ``data`` is None when the wrapper is larger than ``cap``."""
    if codec == Codec.ZSTD:
        raise ValueError(f"ZStandard compression is not supported for magic {magic}")
    if magic not in (MAGIC_V0, MAGIC_V1) or codec == Codec.NONE:
        raise ValueError(f"a compressed wrapper of magic 0 or 1, not magic {magic} codec {int(codec)}")
    if magic == MAGIC_V0:
        timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
    lat = timestamp_type == TimestampType.LOG_APPEND_TIME
    inner_attrs = compute_attributes(magic, Codec.NONE, timestamp_type) & 0xFF
    comp = StreamCompressor(codec, magic=magic)
    head = LOG_OVERHEAD + record_overhead(magic)
    value = _Kept(cap - head)
    shift = first = None
    last = max_ts = NO_TIMESTAMP
    count = inner = 0
    for chunk in chunks:
        if not chunk:
            continue
        if first is None:
            first = chunk[0][0]
            shift = first if magic > MAGIC_V0 else 0
        assert shift is not None
        try:
            piece, ts = encode_entries(cast(Any, chunk), magic=magic, attributes=inner_attrs,
                                       timestamp=log_append_time if lat else None, offset_shift=shift)
        except ValueError as e:
            raise InvalidRecordError(str(e), position=position) from None
        max_ts = max(max_ts, ts)
        last = chunk[-1][0]
        count += len(chunk)
        inner += len(piece)
        value.add(comp.feed(piece))
    if first is None:
        raise ValueError("a wrapper built from records needs at least one record")
    value.add(comp.finish())
    data = None
    if value.parts is not None:
        wrapper_ts = log_append_time if lat else max_ts
        message = encode_message(magic, compute_attributes(magic, codec, timestamp_type),
                                 wrapper_ts if magic > MAGIC_V0 else NO_TIMESTAMP, None, b"".join(value.parts))
        data = encode_entry(last, message)
    return Built(data, head + value.size, inner, first, last, count)


def legacy_messages(chunks: Iterable[list[Record]], *, magic: int,
                    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                    log_append_time: int = NO_TIMESTAMP,
                    position: int | None = None) -> Iterator[tuple[bytes, int, int, int]]:
    """``build_entries`` without compression, a chunk at a time: (the chunk's messages, first offset, last
    offset, how many)."""
    if magic == MAGIC_V0:
        timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
    lat = timestamp_type == TimestampType.LOG_APPEND_TIME
    attrs = compute_attributes(magic, Codec.NONE, timestamp_type) & 0xFF
    for chunk in chunks:
        if chunk:
            try:
                data, _ = encode_entries(cast(Any, chunk), magic=magic, attributes=attrs,
                                         timestamp=log_append_time if lat else None)
            except ValueError as e:
                raise InvalidRecordError(str(e), position=position) from None
            yield data, chunk[0][0], chunk[-1][0], len(chunk)
