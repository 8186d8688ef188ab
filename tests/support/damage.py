"""Damaged copies of segments for the parity tests of ``spark-scan`` against ``dump --deep --verify``: the hostile
corpus's ``.log`` files, and seeded random damage (bit flips, overwritten bytes, zeroed runs, truncation, inserted
garbage, rewritten size fields) of real segments, each laid out as a partition dir of its own."""

from __future__ import annotations

import os
import random
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

HOSTILE = ROOT / "tests" / "hostile"
KINDS = ("flip", "flips", "zeros", "truncate", "garbage", "size", "magic")


def hostile_logs() -> list[Path]:
    """Every ``.log`` of the hostile corpus (files and dirs)."""
    return sorted(HOSTILE.rglob("*.log"))


def damage(data: bytes, rng: random.Random, kind: str) -> bytes:
    out = bytearray(data)
    n = len(out)
    if kind == "flip":
        out[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "flips":
        for _ in range(rng.randint(2, 20)):
            out[rng.randrange(n)] = rng.randrange(256)
    elif kind == "zeros":
        a = rng.randrange(n)
        b = min(n, a + rng.randint(1, 5000))
        out[a:b] = bytes(b - a)
    elif kind == "truncate":
        del out[rng.randrange(1, n):]
    elif kind == "garbage":
        a = rng.randrange(n)
        out[a:a] = rng.randbytes(rng.randint(1, 3000))
    elif kind == "size":
        a = rng.randrange(max(1, n - 12))
        out[a + 8:a + 12] = rng.choice([b"\x7f\xff\xff\xf0", b"\x00\x00\x00\x05", rng.randbytes(4)])
    elif kind == "magic":
        a = rng.randrange(max(1, n - 17))
        out[a + 16] = rng.choice([3, 7, 127, 255])
    return bytes(out)


def damaged_dir(root: Path, sources: Iterable[Path], *, seed: int, count: int) -> list[Path]:
    """``count`` damaged copies of randomly chosen ``sources`` under ``root`` (``damaged<i>-0/<segment name>``), and
    the hostile corpus's files (``hostile<i>-0/...``). Returns the .log files written."""
    rng = random.Random(seed)
    srcs = sorted(sources)
    out = []
    for i in range(count):
        src = rng.choice(srcs)
        kind = KINDS[i % len(KINDS)]
        d = root / f"damaged{i}-0"
        d.mkdir(parents=True)
        p = d / src.name
        p.write_bytes(damage(src.read_bytes(), rng, kind))
        out.append(p)
    for i, src in enumerate(hostile_logs()):
        d = root / f"hostile{i}-0"
        d.mkdir(parents=True)
        p = d / (src.name if src.name[:20].isdigit() else f"{0:020d}.log")  # a log dir's segments are named so
        shutil.copyfile(src, p)
        out.append(p)
    return out


def dump_view(path: Path | str) -> dict[str, Any]:
    """What ``dump --deep --verify`` says of one ``.log``: its findings, counts and exit code (the library's walk, as
    the command runs it)."""
    from kafkatool.dump import DumpEngine, DumpOptions, Finding
    from kafkatool.dump.events import Summary

    events = list(DumpEngine(DumpOptions(deep=True, verify=True, emit_data=False)).run([Path(path)]))
    summary = events[-1]
    assert isinstance(summary, Summary)
    findings = [finding_key(f) for f in events if isinstance(f, Finding)]
    rc = 2 if summary.io_errors else 1 if summary.errors or summary.warnings else 0
    return {"findings": findings, "batches": summary.batches, "records": summary.records, "exit": rc}


_LIMIT = re.compile(r"exceeds the limit of \d+ bytes")


def finding_key(f: Any) -> tuple[Any, ...]:
    """A finding as parity compares it. A decompression limit is the walking process's memory budget's (a Spark
    worker's differs from this process's): the finding is the same, its figure may not be."""
    message = _LIMIT.sub("exceeds the limit of N bytes", f.message) if f.kind == "decompress-limit" else f.message
    return (os.path.realpath(f.path), f.kind, f.severity.value, f.position, f.offset, message)
