"""Key hashing as Kafka's partitioner does it, and key-range sharing of a partition by several consumers.

Spec §7.1: the Java producer's ``BuiltInPartitioner.partitionForKey`` is
``toPositive(murmur2(key)) % numPartitions`` with ``toPositive(x) = x & 0x7fffffff`` (not ``abs``);
null keys are not hashed (sticky partitioning), an empty key is. librdkafka's default partitioner is
``consistent_random``: ``crc32(key) % partition_cnt`` (zlib's CRC-32), so the same key lands elsewhere.

Key sharing is the cooperative-consumption proposal of spec §7.2 ("KIP-X", never adopted): a group
of N consumers on P partitions; when N > P the assignor hands partitions out round-robin (consumer i
gets partition ``i % P``: 5 consumers on 3 partitions -> tp1: M1,M4; tp2: M2,M5; tp3: M3) and the
consumers of one partition split the positive hash space ``[0, 2**31)`` into equal ranges in order.
When N <= P it is plain assignment: partition p goes to consumer ``p % N``. Null keys cannot be
ranged; we hand them out round-robin by offset among the partition's consumers and report them.

murmur2 is computed here twice: ``murmur2`` (pure Python, the reference) and ``murmur2_many``
(numpy over many keys at once, grouped by key length), which the scan uses.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

KAFKA_SEED = 0x9747B28C
# A second seed for a 64-bit hash (distinct-key estimation): murmur3's c1, any odd constant works.
SECOND_SEED = 0xCC9E2D51
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF
HASH_SPACE = 1 << 31  # toPositive(murmur2) lies in [0, 2**31)


def murmur2(data: bytes, seed: int = KAFKA_SEED) -> int:
    """``Utils.murmur2`` as a Java ``int`` (signed 32-bit), byte for byte as Kafka computes it."""
    length = len(data)
    h = (seed ^ length) & _MASK32
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    tail = length & 3
    base = length & ~3
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(h: int) -> int:
    """``Utils.toPositive``: clears the sign bit (so ``-1`` -> ``2147483647``, not ``1``)."""
    return h & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The Java default partitioner's choice for a non-null key."""
    return to_positive(murmur2(key)) % num_partitions


def librdkafka_consistent_partition(key: bytes, num_partitions: int) -> int:
    """librdkafka ``consistent``/``consistent_random`` for a non-null key: ``rd_crc32(key) % cnt``."""
    return zlib.crc32(key) % num_partitions


def murmur2_many(keys: Sequence[bytes], seed: int = KAFKA_SEED) -> Any:
    """murmur2 of every key as a numpy ``uint32`` array (the unsigned bits of Kafka's ``int``).

    Keys are grouped by length so each group is one ``(n, length)`` byte matrix; uint32 numpy
    arithmetic wraps modulo 2**32 exactly as Java's ``int`` does.
    """
    import numpy as np

    n = len(keys)
    out = np.empty(n, dtype=np.uint32)
    if n == 0:
        return out
    lens = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    first = int(lens[0])
    if bool((lens == first).all()):
        buf = np.frombuffer(b"".join(keys), dtype=np.uint8)
        out[:] = _murmur2_fixed(buf.reshape(n, first) if first else np.empty((n, 0), np.uint8), first, seed)
        return out
    order = np.argsort(lens, kind="stable")
    sorted_lens = lens[order]
    buf = np.frombuffer(b"".join([keys[i] for i in order.tolist()]), dtype=np.uint8)
    starts = np.flatnonzero(np.diff(sorted_lens)) + 1
    bounds = [0, *starts.tolist(), n]
    hashed = np.empty(n, dtype=np.uint32)
    pos = 0
    for a, b in zip(bounds, bounds[1:], strict=False):
        length = int(sorted_lens[a])
        count = b - a
        mat = buf[pos:pos + count * length].reshape(count, length) if length else np.empty((count, 0), np.uint8)
        pos += count * length
        hashed[a:b] = _murmur2_fixed(mat, length, seed)
    out[order] = hashed
    return out


def _murmur2_fixed(mat: Any, length: int, seed: int) -> Any:
    import numpy as np

    m = np.uint32(_M)
    h = np.full(mat.shape[0], (seed ^ length) & _MASK32, dtype=np.uint32)
    n4 = length // 4
    if n4:
        blocks = np.ascontiguousarray(mat[:, :n4 * 4]).view("<u4")
        for i in range(n4):
            k = blocks[:, i] * m
            k ^= k >> np.uint32(24)
            k *= m
            h *= m
            h ^= k
    tail = length & 3
    base = n4 * 4
    if tail == 3:
        h ^= mat[:, base + 2].astype(np.uint32) << np.uint32(16)
    if tail >= 2:
        h ^= mat[:, base + 1].astype(np.uint32) << np.uint32(8)
    if tail >= 1:
        h ^= mat[:, base].astype(np.uint32)
        h *= m
    h ^= h >> np.uint32(13)
    h *= m
    h ^= h >> np.uint32(15)
    return h


def hash64_many(keys: Sequence[bytes]) -> tuple[Any, Any]:
    """(murmur2 with Kafka's seed, 64-bit hash) of every key: the second is for distinct-key sketches."""
    import numpy as np

    a = murmur2_many(keys)
    b = murmur2_many(keys, SECOND_SEED)
    return a, (a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)


# ---------------------------------------------------------------------------------------------- assignment

@dataclass(frozen=True, slots=True)
class ShareAssignment:
    """Which consumers (0-based; M1 is 0) read which partition, in hash-range order."""

    consumers: int
    partitions: int
    members: tuple[tuple[int, ...], ...]  # members[p] = consumers sharing partition p

    @property
    def sharing(self) -> bool:
        return self.consumers > self.partitions

    def slots(self, partition: int) -> int:
        """How many hash ranges partition ``partition`` is split into (1 = read whole)."""
        return len(self.members[partition]) if 0 <= partition < self.partitions else 1

    def describe(self) -> list[str]:
        """``tp1: M1,M4`` lines, as the proposal writes them."""
        return [f"tp{p + 1}: " + ",".join(f"M{c + 1}" for c in ms) for p, ms in enumerate(self.members)]


def assign(consumers: int, partitions: int) -> ShareAssignment:
    """The proposal's assignor: round-robin partitions; when consumers outnumber partitions, share them."""
    if consumers < 1 or partitions < 1:
        raise ValueError("consumers and partitions must be at least 1")
    members: tuple[tuple[int, ...], ...]
    if consumers <= partitions:
        members = tuple((p % consumers,) for p in range(partitions))
    else:
        members = tuple(tuple(c for c in range(consumers) if c % partitions == p) for p in range(partitions))
    return ShareAssignment(consumers, partitions, members)


def plain_assignment(consumers: int, partitions: int) -> tuple[int, ...]:
    """Plain partition assignment (round-robin, one consumer per partition): owner of each partition."""
    return tuple(p % consumers for p in range(partitions))


def slot_of(positive_hash: int, slots: int) -> int:
    """The hash range ``j`` with ``j * 2**31 / slots <= h < (j + 1) * 2**31 / slots``."""
    return (positive_hash * slots) >> 31


def hash_range(slot: int, slots: int) -> tuple[int, int]:
    """The integer hashes ``[lo, hi)`` of range ``slot`` of ``slots``."""
    return -(-(slot << 31) // slots), -(-((slot + 1) << 31) // slots)


def slots_of_many(hashes: Any, slots: int) -> Any:
    """``slot_of`` over a uint32 murmur2 array (sign bit cleared first)."""
    import numpy as np

    positive = (hashes & np.uint32(0x7FFFFFFF)).astype(np.uint64)
    return ((positive * np.uint64(slots)) >> np.uint64(31)).astype(np.int64)


# ---------------------------------------------------------------------------------------------- loads

@dataclass(frozen=True, slots=True)
class ConsumerLoad:
    consumer: int  # 0-based
    records: int
    bytes: int
    ranges: tuple[tuple[int, int, int], ...]  # (partition, lo, hi) hash ranges it reads


@dataclass(frozen=True, slots=True)
class Skew:
    max_records: int
    mean_records: float
    max_bytes: int
    mean_bytes: float
    busy_consumers: int

    @property
    def records_ratio(self) -> float:
        return self.max_records / self.mean_records if self.mean_records else 0.0

    @property
    def bytes_ratio(self) -> float:
        return self.max_bytes / self.mean_bytes if self.mean_bytes else 0.0


def consumer_loads(assignment: ShareAssignment, slot_records: Sequence[Sequence[int]],
                   slot_bytes: Sequence[Sequence[int]]) -> list[ConsumerLoad]:
    """Per consumer: records and bytes of the hash ranges it reads (``slot_*[p][j]`` per partition/range)."""
    recs = [0] * assignment.consumers
    byts = [0] * assignment.consumers
    ranges: list[list[tuple[int, int, int]]] = [[] for _ in range(assignment.consumers)]
    for p, members in enumerate(assignment.members):
        k = len(members)
        for j, c in enumerate(members):
            recs[c] += int(slot_records[p][j]) if p < len(slot_records) else 0
            byts[c] += int(slot_bytes[p][j]) if p < len(slot_bytes) else 0
            lo, hi = hash_range(j, k)
            ranges[c].append((p, lo, hi))
    return [ConsumerLoad(c, recs[c], byts[c], tuple(ranges[c])) for c in range(assignment.consumers)]


def plain_loads(consumers: int, partition_records: Sequence[int], partition_bytes: Sequence[int]) -> list[ConsumerLoad]:
    """Per consumer under plain partition assignment (whole partitions, surplus consumers idle)."""
    owners = plain_assignment(consumers, len(partition_records))
    recs = [0] * consumers
    byts = [0] * consumers
    ranges: list[list[tuple[int, int, int]]] = [[] for _ in range(consumers)]
    for p, c in enumerate(owners):
        recs[c] += int(partition_records[p])
        byts[c] += int(partition_bytes[p])
        ranges[c].append((p, 0, HASH_SPACE))
    return [ConsumerLoad(c, recs[c], byts[c], tuple(ranges[c])) for c in range(consumers)]


def skew(loads: Sequence[ConsumerLoad]) -> Skew:
    n = len(loads)
    total_r = sum(x.records for x in loads)
    total_b = sum(x.bytes for x in loads)
    return Skew(max((x.records for x in loads), default=0), total_r / n if n else 0.0,
                max((x.bytes for x in loads), default=0), total_b / n if n else 0.0,
                sum(1 for x in loads if x.records))
