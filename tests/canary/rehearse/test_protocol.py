"""kafkatool.canary.rehearse.protocol: requests laid out as the message definitions say, responses parsed strictly
(the same framing the real 3.9 and 4.4 brokers answered in tests/broker/test_rehearse.py)."""

from __future__ import annotations

import struct

import pytest

from kafkatool.canary.rehearse import protocol as kp


def _response(correlation_id: int, body: kp.Writer) -> bytes:
    frame = struct.pack(">i", correlation_id) + bytes(body.buf)
    return struct.pack(">i", len(frame)) + frame


def _header(data: bytes) -> tuple[int, int, int, int, str]:
    size, key, version, cid, n = struct.unpack_from(">ihhih", data)
    assert size == len(data) - 4
    return size, key, version, cid, data[14:14 + n].decode()


def test_request_header_v1():
    data = kp.encode_api_versions(7, "kafkatool-rehearse")
    assert _header(data)[1:] == (kp.API_API_VERSIONS, 1, 7, "kafkatool-rehearse")
    assert len(data) == 4 + 2 + 2 + 4 + 2 + len("kafkatool-rehearse")  # ApiVersions v1 has no body


def test_modern_fetch_request_layout():
    data = kp.encode_modern_fetch(3, "c", [kp.ModernFetch("t", 0, 5, 100), kp.ModernFetch("t", 1, 6, 200)],
                                  isolation=kp.READ_COMMITTED, max_bytes=1000)
    body = data[4 + 2 + 2 + 4 + 2 + 1:]
    replica, wait, min_bytes, max_bytes, isolation, session, epoch, topics = struct.unpack_from(">iiiibiii", body)
    assert (replica, wait, min_bytes, max_bytes, isolation, session, epoch, topics) == (-1, 0, 0, 1000, 1, 0, -1, 1)
    p = struct.calcsize(">iiiibiii")
    assert body[p:p + 3] == b"\x00\x01t"
    p += 3
    (count,) = struct.unpack_from(">i", body, p)
    parts = [struct.unpack_from(">iiqqi", body, p + 4 + i * 28) for i in range(count)]
    assert parts == [(0, -1, 5, -1, 100), (1, -1, 6, -1, 200)]  # current_leader_epoch -1: no fencing
    assert body[p + 4 + 2 * 28:] == b"\x00\x00\x00\x00\x00\x00"  # no forgotten topics, rack ""


def test_produce_request_v2_and_v8():
    v2 = kp.encode_produce(2, 1, "c", "t", 0, b"RECORDS")
    v8 = kp.encode_produce(8, 1, "c", "t", 0, b"RECORDS")
    assert v8[4:] != v2[4:] and v8.endswith(b"\x00\x00\x00\x07RECORDS") and v2.endswith(b"\x00\x00\x00\x07RECORDS")
    head = 4 + 2 + 2 + 4 + 2 + 1
    assert struct.unpack_from(">hi", v2, head) == (-1, 30_000)  # acks all
    assert struct.unpack_from(">hhi", v8, head) == (-1, -1, 30_000)  # null transactional id first (v3+)


def test_parse_api_versions():
    w = kp.Writer().i16(0).count(2).i16(1).i16(4).i16(18).i16(0).i16(0).i16(13).i32(0)
    av = kp.parse_api_versions(_response(9, w), 9)
    assert av.ranges == {1: (4, 18), 0: (0, 13)} and av.range_text(1) == "v4-v18" and av.range_text(3) == "none"
    assert av.supports(1, 4) and not av.supports(1, 3)


def test_parse_metadata_v5():
    w = kp.Writer().i32(0).count(1).i32(1).string("127.0.0.1").i32(9092).string(None).string("cid").i32(1)
    w.count(1).i16(0).string("orders").boolean(False).count(2)
    for index in (0, 1):
        w.i16(0).i32(index).i32(1 if index else -1).count(1).i32(1).count(1).i32(1).count(0)
    (t,) = kp.parse_metadata(_response(4, w), 4)
    assert (t.name, t.internal, [(p.partition, p.leader) for p in t.partitions]) == ("orders", False, [(0, -1), (1, 1)])


def test_parse_produce_v8_with_the_brokers_message():
    w = kp.Writer().count(1).string("t").count(1).i32(0).i16(10).i64(-1).i64(-1).i64(-1)
    w.count(1).i32(0).string("too big").string("The record batch size in the append is 5000 bytes").i32(0)
    r = kp.parse_produce(_response(2, w), 2, 8)
    assert (r.error_code, r.base_offset, r.error_message, r.record_errors) == (
        10, -1, "The record batch size in the append is 5000 bytes", ("batch 0: too big",))
    assert kp.error_text(10, r.error_message).startswith("MESSAGE_TOO_LARGE (The record batch size")
    assert kp.error_text(10) == ("MESSAGE_TOO_LARGE (The request included a message larger than the max message size "
                                 "the server will accept.)")
    old = kp.Writer().count(1).string("t").count(1).i32(0).i16(0).i64(42)
    assert kp.parse_produce(_response(3, old), 3, 0).base_offset == 42


def test_parse_modern_fetch_v11():
    w = kp.Writer().i32(0).i16(0).i32(0).count(1).string("t").count(1)
    w.i32(0).i16(0).i64(10).i64(8).i64(2).count(1).i64(77).i64(3).i32(-1).bytes_(b"batches")
    r = kp.parse_modern_fetch(_response(5, w), 5)
    (p,) = r.partitions
    assert (p.high_watermark, p.last_stable_offset, p.log_start_offset, p.aborted, p.records) == (
        10, 8, 2, ((77, 3),), b"batches")


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_a_short_or_foreign_response_is_a_protocol_error(cut: int):
    w = kp.Writer().i16(0).count(1).i16(1).i16(4).i16(18).i32(0)
    data = _response(9, w)
    short = data[:len(data) - cut]
    with pytest.raises(kp.ProtocolError):
        kp.parse_api_versions(short, 9)
    with pytest.raises(kp.ProtocolError, match="correlation id 9, not 8"):
        kp.parse_api_versions(data, 8)
