"""Every command over every input of the second hostile corpus (tests/support/hostile_corpus.py), each run in
its own process with its memory sampled (tests/support/rss.py). Whatever the input, a run:

* ends (a FIFO, a device or a symlink loop never blocks it): killed after the timeout is a failure;
* prints no traceback and no "internal error", and exits with a code the case allows;
* leaves every input file as it was (type, size, bytes, mtime; symlink targets);
* stays under ``--memory`` plus a fixed base in anonymous memory (mapped file pages are reported apart and
  bounded separately: the kernel may keep a mapped segment's pages, but never more than the file).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.hostile_corpus import CASES, COMMANDS, Case
from tests.support.paths import ROOT
from tests.support.rss import MiB, run

MEMORY = 256 * MiB  # the budget every run is given (the default: the bombs fit its decompression limit)
BASE = 150 * MiB  # interpreter, imports, extension modules: the stated fixed base above the budget
TIMEOUT = float(os.environ.get("KAFKATOOL_HOSTILE_TIMEOUT", "120"))


def _argv(command: str, case: Case, path: Path, out: Path) -> list[str] | None:
    log_dir = path if case.kind == "logdir" else path.parent
    common = ["--memory", f"{MEMORY // MiB}MiB"]
    table: dict[str, list[str]] = {
        "dump": ["dump", str(path)],
        "dump-deep": ["dump", str(path), "--deep", "--verify", "--format", "json"],
        "reindex": ["reindex-time", str(path)],
        "recovery-report": ["reindex-time", str(path), "--recovery-report"],
        "reindex-output": ["reindex-time", str(path), "--output", str(out / "reindexed")],
        "fetch-sim": ["fetch-sim", str(path)],
        "spark-scan": ["spark-scan", str(path), "--engine", "local-processes", "--format", "json"],
        "downconvert": ["downconvert", str(path), str(out / "down"), "--to-magic", "1", "--zstd-to", "lz4"],
        "upconvert": ["upconvert", str(path), str(out / "up")],
        "canary-plan": ["canary", "plan", str(log_dir)],
        "canary-run": ["canary", "run", str(log_dir), "-p", "*", "-w", str(out / "work")],
    }
    if command.startswith("canary") and case.kind == "file":
        return None  # canary takes a log dir
    return [sys.executable, "-m", "kafkatool", *table[command], *common]


def _snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """What a run must not change: every entry under root, not following symlinks."""
    out: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            key = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                if st.st_size <= 64 * MiB:
                    digest = hashlib.sha256(p.read_bytes()).hexdigest()
                else:
                    digest = "large"
                out[key] = ("file", st.st_size, st.st_mtime_ns, digest)
            else:
                out[key] = (stat.S_IFMT(st.st_mode),)
    return out


_built: dict[str, tuple[Path, Path]] = {}


def _input(case: Case, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(root, path) of the case's input, built once per session: every run must leave it as it was. A slow case's
    (a bomb: seconds of building) is built once for all of the run's xdist workers, which only read it, unless
    its runs write inside it."""
    if case.name not in _built:
        if not case.slow or case.outputs_inside:
            root = tmp_path_factory.mktemp(f"hostile-{case.name}")
            _built[case.name] = (root, case.build(root))
        else:
            _built[case.name] = _shared_input(case, tmp_path_factory)
    return _built[case.name]


def _shared_input(case: Case, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "hostile-shared"
    shared.mkdir(exist_ok=True)
    root = shared / case.name
    done = shared / f"{case.name}.path"
    with open(shared / f"{case.name}.building", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds it, the others wait for it
        if not done.exists():
            root.mkdir()
            path = case.build(root)
            done.write_text(str(path))
    return root, Path(done.read_text())


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else [])
                                  for c in CASES])
def test_hostile_input(case: Case, command: str, tmp_path: Path,
                       tmp_path_factory: pytest.TempPathFactory) -> None:
    root, path = _input(case, tmp_path_factory)
    argv = _argv(command, case, path, (path if path.is_dir() else path.parent) if case.outputs_inside else tmp_path)
    if argv is None:
        return
    before = _snapshot(root)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200")
    r = run(argv, env=env, cwd=tmp_path, timeout=TIMEOUT, keep_stdout=False)  # stdout is not judged here
    where = f"{case.name} / {command}: exit {r.rc}\n{r.stderr[-3000:]}"
    assert not r.hung, f"hung (killed after {TIMEOUT} s): " + where
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, where
    assert r.rc in case.allowed(command), where
    assert _snapshot(root) == before, "an input changed: " + where
    assert r.peak_anon <= MEMORY + BASE, f"peak anonymous memory {r.peak_anon / MiB:.0f} MiB: " + where
    if case.mapped_bound:
        assert r.peak_file <= MEMORY, f"peak mapped file pages {r.peak_file / MiB:.0f} MiB: " + where
