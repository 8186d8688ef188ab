"""The lazy send's chunks of plain batches by one compiled run (``down_convert_plain_chunk``) give what the Python
grouping and conversion give: every piece's bytes and statistics, the send's counts and where it fails.

Random segments, mostly uncompressed v2 batches (the run's case) mixed with what it leaves to Python (compressed
and control batches, legacy batches, records below the fetch offset, offsets that go backwards, empty batches) and
damage (torn tails, corrupt sizes, CRC flips, zero padding), sent whole or from the middle, with small chunks."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool.errors import KafkaToolError
from kafkatool.fetch import lazy
from kafkatool.log.index import lookup_offset, lookup_offset_file, read_offset_index
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_empty_batch, build_end_txn_marker
from kafkatool.record.down_convert import down_convert_plain_chunk
from kafkatool.record.file_records import FileRecords
from tests.support.segments import T0, legacy, v2


def plain_heavy_segment(rng: random.Random) -> tuple[int, bytes]:
    base = rng.choice([0, 1000, 2**40])
    offset = base
    parts = []
    for _ in range(rng.randint(0, 60)):
        kind = rng.random()
        count = rng.randint(1, 6)
        ts = T0 + rng.randint(-50, 200)
        if rng.random() < 0.05:
            offset = max(base, offset - rng.randint(1, 20))  # offsets that go backwards
        if kind < 0.75:
            lat = T0 + 7 if rng.random() < 0.1 else None
            parts.append(v2(offset, count, ts=ts, value=rng.choice([0, 20, 300, 2000]), log_append_time=lat,
                            producer_id=rng.choice([-1, -1, 5])))
        elif kind < 0.83:
            parts.append(v2(offset, count, ts=ts, value=200, codec=rng.choice([Codec.GZIP, Codec.LZ4, Codec.SNAPPY])))
        elif kind < 0.88:
            parts.append(build_end_txn_marker(offset=offset, timestamp=ts, producer_id=7, producer_epoch=0,
                                              commit=True, coordinator_epoch=0, partition_leader_epoch=0))
            count = 1
        elif kind < 0.92:
            parts.append(build_empty_batch(base_offset=offset, last_offset_delta=count, max_timestamp=ts,
                                           producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=False))
        else:
            parts.append(legacy(1, offset, 1, ts=ts, value=50))
            count = 1
        offset += count
    data = bytearray(b"".join(parts))
    damage = rng.random()
    if data and damage < 0.1:
        del data[rng.randrange(len(data)):]  # a torn or short tail
    elif data and damage < 0.2:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)  # a CRC flip, or a size or offset field
    elif damage < 0.25:
        data += bytes(rng.randint(1, 3000))
    return base, bytes(data)


def send(path: Path, start: int, size: int, to_magic: int, first: int, read: int, keep: bool) -> object:
    """Everything one lazy send gives: its pieces, its statistics, and the error it ends with (the pieces it gave
    before the error included)."""
    pieces: list[object] = []
    with FileRecords(path) as fr:
        try:
            lz = lazy.LazyDownConversionRecords(fr, start, size, to_magic, first, max_read_size=read)
            lz.keep_inners = keep
            for p in lz.send():
                pieces.append(dataclasses.astuple(p))
            return pieces, dataclasses.asdict(lz.stats)
        except KafkaToolError as e:
            return pieces, type(e).__name__, str(e), e.position


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), to_magic=st.sampled_from([0, 1]), read=st.sampled_from([200, 700, 3000, 128 << 10]),
       keep=st.booleans())
def test_the_send_is_the_same_with_and_without_the_compiled_chunks(tmp_path_factory, monkeypatch, seed, to_magic,
                                                                   read, keep):
    rng = random.Random(seed)
    base, data = plain_heavy_segment(rng)
    path = tmp_path_factory.mktemp("lazy") / f"{base:020d}.log"
    path.write_bytes(data)
    start = rng.choice([0, 0, rng.randrange(len(data) + 1)])
    size = rng.choice([len(data), rng.randrange(len(data) + 1), 2**31 - 1])
    first = base + rng.choice([0, 0, 3, 40])
    calls = []

    def spy(*args: object, **kw: object) -> object:
        r = down_convert_plain_chunk(*args, **kw)  # type: ignore[arg-type]
        calls.append(r is not None)
        return r

    monkeypatch.setattr(lazy, "down_convert_plain_chunk", spy)
    fast = send(path, start, size, to_magic, first, read, keep)
    monkeypatch.setattr(lazy, "down_convert_plain_chunk", lambda *args, **kw: None)
    slow = send(path, start, size, to_magic, first, read, keep)
    assert fast == slow


def test_a_segment_of_plain_batches_is_sent_by_compiled_chunks(tmp_path, monkeypatch):
    """Not a timing: every chunk of an uncompressed segment comes from the compiled run."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(v2(i * 4, 4, value=500) for i in range(200)))
    taken: list[bool] = []

    def spy(*args: object, **kw: object) -> object:
        r = down_convert_plain_chunk(*args, **kw)  # type: ignore[arg-type]
        taken.append(r is not None)
        return r

    monkeypatch.setattr(lazy, "down_convert_plain_chunk", spy)
    pieces, stats = send(path, 0, path.stat().st_size, 1, 0, 16 << 10, False)  # type: ignore[misc]
    assert len(taken) > 10 and all(taken)
    assert stats["records_converted"] > 700 and stats["chunks"] > 10
    monkeypatch.setattr(lazy, "down_convert_plain_chunk", lambda *args, **kw: None)
    assert send(path, 0, path.stat().st_size, 1, 0, 16 << 10, False) == (pieces, stats)


@pytest.mark.parametrize("seed", range(200))
def test_the_index_lookup_without_objects_is_lookup_offset(tmp_path, seed):
    """lookup_offset_file gives lookup_offset over read_offset_index's entries: sorted indexes, zero relative
    offsets (the entries end at the first after slot 0), unsorted ones, negative fields, partial slots, padding."""
    rng = random.Random(seed)
    base = rng.choice([0, 1000, 2**40])
    rels = sorted(rng.sample(range(1, 5000), rng.randint(0, 60)))
    if rng.random() < 0.3:
        rng.shuffle(rels)
    if rels and rng.random() < 0.3:
        rels[rng.randrange(len(rels))] = 0
    if rels and rng.random() < 0.3:  # a corrupt slot: a negative relative offset or position
        rels[rng.randrange(len(rels))] = -rng.randint(1, 2**31)
    raw = b"".join(r.to_bytes(4, "big", signed=True) + rng.randrange(-2**31, 2**31).to_bytes(4, "big", signed=True)
                   for r in rels)
    raw += bytes(8 * rng.randint(0, 3)) + bytes(rng.choice([0, 0, 3]))
    path = tmp_path / f"{base:020d}.index"
    path.write_bytes(raw)
    entries = read_offset_index(path, base).entries
    for target in [base - 1, base, base + 1, base + 2500, base + 10**6, *(base + r for r in rels[:10])]:
        assert lookup_offset_file(path, target, base) == lookup_offset(entries, target, base)  # type: ignore[arg-type]


def test_a_negative_position_in_the_index_is_one_line_naming_the_index(tmp_path):
    """The fetch position's index entry points before the file's start: a corrupt .index, reported as one line
    naming it (exit 1), not a traceback from the walk."""
    from tests.support.cli import run_cli

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"".join(v2(i * 10, 10, value=100) for i in range(50)))
    (part / "00000000000000000000.index").write_bytes(
        (50).to_bytes(4, "big") + (-4096).to_bytes(4, "big", signed=True))
    r = run_cli("fetch-sim", part, "--to-magic", "1", "--fetch-offset", "100", "-f", "json")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "00000000000000000000.index" in lines[0] and "position -4096" in lines[0], lines
