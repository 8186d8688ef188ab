"""ListOffsets as a Kafka 3.9 leader answers it, from a partition's files.

``Partition.fetchOffsetForTimestamp`` and ``UnifiedLog.fetchOffsetByTimestamp``:

* ``earliest`` (-2): the log start offset, its leader epoch from ``leader-epoch-checkpoint``
  (``LeaderEpochFileCache.epochForOffset``), timestamp -1;
* ``latest`` (-1): the last fetchable offset (the high watermark for a read_uncommitted consumer), the leader's
  epoch (offline: the latest one in ``leader-epoch-checkpoint``), timestamp -1;
* ``max-timestamp`` (-3, KIP-734): the segment with the largest ``maxTimestampSoFar`` (the first such), in it
  the first batch from the ``.index`` lookup of that timestamp's offset whose max timestamp is it, in that
  batch the first record with that timestamp (``RecordBatch.offsetOfMaxTimestamp``; none in v0);
* a timestamp T: the first segment whose largest timestamp is >= T; in it ``LogSegment.findOffsetByTimestamp``:
  the ``.timeindex`` entry at or below T, the ``.index`` position of that entry's offset (at least the log
  start offset), then ``FileRecords.searchForTimestamp``: the first batch whose max timestamp is >= T, its first
  record with timestamp >= T and offset >= the log start offset; that record's timestamp, offset and the
  batch's leader epoch (none in v0/v1).

A found offset at or past the last fetchable offset is no answer (offset -1, timestamp -1), as the leader
filters it. A segment's largest timestamp is its ``.timeindex``'s last entry (what the broker reads at load
after a clean shutdown; the broker appends it when a segment rolls or closes), else the largest of its batch
headers (what recovery computes).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkatool.errors import KafkaToolError
from kafkatool.log.checkpoints import EpochEntry
from kafkatool.log.index import TimestampOffset, load_offset_lookup, lookup_timestamp, read_time_index
from kafkatool.log.layout import Segment
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.file_records import FileRecords

EARLIEST = -2  # ListOffsetsRequest.EARLIEST_TIMESTAMP
LATEST = -1  # ListOffsetsRequest.LATEST_TIMESTAMP
MAX_TIMESTAMP = -3  # ListOffsetsRequest.MAX_TIMESTAMP (KIP-734)
NO_TIMESTAMP = -1
UNKNOWN_OFFSET = -1
NO_PARTITION_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """``FileRecords.TimestampAndOffset``: what the partition's ListOffsets response carries."""

    timestamp: int
    offset: int
    leader_epoch: int | None


UNKNOWN = TimestampAndOffset(NO_TIMESTAMP, UNKNOWN_OFFSET, None)


def epoch_for_offset(epochs: list[EpochEntry], offset: int) -> int | None:
    """``LeaderEpochFileCache.epochForOffset``."""
    previous = None
    for e in epochs:
        if e.start_offset == offset:
            return e.epoch
        if e.start_offset > offset:
            return previous
        previous = e.epoch
    return previous


def _epoch(batch: object) -> int | None:
    if type(batch) is DefaultRecordBatch:
        e = int(batch.h.partition_leader_epoch)
        return None if e == NO_PARTITION_LEADER_EPOCH else e
    return None


def max_timestamp_so_far(seg: Segment) -> tuple[int, int]:
    """``LogSegment.readMaxTimestampAndOffsetSoFar``: (timestamp, offset) of the ``.timeindex``'s last entry, else
    from the batch headers; (-1, base offset) for a segment without timestamps."""
    if seg.time_index.exists():
        try:
            entries = read_time_index(seg.time_index, seg.base_offset).entries
        except KafkaToolError:
            entries = []
        if entries:
            last = entries[-1]
            return int(last.timestamp), int(last.offset)  # type: ignore[union-attr]
    best = (NO_TIMESTAMP, seg.base_offset)
    if seg.log.exists():
        with FileRecords(seg.log) as fr:
            try:
                for batch in fr.batches():
                    ts = int(batch.max_timestamp)
                    if ts > best[0]:
                        best = (ts, int(batch.last_offset))
            except KafkaToolError:
                pass
    return best


def search_for_timestamp(seg: Segment, target: int, start_position: int, start_offset: int,
                         limit: int | None) -> TimestampAndOffset | None:
    """``FileRecords.searchForTimestamp``."""
    with FileRecords(seg.log) as fr:
        for batch in fr.batches(start_position):
            if int(batch.max_timestamp) >= target:
                for r in batch.records(limit=limit):
                    if r.timestamp >= target and r.offset >= start_offset:
                        return TimestampAndOffset(r.timestamp, r.offset, _epoch(batch))
    return None


def find_offset_by_timestamp(seg: Segment, target: int, start_offset: int,
                             limit: int | None) -> TimestampAndOffset | None:
    """``LogSegment.findOffsetByTimestamp``."""
    entries: list[TimestampOffset] = []
    if seg.time_index.exists():
        try:
            entries = read_time_index(seg.time_index, seg.base_offset).entries  # type: ignore[assignment]
        except KafkaToolError:
            entries = []
    ts_offset = lookup_timestamp(entries, target, seg.base_offset)
    position = 0
    if seg.index.exists():
        position = load_offset_lookup(seg.index, seg.base_offset).position_for(max(ts_offset.offset, start_offset))
    return search_for_timestamp(seg, target, position, start_offset, limit)


def offset_of_max_timestamp(batch: object, limit: int | None) -> int | None:
    """``RecordBatch.offsetOfMaxTimestamp``: the first record whose timestamp is the batch's max (none in v0)."""
    if int(batch.magic) == 0:  # type: ignore[attr-defined]
        return None
    ts = int(batch.max_timestamp)  # type: ignore[attr-defined]
    for r in batch.records(limit=limit):  # type: ignore[attr-defined]
        if r.timestamp == ts:
            return int(r.offset)
    return None


def fetch_offset_by_timestamp(segments: list[Segment], target: int, *, log_start_offset: int,
                              last_fetchable_offset: int, epochs: list[EpochEntry],
                              limit: int | None = None) -> TimestampAndOffset:
    """What the leader answers for ``target`` (EARLIEST, LATEST, MAX_TIMESTAMP or a timestamp >= 0)."""
    if target == EARLIEST:
        return TimestampAndOffset(NO_TIMESTAMP, log_start_offset, epoch_for_offset(epochs, log_start_offset))
    if target == LATEST:
        return TimestampAndOffset(NO_TIMESTAMP, last_fetchable_offset, epochs[-1].epoch if epochs else None)
    found: TimestampAndOffset | None = None
    if target == MAX_TIMESTAMP:
        if segments:
            maxes = [max_timestamp_so_far(s) for s in segments]
            i = max(range(len(segments)), key=lambda k: maxes[k][0])  # the first of the largest
            seg, (ts, off) = segments[i], maxes[i]
            position = load_offset_lookup(seg.index, seg.base_offset).position_for(off) if seg.index.exists() else 0
            with FileRecords(seg.log) as fr:
                for batch in fr.batches(position):
                    if int(batch.max_timestamp) == ts:
                        o = offset_of_max_timestamp(batch, limit)
                        found = None if o is None else TimestampAndOffset(ts, o, _epoch(batch))
                        break
    else:
        for seg in segments:
            if max_timestamp_so_far(seg)[0] >= target:
                found = find_offset_by_timestamp(seg, target, log_start_offset, limit)
                break
    if found is None or found.offset >= last_fetchable_offset:
        return UNKNOWN
    return found
