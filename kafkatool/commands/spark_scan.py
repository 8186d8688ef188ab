"""``kafkatool spark-scan``: scan whole log dirs with Spark (or a local process pool)."""

from __future__ import annotations

import enum
import os
import time
from typing import Annotated, Any

import typer

from kafkatool.commands.options import (
    FormatOpt,
    LiveOpt,
    Output,
    OutputFormat,
    QuietOpt,
    TracebackOpt,
    check_live,
    env_memory_default,
    memory_opt,
    memory_option,
    require,
    size_opt,
    time_opt,
)
from kafkatool.commands.render.scan import (
    render_export,
    render_index_checks,
    render_keyshare,
    render_stats,
)
from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.lock import hold_for_write, refuse_if_live
from kafkatool.spark.memory import (
    DEFAULT_BUDGET,
    HEAP_SHARE,
    JVM_OFF_HEAP,
    MAX_HEAP,
    MIN_HEAP,
    MIN_WORKER,
    minimum_budget,
)
from kafkatool.util.budget import DEFAULT_TOTAL, activate, default_total
from kafkatool.util.units import format_size, parse_size

SPARK_MEMORY_HELP = (
    "The run's one memory budget (e.g. 2GiB), split top-down. With Spark and local[N] it is the whole run on "
    f"this machine: {HEAP_SHARE:.0%} JVM heap ({format_size(MIN_HEAP)} to {format_size(MAX_HEAP)}; driver and "
    f"executor are one JVM), {format_size(JVM_OFF_HEAP)} JVM overhead (off-heap, metaspace, Arrow buffers), the "
    "rest shared by N Python workers. On a cluster it is one executor's container: the same heap share "
    "(spark.executor.memory), the rest its memoryOverhead (JVM overhead plus one Python worker per "
    "--executor-cores); the driver, on this machine, takes a quarter (512MiB to 2GiB). Each Python worker "
    f"needs {format_size(MIN_WORKER)} (divided as every command's budget: interpreter, chunk buffers, "
    f"decompression limit), so the minimum is {format_size(MIN_HEAP)} + {format_size(JVM_OFF_HEAP)} + "
    f"{format_size(MIN_WORKER)} per task slot while the heap share is below {format_size(MIN_HEAP)} (local[2]: "
    f"{format_size(minimum_budget(2))}, local[4]: {format_size(minimum_budget(4))}, local[8]: "
    f"{format_size(minimum_budget(8))}). --engine local-processes has no JVM: the budget is the process pool's, "
    "divided as every command's. Wins over 'kafkatool --memory' and KAFKATOOL_MEMORY. [default: "
    f"{format_size(DEFAULT_BUDGET)} with Spark, or the minimum for its task slots when more; "
    f"{format_size(DEFAULT_TOTAL)} with local-processes]")


class Level(str, enum.Enum):
    TOPIC = "topic"
    PARTITION = "partition"
    SEGMENT = "segment"


class Engine(str, enum.Enum):
    SPARK = "spark"
    LOCAL_PROCESSES = "local-processes"


def _pairs(values: list[str] | None, what: str) -> list[tuple[str, str]]:
    out = []
    for v in values or []:
        k, sep, val = v.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"{what} takes KEY=VALUE, got {v!r}")
        out.append((k.strip(), val.strip()))
    return out


class ProgressLine:
    """Progress on stderr: a rewritten line on a terminal, a line every 10 s otherwise."""

    def __init__(self, out: Output, label: str) -> None:
        self.out = out
        self.label = label
        self.start = time.monotonic()
        self.tty = out.err.is_terminal
        self.last = 0.0 if self.tty else self.start  # piped: the first line after 10 s

    def __call__(self, done_bytes: int, total_bytes: int, done_tasks: int = -1, total_tasks: int = -1) -> None:
        if self.out.quiet:
            return
        now = time.monotonic()
        if not self.tty and done_bytes >= total_bytes:
            return  # finish() says it
        if done_bytes < total_bytes and now - self.last < (0.5 if self.tty else 10.0):
            return
        self.last = now
        elapsed = now - self.start
        share = done_bytes / total_bytes if total_bytes else 1.0
        eta = f", ETA {int(elapsed / share - elapsed)}s" if 0 < share < 1 else ""
        tasks = f"{done_tasks}/{total_tasks} tasks, " if total_tasks >= 0 else ""
        text = f"{self.label}: {tasks}{format_size(done_bytes)}/{format_size(total_bytes)} ({share:.0%}){eta}"
        if self.tty:
            self.out.err.file.write("\r" + text + "\x1b[K")
            self.out.err.file.flush()
        else:
            self.out.note(text)

    def finish(self, total_bytes: int) -> None:
        if self.tty and not self.out.quiet:
            self.out.err.file.write("\r\x1b[K")
        elapsed = time.monotonic() - self.start
        rate = total_bytes / elapsed if elapsed > 0 else 0.0
        self.out.note(f"{self.label}: {format_size(total_bytes)} in {elapsed:.1f}s ({format_size(int(rate))}/s)")


def spark_scan(
    paths: Annotated[list[str], typer.Argument(help="Log dirs, partition dirs or .log files; local paths (the "
                                               "same on every node) or URLs read with pyarrow.fs on the driver "
                                               "and executors, not Spark's Hadoop FileSystem: file://, hdfs://, "
                                               "s3:// (s3a:// read as s3://), gs://, abfs://.")],
    master: Annotated[str, typer.Option("--master", help="Spark master: local[*] (embedded, default), local[N], "
                                        "spark://HOST:7077, yarn, k8s://...")] = "local[*]",
    conf: Annotated[list[str] | None, typer.Option("--conf", help="Spark setting K=V (repeatable; wins over "
                                                   "kafkatool's own).")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write the figures as Parquet files into "
                                               "this directory.")] = None,
    fmt: FormatOpt = None,
    level: Annotated[Level, typer.Option("--level", help="Rows of the printed table.")] = Level.PARTITION,
    stats: Annotated[bool, typer.Option("--stats", help="Also print the stats when another analysis is "
                                        "chosen (they are the default otherwise).")] = False,
    export_records: Annotated[str | None, typer.Option("--export-records", help="Write every record as Parquet "
                                                       "into this new directory, partitioned by topic and "
                                                       "partition (a URL is written by Spark's own Parquet "
                                                       "writer, through Hadoop FileSystem).")] = None,
    from_time: Annotated[int | None, time_opt("--from-time", help="Export records with timestamp >= this "
                                              "(epoch ms or ISO-8601).")] = None,
    to_time: Annotated[int | None, time_opt("--to-time", help="Export records with timestamp < this.")] = None,
    topic: Annotated[list[str] | None, typer.Option("--topic", "-t", help="Only topics matching this glob "
                                                    "(repeatable).")] = None,
    verify_index: Annotated[bool, typer.Option("--verify-index", help="Check every segment's .index and "
                                               ".timeindex against a rebuild from its .log.")] = False,
    index_interval_bytes: Annotated[int, size_opt("--index-interval-bytes", help="index.interval.bytes of the "
                                                  "topics (for --verify-index).")] = 4096,
    key_sharing: Annotated[int | None, typer.Option("--key-sharing", min=1, help="How records would spread "
                                                    "over N consumers sharing partitions by key-hash "
                                                    "ranges.")] = None,
    partitions: Annotated[list[str] | None, typer.Option("--partitions", help="TOPIC=N partition count for "
                                                         "--key-sharing (default: highest found + 1).")] = None,
    hot_keys: Annotated[int, typer.Option("--hot-keys", min=0, help="Hot keys shown per partition.")] = 5,
    memory: Annotated[str | None, memory_opt("--memory", help=SPARK_MEMORY_HELP)] = None,
    split_size: Annotated[int, size_opt("--split-size", help="Cut segments into byte ranges of about this "
                                        "size.", default="128MiB")] = 128 << 20,
    task_size: Annotated[int | None, size_opt("--task-size", help="Pack ranges into tasks of about this "
                                              "many bytes (default: the split size; at least 3 tasks per "
                                              "core).")] = None,
    max_message_bytes: Annotated[int, size_opt("--max-message-bytes", help="max.message.bytes to "
                                               "compare batch sizes with.")] = 1048588,
    engine_opt: Annotated[Engine, typer.Option("--engine", help="spark, or local-processes (a process pool, no "
                                               "JVM).")] = Engine.SPARK,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Processes for --engine "
                                             "local-processes (default: CPU count).")] = None,
    executor_cores: Annotated[int, typer.Option("--executor-cores", min=1, help="Cores per executor on a "
                                                "cluster (the --memory split).")] = 1,
    driver_host: Annotated[str | None, typer.Option("--driver-host", help="Address executors reach this "
                                                    "driver at (cluster masters).")] = None,
    python_archive: Annotated[str | None, typer.Option("--python-archive", help="Packed virtualenv/conda env "
                                                       "(tar.gz) for the executors' Python.")] = None,
    spark_ui: Annotated[bool, typer.Option("--spark-ui", help="Keep Spark's web UI on.")] = False,
    live: LiveOpt = False,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    """Scan log dirs in parallel with Spark: stats (default), record export, index check, key sharing.

    The parsing is kafkatool's own library, run on the executors. Segments are cut into byte ranges
    at batch boundaries and tasks balanced by bytes, so one big segment spreads over many tasks.

    Exit 3: a live broker holds the .lock of a log dir a local PATH is in (--live reads it anyway, with a
    warning that active segments may be mid-write), or of one --output or --export-records would write
    into (never written). Outputs are written crash-safely: each --output file atomically, and the
    --export-records dir staged beside it, fsynced and renamed into place whole.
    Memory: --memory is the whole run with local[N] (JVM heap, JVM overhead, then N Python workers) and one
    executor's container on a cluster (heap, then its memoryOverhead: JVM overhead and one Python worker per
    --executor-cores). The default is 2GiB, raised to the minimum when local[*] has many cores; a budget
    below the minimum is refused with it (see --memory).
    """
    out = Output(quiet=quiet)
    form = out.resolve_format(fmt)
    engine = engine_opt.value
    if engine == "spark" and master.startswith("sc://"):
        raise UsageError("Spark Connect (sc://) is not supported yet: give a spark://, yarn, k8s:// or local master")
    flt_from, flt_to = from_time, to_time
    if (flt_from is not None or flt_to is not None) and export_records is None:
        raise UsageError("--from-time/--to-time filter --export-records")
    part_counts = {k: _positive(v, k) for k, v in _pairs(partitions, "--partitions")}
    conf_pairs = _pairs(conf, "--conf")
    # spark-scan's --memory, else kafkatool --memory, else KAFKATOOL_MEMORY, else the engine's default (below).
    given = memory_option(memory)
    total = parse_size(given) if given else default_total() if env_memory_default() else None
    require(index_interval_bytes >= 1, "--index-interval-bytes must be at least 1 byte")
    require(max_message_bytes >= 1, "--max-message-bytes must be at least 1 byte")
    split = split_size
    task_bytes = task_size if task_size else split
    if split < 1 or task_bytes < 1:
        raise UsageError("--split-size and --task-size must be positive")
    want_stats = stats or not (export_records or verify_index or key_sharing)
    from kafkatool.scan.source import is_url

    if output and is_url(output):
        raise UsageError("--output writes to a local directory (the figures are small); give a local path")
    if export_records and is_url(export_records) and engine != "spark":
        raise UsageError("--engine local-processes exports to a local directory; use Spark to write to a URL")
    for target in (output, export_records):
        if target and not is_url(target):
            refuse_if_live(target)  # never written into a live log dir, --live or not
    check_live([p for p in paths if not is_url(p)], live, out.finding, "spark-scan")

    from kafkatool.scan.engine import ScanOptions
    from kafkatool.scan.plan import discover, make_plan
    from kafkatool.scan.report import keyshare_setup
    from kafkatool.spark.memory import default_budget, is_local_master, local_cores, plan_memory, plan_processes

    found = discover(paths, topic or ())
    for note in found.notes:
        out.note(f"note: {note}")
    if not found.segments:
        raise UsageError("no .log segments found under " + ", ".join(paths))
    unknown = sorted(set(part_counts) - {s.topic for s in found.segments})
    if unknown:
        raise UsageError(f"--partitions names topics not scanned: {', '.join(unknown)}")
    local = engine == "local-processes" or is_local_master(master)
    if engine == "local-processes":
        cores = jobs or os.cpu_count() or 1
    else:
        cores = local_cores(master, os.cpu_count() or 1) if local else executor_cores
    budget = total if total is not None else default_budget(cores) if engine == "spark" else None
    if engine == "spark":
        assert budget is not None
        mem = plan_memory(budget, cores, local=local)
        opts = ScanOptions(decompress_limit=mem.decompress_limit, chunk_bytes=mem.chunk_bytes,
                           max_batch_bytes=mem.max_batch_bytes, max_message_bytes=max_message_bytes,
                           budget=mem.python)
    else:
        pool = plan_processes(budget, cores)
        opts = ScanOptions(decompress_limit=pool.worker.decompress_limit, chunk_bytes=pool.worker.chunk_bytes,
                           max_batch_bytes=max(pool.worker.decompress_limit, pool.worker.chunk_bytes),
                           max_message_bytes=max_message_bytes, budget=pool)
        activate(pool)  # the forked pool workers inherit it
        out.note(pool.describe())
    setup = keyshare_setup(found.segments, key_sharing, part_counts) if key_sharing else None

    spark: Any = None
    if engine == "spark":
        from kafkatool.spark.session import SessionSettings, build_session

        settings = SessionSettings(master=master, conf=conf_pairs, memory=mem, driver_host=driver_host,
                                   python_archive=python_archive, ui=spark_ui,
                                   fast_jvm=os.environ.get("KAFKATOOL_SPARK_FAST_JVM") == "1")
        out.note(f"starting Spark ({master}, --memory {format_size(mem.budget)}: driver "
                 f"{format_size(mem.driver_memory)}, {cores} x Python worker {format_size(mem.python_worker_memory)})")
        spark = build_session(settings, warn=lambda s: out.finding(f"warning: {s}"))
        if not local:
            from kafkatool.spark.job import preflight
            from kafkatool.spark.ship import from_shipped_zip

            # .get: an executor importing another (older) kafkatool returns an older probe's keys
            for host, python, version, origin in sorted({(p["host"], p["python"], p["kafkatool"],
                                                          p.get("kafkatool_file") or "an unknown place (an older "
                                                          "kafkatool's probe)") for p in preflight(spark)}):
                out.note(f"executor {host}: Python {python}, kafkatool {version} from {origin}")
                if not from_shipped_zip(origin):
                    out.finding(f"warning: executor {host} imports kafkatool from {origin}, not from the shipped "
                                "kafkatool.zip (an installed kafkatool shadows it)")
        parallelism = int(spark.sparkContext.defaultParallelism)
    else:
        parallelism = cores
    try:
        plan = make_plan(found.segments, split_bytes=split, parallelism=parallelism, task_bytes=task_bytes,
                         share_slots=setup.share_slots() if setup else None,
                         topic_partitions=setup.topic_partitions() if setup else None)
        for note in plan.notes:
            out.note(f"note: {note}")
        out.note(f"plan: {len(plan.segments)} segments, {format_size(plan.total_bytes)} in {len(plan.items)} "
                 f"ranges, {len(plan.tasks)} tasks")
        rc = ExitCode.OK
        tables: dict[str, list[dict[str, Any]]] = {}
        if want_stats or setup is not None:
            rc = max(rc, _stats(spark, plan, opts, engine, cores, out, form, level.value, want_stats, setup, hot_keys,
                                tables))
        if verify_index:
            rc = max(rc, _verify(spark, plan, index_interval_bytes, engine, cores, parallelism, out, form, tables))
        if export_records:
            _export(spark, plan, export_records, opts, flt_from, flt_to, engine, cores, out, form)
        if output and tables:
            from kafkatool.scan.report import write_parquet

            with hold_for_write(output):
                written = write_parquet(output, tables)
            out.note(f"wrote {len(written)} Parquet files to {output}")
    finally:
        if spark is not None:
            spark.stop()
    return int(rc)


def _positive(v: str, topic: str) -> int:
    if not v.isdigit() or int(v) < 1:
        raise UsageError(f"--partitions {topic}={v}: the count must be a positive number")
    return int(v)


def _stats(spark: Any, plan: Any, opts: Any, engine: str, cores: int, out: Output, form: OutputFormat, level: str,
           want_stats: bool, setup: Any, hot: int, tables: dict[str, list[dict[str, Any]]]) -> ExitCode:
    from kafkatool.scan.engine import run_local
    from kafkatool.scan.report import keyshare_tables, stats_tables, topic_shares

    progress = ProgressLine(out, "scan")
    if engine == "spark":
        from kafkatool.spark.job import run_stats

        report = run_stats(spark, plan, opts, progress=progress)
    else:
        report = run_local(plan, opts, jobs=cores, progress=progress)
    progress.finish(plan.total_bytes)
    for note in report.notes[len(plan.notes):]:
        out.note(f"note: {note}")
    tables.update(stats_tables(report))
    if want_stats:
        render_stats(report, out, form, level)
    if setup is not None:
        shares = topic_shares(report, setup, hot)
        tables.update(keyshare_tables(shares))
        render_keyshare(shares, out, form)
    return ExitCode.FINDINGS if report.findings else ExitCode.OK


def _verify(spark: Any, plan: Any, interval: int, engine: str, cores: int, parallelism: int, out: Output,
            form: OutputFormat, tables: dict[str, list[dict[str, Any]]]) -> ExitCode:
    from kafkatool.scan.verify import verify_local

    progress = ProgressLine(out, "verify-index")
    if engine == "spark":
        from kafkatool.spark.job import run_verify

        rows = run_verify(spark, plan.segments, interval, parallelism=parallelism, progress=progress)
    else:
        rows = verify_local(plan.segments, interval, jobs=cores,
                            progress=lambda d, t: progress(d, t))
    progress.finish(plan.total_bytes)
    tables["index_check"] = rows
    render_index_checks(rows, out, form)
    # As reindex-time --check: exit 1 only when an index would make the broker misbehave.
    return ExitCode.FINDINGS if any(r["severity"] == "error" for r in rows) else ExitCode.OK


def _export(spark: Any, plan: Any, directory: str, opts: Any, lo: int | None, hi: int | None, engine: str,
            cores: int, out: Output, form: OutputFormat) -> None:
    from kafkatool.scan.export import ExportFilter, export_local
    from kafkatool.scan.source import is_url

    flt = ExportFilter(lo, hi)
    progress = ProgressLine(out, "export")
    if engine == "spark":
        from kafkatool.spark.job import run_export

        if is_url(directory):
            n = run_export(spark, plan, directory, opts, flt, progress=progress)
        else:
            with hold_for_write(directory):
                n = run_export(spark, plan, directory, opts, flt, progress=progress)
    else:
        with hold_for_write(directory):
            n = export_local(plan, directory, opts, flt, jobs=cores, progress=lambda d, t: progress(d, t))
    progress.finish(plan.total_bytes)
    render_export(n, directory, out, form)


def register(app: typer.Typer) -> None:
    app.command(
        "spark-scan",
        short_help="Scan log dirs with Spark: stats, record export, index check, key sharing.",
        no_args_is_help=True,
    )(spark_scan)
