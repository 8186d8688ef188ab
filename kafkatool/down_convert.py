"""``RecordsUtil.downConvert`` (kafka-clients 3.9), the one routine behind every broker down-conversion.

Spec §5.2. For a target magic below 2: control batches are dropped and zstd is refused. A batch whose
magic is already <= the target is copied verbatim. Otherwise its records are rebuilt with the batch's
codec (default level), timestamp type and log append time:

* uncompressed source -> records with ``offset < first_offset`` are dropped (legacy uncompressed
  messages are individually addressable) and each remaining record becomes its own message;
* compressed source -> one wrapper holding *all* records (no first-offset filter);
* headers, producer id/epoch/sequence, partition leader epoch and the transactional flag are lost;
  v0 loses timestamps and the timestamp type.

A source batch that yields no records produces nothing. This module converts one group of batches
at a time; chunking (KIP-283) is the caller's job.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafkatool.batch import MAGIC_V1, MAGIC_V2, NO_TIMESTAMP, TimestampType
from kafkatool.codecs import DEFAULT_DECOMPRESS_LIMIT, Codec
from kafkatool.default_records import DefaultRecordBatch, build_batch
from kafkatool.errors import UnsupportedCodecError
from kafkatool.file_records import RecordBatch
from kafkatool.legacy_records import build_entries
from kafkatool.records_util import convert_v2_batch


@dataclass(slots=True)
class DownConverted:
    """The converted bytes of one group of source batches, with Kafka's conversion statistics."""

    data: bytes
    records_converted: int = 0  # RecordValidationStats.numRecordsConverted
    temporary_memory_bytes: int = 0  # RecordValidationStats.temporaryMemoryBytes
    batches_in: int = 0
    batches_copied: int = 0  # magic already <= target: written verbatim
    batches_converted: int = 0
    control_batches_dropped: int = 0
    batches_empty: int = 0  # converted to nothing (all records below first_offset, or an empty batch)
    records_filtered: int = 0  # uncompressed records below first_offset
    headers_dropped: int = 0  # records that carried headers the target format cannot hold
    producer_fields_dropped: int = 0  # batches whose producer id/epoch/sequence were discarded


class ZstdDownConversionError(UnsupportedCodecError):
    """Kafka's ``UnsupportedCompressionTypeException`` for zstd below magic 2."""


def down_convert(batches: Iterable[RecordBatch], to_magic: int, first_offset: int, *,
                 limit: int = DEFAULT_DECOMPRESS_LIMIT, codec_override: Codec | None = None) -> DownConverted:
    """Convert ``batches`` to ``to_magic`` exactly as ``RecordsUtil.downConvert`` does.

    ``codec_override`` replaces the batch codec for rebuilt batches (kafkatool's ``--zstd-to`` and
    ``--codec``; Kafka itself always keeps the codec). Without it a zstd batch raises
    :class:`ZstdDownConversionError`, as Kafka does.
    """
    out = DownConverted(b"")
    parts: list[bytes] = []
    for batch in batches:
        out.batches_in += 1
        if to_magic < MAGIC_V2:
            if batch.is_control:
                out.control_batches_dropped += 1
                continue
            if batch.codec_id == Codec.ZSTD and codec_override is None:
                raise ZstdDownConversionError(
                    "Down-conversion of zstandard-compressed batches is not supported", position=batch.position)
        out.temporary_memory_bytes += batch.size
        if batch.magic <= to_magic:
            parts.append(bytes(batch.raw()))
            out.batches_copied += 1
            continue
        if to_magic < MAGIC_V2 and isinstance(batch, DefaultRecordBatch):
            # v2 -> v0/v1 without per-record objects (records_util): same bytes, same statistics.
            conv = convert_v2_batch(batch, to_magic, first_offset, codec_override, limit=limit)
            if conv is not None:
                out.records_filtered += conv.filtered
                if not conv.records:
                    out.batches_empty += 1
                    continue
                parts.append(conv.data)
                out.headers_dropped += conv.with_headers
                if batch.producer_id >= 0 or batch.is_transactional:
                    out.producer_fields_dropped += 1
                out.batches_converted += 1
                out.records_converted += conv.records
                out.temporary_memory_bytes += conv.size_sum
                continue
        source = batch.records(limit=limit)
        if to_magic > MAGIC_V1 or batch.is_compressed:
            records = source
        else:
            records = [r for r in source if r.offset >= first_offset]
            out.records_filtered += len(source) - len(records)
        if not records:
            out.batches_empty += 1
            continue
        ts_type = batch.timestamp_type
        log_append_time = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        codec = batch.codec if codec_override is None else codec_override
        if to_magic >= MAGIC_V2:
            data = build_batch([(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records],
                               codec=codec, timestamp_type=ts_type, log_append_time=log_append_time)
        else:
            if codec == Codec.ZSTD:
                raise ZstdDownConversionError(f"zstd cannot be written below magic 2 (to magic {to_magic})",
                                              position=batch.position)
            data = build_entries([(r.offset, r.timestamp, r.key, r.value) for r in records], magic=to_magic,
                                 codec=codec, timestamp_type=ts_type, log_append_time=log_append_time)
            out.headers_dropped += sum(1 for r in records if r.headers)
            if batch.producer_id >= 0 or batch.is_transactional:
                out.producer_fields_dropped += 1
        parts.append(data)
        out.batches_converted += 1
        out.records_converted += len(records)
        out.temporary_memory_bytes += sum(r.size for r in records)
    out.data = b"".join(parts)
    return out
