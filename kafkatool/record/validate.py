"""What dump's deep, verifying walk checks of one batch and its records, in one place for every reader that must
refuse what it refuses (the converters, ``canary run`` and ``canary verify``): a corrupt record is never
rewritten with a fresh CRC.

Two levels, each a list of :class:`Problem` in the order they are found:

* :func:`batch_problems`, the header (no decompression): the CRC (``ensureValid``), a magic Kafka never writes,
  a negative v2 ``lastOffsetDelta`` (the batch's last offset below its base offset), and an offset that leaves
  no next one: Kafka's offsets are int64 and the log end offset is the last offset + 1, so a batch ending at
  2^63-1 (or past it: ``baseOffset + lastOffsetDelta`` wraps in Java) is refused as Kafka refuses offset
  overflow (``LogValidator``/``UnifiedLog.append`` never assign it; ``LogSegment.ensureOffsetInRange``).
* :func:`record_problems`, the records once decoded: a legacy inner message whose own CRC-32 fails (the only
  problem that concerns one record rather than the whole batch), a compressed legacy wrapper whose inner set ends
  inside a message (Kafka's ``DataLogInputStream`` drops the cut message without an error and numbers the rest
  from the wrapper offset), record offsets that do not increase, offsets outside the batch's own
  ``[first, last]`` range (the broker's log end offset comes from the header), and control records whose key or
  transaction marker does not parse (the producer-state step of the broker's recovery throws on them).

:func:`check_batch` runs both and decodes the records itself (a decode failure is a problem too), with the
compiled validation of v2 records (``_speedups.validate_records``) when the caller does not need them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafkatool._accel import speedups as _C
from kafkatool.constants import INT64_MAX
from kafkatool.errors import CorruptDataError, CorruptRecordError, InvalidRecordError, KafkaToolError
from kafkatool.errors import LimitExceededError as _LimitExceeded
from kafkatool.record.batch import MAGIC_V1, MAGIC_V2, ControlRecordType, Record, RecordSource
from kafkatool.record.default_records import (
    COMPRESSION_CODEC_MASK,
    RECORDS_OFFSET,
    DefaultRecordBatch,
    parse_control_type_id,
    parse_end_txn_marker,
)
from kafkatool.record.file_records import RecordBatch
from kafkatool.record.legacy_records import InnerCut, LegacyRecordBatch

# Finding kinds (``dump``'s names; the converters name the same ones).
CRC_MISMATCH = "crc-mismatch"
UNKNOWN_MAGIC = "unknown-magic"
OFFSET_RANGE = "offset-range"
OFFSET_INT64 = "offset-int64"
INVALID_RECORDS = "invalid-records"
DECOMPRESS_LIMIT = "decompress-limit"
RECORD_CRC_MISMATCH = "record-crc-mismatch"
INNER_SET_TRUNCATED = "inner-set-truncated"
OFFSET_ORDER = "offset-order"
INVALID_CONTROL_RECORD = "invalid-control-record"

ControlCheck = Callable[[bytes | None, bytes | None], str | None]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a batch (``record`` False) or with one of its records (``record`` True: the others
    are sound, as for a legacy inner message whose own CRC fails)."""

    kind: str
    message: str
    position: int  # the batch's byte position in its file
    offset: int | None  # the offset the problem is about (a record's, or the batch's last)
    record: bool = False

    def error(self, path: str | None = None) -> CorruptDataError:
        """The problem as the error a reader raises: file, byte position, then the offset and what is wrong."""
        # Kafka's CorruptRecordException for checksums and an unknown magic, InvalidRecordException for the rest.
        corrupt = self.kind in (CRC_MISMATCH, RECORD_CRC_MISMATCH, UNKNOWN_MAGIC)
        cls = CorruptRecordError if corrupt else InvalidRecordError
        where = f"offset {self.offset}: " if self.offset is not None else ""
        return cls(where + self.message, path=path, position=self.position)


def describe_batch(batch: RecordBatch) -> str:
    """``batch (offsets ..L, magic M, N bytes)``: how findings name a batch before its records are read."""
    return f"batch (offsets ..{batch.last_offset}, magic {batch.magic}, {batch.size} bytes)"


def batch_problems(batch: RecordBatch) -> list[Problem]:
    """The header-level problems of ``batch`` (nothing decompressed): :func:`magic_problem`, :func:`crc_problem`,
    then (when the CRC holds, so the header means something) :func:`offset_problems`."""
    out = [p for p in (magic_problem(batch), crc_problem(batch)) if p is not None]
    if not out or out[-1].kind != CRC_MISMATCH:
        out += offset_problems(batch)
    return out


def magic_problem(batch: RecordBatch) -> Problem | None:
    magic = int(batch.magic)
    if 0 <= magic <= MAGIC_V2:
        return None
    return Problem(
        UNKNOWN_MAGIC, f"{describe_batch(batch)} has magic {magic}: Kafka writes 0, 1 and 2 only. Its segment "
        f"reader takes it for v{2 if magic > MAGIC_V2 else '0/1'}, but a broker refuses it on produce and "
        f"replication, and consumers fail on it (CorruptRecordException: Invalid magic found in record: {magic})",
        batch.position, int(batch.last_offset))


def crc_problem(batch: RecordBatch) -> Problem | None:
    """``ensureValid``'s failure: a size below the format's minimum or a stored CRC that does not match."""
    if batch.is_valid():
        return None
    try:
        batch.ensure_valid()
        text = "is corrupt"  # pragma: no cover - is_valid and ensure_valid agree
    except KafkaToolError as e:
        text = e.message
    return Problem(CRC_MISMATCH, f"{describe_batch(batch)} is corrupt: {text}", batch.position,
                   int(batch.last_offset))


def offset_problems(batch: RecordBatch) -> list[Problem]:
    """A v2 batch whose last offset lies below its base offset, and a last offset that leaves no next one."""
    out: list[Problem] = []
    pos = batch.position
    last = int(batch.last_offset)
    if isinstance(batch, DefaultRecordBatch):
        delta = int(batch.last_offset_delta)
        if delta < 0:
            out.append(Problem(
                OFFSET_RANGE, f"{describe_batch(batch)} has lastOffsetDelta {delta}: its last offset {last} is below "
                f"its base offset {batch.base_offset} (the broker takes the log end offset from it)", pos, last))
    if last >= INT64_MAX:
        out.append(Problem(
            OFFSET_INT64, f"{describe_batch(batch)} ends at offset {last}, beyond 2^63-2: the log end offset (last "
            "offset + 1) does not fit an int64, and Kafka never assigns such an offset", pos, min(last, INT64_MAX)))
    return out


def control_record_problem(key: bytes | None, value: bytes | None) -> str | None:
    """Why a control record does not parse (``ControlRecordType.parse``; ``EndTransactionMarker.deserialize``
    for COMMIT/ABORT), or None."""
    try:
        type_id = parse_control_type_id(key)
        if ControlRecordType.from_type_id(type_id) in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            parse_end_txn_marker(value)
    except KafkaToolError as e:
        return e.message
    return None


def record_problems(batch: RecordBatch, records: Sequence[Record], *, crc: bool = True, order: bool = True,
                    control: ControlCheck | None = control_record_problem) -> list[Problem]:
    """The record-level problems of ``batch`` whose ``records`` were decoded. ``crc``: legacy inner CRCs;
    ``order``: offsets increase within the batch (a caller following offsets itself, as ``dump`` does, turns it
    off); ``control``: how a control record is checked (None: not at all)."""
    return RecordChecks(batch, crc=crc, order=order, control=control).feed(records)


class RecordChecks:
    """:func:`record_problems` over a batch's records fed a chunk at a time (a batch of more records than a run
    holds, ``batch.record_source().chunks()``): the same problems, in the same order, as one call over all of
    them. Each kind said once per batch as there (an order or range problem stops its own check)."""

    __slots__ = ("batch", "crc", "order", "control", "first", "last", "prev", "order_done", "range_done", "started")

    def __init__(self, batch: RecordBatch, *, crc: bool = True, order: bool = True,
                 control: ControlCheck | None = control_record_problem) -> None:
        self.batch = batch
        self.crc = crc
        self.order = order
        self.control = control if isinstance(batch, DefaultRecordBatch) and batch.is_control else None
        self.first = None if isinstance(batch, LegacyRecordBatch) else int(batch.base_offset)
        self.last = int(batch.last_offset)
        self.prev: int | None = None
        self.order_done = not order
        # a negative lastOffsetDelta is the header's problem, said once
        self.range_done = not (self.first is None or self.first <= self.last)
        self.started = False

    def feed(self, records: Sequence[Record]) -> list[Problem]:
        out: list[Problem] = []
        batch = self.batch
        pos = batch.position
        last = self.last
        if isinstance(batch, LegacyRecordBatch):
            if not self.started and batch.inner_cut is not None:
                out.append(Problem(INNER_SET_TRUNCATED, _describe_cut(batch, records, batch.inner_cut), pos, last))
            if self.crc:
                for r in records:
                    if r.crc_valid is False:
                        out.append(Problem(
                            RECORD_CRC_MISMATCH, f"inner message of the wrapper at byte {pos} (offsets ..{last}) is "
                            f"corrupt: its stored crc {r.crc} does not match its bytes", pos, r.offset, record=True))
        self.started = True
        if not self.order_done:
            prev = self.prev
            for r in records:
                o = r.offset
                if prev is not None and o <= prev:
                    out.append(Problem(OFFSET_ORDER, f"offset {prev} is followed by {o} inside the batch at byte "
                                       f"{pos}", pos, o))
                    self.order_done = True
                    break
                prev = o
            self.prev = prev
        if not self.range_done:
            first = self.first
            for r in records:
                o = r.offset
                if (first is not None and o < first) or o > last:
                    lo = "" if first is None else f"{first}"
                    out.append(Problem(OFFSET_RANGE, f"record offset {o} lies outside the offsets of its batch at "
                                       f"byte {pos} ({lo}..{last})", pos, o))
                    self.range_done = True
                    break
        control = self.control
        if control is not None:
            for r in records:
                why = control(r.key, r.value)
                if why is not None:
                    out.append(Problem(INVALID_CONTROL_RECORD, f"control record of the batch at byte {pos} does not "
                                       f"parse: {why}", pos, r.offset))
        return out


def _describe_cut(batch: LegacyRecordBatch, records: Sequence[Record], cut: InnerCut) -> str:
    what = f"declares {cut.size} bytes" if cut.size is not None else "has no whole header"
    text = (f"the inner message set of the wrapper at byte {batch.position} ends inside a message (its last "
            f"{cut.length} decompressed bytes, from byte {cut.position}, are a message that {what}): Kafka's reader "
            "drops it without an error")
    if batch.magic == MAGIC_V1 and records and cut.offset is not None and int(batch.offset) != 0:
        # The wrapper offset is the last inner message's: counted back from the dropped one, not the last kept.
        shift = cut.offset - (records[-1].offset - records[0].offset)
        if shift > 0:
            text += (f", so the messages kept read as offsets {records[0].offset}..{records[-1].offset}; with the "
                     f"cut message (relative offset {cut.offset}) the wrapper offset puts them at "
                     f"{records[0].offset - shift}..{records[-1].offset - shift}")
    return text


@dataclass(slots=True)
class Checked:
    """What :func:`check_batch` found: the records (when decoded at once) or, for a batch of more records than a
    run holds, the source to read them a chunk at a time again; and the problems."""

    records: list[Record] | None
    problems: list[Problem]
    source: RecordSource | None = None

    @property
    def batch_problem(self) -> Problem | None:
        """The first problem about the whole batch (None: at most single records are bad)."""
        return next((p for p in self.problems if not p.record), None)


def check_batch(batch: RecordBatch, *, limit: int | None = None, need_records: bool = True,
                crc: bool = True) -> Checked:
    """Every check of dump's deep, verifying walk on ``batch``. ``need_records`` False: the caller only needs the
    verdict, so a v2 batch is checked by the compiled walk when it can (no record objects). A batch of more records
    than a run holds (``budget.record_chunk``) is checked a chunk at a time, never decoded into one list: its
    ``records`` are None and its ``source`` reads them again."""
    problems = batch_problems(batch)
    if any(p.kind == CRC_MISMATCH for p in problems):
        return Checked(None, problems)
    if not need_records and isinstance(batch, DefaultRecordBatch) and not batch.is_control \
            and _v2_records_sound(batch, limit):
        return Checked(None, problems)
    try:
        source = batch.record_source(limit=limit)
        if source.held is not None:
            records = source.held
            problems += record_problems(batch, records, crc=crc)
            return Checked(records, problems)
        checks = RecordChecks(batch, crc=crc)
        for chunk in source.chunks():
            problems += checks.feed(chunk)
    except KafkaToolError as e:
        kind = DECOMPRESS_LIMIT if isinstance(e, _LimitExceeded) else INVALID_RECORDS
        problems.append(Problem(kind, f"records of the batch at byte {batch.position} (offsets ..{batch.last_offset}) "
                                f"do not decode: {e.message}", batch.position, int(batch.last_offset)))
        return Checked(None, problems)
    return Checked(None, problems, source)


def _v2_records_sound(batch: DefaultRecordBatch, limit: int | None) -> bool:
    """The records of an uncompressed or compressed v2 batch decode, with offsets following on inside
    ``[base, last]``: the compiled walk, without record objects. False: look closer (or no extension)."""
    if _C is None:
        return False
    h = batch.h
    if h.records_count < 0:
        return False
    if h.attributes & COMPRESSION_CODEC_MASK:
        try:
            data: bytes | memoryview = batch.records_bytes(limit=limit)
        except KafkaToolError:
            return False
        start = 0
    else:
        data = batch.raw()
        start = RECORDS_OFFSET
    r = _C.validate_records(data, start, len(data), h.records_count, h.base_offset)
    if r is None:
        return False
    first, last, contiguous = r
    return first is None or (bool(contiguous) and first >= h.base_offset and last <= batch.last_offset)

