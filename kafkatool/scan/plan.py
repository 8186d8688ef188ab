"""Work planning on the driver: find the segments, cut big ones at batch boundaries, balance tasks by bytes.

Planning reads directory listings, file sizes, the ``.index`` of segments larger than the split size
and one batch header per cut: cheap next to the scan. A cut comes from the offset index (its entries
point at batch starts, spec §4.2), checked against the batch header found there; without a usable
index a local segment is cut by a header walk and a remote one is not cut. A cut that still turns
out not to be a batch boundary is caught when the ranges are merged (``kafkatool.scan.engine``): the range
before it does not hand off exactly at the cut, and that segment is rescanned whole.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import heapq
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from kafkatool.errors import InputError, KafkaToolError, UsageError
from kafkatool.log.index import read_offset_index
from kafkatool.log.layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    IrregularFile,
    PartitionDir,
    filename_prefix_from_offset,
    irregular_siblings,
    offset_from_filename,
    parse_partition_dir_name,
    resolve_inputs,
)
from kafkatool.record.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_HEADER, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2
from kafkatool.record.file_records import FileRecords, iter_batches
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0
from kafkatool.scan.source import filesystem_for, is_url, join, local_copy, read_at
from kafkatool.util.printable import shown

DEFAULT_SPLIT_BYTES = 128 << 20
MAX_INDEX_BYTES = 64 << 20
MAX_CUT_BATCH_BYTES = 64 << 20  # a batch at a cut is read whole to check its CRC


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One ``.log`` segment to scan (``path`` absolute, or a URL)."""

    topic: str
    partition: int
    path: str
    base_offset: int
    size: int
    index_path: str | None = None
    active: bool = False  # the last segment of its partition dir (the broker's active segment)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}/{filename_prefix_from_offset(self.base_offset)}{LOG_SUFFIX}"


@dataclass(frozen=True, slots=True)
class WorkItem:
    """A byte range of one segment: it owns the batches starting in ``[start, end)``.

    ``share_slots`` and ``topic_partitions`` parametrize the key-sharing analysis (0 when off).
    """

    id: int
    topic: str
    partition: int
    path: str
    base_offset: int
    start: int
    end: int
    file_size: int
    range_index: int
    range_count: int
    share_slots: int = 0
    topic_partitions: int = 0
    active: bool = False  # the segment is its partition dir's last (the index check judges it so)

    @property
    def last(self) -> bool:
        return self.range_index == self.range_count - 1

    @property
    def bytes(self) -> int:
        return self.end - self.start

    @property
    def segment_key(self) -> tuple[str, int, str, int]:
        """Segments sort by topic, partition, partition dir (replicas from several log dirs stay apart)."""
        return (self.topic, self.partition, parent_of(self.path), self.base_offset)


@dataclass(frozen=True, slots=True)
class Plan:
    segments: tuple[SegmentFile, ...]
    items: tuple[WorkItem, ...]
    tasks: tuple[tuple[int, ...], ...]  # item ids per task, heaviest task first
    notes: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def task_bytes(self, task: int) -> int:
        return sum(self.items[i].bytes for i in self.tasks[task])

    def items_of(self, segment: SegmentFile) -> list[WorkItem]:
        return [it for it in self.items if it.path == segment.path]


def parent_of(path: str) -> str:
    """The partition dir of a segment path or URL."""
    return path.rstrip("/").rsplit("/", 1)[0] if is_url(path) else os.path.dirname(path)


@dataclass(slots=True)
class Discovery:
    segments: list[SegmentFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    not_regular: list[IrregularFile] = field(default_factory=list)  # never read: each a finding


# ---------------------------------------------------------------------------------------------- discovery

def discover(paths: Sequence[str], topics: Sequence[str] = ()) -> Discovery:
    """Every segment under ``paths`` (log dirs, partition dirs, ``.log`` files; local or URLs).

    Partition dirs marked ``-delete``/``-future``/``-stray`` inside a log dir are skipped with a note
    (they are copies or leftovers; pass one explicitly to scan it). ``topics`` are glob patterns.
    """
    out = Discovery()
    local = [p for p in paths if not is_url(p)]
    if local:
        _discover_local(local, out)
    for url in (p for p in paths if is_url(p)):
        _discover_remote(url, out)
    if topics:
        kept = [s for s in out.segments if any(fnmatch.fnmatchcase(s.topic, g) for g in topics)]
        if not kept and out.segments:
            out.notes.append(f"no topic matches {', '.join(topics)}")
        out.segments = kept
    seen: set[str] = set()
    unique = []
    for s in sorted(out.segments, key=lambda s: (s.topic, s.partition, s.base_offset, s.path)):
        if s.path not in seen:
            seen.add(s.path)
            unique.append(s)
    last: dict[str, SegmentFile] = {}
    for s in unique:
        if s.path.endswith(LOG_SUFFIX):
            last[parent_of(s.path)] = s  # sorted by base offset: the last one wins
    active = {id(s) for s in last.values()}
    out.segments = [dataclasses.replace(s, active=True) if id(s) in active else s for s in unique]
    unique = out.segments
    dirs: dict[tuple[str, int], set[str]] = {}
    for s in unique:
        dirs.setdefault((s.topic, s.partition), set()).add(parent_of(s.path))
    copies = sorted(f"{t}-{p}" for (t, p), ds in dirs.items() if len(ds) > 1)
    if copies:
        out.notes.append(f"{', '.join(copies[:5])}{' ...' if len(copies) > 5 else ''}: found in more than one log "
                         "dir (replicas?); each copy is its own partition row and topic totals count every copy")
    return out


def _discover_local(paths: Sequence[str], out: Discovery) -> None:
    inputs = resolve_inputs(paths)
    for f in inputs.files:
        if not f.name.endswith(LOG_SUFFIX):
            raise InputError("spark-scan reads .log segments (give the file, its partition dir or the log dir)",
                             path=f)
        topic, partition = _tp_of_dir(f.resolve().parent.name)
        index = f.with_name(f.name[:-len(LOG_SUFFIX)] + INDEX_SUFFIX)
        out.not_regular.extend(irregular_siblings(f))
        out.segments.append(SegmentFile(topic, partition, str(f.resolve()), _base_of(f.name),
                                        f.stat().st_size, str(index.resolve()) if index.is_file() else None))
    out.not_regular.extend(f for d in inputs.log_dirs for f in d.not_regular)
    for part in inputs.partitions:
        _add_partition(part, out)
    for d in inputs.log_dirs:
        for part in d.partitions:
            if part.kind:
                out.notes.append(f"skipped {shown(part.path.name)} (marked {part.kind}; pass it as PATH to scan it)")
                continue
            _add_partition(part, out)


def _base_of(name: str) -> int:
    """A named segment's base offset from its file name; 0 for a file named otherwise (dump reads it too, without
    the checks that need a base offset)."""
    try:
        return offset_from_filename(name)
    except InputError:
        return 0


def _tp_of_dir(name: str) -> tuple[str, int]:
    parsed = parse_partition_dir_name(name)
    if parsed is None:
        return name, -1
    return parsed[0].topic, parsed[0].partition


def _add_partition(part: PartitionDir, out: Discovery) -> None:
    topic, partition = (part.topic_partition.topic, part.topic_partition.partition) if part.topic_partition \
        else (part.path.name, -1)
    out.not_regular.extend(part.not_regular)
    for seg in part.segments:
        log = seg.log.resolve()
        try:
            size = log.stat().st_size
        except OSError as e:
            raise InputError(f"cannot stat: {e.strerror}", path=log) from None
        index = seg.index
        out.segments.append(SegmentFile(topic, partition, str(log), seg.base_offset, size,
                                        str(index.resolve()) if seg.has(INDEX_SUFFIX) else None))


def _discover_remote(url: str, out: Discovery) -> None:
    import pyarrow.fs as pafs

    fs, inner = filesystem_for(url)
    try:
        info = fs.get_file_info(inner)
    except Exception as e:
        raise InputError(f"cannot stat: {e}", path=url) from None
    if info.type == pafs.FileType.NotFound:
        raise InputError("no such file or directory", path=url)
    if info.type == pafs.FileType.File:
        name = url.rstrip("/").rsplit("/", 1)[-1]
        if not name.endswith(LOG_SUFFIX):
            raise InputError("spark-scan reads .log segments", path=url)
        parent = url.rstrip("/").rsplit("/", 2)[-2] if url.count("/") > 3 else ""
        topic, partition = _tp_of_dir(parent)
        out.segments.append(SegmentFile(topic, partition, url, _base_of(name), int(info.size)))
        return
    try:
        listing = fs.get_file_info(pafs.FileSelector(inner, recursive=True))
    except Exception as e:
        raise InputError(f"cannot list: {e}", path=url) from None
    root = inner.rstrip("/")
    files: dict[str, dict[str, int]] = {}  # relative dir -> {name: size}
    for fi in listing:
        if fi.type != pafs.FileType.File:
            continue
        rel = fi.path[len(root):].lstrip("/")
        d, _, name = rel.rpartition("/")
        files.setdefault(d, {})[name] = int(fi.size)
    own_name = root.rsplit("/", 1)[-1]
    for d, names in sorted(files.items()):
        dir_name = d.rsplit("/", 1)[-1] if d else own_name
        if d.count("/") > 0:
            continue  # deeper than a log dir's partition dirs
        parsed = parse_partition_dir_name(dir_name)
        if d and parsed and parsed[1]:
            out.notes.append(f"skipped {shown(dir_name)} (marked {parsed[1]}; pass it as PATH to scan it)")
            continue
        topic, partition = _tp_of_dir(dir_name)
        base_url = join(url, d) if d else url.rstrip("/")
        for name, size in names.items():
            if not (name.endswith(LOG_SUFFIX) and name[:20].isdigit() and len(name) == 20 + len(LOG_SUFFIX)):
                continue
            index_name = name[:20] + INDEX_SUFFIX
            out.segments.append(SegmentFile(topic, partition, join(base_url, name), int(name[:20]), size,
                                            join(base_url, index_name) if index_name in names else None))


# ---------------------------------------------------------------------------------------------- cutting

def cut_points(segment: SegmentFile, split_bytes: int) -> tuple[list[int], str]:
    """Batch-boundary positions at which to cut ``segment`` into ranges of about ``split_bytes``.

    Returns the cuts (strictly increasing, inside ``(0, size)``) and how they were found.
    """
    if segment.size <= split_bytes:
        return [], "whole"
    targets = [k * split_bytes for k in range(1, math.ceil(segment.size / split_bytes))]
    candidates = _index_positions(segment)
    if candidates:
        cuts = _pick(candidates, targets, segment)
        if cuts or len(targets) == 0:
            return cuts, "index"
    if not is_url(segment.path):
        return _walk_cuts(segment, targets), "header-walk"
    return [], "uncut (remote segment without a usable offset index)"


def _index_positions(segment: SegmentFile) -> list[tuple[int, int]]:
    """``(offset, position)`` entries of the segment's ``.index``, or [] when missing or unreadable."""
    if segment.index_path is None:
        return []
    try:
        if is_url(segment.index_path):
            with tempfile.TemporaryDirectory(prefix="kafkatool-index-") as tmp:
                local = local_copy(segment.index_path, tmp)
                if os.path.getsize(local) > MAX_INDEX_BYTES:
                    return []
                contents = read_offset_index(local, segment.base_offset)
        else:
            if os.path.getsize(segment.index_path) > MAX_INDEX_BYTES:
                return []
            contents = read_offset_index(segment.index_path, segment.base_offset)
    except (KafkaToolError, OSError):
        return []
    return [(e.offset, e.position) for e in contents.entries if 0 < e.position < segment.size]  # type: ignore[union-attr]


def _pick(candidates: list[tuple[int, int]], targets: list[int], segment: SegmentFile) -> list[int]:
    """For each target the last candidate at or before it that reads as a batch header there."""
    by_pos = sorted(candidates, key=lambda c: c[1])
    cuts: list[int] = []
    i = 0
    for t in targets:
        best: tuple[int, int] | None = None
        while i < len(by_pos) and by_pos[i][1] <= t:
            best = by_pos[i]
            i += 1
        if best is None or (cuts and best[1] <= cuts[-1]):
            continue
        if _looks_like_batch(segment, best[1], best[0]):
            cuts.append(best[1])
    return cuts


def _looks_like_batch(segment: SegmentFile, position: int, index_offset: int) -> bool:
    """A whole, checksum-valid batch at ``position`` whose offset fits the index entry (an index offset
    is the last offset of the append that started there, so the batch's own offset is at most it)."""
    try:
        head = read_at(segment.path, position, HEADER_SIZE_UP_TO_MAGIC)
        if len(head) < HEADER_SIZE_UP_TO_MAGIC:
            return False
        offset, size = LOG_HEADER.unpack_from(head, 0)
        if not (size >= RECORD_OVERHEAD_V0 and head[MAGIC_OFFSET] <= MAGIC_V2 and size <= MAX_CUT_BATCH_BYTES
                and position + LOG_OVERHEAD + size <= segment.size
                and segment.base_offset <= offset <= index_offset):
            return False
        data = read_at(segment.path, position, LOG_OVERHEAD + size)
        batches = list(iter_batches(data))
        return len(batches) == 1 and batches[0].is_valid()
    except (OSError, KafkaToolError):
        return False


def _walk_cuts(segment: SegmentFile, targets: list[int]) -> list[int]:
    """Cuts from a walk over the batch headers (memory-mapped; reads headers only)."""
    cuts: list[int] = []
    ti = 0
    try:
        with FileRecords(segment.path, max_bytes=segment.size) as fr:
            stream = fr.batches(0, segment.size)
            try:
                for batch in stream:
                    pos = batch.position
                    while ti < len(targets) and pos > targets[ti]:
                        ti += 1
                        if not cuts or pos > cuts[-1]:
                            cuts.append(pos)
                    if ti >= len(targets):
                        break
            except KafkaToolError:
                pass  # the scan reports the corruption; cut only where the walk got to
    except (KafkaToolError, OSError):
        return []
    return [c for c in cuts if 0 < c < segment.size]


# ---------------------------------------------------------------------------------------------- the plan

def make_plan(segments: Iterable[SegmentFile], *, split_bytes: int = DEFAULT_SPLIT_BYTES, parallelism: int = 2,
              share_slots: dict[tuple[str, int], int] | None = None,
              topic_partitions: dict[str, int] | None = None, notes: Iterable[str] = (),
              task_bytes: int | None = None, cut_remote: bool = True) -> Plan:
    """Ranges of at most about ``split_bytes``, packed into tasks of about equal bytes (longest first).

    Tasks aim at ``task_bytes`` each (default: the split size) and number at least ``3 x parallelism``.
    ``cut_remote=False`` keeps remote segments whole (the index check then runs on the one mirror of the segment the
    walk read, not on a second download).
    """
    if split_bytes < 1:
        raise UsageError("the split size must be positive")
    segs = tuple(segments)
    items: list[WorkItem] = []
    out_notes = list(notes)
    for seg in segs:
        cuts, how = cut_points(seg, split_bytes) if cut_remote or not is_url(seg.path) else ([], "whole")
        if how.startswith("uncut"):
            out_notes.append(f"{shown(seg.path)}: {how}")
        bounds = [0, *cuts, seg.size]
        n = len(bounds) - 1
        slots = (share_slots or {}).get((seg.topic, seg.partition), 0)
        tp = (topic_partitions or {}).get(seg.topic, 0)
        for r in range(n):
            items.append(WorkItem(len(items), seg.topic, seg.partition, seg.path, seg.base_offset, bounds[r],
                                  bounds[r + 1], seg.size, r, n, slots, tp, seg.active))
    return Plan(segs, tuple(items), balance(items, task_bytes or split_bytes, parallelism), tuple(out_notes))


def balance(items: Sequence[WorkItem], split_bytes: int, parallelism: int) -> tuple[tuple[int, ...], ...]:
    """Longest-processing-time-first packing: ``max(3 x parallelism, total / split)`` tasks at most.

    Empty ranges weigh one byte, so thousands of empty segments still spread over the tasks.
    """
    if not items:
        return ()
    total = sum(max(it.bytes, 1) for it in items)
    n = min(len(items), max(3 * max(parallelism, 1), math.ceil(total / split_bytes)))
    heap = [(0, t) for t in range(n)]
    members: list[list[int]] = [[] for _ in range(n)]
    for it in sorted(items, key=lambda it: (-max(it.bytes, 1), it.id)):
        load, t = heapq.heappop(heap)
        members[t].append(it.id)
        heapq.heappush(heap, (load + max(it.bytes, 1), t))
    tasks = [tuple(sorted(m)) for m in members if m]
    weight = {it.id: max(it.bytes, 1) for it in items}
    tasks.sort(key=lambda m: -sum(weight[i] for i in m))
    return tuple(tasks)


def whole_segment_item(item: WorkItem) -> WorkItem:
    """The one range covering ``item``'s whole segment (for rescanning a segment whose cuts were wrong)."""
    return replace(item, start=0, end=item.file_size, range_index=0, range_count=1)


def balance_segments(segments: Sequence[SegmentFile], parallelism: int) -> tuple[tuple[int, ...], ...]:
    """Whole segments (indexes of ``segments``) packed into ``3 x parallelism`` tasks by size."""
    n = min(len(segments), 3 * max(parallelism, 1))
    heap = [(0, t) for t in range(n)]
    members: list[list[int]] = [[] for _ in range(n)]
    for i in sorted(range(len(segments)), key=lambda i: (-max(segments[i].size, 1), i)):
        load, t = heapq.heappop(heap)
        members[t].append(i)
        heapq.heappush(heap, (load + max(segments[i].size, 1), t))
    return tuple(tuple(sorted(m)) for m in members if m)
