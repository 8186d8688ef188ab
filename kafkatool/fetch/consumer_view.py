"""What an old consumer makes of one partition's record bytes in a fetch response. Spec §5.3 "Consumer rule".

Fed incrementally (the send streams), it applies ``ByteBufferLogInputStream.nextBatch`` /
``nextBatchSize`` (kafka-clients 3.9) to the partition's ``total`` bytes:

* stop, silently, when fewer than 12 bytes remain, when fewer than 17 remain, or when the entry's
  declared size runs past the end (the cut batch, or the overflow batch whose length is always one
  more than what is left);
* a declared size below 14 (``RECORD_OVERHEAD_V0``) or a magic outside 0..2 is a
  ``CorruptRecordException``;
* CRCs are checked (``check.crcs`` defaults to true);
* records are returned only from the fetch offset on and only once: the consumer's position moves
  to ``offset + 1`` after each returned record, so records below the fetch offset (inside a
  compressed wrapper) and repeated offsets (the duplicated first batch) are dropped;
* a non-empty response with no complete batch fails the poll: ``RecordTooLargeException`` for
  fetch v0-2, ``KafkaException("... no complete records were found")`` for v3+
  (``FetchCollector``/``CompletedFetch``).

Only one batch is buffered at a time: once the tail is recognised its bytes are counted, not kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain

from kafkatool._accel import speedups as _C
from kafkatool.errors import KafkaToolError
from kafkatool.record.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    SIZE_OFFSET,
    Record,
)
from kafkatool.record.codecs import decompress, lz4_unblock, snappy_block_len, snappy_unblock
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0, LegacyRecordBatch
from kafkatool.util.budget import decompress_limit


@dataclass(slots=True)
class ConsumerResult:
    complete_batches: int = 0
    complete_bytes: int = 0
    records_sent: int = 0  # records in complete batches (what kafka-ref calls records_visible)
    records_returned: int = 0
    records_below_fetch_offset: int = 0
    duplicate_offsets: int = 0
    first_returned_offset: int | None = None
    last_returned_offset: int | None = None
    next_fetch_offset: int = 0
    tail: str = "none"  # none / truncated-batch / overflow / overflow-header-prefix / partial-header
    tail_bytes: int = 0
    outcome: str = "empty"  # empty / records / no-progress / RecordTooLargeException / KafkaException / ...
    error: str | None = None


class ConsumerView:
    """Incremental consumer-side parse of ``total`` bytes of one partition's records."""

    def __init__(self, total: int, fetch_offset: int, request_version: int,
                 on_record: Callable[[Record], None] | None = None) -> None:
        self.total = total
        self.fetch_offset = fetch_offset
        self.request_version = request_version
        self.on_record = on_record
        self.result = ConsumerResult(next_fetch_offset=fetch_offset)
        self._buf = bytearray()
        self._consumed = 0  # bytes of complete batches handled
        self._fed = 0
        self._stopped = False
        self._tail_head = bytearray()  # first bytes of the tail, to name it
        self._max_seen: int | None = None
        self._known: dict[int, bytes] = {}  # partition position of a wrapper -> its inner message set (feed)

    def feed(self, data: bytes, inners: list[tuple[int, bytes]] | None = None) -> None:
        """The next ``data`` of the partition's bytes. ``inners``: (position in ``data``, inner message set) of
        the compressed wrappers in it, as the conversion that wrote them compressed them; the compiled walk reads
        those instead of decompressing the wrapper again (every other check as before: the wrapper's size,
        magic and CRC-32, its inner messages' framing, keys, values and offsets). The Python loop, the
        reference, always decompresses."""
        if inners:
            self._known.update((self._fed + at, inner) for at, inner in inners)
        self._fed += len(data)
        if self._stopped:
            if len(self._tail_head) < LOG_OVERHEAD:
                self._tail_head += data[:LOG_OVERHEAD - len(self._tail_head)]
            return
        self._buf += data
        self._drain()

    def _drain(self) -> None:
        buf = self._buf
        while True:
            if _C is not None and self.on_record is None:
                self._walk_legacy()
            left = self.total - self._consumed  # the consumer knows the partition's records size up front
            if left < LOG_OVERHEAD:
                self._stop()
                return
            if len(buf) < LOG_OVERHEAD:
                return
            offset, size = LOG_HEADER.unpack_from(buf, 0)
            if size < RECORD_OVERHEAD_V0:
                self._fail(f"CorruptRecordException: Record size {size} is less than the minimum record overhead "
                           f"({RECORD_OVERHEAD_V0})")
                return
            if left < HEADER_SIZE_UP_TO_MAGIC:
                self._stop()
                return
            if len(buf) < HEADER_SIZE_UP_TO_MAGIC:
                return
            magic = buf[MAGIC_OFFSET]
            if magic > 127:
                magic -= 256
            if magic < 0 or magic > MAGIC_V2:
                self._fail(f"CorruptRecordException: Invalid magic found in record: {magic}")
                return
            if left < size + LOG_OVERHEAD:
                self._stop()
                return
            if len(buf) < size + LOG_OVERHEAD:
                return
            entry = bytes(buf[:size + LOG_OVERHEAD])
            del buf[:size + LOG_OVERHEAD]
            position = self._consumed
            self._consumed += len(entry)
            if not self._batch(entry, magic, position):
                return

    def _batch(self, entry: bytes, magic: int, position: int) -> bool:
        r = self.result
        try:
            batch = LegacyRecordBatch(entry, 0, position) if magic < MAGIC_V2 else DefaultRecordBatch.at(entry, 0,
                                                                                                          position)
            batch.ensure_valid()
            chunks = batch.record_chunks()  # a wrapper of millions of messages: a chunk of them at a time
            first = next(chunks)
        except KafkaToolError as e:
            self._fail(f"{type(e).__name__}: {e}")
            return False
        r.complete_batches += 1
        r.complete_bytes = self._consumed
        control = magic >= MAGIC_V2 and batch.is_control
        for rec in chain(first, chain.from_iterable(chunks)):
            r.records_sent += 1
            off = rec.offset
            if self._max_seen is not None and off <= self._max_seen:
                r.duplicate_offsets += 1
                continue
            self._max_seen = off
            if off < r.next_fetch_offset:
                r.records_below_fetch_offset += 1
                continue
            r.next_fetch_offset = off + 1
            if control:
                continue  # control records move the position but are never returned
            r.records_returned += 1
            if r.first_returned_offset is None:
                r.first_returned_offset = off
            r.last_returned_offset = off
            if self.on_record is not None:
                self.on_record(rec)
        return True

    def _stop(self) -> None:
        self._stopped = True
        self._known = {}
        self._tail_head = bytearray(self._buf[:LOG_OVERHEAD])
        self._buf = bytearray()

    def _fail(self, message: str) -> None:
        self.result.error = message
        self._stop()

    def finish(self) -> ConsumerResult:
        r = self.result
        if not self._stopped:
            self._stop()
        r.tail_bytes = self.total - self._consumed
        head = bytes(self._tail_head)
        if r.tail_bytes == 0:
            r.tail = "none"
        elif r.tail_bytes < LOG_OVERHEAD:
            r.tail = "overflow-header-prefix" if head and head == b"\xff" * len(head) else "partial-header"
        elif head[:SIZE_OFFSET] == b"\xff" * SIZE_OFFSET:  # an overflow batch's offset: -1
            r.tail = "overflow"
        else:
            r.tail = "truncated-batch"
        if self._fed < self.total:
            # The broker closed the connection mid-response: the client drops the whole response.
            r.error = r.error or f"only {self._fed} of {self.total} bytes arrived (the send failed)"
            r.outcome = "disconnected"
            r.records_returned = 0
            r.first_returned_offset = r.last_returned_offset = None
            r.next_fetch_offset = self.fetch_offset
        elif r.error is not None and r.complete_batches == 0:
            r.outcome = r.error.split(":", 1)[0]
        elif self.total > 0 and r.complete_batches == 0:
            if self.request_version < 3:
                r.outcome = "RecordTooLargeException"
                r.error = ("RecordTooLargeException: there are some messages whose size is larger than the fetch "
                           "size and hence cannot be returned")
            else:
                r.outcome = "KafkaException"
                r.error = ("KafkaException: Received a non-empty fetch response from the server, but no complete "
                           "records were found.")
        elif self.total == 0:
            r.outcome = "empty"
        elif r.records_returned == 0:
            r.outcome = "no-progress"
        else:
            r.outcome = "records"
        return r

    def _walk_legacy(self) -> None:
        """The compiled twin of ``_drain`` and ``_batch`` (``_speedups.consumer_walk``): takes the whole v0/v1
        entries at the front of the buffer that pass every check of ``_batch``, and leaves the first it cannot
        take (a v2 batch, a short or damaged entry) to the loop, which handles it as it always does."""
        assert _C is not None
        buf = self._buf
        known = self._known
        w = _C.consumer_walk(buf, min(len(buf), self.total - self._consumed), self._max_seen,
                             self.result.next_fetch_offset, WALK_CODECS, decompress_limit(), known or None,
                             self._consumed)
        if w is None or w.position == 0:
            return
        del buf[:w.position]
        self._consumed += w.position
        if known:
            consumed = self._consumed
            self._known = {at: inner for at, inner in known.items() if at >= consumed}
        r = self.result
        r.complete_batches += w.batches
        r.complete_bytes = self._consumed
        r.records_sent += w.records_sent
        r.records_returned += w.records_returned
        r.records_below_fetch_offset += w.records_below_fetch_offset
        r.duplicate_offsets += w.duplicate_offsets
        if r.first_returned_offset is None:
            r.first_returned_offset = w.first_returned_offset
        if w.last_returned_offset is not None:
            r.last_returned_offset = w.last_returned_offset
        self._max_seen = w.max_seen
        r.next_fetch_offset = w.next_fetch_offset


def _inflate_v0(codec: int, value: memoryview) -> bytes:
    """A magic 0 wrapper's value decompressed as ``LegacyRecordBatch.records`` does it (within the memory budget)."""
    return decompress(codec, value, magic=MAGIC_V0)


def _inflate_v1(codec: int, value: memoryview) -> bytes:
    return decompress(codec, value, magic=MAGIC_V1)


# consumer_walk's codecs: the two above, then the block functions of its single-chunk snappy and single-block lz4
# path (the ones codecs.decompress calls there).
WALK_CODECS = (_inflate_v0, _inflate_v1, snappy_block_len, snappy_unblock, lz4_unblock)
