"""The Spark job on the shared ``local[2]`` session: every figure, finding and exported record equals the
single-process pass of the same plan (stats, key sharing, export, index check, in one job), for local paths, URLs
and damaged data, where the findings are ``dump --deep --verify``'s."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from kafkatool.scan.export import ExportTarget
from kafkatool.scan.plan import discover, make_plan
from kafkatool.scan.pool import run_pass
from kafkatool.scan.report import keyshare_setup, keyshare_tables, topic_shares
from kafkatool.scan.task import PassWork
from tests.scan.test_scan import comparable
from tests.support.damage import damaged_dir, dump_view, finding_key

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def plan(mixed_dir):
    found = discover([str(mixed_dir.path)])
    setup = keyshare_setup(found.segments, 5)
    # Many ranges (4 KiB), few tasks (6): every task folds several ranges of several segments.
    return make_plan(found.segments, split_bytes=4096, parallelism=2, task_bytes=1 << 30,
                     share_slots=setup.share_slots(), topic_partitions=setup.topic_partitions()), setup


def _rows(path: Path) -> list[dict]:
    t = ds.dataset(path, format="parquet", partitioning="hive").to_table()
    rows = sorted(t.to_pylist(), key=lambda r: (r["topic"], int(r["partition"]), r["record_offset"]))
    for r in rows:
        r["partition"] = int(r["partition"])
    return rows


def test_stats_key_sharing_export_and_index_check_in_one_job_equal_the_local_pass(spark, plan, tmp_path):
    from kafkatool.spark.job import run_pass as spark_pass

    p, setup = plan
    assert len(p.tasks) == 6 and len(p.items) > 3 * len(p.segments)
    seen = []
    jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    got = spark_pass(spark, p, work=PassWork(ExportTarget(str(tmp_path / "spark")), True, 1024),
                     progress=lambda *a: seen.append(a))
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs_before + 1  # one pass, one job
    want = run_pass(p, work=PassWork(ExportTarget(str(tmp_path / "local")), True, 1024), jobs=2)
    assert comparable(got.report) == comparable(want.report)
    assert keyshare_tables(topic_shares(got.report, setup)) == keyshare_tables(topic_shares(want.report, setup))
    assert seen[-1] == (p.total_bytes, p.total_bytes, len(p.tasks), len(p.tasks))
    assert got.report.total.crc_failures == 1 and int(got.report.exit_code) == 1
    assert got.index_checks == want.index_checks and len(got.index_checks) == len(p.segments)
    assert got.exported == want.exported == got.report.total.records
    assert _rows(tmp_path / "spark") == _rows(tmp_path / "local")


def test_a_kafkatool_sample_dir_equals_the_single_process_scan(spark, sample_dir):
    from kafkatool.spark.job import run_pass as spark_pass

    found = discover([str(sample_dir)])
    setup = keyshare_setup(found.segments, 4)
    p = make_plan(found.segments, split_bytes=16384, task_bytes=1 << 30, share_slots=setup.share_slots(),
                  topic_partitions=setup.topic_partitions())
    got, want = spark_pass(spark, p).report, run_pass(p).report
    assert comparable(got) == comparable(want)
    assert keyshare_tables(topic_shares(got, setup)) == keyshare_tables(topic_shares(want, setup))
    assert want.total.records > 30_000 and int(want.exit_code) == 0
    assert {m for (m, _) in want.total.formats} == {0, 1, 2}


def test_damaged_and_hostile_files_give_dumps_findings_on_spark(spark, sample_dir, tmp_path):
    from kafkatool.spark.job import run_pass as spark_pass

    root = tmp_path / "logs"
    sources = [q for q in Path(sample_dir).rglob("*.log") if q.stat().st_size > 4096]
    logs = damaged_dir(root, sources, seed=2203, count=40)
    want = {os.path.realpath(q): dump_view(q) for q in logs}
    p = make_plan(discover([str(root)]).segments, split_bytes=1200, parallelism=2, task_bytes=1 << 30)
    got = spark_pass(spark, p).report
    by_file = {os.path.realpath(s.path): s for s in got.segments}
    assert sorted(by_file) == sorted(want)
    for path, v in want.items():
        seg = by_file[path]
        assert [finding_key(f) for f in seg.findings] == v["findings"], path
        assert seg.stats.batches == v["batches"], path
    assert int(got.exit_code) == max(v["exit"] for v in want.values())


def test_urls_are_read_through_pyarrow_fs_on_executors(spark, mixed_dir):
    from kafkatool.spark.job import run_pass as spark_pass

    local = make_plan(discover([str(mixed_dir.path)]).segments, split_bytes=8192, task_bytes=1 << 30)
    remote = make_plan(discover([mixed_dir.path.as_uri()]).segments, split_bytes=8192, task_bytes=1 << 30)
    got = spark_pass(spark, remote).report
    want = run_pass(local).report
    assert [(s.stats.records, s.stats.bytes, [f.kind for f in s.findings]) for s in got.segments] == \
        [(s.stats.records, s.stats.bytes, [f.kind for f in s.findings]) for s in want.segments]
    assert got.total.distinct_keys == want.total.distinct_keys
    assert sum(r.bytes_scanned for s in got.segments for r in s.used) >= got.total.bytes


def test_a_file_an_executor_cannot_open_is_an_io_error_naming_the_host_and_size(spark, mixed_dir, tmp_path):
    from kafkatool.spark.job import run_pass as spark_pass

    root = tmp_path / "logs"
    shutil.copytree(mixed_dir.path / "orders-0", root / "orders-0")
    p = make_plan(discover([str(root)]).segments, split_bytes=4096, task_bytes=1 << 30)
    victim = p.segments[0]
    os.unlink(victim.path)  # planned on the driver, gone when the executors open it
    got = spark_pass(spark, p).report
    (seg,) = [s for s in got.segments if s.path == victim.path]
    (f,) = seg.findings
    assert f.kind == "io-error" and f"{victim.size} bytes not read" in f.message and "on host" in f.message
    assert seg.unread_bytes == victim.size and int(got.exit_code) == 2
