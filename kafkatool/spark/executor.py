"""The functions Spark runs on executors (``mapInArrow``): task ids in, Arrow batches out.

Each job is ``spark.range(0, T, 1, T)`` (one row per task, one task per Spark partition); the function
receives its task id, looks up the task's work items in the plan shipped with the closure, runs the
same library function the single-process engine runs (``kafkatool.scan.task.run_range``: the range's walk with the
export and index check riding along), and yields the task's ranges as one Arrow batch of ``STATS_SCHEMA`` rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from kafkatool.scan.engine import ScanOptions
from kafkatool.scan.plan import WorkItem
from kafkatool.scan.schemas import stats_batch
from kafkatool.scan.task import PassWork, run_range
from kafkatool.util import budget

ArrowFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _task_ids(batches: Iterator[pa.RecordBatch]) -> Iterator[int]:
    for b in batches:
        yield from b.column(0).to_pylist()


def _activate(opts: ScanOptions) -> None:
    """The Python worker's share of the memory budget, for everything sized by the active budget (mapped windows)."""
    if opts.budget is not None:
        budget.activate(opts.budget)


def pass_fn(items: Sequence[WorkItem], tasks: Sequence[Sequence[int]], opts: ScanOptions, work: PassWork) -> ArrowFn:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        _activate(opts)
        for tid in _task_ids(batches):
            yield stats_batch([run_range(items[i], opts, work) for i in tasks[tid]])
    return run
