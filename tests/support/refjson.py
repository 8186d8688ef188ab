"""Our objects in kafka-ref's JSON vocabulary, so a test compares kafkatool with Kafka field for field.

``batch_json``/``record_json`` are the one mapping from kafkatool's ``RecordBatch``/``Record`` to the lines
``kafka-ref dump --deep`` prints (``KafkaRef.batchJson``/``recordJson``: Kafka's getter names, payloads in
base64). ``our_dump`` walks a file with kafkatool exactly the way ``kafka-ref dump`` walks it with Kafka
(``batches()`` -> ``isValid`` -> ``ensureValid`` -> records) and classifies the end the same way:
exit 0 clean, 2 trailing bytes Kafka silently ignores, 3 an exception, with the stage and position.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from kafkatool.errors import CorruptRecordError, InvalidRecordError, KafkaToolError, LimitExceededError
from kafkatool.record.batch import MAGIC_V2, Record
from kafkatool.record.default_records import parse_control_type, parse_end_txn_marker
from kafkatool.record.file_records import FileRecords, RecordBatch
from kafkatool.record.legacy_records import LegacyRecordBatch
from tests.support.kafkaref import CORRUPT, OK, TRAILING, Dump, b64

EXCEPTION = "<exception>"  # a getter that threw (kafka-ref prints {"exception":..., "message":...})

# Our error class -> the Kafka exception class kafka-ref reports for the same damage.
KAFKA_EXCEPTION = {
    CorruptRecordError: "org.apache.kafka.common.errors.CorruptRecordException",
    InvalidRecordError: "org.apache.kafka.common.InvalidRecordException",
}


def _safe(get: Callable[[], Any]) -> Any:
    try:
        return get()
    except KafkaToolError:
        return EXCEPTION


def batch_json(batch: RecordBatch) -> dict[str, Any]:
    """``KafkaRef.batchJson``: the batch header as Kafka's ``RecordBatch`` getters report it."""
    legacy = isinstance(batch, LegacyRecordBatch)
    return {
        "type": "batch",
        "position": batch.position,
        "baseOffset": _safe(lambda: batch.base_offset),
        "lastOffset": batch.last_offset,
        "magic": batch.magic,
        "codec": _safe(lambda: batch.codec.label),
        "sizeInBytes": batch.size,
        "crc": batch.crc,
        "isValid": batch.is_valid(),
        "maxTimestamp": batch.max_timestamp,
        "timestampType": batch.timestamp_type.label,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence,
        "lastSequence": batch.last_sequence,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "count": None if legacy else batch.count,
        "deleteHorizonMs": batch.delete_horizon_ms,
    }


def record_json(batch: RecordBatch, r: Record) -> dict[str, Any]:
    """``KafkaRef.recordJson``: one record as Kafka's ``Record`` getters report it (``--payload b64``)."""
    j: dict[str, Any] = {"type": "record", "offset": r.offset, "timestamp": r.timestamp}
    if batch.magic >= MAGIC_V2:
        j["sequence"] = r.sequence
    j["sizeInBytes"] = r.size
    if isinstance(batch, LegacyRecordBatch):
        # Inner records of a wrapper report the wrapper's timestamp type (LegacyRecord.wrapperRecordTimestampType).
        j["crc"] = r.crc
        j["recordTimestampType"] = batch.timestamp_type.label
    j["keySize"] = -1 if r.key is None else len(r.key)
    j["valueSize"] = -1 if r.value is None else len(r.value)
    j["key"] = b64(r.key)
    j["value"] = b64(r.value)
    j["headers"] = [{"key": h.key, "value": b64(h.value)} for h in r.headers]
    if batch.is_control:
        c: dict[str, Any] = {}
        try:
            ctype = parse_control_type(r.key)
            c["controlType"] = ctype.name
            if ctype.name in ("COMMIT", "ABORT"):
                c["coordinatorEpoch"] = parse_end_txn_marker(r.value)
        except KafkaToolError:
            c = {"exception": EXCEPTION}
        j["control"] = c
    return j


def our_dump(path: str | os.PathLike[str], *, deep: bool = True) -> Dump:
    """``kafka-ref dump [--deep]`` reproduced with kafkatool, in the same ``Dump`` shape."""
    file_size = os.path.getsize(path)
    d = Dump(OK)
    valid_end = 0
    ok = 0
    records_total = 0
    stage, stage_pos = "next-batch", 0
    batch: RecordBatch | None = None
    with FileRecords(path) as fr:
        stream = fr.batches()
        it = iter(stream)
        try:
            while True:
                stage, stage_pos = "next-batch", valid_end
                batch = next(it, None)
                if batch is None:
                    break
                stage, stage_pos = "read-header", batch.position
                bj = batch_json(batch)
                bj["records"] = []
                d.batches.append(bj)
                stage = "ensureValid"
                batch.ensure_valid()
                if deep:
                    stage = "records"
                    recs = batch.records()
                    for r in recs:
                        if r.crc_valid is False:
                            # kafka-ref calls Record.ensureValid() on every record: a legacy inner message's CRC.
                            raise CorruptRecordError(f"Record is corrupt (inner message at offset {r.offset} has "
                                                     f"a bad crc {r.crc})", position=batch.position)
                    bj["records"] = [record_json(batch, r) for r in recs]
                    records_total += len(recs)
                ok += 1
                valid_end = batch.position + batch.size
        except KafkaToolError as e:
            d.returncode = CORRUPT
            d.error = {"type": "error", "exception": _kafka_class(e), "message": e.message, "stage": stage,
                       "position": stage_pos, "valid_bytes": valid_end, "file_size": file_size, "batches_ok": ok,
                       "ours": type(e).__name__,
                       "compressed": stage == "records" and batch is not None and batch.is_compressed}
            return d
        end = stream.end_state
        assert end is not None
    d.summary = {"type": "summary", "batches": ok, "valid_bytes": valid_end, "file_size": file_size}
    if deep:
        d.summary["records"] = records_total
    if valid_end < file_size:
        assert end.kind in ("short-tail", "size-past-end"), end
        d.returncode = TRAILING
        d.truncated = {"type": "truncated", "stopped_at": valid_end, "file_size": file_size,
                       "trailing_bytes": file_size - valid_end, "kind": end.kind}
    return d


def _kafka_class(e: KafkaToolError) -> str:
    for cls, name in KAFKA_EXCEPTION.items():
        if isinstance(e, cls):
            return name
    if isinstance(e, LimitExceededError):
        return "LimitExceeded"  # kafkatool's own bound: Kafka has none (it would try to allocate)
    return type(e).__name__


# ---------------------------------------------------------------------------------------------- comparison

BATCH_KEYS = ("position", "baseOffset", "lastOffset", "magic", "codec", "sizeInBytes", "crc", "isValid",
              "maxTimestamp", "timestampType", "producerId", "producerEpoch", "baseSequence", "lastSequence",
              "isTransactional", "isControl", "partitionLeaderEpoch", "count", "deleteHorizonMs")
RECORD_KEYS = ("offset", "timestamp", "sequence", "sizeInBytes", "crc", "recordTimestampType", "keySize",
               "valueSize", "key", "value", "headers", "control")


def _norm(v: Any) -> Any:
    if isinstance(v, dict) and "exception" in v and len(v) <= 3 and "controlType" not in v:
        return EXCEPTION
    return v


def comparable_batch(b: dict[str, Any], *, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: _norm(b.get(k)) for k in BATCH_KEYS if k not in skip}


def comparable_record(r: dict[str, Any], *, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: _norm(r[k]) for k in RECORD_KEYS if k in r and k not in skip}


def assert_same_batches(ours: Dump, theirs: Dump, *, skip_batch: tuple[str, ...] = (),
                        skip_record: tuple[str, ...] = (), context: str = "", lenient_at: int | None = None) -> None:
    """Every batch header field and every record field equal, in order; the first difference is reported."""
    assert len(ours.batches) == len(theirs.batches), \
        f"{context}: {len(ours.batches)} batches (kafkatool) vs {len(theirs.batches)} (Kafka)"
    for i, (a, b) in enumerate(zip(ours.batches, theirs.batches, strict=True)):
        ca, cb = comparable_batch(a, skip=skip_batch), comparable_batch(b, skip=skip_batch)
        if (ca["isValid"] is False and cb["isValid"] is False) or a["position"] == lenient_at:
            # A batch both sides call corrupt: a getter may throw on one side only (a v2 batch shorter than its
            # 61-byte header; the baseOffset of a v0 wrapper whose compressed payload is damaged after its first
            # inner message, which Kafka inflates lazily). See tests/interop/README.md "Known differences".
            for k in [k for k in ca if EXCEPTION in (ca[k], cb.get(k))]:
                del ca[k], cb[k]
        assert ca == cb, f"{context}: batch #{i} differs: " + _diff(ca, cb)
        assert len(a["records"]) == len(b["records"]), \
            f"{context}: batch #{i} at {a['position']}: {len(a['records'])} records vs {len(b['records'])}"
        for k, (ra, rb) in enumerate(zip(a["records"], b["records"], strict=True)):
            xa, xb = comparable_record(ra, skip=skip_record), comparable_record(rb, skip=skip_record)
            assert xa == xb, f"{context}: batch #{i} record #{k} differs: " + _diff(xa, xb)


def assert_same_dump(ours: Dump, theirs: Dump, context: str = "", *, skip_record: tuple[str, ...] = ()) -> None:
    """Same batches and records, same end: exit code, and where and how the walk stopped."""
    failed_at = None
    if theirs.error is not None and theirs.error["stage"] in ("ensureValid", "records"):
        failed_at = theirs.error["position"]
    if failed_at is not None:
        # kafka-ref streams records before Kafka throws mid-batch; kafkatool decodes a batch all or nothing.
        for d in (ours, theirs):
            for b in d.batches:
                if b["position"] == failed_at:
                    b["records"] = []
    assert_same_batches(ours, theirs, context=context, lenient_at=failed_at, skip_record=skip_record)
    assert ours.returncode == theirs.returncode, \
        f"{context}: kafkatool ends with {ours.returncode} {ours.error or ours.truncated}, " \
        f"Kafka with {theirs.returncode} {theirs.error or theirs.truncated}"
    if theirs.error is not None:
        assert ours.error is not None
        keys = ("stage", "position", "valid_bytes", "batches_ok")
        assert {k: ours.error[k] for k in keys} == {k: theirs.error[k] for k in keys}, \
            f"{context}: error differs: kafkatool {ours.error} vs Kafka {theirs.error}"
        assert same_failure_class(ours.error, theirs.error), \
            f"{context}: error class differs: kafkatool {ours.error} vs Kafka {theirs.error}"
    else:
        assert ours.summary is not None and theirs.summary is not None
        for k in ("batches", "valid_bytes", "file_size", "records"):
            if k in theirs.summary:
                assert ours.summary[k] == theirs.summary[k], f"{context}: summary {k}: {ours.summary} vs " \
                                                             f"{theirs.summary}"
        if theirs.truncated is not None:
            assert ours.truncated is not None
            assert ours.truncated["stopped_at"] == theirs.truncated["stopped_at"]
            assert ours.truncated["trailing_bytes"] == theirs.truncated["trailing_bytes"]


# What Kafka throws while it streams a damaged *compressed* records area: the codec's own failure wrapped in a
# KafkaException ("Failed to decompress record stream", "java.io.IOException: Stream frame descriptor corrupted"),
# or, when the damaged stream still inflates for a while, the record parser's InvalidRecordException first.
# kafkatool inflates the whole area before parsing, so its codec check (CorruptRecordError) comes first.
_COMPRESSED_RECORDS_FAILURES = {
    "org.apache.kafka.common.KafkaException",
    "org.apache.kafka.common.InvalidRecordException",
    "org.apache.kafka.common.errors.CorruptRecordException",
}


def same_failure_class(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Do kafkatool and Kafka fail the same way? Exact class, except inside a compressed records area."""
    if ours["exception"] == theirs["exception"]:
        return True
    if ours["stage"] == "records" and ours.get("compressed") and ours["ours"] != "LimitExceededError":
        return bool(theirs["exception"] in _COMPRESSED_RECORDS_FAILURES)
    if ours["stage"] == "records" and ours["ours"] == "InvalidRecordError" \
            and theirs["exception"] == "java.lang.IllegalArgumentException":
        # A v0/v1 key or value length past the end of its message: LegacyRecord.key()/value() let the raw
        # ByteBuffer.limit() failure escape ("newLimit > capacity"); kafkatool names it InvalidRecordError.
        return True
    return False


def ignore_codec_bytes(d: Dump) -> Dump:
    """For comparing record-identical files whose compressed bytes differ (another codec library): drop every
    batch position (they shift after the first size difference) and the size and CRC of compressed batches."""
    out = Dump(d.returncode, summary=d.summary, error=d.error, truncated=d.truncated)
    for b in d.batches:
        c = dict(b, position=None)
        if b["codec"] != "none":
            c["sizeInBytes"] = c["crc"] = None
        out.batches.append(c)
    return out


def _diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    parts = []
    for k in a.keys() | b.keys():
        if a.get(k) != b.get(k):
            va, vb = repr(a.get(k)), repr(b.get(k))
            parts.append(f"{k}: kafkatool {va[:120]} vs Kafka {vb[:120]}")
    return "; ".join(sorted(parts))

