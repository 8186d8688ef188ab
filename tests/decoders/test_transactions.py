"""``__transaction_state`` decoding as Kafka 3.9's ``TransactionLog.formatRecordKeyAndValue``."""

from __future__ import annotations

import pytest

from kafkatool.decoders.message import java_string_hash, version_prefixed
from kafkatool.decoders.transactions import (
    TRANSACTION_LOG_KEY,
    TRANSACTION_LOG_VALUE,
    TransactionLogError,
    decode_transaction_record,
    scala_hash_set_order,
    topic_partition_hash,
)
from tests.support.paths import VECTORS

KEY = bytes.fromhex("0000" "0009") + b"my-txn-id"  # version 0, int16-length transactionalId

# A TransactionLogValue v1 (flexible) Ongoing record as a Kafka 4.0 coordinator with transaction.version=1
# wrote it, copied from a __transaction_state segment (published byte dump in a public repository's notes):
ONGOING_V1 = bytes.fromhex(
    "0001"                  # version 1
    "0000000000000000"      # ProducerId 0
    "0000"                  # ProducerEpoch 0
    "0000ea60"              # TransactionTimeoutMs 60000
    "01"                    # TransactionStatus 1 = Ongoing
    "02"                    # TransactionPartitions: compact array of 1
    "07" "747874657374"     #   Topic "txtest"
    "02" "00000000"         #   PartitionIds [0]
    "00"                    #   PartitionsSchema tagged fields
    "0000019e7b4b367a"      # TransactionLastUpdateTimestampMs
    "0000019e7b4b367a"      # TransactionStartTimestampMs
    "00"                    # tagged fields
)


def test_captured_v1_record() -> None:
    assert len(ONGOING_V1) == 48
    assert decode_transaction_record(KEY, ONGOING_V1, 1) == (
        "transaction_metadata::transactionalId=my-txn-id",
        "producerId:0,producerEpoch:0,state=Ongoing,partitions=[txtest-0],"
        "txnLastUpdateTimestamp=1780184987258,txnTimeoutMs=60000")


def test_v0_empty_state_and_tombstone() -> None:
    # TransactionLogValue v0: int16-length strings, int32 array lengths; Empty writes null partitions.
    value = bytes.fromhex("0000" "00000000000003e8" "0002" "0000ea60" "00" "ffffffff"
                          "0000018bcfe56800" "ffffffffffffffff")
    assert decode_transaction_record(KEY, value, 0) == (
        "transaction_metadata::transactionalId=my-txn-id",
        "producerId:1000,producerEpoch:2,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000000,"
        "txnTimeoutMs=60000")
    assert decode_transaction_record(KEY, None, 0) == ("transaction_metadata::transactionalId=my-txn-id", "<DELETE>")


@pytest.mark.parametrize("status,name", list(enumerate(
    ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
     "PrepareEpochFence"])))
def test_every_state_name(status: int, name: str) -> None:
    parts = [] if status == 0 else [{"Topic": "t", "PartitionIds": [1]}]
    value = version_prefixed(TRANSACTION_LOG_VALUE, {
        "ProducerId": 7, "ProducerEpoch": 1, "TransactionTimeoutMs": 100, "TransactionStatus": status,
        "TransactionPartitions": parts, "TransactionLastUpdateTimestampMs": 5, "TransactionStartTimestampMs": 4}, 0)
    _, text = decode_transaction_record(KEY, value, 0)
    assert text == (f"producerId:7,producerEpoch:1,state={name},partitions=[{'' if status == 0 else 't-1'}],"
                    "txnLastUpdateTimestamp=5,txnTimeoutMs=100")


def test_unknown_key_version() -> None:
    assert decode_transaction_record(bytes.fromhex("0001" "0001") + b"x", b"\x00\x00", 3) == (
        "unknown::version=1", None)


@pytest.mark.parametrize("key,value,message", [
    pytest.param(None, None, "has no key", id="no-key"),
    pytest.param(KEY, bytes.fromhex("0002") + bytes(40), "Unknown version 2 from the transaction log message value",
                 id="value-version-2"),
    pytest.param(KEY, version_prefixed(TRANSACTION_LOG_VALUE, {"TransactionStatus": 8}, 0),
                 "Unknown transaction state id 8 from the transaction status message", id="state-8"),
    pytest.param(KEY, version_prefixed(TRANSACTION_LOG_VALUE, {"TransactionStatus": 1,
                                                               "TransactionPartitions": None}, 0),
                 "null TransactionPartitions", id="null-partitions-ongoing"),
    pytest.param(KEY, ONGOING_V1[:20], r"record at offset 9: Error reading byte array of 6 byte\(s\): only 1 byte\(s\) "
                 "available", id="truncated-topic"),
    pytest.param(KEY, ONGOING_V1[:9], "record at offset 9: null", id="truncated-int64"),
])
def test_what_stops_kafka_is_an_error(key: bytes | None, value: bytes | None, message: str) -> None:
    with pytest.raises(TransactionLogError, match=message):
        decode_transaction_record(key, value, 9)


def test_java_hashes() -> None:
    assert java_string_hash("hello") == 99162322  # "hello".hashCode()
    assert java_string_hash("") == 0
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # over the UTF-16 surrogate pair
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # the classic Integer.MIN_VALUE hash
    assert topic_partition_hash("t", 1) == 31 * (31 + 1) + ord("t")


def _scala_vectors() -> list[tuple[list[list[tuple[str, int]]], str]]:
    """``GenScalaSetOrder.java``: Kafka's readTxnRecordValue set-building replayed on Scala 2.13's HashSet."""
    out = []
    for line in (VECTORS / "decoders" / "scala-2.13-hashset-order.txt").read_text(encoding="utf-8").splitlines():
        spec, printed = line.split("|")
        groups = []
        for group in spec.split(";"):
            topic, ids = group.rsplit(":", 1)
            groups.append([(topic, int(i)) for i in ids.split(",")])
        out.append((groups, printed))
    return out


@pytest.mark.parametrize("groups,printed", _scala_vectors())
def test_partition_order_is_scalas(groups: list[list[tuple[str, int]]], printed: str) -> None:
    assert "[" + ",".join(f"{t}-{p}" for t, p in scala_hash_set_order(groups)) + "]" == printed


def test_partition_order_through_the_decoder() -> None:
    groups, printed = _scala_vectors()[0]
    by_topic = [{"Topic": g[0][0], "PartitionIds": [p for _, p in g]} for g in groups]
    value = version_prefixed(TRANSACTION_LOG_VALUE, {"ProducerId": 1, "TransactionStatus": 2,
                                                     "TransactionPartitions": by_topic}, 1)
    _, text = decode_transaction_record(KEY, value, 0)
    assert text is not None and f"partitions={printed}," in text


def test_key_schema_round_trip() -> None:
    assert version_prefixed(TRANSACTION_LOG_KEY, {"transactionalId": "my-txn-id"}, 0) == KEY


def test_record_builder() -> None:
    from kafkatool.decoders.transactions import transaction_record
    k, v = transaction_record("my-txn-id", producer_id=1000, producer_epoch=2, timeout_ms=60000, state="Empty",
                              partitions={}, last_update_timestamp=1700000000000)
    assert k == KEY
    assert v.hex() == ("0000" "00000000000003e8" "0002" "0000ea60" "00" "ffffffff" "0000018bcfe56800"
                       "ffffffffffffffff")
    k, v = transaction_record("my-txn-id", producer_id=0, producer_epoch=0, timeout_ms=60000, state="Ongoing",
                              partitions={"txtest": [0]}, last_update_timestamp=1780184987258,
                              start_timestamp=1780184987258, value_version=1)
    assert v == ONGOING_V1  # byte-identical to the record a Kafka 4.0 coordinator wrote
