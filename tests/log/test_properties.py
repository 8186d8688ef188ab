"""Property tests for the readers of a partition dir's other files and of FetchResponse bytes: every encoder
round-trips through its reader, and arbitrary bytes (random, or a valid file with bytes overwritten, cut or
appended) give either a value or a KafkaToolError that names a byte position inside the input, never another
exception (issue 9: "every parser entry point is fuzzed")."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool.errors import KafkaToolError
from kafkatool.fetch.response import ParsedPartition, PartitionHeader, framing, parse_response
from kafkatool.log import checkpoints, index, snapshot, txn_index
from kafkatool.log.checkpoints import EpochEntry
from kafkatool.log.index import OffsetPosition, TimestampOffset
from kafkatool.log.layout import TopicPartition
from kafkatool.log.snapshot import ProducerSnapshotEntry
from kafkatool.log.txn_index import AbortedTxn

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BASE = 100
I16 = st.integers(-(2**15), 2**15 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
U31 = st.integers(0, 2**31 - 1)
OFF = st.integers(BASE, BASE + 2**31 - 1)
_DIR = Path(tempfile.mkdtemp(prefix="kafkatool-props-"))


def _file(name: str, data: bytes) -> Path:
    p = _DIR / name
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------------------------------- round trips

@SETTINGS
@given(st.lists(st.tuples(st.integers(1, 2**31 - 1), U31), max_size=40))
def test_offset_index_round_trip(pairs):
    entries = [OffsetPosition(BASE + rel, pos) for rel, pos in pairs]
    got = index.read_offset_index(_file("00000000000000000100.index", index.encode_offset_index(entries, BASE)))
    assert got.entries == entries and got.padding_slots == 0 and got.partial_bytes == 0


@SETTINGS
@given(st.lists(st.tuples(I64, st.integers(1, 2**31 - 1)), min_size=1, max_size=40), st.integers(0, 20))
def test_time_index_round_trip_with_padding(pairs, pad):
    # Zero slots after the entries are a preallocated index's padding (slot 0 is always an entry, as in Kafka).
    entries = [TimestampOffset(ts, BASE + rel) for ts, rel in pairs]
    data = index.encode_time_index(entries, BASE) + bytes(pad * index.TIME_ENTRY_SIZE)
    got = index.read_time_index(_file("00000000000000000100.timeindex", data))
    assert got.entries == entries and got.padding_slots == pad and got.padding_all_zero


@SETTINGS
@given(st.lists(st.builds(AbortedTxn, I64, I64, I64, I64, st.just(0)), max_size=30))
def test_txn_index_round_trip(entries):
    assert txn_index.read_txn_index(_file("00000000000000000100.txnindex", txn_index.encode_txn_index(entries))) \
        == entries


@SETTINGS
@given(st.lists(st.builds(ProducerSnapshotEntry, I64, I16, I32, I64, I32, I64, I32, I64), max_size=30))
def test_snapshot_round_trip(entries):
    assert snapshot.read_snapshot(_file("00000000000000000100.snapshot", snapshot.encode_snapshot(entries))) == entries


TOPIC = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF, blacklist_categories=("Z", "C")),
                min_size=1, max_size=30)


@SETTINGS
@given(st.dictionaries(st.builds(TopicPartition, TOPIC, U31), I64, max_size=20),
       st.lists(st.builds(EpochEntry, U31, I64), max_size=20))
def test_checkpoint_round_trips(offsets, epochs):
    assert checkpoints.read_offset_checkpoint(
        _file("recovery-point-offset-checkpoint", checkpoints.encode_offset_checkpoint(offsets))) == offsets
    assert checkpoints.read_leader_epoch_checkpoint(
        _file("leader-epoch-checkpoint", checkpoints.encode_leader_epoch_checkpoint(epochs))) == epochs


@SETTINGS
@given(st.binary(min_size=16, max_size=16))
def test_partition_metadata_round_trip(raw):
    topic_id = checkpoints.topic_id_from_bytes(raw)
    got = checkpoints.read_partition_metadata(_file("partition.metadata",
                                                    checkpoints.encode_partition_metadata(topic_id)))
    assert (got.version, got.topic_id) == (0, topic_id)


PARTITION = st.tuples(st.sampled_from(["orders", "t", "päyments", "x" * 40]), U31, I16, I64,
                      st.one_of(st.none(), st.binary(max_size=64)))


def _response(version: int, corr: int, throttle: int, parts: list[tuple[Any, ...]]) -> bytes:
    heads = [PartitionHeader(t, p, e, hw, -1 if r is None else len(r)) for t, p, e, hw, r in parts]
    out = b""
    for piece in framing(version, corr, throttle, heads):
        out += parts[piece][4] if isinstance(piece, int) else piece
    return out


@SETTINGS
@given(st.integers(0, 3), I32, I32, st.lists(PARTITION, max_size=8))
def test_fetch_response_framing_round_trip(version, corr, throttle, parts):
    data = _response(version, corr, throttle, parts)
    got = parse_response(data, version)
    assert (got.size, got.correlation_id) == (len(data) - 4, corr)
    assert got.throttle_time_ms == (throttle if version >= 1 else None)
    # An empty records area is framed with size 0 and parses as b"" (Kafka: an empty MemoryRecords).
    assert list(got.partitions) == [ParsedPartition(t, p, e, hw, r) for t, p, e, hw, r in parts]


# ------------------------------------------------------------------- arbitrary bytes: a value or a located error

def _valid_files() -> dict[str, bytes]:
    return {
        "00000000000000000100.index": index.encode_offset_index([OffsetPosition(105, 0), OffsetPosition(130, 4096)],
                                                                BASE),
        "00000000000000000100.timeindex": index.encode_time_index(
            [TimestampOffset(1_700_000_000_000, 105), TimestampOffset(1_700_000_060_000, 130)], BASE),
        "00000000000000000100.txnindex": txn_index.encode_txn_index([AbortedTxn(7, 100, 120, 100),
                                                                     AbortedTxn(8, 121, 130, 121)]),
        "00000000000000000100.snapshot": snapshot.encode_snapshot(
            [ProducerSnapshotEntry(7, 0, 9, 120, 9, 1_700_000_000_000, 0, -1)]),
        "recovery-point-offset-checkpoint": checkpoints.encode_offset_checkpoint(
            {TopicPartition("orders", 0): 42, TopicPartition("orders", 1): 7}),
        "leader-epoch-checkpoint": checkpoints.encode_leader_epoch_checkpoint([EpochEntry(0, 0), EpochEntry(3, 90)]),
        "partition.metadata": checkpoints.encode_partition_metadata("AAAAAAAAAAAAAAAAAAAAAA"),
    }


READERS: dict[str, list[Callable[[Path], object]]] = {
    "00000000000000000100.index": [index.read_offset_index, index.offset_index_sanity_check],
    "00000000000000000100.timeindex": [index.read_time_index, index.time_index_sanity_check],
    "00000000000000000100.txnindex": [txn_index.read_txn_index, txn_index.txn_index_sanity_check],
    "00000000000000000100.snapshot": [snapshot.read_snapshot],
    "recovery-point-offset-checkpoint": [checkpoints.read_offset_checkpoint],
    "leader-epoch-checkpoint": [checkpoints.read_leader_epoch_checkpoint],
    "partition.metadata": [checkpoints.read_partition_metadata, checkpoints.read_properties],
}
VALID = _valid_files()


@st.composite
def hostile(draw: st.DrawFn, valid: bytes) -> bytes:
    """Random bytes, or the valid file with bytes overwritten, cut short or garbage appended."""
    how = draw(st.sampled_from(["random", "overwrite", "cut", "append", "text"]))
    if how == "random":
        return draw(st.binary(max_size=300))
    if how == "text":
        alphabet = st.sampled_from(list(b"0123456789 -+_\n\r\t:=abcxyz\x00\xff\xc3\x0b"))
        return bytes(draw(st.lists(alphabet, max_size=120)))
    data = bytearray(valid)
    if how == "cut":
        return bytes(data[:draw(st.integers(0, len(data)))])
    if how == "append":
        return bytes(data) + draw(st.binary(min_size=1, max_size=40))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.integers(0, 255))
    return bytes(data)


def _value_or_located_error(read: Callable[[Path], object], path: Path, size: int) -> None:
    try:
        read(path)
    except KafkaToolError as e:
        assert e.position is not None and 0 <= e.position <= size, (read.__name__, e.position, str(e))
        assert e.path == str(path) and str(e).startswith(f"{path} at byte {e.position}: "), str(e)


@SETTINGS
@given(st.data())
def test_arbitrary_file_bytes_give_a_value_or_a_located_error(data):
    name = data.draw(st.sampled_from(sorted(READERS)))
    raw = data.draw(hostile(VALID[name]))
    path = _file(name, raw)
    for read in READERS[name]:
        _value_or_located_error(read, path, len(raw))


def test_the_valid_files_read_cleanly():
    # The mutations start from files every reader accepts (so a mutation that changes nothing is a value).
    for name, readers in READERS.items():
        for read in readers:
            read(_file(name, VALID[name]))


VALID_RESPONSE = _response(3, 7, 0, [("orders", 0, 0, 42, b"x" * 20), ("orders", 1, 0, 9, None),
                                     ("t", 0, 3, -1, b"")])


@SETTINGS
@given(st.integers(0, 3), st.data())
def test_arbitrary_fetch_response_bytes_give_a_value_or_a_located_error(version, data):
    raw = data.draw(hostile(VALID_RESPONSE))
    if data.draw(st.booleans()) and len(raw) >= 4:  # a correct size prefix: the parser goes past it
        raw = (len(raw) - 4).to_bytes(4, "big") + raw[4:]
    try:
        parse_response(raw, version)
    except KafkaToolError as e:
        assert e.position is not None and 0 <= e.position <= len(raw), (e.position, str(e))
