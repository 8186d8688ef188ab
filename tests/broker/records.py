"""Records as kafkatool reads them from a partition dir, in the shape a consumer returns them, to compare with what a
broker served (tests/broker/clients.Consumed)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.broker.clients import Consumed
from tests.broker.tools import kafkatool


def _b64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def read_records(partition_dir: Path, *, start: int = 0) -> list[Consumed]:
    """Every data record (control batches left out, as consumers do) at or after ``start``."""
    r = kafkatool("dump", "--format", "json", "--deep", "--encoding", "base64", partition_dir)
    assert r.returncode == 0, r.stderr
    out, control, ts_type = [], False, 0
    for line in r.stdout.splitlines():
        o = json.loads(line)
        if o["type"] == "batch":
            control = o["is_control"]
            ts_type = {"NoTimestampType": -1, "CreateTime": 0, "LogAppendTime": 1}[o["timestamp_type"]]
        elif o["type"] == "record" and not control and o["offset"] >= start:
            out.append(Consumed(o["offset"], o["timestamp"], ts_type, _b64(o["key"]), _b64(o["value"]),
                                tuple((k, _b64(v)) for k, v in o["headers"])))
    return out


def normalized(records: list[Consumed]) -> list[Consumed]:
    """kafka-python reports a v0 record's missing timestamp and timestamp type as None: Kafka's -1 and
    NoTimestampType (-1)."""
    return [Consumed(r.offset, -1 if r.timestamp is None else r.timestamp,
                     -1 if r.timestamp_type is None else r.timestamp_type, r.key, r.value, r.headers)
            for r in records]
