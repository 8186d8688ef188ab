"""Generate the shell completions (bash, zsh, fish), the man pages and the option reference from the Typer app.

    python -m kafkatool.commands.docs            # rewrite completions/, man/ and docs/reference.md
    python -m kafkatool.commands.docs --check    # exit 1 when they are stale (used by the test suite)

The completions are static (they never start Python on <TAB>): every subcommand, option and choice comes
from the registered Typer commands. The man pages list every option with its help, the exit codes, the JSON
schema version, the environment and examples; docs/reference.md lists every command and option for the docs
site. The date is fixed so the output is reproducible. ``kafkatool completion SHELL`` and ``kafkatool man``
print the same texts from an installed kafkatool (kafkatool/commands/completion.py).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from kafkatool import JSON_SCHEMA_VERSION, __version__
from kafkatool.commands.app import get_app
from kafkatool.commands.help import metavar, paragraphs
from kafkatool.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
MAN_DATE = "2026-11-22"
PROG = "kafkatool"

EXIT_CODES = [
    (ExitCode.OK, "success: nothing to report"),
    (ExitCode.FINDINGS, "findings: corruption, index mismatch, failed verification or canary difference"),
    (ExitCode.USAGE, "usage error, unreadable input, I/O error, or --memory too small (the message says the minimum)"),
    (ExitCode.REFUSED, "refused: a live broker holds the log dir's .lock (nothing was changed)"),
    (ExitCode.SOFTWARE, "internal error: a bug in kafkatool (rerun with --traceback and report it)"),
    (ExitCode.INTERRUPTED, "interrupted (SIGINT)"),
]

ENVIRONMENT = [
    ("KAFKATOOL_MEMORY", "the memory budget of the whole run when --memory is not given (e.g. 512MiB)"),
    ("KAFKATOOL_TRACEBACK", "show the Python traceback of an error (as --traceback)"),
    ("NO_COLOR", "no colour on the terminal"),
    ("COLUMNS", "terminal width for tables and help"),
    ("KAFKATOOL_CRASH_AFTER", "canary apply/rollback: SIGKILL the process after its Nth durable step (crash tests)"),
]


@dataclass
class Opt:
    names: list[str]
    help: str
    takes_value: bool
    choices: list[str]
    metavar: str
    is_path: bool


@dataclass
class Arg:
    name: str  # as the usage line shows it: PATH..., SRC
    is_path: bool
    choices: list[str]
    param: str = "arg"  # the parameter's name (shell)


@dataclass
class Cmd:
    path: list[str]
    help: str
    short: str
    examples: str = ""  # the command's Examples section, as --help shows it (commands/examples.py)
    options: list[Opt] = field(default_factory=list)
    arguments: list[Arg] = field(default_factory=list)
    subcommands: list[Cmd] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " ".join(self.path)


def _clean(text: str | None) -> str:
    return " ".join((text or "").split())


# A sentence ends at ". " before a capital, a bracket or a quote; "e.g. 256MiB" and "i.e." do not end one.
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)\.\s+(?=[A-Z(\[`'\"])")


def _short(text: str, limit: int) -> str:
    """The first sentence of ``text`` for a completion menu; past ``limit`` characters it is cut at a word (before
    a bracket it would leave open) and ends in "...": never in the middle of a word."""
    t = _clean(text)
    m = _SENTENCE_END.search(t)
    if m:
        t = t[:m.start() + 1]
    if len(t) <= limit:
        return t
    cut = t[:limit - 3]
    cut = cut[:cut.rfind(" ")] if " " in cut else cut
    if cut.count("(") > cut.count(")"):
        cut = cut[:cut.rfind("(")]
    return cut.rstrip(" ,;:") + "..."


def _first_sentence(text: str) -> str:
    t = _clean(text)
    for end in (". ", ": "):
        if end in t:
            return t.split(end, 1)[0].rstrip(".")
    return t.rstrip(".")


def _walk(cmd: Any, path: list[str]) -> Cmd:
    help_text = "\n\n".join(_clean(p) for p in paragraphs(getattr(cmd, "help", "") or ""))
    short = _clean(getattr(cmd, "short_help", "") or "") or _first_sentence(help_text)
    node = Cmd(path, help_text, short, (getattr(cmd, "epilog", "") or "").strip("\n"))
    for p in cmd.params:
        if getattr(p, "hidden", False):
            continue
        desc = getattr(p, "type_descriptor", None)  # typer 0.29's; earlier ones keep the click type
        type_name = str(getattr(desc, "annotation", "") or getattr(p.type, "name", "")).lower()
        raw_choices = getattr(desc, "choices", None) or getattr(p.type, "choices", None) or []
        choices = [str(getattr(c, "value", c)) for c in raw_choices]
        is_path = "path" in type_name or p.name in {"paths", "path", "src", "dst", "directory", "workdir", "output",
                                                   "out", "plot", "clients"}
        if p.param_type_name == "argument":
            node.arguments.append(Arg(metavar(p), is_path and not choices, choices, str(p.name or "arg")))
            continue
        names = [*p.opts, *getattr(p, "secondary_opts", [])]
        takes_value = not getattr(p, "is_flag", False) and not getattr(p, "count", False)
        metavar_ = metavar(p)
        node.options.append(Opt(names, _clean(getattr(p, "help", "")), takes_value, choices, metavar_, is_path))
    node.options.append(Opt(["--help", "-h"], "Show the help and exit.", False, [], "", False))
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        if not getattr(sub, "hidden", False):
            node.subcommands.append(_walk(sub, [*path, name]))
    return node


def command_tree() -> Cmd:
    return _walk(typer.main.get_command(get_app()), [PROG])


def _all(node: Cmd) -> list[Cmd]:
    out = [node]
    for s in node.subcommands:
        out.extend(_all(s))
    return out


# ---------------------------------------------------------------------------------------------- bash

def bash(tree: Cmd) -> str:
    lines = [
        "# bash completion for kafkatool (generated by `python -m kafkatool.commands.docs`; do not edit)",
        "_kafkatool() {",
        '    local cur prev words cword',
        '    cur="${COMP_WORDS[COMP_CWORD]}"',
        '    prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    local path="kafkatool" i w',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        w="${COMP_WORDS[i]}"',
        '        case "$path $w" in',
    ]
    for c in _all(tree):
        for s in c.subcommands:
            lines.append(f'            "{c.name} {s.path[-1]}") path="{s.name}" ;;')
    lines += ["        esac", "    done", '    case "$path" in']
    for c in _all(tree):
        opts = " ".join(n for o in c.options for n in o.names)
        subs = " ".join(s.path[-1] for s in c.subcommands)
        lines.append(f'        "{c.name}")')
        lines.append('            case "$prev" in')
        for o in c.options:
            if o.takes_value:
                pattern = "|".join(o.names)
                if o.choices:
                    words = " ".join(o.choices)
                    lines.append(f'                {pattern}) COMPREPLY=($(compgen -W "{words}" -- "$cur")); return ;;')
                elif o.is_path:
                    lines.append(f'                {pattern}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
                else:
                    lines.append(f"                {pattern}) return ;;")
        lines.append("            esac")
        lines.append('            if [[ "$cur" == -* ]]; then')
        lines.append(f'                COMPREPLY=($(compgen -W "{opts}" -- "$cur"))')
        if subs:
            lines.append("            else")
            lines.append(f'                COMPREPLY=($(compgen -W "{subs}" -- "$cur"))')
        elif any(a.choices for a in c.arguments):
            words = " ".join(x for a in c.arguments for x in a.choices)
            lines.append("            else")
            lines.append(f'                COMPREPLY=($(compgen -W "{words}" -- "$cur"))')
        elif any(a.is_path for a in c.arguments):
            lines.append("            else")
            lines.append('                COMPREPLY=($(compgen -f -- "$cur"))')
        lines.append("            fi")
        lines.append("            ;;")
    lines += ["    esac", "}", "complete -o filenames -F _kafkatool kafkatool", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- zsh

def _zsh_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def zsh(tree: Cmd) -> str:
    out = ["#compdef kafkatool", "# zsh completion for kafkatool (generated by `python -m kafkatool.commands.docs`; "
           "do not edit)", ""]
    for c in _all(tree):
        fn = "_" + "_".join(p.replace("-", "_") for p in c.path)
        out.append(f"{fn}() {{")
        specs = []
        for o in c.options:
            desc = _zsh_escape(_short(o.help, 100))
            names = o.names
            excl = f"({' '.join(names)})" if len(names) > 1 else ""
            action = ""
            if o.takes_value:
                what = re.sub(r"[^a-z0-9_-]+", "_", o.metavar.lower()).strip("_") or "value"
                if o.choices:
                    action = f":{what}:({' '.join(o.choices)})"
                elif o.is_path:
                    action = f":{what}:_files"
                else:
                    action = f":{what}: "
            name_part = "{" + ",".join(names) + "}" if len(names) > 1 else names[0]
            specs.append(f"'{excl}'{name_part}'[{desc}]{action}'" if excl else f"'{name_part}[{desc}]{action}'")
        if c.subcommands:
            specs.append("'1: :->cmds'")
            specs.append("'*:: :->args'")
        elif any(a.choices for a in c.arguments):
            specs.append(f"'1:{c.arguments[0].param}:({' '.join(c.arguments[0].choices)})'")
        elif any(a.is_path for a in c.arguments):
            specs.append("'*:file:_files'")
        out.append("    local state")
        out.append("    _arguments -s \\")
        for s in specs:
            out.append(f"        {s} \\")
        out[-1] = out[-1].rstrip(" \\")
        if c.subcommands:
            out.append("    case $state in")
            out.append("        cmds)")
            items = " ".join(f"'{s.path[-1]}:{_zsh_escape(_short(s.short, 90))}'" for s in c.subcommands)
            out.append(f"            local -a subcmds; subcmds=({items})")
            out.append("            _describe 'command' subcmds ;;")
            out.append("        args)")
            out.append("            case $words[1] in")
            for sub in c.subcommands:
                sfn = "_" + "_".join(p.replace("-", "_") for p in sub.path)
                out.append(f"                {sub.path[-1]}) {sfn} ;;")
            out.append("            esac ;;")
            out.append("    esac")
        out.append("}")
        out.append("")
    out.append('_kafkatool "$@"')
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- fish

def _fish_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def fish(tree: Cmd) -> str:
    out = ["# fish completion for kafkatool (generated by `python -m kafkatool.commands.docs`; do not edit)",
           "complete -c kafkatool -f"]
    for c in _all(tree):
        depth = len(c.path) - 1
        if depth == 0:
            cond = "__fish_use_subcommand"
        else:
            seen = " ".join(c.path[1:])
            cond = f"__fish_seen_subcommand_from {c.path[-1]}"
            if depth > 1:
                cond = f"__fish_seen_subcommand_from {c.path[1]}; and __fish_seen_subcommand_from {c.path[-1]}"
            del seen
        for s in c.subcommands:
            sub_cond = cond if depth == 0 else f"__fish_seen_subcommand_from {c.path[-1]}"
            desc = _fish_escape(_short(s.short, 90))
            out.append(f"complete -c kafkatool -n '{sub_cond}' -a {s.path[-1]} -d '{desc}'")
        if c.arguments and not c.subcommands and depth > 0:
            # the arguments, but not as the value of an option (`dump -f <TAB>` offers the formats only)
            valued = " ".join(n for o in c.options if o.takes_value for n in o.names)
            not_value = f"; and not __fish_prev_arg_in {valued}" if valued else ""
            words = " ".join(x for a in c.arguments for x in a.choices)
            if words:
                out.append(f"complete -c kafkatool -n '{cond}{not_value}' -a '{words}'")
            elif any(a.is_path for a in c.arguments):
                out.append(f"complete -c kafkatool -n '{cond}{not_value}' -F")
        for o in c.options:
            parts = [f"complete -c kafkatool -n '{cond}'"]
            for n in o.names:
                parts.append(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}")
            if o.takes_value:
                # -x: a value and no files (the script's `complete -c kafkatool -f` does not cover option values)
                if o.choices:
                    parts.append(f"-x -a '{' '.join(o.choices)}'")
                elif o.is_path:
                    parts.append("-r -F")
                else:
                    parts.append("-x")
            parts.append(f"-d '{_fish_escape(_short(o.help, 80))}'")
            out.append(" ".join(parts))
    out.append("")
    return "\n".join(out)


def completion_script(shell: str, tree: Cmd) -> str:
    """The completion script for ``shell`` (bash, zsh or fish), as completions/ holds it."""
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](tree)


# ---------------------------------------------------------------------------------------------- man

def _roff(text: str) -> str:
    t = text.replace("\\", "\\e").replace("-", "\\-")
    t = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in t)  # a table's rules, a bar: by code point
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in t.split("\n"))


def man_page(c: Cmd, tree: Cmd) -> str:
    title = c.name.replace(" ", "-")
    out = [f'.TH "{title.upper()}" "1" "{MAN_DATE}" "kafkatool {__version__}" "kafkatool manual"',
           ".SH NAME", f"{_roff(title)} \\- {_roff(c.short or c.help)}",
           ".SH SYNOPSIS", f".B {_roff(c.name)}"]
    syn = "[OPTIONS]"
    if c.subcommands:
        syn += " COMMAND [ARGS]..."
    for a in c.arguments:
        syn += f" {a.name}"
    out.append(_roff(syn))
    out.append(".SH DESCRIPTION")
    for i, para in enumerate(paragraphs(c.help or c.short)):
        out += ([".PP"] if i else []) + [_roff(para)]
    if c.subcommands:
        out.append(".SH COMMANDS")
        for s in c.subcommands:
            out += [".TP", f".B {_roff(s.path[-1])}", _roff(s.short) + f" See \\fB{s.name.replace(' ', '-')}\\fR(1)."]
    if c.options:
        out.append(".SH OPTIONS")
        for o in c.options:
            label = ", ".join(f"\\fB{_roff(n)}\\fR" for n in o.names)
            if o.takes_value:
                label += " " + ("{" + "|".join(o.choices) + "}" if o.choices else f"\\fI{o.metavar}\\fR")
            out += [".TP", label, _roff(o.help or "")]
    out.append(".SH EXIT STATUS")
    for code, meaning in EXIT_CODES:
        out += [".TP", f".B {int(code)}", _roff(meaning)]
    out += [".SH JSON OUTPUT",
            _roff(f'With --format json every line is one JSON object with a "type" field and "schema": '
                  f"{JSON_SCHEMA_VERSION}; fields are only ever added within a schema version."),
            ".SH ENVIRONMENT"]
    for name, meaning in ENVIRONMENT:
        out += [".TP", f".B {name}", _roff(meaning)]
    if c.examples:
        out += [".SH EXAMPLES", _roff("On the log dir that kafkatool sample demo writes:" if "demo" in c.examples
                                      else "As a terminal shows them:"), ".PP", ".nf", ".RS 4"]
        out += [_roff(line) for line in c.examples.split("\n")]
        out += [".RE", ".fi"]
    see = sorted({s.name.replace(" ", "-") for s in _all(tree)} - {title})
    out += [".SH SEE ALSO", ", ".join(f"\\fB{_roff(s)}\\fR(1)" for s in see)]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------- reference

REFERENCE = "docs/reference.md"


def option_reference(tree: Cmd) -> str:
    """Markdown: every command and option with its help (docs/reference.md, a page of the docs site)."""
    out = ["<!-- generated by `python -m kafkatool.commands.docs` from the CLI itself; do not edit -->", "",
           "# Option reference", "",
           "Every command and option, generated from the CLI itself (`kafkatool COMMAND --help` and "
           "`man kafkatool-COMMAND` say the same). Sizes accept units (`4096`, `128KiB`, `64MiB`, `1GiB`); times "
           "accept epoch milliseconds or ISO-8601 (`2024-05-01T12:00:00Z`). Exit codes: "
           + ", ".join(f"{int(c)} {m.split(':')[0]}" for c, m in EXIT_CODES) + " ([conventions](conventions.md)).",
           ""]
    for c in _all(tree):
        args = " ".join(a.name for a in c.arguments)
        out.append(f"## `{c.name}`{' ' + args if args else ''}")
        out.append("")
        out.append(_md(c.short) + ("." if c.short and not c.short.endswith(".") else ""))
        out.append("")
        for o in c.options:
            label = ", ".join(f"`{n}`" for n in o.names)
            if o.takes_value:
                label += " " + ("`" + "|".join(o.choices) + "`" if o.choices else f"*{o.metavar}*")
            out.append(f"* {label}: {_md(o.help)}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _md(text: str) -> str:
    """Help text as Markdown text: no HTML tags or emphasis made of it (``<list>``, ``*.log``, ``__consumer_...``)."""
    return re.sub(r"([\\`*_<>|\[\]])", r"\\\1", text)


# ---------------------------------------------------------------------------------------------- files

def generated_files(tree: Cmd | None = None) -> dict[str, str]:
    tree = tree or command_tree()
    files = {
        "completions/bash/kafkatool": bash(tree),
        "completions/zsh/_kafkatool": zsh(tree),
        "completions/fish/kafkatool.fish": fish(tree),
    }
    for c in _all(tree):
        files[f"man/{c.name.replace(' ', '-')}.1"] = man_page(c, tree)
    files[REFERENCE] = option_reference(tree)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the committed files are stale")
    ap.add_argument("--root", type=Path, default=ROOT)
    args = ap.parse_args(argv)
    files = generated_files()
    stale = []
    for rel, text in files.items():
        path = args.root / rel
        if not path.exists() or path.read_text() != text:
            stale.append(rel)
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    for d in ("man", "completions"):
        for p in sorted((args.root / d).rglob("*")):
            if p.is_dir():
                continue
            rel = p.relative_to(args.root).as_posix()
            if rel not in files:
                stale.append(rel)
                if not args.check:
                    p.unlink()
    if args.check and stale:
        print("stale generated files (run `python -m kafkatool.commands.docs`): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
