"""``kafkatool spark-scan``: scan whole log dirs with Spark (or a local process pool)."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from kafkatool.commands.examples import SPARK_SCAN as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    FROM_TIME_HELP,
    TO_TIME_HELP,
    LiveOpt,
    Output,
    OutputFormat,
    QuietOpt,
    TextJsonFormatOpt,
    TopicOpt,
    TracebackOpt,
    memory_opt,
    memory_option,
    require,
    size_opt,
    time_opt,
)
from kafkatool.errors import UsageError
from kafkatool.spark.memory import (
    DEFAULT_BUDGET,
    HEAP_SHARE,
    JVM_OFF_HEAP,
    MAX_HEAP,
    MIN_HEAP,
    MIN_WORKER,
    minimum_budget,
)
from kafkatool.util.budget import DEFAULT_TOTAL
from kafkatool.util.units import format_size

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


HELP = """Scan log dirs in parallel with Spark: stats (default), record export, index check, key sharing.

Every range is walked by dump's own engine on the executors, so the findings, counts and exit code are
those of dump --deep --verify (exit 2 when a file could not be read). Segments are cut into byte ranges at
batch boundaries and tasks balanced by bytes, so one big segment spreads over many tasks; stats, index check
and export asked together read the data once.

Exit 3: a live broker holds the .lock of a log dir a local PATH is in (--live reads it anyway, with a
warning that active segments may be mid-write), or of one --output or --export-records would write
into (never written). Outputs are written crash-safely: each --output file atomically, and the
--export-records dir staged beside it, fsynced and renamed into place whole.

Memory: --memory is the whole run with local[N] (JVM heap, JVM overhead, then N Python workers) and one
executor's container on a cluster (heap, then its memoryOverhead: JVM overhead and one Python worker per
--executor-cores). The default is 2GiB, raised to the minimum when local[*] has many cores; a budget
below the minimum is refused with it (see --memory).

Without the [spark] extra (pyspark, pyarrow), --engine local-processes scans, checks indexes and
prints; --output and --export-records need pyarrow and say so before any work.
"""


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


def _count(v: str, topic: str) -> int:
    if not v.isdigit() or int(v) < 1:
        raise UsageError(f"--partitions {topic}={v}: the count must be a positive number")
    return int(v)


def spark_scan(
    paths: Annotated[list[str], typer.Argument(metavar="PATH", help="Log dirs, partition dirs or .log files; local "
                                               "paths (the "
                                               "same on every node) or URLs read with pyarrow.fs on the driver "
                                               "and executors, not Spark's Hadoop FileSystem: file://, s3:// "
                                               "(s3a:// read as s3://; --s3-endpoint for S3-compatible stores), "
                                               "gs://, abfs://. Or partial results (--partial-output) of several "
                                               "brokers, merged into the cluster-wide figures.")],
    master: Annotated[str, typer.Option("--master", help="Spark master: local[*] (embedded, default), local[N], "
                                        "spark://HOST:7077, yarn, k8s://...")] = "local[*]",
    conf: Annotated[list[str] | None, typer.Option("--conf", metavar="KEY=VALUE", help="Spark setting K=V "
                                                   "(repeatable; wins over "
                                                   "kafkatool's own).")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="DIR", help="Write the figures as Parquet "
                                               "files into this directory (needs pyarrow: the [spark] extra).")]
    = None,
    fmt: TextJsonFormatOpt = None,
    level: Annotated[Level, typer.Option("--level", help="Rows of the printed table: one per topic, partition or "
                                         "segment.")] = Level.PARTITION,
    stats: Annotated[bool, typer.Option("--stats", help="Also print the stats when another analysis is "
                                        "chosen (they are the default otherwise).")] = False,
    export_records: Annotated[str | None, typer.Option("--export-records", metavar="DIR", help="Write every record "
                                                       "as Parquet into this new directory (or URL), partitioned by "
                                                       "topic and partition, in the same pass as the stats: "
                                                       "record_offset, timestamp (UTC) and timestamp_ms, key, "
                                                       "value, headers, crc_valid, aborted, leader_epoch, "
                                                       "segment, position ... (needs pyarrow).")] = None,
    from_time: Annotated[int | None, time_opt("--from-time", help=FROM_TIME_HELP + " (--export-records)")] = None,
    to_time: Annotated[int | None, time_opt("--to-time", help=TO_TIME_HELP + " (--export-records)")] = None,
    topic: TopicOpt = None,
    verify_index: Annotated[bool, typer.Option("--verify-index", help="Check every segment's .index and "
                                               ".timeindex against a rebuild from its .log with CRCs checked, as "
                                               "the broker's recovery does (reindex-time --check --verify).")] = False,
    index_interval_bytes: Annotated[int, size_opt("--index-interval-bytes", help="index.interval.bytes of the "
                                                  "topics (for --verify-index).")] = 4096,
    key_sharing: Annotated[int | None, typer.Option("--key-sharing", min=1, help="How records would spread "
                                                    "over N consumers sharing partitions by key-hash "
                                                    "ranges.")] = None,
    partitions: Annotated[list[str] | None, typer.Option("--partitions", metavar="TOPIC=N", help="Partition count for "
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
    engine: Annotated[Engine, typer.Option("--engine", help="spark, or local-processes (a process pool, no "
                                               "JVM).")] = Engine.SPARK,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Processes for --engine "
                                             "local-processes (default: CPU count).")] = None,
    executor_cores: Annotated[int, typer.Option("--executor-cores", min=1, help="Cores per executor on a "
                                                "cluster (the --memory split).")] = 1,
    driver_host: Annotated[str | None, typer.Option("--driver-host", help="Address executors reach this "
                                                    "driver at (cluster masters).")] = None,
    python_archive: Annotated[str | None, typer.Option("--python-archive", metavar="FILE", help="Packed "
                                                       "virtualenv/conda env "
                                                       "(tar.gz) for the executors' Python.")] = None,
    spark_ui: Annotated[bool, typer.Option("--spark-ui", help="Keep Spark's web UI on.")] = False,
    executor_timeout: Annotated[float, typer.Option("--executor-timeout", min=1, help="Seconds a cluster run "
                                                    "waits with no executor alive (lost mid-scan, or none "
                                                    "joined) before it stops with what Spark reported.")] = 180.0,
    s3_endpoint: Annotated[str | None, typer.Option("--s3-endpoint", help="An S3-compatible endpoint for s3:// "
                                                    "URLs (http://host:port); credentials from the usual chain "
                                                    "(AWS_ACCESS_KEY_ID..., profile, instance role).")] = None,
    partial_output: Annotated[str | None, typer.Option("--partial-output", help="Also write this scan's "
                                                       "figures as a partial result (a new dir or URL), to merge "
                                                       "with other brokers' by giving them all as PATHS.")] = None,
    source: Annotated[str | None, typer.Option("--source", help="The partial result's name (default: this "
                                               "host's name).")] = None,
    live: LiveOpt = False,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.commands.render.scan import ScanRenderer
    from kafkatool.spark.run import ScanRequest
    from kafkatool.spark.run import spark_scan as spark_scan_run

    out = Output(quiet=quiet)
    form = OutputFormat(fmt.value) if fmt is not None else OutputFormat.text
    require(export_records is not None or (from_time is None and to_time is None),
            "--from-time/--to-time filter --export-records")
    request = ScanRequest(
        paths, engine=engine.value, master=master, conf=_pairs(conf, "--conf"), output=output, stats=stats,
        export_records=export_records, from_time=from_time, to_time=to_time, topic=topic or (),
        verify_index=verify_index, index_interval_bytes=index_interval_bytes, key_sharing=key_sharing,
        partitions={k: _count(v, k) for k, v in _pairs(partitions, "--partitions")}, hot_keys=hot_keys,
        memory=memory_option(memory), split_size=split_size, task_size=task_size, max_message_bytes=max_message_bytes,
        jobs=jobs, executor_cores=executor_cores, driver_host=driver_host, python_archive=python_archive,
        spark_ui=spark_ui, live=live, executor_timeout=executor_timeout, s3_endpoint=s3_endpoint,
        partial_output=partial_output, source=source)
    return int(spark_scan_run(request, ScanRenderer(out, form, level.value)).exit_code)


def register(app: typer.Typer) -> None:
    add_command(app, "spark-scan", spark_scan, help=HELP, epilog=EXAMPLES)
