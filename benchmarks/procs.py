"""One measured process: wall time, CPU time and peak memory, from the kernel's own accounting.

* **CPU** is ``ru_utime + ru_stime`` from ``os.wait4`` on the child: the process itself plus every
  descendant it reaped. A process tree whose members are not reaped by the root (Spark: the JVM and
  its Python workers) is also sampled from ``/proc/<pid>/stat`` every 50 ms (``tree=True``); the CPU
  reported is then the larger of the two figures (the samples miss at most the last 50 ms of each member).
* **Peak RSS** is ``ru_maxrss`` of the child (the largest resident set of the process or of a reaped
  descendant): interpreter, imports, resident mapped file pages and every buffer included. For trees,
  the peak of the summed PSS of all members (shared pages counted once) is recorded too.
* **Wall** is ``time.perf_counter`` around the process.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Proc:
    argv: list[str]
    rc: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float  # ru_maxrss, MB (10^6 bytes)
    tree_pss_mb: float | None  # peak summed PSS of the process tree, sampled (tree runs only)
    stdout: str
    stderr: str

    def record(self) -> dict[str, Any]:
        """What the results JSON keeps of a run (outputs cut to their tails)."""
        d = asdict(self)
        d["stdout"] = self.stdout[-400:]
        d["stderr"] = self.stderr[-400:]
        return d


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


def _cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15 of stat)
    except (OSError, IndexError, ValueError):
        return 0.0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run(argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
        tree: bool = False) -> Proc:
    """Run ``argv`` to completion, measuring it (outputs go through temp files: no pipe can stall it)."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(list(argv), stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, text=True, env=env, cwd=cwd)
        seen: dict[int, float] = {}
        peak_pss = 0
        stop = threading.Event()

        def sampler() -> None:
            nonlocal peak_pss
            while not stop.is_set():
                pids = _tree(p.pid)
                for q in pids:
                    seen[q] = max(seen.get(q, 0.0), _cpu_s(q))
                peak_pss = max(peak_pss, sum(_pss(q) for q in pids))
                stop.wait(0.05)

        th = threading.Thread(target=sampler, daemon=True) if tree else None
        if th is not None:
            th.start()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        if th is not None:
            th.join()
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        cpu = ru.ru_utime + ru.ru_stime
        if tree:
            cpu = max(cpu, sum(seen.values()))
        return Proc(list(argv), p.returncode, wall, cpu, ru.ru_maxrss * 1024 / 1e6,
                    peak_pss / 1e6 if tree else None, fo.read(), fe.read())
