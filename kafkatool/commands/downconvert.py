"""``kafkatool downconvert``: rewrite a segment, partition or log dir into message format v1 or v0."""

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
from kafkatool.commands.examples import DOWNCONVERT as EXAMPLES
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
    'Convert SRC (a .log segment, a partition dir or a log dir) to message format v1 or v0 in DST.',
    "Down-conversion follows Kafka's RecordsUtil.downConvert exactly, so old consumers can be served "
    "without the broker converting at fetch time (KIP-283's CPU and heap problem): control batches "
    '(transaction markers) dropped, headers and producer id/epoch/sequence dropped, offsets preserved, v1 '
    'inner offsets relative, timestamps kept for v1 and dropped for v0, codec kept. Kafka cannot write '
    'zstd below v2: the run stops naming the first zstd batch unless --zstd-to says what to recompress it '
    'to.',
    '--codec recompresses every batch whose codec differs, also those already at or below the target '
    'magic (which Kafka copies): they keep their magic, offsets, timestamps and timestamp type, and runs of '
    'uncompressed legacy messages are grouped into wrappers of up to --batch-bytes.',
    'DST must be new or empty; it receives one complete partition dir per input partition (segments, '
    '.index, .timeindex, leader-epoch-checkpoint, partition.metadata), written crash-safely. Source files '
    'are never modified. Stop the broker before moving the result into a log dir.',
    *DST_RULES_HELP,
])


def register(app: typer.Typer) -> None:
    add_command(app, "downconvert", downconvert, help=HELP, epilog=EXAMPLES)


def downconvert(
    src: Annotated[Path, typer.Argument(metavar="SRC", help="A .log segment file, a partition dir or a log dir.",
                                                  show_default=False)],
    dst: Annotated[Path, typer.Argument(metavar="DST", help="New or empty output directory.", show_default=False)],
    to_magic: Annotated[int, typer.Option("--to-magic", min=0, max=1, help="Target message format: 0 or 1.",
                                          show_default=False)],
    codec: Annotated[str, typer.Option(
        "--codec", help="Codec of the output: keep (each batch's own, as Kafka does), none, gzip, snappy, lz4. "
        "Batches already at or below --to-magic are re-encoded too (keeping their magic).")] = "keep",
    zstd_to: Annotated[str | None, typer.Option(
        "--zstd-to", help="Recompress zstd batches with gzip, lz4, snappy or none (Kafka refuses them).",
        show_default=False)] = None,
    batch_bytes: Annotated[int, size_opt(
        "--batch-bytes", help="With --codec: group consecutive uncompressed legacy messages (already at or below "
        "--to-magic) into compressed wrappers up to this size (Kafka's compression-ratio estimate); 0: one "
        "wrapper per message.", default="16KiB")] = 16384,
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
    request = ConvertRequest(src, dst, to_magic, codec=codec, zstd_to=zstd_to, batch_bytes=batch_bytes,
                             chunk_size=chunk_size, segment_bytes=segment_bytes, max_message_bytes=max_message_bytes,
                             dry_run=dry_run, resume=resume, skip_corrupt=skip_corrupt, live=live,
                             memory=memory_option(memory))
    with ConvertRenderer(output, form, "downconvert") as renderer:
        outcome = convert(request, renderer)
    render_total(output, form, outcome.partitions, "downconvert", dry_run)
    return outcome.exit_code
