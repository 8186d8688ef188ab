"""Outputs (issue 23, items 3 and 8): no output aliases an input, a run leaves no ``.lock`` and no empty output dir
behind, and a sparse file is copied sparse.

* Every output option of every command that reads an input, aimed at the input (onto a segment, an index, a
  ``.timeindex``; into the partition dir, the log dir; through symlinks): exit 2, one line naming the option and
  the input, and nothing written or changed anywhere (the whole tree hashed before and after, inodes and mtimes
  included, so not even a ``.lock`` or an empty dir may appear).
* A full disk (``RLIMIT_FSIZE`` in the child: every write past a byte fails with EFBIG, as ENOSPC would) stops
  every writer with exit 2 and leaves none of the output dirs it made, parents included.
* ``canary run`` copies an 8 GiB sparse ``.index`` in its size of data, not 8 GiB; ``upconvert`` carries a sparse
  ``.snapshot`` sparse.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main

from kafkatool.commands.app import get_app
from tests.support.canary_dirs import small_dir
from tests.support.cli import run_cli
from tests.support.paths import ROOT
from tests.support.tree_state import changes, snapshot


@dataclass
class Tree:
    base: Path
    logs: Path  # a broker's log dir (meta.properties, checkpoints): the inputs

    def seg(self, part: str, suffix: str = ".log") -> Path:
        return sorted((self.logs / part).glob("*.log"))[0].with_suffix(suffix)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    base = tmp_path_factory.mktemp("outputs")
    logs = small_dir(base / "logs")
    (base / "to-logs").symlink_to(logs)  # a symlink to the log dir
    (base / "to-old").symlink_to(logs / "old-0")  # and to a partition dir
    os.link(sorted((logs / "v0-0").glob("*.log"))[0], base / "hard.log")  # another name of a segment
    shutil.copytree(logs / "old-0", base / "scratch" / "old-0")  # a partition copied into a plain dir
    return Tree(base, logs)


# (option shown, the arguments, what the line names as the input) per case: every output option, aimed at an input
CASES: dict[str, tuple[str, Callable[[Tree], list[object]], str]] = {
    "fetch-sim-out-onto-its-segment": ("--output", lambda t: [
        "fetch-sim", t.seg("old-0"), "--output", t.seg("old-0")], "is the input file"),
    "fetch-sim-out-onto-an-index": ("--output", lambda t: [
        "fetch-sim", t.logs / "old-0", "--output", t.seg("old-0", ".index")], "lies inside the input partition dir"),
    "fetch-sim-out-onto-a-hard-link": ("--output", lambda t: [
        "fetch-sim", t.base / "hard.log", "--topic", "v0", "--output", t.seg("v0-0")], "is the input file"),
    "fetch-sim-out-via-a-symlink-to-the-log-dir": ("--output", lambda t: [
        "fetch-sim", t.logs / "old-0", "--output", t.base / "to-logs" / "resp.bin"], "lies inside the log dir"),
    "fetch-sim-out-is-the-symlinked-log-dir": ("--output", lambda t: [
        "fetch-sim", t.logs / "old-0", "--output", t.base / "to-logs"], "is a directory"),
    "fetch-sim-plot-onto-a-timeindex": ("--plot", lambda t: [
        "fetch-sim", t.logs / "old-0", "--sweep-chunk-sizes", "16K", "--plot", t.seg("old-0", ".timeindex")],
        "lies inside the input partition dir"),
    "fetch-sim-plot-via-a-symlinked-partition": ("--plot", lambda t: [
        "fetch-sim", t.logs / "old-0", "--sweep-chunk-sizes", "16K", "--plot", t.base / "to-old" / "p.png"],
        "lies inside the input partition dir"),
    "reindex-output-the-log-dir-of-its-partition": ("--output", lambda t: [
        "reindex-time", "--output", t.logs, t.logs / "old-0"], "is the log dir"),
    "reindex-output-the-log-dir-of-its-segment": ("--output", lambda t: [
        "reindex-time", "--output", t.logs, t.seg("old-0")], "is the log dir"),
    "reindex-output-whose-mirror-is-its-partition": ("--output", lambda t: [  # DIR/old-0 would be the input itself
        "reindex-time", "--output", t.base / "scratch", t.base / "scratch" / "old-0"],
        "(in {base}/scratch) is the input partition dir"),
    "reindex-output-inside-its-partition": ("--output", lambda t: [
        "reindex-time", "--output", t.logs / "old-0" / "mirror", t.logs / "old-0"],
        "lies inside the input partition dir"),
    "reindex-output-inside-its-log-dir": ("--output", lambda t: [
        "reindex-time", "-o", t.logs / "mirror", t.logs], "lies inside the input log dir"),
    "spark-scan-output-inside-its-log-dir": ("--output", lambda t: [
        "spark-scan", "--engine", "local-processes", "--output", t.logs / "stats", t.logs],
        "lies inside the input log dir"),
    "spark-scan-export-records-beside-its-partition": ("--export-records", lambda t: [
        "spark-scan", "--engine", "local-processes", "--export-records", t.logs / "exp", t.logs / "old-0"],
        "lies inside the log dir"),
    "spark-scan-export-records-via-a-symlink": ("--export-records", lambda t: [
        "spark-scan", "--engine", "local-processes", "--export-records", t.base / "to-old" / "exp", t.logs],
        "of the input log dir"),
    "downconvert-dst-inside-its-log-dir": ("DST", lambda t: [
        "downconvert", "--to-magic", "1", t.logs / "lat-0", t.logs / "converted"], "lies inside the log dir"),
    "downconvert-dst-is-the-log-dir": ("DST", lambda t: [
        "downconvert", "--to-magic", "1", t.logs / "lat-0", t.logs], "is the log dir"),
    "downconvert-dst-whose-partition-is-its-input": ("DST", lambda t: [
        "downconvert", "--to-magic", "1", t.base / "scratch" / "old-0", t.base / "scratch"],
        "(in {base}/scratch) is the input partition dir"),
    "upconvert-dst-inside-its-segments-partition": ("DST", lambda t: [
        "upconvert", t.seg("v0-0"), t.logs / "v0-0" / "up"], "lies inside the partition dir"),
    "upconvert-dst-via-a-symlink-to-the-log-dir": ("DST", lambda t: [
        "upconvert", t.logs, t.base / "to-logs" / "up"], "lies inside the input log dir"),
    "canary-run-workdir-inside-the-log-dir": ("--workdir", lambda t: [
        "canary", "run", t.logs, "-p", "v0-0", "-w", t.logs / "w"], "lies inside the input log dir"),
    "canary-run-workdir-in-a-partition-via-a-symlink": ("--workdir", lambda t: [
        "canary", "run", t.logs, "-p", "v0-0", "--workdir", t.base / "to-old" / "w"], "lies inside the partition dir"),
}

# Output options with no input to alias: sample writes a new log dir from nothing, man its pages; and the work dir
# that canary verify, apply, rollback and rehearse are given is their input (their state and what they swap in or
# load is in it; rehearse writes only its report there, its broker's copies go to --temp-dir).
NO_INPUT = {("sample", "directory"), ("man", "output"), ("canary verify", "workdir"), ("canary apply", "workdir"),
            ("canary rollback", "workdir"), ("canary rehearse", "workdir")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_aimed_at_an_input_is_refused_and_nothing_is_written(tree: Tree, case: str) -> None:
    option, args, names = CASES[case]
    before = snapshot(tree.base)
    r = run_cli(*args(tree), timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert re.match(rf"kafkatool [a-z -]+: error: {re.escape(option)}: ", lines[0]), lines[0]
    assert names.format(base=tree.base) in lines[0] and "nothing was written" in lines[0], lines[0]
    assert str(tree.base) in lines[0]  # the input (or the output resolved into it) named by its path
    assert changes(before, snapshot(tree.base)) == []


def _output_params() -> set[tuple[str, str]]:
    """(command, parameter) of every option or argument of the app that names where a command writes."""
    found: set[tuple[str, str]] = set()

    def walk(cmd: object, prefix: str) -> None:
        for p in getattr(cmd, "params", []):
            if p.name in ("out", "plot", "output", "export_records", "workdir", "dst", "directory"):
                found.add((prefix, p.name))
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, f"{prefix} {name}".strip())

    walk(typer.main.get_command(get_app()), "")
    return found


def test_every_output_option_has_an_aliasing_case(tree: Tree) -> None:
    """A new output option needs its case above (or a reason in NO_INPUT): one that aliases its input is refused."""
    covered: set[tuple[str, str]] = set()
    for option, args, _ in CASES.values():
        words = [str(a) for a in args(tree)]
        command = " ".join(w for w in words[:2] if not w.startswith(("-", "/")))
        param = {"DST": "dst", "--workdir": "workdir"}.get(option, option.lstrip("-").replace("-", "_"))
        covered.add((command, param))
    assert _output_params() == covered | NO_INPUT


# ------------------------------------------------------------------------------------------------ locks


def test_fetch_sim_out_through_a_symlink_into_another_log_dir_leaves_no_lock(tree: Tree, tmp_path: Path) -> None:
    other = small_dir(tmp_path / "other")
    link = tmp_path / "to-other"
    link.symlink_to(other)
    r = run_cli("fetch-sim", tree.logs / "old-0", "--fetch-version", "3", "--output", link / "resp.bin", "-q")
    assert r.returncode in (0, 1), r.stderr
    assert (other / "resp.bin").stat().st_size > 0
    assert not (other / ".lock").exists() and not (tree.logs / ".lock").exists()


# ------------------------------------------------------------------------------------------------ a full disk


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1, 1))  # every write past byte 1: EFBIG (Python ignores SIGXFSZ)


FULL: dict[str, Callable[[Path, Path], list[object]]] = {
    "reindex-time-output": lambda logs, out: ["reindex-time", "--output", out, logs],
    "spark-scan-output": lambda logs, out: ["spark-scan", "--engine", "local-processes", "-j", "1", "--output", out,
                                            logs],
    "spark-scan-export-records": lambda logs, out: ["spark-scan", "--engine", "local-processes", "-j", "1",
                                                    "--export-records", out, logs / "old-0"],
    "downconvert": lambda logs, out: ["downconvert", "--to-magic", "1", logs, out],
    "upconvert": lambda logs, out: ["upconvert", logs / "v0-0", out],
    "canary-run": lambda logs, out: ["canary", "run", logs, "-p", "v0-0", "-w", out],
    "sample": lambda logs, out: ["sample", out, "--topics", "t", "--records", "50"],
}


@pytest.mark.parametrize("case", sorted(FULL))
def test_a_full_disk_leaves_no_output_dir(tree: Tree, tmp_path: Path, case: str) -> None:
    before = snapshot(tree.base)
    out = tmp_path / "made" / "by" / "the-run"  # none of it exists: every level is the run's to make and remove
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-m", "kafkatool", *map(str, FULL[case](tree.logs, out)), "-q"], env=env,
                       preexec_fn=_limit_file_size, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "File too large" in r.stderr, r.stderr
    assert not (tmp_path / "made").exists(), sorted(str(p) for p in (tmp_path / "made").rglob("*"))
    assert changes(before, snapshot(tree.base)) == []


def test_a_full_disk_leaves_no_fetch_response_file(tree: Tree, tmp_path: Path) -> None:
    """fetch-sim writes one file (into an existing dir): neither it nor its temp file stays."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-m", "kafkatool", "fetch-sim", str(tree.logs / "old-0"), "--output",
                        str(tmp_path / "resp.bin"), "-q"], env=env, preexec_fn=_limit_file_size, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and "File too large" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------------------ sparse copies


def test_canary_run_copies_a_sparse_index_sparse(tmp_path: Path) -> None:
    logs = small_dir(tmp_path / "logs")
    index = sorted((logs / "v0-0").glob("*.index"))[-1]
    with open(index, "r+b") as f:
        f.truncate(1 << 30)  # the index preallocated to 1 GiB, a hole past its entries (each pass hashes its zeros)
    assert index.stat().st_blocks * 512 < 1 << 20, "the filesystem keeps no holes: nothing to test"
    w = tmp_path / "w"
    r = run_cli("canary", "run", logs, "-p", "v0-0", "-w", w, "-q")
    assert r.returncode == 0, r.stderr
    copy = w / "originals" / "v0-0" / index.name
    st = copy.stat()
    assert st.st_size == 1 << 30  # apparent size: the same file
    assert st.st_blocks * 512 < 1 << 20, f"{st.st_blocks * 512} bytes allocated for the copy"
    r = run_cli("canary", "verify", w, "-q")
    assert r.returncode == 0, r.stderr


def test_upconvert_carries_a_sparse_snapshot_sparse(tmp_path: Path) -> None:
    """The files a converter carries over as they are (producer snapshots, checkpoints) keep their holes too."""
    logs = small_dir(tmp_path / "logs")
    snap = sorted((logs / "v0-0").glob("*.snapshot"))[-1]
    with open(snap, "r+b") as f:
        f.truncate(1 << 30)
    assert snap.stat().st_blocks * 512 < 1 << 20, "the filesystem keeps no holes: nothing to test"
    r = run_cli("upconvert", logs / "v0-0", tmp_path / "dst", "-q")
    assert r.returncode == 0, r.stderr
    copy = tmp_path / "dst" / "v0-0" / snap.name
    st = copy.stat()
    with open(copy, "rb") as a, open(snap, "rb") as b:
        assert st.st_size == 1 << 30 and a.read(1 << 16) == b.read(1 << 16)
    assert st.st_blocks * 512 < 1 << 20, f"{st.st_blocks * 512} bytes allocated for the copy"
