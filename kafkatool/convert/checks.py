"""What the converters refuse to rewrite: every source batch checked as dump's deep, verifying walk checks it
(:mod:`kafkatool.record.validate`), so that a corrupt record never leaves a conversion with a fresh CRC.

A partition's batches pass through one :class:`SourceChecker`, segment by segment, in file order. A batch whose
header, records, inner messages or control records are wrong, or whose offsets do not follow on from the batch
before it, stops the conversion with the finding (file, byte position, offset; exit 1), unless the request says
``skip_corrupt``: then it is left out and counted (a legacy inner message whose own CRC fails is left out alone,
its wrapper rebuilt from the others). A batch below its segment's base offset (a segment named above its offsets:
the broker splits such a segment at startup, KAFKA-6264) is refused whatever the request: its records are not
corrupt, and the converters keep segment names. So is a legacy wrapper whose inner offsets span more than an int32:
neither a v2 batch nor a segment's relative index can hold it.

The compiled down-conversion run makes the same checks itself and declines any batch that fails one: the batch
then comes here, which names the finding exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkatool.constants import INT32_MAX
from kafkatool.errors import InvalidRecordError, KafkaToolError
from kafkatool.record.batch import MAGIC_V2, Record, RecordSource
from kafkatool.record.file_records import RecordBatch
from kafkatool.record.validate import Problem, check_batch

OFFSET_ORDER = "offset-order"
MAX_LISTED = 100  # skipped findings listed per partition (the counts are exact)


@dataclass(slots=True)
class Skipped:
    """What ``skip_corrupt`` left out of one partition."""

    batches: int = 0  # whole batches left out
    records: int = 0  # records left out (those of whole batches where their count is known, and single ones)
    unknown_records: int = 0  # batches left out whose record count cannot be known (records that do not decode)
    findings: list[dict[str, Any]] = field(default_factory=list)  # the first MAX_LISTED, in file order
    count: int = 0  # findings in all (one per batch or record left out)

    def add(self, path: str, p: Problem, records: int | None) -> None:
        self.count += 1
        if not p.record:
            self.batches += 1
        if records is None:
            self.unknown_records += 1
        else:
            self.records += records
        if len(self.findings) < MAX_LISTED:
            self.findings.append({"path": path, "position": p.position, "offset": p.offset, "kind": p.kind,
                                  "records": records, "message": p.message})


@dataclass(frozen=True, slots=True)
class Verified:
    """A batch that may be converted: its records when they were decoded (legacy batches, control batches), or
    for a batch of more records than a run holds the source that reads them a chunk at a time (``records`` None),
    and whether some of them were left out (then the batch must be rebuilt from ``records`` or ``source``, never
    copied)."""

    records: list[Record] | None
    dropped: int = 0
    source: RecordSource | None = None


class SourceChecker:
    """One partition's batches, checked in file order. ``check`` returns what to convert (None: left out)."""

    def __init__(self, *, skip_corrupt: bool, limit: int | None, skipped: Skipped | None = None) -> None:
        self.skip_corrupt = skip_corrupt
        self.limit = limit
        self.skipped = skipped if skipped is not None else Skipped()
        self.last: int | None = None  # the last offset of the previous batch converted (the header's)
        self.path = ""
        self.base_offset = 0

    def begin_segment(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset

    @property
    def floor(self) -> int:
        """Offsets at or below this cannot come next (the previous batch's last, or below the segment's base):
        what the compiled run is given, so it declines any batch that would be a finding here."""
        return max(self.base_offset - 1, -1 if self.last is None else self.last)

    def ran_to(self, last_offset: int) -> None:
        """The compiled run converted batches up to ``last_offset`` (it checked them itself)."""
        self.last = last_offset

    def check(self, batch: RecordBatch) -> Verified | None:
        """``batch`` checked; its records decoded when the converters need them (legacy batches) or the checks do
        (control batches, and v2 batches the compiled validation cannot vouch for)."""
        checked = check_batch(batch, limit=self.limit, need_records=batch.magic < MAGIC_V2)
        records = checked.records
        source = checked.source
        problems = checked.problems
        if checked.batch_problem is None:
            first = _first_offset(batch, records, source)
            if first is not None and first < self.base_offset:
                raise InvalidRecordError(
                    f"offset {first}: the batch at byte {batch.position} (offsets {first}..{batch.last_offset}) lies "
                    f"below its segment's base offset {self.base_offset}: the segment is named above its offsets. "
                    "The broker's recovery throws LogSegmentOffsetOverflowException and splits such a segment "
                    "(KAFKA-6264); a conversion keeps segment names, so rename the segment after its first offset "
                    "(or let a broker recover it) first", path=self.path, position=batch.position)
            if first is not None and batch.last_offset - first > INT32_MAX:
                raise InvalidRecordError(
                    f"offset {first}: the wrapper at byte {batch.position} holds offsets {first}..{batch.last_offset}, "
                    f"more than {INT32_MAX} apart: no v2 batch can hold them (its offset deltas are int32) and no "
                    "segment can index them (UnifiedLog.maybeRoll assumes a batch spans at most Integer.MAX_VALUE "
                    "offsets); Kafka never writes such a wrapper", path=self.path, position=batch.position)
            if first is not None and self.last is not None and first <= self.last:
                problems = [Problem(OFFSET_ORDER, f"the batch at byte {batch.position} starts at offset {first}, "
                                    f"not after the previous batch's last offset {self.last}", batch.position,
                                    first)] + problems
        whole = next((p for p in problems if not p.record), None)
        if whole is not None:
            if not self.skip_corrupt:
                raise self._refuse(whole)
            self.skipped.add(self.path, whole, _count(batch, records, source))
            return None
        dropped = 0
        if problems:  # single records (legacy inner messages) only
            if not self.skip_corrupt:
                raise self._refuse(problems[0])
            for p in problems:
                self.skipped.add(self.path, p, 1)
            if source is not None:  # a wrapper of more messages than a run holds: left out as they are read
                dropped = len(problems)
                if dropped >= source.count:
                    return None
                source = _sound(source, source.count - dropped)
            else:
                bad = {p.offset for p in problems}
                assert records is not None
                kept = [r for r in records if r.offset not in bad]
                dropped = len(records) - len(kept)
                records = kept
                if not records:
                    return None
        self.last = int(batch.last_offset)
        return Verified(records, dropped, source)

    def _refuse(self, p: Problem) -> KafkaToolError:
        e = p.error(self.path)
        e.message += "; not converted: corrupt data is left out only on request"
        e.field = "skip_corrupt"
        return e


def _sound(source: RecordSource, count: int) -> RecordSource:
    """``source`` without its records whose own CRC fails (legacy inner messages): ``count`` records, each kept
    one's ``size`` taking in the left-out ones just before it, so that positions summed from sizes (how a split
    finds its ranges) stay positions of ``source``."""

    def read(position: int, n: int) -> tuple[list[Record], int]:
        out: list[Record] = []
        gap = 0
        p = position
        while len(out) < n:
            recs, p = source.read(p, n - len(out))
            if not recs:
                break
            for r in recs:
                if r.crc_valid is False:
                    gap += r.size
                else:
                    out.append(r._replace(size=r.size + gap) if gap else r)
                    gap = 0
        return out, p

    return RecordSource(count, source.start, read)


def _first_offset(batch: RecordBatch, records: list[Record] | None, source: RecordSource | None) -> int | None:
    if batch.magic >= MAGIC_V2 or not batch.is_compressed:
        return int(batch.base_offset)
    if source is not None:
        head, _ = source.read(source.start, 1)
        return head[0].offset if head else None
    return records[0].offset if records else None


def _count(batch: RecordBatch, records: list[Record] | None, source: RecordSource | None) -> int | None:
    if records is not None:
        return len(records)
    if source is not None:
        return source.count
    if batch.magic >= MAGIC_V2 and batch.is_valid():
        n = batch.count
        return None if n is None or n < 0 else int(n)
    if batch.magic < MAGIC_V2 and not batch.is_compressed:
        return 1
    return None


__all__ = ["MAX_LISTED", "SourceChecker", "Skipped", "Verified"]
