"""Per topic-partition totals counted from ``kafkatool dump --deep --format json`` (the single-process reader
every other command is checked against), in the shape of ``spark-scan --format json``'s partition rows, so
that a scan on any engine can be compared with dump's figures for the same dir.

Counted here, from dump's batch and record lines only: batches, records (control records included, as
the scan counts them), bytes on disk, the largest batch, transactional and control batches, CRC failures,
first and last offsets, timestamp range (timestamps >= 0), timestamps smaller than the one before in the
partition (in file order), null keys of data records, and batches/records/bytes per (magic, codec).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli

COMPARED = ("batches", "records", "bytes", "largest_batch", "transactional_batches", "control_batches",
            "crc_failures", "first_offset", "last_offset", "min_timestamp", "max_timestamp",
            "out_of_order_timestamps", "null_keys")


def dump_totals(paths: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Run ``kafkatool dump --deep --format json`` over ``paths`` and count every partition's figures, keyed
    by the partition dir's real path (two log dirs may hold the same topic-partition)."""
    agg: dict[str, dict[str, Any]] = {}
    for path in paths:
        r = run_cli("dump", path, "--deep", "--format", "json", timeout=600)
        assert r.returncode in (0, 1), r.stderr[-2000:]
        assert "Traceback" not in r.stderr
        batch: dict[str, Any] | None = None
        a: dict[str, Any] = {}
        for line in r.stdout.split("\n")[:-1]:  # not splitlines(): values may hold U+2028 (JSON keeps it raw)
            j = json.loads(line)
            if j["type"] == "batch":
                a = agg.setdefault(os.path.realpath(Path(j["path"]).parent), {
                    "batches": 0, "records": 0, "bytes": 0, "largest_batch": 0, "transactional_batches": 0,
                    "control_batches": 0, "crc_failures": 0, "first_offset": None, "last_offset": None,
                    "min_timestamp": None, "max_timestamp": None, "out_of_order_timestamps": 0, "null_keys": 0,
                    "formats": {}, "_last_ts": None})
                a["batches"] += 1
                a["bytes"] += j["size"]
                a["largest_batch"] = max(a["largest_batch"], j["size"])
                a["transactional_batches"] += j["is_transactional"]
                a["control_batches"] += j["is_control"]
                a["crc_failures"] += not j["crc_valid"]
                a["last_offset"] = j["last_offset"] if a["last_offset"] is None else max(a["last_offset"],
                                                                                           j["last_offset"])
                f = a["formats"].setdefault((j["magic"], j["codec"]), [0, 0, 0])
                f[0] += 1
                f[2] += j["size"]
                batch = j
                batch["_format"] = f
            elif j["type"] == "record" and batch is not None:
                a["records"] += 1
                batch["_format"][1] += 1
                off = j["offset"]
                a["first_offset"] = off if a["first_offset"] is None else min(a["first_offset"], off)
                a["null_keys"] += not batch["is_control"] and j.get("key") is None
                ts = j["timestamp"]
                if ts is not None and ts >= 0:
                    if a["_last_ts"] is not None and ts < a["_last_ts"]:
                        a["out_of_order_timestamps"] += 1
                    a["_last_ts"] = ts
                    a["min_timestamp"] = ts if a["min_timestamp"] is None else min(a["min_timestamp"], ts)
                    a["max_timestamp"] = ts if a["max_timestamp"] is None else max(a["max_timestamp"], ts)
            elif j["type"] == "file":
                batch = None
    for a in agg.values():
        del a["_last_ts"]
    return agg


def scan_partitions(objs: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``spark-scan --format json``'s partition rows, cut to what ``dump_totals`` counts."""
    out = {}
    for o in objs:
        if o["type"] == "partition":
            row = {k: o[k] for k in COMPARED}
            row["formats"] = {(f["magic"], f["codec"]): [f["batches"], f["records"], f["bytes"]] for f in o["formats"]}
            assert os.path.basename(o["dir"]) == f"{o['topic']}-{o['partition']}", o["dir"]
            out[os.path.realpath(o["dir"])] = row
    return out


def assert_scan_equals_dump(objs: list[dict[str, Any]], want: dict[str, dict[str, Any]]) -> None:
    """Every partition row and the total of a ``spark-scan --format json`` run equal dump's counts."""
    got = scan_partitions(objs)
    assert sorted(got) == sorted(want)
    for d in sorted(want):
        assert got[d] == want[d], d
    (total,) = [o for o in objs if o["type"] == "total"]
    for k in ("batches", "records", "bytes", "transactional_batches", "control_batches", "crc_failures",
              "null_keys"):
        assert total[k] == sum(a[k] for a in want.values()), k
    assert total["partitions"] == len(want)
    assert total["largest_batch"] == max(a["largest_batch"] for a in want.values())
