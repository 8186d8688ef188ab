"""Per-segment index check for ``spark-scan --verify-index``: on-disk ``.index``/``.timeindex`` against
the entries ``LogSegment.recover`` (Kafka 3.9, ``recover.py``) would rebuild from the ``.log``.

This is the interim classifier: ``equal`` (both files hold exactly the rebuilt entries), ``differs``
(the first difference is described), ``missing`` (no ``.index``: the broker rebuilds it on start),
``unreadable``. ``kafkatool/reindex.py`` brings the full classification (an index written by the
broker's append path legitimately differs from a rebuild); ``check_segment`` is the one function the
Spark job calls, so switching to that classifier changes nothing else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafkatool.errors import KafkaToolError
from kafkatool.index import OffsetPosition, TimestampOffset, read_offset_index, read_time_index
from kafkatool.logdir import INDEX_SUFFIX, TIME_INDEX_SUFFIX
from kafkatool.recover import DEFAULT_INDEX_INTERVAL_BYTES, recover_segment


@dataclass(frozen=True, slots=True)
class IndexVerdict:
    classification: str  # equal | differs | missing | unreadable
    detail: str
    offset_entries_on_disk: int
    offset_entries_rebuilt: int
    time_entries_on_disk: int
    time_entries_rebuilt: int

    @property
    def finding(self) -> bool:
        return self.classification != "equal"


def check_segment(log_path: str, base_offset: int, *,
                  index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> IndexVerdict:
    """Classify one segment's indexes against a rebuild from its ``.log`` (local, memory-mapped file)."""
    stem = log_path[:-len(".log")] if log_path.endswith(".log") else log_path
    index_path, time_path = stem + INDEX_SUFFIX, stem + TIME_INDEX_SUFFIX
    try:
        rebuilt = recover_segment(log_path, base_offset, index_interval_bytes=index_interval_bytes)
    except (KafkaToolError, OSError) as e:
        return IndexVerdict("unreadable", f"cannot rebuild from the log: {e}", 0, 0, 0, 0)
    want_off = [(e.offset, e.position) for e in rebuilt.offset_entries]
    want_time = [(e.timestamp, e.offset) for e in rebuilt.time_entries]
    if not os.path.exists(index_path):
        return IndexVerdict("missing", "no .index file (the broker rebuilds it on start)", 0, len(want_off), 0,
                            len(want_time))
    try:
        have_off = [(e.offset, e.position) for e in read_offset_index(index_path, base_offset).entries
                    if isinstance(e, OffsetPosition)]
        have_time = [(e.timestamp, e.offset) for e in read_time_index(time_path, base_offset).entries
                     if isinstance(e, TimestampOffset)] if os.path.exists(time_path) else []
    except (KafkaToolError, OSError) as e:
        return IndexVerdict("unreadable", f"cannot read the index: {e}", 0, len(want_off), 0, len(want_time))
    counts = (len(have_off), len(want_off), len(have_time), len(want_time))
    diff = _first_difference(".index", have_off, want_off, ("offset", "position"))
    if diff is None:
        if not os.path.exists(time_path):
            return IndexVerdict("differs", "no .timeindex file", *counts)
        diff = _first_difference(".timeindex", have_time, want_time, ("timestamp", "offset"))
    if diff is None:
        return IndexVerdict("equal", "", *counts)
    return IndexVerdict("differs", diff, *counts)


def _first_difference(name: str, have: list[tuple[int, int]], want: list[tuple[int, int]],
                      fields: tuple[str, str]) -> str | None:
    for i, (h, w) in enumerate(zip(have, want, strict=False)):
        if h != w:
            return (f"{name} entry {i}: on disk {fields[0]} {h[0]} {fields[1]} {h[1]}, rebuilt {fields[0]} {w[0]} "
                    f"{fields[1]} {w[1]}")
    if len(have) != len(want):
        return f"{name} has {len(have)} entries, a rebuild has {len(want)}"
    return None
