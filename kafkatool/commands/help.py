"""``--help`` as plain text that reads well at 80 columns (and in a pipe, a man page or a bug report).

Typer's rich panels cut option names at 80 columns (``--null-key-fract…``), draw box characters that break
copy and paste, squeeze sentences into narrow cells and show ``<bool>``/``<list[Path]>`` metavars. Every kafkatool
command and group is built with the classes below instead: a usage line with argument metavars (``PATH...``,
``SRC DST``), the description paragraph by paragraph, the arguments, the options (by help panel) with a metavar
only where a value is taken, and the command's examples (its ``epilog``: real runs on the log dir that
``kafkatool sample demo`` writes, kept equal to what they print by tests/commands/test_help.py).
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Iterable
from typing import Any

from typer.core import TyperCommand, TyperGroup

MAX_WIDTH = 100  # wider terminals still get lines a reader can follow
COLUMN = 28  # where an option's help starts
EXAMPLES_INTRO = "Examples (demo is the log dir `kafkatool sample demo` writes):"


def width() -> int:
    """The help's width: the terminal's (COLUMNS first), at most 100 and at least 50."""
    try:
        cols = int(os.environ.get("COLUMNS", "")) if os.environ.get("COLUMNS") else shutil.get_terminal_size().columns
    except ValueError:
        cols = MAX_WIDTH
    return max(50, min(MAX_WIDTH, cols))


def _wrap(text: str, w: int, indent: str, first: str | None = None) -> list[str]:
    """``text`` wrapped to ``w`` columns, never inside a word or at a hyphen (``kafka-dump-log.sh``, ``--to-time``)."""
    return textwrap.wrap(" ".join(text.split()), w, initial_indent=indent if first is None else first,
                         subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [indent]


def paragraphs(text: str) -> list[str]:
    return [p for p in (block.strip("\n") for block in text.strip().split("\n\n")) if p.strip()]


def _description(text: str, w: int) -> list[str]:
    out: list[str] = []
    for para in paragraphs(text):
        lines = para.split("\n")
        if all(line.startswith(("  ", "$ ")) for line in lines):  # a listing: as written
            out += ["  " + line for line in lines]
        else:
            out += _wrap(para, w, "  ")
        out.append("")
    return out


def metavar(param: Any) -> str:
    """The placeholder of a value: the parameter's own (SIZE, TIME, SRC...), else from its type."""
    if param.metavar:
        mv = str(param.metavar)
    else:
        t = param.type
        choices = getattr(t, "choices", None)
        kind = str(getattr(t, "name", ""))
        if choices:
            mv = "|".join(str(getattr(c, "value", c)) for c in choices)
        elif kind.startswith("int"):
            mv = "N"
        elif kind.startswith("float"):
            mv = "NUM"
        elif kind == "path":
            mv = "PATH"
        elif param.param_type_name == "argument":
            mv = str(param.name or "arg").upper()
        else:
            mv = "TEXT"
    if param.param_type_name == "argument":
        if param.nargs == -1 and not mv.endswith("..."):
            mv += "..."
        if not param.required:
            mv = f"[{mv}]"
    return mv


def option_label(param: Any) -> str:
    """``-d, --deep``, ``-f, --format text|json|table``, ``--transactional / --no-transactional``."""
    def spell(opts: Iterable[str]) -> str:
        names = sorted(opts, key=lambda o: (o.startswith("--"), o))  # short spelling first
        return ", ".join(names)

    label = spell(param.opts)
    if param.secondary_opts:
        label += " / " + spell(param.secondary_opts)
    if not getattr(param, "is_flag", False) and not getattr(param, "count", False):
        label += " " + metavar(param)
    return label


def _help_text(param: Any, ctx: Any) -> str:
    """The parameter's help with its default and range, as typer computes them."""
    try:
        record = param.get_help_record(ctx)
    except Exception:  # a default that cannot be shown is no reason for --help to fail
        record = None
    return str(record[1]) if record else str(getattr(param, "help", "") or "")


def _entries(rows: list[tuple[str, str]], w: int, column: int = COLUMN) -> list[str]:
    out: list[str] = []
    for label, text in rows:
        lead = f"  {label}"
        if len(lead) <= column - 2:
            out += _wrap(text, w, " " * column, lead.ljust(column)) if text else [lead]
        else:  # a long label on its own line, the help below it
            out.append(lead)
            if text:
                out += _wrap(text, w, " " * column)
    return out


def render(cmd: Any, ctx: Any) -> str:
    """The whole ``--help`` text of ``cmd`` (a command or a group)."""
    w = width()
    params = [p for p in cmd.get_params(ctx) if not getattr(p, "hidden", False)]
    args = [p for p in params if p.param_type_name == "argument"]
    opts = [p for p in params if p.param_type_name == "option"]
    usage = [ctx.command_path, "[OPTIONS]"] + [metavar(a) for a in args]
    if isinstance(cmd, TyperGroup):
        usage += ["COMMAND", "[ARGS]..."]
    lines = _wrap(" ".join(usage), w, " " * (len("Usage: ") + len(ctx.command_path) + 1), "Usage: ") + [""]
    lines += _description(cmd.help or cmd.short_help or "", w)
    if args and any(a.help for a in args):
        lines.append("Arguments:")
        lines += _entries([(metavar(a), _help_text(a, ctx)) for a in args], w)
        lines.append("")
    panels: dict[str, list[tuple[str, str]]] = {}
    for o in opts:
        panels.setdefault(getattr(o, "rich_help_panel", None) or "Options", []).append(
            (option_label(o), _help_text(o, ctx)))
    for name, rows in sorted(panels.items(), key=lambda kv: kv[0] != "Options"):
        lines.append(f"{name}:")
        lines += _entries(rows, w)
        lines.append("")
    if isinstance(cmd, TyperGroup):
        names = cmd.list_commands(ctx)
        rows = []
        for name in names:
            short = command_short_help(cmd, ctx, name)
            if short is not None:
                rows.append((name, short))
        lines.append("Commands:")
        lines += _entries(rows, w, max((len(n) for n, _ in rows), default=0) + 4)
        lines.append("")
    if cmd.epilog:
        lines.append(EXAMPLES_INTRO if "kafkatool sample demo" not in cmd.epilog.split("\n", 1)[0]
                     else "Examples:")
        lines += ["  " + line if line else "" for line in cmd.epilog.strip("\n").split("\n")]
        lines.append("")
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(line.rstrip() for line in lines) + "\n"


def command_short_help(group: Any, ctx: Any, name: str) -> str | None:
    short = getattr(group, "short_help_of", None)
    if short is not None:
        return str(short(name))
    sub = group.get_command(ctx, name)
    if sub is None or getattr(sub, "hidden", False):
        return None
    return str(sub.short_help or (sub.help or "").strip().split("\n")[0])


class Command(TyperCommand):
    """A kafkatool command: plain help (see the module's doc), and the old spellings of renamed options.

    ``aliases`` maps a deprecated spelling to the option that replaced it (``--out`` -> ``--output``): the old
    spelling still works for one release, hidden from the help and completions, with one warning line on
    stderr (``kafkatool fetch-sim: warning: --out is deprecated, use --output``).
    """

    aliases: dict[str, str] = {}

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.aliases:
            args = self._new_spellings(ctx, args)
        return list(super().parse_args(ctx, args))

    def _new_spellings(self, ctx: Any, args: list[str]) -> list[str]:
        takes_value = {o for p in self.params if p.param_type_name == "option" and not getattr(p, "is_flag", False)
                       and not getattr(p, "count", False) for o in p.opts}
        out: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                out += args[i:]
                break
            name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
            if name in self.aliases:
                new = self.aliases[name]
                _warn(f"{ctx.command_path}: warning: {name} is deprecated, use {new}")
                out.append(new + eq + value)
            else:
                out.append(a)
            if not eq and out[-1] in takes_value and i + 1 < len(args):
                out.append(args[i + 1])  # the option's value, whatever it looks like
                i += 1
            i += 1
        return out

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(render(self, ctx))

    def get_usage(self, ctx: Any) -> str:
        return render(self, ctx).split("\n\n", 1)[0]


def _warn(text: str) -> None:
    import sys

    try:
        sys.stderr.write(text + "\n")
    except OSError:
        pass


def command_class(aliases: dict[str, str] | None = None) -> type[Command]:
    """:class:`Command`, or a subclass of it that takes these old spellings."""
    if not aliases:
        return Command
    return type("AliasedCommand", (Command,), {"aliases": dict(aliases)})


def add_command(app: Any, name: str, fn: Any, *, help: str | None = None, epilog: str | None = None,
                short_help: str | None = None, aliases: dict[str, str] | None = None,
                no_args_is_help: bool = True) -> None:
    """Register ``fn`` as the command ``name`` of ``app``: plain help, the registry's one-line help, examples."""
    from kafkatool.commands.registry import BY_NAME

    if short_help is None:
        short_help = BY_NAME[name].short_help
    app.command(name, cls=command_class(aliases), help=help, epilog=epilog, short_help=short_help,
                no_args_is_help=no_args_is_help)(fn)


class Group(TyperGroup):
    """A kafkatool command group (``canary``): plain help, subcommands built with :class:`Command`."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(render(self, ctx))

    def get_usage(self, ctx: Any) -> str:
        return render(self, ctx).split("\n\n", 1)[0]
