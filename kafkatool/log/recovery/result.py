"""What ``LogSegment.recover`` (Kafka 3.9) builds for one segment and where it stops: :class:`SegmentRecovery`,
and the failures both walks (``reference`` and ``fast``) report, worded after the Kafka exception each
stands for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from kafkatool.errors import CorruptDataError, CorruptRecordError, InvalidRecordError, KafkaToolError
from kafkatool.log.index import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE, OffsetPosition, TimestampOffset
from kafkatool.log.recovery.control import ControlFailure
from kafkatool.record.batch import LOG_OVERHEAD, NO_TIMESTAMP
from kafkatool.record.default_records import RECORD_BATCH_OVERHEAD
from kafkatool.record.file_records import WalkEnd
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0

I64 = npt.NDArray[np.int64]
Fatal = Literal["invalid-offset", "offset-overflow", "load-fails"]


_OFFSET_DTYPE = np.dtype([("rel", ">i4"), ("pos", ">i4")])
_TIME_DTYPE = np.dtype([("ts", ">i8"), ("rel", ">i4")])


def _empty() -> I64:
    return np.zeros(0, np.int64)


@dataclass(slots=True)
class SegmentRecovery:
    """What ``LogSegment.recover`` would build for one segment, and where it would stop.

    Index entries are kept as int64 arrays (absolute offsets); ``offset_entries``/``time_entries``
    materialise them as lists on each access, ``encode_*`` give the trimmed file bytes.
    """

    base_offset: int
    file_size: int
    index_offsets: I64 = field(default_factory=_empty)
    index_positions: I64 = field(default_factory=_empty)
    time_timestamps: I64 = field(default_factory=_empty)
    time_offsets: I64 = field(default_factory=_empty)
    valid_bytes: int = 0  # recover() truncates the .log to this
    batches: int = 0
    last_offset: int | None = None  # last offset of the last valid batch
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    epochs: list[tuple[int, int]] = field(default_factory=list)  # leader-epoch cache assignments (epoch, start)
    magics: set[int] = field(default_factory=set)
    stop: WalkEnd | None = None  # why the walk ended (torn tail, corrupt size, ...)
    error: KafkaToolError | None = None  # the first invalid batch, as recovery would meet it
    fatal: Fatal | None = None  # an exception recover() does not catch (see the module doc)
    control: ControlFailure | None = None  # a transaction marker the producer-state update rejects (verify)

    @property
    def truncated_bytes(self) -> int:
        return self.file_size - self.valid_bytes

    @property
    def next_offset(self) -> int:
        return self.base_offset if self.last_offset is None else self.last_offset + 1

    @property
    def broker_truncates_to(self) -> int:
        """Byte size of the .log after the broker's recovery: 0 when LogLoader empties the segment, unchanged
        when an exception escapes ``recover()`` before its truncation."""
        if self.fatal == "invalid-offset":
            return 0
        if self.control is not None and self.control.outcome == "unhandled":
            return self.file_size
        return self.valid_bytes

    @property
    def completes(self) -> bool:
        """``recover()`` returns (its truncation and final time entry happen), whatever LogLoader does next."""
        return self.fatal is None or (self.control is not None and self.control.outcome == "invalid")

    @property
    def offset_entries(self) -> list[OffsetPosition]:
        return [OffsetPosition(o, p) for o, p in zip(self.index_offsets.tolist(), self.index_positions.tolist(),
                                                      strict=True)]

    @property
    def time_entries(self) -> list[TimestampOffset]:
        return [TimestampOffset(t, o) for t, o in zip(self.time_timestamps.tolist(), self.time_offsets.tolist(),
                                                       strict=True)]

    def encode_offset_index(self) -> bytes:
        """The trimmed ``.index`` bytes recovery leaves (8 bytes per entry)."""
        out = np.empty(len(self.index_offsets), _OFFSET_DTYPE)
        out["rel"] = self.index_offsets - self.base_offset
        out["pos"] = self.index_positions
        data = out.tobytes()
        assert len(data) == len(out) * OFFSET_ENTRY_SIZE
        return data

    def encode_time_index(self) -> bytes:
        """The trimmed ``.timeindex`` bytes recovery leaves (12 bytes per entry)."""
        out = np.empty(len(self.time_offsets), _TIME_DTYPE)
        out["ts"] = self.time_timestamps
        out["rel"] = self.time_offsets - self.base_offset
        data = out.tobytes()
        assert len(data) == len(out) * TIME_ENTRY_SIZE
        return data


# Messages shared by both implementations (their wording follows the Kafka exception they stand for).

def size_below_overhead(size: int, path: str | None, position: int) -> CorruptRecordError:
    return CorruptRecordError(f"Found record size {size} smaller than minimum record overhead "
                              f"({RECORD_OVERHEAD_V0})", path=path, position=position)


def v2_too_small(batch_size: int, path: str | None, position: int) -> CorruptRecordError:
    return CorruptRecordError(f"Record batch is corrupt (the size of {batch_size} is smaller than the minimum "
                              f"allowed overhead {RECORD_BATCH_OVERHEAD})", path=path, position=position)


def offset_overflow(last_offset: int, base_offset: int, path: str | None, position: int) -> CorruptDataError:
    return CorruptDataError(
        f"offset {last_offset} does not fit the segment's relative index (base offset {base_offset}): "
        "LogSegmentOffsetOverflowException, the broker splits such segments", path=path, position=position)


def invalid_offset(offset: int, slot: int, last: int, what: str, path: str | None,
                   position: int) -> CorruptDataError:
    return CorruptDataError(
        f"Attempt to append an offset ({offset}) to slot {slot} of the {what} no larger than the last offset "
        f"appended ({last}): InvalidOffsetException, the broker empties the whole segment", path=path,
        position=position)


def control_error(failure: ControlFailure, path: str | None) -> KafkaToolError:
    """The error a control-batch failure stands for (positioned at the control batch)."""
    return InvalidRecordError(failure.describe(), path=path, position=failure.position)


def apply_control_failure(out: SegmentRecovery, failure: ControlFailure, path: str | None, end: int) -> None:
    """Recovery stops after the control batch (its bytes are already in validBytes); loading fails either way."""
    out.control = failure
    out.error = control_error(failure, path)
    out.fatal = "load-fails"  # it comes before any later failure of the walk, which it replaces
    out.stop = WalkEnd("corrupt", failure.end, end - failure.end, out.error.message)


def torn(declared: int, remaining: int, position: int) -> WalkEnd:
    return WalkEnd("size-past-end", position, remaining,
                   f"batch declares {declared + LOG_OVERHEAD} bytes but only {remaining} remain", declared)


def short_tail(position: int, remaining: int) -> WalkEnd:
    if remaining:
        return WalkEnd("short-tail", position, remaining, f"{remaining} trailing bytes are too few for a batch header")
    return WalkEnd("end", position, 0)
