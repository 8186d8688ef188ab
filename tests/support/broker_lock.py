"""A real JVM holding a log dir's ``.lock`` the way a Kafka broker does (server-common ``FileLock``:
``FileChannel.open(CREATE, READ, WRITE).tryLock()``, a POSIX ``fcntl`` lock on Linux), for the tests that
check every command refuses a live log dir. The class is compiled once per session (``javac``); each holder
is a ``java`` process started on one ``.lock`` and killed at the end of the block.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SOURCE = """\
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.*;

public class HoldLock {
    public static void main(String[] args) throws Exception {
        FileChannel ch = FileChannel.open(Paths.get(args[0]), StandardOpenOption.CREATE, StandardOpenOption.READ,
                                          StandardOpenOption.WRITE);
        FileLock lock = ch.tryLock();
        if (lock == null) throw new IllegalStateException("not locked: another process holds it");
        System.out.println("locked");
        System.out.flush();
        System.in.read();  // until the test closes our stdin (or kills us)
        lock.release();
        ch.close();
    }
}
"""


class JavaLockHolder:
    """``with holder.holding(log_dir):`` a JVM holds ``log_dir/.lock`` (created if absent, as the broker does)."""

    def __init__(self, classes: Path) -> None:
        self.classes = classes

    @contextmanager
    def holding(self, log_dir: Path) -> Iterator[subprocess.Popen[str]]:
        p = subprocess.Popen(["java", "-Xmx32m", "-XX:TieredStopAtLevel=1", "-cp", str(self.classes), "HoldLock",
                              str(log_dir / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            assert p.stdout is not None
            line = p.stdout.readline().strip()
            assert line == "locked", (line, p.stderr.read() if p.stderr else "")
            yield p
        finally:
            p.kill()
            p.wait(30)


def compile_holder(base: Path) -> JavaLockHolder:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.fail("java and javac are needed (JDK 17+), as for every interop test")
    src = base / "HoldLock.java"
    src.write_text(SOURCE)
    subprocess.run(["javac", "-d", str(base), str(src)], check=True, capture_output=True, timeout=120)
    return JavaLockHolder(base)
