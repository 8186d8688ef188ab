"""The options ``downconvert`` and ``upconvert`` share (their work is ``kafkatool.convert.run.convert``, their
output ``kafkatool.commands.render.convert``)."""

from __future__ import annotations

from typing import Annotated

import typer

from kafkatool.commands.options import size_opt

ChunkSizeOpt = Annotated[int, size_opt(
    "--chunk-size", help="Source bytes converted per step (Kafka's LazyDownConversionRecords reads 128 KiB): "
    "memory depends on this and the largest batch, not on the file size. Part of --memory: a chunk that does "
    "not fit is refused with the minimum.", default="128KiB")]
SegmentBytesOpt = Annotated[int, size_opt(
    "--segment-bytes", help="Roll output segments at this size (the topic's segment.bytes).", default="1GiB")]
MaxMessageBytesOpt = Annotated[int, size_opt(
    "--max-message-bytes", help="No output batch may be larger (the topic's max.message.bytes, 1 MiB + 12). "
    "A larger one is split (KIP-126); a single record that does not fit is an error naming its offset.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Convert and report, but write nothing.")]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume", help="DST holds an interrupted run of the same conversion (no _SUCCESS marker): keep the partitions "
    "it completed and convert the others. Over a new or empty DST: a normal run; over a complete one: nothing to "
    "do.")]
SkipCorruptOpt = Annotated[bool, typer.Option(
    "--skip-corrupt", help="Leave corrupt data out instead of stopping at it: batches (and v0/v1 inner messages) "
    "that dump --deep --verify reports as errors are not converted, and are counted in the summary, the JSON and "
    "one warning each (the first 20). Without it the first one stops the run (exit 1, nothing written).")]
