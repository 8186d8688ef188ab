"""Where a segment's log ends: the offset after its last batch, as the broker's load finds it.

``LogSegment.readNextOffset``: the batches after the ``.index``'s last entry (never more than
``index.interval.bytes`` of them on a trimmed index) up to the first that does not read, the last one's last
offset + 1. Only batch headers are read.
"""

from __future__ import annotations

from kafkatool.errors import KafkaToolError
from kafkatool.log.index import load_offset_lookup
from kafkatool.log.layout import Segment
from kafkatool.record.file_records import FileRecords

_LAST = 2**63 - 1


def next_offset(seg: Segment) -> int | None:
    """The offset after the last valid batch of ``seg`` (None: it has none)."""
    start = 0
    if seg.index.exists():
        try:
            start = load_offset_lookup(seg.index, seg.base_offset).position_for(_LAST)
        except KafkaToolError:
            start = 0
    end: int | None = None
    with FileRecords(seg.log) as fr:
        if start > fr.size:  # an index past a truncated log: walk it all
            start = 0
        try:
            for batch in fr.batches(start):
                last = int(batch.last_offset) + 1
                end = last if end is None else max(end, last)
        except KafkaToolError:
            pass  # damage: the log ends where the valid batches end (recovery truncates there)
    return end
