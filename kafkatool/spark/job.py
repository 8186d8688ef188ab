"""The Spark job of ``spark-scan``: one pass over the plan's ranges (stats, key sharing, export and index check
together, through the RDD API: ``kafkatool.spark.executor``), the executor probe and shipping, and a watch on the
executors.

The job takes a running SparkSession (``kafkatool.spark.session.build_session``, or a test's shared one) and a plan
made on the driver, runs ``kafkatool.scan.task.run_range`` for every range on the executors, collects one Arrow row
per range and finishes the pass on the driver (``kafkatool.scan.pool.finish_pass``: the same merge as the local
engine). Progress is reported as ``(done_bytes, total_bytes, done_tasks, total_tasks)``: Spark reports finished
tasks, not bytes; tasks are balanced by bytes, so bytes are estimated as the finished share of the planned bytes.

While it runs, a thread watches the executors: on a cluster, when none has been alive for ``executor_timeout``
seconds (lost mid-scan, or none ever joined), the job is cancelled and the run ends with one line saying what
Spark reported of the last executor it lost, instead of waiting forever.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import pyarrow as pa

from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.scan.engine import DEFAULT_OPTIONS, RangeResult, ScanOptions
from kafkatool.scan.plan import Plan
from kafkatool.scan.pool import PassOutcome, finish_pass
from kafkatool.scan.schemas import result_from_row
from kafkatool.scan.task import STATS_ONLY, PassWork
from kafkatool.spark.executor import pass_fn, read_rows

Progress = Callable[[int, int, int, int], None]
DEFAULT_EXECUTOR_TIMEOUT = 180.0


class StageProgress:
    """Polls Spark's status tracker in a thread: reports finished tasks of this job's stages and, on a cluster,
    cancels the job when no executor has been alive for ``executor_timeout`` seconds (``lost`` says why)."""

    def __init__(self, spark: Any, total_tasks: int, total_bytes: int, callback: Progress | None,
                 interval: float = 1.0, executor_timeout: float | None = None) -> None:
        self.sc = spark.sparkContext
        self.total_tasks = total_tasks
        self.total_bytes = total_bytes
        self.callback = callback
        self.interval = interval
        self.executor_timeout = executor_timeout if not str(self.sc.master).startswith("local") else None
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: dict[int, tuple[int, int]] = {}
        self._known = set(self.sc.statusTracker().getActiveStageIds())
        self._none_since: float | None = None

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

    def _watch(self) -> None:
        if self.executor_timeout is None:
            return
        alive = executors_alive(self.sc)
        now = time.monotonic()
        if alive:
            self._none_since = None
            return
        if self._none_since is None:
            self._none_since = now
        elif now - self._none_since >= self.executor_timeout:
            reason = last_executor_loss(self.sc)
            self.lost = (f"no Spark executor alive for {self.executor_timeout:.0f}s (executor timeout); "
                         + (f"Spark reported: {reason}" if reason else
                            "none joined: check the master's workers, their free cores and memory"))
            self.sc.cancelAllJobs()
            self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
                self._watch()
            except Exception:
                if self.lost is not None:
                    return
                continue  # the context may be going away: progress is best effort

    def __enter__(self) -> StageProgress:
        self._thread = threading.Thread(target=self._run, name="kafkatool-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.callback and et is None:
            self.callback(self.total_bytes, self.total_bytes, self.total_tasks, self.total_tasks)


def executors_alive(sc: Any) -> int:
    """Executors registered with the driver now (the driver's own entry not counted)."""
    infos = sc._jsc.sc().statusTracker().getExecutorInfos()
    return max(0, len(infos) - 1)


def last_executor_loss(sc: Any) -> str | None:
    """Why Spark removed the last executor it lost (its status store's removeReason), if it lost one."""
    try:
        summaries = sc._jsc.sc().statusStore().executorList(False)
        it = summaries.iterator()
        reason = None
        while it.hasNext():
            s = it.next()
            if s.id() == "driver" or s.isActive():
                continue
            r = s.removeReason()
            if r.isDefined():
                reason = f"executor {s.id()} on {s.hostPort()} lost: {r.get()}"
        return reason
    except Exception:
        return None


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
def spark_errors(watch: StageProgress | None = None) -> Iterator[None]:
    """Turn a failed Spark job (a Py4J exception of many screens) into one line naming the cause."""
    try:
        yield
    except (KafkaToolError, KeyboardInterrupt):
        raise
    except Exception as e:
        if watch is not None and watch.lost is not None:
            raise UsageError(watch.lost) from None
        raise UsageError(f"the Spark job failed: {short_error(e)}") from e


def short_error(e: BaseException) -> str:
    """The innermost Python exception line of a Spark failure, else its first line."""
    text = str(e)
    causes = [ln.strip() for ln in text.splitlines()
              if re.match(r"^\s*[A-Za-z_.]*(Error|Exception)(: |$)", ln) and "py4j" not in ln.lower()]
    pick = causes[-1] if causes else (text.splitlines()[0] if text else type(e).__name__)
    return pick if len(pick) <= 300 else pick[:297] + "..."


def run_pass(spark: Any, plan: Plan, opts: ScanOptions = DEFAULT_OPTIONS, work: PassWork = STATS_ONLY, *,
             progress: Progress | None = None,
             executor_timeout: float | None = DEFAULT_EXECUTOR_TIMEOUT) -> PassOutcome:
    """Walk every range on the executors (one row of figures each, as Arrow), then finish the pass here."""
    results: dict[int, RangeResult] = {}
    if plan.items:
        fn = pass_fn(plan.items, plan.tasks, opts, work)
        n = len(plan.tasks)
        rdd = spark.sparkContext.parallelize(range(n), n).mapPartitions(fn)
        with StageProgress(spark, n, plan.total_bytes, progress,
                           executor_timeout=executor_timeout) as watch, spark_errors(watch):
            blobs = rdd.collect()
        if watch.lost is not None:
            raise UsageError(watch.lost)
        for row in read_rows(blobs):
            item = plan.items[row["item_id"]]
            results[item.id] = result_from_row(row, item, opts.hot_key_capacity)
        missing = [it for it in plan.items if it.id not in results]
        if missing:
            raise UsageError(f"Spark returned no figures for {len(missing)} range(s), e.g. {missing[0].path}")
    return finish_pass(plan, results, opts, work)


def probe_executors(spark: Any) -> list[dict[str, Any]]:
    """Every executor slot's Python, kafkatool and compiled extension (``ship.make_probe``; RDD API: no Arrow)."""
    from kafkatool.spark.ship import make_probe

    sc = spark.sparkContext
    n = max(int(sc.defaultParallelism), 1)
    probe = make_probe()
    with spark_errors():
        probes: list[dict[str, Any]] = sc.parallelize(range(n), n).map(probe).collect()
    broken = [p for p in probes if p["missing"]]
    if broken:
        p = broken[0]
        raise UsageError(
            f"executor {p['host']} (Python {p['python']}) cannot import: {p['missing']}. Install kafkatool's "
            "dependencies on every node (pip install 'kafkatool[spark]'), or ship a packed virtualenv as the "
            "executors' Python archive (venv.tar.gz)")
    return probes


def ship_if_needed(spark: Any, probes: list[dict[str, Any]], directory: str) -> bool:
    """Ship the running kafkatool (``ship.package_zip``) unless every executor has this very one installed with its
    compiled extension active; returns whether it shipped."""
    from kafkatool.spark.ship import package_zip, source_digest

    digest = source_digest()
    if probes and all(p["digest"] == digest and p["compiled"] for p in probes):
        return False
    spark.sparkContext.addPyFile(package_zip(directory))
    return True
