"""Fuzz ``upconvert`` of one segment (issue 23): refuse with a finding, or write a v2 partition that dump --deep
--verify finds clean and that holds the input's records (offset, timestamp, key, value, headers), record for
record. See _convert.py for the input's layout; flag bits 1-2 pick the codec (keep, none, gzip, zstd), bit 4
groups uncompressed legacy messages (--batch-bytes 16KiB, else 0), bit 5 a small max.message.bytes (splits)."""

from __future__ import annotations

import sys

import _common  # noqa: F401
import atheris

with atheris.instrument_imports():
    import _convert

    from kafkatool.convert.engine import ConvertOptions
    from kafkatool.record.codecs import Codec

CODECS = (None, Codec.NONE, Codec.GZIP, Codec.ZSTD)


def TestOneInput(data: bytes) -> None:
    convert(data)


def convert(data: bytes) -> str | None:
    """The finding the conversion refused with, "" when it wrote a clean partition, None for an empty input."""
    if not data:
        return None
    flags, body = data[0], data[1:]
    if flags & 1:
        body = _convert.reseal(body)
    opts = ConvertOptions(to_magic=2, codec=CODECS[(flags >> 1) & 3], skip_corrupt=bool(flags & 8),
                          batch_bytes=16384 if flags & 16 else 0, max_message_bytes=400 if flags & 32 else 1 << 20,
                          decompress_limit=_common.LIMIT)
    return _convert.run("up", body, opts, lambda b: True,
                        lambda r: (r.offset, r.timestamp, r.key, r.value, tuple(r.headers)))


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
