"""Fuzz ``downconvert`` of one segment (issue 23): refuse with a finding, or write a v0/v1 partition that dump
--deep --verify finds clean and that holds the input's records (offset, key, value, and the timestamp for v1),
record for record, less the control batches down-conversion drops. See _convert.py for the input's layout; flag
bit 4 picks magic 0 (else 1), bits 1-2 the codec (keep, none, gzip, lz4), bit 5 a small max.message.bytes
(splits), bit 6 --zstd-to lz4 (else zstd is refused, as Kafka refuses it)."""

from __future__ import annotations

import sys

import _common  # noqa: F401
import atheris

with atheris.instrument_imports():
    import _convert

    from kafkatool.convert.engine import ConvertOptions
    from kafkatool.record.codecs import Codec

CODECS = (None, Codec.NONE, Codec.GZIP, Codec.LZ4)


def TestOneInput(data: bytes) -> None:
    convert(data)


def convert(data: bytes) -> str | None:
    """The finding the conversion refused with, "" when it wrote a clean partition, None for an empty input."""
    if not data:
        return None
    flags, body = data[0], data[1:]
    if flags & 1:
        body = _convert.reseal(body)
    to_magic = 0 if flags & 16 else 1
    opts = ConvertOptions(to_magic=to_magic, codec=CODECS[(flags >> 1) & 3], skip_corrupt=bool(flags & 8),
                          zstd_to=Codec.LZ4 if flags & 64 else None, max_message_bytes=400 if flags & 32 else 1 << 20,
                          decompress_limit=_common.LIMIT)
    if to_magic:
        project = lambda r: (r.offset, r.timestamp, r.key, r.value)  # noqa: E731
    else:
        project = lambda r: (r.offset, r.key, r.value)  # noqa: E731
    return _convert.run("down", body, opts, lambda b: not b.is_control, project)


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
