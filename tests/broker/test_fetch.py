"""3. ``kafkatool fetch-sim`` against the broker's own answers to FetchRequest v0-v3 (what an old consumer sends):
a Kafka 3.9 broker holding v2 data (one codec per partition: none, gzip, snappy, lz4; every codec mixed; zstd;
transactions with their markers) and v1 data (converted to v0 by Fetch v0-v1), from chosen fetch offsets with chosen
partition and response max bytes.

The whole response (size prefix, header, partition fields, records) is byte for byte the broker's for none, gzip and
lz4, the padding (overflow) batch included; for snappy, whose compressed bytes differ between snappy-java and
kafkatool's compressor (tests/interop/README.md), the records of the complete batches are the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import iter_batches
from tests.broker.runs import FetchSeen, KraftRun, ZooKeeperRun
from tests.broker.tools import kafkatool


@pytest.fixture(scope="module")
def fetches(zookeeper39: ZooKeeperRun, kraft39: KraftRun) -> list[tuple[Path, FetchSeen]]:
    return [(zookeeper39.clean, f) for f in zookeeper39.fetches] + [(kraft39.clean, f) for f in kraft39.fetches]


def fetch_sim(log_dir: Path, seen: FetchSeen, out: Path, *extra: str) -> bytes:
    c = seen.case
    r = kafkatool("fetch-sim", log_dir / c.partition_dir, "--fetch-version", str(c.version), "--fetch-offset",
                  str(c.fetch_offset), "--partition-max-bytes", str(c.partition_max_bytes), "--fetch-max-bytes",
                  str(c.max_bytes), "--log-magic", str(c.log_magic), "--correlation-id", "7", "--out", out,
                  "--format", "json", *extra)
    assert r.returncode in (0, 1), r.stderr
    return out.read_bytes()


def records(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """The records of the complete batches before the first partial or overflow one."""
    out = []
    for b in iter_batches(data):
        if b.base_offset < 0:
            break
        out += [(r.offset, r.timestamp, r.key, r.value) for r in b.records()]
    return out


def codec_at(data: bytes, position: int) -> Codec | None:
    """The codec of the batch (complete or cut) holding byte ``position``: its header's attributes."""
    p = 0
    while p + 22 <= len(data):
        end = p + 12 + int.from_bytes(data[p + 8:p + 12], "big", signed=True)
        if position < end:
            magic = data[p + 16]
            attributes = data[p + 17] if magic < 2 else data[p + 22]
            return Codec(attributes & 7)
        p = end
    return None


def test_fetch_sim_is_the_brokers_fetch_response(fetches: list[tuple[Path, FetchSeen]], tmp_path: Path) -> None:
    exact = by_records = 0
    overflow = errors = 0
    for log_dir, seen in fetches:
        whole = fetch_sim(log_dir, seen, tmp_path / "whole.bin")
        raw = fetch_sim(log_dir, seen, tmp_path / "raw.bin", "--raw")
        theirs = seen.partition.records or b""
        if seen.partition.error_code:
            errors += 1
        if whole == seen.response:
            assert raw == theirs, seen.case.id
            exact += 1
            overflow += b"\xff" * 8 in theirs
            continue
        # only snappy's bytes may differ (and with them the committed size when the first converted batch is larger
        # than the slice, the cut and the padding): the first byte that differs is in a snappy batch
        first = next(i for i in range(min(len(raw), len(theirs)) + 1) if raw[i:i + 1] != theirs[i:i + 1])
        assert Codec.SNAPPY in (codec_at(raw, first), codec_at(theirs, first)), seen.case.id
        mine, kafka = records(raw), records(theirs)
        n = min(len(mine), len(kafka))
        assert mine[:n] == kafka[:n] and n, seen.case.id
        by_records += 1
    assert exact > 150 and by_records < exact
    assert overflow > 10  # padding (overflow) batches were compared byte for byte
    assert errors >= 1  # zstd: UNSUPPORTED_COMPRESSION_TYPE from the broker and from fetch-sim alike
    assert any(s.case.log_magic == 1 and s.case.version >= 2 for _, s in fetches)  # the unconverted path too
