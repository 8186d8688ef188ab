"""``kafkatool metadata``: the KRaft cluster metadata image, rebuilt offline from ``__cluster_metadata-0``.

Options are parsed here; the work is ``kafkatool.metadata.build_image`` (and ``diff_images``), rendered by
``kafkatool.commands.render.metadata``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.examples import METADATA as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    FormatOpt,
    LiveOpt,
    MemoryOpt,
    Output,
    QuietOpt,
    TracebackOpt,
    memory_option,
    require,
    time_opt,
)

HELP = """Rebuild the cluster's KRaft metadata image offline, as a controller replays it.

DIR is a __cluster_metadata-0 dir or the log dir (metadata.log.dir) holding it. The latest snapshot
(<end offset>-<epoch>.checkpoint) is loaded, then the log after it is replayed: brokers and controllers with
their registrations and endpoints, topics with their ids, partitions (leader, ISR, ELR, replicas, epochs),
configs, feature levels, client quotas, ACLs, the producer id block, SCRAM users and delegation tokens (never
their secrets). --at-offset and --at-time rewind: the latest snapshot at or before that point, then the log
up to it. --diff A B prints what changed between the images at offsets A and B.

A damaged snapshot (truncated, no footer, bad CRC, records that do not decode) is reported and the previous
snapshot (or the log from its start) is used instead; damage in the log stops the replay there, as the
broker's recovery would truncate there; a record that does not decode is reported with its offset and byte
position and skipped. Records past the high watermark cannot be told apart offline: the image has every
record on disk.

Exit codes: 0 clean, 1 findings, 2 usage or unreadable input, 3 a live broker holds the log dir's .lock
(--live reads anyway).
"""


def register(app: typer.Typer) -> None:
    add_command(app, "metadata", metadata, help=HELP, epilog=EXAMPLES)


def metadata(
    path: Annotated[Path, typer.Argument(metavar="DIR", help="A __cluster_metadata-0 dir, or the log dir holding it.",
                                         show_default=False)],
    at_offset: Annotated[int | None, typer.Option("--at-offset", min=0, metavar="OFFSET", help="The image after "
                                                  "the record at this offset (the latest snapshot at or before "
                                                  "it, then the log up to it).", show_default=False)] = None,
    at_time: Annotated[int | None, time_opt("--at-time", help="The image of every batch appended at or before "
                                            "this time (epoch ms or ISO-8601).")] = None,
    diff: Annotated[tuple[int, int] | None, typer.Option("--diff", metavar="OFFSET1 OFFSET2", help="What changed "
                                                         "between the images at two offsets.",
                                                         show_default=False)] = None,
    kafka_version: Annotated[str | None, typer.Option("--kafka-version", metavar="3.9|4.4", help="Decode with the "
                                                      "record definitions of this Kafka version (3.9 or 4.4; "
                                                      "default: the newest, which reads every older record).",
                                                      show_default=False)] = None,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    out = Output(quiet=quiet)
    form = out.resolve_format(fmt)
    require(diff is None or (at_offset is None and at_time is None), "--diff compares two offsets of its own: "
            "it cannot be combined with --at-offset or --at-time")
    require(at_offset is None or at_time is None, "--at-offset and --at-time are alternatives: give one")
    from kafkatool.commands.render.metadata import render_diff, render_image
    from kafkatool.metadata.run import MetadataListener, MetadataRequest, metadata

    class Warnings(MetadataListener):
        def warning(self, text: str) -> None:
            out.warning(text)

    outcome = metadata(MetadataRequest(path, at_offset, at_time, diff, kafka_version, live, memory_option(memory)),
                       Warnings())
    if outcome.before is not None and outcome.after is not None:
        render_diff(out, form, outcome.before, outcome.after, outcome.changes)
    elif outcome.image is not None:
        render_image(out, form, outcome.image)
    sys.stdout.flush()
    return outcome.exit_code
