"""``kafkatool info``: a fast summary of log dirs from file headers.

Options are parsed here; the work is ``kafkatool.info.run.info``, rendered by ``kafkatool.commands.render.info``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.examples import INFO as EXAMPLES
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

HELP = """A fast summary of log dirs from file headers: topics, partitions, segments, sizes, message formats and
codecs, offset ranges, the log start offsets, high watermarks and recovery points of the checkpoints, the
.lock and the clean-shutdown marker.

Nothing is decompressed: per partition only the first batch header of each segment and the batches after the
last .index entry of the last segment (the log end offset) are read, so formats and codecs are those of the
segments' first batches and the log's tail. For every batch: kafkatool dump --summary-only, or spark-scan.
Exit 1 when a file cannot be read (a warning each), 3 while a live broker holds a .lock (--live reads anyway).
"""


def info_cmd(
    paths: Annotated[list[Path], typer.Argument(metavar="DIR", help="Log dirs or partition dirs (a quoted glob is "
                                                "expanded here).", show_default=False)],
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    from kafkatool.commands.render.info import InfoRenderer
    from kafkatool.info.run import InfoRequest, info

    out = Output(quiet=quiet)
    form = OutputFormat(fmt.value) if fmt is not None else OutputFormat.text
    renderer = InfoRenderer(out, form)
    outcome = info(InfoRequest(paths, tuple(topic or ()), tuple(partition or ()), live, memory_option(memory)),
                   renderer)
    renderer.summary(outcome)
    return int(outcome.exit_code)


def register(app: typer.Typer) -> None:
    add_command(app, "info", info_cmd, help=HELP, epilog=EXAMPLES)
