"""``spark-scan`` on embedded Spark over a dir in a real S3 server (moto's, on 127.0.0.1): the executors read it
through pyarrow's S3 filesystem with ranged reads (``--s3-endpoint``, credentials from the environment) and print
the JSON of a process-pool scan of the local copy, byte for byte but for the paths. A real process: its JVM and
Python workers get the credentials and the endpoint from their environment, as on a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.spark
pytest.importorskip("moto")


def test_spark_scan_of_a_dir_in_s3_prints_the_local_copys_json(sample_dir: Path) -> None:
    from tests.support.s3_server import s3_server

    common = ("--split-size", "16KiB", "--key-sharing", "3", "--stats", "--format", "json")
    with s3_server() as s3:
        url = s3.upload(sample_dir, "backup/kafka-logs")
        remote = run_cli("spark-scan", url, "--s3-endpoint", s3.endpoint, "--master", "local[2]", "--memory",
                         "1536MiB", *common, env={"KAFKATOOL_SPARK_FAST_JVM": "1", "SPARK_LOCAL_IP": "127.0.0.1"},
                         subprocess=True, timeout=400)
    local = run_cli("spark-scan", sample_dir, "--engine", "local-processes", "-j", "2", *common)
    assert remote.returncode == local.returncode == 0, remote.stderr
    assert "Traceback" not in remote.stderr
    assert remote.stdout.replace(url, "ROOT") == local.stdout.replace(str(sample_dir), "ROOT")
    assert '"type":"keyshare"' in local.stdout and local.stdout.count('"type":"segment"') > 50
