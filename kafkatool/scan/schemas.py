"""Arrow schemas of what executors return, and the conversions to and from the scan's Python results.

One Arrow schema per job is the single source of truth: Spark's schema is derived from it
(``kafkatool.spark.job.spark_schema``), executors build ``pyarrow.RecordBatch``es of it, and the single-process engine
writes the same columns. Figures cross the JVM as Arrow, never as Python row objects.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kafkatool.dump import Finding, Severity
from kafkatool.scan.engine import RangeResult
from kafkatool.scan.plan import WorkItem
from kafkatool.scan.sketches import HotKeys, HyperLogLog
from kafkatool.scan.stats import KeyShareStats, Stats

_I64 = pa.int64()

INDEX_CHECK_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("base_offset", _I64), ("path", pa.string()),
    ("classification", pa.string()), ("severity", pa.string()), ("detail", pa.string()),
    ("offset_entries_on_disk", _I64), ("offset_entries_rebuilt", _I64),
    ("time_entries_on_disk", _I64), ("time_entries_rebuilt", _I64),
])

FORMAT_TYPE = pa.struct([("magic", pa.int8()), ("codec", pa.int8()), ("batches", _I64), ("records", _I64),
                         ("bytes", _I64), ("uncompressed_bytes", _I64)])
FINDING_TYPE = pa.struct([("kind", pa.string()), ("severity", pa.string()), ("position", _I64), ("offset", _I64),
                          ("message", pa.string()), ("data", pa.string())])
# One row per batch: the DataFrame source's "batches" view.
BATCH_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("segment", _I64), ("position", _I64), ("size", pa.int32()),
    ("magic", pa.int8()), ("codec", pa.string()), ("base_offset", _I64), ("last_offset", _I64),
    ("records", pa.int32()), ("max_timestamp", pa.timestamp("ms", tz="UTC")), ("max_timestamp_ms", _I64),
    ("timestamp_type", pa.string()), ("producer_id", _I64), ("producer_epoch", pa.int16()),
    ("leader_epoch", pa.int32()), ("transactional", pa.bool_()), ("control", pa.bool_()), ("crc_valid", pa.bool_()),
    ("decoded", pa.bool_()),
])
MARKER_TYPE = pa.struct([("producer_id", _I64), ("offset", _I64), ("aborted", pa.bool_())])
HOT_KEY_TYPE = pa.struct([("key", pa.binary()), ("records", _I64), ("bytes", _I64), ("hash", _I64)])

STATS_SCHEMA = pa.schema([
    ("item_id", _I64),
    ("batches", _I64), ("records", _I64), ("bytes", _I64), ("uncompressed_bytes", _I64),
    ("formats", pa.list_(FORMAT_TYPE)),
    ("first_offset", _I64), ("last_offset", _I64),
    ("min_timestamp", _I64), ("max_timestamp", _I64), ("first_timestamp", _I64), ("last_timestamp", _I64),
    ("out_of_order", _I64),
    ("crc_failures", _I64), ("decode_failures", _I64),
    ("largest_batch", _I64), ("largest_batch_position", _I64),
    ("oversized_batches", _I64), ("transactional_batches", _I64), ("control_batches", _I64),
    ("null_keys", _I64), ("unknown_record_batches", _I64), ("hll", pa.binary()),
    ("findings", pa.list_(FINDING_TYPE)), ("handoff", _I64), ("valid_bytes", _I64), ("invalid_bytes", _I64),
    ("first_followed_position", _I64), ("first_followed", _I64), ("last_followed", _I64),
    ("bytes_scanned", _I64),
    ("exported", _I64), ("export_txn_rows", _I64), ("markers", pa.list_(MARKER_TYPE)),
    ("index_check", pa.struct(list(INDEX_CHECK_SCHEMA))),
    ("ks_slots", pa.int32()), ("ks_slot_records", pa.list_(_I64)), ("ks_slot_bytes", pa.list_(_I64)),
    ("ks_null_records", _I64), ("ks_null_bytes", _I64), ("ks_keyed_records", _I64), ("ks_keyed_bytes", _I64),
    ("ks_murmur2_match", _I64), ("ks_crc32_match", _I64), ("ks_hot", pa.list_(HOT_KEY_TYPE)),
    ("ks_hot_error", _I64),
])

HEADER_TYPE = pa.struct([("key", pa.string()), ("value", pa.binary())])

# The export's columns (kafkatool.scan.export says what each means); the DataFrame source's schema too.
RECORD_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("record_offset", _I64),
    ("timestamp", pa.timestamp("ms", tz="UTC")), ("timestamp_ms", _I64), ("timestamp_type", pa.string()),
    ("key", pa.binary()), ("value", pa.binary()), ("headers", pa.list_(HEADER_TYPE)),
    ("magic", pa.int8()), ("codec", pa.string()), ("producer_id", _I64), ("producer_epoch", pa.int16()),
    ("leader_epoch", pa.int32()), ("sequence", pa.int32()), ("transactional", pa.bool_()), ("control", pa.bool_()),
    ("aborted", pa.bool_()), ("crc_valid", pa.bool_()), ("segment", _I64), ("position", _I64),
])



def stats_row(r: RangeResult) -> dict[str, Any]:
    s = r.stats
    ks = r.keyshare
    return {
        "item_id": r.item_id,
        "batches": s.batches, "records": s.records, "bytes": s.bytes, "uncompressed_bytes": s.uncompressed_bytes,
        "formats": [{"magic": m, "codec": c, "batches": v[0], "records": v[1], "bytes": v[2],
                     "uncompressed_bytes": v[3]} for (m, c), v in sorted(s.formats.items())],
        "first_offset": s.first_offset, "last_offset": s.last_offset,
        "min_timestamp": s.min_timestamp, "max_timestamp": s.max_timestamp,
        "first_timestamp": s.first_timestamp, "last_timestamp": s.last_timestamp,
        "out_of_order": s.out_of_order,
        "crc_failures": s.crc_failures, "decode_failures": s.decode_failures,
        "largest_batch": s.largest_batch,
        "largest_batch_position": s.largest_batch_position[1] if s.largest_batch_position else None,
        "oversized_batches": s.oversized_batches, "transactional_batches": s.transactional_batches,
        "control_batches": s.control_batches, "null_keys": s.null_keys,
        "unknown_record_batches": s.unknown_record_batches,
        "hll": s.hll.to_bytes() if s.hll is not None else None,
        "findings": [finding_row(f) for f in r.findings], "handoff": r.handoff,
        "valid_bytes": r.valid_bytes, "invalid_bytes": r.invalid_bytes,
        "first_followed_position": r.first_followed[0] if r.first_followed else None,
        "first_followed": r.first_followed[1] if r.first_followed else None, "last_followed": r.last_followed,
        "bytes_scanned": r.bytes_scanned,
        "exported": r.exported, "export_txn_rows": r.export_txn_rows,
        "markers": [{"producer_id": p, "offset": o, "aborted": a} for p, o, a in r.markers],
        "index_check": r.index_check,
        "ks_slots": ks.slots if ks else 0,
        "ks_slot_records": ks.slot_records if ks else None, "ks_slot_bytes": ks.slot_bytes if ks else None,
        "ks_null_records": ks.null_records if ks else None, "ks_null_bytes": ks.null_bytes if ks else None,
        "ks_keyed_records": ks.keyed_records if ks else None, "ks_keyed_bytes": ks.keyed_bytes if ks else None,
        "ks_murmur2_match": ks.murmur2_match if ks else None, "ks_crc32_match": ks.crc32_match if ks else None,
        "ks_hot": ks.hot.to_rows() if ks else None, "ks_hot_error": ks.hot.error if ks else None,
    }


def finding_row(f: Finding) -> dict[str, Any]:
    return {"kind": f.kind, "severity": f.severity.value, "position": f.position, "offset": f.offset,
            "message": f.message, "data": json.dumps(f.data, sort_keys=True) if f.data else None}


def finding_of(row: dict[str, Any], path: str) -> Finding:
    return Finding(row["kind"], Severity(row["severity"]), path, row["message"], row["position"], row["offset"],
                   json.loads(row["data"]) if row["data"] else {})


def stats_batch(results: list[RangeResult]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([stats_row(r) for r in results], schema=STATS_SCHEMA)


def result_from_row(row: dict[str, Any], item: WorkItem, hot_key_capacity: int = 64) -> RangeResult:
    """Back from a ``STATS_SCHEMA`` row (paths come from the plan's item: a range is one file)."""
    path = item.path
    s = Stats(
        batches=row["batches"], records=row["records"], bytes=row["bytes"],
        uncompressed_bytes=row["uncompressed_bytes"],
        formats={(f["magic"], f["codec"]): [f["batches"], f["records"], f["bytes"], f["uncompressed_bytes"]]
                 for f in row["formats"] or ()},
        first_offset=row["first_offset"], last_offset=row["last_offset"],
        min_timestamp=row["min_timestamp"], max_timestamp=row["max_timestamp"],
        first_timestamp=row["first_timestamp"], last_timestamp=row["last_timestamp"],
        out_of_order=row["out_of_order"], crc_failures=row["crc_failures"],
        decode_failures=row["decode_failures"], largest_batch=row["largest_batch"],
        largest_batch_position=(path, row["largest_batch_position"])
        if row["largest_batch_position"] is not None else None,
        oversized_batches=row["oversized_batches"], transactional_batches=row["transactional_batches"],
        control_batches=row["control_batches"], null_keys=row["null_keys"],
        unknown_record_batches=row["unknown_record_batches"],
        hll=HyperLogLog.from_bytes(row["hll"]) if row["hll"] is not None else None,
    )
    ks = None
    if row["ks_slots"]:
        ks = KeyShareStats(row["ks_slots"], list(row["ks_slot_records"]), list(row["ks_slot_bytes"]),
                           row["ks_null_records"], row["ks_null_bytes"], row["ks_keyed_records"],
                           row["ks_keyed_bytes"], row["ks_murmur2_match"], row["ks_crc32_match"],
                           HotKeys.from_rows(row["ks_hot"], row["ks_hot_error"], hot_key_capacity))
    first = (row["first_followed_position"], row["first_followed"]) if row["first_followed"] is not None else None
    return RangeResult(row["item_id"], s, [finding_of(f, path) for f in row["findings"] or ()], row["handoff"],
                       row["valid_bytes"], row["invalid_bytes"], first, row["last_followed"], ks,
                       row["bytes_scanned"], row["exported"], row["export_txn_rows"],
                       [(m["producer_id"], m["offset"], m["aborted"]) for m in row["markers"] or ()],
                       row["index_check"])
