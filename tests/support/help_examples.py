"""The Examples sections of every command's ``--help`` (kafkatool/commands/examples.py): found on the commands,
run as a docs page's are (tests/support/doc_examples.py: each command line in bash, exit codes and shown lines
compared) in a fresh directory holding ``demo``, the log dir ``kafkatool sample demo`` writes.

    python -m tests.support.help_examples            # run every command's examples, report the differences
    python -m tests.support.help_examples --fill     # write each output shown as "@@" from a real run
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support import doc_examples as dx
from tests.support import zygote
from tests.support.paths import ROOT

EXAMPLES_MODULE = ROOT / "kafkatool" / "commands" / "examples.py"


def command_examples() -> dict[str, str]:
    """Every command's path (``dump``, ``canary run``; ``""``: kafkatool itself) and its examples (its epilog)."""
    import typer

    from kafkatool.commands.app import get_app

    out: dict[str, str] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs or cmd.epilog:
            out[" ".join(path)] = cmd.epilog or ""
        for name, sub in (subs or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(get_app()), [])
    return out


def examples(path: str, text: str) -> list[dx.Example]:
    lines = list(enumerate(text.rstrip("\n").split("\n"), 1))
    return dx._parse_block(" ".join(["kafkatool", path, "--help"]).replace("  ", " "), lines)


def skip_reason(e: dx.Example) -> str | None:
    if e.command.startswith("kafkatool metadata "):
        return "a KRaft node's metadata log (docs/metadata.md; tests/metadata/test_broker_parity.py)"
    if e.command.startswith("kafkatool canary rehearse "):
        return "a Kafka install and a JVM (docs/canary.md; tests/broker/test_rehearse.py rehearses on 3.9 and 4.4)"
    return None


def make_demo(base: Path) -> Path:
    demo = base / "demo"
    r = zygote.run([sys.executable, "-m", "kafkatool", "sample", str(demo), "-q"], cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    return demo


def run_command(path: str, text: str, demo: Path, base: Path) -> tuple[list[str], list[tuple[dx.Example, list[str]]]]:
    """Run ``path``'s examples in ``base`` (a copy of ``demo`` in it); the differences, and what each example
    shown as ``@@`` printed."""
    cwd, tmp = base / "cwd", base / "tmp"
    cwd.mkdir(parents=True)
    tmp.mkdir()
    if path:  # kafkatool's own examples make their demo
        shutil.copytree(demo, cwd / "demo", copy_function=shutil.copy2)
    problems: list[str] = []
    fills: list[tuple[dx.Example, list[str]]] = []
    for e in examples(path, text):
        if skip_reason(e) is not None:
            continue
        rc, printed = dx.run(e, cwd, tmp)
        printed = [line.replace(str(cwd) + "/", ".../").rstrip() for line in printed]  # the run's dir, elided
        if e.output == [dx.FILL]:
            fills.append((e, printed
                          + ([] if not e.is_kafkatool or rc == (e.exit_code or 0) else ["$ echo $?", str(rc)])))
            continue
        problem = dx.differences(e, rc, printed, tmp)
        if problem is not None:
            problems.append(problem)
    return problems, fills


def fill(texts: dict[str, str], demo: Path, base: Path) -> int:
    """Write into examples.py the output of each example shown as ``@@``."""
    source = EXAMPLES_MODULE.read_text()
    n = 0
    for i, (path, text) in enumerate(texts.items()):
        if dx.FILL not in text:
            continue
        _, fills = run_command(path, text, demo, base / str(i))
        new = text
        for e, printed in fills:
            marker = f"$ {e.command}\n{dx.FILL}\n"
            new = new.replace(marker, f"$ {e.command}\n" + "".join(line + "\n" for line in printed), 1)
            n += 1
        old = text.replace("\\", "\\\\")
        assert old in source, f"{path}: its examples are not in {EXAMPLES_MODULE.name} as written"
        source = source.replace(old, new.replace("\\", "\\\\"), 1)
    EXAMPLES_MODULE.write_text(source)
    return n


def main(args: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.support.help_examples", description=__doc__.split("\n")[0])
    ap.add_argument("--fill", action="store_true", help='write the output of every example shown as "@@"')
    ap.add_argument("commands", nargs="*", help="only these commands (e.g. dump, 'canary run')")
    a = ap.parse_args(args)
    texts = {p: t for p, t in command_examples().items() if t and (not a.commands or p in a.commands)}
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        demo = make_demo(base / "demo-src")
        if a.fill:
            print(f"filled {fill(texts, demo, base / 'fill')} examples", file=sys.stderr)
            return 0
        bad = 0
        for i, (path, text) in enumerate(texts.items()):
            for problem in run_command(path, text, demo, base / str(i))[0]:
                print(problem, file=sys.stderr)
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
