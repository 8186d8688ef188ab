"""Writing a new file around the page cache: ``O_DIRECT`` in whole aligned blocks, then fsync.

A converter writes gigabytes it will not read again. Through the page cache each byte is copied into a cache
page, and each page is then found, mapped for writeback and freed again at fsync: on ext4 that costs about as
much CPU as the conversion itself (200 MB: ~37 ms of writes and ~13 ms of fsync, against ~8 ms for the same
bytes written directly in 4 MiB blocks). Written directly, the output also leaves the host's page cache alone:
on a broker's machine, the broker's own hot segments stay cached.

:class:`DirectWriter` stages what it is given in one page-aligned buffer and writes each full buffer with
``O_DIRECT`` (buffer address, length and file offset all multiples of 4 KiB, what every Linux block device
accepts). The last, partial buffer is written through the page cache (the file descriptor's ``O_DIRECT`` is
cleared first), and :meth:`close` fsyncs the file, so what is durable when it returns is the same either way.
Where ``O_DIRECT`` is not available (another OS, a filesystem that refuses it, a buffer below
:data:`MIN_DIRECT` bytes) or a direct write is refused, the file is written through the page cache: the
same bytes, only the cost differs.
"""

from __future__ import annotations

import errno
import fcntl
import io
import mmap
import os

ALIGN = 4096  # the largest logical block size of common devices; a multiple of every smaller one
MIN_DIRECT = 256 << 10  # below this, a direct write costs more CPU per byte than the page cache
O_DIRECT: int = getattr(os, "O_DIRECT", 0)


class DirectWriter:
    """A new file (``O_EXCL``) written in ``buffer_bytes`` blocks (rounded down to :data:`ALIGN`) and fsynced by
    :meth:`close`. ``direct=False``: through the page cache only."""

    def __init__(self, path: str | os.PathLike[str], buffer_bytes: int, *, direct: bool = True) -> None:
        size = max(ALIGN, buffer_bytes // ALIGN * ALIGN)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._file = io.FileIO(fd, "wb", closefd=True)  # closes the descriptor even if close() is never reached
        # O_DIRECT is set once the file exists: a filesystem that refuses it at open has already created the file
        # (a second O_EXCL open would then fail); F_SETFL refuses it with the same EINVAL.
        self.direct = False
        if direct and O_DIRECT and size >= MIN_DIRECT:
            try:
                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | O_DIRECT)
                self.direct = True
            except OSError as e:
                if e.errno != errno.EINVAL:  # EINVAL: the filesystem refuses O_DIRECT, the page cache it is
                    self._file.close()
                    raise
        self._buf = mmap.mmap(-1, size)  # anonymous: page-aligned, as O_DIRECT needs
        self._view = memoryview(self._buf)
        self._size = size
        self._n = 0  # bytes staged
        self.written = 0  # bytes handed to write() so far

    def write(self, data: bytes | bytearray | memoryview) -> None:
        src = memoryview(data)
        n, i = len(src), 0
        self.written += n
        while i < n:
            k = min(n - i, self._size - self._n)
            self._view[self._n:self._n + k] = src[i:i + k]
            self._n += k
            i += k
            if self._n == self._size:
                self._write_staged()

    def room(self) -> memoryview:
        """The free end of the buffer, for a producer that puts its bytes there itself (then :meth:`commit`): at
        least a quarter of the buffer, what is staged written first if need be (whole blocks when direct: up to
        ``ALIGN - 1`` bytes stay). Valid until the next call of any other method."""
        if self._size - self._n < self._size // 4:
            self._write_staged(self._n // ALIGN * ALIGN if self.direct else self._n)
        return self._view[self._n:]

    def commit(self, n: int) -> None:
        """``n`` bytes were put at the start of :meth:`room`: they are the file's next bytes."""
        if not 0 <= n <= self._size - self._n:
            raise ValueError(f"{n} bytes do not fit the {self._size - self._n} free")
        self._n += n
        self.written += n
        if self._n == self._size:
            self._write_staged()

    def _write_staged(self, k: int | None = None) -> None:
        """Write the first ``k`` staged bytes (all by default) and move the rest to the front."""
        k = self._n if k is None else k
        pos = 0
        while pos < k:
            with self._view[pos:k] as view:  # released even when the write raises (close() needs no view left)
                try:
                    done = self._file.write(view)
                except OSError as e:
                    if not (self.direct and e.errno == errno.EINVAL):
                        raise
                    self._buffered()  # a device or filesystem that refuses this write direct: the rest cached
                    continue
            if done is None:  # non-blocking files only; this one never is
                raise OSError(errno.EAGAIN, "write would block", self._file.name)
            pos += done
            if done % ALIGN and self.direct:
                self._buffered()  # a short write leaves the rest unaligned
        left = self._n - k
        if left:
            self._view[:left] = self._view[k:self._n]
        self._n = left

    def _buffered(self) -> None:
        fd = self._file.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~O_DIRECT)
        self.direct = False

    def close(self) -> None:
        """Write what is staged (through the page cache when it is not a whole block), fsync and close."""
        if self._file.closed:
            return
        try:
            if self._n:
                if self._n % ALIGN and self.direct:
                    self._buffered()
                self._write_staged()
            os.fsync(self._file.fileno())
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Close without writing what is staged (a failed run, which removes the file)."""
        self._file.close()
        try:
            self._view.release()
            self._buf.close()
        except BufferError:
            pass  # a view of room() still held (a traceback's frame): the buffer goes with it, never this error


__all__ = ["ALIGN", "MIN_DIRECT", "DirectWriter"]
