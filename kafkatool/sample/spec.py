"""What ``kafkatool sample`` generates: topic and log-dir specifications, their rules, and the profiles.

A :class:`TopicSpec` describes one topic's history (formats, codecs, producers, transactions, rolls,
retention, compaction); a :class:`SampleSpec` a whole log dir. ``validate`` enforces what a broker
would have refused: zstd only in v2 batches, headers and transactions only in v2, LogAppendTime not
in v0, keys in compacted topics.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES
from kafkatool.decoders import GROUP_METADATA_TOPIC
from kafkatool.errors import UsageError
from kafkatool.log.checkpoints import topic_id_from_bytes
from kafkatool.record.batch import MAGIC_V2, TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.record.legacy_records import RECORD_OVERHEAD_V0
from kafkatool.util.units import parse_time_ms

DEFAULT_START_MS = parse_time_ms("2024-06-03T08:00:00Z")
MIN_SEGMENT_BYTES = RECORD_OVERHEAD_V0  # LogConfig: segment.bytes >= LegacyRecord.RECORD_OVERHEAD_V0 (3.x)
LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
VALUE_KINDS = ("pool", "json:orders", "json:payments", "json:clicks", "json:audit", "offsets")
PROFILES = ("demo", "bench", "custom")


@dataclass(frozen=True, slots=True)
class IntRange:
    """``16`` or ``8-64``: a fixed number or a uniform draw per use."""

    low: int
    high: int

    @classmethod
    def of(cls, n: int) -> IntRange:
        return cls(n, n)

    @classmethod
    def parse(cls, text: str | int, field: str, minimum: int = 0) -> IntRange:
        """``text`` as a range; a bad one is a usage error about the request field ``field``."""
        if isinstance(text, int):
            r = cls(text, text)
        else:
            m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
            if not m:
                raise UsageError(f"expected N or MIN-MAX, got {text!r}", field=field)
            lo = int(m.group(1))
            r = cls(lo, int(m.group(2)) if m.group(2) else lo)
        if r.low < minimum or r.high < r.low:
            raise UsageError(f"{r} is not a range of numbers >= {minimum}", field=field)
        return r

    def draw(self, rng: random.Random) -> int:
        return self.low if self.low == self.high else self.low + rng.randrange(self.high - self.low + 1)

    def __str__(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int = 1
    records: int = 1000  # data records per partition
    partition_bytes: int | None = None  # or: stop when the partition's log reaches this size
    magics: tuple[int, ...] = (2,)  # format eras in order (a format upgrade); records split evenly
    codecs: tuple[Codec, ...] = (Codec.NONE,)  # one codec, or several drawn per batch
    level: int | None = None
    batch_records: IntRange = IntRange(16, 16)
    value_bytes: IntRange = IntRange(100, 100)
    value_kind: str = "pool"
    compressible: float = 0.5
    key_cardinality: int = 1000
    key_prefix: str = "key-"
    null_key_fraction: float = 0.0
    tombstone_fraction: float = 0.0
    headers: int = 0
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    producers: int = 1  # idempotent (or plain, see idempotent) producers per partition
    idempotent: bool = True  # 3.0+ producers default to enable.idempotence=true
    transactional_producers: int = 0
    abort_fraction: float = 0.0
    txn_batches: IntRange = IntRange(1, 4)
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    leader_epochs: int = 1  # leader epochs over the partition's life (epoch changes = this - 1)
    first_epoch: int = 0
    compacted: bool = False
    clean_every_rolls: int = 2
    retention_bytes: int | None = None
    delete_records: tuple[tuple[int, float], ...] = ()  # (partition, fraction of the log end offset)
    append_interval_ms: int = 250

    @property
    def has_v2(self) -> bool:
        return MAGIC_V2 in self.magics

    @property
    def final_magic(self) -> int:
        return self.magics[-1]


@dataclass(frozen=True, slots=True)
class SampleSpec:
    topics: tuple[TopicSpec, ...]
    seed: int = 1
    start_ms: int = DEFAULT_START_MS
    clean_shutdown: bool = True  # False: active segment indexes preallocated, no .kafka_cleanshutdown
    node_id: int = 1
    profile: str = "demo"


def validate(spec: SampleSpec) -> None:
    names = set()
    if not spec.topics:
        raise UsageError("no topics to generate")
    for t in spec.topics:
        _validate_topic(t)
        if t.name in names:
            raise UsageError(f"topic {t.name!r} is listed twice")
        names.add(t.name)


def _validate_topic(t: TopicSpec) -> None:
    n = t.name
    if not LEGAL_TOPIC.match(n) or n in (".", ".."):
        raise UsageError(f"illegal topic name {n!r} (Kafka allows 1-249 of [a-zA-Z0-9._-], not '.' or '..')")
    if t.partitions < 1:
        raise UsageError(f"must be at least 1 (topic {n})", field="partitions")
    if t.records < 0 or (t.partition_bytes is not None and t.partition_bytes < 1):
        raise UsageError(f"{n}: the record count must be >= 0 and the partition size >= 1 byte")
    if not t.magics or any(m not in (0, 1, 2) for m in t.magics) or list(t.magics) != sorted(t.magics):
        raise UsageError(f"{n}: message formats must be 0, 1 or 2, in upgrade order")
    if Codec.ZSTD in t.codecs and len(t.codecs) == 1 and not all(m == MAGIC_V2 for m in t.magics):
        raise UsageError(f"{n}: zstd needs message format v2 (Kafka refuses zstd below magic 2); "
                         f"the formats here are {'/'.join(f'v{m}' for m in t.magics)}")
    if t.headers and not t.has_v2:
        raise UsageError(f"{n}: record headers need message format v2 (\"Magic v{t.final_magic} does not support "
                         "record headers\")")
    if t.transactional_producers and not t.has_v2:
        raise UsageError(f"{n}: transactions need message format v2 (UNSUPPORTED_FOR_MESSAGE_FORMAT)")
    if t.timestamp_type == TimestampType.LOG_APPEND_TIME and t.magics == (0,):
        raise UsageError(f"{n}: message format v0 has no timestamps (LogAppendTime needs v1 or v2)")
    if t.timestamp_type not in (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME):
        raise UsageError(f"{n}: the timestamp type is CreateTime or LogAppendTime")
    for what, v in (("null_key_fraction", t.null_key_fraction), ("abort_fraction", t.abort_fraction),
                    ("compressible", t.compressible), ("tombstone_fraction", t.tombstone_fraction)):
        if not 0.0 <= v <= 1.0:
            raise UsageError(f"must be within 0..1, got {v} (topic {n})", field=what)
    if t.compacted and (t.key_cardinality <= 0 or t.null_key_fraction > 0) and t.value_kind != "offsets":
        raise UsageError(f"{n}: a compacted topic needs keys (a broker refuses null keys there: INVALID_RECORD)")
    if t.batch_records.low < 1:
        raise UsageError(f"must be at least 1 (topic {n})", field="batch_records")
    if t.segment_bytes < MIN_SEGMENT_BYTES:
        raise UsageError(f"must be at least {MIN_SEGMENT_BYTES}, Kafka's minimum (topic {n})", field="segment_bytes")
    if t.index_interval_bytes < 0:
        raise UsageError(f"must be >= 0 (topic {n})", field="index_interval_bytes")
    if t.producers < 0 or t.transactional_producers < 0 or (
            t.producers + t.transactional_producers < 1 and t.value_kind != "offsets"):
        raise UsageError(f"{n}: at least one producer is needed")
    if t.leader_epochs < 1:
        raise UsageError(f"must be at least 1 (topic {n})", field="leader_epochs")
    if t.value_kind not in VALUE_KINDS:
        raise UsageError(f"{n}: unknown value kind {t.value_kind!r} ({', '.join(VALUE_KINDS)})")
    if t.level is not None and (len(t.codecs) != 1 or t.codecs[0] in (Codec.NONE, Codec.SNAPPY)):
        raise UsageError(f"applies to one of gzip, lz4 or zstd (topic {n})", field="compression_level")


def codecs_for_magic(t: TopicSpec, magic: int) -> tuple[Codec, ...]:
    """The codecs a batch of this format may use: zstd only from v2 (a format-upgrade mix keeps it out
    of the v0/v1 part, as brokers of that time had no zstd)."""
    if magic == MAGIC_V2:
        return t.codecs
    allowed = tuple(c for c in t.codecs if c != Codec.ZSTD)
    return allowed or (Codec.NONE,)


def random_uuid(seed: int) -> str:
    """``Uuid.randomUuid()``: a version-4 UUID, re-drawn while its string starts with '-' (Kafka avoids
    ids that look like command-line options) or is the all-zero id."""
    rng = random.Random(seed)
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        text = topic_id_from_bytes(bytes(raw))
        if not text.startswith("-") and any(raw):
            return text


# ---------------------------------------------------------------------------------------------- profiles

def demo_topics(records: int | None = None, segment_bytes: int | None = None) -> tuple[TopicSpec, ...]:
    """The default sample: one of everything an operator meets in a real log dir.

    ``records`` scales the data topics (per partition, default ~2000); ``segment_bytes`` overrides the
    small demo segment sizes that make every partition roll several times.
    """

    def n(default: int) -> int:
        return default if records is None else max(0, records * default // 2000)

    def seg(default: int) -> int:
        return default if segment_bytes is None else segment_bytes

    return (
        TopicSpec("orders", partitions=3, records=n(2500), codecs=(Codec.LZ4,), batch_records=IntRange(1, 40),
                  value_kind="json:orders", key_cardinality=500, key_prefix="cust-", headers=3, producers=3,
                  segment_bytes=seg(96 * 1024), leader_epochs=3, retention_bytes=seg(96 * 1024) * 5 // 2,
                  delete_records=((1, 0.55),), append_interval_ms=15_000),
        TopicSpec("payments", partitions=2, records=n(2000), codecs=(Codec.SNAPPY,), batch_records=IntRange(1, 12),
                  value_kind="json:payments", key_cardinality=5000, key_prefix="ord-", headers=2, producers=1,
                  transactional_producers=2, abort_fraction=0.3, txn_batches=IntRange(1, 5),
                  segment_bytes=seg(64 * 1024), leader_epochs=2, first_epoch=4, append_interval_ms=6_000),
        TopicSpec("legacy-events", partitions=2, records=n(3000), magics=(0, 1, 2),
                  codecs=(Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4), batch_records=IntRange(1, 30),
                  value_bytes=IntRange(120, 600), compressible=0.6, key_cardinality=300, key_prefix="device-",
                  idempotent=False, segment_bytes=seg(80 * 1024), leader_epochs=3, first_epoch=11,
                  append_interval_ms=9_000),
        TopicSpec("sensors-2016", records=n(1200), magics=(0,), codecs=(Codec.GZIP,), batch_records=IntRange(5, 50),
                  value_bytes=IntRange(60, 90), compressible=0.4, key_cardinality=40, key_prefix="sensor-",
                  idempotent=False, segment_bytes=seg(32 * 1024), first_epoch=7, append_interval_ms=40_000),
        TopicSpec("sensors-2017", records=n(1200), magics=(1,), codecs=(Codec.NONE, Codec.SNAPPY),
                  batch_records=IntRange(5, 50), value_bytes=IntRange(60, 90), compressible=0.4, key_cardinality=40,
                  key_prefix="sensor-", idempotent=False, segment_bytes=seg(32 * 1024), first_epoch=7,
                  append_interval_ms=40_000),
        TopicSpec("clickstream", partitions=2, records=n(6000), codecs=(Codec.ZSTD,), batch_records=IntRange(20, 200),
                  value_kind="json:clicks", key_cardinality=3000, key_prefix="user-", null_key_fraction=0.4,
                  producers=2, segment_bytes=seg(128 * 1024), leader_epochs=2, append_interval_ms=30_000),
        TopicSpec("audit-log", records=n(1500), batch_records=IntRange(1, 8), value_kind="json:audit",
                  key_cardinality=60, key_prefix="user-", headers=3, timestamp_type=TimestampType.LOG_APPEND_TIME,
                  segment_bytes=seg(48 * 1024), append_interval_ms=5_000),
        TopicSpec(GROUP_METADATA_TOPIC, partitions=3, records=0, value_kind="offsets", compacted=True,
                  key_cardinality=0, producers=0, transactional_producers=0, idempotent=False,
                  segment_bytes=seg(16 * 1024), clean_every_rolls=3, leader_epochs=2),
    )


def bench_topic(**overrides: object) -> TopicSpec:
    """One partition of about 200 MiB in one segment: the benchmark input (a request's ``codec``, ``magic``,
    ``value_bytes`` and ``batch_records`` vary it)."""
    base = TopicSpec("bench", records=0, partition_bytes=200 * 1024 * 1024, value_bytes=IntRange(1024, 1024),
                     batch_records=IntRange(16, 16), key_cardinality=10_000, append_interval_ms=5)
    return replace(base, **overrides)  # type: ignore[arg-type]
