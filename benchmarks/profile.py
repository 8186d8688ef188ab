"""Where the commands spend their time: py-spy profiles of whole ``kafkatool`` processes, summarised.

    python -m benchmarks profile [--scenarios v2-lz4-1kx16,v2-none-1kx16] [--size-mb 100]
                                 [--commands dump-deep,downconvert-v1,lib-reindex] [--top 12] [--out prof.json]

Each command (or library pass, ``lib-*``: ``benchmarks/passes.py`` repeated in one process) runs once under
``py-spy record --nolineno --format raw`` (a sampling profiler outside the process: no instrumentation
overhead in the measured code) on the suite's own inputs (``benchmarks/data.py``). The summary is the share
of samples by *self* time (the function on top of the stack: where the CPU is) and by *inclusive* time for
kafkatool's own library functions (which call paths cost what), both as shares of the library's work; the
rest (imports, building the Typer app, output) is reported as one start-up share. C functions called from
Python (crc32c, the codecs, ``struct``) are accounted to the Python function that called them. py-spy:
``pip install py-spy`` (it ptrace-attaches to its own child). py-spy samples wall time: on a loaded
machine a runnable process waiting for a core is sampled too, which dilutes every share alike.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.data import DEFAULT_DATA_DIR, ROOT, ensure_layout, py_env, scenario_by_name
from benchmarks.run import DOWN_V0, DOWN_V1, DUMP, DUMP_DEEP, FETCH_SIM, REINDEX, Command

COMMANDS: dict[str, Command] = {"dump": DUMP, "dump-deep": DUMP_DEEP, "reindex": REINDEX, "downconvert-v1": DOWN_V1,
                                "downconvert-v0": DOWN_V0, "fetch-sim": FETCH_SIM}
# Library passes (benchmarks/passes.py) repeated in one process: reindex-time's rebuild of a 100 MB segment
# takes milliseconds, too few samples next to the interpreter's start-up.
PASSES: dict[str, tuple[str, ...]] = {"lib-reindex": ("recover", "--iterations", "40"),
                                      "lib-deep": ("deep", "--iterations", "2"),
                                      "lib-downconvert-v1": ("downconvert", "--to-magic", "1", "--iterations", "2")}


def _py_spy() -> str:
    for cand in (Path(sys.executable).parent / "py-spy", shutil.which("py-spy")):
        if cand and Path(cand).is_file():
            return str(cand)
    raise SystemExit("py-spy is not installed: pip install py-spy")


def _library(frame: str) -> bool:
    return "kafkatool/" in frame and "kafkatool/commands/" not in frame and "__main__" not in frame


def summarise(raw: str, top: int) -> dict[str, Any]:
    """Self and inclusive sample shares from py-spy's collapsed stacks (``frame;frame;... count``).

    A sample is *library work* when a kafkatool library function (not ``kafkatool/commands``) is on its stack
    and no module is being imported; the rest is start-up and the CLI layer (imports, building the Typer app,
    rendering). Shares are of the library work."""
    self_: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = work = 0
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        count = int(n)
        frames = stack.split(";")
        total += count
        if any(f.startswith("_find_and_load") for f in frames) or not any(_library(f) for f in frames):
            continue
        work += count
        self_[frames[-1]] += count
        for f in set(frames):
            if _library(f):
                incl[f] += count

    def share(c: Counter[str]) -> list[dict[str, Any]]:
        return [{"function": f, "samples": n, "share": n / work} for f, n in c.most_common(top)] if work else []

    return {"samples": total, "work_samples": work, "startup_share": 1 - work / total if total else 0.0,
            "self": share(self_), "inclusive": share(incl)}


def _target(name: str, layout: Any, out: Path | None) -> list[str]:
    if name in PASSES:
        pass_name, *extra = PASSES[name]
        return [sys.executable, "-m", "benchmarks.passes", pass_name, str(layout.log), "--warmup", "0", *extra]
    return COMMANDS[name].fill(layout, out)


def profile(name: str, layout: Any, rate: int, top: int, scratch: Path) -> dict[str, Any]:
    writes = name in COMMANDS and COMMANDS[name].writes
    out = Path(tempfile.mkdtemp(dir=scratch)) / "out" if writes else None
    raw = scratch / "profile.txt"
    target = _target(name, layout, out)
    argv = [_py_spy(), "record", "--nolineno", "--format", "raw", "--rate", str(rate), "-o", str(raw), "--", *target]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=py_env(), cwd=ROOT, check=False)
        if p.returncode not in (0, 1) or not raw.is_file():
            raise SystemExit(f"py-spy failed (exit {p.returncode}): {p.stderr[-2000:]}")
        summary = summarise(raw.read_text(), top)
    finally:
        if out is not None:
            shutil.rmtree(out.parent, ignore_errors=True)
        raw.unlink(missing_ok=True)
    summary["argv"] = ["python", *target[1:]]
    return summary


def markdown(name: str, scenario: str, mb: float, s: dict[str, Any]) -> str:
    lines = [f"`{name}` on {scenario} ({mb:.0f} MB): {s['samples']} samples, {s['startup_share']:.0%} outside the "
             "library (start-up: imports, Typer; output); shares below are of the library's work", "",
             "| self | function (C calls count to their Python caller) | | inclusive | kafkatool library function |",
             "|---:|---|---|---:|---|"]
    def cells(entries: list[dict[str, Any]], i: int) -> str:
        if i >= len(entries):
            return " | "
        return f"{entries[i]['share']:.1%} | `{entries[i]['function']}`"

    for i in range(max(len(s["self"]), len(s["inclusive"]))):
        lines.append(f"| {cells(s['self'], i)} | | {cells(s['inclusive'], i)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks profile", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", default="v2-lz4-1kx16,v2-none-1kx16")
    ap.add_argument("--size-mb", type=float, default=100.0)
    ap.add_argument("--commands", default="dump-deep,downconvert-v1,lib-reindex",
                    help=f"of {', '.join([*COMMANDS, *PASSES])}")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--rate", type=int, default=250, help="samples per second")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--out", type=Path, help="write every summary as JSON")
    a = ap.parse_args(argv)
    names = [c.strip() for c in a.commands.split(",") if c.strip()]
    unknown = set(names) - set(COMMANDS) - set(PASSES)
    if unknown:
        ap.error(f"unknown commands: {', '.join(sorted(unknown))}")
    scratch = a.data_dir.resolve() / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    results = []
    for sname in [x.strip() for x in a.scenarios.split(",") if x.strip()]:
        layout = ensure_layout(scenario_by_name(sname), a.size_mb, a.data_dir.resolve())
        for name in names:
            s = profile(name, layout, a.rate, a.top, scratch)
            results.append({"scenario": sname, "command": name, "file_bytes": layout.size, **s})
            print(markdown(name, sname, layout.size / 1e6, s) + "\n", flush=True)
    if a.out:
        a.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
