"""Building small real segments for the reindex tests, with kafkatool's record builders.

The builders write Kafka's byte layout (``MemoryRecordsBuilder`` rules, checked against kafka-clients
3.9.1 in test_records.py); these helpers only choose offsets, timestamps and sizes so that expected
index entries can be worked out by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkatool.batch import TimestampType
from kafkatool.codecs import Codec
from kafkatool.default_records import build_batch
from kafkatool.legacy_records import build_entries
from kafkatool.logdir import filename_prefix_from_offset

T0 = 1_700_000_000_000


def v2(first: int, count: int = 1, *, ts: int | list[int] = T0, value: int = 10, codec: Codec = Codec.NONE,
       log_append_time: int | None = None, **kw: object) -> bytes:
    """One v2 batch of ``count`` records at offsets first.., timestamps ``ts`` (one or per record)."""
    stamps = ts if isinstance(ts, list) else [ts] * count
    recs = [(first + i, stamps[i], None, b"v" * value, ()) for i in range(count)]
    if log_append_time is not None:
        return build_batch(recs, codec=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                           log_append_time=log_append_time, **kw)  # type: ignore[arg-type]
    return build_batch(recs, codec=codec, **kw)  # type: ignore[arg-type]


def v2_sized(offset: int, size: int, *, ts: int = T0, **kw: object) -> bytes:
    """A one-record uncompressed v2 batch of exactly ``size`` bytes."""
    for value in range(max(0, size - 80), size):
        b = v2(offset, ts=ts, value=value, **kw)
        if len(b) == size:
            return b
    raise ValueError(f"no one-record batch of {size} bytes")


def legacy(magic: int, first: int, count: int = 1, *, ts: int = T0, value: int = 10, codec: Codec = Codec.NONE,
           log_append_time: int | None = None) -> bytes:
    recs = [(first + i, ts + i, None, b"v" * value) for i in range(count)]
    if log_append_time is not None:
        return build_entries(recs, magic=magic, codec=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                             log_append_time=log_append_time)
    return build_entries(recs, magic=magic, codec=codec)


def positions(batches: list[bytes]) -> list[int]:
    out, p = [], 0
    for b in batches:
        out.append(p)
        p += len(b)
    return out


def write_segment(directory: Path, base_offset: int, batches: list[bytes] | bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (filename_prefix_from_offset(base_offset) + ".log")
    path.write_bytes(batches if isinstance(batches, bytes) else b"".join(batches))
    return path


def kafka_ref() -> str:
    """The kafka-ref launcher (Kafka 3.9.1's own record code), or skip."""
    for cand in (os.environ.get("KAFKA_REF"), "/tmp/kafka-ref-build/kafka-ref", shutil.which("kafka-ref")):
        if cand and os.path.exists(cand):
            return cand
    pytest.skip("kafka-ref is not built (set KAFKA_REF)")


def run_kafka_ref(*args: str) -> str:
    env = dict(os.environ)
    env.setdefault("KAFKA_REF_JAVA_OPTS", "-Xmx512m -XX:TieredStopAtLevel=1")
    p = subprocess.run([kafka_ref(), *args], capture_output=True, text=True, env=env, timeout=300)
    if p.returncode not in (0, 2):
        raise AssertionError(f"kafka-ref {' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout
