"""The sandbox's configuration and data: which broker settings to take from the operator's server.properties,
which topics to create, and how the canary partitions are copied into the broker's log dir.

The sandbox broker is the operator's Kafka with the settings that decide how it reads, converts and serves
message formats, taken from the operator's server.properties (:data:`TAKEN`); everything else (listeners, log dirs,
security, ids) is the sandbox's own. Nothing may delete or rewrite the copies while they are judged: retention
is off (legacy data has old file times), the cleaner is off, topics are ``cleanup.policy=delete``.

The canary partitions are copied in after the broker has created their topics and stopped (a KRaft broker treats
a log whose topic id its metadata does not know as stray, a ZooKeeper-mode broker refuses a log with another
topic id: ``InconsistentTopicIdException``), with the new topic id in ``partition.metadata`` and the log dir's
checkpoints saying what a broker stopped cleanly after ``canary apply`` would say: recovery point and high
watermark at the log end.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.canary.manifest import Manifest, PartitionEntry, Workdir
from kafkatool.canary.rehearse.protocol import NewTopic
from kafkatool.canary.sandbox import BrokerMode, KafkaInstall, read_properties
from kafkatool.errors import InputError, UsageError
from kafkatool.log.checkpoints import (
    encode_offset_checkpoint,
    encode_partition_metadata,
    read_offset_checkpoint,
    read_partition_metadata,
)
from kafkatool.log.layout import TopicPartition
from kafkatool.util.atomic import is_temp_name

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTIONS_TOPIC = "__transaction_state"
INTERNAL = (OFFSETS_TOPIC, TRANSACTIONS_TOPIC)
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
RECOVERY_POINTS = "recovery-point-offset-checkpoint"
HIGH_WATERMARKS = "replication-offset-checkpoint"
LOG_STARTS = "log-start-offset-checkpoint"

# The operator's settings a rehearsal takes (broker level), and where they apply. Kafka 4 removed the first
# three (KIP-724, KIP-896, KIP-500); KRaft ignores the first two (metadata.version; v2 always).
TAKEN: dict[str, str] = {
    "inter.broker.protocol.version": "ZooKeeper mode (3.x): below 3.0 the broker converts by the topic's format",
    "log.message.format.version": "ZooKeeper mode (3.x) with inter.broker.protocol.version below 3.0",
    "log.message.downconversion.enable": "3.x: false refuses old consumers (UNSUPPORTED_VERSION)",
    "message.max.bytes": "the topics' max.message.bytes (overridden per topic by the run's or the request's)",
    "compression.type": "what the broker recompresses produced batches to",
    "log.message.timestamp.type": "CreateTime or LogAppendTime for produced records",
}
ZOOKEEPER_ONLY = ("inter.broker.protocol.version", "log.message.format.version")
REMOVED_IN_4 = ("inter.broker.protocol.version", "log.message.format.version", "log.message.downconversion.enable")


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    """What the operator's server.properties holds, and what the rehearsal takes from it."""

    path: str | None
    taken: dict[str, str] = field(default_factory=dict)  # applied to the sandbox broker
    ignored: dict[str, str] = field(default_factory=dict)  # key -> why not (this Kafka or mode has no such thing)
    zookeeper: bool = False  # the operator's broker runs in ZooKeeper mode (zookeeper.connect, no process.roles)


def read_operator_settings(path: Path | None, install: KafkaInstall, mode: BrokerMode | None) -> OperatorSettings:
    if path is None:
        return OperatorSettings(None)
    try:
        props = read_properties(path)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {getattr(e, 'strerror', None) or e}", path=path) from None
    zookeeper = "zookeeper.connect" in props and "process.roles" not in props
    taken: dict[str, str] = {}
    ignored: dict[str, str] = {}
    run_mode = mode or (BrokerMode.ZOOKEEPER if zookeeper and install.has_zookeeper else BrokerMode.KRAFT)
    for key in TAKEN:
        if key not in props:
            continue
        if install.major >= 4 and key in REMOVED_IN_4:
            ignored[key] = f"removed in Kafka 4 (this is {install.version})"
        elif run_mode is BrokerMode.KRAFT and key in ZOOKEEPER_ONLY:
            ignored[key] = "ZooKeeper mode only (KRaft: metadata.version, message format v2 always)"
        else:
            taken[key] = props[key]
    return OperatorSettings(str(path), taken, ignored, zookeeper)


def resolve_mode(requested: str | None, install: KafkaInstall, settings: OperatorSettings) -> BrokerMode:
    if requested in (None, "auto"):
        if settings.zookeeper and install.has_zookeeper:
            return BrokerMode.ZOOKEEPER
        return BrokerMode.KRAFT
    try:
        mode = BrokerMode(requested)
    except ValueError:
        raise UsageError(f"must be auto, kraft or zookeeper, not {requested!r}", field="mode") from None
    if mode is BrokerMode.ZOOKEEPER and not install.has_zookeeper:
        raise UsageError(f"Kafka {install.version} has no ZooKeeper mode (removed in 4.0, KIP-500)", field="mode")
    return mode


def legacy_format(mode: BrokerMode, settings: OperatorSettings) -> int | None:
    """The message format the broker writes and converts by, when it is not v2: ZooKeeper mode with
    inter.broker.protocol.version below 3.0 and log.message.format.version below 0.11."""
    if mode is not BrokerMode.ZOOKEEPER:
        return None
    ibp = settings.taken.get("inter.broker.protocol.version")
    fmt = settings.taken.get("log.message.format.version")
    if ibp is None or _version(ibp) >= (3, 0) or fmt is None:
        return None
    v = _version(fmt)
    if v < (0, 10, 0):
        return 0
    if v < (0, 11, 0):
        return 1
    return None


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.replace("-", ".").split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts) or (0,)


@dataclass(frozen=True, slots=True)
class Topics:
    """What to create: topic -> partition count (the highest canary partition + 1), and the internal topics'
    partition counts (created by their coordinators, sized by broker settings)."""

    regular: dict[str, int]
    internal: dict[str, int]


def topics_of(m: Manifest) -> Topics:
    counts: dict[str, int] = {}
    for p in m.partitions:
        counts[p.topic] = max(counts.get(p.topic, 0), p.partition + 1)
    return Topics({t: n for t, n in counts.items() if t not in INTERNAL},
                  {t: n for t, n in counts.items() if t in INTERNAL})


def broker_properties(settings: OperatorSettings, topics: Topics, max_message_bytes: int) -> dict[str, str]:
    props = {
        "log.cleaner.enable": "false",
        "log.retention.ms": "-1",
        "log.retention.bytes": "-1",
        "log.retention.check.interval.ms": str(24 * 3600 * 1000),
        "message.max.bytes": str(max_message_bytes),
        "offsets.topic.num.partitions": str(topics.internal.get(OFFSETS_TOPIC, 1)),
        "transaction.state.log.num.partitions": str(topics.internal.get(TRANSACTIONS_TOPIC, 1)),
    }
    props.update({k: v for k, v in settings.taken.items() if k != "message.max.bytes"})
    return props


def new_topics(topics: Topics, limits: Mapping[str, int]) -> list[NewTopic]:
    return [NewTopic(t, n, (("cleanup.policy", "delete"), ("retention.ms", "-1"), ("retention.bytes", "-1"),
                            ("max.message.bytes", str(limits[t]))))
            for t, n in sorted(topics.regular.items())]


# ---------------------------------------------------------------------------------------------- the copies

@dataclass(slots=True)
class Staged:
    """A canary partition copied into the sandbox's log dir."""

    name: str
    path: Path
    log_end_offset: int
    start: int  # the first segment's base offset
    topic_id: str | None
    missing: list[str] = field(default_factory=list)  # files `canary run` wrote that W/canary lacks
    extra: list[str] = field(default_factory=list)  # files in W/canary that `canary run` did not write


def stage(w: Workdir, m: Manifest, data: Path) -> list[Staged]:
    """Copy every canary partition into ``data`` (its topics created, the broker stopped): files as they are in
    ``W/canary`` (file times kept), the sandbox's topic id, the checkpoints of a clean stop."""
    out = []
    for p in m.partitions:
        dst = data / p.name
        topic_id = None
        meta = dst / "partition.metadata"
        if meta.is_file():
            topic_id = read_partition_metadata(meta).topic_id
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir()
        src = w.canary(p.name)
        if not src.is_dir():
            raise InputError(f"no canary partition {p.name} (the manifest lists it)", path=src)
        present = {f.name for f in src.iterdir() if f.is_file() and not is_temp_name(f.name)}
        for name in sorted(present):
            shutil.copy2(src / name, dst / name)
        wrote = {f.name for f in p.outputs}
        if topic_id is not None:
            (dst / "partition.metadata").write_bytes(encode_partition_metadata(topic_id))
        else:
            (dst / "partition.metadata").unlink(missing_ok=True)
        out.append(Staged(p.name, dst, _log_end(p), min(p.segments) if p.segments else 0, topic_id,
                          sorted(wrote - present), sorted(present - wrote)))
    return out


def _log_end(p: PartitionEntry) -> int:
    return p.log_end_offset if p.log_end_offset >= 0 else int(p.convert.get("log_end_offset_out", -1))


def set_checkpoints(data: Path, staged: list[Staged], *, recover: bool) -> None:
    """As a broker stopped cleanly after ``canary apply`` left them (recovery point and high watermark at the log
    end, log start at the first segment), or, with ``recover``, as after a crash before any flush: no
    clean-shutdown marker and recovery point 0, so the broker recovers (validates) every segment."""
    ends = {_tp(s.name): max(s.log_end_offset, 0) for s in staged}
    _update(data / RECOVERY_POINTS, {tp: 0 for tp in ends} if recover else ends)
    _update(data / HIGH_WATERMARKS, ends)
    _update(data / LOG_STARTS, {_tp(s.name): s.start for s in staged})
    if recover:
        (data / CLEAN_SHUTDOWN).unlink(missing_ok=True)


def _tp(name: str) -> TopicPartition:
    topic, _, part = name.rpartition("-")
    return TopicPartition(topic, int(part))


def _update(path: Path, entries: Mapping[TopicPartition, int]) -> None:
    current = read_offset_checkpoint(path) if path.is_file() else {}
    current.update(entries)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(encode_offset_checkpoint(current))
    os.replace(tmp, path)
