"""The examples of README.md and docs/*.md: found, run as a shell would, and compared with what the page shows.

A page's examples are the ``$ `` lines of its fenced code blocks. They run in page order, one bash process
each, in one fresh directory per page (a page's first example makes its data: ``kafkatool sample demo``),
with ``/tmp/`` moved to a temp dir. A ``kafkatool`` line is checked:

* its exit code is the one shown (``$ echo $?`` after it, ``exit N`` printed by the command line itself, or 2
  for an example that shows only an error line, else 0);
* every line shown is a line the command prints (stdout and stderr as a terminal would interleave them), in
  order, with elisions (``...``) matching anything, and timings and peak memory left out of the comparison.

Any other line (``cp``, ``dd``, ``truncate``, ``ls``) is a step of the example: it must succeed, and what it
prints is not compared (dates, owners). A line that cannot run here is listed in ``SKIPPED`` with the reason.

    python -m tests.support.doc_examples PAGE.md            # run a page's examples, report the differences
    python -m tests.support.doc_examples --fill PAGE.md     # write each output shown as "@@" from a real run

``--fill`` is how a page's outputs are written in the first place: an example whose output block is the one
line ``@@`` gets what the command prints, verbatim; trim or elide it by hand afterwards.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import zygote
from tests.support.paths import ROOT

FILL = "@@"

# Pages made by a generator (no examples of their own) are not read.
GENERATED = ("docs/reference.md", "docs/performance.md")


def pages() -> list[Path]:
    """README.md and every hand-written page of docs/, relative to the repository."""
    out = [Path("README.md")]
    out += sorted(p.relative_to(ROOT) for p in (ROOT / "docs").rglob("*.md") if p.relative_to(ROOT).as_posix()
                  not in GENERATED)
    return out


@dataclass
class Example:
    page: str  # relative to the repository
    line: int  # of the ``$`` line
    command: str  # as shown, continuation lines joined
    output: list[str]  # the lines shown after it
    exit_code: int | None  # None: the command line reports it itself (``; echo "exit $?"``)
    setup_file: tuple[str, str] | None = None  # ``$ cat FILE`` shown just before: FILE's content
    out_lines: tuple[int, int] = (0, 0)  # the page's lines holding ``output`` (1-based, end exclusive)

    @property
    def is_kafkatool(self) -> bool:
        return re.match(r"(KAFKATOOL_\w+=\S+ )?kafkatool ", self.command) is not None

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}: $ {self.command}"


@dataclass
class _Block:
    lines: list[tuple[int, str]] = field(default_factory=list)


def examples(page: str | Path) -> list[Example]:
    """Every ``$`` line of ``page``'s code blocks, in order, with the output and exit code it shows."""
    text = (ROOT / page).read_text()
    blocks: list[_Block] = []
    current: _Block | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("```"):
            if current is None:
                current = _Block()
            else:
                blocks.append(current)
                current = None
            continue
        if current is not None:
            current.lines.append((n, line))
    out: list[Example] = []
    for block in blocks:
        out += _parse_block(str(page), block.lines)
    return out


def _parse_block(page: str, lines: list[tuple[int, str]]) -> list[Example]:
    commands: list[tuple[int, str, list[tuple[int, str]]]] = []
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
            commands[-1][2].append((n, line))
        i += 1
    found: list[Example] = []
    for k, (n, text, shown_at) in enumerate(commands):
        shown = [s for _, s in shown_at]
        if text.strip() == "echo $?":
            continue  # the exit code of the example before it
        nxt = commands[k + 1] if k + 1 < len(commands) else None
        if nxt is not None and nxt[1].strip() == "echo $?":
            code: int | None = int(nxt[2][0][1])
        elif re.search(r";\s*echo (\"exit \$\?\"|\$\?)\s*$", text):
            code = None
        elif shown and shown[0].startswith("kafkatool: error:"):
            code = 2
        else:
            code = 0
        prev = commands[k - 1] if k else None
        setup = None
        if prev is not None and re.fullmatch(r"cat [\w.-]+", prev[1].strip()):
            setup = (prev[1].split()[1], "\n".join(s for _, s in prev[2]) + "\n")
        span = (shown_at[0][0], shown_at[-1][0] + 1) if shown_at else (n + 1, n + 1)
        found.append(Example(page, n, text, shown, code, setup, span))
    return found


# Examples that are not run, and why: (page, command as shown) -> reason.
SKIPPED: dict[tuple[str, str], str] = {
    ("docs/sample.md", "kafkatool sample /tmp/kafkatool-bench --profile bench --codec lz4 --value-bytes 100 "
                       "--batch-records 256"): "a 200 MiB benchmark dir",
    ("docs/canary.md", "kafkatool canary verify /tmp/canary2 2>/dev/null"):
        "a canary changed by hand after its run, a batch CRC recomputed (tests/canary/test_run_verify.py)",
    ("docs/canary.md", "kafkatool canary rollback /tmp/canary1"): "needs a live broker holding the log dir's .lock",
    ("docs/canary.md", "KAFKATOOL_CRASH_AFTER=25 kafkatool canary apply /tmp/canary1"):
        "a crash (tests/canary/test_apply.py kills apply after each of its steps)",
    ("docs/canary.md", "kafkatool canary verify /tmp/canary1 2>/dev/null | tail -8"): "after the crash above",
    ("docs/canary.md", "kafkatool canary apply /tmp/canary1 2>/dev/null"): "after the crash above",
    ("docs/canary.md", "kafkatool canary rehearse /tmp/canary1 --kafka /opt/kafka_2.13-3.9.2 --clients clients.txt"):
        "a real Kafka 3.9 broker (tests/broker/test_rehearse.py rehearses on 3.9 and 4.4)",
    ("docs/canary.md", "kafkatool canary rehearse /tmp/canary1 --kafka /opt/kafka_2.13-4.4.0 --clients clients.txt"):
        "a real Kafka 4.4 broker (tests/broker/test_rehearse.py)",
    ("docs/canary.md", "kafkatool canary rehearse /tmp/canary1 --kafka /opt/kafka_2.13-3.9.2 --server-properties "
                       "server.properties -q >/dev/null"):
        "a real Kafka 3.9 broker with ZooKeeper (tests/broker/test_rehearse.py, the same mistake)",
}


def skip_reason(e: Example) -> str | None:
    if (e.page, e.command) in SKIPPED:
        return SKIPPED[(e.page, e.command)]
    if e.page == "docs/metadata.md":
        return ("a real KRaft node's metadata log (tests/metadata/test_broker_parity.py runs the same commands on "
                "3.9.2 and 4.4.0 nodes and compares them with DumpLogSegments and the Admin API)")
    if e.command.startswith("kafkatool spark-scan ") and "local-processes" not in e.command:
        return "Spark: a JVM and 50 s (tests/scan and tests/spark run the same scans)"
    return None


_TIMING = [
    (re.compile(r"\b\d+(\.\d+)? ?s\b"), "<s>"),  # seconds
    (re.compile(r"\b\d+(\.\d+)? ?(MB|MiB|KiB|B)/s\b"), "<rate>"),
    (re.compile(r"peak memory \d+(\.\d+)?\w+"), "peak memory <m>"),
    (re.compile(r'"(elapsed_s|seconds)":[\d.e-]+'), r'"\1":<s>'),
]


def normal(line: str) -> str:
    line = line.rstrip()
    for pattern, repl in _TIMING:
        line = pattern.sub(repl, line)
    return line


def at_tmp(text: str, tmp: Path) -> str:
    """A page's /tmp/... paths (not /var/tmp/...) moved to ``tmp``."""
    return re.sub(r"(?<![\w/])/tmp/", f"{tmp}/", text)


def pattern(shown: str, tmp: Path) -> re.Pattern[str] | None:
    """A shown line as a regex over a printed line; None for an elision line (`...`, `  ... (more alike)`)."""
    text = normal(at_tmp(shown, tmp))
    if not text.strip() or text.strip().startswith("..."):
        return None
    # "..." elides anything, with the spacing around it (`"bytes":365318, ...}` shows `"bytes":365318,"uncompr...}`)
    return re.compile("^" + ".*".join(re.escape(part) for part in re.split(r"\s*\.\.\.\s*", text)) + "$")


def run(example: Example, cwd: Path, tmp: Path) -> tuple[int, list[str]]:
    """Run one example as a shell would (``kafkatool`` is this checkout's); its exit code and printed lines."""
    if example.setup_file is not None and not (cwd / example.setup_file[0]).exists():
        (cwd / example.setup_file[0]).write_text(example.setup_file[1])
    shown_file = re.fullmatch(r"cat ([\w.-]+)", example.command.strip())
    if shown_file and not (cwd / shown_file[1]).exists():  # `$ cat FILE` shows an input the page writes by hand
        (cwd / shown_file[1]).write_text("".join(line + "\n" for line in example.output))
    # `kafkatool` is `python -m kafkatool`, forked from the fork server where the run allows (its own process,
    # streams, cwd and environment all the same: tests/support/zygote.py); KAFKATOOL_TEST_CLI=exec: never
    kafkatool = zygote.client() or [sys.executable, "-m", "kafkatool"]
    script = (f'kafkatool() {{ {shlex.join(kafkatool)} "$@"; }}\n'
              f"{at_tmp(example.command, tmp)}\n"
              'echo "__rc=${PIPESTATUS[0]}"\n')
    home = tmp / "home"  # `~/...` in an example (completions, man pages) is a temp dir too
    home.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", NO_COLOR="1", COLUMNS="200", HOME=str(home))
    env.pop("KAFKATOOL_MEMORY", None)
    p = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    lines = p.stdout.splitlines()
    rc = int(lines.pop()[len("__rc="):])
    return rc, lines


def differences(example: Example, rc: int, printed: list[str], tmp: Path) -> str | None:
    """What the page shows that the run did not print (None: the example holds)."""
    if not example.is_kafkatool:
        return None if rc == 0 else f"{example.where}: a step of the example failed (exit {rc}):\n" + \
            "\n".join(printed[-20:])
    if example.exit_code is not None and rc != example.exit_code:
        return f"{example.where}: exit {rc}, the page shows {example.exit_code}\n" + "\n".join(printed[-20:])
    actual = [normal(x) for x in printed]
    at = 0
    for shown in example.output:
        regex = pattern(shown, tmp)
        if regex is None:
            continue
        while at < len(actual) and not regex.match(actual[at]):
            at += 1
        if at >= len(actual):
            return (f"{example.where}: the page shows a line it does not print (or not in this order):\n"
                    f"  {shown}\nit printed:\n" + "\n".join(printed))
        at += 1
    return None


def run_page(page: str | Path, base: Path, fill: bool = False) -> list[str]:
    """Run every example of ``page`` in order in ``base``; the differences found. With ``fill``, examples shown
    with the output ``@@`` get what they print written into the page."""
    tmp, cwd = base / "tmp", base / "cwd"  # the page's /tmp, and the directory its commands run in
    tmp.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    problems, fills = [], []
    for example in examples(page):
        if skip_reason(example) is not None:
            continue
        rc, printed = run(example, cwd, tmp)
        if fill and example.output == [FILL]:
            # absolute paths of the run's directories: the page's /tmp, or elided
            shown = [line.replace(str(tmp) + "/", "/tmp/").replace(str(cwd) + "/", ".../") for line in printed]
            if example.is_kafkatool and example.exit_code is not None and rc != example.exit_code:
                shown += ["$ echo $?", str(rc)]  # the exit code, shown the one way the parser reads it
            fills.append((example, shown))
            continue
        problem = differences(example, rc, printed, tmp)
        if problem is not None:
            problems.append(problem)
    if fills:
        lines = (ROOT / page).read_text().split("\n")
        for example, printed in reversed(fills):
            start, end = example.out_lines
            lines[start - 1:end - 1] = printed
        (ROOT / page).write_text("\n".join(lines))
    return problems


def argv(command: str) -> list[str]:
    """The arguments of a ``kafkatool`` example (after `kafkatool`, before a pipe, `;` or redirection)."""
    line = re.sub(r"^KAFKATOOL_\w+=\S+ ", "", command)
    line = re.split(r"\s*(?:\||;|&&)|\s\d?>", line)[0]
    words = shlex.split(line)
    assert words[0] == "kafkatool", command
    return words[1:]


def main(args: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.support.doc_examples", description=__doc__.split("\n")[0])
    ap.add_argument("pages", nargs="+", type=Path)
    ap.add_argument("--fill", action="store_true", help='write the output of every example shown as "@@"')
    a = ap.parse_args(args)
    bad = 0
    for page in a.pages:
        rel = page.resolve().relative_to(ROOT)
        with tempfile.TemporaryDirectory() as d:
            for problem in run_page(rel, Path(d), fill=a.fill):
                print(problem, file=sys.stderr)
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
