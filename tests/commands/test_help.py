"""Every command's --help reads well at 80 columns, and its Examples are real: each is run on the log dir
``kafkatool sample demo`` writes and compared with what it shows (tests/support/help_examples.py), as the docs'
examples are (test_doc_examples.py)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.support import help_examples as hx
from tests.support import zygote
from tests.support.paths import ROOT

TEXTS = hx.command_examples()
LEAVES = sorted(p for p in TEXTS if p and p != "canary")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hx.make_demo(tmp_path_factory.mktemp("help-demo"))


def _help(path: str, columns: int = 80) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns), NO_COLOR="1")
    p = zygote.run([sys.executable, "-m", "kafkatool", *path.split(), "--help"], env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_every_command_has_examples() -> None:
    from kafkatool.commands.registry import COMMANDS

    assert {e.name for e in COMMANDS} <= {p.split()[0] for p in TEXTS if p}
    for path in ["", *LEAVES, "canary"]:
        assert hx.examples(path, TEXTS[path]), f"kafkatool {path} --help has no examples"


@pytest.mark.parametrize("path", ["", *LEAVES])
def test_help_at_80_columns(path: str) -> None:
    text = _help(path)
    head = re.search(r"^Examples\b.*:$", text, re.M)
    assert head is not None, text
    options = text[:head.start()]  # the examples show what commands print, as wide as it is
    for line in options.splitlines():
        assert len(line) <= 80, line
    assert "…" not in options  # no option name or help cut short
    # no type names for placeholders (<bool>, <list[Path]>, {paths}), in the usage line and the option labels
    labels = [m.group(1) for m in re.finditer(r"^(?:Usage: |  )(\S.*?)(?:  |$)", options, re.M)]
    for label in labels:
        assert not re.search(r"<(bool|int|float|str|text|path|list\[.*?\])>|\{paths\}|list\[", label, re.I), label


@pytest.mark.parametrize("path", ["", *LEAVES, "canary"])
def test_examples_print_what_they_show(path: str, demo: Path, tmp_path: Path) -> None:
    problems, _ = hx.run_command(path, TEXTS[path], demo, tmp_path)
    assert problems == [], "\n".join(problems)
