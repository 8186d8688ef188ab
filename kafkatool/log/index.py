"""Offset (``.index``) and time (``.timeindex``) index files. Spec §4.2.

``.index`` entry (8 bytes)::   relativeOffset int32 | physicalPosition int32
``.timeindex`` entry (12 bytes)::   timestamp int64 | relativeOffset int32

Files of active or crashed segments are preallocated (``segment.index.bytes``, default 10 MiB) and
zero-padded: the entry count is *not* ``length / entrySize``. Like DumpLogSegments we stop at the first
entry ``i > 0`` whose offset equals the base offset and report the rest as padding.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from sys import byteorder

from kafkatool.constants import DEFAULT_SEGMENT_INDEX_BYTES
from kafkatool.errors import CorruptDataError, InputError
from kafkatool.log.layout import offset_from_filename
from kafkatool.util.printable import shown
from kafkatool.util.regular import open_regular

OFFSET_ENTRY = struct.Struct(
    ">i"  # relativeOffset    int32
    "i"   # physicalPosition  int32
)
TIME_ENTRY = struct.Struct(
    ">q"  # timestamp         int64
    "i"   # relativeOffset    int32
)
TIME_ENTRY_RELATIVE_OFFSET = struct.calcsize(">q")
OFFSET_ENTRY_SIZE = OFFSET_ENTRY.size  # 8
TIME_ENTRY_SIZE = TIME_ENTRY.size  # 12
MAX_INDEX_READ = 1 << 30  # refuse index files larger than this (hostile sizes)


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    offset: int  # absolute
    position: int


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    timestamp: int
    offset: int  # absolute


@dataclass(slots=True)
class IndexContents:
    """An index file as read: its valid entries, and what follows them."""

    path: Path
    base_offset: int
    file_length: int
    entry_size: int
    entries: list[OffsetPosition] | list[TimestampOffset]
    slots: int  # file_length // entry_size: what Kafka's ``entries`` would be on open
    padding_slots: int  # slots after the first base-offset entry (i > 0): preallocated/torn region
    padding_all_zero: bool
    partial_bytes: int  # file_length % entry_size

    @property
    def untrimmed(self) -> bool:
        return self.padding_slots > 0

    @property
    def trimmed_length(self) -> int:
        return len(self.entries) * self.entry_size


def _read_index_bytes(path: Path) -> bytes:
    try:
        with open_regular(path) as f:
            if f.size > MAX_INDEX_READ:
                raise InputError(f"index file of {f.size} bytes is larger than any Kafka index ({MAX_INDEX_READ} "
                                 "max)", path=path)
            return f.read_all()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=path) from None


_LITTLE = byteorder == "little"


def read_offset_index(path: str | os.PathLike[str], base_offset: int | None = None) -> IndexContents:
    p = Path(path)
    base = offset_from_filename(p.name) if base_offset is None else base_offset
    data = _read_index_bytes(p)
    slots = len(data) // OFFSET_ENTRY_SIZE
    entries: list[OffsetPosition] = []
    stop = slots
    for i, (rel, pos) in enumerate(OFFSET_ENTRY.iter_unpack(memoryview(data)[:slots * OFFSET_ENTRY_SIZE])):
        if rel == 0 and i > 0:
            stop = i
            break
        entries.append(OffsetPosition(base + rel, pos))
    tail = data[stop * OFFSET_ENTRY_SIZE:slots * OFFSET_ENTRY_SIZE]
    return IndexContents(p, base, len(data), OFFSET_ENTRY_SIZE, entries, slots, slots - stop,
                         not tail.strip(b"\x00"), len(data) % OFFSET_ENTRY_SIZE)


def read_time_index(path: str | os.PathLike[str], base_offset: int | None = None) -> IndexContents:
    p = Path(path)
    base = offset_from_filename(p.name) if base_offset is None else base_offset
    data = _read_index_bytes(p)
    slots = len(data) // TIME_ENTRY_SIZE
    entries: list[TimestampOffset] = []
    stop = slots
    for i, (ts, rel) in enumerate(TIME_ENTRY.iter_unpack(memoryview(data)[:slots * TIME_ENTRY_SIZE])):
        if rel == 0 and i > 0:
            stop = i
            break
        entries.append(TimestampOffset(ts, base + rel))
    tail = data[stop * TIME_ENTRY_SIZE:slots * TIME_ENTRY_SIZE]
    return IndexContents(p, base, len(data), TIME_ENTRY_SIZE, entries, slots, slots - stop,
                         not tail.strip(b"\x00"), len(data) % TIME_ENTRY_SIZE)


def encode_offset_index(entries: list[OffsetPosition], base_offset: int) -> bytes:
    """Trimmed ``.index`` bytes (what a closed segment holds)."""
    out = bytearray(len(entries) * OFFSET_ENTRY_SIZE)
    for i, e in enumerate(entries):
        OFFSET_ENTRY.pack_into(out, i * OFFSET_ENTRY_SIZE, e.offset - base_offset, e.position)
    return bytes(out)


def encode_time_index(entries: list[TimestampOffset], base_offset: int) -> bytes:
    out = bytearray(len(entries) * TIME_ENTRY_SIZE)
    for i, e in enumerate(entries):
        TIME_ENTRY.pack_into(out, i * TIME_ENTRY_SIZE, e.timestamp, e.offset - base_offset)
    return bytes(out)


def offset_index_sanity_check(path: str | os.PathLike[str], base_offset: int | None = None) -> None:
    """``OffsetIndex.sanityCheck`` (3.9): looks only at the file length and the *last slot*."""
    p = Path(path)
    base = offset_from_filename(p.name) if base_offset is None else base_offset
    data = _read_index_bytes(p)
    if len(data) % OFFSET_ENTRY_SIZE:
        raise CorruptDataError(f"Index file {shown(p.name)} is corrupt, found {len(data)} bytes which is neither "
                               f"positive nor a multiple of {OFFSET_ENTRY_SIZE}.", path=p,
                               position=len(data) - len(data) % OFFSET_ENTRY_SIZE)
    slots = len(data) // OFFSET_ENTRY_SIZE
    if slots:
        rel, _ = OFFSET_ENTRY.unpack_from(data, (slots - 1) * OFFSET_ENTRY_SIZE)
        last = base + rel
        if last < base:
            raise CorruptDataError(f"Corrupt index found, index file ({shown(p)}) has non-zero size but the last "
                                   f"offset is {last} which is less than the base offset {base}.", path=p,
                                   position=(slots - 1) * OFFSET_ENTRY_SIZE)


def time_index_sanity_check(path: str | os.PathLike[str], base_offset: int | None = None) -> None:
    """``TimeIndex.sanityCheck`` (3.9): last slot's timestamp vs the first, last offset vs base, length."""
    p = Path(path)
    base = offset_from_filename(p.name) if base_offset is None else base_offset
    data = _read_index_bytes(p)
    slots = len(data) // TIME_ENTRY_SIZE
    if slots:
        first_ts, _ = TIME_ENTRY.unpack_from(data, 0)
        last_ts, last_rel = TIME_ENTRY.unpack_from(data, (slots - 1) * TIME_ENTRY_SIZE)
        if last_ts < first_ts:
            raise CorruptDataError(f"Corrupt time index found, time index file ({shown(p)}) has non-zero size but the "
                                   f"last timestamp is {last_ts} which is less than the first entry "
                                   f"{first_ts}", path=p, position=(slots - 1) * TIME_ENTRY_SIZE)
        if base + last_rel < base:
            raise CorruptDataError(f"Corrupt time index found, time index file ({shown(p)}) has non-zero size but the "
                                   f"last offset is {base + last_rel} which is less than the first offset "
                                   f"{base}", path=p,
                                   position=(slots - 1) * TIME_ENTRY_SIZE + TIME_ENTRY_RELATIVE_OFFSET)
    if len(data) % TIME_ENTRY_SIZE:
        raise CorruptDataError(f"Time index file {shown(p.name)} is corrupt, found {len(data)} bytes which is neither "
                               f"positive nor a multiple of {TIME_ENTRY_SIZE}.", path=p,
                               position=len(data) - len(data) % TIME_ENTRY_SIZE)


def entry_count(data: bytes, entry_size: int, rel_at: int) -> int:
    """Kafka's stop rule: entries end at the first slot ``i > 0`` whose relative offset is 0."""
    slots = len(data) // entry_size
    for i in range(1, slots):
        o = i * entry_size + rel_at
        if data[o:o + 4] == b"\x00\x00\x00\x00":
            return i
    return slots


class OffsetLookup:
    """``OffsetIndex.lookup`` over the entries of a ``.index`` (two int arrays, not objects: a 10 MiB index is
    1.3 M entries)."""

    def __init__(self, base_offset: int, offsets: array[int], positions: array[int]) -> None:
        self.base_offset = base_offset
        self.offsets = offsets
        self.positions = positions

    def position_for(self, target: int) -> int:
        """The position of the largest entry with offset <= target, else 0 (Kafka: (baseOffset, 0))."""
        i = bisect_right(self.offsets, target) - 1
        return int(self.positions[i]) if i >= 0 else 0


def load_offset_lookup(path: Path, base_offset: int) -> OffsetLookup:
    """The ``.index`` at ``path`` as an :class:`OffsetLookup` (entries up to the first zero slot)."""
    data = _read_index_bytes(path)
    n = entry_count(data, OFFSET_ENTRY_SIZE, 0)
    offsets: array[int] = array("q")
    positions: array[int] = array("q")
    for rel, pos in OFFSET_ENTRY.iter_unpack(memoryview(data)[:n * OFFSET_ENTRY_SIZE]):
        offsets.append(base_offset + rel)
        positions.append(pos)
    if n == 1 and offsets[0] == base_offset and positions[0] == 0:
        del offsets[:], positions[:]
    return OffsetLookup(base_offset, offsets, positions)


def _last_at_most(n: int, key: Callable[[int], int], target: int) -> int:
    """The index lookups' binary search over slots 0..n-1: the slot it ends on whose ``key`` is <= ``target``
    (the last such slot when the keys ascend), or -1."""
    lo, hi = 0, n - 1
    found = -1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key(mid) <= target:
            found = mid
            lo = mid + 1
        else:
            hi = mid - 1
    return found


def lookup_offset(entries: list[OffsetPosition], target: int, base_offset: int) -> OffsetPosition:
    """``OffsetIndex.lookup``: the largest entry with offset <= target, else (base, 0)."""
    found = _last_at_most(len(entries), lambda i: entries[i].offset, target)
    return entries[found] if found >= 0 else OffsetPosition(base_offset, 0)


def lookup_offset_file(path: str | os.PathLike[str], target: int, base_offset: int) -> OffsetPosition:
    """``lookup_offset(read_offset_index(path, base_offset).entries, target, base_offset)`` without an object per
    entry: the binary search decodes the entries it probes. (Reading a 12,000-entry index into objects took longer
    than a fetch's lookups.)"""
    data = _read_index_bytes(Path(path))
    slots = len(data) // OFFSET_ENTRY_SIZE
    words = array("i")  # int32, as OFFSET_ENTRY (">ii") and Kafka's getInt read them
    words.frombytes(data[:slots * OFFSET_ENTRY_SIZE])
    if words.itemsize != 4:  # pragma: no cover - an unsigned int of another width
        entries = read_offset_index(path, base_offset).entries
        return lookup_offset(entries, target, base_offset)  # type: ignore[arg-type]
    if _LITTLE:
        words.byteswap()
    rels = words[0::2]
    try:
        stop = rels.index(0, 1)  # read_offset_index's entries end at the first zero relative offset after slot 0
    except ValueError:
        stop = slots
    found = _last_at_most(stop, lambda i: base_offset + rels[i], target)
    return OffsetPosition(base_offset + rels[found], words[2 * found + 1]) if found >= 0 else \
        OffsetPosition(base_offset, 0)


def lookup_timestamp(entries: list[TimestampOffset], target_ts: int, base_offset: int) -> TimestampOffset:
    """``TimeIndex.lookup``: the largest entry with timestamp <= target, else (-1, base)."""
    found = _last_at_most(len(entries), lambda i: entries[i].timestamp, target_ts)
    return entries[found] if found >= 0 else TimestampOffset(-1, base_offset)


def preallocated_length(entry_size: int, max_index_size: int = DEFAULT_SEGMENT_INDEX_BYTES) -> int:
    """Size of a freshly created index file: ``roundDown(segment.index.bytes, entrySize)``."""
    return max_index_size - max_index_size % entry_size
