"""Rebuilt indexes of segments written by Kafka's own code (kafka-ref gen, kafka-clients 3.9.1).

The expected entries come from Kafka's view of each batch: ``kafka-ref dump`` prints every batch's
position, ``lastOffset()``, ``maxTimestamp()`` and ``sizeInBytes()`` as kafka-clients reads them (for
legacy batches through ``LegacyFileChannelRecordBatch``), and the 3.9 recover loop (KAFKA-FORMATS §4.2,
transcribed in ``recover_rules`` below) turns them into index entries. Our rebuild, which reads the same
fields from raw header bytes, must produce byte-identical ``.index``/``.timeindex`` files.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafkatool.log.recovery import recover_segment
from tests.support.kafkaref import KafkaRef

CASES = {
    # name: kafka-ref gen arguments
    "v2-none-small-batches": ["--magic", "2", "--codec", "none", "--records", "400", "--batch-records", "1",
                              "--value-bytes", "300"],
    "v2-gzip": ["--magic", "2", "--codec", "gzip", "--records", "600", "--batch-records", "7", "--value-bytes", "400"],
    "v2-snappy": ["--magic", "2", "--codec", "snappy", "--records", "600", "--batch-records", "9",
                  "--value-bytes", "400"],
    "v2-lz4-big-batches": ["--magic", "2", "--codec", "lz4", "--records", "300", "--batch-records", "40",
                           "--value-bytes", "700", "--compressible", "0.2"],
    "v2-zstd": ["--magic", "2", "--codec", "zstd", "--records", "600", "--batch-records", "5",
                "--value-bytes", "500"],
    "v2-log-append-time": ["--magic", "2", "--codec", "none,lz4", "--records", "500", "--batch-records", "3",
                           "--value-bytes", "300", "--timestamp-type", "append"],
    "v2-transactional": ["--magic", "2", "--codec", "none,zstd", "--records", "500", "--batch-records", "4",
                         "--value-bytes", "300", "--transactional", "--control-every", "3",
                         "--abort-fraction", "0.4", "--leader-epoch", "3"],
    "v2-idempotent-ts-steps-back": ["--magic", "2", "--codec", "snappy", "--records", "500", "--batch-records", "2",
                                    "--value-bytes", "250", "--idempotent", "--ts-step", "-3"],
    "v1-mixed-codecs": ["--magic", "1", "--codec", "none,gzip,snappy,lz4", "--records", "500",
                        "--batch-records", "5", "--value-bytes", "300"],
    "v1-log-append-time": ["--magic", "1", "--codec", "none,gzip", "--records", "400", "--batch-records", "4",
                           "--value-bytes", "300", "--timestamp-type", "append"],
    "v0-only": ["--magic", "0", "--codec", "none,gzip,snappy,lz4", "--records", "400", "--batch-records", "6",
                "--value-bytes", "300"],
    "mixed-v0-v1-v2": ["--magic", "0,1,2", "--codec", "none,gzip,lz4,snappy", "--records", "700",
                       "--batch-records", "5", "--value-bytes", "350", "--base-offset", "5000"],
}


def recover_rules(batches: list[dict], base: int, interval: int) -> tuple[bytes, bytes]:
    """LogSegment.recover (3.9) over Kafka's per-batch fields; returns the trimmed files' bytes."""
    valid = last_index = 0
    max_ts, max_off = -1, base
    offsets, times = [], []
    time_last = -1
    for b in batches:
        if b["maxTimestamp"] > max_ts:
            max_ts, max_off = b["maxTimestamp"], b["lastOffset"]
        if valid - last_index > interval:
            offsets.append(struct.pack(">ii", b["lastOffset"] - base, valid))
            if max_ts > time_last:
                times.append(struct.pack(">qi", max_ts, max_off - base))
                time_last = max_ts
            last_index = valid
        valid += b["sizeInBytes"]
    if max_ts > time_last:
        times.append(struct.pack(">qi", max_ts, max_off - base))
    return b"".join(offsets), b"".join(times)


@pytest.fixture(scope="module")
def kafka_segments(kafka_ref: KafkaRef, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """Each case's segment and Kafka's reading of its batches (gen and dump batched in two JVMs)."""
    d = tmp_path_factory.mktemp("reindex-interop")
    groups, paths = [], {}
    for name, args in sorted(CASES.items()):
        base = int(args[args.index("--base-offset") + 1]) if "--base-offset" in args else 0
        log = d / name / f"{base:020d}.log"
        log.parent.mkdir()
        paths[name] = (log, base)
        groups.append([["gen", "--out", str(log), "--seed", "11", *args],
                       KafkaRef.dump_args(log, deep=False, payload="none")])
    out = {}
    for (name, (log, base)), runs in zip(sorted(paths.items()), kafka_ref.run_batches(groups), strict=True):
        out[name] = (log, base, [x for x in runs[1].lines if x["type"] == "batch"])
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_rebuild_matches_kafka_batches(kafka_segments, name):
    log, base, batches = kafka_segments[name]
    assert batches and all(b["isValid"] for b in batches)
    for interval in (4096, 1000, 0):
        expected_index, expected_time = recover_rules(batches, base, interval)
        for verify in (False, True):
            for method in ("fast", "reference"):
                r = recover_segment(log, base, index_interval_bytes=interval, verify=verify, method=method)
                assert r.error is None and r.valid_bytes == log.stat().st_size
                assert r.encode_offset_index() == expected_index
                assert r.encode_time_index() == expected_time
        assert len(expected_index) >= 8
    if name == "v0-only":
        assert expected_time == b""
    else:
        assert expected_time != b""


def test_rebuild_of_sample_segments_matches_kafka_batches(kafka_ref: KafkaRef, sample_dir: Path):
    """Every segment of the ``kafkatool sample`` demo dir (format upgrades, cleaner output with offset gaps,
    empty batches and delete horizons, transactions, LogAppendTime), read by Kafka (the session's demo dir,
    read only)."""
    logs = sorted(sample_dir.glob("*/*.log"))
    assert len(logs) > 60
    runs = kafka_ref.run_batch([KafkaRef.dump_args(log, deep=False, payload="none") for log in logs])
    for log, ref in zip(logs, runs, strict=True):
        base = int(log.name.split(".")[0])
        batches = [x for x in ref.lines if x["type"] == "batch"]
        expected_index, expected_time = recover_rules(batches, base, 4096)
        r = recover_segment(log, base, verify=True)
        assert r.error is None and r.batches == len(batches), log
        assert r.encode_offset_index() == expected_index, log
        assert r.encode_time_index() == expected_time, log
        # ... which is also what the sample wrote (a clean shutdown: trimmed, with the close entry).
        assert log.with_suffix(".index").read_bytes() == expected_index, log
        assert log.with_suffix(".timeindex").read_bytes() == expected_time, log
