"""Keeping freed heap memory for the next segment, for a process that runs commands (the CLI).

glibc's malloc serves an allocation above 128 KiB with a fresh ``mmap`` and unmaps it when freed, and hands memory
freed at the top of its heap back to the kernel once more than 128 KiB is free there (both thresholds then move
with what the program frees, up to 32 MiB). A command's per-segment arrays (the index entries read from disk,
their answers, the rebuilt entries: a few hundred KiB each for a 1 GiB segment) are allocated and freed once per
segment, so segment after segment touches fresh pages: ``reindex-time``'s check of a 200 MB segment of 1 KiB
batches took ~400 page faults, about a fifth of its CPU (``perf stat``,
benchmarks/results/2026-11-27-reindex-compiled-1.md).

Here allocations below ``MMAP_BELOW`` come from the heap, and up to ``TOP_PAD`` of freed memory stays in it for
the next allocation (~8 faults a segment). Setting either turns off glibc's moving thresholds, which is why both
are set. Peak RSS grows by at most the pad (measured +0.7 MB).

A library must not change its host's allocator (a notebook, a Spark worker): only the CLI calls this, and only in
the process the ``kafkatool`` command runs in (``main()`` on ``sys.argv``; not ``main([...])`` called by another
program). Pool workers forked from it inherit the settings; workers started afresh (a ``forkserver`` or ``spawn``
pool) do not.
"""

from __future__ import annotations

import sys

M_TOP_PAD = -2  # glibc malloc.h
M_MMAP_THRESHOLD = -3
TOP_PAD = 4 << 20
MMAP_BELOW = 1 << 20


def keep_freed_heap(pad: int = TOP_PAD, mmap_below: int = MMAP_BELOW) -> bool:
    """``mallopt`` the two where the C library has it (glibc); whether both took."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_below)) and bool(mallopt(M_TOP_PAD, pad))
