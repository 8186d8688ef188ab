"""Mergeable summaries for scans that run in pieces: distinct-key count and hot keys.

Both are merged on the driver in a fixed order (the plan's range order), so a scan split into many
tasks gives exactly the figures of the same ranges scanned in one process.

* ``HyperLogLog``: Flajolet et al. 2007 with linear counting for small cardinalities; ``p = 12``
  (4096 one-byte registers, standard error 1.04/sqrt(4096) = 1.6%) over a 64-bit key hash. Merging
  is the register-wise maximum, so the estimate does not depend on how the keys were split.
* ``HotKeys``: each chunk of keys is counted exactly by 64-bit hash (numpy) and its ``capacity``
  heaviest keys are added to a table, which is pruned back to the ``capacity`` heaviest when it
  holds ``4 * capacity``; ``error`` bounds how many records of any key may have been dropped (the
  largest count left out, summed over chunks and prunes). A key among the ``capacity`` heaviest of
  every chunk it appears in is counted exactly; so is every key when a chunk has at most
  ``capacity`` distinct keys.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

HLL_P = 12
HLL_M = 1 << HLL_P


class HyperLogLog:
    __slots__ = ("registers",)

    def __init__(self, registers: Any | None = None) -> None:
        import numpy as np

        self.registers = np.zeros(HLL_M, dtype=np.uint8) if registers is None else registers

    def add_hashes(self, h64: Any) -> None:
        """Add 64-bit hashes (numpy uint64): register = top ``p`` bits, rank = leading zeros + 1 of the rest."""
        import numpy as np

        if len(h64) == 0:
            return
        idx = (h64 >> np.uint64(64 - HLL_P)).astype(np.int64)
        rest = h64 & np.uint64((1 << (64 - HLL_P)) - 1)
        # rest < 2**52 is exact in a float64, so frexp's exponent is its bit length (0 for 0).
        bitlen = np.frexp(rest.astype(np.float64))[1]
        rank = ((64 - HLL_P) - bitlen + 1).astype(np.uint8)
        np.maximum.at(self.registers, idx, rank)

    def merge(self, other: HyperLogLog) -> None:
        import numpy as np

        np.maximum(self.registers, other.registers, out=self.registers)

    def estimate(self) -> int:
        import numpy as np

        regs = self.registers
        zeros = int(np.count_nonzero(regs == 0))
        if zeros == HLL_M:
            return 0
        alpha = 0.7213 / (1 + 1.079 / HLL_M)
        raw = alpha * HLL_M * HLL_M / float(np.sum(np.ldexp(1.0, -regs.astype(np.int64))))
        if raw <= 2.5 * HLL_M and zeros:
            return round(HLL_M * math.log(HLL_M / zeros))  # linear counting
        return round(raw)

    def to_bytes(self) -> bytes:
        """Registers, zlib-compressed (mostly zeros for small ranges)."""
        return zlib.compress(self.registers.tobytes(), 1)

    @classmethod
    def from_bytes(cls, data: bytes | None) -> HyperLogLog:
        import numpy as np

        if not data:
            return cls()
        regs = np.frombuffer(zlib.decompress(data), dtype=np.uint8).copy()
        if len(regs) != HLL_M:
            raise ValueError(f"HyperLogLog of {len(regs)} registers, expected {HLL_M}")
        return cls(regs)


@dataclass(slots=True)
class HotKey:
    key: bytes
    records: int
    bytes: int
    hash: int  # Kafka murmur2 (as an unsigned 32-bit value)


@dataclass(slots=True)
class HotKeys:
    capacity: int = 64
    counts: dict[bytes, list[int]] = field(default_factory=dict)  # key -> [records, bytes, murmur2]
    error: int = 0

    def update(self, keys: Sequence[bytes], sizes: Any, h64: Any, h32: Any) -> None:
        """Count one chunk of keys (with their record sizes and 64/32-bit hashes, numpy arrays).

        The chunk is aggregated by 64-bit hash in numpy; only its ``capacity`` heaviest keys reach the
        table, and the next heaviest count of the chunk is added to ``error``.
        """
        import numpy as np

        n = len(keys)
        if n == 0:
            return
        uniq, first, inverse, counts = np.unique(h64, return_index=True, return_inverse=True, return_counts=True)
        byts = np.bincount(inverse, weights=sizes, minlength=len(uniq)).astype(np.int64)
        cap = self.capacity
        if len(uniq) > cap:
            top = np.argpartition(-counts, cap - 1)[:cap]
            rest = np.ones(len(uniq), dtype=bool)
            rest[top] = False
            self.error += int(counts[rest].max())
        else:
            top = np.arange(len(uniq))
        table = self.counts
        for u in top.tolist():
            i = int(first[u])
            k = keys[i]
            e = table.get(k)
            if e is None:
                table[k] = [int(counts[u]), int(byts[u]), int(h32[i])]
            else:
                e[0] += int(counts[u])
                e[1] += int(byts[u])
        if len(table) > 4 * cap:
            self._prune()

    def _prune(self) -> None:
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
        keep, drop = ranked[:self.capacity], ranked[self.capacity:]
        if drop:
            self.error += drop[0][1][0]
        self.counts = dict(keep)

    def merge(self, other: HotKeys) -> None:
        counts = self.counts
        for k, (r, b, h) in other.counts.items():
            e = counts.get(k)
            if e is None:
                counts[k] = [r, b, h]
            else:
                e[0] += r
                e[1] += b
        self.error += other.error
        if len(counts) > 4 * self.capacity:
            self._prune()

    def top(self, n: int) -> list[HotKey]:
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))[:n]
        return [HotKey(k, v[0], v[1], v[2]) for k, v in ranked]

    def to_rows(self) -> list[dict[str, Any]]:
        return [{"key": k, "records": v[0], "bytes": v[1], "hash": v[2]} for k, v in self.counts.items()]

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]] | None, error: int, capacity: int) -> HotKeys:
        hk = cls(capacity)
        for r in rows or ():
            hk.counts[bytes(r["key"])] = [int(r["records"]), int(r["bytes"]), int(r["hash"])]
        hk.error = error
        return hk
