"""What each consumer should read from a canary partition, derived from its originals (``W/originals``).

The originals are read as :mod:`kafkatool.canary.equivalence` reads them, as message format v2 keeps them (v0
records: timestamp -1, CreateTime), one segment and one batch at a time; each view is a stream in offset order:

* ``modern``: a Fetch v4+ consumer, read_uncommitted: every data record with its offset, timestamp, timestamp
  type, key, value and headers; control records (transaction markers) are never returned;
* ``committed``: the same consumer with read_committed: records of aborted transactions left out, and nothing
  from the first transaction that never ends in the log (the last stable offset stops there);
* ``old(magic)``: a Fetch v0-v3 consumer, which reads what the broker down-converts to ``magic``
  (``RecordsUtil.downConvert``): headers dropped, transaction markers dropped, aborted records returned (no
  isolation below Fetch v4), and with magic 0 no timestamp (-1, NoTimestampType). Where the broker stops such a
  client (a zstd batch, a batch over its fetch size, a segment ending in markers), :func:`old_stop` asks the fetch
  simulator whether the originals stop it at the same offset.

The transactions are found in a first pass (:func:`scan_transactions`) that keeps only aborted ranges and the
open ones, so no view holds more than one batch of records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkatool.canary.equivalence import Item, StreamStats, read_items
from kafkatool.errors import KafkaToolError
from kafkatool.fetch import FetchOptions, PartitionLog, PartitionRequest, error_name, simulate
from kafkatool.log.layout import PartitionDir
from kafkatool.record.batch import MAGIC_V0, ControlRecordType, Header, TimestampType
from kafkatool.record.default_records import parse_control_type

_NO_TIMESTAMP_TYPE = int(TimestampType.NO_TIMESTAMP_TYPE)


class Rec(NamedTuple):
    """A record as a consumer sees it."""

    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    where: str  # in the originals ("<file> at byte N"), or in the broker's response ("Fetch v3 at offset N")


@dataclass(slots=True)
class Transactions:
    """Aborted transactions by producer id: [(first offset, abort marker offset)], and the first offset of the
    earliest transaction with no marker in the log (None: every transaction ends)."""

    aborted: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    first_open: int | None = None

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        return any(a <= offset < b for a, b in self.aborted.get(producer_id, ()))


def _items(originals: Path, segments: list[int], max_message_bytes: int) -> Iterator[Item]:
    return read_items(originals, segments, StreamStats(), to_v2=True, max_message_bytes=max_message_bytes,
                      canary=False)


def scan_transactions(originals: Path, segments: list[int], max_message_bytes: int) -> Transactions:
    out = Transactions()
    open_: dict[int, int] = {}  # producer id -> first offset of its ongoing transaction
    for it in _items(originals, segments, max_message_bytes):
        if not it.transactional:
            continue
        if it.kind == "control":
            first = open_.pop(it.producer_id, None)
            if first is not None and parse_control_type(it.key) is ControlRecordType.ABORT:
                out.aborted.setdefault(it.producer_id, []).append((first, it.offset))
        elif it.producer_id not in open_:
            open_[it.producer_id] = it.offset
    if open_:
        out.first_open = min(open_.values())
    return out


def modern(originals: Path, segments: list[int], max_message_bytes: int) -> Iterator[Rec]:
    for it in _items(originals, segments, max_message_bytes):
        if it.kind == "record":
            yield Rec(it.offset, it.timestamp, it.timestamp_type, it.key, it.value, it.headers, it.where)


def committed(originals: Path, segments: list[int], max_message_bytes: int, txns: Transactions) -> Iterator[Rec]:
    for r, it in _with_items(originals, segments, max_message_bytes):
        if txns.first_open is not None and r.offset >= txns.first_open:
            return
        if it.transactional and txns.is_aborted(it.producer_id, r.offset):
            continue
        yield r


def _with_items(originals: Path, segments: list[int], max_message_bytes: int) -> Iterator[tuple[Rec, Item]]:
    for it in _items(originals, segments, max_message_bytes):
        if it.kind == "record":
            yield Rec(it.offset, it.timestamp, it.timestamp_type, it.key, it.value, it.headers, it.where), it


def old(originals: Path, segments: list[int], max_message_bytes: int, magic: int) -> Iterator[Rec]:
    """What a consumer of ``magic`` reads, record by record (where it stops: :func:`old_stop`)."""
    for r in modern(originals, segments, max_message_bytes):
        if magic == MAGIC_V0:
            yield r._replace(timestamp=-1, timestamp_type=_NO_TIMESTAMP_TYPE, headers=())
        else:
            yield r._replace(headers=())


def old_stop(originals: Path, fetch_version: int, offset: int, partition_max_bytes: int, log_magic: int) -> str | None:
    """Whether a Fetch ``fetch_version`` consumer is stopped at ``offset`` by the originals too, as the fetch
    simulator (Kafka 3.9's read and lazy down-conversion, byte for byte) answers it: why, or None when it reads on.

    Kafka stops old consumers in places whatever the canary holds: a zstd batch (UNSUPPORTED_COMPRESSION_TYPE,
    KIP-110), a batch larger than a Fetch v0-v2 request's partition max bytes (no KIP-74), a segment whose last
    batches are transaction markers (they convert to nothing: the client gets only an overflow batch)."""
    pd = PartitionDir.scan(originals)
    log = PartitionLog.from_partition_dir(pd)
    try:
        (plan,) = simulate(FetchOptions(fetch_version=fetch_version, partition_max_bytes=partition_max_bytes,
                                        log_magic=log_magic), [PartitionRequest(log, offset)])
    except KafkaToolError:
        return None
    c = plan.consumer
    if plan.error_code:
        return f"the originals answer {error_name(plan.error_code)} there too (fetch-sim)"
    if c is not None and c.records_returned == 0 and c.next_fetch_offset <= offset:
        return (f"the originals stop it there too (fetch-sim: {c.outcome}"
                + (f", {c.error}" if c.error else "") + ")")
    return None
