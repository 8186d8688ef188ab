"""``kafkatool canary``: plan a message-format upgrade and rehearse it on a few partitions (plan, run, verify,
apply, rollback)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.options import (
    FormatOpt,
    LiveOpt,
    MemoryOpt,
    Output,
    OutputFormat,
    QuietOpt,
    TopicSizes,
    TracebackOpt,
    memory_option,
    size_opt,
    topic_sizes_opt,
)

HELP = """Plan a message-format upgrade (v0 -> v1 -> v2, and the move to Kafka 4) and rehearse it on a few partitions.

plan: what is on disk, what breaks for which consumers, the phases with their configs. run: convert chosen
partitions into a work dir (the log dir is never touched). verify: prove them record for record equal to their
originals. apply: swap them in on a stopped broker, crash-safe. rollback: put the originals back, byte for byte.
"""

canary_app = typer.Typer(help=HELP, short_help="Plan a message-format upgrade and rehearse it on a few partitions.",
                         no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})


def register(app: typer.Typer) -> None:
    app.add_typer(canary_app, name="canary")


def _human(fmt: OutputFormat | None, output: Output) -> bool:
    return output.resolve_format(fmt, tty_default=OutputFormat.table, pipe_default=OutputFormat.text) \
        != OutputFormat.json


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

Example: kafkatool canary plan /var/lib/kafka/data --clients clients.txt
"""


@canary_app.command(
    "plan",
    help=PLAN_HELP,
    short_help="Inventory a log dir, what breaks for which consumers, the upgrade phases.",
    no_args_is_help=True,
)
def plan_cmd(
    log_dir: Annotated[Path, typer.Argument(help="A broker log dir (or one partition dir).", show_default=False)],
    target_format: Annotated[int, typer.Option("--target-format", min=1, max=2,
                                               help="Message format to move to.")] = 2,
    clients: Annotated[Path | None, typer.Option(
        "--clients", help="Consumers, one per line: 'java-client 0.10.2', 'librdkafka 0.9.5 "
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
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.canary.api import PlanRequest, plan_upgrade
    from kafkatool.canary.plan import plan_json_lines
    from kafkatool.commands.render.canary import CanaryRenderer, command_line, console, render_plan

    output = Output(quiet=quiet)
    request = PlanRequest(log_dir, target_format, clients, compacted or (), _sizes(max_message_bytes),
                          partition_max_bytes, fetch_sim, live=live, memory=memory_option(memory))
    outcome = plan_upgrade(request, CanaryRenderer(output, "canary plan"))
    if _human(fmt, output):
        render_plan(outcome.plan, console(output.out))
    else:
        for line in plan_json_lines(outcome.plan, command_line):
            output.json(line)
    for name, problems in outcome.damaged:
        for prob in problems:
            output.finding(f"canary plan: {name}: {prob}")
    return int(outcome.exit_code)


RUN_HELP = """Convert the chosen partitions to message format v2 in a work dir, never touching the log dir.

Each partition dir is copied to W/originals (checksums and mtimes recorded), converted by the convert engine as
Kafka 4's cleaner rewrites legacy data (compressed wrapper -> one v2 batch, each uncompressed message -> its own
batch, v0 -> timestamp -1 CreateTime, LogAppendTime kept, v2 batches copied) into W/canary, one output segment
per input segment, and W/manifest.json lists inputs, outputs, options and the tool version (written last: a W
without it is an interrupted run). Exit 3 (nothing written) while a live broker holds the log dir's .lock, or
that of a log dir W would be in.

Example: kafkatool canary run /var/lib/kafka/data --partitions 'sensors-*,legacy-events-0' --workdir /var/tmp/c1
"""


@canary_app.command(
    "run",
    help=RUN_HELP,
    short_help="Convert chosen partitions to v2 in a work dir (the log dir is not touched).",
    no_args_is_help=True,
)
def run_cmd(
    log_dir: Annotated[Path, typer.Argument(help="The broker log dir.", show_default=False)],
    partitions: Annotated[list[str], typer.Option(
        "--partitions", "-p", help="Partition dir globs, e.g. 'orders-0' or 'legacy-*' (repeat or comma-separate).",
        show_default=False)],
    workdir: Annotated[Path, typer.Option("--workdir", "-w", help="A new or empty dir outside the log dir.",
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
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.canary.api import RunRequest, canary_run
    from kafkatool.commands.render.canary import CanaryRenderer, console, render_run

    output = Output(quiet=quiet)
    request = RunRequest(log_dir, partitions, workdir, target_format, batch_bytes, codec, max_message_bytes,
                         index_interval_bytes, memory=memory_option(memory), skip_corrupt=skip_corrupt)
    outcome = canary_run(request, CanaryRenderer(output, "canary run"))
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
    output.note(f"canary run: next: kafkatool canary verify {workdir}")
    return int(outcome.exit_code)


VERIFY_HELP = """Prove every canary partition equivalent to its original, record by record.

Offsets, timestamps (as v2 keeps them), types, keys, values, headers, producer fields and transaction markers;
every canary batch CRC-checked; indexes compared with a LogSegment.recover rebuild; every batch against
max.message.bytes; size and compression deltas. Expected changes of the v2 format are listed. Also reports what
the log dir holds (originals, canary, or an interrupted apply/rollback; not while a live broker holds its .lock,
unless --live). Exit 1 on any difference.

Example: kafkatool canary verify /var/tmp/c1
"""


@canary_app.command(
    "verify",
    help=VERIFY_HELP,
    short_help="Prove every canary partition equal to its original, record by record.",
    no_args_is_help=True,
)
def verify_cmd(
    workdir: Annotated[Path, typer.Argument(help="The canary work dir.", show_default=False)],
    max_differences: Annotated[int, typer.Option("--max-differences", min=1,
                                                 help="Differences listed per partition.")] = 20,
    live: Annotated[bool, typer.Option("--live", help="Also report the state of a log dir whose .lock a live "
                                       "broker holds (skipped otherwise, with a note), with a warning that "
                                       "active segments may be mid-write.")] = False,
    memory: MemoryOpt = None,
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.canary.api import VerifyRequest, canary_verify
    from kafkatool.commands.render.canary import CanaryRenderer, console, render_verify, verify_findings

    output = Output(quiet=quiet)
    outcome = canary_verify(VerifyRequest(workdir, max_differences, live, memory=memory_option(memory)),
                            CanaryRenderer(output, "canary verify"))
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
            output.finding(f"canary verify: {v.name}: {v.difference_count} difference(s)")
    for name in r.interrupted:
        output.finding(f"canary verify: {name}: an interrupted apply/rollback in the log dir: run `kafkatool canary "
                       f"apply {workdir}` (or rollback) again to complete it")
    output.note(f"canary verify: {'PASSED' if r.ok else 'FAILED'}")
    return int(outcome.exit_code)


SWAP_HELP = {
    "apply": """Swap the verified canary partitions into the log dir (broker stopped), keeping the originals in W.

Segment by segment: new files written as <name>.swap (fsync), then renamed into place, the way the broker's
LogLoader completes an interrupted swap at startup, so a crash is completed by the next broker start or by running
apply again. Refused with exit 3 while a broker holds the log dir's .lock; exit 2 if the canary was never verified,
exit 1 if its last verify failed or a partition changed since the run.

Example: kafkatool canary apply /var/tmp/c1""",
    "rollback": """Put the original partitions back, byte for byte (and their mtimes), with the same safety as apply.

Refused with exit 3 while a broker holds the log dir's .lock; exit 1 if a partition has new data since the apply
(rolling back would lose it).

Example: kafkatool canary rollback /var/tmp/c1""",
}


def _swap(op: str, workdir: Path, partitions: list[str] | None, memory: str | None, fmt: OutputFormat | None,
          quiet: bool) -> int:
    from kafkatool.canary.api import SwapRequest, canary_swap
    from kafkatool.commands.render.canary import CanaryRenderer, console, render_swap

    output = Output(quiet=quiet)
    outcome = canary_swap(SwapRequest(workdir, op, partitions, memory=memory_option(memory)),
                          CanaryRenderer(output, f"canary {op}"))
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
    "--partitions", "-p", help="Only these partitions of the canary (globs).")]


@canary_app.command(
    "apply",
    help=SWAP_HELP["apply"],
    short_help="Swap the verified canaries into the log dir (broker stopped), crash-safe.",
    no_args_is_help=True,
)
def apply_cmd(
    workdir: Annotated[Path, typer.Argument(help="The canary work dir.", show_default=False)],
    partitions: PartitionsOpt = None,
    memory: MemoryOpt = None,
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    return _swap("apply", workdir, partitions, memory, fmt, quiet)


@canary_app.command(
    "rollback",
    help=SWAP_HELP["rollback"],
    short_help="Put the original partitions back, byte for byte.",
    no_args_is_help=True,
)
def rollback_cmd(
    workdir: Annotated[Path, typer.Argument(help="The canary work dir.", show_default=False)],
    partitions: PartitionsOpt = None,
    memory: MemoryOpt = None,
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    return _swap("rollback", workdir, partitions, memory, fmt, quiet)
