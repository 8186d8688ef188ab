"""The file side of log conversion: what SRC holds, where DST may be, reading source batches with the
broker's stop rules, and writing output segments the way the broker would have rolled and indexed them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.constants import INT32_MAX
from kafkatool.errors import CorruptRecordError, InputError, KafkaToolError
from kafkatool.log.layout import (
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    IrregularFile,
    PartitionDir,
    Segment,
    filename_prefix_from_offset,
    irregular_siblings,
    offset_from_filename,
    parse_partition_dir_name,
    resolve_inputs,
)
from kafkatool.log.recovery import SegmentRecovery, recover_segment
from kafkatool.log.recovery.fast import SegmentIndexer
from kafkatool.log.txn_index import AbortedTxn, encode_txn_index
from kafkatool.record.batch import MAGIC_V2
from kafkatool.record.codecs import Codec
from kafkatool.record.down_convert import ZstdDownConversionError
from kafkatool.record.file_records import FileRecords, LogInputStream, RecordBatch
from kafkatool.util import budget as _budget
from kafkatool.util import crash
from kafkatool.util.direct_io import DirectWriter
from kafkatool.util.printable import shown

METADATA_TOPIC = "__cluster_metadata"  # KRaft's own log: never converted


@dataclass(slots=True)
class PartitionSource:
    """One input partition: the segments to convert and the files around them."""

    name: str  # the output partition dir's name
    topic: str
    origin: Path  # what the operator named (a .log file or a partition dir)
    dir: Path | None  # the partition dir holding metadata files, if any
    segments: list[Segment]
    snapshots: list[Path] = field(default_factory=list)
    pending: list[Path] = field(default_factory=list)
    unknown_files: list[Path] = field(default_factory=list)
    not_regular: list[IrregularFile] = field(default_factory=list)  # Kafka's names, not regular files: refused

    def metadata_files(self) -> list[Path]:
        if self.dir is None:
            return []
        return [self.dir / LEADER_EPOCH_CHECKPOINT, self.dir / PARTITION_METADATA]

    def total_bytes(self) -> int:
        return sum(os.path.getsize(s.log) for s in self.segments if s.log.exists())


def _from_partition_dir(part: PartitionDir) -> PartitionSource:
    tp = part.topic_partition
    known = {LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA}
    return PartitionSource(part.path.name, tp.topic if tp else part.path.name, part.path, part.path,
                           list(part.segments), list(part.snapshots), list(part.pending),
                           [p for p in part.other if p.name not in known and not p.is_dir()], list(part.not_regular))


def is_internal(topic: str) -> bool:
    """A topic of the brokers' own (``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``,
    ``__share_group_state``, ``__remote_log_metadata``...): Kafka names every one of them with ``__``."""
    return topic.startswith("__")


def resolve_sources(src: Path, *, skip_internal: bool = False,
                    skipped: list[str] | None = None) -> list[PartitionSource]:
    """SRC is a ``.log`` segment, a partition dir or a log dir (its normal partitions, not KRaft's
    ``__cluster_metadata`` nor ``-delete``/``-future``/``-stray`` dirs). ``skip_internal``: a log dir's
    partitions of internal topics are left out (their names appended to ``skipped``); a segment or partition dir
    named as SRC is converted whatever its topic."""
    inputs = resolve_inputs([src])
    out: list[PartitionSource] = []
    for f in inputs.files:
        if not f.name.endswith(".log"):
            raise InputError("not a segment (.log) file, partition dir or log dir", path=f)
        base = offset_from_filename(f.name)
        if f.name != filename_prefix_from_offset(base) + ".log":
            raise InputError("a segment file is named <20-digit base offset>.log", path=f)
        parent = f.resolve().parent
        parsed = parse_partition_dir_name(parent.name)
        topic = parsed[0].topic if parsed else parent.name
        siblings = irregular_siblings(f)
        out.append(PartitionSource(parent.name, topic, f, parent if parsed else None,
                                   [Segment(base, parent, frozenset(s.path.suffix for s in siblings))],
                                   not_regular=siblings))
    for part in inputs.partitions:
        out.append(_from_partition_dir(part))
    for log_dir in inputs.log_dirs:
        for part in log_dir.partitions:
            tp = part.topic_partition
            if part.kind or (tp is not None and tp.topic == METADATA_TOPIC):
                continue
            if skip_internal and tp is not None and is_internal(tp.topic):
                if skipped is not None:
                    skipped.append(part.path.name)
                continue
            out.append(_from_partition_dir(part))
    if not out:
        raise InputError("no partitions to convert" + (" (internal topics are skipped in a log dir: give a "
                                                       "partition dir to convert one)" if skipped else ""), path=src)
    for log_dir in inputs.log_dirs:
        if log_dir.not_regular:  # its checkpoints or meta.properties
            raise log_dir.not_regular[0].error()
    for source in out:
        if source.not_regular:
            # A FIFO, a device or a broken symlink named as a segment's file: the partition is not in a state to
            # convert from (a .log that cannot be read would leave a hole). A finding: exit 1, nothing written.
            raise source.not_regular[0].error()
    return out


def zstd_refused(batch: RecordBatch) -> ZstdDownConversionError | None:
    """Kafka refuses to down-convert zstd: the error naming a zstd batch that nothing may down-convert
    (the run stops at the first one, and a failed run leaves nothing written), None for any other batch."""
    if batch.magic >= MAGIC_V2 and batch.codec_id == Codec.ZSTD and not batch.is_control:
        return ZstdDownConversionError(
            f"zstd-compressed batch (offsets {batch.base_offset}..{batch.last_offset}) cannot be down-converted "
            "below magic 2 (Kafka: UnsupportedCompressionTypeException); recompress it with gzip, lz4, snappy or "
            "none", field="zstd_to", position=batch.position)
    return None


def _zero_from(fr: FileRecords, pos: int) -> bool:
    return fr.first_nonzero(pos) is None


def source_batches(fr: FileRecords, skipped: Callable[[str, int], None], *, last: bool = True,
                   stream: LogInputStream | None = None) -> Iterator[RecordBatch]:
    """The batches of a source segment, walked with the broker's stop rules (nothing checked here: each batch
    goes through :class:`kafkatool.convert.checks.SourceChecker`). In the last segment a torn tail (size past the
    end, too few bytes for a header) or zero padding (``log.preallocate``) is skipped with a warning, as recovery
    truncates it; anywhere else, and for a size field the walk cannot go on from, the run stops with the position
    (recovery would also delete every later segment: that is for an operator to decide, not a converter).
    ``stream``: the walk to take them from (``fr.batches()`` unless given: a caller that converts runs of batches
    itself jumps it past them)."""
    if stream is None:
        stream = fr.batches()
    it = iter(stream)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            break
        except CorruptRecordError:
            end = stream.end_state
            if last and end is not None and _zero_from(fr, end.position):
                skipped(f"{shown(fr.path)}: {end.trailing_bytes} zero bytes from byte {end.position} (preallocated "
                        "file) skipped", end.trailing_bytes)
                return
            raise
        yield batch
    end = stream.end_state
    if end is not None and end.kind != "end" and not last:
        raise CorruptRecordError(f"{end.trailing_bytes} bytes that are not a complete batch ({end.message}) end a "
                                 "segment that is not the last one", path=fr.path, position=end.position)
    if end is not None and end.kind != "end":
        skipped(f"{shown(fr.path)}: {end.trailing_bytes} bytes from byte {end.position} skipped ({end.message}); "
                "the broker's recovery truncates them too", end.trailing_bytes)


class SegmentWriter:
    """Output segments of one partition, rolled by ``LogSegment.shouldRoll``'s size and offset rules and
    indexed by ``LogSegment.recover``'s rules. ``dir`` None is a dry run: rolls are computed, nothing written.

    The ``.index``/``.timeindex`` are built from the bytes as they are written (:class:`SegmentIndexer`, which
    also checks that they are whole batches recovery keeps, offsets within the segment, index appends Kafka
    accepts); each segment's files are fsynced once, when it is complete. ``oracle``: also walk each finished
    ``.log`` with :func:`recover_segment` and require the same indexes (the tests' check; a second read of the
    output)."""

    def __init__(self, dir: Path | None, segment_bytes: int, index_interval_bytes: int, *,
                 oracle: bool = False) -> None:
        self.dir = dir
        self.oracle = oracle
        self._indexer: SegmentIndexer | None = None
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.base = -1
        self.size = 0
        self.file: DirectWriter | None = None
        self.next_offset = -1  # one past the last offset written
        self.segments = 0
        self.bytes_written = 0
        self.tail_segment: int | None = None
        self._for_source: list[int] = []

    @property
    def log_end_offset(self) -> int:
        return max(self.base, self.next_offset)

    def _path(self, base: int, suffix: str) -> Path:
        assert self.dir is not None
        return self.dir / (filename_prefix_from_offset(base) + suffix)

    def _open(self, base: int) -> None:
        if base < self.next_offset:
            raise CorruptRecordError(f"offset {base} is below the previous segment's end {self.next_offset}: "
                                     "offsets go backwards in the source")
        self.base = base
        self.size = 0
        self.segments += 1
        self._for_source.append(base)
        if self.dir is not None:
            # Written around the page cache in blocks of the memory budget's output share (util/direct_io).
            self.file = DirectWriter(self._path(base, ".log"), max(64 << 10, _budget.output_bytes()))
            self._indexer = SegmentIndexer(base, self.index_interval_bytes)

    def _close(self) -> None:
        if self.base < 0:
            return
        if self.file is not None:
            self.file.close()  # the rest written, fsynced
            self.file = None
            crash.point()
            self._write_indexes()

    def _write_indexes(self) -> None:
        assert self._indexer is not None
        indexer, self._indexer = self._indexer, None
        try:
            rec = indexer.finish()
        except KafkaToolError as e:
            raise self._not_recoverable(e) from None
        if self.oracle:
            self._check_with_recovery(rec)
        # Straight from the index arrays: no entry objects (a 1 GiB segment has ~260 000 of each).
        _write_fsync(self._path(self.base, ".index"), rec.encode_offset_index())
        _write_fsync(self._path(self.base, ".timeindex"), rec.encode_time_index())

    def _not_recoverable(self, cause: KafkaToolError | str) -> KafkaToolError:
        return KafkaToolError(f"internal error: output segment {self.base:020d}.log does not pass the broker's "
                              f"recovery: {cause}")

    def _check_with_recovery(self, rec: SegmentRecovery) -> None:
        """The oracle: the broker's recovery walk of the finished file, which must keep all of it and build the
        same indexes."""
        walked = recover_segment(self._path(self.base, ".log"), self.base,
                                 index_interval_bytes=self.index_interval_bytes)
        if walked.error is not None or walked.valid_bytes != self.size:
            raise self._not_recoverable(str(walked.error or walked.stop))
        if (walked.encode_offset_index() != rec.encode_offset_index()
                or walked.encode_time_index() != rec.encode_time_index()):
            raise self._not_recoverable("its indexes differ from those built while writing")

    def begin_source_segment(self, base: int) -> None:
        self._close()
        self._open(base)

    def append(self, unit: tuple[bytes, int | None, int, int]) -> None:
        data, first, last, _ = unit
        n = len(data)
        # LogSegment.shouldRoll: size > segment.bytes - batch size (a non-empty segment), or the last offset
        # would not fit an int32 relative to the base (UnifiedLog.maybeRoll picks the new base).
        if (self.size > 0 and self.size + n > self.segment_bytes) or last - self.base > INT32_MAX:
            new_base = first if first is not None else max(self.next_offset, last - INT32_MAX)
            self._close()
            self._open(new_base)
        self.append_run(data, last)

    def append_run(self, data: bytes, last: int) -> None:
        """:meth:`append` without the roll: for a unit it has checked, and for the units of a compiled run
        (``DownConverter.run``), which has checked that none of them rolls the segment; ``last`` is the last
        offset they hold."""
        if self.file is not None:
            self._index(data)
            self.file.write(data)
        self._advance(len(data), last)

    def run_room(self) -> memoryview | None:
        """Where a compiled run may put its converted bytes itself (the free part of the write buffer, valid until
        :meth:`append_ran`), None for a dry run."""
        return None if self.file is None else self.file.room()

    def append_ran(self, room: memoryview, n: int, last: int) -> None:
        """:meth:`append_run` for the ``n`` bytes a compiled run put at the start of :meth:`run_room`."""
        assert self.file is not None
        self._index(room[:n])
        self.file.commit(n)
        self._advance(n, last)

    def _index(self, data: bytes | memoryview) -> None:
        """The indexes built from the next bytes written (whole batches), or the error naming the segment."""
        assert self._indexer is not None
        try:
            self._indexer.feed(data)
        except KafkaToolError as e:
            raise self._not_recoverable(e) from None

    def _advance(self, n: int, last: int) -> None:
        self.size += n
        self.bytes_written += n
        self.next_offset = last + 1

    def abort(self) -> None:
        """A failed run: close the segment being written without writing or fsyncing the rest."""
        if self.file is not None:
            self.file.abandon()
            self.file = None
        self._indexer = None

    def end_source_segment(self, aborted: list[AbortedTxn]) -> None:
        """Close the current segment and give each aborted transaction to the output segment that holds
        its end marker (as the broker appends it to the active segment's ``.txnindex``)."""
        self._close()
        if aborted and self.dir is not None:
            by_segment: dict[int, list[AbortedTxn]] = {}
            for txn in aborted:
                owner = self._for_source[0]
                for base in self._for_source:
                    if base <= txn.last_offset:
                        owner = base
                by_segment.setdefault(owner, []).append(txn)
            for base, entries in by_segment.items():
                _write_fsync(self._path(base, ".txnindex"), encode_txn_index(entries))
        self._for_source = []

    def finish(self, source_log_end: int) -> None:
        """After the last source segment: keep the source's log end offset with an empty segment."""
        self._close()
        if self.log_end_offset < source_log_end:
            self._open(source_log_end)
            self.tail_segment = source_log_end
            self._close()
        self._for_source = []


def _write_fsync(path: Path, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    crash.point()


__all__ = ["PartitionSource", "SegmentWriter", "resolve_sources",
           "source_batches", "zstd_refused"]
