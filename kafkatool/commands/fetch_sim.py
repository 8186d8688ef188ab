"""``kafkatool fetch-sim``: what a 3.9 broker sends an old-format consumer, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.examples import FETCH_SIM as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    LiveOpt,
    MemoryOpt,
    Output,
    OutputFormat,
    PartitionOpt,
    QuietOpt,
    Sizes,
    TextJsonFormatOpt,
    TopicOpt,
    TracebackOpt,
    memory_option,
    require,
    size_list_opt,
    size_opt,
)
from kafkatool.commands.render.fetch import FetchRenderer
from kafkatool.constants import DOWN_CONVERSION_READ_SIZE as MAX_READ_SIZE
from kafkatool.fetch.run import FetchSimRequest, fetch_sim
from kafkatool.fetch.simulate import (
    DEFAULT_BROKER_FETCH_MAX_BYTES,
    DEFAULT_FETCH_MAX_BYTES,
    DEFAULT_PARTITION_MAX_BYTES,
    to_magic_for_version,
)
from kafkatool.util.units import format_size

HELP = """Simulate a fetch by a consumer that only understands an older message format (Fetch v0-3).

Reproduces Kafka 3.9 exactly: the start position (offset index, then the walk to the first batch whose
last offset reaches the fetch offset, across segments), the slice, the committed size fixed before
conversion (KIP-283), the lazily converted 128 KiB chunks, and the end of the data: the output cut
mid-batch when the converted data is larger, an overflow ("fake trailing") batch repeated every 128 KiB
when smaller, the duplicated first batch when a leading batch converts to nothing, the overflow after a
zstd chunk. Reports what an old consumer would make of it. Exit 1 when a partition ends in an error.

--topic and --partition select partitions of the dirs given; a bare .log file outside a partition dir is
named by them (one topic name; partition 0 unless given).

Exit 3: a live broker holds the .lock of a log dir a PATH is in (--live reads it anyway, with a warning that
active segments may be mid-write), or of one that --output or --plot would write into (never written).
"""


def register(app: typer.Typer) -> None:
    add_command(app, "fetch-sim", fetch_sim_cmd, help=HELP, epilog=EXAMPLES, aliases={"--out": "--output"})


def fetch_sim_cmd(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH", help="Partition dirs, log dirs or .log segment files.",
                                                show_default=False)],
    fetch_version: Annotated[int | None, typer.Option("--fetch-version", min=0, max=3,
                                                      help="Fetch request version 0..3 (v0-1 read magic 0, "
                                                      "v2-3 magic 1).")] = None,
    to_magic: Annotated[int | None, typer.Option("--to-magic", min=0, max=1,
                                                 help="Target magic instead of a version (0 -> Fetch v1, "
                                                 "1 -> Fetch v3).")] = None,
    fetch_offset: Annotated[list[str] | None, typer.Option(
        "--fetch-offset", metavar="OFFSET", help="Offset to fetch from: one for all partitions, one per partition in "
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
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", metavar="FILE", help="Write the whole FetchResponse (size prefix included) to FILE.")]
    = None,
    raw: Annotated[bool, typer.Option("--raw", help="With --output: write only the partition's record bytes.")]
    = False,
    correlation_id: Annotated[int, typer.Option("--correlation-id", help="Response correlation id.")] = 0,
    throttle_time_ms: Annotated[int, typer.Option("--throttle-time-ms", help="Throttle time (v1+).")] = 0,
    consumer_view: Annotated[bool, typer.Option(
        "--consumer-view", help="Print the records an old consumer returns from the response.")] = False,
    sweep_chunk_sizes: Annotated[Sizes | None, size_list_opt(
        "--sweep-chunk-sizes", help="Comma-separated chunk sizes (e.g. 16K,32K,64K,128K,256K,512K,1M): read "
        "the log from the fetch offset to its end with each, and print throughput and peak memory per size, "
        "plus the whole-slice conversion of brokers before KIP-283.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", metavar="FILE",
                                              help="With --sweep-chunk-sizes: write a PNG chart.")] = None,
    trace_memory: Annotated[bool, typer.Option(
        "--trace-memory", help="Also measure each chunk conversion's peak heap with tracemalloc (reported as "
        "traced peak conversion memory; slow: tens of times the conversion's time).")] = False,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    out = Output(quiet=quiet)
    form = OutputFormat(fmt.value) if fmt is not None else OutputFormat.text
    if fetch_version is not None and to_magic is not None:
        require(to_magic == to_magic_for_version(fetch_version),
                f"--to-magic {to_magic} contradicts --fetch-version {fetch_version} "
                f"(which reads magic {to_magic_for_version(fetch_version)})")
    require(not raw or output is not None, "--raw needs --output FILE")
    require(output is None or not output.name.isdigit() or output.exists(),
            f"--output {output}: -o is --output (a file) now; the fetch offset is --fetch-offset")
    require(plot is None or sweep_chunk_sizes is not None, "--plot needs --sweep-chunk-sizes")
    request = FetchSimRequest(
        paths, fetch_version=fetch_version, to_magic=to_magic, fetch_offset=fetch_offset or (),
        partition_max_bytes=partition_max_bytes, fetch_max_bytes=fetch_max_bytes,
        broker_fetch_max_bytes=broker_fetch_max_bytes, min_one_message=min_one_message, chunk_size=chunk_size,
        position=position, high_watermark=high_watermark, log_magic=log_magic, topic=tuple(topic or ()),
        partition=tuple(partition or ()), output=output, raw=raw,
        correlation_id=correlation_id, throttle_time_ms=throttle_time_ms, consumer_view=consumer_view,
        sweep_chunk_sizes=sweep_chunk_sizes, plot=plot, trace_memory=trace_memory, live=live,
        memory=memory_option(memory))
    with FetchRenderer(out, form) as renderer:
        return int(fetch_sim(request, renderer).exit_code)
