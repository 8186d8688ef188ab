"""``kafkatool dump`` for everything that is not batches: ``.index``, ``.timeindex``, ``.txnindex``, producer
snapshots, checkpoints and metadata files; and the index checks of DumpLogSegments 3.9 (spec §8.3).

* ``.index``: entries up to the first slot ``i > 0`` at the base offset (the zero padding of a preallocated
  index); each entry is checked by reading the batch at its position: that batch's *last* offset must be
  the entry's offset (KAFKA-7487). Kafka prints slot 0 even when the whole file is zero padding (and then
  reports a mismatch); only ``kafka_compat`` reproduces that, otherwise an all-zero file has no entries.
* ``.timeindex``: for each entry, from the ``.index`` position at or below its offset, the first batch whose
  last offset is ``>=`` the entry's; its last offset must equal the entry's ("indexed offsets not found"),
  the max timestamp of *that batch's records* must equal the entry's timestamp ("timestamp mismatch"), and
  timestamps must increase ("out of order"). Consecutive entries that start from the same index position
  continue where the previous scan stopped, so a missing ``.index`` does not make the check quadratic.

Kafka's own tool creates a missing ``.index`` when it verifies a time index and crashes on entries past the
end of the log; here neither happens: nothing is ever written, and such entries are findings.
"""

from __future__ import annotations

import json
import os
import stat
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from kafkatool.dump.events import (
    DumpOptions,
    EntryKind,
    Event,
    FileEnd,
    FileKind,
    FileStart,
    Finding,
    IndexEntryEvent,
    Notice,
    NoticeKind,
    OffsetCheckpointEntry,
    PropertyEntry,
    Severity,
)
from kafkatool.dump.resync import find_next_batch
from kafkatool.errors import CorruptDataError, CorruptRecordError, InputError, KafkaToolError
from kafkatool.log.checkpoints import (
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    read_partition_metadata,
    read_properties,
)
from kafkatool.log.index import (
    MAX_INDEX_READ,
    OFFSET_ENTRY,
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY,
    TIME_ENTRY_RELATIVE_OFFSET,
    TIME_ENTRY_SIZE,
    OffsetLookup,
    OffsetPosition,
    TimestampOffset,
    entry_count,
    load_offset_lookup,
    offset_index_sanity_check,
    time_index_sanity_check,
)
from kafkatool.log.layout import INDEX_SUFFIX, LOG_SUFFIX
from kafkatool.log.snapshot import read_snapshot
from kafkatool.log.txn_index import ENTRY_SIZE as TXN_ENTRY_SIZE
from kafkatool.log.txn_index import read_txn_index
from kafkatool.record.batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_TIMESTAMP,
)
from kafkatool.record.default_records import BASE_TIMESTAMP_OFFSET, LAST_OFFSET_DELTA_OFFSET
from kafkatool.record.file_records import FileRecords, RecordBatch
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0
from kafkatool.util.printable import shown
from kafkatool.util.regular import open_regular, read_regular

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
MAX_CLEAN_SHUTDOWN_READ = 1024 * 1024


class FindingSink(Protocol):
    """How a finding is made and counted (``DumpEngine.finding``)."""

    def __call__(self, kind: str, severity: Severity, path: str, message: str, position: int | None = None,
                 offset: int | None = None, **data: Any) -> Finding: ...


def _read(path: Path) -> bytes:
    try:
        with open_regular(path) as f:
            if f.size > MAX_INDEX_READ:
                raise InputError(f"file of {f.size} bytes is larger than any Kafka index ({MAX_INDEX_READ} max)",
                                 path=path)
            return f.read_all()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=path) from None


def _base_offset(path: Path) -> int:
    prefix = path.name.split(".", 1)[0]
    if not prefix.isdigit():
        raise InputError("the file name does not start with the segment's base offset", path=path)
    return int(prefix)


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name.split(".", 1)[0] + suffix)


def last_offset_at(buf: bytes | bytearray | memoryview, pos: int, end: int) -> int | None:
    """``lastOffset()`` of the batch at ``pos`` by FileLogInputStream's rules, None if no batch is there."""
    if end - pos <= HEADER_SIZE_UP_TO_MAGIC:
        return None
    offset, size = LOG_HEADER.unpack_from(buf, pos)
    if size < RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > end:
        return None
    magic = buf[pos + MAGIC_OFFSET]
    if magic > 127 or magic < MAGIC_V2:
        return int(offset)
    if size + LOG_OVERHEAD < BASE_TIMESTAMP_OFFSET:  # lastOffsetDelta ends where baseTimestamp starts
        return None
    delta = buf[pos + LAST_OFFSET_DELTA_OFFSET:pos + BASE_TIMESTAMP_OFFSET]
    return int(offset) + int.from_bytes(delta, "big", signed=True)


def _log_size(index: Path) -> int | None:
    try:
        st = os.stat(_sibling(index, LOG_SUFFIX))
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _first_batch_reaching(fr: FileRecords, begin: int, target: int,
                          resync_limit: int) -> tuple[RecordBatch | None, int]:
    """The first batch from ``begin`` whose last offset is >= ``target`` and its position; (None, end) if none.

    Where Kafka's walk would throw (a corrupt size field) the scan resumes at the next valid batch, as the
    log dump does, instead of giving up on every later entry."""
    p = begin
    while True:
        stream = fr.batches(p)
        try:
            for batch in stream:
                if batch.last_offset >= target:
                    return batch, batch.position
        except CorruptRecordError:
            pass
        st = stream.end_state
        if st is None or st.kind in ("end", "short-tail"):
            return None, fr.size
        q = find_next_batch(fr.buf, st.position + 1, fr.size, resync_limit, fr)
        if q is None:
            return None, fr.size
        p = q


class IndexFiles:
    """Dumps the files of a partition dir that are not batches, reporting findings through ``finding`` (the
    engine's, which counts them) under the engine's options."""

    def __init__(self, opts: DumpOptions, finding: FindingSink) -> None:
        self.opts = opts
        self.finding = finding

    @property
    def verify_index(self) -> bool:
        o = self.opts
        return o.verify_index or o.verify_index_only or o.kafka_compat

    def padding_severity(self) -> Severity:
        return ERROR if self.opts.strict else INFO

    def dump_file(self, path: Path, display: str, kind: FileKind, size: int) -> Iterator[Event]:
        if kind == FileKind.INDEX:
            yield from self._dump_offset_index(path, display, size)
        elif kind == FileKind.TIME_INDEX:
            yield from self._dump_time_index(path, display, size)
        elif kind == FileKind.TXN_INDEX:
            yield from self._dump_txn_index(path, display, size)
        elif kind == FileKind.PRODUCER_SNAPSHOT:
            yield from self._dump_producer_snapshot(path, display, size)
        else:
            yield from self._dump_text_file(path, display, kind, size)

    def _padding_findings(self, display: str, data: bytes, entry_size: int, entries: int,
                          what: str) -> Iterator[Event]:
        slots = len(data) // entry_size
        partial = len(data) % entry_size
        if partial:
            yield self.finding("index-partial-entry", ERROR if self.opts.strict else WARNING, display,
                                 f"{partial} bytes after the last whole {entry_size}-byte entry (file length "
                                 f"{len(data)})", slots * entry_size, bytes=partial)
        if entries < slots:
            tail = data[entries * entry_size:slots * entry_size]
            if not tail.strip(b"\x00"):
                yield self.finding("index-padding", self.padding_severity(), display,
                                   f"{slots - entries} zero slots after {entries} {what} entries (preallocated index "
                                   "of an active or crashed segment; Kafka stops at the first of them)",
                                   entries * entry_size, slots=slots - entries, entries=entries)
            else:
                yield self.finding("index-garbage", ERROR if self.opts.strict else WARNING, display,
                                   f"non-zero bytes after slot {entries}, where a zero relative offset ends the "
                                   f"{what} index for Kafka: {slots - entries} slots ignored", entries * entry_size,
                                   slots=slots - entries, entries=entries)

    def _sanity(self, display: str, check: object, path: Path, base: int) -> Iterator[Event]:
        try:
            check(path, base)  # type: ignore[operator]
        except CorruptDataError as e:
            yield self.finding("index-sanity", ERROR, display, e.message, e.position)
        else:
            yield Notice(display, NoticeKind.SANITY_PASSED)

    def _open_log(self, path: Path, display: str) -> Iterator[Event | FileRecords]:
        log = _sibling(path, LOG_SUFFIX)
        if not log.is_file():
            yield self.finding("missing-log", WARNING, display,
                               f"no {shown(log.name)} beside the index: entries not verified")
            return
        yield FileRecords(log)

    def _dump_offset_index(self, path: Path, display: str, size: int) -> Iterator[Event]:
        opts = self.opts
        base = _base_offset(path)
        data = _read(path)
        yield FileStart(display, FileKind.INDEX, size, base)
        slots = len(data) // OFFSET_ENTRY_SIZE
        n = entry_count(data, OFFSET_ENTRY_SIZE, 0)
        if not opts.kafka_compat and n == 1 and data[:OFFSET_ENTRY_SIZE] == bytes(OFFSET_ENTRY_SIZE):
            n = 0  # slot 0 = (base, 0) is padding: Kafka never indexes position 0
        if slots == 0 or (n == 0 and not opts.index_sanity_check):
            yield Notice(display, NoticeKind.INDEX_EMPTY)
        yield from self._padding_findings(display, data, OFFSET_ENTRY_SIZE, n, "offset")
        if opts.index_sanity_check:
            if slots:
                yield from self._sanity(display, offset_index_sanity_check, path, base)
            yield FileEnd(display, FileKind.INDEX, size, entries=n)
            return
        fr: FileRecords | None = None
        if self.verify_index and n:
            for item in self._open_log(path, display):
                if isinstance(item, FileRecords):
                    fr = item
                else:
                    yield item
        show = opts.emit_data and not opts.verify_index_only
        # Without verify_index the entries are still checked against the .log's size (a stat, no read): an entry
        # past the end means the log was cut after the index was written.
        log_size = _log_size(path) if fr is None and n else None
        try:
            buf, end = (fr.buf, fr.size) if fr is not None else (b"", 0)
            prev_off = prev_pos = -1
            for i, (rel, pos) in enumerate(OFFSET_ENTRY.iter_unpack(memoryview(data)[:n * OFFSET_ENTRY_SIZE])):
                off = base + rel
                if log_size is not None and not 0 <= pos < log_size:
                    yield self.finding("index-entry-past-end", ERROR, display,
                                         f"entry {i} maps offset {off} to byte {pos}, outside the {log_size}-byte log",
                                         i * OFFSET_ENTRY_SIZE, off, index_offset=off, log_position=pos)
                if fr is not None:
                    if i > 0 and (off <= prev_off or pos <= prev_pos):
                        yield self.finding("index-order", ERROR, display,
                                             f"entry {i} (offset {off}, position {pos}) does not follow entry {i - 1} "
                                             f"(offset {prev_off}, position {prev_pos})", i * OFFSET_ENTRY_SIZE, off)
                    if pos < 0 or pos >= end:
                        yield self.finding("index-entry-past-end", ERROR, display,
                                             f"entry {i} maps offset {off} to byte {pos}, outside the "
                                             f"{end}-byte log", i * OFFSET_ENTRY_SIZE, off, index_offset=off,
                                             log_position=pos)
                    else:
                        log_off = last_offset_at(buf, pos, end)
                        if log_off is None:
                            yield self.finding("index-entry-invalid", ERROR, display,
                                                 f"entry {i} maps offset {off} to byte {pos}, where no batch starts",
                                                 i * OFFSET_ENTRY_SIZE, off, index_offset=off, log_position=pos)
                        elif log_off != off:
                            yield self.finding("index-mismatch", ERROR, display,
                                                 f"entry {i} maps offset {off} to byte {pos}, where the batch's last "
                                                 f"offset is {log_off}", i * OFFSET_ENTRY_SIZE, off, index_offset=off,
                                                 log_offset=log_off, log_position=pos)
                    prev_off, prev_pos = off, pos
                if show:
                    yield IndexEntryEvent(display, EntryKind.OFFSET, i, OffsetPosition(off, pos))
        finally:
            if fr is not None:
                fr.close()
        yield FileEnd(display, FileKind.INDEX, size, entries=n)

    def _dump_time_index(self, path: Path, display: str, size: int) -> Iterator[Event]:
        opts = self.opts
        base = _base_offset(path)
        data = _read(path)
        yield FileStart(display, FileKind.TIME_INDEX, size, base)
        n = entry_count(data, TIME_ENTRY_SIZE, TIME_ENTRY_RELATIVE_OFFSET)
        if not opts.kafka_compat and n == 1 and data[:TIME_ENTRY_SIZE] == bytes(TIME_ENTRY_SIZE):
            n = 0
        yield from self._padding_findings(display, data, TIME_ENTRY_SIZE, n, "time")
        if opts.index_sanity_check:
            yield from self._sanity(display, time_index_sanity_check, path, base)
            yield FileEnd(display, FileKind.TIME_INDEX, size, entries=n)
            return
        fr: FileRecords | None = None
        lookup: OffsetLookup | None = None
        if self.verify_index and n:
            for item in self._open_log(path, display):
                if isinstance(item, FileRecords):
                    fr = item
                else:
                    yield item
            index = _sibling(path, INDEX_SUFFIX)
            if fr is not None:
                # No .index: Kafka's OffsetIndex would create an empty one; lookups then start at byte 0.
                lookup = load_offset_lookup(index, base) if index.is_file() \
                    else OffsetLookup(base, array("q"), array("q"))
        show = opts.emit_data and not opts.verify_index_only
        limit = opts.decompress_limit
        try:
            prev_ts = NO_TIMESTAMP
            cursor = (-1, 0, 0)  # (lookup position, target offset, position where that scan stopped)
            for i, (ts, rel) in enumerate(TIME_ENTRY.iter_unpack(memoryview(data)[:n * TIME_ENTRY_SIZE])):
                off = base + rel
                if fr is not None and lookup is not None:
                    start = lookup.position_for(off)
                    if not 0 <= start < fr.size:
                        start = 0  # a damaged .index entry (reported when the .index is checked): scan from the start
                    begin = cursor[2] if start == cursor[0] and off >= cursor[1] else start
                    batch, stopped_at = _first_batch_reaching(fr, begin, off, opts.resync_limit)
                    cursor = (start, off, stopped_at)
                    if batch is None or batch.last_offset != off:
                        found = -1 if batch is None else batch.last_offset
                        yield self.finding("time-index-offset-not-found", ERROR, display,
                                             f"entry {i} (timestamp {ts}) indexes offset {off}, but the batch "
                                             f"reaching it ends at {found}", i * TIME_ENTRY_SIZE, off,
                                             index_offset=off, log_offset=found)
                    else:
                        try:
                            max_ts = NO_TIMESTAMP
                            for chunk in batch.record_chunks(limit=limit):
                                max_ts = max(max_ts, max((r[1] for r in chunk), default=NO_TIMESTAMP))
                        except KafkaToolError as e:
                            yield self.finding("time-index-unverifiable", ERROR, display,
                                                 f"entry {i} (offset {off}): records of the batch at byte "
                                                 f"{batch.position} do not decode: {e.message}",
                                                 i * TIME_ENTRY_SIZE, off)
                        else:
                            if max_ts != ts:
                                yield self.finding("time-index-mismatch", ERROR, display,
                                                     f"entry {i} (offset {off}) says timestamp {ts}, the batch's "
                                                     f"max record timestamp is {max_ts}", i * TIME_ENTRY_SIZE, off,
                                                     index_timestamp=ts, log_timestamp=max_ts)
                            if prev_ts >= ts:
                                yield self.finding("time-index-out-of-order", ERROR, display,
                                                     f"entry {i} (offset {off}) timestamp {ts} does not increase "
                                                     f"on {prev_ts}", i * TIME_ENTRY_SIZE, off,
                                                     index_timestamp=ts, previous_timestamp=prev_ts)
                if show:
                    yield IndexEntryEvent(display, EntryKind.TIME, i, TimestampOffset(ts, off))
                prev_ts = ts
        finally:
            if fr is not None:
                fr.close()
        yield FileEnd(display, FileKind.TIME_INDEX, size, entries=n)

    def _dump_txn_index(self, path: Path, display: str, size: int) -> Iterator[Event]:
        base = _base_offset(path)
        yield FileStart(display, FileKind.TXN_INDEX, size, base)
        try:
            entries = read_txn_index(path, strict=False)
        except CorruptDataError as e:
            yield self.finding("txnindex-corrupt", ERROR, display, e.message, e.position)
            entries = []
        show = self.opts.emit_data
        for i, txn in enumerate(entries):
            if self.verify_index and txn.last_offset < base:
                yield self.finding("txnindex-sanity", ERROR, display,
                                     f"aborted transaction {i} ends at offset {txn.last_offset}, before the segment's "
                                     f"base offset {base}", i * TXN_ENTRY_SIZE, txn.last_offset)
            if show:
                yield IndexEntryEvent(display, EntryKind.TXN, i, txn)
        if size % TXN_ENTRY_SIZE:
            yield self.finding("txnindex-partial-entry", ERROR, display,
                                 f"Unexpected partial transaction index entry: {size % TXN_ENTRY_SIZE} bytes after the "
                                 f"last whole {TXN_ENTRY_SIZE}-byte entry", size - size % TXN_ENTRY_SIZE)
        yield FileEnd(display, FileKind.TXN_INDEX, size, entries=len(entries))

    def _dump_producer_snapshot(self, path: Path, display: str, size: int) -> Iterator[Event]:
        prefix = path.name.split(".", 1)[0]
        yield FileStart(display, FileKind.PRODUCER_SNAPSHOT, size, int(prefix) if prefix.isdigit() else None)
        try:
            entries = read_snapshot(path)
        except CorruptDataError as e:
            # DumpLogSegments prints CorruptSnapshotException's message on stderr and goes on.
            yield self.finding("snapshot-corrupt", ERROR, display, e.message, e.position)
            entries = []
        if self.opts.emit_data:
            for i, entry in enumerate(entries):
                yield IndexEntryEvent(display, EntryKind.PRODUCER_SNAPSHOT, i, entry)
        yield FileEnd(display, FileKind.PRODUCER_SNAPSHOT, size, entries=len(entries))

    def _dump_text_file(self, path: Path, display: str, kind: FileKind, size: int) -> Iterator[Event]:
        """Checkpoints, partition.metadata, meta.properties, .kafka_cleanshutdown (not known to DumpLogSegments)."""
        yield FileStart(display, kind, size)
        entries: list[IndexEntryEvent] = []
        try:
            if kind == FileKind.LEADER_EPOCH_CHECKPOINT:
                epochs = read_leader_epoch_checkpoint(path)
                entries = [IndexEntryEvent(display, EntryKind.LEADER_EPOCH, i, e) for i, e in enumerate(epochs)]
                for i in range(1, len(epochs)):
                    if epochs[i].epoch <= epochs[i - 1].epoch or epochs[i].start_offset < epochs[i - 1].start_offset:
                        yield self.finding("leader-epoch-order", ERROR, display,
                                             f"entry {i} ({epochs[i].epoch} {epochs[i].start_offset}) does not follow "
                                             f"({epochs[i - 1].epoch} {epochs[i - 1].start_offset})")
            elif kind == FileKind.OFFSET_CHECKPOINT:
                offsets = read_offset_checkpoint(path)
                entries = [IndexEntryEvent(display, EntryKind.OFFSET_CHECKPOINT, i,
                                           OffsetCheckpointEntry(tp.topic, tp.partition, off))
                           for i, (tp, off) in enumerate(offsets.items())]
            elif kind == FileKind.PARTITION_METADATA:
                entries = [IndexEntryEvent(display, EntryKind.PARTITION_METADATA, 0, read_partition_metadata(path))]
            elif kind == FileKind.PROPERTIES:
                entries = [IndexEntryEvent(display, EntryKind.PROPERTY, i, PropertyEntry(k, v))
                           for i, (k, v) in enumerate(read_properties(path).items())]
            elif kind == FileKind.CLEAN_SHUTDOWN:
                entries = list(self._json_object_entries(path, display, size, "clean shutdown marker"))
            elif kind == FileKind.QUORUM_STATE:
                # KRaft's FileQuorumStateStore: one JSON object (leaderId, leaderEpoch, votedId, currentVoters,
                # data_version...), one entry per key.
                entries = list(self._json_object_entries(path, display, size, "KRaft quorum-state file"))
        except CorruptDataError as e:
            yield self.finding("checkpoint-corrupt", ERROR, display, e.message, e.position)
        if self.opts.emit_data:
            yield from entries
        yield FileEnd(display, kind, size, entries=len(entries))

    def _json_object_entries(self, path: Path, display: str, size: int, what: str) -> Iterator[IndexEntryEvent]:
        # The clean shutdown marker: 3.9 writes {"version":0,"brokerEpoch":N}; 2.x wrote an empty file.
        if size > MAX_CLEAN_SHUTDOWN_READ:
            raise CorruptDataError(f"implausibly large {what}", path=path)
        try:
            text = read_regular(path, limit=MAX_CLEAN_SHUTDOWN_READ).decode("utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise CorruptDataError(f"unreadable {what}: {e}", path=path) from None
        if not text:
            return
        try:
            obj = json.loads(text)
        except ValueError as e:
            pos = e.pos if isinstance(e, json.JSONDecodeError) else None
            raise CorruptDataError(f"the {what} is not JSON", path=path, position=pos) from None
        if not isinstance(obj, dict):
            raise CorruptDataError(f"the {what} is not a JSON object", path=path)
        for i, (k, v) in enumerate(obj.items()):
            yield IndexEntryEvent(display, EntryKind.PROPERTY, i, PropertyEntry(str(k), json.dumps(v)))
