"""Crash-safe writes: temp file in the same directory, fsync, rename, fsync the directory.

After a crash (even ``kill -9``) a destination is either its old contents or the complete new ones,
never torn. Temp names start with ``.kafkatool-tmp-`` so a later run (or an operator) can tell them
apart, and end in ``.tmp`` (:func:`temp_name`), a suffix a broker never parses:

* inside a partition dir, Kafka 3.9's ``LogLoader`` reads the base offset out of every file ending in
  ``.swap``, ``.cleaned``, ``.log``, ``.index``, ``.timeindex`` or ``.txnindex`` and ``ProducerStateManager``
  out of every ``.snapshot`` (``Long.parseLong`` of the name up to its first dot): a temp file named
  ``.kafkatool-tmp-<name>.swap`` would throw ``NumberFormatException`` and fail the log's load. Files with
  other suffixes are ignored (``.deleted`` ones are deleted);
* in a log dir, ``LogManager.loadLogs`` parses *every* directory's name as ``topic-partition``
  (``UnifiedLog.parseTopicPartitionName``): no directory there is ignored (but ``remote-log-index-cache``).
  ``.kafkatool-tmp-orders-0`` would load as partition 0 of a topic ``.kafkatool-tmp-orders``; with the
  ``.tmp`` ending (partition ``0.tmp`` is no number) the broker refuses to start instead, naming it. That is
  why kafkatool never stages a directory inside a log dir a broker uses, and names the staging dirs of its
  own outputs (which become log dirs) this way: a leftover stops a broker loudly instead of loading as data.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import BinaryIO

TEMP_PREFIX = ".kafkatool-tmp-"
TEMP_SUFFIX = ".tmp"


def temp_name(name: str) -> str:
    """``00000000000000000000.log.swap`` -> ``.kafkatool-tmp-00000000000000000000.log.swap.tmp``."""
    return f"{TEMP_PREFIX}{name}{TEMP_SUFFIX}"


def is_temp_name(name: str) -> bool:
    """Our temp files and dirs (also those of earlier versions, which lacked the ``.tmp`` ending)."""
    return name.startswith(TEMP_PREFIX)


def remove_temp(path: Path) -> bool:
    """Remove what an interrupted run left under a temp name: a staging dir with its contents, or a temp file
    (``atomic_write``'s, e.g. of a completion marker). False when it was gone already."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        return False
    return True


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
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX + dest.name + ".", suffix=TEMP_SUFFIX, dir=dest.parent)
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
        tmp_link = path.with_name(temp_name(path.name + ".bak"))
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


class DirMaker:
    """Makes output directories (and their missing parents) and remembers which it made, so that a failed run
    removes what it created and leaves no empty directory behind (a full disk, an EFBIG)."""

    def __init__(self) -> None:
        self.made: list[Path] = []  # outermost first

    def makedirs(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path).absolute()
        missing: list[Path] = []
        p = target
        while not os.path.lexists(p):
            missing.append(p)
            p = p.parent
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:  # made meanwhile (a worker): not ours
                continue
            self.made.append(d)
        return target

    def remove(self) -> None:
        """The run failed: every directory it made goes, with what the run wrote into it."""
        for d in self.made:
            shutil.rmtree(d, ignore_errors=True)
        self.made = []

    def prune(self) -> None:
        """The run ended: the directories it made that stayed empty go (innermost first)."""
        for d in reversed(self.made):
            try:
                d.rmdir()
            except OSError:
                pass
        self.made = [d for d in self.made if d.exists()]


def fsync_tree(root: str | os.PathLike[str]) -> None:
    """fsync every file, then every directory, under ``root``. Concurrent fsyncs share journal commits (ext4,
    xfs), which makes this several times faster than one after another for a tree of many small files."""
    from concurrent.futures import ThreadPoolExecutor

    files: list[str] = []
    dirs: list[str] = []
    for dirpath, _, names in os.walk(root):
        dirs.append(dirpath)
        files.extend(os.path.join(dirpath, n) for n in names)

    def sync(path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(sync, files))
        list(pool.map(sync, dirs))


@contextmanager
def staged_directory(dest: str | os.PathLike[str], *, fsync: bool = True, last: str | None = None,
                     guard: Callable[[Path], AbstractContextManager[object]] | None = None,
                     on_durable: Callable[[], None] | None = None) -> Iterator[Path]:
    """Build the new directory ``dest`` (absent, or an empty directory) crash-safely.

    Yields an empty staging dir beside it (same filesystem), ``.kafkatool-tmp-<dest name>.<random>.tmp``; when
    the block succeeds, everything in it is fsynced and it is renamed to ``dest`` (rename replaces an empty
    directory atomically), then the parent is fsynced. So after a crash ``dest`` is as it was or complete, and
    only a staging dir can be left over. When ``dest`` cannot be replaced (an empty mount point; a parent we may
    not write) the staging dir is made inside ``dest`` and its entries are moved in, ``last`` (a completion
    marker such as Spark's ``_SUCCESS``) after all others and their fsync, inside ``guard(dest)`` when given (a
    new broker log dir holds its ``.lock`` meanwhile, so that a broker cannot start on a half-moved dir). A
    failure removes the staging dir and the parents of ``dest`` it made. ``on_durable`` is called after each
    durable step (crash-point tests).
    """
    target = Path(dest)
    parent = target.absolute().parent
    parents = DirMaker()
    parents.makedirs(parent)
    inside = target.is_dir() and target.stat().st_dev != parent.stat().st_dev  # a mount point: stage on its disk
    if not inside:
        try:
            staging = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{target.name}.", suffix=TEMP_SUFFIX, dir=parent))
        except PermissionError:
            if not target.is_dir():
                raise
            inside = True
    if inside:
        staging = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=target))
    step = on_durable or (lambda: None)
    try:
        yield staging
        if fsync:
            fsync_tree(staging)
            step()
        os.chmod(staging, 0o755)
        _move_into_place(staging, target, last, fsync, guard)
        if fsync:
            fsync_dir(parent)
        step()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        parents.prune()  # the parents the run made, unless something else was put there meanwhile
        raise


def _move_into_place(staging: Path, dest: Path, last: str | None, fsync: bool,
                     guard: Callable[[Path], AbstractContextManager[object]] | None) -> None:
    if staging.parent != dest:
        try:
            os.replace(staging, dest)  # atomic; also replaces an empty directory
            return
        except OSError:
            if not dest.is_dir():
                raise
    if guard is not None:
        with guard(dest):
            _move_entries(staging, dest, last, fsync)
    else:
        _move_entries(staging, dest, last, fsync)


def _move_entries(staging: Path, dest: Path, last: str | None, fsync: bool) -> None:
    """dest is an empty directory we cannot replace (a mount point, say): move the entries in, the marker last."""
    names = sorted(n.name for n in staging.iterdir() if n.name != last)
    for name in names:
        os.rename(staging / name, dest / name)
    if last is not None and (staging / last).exists():
        if fsync:
            fsync_dir(dest)
        os.rename(staging / last, dest / last)
    staging.rmdir()
    if fsync:
        fsync_dir(dest)
