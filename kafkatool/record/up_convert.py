"""Up-conversion of v0/v1 batches to v2, as Kafka 4's log cleaner rewrites them. Spec §5.4, §5.5.

Kafka 4.0 (KIP-724 completed; KAFKA-13093, PR #18321) still serves v0/v1 data already on disk but no
longer writes it; its cleaner converts legacy batches to v2 whenever it rewrites a segment
(``MemoryRecords.buildRetainedRecordsInto``): a builder of magic 2 with the original batch's codec,
timestamp type (``NoTimestampType`` -> ``CreateTime``), log append time (the batch's max timestamp when
it is LogAppendTime), producer id/epoch/sequence and partition leader epoch (all -1 for legacy data),
and base offset = the first retained record's offset. So:

* a compressed legacy wrapper -> one v2 batch of its inner records;
* an uncompressed legacy message -> a v2 batch of its own (``batch_bytes=0``); kafkatool can instead
  group consecutive messages into v2 batches up to ``batch_bytes`` (KIP-126 estimate), breaking a group
  where the timestamp type changes or, for LogAppendTime, where the append time changes, because one
  v2 batch has one log append time;
* v0 records get timestamp -1 with CreateTime;
* v2 batches are copied unchanged, unless a ``codec`` asks for another one: then their records are
  compressed anew and every header field is kept (control batches and batches without records stay as
  they are: Kafka never compresses them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain

from kafkatool.constants import INT32_MAX
from kafkatool.errors import LimitExceededError
from kafkatool.record import streamed
from kafkatool.record.batch import (
    MAGIC_V2,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Record,
    RecordSource,
    TimestampType,
    increment_sequence,
)
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import DefaultRecordBatch, build_batch, with_codec
from kafkatool.record.estimator import (
    BatchPlanner,
    Built,
    CompressionRatioEstimator,
    RecordRange,
    SplitStats,
    build_within_limit,
    compressed_payload,
    record_size,
    stream_within_limit,
    v2_record_size,
)
from kafkatool.record.file_records import RecordBatch

# What the converters hand to the segment writer: bytes, first offset (None: unknown), last offset, batches.
Unit = tuple[bytes, int | None, int, int]


@dataclass(slots=True)
class ConversionCounters:
    """Counters both directions share (the per-partition summary)."""

    records_in: int = 0
    records_out: int = 0
    batches_out: int = 0
    batches_built: int = 0  # output batches built anew (not copied)
    batches_copied: int = 0
    recompressed_batches: int = 0  # built batches written with a compression codec
    codec_changed_batches: int = 0  # source batches whose output codec differs from theirs
    splits: int = 0  # split events: a built batch (or a part of one) larger than max.message.bytes was split
    split_batches: int = 0  # batches those splits produced in the end
    batches_split: int = 0  # planned batches that needed at least one split (each counted once)


def oversized_copy(batch: RecordBatch, max_bytes: int) -> LimitExceededError:
    return LimitExceededError(
        f"batch at offset {batch.last_offset} is {batch.size} bytes, more than max.message.bytes {max_bytes}; "
        "it is copied unchanged, so raise the limit to the topic's max.message.bytes", position=batch.position,
        field="max_message_bytes")


class UpConverter:
    """Turns the batches of one partition, in order, into v2 output units."""

    def __init__(self, *, codec: Codec | None, batch_bytes: int, max_message_bytes: int,
                 estimator: CompressionRatioEstimator, topic: str, counters: ConversionCounters,
                 limit: int | None = None) -> None:
        self.codec = codec
        self.batch_bytes = batch_bytes
        self.max_bytes = max_message_bytes
        self.estimator = estimator
        self.topic = topic
        self.c = counters
        self.limit = limit
        self._pending: list[Record] = []
        self._pending_key: tuple[TimestampType, int] | None = None
        self._pending_codec = Codec.NONE
        self._pending_source_codec = Codec.NONE
        self._planner: BatchPlanner | None = None

    def add(self, batch: RecordBatch, records: list[Record] | None = None, dropped: int = 0,
            source: RecordSource | None = None) -> Iterable[Unit]:
        """Units completed by ``batch`` (a pending group of messages is completed by anything that
        cannot join it). ``records``: a legacy batch's records, already decoded (and checked: those left out
        are not among them, ``dropped`` says how many); ``source``: instead, for a wrapper of more inner messages
        than a run holds, its checked ones to read a chunk at a time; v2 batches are read from their bytes."""
        c = self.c
        if batch.magic >= MAGIC_V2:
            units = self.flush()
            if (self.codec is not None and self.codec != batch.codec and isinstance(batch, DefaultRecordBatch)
                    and not batch.is_control and batch.records_count > 0):
                return chain(units, self._with_codec(batch, self.codec))
            if batch.size > self.max_bytes:
                raise oversized_copy(batch, self.max_bytes)
            n = int(batch.count or 0)
            c.records_in += n
            c.records_out += n
            c.batches_copied += 1
            c.batches_out += 1
            units.append((bytes(batch.raw()), batch.base_offset, batch.last_offset, 1))
            return units
        if records is not None:
            source = RecordSource.of(records)
        elif source is None:
            source = batch.record_source(limit=self.limit)  # a wrapper may hold millions of inner messages
        c.records_in += source.count
        ts_type = batch.timestamp_type
        if ts_type == TimestampType.NO_TIMESTAMP_TYPE:
            ts_type = TimestampType.CREATE_TIME
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        if batch.is_compressed:
            units = self.flush()
            codec = batch.codec if self.codec is None else self.codec
            if codec != batch.codec:
                c.codec_changed_batches += 1
            if source.held is None:
                return chain(units, self._build_streamed(source, codec, ts_type, lat, batch.position))
            units.extend(self._build(source.held, codec, ts_type, lat))
            return units
        # One uncompressed legacy message.
        codec = Codec.NONE if self.codec is None else self.codec
        if codec != Codec.NONE:
            c.codec_changed_batches += 1
        assert source.held is not None
        (rec,) = source.held
        key = (ts_type, lat)
        units = []
        # A v2 batch's offset deltas are int32: a message more than that past the group's first one starts another
        # (as LogCleaner.groupSegmentsBySize keeps a group's offsets within an int32 of its base).
        if self._pending and (key != self._pending_key or rec.offset - self._pending[0].offset > INT32_MAX
                              or self._planner is None or not self._planner.has_room_for(
                record_size(MAGIC_V2, rec, self._pending[0].offset, self._pending[-1].offset,
                            self._pending[0].timestamp))):
            units = self.flush()
        if not self._pending:
            self._pending_key = key
            self._pending_codec = codec
            ratio = self.estimator.estimation(self.topic, codec)
            self._planner = BatchPlanner(MAGIC_V2, codec, self.batch_bytes, ratio)
            self._planner.append(v2_record_size(0, 0, rec.key, rec.value, ()))
        else:
            assert self._planner is not None
            first = self._pending[0]
            self._planner.append(v2_record_size(rec.offset - first.offset, rec.timestamp - first.timestamp,
                                                rec.key, rec.value, ()))
        self._pending.append(rec)
        if self.batch_bytes <= 0:
            units.extend(self.flush())
        return units

    def _with_codec(self, batch: DefaultRecordBatch, codec: Codec) -> Iterable[Unit]:
        """A v2 batch re-encoded with the requested codec: every header field kept, CRC recomputed
        (:func:`kafkatool.record.default_records.with_codec`). One that comes out larger than the limit is split as
        the producer splits (KIP-126): each part keeps the producer id/epoch, flags and leader epoch, starts
        at its first record's offset and sequence, and the last part keeps the batch's last offset."""
        c = self.c
        n = batch.records_count
        c.records_in += n
        c.codec_changed_batches += 1
        data, uncompressed = with_codec(batch, codec, limit=self.limit)
        if len(data) <= self.max_bytes:
            if codec != Codec.NONE and uncompressed:
                self.estimator.update_estimation(self.topic, codec, compressed_payload(MAGIC_V2, data) / uncompressed)
            c.records_out += n
            c.batches_out += 1
            c.batches_built += 1
            if codec != Codec.NONE:
                c.recompressed_batches += 1
            return [(data, batch.base_offset, batch.last_offset, 1)]
        ts_type = batch.timestamp_type
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        base_seq = batch.base_sequence
        source = batch.record_source(limit=self.limit, stored_timestamps=True)
        if source.held is None:
            return self._with_codec_streamed(batch, source, codec, data, uncompressed)
        records = source.held
        first, last = records[0], records[-1]

        def build(recs: list[Record]) -> bytes:
            base = batch.base_offset if recs[0] is first else recs[0].offset
            seq = NO_SEQUENCE if base_seq == NO_SEQUENCE else increment_sequence(base_seq, base - batch.base_offset)
            return build_batch([(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs],
                               base_offset=base, codec=codec,
                               timestamp_type=ts_type, log_append_time=lat, producer_id=batch.producer_id,
                               producer_epoch=batch.producer_epoch, base_sequence=seq,
                               is_transactional=batch.is_transactional,
                               partition_leader_epoch=batch.partition_leader_epoch,
                               delete_horizon_ms=batch.delete_horizon_ms,
                               override_last_offset=batch.last_offset if recs[-1] is last else None)

        return self._emit(records, data, uncompressed, codec, build)

    def _with_codec_streamed(self, batch: DefaultRecordBatch, source: RecordSource, codec: Codec, data: bytes,
                             uncompressed: int) -> Iterator[Unit]:
        """:meth:`_with_codec`'s split for a batch of more records than a run holds: the parts built from
        ranges of its records read a chunk at a time, each keeping the batch's header fields as there."""
        ts_type = batch.timestamp_type
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        base_seq = batch.base_sequence

        def build(rng: RecordRange) -> Built:
            base = batch.base_offset if rng.index == 0 else source.read(rng.position, 1)[0][0].offset
            seq = NO_SEQUENCE if base_seq == NO_SEQUENCE else increment_sequence(base_seq, base - batch.base_offset)
            return streamed.v2_batch(source.chunks(position=rng.position, count=rng.count), cap=self.max_bytes,
                                     codec=codec, base_offset=base, timestamp_type=ts_type, log_append_time=lat,
                                     producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                     base_sequence=seq, is_transactional=batch.is_transactional,
                                     partition_leader_epoch=batch.partition_leader_epoch,
                                     delete_horizon_ms=batch.delete_horizon_ms,
                                     override_last_offset=batch.last_offset
                                     if rng.index + rng.count == source.count else None, position=batch.position)

        whole = RecordRange(source.start, 0, source.count, uncompressed)
        built = Built(None, len(data), uncompressed, batch.base_offset, batch.last_offset, source.count)
        return self._emit_streamed(source, whole, built, codec, build)

    def _build_streamed(self, source: RecordSource, codec: Codec, ts_type: TimestampType, lat: int,
                        position: int) -> Iterator[Unit]:
        """:meth:`_build` for a wrapper of more inner messages than a run holds: built as they are read, a chunk
        at a time, and split by KIP-126 over ranges of them."""
        def build(rng: RecordRange) -> Built:
            return streamed.v2_batch(source.chunks(position=rng.position, count=rng.count), cap=self.max_bytes,
                                     codec=codec, keep_headers=False, timestamp_type=ts_type, log_append_time=lat,
                                     position=position)

        built = build(RecordRange(source.start, 0, source.count, 0))
        whole = RecordRange(source.start, 0, source.count, built.uncompressed)
        return self._emit_streamed(source, whole, built, codec, build)

    def _emit_streamed(self, source: RecordSource, whole: RecordRange, built: Built, codec: Codec,
                       build: Callable[[RecordRange], Built]) -> Iterator[Unit]:
        c = self.c
        stats = SplitStats()
        for b in stream_within_limit(source, whole, built, magic=MAGIC_V2, codec=codec, max_bytes=self.max_bytes,
                                     split_size=self.max_bytes, estimator=self.estimator, topic=self.topic,
                                     build=build, stats=stats):
            assert b.data is not None
            c.records_out += b.count
            c.batches_out += 1
            c.batches_built += 1
            if codec != Codec.NONE:
                c.recompressed_batches += 1
            yield b.data, b.first_offset, b.last_offset, 1
        if stats.splits:
            c.splits += stats.splits
            c.split_batches += stats.batches
            c.batches_split += 1

    def flush(self) -> list[Unit]:
        """Complete the pending group of uncompressed messages (at a segment end, or before other data)."""
        if not self._pending:
            return []
        recs, self._pending = self._pending, []
        assert self._pending_key is not None
        ts_type, lat = self._pending_key
        self._planner = None
        return self._build(recs, self._pending_codec, ts_type, lat)

    def _build(self, records: list[Record], codec: Codec, ts_type: TimestampType, lat: int) -> list[Unit]:
        def build(recs: list[Record]) -> bytes:
            # partitionLeaderEpoch, producer id/epoch/sequence: the legacy batch's, i.e. all -1.
            return build_batch([(r.offset, r.timestamp, r.key, r.value, ()) for r in recs], codec=codec,
                               timestamp_type=ts_type, log_append_time=lat)

        data = build(records)
        first = records[0]
        uncompressed = sum(v2_record_size(r.offset - first.offset, r.timestamp - first.timestamp, r.key, r.value, ())
                           for r in records)
        return self._emit(records, data, uncompressed, codec, build)

    def _emit(self, records: list[Record], data: bytes, uncompressed: int, codec: Codec,
              build: Callable[[list[Record]], bytes]) -> list[Unit]:
        c = self.c
        result = build_within_limit(records, data, uncompressed, magic=MAGIC_V2, codec=codec,
                                    max_bytes=self.max_bytes, split_size=self.max_bytes, estimator=self.estimator,
                                    topic=self.topic, build=build, describe_offset=lambda r: str(r[0]))
        if result.splits:
            c.splits += result.splits
            c.split_batches += len(result.batches)
            c.batches_split += 1
        units: list[Unit] = []
        for built, recs in result.batches:
            units.append((built, recs[0].offset, recs[-1].offset, 1))
            c.records_out += len(recs)
            c.batches_out += 1
            c.batches_built += 1
            if codec != Codec.NONE:
                c.recompressed_batches += 1
        return units

