"""``kafkatool dump --deep --format json`` against Apache Kafka's own reader (kafka-ref over kafka-clients 3.9.1).

Segments are written by Kafka's ``MemoryRecordsBuilder`` (``kafka-ref gen``) for every magic x codec Kafka
allows (zstd only for v2), transactional data with COMMIT/ABORT markers, LogAppendTime, headers, null keys
and values, and mixed formats in one file; ``kafka-ref dump --deep --payload b64`` reads them with
``FileRecords``/``streamingIterator``. Every batch and record must agree field for field; a torn copy must
end at the same byte with the same trailing count.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.interop.corpus import BY_NAME, SCENARIOS
from tests.support.cli import run_cli
from tests.support.kafkaref import shared_session

pytestmark = pytest.mark.interop


def kafka_ref(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """Run kafka-ref, located or built by tests/support/kafkaref.py (a failure, never a skip, when it cannot be),
    in the session's kept JVM."""
    return shared_session().run(*args)


SEGMENTS = {
    # every magic x codec of the legacy formats, and v2, interleaved in one file (batch i uses
    # magic[i % 3] and codec[i % 4]: 12 combinations)
    "mixed-formats": ["--magic", "0,1,2", "--codec", "none,gzip,snappy,lz4", "--records", "90", "--batch-records", "5",
                      "--null-key-fraction", "0.3", "--null-value-fraction", "0.2"],
    "v2-codecs-headers": ["--magic", "2", "--codec", "none,gzip,snappy,lz4,zstd", "--records", "100",
                          "--batch-records", "7", "--headers", "2", "--null-key-fraction", "0.2",
                          "--null-value-fraction", "0.2", "--leader-epoch", "5"],
    "transactional": ["--magic", "2", "--codec", "none,lz4,zstd", "--records", "60", "--batch-records", "6",
                      "--transactional", "--control-every", "2", "--abort-fraction", "0.5", "--coordinator-epoch", "7",
                      "--headers", "1", "--base-offset", "1000"],
    "log-append-time": ["--magic", "1,2", "--codec", "none,gzip,snappy", "--records", "40", "--batch-records", "4",
                        "--timestamp-type", "append"],
    "idempotent-seq-wrap": ["--magic", "2", "--codec", "none,snappy", "--records", "30", "--batch-records", "4",
                            "--idempotent", "--producer-id", "77", "--producer-epoch", "3",
                            "--base-sequence", "2147483640"],
    "legacy-nulls": ["--magic", "0,1", "--codec", "none,gzip,snappy,lz4", "--records", "48", "--batch-records", "3",
                     "--null-key-fraction", "0.5", "--null-value-fraction", "0.5", "--value-bytes", "0"],
}


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("kafka-ref-segments")
    out = {}
    for name, args in SEGMENTS.items():
        p = d / f"{name}.log"
        r = kafka_ref("gen", "--out", p, "--value-bytes", "20", "--seed", "42", *args)
        assert r.returncode == 0, r.stderr
        out[name] = p
    return out


def kafka_dump(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    r = kafka_ref("dump", "--in", path, "--deep", "--payload", "b64")
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    return [o for o in objs if o["type"] == "batch"], [o for o in objs if o["type"] == "record"], r.returncode


def our_dump(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], int]:
    r = run_cli("dump", path, "--deep", "--format", "json", "--encoding", "base64")
    assert "Traceback" not in r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    return ([o for o in objs if o["type"] == "batch"], [o for o in objs if o["type"] == "record"],
            [o for o in objs if o["type"] == "file_end"], r.returncode)


BATCH_FIELDS = {  # kafka-ref name -> ours
    "position": "position", "baseOffset": "base_offset", "lastOffset": "last_offset", "magic": "magic",
    "codec": "codec", "sizeInBytes": "size", "crc": "crc", "isValid": "crc_valid", "maxTimestamp": "max_timestamp",
    "timestampType": "timestamp_type", "producerId": "producer_id", "producerEpoch": "producer_epoch",
    "baseSequence": "base_sequence", "lastSequence": "last_sequence", "isTransactional": "is_transactional",
    "isControl": "is_control", "partitionLeaderEpoch": "partition_leader_epoch", "count": "count",
    "deleteHorizonMs": "delete_horizon_ms",
}


def _ours_as_kafka(batches: list[dict[str, Any]], records: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    ob = [{k: b[v] for k, v in BATCH_FIELDS.items()} for b in batches]
    orecs = []
    # Records follow their batch in our stream; kafka-ref's legacy records carry the batch's timestamp type.
    for r in records:
        x: dict[str, Any] = {"offset": r["offset"], "timestamp": r["timestamp"], "sizeInBytes": r["size"],
                             "keySize": r["key_size"], "valueSize": r["value_size"], "key": r["key"],
                             "value": r["value"], "headers": [{"key": k, "value": v} for k, v in r["headers"]]}
        if "sequence" in r:
            x["sequence"] = r["sequence"]
        if "crc" in r:
            x["crc"] = r["crc"]
        if "control" in r:
            c = r["control"]
            x["control"] = {"controlType": c["type"]}
            if c["coordinator_epoch"] is not None:
                x["control"]["coordinatorEpoch"] = c["coordinator_epoch"]
        orecs.append(x)
    return ob, orecs


def _kafka_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in records:
        r = {k: v for k, v in r.items() if k not in ("type", "recordTimestampType")}
        out.append(r)
    return out


@pytest.mark.parametrize("name", list(SEGMENTS))
def test_same_batches_and_records_as_kafka(segments, name):
    path = segments[name]
    kb, kr, krc = kafka_dump(path)
    ob, orecs, ends, rc = our_dump(path)
    assert krc == 0 and kb and kr
    ours_b, ours_r = _ours_as_kafka(ob, orecs)
    kb = [{k: b[k] for k in BATCH_FIELDS} for b in kb]
    assert len(ours_b) == len(kb)
    for mine, theirs in zip(ours_b, kb, strict=True):
        assert mine == theirs
    kr2 = _kafka_records(kr)
    assert len(ours_r) == len(kr2)
    for mine, theirs in zip(ours_r, kr2, strict=True):
        assert mine == theirs
    assert ends[0]["invalid_bytes"] == 0
    assert rc == 0  # a clean file written by Kafka dumps clean (markers take an offset: no gaps)


def test_legacy_inner_records_report_the_wrapper_timestamp_type(segments):
    _, kr, _ = kafka_dump(segments["log-append-time"])
    legacy = [r for r in kr if "recordTimestampType" in r]
    assert legacy and {r["recordTimestampType"] for r in legacy} == {"LogAppendTime"}


def test_torn_copy_ends_where_kafka_stops(segments, tmp_path):
    src = segments["v2-codecs-headers"].read_bytes()
    torn = tmp_path / "00000000000000000000.log"
    torn.write_bytes(src[:-37])
    r = kafka_ref("dump", "--in", torn, "--deep", "--payload", "b64")
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert r.returncode == 2  # Kafka's reader silently ignores the torn tail
    (trunc,) = [o for o in objs if o["type"] == "truncated"]
    ob, _, ends, rc = our_dump(torn)
    assert len(ob) == len([o for o in objs if o["type"] == "batch"])
    assert ends[0]["invalid_bytes"] == trunc["trailing_bytes"] and ends[0]["valid_bytes"] == trunc["stopped_at"]
    assert rc == 1


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_cli_reads_the_session_corpus_as_kafka(corpus, name):
    """The same comparison through the command over the session corpus: compaction-like offset gaps (and a jump
    past Integer.MAX_VALUE), multi-MB batches of every format, edge values, non-default codec levels, an open
    transaction, an empty file. Kafka's reading is ``kafka-ref dump --deep`` of the same file."""
    scenario = BY_NAME[name]
    kafka = corpus.dumps[name]
    assert kafka.returncode == 0 and kafka.error is None and kafka.truncated is None
    ob, orecs, ends, rc = our_dump(corpus.paths[name])
    assert rc == 0 and ends and ends[0]["invalid_bytes"] == 0
    ours_b, ours_r = _ours_as_kafka(ob, orecs)
    assert ours_b == [{k: b[k] for k in BATCH_FIELDS} for b in kafka.batches]
    assert ours_r == _kafka_records(kafka.records())
    # the scenario's formats are really there (a changed generator cannot make this vacuous)
    assert scenario.combos <= {(b["magic"], b["codec"]) for b in ob}, {(b["magic"], b["codec"]) for b in ob}
    assert bool(ob) == (name != "empty-file")
