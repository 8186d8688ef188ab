"""``reindex-time``'s check gives the same verdicts with the compiled rules and answers as with numpy's.

The check's per-batch work runs in ``_speedups``: ``recover_rules`` (the index rules of each walked step of
headers) and ``answer_positions``/``answer_times`` (what each on-disk entry's lookup would meet). Each falls
back to numpy where it cannot be exact, and numpy is what it must equal, with every entry mask of the verdicts
computed (the side under test takes the shortcut for clean entries, ``_offset_entries_clean`` and
``_time_entries_clean``): on random segments (every magic, damage, offsets that go backwards, transaction markers)
with on-disk indexes that are rebuilt, rebuilt at another interval, or damaged (shuffled, shifted, duplicated, cut,
zero-padded), walked in many small steps.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool.log.recovery import fast as recover_fast
from kafkatool.log.recovery import recover_segment
from kafkatool.reindex import verify
from kafkatool.reindex.engine import ReindexOptions, SegmentTask, check_segment, result_records
from kafkatool.reindex.verify import OffsetEntriesCheck, TimeEntriesCheck
from tests.log.test_recovery_fast import random_segment
from tests.support.segments import T0, v2_sized, write_segment
from tests.support.speedups import dispatching_to

SP = recover_fast._C  # None under KAFKATOOL_PURE=1: the test then compares numpy with itself (and says so below)
ANSWERS = ("kafkatool.reindex.verify",)


def damaged(raw: bytes, entry: int, rng: random.Random) -> bytes:
    """An index file's bytes, damaged the ways the check classifies (or left alone)."""
    entries = [raw[i:i + entry] for i in range(0, len(raw) - len(raw) % entry, entry)]
    how = rng.random()
    if entries and how < 0.15:
        rng.shuffle(entries)
    elif entries and how < 0.3:
        i = rng.randrange(len(entries))
        e = bytearray(entries[i])
        e[rng.randrange(entry)] ^= 1 << rng.randrange(8)  # a flipped bit: offset, position or timestamp
        entries[i] = bytes(e)
    elif entries and how < 0.4:
        i = rng.randrange(len(entries))
        entries.insert(i, entries[i])
    elif entries and how < 0.5:
        del entries[rng.randrange(len(entries)):]
    out = b"".join(entries)
    if rng.random() < 0.1:
        out += bytes(entry * rng.randint(1, 3))  # preallocated, never trimmed
    if rng.random() < 0.05:
        out += b"\x01\x02"  # a torn entry
    return out


def numpy_all_the_way(m: pytest.MonkeyPatch) -> None:
    """No compiled rules, and every entry mask of the verdicts computed (not the clean-entries shortcut)."""
    m.setattr(recover_fast._Builder, "feed_compiled", lambda *args: None)
    m.setattr(recover_fast._Builder, "hop_compiled", lambda *args: None)
    m.setattr(verify, "_offset_entries_clean", lambda *args: False)
    m.setattr(verify, "_time_entries_clean", lambda *args: False)


def verdicts(log: Path, base: int, size: int, interval: int, verify_crc: bool) -> list[dict[str, object]]:
    task = SegmentTask(log, base, size, False, "p-0")
    recs = result_records(check_segment(task, ReindexOptions(index_interval_bytes=interval, verify=verify_crc)))
    for r in recs:
        r.pop("seconds", None)
    return recs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), interval=st.sampled_from([0, 60, 500, 4096]),
       disk_interval=st.sampled_from([0, 100, 4096]), verify_crc=st.booleans(), hops=st.sampled_from([2, 3, 1024]))
def test_check_same_with_and_without(tmp_path_factory, monkeypatch, seed, interval, disk_interval, verify_crc, hops):
    if SP is None:
        pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    rng = random.Random(seed)
    base, data = random_segment(rng)
    log = write_segment(tmp_path_factory.mktemp("p"), base, data)
    r = recover_segment(log, base, index_interval_bytes=disk_interval)
    log.with_suffix(".index").write_bytes(damaged(r.encode_offset_index(), 8, rng))
    log.with_suffix(".timeindex").write_bytes(damaged(r.encode_time_index(), 12, rng))
    monkeypatch.setattr(recover_fast, "WINDOW", 4096)  # many steps, each its own compiled chunk
    monkeypatch.setattr(recover_fast, "HOPS_C", hops)
    monkeypatch.setattr(recover_fast, "PROBE_HOPS_C", min(hops, 2))
    monkeypatch.setattr(recover_fast, "HOP_ABOVE_C", 300)
    monkeypatch.setattr(recover_fast, "WINDOW_BELOW_C", 150)
    got = {}
    for mode in ("numpy", "compiled"):
        with monkeypatch.context() as m, dispatching_to(SP if mode == "compiled" else None, ANSWERS):
            if mode == "numpy":
                numpy_all_the_way(m)
            got[mode] = verdicts(log, base, len(data), interval, verify_crc)
    assert got["compiled"] == got["numpy"]


def answers(check: OffsetEntriesCheck | TimeEntriesCheck) -> list[list[int]]:
    if isinstance(check, OffsetEntriesCheck):
        return [check.is_start.tolist(), check.batch_last.tolist(), check.prior_max.tolist()]
    return [check.found.tolist(), check.batch_last.tolist(), check.prior_max_ts.tolist()]


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=60),
       lasts=st.lists(st.integers(-5, 300), min_size=60, max_size=60),
       mts=st.lists(st.integers(-3, 50), min_size=60, max_size=60),
       queries=st.lists(st.integers(-10, 2500), max_size=30), cuts=st.lists(st.integers(1, 59), max_size=4),
       sort=st.booleans())
def test_answers_same_with_and_without(sizes, lasts, mts, queries, cuts, sort):
    """The answers to any queries (unsorted, negative, past the end, repeated) over any chunking of any batches
    (offsets and timestamps in any order): the compiled merge equals numpy's searches."""
    if SP is None:
        pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    n = len(sizes)
    q = np.concatenate(([0], np.cumsum(sizes[:-1]))).astype(np.int64)
    sz = np.array(sizes, np.int64)
    last = np.array(lasts[:n], np.int64)
    ts = np.array(mts[:n], np.int64)
    keys = np.array(sorted(queries) if sort else queries, np.int64)
    bounds = [0, *sorted({c for c in cuts if c < n}), n]
    results = []
    for ext in (None, SP):
        with dispatching_to(ext, ANSWERS):
            oc, tc = OffsetEntriesCheck(keys.copy()), TimeEntriesCheck(keys.copy())
            for a, b in zip(bounds, bounds[1:], strict=False):
                chunk = recover_fast.BatchChunk(a, q[a:b], sz[a:b], np.full(b - a, 2, np.int8), last[a:b], ts[a:b])
                oc.feed(chunk)
                tc.feed(chunk)
            results.append((answers(oc), answers(tc), oc._carry, tc._carry_last, tc._carry_ts, tc._done))
    assert results[1] == results[0]


@pytest.mark.parametrize(("count", "size", "rules"), [
    (50, 20000, "hop_rules"),  # large batches: walked and judged in one compiled loop
    (50, 1000, "hop_rules"),  # fewer than the probe's hops: the same
    (300, 300, "recover_rules"),  # small ones: the probe, then windows of headers judged by recover_rules
])
def test_the_check_runs_the_compiled_paths(tmp_path, monkeypatch, count, size, rules):
    """Not a timing: on a clean segment the check's rules and answers all come from the extension, never numpy."""
    if SP is None:
        pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    log = write_segment(tmp_path / "p-0", 0, [v2_sized(i, size, ts=T0 + i) for i in range(count)])
    r = recover_segment(log, 0)
    log.with_suffix(".index").write_bytes(r.encode_offset_index())
    log.with_suffix(".timeindex").write_bytes(r.encode_time_index())
    calls: list[tuple[str, bool]] = []

    class Spy:
        def __getattr__(self, name: str) -> object:
            fn = getattr(SP, name)

            def call(*args: object) -> object:
                out = fn(*args)
                calls.append((name, out is not None))
                return out
            return call

    def numpy_rules(*args: object) -> None:
        raise AssertionError("the numpy rules ran")

    clean: list[bool] = []

    def spying(fn: Callable[..., bool]) -> Callable[..., bool]:
        def spy(*args: object) -> bool:
            clean.append(fn(*args))
            return clean[-1]
        return spy

    for name in ("_offset_entries_clean", "_time_entries_clean"):
        monkeypatch.setattr(verify, name, spying(getattr(verify, name)))
    monkeypatch.setattr(recover_fast._Builder, "feed", numpy_rules)
    with dispatching_to(Spy(), ("kafkatool.log.recovery.fast", *ANSWERS)):
        recs = verdicts(log, 0, log.stat().st_size, 4096, False)
    assert [r["status"] for r in recs if r["type"] == "index"] == ["ok", "ok"]
    ran = {name for name, _ in calls}
    assert {"hop_rules", rules, "answer_positions", "answer_times"} <= ran
    assert all(ok for name, ok in calls if name in ("hop_rules", "recover_rules", "answer_positions", "answer_times"))
    assert clean == [True, True]  # both verdicts by the shortcut, not the thirty masks


def v2_header(base: int, delta: int = 0, length: int = 100, epoch: int = -1, attributes: int = 0,
              max_ts: int = 5) -> bytes:
    """The first 43 bytes of a v2 batch, as the walk hands them to recover_rules."""
    return struct.pack(">qiibIhiqq", base, length, epoch, 2, 0, attributes, delta, max_ts, max_ts)


def rules(headers: bytes, *, pos0: int = 0, base: int = 0, last_index_entry: int = 0,
          outputs: tuple[bytearray, bytearray, bytearray] | None = None) -> object:
    assert SP is not None
    idx, tim, eps = outputs or (bytearray(), bytearray(), bytearray())
    return SP.recover_rules(headers, pos0, base, 0, 0, last_index_entry, -1, base, -1, base, None, 0, 0, -1,
                            idx, tim, eps, None)


def test_rules_refuse_what_numpy_must_judge():
    """Offsets that overflow int64 on the way (a crafted header), and positions or a last index entry out of any
    file's range: None, never C's undefined signed overflow. numpy then wraps and reports the batch."""
    if SP is None:
        pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    assert rules(v2_header(0, 3)) is not None
    assert rules(v2_header(2**63 - 3, 3)) is None  # base + lastOffsetDelta past INT64_MAX
    assert rules(v2_header(-(2**63)), base=100) is None  # lastOffset - segment base below INT64_MIN
    assert rules(v2_header(0), last_index_entry=-(2**63)) is None  # position - lastIndexEntry
    assert rules(v2_header(0) * 2, pos0=2**63 - 100) is None  # the next batch's position


def test_rules_append_all_of_their_output_or_none():
    """An output that cannot grow (here: exported) leaves the other outputs as they were, not half written."""
    if SP is None:
        pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    idx, tim, eps = bytearray(), bytearray(), bytearray()
    pinned = memoryview(tim)
    headers = v2_header(0, 0, epoch=3) + v2_header(1, 0, epoch=3)  # the second is an index point with a time entry
    assert rules(headers, outputs=(idx, tim, eps)) is None
    assert (idx, tim, eps) == (bytearray(), bytearray(), bytearray())
    pinned.release()
    r = rules(headers, outputs=(idx, tim, eps))
    assert r is not None and len(idx) == 16 and len(tim) == 16 and len(eps) == 16


def test_answers_take_only_native_int64():
    """Arrays of another dtype (big-endian fields straight from a header view, floats) go through numpy: the
    compiled merge would read their bytes as native int64."""
    keys = np.array([0, 30, 45], np.int64)
    chunk = recover_fast.BatchChunk(0, np.array([0, 30], ">i8"), np.array([30, 20], ">i8"), np.full(2, 2, np.int8),
                                    np.array([4, 9], ">i8"), np.array([7, 8], ">i8"))
    results = []
    for ext in (None, SP):
        with dispatching_to(ext, ANSWERS):
            oc, tc = OffsetEntriesCheck(keys.copy()), TimeEntriesCheck(np.array([3, 9], np.int64))
            oc.feed(chunk)
            tc.feed(chunk)
            results.append((answers(oc), answers(tc)))
    want = ([[True, True, False], [4, 9, 9], [-(2**63), 4, 4]], [[True, True], [4, 9], [-(2**63), 7]])
    assert results[0] == results[1] == want


def hostile_logs() -> list[Path]:
    from tests.support.paths import HOSTILE

    return sorted(p for p in HOSTILE.rglob("*.log") if p.is_file())


@pytest.mark.parametrize("log", hostile_logs(), ids=lambda p: p.name)
@pytest.mark.parametrize("verify_crc", [False, True])
def test_hostile_corpus_checks_the_same_with_and_without(log, verify_crc, tmp_path, monkeypatch):
    """The checked-in hostile segments (bombs, CRC damage, garbage, torn and fuzz-found files), each with the
    indexes a rebuild gives it where the walk gets that far: the same verdicts from the compiled rules and answers
    as from numpy's."""
    if SP is None:
        pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    copy = tmp_path / "p-0" / "00000000000000000000.log"
    copy.parent.mkdir()
    copy.write_bytes(log.read_bytes())
    r = recover_segment(copy, 0)
    copy.with_suffix(".index").write_bytes(r.encode_offset_index())
    copy.with_suffix(".timeindex").write_bytes(r.encode_time_index())
    got = {}
    for mode in ("numpy", "compiled"):
        with monkeypatch.context() as m, dispatching_to(SP if mode == "compiled" else None, ANSWERS):
            if mode == "numpy":
                numpy_all_the_way(m)
            got[mode] = verdicts(copy, 0, copy.stat().st_size, 4096, verify_crc)
    assert got["compiled"] == got["numpy"]
