"""convert_log: partition dirs in, broker-loadable partition dirs out (library level)."""

from __future__ import annotations

import os
import struct

import pytest

from kafkatool.convert.engine import ConvertOptions, convert_log
from kafkatool.errors import CorruptRecordError, KafkaToolError, LimitExceededError, UsageError
from kafkatool.log.index import encode_offset_index, encode_time_index
from kafkatool.log.recovery import recover_segment
from kafkatool.log.snapshot import encode_snapshot
from kafkatool.log.txn_index import AbortedTxn, encode_txn_index, read_txn_index
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec, decompress
from kafkatool.record.down_convert import ZstdDownConversionError, down_convert
from kafkatool.record.file_records import iter_batches
from tests.support.convert_fixtures import (
    TS,
    legacy_log,
    make_partition,
    read_segments,
    records_of,
    tree_digest,
    v2_log,
    v2_txn_log,
)

DOWN1 = ConvertOptions(to_magic=1)
UP = ConvertOptions(to_magic=2)


def convert(src, dst, **kw):
    return convert_log(src, dst, ConvertOptions(**kw))


@pytest.mark.parametrize("to_magic", [0, 1])
def test_down_partition_is_records_util_output_with_broker_indexes(tmp_path, to_magic):
    seg0, seg1 = v2_txn_log(0), v2_txn_log(30)
    src = make_partition(tmp_path / "src", "orders-0", {0: seg0, 30: seg1})
    before = tree_digest(src)
    (st,) = convert(src, tmp_path / "out", to_magic=to_magic, index_interval_bytes=256)
    out = tmp_path / "out" / "orders-0"
    assert tree_digest(src) == before  # source never modified
    # One output segment per source segment, same base offsets; their bytes are downConvert's.
    for base, data in ((0, seg0), (30, seg1)):
        got = (out / f"{base:020d}.log").read_bytes()
        assert got == down_convert(iter_batches(data), to_magic, 0).data
        rec = recover_segment(out / f"{base:020d}.log", base, index_interval_bytes=256)
        assert rec.error is None and rec.offset_entries
        assert (out / f"{base:020d}.index").read_bytes() == encode_offset_index(rec.offset_entries, base)
        assert (out / f"{base:020d}.timeindex").read_bytes() == encode_time_index(rec.time_entries, base)
        assert all(b.magic == to_magic for b in iter_batches(got))
    assert st.control_batches_dropped == 12 and st.headers_dropped == 24 and st.producer_fields_dropped == 12
    assert st.counters.records_in == st.counters.records_out == 48
    assert (out / "leader-epoch-checkpoint").read_bytes() == (src / "leader-epoch-checkpoint").read_bytes()
    assert (out / "partition.metadata").read_bytes() == (src / "partition.metadata").read_bytes()
    # The trailing commit marker at 59 is dropped: an empty segment keeps the log end offset at 60.
    assert st.log_end_offset_in == st.log_end_offset_out == 60
    assert (out / f"{60:020d}.log").read_bytes() == b""
    assert not list((tmp_path / "out").glob(".kafkatool-tmp-*"))


def test_down_keeps_timestamps_for_v1_and_drops_them_for_v0(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log(0, lat=True) + v2_log(25)})
    convert(src, tmp_path / "v1", to_magic=1)
    convert(src, tmp_path / "v0", to_magic=0)
    v1 = list(iter_batches(read_segments(tmp_path / "v1" / "t-0")))
    assert [b.timestamp_type for b in v1[:25]] == [TimestampType.LOG_APPEND_TIME] * 25
    assert {b.max_timestamp for b in v1[:25]} == {TS + 999}
    assert [r[1] for r in records_of(read_segments(tmp_path / "v1" / "t-0"))][25:] == [TS + o for o in range(25, 50)]
    assert {r[1] for r in records_of(read_segments(tmp_path / "v0" / "t-0"))} == {-1}


def test_v1_to_v0_and_copies_at_or_below_target(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: legacy_log(0) + legacy_log(1, first=18)})
    (st,) = convert(src, tmp_path / "v0", to_magic=0)
    data = read_segments(tmp_path / "v0" / "t-0")
    assert records_of(data) == [(o, -1, k, v) for o, _, k, v in records_of((src / f"{0:020d}.log").read_bytes())]
    v0_entries = len(list(iter_batches(legacy_log(0))))
    assert {b.magic for b in iter_batches(data)} == {0} and st.counters.batches_copied == v0_entries == 10
    assert st.counters.records_in == st.counters.records_out == 36


def test_segments_roll_at_segment_bytes_with_kafka_base_offsets(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log(0, batches=20, per_batch=5)})
    (st,) = convert(src, tmp_path / "out", to_magic=1, codec=Codec.GZIP, segment_bytes=700)
    out = tmp_path / "out" / "t-0"
    logs = sorted(out.glob("*.log"))
    assert len(logs) == st.segments_out > 3
    for p in logs:
        base = int(p.name[:20])
        batches = list(iter_batches(p.read_bytes()))
        assert p.stat().st_size <= 700 or len(batches) == 1
        assert batches[0].records()[0].offset == base  # named by the first offset it holds
        assert (out / (p.name[:20] + ".index")).exists() and (out / (p.name[:20] + ".timeindex")).exists()
    assert records_of(read_segments(out)) == [(o, t, k, v) for o, t, k, v in records_of(v2_log(0, 20, 5))]


def test_roll_when_offsets_overflow_the_relative_index(tmp_path):
    # An old v1 segment spanning more than 2^31 offsets (KAFKA-6264): recovery would fail on it.
    far = 2**31 + 5
    data = legacy_log(1, 0, batches=1, codecs=(Codec.NONE,)) + legacy_log(1, far, batches=1, codecs=(Codec.NONE,))
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    convert(src, tmp_path / "out", to_magic=0)
    names = sorted(p.name for p in (tmp_path / "out" / "t-0").glob("*.log"))
    assert names == [f"{0:020d}.log", f"{far:020d}.log"]


def test_up_follows_the_kafka4_cleaner(tmp_path):
    mixed = legacy_log(0, 0, batches=4) + legacy_log(1, 12, batches=4, lat=True) + v2_log(24, batches=2)
    src = make_partition(tmp_path / "src", "t-0", {0: mixed})
    (st,) = convert(src, tmp_path / "out", to_magic=2, batch_bytes=0)
    out = read_segments(tmp_path / "out" / "t-0")
    batches = list(iter_batches(out))
    assert all(b.magic == 2 for b in batches)
    # v0: timestamp -1, CreateTime. v1 LogAppendTime: kept, the wrapper's time. Offsets preserved.
    src_recs = records_of(mixed)
    got = records_of(out)
    assert [(o, k, v) for o, _, k, v in got] == [(o, k, v) for o, _, k, v in src_recs]
    assert {r[1] for r in got[:12]} == {-1}
    assert {b.timestamp_type for b in batches[:6]} == {TimestampType.CREATE_TIME}  # the 6 v0 entries
    lat = [b for b in batches if b.timestamp_type == TimestampType.LOG_APPEND_TIME]
    assert {b.max_timestamp for b in lat} == {TS + 5000 + i for i in range(4)}
    # uncompressed messages: one batch each (--batch-bytes 0); a wrapper: one batch; v2: copied unchanged
    assert [b.count for b in batches[:4]] == [1, 1, 1, 3]
    assert out.endswith(v2_log(24, batches=2))
    assert st.counters.batches_copied == 2 and all(b.partition_leader_epoch == -1 for b in batches[:-2])


def test_up_groups_uncompressed_messages_up_to_batch_bytes(tmp_path):
    data = legacy_log(1, 0, batches=40, codecs=(Codec.NONE,))
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    (st,) = convert(src, tmp_path / "out", to_magic=2, batch_bytes=1024)
    batches = list(iter_batches(read_segments(tmp_path / "out" / "t-0")))
    assert 1 < len(batches) < 120 and all(b.size <= 1024 for b in batches)
    assert records_of(read_segments(tmp_path / "out" / "t-0")) == records_of(data)



def test_up_grouping_with_a_codec_learns_the_compression_ratio(tmp_path):
    # KIP-126: the estimate starts at 1.0 and improves by at most 0.005 per batch, so batches planned
    # later hold more records for the same --batch-bytes.
    data = legacy_log(1, 0, batches=1000, codecs=(Codec.NONE,))
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    (st,) = convert(src, tmp_path / "gz", to_magic=2, batch_bytes=1024, codec=Codec.GZIP)
    gz = list(iter_batches(read_segments(tmp_path / "gz" / "t-0")))
    assert st.counters.recompressed_batches == len(gz) and all(b.size <= 1024 for b in gz)
    assert gz[-2].count > gz[0].count + 5
    assert records_of(read_segments(tmp_path / "gz" / "t-0")) == records_of(data)


def test_up_never_mixes_log_append_times_in_one_batch(tmp_path):
    # Uncompressed LogAppendTime messages each carry their own append time; a v2 batch has one.
    data = legacy_log(1, 0, batches=5, codecs=(Codec.NONE,), lat=True)
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    convert(src, tmp_path / "out", to_magic=2)
    out = read_segments(tmp_path / "out" / "t-0")
    assert records_of(out) == records_of(data)
    assert len(list(iter_batches(out))) == 5


def test_round_trip_v2_v1_v2_keeps_every_record(tmp_path):
    data = v2_log(0, batches=4, codec=Codec.LZ4) + v2_txn_log(20) + v2_log(50, codec=Codec.SNAPPY)
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    convert(src, tmp_path / "v1", to_magic=1)
    convert(tmp_path / "v1" / "t-0", tmp_path / "v2", to_magic=2)
    assert records_of(read_segments(tmp_path / "v2" / "t-0")) == records_of(data)


def test_up_carries_producer_state_and_places_aborted_txns_with_their_markers(tmp_path):
    data = v2_txn_log(0, batches=6)
    aborted = [AbortedTxn(77, 5, 9, 10)]
    snap = encode_snapshot([])
    src = make_partition(tmp_path / "src", "t-0", {0: data}, extra={
        f"{0:020d}.txnindex": encode_txn_index(aborted), f"{30:020d}.snapshot": snap})
    (st,) = convert(src, tmp_path / "up", to_magic=2, segment_bytes=300)
    out = tmp_path / "up" / "t-0"
    assert read_segments(out) == data  # v2 copied unchanged, rolled at 300 bytes
    owners = [p for p in out.glob("*.txnindex")]
    assert len(owners) == 1 and read_txn_index(owners[0]) == aborted
    base = int(owners[0].name[:20])
    later = [int(p.name[:20]) for p in out.glob("*.log") if int(p.name[:20]) > base]
    assert base <= 9 and all(b > 9 for b in later)  # the segment holding the abort marker at offset 9
    assert (out / f"{30:020d}.snapshot").read_bytes() == snap and "00000000000000000030.snapshot" in st.files_carried
    (down,) = convert(src, tmp_path / "down", to_magic=1)
    assert not list((tmp_path / "down" / "t-0").glob("*.txnindex"))
    assert not list((tmp_path / "down" / "t-0").glob("*.snapshot"))
    assert set(down.files_dropped) == {f"{0:020d}.txnindex", f"{30:020d}.snapshot"}


def test_kip126_splits_a_batch_that_would_exceed_max_message_bytes(tmp_path):
    payload = os.urandom(2000)  # incompressible: v1 framing makes the wrapper larger than the v2 batch
    data = v2_log(0, batches=1, per_batch=40, codec=Codec.GZIP, value_bytes=2000, payload=payload)
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    limit = len(data) + 100
    (st,) = convert(src, tmp_path / "out", to_magic=1, max_message_bytes=limit)
    out = read_segments(tmp_path / "out" / "t-0")
    batches = list(iter_batches(out))
    assert st.counters.splits == 1 and st.counters.split_batches == len(batches) > 1
    assert all(b.size <= limit and b.codec == Codec.GZIP for b in batches)
    assert records_of(out) == records_of(data)
    assert st.split_rate == 1.0
    with pytest.raises(LimitExceededError, match="record at offset 0"):
        convert(src, tmp_path / "small", to_magic=1, max_message_bytes=1500)
    assert not (tmp_path / "small").exists()  # a failed run leaves nothing behind


def test_zstd_is_refused_by_default_naming_the_batch(tmp_path):
    data = v2_log(0, batches=2) + v2_log(10, batches=1, codec=Codec.ZSTD)
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    with pytest.raises(ZstdDownConversionError) as e:
        convert(src, tmp_path / "out", to_magic=1)
    msg = str(e.value)
    assert f"00000000000000000000.log at byte {len(v2_log(0, batches=2))}" in msg
    assert "offsets 10..14" in msg and e.value.field == "zstd_to"
    assert not (tmp_path / "out").exists()
    (st,) = convert(src, tmp_path / "out", to_magic=1, zstd_to=Codec.LZ4)
    batches = list(iter_batches(read_segments(tmp_path / "out" / "t-0")))
    assert batches[-1].codec == Codec.LZ4 and st.counters.codec_changed_batches == 1
    with pytest.raises(UsageError):
        convert(src, tmp_path / "x", to_magic=0, codec=Codec.ZSTD)


def test_zstd_in_a_later_partition_leaves_nothing_written(tmp_path):
    """No pre-scan: the run converts the partitions before it, meets the zstd batch, and removes what it wrote."""
    make_partition(tmp_path / "logs", "a-0", {0: v2_log(0, batches=3)})
    make_partition(tmp_path / "logs", "b-0", {0: v2_log(0, batches=3), 15: v2_log(15, batches=1, codec=Codec.ZSTD)})
    with pytest.raises(ZstdDownConversionError, match="offsets 15..19") as e:
        convert(tmp_path / "logs", tmp_path / "out", to_magic=0)
    assert e.value.path is not None and e.value.path.endswith(f"b-0/{15:020d}.log") and e.value.position == 0
    assert not (tmp_path / "out").exists()
    (tmp_path / "out").mkdir()  # an existing empty DST: left as it was
    with pytest.raises(ZstdDownConversionError):
        convert(tmp_path / "logs", tmp_path / "out", to_magic=1)
    assert list((tmp_path / "out").iterdir()) == []


def test_destination_rules(tmp_path):
    src = make_partition(tmp_path / "logs", "t-0", {0: v2_log()})
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "f").write_text("x")
    with pytest.raises(UsageError, match="new or empty"):
        convert(src, tmp_path / "busy", to_magic=1)
    with pytest.raises(UsageError, match="lies inside the partition dir .* of the input log dir") as e:
        convert(tmp_path / "logs", tmp_path / "logs" / "t-0" / "out", to_magic=1)
    assert e.value.field == "dst"
    with pytest.raises(UsageError, match="lies inside the partition dir .* of the input file"):
        convert(src / f"{0:020d}.log", src / "out", to_magic=1)
    with pytest.raises(UsageError, match="is the input partition dir"):  # DST/t-0 would be the input itself
        convert(src, tmp_path / "logs", to_magic=1)
    assert not (tmp_path / "logs" / "out").exists() and not (src / "out").exists()


def test_torn_tail_is_skipped_like_recovery_and_corruption_stops(tmp_path):
    good = v2_log(0, batches=3)
    torn = good + v2_log(15, batches=1)[:50]
    src = make_partition(tmp_path / "src", "t-0", {0: torn})
    (st,) = convert(src, tmp_path / "out", to_magic=1)
    assert st.trailing_bytes_skipped == 50 and any("skipped" in w for w in st.warnings)
    assert read_segments(tmp_path / "out" / "t-0") == down_convert(iter_batches(good), 1, 0).data
    first_size = len(v2_log(0, batches=1))
    bad = bytearray(good)
    bad[first_size + 70] ^= 0xFF  # a byte inside the second batch's records: its CRC fails
    src2 = make_partition(tmp_path / "src2", "t-0", {0: bytes(bad)})
    with pytest.raises(CorruptRecordError) as e:
        convert(src2, tmp_path / "out2", to_magic=1)
    assert e.value.position == first_size and e.value.path and e.value.path.endswith(f"{0:020d}.log")
    assert not (tmp_path / "out2").exists()
    zeros = make_partition(tmp_path / "src3", "t-0", {0: good + bytes(4096)})  # log.preallocate padding
    (st3,) = convert(zeros, tmp_path / "out3", to_magic=1)
    assert st3.trailing_bytes_skipped == 4096


def test_dry_run_reports_the_same_and_writes_nothing(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_txn_log(0), 30: v2_txn_log(30, codec=Codec.GZIP)})
    (dry,) = convert(src, tmp_path / "out", to_magic=0, dry_run=True, segment_bytes=500)
    assert not (tmp_path / "out").exists() and dry.output is None
    (real,) = convert(src, tmp_path / "out", to_magic=0, segment_bytes=500)
    skip = {"output", "elapsed_s", "peak_rss_bytes"}
    assert {k: v for k, v in dry.as_dict().items() if k not in skip} == {
        k: v for k, v in real.as_dict().items() if k not in skip}


def test_log_dir_input_converts_each_partition_and_skips_metadata_and_deleted(tmp_path):
    logs = tmp_path / "logs"
    make_partition(logs, "a-0", {0: v2_log()})
    make_partition(logs, "a-1", {0: v2_log(), 25: v2_log(25)})
    make_partition(logs, "__cluster_metadata-0", {0: v2_log()})
    make_partition(logs, "a-2.0123456789abcdef0123456789abcdef-delete", {0: v2_log()})
    (logs / "meta.properties").write_text("version=1\n")
    res = convert(logs, tmp_path / "out", to_magic=1)
    assert [r.partition for r in res] == ["a-0", "a-1"]
    # the partitions, the run file written before them and the completion marker written after them
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".kafkatool-convert.json", "_SUCCESS", "a-0", "a-1"]
    # a single segment file -> a partition dir named like its parent
    (one,) = convert(logs / "a-1" / f"{25:020d}.log", tmp_path / "one", to_magic=0)
    assert sorted(p.name for p in (tmp_path / "one" / "a-1").iterdir()) == [
        f"{25:020d}.index", f"{25:020d}.log", f"{25:020d}.timeindex", "leader-epoch-checkpoint",
        "partition.metadata"]


def test_copied_batch_larger_than_the_limit_is_an_error(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log(0, batches=1, per_batch=20)})
    with pytest.raises(LimitExceededError, match="copied unchanged"):
        convert(src, tmp_path / "out", to_magic=2, max_message_bytes=200)


def test_uncompressed_message_larger_than_the_limit_names_its_offset(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log(0, batches=2, per_batch=3, value_bytes=500)})
    with pytest.raises(LimitExceededError, match="record at offset 0 .*more than max.message.bytes 300"):
        convert(src, tmp_path / "out", to_magic=1, max_message_bytes=300)


def test_offsets_preserved_with_compaction_gaps(tmp_path):
    from kafkatool.record import default_records as v2

    gappy = v2.build_batch([(3, TS, b"a", b"1", ()), (7, TS + 1, b"b", b"2", ()), (20, TS + 2, None, None, ())],
                           base_offset=0, codec=Codec.GZIP)
    src = make_partition(tmp_path / "src", "t-0", {0: gappy})
    convert(src, tmp_path / "v1", to_magic=1)
    convert(tmp_path / "v1" / "t-0", tmp_path / "v2", to_magic=2)
    for d in ("v1", "v2"):
        assert [r[0] for r in records_of(read_segments(tmp_path / d / "t-0"))] == [3, 7, 20]
    (wrapper,) = iter_batches(read_segments(tmp_path / "v1" / "t-0"))
    inner = decompress(Codec.GZIP, wrapper.key_value()[1] or b"")
    rel, p = [], 0
    while p < len(inner):
        off, size = struct.unpack_from(">qi", inner, p)
        rel.append(off)
        p += 12 + size
    assert rel == [0, 4, 17] and wrapper.last_offset == 20  # v1: inner offsets relative, gaps kept


def test_up_splits_a_wrapper_whose_v2_batch_would_be_too_large(tmp_path):
    from kafkatool.record import legacy_records as legacy

    recs = [(i, TS + i, None, os.urandom(500)) for i in range(30)]
    wrapper = legacy.build_entries(recs, magic=1, codec=Codec.GZIP)
    src = make_partition(tmp_path / "src", "t-0", {0: wrapper})
    limit = len(wrapper) // 2
    (st,) = convert(src, tmp_path / "out", to_magic=2, codec=Codec.NONE, max_message_bytes=limit)
    batches = list(iter_batches(read_segments(tmp_path / "out" / "t-0")))
    assert st.counters.splits >= 1 and len(batches) >= 2 and all(b.size <= limit for b in batches)
    assert records_of(read_segments(tmp_path / "out" / "t-0")) == records_of(wrapper)
    with pytest.raises(LimitExceededError, match="record at offset 0"):
        convert(src, tmp_path / "tiny", to_magic=2, max_message_bytes=400)


def test_errors_inside_batches_name_the_segment_file(tmp_path):
    from kafkatool.record import default_records as v2

    good = v2.build_batch([(0, TS, b"k", b"v", ())])
    bad = bytearray(good)
    bad[61] = 0x20  # the record's length runs past the batch; the CRC is then fixed so only decoding fails
    struct.pack_into(">I", bad, 17, v2.crc32c(bytes(bad[21:])))
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log(0, 1) + bytes(bad)})
    with pytest.raises(KafkaToolError) as e:
        convert(src, tmp_path / "out", to_magic=1)
    assert e.value.path and e.value.path.endswith(f"{0:020d}.log")
    assert e.value.position is not None and e.value.position >= len(v2_log(0, 1))
    assert not (tmp_path / "out").exists()


def test_a_torn_tail_is_only_accepted_in_the_last_segment_and_magic_3_is_refused(tmp_path):
    torn = v2_log(0, batches=2) + v2_log(10, batches=1)[:40]
    src = make_partition(tmp_path / "src", "t-0", {0: torn, 15: v2_log(15, batches=1)})
    with pytest.raises(CorruptRecordError, match="not the last one") as e:
        convert(src, tmp_path / "out", to_magic=1)
    assert e.value.position == len(v2_log(0, batches=2)) and not (tmp_path / "out").exists()
    magic3 = bytearray(v2_log(0, batches=1))
    magic3[16] = 3  # outside the CRC: Kafka's file reader takes it for v2, its consumers reject it
    src3 = make_partition(tmp_path / "src3", "t-0", {0: bytes(magic3)})
    for to_magic in (1, 2):
        with pytest.raises(CorruptRecordError, match="Invalid magic found in record: 3"):
            convert(src3, tmp_path / f"out3-{to_magic}", to_magic=to_magic)


# --codec on batches that need no format change: re-encoded, never silently copied


@pytest.mark.parametrize("lat", [False, True])
def test_down_codec_reencodes_legacy_batches_already_at_the_target(tmp_path, lat):
    # v1 batches in a --to-magic 1 run and v0 batches in the same run keep their magic; --codec re-encodes
    # them as MemoryRecordsBuilder builds that codec (legacy_log builds every batch that way): a wrapper
    # becomes a wrapper of the same records, a run of uncompressed messages one wrapper (--batch-bytes).
    mixed = legacy_log(1, 0, batches=8, lat=lat) + legacy_log(0, 24, batches=4, codecs=(Codec.NONE, Codec.GZIP))
    src = make_partition(tmp_path / "src", "t-0", {0: mixed})
    (st,) = convert(src, tmp_path / "lz4", to_magic=1, codec=Codec.LZ4)
    got = read_segments(tmp_path / "lz4" / "t-0")
    assert got == legacy_log(1, 0, batches=8, lat=lat, codecs=(Codec.LZ4,)) + legacy_log(0, 24, batches=4,
                                                                                          codecs=(Codec.LZ4,))
    assert records_of(got) == records_of(mixed) and all(b.is_valid() for b in iter_batches(got))
    # source batches: v1 = 2 x 3 plain messages + 6 wrappers (2 of them lz4 already), v0 = 2 x 3 + 2 wrappers
    assert st.counters.codec_changed_batches == 6 + 4 + 6 + 2
    assert st.counters.recompressed_batches == st.counters.batches_built == 2 + 4 + 2 + 2
    assert st.counters.batches_copied == 2 and st.counters.records_in == st.counters.records_out == 36

    # --codec none: a wrapper becomes one message per record, in its own magic, timestamps and type kept.
    (st0,) = convert(src, tmp_path / "none", to_magic=1, codec=Codec.NONE)
    plain = read_segments(tmp_path / "none" / "t-0")
    assert plain == legacy_log(1, 0, batches=8, lat=lat, codecs=(Codec.NONE,)) + legacy_log(
        0, 24, batches=4, codecs=(Codec.NONE,))
    assert st0.counters.recompressed_batches == 0 and st0.counters.codec_changed_batches == 8


def test_down_codec_groups_plain_legacy_messages_up_to_batch_bytes(tmp_path):
    # Each uncompressed legacy message is a batch of its own; compressing them one by one would make
    # one-record wrappers. They are grouped by the producer's rules (KIP-126 estimate, --batch-bytes),
    # never across a change of log append time (one wrapper has one).
    data = legacy_log(1, 0, batches=200, codecs=(Codec.NONE,))
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    (st,) = convert(src, tmp_path / "gz", to_magic=1, codec=Codec.GZIP, batch_bytes=2048)
    out = list(iter_batches(read_segments(tmp_path / "gz" / "t-0")))
    assert 1 < len(out) < 100 and all(b.codec == Codec.GZIP and b.size <= 2048 for b in out)
    assert records_of(read_segments(tmp_path / "gz" / "t-0")) == records_of(data)
    assert st.counters.codec_changed_batches == 600 and st.counters.recompressed_batches == len(out)
    (one,) = convert(src, tmp_path / "one", to_magic=1, codec=Codec.GZIP, batch_bytes=0)
    assert one.counters.batches_out == 600  # --batch-bytes 0: one wrapper per message
    lat = legacy_log(1, 0, batches=5, codecs=(Codec.NONE,), lat=True)
    convert(make_partition(tmp_path / "src2", "t-0", {0: lat}), tmp_path / "lat", to_magic=1, codec=Codec.GZIP)
    wrappers = list(iter_batches(read_segments(tmp_path / "lat" / "t-0")))
    assert [b.max_timestamp for b in wrappers] == [TS + 5000 + i for i in range(5)]
    assert records_of(read_segments(tmp_path / "lat" / "t-0")) == records_of(lat)


def test_down_codec_reencoded_wrapper_is_split_when_too_large(tmp_path):
    from kafkatool.record import legacy_records as legacy

    recs = [(i, TS + i, None, os.urandom(500)) for i in range(30)]
    wrapper = legacy.build_entries(recs, magic=1, codec=Codec.LZ4)
    src = make_partition(tmp_path / "src", "t-0", {0: wrapper})
    limit = len(wrapper) // 2
    (st,) = convert(src, tmp_path / "out", to_magic=1, codec=Codec.GZIP, max_message_bytes=limit)
    batches = list(iter_batches(read_segments(tmp_path / "out" / "t-0")))
    assert st.counters.splits >= 1 and len(batches) >= 2
    assert all(b.size <= limit and b.codec == Codec.GZIP and b.magic == 1 for b in batches)
    assert records_of(read_segments(tmp_path / "out" / "t-0")) == records_of(wrapper)


def _header_fields(b):
    return (b.base_offset, b.last_offset, b.partition_leader_epoch, b.timestamp_type, b.base_timestamp,
            b.max_timestamp, b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional, b.is_control,
            b.delete_horizon_ms, b.records_count)


def test_up_codec_reencodes_v2_batches_keeping_every_header_field(tmp_path):
    from kafkatool.record import default_records as v2

    txn = v2_txn_log(0, batches=6, codec=Codec.LZ4)
    # a compacted batch: base offset below its first record, last offset past its last one, delete horizon set
    compacted = v2.build_batch([(64, TS + 1, b"a", b"1" * 50, ()), (66, TS + 3, None, b"2" * 50, ())],
                               base_offset=62, codec=Codec.SNAPPY, producer_id=9, producer_epoch=4,
                               base_sequence=100, partition_leader_epoch=7, delete_horizon_ms=TS + 86_400_000,
                               override_last_offset=68)
    lat = v2_log(69, batches=2, codec=Codec.GZIP, lat=True)
    data = txn + compacted + lat
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    (st,) = convert(src, tmp_path / "out", to_magic=2, codec=Codec.ZSTD)
    out = read_segments(tmp_path / "out" / "t-0")
    before, after = list(iter_batches(data)), list(iter_batches(out))
    assert [_header_fields(b) for b in after] == [_header_fields(b) for b in before]
    for a, b in zip(after, before, strict=True):
        assert a.is_valid()
        assert a.records_bytes() == b.records_bytes() and a.records() == b.records()
        # control batches stay as Kafka writes them: uncompressed, byte for byte
        assert a.codec == (Codec.NONE if b.is_control else Codec.ZSTD)
        if b.is_control:
            assert bytes(a.raw()) == bytes(b.raw())
    data_batches = [b for b in before if not b.is_control]
    assert st.counters.recompressed_batches == st.counters.codec_changed_batches == len(data_batches) == 9
    assert st.counters.batches_copied == 6 and st.counters.records_out == st.counters.records_in

    # codec to codec is what the builder writes for that codec, byte for byte
    convert(src, tmp_path / "gz", to_magic=2, codec=Codec.GZIP)
    assert read_segments(tmp_path / "gz" / "t-0").startswith(v2_txn_log(0, batches=6, codec=Codec.GZIP))
    plain = make_partition(tmp_path / "src2", "t-0", {0: v2_txn_log(0, codec=Codec.GZIP)})
    convert(plain, tmp_path / "none", to_magic=2, codec=Codec.NONE)
    assert read_segments(tmp_path / "none" / "t-0") == v2_txn_log(0, codec=Codec.NONE)


def test_up_codec_split_keeps_producer_sequences_and_the_last_offset(tmp_path):
    from kafkatool.record import default_records as v2

    recs = [(10 + 2 * i, TS + i, f"k{i}".encode(), os.urandom(300), [("h", b"v")]) for i in range(20)]
    big = v2.build_batch(recs, base_offset=8, codec=Codec.LZ4, producer_id=5, producer_epoch=2,
                         base_sequence=2**31 - 12, is_transactional=True, partition_leader_epoch=4,
                         override_last_offset=52)
    src = make_partition(tmp_path / "src", "t-0", {8: big})
    limit = len(big) // 2
    (st,) = convert(src, tmp_path / "out", to_magic=2, codec=Codec.NONE, max_message_bytes=limit)
    out = list(iter_batches(read_segments(tmp_path / "out" / "t-0")))
    assert st.counters.splits >= 1 and len(out) >= 2 and all(b.size <= limit and b.is_valid() for b in out)
    (orig,) = iter_batches(big)
    assert [r for b in out for r in b.records()] == orig.records()  # offsets, sequences (wrapping), headers
    assert out[0].base_offset == 8 and out[-1].last_offset == 52 and out[-1].last_sequence == orig.last_sequence
    assert {(b.producer_id, b.producer_epoch, b.is_transactional, b.partition_leader_epoch, b.codec)
            for b in out} == {(5, 2, True, 4, Codec.NONE)}


def test_codec_keep_or_same_codec_still_copies(tmp_path):
    data = legacy_log(1, 0, batches=4, codecs=(Codec.GZIP,))
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    (st,) = convert(src, tmp_path / "same", to_magic=1, codec=Codec.GZIP)
    assert read_segments(tmp_path / "same" / "t-0") == data and st.counters.batches_copied == 4
    v2src = make_partition(tmp_path / "src2", "t-0", {0: v2_txn_log(0)})
    (up,) = convert(v2src, tmp_path / "up", to_magic=2)
    assert read_segments(tmp_path / "up" / "t-0") == v2_txn_log(0) and up.counters.batches_built == 0


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def test_peak_memory_is_each_partitions_own(tmp_path, monkeypatch):
    # Between the two partitions the process holds 256 MiB and frees it. The second partition's peak is
    # its own (VmHWM reset before it); where the mark cannot be reset the summary says it is the process's.
    from kafkatool.convert.engine import ConvertObserver

    logs = tmp_path / "logs"
    make_partition(logs, "a-0", {0: v2_log()})
    make_partition(logs, "a-1", {0: v2_log()})
    balloon = 256 << 20
    held: list[int] = []

    class Balloon(ConvertObserver):
        def partition_done(self, stats):
            if stats.partition == "a-0":
                b = bytearray(balloon)
                b[::4096] = b"\x01" * (balloon // 4096)  # touch every page: RSS grows by 256 MiB
                held.append(_rss())
                del b

    first, second = convert_log(logs, tmp_path / "out", ConvertOptions(to_magic=1), Balloon())
    assert held[0] > second.peak_rss_bytes
    if second.peak_rss_scope == "partition":  # Linux with /proc/self/clear_refs (the machines this runs on)
        assert second.peak_rss_bytes < held[0] - balloon // 2
    else:
        assert second.peak_rss_bytes >= held[0]
    assert first.peak_rss_scope == second.peak_rss_scope and first.as_dict()["peak_rss_scope"] in (
        "partition", "process")
    # Without the reset the figure is the process's peak (getrusage), and the summary says which it is.
    monkeypatch.setattr("kafkatool.convert.engine._CLEAR_REFS", str(tmp_path / "no-such-dir" / "clear_refs"))
    rss = _rss()
    (third,) = convert(logs / "a-0", tmp_path / "out2", to_magic=1)
    assert third.peak_rss_scope == "process" and third.peak_rss_bytes >= rss - (1 << 20)  # counters lag a little


@pytest.mark.parametrize("to_magic,kw", [(1, {}), (0, {"codec": Codec.GZIP}), (1, {"codec": Codec.LZ4}),
                                         (2, {}), (2, {"codec": Codec.SNAPPY, "batch_bytes": 700})])
def test_output_is_the_same_whatever_the_chunk_size(tmp_path, to_magic, kw):
    # Chunks bound memory only: every file and every figure of the summary but time and memory are the same.
    data = (v2_txn_log(0, codec=Codec.GZIP) + legacy_log(1, 30, batches=12) + v2_log(66, batches=6, per_batch=7)
            + legacy_log(0, 108, batches=6, codecs=(Codec.NONE,)))
    src = make_partition(tmp_path / "src", "t-0", {0: data, 126: v2_log(126, batches=3, codec=Codec.LZ4)})
    results = {}
    for chunk in (1, 100, 1000, 4096, 128 * 1024, 64 << 20):
        (st,) = convert(src, tmp_path / f"out{chunk}", to_magic=to_magic, chunk_size=chunk, segment_bytes=900, **kw)
        out = tmp_path / f"out{chunk}" / "t-0"
        files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
        summary = {k: v for k, v in st.as_dict().items() if k not in ("output", "elapsed_s", "peak_rss_bytes")}
        results[chunk] = (files, summary)
    first = results[1]
    assert len(first[0]) > 6  # several rolled segments with their indexes
    assert all(r == first for r in results.values())


@pytest.mark.parametrize("kw", [{"to_magic": 2}, {"to_magic": 2, "codec": Codec.GZIP},
                                {"to_magic": 1, "codec": Codec.GZIP}, {"to_magic": 0, "codec": Codec.LZ4}],
                         ids=["up", "up-gzip", "down1-gzip", "down0-lz4"])
def test_grouped_legacy_messages_never_span_more_than_an_int32_of_offsets(tmp_path, kw):
    # The fuzzers' first crashes: uncompressed messages int32-far apart grouped into one v2 batch (its
    # lastOffsetDelta is an int32: struct.error) or one wrapper (which no segment can index: the output failed our
    # own recovery). A group ends before such a message; INT32_MAX itself still fits, and the writer rolls there.
    from kafkatool.constants import INT32_MAX
    from kafkatool.record import legacy_records as legacy

    far = INT32_MAX + 1
    offsets = [0, 1, INT32_MAX, far, far + 5]
    data = legacy.build_entries([(o, TS + i, b"k", b"value-%d" % i) for i, o in enumerate(offsets)],
                                magic=min(kw["to_magic"], 1))  # downconvert groups messages already at its magic
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    convert(src, tmp_path / "out", batch_bytes=1 << 20, **kw)
    out = tmp_path / "out" / "t-0"
    assert sorted(p.name for p in out.glob("*.log")) == [f"{0:020d}.log", f"{far:020d}.log"]
    groups = [[r.offset for r in b.records()] for b in iter_batches((out / f"{0:020d}.log").read_bytes())]
    assert groups == [[0, 1, INT32_MAX]]
    assert [[r.offset for r in b.records()] for b in iter_batches((out / f"{far:020d}.log").read_bytes())] == [
        [far, far + 5]]
    for base in (0, far):
        assert recover_segment(out / f"{base:020d}.log", base).error is None


@pytest.mark.parametrize("to_magic", [0, 1])
def test_output_is_the_same_whatever_the_write_block(tmp_path, to_magic, monkeypatch):
    # The compiled run converts straight into the write buffer (the budget's output share) and stops before a
    # batch that does not fit; the next run starts with it (a first batch larger than the room is returned as
    # bytes). Blocks of 128 KiB (through the page cache), ~500 KiB and 4 MiB (O_DIRECT), and the pure-Python
    # path, write the same files.
    from kafkatool.util import budget
    from kafkatool.util.direct_io import MIN_DIRECT

    data = (v2_log(0, batches=500, per_batch=16, value_bytes=600)
            + v2_log(8000, batches=60, per_batch=16, value_bytes=600, codec=Codec.LZ4)
            + v2_log(8960, batches=4, per_batch=400, value_bytes=600))  # 250 KB a batch: above the smaller rooms
    src = make_partition(tmp_path / "src", "t-0", {0: data})
    outputs = {}
    for name, total in (("128KiB", budget.minimum_total()), ("500KiB", 72 << 20), ("4MiB", None)):
        plan = budget.plan(total)
        previous = budget.activate(plan)
        try:
            (st,) = convert(src, tmp_path / name, to_magic=to_magic)
        finally:
            budget.activate(previous)
        outputs[name] = tree_digest(tmp_path / name)
        assert st.bytes_out > plan.worker.output_bytes  # the run filled the buffer at least once
    small, middle = budget.plan(budget.minimum_total()).worker, budget.plan(72 << 20).worker
    assert small.output_bytes < MIN_DIRECT < middle.output_bytes < (4 << 20)
    monkeypatch.setattr("kafkatool.convert.engine._C", None)
    convert(src, tmp_path / "pure", to_magic=to_magic)
    assert outputs["128KiB"] == outputs["500KiB"] == outputs["4MiB"] == tree_digest(tmp_path / "pure")
    got = records_of(read_segments(tmp_path / "4MiB" / "t-0"))
    assert [(o, k, v) for o, _, k, v in got] == [(o, k, v) for o, _, k, v in records_of(data)]


def test_a_batch_the_run_refuses_is_not_converted_twice(tmp_path, monkeypatch):
    # Batches refused for another reason than the room (here: each would roll the output segment, which the Python
    # path does) are not run again without the room: one compiled attempt each, then the Python path.
    from kafkatool.convert import engine

    real = engine._C
    calls: list[int] = []

    class Counting:
        def __getattr__(self, name):
            return getattr(real, name)

        def downconvert_run(self, *a):
            calls.append(len(a))
            return real.downconvert_run(*a)

    monkeypatch.setattr(engine, "_C", Counting())
    src = make_partition(tmp_path / "src", "t-0", {0: v2_log(0, batches=20, per_batch=4, value_bytes=300,
                                                             codec=Codec.LZ4)})
    (st,) = convert(src, tmp_path / "out", to_magic=1, segment_bytes=300)
    assert st.segments_out >= 10 and calls and set(calls) == {18}  # every run had the room; none was run again


def test_a_failed_run_closes_the_segment_it_was_writing(tmp_path):
    data = v2_log(0, batches=30, per_batch=16, value_bytes=600)
    # a torn batch ending a segment that is not the last: the run stops there, the first segment's output written
    src = make_partition(tmp_path / "src", "t-0", {0: data, 480: v2_log(480, batches=2)[:-7], 490: v2_log(490)})
    open_before = _fds_under(tmp_path)
    with pytest.raises(CorruptRecordError) as e:  # its traceback keeps the run's frames (and writer) alive
        convert(src, tmp_path / "out", to_magic=1)
    assert e.value.position is not None
    assert _fds_under(tmp_path) == open_before and not (tmp_path / "out").exists()


def _fds_under(root) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(root)):
            out.append(target)
    return sorted(out)
