"""Batches with one thing wrong and a valid CRC (or with a CRC that covers the damage), as bytes: what a reader
must refuse, or report, although the broker's shallow checks pass. The hostile sweep's cases of issue 23 item 5-7
(``tests/support/hostile_corpus.py``) are built the same way; these are for the focused tests."""

from __future__ import annotations

import struct

from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.codecs import Codec

# The building blocks are the hostile corpus's (a v2 batch, its CRC resealed after an edit, a compressed v0/v1
# wrapper), named here as the focused tests call them.
from tests.support.hostile_corpus import TS as TS
from tests.support.hostile_corpus import batch as batch
from tests.support.hostile_corpus import legacy_wrapper as wrapper
from tests.support.hostile_corpus import reseal as reseal

INT64_MAX = (1 << 63) - 1


def inner_entries(magic: int, n: int = 5, first: int = 0) -> bytearray:
    """``n`` uncompressed messages, offsets ``first``.. (v1 wrappers hold them relative: give 0)."""
    return bytearray(legacy.build_entries([(first + i, TS + i, b"k", b"value-%d" % i) for i in range(n)],
                                          magic=magic))


def entry_size(entries: bytes | bytearray) -> int:
    return 12 + int(struct.unpack_from(">i", entries, 8)[0])


def inner_crc_flip(magic: int, codec: Codec = Codec.GZIP, flip: int = 2, n: int = 5, base: int = 0) -> bytes:
    """A wrapper of ``n`` messages (offsets ``base``..) whose message ``flip`` has one bit flipped in its value:
    its own CRC fails, the wrapper's CRC (over the compressed bytes) is valid."""
    inner = inner_entries(magic, n, 0 if magic else base)
    size = entry_size(inner)
    inner[(flip + 1) * size - 2] ^= 0x01
    return wrapper(magic, codec, bytes(inner), base + n - 1)


def decreasing_inner(codec: Codec = Codec.SNAPPY) -> bytes:
    """A v1 wrapper whose inner offsets run 4, 3, 2, 1, 0 (wrapper offset 4)."""
    inner = inner_entries(1, 5)
    size = entry_size(inner)
    for k in range(5):
        struct.pack_into(">q", inner, k * size, 4 - k)
    return wrapper(1, codec, bytes(inner), 4)


def inner_cut(magic: int = 1, n: int = 3, cut: int = 5) -> bytes:
    """A wrapper of ``n`` messages whose last one is cut ``cut`` bytes short (wrapper offset n-1)."""
    inner = inner_entries(magic, n)
    return wrapper(magic, Codec.GZIP, bytes(inner[:-cut]), n - 1)


def offset_max() -> bytes:
    """One v2 batch of one record at offset 2^63-1."""
    data = bytearray(batch(0, n=1))
    struct.pack_into(">q", data, 0, INT64_MAX)
    return bytes(data)


def negative_delta(base: int = 10, delta: int = -7) -> bytes:
    """One v2 batch of one record at ``base`` whose lastOffsetDelta says ``delta`` (CRC resealed)."""
    data = bytearray(batch(base, n=1))
    struct.pack_into(">i", data, 23, delta)
    return bytes(reseal(data))


def bad_control(value: bytes | None = b"\x00", key: bytes | None = None, offset: int = 3) -> bytes:
    """A transactional control batch (valid CRC) whose COMMIT record's value is not a marker (one byte)."""
    return v2.build_batch([(offset, TS, v2.control_key(1) if key is None else key, value, [])], producer_id=7,
                          producer_epoch=0, is_transactional=True, is_control=True)


def v2_bad_record(offset: int = 0) -> bytes:
    """A v2 batch of 3 records whose first record's length varint is one too large (CRC resealed): the records
    do not decode, the batch passes ``ensureValid``."""
    data = bytearray(batch(offset))
    data[61] += 2  # zigzag: +1
    return bytes(reseal(data))
