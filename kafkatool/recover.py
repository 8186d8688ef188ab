"""Index rebuild exactly as the broker's ``LogSegment.recover`` does it (Kafka 3.9). Spec §4.2.

For each batch from position 0 (``validBytes`` = its position)::

    [--verify] batch.ensureValid()             (CRC; the broker always checks, we on request)
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

Two implementations produce the same :class:`SegmentRecovery`: ``method="fast"`` (``recover_fast``: a
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

import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from kafkatool.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_V0, MAGIC_V2, NO_TIMESTAMP
from kafkatool.errors import CorruptDataError, CorruptRecordError, InputError, InvalidRecordError, KafkaToolError
from kafkatool.file_records import FileRecords, LogInputStream, WalkEnd
from kafkatool.index import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE, OffsetPosition, TimestampOffset
from kafkatool.legacy_records import RECORD_OVERHEAD_V0
from kafkatool.recover_control import ControlFailure, check_control_batch, ensure_readable

DEFAULT_INDEX_INTERVAL_BYTES = 4096
INT32_MAX = 0x7FFFFFFF
V2_OVERHEAD = 61

I64 = npt.NDArray[np.int64]
Fatal = Literal["invalid-offset", "offset-overflow", "load-fails"]

_LOG = struct.Struct(">qi")
_V2_LAST_DELTA = struct.Struct(">i")  # at 23
_V2_MAX_TS = struct.Struct(">q")  # at 35
_V2_EPOCH = struct.Struct(">i")  # at 12
_LEGACY_TS = struct.Struct(">q")  # at 12 + 6 for magic 1

_OFFSET_DTYPE = np.dtype([("rel", ">i4"), ("pos", ">i4")])
_TIME_DTYPE = np.dtype([("ts", ">i8"), ("rel", ">i4")])


def _empty() -> I64:
    return np.zeros(0, np.int64)


@dataclass(slots=True)
class SegmentRecovery:
    """What ``LogSegment.recover`` would build for one segment, and where it would stop.

    Index entries are kept as int64 arrays (absolute offsets); ``offset_entries``/``time_entries``
    materialise them as lists on each access, ``encode_*`` give the trimmed file bytes.
    """

    base_offset: int
    file_size: int
    index_offsets: I64 = field(default_factory=_empty)
    index_positions: I64 = field(default_factory=_empty)
    time_timestamps: I64 = field(default_factory=_empty)
    time_offsets: I64 = field(default_factory=_empty)
    valid_bytes: int = 0  # recover() truncates the .log to this
    batches: int = 0
    last_offset: int | None = None  # last offset of the last valid batch
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    epochs: list[tuple[int, int]] = field(default_factory=list)  # leader-epoch cache assignments (epoch, start)
    magics: set[int] = field(default_factory=set)
    stop: WalkEnd | None = None  # why the walk ended (torn tail, corrupt size, ...)
    error: KafkaToolError | None = None  # the first invalid batch, as recovery would meet it
    fatal: Fatal | None = None  # an exception recover() does not catch (see the module doc)
    control: ControlFailure | None = None  # a transaction marker the producer-state update rejects (verify)

    @property
    def truncated_bytes(self) -> int:
        return self.file_size - self.valid_bytes

    @property
    def next_offset(self) -> int:
        return self.base_offset if self.last_offset is None else self.last_offset + 1

    @property
    def broker_truncates_to(self) -> int:
        """Byte size of the .log after the broker's recovery: 0 when LogLoader empties the segment, unchanged
        when an exception escapes ``recover()`` before its truncation."""
        if self.fatal == "invalid-offset":
            return 0
        if self.control is not None and self.control.outcome == "unhandled":
            return self.file_size
        return self.valid_bytes

    @property
    def completes(self) -> bool:
        """``recover()`` returns (its truncation and final time entry happen), whatever LogLoader does next."""
        return self.fatal is None or (self.control is not None and self.control.outcome == "invalid")

    @property
    def offset_entries(self) -> list[OffsetPosition]:
        return [OffsetPosition(o, p) for o, p in zip(self.index_offsets.tolist(), self.index_positions.tolist(),
                                                      strict=True)]

    @property
    def time_entries(self) -> list[TimestampOffset]:
        return [TimestampOffset(t, o) for t, o in zip(self.time_timestamps.tolist(), self.time_offsets.tolist(),
                                                       strict=True)]

    def encode_offset_index(self) -> bytes:
        """The trimmed ``.index`` bytes recovery leaves (8 bytes per entry)."""
        out = np.empty(len(self.index_offsets), _OFFSET_DTYPE)
        out["rel"] = self.index_offsets - self.base_offset
        out["pos"] = self.index_positions
        data = out.tobytes()
        assert len(data) == len(out) * OFFSET_ENTRY_SIZE
        return data

    def encode_time_index(self) -> bytes:
        """The trimmed ``.timeindex`` bytes recovery leaves (12 bytes per entry)."""
        out = np.empty(len(self.time_offsets), _TIME_DTYPE)
        out["ts"] = self.time_timestamps
        out["rel"] = self.time_offsets - self.base_offset
        data = out.tobytes()
        assert len(data) == len(out) * TIME_ENTRY_SIZE
        return data


# Messages shared by both implementations (their wording follows the Kafka exception they stand for).

def size_below_overhead(size: int, path: str | None, position: int) -> CorruptRecordError:
    return CorruptRecordError(f"Found record size {size} smaller than minimum record overhead "
                              f"({RECORD_OVERHEAD_V0})", path=path, position=position)


def v2_too_small(batch_size: int, path: str | None, position: int) -> CorruptRecordError:
    return CorruptRecordError(f"Record batch is corrupt (the size of {batch_size} is smaller than the minimum "
                              f"allowed overhead {V2_OVERHEAD})", path=path, position=position)


def offset_overflow(last_offset: int, base_offset: int, path: str | None, position: int) -> CorruptDataError:
    return CorruptDataError(
        f"offset {last_offset} does not fit the segment's relative index (base offset {base_offset}): "
        "LogSegmentOffsetOverflowException, the broker splits such segments", path=path, position=position)


def invalid_offset(offset: int, slot: int, last: int, what: str, path: str | None,
                   position: int) -> CorruptDataError:
    return CorruptDataError(
        f"Attempt to append an offset ({offset}) to slot {slot} of the {what} no larger than the last offset "
        f"appended ({last}): InvalidOffsetException, the broker empties the whole segment", path=path,
        position=position)


def control_error(failure: ControlFailure, path: str | None) -> KafkaToolError:
    """The error a control-batch failure stands for (positioned at the control batch)."""
    return InvalidRecordError(failure.describe(), path=path, position=failure.position)


def apply_control_failure(out: SegmentRecovery, failure: ControlFailure, path: str | None, end: int) -> None:
    """Recovery stops after the control batch (its bytes are already in validBytes); loading fails either way."""
    out.control = failure
    out.error = control_error(failure, path)
    out.fatal = "load-fails"  # it comes before any later failure of the walk, which it replaces
    out.stop = WalkEnd("corrupt", failure.end, end - failure.end, out.error.message)


def torn(declared: int, remaining: int, position: int) -> WalkEnd:
    return WalkEnd("size-past-end", position, remaining,
                   f"batch declares {declared + LOG_OVERHEAD} bytes but only {remaining} remain", declared)


def short_tail(position: int, remaining: int) -> WalkEnd:
    if remaining:
        return WalkEnd("short-tail", position, remaining, f"{remaining} trailing bytes are too few for a batch header")
    return WalkEnd("end", position, 0)


def recover_segment(log: str | Path | FileRecords, base_offset: int, *,
                    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, verify: bool = False,
                    latest_epoch: int = -1, method: Literal["fast", "reference"] = "fast") -> SegmentRecovery:
    """Rebuild ``.index``/``.timeindex`` entries for one segment by the 3.9 recover rules."""
    if method == "fast":
        from kafkatool.recover_fast import recover_fast

        if isinstance(log, FileRecords):
            path, size = log.path, log.size
        else:
            path = str(log)
            try:
                size = _regular_file_size(path)
            except OSError as e:
                raise InputError(f"cannot open: {e.strerror}", path=path) from None
        return recover_fast(path, size, base_offset, index_interval_bytes=index_interval_bytes, verify=verify,
                            latest_epoch=latest_epoch)
    owned = not isinstance(log, FileRecords)
    fr = log if isinstance(log, FileRecords) else FileRecords(log)
    try:
        return _recover(fr, base_offset, index_interval_bytes, verify, latest_epoch)
    finally:
        if owned:
            fr.close()


def _regular_file_size(path: str) -> int:
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError("not a regular file", path=path)
    return st.st_size


def _recover(fr: FileRecords, base_offset: int, interval: int, verify: bool, latest_epoch: int) -> SegmentRecovery:
    """The reference: one batch at a time, in the order ``LogSegment.recover`` does things."""
    out = SegmentRecovery(base_offset, fr.size)
    buf = fr.buf
    end = fr.size
    p = 0
    last_index_entry = 0
    max_ts = NO_TIMESTAMP
    max_ts_offset = base_offset
    # TimeIndex.lastEntry starts as (NO_TIMESTAMP, baseOffset) on an empty index.
    time_last_ts = NO_TIMESTAMP
    time_last_offset = base_offset
    index_offsets: list[int] = []
    index_positions: list[int] = []
    time_ts: list[int] = []
    time_offsets: list[int] = []
    unpack_log = _LOG.unpack_from
    unpack_i32 = _V2_LAST_DELTA.unpack_from
    unpack_i64 = _V2_MAX_TS.unpack_from
    magics = out.magics
    batches = 0
    last_offset: int | None = None
    drop_at = fr.window

    while p < end - HEADER_SIZE_UP_TO_MAGIC:
        offset_field, size = unpack_log(buf, p)
        if size < RECORD_OVERHEAD_V0:
            out.error = size_below_overhead(size, fr.path, p)
            out.stop = WalkEnd("corrupt", p, end - p, out.error.message, size)
            break
        if p > end - LOG_OVERHEAD - size:
            out.stop = torn(size, end - p, p)
            break
        magic = buf[p + 16]
        if magic > 127:
            magic -= 256
        if magic >= MAGIC_V2:
            if size + LOG_OVERHEAD < V2_OVERHEAD:
                out.error = v2_too_small(size + LOG_OVERHEAD, fr.path, p)
                break
            batch_last = offset_field + unpack_i32(buf, p + 23)[0]
            batch_max_ts = unpack_i64(buf, p + 35)[0]
        else:
            batch_last = offset_field
            # LegacyRecord.timestamp(): NO_TIMESTAMP for magic 0, else the (wrapper's) own field
            batch_max_ts = NO_TIMESTAMP if magic == MAGIC_V0 else unpack_i64(buf, p + 18)[0]
        if verify:
            batch = next(iter(LogInputStream(buf, start=p, end=p + size + LOG_OVERHEAD, path=fr.path)))
            try:
                batch.ensure_valid()
            except KafkaToolError as e:
                out.error = e.at(fr.path)
                break
        rel = batch_last - base_offset
        if rel < 0 or rel > INT32_MAX:
            out.error = offset_overflow(batch_last, base_offset, fr.path, p)
            out.fatal = "offset-overflow"
            break
        magics.add(magic)
        if batch_max_ts > max_ts:
            max_ts = batch_max_ts
            max_ts_offset = batch_last
        if p - last_index_entry > interval:
            # OffsetIndex.append: offset must be above the last entry's.
            if index_offsets and batch_last <= index_offsets[-1]:
                out.error = invalid_offset(batch_last, len(index_offsets), index_offsets[-1], "offset index",
                                           fr.path, p)
                out.fatal = "invalid-offset"
                break
            index_offsets.append(batch_last)
            index_positions.append(p)
            # TimeIndex.maybeAppend checks the offset even when it does not append (equal timestamp).
            if time_ts and max_ts_offset < time_last_offset:
                out.error = invalid_offset(max_ts_offset, len(time_ts), time_last_offset, "time index", fr.path, p)
                out.fatal = "invalid-offset"
                break
            if max_ts > time_last_ts:
                time_ts.append(max_ts)
                time_offsets.append(max_ts_offset)
                time_last_ts, time_last_offset = max_ts, max_ts_offset
            last_index_entry = p
        if magic >= MAGIC_V2:
            epoch = unpack_i32(buf, p + 12)[0]
            if epoch >= 0 and epoch > latest_epoch:
                out.epochs.append((epoch, offset_field))
                latest_epoch = epoch
        last_offset = batch_last
        batches += 1
        start = p
        p += size + LOG_OVERHEAD
        # updateProducerState, after validBytes counted the batch: the transaction marker of a control batch.
        if verify and magic >= MAGIC_V2 and buf[start + 22] & 0x20:
            ensure_readable(p - start, fr.path, start)
            failure = check_control_batch(bytes(buf[start:p]), start)
            if failure is not None:
                apply_control_failure(out, failure, fr.path, end)
                break
        if p >= drop_at:
            fr.drop_before(p)
            drop_at = p + fr.window
    else:
        out.stop = short_tail(p, end - p)
    if out.error is not None and out.stop is None:
        out.stop = WalkEnd("corrupt", p, end - p, out.error.message)
    out.valid_bytes = p
    out.batches = batches
    out.last_offset = last_offset
    out.max_timestamp = max_ts
    out.offset_of_max_timestamp = max_ts_offset
    # The roll/close entry: maybeAppend(maxTimestampSoFar, shallowOffsetOfMaxTimestampSoFar, skipFullCheck=true),
    # after the log was truncated; an offset below the last entry's throws here too.
    if out.completes and time_ts and max_ts_offset < time_last_offset:
        out.error = invalid_offset(max_ts_offset, len(time_ts), time_last_offset, "time index", fr.path, p)
        out.fatal, out.control = "invalid-offset", None  # LogLoader empties the segment, marker and all
    elif out.completes and max_ts > time_last_ts:
        time_ts.append(max_ts)
        time_offsets.append(max_ts_offset)
    out.index_offsets = np.array(index_offsets, np.int64)
    out.index_positions = np.array(index_positions, np.int64)
    out.time_timestamps = np.array(time_ts, np.int64)
    out.time_offsets = np.array(time_offsets, np.int64)
    return out
