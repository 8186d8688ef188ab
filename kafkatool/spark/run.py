"""``spark_scan``: the one entry point of ``kafkatool spark-scan``, usable from Python with the same results.

A :class:`ScanRequest` says what to scan and which analyses to run (stats, key sharing, index check, record
export) on which engine: ``spark`` (a SparkSession: embedded ``local[N]`` or a cluster master) or
``local-processes`` (kafkatool's process pool, no JVM). Whatever is asked, the log is read once: every range is
walked by ``dump``'s own engine, the export and the index check riding on the same walk (``kafkatool.scan.task``),
so findings and exit code are dump's deep, verifying walk's for every analysis. This module plans the run's memory
and the byte ranges, starts the session on the Spark path only (pyspark is imported there and nowhere else: a
plain install without pyspark runs the local engine), and hands the figures to a :class:`ScanListener`. The
:class:`ScanOutcome` holds them and the exit code.

Paths that are partial results (``kafkatool.scan.partial``: one broker's scan written with ``partial_output``) are
merged instead of scanned: the cluster-wide figures of logs that sit on each broker's own disk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.layout import IrregularFile
from kafkatool.log.lock import check_read, hold_for_write, live_notice, refuse_if_live
from kafkatool.log.outputs import Output, refuse_aliasing
from kafkatool.scan.engine import ScanOptions, ScanReport
from kafkatool.scan.export import ExportFilter, ExportTarget, prepare_output, write_success
from kafkatool.scan.partial import is_partial, key_sharing_of, merge_partials, read_partial, rows_of, write_partial
from kafkatool.scan.plan import Plan, discover, make_plan
from kafkatool.scan.pool import PassOutcome, run_pass
from kafkatool.scan.report import (
    KeyShareSetup,
    TopicShare,
    keyshare_setup,
    keyshare_tables,
    stats_tables,
    topic_shares,
    write_parquet,
)
from kafkatool.scan.source import S3_ENDPOINT_ENV, is_url, use_s3_endpoint
from kafkatool.scan.task import PassWork
from kafkatool.spark.memory import MemoryPlan, default_budget, is_local_master, local_cores, plan_memory, plan_processes
from kafkatool.util import budget as run_budget
from kafkatool.util import crash
from kafkatool.util.atomic import staged_directory
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size, parse_size

ENGINES = ("spark", "local-processes")
DEFAULT_SPLIT_SIZE = 128 << 20
DEFAULT_EXECUTOR_TIMEOUT = 180.0


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to scan and how. ``paths``: log dirs, partition dirs or .log files, local or URLs (read with pyarrow.fs),
    or partial results to merge. The stats are the default analysis; ``stats`` asks for them beside another
    (``export_records``, ``verify_index``, ``key_sharing``). ``partitions``: a topic's partition count for key
    sharing (default: the highest found + 1). ``memory``: the run's budget as given (None: KAFKATOOL_MEMORY, else the
    engine's default); ``jobs``: local-processes' pool (None: the CPU count); ``executor_cores``: per executor on a
    cluster. ``conf``: Spark settings, applied last. ``executor_timeout``: seconds a cluster run waits with no
    executor alive before it gives up. ``s3_endpoint``: an S3-compatible endpoint for ``s3://`` URLs.
    ``partial_output``: write this scan's figures as a partial result to merge with other brokers'."""

    paths: Sequence[str]
    engine: str = "spark"
    master: str = "local[*]"
    conf: Sequence[tuple[str, str]] = ()
    output: str | None = None  # a local dir for the figures as Parquet files
    stats: bool = False
    export_records: str | None = None  # a new dir (or URL) for every record as Parquet
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
    executor_timeout: float = DEFAULT_EXECUTOR_TIMEOUT
    s3_endpoint: str | None = None
    partial_output: str | None = None
    source: str | None = None  # the partial result's source name (default: this host's name)

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

    def executor(self, host: str, python: str, version: str, origin: str, shipped: bool, compiled: bool) -> None:
        """A cluster executor's Python, where it imports kafkatool from (``shipped``: the shipped zip) and whether
        kafkatool's compiled extension is active there."""

    def stage(self, name: str) -> None:
        """The pass begins ("scan")."""

    def progress(self, done_bytes: int, total_bytes: int, done_tasks: int = -1, total_tasks: int = -1) -> None:
        """The pass has done ``done_bytes`` of ``total_bytes`` (and of its tasks, with Spark)."""

    def stage_done(self, total_bytes: int) -> None:
        """The pass read all ``total_bytes``."""

    def stats(self, report: ScanReport) -> None:
        """The stats (when asked for, or as the default analysis)."""

    def findings(self, report: ScanReport) -> None:
        """The walks' findings (dump's deep, verifying walk's), whatever analyses were asked for."""

    def keyshare(self, shares: Sequence[TopicShare]) -> None:
        """key_sharing: how records would spread over the consumers, per topic."""

    def index_checks(self, rows: Sequence[dict[str, Any]]) -> None:
        """verify_index: one row per segment."""

    def export(self, records: int, directory: str) -> None:
        """export_records: ``records`` written to ``directory``."""

    def not_regular(self, file: IrregularFile) -> None:
        """A file of a partition or log dir that is not a regular file (a FIFO, a device, a directory, a bad
        symlink): never read; a finding (exit 1)."""


@dataclass(slots=True)
class ScanOutcome:
    report: ScanReport | None = None
    shares: list[TopicShare] = field(default_factory=list)
    index_checks: list[dict[str, Any]] = field(default_factory=list)
    exported: int | None = None
    written: list[str] = field(default_factory=list)  # the Parquet files of ``output``
    exit_code: ExitCode = ExitCode.OK


def spark_scan(request: ScanRequest, listener: ScanListener | None = None) -> ScanOutcome:
    """Scan as ``kafkatool spark-scan`` does (locks, memory plan, session, crash-safe outputs); the listener hears
    the figures."""
    lis = listener or ScanListener()
    req = request
    _validate(req)
    use_s3_endpoint(req.s3_endpoint)  # the driver's planning; a new session's executors get it in their env too
    partials = [p for p in req.paths if is_partial(p)]
    if partials:
        if len(partials) != len(req.paths):
            raise UsageError("mixes partial results and log dirs: give partial results only, or scan the log dirs")
        return _merge(req, lis)
    total = _total(req.memory)
    for target in (req.output, req.export_records, req.partial_output):
        if target and not is_url(target):
            refuse_if_live(target)  # never written into a live log dir, live reads or not
    for lock in check_read([p for p in req.paths if not is_url(p)], live=req.live):
        lis.warning(live_notice(lock))
    refuse_aliasing([p for p in req.paths if not is_url(p)],
                    [Output(name, Path(target)) for name, target in (("output", req.output),
                                                                     ("export_records", req.export_records))
                     if target and not is_url(target)])

    found = discover(req.paths, req.topic)
    for note in found.notes:
        lis.note(f"note: {note}")
    for f in found.not_regular:
        lis.not_regular(f)
    irregular = ExitCode.FINDINGS if found.not_regular else ExitCode.OK
    if not found.segments:
        if irregular:
            return ScanOutcome(exit_code=irregular)  # the only .log files were FIFOs, devices, bad links
        raise UsageError("no .log segments found under " + ", ".join(shown(p) for p in req.paths))
    unknown = sorted(set(req.partitions) - {s.topic for s in found.segments})
    if unknown and not req.partial_output:  # a broker's partial scan is given every topic's count, held here or not
        raise UsageError(f"names topics not scanned: {', '.join(unknown)}", field="partitions")
    if req.export_records:
        prepare_output(req.export_records)
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
                           budget=mem.python, s3_endpoint=req.s3_endpoint)
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
    try:
        plan = make_plan(found.segments, split_bytes=req.split_size, parallelism=parallelism,
                         task_bytes=req.task_size or req.split_size,
                         share_slots=setup.share_slots() if setup else None,
                         topic_partitions=setup.topic_partitions() if setup else None,
                         cut_remote=not req.verify_index)
        for note in plan.notes:
            lis.note(f"note: {note}")
        lis.note(f"plan: {len(plan.segments)} segments, {format_size(plan.total_bytes)} in {len(plan.items)} "
                 f"ranges, {len(plan.tasks)} tasks")
        passed = _one_pass(req, lis, plan, opts, session, cores)
        out = _report(req, lis, passed, setup, active={s.path: s.active for s in plan.segments})
        out.exit_code = max(out.exit_code, irregular)
        return out
    finally:
        if session is not None:
            session.stop()


def _one_pass(req: ScanRequest, lis: ScanListener, plan: Plan, opts: ScanOptions, session: Any,
              cores: int) -> PassOutcome:
    """Stats, index check and export in one walk of every range; the export dir staged and put in place whole."""
    flt = ExportFilter(req.from_time, req.to_time)

    def walk(work: PassWork) -> PassOutcome:
        lis.stage("scan")
        if session is not None:
            from kafkatool.spark.job import run_pass as spark_pass

            done = spark_pass(session, plan, opts, work, progress=lis.progress,
                              executor_timeout=req.executor_timeout)
        else:
            done = run_pass(plan, opts, work, jobs=cores, progress=lis.progress)
        lis.stage_done(plan.total_bytes)
        return done

    work = PassWork(None, req.verify_index, req.index_interval_bytes)
    target = req.export_records
    if target is None:
        return walk(work)
    if is_url(target):
        done = walk(PassWork(ExportTarget(target, flt), work.verify_index, work.index_interval_bytes))
        write_success(target)
        return done
    # Crash points (kill tests): after the records are in the staging dir, after its _SUCCESS, and the staged
    # directory's own durable steps (fsynced, renamed into place).
    with hold_for_write(target), staged_directory(target, last="_SUCCESS", on_durable=crash.point) as staging:
        done = walk(PassWork(ExportTarget(str(staging), flt), work.verify_index, work.index_interval_bytes))
        crash.point()
        write_success(str(staging))
        crash.point()
    return done


def _report(req: ScanRequest, lis: ScanListener, passed: PassOutcome, setup: KeyShareSetup | None,
            active: Mapping[str, bool]) -> ScanOutcome:
    report = passed.report
    for note in report.notes:
        lis.note(f"note: {note}")
    out = ScanOutcome(report=report, index_checks=passed.index_checks)
    tables: dict[str, list[dict[str, Any]]] = {}
    tables.update(stats_tables(report))
    if req.wants_stats:
        lis.stats(report)
    if setup is not None:
        out.shares = topic_shares(report, setup, req.hot_keys)
        tables.update(keyshare_tables(out.shares))
        lis.keyshare(out.shares)
    lis.findings(report)
    out.exit_code = report.exit_code
    if req.verify_index:
        tables["index_check"] = out.index_checks
        lis.index_checks(out.index_checks)
        # As reindex-time's check: exit 1 only when an index would make the broker misbehave.
        if any(r["severity"] == "error" for r in out.index_checks):
            out.exit_code = max(out.exit_code, ExitCode.FINDINGS)
    if req.export_records:
        out.exported = passed.exported
        lis.export(passed.exported, req.export_records)
    if req.output and tables:
        with hold_for_write(req.output):
            out.written = write_parquet(req.output, tables)
        lis.note(f"wrote {len(out.written)} Parquet files to {req.output}")
    if req.partial_output:
        files = write_partial(req.partial_output, report, key_sharing=req.key_sharing,
                              partitions=setup.topic_partitions() if setup else {}, source=req.source, active=active)
        lis.note(f"wrote the partial result to {req.partial_output} ({len(files)} files)")
    return out


def _merge(req: ScanRequest, lis: ScanListener) -> ScanOutcome:
    """Partial results in, the cluster-wide figures out (no data is read)."""
    if req.export_records or req.partial_output:
        raise UsageError("partial results are merged, not scanned: export records on each broker instead",
                         field="export_records" if req.export_records else "partial_output")
    partials = [read_partial(p) for p in req.paths]
    consumers, partitions = key_sharing_of(partials)
    if req.key_sharing is not None and req.key_sharing != consumers:
        raise UsageError(f"the partial results were scanned with key sharing {consumers}, not {req.key_sharing}",
                         field="key_sharing")
    report = merge_partials(partials)
    lis.note(f"merged {len(partials)} partial results: {len(report.segments)} segments from "
             + ", ".join(p.source for p in partials))
    setup = None
    if consumers is not None:
        from kafkatool.scan.plan import SegmentFile

        segs = [SegmentFile(s.topic, s.partition, s.path, s.base_offset, s.file_size) for s in report.segments]
        setup = keyshare_setup(segs, consumers, partitions)
    checks = rows_of(report)
    passed = PassOutcome(report, checks)
    return _report(ScanRequest(req.paths, engine=req.engine, output=req.output, stats=req.stats,
                               verify_index=bool(checks), key_sharing=consumers, partitions=partitions,
                               hot_keys=req.hot_keys), lis, passed, setup, {})


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
    if req.executor_timeout <= 0:
        raise UsageError("must be positive", field="executor_timeout")
    if req.s3_endpoint and "://" not in req.s3_endpoint:
        raise UsageError(f"{req.s3_endpoint!r}: give a URL (http://host:port or https://host)", field="s3_endpoint")
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


class _Borrowed:
    """A session the caller started and keeps (marked ``_kafkatool_shared``): this run uses it, never stops it."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def stop(self) -> None:
        pass


def _start_spark(req: ScanRequest, lis: ScanListener, mem: MemoryPlan, cores: int, local: bool) -> Any:
    """The SparkSession (pyspark imported here, on the Spark path only); on a cluster, every executor's Python
    probed."""
    from kafkatool.spark.session import SessionSettings, build_session

    env = {S3_ENDPOINT_ENV: req.s3_endpoint} if req.s3_endpoint else {}
    settings = SessionSettings(master=req.master, conf=req.conf, memory=mem, driver_host=req.driver_host,
                               python_archive=req.python_archive, ui=req.spark_ui,
                               fast_jvm=os.environ.get("KAFKATOOL_SPARK_FAST_JVM") == "1", executor_env=env)
    lis.session(req.master, mem, cores)
    session = build_session(settings, warn=lambda s: lis.warning(f"warning: {s}"))
    if getattr(session, "_kafkatool_shared", False):
        return _Borrowed(session)
    if not local:
        try:
            from kafkatool.spark.job import probe_executors, ship_if_needed
            from kafkatool.spark.session import ship_dir
            from kafkatool.spark.ship import from_shipped_zip

            probes = probe_executors(session)
            if ship_if_needed(session, probes, ship_dir()):
                probes = probe_executors(session)
            for p in sorted({(p["host"], p["python"], p["kafkatool"], p["kafkatool_file"] or "nowhere",
                              bool(p["compiled"])) for p in probes}):
                host, python, version, origin, compiled = p
                lis.executor(host, python, version, origin, from_shipped_zip(origin), compiled)
        except BaseException:
            session.stop()
            raise
    return session
