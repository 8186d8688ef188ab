"""Message formats v0 and v1 (``LegacyRecord``, ``AbstractLegacyRecordBatch``). Spec §1.

Log entry: ``[offset int64][size int32]`` (``batch.LOG_HEADER``) then the message: the header
(``MESSAGE_HEADER_V0``/``V1`` below, one field a line), the key, ``valueLength int32`` (-1: null) and the value.

A compressed message set is one *wrapper* message (null key) whose value is the compressed bytes of
an inner message set; the wrapper offset is the last inner offset; v1 inner offsets are relative
(0..n-1), v0 inner offsets absolute. A v1 wrapper that says LogAppendTime overrides inner timestamps.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from kafkatool._accel import speedups as _C
from kafkatool.errors import CorruptRecordError, InvalidRecordError, KafkaToolError
from kafkatool.record.batch import (
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Record,
    RecordSource,
    TimestampType,
)
from kafkatool.record.codecs import Codec, compress, crc32, decompress
from kafkatool.util import budget as _budget

Buffer = bytes | bytearray | memoryview

# The message header (LegacyRecord.java), v0 and v1: offsets below count from the message's first byte, after the
# log overhead, as Kafka's LegacyRecord does.
MESSAGE_HEADER_V0 = struct.Struct(
    ">I"  # crc          uint32  CRC-32 (zlib) of magic .. end of the value
    "b"   # magic        int8    0
    "b"   # attributes   int8    bits 0-2 codec
    "i"   # keyLength    int32   -1: null
)
MESSAGE_HEADER_V1 = struct.Struct(
    ">I"  # crc          uint32  CRC-32 (zlib) of magic .. end of the value
    "b"   # magic        int8    1
    "b"   # attributes   int8    bits 0-2 codec, bit 3 LogAppendTime
    "q"   # timestamp    int64   -1: none
    "i"   # keyLength    int32   -1: null
)
CRC_OFFSET = 0
MAGIC_OFFSET = struct.calcsize(">I")
ATTRIBUTES_OFFSET = struct.calcsize(">Ib")
TIMESTAMP_OFFSET = struct.calcsize(">Ibb")  # v1
KEY_SIZE_OFFSET_V0 = struct.calcsize(">Ibb")
KEY_SIZE_OFFSET_V1 = struct.calcsize(">Ibbq")
HEADER_SIZE_V0 = KEY_SIZE_OFFSET_V0  # crc, magic, attributes
HEADER_SIZE_V1 = KEY_SIZE_OFFSET_V1  # crc, magic, attributes, timestamp
VALUE_SIZE_LENGTH = struct.calcsize(">i")
RECORD_OVERHEAD_V0 = MESSAGE_HEADER_V0.size + VALUE_SIZE_LENGTH  # 14: the smallest message (null key and value)
RECORD_OVERHEAD_V1 = MESSAGE_HEADER_V1.size + VALUE_SIZE_LENGTH  # 22

# The same fields counted from the start of the log entry (what a walk over a file reads); the magic is at
# batch.MAGIC_OFFSET, as in every format.
ENTRY_CRC_OFFSET = LOG_OVERHEAD + CRC_OFFSET
ENTRY_ATTRIBUTES_OFFSET = LOG_OVERHEAD + ATTRIBUTES_OFFSET
ENTRY_TIMESTAMP_OFFSET = LOG_OVERHEAD + TIMESTAMP_OFFSET

# What LegacyRecordBatch reads first: offset, size, crc, magic, attributes (the log header, then the message
# header without its key length).
ENTRY_HEADER = struct.Struct(LOG_HEADER.format + MESSAGE_HEADER_V0.format[1:-1])
TIMESTAMP = struct.Struct(">q")
I32 = struct.Struct(">i")
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08


class InnerCut(NamedTuple):
    """The end of a compressed wrapper's inner message set that is not a whole message (Kafka drops it)."""

    position: int  # in the decompressed inner set
    length: int  # bytes from there to its end
    offset: int | None  # the cut message's offset field, when its 8 bytes are there
    size: int | None  # its size field, when there


def record_overhead(magic: int) -> int:
    return RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1


class LegacyRecordBatch:
    """One v0/v1 log entry viewed in place: a plain message, or a compressed wrapper.

    Kafka treats the entry as both a batch and (uncompressed) a record. ``position`` is the entry's
    position in its file, ``buf[start:]`` its bytes.
    """

    __slots__ = ("buf", "start", "position", "offset", "length", "crc", "magic", "attributes", "timestamp",
                 "inner_cut")

    def __init__(self, buf: Buffer, start: int, position: int) -> None:
        self.buf = buf
        self.start = start
        self.position = position
        # Set by records() on a compressed wrapper whose inner message set ends inside a message (Kafka's reader
        # drops that message silently): where, in the decompressed set, and what is known of the cut message.
        self.inner_cut: InnerCut | None = None
        self.offset, self.length, self.crc, self.magic, self.attributes = ENTRY_HEADER.unpack_from(buf, start)
        if (self.magic != MAGIC_V0 and self.length >= HEADER_SIZE_V1
                and len(buf) - start >= LOG_OVERHEAD + HEADER_SIZE_V1):
            self.timestamp = TIMESTAMP.unpack_from(buf, start + ENTRY_TIMESTAMP_OFFSET)[0]
        else:
            self.timestamp = NO_TIMESTAMP

    @classmethod
    def at(cls, buf: Buffer, start: int = 0, position: int | None = None) -> LegacyRecordBatch:
        return cls(buf, start, start if position is None else position)

    # ------------------------------------------------------------------ batch view
    @property
    def size(self) -> int:
        return int(self.length) + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return int(self.offset)

    @property
    def base_offset(self) -> int:
        """``AbstractLegacyRecordBatch.baseOffset``: the first inner offset (decompresses a wrapper)."""
        if not self.attributes & COMPRESSION_CODEC_MASK:
            return int(self.offset)
        return next(iter(self.record_chunks()))[0].offset

    @property
    def codec_id(self) -> int:
        return int(self.attributes) & COMPRESSION_CODEC_MASK

    @property
    def codec(self) -> Codec:
        return Codec.from_id(self.attributes & COMPRESSION_CODEC_MASK)

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & COMPRESSION_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return int(self.timestamp)

    count = None
    records_count = None
    producer_id = NO_PRODUCER_ID
    producer_epoch = NO_PRODUCER_EPOCH
    base_sequence = NO_SEQUENCE
    last_sequence = NO_SEQUENCE
    partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
    is_transactional = False
    is_control = False
    has_delete_horizon = False
    delete_horizon_ms = None

    def raw(self) -> memoryview:
        return memoryview(self.buf)[self.start:self.start + self.size]

    def message(self) -> memoryview:
        """The message without the log overhead (what the CRC and sizes refer to)."""
        return memoryview(self.buf)[self.start + LOG_OVERHEAD:self.start + self.size]

    # ------------------------------------------------------------------ validation
    def compute_crc(self) -> int:
        s = self.start + LOG_OVERHEAD
        return crc32(memoryview(self.buf)[s + MAGIC_OFFSET:s + self.length])

    def is_valid(self) -> bool:
        """``LegacyRecord.isValid``: size >= 14 (even for v1) and the stored CRC-32 matches."""
        if self.length < RECORD_OVERHEAD_V0 or self.start + self.size > len(self.buf):
            return False
        return bool(self.crc == self.compute_crc())

    def ensure_valid(self) -> None:
        if self.length < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"Record is corrupt (crc could not be retrieved as the record is too small, "
                                     f"size = {self.length})", position=self.position)
        if self.start + self.size > len(self.buf):
            raise CorruptRecordError(f"Record of {self.size} bytes runs past the end of the data",
                                     position=self.position)
        computed = self.compute_crc()
        if self.crc != computed:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {self.crc}, computed crc = {computed})",
                                     position=self.position)

    # ------------------------------------------------------------------ records
    def key_value(self) -> tuple[bytes | None, bytes | None]:
        """The message's own key and value (for a wrapper: null key, compressed value)."""
        try:
            return _key_value(self.buf, self.start + LOG_OVERHEAD, self.length, self.magic)
        except KafkaToolError as e:
            raise (e.at(base=self.position + LOG_OVERHEAD) if e.position is not None
                   else e.at(base=self.position)) from None

    def records(self, *, limit: int | None = None) -> list[Record]:
        """As Kafka's ``AbstractLegacyRecordBatch.iterator()``: the entry itself, or the inner messages."""
        key, value = self.key_value()
        if not self.attributes & COMPRESSION_CODEC_MASK:
            ts = int(self.timestamp) if self.magic != MAGIC_V0 else NO_TIMESTAMP
            return [Record(int(self.offset), ts, key, value, (), NO_SEQUENCE, self.size, int(self.crc),
                           self.is_valid())]
        data, count, base = self._inner(value, limit)
        return self._deep_records(data, base, 0, count)[0]

    def record_chunks(self, *, limit: int | None = None, size: int | None = None) -> Iterator[list[Record]]:
        """:meth:`records` a chunk of at most ``size`` inner messages at a time (default: the memory budget's
        ``record_chunk``): one list for an entry or a wrapper that fits a chunk, else the whole wrapper is
        checked first (a damaged inner message raises before any chunk is handed out)."""
        key, value = self.key_value()
        if not self.attributes & COMPRESSION_CODEC_MASK:
            yield self.records()
            return
        n = _budget.record_chunk() if size is None else size
        data, count, base = self._inner(value, limit)
        if count <= n:
            yield self._deep_records(data, base, 0, count)[0]
            return
        yield from self._source(data, count, base).chunks(n)

    def record_source(self, *, limit: int | None = None) -> RecordSource:
        """The entry's records (a wrapper's inner messages) to read a chunk at a time, after checking them all
        (errors as :meth:`records` raises them); as few as fit a chunk are decoded at once (``held``).
        Positions are those of the inner entries in the decompressed value."""
        key, value = self.key_value()
        if not self.attributes & COMPRESSION_CODEC_MASK:
            return RecordSource.of(self.records())
        data, count, base = self._inner(value, limit)
        if count <= _budget.record_chunk():
            return RecordSource.of(self._deep_records(data, base, 0, count)[0])
        return self._source(data, count, base)

    def _source(self, data: bytes, count: int, base: int) -> RecordSource:
        p, left, n = 0, count, _budget.record_chunk()
        while left > 0:  # every inner message decoded and dropped: the exact error where there is one
            got, p = self._deep_records(data, base, p, min(n, left))
            left -= len(got)
        return RecordSource(count, 0, lambda position, k: self._deep_records(data, base, position, k))

    def _inner(self, value: bytes | None, limit: int | None) -> tuple[bytes, int, int]:
        """A wrapper's decompressed inner message set, how many whole inner entries it holds and the base their
        offsets are relative to (v1), with ``AbstractLegacyRecordBatch.DeepRecordsIterator``'s checks of the
        wrapper and of the entries' framing."""
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
        unpack_log = LOG_HEADER.unpack_from
        p, end = 0, len(data)
        self.inner_cut = None
        count = 0
        last_inner = 0
        while end - p >= LOG_OVERHEAD:
            offset, size = unpack_log(data, p)
            if size < RECORD_OVERHEAD_V0:
                raise CorruptRecordError(
                    f"Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0}) "
                    f"(inner message at decompressed byte {p} of the wrapper)", position=pos)
            if end - p - LOG_OVERHEAD < size:
                break  # a truncated tail inside the decompressed data is silently dropped, as Kafka does
            count += 1
            last_inner = offset
            p += LOG_OVERHEAD + size
        if p < end:
            # DataLogInputStream.nextBatch: an EOFException inside the next entry ends the set without an error.
            cut_offset = cut_size = None
            if end - p >= LOG_OVERHEAD:
                cut_offset, cut_size = unpack_log(data, p)
            elif end - p >= LOG_HEADER.size - I32.size:
                cut_offset = TIMESTAMP.unpack_from(data, p)[0]
            self.inner_cut = InnerCut(p, end - p, cut_offset, cut_size)
        if not count:
            raise InvalidRecordError("Found invalid compressed record set with no inner records", position=pos)
        if wrapper_magic == MAGIC_V1:
            wrapper_offset = int(self.offset)
            if wrapper_offset == 0:
                base = 0  # produce data from some librdkafka versions
            else:
                if wrapper_offset < last_inner:
                    raise InvalidRecordError(
                        "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                        f"'{wrapper_offset}' is less than the last inner message offset '{last_inner}' and it is "
                        "not zero.", position=pos)
                base = wrapper_offset - last_inner
        else:
            base = 0
        return data, count, base

    def _deep_records(self, data: bytes, base: int, at: int, count: int) -> tuple[list[Record], int]:
        """The ``count`` inner messages from byte ``at`` of the decompressed set (``_inner``), as records, and the
        position after them: the compiled walk (``_speedups.legacy_deep_records``) where it is built, which stops
        before any message it would not decode as :meth:`_deep_records_py` does; that one is left to the Python
        walk, which decodes it or raises its exact error."""
        if _C is None:
            return self._deep_records_py(data, base, at, count)
        magic = self.magic
        wrapper_lat = magic == MAGIC_V1 and bool(self.attributes & TIMESTAMP_TYPE_MASK)
        out: list[Record] = []
        while len(out) < count:
            got = _C.legacy_deep_records(data, at, count - len(out), base, magic == MAGIC_V1, int(self.timestamp),
                                         wrapper_lat)
            if got is None:
                break
            out += got[0]
            at = got[1]
            if len(out) < count:
                one, at = self._deep_records_py(data, base, at, 1)
                out += one
        if len(out) < count:
            rest, at = self._deep_records_py(data, base, at, count - len(out))
            out += rest
        return out, at

    def _deep_records_py(self, data: bytes, base: int, at: int, count: int) -> tuple[list[Record], int]:
        """:meth:`_deep_records` in Python: the reference and the fallback."""
        wrapper_magic = self.magic
        pos = self.position
        out: list[Record] = []
        append = out.append
        new = tuple.__new__
        unpack_log = LOG_HEADER.unpack_from
        wrapper_ts = int(self.timestamp)
        wrapper_lat = wrapper_magic == MAGIC_V1 and bool(self.attributes & TIMESTAMP_TYPE_MASK)
        add_base = wrapper_magic == MAGIC_V1
        mv = memoryview(data)
        unpack_v1 = MESSAGE_HEADER_V1.unpack_from
        unpack_v0 = MESSAGE_HEADER_V0.unpack_from
        unpack_i32 = I32.unpack_from
        head_v1, head_v0 = MESSAGE_HEADER_V1.size, MESSAGE_HEADER_V0.size
        for _ in range(count):
            offset, size = unpack_log(data, at)
            start = at + LOG_OVERHEAD
            at = start + size
            # The message header in one unpack: crc, magic, attributes (+ timestamp for v1), key length.
            msg_end = start + size
            magic = data[start + MAGIC_OFFSET]
            if magic == MAGIC_V1 and size >= head_v1:
                stored_crc, _, attributes, ts, n = unpack_v1(data, start)
                p = start + head_v1
            elif magic == MAGIC_V0 and size >= head_v0:
                stored_crc, _, attributes, n = unpack_v0(data, start)
                ts = NO_TIMESTAMP
                p = start + head_v0
            else:
                attributes = data[start + ATTRIBUTES_OFFSET]
                n = -2  # the general path below decides
                stored_crc = ts = 0
                p = start
            if attributes & COMPRESSION_CODEC_MASK:
                raise InvalidRecordError("Inner messages must not be compressed", position=pos)
            key: bytes | None
            val: bytes | None
            if n >= 0 and p + n + 4 <= msg_end:
                key = data[p:p + n]
                p += n
            elif n == -1 and p + 4 <= msg_end:
                key = None
            else:
                key = val = None
                p = -1
            if p >= 0:
                n = unpack_i32(data, p)[0]
                p += 4
                if n >= 0 and p + n <= msg_end:
                    val = data[p:p + n]
                elif n == -1:
                    val = None
                else:
                    p = -1
            if p < 0:  # anything unusual: the general decoder raises (or decodes) it exactly
                try:
                    key, val = _key_value(data, start, size, magic)
                except KafkaToolError as e:
                    e.message += f" (inner message at decompressed byte {start - LOG_OVERHEAD} of the wrapper)"
                    e.position = pos
                    raise
                stored_crc = _CRC.unpack_from(data, start + CRC_OFFSET)[0]
                if magic == MAGIC_V0:
                    ts = NO_TIMESTAMP
                else:
                    ts = TIMESTAMP.unpack_from(data, start + TIMESTAMP_OFFSET)[0]
            if wrapper_lat and magic != MAGIC_V0:
                ts = wrapper_ts
            crc_ok = stored_crc == crc32(mv[start + MAGIC_OFFSET:msg_end])
            append(new(Record, (base + offset if add_base else offset, ts, key, val, (), NO_SEQUENCE,
                                size + LOG_OVERHEAD, stored_crc, crc_ok)))
        return out, at

    def __repr__(self) -> str:
        return (f"LegacyRecordBatch(position={self.position}, offset={self.offset}, magic={self.magic}, "
                f"codec={self.codec_id}, size={self.size})")


def _key_value(buf: Buffer, start: int, length: int, magic: int) -> tuple[bytes | None, bytes | None]:
    """Key and value of the message at ``buf[start:start+length]`` (``LegacyRecord.key/value``)."""
    end = start + length
    if end > len(buf):
        raise CorruptRecordError("message runs past the end of the data", position=start)
    p = start + (KEY_SIZE_OFFSET_V0 if magic == MAGIC_V0 else KEY_SIZE_OFFSET_V1)
    if p + 4 > end:
        raise CorruptRecordError(f"message of {length} bytes is too small for a magic v{magic} header",
                                 position=start)
    (n,) = I32.unpack_from(buf, p)
    p += 4
    key: bytes | None
    if n >= 0:
        if p + n + 4 > end:
            raise InvalidRecordError(f"key length {n} runs past the end of the message", position=start)
        key = bytes(buf[p:p + n])
        p += n
    else:
        key = None  # LegacyRecord.key(): Utils.sizeDelimited returns null for any negative size
    if p + 4 > end:
        raise InvalidRecordError("value length runs past the end of the message", position=start)
    (n,) = I32.unpack_from(buf, p)
    p += 4
    value: bytes | None
    if n >= 0:
        if p + n > end:
            raise InvalidRecordError(f"value length {n} runs past the end of the message", position=start)
        value = bytes(buf[p:p + n])
    else:
        value = None
    return key, value


# ---------------------------------------------------------------------------------------------- writing

def compute_attributes(magic: int, codec: Codec | int, timestamp_type: TimestampType) -> int:
    attributes = int(codec) & COMPRESSION_CODEC_MASK
    if magic > MAGIC_V0 and timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    return attributes


def _from_magic(layout: struct.Struct) -> struct.Struct:
    """A message header from its magic on, without the crc: what the CRC covers, packed before it is known."""
    return struct.Struct(">" + layout.format.removeprefix(">I"))


# The writers pack the CRC-covered head (magic .. keyLength), compute the CRC, then pack the entry prefix.
ENTRY_PREFIX = struct.Struct(LOG_HEADER.format + "I")  # offset, size, then the message's crc uint32
HEAD_V0 = _from_magic(MESSAGE_HEADER_V0)  # magic, attributes, keyLength
HEAD_V1 = _from_magic(MESSAGE_HEADER_V1)  # magic, attributes, timestamp, keyLength
_V0_HEAD = struct.Struct(">BBi")  # HEAD_V0 with magic and attributes unsigned (encode_message takes 0..255)
_V1_HEAD = struct.Struct(">BBqi")  # HEAD_V1 likewise
_NULL_LENGTH = b"\xff\xff\xff\xff"
_CRC = struct.Struct(">I")


def encode_message(magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    """``LegacyRecord.write``: the message (crc .. value), without the log overhead."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"Invalid magic value {magic}")
    if timestamp < 0 and timestamp != NO_TIMESTAMP:
        raise ValueError(f"Invalid message timestamp {timestamp}")
    body = _message_body(magic, attributes & 0xFF, timestamp, key, value)
    return _CRC.pack(crc32(body)) + body


def _message_body(magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    """magic .. value: what the message CRC covers."""
    if magic == MAGIC_V0:
        head = _V0_HEAD.pack(magic, attributes, -1 if key is None else len(key))
    else:
        head = _V1_HEAD.pack(magic, attributes, timestamp, -1 if key is None else len(key))
    return b"".join((head, key or b"", _NULL_LENGTH if value is None else I32.pack(len(value)), value or b""))


def encode_entry(offset: int, message: bytes) -> bytes:
    return LOG_HEADER.pack(offset, len(message)) + message


# (offset, timestamp, key, value), or a v2-style record tuple whose fields after the value are ignored
LegacyRecordTuple = tuple[int, int, bytes | None, bytes | None] | tuple[int, int, bytes | None, bytes | None, object]
_BODY_V0 = struct.Struct(HEAD_V0.format[:-1])  # magic, attributes (the key length is packed with the key)
_BODY_V1 = struct.Struct(HEAD_V1.format[:-1])  # magic, attributes, timestamp
_NULL = b"\xff\xff\xff\xff"


def encode_entries(records: Sequence[LegacyRecordTuple], *, magic: int,
                   attributes: int, timestamp: int | None = None, offset_shift: int = 0) -> tuple[bytes, int]:
    """Log entries of uncompressed messages: ``encode_entry(offset - offset_shift, encode_message(magic,
    attributes, ts, key, value))`` for each record. ``timestamp`` replaces every record's timestamp
    (LogAppendTime; v0 always -1). Records are ``(offset, timestamp, key, value)``, or v2-style tuples with
    headers after them (ignored). Returns (bytes, max timestamp). The compiled twin
    (``_speedups.encode_entries``) where it is built; :func:`encode_entries_py` where it declines, and raises."""
    if _C is not None:
        out: tuple[bytes, int] | None = _C.encode_entries(records, magic, attributes, timestamp, offset_shift)
        if out is not None:
            return out
    return encode_entries_py(records, magic=magic, attributes=attributes, timestamp=timestamp,
                             offset_shift=offset_shift)


def encode_entries_py(records: Sequence[LegacyRecordTuple], *, magic: int,
                      attributes: int, timestamp: int | None = None, offset_shift: int = 0) -> tuple[bytes, int]:
    """:func:`encode_entries` in Python (the reference and the fallback), without per-record joins."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"Invalid magic value {magic}")
    out: list[bytes] = []
    app = out.append
    pack_prefix = ENTRY_PREFIX.pack
    i32 = I32.pack
    max_ts = NO_TIMESTAMP
    head_v0 = _BODY_V0.pack(magic, attributes & 0xFF) if magic == MAGIC_V0 else b""
    pack_v1 = _BODY_V1.pack
    for r in records:
        offset, ts, key, value = r[0], r[1], r[2], r[3]
        if magic == MAGIC_V0:
            head = head_v0
        else:
            if timestamp is not None:
                ts = timestamp
            if ts < 0 and ts != NO_TIMESTAMP:
                raise ValueError(f"Invalid message timestamp {ts}")
            if ts > max_ts:
                max_ts = ts
            head = pack_v1(magic, attributes & 0xFF, ts)
        body = b"%b%b%b%b%b" % (head, _NULL if key is None else i32(len(key)), key or b"",
                                _NULL if value is None else i32(len(value)), value or b"")
        app(pack_prefix(offset - offset_shift, len(body) + _CRC.size, crc32(body)))
        app(body)
    return b"".join(out), max_ts


def build_entries(records: Iterable[LegacyRecordTuple], *, magic: int,
                  codec: Codec | int = Codec.NONE, timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                  log_append_time: int = NO_TIMESTAMP, level: int | None = None,
                  base_offset: int | None = None) -> bytes:
    """Write legacy records as ``MemoryRecordsBuilder`` does for magic 0/1.

    Uncompressed: one entry per record. Compressed: one wrapper whose offset is the last record's,
    holding absolute (v0) or relative-to-``base_offset`` (v1) inner offsets; the v1 wrapper timestamp is
    the max record timestamp (CreateTime) or the log append time (LogAppendTime).
    ``records`` are ``(offset, timestamp, key, value)``; v0 ignores timestamps.

    The hot path of down-conversion: one ``struct`` pack for the message header, one join, one CRC-32
    per record (``encode_message`` gives the same bytes one message at a time).
    """
    recs = list(records)
    if not recs:
        return b""
    if codec == Codec.ZSTD:
        raise ValueError(f"ZStandard compression is not supported for magic {magic}")
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"Invalid magic value {magic}")
    if magic == MAGIC_V0:
        timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
    lat = timestamp_type == TimestampType.LOG_APPEND_TIME
    inner_attrs = compute_attributes(magic, Codec.NONE, timestamp_type) & 0xFF
    base = recs[0][0] if base_offset is None else base_offset
    shift = base if (magic > MAGIC_V0 and codec != Codec.NONE) else 0
    body, max_ts = encode_entries(recs, magic=magic, attributes=inner_attrs,
                                  timestamp=log_append_time if lat else None, offset_shift=shift)
    if codec == Codec.NONE:
        return body
    compressed = compress(codec, body, magic=magic, level=level)
    wrapper_ts = log_append_time if lat else max_ts
    wrapper = encode_message(magic, compute_attributes(magic, codec, timestamp_type),
                             wrapper_ts if magic > MAGIC_V0 else NO_TIMESTAMP, None, compressed)
    return encode_entry(recs[-1][0], wrapper)


def wrapper_records_for(batch_records: Sequence[Record]) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in batch_records]
