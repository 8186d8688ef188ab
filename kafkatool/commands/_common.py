"""Shared pieces of every command: option types, the output context, JSON lines."""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Annotated, Any

import typer
from rich.console import Console

from kafkatool import budget
from kafkatool.errors import UsageError
from kafkatool.jsonl import json_line
from kafkatool.lock import check_read, live_notice
from kafkatool.units import parse_size, parse_time_ms


class OutputFormat(str, enum.Enum):
    text = "text"
    json = "json"
    table = "table"


def size_option(value: str | None) -> int | None:
    """Typer callback body for size options: ``128KiB`` -> 131072."""
    if value is None:
        return None
    return parse_size(value)


def positive_size(value: str, option: str) -> int:
    """A size option that must be at least one byte (``4KiB`` -> 4096)."""
    try:
        n = parse_size(value)
    except UsageError as e:
        raise UsageError(f"{option}: {e.message}") from None
    if n < 1:
        raise UsageError(f"{option} must be at least 1 byte, got {value}")
    return n


def time_option(value: str | None) -> int | None:
    if value is None:
        return None
    return parse_time_ms(value)


FormatOpt = Annotated[OutputFormat | None, typer.Option(
    "--format", "-f", help="Output format: text (default when piped), json (JSON lines, schema 1), "
    "table (default on a terminal).", case_sensitive=False)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary on stderr; findings only.")]
TracebackOpt = Annotated[bool, typer.Option(
    "--traceback", help="Show the Python traceback of an error (for bug reports).")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes (partitions in parallel).")]
MEMORY_HELP = ("Memory budget of the whole run (e.g. 256MiB, 1GiB), divided top-down: reserved interpreter "
               "overhead per process, then per worker the chunk buffers, the mapped-file window, caches and the "
               "decompression limit. Wins over 'kafkatool --memory' and KAFKATOOL_MEMORY. [default: 256MiB]")
MemoryOpt = Annotated[str | None, typer.Option("--memory", help=MEMORY_HELP, show_default=False)]

LIVE_HELP = ("Read a log dir whose .lock a live broker holds anyway, with a warning (without it: refused, exit 3; "
             "kafkatool is an offline tool and a segment being appended reads as torn). Never writes into it.")
LiveOpt = Annotated[bool, typer.Option("--live", help=LIVE_HELP)]


def check_live(paths: Iterable[str | os.PathLike[str]], live: bool, warn: Callable[[str], None],
               command: str) -> None:
    """Reading ``paths``: exit 3 while a live broker holds the log dir of one of them, unless ``--live``; then
    one warning line per held ``.lock`` (active segments may be mid-write)."""
    for lock in check_read(paths, live=live):
        warn(f"kafkatool {command}: {live_notice(lock)}")


# ``kafkatool --memory`` (the root option), set by the root callback before any command runs.
_root_memory: str | None = None


def set_root_memory(value: str | None) -> None:
    global _root_memory
    _root_memory = value


def memory_option(command_value: str | None) -> str | None:
    """The ``--memory`` that applies: the command's, else the root's (``None``: KAFKATOOL_MEMORY, else the
    default; ``kafkatool.budget.resolve`` reads those)."""
    return command_value if command_value is not None else _root_memory


def use_budget(memory: str | None, *, workers: int = 1, chunk_bytes: int = budget.DEFAULT_CHUNK,
               processes: int | None = None, working_bytes: int = 0, working: str = "") -> budget.MemoryBudget:
    """Resolve the run's memory budget once and activate it for the library (exit 2 with the minimum when
    it is too small for ``workers``, ``chunk_bytes`` and the command's ``working_bytes``)."""
    b = budget.resolve(memory_option(memory), workers=workers, chunk_bytes=chunk_bytes, processes=processes,
                       working_bytes=working_bytes, working=working)
    budget.activate(b)
    return b


@dataclass
class Output:
    """Where a command writes: data to stdout, progress and findings to stderr, colour only on a terminal."""

    out: IO[str] = field(default_factory=lambda: sys.stdout)
    quiet: bool = False
    err: Console = field(default_factory=lambda: Console(stderr=True, highlight=False))

    @property
    def stdout_is_tty(self) -> bool:
        return hasattr(self.out, "isatty") and self.out.isatty()

    def resolve_format(self, fmt: OutputFormat | None, *, tty_default: OutputFormat = OutputFormat.table,
                       pipe_default: OutputFormat = OutputFormat.text) -> OutputFormat:
        if fmt is not None:
            return fmt
        return tty_default if self.stdout_is_tty else pipe_default

    def line(self, text: str) -> None:
        self._write(text + "\n")

    def json(self, obj: dict[str, Any]) -> None:
        self._write(json_line(obj) + "\n")

    def _write(self, text: str) -> None:
        # A reader that went away (``| head``) ends the listing, not the work: a command that writes files
        # (convert, reindex --in-place, canary apply, sample) must finish what it started. Later lines go
        # to /dev/null.
        try:
            self.out.write(text)
        except BrokenPipeError:
            silence(self.out)

    def note(self, text: str) -> None:
        """A progress or summary line on stderr (suppressed by --quiet)."""
        if not self.quiet:
            self._print(text, None)

    def finding(self, text: str) -> None:
        """A finding on stderr: always shown, even with --quiet."""
        self._print(text, "yellow" if self.err.is_terminal else None)

    def _print(self, text: str, style: str | None) -> None:
        try:
            self.err.print(text, markup=False, highlight=False, soft_wrap=True, style=style)
        except BrokenPipeError:
            silence(self.err.file)


def silence(stream: IO[str]) -> None:
    """Point a stream whose reader is gone at /dev/null (what is still buffered goes there too)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def env_memory_default() -> str | None:
    return os.environ.get(budget.ENV)


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)
