"""KIP-126: Kafka's compression-ratio estimator and ``MemoryRecordsBuilder``'s room check. Spec §6.

Sources (kafka-clients 3.9): ``CompressionRatioEstimator``, ``MemoryRecordsBuilder.hasRoomFor`` /
``isFull`` / ``estimatedBytesWritten``, ``ProducerBatch.split``, ``AbstractRecords.recordBatchHeaderSizeInBytes``,
``DefaultRecord.sizeInBytes``, ``LegacyRecord.recordSize``.

* The estimator keeps one ratio per (topic, codec), starting at 1.0. ``update_estimation(observed)``
  moves it towards the observed ratio: up at once (at least +0.05, ``COMPRESSION_RATIO_DETERIORATE_STEP``),
  down slowly (at most -0.005, ``COMPRESSION_RATIO_IMPROVING_STEP``). Java keeps these as ``float``; we
  round every step to IEEE single precision so the sequence of ratios is Kafka's, bit for bit.
* A builder estimates what it has written as ``header + uncompressed * ratio * 1.05`` (exact when the codec
  is none) and takes a record while ``writeLimit >= estimate + recordSize`` (uncompressed size of the
  next record); the first record always fits.
* When a built batch is still too large, the producer splits it: the estimate is reset to
  ``max(1.0, the big batch's ratio)`` and the records are re-planned into new batches.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from kafkatool._accel import speedups as _C
from kafkatool.errors import LimitExceededError
from kafkatool.record.batch import LOG_OVERHEAD, MAGIC_V0, MAGIC_V2, RecordSource
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import MAX_RECORD_OVERHEAD, RECORD_BATCH_OVERHEAD
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1
from kafkatool.record.varint import size_of_varint, size_of_varlong

COMPRESSION_RATIO_IMPROVING_STEP = 0.005
COMPRESSION_RATIO_DETERIORATE_STEP = 0.05
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05
INITIAL_RATIO = 1.0  # CompressionType.rate: 1.0 for every codec since 2.1

_F32 = struct.Struct("f")


def f32(x: float, _pack: Callable[[float], bytes] = _F32.pack,
        _unpack: Callable[[bytes], tuple[Any, ...]] = _F32.unpack) -> float:
    """Round to IEEE single precision, as Java's ``float`` arithmetic does after every operation."""
    return float(_unpack(_pack(x))[0])


_STEP_UP = f32(COMPRESSION_RATIO_DETERIORATE_STEP)
_STEP_DOWN = f32(COMPRESSION_RATIO_IMPROVING_STEP)
_FACTOR = f32(COMPRESSION_RATE_ESTIMATION_FACTOR)
# update_estimation's two steps, as floats (the compiled down-conversion run updates estimates itself).
ESTIMATION_STEPS = (_STEP_UP, _STEP_DOWN)


@dataclass(slots=True)
class CompressionRatioEstimator:
    """``CompressionRatioEstimator``: ratios per (topic, codec). One instance per conversion run."""

    ratios: dict[tuple[str, int], float] = field(default_factory=dict)

    def estimation(self, topic: str, codec: Codec | int) -> float:
        return self.ratios.get((topic, int(codec)), INITIAL_RATIO)

    def update_estimation(self, topic: str, codec: Codec | int, observed_ratio: float) -> float:
        key = (topic, int(codec))
        current = self.ratios.get(key, INITIAL_RATIO)
        observed = f32(observed_ratio)
        if observed > current:
            current = max(f32(current + _STEP_UP), observed)
        elif observed < current:
            current = max(f32(current - _STEP_DOWN), observed)
        self.ratios[key] = current
        return current

    def set_estimation(self, topic: str, codec: Codec | int, ratio: float) -> None:
        self.ratios[(topic, int(codec))] = f32(ratio)

    def reset_estimation(self, topic: str, codec: Codec | int) -> None:
        self.ratios[(topic, int(codec))] = INITIAL_RATIO


def batch_header_size(magic: int, codec: Codec | int) -> int:
    """``AbstractRecords.recordBatchHeaderSizeInBytes``: v2 61; a legacy compressed wrapper's message
    header with its log overhead; 0 for legacy uncompressed (each record is its own entry)."""
    if magic >= MAGIC_V2:
        return RECORD_BATCH_OVERHEAD
    if codec != Codec.NONE:
        return LOG_OVERHEAD + (RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1)
    return 0


def legacy_entry_size(magic: int, key: bytes | None, value: bytes | None) -> int:
    """``LOG_OVERHEAD + LegacyRecord.recordSize``: one v0/v1 entry."""
    return (LOG_OVERHEAD + (RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1)
            + (0 if key is None else len(key)) + (0 if value is None else len(value)))


def v2_record_size(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                   headers: tuple[tuple[str, bytes | None], ...] | list[tuple[str, bytes | None]] = ()) -> int:
    """``DefaultRecord.sizeInBytes``: the record with its length varint."""
    body = 1 + size_of_varlong(timestamp_delta) + size_of_varint(offset_delta)
    body += 1 if key is None else size_of_varint(len(key)) + len(key)
    body += 1 if value is None else size_of_varint(len(value)) + len(value)
    body += size_of_varint(len(headers))
    for hk, hv in headers:
        kb = len(hk.encode("utf-8"))
        body += size_of_varint(kb) + kb
        body += 1 if hv is None else size_of_varint(len(hv)) + len(hv)
    return size_of_varint(body) + body


def upper_bound_size(magic: int, codec: Codec | int, key: bytes | None, value: bytes | None,
                     headers: tuple[tuple[str, bytes | None], ...] = ()) -> int:
    """``AbstractRecords.estimateSizeInBytesUpperBound`` for one record (what a split batch is sized for)."""
    if magic >= MAGIC_V2:
        # DefaultRecordBatch.estimateBatchSizeUpperBound: RECORD_BATCH_OVERHEAD + MAX_RECORD_OVERHEAD (covering
        # attributes, deltas and the length varint) + DefaultRecord.sizeOf(key, value, headers).
        body = MAX_RECORD_OVERHEAD
        body += 1 if key is None else size_of_varint(len(key)) + len(key)
        body += 1 if value is None else size_of_varint(len(value)) + len(value)
        body += size_of_varint(len(headers))
        for hk, hv in headers:
            kb = len(hk.encode("utf-8"))
            body += size_of_varint(kb) + kb + (1 if hv is None else size_of_varint(len(hv)) + len(hv))
        return RECORD_BATCH_OVERHEAD + body
    # LOG_OVERHEAD + (recordOverhead if compressed) + LegacyRecord.recordSize(magic, key, value)
    size = legacy_entry_size(magic, key, value)
    if codec != Codec.NONE:
        size += RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1
    return size


@dataclass(slots=True)
class BatchPlanner:
    """The size bookkeeping of one ``MemoryRecordsBuilder``: which records go into the batch being planned."""

    magic: int
    codec: Codec
    write_limit: int
    estimated_ratio: float
    header_size: int = 0
    uncompressed_bytes: int = 0
    records: int = 0

    def __post_init__(self) -> None:
        self.header_size = batch_header_size(self.magic, self.codec)

    def estimated_bytes_written(self) -> int:
        """``estimatedBytesWritten``: Java computes ``(int) (uncompressed * ratio * 1.05f)`` in float."""
        if self.codec == Codec.NONE:
            return self.header_size + self.uncompressed_bytes
        return self.header_size + int(f32(f32(self.uncompressed_bytes * self.estimated_ratio) * _FACTOR))

    def is_full(self) -> bool:
        return self.records > 0 and self.write_limit <= self.estimated_bytes_written()

    def has_room_for(self, record_size: int) -> bool:
        """``hasRoomFor``: the first record always fits; then the estimate plus the next record's
        uncompressed size must stay within the write limit (``isFull()`` first, on the same estimate: it is
        computed once here, as it is the hot path of a batch of millions of small records)."""
        if self.records == 0:
            return True
        estimate = self.estimated_bytes_written()
        if self.write_limit <= estimate:
            return False  # is_full()
        return self.write_limit >= estimate + record_size

    def append(self, record_size: int) -> None:
        self.uncompressed_bytes += record_size
        self.records += 1

    def reset(self, estimated_ratio: float) -> None:
        self.uncompressed_bytes = 0
        self.records = 0
        self.estimated_ratio = estimated_ratio


# ---------------------------------------------------------------------------------------------- split

Builder = Callable[[list[Any]], bytes]


def record_size(magic: int, rec: Any, base_offset: int, last_offset: int | None, base_timestamp: int | None) -> int:
    """The uncompressed size ``hasRoomFor`` charges for the next record (Kafka approximates the v2 offset
    delta as ``lastOffset - baseOffset + 1``)."""
    if magic < MAGIC_V2:
        return legacy_entry_size(magic, rec[2], rec[3])
    offset_delta = 0 if last_offset is None else last_offset - base_offset + 1
    ts_delta = 0 if base_timestamp is None else rec[1] - base_timestamp
    return v2_record_size(offset_delta, ts_delta, rec[2], rec[3], rec[4])


def compressed_payload(magic: int, data: bytes) -> int:
    """What ``MemoryRecordsBuilder.close`` divides by the uncompressed size: the records area of a v2
    batch, the wrapper value of a legacy compressed message."""
    return len(data) - batch_header_size(magic, Codec.GZIP) if magic < MAGIC_V2 else len(data) - RECORD_BATCH_OVERHEAD


def plan_groups(records: Sequence[Any], *, magic: int, codec: Codec, write_limit: int, ratio: float,
                split: bool) -> list[tuple[list[Any], int]]:
    """Cut ``records`` into batches by ``hasRoomFor`` at one estimated ratio; returns (records, uncompressed
    size) per batch. ``split``: size every batch as ``ProducerBatch.createBatchOffAccumulatorForRecord``
    does (``max(upper bound of its first record, write_limit)``)."""
    groups: list[tuple[list[Any], int]] = []
    planner: BatchPlanner | None = None
    current: list[Any] = []
    base = 0
    last: int | None = None
    base_ts: int | None = None
    for rec in records:
        if planner is not None:
            size = record_size(magic, rec, base, last, base_ts)
            if not planner.has_room_for(size):
                groups.append((current, planner.uncompressed_bytes))
                planner = None
        if planner is None:
            limit = max(write_limit, upper_bound_size(magic, codec, rec[2], rec[3], rec[4])) if split else write_limit
            planner = BatchPlanner(magic, codec, limit, ratio)
            current = []
            base, last, base_ts = rec[0], None, None
            size = record_size(magic, rec, base, None, None)
        planner.append(size)
        current.append(rec)
        last = rec[0]
        if base_ts is None:
            base_ts = rec[1]
    if planner is not None and current:
        groups.append((current, planner.uncompressed_bytes))
    return groups


@dataclass(slots=True)
class SplitResult:
    batches: list[tuple[bytes, list[Any]]]  # built batch and the records in it
    splits: int  # batches that came out too large and were split (the first one included)


def build_within_limit(records: list[Any], data: bytes, uncompressed: int, *, magic: int, codec: Codec,
                       max_bytes: int, split_size: int, estimator: CompressionRatioEstimator, topic: str,
                       build: Builder, describe_offset: Callable[[Any], str]) -> SplitResult:
    """KIP-126 for one built batch: if ``data`` fits ``max_bytes`` record the observed ratio and keep it;
    else split as ``Sender``/``ProducerBatch.split`` do (estimate reset to ``max(1.0, big ratio)``, records
    re-planned into ``split_size`` batches, each built and checked again). A single record that does not
    fit is :class:`LimitExceededError` naming its offset."""
    out = SplitResult([], 0)
    pending: list[tuple[list[Any], bytes, int]] = [(records, data, uncompressed)]
    while pending:
        recs, built, unc = pending.pop(0)
        ratio = compressed_payload(magic, built) / unc if unc > 0 else 1.0
        if len(built) <= max_bytes:
            if codec != Codec.NONE:
                estimator.update_estimation(topic, codec, ratio)
            out.batches.append((built, recs))
            continue
        if len(recs) <= 1:
            raise LimitExceededError(
                f"record at offset {describe_offset(recs[0])} needs a batch of {len(built)} bytes, more than "
                f"max.message.bytes {max_bytes} (Kafka: RecordTooLargeException); raise the limit to convert it",
                field="max_message_bytes")
        out.splits += 1
        estimator.set_estimation(topic, codec, max(1.0, ratio))
        groups = plan_groups(recs, magic=magic, codec=codec, write_limit=split_size,
                             ratio=estimator.estimation(topic, codec), split=True)
        if len(groups) == 1:  # the estimate says it fits but it does not: halve, as a last resort
            half = len(recs) // 2
            groups = [(recs[:half], unc // 2), (recs[half:], unc - unc // 2)]
        pending[0:0] = [(g, build(g), u) for g, u in groups]
    return out


# ---------------------------------------------------------------------------------------------- split, streamed

@dataclass(frozen=True, slots=True)
class RecordRange:
    """A run of a batch's records, read again from its ``RecordSource`` when needed instead of held: what
    :func:`stream_within_limit` plans, builds and splits."""

    position: int  # where its first record starts in the source
    index: int  # its first record's index in the source
    count: int
    uncompressed: int  # the size the planner charged for it (KIP-126's ratio divides by it)


@dataclass(slots=True)
class Built:
    """One batch built from a ``RecordRange`` (``kafkatool.record.streamed``): its bytes while they fit the output
    limit it was built under, else only its size."""

    data: bytes | None  # None: larger than the limit
    size: int
    uncompressed: int  # the records before compression
    first_offset: int
    last_offset: int  # its last record's (a v2 batch may say a later one: override_last_offset)
    count: int


@dataclass(slots=True)
class SplitStats:
    splits: int = 0  # batches (or parts of one) that came out too large and were split
    batches: int = 0  # batches in the end


def payload_size(magic: int, size: int) -> int:
    """:func:`compressed_payload` of a batch of ``size`` bytes."""
    return size - (batch_header_size(magic, Codec.GZIP) if magic < MAGIC_V2 else RECORD_BATCH_OVERHEAD)


def plan_ranges(source: RecordSource, rng: RecordRange, *, magic: int, codec: Codec, write_limit: int,
                ratio: float, split: bool) -> Iterator[RecordRange]:
    """:func:`plan_groups` over the records of ``rng``, read a chunk at a time: the same groups, as ranges."""
    planner: BatchPlanner | None = None
    base = 0
    last: int | None = None
    base_ts: int | None = None
    pos, index = rng.position, rng.index
    start = start_index = 0
    compressed = codec != Codec.NONE
    for chunk in source.chunks(position=rng.position, count=rng.count):
        i, n = 0, len(chunk)
        while i < n:
            if planner is None:  # a batch begins at chunk[i] (its first record always fits)
                rec = chunk[i]
                limit = write_limit
                if split:
                    limit = max(write_limit, upper_bound_size(magic, codec, rec[2], rec[3], rec[4]))
                planner = BatchPlanner(magic, codec, limit, ratio)
                start, start_index = pos, index
                base, last, base_ts = rec[0], None, None
            # the records that fit, in one step (the hot path: a split batch can hold millions)
            args = (chunk, i, magic, compressed, planner.header_size, planner.write_limit, planner.estimated_ratio,
                    planner.uncompressed_bytes, planner.records, base, last, base_ts)
            got = _C.plan_step(*args) if _C is not None else plan_step_py(*args)
            if _C is not None and (got is None or got[0] == i):
                # the compiled step took no record: the Python step decides this one (it may not size it)
                one = plan_step_py([chunk[i]], 0, *args[2:])
                got = (i + one[0], *one[1:])
            if got[0] == i:  # chunk[i] does not fit: the batch is planned
                yield RecordRange(start, start_index, index - start_index, planner.uncompressed_bytes)
                planner = None
                continue
            index += got[0] - i
            i, planner.uncompressed_bytes, planner.records, last, base_ts, moved = got
            pos += moved
    if planner is not None and index > start_index:
        yield RecordRange(start, start_index, index - start_index, planner.uncompressed_bytes)


PlanStep = tuple[int, int, int, int | None, int | None, int]


def plan_step_py(chunk: Sequence[Any], i: int, magic: int, compressed: bool, header_size: int, write_limit: int,
                 ratio: float, uncompressed: int, records: int, base: int, last: int | None,
                 base_ts: int | None) -> PlanStep:
    """:func:`plan_ranges`' inner loop over ``chunk[i:]`` for the batch being planned (a :class:`BatchPlanner`'s
    fields, and the batch's base offset, last offset and base timestamp so far): the records ``hasRoomFor``
    takes, up to the first that does not fit. Returns (the index of that record, or ``len(chunk)``; the
    uncompressed bytes, records, last offset and base timestamp after them; the bytes of the area they span).
    The compiled twin (``_speedups.plan_step``) may stop earlier, before a record it does not size (headers, a
    delta beyond Kafka's varints): :func:`plan_ranges` goes on from there either way."""
    planner = BatchPlanner(magic, Codec.GZIP if compressed else Codec.NONE, write_limit, ratio)
    planner.header_size, planner.uncompressed_bytes, planner.records = header_size, uncompressed, records
    moved = 0
    n = len(chunk)
    while i < n:
        rec = chunk[i]
        size = record_size(magic, rec, base, last, base_ts)
        if not planner.has_room_for(size):
            break
        planner.append(size)
        last = rec[0]
        if base_ts is None:
            base_ts = rec[1]
        moved += rec[6]
        i += 1
    return i, planner.uncompressed_bytes, planner.records, last, base_ts, moved


def stream_within_limit(source: RecordSource, whole: RecordRange, built: Built, *, magic: int, codec: Codec,
                        max_bytes: int, split_size: int, estimator: CompressionRatioEstimator, topic: str,
                        build: Callable[[RecordRange], Built], stats: SplitStats) -> Iterator[Built]:
    """:func:`build_within_limit` for a batch too large to hold its records: ``built`` is ``whole`` built under
    ``max_bytes``; parts are planned, built (``build``) and checked one after the other, in the order and with
    the estimates ``build_within_limit`` gives, each holding at most a chunk of records and one built batch."""

    def process(rng: RecordRange, b: Built) -> Iterator[Built]:
        ratio = payload_size(magic, b.size) / rng.uncompressed if rng.uncompressed > 0 else 1.0
        if b.data is not None and b.size <= max_bytes:
            if codec != Codec.NONE:
                estimator.update_estimation(topic, codec, ratio)
            stats.batches += 1
            yield b
            return
        if rng.count <= 1:
            raise LimitExceededError(
                f"record at offset {b.first_offset} needs a batch of {b.size} bytes, more than max.message.bytes "
                f"{max_bytes} (Kafka: RecordTooLargeException); raise the limit to convert it",
                field="max_message_bytes")
        stats.splits += 1
        estimator.set_estimation(topic, codec, max(1.0, ratio))
        groups = plan_ranges(source, rng, magic=magic, codec=codec, write_limit=split_size,
                             ratio=estimator.estimation(topic, codec), split=True)
        first = next(groups)
        second = next(groups, None)
        parts: Iterable[RecordRange]
        if second is None:  # the estimate says it fits but it does not: halve, as a last resort
            half = rng.count // 2
            mid = rng.position
            for chunk in source.chunks(position=rng.position, count=half):
                mid += sum(r[6] for r in chunk)
            unc = rng.uncompressed
            parts = (RecordRange(rng.position, rng.index, half, unc // 2),
                     RecordRange(mid, rng.index + half, rng.count - half, unc - unc // 2))
        else:
            parts = chain((first, second), groups)
        for part in parts:
            yield from process(part, build(part))

    yield from process(whole, built)
