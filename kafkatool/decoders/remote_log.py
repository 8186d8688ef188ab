"""``__remote_log_metadata`` records (tiered storage's ``TopicBasedRemoteLogMetadataManager``), printed as
``DumpLogSegments --remote-log-metadata-decoder`` prints them (3.9, KAFKA-16228; 4.x). With the newest
definitions (4.4.0, the default) the text is 4.x's: ``RemoteLogSegmentMetadata`` and its snapshot end in
``, txnIdxEmpty=<bool>`` (the TxnIndexEmpty field 4.x added), which 3.9's tool does not print; the null-value
text names 4.x's ``common.record.internal.Record``. Both checked against 3.9.2's and 4.4.0's tools.

The value is framed as the KRaft metadata records are (``BytesApiMessageSerde`` over
``AbstractApiMessageSerde``: frame version 1, api key, version, message), with kafka-storage's definitions
(``storage/src/main/resources/message/Remote*.json``): 0 RemoteLogSegmentMetadataRecord, 1
RemoteLogSegmentMetadataUpdateRecord, 2 RemotePartitionDeleteMetadataRecord, 3
RemoteLogSegmentMetadataSnapshotRecord. ``RemoteLogMetadataSerde.deserialize`` turns each into a
``RemoteLogMetadata`` object and the tool prints its ``toString()``:

* ``RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=<id>:<topic>-<p>,
  id=<uuid>}, startOffset=.., endOffset=.., brokerId=.., maxTimestampMs=.., eventTimestampMs=..,
  segmentLeaderEpochs={0=0, 3=120}, segmentSizeInBytes=.., customMetadata=Optional[CustomMetadata{N bytes}]
  |Optional.empty, state=COPY_SEGMENT_STARTED}`` (the epochs as a ``TreeMap``);
* ``RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=.., customMetadata=.., state=.., eventTimestampMs=..,
  brokerId=..}``; ``RemotePartitionDeleteMetadata{topicPartition=<id>:<topic>-<p>, state=..,
  eventTimestampMs=.., brokerId=..}``; ``RemoteLogSegmentMetadataSnapshot{segmentId=<uuid>, ...}``.

What the Java constructors refuse is Kafka's error line (``Error at offset O, skipping. <message>``): an unknown
state id (``forId`` gives null: "state can not be null"), a negative start offset, an end offset before it,
no leader epochs; a null value (``NullPointerException``: ``null``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kafkatool.decoders.cluster_metadata import MetadataParseError, message_problems, read_framed
from kafkatool.decoders.decoded import DecodedText, DecodeProblem
from kafkatool.decoders.message import uuid_to_string
from kafkatool.decoders.schema import Definition, definitions, resolve_kafka_version

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED", 2: "DELETE_PARTITION_FINISHED"}


class _JavaError(Exception):
    """An exception a RemoteLogMetadata constructor throws; ``str()`` is its ``getMessage()``."""


@cache
def remote_log_types(kafka_version: str | None = None) -> dict[int, Definition]:
    v = resolve_kafka_version(kafka_version)
    return {d.api_key: d for d in definitions(v).values()
            if d.artifact == "kafka-storage" and d.kind == "metadata" and d.api_key is not None}


def _tip(e: dict[str, Any]) -> str:
    """``TopicIdPartition.toString``: ``<topic id>:<topic>-<partition>``."""
    return f"{uuid_to_string(e['Id'])}:{e['Name']}-{e['Partition']}"


def _segment_id(e: dict[str, Any]) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_tip(e['TopicIdPartition'])}, id={uuid_to_string(e['Id'])}}}"


def _custom(raw: bytes | None) -> str:
    return "Optional.empty" if raw is None else f"Optional[CustomMetadata{{{len(raw)} bytes}}]"


def _state(table: dict[int, str], code: int) -> str:
    name = table.get(code)
    if name is None:
        raise _JavaError("state can not be null")  # forId -> null -> Objects.requireNonNull
    return name


def _epochs(entries: list[dict[str, Any]]) -> str:
    epochs: dict[int, int] = {}
    for e in entries:
        epochs[e["LeaderEpoch"]] = e["Offset"]  # HashMap.put: the last one wins
    if not epochs:
        raise _JavaError("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(epochs.items())) + "}"


def _txn(v: dict[str, Any]) -> str:
    """4.x adds ``txnIdxEmpty`` (the TxnIndexEmpty tagged field, false by default) to both toStrings."""
    return f", txnIdxEmpty={'true' if v['TxnIndexEmpty'] else 'false'}" if "TxnIndexEmpty" in v else ""


def _offsets(start: int, end: int) -> None:
    if start < 0:
        raise _JavaError(f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative")
    if end < start:
        raise _JavaError(f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than "
                         f"startOffset = {start}")


def to_java_string(name: str, v: dict[str, Any]) -> str:
    """The ``toString()`` of the ``RemoteLogMetadata`` the transform builds from a record; raises
    :class:`_JavaError` where its constructor throws."""
    if name == "RemoteLogSegmentMetadataRecord":
        state = _state(SEGMENT_STATES, v["RemoteLogSegmentState"])
        _offsets(v["StartOffset"], v["EndOffset"])
        epochs = _epochs(v["SegmentLeaderEpochs"])
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(v['RemoteLogSegmentId'])}, "
                f"startOffset={v['StartOffset']}, endOffset={v['EndOffset']}, brokerId={v['BrokerId']}, "
                f"maxTimestampMs={v['MaxTimestampMs']}, eventTimestampMs={v['EventTimestampMs']}, "
                f"segmentLeaderEpochs={epochs}, segmentSizeInBytes={v['SegmentSizeInBytes']}, "
                f"customMetadata={_custom(v['CustomMetadata'])}, state={state}{_txn(v)}}}")
    if name == "RemoteLogSegmentMetadataUpdateRecord":
        state = _state(SEGMENT_STATES, v["RemoteLogSegmentState"])
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(v['RemoteLogSegmentId'])}, "
                f"customMetadata={_custom(v['CustomMetadata'])}, state={state}, "
                f"eventTimestampMs={v['EventTimestampMs']}, brokerId={v['BrokerId']}}}")
    if name == "RemotePartitionDeleteMetadataRecord":
        state = _state(PARTITION_DELETE_STATES, v["RemotePartitionDeleteState"])
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_tip(v['TopicIdPartition'])}, state={state}, "
                f"eventTimestampMs={v['EventTimestampMs']}, brokerId={v['BrokerId']}}}")
    if name == "RemoteLogSegmentMetadataSnapshotRecord":
        state = _state(SEGMENT_STATES, v["RemoteLogSegmentState"])
        _offsets(v["StartOffset"], v["EndOffset"])
        epochs = _epochs(v["SegmentLeaderEpochs"])
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={uuid_to_string(v['SegmentId'])}, "
                f"startOffset={v['StartOffset']}, endOffset={v['EndOffset']}, "
                f"maxTimestampMs={v['MaxTimestampMs']}, segmentLeaderEpochs={epochs}, "
                f"segmentSizeInBytes={v['SegmentSizeInBytes']}, customMetadata={_custom(v['CustomMetadata'])}, "
                f"state={state}{_txn(v)}}}")
    raise _JavaError(f"RemoteLogMetadataTransform for apikey: {name} does not exist.")


def _fields(kafka_version: str | None) -> set[str]:
    return {f.name for f in remote_log_types(kafka_version)[0].spec.body.fields}


def decode_remote_log_metadata_record(key: bytes | None, value: bytes | None, offset: int,
                                      kafka_version: str | None = None) -> tuple[str | None, str | None]:
    """The (key, payload) texts ``RemoteMetadataLogMessageParser.parse`` gives a record (no key)."""
    if value is None:
        # The JDK's helpful NullPointerException text, naming the Record interface of the Kafka version.
        record_class = "org.apache.kafka.common.record." + ("" if "TxnIndexEmpty" not in _fields(kafka_version)
                                                            else "internal.") + "Record"
        return None, DecodedText(f'Error at offset {offset}, skipping. Cannot invoke "java.nio.ByteBuffer.remaining()" '
                                 f'because the return value of "{record_class}.value()" is null',
                                 problems=[DecodeProblem("the record has no value")])
    try:
        m = read_framed(value, remote_log_types(kafka_version))
    except MetadataParseError as e:
        return None, DecodedText(f"Error at offset {offset}, skipping. {e.message}",
                                 problems=[DecodeProblem(e.explain(), e.position)])
    try:
        text = to_java_string(m.name, m.values)
    except _JavaError as e:
        return None, DecodedText(f"Error at offset {offset}, skipping. {e}",
                                 problems=[DecodeProblem(f"{m.name}: {e}")])
    return None, DecodedText(text, problems=message_problems(m, kafka_version))
