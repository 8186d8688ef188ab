"""``dump``'s output: the events of the walk through one writer (``text``, ``dump-log``, ``json`` or ``table``),
findings on stderr, a per-file progress bar on a terminal, the closing summary or counts."""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from kafkatool.commands.render.table import TableWriter
from kafkatool.dump.dumplog import DumpLogWriter, make_decoder
from kafkatool.dump.events import DumpOptions, Event, FileEnd, FileStart, Finding, Notice
from kafkatool.dump.events import Progress as ProgressEvent
from kafkatool.dump.render import JsonWriter, TextWriter, summary_text
from kafkatool.dump.run import DumpListener, DumpOutcome, DumpRequest
from kafkatool.util.printable import shown


def err(text: str) -> None:
    sys.stderr.write(text + "\n")


class DumpRenderer(DumpListener):
    """Renders a run of ``request`` in ``form`` (``text``, ``dump-log``, ``json`` or ``table``) on ``out``."""

    def __init__(self, out: IO[str], form: str, request: DumpRequest, *, encoding: str,
                 skip_record_metadata: bool, quiet: bool, progress: bool, dump_log_version: str = "3.9") -> None:
        self.out, self.form, self.request, self.encoding = out, form, request, encoding
        self.skip_record_metadata = skip_record_metadata
        self.kafka4 = dump_log_version == "4"  # 4.x's kafka-dump-log.sh lines
        self.quiet = quiet
        self.progress = _ProgressView() if progress else None
        self.writer: Any = None

    def __enter__(self) -> DumpRenderer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.close()

    # ------------------------------------------------------------------ listener
    def warning(self, text: str) -> None:
        err(f"kafkatool dump: {text}")

    def start(self, options: DumpOptions) -> None:
        req, out, enc = self.request, self.out, self.encoding
        quiet_output = not req.reports_data
        writer: Any
        if self.form == "dump-log":
            writer = DumpLogWriter(out, err, print_data=req.shows_data, skip_record_metadata=self.skip_record_metadata,
                                   decode=make_decoder(enc), max_bytes_set=req.max_bytes is not None,
                                   deep=req.walks_records, kafka4=self.kafka4)
        elif self.form == "json":
            writer = JsonWriter(out, encoding=enc, decompress_limit=options.decompress_limit,
                                summary_only=quiet_output, file_ends=req.count)
        elif self.form == "table":
            writer = TableWriter(Console(file=out, highlight=False), print_data=req.shows_data, encoding=enc)
        else:
            writer = TextWriter(out, err, print_data=req.shows_data, encoding=enc, summary_only=quiet_output)
        if quiet_output and self.form != "json":
            # Whatever the format, only the findings (stderr), then the summary or the counts (stdout).
            findings = TextWriter(out, err, print_data=False, encoding=enc, summary_only=True)
            writer = _Counts(out, findings) if req.count else _FindingsOnly(findings)
        self.writer = writer

    def event(self, ev: Event) -> None:
        t = type(ev)
        if t is ProgressEvent:
            if self.progress is not None:
                self.progress.update(ev)  # type: ignore[arg-type]
            return
        if self.progress is not None and (t is FileStart or t is FileEnd):
            self.progress.update(ev)  # type: ignore[arg-type]
        self.writer.handle(ev)

    # ------------------------------------------------------------------ the end
    def finish(self, outcome: DumpOutcome) -> None:
        """The writer's last lines, then the count total or the summary."""
        self.writer.close()
        if self.progress is not None:
            self.progress.close()
            self.progress = None
        req, out, summary = self.request, self.out, outcome.summary
        if req.count:
            if self.form != "json":
                out.write(f"{'?' if summary.records is None else summary.records} total\n")
        elif req.summary_only and self.form != "json":
            out.write(summary_text(summary) + "\n")
        elif not self.quiet and self.form in ("text", "table"):
            err(f"kafkatool: summary: {summary_text(summary)}")
        out.flush()


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
            self.out.write(f"{'?' if n is None else n} {shown(ev.path)}\n")
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
                self.task = self.bar.add_task(shown(Path(ev.path).name), total=ev.size)
        elif isinstance(ev, ProgressEvent):
            if self.bar is not None and self.task is not None:
                self.bar.update(self.task, completed=ev.position)
        elif self.bar is not None and self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
