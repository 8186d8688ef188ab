"""The fast paths give exactly what the straightforward code gives: records, errors, walk ends.

Oracles: ``tests/support/reference_impl.py`` (the straightforward ``parse_records`` and legacy deep read),
``batches()`` + ``ensure_valid()`` for ``verify_segment``, and ``encode_message`` + ``encode_entry`` per
record for ``build_entries``. Inputs are random segments mixing v0/v1/v2,
codecs, control and empty batches, then damaged (flipped bytes, cut tails, junk).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool.errors import KafkaToolError
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import FileRecords, LogInputStream, verify_segment
from tests.support import reference_impl as ref

TS = 1_700_000_000_000
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

small_bytes = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=60, max_size=300))
headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))), max_size=2)


@st.composite
def v2_batch(draw: st.DrawFn, base: int) -> bytes:
    n = draw(st.integers(1, 6))
    recs = []
    off = base
    for _ in range(n):
        off += draw(st.integers(1, 90))  # deltas beyond 63 need two-byte varints
        recs.append((off, TS + draw(st.integers(-100, 20000)), draw(small_bytes), draw(small_bytes),
                     draw(headers)))
    codec = draw(st.sampled_from([Codec.NONE, Codec.NONE, Codec.NONE, Codec.LZ4, Codec.GZIP]))
    lat = draw(st.booleans())
    return v2.build_batch(recs, codec=codec,
                          timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
                          log_append_time=TS + 5, partition_leader_epoch=draw(st.integers(-1, 4)),
                          producer_id=draw(st.sampled_from([-1, 7])), base_sequence=draw(st.sampled_from(
                              [-1, 0, 0x7FFFFFFF - 2])))


@st.composite
def segment(draw: st.DrawFn) -> bytes:
    parts = []
    offset = draw(st.integers(0, 50))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["v2", "v2", "v2", "legacy", "empty", "control"]))
        if kind == "v2":
            data = draw(v2_batch(offset))
        elif kind == "legacy":
            magic = draw(st.integers(0, 1))
            recs = [(offset + i + 1, TS + i, draw(small_bytes), draw(small_bytes))
                    for i in range(draw(st.integers(1, 3)))]
            data = legacy.build_entries(recs, magic=magic, codec=draw(st.sampled_from([Codec.NONE, Codec.GZIP])))
        elif kind == "empty":
            data = v2.build_empty_batch(base_offset=offset + 1, last_offset_delta=draw(st.integers(0, 5)),
                                        max_timestamp=TS, producer_id=3, producer_epoch=0, base_sequence=0,
                                        is_transactional=True)
        else:
            data = v2.build_end_txn_marker(offset=offset + 1, timestamp=TS, producer_id=3, producer_epoch=0,
                                           commit=True, coordinator_epoch=1)
        parts.append(data)
        offset += 200
    data = bytearray(b"".join(parts))
    for _ in range(draw(st.integers(0, 3))):  # damage: flipped bytes, anywhere (sizes, magics, CRCs, records)
        if data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
    if data and draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]
    data += draw(st.binary(max_size=30)) if draw(st.integers(0, 4)) == 0 else b""
    return bytes(data)


@contextmanager
def as_file(data: bytes) -> Iterator[str]:
    fd, path = tempfile.mkstemp(suffix=".log")
    try:
        os.write(fd, data)
        os.close(fd)
        yield path
    finally:
        os.unlink(path)


def err(e: BaseException | None) -> tuple[object, ...] | None:
    if e is None:
        return None
    assert isinstance(e, KafkaToolError)
    return type(e), e.message, e.position, e.path


def reference_verify(path: str) -> tuple[object, ...]:
    """``for b in batches(): b.ensure_valid()``, going on past invalid batches."""
    errors = []
    batches = records = unknown = 0
    walk_error = None
    with FileRecords(path) as fr:
        stream = fr.batches()
        try:
            for b in stream:
                batches += 1
                if b.count is not None:
                    if b.size >= 61:
                        records += b.count
                elif b.is_compressed:
                    unknown += 1
                else:
                    records += 1
                try:
                    b.ensure_valid()
                except KafkaToolError as e:
                    errors.append(err(e.at(fr.path)))
        except KafkaToolError as e:
            walk_error = err(e)
        return batches, records, unknown, stream.position, errors, stream.end_state, walk_error


@SETTINGS
@given(data=segment())
def test_verify_segment_equals_ensure_valid_walk(data: bytes) -> None:
    with as_file(data) as path:
        v = verify_segment(path)
        assert (v.batches, v.records, v.unknown_counts, v.valid_bytes, [err(e) for e in v.invalid], v.stop,
                err(v.walk_error)) == reference_verify(path)
        assert v.ok == (not v.invalid and v.walk_error is None)


def test_verify_segment_reports_every_bad_crc_and_goes_on() -> None:
    good = v2.build_batch([(0, TS, b"k", b"v", ())])
    bad = bytearray(good)
    bad[-1] ^= 1
    with as_file(good + bytes(bad) + good + bytes(bad) + good[:30]) as path:
        v = verify_segment(path)
    assert v.batches == 4 and [e.position for e in v.invalid] == [len(good), 3 * len(good)]
    assert "stored crc" in v.invalid[0].message and v.error is v.invalid[0] and not v.ok
    assert v.stop is not None and v.stop.kind == "size-past-end" and v.valid_bytes == 4 * len(good)


@st.composite
def records_area(draw: st.DrawFn) -> tuple[bytes, int]:
    recs = []
    for _ in range(draw(st.integers(0, 5))):
        recs.append(v2.encode_record(draw(st.integers(0, 20000)), draw(st.integers(-20000, 20000)),
                                     draw(small_bytes), draw(small_bytes), draw(headers)))
    data = bytearray(b"".join(recs))
    for _ in range(draw(st.integers(0, 2))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if data and draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]
    return bytes(data), len(recs) + draw(st.sampled_from([0, 0, 0, -1, 1]))


def parse(fn: object, args: tuple[object, ...]) -> object:
    try:
        return fn(*args)  # type: ignore[operator]
    except KafkaToolError as e:
        return err(e)


@settings(max_examples=400, deadline=None)
@given(area=records_area(), end_cut=st.integers(0, 3), lat=st.sampled_from([None, TS + 9]),
       base_sequence=st.sampled_from([-1, 5, 0x7FFFFFFF - 1]))
def test_parse_records_equals_reference(area: tuple[bytes, int], end_cut: int, lat: int | None,
                                        base_sequence: int) -> None:
    data, count = area
    end = max(0, len(data) - end_cut) if end_cut < 3 else len(data)  # also parse a prefix of the buffer
    args = (data, 0, end, max(count, 0), 1000, TS, lat, base_sequence)
    assert parse(v2.parse_records, args) == parse(ref.parse_records, args)


def test_two_byte_varint_cut_at_end_raises_what_read_varint_raises() -> None:
    # A two-byte length varint (0x80 0x01) whose second byte lies beyond ``end``.
    data = b"\x80\x01" + b"\x00" * 70
    args = (data, 0, 1, 1, 0, TS, None, -1)
    with pytest.raises(KafkaToolError) as fast:
        v2.parse_records(*args)
    with pytest.raises(KafkaToolError) as slow:
        ref.parse_records(*args)
    assert err(fast.value) == err(slow.value)


@settings(max_examples=300, deadline=None)
@given(recs=st.lists(st.tuples(st.integers(0, 10), st.one_of(st.sampled_from([-1, -2, 0]), st.integers(TS, TS + 99)),
                               small_bytes, small_bytes), min_size=1, max_size=5),
       magic=st.sampled_from([0, 1, 3]), lat=st.booleans(), base=st.sampled_from([None, 0]))
def test_build_entries_equals_message_by_message_encoding(recs: list[tuple[int, int, bytes | None, bytes | None]],
                                                          magic: int, lat: bool, base: int | None) -> None:
    offsets = []
    o = 100
    for r in recs:
        o += r[0] + 1
        offsets.append(o)
    recs = [(off, ts, k, v) for off, (_, ts, k, v) in zip(offsets, recs, strict=True)]
    ts_type = TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME

    def expected() -> object:
        tst = TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else ts_type
        attrs = legacy.compute_attributes(magic, Codec.NONE, tst)
        out = []
        for off, ts, k, v in recs:
            ts = -1 if magic == 0 else (TS + 1 if lat else ts)
            out.append(legacy.encode_entry(off, legacy.encode_message(magic, attrs, ts, k, v)))
        return b"".join(out)

    def outcome(fn: object) -> object:
        try:
            return fn()  # type: ignore[operator]
        except ValueError as e:
            return str(e)

    got = outcome(lambda: legacy.build_entries(recs, magic=magic, timestamp_type=ts_type, log_append_time=TS + 1,
                                               base_offset=base))
    assert got == outcome(expected)
    if isinstance(got, bytes) and magic == 1:
        for codec in (Codec.GZIP, Codec.LZ4):
            wrapped = legacy.build_entries(recs, magic=magic, codec=codec, timestamp_type=ts_type,
                                           log_append_time=TS + 1)
            (b,) = list(LogInputStream(wrapped))
            b.ensure_valid()
            assert [(r.offset, r.key, r.value) for r in b.records()] == [(o, k, v) for o, _, k, v in recs]


def test_legacy_crc_matches_zlib() -> None:
    import zlib

    from kafkatool.record.codecs import crc32

    for n in (0, 1, 15, 1100, 70000):
        data = os.urandom(n)
        assert crc32(data) == zlib.crc32(data)
        assert crc32(data[n // 2:], crc32(data[:n // 2])) == zlib.crc32(data)


@st.composite
def legacy_wrapper(draw: st.DrawFn) -> bytes:
    """A v0/v1 compressed wrapper around an inner message set, possibly damaged before compression."""
    wrapper_magic = draw(st.integers(0, 1))
    inner = bytearray()
    for i in range(draw(st.integers(0, 4))):
        magic = draw(st.sampled_from([wrapper_magic, wrapper_magic, wrapper_magic, 1 - wrapper_magic, 2]))
        if magic == 2:  # an inner message with a magic the legacy reader treats as v1
            msg = bytearray(legacy.encode_message(1, 0, TS, draw(small_bytes), draw(small_bytes)))
            msg[4] = 2
        else:
            msg = bytearray(legacy.encode_message(magic, draw(st.sampled_from([0, 0, 0, 8, 1])), TS + i,
                                                  draw(small_bytes), draw(small_bytes)))
        inner += legacy.encode_entry(i if wrapper_magic == 1 else 500 + i, bytes(msg))
    for _ in range(draw(st.integers(0, 3))):
        if inner:
            inner[draw(st.integers(0, len(inner) - 1))] = draw(st.integers(0, 255))
    if inner and draw(st.booleans()):
        inner = inner[:draw(st.integers(0, len(inner)))]
    codec = draw(st.sampled_from([Codec.GZIP, Codec.LZ4, Codec.SNAPPY]))
    from kafkatool.record.codecs import compress

    lat = draw(st.booleans()) and wrapper_magic == 1
    attrs = int(codec) | (legacy.TIMESTAMP_TYPE_MASK if lat else 0)
    wrapper = legacy.encode_message(wrapper_magic, attrs, TS + 77 if wrapper_magic else -1, None,
                                    compress(codec, bytes(inner), magic=wrapper_magic))
    return legacy.encode_entry(draw(st.sampled_from([0, 3, 503, 10**6])), wrapper)


@settings(max_examples=300, deadline=None)
@given(data=legacy_wrapper())
def test_legacy_deep_records_equal_reference(data: bytes) -> None:
    b = legacy.LegacyRecordBatch(data, 0, 0)

    def outcome(fn: object) -> object:
        try:
            key, value = b.key_value()
            return fn(b, value, 1 << 20)  # type: ignore[operator]
        except KafkaToolError as e:
            return err(e)

    want = outcome(ref.legacy_deep_records)
    assert outcome(lambda batch, value, limit: batch.records(limit=limit)) == want
    # read a few inner messages at a time (a wrapper of millions is never decoded at once): the same records, or
    # the same error before any chunk
    chunked = outcome(lambda batch, value, limit: [r for c in batch.record_chunks(limit=limit, size=2) for r in c])
    assert chunked == want


@st.composite
def compressed_v2(draw: st.DrawFn) -> bytes:
    """A compressed v2 batch (gzip, snappy, lz4) with what down-conversion drops or keeps: headers, producer ids,
    transactions, LogAppendTime; offsets with gaps and many records (several snappy/lz4 blocks)."""
    n = draw(st.integers(1, 400))
    off = draw(st.integers(0, 1000))
    recs = []
    for _ in range(n):
        off += draw(st.integers(1, 3))
        recs.append((off, TS + draw(st.integers(-50, 5000)), draw(small_bytes), draw(small_bytes), draw(headers)))
    lat = draw(st.booleans())
    return v2.build_batch(recs, codec=draw(st.sampled_from([Codec.GZIP, Codec.SNAPPY, Codec.LZ4])),
                          timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
                          log_append_time=TS + 5, producer_id=draw(st.sampled_from([-1, 7])),
                          is_transactional=draw(st.booleans()))


@SETTINGS
@given(data=compressed_v2(), to_magic=st.sampled_from([0, 1]), first=st.integers(0, 1500))
def test_a_compressed_batch_wrapped_in_one_call_equals_the_steps(data: bytes, to_magic: int, first: int) -> None:
    """``_speedups.reframe_v2_wrapped`` (fetch-sim's down-conversion of a compressed v2 batch) gives the bytes, the
    inner message set and every statistic of the step-by-step path."""
    from kafkatool._accel import speedups
    from kafkatool.record import down_convert as dc
    from tests.support.speedups import dispatching_to

    assert speedups is not None
    batch = v2.DefaultRecordBatch.at(data)
    assert speedups.reframe_v2_wrapped(batch.buf, batch.start, to_magic, 1 << 24, dc._wrap_codecs(to_magic, None))
    fast = dc.down_convert([batch], to_magic, first, keep_inners=True)
    with dispatching_to(None, ["kafkatool.record.down_convert"]):
        slow = dc.down_convert([batch], to_magic, first, keep_inners=False)
    assert fast.data == slow.data and fast.data
    fields = [f.name for f in dataclasses.fields(fast) if f.name not in ("data", "inners")]
    assert [getattr(fast, f) for f in fields] == [getattr(slow, f) for f in fields]
    assert "temporary_memory_bytes" in fields
    ((at, inner),) = fast.inners or [(None, None)]
    assert at == 0 and inner is not None and len(inner) < len(fast.data) * 50
