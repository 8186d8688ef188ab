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

# What downconvert's and upconvert's help say alike of DST, corrupt data and live brokers (paragraphs of their HELP).
DST_RULES_HELP = [
    'DST is refused (exit 2, nothing written) when it, or a DST/<partition> it would receive, is or lies '
    'inside SRC, its partition dir or its broker log dir. A complete run ends with DST/_SUCCESS; a run that '
    'was interrupted leaves whole partition dirs and no _SUCCESS, and a second run over it stops and says '
    'so: --resume converts the partitions not yet complete (with the same options), or remove DST and run again.',
    'Corrupt data is never rewritten with a fresh CRC: a batch or v0/v1 inner message that dump --deep --verify '
    'reports as an error stops the run (exit 1, nothing written), naming file, byte and offset; --skip-corrupt '
    'leaves such data out and counts it.',
    "Exit 3 (nothing written): DST is inside a log dir a live broker holds (its .lock), or SRC is and --live "
    "was not given. A stopped broker's log dir that DST is in stays locked while the run writes.",
]
