"""The dump engine on damaged and filtered segments: what it finds, where, and where it resumes."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import BatchEvent, DumpOptions, FileEnd, Finding, Severity, Summary
from kafkatool.dump.resync import find_next_batch
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.codecs import Codec, compress
from tests.support.dump_fixtures import TS, v2_batches, write_segment

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
    nxt = v2_batches(11)[10]  # the batch that would follow, offsets 50..54
    p = write(tmp_path, b"".join(BATCHES) + nxt[:9])
    _, findings, end, _ = run(p)
    assert kinds(findings) == [("torn-tail", "warning", at(10))] and end.invalid_bytes == 9


@pytest.mark.parametrize("tail,reason", [
    (b"\x01" * 9, "offset 72340172838076673 is outside the segment's 0..2147483647"),
    (struct.pack(">q", 40) + b"\x00\x00", "offset 40 does not follow the last batch's 49"),
    (struct.pack(">q", -7), "offset field -7"),
    (struct.pack(">qi", 50, 0x72617368),
     "size field declares 1918989172 bytes, more than any broker accepts in a batch"),
    (struct.pack(">qiib", 50, 100, -1, 9), "magic byte 9"),
    (struct.pack(">qiib", 50, 40, -1, 2), "52 bytes is less than a v2 batch header"),
])
def test_bytes_that_cannot_start_a_batch_are_trailing_garbage(tmp_path, tail, reason):
    # A torn tail is a plausible batch cut short; these bytes cannot be one (offset, size, magic).
    p = write(tmp_path, b"".join(BATCHES) + tail)
    _, findings, end, s = run(p)
    assert kinds(findings) == [("trailing-garbage", "error", at(10))] and end.invalid_bytes == len(tail)
    assert findings[0].data["reason"] == reason and s.errors == 1


def test_text_appended_to_a_segment_is_trailing_garbage_not_a_torn_tail(tmp_path):
    # An appended text line: its "size field" claims 1.9 GB in a 6.5 KB file.
    p = write(tmp_path, b"".join(BATCHES) + b"oops: this line was appended by a script\n")
    _, findings, _, _ = run(p)
    assert kinds(findings) == [("trailing-garbage", "error", at(10))]
    assert "no valid batch follows" in findings[0].message


def test_trailing_zeros_are_a_warning_an_error_with_strict(tmp_path):
    # Kafka's reader throws on the size 0 and the broker's recovery truncates there: a finding (exit 1).
    p = write(tmp_path, b"".join(BATCHES) + bytes(10_000))
    batches, findings, end, s = run(p)
    assert len(batches) == 10 and kinds(findings) == [("trailing-zeros", "warning", at(10))]
    assert end.invalid_bytes == 10_000 and (s.errors, s.warnings) == (0, 1)
    assert (end.reader_stop, end.reader_throws) == (at(10), True)
    _, findings, _, s = run(p, strict=True)
    assert kinds(findings) == [("trailing-zeros", "error", at(10))] and s.errors == 1


def test_garbage_mid_file_resumes_at_the_next_valid_batch(tmp_path):
    garbage = bytes(range(256)) * 4 + b"\xff" * 77  # 1101 bytes; its size field (0x08090a0b) runs past the end
    data = b"".join(BATCHES[:3]) + garbage + b"".join(BATCHES[3:])
    p = write(tmp_path, data)
    batches, findings, end, s = run(p, deep=True)
    assert kinds(findings) == [("corrupt-region", "error", at(3))]
    assert findings[0].data == {"bytes": len(garbage), "resume": at(3) + len(garbage), "kafka_reader": "stops"}
    assert [r.offset for b in batches for r in b.records or []] == list(range(50))
    assert end.invalid_bytes == len(garbage) and s.errors == 1
    # --strict stops there, like the broker's recovery would.
    batches, findings, end, _ = run(p, strict=True)
    assert len(batches) == 3 and kinds(findings) == [("corrupt", "error", at(3))]  # not a plausible batch start
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
    assert kinds(findings) == [("trailing-garbage", "error", at(2))] and end.invalid_bytes == 512
    assert findings[0].data["reason"] == "offset 0 does not follow the last batch's 9"
    assert (end.reader_stop, end.reader_throws) == (at(2), True)  # size 3: Kafka's reader throws


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
    batches, _, _, _ = run(log, deep=True, from_time=TS + 12, to_time=TS + 21)  # [from, to): half-open
    assert [r.timestamp - TS for b in batches for r in b.records or []] == list(range(12, 21))
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


def _sniff_cases() -> dict[str, tuple[bytes, str | None]]:
    from kafkatool.log.index import OffsetPosition, TimestampOffset, encode_offset_index, encode_time_index
    from kafkatool.log.snapshot import ProducerSnapshotEntry, encode_snapshot
    from kafkatool.log.txn_index import AbortedTxn, encode_txn_index

    return {
        "index": (encode_offset_index([OffsetPosition(7, 4096), OffsetPosition(19, 8192)], 0) + bytes(64),
                  "an offset index (.index: 2 entries"),
        "timeindex": (encode_time_index([TimestampOffset(TS, 7), TimestampOffset(TS + 1, 9)], 0),
                      "a time index (.timeindex: 2 entries"),
        "txnindex": (encode_txn_index([AbortedTxn(5, 10, 20, 10), AbortedTxn(6, 30, 31, 30)]),
                     "a transaction index (.txnindex: 2 aborted"),
        "snapshot": (encode_snapshot([ProducerSnapshotEntry(1, 0, 9, 100, 9, TS, 0, -1)]),
                     "a producer state snapshot (.snapshot: version 1, 1 producers)"),
        "checkpoint": (b"0\n1\norders 0 42\n", "a text file (first line '0'"),
        # Damage at byte 0 of a real segment is not another file type: it stays a finding about the log.
        "damaged segment": (b"\xff" * 12 + b"".join(BATCHES)[12:], None),
        "random": (bytes(range(256)) * 3, None),
    }


@pytest.mark.parametrize("case", sorted(_sniff_cases()))
def test_wrong_file_type_is_named_by_its_content(tmp_path, case):
    data, looks = _sniff_cases()[case]
    batches, findings, end, s = run(write(tmp_path, data))
    if looks is None:
        assert "wrong-file-type" not in [f.kind for f in findings] and findings
        return
    assert batches == [] and kinds(findings) == [("wrong-file-type", "error", 0)], findings
    assert findings[0].data["looks_like"].startswith(looks), findings[0].data
    assert (end.stopped, end.invalid_bytes, s.errors) == ("wrong-file-type", len(data), 1)


# ---------------------------------------------------------------------------------------------- issue 23, 5-7

def _all_paths(monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    if not compiled:
        import kafkatool.dump.engine as engine_mod
        monkeypatch.setattr(engine_mod, "_C", None)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled-walk", "python-walk"])
def test_what_kafka_reads_without_an_error_but_is_wrong_is_an_error_finding(tmp_path, monkeypatch, compiled):
    """Each of these passes Kafka's CRC check and reader; each is an error finding at its batch (exit 1), whether
    the compiled walk or the Python loop reads the batches around it."""
    from tests.support import damaged_batches as d

    _all_paths(monkeypatch, compiled)
    data = d.batch(0) + d.negative_delta(3, -1) + d.batch(4) + d.bad_control(offset=7) + d.batch(8) + d.offset_max()
    positions = [0]
    for part in (d.batch(0), d.negative_delta(3, -1), d.batch(4), d.bad_control(offset=7), d.batch(8)):
        positions.append(positions[-1] + len(part))
    p = write(tmp_path, data)
    _, shallow, _, s = run(p, emit_data=False)
    assert [(f.kind, f.position) for f in shallow if f.severity == Severity.ERROR] == [
        ("offset-range", positions[1]), ("offset-int64", positions[5])]
    _, deep, _, s = run(p, deep=True, verify=True, emit_data=False)
    errors = [(f.kind, f.position, f.offset) for f in deep if f.severity == Severity.ERROR]
    assert errors == [("offset-range", positions[1], 2), ("invalid-control-record", positions[3], 7),
                      ("offset-int64", positions[5], (1 << 63) - 1)]
    assert s.errors == 3


def test_a_cut_inner_set_is_an_error_with_kafka_s_offsets(tmp_path):
    from tests.support import damaged_batches as d

    p = write(tmp_path, d.inner_cut(magic=1, n=3))
    batches, findings, _, s = run(p, deep=True)
    assert [(f.kind, f.severity) for f in findings] == [("inner-set-truncated", Severity.ERROR)]
    assert [r.offset for r in batches[0].records or []] == [1, 2]  # as Kafka 3.9's reader numbers them
    assert s.errors == 1


def test_malformed_control_record_counts_as_an_error_where_the_line_says_invalid(tmp_path):
    from tests.support import damaged_batches as d

    p = write(tmp_path, d.batch(0) + d.bad_control(b"\x00" * 6, key=b"\x01"))
    batches, findings, _, s = run(p, deep=True)
    assert [f.kind for f in findings] == ["invalid-control-record"] and s.errors == 1
    assert "control record key" in findings[0].message
