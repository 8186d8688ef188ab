"""``dump``'s output: the events of the walk through one writer (``text``, ``dump-log``, ``json`` or ``table``),
findings on stderr (``kafkatool dump: error|warning|info: ...``), a progress bar over a large run on a terminal,
the closing summary or counts."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import IO, Any

from kafkatool.commands.terminal import ProgressBar, err_is_terminal, err_line
from kafkatool.dump.dumplog import DumpLogWriter, make_decoder
from kafkatool.dump.events import DumpOptions, Event, FileEnd, FileStart, Finding, Notice
from kafkatool.dump.events import Progress as ProgressEvent
from kafkatool.dump.render import JsonWriter, TextWriter, summary_text
from kafkatool.dump.run import DumpListener, DumpOutcome, DumpRequest
from kafkatool.util.printable import shown

PROG = "kafkatool dump"
OWN = "kafkatool: "  # how the library's writers mark a line of kafkatool's own (Kafka's own lines are unmarked)


def err(text: str) -> None:
    """A stderr line of the walk: kafkatool's own lines as ``kafkatool dump: ...``, Kafka's (dump-log) as they are."""
    err_line(PROG + ": " + text[len(OWN):] if text.startswith(OWN) else text)


class DumpRenderer(DumpListener):
    """Renders a run of ``request`` in ``form`` (``text``, ``dump-log``, ``json`` or ``table``) on ``out``."""

    def __init__(self, out: IO[str], form: str, request: DumpRequest, *, encoding: str,
                 skip_record_metadata: bool, quiet: bool, dump_log_version: str = "3.9") -> None:
        self.out, self.form, self.request, self.encoding = out, form, request, encoding
        self.skip_record_metadata = skip_record_metadata
        self.kafka4 = dump_log_version == "4"  # 4.x's kafka-dump-log.sh lines
        self.quiet = quiet
        self.wants_totals = not quiet and err_is_terminal()  # a bar may show: dump() says how much there is
        self.progress: _ProgressView | None = None
        self.writer: Any = None

    def __enter__(self) -> DumpRenderer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.close()

    # ------------------------------------------------------------------ listener
    def warning(self, text: str) -> None:
        err_line(f"{PROG}: warning: {text}")

    def planned(self, records_bytes: int) -> None:
        if self.wants_totals and records_bytes >= _ProgressView.MIN_SIZE:
            self.progress = _ProgressView(records_bytes)

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
            from kafkatool.commands.render.table import TableWriter
            from kafkatool.commands.terminal import console

            writer = TableWriter(console(file=out, highlight=False), print_data=req.shows_data, encoding=enc)
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
            err_line(f"{PROG}: summary: {summary_text(summary)}")
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
    """One transient bar over the whole run, in bytes of records files (shown only for runs large enough to take
    a while), the file being walked as its label."""

    MIN_SIZE = 64 * 1024 * 1024

    def __init__(self, total: int) -> None:
        self.bar = ProgressBar("dump", total, enabled=True)
        self.done = 0  # bytes of the records files finished
        self.file = 0  # size of the one being walked
        self.bar.start()

    def update(self, ev: FileStart | FileEnd | ProgressEvent) -> None:
        if isinstance(ev, FileStart):
            if ev.kind.is_records:
                self.file = ev.size
                self.bar.update(completed=self.done, description=shown(Path(ev.path).name))
        elif isinstance(ev, ProgressEvent):
            self.bar.update(completed=self.done + ev.position)
        elif ev.kind.is_records:
            self.done += self.file
            self.file = 0
            self.bar.update(completed=self.done)

    def close(self) -> None:
        self.bar.stop()
