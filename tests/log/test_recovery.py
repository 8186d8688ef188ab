"""The index rebuild (``recover_segment``) against hand-worked 3.9 ``LogSegment.recover`` results.

Every expected entry below is derived in the comment next to it from the rules in KAFKA-FORMATS §4.2:
an index point is a batch whose position exceeds the last indexed position by more than
``index.interval.bytes`` (position 0 counts as the last indexed position at the start); the offset entry
is (batch last offset, batch position); the time entry is the running (max timestamp, last offset of the
first batch that reached it), appended only when the timestamp rises; the final entry is the segment's
(max timestamp, offset) unless already last. Both implementations (fast, reference) must give them.
"""

from __future__ import annotations

import pytest

from kafkatool.log.index import OffsetPosition, TimestampOffset
from kafkatool.log.recovery import recover_segment
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_empty_batch, build_end_txn_marker
from tests.support.segments import T0, legacy, positions, v2, v2_sized, write_segment

METHODS = ["fast", "reference"]


def rebuild(path, base=0, method="fast", **kw):
    return recover_segment(path, base, method=method, **kw)


@pytest.mark.parametrize("method", METHODS)
def test_one_kib_batches_default_interval_byte_for_byte(tmp_path, method):
    # 12 one-record batches of exactly 1000 bytes at positions 0, 1000, ..., 11000.
    stamps = [0, 5, 3, 9, 9, 20, 1, 25, 30, 30, 2, 40]
    batches = [v2_sized(i, 1000, ts=T0 + stamps[i]) for i in range(12)]
    assert [len(b) for b in batches] == [1000] * 12
    r = rebuild(write_segment(tmp_path, 0, batches), method=method)
    # First position > 0 + 4096 is 5000 (batch 5); next > 5000 + 4096 is 10000 (batch 10); none > 14096.
    assert r.offset_entries == [OffsetPosition(5, 5000), OffsetPosition(10, 10000)]
    # At batch 5 the max so far is 20 (batch 5); at batch 10 it is 30, first reached by batch 8;
    # the final entry is the segment max 40 (batch 11).
    assert r.time_entries == [TimestampOffset(T0 + 20, 5), TimestampOffset(T0 + 30, 8), TimestampOffset(T0 + 40, 11)]
    assert r.encode_offset_index() == bytes.fromhex("00000005" "00001388" "0000000a" "00002710")
    assert r.encode_time_index() == bytes.fromhex(
        f"{T0 + 20:016x}00000005" f"{T0 + 30:016x}00000008" f"{T0 + 40:016x}0000000b")
    assert (r.valid_bytes, r.batches, r.last_offset, r.max_timestamp, r.offset_of_max_timestamp) == \
        (12000, 12, 11, T0 + 40, 11)
    assert r.stop.kind == "end" and r.error is None and r.fatal is None


@pytest.mark.parametrize("method", METHODS)
def test_batches_larger_than_the_interval_and_last_offsets(tmp_path, method):
    # Batches of 3 records (last offsets 2, 5, 8, 11), each about 5000 bytes: every batch after the first
    # is an index point (5000 > 4096, then each next one is > 4096 past the previous).
    stamps = [100, 50, 200, 150]
    batches = [v2(3 * i, 3, ts=[T0 + stamps[i] - 2, T0 + stamps[i], T0 + stamps[i] - 1], value=1640)
               for i in range(4)]
    pos = positions(batches)
    assert all(len(b) > 4096 for b in batches)
    r = rebuild(write_segment(tmp_path, 0, batches), method=method)
    assert r.offset_entries == [OffsetPosition(5, pos[1]), OffsetPosition(8, pos[2]), OffsetPosition(11, pos[3])]
    # Batch 1: max 100 from batch 0 (last offset 2); batch 2: 200 (offset 8); batch 3: still 200, no entry;
    # the final (200, 8) is already last.
    assert r.time_entries == [TimestampOffset(T0 + 100, 2), TimestampOffset(T0 + 200, 8)]


@pytest.mark.parametrize("method", METHODS)
def test_v0_segment_has_an_empty_time_index(tmp_path, method):
    batches = [legacy(0, i, value=500) for i in range(20)]  # 12 + 14 + 500 = 526-byte messages
    pos = positions(batches)
    r = rebuild(write_segment(tmp_path, 0, batches), method=method)
    assert len(batches[0]) == 526
    # 526 * 8 = 4208 > 4096: batch 8; 526 * 16 = 8416 > 4208 + 4096 = 8304 (and 526 * 15 is not): batch 16.
    assert r.offset_entries == [OffsetPosition(8, pos[8]), OffsetPosition(16, pos[16])]
    assert r.time_entries == [] and r.encode_time_index() == b""
    assert r.magics == {0} and r.max_timestamp == -1


@pytest.mark.parametrize("method", METHODS)
def test_mixed_v0_v1_v2_log_append_time_and_codecs(tmp_path, method):
    # A format upgrade in one segment: v0, then v1 (CreateTime, then a LogAppendTime gzip wrapper whose
    # timestamp is the broker's time), then v2 (lz4 CreateTime, LogAppendTime snappy). Interval 0: every
    # batch but the first is an index point, so the entries are each batch's (last offset, position).
    batches = [
        legacy(0, 0, 1) + legacy(0, 1, 1),  # two uncompressed v0 entries, offsets 0 and 1, no timestamp
        legacy(1, 2, 1, ts=T0 + 10),                                       # offset 2, ts T0+10
        legacy(1, 3, 3, ts=T0 + 5, codec=Codec.GZIP, log_append_time=T0 + 50),  # wrapper offset 5, ts T0+50
        legacy(0, 6, 2, codec=Codec.SNAPPY),                               # wrapper offset 7, no timestamp
        v2(8, 4, ts=[T0 + 60, T0 + 90, T0 + 70, T0 + 80], codec=Codec.LZ4),  # last 11, max T0+90
        v2(12, 2, ts=T0 + 1, codec=Codec.SNAPPY, log_append_time=T0 + 95),  # last 13, LogAppendTime T0+95
        v2(14, 1, ts=T0 + 20, codec=Codec.ZSTD),                           # last 14, ts below the max
    ]
    pos = positions(batches)
    r = rebuild(write_segment(tmp_path, 0, batches), index_interval_bytes=0, method=method)
    # The second v0 entry (offset 1) sits inside the first list item, at half its length.
    assert r.offset_entries == [OffsetPosition(1, len(batches[0]) // 2)] + [
        OffsetPosition(o, pos[i]) for i, o in [(1, 2), (2, 5), (3, 7), (4, 11), (5, 13), (6, 14)]]
    # Running max at each point: T0+10 (offset 2), T0+50 (5), still T0+50 at batch 3 (no entry), T0+90 (11),
    # T0+95 (13), still T0+95 at batch 6; final entry already last.
    assert r.time_entries == [TimestampOffset(T0 + 10, 2), TimestampOffset(T0 + 50, 5),
                              TimestampOffset(T0 + 90, 11), TimestampOffset(T0 + 95, 13)]
    assert r.magics == {0, 1, 2}


@pytest.mark.parametrize("method", METHODS)
def test_transactional_batches_markers_and_an_empty_cleaner_batch(tmp_path, method):
    pid = 4000
    batches = [
        v2(0, 3, ts=T0 + 1, producer_id=pid, producer_epoch=0, base_sequence=0, is_transactional=True),
        build_end_txn_marker(offset=3, timestamp=T0 + 2, producer_id=pid, producer_epoch=0, commit=True,
                             coordinator_epoch=5),
        # The cleaner kept an empty batch for producer state: offsets 4..9, max timestamp T0+7, no records.
        build_empty_batch(base_offset=4, last_offset_delta=5, max_timestamp=T0 + 7, producer_id=pid + 1,
                          producer_epoch=0, base_sequence=10, is_transactional=False),
        v2(10, 2, ts=T0 + 3, producer_id=pid, producer_epoch=0, base_sequence=3, is_transactional=True),
        build_end_txn_marker(offset=12, timestamp=T0 + 9, producer_id=pid, producer_epoch=0, commit=False,
                             coordinator_epoch=5),
    ]
    pos = positions(batches)
    assert len(batches[1]) == 78 and len(batches[2]) == 61
    r = rebuild(write_segment(tmp_path, 0, batches), index_interval_bytes=0, method=method)
    assert r.offset_entries == [OffsetPosition(3, pos[1]), OffsetPosition(9, pos[2]), OffsetPosition(11, pos[3]),
                                OffsetPosition(12, pos[4])]
    # Max: T0+2 at the commit marker (offset 3), T0+7 at the empty batch (offset 9), T0+9 at the abort marker.
    assert r.time_entries == [TimestampOffset(T0 + 2, 3), TimestampOffset(T0 + 7, 9), TimestampOffset(T0 + 9, 12)]


@pytest.mark.parametrize("method", METHODS)
def test_nonzero_base_offset_is_relative_in_the_files(tmp_path, method):
    base = 1_000_000
    batches = [v2_sized(base + i, 1000, ts=T0 + i) for i in range(6)]
    r = rebuild(write_segment(tmp_path, base, batches), base, method=method)
    assert r.offset_entries == [OffsetPosition(base + 5, 5000)]
    assert r.encode_offset_index() == bytes.fromhex("00000005" "00001388")
    assert r.time_entries == [TimestampOffset(T0 + 5, base + 5)]
    assert r.encode_time_index() == bytes.fromhex(f"{T0 + 5:016x}00000005")


@pytest.mark.parametrize("method", METHODS)
def test_leader_epoch_assignments(tmp_path, method):
    epochs = [0, 0, 1, -1, 1, 3, 2]
    batches = [v2(i * 2, 2, partition_leader_epoch=e) for i, e in enumerate(epochs)]
    r = rebuild(write_segment(tmp_path, 0, batches), method=method)
    # assign(epoch, baseOffset) when epoch >= 0 and above the latest: 0 at 0, 1 at 4, 3 at 10.
    assert r.epochs == [(0, 0), (1, 4), (3, 10)]
    assert rebuild(write_segment(tmp_path, 0, batches), method=method, latest_epoch=1).epochs == [(3, 10)]


@pytest.mark.parametrize("method", METHODS)
def test_offset_index_invalid_offset_is_fatal(tmp_path, method):
    # Non-monotonic offsets (a v2 baseOffset is not covered by the CRC): with interval 0, batch 2 (last
    # offset 15) is appended after 20 -> InvalidOffsetException, which recover() does not catch.
    batches = [v2(10, 1, ts=T0 + 1), v2(20, 1, ts=T0 + 5), v2(15, 1, ts=T0 + 9), v2(30, 1)]
    pos = positions(batches)
    r = rebuild(write_segment(tmp_path, 0, batches), index_interval_bytes=0, method=method)
    assert r.fatal == "invalid-offset" and r.broker_truncates_to == 0
    assert "Attempt to append an offset (15) to slot 1 of the offset index" in r.error.message
    assert r.error.position == pos[2] and r.valid_bytes == pos[2]
    assert r.offset_entries == [OffsetPosition(20, pos[1])]


@pytest.mark.parametrize("method", METHODS)
def test_time_index_invalid_offset_is_fatal(tmp_path, method):
    # TimeIndex.maybeAppend throws when the running max's offset is below the last time entry's, even
    # though it would append (a later max reached by a lower offset). Batches of 100 bytes, interval 150:
    # points at 200 (batch 2) and 400 (batch 4). At batch 2 the time entry is (T0+2, 20); batch 3 (offset 5,
    # not a point) raises the max to T0+9; at batch 4 maybeAppend(T0+9, 5) throws.
    batches = [v2_sized(10, 100, ts=T0 + 1), v2_sized(20, 100, ts=T0 + 2), v2_sized(30, 100, ts=T0 + 1),
               v2_sized(5, 100, ts=T0 + 9), v2_sized(40, 100, ts=T0 + 1)]
    r = rebuild(write_segment(tmp_path, 0, batches), index_interval_bytes=150, method=method)
    assert r.fatal == "invalid-offset"
    assert "Attempt to append an offset (5) to slot 1 of the time index" in r.error.message
    assert r.error.position == 400
    assert r.time_entries == [TimestampOffset(T0 + 2, 20)]
    assert r.offset_entries == [OffsetPosition(30, 200), OffsetPosition(40, 400)]


@pytest.mark.parametrize("method", METHODS)
def test_offset_overflow_is_fatal(tmp_path, method):
    batches = [v2(5, 1), v2(5 + 2**31, 1)]
    r = rebuild(write_segment(tmp_path, 5, batches), 5, method=method)
    assert r.fatal == "offset-overflow" and "does not fit" in r.error.message
    assert r.valid_bytes == len(batches[0]) and r.batches == 1


@pytest.mark.parametrize("method", METHODS)
def test_walk_stops_where_recovery_truncates(tmp_path, method):
    good = [v2_sized(i, 1000, ts=T0 + i) for i in range(6)]
    # A torn tail: the last batch declares more bytes than remain (dropped silently).
    r = rebuild(write_segment(tmp_path, 0, b"".join(good) + v2_sized(6, 1000)[:500]), method=method)
    assert (r.valid_bytes, r.stop.kind, r.error, r.batches) == (6000, "size-past-end", None, 6)
    assert r.offset_entries == [OffsetPosition(5, 5000)] and r.time_entries == [TimestampOffset(T0 + 5, 5)]
    # Preallocated zeros after the data: size 0 < 14 is corrupt.
    r = rebuild(write_segment(tmp_path, 0, b"".join(good) + bytes(4096)), method=method)
    assert (r.valid_bytes, r.stop.kind, r.batches) == (6000, "corrupt", 6)
    assert "smaller than minimum record overhead" in r.error.message and r.error.position == 6000
    # 17 bytes or fewer left: a short tail.
    r = rebuild(write_segment(tmp_path, 0, b"".join(good) + b"\x01" * 17), method=method)
    assert (r.valid_bytes, r.stop.kind, r.stop.trailing_bytes) == (6000, "short-tail", 17)


@pytest.mark.parametrize("method", METHODS)
def test_crc_is_checked_only_with_verify(tmp_path, method):
    batches = [v2_sized(i, 1000, ts=T0 + i) for i in range(8)]
    data = bytearray(b"".join(batches))
    data[3000 + 500] ^= 0xFF  # a record byte of batch 3
    path = write_segment(tmp_path, 0, bytes(data))
    assert rebuild(path, method=method).batches == 8
    r = rebuild(path, method=method, verify=True)
    assert (r.valid_bytes, r.batches, r.stop.kind) == (3000, 3, "corrupt")
    assert "Record is corrupt (stored crc" in r.error.message and r.error.position == 3000
    assert r.offset_entries == [] and r.time_entries == [TimestampOffset(T0 + 2, 2)]


def test_v2_batch_shorter_than_its_header_is_corrupt_without_verify(tmp_path):
    batches = [v2(0, 1), v2(1, 1)]
    bad = bytearray(v2(2, 1))
    bad[8:12] = (40).to_bytes(4, "big")  # size 52 < 61
    path = write_segment(tmp_path, 0, b"".join(batches) + bytes(bad[:52]) + v2(3, 1))
    for method in METHODS:
        r = rebuild(path, method=method)
        assert "the size of 52 is smaller than the minimum allowed overhead 61" in r.error.message
        assert r.valid_bytes == len(batches[0]) + len(batches[1])
