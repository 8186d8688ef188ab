"""``kafkatool canary apply`` / ``rollback``: byte-for-byte restore, refusal while a broker holds the log dir,
refusal when a partition changed, and recovery from ``kill -9`` at every durable step (by the next run, or by a
broker start simulated with LogLoader's .swap rules, ``kafkatool.canary.loader``) and at random times."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkatool.canary.apply import CRASH_ENV, classify, segment_file, swap
from kafkatool.canary.equivalence import StreamStats, compare, read_items
from kafkatool.canary.loader import complete_swaps, predict
from kafkatool.canary.manifest import PartitionEntry, Workdir, hash_file
from kafkatool.canary.run import run_canary
from kafkatool.canary.verify import verify_workdir
from kafkatool.log.checkpoints import EpochEntry, encode_leader_epoch_checkpoint, read_leader_epoch_checkpoint
from tests.support.broker_lock import JavaLockHolder
from tests.support.canary_dirs import small_dir, tree
from tests.support.cli import run_cli
from tests.support.paths import ROOT

PARTS = ["old-0", "v0-0", "lat-0"]


class Setup:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.pristine = small_dir(base / "pristine")
        self.live = base / "live"
        self.w = base / "w"
        self.reset()
        run_canary(self.live, PARTS, self.w)
        assert verify_workdir(self.w).ok
        self.manifest = Workdir(self.w).read_manifest()
        self.original = tree(self.pristine)
        swap(self.w, "apply")
        self.applied = base / "applied"
        shutil.copytree(self.live, self.applied)
        self.canary_tree = tree(self.applied)
        self.reset()

    def reset(self, src: Path | None = None) -> None:
        shutil.rmtree(self.live, ignore_errors=True)
        shutil.copytree(src or self.pristine, self.live)  # copy2: mtimes kept

    def entry(self, name: str) -> PartitionEntry:
        return self.manifest.partition(name)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(tmp_path_factory.mktemp("apply"))


def test_apply_then_rollback_restores_the_log_dir_byte_for_byte(setup: Setup) -> None:
    setup.reset()
    r = run_cli("canary", "apply", setup.w, "--format", "json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert {x["partition"]: (x["before"], x["after"]) for x in lines if x["type"] == "partition"} == \
        {p: ("original", "canary") for p in PARTS}
    assert tree(setup.live) == setup.canary_tree
    for p in PARTS:  # the segments are the canary's, the rest (snapshots, checkpoints) the originals'
        for e in setup.entry(p).outputs:
            assert hash_file(setup.live / p / e.name)[1] == e.sha256
        for e in setup.entry(p).inputs:
            assert (setup.live / p / e.name).stat().st_mtime_ns == e.mtime_ns  # retention clocks kept
    assert not (setup.live / ".lock").exists()
    r = run_cli("canary", "apply", setup.w)  # idempotent
    assert r.returncode == 0 and tree(setup.live) == setup.canary_tree
    r = run_cli("canary", "rollback", setup.w, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert tree(setup.live) == setup.original
    assert json.loads((setup.w / "journal.json").read_text())["state"] == "done"


def test_refused_while_a_broker_holds_the_lock(setup: Setup) -> None:
    setup.reset()
    (setup.live / ".lock").touch()
    before = tree(setup.live)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'r+'); "
                               "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
                               str(setup.live / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        for op in ("apply", "rollback"):
            r = run_cli("canary", op, setup.w)
            assert r.returncode == 3 and "live broker" in r.stderr, r.stderr
    finally:
        holder.kill()
        holder.wait()
    assert tree(setup.live) == before


@pytest.mark.interop
def test_refused_while_a_java_process_holds_the_lock_as_kafka_does(setup: Setup, java_lock: JavaLockHolder) -> None:
    """Kafka's FileLock: FileChannel.open(CREATE, READ, WRITE).tryLock() (server-common FileLock.java)."""
    setup.reset()
    with java_lock.holding(setup.live):
        before = tree(setup.live)
        journal = (setup.w / "journal.json").read_bytes() if (setup.w / "journal.json").exists() else None
        for op in ("apply", "rollback"):
            r = run_cli("canary", op, setup.w)
            assert r.returncode == 3 and "live broker" in r.stderr and str(setup.live / ".lock") in r.stderr, r.stderr
        assert tree(setup.live) == before
        # refused before anything is written, the work dir's journal included
        assert ((setup.w / "journal.json").read_bytes() if (setup.w / "journal.json").exists() else None) == journal


def test_refused_when_a_partition_changed(setup: Setup) -> None:
    setup.reset()
    active = setup.live / "v0-0" / f"{setup.entry('v0-0').segments[-1]:020d}.log"
    with open(active, "ab") as f:
        f.write(bytes(40))  # the broker appended (even a torn tail is a change)
    before = tree(setup.live)
    r = run_cli("canary", "apply", setup.w)
    assert r.returncode == 1 and "v0-0: changed" in r.stderr and "nothing was changed" in r.stderr
    assert tree(setup.live) == before
    # After an apply, data written since makes rollback refuse: it would be lost.
    setup.reset(setup.applied)
    new_seg = setup.live / "lat-0" / "00000000000000009999.log"
    new_seg.write_bytes(b"")
    r = run_cli("canary", "rollback", setup.w)
    assert r.returncode == 1 and "new segment 00000000000000009999.log" in r.stderr
    new_seg.unlink()
    (setup.live / "old-0" / "00000000000000000000.cleaned").write_bytes(b"")
    r = run_cli("canary", "rollback", setup.w)
    assert r.returncode == 1 and "the broker's own unfinished work" in r.stderr


def test_rollback_keeps_newer_leader_epochs(setup: Setup) -> None:
    """A broker that led the partition after apply recorded a new epoch; the canary never changes epochs, so
    rollback keeps that file (and says so) and restores everything else."""
    setup.reset(setup.applied)
    cp = setup.live / "lat-0" / "leader-epoch-checkpoint"
    entries = read_leader_epoch_checkpoint(cp)
    cp.write_bytes(encode_leader_epoch_checkpoint([*entries, EpochEntry(entries[-1].epoch + 1, 150)]))
    newer = tree(setup.live)["lat-0/leader-epoch-checkpoint"]
    r = run_cli("canary", "rollback", setup.w, "--format", "json")
    assert r.returncode == 0, r.stderr
    lat = next(json.loads(x) for x in r.stdout.splitlines() if '"lat-0"' in x)
    assert lat["notes"] == ["leader-epoch-checkpoint kept: a broker recorded newer leader epochs since the canary run"]
    after = tree(setup.live)
    assert after.pop("lat-0/leader-epoch-checkpoint") == newer
    assert after == {k: v for k, v in setup.original.items() if k != "lat-0/leader-epoch-checkpoint"}


# ---------------------------------------------------------------------------------------------- crashes


def _versions(setup: Setup, name: str) -> tuple[dict[str, str], dict[str, str]]:
    e = setup.entry(name)
    return {f.name: f.sha256 for f in e.inputs}, {f.name: f.sha256 for f in e.outputs}


def _check_consistent(setup: Setup, name: str) -> None:
    """The invariant the broker's LogLoader needs to complete a swap: per segment, the files it will end up with
    (each .swap replaces its final; with <base>.log.swap present the finals are deleted) are all one version."""
    live = setup.live / name
    orig, can = _versions(setup, name)
    files = {n: hash_file(live / n)[1] for n in os.listdir(live) if (live / n).is_file()}
    for base in setup.entry(name).segments:
        mine = {n for n in files if (sf := segment_file(n[:-5] if n.endswith(".swap") else n)) and sf[0] == base}
        log = f"{base:020d}.log"
        if log + ".swap" in mine:
            effective = {n[:-5]: files[n] for n in mine if n.endswith(".swap")}
        else:
            effective = {n: files[n] for n in mine if not n.endswith(".swap")}
            effective.update({n[:-5]: files[n] for n in mine if n.endswith(".swap")})
        assert log in effective, (name, base, sorted(mine))
        versions = [{v for v, d in (("o", orig), ("c", can)) if d.get(n) == h} for n, h in effective.items()]
        common = set.intersection(*versions)
        assert common, (name, base, sorted(mine), versions)


def _check_records(setup: Setup, name: str) -> None:
    """The partition holds the original's records (segments of either version, read as v2 keeps them)."""
    e = setup.entry(name)
    s1, s2 = StreamStats(), StreamStats()
    a = read_items(setup.w / "originals" / name, e.segments, s1, to_v2=True, max_message_bytes=1 << 30, canary=False)
    b = read_items(setup.live / name, e.segments, s2, to_v2=True, max_message_bytes=1 << 30, canary=False)
    c = compare(a, b, [], target_magic=-1)
    assert c.missing == c.extra == 0 and not [d for d in c.differences if "still message format" not in d], \
        (name, c.differences)


def _crash(setup: Setup, op: str, k: int, *args: str) -> int:
    r = run_cli("canary", op, setup.w, *args, env={CRASH_ENV: str(k)})  # a real process: SIGKILL kills it
    return r.returncode


def _recover_both_ways(setup: Setup, op: str, k: int) -> None:
    crashed = setup.base / "crashed"
    shutil.rmtree(crashed, ignore_errors=True)
    shutil.copytree(setup.live, crashed)
    journal = (setup.w / "journal.json").read_bytes()
    want = setup.canary_tree if op == "apply" else setup.original
    # (a) the next run completes it
    swap(setup.w, op)
    assert tree(setup.live) == want, (op, k, "rerun")
    swap(setup.w, "rollback")
    assert tree(setup.live) == setup.original, (op, k, "rollback after rerun")
    # (b) a broker starts (and stops cleanly) first: LogLoader completes the .swap files, the clean shutdown deletes
    # .lock; the log is consistent; then the run completes
    setup.reset(crashed)
    (setup.w / "journal.json").write_bytes(journal)
    (setup.live / ".lock").unlink(missing_ok=True)
    for p in PARTS:
        complete_swaps(setup.live / p)
        assert not [n for n in os.listdir(setup.live / p) if n.endswith(".swap")]
        _check_records(setup, p)
    swap(setup.w, op)
    assert {k2: v for k2, v in tree(setup.live).items() if not k2.endswith(".snapshot")} == \
        {k2: v for k2, v in want.items() if not k2.endswith(".snapshot")}, (op, k, "after broker start")
    swap(setup.w, "rollback")
    assert tree(setup.live) == setup.original, (op, k, "rollback after broker start")


@pytest.mark.slow
@pytest.mark.parametrize("op", ["apply", "rollback"])
def test_kill_9_at_every_durable_step(setup: Setup, op: str) -> None:
    start = setup.pristine if op == "apply" else setup.applied
    setup.reset(start)
    total = json.loads(run_cli("canary", op, setup.w, "--format", "json").stdout.splitlines()[-1])["durable_steps"]
    assert total > 20
    interrupted_seen = 0
    for k in range(1, total + 1):
        setup.reset(start)
        rc = _crash(setup, op, k)
        assert rc == -signal.SIGKILL, (k, rc)
        states = {p: classify(setup.live / p, setup.entry(p)).state for p in PARTS}
        assert "changed" not in states.values() and "missing" not in states.values(), (k, states)
        interrupted_seen += "interrupted" in states.values()
        for p in PARTS:
            _check_consistent(setup, p)
        if k == total // 2:  # what verify says about it (one CLI run is enough)
            r = run_cli("canary", "verify", setup.w, "--format", "json")
            summary = json.loads(r.stdout.splitlines()[-1])
            assert r.returncode == 1 and summary["interrupted"] and summary["journal"]["state"] == "running"
            assert "run `kafkatool canary apply" in r.stderr
        _recover_both_ways(setup, op, k)
    assert interrupted_seen > total // 2


@pytest.mark.slow
def test_kill_9_at_random_times(setup: Setup) -> None:
    rng = random.Random(7)
    for i in range(6):
        op = "apply" if i % 2 == 0 else "rollback"
        setup.reset(setup.pristine if op == "apply" else setup.applied)
        env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
        p = subprocess.Popen([sys.executable, "-m", "kafkatool", "canary", op, str(setup.w)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.5))
        p.send_signal(signal.SIGKILL)
        p.wait()
        for part in PARTS:
            _check_consistent(setup, part)
        swap(setup.w, op)
        assert tree(setup.live) == (setup.canary_tree if op == "apply" else setup.original), (i, op)


def test_loader_prediction_of_an_interrupted_apply(setup: Setup) -> None:
    setup.reset()
    # Stop right after the .log.swap of old-0's second segment is written (the journal, then the first segment's
    # swaps and renames come before it).
    e = setup.entry("old-0")
    seg = e.segments[1]
    assert classify(setup.live / "old-0", e).state == "original"
    k = 1
    while True:
        setup.reset()
        assert _crash(setup, "apply", k, "--partitions", "old-0") == -signal.SIGKILL
        if f"{seg:020d}.log.swap" in os.listdir(setup.live / "old-0"):
            break
        k += 1
        assert k < 20
    acts = predict(setup.live / "old-0")
    desc = acts.describe()
    assert acts.swap_range is not None and acts.swap_range[0] == seg
    assert f"delete {seg:020d}.log" in desc and f"rename {seg:020d}.log.swap -> {seg:020d}.log" in desc
    # The index swap was not written yet: readNextOffset creates a preallocated one, as the broker would.
    assert any(d.startswith(f"create {seg:020d}.index.swap") for d in desc)
    r = run_cli("canary", "verify", setup.w)
    assert r.returncode == 1 and "a broker starting now would: swap segments cover offsets" in r.stdout
    swap(setup.w, "apply")
    assert tree(setup.live) == setup.canary_tree


@pytest.mark.slow
def test_kill_between_a_temp_write_and_its_rename_leaves_a_file_the_broker_ignores(setup: Setup) -> None:
    """The step after each temp copy: the partition dir holds `.kafkatool-tmp-<name>.swap.tmp` (not `*.swap`, whose
    missing offset would fail LogLoader), the broker's start leaves it alone, the next run removes it."""
    for op, start in (("apply", setup.pristine), ("rollback", setup.applied)):
        seen = 0
        for k in range(1, 40):
            setup.reset(start)
            rc = _crash(setup, op, k, "--partitions", "old-0")
            assert rc == -signal.SIGKILL, (op, k, rc)
            temps = [n for p in PARTS for n in os.listdir(setup.live / p) if n.startswith(".kafkatool-tmp-")]
            if not temps:
                continue
            seen += 1
            for n in temps:
                assert n.endswith(".tmp") and not n.endswith((".swap", ".snapshot", ".log", ".index")), n
            acts = predict(setup.live / "old-0")
            assert not acts.fails, acts.fails
            assert acts.ignored == temps and all(f"leave {n} alone" in " ".join(acts.describe()) for n in temps)
            _recover_both_ways(setup, op, k)  # the broker's start (complete_swaps raises where Kafka would fail)
            for p in PARTS:
                assert not [n for n in os.listdir(setup.live / p) if n.startswith(".kafkatool-tmp-")]
            if seen == 2:
                break
        assert seen == 2, op


def test_a_lock_recreated_after_a_kill_is_not_deleted(setup: Setup) -> None:
    """A killed apply leaves the .lock it created, recorded in the journal by device, inode and ctime; the
    next run removes exactly that file. A .lock recreated in between, even under the freed inode number (a broker
    started, deleted ours at its clean shutdown, started again and crashed), is the broker's: the next run
    completes the swap and leaves that file alone."""
    for recreate in (False, True):
        setup.reset()
        assert _crash(setup, "apply", 3) != 0
        journal = json.loads((setup.w / "journal.json").read_text())
        lock = setup.live / ".lock"
        assert journal["state"] == "running" and journal["lock_existed"] is False and lock.exists()
        st = lock.stat()
        assert journal["lock_id"] == [st.st_dev, st.st_ino, st.st_ctime_ns]
        if recreate:
            lock.unlink()
            other = setup.live / "other"
            other.write_bytes(b"")  # a new file (ext4 may hand it the freed inode number): not the journal's
            other.rename(lock)
        ino = lock.stat().st_ino
        swap(setup.w, "apply")
        assert {k: v for k, v in tree(setup.live).items() if k != ".lock"} == setup.canary_tree
        if recreate:
            assert lock.stat().st_ino == ino  # kept: never ours to delete
            lock.unlink()
        else:
            assert not lock.exists()  # ours, from the killed run: gone
        swap(setup.w, "rollback")
        assert tree(setup.live) == setup.original
