"""Fuzz every decompressor (gzip, snappy xerial and raw, Kafka lz4 frames for magic 0 and 1+, zstd)
with a small output limit: bombs must stop at the limit, bad framing must be a domain error."""

from __future__ import annotations

import sys

import _common  # noqa: F401
import atheris

with atheris.instrument_imports():
    from kafkatool.errors import KafkaToolError
    from kafkatool.record import codecs


def TestOneInput(data: bytes) -> None:
    if len(data) < 2:
        return
    codec = data[0] % 5
    magic = data[1] % 3
    try:
        out = codecs.decompress(codec, data[2:], limit=_common.LIMIT, magic=magic)
    except KafkaToolError:
        return
    if len(out) > _common.LIMIT:
        raise AssertionError(f"decompression produced {len(out)} bytes past the limit")


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
