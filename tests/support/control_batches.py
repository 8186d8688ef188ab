"""Malformed transaction markers with valid CRCs, made from a Kafka-written marker.

The base is the 78-byte ABORT marker kafka-clients 3.9.1 wrote at byte 2196 of
``tests/vectors/reindex/txn-0/00000000000000000100.log`` (offset 108, producer id 1000). Each case replaces
some of its fields or its one record (17 bytes: ``20 00 00 00 08 <key 00000000> 0c <value 0000 00000000> 00``)
and recomputes the CRC-32C, so ``ensureValid`` passes and only recovery's producer-state step
(``ProducerAppendInfo.append`` -> ``EndTransactionMarker.deserialize``) can object.

``expected``: None when the step succeeds, else (outcome, Kafka's exception class): ``invalid`` is an
InvalidRecordException (recovery truncates after the batch), ``unhandled`` anything ``recover()`` does not
catch (the broker fails to load the log). ``tests/interop/test_control_step_interop.py`` runs the same
bytes through kafka-clients 3.9.1's own ``batch.iterator()`` and ``EndTransactionMarker.deserialize``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkatool.record.codecs import Codec, compress
from kafkatool.record.default_records import crc32c
from tests.support.paths import VECTORS

VECTOR = VECTORS / "reindex" / "txn-0" / "00000000000000000100.log"
MARKER_AT = 2196
MARKER = VECTOR.read_bytes()[MARKER_AT:MARKER_AT + 78]
RECORD = MARKER[61:]
assert RECORD == bytes.fromhex("2000000008000000000c00000000000000")


def zigzag(n: int) -> bytes:
    v = (n << 1) ^ (n >> 31)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def record(key: bytes | None, value: bytes | None, *, extra: bytes = b"") -> bytes:
    """One v2 record with zero deltas and no headers (``DefaultRecord.writeTo``)."""
    body = b"\x00\x00\x00"  # attributes, timestamp delta, offset delta
    body += zigzag(-1) if key is None else zigzag(len(key)) + key
    body += zigzag(-1) if value is None else zigzag(len(value)) + value
    body += b"\x00" + extra  # header count
    return zigzag(len(body)) + body


def rewrite(*, records: bytes | None = None, count: int | None = None, producer_id: int | None = None,
            codec: int = 0, compressed: bool = False) -> bytes:
    """The marker with another records area / count / producer id / codec, its size and CRC fixed
    (``compressed``: the records area is already the codec's bytes, or not, as given)."""
    b = bytearray(MARKER[:61])
    body = RECORD if records is None else records
    if codec:
        if not compressed:
            body = compress(Codec(codec), body)
        struct.pack_into(">h", b, 21, struct.unpack_from(">h", b, 21)[0] | codec)
    if count is not None:
        struct.pack_into(">i", b, 57, count)
    if producer_id is not None:
        struct.pack_into(">q", b, 43, producer_id)
    out = bytes(b) + body
    out = out[:8] + struct.pack(">i", len(out) - 12) + out[12:]
    crc = crc32c(out[21:])
    return out[:17] + struct.pack(">I", crc) + out[21:]


KEY_ABORT = bytes.fromhex("00000000")
VALUE = bytes.fromhex("000000000000")


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    batch: bytes
    expected: tuple[str, str] | None


INVALID = ("invalid", "InvalidRecordException")
CASES = [
    Case("kafka-marker", MARKER, None),
    Case("commit-marker", rewrite(records=record(bytes.fromhex("00000001"), VALUE)), None),
    Case("empty-control-batch", rewrite(records=b"", count=0), None),
    Case("count-2-reads-only-the-first", rewrite(count=2), None),  # no "records still remaining" check
    Case("future-key-and-value-versions", rewrite(records=record(bytes.fromhex("00070001"),
                                                                 bytes.fromhex("0003000000090000"))), None),
    Case("no-producer-id-not-parsed", rewrite(records=record(bytes.fromhex("ffff0000"), VALUE), producer_id=-1),
         None),
    Case("gzip-marker", rewrite(codec=1), None),
    Case("key-version-negative", rewrite(records=record(bytes.fromhex("ffff0000"), VALUE)), INVALID),
    Case("key-3-bytes", rewrite(records=record(bytes.fromhex("000000"), VALUE)), INVALID),
    Case("value-4-bytes", rewrite(records=record(KEY_ABORT, bytes.fromhex("00000000"))), INVALID),
    Case("value-version-negative", rewrite(records=record(KEY_ABORT, bytes.fromhex("fffe00000009"))), INVALID),
    Case("record-count-negative", rewrite(count=-1), INVALID),
    Case("record-longer-than-the-batch", rewrite(records=b"\x7e" + RECORD[1:]), INVALID),
    Case("varint-cut-by-the-batch-end", rewrite(records=b"\x80"), INVALID),
    Case("trailing-bytes-after-the-only-record", rewrite(records=RECORD + b"\x00"), INVALID),
    Case("bad-header-count", rewrite(records=record(KEY_ABORT, VALUE, extra=b"")[:-1] + b"\x03"), INVALID),
    Case("gzip-marker-key-2-bytes", rewrite(records=record(b"\x00\x00", VALUE), codec=1), INVALID),
    Case("gzip-flag-on-plain-bytes", rewrite(codec=1, compressed=True), ("unhandled", "KafkaException")),
    Case("null-key", rewrite(records=record(None, VALUE)), ("unhandled", "NullPointerException")),
    Case("null-value", rewrite(records=record(KEY_ABORT, None)), ("unhandled", "NullPointerException")),
    Case("leader-change-type", rewrite(records=record(bytes.fromhex("00000002"), VALUE)),
         ("unhandled", "IllegalArgumentException")),
    Case("unknown-type", rewrite(records=record(bytes.fromhex("00000063"), VALUE)),
         ("unhandled", "IllegalArgumentException")),
    Case("length-varint-too-long", rewrite(records=b"\x80\x80\x80\x80\x80" + RECORD[1:]),
         ("unhandled", "IllegalArgumentException")),
]
