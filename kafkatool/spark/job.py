"""The Spark jobs of ``spark-scan``: stats (and key sharing), record export, index verification.

Each takes a running SparkSession (``kafkatool.spark.session.build_session``, or a test's shared
one), a plan made on the driver, and reports progress as ``(done_bytes, total_bytes, done_tasks,
total_tasks)``. Spark reports finished tasks, not bytes: tasks are balanced by bytes, so bytes are
estimated as the finished share of the planned bytes.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import pyarrow as pa

from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.scan.engine import DEFAULT_OPTIONS, RangeResult, ScanOptions, ScanReport, merge_results, scan_range
from kafkatool.scan.export import NO_FILTER, ExportFilter, prepare_output
from kafkatool.scan.plan import Plan, SegmentFile, balance_segments
from kafkatool.scan.schemas import INDEX_CHECK_SCHEMA, RECORD_SCHEMA, STATS_SCHEMA, result_from_row
from kafkatool.scan.source import is_url
from kafkatool.spark.executor import export_fn, index_check_fn, stats_fn
from kafkatool.util import crash
from kafkatool.util.atomic import staged_directory

Progress = Callable[[int, int, int, int], None]


class StageProgress:
    """Polls Spark's status tracker in a thread and reports finished tasks of this job's stages."""

    def __init__(self, spark: Any, total_tasks: int, total_bytes: int, callback: Progress | None,
                 interval: float = 1.0) -> None:
        self.sc = spark.sparkContext
        self.total_tasks = total_tasks
        self.total_bytes = total_bytes
        self.callback = callback
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: dict[int, tuple[int, int]] = {}
        self._known = set(self.sc.statusTracker().getActiveStageIds()) if callback else set()

    def _poll(self) -> None:
        tracker = self.sc.statusTracker()
        for sid in tracker.getActiveStageIds():
            if sid in self._known:
                continue
            info = tracker.getStageInfo(sid)
            if info is not None:
                self._seen[sid] = (info.numCompletedTasks, info.numTasks)
        done = min(sum(c for c, _ in self._seen.values()), self.total_tasks)
        if self.callback:
            share = done / self.total_tasks if self.total_tasks else 1.0
            self.callback(int(self.total_bytes * share), self.total_bytes, done, self.total_tasks)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
            except Exception:
                return  # the context went away: progress is best effort

    def __enter__(self) -> StageProgress:
        if self.callback is not None:
            self._thread = threading.Thread(target=self._run, name="kafkatool-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.callback and et is None:
            self.callback(self.total_bytes, self.total_bytes, self.total_tasks, self.total_tasks)


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of an Arrow schema (pyspark imported when called)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def task_frame(spark: Any, n_tasks: int) -> Any:
    """One row (the task id) per Spark partition."""
    return spark.range(0, n_tasks, 1, n_tasks)


def collect_arrow(df: Any) -> pa.Table:
    """``DataFrame.toArrow`` (Spark 4), or the Arrow collect of Spark 3.5."""
    with spark_errors():
        if hasattr(df, "toArrow"):
            return df.toArrow()
        return pa.Table.from_batches(df._collect_as_arrow())  # pyspark 3.5


@contextmanager
def spark_errors() -> Iterator[None]:
    """Turn a failed Spark job (a Py4J exception of many screens) into one line naming the cause."""
    try:
        yield
    except (KafkaToolError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise UsageError(f"the Spark job failed: {short_error(e)}") from e


def short_error(e: BaseException) -> str:
    """The innermost Python exception line of a Spark failure, else its first line."""
    text = str(e)
    causes = [ln.strip() for ln in text.splitlines()
              if re.match(r"^\s*[A-Za-z_.]*(Error|Exception)(: |$)", ln) and "py4j" not in ln.lower()]
    pick = causes[-1] if causes else (text.splitlines()[0] if text else type(e).__name__)
    return pick if len(pick) <= 300 else pick[:297] + "..."


def run_stats(spark: Any, plan: Plan, opts: ScanOptions = DEFAULT_OPTIONS, *,
              progress: Progress | None = None) -> ScanReport:
    """Scan every range on the executors, collect the per-range figures as Arrow, merge on the driver."""
    if not plan.items:
        return merge_results(plan, {}, lambda it: scan_range(it, opts))
    fn = stats_fn(plan.items, plan.tasks, opts)
    df = task_frame(spark, len(plan.tasks)).mapInArrow(fn, spark_schema(STATS_SCHEMA))
    with StageProgress(spark, len(plan.tasks), plan.total_bytes, progress):
        table = collect_arrow(df)
    results: dict[int, RangeResult] = {}
    for row in table.to_pylist():
        item = plan.items[row["item_id"]]
        results[item.id] = result_from_row(row, item, opts.hot_key_capacity)
    missing = [it for it in plan.items if it.id not in results]
    if missing:
        raise UsageError(f"Spark returned no figures for {len(missing)} range(s), e.g. {missing[0].path}")
    return merge_results(plan, results, lambda it: scan_range(it, opts))


def run_export(spark: Any, plan: Plan, out_dir: str, opts: ScanOptions = DEFAULT_OPTIONS,
               flt: ExportFilter = NO_FILTER, *, progress: Progress | None = None) -> int:
    """Every record as Parquet under ``out_dir``, partitioned by topic and partition; returns the count.

    A local ``out_dir`` is written crash-safely: Spark writes into ``data`` inside a staging dir beside it
    (Spark's committer renames but never fsyncs), then every file and dir there is fsynced and ``data`` is
    renamed to ``out_dir``, whole. A URL is left to Spark's committer and its ``_SUCCESS`` marker."""
    fn = export_fn(plan.items, plan.tasks, opts, flt)
    df = task_frame(spark, max(len(plan.tasks), 1)).mapInArrow(fn, spark_schema(RECORD_SCHEMA))
    if is_url(out_dir):
        with StageProgress(spark, len(plan.tasks), plan.total_bytes, progress), spark_errors():
            df.write.mode("errorifexists").partitionBy("topic", "partition").parquet(out_dir)
        return int(spark.read.parquet(out_dir).count())
    prepare_output(out_dir)
    with staged_directory(out_dir, on_durable=crash.point) as staging:
        data = staging / "data"
        with StageProgress(spark, len(plan.tasks), plan.total_bytes, progress), spark_errors():
            df.write.mode("errorifexists").partitionBy("topic", "partition").parquet(str(data))
        for name in os.listdir(data):
            os.replace(data / name, staging / name)
        data.rmdir()
    return int(spark.read.parquet(out_dir).count())


def run_verify(spark: Any, segments: Sequence[SegmentFile], index_interval_bytes: int, *, parallelism: int,
               progress: Progress | None = None) -> list[dict[str, Any]]:
    """The per-segment index check on the executors; rows of ``INDEX_CHECK_SCHEMA`` in segment order."""
    if not segments:
        return []
    tasks = balance_segments(segments, parallelism)
    fn = index_check_fn(segments, tasks, index_interval_bytes)
    df = task_frame(spark, len(tasks)).mapInArrow(fn, spark_schema(INDEX_CHECK_SCHEMA))
    with StageProgress(spark, len(tasks), sum(s.size for s in segments), progress):
        rows = collect_arrow(df).to_pylist()
    order = {s.path: i for i, s in enumerate(segments)}
    return sorted(rows, key=lambda r: order[r["path"]])


def preflight(spark: Any) -> list[dict[str, str]]:
    """Probe every executor slot's Python for kafkatool's compiled dependencies (RDD API: no Arrow needed)."""
    from kafkatool.spark.ship import preflight_probe

    sc = spark.sparkContext
    n = max(int(sc.defaultParallelism), 1)
    with spark_errors():
        probes: list[dict[str, str]] = sc.parallelize(range(n), n).map(lambda _: preflight_probe()).collect()
    broken = [p for p in probes if p["missing"] or p["kafkatool"] == "missing"]
    if broken:
        p = broken[0]
        raise UsageError(
            f"executor {p['host']} (Python {p['python']}) cannot import: {p['missing'] or 'kafkatool'}. Install "
            "kafkatool's dependencies on every node (pip install 'kafkatool[spark]'), or ship a packed "
            "virtualenv as the executors' Python archive (venv.tar.gz)")
    return probes
