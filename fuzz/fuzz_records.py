"""Fuzz the segment walker and every batch/record parser (v0, v1, v2, all codecs).

Arbitrary bytes are walked as a .log segment; each batch is CRC-checked and fully decoded. Anything
other than a kafkatool domain error (KafkaToolError) is a bug. Half the inputs get their v2 CRC
re-sealed so mutations reach the record parser instead of stopping at the checksum.
"""

from __future__ import annotations

import struct
import sys

import _common  # noqa: F401
import atheris

with atheris.instrument_imports():
    from kafkatool.errors import KafkaToolError
    from kafkatool.record import default_records as v2
    from kafkatool.record.file_records import LogInputStream


def reseal(data: bytes) -> bytes:
    out = bytearray(data)
    pos = 0
    while pos + 61 <= len(out):
        size = struct.unpack_from(">i", out, pos + 8)[0] + 12
        if size < 61 or pos + size > len(out):
            break
        if out[pos + 16] == 2:
            struct.pack_into(">I", out, pos + 17, v2.crc32c(bytes(out[pos + 21:pos + size])))
        pos += size
    return bytes(out)


def TestOneInput(data: bytes) -> None:
    if data and data[0] & 1:
        data = reseal(data[1:])
    stream = LogInputStream(data)
    try:
        for batch in stream:
            batch.is_valid()
            batch.records(limit=_common.LIMIT)
            _ = (batch.base_offset, batch.last_offset, batch.timestamp_type, batch.max_timestamp)
    except KafkaToolError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
