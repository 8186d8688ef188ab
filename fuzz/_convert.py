"""What fuzz_upconvert and fuzz_downconvert share: one fuzzed segment converted, and the contract checked.

A conversion of arbitrary bytes either refuses them with a finding (a ``KafkaToolError`` of exit code 1 that is not
an "internal error", and nothing left in DST) or writes a partition that ``dump --deep --verify`` finds clean (no
error, no warning) and that holds the input's records, record for record (offset, timestamp where the target
format keeps one, key, value, headers for v2), less what the conversion drops by its rules (control batches
below v2) and what ``skip_corrupt`` left out (then the output's records are the input's in order, with gaps).

Input: byte 0 is the flags (bit 0: reseal every v2 CRC-32C and v0/v1 CRC-32 so mutations reach the record
parsers; bit 3: skip_corrupt; the others are the target's own), the rest the segment. The work dirs live in
/dev/shm when there is one (each input writes and fsyncs a partition).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import zlib
from collections.abc import Callable
from typing import Any

import _common  # noqa: F401

from kafkatool.convert.engine import ConvertOptions, convert_log
from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import DumpOptions, Finding, Severity
from kafkatool.errors import CorruptRecordError, ExitCode, KafkaToolError
from kafkatool.record import default_records as v2
from kafkatool.record.file_records import LogInputStream

SEG = "00000000000000000000.log"
Rec = tuple[Any, ...]


def workdir(name: str) -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix=f"kafkatool-fuzz-{name}-", dir=base)


def reseal(data: bytes) -> bytes:
    """Every entry's CRC recomputed over its bytes as they are (v2: CRC-32C; v0/v1: CRC-32 of the message)."""
    out = bytearray(data)
    pos = 0
    while pos + 17 <= len(out):
        size = struct.unpack_from(">i", out, pos + 8)[0] + 12
        if size < 26 or pos + size > len(out):
            break
        magic = out[pos + 16]
        if magic == 2 and size >= 61:
            struct.pack_into(">I", out, pos + 17, v2.crc32c(bytes(out[pos + 21:pos + size])))
        elif magic in (0, 1):
            struct.pack_into(">I", out, pos + 12, zlib.crc32(bytes(out[pos + 16:pos + size])))
        pos += size
    return bytes(out)


def read_records(data: bytes, keep: Callable[[Any], bool], project: Callable[[Any], Rec], *,
                 tolerant: bool = False) -> list[Rec]:
    """The records kafkatool's reader (Kafka's rules) gives for ``data``: those of the batches ``keep`` keeps, each
    as ``project`` makes it. The walk ends where Kafka's does (a size field below 14 ends it too). ``tolerant``:
    a batch whose records do not decode is passed over (it was left out)."""
    out: list[Rec] = []
    it = iter(LogInputStream(data))
    while True:
        try:
            batch = next(it)
        except (StopIteration, CorruptRecordError):
            return out
        if keep(batch):
            try:
                out += [project(r) for r in batch.records(limit=_common.LIMIT)]
            except KafkaToolError:
                if not tolerant:
                    raise


def subsequence(small: list[Rec], big: list[Rec]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def run(name: str, data: bytes, opts: ConvertOptions, keep: Callable[[Any], bool],
        project: Callable[[Any], Rec]) -> str:
    """Convert ``data`` (one segment) with ``opts`` and check the contract; ``keep``: the input batches whose
    records the output must hold, ``project``: what of a record the target format keeps. Returns the finding
    the conversion refused with, or "" when it wrote a partition; raises AssertionError when the contract
    fails (the fuzzer's crash)."""
    root = workdir(name)
    try:
        part = os.path.join(root, "src", "topic-0")
        os.makedirs(part)
        with open(os.path.join(part, SEG), "wb") as f:
            f.write(data)
        dst = os.path.join(root, "dst")
        try:
            convert_log(part, dst, opts)
        except KafkaToolError as e:
            if e.exit_code != ExitCode.FINDINGS or "internal error" in str(e):
                raise AssertionError(f"not a finding (exit {int(e.exit_code)}): {e}") from e
            if os.path.exists(dst):
                raise AssertionError(f"refused ({e}) but left {os.listdir(dst)}") from e
            return str(e)
        out = os.path.join(dst, "topic-0")
        bad = [f for f in DumpEngine(DumpOptions(deep=True, verify=True, emit_data=False,
                                                 decompress_limit=_common.LIMIT * 4)).run([out])
               if isinstance(f, Finding) and f.severity != Severity.INFO]
        if bad:
            raise AssertionError(f"the output is not clean: {[(f.kind, f.message) for f in bad]}")
        written = b"".join(open(os.path.join(out, n), "rb").read() for n in sorted(os.listdir(out))
                           if n.endswith(".log"))
        got = read_records(written, lambda b: True, project)
        want = read_records(data, keep, project, tolerant=opts.skip_corrupt)
        if opts.skip_corrupt:
            if not subsequence(got, want):
                raise AssertionError(f"records that are not the input's:\n{got}\n{want}")
        elif got != want:
            raise AssertionError(f"records differ:\n{got}\n{want}")
        return ""
    finally:
        shutil.rmtree(root, ignore_errors=True)
