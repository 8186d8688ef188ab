"""``spark-scan`` on embedded Spark over a dir in a real S3 server (moto's, on 127.0.0.1): the executors read it
through pyarrow's S3 filesystem with ranged reads (``--s3-endpoint``, credentials from the environment) and print
the JSON of a process-pool scan of the local copy, byte for byte but for the paths. A real process: its JVM and
Python workers get the credentials and the endpoint from their environment, as on a cluster."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.cli import run_cli

if TYPE_CHECKING:
    from tests.support.s3_server import S3Server

pytestmark = pytest.mark.spark
pytest.importorskip("moto")


def test_spark_scan_of_a_dir_in_s3_prints_the_local_copys_json(s3_backup: tuple[S3Server, str],
                                                               sample_dir: Path) -> None:
    s3, url = s3_backup
    # ranged reads of 16 KiB (most segments are cut), packed into tasks of 512 KiB (a Spark task costs tens of ms)
    common = ("--split-size", "16KiB", "--task-size", "512KiB", "--key-sharing", "3", "--stats", "--format", "json")
    remote = run_cli("spark-scan", url, "--s3-endpoint", s3.endpoint, "--master", "local[2]", "--memory",
                     "1536MiB", *common, env={"KAFKATOOL_SPARK_FAST_JVM": "1", "SPARK_LOCAL_IP": "127.0.0.1"},
                     subprocess=True, timeout=400)
    local = run_cli("spark-scan", sample_dir, "--engine", "local-processes", "-j", "2", *common)
    assert remote.returncode == local.returncode == 0, remote.stderr
    assert "Traceback" not in remote.stderr
    assert remote.stdout.replace(url, "ROOT") == local.stdout.replace(str(sample_dir), "ROOT")
    assert '"type":"keyshare"' in local.stdout and local.stdout.count('"type":"segment"') > 50


def test_the_kafka_log_dataframe_of_a_dir_in_s3_is_the_local_copys(spark, s3_backup: tuple[S3Server, str],
                                                                   sample_dir: Path) -> None:
    """On the shared session (its Python workers have the S3 credentials in their environment, as a cluster's
    executors would); one session reads both, as a job that reads a backup beside a live copy would."""
    pytest.importorskip("pyspark.sql.datasource")
    import kafkatool.spark

    kafkatool.spark.register(spark)
    s3, url = s3_backup

    def rows(path: str) -> list[list[object]]:
        df = spark.read.format("kafka-log").option("s3_endpoint", s3.endpoint).option("topic", "pay*").load(path)
        got = df.orderBy("partition", "record_offset").select("partition", "record_offset", "key", "value",
                                                              "aborted", "crc_valid").collect()
        return [[r[0], r[1], r[2], r[3], r[4], r[5]] for r in got]

    remote, local = rows(url), rows(str(sample_dir))
    assert remote == local and len(local) == 4000 + 129  # payments: 4000 data records and 129 markers
    assert any(row[4] for row in local) and all(row[5] for row in local)


def test_a_library_scan_of_s3_on_a_session_already_running_reaches_its_executors(
        spark, s3_backup: tuple[S3Server, str], sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``spark_scan`` joining a session that was started without the endpoint (a notebook's): its Python workers'
    environment was fixed when they started, so the endpoint rides with each task (ScanOptions)."""
    from kafkatool.scan.source import S3_ENDPOINT_ENV
    from kafkatool.spark.run import ScanRequest, spark_scan
    from tests.spark.test_run import Recorder

    monkeypatch.delenv(S3_ENDPOINT_ENV, raising=False)  # the run sets it in this process; restored afterwards
    monkeypatch.setenv("KAFKATOOL_SPARK_FAST_JVM", "1")
    s3, url = s3_backup
    common: dict[str, object] = {"split_size": 64 << 10, "task_size": 1 << 20}
    remote, local = Recorder(), Recorder()
    got = spark_scan(ScanRequest([url], s3_endpoint=s3.endpoint, master="local[2]", memory="1536MiB", **common),
                     remote)  # type: ignore[arg-type]
    want = spark_scan(ScanRequest([str(sample_dir)], engine="local-processes", jobs=1, **common),
                      local)  # type: ignore[arg-type]
    assert got.report is not None and want.report is not None
    assert remote.buf.getvalue().replace(url, "ROOT") == local.buf.getvalue().replace(str(sample_dir), "ROOT")
    assert local.buf.getvalue().count('"type":"segment"') > 50
