"""The benchmark suite (benchmarks/) keeps working: its matrix, its arithmetic, and one end-to-end run.

The end-to-end run times nothing meaningful (a ~0.3 MB file, one run each); it proves that every command row
runs, that kafkatool's commands and Kafka's passes counted the same batches, bytes and records on the same
file, and that the report renders the run. Timings are never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import report
from benchmarks.data import DEFAULT_SCENARIOS, FULL_SCENARIOS, QUICK_SCENARIOS, ROOT, Scenario, scenario_by_name
from benchmarks.run import DOWN_V1, DUMP, FETCH_SIM, REINDEX, ROWS, check_counts, parse_args, ratio, select_rows
from tests.support.kafkaref import KafkaRef


def test_full_matrix_is_every_shape_the_issue_names() -> None:
    names = [s.name for s in FULL_SCENARIOS]
    assert len(names) == len(set(names))
    plain = {(s.magic, s.codec, s.value_bytes, s.batch_records) for s in FULL_SCENARIOS if not s.headers}
    for magic in (0, 1, 2):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            for vb in (1024, 100):
                for br in (16, 256):
                    assert ((magic, codec, vb, br) in plain) == (magic == 2 or codec != "zstd")
    assert {s.codec for s in FULL_SCENARIOS if s.headers} == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert all(s.magic == 2 for s in FULL_SCENARIOS if s.headers)  # headers exist only in v2 records
    assert set(DEFAULT_SCENARIOS) <= set(FULL_SCENARIOS) and set(QUICK_SCENARIOS) <= set(FULL_SCENARIOS)
    assert any(s.headers for s in DEFAULT_SCENARIOS) and any(s.magic == 0 for s in DEFAULT_SCENARIOS)


def test_scenario_names_round_trip_and_carry_the_generation_arguments() -> None:
    s = scenario_by_name("v2-lz4-100bx256-h2")
    assert s == Scenario(2, "lz4", 100, 256, headers=2)
    args = s.gen_args(512)
    assert args[args.index("--headers") + 1] == "2" and args[args.index("--records") + 1] == "512"
    assert "--headers" not in scenario_by_name("v1-gzip-1kx16").gen_args(16)
    with pytest.raises(SystemExit, match="unknown scenario"):
        scenario_by_name("v3-none-1kx16")


def test_ratio_is_peer_time_over_ours_and_refuses_unmeasurable_times() -> None:
    assert ratio(200.0, 100.0) == 2.0
    assert ratio(50.0, 100.0) == 0.5
    assert ratio(100.0, 0.0) is None  # a start-up-excluded time at or below zero: too small a file
    assert ratio(100.0, -3.0) is None
    assert ratio(float("nan"), 100.0) is None


def test_counts_are_compared_on_the_keys_both_sides_report() -> None:
    assert check_counts({"batches": 3, "bytes": 10}, {"batches": 3, "records": 7}) == ""
    assert check_counts({"batches": 3, "bytes": 10}, {"batches": 4, "bytes": 10}) == "batches 3 != 4"
    assert check_counts({"batches": 12, "bytes": 40}, {"batches": 3, "bytes": 10}, copies=4) == ""
    assert check_counts({"batches": 12}, {"batches": 4}, copies=4) == "batches 12 != 4 x 4"


def test_fast_commands_read_their_segment_several_times() -> None:
    assert DUMP.copies(200_000_000) == 10 and REINDEX.copies(200_000_000) == 40
    assert DOWN_V1.copies(200_000_000) == 1 and DOWN_V1.copies(40_000_000) == 5
    # partitions of one response (every limit at 2^31-1): 400 MB a run, far below the response's limit
    assert FETCH_SIM.copies(200_000_000) == 2 and FETCH_SIM.copies(40_000_000) == 10
    assert REINDEX.copies(1000) == 200  # capped
    assert DUMP.copies(50_000_000, scale=0.25) == 10 and DOWN_V1.copies(200_000_000, scale=0.25) == 1  # --quick


def test_quick_runs_every_row_and_every_peak_rss_command_small() -> None:
    a = parse_args(["--quick"])
    assert a.size_mb < 200 and a.rss_size != "1GiB" and a.set_list == ["ratios", "rss"] and a.rss_commands is None
    assert 0 < a.read_scale < 1 and parse_args(["--quick", "--read-scale", "1"]).read_scale == 1
    for row in select_rows(a.rows, a.lib):
        assert any(row.applies(s) for s in a.scenario_list), row.name
    full = parse_args([])
    assert full.size_mb == 200 and full.rss_size == "1GiB" and full.read_scale == 1
    assert set(a.scenario_list) < set(full.scenario_list)


def test_rows_select_by_name_or_prefix_and_reject_unknown_ones() -> None:
    assert [r.name for r in select_rows("downconvert", lib=False)] == ["downconvert-v1", "downconvert-v0"]
    assert [r.name for r in select_rows("dump,spark", lib=False)] == ["dump", "spark-scan-local", "spark-scan-spark"]
    assert {r.name for r in select_rows(None, lib=True)} >= {r.name for r in ROWS} | {"lib-reindex"}
    assert all(not r.name.startswith("lib-") for r in select_rows(None, lib=False))
    with pytest.raises(SystemExit, match="unknown rows"):
        select_rows("nope", lib=False)


def test_the_shallow_dump_row_is_shallow() -> None:
    # kafkatool's --verify decodes every record: the row compared with Kafka's shallow pass must not use it.
    dump = next(r for r in ROWS if r.name == "dump")
    assert "--verify" not in dump.ours.shown and "--deep" not in dump.ours.shown
    assert dump.peer.shown.split()[:2] == ["kafka-ref", "bench"] and "--deep" not in dump.peer.shown


def test_the_performance_page_is_generated_from_the_results() -> None:
    """docs/performance.md is exactly what `python -m benchmarks report --page` makes of benchmarks/results/."""
    assert (ROOT / "docs" / "performance.md").read_text() == report.page(), \
        "regenerate with `python -m benchmarks report --page docs/performance.md`"
    assert report.main(["--page", str(ROOT / "docs" / "performance.md"), "--check"]) == 0


def _run_json(started: str, commit: str) -> dict[str, object]:
    d = json.loads((ROOT / "benchmarks" / "results" / "2026-11-25-quick.json").read_text())
    d["started"], d["git"] = started, {**d["git"], "commit": commit}
    return d


def test_the_page_shows_runs_with_notes_newest_first(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps(_run_json("2026-01-01T00:00:00+0000", "a" * 40)))
    (tmp_path / "old.md").write_text("# the old run\n\nIt was slow.\n")
    (tmp_path / "new.json").write_text(json.dumps(_run_json("2026-02-01T00:00:00+0000", "b" * 40)))
    (tmp_path / "new.md").write_text("# the new run\n<!-- report: --wall -->\nIt was fast.\n")
    (tmp_path / "bare.json").write_text(json.dumps({"results": []}))  # a one-off file: listed, not rendered
    (tmp_path / "history.md").write_text("# History\n\n## an old table\n")
    text = report.page(tmp_path)
    assert text.index("### the new run (2026-02-01)") < text.index("It was fast.") \
        < text.index("### the old run (2026-01-01)") < text.index("It was slow.") < text.index("## History") \
        < text.index("### an old table") < text.index("* `bare.json`")
    new = text[text.index("### the new run"):text.index("### the old run")]
    assert "The same by wall time:" in new and "<!-- report" not in text
    assert "The same by wall time:" not in text[text.index("### the old run"):]
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "performance.md"  # not among the results: a .md there is a note
    assert report.main(["--page", str(page), "--results-dir", str(tmp_path), "--check"]) == 1  # missing: stale
    assert report.main(["--page", str(page), "--results-dir", str(tmp_path)]) == 0 and page.read_text() == text
    (tmp_path / "suite-time.md").write_text("# Suite time\n\nmeasured by hand\n")  # a note of no run: a page
    text = report.page(tmp_path)
    assert text.index("## History") < text.index("## Suite time") < text.index("measured by hand") \
        < text.index("* `bare.json`")


@pytest.mark.interop
@pytest.mark.slow
def test_a_tiny_run_end_to_end_counts_the_same_data_as_kafka(kafka_ref: KafkaRef, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_REF", str(kafka_ref.launcher))
    out = tmp_path / "results.json"
    p = subprocess.run([sys.executable, "-m", "benchmarks", "--scenarios", "v2-lz4-1kx16-h2", "--size-mb", "0.3",
                        "--iterations", "1", "--warmup", "0", "--java-iterations", "1", "--java-warmup", "0",
                        # not the kafka-python rows: kafka-python is the [bench] extra, not a test dependency
                        "--rows", "dump,dump-deep,reindex,reindex-floor,reindex-floor-fresh,downconvert,fetch-sim,"
                        "lib-deep",
                        "--sets", "ratios,rss",
                        "--rss-size", "1MiB", "--rss-codecs", "lz4",
                        "--rss-commands", "sample,dump-deep,downconvert-v0,upconvert,canary-verify",
                        "--data-dir", str(tmp_path / "data"), "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    d = json.loads(out.read_text())
    assert d["schema"] == 2 and d["command"].startswith("python -m benchmarks --scenarios v2-lz4-1kx16-h2")
    assert len(d["git"]["commit"]) == 40
    rows = {r["row"]: r for r in d["rows"]}
    assert set(rows) == {"dump", "dump-deep", "reindex", "reindex-floor", "reindex-floor-fresh", "downconvert-v1",
                         "downconvert-v0", "fetch-sim", "lib-deep"}
    for r in rows.values():
        assert r["error"] is None and r["mismatch"] is None, r
    ms = d["measurements"]
    for name in ("dump-deep", "reindex", "reindex-floor", "reindex-floor-fresh", "downconvert-v0"):
        ours, peer = ms[rows[name]["ours"]], ms[rows[name]["peer_key"]]
        # the command read the segment ``copies`` times (hard-linked partitions): so many times Kafka's counts
        assert ours["copies"] == rows[name]["copies"] >= 1
        shared = ours["counts"].keys() & peer["counts"].keys()
        assert shared and all(ours["counts"][k] == ours["copies"] * peer["counts"][k] > 0 for k in shared), name
    assert "records" in ms[rows["dump-deep"]["ours"]]["counts"]  # the same records, headers and all
    assert ms[rows["reindex"]["ours"]]["copies"] > 1  # a fast command reads its segment many times
    # ... and its floors walk it as many times: in one process, and in a fresh process per iteration
    assert ms[rows["reindex-floor"]["ours"]]["copies"] == ms[rows["reindex-floor-fresh"]["ours"]]["copies"] \
        == ms[rows["reindex"]["ours"]]["copies"]
    fresh = ms[rows["reindex-floor-fresh"]["ours"]]
    assert "--before" in fresh["argv"] and "--as-command" in fresh["argv"] and "(x1 processes)" in fresh["argv"]
    assert len(fresh["runs"]) == 1
    fetch = ms[rows["fetch-sim"]["ours"]]  # ... fetch-sim as partitions of one response, each converted whole
    assert fetch["copies"] > 1 and fetch["counts"]["fetch_bytes_written"] > 0
    down = ms[rows["downconvert-v0"]["ours"]]
    assert len(down["runs"]) == 1 and len(down["fixed_runs"]) == 1  # the fixed cost: the same command, 4 batches
    assert down["fixed_cpu_ms"] > 0
    assert down["net_cpu_ms"] == pytest.approx((down["cpu_ms"] - down["fixed_cpu_ms"]) / down["copies"])
    # the peak-RSS set: each command once over the log dir that ``kafkatool sample`` (its own row) wrote
    rss = {(r["command"], r["input"]): r for r in d["rss"]}
    assert set(rss) == {("sample", "v2-lz4"), ("dump-deep", "v2-lz4"), ("downconvert-v0", "v2-lz4"),
                        ("sample", "v1"), ("upconvert", "v1"), ("canary-verify", "v1")}
    for r in rss.values():
        assert r["error"] is None and r["rc"] == 0, r
        assert r["peak_rss_mb"] > 0 and 0 < r["largest_segment_bytes"] <= 2**20, r
    section = report.render(d, "test")
    assert "### test" in section and "| v2-lz4-1kx16-h2 |" in section and d["command"] in section
    assert "| canary-verify | `kafkatool canary verify" in section
