"""The Spark jobs on one shared, down-sized ``local[2]`` session: every figure equals the single-process
scan of the same plan (stats, key sharing, export, index check), for local paths and URLs."""

from __future__ import annotations

import json
import shutil

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from kafkatool.scan.engine import ScanOptions, run_local
from kafkatool.scan.export import export_local
from kafkatool.scan.plan import discover, make_plan
from kafkatool.scan.report import keyshare_setup, keyshare_tables, topic_shares
from kafkatool.scan.verify import verify_local
from tests.scan.test_scan import comparable
from tests.support.cli import run_cli
from tests.support.dump_totals import assert_scan_equals_dump

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark():
    from kafkatool.spark.memory import GiB, plan_memory
    from kafkatool.spark.session import SessionSettings, build_session, find_java

    if find_java() is None:
        pytest.skip("no Java")
    session = build_session(SessionSettings(
        master="local[2]", fast_jvm=True, memory=plan_memory(2 * GiB, 2, local=True),
        conf=[("spark.sql.shuffle.partitions", "2"), ("spark.default.parallelism", "2")]))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def plan(mixed_dir):
    found = discover([str(mixed_dir.path)])
    setup = keyshare_setup(found.segments, 5)
    # Many ranges (4 KiB), few tasks (6): every task folds several ranges of several segments.
    return make_plan(found.segments, split_bytes=4096, parallelism=2, task_bytes=1 << 30,
                     share_slots=setup.share_slots(), topic_partitions=setup.topic_partitions()), setup


def test_stats_and_key_sharing_equal_the_single_process_scan(spark, plan):
    from kafkatool.spark.job import run_stats

    p, setup = plan
    assert len(p.tasks) == 6 and len(p.items) > 3 * len(p.segments)
    seen = []
    got = run_stats(spark, p, progress=lambda *a: seen.append(a))
    want = run_local(p)
    assert comparable(got) == comparable(want)
    assert keyshare_tables(topic_shares(got, setup)) == keyshare_tables(topic_shares(want, setup))
    assert seen[-1] == (p.total_bytes, p.total_bytes, len(p.tasks), len(p.tasks))
    assert got.total.crc_failures == 1 and got.findings == 2


def test_a_kafkatool_sample_dir_equals_the_single_process_scan(spark, sample_dir):
    from kafkatool.spark.job import run_stats

    found = discover([str(sample_dir)])
    setup = keyshare_setup(found.segments, 4)
    p = make_plan(found.segments, split_bytes=16384, task_bytes=1 << 30, share_slots=setup.share_slots(),
                  topic_partitions=setup.topic_partitions())
    got, want = run_stats(spark, p), run_local(p)
    assert comparable(got) == comparable(want)
    assert keyshare_tables(topic_shares(got, setup)) == keyshare_tables(topic_shares(want, setup))
    assert want.total.records > 30_000 and want.findings == 0
    assert {m for (m, _) in want.total.formats} == {0, 1, 2}


def test_urls_are_read_through_pyarrow_fs_on_executors(spark, mixed_dir):
    from kafkatool.spark.job import run_stats

    local = make_plan(discover([str(mixed_dir.path)]).segments, split_bytes=8192, task_bytes=1 << 30)
    remote = make_plan(discover([mixed_dir.path.as_uri()]).segments, split_bytes=8192, task_bytes=1 << 30)
    got = run_stats(spark, remote, ScanOptions(chunk_bytes=2048))
    want = run_local(local)
    assert [(s.stats.records, s.stats.bytes, s.end.kind) for s in got.segments] == \
        [(s.stats.records, s.stats.bytes, s.end.kind) for s in want.segments]
    assert got.total.distinct_keys == want.total.distinct_keys


def test_export_equals_the_single_process_export(spark, plan, tmp_path):
    from kafkatool.spark.job import run_export

    p, _ = plan
    n = run_export(spark, p, str(tmp_path / "spark"))
    m = export_local(p, str(tmp_path / "local"))
    assert n == m == run_local(p).total.records

    def rows(path):
        t = ds.dataset(path, format="parquet", partitioning="hive").to_table()
        return sorted(t.to_pylist(), key=lambda r: (r["topic"], int(r["partition"]), r["offset"]))

    a, b = rows(tmp_path / "spark"), rows(tmp_path / "local")
    for r in a + b:
        r["partition"] = int(r["partition"])
    assert a == b


def test_verify_index_equals_the_single_process_check(spark, mixed_dir, tmp_path):
    from kafkatool.spark.job import run_verify

    root = tmp_path / "logs"
    shutil.copytree(mixed_dir.path, root)
    (root / "clicks-1" / f"{0:020d}.timeindex").write_bytes(b"")
    segs = discover([str(root)]).segments
    got = run_verify(spark, segs, 1024, parallelism=2)
    assert got == verify_local(segs, 1024)
    assert {(r["topic"], r["classification"]) for r in got if r["classification"] != "ok"} == \
        {("clicks", "valid-different"), ("damaged", "log-truncation")}


@pytest.mark.slow
def test_spark_scan_local2_through_the_cli_equals_kafkatool_dump(mixed_dir, sample_dir, dumped, tmp_path):
    """The acceptance run: ``kafkatool spark-scan --master local[2]`` (its own JVM, as an operator runs it) over
    the mixed dir and a ``kafkatool sample`` dir; every partition's figures and the total equal the counts
    of ``kafkatool dump --deep --format json`` of the same dirs, and the Parquet segments add up to them."""
    out = tmp_path / "out"
    r = run_cli("spark-scan", mixed_dir.path, sample_dir, "--master", "local[2]", "--memory", "1536MiB",
                "--split-size", "16KiB", "--format", "json", "--output", out,
                env={"SPARK_LOCAL_IP": "127.0.0.1", "KAFKATOOL_SPARK_FAST_JVM": "1"}, timeout=300)
    assert r.returncode == 1, r.stderr[-3000:]  # damaged-0 holds a CRC failure and a torn tail
    assert "Traceback" not in r.stderr and "starting Spark (local[2]" in r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert_scan_equals_dump(objs, dumped)
    (total,) = [o for o in objs if o["type"] == "total"]
    assert total["records"] > 30_000 and total["crc_failures"] == 1
    segs = pq.read_table(out / "segments.parquet").to_pylist()
    assert sum(s["records"] for s in segs) == total["records"] and sum(s["bytes"] for s in segs) == total["bytes"]
    assert max(s["ranges"] for s in segs) > 1  # 16 KiB splits: segments were cut into ranges
