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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
        timeout: float = 120, keep_stdout: bool = True) -> Run:
    """Run ``argv``; stdout goes to a temp file (a record-count bomb prints millions of lines), or to /dev/null
    without ``keep_stdout`` (a bomb's JSON lines are ~800 MB: written, flushed to disk and removed for nothing when
    only the exit code, stderr and memory are judged). ``python -m kafkatool ...`` runs forked from a fork server
    (tests/support/zygote.py) where the environment allows."""
    import tempfile

    from tests.support import zygote

    args = [str(a) for a in argv]
    with tempfile.TemporaryDirectory(prefix="rss-") as d:
        out_path, err_path = Path(d, "out") if keep_stdout else Path(os.devnull), Path(d, "err")
        started = time.perf_counter()
        if zygote.usable(args, env):
            child = zygote.spawn(args, env, cwd, out_path, err_path, timeout)
            with _sampling(child.pid) as peaks:
                rc: int | None = child.wait()
        else:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                                     start_new_session=True)
                with _sampling(p.pid) as peaks:
                    try:
                        rc = p.wait(timeout)
                    except subprocess.TimeoutExpired:
                        os.killpg(p.pid, 9)
                        p.wait()
                        rc = None
        seconds = time.perf_counter() - started
        stdout = ""
        if keep_stdout:
            with open(out_path, "rb") as out:
                out.seek(0, os.SEEK_END)
                size = out.tell()
                out.seek(max(0, size - (64 << 10)))
                stdout = out.read().decode("utf-8", "replace")
        stderr = err_path.read_bytes().decode("utf-8", "replace")
        return Run(rc, stdout, stderr, peaks[0], peaks[1], seconds)


@contextmanager
def _sampling(pid: int) -> Iterator[list[int]]:
    """Peak anonymous and mapped-file memory of ``pid``'s process tree, sampled every 10 ms while inside."""
    peaks = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            anon = file = 0
            for p in _tree(pid):
                a, f = _status(p)
                anon += a
                file += f
            peaks[0], peaks[1] = max(peaks[0], anon), max(peaks[1], file)
            done.wait(0.01)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield peaks
    finally:
        done.set()
        t.join()
