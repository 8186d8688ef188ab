"""Benchmark: peak memory of whole commands against the run's memory budget (``kafkatool --memory``).

For each budget and each command, one ``python -m kafkatool --memory B ...`` process over a multi-GB
partition dir; its peak RSS is ``ru_maxrss`` from ``os.wait4`` (the interpreter, every mapped file page
and every buffer included). A row holds when the peak stays under the budget. With ``--jobs`` rows
(``reindex-time -j 2``) the run is a process tree: the figure is then the peak of the tree's summed
PSS (proportional set size: pages shared by the forked workers counted once, as a cgroup charges them),
sampled every 20 ms from ``/proc/<pid>/smaps_rollup``, next to the largest single RSS.

Data (``--generate``, or when missing): ``kafkatool sample DIR --profile bench --codec lz4
--partition-bytes SIZE --segment-bytes 512MiB``: one partition of v2 lz4 batches (16 records of 1 KiB
values, half compressible) in 512 MiB segments with their indexes, as a broker would have left them.
Delete it afterwards with ``--clean`` (it is never in git).

    python -m benchmarks memory --data bench-data/budget --size 2GiB --budgets 128MiB,256MiB,512MiB
    python benchmarks/bench_memory.py ...   (the same, standalone)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.data import DEFAULT_DATA_DIR  # noqa: E402
from benchmarks.procs import _pss, _tree  # noqa: E402
from kafkatool.reindex.engine import working_set  # noqa: E402
from kafkatool.util import budget  # noqa: E402
from kafkatool.util.units import format_size, parse_size  # noqa: E402

MiB = 1 << 20
ROWS = ("dump", "reindex", "downconvert", "fetch-sim", "reindex-j2")


@dataclass
class Result:
    row: str
    budget: int
    argv: list[str]
    rc: int
    peak_rss: int  # ru_maxrss of the command's process (bytes)
    peak_tree_pss: int  # summed PSS of the process tree, sampled (bytes; 0 when not sampled)
    wall_s: float
    cpu_s: float
    division: dict[str, int]
    stderr_tail: str

    @property
    def peak(self) -> int:
        return self.peak_tree_pss if self.peak_tree_pss else self.peak_rss

    @property
    def holds(self) -> bool:
        return self.rc == 0 and self.peak <= self.budget

    @property
    def refused(self) -> bool:
        """A budget too small for the work: exit 2 saying the minimum, before any work (also a pass)."""
        return self.rc == 2 and "the minimum is" in self.stderr_tail

    @property
    def verdict(self) -> str:
        if self.refused:
            return "refused: " + self.stderr_tail.rsplit("the minimum is", 1)[1].strip().splitlines()[0]
        return "yes" if self.holds else "NO"


def generate(data: Path, size: str) -> Path:
    logs = data / "logs"
    part = logs / "bench-0"
    if part.is_dir():
        return part
    data.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "kafkatool", "sample", str(logs), "--profile", "bench", "--codec", "lz4",
           "--partition-bytes", size, "--segment-bytes", "512MiB"]
    print("generating:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, env=_env(), stdout=subprocess.DEVNULL)
    return part


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop(budget.ENV, None)
    return env


def commands(part: Path, out: Path) -> dict[str, list[str]]:
    return {
        "dump": ["dump", "--deep", "--verify", "--summary-only", str(part)],
        "reindex": ["reindex-time", str(part)],
        "downconvert": ["downconvert", "--to-magic", "1", "--format", "json", str(part), str(out)],
        # The whole first segment in one fetch: a 512 MiB slice, lazily converted and analysed.
        "fetch-sim": ["fetch-sim", str(part), "--fetch-version", "3", "--partition-max-bytes", "1GiB",
                      "--fetch-max-bytes", "1GiB", "--broker-fetch-max-bytes", "1GiB"],
        "reindex-j2": ["reindex-time", "--jobs", "2", str(part)],
    }


def run(row: str, argv: list[str], total: int, sample_tree: bool) -> Result:
    full = [sys.executable, "-m", "kafkatool", "--memory", format_size(total), *argv]
    t0 = time.perf_counter()
    proc = subprocess.Popen(full, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_tree = 0
    stop = threading.Event()

    def sampler() -> None:
        nonlocal peak_tree
        while not stop.is_set():
            peak_tree = max(peak_tree, sum(_pss(p) for p in _tree(proc.pid)))
            stop.wait(0.02)

    th = threading.Thread(target=sampler, daemon=True) if sample_tree else None
    if th is not None:
        th.start()
    assert proc.stderr is not None
    err = proc.stderr.read()  # drained while it runs (a full pipe would stall it)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    if th is not None:
        th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    workers = 2 if row.endswith("-j2") else 1
    working = working_set([p.stat().st_size for p in Path(argv[-1]).glob("*.log")], 4096) \
        if argv[0] == "reindex-time" else 0
    try:
        division = budget.plan(total, workers=workers, working_bytes=working).as_dict()
    except Exception:  # too small: the command said so (rc 2)
        division = {"window_bytes": 0, "decompress_limit": 0}
    return Result(row, total, full[1:], proc.returncode, usage.ru_maxrss * 1024, peak_tree, wall,
                  usage.ru_utime + usage.ru_stime, division, err[-400:])


def table(results: list[Result]) -> str:
    lines = ["| command | --memory | peak MiB | of budget | holds | wall s | CPU s | window | decompression limit |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in results:
        kind = " (tree PSS)" if r.peak_tree_pss else ""
        lines.append(f"| {r.row} | {format_size(r.budget)} | {r.peak / MiB:.1f}{kind} | {r.peak / r.budget:.0%} | "
                     f"{r.verdict} | {r.wall_s:.1f} | {r.cpu_s:.1f} | "
                     f"{format_size(r.division['window_bytes'])} | {format_size(r.division['decompress_limit'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks memory", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR / "budget")
    ap.add_argument("--size", default="2GiB", help="partition size to generate (default 2GiB)")
    ap.add_argument("--budgets", default="128MiB,256MiB,512MiB")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma list of {', '.join(ROWS)}")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    ap.add_argument("--clean", action="store_true", help="delete the generated data at the end")
    a = ap.parse_args(argv)
    part = generate(a.data, a.size)
    out = a.data / "out"
    cmds = commands(part, out)
    rows = [r.strip() for r in a.rows.split(",") if r.strip()]
    unknown = set(rows) - set(cmds)
    if unknown:
        ap.error(f"unknown rows: {', '.join(sorted(unknown))}")
    size = sum(p.stat().st_size for p in part.glob("*.log"))
    print(f"data: {part} ({format_size(size)} of .log in {len(list(part.glob('*.log')))} segments)", file=sys.stderr)
    results = []
    for total in [parse_size(x.strip()) for x in a.budgets.split(",")]:
        for row in rows:
            shutil.rmtree(out, ignore_errors=True)
            r = run(row, cmds[row], total, sample_tree=row.endswith("-j2"))
            shutil.rmtree(out, ignore_errors=True)
            results.append(r)
            print(f"{row:12} {format_size(total):>7}: rc {r.rc}, peak {r.peak / MiB:.1f} MiB "
                  f"({r.peak / total:.0%}), {r.wall_s:.1f} s" + ("" if r.rc == 0 else f"\n{r.stderr_tail}"),
                  file=sys.stderr)
    print(table(results))
    if a.json:
        a.json.write_text(json.dumps({"data": str(part), "bytes": size, "results": [
            {**asdict(r), "peak": r.peak, "holds": r.holds, "refused": r.refused} for r in results]}, indent=1))
    if a.clean:
        shutil.rmtree(a.data / "logs", ignore_errors=True)
    return 0 if all(r.holds or r.refused for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
