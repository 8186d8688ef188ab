"""Generated artifacts (man pages, shell completions, docs/reference.md) are fresh and complete, the wheel
installs them, `kafkatool completion` and `kafkatool man` print them, and docs/ documents every command and
option."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kafkatool.commands import docs as _docs
from tests.support import zygote
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


def _run_kafkatool(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m kafkatool ARGS``, forked from the fork server (tests/support/zygote.py)."""
    return zygote.run([sys.executable, "-m", "kafkatool", *args], env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("shell,rel", [("bash", "completions/bash/kafkatool"), ("zsh", "completions/zsh/_kafkatool"),
                                       ("fish", "completions/fish/kafkatool.fish")])
def test_completion_command_prints_the_generated_script(shell, rel):
    """`kafkatool completion SHELL` works from any install (no share/ dir needed) and prints what completions/
    holds."""
    p = _run_kafkatool("completion", shell)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout == (ROOT / rel).read_text()


def test_completion_command_refuses_an_unknown_shell():
    p = _run_kafkatool("completion", "tcsh")
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr


def test_man_command_prints_a_page_and_installs_them_all(tmp_path):
    p = _run_kafkatool("man", "canary", "plan")
    assert p.returncode == 0, p.stderr
    assert p.stdout == (ROOT / "man" / "kafkatool-canary-plan.1").read_text()
    assert _run_kafkatool("man").stdout == (ROOT / "man" / "kafkatool.1").read_text()
    p = _run_kafkatool("man", "--output", str(tmp_path / "man1"))
    assert p.returncode == 0, p.stderr
    written = {f.name: f.read_text() for f in (tmp_path / "man1").iterdir()}
    assert written == {f.name: f.read_text() for f in (ROOT / "man").glob("*.1")}
    bad = _run_kafkatool("man", "dumpp")
    assert bad.returncode == 2 and "no command 'dumpp'" in bad.stderr and bad.stdout == ""


@pytest.mark.parametrize("text,limit,want", [
    ("Memory budget of the whole run, for every command (e.g. 256MiB, 1GiB; env KAFKATOOL_MEMORY). A command's "
     "own --memory wins. [default: 256MiB]", 100,
     "Memory budget of the whole run, for every command (e.g. 256MiB, 1GiB; env KAFKATOOL_MEMORY)."),
    ("Memory budget of the whole run, for every command (e.g. 256MiB, 1GiB; env KAFKATOOL_MEMORY). More.", 80,
     "Memory budget of the whole run, for every command..."),
    ("Decode and print every record (Kafka's --deep-iteration).", 80,
     "Decode and print every record (Kafka's --deep-iteration)."),
    ("averyveryverylongwordwithoutspaces" * 4, 40, "averyveryverylongwordwithoutspacesave..."),
])
def test_completion_descriptions_end_at_a_sentence_or_a_word(text, limit, want):
    assert docs_short(text, limit) == want


docs_short = _docs._short


def _zsh_specs(function: str) -> list[str]:
    """The _arguments specs of one function of the zsh script, as zsh itself unquotes them."""
    script = (ROOT / "completions" / "zsh" / "_kafkatool").read_text().replace('\n_kafkatool "$@"\n', "\n")
    p = subprocess.run(["zsh", "-f", "-c", '_arguments() { printf "%s\\n" "$@"; }; _describe() { :; }; '
                        f'eval "$(cat)"; {function}'], input=script, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (apt-get install zsh)")
def test_zsh_descriptions_are_whole():
    """Apostrophes survive zsh's quoting and no description stops in the middle of a word (--memory's did)."""
    root = _zsh_specs("_kafkatool")
    memory = next(s for s in root if s.startswith("--memory["))
    assert memory.startswith("--memory[Memory budget of the whole run, for every command (e.g. 256MiB, 1GiB; env "
                             "KAFKATOOL_MEMORY).]"), memory
    dump = _zsh_specs("_kafkatool_dump")
    assert any("[Decode and print every record (Kafka's --deep-iteration).]" in s for s in dump), dump
    assert "1:shell:(bash zsh fish)" in _zsh_specs("_kafkatool_completion")


def _fish_complete(line: str, cwd: Path) -> list[str]:
    script = ROOT / "completions" / "fish" / "kafkatool.fish"
    p = subprocess.run(["fish", "--no-config", "-c", f"source '{script}'; complete -C '{line}'"], cwd=cwd,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return [x.split("\t")[0] for x in p.stdout.splitlines()]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (apt-get install fish)")
def test_fish_offers_values_not_files_after_an_option(tmp_path):
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    assert sorted(_fish_complete("kafkatool dump -f ", tmp_path)) == ["dump-log", "json", "table", "text"]
    assert _fish_complete("kafkatool dump --memory ", tmp_path) == []
    assert _fish_complete("kafkatool dump ", tmp_path) == ["00000000000000000000.log"]  # the PATHS argument
    assert _fish_complete("kafkatool reindex-time x --output ", tmp_path) == ["00000000000000000000.log"]
    assert sorted(_fish_complete("kafkatool completion ", tmp_path)) == ["bash", "fish", "zsh"]


def test_fish_script_keeps_files_out_of_option_values():
    """The same rule in the script's text, for machines without fish: files only for path arguments and path
    options; a value option is exclusive (-x)."""
    text = (ROOT / "completions" / "fish" / "kafkatool.fish").read_text()
    assert "-l format -s f -x -a 'text dump-log json table'" in text
    for line in text.splitlines():
        if line.endswith(" -F"):
            assert "not __fish_prev_arg_in" in line and "-f" in line.split("__fish_prev_arg_in")[1], line


def _help_command_rows(*group: str) -> dict[str, list[str]]:
    """The Commands section of `kafkatool [GROUP] --help` at 120 columns: command -> its description's lines."""
    p = run_cli(*group, "--help", env={"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    start = lines.index("Commands:")
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if line[2:3].strip():  # "  name    description": a new row
            name, _, text = line.strip().partition(" ")
            rows[name] = [text.strip()]
        else:
            rows[list(rows)[-1]].append(line.strip())
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
    """Help texts are plain text: --help must not take brackets for markup and drop them."""
    p = run_cli(*cmd, "--help", env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert p.returncode == 0, p.stderr
    assert text in " ".join(p.stdout.replace("│", " ").split()), p.stdout


# The page that documents each command (`kafkatool canary run` is canary.md's); the options every command shares,
# and the root's, are documented in SHARED_PAGES.
HOME_PAGES = {"completion": "install.md", "man": "install.md"}
SHARED_PAGES = ("conventions.md", "concepts.md")


def _pages() -> dict[str, str]:
    """The hand-written pages of docs/ (the generated option reference left out), by file name."""
    return {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "reference.md"}


def _undocumented(pages: dict[str, str]) -> list[str]:
    # the leaf commands that work on log dirs (`completion` and `man` print kafkatool's own docs: no --format)
    leaves = [c for c in COMMANDS[1:] if not c.subcommands and any("--format" in o.names for o in c.options)]
    shared = set.intersection(*({n for o in c.options for n in o.names} for c in leaves))
    missing = []
    for cmd in COMMANDS:
        home = HOME_PAGES.get(cmd.path[1], f"{cmd.path[1]}.md") if len(cmd.path) > 1 else None
        text = pages.get(home, "") if home else ""
        if home and f"kafkatool {' '.join(cmd.path[1:])}" not in text:
            missing.append(f"{cmd.name} (no docs/{home} that names it)")
        for opt in cmd.options:
            long = [n for n in opt.names if n.startswith("--") and n != "--help"]
            if not long:
                continue
            where = "".join(pages.get(s, "") for s in SHARED_PAGES) if (not home or long[0] in shared) else text
            if not any(re.search(re.escape(n) + r"(?![\w-])", where) for n in long):
                missing.append(f"{cmd.name} {long[0]}")
    return missing


def test_docs_document_every_command_and_option():
    """Each command on its own page of docs/, with each of its options (the options every command shares, and
    the root's, in conventions.md or concepts.md); the generated option reference does not count."""
    missing = _undocumented(_pages())
    assert not missing, f"docs/ does not document: {missing}"


def test_an_undocumented_option_is_found():
    pages = _pages()
    pages["fetch-sim.md"] = pages["fetch-sim.md"].replace("--throttle-time-ms", "")
    pages["conventions.md"] = pages["conventions.md"].replace("--traceback", "")
    assert sorted(_undocumented(pages)) == sorted(["kafkatool fetch-sim --throttle-time-ms", *(
        f"{c.name} --traceback" for c in COMMANDS if any("--traceback" in o.names for o in c.options))])
    assert "kafkatool spark-scan (no docs/spark-scan.md that names it)" in _undocumented(
        {k: v for k, v in pages.items() if k != "spark-scan.md"})


def test_the_readme_fits_on_a_screen_and_keeps_the_set_up_commands():
    """README.md is the way in (at most 100 lines and 10 KB, the tour of every command and the details in docs/);
    its two set-up commands are the ones CI and the lead run, word for word."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10_000 and readme.count("\n") <= 100, (len(readme.encode()), readme.count("\n"))
    assert "```sh\npython3 -m venv .venv && .venv/bin/pip install -e '.[spark]' && d=$(mktemp -d) && " \
           ".venv/bin/kafkatool sample \"$d\" && .venv/bin/kafkatool spark-scan \"$d\"\n```" in readme
    assert "```sh\npython3 -m venv .venv && .venv/bin/pip install -e '.[spark,test]' && " \
           ".venv/bin/python -m pytest\n```" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[spark,test]' && .venv/bin/python -m pytest" in ci
    for link in re.findall(r"\]\(([^)#]+)", readme):  # every link of the README names a file of the repository
        assert link.startswith("http") or (ROOT / link).exists(), link


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
