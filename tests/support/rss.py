"""Run a command and sample its process tree's memory: peak anonymous memory and peak mapped file pages, apart.

``ru_maxrss`` counts resident pages of mapped files too, so a command that maps a 1 GiB segment looks as
large as one that copied it. The kernel splits RSS in ``/proc/<pid>/status`` (``RssAnon``, ``RssFile``,
``RssShmem``); the sampler sums each over the process and its descendants every 10 ms and keeps the peaks.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MiB = 1 << 20


@dataclass(frozen=True, slots=True)
class Run:
    rc: int | None  # None: killed at the timeout
    stdout: str  # cut to its last 64 KiB
    stderr: str
    peak_anon: int  # bytes, summed over the tree
    peak_file: int
    seconds: float

    @property
    def hung(self) -> bool:
        return self.rc is None


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _status(pid: int) -> tuple[int, int]:
    anon = file = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1]) * 1024
                elif line.startswith(("RssFile:", "RssShmem:")):
                    file += int(line.split()[1]) * 1024
    except OSError:
        pass
    return anon, file


def run(argv: Sequence[str | os.PathLike[str]], *, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 120) -> Run:
    """Run ``argv``; stdout goes to a temp file (a record-count bomb prints millions of lines)."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        p = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                             cwd=cwd, start_new_session=True)
        peaks = [0, 0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                anon = file = 0
                for pid in _tree(p.pid):
                    a, f = _status(pid)
                    anon += a
                    file += f
                peaks[0], peaks[1] = max(peaks[0], anon), max(peaks[1], file)
                done.wait(0.01)

        t = threading.Thread(target=sample, daemon=True)
        t.start()
        try:
            rc: int | None = p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            rc = None
        finally:
            done.set()
            t.join()
        seconds = time.perf_counter() - started
        out.seek(0, os.SEEK_END)
        size = out.tell()
        out.seek(max(0, size - (64 << 10)))
        err.seek(0)
        return Run(rc, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), peaks[0],
                   peaks[1], seconds)
