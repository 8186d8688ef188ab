"""Index rebuild exactly as the broker's ``LogSegment.recover`` does it (Kafka 3.9). Spec §4.2.

For each batch from position 0 (``validBytes`` = its position)::

    [verify] batch.ensureValid()               (CRC; the broker always checks, we on request)
    ensureOffsetInRange(batch.lastOffset)       (relative offset must fit an int32)
    if batch.maxTimestamp > maxSoFar: maxSoFar = (batch.maxTimestamp, batch.lastOffset)
    if validBytes - lastIndexEntry > indexIntervalBytes:
        offsetIndex.append(batch.lastOffset, validBytes)
        timeIndex.maybeAppend(maxSoFar)         (appends only when the timestamp increases)
        lastIndexEntry = validBytes
    validBytes += batch.sizeInBytes

then the final time entry ``timeIndex.maybeAppend(maxSoFar, skipFullCheck=true)`` and both indexes trimmed.
The walk reads batch headers only: a v2 batch is indexed from its 61-byte header and a legacy
compressed wrapper from its outer message (wrapper offset = last offset, wrapper timestamp).

Two implementations produce the same :class:`SegmentRecovery`: ``method="fast"`` (``fast``: a
tight size-only walk plus numpy gathers, the default) and ``method="reference"`` (the per-batch loop
below, written to read like the Java; the tests hold the two equal).

Failures the broker does not catch inside ``recover()`` are ``fatal``: ``InvalidOffsetException`` (an
index append with an offset not above the last one: LogLoader then empties the whole segment),
``LogSegmentOffsetOverflowException`` (LogLoader splits the segment) and a transaction marker the
producer-state update rejects (``load-fails``: the broker does not start, see ``recover_control``).

With ``verify`` (the broker always does both) CRCs are checked and so are the transaction markers of control
batches, as recovery's producer-state update parses them (``recover_control``): an InvalidRecordException
there keeps the batch and truncates the segment after it, before loading fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES
from kafkatool.log.recovery.result import SegmentRecovery
from kafkatool.record.file_records import FileRecords

__all__ = ["SegmentRecovery", "recover_segment"]


def recover_segment(log: str | Path | FileRecords, base_offset: int, *,
                    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, verify: bool = False,
                    latest_epoch: int = -1, method: Literal["fast", "reference"] = "fast") -> SegmentRecovery:
    """Rebuild ``.index``/``.timeindex`` entries for one segment by the 3.9 recover rules."""
    if method == "fast":
        from kafkatool.log.recovery.fast import recover_fast

        size: int | None = None  # a path: the whole file, as large as it is when recover_fast opens it
        if isinstance(log, FileRecords):
            path, size = log.path, log.size
        else:
            path = str(log)
        return recover_fast(path, size, base_offset, index_interval_bytes=index_interval_bytes, verify=verify,
                            latest_epoch=latest_epoch)
    from kafkatool.log.recovery.reference import recover_reference

    owned = not isinstance(log, FileRecords)
    fr = log if isinstance(log, FileRecords) else FileRecords(log)
    try:
        return recover_reference(fr, base_offset, index_interval_bytes, verify, latest_epoch)
    finally:
        if owned:
            fr.close()
