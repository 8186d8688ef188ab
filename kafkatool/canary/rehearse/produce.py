"""Records appended to the copy of each canary partition, and read back: what producers old and new meet once the
canary is in place.

* an old producer of message format v0 (a 0.9 client: Produce v1) and one of v1 (0.10: Produce v2), three
  records each. Kafka 4.0 removed Produce v0-2 (KIP-896) though its ApiVersions still announces them (librdkafka
  compatibility): the broker closes the connection, and says why in its log;
* a new producer (Produce v8, format v2): three records with headers (none when the broker writes v0/v1: a v1
  topic cannot store headers, KIP-82), then the records of the canary's largest data batch, in one batch with its
  codec, keys, values, headers and timestamps. That batch is what ``max.message.bytes`` judges: a canary batch
  over it loads and is served, but the broker refuses the same bytes from a producer (``MESSAGE_TOO_LARGE``).

Each accepted batch is read back with a modern fetch from its base offset and compared with what the broker
should have stored: the format it writes (v2; or v0/v1 in ZooKeeper mode below IBP 3.0 with an old format),
timestamp -1 for v0 records, the broker's time for LogAppendTime topics, headers only in v2.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkatool.canary.rehearse import protocol as kp
from kafkatool.canary.rehearse.client import SandboxClient
from kafkatool.canary.rehearse.expected import Rec
from kafkatool.canary.rehearse.reads import ReadCheck, Target, compare, served
from kafkatool.canary.rehearse.result import ProduceCheck
from kafkatool.canary.wire import WireError
from kafkatool.errors import KafkaToolError
from kafkatool.record.batch import MAGIC_V0, MAGIC_V2, Header, Record, TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import DefaultRecordBatch, build_batch
from kafkatool.record.file_records import FileRecords
from kafkatool.record.legacy_records import build_entries

Sent = tuple[int, int, bytes | None, bytes | None, tuple[Header, ...]]  # offset, timestamp, key, value, headers
RETRIABLE = {5, 6, 7, 14, 15}  # LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, coordinator
OLD_PRODUCERS = ((1, MAGIC_V0, "0.9 producer: Produce v1, message format v0"),
                 (2, 1, "0.10 producer: Produce v2, message format v1"))
CLOSED = "the broker closed the connection"
NEW_PRODUCER = f"new producer: Produce v{kp.PRODUCE_V2_VERSION}, message format v2"


@dataclass(frozen=True, slots=True)
class Stored:
    """How the broker stores produced records: its format, and whether it stamps LogAppendTime."""

    magic: int
    log_append_time: bool


@dataclass(frozen=True, slots=True)
class Largest:
    """The canary's largest data batch."""

    base_offset: int
    last_offset: int
    size: int
    codec: Codec
    records: list[Record]


def largest_batch(canary: Path, segments: list[int], *, limit: int | None = None) -> Largest | None:
    best: tuple[int, str, int] | None = None  # (size, file, position)
    for base in segments:
        log = canary / f"{base:020d}.log"
        try:
            with FileRecords(log) as fr:
                for b in fr.batches():
                    if isinstance(b, DefaultRecordBatch) and not b.is_control and (b.count or 0) > 0:
                        if best is None or b.size > best[0]:
                            best = (b.size, str(log), b.position)
        except KafkaToolError:
            continue  # a damaged canary: the broker's words tell it
    if best is None:
        return None
    size, path, position = best
    with FileRecords(path) as fr:
        b = next(iter(fr.batches(position)))
        assert isinstance(b, DefaultRecordBatch)
        try:
            b.ensure_valid()
            records = b.records(limit=limit)
        except KafkaToolError:
            return None
        return Largest(int(b.base_offset), int(b.last_offset), size, b.codec, records)


def _produce(client: SandboxClient, version: int, topic: str, partition: int, data: bytes,
             timeout: float) -> kp.ProduceResult:
    deadline = time.monotonic() + timeout
    while True:
        r = client.produce(version, topic, partition, data)
        if r.error_code not in RETRIABLE or time.monotonic() > deadline:
            return r
        time.sleep(0.1)  # retry.backoff.ms, as Kafka's producer waits


def produce_back(client: SandboxClient, name: str, topic: str, partition: int, stored: Stored,
                 largest: Largest | None, *, kafka_major: int, timeout: float, max_differences: int,
                 skip: dict[int, str] | None = None) -> list[ProduceCheck]:
    """``skip``: produce versions the broker refused already (by version: its answer), not asked again."""
    now = int(time.time() * 1000)
    out = []
    for version, magic, label in OLD_PRODUCERS:
        recs: list[Sent] = [(i, now + i, f"kafkatool-rehearse-v{magic}-{i}".encode(),
                             f"old producer, format v{magic}".encode(), ()) for i in range(3)]
        data = build_entries([(o, ts, k, v) for o, ts, k, v, _ in recs], magic=magic)
        check = ProduceCheck(name, label, version, len(recs), len(data))
        if kafka_major >= 4:
            check.note = "Kafka 4.0 removed Produce v0-v2 (KIP-896)"
        if skip and version in skip:
            continue  # refused on an earlier partition: the broker's answer is in the rehearsal's refusals
        out.append(_send(client, check, topic, partition, data, recs, magic, stored, timeout, max_differences,
                         refusal_expected=kafka_major >= 4))
    headers = stored.magic >= MAGIC_V2
    recs = [(i, now + i, f"kafkatool-rehearse-v2-{i}".encode(), b"new producer, format v2",
             ((Header("kafkatool", f"rehearse-{i}".encode()),) if headers else ())) for i in range(3)]
    data = build_batch([(o, ts, k, v, list(h)) for o, ts, k, v, h in recs])
    check = ProduceCheck(name, NEW_PRODUCER, kp.PRODUCE_V2_VERSION, len(recs), len(data))
    if not headers:
        check.note = f"no headers: the broker writes message format v{stored.magic}, which has none (KIP-82)"
    out.append(_send(client, check, topic, partition, data, recs, MAGIC_V2, stored, timeout, max_differences))
    if largest is not None:
        codec = largest.codec
        recs = [(i, r.timestamp, r.key, r.value, tuple(r.headers) if headers else ())
                for i, r in enumerate(largest.records)]
        note = (f"the canary's largest batch (offsets {largest.base_offset}..{largest.last_offset}, "
                f"{largest.size} bytes, codec {codec.label}) produced again")
        if stored.magic < MAGIC_V2 and codec == Codec.ZSTD:
            codec = Codec.NONE
            note += ", uncompressed (format v0/v1 has no zstd)"
        if not headers and any(r.headers for r in largest.records):
            note += ", without its headers (format v0/v1 has none)"
        data = build_batch([(o, ts, k, v, list(h)) for o, ts, k, v, h in recs], codec=codec)
        check = ProduceCheck(name, NEW_PRODUCER + ", the largest batch", kp.PRODUCE_V2_VERSION, len(recs), len(data),
                             note=note)
        out.append(_send(client, check, topic, partition, data, recs, MAGIC_V2, stored, timeout, max_differences))
    return out


def _send(client: SandboxClient, check: ProduceCheck, topic: str, partition: int, data: bytes,
          recs: list[Sent], sent_magic: int,
          stored: Stored, timeout: float, max_differences: int, *, refusal_expected: bool = False) -> ProduceCheck:
    try:
        r = _produce(client, check.produce_version, topic, partition, data, timeout)
    except WireError as e:
        closed = "closed the connection" in e.message
        check.error = CLOSED if closed else f"no answer: {e.message}"
        check.refused_expected = refusal_expected and closed
        return check
    if r.error_code:
        check.error = kp.error_text(r.error_code, r.error_message)
        if r.record_errors:
            check.error += "; " + "; ".join(r.record_errors)
        return check
    check.base_offset = r.base_offset
    expected = list(_stored_records(recs, r.base_offset, r.log_append_time, sent_magic, stored))
    rc = ReadCheck(check.partition, kp.MODERN_FETCH_VERSION, "read_uncommitted", 1 << 20)
    target = Target(topic, partition, r.base_offset, r.base_offset + len(recs))
    compare(iter(expected), served(client, target, rc), rc, limit=max_differences)
    check.read_back = rc
    return check


def _stored_records(recs: list[Sent], base: int,
                    log_append_time: int, sent_magic: int, stored: Stored) -> Iterator[Rec]:
    for i, ts, key, value, headers in recs:
        if stored.magic == MAGIC_V0:
            ts, ts_type = -1, int(TimestampType.NO_TIMESTAMP_TYPE)
        elif stored.log_append_time:
            ts, ts_type = log_append_time, int(TimestampType.LOG_APPEND_TIME)
        else:
            ts, ts_type = (-1 if sent_magic == MAGIC_V0 else ts), int(TimestampType.CREATE_TIME)
        yield Rec(base + i, ts, ts_type, key, value, headers if stored.magic >= MAGIC_V2 else (), "produced")
