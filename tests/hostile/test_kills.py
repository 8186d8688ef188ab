"""Writers SIGKILLed from outside at random moments (issue 23), not only at the injected crash points.

Each command runs once unkilled (the reference: what "new" means, and how long its writing lasts), then a few times
killed with SIGKILL (the whole process group, workers included) after a seeded random delay into its writing (from
the moment the ``.lock`` of the log dir it writes into appears: every run here writes into a broker's log dir, its
input's or another's). After each kill:

* every file is old or new, never torn: an in-place rewrite leaves each index as it was or as rebuilt (its ``.bak``
  the old bytes), a converter's or scanner's output holds under its final names only complete partitions and files
  equal to the reference's, canary apply/rollback leave each segment file the original's or the canary's;
* inputs that are not rewritten on purpose are unchanged;
* a second run completes the job (``--resume`` for the converters) to exactly the reference's result, and leaves no
  ``.lock`` where there was none: the one a killed run created is removed by the run that completes.

Timing only places the kills (seeded); nothing asserts a duration. Every subprocess has a timeout.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkatool.util.atomic import TEMP_PREFIX, is_temp_name
from tests.support.canary_dirs import small_dir
from tests.support.paths import ROOT
from tests.support.tree_state import changes, snapshot

KILLS = 3  # per command: a handful, so that the suite stays fast
TIMEOUT = 300
SEED = 23


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    for k in ("KAFKATOOL_CRASH_AFTER", "KAFKATOOL_CRASH_PID", "KAFKATOOL_CRASH_SIGNAL", "KAFKATOOL_CRASH_COUNT"):
        env.pop(k, None)
    return env


def _popen(args: list[object]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "kafkatool", *map(str, args), "-q"], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _run(args: list[object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkatool", *map(str, args), "-q"], env=_env(),
                          capture_output=True, text=True, timeout=TIMEOUT)


def _wait_for(p: subprocess.Popen[bytes], begun: Callable[[], bool]) -> float:
    """Poll until the run has begun writing (``begun``) or ended; the time it did."""
    deadline = time.monotonic() + TIMEOUT
    while not begun() and p.poll() is None:
        assert time.monotonic() < deadline, "the run neither began writing nor ended"
        time.sleep(0.002)
    return time.monotonic()


def _timed(args: list[object], begun: Callable[[], bool]) -> float:
    """The reference run: how long its writing lasts (from ``begun`` to its end)."""
    p = _popen(args)
    t0 = _wait_for(p, begun)
    _, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0, err.decode()
    return max(time.monotonic() - t0, 0.01)


def _killed(args: list[object], begun: Callable[[], bool], delay: float) -> int:
    """Run, wait until it has begun writing, sleep ``delay``, SIGKILL its process group; its exit code."""
    p = _popen(args)
    _wait_for(p, begun)
    time.sleep(delay)
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it had finished: an end state is a state too
    p.communicate(timeout=TIMEOUT)
    return p.returncode


def _files(root: Path) -> dict[str, str]:
    """Every file under ``root`` by SHA-256, except kafkatool's temp files and dirs (a killed run may leave those:
    names no broker or reader takes)."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(TEMP_PREFIX)]
        for n in names:
            if not n.startswith(TEMP_PREFIX):
                p = Path(dirpath) / n
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _no_temp(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(f"{TEMP_PREFIX}*")]


def _delays(name: str, span: float) -> list[float]:
    rng = random.Random(f"{SEED}-{name}")
    return [rng.uniform(0, span) for _ in range(KILLS)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small broker log dir (meta.properties, checkpoints, no .lock): v0, v1 and v2 partitions of many segments."""
    return small_dir(tmp_path_factory.mktemp("kills") / "logs")


def _stale(logs: Path) -> None:
    """Every .timeindex with a stale entry after its real ones: reindex --in-place has a file to replace in each
    segment."""
    for ti in sorted(logs.glob("*/*.timeindex")):
        ti.write_bytes(ti.read_bytes() + bytes(12))


# ------------------------------------------------------------------------------------------------ reindex --in-place


def test_reindex_in_place(pristine: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(pristine, old)
    _stale(old)
    ref = tmp_path / "ref"
    shutil.copytree(old, ref)
    lock = ref / ".lock"
    span = _timed(["reindex-time", "--in-place", ref], lock.exists)
    new = _files(ref)
    before = _files(old)
    assert new != before and not lock.exists()
    for i, delay in enumerate(_delays("reindex", span)):
        live = tmp_path / f"live{i}"
        shutil.copytree(old, live)
        _killed(["reindex-time", "--in-place", live], (live / ".lock").exists, delay)
        for rel, digest in _files(live).items():
            if rel == ".lock":
                continue  # the killed run's, removed by the next
            if rel.endswith(".bak"):
                assert digest == before[rel[:-4]], f"{rel}: a backup that is not the old file"
            else:
                assert digest in (before[rel], new[rel]), f"{rel}: neither the old nor the rebuilt file"
        r = _run(["reindex-time", "--in-place", live])
        assert r.returncode == 0, r.stderr
        assert _files(live) == new and not _no_temp(live)
        assert not (live / ".lock").exists(), "a killed run's .lock stayed"


# ------------------------------------------------------------------------------------------------ downconvert/upconvert


CONVERTERS: dict[str, Callable[[Path, Path], list[object]]] = {
    "downconvert": lambda src, dst: ["downconvert", "--to-magic", "1", "--zstd-to", "lz4", src, dst],
    "upconvert": lambda src, dst: ["upconvert", src, dst],
}


@pytest.mark.parametrize("command", sorted(CONVERTERS))
def test_converter(pristine: Path, tmp_path: Path, command: str) -> None:
    """DST inside another (stopped) broker's log dir: the run holds that log dir's .lock while it writes."""
    args = CONVERTERS[command]
    target = tmp_path / "target"
    target.mkdir()
    (target / "meta.properties").write_text("version=1\n")
    state = snapshot(pristine)
    lock = target / ".lock"
    span = _timed(args(pristine, target / "ref"), lock.exists)
    ref = _files(target / "ref")
    assert "_SUCCESS" in ref and not lock.exists()
    for i, delay in enumerate(_delays(command, span)):
        dst = target / f"out{i}"
        _killed(args(pristine, dst), lock.exists, delay)
        got = _files(dst)
        for rel, digest in got.items():  # whatever has a final name is complete and equal to the reference
            assert ref.get(rel) == digest, f"{rel}: a partial or different file under its final name"
        parts = {rel.split(os.sep, 1)[0] for rel in got if os.sep in rel}
        for part in parts:
            assert {k: v for k, v in got.items() if k.startswith(part + os.sep)} == {
                k: v for k, v in ref.items() if k.startswith(part + os.sep)}, f"{part}: a partition dir not whole"
        if "_SUCCESS" not in got and dst.exists() and any(not is_temp_name(n) for n in os.listdir(dst)):
            again = _run(args(pristine, dst))  # without --resume: refused, said so, nothing changed
            assert again.returncode == 2 and "interrupted conversion" in again.stderr, again.stderr
        # (killed while writing its run file, a run leaves only that temp file: the next run takes DST as empty)
        r = _run([*args(pristine, dst), "--resume"])
        assert r.returncode == 0, r.stderr
        assert _files(dst) == ref and not _no_temp(dst)
        assert not lock.exists(), "a killed run's .lock stayed"
    assert changes(state, snapshot(pristine)) == []


# ------------------------------------------------------------------------------------------------ canary apply/rollback


def test_canary_apply_and_rollback(pristine: Path, tmp_path: Path) -> None:
    live = tmp_path / "live"
    shutil.copytree(pristine, live)
    w = tmp_path / "w"
    parts = ["old-0", "v0-0", "lat-0"]
    assert _run(["canary", "run", live, "-p", ",".join(parts), "-w", w]).returncode == 0
    assert _run(["canary", "verify", w]).returncode == 0
    original = {p: _files(live / p) for p in parts}
    lock = live / ".lock"
    span = {"apply": _timed(["canary", "apply", w], lock.exists)}
    canary = {p: _files(live / p) for p in parts}
    assert canary != original
    span["rollback"] = _timed(["canary", "rollback", w], lock.exists)
    assert {p: _files(live / p) for p in parts} == original
    rng = random.Random(f"{SEED}-canary")
    for i in range(KILLS):
        for op, target in (("apply", canary), ("rollback", original)):
            _killed(["canary", op, w], lock.exists, rng.uniform(0, span[op]))
            for p in parts:
                for name, digest in _files(live / p).items():
                    if name.endswith(".swap"):
                        name = name[:-len(".swap")]
                    assert digest in (original[p].get(name), canary[p].get(name)), (
                        f"kill {i} of {op}: {p}/{name} is neither the original's nor the canary's")
            r = _run(["canary", op, w])
            assert r.returncode == 0, r.stderr
            assert {p: _files(live / p) for p in parts} == target and not _no_temp(live)
            assert not lock.exists(), f"a killed {op}'s .lock stayed"


def test_canary_apply_killed_between_making_the_lock_and_journaling_it(pristine: Path, tmp_path: Path) -> None:
    """The window that made tests/canary/test_apply.py::test_kill_9_at_random_times flaky: a kill after the .lock
    was created but before the journal recorded it left a .lock no later run claimed. The .lock is born marked as
    kafkatool's, so the run that completes the apply removes it."""
    live = tmp_path / "live"
    shutil.copytree(pristine, live)
    w = tmp_path / "w"
    assert _run(["canary", "run", live, "-p", "old-0", "-w", w]).returncode == 0
    assert _run(["canary", "verify", w]).returncode == 0
    original = _files(live / "old-0")
    # the first _file_id call of a run with no interrupted journal is the one recording the .lock it just made
    script = (f"import os, sys; sys.path.insert(0, {str(ROOT)!r})\n"
              "import kafkatool.canary.apply as a\n"
              "a._file_id = lambda _p: os.kill(os.getpid(), 9)\n"
              f"a.swap({str(w)!r}, 'apply')\n")
    r = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True, timeout=TIMEOUT)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert (live / ".lock").exists() and _files(live / "old-0") == original  # killed holding it, nothing swapped
    r2 = _run(["canary", "apply", w])
    assert r2.returncode == 0, r2.stderr
    assert _files(live / "old-0") != original
    assert not (live / ".lock").exists(), "the killed apply's .lock stayed"


# ------------------------------------------------------------------------------------------------ spark-scan --output


def test_spark_scan_output(pristine: Path, tmp_path: Path) -> None:
    """The Parquet figures into another (stopped) broker's log dir: each file whole or absent after a kill."""
    target = tmp_path / "target"
    target.mkdir()
    (target / "meta.properties").write_text("version=1\n")
    state = snapshot(pristine)

    def args(out: Path) -> list[object]:
        return ["spark-scan", "--engine", "local-processes", "-j", "2", "--output", out, pristine]

    lock = target / ".lock"  # taken right before the files are written, after the scan
    span = _timed(args(target / "ref"), lock.exists)
    ref = _files(target / "ref")
    assert ref
    for i, delay in enumerate(_delays("spark-scan", span)):
        out = target / f"out{i}"
        _killed(args(out), lock.exists, delay)
        for rel, digest in _files(out).items():
            assert ref[rel] == digest, f"{rel}: a torn Parquet file"
        r = _run(args(out))  # independent files: the next run writes them all
        assert r.returncode == 0, r.stderr
        assert _files(out) == ref and not _no_temp(out)
        assert not lock.exists(), "a killed run's .lock stayed"
    assert changes(state, snapshot(pristine)) == []
