"""The metadata image replay (``kafkatool.metadata``) on synthetic logs: Kafka's replay rules, snapshots and
rewinding, and the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.decoders import write_metadata_record
from kafkatool.errors import InputError, UsageError
from kafkatool.metadata import build_image, diff_images
from tests.metadata.fixtures import T0, MetadataDirBuilder, config, partition, topic, uuid

TOPIC, BROKER = 2, 4


def _broker(bid: int, epoch: int, fenced: bool = True) -> bytes:
    return write_metadata_record("RegisterBrokerRecord", {
        "BrokerId": bid, "IncarnationId": uuid(100 + bid), "BrokerEpoch": epoch,
        "EndPoints": [{"Name": "PLAINTEXT", "Host": "10.0.0.1", "Port": 9092, "SecurityProtocol": 0}],
        "Features": [{"Name": "metadata.version", "MinSupportedVersion": 1, "MaxSupportedVersion": 21}],
        "Rack": "r1", "Fenced": fenced}, 3)


def _change(topic_n: int, pid: int, **fields: object) -> bytes:
    return write_metadata_record("PartitionChangeRecord", {"PartitionId": pid, "TopicId": uuid(topic_n), **fields}, 0)


def _part(img: dict, name: str, pid: int) -> dict:  # type: ignore[type-arg]
    t = next(t for t in img["topics"] if t["name"] == name)
    return next(p for p in t["partitions"] if p["partition"] == pid)  # type: ignore[no-any-return]


def test_replay_follows_kafkas_rules(tmp_path: Path) -> None:
    b = MetadataDirBuilder(tmp_path / "__cluster_metadata-0")
    b.leader_change()
    b.append(write_metadata_record("FeatureLevelRecord", {"Name": "metadata.version", "FeatureLevel": 21}),
             write_metadata_record("FeatureLevelRecord", {"Name": "group.version", "FeatureLevel": 1}))
    b.append(_broker(1, 10), _broker(2, 11))
    b.append(write_metadata_record("UnfenceBrokerRecord", {"Id": 1, "Epoch": 10}))
    b.append(topic("orders", 1), partition(1, 0, [1, 2], 1), partition(1, 1, [2, 1], 2),
             config(TOPIC, "orders", "retention.ms", "1000"))
    b.append(_change(1, 0, Isr=[1]), _change(1, 1, Leader=1), _change(1, 1, Replicas=[1, 2, 3], Isr=[1, 2]))
    b.append(topic("gone", 2), partition(2, 0, [1], 1), config(TOPIC, "gone", "cleanup.policy", "compact"))
    b.append(write_metadata_record("RemoveTopicRecord", {"TopicId": uuid(2)}))
    b.append(config(BROKER, "", "log.retention.ms", "5"), config(BROKER, "", "log.retention.ms", None))
    b.append(write_metadata_record("ClientQuotaRecord", {"Entity": [{"EntityType": "user", "EntityName": "al"}],
                                                         "Key": "producer_byte_rate", "Value": 1024.0}),
             write_metadata_record("ClientQuotaRecord", {"Entity": [{"EntityType": "client-id",
                                                                     "EntityName": None}],
                                                         "Key": "consumer_byte_rate", "Value": 7.0}),
             write_metadata_record("ClientQuotaRecord", {"Entity": [{"EntityType": "client-id",
                                                                     "EntityName": None}],
                                                         "Key": "consumer_byte_rate", "Remove": True}))
    b.append(write_metadata_record("AccessControlEntryRecord", {
        "Id": uuid(7), "ResourceType": 2, "ResourceName": "orders", "PatternType": 3, "Principal": "User:al",
        "Host": "*", "Operation": 3, "PermissionType": 3}))
    b.append(write_metadata_record("FeatureLevelRecord", {"Name": "group.version", "FeatureLevel": 0}),
             write_metadata_record("ProducerIdsRecord", {"BrokerId": 1, "BrokerEpoch": 10, "NextProducerId": 5000}),
             write_metadata_record("BrokerRegistrationChangeRecord", {"BrokerId": 2, "BrokerEpoch": 11,
                                                                      "Fenced": -1}, 0))
    b.write_log()
    r = build_image(tmp_path)  # the log dir holding __cluster_metadata-0
    assert r.findings == []
    img = r.image.to_json()
    assert img["offset"] == b.next_offset - 1 and r.log_end_offset == b.next_offset
    assert img["features"] == {"metadata.version": 21}  # level 0 removes a feature
    assert [(x["id"], x["epoch"], x["fenced"]) for x in img["brokers"]] == [(1, 10, False), (2, 11, False)]
    assert [t["name"] for t in img["topics"]] == ["orders"]
    p0, p1 = _part(img, "orders", 0), _part(img, "orders", 1)
    assert (p0["leader"], p0["leader_epoch"], p0["partition_epoch"], p0["isr"]) == (1, 0, 1, [1])
    # a leader change bumps the leader epoch; every change bumps the partition epoch
    assert (p1["leader"], p1["leader_epoch"], p1["partition_epoch"], p1["replicas"], p1["isr"]) == \
        (1, 1, 2, [1, 2, 3], [1, 2])
    # the removed topic's config went with it; a null value deletes a key (and an empty resource)
    assert img["configs"] == [{"resource_type": "topic", "resource_name": "orders",
                               "configs": {"retention.ms": "1000"}}]
    assert img["client_quotas"] == [{"entity": {"user": "al"}, "values": {"producer_byte_rate": 1024.0}}]
    assert [(a["resource_name"], a["operation"], a["permission"]) for a in img["acls"]] == [("orders", "READ",
                                                                                            "ALLOW")]
    assert img["producer_ids"] == {"next_producer_id": 5000, "broker_id": 1, "broker_epoch": 10}
    assert img["quorum"] == {"leader_id": 1, "leader_epoch": 1}


def test_metadata_transactions_apply_at_their_end(tmp_path: Path) -> None:
    b = MetadataDirBuilder(tmp_path)
    b.append(write_metadata_record("BeginTransactionRecord", {"Name": "t1"}), topic("a", 1),
             write_metadata_record("EndTransactionRecord", {}))
    b.append(write_metadata_record("BeginTransactionRecord", {"Name": "t2"}), topic("b", 2),
             write_metadata_record("AbortTransactionRecord", {"Reason": "no"}))
    begin = b.append(write_metadata_record("BeginTransactionRecord", {"Name": "t3"}), topic("c", 3))
    b.write_log()
    r = build_image(tmp_path)
    assert [t["name"] for t in r.image.to_json()["topics"]] == ["a"]
    assert r.open_transaction == begin
    assert [(f.kind, f.severity) for f in r.findings] == [("open-transaction", "info")]
    mid = build_image(tmp_path, at_offset=1)  # inside the first transaction: nothing applied yet
    assert mid.image.to_json()["topics"] == [] and mid.open_transaction == 0


def test_snapshot_then_log_and_rewinding(tmp_path: Path) -> None:
    b = MetadataDirBuilder(tmp_path)
    b.append(topic("a", 1), partition(1, 0, [1], 1))
    b.append(topic("b", 2))
    b.append(topic("c", 3))
    b.snapshot(3, [topic("a", 1), partition(1, 0, [1], 1), topic("b", 2)])  # offsets 0..2
    b.write_log()
    latest = build_image(tmp_path)
    assert latest.snapshot is not None and latest.snapshot.end_offset == 3
    assert latest.records == 4 and [t["name"] for t in latest.image.to_json()["topics"]] == ["a", "b", "c"]
    at2 = build_image(tmp_path, at_offset=2)
    assert at2.snapshot is not None and at2.records == 3 and at2.image.offset == 2
    at1 = build_image(tmp_path, at_offset=1)
    assert at1.snapshot is None and [t["name"] for t in at1.image.to_json()["topics"]] == ["a"]
    by_time = build_image(tmp_path, at_time=T0 + 2)  # batches are stamped T0 + their first offset
    assert by_time.snapshot is None and by_time.image.offset == 2
    assert [t["name"] for t in by_time.image.to_json()["topics"]] == ["a", "b"]
    changes = diff_images(at1.image.to_json(), latest.image.to_json())
    assert [(c.section, c.key, c.change) for c in changes] == [("topics", "b", "added"), ("topics", "c", "added")]


def test_a_snapshot_at_the_log_end_still_says_where_the_log_ends(tmp_path: Path) -> None:
    """A node that snapshotted at its last record (Kafka 4.4 on a clean shutdown, at times): nothing is
    replayed from the log, but the log end offset is still the log's, not unknown."""
    b = MetadataDirBuilder(tmp_path)
    b.append(topic("a", 1), partition(1, 0, [1], 1))
    b.append(topic("b", 2))
    b.snapshot(3, [topic("a", 1), partition(1, 0, [1], 1), topic("b", 2)])
    b.write_log()
    r = build_image(tmp_path)
    assert r.snapshot is not None and r.records == 3
    assert r.image.offset == 2 and r.log_end_offset == 3


def test_log_truncated_before_the_snapshot_is_needed(tmp_path: Path) -> None:
    b = MetadataDirBuilder(tmp_path, base=5)
    b.append(topic("x", 9))
    b.write_log()
    r = build_image(tmp_path)
    assert [f.kind for f in r.findings] == ["log-gap"]
    assert "starts at offset 5" in r.findings[0].message


def test_usage_and_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no KRaft metadata here"):
        build_image(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        build_image(tmp_path / "missing")
    MetadataDirBuilder(tmp_path).write_log()
    with pytest.raises(UsageError):
        build_image(tmp_path, at_offset=1, at_time=2)
    with pytest.raises(UsageError, match="at least 0"):
        build_image(tmp_path, at_offset=-1)
