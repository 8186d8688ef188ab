"""spark-scan's findings, counts and exit code are ``dump --deep --verify``'s, on every file of the hostile corpus
and on seeded random damage of real segments, however the segments are cut into ranges, in one process or a
pool, and through the library entry point the command runs (the Spark engine: tests/spark/test_jobs.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kafkatool.scan.engine import run_local
from kafkatool.scan.plan import discover, make_plan
from kafkatool.spark.run import ScanRequest, spark_scan
from tests.support.damage import damaged_dir, dump_view, finding_key, hostile_logs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, sample_dir):
    root = tmp_path_factory.mktemp("parity") / "logs"
    sources = [p for p in Path(sample_dir).rglob("*.log") if p.stat().st_size > 4096]
    logs = damaged_dir(root, sources, seed=22, count=70)
    return root, {os.path.realpath(p): dump_view(p) for p in logs}


def _by_file(report):
    out = {}
    for seg in report.segments:
        out[os.path.realpath(seg.path)] = {
            "findings": [finding_key(f) for f in seg.findings], "batches": seg.stats.batches,
            "records": seg.stats.records if seg.stats.records_known else None,
            "exit": 2 if seg.unreadable else 1 if any(f.severity.value in ("error", "warning")
                                                      for f in seg.findings) else 0}
    return out


def test_the_corpus_is_hostile_enough(corpus):
    _, want = corpus
    assert len(hostile_logs()) >= 30
    kinds = {f[1] for v in want.values() for f in v["findings"]}
    assert {"crc-mismatch", "corrupt-region", "torn-tail", "unknown-magic", "decompress-limit", "invalid-records",
            "offset-overflow", "trailing-zeros", "wrong-file-type"} <= kinds
    assert {v["exit"] for v in want.values()} == {0, 1}


@pytest.mark.parametrize("split", [1 << 30, 1500, 97])
def test_every_damaged_file_scans_as_dump_walks_it(corpus, split):
    root, want = corpus
    plan = make_plan(discover([str(root)]).segments, split_bytes=split, parallelism=2)
    if split < 2000:
        assert len(plan.items) > 3 * len(plan.segments)
    got = _by_file(run_local(plan, jobs=2 if split == 97 else 1))
    assert sorted(got) == sorted(want)
    for path in sorted(want):
        assert got[path] == want[path], path


def _unlimited(key: tuple) -> tuple:
    """A finding without its decompression limit's figure (the run's memory budget sets it)."""
    return (*key[:5], re.sub(r"the limit of \d+ bytes", "the limit", key[5]))


def test_the_command_entry_point_exits_as_dump_and_lists_every_finding(corpus):
    root, want = corpus
    out = spark_scan(ScanRequest([str(root)], engine="local-processes", jobs=2, split_size=800))
    assert out.report is not None
    in_plan_order = sorted(want, key=lambda p: (os.path.basename(os.path.dirname(p)).rsplit("-", 1)[0], p))
    assert [_unlimited(finding_key(f)) for f in out.report.findings] == \
        [_unlimited(f) for p in in_plan_order for f in want[p]["findings"]]
    assert int(out.exit_code) == max(v["exit"] for v in want.values()) == 1
