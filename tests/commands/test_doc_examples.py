"""The examples of README.md and docs/ are real: every `$ kafkatool ...` line runs and prints what the page shows.

Each page runs as one scenario in a fresh directory (its first example makes its data with `kafkatool sample`);
the rules (exit codes, shown lines in order, elisions, timings) are tests/support/doc_examples.py's. A page's
examples are written with ``python -m tests.support.doc_examples --fill PAGE``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from kafkatool.commands.app import get_app
from tests.support import doc_examples as dx

PAGES = [p.as_posix() for p in dx.pages()]
ALL = [e for page in PAGES for e in dx.examples(page)]
KAFKATOOL = [e for e in ALL if e.is_kafkatool]


def test_every_example_is_found_and_run_or_skipped_with_a_reason():
    assert "README.md" in PAGES and "docs/dump.md" in PAGES and "docs/reference.md" not in PAGES
    assert len(KAFKATOOL) >= 80, "the pages' examples were not found"
    skipped = [e for e in ALL if dx.skip_reason(e) is not None]
    # a real node's metadata log and a real broker's rehearsal are run by tests/metadata and tests/broker instead
    elsewhere = [e for e in skipped
                 if e.page == "docs/metadata.md" or e.command.startswith("kafkatool canary rehearse ")]
    assert len(skipped) - len(elsewhere) <= 10, [e.where for e in skipped]
    shown = {(e.page, e.command) for e in ALL}
    assert set(dx.SKIPPED) <= shown, set(dx.SKIPPED) - shown  # a stale reason
    for page in PAGES:  # no page is all talk: a command page shows its command at work
        if page.startswith("docs/") and Path(page).stem in {"dump", "reindex-time", "downconvert", "upconvert",
                                                              "fetch-sim", "spark-scan", "canary", "sample"}:
            assert any(e.page == page and e.command.startswith(f"kafkatool {Path(page).stem} ")
                       and dx.skip_reason(e) is None for e in KAFKATOOL), page


def test_no_example_uses_data_made_outside_kafkatool():
    """Every example runs on `kafkatool sample` output (or files it makes itself): no log dir written by the
    Java test harness (kafka-ref) or a test helper."""
    for e in ALL:
        assert "kafka-ref" not in e.command and "tests.support" not in e.command, e.where
    for page in PAGES:
        made = [e for e in dx.examples(page) if e.is_kafkatool and dx.skip_reason(e) is None]
        if made:
            assert made[0].command.startswith("kafkatool sample ") or page == "docs/install.md", page


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run_as_shown(page, tmp_path):
    problems = dx.run_page(page, tmp_path)
    assert not problems, "\n\n".join(problems)


def test_a_changed_output_is_found(tmp_path):
    """The comparison is not vacuous: a shown line the command does not print, another exit code, a failing step."""
    page = tmp_path / "page.md"
    page.write_text("```\n$ kafkatool sample demo -q > /dev/null\n$ kafkatool dump demo/orders-1 --count\n"
                    "635 demo/orders-1/00000000000000001303.log\n999 total\n$ false\n```\n")
    examples = dx._parse_block("page.md", [(n, line) for n, line in enumerate(page.read_text().splitlines(), 1)
                                           if not line.startswith("```")])
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    problems = [dx.differences(e, *dx.run(e, cwd, tmp), tmp) for e in examples]
    assert problems[0] is None
    assert problems[1] is not None and "999 total" in problems[1]
    assert problems[2] is not None and "a step of the example failed" in problems[2]
    count = examples[1]
    count.output = ["...", "1197 total"]  # an elision and the real total
    assert dx.differences(count, *dx.run(count, cwd, tmp), tmp) is None
    count.exit_code = 1
    assert "exit 0, the page shows 1" in (dx.differences(count, *dx.run(count, cwd, tmp), tmp) or "")


def _parse(argv: list[str]) -> str:
    """Parse ``argv`` the way `kafkatool` does (option names, value parsers, arguments), without running it;
    the command's path."""
    command = typer.main.get_command(get_app())
    ctx = command.make_context("kafkatool", list(argv))
    while hasattr(command, "resolve_command"):
        protected = ctx.__dict__.get("_protected_args")
        rest = [*(ctx.protected_args if protected is None else protected), *ctx.args]
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        command = sub
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx.command_path


@pytest.mark.parametrize("example", KAFKATOOL, ids=lambda e: f"{e.page}:{e.line}")
def test_every_example_parses(example):
    """Every example, run here or not (Spark), names a command that exists and options that command has, with
    values its option parsers take (a renamed option or a unit the parser no longer accepts fails here)."""
    assert _parse(dx.argv(example.command)).startswith("kafkatool")


@pytest.mark.parametrize("argv", [
    ["dump", "logs", "--jobz", "2"],  # no such option
    ["fetch-sim", "logs", "--count"],  # an option of another command (dump's)
    ["sample", "d", "--value-bytes", "lots"],  # a value its parser refuses
    ["canary", "plann", "d"],  # no such command
])
def test_a_wrong_example_would_fail_to_parse(argv):
    with pytest.raises(Exception) as e:
        _parse(argv)
    assert type(e.value).__name__ in ("NoSuchOption", "UsageError", "BadParameter"), e.value
