"""Clients of the sandbox brokers: kafka-python for topics, producing and consuming, and raw Fetch v0-v3 requests
where a client would hide the bytes (kafkatool.fetch's request/response framing over canary.wire)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from kafkatool.canary.sandbox import BrokerSandbox
from kafkatool.canary.wire import BrokerConnection
from kafkatool.fetch import FetchPartition, ParsedResponse, encode_fetch_request, parse_response

logging.getLogger("kafka").setLevel(logging.ERROR)

TIMEOUT_MS = 60_000


def admin(broker: BrokerSandbox) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=TIMEOUT_MS)


def create_topics(broker: BrokerSandbox, topics: Mapping[str, tuple[int, Mapping[str, str]]]) -> None:
    """``{name: (partitions, topic configs)}``; returns when every partition has a leader."""
    a = admin(broker)
    try:
        a.create_topics([NewTopic(name, n, 1, topic_configs=dict(cfg)) for name, (n, cfg) in topics.items()],
                        timeout_ms=TIMEOUT_MS)
    finally:
        a.close()
    wait_for_leaders(broker, {name: n for name, (n, _) in topics.items()})


def wait_for_leaders(broker: BrokerSandbox, topics: Mapping[str, int], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    a = admin(broker)
    try:
        while True:
            described = {t["name"]: t for t in a.describe_topics(list(topics))}
            if all(t in described and described[t]["error_code"] == 0
                   and sum(p["leader_id"] >= 0 for p in described[t]["partitions"]) == n
                   for t, n in topics.items()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"no leaders for {sorted(topics)} within {timeout} s: {described}")
            time.sleep(0.05)
    finally:
        a.close()


def create_offsets_topic(broker: BrokerSandbox, partitions: int, timeout: float = 60) -> None:
    """``__consumer_offsets`` is created by the group coordinator on the first FindCoordinator (with the broker's
    ``offsets.topic.num.partitions``), never by CreateTopics."""
    a = admin(broker)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                a.describe_groups(["kafkatool-probe"])
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        a.close()
    wait_for_leaders(broker, {"__consumer_offsets": partitions}, timeout)


def alter_topic_configs(broker: BrokerSandbox, topic: str, configs: Mapping[str, str]) -> None:
    a = admin(broker)
    try:
        a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=dict(configs))])
    finally:
        a.close()


def producer(broker: BrokerSandbox, **config: Any) -> KafkaProducer:
    config.setdefault("acks", "all")
    # kafka-python 3 defaults to idempotence, which v0/v1 topics refuse; transactions need it
    config.setdefault("enable_idempotence", "transactional_id" in config)
    config.setdefault("linger_ms", 5)
    config.setdefault("request_timeout_ms", 30_000)
    return KafkaProducer(bootstrap_servers=broker.bootstrap, **config)


@dataclass(frozen=True)
class Msg:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int | None = None


def send_all(p: KafkaProducer, topic: str, partition: int, msgs: Iterable[Msg], *, batch_every: int = 0) -> None:
    """Send ``msgs`` in order, flushing every ``batch_every`` messages (a batch boundary) and at the end."""
    futures = []
    for i, m in enumerate(msgs, 1):
        futures.append(p.send(topic, value=m.value, key=m.key, headers=list(m.headers) or None,
                              partition=partition, timestamp_ms=m.timestamp_ms))
        if batch_every and i % batch_every == 0:
            p.flush(timeout=60)
    p.flush(timeout=60)
    for f in futures:
        f.get(timeout=60)


@dataclass(frozen=True)
class Consumed:
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def consume_partition(broker: BrokerSandbox, topic: str, partition: int, *, api_version: tuple[int, ...] | None = None,
                      isolation_level: str = "read_uncommitted", timeout: float = 60) -> list[Consumed]:
    """Every record from the log start offset to the end offset (as this isolation level sees the end)."""
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=api_version, enable_auto_commit=False,
                      isolation_level=isolation_level, request_timeout_ms=TIMEOUT_MS, fetch_max_wait_ms=100,
                      max_partition_fetch_bytes=1 << 20)
    try:
        tp = TopicPartition(topic, partition)
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        out: list[Consumed] = []
        deadline = time.monotonic() + timeout
        while c.position(tp) < end:
            for r in c.poll(timeout_ms=500).get(tp, []):
                out.append(Consumed(r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                                    tuple((k, v) for k, v in r.headers)))
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}-{partition}: at {c.position(tp)} of {end} after {timeout} s")
        return out
    finally:
        c.close()


def raw_fetch(broker: BrokerSandbox, version: int, partitions: Sequence[FetchPartition], *,
              max_bytes: int = 50 << 20, correlation_id: int = 7) -> tuple[bytes, ParsedResponse]:
    """One FetchRequest of ``version`` (0-3) as an old consumer sends it; the response's bytes and parse."""
    with BrokerConnection("127.0.0.1", broker.port) as conn:
        data = conn.roundtrip(encode_fetch_request(version, correlation_id, partitions, max_bytes=max_bytes,
                                                   max_wait_ms=0, min_bytes=0))
    return data, parse_response(data, version)


def topic_id(partition_dir: Path) -> str:
    """The topic id a broker wrote into ``partition.metadata``."""
    for line in (partition_dir / "partition.metadata").read_text().splitlines():
        if line.startswith("topic_id:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no topic_id in {partition_dir / 'partition.metadata'}")


def adopt_topic_id(partition_dir: Path, new_id: str) -> None:
    """Point a partition dir at the topic id of the cluster it is moved into (what an operator moving data between
    clusters must do: a KRaft broker treats a log whose topic id is not in its metadata as stray)."""
    (partition_dir / "partition.metadata").write_text(f"version: 0\ntopic_id: {new_id}\n")
