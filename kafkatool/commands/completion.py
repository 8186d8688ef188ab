"""``kafkatool completion bash|zsh|fish`` and ``kafkatool man``: shell completions and man pages from any install.

A wheel puts the generated files into ``share/`` (pyproject.toml's data-files), but an editable install, pipx
or a venv off the shell's paths leave them where no shell or ``man`` looks. These two commands print the
same texts from the installed kafkatool itself: they are generated from the registered app at run time by
the generator that writes ``completions/`` and ``man/`` (kafkatool/commands/docs.py), so they always match
the kafkatool that prints them (the drift test keeps the committed copies equal to them).
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands import examples
from kafkatool.commands.help import add_command
from kafkatool.errors import ExitCode, UsageError
from kafkatool.util.atomic import atomic_write_bytes


class Shell(str, enum.Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def completion(
    shell: Annotated[Shell, typer.Argument(metavar="bash|zsh|fish", help="The shell.", show_default=False)],
) -> int:
    """Print the shell completion script for bash, zsh or fish.

    The script is static (no Python runs on <TAB>): every command, option and choice of this kafkatool. Install
    it where the shell finds it: bash: kafkatool completion bash >
    ~/.local/share/bash-completion/completions/kafkatool; zsh: kafkatool completion zsh > ~/.zfunc/_kafkatool
    (with fpath+=(~/.zfunc) before compinit in ~/.zshrc); fish: kafkatool completion fish >
    ~/.config/fish/completions/kafkatool.fish.
    """
    from kafkatool.commands import docs

    sys.stdout.write(docs.completion_script(shell.value, docs.command_tree()))
    return ExitCode.OK


def man(
    command: Annotated[list[str] | None, typer.Argument(
        metavar="COMMAND", help="The command whose page to print (e.g. dump, canary plan); none: kafkatool's own page.",
        show_default=False)] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", metavar="DIR", help="Write every page (kafkatool.1, kafkatool-dump.1, ...) into this "
        "directory instead, e.g. ~/.local/share/man/man1; then man kafkatool-dump works.", show_default=False)] = None,
) -> int:
    """Print a man page (roff), or write them all into a directory.

    Read one with kafkatool man dump | man -l -, or install them all with kafkatool man --output
    ~/.local/share/man/man1 (a directory man searches), then man kafkatool-dump.
    """
    from kafkatool.commands import docs

    tree = docs.command_tree()
    pages = {c.name: docs.man_page(c, tree) for c in docs._all(tree)}
    if output is not None:
        if command:
            raise UsageError("give a command or --output, not both", field="output")
        output.mkdir(parents=True, exist_ok=True)
        for name, text in pages.items():
            atomic_write_bytes(output / f"{name.replace(' ', '-')}.1", text.encode())
        return ExitCode.OK
    name = " ".join([docs.PROG, *(command or [])])
    if name not in pages:
        known = ", ".join(n.split(" ", 1)[1] for n in pages if " " in n)
        raise UsageError(f"no command {' '.join(command or [])!r} (one of: {known})")
    sys.stdout.write(pages[name])
    return ExitCode.OK


def register(app: typer.Typer) -> None:
    add_command(app, "completion", completion, epilog=examples.COMPLETION)
    add_command(app, "man", man, epilog=examples.MAN, no_args_is_help=False)
