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
from collections.abc import Generator, Iterable, Iterator
from itertools import chain
from itertools import count as _count
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkatool._accel import crc32c as _crc32c
from kafkatool._accel import speedups as _C
from kafkatool.constants import INT32_MAX, INT64_MAX
from kafkatool.dump.control import describe_control
from kafkatool.dump.events import (
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
    RecordsEvent,
    Severity,
    Summary,
)
from kafkatool.dump.filter import RecordSelector
from kafkatool.dump.indexes import IndexFiles
from kafkatool.dump.paths import base_offset_of, classify, plan_files
from kafkatool.dump.resync import (
    batch_fits,
    find_next_batch,
    not_a_batch_start,
    seek_position,
    valid_batch_at,
)
from kafkatool.errors import CorruptRecordError, KafkaToolError, LimitExceededError, NotRegularFileError
from kafkatool.record.batch import MAGIC_V2, Record
from kafkatool.record.codecs import crc32 as _crc32
from kafkatool.record.codecs import decompress
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.file_records import FileRecords, LogInputStream, RecordBatch
from kafkatool.record.sniff import looks_like
from kafkatool.record.validate import RecordChecks, magic_problem, offset_problems, record_problems
from kafkatool.util.regular import irregular as _irregular

if TYPE_CHECKING:
    from kafkatool.decoders import MessageParser

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

KRAFT_BOOTSTRAP_FILE = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
_KRAFT_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

_first_offsets = itemgetter(0)


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
        from kafkatool.record.codecs import Codec

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
        self._mute = False  # findings made while set are not counted (and dropped by the caller)
        self._index_files = IndexFiles(options, self.finding)
        self._auto_parsers: dict[str, MessageParser] = {}

    def run(self, paths: Iterable[str | os.PathLike[str]],
            named: dict[str, tuple[Path, FileKind]] | None = None) -> Iterator[Event]:
        """Dump ``paths`` in order; ``named`` maps a path as given (``-``) to the file that holds it and its
        kind (``dump -``: stdin), shown as given."""
        for raw in paths:
            key = os.fspath(raw)
            if named is not None and key in named:
                path, kind = named[key]
                yield from self.dump_file(path, kind, display=key)
                continue
            if not self.opts.kafka_compat and classify(Path(raw)) == FileKind.UNKNOWN and os.path.isfile(raw):
                yield from self._named_unknown(Path(raw))
                continue
            for path, walked in plan_files([raw], kafka_files_only=self.opts.kafka_compat,
                                           selection=self.opts.selection):
                yield from self.dump_file(path, walked=walked)
        yield self.totals.summary()

    def _named_unknown(self, path: Path) -> Iterator[Event]:
        """A file named on the command line whose name is none of Kafka's: dumped as what its bytes are (a segment
        or an index under another name), else an error (exit 2): the operator asked for a file dump cannot read."""
        from kafkatool.dump.stdin import KINDS, sniff_kind

        try:
            sniffed = sniff_kind(path) if os.path.getsize(path) else None
        except (OSError, KafkaToolError):
            sniffed = None
        if sniffed is not None:
            yield from self.dump_file(path, KINDS[sniffed][0])
            return
        display = str(path)
        size = os.path.getsize(path)
        self.totals.files += 1
        self.totals.io_errors += 1
        yield FileStart(display, FileKind.UNKNOWN, size)
        yield self.finding("not-a-kafka-file", ERROR, display, "not a Kafka file: neither its name nor its bytes are "
                           "a segment, an index, a snapshot or a checkpoint")
        yield FileEnd(display, FileKind.UNKNOWN, size)

    def finding(self, kind: str, severity: Severity, path: str, message: str, position: int | None = None,
                offset: int | None = None, **data: Any) -> Finding:
        f = Finding(kind, severity, path, message, position, offset, data)
        return f if self._mute else self.totals.count(f)

    def dump_file(self, path: Path, kind: FileKind | None = None, *, walked: bool = False, start: int = 0,
                  stop: int | None = None, display: str | None = None,
                  max_bytes: int | None = None) -> Iterator[Event]:
        """The events of one file. ``walked``: met in a walk of a partition or log dir, where a file that is not a
        regular file is a finding (exit 1); named on the command line, an I/O error (exit 2). For a ``.log``,
        ``start`` and ``stop`` walk a byte range of it as the walk from byte 0 would: from ``start`` (a batch
        boundary) to the first batch position at or after ``stop``, which ``FileEnd.handoff`` names, so ranges whose
        hand-offs meet the next range's start give exactly the walk of the whole file (``spark-scan`` walks segments
        range by range this way). ``display`` names the file in the events (a URL whose bytes ``path`` mirrors);
        ``max_bytes`` cuts the file as the option does."""
        kind = classify(path) if kind is None else kind
        display = str(path) if display is None else display
        self.totals.files += 1
        try:
            irregular = _irregular(path)
            if irregular is None:
                size = os.stat(path).st_size
        except OSError as e:
            # Never open FIFOs or devices: a read could block forever.
            yield FileStart(display, kind, 0)
            self.totals.io_errors += 1
            yield self.finding("io-error", ERROR, display, f"cannot read: {e.strerror}")
            yield FileEnd(display, kind, 0)
            return
        if irregular is not None:
            yield from self._not_regular(NotRegularFileError(irregular, path=display), kind, walked)
            return
        try:
            if kind.is_records:
                yield from self._dump_records_file(path, display, kind, size, start, stop, max_bytes)
            elif kind == FileKind.UNKNOWN:
                yield FileStart(display, kind, size)
                yield Notice(display, NoticeKind.UNKNOWN_FILE)
                yield FileEnd(display, kind, size)
            else:
                for ev in self._index_files.dump_file(path, display, kind, size):
                    if type(ev) is FileEnd:
                        self.totals.entries += ev.entries
                    yield ev
        except NotRegularFileError as e:  # the file was swapped for a FIFO or a device since the check above
            yield from self._not_regular(e, kind, walked)
        except KafkaToolError as e:
            # Unreadable or refused input (exit 2): report it and go on with the other files.
            self.totals.io_errors += 1
            e.at(display)
            yield self.finding("io-error", ERROR, display, e.message, e.position)
            yield FileEnd(display, kind, size)

    def _not_regular(self, e: NotRegularFileError, kind: FileKind, walked: bool) -> Iterator[Event]:
        """A file that is not a regular file, never read: a finding in a dir walk, an I/O error when named."""
        display = e.path or ""
        yield FileStart(display, kind, 0)
        if walked:
            yield self.finding(e.finding, ERROR, display, e.message, file_type=e.kind)
        else:
            self.totals.io_errors += 1
            yield self.finding("io-error", ERROR, display, e.message)
        yield FileEnd(display, kind, 0)

    # ------------------------------------------------------------------ .log / KRaft snapshot files
    def _dump_records_file(self, path: Path, display: str, kind: FileKind, size: int, first: int = 0,
                           stop: int | None = None, max_bytes: int | None = None) -> Iterator[Event]:
        base = base_offset_of(path) if kind == FileKind.LOG else None
        end_offset = epoch = None
        bootstrap = False
        if kind == FileKind.KRAFT_SNAPSHOT:
            m = _KRAFT_SNAPSHOT_RE.match(path.name)
            if m:
                end_offset, epoch = int(m.group(1)), int(m.group(2))
            bootstrap = path.name == KRAFT_BOOTSTRAP_FILE
        fr = FileRecords(path, max_bytes=self.opts.max_bytes if max_bytes is None else max_bytes)
        try:
            yield FileStart(display, kind, size, base, end_offset, epoch, bootstrap)
            start = first
            if self.opts.from_offset is not None and base is not None and start == 0:
                start = seek_position(fr, path, base, self.opts.from_offset)
            looks = None
            if kind == FileKind.LOG and start == 0 and fr.size and not valid_batch_at(fr.buf, 0, fr.size, fr):
                looks = looks_like(fr.buf, fr.file_size)
            parser = self.opts.parser
            if parser is None:
                parser = self._auto_parser(path)
            if looks is None:
                yield from self._walk(fr, display, kind, start, base, parser, stop)
                return
            yield self.finding("wrong-file-type", ERROR, display,
                               f"not a log segment: no batch starts at byte 0, and the content looks like {looks}",
                               0, looks_like=looks)
            if not self.opts.kafka_compat:
                yield FileEnd(display, kind, fr.file_size, invalid_bytes=fr.size, stopped="wrong-file-type",
                              reader_stop=0)
                return
            # dump-log: print what Kafka's tool prints for these bytes (it reads any file as a log), without
            # findings about batches that are not batches.
            self._mute = True
            try:
                for ev in self._walk(fr, display, kind, start, base, parser):
                    if type(ev) is not Finding:
                        yield ev
            finally:
                self._mute = False
        finally:
            fr.close()

    def _auto_parser(self, path: Path) -> MessageParser | None:
        """The decoder of an internal topic's partition dir (``decoders.auto_decoder``), when no option set one."""
        if not path.parent.name.startswith("__"):  # every internal topic's name does: no decoder to load
            return None
        from kafkatool.decoders import auto_decoder, resolve_parser

        name = auto_decoder(path.parent.name)
        if name is None:
            return None
        parser = self._auto_parsers.get(name)
        if parser is None:
            parser = self._auto_parsers[name] = resolve_parser(name)
        return parser

    def _walk(self, fr: FileRecords, display: str, kind: FileKind, start: int,
              base_offset: int | None = None, parser: MessageParser | None = None,
              stop: int | None = None) -> Iterator[Event]:
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
        if (flt is not None and flt.on_records) or (parser is not None and emit_records):
            selector = RecordSelector(flt, parser)
        select_filters = flt is not None and flt.on_records
        v2_type = DefaultRecordBatch
        progress_every = opts.progress_every
        next_progress = start + progress_every
        codecs = t.codecs
        magics = t.magics
        # The compiled walk takes runs of batches that need nothing from the loop below (no output, no filter,
        # a valid CRC, offsets that follow on; deep, records that decode): a summary-only run.
        observer = opts.observer
        # An observer that lets the compiled walk add up its figures (spark-scan's statistics) keeps the walk.
        fast_state = observer.fast_state if observer is not None else None
        fast = _C is not None and not emit and flt is None and not filter_records and selector is None \
            and (fast_state is None or fast_state() is not None)
        fast_walk = _C.dump_walk if fast and _C is not None else None
        fast_flags = (1 if need_records else 0) | (2 if verify_inner or exact_counts else 0)
        window = fr.window

        def fast_decompress(codec_id: int, data: memoryview) -> bytes:
            return decompress(codec_id, data, limit=limit, magic=MAGIC_V2)

        last = -1  # last offset followed (DumpLogSegments' lastOffset for "Non-consecutive offsets")
        n_batches = 0
        n_records = 0
        records_known = True
        walked = 0  # bytes of every batch the walker returned (filtered or not): Kafka's validBytes
        emitted_bytes = 0
        stopped: str | None = None
        handoff: int | None = None  # a range walk's end: the first batch position at or after ``stop``
        reader_stop: int | None = None  # where Kafka's reader stops (the first unparseable position)
        reader_throws = False
        overflow_reported = False
        p = start
        while stopped is None:
            stream: LogInputStream = fr.batches(p)
            try:
                for batch in stream:
                    pos = batch.position
                    if stop is not None and pos >= stop:
                        stopped, handoff = "handoff", pos
                        break
                    if fast_walk is not None and pos < next_progress:
                        limit_at = min(next_progress, pos + window) if stop is None else min(next_progress,
                                                                                              pos + window, stop)
                        if fast_state is None:
                            r = fast_walk(buf, pos, limit_at, stream.end, last, fast_flags,
                                          _crc32c.crc32c, _crc32, fast_decompress)
                            figures = None
                        else:
                            state = fast_state()
                            rf = None if state is None else fast_walk(
                                buf, pos, limit_at, stream.end, last, fast_flags, _crc32c.crc32c, _crc32,
                                fast_decompress, state)
                            r, figures = (None, None) if rf is None else rf
                        if r is not None and r.position != pos and base_offset is not None \
                                and not overflow_reported and not (r.first_offset >= base_offset
                                                                   and r.max_last_offset - base_offset <= INT32_MAX):
                            # an offset in the run may not fit the segment's relative offsets: the loop below
                            # finds the batch (offset-overflow) and walks the rest of the file
                            fast_walk = None
                            r = None
                        if r is not None and r.position != pos:
                            if figures is not None and observer is not None:
                                observer.absorb(figures, r.max_last_offset)
                            walked += r.nbytes
                            emitted_bytes += r.nbytes
                            n_batches += r.batches
                            n_records += r.records
                            last = r.last_offset
                            if r.unknown_counts:
                                records_known = False
                            for cid, c in enumerate(r.codecs):
                                if c:
                                    codecs[cid] = codecs.get(cid, 0) + c
                            for m, c in enumerate(r.magics):
                                if c:
                                    magics[m] = magics.get(m, 0) + c
                            if t.first_offset is None:
                                t.first_offset = r.first_offset
                            if t.last_offset is None or r.max_last_offset > t.last_offset:
                                t.last_offset = r.max_last_offset
                            if t.max_timestamp is None or r.max_timestamp > t.max_timestamp:
                                t.max_timestamp = r.max_timestamp
                            stream.jump(r.position)
                            continue
                    size = batch.size
                    walked += size
                    if pos >= next_progress:
                        yield Progress(display, pos, end)
                        next_progress = pos + progress_every
                    is_v2 = type(batch) is v2_type
                    if is_v2:
                        h = batch.h  # type: ignore[union-attr]
                        first: int | None = h.base_offset
                        last_off = h.base_offset + h.last_offset_delta
                        max_ts = h.max_timestamp
                        first_ts = h.base_timestamp if not h.attributes & 0x40 else None
                        codec_id = h.attributes & 7
                        magic = h.magic
                    else:
                        last_off = batch.offset  # type: ignore[union-attr]
                        codec_id = batch.attributes & 7
                        first = last_off if not codec_id else None
                        max_ts = first_ts = batch.timestamp  # type: ignore[union-attr]
                        magic = batch.magic
                    if not 0 <= magic <= MAGIC_V2:
                        p_magic = magic_problem(batch)
                        assert p_magic is not None
                        yield self.finding(p_magic.kind, ERROR, display, p_magic.message, pos, last_off, magic=magic)
                    if base_offset is not None and not overflow_reported and not (
                            0 <= last_off - base_offset <= INT32_MAX):
                        overflow_reported = True
                        yield self.finding(
                            "offset-overflow", WARNING, display,
                            f"batch offset {last_off} does not fit the segment's relative offsets ({base_offset}.."
                            f"{base_offset + INT32_MAX}): the broker's recovery throws "
                            "LogSegmentOffsetOverflowException and splits the segment at startup (KAFKA-6264)", pos,
                            last_off, base_offset=base_offset)
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
                    if to_ts is not None and not need_records and first_ts is not None and first_ts >= to_ts:
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
                    elif last_off >= INT64_MAX or (is_v2 and h.last_offset_delta < 0):
                        for prob in offset_problems(batch):
                            bad = True
                            yield self.finding(prob.kind, ERROR, display, prob.message, pos, prob.offset)
                    if flt is not None and not (
                            flt.batch_matches(h.producer_id, h.producer_epoch, bool(h.attributes & 0x10),
                                              bool(h.attributes & 0x20)) if is_v2
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
                    more: Iterator[list[Record]] | None = None
                    # A count is of records (with an offset or time window: those inside it, which a batch that
                    # straddles an end of the window only tells once decoded).
                    if need_records or (exact_counts and ((not is_v2 and codec_id) or (filter_records and not (
                            from_ts is None and to_ts is None and (from_off is None or (first is not None
                                                                                        and first >= from_off))
                            and (to_off is None or last_off <= to_off))))):
                        try:
                            chunks = batch.record_chunks(limit=limit)
                            recs = next(chunks)
                            second = next(chunks, None)
                        except KafkaToolError as e:
                            bad = True
                            if crc_ok:
                                t.invalid_batches += 1
                            kind_ = "decompress-limit" if isinstance(e, LimitExceededError) else "invalid-records"
                            yield self.finding(kind_, ERROR, display,
                                               f"records of the batch at byte {pos} (offsets ..{last_off}) do not "
                                               f"decode: {e.message}", pos, last_off, error_position=e.position)
                        else:
                            if second is not None:
                                more = chain((recs, second), chunks)
                    if more is not None and recs:
                        # More records than a run holds at once: the batch a chunk at a time.
                        cbase = first if first is not None else recs[0][0]
                        if not need_records:  # legacy records counted: offsets followed batch by batch
                            if last != -1 and recs[0][0] != last + 1:
                                yield self._gap(display, pos, last, recs[0][0])
                            last = last_off
                        check = RecordChecks(batch, crc=verify_inner, order=False, control=self._control_problem) \
                            if crc_ok and (codec_id and not is_v2 or is_v2 and need_records) else None
                        followed, kept, n, found = yield from self._chunked_records(
                            display, batch, pos, crc_ok, more, last, cbase, selector, emit_records, need_records,
                            check)
                        bad = bad or found
                        if need_records:
                            last = followed
                        if kept:
                            n_batches += 1
                            emitted_bytes += size
                            codecs[codec_id] = codecs.get(codec_id, 0) + 1
                            magics[magic] = magics.get(magic, 0) + 1
                            n_records += n
                            if t.first_offset is None:
                                t.first_offset = cbase
                            if t.last_offset is None or last_off > t.last_offset:
                                t.last_offset = last_off
                            if t.max_timestamp is None or max_ts > t.max_timestamp:
                                t.max_timestamp = max_ts
                        if strict and bad:
                            stopped = "strict"
                            break
                        continue
                    if recs is not None and crc_ok and (codec_id and not is_v2 or is_v2 and need_records):
                        # What the records say of their batch: legacy inner CRCs (verify) and a cut inner set,
                        # offsets outside the batch, malformed control records (offsets are followed below).
                        for prob in record_problems(batch, recs, crc=verify_inner, order=False,
                                                    control=self._control_problem):
                            bad = True
                            yield self.finding(prob.kind, ERROR, display, prob.message, pos, prob.offset)

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
                                    and (from_ts is None or r[1] >= from_ts) and (to_ts is None or r[1] < to_ts)]
                        if selector is not None and recs:
                            recs, decoded, failures = selector.select(
                                recs, bool(h.attributes & 0x20) if is_v2 else False, emit_records)
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
                            n_records += h.records_count
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
                    if observer is not None:
                        observer.batch(batch, crc_ok, recs)
                    if strict and bad:
                        stopped = "strict"
                        break
            except CorruptRecordError:
                pass  # the size field is below 14: end_state says where; classified below
            if stopped is not None:
                break
            st = stream.end_state
            if st is not None and stop is not None and st.position >= stop:
                stopped, handoff = "handoff", st.position  # the next range's walk judges what is there
                break
            if st is None or st.kind == "end":
                break
            at = st.position
            rest = end - at
            if reader_stop is None:
                reader_stop, reader_throws = at, st.kind == "corrupt"
            if end < fr.file_size and st.kind != "corrupt" and batch_fits(buf, at, fr.file_size):
                # The cut max_bytes asked for, through a batch that is whole in the file: not damage (Kafka
                # prints nothing there either).
                stopped = "max-bytes"
                reader_stop = None
                break
            if fr.first_nonzero(at, end) is None:
                yield self.finding("trailing-zeros", ERROR if strict else WARNING, display,
                                   f"{rest} zero bytes after the last batch (preallocated segment or a torn write "
                                   "of zeros; the broker's recovery truncates them)", at, bytes=rest)
                break
            not_batch = not_a_batch_start(buf, at, end, last, base_offset)
            if st.kind == "short-tail":
                if not_batch is None:
                    yield self.finding("torn-tail", ERROR if strict else WARNING, display,
                                       f"{rest} bytes at the end are too few for a batch header (torn write)", at,
                                       bytes=rest)
                else:
                    yield self.finding("trailing-garbage", ERROR, display,
                                       f"{rest} bytes after the last batch are not a batch ({not_batch}); the "
                                       "broker's recovery truncates them", at, bytes=rest, reason=not_batch)
                break
            if strict:
                kind_ = "torn-tail" if st.kind == "size-past-end" and not_batch is None else "corrupt"
                yield self.finding(kind_, ERROR, display, f"{st.message}; stopping here (strict)", at, bytes=rest)
                stopped = "strict"
                break
            q = find_next_batch(buf, at + 1, end, opts.resync_limit, fr)
            if q is None:
                scanned = min(rest, opts.resync_limit)
                if scanned < rest - 1:
                    yield self.finding("corrupt", ERROR, display,
                                       f"{st.message}; no valid batch in the next {scanned} bytes, {rest} bytes "
                                       "not dumped (beyond the resync limit)", at, bytes=rest)
                elif not_batch is None:
                    yield self.finding("torn-tail", WARNING, display,
                                       f"{st.message} and no valid batch follows (torn write of the last batch)",
                                       at, bytes=rest)
                else:
                    yield self.finding("trailing-garbage", ERROR, display,
                                       f"{rest} bytes after the last batch are not a batch ({not_batch}) and no "
                                       "valid batch follows; the broker's recovery truncates them", at, bytes=rest,
                                       reason=not_batch)
                break
            yield self.finding("corrupt-region", ERROR, display,
                               f"{q - at} unparseable bytes ({st.message}); resuming at the next valid batch at "
                               f"byte {q}", at, bytes=q - at, resume=q,
                               kafka_reader="throws" if st.kind == "corrupt" else "stops")
            p = q

        t.batches += n_batches
        t.bytes += emitted_bytes
        if records_known:
            t.records += n_records
        else:
            t.records_known = False
        invalid = 0 if stopped in ("to-offset", "max-bytes") else max(0, (end if handoff is None else handoff)
                                                                          - start - walked)
        yield FileEnd(display, kind, fr.file_size, n_batches, n_records if records_known else None, 0, walked,
                      invalid, None if handoff is not None else stopped, reader_stop, reader_throws, handoff)

    def offset_step(self, display: str, position: int, previous: int, following: int) -> Finding | None:
        """The finding a deep walk makes where offset ``previous`` is followed by ``following`` in the batch at
        ``position`` (None: they are consecutive): how the walks of consecutive ranges of one file are joined."""
        return None if following == previous + 1 else self._gap(display, position, previous, following)

    def _chunked_records(self, display: str, batch: RecordBatch, pos: int, crc_ok: bool,
                         chunks: Iterator[list[Record]], last: int, base: int, selector: RecordSelector | None,
                         emit_records: bool, follow: bool,
                         check: RecordChecks | None = None) -> Generator[Event, None, tuple[int, bool, int, bool]]:
        """The records of a batch read a chunk at a time (``_walk`` takes every other batch's at once): per chunk
        the findings about its records, then its records, the first chunk's in the ``BatchEvent`` (and the
        observer's ``batch``), the others' in a ``RecordsEvent`` each (and ``more_records``). ``follow``: offsets
        are followed record by record (a deep walk); ``check``: the record problems of
        :mod:`kafkatool.record.validate`, chunk by chunk. Returns (the last offset followed,
        whether any record passed the filters, how many did, whether a record problem was found)."""
        opts = self.opts
        found = False
        from_off, to_off, from_ts, to_ts = opts.from_offset, opts.to_offset, opts.from_time, opts.to_time
        filter_records = opts.filters_offsets or opts.filters_time
        select_filters = opts.record_filter is not None and opts.record_filter.on_records
        control = batch.is_control
        observer = opts.observer
        emitted = False
        n = 0
        for recs in chunks:
            if check is not None:  # what the records say of their batch, as the walk checks a batch read at once
                for prob in check.feed(recs):
                    found = True
                    yield self.finding(prob.kind, ERROR, display, prob.message, pos, prob.offset)
            if follow:
                prev = last
                for r in recs:
                    o = r[0]
                    if prev != -1 and o != prev + 1:
                        yield self._gap(display, pos, prev, o)
                    prev = o
                last = prev
            decoded = None
            if filter_records or selector is not None:
                if filter_records:
                    recs = [r for r in recs if (from_off is None or r[0] >= from_off)
                            and (to_off is None or r[0] <= to_off)
                            and (from_ts is None or r[1] >= from_ts) and (to_ts is None or r[1] < to_ts)]
                if selector is not None and recs:
                    recs, decoded, failures = selector.select(recs, control, emit_records)
                    for fail in failures:
                        yield self.finding("decode-error", WARNING, display, fail.error.message, pos,
                                           fail.record.offset)
                if not recs and (filter_records or select_filters):
                    continue
            n += len(recs)
            if observer is not None:
                if not emitted:
                    observer.batch(batch, crc_ok, recs)
                else:
                    observer.more_records(batch, crc_ok, recs)
            if opts.emit_data:
                if not emitted:
                    yield BatchEvent(display, batch, crc_ok, recs if emit_records else None, base, decoded)
                elif emit_records:
                    yield RecordsEvent(display, batch, recs, decoded)
            emitted = True
        return last, emitted, n, found

    @staticmethod
    def _control_problem(key: bytes | None, value: bytes | None) -> str | None:
        """What dump shows of a control record (KRaft's decoded too) failing: the record line says INVALID or
        undecodable, and the finding counts it."""
        return describe_control(key, value).error

    def _gap(self, display: str, pos: int, prev: int, nxt: int) -> Finding:
        if nxt <= prev:
            return self.finding("offset-order", ERROR, display, f"offset {prev} is followed by {nxt}", pos, nxt,
                                previous=prev, next=nxt)
        return self.finding("offset-gap", INFO, display, f"{prev} is followed by {nxt}", pos, nxt,
                            previous=prev, next=nxt)
