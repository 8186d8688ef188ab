"""What a 3.9 broker's own log loading would do to a partition dir at startup, worked out read-only.

``LogLoader.load`` (``core/src/main/scala/kafka/log/LogLoader.scala``, 3.9), step by step:

1. ``removeTempFilesAndCollectSwapFiles``: delete ``*.deleted`` (not KRaft ``.checkpoint.deleted``) and
   ``*.cleaned`` files; delete ``.swap`` files whose offset >= the smallest ``.cleaned`` offset (an
   unfinished split, KAFKA-6264); the other ``.swap`` files are kept.
2. For each kept ``.log.swap``: segments with base offset in [swap base, swap's next offset) are deleted
   (compacted or split, not yet deleted), then every ``.swap`` file is renamed to its real name.
3. ``loadSegmentFiles``: delete index files without a ``.log``; a missing ``.timeindex`` is created empty;
   a missing ``.index`` or a ``.txnindex`` failing its sanity check makes the broker recover the segment
   there and then (its truncation deletes nothing else; an ``InvalidOffsetException`` is not caught here).
4. ``recoverLog``, only without ``.kafka_cleanshutdown``: recover every segment from the one holding the
   recovery point on (``recovery-point-offset-checkpoint``, 0 when missing), in order; the first one that
   loses bytes (a truncation, or ``InvalidOffsetException``: emptied) stops recovery and every later
   segment is deleted. Offset overflow: the segment is split and loading restarts.
5. If the log end offset is below ``log-start-offset-checkpoint``, every segment is deleted.

Partition dirs renamed ``*-delete`` are not recovered (the broker deletes them). Recovery checks CRCs
(``ensureValid``) and parses transaction markers (the producer-state update), so the segments it would
recover are read in full here too. A failure the broker does not survive (an ``InvalidOffsetException`` at
load, a malformed transaction marker: ``recover_control``) is the last step reported: the broker never gets
further. Producer-state snapshots themselves are not modelled: a marker in a segment that is not recovered
is not checked.

Each step carries its figures as fields as well as in its text: ``truncate_at``/``truncated_bytes`` for a
segment recovery, ``deleted_bytes`` for a deleted segment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES
from kafkatool.errors import KafkaToolError
from kafkatool.log.checkpoints import read_offset_checkpoint
from kafkatool.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    PartitionDir,
    TopicPartition,
    log_dir_of,
    offset_from_filename,
)
from kafkatool.log.recovery import SegmentRecovery, recover_segment
from kafkatool.log.txn_index import txn_index_sanity_check
from kafkatool.util import budget as _budget

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
KRAFT_SNAPSHOT_DELETED = ".checkpoint.deleted"
_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


@dataclass(frozen=True, slots=True)
class LogDirState:
    """What LogManager reads from a log dir before loading its partitions."""

    path: Path
    clean_shutdown: bool
    recovery_points: dict[TopicPartition, int]
    log_start_offsets: dict[TopicPartition, int]
    notes: tuple[str, ...] = ()

    @classmethod
    def read(cls, log_dir: Path) -> LogDirState:
        notes = []

        def checkpoint(name: str) -> dict[TopicPartition, int]:
            p = log_dir / name
            if not p.exists():
                notes.append(f"no {name}: the broker uses 0 for every partition")
                return {}
            try:
                return read_offset_checkpoint(p)
            except KafkaToolError as e:  # LogManager logs the error and resets to 0
                notes.append(f"{name} is unreadable ({e.message}): the broker resets it to 0")
                return {}

        return cls(log_dir, (log_dir / CLEAN_SHUTDOWN_FILE).exists(), checkpoint(RECOVERY_POINT_CHECKPOINT),
                   checkpoint(LOG_START_CHECKPOINT), tuple(notes))


@dataclass(frozen=True, slots=True)
class Step:
    action: str
    path: str | None
    detail: str
    loses_data: bool = False  # bytes or segments of the log are removed
    fails: bool = False  # the broker would fail to load the partition (the last step reported)
    truncate_at: int | None = None  # recover: the .log's size after the broker's recovery (when it shrinks)
    truncated_bytes: int | None = None  # recover: bytes the broker removes from the .log (0: none)
    deleted_bytes: int | None = None  # delete-unflushed / delete-all: the segment files' .log bytes removed


@dataclass(slots=True)
class PartitionRecovery:
    partition: str
    path: Path
    clean_shutdown: bool
    recovery_point: int
    log_start_offset: int  # as the loaded log has it: max(log-start-offset-checkpoint, first segment's base)
    steps: list[Step] = field(default_factory=list)
    rebuilt_segments: list[int] = field(default_factory=list)  # base offsets whose indexes are rebuilt

    @property
    def loses_data(self) -> bool:
        return any(s.loses_data or s.fails for s in self.steps)

    @property
    def fails(self) -> bool:
        return any(s.fails for s in self.steps)

    @property
    def lost_bytes(self) -> int:
        """Log bytes the broker's startup removes: truncations and deleted segments."""
        return sum((s.truncated_bytes or 0) + (s.deleted_bytes or 0) for s in self.steps)


def _outcome(r: SegmentRecovery) -> str:
    if r.control is not None:
        cut = r.file_size - r.broker_truncates_to
        lost = f"truncates {cut} bytes at byte {r.broker_truncates_to}, then " if cut else ""
        return f"{lost}fails: {r.control.describe()}"
    if r.fatal == "invalid-offset":
        return f"empties the segment ({r.error.message if r.error else 'InvalidOffsetException'})"
    if r.fatal == "offset-overflow":
        return "splits the segment (offsets beyond its int32 range) and reloads"
    if r.truncated_bytes:
        if r.error is not None:
            why = f"first invalid batch: {r.error.message}"
        else:
            why = f"a torn tail: {r.stop.message}" if r.stop else "a torn tail"
        return f"truncates {r.truncated_bytes} bytes at byte {r.valid_bytes} ({why})"
    return "clean"


def _recover_step(name: str, r: SegmentRecovery, detail: str, *, loses_data: bool, fails: bool = False) -> Step:
    kept = r.broker_truncates_to
    cut = r.file_size - kept
    return Step("recover", name, detail, loses_data=loses_data, fails=fails,
                truncate_at=kept if cut else None, truncated_bytes=cut)


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _marker_failure(r: SegmentRecovery, name: str) -> Step:
    """The end of a load whose recovery met a malformed transaction marker (``recover_control``)."""
    assert r.control is not None
    return Step("load-fails", name, f"{r.control.exception} from the transaction marker at byte "
                f"{r.control.position}, not caught while the producer state is rebuilt: loading the partition "
                "fails and the broker does not start", fails=True)


def simulate(part: PartitionDir, state: LogDirState, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
             verify: bool = True) -> PartitionRecovery:
    tp = part.topic_partition
    rp = state.recovery_points.get(tp, 0) if tp else 0
    lso = state.log_start_offsets.get(tp, 0) if tp else 0
    out = PartitionRecovery(part.name, part.path, state.clean_shutdown, rp, lso)
    steps = out.steps
    files = {n: part.path / n for n in sorted(os.listdir(part.path)) if (part.path / n).is_file()}

    # 1. temporary files
    min_cleaned = min((offset_from_filename(n) for n in files if n.endswith(CLEANED_SUFFIX)), default=None)
    for n in list(files):
        if n.endswith(DELETED_SUFFIX) and not n.endswith(KRAFT_SNAPSHOT_DELETED):
            steps.append(Step("delete-stray", n, "a file already marked for deletion"))
            del files[n]
        elif n.endswith(CLEANED_SUFFIX):
            steps.append(Step("delete-cleaned", n, "unfinished cleaner output"))
            del files[n]
        elif n.endswith(SWAP_SUFFIX) and min_cleaned is not None and offset_from_filename(n) >= min_cleaned:
            steps.append(Step("delete-invalid-swap", n, f"offset >= the smallest .cleaned offset {min_cleaned}: "
                              "an unfinished split (KAFKA-6264)"))
            del files[n]
    # 2. swaps: delete what they replace, then rename them
    real = {n: p for n, p in files.items()}  # name after renames -> the file that holds its bytes now
    swaps = [n for n in files if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)]
    if swaps:
        lo = min(offset_from_filename(n) for n in swaps)
        hi = max(recover_segment(files[n], offset_from_filename(n)).next_offset for n in swaps)
        for n in list(real):
            if not n.endswith(SWAP_SUFFIX) and n[:1].isdigit() and lo <= _offset_or(n, -1) < hi:
                steps.append(Step("delete-compacted", n, f"replaced by the swap segment(s) covering [{lo}, {hi})"))
                del real[n]
        for n in [x for x in real if x.endswith(SWAP_SUFFIX)]:
            new = n[:-len(SWAP_SUFFIX)]
            steps.append(Step("rename-swap", n, f"completes the interrupted swap as {new}"))
            real[new] = real.pop(n)
    # 3. loadSegmentFiles
    logs = sorted(offset_from_filename(n) for n in real if n.endswith(LOG_SUFFIX) and n[:1].isdigit())
    for n in sorted(real):
        if n.endswith(_INDEX_SUFFIXES) and n[:1].isdigit() and offset_from_filename(n) not in logs:
            steps.append(Step("delete-orphan-index", n, "an index file without its .log"))
            del real[n]
    truncated_in_load: set[int] = set()
    marker: tuple[SegmentRecovery, str, int] | None = None  # a malformed marker recovery kept: loading fails
    for base in logs:
        prefix = f"{base:020d}"
        log = real[prefix + LOG_SUFFIX]
        if prefix + TIME_INDEX_SUFFIX not in real:
            steps.append(Step("create-time-index", prefix + TIME_INDEX_SUFFIX,
                              "missing: created empty (rebuilt only if the segment is recovered)"))
        reason = None
        if prefix + INDEX_SUFFIX not in real:
            reason = "its .index is missing"
        elif prefix + TXN_INDEX_SUFFIX in real:
            try:
                txn_index_sanity_check(real[prefix + TXN_INDEX_SUFFIX], base)
            except KafkaToolError as e:
                reason = f"its .txnindex fails the sanity check ({e.message})"
        if reason is not None:
            r = recover_segment(log, base, index_interval_bytes=index_interval_bytes, verify=verify)
            out.rebuilt_segments.append(base)
            fails = r.fatal == "invalid-offset" or (r.control is not None and r.control.outcome == "unhandled")
            steps.append(_recover_step(prefix + LOG_SUFFIX, r, f"at load, because {reason}: {_outcome(r)}"
                                       + ("; InvalidOffsetException is not caught there: loading the partition "
                                          "fails" if r.fatal == "invalid-offset" else ""),
                                       loses_data=bool(r.file_size - r.broker_truncates_to) and not fails,
                                       fails=fails))
            if fails:
                return out  # the broker gets no further
            if r.control is not None and marker is None:
                marker = (r, prefix + LOG_SUFFIX, base)
            if r.truncated_bytes:
                truncated_in_load.add(base)
    if logs:  # LogLoader.load: the log start offset is max(checkpoint, first segment's base offset)
        out.log_start_offset = max(lso, logs[0])
    # 4. recoverLog
    if part.kind == "delete":
        steps.append(Step("no-recovery", None, "the partition dir is marked for deletion: the broker deletes it"))
        return out
    sizes = {b: _log_size(real[f"{b:020d}{LOG_SUFFIX}"]) for b in logs}
    if state.clean_shutdown:
        steps.append(Step("no-recovery", None, f"{CLEAN_SHUTDOWN_FILE} is present: no segment is recovered"))
    else:
        floor = max((b for b in logs if b <= rp), default=logs[0] if logs else None)
        unflushed = [b for b in logs if floor is not None and b >= floor]
        if not unflushed:
            steps.append(Step("no-recovery", None, "no segments"))
        for i, base in enumerate(unflushed):
            prefix = f"{base:020d}"
            r = recover_segment(real[prefix + LOG_SUFFIX], base, index_interval_bytes=index_interval_bytes,
                                verify=verify)
            if base not in out.rebuilt_segments:
                out.rebuilt_segments.append(base)
            unhandled = r.control is not None and r.control.outcome == "unhandled"
            cut = r.file_size - r.broker_truncates_to
            lost = r.fatal == "invalid-offset" or (bool(cut) and base not in truncated_in_load)
            outcome = "clean (truncated at load already)" if base in truncated_in_load and not lost else _outcome(r)
            steps.append(_recover_step(prefix + LOG_SUFFIX, r,
                                       f"unflushed (recovery point {rp}): rebuilds .index, .timeindex, .txnindex "
                                       f"and producer state: {outcome}", loses_data=lost, fails=unhandled))
            if unhandled:
                return out  # the exception escapes recover(): the broker gets no further
            if r.control is not None and marker is None:
                marker = (r, prefix + LOG_SUFFIX, base)
            if r.fatal == "offset-overflow":
                continue
            if lost:
                for later in unflushed[i + 1:]:
                    steps.append(Step("delete-unflushed", f"{later:020d}{LOG_SUFFIX}",
                                      f"after the truncation of segment {base}: deleted with its indexes",
                                      loses_data=True, deleted_bytes=sizes[later]))
                break
            if marker is not None and marker[2] <= base:
                break  # the next segment's recovery rebuilds the producer state over the marker: it fails there
    # 5. log start offset above the log end
    if logs and not any(s.action == "delete-unflushed" for s in steps):
        last = logs[-1]
        end = recover_segment(real[f"{last:020d}{LOG_SUFFIX}"], last).next_offset
        if end < lso:
            out.log_start_offset = lso  # recoverLog returns the checkpoint's offset: the log starts anew there
            steps.append(Step("delete-all", None, f"log end offset {end} is below the log start offset {lso} "
                              f"({LOG_START_CHECKPOINT}): every segment is deleted", loses_data=True,
                              deleted_bytes=sum(sizes.values()) - sum(s.truncated_bytes or 0 for s in steps)))
    # 6. rebuildProducerState over a malformed marker that recovery kept
    if marker is not None:
        steps.append(_marker_failure(marker[0], marker[1]))
    return out


def _offset_or(name: str, default: int) -> int:
    try:
        return offset_from_filename(name)
    except KafkaToolError:
        return default


def _simulate_task(args: tuple[PartitionDir, LogDirState, int, bool]) -> PartitionRecovery:
    part, state, interval, verify = args
    return simulate(part, state, index_interval_bytes=interval, verify=verify)


def report(partitions: list[PartitionDir], *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
           verify: bool = True, jobs: int = 1,
           on_done: Callable[[PartitionRecovery], None] | None = None) -> Iterator[PartitionRecovery]:
    """The simulation for each partition dir (its log dir's checkpoints read once), in input order."""
    states: dict[Path, LogDirState] = {}
    work = []
    for part in partitions:
        d = log_dir_of(part.path)
        if d not in states:
            states[d] = LogDirState.read(d)
        work.append((part, states[d], index_interval_bytes, verify))
    if jobs <= 1 or len(work) <= 1:
        results: Iterator[PartitionRecovery] = map(_simulate_task, work)
        for res in results:
            if on_done:
                on_done(res)
            yield res
        return
    with ProcessPoolExecutor(max_workers=jobs, initializer=_budget.activate, initargs=(_budget.current(),)) as pool:
        for res in pool.map(_simulate_task, work):
            if on_done:
                on_done(res)
            yield res


def log_dir_notes(partitions: list[PartitionDir]) -> list[tuple[Path, LogDirState]]:
    seen: dict[Path, LogDirState] = {}
    for part in partitions:
        d = log_dir_of(part.path)
        if d not in seen:
            seen[d] = LogDirState.read(d)
    return list(seen.items())
