"""``kafkatool sample DIR``: write a realistic, deterministic Kafka log dir.

Options are parsed here; the work is ``kafkatool.sample.run.sample`` (a profile, shaped by the options given),
rendered by ``kafkatool.commands.render.sample``: a per-partition listing on stdout (text or JSON lines) and a
one-line summary on stderr.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.examples import SAMPLE as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    MemoryOpt,
    Output,
    QuietOpt,
    TracebackOpt,
    memory_option,
    require,
    size_opt,
    size_range_opt,
    time_opt,
)
from kafkatool.commands.render.sample import SampleRenderer
from kafkatool.sample.run import SampleRequest
from kafkatool.sample.run import sample as sample_run
from kafkatool.sample.spec import IntRange


class Profile(str, enum.Enum):
    demo = "demo"
    bench = "bench"
    custom = "custom"


class ActiveIndexes(str, enum.Enum):
    trimmed = "trimmed"
    preallocated = "preallocated"


class SampleFormat(str, enum.Enum):
    text = "text"
    json = "json"


class TsType(str, enum.Enum):
    create = "create"
    append = "append"


_SHAPING_HELP = "Topic shape (custom/bench profiles)."

HELP = """Write a realistic Kafka log dir: topics and partitions with rolled segments and their indexes, producer
snapshots, transactions with markers and .txnindex files, leader epochs, a format-upgrade mix, a compacted
__consumer_offsets, checkpoints and meta.properties. Deterministic for a seed.

Written into a staging dir beside DIR, fsynced, then renamed into place. Exit 3 (nothing written) while a live
broker holds the .lock of DIR or of a log dir it is in; a stopped broker's log dir it is in stays locked
meanwhile.
"""


def sample(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Where to write the log dir: a new or empty "
                                              "directory.",
                                              show_default=False)],
    profile: Annotated[Profile | None, typer.Option(
        "--profile", help="demo: one of everything (the default); bench: one ~200 MiB partition in one segment; "
        "custom: the topics --topics names, shaped by the options. Topic options without --profile mean custom.",
        case_sensitive=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Same options and seed -> byte-identical files.")] = 1,
    start_time: Annotated[int | None, time_opt(
        "--start-time", help="Time of the first appends (ISO-8601 or epoch ms; default 2024-06-03T08:00:00Z).",
        show_default=False)] = None,
    active_indexes: Annotated[ActiveIndexes, typer.Option(
        "--active-indexes", help="trimmed: a cleanly stopped broker's dir (.kafka_cleanshutdown, trimmed indexes, "
        "a producer snapshot at the log end); preallocated: a broker that died (active segments' indexes "
        "preallocated to 10 MiB and zero-padded, no clean-shutdown file, recovery points at the active "
        "segments).", case_sensitive=False)] = ActiveIndexes.trimmed,
    topics: Annotated[str | None, typer.Option(
        "--topics", help="Comma-separated topic names (custom default: sample; bench default: bench).",
        show_default=False)] = None,
    partitions: Annotated[int | None, typer.Option("--partitions", min=1, help="Partitions per topic.",
                                                   show_default=False)] = None,
    magic: Annotated[str | None, typer.Option(
        "--magic", help="Message format 0, 1 or 2, or mix: a format upgrade v0 -> v1 -> v2 within each partition.",
        show_default=False)] = None,
    codec: Annotated[str | None, typer.Option(
        "--codec", help="none, gzip, snappy, lz4, zstd, a comma list drawn per batch, or mix (all; zstd only in "
        "v2 batches).", show_default=False)] = None,
    compression_level: Annotated[int | None, typer.Option(
        "--compression-level", metavar="N", help="Compression level of gzip, lz4 or zstd (Kafka's "
        "compression.<codec>.level).", show_default=False)] = None,
    records: Annotated[int | None, typer.Option(
        "--records", min=0, help="Records per partition (demo: scales every data topic, ~2000 by default).",
        show_default=False)] = None,
    partition_bytes: Annotated[int | None, size_opt(
        "--partition-bytes", help="Instead of --records: stop when each partition's log reaches this size "
        "(bench default 200MiB).", show_default=False)] = None,
    batch_records: Annotated[str | None, typer.Option(
        "--batch-records", help="Records per batch: N or MIN-MAX (default 16).", show_default=False)] = None,
    value_bytes: Annotated[IntRange | None, size_range_opt(
        "--value-bytes", help="Value size: SIZE or MIN-MAX, each a size (default 100; bench 1024).",
        show_default=False)] = None,
    key_cardinality: Annotated[int | None, typer.Option(
        "--key-cardinality", min=0, help="Distinct keys (0: all keys null; default 1000).",
        show_default=False)] = None,
    null_key_fraction: Annotated[float | None, typer.Option(
        "--null-key-fraction", help="Fraction of records without a key.", show_default=False)] = None,
    headers: Annotated[int | None, typer.Option("--headers", min=0, help="Headers per record (v2 only).",
                                                show_default=False)] = None,
    timestamp_type: Annotated[TsType | None, typer.Option(
        "--timestamp-type", help="create (CreateTime) or append (LogAppendTime, stamped by the broker).",
        case_sensitive=False, show_default=False)] = None,
    producers: Annotated[int | None, typer.Option(
        "--producers", min=1, help="Producers writing each partition (interleaved; default 1, transactional 2).",
        show_default=False)] = None,
    idempotent: Annotated[bool | None, typer.Option(
        "--idempotent/--no-idempotent", help="Producer ids and sequences on v2 batches (Kafka 3.0+ default).",
        show_default=False)] = None,
    transactional: Annotated[bool, typer.Option(
        "--transactional", help="Transactional producers: interleaved transactions, COMMIT/ABORT markers, "
        ".txnindex files.")] = False,
    abort_fraction: Annotated[float | None, typer.Option(
        "--abort-fraction", help="Fraction of transactions aborted (default 0.2 with --transactional).",
        show_default=False)] = None,
    compacted: Annotated[bool, typer.Option(
        "--compacted", help="cleanup.policy=compact: log-cleaner passes leave offset gaps, kept empty batches, "
        "delete horizons and a cleaner-offset-checkpoint.")] = False,
    tombstone_fraction: Annotated[float | None, typer.Option(
        "--tombstone-fraction", help="Fraction of records with a null value.", show_default=False)] = None,
    segment_bytes: Annotated[int | None, size_opt(
        "--segment-bytes", help="Roll segments at this size (segment.bytes; default 1GiB, demo small sizes).",
        show_default=False)] = None,
    index_interval_bytes: Annotated[int | None, size_opt(
        "--index-interval-bytes", help="index.interval.bytes (default 4096).", show_default=False)] = None,
    retention_bytes: Annotated[int | None, size_opt(
        "--retention-bytes", help="retention.bytes: the oldest segments were deleted by retention.",
        show_default=False)] = None,
    leader_epochs: Annotated[int | None, typer.Option(
        "--leader-epochs", min=1, help="Leader epochs over each partition's life (default 1).",
        show_default=False)] = None,
    compressible: Annotated[float | None, typer.Option(
        "--compressible", help="0..1: share of value bytes copied from a text dictionary (the rest random).",
        show_default=False)] = None,
    memory: MemoryOpt = None,
    fmt: Annotated[SampleFormat, typer.Option(
        "--format", "-f", help="text: one line per partition; json: JSON lines (schema 1).",
        case_sensitive=False)] = SampleFormat.text,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    request = SampleRequest(
        directory, profile=profile.value if profile is not None else None, seed=seed, start_time=start_time,
        active_indexes=active_indexes.value, records=records, segment_bytes=segment_bytes,
        memory=memory_option(memory), topics=topics, partitions=partitions, magic=magic, codec=codec,
        compression_level=compression_level,
        partition_bytes=partition_bytes, batch_records=batch_records, value_bytes=value_bytes,
        key_cardinality=key_cardinality, null_key_fraction=null_key_fraction, headers=headers,
        timestamp_type=timestamp_type.value if timestamp_type is not None else None, producers=producers,
        idempotent=idempotent, transactional=transactional, abort_fraction=abort_fraction, compacted=compacted,
        tombstone_fraction=tombstone_fraction, index_interval_bytes=index_interval_bytes,
        retention_bytes=retention_bytes, leader_epochs=leader_epochs, compressible=compressible)
    given = request.shaping()  # the library refuses them with the demo profile too, in its own words
    require(profile != Profile.demo or not given, f"the demo profile is fixed; "
            f"{', '.join('--' + name.replace('_', '-') for name in given)} shape custom topics (use --profile custom "
            "or bench)")
    out = Output(quiet=quiet)
    renderer = SampleRenderer(out, json=fmt == SampleFormat.json)
    outcome = sample_run(request, renderer)
    renderer.summary(outcome)
    return outcome.exit_code


def register(app: typer.Typer) -> None:
    add_command(app, "sample", sample, help=HELP, epilog=EXAMPLES, aliases={"--level": "--compression-level"})
