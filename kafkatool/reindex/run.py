"""``reindex_time``: the one entry point of ``kafkatool reindex-time``, usable from Python with the same results.

A :class:`ReindexRequest` says what to do (check, write a mirror tree, replace in place, or report what the
broker's startup recovery would do); a :class:`ReindexListener` hears every segment or partition as it is
done (the command renders them); the :class:`ReindexOutcome` holds the counts and the exit code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES, INT32_MAX
from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.layout import INDEX_SUFFIX, TIME_INDEX_SUFFIX, Inputs, IrregularFile, PartitionDir, resolve_inputs
from kafkatool.log.loader import LogDirState, PartitionRecovery, log_dir_notes, report
from kafkatool.log.lock import check_read, hold_for_write, hold_log_dir, live_notice, refuse_if_live
from kafkatool.log.outputs import Output, refuse_aliasing
from kafkatool.record.file_records import data_end
from kafkatool.reindex.engine import (
    Mode,
    ReindexOptions,
    SegmentResult,
    SegmentTask,
    log_dirs_of,
    plan,
    remove_stale_temp_files,
    run,
    working_set,
)
from kafkatool.reindex.verify import Severity
from kafkatool.util import budget
from kafkatool.util.atomic import DirMaker
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size

RunMode = Literal["check", "output", "in-place", "recovery-report"]


@dataclass(frozen=True, slots=True)
class ReindexRequest:
    """What to reindex and how. ``output`` goes with mode "output"; ``backup``/``keep_valid`` with "in-place"."""

    paths: Sequence[Path]
    mode: RunMode = "check"
    output: Path | None = None
    backup: bool = True
    keep_valid: bool = False
    offset_index: bool = True
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    verify: bool = False
    jobs: int = 1
    live: bool = False  # read a log dir a live broker holds (never written)
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)


class ReindexListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway)."""

    def note(self, text: str) -> None:
        """Progress information (a temp file an interrupted run left, removed)."""

    def start(self, total_bytes: int, units: int, unit: str) -> None:
        """The work is planned: ``units`` segments or partitions of ``total_bytes``."""

    def segment(self, result: SegmentResult) -> None:
        """One segment checked (and its files written, in modes output and in-place)."""

    def log_dir(self, path: Path, state: LogDirState) -> None:
        """recovery-report: one log dir's own state (clean shutdown marker, notes)."""

    def partition(self, result: PartitionRecovery) -> None:
        """recovery-report: what the broker's startup would do to one partition."""

    def advance(self, nbytes: int) -> None:
        """``nbytes`` more of the planned total are done."""

    def not_regular(self, file: IrregularFile) -> None:
        """A file of a partition or log dir that is not a regular file (a FIFO, a device, a directory, a bad
        symlink): never read; a finding (exit 1)."""


@dataclass(slots=True)
class ReindexOutcome:
    mode: RunMode
    units: int = 0  # segments, or partitions for recovery-report
    bytes: int = 0
    seconds: float = 0.0
    counts: dict[Severity, int] = field(default_factory=lambda: {s: 0 for s in Severity})
    files_written: int = 0
    errors_remain: bool = False  # an index (or log) error that this run did not fix
    loses_data: bool = False  # recovery-report: the broker would lose data or fail to load
    not_regular: int = 0  # files of the dirs walked that are not regular files (never read)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.errors_remain or self.loses_data or self.not_regular else ExitCode.OK


def reindex_time(request: ReindexRequest, listener: ReindexListener | None = None) -> ReindexOutcome:
    """Run ``reindex-time`` as the command does (locks, budget, workers); the listener hears the results."""
    lis = listener or ReindexListener()
    req = request
    if not 0 <= req.index_interval_bytes <= INT32_MAX:
        raise UsageError(f"must be between 0 and {INT32_MAX}", field="index_interval_bytes")
    if req.jobs < 1:
        raise UsageError("must be at least 1", field="jobs")
    if (req.mode == "output") != (req.output is not None):
        raise UsageError("an output directory goes with mode 'output' and only with it", field="output")
    inputs = resolve_inputs(list(req.paths))
    if req.mode == "in-place":
        for p in req.paths:  # writes: never into a live log dir, live or not
            refuse_if_live(p)
    else:
        if req.output is not None:
            refuse_if_live(req.output)
        for lock in check_read(req.paths, live=req.live):
            lis.warning(live_notice(lock))
    if req.mode == "recovery-report":
        partitions = inputs.all_partitions() + _partitions_of_files(inputs)
        _use_budget(req, [_size(s.log) for p in partitions for s in p.segments])
        return _recovery_report(req, lis, partitions, inputs.not_regular())
    mode: Mode = req.mode
    options = ReindexOptions(req.index_interval_bytes, req.verify, req.offset_index, mode,
                             req.output.resolve() if req.output else None, backup=req.backup,
                             keep_valid=req.keep_valid)
    tasks = plan(inputs, options)
    # The index files of the segments checked are judged with them (a not-regular-file verdict); the others
    # are reported here.
    judged = {t.file(s) for t in tasks for s in ((INDEX_SUFFIX, TIME_INDEX_SUFFIX) if req.offset_index
                                                  else (TIME_INDEX_SUFFIX,))}
    irregular = [f for f in inputs.not_regular() if f.path not in judged]
    if req.output is not None:  # the tree and each DIR/<partition> it receives: none may be an input's
        mirrors = dict.fromkeys(t.mirror for t in tasks if t.mirror is not None)
        refuse_aliasing(req.paths, [Output("output", req.output),
                                    *(Output("output", m, given=req.output) for m in mirrors)])
    _use_budget(req, [data_end(t.log) for t in tasks])
    if mode == "in-place":
        return _locked(log_dirs_of(tasks), lambda: _run(req, lis, tasks, options, irregular))
    if req.output is not None:
        with hold_for_write(req.output):  # a stopped broker's log dir that the output is in stays locked meanwhile
            return _run_into_mirrors(req, lis, tasks, options, irregular)
    return _run(req, lis, tasks, options, irregular)


def _run_into_mirrors(req: ReindexRequest, lis: ReindexListener, tasks: list[SegmentTask],
                      options: ReindexOptions, irregular: list[IrregularFile]) -> ReindexOutcome:
    """Mode output: the mirror dirs are made here (the workers write into them); a failed run (a full disk) removes
    the ones it made, with what it wrote there, and a finished one those that stayed empty."""
    made = DirMaker()
    for mirror in dict.fromkeys(t.mirror for t in tasks if t.mirror is not None):
        made.makedirs(mirror)
    try:
        out = _run(req, lis, tasks, options, irregular)
    except BaseException:
        made.remove()
        raise
    made.prune()
    return out


def _use_budget(req: ReindexRequest, sizes: list[int]) -> None:
    """The workers split the budget; each holds the index entries of one segment at a time (the largest decides
    the minimum); pool workers activate the parent's budget. ``sizes``: where each segment's data ends (a
    preallocated segment's unwritten tail holds no batch, so no index entry)."""
    largest = max(sizes, default=0)
    working = working_set(sizes, req.index_interval_bytes)
    budget.activate(budget.resolve(req.memory, workers=req.jobs, working_bytes=working,
                                   working=f"index entries of a {format_size(largest)} segment"))


def _size(path: Path) -> int:
    return data_end(path)


def _locked(dirs: list[Path], body: Callable[[], ReindexOutcome]) -> ReindexOutcome:
    if not dirs:
        return body()
    with hold_log_dir(dirs[0]):
        return _locked(dirs[1:], body)


def _partitions_of_files(inputs: Inputs) -> list[PartitionDir]:
    seen = {p.path.resolve() for p in inputs.all_partitions()}
    out: list[PartitionDir] = []
    for f in inputs.files:
        d = f.parent.resolve()
        if d not in seen:
            seen.add(d)
            out.append(PartitionDir.scan(f.parent))
    return out


def _run(req: ReindexRequest, lis: ReindexListener, tasks: list[SegmentTask], options: ReindexOptions,
         irregular: list[IrregularFile]) -> ReindexOutcome:
    if options.mode == "in-place":
        for p in remove_stale_temp_files(tasks):
            lis.note(f"removed {shown(p)}: a temp file an interrupted in-place run left")
    out = ReindexOutcome(req.mode, units=len(tasks), bytes=sum(t.size for t in tasks))
    _report_not_regular(lis, out, irregular)
    started = time.perf_counter()
    lis.start(out.bytes, len(tasks), "segments")

    def tick(res: SegmentResult) -> None:
        lis.advance(res.task.size)

    for res in run(tasks, options, jobs=req.jobs, on_done=tick):
        for f in res.log_findings:
            out.counts[f.severity] += 1
        for c in res.checks:
            for f in c.findings:
                out.counts[f.severity] += 1
        out.files_written += sum(1 for a in res.actions if a.action != "skipped")
        out.errors_remain |= _errors_remain(res, options)
        lis.segment(res)
    out.seconds = time.perf_counter() - started
    return out


def _errors_remain(res: SegmentResult, options: ReindexOptions) -> bool:
    if any(f.severity == Severity.ERROR for f in res.log_findings):
        return True
    fixed = {a.path.name for a in res.actions if a.action in ("wrote", "replaced")} if options.mode == "in-place" \
        else set()
    return any(c.severity == Severity.ERROR and c.path.name not in fixed for c in res.checks)


def _report_not_regular(lis: ReindexListener, out: ReindexOutcome, irregular: list[IrregularFile]) -> None:
    for f in irregular:
        out.not_regular += 1
        out.counts[Severity.ERROR] += 1
        lis.not_regular(f)


def _recovery_report(req: ReindexRequest, lis: ReindexListener, partitions: list[PartitionDir],
                     irregular: list[IrregularFile]) -> ReindexOutcome:
    for d, state in log_dir_notes(partitions):
        lis.log_dir(d, state)
    sizes = {p.path: sum(_size(s.log) for s in p.segments) for p in partitions}
    out = ReindexOutcome("recovery-report", units=len(partitions), bytes=sum(sizes.values()))
    _report_not_regular(lis, out, irregular)
    started = time.perf_counter()
    lis.start(out.bytes, len(partitions), "partitions")

    def tick(res: PartitionRecovery) -> None:
        lis.advance(sizes.get(res.path, 0))

    for part in report(partitions, index_interval_bytes=req.index_interval_bytes, jobs=req.jobs, on_done=tick):
        out.loses_data |= part.loses_data
        lis.partition(part)
    out.seconds = time.perf_counter() - started
    return out
