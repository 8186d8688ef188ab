"""``kafkatool sample``: write a realistic, deterministic Kafka log dir (library entry point).

Each partition's history is simulated append by append, as producers and a 3.9 broker would have
written it: idempotent producers with per-partition sequences, transactional producers whose
transactions interleave and end with COMMIT/ABORT markers, leader elections (v2 batches carry the
partition leader epoch), a message-format upgrade v0 -> v1 -> v2 part way through a partition, codecs
drawn per batch, LogAppendTime stamped by the broker, rolls at ``segment.bytes``, retention by
``retention.bytes``, a DeleteRecords, and log-cleaner passes over compacted topics. ``sample_log``
writes the files a stopped broker leaves; this module adds ``__consumer_offsets`` commits and the
log-dir root files, all into a staging directory renamed into place at the end.

Same spec and seed -> byte-identical files (names, contents, mtimes).
"""

from __future__ import annotations

import heapq
import json
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkatool.decoders import offset_commit_key, offset_commit_value, partition_for_group
from kafkatool.errors import UsageError
from kafkatool.log.checkpoints import encode_offset_checkpoint
from kafkatool.log.layout import CLEAN_SHUTDOWN_FILE, META_PROPERTIES, TopicPartition
from kafkatool.log.lock import hold_for_write, hold_log_dir, refuse_if_live
from kafkatool.record.batch import MAGIC_V0, MAGIC_V2, NO_TIMESTAMP, TimestampType, increment_sequence
from kafkatool.sample.cleaner import clean
from kafkatool.sample.partition import LogicalBatch, PartitionLog, PartitionSummary, RecordTuple, end_txn_marker
from kafkatool.sample.spec import SampleSpec, TopicSpec, codecs_for_magic, random_uuid, validate
from kafkatool.sample.values import (
    JSON_DOMAINS,
    POOL_BYTES,
    Draws,
    KeyGen,
    ValuePool,
    derive_seed,
    header_pool,
    json_headers,
)
from kafkatool.util import crash
from kafkatool.util.atomic import staged_directory
from kafkatool.util.regular import irregular


@dataclass(frozen=True, slots=True)
class Producer:
    producer_id: int  # -1: a producer without idempotence
    producer_epoch: int
    transactional: bool
    coordinator_epoch: int
    transactional_id: str | None


@dataclass(frozen=True, slots=True)
class SampleResult:
    path: Path
    spec: SampleSpec
    partitions: tuple[PartitionSummary, ...]
    cluster_id: str
    directory_id: str
    broker_epoch: int
    elapsed_s: float

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)


def topic_producers(seed: int, t: TopicSpec) -> list[Producer]:
    """The producers of a topic, the same in every partition (each with its own sequences there)."""
    rng = random.Random(derive_seed(seed, t.name, "producers"))
    out: list[Producer] = []
    used: set[int] = set()
    for k in range(t.producers + t.transactional_producers):
        txn = k >= t.producers
        if not (t.idempotent or txn):
            out.append(Producer(-1, -1, False, -1, None))
            continue
        pid = rng.randrange(1000, 200_000)
        while pid in used:
            pid = rng.randrange(1000, 200_000)
        used.add(pid)
        if txn:
            out.append(Producer(pid, rng.randrange(6), True, rng.randrange(1, 30), f"{t.name}-tx-{k - t.producers}"))
        else:
            out.append(Producer(pid, 0, False, -1, None))
    return out


# ---------------------------------------------------------------------------------------------- data topics

@dataclass(slots=True)
class _ProducerRun:
    producer: Producer
    skew_ms: int
    sequence: int = 0
    in_txn: bool = False
    txn_left: int = 0


class _PartitionSim:
    """Produces one data partition's appends into a ``PartitionLog``."""

    def __init__(self, spec: SampleSpec, t: TopicSpec, partition: int, log: PartitionLog,
                 producers: list[Producer]) -> None:
        self.t = t
        self.log = log
        seed = derive_seed(spec.seed, t.name, partition)
        self.rng = random.Random(seed)
        self.draws = Draws(derive_seed(seed, "draws"))
        self.pool = ValuePool(seed, t.compressible, _pool_size(t)) if t.value_kind == "pool" else None
        self.domain = t.value_kind.split(":", 1)[1] if t.value_kind.startswith("json:") else ""
        width = len(str(max(1, t.key_cardinality - 1)))
        self.keys = KeyGen(seed, t.key_cardinality, t.null_key_fraction, t.key_prefix, width)
        self.header_pool = header_pool(seed, t.headers) if self.pool is not None else []
        self.runs = [_ProducerRun(p, self.rng.randrange(-150, 151)) for p in producers]
        self.clock = spec.start_ms + self.rng.randrange(1000, 60_000)
        self.epoch_changes = sorted(self.rng.random() for _ in range(t.leader_epochs - 1))
        self._epoch = t.first_epoch
        self._next_change = 0  # index into epoch_changes
        self.written = 0
        self.next_clean = t.clean_every_rolls

    def progress(self) -> float:
        t = self.t
        if t.partition_bytes is not None:
            return self.log.appended_bytes / t.partition_bytes
        return self.written / t.records if t.records else 1.0

    def epoch(self, progress: float) -> int:
        """The leader epoch at this point of the history (progress only grows)."""
        changes = self.epoch_changes
        while self._next_change < len(changes) and changes[self._next_change] <= progress:
            self._next_change += 1
            self._epoch += 1
        return self._epoch

    def run(self) -> int:
        """Simulate until the record count (or size) is reached; returns the final leader epoch."""
        t, rng = self.t, self.rng
        eras = t.magics
        p = self.progress()
        while p < 1.0:
            self.clock += 1 + int(rng.expovariate(1.0 / max(1, t.append_interval_ms)))
            magic = eras[min(len(eras) - 1, int(p * len(eras)))]
            epoch = self.epoch(p)
            run = self.runs[rng.randrange(len(self.runs))] if magic == MAGIC_V2 else None
            if run is not None and run.producer.transactional:
                if run.in_txn and run.txn_left == 0:
                    self._marker(run, epoch)
                    continue
                if not run.in_txn:
                    run.in_txn = True
                    run.txn_left = t.txn_batches.draw(rng)
                run.txn_left -= 1
            count = t.batch_records.draw(rng)
            if t.partition_bytes is None:
                count = min(count, t.records - self.written)
            self._data_batch(magic, count, run, epoch)
            self.written += count
            if t.compacted and self.log.rolls >= self.next_clean:
                clean(self.log, self.clock)
                self.next_clean = self.log.rolls + t.clean_every_rolls
            p = self.progress()
        final_epoch = self.epoch(1.0)
        for run in self.runs:
            if run.in_txn:
                self.clock += 1 + rng.randrange(200)
                self._marker(run, final_epoch)
        return final_epoch

    def _marker(self, run: _ProducerRun, epoch: int) -> None:
        p = run.producer
        commit = self.rng.random() >= self.t.abort_fraction
        offset = self.log.next_offset
        self.log.append(end_txn_marker(offset=offset, timestamp=self.clock, producer_id=p.producer_id,
                                       producer_epoch=p.producer_epoch, commit=commit,
                                       coordinator_epoch=p.coordinator_epoch, leader_epoch=epoch), self.clock)
        run.in_txn = False

    def _data_batch(self, magic: int, count: int, run: _ProducerRun | None, epoch: int) -> None:
        t, rng, log = self.t, self.rng, self.log
        base = log.next_offset
        keys = self.keys.keys(count)
        now = self.clock
        if magic == MAGIC_V0:
            stamps = [NO_TIMESTAMP] * count
        else:
            # Producer clock (skewed per producer), records created a few ms apart before the send.
            gap = rng.randrange(3)
            first = now + (run.skew_ms if run is not None else 0) - (count - 1) * gap
            stamps = list(range(first, first + count * gap, gap)) if gap else [first] * count
        values: list[bytes | None]
        if self.pool is not None:
            vb = t.value_bytes
            if vb.low == vb.high:
                values = list(self.pool.fixed(count, vb.low))
            else:
                values = list(self.pool.values([vb.low + x for x in self.draws.below(count, vb.high - vb.low + 1)]))
        else:
            domain = JSON_DOMAINS[self.domain]
            values = [domain(rng, keys[i], base + i, stamps[i] if stamps[i] >= 0 else now) for i in range(count)]
        if t.tombstone_fraction > 0:
            values = [None if rng.random() < t.tombstone_fraction else v for v in values]
        offsets = range(base, base + count)
        records: list[RecordTuple]
        if magic == MAGIC_V2 and t.headers:
            if self.pool is not None:
                hp = self.header_pool
                headers = [hp[i] for i in self.draws.below(count, len(hp))]
            else:
                headers = [json_headers(self.domain, rng, t.headers) for _ in range(count)]
            records = list(zip(offsets, stamps, keys, values, headers, strict=True))
        else:
            records = [(o, ts, k, v, ()) for o, ts, k, v in zip(offsets, stamps, keys, values, strict=True)]
        codecs = codecs_for_magic(t, magic)
        codec = codecs[0] if len(codecs) == 1 else codecs[rng.randrange(len(codecs))]
        lat = t.timestamp_type == TimestampType.LOG_APPEND_TIME and magic > MAGIC_V0
        batch = LogicalBatch(magic, base, records, codec=codec,
                             timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
                             log_append_time=now if lat else NO_TIMESTAMP, level=t.level,
                             max_timestamp_override=now if lat else stamps[-1])
        if magic == MAGIC_V2:
            batch.leader_epoch = epoch
            if run is not None and run.producer.producer_id >= 0:
                p = run.producer
                batch.producer_id, batch.producer_epoch = p.producer_id, p.producer_epoch
                batch.base_sequence = run.sequence
                batch.transactional = p.transactional
                run.sequence = increment_sequence(run.sequence, count)
        vb = t.value_bytes
        if self.pool is not None and vb.low == vb.high and not t.tombstone_fraction:
            payload = vb.low * count
        else:
            payload = sum(len(v) for v in values if v is not None)
        log.uncompressed_bytes += payload + sum(map(len, filter(None, keys)))
        log.append(batch, now)


def _pool_size(t: TopicSpec) -> int:
    """Enough pool that the values of one batch rarely overlap, no more than the data needs (<= 4 MiB)."""
    expected = t.partition_bytes if t.partition_bytes is not None else t.records * t.value_bytes.high
    batch = t.batch_records.high * t.value_bytes.high
    return max(t.value_bytes.high + 1, min(POOL_BYTES, max(256 * 1024, expected, 16 * batch)))


# ---------------------------------------------------------------------------------------------- __consumer_offsets

@dataclass(frozen=True, slots=True)
class GroupPlan:
    """A consumer group committing offsets of ``consumed`` partitions every ``interval_ms``."""

    group: str
    consumed: tuple[PartitionSummary, ...]
    interval_ms: int
    producer: Producer | None = None  # transactional offset commits (TxnOffsetCommit) by this producer
    producer_until: float = 1.0  # ... up to this point of the timeline; plain commits after it
    abort_fraction: float = 0.0
    expire_fraction: float | None = None  # its offsets expire (tombstones) at this point of the timeline
    stop_fraction: float = 1.0  # the group stops committing at this point


def demo_groups(partitions: list[PartitionSummary], producers: dict[str, list[Producer]]) -> list[GroupPlan]:
    by_topic: dict[str, list[PartitionSummary]] = {}
    for p in partitions:
        by_topic.setdefault(p.topic, []).append(p)
    plans = []

    def add(group: str, topics: tuple[str, ...], interval: int, **kw: object) -> None:
        consumed = tuple(p for t in topics for p in by_topic.get(t, ()))
        if consumed:
            plans.append(GroupPlan(group, consumed, interval, **kw))  # type: ignore[arg-type]

    txn = [p for p in producers.get("payments", []) if p.transactional]
    add("order-fulfilment", ("orders",), 5_000)
    # The exactly-once app that reads orders and writes payments commits its offsets in its transactions,
    # until an operator resets the group's offsets (kafka-consumer-groups --reset-offsets: plain commits) and
    # it carries on at-least-once: the cleaner then keeps the producer's last batch as an empty batch.
    add("payment-processor", ("orders",), 10_000, producer=txn[0] if txn else None, producer_until=0.6,
        abort_fraction=0.2)
    add("clickstream-analytics", ("clickstream",), 5_000)
    add("legacy-etl", ("legacy-events", "sensors-2016", "sensors-2017"), 30_000, stop_fraction=0.8)
    add("audit-archiver", ("audit-log",), 5_000)
    add("weekly-report", ("orders", "payments"), 60_000, stop_fraction=0.3, expire_fraction=0.75)
    return plans


def _simulate_offsets(spec: SampleSpec, t: TopicSpec, partition: int, log: PartitionLog,
                      groups: list[GroupPlan], span: tuple[int, int]) -> int:
    """Offset commits of the groups coordinated by this partition, as ``GroupMetadataManager`` appends them."""
    rng = random.Random(derive_seed(spec.seed, t.name, partition))
    start, end = span
    changes = sorted(start + int(rng.random() * (end - start)) for _ in range(t.leader_epochs - 1))

    def epoch_at(ms: int) -> int:
        return t.first_epoch + sum(1 for c in changes if c <= ms)

    mine = [g for g in groups if partition_for_group(g.group, t.partitions) == partition]
    events: list[tuple[int, int, str, GroupPlan, bool]] = []  # (time, tiebreak, kind, group, commit?)
    seq = 0
    for g in mine:
        stop = start + int(g.stop_fraction * (end - start))
        ms = start + rng.randrange(g.interval_ms)
        while ms < stop:
            events.append((ms, seq, "commit", g, True))
            seq += 1
            ms += g.interval_ms + rng.randrange(-g.interval_ms // 10, g.interval_ms // 10 + 1)
        if g.expire_fraction is not None:
            events.append((start + int(g.expire_fraction * (end - start)), seq, "expire", g, True))
            seq += 1
    heapq.heapify(events)
    last_ms = start
    next_clean = t.clean_every_rolls
    while events:
        ms, _, kind, g, commit = heapq.heappop(events)
        last_ms = ms
        epoch = epoch_at(ms)
        base = log.next_offset
        if kind == "marker":
            assert g.producer is not None
            p = g.producer
            log.append(end_txn_marker(offset=base, timestamp=ms, producer_id=p.producer_id,
                                      producer_epoch=p.producer_epoch, commit=commit,
                                      coordinator_epoch=p.coordinator_epoch, leader_epoch=epoch), ms)
        elif kind == "expire":
            records: list[RecordTuple] = [
                (base + i, ms, offset_commit_key(g.group, c.topic, c.partition), None, ())
                for i, c in enumerate(g.consumed)]
            log.append(LogicalBatch(MAGIC_V2, base, records, leader_epoch=epoch), ms)
        else:
            records = []
            for i, c in enumerate(g.consumed):
                committed, leader_epoch = _committed(c, ms, rng)
                records.append((base + i, ms, offset_commit_key(g.group, c.topic, c.partition),
                                offset_commit_value(committed, leader_epoch=leader_epoch, commit_timestamp=ms), ()))
            # GroupMetadataManager builds commits with baseSequence 0, also without a producer id.
            batch = LogicalBatch(MAGIC_V2, base, records, base_sequence=0, leader_epoch=epoch)
            if g.producer is not None and ms < start + g.producer_until * (end - start):
                batch.producer_id, batch.producer_epoch = g.producer.producer_id, g.producer.producer_epoch
                batch.transactional = True
                outcome = rng.random() >= g.abort_fraction
                heapq.heappush(events, (ms + 5 + rng.randrange(60), seq, "marker", g, outcome))
                seq += 1
            log.append(batch, ms)
            log.uncompressed_bytes += sum(len(r[2] or b"") + len(r[3] or b"") for r in records)
        if log.rolls >= next_clean:
            clean(log, ms)
            next_clean = log.rolls + t.clean_every_rolls
    return epoch_at(last_ms)


def _committed(c: PartitionSummary, ms: int, rng: random.Random) -> tuple[int, int]:
    """A plausible committed position of partition ``c`` at ``ms``: linear between its first and last
    append, a few records behind, with the leader epoch of that offset (-1 for legacy data)."""
    span = max(1, c.last_append_ms - c.first_append_ms)
    frac = min(1.0, max(0.0, (ms - c.first_append_ms) / span))
    offset = c.log_start_offset + int(frac * (c.log_end_offset - c.log_start_offset)) - rng.randrange(20)
    offset = max(c.log_start_offset, min(c.log_end_offset, offset))
    epoch = -1
    for e in c.epochs:
        if e.start_offset <= offset:
            epoch = e.epoch
    if c.magics and c.magics[-1] < MAGIC_V2:
        epoch = -1
    return offset, epoch


# ---------------------------------------------------------------------------------------------- the log dir

def generate_sample(path: str | os.PathLike[str], spec: SampleSpec, *,
                    progress: Callable[[PartitionSummary], None] | None = None, fsync: bool = True) -> SampleResult:
    """Write the sample log dir at ``path`` (which must not exist or be an empty directory)."""
    validate(spec)
    started = time.perf_counter()
    dest = Path(path)
    _check_destination(dest)
    # Any log dir above DEST stays locked while we write (a broker starting meanwhile fails to lock it).
    with hold_for_write(dest), \
            staged_directory(dest, fsync=fsync, guard=hold_log_dir, on_durable=crash.point) as staging:
        result = _generate_into(staging, spec, progress)
    return SampleResult(dest, spec, result[0], result[1], result[2], result[3], time.perf_counter() - started)


def _check_destination(dest: Path) -> None:
    kind = irregular(dest)  # a FIFO, a device, a dangling symlink or a symlink loop (a regular file: below)
    if kind is not None and kind != "a directory":
        raise UsageError(f"is {kind}, not a directory (nothing was changed)", path=dest)
    if not dest.exists():
        return
    if not dest.is_dir():
        raise UsageError("exists and is not a directory (nothing was changed)", path=dest)
    refuse_if_live(dest)
    if any(dest.iterdir()):
        raise UsageError("is not empty: kafkatool sample writes only into a new or empty directory "
                         "(nothing was changed)", path=dest)


def _generate_into(root: Path, spec: SampleSpec, progress: Callable[[PartitionSummary], None] | None
                   ) -> tuple[tuple[PartitionSummary, ...], str, str, int]:
    summaries: list[PartitionSummary] = []
    producers = {t.name: topic_producers(spec.seed, t) for t in spec.topics}
    data_topics = [t for t in spec.topics if t.value_kind != "offsets"]
    for t in [*data_topics, *(t for t in spec.topics if t.value_kind == "offsets")]:
        topic_id = random_uuid(derive_seed(spec.seed, t.name, "topic-id"))
        if t.value_kind == "offsets":
            span = (spec.start_ms, max((s.last_append_ms for s in summaries), default=spec.start_ms + 3_600_000))
            groups = demo_groups(summaries, producers)
        for partition in range(t.partitions):
            log = PartitionLog(root / str(TopicPartition(t.name, partition)), t.name, partition, topic_id,
                               segment_bytes=t.segment_bytes, index_interval_bytes=t.index_interval_bytes,
                               keep_batches=t.compacted, start_ms=spec.start_ms)
            try:
                if t.value_kind == "offsets":
                    final_epoch = _simulate_offsets(spec, t, partition, log, groups, span)
                else:
                    sim = _PartitionSim(spec, t, partition, log, producers[t.name])
                    final_epoch = sim.run()
                    if t.retention_bytes is not None:
                        log.retention_bytes(t.retention_bytes)
                    for p, fraction in t.delete_records:
                        if p == partition:
                            log.delete_records(int(log.next_offset * fraction))
                # KRaft: becoming leader assigns the current epoch at the log end offset (makeLeader).
                log.assign_epoch(final_epoch, log.next_offset)
                summary = log.finish(clean_shutdown=spec.clean_shutdown, now_ms=log.now_ms + 1000)
            finally:
                log.close_files()
            summaries.append(summary)
            if progress is not None:
                progress(summary)
    cluster_id = random_uuid(derive_seed(spec.seed, "cluster-id"))
    directory_id = random_uuid(derive_seed(spec.seed, "directory-id"))
    broker_epoch = 20 + random.Random(derive_seed(spec.seed, "broker-epoch")).randrange(5000)
    end_ms = max((s.last_append_ms for s in summaries), default=spec.start_ms) + 5000
    _write_root_files(root, spec, summaries, cluster_id, directory_id, broker_epoch, end_ms)
    os.utime(root, ns=(end_ms * 1_000_000, end_ms * 1_000_000))
    return tuple(summaries), cluster_id, directory_id, broker_epoch


def _write_root_files(root: Path, spec: SampleSpec, parts: list[PartitionSummary], cluster_id: str,
                      directory_id: str, broker_epoch: int, end_ms: int) -> None:
    def tp(p: PartitionSummary) -> TopicPartition:
        return TopicPartition(p.topic, p.partition)

    files: dict[str, bytes] = {
        # Properties.store(writer, ""): an empty comment line, the date line, then KRaft's keys.
        META_PROPERTIES: (f"#\n#{_java_date(spec.start_ms - 86_400_000)}\nnode.id={spec.node_id}\n"
                          f"directory.id={directory_id}\nversion=1\ncluster.id={cluster_id}\n").encode(),
        "recovery-point-offset-checkpoint": encode_offset_checkpoint({tp(p): p.recovery_point for p in parts}),
        "replication-offset-checkpoint": encode_offset_checkpoint({tp(p): p.high_watermark for p in parts}),
        # Only logs whose start offset is above their first segment's base are listed (LogManager 3.x).
        "log-start-offset-checkpoint": encode_offset_checkpoint(
            {tp(p): p.log_start_offset for p in parts if p.log_start_offset > p.first_segment_base}),
        # CheckpointFile creates the file empty; the cleaner writes it once it has cleaned something.
        "cleaner-offset-checkpoint": b"" if not any(p.cleaner_checkpoint is not None for p in parts) else
        encode_offset_checkpoint({tp(p): p.cleaner_checkpoint for p in parts if p.cleaner_checkpoint is not None}),
    }
    if spec.clean_shutdown:
        # CleanShutdownFileHandler (3.9): Jackson-serialised {"version":0,"brokerEpoch":N}, no newline.
        files[CLEAN_SHUTDOWN_FILE] = json.dumps({"version": 0, "brokerEpoch": broker_epoch},
                                                separators=(",", ":")).encode()
    for name, data in files.items():
        p = root / name
        p.write_bytes(data)
        os.utime(p, ns=(end_ms * 1_000_000, end_ms * 1_000_000))


def _java_date(ms: int) -> str:
    """``java.util.Date.toString`` in UTC: ``Sun Jun 02 08:00:00 UTC 2024``."""
    import datetime as dt

    d = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return d.strftime("%a %b %d %H:%M:%S UTC %Y")


def iter_files(root: Path) -> Iterator[Path]:
    """Every file under ``root``, in a stable order (for checksums and listings)."""
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            yield Path(dirpath) / name


__all__ = ["GroupPlan", "Producer", "SampleResult", "generate_sample", "iter_files", "topic_producers"]
