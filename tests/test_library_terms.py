"""The library speaks its own terms: no string literal (docstrings and f-strings included) or comment of a module
outside kafkatool/commands/ names a ``--flag`` of the CLI. A usage error names its request field
(``UsageError("must be at least 1", field="partitions")``) and the CLI shows the option that sets it; which
option maps to which field is said only in kafkatool/commands/."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import typer.main

from kafkatool.commands.app import get_app
from tests.support.paths import ROOT

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def cli_flags() -> set[str]:
    """Every long option of every command of the Typer app (both spellings of a --x/--no-x pair), and --help."""
    flags = {"--help"}

    def walk(cmd: object) -> None:
        for p in getattr(cmd, "params", []):
            flags.update(o for o in (*p.opts, *p.secondary_opts) if o.startswith("--"))
        for sub in (getattr(cmd, "commands", None) or {}).values():
            walk(sub)

    walk(typer.main.get_command(get_app()))
    return flags


def strings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal (constants, docstrings, the literal parts of f-strings) and comment."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def flags_named(source: str, flags: set[str]) -> list[tuple[int, str]]:
    return [(line, flag) for line, text in strings(source) for flag in FLAG.findall(text) if flag in flags]


def library_modules() -> list[Path]:
    pkg = ROOT / "kafkatool"
    return [p for p in sorted(pkg.rglob("*.py")) if (pkg / "commands") not in p.parents]


def test_no_library_string_names_a_cli_flag() -> None:
    flags = cli_flags()
    found = [f"{p.relative_to(ROOT)}:{line}: {flag}" for p in library_modules()
             for line, flag in flags_named(p.read_text(encoding="utf-8"), flags)]
    assert found == []


def test_the_check_sees_flags_wherever_a_string_is() -> None:
    flags = cli_flags()
    assert {"--memory", "--partitions", "--to-magic", "--no-idempotent", "--engine", "--live", "--help"} <= flags
    assert len(library_modules()) > 50
    source = '''"""Module doc: raise --memory."""
def f(n):
    """Give --jobs."""
    x = f"{n} more than --max-message-bytes {n}"
    return "--partitions", "--not-an-option", "a--live", "--liveness"  # a comment: --to-magic
'''
    assert sorted(flags_named(source, flags)) == [(1, "--memory"), (3, "--jobs"), (4, "--max-message-bytes"),
                                                  (5, "--partitions"), (5, "--to-magic")]
