"""One task of ``spark-scan``'s pass: a range's walk with everything asked of it riding along.

The stats always come from the walk (``scan_range``); the record export writes the range's Parquet file from the
same batches (``ExportWriter`` as the walk's batch sink); the segment's index check runs in the task of its first
range, on the bytes the walk read. So stats, export and index check asked together read the log once. The same
function runs on Spark executors and in the local process pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES
from kafkatool.scan.engine import DEFAULT_OPTIONS, RangeResult, ScanOptions, scan_range
from kafkatool.scan.export import ExportTarget, ExportWriter
from kafkatool.scan.plan import WorkItem
from kafkatool.scan.source import use_s3_endpoint
from kafkatool.scan.verify import index_check_row


@dataclass(frozen=True, slots=True)
class PassWork:
    """What each task does beside the stats: export into ``export``, check indexes."""

    export: ExportTarget | None = None
    verify_index: bool = False
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES


STATS_ONLY = PassWork()


def run_range(item: WorkItem, opts: ScanOptions = DEFAULT_OPTIONS, work: PassWork = STATS_ONLY) -> RangeResult:
    use_s3_endpoint(opts.s3_endpoint)
    writer = ExportWriter(item, work.export, opts.chunk_bytes) if work.export is not None else None
    checks: list[dict[str, object]] = []

    def check(local: str) -> None:
        checks.append(index_check_row(item.topic, item.partition, item.base_offset, item.path, item.active,
                                      work.index_interval_bytes, local_log=local))

    try:
        r = scan_range(item, opts, sink=writer, reset=writer.reset if writer is not None else None,
                       whole=check if work.verify_index and item.range_index == 0 else None)
        if writer is not None:
            r.exported = writer.finish()
            r.export_txn_rows = writer.txn_rows
            r.markers = writer.markers
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    r.index_check = checks[0] if checks else None
    return r
