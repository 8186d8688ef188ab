"""The CLI keeps freed heap memory for reuse (util/heap): counted in page faults, not in time."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

# Set up as asked, then allocate and free a few hundred KiB 200 times (a segment's arrays, segment after segment):
# the minor page faults of the loop, after a first round.
PROBE = """
import json, resource, sys
mode, took = sys.argv[1], None
if mode == "pad":
    from kafkatool.util.heap import keep_freed_heap
    took = keep_freed_heap()
elif mode in ("console", "in-process"):  # the CLI runs a command (info of a missing dir): its own process or not
    from kafkatool.commands.app import main
    sys.argv = ["kafkatool", "info", sys.argv[2]]
    try:
        main() if mode == "console" else main(sys.argv[1:])
    except SystemExit:
        pass
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
GLIBC = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")


def faults(mode: str, *args: str) -> tuple[bool | None, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, mode, *args], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}).stdout
    took, n = json.loads(out.splitlines()[-1])
    return took, n


@GLIBC
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    took, with_pad = faults("pad")
    _, without = faults("plain")
    assert took is True
    assert without > 200 * 50  # each round maps its 500 KiB afresh: ~125 faults
    assert with_pad < without / 10


@GLIBC
def test_the_console_script_sets_it_and_an_in_process_run_does_not(tmp_path):
    """``kafkatool CMD`` (main() on sys.argv) keeps freed memory; ``main([...])`` inside another program's process
    (a test, a notebook) leaves that process's allocator as it was."""
    _, console = faults("console", str(tmp_path / "missing"))
    _, in_process = faults("in-process", str(tmp_path / "missing"))
    assert in_process > 200 * 50
    assert console < in_process / 10


def test_the_library_never_sets_it():
    """Only the CLI may change its process's allocator: no library module calls it."""
    users = [p.relative_to(ROOT).as_posix() for p in (ROOT / "kafkatool").rglob("*.py")
             if "keep_freed_heap" in p.read_text() and p.name != "heap.py"]
    assert users == ["kafkatool/commands/app.py"]
