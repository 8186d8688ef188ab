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
* v2 batches are copied unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkatool.batch import MAGIC_V2, NO_TIMESTAMP, Record, TimestampType
from kafkatool.codecs import Codec
from kafkatool.default_records import build_batch
from kafkatool.errors import LimitExceededError
from kafkatool.estimator import (
    BatchPlanner,
    CompressionRatioEstimator,
    build_within_limit,
    record_size,
    v2_record_size,
)
from kafkatool.file_records import RecordBatch

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
    splits: int = 0  # built batches that came out larger than --max-message-bytes and were split
    split_batches: int = 0  # batches those splits produced


def oversized_copy(batch: RecordBatch, max_bytes: int) -> LimitExceededError:
    return LimitExceededError(
        f"batch at offset {batch.last_offset} is {batch.size} bytes, more than --max-message-bytes {max_bytes}; "
        "it is copied unchanged, so raise the limit to the topic's max.message.bytes", position=batch.position)


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

    def add(self, batch: RecordBatch) -> list[Unit]:
        """Units completed by ``batch`` (a pending group of messages is completed by anything that
        cannot join it)."""
        c = self.c
        if batch.magic >= MAGIC_V2:
            units = self.flush()
            if batch.size > self.max_bytes:
                raise oversized_copy(batch, self.max_bytes)
            n = int(batch.count or 0)
            c.records_in += n
            c.records_out += n
            c.batches_copied += 1
            c.batches_out += 1
            units.append((bytes(batch.raw()), batch.base_offset, batch.last_offset, 1))
            return units
        records = batch.records(limit=self.limit)
        c.records_in += len(records)
        ts_type = batch.timestamp_type
        if ts_type == TimestampType.NO_TIMESTAMP_TYPE:
            ts_type = TimestampType.CREATE_TIME
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        if batch.is_compressed:
            units = self.flush()
            codec = batch.codec if self.codec is None else self.codec
            if codec != batch.codec:
                c.codec_changed_batches += 1
            units.extend(self._build(records, codec, ts_type, lat))
            return units
        # One uncompressed legacy message.
        codec = Codec.NONE if self.codec is None else self.codec
        if codec != Codec.NONE:
            c.codec_changed_batches += 1
        (rec,) = records
        key = (ts_type, lat)
        units = []
        if self._pending and (key != self._pending_key or self._planner is None or not self._planner.has_room_for(
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
        c = self.c

        def build(recs: list[Record]) -> bytes:
            # partitionLeaderEpoch, producer id/epoch/sequence: the legacy batch's, i.e. all -1.
            return build_batch([(r.offset, r.timestamp, r.key, r.value, ()) for r in recs], codec=codec,
                               timestamp_type=ts_type, log_append_time=lat)

        data = build(records)
        first = records[0]
        uncompressed = sum(v2_record_size(r.offset - first.offset, r.timestamp - first.timestamp, r.key, r.value, ())
                           for r in records)
        result = build_within_limit(records, data, uncompressed, magic=MAGIC_V2, codec=codec,
                                    max_bytes=self.max_bytes, split_size=self.max_bytes, estimator=self.estimator,
                                    topic=self.topic, build=build, describe_offset=lambda r: str(r[0]))
        if result.splits:
            c.splits += result.splits
            c.split_batches += len(result.batches)
        units: list[Unit] = []
        for built, recs in result.batches:
            units.append((built, recs[0].offset, recs[-1].offset, 1))
            c.records_out += len(recs)
            c.batches_out += 1
            c.batches_built += 1
            if codec != Codec.NONE:
                c.recompressed_batches += 1
        return units

