"""Peak memory of every command over the record-count bombs and preallocated segments of issue 23.

Each row is one ``python -m kafkatool ... --memory 256MiB`` process sampled by ``tests/support/rss.py``: peak
anonymous memory (``RssAnon``) and peak mapped file pages (``RssFile`` + ``RssShmem``) apart, summed over the
process tree, every 10 ms. The inputs are the sweep's cases (``tests/support/hostile_corpus.py``), built once
into ``--data`` (default ``bench-data/hostile-memory``; sparse files, never in git).

    python -m benchmarks.hostile_memory                      # every case x every command, a Markdown table
    python -m benchmarks.hostile_memory --cases zstd-record-count-bomb --commands dump-deep,downconvert-0
    python -m benchmarks.hostile_memory --json out.json      # also every row as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from tests.support.hostile_corpus import CASES, Case
from tests.support.paths import ROOT
from tests.support.rss import MiB, run

MEMORY = "256MiB"
DEFAULT_CASES = ("zstd-record-count-bomb", "v0-gzip-wrapper-bomb", "gzip-v2-record-count-bomb",
                 "v1-lz4-wrapper-bomb", "preallocated-1gib-segment", "preallocated-8gib-segment")

# name -> argv after ``kafkatool``; {p} the case's path, {d} its log dir, {o} a fresh output dir
COMMANDS: dict[str, tuple[str, ...]] = {
    "dump": ("dump", "{p}"),
    "dump-json": ("dump", "{p}", "--format", "json"),
    "dump-deep": ("dump", "{p}", "--deep"),
    "dump-deep-json": ("dump", "{p}", "--deep", "--verify", "--format", "json"),
    "reindex": ("reindex-time", "{p}"),
    "downconvert-0": ("downconvert", "{p}", "{o}/down", "--to-magic", "0", "--zstd-to", "gzip"),
    "downconvert-1": ("downconvert", "{p}", "{o}/down", "--to-magic", "1", "--zstd-to", "lz4"),
    "upconvert": ("upconvert", "{p}", "{o}/up"),
    "fetch-sim": ("fetch-sim", "{p}"),
    "canary-plan": ("canary", "plan", "{d}"),
    "canary-run": ("canary", "run", "{d}", "-p", "*", "-w", "{o}/work"),
    "spark-scan": ("spark-scan", "{p}", "--engine", "local-processes", "--format", "json"),
}


def _case(name: str) -> Case:
    for c in CASES:
        if c.name == name:
            return c
    raise SystemExit(f"no case {name!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "bench-data" / "hostile-memory")
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES))
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--memory", default=MEMORY)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    print("| case | command | exit | peak anon MiB | peak file MiB | wall s |")
    print("|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        case = _case(name)
        root = args.data / name
        done = root / ".built"
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            (root / "input").mkdir()
            path = case.build(root / "input")
            done.write_text(str(path))
        path = Path(done.read_text())
        log_dir = path if case.kind == "logdir" else path.parent
        for cmd in args.commands.split(","):
            out = root / "out"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            argv_ = [a.format(p=path, d=log_dir, o=out) for a in COMMANDS[cmd]]
            r = run([sys.executable, "-m", "kafkatool", *argv_, "--memory", args.memory],
                    env=dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200"),
                    cwd=out, timeout=args.timeout)
            shutil.rmtree(out, ignore_errors=True)
            row = {"case": name, "command": cmd, "argv": argv_, "rc": r.rc, "peak_anon_mib": r.peak_anon / MiB,
                   "peak_file_mib": r.peak_file / MiB, "seconds": r.seconds,
                   "stderr_tail": r.stderr[-300:]}
            rows.append(row)
            print(f"| {name} | {cmd} | {r.rc} | {r.peak_anon / MiB:.0f} | {r.peak_file / MiB:.0f} | "
                  f"{r.seconds:.1f} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
