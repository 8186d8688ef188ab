"""Control records (v2 batches with the control flag) as DumpLogSegments 3.9 describes them. Spec §2.3, §8.2.

* COMMIT/ABORT: ``EndTransactionMarker`` (version int16, coordinatorEpoch int32).
* KRaft LEADER_CHANGE / SNAPSHOT_HEADER / SNAPSHOT_FOOTER / KRAFT_VERSION / KRAFT_VOTERS: the record value is
  a *flexible* Kafka message (``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``,
  ``KRaftVersionRecord``, ``VotersRecord``) written by ``MessageUtil.toByteBuffer`` without a version prefix
  and read at version 0 (``ControlRecordUtils``), decoded from Kafka's own definitions
  (``decoders.read_control_value``). Kafka prints it through the generated ``*JsonConverter``: field names in
  camelCase with a lower-case first letter, schema order, uuids as Kafka's base64url ``Uuid.toString``,
  compact JSON (checked line for line against DumpLogSegments 3.9.2 on a broker's metadata log).
* LEADER_CHANGE and anything else: 3.9 prints ``controlType: LEADER_CHANGE(2)`` (decoding came later,
  KAFKA-19069: 4.x prints ``LeaderChange: <json>``); the decoded value is in ``data`` for the other views.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kafkatool.errors import InvalidRecordError, KafkaToolError
from kafkatool.record.batch import ControlRecordType
from kafkatool.record.default_records import parse_control_type_id, parse_end_txn_marker

_KRAFT_LABELS = {
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


@dataclass(frozen=True, slots=True)
class ControlInfo:
    type_id: int | None  # None when the key does not parse
    type: ControlRecordType | None
    coordinator_epoch: int | None = None  # COMMIT/ABORT
    data: dict[str, Any] | None = None  # KRaft records, as Kafka's JsonConverter writes them
    json_text: str | None = None  # ... and that JSON's exact text (Jackson's escapes and number forms)
    error: str | None = None  # why the key or value does not decode (Kafka throws)

    @property
    def name(self) -> str:
        return self.type.name if self.type is not None else "INVALID"

    def dumplog_text(self, kafka4: bool = False) -> str:
        """The text DumpLogSegments appends to the record line (with its leading space); ``kafka4``: 4.x's, which
        decodes LeaderChange records."""
        t = self.type
        if t is None:
            return ""
        if t in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            if self.coordinator_epoch is None:
                return ""
            return f" endTxnMarker: {t.name} coordinatorEpoch: {self.coordinator_epoch}"
        if t in _KRAFT_LABELS and self.json_text is not None:
            return f" {_KRAFT_LABELS[t]} {self.json_text}"
        if kafka4 and t == ControlRecordType.LEADER_CHANGE and self.json_text is not None:
            return f" LeaderChange: {self.json_text}"
        return f" controlType: {t.name}({self.type_id})"


def describe_control(key: bytes | None, value: bytes | None) -> ControlInfo:
    try:
        type_id = parse_control_type_id(key)
    except KafkaToolError as e:
        return ControlInfo(None, None, error=e.message)
    ctype = ControlRecordType.from_type_id(type_id)
    try:
        if ctype in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            return ControlInfo(type_id, ctype, coordinator_epoch=parse_end_txn_marker(value))
        if ctype in _KRAFT_LABELS or ctype == ControlRecordType.LEADER_CHANGE:
            data, text = _decode_kraft(type_id, value)
            return ControlInfo(type_id, ctype, data=data, json_text=text)
    except KafkaToolError as e:
        return ControlInfo(type_id, ctype, error=e.message)
    return ControlInfo(type_id, ctype)


def _decode_kraft(type_id: int, value: bytes | None) -> tuple[dict[str, Any], str]:
    from kafkatool.decoders import MessageError, read_control_value  # loaded when a KRaft control record is met

    try:
        msg = read_control_value(type_id, value)
    except MessageError as e:
        where = f" at byte {e.position}" if e.position is not None else ""
        raise InvalidRecordError(f"{ControlRecordType.from_type_id(type_id).name} value does not read{where}: {e}",
                                 position=e.position) from None
    text = msg.json()
    return json.loads(text), text
