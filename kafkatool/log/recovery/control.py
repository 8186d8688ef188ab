"""The producer-state step of ``LogSegment.recover`` (3.9) for control batches: parse the transaction marker.

After a v2 batch passed ``ensureValid`` and was counted into ``validBytes``, recovery calls
``updateProducerState``: for a batch with a producer id (``producerId >= 0``) it runs
``ProducerAppendInfo.append(batch)``, which for a **control** batch reads its first record and
``EndTransactionMarker.deserialize``\\ s it (checked against the kafka-clients 3.9.1 bytecode)::

    iterator():   count == 0 -> no record (a cleaned-out transaction: fine)
                  compressed  -> every record inflated and decoded up front (KafkaException on a codec error)
                  count < 0   -> InvalidRecordException "Found invalid record count"
    next():       DefaultRecord.readFrom: the length varint (too long: IllegalArgumentException, not wrapped;
                  cut short: InvalidRecordException "premature EOF"), then the body (InvalidRecordException);
                  after the last of ``count`` records, bytes left over -> InvalidRecordException
    deserialize:  key null -> NullPointerException; key < 4 bytes or version < 0 -> InvalidRecordException;
                  type not COMMIT/ABORT -> IllegalArgumentException; value null -> NullPointerException;
                  value < 6 bytes or version < 0 -> InvalidRecordException

``recover()`` catches only ``CorruptRecordException``/``InvalidRecordException``, and ``validBytes`` already
includes the control batch: an *invalid* marker keeps its batch and truncates the segment **after** it
(``LogLoader.recoverLog`` then deletes the later segments). That is not the end of it: the recovery's producer
state is snapshotted at the marker's offset (``updateMapEndOffset`` was never reached for it), and
``UnifiedLog.rebuildProducerState`` at the end of ``LogLoader.load`` reads the log from that snapshot, meets
the marker again in ``loadProducersFromRecords`` and nothing catches the exception there: loading the
partition fails. Any other exception escapes ``recover()`` at once (nothing truncated). Either way the
exception reaches ``LogManager.loadLogs``, which only handles ``IOException``: the broker does not start
("There was an error in one of the threads during logs loading"). Spec §4.2 lists "malformed control record"
among the invalid batches; where the truncation falls (after the batch) and the failed load are Kafka's
(3.9 ``LogSegment.recover``, ``LogLoader``, ``UnifiedLog.rebuildProducerState``), not written in the spec.

Control batches are rare (one per transaction), so this runs only for them, off the per-batch path.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal

from kafkatool.errors import InvalidRecordError, KafkaToolError, LimitExceededError, TruncatedError
from kafkatool.record.batch import ControlRecordType
from kafkatool.record.default_records import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    DefaultRecordBatch,
    parse_records,
)
from kafkatool.record.varint import read_varint
from kafkatool.util import budget as _budget

_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
_COUNT = struct.Struct(">i")
_I16 = struct.Struct(">h")

Outcome = Literal["invalid", "unhandled"]


@dataclass(frozen=True, slots=True)
class ControlFailure:
    """Why the producer-state update of one control batch throws, as Kafka would throw it."""

    outcome: Outcome  # invalid: InvalidRecordException (truncate after the batch); unhandled: loading fails
    exception: str  # Kafka's exception class (simple name)
    message: str
    position: int  # the control batch's byte position in the segment
    size: int  # its sizeInBytes

    @property
    def end(self) -> int:
        return self.position + self.size

    def describe(self) -> str:
        if self.outcome == "invalid":
            return (f"the transaction marker of the control batch at byte {self.position} is malformed "
                    f"({self.exception}: {self.message}): recovery keeps that batch and truncates the segment "
                    "after it, then the producer-state rebuild reads the marker again and the same exception, "
                    "not caught there, fails loading the partition: the broker does not start")
        return (f"the transaction marker of the control batch at byte {self.position} makes the producer-state "
                f"update throw {self.exception} ({self.message}), which recovery does not catch: loading the "
                "partition fails and the broker does not start")


def ensure_readable(size: int, path: str | None, position: int) -> None:
    """A control batch is read whole; one larger than the decompression limit is refused, not read."""
    limit = _budget.decompress_limit()
    if size > limit:
        raise LimitExceededError(f"a control batch of {size} bytes is larger than the memory budget's "
                                 f"decompression limit ({limit} bytes): its transaction marker is not checked",
                                 path=path, position=position)


def check_control_batch(batch: bytes, position: int) -> ControlFailure | None:
    """The producer-state update of one whole, CRC-valid v2 batch (its bytes, log overhead included)."""
    if len(batch) < RECORD_BATCH_OVERHEAD:
        return None  # ensureValid already refused it
    attributes = _ATTRIBUTES.unpack_from(batch, ATTRIBUTES_OFFSET)[0]
    if not attributes & CONTROL_FLAG_MASK or _PRODUCER_ID.unpack_from(batch, PRODUCER_ID_OFFSET)[0] < 0:
        return None  # updateProducerState appends only batches with a producer id

    def fail(outcome: Outcome, exception: str, message: str) -> ControlFailure:
        return ControlFailure(outcome, exception, message, position, len(batch))

    count = _COUNT.unpack_from(batch, RECORDS_COUNT_OFFSET)[0]
    if count == 0:
        return None  # "An empty control batch means the entire transaction has been cleaned from the log"
    if attributes & COMPRESSION_CODEC_MASK:
        try:
            # the first chunk (the whole batch is checked): a hostile control batch may declare millions
            records = next(DefaultRecordBatch.at(batch, 0, position).record_chunks(limit=_budget.decompress_limit()))
        except LimitExceededError:
            raise
        except InvalidRecordError as e:
            return fail("invalid", "InvalidRecordException", e.message)
        except KafkaToolError as e:  # the codec: "Failed to decompress record stream"
            return fail("unhandled", "KafkaException", e.message)
        key, value = records[0].key, records[0].value
    else:
        if count < 0:
            return fail("invalid", "InvalidRecordException", f"Found invalid record count {count} in magic v2 batch")
        end = len(batch)
        try:
            length, body = read_varint(batch, RECORD_BATCH_OVERHEAD, end)
        except TruncatedError:
            return fail("invalid", "InvalidRecordException", "Incorrect declared batch size, premature EOF reached")
        except InvalidRecordError:  # ByteUtils.readVarint's IllegalArgumentException is outside readFrom's try
            return fail("unhandled", "IllegalArgumentException", "Varint is too long, the most significant bit "
                        "in the 5th byte is set")
        if end - body < length:
            return fail("invalid", "InvalidRecordException", f"Invalid record size: expected {length} bytes in "
                        f"record payload, but instead the buffer has only {end - body} remaining bytes.")
        try:
            # DefaultRecord.readFrom's body checks; every failure there is an InvalidRecordException.
            record = parse_records(batch, RECORD_BATCH_OVERHEAD, body + max(length, 0), 1, 0, 0, None, -1)[0]
        except KafkaToolError as e:
            return fail("invalid", "InvalidRecordException", e.message)
        if count == 1 and body + length != end:
            return fail("invalid", "InvalidRecordException",
                        "Incorrect declared batch size, records still remaining in file")
        key, value = record.key, record.value
    # EndTransactionMarker.deserialize: ControlRecordType.parse(key), then the value.
    if key is None:
        return fail("unhandled", "NullPointerException", "the control record has a null key")
    if len(key) < 4:
        return fail("invalid", "InvalidRecordException", "Invalid value size found for end control record key. "
                    f"Must have at least 4 bytes, but found only {len(key)}")
    version = _I16.unpack_from(key, 0)[0]
    if version < 0:
        return fail("invalid", "InvalidRecordException",
                    f"Invalid version found for control record: {version}. May indicate data corruption")
    type_id = _I16.unpack_from(key, 2)[0]
    ctype = ControlRecordType.from_type_id(type_id)
    if ctype not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        return fail("unhandled", "IllegalArgumentException",
                    f"Invalid control record type for end transaction marker{ctype.name} (type id {type_id})")
    if value is None:
        return fail("unhandled", "NullPointerException", "the end transaction marker has a null value")
    if len(value) < 6:
        return fail("invalid", "InvalidRecordException", "Invalid value size found for end transaction marker. "
                    f"Must have at least 6 bytes, but found only {len(value)}")
    version = _I16.unpack_from(value, 0)[0]
    if version < 0:
        return fail("invalid", "InvalidRecordException",
                    f"Invalid version found for end transaction marker: {version}. May indicate data corruption")
    return None
