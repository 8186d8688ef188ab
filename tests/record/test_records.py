"""Message formats v0/v1/v2: Kafka 3.9.1's golden bytes read back, uncompressed bytes rebuilt exactly,
round trips over every magic x codec, and Kafka's error rules."""

from __future__ import annotations

import struct

import pytest

from kafkatool.errors import CorruptRecordError, InvalidRecordError
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.batch import ControlRecordType, Header, TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import LogInputStream, iter_batches
from tests.support.paths import golden

TS = 1_700_000_000_000
G = golden()


def only_batch(data: bytes):
    batches = list(iter_batches(data))
    assert len(batches) == 1
    return batches[0]


def test_v2_one_record_vector_reads_and_rebuilds_byte_for_byte():
    data = G["v2_none_1rec"]
    b = only_batch(data)
    assert (b.base_offset, b.last_offset, b.magic, b.size, b.crc) == (0, 0, 2, 70, 0xE99B8DD8)
    assert b.is_valid()
    assert b.timestamp_type == TimestampType.CREATE_TIME and b.max_timestamp == TS
    (r,) = b.records()
    assert (r.offset, r.timestamp, r.key, r.value, r.headers, r.sequence) == (0, TS, b"k", b"v", (), -1)
    rebuilt = v2.build_batch([(0, TS, b"k", b"v", ())])
    assert rebuilt == data


def test_v2_header_vector():
    data = G["v2_none_1rec_hdr"]
    (r,) = only_batch(data).records()
    assert r.headers == (Header("h", b"x"),)
    assert v2.build_batch([(0, TS, b"k", b"v", [("h", b"x")])]) == data


@pytest.mark.parametrize("name,magic,ts_type,ts", [
    ("v0_none_1rec", 0, TimestampType.NO_TIMESTAMP_TYPE, -1),
    ("v1_none_1rec", 1, TimestampType.CREATE_TIME, TS),
    ("v1_none_LAT", 1, TimestampType.LOG_APPEND_TIME, TS + 99),
])
def test_legacy_one_record_vectors(name, magic, ts_type, ts):
    data = G[name]
    b = only_batch(data)
    assert b.magic == magic and b.is_valid() and b.timestamp_type == ts_type and b.max_timestamp == ts
    (r,) = b.records()
    assert (r.offset, r.timestamp, r.key, r.value, r.crc_valid) == (0, ts, b"k", b"v", True)
    rebuilt = legacy.build_entries([(0, TS, b"k", b"v")], magic=magic, timestamp_type=ts_type, log_append_time=ts)
    assert rebuilt == data


@pytest.mark.parametrize("name", [n for n in G if n.endswith("_3rec") or "3rec(" in n])
def test_compressed_golden_vectors_read_like_kafka(name):
    b = only_batch(G[name])
    assert b.is_valid(), name
    recs = b.records()
    assert [r.offset for r in recs] == [100, 101, 102]
    assert [r.key for r in recs] == [b"k1", b"k2", None]
    assert [r.value for r in recs] == [b"v1", b"v2", b"v3"]
    if b.magic == 0:
        assert [r.timestamp for r in recs] == [-1, -1, -1]
    else:
        assert [r.timestamp for r in recs] == [TS, TS + 5, TS + 2]
        assert b.max_timestamp == TS + 5
    assert b.last_offset == 102 and b.base_offset == 100


def test_lz4_v0_wrapper_keeps_the_broken_header_checksum():
    data = G["v0_lz4_3rec"]
    assert data.find(bytes.fromhex("04224d1860401a")) > 0
    rebuilt = legacy.build_entries([(100, TS, b"k1", b"v1"), (101, TS, b"k2", b"v2"), (102, TS, None, b"v3")],
                                   magic=0, codec=Codec.LZ4)
    assert rebuilt.find(bytes.fromhex("04224d1860401a")) > 0
    assert [r.value for r in only_batch(rebuilt).records()] == [b"v1", b"v2", b"v3"]


def test_end_txn_marker_vector_from_spec():
    expected = bytes.fromhex(
        "00000000000001f4000000420000000702 55aefb0a 0030 00000000 0000018bcfe56800 0000018bcfe56800"
        "0000000000001092 0003 ffffffff 00000001 20 00 00 00 08 00000001 0c 000000000009 00".replace(" ", ""))
    built = v2.build_end_txn_marker(offset=500, timestamp=TS, producer_id=4242, producer_epoch=3, commit=True,
                                    coordinator_epoch=9, partition_leader_epoch=7)
    assert built == expected and len(built) == 78
    b = only_batch(built)
    assert b.is_control and b.is_transactional and b.base_sequence == -1
    (r,) = b.records()
    assert v2.parse_control_type(r.key) == ControlRecordType.COMMIT
    assert v2.parse_end_txn_marker(r.value) == 9


RECORDS = [
    (10, TS, b"key-1", b"value-1", [("h1", b"x"), ("h2", None)]),
    (11, TS + 7, None, b"value-2" * 50, []),
    (13, TS + 3, b"key-3", None, [("", b"")]),  # compaction gap at 12
]


@pytest.mark.parametrize("codec", list(Codec), ids=lambda c: c.label)
@pytest.mark.parametrize("ts_type", [TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME],
                         ids=["create", "append"])
def test_v2_round_trip(codec, ts_type):
    data = v2.build_batch(RECORDS, codec=codec, timestamp_type=ts_type, log_append_time=TS + 1000,
                          producer_id=77, producer_epoch=2, base_sequence=5, is_transactional=True,
                          partition_leader_epoch=4)
    b = only_batch(data)
    b.ensure_valid()
    assert (b.base_offset, b.last_offset, b.count, b.codec, b.producer_id, b.last_sequence) == \
        (10, 13, 3, codec, 77, 8)
    recs = b.records()
    assert [r.offset for r in recs] == [10, 11, 13]
    assert [r.key for r in recs] == [x[2] for x in RECORDS]
    assert [r.value for r in recs] == [x[3] for x in RECORDS]
    assert [list(r.headers) for r in recs] == [[Header(*h) for h in x[4]] for x in RECORDS]
    assert [r.sequence for r in recs] == [5, 6, 8]
    if ts_type == TimestampType.LOG_APPEND_TIME:
        assert b.max_timestamp == TS + 1000 and {r.timestamp for r in recs} == {TS + 1000}
    else:
        assert b.max_timestamp == TS + 7 and [r.timestamp for r in recs] == [TS, TS + 7, TS + 3]


@pytest.mark.parametrize("codec", [c for c in Codec if c != Codec.ZSTD], ids=lambda c: c.label)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_round_trip(codec, magic):
    recs = [(o, ts, k, v) for o, ts, k, v, _ in RECORDS]
    data = legacy.build_entries(recs, magic=magic, codec=codec)
    batches = list(iter_batches(data))
    assert len(batches) == (3 if codec == Codec.NONE else 1)
    out = [r for b in batches for r in b.records()]
    for b in batches:
        b.ensure_valid()
    assert [r.offset for r in out] == [10, 11, 13]
    assert [r.value for r in out] == [x[3] for x in recs]
    assert [r.timestamp for r in out] == ([-1] * 3 if magic == 0 else [TS, TS + 7, TS + 3])
    assert all(r.crc_valid for r in out)


def test_v1_wrapper_offset_zero_means_base_zero():
    # librdkafka produce data: wrapper offset 0, inner relative offsets 0..n-1.
    data = legacy.build_entries([(5, TS, b"a", b"1"), (6, TS, b"b", b"2")], magic=1, codec=Codec.GZIP)
    patched = struct.pack(">q", 0) + data[8:]
    assert [r.offset for r in only_batch(patched).records()] == [0, 1]


def test_crc_mismatch_is_reported_not_hidden():
    data = bytearray(G["v2_none_1rec"])
    data[-2] ^= 0x01
    b = only_batch(bytes(data))
    assert not b.is_valid()
    with pytest.raises(CorruptRecordError, match="stored crc = 3919285720"):
        b.ensure_valid()


def test_walk_stops_silently_on_torn_tail_and_raises_on_tiny_size():
    good = G["v2_none_1rec"]
    stream = LogInputStream(good + good[:40])
    assert len(list(stream)) == 1
    assert stream.end_state.kind == "size-past-end" and stream.end_state.position == 70
    stream = LogInputStream(good + good[:17])
    assert len(list(stream)) == 1 and stream.end_state.kind == "short-tail"
    bad = good + struct.pack(">qi", 1, 5) + b"\x00" * 20
    stream = LogInputStream(bad)
    with pytest.raises(CorruptRecordError, match="smaller than minimum record overhead"):
        list(stream)
    assert stream.end_state.position == 70


@pytest.mark.parametrize("mutate,match", [
    (lambda recs: recs[:-1], "Invalid record size: expected 8 bytes"),  # record runs past the area
    (lambda recs: recs + b"\x00", "records still remaining"),
    (lambda recs: b"\x0c" + recs[1:], "Invalid record size"),  # length 6 instead of 8
    # key length -5: Kafka reads a null key, then trips over the key byte left behind (interop-checked)
    (lambda recs: recs[:4] + b"\x09" + recs[5:], "Header key runs past the end"),
    (lambda recs: recs[:-1] + b"\x03", "invalid number of record headers"),  # header count -2
])
def test_v2_record_errors_follow_kafka(mutate, match):
    data = G["v2_none_1rec"]
    body = mutate(data[61:])
    rebuilt = bytearray(data[:61] + body)
    struct.pack_into(">i", rebuilt, 8, len(rebuilt) - 12)
    struct.pack_into(">I", rebuilt, 17, v2.crc32c(bytes(rebuilt[21:])))
    b = only_batch(bytes(rebuilt))
    assert b.is_valid()
    with pytest.raises(InvalidRecordError, match=match):
        b.records()


def test_hostile_record_count_does_not_loop():
    data = bytearray(G["v2_none_1rec"])
    struct.pack_into(">i", data, 57, 0x7FFFFFFF)
    struct.pack_into(">I", data, 17, v2.crc32c(bytes(data[21:])))
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        only_batch(bytes(data)).records()


def test_varint_longer_than_kafka_allows():
    data = bytearray(G["v2_none_1rec"])
    # offsetDelta as a 6-byte varint: too long for an int.
    body = b"\x1a\x00\x00" + b"\x80\x80\x80\x80\x80\x00" + b"\x02k\x02v\x00"
    rebuilt = bytearray(data[:61] + body)
    struct.pack_into(">i", rebuilt, 8, len(rebuilt) - 12)
    struct.pack_into(">I", rebuilt, 17, v2.crc32c(bytes(rebuilt[21:])))
    with pytest.raises(InvalidRecordError, match="longer than 5 bytes"):
        only_batch(bytes(rebuilt)).records()


def test_empty_batch_is_legal():
    data = v2.build_empty_batch(base_offset=40, last_offset_delta=9, max_timestamp=TS, producer_id=5,
                                producer_epoch=1, base_sequence=10, is_transactional=True)
    b = only_batch(data)
    assert b.size == 61 and b.count == 0 and b.last_offset == 49 and b.base_timestamp == -1
    assert b.is_valid() and b.records() == []


def test_pages_are_mapped_ahead_once_per_window_however_often_a_walk_hands_them_back(tmp_path):
    # A reader of every byte (a converter) has the next window mapped in advance (MADV_POPULATE_READ), once per
    # window, however often it hands pages back (fetch-sim's lazy conversion: every 128 KiB chunk).
    from kafkatool.record import file_records as frmod

    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"\0" * (8 << 20))
    calls: list[tuple[int, int, int]] = []

    class Recording:
        def __init__(self, mm):
            self.mm = mm

        def madvise(self, option, start=0, length=0):
            calls.append((option, start, length))
            return self.mm.madvise(option, start, length)

        def __getattr__(self, name):
            return getattr(self.mm, name)

    with frmod.FileRecords(seg, window=1 << 20, reads_all=True) as fr:
        real = fr._mm
        fr._mm = Recording(real)
        for pos in range(128 << 10, 8 << 20, 128 << 10):
            fr.drop_before(pos)
        fr._mm = real
    populated = [(s, n) for opt, s, n in calls if opt == frmod._POPULATE_READ]
    if frmod._POPULATE_READ:
        assert len(populated) <= 8 and populated[0] == (128 << 10, 1 << 20)
        assert all(s2 >= s1 + n1 for (s1, n1), (s2, _) in zip(populated, populated[1:], strict=False))  # not twice
    dropped = [s + n for opt, s, n in calls if opt == frmod.mmap.MADV_DONTNEED]
    assert dropped and dropped[-1] == (8 << 20) - (128 << 10)  # the pages behind the walk are still handed back


def test_a_header_walk_maps_nothing_in_advance(tmp_path):
    from kafkatool.record import file_records as frmod

    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"\0" * (4 << 20))
    calls: list[int] = []

    class Recording:
        def __init__(self, mm):
            self.mm = mm

        def madvise(self, option, start=0, length=0):
            calls.append(option)
            return self.mm.madvise(option, start, length)

        def __getattr__(self, name):
            return getattr(self.mm, name)

    with frmod.FileRecords(seg, window=1 << 20) as fr:
        real = fr._mm
        fr._mm = Recording(real)
        for pos in range(1 << 20, 4 << 20, 1 << 20):
            fr.drop_before(pos)
        fr._mm = real
    assert calls and frmod._POPULATE_READ not in calls
