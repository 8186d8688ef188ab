"""Object storage: a sample log dir uploaded to a real S3 server (moto's server mode on 127.0.0.1) scans as its
local copy does, through pyarrow's S3 filesystem with ranged reads (``--s3-endpoint``; credentials from the usual
chain, here the environment), on the process pool."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from kafkatool.scan.plan import discover
from kafkatool.scan.source import S3_ENDPOINT_ENV
from kafkatool.spark.run import ScanRequest, spark_scan
from tests.spark.test_run import Recorder

pytest.importorskip("moto")


def _figures(rec: Recorder, root: str) -> list[dict[str, Any]]:
    out = []
    for line in rec.lines():
        out.append({k: (v.replace(root, "ROOT") if isinstance(v, str) else v) for k, v in line.items()})
    return out


def test_a_dir_in_s3_scans_as_its_local_copy_with_ranged_reads(s3_backup, sample_dir: Path) -> None:
    s3, url = s3_backup  # the server, the sample dir's URL in it (tests/conftest.py)
    opts: dict[str, Any] = {"engine": "local-processes", "jobs": 2, "split_size": 16384, "key_sharing": 3,
                            "stats": True}
    local, remote = Recorder(), Recorder()
    want = spark_scan(ScanRequest([str(sample_dir)], **opts), local)
    got = spark_scan(ScanRequest([url], s3_endpoint=s3.endpoint, **opts), remote)
    assert want.report is not None and got.report is not None
    assert int(got.exit_code) == int(want.exit_code) == 0
    assert _figures(remote, url) == _figures(local, str(sample_dir))  # the same ranges, figures, key sharing
    assert got.report.total.records == want.report.total.records > 30_000
    # Ranged reads: a segment cut into several ranges is read range by range, not downloaded whole per range.
    cut = [s for s in got.report.segments if len(s.used) > 2]
    assert cut
    for s in cut:
        assert all(r.bytes_scanned < s.stats.bytes for r in s.used), s.path
        assert sum(r.bytes_scanned for r in s.used) >= s.stats.bytes


def test_the_index_check_and_export_of_a_dir_in_s3_are_the_local_copys(s3_backup, sample_dir: Path,
                                                                      tmp_path: Path) -> None:
    s3, url = s3_backup
    opts: dict[str, Any] = {"engine": "local-processes", "jobs": 2, "verify_index": True, "topic": ["pay*"]}
    local, remote = Recorder(), Recorder()
    want = spark_scan(ScanRequest([str(sample_dir)], export_records=str(tmp_path / "local"), **opts), local)
    got = spark_scan(ScanRequest([url], s3_endpoint=s3.endpoint, export_records=str(tmp_path / "remote"), **opts),
                     remote)
    assert int(got.exit_code) == int(want.exit_code) == 0
    assert [x for x in _figures(remote, url) if x["type"] == "index_check"] == \
        [x for x in _figures(local, str(sample_dir)) if x["type"] == "index_check"]
    assert len(got.index_checks) == len(want.index_checks) > 0
    t = {k: ds.dataset(tmp_path / k, format="parquet", partitioning="hive").to_table().sort_by(
        [("partition", "ascending"), ("record_offset", "ascending")]) for k in ("local", "remote")}
    assert t["remote"].num_rows == t["local"].num_rows == got.exported > 0
    assert t["remote"].equals(t["local"])


def test_an_s3_url_without_the_endpoint_or_bucket_is_one_line(s3_backup, sample_dir: Path) -> None:
    from kafkatool.errors import KafkaToolError

    s3, _ = s3_backup
    os.environ[S3_ENDPOINT_ENV] = s3.endpoint
    try:
        with pytest.raises(KafkaToolError) as e:
            discover(["s3://no-such-bucket/kafka-logs"])
    finally:
        os.environ.pop(S3_ENDPOINT_ENV, None)
    assert "\n" not in str(e.value) and "no-such-bucket" in str(e.value)
