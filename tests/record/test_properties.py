"""Property tests (hypothesis): round trips over every format and codec, and arbitrary bytes never
escape the error tree. The coverage-guided fuzzers in ``fuzz/`` push the same entry points harder."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool.errors import KafkaToolError
from kafkatool.record import codecs
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import LogInputStream

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

small_bytes = st.binary(max_size=64)
nullable = st.none() | small_bytes
header = st.tuples(st.text(max_size=8), nullable)
timestamps = st.integers(min_value=0, max_value=2**41)


@st.composite
def record_lists(draw, with_headers: bool = True):
    n = draw(st.integers(min_value=1, max_value=20))
    first = draw(st.integers(min_value=0, max_value=2**40))
    gaps = draw(st.lists(st.integers(min_value=1, max_value=5), min_size=n, max_size=n))
    offsets = [first]
    for g in gaps[1:]:
        offsets.append(offsets[-1] + g)
    out = []
    for off in offsets:
        hs = draw(st.lists(header, max_size=3)) if with_headers else []
        out.append((off, draw(timestamps), draw(nullable), draw(nullable), hs))
    return out


@SETTINGS
@given(recs=record_lists(), codec=st.sampled_from(list(Codec)), lat=st.booleans(),
       pid=st.integers(min_value=-1, max_value=2**40), seq=st.integers(min_value=-1, max_value=2**31 - 1),
       txn=st.booleans(), ple=st.integers(min_value=-1, max_value=2**31 - 1))
def test_v2_round_trip(recs, codec, lat, pid, seq, txn, ple):
    ts_type = TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME
    data = v2.build_batch(recs, codec=codec, timestamp_type=ts_type, log_append_time=123, producer_id=pid,
                          base_sequence=seq, is_transactional=txn, partition_leader_epoch=ple)
    (batch,) = list(LogInputStream(data))
    batch.ensure_valid()
    assert batch.codec == codec and batch.is_transactional == txn and batch.partition_leader_epoch == ple
    assert batch.last_offset == recs[-1][0] and batch.count == len(recs)
    got = batch.records()
    assert [r.offset for r in got] == [r[0] for r in recs]
    assert [r.key for r in got] == [r[2] for r in recs]
    assert [r.value for r in got] == [r[3] for r in recs]
    assert [[tuple(h) for h in r.headers] for r in got] == [[tuple(h) for h in r[4]] for r in recs]
    if lat:
        assert all(r.timestamp == 123 for r in got)
    else:
        assert [r.timestamp for r in got] == [r[1] for r in recs]
        assert batch.max_timestamp == max(r[1] for r in recs)


@SETTINGS
@given(recs=record_lists(with_headers=False), magic=st.sampled_from([0, 1]),
       codec=st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]), lat=st.booleans())
def test_legacy_round_trip(recs, magic, codec, lat):
    ts_type = TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME
    data = legacy.build_entries([r[:4] for r in recs], magic=magic, codec=codec, timestamp_type=ts_type,
                                log_append_time=777)
    batches = list(LogInputStream(data))
    got = [r for b in batches for r in b.records()]
    for b in batches:
        b.ensure_valid()
    assert [r.offset for r in got] == [r[0] for r in recs]
    assert [(r.key, r.value) for r in got] == [(r[2], r[3]) for r in recs]
    if magic == 0:
        assert {r.timestamp for r in got} == {-1}
    elif lat:
        assert {r.timestamp for r in got} == {777}
    else:
        assert [r.timestamp for r in got] == [r[1] for r in recs]


@SETTINGS
@given(data=st.binary(max_size=4096), codec=st.sampled_from(list(Codec)), magic=st.sampled_from([0, 1, 2]))
def test_codec_round_trip(data, codec, magic):
    if codec == Codec.ZSTD:
        magic = 2
    assert codecs.decompress(codec, codecs.compress(codec, data, magic=magic), magic=magic) == data


@SETTINGS
@given(garbage=st.binary(max_size=512), codec=st.sampled_from(list(Codec)))
def test_decompress_garbage_only_raises_domain_errors(garbage, codec):
    try:
        codecs.decompress(codec, garbage, limit=1 << 16)
    except KafkaToolError:
        pass


def _mutations():
    base = v2.build_batch([(5, 1000, b"k", b"v" * 30, [("h", b"x")]), (6, 1001, None, b"w", [])],
                          codec=Codec.NONE)
    return st.lists(st.tuples(st.integers(min_value=0, max_value=len(base) - 1),
                              st.integers(min_value=0, max_value=255)), max_size=6).map(
        lambda edits: _apply(base, edits))


def _apply(base: bytes, edits: list[tuple[int, int]]) -> bytes:
    out = bytearray(base)
    for pos, val in edits:
        out[pos] = val
    # Re-seal the CRC so the mutation reaches the record parser rather than stopping at the checksum.
    if len(out) >= 61:
        struct.pack_into(">I", out, 17, v2.crc32c(bytes(out[21:])))
    return bytes(out)


@SETTINGS
@given(data=_mutations() | st.binary(max_size=300))
def test_arbitrary_bytes_never_escape_the_error_tree(data):
    stream = LogInputStream(data)
    try:
        for batch in stream:
            batch.is_valid()
            batch.records(limit=1 << 16)
    except KafkaToolError:
        pass
    assert stream.end_state is None or 0 <= stream.end_state.trailing_bytes <= len(data)
