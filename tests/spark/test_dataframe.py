"""The ``kafka-log`` DataFrame source on the shared ``local[2]`` session: its records are the export's rows of the
same dir (every column, ``aborted`` from the ``.txnindex`` files against the export's from the markers), its batches
view counts what the scan counts, a CRC-failed batch's records are marked, pushed filters prune without changing
the answer, and a reused DataFrame is never read with another query's pruning (Spark 4.3 keeps that plan on the
relation)."""

from __future__ import annotations

import shutil

import pyarrow.dataset as ds
import pytest

from kafkatool.errors import UsageError
from kafkatool.scan.export import ExportTarget
from kafkatool.scan.plan import discover, make_plan
from kafkatool.scan.pool import run_pass
from kafkatool.scan.schemas import RECORD_SCHEMA
from kafkatool.scan.task import PassWork

pytestmark = pytest.mark.spark

KEY = ("topic", "partition", "record_offset", "position")


@pytest.fixture(scope="module")
def source(spark):
    pytest.importorskip("pyspark.sql.datasource")
    import kafkatool.spark

    kafkatool.spark.register(spark)
    return spark


@pytest.fixture(scope="module")
def full_rows(source, sample_dir) -> list[dict]:
    """Every record row of the sample, read once for the module's tests (a whole read is seconds of Python
    workers); each test gets copies."""
    return _read(source, sample_dir).toArrow().to_pylist()


def _rows(full_rows: list[dict]) -> list[dict]:
    return [dict(r) for r in full_rows]


def _sorted(rows: list[dict]) -> list[dict]:
    for r in rows:
        r["partition"] = int(r["partition"])
    return sorted(rows, key=lambda r: tuple(r[k] for k in KEY))


def _read(spark, path, **options):
    reader = spark.read.format("kafka-log")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(path))


def test_records_are_the_exports_rows_and_batches_the_scans_count(source, sample_dir, full_rows, tmp_path):
    plan = make_plan(discover([str(sample_dir)]).segments)
    done = run_pass(plan, work=PassWork(ExportTarget(str(tmp_path / "export"))))
    want = _sorted(ds.dataset(tmp_path / "export", format="parquet", partitioning="hive").to_table().to_pylist())

    df = _read(source, sample_dir)
    assert [f.name for f in df.schema.fields] == RECORD_SCHEMA.names
    assert df.rdd.getNumPartitions() < len(plan.segments) // 10  # small segments' ranges packed into few tasks
    got = _sorted(_rows(full_rows))  # that DataFrame's rows (full_rows reads it)
    assert len(got) == len(want) == done.report.total.records > 30_000
    assert got == want  # every column, timestamps (UTC) included
    aborted = [r for r in got if r["aborted"]]
    assert aborted and all(r["transactional"] and not r["control"] for r in aborted)
    assert all(r["timestamp_ms"] < 0 or int(r["timestamp"].timestamp() * 1000) == r["timestamp_ms"] for r in got)

    b = _read(source, sample_dir, view="batches").toArrow()
    assert b.num_rows == done.report.total.batches
    assert sum(b["records"].to_pylist()) == done.report.total.records
    assert all(b["crc_valid"].to_pylist()) and all(b["decoded"].to_pylist())


def test_a_crc_failed_batchs_records_come_marked(source, sample_dir, tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(sample_dir / "audit-log-0", root / "audit-log-0")
    (log,) = sorted((root / "audit-log-0").glob("*.log"))[:1]
    base = int(log.stem)
    clean = _read(source, root, view="batches").where(f"segment = {base}").orderBy("position").toArrow().to_pylist()
    victim = clean[3]
    data = bytearray(log.read_bytes())
    data[victim["position"] + victim["size"] - 1] ^= 0xFF  # a value byte (no codec): CRC fails, records parse
    log.write_bytes(bytes(data))

    rows = _read(source, root).toArrow().to_pylist()
    bad = [r for r in rows if r["segment"] == base and r["position"] == victim["position"]]
    assert bad and all(r["crc_valid"] is False for r in bad)
    assert all(r["crc_valid"] for r in rows if r not in bad)
    assert len(rows) == sum(x["records"] for x in _read(source, root, view="batches").toArrow().to_pylist())
    after = _read(source, root, view="batches").where(f"segment = {base}").orderBy("position").toArrow().to_pylist()
    assert [x["crc_valid"] for x in after] == [x["position"] != victim["position"] for x in clean]


def test_pushed_filters_prune_and_give_the_rows_spark_would(source, sample_dir, full_rows):
    where = "topic = 'orders' AND partition IN (1, 2) AND record_offset >= 2000"
    # small tasks, so that the plans' task counts show the pruning (a task packs ranges up to split_size)
    full = _read(source, sample_dir, split_size="64KiB")
    want = _sorted([r for r in _rows(full_rows)
                    if r["topic"] == "orders" and int(r["partition"]) in (1, 2) and r["record_offset"] >= 2000])
    pruned = _read(source, sample_dir, pushdown="true", split_size="64KiB").where(where)
    assert pruned.rdd.getNumPartitions() < full.rdd.getNumPartitions()
    assert _sorted(pruned.toArrow().to_pylist()) == want and want

    t = want[len(want) // 2]["timestamp_ms"]
    by_time = _read(source, sample_dir, pushdown="true").where(f"topic = 'orders' AND timestamp_ms >= {t}")
    assert _sorted(by_time.toArrow().to_pylist()) == _sorted(
        [r for r in _rows(full_rows) if r["topic"] == "orders" and r["timestamp_ms"] >= t])


def test_a_reused_dataframe_is_not_read_with_another_querys_pruning(source, sample_dir, full_rows):
    from kafkatool.spark.dataframe import SCAN_SCOPED_PUSHDOWN

    total = len(full_rows)
    df = _read(source, sample_dir)
    assert df.where("topic = 'orders' AND partition = 1").count() < total
    assert df.count() == total
    if not SCAN_SCOPED_PUSHDOWN:  # why pruning is opt-in on this Spark: the pruned plan stays on the relation
        forced = _read(source, sample_dir, pushdown="true")
        assert forced.where("topic = 'orders' AND partition = 1").count() < total
        assert forced.count() < total


def test_bad_options_are_one_line_errors(source, sample_dir):
    with pytest.raises(Exception, match="view 'segments': give records or batches"):
        _read(source, sample_dir, view="segments").count()


def test_without_the_python_data_source_api_register_says_so(monkeypatch):
    import kafkatool.spark
    from kafkatool.spark import dataframe

    monkeypatch.setattr(dataframe, "SOURCE_API", False)
    with pytest.raises(UsageError) as e:
        kafkatool.spark.register(object())
    assert "needs PySpark 4" in e.value.message and "spark.read.parquet" in e.value.message
    assert "\n" not in e.value.message


def test_a_batch_of_more_records_than_a_chunk_holds_is_every_row_and_one_batch(source, tmp_path):
    """More records than the largest chunk (16,384): the reader sees them a chunk at a time and still gives every
    record a row and the batch one row counting them all."""
    from kafkatool.record import default_records as v2
    from kafkatool.util.budget import MAX_RECORD_CHUNK
    from tests.support.dump_fixtures import write_segment

    n = MAX_RECORD_CHUNK + 3000
    write_segment(tmp_path / "logs" / "wide-0", [
        v2.build_batch([(i, 1_700_000_000_000 + i, b"k%d" % i, b"v", []) for i in range(n)]),
        v2.build_batch([(n, 1_700_000_000_000, b"k", b"v", [])])])
    rows = _read(source, tmp_path / "logs").select("record_offset").toArrow()["record_offset"].to_pylist()
    assert sorted(rows) == list(range(n + 1))
    b = _read(source, tmp_path / "logs", view="batches").orderBy("position").toArrow()
    assert b["records"].to_pylist() == [n, 1]


@pytest.mark.parametrize("view", ["batches", "records"])
def test_a_remote_range_walked_again_gives_each_row_once(view, tmp_path, monkeypatch):
    """A remote range whose walk went where the mirror had no bytes is walked again over more of the file
    (``scan_range``'s ``reset``): the reader forgets the rows of the first walk, those still buffered included."""
    pytest.importorskip("pyspark.sql.datasource")
    import kafkatool.scan.engine as engine
    from kafkatool.dump import Finding, Severity
    from kafkatool.record import default_records as v2
    from kafkatool.spark.dataframe import KafkaLogReader
    from tests.support.dump_fixtures import write_segment

    write_segment(tmp_path / "logs" / "t-0", [
        v2.build_batch([(5 * n + i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * 50, []) for i in range(5)])
        for n in range(8)], interval=200)
    walk, seen = engine._walk, set()

    def first_walk_stops(item, opts, local, max_bytes, sink):  # as a resync into bytes the mirror lacks would
        r = walk(item, opts, local, max_bytes, sink)
        if max_bytes is not None and item.id not in seen:
            seen.add(item.id)
            r.findings.append(Finding("corrupt-region", Severity.ERROR, item.path, "forced", 0))
        return r
    monkeypatch.setattr(engine, "_walk", first_walk_stops)

    def rows(path: str) -> list[int]:
        reader = KafkaLogReader({"path": path, "view": view})
        plan = make_plan(discover([path]).segments, split_bytes=700, parallelism=1)
        assert len(plan.items) > 2
        return [sum(b.num_rows for b in reader._read_range(it, [])) for it in plan.items]
    local, remote = rows(str(tmp_path / "logs")), rows((tmp_path / "logs").as_uri())
    assert len(seen) == len(remote) - 1  # every range but the last was walked again
    assert remote == local and sum(local) == (8 if view == "batches" else 40)
