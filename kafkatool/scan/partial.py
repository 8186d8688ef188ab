"""Partial results: one broker's scan kept as mergeable figures, and the cluster-wide report made from several.

Logs usually sit on each broker's own disk. Each broker scans its log dirs (``spark-scan`` with a partial output
dir, the local process pool, no JVM needed) and writes a *partial result*: per segment the merged figures
(``STATS_SCHEMA`` rows: counts, timestamps, the distinct-key sketch, key-sharing loads and hot keys, dump's
findings, the index check) and a manifest (``_kafkatool_partial.json``: the source, the key-sharing parameters,
the notes). The partial results go to shared or object storage; ``spark-scan P1 P2 ...`` over them merges the
segments exactly as a scan of all the data in one place merges its ranges (every figure merges: counts add,
sketches take register maxima, hot keys keep their error bound), so the cluster-wide statistics and key-sharing
analysis are the same.

Key sharing needs each partition's hash ranges, which depend on the topic's partition count: a partial scan must be
given the same ``key_sharing`` and ``partitions`` on every broker (the merge refuses partials that disagree).
Two partials holding a segment at the same path (brokers with the same log dir path) keep them apart by their
sources' names.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatool.errors import InputError, UsageError
from kafkatool.scan.engine import RangeResult, ScanReport, SegmentResult, summarize
from kafkatool.scan.plan import WorkItem
from kafkatool.scan.schemas import STATS_SCHEMA, result_from_row, stats_row
from kafkatool.scan.source import filesystem_for, is_url, join

MANIFEST = "_kafkatool_partial.json"
SEGMENTS = "segments.parquet"
FORMAT = 1

_META = [("topic", pa.string()), ("partition", pa.int32()), ("path", pa.string()), ("base_offset", pa.int64()),
         ("file_size", pa.int64()), ("ranges", pa.int32()), ("rescanned", pa.bool_()), ("active", pa.bool_())]
PARTIAL_SCHEMA = pa.schema([*_META, *STATS_SCHEMA])


@dataclass(frozen=True, slots=True)
class Partial:
    source: str
    segments: list[SegmentResult]
    key_sharing: int | None
    partitions: dict[str, int]
    notes: list[str] = field(default_factory=list)


def is_partial(path: str) -> bool:
    """Whether ``path`` is a partial result's directory (it holds the manifest)."""
    target = join(path, MANIFEST)
    if is_url(target):
        import pyarrow.fs as pafs

        try:
            fs, inner = filesystem_for(target)
            return bool(fs.get_file_info(inner).type == pafs.FileType.File)
        except (InputError, OSError):
            return False
    return os.path.isfile(target)


def write_partial(directory: str, report: ScanReport, *, key_sharing: int | None, partitions: Mapping[str, int],
                  source: str | None = None, active: Mapping[str, bool] | None = None) -> list[str]:
    """Write ``report``'s segments as a partial result into ``directory`` (a new local dir or a URL); returns the
    files written. The manifest is written last: a partial without one is not read."""
    rows = []
    for i, seg in enumerate(report.segments):
        r = RangeResult(i, seg.stats, seg.findings, None, seg.valid_bytes, seg.invalid_bytes, keyshare=seg.keyshare,
                        index_check=seg.used[0].index_check if seg.used else None)
        rows.append({"topic": seg.topic, "partition": seg.partition, "path": seg.path, "base_offset": seg.base_offset,
                     "file_size": seg.file_size, "ranges": seg.ranges, "rescanned": seg.rescanned,
                     "active": (active or {}).get(seg.path, False), **stats_row(r)})
    table = pa.Table.from_pylist(rows, schema=PARTIAL_SCHEMA)
    manifest = {"format": FORMAT, "source": source or socket.gethostname(), "key_sharing": key_sharing,
                "partitions": dict(sorted(partitions.items())), "notes": list(report.notes)}
    seg_path, man_path = join(directory, SEGMENTS), join(directory, MANIFEST)
    data = json.dumps(manifest, indent=1).encode()
    if is_url(directory):
        fs, inner = filesystem_for(seg_path)
        with fs.open_output_stream(inner) as out:
            pq.write_table(table, out)
        fs, inner = filesystem_for(man_path)
        with fs.open_output_stream(inner) as out:
            out.write(data)
    else:
        from kafkatool.util.atomic import atomic_write_bytes

        os.makedirs(directory, exist_ok=True)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        atomic_write_bytes(seg_path, sink.getvalue().to_pybytes())
        atomic_write_bytes(man_path, data)
    return [seg_path, man_path]


def read_partial(directory: str, hot_key_capacity: int = 64) -> Partial:
    man_path, seg_path = join(directory, MANIFEST), join(directory, SEGMENTS)
    try:
        if is_url(directory):
            fs, inner = filesystem_for(man_path)
            with fs.open_input_file(inner) as f:
                manifest = json.loads(f.read())
            fs, inner = filesystem_for(seg_path)
            with fs.open_input_file(inner) as f:
                table = pq.read_table(f)
        else:
            with open(man_path, "rb") as f:
                manifest = json.loads(f.read())
            table = pq.read_table(seg_path)
    except (OSError, ValueError) as e:
        raise InputError(f"not a readable partial result: {e}", path=directory) from None
    if manifest.get("format") != FORMAT:
        raise InputError(f"partial result format {manifest.get('format')!r}: this kafkatool reads format {FORMAT}",
                         path=directory)
    segments = []
    for row in table.to_pylist():
        item = WorkItem(row["item_id"], row["topic"], row["partition"], row["path"], row["base_offset"], 0,
                        row["file_size"], row["file_size"], 0, 1, active=row["active"])
        r = result_from_row(row, item, hot_key_capacity)
        segments.append(SegmentResult(item.topic, item.partition, item.base_offset, item.path, item.file_size,
                                      r.stats, r.findings, r.valid_bytes, r.invalid_bytes, r.keyshare, row["ranges"],
                                      row["rescanned"], used=[r]))
    return Partial(str(manifest.get("source") or directory), segments, manifest.get("key_sharing"),
                   {str(k): int(v) for k, v in (manifest.get("partitions") or {}).items()},
                   list(manifest.get("notes") or []))


def merge_partials(partials: Sequence[Partial]) -> ScanReport:
    """The cluster-wide report of several partial results (segments in plan order: topic, partition, dir, offset)."""
    seen: dict[str, str] = {}
    clash = set()
    for p in partials:
        for s in p.segments:
            if s.path in seen and seen[s.path] != p.source:
                clash.add(s.path)
            seen.setdefault(s.path, p.source)
    segments: list[SegmentResult] = []
    for p in partials:
        for s in p.segments:
            if s.path in clash:
                s.path = f"{p.source}:{s.path}"
                s.findings = [type(f)(f.kind, f.severity, s.path, f.message, f.position, f.offset, f.data)
                              for f in s.findings]
            segments.append(s)
    from kafkatool.scan.plan import parent_of

    segments.sort(key=lambda s: (s.topic, s.partition, parent_of(s.path), s.base_offset))
    notes = [f"{p.source}: {n}" for p in partials for n in p.notes]
    return summarize(segments, notes)


def key_sharing_of(partials: Sequence[Partial]) -> tuple[int | None, dict[str, int]]:
    """The key-sharing parameters every partial was scanned with (they must agree where a topic is shared)."""
    consumers = {p.key_sharing for p in partials if p.key_sharing is not None}
    if not consumers:
        return None, {}
    if len(consumers) > 1 or any(p.key_sharing is None for p in partials if p.segments):
        raise UsageError("the partial results were scanned with different key sharing ("
                         + ", ".join(f"{p.source}: {p.key_sharing}" for p in partials)
                         + "): scan every broker with the same key_sharing and partitions", field="key_sharing")
    merged: dict[str, int] = {}
    for p in partials:
        for t, n in p.partitions.items():
            if merged.setdefault(t, n) != n:
                raise UsageError(f"the partial results disagree on the partition count of {t} ({merged[t]} and {n}): "
                                 "scan every broker with the same partitions", field="partitions")
    topics = {s.topic for p in partials for s in p.segments}
    missing = sorted(t for t in topics if t not in merged)
    if missing:
        raise UsageError(f"partial results with key sharing need every topic's partition count (partitions) given "
                         f"on every broker: missing for {', '.join(missing)}", field="partitions")
    return consumers.pop(), merged


def rows_of(report: ScanReport) -> list[dict[str, Any]]:
    """Index checks the partials carried, in segment order."""
    return [s.used[0].index_check for s in report.segments if s.used and s.used[0].index_check is not None]
