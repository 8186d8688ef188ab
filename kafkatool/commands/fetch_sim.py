"""``kafkatool fetch-sim``: what a 3.9 broker sends an old-format consumer, byte for byte."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from kafkatool.commands.options import (
    FormatOpt,
    LiveOpt,
    MemoryOpt,
    Output,
    OutputFormat,
    QuietOpt,
    Sizes,
    TracebackOpt,
    check_live,
    size_list_opt,
    size_opt,
    use_budget,
)
from kafkatool.constants import DOWN_CONVERSION_READ_SIZE as MAX_READ_SIZE
from kafkatool.errors import ExitCode, UsageError
from kafkatool.fetch.report import partition_problem, partition_report, sweep
from kafkatool.fetch.response import response_size
from kafkatool.fetch.simulate import (
    DEFAULT_BROKER_FETCH_MAX_BYTES,
    DEFAULT_FETCH_MAX_BYTES,
    DEFAULT_PARTITION_MAX_BYTES,
    FetchOptions,
    PartitionFetch,
    PartitionRequest,
    iter_fetch_offsets,
    partition_logs,
    simulate,
    to_magic_for_version,
    version_for_magic,
)
from kafkatool.log.layout import TopicPartition
from kafkatool.log.lock import hold_for_write, refuse_if_live
from kafkatool.record.batch import Record
from kafkatool.util.atomic import atomic_write
from kafkatool.util.png_chart import Series, bar_chart
from kafkatool.util.units import format_size

HELP = """Simulate a fetch by a consumer that only understands an older message format (Fetch v0-3).

Reproduces Kafka 3.9 exactly: the start position (offset index, then the walk to the first batch whose
last offset reaches the fetch offset, across segments), the slice, the committed size fixed before
conversion (KIP-283), the lazily converted 128 KiB chunks, and the end of the data: the output cut
mid-batch when the converted data is larger, an overflow ("fake trailing") batch repeated every 128 KiB
when smaller, the duplicated first batch when a leading batch converts to nothing, the overflow after a
zstd chunk. Reports what an old consumer would make of it. Exit 1 when a partition ends in an error.

Exit 3: a live broker holds the .lock of a log dir a PATH is in (--live reads it anyway, with a warning that
active segments may be mid-write), or of one that --out or --plot would write into (never written).
"""


def register(app: typer.Typer) -> None:
    app.command(
        "fetch-sim",
        help=HELP,
        short_help="What a broker sends a consumer of an older message format (Fetch v0-3).",
        no_args_is_help=True,
    )(fetch_sim)


def fetch_sim(
    paths: Annotated[list[Path], typer.Argument(help="Partition dirs, log dirs or .log segment files.",
                                                show_default=False)],
    fetch_version: Annotated[int | None, typer.Option("--fetch-version", min=0, max=3,
                                                      help="Fetch request version 0..3 (v0-1 read magic 0, "
                                                      "v2-3 magic 1).")] = None,
    to_magic: Annotated[int | None, typer.Option("--to-magic", min=0, max=1,
                                                 help="Target magic instead of a version (0 -> Fetch v1, "
                                                 "1 -> Fetch v3).")] = None,
    fetch_offset: Annotated[list[str] | None, typer.Option(
        "--fetch-offset", "-o", help="Offset to fetch from: one for all partitions, one per partition in "
        "PATH order (repeat or comma-separate), or TOPIC-N=OFFSET. Default: the log start offset.")] = None,
    partition_max_bytes: Annotated[int, size_opt(
        "--partition-max-bytes", help="Per-partition max bytes (consumer max.partition.fetch.bytes).",
        default=format_size(DEFAULT_PARTITION_MAX_BYTES))] = DEFAULT_PARTITION_MAX_BYTES,
    fetch_max_bytes: Annotated[int, size_opt(
        "--fetch-max-bytes", help="Response max bytes in the request (consumer fetch.max.bytes; Fetch v3 "
        "carries it, v0-2 do not).", default=format_size(DEFAULT_FETCH_MAX_BYTES))] = DEFAULT_FETCH_MAX_BYTES,
    broker_fetch_max_bytes: Annotated[int, size_opt(
        "--broker-fetch-max-bytes", help="The broker's fetch.max.bytes cap.",
        default=format_size(DEFAULT_BROKER_FETCH_MAX_BYTES))] = DEFAULT_BROKER_FETCH_MAX_BYTES,
    min_one_message: Annotated[bool | None, typer.Option(
        "--min-one-message/--no-min-one-message", help="Let the first non-empty partition exceed the limits "
        "to return one whole batch. Default: as the broker derives it (Fetch v3 yes, v0-2 no).",
        show_default=False)] = None,
    chunk_size: Annotated[int, size_opt(
        "--chunk-size", help="Lazy conversion chunk (Kafka's MAX_READ_SIZE, also the overflow buffer size); part "
        "of --memory: a chunk that does not fit is refused with the minimum.",
        default=format_size(MAX_READ_SIZE))] = MAX_READ_SIZE,
    position: Annotated[int | None, size_opt(
        "--position", help="Start the slice at this byte position of the segment holding the fetch offset "
        "instead of searching for the offset (one partition); the bytes there are sliced as they are.")] = None,
    log_magic: Annotated[int, typer.Option(
        "--log-magic", min=0, max=2, help="The magic the broker takes the log to hold: 2 from "
        "inter.broker.protocol.version 3.0 on (KRaft, 3.x defaults); a ZooKeeper broker below IBP 3.0 uses the "
        "topic's message.format.version (0.9.0: 0, 0.10.x: 1) and sends the slice unconverted to a fetch "
        "version that reads it.")] = 2,
    high_watermark: Annotated[int | None, typer.Option(
        "--high-watermark", help="High watermark (default: the log end offset).")] = None,
    topic: Annotated[str | None, typer.Option(
        "--topic", help="Topic name for a bare .log file outside a partition dir.")] = None,
    partition: Annotated[int, typer.Option("--partition", help="Partition number for --topic.")] = 0,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the whole FetchResponse (size prefix included) to FILE.")] = None,
    raw: Annotated[bool, typer.Option("--raw", help="With --out: write only the partition's record bytes.")] = False,
    correlation_id: Annotated[int, typer.Option("--correlation-id", help="Response correlation id.")] = 0,
    throttle_time_ms: Annotated[int, typer.Option("--throttle-time-ms", help="Throttle time (v1+).")] = 0,
    consumer_view: Annotated[bool, typer.Option(
        "--consumer-view", help="Print the records an old consumer returns from the response.")] = False,
    sweep_chunk_sizes: Annotated[Sizes | None, size_list_opt(
        "--sweep-chunk-sizes", help="Comma-separated chunk sizes (e.g. 16K,32K,64K,128K,256K,512K,1M): read "
        "the log from the fetch offset to its end with each, and print throughput and peak memory per size, "
        "plus the whole-slice conversion of brokers before KIP-283.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="With --sweep-chunk-sizes: write a PNG chart.")] = None,
    trace_memory: Annotated[bool, typer.Option(
        "--trace-memory", help="Also measure each chunk conversion's peak heap with tracemalloc (reported as "
        "traced peak conversion memory; slow: tens of times the conversion's time).")] = False,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    fmt: FormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    output = Output(quiet=quiet)
    form = output.resolve_format(fmt, tty_default=OutputFormat.text)
    if fetch_version is None:
        fetch_version = version_for_magic(1 if to_magic is None else to_magic)
    elif to_magic is not None and to_magic != to_magic_for_version(fetch_version):
        raise UsageError(f"--to-magic {to_magic} contradicts --fetch-version {fetch_version} "
                         f"(which reads magic {to_magic_for_version(fetch_version)})")
    if raw and out is None:
        raise UsageError("--raw needs --out FILE")
    if plot is not None and sweep_chunk_sizes is None:
        raise UsageError("--plot needs --sweep-chunk-sizes")
    for target in (out, plot):
        if target is not None:
            refuse_if_live(target)  # never written into a live log dir, --live or not
    check_live(paths, live, output.finding, "fetch-sim")
    options = FetchOptions(
        fetch_version=fetch_version,
        partition_max_bytes=partition_max_bytes,
        fetch_max_bytes=fetch_max_bytes,
        broker_fetch_max_bytes=broker_fetch_max_bytes,
        min_one_message=min_one_message,
        chunk_size=chunk_size,
        correlation_id=correlation_id,
        throttle_time_ms=throttle_time_ms,
        trace_memory=trace_memory,
        log_magic=log_magic,
    )
    if options.chunk_size < 1:
        raise UsageError("--chunk-size must be at least 1 byte")
    chunks = [options.chunk_size]
    if sweep_chunk_sizes is not None:
        # The sweep's last row converts each slice whole (brokers before KIP-283): the slice is its chunk.
        chunks += _sweep_sizes(sweep_chunk_sizes)
        chunks.append(min(options.partition_max_bytes, options.response_max_bytes))
    mem = use_budget(memory, chunk_bytes=max(chunks))  # a chunk that does not fit: exit 2 with the minimum
    options = replace(options, decompress_limit=mem.worker.decompress_limit)
    logs = partition_logs(paths, topic_partition=TopicPartition(topic, partition) if topic else None)
    if position is not None and len(logs) != 1:
        raise UsageError("--position applies to exactly one partition")
    requests = [PartitionRequest(log, log.log_start_offset if off is None else off, position, high_watermark)
                for log, off in zip(logs, iter_fetch_offsets(fetch_offset or [], logs), strict=True)]

    if sweep_chunk_sizes is not None:
        return _sweep(output, form, options, requests, sweep_chunk_sizes, plot)

    def on_record(plan: PartitionFetch, rec: Record) -> None:
        tp = plan.request.log.topic_partition
        if form == OutputFormat.json:
            output.json({"type": "record", "topic": tp.topic, "partition": tp.partition, "offset": rec.offset,
                         "timestamp": rec.timestamp, "key": _text(rec.key), "value": _text(rec.value)})
        else:
            output.line(f"{tp} offset={rec.offset} timestamp={rec.timestamp} key={_line(rec.key)} "
                        f"value={_line(rec.value)}")

    cb = on_record if consumer_view else None
    if out is not None:
        with hold_for_write(out), atomic_write(out) as f:
            plans = simulate(options, requests, f, raw=raw, on_record=cb)
    else:
        plans = simulate(options, requests, on_record=cb)

    rc = ExitCode.OK
    for plan in plans:
        report = partition_report(plan, options)
        if form == OutputFormat.json:
            output.json(report)
        else:
            for line in _text_report(report):
                output.line(line)
        problem = partition_problem(plan)
        if problem is not None:
            output.finding(f"fetch-sim: {problem}")
            rc = ExitCode.FINDINGS
    headers = [p.header for p in plans]
    resp = {"type": "response", "fetch_version": options.fetch_version, "to_magic": options.to_magic,
            "partitions": len(plans), "response_size": response_size(options.fetch_version, headers),
            "response_max_bytes": options.response_max_bytes,
            "records_bytes": sum(max(0, h.records_size) for h in headers),
            "out": str(out) if out is not None else None, "raw": raw}
    if form == OutputFormat.json:
        output.json(resp)
    else:
        output.line(f"response: FetchResponse v{options.fetch_version}, {len(plans)} partition(s), size prefix "
                    f"{resp['response_size']} (+4), records {resp['records_bytes']} bytes"
                    + (f" -> {out}{' (raw records)' if raw else ''}" if out is not None else ""))
    return int(rc)


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "backslashreplace")


_CONTROL = {i: f"\\x{i:02x}" for i in [*range(32), 127]}


def _line(b: bytes | None) -> str:
    """Key/value on one text line: UTF-8 where valid, \\xNN for other bytes and control characters."""
    return "null" if b is None else b.decode("utf-8", "backslashreplace").translate(_CONTROL)


def _text_report(r: dict[str, Any]) -> list[str]:
    tp = f"{r['topic']}-{r['partition']}"
    lines = [f"{tp}: fetch v{r['fetch_version']} (magic {r['to_magic']}) from offset {r['fetch_offset']}: "
             f"{r['case']}" + (f" ({r['error_name']})" if r["error_code"] else "")]
    if r["error"]:
        lines.append(f"  error: {r['error']}")
    if r["segment"] is not None:
        fb = r["first_batch"]
        first = f", first batch last offset {fb['last_offset']}, {fb['size']} bytes" if fb else ""
        lines.append(f"  read: {Path(r['segment']).name} @ {r['slice_position']}, slice {r['slice_size']} bytes "
                     f"(max {r['max_bytes']}, min one message {'yes' if r['min_one_message'] else 'no'}{first})")
    lines.append(f"  committed {r['committed_size']} bytes; converted {r['converted_size']} bytes in {r['chunks']} "
                 f"chunk(s) of <= {format_size(r['chunk_size'])}; written {r['bytes_written']}")
    if "batches_sent" in r:
        lines.append(f"  wire: {r['batches_sent']} complete batch(es) ({r['complete_bytes']} bytes), "
                     f"{r['records_sent']} record(s); tail {r['tail']} {r['tail_bytes']} bytes")
        ret = r["records_returned"]
        span = f" ({r['first_returned_offset']}..{r['last_returned_offset']})" if ret else ""
        lines.append(f"  consumer: {r['consumer_outcome']}, returns {ret} record(s){span}, next fetch offset "
                     f"{r['next_fetch_offset']}; duplicates {r['duplicate_offsets']}, below fetch offset "
                     f"{r['records_below_fetch_offset']}")
        if r["consumer_error"]:
            lines.append(f"  consumer error: {r['consumer_error']}")
    quirks = [q for q, on in (("duplicated first batch", r["duplicated_first_batch"]),
                              ("zstd chunk replaced by overflow", r["zstd_overflow"])) if on]
    lines.append(f"  padding {r['padding_bytes']} bytes ({r['overflow_buffers']} overflow header(s)), cut "
                 f"{r['cut_bytes']} bytes, peak conversion memory {format_size(r['peak_conversion_memory'])}"
                 + ("" if r["peak_conversion_memory_traced"] is None else
                    f" (traced in kafkatool {format_size(r['peak_conversion_memory_traced'])})")
                 + (f"; {', '.join(quirks)}" if quirks else ""))
    if r["send_error"]:
        lines.append(f"  send failed: {r['send_error']}")
    return lines


def _sweep_sizes(sizes: Sizes) -> list[int]:
    if not sizes or min(sizes) < 1:
        raise UsageError("--sweep-chunk-sizes needs sizes of at least 1 byte")
    return list(sizes)


def _sweep(output: Output, form: OutputFormat, options: FetchOptions, requests: list[PartitionRequest],
           spec: Sizes, plot: Path | None) -> int:
    sizes = _sweep_sizes(spec)
    rows = sweep(options, requests, sizes, progress=output.note)
    if form == OutputFormat.json:
        for row in rows:
            output.json(row.as_dict())
    else:
        output.line(f"{'chunk':>8} {'fetches':>7} {'source MB':>10} {'sent MB':>9} {'seconds':>8} {'MB/s':>8} "
                    f"{'peak (model)':>13} {'peak (traced)':>14}")
        for row in rows:
            label = format_size(row.chunk_size) if row.chunk_size else "whole"
            output.line(f"{label:>8} {row.fetches:>7} {row.source_bytes / 1e6:>10.2f} {row.sent_bytes / 1e6:>9.2f} "
                        f"{row.seconds:>8.3f} {row.mb_per_s:>8.1f} {format_size(row.peak_model_bytes):>13} "
                        f"{format_size(row.peak_traced_bytes):>14}")
    if plot is not None:
        cats = [format_size(r.chunk_size) if r.chunk_size else "whole" for r in rows]
        png = bar_chart("fetch-sim: lazy down-conversion by chunk size", cats, [
            Series("throughput", [r.mb_per_s for r in rows], "MB/s of source"),
            Series("peak memory, model", [r.peak_model_bytes / 1024 for r in rows], "KiB"),
            Series("peak memory, traced", [r.peak_traced_bytes / 1024 for r in rows], "KiB"),
        ])
        with hold_for_write(plot), atomic_write(plot) as f:
            f.write(png)
        output.note(f"plot written to {plot}")
    return int(ExitCode.OK)
