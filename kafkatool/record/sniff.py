"""What a file that should hold record batches holds instead: the other files of a partition dir, by content.

A ``.log`` whose first bytes are not a batch is usually damaged, but it can also be another file under the
wrong name (an index copied over a segment, a ``.timeindex`` passed to ``dump`` as a ``.log``). Read as a
log, such a file gives a misleading verdict (a "torn tail" declaring a few hundred bytes), so before its
first batch is judged, ``dump`` asks :func:`looks_like` whether the content has the exact structure of one
of Kafka's other partition files:

* offset index (``.index``): 8-byte entries (relative offset, position), both increasing, up to zero padding;
* time index (``.timeindex``): 12-byte entries (timestamp, relative offset), a plausible epoch-ms timestamp
  (2000..2100) and both fields increasing, up to zero padding;
* transaction index (``.txnindex``): 34-byte entries of version 0 with ``firstOffset <= lastOffset``;
* producer snapshot (``.snapshot``): version 1 and a length of exactly ``10 + count * 46`` bytes;
* a text file (checkpoints, ``partition.metadata``, ``meta.properties``): printable ASCII lines.

Every rule is checked on every entry (up to ``MAX_ENTRIES``), so a real segment, whose bytes mix offsets,
sizes, CRCs and payload, does not pass one by accident. Only the first ``MAX_SNIFF`` bytes are read.
"""

from __future__ import annotations

import struct
from typing import Any

MAX_SNIFF = 64 * 1024
MAX_ENTRIES = 4096
_OFFSET = struct.Struct(">ii")
_TIME = struct.Struct(">qi")
_TXN = struct.Struct(">hqqqq")
_SNAPSHOT = struct.Struct(">hIi")
_SNAPSHOT_ENTRY = 46
_TS_MIN = 946_684_800_000  # 2000-01-01
_TS_MAX = 4_102_444_800_000  # 2100-01-01
_TEXT = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


def looks_like(buf: Any, size: int) -> str | None:
    """A description of what ``buf[:size]`` looks like if it is one of Kafka's non-segment files, else None."""
    if size <= 0:
        return None
    data = bytes(buf[:min(size, MAX_SNIFF)])
    whole = size <= MAX_SNIFF
    found = []
    n = _offset_index_entries(data, size)
    if n:
        found.append(f"an offset index (.index: {n} entries of 8 bytes)")
    n = _time_index_entries(data, size)
    if n:
        found.append(f"a time index (.timeindex: {n} entries of 12 bytes)")
    if found:
        return " or ".join(found)
    n = _txn_index_entries(data, size)
    if n:
        return f"a transaction index (.txnindex: {n} aborted transactions of 34 bytes)"
    if whole and len(data) >= _SNAPSHOT.size:
        version, _, count = _SNAPSHOT.unpack_from(data)
        if version == 1 and count >= 0 and len(data) == _SNAPSHOT.size + count * _SNAPSHOT_ENTRY:
            return f"a producer state snapshot (.snapshot: version 1, {count} producers)"
    if all(b in _TEXT for b in data) and b"\n" in data:
        first = data.split(b"\n", 1)[0].decode("ascii").strip()
        return f"a text file (first line {first[:40]!r}: a checkpoint, partition.metadata or meta.properties?)"
    return None


def _entries_before_padding(data: bytes, entry_size: int, size: int) -> int | None:
    """Whole entries before zero padding; None if the length is not a whole number of entries or the
    padding holds anything but zeros."""
    if size % entry_size or len(data) < entry_size:
        return None
    slots = len(data) // entry_size
    end = len(data.rstrip(b"\x00"))
    used = -(-end // entry_size)
    if used == 0 or used > slots:
        return None
    return min(used, MAX_ENTRIES)


def _offset_index_entries(data: bytes, size: int) -> int:
    n = _entries_before_padding(data, _OFFSET.size, size)
    if not n:
        return 0
    prev_rel = prev_pos = -1
    for rel, pos in _OFFSET.iter_unpack(data[:n * _OFFSET.size]):
        if rel < 0 or pos < 0 or rel <= prev_rel or pos <= prev_pos:
            return 0
        prev_rel, prev_pos = rel, pos
    return n


def _time_index_entries(data: bytes, size: int) -> int:
    n = _entries_before_padding(data, _TIME.size, size)
    if not n:
        return 0
    prev_ts = prev_rel = -1
    for ts, rel in _TIME.iter_unpack(data[:n * _TIME.size]):
        if not _TS_MIN <= ts <= _TS_MAX or rel < 0 or ts <= prev_ts or rel < prev_rel:
            return 0
        prev_ts, prev_rel = ts, rel
    return n


def _txn_index_entries(data: bytes, size: int) -> int:
    if size % _TXN.size or len(data) < _TXN.size:
        return 0
    n = min(len(data) // _TXN.size, MAX_ENTRIES)
    for version, pid, first, last, lso in _TXN.iter_unpack(data[:n * _TXN.size]):
        if version != 0 or pid < 0 or first < 0 or last < first or lso < 0:
            return 0
    return n
