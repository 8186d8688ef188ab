"""Offline conversion of a segment, a partition or a log dir between message formats v2, v1 and v0.

``downconvert`` serves consumers that only read v0/v1 without a broker spending CPU and heap on
conversion at fetch time (the problem of KIP-283); ``upconvert`` removes v0/v1 data that Kafka 4 no
longer writes (KIP-724). The output is a new directory holding one partition dir per input partition,
loadable by a broker:

* every source segment yields one or more output segments, the first named by the source's base
  offset; a new one is rolled as the broker's ``LogSegment.shouldRoll`` would (``segment_bytes``
  reached, or an offset that would not fit the 4-byte relative index); each ``.log`` gets the
  ``.index``/``.timeindex`` Kafka 3.9's ``LogSegment.recover`` would build, built while it is written;
* offsets are preserved; if dropped control batches would lower the log end offset, an empty segment
  named by the source's log end offset keeps it (consumers' committed offsets stay valid);
* ``leader-epoch-checkpoint`` and ``partition.metadata`` are carried over; up-conversion also carries the
  producer snapshots and the aborted-transaction index (v2 batches are copied unchanged), down-conversion
  drops both (v0/v1 have no producer state and no transaction markers);
* work proceeds batch by batch, each converted batch written before the next is read; the common
  down-conversion case (a v2 batch keeping its codec) runs compiled, up to ``chunk_size`` of source
  (128 KiB as Kafka's ``LazyDownConversionRecords``) at a time: memory depends on the chunk size and
  the largest batch only;
* crash safety: a partition is written into ``DST/.kafkatool-tmp-<name>.tmp``, every file fsynced, then the
  directory is renamed to ``DST/<name>``; a failed run removes what it wrote. After a ``kill -9`` every
  ``DST/<name>`` is complete and only a ``.kafkatool-tmp-*`` dir can be partial (a broker started on DST
  refuses it by name: ``<name>.tmp`` is no topic-partition). DST inside a log dir a live broker holds is
  refused (exit 3); inside a stopped broker's log dir, its ``.lock`` is held while the run writes.
"""

from __future__ import annotations

import os
import resource
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import Any

from kafkatool._accel import crc32c as _crc32c
from kafkatool._accel import speedups as _C
from kafkatool.constants import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_SEGMENT_BYTES,
    DOWN_CONVERSION_READ_SIZE,
    INT32_MAX,
)
from kafkatool.convert.checks import Skipped, SourceChecker
from kafkatool.convert.destination import Destination, begin, check_destination, finish, undo_begin
from kafkatool.convert.files import (
    PartitionSource,
    SegmentWriter,
    resolve_sources,
    source_batches,
    zstd_refused,
)
from kafkatool.errors import CorruptRecordError, InvalidRecordError, KafkaToolError, LimitExceededError, UsageError
from kafkatool.log.layout import TXN_INDEX_SUFFIX
from kafkatool.log.lock import hold_for_write
from kafkatool.log.txn_index import read_txn_index
from kafkatool.record.batch import LOG_HEADER, LOG_OVERHEAD, MAGIC_V2, NO_TIMESTAMP, Record, RecordSource, TimestampType
from kafkatool.record.codecs import (
    Codec,
    compress,
    decompress,
    lz4_fast_block,
    lz4_unblock,
    snappy_block,
    snappy_block_len,
    snappy_unblock,
)
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.down_convert import WRAPPER_HEADER, DownConverted, down_convert_batch
from kafkatool.record.estimator import (
    ESTIMATION_STEPS,
    BatchPlanner,
    Built,
    CompressionRatioEstimator,
    RecordRange,
    SplitStats,
    build_within_limit,
    compressed_payload,
    legacy_entry_size,
    stream_within_limit,
)
from kafkatool.record.file_records import FileRecords, RecordBatch
from kafkatool.record.legacy_records import build_entries
from kafkatool.record.streamed import legacy_messages, legacy_wrapper
from kafkatool.record.up_convert import ConversionCounters, Unit, UpConverter, oversized_copy
from kafkatool.util import budget as _budget
from kafkatool.util import crash
from kafkatool.util.atomic import DirMaker, fsync_dir, temp_name
from kafkatool.util.printable import shown
from kafkatool.util.regular import open_regular
from kafkatool.util.sparse import copy_sparse

__all__ = ["ConvertObserver", "ConvertOptions", "PartitionSource", "PartitionStats", "convert_log"]

DEFAULT_BATCH_BYTES = 16384  # producer batch.size
MAX_SEGMENT_BYTES = INT32_MAX  # positions in .index are int32


@dataclass(frozen=True, slots=True)
class ConvertOptions:
    to_magic: int  # 0 or 1: downconvert; 2: upconvert
    codec: Codec | None = None  # None: keep each batch's codec
    zstd_to: Codec | None = None  # downconvert: what zstd batches become (None: refuse them, as Kafka does)
    chunk_size: int = DOWN_CONVERSION_READ_SIZE
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    batch_bytes: int = DEFAULT_BATCH_BYTES  # upconvert: group uncompressed legacy messages up to this (0: one each)
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    decompress_limit: int | None = None
    dry_run: bool = False
    skip_corrupt: bool = False  # leave corrupt batches (and legacy inner messages) out, counted, instead of stopping

    @property
    def up(self) -> bool:
        return self.to_magic >= MAGIC_V2

    def validate(self) -> None:
        if self.to_magic not in (0, 1, 2):
            raise UsageError(f"must be 0 or 1 (down-conversion) or 2 (up-conversion), got {self.to_magic}",
                             field="to_magic")
        for name, codec in (("codec", self.codec), ("zstd_to", self.zstd_to)):
            if not self.up and codec == Codec.ZSTD:
                raise UsageError("zstd cannot be written below magic 2: choose gzip, lz4, snappy or none", field=name)
        if self.chunk_size < 1:
            raise UsageError("must be at least 1 byte", field="chunk_size")
        if not 1 <= self.segment_bytes <= MAX_SEGMENT_BYTES:
            raise UsageError(f"must be between 1 and {MAX_SEGMENT_BYTES} (positions are int32)", field="segment_bytes")
        if self.max_message_bytes < 1:
            raise UsageError("must be at least 1", field="max_message_bytes")
        if self.batch_bytes < 0:
            raise UsageError("must be >= 0", field="batch_bytes")

    def shaping(self) -> dict[str, Any]:
        """The options that shape the output (not the chunk size nor the memory: those only pace the work)."""
        return {"to_magic": self.to_magic, "codec": None if self.codec is None else self.codec.name.lower(),
                "zstd_to": None if self.zstd_to is None else self.zstd_to.name.lower(),
                "segment_bytes": self.segment_bytes, "max_message_bytes": self.max_message_bytes,
                "batch_bytes": self.batch_bytes, "index_interval_bytes": self.index_interval_bytes}


@dataclass(slots=True)
class PartitionStats:
    """The per-partition summary (one ``partition`` JSON line in the commands' JSON output)."""

    partition: str
    source: str
    output: str | None
    to_magic: int
    segments_in: int = 0
    segments_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    batches_in: int = 0
    counters: ConversionCounters = field(default_factory=ConversionCounters)
    control_batches_dropped: int = 0
    empty_batches_dropped: int = 0
    headers_dropped: int = 0  # records whose headers v0/v1 cannot hold
    producer_fields_dropped: int = 0  # batches whose producer id/epoch/sequence were lost
    trailing_bytes_skipped: int = 0  # torn tails the broker's recovery would truncate too
    corrupt: Skipped = field(default_factory=Skipped)  # what skip_corrupt left out
    log_end_offset_in: int = -1
    log_end_offset_out: int = -1
    files_carried: list[str] = field(default_factory=list)
    files_dropped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    peak_rss_bytes: int = 0
    # "partition": the peak RSS while this partition was converted (Linux: VmHWM reset before it);
    # "process": the process's peak so far (ru_maxrss), where the high-water mark cannot be reset.
    peak_rss_scope: str = "process"

    @property
    def split_rate(self) -> float:
        """Planned batches that had to be split, per planned batch (Kafka's ``batch-split-rate`` per batch).
        A planned batch is counted once however often its parts were split again: the planned batches are
        the built ones with each split batch's final parts counted as the one batch they came from."""
        c = self.counters
        planned = c.batches_built - c.split_batches + c.batches_split
        return c.batches_split / planned if planned else 0.0

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def skipped(self, text: str, n_bytes: int) -> None:
        self.warnings.append(text)
        self.trailing_bytes_skipped += n_bytes

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("counters", "corrupt")}
        d.update(asdict(self.counters))
        c = self.corrupt
        d.update(corrupt_batches_skipped=c.batches, corrupt_records_skipped=c.records,
                 corrupt_batches_uncounted=c.unknown_records, corrupt_skipped=list(c.findings))
        d["corrupt_skipped_count"] = c.count
        d["split_rate"] = round(self.split_rate, 6)
        d["elapsed_s"] = round(self.elapsed_s, 3)
        return d


class ConvertObserver:
    """Hooks for progress and per-partition results (the command renders them; the library prints nothing)."""

    def start(self, sources: list[PartitionSource], total_bytes: int) -> None:
        pass

    def advance(self, n_bytes: int, partition: str) -> None:
        pass

    def partition_done(self, stats: PartitionStats) -> None:
        pass

    def note(self, text: str) -> None:
        """Progress information (a resumed run: what an earlier one completed)."""

    def warning(self, text: str) -> None:
        """A line for the operator about the run as a whole (internal topics skipped)."""


class DownConverter:
    """One partition's batches -> v0/v1 output units, ``RecordsUtil.downConvert`` rules plus KIP-126 splits.

    With a ``codec``, batches already at or below the target magic (which Kafka copies) are re-encoded in
    their own magic; consecutive uncompressed legacy messages are grouped into one compressed wrapper up to
    ``batch_bytes`` (the producer's batch.size and KIP-126 estimate, as upconvert groups them), a group
    breaking where the magic, the timestamp type or the log append time changes."""

    def __init__(self, opts: ConvertOptions, estimator: CompressionRatioEstimator, topic: str,
                 counters: ConversionCounters) -> None:
        self.opts = opts
        self.estimator = estimator
        self.topic = topic
        self.c = counters
        self.dc = DownConverted(b"")
        self._pending: list[Record] = []
        self._pending_key: tuple[int, Codec, TimestampType, int] | None = None
        self._planner: BatchPlanner | None = None
        self._run_codecs: tuple[Any, ...] | None = None  # what run() hands the compiled run, built once

    def add(self, batch: RecordBatch, records: list[Record] | None = None, dropped: int = 0,
            source: RecordSource | None = None) -> Iterable[Unit]:
        """Units completed by ``batch``. ``records``: its records, already decoded (and checked); ``source``: for a
        batch of more records than a run holds, its (checked) records to read a chunk at a time; ``dropped``: how
        many of its records were left out of them (then a batch Kafka would copy is rebuilt instead)."""
        opts = self.opts
        override = opts.codec
        if override is None and batch.codec_id == Codec.ZSTD:
            override = opts.zstd_to
            if override is None and (refused := zstd_refused(batch)) is not None:
                raise refused
        if (override is not None and override != Codec.NONE and batch.magic <= opts.to_magic
                and not batch.is_compressed):
            return self._group(batch, override, records)
        if self._pending:
            return chain(self.flush(), self._add(batch, override, records, dropped, source))
        return self._add(batch, override, records, dropped, source)

    @property
    def can_run(self) -> bool:
        """Whether :meth:`run` may take batches: the compiled extension is there and batches keep their codec."""
        return _C is not None and self.opts.codec is None and not self.opts.up

    def run(self, buf: Any, p: int, end: int, writer: SegmentWriter, stats: PartitionStats,
            floor: int = -1) -> tuple[int, int] | None:
        """Convert the batches from ``buf[p]`` that take the common path (v2, same codec, no split, no segment
        roll) and pass every check of :class:`kafkatool.convert.checks.SourceChecker` (CRC, records, offsets after
        ``floor`` and inside each batch) in one compiled run, as :meth:`add` and ``SegmentWriter.append`` would one
        by one, and write them. Returns (where the run stopped, the log end offset it reached), or None when it
        took no batch (the caller checks and converts that one itself). Only between groups (nothing pending)."""
        if self._pending or not self.can_run or _C is None:
            return None
        opts, c, dc = self.opts, self.c, self.dc
        to_magic = opts.to_magic
        est = self.estimator
        topic = self.topic
        # The limit the run's own unframing applies: the one codecs.decompress applies on the Python path.
        limit = opts.decompress_limit if opts.decompress_limit is not None else _budget.decompress_limit()
        if self._run_codecs is None:
            def dec(codec_id: int, view: Any) -> bytes:
                return decompress(codec_id, view, limit=opts.decompress_limit, magic=MAGIC_V2)

            def comp(codec_id: int, data: bytes) -> bytes:
                return compress(codec_id, data, magic=to_magic)

            # _speedups.c's F_* order: the run calls these (and frames single snappy/lz4 blocks itself).
            self._run_codecs = (_crc32c.crc32c, dec, comp, snappy_block, lz4_fast_block, snappy_block_len,
                                snappy_unblock, lz4_unblock)
        estimates = tuple(est.estimation(topic, cid) for cid in range(4)) + ESTIMATION_STEPS
        # The run puts its bytes in the write buffer itself, and takes batches until it is full (at least a chunk
        # of source: a run of dropped batches writes nothing); a dry run has none, the run returns the bytes.
        room = writer.run_room()
        stop = p + (opts.chunk_size if room is None else max(opts.chunk_size, len(room)))
        rest = (end, 0, to_magic, 0, opts.max_message_bytes, writer.size, writer.base, writer.segment_bytes,
                WRAPPER_HEADER[to_magic], limit, self._run_codecs, estimates, _budget.record_chunk(), floor)
        r = _C.downconvert_run(buf, p, stop, *rest, room)
        if room is not None and r is not None and r.position == p and r.wanted:
            room = None  # a first batch larger than the whole room: run again for a chunk, its bytes returned
            r = _C.downconvert_run(buf, p, p + opts.chunk_size, *rest)
        if r is None or r.position == p:
            return None
        if room is not None:
            writer.append_ran(room, r.segment_size - writer.size, r.last_offset)
        else:
            writer.append_run(r.data, r.last_offset)
        batches, records = r.batches, r.records
        stats.batches_in += batches
        dc.batches_in += batches
        dc.records_filtered += r.records_filtered
        dc.headers_dropped += r.headers_dropped
        dc.producer_fields_dropped += r.producer_fields_dropped
        dc.batches_converted += batches
        dc.records_converted += records
        dc.temporary_memory_bytes += r.temporary_memory_bytes
        built = r.uncompressed_messages + r.compressed_batches  # one message per record, one wrapper per batch
        c.records_in += records
        c.records_out += records
        c.batches_out += built
        c.batches_built += built
        c.recompressed_batches += r.compressed_batches
        for cid in range(1, 4):
            if r.estimates_updated & (1 << cid):
                est.ratios[(topic, cid)] = r.estimates[cid]
        return r.position, r.log_end_offset

    def _add(self, batch: RecordBatch, override: Codec | None, records: list[Record] | None, dropped: int,
             source: RecordSource | None) -> Iterable[Unit]:
        opts, c = self.opts, self.c
        limit = opts.decompress_limit
        if type(batch) is DefaultRecordBatch:
            if (not batch.is_control and batch.records_count > _budget.record_chunk()
                    and (override is not None or batch.codec_id != Codec.ZSTD)):
                return self._streamed(batch, source if source is not None else batch.record_source(limit=limit),
                                      opts.to_magic, override, reframed=override is None)
        elif batch.is_compressed and (batch.magic > opts.to_magic or (override is not None
                                                                     and override != batch.codec)
                                      or (dropped and source is not None)):
            # A legacy wrapper converted, re-encoded or rebuilt without its corrupt inner messages: those may be
            # millions, read a chunk at a time (the checked ones when the checks read them).
            if source is None:
                source = RecordSource.of(records) if records is not None else batch.record_source(limit=limit)
            return self._streamed(batch, source, min(batch.magic, opts.to_magic), override, reframed=False)
        res = down_convert_batch(batch, opts.to_magic, 0, self.dc, limit=opts.decompress_limit,
                                 codec_override=override, records=records, rebuild=dropped > 0)
        if res is None:
            if not batch.is_control:
                c.records_in += int(batch.count or 0)
            return []
        max_bytes = opts.max_message_bytes
        if res.copied:
            if len(res.data) > max_bytes:
                raise oversized_copy(batch, max_bytes)
            if res.records is not None:
                n = res.records
            elif records is not None:
                n = len(records)
            elif source is not None:
                n = source.count
            else:
                n = sum(map(len, batch.record_chunks(limit=limit)))
            c.records_in += n
            c.records_out += n
            c.batches_copied += 1
            c.batches_out += 1
            return [(res.data, res.first_offset, res.last_offset, 1)]
        n = res.records or 0
        c.records_in += n
        if res.codec != batch.codec_id:
            c.codec_changed_batches += 1
        if res.codec == Codec.NONE:  # one message per record
            if len(res.data) > max_bytes:
                _check_messages(res.data, max_bytes, batch)
            c.records_out += n
            c.batches_out += n
            c.batches_built += n
            return [(res.data, res.first_offset, res.last_offset, n)]
        if len(res.data) <= max_bytes:
            # MemoryRecordsBuilder.close: the wrapper value over the inner messages; the producer then updates
            # the estimate for (topic, codec), as KIP-126 does after every batch.
            ratio = compressed_payload(res.magic, res.data) / res.uncompressed_bytes
            self.estimator.update_estimation(self.topic, res.codec, ratio)
            c.records_out += n
            c.batches_out += 1
            c.batches_built += 1
            c.recompressed_batches += 1
            return [(res.data, res.first_offset, res.last_offset, 1)]
        ts_type = batch.timestamp_type
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        return self._within_limit(records if records is not None else batch.records(limit=opts.decompress_limit),
                                  res.data, res.uncompressed_bytes,
                                  res.codec, res.magic, ts_type, lat)

    def _streamed(self, batch: RecordBatch, source: RecordSource, magic: int, override: Codec | None, *,
                  reframed: bool) -> Iterator[Unit]:
        """:meth:`_add` for a batch whose records are read a chunk at a time (a v2 batch of more records than a
        run holds, a legacy wrapper converted or re-encoded): the same units and statistics, the messages or
        wrappers built as records come (``kafkatool.record.streamed``) and split by KIP-126 over ranges of the
        source. ``magic``: of the output; ``reframed``: statistics as ``down_convert``'s v2 fast path counts
        them (headers and producer fields dropped)."""
        opts, c, dc = self.opts, self.c, self.dc
        codec = batch.codec if override is None else override
        dc.batches_in += 1
        ts_type = batch.timestamp_type
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        # RecordsUtil.downConvert: an uncompressed v2 source drops the records below the first offset (0 here)
        drop = type(batch) is DefaultRecordBatch and not batch.is_compressed
        max_bytes = opts.max_message_bytes
        n = filtered = with_headers = written = 0
        if codec == Codec.NONE:  # one message per record, written a chunk at a time
            for chunk in source.chunks():
                if drop:
                    kept = [r for r in chunk if r[0] >= 0]
                    filtered += len(chunk) - len(kept)
                    chunk = kept
                if reframed:
                    with_headers += sum(1 for r in chunk if r[4])
                for data, first, last, k in legacy_messages([chunk], magic=magic, timestamp_type=ts_type,
                                                            log_append_time=lat, position=batch.position):
                    if len(data) > max_bytes:
                        _check_messages(data, max_bytes, batch)
                    n += k
                    written += len(data)
                    c.records_out += k
                    c.batches_out += k
                    c.batches_built += k
                    yield data, first, last, k
            dc.records_filtered += filtered
            if not n:
                dc.batches_empty += 1
                c.records_in += int(batch.count or 0)
                return
        else:
            if drop or reframed:
                for chunk in source.chunks():
                    if drop and any(r[0] < 0 for r in chunk):
                        raise CorruptRecordError(
                            f"a batch of {source.count} records has records with negative offsets, which "
                            "down-conversion would drop (Kafka never writes them): not converted",
                            position=batch.position)
                    with_headers += sum(1 for r in chunk if r[4])

            def build(rng: RecordRange) -> Built:
                return legacy_wrapper(source.chunks(position=rng.position, count=rng.count), cap=max_bytes,
                                      magic=magic, codec=codec, timestamp_type=ts_type, log_append_time=lat,
                                      position=batch.position)

            whole = RecordRange(source.start, 0, source.count, 0)
            built = build(whole)
            n = source.count
            written = built.uncompressed + WRAPPER_HEADER[magic]
            stats = SplitStats()
            for b in stream_within_limit(source, replace(whole, uncompressed=built.uncompressed), built,
                                         magic=magic, codec=codec, max_bytes=max_bytes, split_size=max_bytes,
                                         estimator=self.estimator, topic=self.topic, build=build, stats=stats):
                assert b.data is not None
                c.records_out += b.count
                c.batches_out += 1
                c.batches_built += 1
                c.recompressed_batches += 1
                yield b.data, b.first_offset, b.last_offset, 1
            if stats.splits:
                c.splits += stats.splits
                c.split_batches += stats.batches
                c.batches_split += 1
        c.records_in += n
        if codec != batch.codec_id:
            c.codec_changed_batches += 1
        dc.batches_converted += 1
        dc.records_converted += n
        dc.temporary_memory_bytes += batch.size + written
        if reframed:
            dc.headers_dropped += with_headers
            if batch.producer_id >= 0 or batch.is_transactional:
                dc.producer_fields_dropped += 1

    def _group(self, batch: RecordBatch, codec: Codec, records: list[Record] | None) -> list[Unit]:
        """One uncompressed legacy message into the pending group of its magic, timestamp type and time."""
        c = self.c
        (rec,) = records if records is not None else batch.records(limit=self.opts.decompress_limit)
        c.records_in += 1
        c.codec_changed_batches += 1
        ts_type = batch.timestamp_type
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
        ts = lat if ts_type == TimestampType.LOG_APPEND_TIME else rec.timestamp
        if batch.magic >= 1 and ts < NO_TIMESTAMP:
            # MemoryRecordsBuilder.appendWithOffset refuses it: no wrapper can hold the message (found by fuzzing)
            raise InvalidRecordError(f"message at offset {rec.offset} has timestamp {ts}: below -1, which message "
                                     f"format v{batch.magic} cannot hold (Kafka: Invalid negative timestamp)",
                                     position=batch.position)
        key = (batch.magic, codec, ts_type, lat)
        size = legacy_entry_size(batch.magic, rec.key, rec.value)
        units: list[Unit] = []
        # A wrapper more than an int32 of offsets long fits no segment (its last offset is indexed relative to a
        # base at or below its first; UnifiedLog.maybeRoll assumes no batch spans more): start another one.
        if self._pending and (key != self._pending_key or rec.offset - self._pending[0].offset > INT32_MAX
                              or self._planner is None or not self._planner.has_room_for(size)):
            units = self.flush()
        if not self._pending:
            self._pending_key = key
            self._planner = BatchPlanner(batch.magic, codec, self.opts.batch_bytes,
                                         self.estimator.estimation(self.topic, codec))
        assert self._planner is not None
        self._planner.append(size)
        self._pending.append(rec)
        if self.opts.batch_bytes <= 0:
            units.extend(self.flush())
        return units

    def flush(self) -> list[Unit]:
        """Complete the pending group of uncompressed legacy messages (at a segment end, or before other data)."""
        if not self._pending:
            return []
        recs, self._pending = self._pending, []
        assert self._pending_key is not None
        magic, codec, ts_type, lat = self._pending_key
        self._planner = None
        data = build_entries([(r.offset, r.timestamp, r.key, r.value) for r in recs], magic=magic, codec=codec,
                             timestamp_type=ts_type, log_append_time=lat)
        uncompressed = sum(legacy_entry_size(magic, r.key, r.value) for r in recs)
        return self._within_limit(recs, data, uncompressed, codec, magic, ts_type, lat)

    def _within_limit(self, records: list[Record], data: bytes, uncompressed: int, codec: Codec, magic: int,
                      ts_type: TimestampType, lat: int) -> list[Unit]:
        """KIP-126 for one built wrapper: kept when it fits ``max_message_bytes``, else split and rebuilt."""
        opts, c = self.opts, self.c

        def build(recs: list[Any]) -> bytes:
            return build_entries([(r.offset, r.timestamp, r.key, r.value) for r in recs], magic=magic,
                                 codec=codec, timestamp_type=ts_type, log_append_time=lat)

        result = build_within_limit(records, data, uncompressed, magic=magic, codec=codec,
                                    max_bytes=opts.max_message_bytes, split_size=opts.max_message_bytes,
                                    estimator=self.estimator, topic=self.topic, build=build,
                                    describe_offset=lambda r: str(r[0]))
        c.splits += result.splits
        if result.splits:
            c.split_batches += len(result.batches)
            c.batches_split += 1
        units: list[Unit] = []
        for built, recs in result.batches:
            units.append((built, recs[0].offset, recs[-1].offset, 1))
            c.records_out += len(recs)
            c.batches_out += 1
            c.batches_built += 1
            c.recompressed_batches += 1
        return units


def _check_messages(data: bytes, max_bytes: int, batch: RecordBatch) -> None:
    p = 0
    while p < len(data):
        offset, size = LOG_HEADER.unpack_from(data, p)
        if size + LOG_OVERHEAD > max_bytes:
            raise LimitExceededError(
                f"record at offset {offset} becomes a {size + LOG_OVERHEAD}-byte message, more than max.message.bytes "
                f"{max_bytes} (Kafka: RecordTooLargeException); raise the limit to convert it",
                position=batch.position, field="max_message_bytes")
        p += size + LOG_OVERHEAD


_CLEAR_REFS = "/proc/self/clear_refs"
_STATUS = "/proc/self/status"


def reset_peak_rss() -> bool:
    """Start a new peak-RSS measurement: Linux resets the process's high-water mark (``VmHWM``) to its
    current RSS when ``5`` is written to ``/proc/self/clear_refs``. False where that is not possible."""
    try:
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")
        return _vm_hwm() is not None
    except OSError:
        return False


def _vm_hwm() -> int | None:
    try:
        with open(_STATUS) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss(since_reset: bool) -> int:
    """Peak RSS in bytes: ``VmHWM`` since the last :func:`reset_peak_rss` when it succeeded, else the process's
    peak so far (``getrusage`` ``ru_maxrss``, which nothing can reset)."""
    if since_reset:
        hwm = _vm_hwm()
        if hwm is not None:
            return hwm
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def convert_log(src: str | os.PathLike[str], dst: str | os.PathLike[str], opts: ConvertOptions,
                observer: ConvertObserver | None = None, *, resume: bool = False) -> list[PartitionStats]:
    """Convert every partition under ``src`` (a segment, a partition dir or a log dir) into ``dst``; with ``resume``,
    only those an interrupted run over ``dst`` did not complete (:mod:`kafkatool.convert.destination`)."""
    opts.validate()
    obs = observer or ConvertObserver()
    src_p, dst_p = Path(src), Path(dst)
    skipped: list[str] = []
    # Internal topics are the brokers' own: never down-converted from a whole log dir (name one to convert it).
    sources = resolve_sources(src_p, skip_internal=not opts.up, skipped=skipped)
    if skipped:
        obs.warning(f"skipped {len(skipped)} partitions of internal topics ({', '.join(skipped)}): a broker's own "
                    "data; give a partition dir to convert one anyway")
    dest = check_destination(src_p, dst_p, [s.name for s in sources], opts.shaping(), resume=resume)
    if dest.done:
        obs.note(f"resuming: {len(dest.done)} of {len(sources)} partition(s) already complete in {dst_p}"
                 + (" (the run had finished)" if dest.complete else ""))
    sources = [s for s in sources if s.name not in dest.done]
    obs.start(sources, sum(s.total_bytes() for s in sources))
    if opts.dry_run:
        return _convert_all(sources, dest, opts, obs)
    with hold_for_write(dst_p):
        return _convert_all(sources, dest, opts, obs)


def _convert_all(sources: list[PartitionSource], dest: Destination, opts: ConvertOptions,
                 obs: ConvertObserver) -> list[PartitionStats]:
    dst_p = dest.path
    made = DirMaker()
    fresh = not dest.done and not dest.complete
    if not opts.dry_run and not dst_p.exists():
        made.makedirs(dst_p)
        fsync_dir(dst_p.absolute().parent)
    estimator = CompressionRatioEstimator()
    results: list[PartitionStats] = []
    written: list[Path] = []
    try:
        if not opts.dry_run:
            begin(dest)
        for source in sources:
            stats = convert_partition(source, None if opts.dry_run else dst_p, opts, estimator, obs)
            if stats.output:
                written.append(Path(stats.output))
            results.append(stats)
            obs.partition_done(stats)
        if not opts.dry_run and not dest.complete:
            finish(dest)
    except BaseException:
        for d in written:
            shutil.rmtree(d, ignore_errors=True)
        if made.made:
            made.remove()
        elif fresh and not opts.dry_run:
            undo_begin(dest)
        raise
    return results


def convert_partition(source: PartitionSource, dst_root: Path | None, opts: ConvertOptions,
                      estimator: CompressionRatioEstimator, obs: ConvertObserver) -> PartitionStats:
    t0 = time.perf_counter()
    stats = PartitionStats(source.name, str(source.origin), None, opts.to_magic)
    own_peak = reset_peak_rss()
    tmp: Path | None = None
    if dst_root is not None:
        tmp = dst_root / temp_name(source.name)
        tmp.mkdir()
    try:
        _convert_into(source, tmp, opts, estimator, obs, stats)
        if tmp is not None and dst_root is not None:
            fsync_dir(tmp)
            final = dst_root / source.name
            os.rename(tmp, final)
            fsync_dir(dst_root)
            crash.point()
            stats.output = str(final)
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    stats.elapsed_s = time.perf_counter() - t0
    stats.peak_rss_bytes = peak_rss(own_peak)
    stats.peak_rss_scope = "partition" if own_peak else "process"
    return stats


def _convert_into(source: PartitionSource, tmp: Path | None, opts: ConvertOptions,
                  estimator: CompressionRatioEstimator, obs: ConvertObserver, stats: PartitionStats) -> None:
    c = stats.counters
    conv: UpConverter | DownConverter
    if opts.up:
        conv = UpConverter(codec=opts.codec, batch_bytes=opts.batch_bytes, max_message_bytes=opts.max_message_bytes,
                           estimator=estimator, topic=source.topic, counters=c, limit=opts.decompress_limit)
    else:
        conv = DownConverter(opts, estimator, source.topic, c)
    writer = SegmentWriter(tmp, opts.segment_bytes, opts.index_interval_bytes)
    checker = SourceChecker(skip_corrupt=opts.skip_corrupt, limit=opts.decompress_limit, skipped=stats.corrupt)
    try:
        log_end = -1
        for i, seg in enumerate(source.segments):
            stats.segments_in += 1
            writer.begin_source_segment(seg.base_offset)
            log_end = max(log_end, seg.base_offset)
            with FileRecords(seg.log, reads_all=True) as fr:  # every byte is converted
                stats.bytes_in += fr.size
                checker.begin_segment(fr.path, seg.base_offset)
                stream = fr.batches()
                # The compiled run checks, converts and writes the common batches (v2 keeping its codec) many at a
                # time; the loop below checks and converts every other one, and each batch where a run stops.
                run = conv.run if isinstance(conv, DownConverter) and conv.can_run else None
                done = 0  # bytes converted since the last progress report (one per chunk_size of source)
                try:
                    for batch in source_batches(fr, stats.skipped, last=i == len(source.segments) - 1, stream=stream):
                        pos = batch.position
                        r = run(fr.buf, pos, stream.end, writer, stats, checker.floor) if run is not None else None
                        if r is not None:
                            q, end_offset = r
                            log_end = max(log_end, end_offset)
                            checker.ran_to(end_offset - 1)
                            stream.jump(q)
                            done += q - pos
                        else:
                            stats.batches_in += 1
                            done += batch.size
                            verified = checker.check(batch)
                            if verified is None:
                                continue  # left out (skip_corrupt), counted
                            log_end = max(log_end, batch.last_offset + 1)
                            for unit in conv.add(batch, verified.records, verified.dropped, verified.source):
                                writer.append(unit)
                        if done >= opts.chunk_size:
                            obs.advance(done, source.name)
                            done = 0
                    if done:
                        obs.advance(done, source.name)
                    for unit in conv.flush():
                        writer.append(unit)
                except KafkaToolError as e:
                    raise e.at(fr.path) from None  # errors of records and batches name the segment they are in
            txn = []
            if opts.up and seg.has(TXN_INDEX_SUFFIX):
                txn = read_txn_index(seg.txn_index)
            elif seg.has(TXN_INDEX_SUFFIX):
                stats.files_dropped.append(seg.txn_index.name)
            writer.end_source_segment(txn)
        writer.finish(log_end)
    except BaseException:
        writer.abort()  # its file closed now, not when collected (the caller removes the staging dir)
        raise
    stats.log_end_offset_in = log_end
    stats.log_end_offset_out = writer.log_end_offset
    if writer.tail_segment is not None:
        stats.warn(f"dropped batches at the end lowered the log end offset: empty segment "
                   f"{writer.tail_segment:020d}.log keeps it at {log_end}")
    _warn_left_out(stats)
    stats.segments_out = writer.segments
    stats.bytes_out = writer.bytes_written
    dc = getattr(conv, "dc", None)
    if isinstance(dc, DownConverted):
        stats.control_batches_dropped = dc.control_batches_dropped
        stats.empty_batches_dropped = dc.batches_empty
        stats.headers_dropped = dc.headers_dropped
        stats.producer_fields_dropped = dc.producer_fields_dropped
        if dc.control_batches_dropped:  # what old consumers now read of aborted transactions
            from kafkatool.convert.visibility import transaction_outcomes

            note = transaction_outcomes((seg.log for seg in source.segments), opts.decompress_limit).warning()
            if note is not None:
                stats.warn(note)
    _carry_files(source, tmp, opts, stats)


def _warn_left_out(stats: PartitionStats, listed: int = 20) -> None:
    """One warning per corrupt batch or record left out (skip_corrupt), the first ``listed`` of them."""
    c = stats.corrupt
    for f in c.findings[:listed]:
        at = f" at byte {f['position']}" if f["position"] is not None else ""
        off = f"offset {f['offset']}: " if f["offset"] is not None else ""
        stats.warn(f"left out (corrupt, {f['kind']}): {shown(f['path'])}{at}: {off}{f['message']}")
    if c.count > listed:
        stats.warn(f"... and {c.count - listed} more left out: {c.batches} batches and {c.records} records in all")


def _carry_files(source: PartitionSource, tmp: Path | None, opts: ConvertOptions, stats: PartitionStats) -> None:
    """Partition metadata files: copied byte for byte (offsets are preserved, so they stay true)."""
    carry = [p for p in source.metadata_files() if p.is_file()]
    if opts.up:
        carry += source.snapshots
    else:
        stats.files_dropped += [p.name for p in source.snapshots]
    for p in carry:
        stats.files_carried.append(p.name)
        if tmp is not None:
            _copy_fsync(p, tmp / p.name)
    for p in source.unknown_files:
        stats.warn(f"not carried over (not a file kafkatool knows): {shown(p.name)}")
    if source.pending:
        stats.warn("the source has unfinished cleaner/split files (" + ", ".join(p.name for p in source.pending)
                   + "): they are not converted; start and stop the broker once to complete them first")


def _copy_fsync(src: Path, dst: Path) -> None:
    with open_regular(src) as r, open(r.fd, "rb", closefd=False) as fi, open(dst, "xb") as fo:
        copy_sparse(fi, fo, r.size)  # holes kept; bounded by the size at open
        fo.flush()
        os.fsync(fo.fileno())
    crash.point()

