"""Reference implementations the fast paths are proven equal to.

These are the straightforward versions of the hot paths, kept as test oracles: ``parse_records`` as on main
before the inline varint decoding (a117c71 plus main's null-for-any-negative-length rule), and
``LegacyRecordBatch._deep_records`` at a117c71 (it calls the library's ``_key_value``, so it follows
main's rules too). tests/record/test_fast_paths.py checks both paths give the same results and the same errors on
random and damaged input.
"""

from __future__ import annotations

import struct

from kafkatool.errors import CorruptRecordError, InvalidRecordError, KafkaToolError, TruncatedError
from kafkatool.record.batch import MAGIC_V0, MAGIC_V1, NO_SEQUENCE, NO_TIMESTAMP, Header, Record, increment_sequence
from kafkatool.record.codecs import Codec, crc32, decompress
from kafkatool.record.default_records import MIN_RECORD_SIZE, _parse_headers
from kafkatool.record.legacy_records import (
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
from kafkatool.record.varint import read_varint, read_varlong


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
            else:
                key = None  # any negative length is a null key (DefaultRecord.readFrom: `if (keySize >= 0)`)
            b = d[p]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                n, p = read_varint(d, p, end)
            if n >= 0:
                value: bytes | None = d[p:p + n]
                p += n
            else:
                value = None  # likewise any negative value length
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
    except TruncatedError as e:
        # A varint cut by its record's end: DefaultRecord.readFrom turns the BufferUnderflowException into
        # InvalidRecordException("Found invalid record structure") (checked against kafka-clients 3.9.1).
        raise InvalidRecordError(f"Found invalid record structure ({e.message})", position=e.position) from None
    if p != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", position=p)
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

