"""``kafkatool dump``'s engine: walk segment, index, snapshot and checkpoint files and yield typed events.

What a ``.log`` walk does, batch by batch (Kafka's ``FileLogInputStream`` rules, ``file_records``):

* every batch's CRC is computed (DumpLogSegments prints ``isvalid`` for every batch); a mismatch is an
  error finding, and the walk goes on at ``position + size`` as Kafka's reader does;
* with ``deep``/``verify`` every record is decoded (bounded by ``decompress_limit``); a batch whose records
  do not decode is an error finding; legacy inner messages have their own CRC, checked with ``verify``;
* record offsets are followed as DumpLogSegments does for "Non-consecutive offsets" (deep), or batch by
  batch in a shallow walk: a forward gap is an info finding (normal after compaction), an offset that
  does not increase is an error;
* where Kafka's reader stops or throws (a size field below 14, a batch running past the end) the rest of
  the file is classified: zero padding (preallocated segments), a torn tail (nothing valid after it), or
  corruption in the middle, in which case the walk resumes at the next position whose header parses and
  whose CRC is valid, scanning at most ``resync_limit`` bytes. ``strict`` stops at the first invalid batch
  instead, as the broker's recovery would truncate there.

Memory does not depend on the file size: files are memory-mapped and walked once, records are decoded a
batch at a time, nothing is collected across batches.
"""

from __future__ import annotations

import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from itertools import count as _count
from operator import itemgetter
from pathlib import Path
from typing import Any

import crc32c as _crc32c

from kafkatool.batch import LOG_HEADER, LOG_OVERHEAD, MAGIC_V2, Record
from kafkatool.default_records import RECORD_BATCH_OVERHEAD, DefaultRecordBatch
from kafkatool.dump_events import (
    BatchEvent,
    DumpOptions,
    Event,
    FileEnd,
    FileKind,
    FileStart,
    Finding,
    Notice,
    NoticeKind,
    Progress,
    Severity,
    Summary,
)
from kafkatool.dump_filter import RecordSelector
from kafkatool.errors import CorruptRecordError, KafkaToolError, LimitExceededError
from kafkatool.file_records import FileRecords, LogInputStream
from kafkatool.legacy_records import RECORD_OVERHEAD_V0
from kafkatool.logdir import (
    CLEAN_SHUTDOWN_FILE,
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_DIR_CHECKPOINTS,
    LOG_SUFFIX,
    META_PROPERTIES,
    PARTITION_METADATA,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    PartitionDir,
    resolve_inputs,
)

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

KRAFT_SNAPSHOT_SUFFIX = ".checkpoint"  # org.apache.kafka.snapshot.Snapshots.SUFFIX
KRAFT_BOOTSTRAP_FILE = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
_KRAFT_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

# A position where a batch could start: any offset, a size of at least 14 below 2^31, then magic 0..2 at
# byte 16. Used only to pick candidates for the resync scan; each one is then confirmed by its CRC.
_CANDIDATE = re.compile(
    rb"(?s)(?=.{8}(?:[\x01-\x7f]...|\x00[\x01-\xff]..|\x00\x00[\x01-\xff].|\x00\x00\x00[\x0e-\xff])....[\x00-\x02])")
_NONZERO = re.compile(rb"[^\x00]")
_first_offsets = itemgetter(0)


def classify(path: Path) -> FileKind:
    """The file kind from its name: by the text after the last ``.``, as DumpLogSegments dispatches, plus
    the partition and log dir files Kafka's tool does not know."""
    name = path.name
    if name.endswith(LOG_SUFFIX):
        return FileKind.LOG
    if name.endswith(INDEX_SUFFIX):
        return FileKind.INDEX
    if name.endswith(TIME_INDEX_SUFFIX):
        return FileKind.TIME_INDEX
    if name.endswith(TXN_INDEX_SUFFIX):
        return FileKind.TXN_INDEX
    if name.endswith(SNAPSHOT_SUFFIX):
        return FileKind.PRODUCER_SNAPSHOT
    if name.endswith(KRAFT_SNAPSHOT_SUFFIX):
        return FileKind.KRAFT_SNAPSHOT
    if name == LEADER_EPOCH_CHECKPOINT:
        return FileKind.LEADER_EPOCH_CHECKPOINT
    if name == PARTITION_METADATA:
        return FileKind.PARTITION_METADATA
    if name in LOG_DIR_CHECKPOINTS:
        return FileKind.OFFSET_CHECKPOINT
    if name == META_PROPERTIES:
        return FileKind.PROPERTIES
    if name == CLEAN_SHUTDOWN_FILE:
        return FileKind.CLEAN_SHUTDOWN
    return FileKind.UNKNOWN


_SEGMENT_ORDER = {FileKind.LOG: 0, FileKind.INDEX: 1, FileKind.TIME_INDEX: 2, FileKind.TXN_INDEX: 3}


def partition_files(part: PartitionDir) -> list[Path]:
    """A partition dir's files in dump order: per segment ``.log .index .timeindex .txnindex``, then producer
    snapshots, KRaft snapshots, ``leader-epoch-checkpoint``, ``partition.metadata``, then everything else
    (index files without a ``.log``, ``.deleted``/``.cleaned``/``.swap`` files, unknown files)."""
    try:
        names = sorted(n for n in os.listdir(part.path) if (part.path / n).is_file())
    except OSError:
        names = []
    segment: list[tuple[int, int, Path]] = []
    snapshots: list[Path] = []
    kraft: list[Path] = []
    meta: list[Path] = []
    rest: list[Path] = []
    for name in names:
        f = part.path / name
        kind = classify(f)
        prefix = name.split(".", 1)[0]
        if kind in _SEGMENT_ORDER and len(prefix) == 20 and prefix.isdigit() and name.count(".") == 1:
            segment.append((int(prefix), _SEGMENT_ORDER[kind], f))
        elif kind == FileKind.PRODUCER_SNAPSHOT and name.count(".") == 1:
            snapshots.append(f)
        elif kind == FileKind.KRAFT_SNAPSHOT:
            kraft.append(f)
        elif kind in (FileKind.LEADER_EPOCH_CHECKPOINT, FileKind.PARTITION_METADATA):
            meta.append(f)
        else:
            rest.append(f)
    meta.sort(key=lambda p: 0 if p.name == LEADER_EPOCH_CHECKPOINT else 1)
    return [f for _, _, f in sorted(segment)] + snapshots + kraft + meta + rest


def log_dir_root_files(path: Path) -> list[Path]:
    names = [META_PROPERTIES, *LOG_DIR_CHECKPOINTS, CLEAN_SHUTDOWN_FILE]
    return [path / n for n in names if (path / n).is_file()]


def plan_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Every file to dump, in argument order; a dir expands to its files (``logdir.resolve_inputs``)."""
    for raw in paths:
        inputs = resolve_inputs([raw])
        yield from inputs.files
        for part in inputs.partitions:
            yield from partition_files(part)
        for ld in inputs.log_dirs:
            yield from log_dir_root_files(ld.path)
            for part in ld.partitions:
                yield from partition_files(part)


def base_offset_of(path: Path) -> int | None:
    prefix = path.name.split(".", 1)[0]
    return int(prefix) if prefix.isdigit() else None


class _Totals:
    __slots__ = ("files", "batches", "records", "records_known", "bytes", "invalid_batches", "errors", "warnings",
                 "infos", "io_errors", "first_offset", "last_offset", "max_timestamp", "codecs", "magics", "entries")

    def __init__(self) -> None:
        self.files = self.batches = self.records = self.bytes = self.invalid_batches = 0
        self.errors = self.warnings = self.infos = self.io_errors = self.entries = 0
        self.records_known = True
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.max_timestamp: int | None = None
        self.codecs: dict[int, int] = {}
        self.magics: dict[int, int] = {}

    def count(self, f: Finding) -> Finding:
        if f.severity == ERROR:
            self.errors += 1
        elif f.severity == WARNING:
            self.warnings += 1
        else:
            self.infos += 1
        return f

    def summary(self) -> Summary:
        from kafkatool.codecs import Codec

        codecs = {}
        for cid, n in sorted(self.codecs.items()):
            try:
                label = Codec(cid).label
            except ValueError:
                label = f"unknown({cid})"
            codecs[label] = n
        return Summary(self.files, self.batches, self.records if self.records_known else None, self.bytes,
                       self.invalid_batches, self.errors, self.warnings, self.infos, self.io_errors,
                       self.first_offset, self.last_offset, self.max_timestamp, codecs,
                       dict(sorted(self.magics.items())), self.entries)


class DumpEngine:
    """Yields the events of dumping ``paths`` (files, partition dirs, log dirs) under ``options``."""

    def __init__(self, options: DumpOptions) -> None:
        self.opts = options
        self.totals = _Totals()

    @property
    def verify_index(self) -> bool:
        o = self.opts
        return o.verify_index or o.verify_index_only or o.kafka_compat

    def run(self, paths: Iterable[str | os.PathLike[str]]) -> Iterator[Event]:
        for path in plan_files(paths):
            yield from self.dump_file(path)
        yield self.totals.summary()

    def finding(self, kind: str, severity: Severity, path: str, message: str, position: int | None = None,
                offset: int | None = None, **data: Any) -> Finding:
        return self.totals.count(Finding(kind, severity, path, message, position, offset, data))

    def padding_severity(self) -> Severity:
        return ERROR if self.opts.strict else INFO

    def dump_file(self, path: Path, kind: FileKind | None = None) -> Iterator[Event]:
        from kafkatool import dump_index

        kind = classify(path) if kind is None else kind
        display = str(path)
        self.totals.files += 1
        try:
            st = os.stat(path)
            problem = None if stat.S_ISREG(st.st_mode) else "not a regular file"
        except OSError as e:
            st, problem = None, f"cannot read: {e.strerror}"
        if st is None or problem is not None:
            # Never open FIFOs or devices: a read could block forever.
            yield FileStart(display, kind, 0)
            self.totals.io_errors += 1
            yield self.finding("io-error", ERROR, display, problem or "unreadable")
            yield FileEnd(display, kind, 0)
            return
        size = st.st_size
        try:
            if kind.is_records:
                yield from self._dump_records_file(path, display, kind, size)
            elif kind == FileKind.UNKNOWN:
                yield FileStart(display, kind, size)
                yield Notice(display, NoticeKind.UNKNOWN_FILE)
                yield FileEnd(display, kind, size)
            else:
                for ev in dump_index.dump_file(self, path, display, kind, size):
                    if type(ev) is FileEnd:
                        self.totals.entries += ev.entries
                    yield ev
        except KafkaToolError as e:
            # Unreadable or refused input (exit 2): report it and go on with the other files.
            self.totals.io_errors += 1
            e.at(display)
            yield self.finding("io-error", ERROR, display, e.message, e.position)
            yield FileEnd(display, kind, size)

    # ------------------------------------------------------------------ .log / KRaft snapshot files
    def _dump_records_file(self, path: Path, display: str, kind: FileKind, size: int) -> Iterator[Event]:
        base = base_offset_of(path) if kind == FileKind.LOG else None
        end_offset = epoch = None
        bootstrap = False
        if kind == FileKind.KRAFT_SNAPSHOT:
            m = _KRAFT_SNAPSHOT_RE.match(path.name)
            if m:
                end_offset, epoch = int(m.group(1)), int(m.group(2))
            bootstrap = path.name == KRAFT_BOOTSTRAP_FILE
        fr = FileRecords(path, max_bytes=self.opts.max_bytes)
        try:
            yield FileStart(display, kind, size, base, end_offset, epoch, bootstrap)
            start = 0
            if self.opts.from_offset is not None and base is not None:
                start = seek_position(fr, path, base, self.opts.from_offset)
            yield from self._walk(fr, display, kind, start)
        finally:
            fr.close()

    def _walk(self, fr: FileRecords, display: str, kind: FileKind, start: int) -> Iterator[Event]:
        opts = self.opts
        t = self.totals
        end = fr.size
        buf = fr.buf
        strict = opts.strict
        need_records = opts.needs_records
        exact_counts = opts.exact_counts
        emit = opts.emit_data
        emit_records = opts.deep and emit
        limit = opts.decompress_limit
        verify_inner = opts.verify
        from_off, to_off = opts.from_offset, opts.to_offset
        from_ts, to_ts = opts.from_time, opts.to_time
        filter_records = opts.filters_offsets or opts.filters_time
        flt = opts.record_filter
        selector = None
        if (flt is not None and flt.on_records) or (opts.parser is not None and emit_records):
            selector = RecordSelector(flt, opts.parser)
        select_filters = flt is not None and flt.on_records
        v2_type = DefaultRecordBatch
        progress_every = opts.progress_every
        next_progress = start + progress_every
        codecs = t.codecs
        magics = t.magics

        last = -1  # last offset followed (DumpLogSegments' lastOffset for "Non-consecutive offsets")
        n_batches = 0
        n_records = 0
        records_known = True
        walked = 0  # bytes of every batch the walker returned (filtered or not): Kafka's validBytes
        emitted_bytes = 0
        stopped: str | None = None
        p = start
        while stopped is None:
            stream: LogInputStream = fr.batches(p)
            try:
                for batch in stream:
                    pos = batch.position
                    size = batch.size
                    walked += size
                    if pos >= next_progress:
                        yield Progress(display, pos, end)
                        next_progress = pos + progress_every
                    is_v2 = type(batch) is v2_type
                    if is_v2:
                        h = batch.h  # type: ignore[union-attr]
                        first: int | None = h[0]
                        last_off = h[0] + h[6]
                        max_ts = h[8]
                        first_ts = h[7] if not h[5] & 0x40 else None
                        codec_id = h[5] & 7
                        magic = h[3]
                    else:
                        last_off = batch.offset  # type: ignore[union-attr]
                        codec_id = batch.attributes & 7
                        first = last_off if not codec_id else None
                        max_ts = first_ts = batch.timestamp  # type: ignore[union-attr]
                        magic = batch.magic
                    # Header-level filters (exact for offsets; for time, records are filtered again below).
                    if from_off is not None and last_off < from_off:
                        last = last_off
                        continue
                    if to_off is not None and first is not None and first > to_off:
                        stopped = "to-offset"
                        break
                    if from_ts is not None and max_ts < from_ts:
                        last = last_off
                        continue
                    if to_ts is not None and not need_records and first_ts is not None and first_ts > to_ts:
                        last = last_off
                        continue
                    crc_ok = batch.is_valid()
                    bad = not crc_ok
                    if bad:
                        t.invalid_batches += 1
                        yield self.finding(
                            "crc-mismatch", ERROR, display,
                            f"batch (offsets ..{last_off}, magic {magic}, {size} bytes) is corrupt: stored crc "
                            f"{batch.crc} != computed {batch.compute_crc()}", pos, last_off)
                    if flt is not None and not (
                            flt.batch_matches(h[9], h[10], bool(h[5] & 0x10), bool(h[5] & 0x20)) if is_v2
                            else flt.batch_matches(-1, -1, False, False)):  # v0/v1: Kafka's defaults
                        # Filtered out from its header: still CRC-checked and followed for offset gaps (at the
                        # batch boundary), never decompressed.
                        if first is not None and last != -1 and first != last + 1:
                            yield self._gap(display, pos, last, first)
                        last = last_off
                        if strict and bad:
                            stopped = "strict"
                            break
                        continue

                    recs: list[Record] | None = None
                    if need_records or (exact_counts and not is_v2 and codec_id):
                        try:
                            recs = batch.records(limit=limit)
                        except KafkaToolError as e:
                            bad = True
                            if crc_ok:
                                t.invalid_batches += 1
                            kind_ = "decompress-limit" if isinstance(e, LimitExceededError) else "invalid-records"
                            yield self.finding(kind_, ERROR, display,
                                               f"records of the batch at byte {pos} (offsets ..{last_off}) do not "
                                               f"decode: {e.message}", pos, last_off, error_position=e.position)
                    if recs is not None and verify_inner and not is_v2 and codec_id:
                        for r in recs:
                            if r.crc_valid is False:
                                yield self.finding("record-crc-mismatch", ERROR, display,
                                                   f"inner message at offset {r.offset} of the wrapper at byte {pos} "
                                                   f"has a bad crc ({r.crc})", pos, r.offset)

                    base = first if first is not None else (recs[0][0] if recs else None)
                    # Offsets, as DumpLogSegments follows them (per record when deep, else per batch).
                    if recs:
                        if need_records:
                            f0 = recs[0][0]
                            if last != -1 and f0 != last + 1:
                                yield self._gap(display, pos, last, f0)
                            nr = len(recs)
                            if nr > 1 and (recs[-1][0] - f0 != nr - 1
                                           or not all(map(int.__eq__, map(_first_offsets, recs), _count(f0)))):
                                prev = f0
                                for r in recs[1:]:
                                    o = r[0]
                                    if o != prev + 1:
                                        yield self._gap(display, pos, prev, o)
                                    prev = o
                            last = recs[-1][0]
                        else:
                            first = recs[0][0]
                    if not need_records:
                        if first is not None and last != -1 and first != last + 1:
                            yield self._gap(display, pos, last, first)
                        last = last_off

                    decoded = None
                    if recs is not None and (filter_records or selector is not None):
                        if filter_records:
                            recs = [r for r in recs if (from_off is None or r[0] >= from_off)
                                    and (to_off is None or r[0] <= to_off)
                                    and (from_ts is None or r[1] >= from_ts) and (to_ts is None or r[1] <= to_ts)]
                        if selector is not None and recs:
                            recs, decoded, failures = selector.select(
                                recs, bool(h[5] & 0x20) if is_v2 else False, emit_records)
                            for fail in failures:
                                yield self.finding("decode-error", WARNING, display, fail.error.message, pos,
                                                   fail.record.offset)
                        if not recs and (filter_records or select_filters):
                            if strict and bad:
                                stopped = "strict"
                                break
                            continue

                    n_batches += 1
                    emitted_bytes += size
                    codecs[codec_id] = codecs.get(codec_id, 0) + 1
                    magics[magic] = magics.get(magic, 0) + 1
                    if recs is not None:
                        n_records += len(recs)
                    elif is_v2:
                        if crc_ok:  # a damaged header's count means nothing
                            n_records += h[12]
                    elif not codec_id:
                        n_records += 1
                    else:
                        records_known = False
                    if t.first_offset is None:
                        t.first_offset = base if base is not None else last_off
                    if t.last_offset is None or last_off > t.last_offset:
                        t.last_offset = last_off
                    if t.max_timestamp is None or max_ts > t.max_timestamp:
                        t.max_timestamp = max_ts
                    if emit:
                        yield BatchEvent(display, batch, crc_ok, recs if emit_records else None, base, decoded)
                    if strict and bad:
                        stopped = "strict"
                        break
            except CorruptRecordError:
                pass  # the size field is below 14: end_state says where; classified below
            if stopped is not None:
                break
            st = stream.end_state
            if st is None or st.kind == "end":
                break
            at = st.position
            rest = end - at
            if end < fr.file_size and st.kind in ("short-tail", "size-past-end"):
                # A batch that runs past --max-bytes is where the user cut the file, not a torn write (Kafka's
                # DumpLogSegments reports trailing bytes only when --max-bytes is unset).
                stopped = "max-bytes"
                break
            if _all_zero(buf, at, end):
                yield self.finding("trailing-zeros", self.padding_severity(), display,
                                   f"{rest} zero bytes after the last batch (preallocated segment or a torn write "
                                   "of zeros; the broker's recovery truncates them)", at, bytes=rest)
                break
            if st.kind == "short-tail":
                yield self.finding("torn-tail", ERROR if strict else WARNING, display,
                                   f"{rest} bytes at the end are too few for a batch header (torn write)", at,
                                   bytes=rest)
                break
            if strict:
                kind_ = "torn-tail" if st.kind == "size-past-end" else "corrupt"
                yield self.finding(kind_, ERROR, display, f"{st.message}; stopping here (--strict)", at, bytes=rest)
                stopped = "strict"
                break
            q = find_next_batch(buf, at + 1, end, opts.resync_limit, fr)
            if q is None:
                scanned = min(rest, opts.resync_limit)
                if st.kind == "size-past-end":
                    yield self.finding("torn-tail", WARNING, display,
                                       f"{st.message} and no valid batch follows (torn write of the last batch)",
                                       at, bytes=rest)
                else:
                    yield self.finding("corrupt", ERROR, display,
                                       f"{st.message}; no valid batch in the next {scanned} bytes, {rest} bytes "
                                       "not dumped", at, bytes=rest)
                break
            yield self.finding("corrupt-region", ERROR, display,
                               f"{q - at} unparseable bytes ({st.message}); resuming at the next valid batch at "
                               f"byte {q}", at, bytes=q - at, resume=q)
            p = q

        t.batches += n_batches
        t.bytes += emitted_bytes
        if records_known:
            t.records += n_records
        else:
            t.records_known = False
        invalid = 0 if stopped in ("to-offset", "max-bytes") else max(0, end - start - walked)
        yield FileEnd(display, kind, fr.file_size, n_batches, n_records if records_known else None, 0, walked,
                      invalid, stopped)

    def _gap(self, display: str, pos: int, prev: int, nxt: int) -> Finding:
        if nxt <= prev:
            return self.finding("offset-order", ERROR, display, f"offset {prev} is followed by {nxt}", pos, nxt,
                                previous=prev, next=nxt)
        return self.finding("offset-gap", INFO, display, f"{prev} is followed by {nxt}", pos, nxt,
                            previous=prev, next=nxt)


# ---------------------------------------------------------------------------------------------- helpers

def _all_zero(buf: Any, start: int, end: int) -> bool:
    return start >= end or _NONZERO.search(buf, start, end) is None


def valid_batch_at(buf: Any, q: int, end: int, fr: FileRecords | None = None) -> bool:
    """Does a complete batch with a valid CRC start at ``q``? (v2: CRC-32C; v0/v1: CRC-32).

    With ``fr``, a candidate larger than the mapped-page window (in damaged data the size field is often
    garbage) is checksummed window by window, its pages handed back after each."""
    if end - q <= LOG_OVERHEAD + 5:
        return False
    _, size = LOG_HEADER.unpack_from(buf, q)
    if size < RECORD_OVERHEAD_V0 or q + LOG_OVERHEAD + size > end:
        return False
    magic = buf[q + 16]
    stop = q + LOG_OVERHEAD + size
    if magic == MAGIC_V2:
        if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            return False
        stored = int.from_bytes(buf[q + 17:q + 21], "big")
        return _crc(_crc32c.crc32c, buf, q + 21, stop, fr) == stored
    if magic > MAGIC_V2:
        return False
    stored = int.from_bytes(buf[q + 12:q + 16], "big")
    return _crc(zlib.crc32, buf, q + 16, stop, fr) == stored


def _crc(fn: Any, buf: Any, start: int, stop: int, fr: FileRecords | None) -> int:
    if fr is None or stop - start <= fr.window:
        return int(fn(buf[start:stop]))
    value = 0
    for s in range(start, stop, fr.window):
        e = min(stop, s + fr.window)
        value = fn(buf[s:e], value)
        fr.drop_range(s, e)
    return int(value)


_LOOKAHEAD = 17  # bytes a candidate match reads: offset, size, epoch/crc, magic


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
    """Where to start walking for ``--from-offset``: the ``.index`` entry at or below ``target`` (Kafka's
    ``OffsetIndex.lookup``), only if a CRC-valid batch starts there; else 0."""
    from kafkatool.dump_index import load_offset_lookup

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
        recs = ev.batch.records(limit=limit)
    except KafkaToolError:
        return None
    return int(recs[0][0]) if recs else None
