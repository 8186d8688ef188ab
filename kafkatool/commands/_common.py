"""Shared pieces of every command: option types, the output context, JSON lines."""

from __future__ import annotations

import enum
import json
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Annotated, Any

import typer
from rich.console import Console

from kafkatool import JSON_SCHEMA_VERSION
from kafkatool.errors import UsageError
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
        self.out.write(text)
        self.out.write("\n")

    def json(self, obj: dict[str, Any]) -> None:
        self.out.write(json_line(obj))
        self.out.write("\n")

    def note(self, text: str) -> None:
        """A progress or summary line on stderr (suppressed by --quiet)."""
        if not self.quiet:
            self.err.print(text, markup=False, highlight=False, soft_wrap=True)

    def finding(self, text: str) -> None:
        """A finding on stderr: always shown, even with --quiet."""
        self.err.print(text, markup=False, highlight=False, soft_wrap=True,
                       style="yellow" if self.err.is_terminal else None)


def json_line(obj: dict[str, Any]) -> str:
    """One JSON-lines object with the schema version; keys keep their insertion order."""
    if "schema" not in obj:
        obj = {"type": obj.get("type"), "schema": JSON_SCHEMA_VERSION,
               **{k: v for k, v in obj.items() if k != "type"}}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def env_memory_default() -> str | None:
    return os.environ.get("KAFKATOOL_MEMORY")


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)
