"""What the brokers are made to write: topics, configs and produced records, sized to cover each case once.

Deterministic records (a seeded ``random.Random``): keys from a small key space (so the cleaner has duplicates),
some null keys, values of varied length, headers on v2 topics, and, per codec, batches interleaved in one
partition (one producer per codec, flushed in turn).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from kafka.structs import OffsetAndMetadata, TopicPartition

from kafkatool.canary.sandbox import BrokerSandbox
from tests.broker.clients import Msg, create_topics, producer, send_all

LEGACY_CODECS = ("none", "gzip", "snappy", "lz4")
V2_CODECS = (*LEGACY_CODECS, "zstd")
SMALL_SEGMENT = 16 * 1024


def messages(seed: int, n: int, *, headers: bool = False, null_keys: float = 0.1, keys: int = 50,
             value_bytes: tuple[int, int] = (10, 200), tombstones: float = 0.0) -> Iterator[Msg]:
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"segment", b"offset", "\u00e9t\u00e9".encode()]
    for i in range(n):
        key = None if rng.random() < null_keys else f"key-{rng.randrange(keys)}".encode()
        if key is not None and rng.random() < tombstones:
            value = None
        else:
            size = rng.randint(*value_bytes)
            value = b" ".join(rng.choice(words) for _ in range(size // 6 + 1))[:size]
        hs: tuple[tuple[str, bytes], ...] = ()
        if headers and rng.random() < 0.7:
            hs = tuple((f"h{j}", f"{seed}-{i}-{j}".encode()) for j in range(rng.randint(1, 3)))
        yield Msg(key, value, hs)


def produce_codecs(broker: BrokerSandbox, topic: str, partition: int, codecs: tuple[str, ...], *, seed: int,
                   per_codec: int, rounds: int = 4, headers: bool = False, **producer_config: object) -> int:
    """``per_codec`` records with each codec into one partition, codecs taking turns in ``rounds`` rounds."""
    producers = {c: producer(broker, compression_type=None if c == "none" else c, **producer_config)
                 for c in codecs}
    sent = 0
    try:
        for r in range(rounds):
            for i, c in enumerate(codecs):
                n = per_codec // rounds
                send_all(producers[c], topic, partition,
                         messages(seed * 1000 + r * 10 + i, n, headers=headers), batch_every=max(1, n // 3))
                sent += n
    finally:
        for p in producers.values():
            p.close()
    return sent


# ---------------------------------------------------------------------------------------------- ZooKeeper 3.9

ZK_BROKER_PROPERTIES = {
    "inter.broker.protocol.version": "2.8",
    "log.retention.check.interval.ms": "1000",
    # the retention check's first run, 30 s after start by default: the run waits for its deletes
    "log.initial.task.delay.ms": "0",
    "log.segment.delete.delay.ms": "0",
    "log.cleaner.backoff.ms": "500",
}
# The per-topic message.format.version makes the broker itself write v0 (0.9.0) and v1 (0.10.2).
ZK_TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "v0-events": (1, {"message.format.version": "0.9.0", "segment.bytes": str(SMALL_SEGMENT)}),
    "v1-events": (1, {"message.format.version": "0.10.2", "segment.bytes": str(SMALL_SEGMENT)}),
    "v1-append": (1, {"message.format.version": "0.10.2", "message.timestamp.type": "LogAppendTime"}),
    "v1-compact": (1, {"message.format.version": "0.10.2", "cleanup.policy": "compact",
                       "segment.bytes": str(SMALL_SEGMENT), "min.cleanable.dirty.ratio": "0.01",
                       "delete.retention.ms": "3600000"}),
    "v2-events": (2, {"segment.bytes": str(SMALL_SEGMENT)}),
    # fetched with FetchRequest v0-v3: one codec per partition (none, gzip, snappy, lz4)
    "v2-fetch": (len(LEGACY_CODECS), {"segment.bytes": str(4 * SMALL_SEGMENT)}),
    # downconverted by kafkatool, then loaded by this broker configured for the target format
    "dc0": (1, {"segment.bytes": str(SMALL_SEGMENT)}),
    "dc1": (1, {"segment.bytes": str(SMALL_SEGMENT)}),
    # damaged, then recovered by the broker
    "rec": (3, {"segment.bytes": str(SMALL_SEGMENT)}),
}


def zk_produce(broker: BrokerSandbox, half: int) -> None:
    """One half of the ZooKeeper broker's data (the broker restarts between the halves: a leader-epoch bump)."""
    s = 100 * half
    produce_codecs(broker, "v0-events", 0, LEGACY_CODECS, seed=s + 1, per_codec=60)
    produce_codecs(broker, "v1-events", 0, LEGACY_CODECS, seed=s + 2, per_codec=60)
    # pinned old produce versions: magic 1 (Produce v2) and magic 0 (Produce v1) straight from the client
    produce_codecs(broker, "v1-events", 0, ("none", "gzip"), seed=s + 3, per_codec=20, api_version=(0, 10, 1))
    produce_codecs(broker, "v0-events", 0, ("none", "snappy"), seed=s + 4, per_codec=20, api_version=(0, 9))
    produce_codecs(broker, "v1-append", 0, ("none", "lz4"), seed=s + 5, per_codec=40)
    p = producer(broker, compression_type="gzip")
    try:
        send_all(p, "v1-compact", 0, messages(s + 6, 300, keys=20, tombstones=0.1, null_keys=0.0), batch_every=25)
    finally:
        p.close()
    for part in (0, 1):
        produce_codecs(broker, "v2-events", part, V2_CODECS, seed=s + 7 + part, per_codec=50, headers=True,
                       enable_idempotence=True)
    for part, codec in enumerate(LEGACY_CODECS):
        produce_codecs(broker, "v2-fetch", part, (codec,), seed=s + 15 + part, per_codec=150, rounds=3,
                       headers=True, enable_idempotence=True)
    produce_codecs(broker, "dc0", 0, LEGACY_CODECS, seed=s + 9, per_codec=40, headers=True)
    produce_codecs(broker, "dc1", 0, LEGACY_CODECS, seed=s + 10, per_codec=40, headers=True)
    for part in range(3):
        produce_codecs(broker, "rec", part, ("none", "lz4"), seed=s + 11 + part, per_codec=80, headers=True)


# ---------------------------------------------------------------------------------------------- KRaft (3.9, 4.x)

KRAFT_BROKER_PROPERTIES = {
    "log.retention.check.interval.ms": "1000",
    # the retention check's first run, 30 s after start by default: the run waits for its deletes
    "log.initial.task.delay.ms": "0",
    "log.segment.delete.delay.ms": "0",
    "log.cleaner.backoff.ms": "500",
    "offsets.topic.num.partitions": "2",
}
KRAFT_TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "codecs": (len(V2_CODECS), {"segment.bytes": str(SMALL_SEGMENT)}),
    "txn": (2, {"segment.bytes": str(SMALL_SEGMENT)}),
    "lat": (1, {"message.timestamp.type": "LogAppendTime"}),
    "roll-time": (1, {"segment.ms": "250"}),
    "retention": (1, {"segment.bytes": str(SMALL_SEGMENT // 2), "retention.bytes": str(SMALL_SEGMENT)}),
    "compacted": (1, {"cleanup.policy": "compact", "segment.bytes": str(SMALL_SEGMENT),
                      "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "3600000",
                      "min.compaction.lag.ms": "0"}),
}
GROUP = "kafkatool-broker-tests"


@dataclass
class KraftCounts:
    committed_txns: int = 0
    aborted_txns: int = 0


def kraft_produce(broker: BrokerSandbox, half: int, counts: KraftCounts) -> None:
    s = 100 * half
    for part, codec in enumerate(V2_CODECS):
        produce_codecs(broker, "codecs", part, (codec,), seed=s + 20 + part, per_codec=120, rounds=3, headers=True,
                       enable_idempotence=True)
    produce_codecs(broker, "lat", 0, ("none", "snappy"), seed=s + 30, per_codec=40, headers=True)
    # transactions: committed and aborted, both partitions, offsets committed inside some (transactional offset
    # commits in __consumer_offsets, transaction metadata in __transaction_state)
    tp = producer(broker, transactional_id=f"txn-producer-{half}", compression_type="lz4")
    try:
        tp.init_transactions()
        for t in range(8):
            tp.begin_transaction()
            for part in (0, 1):
                for m in messages(s + 40 + t * 2 + part, 15, headers=True):
                    tp.send("txn", value=m.value, key=m.key, headers=list(m.headers) or None, partition=part)
            if t % 3 == 1:
                tp.send_offsets_to_transaction({TopicPartition("codecs", 0): OffsetAndMetadata(t, "", -1)}, GROUP)
            tp.flush(timeout=60)  # sent before the end: an abort drops a client's unsent batches instead
            if t % 3 == 2:
                tp.abort_transaction()
                counts.aborted_txns += 1
            else:
                tp.commit_transaction()
                counts.committed_txns += 1
    finally:
        tp.close()
    # compaction: overwritten keys, tombstones, an idempotent producer and an aborted transaction on the topic
    p = producer(broker, enable_idempotence=True, compression_type="gzip")
    try:
        send_all(p, "compacted", 0, messages(s + 50, 400, keys=15, tombstones=0.15, null_keys=0.0), batch_every=20)
    finally:
        p.close()
    cp = producer(broker, transactional_id=f"compact-txn-{half}")
    try:
        cp.init_transactions()
        cp.begin_transaction()
        for m in messages(s + 51, 20, keys=15, null_keys=0.0):
            cp.send("compacted", value=m.value, key=m.key, partition=0)
        cp.flush(timeout=60)
        cp.abort_transaction()
        cp.begin_transaction()
        for m in messages(s + 52, 20, keys=15, null_keys=0.0):
            cp.send("compacted", value=m.value, key=m.key, partition=0)
        cp.commit_transaction()
    finally:
        cp.close()
    p = producer(broker)
    try:
        send_all(p, "retention", 0, messages(s + 60, 300, value_bytes=(100, 200)), batch_every=10)
        for r in range(3):  # segment.ms=250: a roll by time between these appends
            send_all(p, "roll-time", 0, messages(s + 70 + r, 10))
            time.sleep(0.3)
    finally:
        p.close()
    commit_group_offsets(broker, half)


def commit_group_offsets(broker: BrokerSandbox, half: int) -> None:
    from kafka import KafkaConsumer

    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        tps = [TopicPartition("codecs", i) for i in range(len(V2_CODECS))]
        c.assign(tps)
        for i, tp in enumerate(tps):
            c.commit({tp: OffsetAndMetadata(10 * half + i, f"meta-{half}", -1)})
    finally:
        c.close()


def create_kraft_topics(broker: BrokerSandbox) -> None:
    create_topics(broker, KRAFT_TOPICS)
