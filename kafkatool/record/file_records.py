"""Walking the batches of a ``.log`` segment as Kafka's ``FileRecords``/``FileLogInputStream`` do.

The walk reads the 17 bytes up to the magic at each position and dispatches on magic (< 2 legacy,
otherwise v2, as Kafka does for magic 3+ too). Like Kafka it stops *silently* when 17 bytes or fewer
remain or when a declared size runs past the end (a torn tail), and raises ``CorruptRecordError``
when a declared size is below the v0 minimum of 14. Nothing else is validated here: CRCs are checked
by ``batch.ensure_valid()`` and records decoded by ``batch.records()``, only when asked.

Files are memory-mapped read-only. Pages already walked past are dropped from the process (clean
file pages, refetched from the page cache if touched again) every ``window`` bytes, so resident memory
does not grow with the file size: mapped pages count in RSS, and the window is the active memory
budget's (``kafkatool.util.budget``: ``window_bytes``) unless the caller gives one. Zeros after the last
batch (a preallocated segment: ``log.preallocate`` makes the active segment ``segment.bytes`` long) are
checked by :meth:`FileRecords.first_nonzero`, which skips the file's holes without touching them
(``SEEK_DATA``/``SEEK_HOLE``) and scans the rest a window at a time.
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import BinaryIO, Literal

from kafkatool._accel import crc32c as _crc32c
from kafkatool._accel import speedups as _C
from kafkatool.errors import CorruptRecordError, InputError, KafkaToolError
from kafkatool.record.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_HEADER, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2
from kafkatool.record.codecs import crc32 as _crc32
from kafkatool.record.default_records import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    BatchHeader,
    DefaultRecordBatch,
    read_header,
)
from kafkatool.record.legacy_records import (
    COMPRESSION_CODEC_MASK,
    ENTRY_ATTRIBUTES_OFFSET,
    ENTRY_CRC_OFFSET,
    RECORD_OVERHEAD_V0,
    LegacyRecordBatch,
)
from kafkatool.util import budget as _budget
from kafkatool.util.regular import open_regular

Buffer = bytes | bytearray | memoryview
RecordBatch = DefaultRecordBatch | LegacyRecordBatch

_PAGE = mmap.PAGESIZE
# madvise(MADV_POPULATE_READ), Linux 5.14: map a range's pages in one call (Python 3.11's mmap lacks the name).
_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22 if os.uname().sysname == "Linux" else 0)
_SEEK_DATA: int | None = getattr(os, "SEEK_DATA", None)
_SEEK_HOLE: int = getattr(os, "SEEK_HOLE", 4)
_NONZERO = re.compile(rb"[^\x00]")
_ZERO_BLOCK = 1 << 16
_ZEROS = memoryview(bytes(_ZERO_BLOCK))

StopKind = Literal["end", "short-tail", "size-past-end", "corrupt"]


@dataclass(frozen=True, slots=True)
class WalkEnd:
    """Where and why a batch walk stopped."""

    kind: StopKind
    position: int  # file position of the first byte not consumed
    trailing_bytes: int  # bytes from ``position`` to the end of the walked range
    message: str = ""
    declared_size: int | None = None  # size field of the torn or corrupt entry, where one was read


class LogInputStream:
    """Iterates the batches of ``buf[start:end]``; after iteration ``end_state`` says why it stopped.

    ``base`` is the file position of ``buf[0]``: batch positions are file positions.
    """

    def __init__(self, buf: Buffer, *, start: int = 0, end: int | None = None, base: int = 0,
                 path: str | None = None, on_progress: FileRecords | None = None) -> None:
        self.buf = buf
        self.start = start
        self.end = len(buf) if end is None else min(end, len(buf))
        self.base = base
        self.path = path
        self.position = start  # index in buf of the next batch
        self.end_state: WalkEnd | None = None
        self._file = on_progress
        self._jump: int | None = None

    def jump(self, position: int) -> None:
        """Go on at ``position`` (an index in ``buf``, past the batch just yielded) instead of after that batch:
        the caller has walked the batches in between itself (``dump``'s compiled walk)."""
        self._jump = position

    def __iter__(self) -> Iterator[RecordBatch]:
        buf, end, base = self.buf, self.end, self.base
        p = self.position
        unpack_log = LOG_HEADER.unpack_from
        unpack_v2 = HEADER.unpack_from
        named = tuple.__new__  # read_header's BatchHeader, without its call
        v2 = DefaultRecordBatch
        legacy = LegacyRecordBatch
        file = self._file
        window = file.window if file is not None else 0
        next_drop = p + window
        while p < end - HEADER_SIZE_UP_TO_MAGIC:
            offset, size = unpack_log(buf, p)
            if size < RECORD_OVERHEAD_V0:
                self.position = p
                self.end_state = WalkEnd(
                    "corrupt", base + p, end - p,
                    f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
                    size)
                raise CorruptRecordError(self.end_state.message, path=self.path, position=base + p)
            if p > end - LOG_OVERHEAD - size:
                self.position = p
                self.end_state = WalkEnd(
                    "size-past-end", base + p, end - p,
                    f"batch declares {size + LOG_OVERHEAD} bytes but only {end - p} remain", size)
                return
            magic = buf[p + MAGIC_OFFSET]
            if magic > 127:
                magic -= 256
            if magic < MAGIC_V2:
                batch: RecordBatch = legacy(buf, p, base + p)
            elif size + LOG_OVERHEAD >= RECORD_BATCH_OVERHEAD:
                batch = v2(buf, p, base + p, named(BatchHeader, unpack_v2(buf, p)))
            else:
                # Too small for a v2 header: Kafka's DefaultFileChannelRecordBatch fails on ensureValid.
                batch = v2(buf, p, base + p, _short_v2_header(buf, p, size))
            p += size + LOG_OVERHEAD
            self.position = p
            if file is not None and p >= next_drop:
                file.drop_before(base + p)
                next_drop = p + window
            yield batch
            if self._jump is not None:
                p = self._jump
                self._jump = None
                self.position = p
                if file is not None and p >= next_drop:
                    file.drop_before(base + p)
                    next_drop = p + window
        self.position = p
        rest = end - p
        self.end_state = WalkEnd("end" if rest == 0 else "short-tail", base + p, rest,
                                 "" if rest == 0 else f"{rest} trailing bytes are too few for a batch header")


def _short_v2_header(buf: Buffer, p: int, size: int) -> BatchHeader:
    """Header fields of a magic >= 2 entry shorter than a v2 header: readable ones, -1 for the rest."""
    data = bytes(buf[p:p + size + LOG_OVERHEAD]) + b"\xff" * HEADER.size
    return read_header(data, 0)._replace(length=size)


class FileRecords:
    """A read-only, memory-mapped ``.log`` file (or any file of batches)."""

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int | None = None,
                 window: int | None = None, reads_all: bool = False) -> None:
        self.path = os.fspath(path)
        # The caller reads every byte (a converter): drop_before maps each next window in advance. A walk that reads
        # only the headers (shallow dump) pays more for that than for the faults it saves (+5% CPU on 16 KB batches).
        self.reads_all = reads_all
        # Mapped pages kept resident before the walk hands them back (None: the memory budget's).
        self.window = max(_PAGE, _budget.window_bytes() if window is None else window)
        # A regular file only (never a FIFO or a device), mapped to its size at open: a file that grows
        # meanwhile is read to that size.
        try:
            f = open_regular(self.path)
        except OSError as e:
            raise InputError(f"cannot open: {e.strerror}", path=self.path) from None
        with f:
            self._ahead = 0  # drop_before has mapped the pages up to here in advance
            self.file_size = f.size
            self.size = self.file_size if max_bytes is None else min(self.file_size, max_bytes)
            self._mm: mmap.mmap | None = None
            if self.size > 0:
                self._mm = f.map()
            if self._mm is not None:
                if hasattr(mmap, "MADV_SEQUENTIAL"):
                    self._mm.madvise(mmap.MADV_SEQUENTIAL)
                self.buf: Buffer = memoryview(self._mm)
            else:
                self.buf = b""
            # Kept for SEEK_DATA (first_nonzero), closed with the mapping (or when collected: a file object owns it).
            self._file: BinaryIO | None = os.fdopen(os.dup(f.fd), "rb", buffering=0)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, max_bytes: int | None = None,
             window: int | None = None) -> FileRecords:
        return cls(path, max_bytes=max_bytes, window=window)

    def batches(self, start: int = 0, end: int | None = None) -> LogInputStream:
        stop = self.size if end is None else min(end, self.size)
        return LogInputStream(self.buf, start=start, end=stop, path=self.path, on_progress=self)

    def read(self, position: int, size: int) -> bytes:
        return bytes(self.buf[position:min(position + size, self.size)])

    def drop_before(self, position: int) -> None:
        """Let the kernel take back the pages before ``position`` (they are clean file pages); with ``reads_all``,
        map the next window's in one call (the walk reads them next: no page fault each 64 KiB)."""
        if self._mm is not None and hasattr(mmap, "MADV_DONTNEED"):
            upto = (position // _PAGE) * _PAGE
            if upto > 0:  # from the start: pages read again after a drop (a batch's records) go too
                try:
                    self._mm.madvise(mmap.MADV_DONTNEED, 0, upto)
                except (OSError, ValueError):
                    pass
            if self.reads_all and _POPULATE_READ and self._ahead <= upto < self.size:  # once a window, not a drop
                n = min(self.window, self.size - upto)
                self._ahead = upto + n
                try:
                    self._mm.madvise(_POPULATE_READ, upto, n)
                except (OSError, ValueError):
                    pass  # a kernel before 5.14: the walk faults the pages in

    def drop_range(self, start: int, end: int) -> None:
        """Hand back the whole pages inside ``[start, end)`` (a scan ahead of the walk)."""
        if self._mm is not None and hasattr(mmap, "MADV_DONTNEED"):
            lo = -(-start // _PAGE) * _PAGE
            hi = (min(end, self.file_size) // _PAGE) * _PAGE
            if hi > lo:
                try:
                    self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
                except (OSError, ValueError):
                    pass

    def first_nonzero(self, start: int, end: int | None = None) -> int | None:
        """The position of the first byte that is not zero in ``[start, end)`` (default: to ``size``), else None.

        Holes (a sparse or preallocated file's unwritten ranges) are skipped without being read, where the file
        system reports them (``SEEK_DATA``/``SEEK_HOLE``); data is scanned a window at a time, each window's
        pages handed back after it, so an 8 GiB preallocated segment costs neither 8 GiB of mapped pages nor a
        read of 8 GiB of zeros."""
        stop = self.size if end is None else min(end, self.size)
        p = start
        while p < stop:
            region_end = stop
            if self._file is not None and _SEEK_DATA is not None:
                fd = self._file.fileno()
                try:
                    p = max(p, os.lseek(fd, p, _SEEK_DATA))
                    region_end = min(stop, os.lseek(fd, p, _SEEK_HOLE))
                except OSError as e:
                    if e.errno == errno.ENXIO:  # no data from p to the end of the file: a hole
                        return None
                    # the file system cannot tell: scan everything
                if p >= stop:
                    return None
            buf = self.buf if isinstance(self.buf, memoryview) else memoryview(self.buf)
            while p < region_end:
                w = min(region_end, p + self.window)
                for q in range(p, w, _ZERO_BLOCK):  # a memcmp a block, the regex only where one differs
                    qe = min(w, q + _ZERO_BLOCK)
                    if buf[q:qe] != _ZEROS[:qe - q]:
                        m = _NONZERO.search(buf, q, qe)
                        if m is not None:
                            return m.start()
                self.drop_range(p, w)
                p = w
        return None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        buf = self.buf
        self.buf = b""
        if isinstance(buf, memoryview):
            try:
                buf.release()
            except BufferError:
                pass  # a batch still holds a view; the mapping goes when that does
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass
            self._mm = None

    def __enter__(self) -> FileRecords:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def data_end(path: str | os.PathLike[str], *, max_regions: int = 4096) -> int:
    """Where the data of a regular file ends: its size less a trailing hole (the unwritten tail of a preallocated
    segment), where the file system reports holes (``SEEK_DATA``/``SEEK_HOLE``); else, or past ``max_regions``
    data regions, the size. 0 for a file that cannot be opened or is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        if not _is_regular(st.st_mode):
            return 0
        size = st.st_size
        if _SEEK_DATA is None:
            return size
        p = end = 0
        for _ in range(max_regions):
            try:
                p = os.lseek(fd, p, _SEEK_DATA)
                end = p = os.lseek(fd, p, _SEEK_HOLE)
            except OSError as e:
                return end if e.errno == errno.ENXIO else size
            if p >= size:
                return size
        return size
    finally:
        os.close(fd)


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def iter_batches(buf: Buffer, *, base: int = 0) -> Iterator[RecordBatch]:
    """Batches of an in-memory buffer (e.g. a fetch response's records), Kafka's walk rules."""
    return iter(LogInputStream(buf, base=base))


# ---------------------------------------------------------------------------------------------- fast walks

@dataclass(slots=True)
class SegmentVerify:
    """The result of :func:`verify_segment`: Kafka's shallow read of a segment with every CRC checked."""

    path: str | None
    size: int  # bytes walked (the file size, or the ``end`` given)
    batches: int = 0
    records: int = 0  # v2 recordsCount + 1 per uncompressed legacy entry (compressed legacy: unknown)
    unknown_counts: int = 0  # compressed legacy wrappers: their record count needs decompression
    valid_bytes: int = 0  # position after the last batch walked (= end unless the walk stopped early)
    invalid: list[KafkaToolError] = field(default_factory=list)  # batches failing ensure_valid, in order
    stop: WalkEnd | None = None  # why the walk ended
    walk_error: KafkaToolError | None = None  # a declared size below 14 (the walk cannot go on)

    @property
    def error(self) -> KafkaToolError | None:
        """The first problem Kafka's reader would throw on, in file order."""
        first = self.invalid[0] if self.invalid else None
        return first if first is not None else self.walk_error

    @property
    def ok(self) -> bool:
        return not self.invalid and self.walk_error is None


_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


def verify_segment(log: str | os.PathLike[str] | FileRecords, *, start: int = 0, end: int | None = None,
                   max_invalid: int = 1000) -> SegmentVerify:
    """Walk ``log`` as ``FileLogInputStream`` does and check every batch as ``ensureValid`` does.

    The fast path of a dump that verifies without reporting records: no batch objects, one ``struct`` read of the
    size per batch, CRC-32C (v2) or CRC-32 (v0/v1) over the mapped bytes. A batch that fails is
    reported (with the exact error ``batch.ensure_valid()`` raises) and the walk goes on, since its
    size field is still usable; at most ``max_invalid`` failures are kept. Equivalent to::

        for b in fr.batches(start, end): b.ensure_valid()
    """
    owned = not isinstance(log, FileRecords)
    fr = log if isinstance(log, FileRecords) else FileRecords(log)
    try:
        return _verify(fr, start, fr.size if end is None else min(end, fr.size), max_invalid)
    finally:
        if owned:
            fr.close()


def _verify(fr: FileRecords, start: int, end: int, max_invalid: int) -> SegmentVerify:
    out = SegmentVerify(fr.path, end)
    buf = fr.buf
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    unpack_log = LOG_HEADER.unpack_from
    unpack_i32 = _I32.unpack_from
    unpack_u32 = _U32.unpack_from
    crc32c = _crc32c.crc32c
    crc32 = _crc32
    invalid = out.invalid
    batches = records = unknown = 0
    p = start
    limit = end - HEADER_SIZE_UP_TO_MAGIC
    window = fr.window
    next_drop = p + window
    walk = _C.verify_walk if _C is not None else None
    while p < limit:
        if walk is not None:
            # The compiled loop, up to the next page drop; it leaves failures' errors and the walk's stops to
            # the Python body below (which also runs wherever the compiled one could not go on).
            r = walk(buf, p, next_drop, end, crc32c, crc32)
            if r is not None and r.position != p:
                p = r.position
                batches += r.batches
                records += r.records
                unknown += r.unknown_counts
                if r.failed_at >= 0 and len(invalid) < max_invalid:
                    invalid.append(_ensure_valid_error(fr, r.failed_at, end))
                if p >= next_drop:
                    fr.drop_before(p)
                    next_drop = p + window
                continue
        size = unpack_log(buf, p)[1]
        if size < RECORD_OVERHEAD_V0:
            out.stop = WalkEnd("corrupt", p, end - p, f"Found record size {size} smaller than minimum record "
                               f"overhead ({RECORD_OVERHEAD_V0})", size)
            out.walk_error = CorruptRecordError(out.stop.message, path=fr.path, position=p)
            break
        nxt = p + LOG_OVERHEAD + size
        if nxt > end:
            out.stop = WalkEnd("size-past-end", p, end - p,
                               f"batch declares {size + LOG_OVERHEAD} bytes but only {end - p} remain", size)
            break
        magic = buf[p + MAGIC_OFFSET]
        if 2 <= magic <= 127:
            if nxt - p < RECORD_BATCH_OVERHEAD:
                ok = False
            else:
                ok = unpack_u32(buf, p + CRC_OFFSET)[0] == crc32c(mv[p + ATTRIBUTES_OFFSET:nxt])
                records += unpack_i32(buf, p + RECORDS_COUNT_OFFSET)[0]
        else:
            # LegacyRecord.isValid: CRC-32 from the magic byte to the end of the message.
            ok = unpack_u32(buf, p + ENTRY_CRC_OFFSET)[0] == crc32(mv[p + MAGIC_OFFSET:nxt])
            if buf[p + ENTRY_ATTRIBUTES_OFFSET] & COMPRESSION_CODEC_MASK:
                unknown += 1
            else:
                records += 1
        if not ok and len(invalid) < max_invalid:
            invalid.append(_ensure_valid_error(fr, p, end))
        batches += 1
        p = nxt
        if p >= next_drop:
            fr.drop_before(p)
            next_drop = p + window
    else:
        rest = end - p
        out.stop = WalkEnd("end" if rest == 0 else "short-tail", p, rest,
                           "" if rest == 0 else f"{rest} trailing bytes are too few for a batch header")
    out.batches = batches
    out.records = records
    out.unknown_counts = unknown
    out.valid_bytes = p
    return out


def _ensure_valid_error(fr: FileRecords, p: int, end: int) -> KafkaToolError:
    """The error ``ensure_valid()`` raises for the batch at ``p`` (the slow path, on failures only)."""
    batch = next(iter(LogInputStream(fr.buf, start=p, end=end, path=fr.path)))
    try:
        batch.ensure_valid()
    except KafkaToolError as e:
        return e.at(fr.path)
    raise AssertionError(f"batch at {p} failed the fast CRC check but passes ensure_valid")  # pragma: no cover
