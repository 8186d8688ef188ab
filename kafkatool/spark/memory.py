"""Splitting the run's one memory budget top-down into Spark settings and task limits.

``local[N]``: the budget is the whole run on this machine: one JVM (driver and executor in one) and N
Python workers. ``spark://``, ``yarn``, ``k8s://``: the budget is one executor's container, split
between its JVM heap and its Python workers (one per executor core, counted in the container's
``memoryOverhead`` as YARN and Kubernetes account for them); the driver, on this machine, takes a
quarter of it (0.5 to 2 GiB): it only merges small per-range figures.

The Python side is then divided by the run's budget rules (``kafkatool.util.budget``: reserved overhead
per process, then per worker the chunk buffers and the largest decompressed batch with the records
made from it). Per Python worker (one task at a time) that bounds a task: the largest decompressed
batch it accepts (``decompress_limit``), the remote read chunk and the Arrow batch being filled
(``chunk_bytes``, 1/16 of the worker's share) and a single batch read whole from a remote file
(``max_batch_bytes``, 1/4). ``spark.executor.pyspark.memory`` is deliberately not set: it limits the
worker's *address space*, and the scan memory-maps segments of any size.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkatool.errors import UsageError
from kafkatool.util import budget as run_budget
from kafkatool.util.units import format_size

MiB = 1 << 20
GiB = 1 << 30
JVM_OFF_HEAP = 384 * MiB  # Spark's minimum memoryOverhead; metaspace, threads, Arrow buffers
MIN_WORKER = 192 * MiB  # the least a Python worker (one task at a time) is given
HEAP_SHARE = 0.3  # of the budget for the JVM heap (local: the one JVM; cluster: spark.executor.memory)
MIN_HEAP = 512 * MiB
MAX_HEAP = 8 * GiB
DEFAULT_BUDGET = 2 * GiB  # spark-scan's default memory budget with Spark (default_budget: more for many cores)


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    budget: int
    cores: int
    local: bool
    driver_memory: int
    executor_memory: int  # JVM heap of an executor (local: the one JVM)
    executor_overhead: int  # container overhead: Python workers + JVM off-heap (cluster only)
    python_worker_memory: int  # per Python worker
    decompress_limit: int
    chunk_bytes: int
    max_batch_bytes: int
    python: run_budget.MemoryBudget | None = None  # the Python workers' share, activated in each worker


    def spark_conf(self) -> dict[str, str]:
        conf = {
            "spark.driver.memory": _mb(self.driver_memory),
            "spark.python.worker.memory": _mb(self.python_worker_memory),
        }
        if self.local:
            conf["spark.executor.memory"] = _mb(self.driver_memory)
        else:
            conf["spark.executor.memory"] = _mb(self.executor_memory)
            conf["spark.executor.memoryOverhead"] = _mb(self.executor_overhead)
            conf["spark.executor.cores"] = str(self.cores)
        return conf


def _mb(n: int) -> str:
    return f"{max(1, n // MiB)}m"


def _heap(budget: int) -> int:
    return _clamp(int(budget * HEAP_SHARE), MIN_HEAP, MAX_HEAP)


def minimum_budget(cores: int) -> int:
    """The smallest memory budget (whole MiB) that gives ``cores`` Python workers MIN_WORKER each beside the JVM:
    512 MiB heap + 384 MiB + 192 MiB per core while 30% of it is below 512 MiB, more once the heap grows with it."""
    def fits(b: int) -> bool:  # budget - heap(budget) never decreases as the budget grows
        return (b - _heap(b) - JVM_OFF_HEAP) // cores >= MIN_WORKER

    lo, hi = 0, MAX_HEAP + JVM_OFF_HEAP + (MIN_WORKER + 1) * cores  # hi fits: the heap is at most MAX_HEAP
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid * MiB) else (mid + 1, hi)
    return lo * MiB


def default_budget(cores: int) -> int:
    """spark-scan's memory budget when none is given: DEFAULT_BUDGET, or the minimum for ``cores`` task slots when that
    is more (local[*] on a machine with many cores)."""
    return max(DEFAULT_BUDGET, minimum_budget(cores))


def plan_memory(budget: int, cores: int, *, local: bool) -> MemoryPlan:
    """Derive every memory setting from ``budget`` bytes for ``cores`` concurrent tasks (see module doc)."""
    if cores < 1:
        raise UsageError("must be at least 1", field="executor_cores")
    heap = _heap(budget)
    python_total = budget - heap - JVM_OFF_HEAP
    worker = python_total // cores
    if worker < MIN_WORKER:
        raise UsageError(f"{format_size(budget)} is too small for {cores} task(s) at once with Spark: the minimum is "
                         f"{format_size(minimum_budget(cores))} (or fewer cores)", field="memory")
    driver = heap if local else _clamp(budget // 4, 512 * MiB, 2 * GiB)
    chunk = _clamp(worker // 16, 1 * MiB, 64 * MiB)
    workers = run_budget.plan(python_total, workers=cores, chunk_bytes=chunk, processes=cores)
    return MemoryPlan(
        budget=budget, cores=cores, local=local,
        driver_memory=driver,
        executor_memory=heap,
        executor_overhead=budget - heap,
        python_worker_memory=worker,
        decompress_limit=workers.worker.decompress_limit,
        chunk_bytes=chunk,
        max_batch_bytes=_clamp(worker // 4, 16 * MiB, 1 * GiB),
        python=workers,
    )


def local_cores(master: str, cpu_count: int) -> int:
    """Task slots of a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master."""
    m = master.strip()
    if m == "local":
        return 1
    if m.startswith("local[") and m.endswith("]"):
        inner = m[len("local["):-1].split(",")[0].strip()
        if inner == "*":
            return max(cpu_count, 1)
        if inner.isdigit() and int(inner) > 0:
            return int(inner)
    raise UsageError(f"not a local master: {master!r} (local, local[N], local[*])")


def is_local_master(master: str) -> bool:
    return master.strip() == "local" or master.strip().startswith("local[")


def plan_processes(total: int | None, jobs: int) -> run_budget.MemoryBudget:
    """The local-processes engine: no JVM, so the whole budget is the process pool's (``kafkatool.util.budget``:
    the parent and ``jobs`` forked workers when ``jobs`` > 1)."""
    probe = run_budget.plan(total, workers=jobs)
    chunk = _clamp(probe.worker.total // 16, run_budget.DEFAULT_CHUNK, 64 * MiB)
    return run_budget.plan(total, workers=jobs, chunk_bytes=chunk)
