"""The pass over a plan, on the local process pool, and what every engine does once the ranges are walked.

``run_pass`` runs ``run_range`` for every range (one process, or a forked pool of ``jobs``); ``finish_pass`` (also
called by the Spark job with the ranges its executors walked) merges them into the report, walks again whole the
segments whose ranges did not join (re-exporting and re-checking them), drops the export files of ranges the
whole-file walk does not reach, answers the export's ``aborted`` from the markers of every range, and orders the
index checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkatool.scan.engine import DEFAULT_OPTIONS, RangeResult, ScanOptions, ScanReport, merge_results
from kafkatool.scan.export import markers_by_partition, part_path, remove_part, resolve_aborted
from kafkatool.scan.plan import Plan, WorkItem, parent_of
from kafkatool.scan.task import STATS_ONLY, PassWork, run_range


@dataclass(slots=True)
class PassOutcome:
    report: ScanReport
    index_checks: list[dict[str, Any]] = field(default_factory=list)
    exported: int = 0


def run_pass(plan: Plan, opts: ScanOptions = DEFAULT_OPTIONS, work: PassWork = STATS_ONLY, *, jobs: int = 1,
             progress: Callable[[int, int], None] | None = None) -> PassOutcome:
    """Every range walked here (``jobs`` > 1: a forked pool over the plan's tasks), then ``finish_pass``."""
    results: dict[int, RangeResult] = {}
    done = 0
    if jobs <= 1 or len(plan.tasks) <= 1:
        for task in plan.tasks:
            for i in task:
                results[i] = run_range(plan.items[i], opts, work)
                done += plan.items[i].bytes
                if progress:
                    progress(done, plan.total_bytes)
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            work_items = [([plan.items[i] for i in task], opts, work) for task in plan.tasks]
            for rs in pool.imap_unordered(_task, work_items):
                for r in rs:
                    results[r.item_id] = r
                    done += plan.items[r.item_id].bytes
                if progress:
                    progress(done, plan.total_bytes)
    return finish_pass(plan, results, opts, work)


def _task(arg: tuple[list[WorkItem], ScanOptions, PassWork]) -> list[RangeResult]:
    items, opts, work = arg
    return [run_range(it, opts, work) for it in items]


def finish_pass(plan: Plan, results: Mapping[int, RangeResult], opts: ScanOptions = DEFAULT_OPTIONS,
                work: PassWork = STATS_ONLY) -> PassOutcome:
    by_segment: dict[tuple[str, int, str, int], list[WorkItem]] = {}
    for it in plan.items:
        by_segment.setdefault(it.segment_key, []).append(it)

    def rescan(whole: WorkItem) -> RangeResult:
        if work.export is not None:
            for it in by_segment[whole.segment_key]:
                remove_part(work.export.root, it)
        return run_range(whole, opts, work)

    report = merge_results(plan, results, rescan)
    outcome = PassOutcome(report)
    for seg in report.segments:
        check = seg.used[0].index_check if seg.used else None
        if work.verify_index and check is not None:
            outcome.index_checks.append(check)
    if work.export is None:
        return outcome
    root = work.export.root
    kept: dict[int, RangeResult] = {}
    for seg in report.segments:
        for r in seg.used:
            kept[r.item_id] = r
    for it in plan.items:
        if it.id not in kept:
            remove_part(root, it)  # walked, but not part of the whole-file walk (after its end)
    outcome.exported = sum(r.exported for r in kept.values())
    items = {it.id: it for it in plan.items}
    markers = markers_by_partition([items[i] for i in kept], {i: r.markers for i, r in kept.items()})
    for i, r in sorted(kept.items()):
        if r.export_txn_rows:
            it = items[i]
            resolve_aborted(part_path(root, it), markers.get((it.topic, it.partition, parent_of(it.path)), []))
    return outcome
