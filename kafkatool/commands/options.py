"""Shared pieces of every command: option types, the output context, JSON lines."""

from __future__ import annotations

import enum
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer._click.exceptions import BadParameter

from kafkatool.errors import UsageError
from kafkatool.util.jsonl import json_line
from kafkatool.util.units import parse_size, parse_time_ms

if TYPE_CHECKING:  # rich's console and the sample spec (numpy, the codecs) load when a command runs, not at start
    from rich.console import Console

    from kafkatool.sample.spec import IntRange

T = TypeVar("T")


class OutputFormat(str, enum.Enum):
    text = "text"
    json = "json"
    table = "table"


# ------------------------------------------------------------------------------------ sizes and times
# Every size or time option is declared through one of the factories below. Each kind has one parser (run by
# the option parser, so a bad value is exit 2 in one line that names the option) and a metavar that marks the
# kind in --help, the man pages and for the tests, which find every option of a kind through it.

SIZE = "SIZE"  # 4096, 128KiB, 64MiB, 1GiB (KB/MB/GB: powers of 1000)
TIME = "TIME"  # epoch milliseconds or ISO-8601 (UTC unless it has an offset)
SIZE_RANGE = "SIZE[-SIZE]"  # one size, or a range drawn from
SIZE_LIST = "SIZE,..."  # comma-separated sizes
TOPIC_SIZES = "[TOPIC=]SIZE,..."  # a size for every topic and/or TOPIC=SIZE for one


def _value_error(parse: Callable[[Any], T], text: Any) -> T:
    # click's BadParameter is "Invalid value for '--opt': <why>" (exit 2, one line); a ValueError would lose the why.
    try:
        return parse(text)
    except UsageError as e:
        raise BadParameter(e.message) from None


def parse_size_value(text: str | int) -> int:
    return _value_error(parse_size, text)


def parse_time_value(text: str | int) -> int:
    return _value_error(parse_time_ms, text)


def parse_memory_value(text: str | int) -> str:
    """--memory: checked here, kept as written (the budget's messages quote it)."""
    parse_size_value(text)
    return str(text).strip()


def parse_size_range(text: str | int) -> IntRange:
    """``100``, ``1KiB`` or ``512-4KiB``: one size or a range of sizes."""
    from kafkatool.sample.spec import IntRange

    if isinstance(text, int):
        return IntRange(text, text)
    low, sep, high = text.strip().partition("-")
    lo = parse_size_value(low)
    hi = parse_size_value(high) if sep else lo
    if hi < lo:
        raise BadParameter(f"{text!r}: the range ends below its start")
    return IntRange(lo, hi)


class Sizes(tuple[int, ...]):
    """The value of a SIZE,... option (a plain class: typer reads a ``tuple[...]`` annotation as nargs)."""


@dataclass(frozen=True, slots=True)
class TopicSizes:
    """The value of a [TOPIC=]SIZE,... option: (None, size) for every topic, (topic, size) for one."""

    items: tuple[tuple[str | None, int], ...]


def parse_size_list(text: str) -> Sizes:
    sizes = Sizes(parse_size_value(s.strip()) for s in str(text).split(",") if s.strip())
    if not sizes:
        raise BadParameter(f"no size in {text!r}")
    return sizes


def parse_topic_sizes(text: str) -> TopicSizes:
    """``1MiB``, ``events=4MiB`` or ``1MiB,events=4MiB``."""
    out: list[tuple[str | None, int]] = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        topic, sep, size = item.rpartition("=")
        if sep and not topic.strip():
            raise BadParameter(f"{item!r}: no topic before '='")
        out.append((topic.strip() if sep else None, parse_size_value(size)))
    if not out:
        raise BadParameter(f"no size in {text!r}")
    return TopicSizes(tuple(out))


OPTION_KINDS: dict[str, Callable[[Any], Any]] = {
    SIZE: parse_size_value, TIME: parse_time_value, SIZE_RANGE: parse_size_range, SIZE_LIST: parse_size_list,
    TOPIC_SIZES: parse_topic_sizes,
}


def size_opt(*names: str, help: str, default: str | None = None, **kw: Any) -> Any:
    """A size option: ``Annotated[int, size_opt("--chunk-size", help=..., default="128KiB")] = 131072`` (``default``:
    the default as the help shows it, in units)."""
    if default is not None:
        help, kw["show_default"] = f"{help} [default: {default}]", False
    return typer.Option(*names, help=help, metavar=SIZE, parser=parse_size_value, **kw)


def time_opt(*names: str, help: str, **kw: Any) -> Any:
    """A point in time, as epoch milliseconds: ``Annotated[int | None, time_opt("--from-time", help=...)]``."""
    return typer.Option(*names, help=help, metavar=TIME, parser=parse_time_value, **kw)


def size_range_opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, metavar=SIZE_RANGE, parser=parse_size_range, **kw)


def size_list_opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, metavar=SIZE_LIST, parser=parse_size_list, **kw)


def topic_sizes_opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, metavar=TOPIC_SIZES, parser=parse_topic_sizes, **kw)


def memory_opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, metavar=SIZE, parser=parse_memory_value, show_default=False, **kw)


# The one rule of every time window (dump, spark-scan): half-open, [from, to).
FROM_TIME_HELP = "Only records with a timestamp at or after this (epoch ms or ISO-8601)."
TO_TIME_HELP = "Only records with a timestamp before this: windows are half-open, [from, to)."

# The one rule of --topic: a shell pattern over whole topic names (a plain name matches only itself).
TOPIC_HELP = ("Only topics whose name matches this shell pattern ('orders', 'orders-*', '__*'; repeatable: any "
              "of them).")
TopicOpt = Annotated[list[str] | None, typer.Option("--topic", "-t", metavar="GLOB", help=TOPIC_HELP,
                                                    show_default=False)]
PartitionOpt = Annotated[list[int] | None, typer.Option("--partition", metavar="N", help="Only these "
                                                        "partition numbers (repeatable).", show_default=False)]

FormatOpt = Annotated[OutputFormat | None, typer.Option(
    "--format", "-f", help="Output format: text (default when piped), json (JSON lines, schema 1), "
    "table (default on a terminal).", case_sensitive=False)]
class TextJsonFormat(str, enum.Enum):
    text = "text"
    json = "json"


# A command whose output is a listing, not a table (reindex-time, downconvert, upconvert): no table format.
TextJsonFormatOpt = Annotated[TextJsonFormat | None, typer.Option(
    "--format", "-f", help="Output format: text (default) or json (JSON lines, schema 1).", case_sensitive=False)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary on stderr; findings only.")]
TracebackOpt = Annotated[bool, typer.Option(
    "--traceback", help="Show the Python traceback of an error (for bug reports).")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes (partitions in parallel).")]
MEMORY_HELP = ("Memory budget of the whole run (e.g. 256MiB, 1GiB), divided top-down: reserved interpreter "
               "overhead per process, then per worker the chunk buffers, the mapped-file window, caches and the "
               "decompression limit. Wins over 'kafkatool --memory' and KAFKATOOL_MEMORY. [default: 256MiB]")
MemoryOpt = Annotated[str | None, memory_opt("--memory", help=MEMORY_HELP)]

LIVE_HELP = ("Read a log dir whose .lock a live broker holds anyway, with a warning (without it: refused, exit 3; "
             "kafkatool is an offline tool and a segment being appended reads as torn). Never writes into it.")
LiveOpt = Annotated[bool, typer.Option("--live", help=LIVE_HELP)]


# ``kafkatool --memory`` (the root option), set by the root callback before any command runs.
_root_memory: str | None = None


def set_root_memory(value: str | None) -> None:
    global _root_memory
    _root_memory = value


def memory_option(command_value: str | None) -> str | None:
    """The ``--memory`` that applies: the command's, else the root's (``None``: KAFKATOOL_MEMORY, else the
    default; ``kafkatool.util.budget.resolve`` reads those)."""
    return command_value if command_value is not None else _root_memory


def current_prog() -> str:
    """``kafkatool <command>`` of the command running (click's context), how its messages begin."""
    try:
        from typer._click.globals import get_current_context  # typer >= 0.26 vendors click
    except ImportError:  # pragma: no cover
        from click import get_current_context  # type: ignore[no-redef,unused-ignore]
    ctx = get_current_context(silent=True)
    return str(ctx.command_path) if ctx is not None else "kafkatool"


@dataclass
class Output:
    """Where a command writes: data to stdout, messages to stderr in one form (``kafkatool <command>:
    error|warning: ...``), colour and progress only on a terminal (``commands.terminal``)."""

    out: IO[str] = field(default_factory=lambda: _stdout())
    quiet: bool = False
    prog: str = field(default_factory=current_prog)

    @property
    def err(self) -> Console:
        from kafkatool.commands.terminal import err_console

        return err_console()

    @property
    def err_is_terminal(self) -> bool:
        from kafkatool.commands.terminal import err_is_terminal

        return err_is_terminal()

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
        """A progress or summary line on stderr, ``kafkatool <command>: text`` (suppressed by --quiet)."""
        if not self.quiet:
            self._print(f"{self.prog}: {text}", None)

    def error(self, text: str) -> None:
        """``kafkatool <command>: error: text`` on stderr: always shown, even with --quiet."""
        self.finding(f"{self.prog}: error: {text}")

    def warning(self, text: str) -> None:
        """``kafkatool <command>: warning: text`` on stderr: always shown, even with --quiet."""
        self.finding(f"{self.prog}: warning: {text}")

    def message(self, severity: str, text: str) -> None:
        """``kafkatool <command>: <severity>: text`` (error, warning or info) on stderr: always shown."""
        self.finding(f"{self.prog}: {severity}: {text}")

    def finding(self, text: str) -> None:
        """A line on stderr as it is: always shown, even with --quiet (yellow on a terminal)."""
        self._print(text, "yellow" if self.err_is_terminal else None)

    def _print(self, text: str, style: str | None) -> None:
        from kafkatool.commands.terminal import err_line

        err_line(text, style)


def _stdout() -> IO[str]:
    from kafkatool.commands.terminal import stdout_stream

    return stdout_stream()


def silence(stream: IO[str]) -> None:
    """Point a stream whose reader is gone at /dev/null (what is still buffered goes there too)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)
