"""The functions Spark runs on executors (``mapInArrow``): task ids in, Arrow batches out.

Each job is ``spark.range(0, T, 1, T)`` (one row per task, one task per Spark partition); the function
receives its task id, looks up the task's work items in the plan shipped with the closure, runs the
same library function the single-process engine runs, and yields ``pyarrow.RecordBatch``es of the
job's schema (``kafkatool.spark.schemas``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from kafkatool import budget
from kafkatool.scan import ScanOptions, scan_range
from kafkatool.spark.export import ExportFilter, export_range
from kafkatool.spark.plan import SegmentFile, WorkItem
from kafkatool.spark.schemas import INDEX_CHECK_SCHEMA, stats_batch
from kafkatool.spark.source import is_url, local_copy

ArrowFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _task_ids(batches: Iterator[pa.RecordBatch]) -> Iterator[int]:
    for b in batches:
        yield from b.column(0).to_pylist()


def _activate(opts: ScanOptions) -> None:
    """The Python worker's share of --memory, for everything sized by the active budget (mapped windows)."""
    if opts.budget is not None:
        budget.activate(opts.budget)


def stats_fn(items: Sequence[WorkItem], tasks: Sequence[Sequence[int]], opts: ScanOptions) -> ArrowFn:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        _activate(opts)
        for tid in _task_ids(batches):
            for i in tasks[tid]:
                yield stats_batch([scan_range(items[i], opts)])
    return run


def export_fn(items: Sequence[WorkItem], tasks: Sequence[Sequence[int]], opts: ScanOptions,
              flt: ExportFilter) -> ArrowFn:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        _activate(opts)
        for tid in _task_ids(batches):
            for i in tasks[tid]:
                yield from export_range(items[i], opts, flt)
    return run


def index_check_row(seg: SegmentFile, index_interval_bytes: int) -> dict[str, Any]:
    """One segment's index verdict as an ``INDEX_CHECK_SCHEMA`` row (URLs are copied to a temp dir first)."""
    from kafkatool.reindex import verify_segment

    if is_url(seg.path):
        tmp = tempfile.mkdtemp(prefix="kafkatool-verify-")
        try:
            log = local_copy(seg.path, tmp)
            stem = seg.path[:-len(".log")]
            for suffix in (".index", ".timeindex"):
                try:
                    local_copy(stem + suffix, tmp)
                except Exception:
                    pass  # missing files are part of the verdict
            verdict = verify_segment(log, seg.base_offset, active=seg.active,
                                     index_interval_bytes=index_interval_bytes)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        verdict = verify_segment(seg.path, seg.base_offset, active=seg.active,
                                 index_interval_bytes=index_interval_bytes)
    return {"topic": seg.topic, "partition": seg.partition, "base_offset": seg.base_offset, "path": seg.path,
            "classification": verdict.classification, "severity": verdict.severity, "detail": verdict.detail,
            "offset_entries_on_disk": verdict.offset_entries_on_disk,
            "offset_entries_rebuilt": verdict.offset_entries_rebuilt,
            "time_entries_on_disk": verdict.time_entries_on_disk,
            "time_entries_rebuilt": verdict.time_entries_rebuilt}


def index_check_fn(segments: Sequence[SegmentFile], tasks: Sequence[Sequence[int]],
                   index_interval_bytes: int) -> ArrowFn:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for tid in _task_ids(batches):
            rows = [index_check_row(segments[i], index_interval_bytes) for i in tasks[tid]]
            yield pa.RecordBatch.from_pylist(rows, schema=INDEX_CHECK_SCHEMA)
    return run
