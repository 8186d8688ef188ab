"""Control records (v2 batches with the control flag) as DumpLogSegments 3.9 describes them. Spec §2.3, §8.2.

* COMMIT/ABORT: ``EndTransactionMarker`` (version int16, coordinatorEpoch int32).
* KRaft SNAPSHOT_HEADER / SNAPSHOT_FOOTER / KRAFT_VERSION / KRAFT_VOTERS: the record value is a *flexible*
  Kafka message (``SnapshotHeaderRecord``, ``SnapshotFooterRecord``, ``KRaftVersionRecord``, ``VotersRecord``,
  schemas in kafka-clients 3.9.1 ``common/message/*.json``) written by ``MessageUtil.toByteBuffer`` without a
  version prefix and read at version 0 (``ControlRecordUtils``). Kafka prints it through the generated
  ``*JsonConverter``: field names in camelCase with a lower-case first letter, schema order, uuids as
  Kafka's base64url ``Uuid.toString``, compact JSON. Reproduced here from those schemas (not executed:
  kafka-ref carries no Jackson to run the converters).
* LEADER_CHANGE and anything else: 3.9 prints ``controlType: LEADER_CHANGE(2)`` (decoding came later,
  KAFKA-19069).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

from kafkatool.errors import InvalidRecordError, KafkaToolError
from kafkatool.log.checkpoints import topic_id_from_bytes
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
    error: str | None = None  # why the key or value does not decode (Kafka throws)

    @property
    def name(self) -> str:
        return self.type.name if self.type is not None else "INVALID"

    def dumplog_text(self) -> str:
        """The text DumpLogSegments appends to the record line (with its leading space)."""
        t = self.type
        if t is None:
            return ""
        if t in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            if self.coordinator_epoch is None:
                return ""
            return f" endTxnMarker: {t.name} coordinatorEpoch: {self.coordinator_epoch}"
        if t in _KRAFT_LABELS and self.data is not None:
            return f" {_KRAFT_LABELS[t]} {json.dumps(self.data, separators=(',', ':'), ensure_ascii=False)}"
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
        if ctype in _KRAFT_LABELS:
            return ControlInfo(type_id, ctype, data=_decode_kraft(ctype, value or b""))
    except KafkaToolError as e:
        return ControlInfo(type_id, ctype, error=e.message)
    return ControlInfo(type_id, ctype)


class _Reader:
    """Kafka's flexible-version message primitives (``ByteBufferAccessor``/``Readable``)."""

    def __init__(self, data: bytes) -> None:
        self.d = data
        self.p = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.p + n > len(self.d):
            raise InvalidRecordError(f"control record value ends early (needs {n} bytes at byte {self.p})")
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def i16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def u16(self) -> int:
        return int(struct.unpack(">H", self._take(2))[0])

    def i32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def i64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uuid(self) -> str:
        return topic_id_from_bytes(self._take(16))

    def uvarint(self) -> int:
        result = shift = 0
        for _ in range(5):
            b = self._take(1)[0]
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
        raise InvalidRecordError("unsigned varint longer than 5 bytes in a control record value")

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise InvalidRecordError("null string in a non-nullable control record field")
        return self._take(n).decode("utf-8", "replace")

    def compact_array_len(self) -> int:
        n = self.uvarint() - 1
        if n < 0:
            raise InvalidRecordError("null array in a non-nullable control record field")
        if n > len(self.d) - self.p:
            raise InvalidRecordError(f"array of {n} elements does not fit in the control record value")
        return n

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


def _decode_kraft(ctype: ControlRecordType, value: bytes) -> dict[str, Any]:
    r = _Reader(value)
    out: dict[str, Any]
    if ctype == ControlRecordType.SNAPSHOT_HEADER:
        out = {"version": r.i16(), "lastContainedLogTimestamp": r.i64()}
    elif ctype == ControlRecordType.SNAPSHOT_FOOTER:
        out = {"version": r.i16()}
    elif ctype == ControlRecordType.KRAFT_VERSION:
        out = {"version": r.i16(), "kRaftVersion": r.i16()}
    else:
        out = {"version": r.i16()}
        voters = []
        for _ in range(r.compact_array_len()):
            voter: dict[str, Any] = {"voterId": r.i32(), "voterDirectoryId": r.uuid()}
            endpoints = []
            for _ in range(r.compact_array_len()):
                endpoints.append({"name": r.compact_string(), "host": r.compact_string(), "port": r.u16()})
                r.tagged_fields()
            voter["endpoints"] = endpoints
            feature = {"minSupportedVersion": r.i16(), "maxSupportedVersion": r.i16()}
            r.tagged_fields()
            voter["kRaftVersionFeature"] = feature
            r.tagged_fields()
            voters.append(voter)
        out["voters"] = voters
    r.tagged_fields()
    return out
