"""``kafkatool.spark.run.spark_scan``, the library entry point of ``kafkatool spark-scan``: driven from Python it
reports the figures the command prints, on the process-pool engine without pyspark, and with Spark."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkatool.commands.options import Output, OutputFormat
from kafkatool.commands.render.scan import (
    render_export,
    render_findings,
    render_index_checks,
    render_keyshare,
    render_stats,
)
from kafkatool.errors import UsageError
from kafkatool.scan.engine import ScanReport
from kafkatool.spark.run import ScanListener, ScanRequest, spark_scan
from tests.scan.test_scan import comparable
from tests.support.cli import run_cli
from tests.support.paths import ROOT

LOCAL = {"engine": "local-processes", "jobs": 2, "split_size": 4096}


class Recorder(ScanListener):
    """Renders what it hears as ``spark-scan --format json`` does, and keeps the stages' progress."""

    def __init__(self) -> None:
        self.buf = io.StringIO()
        self.out = Output(out=self.buf, quiet=True)
        self.stages: list[str] = []
        self.done: list[tuple[int, int]] = []

    def stage(self, name: str) -> None:
        self.stages.append(name)

    def progress(self, done_bytes: int, total_bytes: int, done_tasks: int = -1, total_tasks: int = -1) -> None:
        self.done.append((done_bytes, total_bytes))

    def stats(self, report: ScanReport) -> None:
        render_stats(report, self.out, OutputFormat.json, "partition")

    def findings(self, report: ScanReport) -> None:
        render_findings(report, self.out, OutputFormat.json)

    def keyshare(self, shares: Any) -> None:
        render_keyshare(shares, self.out, OutputFormat.json)

    def index_checks(self, rows: Any) -> None:
        render_index_checks(rows, self.out, OutputFormat.json)

    def export(self, records: int, directory: str) -> None:
        render_export(records, directory, self.out, OutputFormat.json)

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.buf.getvalue().splitlines()]


def _cli_json(*args: Any) -> tuple[int, list[dict[str, Any]]]:
    r = run_cli("spark-scan", *args, "--engine", "local-processes", "-j", "2", "--split-size", "4KiB",
                "--format", "json")
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, [json.loads(x) for x in r.stdout.splitlines()]


def test_stats_on_the_process_pool_are_the_commands(sample_dir: Path, tmp_path: Path) -> None:
    rc, cli = _cli_json(sample_dir, "--output", tmp_path / "cli")
    rec = Recorder()
    outcome = spark_scan(ScanRequest([str(sample_dir)], output=str(tmp_path / "lib"), **LOCAL), rec)  # type: ignore[arg-type]
    assert int(outcome.exit_code) == rc
    assert rec.lines() == cli
    assert rec.stages == ["scan"] and rec.done[-1][0] == rec.done[-1][1] > 0
    (total,) = [x for x in cli if x["type"] == "total"]
    assert outcome.report is not None and outcome.report.total.records == total["records"] > 30_000
    assert sorted(os.listdir(tmp_path / "lib")) == sorted(os.listdir(tmp_path / "cli"))
    assert len(outcome.written) == len(os.listdir(tmp_path / "lib"))


def test_key_sharing_index_check_and_export_are_the_commands(sample_dir: Path, tmp_path: Path) -> None:
    rc, cli = _cli_json(sample_dir, "--topic", "orders", "--key-sharing", "4", "--partitions", "orders=3",
                        "--verify-index", "--export-records", tmp_path / "cli")
    rec = Recorder()
    outcome = spark_scan(ScanRequest([str(sample_dir)], topic=["orders"], key_sharing=4, partitions={"orders": 3},
                                     verify_index=True, export_records=str(tmp_path / "lib"), **LOCAL), rec)  # type: ignore[arg-type]
    lib = rec.lines()
    for line in lib + cli:
        if line["type"] == "export":
            line.pop("path")
    assert int(outcome.exit_code) == rc and lib == cli
    assert rec.stages == ["scan"]  # stats, key sharing, index check and export: one pass
    assert {x["type"] for x in lib} >= {"keyshare", "index_check", "export"} and "total" not in {x["type"] for x in lib}
    assert outcome.exported == sum(x["records"] for x in lib if x["type"] == "keyshare_consumer") > 0
    assert (tmp_path / "lib" / "_SUCCESS").exists()


def test_a_plain_install_without_pyspark_runs_the_process_pool(sample_dir: Path) -> None:
    """pyspark is imported on the Spark path only: with it unimportable the local engine runs, Spark is refused
    in one line that says what to do."""
    script = f"""
import sys
sys.modules["pyspark"] = None  # import pyspark raises ImportError
from kafkatool.errors import UsageError
from kafkatool.spark.run import ScanRequest, spark_scan
out = spark_scan(ScanRequest([{str(sample_dir)!r}], engine="local-processes", jobs=1))
assert out.report is not None and out.report.total.records > 30000
assert not [m for m in sys.modules if m.startswith("pyspark") and sys.modules[m] is not None]
try:
    spark_scan(ScanRequest([{str(sample_dir)!r}], engine="spark", master="local[1]"))
except UsageError as e:
    print(e.field, e.message)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("engine the Spark engine needs pyspark, which is not installed: pip install "
                               "'kafkatool[spark]'"), r.stdout


@pytest.mark.parametrize("kw, field", [
    ({"engine": "flink"}, "engine"),
    ({"master": "sc://host:15002"}, "master"),
    ({"from_time": 0}, "from_time"),
    ({"partitions": {"orders": 0}}, "partitions"),
    ({"partitions": {"nosuch": 3}, "key_sharing": 2, **LOCAL}, "partitions"),
    ({"index_interval_bytes": 0}, "index_interval_bytes"),
    ({"split_size": 0}, "split_size"),
    ({"output": "s3://bucket/x"}, "output"),
    ({"executor_timeout": 0}, "executor_timeout"),
    ({"s3_endpoint": "localhost:9000"}, "s3_endpoint"),
    ({"memory": "300MiB", "master": "local[4]"}, "memory"),
    ({"memory": "lots"}, "memory"),
])
def test_bad_values_are_usage_errors_about_their_field(sample_dir: Path, kw: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageError) as e:
        spark_scan(ScanRequest([str(sample_dir)], **kw))
    assert e.value.field == field and "--" not in e.value.message


@pytest.mark.spark
def test_spark_gives_the_figures_of_the_process_pool(spark: Any, sample_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKATOOL_SPARK_FAST_JVM", "1")
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")

    class Sessions(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.sessions: list[str] = []

        def session(self, master: str, memory: Any, cores: int) -> None:
            self.sessions.append(f"{master} {cores}")

    rec, pool = Sessions(), Recorder()
    got = spark_scan(ScanRequest([str(sample_dir)], master="local[2]", memory="1536MiB", split_size=16384,
                                 task_size=512 << 10), rec)
    want = spark_scan(ScanRequest([str(sample_dir)], engine="local-processes", jobs=2, split_size=16384,
                                  task_size=512 << 10), pool)
    assert rec.sessions == ["local[2] 2"] and rec.stages == ["scan"]
    assert got.report is not None and want.report is not None
    assert comparable(got.report) == comparable(want.report)
    # The JSON lines byte for byte (findings' data keep dump's key order through the executors' Arrow).
    assert rec.buf.getvalue() == pool.buf.getvalue() and '"type":"finding"' in pool.buf.getvalue()
