"""``kafkatool.convert.run.convert``, the library entry point of ``downconvert`` and ``upconvert``: driven from
Python it writes the same files and reports the same partitions as the commands."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from kafkatool.convert.engine import PartitionStats
from kafkatool.convert.run import ConvertListener, ConvertRequest, convert
from kafkatool.errors import UsageError
from tests.support.cli import run_cli

VOLATILE = {"elapsed_s", "peak_rss_bytes", "peak_rss_scope", "output", "source", "schema"}  # the run, not the data


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _comparable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in VOLATILE}


class Recorder(ConvertListener):
    def __init__(self) -> None:
        self.started: list[int] = []
        self.advanced = 0
        self.done: list[PartitionStats] = []

    def start(self, sources: Any, total_bytes: int) -> None:
        self.started.append(total_bytes)

    def advance(self, n_bytes: int, partition: str) -> None:
        self.advanced += n_bytes

    def partition_done(self, stats: PartitionStats) -> None:
        self.done.append(stats)


@pytest.mark.parametrize("args, request_of", [
    (["downconvert", "--to-magic", "1", "--zstd-to", "lz4"],
     lambda src, dst: ConvertRequest(src, dst, 1, zstd_to="lz4")),
    (["upconvert", "--codec", "gzip", "--batch-bytes", "4KiB"],
     lambda src, dst: ConvertRequest(src, dst, 2, codec="gzip", batch_bytes=4096)),
], ids=["downconvert", "upconvert"])
def test_the_library_writes_and_reports_what_the_command_does(sample_dir: Path, tmp_path: Path, args: list[str],
                                                             request_of: Any) -> None:
    cli_dst, lib_dst = tmp_path / "cli", tmp_path / "lib"
    r = run_cli(args[0], sample_dir, cli_dst, *args[1:], "--format", "json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    cli_parts = [_comparable(o) for o in lines if o["type"] == "partition"]

    rec = Recorder()
    outcome = convert(request_of(sample_dir, lib_dst), rec)
    assert outcome.exit_code == 0
    assert [s.partition for s in rec.done] == [s.partition for s in outcome.partitions]
    assert rec.started and rec.advanced == rec.started[0] > 0
    lib_parts = [_comparable({"type": "partition", "command": args[0], **s.as_dict()}) for s in outcome.partitions]
    assert lib_parts == cli_parts and len(lib_parts) > 3
    assert _tree(lib_dst) == _tree(cli_dst)


@pytest.mark.parametrize("kw, field", [
    ({"codec": "brotli"}, "codec"),
    ({"zstd_to": "keep"}, "zstd_to"),
    ({"codec": "zstd"}, "codec"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"segment_bytes": 0}, "segment_bytes"),
    ({"memory": "1MiB"}, "memory"),
])
def test_bad_values_are_usage_errors_about_their_field(sample_dir: Path, tmp_path: Path, kw: dict[str, Any],
                                                       field: str) -> None:
    with pytest.raises(UsageError) as e:
        convert(ConvertRequest(sample_dir, tmp_path / "out", 1, **kw))
    assert e.value.field == field and "--" not in e.value.message
    assert not (tmp_path / "out").exists()
