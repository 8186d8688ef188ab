"""Sparse files: where their data is, and copies that keep their holes.

A broker's preallocated index (``segment.index.bytes``, 10 MiB by default, any size an operator set) or a
``log.preallocate`` segment is mostly a hole. Copied byte by byte it takes its whole apparent size on disk (an
8 GiB sparse ``.index`` became 8.1 GB); :func:`copy_sparse` copies only the data extents (``SEEK_DATA`` /
``SEEK_HOLE``) and leaves the holes holes, and hashes the holes from a buffer of zeros without reading them. On a
filesystem without ``SEEK_DATA`` the whole file is one extent (a plain copy).
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 20
_ZEROS = bytes(CHUNK)


def data_extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each stretch of data below ``size``, in order; what lies between them is a hole."""
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return  # a hole up to the end of the file
            if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
                yield pos, size  # no SEEK_DATA here: all of it is data
                return
            raise
        if start >= size:
            return
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        yield start, end
        pos = end


def hash_zeros(h: hashlib._Hash, n: int) -> None:
    view = memoryview(_ZEROS)
    while n > 0:
        k = min(n, CHUNK)
        h.update(view[:k])
        n -= k


def hash_sparse(f: BinaryIO, size: int) -> tuple[int, str]:
    """SHA-256 of the first ``size`` bytes of ``f``, holes hashed as zeros without reading them; returns the bytes
    hashed (fewer than ``size`` when ``f`` ends early: a file cut meanwhile) and the digest."""
    h = hashlib.sha256()
    pos = 0
    for start, end in data_extents(f.fileno(), size):
        hash_zeros(h, start - pos)
        f.seek(start)
        pos = start
        while pos < end:
            chunk = f.read(min(CHUNK, end - pos))
            if not chunk:
                return pos, h.hexdigest()
            h.update(chunk)
            pos += len(chunk)
    size = _end(f, size, pos)
    hash_zeros(h, size - pos)
    return size, h.hexdigest()


def copy_sparse(fi: BinaryIO, fo: BinaryIO, size: int) -> tuple[int, str]:
    """Copy the first ``size`` bytes of ``fi`` into ``fo`` (empty, positioned at 0) keeping holes; returns the
    bytes copied (less than ``size`` when ``fi`` ends early) and their SHA-256."""
    h = hashlib.sha256()
    pos = 0
    for start, end in data_extents(fi.fileno(), size):
        hash_zeros(h, start - pos)
        fi.seek(start)
        fo.seek(start)
        pos = start
        while pos < end:
            chunk = fi.read(min(CHUNK, end - pos))
            if not chunk:
                fo.truncate(pos)
                return pos, h.hexdigest()
            h.update(chunk)
            fo.write(chunk)
            pos += len(chunk)
    size = _end(fi, size, pos)
    hash_zeros(h, size - pos)
    fo.truncate(size)  # a hole up to the end
    return size, h.hexdigest()


def _end(f: BinaryIO, size: int, pos: int) -> int:
    """Where the trailing hole ends: ``size``, or the file's end now if it was cut meanwhile."""
    return max(pos, min(size, os.fstat(f.fileno()).st_size))


__all__ = ["copy_sparse", "data_extents", "hash_sparse", "hash_zeros"]
