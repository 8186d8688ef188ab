"""Every command against a log dir whose ``.lock`` a real JVM holds as a live Kafka broker does
(``FileChannel.tryLock()``, :mod:`tests.support.broker_lock`).

* Every writing command refuses with exit 3 and one line naming the ``.lock``, and changes nothing (the whole
  tree's checksums, mtimes and inodes before and after): a destination anywhere below the log dir
  (``logs/nested/out``, ``logs/orders-2/out``, a file in a partition dir) included, ``--live`` or not.
* Every read-only use of the live log dir refuses the same way by default; with ``--live`` it reads, with one
  warning line naming the lock.
* A command writing into a (stopped broker's) log dir holds its ``.lock`` while it works: another process's
  probe finds it locked mid-run (the run is stopped there with ``KAFKATOOL_CRASH_SIGNAL=STOP``); a ``.lock``
  that existed keeps its inode and bytes, one the command created is gone afterwards.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkatool.util.crash import CRASH_ENV, SIGNAL_ENV
from tests.support.broker_lock import JavaLockHolder
from tests.support.canary_dirs import small_dir
from tests.support.cli import run_cli
from tests.support.paths import ROOT
from tests.support.tree_state import changes, snapshot

pytestmark = pytest.mark.interop  # a JVM, as every interop test


@dataclass
class Live:
    base: Path
    logs: Path  # the live log dir (locked by a JVM for the whole module)
    src: Path  # an unlocked copy of it: sources of writes aimed into the live one
    w: Path  # a verified canary work dir of `logs`, made before the lock was taken

    @property
    def lock(self) -> Path:
        return self.logs / ".lock"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, java_lock: JavaLockHolder):
    base = tmp_path_factory.mktemp("live")
    logs = small_dir(base / "logs")
    shutil.copytree(logs, base / "src")
    w = base / "w"
    # Symlinks from outside into the live log dir: a probe must follow each path's resolved form.
    (base / "links" / "seg").mkdir(parents=True)
    (base / "links" / "old-0").symlink_to(logs / "old-0")
    seg = _seg(logs / "v0-0")
    (base / "links" / "seg" / seg.name).symlink_to(seg)
    assert run_cli("canary", "run", logs, "-p", "v0-0", "-w", w, "-q").returncode == 0
    assert run_cli("canary", "verify", w, "-q").returncode == 0
    with java_lock.holding(logs):
        yield Live(base, logs, base / "src", w)


def _seg(part: Path) -> Path:
    return sorted(part.glob("*.log"))[0]


# Each: the arguments, given the layout. Writes into the live log dir (or reading it to write elsewhere).
WRITES: dict[str, Callable[[Live], list[object]]] = {
    "reindex-in-place": lambda v: ["reindex-time", "--in-place", v.logs / "old-0"],
    "reindex-in-place-file": lambda v: ["reindex-time", "--in-place", _seg(v.logs / "old-0")],
    "reindex-output": lambda v: ["reindex-time", "--output", v.logs / "mirror", v.src / "old-0"],
    "reindex-output-nested": lambda v: ["reindex-time", "--output", v.logs / "old-0" / "mirror", v.src / "old-0"],
    "downconvert-new-dir": lambda v: ["downconvert", "--to-magic", "1", v.src / "lat-0", v.logs / "converted"],
    "downconvert-nested": lambda v: ["downconvert", "--to-magic", "1", v.src / "lat-0", v.logs / "nested" / "conv"],
    "downconvert-in-partition": lambda v: ["downconvert", "--to-magic", "1", v.src / "lat-0",
                                           v.logs / "orders-2" / "conv"],
    "downconvert-live-flag": lambda v: ["downconvert", "--to-magic", "1", "--live", v.src / "lat-0",
                                        v.logs / "lat-0" / "conv"],
    "upconvert-nested": lambda v: ["upconvert", v.src / "v0-0", v.logs / "nested" / "conv"],
    "upconvert-in-partition": lambda v: ["upconvert", "--live", v.src / "v0-0", v.logs / "v0-0" / "conv"],
    "canary-run-of-live": lambda v: ["canary", "run", v.logs, "-p", "v0-0", "-w", v.base / "w2"],
    "canary-run-into-live": lambda v: ["canary", "run", v.src, "-p", "v0-0", "-w", v.logs / "nested" / "w"],
    "canary-apply": lambda v: ["canary", "apply", v.w],
    "canary-rollback": lambda v: ["canary", "rollback", v.w],
    "spark-output": lambda v: ["spark-scan", "--engine", "local-processes", "-j", "1", "--output",
                               v.logs / "stats", v.src / "old-0"],
    "spark-export": lambda v: ["spark-scan", "--engine", "local-processes", "-j", "1", "--export-records",
                               v.logs / "old-0" / "exp", v.src / "old-0"],
    "spark-export-live-flag": lambda v: ["spark-scan", "--engine", "local-processes", "-j", "1", "--live",
                                         "--export-records", v.logs / "exp", v.src / "old-0"],
    "fetch-sim-out": lambda v: ["fetch-sim", "--output", v.logs / "old-0" / "resp.bin", v.src / "old-0"],
    "fetch-sim-out-live-flag": lambda v: ["fetch-sim", "--live", "--output", v.logs / "resp.bin", v.logs / "old-0"],
    "fetch-sim-plot": lambda v: ["fetch-sim", "--sweep-chunk-sizes", "16K", "--plot", v.logs / "p.png",
                                 v.src / "old-0"],
    "sample-nested": lambda v: ["sample", v.logs / "nested" / "s", "--topics", "t", "--records", "5"],
}

# Read-only uses of the live log dir: refused by default, read with --live.
READS: dict[str, Callable[[Live], list[object]]] = {
    "dump-partition": lambda v: ["dump", v.logs / "old-0"],
    "dump-log-dir": lambda v: ["dump", "--deep", v.logs],
    "dump-segment": lambda v: ["dump", _seg(v.logs / "v0-0")],
    "reindex-check": lambda v: ["reindex-time", v.logs / "old-0"],
    # after a path in an unlocked log dir (its probe resolved that dir's ancestors), a link into the live one
    "reindex-check-linked-partition": lambda v: ["reindex-time", v.src / "old-0", v.base / "links" / "old-0"],
    "dump-linked-segment": lambda v: ["dump", v.src / "old-0", _seg(v.base / "links" / "seg")],
    "reindex-recovery-report": lambda v: ["reindex-time", "--recovery-report", v.logs],
    "fetch-sim": lambda v: ["fetch-sim", v.logs / "old-0"],
    "canary-plan": lambda v: ["canary", "plan", v.logs],
    "spark-scan-stats": lambda v: ["spark-scan", "--engine", "local-processes", "-j", "1", v.logs],
    "downconvert-src": lambda v: ["downconvert", "--to-magic", "1", v.logs / "lat-0", v.base / "out"],
    "upconvert-src": lambda v: ["upconvert", v.logs / "v0-0", v.base / "out"],
}


def _the_line(stderr: str, lock: Path) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert re.match(r"kafkatool [a-z -]+: error: ", lines[0]), lines
    assert str(lock) in lines[0] and "live broker" in lines[0], lines
    return lines[0]


@pytest.mark.parametrize("case", sorted(WRITES))
def test_writes_are_refused_and_change_nothing(live: Live, case: str) -> None:
    before = snapshot(live.base)
    r = run_cli(*WRITES[case](live))
    assert r.returncode == 3, (r.returncode, r.stderr)
    line = _the_line(r.stderr, live.lock)
    assert "stop the broker first (nothing was changed)" in line
    assert changes(before, snapshot(live.base)) == []


@pytest.mark.parametrize("case", sorted(READS))
def test_reads_are_refused_unless_live(live: Live, case: str) -> None:
    before = snapshot(live.base)
    r = run_cli(*READS[case](live))
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "--live" in _the_line(r.stderr, live.lock)
    assert changes(before, snapshot(live.base)) == []

    r = run_cli(*READS[case](live), "--live", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    assert r.stdout.strip(), "--live read nothing"
    warnings = [x for x in r.stderr.splitlines() if "live broker" in x]
    assert len(warnings) == 1 and str(live.lock) in warnings[0] and "mid-write" in warnings[0], r.stderr
    shutil.rmtree(live.base / "out", ignore_errors=True)  # the converters' output (outside the log dir)
    assert changes(before, snapshot(live.base)) == []


def test_canary_verify_leaves_out_the_live_log_dir_unless_live(live: Live) -> None:
    """verify checks the work dir (not refused); the log dir's state only with --live."""
    logs_before = snapshot(live.logs)
    r = run_cli("canary", "verify", live.w, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert '"log-dir-partition"' not in r.stdout
    assert f"a live broker holds {live.lock}: the log dir's state is not reported" in r.stderr
    r = run_cli("canary", "verify", live.w, "--live", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert '"type":"log-dir-partition"' in r.stdout and '"state":"original"' in r.stdout
    assert sum("live broker" in x and "mid-write" in x for x in r.stderr.splitlines()) == 1
    assert changes(logs_before, snapshot(live.logs)) == []


def test_sample_into_a_locked_empty_log_dir(tmp_path: Path, java_lock: JavaLockHolder) -> None:
    d = tmp_path / "empty-log-dir"
    d.mkdir()
    with java_lock.holding(d):
        before = snapshot(tmp_path)
        r = run_cli("sample", d, "--topics", "t", "--records", "5")
        assert r.returncode == 3, r.stderr
        _the_line(r.stderr, d / ".lock")
        assert changes(before, snapshot(tmp_path)) == []


# ------------------------------------------------------------------------------------- holding the lock


def _probe_held(lock: Path) -> bool:
    """What a starting broker's tryLock() would meet (from this process, which holds no lock on it)."""
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        assert e.errno in (errno.EAGAIN, errno.EACCES)
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _stopped_at(args: list[object], k: int) -> subprocess.Popen[bytes]:
    """The CLI, stopped (SIGSTOP) at its k-th durable step."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", **{CRASH_ENV: str(k), SIGNAL_ENV: "STOP"})
    p = subprocess.Popen([sys.executable, "-m", "kafkatool", *map(str, args)], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while True:
        state = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "T":
            return p
        assert p.poll() is None, f"finished before its step {k}: rc {p.returncode}"
        assert time.monotonic() < deadline
        time.sleep(0.01)


HOLDERS: dict[str, Callable[[Path, Path], list[object]]] = {
    "reindex-in-place": lambda logs, src: ["reindex-time", "--in-place", logs / "old-0"],
    "downconvert-into-log-dir": lambda logs, src: ["downconvert", "--to-magic", "1", src / "lat-0",
                                                   logs / "nested" / "conv"],
    "upconvert-into-partition": lambda logs, src: ["upconvert", src / "v0-0", logs / "v0-0" / "conv"],
    "spark-export-into-log-dir": lambda logs, src: ["spark-scan", "--engine", "local-processes", "-j", "1",
                                                    "--export-records", logs / "exp", src / "old-0"],
    "sample-into-log-dir": lambda logs, src: ["sample", logs / "s", "--topics", "t", "--records", "50"],
}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("stopped")
    tpl = small_dir(base / "logs")
    for seg in (tpl / "old-0").glob("*.timeindex"):  # stale time indexes: reindex --in-place has work to do
        seg.write_bytes(seg.read_bytes() + bytes(12))
    shutil.copytree(tpl, base / "src")
    return tpl, base / "src"


@pytest.mark.parametrize("existing", [True, False], ids=["lock-file-existed", "no-lock-file"])
@pytest.mark.parametrize("case", sorted(HOLDERS))
def test_a_writer_holds_the_lock_while_it_works(stopped: tuple[Path, Path], tmp_path: Path, case: str,
                                                existing: bool) -> None:
    tpl, src = stopped
    logs = tmp_path / "logs"
    shutil.copytree(tpl, logs)
    lock = logs / ".lock"
    if existing:  # a crashed broker's leftover: not held, but not ours to delete or recreate
        lock.write_bytes(b"")
        os.utime(lock, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
        was = lock.stat()
    p = _stopped_at(HOLDERS[case](logs, src), 1)
    try:
        assert lock.is_file() and _probe_held(lock), "not locked while writing into the log dir"
        if existing:
            assert lock.stat().st_ino == was.st_ino
    finally:
        p.send_signal(signal.SIGCONT)  # SIGSTOP fires at one step only
    assert p.wait(300) == 0, p.stderr.read() if p.stderr else ""
    if existing:
        now = lock.stat()
        assert (now.st_ino, now.st_size, now.st_mtime_ns) == (was.st_ino, 0, was.st_mtime_ns)
        assert not _probe_held(lock)
    else:
        assert not lock.exists()


def test_canary_apply_holds_the_lock_and_keeps_its_inode(tmp_path: Path) -> None:
    logs = small_dir(tmp_path / "logs")
    w = tmp_path / "w"
    assert run_cli("canary", "run", logs, "-p", "old-0", "-w", w, "-q").returncode == 0
    assert run_cli("canary", "verify", w, "-q").returncode == 0
    lock = logs / ".lock"
    lock.write_bytes(b"")
    was = lock.stat()
    for op in ("apply", "rollback"):
        p = _stopped_at(["canary", op, w], 3)
        try:
            assert _probe_held(lock) and lock.stat().st_ino == was.st_ino
        finally:
            p.send_signal(signal.SIGCONT)
        assert p.wait(120) == 0, p.stderr.read() if p.stderr else ""
        assert lock.stat().st_ino == was.st_ino and not _probe_held(lock)
