"""The KRaft metadata image, and how each metadata record changes it (Kafka's ``MetadataDelta.replay``).

The image is what a controller or broker holds in memory after replaying ``__cluster_metadata``: the rules
below are Kafka's ``*Delta.replay``/``*Image`` classes (``metadata/src/main/java/org/apache/kafka/image``,
3.9 and 4.x), kept to what an operator reads:

* brokers: ``RegisterBrokerRecord`` replaces a registration (its epoch, incarnation, endpoints, supported
  features, rack, fenced, controlled shutdown, log dirs); ``UnregisterBrokerRecord`` removes it;
  ``FenceBrokerRecord``/``UnfenceBrokerRecord`` and ``BrokerRegistrationChangeRecord`` (Fenced 1 / -1,
  InControlledShutdown 1, LogDirs) change it;
* controllers: ``RegisterControllerRecord`` / ``UnregisterControllerRecord`` (4.x);
* topics: ``TopicRecord`` adds one; ``RemoveTopicRecord`` removes it with its partitions *and its configs*
  (``MetadataDelta.replay(RemoveTopicRecord)`` calls ``ConfigurationsDelta.deleteTopicConfigs``);
* partitions: ``PartitionRecord`` sets one; ``PartitionChangeRecord`` merges the fields it carries
  (``PartitionRegistration.merge``: a leader other than -2 bumps the leader epoch, every change bumps the
  partition epoch; null lists mean "unchanged"); ``ClearElrRecord`` (4.x) empties ELR and last known ELR of a
  topic, or of every topic for an empty name;
* configs: ``ConfigRecord`` sets a key of a resource, a null value deletes it;
* client quotas: ``ClientQuotaRecord`` sets a value of an entity, ``Remove`` deletes it;
* ACLs: ``AccessControlEntryRecord`` / ``RemoveAccessControlEntryRecord`` by id;
* features: ``FeatureLevelRecord`` (level 0 removes a feature other than metadata.version);
* producer ids: ``ProducerIdsRecord`` (the next block starts at NextProducerId);
* SCRAM credentials and delegation tokens (names, mechanisms, owners: never the secrets);
* ``ZkMigrationStateRecord``; ``NoOpRecord`` changes nothing.

Metadata transactions (``BeginTransactionRecord`` ... ``EndTransactionRecord``/``AbortTransactionRecord``)
are handled by the loader, which applies a transaction's records at its end.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kafkatool.decoders import FramedMessage, uuid_text

NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader default
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
CONFIG_RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}
ACL_RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                      6: "DELEGATION_TOKEN", 7: "USER"}
ACL_PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
                  8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
                  12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
ACL_PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}
ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}


def _name(table: dict[int, str], code: int) -> str:
    return table.get(code, f"UNKNOWN({code})")


def _uuids(raw: list[bytes] | None) -> list[str] | None:
    return None if raw is None else [uuid_text(u) for u in raw]


def _endpoints(eps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": e["Name"], "host": e["Host"], "port": e["Port"],
             "security_protocol": _name(SECURITY_PROTOCOLS, e["SecurityProtocol"])} for e in eps]


def _features(fs: list[dict[str, Any]]) -> dict[str, list[int]]:
    return {f["Name"]: [f["MinSupportedVersion"], f["MaxSupportedVersion"]] for f in fs}


@dataclass
class Partition:
    replicas: list[int]
    isr: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: list[str] | None = None
    elr: list[int] | None = None
    last_known_elr: list[int] | None = None

    def to_json(self, partition: int) -> dict[str, Any]:
        return {"partition": partition, "leader": self.leader, "leader_epoch": self.leader_epoch,
                "partition_epoch": self.partition_epoch, "replicas": self.replicas, "isr": self.isr,
                "elr": self.elr or [], "last_known_elr": self.last_known_elr or [],
                "removing_replicas": self.removing_replicas, "adding_replicas": self.adding_replicas,
                "leader_recovery_state": _name(LEADER_RECOVERY_STATES, self.leader_recovery_state),
                "directories": self.directories or []}


@dataclass
class Topic:
    name: str
    topic_id: str
    partitions: dict[int, Partition] = field(default_factory=dict)


@dataclass
class MetadataImage:
    """The image after the last applied record (``offset``: a log offset; -1 before any)."""

    offset: int = -1
    epoch: int = -1  # the leader epoch of the batch of the last applied record
    timestamp: int = -1  # that batch's timestamp
    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, dict[str, Any]] = field(default_factory=dict)
    controllers: dict[int, dict[str, Any]] = field(default_factory=dict)
    topics: dict[str, Topic] = field(default_factory=dict)  # by topic id (base64url)
    configs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # (resource type, name)
    quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    acls: dict[str, dict[str, Any]] = field(default_factory=dict)  # by ACL id
    producer_ids: dict[str, int] | None = None
    scram: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    delegation_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    zk_migration_state: str | None = None
    quorum: dict[str, Any] = field(default_factory=dict)  # leader_id, leader_epoch, voters, kraft_version
    problems: list[str] = field(default_factory=list)  # records that do not apply (e.g. a partition of no topic)

    def copy(self) -> MetadataImage:
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ replay
    def apply(self, m: FramedMessage) -> None:
        """Apply one decoded metadata record (``MetadataDelta.replay``)."""
        handler = getattr(self, f"_apply_{m.name}", None)
        if handler is not None:
            handler(m.values)

    def _apply_RegisterBrokerRecord(self, v: dict[str, Any]) -> None:  # noqa: N802 (Kafka's record names)
        self.brokers[v["BrokerId"]] = {
            "id": v["BrokerId"], "epoch": v["BrokerEpoch"], "incarnation_id": uuid_text(v["IncarnationId"]),
            "rack": v["Rack"], "fenced": v["Fenced"], "in_controlled_shutdown": v["InControlledShutdown"],
            "is_migrating_zk_broker": v["IsMigratingZkBroker"], "endpoints": _endpoints(v["EndPoints"]),
            "features": _features(v["Features"]), "log_dirs": _uuids(v["LogDirs"]) or [],
            "cordoned_log_dirs": _uuids(v.get("CordonedLogDirs")),
        }

    def _apply_UnregisterBrokerRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        b = self.brokers.get(v["BrokerId"])
        if b is not None and b["epoch"] == v["BrokerEpoch"]:
            del self.brokers[v["BrokerId"]]
        else:
            self.problems.append(f"UnregisterBrokerRecord for broker {v['BrokerId']} epoch {v['BrokerEpoch']}: "
                                 "no such registration")

    def _broker(self, v: dict[str, Any], what: str) -> dict[str, Any] | None:
        b = self.brokers.get(v["BrokerId"])
        if b is None or b["epoch"] != v["BrokerEpoch"]:
            self.problems.append(f"{what} for broker {v['BrokerId']} epoch {v['BrokerEpoch']}: no such registration")
            return None
        return b

    def _apply_FenceBrokerRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        v = {"BrokerId": v["Id"], "BrokerEpoch": v["Epoch"]}
        b = self._broker(v, "FenceBrokerRecord")
        if b is not None:
            b["fenced"] = True

    def _apply_UnfenceBrokerRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        v = {"BrokerId": v["Id"], "BrokerEpoch": v["Epoch"]}
        b = self._broker(v, "UnfenceBrokerRecord")
        if b is not None:
            b["fenced"] = False

    def _apply_BrokerRegistrationChangeRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        b = self._broker(v, "BrokerRegistrationChangeRecord")
        if b is None:
            return
        fenced = v["Fenced"]
        if fenced == 1:
            b["fenced"] = True
        elif fenced == -1:
            b["fenced"] = False
        if v["InControlledShutdown"] == 1:
            b["in_controlled_shutdown"] = True
        if v["LogDirs"]:
            b["log_dirs"] = _uuids(v["LogDirs"])
        if v.get("CordonedLogDirs") is not None:
            b["cordoned_log_dirs"] = _uuids(v["CordonedLogDirs"])

    def _apply_RegisterControllerRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        self.controllers[v["ControllerId"]] = {
            "id": v["ControllerId"], "incarnation_id": uuid_text(v["IncarnationId"]),
            "zk_migration_ready": v["ZkMigrationReady"], "endpoints": _endpoints(v["EndPoints"]),
            "features": _features(v["Features"])}

    def _apply_UnregisterControllerRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        self.controllers.pop(v["ControllerId"], None)

    def _apply_TopicRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        tid = uuid_text(v["TopicId"])
        self.topics[tid] = Topic(v["Name"], tid)

    def _apply_RemoveTopicRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        tid = uuid_text(v["TopicId"])
        t = self.topics.pop(tid, None)
        if t is None:
            self.problems.append(f"RemoveTopicRecord for topic id {tid}: no such topic")
            return
        self.configs.pop(("topic", t.name), None)

    def _apply_PartitionRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        tid = uuid_text(v["TopicId"])
        t = self.topics.get(tid)
        if t is None:
            self.problems.append(f"PartitionRecord {v['PartitionId']} of topic id {tid}: no such topic")
            return
        t.partitions[v["PartitionId"]] = Partition(
            list(v["Replicas"]), list(v["Isr"]), list(v["RemovingReplicas"]), list(v["AddingReplicas"]),
            v["Leader"], v["LeaderRecoveryState"], v["LeaderEpoch"], v["PartitionEpoch"],
            _uuids(v.get("Directories")), list(v.get("EligibleLeaderReplicas") or []) or None,
            list(v.get("LastKnownElr") or []) or None)

    def _apply_PartitionChangeRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        tid = uuid_text(v["TopicId"])
        t = self.topics.get(tid)
        p = t.partitions.get(v["PartitionId"]) if t is not None else None
        if p is None:
            self.problems.append(f"PartitionChangeRecord for partition {v['PartitionId']} of topic id {tid}: "
                                 "no such partition")
            return
        if v["Replicas"] is not None:
            p.replicas = list(v["Replicas"])
            if v.get("Directories") is None and p.directories is not None and len(p.directories) != len(p.replicas):
                p.directories = None  # Kafka re-derives the assignments; the record did not say them
        if v["Isr"] is not None:
            p.isr = list(v["Isr"])
        if v["RemovingReplicas"] is not None:
            p.removing_replicas = list(v["RemovingReplicas"])
        if v["AddingReplicas"] is not None:
            p.adding_replicas = list(v["AddingReplicas"])
        if v["Leader"] != NO_LEADER_CHANGE:
            p.leader = v["Leader"]
            p.leader_epoch += 1
        if v["LeaderRecoveryState"] != -1:
            p.leader_recovery_state = v["LeaderRecoveryState"]
        if v.get("Directories") is not None:
            p.directories = _uuids(v["Directories"])
        if v.get("EligibleLeaderReplicas") is not None:
            p.elr = list(v["EligibleLeaderReplicas"])
        if v.get("LastKnownElr") is not None:
            p.last_known_elr = list(v["LastKnownElr"])
        p.partition_epoch += 1

    def _apply_ClearElrRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        for t in self.topics.values():
            if v["TopicName"] in ("", t.name):
                for p in t.partitions.values():
                    p.elr = None
                    p.last_known_elr = None

    def _apply_ConfigRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        key = (_name(CONFIG_RESOURCE_TYPES, v["ResourceType"]), v["ResourceName"])
        if v["Value"] is None:
            c = self.configs.get(key)
            if c is not None:
                c.pop(v["Name"], None)
                if not c:
                    del self.configs[key]
        else:
            self.configs.setdefault(key, {})[v["Name"]] = v["Value"]

    def _apply_ClientQuotaRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        entity = tuple(sorted((e["EntityType"], e["EntityName"]) for e in v["Entity"]))
        if v["Remove"]:
            q = self.quotas.get(entity)
            if q is not None:
                q.pop(v["Key"], None)
                if not q:
                    del self.quotas[entity]
        else:
            self.quotas.setdefault(entity, {})[v["Key"]] = v["Value"]

    def _apply_AccessControlEntryRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        aid = uuid_text(v["Id"])
        self.acls[aid] = {
            "id": aid, "resource_type": _name(ACL_RESOURCE_TYPES, v["ResourceType"]),
            "resource_name": v["ResourceName"], "pattern_type": _name(ACL_PATTERN_TYPES, v["PatternType"]),
            "principal": v["Principal"], "host": v["Host"], "operation": _name(ACL_OPERATIONS, v["Operation"]),
            "permission": _name(ACL_PERMISSIONS, v["PermissionType"])}

    def _apply_RemoveAccessControlEntryRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        aid = uuid_text(v["Id"])
        if self.acls.pop(aid, None) is None:
            self.problems.append(f"RemoveAccessControlEntryRecord for ACL id {aid}: no such ACL")

    def _apply_FeatureLevelRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        if v["FeatureLevel"] == 0 and v["Name"] != "metadata.version":
            self.features.pop(v["Name"], None)
        else:
            self.features[v["Name"]] = v["FeatureLevel"]

    def _apply_ProducerIdsRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        self.producer_ids = {"next_producer_id": v["NextProducerId"], "broker_id": v["BrokerId"],
                             "broker_epoch": v["BrokerEpoch"]}

    def _apply_UserScramCredentialRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        mech = _name(SCRAM_MECHANISMS, v["Mechanism"])
        self.scram[(v["Name"], mech)] = {"name": v["Name"], "mechanism": mech, "iterations": v["Iterations"]}

    def _apply_RemoveUserScramCredentialRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        self.scram.pop((v["Name"], _name(SCRAM_MECHANISMS, v["Mechanism"])), None)

    def _apply_DelegationTokenRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        self.delegation_tokens[v["TokenId"]] = {
            "token_id": v["TokenId"], "owner": v["Owner"], "requester": v.get("Requester"),
            "renewers": list(v["Renewers"]), "issue_timestamp": v["IssueTimestamp"],
            "max_timestamp": v["MaxTimestamp"], "expiration_timestamp": v["ExpirationTimestamp"]}

    def _apply_RemoveDelegationTokenRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        self.delegation_tokens.pop(v["TokenId"], None)

    def _apply_ZkMigrationStateRecord(self, v: dict[str, Any]) -> None:  # noqa: N802
        self.zk_migration_state = _name(ZK_MIGRATION_STATES, v["ZkMigrationState"])

    # ------------------------------------------------------------------ KRaft control records
    def apply_control(self, name: str, values: dict[str, Any], epoch: int) -> None:
        """LeaderChange, KRaftVersion and Voters records (the quorum, not the cluster metadata)."""
        if name == "LeaderChangeMessage":
            self.quorum["leader_id"] = values["LeaderId"]
            self.quorum["leader_epoch"] = epoch
        elif name == "KRaftVersionRecord":
            self.quorum["kraft_version"] = values["KRaftVersion"]
        elif name == "VotersRecord":
            self.quorum["voters"] = [
                {"id": vo["VoterId"], "directory_id": uuid_text(vo["VoterDirectoryId"]),
                 "endpoints": [{"name": e["Name"], "host": e["Host"], "port": e["Port"]} for e in vo["Endpoints"]],
                 "kraft_version": [vo["KRaftVersionFeature"]["MinSupportedVersion"],
                                   vo["KRaftVersionFeature"]["MaxSupportedVersion"]]}
                for vo in values["Voters"]]

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        """The image as JSON values, every collection sorted (brokers by id, topics by name...)."""
        topics = []
        for t in sorted(self.topics.values(), key=lambda t: (t.name, t.topic_id)):
            topics.append({"name": t.name, "topic_id": t.topic_id,
                           "partitions": [p.to_json(i) for i, p in sorted(t.partitions.items())]})
        configs = [{"resource_type": rt, "resource_name": rn, "configs": dict(sorted(c.items()))}
                   for (rt, rn), c in sorted(self.configs.items())]
        quotas = [{"entity": {k: n for k, n in entity}, "values": dict(sorted(vals.items()))}
                  for entity, vals in sorted(self.quotas.items(), key=lambda kv: str(kv[0]))]
        acls = sorted(self.acls.values(), key=lambda a: (a["resource_type"], a["resource_name"], a["principal"],
                                                          a["operation"], a["permission"], a["host"], a["id"]))
        return {
            "offset": self.offset, "epoch": self.epoch, "timestamp": self.timestamp,
            "features": dict(sorted(self.features.items())),
            "quorum": self.quorum,
            "brokers": [b for _, b in sorted(self.brokers.items())],
            "controllers": [c for _, c in sorted(self.controllers.items())],
            "topics": topics, "configs": configs, "client_quotas": quotas, "acls": acls,
            "producer_ids": self.producer_ids,
            "scram_credentials": [s for _, s in sorted(self.scram.items())],
            "delegation_tokens": [d for _, d in sorted(self.delegation_tokens.items())],
            "zk_migration_state": self.zk_migration_state,
        }
