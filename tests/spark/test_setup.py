"""Pure pieces of the Spark set-up (no JVM): the memory split, session settings, shipping, planning balance."""

from __future__ import annotations

import os
import sys
import zipfile

import pytest

from kafkatool.errors import UsageError
from kafkatool.scan.plan import SegmentFile, WorkItem, balance, balance_segments
from kafkatool.spark.memory import (
    DEFAULT_BUDGET,
    MIN_WORKER,
    GiB,
    MiB,
    default_budget,
    local_cores,
    minimum_budget,
    plan_memory,
    plan_processes,
)
from kafkatool.spark.session import FAST_JVM_OPTS, SessionSettings, session_conf, spark_home_warning
from kafkatool.spark.ship import archive_settings, package_zip
from kafkatool.util.units import format_size


def test_local_budget_is_split_between_the_jvm_and_one_python_worker_per_core():
    m = plan_memory(2 * GiB, 2, local=True)
    assert m.driver_memory == m.executor_memory == int(2 * GiB * 0.3)
    assert m.python_worker_memory == (2 * GiB - m.executor_memory - 384 * MiB) // 2
    assert m.chunk_bytes == m.python_worker_memory // 16
    # The Python side follows the run's budget rules: reserved per process, then chunks, then batches.
    from kafkatool.util import budget

    b = budget.plan(2 * GiB - m.executor_memory - 384 * MiB, workers=2, chunk_bytes=m.chunk_bytes, processes=2)
    assert m.decompress_limit == b.worker.decompress_limit
    assert m.python_worker_memory > m.decompress_limit * (1 + budget.RECORD_EXPANSION)
    conf = m.spark_conf()
    assert conf["spark.driver.memory"] == f"{m.driver_memory // MiB}m"
    assert conf["spark.python.worker.memory"] == f"{m.python_worker_memory // MiB}m"
    assert "spark.executor.memoryOverhead" not in conf and "spark.executor.pyspark.memory" not in conf


def test_cluster_budget_is_one_executor_container():
    m = plan_memory(8 * GiB, 4, local=False)
    conf = m.spark_conf()
    heap = int(8 * GiB * 0.3)
    assert conf["spark.executor.memory"] == f"{heap // MiB}m"
    assert conf["spark.executor.memoryOverhead"] == f"{(8 * GiB - heap) // MiB}m"  # Python workers live here
    assert conf["spark.executor.cores"] == "4"
    assert m.driver_memory == 2 * GiB  # a quarter, capped: the driver only merges per-range figures
    assert m.python_worker_memory == (8 * GiB - heap - 384 * MiB) // 4


def test_limits_are_clamped_and_a_too_small_budget_is_refused():
    big = plan_memory(64 * GiB, 1, local=True)
    assert big.executor_memory == 8 * GiB and big.decompress_limit == 256 * MiB and big.chunk_bytes == 64 * MiB
    with pytest.raises(UsageError, match="too small for 8 task"):
        plan_memory(1 * GiB, 8, local=True)
    pool = plan_processes(None, 2)  # no JVM: the budget's default total for the process pool
    assert pool.total == 256 * MiB and pool.workers == 2 and pool.worker.decompress_limit >= 2 * MiB


@pytest.mark.parametrize("master,cores", [("local", 1), ("local[3]", 3), ("local[*]", 7), ("local[2,4]", 2)])
def test_local_cores(master, cores):
    assert local_cores(master, 7) == cores


def test_session_conf_sets_the_must_do_settings_and_lets_user_conf_win(tmp_path):
    s = SessionSettings(master="local[2]", memory=plan_memory(2 * GiB, 2, local=True), fast_jvm=True,
                        conf=[("spark.driver.extraJavaOptions", "-Dx=1"), ("spark.ui.enabled", "true")])
    conf, env = session_conf(s, "/tmp/l.properties")
    assert env["PYSPARK_PYTHON"] == sys.executable and env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert conf["spark.driver.host"] == "127.0.0.1" and conf["spark.ui.showConsoleProgress"] == "false"
    assert conf["spark.ui.enabled"] == "true"  # --conf wins
    opts = conf["spark.driver.extraJavaOptions"]
    assert "-Dlog4j2.configurationFile=file:/tmp/l.properties" in opts and FAST_JVM_OPTS in opts
    assert opts.endswith("-Dx=1")  # JVM options are joined, not replaced
    assert env["PYTHONPATH"].split(os.pathsep)[0] == os.path.dirname(os.path.dirname(
        os.path.abspath(__import__("kafkatool").__file__)))
    cluster, cenv = session_conf(SessionSettings(master="spark://h:7077", driver_host="10.0.0.5",
                                                 python_archive="hdfs:///envs/kt.tar.gz"), "/tmp/l")
    assert cluster["spark.driver.host"] == "10.0.0.5" and "SPARK_LOCAL_IP" not in cenv
    assert cluster["spark.archives"] == "hdfs:///envs/kt.tar.gz#environment"
    assert cenv["PYSPARK_PYTHON"] == "./environment/bin/python"


def test_spark_home_of_another_version_is_warned_about(tmp_path, monkeypatch):
    (tmp_path / "RELEASE").write_text("Spark 3.5.1 built for Hadoop 3.3.4\n")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    w = spark_home_warning("4.3.0", "/somewhere/pyspark")
    assert w is not None and "Spark 3.5.1" in w and "4.3.0" in w
    assert spark_home_warning("3.5.1", "/somewhere/pyspark") is None
    monkeypatch.delenv("SPARK_HOME")
    assert spark_home_warning("4.3.0", "/somewhere/pyspark") is None


def test_package_zip_ships_the_pure_python_package(tmp_path):
    names = zipfile.ZipFile(package_zip(str(tmp_path))).namelist()
    assert "kafkatool/__init__.py" in names and "kafkatool/scan/plan.py" in names
    assert "kafkatool/py.typed" in names and not any("__pycache__" in n for n in names)
    conf, env = archive_settings("venv.tar.gz")
    assert conf["spark.archives"] == "venv.tar.gz#environment"


def _item(i: int, size: int) -> WorkItem:
    return WorkItem(i, "t", 0, f"/x/{i}", 0, 0, size, size, 0, 1)


def test_tasks_are_balanced_by_bytes():
    items = [_item(i, s) for i, s in enumerate([100, 90, 80, 10, 10, 10, 5, 5, 5, 5])]
    tasks = balance(items, split_bytes=1 << 30, parallelism=1)
    assert len(tasks) == 3 and sorted(i for t in tasks for i in t) == list(range(10))
    loads = [sum(items[i].bytes for i in t) for t in tasks]
    assert max(loads) - min(loads) <= 20
    many = balance([_item(i, 0) for i in range(1000)], split_bytes=1 << 30, parallelism=2)
    assert len(many) == 6 and max(map(len, many)) - min(map(len, many)) <= 1  # empty segments spread too
    segs = [SegmentFile("t", 0, f"/x/{i}", i, s) for i, s in enumerate([50, 40, 30, 20])]
    assert sorted(i for t in balance_segments(segs, 1) for i in t) == [0, 1, 2, 3]


def test_a_failed_spark_job_is_one_line_naming_the_python_cause():
    from kafkatool.spark.job import short_error

    text = ("An error occurred while calling o45.toArrow.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 1.0 failed\n"
            '  File "/x/worker.py", line 1, in main\n    raise ValueError("boom")\nValueError: boom\n'
            "\tat org.apache.spark.api.python.BasePythonRunner")
    assert short_error(Exception(text)) == "ValueError: boom"
    assert short_error(Exception("plain failure\nsecond")) == "plain failure"


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64])
@pytest.mark.parametrize("local", [True, False])
def test_the_stated_minimum_is_the_least_budget_that_works(cores, local):
    """minimum_budget is what the refusal says and what --help quotes: it works, 1 MiB less is refused with it."""
    need = minimum_budget(cores)
    m = plan_memory(need, cores, local=local)
    assert m.python_worker_memory >= MIN_WORKER
    with pytest.raises(UsageError, match=f"the minimum is {format_size(need)}"):
        plan_memory(need - MiB, cores, local=local)


@pytest.mark.parametrize("cores", [1, 2, 4, 6, 8, 16, 64])
def test_the_default_budget_works_for_any_number_of_cores(cores):
    """2 GiB by default (a JVM and its Python workers), raised to the minimum for local[*] on a many-core machine
    (2 GiB is too small for 6 or more task slots)."""
    b = default_budget(cores)
    assert b == max(DEFAULT_BUDGET, minimum_budget(cores))
    plan_memory(b, cores, local=True)
    assert (b > DEFAULT_BUDGET) == (cores >= 6)


def test_spark_scan_memory_help_states_the_split_and_the_computed_minimums():
    from kafkatool.commands.spark_scan import SPARK_MEMORY_HELP

    for n in (2, 4, 8):
        assert f"local[{n}]: {format_size(minimum_budget(n))}" in SPARK_MEMORY_HELP
    for part in ("JVM heap", "JVM overhead", "Python worker", "memoryOverhead", "driver", "--executor-cores",
                 "local-processes", "[default: 2GiB with Spark"):
        assert part in SPARK_MEMORY_HELP, part
