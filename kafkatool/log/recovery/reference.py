"""The reference walk of ``LogSegment.recover`` (Kafka 3.9): one batch at a time, written to read like the Java.

:mod:`kafkatool.log.recovery.fast` is its twin over batch headers (the default); the tests hold the two
equal. See :mod:`kafkatool.log.recovery` for the rules both follow.
"""

from __future__ import annotations

import struct

import numpy as np

from kafkatool.constants import INT32_MAX
from kafkatool.errors import KafkaToolError
from kafkatool.log.recovery.control import check_control_batch, ensure_readable
from kafkatool.log.recovery.result import (
    SegmentRecovery,
    apply_control_failure,
    invalid_offset,
    offset_overflow,
    short_tail,
    size_below_overhead,
    torn,
    v2_too_small,
)
from kafkatool.record.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V2,
    NO_TIMESTAMP,
)
from kafkatool.record.default_records import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG_MASK,
    LAST_OFFSET_DELTA_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    RECORD_BATCH_OVERHEAD,
)
from kafkatool.record.file_records import FileRecords, LogInputStream, WalkEnd
from kafkatool.record.legacy_records import ENTRY_TIMESTAMP_OFFSET, RECORD_OVERHEAD_V0

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def recover_reference(fr: FileRecords, base_offset: int, interval: int, verify: bool,
                      latest_epoch: int) -> SegmentRecovery:
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
    unpack_log = LOG_HEADER.unpack_from
    unpack_i16 = _I16.unpack_from
    unpack_i32 = _I32.unpack_from
    unpack_i64 = _I64.unpack_from
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
        magic = buf[p + MAGIC_OFFSET]
        if magic > 127:
            magic -= 256
        if magic >= MAGIC_V2:
            if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
                out.error = v2_too_small(size + LOG_OVERHEAD, fr.path, p)
                break
            batch_last = offset_field + unpack_i32(buf, p + LAST_OFFSET_DELTA_OFFSET)[0]
            batch_max_ts = unpack_i64(buf, p + MAX_TIMESTAMP_OFFSET)[0]
        else:
            batch_last = offset_field
            # LegacyRecord.timestamp(): NO_TIMESTAMP for magic 0, else the (wrapper's) own field
            batch_max_ts = NO_TIMESTAMP if magic == MAGIC_V0 else unpack_i64(buf, p + ENTRY_TIMESTAMP_OFFSET)[0]
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
            epoch = unpack_i32(buf, p + PARTITION_LEADER_EPOCH_OFFSET)[0]
            if epoch >= 0 and epoch > latest_epoch:
                out.epochs.append((epoch, offset_field))
                latest_epoch = epoch
        last_offset = batch_last
        batches += 1
        start = p
        p += size + LOG_OVERHEAD
        # updateProducerState, after validBytes counted the batch: the transaction marker of a control batch.
        if verify and magic >= MAGIC_V2 and unpack_i16(buf, start + ATTRIBUTES_OFFSET)[0] & CONTROL_FLAG_MASK:
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
