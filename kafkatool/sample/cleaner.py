"""One log-cleaner pass over a compacted partition, by Kafka 3.9's rules (``LogCleaner.scala``,
``CleanedTransactionMetadata``, ``MemoryRecords.filterTo``, ``buildRetainedRecordsInto``).

* Cleanable range: from the log start to the base of the active segment, or of the segment holding the
  first unstable offset (an open transaction), whichever is lower. The offset map (key -> latest offset)
  is built from the *dirty* part only (from the cleaner checkpoint on), skipping control batches and
  aborted transactional batches.
* Segments are grouped while their summed (current) sizes stay within ``segment.bytes``
  (``groupSegmentsBySize``); each group becomes one cleaned segment named by its first base offset.
* Per batch: aborted transactional data is discarded; a marker is discarded once no data of its
  transaction is left and its delete horizon has passed (on the first pass it only gets a horizon); the
  batch holding an active producer's last data offset is kept, empty if need be (61-byte header with
  the original offsets, sequence and max timestamp) so producer state survives.
* Per record: kept when it is the latest for its key (or past the map's latest offset); tombstones of
  v2 batches are kept until the batch's delete horizon passes: a batch that keeps a tombstone and has
  no horizon yet is rewritten with ``deleteHorizonMs = now + delete.retention.ms`` (KIP-534, 3.1+).
* A rewritten v2 batch keeps its base offset and, through ``overrideLastOffset``, its last offset.
* The cleaned segment's ``.txnindex`` holds the aborted transactions whose marker was kept while their
  data was still seen in this pass.

Index entries are not taken from the cleaner's chunked appends: ``sample_log`` rebuilds all indexes by
recovery rules.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from kafkatool.log.txn_index import AbortedTxn
from kafkatool.record.batch import MAGIC_V2, ControlRecordType
from kafkatool.sample.partition import LogicalBatch, PartitionLog, RecordTuple, SegmentState

DEFAULT_DELETE_RETENTION_MS = 86_400_000  # delete.retention.ms


@dataclass(frozen=True, slots=True)
class CleanStats:
    first_dirty_offset: int
    end_offset: int
    segments_in: int
    segments_out: int
    batches_removed: int
    records_removed: int
    empty_batches_kept: int


class _TxnMetadata:
    """``CleanedTransactionMetadata``: which transactional batches are aborted, which markers may go."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self.queue = deque(sorted(aborted, key=lambda t: t.first_offset))
        self.ongoing_aborted: dict[int, list[object]] = {}  # pid -> [txn, last observed batch offset | None]
        self.ongoing_committed: set[int] = set()
        self.cleaned_index: list[AbortedTxn] = []

    def _consume_up_to(self, offset: int) -> None:
        while self.queue and self.queue[0].first_offset <= offset:
            t = self.queue.popleft()
            self.ongoing_aborted.setdefault(t.producer_id, [t, None])

    def on_batch_read(self, b: LogicalBatch) -> bool:
        """True when the batch belongs to an aborted transaction (its records are discarded)."""
        self._consume_up_to(b.last_offset)
        if b.transactional:
            m = self.ongoing_aborted.get(b.producer_id)
            if m is not None:
                m[1] = b.last_offset
                return True
            self.ongoing_committed.add(b.producer_id)
        return False

    def on_control_batch_read(self, b: LogicalBatch) -> bool:
        """True when the marker could be discarded (no data of its transaction seen in this pass)."""
        self._consume_up_to(b.last_offset)
        if not b.records:
            return True  # an empty control batch was already cleaned
        pid = b.producer_id
        if b.control == ControlRecordType.ABORT:
            m = self.ongoing_aborted.pop(pid, None)
            if m is not None and m[1] is not None:
                txn = m[0]
                assert isinstance(txn, AbortedTxn)
                self.cleaned_index.append(txn)
                return False
            return True
        if b.control == ControlRecordType.COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False


def clean(log: PartitionLog, now_ms: int, *,
          delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS) -> CleanStats | None:
    """Run one cleaning pass over ``log`` (kept in memory) at ``now_ms``; None when nothing is cleanable."""
    segs = log.segments
    first_dirty = max(log.cleaner_checkpoint or 0, log.log_start_offset)
    upper = segs[-1].base_offset
    if log.ongoing:
        first_unstable = min(log.ongoing.values())
        for s in segs:
            if s.base_offset <= first_unstable < s.next_offset:
                upper = min(upper, s.base_offset)
    if upper <= first_dirty:
        return None
    cleanable = [s for s in segs if s.base_offset < upper]
    aborted = [t for s in cleanable for t in s.aborted]

    # Offset map over the dirty section.
    offset_map: dict[bytes, int] = {}
    meta = _TxnMetadata(aborted)
    for s in cleanable:
        if s.next_offset <= first_dirty:
            continue
        for b, _ in s.batches or ():
            if b.is_control:
                meta.on_control_batch_read(b)
            elif not meta.on_batch_read(b):
                for r in b.records:
                    if r[2] is not None and r[0] >= first_dirty:
                        offset_map[r[2]] = r[0]
    latest = max(offset_map.values(), default=-1)

    active_producers = {pid: (st.last_offset if st.last_offset >= 0 else None, st.producer_epoch)
                        for pid, st in log.producers.items()}
    dirty_before = [s for s in cleanable if s.next_offset <= first_dirty]
    legacy_horizon = dirty_before[-1].mtime_ms - delete_retention_ms if dirty_before else 0

    removed_batches = removed_records = kept_empty = 0
    out: list[SegmentState] = []
    for group in _group_by_size(cleanable, log.segment_bytes):
        meta = _TxnMetadata([t for s in segs if s.base_offset < upper for t in s.aborted
                             if t.last_offset >= group[0].base_offset])
        cleaned: list[tuple[LogicalBatch, bytes]] = []
        for s in group:
            retain_legacy_deletes = s.mtime_ms > legacy_horizon
            for b, data in s.batches or ():
                result = _filter_batch(b, data, meta, offset_map, latest, active_producers, now_ms,
                                       delete_retention_ms, retain_legacy_deletes)
                if result is None:
                    removed_batches += 1
                    removed_records += len(b.records)
                    continue
                nb, ndata = result
                if nb is not b:
                    removed_records += len(b.records) - len(nb.records)
                    if not nb.records:
                        kept_empty += 1
                cleaned.append((nb, ndata))
        head = group[0]
        seg = SegmentState(head.base_offset, head.created_ms, next_offset=group[-1].next_offset,
                           mtime_ms=max(s.mtime_ms for s in group), aborted=meta.cleaned_index, batches=cleaned)
        seg.size = sum(len(d) for _, d in cleaned)
        seg.records = sum(len(b.records) for b, _ in cleaned if not b.is_control)
        seg.markers = sum(1 for b, _ in cleaned if b.is_control)
        seg.appends = len(cleaned)
        out.append(seg)
        for s in group[1:]:
            log.snapshots.pop(s.base_offset, None)  # replaceSegments deletes the merged segments' snapshots
    log.segments = out + [s for s in segs if s.base_offset >= upper]
    log.cleaner_checkpoint = upper
    return CleanStats(first_dirty, upper, len(cleanable), len(out), removed_batches, removed_records, kept_empty)


def _group_by_size(segs: list[SegmentState], max_size: int) -> list[list[SegmentState]]:
    groups: list[list[SegmentState]] = []
    i = 0
    while i < len(segs):
        group = [segs[i]]
        size = segs[i].size
        i += 1
        while i < len(segs) and size + segs[i].size <= max_size:
            group.append(segs[i])
            size += segs[i].size
            i += 1
        groups.append(group)
    return groups


def _filter_batch(b: LogicalBatch, data: bytes, meta: _TxnMetadata, offset_map: dict[bytes, int], latest: int,
                  active: dict[int, tuple[int | None, int]], now_ms: int, delete_retention_ms: int,
                  retain_legacy_deletes: bool) -> tuple[LogicalBatch, bytes] | None:
    """``MemoryRecords.filterTo`` for one batch with the cleaner's filter; None = batch removed."""
    discard_records = False
    retain_empty = False
    marker_for_empty_txn = False
    if b.magic >= MAGIC_V2:
        can_discard = meta.on_control_batch_read(b) if b.is_control else meta.on_batch_read(b)
        if b.is_control:
            discard_records = can_discard and b.delete_horizon_ms is not None and b.delete_horizon_ms <= now_ms
        else:
            discard_records = can_discard
        last = active.get(b.producer_id) if b.producer_id >= 0 else None
        if last is not None:
            last_data_offset, epoch = last
            if last_data_offset is not None:
                retain_empty = b.last_offset == last_data_offset
            else:
                retain_empty = b.is_control and b.producer_epoch == epoch
        if not retain_empty and discard_records:
            return None
        marker_for_empty_txn = can_discard and b.is_control
    retained: list[RecordTuple] = []
    tombstones = False
    for r in b.records:
        if _retain_record(b, r, discard_records, offset_map, latest, now_ms, retain_legacy_deletes):
            retained.append(r)
            if r[3] is None:
                tombstones = True
    need_horizon = (b.magic >= MAGIC_V2 and (tombstones or marker_for_empty_txn) and b.delete_horizon_ms is None)
    if retained:
        if len(retained) == len(b.records) and not need_horizon:
            return b, data
        nb = _rebuilt(b, retained, now_ms + delete_retention_ms if need_horizon else b.delete_horizon_ms)
        return nb, nb.encode()
    if retain_empty:
        nb = _rebuilt(b, [], b.delete_horizon_ms)
        return nb, nb.encode()
    return None


def _retain_record(b: LogicalBatch, r: RecordTuple, discard_records: bool, offset_map: dict[bytes, int],
                   latest: int, now_ms: int, retain_legacy_deletes: bool) -> bool:
    if discard_records:
        return False
    if b.is_control:
        return True
    if r[0] > latest:
        return True  # pastLatestOffset
    key = r[2]
    if key is None:
        return False  # a compacted topic drops keyless records ("invalid message")
    if r[0] < offset_map.get(key, -1):
        return False
    if r[3] is not None:
        return True
    if b.magic >= MAGIC_V2:
        return b.delete_horizon_ms is None or now_ms < b.delete_horizon_ms
    return retain_legacy_deletes


def _rebuilt(b: LogicalBatch, records: list[RecordTuple], horizon: int | None) -> LogicalBatch:
    """``buildRetainedRecordsInto``: same magic, codec, producer fields and leader epoch; v2 keeps its base
    and last offsets; v0/v1 start at the first retained record."""
    if b.magic < MAGIC_V2:
        return LogicalBatch(b.magic, records[0][0], records, codec=b.codec, timestamp_type=b.timestamp_type,
                            log_append_time=b.log_append_time, level=b.level)
    return LogicalBatch(MAGIC_V2, b.base_offset, records, codec=b.codec, timestamp_type=b.timestamp_type,
                        log_append_time=b.max_timestamp if not records else b.log_append_time,
                        producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                        transactional=b.transactional, control=b.control, leader_epoch=b.leader_epoch,
                        last_offset_override=b.last_offset, delete_horizon_ms=horizon,
                        max_timestamp_override=b.max_timestamp if not records else None, level=b.level)
