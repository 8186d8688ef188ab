"""The CLI keeps freed heap memory for reuse (util/heap): counted in page faults, not in time."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

# Allocate and free a few hundred KiB 200 times (a segment's arrays, segment after segment): the minor page
# faults of the loop, after a first round, with and without the top pad.
PROBE = """
import json, resource, sys
from kafkatool.util.heap import keep_freed_heap
took = keep_freed_heap() if sys.argv[1] == "pad" else None
def rounds(n):
    for _ in range(n):
        a = bytearray(300 << 10); a[::4096] = b"x" * len(a[::4096])
        b = bytearray(200 << 10); b[::4096] = b"x" * len(b[::4096])
        del a, b
rounds(1)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(200)
print(json.dumps([took, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before]))
"""


def faults(mode: str) -> tuple[bool | None, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout
    took, n = json.loads(out)
    return took, n


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt(M_TOP_PAD) is glibc's")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    took, with_pad = faults("pad")
    _, without = faults("plain")
    assert took is True
    assert without > 200 * 50  # each round maps its 500 KiB afresh: ~125 faults
    assert with_pad < without / 10


def test_the_library_never_sets_it():
    """Only the CLI may change its process's allocator: no library module calls it."""
    users = [p.relative_to(ROOT).as_posix() for p in (ROOT / "kafkatool").rglob("*.py")
             if "keep_freed_heap" in p.read_text() and p.name != "heap.py"]
    assert users == ["kafkatool/commands/app.py"]
