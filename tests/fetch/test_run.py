"""``kafkatool.fetch.run.fetch_sim``, the library entry point of ``kafkatool fetch-sim``: driven from Python it
reports the same partitions, records and response, and writes the same bytes, as the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkatool.errors import UsageError
from kafkatool.fetch.report import SweepRow
from kafkatool.fetch.run import FetchListener, FetchSimRequest, fetch_sim
from kafkatool.fetch.simulate import PartitionFetch
from kafkatool.record.batch import Record
from tests.support.cli import run_cli

VOLATILE = {"schema", "peak_conversion_memory_traced", "seconds", "mb_per_s", "peak_traced_bytes"}


def _comparable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in VOLATILE}


class Recorder(FetchListener):
    def __init__(self) -> None:
        self.records: list[tuple[str, int]] = []
        self.partitions: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.responses: list[dict[str, Any]] = []
        self.rows: list[SweepRow] = []

    def record(self, plan: PartitionFetch, record: Record) -> None:
        self.records.append((str(plan.request.log.topic_partition), record.offset))

    def partition(self, report: dict[str, Any], problem: str | None) -> None:
        self.partitions.append(report)
        if problem is not None:
            self.problems.append(problem)

    def response(self, response: dict[str, Any]) -> None:
        self.responses.append(response)

    def sweep(self, rows: Any) -> None:
        self.rows.extend(rows)


def test_a_fetch_over_a_log_dir_reports_and_writes_what_the_command_does(sample_dir: Path, tmp_path: Path) -> None:
    cli_out, lib_out = tmp_path / "cli.bin", tmp_path / "lib.bin"
    r = run_cli("fetch-sim", sample_dir, "--to-magic", "0", "--fetch-offset", "40", "--consumer-view",
                "--output", cli_out, "--format", "json")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    rec = Recorder()
    outcome = fetch_sim(FetchSimRequest([sample_dir], to_magic=0, fetch_offset=["40"], consumer_view=True,
                                        output=lib_out), rec)
    assert int(outcome.exit_code) == r.returncode
    assert [(f"{x['topic']}-{x['partition']}", x["offset"]) for x in lines if x["type"] == "record"] == rec.records
    assert len(rec.records) > 100
    assert [_comparable(x) for x in lines if x["type"] == "partition"] == \
        [_comparable(p) for p in rec.partitions] == [_comparable(p) for p in outcome.reports]
    response = {**rec.responses[0], "out": str(cli_out)}
    assert [x for x in lines if x["type"] == "response"] == [{**response, "schema": 1}]
    assert lib_out.read_bytes() == cli_out.read_bytes()
    # A partition whose log starts after offset 40 answers OFFSET_OUT_OF_RANGE: a finding, exit 1.
    assert outcome.problems == rec.problems and outcome.problems
    assert all(f"kafkatool fetch-sim: error: {p}" in r.stderr for p in outcome.problems)


def test_raw_records_and_a_sweep(sample_dir: Path, tmp_path: Path) -> None:
    part = sample_dir / "orders-1"
    cli_raw, lib_raw = tmp_path / "cli.raw", tmp_path / "lib.raw"
    r = run_cli("fetch-sim", part, "--fetch-version", "3", "--output", cli_raw, "--raw",
                "--partition-max-bytes", "64KiB")
    assert r.returncode == 0, r.stderr
    outcome = fetch_sim(FetchSimRequest([part], fetch_version=3, output=lib_raw, raw=True,
                                        partition_max_bytes=64 * 1024))
    assert lib_raw.read_bytes() == cli_raw.read_bytes() and len(lib_raw.read_bytes()) > 1000
    assert outcome.response is not None and outcome.response["raw"] is True

    r = run_cli("fetch-sim", part, "--sweep-chunk-sizes", "16K,64K", "--format", "json")
    rec = Recorder()
    outcome = fetch_sim(FetchSimRequest([part], sweep_chunk_sizes=[16384, 65536]), rec)
    assert [_comparable(json.loads(x)) for x in r.stdout.splitlines()] == \
        [_comparable(row.as_dict()) for row in rec.rows] == [_comparable(row.as_dict()) for row in outcome.sweep]
    assert [row.chunk_size for row in rec.rows] == [16384, 65536, 0] and not rec.partitions


@pytest.mark.parametrize("kw, field", [
    ({"fetch_version": 3, "to_magic": 0}, "to_magic"),
    ({"to_magic": 2}, "to_magic"),
    ({"fetch_version": 7}, "fetch_version"),
    ({"raw": True}, "raw"),
    ({"plot": Path("x.png")}, "plot"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"sweep_chunk_sizes": [0]}, "sweep_chunk_sizes"),
    ({"fetch_offset": ["1,2,3"]}, "fetch_offset"),
    ({"fetch_offset": ["nope-0=1"]}, "fetch_offset"),
    ({"high_watermark": 10**9}, "high_watermark"),
    ({"memory": "1MiB"}, "memory"),
])
def test_bad_values_are_usage_errors_about_their_field(sample_dir: Path, kw: dict[str, Any], field: str) -> None:
    with pytest.raises(UsageError) as e:
        fetch_sim(FetchSimRequest([sample_dir / "orders-1"], **kw))
    assert e.value.field == field and "--" not in e.value.message
