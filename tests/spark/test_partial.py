"""Broker-local disks: each broker's scan written as a partial result, ``spark_scan`` over the partials of several
brokers gives the cluster-wide statistics and key-sharing analysis of a scan of all the data in one place (the
process pool: no JVM; the merge is the same code on Spark's driver)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from kafkatool.errors import UsageError
from kafkatool.spark.run import ScanRequest, spark_scan
from tests.spark.test_run import Recorder

LOCAL: dict[str, Any] = {"engine": "local-processes", "jobs": 2, "split_size": 16384}
PLACE = ("dir", "path", "file", "directory")


def _figures(rec: Recorder) -> list[dict[str, Any]]:
    """The JSON lines without where the data sat (broker dirs against one dir)."""
    out = []
    for line in rec.lines():
        out.append({k: v for k, v in line.items() if k not in PLACE})
    return out


def _brokers(sample_dir: Path, root: Path) -> list[Path]:
    """The sample's partitions spread over three brokers' log dirs, as a cluster without replication holds them."""
    dirs = [root / f"broker-{i}" / "kafka-logs" for i in range(3)]
    parts = sorted(p for p in sample_dir.iterdir() if p.is_dir())
    for i, p in enumerate(parts):
        shutil.copytree(p, dirs[i % 3] / p.name)
    return dirs


def test_partials_of_several_brokers_merge_into_the_whole_scan(sample_dir: Path, tmp_path: Path) -> None:
    # Every broker is given every topic's partition count (the cluster's metadata): the hash ranges depend on it.
    counts: dict[str, int] = {}
    for p in sample_dir.iterdir():
        if p.is_dir():
            topic, _, n = p.name.rpartition("-")
            counts[topic] = max(counts.get(topic, 0), int(n) + 1)
    ks: dict[str, Any] = {"stats": True, "key_sharing": 4, "partitions": counts}
    whole = Recorder()
    want = spark_scan(ScanRequest([str(sample_dir)], **ks, **LOCAL), whole)  # type: ignore[arg-type]

    partials = []
    for i, d in enumerate(_brokers(sample_dir, tmp_path)):
        out = tmp_path / f"partial-{i}"
        spark_scan(ScanRequest([str(d)], partial_output=str(out), source=f"broker-{i}", **ks, **LOCAL), Recorder())  # type: ignore[arg-type]
        partials.append(str(out))
    merged = Recorder()
    got = spark_scan(ScanRequest(partials, **ks, **LOCAL), merged)  # type: ignore[arg-type]

    assert want.report is not None and got.report is not None
    assert int(got.exit_code) == int(want.exit_code)
    assert got.report.total.records == want.report.total.records > 30_000
    assert got.report.total.distinct_keys == want.report.total.distinct_keys
    assert _figures(merged) == _figures(whole)
    assert {x["type"] for x in _figures(merged)} >= {"segment", "total", "keyshare"}


def test_partials_scanned_with_other_key_sharing_are_refused(sample_dir: Path, tmp_path: Path) -> None:
    d = _brokers(sample_dir, tmp_path)
    for i, n in enumerate((4, 5)):
        spark_scan(ScanRequest([str(d[i])], partial_output=str(tmp_path / f"p{i}"), key_sharing=n, **LOCAL),  # type: ignore[arg-type]
                   Recorder())
    with pytest.raises(UsageError, match="key sharing"):
        spark_scan(ScanRequest([str(tmp_path / "p0"), str(tmp_path / "p1")], key_sharing=4, **LOCAL), Recorder())  # type: ignore[arg-type]
