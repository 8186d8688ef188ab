"""``reindex-time``: rebuild, check and replace the time and offset indexes of segments, offline.

One job per segment (``check_segment``): read the on-disk ``.index``/``.timeindex``, rebuild both by the
3.9 ``LogSegment.recover`` rules from batch headers (``recover_fast``), answer the on-disk entries'
checks on the same walk (``index_verify``), classify, and in ``output``/``in-place`` mode write the
rebuilt files. ``run`` works the jobs in parallel processes and yields results in input order.

Writes: mode ``output`` writes every rebuilt file into ``DIR/<partition dir>/`` (``DIR/<log dir>/<partition dir>/``
when two log dirs hold the same partition name); mode ``in-place`` replaces the
files that differ from the rebuild, each atomically (temp file, fsync, rename, fsync dir) after hard-
linking the old one to ``<name>.bak``. A ``.log`` file is never opened for writing. Segments whose
recovery the broker would not finish (``InvalidOffsetException``: it empties the segment; offset
overflow: it splits it; a malformed transaction marker, when verifying: loading fails) get no files:
writing indexes for them would be wrong either way.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_INDEX_BYTES
from kafkatool.errors import InputError, NotRegularFileError, UsageError
from kafkatool.log.index import OFFSET_ENTRY_SIZE
from kafkatool.log.layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    Inputs,
    PartitionDir,
    Segment,
    log_dir_of,
    offset_from_filename,
)
from kafkatool.log.recovery import SegmentRecovery
from kafkatool.log.recovery.fast import ChunkObserver, recover_fast
from kafkatool.reindex.verify import (
    NOT_REGULAR,
    OK,
    VALID_DIFFERENT,
    Finding,
    IndexCheck,
    IndexType,
    OffsetEntriesCheck,
    OnDiskIndex,
    SegmentFacts,
    Severity,
    TimeEntriesCheck,
    check_offset_index,
    check_time_index,
    load_index,
)
from kafkatool.util import budget as _budget
from kafkatool.util import crash
from kafkatool.util.atomic import atomic_write_bytes, is_temp_name, remove_temp, replace_with_backup
from kafkatool.util.realpath import Resolver
from kafkatool.util.regular import open_regular

Mode = Literal["check", "output", "in-place"]
ZERO_TAIL_PROBE = 1 << 20


@dataclass(frozen=True, slots=True)
class ReindexOptions:
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    verify: bool = False  # check CRCs as the broker's recovery does
    offset_index: bool = True  # also the .index (False: the .timeindex only)
    mode: Mode = "check"
    output_dir: Path | None = None
    backup: bool = True  # in-place mode keeps <name>.bak
    keep_valid: bool = False  # in-place mode leaves valid-but-different files alone


@dataclass(frozen=True, slots=True)
class SegmentTask:
    log: Path
    base_offset: int
    size: int
    active: bool  # the last segment of its partition
    partition: str  # the partition dir's name
    mirror: Path | None = None  # mode output: where this segment's rebuilt files go

    @property
    def name(self) -> str:
        return f"{self.partition}/{self.log.name}"

    def file(self, suffix: str) -> Path:
        return self.log.with_suffix(suffix)  # the .log's name with another suffix


@dataclass(frozen=True, slots=True)
class Action:
    path: Path
    action: Literal["wrote", "replaced", "skipped"]
    backup: Path | None = None
    reason: str = ""


@dataclass(slots=True)
class SegmentResult:
    task: SegmentTask
    batches: int
    valid_bytes: int
    last_offset: int | None
    max_timestamp: int
    stop: str
    log_findings: list[Finding]
    index: IndexCheck | None
    time_index: IndexCheck
    actions: list[Action] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def checks(self) -> list[IndexCheck]:
        return [c for c in (self.index, self.time_index) if c is not None]

    @property
    def severity(self) -> Severity | None:
        found = [f.severity for f in self.log_findings] + [s for c in self.checks if (s := c.severity) is not None]
        return max(found, key=lambda s: s.rank, default=None)


def _log_findings(task: SegmentTask, r: SegmentRecovery) -> list[Finding]:
    out = []
    if r.control is not None:
        c = r.control
        cut = task.size - r.broker_truncates_to
        lost = f"recovery would truncate {cut} bytes at byte {r.broker_truncates_to}; " if cut else ""
        out.append(Finding("log-load-fails", Severity.ERROR, "malformed-marker",
                           f"{lost}{c.describe()}; no index files are written for it"))
    elif r.fatal == "invalid-offset":
        out.append(Finding("log-invalid-offset", Severity.ERROR, "invalid-offset",
                           f"{r.error.message if r.error else ''} at byte {r.error.position if r.error else '?'}: "
                           "the broker's recovery would empty this segment; no index files are written for it"))
    elif r.fatal == "offset-overflow":
        out.append(Finding("log-offset-overflow", Severity.WARNING, "offset-overflow",
                           f"{r.error.message if r.error else ''}: the broker splits this segment at startup "
                           "(KAFKA-6264); no index files are written for it"))
    elif r.valid_bytes < task.size and r.stop is not None:
        cut = task.size - r.valid_bytes
        where = f"recovery would truncate {cut} bytes at byte {r.valid_bytes}"
        if r.stop.kind in ("size-past-end", "short-tail"):
            out.append(Finding("log-truncation", Severity.WARNING, r.stop.kind,
                               f"{where}: a torn tail ({r.stop.message})"))
        elif _zeros_follow(task.log, r.valid_bytes, task.size):
            out.append(Finding("log-truncation", Severity.WARNING, "zero-tail",
                               f"{where}: zero bytes (log.preallocate, or a write the crash never completed)"))
        else:
            msg = r.error.message if r.error is not None else r.stop.message
            out.append(Finding("log-truncation", Severity.ERROR, "corrupt-batch",
                               f"{where}: the first invalid batch: {msg}"))
    return out


def _zeros_follow(path: Path, start: int, end: int) -> bool:
    with open_regular(path) as f:
        probe = f.pread(start, min(end - start, ZERO_TAIL_PROBE))
    return not probe.strip(b"\0")


def _load(path: Path, index_type: IndexType, base_offset: int,
          irregular: dict[Path, NotRegularFileError]) -> OnDiskIndex | None:
    """The on-disk index, as ``load_index``; one that is not a regular file is never read: it goes into
    ``irregular`` and reads as missing."""
    try:
        return load_index(path, index_type, base_offset)
    except NotRegularFileError as e:
        irregular[path] = e
        return None


def _not_regular(check: IndexCheck, e: NotRegularFileError) -> IndexCheck:
    """The verdict on an index that is not a regular file: that alone (what a rebuild would put there does not
    matter while a FIFO, a device or a broken symlink holds the name), and never written over."""
    check.findings[:] = [Finding(NOT_REGULAR, Severity.ERROR, NOT_REGULAR,
                                 f"{e.message}: the broker cannot open it; remove it, and the broker rebuilds it")]
    check.on_disk_entries = None
    return check


def check_segment(task: SegmentTask, options: ReindexOptions) -> SegmentResult:
    """Rebuild, judge and (by mode) write one segment's indexes."""
    started = time.perf_counter()
    index_path, time_path = task.file(INDEX_SUFFIX), task.file(TIME_INDEX_SUFFIX)
    irregular: dict[Path, NotRegularFileError] = {}
    disk_index = _load(index_path, "offset", task.base_offset, irregular) if options.offset_index else None
    disk_time = _load(time_path, "time", task.base_offset, irregular)
    # loaded: there and a regular file (load_index opened it)
    index_exists = disk_index is not None if options.offset_index else \
        index_path.is_file() and index_path not in irregular
    observers: list[ChunkObserver] = []
    offset_answers = time_answers = None
    if disk_index is not None and disk_index.entries:
        offset_answers = OffsetEntriesCheck(disk_index.second)
        observers.append(offset_answers)
    if disk_time is not None and disk_time.entries:
        time_answers = TimeEntriesCheck(disk_time.second)
        observers.append(time_answers)
    r = recover_fast(str(task.log), task.size, task.base_offset, index_interval_bytes=options.index_interval_bytes,
                     verify=options.verify, observers=observers)
    invalid_batch = (r.stop is not None and r.stop.kind == "corrupt" and r.valid_bytes < task.size
                     and not _zeros_follow(task.log, r.valid_bytes, task.size))
    facts = SegmentFacts(task.base_offset, r.valid_bytes, r.last_offset, r.max_timestamp, task.active,
                         broker_rebuilds=not index_exists, log_size=task.size, invalid_batch=invalid_batch)
    rebuilt_index, rebuilt_time = r.encode_offset_index(), r.encode_time_index()
    index_check = (check_offset_index(disk_index, offset_answers, rebuilt_index, facts, index_path)
                   if options.offset_index else None)
    time_check = check_time_index(disk_time, time_answers, rebuilt_time, facts, time_path)
    if index_check is not None and index_path in irregular:
        index_check = _not_regular(index_check, irregular[index_path])
    if time_path in irregular:
        time_check = _not_regular(time_check, irregular[time_path])
    result = SegmentResult(task, r.batches, r.valid_bytes, r.last_offset, r.max_timestamp,
                           r.stop.kind if r.stop else "end", _log_findings(task, r), index_check, time_check)
    if options.mode != "check":
        files = [(time_check, rebuilt_time)]
        if index_check is not None:
            files.insert(0, (index_check, rebuilt_index))
        for check, data in files:
            if check.status == NOT_REGULAR and options.mode == "in-place":
                result.actions.append(Action(check.path, "skipped", reason="not a regular file: never written over"))
                continue
            result.actions.append(_write(task, check, data, options, r.fatal is not None))
    result.seconds = time.perf_counter() - started
    return result


def _write(task: SegmentTask, check: IndexCheck, data: bytes, options: ReindexOptions, fatal: bool) -> Action:
    if fatal:
        return Action(check.path, "skipped", reason="the broker would not keep this segment as it is")
    if options.mode == "output":
        assert task.mirror is not None
        task.mirror.mkdir(parents=True, exist_ok=True)
        dest = task.mirror / check.path.name
        atomic_write_bytes(dest, data)
        crash.point()
        return Action(dest, "wrote")
    if check.status == OK:
        return Action(check.path, "skipped", reason="identical to the rebuild")
    if options.keep_valid and all(f.kind == VALID_DIFFERENT for f in check.findings):
        return Action(check.path, "skipped", reason="valid (kept, as asked)")
    existed = check.on_disk_entries is not None
    bak = replace_with_backup(check.path, data, backup=options.backup)
    crash.point()
    return Action(check.path, "replaced" if existed else "wrote", bak)


# ---------------------------------------------------------------------------------------------- planning

def plan(inputs: Inputs, options: ReindexOptions) -> list[SegmentTask]:
    """The segments behind the PATH arguments, in partition and offset order, each once."""
    tasks: list[SegmentTask] = []
    seen: set[str] = set()
    resolve = Resolver()

    def add_partition(part: PartitionDir, only: Iterable[Segment] | None = None) -> None:
        segs = part.segments
        last = segs[-1].base_offset if segs else None
        for seg in (segs if only is None else only):
            log = seg.log
            key = resolve(log)
            if key in seen:
                continue
            seen.add(key)
            tasks.append(SegmentTask(log, seg.base_offset, os.stat(log).st_size, seg.base_offset == last,
                                     part.path.name))

    for f in inputs.files:
        if not f.name.endswith(LOG_SUFFIX):
            raise UsageError(f"not a .log segment (give a .log file, a partition dir or a log dir): {f}")
        base = offset_from_filename(f.name)
        part = PartitionDir.scan(f.parent)
        match = [s for s in part.segments if s.base_offset == base]
        if not match:
            raise InputError("not a segment file named by its base offset", path=f)
        add_partition(part, match)
    for part in inputs.all_partitions():
        add_partition(part)
    if options.output_dir is not None:
        tasks = [dataclasses.replace(t, mirror=m) for t, m in zip(tasks, _mirrors(tasks, options.output_dir),
                                                                   strict=True)]
    return tasks


def _mirrors(tasks: list[SegmentTask], output: Path) -> list[Path]:
    """``DIR/<partition dir>``; when two log dirs hold the same partition dir name (JBOD dirs given together, a
    ``-future`` copy's source), ``DIR/<log dir>/<partition dir>`` for every partition, the log dir named by its
    base name, or by its whole path when base names repeat too."""
    dirs = [log_dir_of(t.log.parent) for t in tasks]
    owners: dict[str, set[Path]] = {}
    for t, d in zip(tasks, dirs, strict=True):
        owners.setdefault(t.partition, set()).add(d)
    if all(len(v) == 1 for v in owners.values()):
        return [output / t.partition for t in tasks]
    unique = sorted(set(dirs))
    names = [d.name for d in unique]
    label = {d: d.name if names.count(d.name) == 1 else "_".join(d.parts[1:]) for d in unique}
    return [output / label[d] / t.partition for t, d in zip(tasks, dirs, strict=True)]


def log_dirs_of(tasks: Iterable[SegmentTask]) -> list[Path]:
    """The log dirs whose ``.lock`` guards the tasks' files."""
    out: list[Path] = []
    for t in tasks:
        d = log_dir_of(t.log.parent)
        if d not in out:
            out.append(d)
    return out


def remove_stale_temp_files(tasks: Iterable[SegmentTask]) -> list[Path]:
    """Temp files an interrupted in-place run left (``.kafkatool-tmp-*``): never a broker file."""
    removed = []
    for d in {t.log.parent for t in tasks}:
        for name in os.listdir(d):
            if is_temp_name(name) and remove_temp(d / name):
                removed.append(d / name)
    return removed


# ---------------------------------------------------------------------------------------------- memory

# segment.index.bytes: the broker rolls a segment whose index is full
MAX_INDEX_ENTRIES = DEFAULT_SEGMENT_INDEX_BYTES // OFFSET_ENTRY_SIZE
INDEX_ENTRY_BYTES = 200  # measured ~190: rebuilt entries (~50 B) and the on-disk ones read to compare (~140 B)


def working_set(segment_sizes: Iterable[int], index_interval_bytes: int) -> int:
    """Bytes one worker holds for the index entries of the largest segment (its on-disk and rebuilt
    ``.index``/``.timeindex`` arrays): at most one entry per ``index.interval.bytes`` (or per smallest
    batch), and no more than a full 10 MiB index."""
    largest = max(segment_sizes, default=0)
    entries = min(largest // max(index_interval_bytes, 64) + 1, MAX_INDEX_ENTRIES)
    return entries * INDEX_ENTRY_BYTES


# ---------------------------------------------------------------------------------------------- running

def run(tasks: list[SegmentTask], options: ReindexOptions, *, jobs: int = 1,
        on_done: Callable[[SegmentResult], None] | None = None) -> Iterator[SegmentResult]:
    """Results in task order; ``on_done`` sees each as soon as it finishes (for progress)."""
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            res = check_segment(t, options)
            if on_done:
                on_done(res)
            yield res
        return
    # Each worker sizes itself from its share of the run's memory budget (the parent's active one).
    with ProcessPoolExecutor(max_workers=jobs, initializer=_budget.activate, initargs=(_budget.current(),)) as pool:
        pending: dict[Future[SegmentResult], int] = {}
        done: dict[int, SegmentResult] = {}
        nxt = 0
        try:
            for i, t in enumerate(tasks):
                pending[pool.submit(check_segment, t, options)] = i
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i = pending.pop(fut)
                    res = fut.result()
                    if on_done:
                        on_done(res)
                    done[i] = res
                while nxt in done:
                    yield done.pop(nxt)
                    nxt += 1
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


# ---------------------------------------------------------------------------------------------- reporting

def finding_dict(f: Finding) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": f.kind, "severity": f.severity.value, "reason": f.reason, "message": f.message}
    if f.entry is not None:
        d["entry"] = f.entry
    if f.count:
        d["count"] = f.count
    return d


def result_records(res: SegmentResult) -> list[dict[str, Any]]:
    """JSON-lines objects for one segment: one ``index`` object per index file, one ``log`` object."""
    t = res.task
    out: list[dict[str, Any]] = [{
        "type": "segment", "partition": t.partition, "log": str(t.log), "base_offset": t.base_offset,
        "size": t.size, "valid_bytes": res.valid_bytes, "batches": res.batches, "last_offset": res.last_offset,
        "max_timestamp": res.max_timestamp, "active": t.active, "stop": res.stop,
        "severity": res.severity.value if res.severity else None,
        "findings": [finding_dict(f) for f in res.log_findings], "seconds": round(res.seconds, 6)}]
    for c in res.checks:
        rec: dict[str, Any] = {
            "type": "index", "partition": t.partition, "path": str(c.path), "index": c.index_type,
            "status": c.status, "severity": c.severity.value if c.severity else None,
            "entries_on_disk": c.on_disk_entries, "entries_rebuilt": c.rebuilt_entries, "length": c.length,
            "findings": [finding_dict(f) for f in c.findings]}
        for a in res.actions:
            if a.path.name == c.path.name:
                rec["action"] = a.action
                rec["written_to"] = str(a.path)
                if a.backup is not None:
                    rec["backup"] = str(a.backup)
                if a.reason:
                    rec["action_reason"] = a.reason
        out.append(rec)
    return out


@dataclass(frozen=True, slots=True)
class SegmentVerdict:
    """One segment's index verdict in a flat form (``spark-scan``'s index check rows)."""

    classification: str  # ok | missing | untrimmed | corrupt | stale | valid-different | log findings
    severity: str  # "" | info | warning | error (error: the broker would misbehave: exit 1)
    detail: str
    offset_entries_on_disk: int
    offset_entries_rebuilt: int
    time_entries_on_disk: int
    time_entries_rebuilt: int


def verify_segment(log_path: str | Path, base_offset: int, *, active: bool = False,
                   index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, verify: bool = False) -> SegmentVerdict:
    """The ``reindex-time`` check's verdict for one segment, read-only; ``verify``: CRCs checked as the broker's
    recovery checks them (``reindex-time``'s verifying check)."""
    log = Path(log_path)
    task = SegmentTask(log, base_offset, log.stat().st_size, active, log.parent.name)
    res = check_segment(task, ReindexOptions(index_interval_bytes=index_interval_bytes, verify=verify))
    findings = [*res.log_findings, *(f for c in res.checks for f in c.findings)]
    worst = max(findings, key=lambda f: f.severity.rank, default=None)
    index, time_index = res.index, res.time_index
    return SegmentVerdict(
        worst.kind if worst is not None else OK, worst.severity.value if worst is not None else "",
        "; ".join(f.message for f in findings),
        (index.on_disk_entries or 0) if index is not None else 0, index.rebuilt_entries if index is not None else 0,
        time_index.on_disk_entries or 0, time_index.rebuilt_entries)
