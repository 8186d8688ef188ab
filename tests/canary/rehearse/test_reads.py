"""kafkatool.canary.rehearse.reads and .expected: a client's rules applied to a broker's answers (read_committed's
aborted transactions, control records, the stop of an old client), and the record-by-record comparison."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafkatool.canary.rehearse import expected as ex
from kafkatool.canary.rehearse import protocol as kp
from kafkatool.canary.rehearse.expected import Rec
from kafkatool.canary.rehearse.reads import ReadCheck, Target, compare, served
from kafkatool.fetch import FetchPartition, ParsedPartition, ParsedResponse
from kafkatool.record.batch import ControlRecordType, Header
from kafkatool.record.default_records import build_batch, build_control_batch, end_txn_marker_value

TS = 1_700_000_000_000


def _txn(offsets: range, pid: int) -> bytes:
    return build_batch([(o, TS + o, f"k{o}".encode(), f"v{o}".encode(), [("h", b"x")]) for o in offsets],
                       producer_id=pid, producer_epoch=0, base_sequence=0, is_transactional=True)


def _marker(offset: int, pid: int, commit: bool) -> bytes:
    return build_control_batch(offset=offset, timestamp=TS, producer_id=pid, producer_epoch=0, is_transactional=True,
                               control_type=ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                               value=end_txn_marker_value(0))


# pid 1 aborts 0-2, pid 2 commits 3-4, a plain record at 7, pid 3 opens a transaction at 8 and never ends it
LOG = b"".join([_txn(range(0, 3), 1), _txn(range(3, 5), 2), _marker(5, 1, False), _marker(6, 2, True),
                build_batch([(7, TS + 7, b"k7", b"v7", [])]), _txn(range(8, 10), 3)])


class FakeBroker:
    """Answers fetches from one in-memory log as a broker would at KIP-74 granularity: whole batches from the one
    holding the fetch offset, up to the partition max bytes (at least one)."""

    def __init__(self, data: bytes, lso: int) -> None:
        from kafkatool.record.file_records import iter_batches

        self.batches = [(b.position, b.size, int(b.last_offset)) for b in iter_batches(data)]
        self.data, self.hw, self.lso = data, self.batches[-1][2] + 1, lso
        self.sent: list[int] = []

    def _slice(self, offset: int, max_bytes: int) -> bytes:
        out = b""
        for pos, size, last in self.batches:
            if last >= offset and (not out or len(out) + size <= max_bytes):
                out += self.data[pos:pos + size]
        return out

    def modern_fetch(self, parts: list[kp.ModernFetch], *, isolation: int) -> kp.ModernFetchResponse:
        (p,) = parts
        end = self.lso if isolation == kp.READ_COMMITTED else self.hw
        data = self._slice(p.fetch_offset, p.partition_max_bytes)
        if isolation == kp.READ_COMMITTED:
            data = b"".join(self.data[pos:pos + size] for pos, size, last in self.batches
                            if last >= p.fetch_offset and last < end)
        return kp.ModernFetchResponse(0, (kp.FetchedPartition(p.topic, p.partition, 0, self.hw, self.lso, 0,
                                                              ((1, 0),), data),))

    def old_fetch(self, version: int, part: FetchPartition) -> tuple[int, ParsedResponse]:
        self.sent.append(part.fetch_offset)
        data = b"\xff" * 8 + b"\x00\x00\x00\x63" if part.fetch_offset >= 5 else b""  # an overflow batch only
        return len(self.sent), ParsedResponse(0, 0, 0, (ParsedPartition(part.topic, part.partition, 0, self.hw,
                                                                           data),))


def _read(broker: Any, isolation: str, version: int = 11) -> tuple[ReadCheck, list[int]]:
    check = ReadCheck("t-0", version, isolation, 1 << 20)
    return check, [r.offset for r in served(broker, Target("t", 0, 0), check)]


def test_read_committed_drops_aborted_batches_and_markers_and_stops_at_the_lso():
    broker = FakeBroker(LOG, lso=8)
    check, offsets = _read(broker, "read_committed")
    assert offsets == [3, 4, 7] and check.stop is None and check.end_offset == 8
    check, offsets = _read(broker, "read_uncommitted")
    assert offsets == [0, 1, 2, 3, 4, 7, 8, 9]


def test_expected_views_from_the_originals(tmp_path: Path):
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(LOG)
    txns = ex.scan_transactions(part, [0], 1 << 20)
    assert txns.aborted == {1: [(0, 5)]} and txns.first_open == 8
    assert [r.offset for r in ex.committed(part, [0], 1 << 20, txns)] == [3, 4, 7]
    modern = list(ex.modern(part, [0], 1 << 20))
    assert [r.offset for r in modern] == [0, 1, 2, 3, 4, 7, 8, 9] and modern[0].headers == (Header("h", b"x"),)
    v0 = list(ex.old(part, [0], 1 << 20, 0))
    v1 = list(ex.old(part, [0], 1 << 20, 1))
    assert {(r.timestamp, r.timestamp_type, r.headers) for r in v0} == {(-1, -1, ())}
    assert [(r.timestamp, r.timestamp_type, r.headers) for r in v1[:1]] == [(TS, 0, ())]


def _rec(offset: int, value: bytes = b"v") -> Rec:
    return Rec(offset, TS, 0, b"k", value, (), f"at {offset}")


def _stream(*offsets: int) -> Iterator[Rec]:
    return iter([_rec(o) for o in offsets])


def test_compare_counts_missing_extra_and_different_records():
    check = ReadCheck("t-0", 11, "read_uncommitted", 1)
    actual = iter([_rec(0), _rec(2, b"changed"), _rec(9)])
    compare(_stream(0, 1, 2, 3, 4), actual, check)
    assert (check.compared, check.missing, check.extra, check.difference_count) == (2, 3, 1, 4)
    assert check.differences[0] == "offset 1 (1 record(s)) in the originals but not served"
    assert check.differences[1].startswith("offset 2: value 'v' (1 bytes) in the originals (at 2), 'changed'")
    assert "offsets 3..4 (2 record(s))" in check.differences[2] and "offset 9: served" in check.differences[3]
    assert not check.ok


def test_an_old_client_stopped_where_the_originals_stop_it_too_is_no_difference():
    broker = FakeBroker(LOG, lso=8)
    check = ReadCheck("t-0", 3, "read_uncommitted", 1 << 20)
    judged: list[int] = []

    def judge(c: ReadCheck) -> str | None:
        judged.append(c.stop_offset or -1)
        return "the originals stop it there too"

    compare(_stream(5, 6, 7), served(broker, Target("t", 0, 5), check), check, judge_stop=judge)
    assert check.stop is not None and check.stop.startswith("stalled at offset 5") and judged == [5]
    assert (check.ok, check.unreachable, check.missing) == (True, 3, 0)
    check = ReadCheck("t-0", 3, "read_uncommitted", 1 << 20)
    compare(_stream(5, 6, 7), served(broker, Target("t", 0, 5), check), check, judge_stop=lambda c: None)
    assert (check.ok, check.missing) == (False, 3)
