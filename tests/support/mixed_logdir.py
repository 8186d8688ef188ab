"""A small mixed-format broker log dir for scan tests, with properties ``kafkatool sample`` does not have:
a damaged segment, keys routed by murmur2 and by CRC32, Kafka-written batches with Kafka's own figures.

Origin of the bytes: batches built with kafkatool's own builders, which reproduce Kafka's
``MemoryRecordsBuilder`` (v2 batches byte-identical to kafka-clients 3.9.1 for uncompressed data,
see tests/record/test_records.py), and segments written by Kafka's own ``MemoryRecordsBuilder`` through
``kafka-ref gen`` (``tests/support/kafkaref.py`` locates or builds it). Index files are rebuilt by
``recover.py`` (Kafka 3.9 ``LogSegment.recover`` rules) so planning can cut segments at their entries.

Contents (deterministic: seeded):

* ``orders-0..2``: v2, every codec, keys routed by murmur2 over 3 partitions (the Java partitioner),
  some null keys, headers, a few out-of-order timestamps, two segments per partition.
* ``clicks-0..1``: v2, keys routed by CRC32 over 2 partitions (librdkafka's consistent partitioner).
* ``legacy-0``: v0 and v1 entries and wrappers (gzip, snappy, lz4; v1 LogAppendTime), then v2 batches
  after a format upgrade, in the same segment.
* ``txn-0``: transactional batches with commit and abort markers.
* ``damaged-0``: a batch whose CRC no longer matches, and a torn last batch.
* ``ref-0``: Kafka-written v1 and v2 batches in every codec, transactional markers.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import zlib
from pathlib import Path

from kafkatool.log.index import encode_offset_index, encode_time_index
from kafkatool.log.recovery import recover_segment
from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.scan.keyshare import partition_for_key

TS = 1_700_000_000_000
CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]


def _write_segment(pdir: Path, base_offset: int, data: bytes, *, index_interval: int = 1024) -> Path:
    pdir.mkdir(parents=True, exist_ok=True)
    log = pdir / f"{base_offset:020d}.log"
    log.write_bytes(data)
    _write_indexes(log, base_offset, index_interval)
    return log


def _write_indexes(log: Path, base_offset: int, index_interval: int) -> None:
    rec = recover_segment(log, base_offset, index_interval_bytes=index_interval)
    log.with_suffix(".index").write_bytes(encode_offset_index(rec.offset_entries, base_offset))
    log.with_suffix(".timeindex").write_bytes(encode_time_index(rec.time_entries, base_offset))


def _v2_partition(rng: random.Random, offset: int, n_batches: int, keys_for: list[bytes | None],
                  ts0: int) -> tuple[bytes, int]:
    out = []
    ts = ts0
    for b in range(n_batches):
        recs = []
        for _ in range(rng.randint(1, 12)):
            key = rng.choice(keys_for)
            ts += rng.randint(0, 50)
            t = ts - 500 if rng.random() < 0.05 else ts  # an occasional out-of-order timestamp
            value = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40))) + b"x" * rng.randint(0, 300)
            headers = [("trace", b"%d" % offset)] if rng.random() < 0.3 else []
            recs.append((offset, t, key, value, headers))
            offset += 1
        out.append(v2.build_batch(recs, codec=CODECS[b % len(CODECS)], partition_leader_epoch=3))
    return b"".join(out), offset


def build_mixed_logdir(root: Path, kafka_ref: str | os.PathLike[str] | None) -> list[dict[str, object]]:
    """Write the log dir described in the module docstring under ``root``.

    ``kafka_ref`` is the kafka-ref launcher (``tests/support/kafkaref.py``); returns its own ``gen`` reports for
    ``ref-0`` ([] when no launcher is given): Kafka's figures to compare ours with.
    """
    rng = random.Random(20240607)
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\nbroker.id=1\n")

    # orders: keys routed by the Java default partitioner (murmur2) over 3 partitions.
    users = [b"user-%d" % i for i in range(40)]
    by_part: dict[int, list[bytes | None]] = {0: [], 1: [], 2: []}
    for k in users:
        by_part[partition_for_key(k, 3)].append(k)
    for p in range(3):
        keys: list[bytes | None] = [*by_part[p], None]
        data1, nxt = _v2_partition(rng, 0, 40, keys, TS)
        _write_segment(root / f"orders-{p}", 0, data1)
        data2, _ = _v2_partition(rng, nxt, 25, keys, TS + 100_000)
        _write_segment(root / f"orders-{p}", nxt, data2)

    # clicks: keys routed as librdkafka's consistent partitioner does (CRC32).
    pages = [b"page/%d" % i for i in range(30)]
    for p in range(2):
        keys = [k for k in pages if zlib.crc32(k) % 2 == p]
        data, _ = _v2_partition(rng, 0, 30, keys, TS)
        _write_segment(root / f"clicks-{p}", 0, data)

    # legacy: v0, v1 (incl. LogAppendTime wrapper), then v2 after the upgrade, one segment.
    parts = []
    off = 0
    for i in range(6):
        recs = [(off + j, -1, b"k%d" % j, b"v0-%d" % (off + j)) for j in range(3)]
        parts.append(legacy.build_entries(recs, magic=0, codec=[Codec.NONE, Codec.GZIP, Codec.SNAPPY][i % 3]))
        off += 3
    for i in range(8):
        recs = [(off + j, TS + off + j, b"k%d" % j if j else None, b"v1-%d" % (off + j)) for j in range(4)]
        codec = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4][i % 4]
        lat = i == 3
        parts.append(legacy.build_entries(recs, magic=1, codec=codec,
                                          timestamp_type=TimestampType.LOG_APPEND_TIME if lat else
                                          TimestampType.CREATE_TIME, log_append_time=TS + 999_999))
        off += 4
    data, _ = _v2_partition(rng, off, 10, [b"k1", b"k2", None], TS + 2_000_000)
    parts.append(data)
    _write_segment(root / "legacy-0", 0, b"".join(parts))

    # txn: transactional batches, commit and abort markers.
    parts = []
    off = 0
    for t in range(6):
        for _ in range(2):
            recs = [(off + j, TS + off, b"acct-%d" % (off % 5), b"debit" * 5, []) for j in range(3)]
            parts.append(v2.build_batch(recs, codec=Codec.LZ4, producer_id=4242, producer_epoch=1,
                                        base_sequence=off, is_transactional=True))
            off += 3
        parts.append(v2.build_end_txn_marker(offset=off, timestamp=TS + off, producer_id=4242, producer_epoch=1,
                                             commit=t % 3 != 2, coordinator_epoch=7))
        off += 1
    _write_segment(root / "txn-0", 0, b"".join(parts))

    # damaged: one batch with a flipped value byte (CRC mismatch), then a torn last batch.
    data, _ = _v2_partition(rng, 0, 12, [b"a", b"b"], TS)
    good = bytearray(data)
    batches = []
    p = 0
    while p < len(good):
        size = int.from_bytes(good[p + 8:p + 12], "big") + 12
        batches.append((p, size))
        p += size
    bad_pos, bad_size = batches[5]
    good[bad_pos + bad_size - 2] ^= 0xFF
    torn = bytes(good) + v2.build_batch([(999, TS, b"a", b"torn" * 20, [])])[:50]
    pdir = root / "damaged-0"
    pdir.mkdir()
    (pdir / f"{0:020d}.log").write_bytes(torn)

    return _kafka_ref_partition(os.fspath(kafka_ref), root / "ref-0") if kafka_ref else []


def _kafka_ref_partition(launcher: str, pdir: Path) -> list[dict[str, object]]:
    pdir.mkdir()
    log = pdir / f"{0:020d}.log"
    env = dict(os.environ, KAFKA_REF_JAVA_OPTS="-Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    common = ["--key-cardinality", "12", "--null-key-fraction", "0.1", "--value-bytes", "120"]
    first = subprocess.run([launcher, "gen", "--out", str(log), "--magic", "1", "--codec", "none,gzip,snappy,lz4",
                            "--records", "160", "--batch-records", "8", "--seed", "11", *common],
                           check=True, capture_output=True, text=True, env=env, timeout=120)
    second = subprocess.run([launcher, "gen", "--out", str(log), "--append", "--magic", "2",
                             "--codec", "none,gzip,snappy,lz4,zstd", "--records", "300", "--batch-records", "10",
                             "--seed", "12", "--base-offset", "160", "--start-ts", str(TS + 10_000_000),
                             "--transactional", "--producer-id", "77", "--control-every", "4", "--headers", "1",
                             *common],
                            check=True, capture_output=True, text=True, env=env, timeout=120)
    _write_indexes(log, 0, 1024)
    return [json.loads(first.stdout.strip().splitlines()[-1]), json.loads(second.stdout.strip().splitlines()[-1])]
