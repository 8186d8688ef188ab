"""``kafkatool sample``: the default dir's structure, every option's effect, determinism, and that every
file it writes agrees with the batches (``tests/support/logdir_check.py``) and reads back in Kafka's own code."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pytest

from kafkatool.decoders.message import java_string_hash
from kafkatool.decoders.offsets import (
    offset_commit_key,
    offset_commit_value,
    partition_for_group,
    read_offset_commit_key,
    read_offset_commit_value,
)
from kafkatool.log.checkpoints import read_offset_checkpoint, read_properties
from kafkatool.log.layout import TopicPartition
from kafkatool.log.snapshot import read_snapshot
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_batch, encode_record, encode_records
from kafkatool.record.legacy_records import encode_entries, encode_entry, encode_message
from kafkatool.sample.generate import generate_sample, iter_files
from kafkatool.sample.partition import java_hashmap_order
from kafkatool.sample.spec import IntRange, SampleSpec, TopicSpec, demo_topics
from tests.support.cli import run_cli
from tests.support.logdir_check import check_partition, read_partition

DEMO = {t.name: t for t in demo_topics()}


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in iter_files(root)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("demo") / "logs"
    result = generate_sample(path, SampleSpec(demo_topics()))
    return path, result


def custom(tmp_path: Path, name: str = "d", seed: int = 1, clean: bool = True, **kw: object):
    spec = SampleSpec((TopicSpec(kw.pop("topic", "t"), **kw),), seed=seed, clean_shutdown=clean,  # type: ignore[arg-type]
                      profile="custom")
    return generate_sample(tmp_path / name, spec, fsync=False)


# ---------------------------------------------------------------------------------------------- the default dir

def test_demo_dir_has_every_topic_partition_and_root_file(demo):
    path, result = demo
    dirs = sorted(p.name for p in path.iterdir() if p.is_dir())
    expected = sorted(f"{t.name}-{i}" for t in DEMO.values() for i in range(t.partitions))
    assert dirs == expected
    root_files = sorted(p.name for p in path.iterdir() if p.is_file())
    assert root_files == [".kafka_cleanshutdown", "cleaner-offset-checkpoint", "log-start-offset-checkpoint",
                          "meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"]
    assert not (path / ".lock").exists()
    props = read_properties(path / "meta.properties")
    assert props == {"node.id": "1", "directory.id": result.directory_id, "version": "1",
                     "cluster.id": result.cluster_id}
    assert json.loads((path / ".kafka_cleanshutdown").read_text()) == {"version": 0, "brokerEpoch": result.broker_epoch}
    assert not list(path.parent.glob(".kafkatool-tmp-*"))  # the staging dir was renamed into place


def test_demo_partitions_are_consistent_in_every_file(demo):
    path, result = demo
    for s in result.partitions:
        t = DEMO[s.topic]
        f = check_partition(path / f"{s.topic}-{s.partition}", compacted=t.compacted, segment_bytes=t.segment_bytes,
                            log_start_offset=s.log_start_offset)
        assert f.log_end_offset == s.log_end_offset
        assert f.records == s.records and f.segments == [seg.base_offset for seg in s.segments]
        assert f.topic_id == s.topic_id


def test_demo_topics_have_what_they_promise(demo):
    path, result = demo
    facts = {(s.topic, s.partition): read_partition(path / f"{s.topic}-{s.partition}") for s in result.partitions}
    by = {k: v for k, v in facts.items()}
    # orders: v2 lz4 with headers, rolled segments, retention, a DeleteRecords on partition 1
    o0, o1 = by[("orders", 0)], by[("orders", 1)]
    assert {b.magic for b in o0.batches} == {2} and {b.codec for b in o0.batches} == {Codec.LZ4}
    assert all(h == 3 for b in o0.batches for h in b.headers) and len(o0.segments) >= 2
    assert o0.segments[0] > 0  # oldest segments deleted by retention.bytes
    assert len({b.producer_id for b in o0.batches}) == 3 and all(b.producer_id >= 0 for b in o0.batches)
    assert json.loads(o0.batches[0].values[0])["customer_id"].startswith("cust-")
    start = read_offset_checkpoint(path / "log-start-offset-checkpoint")
    assert start == {TopicPartition("orders", 1): next(s.log_start_offset for s in result.partitions
                                                      if (s.topic, s.partition) == ("orders", 1))}
    assert start[TopicPartition("orders", 1)] > o1.segments[0]
    # payments: interleaved transactions, commits and aborts, .txnindex files
    p0 = by[("payments", 0)]
    markers = Counter(b.control for b in p0.batches if b.control is not None)
    assert markers[0] > 0 and markers[1] > 0 and p0.aborted
    pids = {b.producer_id for b in p0.batches if b.transactional}
    assert len(pids) == 2 and any(not b.transactional and b.producer_id >= 0 for b in p0.batches)
    lsos = [e for es in p0.aborted.values() for e in es]
    assert any(e.last_stable_offset < e.last_offset for e in lsos)  # another transaction was open
    assert any(e.first_offset < seg for p in (0, 1) for seg, es in by[("payments", p)].aborted.items()
               for e in es)  # an aborted transaction spanning a roll
    # legacy-events: a format upgrade v0 -> v1 -> v2, with v0/v1 and v1/v2 in one segment somewhere
    le = by[("legacy-events", 0)]
    magics = [b.magic for b in le.batches]
    assert magics == sorted(magics) and set(magics) == {0, 1, 2}
    per_segment = {seg: {b.magic for b in le.batches if b.segment == seg} for seg in le.segments}
    assert any(len(m) > 1 for m in per_segment.values())
    assert Codec.ZSTD not in {b.codec for b in le.batches} and len({b.codec for b in le.batches}) == 4
    assert all(b.producer_id == -1 for b in le.batches)
    assert {b.magic for b in by[("sensors-2016", 0)].batches} == {0}
    assert {b.magic for b in by[("sensors-2017", 0)].batches} == {1}
    # clickstream: zstd, keyless records
    c0 = by[("clickstream", 0)]
    assert {b.codec for b in c0.batches} == {Codec.ZSTD}
    assert any(k is None for b in c0.batches for k in b.keys)
    # audit-log: LogAppendTime stamped by the broker, non-decreasing
    a0 = by[("audit-log", 0)]
    assert {b.timestamp_type for b in a0.batches} == {TimestampType.LOG_APPEND_TIME}
    lat = [b.max_timestamp for b in a0.batches]
    assert lat == sorted(lat) and all(ts == b.max_timestamp for b in a0.batches for ts in b.timestamps)


def test_demo_consumer_offsets_is_a_cleaned_compacted_log(demo):
    path, result = demo
    summaries = {s.partition: s for s in result.partitions if s.topic == "__consumer_offsets"}
    cleaner = read_offset_checkpoint(path / "cleaner-offset-checkpoint")
    assert cleaner and all(tp.topic == "__consumer_offsets" for tp in cleaner)
    gaps = empty_kept = horizons = tombstones = 0
    for p, s in summaries.items():
        f = read_partition(path / f"__consumer_offsets-{p}")
        offsets = [o for b in f.batches for o in b.offsets]
        gaps += sum(1 for a, b in zip(offsets, offsets[1:], strict=False) if b != a + 1)
        empty_kept += sum(1 for b in f.batches if not b.offsets and b.producer_id >= 0)
        horizons += sum(1 for b in f.batches if b.delete_horizon is not None)
        for b in f.data_batches:
            for k, v in zip(b.keys, b.values, strict=True):
                key = read_offset_commit_key(k)
                assert partition_for_group(key["group"], 3) == p
                if v is None:
                    tombstones += 1
                else:
                    assert read_offset_commit_value(v)["commitTimestamp"] == b.timestamps[0]
        tp = TopicPartition("__consumer_offsets", p)
        if tp in cleaner:
            assert cleaner[tp] in f.segments and cleaner[tp] == s.cleaner_checkpoint
    assert gaps > 0 and empty_kept > 0 and horizons > 0 and tombstones > 0


def test_demo_root_checkpoints_match_the_partitions(demo):
    path, result = demo
    leo = {TopicPartition(s.topic, s.partition): s.log_end_offset for s in result.partitions}
    assert read_offset_checkpoint(path / "recovery-point-offset-checkpoint") == leo
    assert read_offset_checkpoint(path / "replication-offset-checkpoint") == leo
    ids = {s.topic: s.topic_id for s in result.partitions}
    assert len(set(ids.values())) == len(ids) and all(len(i) == 22 and not i.startswith("-") for i in ids.values())


# ---------------------------------------------------------------------------------------------- determinism

def test_same_seed_gives_byte_identical_trees_and_another_seed_does_not(demo, tmp_path):
    path, _ = demo
    again = tmp_path / "again"
    generate_sample(again, SampleSpec(demo_topics()), fsync=False)
    assert tree_digest(again) == tree_digest(path)
    assert {p.relative_to(again): p.stat().st_mtime_ns for p in iter_files(again)} == \
        {p.relative_to(path): p.stat().st_mtime_ns for p in iter_files(path)}
    other = tmp_path / "other"
    generate_sample(other, SampleSpec(demo_topics(), seed=2), fsync=False)
    a, b = tree_digest(other), tree_digest(path)
    assert sum(1 for k in a if a[k] != b.get(k)) > len(a) // 2


def test_custom_topics_are_deterministic_too(tmp_path):
    kw = dict(records=700, magics=(0, 1, 2), codecs=tuple(Codec), segment_bytes=16 * 1024, headers=2,
              transactional_producers=2, producers=1, abort_fraction=0.4, compacted=False)
    custom(tmp_path, "a", **kw)
    custom(tmp_path, "b", **kw)
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")


# ---------------------------------------------------------------------------------------------- options

@pytest.mark.parametrize("magics", [(0,), (1,), (2,), (0, 1, 2)], ids=["v0", "v1", "v2", "mix"])
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4])
def test_magic_and_codec(tmp_path, magics, codec):
    custom(tmp_path, records=300, magics=magics, codecs=(codec,), segment_bytes=8192)
    f = check_partition(tmp_path / "d" / "t-0", compacted=False, segment_bytes=8192)
    assert [b.magic for b in f.batches] == sorted(b.magic for b in f.batches)
    assert {b.magic for b in f.batches} == set(magics) and {b.codec for b in f.batches} == {codec}
    assert f.records == 300 and len(f.segments) > 1


def test_codec_mix_keeps_zstd_to_v2(tmp_path):
    custom(tmp_path, records=2000, magics=(0, 1, 2), codecs=tuple(Codec), batch_records=IntRange(4, 4))
    f = check_partition(tmp_path / "d" / "t-0", compacted=False)
    assert {b.codec for b in f.batches if b.magic == 2} == set(Codec)
    assert {b.codec for b in f.batches if b.magic < 2} == set(Codec) - {Codec.ZSTD}


def test_records_batch_records_value_bytes_keys(tmp_path):
    custom(tmp_path, records=1000, batch_records=IntRange(7, 7), value_bytes=IntRange(33, 33), key_cardinality=5)
    f = read_partition(tmp_path / "d" / "t-0")
    assert f.records == 1000 and {len(b.offsets) for b in f.batches[:-1]} == {7} and len(f.batches[-1].offsets) == 6
    assert {len(v) for b in f.batches for v in b.values} == {33}
    assert len({k for b in f.batches for k in b.keys}) == 5
    custom(tmp_path, "r", records=500, batch_records=IntRange(1, 50), value_bytes=IntRange(0, 300),
           key_cardinality=0)
    f = read_partition(tmp_path / "r" / "t-0")
    assert len({len(b.offsets) for b in f.batches}) > 10 and {k for b in f.batches for k in b.keys} == {None}
    sizes = [len(v) for b in f.batches for v in b.values]
    assert min(sizes) < 30 and max(sizes) > 270


def test_null_key_fraction_headers_timestamp_type(tmp_path):
    custom(tmp_path, records=4000, null_key_fraction=0.25, headers=4, timestamp_type=TimestampType.LOG_APPEND_TIME)
    f = read_partition(tmp_path / "d" / "t-0")
    keys = [k for b in f.batches for k in b.keys]
    assert 0.2 < keys.count(None) / len(keys) < 0.3
    assert {h for b in f.batches for h in b.headers} == {4}
    assert {b.timestamp_type for b in f.batches} == {TimestampType.LOG_APPEND_TIME}


def test_transactional_and_abort_fraction(tmp_path):
    custom(tmp_path, "none", records=600, transactional_producers=2, producers=0, abort_fraction=0.0)
    f = check_partition(tmp_path / "none" / "t-0", compacted=False)
    assert all(b.transactional for b in f.batches) and not f.aborted
    assert {b.control for b in f.batches if b.control is not None} == {1}
    assert not list((tmp_path / "none" / "t-0").glob("*.txnindex"))
    custom(tmp_path, "all", records=600, transactional_producers=3, producers=0, abort_fraction=1.0,
           segment_bytes=4096)
    f = check_partition(tmp_path / "all" / "t-0", compacted=False, segment_bytes=4096)
    assert {b.control for b in f.batches if b.control is not None} == {0}
    assert sum(len(v) for v in f.aborted.values()) == sum(1 for b in f.batches if b.control == 0)


def test_segment_bytes_and_index_interval(tmp_path):
    custom(tmp_path, "a", records=3000, segment_bytes=20_000, index_interval_bytes=0)
    f = check_partition(tmp_path / "a" / "t-0", compacted=False, segment_bytes=20_000, index_interval_bytes=0)
    assert len(f.segments) > 5
    for base in f.segments:
        n = sum(1 for b in f.batches if b.segment == base)
        assert (tmp_path / "a" / "t-0" / f"{base:020d}.index").stat().st_size == 8 * (n - 1)  # all but position 0
    custom(tmp_path, "b", records=3000, segment_bytes=20_000, index_interval_bytes=8192)
    check_partition(tmp_path / "b" / "t-0", compacted=False, index_interval_bytes=8192)
    assert (tmp_path / "b" / "t-0" / f"{f.segments[0]:020d}.index").stat().st_size < 8 * 4


def test_partition_bytes_partitions_topics_retention_epochs(tmp_path):
    spec = SampleSpec((TopicSpec("x", partitions=2, records=0, partition_bytes=300_000, segment_bytes=50_000,
                                 retention_bytes=120_000, leader_epochs=4),
                       TopicSpec("y", records=10)), profile="custom")
    result = generate_sample(tmp_path / "d", spec, fsync=False)
    assert sorted(p.name for p in (tmp_path / "d").iterdir() if p.is_dir()) == ["x-0", "x-1", "y-0"]
    for s in result.partitions[:2]:
        # The log grew to 300 kB; retention then deleted the oldest segments while >= 120 kB stayed.
        assert s.log_start_offset == s.segments[0].base_offset > 0
        assert 120_000 <= s.bytes < 120_000 + 50_000
        f = check_partition(tmp_path / "d" / f"x-{s.partition}", compacted=False, segment_bytes=50_000,
                            log_start_offset=s.log_start_offset)
        assert len({b.leader_epoch for b in f.batches}) >= 2


def test_compacted_custom_topic(tmp_path):
    r = custom(tmp_path, records=4000, compacted=True, key_cardinality=50, tombstone_fraction=0.05,
               segment_bytes=16 * 1024, clean_every_rolls=2)
    s = r.partitions[0]
    f = check_partition(tmp_path / "d" / "t-0", compacted=True, segment_bytes=16 * 1024)
    offsets = [o for b in f.batches for o in b.offsets]
    assert len(offsets) < 4000 and offsets[-1] == 3999 and s.cleaner_checkpoint in f.segments
    cleaned = [o for o in offsets if o < s.cleaner_checkpoint]
    keys = [k for b in f.batches for o, k in zip(b.offsets, b.keys, strict=True) if o < s.cleaner_checkpoint]
    assert len(keys) == len(set(keys)) and len(cleaned) <= 50  # one record per key in the cleaned part
    cp = read_offset_checkpoint(tmp_path / "d" / "cleaner-offset-checkpoint")
    assert cp == {TopicPartition("t", 0): s.cleaner_checkpoint}


def test_compressible_changes_the_compression_ratio(tmp_path):
    sizes = {}
    for c in (0.0, 0.9):
        r = custom(tmp_path, f"c{c}", records=2000, value_bytes=IntRange(500, 500), codecs=(Codec.LZ4,),
                   compressible=c)
        sizes[c] = r.partitions[0].bytes
    assert sizes[0.9] < sizes[0.0] / 1.5
    raw = b"".join(v for b in read_partition(tmp_path / "c0.0" / "t-0").batches for v in b.values if v)
    assert len(zlib.compress(raw)) > 0.95 * len(raw)


def test_preallocated_active_indexes_are_a_crashed_brokers(tmp_path):
    r = custom(tmp_path, clean=False, records=3000, segment_bytes=30_000, producers=2)
    s = r.partitions[0]
    d = tmp_path / "d"
    assert not (d / ".kafka_cleanshutdown").exists()
    check_partition(d / "t-0", compacted=False, segment_bytes=30_000, preallocated_active=True)
    active = s.segments[-1].base_offset
    assert read_offset_checkpoint(d / "recovery-point-offset-checkpoint") == {TopicPartition("t", 0): active}
    for seg in s.segments[:-1]:
        assert (d / "t-0" / f"{seg.base_offset:020d}.index").stat().st_size % 8 == 0
        assert (d / "t-0" / f"{seg.base_offset:020d}.index").stat().st_size < 10_000


def test_snapshot_entries_follow_javas_hashmap_order():
    # Long.hashCode -> HashMap bucket (h ^ h >>> 16) & 15: 17 and 1 share bucket 1, insertion order inside.
    assert java_hashmap_order([17, 3, 1, 2]) == [17, 1, 2, 3]
    assert java_hashmap_order([1 << 32, 5]) == [1 << 32, 5]  # (int)(v ^ v >>> 32) = 1 -> bucket 1 before 5
    assert java_hashmap_order(list(range(20, 0, -1)))[:3] == [1, 2, 3]  # 20 entries: capacity 32


def test_demo_snapshots_hold_every_producer_of_the_partition(demo):
    path, result = demo
    s = next(p for p in result.partitions if p.topic == "payments")
    entries = read_snapshot(path / f"payments-0/{s.log_end_offset:020d}.snapshot")
    assert len(entries) == 3 and all(e.current_txn_first_offset == -1 for e in entries)
    mid = [read_snapshot(path / f"payments-0/{o:020d}.snapshot") for o in s.snapshots[:-1]]
    assert any(e.current_txn_first_offset >= 0 for es in mid for e in es)  # a roll inside a transaction


# ---------------------------------------------------------------------------------------------- encoders

@pytest.mark.parametrize("seed", range(5))
def test_encode_records_is_byte_identical_to_encode_record(seed):
    import random

    rng = random.Random(seed)
    recs = []
    offset, ts = 1000, 1_700_000_000_000
    for _ in range(300):
        offset += rng.choice((1, 1, 1, 2, 70, 9000))
        ts += rng.choice((0, 1, -5, 100_000, -9_000_000, 2**40))
        key = rng.choice((None, b"", b"k" * rng.randrange(200), b"\xff" * 9000))
        value = rng.choice((None, b"", b"v" * rng.randrange(300), b"x" * 70_000))
        headers = rng.choice(((), (("h", b"x"),), (("\u00e9t\u00e9", None), ("k", b"y" * 100)), [("l", b"z")]))
        recs.append((offset, ts, key, value, headers))
    base, base_ts = 999, recs[0][1]
    area, last, max_ts = encode_records(recs, base, base_ts)
    assert area == b"".join(encode_record(o - base, t - base_ts, k, v, h) for o, t, k, v, h in recs)
    assert last == recs[-1][0] and max_ts == max(r[1] for r in recs)
    with pytest.raises(ValueError):
        encode_records([(5, 0, None, None, ()), (5, 0, None, None, ())], 0, 0)


@pytest.mark.parametrize("magic", [0, 1])
def test_encode_entries_is_byte_identical_to_encode_message(magic):
    recs = [(7 + i, 1_700_000_000_000 + i * 3, None if i % 5 == 0 else b"k%d" % i, None if i % 7 == 0 else
             b"v" * (i * 13), ()) for i in range(60)]
    attrs = 0x08 if magic else 0
    for ts in (None, 1_700_000_999_999):
        data, max_ts = encode_entries(recs, magic=magic, attributes=attrs, timestamp=ts, offset_shift=7)
        want = b"".join(encode_entry(o - 7, encode_message(magic, attrs, -1 if magic == 0 else (ts or t), k, v))
                        for o, t, k, v, _ in recs)
        assert data == want


def test_build_batch_override_last_offset():
    b = build_batch([(10, 5, b"k", b"v", ())], override_last_offset=14, producer_id=3, producer_epoch=0,
                    base_sequence=100)
    from kafkatool.record.file_records import iter_batches

    (batch,) = list(iter_batches(b))
    assert batch.is_valid() and batch.last_offset == 14 and batch.last_sequence == 104
    with pytest.raises(ValueError):
        build_batch([(10, 5, b"k", b"v", ())], override_last_offset=9)


def test_offset_commit_records_round_trip_and_group_partitioning():
    k = offset_commit_key("order-fulfilment", "orders", 2)
    assert k == bytes.fromhex("0001") + b"\x00\x10order-fulfilment" + b"\x00\x06orders" + bytes.fromhex("00000002")
    assert read_offset_commit_key(k) == {"group": "order-fulfilment", "topic": "orders", "partition": 2}
    v = offset_commit_value(1234, leader_epoch=7, commit_timestamp=1_717_401_600_000)
    # v3: version, offset, leaderEpoch, metadata (int16 length), commitTimestamp
    assert v == bytes.fromhex("0003" "00000000000004d2" "00000007" "0000" "0000018fdd1cc000")
    assert read_offset_commit_value(v) == {"offset": 1234, "leaderEpoch": 7, "metadata": "",
                                           "commitTimestamp": 1_717_401_600_000, "expireTimestamp": -1}
    # String.hashCode vectors (Java): "" -> 0, "a" -> 97, "hello" -> 99162322, "Aa" == "BB" == 2112
    assert [java_string_hash(s) for s in ("", "a", "hello", "Aa", "BB")] == [0, 97, 99162322, 2112, 2112]
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE: Utils.abs gives 0
    assert partition_for_group("polygenelubricants", 50) == 0


# ---------------------------------------------------------------------------------------------- CLI

def test_cli_default_profile_text_output(tmp_path):
    r = run_cli("sample", tmp_path / "demo", "--records", "200")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["PARTITION", "FORMATS", "CODECS"]
    assert any(line.startswith("payments-0 ") and "aborted" in line for line in lines)
    assert "kafkatool sample: wrote 15 partitions of 8 topics" in r.stderr
    check_partition(tmp_path / "demo" / "legacy-events-0", compacted=False)


def test_cli_json_and_custom_options(tmp_path):
    r = run_cli("sample", tmp_path / "c", "--topics", "a,b", "--partitions", "2", "--magic", "mix", "--codec",
                "gzip,lz4", "--records", "400", "--batch-records", "5-9", "--value-bytes", "64",
                "--segment-bytes", "8KiB", "--transactional", "--abort-fraction", "0.5", "--format", "json")
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["type"] for o in objs] == ["partition"] * 4 + ["summary"] and all(o["schema"] == 1 for o in objs)
    assert objs[-1]["profile"] == "custom" and objs[-1]["partitions"] == 4
    assert {o["topic"] for o in objs[:-1]} == {"a", "b"} and all(o["magics"] == [0, 1, 2] for o in objs[:-1])
    assert all(o["aborted_txns"] + o["committed_txns"] > 0 for o in objs[:-1])
    for o in objs[:-1]:
        check_partition(tmp_path / "c" / f"{o['topic']}-{o['partition']}", compacted=False, segment_bytes=8192)


def test_cli_bench_profile_is_one_big_segment(tmp_path):
    r = run_cli("sample", tmp_path / "b", "--profile", "bench", "--partition-bytes", "2MiB", "--value-bytes", "100",
                "--batch-records", "256", "--codec", "snappy", "--format", "json")
    assert r.returncode == 0, r.stderr
    part = json.loads(r.stdout.splitlines()[0])
    assert part["topic"] == "bench" and len(part["segments"]) == 1 and part["bytes"] >= 2 * 1024 * 1024
    assert part["codecs"] == ["snappy"]


@pytest.mark.parametrize("args,message", [
    (["--magic", "0", "--codec", "zstd"], "zstd needs message format v2"),
    (["--magic", "1", "--headers", "2"], "record headers need message format v2"),
    (["--magic", "0", "--transactional"], "transactions need message format v2"),
    (["--magic", "0", "--timestamp-type", "append"], "v0 has no timestamps"),
    (["--compacted", "--key-cardinality", "0"], "needs keys"),
    (["--profile", "demo", "--codec", "lz4"], "demo profile is fixed"),
    (["--magic", "3"], "expected 0, 1, 2 or mix"),
    (["--codec", "brotli"], "unknown codec"),
    (["--batch-records", "0"], "--batch-records"),
    (["--topics", "bad/name"], "illegal topic name"),
    (["--abort-fraction", "2", "--transactional"], "within 0..1"),
    (["--segment-bytes", "10"], "at least 14"),
])
def test_cli_refuses_what_a_broker_would_refuse(tmp_path, args, message):
    r = run_cli("sample", tmp_path / "x", *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x").exists()


def test_cli_never_writes_into_a_non_empty_dir_or_a_file(tmp_path):
    d = tmp_path / "full"
    d.mkdir()
    (d / "keep.txt").write_text("mine")
    r = run_cli("sample", d)
    assert r.returncode == 2 and "is not empty" in r.stderr
    assert [p.name for p in d.iterdir()] == ["keep.txt"] and (d / "keep.txt").read_text() == "mine"
    f = tmp_path / "file"
    f.write_text("x")
    r = run_cli("sample", f)
    assert r.returncode == 2 and "not a directory" in r.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kafkatool-tmp")]


def test_cli_writes_into_an_existing_empty_dir(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    r = run_cli("sample", d, "--records", "50", "--topics", "t")
    assert r.returncode == 0, r.stderr
    assert (d / "t-0" / "00000000000000000000.log").exists()


def test_cli_refuses_a_live_brokers_dir(tmp_path):
    d = tmp_path / "live"
    d.mkdir()
    (d / ".lock").touch()
    # Another process holds the POSIX lock, as a broker's FileChannel.tryLock does.
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'r+'); "
                               "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
                               str(d / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        r = run_cli("sample", d)
        assert r.returncode == 3 and "live broker" in r.stderr
    finally:
        holder.kill()
        holder.wait()
    assert [p.name for p in d.iterdir()] == [".lock"]


# ---------------------------------------------------------------------------------------------- interop

@pytest.mark.interop
def test_kafka_reads_every_log_of_the_default_dir(demo, kafka_ref):
    """Kafka's own FileRecords reads every segment of the default dir: every batch valid, every record
    decoded, the same batches and record counts as ours."""
    path, result = demo
    logs = [path / f"{s.topic}-{s.partition}" / f"{seg.base_offset:020d}.log" for s in result.partitions
            for seg in s.segments]
    groups = [[kafka_ref.dump_args(log, deep=True, payload="crc32")] for log in logs]
    runs = [g[0] for g in kafka_ref.run_batches(groups)]
    facts = {d: read_partition(d) for d in {log.parent for log in logs}}
    for log, run in zip(logs, runs, strict=True):
        assert run.returncode == 0, (log, run.lines[-3:], run.stderr[-2000:])
        batches = run.of_type("batch")
        assert all(b["isValid"] for b in batches)
        base = int(log.name.split(".")[0])
        ours = [b for b in facts[log.parent].batches if b.segment == base]
        assert [(b["baseOffset"], b["lastOffset"], b["magic"]) for b in batches] == \
            [(b.base_offset, b.last_offset, b.magic) for b in ours]
        assert len(run.of_type("record")) == sum(len(b.offsets) for b in ours)
