"""Fuzz the dump engine end to end (classification, walk, CRC, deep decode, resync after corruption,
index verification) over arbitrary .log/.index/.timeindex bytes in a partition dir."""

from __future__ import annotations

import os
import sys
import tempfile

import _common  # noqa: F401
import atheris

with atheris.instrument_imports():
    from kafkatool.dump.engine import DumpEngine
    from kafkatool.dump.events import DumpOptions
    from kafkatool.errors import KafkaToolError

TMP = tempfile.mkdtemp(prefix="kafkatool-fuzz-dump-")
PART = os.path.join(TMP, "topic-0")
os.makedirs(PART, exist_ok=True)
NAMES = ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex")


def TestOneInput(data: bytes) -> None:
    if len(data) < 3:
        return
    flags = data[0]
    cut1 = data[1] * 4
    cut2 = cut1 + data[2] * 2
    body = data[3:]
    parts = (body[:len(body) - cut2] if cut2 < len(body) else body, body[-cut2:-cut1] if cut1 < cut2 else b"",
             body[-cut1:] if cut1 else b"")
    for name, part in zip(NAMES, parts, strict=True):
        with open(os.path.join(PART, name), "wb") as f:
            f.write(part)
    opts = DumpOptions(deep=bool(flags & 1), verify=bool(flags & 2), verify_index=bool(flags & 4),
                       strict=bool(flags & 8), decompress_limit=_common.LIMIT, resync_limit=1 << 16,
                       kafka_compat=bool(flags & 16))
    try:
        for _ in DumpEngine(opts).run([PART]):
            pass
    except KafkaToolError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
