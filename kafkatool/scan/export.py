"""The record export: every record of a range as Arrow batches of ``RECORD_SCHEMA``, and the
single-process writer of the Parquet dataset (hive-partitioned by ``topic`` and ``partition``, as
Spark's ``partitionBy`` writes it).

Memory per task is bounded by one batch's records plus one Arrow batch being filled (flushed at
``rows`` records or ``chunk_bytes`` of keys and values). Time filters are ``[from_time, to_time)``
on the record timestamp; records without one (v0, ``-1``) are left out when a filter is set. A batch
whose ``maxTimestamp`` is below ``from_time`` is skipped unread (its records cannot match). Batches
whose records do not decode are skipped (the stats analysis reports them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import CODEC_LABELS
from kafkatool.scan.engine import DEFAULT_OPTIONS, ScanOptions
from kafkatool.scan.plan import Plan, WorkItem
from kafkatool.scan.schemas import RECORD_SCHEMA
from kafkatool.scan.source import RangeBatches
from kafkatool.util import crash
from kafkatool.util.atomic import staged_directory
from kafkatool.util.printable import shown

DEFAULT_ROWS = 65536
SUCCESS = "_SUCCESS"  # Spark's marker of a complete output
_TS_LABEL = {t.value: t.label for t in TimestampType}


@dataclass(frozen=True, slots=True)
class ExportFilter:
    from_time: int | None = None
    to_time: int | None = None

    def active(self) -> bool:
        return self.from_time is not None or self.to_time is not None


NO_FILTER = ExportFilter()


def export_range(item: WorkItem, opts: ScanOptions = DEFAULT_OPTIONS, flt: ExportFilter = NO_FILTER, *,
                 rows: int = DEFAULT_ROWS) -> Iterator[pa.RecordBatch]:
    """The records of the batches ``item`` owns, in offset order, as ``RECORD_SCHEMA`` batches."""
    cols: dict[str, list[object]] = {f.name: [] for f in RECORD_SCHEMA}
    payload = 0
    lo = flt.from_time
    hi = flt.to_time
    filtering = flt.active()
    src = RangeBatches(item.path, item.start, item.end, item.file_size, last=item.last,
                       chunk_bytes=opts.chunk_bytes, max_batch_bytes=opts.max_batch_bytes)
    topic, partition = item.topic, item.partition
    try:
        for batch in src:
            if lo is not None and batch.max_timestamp < lo:
                continue
            try:
                chunks = batch.record_chunks(limit=opts.decompress_limit)  # a batch may hold millions
                first = next(chunks)
            except KafkaToolError:
                continue
            magic = batch.magic
            codec_id = batch.codec_id
            codec = CODEC_LABELS[codec_id] if codec_id < len(CODEC_LABELS) else str(codec_id)
            ts_type = _TS_LABEL[int(batch.timestamp_type)]
            pid, epoch = batch.producer_id, batch.producer_epoch
            txn, ctl = batch.is_transactional, batch.is_control
            for recs in chain((first,), chunks):
                for r in recs:
                    ts = r[1]
                    if filtering and (ts < 0 or (lo is not None and ts < lo) or (hi is not None and ts >= hi)):
                        continue
                    cols["offset"].append(r[0])
                    cols["timestamp"].append(ts)
                    cols["key"].append(r[2])
                    cols["value"].append(r[3])
                    cols["headers"].append(r[4])
                    payload += (len(r[2]) if r[2] is not None else 0) + (len(r[3]) if r[3] is not None else 0)
                    cols["timestamp_type"].append(ts_type)
                    cols["magic"].append(magic)
                    cols["codec"].append(codec)
                    cols["producer_id"].append(pid)
                    cols["producer_epoch"].append(epoch)
                    cols["transactional"].append(txn)
                    cols["control"].append(ctl)
                n = len(cols["offset"])
                if n >= rows or payload >= opts.chunk_bytes:
                    yield _batch(cols, topic, partition)
                    cols = {f.name: [] for f in RECORD_SCHEMA}
                    payload = 0
    except (KafkaToolError, OSError):
        pass  # the stats analysis reports unreadable ranges; export what was read
    if cols["offset"]:
        yield _batch(cols, topic, partition)


def _batch(cols: dict[str, list[object]], topic: str, partition: int) -> pa.RecordBatch:
    n = len(cols["offset"])
    cols["topic"] = [topic] * n
    cols["partition"] = [partition] * n
    return pa.RecordBatch.from_arrays([pa.array(cols[f.name], type=f.type) for f in RECORD_SCHEMA],
                                      schema=RECORD_SCHEMA)


# ---------------------------------------------------------------------------------------------- local writer

def prepare_output(out_dir: str) -> None:
    """Refuse to mix an export into an existing non-empty directory (as Spark's ``errorifexists``)."""
    if os.path.isdir(out_dir) and os.listdir(out_dir):
        raise UsageError(f"{shown(out_dir)} exists and is not empty: give a new directory for the export")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"{shown(out_dir)} exists and is not a directory")


def write_range(item: WorkItem, opts: ScanOptions, flt: ExportFilter, staging: str) -> int:
    """Write one range's records under ``staging/topic=T/partition=P/``; returns the records written."""
    written = 0
    writer: pq.ParquetWriter | None = None
    file_schema = RECORD_SCHEMA.remove(RECORD_SCHEMA.get_field_index("partition")).remove(
        RECORD_SCHEMA.get_field_index("topic"))
    try:
        for batch in export_range(item, opts, flt):
            if writer is None:
                d = os.path.join(staging, f"topic={item.topic}", f"partition={item.partition}")
                os.makedirs(d, exist_ok=True)
                writer = pq.ParquetWriter(os.path.join(d, f"part-{item.id:06d}.parquet"), file_schema)
            writer.write_batch(batch.drop_columns(["topic", "partition"]))
            written += batch.num_rows
    finally:
        if writer is not None:
            writer.close()
    return written


def export_local(plan: Plan, out_dir: str, opts: ScanOptions = DEFAULT_OPTIONS, flt: ExportFilter = NO_FILTER,
                 *, jobs: int = 1, progress: Callable[[int, int], None] | None = None) -> int:
    """The single-process (or pool) export, crash-safe: the whole dataset is written into a staging dir beside
    ``out_dir`` (``.kafkatool-tmp-<name>.<random>.tmp``), every file and dir fsynced, ``_SUCCESS`` written, then
    the staging dir is renamed to ``out_dir``. After a crash ``out_dir`` is absent (or the empty dir it was) or
    complete; a failure leaves neither it nor the staging dir."""
    prepare_output(out_dir)
    total = 0
    done = 0
    with staged_directory(out_dir, last=SUCCESS, on_durable=crash.point) as root:
        staging = str(root)
        if jobs <= 1:
            for it in plan.items:
                total += write_range(it, opts, flt, staging)
                crash.point()
                done += it.bytes
                if progress:
                    progress(done, plan.total_bytes)
        else:
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                args = [(plan.items[i], opts, flt, staging) for task in plan.tasks for i in task]
                for it, n in pool.imap_unordered(_write_task, args):
                    total += n
                    crash.point()
                    done += it.bytes
                    if progress:
                        progress(done, plan.total_bytes)
        open(os.path.join(staging, SUCCESS), "wb").close()
    return total


def _write_task(arg: tuple[WorkItem, ScanOptions, ExportFilter, str]) -> tuple[WorkItem, int]:
    item, opts, flt, staging = arg
    return item, write_range(item, opts, flt, staging)
