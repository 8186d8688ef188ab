"""Issue 23, items 5-7, through the command line: corrupt data is never laundered (downconvert, upconvert and
canary run refuse it with exit 1 naming file, byte and offset, and publish nothing; ``--skip-corrupt`` leaves it
out and counts it in the summary and the JSON; ``canary verify`` expects exactly that), the inputs that were
internal errors are findings, and the readers exit 1 where Kafka's reader passes data that is still wrong."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import iter_batches
from tests.support import damaged_batches as d
from tests.support.cli import run_cli

SEG = f"{0:020d}.log"


def log_dir(root: Path, partitions: dict[str, dict[str, bytes]]) -> Path:
    ld = root / "logs"
    ld.mkdir(parents=True)
    (ld / "meta.properties").write_text("version=0\nbroker.id=0\n")
    for name, segments in partitions.items():
        (ld / name).mkdir()
        for seg, data in segments.items():
            (ld / name / seg).write_bytes(data)
    return ld


def flipped(root: Path) -> Path:
    """Issue 23's item 5: one bit flipped inside the third inner message of a v1 gzip wrapper, a v2 batch after it."""
    return log_dir(root, {"crc-0": {SEG: d.inner_crc_flip(1, Codec.GZIP, flip=2, base=0) + d.batch(5)}})


def records(path: Path) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for f in sorted(path.glob("*.log")) for b in iter_batches(f.read_bytes())
            for r in b.records()]


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


CONVERTERS = {
    "downconvert": lambda src, dst: ("downconvert", src, dst, "--to-magic", "1"),
    "downconvert-v0": lambda src, dst: ("downconvert", src, dst, "--to-magic", "0"),
    "upconvert": lambda src, dst: ("upconvert", src, dst),
    "canary-run": lambda src, dst: ("canary", "run", src.parent, "-p", src.name, "-w", dst),
}


@pytest.mark.parametrize("command", list(CONVERTERS))
def test_a_flipped_inner_bit_stops_every_conversion_and_nothing_is_published(tmp_path, command):
    part = flipped(tmp_path) / "crc-0"
    before = (part / SEG).read_bytes()
    out = tmp_path / "out"
    r = run_cli(*CONVERTERS[command](part, out))
    no_traceback(r.stderr)
    assert r.returncode == 1, r.stderr
    assert f"{part / SEG} at byte 0: offset 2: inner message of the wrapper at byte 0" in r.stderr
    assert "(--skip-corrupt)" in r.stderr
    assert not out.exists()  # nothing written, nothing published
    assert (part / SEG).read_bytes() == before


@pytest.mark.parametrize("command", ["downconvert", "downconvert-v0", "upconvert"])
def test_skip_corrupt_leaves_the_record_out_and_counts_it_in_the_summary_and_the_json(tmp_path, command):
    part = flipped(tmp_path) / "crc-0"
    r = run_cli(*CONVERTERS[command](part, tmp_path / "out"), "--skip-corrupt")
    assert r.returncode == 0, r.stderr
    assert "corrupt    left out (--skip-corrupt): 1 records; 0 whole batches" in r.stdout
    name = command.split("-")[0]  # operator's message form: the command, the severity, the partition
    assert (f"kafkatool {name}: warning: crc-0: left out (corrupt, record-crc-mismatch): {part / SEG} at byte 0: "
            "offset 2:") in r.stderr
    out = tmp_path / "out" / "crc-0"
    want = [(o, v) for o, v in records(part) if o != 2]
    assert records(out) == want
    v = run_cli("dump", out, "--deep", "--verify")
    assert v.returncode == 0, v.stderr  # clean: nothing corrupt went through, nothing got a fresh CRC
    j = run_cli(*CONVERTERS[command](part, tmp_path / "json"), "--skip-corrupt", "--format", "json")
    lines = [json.loads(x) for x in j.stdout.splitlines()]
    (p,) = [x for x in lines if x["type"] == "partition"]
    assert (p["corrupt_records_skipped"], p["corrupt_batches_skipped"], p["corrupt_skipped_count"]) == (1, 0, 1)
    assert p["corrupt_skipped"][0] | {"message": ""} == {"path": str(part / SEG), "position": 0, "offset": 2,
                                                         "kind": "record-crc-mismatch", "records": 1, "message": ""}
    assert lines[-1]["type"] == "summary" and lines[-1]["corrupt_records_skipped"] == 1


def test_canary_run_skip_corrupt_then_verify_passes_expecting_the_record_gone(tmp_path):
    ld = flipped(tmp_path)
    w = tmp_path / "w"
    r = run_cli("canary", "run", ld, "-p", "crc-0", "-w", w, "--skip-corrupt")
    assert r.returncode == 0, r.stderr
    v = run_cli("canary", "verify", w, "--format", "json")
    assert v.returncode == 0, v.stderr
    (p,) = [json.loads(x) for x in v.stdout.splitlines() if '"partition"' in x and '"ok"' in x]
    assert p["ok"] and p["expected_changes"]["corrupt records left out by the run (skip_corrupt)"] == 1
    assert p["records"] == {"original": 7, "canary": 7}  # 5 + 3, one left out of both (its wrapper rebuilt)


def test_canary_run_publishes_nothing_where_its_own_verify_would_fail_and_passes_torn_tails(tmp_path):
    # The tester's 51 "the saved original cannot be read": zero-filled and torn tails of the last segment. The run
    # and its verify both treat them as the broker's recovery does.
    ld = log_dir(tmp_path, {"zeros-0": {SEG: d.batch(0) + b"\0" * 4096},
                            "torn-0": {SEG: d.batch(0) + d.batch(3)[:30]},
                            "mid-0": {SEG: d.batch(0) + b"\0" * 64, f"{3:020d}.log": d.batch(3)}})
    w = tmp_path / "w"
    r = run_cli("canary", "run", ld, "-p", "zeros-0,torn-0", "-w", w)
    assert r.returncode == 0, r.stderr
    assert run_cli("canary", "verify", w).returncode == 0
    # Zeros at the end of a segment that is not the last: the broker's recovery would delete every later segment,
    # so the run refuses the partition (exit 1) and leaves no work dir.
    w2 = tmp_path / "w2"
    r = run_cli("canary", "run", ld, "-p", "mid-0", "-w", w2)
    no_traceback(r.stderr)
    assert r.returncode == 1 and f"{ld / 'mid-0' / SEG} at byte {len(d.batch(0))}" in r.stderr
    assert not w2.exists()


# ---------------------------------------------------------------------------------------------- item 6

INTERNAL = {
    "int64-max": ({SEG: d.offset_max()}, "does not fit an int64"),
    "decreasing-inner": ({SEG: d.decreasing_inner()}, "offset 8 is followed by 7"),
    "named-above": ({f"{1000:020d}.log": d.batch(0) + d.batch(3)}, "below its segment's base offset 1000"),
}


@pytest.mark.parametrize("case", list(INTERNAL))
@pytest.mark.parametrize("command", ["downconvert", "downconvert-v0", "upconvert", "canary-run", "fetch-sim"])
def test_what_were_internal_errors_are_findings(tmp_path, case, command):
    segments, words = INTERNAL[case]
    part = log_dir(tmp_path, {"t-0": segments}) / "t-0"
    if command == "fetch-sim":
        r = run_cli("fetch-sim", part)
        if case == "decreasing-inner":  # Kafka's broker serves it as it is (a v1 batch to a v1 fetch): no finding
            assert r.returncode == 0, r.stderr
            return
        words = {"int64-max": "does not fit an int64", "named-above": "below the log start offset 1000"}[case]
    else:
        r = run_cli(*CONVERTERS[command](part, tmp_path / "out"))
    no_traceback(r.stderr)
    assert r.returncode == 1 and words in r.stderr, r.stderr
    assert "--high-watermark" not in r.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------- item 7

def test_dump_exits_1_where_kafka_reads_on_but_the_data_is_wrong(tmp_path):
    cases = {
        "cut-0": (d.inner_cut(1, n=3), ["--deep"], "inner-set-truncated"),
        "neg-0": (d.batch(0) + d.negative_delta(10, -7), [], "offset-range"),
        "ctl-0": (d.batch(0) + d.bad_control(b"\x00"), ["--deep"], "invalid-control-record"),
    }
    for name, (seg, opts, kind) in cases.items():
        part = tmp_path / name
        part.mkdir()
        (part / SEG).write_bytes(seg)
        r = run_cli("dump", part, *opts)
        no_traceback(r.stderr)
        assert r.returncode == 1, (name, r.stderr)
        assert f"kafkatool dump: error: {kind}: " in r.stderr and "findings: 1 errors" in r.stderr, (name, r.stderr)
    r = run_cli("dump", tmp_path / "neg-0")
    assert "offsets 10..3" in r.stdout and "lastOffsetDelta -7" in r.stderr
    r = run_cli("dump", tmp_path / "cut-0", "--deep")
    assert "read as offsets 1..2" in r.stderr and "puts them at 0..1" in r.stderr  # Kafka's numbering, explained
    r = run_cli("dump", tmp_path / "ctl-0", "--deep")
    assert "COMMIT (undecodable:" in r.stdout


def test_spark_scan_reports_an_unknown_magic_as_dump_does(tmp_path):
    odd = bytearray(d.batch(3))
    odd[16] = 3
    part = log_dir(tmp_path, {"m-0": {SEG: d.batch(0) + bytes(odd)}}) / "m-0"
    r = run_cli("spark-scan", part, "--engine", "local-processes", "--format", "json")
    no_traceback(r.stderr)
    assert r.returncode == 1, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    errors = [f for f in lines if f.get("type") == "finding" and f["severity"] == "error"]
    assert [(f["kind"], f["position"]) for f in errors] == [("unknown-magic", len(d.batch(0)))]
    dumped = run_cli("dump", part)
    assert dumped.returncode == 1 and "unknown-magic" in dumped.stderr


def test_fetch_sim_on_garbage_names_the_data_not_an_option_never_given(tmp_path):
    garbage = bytearray(d.batch(0))
    struct.pack_into(">q", garbage, 0, -5000)  # outside the CRC: a sound batch of negative offsets
    part = log_dir(tmp_path, {"g-0": {SEG: bytes(garbage)}}) / "g-0"
    r = run_cli("fetch-sim", part)
    no_traceback(r.stderr)
    assert r.returncode == 1 and "--high-watermark" not in r.stderr
    assert f"{part / SEG} at byte 0: the log end offset -4997" in r.stderr
    r = run_cli("fetch-sim", part, "--high-watermark", "7")
    assert r.returncode in (1, 2) and "log end offset -4997" in r.stderr
    assert os.listdir(part) == [SEG]
