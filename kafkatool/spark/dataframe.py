"""``kafka-log``: log dirs as a Spark DataFrame (PySpark 4's Python Data Source API), without exporting first.

    import kafkatool.spark
    kafkatool.spark.register(spark)
    records = spark.read.format("kafka-log").load("/var/kafka-logs")           # one row per record
    batches = spark.read.format("kafka-log").option("view", "batches").load(path)  # one row per batch

Records have the export's columns (``kafkatool.scan.export``: ``topic``, ``partition``, ``record_offset``,
``timestamp`` (UTC) and ``timestamp_ms``, ``key``, ``value``, ``headers``, ``crc_valid``, ``aborted``,
``leader_epoch``, ``segment``, ``position`` ...); batches a row per batch (``BATCH_SCHEMA``). The reader plans the
ranges as ``spark-scan`` does and each Spark task walks its range with ``dump``'s engine, so a CRC-failed batch's
records come with ``crc_valid`` false and bytes the walk skips are not rows (``spark-scan`` reports them).
``aborted`` comes from the partition's ``.txnindex`` files, Kafka's own list of aborted transactions (null for
transactional data when a partition has none).

Filters Spark pushes down (``pushFilters``, PySpark 4.1+): ``topic`` and ``partition`` (=, IN, <, <=, >, >=; topic
LIKE 'prefix%') prune whole partition dirs and are applied exactly; ``record_offset`` ranges prune segments (by
their base offsets) and batches (by their last offset), ``timestamp``/``timestamp_ms`` lower bounds prune batches
(by their max timestamp); those two are also left to Spark to apply to the rows.

Spark up to 4.3 keeps the read plan made while pushing filters on the DataFrame's relation, not on the one query
(``PythonDataSourceV2.setReadInfo``): a later query of the same DataFrame without filters would read the pruned
plan, too few rows. So the reader prunes by pushed filters only where Spark keeps that plan per scan (a PySpark
whose ``DataSourceReader`` has ``pushLimit``, the release that fixed it) or with ``option("pushdown", "true")``
(then filter a DataFrame once, never reuse it unfiltered); otherwise it hands every filter back to Spark, which
applies them to all rows. ``topic`` (a glob) prunes on any version.

Options: ``view`` (``records``/``batches``), ``split_size`` (bytes per range and per Spark task, default 32 MiB;
a task packs the ranges of small segments), ``s3_endpoint``, ``topic`` (a glob), ``pushdown`` (``true``/``false``;
default as above).

On PySpark 3.5 (no Python Data Source API) ``register`` says so in one line and names the export path.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.record.batch import Record
from kafkatool.record.codecs import CODEC_LABELS
from kafkatool.record.file_records import RecordBatch
from kafkatool.scan.engine import ScanOptions, scan_range
from kafkatool.scan.export import RecordColumns
from kafkatool.scan.plan import WorkItem, discover, make_plan, parent_of
from kafkatool.scan.schemas import BATCH_SCHEMA, RECORD_SCHEMA
from kafkatool.scan.source import filesystem_for, is_url, use_s3_endpoint
from kafkatool.util.units import parse_size

NAME = "kafka-log"
DEFAULT_SPLIT = 32 << 20
_ROWS = 8192
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

try:  # PySpark 4.0+
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceReader,
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        InputPartition,
        LessThan,
        LessThanOrEqual,
        StringStartsWith,
    )

    SOURCE_API = True
    # Where Spark keeps the plan made while pushing filters per scan (see the module doc).
    SCAN_SCOPED_PUSHDOWN = hasattr(DataSourceReader, "pushLimit")
except ImportError:  # PySpark 3.5: no Python Data Source API
    SOURCE_API = False
    SCAN_SCOPED_PUSHDOWN = False


def register(spark: Any) -> None:
    """Register the ``kafka-log`` source with ``spark`` (a SparkSession)."""
    import pyspark

    if not SOURCE_API:
        raise UsageError(f"the kafka-log DataFrame source needs PySpark 4 (its Python Data Source API); this is "
                         f"PySpark {pyspark.__version__}: export the records with spark-scan's record export "
                         "(kafkatool.scan.export, Parquet) and read them with spark.read.parquet")
    spark.dataSource.register(KafkaLogSource)
    # The reader prunes by the filters Spark pushes down (PySpark 4.1+): off by default, and a reader that
    # implements pushFilters fails while it is off.
    spark.conf.set(PUSHDOWN_CONF, "true")


class _Bounds:
    """What the pushed filters allow: topics, partitions, offset and timestamp ranges (inclusive)."""

    def __init__(self) -> None:
        self.topics: set[str] | None = None
        self.topic_prefixes: list[str] = []
        self.partitions: set[int] | None = None
        self.partition_lo: int | None = None
        self.partition_hi: int | None = None
        self.offset_lo: int | None = None
        self.offset_hi: int | None = None
        self.ts_lo: int | None = None

    def topic_ok(self, topic: str) -> bool:
        return (self.topics is None or topic in self.topics) and all(topic.startswith(p) for p in self.topic_prefixes)

    def partition_ok(self, p: int) -> bool:
        if self.partitions is not None and p not in self.partitions:
            return False
        return (self.partition_lo is None or p >= self.partition_lo) and (
            self.partition_hi is None or p <= self.partition_hi)

    def batch_ok(self, batch: RecordBatch) -> bool:
        if self.offset_lo is not None and batch.last_offset < self.offset_lo:
            return False
        if self.ts_lo is not None and batch.magic >= 2 and batch.max_timestamp < self.ts_lo:
            return False
        return True


def _ms(value: Any) -> int | None:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, int):
        return value
    return None


if SOURCE_API:
    class KafkaLogSource(DataSource):
        """``spark.read.format("kafka-log").load(PATH)``: see the module doc."""

        @classmethod
        def name(cls) -> str:
            return NAME

        def schema(self) -> Any:
            from pyspark.sql.pandas.types import from_arrow_schema

            return from_arrow_schema(BATCH_SCHEMA if self.options.get("view") == "batches" else RECORD_SCHEMA)

        def reader(self, schema: Any) -> KafkaLogReader:
            return KafkaLogReader(dict(self.options))

    class KafkaLogReader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            view = options.get("view", "records")
            if view not in ("records", "batches"):
                raise UsageError(f"view {view!r}: give records or batches", field="view")
            paths = options.get("path") or options.get("paths")
            if not paths:
                raise UsageError("give a log dir, partition dir or .log file: .load(PATH)", field="path")
            self.paths = [p for p in paths.split(",") if p]
            self.view = view
            self.split = parse_size(options["split_size"]) if options.get("split_size") else DEFAULT_SPLIT
            self.endpoint = options.get("s3_endpoint")
            self.topic_glob = options.get("topic")
            pushdown = options.get("pushdown", "").lower()
            if pushdown not in ("", "true", "false"):
                raise UsageError(f"pushdown {pushdown!r}: give true or false", field="pushdown")
            self.prune = pushdown == "true" or (pushdown == "" and SCAN_SCOPED_PUSHDOWN)
            self.bounds = _Bounds()

        def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 (the API's name)
            b = self.bounds
            if not self.prune:
                yield from filters  # Spark applies them all; the plan stays the unfiltered one
                return
            for f in filters:
                col = f.attribute[0] if len(f.attribute) == 1 else None
                if col == "topic" and isinstance(f, EqualTo) and isinstance(f.value, str):
                    b.topics = {f.value} if b.topics is None else b.topics & {f.value}
                elif col == "topic" and isinstance(f, In) and all(isinstance(v, str) for v in f.value):
                    b.topics = set(f.value) if b.topics is None else b.topics & set(f.value)
                elif col == "topic" and isinstance(f, StringStartsWith):
                    b.topic_prefixes.append(f.value)
                elif col == "partition" and isinstance(f, EqualTo) and isinstance(f.value, int):
                    b.partitions = {f.value} if b.partitions is None else b.partitions & {f.value}
                elif col == "partition" and isinstance(f, In) and all(isinstance(v, int) for v in f.value):
                    b.partitions = set(f.value) if b.partitions is None else b.partitions & set(f.value)
                elif col == "partition" and isinstance(f, (GreaterThan, GreaterThanOrEqual)) and \
                        isinstance(f.value, int):
                    lo = f.value + (1 if isinstance(f, GreaterThan) else 0)
                    b.partition_lo = lo if b.partition_lo is None else max(b.partition_lo, lo)
                elif col == "partition" and isinstance(f, (LessThan, LessThanOrEqual)) and isinstance(f.value, int):
                    hi = f.value - (1 if isinstance(f, LessThan) else 0)
                    b.partition_hi = hi if b.partition_hi is None else min(b.partition_hi, hi)
                else:
                    self._partly(col, f)
                    yield f  # Spark applies it to the rows (the offset and time ones: after our pruning)

        def _partly(self, col: str | None, f: Any) -> None:
            """Offset and time filters prune segments and batches; Spark still applies them to the rows."""
            b = self.bounds
            value = getattr(f, "value", None)  # IsNull, IsNotNull, Not, ... have none
            if col in ("record_offset", "base_offset", "last_offset") and isinstance(value, int):
                if isinstance(f, (GreaterThan, GreaterThanOrEqual, EqualTo)) and col != "base_offset":
                    lo = value + (1 if isinstance(f, GreaterThan) else 0)
                    b.offset_lo = lo if b.offset_lo is None else max(b.offset_lo, lo)
                if isinstance(f, (LessThan, LessThanOrEqual, EqualTo)) and col != "last_offset":
                    hi = value - (1 if isinstance(f, LessThan) else 0)
                    b.offset_hi = hi if b.offset_hi is None else min(b.offset_hi, hi)
            elif col in ("timestamp", "timestamp_ms", "max_timestamp", "max_timestamp_ms") and \
                    isinstance(f, (GreaterThan, GreaterThanOrEqual, EqualTo)):
                ts = _ms(value)
                if ts is not None:
                    b.ts_lo = ts if b.ts_lo is None else max(b.ts_lo, ts)

        def partitions(self) -> Sequence[Any]:
            use_s3_endpoint(self.endpoint)
            found = discover(self.paths, [self.topic_glob] if self.topic_glob else ())
            b = self.bounds
            segs = [s for s in found.segments if b.topic_ok(s.topic) and b.partition_ok(s.partition)]
            if b.offset_lo is not None or b.offset_hi is not None:
                segs = _offset_pruned(segs, b.offset_lo, b.offset_hi)
            plan = make_plan(segs, split_bytes=self.split, parallelism=1)
            txns = _aborted_txns(plan.items) if self.view == "records" else {}
            # One Spark partition per packed task of about split_size bytes (as spark-scan's tasks), not per range:
            # a dir of many small segments would otherwise cost a Spark task (tens of ms) per segment.
            return [_Ranges(n, [(plan.items[i], txns.get(parent_of(plan.items[i].path), [])) for i in members])
                    for n, members in enumerate(plan.tasks)]

        def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
            use_s3_endpoint(self.endpoint)
            for item, aborted in partition.ranges:
                yield from self._read_range(item, aborted)

        def _read_range(self, it: WorkItem, aborted: list[tuple[int, int, int]]) -> Iterator[pa.RecordBatch]:
            out: list[pa.RecordBatch] = []
            b = self.bounds
            if self.view == "batches":
                cols = _BatchColumns(it)

                def sink(batch: RecordBatch, crc_valid: bool, records: list[Record] | None, more: bool) -> None:
                    if not b.batch_ok(batch):
                        return
                    if more:  # a further chunk of the last batch's records: its row counts them
                        cols.more_records(len(records or ()))
                        return
                    if cols.rows >= _ROWS:  # before the row, not after: its further chunks still count into it
                        out.append(cols.take())
                    cols.add(batch, crc_valid, records)
            else:
                rec = RecordColumns(it, with_tp=True, aborted_txns=aborted)

                def sink(batch: RecordBatch, crc_valid: bool, records: list[Record] | None, more: bool) -> None:
                    if b.batch_ok(batch):
                        rec.add(batch, crc_valid, records)
                        if rec.rows >= _ROWS or rec.payload >= DEFAULT_SPLIT // 4:
                            out.append(rec.take())

            def reset() -> None:  # the range is walked again (a remote one, with more bytes): forget every row
                out.clear()
                if self.view == "batches":
                    cols.reset()
                else:
                    rec.reset()
            scan_range(it, ScanOptions(), sink=sink, reset=reset)
            last = cols.take() if self.view == "batches" else rec.take()
            if last.num_rows:
                out.append(last)
            target = _spark_arrow(BATCH_SCHEMA if self.view == "batches" else RECORD_SCHEMA)
            for batch in out:
                yield batch.cast(target)

    class _Ranges(InputPartition):
        """One task's ranges, each with its partition's aborted transactions."""

        def __init__(self, task: int, ranges: list[tuple[WorkItem, list[tuple[int, int, int]]]]) -> None:
            super().__init__(task)
            self.ranges = ranges


def _spark_arrow(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema Spark expects of a reader's batches: timestamps in microseconds (Spark's precision)."""
    return pa.schema([pa.field(f.name, pa.timestamp("us", tz="UTC"), f.nullable) if pa.types.is_timestamp(f.type)
                      else f for f in schema])


def _offset_pruned(segs: Sequence[Any], lo: int | None, hi: int | None) -> list[Any]:
    """Segments that may hold offsets in ``[lo, hi]``: a segment's offsets lie in [its base, the next one's base)."""
    out = []
    for i, s in enumerate(segs):
        nxt = segs[i + 1] if i + 1 < len(segs) else None
        same = nxt is not None and (nxt.topic, nxt.partition, parent_of(nxt.path)) == \
            (s.topic, s.partition, parent_of(s.path))
        if hi is not None and s.base_offset > hi:
            continue
        if lo is not None and same and nxt is not None and nxt.base_offset <= lo:
            continue
        out.append(s)
    return out


def _aborted_txns(items: Sequence[WorkItem]) -> dict[str, list[tuple[int, int, int]]]:
    """Per partition dir: the aborted transactions its ``.txnindex`` files list (producer id, first, last offset)."""
    from kafkatool.log.txn_index import read_txn_index

    out: dict[str, list[tuple[int, int, int]]] = {}
    seen: set[str] = set()
    for it in items:
        if it.path in seen:
            continue
        seen.add(it.path)
        path = it.path[:-len(".log")] + ".txnindex"
        try:
            if is_url(path):
                import tempfile

                fs, inner = filesystem_for(path)
                with fs.open_input_file(inner) as f, tempfile.NamedTemporaryFile(suffix=".txnindex") as tmp:
                    tmp.write(f.read())
                    tmp.flush()
                    entries = read_txn_index(tmp.name, strict=False)
            elif os.path.exists(path):
                entries = read_txn_index(path, strict=False)
            else:
                continue
        except (KafkaToolError, OSError, FileNotFoundError):
            continue
        out.setdefault(parent_of(it.path), []).extend((e.producer_id, e.first_offset, e.last_offset) for e in entries)
    return out


class _BatchColumns:
    """One row per batch (``BATCH_SCHEMA``)."""

    def __init__(self, item: WorkItem) -> None:
        self.item = item
        self.reset()

    def reset(self) -> None:
        self.cols: dict[str, list[Any]] = {f.name: [] for f in BATCH_SCHEMA}

    @property
    def rows(self) -> int:
        return len(self.cols["position"])

    def add(self, batch: RecordBatch, crc_valid: bool, records: list[Record] | None) -> None:
        c = self.cols
        v2 = batch.magic >= 2
        mts = batch.max_timestamp
        for name, value in (
                ("topic", self.item.topic), ("partition", self.item.partition), ("segment", self.item.base_offset),
                ("position", batch.position), ("size", batch.size), ("magic", batch.magic),
                ("codec", CODEC_LABELS[batch.codec_id] if batch.codec_id < len(CODEC_LABELS) else str(batch.codec_id)),
                ("base_offset", batch.base_offset), ("last_offset", batch.last_offset),
                ("records", len(records) if records is not None else None),
                ("max_timestamp", mts if mts >= 0 else None), ("max_timestamp_ms", mts),
                ("timestamp_type", batch.timestamp_type.label), ("producer_id", batch.producer_id),
                ("producer_epoch", batch.producer_epoch),
                ("leader_epoch", getattr(batch, "partition_leader_epoch", None) if v2 else None),
                ("transactional", batch.is_transactional), ("control", batch.is_control), ("crc_valid", crc_valid),
                ("decoded", records is not None)):
            c[name].append(value)

    def more_records(self, n: int) -> None:
        """``n`` more records of the last row's batch (read a chunk at a time)."""
        self.cols["records"][-1] += n

    def take(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays([pa.array(self.cols[f.name], type=f.type) for f in BATCH_SCHEMA],
                                           schema=BATCH_SCHEMA)
        self.reset()
        return batch

