"""Writers under ``kill -9``: the real CLI SIGKILLs itself at its k-th durable step (``KAFKATOOL_CRASH_AFTER=k``,
:mod:`kafkatool.util.crash`), for every k until a run completes. After each kill:

* every input file is byte-identical (SHA-256, size, mtime, mode, inode: :mod:`tests.support.tree_state`);
* the output is absent or complete, never half: every file under a name a broker or a reader would take (no
  ``.kafkatool-tmp-*`` component) equals the same file of an unkilled reference run, and what must appear whole
  appears whole (a converted partition dir, the export dataset, a canary work dir with its manifest);
* a second run is told what is left (an interrupted DST or work dir is refused, exit 2, nothing changed) or, where
  the output is a set of independent files (spark-scan --output), it completes.

downconvert/upconvert/canary run write through the convert engine (a partition dir renamed into place whole),
spark-scan --export-records through a staging dir renamed into place whole, --output one file at a time.
canary apply and rollback have their own kill tests (tests/canary/test_apply.py), reindex-time --in-place too
(tests/reindex/test_kill.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkatool.util.atomic import TEMP_PREFIX
from kafkatool.util.crash import COUNT_ENV, CRASH_ENV
from tests.support.canary_dirs import small_dir
from tests.support.cli import CliResult, run_cli
from tests.support.tree_state import changes, snapshot

pytestmark = pytest.mark.slow


def _run_env(args: list[object], **extra: str) -> CliResult:
    """A run in a process of its own (run_cli forks one for KAFKATOOL_CRASH_*): the crash point kills it."""
    return run_cli(*map(str, args), "-q", env=extra, subprocess=True)


def _visible(root: Path) -> dict[str, str]:
    """Files under ``root`` a reader would take: none with a kafkatool temp component in its path."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(TEMP_PREFIX)]
        for f in files:
            if f.startswith(TEMP_PREFIX):
                continue
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _temp_leftovers(root: Path) -> list[str]:
    if not root.exists():
        return []
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.name.startswith(TEMP_PREFIX)]


def _by_top(files: dict[str, str]) -> dict[str, dict[str, str]]:
    groups: dict[str, dict[str, str]] = {}
    for rel, h in files.items():
        top = rel.split(os.sep, 1)[0]
        groups.setdefault(top, {})[rel] = h
    return groups


def _whole_partitions(out: Path, ref: dict[str, str]) -> int:
    """Each partition dir under ``out`` is absent or identical to the reference's; returns how many are there."""
    got = _by_top(_visible(out))
    want = _by_top(ref)
    for name, files in got.items():
        assert files == want[name], f"{name}: a partial or different partition dir under a loadable name"
    for leftover in _temp_leftovers(out):
        assert leftover.split(os.sep, 1)[0].endswith(".tmp"), leftover  # a name no broker parses
    return len(got)


@dataclass
class Writer:
    args: Callable[[Path, Path], list[object]]  # (source log dir, output path) -> CLI arguments
    check: Callable[[Path, dict[str, str]], None]  # (output path, reference files) -> asserts after a kill
    again_refused: bool  # a second run over the killed output is refused (exit 2) unless the output is absent


def _check_convert(out: Path, ref: dict[str, str]) -> None:
    _whole_partitions(out, ref)


def _check_canary(w: Path, ref: dict[str, str]) -> None:
    got = _visible(w)
    ref_files = {k: v for k, v in ref.items() if k != "manifest.json"}
    if "manifest.json" in got:  # written last: the run is complete, and verify proves it
        json.loads((w / "manifest.json").read_text())
        got.pop("manifest.json")
        assert got == ref_files
        r = run_cli("canary", "verify", w, "-q")
        assert r.returncode == 0, r.stderr
    else:
        _whole_partitions(w / "canary", {k.split(os.sep, 1)[1]: v for k, v in ref_files.items()
                                         if k.startswith("canary" + os.sep)})
        r = run_cli("canary", "verify", w)  # an interrupted run is never taken for a canary
        assert r.returncode == 2 and "manifest" in r.stderr, r.stderr


def _check_export(out: Path, ref: dict[str, str]) -> None:
    got = _visible(out)
    assert got in ({}, ref), "a partial export dataset under its final name"
    assert "_SUCCESS" in got or not got
    assert not _temp_leftovers(out)


def _check_stats(out: Path, ref: dict[str, str]) -> None:
    got = _visible(out)
    for rel, h in got.items():
        assert ref[rel] == h, f"{rel}: a torn Parquet file"


WRITERS: dict[str, Writer] = {
    "downconvert": Writer(lambda src, out: ["downconvert", "--to-magic", "0", src / "lat-0", out],
                          _check_convert, True),
    "downconvert-log-dir": Writer(lambda src, out: ["downconvert", "--to-magic", "1", src, out],
                                  _check_convert, True),
    "upconvert": Writer(lambda src, out: ["upconvert", src / "v0-0", out], _check_convert, True),
    "canary-run": Writer(lambda src, out: ["canary", "run", src, "-p", "v0-0", "-w", out], _check_canary, True),
    "spark-scan-output": Writer(lambda src, out: ["spark-scan", "--engine", "local-processes", "-j", "1",
                                                  "--output", out, src],
                                _check_stats, False),
    "spark-scan-export": Writer(lambda src, out: ["spark-scan", "--engine", "local-processes", "-j", "1",
                                                  "--export-records", out, src / "old-0"],
                                _check_export, True),
}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dir(tmp_path_factory.mktemp("kill") / "logs")


@pytest.mark.parametrize("case", sorted(WRITERS))
def test_killed_at_every_step_inputs_intact_output_absent_or_whole(source: Path, tmp_path: Path, case: str) -> None:
    wr = WRITERS[case]
    src = tmp_path / "src"
    shutil.copytree(source, src, copy_function=shutil.copy2)
    ref_out = tmp_path / "ref"
    count = tmp_path / "points"
    r = _run_env(wr.args(src, ref_out), **{COUNT_ENV: str(count)})
    assert r.returncode == 0, r.stderr
    n = int(count.read_text())
    assert n >= 3, f"only {n} durable steps: the crash points are not reached"
    ref = _visible(ref_out)
    assert ref, "the reference run wrote nothing"
    before = snapshot(src)

    # Kill points: the first steps, the last ones (the rename into place, the manifest) and some between.
    points = sorted({1, 2, n // 3, n // 2, (2 * n) // 3, n - 1, n} - {0})
    for k in points:
        out = tmp_path / f"out{k}"
        r = _run_env(wr.args(src, out), **{CRASH_ENV: str(k)})
        assert changes(before, snapshot(src)) == [], f"input changed by the run killed at step {k}"
        assert r.returncode == -9, (k, r.returncode, r.stderr)
        wr.check(out, ref)
        if wr.again_refused and out.exists() and any(out.iterdir()):
            state = snapshot(out)
            again = run_cli(*wr.args(src, out))
            assert again.returncode == 2 and "Traceback" not in again.stderr, (k, again.returncode, again.stderr)
            assert changes(state, snapshot(out)) == []
        elif not wr.again_refused:
            again = run_cli(*wr.args(src, out), "-q")  # independent files: the next run completes them
            assert again.returncode == 0, again.stderr
            assert _visible(out) == ref
        shutil.rmtree(out, ignore_errors=True)
    out = tmp_path / "complete"
    r = _run_env(wr.args(src, out), **{CRASH_ENV: str(n + 1)})  # one past the last step: completes
    assert r.returncode == 0, r.stderr
    assert changes(before, snapshot(src)) == []
    done = _visible(out)
    if case == "canary-run":  # its manifest holds times and paths
        done.pop("manifest.json")
        ref.pop("manifest.json")
    assert done == ref


def test_every_writer_leaves_its_inputs_byte_identical(source: Path, tmp_path: Path) -> None:
    """Complete runs of every command that writes somewhere else than its input: the input tree is unchanged
    (content, mtime, mode, inode; no file added or removed)."""
    src = tmp_path / "src"
    shutil.copytree(source, src, copy_function=shutil.copy2)
    before = snapshot(src)
    runs: list[list[object]] = [
        *(wr.args(src, tmp_path / f"out-{name}") for name, wr in WRITERS.items()),
        ["reindex-time", "--output", tmp_path / "mirror", src],
        ["fetch-sim", "--fetch-version", "3", "--out", tmp_path / "resp.bin", src / "old-0"],
        ["fetch-sim", "--sweep-chunk-sizes", "16K,64K", "--plot", tmp_path / "p.png", src / "old-0"],
        ["dump", "--deep", "--verify", src],
        ["canary", "plan", src],
    ]
    for args in runs:
        r = run_cli(*args, "-q")
        assert r.returncode in (0, 1), (args, r.returncode, r.stderr)
        assert changes(before, snapshot(src)) == [], args
