"""Batches of one byte range of a segment, from a local file (mmap) or any pyarrow.fs URL (ranged reads).

A range ``[start, end)`` owns the batches that *start* in it; the last batch may run past ``end`` and
is read whole. The walk follows ``FileLogInputStream``'s stop rules over the segment's planned size,
so the concatenation of a segment's ranges is exactly one walk of the whole file. Where a range stops:

* ``handoff``: at the first batch position ``>= end`` (the next range must start exactly there);
* ``end``, ``short-tail``, ``size-past-end``, ``corrupt``: as the whole-file walk would stop;
* ``error``: the range could not be read (I/O error, a batch larger than the task may buffer).

Local paths are memory-mapped (``FileRecords``); URLs (``hdfs://``, ``s3://``, ``gs://``, ``abfs://``,
``file://`` ...) are read through ``pyarrow.fs`` in chunks, a batch larger than a chunk with one read
of its exact size (bounded by ``max_batch_bytes``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafkatool.errors import CorruptRecordError, InputError
from kafkatool.record.batch import LOG_OVERHEAD
from kafkatool.record.file_records import FileRecords, LogInputStream, RecordBatch, WalkEnd
from kafkatool.util.regular import open_regular

DEFAULT_CHUNK_BYTES = 8 << 20
DEFAULT_MAX_BATCH_BYTES = 256 << 20


def is_url(path: str) -> bool:
    """A URL (``scheme://...``, read through pyarrow.fs) rather than a local path."""
    return "://" in path


_fs_cache: dict[str, tuple[Any, str]] = {}
_fs_lock = threading.Lock()


def filesystem_for(url: str) -> tuple[Any, str]:
    """``(pyarrow FileSystem, path inside it)`` for a URL; filesystems are cached per scheme and host.

    ``s3a://`` (Hadoop's name) is read as ``s3://``. Inside-filesystem paths: the URL path for
    ``file``/``hdfs``/``viewfs``, ``container/path`` for ``abfs(s)://container@account/...``, else
    ``host/path`` (bucket and key for ``s3``/``gs``).
    """
    from urllib.parse import urlsplit

    import pyarrow.fs as pafs

    parts = urlsplit(url)
    scheme = "s3" if parts.scheme == "s3a" else parts.scheme
    key = f"{scheme}://{parts.netloc}"
    with _fs_lock:
        cached = _fs_cache.get(key)
    if cached is None:
        try:
            fs, _ = pafs.FileSystem.from_uri(key + (parts.path or "/"))
        except Exception as e:  # pyarrow raises ArrowInvalid / OSError depending on the filesystem
            # One line: libhdfs's loader lists every path it tried, one per line.
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"cannot open filesystem with pyarrow.fs: {first} (spark-scan reads URLs with "
                             "pyarrow.fs, not Spark's Hadoop FileSystem: file, hdfs, viewfs, s3, s3a, gs, abfs, "
                             "abfss)", path=url) from None
        cached = (fs, key)
        with _fs_lock:
            _fs_cache[key] = cached
    if scheme in ("file", "hdfs", "viewfs"):
        inner = parts.path
    elif scheme in ("abfs", "abfss"):
        inner = parts.netloc.split("@", 1)[0] + parts.path
    else:
        inner = parts.netloc + parts.path
    return cached[0], inner


def join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name if is_url(base) else os.path.join(base, name)


@dataclass(frozen=True, slots=True)
class RangeEnd:
    """Where and why a range's walk stopped (``position`` is a file position)."""

    kind: str  # handoff | end | short-tail | size-past-end | corrupt | error
    position: int
    trailing_bytes: int = 0
    message: str = ""

    @property
    def abnormal(self) -> bool:
        return self.kind not in ("handoff", "end")


class RangeBatches:
    """Iterate the batches a range owns; ``end`` says where and why it stopped."""

    def __init__(self, path: str, start: int, end: int, file_size: int, *, last: bool,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> None:
        self.path = path
        self.start = start
        self.range_end = end
        self.file_size = file_size
        self.last = last
        self.chunk_bytes = max(chunk_bytes, 1024)
        self.max_batch_bytes = max_batch_bytes
        self.end: RangeEnd | None = None
        self.bytes_read = 0

    def __iter__(self) -> Iterator[RecordBatch]:
        if is_url(self.path):
            return self._remote()
        return self._local()

    # ------------------------------------------------------------------ helpers
    def _stop(self, st: WalkEnd) -> None:
        if not self.last and st.position >= self.range_end:
            self.end = RangeEnd("handoff", st.position)
        else:
            self.end = RangeEnd(st.kind, st.position, self.file_size - st.position if st.kind != "end" else 0,
                                st.message)

    def _corrupt(self, e: CorruptRecordError) -> None:
        pos = e.position if e.position is not None else self.start
        if not self.last and pos >= self.range_end:
            self.end = RangeEnd("handoff", pos)
        else:
            self.end = RangeEnd("corrupt", pos, self.file_size - pos, e.message)

    # ------------------------------------------------------------------ local: mmap
    def _local(self) -> Iterator[RecordBatch]:
        fr = FileRecords(self.path)
        try:
            size = min(fr.size, self.file_size)
            if size < self.file_size:
                self.file_size = size  # the file shrank since planning: walk what is there
            stream = fr.batches(self.start, size)
            range_end, last = self.range_end, self.last
            try:
                for batch in stream:
                    if not last and batch.position >= range_end:
                        self.end = RangeEnd("handoff", batch.position)
                        return
                    yield batch
            except CorruptRecordError as e:
                self._corrupt(e)
                return
            assert stream.end_state is not None
            self._stop(stream.end_state)
        finally:
            self.bytes_read = ((self.end.position if self.end else self.range_end) - self.start)
            fr.close()

    # ------------------------------------------------------------------ remote: pyarrow.fs ranged reads
    def _remote(self) -> Iterator[RecordBatch]:
        fs, inner = filesystem_for(self.path)
        try:
            f = fs.open_input_file(inner)
        except Exception as e:
            raise InputError(f"cannot open: {e}", path=self.path) from None
        try:
            size = min(int(f.size()), self.file_size)
            self.file_size = size
            pos = self.start
            want = self.chunk_bytes
            range_end, last = self.range_end, self.last
            while True:
                n = min(want, size - pos)
                if n <= 0:
                    self.end = RangeEnd("end", pos) if pos >= size else RangeEnd("short-tail", pos, size - pos)
                    return
                buf = memoryview(f.read_at(n, pos))
                self.bytes_read += len(buf)
                at_eof = pos + len(buf) >= size
                stream = LogInputStream(buf, base=pos, path=self.path)
                try:
                    for batch in stream:
                        if not last and batch.position >= range_end:
                            self.end = RangeEnd("handoff", batch.position)
                            return
                        yield batch
                except CorruptRecordError as e:
                    self._corrupt(e)
                    return
                st = stream.end_state
                assert st is not None
                if at_eof:
                    self._stop(st)
                    return
                if not last and st.position >= range_end:
                    self.end = RangeEnd("handoff", st.position)
                    return
                want = self.chunk_bytes
                if st.position == pos:
                    # One batch bigger than a chunk: read exactly it, if the file and the budget hold it.
                    declared = (st.declared_size or 0) + LOG_OVERHEAD
                    if pos + declared > size:
                        self.end = RangeEnd("size-past-end", pos, size - pos,
                                            f"batch declares {declared} bytes but only {size - pos} remain")
                        return
                    if declared > self.max_batch_bytes:
                        self.end = RangeEnd("error", pos, size - pos,
                                            f"batch of {declared} bytes is larger than a task may buffer "
                                            f"({self.max_batch_bytes}; give a larger memory budget)")
                        return
                    want = max(want, declared)
                pos = st.position
        finally:
            f.close()


def file_size(path: str) -> int:
    if is_url(path):
        fs, inner = filesystem_for(path)
        return int(fs.get_file_info(inner).size)
    return os.path.getsize(path)


def read_at(path: str, position: int, size: int) -> bytes:
    """A few bytes of a file (planning reads batch headers and index files this way): a local one a regular file
    only, never read past its size."""
    if is_url(path):
        fs, inner = filesystem_for(path)
        with fs.open_input_file(inner) as f:
            return bytes(f.read_at(size, position))
    with open_regular(path) as lf:
        return lf.pread(position, size)


def read_all(path: str, limit: int) -> bytes:
    """A whole small file (an index), refusing more than ``limit`` bytes."""
    if not is_url(path):
        with open_regular(path) as lf:
            if lf.size > limit:
                raise InputError(f"file of {lf.size} bytes is larger than the {limit} bytes allowed", path=path)
            return lf.read_all()
    size = file_size(path)
    if size > limit:
        raise InputError(f"file of {size} bytes is larger than the {limit} bytes allowed", path=path)
    return read_at(path, 0, size)


def local_copy(path: str, directory: str) -> str:
    """Copy a URL's file to ``directory`` (for checks that need a memory-mapped file); return the local path."""
    fs, inner = filesystem_for(path)
    dest = os.path.join(directory, os.path.basename(inner))
    with fs.open_input_stream(inner) as src, open(dest, "wb") as out:
        while True:
            chunk = src.read(DEFAULT_CHUNK_BYTES)
            if not chunk:
                break
            out.write(chunk)
    return dest
