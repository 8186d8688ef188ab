"""Crash-safe writes: temp file in the same directory, fsync, rename, fsync the directory.

After a crash (even ``kill -9``) a destination is either its old contents or the complete new ones,
never torn. Temp names start with ``.kafkatool-tmp-`` so a later run (or an operator) can tell them
apart; the broker ignores them (not a known suffix).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

TEMP_PREFIX = ".kafkatool-tmp-"


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_write(path: str | os.PathLike[str], *, mode: int = 0o644) -> Iterator[BinaryIO]:
    """Write ``path`` atomically: yields a binary file; on success it replaces ``path``."""
    dest = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX + dest.name + ".", dir=dest.parent)
    ok = False
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, dest)
        ok = True
        fsync_dir(dest.parent)
    finally:
        if not ok:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_write(path) as f:
        f.write(data)


def replace_with_backup(path: Path, data: bytes, *, backup: bool) -> Path | None:
    """Atomically replace ``path`` with ``data``; keep the old file as ``<name>.bak`` when asked.

    The backup is a hard link made before the swap, so at every instant ``path`` is old-or-new and
    the old bytes are never lost.
    """
    bak = None
    if backup and path.exists():
        bak = path.with_name(path.name + ".bak")
        tmp_link = path.with_name(TEMP_PREFIX + path.name + ".bak")
        try:
            os.unlink(tmp_link)
        except FileNotFoundError:
            pass
        os.link(path, tmp_link)
        os.replace(tmp_link, bak)
        # rename() between two links of one file does nothing (POSIX): when an interrupted earlier run
        # already made the backup, tmp_link is still there.
        try:
            os.unlink(tmp_link)
        except FileNotFoundError:
            pass
    atomic_write_bytes(path, data)
    return bak
