"""``spark-scan`` on embedded Spark over a dir in a real S3 server (moto's, on 127.0.0.1): the executors read it
through pyarrow's S3 filesystem with ranged reads (``--s3-endpoint``, credentials from the environment) and print
the JSON of a process-pool scan of the local copy, byte for byte but for the paths. A real process: its JVM and
Python workers get the credentials and the endpoint from their environment, as on a cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


DATAFRAME = """
import json, os, sys
from pyspark.sql import SparkSession
import kafkatool.spark
from kafkatool.spark.session import build_session, SessionSettings
from kafkatool.spark.memory import GiB, plan_memory

spark = build_session(SessionSettings(master="local[2]", fast_jvm=True, memory=plan_memory(GiB + GiB // 2, 2,
                                                                                             local=True)))
try:
    kafkatool.spark.register(spark)
    for path in sys.argv[2:]:
        df = spark.read.format("kafka-log").option("s3_endpoint", sys.argv[1]).option("topic", "pay*").load(path)
        rows = df.orderBy("partition", "record_offset").select("partition", "record_offset", "key", "value",
                                                               "aborted", "crc_valid").collect()
        print(json.dumps([[r[0], r[1], r[2].hex() if r[2] else None, r[3].hex() if r[3] else None, r[4], r[5]]
                          for r in rows]))
finally:
    spark.stop()
"""


def test_the_kafka_log_dataframe_of_a_dir_in_s3_is_the_local_copys(s3_backup: tuple[S3Server, str], sample_dir: Path,
                                                                   tmp_path: Path) -> None:
    pytest.importorskip("pyspark.sql.datasource")
    from tests.support.paths import ROOT

    s3, url = s3_backup
    script = tmp_path / "df.py"
    script.write_text(DATAFRAME)
    # one session reads both, as a job that reads a backup beside a live copy would
    r = subprocess.run([sys.executable, str(script), s3.endpoint, url, str(sample_dir)], capture_output=True,
                       text=True, timeout=400, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]
    remote, local = (json.loads(line) for line in r.stdout.strip().splitlines()[-2:])
    assert remote == local and len(local) == 4000 + 129  # payments: 4000 data records and 129 markers
    assert any(row[4] for row in local) and all(row[5] for row in local)
