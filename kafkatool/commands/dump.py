"""``kafkatool dump``: what is on disk, batch by batch, record by record, entry by entry.

Thin: options -> ``DumpOptions`` -> ``DumpEngine`` events -> a renderer (``text``, ``dump-log``, ``json``,
or the ``table`` below, the only one that needs rich).
"""

from __future__ import annotations

import enum
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from kafkatool.commands.options import (
    LiveOpt,
    MemoryOpt,
    QuietOpt,
    TracebackOpt,
    check_live,
    size_opt,
    time_opt,
    use_budget,
)
from kafkatool.commands.render.dump_table import TableWriter
from kafkatool.decoders import resolve_parser
from kafkatool.dump.dumplog import DumpLogWriter, make_decoder
from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import (
    DEFAULT_RESYNC_LIMIT,
    DumpOptions,
    Event,
    FileEnd,
    FileStart,
    Finding,
    Notice,
    Summary,
)
from kafkatool.dump.events import Progress as ProgressEvent
from kafkatool.dump.filter import RecordFilter
from kafkatool.dump.render import JsonWriter, TextWriter, summary_text
from kafkatool.errors import ExitCode, InputError, UsageError


class DumpFormat(str, enum.Enum):
    text = "text"
    dump_log = "dump-log"
    json = "json"
    table = "table"


class Encoding(str, enum.Enum):
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"


class ControlType(str, enum.Enum):
    # dump_filter.CONTROL_TYPES: ControlRecordType names
    abort = "abort"
    commit = "commit"
    leader_change = "leader-change"
    snapshot_header = "snapshot-header"
    snapshot_footer = "snapshot-footer"
    kraft_version = "kraft-version"
    kraft_voters = "kraft-voters"


_FILTERS = "Decoders and filters"


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
                                               "hex or base64 (exact). With a decoder option: header values, and "
                                               "JSON's raw key/value.", case_sensitive=False)] = Encoding.utf8,
    fmt: Annotated[DumpFormat | None, typer.Option("--format", "-f", help="text (default when piped), dump-log "
                                                   "(kafka-dump-log.sh 3.9's exact lines), json (JSON lines, schema "
                                                   "1), table (default on a terminal).",
                                                   case_sensitive=False)] = None,
    from_offset: Annotated[int | None, typer.Option("--from-offset", help="Only batches/records at or after this "
                                                    "offset (starts from the .index when it can).")] = None,
    to_offset: Annotated[int | None, typer.Option("--to-offset", help="Only up to this offset (inclusive); the "
                                                  "walk stops past it.")] = None,
    from_time: Annotated[int | None, time_opt("--from-time", help="Only records with a timestamp at or after "
                                              "this (epoch ms or ISO-8601); shallow: batches whose max timestamp "
                                              "is.")] = None,
    to_time: Annotated[int | None, time_opt("--to-time", help="Only records with a timestamp at or before this; "
                                            "shallow: batches whose first timestamp is.")] = None,
    max_bytes: Annotated[int | None, size_opt("--max-bytes", help="Only the first N bytes of each .log "
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
    dump_log_version: Annotated[str, typer.Option(
        "--dump-log-version", help="Which kafka-dump-log.sh -f dump-log matches: 3.9, or 4 (4.x decodes "
        "LeaderChange control records and has no stray '}' on legacy record lines).", metavar="3.9|4")] = "3.9",
    count: Annotated[bool, typer.Option("--count", help="Print only the number of (matching) records: per records "
                                       "file '<n> <path>', then '<n> total'.")] = False,
    decoder: Annotated[str | None, typer.Option(
        "--decoder", help="Decode whole records: offsets (__consumer_offsets, Kafka's --offsets-decoder), "
        "transactions (__transaction_state, --transaction-log-decoder), cluster-metadata (KRaft's "
        "__cluster_metadata, --cluster-metadata-decoder), remote-log-metadata (__remote_log_metadata), "
        "share-group-state (4.x __share_group_state) - these three are the default in their topic's partition "
        "dirs -, a bytes decoder for both sides, or a plugin. Implies --print-data.", rich_help_panel=_FILTERS,
        show_default=False)] = None,
    key_decoder: Annotated[str | None, typer.Option(
        "--key-decoder", help="Decode keys with utf8 (Kafka's StringDecoder), hex, base64, json or a plugin; "
        "implies --print-data.", rich_help_panel=_FILTERS, show_default=False)] = None,
    value_decoder: Annotated[str | None, typer.Option(
        "--value-decoder", help="Decode values likewise (the other side stays utf8, as in Kafka).",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    producer_id: Annotated[int | None, typer.Option(
        "--producer-id", help="Only batches of this producer id (-1: non-idempotent and v0/v1).",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    producer_epoch: Annotated[int | None, typer.Option(
        "--producer-epoch", help="Only batches of this producer epoch.", rich_help_panel=_FILTERS,
        show_default=False)] = None,
    transactional: Annotated[bool | None, typer.Option(
        "--transactional/--no-transactional", help="Only transactional batches / only the others.",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    control_type: Annotated[list[ControlType] | None, typer.Option(
        "--control-type", help="Only control records of this type: abort, commit, leader-change, snapshot-header, "
        "snapshot-footer, kraft-version, kraft-voters (repeatable: any of them).", metavar="TYPE",
        case_sensitive=False, rich_help_panel=_FILTERS, show_default=False)] = None,
    key: Annotated[str | None, typer.Option(
        "--key", help="Only records whose key is exactly these UTF-8 bytes.", rich_help_panel=_FILTERS,
        show_default=False)] = None,
    key_regex: Annotated[str | None, typer.Option(
        "--key-regex", help="Only records whose key, as the key decoder prints it, contains a match (Python re).",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    resync_limit: Annotated[int, size_opt("--resync-limit", help="After corruption, how far to scan for the "
                                          "next valid batch (a distance: the scan holds one mapped-page "
                                          "window of --memory at a time).", default="64MiB")]
    = DEFAULT_RESYNC_LIMIT,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    """Dump segments, indexes, snapshots and checkpoints; report corruption, torn tails and index mismatches.

    Exit codes: 0 clean, 1 findings (errors or warnings), 2 usage or unreadable input, 3 a live broker holds
    the log dir's .lock (--live reads it anyway, with a warning), 130 interrupted. Nothing is ever written.
    The largest decompressed batch accepted follows --memory (a larger one is a decompress-limit finding,
    never an out-of-memory).

    Examples: kafkatool dump /var/lib/kafka/orders-0 --deep --print-data | less;
    kafkatool dump 00000000000000000000.log -f dump-log --deep;
    kafkatool dump /var/lib/kafka --deep --verify --summary-only
    """
    for p in paths:
        if not p.exists():
            raise InputError("no such file or directory", path=p)
    check_live(paths, live, _err, "dump")
    if dump_log_version not in ("3.9", "4"):
        raise UsageError(f"--dump-log-version {dump_log_version!r}: 3.9 or 4")
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise UsageError("--from-offset is after --to-offset")
    parser = None
    if decoder is not None or key_decoder is not None or value_decoder is not None:
        parser = resolve_parser(decoder, key_decoder, value_decoder)  # unknown name: UsageError, exit 2
        print_data = True  # as Kafka's decoder options imply --print-data-log
    record_filter = RecordFilter.build(
        producer_id=producer_id, producer_epoch=producer_epoch, transactional=transactional,
        control_types=[c.value for c in control_type] if control_type else None, key=key, key_regex=key_regex)
    deep = deep or print_data
    limit = use_budget(memory).worker.decompress_limit
    out = sys.stdout
    stdout_tty = out.isatty()
    form = fmt or (DumpFormat.table if stdout_tty else DumpFormat.text)
    quiet_output = summary_only or count
    opts = DumpOptions(
        deep=deep, verify=verify, verify_index=verify_index, verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check, strict=strict, from_offset=from_offset, to_offset=to_offset,
        from_time=from_time, to_time=to_time, max_bytes=max_bytes,
        decompress_limit=limit, resync_limit=resync_limit,
        emit_data=not quiet_output, exact_counts=count, kafka_compat=form == DumpFormat.dump_log,
        record_filter=record_filter, parser=parser)
    engine = DumpEngine(opts)
    writer: Any
    if form == DumpFormat.dump_log:
        writer = DumpLogWriter(out, _err, print_data=print_data, skip_record_metadata=skip_record_metadata,
                               decode=make_decoder(encoding.value), max_bytes_set=max_bytes is not None, deep=deep,
                               kafka4=dump_log_version == "4")
    elif form == DumpFormat.json:
        writer = JsonWriter(out, encoding=encoding.value, decompress_limit=limit, summary_only=quiet_output,
                            file_ends=count)
    elif form == DumpFormat.table:
        writer = TableWriter(Console(file=out, highlight=False), print_data=print_data, encoding=encoding.value)
    else:
        writer = TextWriter(out, _err, print_data=print_data, encoding=encoding.value, summary_only=quiet_output)
    if quiet_output and form != DumpFormat.json:
        # Whatever the format, only the findings (stderr), then the summary or the counts (stdout).
        findings = TextWriter(out, _err, print_data=False, encoding=encoding.value, summary_only=True)
        writer = _Counts(out, findings) if count else _FindingsOnly(findings)
    progress = _ProgressView() if not quiet and sys.stderr.isatty() else None
    try:
        summary = _run(engine, paths, writer, progress)
        if count:
            if form != DumpFormat.json:
                out.write(f"{'?' if summary.records is None else summary.records} total\n")
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
    """--summary-only / --count: findings and notices still reach stderr (through a summary-only
    ``TextWriter``, which needs the file boundaries to count offset gaps per file), data lines do not."""

    def __init__(self, inner: TextWriter) -> None:
        self.inner = inner

    def handle(self, ev: Event) -> None:
        t = type(ev)
        if t is Finding or t is Notice or t is FileStart or t is FileEnd:
            self.inner.handle(ev)

    def close(self) -> None:
        self.inner.close()


class _Counts(_FindingsOnly):
    """--count: ``<records> <path>`` as each records file ends (the records that passed the filters)."""

    def __init__(self, out: Any, inner: TextWriter) -> None:
        super().__init__(inner)
        self.out = out

    def handle(self, ev: Event) -> None:
        if type(ev) is FileEnd and ev.kind.is_records:
            n = ev.records
            self.out.write(f"{'?' if n is None else n} {ev.path}\n")
        super().handle(ev)


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
                    self.bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
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


def register(app: typer.Typer) -> None:
    app.command(
        "dump",
        short_help="Dump segments, indexes, snapshots and checkpoints; report corruption.",
        no_args_is_help=True,
    )(dump)
