"""``--verify-index`` without Spark: the same per-segment check in one process or a process pool."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kafkatool.spark.executor import index_check_row
from kafkatool.spark.plan import SegmentFile


def verify_local(segments: Sequence[SegmentFile], index_interval_bytes: int, *, jobs: int = 1,
                 progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Index verdict rows (``INDEX_CHECK_SCHEMA``) in segment order."""
    total = sum(s.size for s in segments)
    done = 0
    rows: list[dict[str, Any]] = []
    if jobs <= 1 or len(segments) <= 1:
        for s in segments:
            rows.append(index_check_row(s, index_interval_bytes))
            done += s.size
            if progress:
                progress(done, total)
        return rows
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for s, row in zip(segments, pool.imap(_check, [(s, index_interval_bytes) for s in segments]), strict=True):
            rows.append(row)
            done += s.size
            if progress:
                progress(done, total)
    return rows


def _check(arg: tuple[SegmentFile, int]) -> dict[str, Any]:
    return index_check_row(*arg)
