"""lz4-java 1.8.0's fast compressor (``LZ4Factory.fastestInstance().fastCompressor()``), bit for bit.

Kafka's ``KafkaLZ4BlockOutputStream`` compresses each 64 KiB block with it at the default level. lz4-java's
JNI, Unsafe and Safe instances all produce the same bytes (checked), and they differ from the C library's
current ``LZ4_compress_default`` (python-lz4): lz4-java keeps the r1xx-era match finder. Kafka blocks are
at most 64 KiB, so only its ``compress64k`` path is needed: a 8192-entry table of 16-bit positions,
hash ``(int32_le * -1640531535) >>> 19``, skip strength 6, MF_LIMIT 12, LAST_LITERALS 5.

Pure Python, so slow (a few MB/s); used so that down-converted lz4 data equals Kafka's byte for byte.
"""

from __future__ import annotations

import struct

_MIN_LENGTH = 13  # MF_LIMIT + 1
_MF_LIMIT = 12
_LAST_LITERALS = 5
_SKIP_STRENGTH = 6
_LZ4_64K_LIMIT = (1 << 16) + (_MF_LIMIT - 1)
_I32LE = struct.Struct("<I")


def _write_len(out: bytearray, n: int) -> None:
    while n >= 0xFF:
        out.append(0xFF)
        n -= 0xFF
    out.append(n)


def compress_block(src: bytes) -> bytes:
    """One raw LZ4 block of ``src`` (at most 64 KiB + 10 bytes), as lz4-java writes it."""
    n = len(src)
    if n >= _LZ4_64K_LIMIT:
        raise ValueError("lz4-java's 64k path only: Kafka blocks are at most 64 KiB")
    out = bytearray()
    anchor = 0
    if n >= _MIN_LENGTH:
        ints = [_I32LE.unpack_from(src, i)[0] for i in range(n - 3)]  # readInt, little-endian (x86 native)
        table = [0] * 8192
        src_limit = n - _LAST_LITERALS
        mflimit = n - _MF_LIMIT
        s = 1
        done = False
        while not done:
            forward = s
            step = 1
            search = 1 << _SKIP_STRENGTH
            while True:
                s = forward
                forward += step
                step = search >> _SKIP_STRENGTH
                search += 1
                if forward > mflimit:
                    done = True
                    break
                h = ((ints[s] * 2654435761) & 0xFFFFFFFF) >> 19
                ref = table[h]
                table[h] = s & 0xFFFF
                if ints[ref] == ints[s]:
                    break
            if done:
                break
            while ref > 0 and s > anchor and src[ref - 1] == src[s - 1]:  # commonBytesBackward
                ref -= 1
                s -= 1
            run = s - anchor
            token = len(out)
            out.append(0)
            if run >= 15:
                out[token] = 0xF0
                _write_len(out, run - 15)
            else:
                out[token] = run << 4
            out += src[anchor:s]
            while True:
                out += struct.pack("<H", (s - ref) & 0xFFFF)
                s += 4
                ref += 4
                m = 0
                while s + m < src_limit and src[ref + m] == src[s + m]:  # commonBytes
                    m += 1
                s += m
                if m >= 15:
                    out[token] |= 15
                    _write_len(out, m - 15)
                else:
                    out[token] |= m
                if s > mflimit:
                    anchor = s
                    done = True
                    break
                table[((ints[s - 2] * 2654435761) & 0xFFFFFFFF) >> 19] = (s - 2) & 0xFFFF
                h = ((ints[s] * 2654435761) & 0xFFFFFFFF) >> 19
                ref = table[h]
                table[h] = s & 0xFFFF
                if ints[s] != ints[ref]:
                    anchor = s
                    s += 1
                    break
                token = len(out)
                out.append(0)
    run = n - anchor  # lastLiterals
    if run >= 15:
        out.append(0xF0)
        _write_len(out, run - 15)
    else:
        out.append(run << 4)
    out += src[anchor:]
    return bytes(out)
