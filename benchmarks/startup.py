"""Start-up: the CPU seconds of ``kafkatool --version``, ``--help`` and a dump of a one-batch segment, as whole
processes, beside ``python -c pass`` (the interpreter's own floor) and ``kafka-ref version`` (a JVM's start) in the
same run.

    python -m benchmarks.startup                        # 20 rounds, a table on stdout
    python -m benchmarks.startup --runs 20 --json benchmarks/results/DATE-startup.json

Each round runs every command once, in turn (interleaved, so a machine that slows down slows all of them), after
one warm-up round. CPU is ``ru_utime + ru_stime`` of the child from ``os.wait4`` (benchmarks/procs.py); the figure
to quote is the median, and each command's median ratio to ``python -c pass`` of the same round. Issue 24's
targets: ``--version`` and ``--help`` <= 0.12 CPU-s, the one-batch dump <= 0.2 CPU-s. kafka-ref is optional
(``--kafka-ref PATH``, or found as the interop tests find it; left out when it cannot be).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.procs import run
from kafkatool.log.layout import filename_prefix_from_offset
from kafkatool.record.default_records import build_batch

TARGETS = {"kafkatool --version": 0.12, "kafkatool --help": 0.12, "kafkatool dump one-batch.log": 0.2}


def one_batch_segment(directory: Path) -> Path:
    """A partition dir with one segment of one uncompressed v2 batch of three small records."""
    part = directory / "t-0"
    part.mkdir(parents=True, exist_ok=True)
    log = part / f"{filename_prefix_from_offset(0)}.log"
    log.write_bytes(build_batch([(i, 1_700_000_000_000 + i, None, b"v" * 10, ()) for i in range(3)]))
    return log


def kafkatool_exe() -> str:
    """The console script an operator runs: beside this interpreter, else on PATH."""
    here = Path(sys.executable).parent / "kafkatool"
    found = str(here) if here.exists() else shutil.which("kafkatool")
    if not found:
        raise SystemExit("kafkatool is not installed beside this interpreter nor on PATH")
    return found


def kafka_ref_exe(given: str | None) -> str | None:
    if given:
        return given
    from benchmarks.data import kafka_ref  # located or built as the interop tests do

    try:
        return kafka_ref()
    except SystemExit as e:  # no JDK, no build: the JVM row is left out
        print(f"kafka-ref row left out: {e}", file=sys.stderr)
        return None


def measure(commands: dict[str, list[str]], runs: int, cwd: Path) -> dict[str, list[float]]:
    env = dict(os.environ)
    env.pop("KAFKATOOL_PURE", None)
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):  # round 0 warms the page cache and the .pyc files
        for name, argv in commands.items():
            p = run(argv, env=env, cwd=cwd)
            if p.rc != 0:
                raise SystemExit(f"{name}: exit {p.rc}: {p.stderr[-300:]}")
            if round_:
                cpu[name].append(p.cpu_s)
    return cpu


def summary(cpu: dict[str, list[float]]) -> list[dict[str, Any]]:
    base = cpu["python -c pass"]
    rows = []
    for name, xs in cpu.items():
        ratios = [x / b for x, b in zip(xs, base, strict=True) if b > 0]
        rows.append({"command": name, "runs": len(xs), "cpu_s_min": min(xs), "cpu_s_median": statistics.median(xs),
                     "cpu_s_max": max(xs), "ratio_to_python_median": statistics.median(ratios) if ratios else None,
                     "target_cpu_s": TARGETS.get(name), "cpu_s": xs})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| command | CPU-s min | median | max | median / `python -c pass` | target |", "|---|---|---|---|---|---|"]
    for r in rows:
        target = f"<= {r['target_cpu_s']}" if r["target_cpu_s"] is not None else ""
        ratio = f"{r['ratio_to_python_median']:.1f}x" if r["ratio_to_python_median"] is not None else ""
        out.append(f"| `{r['command']}` | {r['cpu_s_min']:.3f} | {r['cpu_s_median']:.3f} | {r['cpu_s_max']:.3f} | "
                   f"{ratio} | {target} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="counted rounds (default 20)")
    ap.add_argument("--kafka-ref", help="the kafka-ref launcher (default: located as the interop tests do)")
    ap.add_argument("--no-kafka-ref", action="store_true", help="leave the JVM row out")
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    a = ap.parse_args(argv)
    exe = kafkatool_exe()
    with tempfile.TemporaryDirectory(prefix="kafkatool-startup-") as tmp:
        log = one_batch_segment(Path(tmp))
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "kafkatool --version": [exe, "--version"],
            "kafkatool --help": [exe, "--help"],
            "kafkatool dump one-batch.log": [exe, "dump", str(log.relative_to(tmp))],
        }
        ref = None if a.no_kafka_ref else kafka_ref_exe(a.kafka_ref)
        if ref:
            commands["kafka-ref version"] = [ref, "version"]
        cpu = measure(commands, a.runs, Path(tmp))
    rows = summary(cpu)
    print(table(rows))
    if a.json:
        typer_version = subprocess.run([sys.executable, "-c", "import typer; print(typer.__version__)"],
                                       capture_output=True, text=True).stdout.strip()
        a.json.write_text(json.dumps({
            "command": "python -m benchmarks.startup " + " ".join(argv if argv is not None else sys.argv[1:]),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(), "typer": typer_version, "cpus": os.cpu_count(),
            "load_average": os.getloadavg(), "argv": commands, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
