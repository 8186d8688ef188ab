"""The session corpus: segments written by Apache Kafka's own ``MemoryRecordsBuilder`` (``kafka-ref gen``)
and Kafka's reading of each (``kafka-ref dump --deep``). Scenarios are data so tests can name them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.kafkaref import Dump, KafkaRef


@dataclass(frozen=True)
class Scenario:
    """One segment: ``kafka-ref gen`` runs appended to the same file (later pieces use ``--append``)."""

    name: str
    pieces: tuple[dict[str, Any], ...]
    # (magic, codec) pairs the segment must contain, so a changed generator cannot make a test vacuous.
    combos: frozenset[tuple[int, str]] = field(default_factory=frozenset)


def _combos(magics: str, codecs: str) -> frozenset[tuple[int, str]]:
    return frozenset((int(m), c) for m in magics.split(",") for c in codecs.split(","))


LEGACY = "none,gzip,snappy,lz4"
ALL = "none,gzip,snappy,lz4,zstd"
BIG = 1_400  # value bytes: BIG x 1500 records = a 2 MiB batch

SCENARIOS = [
    Scenario("v0-codecs", ({"magic": "0", "codec": LEGACY, "records": 120, "batch_records": 7,
                            "null_key_fraction": 0.2, "null_value_fraction": 0.1, "seed": 1},), _combos("0", LEGACY)),
    Scenario("v1-codecs", ({"magic": "1", "codec": LEGACY, "records": 120, "batch_records": 7,
                            "null_key_fraction": 0.2, "null_value_fraction": 0.1, "seed": 2},), _combos("1", LEGACY)),
    Scenario("v1-logappendtime", ({"magic": "1", "codec": LEGACY, "records": 60, "batch_records": 6,
                                   "timestamp_type": "append", "seed": 3},), _combos("1", LEGACY)),
    Scenario("v2-codecs", ({"magic": "2", "codec": ALL, "records": 150, "batch_records": 9, "headers": 2,
                            "null_key_fraction": 0.2, "null_value_fraction": 0.1, "seed": 4},), _combos("2", ALL)),
    Scenario("v2-logappendtime", ({"magic": "2", "codec": ALL, "records": 60, "batch_records": 6, "headers": 1,
                                   "timestamp_type": "append", "seed": 5},), _combos("2", ALL)),
    Scenario("v2-transactional", ({"magic": "2", "codec": ALL, "records": 150, "batch_records": 6, "headers": 1,
                                   "control_every": 2, "abort_fraction": 0.4, "producer_id": 4242,
                                   "producer_epoch": 9, "coordinator_epoch": 7, "leader_epoch": 3, "seed": 6},),
             _combos("2", ALL)),
    Scenario("v2-transactional-open", ({"magic": "2", "codec": "none,lz4", "records": 40, "batch_records": 5,
                                        "control_every": 3, "leave_open": True, "seed": 7},), _combos("2", "none,lz4")),
    # baseSequence near Integer.MAX_VALUE: record and last sequences wrap to 0 (DefaultRecordBatch.incrementSequence).
    Scenario("v2-idempotent", ({"magic": "2", "codec": "none,zstd", "records": 100, "batch_records": 10,
                                "idempotent": True, "base_sequence": 2147483600, "producer_epoch": 5,
                                "leader_epoch": 11, "seed": 8},), _combos("2", "none,zstd")),
    Scenario("mixed-formats", ({"magic": "0,1,2", "codec": LEGACY, "records": 240, "batch_records": 5, "seed": 9},),
             _combos("0,1,2", LEGACY)),
    # Compaction-like offset gaps between batches and a jump past Integer.MAX_VALUE, across formats.
    Scenario("offset-gaps", (
        {"magic": "2", "codec": "none", "records": 10, "batch_records": 4, "base_offset": 0, "seed": 10},
        {"magic": "1", "codec": "gzip", "records": 10, "batch_records": 4, "base_offset": 25, "seed": 11,
         "append": True},
        {"magic": "2", "codec": "zstd", "records": 10, "batch_records": 4, "base_offset": 100, "seed": 12,
         "append": True, "headers": 1},
        {"magic": "0", "codec": "none,snappy", "records": 6, "batch_records": 3, "base_offset": 1000, "seed": 13,
         "append": True},
        {"magic": "2", "codec": "lz4,none", "records": 8, "batch_records": 4, "base_offset": 2**31 + 10,
         "seed": 14, "append": True},
    ), frozenset({(2, "none"), (1, "gzip"), (2, "zstd"), (0, "none"), (0, "snappy"), (2, "lz4")})),
    # Null keys everywhere, empty (not null) values, tombstones, big timestamp deltas (multi-byte varlongs).
    Scenario("edge-values", (
        {"magic": "2", "codec": ALL, "records": 25, "batch_records": 5, "key_cardinality": 0, "value_bytes": 0,
         "seed": 15},
        {"magic": "1", "codec": LEGACY, "records": 20, "batch_records": 5, "value_bytes": 0, "seed": 16,
         "append": True, "base_offset": 25},
        {"magic": "2", "codec": ALL, "records": 25, "batch_records": 5, "null_value_fraction": 0.6, "headers": 3,
         "start_ts": 1, "ts_step": 1_000_000_000, "seed": 17, "append": True, "base_offset": 45},
    ), _combos("2", ALL) | _combos("1", LEGACY)),
    # Non-default compression levels (Kafka 3.8+ compression.*.level).
    Scenario("codec-levels", (
        {"magic": "2", "codec": "gzip", "level": 1, "records": 20, "batch_records": 10, "seed": 18},
        {"magic": "2", "codec": "lz4", "level": 17, "records": 20, "batch_records": 10, "seed": 19, "append": True,
         "base_offset": 20},
        {"magic": "2", "codec": "zstd", "level": 19, "records": 20, "batch_records": 10, "seed": 20, "append": True,
         "base_offset": 40},
    ), _combos("2", "gzip,lz4,zstd")),
    # Multi-MB batches (2 MiB of records each), uncompressed and compressed, v2 and legacy wrappers.
    Scenario("multi-mb", (
        {"magic": "2", "codec": "none", "records": 1500, "batch_records": 1500, "value_bytes": BIG, "seed": 21},
        {"magic": "2", "codec": "zstd", "records": 1500, "batch_records": 1500, "value_bytes": BIG, "seed": 22,
         "append": True, "base_offset": 1500, "headers": 1},
        {"magic": "1", "codec": "gzip", "records": 1500, "batch_records": 1500, "value_bytes": BIG, "seed": 23,
         "append": True, "base_offset": 3000},
        {"magic": "0", "codec": "lz4", "records": 1500, "batch_records": 1500, "value_bytes": BIG, "seed": 24,
         "append": True, "base_offset": 4500},
    ), frozenset({(2, "none"), (2, "zstd"), (1, "gzip"), (0, "lz4")})),
    Scenario("empty-file", ({"magic": "2", "records": 0},)),
]
BY_NAME = {s.name: s for s in SCENARIOS}


@dataclass
class Corpus:
    paths: dict[str, Path]
    gen: dict[str, list[dict[str, Any]]]  # the "gen" line of every piece
    dumps: dict[str, Dump]  # Kafka's reading: kafka-ref dump --deep



def make_corpus(kafka_ref: KafkaRef, root: Path) -> Corpus:
    """Generate every scenario and let Kafka read each back: a few JVMs, each running a share of the
    scenarios' ``gen`` (+ ``gen --append``) + ``dump`` sequences."""
    paths = {s.name: root / f"{s.name}.log" for s in SCENARIOS}
    groups = [[*(kafka_ref.gen_args(paths[s.name], **piece) for piece in s.pieces),
               kafka_ref.dump_args(paths[s.name], deep=True)] for s in SCENARIOS]
    results = kafka_ref.run_batches(groups)
    gen, dumps = {}, {}
    for s, runs in zip(SCENARIOS, results, strict=True):
        assert all(r.returncode == 0 for r in runs[:-1]), [r.lines for r in runs]
        gen[s.name] = [r.one("gen") for r in runs[:-1]]
        dumps[s.name] = Dump.from_run(runs[-1])
    return Corpus(paths, gen, dumps)
