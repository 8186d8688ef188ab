"""Kafka's zig-zag varints (``ByteUtils.readVarint/readVarlong``), with Kafka's length limits.

An int varint may take at most 5 bytes and a long varint 10; longer encodings are
``IllegalArgumentException`` in Kafka, surfaced to readers as ``InvalidRecordException``.
"""

from __future__ import annotations

from kafkatool.errors import InvalidRecordError, TruncatedError

Buffer = bytes | bytearray | memoryview


# Zig-zag decoded values of every varint of one or two bytes, by the 14 payload bits (byte 0's low 7
# bits, then byte 1's): the record decoders index this list instead of doing the arithmetic (~15%
# of a record's decoding time).
ZIGZAG_14 = [(u >> 1) ^ -(u & 1) for u in range(1 << 14)]


def zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def zigzag_encode32(v: int) -> int:
    return ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF


def zigzag_encode64(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF


def read_varint(buf: Buffer, pos: int, end: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode one zig-zag varint at ``pos``; returns (value, next position)."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise TruncatedError("varint runs past the end of the record", position=start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if pos - start >= max_bytes:
            kind = "int" if max_bytes == 5 else "long"
            raise InvalidRecordError(f"varint longer than {max_bytes} bytes (Kafka's {kind} varint limit)",
                                     position=start)
    if max_bytes == 5:
        result &= 0xFFFFFFFF
    else:
        result &= 0xFFFFFFFFFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos


def read_varlong(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    return read_varint(buf, pos, end, 10)


def encode_varint(v: int) -> bytes:
    """Zig-zag encode an int32 (Kafka ``ByteUtils.writeVarint``)."""
    return _encode_unsigned(zigzag_encode32(v))


def encode_varlong(v: int) -> bytes:
    return _encode_unsigned(zigzag_encode64(v))


def _encode_unsigned(u: int) -> bytes:
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def size_of_varint(v: int) -> int:
    u = zigzag_encode32(v)
    n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


def size_of_varlong(v: int) -> int:
    u = zigzag_encode64(v)
    n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


# Precomputed encodings of small values: most lengths and deltas in real batches are below 2**13.
_SMALL = [encode_varint(i) for i in range(-1, 1 << 13)]


def encode_varint_fast(v: int) -> bytes:
    if -1 <= v < (1 << 13) - 1:
        return _SMALL[v + 1]
    return encode_varint(v)
