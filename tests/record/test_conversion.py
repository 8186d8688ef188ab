"""Units of the conversion: RecordsUtil.downConvert (fast v2 -> legacy path against Kafka 3.9.1's golden
bytes and against the MemoryRecordsBuilder emulation), KIP-283 chunking, the KIP-126 estimator."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool.errors import InvalidRecordError, LimitExceededError
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import encode_record
from kafkatool.record.down_convert import ZstdDownConversionError, down_convert, iter_chunks, reframe_v2_batch
from kafkatool.record.estimator import (
    BatchPlanner,
    CompressionRatioEstimator,
    build_within_limit,
    f32,
    legacy_entry_size,
    plan_groups,
    upper_bound_size,
    v2_record_size,
)
from kafkatool.record.file_records import iter_batches
from tests.support.paths import VECTORS, golden

G = golden()
TS = 1_700_000_000_000
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def golden_line(prefix: str) -> str:
    for line in (VECTORS / "kafka-3.9.1-golden.txt").read_text().splitlines():
        if line.startswith(prefix):
            return line.split("hex=", 1)[1]
    raise KeyError(prefix)


# ---------------------------------------------------------------------------------------------- downConvert

@pytest.mark.parametrize("to_magic,first_offset,message_bytes", [(1, 101, 74), (0, 100, 88)])
def test_down_convert_matches_kafka_golden_bytes(to_magic, first_offset, message_bytes):
    # Kafka 3.9.1 LazyDownConversionRecordsSend output for src_v2_none_3rec_hdr (spec Appendix A): its first
    # ``message_bytes`` are RecordsUtil.downConvert's messages, the rest an overflow batch.
    src = G["src_v2_none_3rec_hdr(base100)"]
    expected = bytes.fromhex(golden_line(f"down v2none->v{to_magic} first={first_offset} hex="))[:message_bytes]
    out = down_convert(iter_batches(src), to_magic, first_offset)
    assert out.data == expected
    assert out.records_filtered == first_offset - 100
    assert out.headers_dropped == 3 - out.records_filtered


def test_down_convert_drops_markers_and_refuses_zstd():
    line = next(x for x in (VECTORS / "kafka-3.9.1-golden.txt").read_text().splitlines()
                if x.startswith("v2_commit_marker"))
    marker = bytes.fromhex(line.split("=", 1)[1].split()[0])
    out = down_convert(iter_batches(marker), 1, 0)
    assert out.data == b"" and out.control_batches_dropped == 1
    with pytest.raises(ZstdDownConversionError, match="zstandard"):
        down_convert(iter_batches(G["v2_zstd_3rec"]), 1, 0)
    gz = down_convert(iter_batches(G["v2_zstd_3rec"]), 1, 0, codec_override=Codec.GZIP)
    (b,) = iter_batches(gz.data)
    assert b.codec == Codec.GZIP and [r.value for r in b.records()] == [b"v1", b"v2", b"v3"]


small = st.binary(max_size=40)
nullable = st.none() | small


@st.composite
def v2_batches(draw):
    n = draw(st.integers(min_value=1, max_value=12))
    off = draw(st.integers(min_value=0, max_value=2**40))
    recs = []
    for _ in range(n):
        headers = draw(st.lists(st.tuples(st.text(max_size=4), nullable), max_size=2))
        recs.append((off, draw(st.integers(min_value=-1, max_value=2**41)), draw(nullable), draw(nullable), headers))
        off += draw(st.integers(min_value=1, max_value=3))
    lat = draw(st.booleans())
    codec = draw(st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]))
    return v2.build_batch(recs, codec=codec, timestamp_type=TimestampType.LOG_APPEND_TIME if lat else
                          TimestampType.CREATE_TIME, log_append_time=TS + 7, producer_id=5, base_sequence=0)


@SETTINGS
@given(data=v2_batches(), to_magic=st.sampled_from([0, 1]), codec=st.sampled_from(
    [None, Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]), first=st.integers(min_value=0, max_value=2**40 + 20))
def test_fast_reframe_equals_memory_records_builder(data, to_magic, codec, first):
    """The hot path writes the bytes of the MemoryRecordsBuilder emulation (build_entries), which is
    byte-identical to Kafka for uncompressed output (test_records, interop)."""
    (batch,) = iter_batches(data)
    out_codec = batch.codec if codec is None else codec
    records = batch.records()
    if not batch.is_compressed:
        records = [r for r in records if r.offset >= first]
    expected = legacy.build_entries([(r.offset, r.timestamp, r.key, r.value) for r in records], magic=to_magic,
                                    codec=out_codec, timestamp_type=batch.timestamp_type,
                                    log_append_time=batch.max_timestamp) if records else b""
    got = reframe_v2_batch(batch, to_magic, first, out_codec)
    assert got.data == expected
    assert got.records == len(records)
    if records:
        assert (got.first_offset, got.last_offset) == (records[0].offset, records[-1].offset)
    assert got.with_headers == sum(1 for r in records if r.headers)


def test_fast_reframe_rejects_malformed_records_like_kafka():
    good = v2.build_batch([(0, TS, b"k", b"v", ())])
    bad = bytearray(good)
    bad[61] = 0x20  # record length 16 instead of 8: runs past the batch
    (batch,) = iter_batches(bytes(bad))
    with pytest.raises(InvalidRecordError):
        reframe_v2_batch(batch, 1, 0, Codec.NONE)


def test_iter_chunks_groups_like_lazy_down_conversion_records():
    batches = list(iter_batches(b"".join(v2.build_batch([(i, TS, None, b"x" * 30, ())]) for i in range(7))))
    size = batches[0].size  # 100 bytes
    assert [len(c) for c in iter_chunks(batches, 3 * size)] == [3, 3, 1]
    assert [len(c) for c in iter_chunks(batches, 3 * size - 1)] == [2, 2, 2, 1]
    assert [len(c) for c in iter_chunks(batches, 1)] == [1] * 7  # always at least one batch


# ---------------------------------------------------------------------------------------------- KIP-126

def test_estimator_follows_kafka_golden_sequence():
    # kafka-clients 3.9.1 CompressionRatioEstimator (golden run): 1.0 ->(0.2) 0.995 ->(1.3) 1.3 ->(1.0) 1.295
    assert G  # the vectors file is present
    lines = dict(line.split("=", 1) for line in (VECTORS / "kafka-3.9.1-golden.txt").read_text().splitlines()
                 if line.startswith("estimator"))
    e = CompressionRatioEstimator()
    assert e.estimation("t", Codec.GZIP) == float(lines["estimator start"])
    for obs in ("0.2", "1.3", "1.0"):
        got = e.update_estimation("t", Codec.GZIP, float(obs))
        assert got == f32(float(lines[f"estimator after obs {obs}"]))
    assert e.estimation("t", Codec.LZ4) == 1.0 and e.estimation("u", Codec.GZIP) == 1.0  # per topic and codec


@SETTINGS
@given(od=st.integers(min_value=0, max_value=2**31 - 1), td=st.integers(min_value=-(2**40), max_value=2**40),
       key=nullable, value=nullable, headers=st.lists(st.tuples(st.text(max_size=5), nullable), max_size=3))
def test_record_sizes_match_the_encoders(od, td, key, value, headers):
    assert v2_record_size(od, td, key, value, headers) == len(encode_record(od, td, key, value, headers))
    for magic in (0, 1):
        assert legacy_entry_size(magic, key, value) == len(legacy.build_entries([(0, TS, key, value)], magic=magic))
    assert upper_bound_size(2, Codec.GZIP, key, value, tuple(headers)) >= len(
        v2.build_batch([(0, TS, key, value, headers)]))


def test_planner_room_and_estimate():
    p = BatchPlanner(2, Codec.GZIP, 1000, 0.5)
    assert p.has_room_for(5000)  # the first record always fits
    p.append(800)
    # Java float: 400 * 1.05f = 419.99998 -> (int) 419, so 480, not 481.
    assert p.estimated_bytes_written() == 61 + int(f32(f32(800 * 0.5) * f32(1.05))) == 480
    assert p.has_room_for(520) and not p.has_room_for(521)
    none = BatchPlanner(1, Codec.NONE, 100, 0.1)
    none.append(90)
    assert none.estimated_bytes_written() == 90 and not none.has_room_for(11)


def test_split_keeps_every_batch_under_the_limit_and_names_a_too_large_record():
    import os

    recs = [(i, TS + i, None, os.urandom(300), ()) for i in range(40)]  # incompressible

    def build(rs):
        return legacy.build_entries([(r[0], r[1], r[2], r[3]) for r in rs], magic=1, codec=Codec.GZIP)

    big = build(recs)
    unc = sum(legacy_entry_size(1, r[2], r[3]) for r in recs)
    e = CompressionRatioEstimator()
    res = build_within_limit(recs, big, unc, magic=1, codec=Codec.GZIP, max_bytes=4000, split_size=4000,
                             estimator=e, topic="t", build=build, describe_offset=lambda r: str(r[0]))
    assert res.splits >= 1 and len(res.batches) > 1
    assert all(len(b) <= 4000 for b, _ in res.batches)
    assert [r for _, rs in res.batches for r in rs] == recs
    # reset to max(1.0, big ratio), then each split batch improves it by at most 0.005
    assert 1.0 - 0.005 * len(res.batches) - 1e-6 <= e.estimation("t", Codec.GZIP) < 1.05
    with pytest.raises(LimitExceededError, match="record at offset 0"):
        build_within_limit(recs[:1], build(recs[:1]), unc, magic=1, codec=Codec.GZIP, max_bytes=100,
                           split_size=100, estimator=e, topic="t", build=build, describe_offset=lambda r: str(r[0]))


def test_plan_groups_cuts_by_estimate():
    recs = [(i, TS, None, b"a" * 100, ()) for i in range(100)]
    groups = plan_groups(recs, magic=2, codec=Codec.NONE, write_limit=1000, ratio=1.0, split=False)
    assert [len(g) for g, _ in groups] == [8] * 12 + [4]  # 61 + 8 x 112 = 957; a 9th record would pass 1000
    assert sum(len(g) for g, _ in groups) == 100


def test_split_rate_counts_a_batch_split_twice_once(monkeypatch):
    # A batch whose split parts are still too large is split again: Kafka's producer counts one batch
    # that had to be split; the rate is per planned batch, not per split event.
    from kafkatool.convert import engine as convert_mod
    from kafkatool.convert.engine import ConvertOptions, DownConverter, PartitionStats
    from kafkatool.record.batch import Record, TimestampType
    from kafkatool.record.up_convert import ConversionCounters

    c = ConversionCounters()
    conv = DownConverter(ConvertOptions(to_magic=1, max_message_bytes=2500), CompressionRatioEstimator(), "t", c)
    recs = [Record(i, TS + i, None, b"x" * 100) for i in range(8)]
    # A codec that does worse than every estimate: 1300 bytes a record, so pairs planned to fit do not.
    monkeypatch.setattr(convert_mod, "build_entries", lambda rs, **kw: bytes(1300 * len(rs)))
    units = conv._within_limit(recs, bytes(1300 * 8), 8 * 134, Codec.GZIP, 1, TimestampType.CREATE_TIME, -1)
    assert len(units) == 8 and c.splits > 1 and c.batches_split == 1 and c.split_batches == 8
    for i in range(4):  # four batches that fit
        conv._within_limit(recs[i:i + 1], bytes(1300), 134, Codec.GZIP, 1, TimestampType.CREATE_TIME, -1)
    stats = PartitionStats("t-0", "src", None, 1, counters=c)
    assert c.batches_built == 12 and c.splits == 5
    assert stats.split_rate == 1 / 5  # 5 planned batches, 1 of them split (split events would say 5/9)
    assert stats.as_dict()["batches_split"] == 1
