"""Hostile metadata logs: truncated snapshots, snapshots without a footer, unknown record types and versions,
garbage tagged fields. Each is a finding with its byte position and exit 1 (``metadata`` and ``dump``), never a
traceback; what Kafka prints for the same bytes is checked against DumpLogSegments 3.9.2 itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatool.decoders import read_metadata_record, write_metadata_record
from kafkatool.decoders.message import uvarint
from kafkatool.metadata import build_image
from tests.metadata.fixtures import MetadataDirBuilder, partition, topic, truncate, uuid
from tests.metadata.kraft_broker import KAFKA_39, dump_log_segments_class, kafka_tool, require_jvm
from tests.support.cli import run_cli

GOOD_TOPIC = topic("t", 1)
# TopicRecord v0 with its empty tagged-field section replaced (the last byte of a record without tags is 0).
UNKNOWN_TAG = GOOD_TOPIC[:-1] + uvarint(1) + uvarint(42) + uvarint(3) + b"xyz"
TAG_PAST_END = GOOD_TOPIC[:-1] + uvarint(1) + uvarint(5) + uvarint(100) + b"abc"
# PartitionChangeRecord: Leader (tag 1, int32) declared as 2 bytes; Kafka reads 4 and never checks.
_change = write_metadata_record("PartitionChangeRecord", {"PartitionId": 0, "TopicId": uuid(1), "Leader": 3}, 0)
BAD_TAG_SIZE = _change[:-6] + uvarint(1) + uvarint(2) + _change[-4:]
UNKNOWN_TYPE = uvarint(1) + uvarint(99) + uvarint(0) + b"\x00"
NEWER_VERSION = uvarint(1) + uvarint(2) + uvarint(7) + GOOD_TOPIC[3:]
TRAILING = GOOD_TOPIC + b"\x07\x07"
BAD_FRAME = uvarint(9) + GOOD_TOPIC[1:]


def test_crafted_values_are_what_they_claim() -> None:
    assert read_metadata_record(BAD_TAG_SIZE).values["Leader"] == 3
    assert read_metadata_record(BAD_TAG_SIZE).notes[0].message.endswith("declares 2 bytes but its value took 4")
    assert read_metadata_record(UNKNOWN_TAG).notes[0].message.startswith("unknown tagged field 42 (3 bytes)")
    assert read_metadata_record(NEWER_VERSION).newer_than_definition


def _hostile_log(d: Path) -> MetadataDirBuilder:
    b = MetadataDirBuilder(d / "__cluster_metadata-0")
    b.append(GOOD_TOPIC, partition(1, 0, [1], 1))
    for v in (UNKNOWN_TYPE, UNKNOWN_TAG, TAG_PAST_END, BAD_TAG_SIZE, NEWER_VERSION, TRAILING, BAD_FRAME, None, b""):
        b.append(v)
    # TopicRecords re-created the topic (offsets 3 and 6) without partitions: one more, and the change again (12)
    b.append(partition(1, 0, [1], 1), BAD_TAG_SIZE)
    b.write_log()
    return b


EXPECTED_PAYLOADS = [
    '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAQ"}}',
    None,  # the PartitionRecord, not checked here
    "Error at 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 99",
    '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAQ"}}',
    "Error at 4, skipping. Failed to deserialize record with type 2",
    '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,"topicId":"AAAAAAAAAAAAAAAAAAAAAQ",'
    '"leader":3}}',
    '{"type":"TOPIC_RECORD","version":7,"data":{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAQ"}}',
    "Error at 7, skipping. Found 2 byte(s) of garbage after 2",
    "Error at 8, skipping. Could not deserialize metadata record due to unknown frame version 9(only frame "
    "version 1 is supported)",
    "Error at 9, skipping. Error while reading frame version",
    "Error at 10, skipping. Error while reading frame version",
]


def _payloads(stdout: str) -> list[str | None]:
    out: list[str | None] = []
    for ln in stdout.splitlines():
        if ln.startswith("| offset:"):
            out.append(ln.split(" payload: ", 1)[1] if " payload: " in ln else None)
    return out


def test_dump_prints_kafkas_texts_and_reports_each_problem(tmp_path: Path) -> None:
    b = _hostile_log(tmp_path)
    seg = b.path / "00000000000000000000.log"
    r = run_cli("dump", "-f", "dump-log", "--decoder", "cluster-metadata", seg)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    got = _payloads(r.stdout)[:len(EXPECTED_PAYLOADS)]
    assert [g for i, g in enumerate(got) if EXPECTED_PAYLOADS[i] is not None] == \
        [e for e in EXPECTED_PAYLOADS if e is not None]
    findings = [ln for ln in r.stderr.splitlines() if "decode-error" in ln or "record at offset" in ln]
    for needle in ["record at offset 2 at byte 1 of its value: org.apache.kafka.common.errors."
                   "UnsupportedVersionException: Unknown metadata id 99",
                   "record at offset 3 at byte 22 of its value: unknown tagged field 42 (3 bytes)",
                   "record at offset 4 at byte 24 of its value: Failed to deserialize record with type 2",
                   "record at offset 5 at byte 24 of its value: tagged field Leader (tag 1) of "
                   "PartitionChangeRecord declares 2 bytes but its value took 4",
                   "record at offset 6: TopicRecord version 7 is newer than Kafka 4.4.0's definition knows (0-0)",
                   "record at offset 7 at byte 22 of its value: Found 2 byte(s) of garbage after 2",
                   "record at offset 8 at byte 0 of its value: Could not deserialize metadata record due to unknown "
                   "frame version 9"]:
        assert any(needle in f for f in findings), (needle, findings)
    # JSON: the raw value stays beside Kafka's text; a decoded record carries its fields as value_json
    j = run_cli("dump", "-f", "json", "--decoder", "cluster-metadata", seg)
    recs = [x for x in map(json.loads, j.stdout.splitlines()) if x["type"] == "record"]
    assert recs[0]["value_json"] == {"type": "TOPIC_RECORD", "version": 0,
                                     "data": {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"}}
    assert "value_json" not in recs[2] and recs[2]["value"] == UNKNOWN_TYPE.decode("latin-1")
    finds = [x for x in map(json.loads, j.stdout.splitlines()) if x["type"] == "finding"]
    assert {f["offset"] for f in finds if f["kind"] == "decode-error"} == {2, 3, 4, 5, 6, 7, 8, 9, 10, 12}


def test_dump_log_texts_equal_dump_log_segments(tmp_path: Path) -> None:
    require_jvm()
    b = _hostile_log(tmp_path)
    seg = b.path / "00000000000000000000.log"
    kafka = kafka_tool(KAFKA_39, dump_log_segments_class(KAFKA_39), ["--cluster-metadata-decoder", "--files",
                                                                      str(seg)])
    ours = run_cli("dump", "-f", "dump-log", "--decoder", "cluster-metadata", seg)
    assert kafka.stdout.splitlines() == ours.stdout.splitlines()


def test_metadata_reports_undecodable_records_and_goes_on(tmp_path: Path) -> None:
    _hostile_log(tmp_path)
    r = run_cli("metadata", tmp_path, "-f", "json")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    image = next(x for x in lines if x["type"] == "metadata_image")["image"]
    assert [t["name"] for t in image["topics"]] == ["t"]
    assert _part_leader(image) == 3  # the PartitionChangeRecord with the oddly sized tag still applies
    undecodable = {f["offset"]: f for f in lines if f["type"] == "finding" and f["kind"] == "undecodable-record"}
    assert set(undecodable) == {2, 4, 7, 8, 9, 10}
    assert "(byte 24 of its value)" in undecodable[4]["message"] and undecodable[4]["position"] is not None
    kinds = {(f["kind"], f["offset"]) for f in lines if f["type"] == "finding"}
    assert {("tagged-fields", 3), ("tagged-fields", 5), ("newer-version", 6), ("tagged-fields", 12)} <= kinds
    assert ("replay", 5) in kinds  # the partition it changes went with the re-created topic
    assert image["offset"] == 12


def _part_leader(image: dict) -> int:  # type: ignore[type-arg]
    return int(image["topics"][0]["partitions"][0]["leader"])


def test_truncated_snapshot_falls_back_to_the_log(tmp_path: Path) -> None:
    b = MetadataDirBuilder(tmp_path / "__cluster_metadata-0")
    b.append(topic("a", 1))
    b.append(topic("b", 2))
    b.write_log()
    snap = b.snapshot(2, [topic("a", 1), topic("b", 2)])
    size = snap.stat().st_size
    truncate(snap, size - 30)  # inside the records batch... or the footer
    r = build_image(tmp_path)
    assert r.snapshot is None and [t["name"] for t in r.image.to_json()["topics"]] == ["a", "b"]
    kinds = [f.kind for f in r.findings]
    assert kinds[:2] == ["snapshot-truncated", "snapshot-skipped"] and kinds[2:] == []
    assert r.findings[0].position is not None and 0 < r.findings[0].position < size
    cli = run_cli("metadata", tmp_path)
    assert cli.returncode == 1 and f"{snap} at byte {r.findings[0].position}: the snapshot ends inside a batch" \
        in cli.stderr
    d = run_cli("dump", snap)
    assert d.returncode == 1 and "torn" in d.stderr


def test_snapshot_without_footer_falls_back_to_the_previous_one(tmp_path: Path) -> None:
    b = MetadataDirBuilder(tmp_path / "__cluster_metadata-0")
    b.append(topic("a", 1))
    b.append(topic("b", 2))
    b.append(topic("c", 3))
    b.write_log()
    older = b.snapshot(1, [topic("a", 1)])
    newer = b.snapshot(3, [topic("a", 1), topic("b", 2), topic("c", 3)], footer=False)
    r = build_image(tmp_path)
    assert r.snapshot is not None and r.snapshot.path == older
    assert [(f.kind, f.path) for f in r.findings] == [("snapshot-no-footer", str(newer)),
                                                       ("snapshot-skipped", str(newer))]
    assert r.findings[0].position is not None  # the last batch read
    assert [t["name"] for t in r.image.to_json()["topics"]] == ["a", "b", "c"]
    assert run_cli("metadata", tmp_path, "-f", "json").returncode == 1


@pytest.mark.parametrize("damage", ["crc", "torn"])
def test_log_damage_stops_the_replay(tmp_path: Path, damage: str) -> None:
    b = MetadataDirBuilder(tmp_path)
    b.append(topic("a", 1))
    second = len(b.batches[0])
    b.append(topic("b", 2))
    seg = b.write_log()
    data = bytearray(seg.read_bytes())
    if damage == "crc":
        data[second + 70] ^= 0xFF
        b.append(topic("c", 3))
        data += b.batches[-1]
    else:
        data = data[:-5]
    seg.write_bytes(bytes(data))
    r = build_image(tmp_path)
    assert [t["name"] for t in r.image.to_json()["topics"]] == ["a"]
    f = r.findings[0]
    assert (f.kind, f.severity, f.position) == (("crc-mismatch", "error", second) if damage == "crc"
                                                else ("torn-tail", "warning", second))


def test_a_dir_without_metadata_is_a_usage_error(tmp_path: Path) -> None:
    r = run_cli("metadata", tmp_path)
    assert r.returncode == 2 and r.stdout == "" and "no KRaft metadata here" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
