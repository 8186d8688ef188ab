"""Key hashing (murmur2 as Kafka computes it), the sharing proposal's assignor, and the key-sharing
analysis on data with known key distributions, checked against hand-computed expectations."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatool.record import default_records as v2
from kafkatool.record.codecs import Codec
from kafkatool.scan.engine import run_local
from kafkatool.scan.keyshare import (
    HASH_SPACE,
    assign,
    hash64_many,
    hash_range,
    librdkafka_consistent_partition,
    murmur2,
    murmur2_many,
    partition_for_key,
    plain_loads,
    skew,
    slot_of,
    to_positive,
)
from kafkatool.scan.plan import discover, make_plan
from kafkatool.scan.report import keyshare_setup, topic_shares
from kafkatool.scan.sketches import HotKeys, HyperLogLog

# KAFKA-FORMATS.md §7.1 (Kafka's UtilsTest, and a run of kafka-clients 3.9.1).
SPEC_VECTORS = [(b"21", -973932308), (b"foobar", -790332482), (b"abc", 479470107), (b"", 275646681),
                (b"a", -1563381124), (b"key-0", 29210041)]
TS = 1_700_000_000_000


@pytest.mark.parametrize("key,expected", SPEC_VECTORS, ids=[k.decode() or "empty" for k, _ in SPEC_VECTORS])
def test_murmur2_matches_spec_vectors(key, expected):
    assert murmur2(key) == expected
    assert int(murmur2_many([key]).astype(np.int32)[0]) == expected


def test_to_positive_clears_the_sign_bit_not_abs():
    assert to_positive(murmur2(b"a")) == 584102524
    assert to_positive(-1) == 0x7FFFFFFF  # abs() would give 1
    assert partition_for_key(b"a", 3) == 584102524 % 3


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=200))
def test_vectorised_murmur2_equals_the_reference(keys):
    got = murmur2_many(keys).astype(np.int32).tolist()
    assert got == [murmur2(k) for k in keys]


def test_assignor_shares_partitions_round_robin_when_consumers_outnumber_them():
    # The proposal's example: 5 consumers on 3 partitions -> tp1: M1,M4 ...
    assert assign(5, 3).describe() == ["tp1: M1,M4", "tp2: M2,M5", "tp3: M3"]
    plain = assign(2, 3)
    assert plain.describe() == ["tp1: M1", "tp2: M2", "tp3: M1"] and not plain.sharing


def test_hash_ranges_cover_the_space_exactly_and_slot_of_agrees():
    for k in (1, 2, 3, 5, 7):
        ranges = [hash_range(j, k) for j in range(k)]
        assert ranges[0][0] == 0 and ranges[-1][1] == HASH_SPACE
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
        rng = random.Random(k)
        for h in [0, HASH_SPACE - 1, *(rng.randrange(HASH_SPACE) for _ in range(200)), *(lo for lo, _ in ranges)]:
            j = slot_of(h, k)
            assert ranges[j][0] <= h < ranges[j][1]


def _partition(root: Path, topic: str, partition: int, keys: list[bytes | None], per_batch: int = 50) -> None:
    d = root / f"{topic}-{partition}"
    d.mkdir(parents=True)
    batches = []
    for i in range(0, len(keys), per_batch):
        recs = [(o, TS + o, keys[o], b"v" * 10, []) for o in range(i, min(i + per_batch, len(keys)))]
        batches.append(v2.build_batch(recs, codec=Codec.LZ4 if i % 100 else Codec.NONE))
    (d / f"{0:020d}.log").write_bytes(b"".join(batches))


def _shares(root: Path, consumers: int, split: int = 1 << 30):
    found = discover([str(root)])
    setup = keyshare_setup(found.segments, consumers)
    plan = make_plan(found.segments, split_bytes=split, share_slots=setup.share_slots(),
                     topic_partitions=setup.topic_partitions())
    report = run_local(plan)
    return {t.topic: t for t in topic_shares(report, setup, hot=5)}


def _expected_slots(keys: list[bytes], k: int) -> list[int]:
    counts = [0] * k
    for key in keys:
        counts[slot_of(to_positive(murmur2(key)), k)] += 1
    return counts


def test_uniform_keys_spread_by_their_hash_ranges(tmp_path):
    keys = [b"k-%d" % i for i in range(2000)]
    _partition(tmp_path, "uniform", 0, list(keys))
    t = _shares(tmp_path, 4, split=2048)["uniform"]
    expected = _expected_slots(keys, 4)
    assert [c.records for c in t.sharing] == expected
    # Bytes are record sizes as encoded (DefaultRecord.sizeInBytes), deltas from each 50-record batch's base.
    expected_bytes = [0] * 4
    for o, key in enumerate(keys):
        size = len(v2.encode_record(o % 50, o % 50, key, b"v" * 10))
        expected_bytes[slot_of(to_positive(murmur2(key)), 4)] += size
    assert [c.bytes for c in t.sharing] == expected_bytes
    assert t.sharing_skew.records_ratio < 1.15  # 2000 distinct keys: close to even
    assert t.plain_skew.max_records == 2000 and t.plain_skew.busy_consumers == 1
    assert t.speedup == pytest.approx(2000 / max(expected))
    assert t.bound_records == 1  # every key once


def test_one_hot_key_bounds_the_busiest_consumer(tmp_path):
    keys: list[bytes | None] = [b"hot"] * 1000 + [b"cold-%d" % i for i in range(400)]
    random.Random(3).shuffle(keys)
    _partition(tmp_path, "skewed", 0, keys)
    t = _shares(tmp_path, 4)["skewed"]
    hot_slot = slot_of(to_positive(murmur2(b"hot")), 4)
    cold = _expected_slots([k for k in keys if k != b"hot" and k is not None], 4)
    expected = [c + (1000 if j == hot_slot else 0) for j, c in enumerate(cold)]
    assert [c.records for c in t.sharing] == expected
    assert t.bound_records == 1000
    top = t.hot_keys[0]
    assert (top.key, top.records, top.consumer) == (b"hot", 1000, hot_slot)
    assert top.share_of_consumer == pytest.approx(1000 / expected[hot_slot])
    assert t.sharing_skew.max_records == expected[hot_slot]
    assert t.sharing_skew.records_ratio == pytest.approx(expected[hot_slot] / (1400 / 4))


def test_few_keys_leave_consumers_idle(tmp_path):
    keys: list[bytes | None] = [b"alpha", b"beta", b"gamma"] * 100
    _partition(tmp_path, "few", 0, keys)
    t = _shares(tmp_path, 8)["few"]
    expected = _expected_slots([k for k in keys if k is not None], 8)
    assert [c.records for c in t.sharing] == expected
    assert t.sharing_skew.busy_consumers == sum(1 for n in expected if n) <= 3
    assert {h.key: h.records for h in t.hot_keys} == {b"alpha": 100, b"beta": 100, b"gamma": 100}


def test_null_keys_go_round_robin_by_offset_and_are_reported(tmp_path):
    keys: list[bytes | None] = [None] * 10
    _partition(tmp_path, "nulls", 0, keys)
    t = _shares(tmp_path, 3)["nulls"]
    assert [c.records for c in t.sharing] == [4, 3, 3]  # offsets 0..9 % 3
    (p,) = t.partitions
    assert (p.null_records, p.keyed_records, p.murmur2_match, p.partitioner) == (10, 0, None, "undecidable (one "
                                                                                  "partition)")


def test_partitioner_detection_murmur2_versus_librdkafka_crc32(tmp_path):
    keys = [b"id-%d" % i for i in range(300)]
    for p in range(3):
        _partition(tmp_path, "java", p, [k for k in keys if partition_for_key(k, 3) == p])
        _partition(tmp_path, "rdkafka", p, [k for k in keys if librdkafka_consistent_partition(k, 3) == p])
    shares = _shares(tmp_path, 5)
    java = shares["java"]
    assert [p.murmur2_match for p in java.partitions] == [1.0, 1.0, 1.0]
    assert all(p.partitioner.startswith("murmur2") for p in java.partitions)
    rd = shares["rdkafka"]
    assert [p.crc32_match for p in rd.partitions] == [1.0, 1.0, 1.0]
    assert all(p.partitioner.startswith("crc32") for p in rd.partitions)
    # The murmur2 rate of CRC32-partitioned data, computed by hand for partition 0.
    p0 = [k for k in keys if zlib.crc32(k) % 3 == 0]
    assert rd.partitions[0].murmur2_match == pytest.approx(sum(partition_for_key(k, 3) == 0 for k in p0) / len(p0))
    # 5 consumers on 3 partitions: tp3 is read whole by M3 in both assignments.
    assert java.assignment.describe() == ["tp1: M1,M4", "tp2: M2,M5", "tp3: M3"]
    assert java.sharing[2].records == java.plain[2].records == len([k for k in keys if partition_for_key(k, 3) == 2])


def test_plain_loads_leave_surplus_consumers_idle():
    loads = plain_loads(5, [10, 20, 30], [100, 200, 300])
    assert [x.records for x in loads] == [10, 20, 30, 0, 0]
    s = skew(loads)
    assert (s.max_records, s.mean_records, s.busy_consumers) == (30, 12.0, 3)


def test_hot_keys_exact_below_capacity_and_bounded_above():
    def update(hk: HotKeys, keys: list[bytes], sizes: list[int]) -> None:
        h32, h64 = hash64_many(keys)
        hk.update(keys, np.asarray(sizes, dtype=np.int64), h64, h32)

    hk = HotKeys(capacity=4)
    keys = [b"a"] * 50 + [b"b"] * 30 + [b"k%d" % i for i in range(100)]
    update(hk, keys, [1] * len(keys))
    top = hk.top(2)
    assert [(h.key, h.records, h.hash) for h in top] == [(b"a", 50, murmur2(b"a") & 0xFFFFFFFF), (b"b", 30,
                                                         murmur2(b"b") & 0xFFFFFFFF)]
    assert hk.error == 1  # the heaviest key left out of the chunk had a count of 1
    for _ in range(3):  # more chunks: the table is pruned, the heavy keys stay exact
        update(hk, keys, [2] * len(keys))
    assert [(h.key, h.records, h.bytes) for h in hk.top(2)] == [(b"a", 200, 350), (b"b", 120, 210)]
    small = HotKeys(capacity=64)
    update(small, [b"x", b"y", b"x"], [5, 6, 7])
    assert [(h.key, h.records, h.bytes) for h in small.top(5)] == [(b"x", 2, 12), (b"y", 1, 6)]
    assert small.error == 0


def test_hyperloglog_estimates_and_merges_as_a_union():
    rng = np.random.default_rng(7)
    a, b = HyperLogLog(), HyperLogLog()
    ha = rng.integers(0, 2**63, 60_000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    hb = rng.integers(0, 2**63, 60_000, dtype=np.uint64) * np.uint64(2)
    a.add_hashes(ha)
    b.add_hashes(hb)
    assert abs(a.estimate() - 60_000) / 60_000 < 0.05
    a.merge(b)
    assert abs(a.estimate() - 120_000) / 120_000 < 0.05
    small = HyperLogLog()
    small.add_hashes(np.array([1 << 60, 2 << 60, 3 << 60, 1 << 60], dtype=np.uint64))
    assert small.estimate() == 3
    assert HyperLogLog.from_bytes(a.to_bytes()).estimate() == a.estimate()
