"""The log dir of tests/reindex/test_demo.py: ``python -m tests.support.reindex_demo DIR`` (DIR must not exist).

A broker killed after a follower's and a 3.6 leader's writes, with every kind of index trouble the examples
show; the segments are kafkatool's builders (``tests/support/segments.py``), the index files what the broker's append
path writes (``append_path_indexes``), then damaged as a crash or an operator would:

* ``orders-0``: segment 0 written by a follower (multi-batch appends: valid-different indexes); segment 6000
  active, its indexes preallocated and never trimmed (untrimmed) and without the final time entry.
* ``payments-0``: segment 0 written by a 3.6 leader (record-level time-index offsets); segment 3000 whose log
  lost its tail (mid-batch) under its indexes (stale entries past the end); segment 6000 without its
  ``.timeindex``; recovery point 3000, so the broker would recover segment 3000, truncate it and delete 6000.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from tests.support.segments import T0, append_path_indexes, v2, write_segment

PREALLOCATED = 10 * 1024 * 1024  # segment.index.bytes


def _batches(rng: random.Random, first: int, count: int, per_batch: int, value: int, ts: int) -> list[bytes]:
    out = []
    for off in range(first, first + count, per_batch):
        n = min(per_batch, first + count - off)
        stamps = [ts + off + rng.randint(-3, 3) for _ in range(n)]  # the max is rarely the last record
        out.append(v2(off, n, ts=stamps, value=value))
    return out


def _write(d: Path, base: int, batches: list[bytes], chunks: list[int] | None = None, *, record_level: bool = False,
           roll: bool = True) -> Path:
    log = write_segment(d, base, batches)
    index, timeindex = append_path_indexes(batches, chunks, base=base, record_level=record_level, roll=roll)
    log.with_suffix(".index").write_bytes(index)
    log.with_suffix(".timeindex").write_bytes(timeindex)
    return log


def build_demo(root: Path) -> None:
    rng = random.Random(20261124)
    root.mkdir(parents=True)
    (root / "meta.properties").write_text("version=0\nbroker.id=1\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n2\norders 0 6000\npayments 0 3000\n")

    orders = root / "orders-0"
    batches = _batches(rng, 0, 6000, 15, 300, T0)
    chunks: list[int] = []
    while sum(chunks) < len(batches):
        chunks.append(min(rng.choice([1, 1, 2, 3]), len(batches) - sum(chunks)))
    _write(orders, 0, batches, chunks)
    active = _write(orders, 6000, _batches(rng, 6000, 6000, 15, 300, T0 + 6000), roll=False)
    for suffix, slot in ((".index", 8), (".timeindex", 12)):
        f = active.with_suffix(suffix)
        f.write_bytes(f.read_bytes().ljust(PREALLOCATED // slot * slot, b"\0"))

    payments = root / "payments-0"
    _write(payments, 0, _batches(rng, 0, 3000, 20, 250, T0), record_level=True)
    torn = _write(payments, 3000, _batches(rng, 3000, 3000, 6, 200, T0 + 3000))
    with open(torn, "r+b") as f:
        f.truncate(200_000)  # the tail lost under indexes written for the whole log
    missing = _write(payments, 6000, _batches(rng, 6000, 600, 6, 200, T0 + 6000))
    missing.with_suffix(".timeindex").unlink()


if __name__ == "__main__":
    if len(sys.argv) != 2 or Path(sys.argv[1]).exists():
        sys.exit("usage: python -m tests.support.reindex_demo NEW_DIR")
    build_demo(Path(sys.argv[1]))
