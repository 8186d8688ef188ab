"""KRaft metadata records (``__cluster_metadata``), read as Kafka's ``MetadataRecordSerde`` reads them.

Each metadata record's value is an ``ApiMessageAndVersion`` framed by ``AbstractApiMessageSerde`` (3.x, 4.x)::

    frame version   unsigned varint, 1 (0 was KRaft's 2.8 preview)
    api key         unsigned varint, the record type (``apiKey`` of its JSON definition)
    version         unsigned varint, the record's version
    message         the record at that version (every metadata record is flexible from version 0)

The key is null. ``read`` fails (``MetadataParseException``) on a varint that does not read ("Error while
reading <what>") or exceeds a short ("Value for <what> was too large."), a frame version other than 1, an api
key no definition has (``MetadataRecordType.fromId`` throws ``UnsupportedVersionException: Unknown metadata id
N``), a message that does not read ("Failed to deserialize record with type N") and bytes left after it ("Found
N byte(s) of garbage after N"). A version newer than the definition knows is read as the generated classes
read it: the fields the definition has for that version (``message.Versions.present``).

``DumpLogSegments --cluster-metadata-decoder`` prints each record as ``{"type":"<MetadataRecordType>",
"version":V,"data":<*JsonConverter>}``, ``MetadataRecordType`` being the definition's name in upper snake case
(``MessageGenerator.toSnakeCase``: ``TopicRecord`` -> ``TOPIC_RECORD``), or ``Error at <offset>, skipping.
<message>`` when ``read`` throws (``e.getMessage``, so ``null`` for a ``NullPointerException``).

The definitions are the kept JSON files of a Kafka version (:mod:`.schema`; the newest by default: every
3.x record reads the same with 4.x's definitions, which only add versions and types).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kafkatool.decoders.decoded import DecodedText, DecodeProblem
from kafkatool.decoders.message import (
    MessageError,
    TagNote,
    read_message,
    to_json,
    uuid_to_string,
    write_message,
)
from kafkatool.decoders.schema import Definition, definitions, resolve_kafka_version
from kafkatool.errors import InvalidRecordError

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = "__cluster_metadata-0"
FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
_SHORT_MAX = 0x7FFF


def to_snake_case(name: str) -> str:
    """``MessageGenerator.toSnakeCase``: an underscore before a capital that follows a lower-case letter."""
    out: list[str] = []
    prev_capital = True
    for c in name:
        if c.isupper():
            if not prev_capital:
                out.append("_")
            out.append(c.lower())
            prev_capital = True
        else:
            out.append(c)
            prev_capital = False
    return "".join(out)


def record_type_name(definition_name: str) -> str:
    """``MetadataRecordType``'s constant for a definition (``ZkMigrationStateRecord`` ->
    ``ZK_MIGRATION_STATE_RECORD``)."""
    return to_snake_case(definition_name).upper()


class MetadataParseError(InvalidRecordError):
    """Kafka's ``MetadataParseException``: ``message`` is its ``getMessage()``; ``position`` is the byte of the
    value where the failing read started; ``detail`` the cause's message (Kafka keeps it as the cause)."""

    def __init__(self, message: str, *, position: int | None = None, detail: str | None = None) -> None:
        super().__init__(message, position=position)
        self.detail = detail

    def explain(self) -> str:
        """The message with its cause, for kafkatool's own finding."""
        if self.detail is None or self.detail == "null":
            return self.message
        return f"{self.message}: {self.detail}"


@dataclass(frozen=True, slots=True)
class FramedMessage:
    """A record framed by ``AbstractApiMessageSerde``, decoded with a definition."""

    api_key: int
    version: int
    definition: Definition
    values: dict[str, Any]  # by definition name; uuids are 16 bytes, bytes are bytes
    notes: tuple[TagNote, ...] = ()  # unknown tags, tagged fields whose declared size is not what they took

    @property
    def name(self) -> str:
        return self.definition.spec.name

    @property
    def type_name(self) -> str:
        return record_type_name(self.name)

    @property
    def newer_than_definition(self) -> bool:
        """The version is past the definition's ``validVersions``: fields added since are not known here."""
        return self.version > self.definition.spec.valid.hi

    def data_json(self) -> str:
        """``<Name>JsonConverter.write(message, version)``'s text."""
        return to_json(self.definition.spec, self.values, self.version)

    def data(self) -> Any:
        """The fields as JSON values (camelCase names, uuids as Kafka's base64url, bytes as base64)."""
        return json.loads(self.data_json())


def unsigned_short(buf: bytes | memoryview, pos: int, what: str) -> tuple[int, int]:
    """``AbstractApiMessageSerde.unsignedIntToShort``: (value, position after)."""
    result = 0
    start = pos
    for i in range(5):
        if pos >= len(buf):
            raise MetadataParseError(f"Error while reading {what}", position=start)
        b = buf[pos]
        pos += 1
        if i == 4:
            if b >= 0x80:
                raise MetadataParseError(f"Error while reading {what}", position=start)
            result |= (b - 256 if b >= 0x80 else b) << 28
            break
        result |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            break
    result &= 0xFFFFFFFF
    if result & 0x80000000:
        result -= 1 << 32
    if result > _SHORT_MAX:
        raise MetadataParseError(f"Value for {what} was too large.", position=start)
    return result, pos


def read_framed(value: bytes | memoryview | None, types: Mapping[int, Definition],
                unknown_key: str = "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id "
                ) -> FramedMessage:
    """``AbstractApiMessageSerde.read`` over a whole record value; raises :class:`MetadataParseError`."""
    if value is None:
        # new ByteBufferAccessor(null): the first read throws NullPointerException, wrapped as for any other.
        raise MetadataParseError("Error while reading frame version", position=0)
    frame, pos = unsigned_short(value, 0, "frame version")
    if frame == 0:
        raise MetadataParseError("Could not deserialize metadata record with frame version 0. Note that upgrades "
                                 "from the preview release of KRaft in 2.8 to newer versions are not supported.",
                                 position=0)
    if frame != FRAME_VERSION:
        raise MetadataParseError(f"Could not deserialize metadata record due to unknown frame version {frame}(only "
                                 f"frame version {FRAME_VERSION} is supported)", position=0)
    key_at = pos
    api_key, pos = unsigned_short(value, pos, "type")
    version, pos = unsigned_short(value, pos, "version")
    definition = types.get(api_key)
    if definition is None:
        raise MetadataParseError(f"{unknown_key}{api_key}", position=key_at)
    notes: list[TagNote] = []
    try:
        values, end = read_message(definition.spec, value, version, pos, notes)
    except MessageError as e:
        raise MetadataParseError(f"Failed to deserialize record with type {api_key}", position=e.position,
                                 detail=f"{definition.spec.name} version {version}: {e}") from e
    if end != len(value):
        raise MetadataParseError(f"Found {len(value) - end} byte(s) of garbage after {api_key}", position=end)
    return FramedMessage(api_key, version, definition, values, tuple(notes))


def write_framed(definition: Definition, values: Mapping[str, Any], version: int) -> bytes:
    """``AbstractApiMessageSerde.write``: frame version 1, api key, version, then the message."""
    from kafkatool.decoders.message import uvarint

    if definition.api_key is None:
        raise ValueError(f"{definition.spec.name} has no apiKey")
    return (uvarint(FRAME_VERSION) + uvarint(definition.api_key) + uvarint(version)
            + write_message(definition.spec, values, version))


# ---------------------------------------------------------------------------------------------- metadata


@cache
def metadata_types(kafka_version: str | None = None) -> dict[int, Definition]:
    """The ``"type": "metadata"`` definitions of kafka-metadata's jar (the remote log metadata records of
    kafka-storage are "metadata" too, with their own api keys) of a kept Kafka version (newest by default)."""
    v = resolve_kafka_version(kafka_version)
    return {d.api_key: d for d in definitions(v).values()
            if d.kind == "metadata" and d.api_key is not None and d.artifact == "kafka-metadata"}


def metadata_definition(name: str, kafka_version: str | None = None) -> Definition:
    """A metadata record's definition by name (``TopicRecord``) or type (``TOPIC_RECORD``)."""
    for d in metadata_types(kafka_version).values():
        if name in (d.spec.name, record_type_name(d.spec.name)):
            return d
    raise KeyError(name)


def read_metadata_record(value: bytes | memoryview | None, kafka_version: str | None = None) -> FramedMessage:
    """``MetadataRecordSerde.read`` of a record value; raises :class:`MetadataParseError`."""
    return read_framed(value, metadata_types(kafka_version))


def write_metadata_record(name: str, values: Mapping[str, Any], version: int | None = None,
                          kafka_version: str | None = None) -> bytes:
    """A record value as a controller writes it (``version`` defaults to the definition's highest)."""
    d = metadata_definition(name, kafka_version)
    return write_framed(d, values, d.spec.valid.hi if version is None else version)


def dumplog_json(m: FramedMessage) -> str:
    """``ClusterMetadataLogMessageParser``'s object: ``{"type":..,"version":..,"data":..}``."""
    return f'{{"type":"{m.type_name}","version":{m.version},"data":{m.data_json()}}}'


def message_problems(m: FramedMessage, kafka_version: str | None = None) -> list[DecodeProblem]:
    """kafkatool's findings about a record Kafka reads without complaint: a version newer than the kept
    definitions, unknown tagged fields, tagged fields whose declared size is not what they took."""
    out = [DecodeProblem(n.message, n.position) for n in m.notes]
    if m.newer_than_definition:
        out.append(DecodeProblem(
            f"{m.name} version {m.version} is newer than Kafka {resolve_kafka_version(kafka_version)}'s definition "
            f"knows ({m.definition.spec.valid.lo}-{m.definition.spec.valid.hi}): only the fields it knows are shown"))
    return out


def decode_cluster_metadata_record(key: bytes | None, value: bytes | None, offset: int,
                                   kafka_version: str | None = None) -> tuple[str | None, str | None]:
    """The (key, payload) texts ``ClusterMetadataLogMessageParser.parse`` gives a record (no key)."""
    try:
        m = read_metadata_record(value, kafka_version)
    except MetadataParseError as e:
        return None, DecodedText(f"Error at {offset}, skipping. {e.message}",
                                 problems=[DecodeProblem(e.explain(), e.position)])
    return None, DecodedText(dumplog_json(m), is_json=True, problems=message_problems(m, kafka_version))


def uuid_text(raw: bytes) -> str:
    """A topic or directory id as Kafka prints it (``Uuid.toString``)."""
    return uuid_to_string(raw)
