"""``LogSegment.recover`` from batch headers at memory speed: a size-only walk, then numpy on the headers.

The per-batch Python loop of the reference (``kafkatool.log.recovery.reference``) costs ~2 µs a batch. Here the only
per-batch Python work is reading the 4-byte size field, copying the batch's first ``HDR`` (43) header bytes into
a table and stepping to the next batch. Every field is then read for a whole chunk of batches at once
through a numpy structured view of that table, and the 3.9 rules (index points every
``index.interval.bytes``, running max timestamp, ``OffsetIndex.append``/``TimeIndex.maybeAppend``
checks) are evaluated on arrays. The result is the same :class:`~kafkatool.log.recovery.SegmentRecovery`
as the reference, field for field (the tests hold them equal).

How the bytes are read (measured, see benchmarks/results/history.md): small batches through a 1 MiB page-aligned
window filled with ``preadv`` (a page-aligned copy runs at ~10 GB/s, and the walk then hits the cache;
mmap page faults cost more than the copy); batches averaging over 16 KiB by one ``HDR``-byte ``pread`` per
batch, never touching the bytes in between (the compiled walk starts by hopping over a few headers, so a
segment of large batches is never copied at all). Verifying reads everything (the CRC needs it).

Consumers that need every batch (``index_verify`` checks on-disk entries against the log) get each
chunk of *valid* batches through ``observers``; memory is a function of the window and chunk sizes.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from kafkatool._accel import crc32c as _crc32c
from kafkatool._accel import speedups as _C
from kafkatool.constants import INT32_MAX
from kafkatool.errors import CorruptDataError, CorruptRecordError, InputError
from kafkatool.log.recovery.control import ControlFailure, check_control_batch, ensure_readable
from kafkatool.log.recovery.result import (
    SegmentRecovery,
    apply_control_failure,
    invalid_offset,
    offset_overflow,
    short_tail,
    size_below_overhead,
    torn,
    v2_too_small,
)
from kafkatool.record.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V2,
    NO_TIMESTAMP,
    SIZE_OFFSET,
)
from kafkatool.record.default_records import (
    ATTRIBUTES_OFFSET,
    BASE_OFFSET_OFFSET,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
)
from kafkatool.record.file_records import WalkEnd
from kafkatool.record.legacy_records import ENTRY_CRC_OFFSET, ENTRY_TIMESTAMP_OFFSET, RECORD_OVERHEAD_V0
from kafkatool.util import budget as _budget
from kafkatool.util.regular import open_regular

I64 = npt.NDArray[np.int64]
WINDOW = 1 << 20
HDR = PRODUCER_ID_OFFSET  # 43: a v2 header up to its maxTimestamp (a v1 message's timestamp ends before)
CHUNK_BATCHES = 32768  # most batches per numpy step (~140 bytes of arrays each; fewer on a small memory budget)
BYTES_PER_BATCH = 256  # what one batch of a step may cost, with room: the step fits the budget's cache share
HOP_ABOVE = 16 << 10  # average batch size above which hopping header to header beats the window copy
WINDOW_BELOW = 8 << 10  # ... and below which the window wins again
# With the compiled loops a hop costs one pread (~0.8 us here) and the window ~0.2 us per KiB copied: hopping
# wins from ~4 KiB batches (measured on 2, 4, 8 and 16 KiB batches; benchmarks/results/history.md).
HOP_ABOVE_C = 6 << 10
WINDOW_BELOW_C = 3 << 10
# Headers per compiled hopping step, at most (and no more than a numpy step's worth, which the memory budget
# bounds): each step goes back to Python for its rules and observers (~12 us a step), so a step is large, but its
# 43-byte headers stay below 1 MiB (util/heap's mmap threshold: a larger buffer would be mapped afresh each step).
HOPS_C = 16384
# The compiled walk starts by hopping over this many headers: with large batches (the common case) it never copies
# a window at all; with small ones it falls back to the window after them.
PROBE_HOPS_C = 64
_SIZE = struct.Struct(">i")
_POINT = 32  # an index point from _speedups.index_walk: four native int64
_U32 = struct.Struct(">I")
_ZEROS = bytes(HDR + 64)
_SPARE_WINDOWS: list[mmap.mmap] = []  # window buffers of finished walks, for the next one

# The first HDR bytes of every batch as v2 reads them (the fields of default_records.HEADER the rules use) and as
# v0/v1 read them (the message's timestamp: legacy_records.MESSAGE_HEADER_V1).
_V2 = np.dtype({"names": ["base", "size", "epoch", "magic", "attributes", "last_delta", "max_ts"],
                "formats": [">i8", ">i4", ">i4", "i1", ">i2", ">i4", ">i8"],
                "offsets": [BASE_OFFSET_OFFSET, LENGTH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, MAGIC_OFFSET,
                            ATTRIBUTES_OFFSET, LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET],
                "itemsize": HDR})
_LEGACY = np.dtype({"names": ["ts"], "formats": [">i8"], "offsets": [ENTRY_TIMESTAMP_OFFSET], "itemsize": HDR})


@dataclass(slots=True)
class BatchChunk:
    """Header fields of consecutive valid batches (numpy arrays of equal length)."""

    first_batch: int  # index of the first batch in the segment
    positions: I64
    sizes: I64  # sizeInBytes, log overhead included
    magic: npt.NDArray[np.int8]
    last_offsets: I64
    max_timestamps: I64  # batch.maxTimestamp(): -1 for magic 0


class ChunkObserver(Protocol):
    """Told each chunk of batches as the walk takes them. A chunk's arrays are valid only during ``feed``: the
    compiled walk refills the same arrays for the next chunk (copy what you keep)."""

    def feed(self, chunk: BatchChunk) -> None: ...


class _Walk:
    """FileLogInputStream's walk over a file descriptor, collecting each batch's first 43 bytes.

    Batches are contiguous from position 0, so positions are not collected: ``take`` derives them from
    the size fields of the copied headers (one list append less per batch).

    Stops like ``nextBatch``: silently when 17 bytes or fewer remain or a declared size runs past the
    end (a torn tail, dropped), with a corrupt-size error below 14. With ``verify`` each batch's CRC is
    checked on the way and the walk stops after the first bad one (``crc_failure`` = its index).
    """

    def __init__(self, fd: int, size: int, verify: bool, path: str | None = None) -> None:
        self.fd = fd
        self.path = path
        self.size = size
        self.limit = size - HEADER_SIZE_UP_TO_MAGIC
        self.verify = verify
        self.p = 0
        self.taken = 0  # position of the first batch not yet taken
        self.headers = bytearray()
        self.stop: WalkEnd | None = None
        self.bad_size: int | None = None
        self.crc_failure: tuple[int, int, int] | None = None  # (batch index, stored, computed)
        self.hop = _C is not None and not verify
        self.probe = self.hop
        self.hops = HOPS_C  # headers per hopping step after the probe
        if self.hop:
            _advise(fd, "POSIX_FADV_RANDOM")  # no readahead of the bytes we hop over
        # Page aligned: preadv copies at full speed. Reused from walk to walk: the first touch of a fresh
        # 1 MiB mapping is 256 page faults, about as long as walking a whole segment of large batches.
        size = WINDOW + len(_ZEROS)
        # MAP_PRIVATE: Python's default anonymous mapping is MAP_SHARED, and a spare window kept by a parent would
        # then be one buffer shared by every worker forked after it (reindex-time's jobs, spark-scan's local
        # pool): two walks filling the same window read each other's bytes.
        self._anon = _SPARE_WINDOWS.pop() if _SPARE_WINDOWS and len(_SPARE_WINDOWS[-1]) == size else \
            mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self._win = memoryview(self._anon)

    def close(self) -> None:
        self._win.release()
        if len(_SPARE_WINDOWS) < 2:
            _SPARE_WINDOWS.append(self._anon)
        else:
            self._anon.close()

    def step(self) -> None:
        """Advance by one window or one hopping step; sets ``stop`` when the walk is over."""
        if self.p >= self.limit:
            self._finish()
        elif self.hop:
            self._hops()
        else:
            self._window()
        if self.stop is None and self.p >= self.limit:
            self._finish()

    def _finish(self) -> None:
        p, size = self.p, self.size
        if p > size:  # only the last batch can run past the end: a torn tail, dropped silently
            declared = _SIZE.unpack_from(self.headers, len(self.headers) - HDR + SIZE_OFFSET)[0]
            p -= declared + LOG_OVERHEAD
            del self.headers[-HDR:]
            self.p = p
            self.stop = torn(declared, size - p, p)
        else:
            self.stop = short_tail(p, size - p)

    def _window(self) -> None:
        p, win, fd = self.p, self._win, self.fd
        got = os.preadv(fd, [win[:WINDOW]], p)
        at_eof = p + got >= self.size
        if got < WINDOW and not at_eof:
            raise InputError(f"the file ended at byte {p + got} while being read ({self.size} bytes expected)",
                             path=self.path)
        win[got:got + len(_ZEROS)] = _ZEROS  # headers read past the end of the file are zeros
        unpack = _SIZE.unpack_from
        hdr = self.headers
        n0 = len(hdr)
        min_size = RECORD_OVERHEAD_V0
        lp = 0
        s = min_size
        if self.verify:
            lp, s = self._window_verify(got, at_eof)
        else:
            # Batches whose header lies in the window; at the end of the file, every batch start.
            wl = got - HEADER_SIZE_UP_TO_MAGIC if at_eof else got - HDR
            r = _C.headers_walk(win, lp, wl, hdr) if _C is not None else None
            if r is not None:
                lp, s = r.position, r.size  # the compiled loop below
            # locals, not globals: this loop is the whole per-batch cost
            size_at, head, overhead = SIZE_OFFSET, HDR, LOG_OVERHEAD
            while lp < wl:
                s = unpack(win, lp + size_at)[0]
                if s < min_size:
                    break
                hdr += win[lp:lp + head]
                lp += s + overhead
        if s < min_size:
            self.bad_size = s
            self.p = p + lp
            self.stop = WalkEnd("corrupt", p + lp, self.size - p - lp, "", s)
            return
        n = (len(hdr) - n0) // HDR
        self.p = p + lp
        if not self.verify and n and lp > n * (HOP_ABOVE if _C is None else HOP_ABOVE_C):
            self.hop = True
            _advise(self.fd, "POSIX_FADV_RANDOM")  # no readahead of the bytes we hop over

    def _window_verify(self, got: int, at_eof: bool) -> tuple[int, int]:
        """The window walk with the CRC of every batch (``ensureValid``), whole batches only."""
        p, win = self.p, self._win
        unpack = _SIZE.unpack_from
        wl = got - HEADER_SIZE_UP_TO_MAGIC if at_eof else got - HDR
        lp = 0
        s = RECORD_OVERHEAD_V0
        while lp < wl:
            s = unpack(win, lp + SIZE_OFFSET)[0]
            if s < RECORD_OVERHEAD_V0:
                break
            e = lp + s + LOG_OVERHEAD
            if p + e > self.size:  # torn tail: _finish drops it
                self.headers += win[lp:lp + HDR]
                lp = e
                break
            if e > got and lp:
                break  # refill with this batch at the start of the window
            self.headers += win[lp:lp + HDR]
            if e > got:  # larger than the window (the streamed read reuses the window)
                stored, computed = self._crc_streamed(p, s + LOG_OVERHEAD, win[MAGIC_OFFSET])
            else:
                stored, computed = _crc(win, lp, e)
            lp = e
            if stored != computed:
                self.crc_failure = (len(self.headers) // HDR - 1, stored, computed)
                self.p = p + lp
                self.stop = WalkEnd("corrupt", p + lp, 0)  # replaced when the chunk is checked
                return lp, s
        return lp, s

    def _crc_streamed(self, start: int, size: int, magic: int) -> tuple[int, int]:
        """(stored, computed) CRC of a batch larger than the window, read through it in pieces."""
        head = os.pread(self.fd, ATTRIBUTES_OFFSET, start)
        v2 = (magic if magic < 128 else magic - 256) >= MAGIC_V2
        stored = _U32.unpack_from(head, CRC_OFFSET if v2 else ENTRY_CRC_OFFSET)[0]
        # CRC-32C from the v2 attributes; CRC-32 from the v0/v1 magic
        pos, end = start + (ATTRIBUTES_OFFSET if v2 else MAGIC_OFFSET), start + size
        crc = 0
        while pos < end:
            got = os.preadv(self.fd, [self._win[:min(WINDOW, end - pos)]], pos)
            if got <= 0:
                break
            piece = self._win[:got]
            crc = _crc32c.crc32c(piece, crc) if v2 else zlib.crc32(piece, crc)
            pos += got
        return stored, crc

    def _hops(self) -> None:
        """One HDR-byte pread per batch: for big batches the bytes in between are never read."""
        fd, pread, unpack = self.fd, os.pread, _SIZE.unpack_from
        p, limit = self.p, self.limit
        hdr = self.headers
        start, n = p, 0
        hops = self.hops
        # The first step probes: after PROBE_HOPS_C headers of small batches it stops, for the window.
        probe = PROBE_HOPS_C if self.probe else 0
        self.probe = False
        r = _C.hop_walk(fd, p, limit, hops, hdr, probe, WINDOW_BELOW_C) if _C is not None else None
        if r is not None and (r.headers or r.size < RECORD_OVERHEAD_V0):
            p, n, s = r.position, r.headers, r.size
            if s < RECORD_OVERHEAD_V0:
                self.bad_size = s
                self.p = p
                self.stop = WalkEnd("corrupt", p, self.size - p, "", s)
                return
            self.p = p
            if (n == hops or n == probe) and p - start < n * WINDOW_BELOW_C:
                self.hop = False
                _advise(self.fd, "POSIX_FADV_SEQUENTIAL")
            return
        # The Python loop (also where the compiled one could not read: it raises what os.pread raises).
        while p < limit and n < 64:
            h = pread(fd, HDR, p)
            if len(h) < HDR:
                h += _ZEROS[:HDR - len(h)]
            s = unpack(h, SIZE_OFFSET)[0]
            if s < RECORD_OVERHEAD_V0:
                self.bad_size = s
                self.p = p
                self.stop = WalkEnd("corrupt", p, self.size - p, "", s)
                return
            hdr += h
            p += s + LOG_OVERHEAD
            n += 1
        self.p = p
        if n == 64 and p - start < n * WINDOW_BELOW:
            self.hop = False
            _advise(self.fd, "POSIX_FADV_SEQUENTIAL")

    @property
    def pending(self) -> int:
        return len(self.headers) // HDR

    def take(self) -> tuple[I64, bytearray]:
        """Positions and headers of the batches walked since the last take."""
        h = self.headers
        sizes = np.frombuffer(h, dtype=_V2)["size"].astype(np.int64) + LOG_OVERHEAD
        q = np.empty(len(sizes), np.int64)
        if len(sizes):
            q[0] = self.taken
            np.cumsum(sizes[:-1], out=q[1:])
            q[1:] += self.taken
            self.taken = int(q[-1] + sizes[-1])
        self.headers = bytearray()
        return q, h


def _advise(fd: int, name: str) -> None:
    advice = getattr(os, name, None)
    if advice is not None:
        try:
            os.posix_fadvise(fd, 0, 0, advice)
        except OSError:
            pass


def _crc(win: memoryview, lp: int, e: int) -> tuple[int, int]:
    """(stored, computed) CRC as ``ensureValid`` checks it: CRC-32C from the attributes for magic >= 2,
    CRC-32 from the magic byte for v0/v1 (and negative magics, which FileLogInputStream reads as legacy)."""
    if 2 <= win[lp + MAGIC_OFFSET] < 128:
        return _U32.unpack_from(win, lp + CRC_OFFSET)[0], _crc32c.crc32c(win[lp + ATTRIBUTES_OFFSET:e])
    return _U32.unpack_from(win, lp + ENTRY_CRC_OFFSET)[0], zlib.crc32(win[lp + MAGIC_OFFSET:e])


class _Builder:
    """The index state of ``LogSegment.recover`` carried from chunk to chunk."""

    def __init__(self, base_offset: int, interval: int, latest_epoch: int) -> None:
        self.base = base_offset
        self.interval = interval
        self.latest_epoch = latest_epoch
        self.last_index_entry = 0
        self.max_ts = NO_TIMESTAMP
        self.max_ts_offset = base_offset
        self.time_last_ts = NO_TIMESTAMP
        self.time_last_offset = base_offset
        self.index_offsets: list[I64] = []
        self.index_positions: list[I64] = []
        self.index_count = 0
        self.index_last: int | None = None
        self.time_ts: list[I64] = []
        self.time_offsets: list[I64] = []
        self.time_count = 0
        self.epochs: list[tuple[int, int]] = []

    def feed(self, q: I64, last: I64, mts: I64) -> tuple[int, str, int, int] | None:
        """Apply the rules to one chunk; on an ``InvalidOffsetException`` return (batch, what, offset, last)."""
        n = len(q)
        # Running max timestamp and the offset of the first batch that reached it (strictly greater wins).
        prev_max = np.maximum.accumulate(np.concatenate(([self.max_ts], mts)))
        run_max = prev_max[1:]
        is_new = mts > prev_max[:-1]
        src = np.maximum.accumulate(np.where(is_new, np.arange(n), -1))
        run_off = np.where(src >= 0, last[np.maximum(src, 0)], self.max_ts_offset)
        # Index points: validBytes - lastIndexEntry > interval, lastIndexEntry = the last indexed position.
        k = np.zeros(0, np.int64)
        i = int(np.searchsorted(q, self.last_index_entry + self.interval, side="right"))
        if i < n:
            # Each batch from i on is a point when each next one starts more than the interval after it (the common
            # case: batches larger than the interval): one pass, not a binary search per batch.
            if bool((np.diff(q[i:]) > self.interval).all()):
                k = np.arange(i, n, dtype=np.int64)
            else:
                nxt = np.searchsorted(q, q + self.interval, side="right")
                points: list[int] = []
                following = nxt.tolist()
                while i < n:
                    points.append(i)
                    i = following[i]
                k = np.array(points, np.int64)
        failure: tuple[int, str, int, int] | None = None
        if len(k):
            failure = self.points(last[k], q[k], run_max[k], run_off[k])
            if failure is not None:
                failure = (int(k[failure[0]]), failure[1], failure[2], failure[3])
        if failure is not None:
            # recover() had already folded batch k into maxTimestampSoFar when the append threw.
            self.max_ts = int(run_max[failure[0]])
            self.max_ts_offset = int(run_off[failure[0]])
            return failure
        if n:
            self.max_ts = int(run_max[-1])
            self.max_ts_offset = int(run_off[-1])
        return None

    def points(self, offs: I64, positions: I64, ts_c: I64, off_c: I64) -> tuple[int, str, int, int] | None:
        """The index points of a chunk (last offsets, positions, the running max timestamp and its offset at each):
        ``OffsetIndex.append`` then ``TimeIndex.maybeAppend`` at each; on an ``InvalidOffsetException``, what the
        points before it appended is kept and (point, what, offset, last) returned."""
        # OffsetIndex.append needs strictly increasing offsets.
        prev = np.concatenate(([self.index_last if self.index_last is not None else offs[0] - 1], offs[:-1]))
        bad_off = offs <= prev
        # TimeIndex.maybeAppend(runMax, runOff) at each point: appends when the timestamp rises, but
        # rejects an offset below the last *appended* entry's even when it does not append.
        appended = ts_c > np.concatenate(([self.time_last_ts], ts_c[:-1]))
        last_app = np.maximum.accumulate(np.where(appended, np.arange(len(offs)), -1))
        before = np.concatenate(([-1], last_app[:-1]))
        prev_off = np.where(before >= 0, off_c[np.maximum(before, 0)], self.time_last_offset)
        has_entries = (before >= 0) | (self.time_count > 0)
        bad_time = has_entries & (off_c < prev_off)
        bad = bad_off | bad_time
        n_off = len(offs)
        failure: tuple[int, str, int, int] | None = None
        if bad.any():
            j = int(np.argmax(bad))
            if bad_off[j]:
                failure = (j, "offset index", int(offs[j]), int(prev[j]))
                n_off = j
            else:
                failure = (j, "time index", int(off_c[j]), int(prev_off[j]))
                n_off = j + 1
            appended = appended[:j]
        if n_off:
            self.index_offsets.append(offs[:n_off])
            self.index_positions.append(positions[:n_off])
            self.index_last = int(offs[n_off - 1])
            self.last_index_entry = int(positions[n_off - 1])
        if appended.any():
            sel = np.flatnonzero(appended)
            self.time_ts.append(ts_c[sel])
            self.time_offsets.append(off_c[sel])
            self.time_last_ts = int(ts_c[sel[-1]])
            self.time_last_offset = int(off_c[sel[-1]])
        # slot numbers as the exception reports them
        self.index_count += n_off - (1 if failure is not None and failure[1] == "time index" else 0)
        self.time_count += int(appended.sum())
        return failure

    def feed_compiled(self, hdr: bytearray, pos0: int, verify: bool, arrays: tuple[I64, I64, npt.NDArray[np.int8],
                      I64, I64] | None) -> tuple[int, int, int, int] | None:
        """:meth:`feed` and :meth:`feed_epochs` of the batches whose headers ``hdr`` holds, the first at ``pos0``,
        with recover_fast's per-batch checks, by ``_speedups.recover_rules``: (batches, end position, last offset,
        magics bit set), ``arrays`` filled with the chunk's fields; None (nothing changed) where recover() does
        something else than append for one of them: the numpy rules must run."""
        assert _C is not None
        idx, tim, eps = bytearray(), bytearray(), bytearray()
        r = _C.recover_rules(hdr, pos0, self.base, self.interval, int(verify), self.last_index_entry, self.max_ts,
                             self.max_ts_offset, self.time_last_ts, self.time_last_offset, self.index_last,
                             self.index_count, self.time_count, self.latest_epoch, idx, tim, eps, arrays)
        if r is None:
            return None
        self._compiled_state(r[4:], idx, tim, eps)
        return r.batches, r.end, r.last_offset, r.magics

    def hop_compiled(self, walk: _Walk, probe: int,
                     arrays: tuple[I64, I64, npt.NDArray[np.int8], I64, I64] | None) -> Any:
        """:meth:`feed_compiled` of the batches a hopping walk reads, in one compiled loop with the walk
        (``_speedups.hop_rules``): each header goes under the rules as soon as it is read, from ``walk.p`` on, at
        most ``walk.hops`` of them (``probe``: stop after so many small ones). Its HopRules (batches, end, why, ...),
        with the state and entries of every batch it took; None where it could not run (nothing changed)."""
        assert _C is not None
        idx, tim, eps = bytearray(), bytearray(), bytearray()
        r = _C.hop_rules(walk.fd, walk.p, walk.limit, walk.size, walk.hops, probe, WINDOW_BELOW_C, self.base,
                         self.interval, 0, self.last_index_entry, self.max_ts, self.max_ts_offset, self.time_last_ts,
                         self.time_last_offset, self.index_last, self.index_count, self.time_count,
                         self.latest_epoch, idx, tim, eps, arrays)
        if r is not None:
            self._compiled_state(r[5:], idx, tim, eps)
        return r

    def _compiled_state(self, state: Sequence[Any], idx: bytearray, tim: bytearray, eps: bytearray) -> None:
        """The state a compiled call returned (lastIndexEntry .. latest epoch), and the entries it appended."""
        (self.last_index_entry, self.max_ts, self.max_ts_offset, self.time_last_ts, self.time_last_offset,
         self.index_last, self.index_count, self.time_count, self.latest_epoch) = state
        if idx:
            offsets, positions = _columns(idx)
            self.index_offsets.append(offsets)
            self.index_positions.append(positions)
        if tim:
            timestamps, offsets = _columns(tim)
            self.time_ts.append(timestamps)
            self.time_offsets.append(offsets)
        if eps:
            epochs, bases = _columns(eps)
            self.epochs.extend(zip(epochs.tolist(), bases.tolist(), strict=True))

    def feed_epochs(self, epochs: I64, base_offsets: I64, magic: npt.NDArray[np.int8]) -> None:
        """Leader-epoch cache: assign (epoch, baseOffset) for v2 batches with epoch >= 0 above the latest."""
        ep = np.where(magic >= MAGIC_V2, epochs, -1)
        prev = np.maximum.accumulate(np.concatenate(([self.latest_epoch], ep)))
        new = (ep >= 0) & (ep > prev[:-1])
        for i in np.flatnonzero(new).tolist():
            self.epochs.append((int(ep[i]), int(base_offsets[i])))
        self.latest_epoch = int(prev[-1])


def _columns(pairs: bytearray) -> tuple[I64, I64]:
    """The two columns of the native int64 pairs a compiled walk appended (strided views of ``pairs``: the
    caller's ``_concat`` copies them out)."""
    p = np.frombuffer(pairs, np.int64).reshape(-1, 2)
    return p[:, 0], p[:, 1]


def _magics(bits: int) -> list[int]:
    """The magics of a compiled walk's bit set (bit m: magic m seen)."""
    return [m for m in (0, 1, 2) if bits >> m & 1]


def _first_control_failure(fd: int, path: str, q: I64, sizes: I64, h: npt.NDArray[np.void]) -> ControlFailure | None:
    """The first control batch of a chunk whose transaction marker the producer-state update rejects."""
    ctrl = np.flatnonzero((h["magic"] >= MAGIC_V2) & ((h["attributes"] & CONTROL_FLAG_MASK) != 0))
    for i in ctrl.tolist():
        pos, n = int(q[i]), int(sizes[i])
        ensure_readable(n, path, pos)
        failure = check_control_batch(os.pread(fd, n, pos), pos)
        if failure is not None:
            return failure
    return None


def _concat(parts: list[I64]) -> I64:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def recover_fast(path: str, size: int | None, base_offset: int, *, index_interval_bytes: int,
                 verify: bool = False, latest_epoch: int = -1,
                 observers: Sequence[ChunkObserver] = ()) -> SegmentRecovery:
    """``LogSegment.recover`` of the first ``size`` bytes of ``path`` (see the module doc), never past the size
    the file has when opened (None: that size)."""
    try:
        # A regular file only; without access-time updates where the caller may (the file's owner or root): a
        # hop is one small read per batch, and the atime check of each read is ~7% of its kernel time (perf,
        # HDR-byte preads on a 100 MB segment). Others open the file plainly (O_NOATIME is refused with EPERM).
        file = open_regular(path, noatime=True)
    except OSError as e:
        raise InputError(f"cannot open: {e.strerror}", path=path) from None
    fd = file.fd
    size = file.size if size is None else min(size, file.size)
    out = SegmentRecovery(base_offset, size)
    try:
        _advise(fd, "POSIX_FADV_SEQUENTIAL")
        walk = _Walk(fd, size, verify, path)
    except BaseException:
        file.close()
        raise
    b = _Builder(base_offset, index_interval_bytes, latest_epoch)
    step = max(1024, min(CHUNK_BATCHES, _budget.cache_bytes() // BYTES_PER_BATCH))
    walk.hops = min(HOPS_C, step)
    batches = 0
    last_offset: int | None = None
    magics: set[int] = set()
    compiled = _C is not None  # the rules of each step's headers by recover_rules, until a batch needs numpy's
    fused = compiled and walk.hop  # hopping steps walk and apply the rules in one compiled loop (hop_rules)
    hop_arrays = None
    try:
        while True:
            # (with the compiled rules still on, and no headers of a step waiting for the numpy rules)
            if fused and compiled and walk.hop and not walk.headers and walk.p < walk.limit:
                if observers and hop_arrays is None:
                    k = walk.hops
                    hop_arrays = (np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.int8),
                                  np.empty(k, np.int64), np.empty(k, np.int64))
                hr = b.hop_compiled(walk, PROBE_HOPS_C if walk.probe else 0, hop_arrays)
                walk.probe = False
                if hr is not None:
                    n = hr.batches
                    walk.p = walk.taken = hr.end
                    if n:
                        last_offset = hr.last_offset
                        magics.update(_magics(hr.magics))
                        if hop_arrays is not None:
                            q, sz, mg, lo, ts = hop_arrays
                            chunk = BatchChunk(batches, q[:n], sz[:n], mg[:n], lo[:n], ts[:n])
                            for o in observers:
                                o.feed(chunk)
                        batches += n
                    if hr.why == 0:
                        continue  # more hops
                    if hr.why == 2:  # small batches: the window walk from here
                        walk.hop = False
                        _advise(fd, "POSIX_FADV_SEQUENTIAL")
                        continue
                # At the limit, or at a batch the compiled loop leaves to the walk below (a torn tail, a corrupt
                # size, rules numpy must apply): the walk takes it from here as it would have.
                fused = False
            walk.step()
            if compiled and walk.pending and walk.crc_failure is None:
                hdr = walk.headers
                n = len(hdr) // HDR
                arrays = (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int8), np.empty(n, np.int64),
                          np.empty(n, np.int64)) if observers else None
                r = b.feed_compiled(hdr, walk.taken, verify, arrays)
                if r is None:
                    compiled = False  # this step's headers stay for the numpy rules below, and so do the rest
                else:
                    walk.headers = bytearray()
                    walk.taken = r[1]
                    last_offset = r[2]
                    magics.update(_magics(r[3]))
                    if arrays is not None:
                        chunk = BatchChunk(batches, *arrays)
                        for o in observers:
                            o.feed(chunk)
                    batches += n
            if walk.stop is None and walk.pending < step:
                continue
            q, hdr = walk.take()
            n = len(q)
            p = walk.p
            stop = walk.stop
            if walk.bad_size is not None:
                out.error = size_below_overhead(walk.bad_size, path, p)
                stop = WalkEnd("corrupt", p, size - p, out.error.message, walk.bad_size)
            if n:
                h = np.frombuffer(hdr, dtype=_V2)
                magic = h["magic"].astype(np.int8)
                sizes = h["size"].astype(np.int64) + LOG_OVERHEAD
                base_off = h["base"].astype(np.int64)
                is_v2 = magic >= MAGIC_V2
                last = np.where(is_v2, base_off + h["last_delta"], base_off)
                legacy_ts = np.frombuffer(hdr, dtype=_LEGACY)["ts"]
                # LegacyRecord.timestamp(): NO_TIMESTAMP for magic 0, else the (wrapper's) own field
                mts = np.where(is_v2, h["max_ts"], np.where(magic == MAGIC_V0, NO_TIMESTAMP, legacy_ts))
                # Per-batch checks in recover()'s order: ensureValid (v2 size, CRC), ensureOffsetInRange.
                rel = last - base_offset
                bad = (is_v2 & (sizes < RECORD_BATCH_OVERHEAD)) | (rel < 0) | (rel > INT32_MAX)
                first_bad = int(np.argmax(bad)) if bad.any() else n
                crc_index = walk.crc_failure[0] if walk.crc_failure is not None else n
                if min(first_bad, crc_index) < n:
                    i = min(first_bad, crc_index)
                    bp = int(q[i])
                    if is_v2[i] and sizes[i] < RECORD_BATCH_OVERHEAD:
                        out.error = v2_too_small(int(sizes[i]), path, bp)
                    elif i == crc_index and walk.crc_failure is not None:
                        _, stored, computed = walk.crc_failure
                        out.error = CorruptRecordError(
                            f"Record is corrupt (stored crc = {stored}, computed crc = {computed})", path=path,
                            position=bp)
                    else:
                        out.error = offset_overflow(int(last[i]), base_offset, path, bp)
                        out.fatal = "offset-overflow"
                    q, sizes, magic, last, mts, base_off = q[:i], sizes[:i], magic[:i], last[:i], mts[:i], base_off[:i]
                    h = h[:i]
                    p = bp
                    stop = WalkEnd("corrupt", p, size - p, out.error.message)
                # With verify, the producer-state step of the (rare) control batches: read each one whole.
                control: ControlFailure | None = None
                if verify:
                    control = _first_control_failure(fd, path, q, sizes, h)
                    if control is not None:
                        c = int(np.searchsorted(q, control.position)) + 1  # keep the control batch itself
                        q, sizes, magic, last, mts = q[:c], sizes[:c], magic[:c], last[:c], mts[:c]
                        base_off, h = base_off[:c], h[:c]
                # The index rules on arrays.
                failure = b.feed(q, last, mts)
                if failure is not None:
                    k, what, off, prev = failure
                    slot = b.index_count if what == "offset index" else b.time_count
                    p = int(q[k])
                    out.error = invalid_offset(off, slot, prev, what, path, p)
                    out.fatal = "invalid-offset"
                    stop = WalkEnd("corrupt", p, size - p, out.error.message)
                    magics.update(np.unique(magic[:k + 1]).tolist())  # recover() saw batch k's header
                    q, sizes, magic, last, mts, base_off = q[:k], sizes[:k], magic[:k], last[:k], mts[:k], base_off[:k]
                    h = h[:k]
                elif control is not None:  # after the batch's index entries and epoch, as updateProducerState
                    apply_control_failure(out, control, path, size)
                    stop = out.stop
                    p = control.end
                if len(q):
                    b.feed_epochs(h["epoch"].astype(np.int64), base_off, magic)
                    magics.update(np.unique(magic).tolist())
                    last_offset = int(last[-1])
                    chunk = BatchChunk(batches, q, sizes, magic, last, mts)
                    for o in observers:
                        o.feed(chunk)
                    batches += len(q)
            if stop is not None:
                out.stop = stop
                out.valid_bytes = p
                break
    finally:
        walk.close()
        file.close()
    out.batches = batches
    out.last_offset = last_offset
    out.max_timestamp = b.max_ts
    out.offset_of_max_timestamp = b.max_ts_offset
    out.epochs = b.epochs
    out.magics = magics
    # The roll/close entry, after the truncation; an offset below the last entry's throws here too.
    if out.completes and b.time_count and b.max_ts_offset < b.time_last_offset:
        out.error = invalid_offset(b.max_ts_offset, b.time_count, b.time_last_offset, "time index", path,
                                   out.valid_bytes)
        out.fatal, out.control = "invalid-offset", None  # LogLoader empties the segment, marker and all
    elif out.completes and b.max_ts > b.time_last_ts:
        b.time_ts.append(np.array([b.max_ts], np.int64))
        b.time_offsets.append(np.array([b.max_ts_offset], np.int64))
    out.index_offsets = _concat(b.index_offsets)
    out.index_positions = _concat(b.index_positions)
    out.time_timestamps = _concat(b.time_ts)
    out.time_offsets = _concat(b.time_offsets)
    return out


class SegmentIndexer:
    """``LogSegment.recover``'s indexes of a segment being written, fed its bytes as they are written: the same
    :class:`SegmentRecovery` (index arrays, last offset, max timestamp) that :func:`recover_fast` builds by walking
    the finished file, without reading it back (the converter's ``SegmentWriter``; the tests hold the two equal).

    Each :meth:`feed` must hold whole batches. What a walk of the file would stop at is an error here
    (:class:`CorruptDataError`, position in the segment): a size below the minimum, a batch running past the bytes
    written, a v2 batch below its header size, an offset outside the segment's relative range, an index append
    ``InvalidOffsetException`` rejects. CRCs are not checked (the writer computed them)."""

    def __init__(self, base_offset: int, index_interval_bytes: int) -> None:
        self.base = base_offset
        self.size = 0  # bytes fed
        self._b = _Builder(base_offset, index_interval_bytes, -1)
        self._headers = bytearray()
        self._taken = 0  # position of the first batch whose header is pending
        self._step = max(1024, min(CHUNK_BATCHES, _budget.cache_bytes() // BYTES_PER_BATCH))
        self._batches = 0
        self._last_offset: int | None = None
        self._magics: set[int] = set()
        self._points = bytearray()  # index points the compiled walk found, not yet appended: _POINT bytes each

    def feed(self, data: bytes | memoryview) -> None:
        """The next bytes of the segment: whole batches."""
        n = len(data)
        if _C is not None and not self._headers and self._compiled(data):
            self.size += n
            self._taken = self.size
            return
        hdr = self._headers
        lp = 0
        if _C is not None and n > HDR:
            r = _C.headers_walk(data, 0, n - HDR, hdr)  # every batch with HDR bytes after its start
            if r is not None:
                lp = r.position
        # The last few batches (and every batch without the extension), their headers padded with zeros.
        view = memoryview(data)
        unpack = _SIZE.unpack_from
        while lp < n:
            if n - lp < LOG_OVERHEAD:
                raise CorruptDataError(f"{n - lp} bytes that are not a batch end what was written",
                                       position=self.size + lp)
            s = unpack(view, lp + SIZE_OFFSET)[0]
            if s < RECORD_OVERHEAD_V0:
                raise size_below_overhead(s, None, self.size + lp)
            if lp + HDR <= n:
                hdr += view[lp:lp + HDR]
            else:
                hdr += view[lp:n]
                hdr += _ZEROS[:lp + HDR - n]
            lp += s + LOG_OVERHEAD
        if lp != n:
            raise CorruptDataError(f"a batch runs {lp - n} bytes past what was written", position=self.size + lp)
        self._flush_points()  # the Python walk from here on: its rules need the compiled walk's points applied
        self.size += n
        if len(hdr) >= self._step * HDR:
            self._flush()

    def _compiled(self, data: bytes | memoryview) -> bool:
        """:meth:`feed` by ``_speedups.index_walk``: False (nothing changed) where the Python walk must run."""
        assert _C is not None
        b = self._b
        r = _C.index_walk(data, self.size, self.base, b.interval, b.last_index_entry, b.max_ts, b.max_ts_offset,
                          self._points)
        if r is None:
            return False
        batches, last_offset, max_ts, max_ts_offset, magics, b.last_index_entry = r
        if batches:
            b.max_ts, b.max_ts_offset = max_ts, max_ts_offset
            self._batches += batches
            self._last_offset = last_offset
            self._magics.update(_magics(magics))
        if len(self._points) >= self._step * _POINT:
            self._flush_points()
        return True

    def _flush_points(self) -> None:
        """The index appends at the points the compiled walks found (their checks, a step of points at a time)."""
        pts = self._points
        if not pts:
            return
        self._points = bytearray()
        b = self._b
        p = np.frombuffer(pts, np.int64).reshape(-1, 4)
        failure = b.points(p[:, 0], p[:, 1], p[:, 2], p[:, 3])
        if failure is not None:
            j, what, off, prev = failure
            raise invalid_offset(off, b.index_count if what == "offset index" else b.time_count, prev, what,
                                 None, int(p[j, 1]))

    def _flush(self) -> None:
        hdr = self._headers
        if not hdr:
            return
        self._headers = bytearray()
        h = np.frombuffer(hdr, dtype=_V2)
        sizes = h["size"].astype(np.int64) + LOG_OVERHEAD
        q = np.empty(len(sizes), np.int64)
        q[0] = self._taken
        np.cumsum(sizes[:-1], out=q[1:])
        q[1:] += self._taken
        magic = h["magic"].astype(np.int8)
        base_off = h["base"].astype(np.int64)
        is_v2 = magic >= MAGIC_V2
        last = np.where(is_v2, base_off + h["last_delta"], base_off)
        legacy_ts = np.frombuffer(hdr, dtype=_LEGACY)["ts"]
        mts = np.where(is_v2, h["max_ts"], np.where(magic == MAGIC_V0, NO_TIMESTAMP, legacy_ts))
        rel = last - self.base
        bad = (is_v2 & (sizes < RECORD_BATCH_OVERHEAD)) | (rel < 0) | (rel > INT32_MAX)
        if bad.any():
            i = int(np.argmax(bad))
            if is_v2[i] and sizes[i] < RECORD_BATCH_OVERHEAD:
                raise v2_too_small(int(sizes[i]), None, int(q[i]))
            raise offset_overflow(int(last[i]), self.base, None, int(q[i]))
        failure = self._b.feed(q, last, mts)
        if failure is not None:
            k, what, off, prev = failure
            raise invalid_offset(off, self._b.index_count if what == "offset index" else self._b.time_count, prev,
                                 what, None, int(q[k]))
        self._batches += len(q)
        self._last_offset = int(last[-1])
        self._magics.update(np.unique(magic).tolist())
        self._taken = int(q[-1] + sizes[-1])

    def finish(self) -> SegmentRecovery:
        """The indexes of everything fed, with recovery's final time entry (the roll's ``maybeAppend``)."""
        self._flush_points()
        self._flush()
        b = self._b
        out = SegmentRecovery(self.base, self.size)
        out.valid_bytes = self.size
        out.stop = short_tail(self.size, 0)
        out.batches = self._batches
        out.last_offset = self._last_offset
        out.max_timestamp = b.max_ts
        out.offset_of_max_timestamp = b.max_ts_offset
        out.magics = set(self._magics)
        if b.time_count and b.max_ts_offset < b.time_last_offset:
            raise invalid_offset(b.max_ts_offset, b.time_count, b.time_last_offset, "time index", None, self.size)
        if b.max_ts > b.time_last_ts:
            b.time_ts.append(np.array([b.max_ts], np.int64))
            b.time_offsets.append(np.array([b.max_ts_offset], np.int64))
        out.index_offsets = _concat(b.index_offsets)
        out.index_positions = _concat(b.index_positions)
        out.time_timestamps = _concat(b.time_ts)
        out.time_offsets = _concat(b.time_offsets)
        return out
