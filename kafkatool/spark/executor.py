"""The functions Spark runs on executors (``mapInArrow``): task ids in, Arrow batches out.

Each job is ``spark.range(0, T, 1, T)`` (one row per task, one task per Spark partition); the function
receives its task id, looks up the task's work items in the plan shipped with the closure, runs the
same library function the single-process engine runs, and yields ``pyarrow.RecordBatch``es of the
job's schema (``kafkatool.scan.schemas``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from kafkatool.scan.engine import ScanOptions, scan_range
from kafkatool.scan.export import ExportFilter, export_range
from kafkatool.scan.plan import SegmentFile, WorkItem
from kafkatool.scan.schemas import INDEX_CHECK_SCHEMA, stats_batch
from kafkatool.scan.verify import index_check_row
from kafkatool.util import budget

ArrowFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _task_ids(batches: Iterator[pa.RecordBatch]) -> Iterator[int]:
    for b in batches:
        yield from b.column(0).to_pylist()


def _activate(opts: ScanOptions) -> None:
    """The Python worker's share of the memory budget, for everything sized by the active budget (mapped windows)."""
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


def index_check_fn(segments: Sequence[SegmentFile], tasks: Sequence[Sequence[int]],
                   index_interval_bytes: int) -> ArrowFn:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for tid in _task_ids(batches):
            rows = [index_check_row(segments[i], index_interval_bytes) for i in tasks[tid]]
            yield pa.RecordBatch.from_pylist(rows, schema=INDEX_CHECK_SCHEMA)
    return run
