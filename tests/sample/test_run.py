"""``kafkatool.sample.run.sample``, the library entry point of ``kafkatool sample``: driven from Python it writes
the same bytes and reports the same partitions as the command."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from kafkatool.errors import UsageError
from kafkatool.sample.partition import PartitionSummary
from kafkatool.sample.run import SampleListener, SampleRequest, sample
from kafkatool.sample.spec import IntRange
from tests.support.cli import run_cli


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


class Recorder(SampleListener):
    def __init__(self) -> None:
        self.partitions: list[PartitionSummary] = []

    def partition(self, summary: PartitionSummary) -> None:
        self.partitions.append(summary)


@pytest.mark.parametrize("args, kw", [
    ([], {}),
    (["--topics", "a,b", "--partitions", "2", "--magic", "mix", "--codec", "gzip,lz4", "--batch-records", "4-9",
      "--value-bytes", "50-300", "--transactional", "--no-idempotent", "--records", "400", "--seed", "7"],
     {"topics": "a,b", "partitions": 2, "magic": "mix", "codec": "gzip,lz4", "batch_records": "4-9",
      "value_bytes": IntRange(50, 300), "transactional": True, "idempotent": False, "records": 400, "seed": 7}),
], ids=["demo", "custom"])
def test_the_library_writes_what_the_command_writes(tmp_path: Path, args: list[str], kw: dict[str, Any]) -> None:
    r = run_cli("sample", tmp_path / "cli", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    rec = Recorder()
    outcome = sample(SampleRequest(tmp_path / "lib", **kw), rec)
    assert outcome.exit_code == 0
    assert _tree(tmp_path / "lib") == _tree(tmp_path / "cli")
    parts = [x for x in lines if x["type"] == "partition"]
    assert [(p["topic"], p["partition"], p["records"], p["bytes"]) for p in parts] == \
        [(p.topic, p.partition, p.records, p.bytes) for p in rec.partitions] == \
        [(p.topic, p.partition, p.records, p.bytes) for p in outcome.result.partitions]
    (summary,) = [x for x in lines if x["type"] == "summary"]
    assert summary["profile"] == outcome.result.spec.profile == ("custom" if args else "demo")


def test_shaping_without_a_profile_means_custom_and_demo_refuses_it(tmp_path: Path) -> None:
    assert SampleRequest(tmp_path, codec="lz4").chosen_profile == "custom"
    assert SampleRequest(tmp_path, idempotent=False).shaping() == ["idempotent"]
    assert SampleRequest(tmp_path, records=10, segment_bytes=4096).shaping() == []  # demo takes these
    with pytest.raises(UsageError, match="the demo profile is fixed; codec, compacted shape") as e:
        sample(SampleRequest(tmp_path / "x", profile="demo", codec="lz4", compacted=True))
    assert e.value.field == "profile" and not (tmp_path / "x").exists()


@pytest.mark.parametrize("kw, field", [
    ({"magic": "3"}, "magic"),
    ({"codec": "brotli"}, "codec"),
    ({"batch_records": "0"}, "batch_records"),
    ({"partitions": 0}, "partitions"),
    ({"abort_fraction": 2.0, "transactional": True}, "abort_fraction"),
    ({"segment_bytes": 10, "topics": "t"}, "segment_bytes"),
    ({"compression_level": 3, "codec": "snappy"}, "compression_level"),
    ({"timestamp_type": "later"}, "timestamp_type"),
    ({"topics": ","}, "topics"),
    ({"memory": "1MiB"}, "memory"),
])
def test_bad_values_are_usage_errors_about_their_field(tmp_path: Path, kw: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageError) as e:
        sample(SampleRequest(tmp_path / "x", **kw))
    assert e.value.field == field and "--" not in e.value.message
    assert not (tmp_path / "x").exists()
