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

from kafkatool.errors import KafkaToolError
from kafkatool.record.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    SIZE_OFFSET,
    Record,
)
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0, LegacyRecordBatch


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

    def feed(self, data: bytes) -> None:
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
