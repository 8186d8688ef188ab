"""The per-range scan behind ``spark-scan``: ``dump``'s own walk over a byte range, joined range by range into
segments exactly as one walk of the file, then partitions, topics and the total; and the single-process engine.

``scan_range(item)`` walks the batches a range owns with ``dump``'s engine (``kafkatool.dump``: ``dump_file``
with ``start``/``stop``, deep and verifying, as dump's deep, verifying walk walks), a ``BatchStats`` observer adding
up the figures (``kafkatool.scan.stats``). It returns the figures, dump's findings for the range, and where the
walk handed off to the next range. The same function runs on Spark executors and here in one process (or a
multiprocessing pool).

``merge_segment`` joins a segment's ranges in order, by the rules of one walk from byte 0: a range's walk must
hand off exactly where the next range starts (else the planned cut was not where the whole-file walk goes, and the
segment is walked again whole); a range whose walk ended (the file's end, damage it did not resync past) ends the
segment, later ranges are dropped; the offsets followed across a boundary are joined by dump's own rule
(``DumpEngine.offset_step``); ``offset-overflow`` is reported once per file. So a segment's findings, counts and
exit code are those of dump's deep, verifying walk on the file, however it was cut.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.constants import DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.dump import DEFAULT_RESYNC_LIMIT, DumpEngine, DumpOptions, FileEnd, FileKind, Finding, Severity
from kafkatool.errors import ExitCode, InputError
from kafkatool.scan.plan import Plan, WorkItem, parent_of, whole_segment_item
from kafkatool.scan.source import DEFAULT_CHUNK_BYTES, DEFAULT_MAX_BATCH_BYTES, Mirror, host_name, is_url
from kafkatool.scan.stats import BatchSink, BatchStats, KeyShareStats, ShareTarget, Stats
from kafkatool.util.budget import MemoryBudget
from kafkatool.util.printable import shown

# Findings a walk makes where it stops or skips bytes (the rest of the file judged, a resync): the place where the
# walk of a range depends on bytes it may not have (a remote mirror) or on offsets followed before it.
STOP_KINDS = frozenset({"corrupt-region", "corrupt", "torn-tail", "trailing-garbage", "trailing-zeros",
                        "wrong-file-type", "io-error"})
_GAP_KINDS = frozenset({"offset-gap", "offset-order"})


@dataclass(frozen=True, slots=True)
class ScanOptions:
    decompress_limit: int | None = None
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    hot_key_capacity: int = 64
    resync_limit: int = DEFAULT_RESYNC_LIMIT
    # The worker's share of the run's memory budget: Spark's Python workers activate it (a forked pool
    # inherits the parent's active one), so mapped-page windows and default limits follow the memory budget.
    budget: MemoryBudget | None = None
    # An S3-compatible endpoint for s3:// inputs, carried to the executors with every task: a session that was
    # already running (a notebook's) has its executors' environment fixed, so setting it there is not enough.
    s3_endpoint: str | None = None


DEFAULT_OPTIONS = ScanOptions()


@dataclass(slots=True)
class RangeResult:
    item_id: int
    stats: Stats
    findings: list[Finding]
    handoff: int | None  # where the walk handed off to the next range; None: it ended in the file
    valid_bytes: int = 0  # bytes of the batches walked
    invalid_bytes: int = 0  # bytes of the range in no batch walked (skipped or after the walk's end)
    first_followed: tuple[int, int] | None = None  # (batch position, offset) of the first record followed
    last_followed: int | None = None  # offset of the last record followed
    keyshare: KeyShareStats | None = None
    bytes_scanned: int = 0  # bytes read from storage
    exported: int = 0  # records written by the export
    export_txn_rows: int = 0  # ... of transactional data (their ``aborted`` is answered once every range is done)
    markers: list[tuple[int, int, bool]] = field(default_factory=list)  # the export's (producer id, offset, abort)
    index_check: dict[str, Any] | None = None  # the segment's index verdict (INDEX_CHECK_SCHEMA), on its first range


# ---------------------------------------------------------------------------------------------- scanning

def scan_range(item: WorkItem, opts: ScanOptions = DEFAULT_OPTIONS, sink: BatchSink | None = None,
               reset: Callable[[], None] | None = None, whole: Callable[[str], None] | None = None) -> RangeResult:
    """Walk the batches ``item`` owns with ``dump``'s engine; ``sink`` also hears every batch (``reset``: forget
    what it heard, when a remote range is walked again with more bytes). ``whole`` is then called with a local path
    holding the whole segment (the file itself, or a remote segment's mirror) for checks that read all of it."""
    if not is_url(item.path):
        r = _walk(item, opts, item.path, None, sink)
        if whole is not None and not any(f.kind == "io-error" for f in r.findings):
            whole(item.path)
        return r
    with tempfile.TemporaryDirectory(prefix="kafkatool-range-") as tmp:
        try:
            mirror = Mirror(item.path, item.file_size, tmp, chunk_bytes=opts.chunk_bytes)
        except InputError as e:
            return unreadable(item, e.message)
        try:
            if item.last:
                hi = mirror.size
                mirror.fetch(item.start, hi)
            else:
                hi = mirror.cover_range(item.start, item.end, opts.max_batch_bytes)
            while True:
                r = _walk(item, opts, mirror.path, hi if hi < mirror.size else None, sink)
                if hi >= mirror.size or (r.handoff is not None and not any(f.kind in STOP_KINDS for f in r.findings)):
                    if whole is not None:
                        mirror.fetch(0, mirror.size)  # nothing more when the segment is one range
                        whole(mirror.path)
                    r.bytes_scanned = mirror.bytes_read
                    return r
                # The walk went where the mirror has no bytes (damage, resync): again over the rest of the file.
                hi = mirror.size
                mirror.fetch(item.start, hi)
                if reset is not None:
                    reset()
        except InputError as e:
            return unreadable(item, e.message)
        finally:
            mirror.close()


def _walk(item: WorkItem, opts: ScanOptions, local: str, max_bytes: int | None, sink: BatchSink | None) -> RangeResult:
    share = ShareTarget(item.share_slots, item.partition, item.topic_partitions, opts.hot_key_capacity) \
        if item.share_slots else None
    obs = BatchStats(item.path, max_message_bytes=opts.max_message_bytes, share=share, sink=sink)
    engine = DumpEngine(DumpOptions(deep=True, verify=True, emit_data=False, decompress_limit=opts.decompress_limit,
                                    resync_limit=opts.resync_limit, observer=obs))
    findings: list[Finding] = []
    end: FileEnd | None = None
    for ev in engine.dump_file(Path(local), FileKind.LOG, start=item.start, stop=None if item.last else item.end,
                               display=item.path, max_bytes=max_bytes):
        if isinstance(ev, Finding):
            findings.append(ev)
        elif isinstance(ev, FileEnd):
            end = ev
    if any(f.kind == "io-error" for f in findings):
        return unreadable(item, next(f.message for f in findings if f.kind == "io-error"))
    assert end is not None  # dump_file always ends a file
    if end.stopped == "max-bytes":  # a batch runs past the mirrored bytes: not a finding, a fetch to make
        end = FileEnd(end.path, end.kind, end.size, end.batches, end.records, 0, end.valid_bytes, end.invalid_bytes)
        findings.append(Finding("io-error", Severity.ERROR, item.path, "the walk ran past the bytes read",
                                end.valid_bytes + item.start))
    stats = obs.flush()
    return RangeResult(item.id, stats, findings, end.handoff, end.valid_bytes, end.invalid_bytes, obs.first_followed,
                       obs.last_followed, obs.keyshare, end.valid_bytes + end.invalid_bytes)


def unreadable(item: WorkItem, message: str) -> RangeResult:
    """A range whose file could not be opened or read here: one ``io-error`` (as dump reports an unreadable file,
    exit 2) naming this host and the whole segment as not read."""
    text = message if message.startswith("cannot") else f"cannot read: {message}"
    return RangeResult(item.id, Stats(), [Finding(
        "io-error", Severity.ERROR, item.path,
        f"{text} (on host {host_name()}); {item.file_size} bytes not read", None)], None, 0, item.file_size)


# ---------------------------------------------------------------------------------------------- merging

@dataclass(slots=True)
class SegmentResult:
    topic: str
    partition: int
    base_offset: int
    path: str
    file_size: int
    stats: Stats
    findings: list[Finding]
    valid_bytes: int
    invalid_bytes: int
    keyshare: KeyShareStats | None
    ranges: int
    rescanned: bool = False
    used: list[RangeResult] = field(default_factory=list)  # the ranges whose walks make up the segment's walk

    @property
    def stop(self) -> Finding | None:
        """The first finding where the walk stopped or skipped bytes (None: it read the file to its end)."""
        return next((f for f in self.findings if f.kind in STOP_KINDS), None)

    @property
    def unread_bytes(self) -> int:
        return self.invalid_bytes

    @property
    def unreadable(self) -> bool:
        return any(f.kind == "io-error" for f in self.findings)


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
    def findings(self) -> list[Finding]:
        """dump's findings of every segment, in plan order."""
        return [f for s in self.segments for f in s.findings]

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def io_errors(self) -> int:
        return sum(1 for f in self.findings if f.kind == "io-error")

    @property
    def exit_code(self) -> ExitCode:
        """As ``dump``'s: 2 when a file could not be read, 1 for errors and warnings, else 0."""
        if self.io_errors:
            return ExitCode.USAGE
        if any(f.severity in (Severity.ERROR, Severity.WARNING) for f in self.findings):
            return ExitCode.FINDINGS
        return ExitCode.OK


def merge_segment(items: Sequence[WorkItem], results: Mapping[int, RangeResult]) -> SegmentResult | None:
    """Fold a segment's ranges in order, as one walk of the file would see them (see the module doc); None when the
    ranges do not join as that walk (the caller walks the segment again, whole)."""
    ordered = sorted(items, key=lambda it: it.range_index)
    first = ordered[0]
    r0 = results[first.id]
    stats, ks = r0.stats, r0.keyshare
    findings = list(r0.findings)
    used = [r0]
    valid, invalid, handoff, last = r0.valid_bytes, r0.invalid_bytes, r0.handoff, r0.last_followed
    overflow = any(f.kind == "offset-overflow" for f in findings)
    joiner: DumpEngine | None = None
    for it in ordered[1:]:
        if handoff is None:
            invalid += it.bytes  # the walk ended before this range: its bytes are not read, as in one walk
            continue
        if handoff != it.start:
            return None
        r = results[it.id]
        if any(f.kind == "io-error" for f in r.findings):
            return None
        if r.first_followed is None and any(f.kind in STOP_KINDS for f in r.findings):
            return None  # its walk judged a stop without the offsets followed before it
        own = [f for f in r.findings if not (overflow and f.kind == "offset-overflow")]
        overflow = overflow or any(f.kind == "offset-overflow" for f in own)
        if last is not None and r.first_followed is not None:
            if joiner is None:
                joiner = DumpEngine(DumpOptions())
            pos, nxt = r.first_followed
            gap = joiner.offset_step(it.path, pos, last, nxt)
            if gap is not None:
                at = next((i for i, f in enumerate(own) if f.position is not None and (
                    f.position > pos or (f.position == pos and f.kind in _GAP_KINDS))), len(own))
                own.insert(at, gap)
        findings.extend(own)
        used.append(r)
        stats.merge(r.stats, sequential=True)
        if ks is not None and r.keyshare is not None:
            ks.merge(r.keyshare)
        valid += r.valid_bytes
        invalid += r.invalid_bytes
        handoff = r.handoff
        if r.last_followed is not None:
            last = r.last_followed
    if handoff is not None:
        return None  # the last range never hands off: the plan and results disagree
    if any(f.kind == "io-error" for f in findings):
        invalid = first.file_size
    return SegmentResult(first.topic, first.partition, first.base_offset, first.path, first.file_size, stats,
                         findings, valid, invalid, ks, len(ordered), used=used)


def merge_results(plan: Plan, results: Mapping[int, RangeResult],
                  rescan: Callable[[WorkItem], RangeResult], notes: Iterable[str] = ()) -> ScanReport:
    """Segments, partitions, topics and the total, merged in plan order (deterministic). ``rescan`` walks a segment
    whole (an item covering it, with its first range's id) where its ranges do not join."""
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
            out_notes.append(f"{shown(whole.path)}: the walks of its ranges did not join as one walk of the file "
                             "(a cut the whole-file walk does not reach); walked it whole")
        segments.append(seg)
    return summarize(segments, out_notes)


def summarize(segments: Sequence[SegmentResult], notes: Iterable[str] = ()) -> ScanReport:
    """Partitions, topics and the total of segments in plan order (sorted by topic, partition, dir, offset)."""
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
            p = PartitionResult(seg.topic, seg.partition, pdir, 1, seg.stats.copy(),
                                seg.keyshare.copy() if seg.keyshare is not None else None, [])
            partitions.append(p)
        if seg.stop is not None:
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
    return ScanReport(list(segments), partitions, topics, total, list(notes))


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


def local_path(path: str) -> bool:
    return not is_url(path) and os.path.isabs(path)
