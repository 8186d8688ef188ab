"""``kafkatool offsets-for-times``: the offset ListOffsets returns for a time, from a partition's files.

Options are parsed here; the work is ``kafkatool.listoffsets.run.offsets_for_times``, rendered by
``kafkatool.commands.render.offsets``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.examples import OFFSETS_FOR_TIMES as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    LiveOpt,
    MemoryOpt,
    Output,
    OutputFormat,
    PartitionOpt,
    QuietOpt,
    TextJsonFormatOpt,
    TopicOpt,
    TracebackOpt,
    memory_option,
)

HELP = """The offset a Kafka 3.9 leader returns to ListOffsets (a consumer's offsetsForTimes, beginningOffsets,
endOffsets; kafka-get-offsets.sh --time) for each partition, computed from its files as the broker does.

A time T (epoch ms or ISO-8601): the first record with a timestamp at or after T, found through the segment
whose largest timestamp reaches T, its .timeindex, its .index and then the batches (the first record with
timestamp >= T at or after the log start offset); its offset, timestamp and the batch's leader epoch, or
offset -1 when no record is that recent below the high watermark. earliest: the log start offset (from
log-start-offset-checkpoint); latest: the high watermark (replication-offset-checkpoint, else the log end);
max-timestamp: the first record with the largest timestamp (KIP-734). Legacy v0 records have no timestamp.
"""


def offsets_for_times(
    paths: Annotated[list[Path], typer.Argument(metavar="DIR", help="Log dirs or partition dirs (a quoted glob is "
                                                "expanded here).", show_default=False)],
    time: Annotated[list[str], typer.Option("--time", metavar="TIME", help="Epoch ms, ISO-8601 (UTC unless it has "
                                            "an offset), earliest, latest or max-timestamp (repeatable).",
                                            show_default=False)],
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.commands.render.offsets import OffsetsRenderer
    from kafkatool.listoffsets.run import OffsetsRequest
    from kafkatool.listoffsets.run import offsets_for_times as run

    out = Output(quiet=quiet)
    form = OutputFormat(fmt.value) if fmt is not None else OutputFormat.text
    request = OffsetsRequest(paths, list(time), tuple(topic or ()), tuple(partition or ()), live,
                             memory_option(memory))
    return int(run(request, OffsetsRenderer(out, form)).exit_code)


def register(app: typer.Typer) -> None:
    add_command(app, "offsets-for-times", offsets_for_times, help=HELP, epilog=EXAMPLES, aliases={})
