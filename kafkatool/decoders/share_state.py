"""``__share_group_state`` records (KIP-932 share groups, Kafka 4.x), printed as ``DumpLogSegments
--share-group-state-decoder`` prints them (4.x's ``ShareGroupStateMessageParser``, a coordinator-record parser).

A record is a coordinator record (``CoordinatorRecordSerde``): the key starts with an int16 record type (the
definitions' ``apiKey``: 0 ShareSnapshot, 1 ShareUpdate) and the key message follows at version 0; the value
starts with an int16 version and the value message follows at it (kafka-share-coordinator's
``common/message/Share*.json``). The tool prints the key as ``{"type":"<type>","data":<key JSON>}`` and the value
as ``{"version":"<version>","data":<value JSON>}``, ``<DELETE>`` for a tombstone; an unknown record type is
``Unknown record type N at offset O, skipping.`` and anything else that does not read ``Error at offset O,
skipping. <message>`` (``Found an unknown record version V for T type``, ``Could not read record with version V
from value's buffer due to: <reader's message>.``), both where the key goes, with no payload; a record
without a key stops Kafka's tool (here: the decoder's error). Checked against 4.4.0's tool.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import Any

from kafkatool.decoders.decoded import DecodedText, DecodeProblem
from kafkatool.decoders.message import MessageError, MessageSpec, TagNote, read_message, to_json
from kafkatool.decoders.schema import definitions, resolve_kafka_version
from kafkatool.errors import InvalidRecordError

SHARE_GROUP_STATE_TOPIC = "__share_group_state"
DELETE = "<DELETE>"
SHARE_STATE_KAFKA_VERSION = "4"  # no __share_group_state before 4.0


class MissingKeyError(InvalidRecordError):
    """Kafka's tool throws on a record without a key (it stops there)."""


@cache
def share_state_types(kafka_version: str | None = None) -> dict[int, tuple[MessageSpec, MessageSpec]]:
    """Record type -> (key definition, value definition)."""
    v = resolve_kafka_version(kafka_version or SHARE_STATE_KAFKA_VERSION)
    keys, values = {}, {}
    for d in definitions(v).values():
        if d.artifact != "kafka-share-coordinator" or d.api_key is None:
            continue
        if d.kind == "coordinator-key":
            keys[d.api_key] = d.spec
        elif d.kind == "coordinator-value":
            values[d.api_key] = d.spec
    return {k: (keys[k], values[k]) for k in keys if k in values}


def _version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise MessageError(f"Could not read version from {what}'s buffer.")
    return int(struct.unpack_from(">h", data)[0])


def _read(spec: MessageSpec, data: bytes, version: int, what: str, notes: list[TagNote]) -> dict[str, Any]:
    """``CoordinatorRecordSerde.readMessage``: the reader's exception wrapped with the buffer it read."""
    try:
        values, _ = read_message(spec, data, version, 2, notes)
    except MessageError as e:
        err = MessageError(f"Could not read record with version {version} from {what}'s buffer due to: {e}.")
        err.position = e.position
        raise err from e
    return values


def decode_share_state_record(key: bytes | None, value: bytes | None, offset: int,
                              kafka_version: str | None = None) -> tuple[str | None, str | None]:
    """The (key, payload) texts 4.x's ``ShareGroupStateMessageParser`` gives a record; Kafka puts its error
    lines where the key goes and prints no payload then."""
    if key is None:
        raise MissingKeyError(f"Failed to decode message at offset {offset} using the specified decoder "
                              "(message had a missing key)")
    notes: list[TagNote] = []
    try:
        record_type = _version(key, "key")
        specs = share_state_types(kafka_version).get(record_type)
        if specs is None:
            return f"Unknown record type {record_type} at offset {offset}, skipping.", None
        key_spec, value_spec = specs
        key_values = _read(key_spec, key, 0, "key", notes)
        key_text = f'{{"type":"{record_type}","data":{to_json(key_spec, key_values, 0)}}}'
        if value is None:
            return key_text, DELETE
        version = _version(value, "value")
        if version not in value_spec.valid:
            raise MessageError(f"Found an unknown record version {version} for {record_type} type")
        values = _read(value_spec, value, version, "value", notes)
        value_text = f'{{"version":"{version}","data":{to_json(value_spec, values, version)}}}'
    except MessageError as e:
        return DecodedText(f"Error at offset {offset}, skipping. {e}",
                           problems=[DecodeProblem(str(e), e.position)]), None
    problems = [DecodeProblem(n.message, n.position) for n in notes]
    return DecodedText(key_text, is_json=True), DecodedText(value_text, is_json=True, problems=problems)
