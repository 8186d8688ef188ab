"""``fetch-sim``'s output: each partition's report (text or JSON lines), the records an old consumer returns,
the response line, or the sweep's table; findings on stderr."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkatool.commands.options import Output, OutputFormat
from kafkatool.commands.terminal import ProgressBar
from kafkatool.errors import NotRegularFileError
from kafkatool.fetch.report import SweepRow
from kafkatool.fetch.run import FetchListener
from kafkatool.fetch.simulate import PartitionFetch
from kafkatool.log.layout import IrregularFile
from kafkatool.record.batch import Record
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size

MiB = 1 << 20


class FetchRenderer(FetchListener):
    def __init__(self, output: Output, form: OutputFormat) -> None:
        self.output, self.form = output, form
        # the sweep's steps (a chunk size each, over the whole log): one transient line on a terminal
        self.bar = ProgressBar("fetch-sim", None, enabled=not output.quiet)

    def __enter__(self) -> FetchRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def warning(self, text: str) -> None:
        self.output.warning(text)

    def note(self, text: str) -> None:
        if self.bar.enabled and text.startswith("sweep:"):
            self.bar.start()
            self.bar.update(description=f"fetch-sim {text}")
        else:
            self.output.note(text)

    def record(self, plan: PartitionFetch, rec: Record) -> None:
        tp = plan.request.log.topic_partition
        if self.form == OutputFormat.json:
            self.output.json({"type": "record", "topic": tp.topic, "partition": tp.partition, "offset": rec.offset,
                              "timestamp": rec.timestamp, "key": _text(rec.key), "value": _text(rec.value)})
        else:
            self.output.line(f"{shown(str(tp))} offset={rec.offset} timestamp={rec.timestamp} key={_line(rec.key)} "
                             f"value={_line(rec.value)}")

    def not_regular(self, file: IrregularFile) -> None:
        if self.form == OutputFormat.json:
            self.output.json({"type": "finding", "kind": NotRegularFileError.finding, "path": str(file.path),
                              "message": file.message})
        self.output.error(f"{shown(file.path)}: {file.message}")

    def partition(self, report: dict[str, Any], problem: str | None) -> None:
        if self.form == OutputFormat.json:
            self.output.json(report)
        else:
            for line in _text_report(report):
                self.output.line(line)
        if problem is not None:
            self.output.error(problem)

    def response(self, resp: dict[str, Any]) -> None:
        if self.form == OutputFormat.json:
            self.output.json(resp)
            return
        out, raw = resp["out"], resp["raw"]
        self.output.line(f"response: FetchResponse v{resp['fetch_version']}, {resp['partitions']} partition(s), size "
                         f"prefix {resp['response_size']} (+4), records {resp['records_bytes']} bytes"
                         + (f" -> {shown(out)}{' (raw records)' if raw else ''}" if out is not None else ""))

    def sweep(self, rows: Sequence[SweepRow]) -> None:
        self.bar.stop()
        output = self.output
        if self.form == OutputFormat.json:
            for row in rows:
                output.json(row.as_dict())
            return
        output.line(f"{'chunk':>8} {'fetches':>7} {'source MiB':>10} {'sent MiB':>9} {'seconds':>8} {'MiB/s':>8} "
                    f"{'peak (model)':>13} {'peak (traced)':>14}")
        for row in rows:
            label = format_size(row.chunk_size) if row.chunk_size else "whole"
            rate = row.source_bytes / row.seconds / MiB if row.seconds > 0 else 0.0
            output.line(f"{label:>8} {row.fetches:>7} {row.source_bytes / MiB:>10.2f} {row.sent_bytes / MiB:>9.2f} "
                        f"{row.seconds:>8.3f} {rate:>8.1f} {format_size(row.peak_model_bytes):>13} "
                        f"{format_size(row.peak_traced_bytes):>14}")


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "backslashreplace")


_CONTROL = {i: f"\\x{i:02x}" for i in [*range(32), 127]}


def _line(b: bytes | None) -> str:
    """Key/value on one text line: UTF-8 where valid, \\xNN for other bytes and control characters."""
    return "null" if b is None else b.decode("utf-8", "backslashreplace").translate(_CONTROL)


def _text_report(r: dict[str, Any]) -> list[str]:
    tp = shown(f"{r['topic']}-{r['partition']}")
    lines = [f"{tp}: fetch v{r['fetch_version']} (magic {r['to_magic']}) from offset {r['fetch_offset']}: "
             f"{r['case']}" + (f" ({r['error_name']})" if r["error_code"] else "")]
    if r["error"]:
        lines.append(f"  error: {r['error']}")
    if r["segment"] is not None:
        fb = r["first_batch"]
        first = f", first batch last offset {fb['last_offset']}, {fb['size']} bytes" if fb else ""
        lines.append(f"  read: {shown(Path(r['segment']).name)} @ {r['slice_position']}, slice {r['slice_size']} bytes "
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
