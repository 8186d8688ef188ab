"""Reference implementations the fast paths are proven equal to (kafkatool at commit a117c71).

These are the straightforward versions of the hot paths, kept verbatim as test oracles: the library
replaced them with faster code (inline two-byte varints, a pread header walk, ...) and
tests/test_fast_paths.py checks both give the same results and the same errors on random and
damaged input.
"""

from __future__ import annotations

import struct

from kafkatool.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Header,
    Record,
    increment_sequence,
)
from kafkatool.codecs import Codec, crc32, decompress
from kafkatool.default_records import MIN_RECORD_SIZE, _parse_headers
from kafkatool.errors import CorruptDataError, CorruptRecordError, InvalidRecordError, KafkaToolError
from kafkatool.file_records import FileRecords, LogInputStream, WalkEnd
from kafkatool.index import OffsetPosition, TimestampOffset
from kafkatool.legacy_records import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    MAGIC_OFFSET,
    RECORD_OVERHEAD_V0,
    TIMESTAMP,
    TIMESTAMP_OFFSET,
    TIMESTAMP_TYPE_MASK,
    LegacyRecordBatch,
    _key_value,
)
from kafkatool.recover import _LOG, _V2_LAST_DELTA, _V2_MAX_TS, INT32_MAX, SegmentRecovery
from kafkatool.varint import read_varint, read_varlong


def parse_records(d: bytes, p: int, end: int, count: int, base_offset: int, base_timestamp: int,
                  log_append_time: int | None, base_sequence: int) -> list[Record]:
    """Decode ``count`` v2 records from ``d[p:end]`` with Kafka's checks (``DefaultRecord.readFrom``).

    The hot path of every deep read: varints of one byte are decoded inline, records are tuples.
    Errors carry a position relative to ``d``.
    """
    if count * MIN_RECORD_SIZE > end - p:
        raise InvalidRecordError(
            f"Incorrect declared batch size, premature EOF reached (record count {count} cannot fit in "
            f"{end - p} bytes)", position=p)
    out: list[Record] = []
    append = out.append
    new = tuple.__new__
    R = Record
    no_headers: tuple[Header, ...] = ()
    try:
        for _ in range(count):
            start = p
            b = d[p]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                length, p = read_varint(d, p, end)
            rec_end = p + length
            if length < 0 or rec_end > end:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                    f"has only {end - p} remaining bytes.", position=start)
            p += 1  # attributes: unused, ignored on read
            b = d[p]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                ts_delta, p = read_varlong(d, p, end)
            b = d[p]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                offset_delta, p = read_varint(d, p, end)
            b = d[p]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                n, p = read_varint(d, p, end)
            if n >= 0:
                key: bytes | None = d[p:p + n]
                p += n
            elif n == -1:
                key = None
            else:
                raise InvalidRecordError(f"Invalid negative key length {n} (Kafka reads it as a null key)",
                                         position=start)
            b = d[p]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                n, p = read_varint(d, p, end)
            if n >= 0:
                value: bytes | None = d[p:p + n]
                p += n
            elif n == -1:
                value = None
            else:
                raise InvalidRecordError(f"Invalid negative value length {n} (Kafka reads it as a null value)",
                                         position=start)
            b = d[p]
            if b == 0:
                headers = no_headers
                p += 1
            else:
                headers, p = _parse_headers(d, p, rec_end, start)
            if p != rec_end:
                raise InvalidRecordError(
                    f"Invalid record size: expected to read {length} bytes in record payload, but instead read "
                    f"{p - (rec_end - length)}", position=start)
            if base_sequence < 0:
                seq = -1
            elif base_sequence > 0x7FFFFFFF - offset_delta:
                seq = increment_sequence(base_sequence, offset_delta)
            else:
                seq = base_sequence + offset_delta
            append(new(R, (base_offset + offset_delta,
                           base_timestamp + ts_delta if log_append_time is None else log_append_time,
                           key, value, headers, seq, rec_end - start, None, None)))
    except IndexError:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached", position=p) from None
    if p != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", position=p)
    return out



def _recover(fr: FileRecords, base_offset: int, interval: int, verify: bool, latest_epoch: int) -> SegmentRecovery:
    out = SegmentRecovery(base_offset, fr.size)
    buf = fr.buf
    end = fr.size
    p = 0
    last_index_entry = 0
    max_ts = NO_TIMESTAMP
    max_ts_offset = base_offset
    time_last_ts = NO_TIMESTAMP  # TimeIndex.lastEntry starts as (NO_TIMESTAMP, baseOffset)
    offset_entries = out.offset_entries
    time_entries = out.time_entries
    unpack_log = _LOG.unpack_from
    unpack_i32 = _V2_LAST_DELTA.unpack_from
    unpack_i64 = _V2_MAX_TS.unpack_from
    magics = out.magics
    batches = 0
    last_offset: int | None = None
    drop_at = 64 << 20

    while p < end - HEADER_SIZE_UP_TO_MAGIC:
        offset_field, size = unpack_log(buf, p)
        if size < RECORD_OVERHEAD_V0:
            out.stop = WalkEnd("corrupt", p, end - p, f"Found record size {size} smaller than minimum record "
                               f"overhead ({RECORD_OVERHEAD_V0})", size)
            out.error = CorruptRecordError(out.stop.message, path=fr.path, position=p)
            break
        if p > end - LOG_OVERHEAD - size:
            out.stop = WalkEnd("size-past-end", p, end - p,
                               f"batch declares {size + LOG_OVERHEAD} bytes but only {end - p} remain", size)
            break
        magic = buf[p + 16]
        if magic > 127:
            magic -= 256
        if magic >= MAGIC_V2:
            if size + LOG_OVERHEAD < 61:
                out.error = CorruptRecordError(
                    f"Record batch is corrupt (the size of {size + LOG_OVERHEAD} is smaller than the minimum "
                    "allowed overhead 61)", path=fr.path, position=p)
                break
            batch_last = offset_field + unpack_i32(buf, p + 23)[0]
            batch_max_ts = unpack_i64(buf, p + 35)[0]
        else:
            batch_last = offset_field
            if magic == MAGIC_V0 or size < 14:
                batch_max_ts = NO_TIMESTAMP
            else:
                batch_max_ts = unpack_i64(buf, p + 18)[0]
        if verify:
            batch = next(iter(LogInputStream(buf, start=p, end=p + size + LOG_OVERHEAD, path=fr.path)))
            try:
                batch.ensure_valid()
            except KafkaToolError as e:
                out.error = e.at(fr.path)
                break
        rel = batch_last - base_offset
        if rel < 0 or rel > INT32_MAX:
            out.error = CorruptDataError(
                f"offset {batch_last} does not fit the segment's relative index (base offset {base_offset}): "
                "LogSegmentOffsetOverflowException, the broker splits such segments", path=fr.path, position=p)
            break
        magics.add(magic)
        if batch_max_ts > max_ts:
            max_ts = batch_max_ts
            max_ts_offset = batch_last
        if p - last_index_entry > interval:
            if offset_entries and batch_last <= offset_entries[-1].offset:
                out.error = CorruptDataError(
                    f"Attempt to append an offset ({batch_last}) to position {len(offset_entries)} no larger "
                    f"than the last offset appended ({offset_entries[-1].offset}): InvalidOffsetException, the "
                    "broker empties the whole segment", path=fr.path, position=p)
                break
            offset_entries.append(OffsetPosition(batch_last, p))
            if max_ts > time_last_ts:
                time_entries.append(TimestampOffset(max_ts, max_ts_offset))
                time_last_ts = max_ts
            last_index_entry = p
        if magic >= MAGIC_V2:
            epoch = unpack_i32(buf, p + 12)[0]
            if epoch >= 0 and epoch > latest_epoch:
                out.epochs.append((epoch, offset_field))
                latest_epoch = epoch
        last_offset = batch_last
        batches += 1
        p += size + LOG_OVERHEAD
        if p >= drop_at:
            fr.drop_before(p)
            drop_at = p + (64 << 20)
    else:
        if p < end:
            out.stop = WalkEnd("short-tail", p, end - p, f"{end - p} trailing bytes are too few for a batch header")
        else:
            out.stop = WalkEnd("end", p, 0)
    if out.error is not None and out.stop is None:
        out.stop = WalkEnd("corrupt", p, end - p, out.error.message)
    out.valid_bytes = p
    out.batches = batches
    out.last_offset = last_offset
    out.max_timestamp = max_ts
    out.offset_of_max_timestamp = max_ts_offset
    # The roll/close entry: maybeAppend(maxTimestampSoFar, shallowOffsetOfMaxTimestampSoFar, skipFullCheck=true).
    if max_ts > time_last_ts:
        time_entries.append(TimestampOffset(max_ts, max_ts_offset))
    return out


# LegacyRecordBatch._deep_records at a117c71, as a function of the batch.
def legacy_deep_records(self: LegacyRecordBatch, value: bytes | None, limit: int) -> list[Record]:
    wrapper_magic = self.magic
    pos = self.position
    if wrapper_magic not in (MAGIC_V0, MAGIC_V1):
        raise InvalidRecordError(f"Invalid wrapper magic found in legacy deep record iterator {wrapper_magic}",
                                 position=pos)
    codec_id = self.attributes & COMPRESSION_CODEC_MASK
    if codec_id == Codec.ZSTD:
        # Kafka's message prints the wrapper magic here (sic).
        raise InvalidRecordError("Invalid wrapper compressionType found in legacy deep record iterator "
                                 f"{wrapper_magic} (zstd is not allowed below magic 2)", position=pos)
    if codec_id > 4:
        raise InvalidRecordError(f"Unknown compression type id {codec_id}", position=pos)
    if value is None:
        raise InvalidRecordError(
            f"Found invalid compressed record set with null value (magic = {wrapper_magic})", position=pos)
    try:
        data = decompress(codec_id, value, limit=limit, magic=wrapper_magic)
    except KafkaToolError as e:
        raise (e.at(base=pos) if e.position is None else e) from None
    wrapper_lat = wrapper_magic == MAGIC_V1 and bool(self.attributes & TIMESTAMP_TYPE_MASK)
    inner: list[tuple[int, int, int, int, int]] = []  # (offset, start, length, magic, attributes)
    p, end = 0, len(data)
    while end - p >= 12:
        offset, size = struct.unpack_from(">qi", data, p)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0}) "
                f"(inner message at decompressed byte {p} of the wrapper)", position=pos)
        if end - p - 12 < size:
            break  # a truncated tail inside the decompressed data is silently dropped, as Kafka does
        inner.append((offset, p + 12, size, data[p + 12 + MAGIC_OFFSET], data[p + 12 + ATTRIBUTES_OFFSET]))
        p += 12 + size
    if not inner:
        raise InvalidRecordError("Found invalid compressed record set with no inner records", position=pos)
    if wrapper_magic == MAGIC_V1:
        wrapper_offset = int(self.offset)
        if wrapper_offset == 0:
            base = 0  # produce data from some librdkafka versions
        else:
            last_inner = inner[-1][0]
            if wrapper_offset < last_inner:
                raise InvalidRecordError(
                    "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper_offset}' is less than the last inner message offset '{last_inner}' and it is "
                    "not zero.", position=pos)
            base = wrapper_offset - last_inner
    else:
        base = 0
    out: list[Record] = []
    wrapper_ts = int(self.timestamp)
    for offset, start, size, magic, attributes in inner:
        if attributes & COMPRESSION_CODEC_MASK:
            raise InvalidRecordError("Inner messages must not be compressed", position=pos)
        try:
            key, val = _key_value(data, start, size, magic)
        except KafkaToolError as e:
            e.message += f" (inner message at decompressed byte {start - 12} of the wrapper)"
            e.position = pos
            raise
        if magic == MAGIC_V0:
            ts = NO_TIMESTAMP
        elif wrapper_lat:
            ts = wrapper_ts
        else:
            ts = TIMESTAMP.unpack_from(data, start + TIMESTAMP_OFFSET)[0]
        (stored_crc,) = struct.unpack_from(">I", data, start)
        crc_ok = size >= RECORD_OVERHEAD_V0 and stored_crc == crc32(
            memoryview(data)[start + MAGIC_OFFSET:start + size])
        absolute = base + offset if wrapper_magic == MAGIC_V1 else offset
        out.append(Record(absolute, ts, key, val, (), NO_SEQUENCE, size + 12, stored_crc, crc_ok))
    return out

