"""One partition's log as a Kafka 3.9 broker keeps it, built append by append for ``kafkatool sample``.

``PartitionLog.append`` follows ``UnifiedLog.append``/``LocalLog``: roll before an append that would
take the active segment past ``segment.bytes`` (``LogSegment.shouldRoll``: ``size > segment.bytes -
messagesSize``, or an index that is full), take a producer snapshot named by the new base offset at each
roll, assign leader epochs from v2 batches (``maybeAssignEpochStartOffset(batch.partitionLeaderEpoch,
batch.baseOffset)``), update producer state (``ProducerAppendInfo``) and append aborted transactions to
the active segment's ``.txnindex`` with ``ProducerStateManager.lastStableOffset`` as the LSO.

``finish`` writes what a stopped broker leaves behind: each ``.log``, indexes exactly as
``LogSegment.recover`` rebuilds them (``recover.py``; trimmed as after a clean shutdown, or the active
segment's left preallocated to ``segment.index.bytes`` and zero-padded, without the close-time
time-index entry, as a broker that died leaves them), ``.txnindex`` files, producer snapshots,
``leader-epoch-checkpoint`` and ``partition.metadata``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kafkatool.constants import DEFAULT_SEGMENT_INDEX_BYTES
from kafkatool.errors import KafkaToolError
from kafkatool.log.checkpoints import EpochEntry, encode_leader_epoch_checkpoint, encode_partition_metadata
from kafkatool.log.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    encode_offset_index,
    encode_time_index,
    preallocated_length,
)
from kafkatool.log.layout import (
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_SUFFIX,
    PARTITION_METADATA,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    filename_prefix_from_offset,
)
from kafkatool.log.recovery import recover_segment
from kafkatool.log.snapshot import ProducerSnapshotEntry, encode_snapshot
from kafkatool.log.txn_index import AbortedTxn, encode_txn_index
from kafkatool.record.batch import (
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    ControlRecordType,
    TimestampType,
    increment_sequence,
)
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import (
    build_batch,
    build_empty_batch,
    control_key,
    end_txn_marker_value,
)
from kafkatool.record.file_records import FileRecords
from kafkatool.record.legacy_records import build_entries

RecordTuple = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]

OFFSET_INDEX_MAX_ENTRIES = DEFAULT_SEGMENT_INDEX_BYTES // OFFSET_ENTRY_SIZE
TIME_INDEX_MAX_ENTRIES = DEFAULT_SEGMENT_INDEX_BYTES // TIME_ENTRY_SIZE


@dataclass(slots=True)
class LogicalBatch:
    """One append as the broker stores it: a v2 batch, or a v0/v1 message set (one entry per record
    uncompressed, one wrapper compressed). ``records`` are ``(offset, timestamp, key, value, headers)``;
    a v2 batch without records is an empty batch the cleaner kept for producer state."""

    magic: int
    base_offset: int
    records: list[RecordTuple]
    codec: Codec = Codec.NONE
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    log_append_time: int = NO_TIMESTAMP
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    transactional: bool = False
    control: ControlRecordType | None = None
    leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    last_offset_override: int | None = None
    delete_horizon_ms: int | None = None
    max_timestamp_override: int | None = None  # known max (saves a pass), or an emptied batch's original
    level: int | None = None  # compression level (None: Kafka's default for the codec)

    @property
    def last_offset(self) -> int:
        if self.last_offset_override is not None:
            return self.last_offset_override
        return self.records[-1][0]

    @property
    def max_timestamp(self) -> int:
        if self.max_timestamp_override is not None:
            return self.max_timestamp_override
        if self.magic == 0:
            return NO_TIMESTAMP
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return self.log_append_time
        return max(r[1] for r in self.records)

    @property
    def is_control(self) -> bool:
        return self.control is not None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    def encode(self) -> bytes:
        if self.magic < MAGIC_V2:
            return build_entries(self.records, magic=self.magic, codec=self.codec,
                                 timestamp_type=self.timestamp_type, log_append_time=self.log_append_time,
                                 base_offset=self.base_offset, level=self.level)
        if not self.records:
            return build_empty_batch(base_offset=self.base_offset,
                                     last_offset_delta=self.last_offset - self.base_offset,
                                     max_timestamp=self.max_timestamp, producer_id=self.producer_id,
                                     producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                                     is_transactional=self.transactional, partition_leader_epoch=self.leader_epoch,
                                     timestamp_type=self.timestamp_type, is_control=self.is_control)
        return build_batch(self.records, base_offset=self.base_offset, codec=self.codec,
                           timestamp_type=self.timestamp_type, log_append_time=self.log_append_time,
                           producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                           base_sequence=self.base_sequence, is_transactional=self.transactional,
                           is_control=self.is_control, partition_leader_epoch=self.leader_epoch,
                           delete_horizon_ms=self.delete_horizon_ms, override_last_offset=self.last_offset_override,
                           level=self.level)


def end_txn_marker(*, offset: int, timestamp: int, producer_id: int, producer_epoch: int, commit: bool,
                   coordinator_epoch: int, leader_epoch: int) -> LogicalBatch:
    """``MemoryRecords.withEndTransactionMarker``: one control record, uncompressed, base sequence -1."""
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return LogicalBatch(MAGIC_V2, offset, [(offset, timestamp, control_key(kind), end_txn_marker_value(
        coordinator_epoch), ())], producer_id=producer_id, producer_epoch=producer_epoch, transactional=True,
        control=kind, leader_epoch=leader_epoch)


@dataclass(slots=True)
class ProducerState:
    """``ProducerStateEntry`` with its last batch metadata (what a snapshot stores)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int = -1
    last_offset: int = -1  # last data offset; -1 before any data batch
    offset_delta: int = 0
    timestamp: int = NO_TIMESTAMP
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    def snapshot_entry(self) -> ProducerSnapshotEntry:
        return ProducerSnapshotEntry(self.producer_id, self.producer_epoch, self.last_sequence, self.last_offset,
                                     self.offset_delta, self.timestamp, self.coordinator_epoch,
                                     self.current_txn_first_offset)


def java_hashmap_order(producer_ids: list[int]) -> list[int]:
    """Iteration order of a ``HashMap<Long, _>`` filled in this order (how 3.9 writes snapshot entries):
    by bucket ``(h ^ h >>> 16) & (capacity - 1)`` with ``h = (int)(v ^ v >>> 32)``, then insertion order."""
    capacity = 16
    while len(producer_ids) > capacity * 3 // 4:
        capacity *= 2

    def bucket(v: int) -> int:
        u = v & 0xFFFFFFFFFFFFFFFF
        h = (u ^ (u >> 32)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [pid for _, _, pid in sorted((bucket(p), i, p) for i, p in enumerate(producer_ids))]


@dataclass(slots=True)
class SegmentState:
    base_offset: int
    created_ms: int
    size: int = 0
    next_offset: int = 0
    records: int = 0
    appends: int = 0
    markers: int = 0
    mtime_ms: int = 0
    aborted: list[AbortedTxn] = field(default_factory=list)
    batches: list[tuple[LogicalBatch, bytes]] | None = None  # kept in memory for the cleaner
    file: BinaryIO | None = None
    # the live append path's index bookkeeping (LogSegment.append), for the roll-on-full-index rule
    bytes_since_index: int = 0
    offset_entries: int = 0
    time_entries: int = 0
    max_ts: int = NO_TIMESTAMP
    last_time_entry_ts: int = NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    base_offset: int
    size: int
    next_offset: int
    records: int
    physical_batches: int
    offset_index_entries: int
    time_index_entries: int
    aborted_txns: int


@dataclass(frozen=True, slots=True)
class PartitionSummary:
    topic: str
    partition: int
    topic_id: str
    log_start_offset: int
    first_segment_base: int
    log_end_offset: int
    high_watermark: int
    recovery_point: int
    segments: tuple[SegmentSummary, ...]
    epochs: tuple[EpochEntry, ...]
    magics: tuple[int, ...]
    codecs: tuple[str, ...]
    records: int
    markers: int
    commits: int
    aborts: int
    snapshots: tuple[int, ...]
    compacted: bool
    cleaner_checkpoint: int | None
    bytes: int
    uncompressed_bytes: int
    first_append_ms: int
    last_append_ms: int


class PartitionLog:
    """Appends, rolls and finally writes one partition directory."""

    def __init__(self, path: Path, topic: str, partition: int, topic_id: str, *, segment_bytes: int,
                 index_interval_bytes: int, keep_batches: bool, start_ms: int, keeps_epoch_cache: bool = True) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.keep_batches = keep_batches
        self.keeps_epoch_cache = keeps_epoch_cache
        self.next_offset = 0
        self.log_start_offset = 0
        self.producers: dict[int, ProducerState] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.epochs: list[EpochEntry] = []
        self.snapshots: dict[int, tuple[bytes, int]] = {}  # offset -> (bytes, mtime ms)
        self.cleaner_checkpoint: int | None = None
        self.magics: set[int] = set()
        self.codecs: set[str] = set()
        self.commits = 0
        self.aborts = 0
        self.uncompressed_bytes = 0
        self.appended_bytes = 0  # everything ever appended (retention and cleaning do not lower it)
        self.now_ms = start_ms
        self.created_ms = start_ms
        self.first_append_ms = start_ms
        self.last_append_ms = start_ms
        self.rolls = 0
        self.segments: list[SegmentState] = []
        path.mkdir(parents=True, exist_ok=False)
        self._new_segment(0, start_ms)

    # ------------------------------------------------------------------ appends
    @property
    def active(self) -> SegmentState:
        return self.segments[-1]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    def _new_segment(self, base: int, now_ms: int) -> None:
        seg = SegmentState(base, now_ms, next_offset=base, mtime_ms=now_ms)
        if self.keep_batches:
            seg.batches = []
        else:
            seg.file = open(self._file(base, LOG_SUFFIX), "wb", buffering=1 << 20)  # noqa: SIM115
        self.segments.append(seg)

    def _file(self, base: int, suffix: str) -> Path:
        return self.path / (filename_prefix_from_offset(base) + suffix)

    def append(self, batch: LogicalBatch, now_ms: int, data: bytes | None = None) -> None:
        if batch.base_offset != self.next_offset:
            raise ValueError(f"append at {batch.base_offset} but the log end offset is {self.next_offset}")
        if self.next_offset == 0 and not self.segments[0].size:
            self.first_append_ms = now_ms
        self.now_ms = max(self.now_ms, now_ms)
        self.last_append_ms = now_ms
        if data is None:
            data = batch.encode()
        seg = self.active
        if (seg.size > self.segment_bytes - len(data) or seg.offset_entries >= OFFSET_INDEX_MAX_ENTRIES
                or seg.time_entries >= TIME_INDEX_MAX_ENTRIES - 1):
            self.roll(now_ms)
            seg = self.active
        if seg.file is not None:
            seg.file.write(data)
        else:
            assert seg.batches is not None
            seg.batches.append((batch, data))
        # LogSegment.append: one index entry per append when more than index.interval.bytes went by.
        max_ts = batch.max_timestamp
        if max_ts > seg.max_ts:
            seg.max_ts = max_ts
        if seg.bytes_since_index > self.index_interval_bytes:
            seg.offset_entries += 1
            if seg.max_ts > seg.last_time_entry_ts:
                seg.time_entries += 1
                seg.last_time_entry_ts = seg.max_ts
            seg.bytes_since_index = 0
        seg.bytes_since_index += len(data)
        seg.size += len(data)
        self.appended_bytes += len(data)
        seg.appends += 1
        seg.mtime_ms = now_ms
        self.next_offset = batch.last_offset + 1
        seg.next_offset = self.next_offset
        self.magics.add(batch.magic)
        if batch.is_control:
            seg.markers += 1
        else:
            seg.records += len(batch.records)
            self.codecs.add(batch.codec.label)
        if batch.magic >= MAGIC_V2:
            self.assign_epoch(batch.leader_epoch, batch.base_offset)
            if batch.producer_id >= 0:
                self._update_producer(batch)

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """``LeaderEpochFileCache.assign``: a new, larger epoch starts at this batch's base offset."""
        if epoch < 0 or (self.epochs and epoch <= self.epochs[-1].epoch):
            return
        while self.epochs and self.epochs[-1].start_offset >= start_offset:
            self.epochs.pop()
        self.epochs.append(EpochEntry(epoch, start_offset))

    def _update_producer(self, b: LogicalBatch) -> None:
        pid = b.producer_id
        st = self.producers.get(pid)
        if st is None:
            st = self.producers[pid] = ProducerState(pid, b.producer_epoch)
        if b.control is not None:
            # ProducerAppendInfo.appendEndTxnMarker; the completed transaction goes to the active segment's
            # .txnindex (aborts only) with ProducerStateManager.lastStableOffset as LSO.
            first = st.current_txn_first_offset
            if first >= 0:
                others = [f for p, f in self.ongoing.items() if p != pid]
                lso = min(others) if others else b.base_offset + 1
                if b.control == ControlRecordType.ABORT:
                    self.active.aborted.append(AbortedTxn(pid, first, b.base_offset, lso))
                    self.aborts += 1
                else:
                    self.commits += 1
                self.ongoing.pop(pid, None)
            st.producer_epoch = b.producer_epoch
            st.current_txn_first_offset = -1
            st.coordinator_epoch = _coordinator_epoch(b)
            st.timestamp = b.max_timestamp
            return
        if b.producer_epoch != st.producer_epoch:
            st.producer_epoch = b.producer_epoch
        st.last_sequence = b.last_sequence
        st.last_offset = b.last_offset
        st.offset_delta = b.last_offset - b.base_offset
        st.timestamp = b.max_timestamp
        if b.transactional and st.current_txn_first_offset < 0:
            st.current_txn_first_offset = b.base_offset
            self.ongoing[pid] = b.base_offset

    def producer_snapshot(self) -> bytes:
        order = java_hashmap_order(list(self.producers))
        return encode_snapshot([self.producers[p].snapshot_entry() for p in order])

    def roll(self, now_ms: int) -> None:
        """``UnifiedLog.roll``: new segment at the log end offset, producer snapshot named by it."""
        old = self.active
        if old.size == 0:
            return
        if old.file is not None:
            old.file.close()
            old.file = None
        self.snapshots[self.next_offset] = (self.producer_snapshot(), now_ms)
        self._new_segment(self.next_offset, now_ms)
        self.rolls += 1

    # ------------------------------------------------------------------ retention
    def delete_oldest_segments(self, count: int) -> None:
        """Retention or DeleteRecords removed the oldest ``count`` segments (never the active one), with the
        producer snapshots named by their base offsets (``UnifiedLog.deleteProducerSnapshots``)."""
        count = min(count, len(self.segments) - 1)
        for seg in self.segments[:count]:
            if seg.file is not None:
                seg.file.close()
                seg.file = None
            if not self.keep_batches:
                os.unlink(self._file(seg.base_offset, LOG_SUFFIX))
            self.snapshots.pop(seg.base_offset, None)
        del self.segments[:count]
        self.increment_log_start_offset(self.segments[0].base_offset)

    def retention_bytes(self, limit: int) -> int:
        """``UnifiedLog.deleteRetentionSizeBreachedSegments``: oldest segments go while the log stays at or
        above ``retention.bytes`` without them. Returns how many were deleted."""
        diff = self.size - limit
        n = 0
        for seg in self.segments[:-1]:
            if diff - seg.size < 0:
                break
            diff -= seg.size
            n += 1
        if n:
            self.delete_oldest_segments(n)
        return n

    def delete_records(self, offset: int) -> None:
        """``DeleteRecords``: the log start offset moves to ``offset``; segments wholly below it go
        (``deleteLogStartOffsetBreachedSegments``: the next segment's base offset <= log start)."""
        offset = min(offset, self.next_offset)
        n = 0
        for i in range(len(self.segments) - 1):
            if self.segments[i + 1].base_offset <= offset:
                n = i + 1
        if n:
            self.delete_oldest_segments(n)
        self.increment_log_start_offset(offset)

    def increment_log_start_offset(self, offset: int) -> None:
        """``maybeIncrementLogStartOffset`` + ``LeaderEpochFileCache.truncateFromStart``."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        removed = [e for e in self.epochs if e.start_offset <= offset]
        if removed:
            kept = [e for e in self.epochs if e.start_offset > offset]
            self.epochs = [EpochEntry(removed[-1].epoch, offset), *kept]

    # ------------------------------------------------------------------ finishing
    def finish(self, *, clean_shutdown: bool, now_ms: int) -> PartitionSummary:
        """Write every file of the partition dir (see the module docstring); returns its summary."""
        for seg in self.segments:
            if seg.file is not None:
                seg.file.close()
                seg.file = None
            if seg.batches is not None:
                with open(self._file(seg.base_offset, LOG_SUFFIX), "wb") as f:
                    for _, data in seg.batches:
                        f.write(data)
        if clean_shutdown:
            # UnifiedLog.close takes a snapshot at the log end offset.
            self.snapshots[self.next_offset] = (self.producer_snapshot(), now_ms)
        summaries = []
        for i, seg in enumerate(self.segments):
            active = i == len(self.segments) - 1
            summaries.append(self._write_indexes(seg, preallocated=active and not clean_shutdown))
            _set_mtime(self._file(seg.base_offset, LOG_SUFFIX), seg.mtime_ms)
        bases = {s.base_offset for s in self.segments}
        written = []
        for offset, (data, mtime) in sorted(self.snapshots.items()):
            if offset in bases or offset == self.next_offset:
                p = self._file(offset, SNAPSHOT_SUFFIX)
                p.write_bytes(data)
                _set_mtime(p, mtime)
                written.append(offset)
        if self.keeps_epoch_cache:
            p = self.path / LEADER_EPOCH_CHECKPOINT
            p.write_bytes(encode_leader_epoch_checkpoint(self.epochs))
            _set_mtime(p, now_ms)
        p = self.path / PARTITION_METADATA
        p.write_bytes(encode_partition_metadata(self.topic_id))
        _set_mtime(p, self.created_ms)
        _set_mtime(self.path, now_ms)  # last: writing files above changed it
        return PartitionSummary(
            self.topic, self.partition, self.topic_id, self.log_start_offset, self.segments[0].base_offset,
            self.next_offset, self.next_offset,
            self.next_offset if clean_shutdown else self.active.base_offset, tuple(summaries),
            tuple(self.epochs), tuple(sorted(self.magics)), tuple(sorted(self.codecs)),
            sum(s.records for s in self.segments), sum(s.markers for s in self.segments), self.commits, self.aborts,
            tuple(written), self.keep_batches, self.cleaner_checkpoint, sum(s.size for s in self.segments),
            self.uncompressed_bytes, self.first_append_ms, self.last_append_ms)

    def _write_indexes(self, seg: SegmentState, *, preallocated: bool) -> SegmentSummary:
        log = self._file(seg.base_offset, LOG_SUFFIX)
        with FileRecords(log) as fr:
            rec = recover_segment(fr, seg.base_offset, index_interval_bytes=self.index_interval_bytes)
            if rec.error is not None or rec.valid_bytes != seg.size:
                raise KafkaToolError(f"internal error: generated segment does not recover cleanly "
                                     f"({rec.error or rec.stop})", path=log)
            time_entries = list(rec.time_entries)
            if preallocated and time_entries and _close_time_entry_appended(fr, rec.offset_entries[-1].position
                                                                             if rec.offset_entries else None,
                                                                             rec.max_timestamp):
                # A running broker appends the (max timestamp, offset) entry only on roll or close.
                time_entries.pop()
        index = encode_offset_index(rec.offset_entries, seg.base_offset)
        tindex = encode_time_index(time_entries, seg.base_offset)
        for suffix, data, entry in ((INDEX_SUFFIX, index, OFFSET_ENTRY_SIZE), (TIME_INDEX_SUFFIX, tindex,
                                                                               TIME_ENTRY_SIZE)):
            p = self._file(seg.base_offset, suffix)
            with open(p, "wb") as f:
                f.write(data)
                if preallocated:
                    f.truncate(preallocated_length(entry))  # sparse zero padding, as setLength leaves it
            _set_mtime(p, seg.mtime_ms)
        if seg.aborted:
            p = self._file(seg.base_offset, TXN_INDEX_SUFFIX)
            p.write_bytes(encode_txn_index(seg.aborted))
            _set_mtime(p, seg.mtime_ms)
        return SegmentSummary(seg.base_offset, seg.size, seg.next_offset, seg.records, rec.batches,
                              len(rec.offset_entries), len(time_entries), len(seg.aborted))

    def close_files(self) -> None:
        for seg in self.segments:
            if seg.file is not None:
                seg.file.close()
                seg.file = None

def _coordinator_epoch(b: LogicalBatch) -> int:
    from kafkatool.record.default_records import parse_end_txn_marker

    return parse_end_txn_marker(b.records[0][3]) if b.records else -1


def _close_time_entry_appended(fr: FileRecords, last_index_position: int | None, max_ts: int) -> bool:
    """Did recovery's final ``maybeAppend(maxTimestampSoFar)`` add an entry? Only when the segment's max
    timestamp was reached after the last offset-index point."""
    if max_ts == NO_TIMESTAMP:
        return False
    if last_index_position is None:
        return True
    running = NO_TIMESTAMP
    for b in fr.batches():
        if b.max_timestamp > running:
            running = int(b.max_timestamp)
        if b.position >= last_index_position:
            break
    return max_ts > running


def _set_mtime(path: Path, ms: int) -> None:
    if ms >= 0:
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
