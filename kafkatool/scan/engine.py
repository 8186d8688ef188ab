"""The per-range scan behind ``spark-scan``, its mergeable statistics, and the single-process engine.

``scan_range(item)`` reads the batches one byte range owns (``kafkatool.scan.source``) and returns
``RangeStats``: records, batches, bytes on disk and uncompressed, per (magic, codec), offset and
timestamp ranges, out-of-order timestamps, CRC and decode failures with positions, the largest batch
against ``max.message.bytes``, transactional/control batch counts, a distinct-key sketch and, with key
sharing on, per-hash-range loads. The same function runs on Spark executors and here in one process
(or a multiprocessing pool); ``merge_results`` folds ranges into segments, partitions and topics in
plan order, so both engines give identical figures.

Definitions (all per segment, partition or topic):

* bytes: batch sizes including the 12-byte log overhead; uncompressed: Kafka's
  ``MemoryRecordsBuilder.uncompressedBytesWritten`` for the batch (v2: 61 + records area; legacy
  wrapper: wrapper header + inner entries; uncompressed batches: their size); undecodable batches
  count their stored size.
* timestamps: records with a timestamp >= 0 (v0 has none). Out of order: a record whose timestamp
  is below the previous such record's in offset order.
* CRC failures: batches whose stored checksum does not match (``isValid``), and legacy wrappers
  with an inner message whose own CRC fails. Decode failures: batches whose records do not decode. Unknown
  magic: batches of a magic other than 0, 1 and 2 (Kafka's reader takes them for v2, its consumers refuse them).
* keys: of non-control records; ``distinct_keys`` is a HyperLogLog estimate (``kafkatool.scan.sketches``).
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkatool.constants import DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.errors import KafkaToolError
from kafkatool.record.batch import MAGIC_V2
from kafkatool.record.default_records import RECORD_BATCH_OVERHEAD
from kafkatool.record.estimator import batch_header_size
from kafkatool.scan.keyshare import hash64_many, slots_of_many
from kafkatool.scan.plan import Plan, WorkItem, parent_of, whole_segment_item
from kafkatool.scan.sketches import HotKeys, HyperLogLog
from kafkatool.scan.source import DEFAULT_CHUNK_BYTES, DEFAULT_MAX_BATCH_BYTES, RangeBatches, RangeEnd
from kafkatool.util.budget import MemoryBudget

MAX_POSITIONS = 100  # CRC/decode failure positions kept per segment (counts are exact)
_KEY_FLUSH = 65536
# MemoryRecordsBuilder.uncompressedBytesWritten counts a legacy wrapper's header: log overhead + message overhead.
_WRAPPER_OVERHEAD = {0: batch_header_size(0, 1), 1: batch_header_size(1, 1)}
_size = operator.itemgetter(6)
_lt = operator.lt


@dataclass(frozen=True, slots=True)
class ScanOptions:
    decompress_limit: int | None = None
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    hot_key_capacity: int = 64
    # The worker's share of the run's memory budget: Spark's Python workers activate it (a forked pool
    # inherits the parent's active one), so mapped-page windows and default limits follow the memory budget.
    budget: MemoryBudget | None = None


DEFAULT_OPTIONS = ScanOptions()


@dataclass(slots=True)
class Stats:
    batches: int = 0
    records: int = 0
    bytes: int = 0
    uncompressed_bytes: int = 0
    formats: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # (magic, codec) -> [b, r, by, unc]
    first_offset: int | None = None
    last_offset: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    first_timestamp: int | None = None  # first/last record timestamps in offset order (for merging)
    last_timestamp: int | None = None
    out_of_order: int = 0
    crc_failures: int = 0
    crc_positions: list[tuple[str, int]] = field(default_factory=list)  # (path, position)
    decode_failures: int = 0
    decode_errors: list[tuple[str, int, str]] = field(default_factory=list)  # (path, position, message)
    unknown_magic: int = 0  # batches of a magic Kafka never writes (dump's unknown-magic)
    magic_positions: list[tuple[str, int, int]] = field(default_factory=list)  # (path, position, magic)
    largest_batch: int = 0
    largest_batch_position: tuple[str, int] | None = None
    oversized_batches: int = 0
    transactional_batches: int = 0
    control_batches: int = 0
    null_keys: int = 0
    hll: HyperLogLog | None = None

    @property
    def distinct_keys(self) -> int:
        return self.hll.estimate() if self.hll is not None else 0

    @property
    def compression_ratio(self) -> float:
        return self.uncompressed_bytes / self.bytes if self.bytes else 0.0

    def merge(self, o: Stats, *, sequential: bool) -> None:
        """Fold ``o`` in: ``sequential`` when ``o`` follows in offset order (same partition)."""
        self.batches += o.batches
        self.records += o.records
        self.bytes += o.bytes
        self.uncompressed_bytes += o.uncompressed_bytes
        for k, v in o.formats.items():
            mine = self.formats.setdefault(k, [0, 0, 0, 0])
            for i in range(4):
                mine[i] += v[i]
        self.first_offset = _min(self.first_offset, o.first_offset)
        self.last_offset = _max(self.last_offset, o.last_offset)
        self.min_timestamp = _min(self.min_timestamp, o.min_timestamp)
        self.max_timestamp = _max(self.max_timestamp, o.max_timestamp)
        self.out_of_order += o.out_of_order
        if sequential:
            if self.last_timestamp is not None and o.first_timestamp is not None \
                    and o.first_timestamp < self.last_timestamp:
                self.out_of_order += 1
            if self.first_timestamp is None:
                self.first_timestamp = o.first_timestamp
            if o.last_timestamp is not None:
                self.last_timestamp = o.last_timestamp
        else:
            self.first_timestamp = self.last_timestamp = None
        self.crc_failures += o.crc_failures
        self.crc_positions = (self.crc_positions + o.crc_positions)[:MAX_POSITIONS]
        self.decode_failures += o.decode_failures
        self.decode_errors = (self.decode_errors + o.decode_errors)[:MAX_POSITIONS]
        self.unknown_magic += o.unknown_magic
        self.magic_positions = (self.magic_positions + o.magic_positions)[:MAX_POSITIONS]
        if o.largest_batch > self.largest_batch:
            self.largest_batch = o.largest_batch
            self.largest_batch_position = o.largest_batch_position
        self.oversized_batches += o.oversized_batches
        self.transactional_batches += o.transactional_batches
        self.control_batches += o.control_batches
        self.null_keys += o.null_keys
        if o.hll is not None:
            if self.hll is None:
                self.hll = HyperLogLog(o.hll.registers.copy())
            else:
                self.hll.merge(o.hll)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


@dataclass(slots=True)
class KeyShareStats:
    """One partition's (or range's) records per hash range, for ``slots`` consumers sharing it."""

    slots: int
    slot_records: list[int]
    slot_bytes: list[int]
    null_records: int = 0
    null_bytes: int = 0
    keyed_records: int = 0
    keyed_bytes: int = 0
    murmur2_match: int = 0  # keyed records whose murmur2 partition is the one they are in
    crc32_match: int = 0  # ... whose librdkafka consistent (CRC32) partition is
    hot: HotKeys = field(default_factory=HotKeys)

    @classmethod
    def empty(cls, slots: int, capacity: int) -> KeyShareStats:
        return cls(slots, [0] * slots, [0] * slots, hot=HotKeys(capacity))

    def merge(self, o: KeyShareStats) -> None:
        if o.slots != self.slots:
            raise ValueError(f"cannot merge key-sharing stats of {o.slots} and {self.slots} ranges")
        for i in range(self.slots):
            self.slot_records[i] += o.slot_records[i]
            self.slot_bytes[i] += o.slot_bytes[i]
        self.null_records += o.null_records
        self.null_bytes += o.null_bytes
        self.keyed_records += o.keyed_records
        self.keyed_bytes += o.keyed_bytes
        self.murmur2_match += o.murmur2_match
        self.crc32_match += o.crc32_match
        self.hot.merge(o.hot)


@dataclass(slots=True)
class RangeResult:
    item_id: int
    stats: Stats
    end: RangeEnd
    keyshare: KeyShareStats | None = None
    bytes_scanned: int = 0


# ---------------------------------------------------------------------------------------------- scanning

def scan_range(item: WorkItem, opts: ScanOptions = DEFAULT_OPTIONS) -> RangeResult:
    """Scan the batches ``item`` owns (see the module docstring for what is counted)."""
    st = Stats(hll=HyperLogLog())
    ks = KeyShareStats.empty(item.share_slots, opts.hot_key_capacity) if item.share_slots else None
    src = RangeBatches(item.path, item.start, item.end, item.file_size, last=item.last,
                       chunk_bytes=opts.chunk_bytes, max_batch_bytes=opts.max_batch_bytes)
    path = item.path
    limit = opts.decompress_limit
    max_msg = opts.max_message_bytes
    formats = st.formats
    pend_keys: list[bytes] = []
    pend_sizes: list[int] = []
    last_ts: int | None = None
    end: RangeEnd | None = None
    try:
        for batch in src:
            size = batch.size
            pos = batch.position
            magic = batch.magic
            codec = batch.codec_id
            fm = formats.get((magic, codec))
            if fm is None:
                fm = formats[(magic, codec)] = [0, 0, 0, 0]
            if size > st.largest_batch:
                st.largest_batch = size
                st.largest_batch_position = (path, pos)
            if size > max_msg:
                st.oversized_batches += 1
            if not 0 <= magic <= MAGIC_V2:
                # Kafka's segment reader takes it for v2 (or v0/v1), its consumers refuse it: dump's unknown-magic.
                st.unknown_magic += 1
                if len(st.magic_positions) < MAX_POSITIONS:
                    st.magic_positions.append((path, pos, magic))
            control = batch.is_control
            if batch.is_transactional:
                st.transactional_batches += 1
            if control:
                st.control_batches += 1
            crc_ok = batch.is_valid()
            try:
                recs = batch.records(limit=limit)
            except KafkaToolError as e:
                recs = None
                st.decode_failures += 1
                if len(st.decode_errors) < MAX_POSITIONS:
                    st.decode_errors.append((path, pos, e.message))
            if recs is not None and crc_ok and magic < 2 and codec and any(r[8] is False for r in recs):
                crc_ok = False
            if not crc_ok:
                st.crc_failures += 1
                if len(st.crc_positions) < MAX_POSITIONS:
                    st.crc_positions.append((path, pos))
            n = 0
            unc = size
            first_off = batch.base_offset if magic >= 2 else batch.last_offset
            if recs:
                n = len(recs)
                first_off = recs[0][0]
                if codec:
                    unc = (RECORD_BATCH_OVERHEAD if magic >= 2 else _WRAPPER_OVERHEAD[magic]) + sum(map(_size, recs))
                tss = [r[1] for r in recs]
                if min(tss) < 0:
                    tss = [t for t in tss if t >= 0]
                if tss:
                    if last_ts is not None and tss[0] < last_ts:
                        st.out_of_order += 1
                    if len(tss) > 1:
                        st.out_of_order += sum(map(_lt, tss[1:], tss))
                    if st.first_timestamp is None:
                        st.first_timestamp = tss[0]
                    last_ts = tss[-1]
                    lo, hi = min(tss), max(tss)
                    if st.min_timestamp is None or lo < st.min_timestamp:
                        st.min_timestamp = lo
                    if st.max_timestamp is None or hi > st.max_timestamp:
                        st.max_timestamp = hi
                if not control:
                    keys = [r[2] for r in recs]
                    nulls = keys.count(None)
                    if ks is None:
                        if nulls:
                            st.null_keys += nulls
                            keys = [k for k in keys if k is not None]
                        pend_keys.extend(keys)  # type: ignore[arg-type]
                    else:
                        if nulls:
                            st.null_keys += nulls
                            _null_keys(ks, recs)
                            pend_keys.extend(r[2] for r in recs if r[2] is not None)
                            pend_sizes.extend(r[6] for r in recs if r[2] is not None)
                        else:
                            pend_keys.extend(keys)  # type: ignore[arg-type]
                            pend_sizes.extend(map(_size, recs))
                    if len(pend_keys) >= _KEY_FLUSH:
                        _flush_keys(item, st, ks, pend_keys, pend_sizes)
                        pend_keys = []
                        pend_sizes = []
            fm[0] += 1
            fm[1] += n
            fm[2] += size
            fm[3] += unc
            st.batches += 1
            st.records += n
            st.bytes += size
            st.uncompressed_bytes += unc
            if st.first_offset is None or first_off < st.first_offset:
                st.first_offset = first_off
            last_off = batch.last_offset
            if st.last_offset is None or last_off > st.last_offset:
                st.last_offset = last_off
        end = src.end
    except (KafkaToolError, OSError) as e:
        where = getattr(e, "position", None)
        msg = e.message if isinstance(e, KafkaToolError) else f"{type(e).__name__}: {e}"
        end = RangeEnd("error", where if where is not None else item.start, 0, msg)
    if pend_keys:
        _flush_keys(item, st, ks, pend_keys, pend_sizes)
    st.last_timestamp = last_ts
    if end is None:
        end = RangeEnd("error", item.start, 0, "the range walk ended without a stop state")
    return RangeResult(item.id, st, end, ks, max(src.bytes_read, 0))


def _null_keys(ks: KeyShareStats, recs: Sequence[Any]) -> None:
    """Null keys cannot be hash-ranged: they go round-robin by offset over the partition's consumers."""
    k = ks.slots
    for r in recs:
        if r[2] is None:
            slot = r[0] % k
            ks.slot_records[slot] += 1
            ks.slot_bytes[slot] += r[6]
            ks.null_records += 1
            ks.null_bytes += r[6]


def _flush_keys(item: WorkItem, st: Stats, ks: KeyShareStats | None, keys: list[bytes], sizes: list[int]) -> None:
    import numpy as np

    h32, h64 = hash64_many(keys)
    assert st.hll is not None
    st.hll.add_hashes(h64)
    if ks is None:
        return
    k = ks.slots
    slots = slots_of_many(h32, k)
    size_arr = np.asarray(sizes, dtype=np.int64)
    recs = np.bincount(slots, minlength=k)
    byts = np.zeros(k, dtype=np.int64)
    np.add.at(byts, slots, size_arr)
    for i in range(k):
        ks.slot_records[i] += int(recs[i])
        ks.slot_bytes[i] += int(byts[i])
    ks.keyed_records += len(keys)
    ks.keyed_bytes += int(size_arr.sum())
    parts = item.topic_partitions
    if parts > 0:
        positive = h32 & np.uint32(0x7FFFFFFF)
        ks.murmur2_match += int(np.count_nonzero(positive % np.uint32(parts) == item.partition))
        crc = np.fromiter(map(zlib.crc32, keys), dtype=np.uint32, count=len(keys))
        ks.crc32_match += int(np.count_nonzero(crc % np.uint32(parts) == item.partition))
    ks.hot.update(keys, size_arr, h64, h32)


# ---------------------------------------------------------------------------------------------- merging

@dataclass(slots=True)
class SegmentResult:
    topic: str
    partition: int
    base_offset: int
    path: str
    file_size: int
    stats: Stats
    end: RangeEnd
    keyshare: KeyShareStats | None
    ranges: int
    rescanned: bool = False

    @property
    def unread_bytes(self) -> int:
        return self.end.trailing_bytes if self.end.abnormal else 0


@dataclass(slots=True)
class PartitionResult:
    topic: str
    partition: int
    dir: str  # the partition dir (several log dirs may hold copies of one partition)
    segments: int
    stats: Stats
    keyshare: KeyShareStats | None
    abnormal: list[SegmentResult]


@dataclass(slots=True)
class TopicResult:
    topic: str
    partitions: int
    segments: int
    stats: Stats


@dataclass(slots=True)
class ScanReport:
    segments: list[SegmentResult]
    partitions: list[PartitionResult]
    topics: list[TopicResult]
    total: Stats
    notes: list[str] = field(default_factory=list)

    @property
    def findings(self) -> int:
        """CRC failures, decode failures, batches of an unknown magic and segments whose walk stopped before their
        end."""
        return self.total.crc_failures + self.total.decode_failures + self.total.unknown_magic + sum(
            1 for s in self.segments if s.end.abnormal)


def merge_segment(items: Sequence[WorkItem], results: Mapping[int, RangeResult]) -> SegmentResult | None:
    """Fold a segment's ranges in order, as one walk of the file would see them.

    None when a range did not hand off exactly where the next starts (a cut that is not a batch
    boundary): the caller rescans the segment as one range. Ranges after a range whose walk stopped
    (corruption, torn batch) are dropped, as the whole-file walk would never reach them.
    """
    ordered = sorted(items, key=lambda it: it.range_index)
    first = ordered[0]
    r0 = results[first.id]
    stats, ks, end = r0.stats, r0.keyshare, r0.end
    for it in ordered[1:]:
        if end.kind != "handoff":
            break
        if end.position != it.start:
            return None
        r = results[it.id]
        stats.merge(r.stats, sequential=True)
        if ks is not None and r.keyshare is not None:
            ks.merge(r.keyshare)
        end = r.end
    if end.kind == "handoff":
        return None  # the last range never hands off: the plan and results disagree
    return SegmentResult(first.topic, first.partition, first.base_offset, first.path, first.file_size, stats, end,
                         ks, len(ordered))


def merge_results(plan: Plan, results: Mapping[int, RangeResult],
                  rescan: Callable[[WorkItem], RangeResult], notes: Iterable[str] = ()) -> ScanReport:
    """Segments, partitions, topics and the total, merged in plan order (deterministic)."""
    by_segment: dict[tuple[str, int, str, int], list[WorkItem]] = {}
    for it in plan.items:
        by_segment.setdefault(it.segment_key, []).append(it)
    out_notes = list(plan.notes) + list(notes)
    segments: list[SegmentResult] = []
    for key in sorted(by_segment):
        items = by_segment[key]
        seg = merge_segment(items, results)
        if seg is None:
            whole = whole_segment_item(items[0])
            r = rescan(whole)
            seg = merge_segment([whole], {whole.id: r})
            assert seg is not None
            seg.rescanned = True
            out_notes.append(f"{whole.path}: a planned cut was not at a batch boundary; rescanned it whole")
        segments.append(seg)
    partitions: list[PartitionResult] = []
    for seg in segments:
        pdir = parent_of(seg.path)
        if partitions and (partitions[-1].topic, partitions[-1].partition, partitions[-1].dir) == \
                (seg.topic, seg.partition, pdir):
            p = partitions[-1]
            p.stats.merge(seg.stats, sequential=True)
            if p.keyshare is not None and seg.keyshare is not None:
                p.keyshare.merge(seg.keyshare)
            p.segments += 1
        else:
            p = PartitionResult(seg.topic, seg.partition, pdir, 1, _copy(seg.stats), _copy_ks(seg.keyshare), [])
            partitions.append(p)
        if seg.end.abnormal:
            p.abnormal.append(seg)
    topics: list[TopicResult] = []
    total = Stats()
    for p in partitions:
        if topics and topics[-1].topic == p.topic:
            topics[-1].stats.merge(p.stats, sequential=False)
            topics[-1].partitions += 1
            topics[-1].segments += p.segments
        else:
            t = TopicResult(p.topic, 1, p.segments, Stats())
            t.stats.merge(p.stats, sequential=False)
            topics.append(t)
        total.merge(p.stats, sequential=False)
    return ScanReport(segments, partitions, topics, total, out_notes)


def _copy(s: Stats) -> Stats:
    c = Stats()
    c.merge(s, sequential=True)
    return c


def _copy_ks(k: KeyShareStats | None) -> KeyShareStats | None:
    if k is None:
        return None
    c = KeyShareStats.empty(k.slots, k.hot.capacity)
    c.merge(k)
    return c


# ---------------------------------------------------------------------------------------------- engine

def run_local(plan: Plan, opts: ScanOptions = DEFAULT_OPTIONS, *, jobs: int = 1,
              progress: Callable[[int, int], None] | None = None) -> ScanReport:
    """The single-process scan (``jobs=1``) or a multiprocessing pool of ``jobs`` processes over the tasks."""
    results: dict[int, RangeResult] = {}
    done_bytes = 0
    if jobs <= 1 or len(plan.tasks) <= 1:
        for task in plan.tasks:
            for i in task:
                r = scan_range(plan.items[i], opts)
                results[i] = r
                done_bytes += plan.items[i].bytes
                if progress:
                    progress(done_bytes, plan.total_bytes)
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            work = [[plan.items[i] for i in task] for task in plan.tasks]
            for rs in pool.imap_unordered(_scan_task, [(w, opts) for w in work]):
                for r in rs:
                    results[r.item_id] = r
                    done_bytes += plan.items[r.item_id].bytes
                if progress:
                    progress(done_bytes, plan.total_bytes)
    return merge_results(plan, results, lambda it: scan_range(it, opts))


def _scan_task(arg: tuple[list[WorkItem], ScanOptions]) -> list[RangeResult]:
    items, opts = arg
    return [scan_range(it, opts) for it in items]
