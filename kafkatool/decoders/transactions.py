"""``__transaction_state`` records, printed as Kafka 3.9's ``kafka-dump-log.sh --transaction-log-decoder``.

Kafka 3.9 ``TransactionLog.formatRecordKeyAndValue`` (core/src/main/scala/kafka/coordinator/transaction):

* key: int16 version; version 0 is ``TransactionLogKey`` -> ``transaction_metadata::transactionalId=<id>``;
  any other version is an ``UnknownKey`` -> ``unknown::version=<v>`` and no payload;
* value: ``<DELETE>`` for a tombstone, else int16 version 0-1 (1 is flexible, KIP-915) of
  ``TransactionLogValue`` as
  ``producerId:<pid>,producerEpoch:<e>,state=<State>,partitions=[t-p,...],txnLastUpdateTimestamp=<ts>,txnTimeoutMs=<ms>``;
* the partitions are ``TransactionMetadata.topicPartitions``, a Scala 2.13 ``mutable.HashSet`` filled one
  ``PartitionsSchema`` at a time, printed by ``mkString("[", ",", "]")``: their order is the hash set's
  bucket order, reproduced by :func:`scala_hash_set_order` (the Empty state keeps no partitions);
* what makes Kafka throw (and kafka-dump-log stop) -- a missing key, a value version other than 0/1, an
  unknown state id, a non-Empty state with null partitions, a short buffer -- raises
  :class:`TransactionLogError` with the Java exception's message.

``TransactionLogKey``/``TransactionLogValue`` are transcribed from
``core/src/main/resources/common/message/TransactionLog{Key,Value}.json`` (3.9); the tagged fields a
``transaction.version`` >= 1 coordinator (4.0+, KIP-890) may add to version 1 are skipped as unknown
tags, as 3.9 does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from kafkatool.decoders.message import (
    ArrayOf,
    F,
    MessageError,
    MessageSpec,
    StructSpec,
    java_string_hash,
    read_message,
    version_prefixed,
    write_message,
)
from kafkatool.errors import InvalidRecordError

TRANSACTION_LOG_KEY = MessageSpec.of("TransactionLogKey", "0", "none", [
    F("transactionalId", "string", "0"),
])
_PARTITIONS_SCHEMA = StructSpec("PartitionsSchema", (
    F("Topic", "string", "0+"),
    F("PartitionIds", ArrayOf("int32"), "0+"),
))
TRANSACTION_LOG_VALUE = MessageSpec.of("TransactionLogValue", "0-1", "1+", [
    F("ProducerId", "int64", "0+"),
    F("ProducerEpoch", "int16", "0+"),
    F("TransactionTimeoutMs", "int32", "0+"),
    F("TransactionStatus", "int8", "0+"),
    F("TransactionPartitions", ArrayOf(_PARTITIONS_SCHEMA), "0+", nullable="0+"),
    F("TransactionLastUpdateTimestampMs", "int64", "0+"),
    F("TransactionStartTimestampMs", "int64", "0+"),
])

#: ``TransactionState.fromId`` (3.9 Scala case objects; ``toString`` is the object name).
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                      "Dead", "PrepareEpochFence")
DELETE = "<DELETE>"


class TransactionLogError(InvalidRecordError):
    """A ``__transaction_state`` record that makes Kafka's formatter throw."""


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``: 31 * (31 + partition) + topic.hashCode(), as a Java int."""
    h = (31 * (31 + partition) + java_string_hash(topic)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _table_size_for(capacity: int) -> int:
    """Scala 2.13 ``mutable.HashSet.tableSizeFor``."""
    n = max(capacity - 1, 4)
    return min((1 << (n.bit_length() - 1)) * 2, 1 << 30)


def scala_hash_set_order(groups: Iterable[Sequence[tuple[str, int]]]) -> list[tuple[str, int]]:
    """Iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` after ``++=`` of each group.

    The set keeps each bucket's chain sorted by the improved hash (``h ^ (h >>> 16)``) and iterates the
    buckets in index order, so the order depends only on the final table length. The table starts at 16
    (load factor 0.75); ``addAll`` first calls ``sizeHint(group size)``, then adds: one at a time with the
    usual growth for up to 4 elements (``Set1``..``Set4``), without growth checks for a larger immutable
    ``HashSet``.
    """
    table_len = 16
    threshold = 12
    members: dict[tuple[str, int], int] = {}
    for group in groups:
        unique = list(dict.fromkeys(group))  # the group is a .toSet
        target = _table_size_for(int((len(unique) + 1) / 0.75))
        if target > table_len:
            table_len, threshold = target, int(target * 0.75)
        for tp in unique:
            if len(unique) <= 4 and len(members) + 1 >= threshold:
                table_len *= 2  # add(): the growth check comes before the membership test
                threshold = int(table_len * 0.75)
            if tp in members:
                continue
            h = topic_partition_hash(*tp) & 0xFFFFFFFF
            improved = h ^ (h >> 16)
            members[tp] = improved - (1 << 32) if improved & 0x80000000 else improved
    # Buckets in index order; a chain is sorted by the (signed) improved hash, ties in insertion order.
    order = sorted(enumerate(members.items()), key=lambda e: (e[1][1] & (table_len - 1), e[1][1], e[0]))
    return [tp for _, (tp, _) in order]


def decode_transaction_record(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """The (key, payload) texts ``TransactionLog.formatRecordKeyAndValue`` gives a record."""
    if key is None:
        raise TransactionLogError(f"record at offset {offset} has no key: Kafka's transaction log decoder "
                                  "throws NullPointerException")
    try:
        return _format(key, value)
    except MessageError as e:
        raise TransactionLogError(f"record at offset {offset}: {e}") from e


def _format(key: bytes, value: bytes | None) -> tuple[str | None, str | None]:
    if len(key) < 2:
        raise MessageError(None)
    key_version = struct.unpack_from(">h", key)[0]
    if key_version != 0:
        return f"unknown::version={key_version}", None
    transactional_id = read_message(TRANSACTION_LOG_KEY, key, 0, 2)[0]["transactionalId"]
    key_text = f"transaction_metadata::transactionalId={transactional_id}"
    if value is None:
        return key_text, DELETE
    if len(value) < 2:
        raise MessageError(None)
    version = struct.unpack_from(">h", value)[0]
    if version not in (0, 1):
        raise MessageError(f"Unknown version {version} from the transaction log message value")
    v = read_message(TRANSACTION_LOG_VALUE, value, version, 2)[0]
    status = v["TransactionStatus"]
    if not 0 <= status < len(TRANSACTION_STATES):
        raise MessageError(f"Unknown transaction state id {status} from the transaction status message")
    state = TRANSACTION_STATES[status]
    partitions: list[tuple[str, int]] = []
    if state != "Empty":
        if v["TransactionPartitions"] is None:
            raise MessageError("null TransactionPartitions in a non-Empty state (NullPointerException)")
        partitions = scala_hash_set_order(
            [(p["Topic"], pid) for pid in p["PartitionIds"]] for p in v["TransactionPartitions"])
    parts = ",".join(f"{t}-{p}" for t, p in partitions)
    return key_text, (f"producerId:{v['ProducerId']},producerEpoch:{v['ProducerEpoch']},state={state},"
                      f"partitions=[{parts}],txnLastUpdateTimestamp={v['TransactionLastUpdateTimestampMs']},"
                      f"txnTimeoutMs={v['TransactionTimeoutMs']}")


def transaction_record(transactional_id: str, *, producer_id: int, producer_epoch: int, timeout_ms: int, state: str,
                       partitions: dict[str, list[int]], last_update_timestamp: int, start_timestamp: int = -1,
                       value_version: int = 0) -> tuple[bytes, bytes]:
    """(key, value) as ``TransactionLog.keyToBytes``/``valueToBytes`` (v0: ``transaction.version`` 0)."""
    key = struct.pack(">h", 0) + write_message(TRANSACTION_LOG_KEY, {"transactionalId": transactional_id}, 0)
    status = TRANSACTION_STATES.index(state)
    value = version_prefixed(TRANSACTION_LOG_VALUE, {
        "ProducerId": producer_id, "ProducerEpoch": producer_epoch, "TransactionTimeoutMs": timeout_ms,
        "TransactionStatus": status,
        # Empty is written with null partitions (valueToBytes).
        "TransactionPartitions": None if state == "Empty" else [
            {"Topic": t, "PartitionIds": p} for t, p in partitions.items()],
        "TransactionLastUpdateTimestampMs": last_update_timestamp, "TransactionStartTimestampMs": start_timestamp,
    }, value_version)
    return key, value
