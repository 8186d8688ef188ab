"""Compression codecs exactly as Kafka frames them (spec §3), with bounded decompression.

* gzip: RFC 1952 members (Kafka: ``GZIPOutputStream``); concatenated members are read, as
  ``GZIPInputStream`` does.
* snappy: xerial ``snappy-java`` stream framing (16-byte header, big-endian chunk lengths, 32 KiB
  chunks) on write; on read either that framing or one raw snappy block, because librdkafka writes
  raw snappy and the broker keeps producer bytes as-is.
* lz4: Kafka's LZ4 frame (``Lz4BlockOutputStream``): FLG 0x60, BD 0x40 (64 KiB blocks, independent),
  no checksums. For magic 0 the header checksum byte reproduces the pre-0.10 bug (KAFKA-3160: it
  hashes the 4 magic bytes too, giving 0x1a) and is not verified on read; for magic >= 1 it must be
  0x82 for the default descriptor. Linked-block frames are rejected, as Kafka rejects them.
* zstd: a standard zstd frame; only magic 2.

Decompression never produces more than ``limit`` bytes: exceeding it raises
:class:`LimitExceededError` (a decompression bomb is a finding, not an out-of-memory).
gzip and lz4 (default level) output is byte-identical to Kafka's (JDK zlib with GZIPOutputStream's
header; lz4-java's fast compressor, whose blocks equal cramjam's LZ4 block compressor). snappy
(cramjam, not snappy-java's C++ snappy) and zstd bytes differ from Kafka's Java libraries; they are
frame-compatible and Kafka reads them.
"""

from __future__ import annotations

import enum
import functools
import importlib
import struct
import zlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

try:
    # zlib-ng for reading: the same formats and zlib's API, ~1.5x faster inflate and a vectorised CRC-32
    # (10-20x zlib's), which v0/v1 messages are checked with. Compression stays on the system zlib, which
    # the JDK shares: that keeps our gzip bytes equal to Kafka's (_gzip).
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - a declared dependency; stdlib zlib gives the same results, slower
    import zlib as _zlib  # type: ignore[no-redef]

from kafkatool.errors import CorruptRecordError, LimitExceededError, UnsupportedCodecError
from kafkatool.util import budget as _budget


class _LazyModule:
    """A codec library imported at its first use: a run that meets no compressed batch (``kafkatool dump`` of an
    uncompressed segment, the version) loads none of them."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


class _LazyFunction:
    """A codec library's function, looked up (and its library imported) at the first call."""

    __slots__ = ("_get", "_fn")

    def __init__(self, get: Callable[[], Callable[..., Any]]) -> None:
        self._get = get
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kw: Any) -> Any:
        fn = self._fn
        if fn is None:
            fn = self._fn = self._get()
        return fn(*args, **kw)


if TYPE_CHECKING:
    import cramjam
    import lz4.block
    import zstandard
else:
    cramjam = _LazyModule("cramjam")
    lz4 = SimpleNamespace(block=_LazyModule("lz4.block"))
    zstandard = _LazyModule("zstandard")

Buffer = bytes | bytearray | memoryview

# Kept for callers of the old constant; the limit used when none is given is the active memory budget's
# (``kafkatool.util.budget.decompress_limit()``: the run's memory budget divided top-down).
DEFAULT_DECOMPRESS_LIMIT = 64 * 1024 * 1024


class Codec(enum.IntEnum):
    """Codec ids as stored in attribute bits 0-2 (``CompressionType``)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """Kafka's ``CompressionType.name``: none, gzip, snappy, lz4, zstd."""
        return _LABELS[self]

    @classmethod
    def from_label(cls, name: str) -> Codec:
        try:
            return _BY_LABEL[name.strip().lower()]
        except KeyError:
            raise UnsupportedCodecError(f"unknown codec {name!r} (none, gzip, snappy, lz4, zstd)") from None

    @classmethod
    def from_id(cls, codec_id: int) -> Codec:
        try:
            return cls(codec_id)
        except ValueError:
            raise UnsupportedCodecError(f"unknown compression codec id {codec_id}") from None


_LABELS = {Codec.NONE: "none", Codec.GZIP: "gzip", Codec.SNAPPY: "snappy", Codec.LZ4: "lz4", Codec.ZSTD: "zstd"}
_BY_LABEL = {v: k for k, v in _LABELS.items()}

CODEC_LABELS = tuple(_LABELS.values())


def decompress(codec: Codec | int, data: Buffer, *, limit: int | None = None, magic: int = 2) -> bytes:
    """Decompress a v0/v1 wrapper value or a v2 records area; at most ``limit`` bytes of output (None: the
    active memory budget's decompression limit)."""
    if codec == Codec.NONE:
        return bytes(data)
    if limit is None:
        limit = _budget.decompress_limit()
    if codec == Codec.GZIP:
        return _gunzip(data, limit)
    if codec == Codec.SNAPPY:
        return _snappy_decompress(data, limit)
    if codec == Codec.LZ4:
        return _lz4_decompress(data, limit, magic)
    if codec == Codec.ZSTD:
        return _zstd_decompress(data, limit)
    raise UnsupportedCodecError(f"unknown compression codec id {int(codec)}")


_ZLIB_ERROR: type[Exception] = getattr(_zlib, "error")  # noqa: B009 - zlib_ng's stub mistypes it

# CRC-32 (IEEE, zlib's): the checksum of v0/v1 messages. ``crc32(data[, start_value])``.
crc32: Callable[..., int] = _zlib.crc32


def compress(codec: Codec | int, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress as Kafka frames it. ``level`` None means Kafka's default for the codec."""
    if codec == Codec.NONE:
        return bytes(data)
    if codec == Codec.GZIP:
        return _gzip(data, -1 if level is None else level)
    if codec == Codec.SNAPPY:
        return snappy_xerial_compress(data)
    if codec == Codec.LZ4:
        return lz4_kafka_compress(data, magic=magic, level=9 if level is None else level)
    if codec == Codec.ZSTD:
        if magic < 2:
            raise UnsupportedCodecError(f"ZStandard compression is not supported for magic {magic}")
        return _zstd_compressor(3 if level is None else level).compress(data)
    raise UnsupportedCodecError(f"unknown compression codec id {int(codec)}")


class StreamCompressor:
    """:func:`compress` fed a piece at a time, for a batch built from records read a chunk at a time: ``feed``
    returns the compressed bytes made so far, ``finish`` the rest. gzip, snappy, lz4 and none give exactly the
    bytes :func:`compress` gives for the whole input (deflate's output does not depend on how its input is cut;
    snappy and lz4 frames are made of independent fixed-size blocks); zstd gives a valid frame that may differ
    (the one-shot compressor picks its parameters from the input's size)."""

    def __init__(self, codec: Codec | int, *, magic: int = 2, level: int | None = None) -> None:
        self.codec = Codec.from_id(int(codec))
        self.magic = magic
        self.level = level
        self._pending = bytearray()  # snappy/lz4: input of the block being filled
        self._started = False
        self._crc = 0
        self._size = 0
        self._deflate: Any = None
        self._zstd: Any = None
        if self.codec == Codec.GZIP:
            self._deflate = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, -zlib.MAX_WBITS)
        elif self.codec == Codec.ZSTD:
            if magic < 2:
                raise UnsupportedCodecError(f"ZStandard compression is not supported for magic {magic}")
            self._zstd = _zstd_compressor(3 if level is None else level).compressobj()
        elif self.codec == Codec.LZ4 and (9 if level is None else level) != 9:
            raise UnsupportedCodecError("lz4 streams are built at Kafka's default level only")

    def feed(self, data: Buffer) -> bytes:
        codec = self.codec
        if codec == Codec.NONE:
            return bytes(data)
        if codec == Codec.GZIP:
            head = b"" if self._started else _GZIP_HEADER
            self._started = True
            self._crc = crc32(data, self._crc)
            self._size += len(data)
            return head + bytes(self._deflate.compress(data))
        if codec == Codec.ZSTD:
            return bytes(self._zstd.compress(data))
        block = XERIAL_BLOCK if codec == Codec.SNAPPY else LZ4_BLOCK
        self._pending += data
        out = []
        if not self._started:
            self._started = True
            out.append(XERIAL_HEADER if codec == Codec.SNAPPY else (_LZ4_HEAD_V0 if self.magic == 0 else _LZ4_HEAD))
        if len(self._pending) >= block:
            mv = memoryview(self._pending)
            n = len(mv) // block * block
            out += [self._block(mv[i:i + block]) for i in range(0, n, block)]
            mv.release()
            del self._pending[:n]
        return b"".join(out)

    def _block(self, block: Buffer) -> bytes:
        if self.codec == Codec.SNAPPY:
            packed = bytes(snappy_block(block))
            return _I32.pack(len(packed)) + packed
        packed = bytes(lz4_fast_block(block))
        if len(packed) >= len(block):
            return _LE32.pack(len(block) | 0x80000000) + bytes(block)
        return _LE32.pack(len(packed)) + packed

    def finish(self) -> bytes:
        codec = self.codec
        if codec == Codec.NONE:
            return b""
        if codec == Codec.GZIP:
            head = b"" if self._started else _GZIP_HEADER
            return b"".join((head, bytes(self._deflate.flush()),
                             struct.pack("<II", self._crc & 0xFFFFFFFF, self._size & 0xFFFFFFFF)))
        if codec == Codec.ZSTD:
            return bytes(self._zstd.flush())
        out = [self.feed(b"")]  # the frame header, if nothing was fed
        if self._pending:
            out.append(self._block(bytes(self._pending)))
            self._pending.clear()
        if codec == Codec.LZ4:
            out.append(b"\x00\x00\x00\x00")
        return b"".join(out)


def _too_big(limit: int) -> LimitExceededError:
    return LimitExceededError(
        f"decompressed data exceeds the limit of {limit} bytes (decompression bomb, or a larger memory budget)")


# ---------------------------------------------------------------------------------------------- gzip

def _gzip(data: Buffer, level: int) -> bytes:
    # Java's GZIPOutputStream writes a fixed 10-byte header (mtime 0, XFL 0, OS 0xff "unknown") before raw
    # deflate; zlib's own gzip wrapper would say OS 3. JDK and CPython share the system zlib, so with the same
    # level the deflate bytes, and so the whole member, are Kafka's (checked against kafka-ref).
    c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = c.compress(data) + c.flush()
    # The trailer's CRC-32 by zlib-ng (the same value as zlib's, 4x faster).
    return _GZIP_HEADER + body + struct.pack("<II", crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)


_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _gunzip(data: Buffer, limit: int) -> bytes:
    out: list[bytes] = []
    produced = 0
    rest: Buffer = data
    first = True
    while True:
        if not first and (len(rest) < 2 or bytes(rest[:2]) != b"\x1f\x8b"):
            break  # GZIPInputStream ignores trailing bytes that are not another member
        d = _zlib.decompressobj(31)
        try:
            chunk = d.decompress(rest, limit - produced + 1)
        except _ZLIB_ERROR as e:
            raise CorruptRecordError(f"gzip data is corrupt: {e}") from None
        produced += len(chunk)
        if produced > limit:
            raise _too_big(limit)
        out.append(chunk)
        if not d.eof:
            if d.unconsumed_tail:
                raise _too_big(limit)
            raise CorruptRecordError("gzip stream ends early (Unexpected end of ZLIB input stream)")
        rest = d.unused_data
        first = False
        if not rest:
            break
    return b"".join(out)


# ---------------------------------------------------------------------------------------------- snappy

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK = 32 * 1024
_XERIAL_MAGIC_HEAD = struct.unpack(">i", XERIAL_MAGIC[:4])[0]
_I32 = struct.Struct(">i")


# The raw block compressors the framings below call (and the compiled down-conversion run frames itself), and the
# block decompressors of the readers below: cramjam's functions, looked up at their first call.
snappy_block: Callable[..., Any] = _LazyFunction(lambda: cramjam.snappy.compress_raw)
# lz4-java 1.8.0's fast compressor (Kafka's default level): cramjam's block compressor gives the same bytes
# (tests/vectors/lz4_java); python-lz4 1.10's default mode picks other matches.
lz4_fast_block: Callable[..., Any] = _LazyFunction(
    lambda: functools.partial(cramjam.lz4.compress_block, store_size=False))
snappy_block_len: Callable[..., int] = _LazyFunction(lambda: cramjam.snappy.decompress_raw_len)
snappy_unblock: Callable[..., Any] = _LazyFunction(lambda: cramjam.snappy.decompress_raw)


def snappy_xerial_compress(data: Buffer) -> bytes:
    """snappy-java ``SnappyOutputStream``: header then [int32 BE length][raw block] per 32 KiB of input."""
    if 0 < len(data) <= XERIAL_BLOCK:  # one chunk: the loop's bytes without its slicing
        one = snappy_block(data)
        return b"".join((XERIAL_HEADER, _I32.pack(len(one)), one))
    mv = memoryview(data)
    parts = [XERIAL_HEADER]
    for i in range(0, len(mv), XERIAL_BLOCK):
        block = bytes(snappy_block(mv[i:i + XERIAL_BLOCK]))
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def snappy_raw_compress(data: Buffer) -> bytes:
    """One raw snappy block, as librdkafka writes it (readable by Kafka through snappy-java's fallback)."""
    return bytes(cramjam.snappy.compress_raw(data))


def _snappy_raw_block(block: Buffer, limit: int, produced: int) -> bytes:
    try:
        n = snappy_block_len(block)
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CorruptRecordError(f"snappy block is corrupt: {e}") from None
    if produced + n > limit:
        raise _too_big(limit)
    try:
        return bytes(snappy_unblock(block))
    except Exception as e:
        raise CorruptRecordError(f"snappy block is corrupt: {e}") from None


def _snappy_decompress(data: Buffer, limit: int) -> bytes:
    mv = memoryview(data)
    if len(mv) < 16 or bytes(mv[:8]) != XERIAL_MAGIC:
        # snappy-java falls back to one raw block when the xerial magic is absent.
        return _snappy_raw_block(mv, limit, 0)
    out: list[bytes] = []
    produced = 0
    pos = 16
    end = len(mv)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError(f"snappy stream ends inside a chunk length at stream byte {pos}")
        (n,) = _I32.unpack_from(mv, pos)
        if n == _XERIAL_MAGIC_HEAD and bytes(mv[pos:pos + 8]) == XERIAL_MAGIC:
            pos += 16  # concatenated xerial streams: a new header
            continue
        pos += 4
        if n < 0:
            raise CorruptRecordError(f"snappy stream has an invalid chunk size {n}")
        if pos + n > end:
            raise CorruptRecordError(f"snappy chunk of {n} bytes runs past the end of the stream")
        chunk = _snappy_raw_block(mv[pos:pos + n], limit, produced)
        produced += len(chunk)
        out.append(chunk)
        pos += n
    return b"".join(out)


# ---------------------------------------------------------------------------------------------- lz4

LZ4_MAGIC = 0x184D2204
LZ4_FLG = 0x60  # version 01, block independence, no checksums, no content size
LZ4_BD = 0x40  # block maximum size id 4 = 64 KiB
LZ4_BLOCK = 64 * 1024
_LZ4_HC_GOOD = 0x82  # (xxh32(b"\x60\x40") >> 8) & 0xff
_LZ4_HC_V0 = 0x1A  # (xxh32(magic + b"\x60\x40") >> 8) & 0xff: KAFKA-3160's broken checksum
_LE32 = struct.Struct("<I")
_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_LZ4_HEAD = struct.pack("<I", LZ4_MAGIC) + bytes((LZ4_FLG, LZ4_BD, _LZ4_HC_GOOD))
_LZ4_HEAD_V0 = struct.pack("<I", LZ4_MAGIC) + bytes((LZ4_FLG, LZ4_BD, _LZ4_HC_V0))



def lz4_kafka_compress(data: Buffer, *, magic: int = 2, level: int = 9) -> bytes:
    """Kafka's ``Lz4BlockOutputStream``: a block is stored raw when compression does not shrink it.

    Level 9 (Kafka's default) uses lz4-java's fast compressor; other levels the HC compressor.
    """
    if level == 9 and len(data) <= LZ4_BLOCK:
        # One block (every batch of up to 64 KiB): the same bytes as the loop below, without its slicing.
        one = lz4_fast_block(data)
        n, size = len(one), len(data)
        head = _LZ4_HEAD_V0 if magic == 0 else _LZ4_HEAD
        if not size:
            return head + b"\x00\x00\x00\x00"
        if n >= size:
            return b"".join((head, _LE32.pack(size | 0x80000000), data, b"\x00\x00\x00\x00"))
        return b"".join((head, _LE32.pack(n), one, b"\x00\x00\x00\x00"))
    mv = memoryview(data)
    hc = _LZ4_HC_V0 if magic == 0 else _LZ4_HC_GOOD
    parts = [struct.pack("<I", LZ4_MAGIC), bytes((LZ4_FLG, LZ4_BD, hc))]
    kw = {"compression": level}
    for i in range(0, len(mv), LZ4_BLOCK):
        block = mv[i:i + LZ4_BLOCK]
        if level == 9:
            packed = bytes(lz4_fast_block(block))
        else:
            packed = lz4.block.compress(block, mode="high_compression", store_size=False, **kw)
        if len(packed) >= len(block):
            parts.append(_LE32.pack(len(block) | 0x80000000))
            parts.append(bytes(block))
        else:
            parts.append(_LE32.pack(len(packed)))
            parts.append(packed)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


_LE32_PAIR = struct.Struct("<IH")
# One block of Kafka's lz4 frame (at most LZ4_BLOCK bytes out): the fast path below, and the compiled
# down-conversion run's.
lz4_unblock: Callable[..., bytes] = _LazyFunction(
    lambda: functools.partial(lz4.block.decompress, uncompressed_size=LZ4_BLOCK))


def _lz4_decompress(data: Buffer, limit: int, magic: int) -> bytes:
    mv = memoryview(data)
    end = len(mv)
    # Fast path: the frame Kafka writes (FLG 0x60, BD 0x40: independent 64 KiB blocks, no checksums),
    # header checksum 0x82 (magic 0 frames carry KAFKA-3160's wrong one, which Kafka does not check).
    if end >= 11 and _LE32_PAIR.unpack_from(mv, 0) == (LZ4_MAGIC, 0x4060) and (magic == 0 or mv[6] == _LZ4_HC_GOOD):
        # One compressed block then the end mark (a frame of up to 64 KiB, every batch Kafka writes at
        # default sizes): _lz4_blocks' result and errors without its loop.
        (size,) = _LE32.unpack_from(mv, 7)
        if 0 < size <= LZ4_BLOCK and end - 11 - size >= 4 and not _LE32.unpack_from(mv, 11 + size)[0] & 0x7FFFFFFF:
            try:
                only = lz4_unblock(mv[11:11 + size])
            except Exception as e:
                raise CorruptRecordError(f"lz4 block is corrupt: {e}") from None
            if len(only) > limit:
                raise _too_big(limit)
            return only
        return _lz4_blocks(mv, 7, LZ4_BLOCK, False, limit)
    if end < 6:
        raise CorruptRecordError("lz4 frame ends early (Stream ended prematurely)")
    if _LE32.unpack_from(mv, 0)[0] != LZ4_MAGIC:
        raise CorruptRecordError("lz4 stream unsupported (invalid magic bytes)")
    flg, bd = mv[4], mv[5]
    if flg & 0x03 or (flg >> 6) != 1:
        raise CorruptRecordError(f"lz4 frame descriptor unsupported (FLG 0x{flg:02x}: version or reserved bits)")
    if not flg & 0x20:
        raise CorruptRecordError("lz4 dependent block stream is unsupported (linked blocks; Kafka needs "
                                 "independent blocks)")
    if flg & 0x01:
        raise CorruptRecordError("lz4 preset dictionary is unsupported")
    block_id = (bd >> 4) & 0x07
    if bd & 0x8F or block_id not in _BLOCK_SIZES:
        raise CorruptRecordError(f"lz4 block descriptor unsupported (BD 0x{bd:02x})")
    max_block = _BLOCK_SIZES[block_id]
    block_checksum = bool(flg & 0x10)
    content_size = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    pos = 6 + (8 if content_size else 0)
    if pos >= end:
        raise CorruptRecordError("lz4 frame ends early (Stream ended prematurely)")
    if magic != 0:  # magic 0: Kafka skips the (historically wrong) header checksum
        expected = _descriptor_checksum(bytes(mv[4:pos]))
        if mv[pos] != expected:
            raise CorruptRecordError("lz4 stream frame descriptor corrupted (header checksum "
                                     f"0x{mv[pos]:02x}, expected 0x{expected:02x})")
    del content_checksum  # Kafka 3.9 does not verify the content checksum after the end mark
    return _lz4_blocks(mv, pos + 1, max_block, block_checksum, limit)


def _lz4_blocks(mv: memoryview, pos: int, max_block: int, block_checksum: bool, limit: int) -> bytes:
    """The data blocks of an LZ4 frame from ``pos`` up to the end mark."""
    end = len(mv)
    out: list[bytes] = []
    produced = 0
    unpack = _LE32.unpack_from
    while True:
        if end - pos < 4:
            raise CorruptRecordError("lz4 frame ends early (Stream ended prematurely)")
        (size,) = unpack(mv, pos)
        pos += 4
        stored = size & 0x80000000
        size &= 0x7FFFFFFF
        if size == 0:
            break  # end mark
        if size > max_block:
            raise CorruptRecordError(f"lz4 block size {size} exceeded max: {max_block}")
        if end - pos < size:
            raise CorruptRecordError("lz4 frame ends early (Stream ended prematurely)")
        block = mv[pos:pos + size]
        pos += size
        if block_checksum:
            if end - pos < 4:
                raise CorruptRecordError("lz4 frame ends early (Stream ended prematurely)")
            if unpack(mv, pos)[0] != xxh32(bytes(block)):
                raise CorruptRecordError("lz4 block checksum mismatch")
            pos += 4
        if stored:
            chunk = bytes(block)
        else:
            try:
                chunk = lz4.block.decompress(block, uncompressed_size=max_block)
            except Exception as e:
                raise CorruptRecordError(f"lz4 block is corrupt: {e}") from None
        produced += len(chunk)
        if produced > limit:
            raise _too_big(limit)
        out.append(chunk)
    return out[0] if len(out) == 1 else b"".join(out)


@functools.lru_cache(maxsize=64)
def _descriptor_checksum(descriptor: bytes) -> int:
    """Header checksum of an LZ4 frame descriptor: a handful of distinct descriptors exist, each hashed once."""
    return (xxh32(descriptor) >> 8) & 0xFF


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, for LZ4 frame header (and rare block) checksums; pure Python, inputs are tiny."""
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i <= n - 16:
            a, b, c, d = struct.unpack_from("<4I", data, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i <= n - 4:
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# ---------------------------------------------------------------------------------------------- zstd

_ZSTD_C: dict[int, zstandard.ZstdCompressor] = {}


@functools.cache
def _zstd_d() -> zstandard.ZstdDecompressor:
    return zstandard.ZstdDecompressor()


def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    c = _ZSTD_C.get(level)
    if c is None:
        # zstd-jni's stream writes neither the content size nor a checksum.
        c = zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=False)
        _ZSTD_C[level] = c
    return c


# Output buffers stay below glibc's mmap threshold where they can: a fresh 256 KiB+ allocation is a
# mmap, page faults and a munmap per batch, measured at 4x the decompression itself for 16 KiB batches.
_ZSTD_GUESS = 96 * 1024


def _zstd_decompress(data: Buffer, limit: int) -> bytes:
    # Kafka's frames carry no content size; read in bounded steps so a bomb stops at ``limit``.
    # Concatenated frames are read through, as zstd-jni's ZstdInputStream does.
    if _zstd_check_frames(memoryview(data)):
        # One frame without a content size (what zstd-jni's stream writes): one call into a buffer of
        # a bounded guess, shrunk to fit; output beyond the guess falls back to the stream below.
        try:
            return bytes(_zstd_d().decompress(data, max_output_size=min(limit, max(_ZSTD_GUESS, 8 * len(data))),
                                            allow_extra_data=False))
        except zstandard.ZstdError:
            pass
    out: list[bytes] = []
    produced = 0
    step = min(limit + 1, max(_ZSTD_GUESS, 8 * len(data)))
    try:
        with _zstd_d().stream_reader(data, read_across_frames=True) as reader:
            while True:
                chunk = reader.read(min(step, limit + 1 - produced))
                if not chunk:
                    break
                produced += len(chunk)
                if produced > limit:
                    raise _too_big(limit)
                out.append(chunk)
    except zstandard.ZstdError as e:
        raise CorruptRecordError(f"zstd data is corrupt: {e}") from None
    if len(out) == 1:
        return out[0]
    return b"".join(out)


_ZSTD_MAGIC = 0xFD2FB528
_FCS_SIZES = (0, 2, 4, 8)
_DICT_SIZES = (0, 1, 2, 4)


def _zstd_check_frames(mv: memoryview) -> bool:
    """Walk zstd frame and block headers: the stream reader silently stops at a truncated frame,
    zstd-jni throws; this makes a torn frame a finding before any output is produced.

    Returns whether the data is exactly one frame that declares no content size (the one-call path
    is safe for it: a declared size could ask for any allocation)."""
    pos, end = 0, len(mv)
    frames = 0
    simple = True
    if end == 0:
        raise CorruptRecordError("zstd data is empty")
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError(f"zstd stream ends inside a frame magic at stream byte {pos}")
        (magic,) = _LE32.unpack_from(mv, pos)
        frames += 1
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            simple = False
            if end - pos < 8:
                raise CorruptRecordError("zstd skippable frame is truncated")
            pos += 8 + _LE32.unpack_from(mv, pos + 4)[0]
            if pos > end:
                raise CorruptRecordError("zstd skippable frame is truncated")
            continue
        if magic != _ZSTD_MAGIC:
            raise CorruptRecordError(f"zstd data is corrupt: unknown frame magic 0x{magic:08x} at stream byte {pos}")
        pos += 4
        if pos >= end:
            raise CorruptRecordError("zstd frame header is truncated")
        fhd = mv[pos]
        single = bool(fhd & 0x20)
        fcs = _FCS_SIZES[fhd >> 6]
        if fcs == 0 and single:
            fcs = 1
        if fcs:
            simple = False
        checksum = bool(fhd & 0x04)
        pos += 1 + (0 if single else 1) + _DICT_SIZES[fhd & 0x03] + fcs
        while True:
            if end - pos < 3:
                raise CorruptRecordError("zstd frame is truncated (stream ends inside a block header)")
            header = mv[pos] | (mv[pos + 1] << 8) | (mv[pos + 2] << 16)
            pos += 3
            block_type = (header >> 1) & 0x03
            size = header >> 3
            if block_type == 3:
                raise CorruptRecordError("zstd data is corrupt: reserved block type")
            pos += 1 if block_type == 1 else size
            if pos > end:
                raise CorruptRecordError("zstd frame is truncated (stream ends inside a block)")
            if header & 1:
                break
        if checksum:
            pos += 4
            if pos > end:
                raise CorruptRecordError("zstd frame is truncated (missing content checksum)")
    return simple and frames == 1
