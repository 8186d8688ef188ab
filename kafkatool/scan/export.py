"""The record export: every record the walk reads, written as Parquet by the task that walks it.

The export rides on the scan's one pass: the range's ``dump`` walk hands every batch to ``BatchStats`` and, through
it, to an ``ExportWriter`` (a batch sink) that turns the records into Arrow columns of ``RECORD_SCHEMA`` and writes
``<root>/topic=T/partition=P/part-<range id>.parquet`` with pyarrow (a local dir, or a URL through ``pyarrow.fs``):
no second read of the log, and the findings and exit code are the walk's, as for the stats.

Columns (names that need no quoting in SQL engines): ``record_offset``, ``timestamp`` (a UTC timestamp, null when
the record has none) beside ``timestamp_ms``, ``timestamp_type``, ``key``, ``value``, ``headers``, ``magic``,
``codec``, ``producer_id``, ``producer_epoch``, ``leader_epoch`` (v2's partition leader epoch, null before v2),
``sequence``, ``transactional``, ``control``, ``aborted``, ``crc_valid``, ``segment`` (the segment's base offset)
and ``position`` (the batch's byte position in it); ``topic`` and ``partition`` are the hive partition columns.

* ``crc_valid``: the batch's stored CRC matches (``isValid``) and, for a legacy wrapper's inner message, its own.
  Records of a CRC-failed batch are exported and marked; batches whose records do not decode export nothing
  (the walk's ``invalid-records`` finding says where).
* ``aborted``: data of a transaction that ended with an ABORT marker, from the markers in the log itself: a record
  of producer P at offset o is aborted when P's first COMMIT/ABORT marker after o is an ABORT (null: no marker
  follows, an open transaction; false for non-transactional data and control records). A marker may lie in a later
  range or segment, so the tasks write transactional rows as null and report the markers they saw; once every
  range is done the files holding transactional rows are rewritten with the answer (``resolve_aborted``): files of
  non-transactional data are never touched.

Time filters are ``[from_time, to_time)`` on the record timestamp; records without one (v0, ``-1``) are left out
when a filter is set. Memory per task: one batch's records plus one Arrow batch being filled (``rows`` records or
``chunk_bytes`` of keys and values).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.record.batch import ControlRecordType, Record, TimestampType
from kafkatool.record.codecs import CODEC_LABELS
from kafkatool.record.default_records import parse_control_type_id
from kafkatool.record.file_records import RecordBatch
from kafkatool.scan.plan import WorkItem
from kafkatool.scan.schemas import RECORD_SCHEMA
from kafkatool.scan.source import filesystem_for, is_url, join
from kafkatool.util.printable import shown

DEFAULT_ROWS = 65536
SUCCESS = "_SUCCESS"  # Spark's marker of a complete output
_TS_LABEL = {t.value: t.label for t in TimestampType}
FILE_SCHEMA = RECORD_SCHEMA.remove(RECORD_SCHEMA.get_field_index("partition")).remove(
    RECORD_SCHEMA.get_field_index("topic"))

Marker = tuple[int, int, bool]  # (producer id, marker offset, aborted)


@dataclass(frozen=True, slots=True)
class ExportFilter:
    from_time: int | None = None
    to_time: int | None = None

    def active(self) -> bool:
        return self.from_time is not None or self.to_time is not None


NO_FILTER = ExportFilter()


@dataclass(frozen=True, slots=True)
class ExportTarget:
    """Where a run exports: ``root`` (a local dir, the staging dir of the final one, or a URL) and the filter."""

    root: str
    filter: ExportFilter = NO_FILTER
    rows: int = DEFAULT_ROWS


def part_path(root: str, item: WorkItem) -> str:
    """The range's Parquet file (its id makes a retried or re-walked task write the same file again)."""
    d = join(join(root, f"topic={item.topic}"), f"partition={item.partition}")
    return join(d, f"part-{item.id:06d}.parquet")


class RecordColumns:
    """Records of the batches a walk hands over, as Arrow columns of ``RECORD_SCHEMA`` (``with_tp``: with the
    ``topic`` and ``partition`` columns; else ``FILE_SCHEMA``, the hive layout's files). ``aborted`` as the module
    doc says, unless ``aborted_txns`` is given: the partition's aborted transactions as Kafka's ``.txnindex`` lists
    them (producer id, first offset, last offset), which answer it at once."""

    def __init__(self, item: WorkItem, flt: ExportFilter = NO_FILTER, *, with_tp: bool = False,
                 aborted_txns: Sequence[tuple[int, int, int]] | None = None) -> None:
        self.item = item
        self.filter = flt
        self.schema = RECORD_SCHEMA if with_tp else FILE_SCHEMA
        self.aborted_txns = aborted_txns
        self.reset()

    def reset(self) -> None:
        self.txn_rows = 0
        self.markers: list[Marker] = []
        self.cols: dict[str, list[Any]] = {f.name: [] for f in self.schema}
        self.payload = 0

    @property
    def rows(self) -> int:
        return len(self.cols["record_offset"])

    def add(self, batch: RecordBatch, crc_valid: bool, records: list[Record] | None) -> None:
        if records is None:
            return
        flt = self.filter
        lo, hi = flt.from_time, flt.to_time
        filtering = flt.active()
        magic = batch.magic
        v2 = magic >= 2
        codec_id = batch.codec_id
        codec = CODEC_LABELS[codec_id] if codec_id < len(CODEC_LABELS) else str(codec_id)
        ts_type = _TS_LABEL[int(batch.timestamp_type)]
        pid, epoch = batch.producer_id, batch.producer_epoch
        leader_epoch = getattr(batch, "partition_leader_epoch", None) if v2 else None
        txn, ctl = batch.is_transactional, batch.is_control
        pos, seg = batch.position, self.item.base_offset
        legacy_inner = not v2 and codec_id != 0
        if ctl:
            for r in records:
                try:
                    t = parse_control_type_id(r[2])
                except KafkaToolError:
                    continue
                if t in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                    self.markers.append((pid, r[0], t == ControlRecordType.ABORT))
        data_txn = txn and not ctl
        aborted: bool | None = None if data_txn else False
        cols = self.cols
        n0 = self.rows
        for r in records:
            ts = r[1]
            if filtering and (ts < 0 or (lo is not None and ts < lo) or (hi is not None and ts >= hi)):
                continue
            cols["record_offset"].append(r[0])
            cols["timestamp"].append(ts if ts >= 0 else None)
            cols["timestamp_ms"].append(ts)
            cols["key"].append(r[2])
            cols["value"].append(r[3])
            cols["headers"].append(r[4])
            cols["sequence"].append(r[5])
            cols["crc_valid"].append(crc_valid and not (legacy_inner and r[8] is False))
            self.payload += (len(r[2]) if r[2] is not None else 0) + (len(r[3]) if r[3] is not None else 0)
        n = self.rows - n0
        if not n:
            return
        for name, value in (("timestamp_type", ts_type), ("magic", magic), ("codec", codec), ("producer_id", pid),
                            ("producer_epoch", epoch), ("leader_epoch", leader_epoch), ("transactional", txn),
                            ("control", ctl), ("segment", seg), ("position", pos)):
            cols[name].extend([value] * n)
        if data_txn and self.aborted_txns is not None:
            offs = cols["record_offset"][n0:]
            cols["aborted"].extend(any(p == pid and a <= o <= b for p, a, b in self.aborted_txns) for o in offs)
        else:
            cols["aborted"].extend([aborted] * n)
            if aborted is None:
                self.txn_rows += n
        if "topic" in cols:
            cols["topic"].extend([self.item.topic] * n)
            cols["partition"].extend([self.item.partition] * n)

    def take(self) -> pa.RecordBatch:
        """The columns filled so far as one Arrow batch (and empty them)."""
        batch = pa.RecordBatch.from_arrays([pa.array(self.cols[f.name], type=f.type) for f in self.schema],
                                           schema=self.schema)
        self.cols = {f.name: [] for f in self.schema}
        self.payload = 0
        return batch


class ExportWriter:
    """A batch sink: one range's records into its Parquet file; ``count``, ``txn_rows`` and ``markers`` after."""

    def __init__(self, item: WorkItem, target: ExportTarget, chunk_bytes: int) -> None:
        self.item = item
        self.target = target
        self.chunk_bytes = chunk_bytes
        self.path = part_path(target.root, item)
        self._writer: pq.ParquetWriter | None = None
        self._sink: Any = None
        self._tmp: str | None = None
        self.columns = RecordColumns(item, target.filter)
        self.reset()

    def reset(self) -> None:
        """Forget everything written (the range is walked again)."""
        self._close_writer()
        self._drop_tmp()
        self.count = 0
        self.columns.reset()

    @property
    def txn_rows(self) -> int:
        return self.columns.txn_rows

    @property
    def markers(self) -> list[Marker]:
        return self.columns.markers

    def __call__(self, batch: RecordBatch, crc_valid: bool, records: list[Record] | None, more: bool) -> None:
        self.columns.add(batch, crc_valid, records)  # a further chunk's records are rows like the first's
        if self.columns.rows >= self.target.rows or self.columns.payload >= self.chunk_bytes:
            self._flush()

    def _flush(self) -> None:
        if not self.columns.rows:
            return
        batch = self.columns.take()
        if self._writer is None:
            self._open()
        assert self._writer is not None
        self._writer.write_batch(batch)
        self.count += batch.num_rows

    def _open(self) -> None:
        if is_url(self.path):
            fs, inner = filesystem_for(self.path)
            self._sink = fs.open_output_stream(inner)
            self._writer = pq.ParquetWriter(self._sink, FILE_SCHEMA)
        else:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self._tmp = f"{self.path}.{uuid.uuid4().hex}.tmp"
            self._writer = pq.ParquetWriter(self._tmp, FILE_SCHEMA)

    def _close_writer(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def _drop_tmp(self) -> None:
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except FileNotFoundError:
                pass
            self._tmp = None

    def finish(self) -> int:
        """Write what is left and put the file in place (a retried task's file is replaced whole)."""
        self._flush()
        self._close_writer()
        if self._tmp is not None:
            with open(self._tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(self._tmp, self.path)
            self._tmp = None
        return self.count

    def abort(self) -> None:
        self._close_writer()
        self._drop_tmp()


def remove_part(root: str, item: WorkItem) -> None:
    """Delete a range's file (its segment is exported again whole)."""
    path = part_path(root, item)
    try:
        if is_url(path):
            fs, inner = filesystem_for(path)
            fs.delete_file(inner)
        else:
            os.unlink(path)
    except (FileNotFoundError, OSError):
        pass


# ---------------------------------------------------------------------------------------------- aborted

def aborted_of(producer_ids: Any, offsets: Any, markers: Sequence[Marker]) -> pa.Array:
    """For each (producer id, record offset): whether the producer's first marker after it is an ABORT (null: no
    marker follows), as an Arrow boolean array."""
    import numpy as np

    groups: dict[int, list[tuple[int, bool]]] = {}
    for pid, off, ab in markers:
        groups.setdefault(pid, []).append((off, ab))
    pids = np.asarray(producer_ids, dtype=np.int64)
    offs = np.asarray(offsets, dtype=np.int64)
    answer = np.full(len(offs), -1, dtype=np.int8)
    for pid in np.unique(pids).tolist():
        ms = sorted(groups.get(pid, ()))
        if not ms:
            continue
        at_off = np.array([m[0] for m in ms], dtype=np.int64)
        is_abort = np.array([m[1] for m in ms], dtype=np.int8)
        sel = pids == pid
        at = np.searchsorted(at_off, offs[sel], side="right")
        answer[sel] = np.where(at < len(ms), is_abort[np.minimum(at, len(ms) - 1)], -1)
    return pa.array(answer == 1, type=pa.bool_(), mask=answer < 0)


def resolve_aborted(path: str, markers: Sequence[Marker]) -> int:
    """Rewrite one part file's ``aborted`` for its transactional data rows from the partition's markers; returns the
    rows answered. Local files are replaced atomically; a URL's object is written again whole."""
    import numpy as np
    import pyarrow.compute as pc

    if is_url(path):
        fs, inner = filesystem_for(path)
        with fs.open_input_file(inner) as f:
            table = pq.read_table(f)
    else:
        table = pq.read_table(path)
    data = pc.and_(table.column("transactional"), pc.invert(table.column("control")))
    rows = np.flatnonzero(data.to_numpy(zero_copy_only=False))
    if not len(rows):
        return 0
    answers = aborted_of(table.column("producer_id").to_numpy()[rows], table.column("record_offset").to_numpy()[rows],
                         markers)
    aborted = table.column("aborted").to_pylist()
    for i, v in zip(rows.tolist(), answers.to_pylist(), strict=True):
        aborted[i] = v
    table = table.set_column(table.schema.get_field_index("aborted"), "aborted", pa.array(aborted, pa.bool_()))
    if is_url(path):
        with fs.open_output_stream(inner) as out:
            pq.write_table(table, out)
    else:
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    return len(rows)


def markers_by_partition(items: Sequence[WorkItem], markers: Mapping[int, Iterable[Marker]]) -> dict[
        tuple[str, int, str], list[Marker]]:
    """Every range's markers gathered per partition dir (key: topic, partition, dir)."""
    from kafkatool.scan.plan import parent_of

    out: dict[tuple[str, int, str], list[Marker]] = {}
    for it in items:
        ms = markers.get(it.id)
        if ms:
            out.setdefault((it.topic, it.partition, parent_of(it.path)), []).extend(ms)
    return out


# ---------------------------------------------------------------------------------------------- the output dir

def prepare_output(out_dir: str) -> None:
    """Refuse to mix an export into an existing non-empty directory (as Spark's ``errorifexists``)."""
    if is_url(out_dir):
        import pyarrow.fs as pafs

        fs, inner = filesystem_for(out_dir)
        info = fs.get_file_info(inner)
        if info.type == pafs.FileType.File:
            raise UsageError(f"{out_dir} exists and is not a directory", field="export_records")
        if info.type == pafs.FileType.Directory and fs.get_file_info(pafs.FileSelector(inner, recursive=False)):
            raise UsageError(f"{out_dir} exists and is not empty: give a new directory for the export",
                             field="export_records")
        return
    if os.path.isdir(out_dir) and os.listdir(out_dir):
        raise UsageError(f"{shown(out_dir)} exists and is not empty: give a new directory for the export",
                         field="export_records")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"{shown(out_dir)} exists and is not a directory", field="export_records")


def write_success(root: str) -> None:
    path = join(root, SUCCESS)
    if is_url(path):
        fs, inner = filesystem_for(path)
        with fs.open_output_stream(inner):
            pass
    else:
        open(path, "wb").close()
