"""``--in-place`` under ``kill -9``: every index file is the old one or the new one, never torn.

The real CLI is started on a copy of a damaged log dir and its whole process group (workers included)
is killed with SIGKILL at points spread over the run (after the k-th file replaced); after each kill every
index file must hold exactly its old or its rebuilt bytes, every ``.bak`` the old bytes, every ``.log`` its
bytes. A final run completes the job and removes the temp files the kills left.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from kafkatool.log.recovery import recover_segment
from kafkatool.util.atomic import TEMP_PREFIX
from tests.support.cli import run_cli
from tests.support.paths import ROOT
from tests.support.procs import group_running
from tests.support.segments import T0, v2_sized, write_segment

pytestmark = pytest.mark.slow
SEGMENTS = 120


def build(root):
    old, new = {}, {}
    for p in range(3):
        part = root / f"orders-{p}"
        for s in range(SEGMENTS // 3):
            base = s * 10
            log = write_segment(part, base, [v2_sized(base + i, 1000, ts=T0 + base + i) for i in range(10)])
            r = recover_segment(log, base)
            # Stale entries after the real ones: every file needs replacing.
            old[log.with_suffix(".index")] = r.encode_offset_index() + b"\x00\x00\x7f\x00\x00\x7f\x00\x00" * (s + 1)
            old[log.with_suffix(".timeindex")] = r.encode_time_index() + (
                (T0 + 10**6).to_bytes(8, "big") + (10**6).to_bytes(4, "big")) * (s + 1)
            new[log.with_suffix(".index")] = r.encode_offset_index()
            new[log.with_suffix(".timeindex")] = r.encode_time_index()
    for path, data in old.items():
        path.write_bytes(data)
    logs = {p: p.read_bytes() for p in root.rglob("*.log")}
    return old, new, logs


def start(root, jobs):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.Popen([sys.executable, "-m", "kafkatool", "reindex-time", str(root), "--in-place", "--jobs",
                             str(jobs), "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)


def test_in_place_survives_sigkill_anywhere(tmp_path):
    template = tmp_path / "template"
    old, new, logs = build(template)
    rel = {p.relative_to(template): (old[p], new[p]) for p in old}
    rel_logs = {p.relative_to(template): b for p, b in logs.items()}

    # Kill points: after the k-th file was replaced, k spread over the run (a replaced file is shorter than the
    # stale old one, so a stat tells), plus one kill right at start-up. Polling, not sleeping: the machine's load
    # varies too much for timed kills to land mid-run reliably.
    sizes = {r: len(n) for r, (_, n) in rel.items()}
    targets = [0] + [round((i + 0.5) / 8 * len(rel)) for i in range(8)]
    rng = random.Random(20241021)
    mid_run = 0
    for attempt, target in enumerate(targets):
        root = tmp_path / f"run{attempt}"
        shutil.copytree(template, root)
        proc = start(root, rng.choice([1, 2]))
        while target and proc.poll() is None:
            done = sum(1 for r, size in sizes.items() if (root / r).stat().st_size == size)
            if done >= target:
                break
            time.sleep(0.002)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while group_running(proc.pid) and time.monotonic() < deadline:  # the workers too: a syscall in flight
            time.sleep(0.01)                                                # completes before death
        replaced = 0
        for r, (o, n) in rel.items():
            data = (root / r).read_bytes()
            assert data in (o, n), f"{r} is torn after kill #{attempt}"
            replaced += data == n
            bak = root / r.parent / (r.name + ".bak")
            if bak.exists():
                assert bak.read_bytes() == o, f"{bak.name} is not the old file"
        for r, b in rel_logs.items():
            assert (root / r).read_bytes() == b
        mid_run += 0 < replaced < len(rel)
        # A complete run afterwards finishes the job and clears the kill's temp files.
        r = run_cli("reindex-time", root, "--in-place", "--jobs", "1", "--quiet")
        assert r.returncode == 0, r.stderr
        for r, (_, n) in rel.items():
            assert (root / r).read_bytes() == n
        assert not [p for p in root.rglob("*") if p.name.startswith(TEMP_PREFIX)]
        shutil.rmtree(root)
    assert mid_run >= 5, f"only {mid_run} kills landed in the middle of the writes"
