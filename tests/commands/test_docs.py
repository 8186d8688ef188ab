"""Generated artifacts (man pages, shell completions) are fresh and complete, the wheel installs them, and
the README documents every command and option."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kafkatool.commands import docs as _docs
from tests.support.cli import run_cli
from tests.support.paths import ROOT

TREE = _docs.command_tree()
COMMANDS = _docs._all(TREE)


def test_generated_files_are_fresh():
    """Fails when a command or option changed without `python -m kafkatool.commands.docs`."""
    stale = [rel for rel, text in _docs.generated_files(TREE).items()
             if not (ROOT / rel).exists() or (ROOT / rel).read_text() != text]
    assert not stale, f"regenerate with `python -m kafkatool.commands.docs`: {stale}"
    assert _docs.main(["--check"]) == 0


def test_check_mode_detects_staleness(tmp_path):
    assert _docs.main(["--root", str(tmp_path)]) == 0  # writes a fresh copy
    page = tmp_path / "man" / "kafkatool-dump.1"
    page.write_text(page.read_text() + ".\\\" edited by hand\n")
    assert _docs.main(["--check", "--root", str(tmp_path)]) == 1


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_man_page_lists_every_option_exit_codes_schema_env_and_examples(cmd):
    text = (ROOT / "man" / f"{cmd.name.replace(' ', '-')}.1").read_text()
    plain = text.replace("\\-", "-").replace("\\e", "\\")
    for opt in cmd.options:
        for name in opt.names:
            assert f"\\fB{name}\\fR" in plain, f"{cmd.name}: {name} missing from its man page"
    for code, _ in _docs.EXIT_CODES:
        assert f".B {int(code)}\n" in plain
    assert f'"schema": {_docs.JSON_SCHEMA_VERSION}' in plain
    for var, _ in _docs.ENVIRONMENT:
        assert f".B {var}" in plain
    assert ".SH EXAMPLES" in plain, f"{cmd.name} has no examples: add them to _docs.EXAMPLES"
    for sub in cmd.subcommands:
        assert sub.name.replace(" ", "-") in plain


def test_man_pages_render_without_warnings():
    for page in sorted((ROOT / "man").glob("*.1")):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True)
        if p.returncode == 127:  # pragma: no cover - groff is part of every Debian base install
            pytest.fail("groff is needed to check the man pages")
        assert p.returncode == 0 and not p.stderr.strip(), (page.name, p.stderr)


def _bash_complete(words: list[str]) -> list[str]:
    script = ROOT / "completions" / "bash" / "kafkatool"
    quoted = " ".join(f"'{w}'" for w in words)
    p = subprocess.run(["bash", "-c", f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
                        '_kafkatool; printf "%s\\n" "${COMPREPLY[@]}"'], capture_output=True, text=True, check=True)
    return [line for line in p.stdout.splitlines() if line]


def test_bash_completion_knows_commands_options_and_choices():
    assert set(_bash_complete(["kafkatool", ""])) >= {c.path[-1] for c in TREE.subcommands}
    for cmd in TREE.subcommands:
        got = set(_bash_complete(["kafkatool", *cmd.path[1:], "--"]))
        assert {n for o in cmd.options for n in o.names if n.startswith("--")} <= got, cmd.name
    dump = next(c for c in TREE.subcommands if c.path[-1] == "dump")
    fmt = next(o for o in dump.options if "--format" in o.names)
    assert set(_bash_complete(["kafkatool", "dump", "--format", ""])) == set(fmt.choices)


@pytest.mark.parametrize("rel", ["completions/zsh/_kafkatool", "completions/fish/kafkatool.fish"])
def test_zsh_and_fish_completions_name_every_option(rel):
    text = (ROOT / rel).read_text()
    for cmd in COMMANDS:
        for opt in cmd.options:
            long = [n for n in opt.names if n.startswith("--")]
            assert any((n in text) if "zsh" in rel else (f"-l {n[2:]}" in text) for n in long), (rel, long)


def _help_command_rows(*group: str) -> dict[str, list[str]]:
    """The Commands panel of `kafkatool [GROUP] --help` at 120 columns: command -> its description's lines."""
    p = run_cli(*group, "--help", env={"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Commands" in line and line.lstrip().startswith("╭"))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1:]:
        if line.lstrip().startswith("╰"):
            break
        inner = line.strip().strip("│").rstrip()
        if inner[1:2].strip():  # "│ name  description": a new row
            name, _, text = inner.strip().partition(" ")
            rows[name] = [text.strip()]
        else:
            rows[list(rows)[-1]].append(inner.strip())
    return rows


@pytest.mark.parametrize("group", [TREE, *[c for c in TREE.subcommands if c.subcommands]], ids=lambda c: c.name)
def test_kafkatool_help_lists_each_command_in_one_line(group):
    """`kafkatool --help` (and `kafkatool canary --help`) is a table of contents: one short line per command,
    the same line the man pages and completions use."""
    rows = _help_command_rows(*group.path[1:])
    assert set(rows) == {s.path[-1] for s in group.subcommands}
    for sub in group.subcommands:
        name = sub.path[-1]
        assert len(rows[name]) == 1, f"{sub.name}: its description in --help wraps: {rows[name]}"
        assert rows[name][0] == sub.short, (rows[name], sub.short)
        assert len(sub.short) <= 90 and sub.short.endswith(".") and sub.short.count(". ") == 0, sub.short


@pytest.mark.parametrize("cmd,text", [
    (["canary", "plan"], "'librdkafka 0.9.5 [api.version.request=true]'"),
    (["dump"], "[default: 256MiB]"),
    (["fetch-sim"], "[default: 128KiB]"),
    ([], "[default: 256MiB; spark-scan with Spark: 2GiB]"),
])
def test_help_shows_bracketed_text(cmd, text):
    """Help texts are plain text: --help (rich) must not take brackets for markup and drop them."""
    p = run_cli(*cmd, "--help", env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert p.returncode == 0, p.stderr
    assert text in " ".join(p.stdout.replace("│", " ").split()), p.stdout


def _readme_sections() -> dict[str, str]:
    """The hand-written README (the generated option reference left out), by `## ` section title."""
    readme = (ROOT / "README.md").read_text()
    hand = readme[:readme.index(_docs.README_BEGIN)]
    return {title.strip(): body for title, _, body in
            (part.partition("\n") for part in re.split(r"^## ", hand, flags=re.M)[1:])}


SHARED_SECTIONS = ("Conventions", "Memory")  # where the options every command has are documented


def _undocumented(sections: dict[str, str]) -> list[str]:
    leaves = [c for c in COMMANDS[1:] if not c.subcommands]
    shared = set.intersection(*({n for o in c.options for n in o.names} for c in leaves))
    missing = []
    for cmd in COMMANDS:
        home = f"kafkatool {cmd.path[1]}" if len(cmd.path) > 1 else None
        text = sections.get(home, "") if home else ""
        if home and f"kafkatool {' '.join(cmd.path[1:])}" not in text:
            missing.append(f"{cmd.name} (no `## {home}` section that names it)")
        for opt in cmd.options:
            long = [n for n in opt.names if n.startswith("--") and n != "--help"]
            if not long:
                continue
            where = "".join(sections.get(s, "") for s in SHARED_SECTIONS) if (not home or long[0] in shared) \
                else text
            if not any(re.search(re.escape(n) + r"(?![\w-])", where) for n in long):
                missing.append(f"{cmd.name} {long[0]}")
    return missing


def test_readme_documents_every_command_and_option():
    """Each command in its own hand-written `## kafkatool CMD` section, with each of its options (the options
    every command shares, and the root's, in Conventions/Memory); the generated option reference does not
    count."""
    missing = _undocumented(_readme_sections())
    assert not missing, f"README.md does not document: {missing}"


def test_an_undocumented_option_is_found():
    sections = _readme_sections()
    sections["kafkatool fetch-sim"] = sections["kafkatool fetch-sim"].replace("--throttle-time-ms", "")
    sections["Conventions"] = sections["Conventions"].replace("--traceback", "")
    assert sorted(_undocumented(sections)) == sorted(["kafkatool fetch-sim --throttle-time-ms", *(
        f"{c.name} --traceback" for c in COMMANDS if not c.subcommands)])
    assert "kafkatool spark-scan (no `## kafkatool spark-scan` section that names it)" in _undocumented(
        {k: v for k, v in sections.items() if k != "kafkatool spark-scan"})


@pytest.mark.slow
def test_wheel_installs_man_pages_and_completions(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                        str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    (wheel,) = tmp_path.glob("kafkatool-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    data = [n.split(".data/data/", 1)[1] for n in names if ".data/data/" in n]
    assert "share/bash-completion/completions/kafkatool" in data
    assert "share/zsh/site-functions/_kafkatool" in data
    assert "share/fish/vendor_completions.d/kafkatool.fish" in data
    assert {f"share/man/man1/{p.name}" for p in (ROOT / "man").glob("*.1")} <= set(data)
    assert Path("kafkatool/py.typed").as_posix() in names
