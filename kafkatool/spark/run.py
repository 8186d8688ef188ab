"""``spark_scan``: the one entry point of ``kafkatool spark-scan``, usable from Python with the same results.

A :class:`ScanRequest` says what to scan and which analyses to run (stats, key sharing, index check, record
export) on which engine: ``spark`` (a SparkSession: embedded ``local[N]`` or a cluster master) or
``local-processes`` (kafkatool's process pool, no JVM). This module plans the run's memory and the byte ranges,
starts the session on the Spark path only (pyspark is imported there and nowhere else: a plain install without
pyspark runs the local engine), and hands the figures to a :class:`ScanListener` as each analysis ends. The
:class:`ScanOutcome` holds them and the exit code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.lock import check_read, hold_for_write, live_notice, refuse_if_live
from kafkatool.scan.engine import ScanOptions, ScanReport, run_local
from kafkatool.scan.plan import Plan, discover, make_plan
from kafkatool.scan.report import (
    KeyShareSetup,
    TopicShare,
    keyshare_setup,
    keyshare_tables,
    stats_tables,
    topic_shares,
    write_parquet,
)
from kafkatool.scan.source import is_url
from kafkatool.scan.verify import verify_local
from kafkatool.spark.memory import MemoryPlan, default_budget, is_local_master, local_cores, plan_memory, plan_processes
from kafkatool.util import budget as run_budget
from kafkatool.util.units import format_size, parse_size

ENGINES = ("spark", "local-processes")
DEFAULT_SPLIT_SIZE = 128 << 20
DEFAULT_MAX_MESSAGE_BYTES = 1048588
DEFAULT_INDEX_INTERVAL_BYTES = 4096


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to scan and how. ``paths``: log dirs, partition dirs or .log files, local or URLs (read with pyarrow.fs).
    The stats are the default analysis; ``stats`` asks for them beside another (``export_records``,
    ``verify_index``, ``key_sharing``). ``partitions``: a topic's partition count for key sharing (default: the
    highest found + 1). ``memory``: the run's budget as given (None: KAFKATOOL_MEMORY, else the engine's
    default); ``jobs``: local-processes' pool (None: the CPU count); ``executor_cores``: per executor on a cluster.
    ``conf``: Spark settings, applied last."""

    paths: Sequence[str]
    engine: str = "spark"
    master: str = "local[*]"
    conf: Sequence[tuple[str, str]] = ()
    output: str | None = None  # a local dir for the figures as Parquet files
    stats: bool = False
    export_records: str | None = None  # a new dir (or URL, with Spark) for every record as Parquet
    from_time: int | None = None  # the export's time range: timestamp >= from_time
    to_time: int | None = None  # ... and < to_time
    topic: Sequence[str] = ()  # topic globs (none: every topic)
    verify_index: bool = False
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    key_sharing: int | None = None  # consumers sharing partitions by key-hash ranges
    partitions: Mapping[str, int] = field(default_factory=dict)
    hot_keys: int = 5
    memory: str | None = None
    split_size: int = DEFAULT_SPLIT_SIZE
    task_size: int | None = None  # None: the split size
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    jobs: int | None = None
    executor_cores: int = 1
    driver_host: str | None = None
    python_archive: str | None = None
    spark_ui: bool = False
    live: bool = False  # read local log dirs a live broker holds

    @property
    def wants_stats(self) -> bool:
        return self.stats or not (self.export_records or self.verify_index or self.key_sharing)


class ScanListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway, Spark's environment)."""

    def note(self, text: str) -> None:
        """Progress information: what was found and skipped, the memory division, the plan, files written."""

    def session(self, master: str, memory: MemoryPlan, cores: int) -> None:
        """Spark is starting with this memory division for ``cores`` task slots."""

    def executor(self, host: str, python: str, version: str, origin: str, shipped: bool) -> None:
        """A cluster executor's Python and where it imports kafkatool from (``shipped``: the shipped zip)."""

    def stage(self, name: str) -> None:
        """An analysis begins: "scan", "verify-index" or "export"."""

    def progress(self, done_bytes: int, total_bytes: int, done_tasks: int = -1, total_tasks: int = -1) -> None:
        """The current analysis has done ``done_bytes`` of ``total_bytes`` (and of its tasks, with Spark)."""

    def stage_done(self, total_bytes: int) -> None:
        """The current analysis read all ``total_bytes``."""

    def stats(self, report: ScanReport) -> None:
        """The stats (when asked for, or as the default analysis)."""

    def keyshare(self, shares: Sequence[TopicShare]) -> None:
        """key_sharing: how records would spread over the consumers, per topic."""

    def index_checks(self, rows: Sequence[dict[str, Any]]) -> None:
        """verify_index: one row per segment."""

    def export(self, records: int, directory: str) -> None:
        """export_records: ``records`` written to ``directory``."""


@dataclass(slots=True)
class ScanOutcome:
    report: ScanReport | None = None
    shares: list[TopicShare] = field(default_factory=list)
    index_checks: list[dict[str, Any]] = field(default_factory=list)
    exported: int | None = None
    written: list[str] = field(default_factory=list)  # the Parquet files of ``output``
    exit_code: ExitCode = ExitCode.OK


@dataclass(frozen=True, slots=True)
class _Run:
    request: ScanRequest
    listener: ScanListener
    engine: str
    cores: int
    options: ScanOptions
    spark: Any = None


def spark_scan(request: ScanRequest, listener: ScanListener | None = None) -> ScanOutcome:
    """Scan as ``kafkatool spark-scan`` does (locks, memory plan, session, crash-safe outputs); the listener hears
    the figures."""
    lis = listener or ScanListener()
    req = request
    _validate(req)
    total = _total(req.memory)
    for target in (req.output, req.export_records):
        if target and not is_url(target):
            refuse_if_live(target)  # never written into a live log dir, live reads or not
    for lock in check_read([p for p in req.paths if not is_url(p)], live=req.live):
        lis.warning(live_notice(lock))

    found = discover(req.paths, req.topic)
    for note in found.notes:
        lis.note(f"note: {note}")
    if not found.segments:
        raise UsageError("no .log segments found under " + ", ".join(req.paths))
    unknown = sorted(set(req.partitions) - {s.topic for s in found.segments})
    if unknown:
        raise UsageError(f"names topics not scanned: {', '.join(unknown)}", field="partitions")
    spark = req.engine == "spark"
    local = not spark or is_local_master(req.master)
    if not spark:
        cores = req.jobs or os.cpu_count() or 1
    else:
        cores = local_cores(req.master, os.cpu_count() or 1) if local else req.executor_cores
    mem: MemoryPlan | None = None
    if spark:
        mem = plan_memory(total if total is not None else default_budget(cores), cores, local=local)
        opts = ScanOptions(decompress_limit=mem.decompress_limit, chunk_bytes=mem.chunk_bytes,
                           max_batch_bytes=mem.max_batch_bytes, max_message_bytes=req.max_message_bytes,
                           budget=mem.python)
    else:
        pool = plan_processes(total, cores)
        opts = ScanOptions(decompress_limit=pool.worker.decompress_limit, chunk_bytes=pool.worker.chunk_bytes,
                           max_batch_bytes=max(pool.worker.decompress_limit, pool.worker.chunk_bytes),
                           max_message_bytes=req.max_message_bytes, budget=pool)
        run_budget.activate(pool)  # the forked pool workers inherit it
        lis.note(pool.describe())
    setup = keyshare_setup(found.segments, req.key_sharing, req.partitions) if req.key_sharing else None

    session: Any = None
    if spark:
        assert mem is not None
        session = _start_spark(req, lis, mem, cores, local)
        parallelism = int(session.sparkContext.defaultParallelism)
    else:
        parallelism = cores
    run = _Run(req, lis, req.engine, cores, opts, session)
    try:
        plan = make_plan(found.segments, split_bytes=req.split_size, parallelism=parallelism,
                         task_bytes=req.task_size or req.split_size,
                         share_slots=setup.share_slots() if setup else None,
                         topic_partitions=setup.topic_partitions() if setup else None)
        for note in plan.notes:
            lis.note(f"note: {note}")
        lis.note(f"plan: {len(plan.segments)} segments, {format_size(plan.total_bytes)} in {len(plan.items)} "
                 f"ranges, {len(plan.tasks)} tasks")
        out = ScanOutcome()
        tables: dict[str, list[dict[str, Any]]] = {}
        if req.wants_stats or setup is not None:
            out.exit_code = max(out.exit_code, _stats(run, plan, setup, out, tables))
        if req.verify_index:
            out.exit_code = max(out.exit_code, _verify(run, plan, parallelism, out, tables))
        if req.export_records:
            _export(run, plan, req.export_records, out)
        if req.output and tables:
            with hold_for_write(req.output):
                out.written = write_parquet(req.output, tables)
            lis.note(f"wrote {len(out.written)} Parquet files to {req.output}")
        return out
    finally:
        if session is not None:
            session.stop()


def _validate(req: ScanRequest) -> None:
    if req.engine not in ENGINES:
        raise UsageError(f"must be spark or local-processes, not {req.engine!r}", field="engine")
    spark = req.engine == "spark"
    if spark and req.master.startswith("sc://"):
        raise UsageError("Spark Connect (sc://) is not supported yet: give a spark://, yarn, k8s:// or local master",
                         field="master")
    if (req.from_time is not None or req.to_time is not None) and req.export_records is None:
        raise UsageError("filters the record export: give an export directory (export_records)", field="from_time")
    for topic, count in req.partitions.items():
        if count < 1:
            raise UsageError(f"{topic}={count}: the count must be a positive number", field="partitions")
    if req.index_interval_bytes < 1:
        raise UsageError("must be at least 1 byte", field="index_interval_bytes")
    if req.max_message_bytes < 1:
        raise UsageError("must be at least 1 byte", field="max_message_bytes")
    if req.split_size < 1:
        raise UsageError("must be positive", field="split_size")
    if req.task_size is not None and req.task_size < 1:
        raise UsageError("must be positive", field="task_size")
    for name, n in (("jobs", req.jobs), ("executor_cores", req.executor_cores), ("key_sharing", req.key_sharing)):
        if n is not None and n < 1:
            raise UsageError("must be at least 1", field=name)
    if req.hot_keys < 0:
        raise UsageError("must be at least 0", field="hot_keys")
    if req.output and is_url(req.output):
        raise UsageError("writes to a local directory (the figures are small); give a local path", field="output")
    if req.export_records and is_url(req.export_records) and not spark:
        raise UsageError("the local-processes engine exports to a local directory; use Spark to write to a URL",
                         field="export_records")
    # Up front, before any work: a plain install (no [spark] extra) has neither pyspark nor pyarrow.
    if spark:
        _require("pyspark", "engine", "the Spark engine")
    for name, value, what in (("output", req.output, "the Parquet figures"),
                              ("export_records", req.export_records, "the Parquet record export")):
        if value:
            _require("pyarrow", name, what)
    if any(is_url(p) for p in req.paths):
        _require("pyarrow", "paths", "reading URLs (pyarrow.fs)")


def _require(module: str, field: str, what: str) -> None:
    """Refuse a run that needs ``module`` where it is not installed, naming the extra that brings it."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a stub in sys.modules (tests hide the module so)
        found = False
    if not found:
        raise UsageError(f"{what} needs {module}, which is not installed: pip install 'kafkatool[spark]' (the "
                         "[spark] extra)" + ("; or use the local-processes engine" if module == "pyspark" else ""),
                         field=field)


def _total(memory: str | None) -> int | None:
    """The request's memory, else KAFKATOOL_MEMORY, else None: the engine's default."""
    if memory:
        try:
            return parse_size(memory)
        except UsageError as e:
            raise UsageError(e.message, field="memory") from None
    return run_budget.default_total() if os.environ.get(run_budget.ENV) else None


def _start_spark(req: ScanRequest, lis: ScanListener, mem: MemoryPlan, cores: int, local: bool) -> Any:
    """The SparkSession (pyspark imported here, on the Spark path only); on a cluster, every executor's Python
    probed."""
    from kafkatool.spark.session import SessionSettings, build_session

    settings = SessionSettings(master=req.master, conf=req.conf, memory=mem, driver_host=req.driver_host,
                               python_archive=req.python_archive, ui=req.spark_ui,
                               fast_jvm=os.environ.get("KAFKATOOL_SPARK_FAST_JVM") == "1")
    lis.session(req.master, mem, cores)
    session = build_session(settings, warn=lambda s: lis.warning(f"warning: {s}"))
    if not local:
        try:
            from kafkatool.spark.job import preflight
            from kafkatool.spark.ship import from_shipped_zip

            # .get: an executor importing another (older) kafkatool returns an older probe's keys
            for host, python, version, origin in sorted({(p["host"], p["python"], p["kafkatool"],
                                                          p.get("kafkatool_file") or "an unknown place (an older "
                                                          "kafkatool's probe)") for p in preflight(session)}):
                lis.executor(host, python, version, origin, from_shipped_zip(origin))
        except BaseException:
            session.stop()
            raise
    return session


def _stats(run: _Run, plan: Plan, setup: KeyShareSetup | None, out: ScanOutcome,
           tables: dict[str, list[dict[str, Any]]]) -> ExitCode:
    lis, req = run.listener, run.request
    lis.stage("scan")
    if run.engine == "spark":
        from kafkatool.spark.job import run_stats

        report = run_stats(run.spark, plan, run.options, progress=lis.progress)
    else:
        report = run_local(plan, run.options, jobs=run.cores, progress=lis.progress)
    lis.stage_done(plan.total_bytes)
    for note in report.notes[len(plan.notes):]:
        lis.note(f"note: {note}")
    out.report = report
    tables.update(stats_tables(report))
    if req.wants_stats:
        lis.stats(report)
    if setup is not None:
        out.shares = topic_shares(report, setup, req.hot_keys)
        tables.update(keyshare_tables(out.shares))
        lis.keyshare(out.shares)
    return ExitCode.FINDINGS if report.findings else ExitCode.OK


def _verify(run: _Run, plan: Plan, parallelism: int, out: ScanOutcome,
            tables: dict[str, list[dict[str, Any]]]) -> ExitCode:
    lis, interval = run.listener, run.request.index_interval_bytes
    lis.stage("verify-index")
    if run.engine == "spark":
        from kafkatool.spark.job import run_verify

        rows = run_verify(run.spark, plan.segments, interval, parallelism=parallelism, progress=lis.progress)
    else:
        rows = verify_local(plan.segments, interval, jobs=run.cores, progress=lis.progress)
    lis.stage_done(plan.total_bytes)
    out.index_checks = rows
    tables["index_check"] = rows
    lis.index_checks(rows)
    # As reindex-time's check: exit 1 only when an index would make the broker misbehave.
    return ExitCode.FINDINGS if any(r["severity"] == "error" for r in rows) else ExitCode.OK


def _export(run: _Run, plan: Plan, directory: str, out: ScanOutcome) -> None:
    from kafkatool.scan.export import ExportFilter, export_local

    lis, req = run.listener, run.request
    flt = ExportFilter(req.from_time, req.to_time)
    lis.stage("export")
    if run.engine == "spark":
        from kafkatool.spark.job import run_export

        if is_url(directory):
            n = run_export(run.spark, plan, directory, run.options, flt, progress=lis.progress)
        else:
            with hold_for_write(directory):
                n = run_export(run.spark, plan, directory, run.options, flt, progress=lis.progress)
    else:
        with hold_for_write(directory):
            n = export_local(plan, directory, run.options, flt, jobs=run.cores, progress=lis.progress)
    lis.stage_done(plan.total_bytes)
    out.exported = n
    lis.export(n, directory)
