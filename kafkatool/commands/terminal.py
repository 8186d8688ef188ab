"""The terminal: one stderr console, at most one progress bar, and stdout lines that never share a line with it.

A progress bar shows only when stderr is a terminal (and not ``--quiet``); rich is imported when the first bar
starts, not before (``kafkatool dump one.log`` into a pipe never loads ``rich.progress``). While a bar is on
screen, every line for the terminal (stdout's when stdout is the terminal too, and every stderr message) is
printed through the bar's console, which clears the bar, prints the line and draws the bar again below it: no
line is ever glued to a stale bar. Sizes and rates are in binary units (KiB, MiB), as every summary prints them.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from kafkatool.util.units import format_size

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

_console: Console | None = None
_live: Progress | None = None  # the bar on screen, if any


def console(**kw: Any) -> Console:
    """A rich console (``file=`` stdout for tables, or ``stderr=True``) whose reader may go away: rich's own
    reaction to a closed pipe is exit 1; here later output goes to /dev/null and the command goes on (``| head``
    is not an error, and a command that writes files finishes them)."""
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            _silence(self.file)

    return PipeConsole(**kw)


def err_console() -> Console:
    """The one console on stderr (colour only on a terminal, NO_COLOR honoured: rich does both)."""
    global _console
    if _console is None:
        _console = console(stderr=True, highlight=False)
    return _console


def err_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def err_line(text: str, style: str | None = None) -> None:
    """One line on stderr: through the bar's console while a bar is on screen, else written as it is."""
    try:
        if _live is not None:
            _live.console.print(text, markup=False, highlight=False, soft_wrap=True, style=style)
        elif style is not None and err_is_terminal():
            err_console().print(text, markup=False, highlight=False, soft_wrap=True, style=style)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    except BrokenPipeError:
        _silence(sys.stderr)


class TerminalStream:
    """stdout as a command writes it: passed through, except while a bar is on screen and stdout is a terminal,
    when whole lines go through the bar's console (a partial line waits for its end)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._tty = _isatty(stream)
        self._pending = ""

    def write(self, text: str) -> int:
        if _live is None or not self._tty:
            if self._pending:
                text, self._pending = self._pending + text, ""
            return self.stream.write(text)
        text = self._pending + text
        lines = text.split("\n")
        self._pending = lines.pop()
        for line in lines:
            _live.console.print(line, markup=False, highlight=False, soft_wrap=True, end="\n")
        return len(text)

    def flush(self) -> None:
        if self._pending and _live is None:
            self.stream.write(self._pending)
            self._pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return self._tty

    def fileno(self) -> int:
        return self.stream.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def stdout_stream() -> IO[str]:
    """What a command writes its data to: stdout, through :class:`TerminalStream` when a bar may show."""
    if err_is_terminal() and _isatty(sys.stdout):
        return TerminalStream(sys.stdout)  # type: ignore[return-value]
    return sys.stdout


class ProgressBar:
    """A transient bar on stderr for work of ``total`` bytes (``units``: a count shown beside it, "3/12
    segments"; ``total`` None: steps of unknown size, shown as the current step with a spinner and the time
    taken); a no-op when ``enabled`` is false (a pipe, ``--quiet``). Stop it (or leave its ``with``) before the
    command's last lines."""

    def __init__(self, label: str, total: int | None, *, enabled: bool, units: str | None = None) -> None:
        self.enabled = enabled and err_is_terminal()
        self.label = label
        self.total = total
        self.units = units
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> ProgressBar:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        global _live
        if not self.enabled or self._progress is not None:
            return
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns: list[Any]
        if self.total is None:
            columns = [SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn()]
        else:
            columns = [TextColumn("{task.description}", markup=False), BarColumn()]
            if self.units is not None:
                columns.append(TextColumn("{task.fields[units]}", markup=False))
            columns += [*_byte_columns(), TimeRemainingColumn()]
        if _live is not None:  # one bar at a time: a new one replaces the old
            _live.stop()
        self._progress = Progress(*columns, console=err_console(), transient=True, redirect_stdout=False,
                                  redirect_stderr=False)
        self._task = self._progress.add_task(self.label, total=self.total, units=self.units or "")
        self._progress.start()
        _live = self._progress

    def update(self, *, completed: int | None = None, advance: int = 0, description: str | None = None,
               units: str | None = None, total: int | None = None) -> None:
        if self._progress is None:
            return
        fields: dict[str, Any] = {}
        if units is not None:
            fields["units"] = units
        self._progress.update(self._task, completed=completed, advance=advance or None, description=description,
                              total=total, **fields)

    def stop(self) -> None:
        global _live
        if self._progress is None:
            return
        self._progress.stop()
        if _live is self._progress:
            _live = None
        self._progress = None


def _byte_columns() -> list[Any]:
    """Done/total and rate in binary units (KiB, MiB), as the summaries print them (rich's own columns count MB)."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class BytesColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            total = "?" if task.total is None else format_size(int(task.total))
            return Text(f"{format_size(int(task.completed))}/{total}", style="progress.download")

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("?" if speed is None else f"{format_size(int(speed))}/s", style="progress.data.speed")

    return [BytesColumn(), RateColumn()]


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _silence(stream: IO[str]) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
