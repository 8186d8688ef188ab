"""Regular files only: every file kafkatool reads as input is opened here.

A hostile log dir can name a FIFO, a directory, a device or a symlink loop like a segment or an index. Opening
a FIFO for reading blocks until a writer comes (forever, offline); reading ``/dev/zero`` or ``/dev/urandom``
never ends. So an input file is opened with ``O_NONBLOCK`` (an open that never blocks; it changes nothing for a
regular file) and checked with ``fstat`` on the open descriptor, and anything but a regular file is refused
with :class:`NotRegularFileError` naming what it is. Symlinks are followed (a symlink to a segment is a
segment); a dangling one, or a loop, is refused the same way. A read never goes past the size the file had
when it was opened: a file that grows meanwhile is read to that size.

Devices are not opened at all when a ``stat`` shows them first (opening some devices has side effects); the
``fstat`` after the open is what holds when the path is swapped between the two.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from collections.abc import Iterator
from types import TracebackType

from kafkatool.errors import NotRegularFileError

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_NOATIME = getattr(os, "O_NOATIME", 0)
_READ_CHUNK = 1 << 20


def kind_of(mode: int) -> str | None:
    """What a file of this ``st_mode`` is, in words, when it is not a regular file; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"  # pragma: no cover - S_ISLNK after following links, or an unknown type


def irregular(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is (symlinks followed) when it cannot be read as a regular file, without opening it:
    ``"a FIFO"``, ``"a directory"``, ``"a character device"``, ``"a dangling symbolic link"``, ``"a symbolic
    link loop"``...; None for a regular file, or for a path that is not there at all (nor a link)."""
    try:
        return kind_of(os.stat(path).st_mode)
    except OSError as e:
        return link_trouble(path, e)


def link_trouble(path: str | os.PathLike[str], e: OSError) -> str | None:
    """What a path whose ``stat`` failed with ``e`` is, when a symlink is the trouble (a loop, a dangling link)."""
    if e.errno == errno.ELOOP:
        return "a symbolic link loop"
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return "a dangling symbolic link"
        except OSError:
            pass
    return None


def check_regular(path: str | os.PathLike[str]) -> None:
    """Raise :class:`NotRegularFileError` unless ``path`` is a regular file or missing (see :func:`irregular`)."""
    kind = irregular(path)
    if kind is not None:
        raise NotRegularFileError(kind, path=path)


class RegularFile:
    """An input file open for reading, known to be a regular file; ``size`` is its size at open, and no read
    goes past it. Use as a context manager, or :meth:`close`."""

    __slots__ = ("path", "fd", "size", "stat")

    def __init__(self, path: str | os.PathLike[str], *, noatime: bool = False) -> None:
        self.path = os.fspath(path)
        self.fd = -1
        kind = irregular(self.path)
        if kind is not None:
            raise NotRegularFileError(kind, path=self.path)
        flags = _OPEN_FLAGS | (_NOATIME if noatime else 0)
        try:
            fd = os.open(self.path, flags)
        except PermissionError:
            if not flags & _NOATIME:
                raise
            fd = os.open(self.path, _OPEN_FLAGS)  # O_NOATIME needs the file's owner (EPERM otherwise)
        except OSError as e:
            trouble = link_trouble(self.path, e) if e.errno in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR) else None
            if e.errno == errno.ENXIO:
                trouble = "a socket"  # opening a socket file: ENXIO
            if trouble is not None:
                raise NotRegularFileError(trouble, path=self.path) from None
            raise
        try:
            self.stat = os.fstat(fd)
            kind = kind_of(self.stat.st_mode)
            if kind is not None:
                raise NotRegularFileError(kind, path=self.path)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self.size = self.stat.st_size

    def pread(self, position: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``position``, never past the size at open (fewer if the file shrank)."""
        end = min(position + n, self.size)
        if position >= end:
            return b""
        parts = []
        while position < end:
            chunk = os.pread(self.fd, min(end - position, _READ_CHUNK), position)
            if not chunk:
                break
            parts.append(chunk)
            position += len(chunk)
        return b"".join(parts)

    def read_all(self) -> bytes:
        """The whole file as it was at open (its size then)."""
        return self.pread(0, self.size)

    def chunks(self, size: int = _READ_CHUNK) -> Iterator[bytes]:
        """The file from its start, ``size`` bytes at a time, up to its size at open (less if it shrank)."""
        position = 0
        while position < self.size:
            chunk = os.pread(self.fd, min(size, self.size - position), position)
            if not chunk:
                return
            position += len(chunk)
            yield chunk

    def map(self, length: int | None = None) -> mmap.mmap | None:
        """A read-only mapping of the first ``length`` bytes (default: the size at open); None for an empty
        file. Pages past the size at open are never mapped."""
        n = self.size if length is None else min(length, self.size)
        return mmap.mmap(self.fd, n, access=mmap.ACCESS_READ) if n > 0 else None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> RegularFile:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def open_regular(path: str | os.PathLike[str], *, noatime: bool = False) -> RegularFile:
    """Open ``path`` for reading as a regular file: :class:`NotRegularFileError` for anything else (a FIFO, a
    directory, a device, a socket, a dangling symlink or a loop); other failures (missing, no permission) raise
    their ``OSError``. ``noatime``: ``O_NOATIME`` where the process may use it."""
    return RegularFile(path, noatime=noatime)


def read_regular(path: str | os.PathLike[str], *, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (as :func:`open_regular`), at most its size at open and at most
    ``limit``."""
    with RegularFile(path) as f:
        return f.pread(0, f.size if limit is None else min(limit, f.size))
