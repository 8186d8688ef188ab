"""1. ``kafkatool dump --format dump-log`` = Kafka's own DumpLogSegments (the same jars as the broker), line for line,
on every file of the log dirs the brokers wrote: ZooKeeper 3.9 (v0, v1 and v2 topics, LogAppendTime, the cleaner's
v1 output, idempotent producers, rolls by size), KRaft 3.9 (every codec, transactions committed and aborted with
their .txnindex, the cleaner's output with tombstones and markers, rolls by time, retention deletes,
__consumer_offsets and __transaction_state); and ``dump --format json`` field for field against that text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kafkatool.canary.sandbox import KafkaInstall
from tests.broker.runs import KraftRun, SampleRun, ZooKeeperRun
from tests.broker.tools import Run, dump_log_segments, kafkatool

# (DumpLogSegments options, kafkatool dump options)
OPTIONS = {
    "shallow": ([], []),
    "deep": (["--deep-iteration"], ["--deep"]),
    "print-data": (["--print-data-log"], ["--print-data"]),
    "deep-print-data-skip-metadata": (["--deep-iteration", "--print-data-log", "--skip-record-metadata"],
                                      ["--print-data", "--skip-record-metadata"]),
    "verify-index-only": (["--verify-index-only"], ["--verify-index-only"]),
    "index-sanity-check": (["--index-sanity-check"], ["--index-sanity-check"]),
}
LOG_DIRS = ("zookeeper-3.9", "kraft-3.9")


@pytest.fixture(scope="module")
def log_dirs(zookeeper39: ZooKeeperRun, kraft39: KraftRun) -> dict[str, tuple[KafkaInstall, Path]]:
    return {"zookeeper-3.9": (zookeeper39.install, zookeeper39.clean), "kraft-3.9": (kraft39.install, kraft39.clean)}


def kafka_files(log_dir: Path) -> list[Path]:
    """Every file of every partition dir that DumpLogSegments can be given: 3.9's tool aborts the whole run on a
    name without a '.' (leader-epoch-checkpoint; see test_names_without_a_dot)."""
    return sorted(f for f in log_dir.glob("*/*") if f.is_file() and "." in f.name)


def same_lines(kafka: Run, ours: Run) -> None:
    assert kafka.returncode == 0, kafka.stderr[-2000:]
    assert ours.stdout.splitlines() == kafka.stdout.splitlines()
    assert ours.stderr.splitlines() == kafka.stderr.splitlines()


@pytest.mark.parametrize("options", list(OPTIONS))
@pytest.mark.parametrize("log_dir", LOG_DIRS)
def test_dump_log_equals_dump_log_segments(log_dirs, log_dir: str, options: str, tmp_path: Path) -> None:
    install, root = log_dirs[log_dir]
    files = kafka_files(root)
    kafka_opts, our_opts = OPTIONS[options]
    kafka = dump_log_segments(install, files, kafka_opts, workdir=tmp_path)
    ours = kafkatool("dump", "--format", "dump-log", *our_opts, *files)
    same_lines(kafka, ours)
    # the data is what the issue asks for (a changed workload cannot make this vacuous)
    kinds = {f.suffix for f in files}
    assert {".log", ".index", ".timeindex", ".snapshot"} <= kinds
    if log_dir == "kraft-3.9":
        assert ".txnindex" in kinds
        text = kafka.stdout
        if options == "shallow":
            for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
                assert f"compresscodec: {codec}" in text
            assert "isControl: true" in text and "isTransactional: true" in text
            assert "LogAppendTime" in text
    else:
        if options == "shallow":
            assert {m for m in re.findall(r"magic: (\d)", kafka.stdout)} == {"0", "1", "2"}


@pytest.mark.parametrize(("topic", "kafka_option", "decoder"), [
    ("__consumer_offsets", "--offsets-decoder", "offsets"),
    ("__transaction_state", "--transaction-log-decoder", "transactions"),
])
def test_internal_topics_with_their_decoders(kraft39: KraftRun, topic: str, kafka_option: str, decoder: str,
                                             tmp_path: Path) -> None:
    files = sorted(kraft39.clean.glob(f"{topic}-*/*.log"))
    kafka = dump_log_segments(kraft39.install, files, [kafka_option], workdir=tmp_path)
    ours = kafkatool("dump", "--format", "dump-log", "--decoder", decoder, *files)
    same_lines(kafka, ours)
    # decoded, not raw: offset commits (key type 1) and transaction metadata are there
    decoded = 'key: {"type":"1"' if decoder == "offsets" else "transaction_metadata::transactionalId=txn-producer-0"
    assert decoded in kafka.stdout


def test_names_without_a_dot(kraft39: KraftRun, tmp_path: Path) -> None:
    """3.9's tool takes the text after the last '.' as the file kind and dies on a name without one
    (``StringIndexOutOfBoundsException``); kafkatool says so on stderr and goes on with the next file."""
    part = kraft39.clean / "txn-0"
    checkpoint, log = part / "leader-epoch-checkpoint", sorted(part.glob("*.log"))[0]
    kafka = dump_log_segments(kraft39.install, [checkpoint, log], [], workdir=tmp_path)
    assert kafka.returncode != 0 and "StringIndexOutOfBoundsException" in kafka.stderr
    assert kafka.stdout.splitlines() == [f"Dumping {checkpoint}"]
    ours = kafkatool("dump", "--format", "dump-log", checkpoint, log)
    assert ours.stdout.splitlines()[0] == f"Dumping {checkpoint}"
    assert "StringIndexOutOfBoundsException" in ours.stderr
    assert f"Dumping {log}" in ours.stdout.splitlines()


# ---------------------------------------------------------------------------------------------- json vs the text

_PAIR = re.compile(r"(\w+): (OptionalLong\.empty|OptionalLong\[-?\d+\]|\[[^\]]*\]|\S+)")
_TS_TYPES = ("CreateTime", "LogAppendTime", "NoTimestampType")


def _value(text: str) -> Any:
    if text.endswith("}") and text[:-1].isdigit():  # 3.9's legacy record line ends "crc: N}"
        text = text[:-1]
    if text in ("true", "false"):
        return text == "true"
    if text == "OptionalLong.empty":
        return None
    m = re.fullmatch(r"OptionalLong\[(-?\d+)\]", text)
    if m:
        return int(m.group(1))
    if text.startswith("["):
        return [k for k in text[1:-1].split(",") if k]
    try:
        return int(text)
    except ValueError:
        return text


def parse_dump_log(text: str) -> list[dict[str, Any]]:
    """Batch lines and record lines of DumpLogSegments --deep-iteration, as dicts of Kafka's field names (the
    timestamp under its type's name, as printed), in order; each with the file it came from."""
    out: list[dict[str, Any]] = []
    path = None
    for line in text.splitlines():
        if line.startswith("Dumping "):
            path = line[len("Dumping "):]
        elif line.startswith(("baseOffset: ", "offset: ")) and " position: " in line:
            out.append({"kind": "batch", "path": path, **{k: _value(v) for k, v in _PAIR.findall(line)}})
        elif line.startswith("| offset: "):
            out.append({"kind": "record", "path": path, **{k: _value(v) for k, v in _PAIR.findall(line[2:])}})
    return out


def json_as_dump_log(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """kafkatool's JSON batches and records under DumpLogSegments' names, for the fields its text prints."""
    out: list[dict[str, Any]] = []
    path = batch = None
    for o in lines:
        if o["type"] == "file":
            path = o["path"]
        elif o["type"] == "batch":
            batch = o
            b: dict[str, Any] = {"kind": "batch", "path": path}
            if o["magic"] >= 2:
                b.update(baseOffset=o["base_offset"], lastOffset=o["last_offset"], count=o["count"],
                         baseSequence=o["base_sequence"], lastSequence=o["last_sequence"],
                         producerId=o["producer_id"], producerEpoch=o["producer_epoch"],
                         partitionLeaderEpoch=o["partition_leader_epoch"], isTransactional=o["is_transactional"],
                         isControl=o["is_control"], deleteHorizonMs=o["delete_horizon_ms"])
            else:
                b["offset"] = o["last_offset"]
            b.update(position=o["position"], **{o["timestamp_type"]: o["max_timestamp"]}, size=o["size"],
                     magic=o["magic"], compresscodec=o["codec"], crc=o["crc"], isvalid=o["crc_valid"])
            out.append(b)
        elif o["type"] == "record":
            assert batch is not None
            r: dict[str, Any] = {"kind": "record", "path": path, "offset": o["offset"],
                                 batch["timestamp_type"]: o["timestamp"]}
            r.update(keySize=o["key_size"], valueSize=o["value_size"])
            if batch["magic"] >= 2:
                r.update(sequence=o["sequence"], headerKeys=[k for k, _ in o["headers"]])
            else:
                r.update(isValid=o["crc_valid"], crc=o["crc"])
            if batch["is_control"] and o["control"]["type"] in ("COMMIT", "ABORT"):
                r.update(endTxnMarker=o["control"]["type"], coordinatorEpoch=o["control"]["coordinator_epoch"])
            out.append(r)
    return out


@pytest.mark.parametrize("log_dir", LOG_DIRS)
def test_json_agrees_with_the_dump_log_text(log_dirs, log_dir: str, tmp_path: Path) -> None:
    install, root = log_dirs[log_dir]
    logs = sorted(root.glob("*/*.log"))
    kafka = dump_log_segments(install, logs, ["--deep-iteration"], workdir=tmp_path)
    assert kafka.returncode == 0
    ours = kafkatool("dump", "--format", "json", "--deep", *logs)
    assert ours.returncode == 0, ours.stderr
    theirs = parse_dump_log(kafka.stdout)
    mine = json_as_dump_log([json.loads(line) for line in ours.stdout.splitlines()])
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs, strict=True):
        assert a == b
    assert sum(1 for b in theirs if b["kind"] == "record") > 1000


@pytest.mark.parametrize("options", ["shallow", "deep", "print-data", "verify-index-only", "index-sanity-check"])
def test_kafka_4s_tool_prints_the_same_lines(sample4: SampleRun, options: str, tmp_path: Path) -> None:
    """Kafka 4.4's DumpLogSegments (the Java port of KAFKA-14579) on the log dir the 4.4 broker left: the same
    stdout as 3.9's, which ``--format dump-log`` follows. Its stderr is not 3.9's: with --deep-iteration it reports
    every segment not starting at offset 0 as "Non-consecutive offsets ... -1 is followed by <base offset>", and
    with --skip-record-metadata a record line without a key starts "| payload:" where 3.9 prints " payload:"."""
    files = kafka_files(sample4.seen.after)
    kafka_opts, our_opts = OPTIONS[options]
    kafka = dump_log_segments(sample4.seen.install, files, kafka_opts, workdir=tmp_path)
    ours = kafkatool("dump", "--format", "dump-log", *our_opts, *files)
    assert kafka.returncode == 0, kafka.stderr[-2000:]
    assert ours.stdout.splitlines() == kafka.stdout.splitlines()
