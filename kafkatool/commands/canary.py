"""``kafkatool canary``: plan a message-format upgrade and rehearse it on a few partitions (plan, run, verify,
apply, rollback)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands import examples
from kafkatool.commands.help import Command, Group
from kafkatool.commands.options import (
    LiveOpt,
    MemoryOpt,
    Output,
    QuietOpt,
    TextJsonFormat,
    TextJsonFormatOpt,
    TopicSizes,
    TracebackOpt,
    memory_option,
    size_opt,
    topic_sizes_opt,
)
from kafkatool.commands.registry import short_help
from kafkatool.util.printable import shown

HELP = """Plan a message-format upgrade (v0 -> v1 -> v2, and the move to Kafka 4) and rehearse it on a few partitions.

plan: what is on disk, what breaks for which consumers, the phases with their configs. run: convert chosen
partitions into a work dir (the log dir is never touched). verify: prove them record for record equal to their
originals. rehearse: load them into a throwaway broker of your Kafka and read them as old and new clients do.
apply: swap them in on a stopped broker, crash-safe. rollback: put the originals back, byte for byte.
"""

canary_app = typer.Typer(cls=Group, help=HELP, short_help=short_help("canary"), no_args_is_help=True,
                         context_settings={"help_option_names": ["-h", "--help"]}, epilog=examples.CANARY)


def register(app: typer.Typer) -> None:
    app.add_typer(canary_app, name="canary")


def _human(fmt: TextJsonFormat | None, output: Output) -> bool:
    return fmt != TextJsonFormat.json


def _sizes(values: list[TopicSizes] | None) -> dict[str | None, int]:
    """Every --max-message-bytes value, the last for each topic (None: every topic) winning."""
    return {topic: size for v in values or [] for topic, size in v.items}


PLAN_HELP = """Inventory a log dir and plan the upgrade: bytes and batches per magic and codec, timestamp types,
v0 data without timestamps, zstd, transactional and idempotent data, control batches, the largest batch against
max.message.bytes, compacted topics still holding legacy data; then the phases (with configs), the risks per
consumer (down-conversion cost from the fetch simulator) and what Kafka 4 would leave unconverted.

A topic is known to be compacted from cleaner-offset-checkpoint, offset gaps inside its log, KIP-534 delete
horizons, the internal topics, or --compacted TOPIC. Exit 1 when a partition is damaged; exit 3 while a live
broker holds the log dir's .lock (--live reads it anyway, with a warning that active segments may be mid-write).
"""


@canary_app.command(
    "plan",
    cls=Command,
    epilog=examples.CANARY_PLAN,
    help=PLAN_HELP,
    short_help="Inventory a log dir, what breaks for which consumers, the upgrade phases.",
    no_args_is_help=True,
)
def plan_cmd(
    log_dir: Annotated[Path, typer.Argument(metavar="DIR", help="A broker log dir (or one partition dir).",
                                            show_default=False)],
    target_format: Annotated[int, typer.Option("--target-format", min=1, max=2,
                                               help="Message format to move to.")] = 2,
    clients: Annotated[Path | None, typer.Option(
        "--clients", metavar="FILE", help="Consumers, one per line: 'java-client 0.10.2', 'librdkafka 0.9.5 "
        "[api.version.request=true]', 'fetch-version 3'; '# label'.")] = None,
    compacted: Annotated[list[str] | None, typer.Option(
        "--compacted", help="Declare a topic compacted (repeat or comma-separate).")] = None,
    max_message_bytes: Annotated[list[TopicSizes] | None, topic_sizes_opt(
        "--max-message-bytes", help="max.message.bytes: SIZE for every topic, TOPIC=SIZE for one (repeat or "
        "comma-separate). [default: 1048588]")] = None,
    partition_max_bytes: Annotated[int, size_opt(
        "--partition-max-bytes", help="The simulated consumers' max.partition.fetch.bytes.",
        default="1MiB")] = 1 << 20,
    fetch_sim: Annotated[bool, typer.Option("--fetch-sim/--no-fetch-sim",
                                            help="Simulate a fetch per partition for each old Fetch version.")] = True,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.canary.api import PlanRequest, plan_upgrade
    from kafkatool.canary.plan import plan_json_lines
    from kafkatool.commands.render.canary import CanaryRenderer, command_line, console, render_plan

    output = Output(quiet=quiet)
    request = PlanRequest(log_dir, target_format, clients, compacted or (), _sizes(max_message_bytes),
                          partition_max_bytes, fetch_sim, live=live, memory=memory_option(memory))
    with CanaryRenderer(output, "canary plan") as renderer:
        outcome = plan_upgrade(request, renderer)
    if _human(fmt, output):
        render_plan(outcome.plan, console(output.out))
    else:
        for line in plan_json_lines(outcome.plan, command_line):
            output.json(line)
    for name, problems in outcome.damaged:
        for prob in problems:
            output.error(f"{shown(name)}: {prob}")
    return int(outcome.exit_code)


RUN_HELP = """Convert the chosen partitions to message format v2 in a work dir, never touching the log dir.

Each partition dir is copied to W/originals (checksums and mtimes recorded), converted by the convert engine as
Kafka 4's cleaner rewrites legacy data (compressed wrapper -> one v2 batch, each uncompressed message -> its own
batch, v0 -> timestamp -1 CreateTime, LogAppendTime kept, v2 batches copied) into W/canary, one output segment
per input segment, and W/manifest.json lists inputs, outputs, options and the tool version (written last: a W
without it is an interrupted run). Exit 3 (nothing written) while a live broker holds the log dir's .lock, or
that of a log dir W would be in.
"""


@canary_app.command(
    "run",
    cls=Command,
    epilog=examples.CANARY_RUN,
    help=RUN_HELP,
    short_help="Convert chosen partitions to v2 in a work dir (the log dir is not touched).",
    no_args_is_help=True,
)
def run_cmd(
    log_dir: Annotated[Path, typer.Argument(metavar="DIR", help="The broker log dir.", show_default=False)],
    partitions: Annotated[list[str], typer.Option(
        "--partitions", "-p", metavar="GLOB", help="Partition dir globs, e.g. 'orders-0' or 'legacy-*' (repeat or "
        "comma-separate).",
        show_default=False)],
    workdir: Annotated[Path, typer.Option("--workdir", "-w", metavar="DIR",
                                          help="A new or empty dir outside the log dir.",
                                          show_default=False)],
    target_format: Annotated[int, typer.Option("--target-format", min=2, max=2, help="Only 2.")] = 2,
    batch_bytes: Annotated[int, size_opt(
        "--batch-bytes", help="Group uncompressed legacy messages into v2 batches up to this size (0: one batch "
        "per message, as Kafka 4's cleaner does).")] = 0,
    codec: Annotated[str | None, typer.Option("--codec", help="Recompress rebuilt batches with this codec "
                                                              "(default: keep each batch's).")] = None,
    max_message_bytes: Annotated[int, size_opt("--max-message-bytes", help="The topics' max.message.bytes.")]
    = 1048588,
    index_interval_bytes: Annotated[int, size_opt("--index-interval-bytes",
                                                  help="The topics' index.interval.bytes.")] = 4096,
    skip_corrupt: Annotated[bool, typer.Option(
        "--skip-corrupt", help="Leave corrupt batches and v0/v1 inner messages out of the canary (counted; canary "
        "verify expects them gone) instead of refusing the partition.")] = False,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.canary.api import RunRequest, canary_run
    from kafkatool.commands.render.canary import CanaryRenderer, console, render_run

    output = Output(quiet=quiet)
    request = RunRequest(log_dir, partitions, workdir, target_format, batch_bytes, codec, max_message_bytes,
                         index_interval_bytes, memory=memory_option(memory), skip_corrupt=skip_corrupt)
    with CanaryRenderer(output, "canary run") as renderer:
        outcome = canary_run(request, renderer)
    m = outcome.manifest
    if _human(fmt, output):
        render_run(m, str(workdir), console(output.out))
    else:
        for p in m.partitions:
            output.json({"type": "partition", "partition": p.name, "segments": p.segments,
                         "log_end_offset": p.log_end_offset, "inputs": len(p.inputs), "outputs": len(p.outputs),
                         "convert": p.convert})
        output.json({"type": "summary", "workdir": str(workdir), "manifest": str(workdir / "manifest.json"),
                     "log_dir": m.log_dir, "partitions": len(m.partitions), "tool_version": m.tool_version})
    output.note(f"next: kafkatool canary verify {shown(workdir)}")
    return int(outcome.exit_code)


VERIFY_HELP = """Prove every canary partition equivalent to its original, record by record.

Offsets, timestamps (as v2 keeps them), types, keys, values, headers, producer fields and transaction markers;
every canary batch CRC-checked; indexes compared with a LogSegment.recover rebuild; every batch against
max.message.bytes; size and compression deltas. Expected changes of the v2 format are listed. Also reports what
the log dir holds (originals, canary, or an interrupted apply/rollback; not while a live broker holds its .lock,
unless --live). Exit 1 on any difference.
"""


@canary_app.command(
    "verify",
    cls=Command,
    epilog=examples.CANARY_VERIFY,
    help=VERIFY_HELP,
    short_help="Prove every canary partition equal to its original, record by record.",
    no_args_is_help=True,
)
def verify_cmd(
    workdir: Annotated[Path, typer.Argument(metavar="WORKDIR", help="The canary work dir.", show_default=False)],
    max_differences: Annotated[int, typer.Option("--max-differences", min=1,
                                                 help="Differences listed per partition.")] = 20,
    live: Annotated[bool, typer.Option("--live", help="Also report the state of a log dir whose .lock a live "
                                       "broker holds (skipped otherwise, with a note), with a warning that "
                                       "active segments may be mid-write.")] = False,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.canary.api import VerifyRequest, canary_verify
    from kafkatool.commands.render.canary import CanaryRenderer, console, render_verify, verify_findings

    output = Output(quiet=quiet)
    with CanaryRenderer(output, "canary verify") as renderer:
        outcome = canary_verify(VerifyRequest(workdir, max_differences, live, memory=memory_option(memory)),
                                renderer)
    r = outcome.result
    if _human(fmt, output):
        render_verify(r, console(output.out))
        for line in verify_findings(r):  # in JSON they are the partitions' "differences" and "warnings"
            output.finding(line)
    else:
        for v in r.partitions:
            output.json(v.as_dict())
        for s in r.log_dir_state:
            output.json({"type": "log-dir-partition", **s.as_dict(), "broker_start": r.loader.get(s.name, [])})
        output.json({"type": "summary", "ok": r.ok, "workdir": r.workdir, "log_dir": r.log_dir,
                     "failed": [v.name for v in r.partitions if not v.ok], "interrupted": r.interrupted,
                     "journal": r.journal})
    for v in r.partitions:
        if not v.ok:
            output.error(f"{shown(v.name)}: {v.difference_count} difference(s)")
    for name in r.interrupted:
        output.error(f"{shown(name)}: an interrupted apply/rollback in the log dir: run `kafkatool canary "
                       f"apply {shown(workdir)}` (or rollback) again to complete it")
    output.note('PASSED' if r.ok else 'FAILED')
    return int(outcome.exit_code)


SWAP_HELP = {
    "apply": """Swap the verified canary partitions into the log dir (broker stopped), keeping the originals in W.

Segment by segment: new files written as <name>.swap (fsync), then renamed into place, the way the broker's
LogLoader completes an interrupted swap at startup, so a crash is completed by the next broker start or by running
apply again. Refused with exit 3 while a broker holds the log dir's .lock; exit 2 if the canary was never verified,
exit 1 if its last verify failed or a partition changed since the run.""",
    "rollback": """Put the original partitions back, byte for byte (and their mtimes), with the same safety as apply.

Refused with exit 3 while a broker holds the log dir's .lock; exit 1 if a partition has new data since the apply
(rolling back would lose it).""",
}


def _swap(op: str, workdir: Path, partitions: list[str] | None, memory: str | None, fmt: TextJsonFormat | None,
          quiet: bool) -> int:
    from kafkatool.canary.api import SwapRequest, canary_swap
    from kafkatool.commands.render.canary import CanaryRenderer, console, render_swap

    output = Output(quiet=quiet)
    with CanaryRenderer(output, f"canary {op}") as renderer:
        outcome = canary_swap(SwapRequest(workdir, op, partitions, memory=memory_option(memory)), renderer)
    r = outcome.result
    if _human(fmt, output):
        render_swap(r, console(output.out))
    else:
        for o in r.outcomes:
            output.json({"type": "partition", **o.as_dict()})
        output.json({"type": "summary", "op": r.op, "log_dir": r.log_dir, "partitions": len(r.outcomes),
                     "durable_steps": r.steps})
    return int(outcome.exit_code)


PartitionsOpt = Annotated[list[str] | None, typer.Option(
    "--partitions", "-p", metavar="GLOB", help="Only these partitions of the canary (globs).")]


@canary_app.command(
    "apply",
    cls=Command,
    epilog=examples.CANARY_APPLY,
    help=SWAP_HELP["apply"],
    short_help="Swap the verified canaries into the log dir (broker stopped), crash-safe.",
    no_args_is_help=True,
)
def apply_cmd(
    workdir: Annotated[Path, typer.Argument(metavar="WORKDIR", help="The canary work dir.", show_default=False)],
    partitions: PartitionsOpt = None,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    return _swap("apply", workdir, partitions, memory, fmt, quiet)


@canary_app.command(
    "rollback",
    cls=Command,
    epilog=examples.CANARY_ROLLBACK,
    help=SWAP_HELP["rollback"],
    short_help="Put the original partitions back, byte for byte.",
    no_args_is_help=True,
)
def rollback_cmd(
    workdir: Annotated[Path, typer.Argument(metavar="WORKDIR", help="The canary work dir.", show_default=False)],
    partitions: PartitionsOpt = None,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    return _swap("rollback", workdir, partitions, memory, fmt, quiet)


REHEARSE_HELP = """Load the canary into a throwaway broker of your own Kafka and prove it: the broker loads every
partition cleanly, old and modern consumers read every record as the originals hold it, old and new producers append.

A single broker on 127.0.0.1 (free ports, a temp dir, its own process group, killed with this command) gets copies
of W/canary (W is only written: rehearse.json, rehearse.txt). KRaft, or ZooKeeper mode for Kafka 3.x when
--server-properties names zookeeper.connect; from those properties inter.broker.protocol.version,
log.message.format.version, log.message.downconversion.enable, message.max.bytes, compression.type and
log.message.timestamp.type are applied. The broker loads the canary as after `canary apply` (its own indexes
trusted), its log judged (recovery, truncation, corruption, load failures are findings in its own words); every
partition is read with Fetch v11 (read_uncommitted, read_committed) and each Fetch v0-v3 the broker still
answers (it down-converts: the time and heap each old fetch cost it, from its request log), every record compared
with W/originals; three producers append and read back; then the broker loads it again with recovery forced
(every batch validated). With --clients: which consumers this broker refuses (Kafka 4: below Fetch v4).

Exit 0 when everything loaded cleanly and every read matched, 1 on a finding, 2 when the rehearsal cannot run
(no Kafka install, no usable Java, a busy port, a broker that never becomes ready: nothing is left behind).
"""


@canary_app.command(
    "rehearse",
    cls=Command,
    epilog=examples.CANARY_REHEARSE,
    help=REHEARSE_HELP,
    short_help="Load the canary into a throwaway broker of your Kafka; read it as old and new clients.",
    no_args_is_help=True,
)
def rehearse_cmd(
    workdir: Annotated[Path, typer.Argument(metavar="WORKDIR", help="The canary work dir.", show_default=False)],
    kafka: Annotated[Path | None, typer.Option(
        "--kafka", help="A Kafka install: the distribution (with libs/) or its libs/. [default: $KAFKA_HOME]",
        show_default=False)] = None,
    server_properties: Annotated[Path | None, typer.Option(
        "--server-properties", help="The cluster's server.properties (its message-format settings are applied).",
        show_default=False)] = None,
    mode: Annotated[str, typer.Option("--mode", help="auto, kraft or zookeeper (Kafka 3.x).")] = "auto",
    clients: Annotated[Path | None, typer.Option(
        "--clients", help="The clients file of `canary plan`: which of them this broker refuses.")] = None,
    max_message_bytes: Annotated[list[TopicSizes] | None, topic_sizes_opt(
        "--max-message-bytes", help="max.message.bytes: SIZE for every topic, TOPIC=SIZE for one. [default: "
        "message.max.bytes of --server-properties, else the run's]")] = None,
    partition_max_bytes: Annotated[int, size_opt(
        "--partition-max-bytes", help="The modern consumer's max.partition.fetch.bytes (old consumers fetch "
        "max.message.bytes).", default="1MiB")] = 1 << 20,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds for each wait (a broker start, a "
                                                                    "load).")] = 300.0,
    temp_dir: Annotated[Path | None, typer.Option(
        "--temp-dir", help="Where the sandbox (copies of the canary) goes. [default: the system temp dir]",
        show_default=False)] = None,
    keep_sandbox: Annotated[bool, typer.Option(
        "--keep-sandbox", help="Keep the sandbox dir (the broker's logs and data, broker stopped).")] = False,
    port: Annotated[int | None, typer.Option("--port", help="The broker's port on 127.0.0.1. [default: a free "
                                                            "one]", show_default=False)] = None,
    java_home: Annotated[str | None, typer.Option(
        "--java-home", help="The Java to run Kafka with. [default: $JAVA_HOME, else java on PATH]",
        show_default=False)] = None,
    heap: Annotated[str, typer.Option("--heap", help="The broker's JVM heap (-Xmx).")] = "1g",
    max_differences: Annotated[int, typer.Option("--max-differences", min=1,
                                                 help="Differences listed per read.")] = 20,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.canary.api import RehearseRequest, canary_rehearse
    from kafkatool.commands.render.canary import (
        CanaryRenderer,
        rehearse_findings,
        rehearse_json_lines,
        render_rehearse_text,
    )
    from kafkatool.util.atomic import atomic_write_bytes

    output = Output(quiet=quiet)
    request = RehearseRequest(workdir, kafka, server_properties, mode, clients, _sizes(max_message_bytes),
                              partition_max_bytes, timeout, temp_dir, keep_sandbox, port, java_home, heap,
                              max_differences, memory=memory_option(memory))
    outcome = canary_rehearse(request, CanaryRenderer(output, "canary rehearse"))
    r = outcome.result
    text = render_rehearse_text(r)
    atomic_write_bytes(workdir / "rehearse.txt", text.encode())
    if _human(fmt, output):
        output.line(text.rstrip("\n"))
    else:
        for obj in rehearse_json_lines(r):
            output.json(obj)
    for line in rehearse_findings(r):
        output.finding(line)
    if r.sandbox_kept:
        output.note(f"the sandbox is kept in {shown(r.sandbox_kept)} (the broker is stopped)")
    output.note(f"{'PASSED' if r.ok else 'FAILED'} in {r.seconds:.0f} s; {shown(workdir / 'rehearse.json')}")
    return int(outcome.exit_code)
