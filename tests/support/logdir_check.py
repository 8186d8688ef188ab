"""An independent checker of a Kafka log dir's consistency, for tests (``kafkatool sample`` output above all).

It reads every file back with the library's readers and re-derives, from the batches alone, what the
other files must say: offsets contiguous (gaps only where compaction is allowed), segment names equal to
their first offsets, indexes equal to ``LogSegment.recover`` rebuilds, ``.txnindex`` entries equal to
the aborted transactions (first offset, marker offset, last stable offset) completed in each segment,
producer snapshots equal to the producer state at the log end, and a ``leader-epoch-checkpoint`` that
agrees with every v2 batch's partition leader epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.log.checkpoints import read_leader_epoch_checkpoint, read_partition_metadata
from kafkatool.log.index import (
    encode_offset_index,
    encode_time_index,
    preallocated_length,
    read_offset_index,
    read_time_index,
)
from kafkatool.log.layout import PartitionDir
from kafkatool.log.recovery import recover_segment
from kafkatool.log.snapshot import ProducerSnapshotEntry, read_snapshot
from kafkatool.log.txn_index import AbortedTxn, read_txn_index
from kafkatool.record.batch import MAGIC_V2
from kafkatool.record.default_records import DefaultRecordBatch, parse_control_type, parse_end_txn_marker
from kafkatool.record.file_records import FileRecords


@dataclass
class BatchFact:
    segment: int
    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    offsets: list[int]
    codec: int
    timestamp_type: int
    max_timestamp: int
    timestamps: list[int]
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    transactional: bool
    control: int | None  # ControlRecordType for control batches
    coordinator_epoch: int
    leader_epoch: int
    delete_horizon: int | None
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[int]  # header count per record


@dataclass
class PartitionFacts:
    path: Path
    segments: list[int]
    sizes: list[int]
    batches: list[BatchFact] = field(default_factory=list)
    log_end_offset: int = 0
    aborted: dict[int, list[AbortedTxn]] = field(default_factory=dict)
    topic_id: str = ""

    @property
    def data_batches(self) -> list[BatchFact]:
        return [b for b in self.batches if b.control is None]

    @property
    def records(self) -> int:
        return sum(len(b.offsets) for b in self.data_batches)


def read_partition(path: Path) -> PartitionFacts:
    pd = PartitionDir.scan(path)
    assert not pd.pending, f"{path}: leftover {pd.pending}"
    assert {p.name for p in pd.other} <= {"leader-epoch-checkpoint", "partition.metadata"}, pd.other
    facts = PartitionFacts(path, [s.base_offset for s in pd.segments], [s.log.stat().st_size for s in pd.segments])
    for seg in pd.segments:
        with FileRecords(seg.log) as fr:
            stream = fr.batches()
            for b in stream:
                b.ensure_valid()
                recs = b.records()
                control = coordinator = None
                if b.is_control:
                    assert isinstance(b, DefaultRecordBatch) and len(recs) == 1
                    control = int(parse_control_type(recs[0].key))
                    coordinator = parse_end_txn_marker(recs[0].value)
                facts.batches.append(BatchFact(
                    seg.base_offset, b.position, b.size, b.magic,
                    recs[0].offset if recs and b.magic < MAGIC_V2 else b.base_offset, b.last_offset,
                    [r.offset for r in recs], b.codec_id, int(b.timestamp_type), b.max_timestamp,
                    [r.timestamp for r in recs], b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence,
                    b.is_transactional, control, -1 if coordinator is None else coordinator,
                    b.partition_leader_epoch, b.delete_horizon_ms, [r.key for r in recs], [r.value for r in recs],
                    [len(r.headers) for r in recs]))
            assert stream.end_state is not None and stream.end_state.kind == "end", (seg.log, stream.end_state)
        if seg.txn_index.exists():
            facts.aborted[seg.base_offset] = read_txn_index(seg.txn_index)
    facts.log_end_offset = facts.batches[-1].last_offset + 1 if facts.batches else facts.segments[-1]
    facts.topic_id = read_partition_metadata(path / "partition.metadata").topic_id
    return facts


def check_partition(path: Path, *, compacted: bool, segment_bytes: int | None = None, log_start_offset: int = 0,
                    index_interval_bytes: int = 4096, preallocated_active: bool = False,
                    log_end_offset: int | None = None) -> PartitionFacts:
    """Every consistency rule above; returns what was read for further assertions."""
    f = read_partition(path)
    leo = f.log_end_offset if log_end_offset is None else log_end_offset
    _check_offsets(f, compacted)
    if segment_bytes is not None:
        for base, size in zip(f.segments, f.sizes, strict=True):
            biggest = max((b.size for b in f.batches if b.segment == base), default=0)
            assert size <= max(segment_bytes, biggest), f"segment {base} of {size} bytes > {segment_bytes}"
    _check_indexes(f, index_interval_bytes, preallocated_active)
    if not compacted:
        assert expected_aborted(f) == f.aborted, (path, expected_aborted(f), f.aborted)
    else:
        _check_compacted_txn_index(f)
    _check_snapshots(f, leo, compacted=compacted, clean=not preallocated_active, truncated=log_start_offset > 0)
    _check_epochs(f, compacted=compacted, log_start_offset=log_start_offset, leo=leo)
    return f


def _check_offsets(f: PartitionFacts, compacted: bool) -> None:
    prev_last = None
    for b in f.batches:
        if b.offsets:
            assert b.offsets == sorted(set(b.offsets)), (f.path, b.position, "record offsets not increasing")
            assert b.offsets[-1] <= b.last_offset
        if b.magic >= MAGIC_V2:
            assert all(b.base_offset <= o for o in b.offsets)
        if prev_last is not None:
            assert b.base_offset > prev_last, (f.path, b.segment, b.position, b.base_offset, prev_last)
            if not compacted:
                assert b.base_offset == prev_last + 1, (f.path, b.segment, b.position, "offset gap")
        if not compacted:
            assert b.offsets == list(range(b.base_offset, b.last_offset + 1)), (f.path, b.position, "gap in batch")
        prev_last = b.last_offset
    for i, base in enumerate(f.segments):
        mine = [b for b in f.batches if b.segment == base]
        if mine:
            if compacted:
                assert base <= mine[0].base_offset
            else:
                assert base == mine[0].base_offset, (f.path, base, mine[0].base_offset)
        if i + 1 < len(f.segments) and mine:
            assert f.segments[i + 1] > mine[-1].last_offset
            if not compacted:
                assert f.segments[i + 1] == mine[-1].last_offset + 1


def _check_indexes(f: PartitionFacts, interval: int, preallocated_active: bool) -> None:
    for i, base in enumerate(f.segments):
        log = f.path / f"{base:020d}.log"
        rec = recover_segment(log, base, index_interval_bytes=interval, verify=True)
        assert rec.error is None and rec.truncated_bytes == 0, (log, rec.error, rec.stop)
        idx, tidx = log.with_suffix(".index"), log.with_suffix(".timeindex")
        if preallocated_active and i == len(f.segments) - 1:
            assert idx.stat().st_size == preallocated_length(8) and tidx.stat().st_size == preallocated_length(12)
            assert read_offset_index(idx).entries == rec.offset_entries
            times = read_time_index(tidx).entries
            assert times == rec.time_entries or times == rec.time_entries[:-1], (tidx, times, rec.time_entries)
        else:
            assert idx.read_bytes() == encode_offset_index(rec.offset_entries, base), idx
            assert tidx.read_bytes() == encode_time_index(rec.time_entries, base), tidx


def expected_aborted(f: PartitionFacts) -> dict[int, list[AbortedTxn]]:
    """Aborted transactions by the segment of their ABORT marker, with ``lastStableOffset`` as the broker
    computes it: the first offset of the earliest other open transaction, else the marker offset + 1."""
    ongoing: dict[int, int] = {}
    out: dict[int, list[AbortedTxn]] = {}
    for b in f.batches:
        if b.magic < MAGIC_V2 or b.producer_id < 0:
            continue
        if b.control is None:
            if b.transactional and b.producer_id not in ongoing:
                ongoing[b.producer_id] = b.base_offset
            continue
        first = ongoing.pop(b.producer_id, None)
        if first is not None and b.control == 0:
            others = list(ongoing.values())
            lso = min(others) if others else b.base_offset + 1
            out.setdefault(b.segment, []).append(AbortedTxn(b.producer_id, first, b.base_offset, lso))
    return out


def _check_compacted_txn_index(f: PartitionFacts) -> None:
    aborts = {(b.segment, b.producer_id, b.base_offset) for b in f.batches if b.control == 0}
    for seg, entries in f.aborted.items():
        for e in entries:
            assert (seg, e.producer_id, e.last_offset) in aborts, (f.path, seg, e)
            assert e.first_offset <= e.last_offset and e.last_stable_offset <= e.last_offset + 1


def expected_producer_state(f: PartitionFacts) -> dict[int, ProducerSnapshotEntry]:
    """Producer state after the last batch, as ProducerStateManager keeps it."""
    st: dict[int, list[int]] = {}  # pid -> [epoch, last seq, last offset, delta, ts, coordinator epoch, txn first]
    for b in f.batches:
        if b.magic < MAGIC_V2 or b.producer_id < 0:
            continue
        e = st.setdefault(b.producer_id, [b.producer_epoch, -1, -1, 0, -1, -1, -1])
        if b.control is not None:
            e[0], e[4], e[5], e[6] = b.producer_epoch, b.max_timestamp, b.coordinator_epoch, -1
        else:
            e[0:5] = [b.producer_epoch, b.last_sequence, b.last_offset, b.last_offset - b.base_offset, b.max_timestamp]
            if b.transactional and e[6] < 0:
                e[6] = b.base_offset
    return {pid: ProducerSnapshotEntry(pid, e[0], e[1], e[2], e[3], e[4], e[5], e[6]) for pid, e in st.items()}


def _check_snapshots(f: PartitionFacts, leo: int, *, compacted: bool, clean: bool, truncated: bool) -> None:
    names = {int(p.name.split(".")[0]) for p in f.path.glob("*.snapshot")}
    expected = {b for b in f.segments if b > 0} | ({leo} if clean else set())
    assert names == expected, (f.path, sorted(names), sorted(expected))
    for n in names:
        read_snapshot(f.path / f"{n:020d}.snapshot")
    if clean and not compacted:
        got = {e.producer_id: e for e in read_snapshot(f.path / f"{leo:020d}.snapshot")}
        want = expected_producer_state(f)
        if truncated:
            got = {pid: e for pid, e in got.items() if pid in want}
        assert got == want, (f.path, got, want)


def _check_epochs(f: PartitionFacts, *, compacted: bool, log_start_offset: int, leo: int) -> None:
    entries = read_leader_epoch_checkpoint(f.path / "leader-epoch-checkpoint")
    for a, b in zip(entries, entries[1:], strict=False):
        assert a.epoch < b.epoch and a.start_offset < b.start_offset, (f.path, entries)
    if entries:
        assert entries[0].start_offset >= log_start_offset and entries[-1].start_offset <= leo
    v2 = [b for b in f.batches if b.magic >= MAGIC_V2 and b.last_offset >= log_start_offset]
    for b in v2:
        covering = [e for e in entries if e.start_offset <= max(b.base_offset, log_start_offset)]
        assert covering and covering[-1].epoch == b.leader_epoch, (f.path, b.base_offset, b.leader_epoch, entries)
    if not compacted:
        starts = {(e.epoch, e.start_offset) for e in entries}
        for prev, b in zip(v2, v2[1:], strict=False):
            if b.leader_epoch != prev.leader_epoch:
                assert (b.leader_epoch, b.base_offset) in starts, (f.path, b.base_offset, entries)
