"""Simulate an old-format fetch against a log on disk: exactly the bytes a Kafka 3.9 broker would send.

The broker's path, reproduced step by step (3.9 sources; spec §5.1-§5.3):

1. ``ReplicaManager.readFromLog``: partitions in request order; each reads at most
   ``min(partition max bytes, bytes left of the response limit)``; ``minOneMessage`` starts as
   ``!hardMaxBytesLimit`` (true only for Fetch v3+) and turns false after the first partition that
   returned bytes; the limit shrinks by each *unconverted* slice size.
2. ``UnifiedLog.read`` / ``LocalLog.read``: fetch offset outside [log start, log end] ->
   ``OFFSET_OUT_OF_RANGE``; at or past the high watermark -> empty. Otherwise start in the segment
   with the greatest base offset <= the fetch offset and move to the next segment while nothing is
   found. ``LogSegment.read``: ``translateOffset`` = offset-index lookup, then
   ``FileRecords.searchForOffsetWithSize`` walks from that position to the first batch whose *last*
   offset is >= the fetch offset; with minOneMessage the size grows to that batch's size; the slice
   ends at ``min(max position, start + size)`` (max position = the segment's size, or the high
   watermark's position in its segment).
3. ``KafkaApis.maybeConvertFetchedData``: Fetch v0-1 -> magic 0, v2-3 -> magic 1; the slice becomes
   ``LazyDownConversionRecords`` (:mod:`kafkatool.fetch.lazy`); its constructor's
   ``UnsupportedCompressionTypeException`` -> ``UNSUPPORTED_COMPRESSION_TYPE`` with null records. The broker
   decides by the magic it takes the log to hold, not by the batches: 2 from ``inter.broker.protocol.version``
   3.0 on (KRaft, and 3.x's default), else the topic's ``message.format.version`` (``log_magic``). When the
   fetch version reads that magic, the slice is sent as it is (``FileRecords``): no conversion, no padding.
4. The response (:mod:`kafkatool.fetch.response`) is sized with each partition's committed size before
   any conversion, then streamed: nothing converted is ever held beyond one chunk.

Not modelled: quotas and throttling, fetch sessions (v7+), a topic whose ``compression.type`` is zstd
(KafkaApis refuses it for Fetch < v10 before reading) and ``message.downconversion.enable=false``
(``UNSUPPORTED_VERSION``): neither setting is stored in the log dir.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kafkatool.constants import DOWN_CONVERSION_READ_SIZE, INT32_MAX, INT64_MAX
from kafkatool.errors import CorruptDataError, InputError, KafkaToolError, UsageError
from kafkatool.fetch.consumer_view import ConsumerResult, ConsumerView
from kafkatool.fetch.lazy import LazyDownConversionRecords, SendStats
from kafkatool.fetch.response import (
    CORRUPT_MESSAGE,
    INVALID_HIGH_WATERMARK,
    NONE,
    OFFSET_OUT_OF_RANGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    PartitionHeader,
    check_version,
    framing,
)
from kafkatool.log.index import lookup_offset_file
from kafkatool.log.layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    IrregularFile,
    PartitionDir,
    PartitionSelection,
    TopicPartition,
    irregular_siblings,
    parse_partition_dir_name,
    resolve_inputs,
)
from kafkatool.record.batch import Record
from kafkatool.record.down_convert import ZstdDownConversionError
from kafkatool.record.file_records import FileRecords
from kafkatool.util.printable import shown

DEFAULT_PARTITION_MAX_BYTES = 1024 * 1024  # consumer max.partition.fetch.bytes
DEFAULT_FETCH_MAX_BYTES = 50 * 1024 * 1024  # consumer fetch.max.bytes (the request's max_bytes, Fetch v3+)
DEFAULT_BROKER_FETCH_MAX_BYTES = 55 * 1024 * 1024  # broker fetch.max.bytes (ServerConfigs, 3.9)


def to_magic_for_version(fetch_version: int) -> int:
    """``KafkaApis``: Fetch v0-1 read magic 0, v2-3 read magic 1."""
    check_version(fetch_version)
    return 0 if fetch_version <= 1 else 1


def version_for_magic(to_magic: int) -> int:
    """The newest fetch version that down-converts to ``to_magic`` (used when only the magic is given)."""
    if to_magic not in (0, 1):
        raise UsageError(f"must be 0 or 1, not {to_magic}", field="to_magic")
    return 1 if to_magic == 0 else 3


# ---------------------------------------------------------------------------------------------- the log


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    base_offset: int
    log: Path
    index: Path | None  # missing index: the lookup starts at position 0


@dataclass(slots=True)
class PartitionLog:
    """One partition's segments, in offset order (a partition dir, or a single ``.log`` file)."""

    topic_partition: TopicPartition
    path: Path
    segments: list[SegmentFiles]

    @property
    def log_start_offset(self) -> int:
        # The log-start-offset-checkpoint can lie above the first segment after DeleteRecords; it is not read.
        return self.segments[0].base_offset if self.segments else 0

    @classmethod
    def from_partition_dir(cls, pd: PartitionDir) -> PartitionLog:
        segs = [SegmentFiles(s.base_offset, s.log, s.index if s.has(INDEX_SUFFIX) else None) for s in pd.segments]
        tp = pd.topic_partition or TopicPartition(pd.path.name, 0)
        return cls(tp, pd.path, segs)

    @classmethod
    def from_file(cls, path: Path, topic_partition: TopicPartition | None = None) -> PartitionLog:
        name = path.name
        base = 0
        index: Path | None = None
        prefix = name.split(".", 1)[0]
        if name.endswith(LOG_SUFFIX) and prefix.isdigit() and len(prefix) == 20:
            base = int(prefix)
            idx = path.with_name(prefix + INDEX_SUFFIX)
            index = idx if idx.is_file() else None  # not a regular file: as missing (``not_regular`` says so)
        if topic_partition is None:
            parsed = parse_partition_dir_name(path.resolve().parent.name)
            topic_partition = parsed[0] if parsed else TopicPartition("topic", 0)
        return cls(topic_partition, path, [SegmentFiles(base, path, index)])


def partition_logs(paths: Sequence[str | os.PathLike[str]], *, topic_partition: TopicPartition | None = None,
                   selection: PartitionSelection | None = None,
                   not_regular: list[IrregularFile] | None = None) -> list[PartitionLog]:
    """PATH arguments -> partitions, in the order given (log dirs expand to their partitions, sorted); with a
    ``selection``, only the partition dirs it selects (a bare file is named by ``topic_partition``). The files
    of the dirs walked (and a named segment's ``.index``) that are not regular files are never read: they go
    into ``not_regular``, each a finding."""
    sel = selection or PartitionSelection()
    out: list[PartitionLog] = []
    for raw in paths:
        inputs = resolve_inputs([raw])
        for f in inputs.files:
            out.append(PartitionLog.from_file(f, topic_partition))
            if not_regular is not None:
                not_regular.extend(irregular_siblings(f))
        for pd in sel.select(inputs.all_partitions()):
            out.append(PartitionLog.from_partition_dir(pd))
        if not_regular is not None:
            not_regular.extend(inputs.not_regular())
    if not out:
        raise InputError("no partition found in the given paths" + ("" if sel.everything else
                                                                    " (none of the topics and partitions asked for)"))
    return out


@dataclass(frozen=True, slots=True)
class LogOffsetPosition:
    """``FileRecords.LogOffsetPosition``: the found batch's last offset, position and size."""

    offset: int
    position: int
    size: int


def search_for_offset_with_size(records: FileRecords, target: int, start: int) -> LogOffsetPosition | None:
    """``FileRecords.searchForOffsetWithSize``: the first batch from ``start`` whose last offset >= target."""
    for batch in records.batches(start):
        last = batch.last_offset
        if last >= target:
            return LogOffsetPosition(last, batch.position, batch.size)
    return None


def _index_position(seg: SegmentFiles, target: int) -> int:
    """``OffsetIndex.lookup(target).position`` (0 without an index file)."""
    if seg.index is None:
        return 0
    entry = lookup_offset_file(seg.index, target, seg.base_offset)
    if entry.position < 0:
        raise CorruptDataError(f"the offset index entry for offset {entry.offset} points at position "
                               f"{entry.position}: a corrupt .index (kafkatool reindex-time rebuilds it)",
                               path=seg.index)
    return entry.position


def translate_offset(records: FileRecords, seg: SegmentFiles, target: int) -> LogOffsetPosition | None:
    """``LogSegment.translateOffset``: index lookup, then the walk from there."""
    return search_for_offset_with_size(records, target, _index_position(seg, target))


@dataclass(frozen=True, slots=True)
class LogEnd:
    offset: int  # log end offset (LEO): last batch's last offset + 1
    segment: int  # index of the active (last) segment
    position: int  # the active segment's size: where nextOffsetMetadata points
    last_batch: int | None = None  # the position of the batch the LEO comes from (None: the segment's base offset)


def log_end(log: PartitionLog) -> LogEnd:
    """``LogSegment.readNextOffset`` of the last segment: the last batch's last offset + 1 (or its base offset).
    A last offset of 2^63-1 (or past it) leaves no next offset: Kafka never assigns one, and this is a finding."""
    if not log.segments:
        return LogEnd(0, -1, 0)
    seg = log.segments[-1]
    with FileRecords(seg.log) as fr:
        leo = seg.base_offset
        last_batch = None
        start = _index_position(seg, INT64_MAX)
        for _ in range(2):
            for batch in fr.batches(start):
                leo = batch.last_offset + 1
                last_batch = batch.position
            if leo != seg.base_offset or start == 0:
                break
            start = 0  # an index pointing past the data: walk the whole segment
        fr.drop_before(fr.size)
        if leo > INT64_MAX:
            raise CorruptDataError(f"the last batch ends at offset {leo - 1}, so the log end offset (its last offset + "
                                   "1) does not fit an int64: Kafka never assigns such an offset",
                                   path=seg.log, position=last_batch)
        return LogEnd(leo, len(log.segments) - 1, fr.size, last_batch)


# ---------------------------------------------------------------------------------------------- reading


@dataclass(slots=True)
class ReadResult:
    """``LogReadResult``/``FetchDataInfo`` for one partition: where the slice is, or why there is none."""

    error_code: int = NONE
    error: str | None = None
    high_watermark: int = INVALID_HIGH_WATERMARK
    log_start_offset: int = 0
    log_end_offset: int = 0
    segment: SegmentFiles | None = None
    position: int = 0
    size: int = 0  # FileRecords.slice size: what readFromLog subtracts from the response limit
    first_batch: LogOffsetPosition | None = None
    max_bytes: int = 0  # the partition's read limit: min(partition max bytes, response bytes left)
    min_one_message: bool = False
    first_batch_too_large: bool = False  # FetchDataInfo.firstEntryIncomplete


def read_partition(log: PartitionLog, fetch_offset: int, max_bytes: int, min_one_message: bool, *,
                   high_watermark: int | None = None, position: int | None = None) -> ReadResult:
    """``UnifiedLog.read`` for a consumer (isolation HIGH_WATERMARK), offline: the high watermark defaults
    to the log end offset."""
    end = log_end(log)
    hw = end.offset if high_watermark is None else high_watermark
    r = ReadResult(high_watermark=hw, log_start_offset=log.log_start_offset, log_end_offset=end.offset,
                   max_bytes=max_bytes, min_one_message=min_one_message)
    if end.offset < log.log_start_offset:
        # The data, not an option: the last segment's batches end below the first segment's name.
        seg = log.segments[-1]
        raise CorruptDataError(
            f"the log end offset {end.offset} (after the last batch of {seg.log.name}) is below the log start offset "
            f"{log.log_start_offset} (the first segment's base offset): the segment's batches lie below its name "
            "(or what it holds are not batches); the broker's recovery would split or truncate it",
            path=seg.log, position=end.last_batch)
    if hw > end.offset or hw < log.log_start_offset:
        raise UsageError(f"{hw} is outside the log [{log.log_start_offset}, {end.offset}]", field="high_watermark")
    if fetch_offset < log.log_start_offset or fetch_offset > end.offset:
        r.error_code = OFFSET_OUT_OF_RANGE
        r.error = (f"OffsetOutOfRangeException: Received request for offset {fetch_offset} for partition "
                   f"{shown(str(log.topic_partition))}, but we only have log segments in the range "
                   f"{log.log_start_offset} to {end.offset}.")
        r.high_watermark = INVALID_HIGH_WATERMARK
        return r
    if fetch_offset >= hw:
        return r  # LocalLog.read: at or beyond the max offset -> empty records
    hw_segment, hw_position = _offset_position(log, hw, end)
    idx = max(i for i, s in enumerate(log.segments) if s.base_offset <= fetch_offset)
    while idx < len(log.segments):
        seg = log.segments[idx]
        with FileRecords(seg.log) as fr:
            try:
                if position is not None:
                    if position > fr.size:
                        raise UsageError(f"{position} is past the end of {shown(seg.log)} ({fr.size} bytes)",
                                         field="position")
                    found: LogOffsetPosition | None = LogOffsetPosition(fetch_offset, position, 0)
                else:
                    found = translate_offset(fr, seg, fetch_offset)
            except CorruptDataError as e:
                # readFromLog turns the reader's CorruptRecordException into the partition's CORRUPT_MESSAGE.
                r.error_code, r.error, r.high_watermark = CORRUPT_MESSAGE, str(e.at(seg.log)), INVALID_HIGH_WATERMARK
                return r
            if found is None:
                idx += 1
                continue
            r.segment = seg
            r.position = found.position
            r.first_batch = found if position is None else None
            # LogSegment.read: maxPosition is the segment size before the high watermark's segment, the high
            # watermark's position in it, and nothing after it.
            if idx > hw_segment:
                return r
            max_position = fr.size if idx < hw_segment else hw_position
            adjusted = max(max_bytes, found.size) if (min_one_message and position is None) else max_bytes
            r.first_batch_too_large = position is None and adjusted < found.size
            if adjusted == 0:
                return r
            r.size = max(0, min(max_position - found.position, adjusted, fr.size - found.position))
            return r
    return r


def _offset_position(log: PartitionLog, offset: int, end: LogEnd) -> tuple[int, int]:
    """``convertToOffsetMetadataOrThrow``: (segment index, position) of the batch holding ``offset``."""
    if offset >= end.offset:
        return end.segment, end.position
    idx = max(i for i, s in enumerate(log.segments) if s.base_offset <= offset)
    while idx < len(log.segments):
        seg = log.segments[idx]
        with FileRecords(seg.log) as fr:
            found = translate_offset(fr, seg, offset)
        if found is not None:
            return idx, found.position
        idx += 1
    return end.segment, end.position


# ---------------------------------------------------------------------------------------------- the fetch


@dataclass(frozen=True, slots=True)
class FetchOptions:
    fetch_version: int = 3
    partition_max_bytes: int = DEFAULT_PARTITION_MAX_BYTES
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES  # the request's max_bytes: only Fetch v3+ carries it
    broker_fetch_max_bytes: int = DEFAULT_BROKER_FETCH_MAX_BYTES
    min_one_message: bool | None = None  # None: as the broker derives it (Fetch v3+ only)
    chunk_size: int = DOWN_CONVERSION_READ_SIZE  # Kafka's MAX_READ_SIZE: chunk grouping *and* overflow buffer size
    correlation_id: int = 0
    throttle_time_ms: int = 0
    decompress_limit: int | None = None
    trace_memory: bool = False  # measure each conversion's peak heap with tracemalloc (slow)
    # The magic the broker takes the log to hold (maybeConvertFetchedData): 2 from IBP 3.0 on; below it (a ZooKeeper
    # broker at an older inter.broker.protocol.version) the topic's message.format.version: 0.9.0 -> 0, 0.10.x -> 1.
    log_magic: int = 2

    def __post_init__(self) -> None:
        if self.log_magic not in (0, 1, 2):
            raise UsageError(f"must be 0, 1 or 2, not {self.log_magic}", field="log_magic")

    @property
    def converts(self) -> bool:
        """Whether the broker down-converts: the log's magic is above what the fetch version reads."""
        return self.log_magic > self.to_magic

    @property
    def to_magic(self) -> int:
        return to_magic_for_version(self.fetch_version)

    @property
    def response_max_bytes(self) -> int:
        """``KafkaApis``: min(request max_bytes, broker fetch.max.bytes); v0-2 requests mean Int.MaxValue."""
        request = self.fetch_max_bytes if self.fetch_version >= 3 else INT32_MAX
        return min(request, self.broker_fetch_max_bytes)

    @property
    def initial_min_one_message(self) -> bool:
        """``readFromLog``: ``minOneMessage = !params.hardMaxBytesLimit`` (hard limit for Fetch v0-2)."""
        return self.fetch_version >= 3 if self.min_one_message is None else self.min_one_message


@dataclass(slots=True)
class PartitionRequest:
    log: PartitionLog
    fetch_offset: int
    position: int | None = None  # start here instead of searching (as kafka-ref lazysend can)
    high_watermark: int | None = None


@dataclass(slots=True)
class PartitionFetch:
    """One partition of the simulated response: the read, the committed size, then what the send did."""

    request: PartitionRequest
    read: ReadResult
    error_code: int
    error: str | None
    high_watermark: int
    committed_size: int  # the records size in the response (-1: null records)
    lazy: LazyDownConversionRecords | None = None
    records: FileRecords | None = None
    stats: SendStats = field(default_factory=SendStats)
    consumer: ConsumerResult | None = None

    @property
    def header(self) -> PartitionHeader:
        tp = self.request.log.topic_partition
        return PartitionHeader(tp.topic, tp.partition, self.error_code, self.high_watermark, self.committed_size)

    def close(self) -> None:
        if self.records is not None:
            self.records.close()
            self.records = None


def plan_fetch(options: FetchOptions, requests: Sequence[PartitionRequest]) -> list[PartitionFetch]:
    """Read every partition and fix its committed size, as the broker does before the response is sized."""
    limit_bytes = options.response_max_bytes
    min_one = options.initial_min_one_message
    plans: list[PartitionFetch] = []
    try:
        for req in requests:
            read = read_partition(req.log, req.fetch_offset, min(options.partition_max_bytes, limit_bytes), min_one,
                                  high_watermark=req.high_watermark, position=req.position)
            if read.size > 0:
                min_one = False  # "Once we read from a non-empty partition, we stop ignoring request limits"
            limit_bytes = max(0, limit_bytes - read.size)
            plans.append(_convertible(options, req, read))
    except BaseException:
        for p in plans:
            p.close()
        raise
    return plans


def _convertible(options: FetchOptions, req: PartitionRequest, read: ReadResult) -> PartitionFetch:
    """``maybeConvertFetchedData``: wrap the slice (even an empty one) in LazyDownConversionRecords, or send it as
    it is when the broker does not convert."""
    if read.segment is None or read.size == 0:
        return PartitionFetch(req, read, read.error_code, read.error, read.high_watermark, 0)
    fr = FileRecords(read.segment.log)
    if not options.converts:
        return PartitionFetch(req, read, read.error_code, read.error, read.high_watermark, read.size, None, fr)
    try:
        lazy = LazyDownConversionRecords(fr, read.position, read.size, options.to_magic, req.fetch_offset,
                                         max_read_size=options.chunk_size, limit=options.decompress_limit,
                                         trace_memory=options.trace_memory)
    except ZstdDownConversionError as e:
        fr.close()
        return PartitionFetch(req, read, UNSUPPORTED_COMPRESSION_TYPE,
                              f"UnsupportedCompressionTypeException: {e.message}", INVALID_HIGH_WATERMARK, -1)
    except KafkaToolError as e:
        fr.close()
        raise e.at(read.segment.log) from None
    if lazy.size_in_bytes == 0:
        fr.close()
        return PartitionFetch(req, read, read.error_code, read.error, read.high_watermark, 0, lazy)
    return PartitionFetch(req, read, read.error_code, read.error, read.high_watermark, lazy.size_in_bytes, lazy, fr)


RecordCallback = Callable[[PartitionFetch, Record], None]


def send_partition(plan: PartitionFetch, options: FetchOptions, write: Callable[[bytes], object] | None, *,
                   analyse: bool = True, on_record: RecordCallback | None = None) -> None:
    """Run one partition's send, streaming each piece to ``write``, and analyse it as the consumer would."""
    view = None
    if analyse:
        cb = (lambda rec: on_record(plan, rec)) if on_record is not None else None
        view = ConsumerView(max(0, plan.committed_size), plan.request.fetch_offset, options.fetch_version, cb)
    try:
        if plan.lazy is not None and plan.committed_size > 0:
            # the view takes the wrappers' inner message sets from the conversion that compressed them; with a
            # record callback it parses every record in Python, decompressing (and needs none of them)
            plan.lazy.keep_inners = view is not None and on_record is None
            try:
                for piece in plan.lazy.send():
                    if write is not None:
                        write(piece.data)
                    if view is not None:
                        view.feed(piece.data, piece.inners)
            except KafkaToolError as e:
                # Anything else the conversion throws fails the send too: the broker closes the connection.
                where = plan.read.segment.log if plan.read.segment else None
                plan.lazy.stats.send_error = f"{type(e).__name__}: {e.at(where)}"
            plan.stats = plan.lazy.stats
        else:
            plan.stats = SendStats(committed_size=max(0, plan.committed_size))
            if plan.records is not None and plan.committed_size > 0:  # the slice as it is (FileRecords.writeTo)
                for at in range(0, plan.committed_size, options.chunk_size):
                    data = plan.records.read(plan.read.position + at, min(options.chunk_size,
                                                                          plan.committed_size - at))
                    if write is not None:
                        write(data)
                    if view is not None:
                        view.feed(data)
                plan.stats.bytes_written = plan.committed_size
        if view is not None:
            plan.consumer = view.finish()
    finally:
        plan.close()


def simulate(options: FetchOptions, requests: Sequence[PartitionRequest], out: BinaryIO | None = None, *,
             raw: bool = False, analyse: bool = True, on_record: RecordCallback | None = None,
             on_plan: Callable[[list[PartitionFetch]], None] | None = None) -> list[PartitionFetch]:
    """Simulate one fetch. ``out`` gets the whole FetchResponse (size prefix included), or with ``raw``
    the partition's record bytes only (one partition)."""
    if raw and len(requests) != 1:
        raise UsageError("writes one partition's record bytes: give exactly one partition", field="raw")
    plans = plan_fetch(options, requests)
    try:
        if on_plan is not None:
            on_plan(plans)
        write = out.write if out is not None else None
        if raw:
            send_partition(plans[0], options, write, analyse=analyse, on_record=on_record)
            return plans
        failed = False
        sent = set()
        for item in framing(options.fetch_version, options.correlation_id, options.throttle_time_ms,
                            [p.header for p in plans]):
            if failed:
                break
            if isinstance(item, int):
                send_partition(plans[item], options, write, analyse=analyse, on_record=on_record)
                sent.add(item)
                failed = plans[item].stats.send_error is not None  # the connection is gone
            elif write is not None:
                write(item)
        for i, plan in enumerate(plans):
            if i not in sent and not failed:  # no record bytes on the wire (empty or null records)
                send_partition(plan, options, None, analyse=analyse)
        return plans
    finally:
        for p in plans:
            p.close()


def iter_fetch_offsets(spec: Sequence[str], logs: Sequence[PartitionLog]) -> Iterator[int | None]:
    """Fetch offsets as given: one for all partitions, one per partition in order, or ``topic-N=OFFSET``."""
    named: dict[str, int] = {}
    plain: list[int] = []
    for item in spec:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if "=" in part:
                name, value = part.rsplit("=", 1)
                named[name.strip()] = _offset(value)
            else:
                plain.append(_offset(part))
    if len(plain) > 1 and len(plain) != len(logs):
        raise UsageError(f"{len(plain)} fetch offsets for {len(logs)} partitions: give one, or one per partition",
                         field="fetch_offset")
    unknown = set(named) - {str(log.topic_partition) for log in logs}
    if unknown:
        raise UsageError(f"names unknown partitions: {', '.join(sorted(unknown))}", field="fetch_offset")
    for i, log in enumerate(logs):
        name = str(log.topic_partition)
        if name in named:
            yield named[name]
        elif len(plain) == 1:
            yield plain[0]
        elif plain:
            yield plain[i]
        else:
            yield None  # the log start offset


def _offset(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"not an offset: {text!r}", field="fetch_offset") from None
