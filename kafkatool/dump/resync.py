"""Where ``kafkatool dump`` goes on after the bytes Kafka's reader stops at: whether a whole batch is there,
why bytes cannot be the start of a batch cut short by a crash (a torn tail), the scan for the next CRC-valid
batch (bounded, window by window), the ``from_offset`` seek through the ``.index``, and a legacy wrapper's
base offset as Kafka reports it."""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

from kafkatool._accel import crc32c as _crc32c
from kafkatool.constants import INT32_MAX
from kafkatool.dump.events import BatchEvent
from kafkatool.errors import KafkaToolError
from kafkatool.log.index import load_offset_lookup
from kafkatool.log.layout import INDEX_SUFFIX, LOG_SUFFIX
from kafkatool.record.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    OFFSET_OFFSET,
    SIZE_OFFSET,
)
from kafkatool.record.default_records import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET,
    RECORD_BATCH_OVERHEAD,
)
from kafkatool.record.file_records import FileRecords
from kafkatool.record.legacy_records import ENTRY_ATTRIBUTES_OFFSET, ENTRY_CRC_OFFSET, RECORD_OVERHEAD_V0

# A position where a batch could start: any offset, a size of at least 14 below 2^31, then magic 0..2 at
# byte 16. Used only to pick candidates for the resync scan; each one is then confirmed by its CRC.
_CANDIDATE = re.compile(
    rb"(?s)(?=.{8}(?:[\x01-\x7f]...|\x00[\x01-\xff]..|\x00\x00[\x01-\xff].|\x00\x00\x00[\x0e-\xff])....[\x00-\x02])")

# The largest batch a broker could have written: one produce request (socket.request.max.bytes, 100 MiB by
# default) raised tenfold. A size field declaring more is not a batch cut short by a crash.
MAX_PLAUSIBLE_BATCH = 1 << 30


def batch_fits(buf: Any, at: int, file_end: int) -> bool:
    """Is there a whole batch (by its size field) at ``at`` in ``buf[:file_end]``?"""
    if file_end - at <= HEADER_SIZE_UP_TO_MAGIC:
        return False
    size: int = LOG_HEADER.unpack_from(buf, at)[1]
    return size >= RECORD_OVERHEAD_V0 and at + LOG_OVERHEAD + size <= file_end


def not_a_batch_start(buf: Any, at: int, end: int, last_offset: int, base_offset: int | None) -> str | None:
    """Why the bytes at ``at`` (the first that are not a whole batch) cannot be the start of a batch cut short
    by a crash; None if they can (a torn tail). Only the bytes present are judged: the offset must follow the
    last batch's and fit the segment, the size must be one a broker can have written, the magic 0..2, the
    codec one Kafka knows."""
    n = end - at
    if n >= SIZE_OFFSET:
        offset = int.from_bytes(buf[at + OFFSET_OFFSET:at + SIZE_OFFSET], "big", signed=True)
        if offset < 0:
            return f"offset field {offset}"
        if last_offset >= 0 and offset <= last_offset:
            return f"offset {offset} does not follow the last batch's {last_offset}"
        if base_offset is not None and not 0 <= offset - base_offset <= INT32_MAX:
            return f"offset {offset} is outside the segment's {base_offset}..{base_offset + INT32_MAX}"
    if n < LOG_OVERHEAD:
        return None
    size = LOG_HEADER.unpack_from(buf, at)[1]
    if size < RECORD_OVERHEAD_V0:
        return f"size field {size}, below Kafka's minimum of {RECORD_OVERHEAD_V0}"
    if size + LOG_OVERHEAD > MAX_PLAUSIBLE_BATCH:
        return f"size field declares {size + LOG_OVERHEAD} bytes, more than any broker accepts in a batch"
    if n < HEADER_SIZE_UP_TO_MAGIC:
        return None
    magic = buf[at + MAGIC_OFFSET]
    if magic > MAGIC_V2:
        return f"magic byte {magic}"
    if magic == MAGIC_V2:
        if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            return f"{size + LOG_OVERHEAD} bytes is less than a v2 batch header"
        low = at + ATTRIBUTES_OFFSET + 1  # the low byte of the (big-endian int16) attributes: the codec bits
        if n >= LAST_OFFSET_DELTA_OFFSET and buf[low] & COMPRESSION_CODEC_MASK > 4:
            return f"codec {buf[low] & COMPRESSION_CODEC_MASK}"
    elif n > ENTRY_ATTRIBUTES_OFFSET and (buf[at + ENTRY_ATTRIBUTES_OFFSET] & COMPRESSION_CODEC_MASK > 3
                                          or buf[at + ENTRY_ATTRIBUTES_OFFSET] & 0xF0):
        return f"v{magic} attributes 0x{buf[at + ENTRY_ATTRIBUTES_OFFSET]:02x}"
    return None

def valid_batch_at(buf: Any, q: int, end: int, fr: FileRecords | None = None) -> bool:
    """Does a complete batch with a valid CRC start at ``q``? (v2: CRC-32C; v0/v1: CRC-32).

    With ``fr``, a candidate larger than the mapped-page window (in damaged data the size field is often
    garbage) is checksummed window by window, its pages handed back after each."""
    if end - q <= HEADER_SIZE_UP_TO_MAGIC:
        return False
    _, size = LOG_HEADER.unpack_from(buf, q)
    if size < RECORD_OVERHEAD_V0 or q + LOG_OVERHEAD + size > end:
        return False
    magic = buf[q + MAGIC_OFFSET]
    stop = q + LOG_OVERHEAD + size
    if magic == MAGIC_V2:
        if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            return False
        stored = int.from_bytes(buf[q + CRC_OFFSET:q + ATTRIBUTES_OFFSET], "big")
        return _crc(_crc32c.crc32c, buf, q + ATTRIBUTES_OFFSET, stop, fr) == stored
    if magic > MAGIC_V2:
        return False
    stored = int.from_bytes(buf[q + ENTRY_CRC_OFFSET:q + MAGIC_OFFSET], "big")
    return _crc(zlib.crc32, buf, q + MAGIC_OFFSET, stop, fr) == stored


def _crc(fn: Any, buf: Any, start: int, stop: int, fr: FileRecords | None) -> int:
    if fr is None or stop - start <= fr.window:
        return int(fn(buf[start:stop]))
    value = 0
    for s in range(start, stop, fr.window):
        e = min(stop, s + fr.window)
        value = fn(buf[s:e], value)
        fr.drop_range(s, e)
    return int(value)


_LOOKAHEAD = HEADER_SIZE_UP_TO_MAGIC  # bytes a candidate match reads: offset, size, epoch/crc, magic


def find_next_batch(buf: Any, start: int, end: int, limit: int, fr: FileRecords | None = None) -> int | None:
    """The first position in ``[start, start + limit)`` where a CRC-valid batch starts, else None.

    With ``fr`` (the mapped file ``buf`` belongs to) the scan goes window by window (the memory budget's
    mapped-page window) and hands the pages it has scanned back, so a long resync scan holds no more than
    one window resident, whatever ``limit`` is."""
    stop = min(end, start + limit)
    step = fr.window if fr is not None else stop - start
    s = start
    while s < stop:
        w_end = min(stop, s + max(step, 1))
        for m in _CANDIDATE.finditer(buf, s, min(end, w_end + _LOOKAHEAD)):
            q = m.start()
            if q >= w_end:
                break
            if valid_batch_at(buf, q, end, fr):
                return q
        s = w_end
        if fr is not None:
            fr.drop_before(s)
    return None


def seek_position(fr: FileRecords, log: Path, base: int, target: int) -> int:
    """Where to start walking for a ``from_offset``: the ``.index`` entry at or below ``target`` (Kafka's
    ``OffsetIndex.lookup``), only if a CRC-valid batch starts there; else 0."""
    index = log.with_name(log.name[:-len(LOG_SUFFIX)] + INDEX_SUFFIX) if log.name.endswith(LOG_SUFFIX) else None
    if index is None or not index.is_file():
        return 0
    try:
        lookup = load_offset_lookup(index, base)
    except KafkaToolError:
        return 0
    pos = lookup.position_for(target)
    if 0 < pos < fr.size and valid_batch_at(fr.buf, pos, fr.size):
        return pos
    return 0


def batch_base_offset(ev: BatchEvent, limit: int | None) -> int | None:
    """Kafka's ``baseOffset()``: for a legacy compressed wrapper the first inner offset (decompresses it when
    the walk did not); None when the wrapper does not decode."""
    if ev.base_offset is not None:
        return ev.base_offset
    try:
        recs = next(iter(ev.batch.record_chunks(limit=limit)))  # the first chunk: a wrapper may hold millions
    except KafkaToolError:
        return None
    return int(recs[0][0]) if recs else None
