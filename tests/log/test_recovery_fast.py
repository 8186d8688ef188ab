"""The fast rebuild (windowed size walk + compiled or numpy rules) equals the reference per-batch loop, field for field.

Random segments mix every magic and codec, LogAppendTime, empty batches, non-monotonic offsets, leader
epochs and damage (torn tails, zero padding, flipped bytes), at random intervals, with and without
``verify``; the window, hop and chunk thresholds are shrunk so every boundary case is crossed often.
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool.log.recovery import fast as recover_fast
from kafkatool.log.recovery import recover_segment
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_empty_batch, build_end_txn_marker
from tests.support.segments import T0, legacy, v2, write_segment


def summary(r):
    return (r.index_offsets.tolist(), r.index_positions.tolist(), r.time_timestamps.tolist(),
            r.time_offsets.tolist(), r.valid_bytes, r.batches, r.last_offset, r.max_timestamp,
            r.offset_of_max_timestamp, r.epochs, r.magics, r.stop, r.fatal,
            None if r.error is None else (type(r.error).__name__, r.error.message, r.error.position))


def random_segment(rng: random.Random) -> tuple[int, bytes]:
    base = rng.choice([0, 0, 1000, 2**40])
    offset = base
    parts = []
    for _ in range(rng.randint(0, 40)):
        kind = rng.random()
        count = rng.randint(1, 5)
        ts = T0 + rng.randint(-50, 200)
        value = rng.choice([0, 5, 100, 1000, 3000, 9000])
        if rng.random() < 0.08:  # a v2 baseOffset is not covered by the CRC: offsets can go backwards
            offset = max(base, offset - rng.randint(1, 20))
        if kind < 0.15:
            parts.append(legacy(0, offset, count if rng.random() < 0.5 else 1, value=value,
                                codec=rng.choice([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4])))
        elif kind < 0.3:
            lat = T0 + rng.randint(0, 300) if rng.random() < 0.3 else None
            parts.append(legacy(1, offset, count if rng.random() < 0.5 else 1, ts=ts, value=value,
                                codec=rng.choice([Codec.NONE, Codec.GZIP, Codec.LZ4]), log_append_time=lat))
        elif kind < 0.33:  # a transaction marker: with verify, its producer-state check reads the whole batch
            parts.append(build_end_txn_marker(offset=offset, timestamp=ts, producer_id=7, producer_epoch=0,
                                              commit=rng.random() < 0.5, coordinator_epoch=rng.choice([0, 3]),
                                              partition_leader_epoch=rng.choice([-1, 0, 4])))
            count = 1
        elif kind < 0.35:
            parts.append(build_empty_batch(base_offset=offset, last_offset_delta=count, max_timestamp=ts,
                                           producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=False))
        else:
            lat = T0 + rng.randint(0, 300) if rng.random() < 0.2 else None
            parts.append(v2(offset, count, ts=[ts + rng.randint(-5, 5) for _ in range(count)], value=value,
                            codec=rng.choice(list(Codec)), log_append_time=lat,
                            partition_leader_epoch=rng.choice([-1, 0, 1, 2, 5])))
        offset += count + (rng.randint(1, 4) if rng.random() < 0.1 else 0)
    data = bytearray(b"".join(parts))
    damage = rng.random()
    if data and damage < 0.15:
        del data[rng.randrange(len(data)):]  # torn tail or short tail
    elif data and damage < 0.25:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)  # CRC damage (or a size/offset field)
    elif damage < 0.32:
        data += bytes(rng.randint(1, 5000))  # preallocated zeros
    return base, bytes(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), interval=st.sampled_from([0, 1, 60, 500, 4096, 20000]),
       verify=st.booleans(), window=st.sampled_from([4096, 6000, 1 << 20]), chunk=st.sampled_from([1, 7, 32768]),
       hop=st.sampled_from([300, 16 << 10]), rules=st.sampled_from(["fused", "compiled", "numpy"]))
def test_fast_equals_reference(tmp_path_factory, monkeypatch, seed, interval, verify, window, chunk, hop, rules):
    rng = random.Random(seed)
    base, data = random_segment(rng)
    path = write_segment(tmp_path_factory.mktemp("seg"), base, data)
    monkeypatch.setattr(recover_fast, "WINDOW", window)
    monkeypatch.setattr(recover_fast, "CHUNK_BATCHES", chunk)
    monkeypatch.setattr(recover_fast, "HOP_ABOVE", hop)
    monkeypatch.setattr(recover_fast, "WINDOW_BELOW", hop // 2)
    monkeypatch.setattr(recover_fast, "HOP_ABOVE_C", hop)  # the thresholds of the compiled loops
    monkeypatch.setattr(recover_fast, "WINDOW_BELOW_C", hop // 2)
    monkeypatch.setattr(recover_fast, "HOPS_C", 3)  # several compiled hopping steps per segment
    monkeypatch.setattr(recover_fast, "PROBE_HOPS_C", 2)  # the first hop, then the window or more hops
    if rules != "fused":  # hopping steps read headers (hop_walk), then apply the rules (recover_rules or numpy)
        monkeypatch.setattr(recover_fast._Builder, "hop_compiled", lambda *args: None)
    if rules == "numpy":  # the rules the compiled ones fall back to, on every batch
        monkeypatch.setattr(recover_fast._Builder, "feed_compiled", lambda *args: None)
    a = recover_segment(path, base, index_interval_bytes=interval, verify=verify, method="reference")
    b = recover_segment(path, base, index_interval_bytes=interval, verify=verify, method="fast")
    assert summary(b) == summary(a)


@pytest.mark.parametrize("size", [0, 1, 17, 18, 60, 61])
def test_tiny_files(tmp_path, size):
    data = v2(0, 1, value=200)[:size]
    path = write_segment(tmp_path, 0, data)
    for verify in (False, True):
        assert summary(recover_segment(path, 0, verify=verify)) == \
            summary(recover_segment(path, 0, verify=verify, method="reference"))


def test_batch_larger_than_the_window_with_verify(tmp_path, monkeypatch):
    monkeypatch.setattr(recover_fast, "WINDOW", 4096)
    batches = [v2(0, 1, value=100), v2(1, 3, value=5000), v2(4, 1, value=100)]
    data = bytearray(b"".join(batches))
    path = write_segment(tmp_path, 0, bytes(data))
    r = recover_segment(path, 0, verify=True)
    assert r.batches == 3 and r.error is None
    data[len(batches[0]) + 9000] ^= 4  # inside the big batch: the streamed CRC must catch it
    path.write_bytes(bytes(data))
    r = recover_segment(path, 0, verify=True)
    assert r.batches == 1 and "Record is corrupt" in r.error.message


@pytest.mark.skipif(not hasattr(os, "O_NOATIME"), reason="O_NOATIME is Linux only")
def test_noatime_refused_falls_back_to_a_plain_open(tmp_path, monkeypatch):
    """O_NOATIME on a file of another user fails with EPERM: the walk then opens the file plainly."""
    batches = [v2(i * 3, 3, value=rng_value) for i, rng_value in enumerate([100, 9000, 20000, 100, 30000])]
    path = write_segment(tmp_path, 0, b"".join(batches))
    expected = summary(recover_segment(path, 0, method="reference"))
    real_open = os.open
    flags_seen = []

    def refusing_open(p, flags, *args):
        flags_seen.append(flags)
        if flags & os.O_NOATIME:
            raise PermissionError(1, "Operation not permitted")
        return real_open(p, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)
    assert summary(recover_segment(path, 0)) == expected
    assert [bool(f & os.O_NOATIME) for f in flags_seen] == [True, False]


@pytest.mark.skipif(not hasattr(os, "O_NOATIME"), reason="O_NOATIME is Linux only")
def test_the_walk_leaves_the_access_time_alone(tmp_path):
    batches = [v2(i * 3, 3, value=v) for i, v in enumerate([100, 9000, 20000, 100, 30000])]
    path = write_segment(tmp_path, 0, b"".join(batches))
    st = os.stat(path)
    os.utime(path, ns=(st.st_mtime_ns - 10**12, st.st_mtime_ns))  # atime before mtime: relatime would update it
    before = os.stat(path).st_atime_ns
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOATIME)
    except PermissionError:
        pytest.skip("O_NOATIME not permitted here (not the file's owner)")
    os.close(fd)
    r = recover_segment(path, 0)
    assert r.batches == 5 and r.error is None
    assert os.stat(path).st_atime_ns == before


def test_a_spare_window_is_not_shared_with_forked_workers(tmp_path):
    """The window buffer a finished walk leaves for the next one is private memory: reindex-time --jobs and
    spark-scan's local pool fork workers after the parent walked a segment, and a shared (MAP_SHARED) spare
    window was then one buffer for every worker: two walks read each other's bytes (seen as a bogus "record
    size 0" verdict on an intact segment, now and then, in tests/scan)."""
    log = write_segment(tmp_path / "t-0", 0, [v2(i * 5, 5) for i in range(20)])
    recover_segment(log, 0)
    assert recover_fast._SPARE_WINDOWS
    window = recover_fast._SPARE_WINDOWS[-1]
    window[:6] = b"parent"
    pid = os.fork()
    if pid == 0:  # the worker overwrites what it believes is its own buffer
        window[:6] = b"child!"
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert window[:6] == b"parent"


@pytest.mark.parametrize(("size", "hops"), [(300, False), (12000, True)])
def test_the_first_hopping_step_probes_the_batch_size(tmp_path, size, hops):
    """The compiled walk hops from header to header while batches are large; after PROBE_HOPS_C headers of
    small ones it stops and reads windows instead (copying small batches is cheaper than a pread each)."""
    from tests.support.segments import v2_sized

    if recover_fast._C is None:
        pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    n = recover_fast.PROBE_HOPS_C * 3
    log = write_segment(tmp_path / "p-0", 0, [v2_sized(i, size) for i in range(n)])
    fd = os.open(log, os.O_RDONLY)
    try:
        walk = recover_fast._Walk(fd, log.stat().st_size, False, str(log))
        try:
            walk.step()
            assert walk.hop is hops
            assert walk.pending == (n if hops else recover_fast.PROBE_HOPS_C)  # one step: all, or the probe
            while walk.stop is None:
                walk.step()
            assert walk.pending == n
        finally:
            walk.close()
        # the compiled loop alone: the probe stops it only where the batches are small
        r = recover_fast._C.hop_walk(fd, 0, log.stat().st_size, n, bytearray(), 64, 3 << 10)
        assert r.headers == (n if hops else 64)
        assert recover_fast._C.hop_walk(fd, 0, log.stat().st_size, n, bytearray()).headers == n  # no probe
    finally:
        os.close(fd)
