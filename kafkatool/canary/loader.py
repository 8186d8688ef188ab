"""What a Kafka 3.9 broker's ``LogLoader.load`` does at startup with ``.swap``/``.cleaned``/``.deleted`` files.

From ``core/src/main/scala/kafka/log/LogLoader.scala`` (3.9), before any segment is loaded:

1. ``removeTempFilesAndCollectSwapFiles``: ``*.deleted`` files are deleted (KRaft snapshot ``.deleted`` files
   excepted); every ``*.swap`` file whose base offset is >= the smallest ``*.cleaned`` base offset is deleted
   (an interrupted split, KAFKA-6264); then every ``*.cleaned`` file is deleted.
2. For the remaining ``.swap`` files that are *log* files (``<base>.log.swap``): ``minSwapFileOffset`` = the
   smallest base offset, ``maxSwapFileOffset`` = the largest ``readNextOffset`` (one past the last offset of
   the swap segment; its base offset when empty).
3. Every file that is not a ``.swap`` file and whose name starts with an offset in
   ``[minSwapFileOffset, maxSwapFileOffset)`` is deleted: segment files, indexes *and producer snapshots*.
4. Every ``.swap`` file is renamed without the suffix, index swaps included (even one whose ``.log.swap`` is
   absent: it then replaces that segment's index).
5. Segments load; a segment whose ``.index`` is missing is recovered (indexes rebuilt); a missing
   ``.timeindex`` is created empty.

Names: the base offset is ``Long.parseLong`` of the name up to its first dot, and LogLoader does not catch the
``NumberFormatException`` where it parses every ``*.cleaned`` and ``*.swap`` (step 1) and every ``.log``,
``.index``, ``.timeindex``, ``.txnindex`` (step 5), nor does ``ProducerStateManager`` for ``*.snapshot`` (it
lists them when the log is created, before step 1): such a file without an offset (``.kafkatool-tmp-x.swap``,
what kafkatool < 1 left after a kill) fails the load of the whole log, and the broker marks the log dir
offline or stops. Any other file is left alone (kafkatool's temp files end in ``.tmp`` for that reason).

:func:`predict` lists these actions without touching anything (``canary verify`` reports them for an
interrupted apply/rollback); :func:`complete_swaps` performs them (tests use it as the broker's start) and
raises :class:`BrokerLoadError` where the broker would fail.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.errors import KafkaToolError
from kafkatool.log.index import OFFSET_ENTRY_SIZE, preallocated_length
from kafkatool.log.layout import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from kafkatool.record.file_records import FileRecords
from kafkatool.util.atomic import is_temp_name

PREALLOCATED_INDEX_BYTES = preallocated_length(OFFSET_ENTRY_SIZE)  # roundDown(segment.index.bytes default, 8)
SNAPSHOT_DELETE_SUFFIX = ".checkpoint.deleted"  # Snapshots.DELETE_SUFFIX: KRaft snapshots, left to KafkaMetadataLog
_SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


class BrokerLoadError(KafkaToolError):
    """What :func:`complete_swaps` raises where the broker's load of the log would throw."""


def offset_from_file(name: str) -> int | None:
    """``LogFileUtils.offsetFromFileName``: ``Long.parseLong(name.substring(0, name.indexOf('.')))``, or None
    where Kafka's parse throws (and LogLoader's loop skips the file)."""
    dot = name.find(".")
    if dot <= 0:
        return None
    head = name[:dot]
    if not head.isascii() or not head.isdigit():
        return None
    value = int(head)
    return value if value <= 0x7FFFFFFFFFFFFFFF else None  # NumberFormatException past Long.MAX_VALUE


@dataclass(slots=True)
class LoaderActions:
    fails: list[str] = field(default_factory=list)  # why the broker's load of this log throws (nothing below runs)
    ignored: list[str] = field(default_factory=list)  # kafkatool temp files the broker leaves alone
    deleted: list[str] = field(default_factory=list)  # in the order LogLoader deletes them
    renamed: list[tuple[str, str]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)  # index swaps readNextOffset creates (preallocated, zero)
    recovered: list[str] = field(default_factory=list)  # segments whose indexes the broker rebuilds
    empty_time_index: list[str] = field(default_factory=list)
    swap_range: tuple[int, int] | None = None

    @property
    def nothing(self) -> bool:
        return not (self.deleted or self.renamed)

    def describe(self) -> list[str]:
        if self.fails:
            return [f"fail to load this log: {f}" for f in self.fails]
        out = [f"leave {n} alone (a kafkatool temp file; the next canary apply or rollback removes it)"
               for n in self.ignored]
        if self.swap_range is not None:
            out.append(f"swap segments cover offsets [{self.swap_range[0]}, {self.swap_range[1]})")
        out += [f"delete {n}" for n in self.deleted]
        out += [f"create {n} (preallocated, all zero: readNextOffset opens the missing offset index)"
                for n in self.created]
        out += [f"rename {a} -> {b}" for a, b in self.renamed]
        out += [f"rebuild the indexes of {n} (no .index)" for n in self.recovered]
        out += [f"create an empty {n}" for n in self.empty_time_index]
        return out


def _next_offset(log: Path, base: int) -> int:
    """``LogSegment.readNextOffset``: one past the last offset of the segment, its base offset when empty."""
    nxt = base
    with FileRecords(log) as fr:
        for b in fr.batches():
            nxt = int(b.last_offset) + 1
    return nxt


def _unparsable(names: list[str]) -> list[str]:
    """Files whose base offset the broker parses and cannot (each fails the log's load), in the order it meets
    them: snapshots (ProducerStateManager, first), then .cleaned/.swap (LogLoader step 1), then segment files
    (step 5, after the swaps are renamed)."""
    out = []
    for group in ((SNAPSHOT_SUFFIX,), (CLEANED_SUFFIX, SWAP_SUFFIX), _SEGMENT_SUFFIXES):
        for n in names:
            if n.endswith(group) and not n.endswith(DELETED_SUFFIX) and offset_from_file(n) is None:
                where = ("ProducerStateManager" if group == (SNAPSHOT_SUFFIX,) else "LogLoader")
                out.append(f"{n}: {where} parses a base offset out of every *{n[n.rfind('.'):]} file and this name "
                           "has none (NumberFormatException); remove the file, then start the broker")
    return out


def predict(part_dir: Path) -> LoaderActions:
    acts = LoaderActions()
    names = sorted(n for n in os.listdir(part_dir) if (part_dir / n).is_file())
    acts.fails = _unparsable(names)
    if acts.fails:
        return acts
    acts.ignored = [n for n in names if is_temp_name(n)]
    swaps, cleaned = [], []
    for n in names:
        if n.endswith(DELETED_SUFFIX) and not n.endswith(SNAPSHOT_DELETE_SUFFIX):
            acts.deleted.append(n)
        elif n.endswith(CLEANED_SUFFIX):
            cleaned.append(n)
        elif n.endswith(SWAP_SUFFIX):
            swaps.append(n)
    min_cleaned = min((o for o in map(offset_from_file, cleaned) if o is not None), default=None)
    valid = []
    for n in swaps:
        o = offset_from_file(n)
        if min_cleaned is not None and o is not None and o >= min_cleaned:
            acts.deleted.append(n)
        else:
            valid.append(n)
    acts.deleted += cleaned
    lo, hi = None, None
    for n in valid:
        if n[:-len(SWAP_SUFFIX)].endswith(LOG_SUFFIX):
            base = offset_from_file(n)
            if base is None:
                continue
            nxt = _next_offset(part_dir / n, base)
            lo = base if lo is None else min(lo, base)
            hi = nxt if hi is None else max(hi, nxt)
    if lo is not None and hi is not None:
        acts.swap_range = (lo, hi)
        gone = set(acts.deleted)
        for n in names:
            if n.endswith(SWAP_SUFFIX) or n in gone:
                continue
            o = offset_from_file(n)
            if o is not None and lo <= o < hi:
                acts.deleted.append(n)
    after = {n for n in names if n not in set(acts.deleted)}
    for n in list(valid):
        if n.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            idx = n[:-len(LOG_SUFFIX + SWAP_SUFFIX)] + INDEX_SUFFIX + SWAP_SUFFIX
            if idx not in names:
                acts.created.append(idx)
    for n in [*valid, *acts.created]:
        target = n[:-len(SWAP_SUFFIX)]
        acts.renamed.append((n, target))
        after.discard(n)
        after.add(target)
    for n in sorted(after):
        if n.endswith(LOG_SUFFIX) and offset_from_file(n) is not None:
            stem = n[:-len(LOG_SUFFIX)]
            if stem + INDEX_SUFFIX not in after:
                acts.recovered.append(n)
            if stem + TIME_INDEX_SUFFIX not in after:
                acts.empty_time_index.append(stem + TIME_INDEX_SUFFIX)
    return acts


def complete_swaps(part_dir: Path) -> LoaderActions:
    """Do what ``LogLoader.load`` does to the files before loading segments (steps 1-4; step 5's index
    rebuild is left to the caller)."""
    acts = predict(part_dir)
    if acts.fails:
        raise BrokerLoadError(acts.fails[0], path=part_dir)
    for n in acts.deleted:
        try:
            os.unlink(part_dir / n)
        except FileNotFoundError:
            pass
    for n in acts.created:
        with open(part_dir / n, "wb") as f:
            f.truncate(PREALLOCATED_INDEX_BYTES)
    for a, b in acts.renamed:
        if (part_dir / a).exists():
            os.replace(part_dir / a, part_dir / b)
    return acts
