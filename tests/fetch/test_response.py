"""FetchResponse v0..v3 framing: Kafka's own sends (tests/vectors/fetch_response/README.md) and parse-back."""

from __future__ import annotations

import io
import struct

import pytest

from kafkatool.errors import CorruptDataError
from kafkatool.fetch.response import PartitionHeader, framing, parse_response, response_size
from kafkatool.fetch.simulate import FetchOptions, PartitionLog, PartitionRequest, simulate
from kafkatool.log.layout import TopicPartition
from tests.support.paths import VECTORS

FR = VECTORS / "fetch_response"


def _requests() -> list[PartitionRequest]:
    txn, zstd = FR / "txn.log", FR / "zstd.log"
    return [
        PartitionRequest(PartitionLog.from_file(txn, TopicPartition("t", 0)), 5),
        PartitionRequest(PartitionLog.from_file(zstd, TopicPartition("t", 1)), 0),
        PartitionRequest(PartitionLog.from_file(txn, TopicPartition("u", 2)), 99),  # past the log end
        PartitionRequest(PartitionLog.from_file(txn, TopicPartition("t", 3)), 0),
    ]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_whole_response_matches_kafkas_send(version: int) -> None:
    opts = FetchOptions(fetch_version=version, partition_max_bytes=1000, min_one_message=False, correlation_id=7,
                        throttle_time_ms=10 * version)
    buf = io.BytesIO()
    simulate(opts, _requests(), buf)
    assert buf.getvalue() == (FR / f"v{version}.bin").read_bytes()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_parse_back_field_layout(version: int) -> None:
    data = (FR / f"v{version}.bin").read_bytes()
    resp = parse_response(data, version)
    assert resp.size == len(data) - 4 and resp.correlation_id == 7
    assert resp.throttle_time_ms == (None if version == 0 else 10 * version)
    got = [(p.topic, p.partition, p.error_code, p.high_watermark, None if p.records is None else len(p.records))
           for p in resp.partitions]
    assert got == [("t", 0, 0, 22, 1000), ("t", 1, 76, -1, None), ("u", 2, 1, -1, 0), ("t", 3, 0, 22, 1000)]
    # Hand-decoded prefix: size, correlation id, [throttle], topic count 3 (t, u, t: grouping keeps order).
    head = struct.unpack_from(">ii", data)
    p = 8 + (4 if version else 0)
    assert head == (len(data) - 4, 7) and struct.unpack_from(">i", data, p)[0] == 3
    assert data[p + 4:p + 11] == b"\x00\x01t\x00\x00\x00\x02"


def test_size_is_computed_from_committed_sizes_before_conversion() -> None:
    parts = [PartitionHeader("orders", 0, 0, 10, 1234), PartitionHeader("orders", 1, 76, -1, -1)]
    for version in range(4):
        stream = list(framing(version, 1, 0, parts))
        written = sum(len(x) for x in stream if isinstance(x, bytes)) + 1234
        assert response_size(version, parts) == written - 4
        assert [x for x in stream if isinstance(x, int)] == [0]  # null records have no bytes to stream


def test_parse_rejects_bad_framing() -> None:
    data = (FR / "v1.bin").read_bytes()
    with pytest.raises(CorruptDataError):
        parse_response(data[:-1], 1)
    with pytest.raises(CorruptDataError):
        parse_response(data, 0)  # v0 has no throttle time: the fields do not line up
