"""Judging on-disk ``.index``/``.timeindex`` files against the log: what would the broker do with them?

The rebuilt index (``LogSegment.recover``) is one correct answer, not the only one: a follower or the
cleaner appends several batches at once and indexes the chunk (last offset of its last batch, position
of its first batch); a leader up to 3.6 stored the offset of the max-timestamp *record* inside an
uncompressed v2 batch; a different ``index.interval.bytes`` or a broker restart moves the index
points. So every on-disk entry is checked for what the broker uses it for, not for equality:

Offset index entry (offset O, position P), used by ``OffsetIndex.lookup(target)`` -> scan from P for the
first batch with lastOffset >= target. It is *valid* when P is a batch start inside the log, every batch
before P ends below O (so no target >= O is skipped), and offsets and positions strictly increase.

Time index entry (timestamp T, offset O), used by ``TimeIndex.lookup(ts)`` -> the offset index from O ->
scan for the first batch with maxTimestamp >= ts. It is *valid* when O is inside the log, every batch
before the one holding O has maxTimestamp < T, and timestamps strictly increase (offsets do not fall).
The last entry is also the segment's largest timestamp for the broker (``maxTimestampSoFar``: time
retention, ``ListOffsets`` MAX_TIMESTAMP), so it must equal the log's.

Each check is a :class:`~kafkatool.log.recovery.fast.ChunkObserver`: it is answered while the rebuild walks
the log, chunk by chunk, so memory does not grow with the segment.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from kafkatool._accel import speedups as _C
from kafkatool.errors import InputError
from kafkatool.log.index import MAX_INDEX_READ, OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE
from kafkatool.log.recovery.fast import BatchChunk
from kafkatool.util.regular import open_regular

I64 = npt.NDArray[np.int64]
IndexType = Literal["offset", "time"]

_OFFSET = np.dtype([("rel", ">i4"), ("pos", ">i4")])
_TIME = np.dtype([("ts", ">i8"), ("rel", ">i4")])


class Severity(str, enum.Enum):
    ERROR = "error"  # the broker would misbehave with this file (exit 1)
    WARNING = "warning"  # correct but costly (a slow startup, full-segment scans), or worth an operator's look
    INFO = "info"  # valid and harmless, only different from a rebuild

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


# Finding kinds, in the order they are reported.
MISSING = "missing"
UNTRIMMED = "untrimmed"
CORRUPT = "corrupt"
STALE = "stale"
PAST_INVALID_BATCH = "past-invalid-batch"
NOT_REGULAR = "not-a-regular-file"  # NotRegularFileError.finding: a FIFO, a device, a directory, a bad symlink
VALID_DIFFERENT = "valid-different"
OK = "ok"


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    severity: Severity
    reason: str  # a short token: partial-entry, not-batch-start, lookup-after-target, multi-batch-append, ...
    message: str
    entry: int | None = None  # slot of the first entry concerned
    count: int = 0  # entries concerned


@dataclass(slots=True)
class OnDiskIndex:
    """An index file as the broker opens it (``entries = length / entrySize``) and as it really is."""

    path: Path
    length: int
    slots: int
    partial_bytes: int
    padding_slots: int  # trailing all-zero slots (preallocated, never written)
    first: I64  # offset index: absolute offsets; time index: timestamps
    second: I64  # offset index: positions; time index: absolute offsets
    raw: bytes  # the entries' bytes, padding excluded

    @property
    def entries(self) -> int:
        return len(self.first)


def load_index(path: Path, index_type: IndexType, base_offset: int) -> OnDiskIndex | None:
    """The file's entries, or None if it does not exist (``NotRegularFileError`` if it is not a regular file).
    Trailing all-zero slots are padding: Kafka never writes an all-zero entry (position 0 is never indexed; a
    time entry needs a timestamp > -1 *and* relative offset 0 only for the first batch)."""
    size = TIME_ENTRY_SIZE if index_type == "time" else OFFSET_ENTRY_SIZE
    try:
        with open_regular(path) as f:
            if f.size > MAX_INDEX_READ:
                raise InputError(f"index file of {f.size} bytes is larger than any Kafka index", path=path)
            data = f.read_all()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=path) from None
    slots = len(data) // size
    end = slots * size
    if slots and any(data[end - size:end]):
        n = slots  # the last whole slot holds an entry: no padding (no copy of the entries to find out)
    else:
        n = -(-len(data[:end].rstrip(b"\0")) // size)
    raw = data if n * size == len(data) else data[:n * size]
    arr = np.frombuffer(raw, dtype=_TIME if index_type == "time" else _OFFSET)
    if index_type == "time":
        first, second = arr["ts"].astype(np.int64), arr["rel"].astype(np.int64) + base_offset
    else:
        first, second = arr["rel"].astype(np.int64) + base_offset, arr["pos"].astype(np.int64)
    return OnDiskIndex(path, len(data), slots, len(data) % size, slots - n, first, second, raw)


_INT64_MIN = int(np.iinfo(np.int64).min)


def _order(keys: I64) -> I64 | None:
    """The stable sort order of ``keys``; None when they are already sorted (the order of any index Kafka wrote)."""
    if len(keys) < 2 or bool((keys[1:] >= keys[:-1]).all()):
        return None
    return np.argsort(keys, kind="stable")


def _native_int64(*arrays: npt.NDArray[np.generic]) -> bool:
    """What the compiled answers read: native int64, C-contiguous (anything else goes through numpy)."""
    return all(a.dtype == np.int64 and a.flags.c_contiguous for a in arrays)


class OffsetEntriesCheck:
    """Answers, for each on-disk offset entry, the batch at its position and the largest last offset
    of the batches before it (queries sorted by position, answered chunk by chunk)."""

    def __init__(self, positions: I64) -> None:
        self.order = _order(positions)
        self.sorted = positions if self.order is None else positions[self.order]
        n = len(positions)
        self.is_start = np.zeros(n, bool)
        self.batch_last = np.full(n, -1, np.int64)
        self.prior_max = np.full(n, _INT64_MIN, np.int64)
        self._carry = _INT64_MIN

    def feed(self, chunk: BatchChunk) -> None:
        q, last = chunk.positions, chunk.last_offsets
        if _C is not None and _native_int64(q, chunk.sizes, last, self.sorted):
            carry = _C.answer_positions(q, chunk.sizes, last, self.sorted, self.order, self.is_start,
                                        self.batch_last, self.prior_max, self._carry)
            if carry is not None:
                self._carry = carry
                return
        lo = int(np.searchsorted(self.sorted, q[0], side="left"))
        hi = int(np.searchsorted(self.sorted, q[-1] + chunk.sizes[-1], side="left"))
        if hi > lo:
            x = self.sorted[lo:hi]
            j = np.searchsorted(q, x, side="right") - 1
            pm = np.maximum.accumulate(np.concatenate(([self._carry], last)))  # pm[j] = max before batch j
            idx = np.arange(lo, hi) if self.order is None else self.order[lo:hi]
            self.is_start[idx] = q[j] == x
            self.batch_last[idx] = last[j]
            self.prior_max[idx] = pm[j]
        self._carry = max(self._carry, int(last.max()))


class TimeEntriesCheck:
    """Answers, for each on-disk time entry, the batch holding its offset (the first whose lastOffset
    reaches it) and the largest maxTimestamp of the batches before that one."""

    def __init__(self, offsets: I64) -> None:
        self.order = _order(offsets)
        self.sorted = offsets if self.order is None else offsets[self.order]
        n = len(offsets)
        self.found = np.zeros(n, bool)
        self.batch_last = np.full(n, -1, np.int64)
        self.prior_max_ts = np.full(n, _INT64_MIN, np.int64)
        self._carry_last = _INT64_MIN
        self._carry_ts = _INT64_MIN
        self._done = 0

    def feed(self, chunk: BatchChunk) -> None:
        last, mts = chunk.last_offsets, chunk.max_timestamps
        if _C is not None and _native_int64(last, mts, self.sorted):
            r = _C.answer_times(last, mts, self.sorted, self.order, self.found, self.batch_last, self.prior_max_ts,
                                self._carry_last, self._carry_ts, self._done)
            if r is not None:
                self._carry_last, self._carry_ts, self._done = r
                return
        reach = np.maximum.accumulate(np.concatenate(([self._carry_last], last)))[1:]
        hi = int(np.searchsorted(self.sorted, reach[-1], side="right"))
        if hi > self._done:
            o = self.sorted[self._done:hi]
            j = np.searchsorted(reach, o, side="left")
            tm = np.maximum.accumulate(np.concatenate(([self._carry_ts], mts)))  # tm[j] = max ts before batch j
            idx = np.arange(self._done, hi) if self.order is None else self.order[self._done:hi]
            self.found[idx] = True
            self.batch_last[idx] = last[j]
            self.prior_max_ts[idx] = tm[j]
            self._done = hi
        self._carry_last = int(reach[-1])
        self._carry_ts = max(self._carry_ts, int(mts.max()))


@dataclass(slots=True)
class IndexCheck:
    """The verdict on one index file."""

    path: Path
    index_type: IndexType
    findings: list[Finding] = field(default_factory=list)
    on_disk_entries: int | None = None  # None: missing
    rebuilt_entries: int = 0
    length: int | None = None

    @property
    def status(self) -> str:
        if not self.findings:
            return OK
        worst = max(self.findings, key=lambda f: f.severity.rank)
        return worst.kind

    @property
    def severity(self) -> Severity | None:
        return max((f.severity for f in self.findings), key=lambda s: s.rank, default=None)

    @property
    def differs(self) -> bool:
        return bool(self.findings)


@dataclass(frozen=True, slots=True)
class SegmentFacts:
    """What the verdicts depend on besides the file."""

    base_offset: int
    valid_bytes: int  # the log as recovery keeps it
    last_offset: int | None
    max_timestamp: int  # -1: no timestamps (v0)
    active: bool  # the partition's last segment
    broker_rebuilds: bool  # the broker recovers this segment at startup anyway (its .index is missing)
    log_size: int | None = None  # the .log's size on disk (None: valid_bytes)
    invalid_batch: bool = False  # recovery stops at an invalid batch with more log after it (not a torn tail)

    @property
    def size(self) -> int:
        return self.valid_bytes if self.log_size is None else self.log_size


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word[:-1]}ies" if word.endswith("y") else f"{count} {word}s"


def _cap(sev: Severity, facts: SegmentFacts) -> Severity:
    # A segment the broker rebuilds at startup cannot be misled by its old files.
    return Severity.WARNING if facts.broker_rebuilds and sev == Severity.ERROR else sev


def _first(mask: npt.NDArray[np.bool_]) -> tuple[int, int]:
    idx = np.flatnonzero(mask)
    return int(idx[0]), len(idx)


def _common(check: IndexCheck, disk: OnDiskIndex, facts: SegmentFacts, entry_size: int) -> None:
    check.on_disk_entries = disk.entries
    check.length = disk.length
    if disk.partial_bytes:
        check.findings.append(Finding(
            CORRUPT, _cap(Severity.ERROR, facts), "partial-entry",
            f"length {disk.length} is not a multiple of {entry_size} ({disk.partial_bytes} trailing bytes): a torn "
            "write; the broker's sanity check rejects it"))
    if disk.padding_slots:
        if facts.active:
            sev, why = Severity.INFO, ("normal for the active segment of a broker that did not shut down "
                                       "cleanly; the broker rebuilds the active segment at startup")
        elif check.index_type == "time":
            sev, why = Severity.ERROR, ("the broker counts the zero slots as entries: it reads the last one, "
                                        "(timestamp 0, base offset), as the segment's largest timestamp, so time "
                                        "retention deletes the segment at once and time lookups degrade")
        else:
            sev, why = Severity.WARNING, ("the broker counts the zero slots as entries: lookups past the real "
                                          "entries fall back to position 0 and scan the whole segment")
        check.findings.append(Finding(
            UNTRIMMED, _cap(sev, facts), "zero-padded",
            f"{_n(disk.entries, 'entry')} followed by {disk.padding_slots} zero slots ({disk.length} bytes, "
            f"preallocated and never trimmed): {why}", disk.entries, disk.padding_slots))


def check_offset_index(disk: OnDiskIndex | None, answers: OffsetEntriesCheck | None, rebuilt: bytes,
                       facts: SegmentFacts, path: Path) -> IndexCheck:
    check = IndexCheck(path, "offset", rebuilt_entries=len(rebuilt) // OFFSET_ENTRY_SIZE)
    if disk is None:
        check.findings.append(Finding(
            MISSING, Severity.WARNING, "missing",
            "no .index: the broker rebuilds the whole segment (both indexes) at startup, one segment at a time"))
        return check
    _common(check, disk, facts, OFFSET_ENTRY_SIZE)
    off, pos = disk.first, disk.second
    n = disk.entries
    last = facts.last_offset if facts.last_offset is not None else facts.base_offset - 1
    if n and answers is not None and not _offset_entries_clean(off, pos, answers, facts.base_offset, last,
                                                               facts.valid_bytes):
        before_base = off < facts.base_offset
        past = (pos >= facts.valid_bytes) | (off > last)
        # Past an invalid batch the log still holds bytes the walk did not check: not stale, unverifiable.
        unchecked = past & (pos < facts.size) if facts.invalid_batch else np.zeros(n, bool)
        prev_off = np.concatenate(([_INT64_MIN], off[:-1]))
        prev_pos = np.concatenate(([-1], pos[:-1]))
        not_increasing = (off <= prev_off) | (pos <= prev_pos)
        live = ~past & ~before_base & (pos >= 0)
        not_start = live & ~answers.is_start
        after_target = live & answers.is_start & (answers.prior_max >= off)
        for mask, kind, reason, text in (
                (before_base, CORRUPT, "before-base", "offset below the segment's base offset"),
                (pos < 0, CORRUPT, "negative-position", "negative position"),
                (not_increasing & ~past, CORRUPT, "not-increasing",
                 "offsets or positions do not increase: the binary search goes wrong"),
                (not_start, CORRUPT, "not-batch-start",
                 "position is not the start of a batch: a fetch would parse from the middle of a batch"),
                (after_target, CORRUPT, "lookup-after-target",
                 "a batch before the position holds offsets up to or past the entry's: fetches for them start "
                 "too late and skip records"),
                (past & ~unchecked, STALE, "past-end",
                 f"points past the end of the log (valid bytes {facts.valid_bytes}, last offset {last}): the log "
                 "was truncated after this index was written; the broker would compute a wrong log end offset"),
                (unchecked, PAST_INVALID_BATCH, "after-invalid-batch",
                 _past_invalid_text(f"at or past byte {facts.valid_bytes}"))):
            if mask.any():
                i, count = _first(mask)
                sev = Severity.INFO if kind == PAST_INVALID_BATCH else _cap(Severity.ERROR, facts)
                check.findings.append(Finding(
                    kind, sev, reason,
                    f"{count} of {_n(n, 'entry')}: {text} (first: entry {i}, offset {int(off[i])} position "
                    f"{int(pos[i])})",
                    i, count))
    if any(f.kind in (CORRUPT, STALE) for f in check.findings):
        return check
    k = n - _unchecked_entries(check)
    if disk.raw[:OFFSET_ENTRY_SIZE * k] != rebuilt:
        check.findings.append(_offset_difference(disk, answers, rebuilt, k))
    return check


def _offset_entries_clean(off: I64, pos: I64, answers: OffsetEntriesCheck, base: int, last: int,
                          valid_bytes: int) -> bool:
    """True when none of check_offset_index's entry masks can hold: offsets and positions strictly increase from
    the base offset and position 0 to the last offset and the valid bytes, every position starts a batch, and no
    earlier batch reaches an entry's offset. Seven array operations instead of some thirty: the verdict of an
    index Kafka wrote (a clean entry is exactly one no mask flags; the masks run when this is False)."""
    return (int(off[0]) >= base and int(pos[0]) >= 0 and int(off[-1]) <= last and int(pos[-1]) < valid_bytes
            and bool(answers.is_start.all()) and bool((off[1:] > off[:-1]).all())
            and bool((pos[1:] > pos[:-1]).all()) and not bool((answers.prior_max >= off).any()))


def _time_entries_clean(ts: I64, off: I64, answers: TimeEntriesCheck, base: int, last: int) -> bool:
    """check_time_index's counterpart of :func:`_offset_entries_clean`: timestamps strictly increase from 0,
    offsets do not fall, from the base offset to the last offset, each entry's batch was found, and no earlier
    batch holds a timestamp at or above the entry's."""
    return (int(ts[0]) >= 0 and int(off[0]) >= base and int(off[-1]) <= last and bool(answers.found.all())
            and bool((ts[1:] > ts[:-1]).all()) and bool((off[1:] >= off[:-1]).all())
            and not bool((answers.prior_max_ts >= ts).any()))


def _unchecked_entries(check: IndexCheck) -> int:
    """Entries reported as past an invalid batch (a suffix of an ordered file): left out of the comparison."""
    return sum(f.count for f in check.findings if f.kind == PAST_INVALID_BATCH)


def _past_invalid_text(where: str) -> str:
    return (f"{where}, where the broker's recovery stops at an invalid batch (see the .log finding): not stale, "
            "the log still holds those bytes, but they cannot be checked. If the broker "
            "recovers this segment it cuts the log there (or empties it) and rebuilds both indexes without these "
            "entries; if it does not (a clean shutdown, below the recovery point), they stay, and so does the "
            "invalid batch")


def _offset_difference(disk: OnDiskIndex, answers: OffsetEntriesCheck | None, rebuilt: bytes,
                       n: int | None = None) -> Finding:
    n = disk.entries if n is None else n
    if n == 0:
        return Finding(VALID_DIFFERENT, Severity.WARNING, "empty",
                       f"empty, the rebuild has {_n(len(rebuilt) // OFFSET_ENTRY_SIZE, 'entry')}: valid, but every "
                       "lookup scans the segment from its start")
    reasons = []
    if answers is not None:
        multi = int((disk.first[:n] > answers.batch_last[:n]).sum())
        inside = int((disk.first[:n] < answers.batch_last[:n]).sum())
        if multi:
            reasons.append(f"{_n(multi, 'entry')} span several batches (a follower's or the cleaner's multi-batch "
                           "appends before KAFKA-806: last offset of a chunk's last batch at its first batch)")
        if inside:
            reasons.append(f"{_n(inside, 'entry')} name an offset inside their batch")
    if not reasons:
        reasons.append("different index points (another index.interval.bytes, or counting restarted with the "
                       "broker)")
    return Finding(VALID_DIFFERENT, Severity.INFO, "multi-batch-append" if "span" in reasons[0] else "index-points",
                   f"{_n(n, 'entry')}, the rebuild has {len(rebuilt) // OFFSET_ENTRY_SIZE}; every entry is a valid "
                   "lookup: " + "; ".join(reasons))


def check_time_index(disk: OnDiskIndex | None, answers: TimeEntriesCheck | None, rebuilt: bytes,
                     facts: SegmentFacts, path: Path) -> IndexCheck:
    check = IndexCheck(path, "time", rebuilt_entries=len(rebuilt) // TIME_ENTRY_SIZE)
    has_ts = facts.max_timestamp >= 0
    if disk is None:
        if not has_ts:
            sev, why = Severity.INFO, "the broker creates an empty one, which is what this segment needs"
        elif facts.broker_rebuilds:
            sev, why = Severity.WARNING, "the broker rebuilds it with the missing .index"
        else:
            sev, why = Severity.ERROR, ("the broker creates an empty one and does not rebuild it: it loses the "
                                        "segment's largest timestamp (time retention falls back to the file's "
                                        "mtime, ListOffsets MAX_TIMESTAMP skips the segment)")
        check.findings.append(Finding(MISSING, sev, "missing", f"no .timeindex: {why}"))
        return check
    _common(check, disk, facts, TIME_ENTRY_SIZE)
    ts, off = disk.first, disk.second
    n = disk.entries
    last = facts.last_offset if facts.last_offset is not None else facts.base_offset - 1
    if n and answers is not None and not _time_entries_clean(ts, off, answers, facts.base_offset, last):
        before_base = off < facts.base_offset
        past = (off > last) | ~answers.found
        unchecked = past if facts.invalid_batch else np.zeros(n, bool)
        prev_ts = np.concatenate(([-1], ts[:-1]))
        prev_off = np.concatenate(([_INT64_MIN], off[:-1]))
        not_increasing = ((ts <= prev_ts) & (np.arange(n) > 0)) | (off < prev_off)
        negative = ts < 0
        live = ~past & ~before_base
        after_target = live & (answers.prior_max_ts >= ts)
        for mask, kind, reason, text in (
                (before_base, CORRUPT, "before-base", "offset below the segment's base offset"),
                (negative, CORRUPT, "negative-timestamp", "a negative timestamp, which TimeIndex never appends"),
                (not_increasing & ~past, CORRUPT, "not-increasing",
                 "timestamps do not strictly increase (or offsets fall): the binary search goes wrong"),
                (after_target, CORRUPT, "lookup-after-target",
                 "an earlier batch already holds a timestamp at or above the entry's: ListOffsets for it would "
                 "start too late and skip records"),
                (past & ~unchecked, STALE, "past-end",
                 f"offset past the end of the log (last offset {last}): the log was truncated after this index was "
                 "written"),
                (unchecked, PAST_INVALID_BATCH, "after-invalid-batch",
                 _past_invalid_text(f"an offset past {last}, the last one before byte {facts.valid_bytes}"))):
            if mask.any():
                i, count = _first(mask)
                sev = Severity.INFO if kind == PAST_INVALID_BATCH else _cap(Severity.ERROR, facts)
                check.findings.append(Finding(
                    kind, sev, reason,
                    f"{count} of {_n(n, 'entry')}: {text} (first: entry {i}, timestamp {int(ts[i])} offset "
                    f"{int(off[i])})", i, count))
    unverified = _unchecked_entries(check)
    if unverified:
        # The log's largest timestamp lies beyond the walk: compare only the entries before the invalid batch.
        check.findings.extend(_time_prefix_difference(disk, rebuilt, n - unverified))
        return check
    if not any(f.kind in (CORRUPT, STALE) for f in check.findings):
        disk_max = int(ts[-1]) if n else -1
        # Past an invalid batch the log may hold larger timestamps: only a maximum below the walked one is wrong.
        wrong = disk_max < facts.max_timestamp if facts.invalid_batch else disk_max != facts.max_timestamp
        if has_ts and wrong or not has_ts and n and not facts.invalid_batch:
            if facts.active:
                sev, why = Severity.INFO, ("the active segment gets its final entry at roll or close, and after an "
                                           "unclean shutdown the broker rebuilds it")
            else:
                sev, why = Severity.ERROR, ("the broker takes the last entry as the segment's largest timestamp: "
                                            "time retention and ListOffsets MAX_TIMESTAMP go wrong")
            check.findings.append(Finding(
                CORRUPT if sev == Severity.ERROR else VALID_DIFFERENT, _cap(sev, facts), "max-timestamp",
                f"last entry's timestamp {disk_max} is not the log's largest timestamp {facts.max_timestamp}: {why}",
                n - 1 if n else None, 1))
    if any(f.kind in (CORRUPT, STALE) for f in check.findings):
        return check
    only_final_missing = rebuilt.startswith(disk.raw) and len(rebuilt) - len(disk.raw) == TIME_ENTRY_SIZE
    if disk.raw != rebuilt and not (only_final_missing and any(f.reason == "max-timestamp" for f in check.findings)):
        check.findings.append(_time_difference(disk, answers, rebuilt))
    return check


def _time_difference(disk: OnDiskIndex, answers: TimeEntriesCheck | None, rebuilt: bytes) -> Finding:
    n = disk.entries
    reasons = []
    reason = "index-points"
    if answers is not None and n:
        inside = int((disk.second < answers.batch_last).sum())
        if inside:
            reason = "record-level-offset"
            reasons.append(f"{_n(inside, 'entry')} name the record holding the max timestamp inside its batch "
                           "(a leader up to 3.6 did so for uncompressed v2 batches)")
    if not reasons:
        reasons.append("different index points (a follower's or cleaner's multi-batch appends, another "
                       "index.interval.bytes, or counting restarted with the broker)")
    return Finding(VALID_DIFFERENT, Severity.INFO, reason,
                   f"{_n(n, 'entry')}, the rebuild has {len(rebuilt) // TIME_ENTRY_SIZE}; every entry is a valid "
                   "lookup: " + "; ".join(reasons))


def _time_prefix_difference(disk: OnDiskIndex, rebuilt: bytes, k: int) -> list[Finding]:
    """With entries past an invalid batch, the first ``k`` entries against the rebuild's (whose final entry is
    the maximum of the walked part only, so it is left out when the files differ only there)."""
    prefix = disk.raw[:k * TIME_ENTRY_SIZE]
    if rebuilt.startswith(prefix) and len(rebuilt) - len(prefix) <= TIME_ENTRY_SIZE:
        return []
    return [Finding(VALID_DIFFERENT, Severity.INFO, "index-points",
                    f"{_n(k, 'entry')} before the invalid batch, the rebuild has {len(rebuilt) // TIME_ENTRY_SIZE}; "
                    "the checked ones are valid lookups: different index points (a follower's or cleaner's "
                    "multi-batch appends, another index.interval.bytes, or counting restarted with the broker)")]
