"""The README's examples are real: its `$ kafkatool ...` commands still run as shown.

Every `$ kafkatool` line in a code block of the hand-written README (the generated option reference aside) is
either run here or listed in ``SKIPPED`` with the reason (inputs the README made with Kafka's own code or by
hand, Spark, a 200 MiB benchmark dir). The runnable ones work on log dirs made the way the README says
(``kafkatool sample``), in the README's order within a scenario, with ``/tmp/`` moved to a temp dir:

* the exit code is the one shown (``$ echo $?`` after it, ``exit N`` printed by the command line itself, or 2 for
  an example that shows only an error line, else 0);
* every line shown is a line the command prints (stdout and stderr as a terminal would interleave them), in
  order, with elisions (``...``) matching anything and timings and peak memory left out of the comparison.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import typer

from kafkatool.commands import docs as _docs
from kafkatool.commands.app import get_app
from tests.support.canary_dirs import small_dir
from tests.support.cli import run_cli
from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text()
HAND_WRITTEN = README[:README.index(_docs.README_BEGIN)]


@dataclass
class Example:
    command: str
    output: list[str]
    exit_code: int | None  # None: the command line reports it itself (`; echo "exit $?"`)
    section: str
    setup_file: tuple[str, str] | None = None  # `$ cat FILE` shown just before: FILE's content
    line: int = 0


@dataclass
class Block:
    examples: list[Example] = field(default_factory=list)


def examples() -> list[Example]:
    """Every `$ kafkatool` example of the hand-written README, with the output and exit code it shows."""
    out: list[Example] = []
    section = ""
    in_block = False
    current: list[tuple[int, str]] = []
    for n, line in enumerate(HAND_WRITTEN.splitlines(), 1):
        if line.startswith("## "):
            section = line[3:].strip()
        if line.strip().startswith("```"):
            if in_block:
                out += _parse_block(current, section)
                current = []
            in_block = not in_block
            continue
        if in_block:
            current.append((n, line))
    return out


def _parse_block(lines: list[tuple[int, str]], section: str) -> list[Example]:
    commands: list[tuple[int, str, list[str]]] = []
    i = 0
    while i < len(lines):
        n, line = lines[i]
        if line.startswith("$ "):
            text = line[2:]
            while text.endswith("\\") and i + 1 < len(lines):  # a command continued on the next line
                i += 1
                text = text[:-1].rstrip() + " " + lines[i][1].strip()
            commands.append((n, text, []))
        elif commands:
            commands[-1][2].append(line)
        i += 1
    found: list[Example] = []
    for k, (n, text, shown) in enumerate(commands):
        if not re.match(r"(KAFKATOOL_\w+=\S+ )?kafkatool ", text):
            continue
        nxt = commands[k + 1] if k + 1 < len(commands) else None
        if nxt is not None and nxt[1].strip() == "echo $?":
            code: int | None = int(nxt[2][0])
        elif re.search(r";\s*echo (\"exit \$\?\"|\$\?)\s*$", text):
            code = None
        elif shown and shown[0].startswith("kafkatool: error:"):
            code = 2
        else:
            code = 0
        prev = commands[k - 1] if k else None
        setup = None
        if prev is not None and re.fullmatch(r"cat [\w.-]+", prev[1].strip()):
            setup = (prev[1].split()[1], "\n".join(prev[2]) + "\n")
        found.append(Example(text, shown, code, section, setup, n))
    return found


ALL = examples()

# Examples that are not run, and why. Keyed by the command as the README shows it.
SKIPPED: dict[str, str] = {}
for _e in ALL:
    if "kafka-logs" in _e.command and _e.section in ("kafkatool dump", "kafkatool reindex-time") \
            and not any(p in _e.command for p in ("payments-0 kafka-logs/__consumer", "--decoder offsets",
                                                  "--key ord-3650")):
        SKIPPED[_e.command] = "a log dir written by kafka-ref (Kafka's own MemoryRecordsBuilder) or edited by hand"
    elif "--master" in _e.command or (_e.command.startswith("kafkatool spark-scan ")
                                      and "local-processes" not in _e.command):
        SKIPPED[_e.command] = "Spark (tests/scan runs it)"
    elif _e.section in ("kafkatool downconvert", "kafkatool upconvert", "kafkatool fetch-sim"):
        SKIPPED[_e.command] = "inputs written by kafka-ref (Kafka's own record builders)"
SKIPPED.update({
    "kafkatool sample /tmp/kafkatool-bench --profile bench --codec lz4 --value-bytes 100 --batch-records 256":
        "a 200 MiB benchmark dir",
    "kafkatool dump kafka-logs/__transaction_state-30 -f dump-log --decoder transactions | sed -n 3,4p":
        "a segment rebuilt from a published kafka-dump-log.sh output (tests/dump/test_decoders.py checks it)",
    'kafkatool dump broken/__transaction_state-0 --decoder transactions -q; echo "exit $?"':
        "a segment written by hand with bad records (tests/dump/test_decoders.py)",
    "kafkatool canary verify /tmp/canary2 2>/dev/null": "a canary changed by hand after its run",
    "kafkatool canary rollback /tmp/canary1": "needs a live broker holding the log dir's .lock",
    "KAFKATOOL_CRASH_AFTER=25 kafkatool canary apply /tmp/canary1": "a crash (tests/canary/test_apply.py)",
    "kafkatool canary verify /tmp/canary1 2>/dev/null | tail -8": "after the crash above",
    "kafkatool canary apply /tmp/canary1 2>/dev/null": "after the crash above",
    "kafkatool --memory 128MiB reindex-time --jobs 2 /work/bench-data/budget/logs/bench-0":
        "a 2 GiB benchmark partition (BENCHMARKS.md)",
})

# The runnable examples, by scenario: each scenario runs its examples in README order in one fresh temp dir.
# setup: what the README's text says the inputs are.
SCENARIOS: dict[str, dict[str, object]] = {
    "kafkatool sample": {"setup": []},
    "kafkatool dump": {"setup": ["sample-demo:kafka-logs"]},  # "The sample log dir (`kafkatool sample kafka-logs`)"
    "kafkatool reindex-time": {"setup": []},
    "kafkatool canary": {"setup": ["sample-demo:{tmp}/kafkatool-demo"]},
    "Memory": {"setup": ["small:logs"]},
}
RUN = [e for e in ALL if e.command not in SKIPPED]


def test_every_example_is_run_or_skipped_with_a_reason():
    assert len(ALL) >= 40, "the README's examples were not found"
    assert {e.section for e in RUN} <= set(SCENARIOS), {e.section for e in RUN} - set(SCENARIOS)
    assert set(SKIPPED) <= {e.command for e in ALL}, set(SKIPPED) - {e.command for e in ALL}  # stale reasons
    assert len(RUN) >= 20


_TIMING = [
    (re.compile(r"\b\d+(\.\d+)? ?s\b"), "<s>"),  # seconds
    (re.compile(r"\b\d+(\.\d+)? ?(MB|MiB|KiB|B)/s\b"), "<rate>"),
    (re.compile(r"peak memory \d+(\.\d+)?\w+"), "peak memory <m>"),
    (re.compile(r'"(elapsed_s|seconds)":[\d.]+'), r'"\1":<s>'),
]


def _normal(line: str) -> str:
    line = line.rstrip()
    for pattern, repl in _TIMING:
        line = pattern.sub(repl, line)
    return line


def _at(text: str, tmp: Path) -> str:
    """The README's /tmp/... paths (not /var/tmp/...) moved to ``tmp``."""
    return re.sub(r"(?<![\w/])/tmp/", f"{tmp}/", text)


def _pattern(shown: str, tmp: Path) -> re.Pattern[str] | None:
    """A shown line as a regex over a printed line; None for an elision line (`...`, `  ... (more alike)`)."""
    text = _normal(_at(shown, tmp))
    if not text.strip() or text.strip().startswith("..."):
        return None
    # "..." elides anything, with the spacing around it (`"bytes":365318, ...}` shows `"bytes":365318,"uncompr...}`)
    return re.compile("^" + ".*".join(re.escape(part) for part in re.split(r"\s*\.\.\.\s*", text)) + "$")


def _run(example: Example, cwd: Path, tmp: Path) -> tuple[int, list[str]]:
    if example.setup_file is not None and not (cwd / example.setup_file[0]).exists():
        (cwd / example.setup_file[0]).write_text(example.setup_file[1])
    script = (f'kafkatool() {{ "{sys.executable}" -m kafkatool "$@"; }}\n'
              f"{_at(example.command, tmp)}\n"
              'echo "__rc=${PIPESTATUS[0]}"\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", NO_COLOR="1", COLUMNS="200")
    env.pop("KAFKATOOL_MEMORY", None)
    p = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    lines = p.stdout.splitlines()
    rc = int(lines.pop()[len("__rc="):])
    return rc, lines


def _check(example: Example, rc: int, printed: list[str], tmp: Path) -> None:
    where = f"README.md line {example.line}: $ {example.command}"
    if example.exit_code is not None:
        assert rc == example.exit_code, f"{where}: exit {rc}, the README shows {example.exit_code}\n" + \
            "\n".join(printed[-20:])
    actual = [_normal(x) for x in printed]
    at = 0
    for shown in example.output:
        pattern = _pattern(shown, tmp)
        if pattern is None:
            continue
        while at < len(actual) and not pattern.match(actual[at]):
            at += 1
        assert at < len(actual), (f"{where}: the README shows a line it does not print (or not in this order):\n"
                                  f"  {shown}\nit printed:\n" + "\n".join(printed))
        at += 1


def _setup(spec: str, base: Path, tmp: Path, made: dict[str, Path]) -> None:
    kind, _, where = spec.partition(":")
    target = Path(where.replace("{tmp}", str(tmp))) if "{tmp}" in where else base / where
    if kind not in made:
        made[kind] = tmp / f".made-{kind}"
        if kind == "small":
            small_dir(made[kind])
        else:
            r = run_cli("sample", made[kind], "-q")
            assert r.returncode == 0, r.stderr
    shutil.copytree(made[kind], target, copy_function=shutil.copy2)


@pytest.mark.parametrize("section", sorted(SCENARIOS))
def test_readme_examples_run_as_shown(section, tmp_path):
    tmp = tmp_path / "tmp"  # the README's /tmp
    base = tmp_path / "cwd"
    tmp.mkdir()
    base.mkdir()
    made: dict[str, Path] = {}
    for spec in SCENARIOS[section]["setup"]:  # type: ignore[attr-defined]
        _setup(spec, base, tmp, made)
    ran = [e for e in RUN if e.section == section]
    assert ran, section
    for example in ran:
        rc, printed = _run(example, base, tmp)
        _check(example, rc, printed, tmp)


def _argv(command: str) -> list[str]:
    """The arguments of a README command line (after `kafkatool`, before a pipe, `;` or redirection)."""
    line = re.sub(r"^KAFKATOOL_\w+=\S+ ", "", command)
    line = re.split(r"\s*(?:\||;|&&)|\s\d?>", line)[0]
    words = shlex.split(line)
    assert words[0] == "kafkatool", command
    return words[1:]


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


@pytest.mark.parametrize("example", ALL, ids=lambda e: f"line{e.line}")
def test_every_example_parses(example):
    """Every example, run here or not, names a command that exists and options that command has, with values
    its option parsers take (a renamed option or a unit the parser no longer accepts fails here)."""
    assert _parse(_argv(example.command)).startswith("kafkatool")


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
