"""Recovery's producer-state step for control batches: malformed transaction markers with valid CRCs.

The markers are a Kafka-written ABORT marker with one field changed and the CRC recomputed
(``tests/support/control_batches.py``; Kafka's own verdict on each is ``tests/interop/test_control_step_interop.py``).
The segment is the committed Kafka-written ``txn-0`` vector (``tests/vectors/reindex``), whose marker at byte
4406 (offset 117) is replaced by a malformed one of the same size.

In 3.9 (``LogSegment.recover``: ``validBytes += batch.sizeInBytes`` comes before ``updateProducerState``) an
InvalidRecordException from the marker keeps the control batch and truncates the segment after it; then
``UnifiedLog.rebuildProducerState`` meets the marker again and loading fails. Any other exception escapes
``recover()`` before its truncation.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from kafkatool.log.recovery import recover_segment
from kafkatool.log.recovery.control import check_control_batch
from tests.support.cli import run_cli
from tests.support.control_batches import CASES, Case
from tests.support.paths import VECTORS
from tests.support.segments import T0, v2_sized

VECTOR = VECTORS / "reindex" / "txn-0"
BASE = 100
SIZE = 11230
T = 1_700_000_000_000
MARKER_POS, MARKER_END, MARKER_OFFSET = 4406, 4484, 117
METHODS = ["fast", "reference"]


def case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def with_offset(batch: bytes, last_offset: int) -> bytes:
    """The batch moved to another offset: baseOffset is outside the CRC (a one-record batch: last = base)."""
    return struct.pack(">q", last_offset) + batch[8:]


def partition(tmp_path: Path, marker: bytes | None) -> Path:
    """The txn-0 vector in a log dir, its marker at byte 4406 replaced by ``marker``, with the indexes a
    header-only rebuild gives (so the broker has no reason to recover it at load)."""
    part = tmp_path / "logs" / "txn-0"
    shutil.copytree(VECTOR, part)
    log = part / f"{BASE:020d}.log"
    if marker is not None:
        data = bytearray(log.read_bytes())
        assert len(marker) == MARKER_END - MARKER_POS
        data[MARKER_POS:MARKER_END] = with_offset(marker, MARKER_OFFSET)
        log.write_bytes(bytes(data))
    write_indexes(log, BASE)
    return log


def write_indexes(log: Path, base: int) -> None:
    clean = recover_segment(log, base)
    log.with_suffix(".index").write_bytes(clean.encode_offset_index())
    log.with_suffix(".timeindex").write_bytes(clean.encode_time_index())


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_each_marker_gets_kafkas_verdict(c: Case) -> None:
    f = check_control_batch(c.batch, 500)
    assert (None if f is None else (f.outcome, f.exception)) == c.expected
    if f is not None:
        assert (f.position, f.size, f.end) == (500, len(c.batch), 500 + len(c.batch))


@pytest.mark.parametrize("method", METHODS)
def test_invalid_marker_keeps_its_batch_and_truncates_after_it(tmp_path: Path, method: str) -> None:
    log = partition(tmp_path, case("key-version-negative").batch)
    r = recover_segment(log, BASE, verify=True, method=method)
    assert r.control is not None and r.control.outcome == "invalid"
    assert (r.control.position, r.valid_bytes, r.broker_truncates_to, r.truncated_bytes) == \
        (MARKER_POS, MARKER_END, MARKER_END, SIZE - MARKER_END)
    assert r.fatal == "load-fails" and r.completes
    assert r.error is not None and r.error.position == MARKER_POS and "Invalid version found for control record" \
        in r.error.message
    assert (r.batches, r.last_offset, r.stop.kind, r.stop.position) == (6, MARKER_OFFSET, "corrupt", MARKER_END)
    # recover() went through the marker's index point (position 4406 > 4096) before the producer-state step
    # threw, and finished with its final time entry: (T+15, 116) from batch 4, already the last entry.
    assert r.encode_offset_index() == struct.pack(">ii", MARKER_OFFSET - BASE, MARKER_POS)
    assert r.encode_time_index() == struct.pack(">qi", T + 15, 116 - BASE)


@pytest.mark.parametrize("method", METHODS)
def test_unhandled_exception_truncates_nothing_and_fails_the_load(tmp_path: Path, method: str) -> None:
    log = partition(tmp_path, case("leader-change-type").batch)
    r = recover_segment(log, BASE, verify=True, method=method)
    assert r.control is not None and (r.control.outcome, r.control.exception) == \
        ("unhandled", "IllegalArgumentException")
    assert (r.fatal, r.completes, r.broker_truncates_to, r.valid_bytes) == ("load-fails", False, SIZE, MARKER_END)


@pytest.mark.parametrize("method", METHODS)
def test_without_verify_markers_are_not_parsed(tmp_path: Path, method: str) -> None:
    log = partition(tmp_path, case("key-version-negative").batch)
    r = recover_segment(log, BASE, verify=False, method=method)
    assert (r.valid_bytes, r.control, r.fatal, r.error) == (SIZE, None, None, None)


@pytest.mark.parametrize("method", METHODS)
def test_kafkas_own_markers_pass(method: str) -> None:
    r = recover_segment(VECTOR / f"{BASE:020d}.log", BASE, verify=True, method=method)
    assert (r.valid_bytes, r.control, r.fatal, r.batches) == (SIZE, None, None, 15)


@pytest.mark.parametrize("at", [5, 1023, 1024, 2999])
def test_fast_path_finds_the_marker_in_any_chunk(tmp_path: Path, at: int) -> None:
    # 3000 batches: the fast walk works in chunks of at least 1024 batches; the bad marker is the batch `at`
    # (the first, last or a middle one of a chunk); good markers are spread everywhere else.
    good = case("kafka-marker").batch
    bad = case("null-value").batch
    batches = []
    for i in range(3000):
        if i == at:
            batches.append(with_offset(bad, i))
        elif i % 7 == 3:
            batches.append(with_offset(good, i))
        else:
            batches.append(v2_sized(i, 200, ts=T0 + i))
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(b"".join(batches))
    pos = sum(len(b) for b in batches[:at])
    results = [recover_segment(log, 0, verify=True, method=m) for m in METHODS]
    for r in results:
        assert r.control is not None and (r.control.position, r.control.exception) == (pos, "NullPointerException")
        assert (r.valid_bytes, r.last_offset, r.batches) == (pos + len(bad), at, at + 1)
    fast, ref = results
    assert fast.encode_offset_index() == ref.encode_offset_index()
    assert fast.encode_time_index() == ref.encode_time_index()


def test_reindex_verify_reports_the_marker_and_writes_nothing(tmp_path: Path) -> None:
    log = partition(tmp_path, case("key-version-negative").batch)
    assert run_cli("reindex-time", log.parent, "-q").returncode == 0  # CRCs and markers unchecked: all fine
    r = run_cli("reindex-time", log.parent, "--verify", "--format", "json")
    assert r.returncode == 1, r.stderr
    seg = next(x for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "segment")
    (f,) = seg["findings"]
    assert (f["kind"], f["severity"], f["reason"]) == ("log-load-fails", "error", "malformed-marker")
    assert f"recovery would truncate {SIZE - MARKER_END} bytes at byte {MARKER_END}" in f["message"]
    assert "the broker does not start" in f["message"]
    before = log.with_suffix(".index").read_bytes()
    r = run_cli("reindex-time", log.parent, "--verify", "--in-place", "-q")
    assert r.returncode == 1 and log.with_suffix(".index").read_bytes() == before  # no files for it


def test_recovery_report_truncates_then_fails(tmp_path: Path) -> None:
    log = partition(tmp_path, case("value-version-negative").batch)
    r = run_cli("reindex-time", log.parent.parent, "--recovery-report", "--format", "json")
    assert r.returncode == 1, r.stderr
    recs = [x for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "recovery"]
    assert [(x["action"], x["file"]) for x in recs] == [("recover", log.name), ("load-fails", log.name)]
    rec, fail = recs
    assert (rec["truncate_at"], rec["truncated_bytes"], rec["loses_data"], rec["fails"]) == \
        (MARKER_END, SIZE - MARKER_END, True, False)
    assert fail["fails"] and "InvalidRecordException from the transaction marker at byte 4406" in fail["detail"]
    part = next(x for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "partition")
    assert part["fails"] and part["lost_bytes"] == SIZE - MARKER_END


def test_recovery_report_stops_at_an_unhandled_marker(tmp_path: Path) -> None:
    log = partition(tmp_path, case("unknown-type").batch)
    later = log.parent / f"{200:020d}.log"
    later.write_bytes(v2_sized(200, 300, ts=T0))
    write_indexes(later, 200)
    r = run_cli("reindex-time", log.parent.parent, "--recovery-report", "--format", "json")
    assert r.returncode == 1, r.stderr
    recs = [x for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "recovery"]
    # Nothing after the failing recovery: segment 200 is never reached, nothing truncated.
    assert [(x["action"], x["file"], x["fails"], x["truncated_bytes"]) for x in recs] == \
        [("recover", log.name, True, 0)]
    assert "IllegalArgumentException" in recs[0]["detail"]
