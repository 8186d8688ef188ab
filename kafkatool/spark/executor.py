"""The function Spark runs on executors: task ids in, the task's figures out, as Arrow IPC bytes.

A job is ``sc.parallelize(range(T), T).mapPartitions(fn)``: one task id per Spark partition (the RDD API: no
Spark SQL, no pandas and no Arrow on the JVM side, so the first job costs a Python worker and no more; the figures
are one small row per range). The function looks up the task's work items in the plan shipped with the closure,
runs the same library function the single-process engine runs (``kafkatool.scan.task.run_range``: the range's walk
with the export and index check riding along), and returns the task's ranges as one Arrow IPC stream of
``STATS_SCHEMA`` rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from kafkatool.scan.engine import ScanOptions
from kafkatool.scan.plan import WorkItem
from kafkatool.scan.schemas import STATS_SCHEMA, stats_batch
from kafkatool.scan.task import PassWork, run_range
from kafkatool.util import budget

TaskFn = Callable[[Iterable[int]], Iterator[bytes]]


def _activate(opts: ScanOptions) -> None:
    """The Python worker's share of the memory budget, for everything sized by the active budget (mapped windows)."""
    if opts.budget is not None:
        budget.activate(opts.budget)


def pass_fn(items: Sequence[WorkItem], tasks: Sequence[Sequence[int]], opts: ScanOptions, work: PassWork) -> TaskFn:
    def run(task_ids: Iterable[int]) -> Iterator[bytes]:
        _activate(opts)
        for tid in task_ids:
            batch = stats_batch([run_range(items[i], opts, work) for i in tasks[tid]])
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, STATS_SCHEMA) as w:
                w.write_batch(batch)
            yield sink.getvalue().to_pybytes()
    return run


def read_rows(blobs: Iterable[bytes]) -> list[dict[str, Any]]:
    """The rows of the tasks' Arrow IPC streams."""
    rows: list[dict[str, Any]] = []
    for blob in blobs:
        rows.extend(pa.ipc.open_stream(blob).read_all().to_pylist())
    return rows
