"""``downconvert``'s and ``upconvert``'s output: per-partition summaries (or JSON lines) on stdout, input
warnings on stderr, a progress bar on a terminal, the closing total."""

from __future__ import annotations

from types import TracebackType

from kafkatool.commands.options import Output, OutputFormat
from kafkatool.commands.terminal import ProgressBar
from kafkatool.convert.engine import PartitionSource, PartitionStats
from kafkatool.convert.run import ConvertListener
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size


class ConvertRenderer(ConvertListener):
    """Progress bar (stderr, only on a terminal: the partition lines print above it) and the per-partition
    summary as partitions finish."""

    def __init__(self, output: Output, form: OutputFormat, command: str) -> None:
        self.output = output
        self.form = form
        self.command = command
        self.bar: ProgressBar | None = None

    def __enter__(self) -> ConvertRenderer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def warning(self, text: str) -> None:
        self.output.warning(text)

    def note(self, text: str) -> None:
        self.output.note(f"kafkatool {self.command}: {text}")

    def start(self, sources: list[PartitionSource], total_bytes: int) -> None:
        self.bar = ProgressBar(self.command, total_bytes, enabled=not self.output.quiet)
        self.bar.start()

    def advance(self, n_bytes: int, partition: str) -> None:
        if self.bar is not None:
            self.bar.update(advance=n_bytes, description=f"{self.command} {shown(partition)}")

    def partition_done(self, stats: PartitionStats) -> None:
        render_partition(self.output, self.form, stats, self.command)


def render_partition(output: Output, form: OutputFormat, s: PartitionStats, command: str) -> None:
    for w in s.warnings:  # findings about the input (skipped torn tails, files not carried): always shown
        output.warning(f"{shown(s.partition)}: {w}")
    if form == OutputFormat.json:
        output.json({"type": "partition", "command": command, **s.as_dict()})
        return
    c = s.counters
    dest = s.output or "(dry run: nothing written)"
    lines = [
        f"{shown(s.partition)}: {shown(s.source)} -> {shown(dest)} (magic {s.to_magic})",
        f"  segments   {s.segments_in} in, {s.segments_out} out",
        f"  records    {c.records_in} in, {c.records_out} out",
        f"  bytes      {s.bytes_in} in ({format_size(s.bytes_in)}), {s.bytes_out} out ({format_size(s.bytes_out)})",
        f"  batches    {s.batches_in} in, {c.batches_out} written ({c.batches_built} built, {c.batches_copied} "
        f"copied unchanged)",
        f"  dropped    {s.control_batches_dropped} control batches, {s.empty_batches_dropped} empty batches, "
        f"headers of {s.headers_dropped} records, producer fields of {s.producer_fields_dropped} batches",
        f"  codec      {c.recompressed_batches} batches compressed anew, {c.codec_changed_batches} source batches "
        f"changed codec",
        f"  KIP-126    {c.splits} splits into {c.split_batches} batches, split rate {s.split_rate:.4f}",
        f"  log end    {s.log_end_offset_in} in, {s.log_end_offset_out} out",
        f"  files      carried: {', '.join(s.files_carried) or '-'}; dropped: {', '.join(s.files_dropped) or '-'}",
        f"  time       {s.elapsed_s:.3f} s, peak memory {format_size(s.peak_rss_bytes)}"
        + ("" if s.peak_rss_scope == "partition" else " (the whole process's so far: not resettable here)"),
    ]
    if s.trailing_bytes_skipped:
        lines.append(f"  skipped    {s.trailing_bytes_skipped} torn-tail bytes (as broker recovery would)")
    k = s.corrupt
    if k.count:
        unknown = f" (and {k.unknown_records} batches whose records do not decode)" if k.unknown_records else ""
        lines.append(f"  corrupt    left out (--skip-corrupt): {k.records} records{unknown}; {k.batches} whole batches")
    for line in lines:
        output.line(line)


def render_total(output: Output, form: OutputFormat, results: list[PartitionStats], command: str,
                 dry_run: bool) -> None:
    keys = ("segments_in", "segments_out", "bytes_in", "bytes_out", "batches_in", "records_in", "records_out",
            "batches_out", "batches_built", "batches_copied", "control_batches_dropped", "headers_dropped",
            "recompressed_batches", "splits", "split_batches", "trailing_bytes_skipped", "corrupt_batches_skipped",
            "corrupt_records_skipped")
    totals = {k: 0 for k in keys}
    for r in results:
        d = r.as_dict()
        for k in keys:
            totals[k] += int(d[k])
    elapsed = sum(r.elapsed_s for r in results)
    peak = max((r.peak_rss_bytes for r in results), default=0)
    if form == OutputFormat.json:
        output.json({"type": "summary", "command": command, "partitions": len(results), "dry_run": dry_run,
                     **totals, "elapsed_s": round(elapsed, 3), "peak_rss_bytes": peak})
        return
    if len(results) > 1:
        left_out = (f", {totals['corrupt_records_skipped']} corrupt records left out"
                    if totals["corrupt_records_skipped"] or totals["corrupt_batches_skipped"] else "")
        output.line(f"total: {len(results)} partitions, {totals['records_in']} records in, {totals['records_out']} "
                    f"out{left_out}, {format_size(totals['bytes_in'])} in, {format_size(totals['bytes_out'])} out, "
                    f"{totals['splits']} splits, {elapsed:.3f} s, peak memory {format_size(peak)}")
