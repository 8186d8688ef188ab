"""``reindex-time``'s output: findings on stderr, written files (or JSON lines) on stdout, a progress bar on a
terminal, the closing summary."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from kafkatool.commands.options import Output, OutputFormat
from kafkatool.commands.terminal import ProgressBar
from kafkatool.log.layout import IrregularFile
from kafkatool.log.loader import LogDirState, PartitionRecovery
from kafkatool.reindex.engine import SegmentResult, result_records
from kafkatool.reindex.run import ReindexListener, ReindexOutcome
from kafkatool.reindex.verify import NOT_REGULAR, OK, Severity
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


class ReindexRenderer(ReindexListener):
    def __init__(self, out: Output, form: OutputFormat, verbose: bool, label: str) -> None:
        self.out, self.form, self.verbose, self.label = out, form, verbose, label
        self._bar: ProgressBar | None = None
        self._units = 0
        self._done = 0
        self._unit = ""

    def __enter__(self) -> ReindexRenderer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    # ------------------------------------------------------------------ listener
    def warning(self, text: str) -> None:
        self.out.warning(text)

    def note(self, text: str) -> None:
        self.out.note(text)

    def start(self, total_bytes: int, units: int, unit: str) -> None:
        self._units, self._unit = units, unit
        if not units:
            return
        self._bar = ProgressBar(self.label, total_bytes, enabled=not self.out.quiet, units=f"0/{units} {unit}")
        self._bar.start()

    def advance(self, nbytes: int) -> None:
        self._done += 1
        if self._bar is not None:
            self._bar.update(advance=nbytes, units=f"{self._done}/{self._units} {self._unit}")

    def not_regular(self, file: IrregularFile) -> None:
        if self.form == OutputFormat.json:
            self.out.json({"type": "finding", "kind": NOT_REGULAR, "severity": "error", "path": str(file.path),
                           "message": file.message})
            return
        self.out.error(f"{NOT_REGULAR}: {shown(file.path)}: {file.message}")

    def segment(self, res: SegmentResult) -> None:
        if self.form == OutputFormat.json:
            for rec in result_records(res):
                if self.verbose or rec["severity"] is not None or "action" in rec:
                    self.out.json(rec)
            return
        # Findings (what is wrong with a file) on stderr, as every command reports them; on stdout the data: the
        # files written or replaced and, with --verbose, the files that are fine.
        out, t = self.out, res.task
        for f in res.log_findings:
            out.message(f.severity.value, f"{f.kind}: {shown(t.partition)}/{shown(t.log.name)}: {f.message}")
        for c in res.checks:
            name = f"{shown(t.partition)}/{shown(c.path.name)}"
            if c.status == OK:
                if self.verbose:
                    out.line(f"{name}: ok ({c.on_disk_entries} entries)")
            for f in c.findings:
                out.message(f.severity.value, f"{f.kind}: {name}: {f.message}")
            for a in res.actions:
                if a.path.name == c.path.name and (a.action != "skipped" or self.verbose):
                    extra = f" (backup {shown(a.backup.name)})" if a.backup else f" ({a.reason})" if a.reason else ""
                    out.line(f"{name}: {a.action} {shown(a.path)}{extra}")

    def log_dir(self, path: Path, state: LogDirState) -> None:
        if self.form == OutputFormat.json:
            self.out.json({"type": "log-dir", "path": str(path), "clean_shutdown": state.clean_shutdown,
                           "notes": list(state.notes)})
            return
        shutdown = "clean shutdown (.kafka_cleanshutdown present)" if state.clean_shutdown else \
            "unclean shutdown (no .kafka_cleanshutdown)"
        self.out.line(f"log dir {shown(path)}: {shutdown}" + "".join(f"; {n}" for n in state.notes))

    def partition(self, part: PartitionRecovery) -> None:
        out = self.out
        if self.form == OutputFormat.json:
            for s in part.steps:
                rec: dict[str, Any] = {"type": "recovery", "partition": part.partition, "action": s.action,
                                       "file": s.path, "detail": s.detail, "loses_data": s.loses_data,
                                       "fails": s.fails}
                if s.action == "recover":
                    rec["truncate_at"] = s.truncate_at
                    rec["truncated_bytes"] = s.truncated_bytes
                if s.deleted_bytes is not None:
                    rec["deleted_bytes"] = s.deleted_bytes
                out.json(rec)
            out.json({"type": "partition", "partition": part.partition, "path": str(part.path),
                      "recovery_point": part.recovery_point, "log_start_offset": part.log_start_offset,
                      "rebuilt_segments": part.rebuilt_segments, "loses_data": part.loses_data, "fails": part.fails,
                      "lost_bytes": part.lost_bytes})
            return
        out.line(f"{shown(part.partition)} (recovery point {part.recovery_point}, log start offset "
                 f"{part.log_start_offset}):")
        for s in part.steps:
            flag = " [data loss]" if s.loses_data else " [fails]" if s.fails else ""
            where = f" {shown(s.path)}:" if s.path else ":"
            out.line(f"  {s.action}{where} {s.detail}{flag}")

    # ------------------------------------------------------------------ the end
    def summary(self, o: ReindexOutcome) -> None:
        out = self.out
        if o.mode == "recovery-report":
            unread = f"; {_n(o.not_regular, 'file')} not a regular file, not read" if o.not_regular else ""
            out.note(("the broker would lose data or fail to load at startup" if o.loses_data else
                      "the broker's startup recovery would not lose data") + unread)
            return
        rate = f", {format_size(int(o.bytes / o.seconds))}/s" if o.seconds > 0 else ""
        verb = {"check": "checked", "output": "rebuilt", "in-place": "rebuilt"}[o.mode]
        text = (f"{verb} {_n(o.units, 'segment')} ({format_size(o.bytes)}) in {o.seconds:.2f} s{rate}: "
                f"{_n(o.counts[Severity.ERROR], 'error')}, {_n(o.counts[Severity.WARNING], 'warning')}, "
                f"{o.counts[Severity.INFO]} info")
        if o.mode != "check":
            text += f"; {_n(o.files_written, 'file')} written"
        if self.form == OutputFormat.json:
            out.json({"type": "summary", "mode": o.mode, "segments": o.units, "bytes": o.bytes,
                      "seconds": round(o.seconds, 6), "errors": o.counts[Severity.ERROR],
                      "warnings": o.counts[Severity.WARNING], "info": o.counts[Severity.INFO],
                      "files_written": o.files_written, "exit": int(o.exit_code)})
        out.note(text)
