"""The work of ``kafkatool reindex-time`` (imported only when the command runs)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from kafkatool.commands._common import Output, OutputFormat, check_live, require, use_budget
from kafkatool.errors import ExitCode
from kafkatool.index_verify import OK, Severity
from kafkatool.lock import hold_for_write, hold_log_dir, refuse_if_live
from kafkatool.logdir import Inputs, PartitionDir, resolve_inputs
from kafkatool.recovery_report import PartitionRecovery, log_dir_notes, report
from kafkatool.reindex import (
    Mode,
    ReindexOptions,
    SegmentResult,
    SegmentTask,
    log_dirs_of,
    plan,
    remove_stale_temp_files,
    result_records,
    run,
    working_set,
)
from kafkatool.units import format_size


def reindex_time_run(paths: list[Path], *, check: bool, output: Path | None, in_place: bool, no_backup: bool,
                     keep_valid: bool, recovery_report: bool, no_offset_index: bool, index_interval_bytes: int,
                     verify: bool, verbose: bool, jobs: int, memory: str | None, fmt: OutputFormat | None,
                     quiet: bool, live: bool = False) -> int:
    out = Output(quiet=quiet)
    form = out.resolve_format(fmt, tty_default=OutputFormat.text)
    modes = sum([check, output is not None, in_place, recovery_report])
    require(modes <= 1, "--check, --output, --in-place and --recovery-report are alternatives: give one")
    require(not (no_backup or keep_valid) or in_place, "--no-backup and --keep-valid go with --in-place")
    interval = index_interval_bytes
    require(0 <= interval <= 0x7FFFFFFF, "--index-interval-bytes must be between 0 and 2147483647")
    inputs = resolve_inputs(paths)
    if in_place:
        for p in paths:  # writes: never into a live log dir, --live or not
            refuse_if_live(p)
    else:
        if output is not None:
            refuse_if_live(output)
        check_live(paths, live, out.finding, "reindex-time")
    if recovery_report:
        partitions = inputs.all_partitions() + _partitions_of_files(inputs)
        _budget(memory, jobs, [_size(s.log) for p in partitions for s in p.segments], interval)
        return _recovery_report(out, form, partitions, interval, jobs)
    mode: Mode = "in-place" if in_place else "output" if output is not None else "check"
    if output is not None:
        _refuse_output_inside(output, inputs)
    options = ReindexOptions(interval, verify, not no_offset_index, mode, output.resolve() if output else None,
                             backup=not no_backup, keep_valid=keep_valid)
    tasks = plan(inputs, options)
    _budget(memory, jobs, [t.size for t in tasks], interval)
    if mode == "in-place":
        dirs = log_dirs_of(tasks)
        return _locked(dirs, lambda: _run(out, form, tasks, options, jobs, verbose))
    if output is not None:
        with hold_for_write(output):  # a stopped broker's log dir that DIR is in stays locked meanwhile
            return _run(out, form, tasks, options, jobs, verbose)
    return _run(out, form, tasks, options, jobs, verbose)




def _budget(memory: str | None, jobs: int, sizes: list[int], interval: int) -> None:
    """--jobs workers split --memory; each holds the index entries of one segment at a time (the largest
    decides the minimum); pool workers activate the parent's budget."""
    largest = max(sizes, default=0)
    use_budget(memory, workers=jobs, working_bytes=working_set(sizes, interval),
               working=f"index entries of a {format_size(largest)} segment")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _locked(dirs: list[Path], body: Callable[[], int]) -> int:
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


def _refuse_output_inside(output: Path, inputs: Inputs) -> None:
    target = output.resolve()
    roots = [d.path for d in inputs.log_dirs] + [p.path for p in inputs.partitions] + [f.parent for f in inputs.files]
    for root in roots:
        r = root.resolve()
        require(not (target == r or r in target.parents),
                f"--output {output} is inside the input {root}: use --in-place to write into a log dir")


def _progress(out: Output, tasks: list[SegmentTask]) -> Progress | None:
    if out.quiet or not out.err.is_terminal or not tasks:
        return None
    return Progress(TextColumn("[bold]reindex-time"), BarColumn(), TextColumn("{task.fields[segments]}"),
                    DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(), console=out.err, transient=True)


def _run(out: Output, form: OutputFormat, tasks: list[SegmentTask], options: ReindexOptions, jobs: int,
         verbose: bool) -> int:
    if options.mode == "in-place":
        for p in remove_stale_temp_files(tasks):
            out.note(f"removed {p}: a temp file an interrupted --in-place left")
    total = sum(t.size for t in tasks)
    counts = {s: 0 for s in Severity}
    written = 0
    remaining_errors = False
    started = time.perf_counter()
    progress = _progress(out, tasks)
    bar = progress.add_task("reindex", total=total, segments=f"0/{len(tasks)} segments") if progress else None
    done = {"n": 0}

    def tick(res: SegmentResult) -> None:
        done["n"] += 1
        if progress is not None and bar is not None:
            progress.update(bar, advance=res.task.size, segments=f"{done['n']}/{len(tasks)} segments")

    if progress is not None:
        progress.start()
    try:
        for res in run(tasks, options, jobs=jobs, on_done=tick):
            for f in res.log_findings:
                counts[f.severity] += 1
            for c in res.checks:
                for f in c.findings:
                    counts[f.severity] += 1
            written += sum(1 for a in res.actions if a.action != "skipped")
            remaining_errors |= _errors_remain(res, options)
            if form == OutputFormat.json:
                for rec in result_records(res):
                    if verbose or rec["severity"] is not None or "action" in rec:
                        out.json(rec)
            else:
                _text(out, res, verbose)
    finally:
        if progress is not None:
            progress.stop()
    seconds = time.perf_counter() - started
    rate = f", {format_size(int(total / seconds))}/s" if seconds > 0 else ""
    verb = {"check": "checked", "output": "rebuilt", "in-place": "rebuilt"}[options.mode]
    summary = (f"{verb} {_n(len(tasks), 'segment')} ({format_size(total)}) in {seconds:.2f} s{rate}: "
               f"{_n(counts[Severity.ERROR], 'error')}, {_n(counts[Severity.WARNING], 'warning')}, "
               f"{counts[Severity.INFO]} info")
    if options.mode != "check":
        summary += f"; {_n(written, 'file')} written"
    if form == OutputFormat.json:
        out.json({"type": "summary", "mode": options.mode, "segments": len(tasks), "bytes": total,
                  "seconds": round(seconds, 6), "errors": counts[Severity.ERROR],
                  "warnings": counts[Severity.WARNING], "info": counts[Severity.INFO], "files_written": written,
                  "exit": int(ExitCode.FINDINGS if remaining_errors else ExitCode.OK)})
    out.note(summary)
    return ExitCode.FINDINGS if remaining_errors else ExitCode.OK


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _errors_remain(res: SegmentResult, options: ReindexOptions) -> bool:
    if any(f.severity == Severity.ERROR for f in res.log_findings):
        return True
    fixed = {a.path.name for a in res.actions if a.action in ("wrote", "replaced")} if options.mode == "in-place" \
        else set()
    return any(c.severity == Severity.ERROR and c.path.name not in fixed for c in res.checks)


def _text(out: Output, res: SegmentResult, verbose: bool) -> None:
    """Findings (what is wrong with a file) on stderr, as every command reports them; on stdout the data: the
    files written or replaced and, with --verbose, the files that are fine."""
    t = res.task
    for f in res.log_findings:
        out.finding(f"{t.partition}/{t.log.name}: {f.kind} ({f.severity.value}): {f.message}")
    for c in res.checks:
        name = f"{t.partition}/{c.path.name}"
        if c.status == OK:
            if verbose:
                out.line(f"{name}: ok ({c.on_disk_entries} entries)")
        for f in c.findings:
            out.finding(f"{name}: {f.kind} ({f.severity.value}): {f.message}")
        for a in res.actions:
            if a.path.name == c.path.name and (a.action != "skipped" or verbose):
                extra = f" (backup {a.backup.name})" if a.backup else f" ({a.reason})" if a.reason else ""
                out.line(f"{name}: {a.action} {a.path}{extra}")


def _recovery_report(out: Output, form: OutputFormat, partitions: list[PartitionDir], interval: int,
                     jobs: int) -> int:
    for d, state in log_dir_notes(partitions):
        shutdown = "clean shutdown (.kafka_cleanshutdown present)" if state.clean_shutdown else \
            "unclean shutdown (no .kafka_cleanshutdown)"
        if form == OutputFormat.json:
            out.json({"type": "log-dir", "path": str(d), "clean_shutdown": state.clean_shutdown,
                      "notes": list(state.notes)})
        else:
            out.line(f"log dir {d}: {shutdown}" + "".join(f"; {n}" for n in state.notes))
    loses = False
    sizes = {p.path: sum(_size(s.log) for s in p.segments) for p in partitions}
    progress = _recovery_progress(out, partitions)
    bar = progress.add_task("recovery", total=sum(sizes.values()),
                            segments=f"0/{len(partitions)} partitions") if progress else None
    done = {"n": 0}

    def tick(res: PartitionRecovery) -> None:
        done["n"] += 1
        if progress is not None and bar is not None:
            progress.update(bar, advance=sizes.get(res.path, 0), segments=f"{done['n']}/{len(partitions)} partitions")

    if progress is not None:
        progress.start()
    try:
        for part in report(partitions, index_interval_bytes=interval, jobs=jobs, on_done=tick):
            loses |= part.loses_data
            _recovery_lines(out, form, part)
    finally:
        if progress is not None:
            progress.stop()
    if not out.quiet:
        out.note("the broker would lose data or fail to load at startup" if loses else
                 "the broker's startup recovery would not lose data")
    return ExitCode.FINDINGS if loses else ExitCode.OK


def _recovery_progress(out: Output, partitions: list[PartitionDir]) -> Progress | None:
    if out.quiet or not out.err.is_terminal or not partitions:
        return None
    return Progress(TextColumn("[bold]recovery-report"), BarColumn(), TextColumn("{task.fields[segments]}"),
                    DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(), console=out.err, transient=True)


def _recovery_lines(out: Output, form: OutputFormat, part: PartitionRecovery) -> None:
    if form == OutputFormat.json:
        for s in part.steps:
            rec: dict[str, Any] = {"type": "recovery", "partition": part.partition, "action": s.action, "file": s.path,
                   "detail": s.detail, "loses_data": s.loses_data, "fails": s.fails}
            if s.action == "recover":
                rec["truncate_at"] = s.truncate_at
                rec["truncated_bytes"] = s.truncated_bytes
            if s.deleted_bytes is not None:
                rec["deleted_bytes"] = s.deleted_bytes
            out.json(rec)
        out.json({"type": "partition", "partition": part.partition, "path": str(part.path),
                  "recovery_point": part.recovery_point, "log_start_offset": part.log_start_offset,
                  "rebuilt_segments": part.rebuilt_segments, "loses_data": part.loses_data, "fails": part.fails,
                  "lost_bytes": part.lost_bytes})
        return
    out.line(f"{part.partition} (recovery point {part.recovery_point}, log start offset {part.log_start_offset}):")
    for s in part.steps:
        flag = " [data loss]" if s.loses_data else " [fails]" if s.fails else ""
        where = f" {s.path}:" if s.path else ":"
        out.line(f"  {s.action}{where} {s.detail}{flag}")
