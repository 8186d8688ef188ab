"""``kafkatool canary apply`` / ``rollback``: swap canary partitions into the log dir, or the originals back.

Both directions run one idempotent procedure, *converge*, that brings each segment of a partition to the
target version (canary for apply, originals for rollback) the way the broker's own ``LogLoader`` completes an
interrupted swap (:mod:`kafkatool.canary.loader`, 3.9):

for each segment, in ascending base offset (canary segments map 1:1 onto the originals, see ``run``):

1. ``<base>.log.swap`` is written (temp file in the partition dir, fsync, rename, fsync dir) unless
   ``<base>.log`` already is the target; then ``.index.swap``, ``.timeindex.swap``, ``.txnindex.swap``. The
   log swap comes first because the broker renames *every* ``.swap`` at startup: an index swap without its
   log swap would replace the index of the other version's log;
2. the ``.swap`` files are renamed into place, ``.log`` first, and files of the segment that the target does
   not have are deleted.

So at any instant at most one segment holds ``.swap`` files, every other segment is wholly one version or
the other (both are the same records at the same offsets, so the partition is a valid log), and a broker
starting after a ``kill -9`` completes that segment: ``[base, nextOffset)`` of its ``.log.swap`` covers
exactly the old segment's files, which it deletes, then it renames the swaps. Running apply (or rollback)
again completes or reverses it too, whatever the broker did meanwhile, because each step is decided from
the files' checksums against the manifest, not from a log of what was done. Files keep the originals' mtimes
(retention of v0 data, which has no timestamps, follows them).

Refused (nothing changed): a live broker holds the log dir's ``.lock`` (exit 3); the work dir does not match
its manifest; apply without a passing ``verify``; a partition that changed since ``run`` (new or different
segments: rolling back would lose data written since); ``.cleaned``/``.deleted`` files (the broker's own
unfinished work). ``KAFKATOOL_CRASH_AFTER=N`` SIGKILLs the process after the Nth durable step (tests).
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.canary.manifest import FileEntry, Manifest, PartitionEntry, Workdir, copy_file, hash_file, matches
from kafkatool.errors import BrokerLockHeldError, ExitCode, KafkaToolError, UsageError
from kafkatool.log.checkpoints import read_leader_epoch_checkpoint
from kafkatool.log.layout import CLEANED_SUFFIX, DELETED_SUFFIX, LEADER_EPOCH_CHECKPOINT, LOCK_FILE, SWAP_SUFFIX
from kafkatool.log.lock import hold_log_dir, refuse_if_live
from kafkatool.util import crash
from kafkatool.util.atomic import fsync_dir, is_temp_name, temp_name
from kafkatool.util.printable import shown

CRASH_ENV = crash.CRASH_ENV
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")  # the order swaps are written and renamed
Progress = Callable[[str], None]


class CanaryStateError(KafkaToolError):
    """The work dir or the log dir is not in a state the operation may start from (exit 1)."""

    exit_code = ExitCode.FINDINGS


class Steps:
    """Counts durable steps (fsynced writes, renames, deletes); ``KAFKATOOL_CRASH_AFTER=N`` kills the process
    with SIGKILL right after the Nth (:mod:`kafkatool.util.crash`), to test recovery at every point."""

    def __init__(self) -> None:
        self.count = 0

    def done(self) -> None:
        self.count += 1
        crash.point()


def segment_file(name: str) -> tuple[int, str] | None:
    """``00000000000000000042.timeindex`` -> (42, ".timeindex"); None for other files."""
    if len(name) < 21 or not name[:20].isdigit() or name[20] != ".":
        return None
    suffix = name[20:]
    return (int(name[:20]), suffix) if suffix in SEGMENT_SUFFIXES else None


def _segment_entries(entries: list[FileEntry], base: int) -> list[FileEntry]:
    """The files of segment ``base``, in swap order (.log first)."""
    mine: dict[str, FileEntry] = {}
    for e in entries:
        sf = segment_file(e.name)
        if sf is not None and sf[0] == base:
            mine[sf[1]] = e
    return [mine[s] for s in SEGMENT_SUFFIXES if s in mine]


# ---------------------------------------------------------------------------------------------- state


@dataclass(slots=True)
class PartitionState:
    name: str
    state: str  # original / canary / identical (both the same) / interrupted / changed / missing
    detail: list[str] = field(default_factory=list)
    swaps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"partition": self.name, "state": self.state, "detail": self.detail, "swaps": self.swaps}


class _Hashes:
    def __init__(self, d: Path) -> None:
        self.d = d
        self.cache: dict[str, tuple[int, str] | None] = {}

    def get(self, name: str) -> tuple[int, str] | None:
        if name not in self.cache:
            p = self.d / name
            self.cache[name] = hash_file(p) if p.is_file() else None
        return self.cache[name]

    def match(self, name: str, e: FileEntry | None) -> bool:
        h = self.get(name)
        return e is not None and h is not None and h == (e.size, e.sha256)


def classify(live: Path, entry: PartitionEntry) -> PartitionState:
    """Which version each segment of the live partition dir holds (by checksum against the manifest)."""
    st = PartitionState(entry.name, "missing")
    if not live.is_dir():
        return st
    names = sorted(n for n in os.listdir(live) if (live / n).is_file())
    hashes = _Hashes(live)
    st.swaps = [n for n in names if n.endswith(SWAP_SUFFIX) or is_temp_name(n)]
    foreign = [n for n in names if n.endswith((CLEANED_SUFFIX, DELETED_SUFFIX))]
    inputs = {e.name: e for e in entry.inputs}
    outputs = {e.name: e for e in entry.outputs}
    changed, versions = [], set()
    for n in names:
        sf = segment_file(n)
        if sf is not None and sf[1] == ".log" and sf[0] not in entry.segments:
            changed.append(f"new segment {n} (written since the canary run)")
    for base in entry.segments:
        log = f"{base:020d}.log"
        orig_ok = all(hashes.match(e.name, e) for e in _segment_entries(entry.inputs, base))
        can_ok = all(hashes.match(e.name, e) for e in _segment_entries(entry.outputs, base))
        present = {n for n in names if segment_file(n) is not None and segment_file(n)[0] == base}  # type: ignore[index]
        orig_ok = orig_ok and present == {e.name for e in _segment_entries(entry.inputs, base)}
        can_ok = can_ok and present == {e.name for e in _segment_entries(entry.outputs, base)}
        if orig_ok and can_ok:
            versions.add("both")
        elif orig_ok:
            versions.add("original")
        elif can_ok:
            versions.add("canary")
        elif hashes.match(log, inputs.get(log)) or hashes.match(log, outputs.get(log)):
            versions.add("partial")
            st.detail.append(f"segment {base}: its index files belong to neither version")
        elif (live / (log + SWAP_SUFFIX)).exists() and not (live / log).exists():
            versions.add("partial")
            st.detail.append(f"segment {base}: only {shown(log)}{SWAP_SUFFIX} present")
        else:
            changed.append(f"{shown(log)} is neither the original nor the canary (changed since the canary run)")
    if changed or foreign:
        st.state = "changed"
        st.detail = changed + [f"{n}: the broker's own unfinished work" for n in foreign]
        return st
    if st.swaps or "partial" in versions or {"original", "canary"} <= versions:
        st.state = "interrupted"
        if {"original", "canary"} <= versions:
            st.detail.append("some segments are the originals, others the canary")
        if st.swaps:
            st.detail.append("leftover files: " + ", ".join(st.swaps))
        return st
    if versions <= {"both"}:
        st.state = "identical"
        st.detail.append("the canary is byte-identical to the original (nothing to convert)")
    else:
        st.state = "canary" if "canary" in versions else "original"
    return st


# ---------------------------------------------------------------------------------------------- converge


def _write_swap(live: Path, src: Path, e: FileEntry, mtime: int, steps: Steps) -> None:
    """``<name>.swap`` with exactly ``e``'s bytes: temp file, fsync, checksum, rename, fsync dir. The temp file
    (``.kafkatool-tmp-<name>.swap.tmp``) must not end in ``.swap``: the broker's LogLoader parses the base offset
    of every ``*.swap`` and fails the log's load on a name that has none (NumberFormatException)."""
    tmp = live / temp_name(e.name + SWAP_SUFFIX)
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    copied = copy_file(src / e.name, tmp, mtime_ns=mtime, exclusive=False)
    if (copied.size, copied.sha256) != (e.size, e.sha256):
        os.unlink(tmp)
        raise CanaryStateError(f"{src / e.name} no longer has the checksum the manifest records: the work dir "
                               "changed; nothing more was swapped", path=src / e.name)
    steps.done()  # a kill here leaves the temp file: the broker ignores it, the next run removes it
    os.replace(tmp, live / (e.name + SWAP_SUFFIX))
    fsync_dir(live)
    steps.done()


def _unlink(live: Path, name: str, steps: Steps) -> None:
    os.unlink(live / name)
    fsync_dir(live)
    steps.done()


def _converge_segment(live: Path, src: Path, target: list[FileEntry], mtimes: dict[str, int], steps: Steps) -> int:
    """Bring one segment to the target version. Invariant kept at every instant (it is what the broker's
    LogLoader needs to complete a swap consistently): while ``<base>.log.swap`` exists every ``.swap`` of the
    segment is the same version as it; otherwise every ``.swap`` is the same version as ``<base>.log``."""
    if not target:
        return 0
    base = segment_file(target[0].name)[0]  # type: ignore[index]
    by_name = {e.name: e for e in target}
    hashes = _Hashes(live)
    acts = 0

    def swaps() -> list[str]:
        out = [n for n in os.listdir(live) if n.endswith(SWAP_SUFFIX)
               and (sf := segment_file(n[:-len(SWAP_SUFFIX)])) is not None and sf[0] == base]
        return sorted(out, key=lambda n: SEGMENT_SUFFIXES.index(segment_file(n[:-len(SWAP_SUFFIX)])[1]))  # type: ignore[index]

    # 1. Swaps left by an interrupted run in the other direction: all of them go, index swaps first.
    existing = swaps()
    if any(not hashes.match(n, by_name.get(n[:-len(SWAP_SUFFIX)])) for n in existing):
        for n in reversed(existing):
            _unlink(live, n, steps)
            acts += 1
        hashes = _Hashes(live)
    # 2. Target swaps, .log first, for every file whose final is not the target yet.
    for e in target:
        final_ok = hashes.match(e.name, e)
        swap = e.name + SWAP_SUFFIX
        if final_ok or hashes.match(swap, e):
            continue
        _write_swap(live, src, e, mtimes.get(e.name, e.mtime_ns), steps)
        acts += 1
    # 3. Into place, .log first (a swap whose final already is the target is just removed).
    for e in target:
        swap = e.name + SWAP_SUFFIX
        if (live / swap).exists():
            if hashes.match(e.name, e):
                _unlink(live, swap, steps)
            else:
                os.replace(live / swap, live / e.name)
                fsync_dir(live)
                steps.done()
            acts += 1
    # 4. Files of this segment the target version does not have (e.g. a .txnindex only one version has).
    for n in sorted(os.listdir(live)):
        sf = segment_file(n)
        if sf is not None and sf[0] == base and n not in by_name:
            _unlink(live, n, steps)
            acts += 1
    for e in target:
        m = mtimes.get(e.name, e.mtime_ns)
        p = live / e.name
        if p.stat().st_mtime_ns != m:
            os.utime(p, ns=(m, m))
    return acts


def _newer_epochs(live: Path, original: Path) -> bool:
    """The live ``leader-epoch-checkpoint`` records a later epoch than the original: a broker led the partition
    since the run. The canary never changes epochs, so the broker's file is the truth to keep."""
    try:
        now, then = read_leader_epoch_checkpoint(live), read_leader_epoch_checkpoint(original)
    except KafkaToolError:
        return False
    return bool(now) and (not then or now[-1].epoch > then[-1].epoch)


def _restore_others(live: Path, src: Path, entry: PartitionEntry, steps: Steps, notes: list[str]) -> int:
    """Rollback: every non-segment file (snapshots, checkpoints, partition.metadata) exactly as the original,
    except a leader-epoch-checkpoint that a broker has moved on since (it is kept, and said so)."""
    acts = 0
    keep = {e.name for e in entry.inputs}
    for e in entry.inputs:
        if segment_file(e.name) is not None:
            continue
        p = live / e.name
        if e.name == LEADER_EPOCH_CHECKPOINT and p.is_file() and not matches(p, e) and _newer_epochs(p, src / e.name):
            notes.append(f"{shown(e.name)} kept: a broker recorded newer leader epochs since the canary run")
            continue
        if not matches(p, e):
            tmp = live / temp_name(e.name)  # ".kafkatool-tmp-<N>.snapshot" would fail ProducerStateManager's parse
            copied = copy_file(src / e.name, tmp, mtime_ns=e.mtime_ns, exclusive=False)
            if (copied.size, copied.sha256) != (e.size, e.sha256):
                os.unlink(tmp)
                raise CanaryStateError("the saved original no longer matches the manifest", path=src / e.name)
            steps.done()
            os.replace(tmp, p)
            fsync_dir(live)
            steps.done()
            acts += 1
        elif p.stat().st_mtime_ns != e.mtime_ns:
            os.utime(p, ns=(e.mtime_ns, e.mtime_ns))
    for n in sorted(os.listdir(live)):
        if (live / n).is_file() and n not in keep and segment_file(n) is None:
            os.unlink(live / n)  # a snapshot the broker wrote since apply, a leftover temp file
            fsync_dir(live)
            steps.done()
            acts += 1
    return acts


def _drop_temps(live: Path, steps: Steps) -> None:
    for n in sorted(os.listdir(live)):
        if is_temp_name(n):
            os.unlink(live / n)
            fsync_dir(live)
            steps.done()


# ---------------------------------------------------------------------------------------------- apply / rollback


@dataclass(slots=True)
class Outcome:
    partition: str
    before: str
    after: str
    actions: int
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"partition": self.partition, "before": self.before, "after": self.after, "actions": self.actions,
                "notes": self.notes}


@dataclass(slots=True)
class SwapResult:
    op: str
    log_dir: str
    outcomes: list[Outcome]
    steps: int


def _selected(m: Manifest, patterns: Sequence[str] | None) -> list[PartitionEntry]:
    if not patterns:
        return list(m.partitions)
    globs = [g.strip() for p in patterns for g in p.split(",") if g.strip()]
    out = [p for p in m.partitions if any(fnmatch.fnmatchcase(p.name, g) for g in globs)]
    if not out:
        raise UsageError("matches no partition of this canary", field="partitions")
    return out


def check_workdir_files(w: Workdir, entries: list[PartitionEntry], *, canary: bool) -> None:
    """The saved originals (and the canary outputs) still have the checksums the manifest records."""
    for p in entries:
        for e in p.inputs:
            if not matches(w.originals(p.name) / e.name, e):
                raise CanaryStateError(f"{shown(p.name)}: the saved original {shown(e.name)} does not match the "
                                       "manifest: a byte-exact rollback is impossible, refusing",
                                       path=w.originals(p.name) / e.name)
        if canary:
            for e in p.outputs:
                if not matches(w.canary(p.name) / e.name, e):
                    raise CanaryStateError(f"{shown(p.name)}: canary file {shown(e.name)} changed since `canary run`: "
                                           "run it again", path=w.canary(p.name) / e.name)


def _require_verified(w: Workdir, m: Manifest) -> None:
    v = w.read_optional(w.verified_path)
    if v is None:
        raise UsageError(f"the canary has not been verified: run `kafkatool canary verify {shown(w.path)}` first")
    if not v.get("ok"):
        raise CanaryStateError(f"the last `kafkatool canary verify {shown(w.path)}` failed: nothing is applied")
    if v.get("manifest_sha256") != hash_file(w.manifest_path)[1]:
        raise CanaryStateError("the manifest changed since it was verified: verify again")


def _journal(w: Workdir, op: str, state: str, names: list[str], steps: Steps, lock_existed: bool,
             lock_id: list[int] | None = None) -> None:
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    entry: dict[str, object] = {"op": op, "state": state, "partitions": names, "at": now, "steps": steps.count,
                                "lock_existed": lock_existed}
    if lock_id is not None:
        entry["lock_id"] = lock_id  # (st_dev, st_ino, st_ctime_ns) of the .lock this run created
    w.write_json(w.journal_path, entry)
    steps.done()


def _file_id(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_ctime_ns]  # ctime too: a freed inode number is soon reused


def _swap_partition(w: Workdir, p: PartitionEntry, op: str, log_dir: Path, before: str, steps: Steps,
                    note: Progress) -> Outcome:
    live = log_dir / p.name
    src = w.canary(p.name) if op == "apply" else w.originals(p.name)
    target = p.outputs if op == "apply" else p.inputs
    # Same-named files keep the originals' mtimes in both directions.
    mtimes = {e.name: e.mtime_ns for e in p.outputs} | {e.name: e.mtime_ns for e in p.inputs}
    acts = 0
    for base in p.segments:
        acts += _converge_segment(live, src, _segment_entries(target, base), mtimes, steps)
    notes: list[str] = []
    if op == "rollback":
        acts += _restore_others(live, src, p, steps, notes)
    _drop_temps(live, steps)
    after = classify(live, p)
    want = ("canary" if op == "apply" else "original", "identical")
    if after.state not in want:
        raise CanaryStateError(f"{shown(p.name)}: after {op} the partition is {after.state} "
                               f"({'; '.join(after.detail)}): internal error", path=live)
    note(f"{shown(p.name)}: {before} -> {after.state} ({acts} change(s))")
    for n in notes:
        note(f"{shown(p.name)}: {n}")
    return Outcome(p.name, before, after.state, acts, notes)


def swap(workdir: str | os.PathLike[str], op: str, *, partitions: Sequence[str] | None = None,
         progress: Progress | None = None) -> SwapResult:
    """``op`` "apply" (target: the canary) or "rollback" (target: the originals)."""
    if op not in ("apply", "rollback"):
        raise ValueError(op)
    note = progress or (lambda _s: None)
    w = Workdir(workdir)
    m = w.read_manifest()
    entries = _selected(m, partitions)
    if op == "apply":
        _require_verified(w, m)
    check_workdir_files(w, entries, canary=op == "apply")
    log_dir = Path(m.log_dir)
    refuse_if_live(log_dir)  # before the journal: a refused run changes nothing, not even the work dir
    steps = Steps()
    outcomes: list[Outcome] = []
    names = [p.name for p in entries]
    # The log dir's .lock: hold_log_dir creates it when absent and removes it after; a run killed meanwhile leaves
    # it behind, which the journal (written before the lock is taken) tells the next run, so that it goes too.
    # Only the very file the killed run created (same device, inode and ctime, recorded in the journal once it held it)
    # is removed: a .lock recreated since (a broker that started in between) is never ours to delete. A kill
    # between creating the .lock and recording it leaves an unlocked empty .lock, as every broker shutdown does.
    lock_path = log_dir / LOCK_FILE
    prev = w.read_optional(w.journal_path)
    leftover = bool(prev and prev.get("state") == "running" and prev.get("lock_existed") is False
                    and prev.get("lock_id") is not None and _file_id(lock_path) == prev.get("lock_id"))
    lock_existed = lock_path.exists() and not leftover
    _journal(w, op, "running", names, steps, lock_existed)
    try:
        with hold_log_dir(log_dir):
            if not lock_existed and not leftover:
                _journal(w, op, "running", names, steps, lock_existed, _file_id(lock_path))
            before = {}
            for p in entries:  # every partition checked before anything is written
                st = classify(log_dir / p.name, p)
                if st.state in ("changed", "missing"):
                    detail = "; ".join(st.detail) or "no partition dir"
                    raise CanaryStateError(f"{shown(p.name)}: {st.state}: {detail}; refusing to {op} (nothing was "
                                           "changed)", path=log_dir / p.name)
                before[p.name] = st.state
            for p in entries:
                outcomes.append(_swap_partition(w, p, op, log_dir, before[p.name], steps, note))
            if leftover:
                lock_path.unlink()  # ours, from the killed run (we hold it: a starting broker makes a new one)
        # "done" only once the .lock we created is gone too: a kill before this leaves "running" for the next run.
        _journal(w, op, "done", names, steps, lock_existed)
    except (CanaryStateError, BrokerLockHeldError):
        if not outcomes:  # nothing changed: keep an interrupted run's journal, else record the refusal
            if prev is not None and prev.get("state") == "running":
                w.write_json(w.journal_path, prev)
            else:
                _journal(w, op, "refused", names, steps, lock_existed)
        raise
    return SwapResult(op, str(log_dir), outcomes, steps.count)
