"""Rendering ``spark-scan`` results: aligned tables (text/table formats) or JSON lines (schema 1)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kafkatool.commands.options import Output, OutputFormat
from kafkatool.commands.terminal import ProgressBar
from kafkatool.dump import Severity
from kafkatool.errors import NotRegularFileError
from kafkatool.log.layout import IrregularFile
from kafkatool.scan.engine import ScanReport
from kafkatool.scan.report import (
    TopicShare,
    consumer_range_text,
    format_rows,
    partition_row,
    segment_row,
    stats_fields,
)
from kafkatool.spark.memory import MemoryPlan
from kafkatool.spark.run import ScanListener
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size, format_time_ms

MAX_GAPS_SHOWN = 10  # offset-gap findings printed per segment (as dump prints them; the JSON lines list all)


class ScanRenderer(ScanListener):
    """Notes and warnings on stderr, a progress line per analysis, the figures on stdout as they come."""

    def __init__(self, out: Output, form: OutputFormat, level: str) -> None:
        self.out, self.form, self.level = out, form, level
        self._line: ProgressLine | None = None

    def warning(self, text: str) -> None:
        self.out.warning(text)

    def note(self, text: str) -> None:
        self.out.note(text)

    def session(self, master: str, memory: MemoryPlan, cores: int) -> None:
        self.out.note(f"starting Spark ({master}, --memory {format_size(memory.budget)}: driver "
                      f"{format_size(memory.driver_memory)}, {cores} x Python worker "
                      f"{format_size(memory.python_worker_memory)})")

    def executor(self, host: str, python: str, version: str, origin: str, shipped: bool, compiled: bool) -> None:
        where = "the shipped kafkatool.zip" if shipped else f"{origin} (installed: the same sources as this driver)"
        self.out.note(f"executor {host}: Python {python}, kafkatool {version} from {where}, compiled path "
                      f"{'active' if compiled else 'INACTIVE'}")
        if not compiled:
            self.out.warning(f"executor {host} runs kafkatool without its compiled extension (not built for its "
                             "Python, or KAFKATOOL_PURE set): up to about 4x the CPU. Install kafkatool on the nodes "
                             "or give the Python the driver runs")

    def stage(self, name: str) -> None:
        self._line = ProgressLine(self.out, name)

    def progress(self, done_bytes: int, total_bytes: int, done_tasks: int = -1, total_tasks: int = -1) -> None:
        if self._line is not None:
            self._line(done_bytes, total_bytes, done_tasks, total_tasks)

    def stage_done(self, total_bytes: int) -> None:
        if self._line is not None:
            self._line.finish(total_bytes)
            self._line = None

    def stats(self, report: ScanReport) -> None:
        render_stats(report, self.out, self.form, self.level)

    def findings(self, report: ScanReport) -> None:
        render_findings(report, self.out, self.form)

    def keyshare(self, shares: Sequence[TopicShare]) -> None:
        render_keyshare(shares, self.out, self.form)

    def index_checks(self, rows: Sequence[dict[str, Any]]) -> None:
        render_index_checks(rows, self.out, self.form)

    def export(self, records: int, directory: str) -> None:
        render_export(records, directory, self.out, self.form)

    def not_regular(self, file: IrregularFile) -> None:
        if self.form == OutputFormat.json:
            self.out.json({"type": "finding", "kind": NotRegularFileError.finding, "path": str(file.path),
                           "message": file.message})
        self.out.error(f"{NotRegularFileError.finding}: {shown(file.path)}: {file.message}")  # as dump prints it


class ProgressLine:
    """Progress on stderr: a bar on a terminal (``commands.terminal``), a line every 10 s otherwise."""

    def __init__(self, out: Output, label: str) -> None:
        self.out = out
        self.label = label
        self.start = time.monotonic()
        self.tty = out.err_is_terminal
        self.last = 0.0 if self.tty else self.start  # piped: the first line after 10 s
        self.bar = ProgressBar(label, None, enabled=self.tty and not out.quiet, units="")

    def __call__(self, done_bytes: int, total_bytes: int, done_tasks: int = -1, total_tasks: int = -1) -> None:
        if self.out.quiet:
            return
        now = time.monotonic()
        if not self.tty and done_bytes >= total_bytes:
            return  # finish() says it
        if self.tty:
            if self.bar.total is None:
                self.bar = ProgressBar(self.label, total_bytes, enabled=True, units="")
                self.bar.start()
            self.bar.update(completed=done_bytes, total=total_bytes,
                            units=f"{done_tasks}/{total_tasks} tasks" if total_tasks >= 0 else "")
            return
        if done_bytes < total_bytes and now - self.last < 10.0:
            return
        self.last = now
        elapsed = now - self.start
        share = done_bytes / total_bytes if total_bytes else 1.0
        eta = f", ETA {int(elapsed / share - elapsed)}s" if 0 < share < 1 else ""
        tasks = f"{done_tasks}/{total_tasks} tasks, " if total_tasks >= 0 else ""
        self.out.note(f"{self.label}: {tasks}{format_size(done_bytes)}/{format_size(total_bytes)} ({share:.0%}){eta}")

    def finish(self, total_bytes: int) -> None:
        self.bar.stop()
        elapsed = time.monotonic() - self.start
        rate = total_bytes / elapsed if elapsed > 0 else 0.0
        self.out.note(f"{self.label}: {format_size(total_bytes)} in {elapsed:.1f}s ({format_size(int(rate))}/s)")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Columns padded to their widest cell; numbers right-aligned, text left-aligned."""
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(r[i], int | float) and not isinstance(r[i], bool) for r in rows) and bool(rows)
               for i in range(len(headers))]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric, strict=True))

    return [line(list(headers)).rstrip(), *(line(r).rstrip() for r in cells)]


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _time(ms: int | None) -> str:
    return "-" if ms is None else format_time_ms(ms)


def _offsets(first: int | None, last: int | None) -> str:
    return "-" if first is None else f"{first}..{last}"


def key_text(key: bytes, limit: int = 40) -> str:
    """A key as text when it is printable ASCII, else hex (both cut at ``limit``)."""
    if key and all(32 <= b < 127 for b in key):
        s = key.decode("ascii")
        return s if len(s) <= limit else s[:limit - 3] + "..."
    h = key.hex()
    return "0x" + (h if len(h) <= limit else h[:limit - 3] + "...")


_STATS_HEADERS = ["BATCHES", "RECORDS", "BYTES", "UNCOMPRESSED", "RATIO", "OFFSETS", "FIRST-TIMESTAMP",
                  "LAST-TIMESTAMP", "OOO-TS", "CRC-FAIL", "TXN", "CTRL", "MAX-BATCH", "~KEYS"]


def _stats_cells(f: dict[str, Any]) -> list[Any]:
    return [f["batches"], f["records"], f["bytes"], f["uncompressed_bytes"], f["compression_ratio"],
            _offsets(f["first_offset"], f["last_offset"]), _time(f["min_timestamp"]), _time(f["max_timestamp"]),
            f["out_of_order_timestamps"], f["crc_failures"] + f["decode_failures"], f["transactional_batches"],
            f["control_batches"], f["largest_batch"], f["distinct_keys"]]


def render_stats(report: ScanReport, out: Output, form: OutputFormat, level: str) -> None:
    if form == OutputFormat.json:
        for seg in report.segments:
            out.json({"type": "segment", **segment_row(seg), "formats": format_rows(seg.stats)})
        for p in report.partitions:
            out.json({"type": "partition", **partition_row(p), "formats": format_rows(p.stats)})
        for t in report.topics:
            out.json({"type": "topic", "topic": t.topic, "partitions": t.partitions, "segments": t.segments,
                      **stats_fields(t.stats), "formats": format_rows(t.stats)})
        out.json({"type": "total", "topics": len(report.topics), "partitions": len(report.partitions),
                  "segments": len(report.segments), **stats_fields(report.total),
                  "formats": format_rows(report.total), **finding_counts(report)})
    else:
        if level == "segment":
            rows = [[shown(s.topic), s.partition, s.base_offset, *_stats_cells(stats_fields(s.stats)),
                     "ok" if s.stop is None else s.stop.kind] for s in report.segments]
            lines = table(["TOPIC", "PARTITION", "SEGMENT", *_STATS_HEADERS, "END"], rows)
        elif level == "partition":
            copies = len({(p.topic, p.partition) for p in report.partitions}) < len(report.partitions)
            rows = [[shown(p.topic), p.partition, *([shown(p.dir)] if copies else []), p.segments,
                     *_stats_cells(stats_fields(p.stats))] for p in report.partitions]
            lines = table(["TOPIC", "PARTITION", *(["DIR"] if copies else []), "SEGMENTS", *_STATS_HEADERS], rows)
        else:
            rows = [[shown(t.topic), t.partitions, t.segments, *_stats_cells(stats_fields(t.stats))]
                    for t in report.topics]
            lines = table(["TOPIC", "PARTITIONS", "SEGMENTS", *_STATS_HEADERS], rows)
        for line in lines:
            out.line(line)
        out.line("")
        fmt_rows = [[shown(t.topic), f["magic"], f["codec"], f["batches"], f["records"], f["bytes"],
                     f["uncompressed_bytes"], f["compression_ratio"]]
                    for t in report.topics for f in format_rows(t.stats)]
        for line in table(["TOPIC", "MAGIC", "CODEC", "BATCHES", "RECORDS", "BYTES", "UNCOMPRESSED", "RATIO"],
                          fmt_rows):
            out.line(line)
        out.line("")
        tot = report.total
        out.line(f"total: {len(report.topics)} topics, {len(report.partitions)} partitions, {len(report.segments)} "
                 f"segments, {tot.batches} batches, {tot.records} records, {tot.bytes} bytes "
                 f"({tot.uncompressed_bytes} uncompressed, ratio {tot.compression_ratio:.2f}), "
                 f"{tot.oversized_batches} batches over max.message.bytes (largest {tot.largest_batch}), "
                 f"{tot.crc_failures} CRC failures, {tot.decode_failures} decode failures")


def finding_counts(report: ScanReport) -> dict[str, int]:
    return {"errors": report.count(Severity.ERROR), "warnings": report.count(Severity.WARNING),
            "infos": report.count(Severity.INFO), "io_errors": report.io_errors}


def render_findings(report: ScanReport, out: Output, form: OutputFormat) -> None:
    """Every finding on stderr as ``dump`` prints it (offset gaps: the first few per segment), then their count;
    with JSON also a ``finding`` line each on stdout."""
    if form == OutputFormat.json:
        for seg in report.segments:
            for f in seg.findings:
                out.json({"type": "finding", "topic": seg.topic, "partition": seg.partition, "kind": f.kind,
                          "severity": f.severity.value, "path": f.path, "position": f.position, "offset": f.offset,
                          "message": f.message, **f.data})
        out.json({"type": "findings", **finding_counts(report)})
    for seg in report.segments:
        gaps = 0
        for f in seg.findings:
            if f.kind == "offset-gap":
                gaps += 1
                if gaps > MAX_GAPS_SHOWN:
                    continue
            out.finding(f"{out.prog}: {f}")  # as dump prints it: "kafkatool <command>: <severity>: <kind>: ..."
        if gaps > MAX_GAPS_SHOWN:
            out.message("info", f"offset-gap: {shown(seg.path)}: {gaps - MAX_GAPS_SHOWN} more offset gaps not shown "
                        "(the JSON lines list every one)")
    c = finding_counts(report)
    if report.findings:
        out.note(f"findings: {c['errors']} errors, {c['warnings']} warnings, {c['infos']} info")


def render_keyshare(shares: Sequence[TopicShare], out: Output, form: OutputFormat) -> None:
    for t in shares:
        plain = {c.consumer: c for c in t.plain}
        a = t.assignment
        if form == OutputFormat.json:
            out.json({"type": "keyshare", "topic": t.topic, "consumers": a.consumers, "partitions": a.partitions,
                      "partitions_assumed": t.partitions_assumed, "assignment": a.describe(),
                      "sharing_max_records": t.sharing_skew.max_records,
                      "sharing_skew": round(t.sharing_skew.records_ratio, 4),
                      "plain_max_records": t.plain_skew.max_records,
                      "plain_skew": round(t.plain_skew.records_ratio, 4),
                      "mean_records": round(t.sharing_skew.mean_records, 4),
                      "speedup": round(t.speedup, 4), "hottest_key_records": t.bound_records})
            for c in t.sharing:
                out.json({"type": "keyshare_consumer", "topic": t.topic, "consumer": f"M{c.consumer + 1}",
                          "ranges": consumer_range_text(c), "records": c.records, "bytes": c.bytes,
                          "plain_records": plain[c.consumer].records, "plain_bytes": plain[c.consumer].bytes})
            for p in t.partitions:
                out.json({"type": "keyshare_partition", "topic": t.topic, "partition": p.partition,
                          "range_records": list(p.slot_records), "range_bytes": list(p.slot_bytes),
                          "keyed_records": p.keyed_records, "null_key_records": p.null_records,
                          "murmur2_match": p.murmur2_match, "crc32_match": p.crc32_match,
                          "partitioner": p.partitioner})
            for h in t.hot_keys:
                out.json({"type": "hot_key", "topic": t.topic, "partition": h.partition, "key": key_text(h.key, 200),
                          "records": h.records, "bytes": h.bytes, "consumer": f"M{h.consumer + 1}",
                          "share_of_consumer": round(h.share_of_consumer, 4)})
            continue
        origin = "highest partition found + 1" if t.partitions_assumed else "--partitions"
        out.line(f"key sharing: {shown(t.topic)}: {a.consumers} consumers on {a.partitions} partition"
                 f"{'s' if a.partitions != 1 else ''} ({origin}): "
                 + "  ".join(a.describe()))
        rows = [[f"M{c.consumer + 1}", consumer_range_text(c), c.records, c.bytes, plain[c.consumer].records,
                 plain[c.consumer].bytes] for c in t.sharing]
        for line in table(["CONSUMER", "HASH-RANGES", "RECORDS", "BYTES", "PLAIN-RECORDS", "PLAIN-BYTES"], rows):
            out.line("  " + line)
        s, pl = t.sharing_skew, t.plain_skew
        out.line(f"  busiest consumer: {s.max_records} records with key sharing (max/mean {s.records_ratio:.2f}), "
                 f"{pl.max_records} with plain assignment (max/mean {pl.records_ratio:.2f}, {pl.busy_consumers} of "
                 f"{a.consumers} consumers busy): {t.speedup:.2f}x; the hottest key alone has {t.bound_records} "
                 "records")
        rows = [[p.partition, p.keyed_records, p.null_records, _pct(p.murmur2_match), _pct(p.crc32_match),
                 p.partitioner] for p in t.partitions]
        for line in table(["PARTITION", "KEYED", "NULL-KEY", "MURMUR2", "CRC32", "PARTITIONER"], rows):
            out.line("  " + line)
        rows = [[h.partition, key_text(h.key), h.records, h.bytes, f"M{h.consumer + 1}",
                 f"{h.share_of_consumer:.1%}"] for h in t.hot_keys]
        for line in table(["PARTITION", "HOT-KEY", "RECORDS", "BYTES", "CONSUMER", "SHARE"], rows):
            out.line("  " + line)
        out.line("")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def render_index_checks(rows: Sequence[dict[str, Any]], out: Output, form: OutputFormat) -> None:
    if form == OutputFormat.json:
        for r in rows:
            out.json({"type": "index_check", **r})
    else:
        cells = [[shown(r["topic"]), r["partition"], r["base_offset"], r["classification"],
                  f"{r['offset_entries_on_disk']}/{r['offset_entries_rebuilt']}",
                  f"{r['time_entries_on_disk']}/{r['time_entries_rebuilt']}", r["detail"] or ""] for r in rows]
        for line in table(["TOPIC", "PARTITION", "SEGMENT", "INDEX", "OFFSET-ENTRIES", "TIME-ENTRIES", "DETAIL"],
                          cells):
            out.line(line)
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["classification"]] = counts.get(r["classification"], 0) + 1
        out.line("index check: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    for r in rows:
        if r["severity"] in ("error", "warning"):
            out.message(r["severity"], f"index-{r['classification']}: {shown(r['path'])}: {r['detail']}")


def render_export(n: int, directory: str, out: Output, form: OutputFormat) -> None:
    if form == OutputFormat.json:
        out.json({"type": "export", "records": n, "path": directory, "partitioned_by": ["topic", "partition"]})
    else:
        out.line(f"export: {n} records written to {shown(directory)} (Parquet, partitioned by topic, partition)")
