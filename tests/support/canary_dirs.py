"""Log dirs for the canary tests, written by ``kafkatool sample`` (deterministic for the seed).

* :func:`mixed_dir`: the demo profile (v0/v1/v2 upgrade topic, all-v0 and all-v1 topics, zstd, transactions,
  LogAppendTime, compacted ``__consumer_offsets`` with cleaner output) plus ``legacy-compacted``: a compacted
  topic that went through the v0 -> v1 -> v2 upgrade and was cleaned by 3.9 (which keeps each batch's format),
  the case that survives into Kafka 4.
* :func:`small_dir`: a few small legacy partitions with many segments, for the apply/rollback crash tests.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from kafkatool.record.batch import TimestampType
from kafkatool.record.codecs import Codec
from kafkatool.sample.generate import generate_sample
from kafkatool.sample.spec import IntRange, SampleSpec, TopicSpec, demo_topics

LEGACY_COMPACTED = TopicSpec("legacy-compacted", records=1500, magics=(0, 1, 2),
                             codecs=(Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4), compacted=True,
                             key_cardinality=200, segment_bytes=24 * 1024)

SMALL = (
    TopicSpec("old", records=300, magics=(0, 1, 2), codecs=(Codec.NONE, Codec.GZIP, Codec.LZ4), compacted=True,
              key_cardinality=60, segment_bytes=8 * 1024),
    TopicSpec("v0", records=110, magics=(0,), codecs=(Codec.NONE, Codec.GZIP), segment_bytes=6 * 1024,
              batch_records=IntRange(1, 8)),
    TopicSpec("lat", records=150, magics=(1, 2), timestamp_type=TimestampType.LOG_APPEND_TIME, segment_bytes=8 * 1024),
)


def mixed_dir(path: Path) -> Path:
    generate_sample(path, SampleSpec((*demo_topics(), LEGACY_COMPACTED)), fsync=False)
    return path


def small_dir(path: Path) -> Path:
    generate_sample(path, SampleSpec(SMALL, profile="custom"), fsync=False)
    return path


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``root``: SHA-256 and mtime (what "restored byte for byte" is checked against)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out
