"""Arrow schemas of what executors return, and the conversions to and from the scan's Python results.

One Arrow schema per job is the single source of truth: Spark's schema is derived from it
(``kafkatool.spark.job.spark_schema``), executors build ``pyarrow.RecordBatch``es of it, and the single-process engine
writes the same columns. Figures cross the JVM as Arrow, never as Python row objects.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from kafkatool.scan.engine import KeyShareStats, RangeResult, Stats
from kafkatool.scan.plan import WorkItem
from kafkatool.scan.sketches import HotKeys, HyperLogLog
from kafkatool.scan.source import RangeEnd

_I64 = pa.int64()

FORMAT_TYPE = pa.struct([("magic", pa.int8()), ("codec", pa.int8()), ("batches", _I64), ("records", _I64),
                         ("bytes", _I64), ("uncompressed_bytes", _I64)])
DECODE_ERROR_TYPE = pa.struct([("position", _I64), ("message", pa.string())])
MAGIC_POSITION_TYPE = pa.struct([("position", _I64), ("magic", pa.int8())])
HOT_KEY_TYPE = pa.struct([("key", pa.binary()), ("records", _I64), ("bytes", _I64), ("hash", _I64)])

STATS_SCHEMA = pa.schema([
    ("item_id", _I64),
    ("batches", _I64), ("records", _I64), ("bytes", _I64), ("uncompressed_bytes", _I64),
    ("formats", pa.list_(FORMAT_TYPE)),
    ("first_offset", _I64), ("last_offset", _I64),
    ("min_timestamp", _I64), ("max_timestamp", _I64), ("first_timestamp", _I64), ("last_timestamp", _I64),
    ("out_of_order", _I64),
    ("crc_failures", _I64), ("crc_positions", pa.list_(_I64)),
    ("decode_failures", _I64), ("decode_errors", pa.list_(DECODE_ERROR_TYPE)),
    ("unknown_magic", _I64), ("magic_positions", pa.list_(MAGIC_POSITION_TYPE)),
    ("largest_batch", _I64), ("largest_batch_position", _I64),
    ("oversized_batches", _I64), ("transactional_batches", _I64), ("control_batches", _I64),
    ("null_keys", _I64), ("hll", pa.binary()),
    ("end_kind", pa.string()), ("end_position", _I64), ("end_trailing_bytes", _I64), ("end_message", pa.string()),
    ("bytes_scanned", _I64),
    ("ks_slots", pa.int32()), ("ks_slot_records", pa.list_(_I64)), ("ks_slot_bytes", pa.list_(_I64)),
    ("ks_null_records", _I64), ("ks_null_bytes", _I64), ("ks_keyed_records", _I64), ("ks_keyed_bytes", _I64),
    ("ks_murmur2_match", _I64), ("ks_crc32_match", _I64), ("ks_hot", pa.list_(HOT_KEY_TYPE)),
    ("ks_hot_error", _I64),
])

HEADER_TYPE = pa.struct([("key", pa.string()), ("value", pa.binary())])

RECORD_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", _I64), ("timestamp", _I64),
    ("timestamp_type", pa.string()), ("key", pa.binary()), ("value", pa.binary()),
    ("headers", pa.list_(HEADER_TYPE)), ("magic", pa.int8()), ("codec", pa.string()),
    ("producer_id", _I64), ("producer_epoch", pa.int16()), ("transactional", pa.bool_()), ("control", pa.bool_()),
])

INDEX_CHECK_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("base_offset", _I64), ("path", pa.string()),
    ("classification", pa.string()), ("severity", pa.string()), ("detail", pa.string()),
    ("offset_entries_on_disk", _I64), ("offset_entries_rebuilt", _I64),
    ("time_entries_on_disk", _I64), ("time_entries_rebuilt", _I64),
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
        "crc_failures": s.crc_failures, "crc_positions": [p for _, p in s.crc_positions],
        "decode_failures": s.decode_failures,
        "decode_errors": [{"position": p, "message": m} for _, p, m in s.decode_errors],
        "unknown_magic": s.unknown_magic,
        "magic_positions": [{"position": p, "magic": m} for _, p, m in s.magic_positions],
        "largest_batch": s.largest_batch,
        "largest_batch_position": s.largest_batch_position[1] if s.largest_batch_position else None,
        "oversized_batches": s.oversized_batches, "transactional_batches": s.transactional_batches,
        "control_batches": s.control_batches, "null_keys": s.null_keys,
        "hll": s.hll.to_bytes() if s.hll is not None else None,
        "end_kind": r.end.kind, "end_position": r.end.position, "end_trailing_bytes": r.end.trailing_bytes,
        "end_message": r.end.message, "bytes_scanned": r.bytes_scanned,
        "ks_slots": ks.slots if ks else 0,
        "ks_slot_records": ks.slot_records if ks else None, "ks_slot_bytes": ks.slot_bytes if ks else None,
        "ks_null_records": ks.null_records if ks else None, "ks_null_bytes": ks.null_bytes if ks else None,
        "ks_keyed_records": ks.keyed_records if ks else None, "ks_keyed_bytes": ks.keyed_bytes if ks else None,
        "ks_murmur2_match": ks.murmur2_match if ks else None, "ks_crc32_match": ks.crc32_match if ks else None,
        "ks_hot": ks.hot.to_rows() if ks else None, "ks_hot_error": ks.hot.error if ks else None,
    }


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
        crc_positions=[(path, p) for p in row["crc_positions"] or ()],
        decode_failures=row["decode_failures"],
        decode_errors=[(path, e["position"], e["message"]) for e in row["decode_errors"] or ()],
        unknown_magic=row["unknown_magic"] or 0,
        magic_positions=[(path, e["position"], e["magic"]) for e in row["magic_positions"] or ()],
        largest_batch=row["largest_batch"],
        largest_batch_position=(path, row["largest_batch_position"])
        if row["largest_batch_position"] is not None else None,
        oversized_batches=row["oversized_batches"], transactional_batches=row["transactional_batches"],
        control_batches=row["control_batches"], null_keys=row["null_keys"],
        hll=HyperLogLog.from_bytes(row["hll"]) if row["hll"] is not None else None,
    )
    ks = None
    if row["ks_slots"]:
        ks = KeyShareStats(row["ks_slots"], list(row["ks_slot_records"]), list(row["ks_slot_bytes"]),
                           row["ks_null_records"], row["ks_null_bytes"], row["ks_keyed_records"],
                           row["ks_keyed_bytes"], row["ks_murmur2_match"], row["ks_crc32_match"],
                           HotKeys.from_rows(row["ks_hot"], row["ks_hot_error"], hot_key_capacity))
    end = RangeEnd(row["end_kind"], row["end_position"], row["end_trailing_bytes"], row["end_message"] or "")
    return RangeResult(row["item_id"], s, end, ks, row["bytes_scanned"])
