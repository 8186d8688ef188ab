"""What a log dir holds, per partition, as a format upgrade sees it (``kafkatool canary plan``).

One walk over every batch of every segment (``FileRecords`` stop rules): bytes, batches and records per
(magic, codec); timestamp types; records without a timestamp (all of v0, and v1/v2 records stamped -1);
zstd batches (unreadable for Fetch < v10, KIP-110); transactional and idempotent data; control batches
(COMMIT/ABORT markers); the largest batch against ``max.message.bytes``; and the evidence that a topic is
compacted. Legacy (v0/v1) *compressed* wrappers are decompressed to count their records; v2 batches are
counted from their 61-byte headers.

How a topic is known to be compacted offline (nothing in a log dir stores ``cleanup.policy``), each piece
of evidence is listed in the report:

* ``cleaner-offset-checkpoint`` lists the partition: the log cleaner has cleaned it (it only cleans
  compacted logs, and ``compact,delete`` ones);
* offset gaps inside the log: between consecutive batches, inside a v2 batch (``recordsCount`` below
  ``lastOffsetDelta + 1``, the cleaner keeps the delta) or inside a legacy compressed wrapper; retention
  and DeleteRecords only ever remove a prefix, so a gap after the first batch is the cleaner's;
* a v2 batch with the delete-horizon flag (KIP-534, set only by the cleaner);
* an internal topic whose policy is fixed to compact (``__consumer_offsets``, ``__transaction_state``);
* the operator's word (``InventoryOptions.compacted_topics``). A compacted topic the cleaner has not
  touched yet looks like any other topic on disk and must be declared.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.constants import DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.errors import InputError, KafkaToolError
from kafkatool.log.checkpoints import read_offset_checkpoint, read_properties
from kafkatool.log.layout import META_PROPERTIES, LogDir, PartitionDir, TopicPartition, is_log_dir, resolve_inputs
from kafkatool.record.batch import MAGIC_V0, MAGIC_V2, NO_TIMESTAMP, TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import RECORD_BATCH_OVERHEAD, DefaultRecordBatch, parse_control_type
from kafkatool.record.file_records import FileRecords
from kafkatool.record.legacy_records import LegacyRecordBatch
from kafkatool.record.varint import size_of_varint
from kafkatool.util.printable import shown

INTERNAL_COMPACTED_TOPICS = ("__consumer_offsets", "__transaction_state")
METADATA_TOPIC = "__cluster_metadata"  # KRaft's own log: not a data topic, never converted
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


@dataclass(slots=True)
class FormatCount:
    magic: int
    codec: str
    batches: int = 0
    records: int = 0
    bytes: int = 0


@dataclass(slots=True)
class Count:
    batches: int = 0
    records: int = 0
    bytes: int = 0

    def add(self, records: int, size: int) -> None:
        self.batches += 1
        self.records += records
        self.bytes += size


@dataclass(slots=True)
class PartitionInventory:
    """One partition as the upgrade sees it. Offsets are absolute; sizes include the 12-byte log overhead."""

    name: str
    topic: str
    partition: int
    path: str
    max_message_bytes: int
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int = 0
    log_start_offset: int | None = None  # first record offset on disk
    log_end_offset: int | None = None
    formats: dict[str, FormatCount] = field(default_factory=dict)  # "v1-gzip" -> counts
    timestamp_types: dict[str, Count] = field(default_factory=dict)  # "CreateTime" -> counts
    v0: Count = field(default_factory=Count)  # v0 data: no timestamps at all
    records_without_timestamp: int = 0  # v0 records, plus v1/v2 records stamped -1
    zstd: Count = field(default_factory=Count)
    transactional: Count = field(default_factory=Count)  # data batches (markers are control batches)
    idempotent: Count = field(default_factory=Count)  # producer id set, not transactional
    control: dict[str, int] = field(default_factory=dict)  # "COMMIT"/"ABORT"/... -> batches
    legacy: Count = field(default_factory=Count)  # v0 + v1
    legacy_segments: list[int] = field(default_factory=list)  # base offsets of segments holding v0/v1 data
    last_legacy_offset: int | None = None
    first_v2_offset: int | None = None
    last_batch_magic: int | None = None
    largest_batch: int = 0
    largest_batch_offset: int | None = None
    largest_batch_magic: int | None = None
    oversized_batches: int = 0  # > max_message_bytes
    largest_legacy_message_as_v2: int = 0  # an uncompressed legacy message rewritten as its own v2 batch
    legacy_messages_over_limit_as_v2: int = 0
    offset_gaps: int = 0
    delete_horizon_batches: int = 0
    cleaned_to: int | None = None  # cleaner-offset-checkpoint entry
    compaction_evidence: list[str] = field(default_factory=list)
    pending_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def compacted(self) -> bool:
        return bool(self.compaction_evidence)

    @property
    def magics(self) -> list[int]:
        return sorted({f.magic for f in self.formats.values()})

    @property
    def codecs(self) -> list[str]:
        return sorted({f.codec for f in self.formats.values()})

    @property
    def has_legacy(self) -> bool:
        return self.legacy.batches > 0

    def as_dict(self) -> dict[str, Any]:
        def cnt(c: Count) -> dict[str, int]:
            return {"batches": c.batches, "records": c.records, "bytes": c.bytes}

        return {
            "type": "partition", "topic": self.topic, "partition": self.partition, "path": self.path,
            "segments": self.segments, "bytes": self.bytes, "batches": self.batches, "records": self.records,
            "log_start_offset": self.log_start_offset, "log_end_offset": self.log_end_offset,
            "magics": self.magics, "codecs": self.codecs,
            "formats": [{"magic": f.magic, "codec": f.codec, "batches": f.batches, "records": f.records,
                         "bytes": f.bytes} for f in sorted(self.formats.values(), key=lambda f: (f.magic, f.codec))],
            "timestamp_types": {k: cnt(v) for k, v in sorted(self.timestamp_types.items())},
            "v0": cnt(self.v0), "records_without_timestamp": self.records_without_timestamp,
            "zstd": cnt(self.zstd), "transactional": cnt(self.transactional), "idempotent": cnt(self.idempotent),
            "control_batches": dict(sorted(self.control.items())),
            "legacy": cnt(self.legacy), "legacy_segments": self.legacy_segments,
            "last_legacy_offset": self.last_legacy_offset, "first_v2_offset": self.first_v2_offset,
            "last_batch_magic": self.last_batch_magic,
            "largest_batch": {"bytes": self.largest_batch, "offset": self.largest_batch_offset,
                              "magic": self.largest_batch_magic},
            "max_message_bytes": self.max_message_bytes, "oversized_batches": self.oversized_batches,
            "largest_legacy_message_as_v2": self.largest_legacy_message_as_v2,
            "legacy_messages_over_limit_as_v2": self.legacy_messages_over_limit_as_v2,
            "compacted": self.compacted, "compaction_evidence": self.compaction_evidence,
            "offset_gaps": self.offset_gaps, "delete_horizon_batches": self.delete_horizon_batches,
            "cleaned_to": self.cleaned_to, "pending_files": self.pending_files, "problems": self.problems,
        }


@dataclass(slots=True)
class LogDirInventory:
    path: str
    kraft: bool | None  # meta.properties version 1 (KRaft) / 0 (ZooKeeper) / unknown
    partitions: list[PartitionInventory] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # partition dirs not inventoried, with the reason
    problems: list[str] = field(default_factory=list)  # of the log dir's own files (one that is not a regular file)

    def topics(self) -> dict[str, list[PartitionInventory]]:
        out: dict[str, list[PartitionInventory]] = {}
        for p in self.partitions:
            out.setdefault(p.topic, []).append(p)
        return out

    def total(self, attr: str) -> int:
        return sum(int(getattr(p, attr)) for p in self.partitions)


@dataclass(frozen=True, slots=True)
class InventoryOptions:
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    topic_max_message_bytes: Mapping[str, int] = field(default_factory=dict)
    compacted_topics: frozenset[str] = frozenset()
    decompress_limit: int | None = None

    def limit_for(self, topic: str) -> int:
        return self.topic_max_message_bytes.get(topic, self.max_message_bytes)


def inventory_log_dir(path: str | os.PathLike[str], options: InventoryOptions | None = None) -> LogDirInventory:
    """Inventory a log dir (every partition) or a single partition dir."""
    opts = options or InventoryOptions()
    p = Path(path)
    inputs = resolve_inputs([p])
    if inputs.files:
        raise InputError("canary plan reads a log dir or a partition dir, not a single file", path=p)
    root = p if inputs.log_dirs else p.resolve().parent
    inv = LogDirInventory(str(p), _kraft(root))
    cleaned = _cleaner_checkpoint(root) if (inputs.log_dirs or is_log_dir(root)) else {}
    parts: list[PartitionDir] = list(inputs.partitions)
    for d in inputs.log_dirs:
        parts += d.partitions
        inv.problems += [f"{shown(f.path)}: {f.message}" for f in d.not_regular]
    for pd in parts:
        tp = pd.topic_partition
        if tp is None:
            continue
        if pd.kind:
            inv.skipped.append(f"{shown(pd.path.name)}: a -{pd.kind} dir (not a live partition)")
            continue
        if tp.topic == METADATA_TOPIC:
            inv.skipped.append(f"{shown(pd.path.name)}: KRaft metadata log (not a data topic)")
            continue
        inv.partitions.append(inventory_partition(pd, opts, cleaned.get(tp)))
    return inv


def _kraft(root: Path) -> bool | None:
    meta = root / META_PROPERTIES
    if not meta.is_file():
        return None
    try:
        props = read_properties(meta)
    except KafkaToolError:
        return None
    # meta.properties v1 (node.id) is KRaft's; v0 (broker.id) is a ZooKeeper broker's.
    return props.get("version", "").strip() == "1"


def _cleaner_checkpoint(root: Path) -> dict[TopicPartition, int]:
    path = root / CLEANER_CHECKPOINT
    if not path.is_file():
        return {}
    return read_offset_checkpoint(path)


def _codec_label(codec_id: int) -> str:
    return Codec(codec_id).label if codec_id <= 4 else f"unknown({codec_id})"


def legacy_message_as_v2_size(key: bytes | None, value: bytes | None) -> int:
    """Size of the single-record v2 batch Kafka 4's cleaner writes for one uncompressed legacy message
    (offset and timestamp deltas 0, no headers): 61 + the record with its varint length."""
    body = 1 + 1 + 1  # attributes, timestampDelta varlong 0, offsetDelta varint 0
    body += 1 if key is None else size_of_varint(len(key)) + len(key)
    body += 1 if value is None else size_of_varint(len(value)) + len(value)
    body += 1  # header count 0
    return RECORD_BATCH_OVERHEAD + size_of_varint(body) + body


def inventory_partition(pd: PartitionDir, opts: InventoryOptions, cleaned_to: int | None = None) -> PartitionInventory:
    assert pd.topic_partition is not None
    tp = pd.topic_partition
    inv = PartitionInventory(pd.path.name, tp.topic, tp.partition, str(pd.path), opts.limit_for(tp.topic))
    inv.segments = len(pd.segments)
    inv.pending_files = [p.name for p in pd.pending]
    inv.cleaned_to = cleaned_to
    # A FIFO, a device or a broken symlink named as a segment's file: never read (a segment whose .log it is is
    # missing from the inventory), a problem of the partition.
    inv.problems += [f"{shown(f.path)}: {f.message}" for f in pd.not_regular]
    walker = _Walker(inv, opts)
    for i, seg in enumerate(pd.segments):
        try:
            with FileRecords(seg.log) as fr:
                inv.bytes += fr.size
                stream = fr.batches()
                try:
                    for batch in stream:
                        walker.batch(batch, seg.base_offset)
                except KafkaToolError as e:
                    inv.problems.append(str(e.at(seg.log)))
                    continue
                end = stream.end_state
                if end is not None and end.kind != "end":
                    where = "the active segment's tail" if i == len(pd.segments) - 1 else "a rolled segment"
                    inv.problems.append(f"{shown(seg.log)}: {end.trailing_bytes} trailing bytes at byte {end.position} "
                                        f"({where}: {end.message}); the broker's recovery truncates them")
        except KafkaToolError as e:
            inv.problems.append(str(e))
    _compaction_evidence(inv, opts)
    return inv


class _Walker:
    """Accumulates one partition's batches into its inventory."""

    def __init__(self, inv: PartitionInventory, opts: InventoryOptions) -> None:
        self.inv = inv
        self.opts = opts
        self.prev_last: int | None = None

    def batch(self, b: DefaultRecordBatch | LegacyRecordBatch, segment: int) -> None:
        inv = self.inv
        size = b.size
        magic = int(b.magic)
        codec = b.codec_id
        if isinstance(b, LegacyRecordBatch):
            first, last, n = self._legacy(b, size)
        else:
            first, last, n = self._v2(b)
        if self.prev_last is not None and first > self.prev_last + 1:
            inv.offset_gaps += 1
        self.prev_last = last
        if inv.log_start_offset is None:
            inv.log_start_offset = first
        inv.log_end_offset = last + 1
        inv.batches += 1
        inv.records += n
        key = f"v{magic}-{_codec_label(codec)}"
        fc = inv.formats.get(key)
        if fc is None:
            fc = inv.formats[key] = FormatCount(magic, _codec_label(codec))
        fc.batches += 1
        fc.records += n
        fc.bytes += size
        tt = b.timestamp_type.label
        inv.timestamp_types.setdefault(tt, Count()).add(n, size)
        if codec == Codec.ZSTD:
            inv.zstd.add(n, size)
        if magic < MAGIC_V2:
            inv.legacy.add(n, size)
            inv.last_legacy_offset = last
            if not inv.legacy_segments or inv.legacy_segments[-1] != segment:
                inv.legacy_segments.append(segment)
        elif inv.first_v2_offset is None:
            inv.first_v2_offset = first
        inv.last_batch_magic = magic
        if size > inv.largest_batch:
            inv.largest_batch, inv.largest_batch_offset, inv.largest_batch_magic = size, first, magic
        if size > inv.max_message_bytes:
            inv.oversized_batches += 1

    def _legacy(self, b: LegacyRecordBatch, size: int) -> tuple[int, int, int]:
        inv = self.inv
        if b.is_compressed:
            # a chunk of inner messages at a time: a wrapper of a few MB can hold millions
            first = expected = -1
            missing = n = 0
            gaps = False
            for recs in b.record_chunks(limit=self.opts.decompress_limit):
                if first < 0:
                    first = expected = recs[0].offset
                for r in recs:
                    gaps |= r.offset != expected
                    expected = r.offset + 1
                    missing += r.timestamp == NO_TIMESTAMP
                n += len(recs)
            if gaps:
                inv.offset_gaps += 1  # the cleaner keeps a wrapper's surviving inner messages
            last = int(b.last_offset)
        else:
            key, value = b.key_value()
            as_v2 = legacy_message_as_v2_size(key, value)
            inv.largest_legacy_message_as_v2 = max(inv.largest_legacy_message_as_v2, as_v2)
            if as_v2 > inv.max_message_bytes >= size:
                inv.legacy_messages_over_limit_as_v2 += 1
            missing = 1 if (b.magic == MAGIC_V0 or b.timestamp == NO_TIMESTAMP) else 0
            first = last = int(b.offset)
            n = 1
        if b.magic == MAGIC_V0:
            inv.v0.add(n, size)
        inv.records_without_timestamp += missing
        return first, last, n

    def _v2(self, b: DefaultRecordBatch) -> tuple[int, int, int]:
        inv = self.inv
        first, last = int(b.base_offset), int(b.last_offset)
        n = max(0, int(b.records_count))
        if n < last - first + 1:
            inv.offset_gaps += 1  # records removed by the cleaner (or an empty batch kept for producer state)
        if b.has_delete_horizon:
            inv.delete_horizon_batches += 1
        if b.is_control:
            name = "UNKNOWN"
            try:
                recs = next(iter(b.record_chunks(limit=self.opts.decompress_limit)))
                if recs:
                    name = parse_control_type(recs[0].key).name
            except KafkaToolError:
                name = "UNREADABLE"
            inv.control[name] = inv.control.get(name, 0) + 1
            return first, last, 0  # markers are not data records (counted under control_batches)
        if b.timestamp_type == TimestampType.CREATE_TIME and b.max_timestamp == NO_TIMESTAMP:
            inv.records_without_timestamp += n
        if b.is_transactional:
            inv.transactional.add(n, b.size)
        elif b.producer_id >= 0:
            inv.idempotent.add(n, b.size)
        return first, last, n


def _compaction_evidence(inv: PartitionInventory, opts: InventoryOptions) -> None:
    ev = inv.compaction_evidence
    if inv.topic in opts.compacted_topics:
        ev.append("declared compacted (by the operator)")
    if inv.topic in INTERNAL_COMPACTED_TOPICS:
        ev.append("internal topic (cleanup.policy=compact)")
    if inv.cleaned_to is not None:
        ev.append(f"cleaner-offset-checkpoint: cleaned up to offset {inv.cleaned_to}")
    if inv.offset_gaps:
        ev.append(f"{inv.offset_gaps} offset gap(s) inside the log")
    if inv.delete_horizon_batches:
        ev.append(f"{inv.delete_horizon_batches} batch(es) with a delete horizon (KIP-534)")


def summarize(partitions: Iterable[PartitionInventory]) -> dict[str, Any]:
    """Log-dir totals of every category (the ``summary`` JSON line and the report's header)."""
    parts = list(partitions)
    formats: dict[str, dict[str, int]] = {}
    tts: dict[str, dict[str, int]] = {}
    control: dict[str, int] = {}
    for p in parts:
        for f in p.formats.values():
            d = formats.setdefault(f"v{f.magic}-{f.codec}", {"batches": 0, "records": 0, "bytes": 0})
            d["batches"] += f.batches
            d["records"] += f.records
            d["bytes"] += f.bytes
        for k, c in p.timestamp_types.items():
            t = tts.setdefault(k, {"batches": 0, "records": 0, "bytes": 0})
            t["batches"] += c.batches
            t["records"] += c.records
            t["bytes"] += c.bytes
        for k, n in p.control.items():
            control[k] = control.get(k, 0) + n

    def tot(attr: str) -> dict[str, int]:
        cs = [getattr(p, attr) for p in parts]
        return {"batches": sum(c.batches for c in cs), "records": sum(c.records for c in cs),
                "bytes": sum(c.bytes for c in cs)}

    largest = max(parts, key=lambda p: p.largest_batch, default=None)
    return {
        "partitions": len(parts), "topics": len({p.topic for p in parts}),
        "bytes": sum(p.bytes for p in parts), "batches": sum(p.batches for p in parts),
        "records": sum(p.records for p in parts),
        "formats": dict(sorted(formats.items())), "timestamp_types": dict(sorted(tts.items())),
        "v0": tot("v0"), "records_without_timestamp": sum(p.records_without_timestamp for p in parts),
        "zstd": tot("zstd"), "transactional": tot("transactional"), "idempotent": tot("idempotent"),
        "control_batches": dict(sorted(control.items())), "legacy": tot("legacy"),
        "largest_batch": None if largest is None else {
            "partition": largest.name, "bytes": largest.largest_batch, "offset": largest.largest_batch_offset,
            "magic": largest.largest_batch_magic, "max_message_bytes": largest.max_message_bytes},
        "oversized_batches": sum(p.oversized_batches for p in parts),
        "legacy_messages_over_limit_as_v2": sum(p.legacy_messages_over_limit_as_v2 for p in parts),
        "compacted_partitions": sum(1 for p in parts if p.compacted),
        "compacted_with_legacy": sorted(p.name for p in parts if p.compacted and p.has_legacy),
        "partitions_with_problems": sorted(p.name for p in parts if p.problems),
    }


def scan_partitions(path: Path) -> list[PartitionDir]:
    """The live partition dirs of a log dir (for ``canary run``'s selection)."""
    return [pd for pd in LogDir.scan(path).partitions
            if pd.topic_partition is not None and not pd.kind and pd.topic_partition.topic != METADATA_TOPIC]
