"""What ``spark-scan`` reports: rows for tables, JSON lines and Parquet, and the key-sharing analysis.

Every figure comes from a ``ScanReport`` (``kafkatool.scan.engine``) and is laid out here once, so the
printed table, the JSON lines and the Parquet files say the same thing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkatool.record.codecs import CODEC_LABELS
from kafkatool.scan.engine import PartitionResult, ScanReport, SegmentResult
from kafkatool.scan.keyshare import (
    ConsumerLoad,
    ShareAssignment,
    Skew,
    assign,
    consumer_loads,
    hash_range,
    plain_loads,
    skew,
    slot_of,
    to_positive,
)
from kafkatool.scan.plan import SegmentFile
from kafkatool.scan.stats import Stats
from kafkatool.util import crash
from kafkatool.util.atomic import DirMaker, atomic_write_bytes, fsync_dir

MATCH_THRESHOLD = 0.99  # a partitioner "explains" a partition when this share of its keys fits it


def codec_label(codec_id: int) -> str:
    return CODEC_LABELS[codec_id] if 0 <= codec_id < len(CODEC_LABELS) else f"codec-{codec_id}"


def stats_fields(s: Stats) -> dict[str, Any]:
    """The figures of one segment, partition, topic or the total (flat, JSON- and Parquet-friendly)."""
    return {
        "batches": s.batches, "records": s.records, "bytes": s.bytes, "uncompressed_bytes": s.uncompressed_bytes,
        "compression_ratio": round(s.compression_ratio, 4),
        "first_offset": s.first_offset, "last_offset": s.last_offset,
        "min_timestamp": s.min_timestamp, "max_timestamp": s.max_timestamp,
        "out_of_order_timestamps": s.out_of_order,
        "crc_failures": s.crc_failures, "decode_failures": s.decode_failures,
        "largest_batch": s.largest_batch, "oversized_batches": s.oversized_batches,
        "transactional_batches": s.transactional_batches, "control_batches": s.control_batches,
        "null_keys": s.null_keys, "distinct_keys": s.distinct_keys, "records_known": s.records_known,
    }


def format_rows(s: Stats) -> list[dict[str, Any]]:
    """Per (magic, codec): batches, records, bytes, uncompressed bytes and ratio."""
    return [{"magic": m, "codec": codec_label(c), "batches": v[0], "records": v[1], "bytes": v[2],
             "uncompressed_bytes": v[3], "compression_ratio": round(v[3] / v[2], 4) if v[2] else 0.0}
            for (m, c), v in sorted(s.formats.items())]


def segment_row(seg: SegmentResult) -> dict[str, Any]:
    stop = seg.stop
    return {"topic": seg.topic, "partition": seg.partition, "base_offset": seg.base_offset, "path": seg.path,
            "file_size": seg.file_size, "ranges": seg.ranges, "rescanned": seg.rescanned,
            **stats_fields(seg.stats),
            "largest_batch_position": seg.stats.largest_batch_position[1] if seg.stats.largest_batch_position
            else None,
            "end": stop.kind if stop is not None else "ok", "end_position": stop.position if stop is not None else None,
            "unread_bytes": seg.unread_bytes, "errors": sum(1 for f in seg.findings if f.severity.value == "error"),
            "warnings": sum(1 for f in seg.findings if f.severity.value == "warning")}


def partition_row(p: PartitionResult) -> dict[str, Any]:
    return {"topic": p.topic, "partition": p.partition, "dir": p.dir, "segments": p.segments, **stats_fields(p.stats),
            "unread_bytes": sum(s.unread_bytes for s in p.abnormal)}


def finding_rows(report: ScanReport) -> list[dict[str, Any]]:
    """Every finding of the walks (dump's deep, verifying walk's own: kind, severity, where, what), in plan order."""
    return [{"topic": seg.topic, "partition": seg.partition, "path": f.path, "position": f.position,
             "offset": f.offset, "kind": f.kind, "severity": f.severity.value, "message": f.message}
            for seg in report.segments for f in seg.findings]


# ---------------------------------------------------------------------------------------------- key sharing

@dataclass(frozen=True, slots=True)
class KeyShareSetup:
    consumers: int
    assignments: dict[str, ShareAssignment]
    assumed: dict[str, bool]  # True when the partition count is the highest partition found + 1

    def share_slots(self) -> dict[tuple[str, int], int]:
        return {(t, p): a.slots(p) for t, a in self.assignments.items() for p in range(a.partitions)}

    def topic_partitions(self) -> dict[str, int]:
        return {t: a.partitions for t, a in self.assignments.items()}


def keyshare_setup(segments: Iterable[SegmentFile], consumers: int,
                   partitions: Mapping[str, int] | None = None) -> KeyShareSetup:
    """The proposal's assignment per topic: partition count from ``partitions`` or the highest found + 1."""
    found: dict[str, int] = {}
    for s in segments:
        found[s.topic] = max(found.get(s.topic, 0), s.partition + 1)
    given = dict(partitions or {})
    assignments = {t: assign(consumers, given.get(t, max(n, 1))) for t, n in sorted(found.items())}
    return KeyShareSetup(consumers, assignments, {t: t not in given for t in found})


@dataclass(frozen=True, slots=True)
class HotKeyRow:
    partition: int
    key: bytes
    records: int
    bytes: int
    consumer: int
    share_of_consumer: float


@dataclass(frozen=True, slots=True)
class PartitionShare:
    partition: int
    slots: int
    slot_records: tuple[int, ...]
    slot_bytes: tuple[int, ...]
    keyed_records: int
    null_records: int
    null_bytes: int
    murmur2_match: float | None
    crc32_match: float | None
    partitioner: str
    hot_error: int


@dataclass(frozen=True, slots=True)
class TopicShare:
    topic: str
    assignment: ShareAssignment
    partitions_assumed: bool
    sharing: tuple[ConsumerLoad, ...]
    sharing_skew: Skew
    plain: tuple[ConsumerLoad, ...]
    plain_skew: Skew
    partitions: tuple[PartitionShare, ...]
    hot_keys: tuple[HotKeyRow, ...]  # per partition, hottest first; the busiest consumer's partition first
    bound_records: int  # the hottest single key: no range split can give a consumer fewer records

    @property
    def speedup(self) -> float:
        """How much less the busiest consumer reads with key sharing than with plain assignment."""
        return self.plain_skew.max_records / self.sharing_skew.max_records if self.sharing_skew.max_records else 0.0


def partitioner_verdict(murmur2: float | None, crc32: float | None, partitions: int) -> str:
    if partitions <= 1 or murmur2 is None or crc32 is None:
        return "undecidable (one partition)" if partitions <= 1 else "no keyed records"
    if murmur2 >= MATCH_THRESHOLD:
        return "murmur2 (Java default partitioner)"
    if crc32 >= MATCH_THRESHOLD:
        return "crc32 (librdkafka consistent/consistent_random)"
    return f"neither (murmur2 {murmur2:.1%}, crc32 {crc32:.1%}): custom partitioner, or a partition count change"


def topic_shares(report: ScanReport, setup: KeyShareSetup, hot: int = 5) -> list[TopicShare]:
    out: list[TopicShare] = []
    by_topic: dict[str, list[PartitionResult]] = {}
    for p in report.partitions:
        by_topic.setdefault(p.topic, []).append(p)
    for topic, parts in by_topic.items():
        a = setup.assignments.get(topic)
        if a is None:
            continue
        slot_records = [[0] * a.slots(p) for p in range(a.partitions)]
        slot_bytes = [[0] * a.slots(p) for p in range(a.partitions)]
        part_records = [0] * a.partitions
        part_bytes = [0] * a.partitions
        details: list[PartitionShare] = []
        hot_rows: list[HotKeyRow] = []
        bound = 0
        seen: set[int] = set()
        for p in parts:
            ks = p.keyshare
            if ks is None or not 0 <= p.partition < a.partitions or p.partition in seen:
                continue  # a second copy (replica) of a partition is not a second partition
            seen.add(p.partition)
            slot_records[p.partition] = list(ks.slot_records)
            slot_bytes[p.partition] = list(ks.slot_bytes)
            part_records[p.partition] = sum(ks.slot_records)
            part_bytes[p.partition] = sum(ks.slot_bytes)
            m = ks.murmur2_match / ks.keyed_records if ks.keyed_records else None
            c = ks.crc32_match / ks.keyed_records if ks.keyed_records else None
            details.append(PartitionShare(p.partition, ks.slots, tuple(ks.slot_records), tuple(ks.slot_bytes),
                                          ks.keyed_records, ks.null_records, ks.null_bytes, m, c,
                                          partitioner_verdict(m, c, a.partitions), ks.hot.error))
            members = a.members[p.partition]
            for hk in ks.hot.top(hot):
                j = slot_of(to_positive(hk.hash), ks.slots)
                load = ks.slot_records[j]
                hot_rows.append(HotKeyRow(p.partition, hk.key, hk.records, hk.bytes, members[j],
                                          hk.records / load if load else 0.0))
                bound = max(bound, hk.records)
        sharing = consumer_loads(a, slot_records, slot_bytes)
        plain = plain_loads(a.consumers, part_records, part_bytes)
        sk = skew(sharing)
        busiest = max(sharing, key=lambda x: (x.records, -x.consumer)).consumer if sharing else -1
        hot_rows.sort(key=lambda h: (h.consumer != busiest, h.partition, -h.records, h.key))
        out.append(TopicShare(topic, a, setup.assumed.get(topic, True), tuple(sharing), sk, tuple(plain),
                              skew(plain), tuple(details), tuple(hot_rows), bound))
    return out


def consumer_range_text(load: ConsumerLoad) -> str:
    parts = []
    for p, lo, hi in load.ranges:
        whole = (lo, hi) == hash_range(0, 1)
        parts.append(f"tp{p + 1}" if whole else f"tp{p + 1}[{lo:#010x},{hi:#010x})")
    return " ".join(parts) or "-"


# ---------------------------------------------------------------------------------------------- Parquet

def write_parquet(out_dir: str, tables: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """Write each list of rows as ``out_dir/<name>.parquet`` (atomically, one file per table). A failure (a full
    disk) removes what the run created: the files that were not there before, and the directories it made."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    made = DirMaker()
    written: list[str] = []
    new: list[str] = []
    try:
        if not os.path.isdir(out_dir):
            made.makedirs(out_dir)
            fsync_dir(os.path.dirname(os.path.abspath(out_dir)))
        for name, rows in tables.items():
            if not rows:
                continue
            table = pa.Table.from_pylist(list(rows))
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink)
            path = os.path.join(out_dir, f"{name}.parquet")
            existed = os.path.lexists(path)
            atomic_write_bytes(path, sink.getvalue().to_pybytes())
            crash.point()
            written.append(path)
            if not existed:
                new.append(path)
    except BaseException:
        for path in new:
            try:
                os.unlink(path)
            except OSError:
                pass
        made.remove()
        raise
    return written


def stats_tables(report: ScanReport) -> dict[str, list[dict[str, Any]]]:
    formats = []
    for seg in report.segments:
        for row in format_rows(seg.stats):
            formats.append({"topic": seg.topic, "partition": seg.partition, "base_offset": seg.base_offset, **row})
    return {
        "segments": [segment_row(s) for s in report.segments],
        "partitions": [partition_row(p) for p in report.partitions],
        "topics": [{"topic": t.topic, "partitions": t.partitions, "segments": t.segments, **stats_fields(t.stats)}
                   for t in report.topics],
        "formats": formats,
        "findings": finding_rows(report),
    }


def keyshare_tables(shares: Iterable[TopicShare]) -> dict[str, list[dict[str, Any]]]:
    consumers, partitions, hot = [], [], []
    for t in shares:
        plain = {c.consumer: c for c in t.plain}
        for c in t.sharing:
            consumers.append({"topic": t.topic, "consumer": f"M{c.consumer + 1}", "records": c.records,
                              "bytes": c.bytes, "ranges": consumer_range_text(c),
                              "plain_records": plain[c.consumer].records, "plain_bytes": plain[c.consumer].bytes})
        for p in t.partitions:
            partitions.append({"topic": t.topic, "partition": p.partition, "consumers": p.slots,
                               "range_records": list(p.slot_records), "range_bytes": list(p.slot_bytes),
                               "keyed_records": p.keyed_records, "null_key_records": p.null_records,
                               "null_key_bytes": p.null_bytes, "murmur2_match": p.murmur2_match,
                               "crc32_match": p.crc32_match, "partitioner": p.partitioner,
                               "hot_key_error": p.hot_error})
        for h in t.hot_keys:
            hot.append({"topic": t.topic, "partition": h.partition, "key": h.key, "records": h.records,
                        "bytes": h.bytes, "consumer": f"M{h.consumer + 1}",
                        "share_of_consumer": round(h.share_of_consumer, 4)})
    return {"keyshare_consumers": consumers, "keyshare_partitions": partitions, "keyshare_hot_keys": hot}
