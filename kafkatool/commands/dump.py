"""``kafkatool dump``: what is on disk, batch by batch, record by record, entry by entry.

Thin: options -> ``DumpOptions`` -> ``DumpEngine`` events -> a renderer (``text``, ``dump-log``, ``json``,
or the ``table`` below, the only one that needs rich).
"""

from __future__ import annotations

import enum
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from kafkatool.codecs import DEFAULT_DECOMPRESS_LIMIT
from kafkatool.default_records import DefaultRecordBatch
from kafkatool.dump import DumpEngine
from kafkatool.dump_control import describe_control
from kafkatool.dump_events import (
    DEFAULT_RESYNC_LIMIT,
    BatchEvent,
    DumpOptions,
    Event,
    FileEnd,
    FileStart,
    Finding,
    IndexEntryEvent,
    Notice,
    NoticeKind,
    Severity,
    Summary,
)
from kafkatool.dump_events import Progress as ProgressEvent
from kafkatool.dump_render import JsonWriter, TextWriter, codec_label, summary_text, text_bytes
from kafkatool.dumplog_format import DumpLogWriter, make_decoder
from kafkatool.errors import ExitCode, InputError, UsageError
from kafkatool.units import format_size, format_time_ms, parse_size, parse_time_ms

from ._common import QuietOpt, TracebackOpt


class DumpFormat(str, enum.Enum):
    text = "text"
    dump_log = "dump-log"
    json = "json"
    table = "table"


class Encoding(str, enum.Enum):
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def dump(
    paths: Annotated[list[Path], typer.Argument(
        help="Segment or index files, partition dirs, or broker log dirs (every file of every partition).",
        show_default=False)],
    deep: Annotated[bool, typer.Option("--deep", "-d", help="Decode and print every record (Kafka's "
                                       "--deep-iteration).")] = False,
    print_data: Annotated[bool, typer.Option("--print-data", "-p", help="Print keys, values and header values "
                                             "(implies --deep; Kafka's --print-data-log).")] = False,
    encoding: Annotated[Encoding, typer.Option("--encoding", "-e", help="How keys and values are printed: utf8 "
                                               "(Kafka's StringDecoder; undecodable bytes become U+FFFD in JSON), "
                                               "hex or base64 (exact).", case_sensitive=False)] = Encoding.utf8,
    fmt: Annotated[DumpFormat | None, typer.Option("--format", "-f", help="text (default when piped), dump-log "
                                                   "(kafka-dump-log.sh 3.9's exact lines), json (JSON lines, schema "
                                                   "1), table (default on a terminal).",
                                                   case_sensitive=False)] = None,
    from_offset: Annotated[int | None, typer.Option("--from-offset", help="Only batches/records at or after this "
                                                    "offset (starts from the .index when it can).")] = None,
    to_offset: Annotated[int | None, typer.Option("--to-offset", help="Only up to this offset (inclusive); the "
                                                  "walk stops past it.")] = None,
    from_time: Annotated[str | None, typer.Option("--from-time", help="Only records with a timestamp at or after "
                                                  "this (epoch ms or ISO-8601); shallow: batches whose max timestamp "
                                                  "is.")] = None,
    to_time: Annotated[str | None, typer.Option("--to-time", help="Only records with a timestamp at or before this; "
                                                "shallow: batches whose first timestamp is.")] = None,
    max_bytes: Annotated[str | None, typer.Option("--max-bytes", help="Only the first N bytes of each .log "
                                                  "(e.g. 64MiB; Kafka's --max-bytes).")] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Decode every record of every batch (CRCs of batches are "
                                         "always checked; legacy inner messages have their own CRC).")] = False,
    verify_index: Annotated[bool, typer.Option("--verify-index", help="Check .index and .timeindex entries "
                                               "against the .log as kafka-dump-log.sh does.")] = False,
    verify_index_only: Annotated[bool, typer.Option("--verify-index-only", help="Check index entries without "
                                                    "printing them (Kafka's --verify-index-only).")] = False,
    index_sanity_check: Annotated[bool, typer.Option("--index-sanity-check", help="Only run Kafka's index "
                                                     "sanityCheck() on .index/.timeindex files.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Every unparsed byte is an error (zero padding too), and "
                                         "a file stops at its first invalid batch instead of resuming after "
                                         "it.")] = False,
    skip_record_metadata: Annotated[bool, typer.Option("--skip-record-metadata", help="Record lines without "
                                                       "offset/timestamp/size metadata (dump-log).")] = False,
    summary_only: Annotated[bool, typer.Option("--summary-only", help="Walk and validate everything (records too "
                                               "with --deep), print only the closing summary.")] = False,
    count: Annotated[bool, typer.Option("--count", help="Print only the number of records.")] = False,
    decompress_limit: Annotated[str, typer.Option("--decompress-limit", help="Largest decompressed batch accepted "
                                                  "(larger is a finding, not an out-of-memory).")] = "64MiB",
    resync_limit: Annotated[str, typer.Option("--resync-limit", help="After corruption, how far to scan for the "
                                              "next valid batch.")] = "64MiB",
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    """Dump segments, indexes, snapshots and checkpoints; report corruption, torn tails and index mismatches.

    Exit codes: 0 clean, 1 findings (errors or warnings), 2 usage or unreadable input, 130 interrupted.
    Nothing is ever written.

    Examples: kafkatool dump /var/lib/kafka/orders-0 --deep --print-data | less;
    kafkatool dump 00000000000000000000.log -f dump-log --deep;
    kafkatool dump /var/lib/kafka --deep --verify --summary-only
    """
    for p in paths:
        if not p.exists():
            raise InputError("no such file or directory", path=p)
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise UsageError("--from-offset is after --to-offset")
    deep = deep or print_data
    from_ms = parse_time_ms(from_time) if from_time is not None else None
    to_ms = parse_time_ms(to_time) if to_time is not None else None
    limit = parse_size(decompress_limit) if decompress_limit else DEFAULT_DECOMPRESS_LIMIT
    out = sys.stdout
    stdout_tty = out.isatty()
    form = fmt or (DumpFormat.table if stdout_tty else DumpFormat.text)
    quiet_output = summary_only or count
    opts = DumpOptions(
        deep=deep, verify=verify, verify_index=verify_index, verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check, strict=strict, from_offset=from_offset, to_offset=to_offset,
        from_time=from_ms, to_time=to_ms, max_bytes=parse_size(max_bytes) if max_bytes else None,
        decompress_limit=limit, resync_limit=parse_size(resync_limit) if resync_limit else DEFAULT_RESYNC_LIMIT,
        emit_data=not quiet_output, exact_counts=count, kafka_compat=form == DumpFormat.dump_log)
    engine = DumpEngine(opts)
    writer: Any
    if form == DumpFormat.dump_log:
        writer = DumpLogWriter(out, _err, print_data=print_data, skip_record_metadata=skip_record_metadata,
                               decode=make_decoder(encoding.value), max_bytes_set=max_bytes is not None, deep=deep)
    elif form == DumpFormat.json:
        writer = JsonWriter(out, encoding=encoding.value, decompress_limit=limit, summary_only=quiet_output)
    elif form == DumpFormat.table:
        writer = TableWriter(Console(file=out, highlight=False), print_data=print_data, encoding=encoding.value)
    else:
        writer = TextWriter(out, _err, print_data=print_data, encoding=encoding.value, summary_only=quiet_output)
    if quiet_output and form != DumpFormat.json:
        writer = _FindingsOnly(writer)
    progress = _ProgressView() if not quiet and sys.stderr.isatty() else None
    try:
        summary = _run(engine, paths, writer, progress)
        if count:
            if form != DumpFormat.json:
                out.write(f"{'?' if summary.records is None else summary.records}\n")
        elif summary_only and form != DumpFormat.json:
            out.write(summary_text(summary) + "\n")
        elif not quiet and form in (DumpFormat.text, DumpFormat.table):
            _err(f"kafkatool: summary: {summary_text(summary)}")
        out.flush()
    except BrokenPipeError:
        # `| head`: the reader is gone; that is not an error. (click would turn EPIPE into exit 1.)
        _silence_stdout()
        return ExitCode.OK
    if summary.io_errors:
        return ExitCode.USAGE
    if summary.errors or summary.warnings:
        return ExitCode.FINDINGS
    return ExitCode.OK


def _run(engine: DumpEngine, paths: list[Path], writer: Any, progress: _ProgressView | None) -> Summary:
    summary: Summary | None = None
    try:
        for ev in engine.run(paths):
            t = type(ev)
            if t is ProgressEvent:
                if progress is not None:
                    progress.update(ev)  # type: ignore[arg-type]
                continue
            if progress is not None and (t is FileStart or t is FileEnd):
                progress.update(ev)  # type: ignore[arg-type]
            if t is Summary:
                summary = ev  # type: ignore[assignment]
            writer.handle(ev)
        writer.close()
    finally:
        if progress is not None:
            progress.close()
    assert summary is not None
    return summary


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _FindingsOnly:
    """--summary-only / --count: findings and notices still reach stderr, data lines do not."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def handle(self, ev: Event) -> None:
        if type(ev) is Finding or type(ev) is Notice or type(ev) is FileEnd:
            self.inner.handle(ev)

    def close(self) -> None:
        self.inner.close()


class _ProgressView:
    """A transient per-file progress bar on stderr for files large enough to take a while."""

    MIN_SIZE = 64 * 1024 * 1024

    def __init__(self) -> None:
        self.bar: Progress | None = None
        self.task: Any = None

    def update(self, ev: FileStart | FileEnd | ProgressEvent) -> None:
        if isinstance(ev, FileStart):
            if ev.kind.is_records and ev.size >= self.MIN_SIZE:
                if self.bar is None:
                    self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                        TimeRemainingColumn(), console=Console(stderr=True), transient=True)
                    self.bar.start()
                self.task = self.bar.add_task(Path(ev.path).name, total=ev.size)
        elif isinstance(ev, ProgressEvent):
            if self.bar is not None and self.task is not None:
                self.bar.update(self.task, completed=ev.position)
        elif self.bar is not None and self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


class TableWriter:
    """The terminal view: a table per file, printed in chunks so a large segment streams."""

    CHUNK = 200

    def __init__(self, console: Console, *, print_data: bool, encoding: str) -> None:
        self.console = console
        self.err = Console(stderr=True, highlight=False)
        self.print_data = print_data
        self.encoding = encoding
        self.table: Table | None = None
        self.rows = 0
        self.header = True
        self.columns: list[str] = []

    def _new_table(self, columns: list[str]) -> Table:
        t = Table(box=box.SIMPLE_HEAD, show_header=self.header, header_style="bold", pad_edge=False)
        for c in columns:
            t.add_column(c, no_wrap=c != "Data", overflow="fold")
        self.columns = columns
        return t

    def _row(self, columns: list[str], cells: list[str], style: str | None = None) -> None:
        if self.table is None or self.columns != columns:
            self._flush()
            self.table = self._new_table(columns)
        self.table.add_row(*cells, style=style)
        self.rows += 1
        if self.rows >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.table is not None and self.rows:
            self.console.print(self.table)
            self.header = False
        self.table = None
        self.rows = 0

    BATCH_COLUMNS = ["Position", "Offsets", "Count", "Format", "Size", "Timestamp", "CRC", "Producer", "Flags",
                     "Data"]

    def handle(self, ev: Event) -> None:
        if isinstance(ev, BatchEvent):
            self._batch(ev)
        elif isinstance(ev, IndexEntryEvent):
            fields = asdict(ev.entry)
            self._row([k.replace("_", " ").capitalize() for k in fields], [str(v) for v in fields.values()])
        elif isinstance(ev, FileStart):
            self._flush()
            self.header = True
            extra = "" if ev.base_offset is None else f" · base offset {ev.base_offset}"
            self.console.rule(f"[bold]{ev.path}[/] · {ev.kind.value} · {format_size(ev.size)}{extra}", align="left")
        elif isinstance(ev, FileEnd):
            self._flush()
            if ev.kind.is_records:
                recs = "?" if ev.records is None else str(ev.records)
                bad = f" · [red]{ev.invalid_bytes} invalid bytes[/]" if ev.invalid_bytes else ""
                self.console.print(f"[dim]{ev.batches} batches · {recs} records · {format_size(ev.valid_bytes)}[/]"
                                   f"{bad}")
        elif isinstance(ev, Finding):
            style = {Severity.ERROR: "bold red", Severity.WARNING: "yellow"}.get(ev.severity, "dim")
            self.err.print(f"kafkatool: {ev}", style=style, markup=False, soft_wrap=True)
        elif isinstance(ev, Notice):
            if ev.kind == NoticeKind.UNKNOWN_FILE:
                self.err.print(f"Ignoring unknown file {ev.path}", markup=False)
            else:
                self.console.print("(no entries)" if ev.kind == NoticeKind.INDEX_EMPTY else "passed sanity check")

    def _batch(self, ev: BatchEvent) -> None:
        b = ev.batch
        ts = b.max_timestamp
        tstr = f"{b.timestamp_type.label} {format_time_ms(ts) if ts >= 0 else ts}"
        crc = "ok" if ev.crc_valid else "BAD"
        flags = []
        if b.is_transactional:
            flags.append("txn")
        if b.is_control:
            flags.append("control")
        if type(b) is DefaultRecordBatch:
            offsets = f"{b.base_offset}..{b.last_offset}"
            n = str(b.records_count)
            producer = f"{b.producer_id}/{b.producer_epoch} seq {b.base_sequence}" if b.producer_id >= 0 else ""
        else:
            base = ev.base_offset
            offsets = f"{base}..{b.last_offset}" if base is not None and base != b.last_offset else str(b.last_offset)
            n = "1" if not b.codec_id else ""
            producer = ""
        self._row(self.BATCH_COLUMNS, [str(b.position), offsets, n, f"v{b.magic} {codec_label(b.codec_id)}",
                                       str(b.size), tstr, crc, producer, " ".join(flags), ""],
                  style=None if ev.crc_valid else "red")
        for r in ev.records or ():
            key, value = r[2], r[3]
            if b.is_control:
                c = describe_control(key, value)
                data = c.name + (f" coordinatorEpoch {c.coordinator_epoch}" if c.coordinator_epoch is not None else "")
            elif self.print_data:
                data = (f"key={'null' if key is None else text_bytes(key, self.encoding)} "
                        f"value={'null' if value is None else text_bytes(value, self.encoding)}")
            else:
                data = (f"key {'null' if key is None else f'{len(key)}B'} "
                        f"value {'null' if value is None else f'{len(value)}B'}")
            if r[4]:
                data += " headers " + ",".join(h[0] for h in r[4])
            rts = r[1]
            self._row(self.BATCH_COLUMNS, ["", str(r[0]), "", "", str(r[6]),
                                           format_time_ms(rts) if rts >= 0 else str(rts), "", "", "", data],
                      style="dim")

    def close(self) -> None:
        self._flush()


def register(app: typer.Typer) -> None:
    app.command("dump", no_args_is_help=True)(dump)
