"""``kafkatool.reindex.run.reindex_time``, the library entry point of ``kafkatool reindex-time``: driven from
Python it checks, rebuilds and reports as the command does."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kafkatool.errors import UsageError
from kafkatool.log.loader import PartitionRecovery
from kafkatool.reindex.engine import SegmentResult, result_records
from kafkatool.reindex.run import ReindexListener, ReindexRequest, reindex_time
from kafkatool.reindex.verify import Severity
from tests.support.cli import run_cli

VOLATILE = {"seconds", "schema"}


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in VOLATILE}


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


class Recorder(ReindexListener):
    def __init__(self) -> None:
        self.segments: list[SegmentResult] = []
        self.partitions: list[PartitionRecovery] = []
        self.advanced = 0

    def segment(self, result: SegmentResult) -> None:
        self.segments.append(result)

    def partition(self, result: PartitionRecovery) -> None:
        self.partitions.append(result)

    def advance(self, nbytes: int) -> None:
        self.advanced += nbytes


def test_check_reports_what_the_command_reports(sample_dir: Path) -> None:
    r = run_cli("reindex-time", sample_dir, "--verbose", "--format", "json")
    cli = [_strip(json.loads(x)) for x in r.stdout.splitlines()]
    rec = Recorder()
    outcome = reindex_time(ReindexRequest([sample_dir]), rec)
    assert int(outcome.exit_code) == r.returncode
    lib = [_strip(x) for res in sorted(rec.segments, key=lambda s: str(s.task.log)) for x in result_records(res)]
    cli_records = sorted([x for x in cli if x["type"] != "summary"], key=lambda x: (x.get("log") or x["path"]))
    assert sorted(lib, key=lambda x: (x.get("log") or x["path"])) == cli_records and len(lib) > 100
    (summary,) = [x for x in cli if x["type"] == "summary"]
    assert (summary["segments"], summary["bytes"], summary["errors"], summary["warnings"]) == \
        (outcome.units, outcome.bytes, outcome.counts[Severity.ERROR], outcome.counts[Severity.WARNING])
    assert rec.advanced == outcome.bytes


def test_output_writes_the_files_the_command_writes(sample_dir: Path, tmp_path: Path) -> None:
    r = run_cli("reindex-time", sample_dir / "orders-0", sample_dir / "audit-log-0", "--output", tmp_path / "cli")
    assert r.returncode == 0, r.stderr
    outcome = reindex_time(ReindexRequest([sample_dir / "orders-0", sample_dir / "audit-log-0"], "output",
                                          tmp_path / "lib"))
    assert outcome.files_written > 0 and _tree(tmp_path / "lib") == _tree(tmp_path / "cli")


def test_recovery_report_is_the_commands(sample_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    shutil.copytree(sample_dir, d)
    r = run_cli("reindex-time", d, "--recovery-report", "--format", "json")
    cli = [json.loads(x) for x in r.stdout.splitlines()]
    rec = Recorder()
    outcome = reindex_time(ReindexRequest([d], "recovery-report"), rec)
    assert int(outcome.exit_code) == r.returncode
    assert [(p.partition, p.recovery_point, p.loses_data) for p in rec.partitions] == \
        [(x["partition"], x["recovery_point"], x["loses_data"]) for x in cli if x["type"] == "partition"]


@pytest.mark.parametrize("kw, field", [
    ({"jobs": 0}, "jobs"),
    ({"index_interval_bytes": -1}, "index_interval_bytes"),
    ({"mode": "check", "output": Path("x")}, "output"),
    ({"memory": "1MiB"}, "memory"),
])
def test_bad_values_are_usage_errors_about_their_field(sample_dir: Path, kw: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageError) as e:
        reindex_time(ReindexRequest([sample_dir / "orders-0"], **kw))
    assert e.value.field == field and "--" not in e.value.message
