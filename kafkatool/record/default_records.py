"""Message format v2: ``DefaultRecordBatch`` and ``DefaultRecord`` (magic 2, Kafka 0.11+). Spec §2.

Batch header: ``HEADER`` below, one field a line (61 bytes, ``RECORD_BATCH_OVERHEAD``); the records follow
it, raw or as one compressed stream. The CRC-32C covers the attributes to the end of the batch.

Record::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    [headerKeyLength varint | headerKey utf8 | headerValueLength varint | headerValue]*
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from kafkatool._accel import crc32c as _crc32c
from kafkatool._accel import speedups as _C
from kafkatool.constants import INT32_MAX
from kafkatool.errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaToolError,
    TruncatedError,
    UnsupportedCodecError,
)
from kafkatool.record.batch import (
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    ControlRecordType,
    Header,
    Record,
    RecordSource,
    TimestampType,
    increment_sequence,
)
from kafkatool.record.codecs import Codec, compress, decompress
from kafkatool.record.varint import _SMALL as _SMALL_VARINTS
from kafkatool.record.varint import (
    ZIGZAG_14,
    encode_varint,
    encode_varint_fast,
    encode_varlong,
    read_varint,
    read_varlong,
)
from kafkatool.util import budget as _budget

Buffer = bytes | bytearray | memoryview

HEADER = struct.Struct(
    ">q"  # baseOffset            int64
    "i"   # length                int32   batch size - LOG_OVERHEAD
    "i"   # partitionLeaderEpoch  int32   not covered by the CRC
    "b"   # magic                 int8    2
    "I"   # crc                   uint32  CRC-32C of attributes .. end of the batch
    "h"   # attributes            int16   bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control,
    #                                     6 delete horizon set (3.1+, KIP-534)
    "i"   # lastOffsetDelta       int32
    "q"   # baseTimestamp         int64   first record's timestamp, or deleteHorizonMs when bit 6 is set
    "q"   # maxTimestamp          int64
    "q"   # producerId            int64
    "h"   # producerEpoch         int16
    "i"   # baseSequence          int32
    "i"   # recordsCount          int32
)
# Field offsets: the size of the fields before each one.
BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = struct.calcsize(">q")
PARTITION_LEADER_EPOCH_OFFSET = struct.calcsize(">qi")
MAGIC_OFFSET = struct.calcsize(">qii")
CRC_OFFSET = struct.calcsize(">qiib")
ATTRIBUTES_OFFSET = struct.calcsize(">qiibI")
LAST_OFFSET_DELTA_OFFSET = struct.calcsize(">qiibIh")
BASE_TIMESTAMP_OFFSET = struct.calcsize(">qiibIhi")
MAX_TIMESTAMP_OFFSET = struct.calcsize(">qiibIhiq")
PRODUCER_ID_OFFSET = struct.calcsize(">qiibIhiqq")
PRODUCER_EPOCH_OFFSET = struct.calcsize(">qiibIhiqqq")
BASE_SEQUENCE_OFFSET = struct.calcsize(">qiibIhiqqqh")
RECORDS_COUNT_OFFSET = struct.calcsize(">qiibIhiqqqhi")
RECORDS_OFFSET = RECORD_BATCH_OVERHEAD = HEADER.size  # 61


class BatchHeader(NamedTuple):
    """``HEADER``'s fields by name, as one unpack gives them (:func:`read_header`)."""

    base_offset: int
    length: int  # the batch's size is length + LOG_OVERHEAD
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


def read_header(buf: Buffer, start: int) -> BatchHeader:
    """The header of the batch at ``buf[start:]`` (at least ``RECORD_BATCH_OVERHEAD`` bytes must be there)."""
    return _tuple_new(BatchHeader, _unpack_header(buf, start))


_tuple_new = tuple.__new__
_unpack_header = HEADER.unpack_from

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# The smallest possible record: length, attributes, ts delta, offset delta, key len, value len, header count
# (one byte each).
MIN_RECORD_SIZE = 7
# DefaultRecord.MAX_RECORD_OVERHEAD: length varint (5) + attributes (1) + timestampDelta varlong (10) +
# offsetDelta varint (5): the most a record adds besides its key, value and headers.
MAX_RECORD_OVERHEAD = 21

_I16 = struct.Struct(">h")
_I16I32 = struct.Struct(">hi")
_CRC_STRUCT = struct.Struct(">I")
_crc = _crc32c.crc32c


def crc32c(data: Buffer) -> int:
    return _crc(data)


class DefaultRecordBatch:
    """A v2 batch viewed in place: header fields from one ``struct`` unpack, records on demand.

    ``buf`` holds the batch at index ``start``; ``position`` is the batch's byte position in its file.
    Magic values above 2 are read with this class too, as Kafka's ``FileLogInputStream`` does.
    """

    __slots__ = ("buf", "start", "position", "h")

    def __init__(self, buf: Buffer, start: int, position: int, header: BatchHeader) -> None:
        self.buf = buf
        self.start = start
        self.position = position
        self.h = header

    @classmethod
    def at(cls, buf: Buffer, start: int = 0, position: int | None = None) -> DefaultRecordBatch:
        if len(buf) - start < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size of {len(buf) - start} is smaller than the minimum allowed "
                f"overhead {RECORD_BATCH_OVERHEAD})", position=start if position is None else position)
        return cls(buf, start, start if position is None else position, read_header(buf, start))

    # ------------------------------------------------------------------ header fields
    base_offset = property(lambda self: self.h.base_offset)
    partition_leader_epoch = property(lambda self: self.h.partition_leader_epoch)
    magic = property(lambda self: self.h.magic)
    crc = property(lambda self: self.h.crc)
    attributes = property(lambda self: self.h.attributes)
    last_offset_delta = property(lambda self: self.h.last_offset_delta)
    base_timestamp = property(lambda self: self.h.base_timestamp)
    max_timestamp = property(lambda self: self.h.max_timestamp)
    producer_id = property(lambda self: self.h.producer_id)
    producer_epoch = property(lambda self: self.h.producer_epoch)
    base_sequence = property(lambda self: self.h.base_sequence)
    records_count = property(lambda self: self.h.records_count)

    @property
    def size(self) -> int:
        """``sizeInBytes``: the whole batch including the 12-byte log overhead."""
        return int(self.h.length) + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return int(self.h.base_offset) + int(self.h.last_offset_delta)

    @property
    def count(self) -> int | None:
        return int(self.h.records_count)

    @property
    def codec(self) -> Codec:
        return Codec.from_id(self.h.attributes & COMPRESSION_CODEC_MASK)

    @property
    def codec_id(self) -> int:
        return int(self.h.attributes) & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.h.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.h.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.h.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.h.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return int(self.h.base_timestamp) if self.h.attributes & DELETE_HORIZON_FLAG_MASK else None

    @property
    def last_sequence(self) -> int:
        base = int(self.h.base_sequence)
        if base == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(base, int(self.h.last_offset_delta))

    @property
    def is_compressed(self) -> bool:
        return bool(self.h.attributes & COMPRESSION_CODEC_MASK)

    def raw(self) -> memoryview:
        """The batch's bytes (a view, no copy)."""
        return memoryview(self.buf)[self.start:self.start + self.size]

    # ------------------------------------------------------------------ validation
    def compute_crc(self) -> int:
        s = self.start
        return _crc(memoryview(self.buf)[s + ATTRIBUTES_OFFSET:s + self.size])

    def is_valid(self) -> bool:
        """``DefaultRecordBatch.isValid``: size >= 61 and the stored CRC-32C matches."""
        size = self.size
        if size < RECORD_BATCH_OVERHEAD or self.start + size > len(self.buf):
            return False
        return bool(self.h.crc == self.compute_crc())

    def ensure_valid(self) -> None:
        h = self.h
        size = h.length + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size of {size} is smaller than the minimum allowed overhead "
                f"{RECORD_BATCH_OVERHEAD})", position=self.position)
        if self.start + size > len(self.buf):
            raise CorruptRecordError(f"Record batch of {size} bytes runs past the end of the data",
                                     position=self.position)
        s = self.start
        computed = _crc(memoryview(self.buf)[s + ATTRIBUTES_OFFSET:s + size])
        if h.crc != computed:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {h.crc}, computed crc = {computed})", position=self.position)

    # ------------------------------------------------------------------ records
    def records_bytes(self, *, limit: int | None = None) -> bytes:
        """The uncompressed records area (decompressed, at most ``limit`` bytes)."""
        s = self.start
        area = memoryview(self.buf)[s + RECORDS_OFFSET:s + self.size]
        codec_id = self.h.attributes & COMPRESSION_CODEC_MASK
        if codec_id == 0:
            return bytes(area)
        if codec_id > 4:
            raise UnsupportedCodecError(f"Unknown compression type id {codec_id}", position=self.position)
        try:
            return decompress(codec_id, area, limit=limit, magic=MAGIC_V2)
        except KafkaToolError as e:
            raise (e.at(base=self.position) if e.position is None else e) from None

    def records(self, *, limit: int | None = None) -> list[Record]:
        """Every record of the batch, as ``DefaultRecordBatch.iterator()`` returns them."""
        h = self.h
        count = h.records_count
        if count < 0:
            raise InvalidRecordError(f"Found invalid record count {count} in magic v{h.magic} batch",
                                     position=self.position)
        data = self.records_bytes(limit=limit)
        lat = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else None
        try:
            return parse_records(data, 0, len(data), count, h.base_offset, h.base_timestamp, lat, h.base_sequence)
        except KafkaToolError as e:
            if e.position is not None and not (h.attributes & COMPRESSION_CODEC_MASK):
                e.position += self.position + RECORDS_OFFSET
            elif e.position is None or h.attributes & COMPRESSION_CODEC_MASK:
                e.message += f" (in the batch at byte {self.position})"
                e.position = self.position
            raise

    def record_chunks(self, *, limit: int | None = None, size: int | None = None) -> Iterator[list[Record]]:
        """:meth:`records` a chunk of at most ``size`` records at a time (default: the memory budget's
        ``record_chunk``): one list for a batch that fits a chunk, else the whole batch is checked first (a
        damaged record raises before any chunk is handed out) and its records decoded chunk by chunk."""
        n = _budget.record_chunk() if size is None else size
        if self.h.records_count <= n:
            yield self.records(limit=limit)
            return
        yield from self.record_source(limit=limit).chunks(n)

    def record_source(self, *, limit: int | None = None, stored_timestamps: bool = False) -> RecordSource:
        """The batch's records to read a chunk at a time, after checking them all (errors as :meth:`records`
        raises them); a batch that fits a chunk is decoded at once (``held``). ``stored_timestamps``: base
        timestamp + delta also in a LogAppendTime batch (:func:`stored_records`)."""
        h = self.h
        count = h.records_count
        if count < 0:
            raise InvalidRecordError(f"Found invalid record count {count} in magic v{h.magic} batch",
                                     position=self.position)
        if count <= _budget.record_chunk():
            return RecordSource.of(stored_records(self, limit=limit) if stored_timestamps
                                   else self.records(limit=limit))
        data = self.records_bytes(limit=limit)
        end = len(data)
        lat = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK and not stored_timestamps else None
        base_offset, base_ts, base_seq = h.base_offset, h.base_timestamp, h.base_sequence
        try:
            if _C is None or _C.validate_records(data, 0, end, count, base_offset) is None:
                # Each chunk decoded and dropped: the exact error where there is one, in bounded memory.
                _check_count(0, end, count)
                p, left, n = 0, count, _budget.record_chunk()
                while left > 0:
                    got, p = parse_records_chunk_py(data, p, end, min(n, left), base_offset, base_ts, lat, base_seq)
                    left -= len(got)
                _check_end(p, end)
        except KafkaToolError as e:
            raise self._locate(e, stored_timestamps) from None

        def read(position: int, n: int) -> tuple[list[Record], int]:
            try:
                return parse_records_chunk(data, position, end, n, base_offset, base_ts, lat, base_seq)
            except KafkaToolError as e:  # pragma: no cover - the whole area was checked above
                raise self._locate(e, stored_timestamps) from None

        return RecordSource(count, 0, read)

    def _locate(self, e: KafkaToolError, stored: bool = False) -> KafkaToolError:
        """A records-area error as :meth:`records` (``stored``: :func:`stored_records`) reports it."""
        compressed = self.h.attributes & COMPRESSION_CODEC_MASK
        if e.position is not None and not compressed and not stored:
            e.position += self.position + RECORDS_OFFSET
        elif e.position is None or compressed or stored:
            e.message += f" (in the batch at byte {self.position})"
            e.position = self.position
        return e

    def __repr__(self) -> str:
        return (f"DefaultRecordBatch(position={self.position}, base_offset={self.base_offset}, "
                f"last_offset={self.last_offset}, count={self.records_count}, codec={self.codec_id}, "
                f"size={self.size})")


def parse_records(d: bytes, p: int, end: int, count: int, base_offset: int, base_timestamp: int,
                  log_append_time: int | None, base_sequence: int) -> list[Record]:
    """Decode ``count`` v2 records from ``d[p:end]`` with Kafka's checks (``DefaultRecord.readFrom``).

    The compiled twin (``_speedups.parse_records``, ~0.15 us a record) when it is built; it returns None
    wherever :func:`parse_records_py`, the reference, must run (any error: that one raises it exactly).
    """
    if _C is not None:
        out: list[Record] | None = _C.parse_records(d, p, end, count, base_offset, base_timestamp,
                                                     log_append_time, base_sequence)
        if out is not None:
            return out
    return parse_records_py(d, p, end, count, base_offset, base_timestamp, log_append_time, base_sequence)


def parse_records_py(d: bytes, p: int, end: int, count: int, base_offset: int, base_timestamp: int,
                     log_append_time: int | None, base_sequence: int) -> list[Record]:
    """:func:`parse_records` in pure Python (the reference of the compiled twin, and its fallback).

    The hot path of every deep read without the extension (about 1.2 us a record): varints of one and two
    bytes (lengths below 8 KiB, deltas below 8192) are decoded inline, longer ones by ``read_varint``;
    records are built as tuples. The inline two-byte path only reads ``d[p + 1]`` when it lies before ``end``, so
    truncations raise exactly what ``read_varint`` raises. Errors carry a position relative to ``d``.
    """
    _check_count(p, end, count)
    out, p = parse_records_chunk_py(d, p, end, count, base_offset, base_timestamp, log_append_time, base_sequence)
    _check_end(p, end)
    return out


def _check_count(p: int, end: int, count: int) -> None:
    if count * MIN_RECORD_SIZE > end - p:
        raise InvalidRecordError(
            f"Incorrect declared batch size, premature EOF reached (record count {count} cannot fit in "
            f"{end - p} bytes)", position=p)


def _check_end(p: int, end: int) -> None:
    if p != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", position=p)


def parse_records_chunk(d: bytes, p: int, end: int, count: int, base_offset: int, base_timestamp: int,
                        log_append_time: int | None, base_sequence: int) -> tuple[list[Record], int]:
    """The first ``count`` records from ``d[p:end]`` and the position after them: one chunk of a batch whose
    records are read a chunk at a time (:meth:`DefaultRecordBatch.record_source`). The compiled twin when it is
    built, else (or where it declines) :func:`parse_records_chunk_py`."""
    if _C is not None:
        out: tuple[list[Record], int] | None = _C.parse_records_chunk(d, p, end, count, base_offset, base_timestamp,
                                                                       log_append_time, base_sequence)
        if out is not None:
            return out
    return parse_records_chunk_py(d, p, end, count, base_offset, base_timestamp, log_append_time, base_sequence)


def parse_records_chunk_py(d: bytes, p: int, end: int, count: int, base_offset: int, base_timestamp: int,
                           log_append_time: int | None, base_sequence: int) -> tuple[list[Record], int]:
    """:func:`parse_records_py`'s loop: ``count`` records from ``p`` (more may follow before ``end``), without
    the checks of the whole area (its size against the count, nothing left after the last record)."""
    out: list[Record] = []
    append = out.append
    new = tuple.__new__
    R = Record
    no_headers: tuple[Header, ...] = ()
    rv = read_varint
    zigzag = ZIGZAG_14
    try:
        for _ in range(count):
            start = p
            b = d[p]
            if b < 0x80:
                length = zigzag[b]
                p += 1
            elif p + 1 < end and d[p + 1] < 0x80:
                b = b - 0x80 + (d[p + 1] << 7)
                length = zigzag[b]
                p += 2
            else:
                length, p = rv(d, p, end)
            rec_end = p + length
            if length < 0 or rec_end > end:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                    f"has only {end - p} remaining bytes.", position=start)
            p += 1  # attributes: unused, ignored on read
            b = d[p]
            if b < 0x80:
                ts_delta = zigzag[b]
                p += 1
            elif p + 1 < end and d[p + 1] < 0x80:
                b = b - 0x80 + (d[p + 1] << 7)
                ts_delta = zigzag[b]
                p += 2
            else:
                ts_delta, p = read_varlong(d, p, end)
            b = d[p]
            if b < 0x80:
                offset_delta = zigzag[b]
                p += 1
            elif p + 1 < end and d[p + 1] < 0x80:
                b = b - 0x80 + (d[p + 1] << 7)
                offset_delta = zigzag[b]
                p += 2
            else:
                offset_delta, p = rv(d, p, end)
            b = d[p]
            if b < 0x80:
                n = zigzag[b]
                p += 1
            elif p + 1 < end and d[p + 1] < 0x80:
                b = b - 0x80 + (d[p + 1] << 7)
                n = zigzag[b]
                p += 2
            else:
                n, p = rv(d, p, end)
            if n >= 0:
                key: bytes | None = d[p:p + n]
                p += n
            else:
                key = None  # any negative length is a null key (DefaultRecord.readFrom: `if (keySize >= 0)`)
            b = d[p]
            if b < 0x80:
                n = zigzag[b]
                p += 1
            elif p + 1 < end and d[p + 1] < 0x80:
                b = b - 0x80 + (d[p + 1] << 7)
                n = zigzag[b]
                p += 2
            else:
                n, p = rv(d, p, end)
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
            elif base_sequence > INT32_MAX - offset_delta:
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
    return out, p


def _parse_headers(d: bytes, p: int, rec_end: int, start: int) -> tuple[tuple[Header, ...], int]:
    n, p = read_varint(d, p, rec_end)
    if n < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {n}", position=start)
    if n > rec_end - p:
        raise InvalidRecordError("Found invalid number of record headers. The number of record headers is "
                                 "greater than the remaining bytes in the buffer.", position=start)
    headers = []
    for _ in range(n):
        kl, p = read_varint(d, p, rec_end)
        if kl < 0:
            raise InvalidRecordError(f"Invalid negative header key size {kl}", position=start)
        if p + kl > rec_end:
            raise InvalidRecordError("Header key runs past the end of the record", position=start)
        hkey = d[p:p + kl].decode("utf-8", "replace")
        p += kl
        vl, p = read_varint(d, p, rec_end)
        if vl >= 0:
            if p + vl > rec_end:
                raise InvalidRecordError("Header value runs past the end of the record", position=start)
            hval: bytes | None = d[p:p + vl]
            p += vl
        else:
            hval = None  # any negative header value length is null in Kafka; a negative key length is an error
        headers.append(Header(hkey, hval))
    return tuple(headers), p


# ---------------------------------------------------------------------------------------------- control

def parse_control_type(key: bytes | None) -> ControlRecordType:
    """``ControlRecordType.parse``: 4-byte key, version int16 >= 0, then the type id."""
    return ControlRecordType.from_type_id(parse_control_type_id(key))


def parse_control_type_id(key: bytes | None) -> int:
    if key is None or len(key) < 4:
        found = 0 if key is None else len(key)
        raise InvalidRecordError("Invalid value size found for end control record key. Must have at least 4 "
                                 f"bytes, but found only {found}")
    version, type_id = struct.unpack_from(">hh", key, 0)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for control record: {version}. May indicate data "
                                 "corruption")
    return int(type_id)


def parse_end_txn_marker(value: bytes | None) -> int:
    """``EndTransactionMarker.deserializeValue``: returns the coordinator epoch."""
    if value is None or len(value) < 6:
        found = 0 if value is None else len(value)
        raise InvalidRecordError("Invalid value size found for end transaction marker. Must have at least 6 "
                                 f"bytes, but found only {found}")
    version, epoch = _I16I32.unpack_from(value, 0)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for end transaction marker: {version}. May indicate "
                                 "data corruption")
    return int(epoch)


def control_key(control_type: ControlRecordType | int) -> bytes:
    return struct.pack(">hh", 0, int(control_type))


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return _I16I32.pack(0, coordinator_epoch)


# ---------------------------------------------------------------------------------------------- writing

def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Sequence[tuple[str, bytes | None]] = ()) -> bytes:
    """``DefaultRecord.writeTo``: one record with its length prefix."""
    ev = encode_varint_fast
    parts = [b"\x00", encode_varlong(timestamp_delta), ev(offset_delta)]
    if key is None:
        parts.append(b"\x01")
    else:
        parts.append(ev(len(key)))
        parts.append(key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts.append(ev(len(value)))
        parts.append(value)
    parts.append(ev(len(headers)))
    for hk, hv in headers:
        kb = hk.encode("utf-8")
        parts.append(ev(len(kb)))
        parts.append(kb)
        if hv is None:
            parts.append(b"\x01")
        else:
            parts.append(ev(len(hv)))
            parts.append(hv)
    body = b"".join(parts)
    return ev(len(body)) + body


def _headers_bytes(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    ev = encode_varint_fast
    parts = [ev(len(headers))]
    for hk, hv in headers:
        kb = hk.encode("utf-8")
        parts.append(ev(len(kb)))
        parts.append(kb)
        if hv is None:
            parts.append(b"\x01")
        else:
            parts.append(ev(len(hv)))
            parts.append(hv)
    return b"".join(parts)


def encode_records(records: Sequence[tuple[int, int, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]],
                   base_offset: int, base_timestamp: int) -> tuple[bytes, int, int]:
    """The uncompressed records area of a v2 batch: ``b"".join(encode_record(...))`` for each record.
    Returns (area, last offset, max timestamp); offsets must increase from ``base_offset``. The compiled twin
    (``_speedups.encode_records``) takes records without headers; :func:`encode_records_py` the rest, and
    raises."""
    if _C is not None:
        out: tuple[bytes, int, int] | None = _C.encode_records(records, base_offset, base_timestamp)
        if out is not None:
            return out
    return encode_records_py(records, base_offset, base_timestamp)


def encode_records_py(records: Sequence[tuple[int, int, bytes | None, bytes | None,
                                              Sequence[tuple[str, bytes | None]]]],
                      base_offset: int, base_timestamp: int) -> tuple[bytes, int, int]:
    """:func:`encode_records` in Python (the reference and the fallback), built without per-record joins
    (table lookups for small varints, one header encoding per distinct header tuple)."""
    small = _SMALL_VARINTS
    limit = len(small) - 1  # small[v + 1] encodes v for -1 <= v < limit
    out: list[bytes] = []
    ext = out.extend
    header_cache: dict[object, bytes] = {}
    key_cache: dict[bytes, bytes] = {}  # key -> its length varint + the key (keys repeat within a batch)
    last = base_offset - 1
    max_ts = NO_TIMESTAMP
    for offset, ts, key, value, headers in records:
        if offset <= last:
            raise ValueError(f"offsets must increase: {offset} after {last}")
        last = offset
        if ts > max_ts:
            max_ts = ts
        d = ts - base_timestamp
        tsb = small[d + 1] if -1 <= d < limit else encode_varlong(d)
        d = offset - base_offset
        ob = small[d + 1] if -1 <= d < limit else encode_varint(d)
        if headers:
            try:
                hb = header_cache.get(headers)
                if hb is None:
                    hb = header_cache[headers] = _headers_bytes(headers)
            except TypeError:  # an unhashable (list) header sequence
                hb = _headers_bytes(headers)
        else:
            hb = b"\x00"
        if key is None:
            kp = b"\x01"
        else:
            cached = key_cache.get(key)
            if cached is None:
                n = len(key)
                cached = key_cache[key] = (small[n + 1] if n < limit else encode_varint(n)) + key
            kp = cached
        if value is None:
            vb = b"\x01"
            value = b""
        else:
            n = len(value)
            vb = small[n + 1] if n < limit else encode_varint(n)
        size = 1 + len(tsb) + len(ob) + len(kp) + len(vb) + len(value) + len(hb)
        ext((small[size + 1] if size < limit else encode_varint(size), b"\x00", tsb, ob, kp, vb, value, hb))
    return b"".join(out), last, max_ts


def build_batch(records: Iterable[tuple[int, int, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]],
                *, base_offset: int | None = None, codec: Codec | int = Codec.NONE,
                timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                log_append_time: int = NO_TIMESTAMP,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                base_sequence: int = NO_SEQUENCE, is_transactional: bool = False, is_control: bool = False,
                partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH, delete_horizon_ms: int | None = None,
                level: int | None = None, override_last_offset: int | None = None) -> bytes:
    """Build one v2 batch as ``MemoryRecordsBuilder`` does, from ``(offset, timestamp, key, value, headers)``.

    Offsets must increase; the base offset defaults to the first record's offset. The batch's
    baseTimestamp is the first record's timestamp (or the delete horizon), maxTimestamp the largest
    record timestamp for CreateTime and ``log_append_time`` for LogAppendTime.
    ``override_last_offset`` is ``MemoryRecordsBuilder.overrideLastOffset``: the log cleaner keeps a
    rewritten batch's original last offset (so its last sequence survives) when trailing records go.
    """
    recs = records if isinstance(records, list) else list(records)
    if not recs:
        raise ValueError("a v2 batch built from records needs at least one record (see build_empty_batch)")
    first_offset = recs[0][0]
    base = first_offset if base_offset is None else base_offset
    first_ts = recs[0][1]
    base_ts = delete_horizon_ms if delete_horizon_ms is not None else first_ts
    body, last_offset, max_ts = encode_records(recs, base, base_ts)
    if override_last_offset is not None:
        if override_last_offset < last_offset:
            raise ValueError(f"override_last_offset {override_last_offset} is below the last record's offset "
                             f"{last_offset}")
        last_offset = override_last_offset
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        max_ts = log_append_time
    if codec != Codec.NONE:
        body = compress(codec, body, magic=MAGIC_V2, level=level)
    attributes = int(codec) & COMPRESSION_CODEC_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
    return _assemble(base, partition_leader_epoch, attributes, last_offset - base, base_ts, max_ts,
                     producer_id, producer_epoch, base_sequence, len(recs), body)


def build_empty_batch(*, base_offset: int, last_offset_delta: int, max_timestamp: int, producer_id: int,
                      producer_epoch: int, base_sequence: int, is_transactional: bool,
                      partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                      timestamp_type: TimestampType = TimestampType.CREATE_TIME, is_control: bool = False) -> bytes:
    """``DefaultRecordBatch.writeEmptyHeader``: a 61-byte batch the cleaner keeps for producer state."""
    attributes = TIMESTAMP_TYPE_MASK if timestamp_type == TimestampType.LOG_APPEND_TIME else 0
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    return _assemble(base_offset, partition_leader_epoch, attributes, last_offset_delta, NO_TIMESTAMP,
                     max_timestamp, producer_id, producer_epoch, base_sequence, 0, b"")


def build_control_batch(*, offset: int, timestamp: int, control_type: ControlRecordType, value: bytes | None,
                        producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                        is_transactional: bool = False,
                        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """A control batch with one record, as ``MemoryRecords.withEndTransactionMarker`` and the KRaft
    ``withLeaderChangeMessage``/snapshot helpers build them (uncompressed, baseSequence -1)."""
    return build_batch([(offset, timestamp, control_key(control_type), value, ())], codec=Codec.NONE,
                       producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                       is_transactional=is_transactional, is_control=True,
                       partition_leader_epoch=partition_leader_epoch)


def build_end_txn_marker(*, offset: int, timestamp: int, producer_id: int, producer_epoch: int, commit: bool,
                         coordinator_epoch: int, partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """``MemoryRecords.withEndTransactionMarker``: a 78-byte transactional control batch."""
    return build_control_batch(offset=offset, timestamp=timestamp,
                               control_type=ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                               value=end_txn_marker_value(coordinator_epoch), producer_id=producer_id,
                               producer_epoch=producer_epoch, is_transactional=True,
                               partition_leader_epoch=partition_leader_epoch)


def _assemble(base_offset: int, ple: int, attributes: int, last_offset_delta: int, base_ts: int, max_ts: int,
              producer_id: int, producer_epoch: int, base_sequence: int, count: int, body: bytes) -> bytes:
    size = RECORD_BATCH_OVERHEAD + len(body)
    head = HEADER.pack(base_offset, size - LOG_OVERHEAD, ple, MAGIC_V2, 0, attributes, last_offset_delta, base_ts,
                       max_ts, producer_id, producer_epoch, base_sequence, count)
    tail = head[ATTRIBUTES_OFFSET:]
    # CRC-32C of attributes..end, computed over the two pieces (crc32c continues from a previous value).
    crc = _crc(body, _crc(tail))
    return b"".join((head[:CRC_OFFSET], _CRC_STRUCT.pack(crc), tail, body))


def with_codec(batch: DefaultRecordBatch, codec: Codec, *, limit: int | None = None,
               level: int | None = None) -> tuple[bytes, int]:
    """``batch`` re-encoded with ``codec``: every header field kept (base offset, last offset delta, base and
    max timestamp, timestamp type, producer id/epoch, base sequence, transactional/control/delete-horizon
    flags, partition leader epoch, record count), the same uncompressed records area compressed anew
    (or stored raw for ``Codec.NONE``), the CRC recomputed. Returns (batch bytes, uncompressed records size).
    """
    area = batch.records_bytes(limit=limit)
    body = area if codec == Codec.NONE else compress(codec, area, magic=MAGIC_V2, level=level)
    h = batch.h
    attributes = (h.attributes & ~COMPRESSION_CODEC_MASK) | (int(codec) & COMPRESSION_CODEC_MASK)
    return _assemble(h.base_offset, h.partition_leader_epoch, attributes, h.last_offset_delta, h.base_timestamp,
                     h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence, h.records_count,
                     body), len(area)


def stored_records(batch: DefaultRecordBatch, *, limit: int | None = None) -> list[Record]:
    """The batch's records with the timestamps as stored (``base timestamp + delta``), also in a LogAppendTime
    batch, whose readers report the batch's max timestamp instead: what rebuilding the batch must keep."""
    h = batch.h
    data = batch.records_bytes(limit=limit)
    try:
        return parse_records(data, 0, len(data), h.records_count, h.base_offset, h.base_timestamp, None,
                             h.base_sequence)
    except KafkaToolError as e:
        e.message += f" (in the batch at byte {batch.position})"
        e.position = batch.position
        raise


def set_partition_leader_epoch(batch: bytearray, epoch: int) -> None:
    """``setPartitionLeaderEpoch``: outside the CRC, so nothing else changes."""
    struct.pack_into(">i", batch, PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_last_offset(batch: bytearray, last_offset: int) -> None:
    """``setLastOffset``: baseOffset = last - lastOffsetDelta (baseOffset is outside the CRC)."""
    (delta,) = struct.unpack_from(">i", batch, LAST_OFFSET_DELTA_OFFSET)
    struct.pack_into(">q", batch, BASE_OFFSET_OFFSET, last_offset - delta)
