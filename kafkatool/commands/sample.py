"""``kafkatool sample DIR``: write a realistic, deterministic Kafka log dir.

Thin: options -> ``SampleSpec`` (a profile, adjusted by the options given) -> ``generate_sample`` ->
a per-partition listing on stdout (text or JSON lines) and a one-line summary on stderr.
"""

from __future__ import annotations

import enum
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafkatool.commands.options import (
    MemoryOpt,
    Output,
    QuietOpt,
    TracebackOpt,
    size_opt,
    size_range_opt,
    time_opt,
    use_budget,
)
from kafkatool.errors import ExitCode, UsageError
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import CODEC_LABELS, Codec
from kafkatool.sample.spec import (
    DEFAULT_START_MS,
    IntRange,
    SampleSpec,
    TopicSpec,
    bench_topic,
    demo_topics,
)
from kafkatool.util.units import format_size

if TYPE_CHECKING:  # the generator imports numpy: only when the command runs, not when the CLI starts
    from kafkatool.sample.generate import SampleResult
    from kafkatool.sample.partition import PartitionSummary


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


def sample(
    directory: Annotated[Path, typer.Argument(help="Where to write the log dir: a new or empty directory.",
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
    level: Annotated[int | None, typer.Option("--level", help="Compression level (gzip, lz4, zstd).",
                                              show_default=False)] = None,
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
    """Write a realistic Kafka log dir: topics and partitions with rolled segments and their indexes,
    producer snapshots, transactions with markers and .txnindex files, leader epochs, a format-upgrade
    mix, a compacted __consumer_offsets, checkpoints and meta.properties. Deterministic for a seed.

    Written into a staging dir beside DIRECTORY, fsynced, then renamed into place. Exit 3 (nothing written)
    while a live broker holds the .lock of DIRECTORY or of a log dir it is in; a stopped broker's log dir it is
    in stays locked meanwhile.

    Examples:

      kafkatool sample /tmp/kafkatool-demo

      kafkatool sample /tmp/bench --profile bench --codec lz4 --value-bytes 100 --batch-records 256

      kafkatool sample /tmp/txn --topics payments --partitions 2 --transactional --segment-bytes 64KiB
    """
    out = Output(quiet=quiet)
    use_budget(memory)
    shaping: dict[str, Any] = {
        "--topics": topics, "--partitions": partitions, "--magic": magic, "--codec": codec, "--level": level,
        "--partition-bytes": partition_bytes, "--batch-records": batch_records, "--value-bytes": value_bytes,
        "--key-cardinality": key_cardinality, "--null-key-fraction": null_key_fraction, "--headers": headers,
        "--timestamp-type": timestamp_type, "--producers": producers, "--idempotent": idempotent,
        "--transactional": transactional or None, "--abort-fraction": abort_fraction,
        "--compacted": compacted or None, "--tombstone-fraction": tombstone_fraction,
        "--index-interval-bytes": index_interval_bytes, "--retention-bytes": retention_bytes,
        "--leader-epochs": leader_epochs, "--compressible": compressible,
    }
    given = [k for k, v in shaping.items() if v is not None]
    chosen = profile or (Profile.custom if given else Profile.demo)
    seg = segment_bytes
    if chosen == Profile.demo:
        if given:
            raise UsageError(f"the demo profile is fixed; {', '.join(given)} shape custom topics "
                             "(use --profile custom or bench)")
        topic_specs = demo_topics(records, seg)
    else:
        base = bench_topic() if chosen == Profile.bench else TopicSpec("sample")
        names = [n.strip() for n in (topics or base.name).split(",") if n.strip()]
        if not names:
            raise UsageError("--topics names no topic")
        shaped = _shape(base, records=records, partition_bytes=partition_bytes, segment_bytes=seg, **{
            "partitions": partitions, "magic": magic, "codec": codec, "level": level,
            "batch_records": batch_records, "value_bytes": value_bytes, "key_cardinality": key_cardinality,
            "null_key_fraction": null_key_fraction, "headers": headers, "timestamp_type": timestamp_type,
            "producers": producers, "idempotent": idempotent, "transactional": transactional,
            "abort_fraction": abort_fraction, "compacted": compacted, "tombstone_fraction": tombstone_fraction,
            "index_interval_bytes": index_interval_bytes, "retention_bytes": retention_bytes,
            "leader_epochs": leader_epochs, "compressible": compressible})
        topic_specs = tuple(replace(shaped, name=n) for n in names)
    spec = SampleSpec(topic_specs, seed=seed,
                      start_ms=start_time if start_time is not None else DEFAULT_START_MS,
                      clean_shutdown=active_indexes == ActiveIndexes.trimmed, profile=chosen.value)

    from kafkatool.sample.generate import generate_sample

    header = [fmt == SampleFormat.text]  # printed with the first partition: a refused run prints no data

    def progress(p: PartitionSummary) -> None:
        if fmt == SampleFormat.json:
            out.json(_partition_json(p))
        else:
            if header[0]:
                out.line(_HEADER)
                header[0] = False
            out.line(_partition_line(p))

    result = generate_sample(directory, spec, progress=progress)
    if fmt == SampleFormat.json:
        out.json(_summary_json(result))
    out.note(_summary_text(result))
    return ExitCode.OK


def _shape(base: TopicSpec, *, records: int | None, partition_bytes: int | None, segment_bytes: int | None,
           **o: Any) -> TopicSpec:
    """Apply the options that were given to ``base``."""
    c: dict[str, Any] = {}
    if records is not None:
        c.update(records=records, partition_bytes=None)
    if partition_bytes is not None:
        c["partition_bytes"] = partition_bytes
    if segment_bytes is not None:
        c["segment_bytes"] = segment_bytes
    if o["magic"] is not None:
        c["magics"] = _magics(o["magic"])
    if o["codec"] is not None:
        c["codecs"] = _codecs(o["codec"])
    if o["batch_records"] is not None:
        c["batch_records"] = IntRange.parse(o["batch_records"], "--batch-records", minimum=1)
    if o["value_bytes"] is not None:
        c["value_bytes"] = o["value_bytes"]
    for name in ("partitions", "level", "key_cardinality", "null_key_fraction", "headers", "abort_fraction",
                 "tombstone_fraction", "leader_epochs", "compressible", "idempotent", "producers"):
        if o[name] is not None:
            c[name] = o[name]
    if o["timestamp_type"] is not None:
        c["timestamp_type"] = (TimestampType.LOG_APPEND_TIME if o["timestamp_type"] == TsType.append
                               else TimestampType.CREATE_TIME)
    if o["transactional"]:
        c.update(transactional_producers=o["producers"] or 2, producers=0,
                 abort_fraction=0.2 if o["abort_fraction"] is None else o["abort_fraction"])
    if o["compacted"]:
        c["compacted"] = True
    for name in ("index_interval_bytes", "retention_bytes"):
        if o[name] is not None:
            c[name] = o[name]
    return replace(base, **c)


def _magics(text: str) -> tuple[int, ...]:
    v = text.strip().lower()
    if v == "mix":
        return (0, 1, 2)
    if v in ("0", "1", "2"):
        return (int(v),)
    raise UsageError(f"--magic: expected 0, 1, 2 or mix, got {text!r}")


def _codecs(text: str) -> tuple[Codec, ...]:
    v = text.strip().lower()
    if v == "mix":
        return tuple(Codec)
    out = []
    for part in v.split(","):
        if part.strip() not in CODEC_LABELS:
            raise UsageError(f"--codec: unknown codec {part.strip()!r} ({', '.join(CODEC_LABELS)} or mix)")
        out.append(Codec.from_label(part))
    return tuple(dict.fromkeys(out))


_HEADER = f"{'PARTITION':<22} {'FORMATS':<9} {'CODECS':<22} {'SEGS':>4} {'RECORDS':>8} {'OFFSETS':<15} " \
          f"{'SIZE':>9}  NOTES"


def _partition_line(p: PartitionSummary) -> str:
    notes = []
    if p.commits or p.aborts:
        notes.append(f"txns {p.commits} committed/{p.aborts} aborted")
    if p.compacted:
        notes.append(f"compacted (cleaned to {p.cleaner_checkpoint})" if p.cleaner_checkpoint is not None
                     else "compacted")
    if p.log_start_offset > p.first_segment_base:
        notes.append(f"DeleteRecords to {p.log_start_offset}")
    elif p.log_start_offset > 0:
        notes.append(f"retention deleted offsets < {p.log_start_offset}")
    if p.epochs:
        notes.append("leader epochs " + ",".join(str(e.epoch) for e in p.epochs))
    formats = "/".join(f"v{m}" for m in p.magics) or "-"
    codecs = ",".join(p.codecs) or "-"
    offsets = f"{p.log_start_offset}..{p.log_end_offset - 1}" if p.log_end_offset > p.log_start_offset else "empty"
    return (f"{p.topic}-{p.partition:<{max(1, 21 - len(p.topic))}} {formats:<9} {codecs:<22} {len(p.segments):>4} "
            f"{p.records:>8} {offsets:<15} {format_size(p.bytes):>9}  {'; '.join(notes)}")


def _partition_json(p: PartitionSummary) -> dict[str, Any]:
    return {
        "type": "partition", "topic": p.topic, "partition": p.partition, "topic_id": p.topic_id,
        "log_start_offset": p.log_start_offset, "log_end_offset": p.log_end_offset,
        "high_watermark": p.high_watermark, "recovery_point": p.recovery_point,
        "magics": list(p.magics), "codecs": list(p.codecs), "records": p.records, "markers": p.markers,
        "committed_txns": p.commits, "aborted_txns": p.aborts, "bytes": p.bytes,
        "uncompressed_bytes": p.uncompressed_bytes, "compacted": p.compacted,
        "cleaner_checkpoint": p.cleaner_checkpoint,
        "leader_epochs": [[e.epoch, e.start_offset] for e in p.epochs], "snapshots": list(p.snapshots),
        "segments": [{"base_offset": s.base_offset, "size": s.size, "next_offset": s.next_offset,
                      "records": s.records, "batches": s.physical_batches, "index_entries": s.offset_index_entries,
                      "time_index_entries": s.time_index_entries, "aborted_txns": s.aborted_txns}
                     for s in p.segments],
    }


def _summary_json(r: SampleResult) -> dict[str, Any]:
    return {"type": "summary", "path": str(r.path), "profile": r.spec.profile, "seed": r.spec.seed,
            "clean_shutdown": r.spec.clean_shutdown, "cluster_id": r.cluster_id, "directory_id": r.directory_id,
            "broker_epoch": r.broker_epoch, "topics": len(r.spec.topics), "partitions": len(r.partitions),
            "records": sum(p.records for p in r.partitions), "bytes": r.bytes,
            "elapsed_s": round(r.elapsed_s, 3)}


def _summary_text(r: SampleResult) -> str:
    mb_s = r.bytes / r.elapsed_s / 1e6 if r.elapsed_s > 0 else 0.0
    return (f"kafkatool sample: wrote {len(r.partitions)} partitions of {len(r.spec.topics)} topics, "
            f"{sum(p.records for p in r.partitions)} records, {format_size(r.bytes)} of segments to {r.path} "
            f"in {r.elapsed_s:.2f} s ({mb_s:.0f} MB/s; profile {r.spec.profile}, seed {r.spec.seed})")


def register(app: typer.Typer) -> None:
    app.command(
        "sample",
        short_help="Write a realistic Kafka log dir, deterministic for a seed.",
        no_args_is_help=True,
    )(sample)
