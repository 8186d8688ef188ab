"""Where a range's bytes come from: local paths as they are, URLs through ``pyarrow.fs`` with ranged reads.

A range of a local segment is walked in place (``dump``'s engine maps the file). A range of a URL (``s3://``,
``gs://``, ``abfs://``, ``file://`` ...) is first read into a *mirror*: a sparse local file of the segment's
size, named as the segment, holding the range's bytes at their own positions, so ``dump``'s engine walks it as
it walks any segment and every position it reports is a position in the remote file. The mirror holds the
range and the rest of the last batch that starts in it (found by hopping the headers), read in chunks of at most
``chunk_bytes``; a walk that needs more (damage, where the resync scans ahead) asks for the rest of the file.

Memory: one chunk at a time; the mirror lives on local disk (the task's temp dir) and is removed with the range.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from kafkatool.errors import InputError
from kafkatool.record.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_HEADER, LOG_OVERHEAD
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0
from kafkatool.util.regular import open_regular

DEFAULT_CHUNK_BYTES = 8 << 20
DEFAULT_MAX_BATCH_BYTES = 256 << 20
S3_ENDPOINT_ENV = "KAFKATOOL_S3_ENDPOINT"  # an S3-compatible endpoint (http://host:port) for s3:// URLs


def is_url(path: str) -> bool:
    """A URL (``scheme://...``, read through pyarrow.fs) rather than a local path."""
    return "://" in path


def host_name() -> str:
    return socket.gethostname()


def use_s3_endpoint(endpoint: str | None) -> None:
    """This process's S3-compatible endpoint for ``s3://`` (what :func:`filesystem_for` reads): set where the work
    runs (an executor, a pool worker, a DataFrame source's reader), since a running session's executors keep the
    environment they started with."""
    if endpoint and os.environ.get(S3_ENDPOINT_ENV) != endpoint:
        os.environ[S3_ENDPOINT_ENV] = endpoint


_fs_cache: dict[str, tuple[Any, str]] = {}
_fs_lock = threading.Lock()


def _s3_filesystem(netloc: str) -> Any:
    """pyarrow's S3 filesystem with the usual credential chain (environment, profile, instance role); an
    S3-compatible endpoint from ``KAFKATOOL_S3_ENDPOINT`` (spark-scan's S3 endpoint option sets it, also for
    executors)."""
    import pyarrow.fs as pafs

    endpoint = os.environ.get(S3_ENDPOINT_ENV)
    if not endpoint:
        return pafs.FileSystem.from_uri(f"s3://{netloc}/")[0]
    scheme = "http" if endpoint.startswith("http://") else "https"
    host = endpoint.split("://", 1)[-1].rstrip("/")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return pafs.S3FileSystem(endpoint_override=host, scheme=scheme, region=region,
                             allow_bucket_creation=False, allow_bucket_deletion=False)


def filesystem_for(url: str) -> tuple[Any, str]:
    """``(pyarrow FileSystem, path inside it)`` for a URL; filesystems are cached per scheme and host.

    ``s3a://`` (Hadoop's name) is read as ``s3://``. Inside-filesystem paths: the URL path for ``file``, ``host/path``
    (bucket and key) for ``s3``/``gs``, ``container/path`` for ``abfs(s)://container@account/...``.
    """
    from urllib.parse import urlsplit

    import pyarrow.fs as pafs

    parts = urlsplit(url)
    scheme = "s3" if parts.scheme == "s3a" else parts.scheme
    if scheme in ("hdfs", "viewfs"):
        raise InputError("hdfs:// is not read by spark-scan: pip's pyspark ships no Hadoop native client (libhdfs) "
                         "for pyarrow to load; copy the log dirs to local disk or S3, or run on the nodes that hold "
                         "them", path=url)
    key = f"{scheme}://{parts.netloc}|{os.environ.get(S3_ENDPOINT_ENV, '')}"
    with _fs_lock:
        cached = _fs_cache.get(key)
    if cached is None:
        try:
            fs = _s3_filesystem(parts.netloc) if scheme == "s3" else \
                pafs.FileSystem.from_uri(f"{scheme}://{parts.netloc}{parts.path or '/'}")[0]
        except Exception as e:  # pyarrow raises ArrowInvalid / OSError depending on the filesystem
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"cannot open filesystem with pyarrow.fs: {first} (spark-scan reads URLs with "
                             "pyarrow.fs: file, s3, s3a, gs, abfs, abfss)", path=url) from None
        cached = (fs, key)
        with _fs_lock:
            _fs_cache[key] = cached
    if scheme == "file":
        inner = parts.path
    elif scheme in ("abfs", "abfss"):
        inner = parts.netloc.split("@", 1)[0] + parts.path
    else:
        inner = parts.netloc + parts.path
    return cached[0], inner


def join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name if is_url(base) else os.path.join(base, name)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class Mirror:
    """A sparse local copy of some byte ranges of a remote segment, at their own positions (see the module doc)."""

    def __init__(self, url: str, size: int, directory: str, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> None:
        self.url = url
        self.size = size
        self.chunk_bytes = max(chunk_bytes, 64 << 10)
        self.path = os.path.join(directory, url.rstrip("/").rsplit("/", 1)[-1])
        self.fetched: list[tuple[int, int]] = []  # [start, end) ranges present, in fetch order
        self.bytes_read = 0
        fs, inner = filesystem_for(url)
        try:
            self._in = fs.open_input_file(inner)
            self._remote_size = int(self._in.size())
        except Exception as e:
            raise InputError(f"cannot open: {_first_line(e)}", path=url) from None
        self.size = min(self.size, self._remote_size)
        with open(self.path, "wb") as f:
            f.truncate(self.size)
        self._out = os.open(self.path, os.O_WRONLY)

    def close(self) -> None:
        try:
            self._in.close()
        finally:
            os.close(self._out)

    def has(self, start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in self.fetched)

    def fetch(self, start: int, end: int) -> None:
        """Read ``[start, end)`` of the remote file into the mirror (in chunks; what is there already is kept)."""
        end = min(end, self.size)
        pos = start
        while pos < end:
            covered = next((b for a, b in self.fetched if a <= pos < b), None)
            if covered is not None:
                pos = covered
                continue
            nxt = min(end, pos + self.chunk_bytes, min((a for a, _ in self.fetched if a > pos), default=end))
            try:
                data = self._in.read_at(nxt - pos, pos)
            except Exception as e:
                raise InputError(f"cannot read {nxt - pos} bytes at byte {pos}: {_first_line(e)}",
                                 path=self.url) from None
            if len(data) != nxt - pos:
                raise InputError(f"read {len(data)} of {nxt - pos} bytes at byte {pos} (the file shrank?)",
                                 path=self.url)
            os.pwrite(self._out, data, pos)
            self.bytes_read += len(data)
            self.fetched.append((pos, nxt))
            pos = nxt

    def cover_range(self, start: int, end: int, max_batch_bytes: int) -> int:
        """Fetch ``[start, end)`` and the rest of the last batch that starts in it; returns where the bytes the
        walk of this range needs end (the file's size when the headers do not lead there cleanly)."""
        self.fetch(start, end)
        p = start
        while p < end:
            if p + HEADER_SIZE_UP_TO_MAGIC > self.size:
                return self.size
            if not self.has(p, p + LOG_OVERHEAD):
                self.fetch(p, p + min(self.chunk_bytes, 64 << 10))
            with open(self.path, "rb") as f:
                head = os.pread(f.fileno(), LOG_OVERHEAD, p)
            size = LOG_HEADER.unpack_from(head, 0)[1]
            if size < RECORD_OVERHEAD_V0 or size + LOG_OVERHEAD > max_batch_bytes:
                return self.size  # damage (or a batch larger than a task may buffer): the walk decides
            p += LOG_OVERHEAD + size
        if p > self.size:
            return self.size
        self.fetch(start, p)
        return p


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
