"""The hostile-input corpus (tests/hostile/, made by make_corpus.py) against the library: each defect is
detected at the stage MANIFEST.json names, as the error class it names, at the byte position it names
("clean" where Kafka's own reader accepts the bytes: tests/hostile/test_cli.py has what ``dump`` reports),
and no parser allocates more than the bytes available (bombs stop at the decompression limit)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.errors import KafkaToolError
from kafkatool.log import index, snapshot
from kafkatool.log import recovery as recover
from kafkatool.record.file_records import FileRecords
from tests.support.paths import HOSTILE

MANIFEST = json.loads((HOSTILE / "MANIFEST.json").read_text())


def first_problem(path: Path) -> dict[str, object]:
    """Walk, CRC-check and decode everything as Kafka's readers do (a magic above 2 reads as v2, as in
    FileLogInputStream); return the first problem in Kafka's order of discovery."""
    with FileRecords(path) as fr:
        stream = fr.batches()
        try:
            for batch in stream:
                try:
                    batch.ensure_valid()
                except KafkaToolError as e:
                    return {"stage": "crc", "error": type(e).__name__, "position": e.position, "message": str(e)}
                try:
                    batch.records()
                except KafkaToolError as e:
                    stage = "decompress" if type(e).__name__ == "LimitExceededError" or batch.is_compressed \
                        else "records"
                    return {"stage": stage, "error": type(e).__name__, "position": batch.position,
                            "message": str(e)}
        except KafkaToolError as e:
            return {"stage": "walk", "error": type(e).__name__, "position": e.position, "message": str(e)}
        end = stream.end_state
        assert end is not None
        if end.kind != "end":
            return {"stage": "tail", "error": end.kind, "position": end.position, "message": end.message}
    return {"stage": "clean"}


LOG_CASES = sorted(n for n, m in MANIFEST.items() if n.endswith(".log") and "/" not in n)


@pytest.mark.parametrize("name", LOG_CASES)
def test_log_corpus_defect_is_found_where_the_manifest_says(name):
    expected = MANIFEST[name]
    got = first_problem(HOSTILE / name)
    assert got["stage"] == expected["stage"], got
    if expected["stage"] == "clean":
        return
    assert got["error"] == expected["error"], got
    assert got["position"] == expected["position"], got
    assert expected["match"] in str(got["message"]), got


# Decodes one bomb in a fresh interpreter and prints what that one call added: to the peak RSS (Linux's VmHWM,
# reset through /proc/self/clear_refs just before the call, minus VmRSS then: a high-water mark inherited from
# the parent or left by the imports cannot hide growth) and to the Python heap (tracemalloc's peak: the bytes
# objects the codecs return live there).
_BOMB_PROBE = """
import json, sys, tracemalloc
from kafkatool.errors import KafkaToolError
from kafkatool.record.file_records import FileRecords

def status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

limit = int(sys.argv[2])
with FileRecords(sys.argv[1]) as fr:
    (batch,) = list(fr.batches())
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak RSS to the current RSS
    before = status_kib("VmRSS")
    tracemalloc.start()
    error = None
    try:
        batch.records(limit=limit)
    except KafkaToolError as e:
        error = str(e)
    heap_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    grown = status_kib("VmHWM") - before
print(json.dumps({"rss_grown_kib": grown, "heap_peak_kib": heap_peak // 1024, "error": error}))
"""


def _decode_bomb(name: str, limit: int) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-c", _BOMB_PROBE, str(HOSTILE / name), str(limit)],
                       capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parent.parent.parent)
    out: dict[str, object] = json.loads(r.stdout)
    return out


@pytest.mark.parametrize("name", ["bomb-gzip.log", "bomb-zstd.log", "bomb-lz4.log", "bomb-snappy.log"])
def test_bombs_stop_at_the_limit_without_allocating_the_output(name):
    limit = 8 << 20
    got = _decode_bomb(name, limit)
    assert "exceeds the limit" in str(got["error"])
    # 80 MiB (1 GiB declared, for snappy) of output; the call may hold about the limit, never the output.
    assert int(got["heap_peak_kib"]) < 2 * limit // 1024, got
    assert int(got["rss_grown_kib"]) < 4 * limit // 1024, got


def test_the_bomb_measurement_sees_a_decode_past_the_bounds():
    # The control: with a limit above the output, the same probe sees the 80 MiB the gzip bomb inflates to, far
    # past both bounds the test above asserts.
    got = _decode_bomb("bomb-gzip.log", 256 << 20)
    assert "exceeds the limit" not in str(got["error"])
    assert int(got["heap_peak_kib"]) > 80 * 1024 and int(got["rss_grown_kib"]) > 4 * (8 << 20) // 1024, got


def test_garbage_in_the_middle_leaves_later_batches_reachable():
    data = (HOSTILE / "garbage-in-the-middle.log").read_bytes()
    from kafkatool.record.file_records import LogInputStream

    # The batches after the garbage start where the third-from-last batch header parses with a valid CRC.
    later = [p for p in range(len(data) - 61) if data[p + 16] == 2 and _valid_at(data, p)]
    assert len(later) == 3
    assert [b.base_offset for b in LogInputStream(data, start=later[1])] == [3, 6]


def _valid_at(data: bytes, p: int) -> bool:
    from kafkatool.record.file_records import LogInputStream

    try:
        b = next(iter(LogInputStream(data, start=p)))
    except (KafkaToolError, StopIteration):
        return False
    return b.magic == 2 and b.is_valid()


def test_index_padding_is_recognised():
    contents = index.read_offset_index(HOSTILE / "index-padding" / "00000000000000000000.index")
    assert len(contents.entries) == 1 and contents.untrimmed and contents.padding_all_zero
    assert contents.padding_slots == (1 << 16) // 8 - 1


def test_index_past_end_of_truncated_log():
    d = HOSTILE / "index-past-end"
    contents = index.read_offset_index(d / "00000000000000000000.index")
    size = (d / "00000000000000000000.log").stat().st_size
    assert [e.position >= size for e in contents.entries] == [True, True]


def test_offset_overflow_is_a_recovery_error():
    r = recover.recover_segment(HOSTILE / "offset-overflow" / "00000000000000000000.log", 0)
    assert r.error is not None and "does not fit" in r.error.message
    assert r.error.position == MANIFEST["offset-overflow/00000000000000000000.log"]["position"]


def test_snapshot_crc():
    with pytest.raises(KafkaToolError, match="CRC is no longer valid"):
        snapshot.read_snapshot(HOSTILE / "snapshot-bad-crc.snapshot")


def test_inputs_are_never_modified_by_reading(tmp_path):
    import hashlib

    sums = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in HOSTILE.rglob("*") if p.is_file()}
    for name in LOG_CASES:
        first_problem(HOSTILE / name)
    assert sums == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in HOSTILE.rglob("*") if p.is_file()}
