"""The KRaft control records' values (``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``,
``KRaftVersionRecord``, ``VotersRecord``; kafka-clients ``common/message/*.json``), read as
``ControlRecordUtils.deserialize*`` reads them: the whole value at version 0 (``*_CURRENT_VERSION``, 3.9 and
4.x), no version prefix, bytes after the message ignored. DumpLogSegments prints them with
``<Name>JsonConverter.write(message, message.version())``: the JSON is written at the version the record's own
``Version`` field says, not the version it was read at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkatool.decoders.message import MessageError, TagNote, read_message, to_json
from kafkatool.decoders.schema import Definition, definitions, resolve_kafka_version

#: ControlRecordType id -> the definition of its value
CONTROL_VALUE_TYPES = {
    2: "LeaderChangeMessage",
    3: "SnapshotHeaderRecord",
    4: "SnapshotFooterRecord",
    5: "KRaftVersionRecord",
    6: "VotersRecord",
}
READ_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION


@dataclass(frozen=True, slots=True)
class ControlMessage:
    definition: Definition
    values: dict[str, Any]
    notes: tuple[TagNote, ...]

    @property
    def json_version(self) -> int:
        v = self.values.get("Version", READ_VERSION)
        return int(v)

    def json(self) -> str:
        """``<Name>JsonConverter.write(message, message.version())``."""
        return to_json(self.definition.spec, self.values, self.json_version)


def control_definition(type_id: int, kafka_version: str | None = None) -> Definition | None:
    name = CONTROL_VALUE_TYPES.get(type_id)
    if name is None:
        return None
    return definitions(resolve_kafka_version(kafka_version))[name]


def read_control_value(type_id: int, value: bytes | None, kafka_version: str | None = None) -> ControlMessage:
    """The value of a KRaft control record; raises ``KeyError`` for a type that has none (COMMIT, ABORT,
    unknown) and :class:`MessageError` (Java's message, ``position`` set) when it does not read."""
    d = control_definition(type_id, kafka_version)
    if d is None:
        raise KeyError(type_id)
    if value is None:
        raise MessageError(None)  # ByteBuffer.slice() of a null value: NullPointerException
    notes: list[TagNote] = []
    values, _ = read_message(d.spec, value, READ_VERSION, 0, notes)
    return ControlMessage(d, values, tuple(notes))
