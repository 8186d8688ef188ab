"""``kafkatool upconvert``: rewrite v0/v1 data of a segment, partition or log dir into message format v2."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.conversion import (
    DST_RULES_HELP,
    ChunkSizeOpt,
    DryRunOpt,
    MaxMessageBytesOpt,
    ResumeOpt,
    SegmentBytesOpt,
    SkipCorruptOpt,
)
from kafkatool.commands.examples import UPCONVERT as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    LiveOpt,
    MemoryOpt,
    Output,
    OutputFormat,
    QuietOpt,
    TextJsonFormatOpt,
    TracebackOpt,
    memory_option,
    size_opt,
)
from kafkatool.commands.render.convert import ConvertRenderer, render_total
from kafkatool.constants import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SEGMENT_BYTES
from kafkatool.constants import DOWN_CONVERSION_READ_SIZE as MAX_READ_SIZE
from kafkatool.convert.run import ConvertRequest, convert

HELP = "\n\n".join([
    'Convert the v0/v1 data of SRC (a .log segment, a partition dir or a log dir) to message format v2 in '
    'DST.',
    'Kafka 4 no longer writes v0/v1 (KIP-724); its log cleaner converts legacy batches when it rewrites a '
    'segment, and this does the same offline: a compressed legacy wrapper becomes one v2 batch, v0 '
    'records get timestamp -1 with CreateTime, LogAppendTime is kept, offsets are preserved, v2 batches '
    'are copied unchanged (with --codec, v2 batches of another codec are compressed anew, every header '
    'field kept; control batches stay uncompressed). Uncompressed legacy messages are grouped into v2 batches of up to '
    '--batch-bytes (--batch-bytes 0 keeps one batch per message, as the cleaner does).',
    'DST must be new or empty; it receives one complete partition dir per input partition (segments, '
    '.index, .timeindex, .txnindex, producer snapshots, leader-epoch-checkpoint, partition.metadata), '
    'written crash-safely. Source files are never modified.',
    *DST_RULES_HELP,
])


def register(app: typer.Typer) -> None:
    add_command(app, "upconvert", upconvert, help=HELP, epilog=EXAMPLES)


def upconvert(
    src: Annotated[Path, typer.Argument(metavar="SRC", help="A .log segment file, a partition dir or a log dir.",
                                                  show_default=False)],
    dst: Annotated[Path, typer.Argument(metavar="DST", help="New or empty output directory.", show_default=False)],
    codec: Annotated[str, typer.Option(
        "--codec", help="Codec of the output: keep (each batch's own), none, gzip, snappy, lz4, zstd. v2 "
        "batches of another codec are re-encoded too (header fields kept).")] = "keep",
    batch_bytes: Annotated[int, size_opt(
        "--batch-bytes", help="Group consecutive uncompressed legacy messages into v2 batches up to this size "
        "(Kafka's compression-ratio estimate for compressed output); 0: one batch per message.",
        default="16KiB")] = 16 * 1024,
    chunk_size: ChunkSizeOpt = MAX_READ_SIZE,
    segment_bytes: SegmentBytesOpt = DEFAULT_SEGMENT_BYTES,
    max_message_bytes: MaxMessageBytesOpt = DEFAULT_MAX_MESSAGE_BYTES,
    dry_run: DryRunOpt = False,
    resume: ResumeOpt = False,
    skip_corrupt: SkipCorruptOpt = False,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    output = Output(quiet=quiet)
    form = OutputFormat(fmt.value) if fmt is not None else OutputFormat.text
    request = ConvertRequest(src, dst, 2, codec=codec, batch_bytes=batch_bytes, chunk_size=chunk_size,
                             segment_bytes=segment_bytes, max_message_bytes=max_message_bytes, dry_run=dry_run,
                             resume=resume, skip_corrupt=skip_corrupt, live=live, memory=memory_option(memory))
    with ConvertRenderer(output, form, "upconvert") as renderer:
        outcome = convert(request, renderer)
    render_total(output, form, outcome.partitions, "upconvert", dry_run)
    return outcome.exit_code
