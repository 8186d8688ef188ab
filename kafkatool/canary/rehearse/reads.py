"""Consume a canary partition from the sandbox broker as one client would, and compare every record.

A reader fetches from the partition's first offset to the high watermark (read_committed: the last stable
offset), one request at a time, and applies the client's rules to each response's records
(``CompletedFetch``/``ByteBufferLogInputStream``, kafka-clients 3.9): only complete batches, every batch
CRC-checked, records below the fetch offset skipped, control records never returned; read_committed drops the
batches of the aborted transactions the broker lists, from each one's first offset to its ABORT marker. An old
reader (Fetch v0-v3) also checks that the broker converted: a batch newer than the format its Fetch version
reads is what that client cannot parse. The position moves past every complete batch; a response that moves it
not at all ends the read (a stall: a client would fetch the same offset forever).

The records read are merged with the expected ones (:mod:`.expected`) by offset: missing, extra and different
records are counted and the first ones described.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkatool.canary.clients import magic_for_fetch_version
from kafkatool.canary.rehearse import protocol as kp
from kafkatool.canary.rehearse.client import SandboxClient
from kafkatool.canary.rehearse.expected import Rec
from kafkatool.canary.wire import WireError
from kafkatool.errors import KafkaToolError
from kafkatool.fetch import FetchPartition
from kafkatool.record.batch import MAGIC_V2, ControlRecordType, TimestampType
from kafkatool.record.default_records import DefaultRecordBatch, parse_control_type
from kafkatool.record.file_records import iter_batches

_TS_NAMES = {int(t): t.label for t in TimestampType}


@dataclass(slots=True)
class ReadCheck:
    """One client's read of one partition, compared with the originals."""

    partition: str
    fetch_version: int
    isolation: str  # read_uncommitted / read_committed
    partition_max_bytes: int
    fetches: int = 0
    records: int = 0  # returned by the broker (after the client's rules)
    record_bytes: int = 0  # record bytes in the responses
    expected: int = 0
    compared: int = 0
    missing: int = 0
    extra: int = 0
    difference_count: int = 0
    differences: list[str] = field(default_factory=list)
    stop: str | None = None  # why the read ended before the high watermark, in the broker's terms
    stop_offset: int | None = None  # where it ended so
    expected_stop: str | None = None  # why the same client stops there with the originals too
    unreachable: int = 0  # records of the originals past an expected stop (that client reads them in neither)
    correlation_ids: list[int] = field(default_factory=list)  # the requests (the broker logs old ones)
    end_offset: int = -1  # the high watermark (or last stable offset) the broker reported

    @property
    def magic(self) -> int:
        return magic_for_fetch_version(self.fetch_version)

    @property
    def reader(self) -> str:
        if self.fetch_version <= 3:
            return f"Fetch v{self.fetch_version} (reads format v{self.magic})"
        return f"Fetch v{self.fetch_version} {self.isolation}"

    @property
    def ok(self) -> bool:
        return self.difference_count == 0

    def differ(self, text: str, limit: int) -> None:
        self.difference_count += 1
        if len(self.differences) < limit:
            self.differences.append(text)

    def as_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "reader": self.reader, "fetch_version": self.fetch_version,
                "isolation": self.isolation, "reads_format": self.magic, "ok": self.ok, "fetches": self.fetches,
                "records": self.records, "expected": self.expected, "compared": self.compared,
                "missing": self.missing, "extra": self.extra, "record_bytes": self.record_bytes,
                "difference_count": self.difference_count, "differences": self.differences, "stop": self.stop,
                "stop_offset": self.stop_offset, "expected_stop": self.expected_stop, "unreachable": self.unreachable,
                "end_offset": self.end_offset,
                "partition_max_bytes": self.partition_max_bytes}


@dataclass(frozen=True, slots=True)
class Target:
    topic: str
    partition: int
    start: int  # the first offset to fetch (the first segment's base offset)
    end: int | None = None  # stop there (default: the high watermark, or the last stable offset)


def served(client: SandboxClient, t: Target, check: ReadCheck) -> Iterator[Rec]:
    """The records the broker serves this client, fetch after fetch."""
    offset = t.start
    committed = check.isolation == "read_committed"
    while True:
        try:
            end, error, records, aborted = _fetch(client, t, check, offset, committed)
        except WireError as e:
            check.stop, check.stop_offset = f"at offset {offset}: {e.message}", offset
            return
        check.fetches += 1
        check.end_offset = end
        if error:
            check.stop, check.stop_offset = f"at offset {offset}: the broker answered {kp.error_text(error)}", offset
            return
        if offset >= end or (t.end is not None and offset >= t.end):
            return
        check.record_bytes += len(records)
        before = offset
        for rec, next_offset, problem in _walk(records, offset, check, aborted):
            if problem is not None:
                check.stop, check.stop_offset = problem, offset
                return
            if rec is not None:
                if t.end is not None and rec.offset >= t.end:
                    return
                check.records += 1
                yield rec
            offset = max(offset, next_offset)
        if offset == before:
            check.stop_offset = offset
            check.stop = (f"stalled at offset {offset} below the end {end}: the broker answered {len(records)} "
                          f"record bytes holding no complete batch at that offset (partition max bytes "
                          f"{check.partition_max_bytes})")
            return


def _fetch(client: SandboxClient, t: Target, check: ReadCheck, offset: int,
           committed: bool) -> tuple[int, int, bytes, list[tuple[int, int]]]:
    if check.fetch_version <= 3:
        cid, resp = client.old_fetch(check.fetch_version, FetchPartition(t.topic, t.partition, offset,
                                                                         check.partition_max_bytes))
        check.correlation_ids.append(cid)
        (p,) = resp.partitions
        return p.high_watermark, p.error_code, p.records or b"", []
    r = client.modern_fetch([kp.ModernFetch(t.topic, t.partition, offset, check.partition_max_bytes)],
                            isolation=kp.READ_COMMITTED if committed else kp.READ_UNCOMMITTED)
    if r.error_code:
        return -1, r.error_code, b"", []
    (m,) = r.partitions
    end = m.last_stable_offset if committed else m.high_watermark
    return end, m.error_code, m.records, sorted(m.aborted, key=lambda a: a[1])


def _walk(records: bytes, offset: int, check: ReadCheck, aborted: list[tuple[int, int]]
          ) -> Iterator[tuple[Rec | None, int, str | None]]:
    """(record or None, the position after it, a problem ending the read) for each complete batch's records."""
    aborted_pids: set[int] = set()
    pending = list(aborted)  # (producer id, first offset), by first offset
    max_magic = check.magic if check.fetch_version <= 3 else MAGIC_V2
    try:
        for b in iter_batches(records):
            where = f"Fetch v{check.fetch_version} at offset {offset}"
            b.ensure_valid()
            magic = int(b.magic)
            if magic > max_magic:
                yield None, offset, (f"at offset {offset}: the broker sent message format v{magic} to a Fetch "
                                     f"v{check.fetch_version} client, which reads format v{max_magic} at most: it "
                                     "was not down-converted")
                return
            if isinstance(b, DefaultRecordBatch):
                if check.isolation == "read_committed" and b.producer_id >= 0:
                    while pending and pending[0][1] <= b.last_offset:
                        aborted_pids.add(pending.pop(0)[0])
                    if b.is_control:
                        recs = b.records()
                        if recs and parse_control_type(recs[0].key) is ControlRecordType.ABORT:
                            aborted_pids.discard(int(b.producer_id))
                        yield None, int(b.last_offset) + 1, None
                        continue
                    if b.is_transactional and int(b.producer_id) in aborted_pids:
                        yield None, int(b.last_offset) + 1, None
                        continue
                ts_type = int(b.timestamp_type)
                control = b.is_control
                after = int(b.last_offset) + 1
            else:
                ts_type = int(b.timestamp_type)
                control = False
                after = -1
            for r in b.records():
                if r.offset < offset or control:
                    continue
                yield Rec(r.offset, r.timestamp, ts_type, r.key, r.value, tuple(r.headers), where), r.offset + 1, None
            if after > 0:
                yield None, after, None
    except KafkaToolError as e:
        yield None, offset, f"at offset {offset}: the broker's response holds a batch that does not read: {e}"


def _describe(v: object, field_name: str) -> str:
    if field_name == "timestamp_type" and isinstance(v, int):
        return _TS_NAMES.get(v, str(v))
    if isinstance(v, bytes):
        text = v[:40].decode("utf-8", "backslashreplace")
        return repr(text + ("..." if len(v) > 40 else "")) + f" ({len(v)} bytes)"
    return repr(v)


_FIELDS = ("timestamp", "timestamp_type", "key", "value", "headers")


StopJudge = Callable[[ReadCheck], str | None]


def compare(expected: Iterator[Rec], actual: Iterator[Rec], check: ReadCheck, *, limit: int = 20,
            judge_stop: StopJudge | None = None) -> None:
    """Merge both streams by offset into ``check``: missing ranges, extra records, the first differing field.
    When the read stopped early, ``judge_stop`` says whether the same client stops there with the originals too
    (then the records past it are unreachable in both, not missing)."""
    run: list[int] = []
    judged = False

    def flush() -> None:
        if run:
            span = f"offset {run[0]}" if len(run) == 1 else f"offsets {run[0]}..{run[-1]}"
            check.differ(f"{span} ({len(run)} record(s)) in the originals but not served", limit)
            run.clear()

    e = next(expected, None)
    a = next(actual, None)
    while e is not None or a is not None:
        if a is None or (e is not None and e.offset < a.offset):
            assert e is not None
            if a is None and not judged:
                judged = True
                if check.stop_offset is not None and judge_stop is not None:
                    check.expected_stop = judge_stop(check)
            if a is None and check.expected_stop is not None and e.offset >= (check.stop_offset or 0):
                check.unreachable += 1
                e = next(expected, None)
                continue
            check.expected += 1
            check.missing += 1
            run.append(e.offset)
            e = next(expected, None)
            continue
        flush()
        if e is None or a.offset < e.offset:
            check.extra += 1
            check.differ(f"offset {a.offset}: served ({a.where}) but not in the originals", limit)
            a = next(actual, None)
            continue
        check.expected += 1
        check.compared += 1
        for f in _FIELDS:
            ev, av = getattr(e, f), getattr(a, f)
            if ev != av:
                check.differ(f"offset {a.offset}: {f} {_describe(ev, f)} in the originals ({e.where}), "
                             f"{_describe(av, f)} served ({a.where})", limit)
                break
        e = next(expected, None)
        a = next(actual, None)
    flush()
