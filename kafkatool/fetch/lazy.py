"""KIP-283 lazy, chunked down-conversion: ``LazyDownConversionRecords`` and its send (kafka-clients 3.9).

Spec §5.3, checked byte for byte against ``kafka-ref lazysend`` (``LazyDownConversionRecordsSend.writeTo``).

Committed size ``Spre`` (``LazyDownConversionRecords.sizeInBytes``), fixed in the constructor before any
byte is sent: the constructor converts the slice one source batch at a time (``iterator(0)``) until a
batch converts to something; ``Spre = max(slice size, that converted batch's size)``. If nothing
converts it is 12 (``MIN_OVERFLOW_MESSAGE_LENGTH``) when the slice holds a complete batch, else 0. A
zstd batch met there raises, and the broker answers ``UNSUPPORTED_COMPRESSION_TYPE``.

The send writes exactly ``Spre`` bytes:

* converted chunks in order: source batches grouped while their sizes sum to <= 128 KiB (at least
  one); a chunk that reaches ``Spre`` is cut there, mid-batch, and nothing more is converted;
* when the chunks run out first, overflow buffers fill the rest: ``max(12, min(r + 1, 128 KiB))``
  bytes, ``baseOffset = -1``, ``length = max(r + 1, 61)``, zeros, of which ``min(size, r)`` are
  written, repeated (each with its own header) until ``r`` is used up;
* a chunk that holds a zstd batch is dropped and an overflow buffer is sent instead; Kafka's
  ``AbstractIterator`` is then in its FAILED state, so if more than that one overflow buffer is
  needed the next ``hasNext()`` throws ``IllegalStateException("Iterator is in failed state")``: the
  send fails and the broker closes the connection (reproduced with kafka-ref, not in the spec);
* quirk: the send's iterator reuses the constructor's cached converted batch but skips exactly
  *one* source batch, so when leading batches converted to nothing (a transaction marker at the
  fetch position, records below the fetch offset) the first converting batch is sent twice.

Unlike Kafka we do not keep the first converted batch between the constructor and the send; it is
converted again, so memory per partition stays bounded by one chunk whatever the number of partitions.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from kafkatool.constants import DOWN_CONVERSION_READ_SIZE
from kafkatool.record.batch import LOG_HEADER, LOG_OVERHEAD
from kafkatool.record.default_records import RECORD_BATCH_OVERHEAD
from kafkatool.record.down_convert import (
    DownConverted,
    ZstdDownConversionError,
    down_convert,
    down_convert_plain_chunk,
    iter_chunks,
)
from kafkatool.record.file_records import FileRecords, RecordBatch

MIN_OVERFLOW_MESSAGE_LENGTH = LOG_OVERHEAD  # LazyDownConversionRecordsSend: Records.LOG_OVERHEAD
# The overflow batch header is a log header: baseOffset -1, then a length of at least RECORD_BATCH_OVERHEAD.
_OVERFLOW_HEADER = LOG_HEADER

PieceKind = Literal["chunk", "overflow"]


@dataclass(frozen=True, slots=True)
class Piece:
    """Bytes the send writes in one go: (a prefix of) one converted chunk, or one overflow buffer."""

    kind: PieceKind
    data: bytes  # what is written: at most ``full_size`` bytes
    full_size: int  # size of the chunk or overflow buffer before the cut at the committed size
    records_converted: int = 0
    source_batches: int = 0
    # (position in ``data``, inner message set) of the wrappers the conversion built (``keep_inners``)
    inners: list[tuple[int, bytes]] | None = None


@dataclass(slots=True)
class SendStats:
    """What one partition's lazy send did (``RecordConversionStats`` plus what the wire shows)."""

    committed_size: int = 0
    bytes_written: int = 0
    chunks: int = 0  # converted chunks sent (the cached first one included)
    converted_bytes: int = 0  # full size of every converted chunk sent, before any cut
    converted_bytes_sent: int = 0
    records_converted: int = 0  # RecordConversionStats.numRecordsConverted
    temporary_memory_bytes: int = 0  # RecordConversionStats.temporaryMemoryBytes (summed)
    # Kafka's accounting of one chunk's heap, max over the chunks sent: RecordValidationStats.temporaryMemoryBytes
    # (the source batches' sizes plus MemoryRecordsBuilder.uncompressedBytesWritten) plus the converted chunk's
    # size. Computed from sizes, not measured: what a 3.9 broker's heap holds for the chunk.
    peak_chunk_memory: int = 0
    # Measured (trace_memory only): the peak of Python heap allocations live at once while kafkatool converted
    # one chunk (tracemalloc; the converted chunk included, the mapped source pages not), max over the
    # conversions, the constructor's first batch included. None when not traced.
    peak_traced_memory: int | None = None
    source_bytes_converted: int = 0
    cut_bytes: int = 0  # bytes of the last converted chunk left unsent (Spost > Spre)
    overflow_buffers: int = 0
    overflow_bytes: int = 0  # padding: bytes written from overflow buffers
    overflow_headers: list[int] = field(default_factory=list)  # positions of each overflow header
    duplicated_first_batch: bool = False
    zstd_overflow: bool = False  # a chunk holding zstd was replaced by an overflow buffer
    send_error: str | None = None  # the send failed (the broker closes the connection)

    @property
    def case(self) -> str:
        """``exact`` / ``cut`` / ``overflow`` (the three cases of §5.3), ``empty`` or ``send-failed``."""
        if self.send_error is not None:
            return "send-failed"
        if self.committed_size == 0:
            return "empty"
        if self.cut_bytes:
            return "cut"
        if self.overflow_bytes:
            return "overflow"
        return "exact"


def overflow_buffer(remaining: int, max_read_size: int = DOWN_CONVERSION_READ_SIZE) -> bytes:
    """``LazyDownConversionRecordsSend.buildOverflowBatch(remaining)``: header then zeros."""
    size = max(MIN_OVERFLOW_MESSAGE_LENGTH, min(remaining + 1, max_read_size))
    buf = bytearray(size)
    _OVERFLOW_HEADER.pack_into(buf, 0, -1, max(remaining + 1, RECORD_BATCH_OVERHEAD))
    return bytes(buf)


class LazyDownConversionRecords:
    """One partition's slice ``[start, start + size)`` of a segment file, to be down-converted lazily.

    The constructor computes the committed size as Kafka's does and raises
    :class:`ZstdDownConversionError` when the first batch that converts to anything is zstd.
    """

    def __init__(self, records: FileRecords, start: int, size: int, to_magic: int, first_offset: int, *,
                 max_read_size: int = DOWN_CONVERSION_READ_SIZE, limit: int | None = None,
                 trace_memory: bool = False) -> None:
        self.trace_memory = trace_memory
        self.traced_peak: int | None = None
        # Pieces carry the inner message sets of the wrappers built (the consumer's view reads them instead of
        # decompressing the wrappers again); set by the send's caller.
        self.keep_inners = False
        self.records = records
        self.start = start
        # FileRecords.slice: the size is cut at the end of the file.
        self.size = max(0, min(size, records.size - start))
        self.to_magic = to_magic
        self.first_offset = first_offset
        self.max_read_size = max_read_size
        self.limit = limit
        self.first_batch_index: int | None = None  # source batch behind the cached first converted chunk
        self.first_converted_size = 0
        self.leading_empty_batches = 0  # batches before it that converted to nothing
        any_batch = False
        for i, batch in enumerate(self._batches()):  # iterator(0): one source batch per chunk
            any_batch = True
            converted = self._convert([batch])
            if converted.data:
                self.first_batch_index = i
                self.first_converted_size = len(converted.data)
                break
            self.leading_empty_batches += 1
        if self.first_batch_index is not None:
            self.size_in_bytes = max(self.size, self.first_converted_size)
        else:
            self.size_in_bytes = MIN_OVERFLOW_MESSAGE_LENGTH if any_batch else 0
        self.stats = SendStats(committed_size=self.size_in_bytes, peak_traced_memory=self.traced_peak)

    def _convert(self, batches: list[RecordBatch]) -> DownConverted:
        """``down_convert`` of one chunk; with ``trace_memory`` its peak heap is measured with tracemalloc
        (started for the call and stopped after it, or, when something else is tracing, its peak reset)."""
        if not self.trace_memory:
            return down_convert(batches, self.to_magic, self.first_offset, limit=self.limit,
                                keep_inners=self.keep_inners)
        outer = tracemalloc.is_tracing()
        if outer:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
        else:
            base = 0
            tracemalloc.start()
        try:
            return down_convert(batches, self.to_magic, self.first_offset, limit=self.limit)
        finally:
            peak = tracemalloc.get_traced_memory()[1] - base
            if not outer:
                tracemalloc.stop()
            self.traced_peak = max(self.traced_peak or 0, peak)

    def _batches(self) -> Iterator[RecordBatch]:
        return iter(self.records.batches(self.start, self.start + self.size))

    def _converted_chunks(self) -> Iterator[tuple[DownConverted, int, bool]]:
        """``iterator(MAX_READ_SIZE)`` as the send uses it: the cached first chunk, then chunks from the
        *second* source batch on (the duplicate-first-batch quirk). Yields (converted chunk, source bytes,
        whether the chunk converts the cached batch a second time)."""
        end = min(self.start + self.size, self.records.size)  # where the walk of _batches stops
        p = self.start
        index = 0
        first = self.first_batch_index
        if first is not None:
            for i, batch in enumerate(self._batches()):
                if i == first:
                    yield self._convert([batch]), batch.size, False
                    break
            walk = self.records.batches(self.start, end)
            if next(iter(walk), None) is None:  # Kafka skips exactly one source batch
                return
            p = walk.position
            index = 1
        while True:
            # A chunk of plain batches by one compiled run; any other (or a traced one) as iter_chunks groups it.
            fast = None if self.trace_memory else down_convert_plain_chunk(
                self.records.buf, p, end, self.max_read_size, self.to_magic, self.first_offset, limit=self.limit,
                keep_inners=self.keep_inners)
            if fast is not None:
                converted, source_bytes, count = fast
            else:
                group = next(iter_chunks(self.records.batches(p, end), self.max_read_size), None)
                if group is None:
                    return
                converted = self._convert(group)
                source_bytes, count = sum(b.size for b in group), len(group)
            again = first is not None and first > 0 and index <= first < index + count
            index += count
            p += source_bytes
            # Give the file pages of the converted chunk back: resident memory stays at one chunk.
            self.records.drop_before(p)
            if converted.data:
                yield converted, source_bytes, again

    def send(self) -> Iterator[Piece]:
        """The bytes ``LazyDownConversionRecordsSend.writeTo`` writes, piece by piece (``stats`` is updated)."""
        stats = self.stats
        remaining = self.size_in_bytes
        chunks = self._converted_chunks()
        state = "ready"  # AbstractIterator: ready / done / failed
        while remaining > 0:
            piece: Piece
            if state == "failed":
                stats.send_error = ("IllegalStateException: Iterator is in failed state (a zstd chunk was replaced "
                                    "by an overflow buffer and more bytes were committed); the broker closes the "
                                    "connection")
                return
            item = None
            if state == "ready":
                try:
                    item = next(chunks, None)
                except ZstdDownConversionError:
                    state = "failed"
                    stats.zstd_overflow = True
                if item is None and state == "ready":
                    state = "done"
                stats.peak_traced_memory = self.traced_peak
            if item is not None:
                converted, source_bytes, again = item
                size = len(converted.data)
                n = min(size, remaining)
                piece = Piece("chunk", converted.data[:n] if n < size else converted.data, size,
                              converted.records_converted, converted.batches_in, converted.inners)
                stats.chunks += 1
                stats.converted_bytes += size
                stats.converted_bytes_sent += n
                stats.cut_bytes += size - n
                stats.records_converted += converted.records_converted
                stats.temporary_memory_bytes += converted.temporary_memory_bytes
                stats.source_bytes_converted += source_bytes
                stats.peak_chunk_memory = max(stats.peak_chunk_memory, converted.temporary_memory_bytes + size)
                stats.duplicated_first_batch |= again
            else:
                buf = overflow_buffer(remaining, self.max_read_size)
                n = min(len(buf), remaining)
                piece = Piece("overflow", buf[:n] if n < len(buf) else buf, len(buf))
                stats.overflow_buffers += 1
                stats.overflow_bytes += n
                stats.overflow_headers.append(stats.bytes_written)
            remaining -= n
            stats.bytes_written += n
            yield piece

