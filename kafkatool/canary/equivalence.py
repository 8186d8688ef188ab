"""Record-level equivalence of a converted (canary) partition with its original.

Both partitions are read as streams of *items* in offset order, one segment and one batch at a time:
a data record, a control record (transaction marker), or an empty v2 batch (the cleaner keeps them for
producer state). The original's items are first mapped to what message format v2 keeps of them (the
expected changes, not losses: v0 records get timestamp -1 with CreateTime; legacy records have no producer
id/epoch/sequence, no headers and partition leader epoch -1; a v1 LogAppendTime record keeps the wrapper's
time and type); then every field is compared: offset, timestamp, timestamp type, key, value, headers,
producer id/epoch, sequence, transactional flag, partition leader epoch, control type and marker value.

The canary is also read as the broker would: every batch CRC-checked (``ensureValid``), the walk's stop
reason checked. A damaged canary batch is reported once, with its file and byte position, and the records
it should hold are counted, not listed again as missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkatool.convert import Skipped, SourceChecker, source_batches
from kafkatool.errors import KafkaToolError
from kafkatool.record.batch import (
    MAGIC_V0,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Header,
    RecordSource,
    TimestampType,
)
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.file_records import FileRecords, RecordBatch
from kafkatool.record.legacy_records import LegacyRecordBatch
from kafkatool.util.printable import shown

_TS_NAMES = {int(t): t.label for t in TimestampType}


class Item(NamedTuple):
    offset: int
    kind: str  # record / control / empty-batch
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    producer_id: int
    producer_epoch: int
    sequence: int
    transactional: bool
    leader_epoch: int
    magic: int  # the batch's magic (for messages)
    where: str  # "<file> at byte <position>"


# Fields every record of a batch shares: a difference there is reported once per batch.
_BATCH_FIELDS = frozenset({"kind", "timestamp_type", "producer_id", "producer_epoch", "transactional", "leader_epoch"})
_COMPARED = ("kind", "timestamp", "timestamp_type", "key", "value", "headers", "producer_id", "producer_epoch",
             "sequence", "transactional", "leader_epoch")
# The compared fields are a run of Item's: two items agree on all of them when these slices are equal (one
# comparison per item, the common case; the fields are read one by one only to say which differs).
_SPAN = slice(Item._fields.index(_COMPARED[0]), Item._fields.index(_COMPARED[-1]) + 1)
assert tuple(Item._fields)[_SPAN] == _COMPARED


@dataclass(slots=True)
class Damage:
    """A canary region that cannot be read: [first, last] offsets it should hold."""

    first: int
    last: int  # inclusive; -1 with open_end for "to the end of the segment"
    message: str


@dataclass(slots=True)
class StreamStats:
    batches: int = 0
    records: int = 0
    bytes: int = 0
    by_codec: dict[str, dict[str, int]] = field(default_factory=dict)  # codec -> batches/bytes/payload
    magics: dict[int, int] = field(default_factory=dict)
    v0_records: int = 0
    legacy_messages: int = 0
    legacy_uncompressed: int = 0
    legacy_wrappers: int = 0
    oversized: list[tuple[int, int, str]] = field(default_factory=list)  # (offset, size, where)
    damage: list[Damage] = field(default_factory=list)
    torn_bytes: int = 0  # a torn tail of the last segment, left out as the broker's recovery truncates it
    left_out: Skipped = field(default_factory=Skipped)  # corrupt data the run left out (its skip_corrupt)


def _codec_stats(stats: StreamStats, b: RecordBatch, payload: int) -> None:
    label = b.codec.label if b.codec_id <= 4 else f"unknown({b.codec_id})"
    d = stats.by_codec.setdefault(label, {"batches": 0, "bytes": 0, "payload": 0})
    d["batches"] += 1
    d["bytes"] += b.size
    d["payload"] += payload


def read_original(part_dir: Path, segments: list[int], stats: StreamStats, *, max_message_bytes: int,
                  skip_corrupt: bool = False, limit: int | None = None) -> Iterator[Item]:
    """The items of an original partition as ``canary run`` converts them, mapped to what v2 keeps: its batches
    walked and checked as the converters walk and check them (``kafkatool.convert``'s ``source_batches`` and
    ``SourceChecker``, which check what dump's deep, verifying walk checks). A torn tail of the last segment is left
    out as the broker's recovery truncates it; with ``skip_corrupt`` (the run's option) corrupt batches and
    records are left out and counted; any other problem raises, naming file, byte and offset."""
    checker = SourceChecker(skip_corrupt=skip_corrupt, limit=limit, skipped=stats.left_out)

    def torn(_text: str, n_bytes: int) -> None:
        stats.torn_bytes += n_bytes

    for i, base in enumerate(segments):
        log = part_dir / f"{base:020d}.log"
        with FileRecords(log) as fr:
            checker.begin_segment(fr.path, base)
            try:
                for b in source_batches(fr, torn, last=i == len(segments) - 1):
                    verified = checker.check(b)
                    if verified is None:
                        continue
                    # read a chunk at a time: the checked records, or the batch's own (v2: the checks needed none)
                    if verified.source is not None:
                        recs = verified.source
                    elif verified.records is not None:
                        recs = RecordSource.of(verified.records)
                    else:
                        recs = b.record_source(limit=limit)
                    yield from _batch_items(b, recs, stats, True, f"{shown(log.name)} at byte {b.position}",
                                            max_message_bytes)
            except KafkaToolError as e:
                raise e.at(log) from None


def read_items(part_dir: Path, segments: list[int], stats: StreamStats, *, to_v2: bool, max_message_bytes: int,
               canary: bool, limit: int | None = None) -> Iterator[Item]:
    """The items of a partition's segments, in order, each batch CRC-checked. ``to_v2`` maps legacy records to
    what v2 keeps. ``canary`` records damage (instead of raising) so the comparison can go on around it."""
    for i, base in enumerate(segments):
        log = part_dir / f"{base:020d}.log"
        next_base = segments[i + 1] if i + 1 < len(segments) else None
        with FileRecords(log) as fr:
            stream = fr.batches()
            last_good = base - 1
            try:
                for b in stream:
                    where = f"{shown(log.name)} at byte {b.position}"
                    try:
                        b.ensure_valid()
                        recs = b.record_source(limit=limit)  # checked whole, read a chunk at a time
                    except KafkaToolError as e:
                        if not canary:
                            raise e.at(log) from None
                        first, last = _header_range(b, last_good, next_base)
                        stats.damage.append(Damage(first, last, f"{where}: {e.message}"))
                        last_good = max(last_good, last)
                        continue
                    yield from _batch_items(b, recs, stats, to_v2, where, max_message_bytes)
                    last_good = max(last_good, int(b.last_offset))
            except KafkaToolError as e:
                if not canary:
                    raise e.at(log) from None
                stats.damage.append(Damage(last_good + 1, -1 if next_base is None else next_base - 1,
                                           f"{shown(log.name)}: {e.message} (the rest of the segment is unreadable)"))
                continue
            end = stream.end_state
            if end is not None and end.kind != "end":
                msg = (f"{shown(log.name)} at byte {end.position}: {end.trailing_bytes} bytes that are not a batch "
                       f"({end.message})")
                if not canary:
                    raise KafkaToolError(msg, path=log)
                stats.damage.append(Damage(last_good + 1, -1 if next_base is None else next_base - 1, msg))


def _header_range(b: RecordBatch, last_good: int, next_base: int | None) -> tuple[int, int]:
    """Offsets a damaged batch claims, trusted only when plausible (after what was read, before the next segment)."""
    if isinstance(b, DefaultRecordBatch):
        first, last = int(b.base_offset), int(b.last_offset)
    else:
        first = last = int(b.offset)
    limit = next_base - 1 if next_base is not None else first if first > last_good else last_good + 1
    if first <= last_good or last < first or (next_base is not None and last > limit):
        return last_good + 1, last_good + 1
    return first, last


_new = tuple.__new__


def _batch_items(b: RecordBatch, recs: RecordSource, stats: StreamStats, to_v2: bool, where: str,
                 max_bytes: int) -> Iterator[Item]:
    magic = int(b.magic)
    stats.batches += 1
    stats.bytes += b.size
    stats.magics[magic] = stats.magics.get(magic, 0) + 1
    n = recs.count
    if b.size > max_bytes:
        stats.oversized.append((int(b.last_offset), b.size, where))
    if isinstance(b, LegacyRecordBatch):
        stats.legacy_messages += n
        if b.is_compressed:
            stats.legacy_wrappers += 1
        else:
            stats.legacy_uncompressed += 1
        if magic == MAGIC_V0:
            stats.v0_records += n
        stats.records += n
        ts_type = int(b.timestamp_type)
        if to_v2 and magic == MAGIC_V0:
            ts_type = int(TimestampType.CREATE_TIME)  # cleaner/LogValidator: NoTimestampType -> CreateTime, ts -1
        payload = 0
        for r in recs:
            payload += len(r.key or b"") + len(r.value or b"")
            yield _new(Item, (r.offset, "record", r.timestamp, ts_type, r.key, r.value, (), NO_PRODUCER_ID,
                              NO_PRODUCER_EPOCH, NO_SEQUENCE, False, NO_PARTITION_LEADER_EPOCH, magic, where))
        _codec_stats(stats, b, payload)  # counted as the records are read: one read of them, not two
        return
    assert isinstance(b, DefaultRecordBatch)
    pid, pep, txn, ple = int(b.producer_id), int(b.producer_epoch), b.is_transactional, int(b.partition_leader_epoch)
    tt = int(b.timestamp_type)
    if not n:
        _codec_stats(stats, b, 0)
        yield Item(int(b.base_offset), "empty-batch", int(b.max_timestamp), tt, None, None, (), pid, pep,
                   int(b.base_sequence), txn, ple, magic, where)
        return
    kind = "control" if b.is_control else "record"
    if kind == "record":
        stats.records += n
    payload = 0
    for r in recs:
        payload += len(r.key or b"") + len(r.value or b"")
        yield _new(Item, (r.offset, kind, r.timestamp, tt, r.key, r.value, tuple(r.headers), pid, pep, r.sequence,
                          txn, ple, magic, where))
    _codec_stats(stats, b, payload)


@dataclass(slots=True)
class _Group:
    key: tuple[object, ...]
    first: int
    last: int
    count: int
    text: str


@dataclass(slots=True)
class Comparison:
    compared: int = 0
    differences: list[str] = field(default_factory=list)
    difference_count: int = 0
    missing: int = 0
    extra: int = 0
    in_damaged: int = 0
    not_v2: int = 0


def _describe(field_name: str, v: object) -> str:
    if field_name == "timestamp_type" and isinstance(v, int):
        return _TS_NAMES.get(v, str(v))
    if isinstance(v, bytes):
        text = v[:40].decode("utf-8", "backslashreplace")
        return repr(text + ("..." if len(v) > 40 else "")) + f" ({len(v)} bytes)"
    return repr(v)


def compare(expected: Iterator[Item], actual: Iterator[Item], damage: list[Damage], *, max_details: int = 20,
            target_magic: int = MAGIC_V2) -> Comparison:
    """Merge both streams by offset; report missing, extra and different items (first ``max_details``)."""
    c = Comparison()

    def add(msg: str) -> None:
        c.difference_count += 1
        if len(c.differences) < max_details:
            c.differences.append(msg)

    def damaged(offset: int) -> bool:
        return any(d.first <= offset and (d.last < 0 or offset <= d.last) for d in damage)

    run: list[int] = []  # consecutive missing offsets, reported as one range
    # A batch-level field that differs for every record of a batch is one message.
    group: list[_Group] = []

    def flush_missing() -> None:
        if run:
            span = f"offset {run[0]}" if len(run) == 1 else f"offsets {run[0]}..{run[-1]}"
            add(f"{span} ({len(run)} item(s)) missing from the canary")
            run.clear()

    def flush_group() -> None:
        if group:
            g = group.pop()
            span = f"offset {g.first}" if g.count == 1 else f"offsets {g.first}..{g.last} ({g.count} items)"
            if len(c.differences) < max_details:
                c.differences.append(f"{span}: {g.text}")

    e = next(expected, None)
    a = next(actual, None)
    while e is not None or a is not None:
        if a is None or (e is not None and e.offset < a.offset):
            assert e is not None
            if damaged(e.offset):
                c.in_damaged += 1
            else:
                c.missing += 1
                run.append(e.offset)  # items missing with nothing present between them: one range
            e = next(expected, None)
            continue
        flush_missing()
        if e is None or a.offset < e.offset:
            c.extra += 1
            add(f"offset {a.offset}: in the canary ({a.where}) but not in the original")
            a = next(actual, None)
            continue
        c.compared += 1
        if a.magic != target_magic:
            c.not_v2 += 1
            add(f"offset {a.offset}: still message format v{a.magic} in the canary ({a.where})")
        differs = False
        for f in (_COMPARED if e[_SPAN] != a[_SPAN] else ()):
            ev, av = getattr(e, f), getattr(a, f)
            if ev != av:
                differs = True
                text = (f"{f} {_describe(f, ev)} in the original (v{e.magic}, {e.where}), {_describe(f, av)} in the "
                        f"canary ({a.where})")
                if f in _BATCH_FIELDS:
                    key = (f, ev, av, e.where, a.where)
                    c.difference_count += 1
                    if group and group[0].key == key:
                        group[0].last = a.offset
                        group[0].count += 1
                    else:
                        flush_group()
                        group.append(_Group(key, a.offset, a.offset, 1, text))
                else:
                    flush_group()
                    add(f"offset {a.offset}: {text}")
                break
        if not differs:
            flush_group()
        e = next(expected, None)
        a = next(actual, None)
    flush_missing()
    flush_group()
    return c
