"""Synthetic ``__cluster_metadata-0`` dirs: log segments and snapshots built record by record, framed as a KRaft
controller frames them (``MetadataRecordSerde``; snapshots between a SnapshotHeader and a SnapshotFooter control
batch), for the tests that need damage a real broker never writes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.decoders import write_metadata_record
from kafkatool.decoders.message import write_message
from kafkatool.decoders.schema import definitions, resolve_kafka_version
from kafkatool.record.batch import ControlRecordType
from kafkatool.record.default_records import build_batch, build_control_batch

T0 = 1_790_000_000_000


def control_value(name: str, values: dict[str, Any]) -> bytes:
    """A KRaft control record value (read at version 0 by ControlRecordUtils)."""
    return write_message(definitions(resolve_kafka_version(None))[name].spec, values, 0)


def uuid(n: int) -> bytes:
    return n.to_bytes(16, "big")


def topic(name: str, n: int) -> bytes:
    return write_metadata_record("TopicRecord", {"Name": name, "TopicId": uuid(n)})


def partition(topic_n: int, pid: int, replicas: list[int], leader: int, **extra: Any) -> bytes:
    return write_metadata_record("PartitionRecord", {
        "PartitionId": pid, "TopicId": uuid(topic_n), "Replicas": replicas, "Isr": replicas,
        "Leader": leader, "LeaderEpoch": 0, "PartitionEpoch": 0, **extra}, 0)


def config(resource_type: int, name: str, key: str, value: str | None) -> bytes:
    return write_metadata_record("ConfigRecord", {"ResourceType": resource_type, "ResourceName": name,
                                                  "Name": key, "Value": value})


@dataclass
class MetadataDirBuilder:
    """Appends batches to one segment ``00000000000000000000.log`` (or ``base``) and writes snapshots."""

    path: Path
    base: int = 0
    epoch: int = 1
    next_offset: int = 0
    batches: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.next_offset = self.base

    def append(self, *values: bytes | None, timestamp: int | None = None) -> int:
        """One batch of metadata records; returns the offset of its first record."""
        first = self.next_offset
        ts = T0 + first if timestamp is None else timestamp
        self.batches.append(build_batch([(first + i, ts, None, v, ()) for i, v in enumerate(values)],
                                        partition_leader_epoch=self.epoch))
        self.next_offset += len(values)
        return first

    def leader_change(self, leader: int = 1) -> int:
        first = self.next_offset
        self.batches.append(build_control_batch(
            offset=first, timestamp=T0 + first, control_type=ControlRecordType.LEADER_CHANGE,
            value=control_value("LeaderChangeMessage", {"Version": 0, "LeaderId": leader,
                                                        "Voters": [{"VoterId": leader}],
                                                        "GrantingVoters": [{"VoterId": leader}]}),
            partition_leader_epoch=self.epoch))
        self.next_offset += 1
        return first

    def write_log(self) -> Path:
        p = self.path / f"{self.base:020d}.log"
        p.write_bytes(b"".join(self.batches))
        return p

    def snapshot(self, end_offset: int, values: list[bytes], *, epoch: int | None = None, footer: bool = True,
                 header_timestamp: int | None = None) -> Path:
        """``<end_offset>-<epoch>.checkpoint``: header, the records (offsets from 1), footer."""
        ep = self.epoch if epoch is None else epoch
        ts = T0 + end_offset if header_timestamp is None else header_timestamp
        parts = [build_control_batch(offset=0, timestamp=ts, control_type=ControlRecordType.SNAPSHOT_HEADER,
                                     value=control_value("SnapshotHeaderRecord", {
                                         "Version": 0, "LastContainedLogTimestamp": ts}),
                                     partition_leader_epoch=ep)]
        if values:
            parts.append(build_batch([(1 + i, ts, None, v, ()) for i, v in enumerate(values)],
                                     partition_leader_epoch=ep))
        if footer:
            parts.append(build_control_batch(offset=1 + len(values), timestamp=ts,
                                             control_type=ControlRecordType.SNAPSHOT_FOOTER,
                                             value=control_value("SnapshotFooterRecord", {"Version": 0}),
                                             partition_leader_epoch=ep))
        p = self.path / f"{end_offset:020d}-{ep:010d}.checkpoint"
        p.write_bytes(b"".join(parts))
        return p


def truncate(path: Path, keep: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(keep)
    os.utime(path)
