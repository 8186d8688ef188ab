"""Every classification of ``reindex-time --check``, each from an index file built the way it happens.

Index files come from the broker's two writers, transcribed in ``segments.append_path_indexes``: the
append path (a leader one batch per append; a follower or the cleaner in multi-batch chunks; a leader up
to 3.6 storing record-level offsets) and the rebuild (``recover_segment``). Damage is applied the way it
occurs: preallocation without trim, a log truncated under its index, a flipped byte, a deleted file.
"""

from __future__ import annotations

import struct

from kafkatool.log.layout import resolve_inputs
from kafkatool.log.recovery import recover_segment
from kafkatool.record.default_records import build_batch, build_empty_batch
from kafkatool.reindex.engine import ReindexOptions, check_segment, plan
from kafkatool.reindex.verify import Severity
from tests.support.segments import T0, append_path_indexes, legacy, v2, v2_sized, write_segment

BASE2 = 1000  # base offset of the partition's second (active) segment


def partition(tmp_path, first: list[bytes], second: list[bytes] | None = None, *, index: bytes | None = None,
              timeindex: bytes | None = None):
    """A partition dir: segment 0 (``first``, non-active) with the given index files (None: rebuilt ones),
    then an active segment at BASE2 with rebuilt indexes."""
    d = tmp_path / "orders-0"
    log = write_segment(d, 0, first)
    r = recover_segment(log, 0)
    (d / "00000000000000000000.index").write_bytes(r.encode_offset_index() if index is None else index)
    (d / "00000000000000000000.timeindex").write_bytes(r.encode_time_index() if timeindex is None else timeindex)
    second = second if second is not None else [v2(BASE2 + i, 2, ts=T0 + 10_000 + i) for i in range(3)]
    log2 = write_segment(d, BASE2, second)
    r2 = recover_segment(log2, BASE2)
    (d / f"{BASE2:020d}.index").write_bytes(r2.encode_offset_index())
    (d / f"{BASE2:020d}.timeindex").write_bytes(r2.encode_time_index())
    return d


def check(d, name="00000000000000000000", **kw):
    tasks = plan(resolve_inputs([d]), ReindexOptions(**kw))
    (task,) = [t for t in tasks if t.log.name == name + ".log"]
    return check_segment(task, ReindexOptions(**kw))


def one(res, which):
    c = res.index if which == "index" else res.time_index
    return c


def kinds(c):
    return [(f.kind, f.severity, f.reason) for f in c.findings]


def batches_1k(n=40, start=0, step=1):
    return [v2_sized(start + i, 1000, ts=T0 + i * step) for i in range(n)]


def test_rebuilt_files_are_ok(tmp_path):
    res = check(partition(tmp_path, batches_1k()))
    assert res.index.status == "ok" and res.time_index.status == "ok" and res.severity is None
    assert res.index.on_disk_entries == res.index.rebuilt_entries == 7


def test_leader_append_path_equals_the_rebuild(tmp_path):
    # 3.7+ leader, one batch per append: the same entries as LogSegment.recover (KAFKA-FORMATS §4.2).
    batches = batches_1k()
    index, timeindex = append_path_indexes(batches)
    res = check(partition(tmp_path, batches, index=index, timeindex=timeindex))
    assert res.severity is None


def test_follower_multi_batch_appends_are_valid_but_different(tmp_path):
    # A follower appends fetched chunks of 3 batches: entry = (last offset of the chunk's LAST batch,
    # position of its FIRST batch). Lookups are still right (they scan forward from an earlier position).
    batches = batches_1k(42)
    index, timeindex = append_path_indexes(batches, [3] * 14)
    first = struct.unpack(">ii", index[:8])
    assert first == (8, 6000)  # chunk of batches 6..8 at position 6000 (bytes since the last entry > 4096)
    res = check(partition(tmp_path, batches, index=index, timeindex=timeindex))
    assert kinds(res.index) == [("valid-different", Severity.INFO, "multi-batch-append")]
    assert "span several batches" in res.index.findings[0].message
    # Its time entries are (max timestamp, offset) at the chunk points: other points, each a valid lookup.
    assert kinds(res.time_index) == [("valid-different", Severity.INFO, "index-points")]
    assert res.severity == Severity.INFO


def test_leader_up_to_3_6_record_level_time_offsets_are_valid(tmp_path):
    # Uncompressed v2 CreateTime batches of 4 records whose max timestamp is the second record: a <= 3.6
    # leader stored that record's offset (inside the batch) in the time index; recovery stores the batch's
    # last offset.
    batches = [v2(4 * i, 4, ts=[T0 + 10 * i, T0 + 10 * i + 5, T0 + 10 * i + 1, T0 + 10 * i + 2], value=300)
               for i in range(30)]
    index, timeindex = append_path_indexes(batches, record_level=True)
    ts, rel = struct.unpack(">qi", timeindex[:12])
    assert rel % 4 == 1  # the second record of its batch
    res = check(partition(tmp_path, batches, index=index, timeindex=timeindex))
    assert res.index.status == "ok"
    assert kinds(res.time_index) == [("valid-different", Severity.INFO, "record-level-offset")]


def test_other_interval_is_valid_but_different(tmp_path):
    batches = batches_1k()
    r = recover_segment(write_segment(tmp_path / "x", 0, batches), 0, index_interval_bytes=1500)
    res = check(partition(tmp_path, batches, index=r.encode_offset_index(), timeindex=r.encode_time_index()))
    assert kinds(res.index) == [("valid-different", Severity.INFO, "index-points")]
    assert kinds(res.time_index) == [("valid-different", Severity.INFO, "index-points")]
    # ... and with the topic's interval given, identical.
    assert check(partition(tmp_path, batches, index=r.encode_offset_index(), timeindex=r.encode_time_index()),
                 index_interval_bytes=1500).severity is None


def _padded(data: bytes, entry: int) -> bytes:
    size = 10 * 1024 * 1024 // entry * entry  # preallocated as the broker does: roundDown(10 MiB, entrySize)
    return data + bytes(size - len(data))


def test_preallocated_untrimmed_files(tmp_path):
    batches = batches_1k()
    r = recover_segment(write_segment(tmp_path / "x", 0, batches), 0)
    d = partition(tmp_path, batches, index=_padded(r.encode_offset_index(), 8),
                  timeindex=_padded(r.encode_time_index(), 12))
    assert (d / "00000000000000000000.timeindex").stat().st_size == 10_485_756
    res = check(d)
    # Non-active segment: the broker counts the zero slots as entries.
    assert kinds(res.index) == [("untrimmed", Severity.WARNING, "zero-padded")]
    assert kinds(res.time_index) == [("untrimmed", Severity.ERROR, "zero-padded")]
    assert res.time_index.findings[0].count == 873_813 - 8
    # The same files on the active segment: what a crash leaves, rebuilt by the broker anyway.
    (d / f"{BASE2:020d}.log").unlink()
    for suffix in (".index", ".timeindex"):
        (d / f"{BASE2:020d}{suffix}").unlink()
    res = check(d)
    assert kinds(res.index) == [("untrimmed", Severity.INFO, "zero-padded")]
    assert kinds(res.time_index) == [("untrimmed", Severity.INFO, "zero-padded")]


def test_crashed_active_segment_lacks_the_roll_entry(tmp_path):
    # An active segment as a killed broker leaves it: entries written by appends, preallocated, and no
    # final (max timestamp) entry yet. Informational on the active segment, an error on a rolled one.
    batches = batches_1k(20)
    index, timeindex = append_path_indexes(batches, roll=False)
    d = tmp_path / "orders-0"
    write_segment(d, 0, batches)
    (d / "00000000000000000000.index").write_bytes(_padded(index, 8))
    (d / "00000000000000000000.timeindex").write_bytes(_padded(timeindex, 12))
    res = check(d)
    assert res.task.active
    assert {f.reason for f in res.time_index.findings} == {"zero-padded", "max-timestamp"}
    assert all(f.severity == Severity.INFO for f in res.time_index.findings)
    res = check(partition(tmp_path, batches, index=index, timeindex=timeindex))
    assert kinds(res.time_index) == [("corrupt", Severity.ERROR, "max-timestamp")]


def test_log_truncated_under_its_index_is_stale(tmp_path):
    batches = batches_1k()
    d = partition(tmp_path, batches)
    log = d / "00000000000000000000.log"
    log.write_bytes(log.read_bytes()[:22_000])  # 22 batches left; the index still covers 40
    res = check(d)
    assert res.index.status == "stale" and res.index.severity == Severity.ERROR
    f = res.index.findings[0]
    assert f.reason == "past-end" and f.entry == 4 and f.count == 3  # entries at 25000, 30000, 35000
    assert res.time_index.status == "stale"


def test_flipped_position_byte_is_corrupt(tmp_path):
    batches = batches_1k()
    r = recover_segment(write_segment(tmp_path / "x", 0, batches), 0)
    index = bytearray(r.encode_offset_index())
    index[8 + 6] ^= 0x01  # entry 1's position 10000 -> 10256: inside a batch
    res = check(partition(tmp_path, batches, index=bytes(index)))
    assert kinds(res.index) == [("corrupt", Severity.ERROR, "not-batch-start")]
    assert res.index.findings[0].entry == 1


def test_flipped_offset_byte_breaks_the_order(tmp_path):
    batches = batches_1k()
    r = recover_segment(write_segment(tmp_path / "x", 0, batches), 0)
    index = bytearray(r.encode_offset_index())
    index[8 * 2 + 3] ^= 0x80  # entry 2's relative offset 15 -> 143: above entry 3's
    res = check(partition(tmp_path, batches, index=bytes(index)))
    assert ("corrupt", Severity.ERROR, "not-increasing") in kinds(res.index)


def test_offset_entry_whose_lookup_lands_after_the_target(tmp_path):
    # (offset 4, position 5000): batch 4 sits at 4000, before the position, so a fetch at offset 4
    # would start at batch 5 and skip it.
    batches = batches_1k()
    res = check(partition(tmp_path, batches, index=struct.pack(">ii", 4, 5000)))
    assert kinds(res.index) == [("corrupt", Severity.ERROR, "lookup-after-target")]


def test_time_entry_whose_lookup_lands_after_the_target(tmp_path):
    # Batch 2 holds the segment's largest timestamp; an entry (that timestamp, offset 30) sends
    # ListOffsets to batch 30 and past the earlier batch.
    stamps = [0, 1, 500, 3] + list(range(4, 40))
    batches = [v2_sized(i, 1000, ts=T0 + s) for i, s in enumerate(stamps)]
    timeindex = struct.pack(">qi", T0 + 500, 30) + struct.pack(">qi", T0 + 501, 31)
    res = check(partition(tmp_path, batches, timeindex=timeindex))
    assert ("corrupt", Severity.ERROR, "lookup-after-target") in kinds(res.time_index)


def test_decreasing_timestamps_are_corrupt(tmp_path):
    batches = batches_1k()
    timeindex = struct.pack(">qi", T0 + 20, 20) + struct.pack(">qi", T0 + 10, 25) + struct.pack(">qi", T0 + 39, 39)
    res = check(partition(tmp_path, batches, timeindex=timeindex))
    assert ("corrupt", Severity.ERROR, "not-increasing") in kinds(res.time_index)


def test_partial_entry_is_corrupt(tmp_path):
    batches = batches_1k()
    r = recover_segment(write_segment(tmp_path / "x", 0, batches), 0)
    res = check(partition(tmp_path, batches, index=r.encode_offset_index() + b"\x00\x00\x01",
                          timeindex=r.encode_time_index()[:-5]))
    assert ("corrupt", Severity.ERROR, "partial-entry") in kinds(res.index)
    assert ("corrupt", Severity.ERROR, "partial-entry") in kinds(res.time_index)


def test_missing_files(tmp_path):
    batches = batches_1k()
    d = partition(tmp_path, batches)
    (d / "00000000000000000000.timeindex").unlink()
    res = check(d)  # only the .timeindex: created empty, never rebuilt -> the max timestamp is lost
    assert kinds(res.time_index) == [("missing", Severity.ERROR, "missing")]
    (d / "00000000000000000000.index").unlink()
    res = check(d)  # with the .index gone too, the broker rebuilds both at startup: slow, not wrong
    assert kinds(res.index) == [("missing", Severity.WARNING, "missing")]
    assert kinds(res.time_index) == [("missing", Severity.WARNING, "missing")]


def test_empty_time_index_of_a_segment_with_timestamps(tmp_path):
    res = check(partition(tmp_path, batches_1k(), timeindex=b""))
    assert kinds(res.time_index) == [("corrupt", Severity.ERROR, "max-timestamp")]


def test_v0_segment_with_an_empty_time_index_is_ok(tmp_path):
    batches = [legacy(0, i, value=500) for i in range(20)]
    res = check(partition(tmp_path, batches, timeindex=b""))
    assert res.severity is None and res.time_index.on_disk_entries == 0
    d = tmp_path / "orders-0"
    (d / "00000000000000000000.timeindex").unlink()
    assert kinds(check(d).time_index) == [("missing", Severity.INFO, "missing")]


def test_empty_offset_index_is_valid_but_slow(tmp_path):
    res = check(partition(tmp_path, batches_1k(), index=b""))
    assert kinds(res.index) == [("valid-different", Severity.WARNING, "empty")]


def test_corrupt_batch_in_the_log_leaves_an_intact_index_unjudged_not_stale(tmp_path):
    batches = batches_1k()
    d = partition(tmp_path, batches)
    log = d / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[30_008:30_012] = b"\0\0\0\x05"  # batch 30 declares 5 bytes: corrupt, recovery truncates there
    log.write_bytes(bytes(data))
    res = check(d)
    (lf,) = res.log_findings
    assert (lf.kind, lf.severity, lf.reason) == ("log-truncation", Severity.ERROR, "corrupt-batch")
    assert "truncate 10000 bytes at byte 30000" in lf.message
    # The index was written for this very log: its entries at 30000 and 35000 are not stale (the log was not
    # truncated), they lie past the invalid batch, where the walk cannot check them. Entries before it equal
    # the rebuild, so nothing else is reported; the exit code comes from the .log finding.
    assert kinds(res.index) == [("past-invalid-batch", Severity.INFO, "after-invalid-batch")]
    f = res.index.findings[0]
    assert (f.entry, f.count) == (5, 2) and "the log was truncated" not in f.message
    assert "where the broker's recovery stops at an invalid batch" in f.message and "cuts the log there" in f.message
    assert kinds(res.time_index) == [("past-invalid-batch", Severity.INFO, "after-invalid-batch")]
    assert res.time_index.findings[0].count == 3  # offsets 30 and 35 (points 30000, 35000) and the final 39


def test_crc_failure_found_by_verify_does_not_make_the_index_stale(tmp_path):
    batches = batches_1k()
    d = partition(tmp_path, batches)
    log = d / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[20_500] ^= 0x01  # a value byte of batch 20: only the CRC notices
    log.write_bytes(bytes(data))
    assert check(d).severity is None  # header-only: nothing to see
    res = check(d, verify=True)
    (lf,) = res.log_findings
    assert (lf.reason, lf.severity) == ("corrupt-batch", Severity.ERROR) and "Record is corrupt" in lf.message
    assert kinds(res.index) == [("past-invalid-batch", Severity.INFO, "after-invalid-batch")]
    assert res.index.findings[0].count == 4  # entries at 20000, 25000, 30000, 35000
    assert not any(f.kind == "stale" for c in res.checks for f in c.findings)


def test_log_file_shorter_than_the_index_is_still_stale_with_a_corrupt_batch(tmp_path):
    # Both at once: batch 10 is corrupt and the file ends at 22000 under an index covering 40 batches. The
    # entries past the file's end (25000, 30000, 35000) are stale: the log really lost them; the ones inside
    # it past the invalid batch (10000, 15000, 20000) are unjudged.
    batches = batches_1k()
    d = partition(tmp_path, batches)
    log = d / "00000000000000000000.log"
    data = bytearray(log.read_bytes()[:22_000])
    data[10_008:10_012] = b"\0\0\0\x05"
    log.write_bytes(bytes(data))
    res = check(d)
    assert {(f.kind, f.reason, f.count) for f in res.index.findings} == {
        ("stale", "past-end", 3), ("past-invalid-batch", "after-invalid-batch", 3)}


def test_cleaner_chunks_over_compacted_output_with_offset_gaps(tmp_path):
    # The log cleaner's output: v2 batches that lost records (offset gaps inside a batch; a rewritten batch
    # keeps its original base and last offsets, MemoryRecordsBuilder.overrideLastOffset), whole batches gone
    # (gaps between batches) and one batch kept empty for its producer state. The 3.9 cleaner appends what it
    # retained from each read in ONE LogSegment.append, so each index entry is (last offset of the chunk's
    # last batch, position of its first batch), like a follower's.
    batches = []
    for i in range(60):
        first = 10 * i
        if i % 7 == 3:
            continue  # every record of the batch was superseded: gone, a gap of 10 offsets
        if i == 20:
            batches.append(build_empty_batch(base_offset=first, last_offset_delta=9, max_timestamp=T0 + first + 9,
                                             producer_id=42, producer_epoch=0, base_sequence=first,
                                             is_transactional=False))
            continue
        kept = [first + k for k in range(10) if (k + i) % 3 != 0]  # a third of the keys superseded
        recs = [(o, T0 + o, b"k%d" % (o % 97), b"v" * 400, ()) for o in kept]
        batches.append(build_batch(recs, base_offset=first, override_last_offset=first + 9))
    index, timeindex = append_path_indexes(batches, [4, 5, 3, 6, 5, 4, 4, 5, 3, 4, 2, 3, 3])
    rebuilt = recover_segment(write_segment(tmp_path / "x", 0, batches), 0)
    assert index != rebuilt.encode_offset_index()
    res = check(partition(tmp_path, batches, index=index, timeindex=timeindex))
    assert kinds(res.index) == [("valid-different", Severity.INFO, "multi-batch-append")]
    assert kinds(res.time_index) == [("valid-different", Severity.INFO, "index-points")]
    assert res.severity == Severity.INFO
    # Every entry's lookup is right; --in-place --keep-valid leaves both files alone.
    res = check(partition(tmp_path, batches, index=index, timeindex=timeindex), mode="in-place", keep_valid=True)
    assert {a.action for a in res.actions} == {"skipped"}


def test_zero_filled_log_tail_is_a_warning(tmp_path):
    d = partition(tmp_path, batches_1k(10) + [bytes(5000)])
    res = check(d)
    (lf,) = res.log_findings
    assert (lf.severity, lf.reason) == (Severity.WARNING, "zero-tail")


def test_segment_the_broker_would_empty(tmp_path):
    batches = [v2(10, 1, ts=T0 + 1), v2(20, 1, ts=T0 + 5), v2(15, 1, ts=T0 + 9), v2(30, 1)]
    d = partition(tmp_path, batches)
    res = check(d, index_interval_bytes=0, mode="in-place")
    (lf,) = res.log_findings
    assert lf.severity == Severity.ERROR and "empty this segment" in lf.message
    assert {a.action for a in res.actions} == {"skipped"}


def test_findings_on_a_segment_the_broker_rebuilds_are_capped(tmp_path):
    # With the .index missing the broker recovers the segment at startup: its old .timeindex cannot mislead it.
    batches = batches_1k()
    d = partition(tmp_path, batches, timeindex=struct.pack(">qi", T0 + 20, 20) + struct.pack(">qi", T0 + 10, 25))
    (d / "00000000000000000000.index").unlink()
    res = check(d)
    assert ("corrupt", Severity.WARNING, "not-increasing") in kinds(res.time_index)
    assert res.time_index.severity == Severity.WARNING
