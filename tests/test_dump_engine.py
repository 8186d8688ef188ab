"""The dump engine on damaged and filtered segments: what it finds, where, and where it resumes."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from kafkatool import default_records as v2
from kafkatool import legacy_records as legacy
from kafkatool.codecs import Codec, compress
from kafkatool.dump import DumpEngine, find_next_batch
from kafkatool.dump_events import BatchEvent, DumpOptions, FileEnd, Finding, Severity, Summary
from tests.dump_fixtures import TS, v2_batches, write_segment

BATCHES = v2_batches(10)  # offsets 0..49, 5 records each; first two batches 651 bytes, then 656
SIZES = [len(b) for b in BATCHES]


def run(path: Path, **kw: object) -> tuple[list[BatchEvent], list[Finding], FileEnd, Summary]:
    evs = list(DumpEngine(DumpOptions(**kw)).run([path]))  # type: ignore[arg-type]
    batches = [e for e in evs if isinstance(e, BatchEvent)]
    findings = [e for e in evs if isinstance(e, Finding)]
    (end,) = [e for e in evs if isinstance(e, FileEnd)]
    assert isinstance(evs[-1], Summary)
    return batches, findings, end, evs[-1]


def kinds(findings: list[Finding]) -> list[tuple[str, str, int | None]]:
    return [(f.kind, f.severity.value, f.position) for f in findings]


def write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    return p


def at(i: int) -> int:
    return sum(SIZES[:i])


def test_clean_segment_deep(tmp_path):
    p = write(tmp_path, b"".join(BATCHES))
    batches, findings, end, s = run(p, deep=True, verify=True)
    assert findings == []
    assert [b.batch.position for b in batches] == [at(i) for i in range(10)]
    assert [r.offset for b in batches for r in b.records or []] == list(range(50))
    assert (end.batches, end.records, end.valid_bytes, end.invalid_bytes) == (10, 50, at(10), 0)
    assert (s.files, s.batches, s.records, s.errors, s.first_offset, s.last_offset) == (1, 10, 50, 0, 0, 49)
    assert s.codecs == {"none": 10} and s.magics == {2: 10}


def test_torn_tail_is_a_warning_at_the_last_batch(tmp_path):
    p = write(tmp_path, b"".join(BATCHES)[:-100])
    batches, findings, end, _ = run(p)
    assert len(batches) == 9
    assert kinds(findings) == [("torn-tail", "warning", at(9))]
    assert "declares 656 bytes but only 556 remain" in findings[0].message
    assert end.invalid_bytes == 556


def test_few_trailing_bytes_are_a_torn_tail(tmp_path):
    p = write(tmp_path, b"".join(BATCHES) + b"\x01" * 9)
    _, findings, end, _ = run(p)
    assert kinds(findings) == [("torn-tail", "warning", at(10))] and end.invalid_bytes == 9


def test_trailing_zeros_are_info_unless_strict(tmp_path):
    p = write(tmp_path, b"".join(BATCHES) + bytes(10_000))
    batches, findings, end, s = run(p)
    assert len(batches) == 10 and kinds(findings) == [("trailing-zeros", "info", at(10))]
    assert end.invalid_bytes == 10_000 and s.errors == s.warnings == 0
    _, findings, _, s = run(p, strict=True)
    assert kinds(findings) == [("trailing-zeros", "error", at(10))] and s.errors == 1


def test_garbage_mid_file_resumes_at_the_next_valid_batch(tmp_path):
    garbage = bytes(range(256)) * 4 + b"\xff" * 77  # 1101 bytes; its size field (0x08090a0b) runs past the end
    data = b"".join(BATCHES[:3]) + garbage + b"".join(BATCHES[3:])
    p = write(tmp_path, data)
    batches, findings, end, s = run(p, deep=True)
    assert kinds(findings) == [("corrupt-region", "error", at(3))]
    assert findings[0].data == {"bytes": len(garbage), "resume": at(3) + len(garbage)}
    assert [r.offset for b in batches for r in b.records or []] == list(range(50))
    assert end.invalid_bytes == len(garbage) and s.errors == 1
    # --strict stops there, like the broker's recovery would.
    batches, findings, end, _ = run(p, strict=True)
    assert len(batches) == 3 and kinds(findings) == [("torn-tail", "error", at(3))]
    assert end.stopped == "strict"


def test_size_field_below_minimum_mid_file(tmp_path):
    bad = bytearray(BATCHES[4])
    bad[8:12] = struct.pack(">i", 5)
    p = write(tmp_path, b"".join(BATCHES[:4]) + bytes(bad) + b"".join(BATCHES[5:]))
    batches, findings, _, _ = run(p)
    assert kinds(findings) == [("corrupt-region", "error", at(4)), ("offset-gap", "info", at(5))]
    assert "Found record size 5 smaller than minimum record overhead (14)" in findings[0].message
    assert [b.batch.position for b in batches] == [at(i) for i in range(10) if i != 4]


def test_zero_hole_mid_file_then_valid_batches(tmp_path):
    p = write(tmp_path, b"".join(BATCHES[:2]) + bytes(5000) + b"".join(BATCHES[2:]))
    batches, findings, _, _ = run(p)
    assert kinds(findings) == [("corrupt-region", "error", at(2))] and findings[0].data["bytes"] == 5000
    assert len(batches) == 10


def test_corruption_with_nothing_valid_after_it(tmp_path):
    p = write(tmp_path, b"".join(BATCHES[:2]) + b"\x00" * 8 + struct.pack(">i", 3) + b"\x07" * 500)
    _, findings, end, _ = run(p)
    assert kinds(findings) == [("corrupt", "error", at(2))] and end.invalid_bytes == 512


def test_resync_scan_is_bounded(tmp_path):
    p = write(tmp_path, b"".join(BATCHES[:2]) + b"\x00" * 8 + struct.pack(">i", 3) + b"\x07" * 3000
              + b"".join(BATCHES[2:]))
    _, findings, _, _ = run(p, resync_limit=1000)
    assert kinds(findings) == [("corrupt", "error", at(2))] and "next 1000 bytes" in findings[0].message


def test_crc_mismatch_continues_like_kafka_strict_stops(tmp_path):
    bad = bytearray(BATCHES[3])
    bad[200] ^= 0x55
    p = write(tmp_path, b"".join(BATCHES[:3]) + bytes(bad) + b"".join(BATCHES[4:]))
    batches, findings, _, s = run(p)
    assert kinds(findings) == [("crc-mismatch", "error", at(3))]
    assert [b.crc_valid for b in batches] == [True] * 3 + [False] + [True] * 6
    assert s.invalid_batches == 1
    batches, findings, end, _ = run(p, strict=True)
    assert len(batches) == 4 and end.stopped == "strict"


def test_records_that_do_not_decode(tmp_path):
    # A batch that claims 6 records but holds 5, with a CRC recomputed over the lie: Kafka's
    # InvalidRecordException on deep iteration.
    raw = bytearray(BATCHES[1])
    struct.pack_into(">i", raw, 57, 6)
    struct.pack_into(">I", raw, 17, v2.crc32c(bytes(raw[21:])))
    p = write(tmp_path, BATCHES[0] + bytes(raw) + BATCHES[2])
    batches, findings, _, _ = run(p, deep=True)
    assert kinds(findings)[0] == ("invalid-records", "error", at(1))
    assert findings[0].data["error_position"] == at(2)  # where the sixth record should have started
    assert batches[1].crc_valid and batches[1].records is None
    _, findings, _, _ = run(p)  # shallow: records are not decoded
    assert findings == []


def test_decompression_limit_is_a_finding(tmp_path):
    recs = [(i, TS, None, b"\x00" * 100_000, []) for i in range(20)]
    p = write(tmp_path, v2.build_batch(recs, codec=Codec.GZIP))
    _, findings, _, _ = run(p, deep=True, decompress_limit=1 << 20)
    assert [f.kind for f in findings] == ["decompress-limit"]


def test_legacy_inner_crc_checked_with_verify(tmp_path):
    inner = [legacy.encode_entry(i, legacy.encode_message(1, 0, TS + i, b"k", b"v")) for i in range(3)]
    broken = bytearray(inner[1])
    broken[12:16] = b"\x00\x00\x00\x01"  # the inner message's CRC
    inner[1] = bytes(broken)
    wrapper = legacy.encode_message(1, int(Codec.GZIP), TS + 2, None,
                                    compress(Codec.GZIP, b"".join(inner), magic=1))
    p = write(tmp_path, legacy.encode_entry(2, wrapper))
    _, findings, _, _ = run(p, verify=True)
    assert [(f.kind, f.offset) for f in findings] == [("record-crc-mismatch", 1)]
    assert zlib.crc32(wrapper[4:]) == struct.unpack(">I", wrapper[:4])[0]  # the wrapper itself is fine


def test_offset_gaps_and_order(tmp_path):
    data = (v2.build_batch([(0, TS, b"a", b"", []), (1, TS, b"b", b"", []), (4, TS, b"c", b"", [])])
            + v2.build_batch([(10, TS, b"d", b"", [])]) + v2.build_batch([(8, TS, b"e", b"", [])]))
    p = write(tmp_path, data)
    _, findings, _, s = run(p, deep=True)
    assert [(f.kind, f.severity, f.data["previous"], f.data["next"]) for f in findings] == [
        ("offset-gap", Severity.INFO, 1, 4), ("offset-gap", Severity.INFO, 4, 10),
        ("offset-order", Severity.ERROR, 10, 8)]
    _, findings, _, _ = run(p)  # shallow: batch by batch
    assert [(f.kind, f.data["previous"], f.data["next"]) for f in findings] == [
        ("offset-gap", 4, 10), ("offset-order", 10, 8)]


def test_offset_filters_and_index_seek(tmp_path):
    log = write_segment(tmp_path / "t-0", v2_batches(40))
    batches, _, _, s = run(log, deep=True, from_offset=112, to_offset=118)
    assert [r.offset for b in batches for r in b.records or []] == list(range(112, 119))
    # The .index entry at or below 112 is (109, 13771): the walk starts there, not at byte 0.
    assert batches[0].batch.position == 14432 and s.records == 7
    shallow, _, end, _ = run(log, from_offset=112, to_offset=118)
    assert [(b.batch.base_offset, b.batch.last_offset) for b in shallow] == [(110, 114), (115, 119)]
    assert end.stopped == "to-offset"


def test_time_filters(tmp_path):
    log = write_segment(tmp_path / "t-0", v2_batches(10))
    batches, _, _, _ = run(log, deep=True, from_time=TS + 12, to_time=TS + 21)
    assert [r.timestamp - TS for b in batches for r in b.records or []] == list(range(12, 22))
    shallow, _, _, _ = run(log, from_time=TS + 12, to_time=TS + 21)
    assert [b.batch.base_offset for b in shallow] == [10, 15, 20]


def test_events_stream_before_the_file_is_read(tmp_path):
    p = write(tmp_path, b"".join(BATCHES) + b"\x05" * 30)
    it = iter(DumpEngine(DumpOptions()).run([p]))
    seen = []
    for ev in it:
        seen.append(ev)
        if isinstance(ev, BatchEvent):
            break
    assert not any(isinstance(e, Finding) for e in seen)  # the torn tail is not known yet


def test_corrupt_region_candidate_scan_skips_lookalikes():
    data = bytearray(b"".join(BATCHES[:3]))
    # A fake header at byte 10 with a plausible size and magic 2, but no valid CRC: not a resync point.
    data[10:10 + 17] = b"\x00" * 8 + struct.pack(">i", 100) + b"\x00" * 4 + b"\x02"
    assert find_next_batch(bytes(data), 1, len(data), 1 << 20) == at(1)


@pytest.mark.parametrize("codec", [c for c in Codec if c != Codec.ZSTD], ids=lambda c: c.label)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_batches_counted_exactly_on_request(tmp_path, magic, codec):
    data = legacy.build_entries([(i, TS + i, b"k", b"v") for i in range(4)], magic=magic, codec=codec)
    p = write(tmp_path, data)
    _, _, end, s = run(p, exact_counts=True)
    assert end.records == 4 and s.records == 4
    _, _, end, _ = run(p)
    assert end.records == (4 if codec == Codec.NONE else None)
