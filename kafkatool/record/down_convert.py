"""``RecordsUtil.downConvert`` (kafka-clients 3.9), the one routine behind every broker down-conversion.

Spec §5.2. For a target magic below 2: control batches are dropped and zstd is refused. A batch whose
magic is already <= the target is copied verbatim. Otherwise its records are rebuilt with the batch's
codec (default level), timestamp type and log append time:

* uncompressed source -> records with ``offset < first_offset`` are dropped (legacy uncompressed
  messages are individually addressable) and each remaining record becomes its own message;
* compressed source -> one wrapper holding *all* records (no first-offset filter);
* headers, producer id/epoch/sequence, partition leader epoch and the transactional flag are lost;
  v0 loses timestamps and the timestamp type.

A source batch that yields no records produces nothing. :func:`down_convert` converts one group of
batches (what Kafka converts per call); :func:`iter_chunks` forms those groups the way
``LazyDownConversionRecords`` does (KIP-283).

v2 -> v0/v1 is the hot path of ``kafkatool downconvert``: :func:`reframe_v2_records` writes the legacy
messages straight from the v2 records area, without building ``Record`` tuples; its bytes are those of
``legacy_records.build_entries`` (``MemoryRecordsBuilder``), which the other conversions use.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkatool._accel import crc32c as _crc32c
from kafkatool._accel import speedups as _C
from kafkatool.constants import DOWN_CONVERSION_READ_SIZE
from kafkatool.errors import InvalidRecordError, KafkaToolError, UnsupportedCodecError
from kafkatool.record import codecs as _codecs
from kafkatool.record.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    Record,
    RecordSource,
    TimestampType,
)
from kafkatool.record.codecs import (
    Codec,
    compress,
    decompress,
    lz4_fast_block,
    lz4_unblock,
    snappy_block_len,
    snappy_unblock,
)
from kafkatool.record.codecs import crc32 as _crc32
from kafkatool.record.default_records import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    MIN_RECORD_SIZE,
    RECORD_BATCH_OVERHEAD,
    RECORDS_OFFSET,
    TRANSACTIONAL_FLAG_MASK,
    DefaultRecordBatch,
    _parse_headers,
    build_batch,
    with_codec,
)
from kafkatool.record.estimator import ESTIMATION_STEPS, batch_header_size, legacy_entry_size, v2_record_size
from kafkatool.record.file_records import RecordBatch
from kafkatool.record.legacy_records import ENTRY_PREFIX, HEAD_V0, HEAD_V1, RECORD_OVERHEAD_V0, build_entries
from kafkatool.record.streamed import legacy_messages, legacy_wrapper
from kafkatool.record.varint import read_varint, read_varlong
from kafkatool.util import budget as _budget


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
    # With ``keep_inners``: (position in ``data``, inner message set) of each compressed wrapper the conversion
    # built, the bytes it compressed: what a consumer's decompression of that wrapper gives (fetch-sim's view).
    inners: list[tuple[int, bytes]] | None = field(default=None, compare=False)  # a hint, not part of the result


@dataclass(slots=True)
class ConvertedBatch:
    """The output of one source batch (:func:`down_convert_batch`)."""

    data: bytes
    first_offset: int | None  # first record offset; None for a copied legacy wrapper (needs decompression)
    last_offset: int
    records: int | None  # records in ``data``; None for a copied legacy wrapper
    codec: Codec  # codec of the output
    copied: bool  # written verbatim (magic already <= the target)
    uncompressed_bytes: int  # records before compression (the compression ratio's denominator); 0 if copied
    magic: int  # magic of the output (the target, or the batch's own when it was at or below the target)
    # a wrapper built here: the inner message set it compressed (a hint for fetch-sim's view, not part of the result:
    # the compiled path gives it, the pure one does not)
    inner: bytes | None = field(default=None, compare=False)


class ZstdDownConversionError(UnsupportedCodecError):
    """Kafka's ``UnsupportedCompressionTypeException`` for zstd below magic 2."""


def iter_chunks(batches: Iterable[RecordBatch],
                max_bytes: int = DOWN_CONVERSION_READ_SIZE) -> Iterator[list[RecordBatch]]:
    """Group consecutive source batches as ``LazyDownConversionRecords.Iterator.makeNext`` does (KIP-283):
    take batches while the next one keeps the chunk's total size <= ``max_bytes``, and always at least one
    (a batch larger than ``max_bytes`` is a chunk of its own)."""
    chunk: list[RecordBatch] = []
    size = 0
    for batch in batches:
        n = batch.size
        if chunk and size + n > max_bytes:
            yield chunk
            chunk = []
            size = 0
        chunk.append(batch)
        size += n
    if chunk:
        yield chunk


def down_convert(batches: Iterable[RecordBatch], to_magic: int, first_offset: int, *,
                 limit: int | None = None, codec_override: Codec | None = None,
                 keep_inners: bool = False) -> DownConverted:
    """Convert ``batches`` to ``to_magic`` exactly as ``RecordsUtil.downConvert`` does.

    ``codec_override`` replaces the batch codec for rebuilt batches (kafkatool's ``zstd_to`` and
    ``codec``; Kafka itself always keeps the codec). Without it a zstd batch raises
    :class:`ZstdDownConversionError`, as Kafka does.
    """
    out = DownConverted(b"")
    parts: list[bytes] = []
    inners: list[tuple[int, bytes]] | None = [] if keep_inners else None
    # Kept inner message sets stay within one decompression's worth of the budget (a chunk of many highly
    # compressible batches keeps the first of them; the view decompresses the others one at a time, as before).
    room = (limit if limit is not None else _budget.decompress_limit()) if keep_inners else 0
    at = 0
    for batch in batches:
        converted = down_convert_batch(batch, to_magic, first_offset, out, limit=limit,
                                       codec_override=codec_override)
        if converted is not None:
            parts.append(converted.data)
            if inners is not None and converted.inner is not None and len(converted.inner) <= room:
                inners.append((at, converted.inner))
                room -= len(converted.inner)
            at += len(converted.data)
    out.data = b"".join(parts)
    out.inners = inners
    return out


_V2_SIZE_MAGIC_ATTRS = struct.Struct(">8xi4xb4xh")  # batchLength, magic, attributes of a v2 header
_BASE_OFFSET = struct.Struct(">q")
_NO_BOUND = 1 << 62  # the run's output bounds (a message size, a segment size) are a writer's, not a send's
_RUN_ESTIMATES = (1.0, 1.0, 1.0, 1.0, *ESTIMATION_STEPS)  # compression-ratio estimates: unused without a codec


def down_convert_plain_chunk(buf: Any, p: int, end: int, max_bytes: int, to_magic: int, first_offset: int, *,
                             limit: int | None = None,
                             keep_inners: bool = False) -> tuple[DownConverted, int, int] | None:
    """The chunk :func:`iter_chunks` groups from position ``p`` of ``buf`` (batches walked up to ``end``, as
    ``FileRecords.batches`` walks them), converted as :func:`down_convert` converts it, by one compiled run, when
    every batch of it is an uncompressed, non-control v2 batch the run takes: (the conversion, the chunk's source
    bytes, its batches). None, with nothing done, for any other chunk (the caller groups and converts it the
    Python way): one with another batch, a batch the run leaves to Python (converting to nothing, offsets out of
    order, more records than a chunk), or one whose next batch's size the walk would raise at (below the minimum).
    No CRC is checked, as :func:`down_convert` (a broker's lazy down-conversion) checks none."""
    if _C is None or to_magic >= MAGIC_V2:
        return None
    q, n = p, 0
    unpack = _V2_SIZE_MAGIC_ATTRS.unpack_from
    head = _V2_SIZE_MAGIC_ATTRS.size
    while q < end - HEADER_SIZE_UP_TO_MAGIC:
        if q + head <= end:
            size, magic, attrs = unpack(buf, q)
        else:  # the file's last bytes: what the walk reads of them
            size, magic, attrs = LOG_HEADER.unpack_from(buf, q)[1], -1, 0
        if size < RECORD_OVERHEAD_V0:
            return None  # the walk raises here
        nxt = q + LOG_OVERHEAD + size
        if nxt > end or (n and nxt - p > max_bytes):
            break  # a torn tail (the walk ends before it), or the next chunk's first batch
        if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD or magic != MAGIC_V2 \
                or attrs & (COMPRESSION_CODEC_MASK | CONTROL_FLAG_MASK):
            return None
        n += 1
        q = nxt
    if not n:
        return None
    lim = limit if limit is not None else _budget.decompress_limit()
    r = _C.downconvert_run(buf, p, q, q, 2, to_magic, first_offset, _NO_BOUND, 0, _BASE_OFFSET.unpack_from(buf, p)[0],
                           _NO_BOUND, WRAPPER_HEADER[to_magic], lim, _wrap_codecs(to_magic, limit), _RUN_ESTIMATES,
                           _budget.record_chunk())
    if r is None or r.position != q or r.batches != n:
        return None
    out = DownConverted(r.data, records_converted=r.records, temporary_memory_bytes=r.temporary_memory_bytes,
                        batches_in=n, batches_converted=n, records_filtered=r.records_filtered,
                        headers_dropped=r.headers_dropped, producer_fields_dropped=r.producer_fields_dropped,
                        inners=[] if keep_inners else None)
    return out, q - p, n


def down_convert_batch(batch: RecordBatch, to_magic: int, first_offset: int, out: DownConverted, *,
                       limit: int | None = None, codec_override: Codec | None = None,
                       records: Sequence[Record] | None = None, rebuild: bool = False) -> ConvertedBatch | None:
    """One source batch of :func:`down_convert`: its converted bytes (None when it converts to nothing);
    statistics are added to ``out``. ``records``: a legacy batch's records, already decoded; ``rebuild``: they
    are not all of the batch's (corrupt ones were left out), so a batch Kafka would copy is written anew from them
    (same magic, codec, timestamp type and offsets)."""
    out.batches_in += 1
    if to_magic < MAGIC_V2 and codec_override is None and type(batch) is DefaultRecordBatch:
        attrs = batch.h.attributes
        if not attrs & CONTROL_FLAG_MASK and (attrs & 7) < Codec.ZSTD:
            if batch.h.records_count > _budget.record_chunk():
                return _streamed_v2(batch, to_magic, first_offset, out, limit)
            return _reframe_v2(batch, to_magic, first_offset, out, limit)
    if to_magic < MAGIC_V2:
        if batch.is_control:
            out.control_batches_dropped += 1
            return None
        if batch.codec_id == Codec.ZSTD and codec_override is None:
            raise ZstdDownConversionError(
                "Down-conversion of zstandard-compressed batches is not supported", position=batch.position)
    if batch.magic <= to_magic:
        if rebuild or (codec_override is not None and codec_override != batch.codec):
            recoded = _with_codec(batch, batch.codec if codec_override is None else codec_override, out, limit,
                                  records)
            if recoded is not None or rebuild:
                return recoded
        out.temporary_memory_bytes += batch.size
        out.batches_copied += 1
        if isinstance(batch, DefaultRecordBatch):
            first, count = batch.base_offset, batch.count
        elif not batch.is_compressed:
            first, count = batch.last_offset, 1
        else:
            first, count = None, None
        return ConvertedBatch(bytes(batch.raw()), first, batch.last_offset, count, batch.codec, True, 0,
                              batch.magic)
    ts_type = batch.timestamp_type
    log_append_time = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
    codec = batch.codec if codec_override is None else codec_override
    if to_magic < MAGIC_V2 and codec == Codec.ZSTD:
        raise ZstdDownConversionError(f"zstd cannot be written below magic 2 (to magic {to_magic})",
                                      position=batch.position)
    if to_magic < MAGIC_V2 and isinstance(batch, DefaultRecordBatch):
        r = reframe_v2_batch(batch, to_magic, first_offset, codec, limit=limit)
        out.records_filtered += r.filtered
        if not r.records:
            out.batches_empty += 1
            return None
        out.headers_dropped += r.with_headers
        if batch.producer_id >= 0 or batch.is_transactional:
            out.producer_fields_dropped += 1
        out.batches_converted += 1
        out.records_converted += r.records
        # temporaryMemoryBytes: the source batch plus builder.uncompressedBytesWritten().
        out.temporary_memory_bytes += batch.size + r.inner_bytes + (
            batch_header_size(to_magic, codec) if codec != Codec.NONE else 0)
        return ConvertedBatch(r.data, r.first_offset, r.last_offset, r.records, codec, False, r.inner_bytes,
                              to_magic)
    if records is not None:
        source = list(records)
    elif to_magic < MAGIC_V2 and batch.is_compressed:
        held = batch.record_source(limit=limit)
        if held.held is None:  # more records than a run holds: written as they are read
            return _streamed_records(batch, held, to_magic, codec, ts_type, log_append_time, out)
        source = held.held
    else:
        source = batch.records(limit=limit)
    if to_magic > MAGIC_V1 or batch.is_compressed:
        records = source
    else:
        records = [r for r in source if r.offset >= first_offset]
        out.records_filtered += len(source) - len(records)
    if not records:
        out.batches_empty += 1
        return None
    if to_magic >= MAGIC_V2:
        data = build_batch([(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records],
                           codec=codec, timestamp_type=ts_type, log_append_time=log_append_time)
    else:
        data = build_entries([(r.offset, r.timestamp, r.key, r.value) for r in records], magic=to_magic,
                             codec=codec, timestamp_type=ts_type, log_append_time=log_append_time)
    out.batches_converted += 1
    out.records_converted += len(records)
    written = _uncompressed_bytes_written(records, to_magic, codec, data)
    out.temporary_memory_bytes += batch.size + written
    return ConvertedBatch(data, records[0].offset, records[-1].offset, len(records), codec, False,
                          written - (batch_header_size(to_magic, codec) if codec != Codec.NONE else 0), to_magic)


def _reframe_v2(batch: DefaultRecordBatch, to_magic: int, first_offset: int, out: DownConverted,
                limit: int | None) -> ConvertedBatch | None:
    """:func:`down_convert_batch` for its hot case, a v2 batch (not control, not zstd) down-converted with its
    own codec: the same result and statistics without the general path's property lookups. With the
    extension it calls the compiled reframe directly (the steps of :func:`reframe_v2_batch`, without its
    intermediate objects); wherever that declines, :func:`reframe_v2_batch` runs (and raises exactly)."""
    h = batch.h
    attrs = h.attributes
    codec_id = attrs & 7
    count = h.records_count
    r = None
    if _C is not None and codec_id and count >= 0:
        lim = limit if limit is not None else _budget.decompress_limit()
        w = _C.reframe_v2_wrapped(batch.buf, batch.start, to_magic, lim, _wrap_codecs(to_magic, limit))
        if w is not None:  # else the steps below, one at a time (and their exact errors)
            data, inner, first, last, records, with_headers = w
            return _reframed(batch, to_magic, out, data, first, last, records, 0, with_headers,
                             len(inner) if inner is not None else 0, inner)
    if _C is not None and count >= 0:
        inner = batch.records_bytes(limit=limit)
        log_append_time = h.max_timestamp if attrs & 0x08 else None
        ts_bit = 0x08 if log_append_time is not None and to_magic > MAGIC_V0 else 0
        r = _C.reframe_v2_records(inner, count, h.base_offset, h.base_timestamp, log_append_time, to_magic,
                                  ts_bit, None if codec_id else first_offset, codec_id != 0)
    if r is None:
        full = reframe_v2_batch(batch, to_magic, first_offset, _CODECS[codec_id], limit=limit)
        data, records, filtered, with_headers = full.data, full.records, full.filtered, full.with_headers
        first, last, inner_bytes = full.first_offset, full.last_offset, full.inner_bytes
    else:
        inner, records, filtered, with_headers = r.data, r.records, r.filtered, r.with_headers
        first, last, max_ts = r.first_offset, r.last_offset, r.max_timestamp
        inner_bytes = len(inner)
        if codec_id and records:
            # reframe_v2_batch's wrapper: the last offset, the log append time or max timestamp (v1), codec.
            wrapper_ts = NO_TIMESTAMP
            if to_magic > MAGIC_V0:
                wrapper_ts = log_append_time if log_append_time is not None else max_ts
            data = wrapper_entry(to_magic, codec_id | ts_bit, wrapper_ts, last,
                                 compress(codec_id, inner, magic=to_magic))
        else:
            data = inner
    return _reframed(batch, to_magic, out, data, first, last, records, filtered, with_headers, inner_bytes,
                     inner if r is not None and codec_id and records else None)


def _reframed(batch: DefaultRecordBatch, to_magic: int, out: DownConverted, data: bytes | None, first: int, last: int,
              records: int, filtered: int, with_headers: int, inner_bytes: int,
              inner: bytes | None) -> ConvertedBatch | None:
    """:func:`_reframe_v2`'s statistics and result, whichever way the batch was reframed (``inner``: the message
    set a wrapper compressed, when the compiled code kept it)."""
    out.records_filtered += filtered
    if not records or data is None:
        out.batches_empty += 1
        return None
    h = batch.h
    codec_id = h.attributes & 7
    out.headers_dropped += with_headers
    if h.producer_id >= 0 or h.attributes & TRANSACTIONAL_FLAG_MASK:
        out.producer_fields_dropped += 1
    out.batches_converted += 1
    out.records_converted += records
    out.temporary_memory_bytes += (h.length + LOG_OVERHEAD + inner_bytes
                                   + (WRAPPER_HEADER[to_magic] if codec_id else 0))
    return ConvertedBatch(data, first, last, records, _CODECS[codec_id], False, inner_bytes, to_magic, inner)


_WRAP_CODECS: dict[tuple[int, int | None], tuple[Any, ...]] = {}


def _wrap_codecs(to_magic: int, limit: int | None) -> tuple[Any, ...]:
    """``_speedups``' codec callables (its F_* order, as ``convert.DownConverter`` builds them) for a conversion to
    ``to_magic`` that decompresses with ``limit``. The snappy block compressor is looked up at each call, as
    ``codecs.snappy_xerial_compress`` looks it up: a send follows ``codecs.snappy_block`` whichever path frames
    the blocks (the interop tests put snappy-java's compressor there)."""
    fns = _WRAP_CODECS.get((to_magic, limit))
    if fns is None:
        def dec(codec_id: int, view: Any) -> bytes:
            return decompress(codec_id, view, limit=limit, magic=MAGIC_V2)

        def comp(codec_id: int, data: bytes) -> bytes:
            return compress(codec_id, data, magic=to_magic)

        fns = _WRAP_CODECS[(to_magic, limit)] = (_crc32c.crc32c, dec, comp, None, lz4_fast_block,
                                                 snappy_block_len, snappy_unblock, lz4_unblock)
    return (*fns[:3], _codecs.snappy_block, *fns[4:])


def _streamed_records(batch: RecordBatch, source: RecordSource, to_magic: int, codec: Codec, ts_type: TimestampType,
                      lat: int, out: DownConverted) -> ConvertedBatch | None:
    """:func:`down_convert_batch`'s general path for a compressed batch of more records than a run holds: the
    messages (or one wrapper, compressed as they come) written from its records a chunk at a time."""
    if codec == Codec.NONE:
        parts: list[bytes] = []
        first = last = -1
        for d, f, f_last, _ in legacy_messages(source.chunks(), magic=to_magic, timestamp_type=ts_type,
                                               log_append_time=lat, position=batch.position):
            parts.append(d)
            first = f if first < 0 else first
            last = f_last
        data = b"".join(parts)
        del parts
        written = inner = len(data)
    else:
        built = legacy_wrapper(source.chunks(), cap=NO_CAP, magic=to_magic, codec=codec, timestamp_type=ts_type,
                               log_append_time=lat, position=batch.position)
        assert built.data is not None
        data, first, last, inner = built.data, built.first_offset, built.last_offset, built.uncompressed
        written = inner + batch_header_size(to_magic, codec)
    out.batches_converted += 1
    out.records_converted += source.count
    out.temporary_memory_bytes += batch.size + written
    return ConvertedBatch(data, first, last, source.count, codec, False, inner, to_magic)


def _streamed_v2(batch: DefaultRecordBatch, to_magic: int, first_offset: int, out: DownConverted,
                 limit: int | None) -> ConvertedBatch | None:
    """:func:`_reframe_v2` for a batch of more records than a run holds (a few MB can carry millions): the
    legacy messages written a chunk of records at a time, and compressed as they come (the wrapper holds the
    compressed bytes only, never the uncompressed messages). The same bytes and statistics."""
    h = batch.h
    codec = _CODECS[h.attributes & 7]
    lat = h.max_timestamp if h.attributes & 0x08 else NO_TIMESTAMP
    ts_type = TimestampType.LOG_APPEND_TIME if h.attributes & 0x08 else TimestampType.CREATE_TIME
    source = batch.record_source(limit=limit)
    with_headers = filtered = 0
    if codec == Codec.NONE:  # an uncompressed source: records below first_offset dropped, one message each
        parts: list[bytes] = []
        first = last = -1
        n = 0
        for chunk in source.chunks():
            kept = [r for r in chunk if r[0] >= first_offset]
            filtered += len(chunk) - len(kept)
            with_headers += sum(1 for r in kept if r[4])
            for data, f, f_last, k in legacy_messages([kept], magic=to_magic, timestamp_type=ts_type,
                                                      log_append_time=lat, position=batch.position):
                parts.append(data)
                n += k
                last = f_last
                if first < 0:
                    first = f
        data = b"".join(parts)
        del parts
        inner = len(data)
    else:
        for chunk in source.chunks():
            with_headers += sum(1 for r in chunk if r[4])
        built = legacy_wrapper(source.chunks(), cap=NO_CAP, magic=to_magic, codec=codec, timestamp_type=ts_type,
                               log_append_time=lat, position=batch.position)
        assert built.data is not None
        data, n, first, last, inner = built.data, built.count, built.first_offset, built.last_offset, built.uncompressed
    out.records_filtered += filtered
    if not n:
        out.batches_empty += 1
        return None
    out.headers_dropped += with_headers
    if h.producer_id >= 0 or h.attributes & TRANSACTIONAL_FLAG_MASK:
        out.producer_fields_dropped += 1
    out.batches_converted += 1
    out.records_converted += n
    out.temporary_memory_bytes += h.length + LOG_OVERHEAD + inner + (WRAPPER_HEADER[to_magic] if codec else 0)
    return ConvertedBatch(data, first, last, n, codec, False, inner, to_magic)


NO_CAP = 1 << 62  # a wrapper kept whatever its size (what Kafka's conversion for a fetch builds)
_CODECS = tuple(Codec)
# batch_header_size(magic, codec) of a compressed legacy wrapper: log overhead plus the message header.
WRAPPER_HEADER = (batch_header_size(MAGIC_V0, Codec.GZIP), batch_header_size(MAGIC_V1, Codec.GZIP))


def _with_codec(batch: RecordBatch, codec: Codec, out: DownConverted, limit: int | None,
                records: Sequence[Record] | None = None) -> ConvertedBatch | None:
    """A batch already at or below the target magic, re-encoded with ``codec`` in its own magic (kafkatool's
    choice of codec; Kafka copies such batches). Legacy batches keep offsets, timestamps, timestamp type, keys
    and values (``MemoryRecordsBuilder`` rules: v1 wrapper offsets relative, the wrapper's timestamp the max
    or the log append time; uncompressed means one message per record); v2 batches keep every header field
    (:func:`kafkatool.record.default_records.with_codec`). None: nothing to re-encode (a control batch or a batch
    without records, which Kafka never compresses), the batch is copied."""
    if batch.is_control or batch.count == 0:
        return None
    if isinstance(batch, DefaultRecordBatch):
        data, area = with_codec(batch, codec, limit=limit)
        out.batches_converted += 1
        out.records_converted += batch.records_count
        out.temporary_memory_bytes += batch.size + area
        return ConvertedBatch(data, batch.base_offset, batch.last_offset, batch.records_count, codec, False, area,
                              MAGIC_V2)
    recs = batch.records(limit=limit) if records is None else list(records)
    if not recs:
        return None
    ts_type = batch.timestamp_type
    lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
    data = build_entries([(r.offset, r.timestamp, r.key, r.value) for r in recs], magic=batch.magic, codec=codec,
                         timestamp_type=ts_type, log_append_time=lat)
    written = _uncompressed_bytes_written(recs, batch.magic, codec, data)
    out.batches_converted += 1
    out.records_converted += len(recs)
    out.temporary_memory_bytes += batch.size + written
    return ConvertedBatch(data, recs[0].offset, recs[-1].offset, len(recs), codec, False,
                          written - (batch_header_size(batch.magic, codec) if codec != Codec.NONE else 0), batch.magic)


def _uncompressed_bytes_written(records: list[Record], magic: int, codec: Codec, data: bytes) -> int:
    """``MemoryRecordsBuilder.uncompressedBytesWritten``: records before compression plus the batch header."""
    if codec == Codec.NONE:
        return len(data)
    if magic >= MAGIC_V2:
        base, base_ts = records[0].offset, records[0].timestamp
        return batch_header_size(magic, codec) + sum(
            v2_record_size(r.offset - base, r.timestamp - base_ts, r.key, r.value, r.headers) for r in records)
    return batch_header_size(magic, codec) + sum(legacy_entry_size(magic, r.key, r.value) for r in records)


# ---------------------------------------------------------------------------------------------- fast path

@dataclass(slots=True)
class Reframed:
    """Legacy bytes written from one v2 batch, and what went into them."""

    data: bytes
    records: int
    filtered: int  # records below first_offset (uncompressed sources only)
    with_headers: int  # records whose headers were dropped
    record_bytes: int  # v2 record bytes read (temporaryMemoryBytes' share)
    inner_bytes: int  # uncompressed size of the legacy entries (the compression-ratio denominator)
    first_offset: int  # first converted record's offset (-1 when none)
    last_offset: int
    max_timestamp: int  # largest record timestamp written (-1 for v0 and LogAppendTime)


_I32 = struct.Struct(">i")
_CRC_SIZE = struct.calcsize(">I")  # the message's crc: the entry's size counts it, the CRC does not cover it
_NULL_LEN = b"\xff\xff\xff\xff"


def reframe_v2_batch(batch: DefaultRecordBatch, to_magic: int, first_offset: int, codec: Codec, *,
                     limit: int | None = None) -> Reframed:
    """v2 batch -> v0/v1 bytes exactly as ``RecordsUtil.convertRecordBatch`` builds them: one message per
    record (uncompressed target), or one wrapper of inner messages (compressed target). Records below
    ``first_offset`` are dropped only from uncompressed sources."""
    h = batch.h
    count = h.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v{h.magic} batch",
                                 position=batch.position)
    data = batch.records_bytes(limit=limit)
    lat = h.attributes & 0x08
    log_append_time = int(h.max_timestamp) if lat else None
    # compute_attributes(to_magic, codec, timestamp type): v0 has no timestamp type.
    ts_bit = 0x08 if lat and to_magic > MAGIC_V0 else 0
    wrap = codec != Codec.NONE
    source_compressed = h.attributes & 7
    cutoff = None if source_compressed else first_offset
    try:
        r = reframe_v2_records(data, count, int(h.base_offset), int(h.base_timestamp), log_append_time, to_magic,
                               ts_bit, cutoff, relative=wrap)
    except KafkaToolError as e:
        if e.position is not None and not source_compressed:
            e.position += batch.position + RECORDS_OFFSET
        else:
            e.message += f" (in the batch at byte {batch.position})"
            e.position = batch.position
        raise
    if not wrap or not r.records:
        return r
    # MemoryRecordsBuilder.writeLegacyCompressedWrapperHeader: offset of the last record, null key,
    # timestamp = log append time or the max inner timestamp (v1), codec and timestamp type in attributes.
    inner = r.data
    wrapper_ts = NO_TIMESTAMP
    if to_magic > MAGIC_V0:
        wrapper_ts = log_append_time if log_append_time is not None else r.max_timestamp
    value = compress(codec, inner, magic=to_magic)
    wrapper = wrapper_entry(to_magic, int(codec) | ts_bit, wrapper_ts, r.last_offset, value)
    return Reframed(wrapper, r.records, r.filtered, r.with_headers, r.record_bytes, len(inner), r.first_offset,
                    r.last_offset, wrapper_ts)


def wrapper_entry(magic: int, attributes: int, timestamp: int, last_offset: int, value: bytes) -> bytes:
    """``encode_entry(last_offset, encode_message(magic, attributes, timestamp, None, value))``: the compiled
    twin (one allocation, CRC-32 in C) when it is built, else :func:`wrapper_entry_py`."""
    if _C is not None:
        out: bytes | None = _C.legacy_wrapper(magic, attributes, timestamp, last_offset, value)
        if out is not None:
            return out
    return wrapper_entry_py(magic, attributes, timestamp, last_offset, value)


def wrapper_entry_py(magic: int, attributes: int, timestamp: int, last_offset: int, value: bytes) -> bytes:
    """:func:`wrapper_entry` in pure Python, with one copy of the compressed value instead of three (the CRC
    is computed incrementally)."""
    if magic == MAGIC_V0:
        head = HEAD_V0.pack(MAGIC_V0, attributes, -1) + _I32.pack(len(value))
    else:
        if timestamp < NO_TIMESTAMP:
            raise InvalidRecordError(f"Invalid message timestamp {timestamp}", position=0)
        head = HEAD_V1.pack(MAGIC_V1, attributes, timestamp, -1) + _I32.pack(len(value))
    crc = _crc32(value, _crc32(head))
    return b"".join((ENTRY_PREFIX.pack(last_offset, _CRC_SIZE + len(head) + len(value), crc), head, value))


def reframe_v2_records(d: bytes, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
                       to_magic: int, attributes: int, first_offset: int | None, *, relative: bool) -> Reframed:
    """Decode ``count`` v2 records from ``d`` (a whole records area) and write each as a legacy entry.

    The compiled twin (``_speedups.reframe_v2_records``, CRC-32 in C) when it is built; wherever it returns
    None, :func:`reframe_v2_records_py`, the reference, runs (and raises any error exactly).
    """
    if _C is not None:
        r = _C.reframe_v2_records(d, count, base_offset, base_timestamp, log_append_time, to_magic, attributes,
                                  first_offset, relative)
        if r is not None:
            return Reframed(r.data, r.records, r.filtered, r.with_headers, len(d), len(r.data), r.first_offset,
                            r.last_offset, r.max_timestamp)
    return reframe_v2_records_py(d, count, base_offset, base_timestamp, log_append_time, to_magic, attributes,
                                 first_offset, relative=relative)


def reframe_v2_records_py(d: bytes, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None,
                          to_magic: int, attributes: int, first_offset: int | None, *, relative: bool) -> Reframed:
    """:func:`reframe_v2_records` in pure Python (the reference of the compiled twin, and its fallback).

    Checks are ``parse_records``'s (Kafka's ``DefaultRecord.readFrom``). ``relative``: inner offsets of
    a v1 wrapper (relative to the first record); ``first_offset``: drop records below it (None: keep all).
    The loop is the hot path of ``downconvert``: varints of one and two bytes are decoded inline, and
    each message costs one ``pack`` of its head (with the key length), one join, one CRC and one
    ``pack`` of its log header.
    """
    end = len(d)
    if count * MIN_RECORD_SIZE > end:
        raise InvalidRecordError(
            f"Incorrect declared batch size, premature EOF reached (record count {count} cannot fit in "
            f"{end} bytes)", position=0)
    v1 = to_magic == MAGIC_V1
    if v1 and log_append_time is not None and log_append_time < NO_TIMESTAMP:
        raise InvalidRecordError(f"Invalid message timestamp {log_append_time}", position=0)
    # v0 heads and LogAppendTime v1 heads carry the same timestamp for every record.
    per_record_ts = v1 and log_append_time is None
    fixed_ts = NO_TIMESTAMP if log_append_time is None else log_append_time
    head_v1 = HEAD_V1.pack
    head_v0 = HEAD_V0.pack
    entry_pack = ENTRY_PREFIX.pack
    crc_size = _CRC_SIZE
    i32 = _I32.pack
    crc32 = _crc32
    join = b"".join
    null = _NULL_LEN
    parts: list[bytes] = []
    extend = parts.extend
    p = 0
    written = filtered = with_headers = 0
    first = last = max_ts = -1
    rel_base = 0
    try:
        for _ in range(count):
            start = p
            b = d[p]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                p += 1
            elif d[p + 1] < 0x80:
                u = (b & 0x7F) | (d[p + 1] << 7)
                length = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                length, p = read_varint(d, p, end)
            rec_end = p + length
            if length < 0 or rec_end > end:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                    f"has only {end - p} remaining bytes.", position=start)
            b = d[p + 1]  # after the unused attributes byte
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                ts_delta, p = read_varlong(d, p + 1, end)
            b = d[p]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                p += 1
            elif d[p + 1] < 0x80:
                u = (b & 0x7F) | (d[p + 1] << 7)
                offset_delta = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                offset_delta, p = read_varint(d, p, end)
            b = d[p]
            if b < 0x80:
                kn = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                kn, p = read_varint(d, p, end)
            kp = p
            if kn >= 0:
                p += kn
                klen = kn
            elif kn == -1:
                kn = 0
                klen = -1
            else:
                raise InvalidRecordError(f"Invalid negative key length {kn} (Kafka reads it as a null key)",
                                         position=start)
            b = d[p]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                p += 1
            elif d[p + 1] < 0x80:
                u = (b & 0x7F) | (d[p + 1] << 7)
                n = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                n, p = read_varint(d, p, end)
            if n >= 0:
                value = d[p:p + n]
                vlen = i32(n)
                p += n
            elif n == -1:
                value = b""
                vlen = null
            else:
                raise InvalidRecordError(f"Invalid negative value length {n} (Kafka reads it as a null value)",
                                         position=start)
            if d[p] == 0:
                p += 1
                headers = False
            else:
                _, p = _parse_headers(d, p, rec_end, start)
                headers = True
            if p != rec_end:
                raise InvalidRecordError(
                    f"Invalid record size: expected to read {length} bytes in record payload, but instead read "
                    f"{p - (rec_end - length)}", position=start)
            offset = base_offset + offset_delta
            if first_offset is not None and offset < first_offset:
                filtered += 1
                continue
            if first < 0:
                first = offset
                if relative and v1:
                    rel_base = offset
            if headers:
                with_headers += 1
            if per_record_ts:
                ts = base_timestamp + ts_delta
                if ts > max_ts:
                    max_ts = ts
                elif ts < NO_TIMESTAMP:  # LegacyRecord.write: IllegalArgumentException
                    raise InvalidRecordError(f"Invalid message timestamp {ts}", position=start)
            else:
                ts = fixed_ts
            head = head_v1(MAGIC_V1, attributes, ts, klen) if v1 else head_v0(MAGIC_V0, attributes, klen)
            body = join((head, d[kp:kp + kn], vlen, value)) if kn else join((head, vlen, value))
            extend((entry_pack(offset - rel_base, len(body) + crc_size, crc32(body)), body))
            written += 1
            last = offset
    except IndexError:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached", position=p) from None
    if p != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", position=p)
    data = join(parts)
    return Reframed(data, written, filtered, with_headers, end, len(data), first, last, max_ts)
