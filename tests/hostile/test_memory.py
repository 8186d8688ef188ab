"""The memory budget holds per record, not only per byte (issue 23, item 4), and a preallocated segment costs
neither its size in mapped pages nor a read of its zeros (item 8).

Record-count bombs small enough to build in a second but far past the budget when their records are held at
once: a valid v2 batch of 700 000 records with a null key and an empty value (7 MB inflated, inside the
decompression limit of a 96 MiB budget), and a v0 and a v1 wrapper of 280 000 and 215 000 empty messages.
Each command runs in a subprocess with ``--memory 96MiB``; its peak anonymous memory (``tests/support/rss.py``)
must stay within the budget itself (its 60 MiB reserve covers the interpreter). The code before record chunks
held a batch's records at once: dump --deep 318 MB, its JSON 524 MB, downconvert 190 MB, upconvert of the
wrappers 330 and 260 MB, a shallow JSON dump, fetch-sim and canary plan of the v0 wrapper 115-125 MB, so those
assertions fail if a batch's records are materialised again (fetch-sim's two conversions stayed under the
budget there too: they check the streamed conversion's bound and output). No timing is asserted.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from pathlib import Path

import pytest
import zstandard

from kafkatool.record import default_records as v2
from kafkatool.record.codecs import Codec, compress
from kafkatool.record.file_records import FileRecords, data_end
from kafkatool.util import budget
from tests.support.hostile_corpus import SEG0, TS, _varint, batch, legacy_wrapper, partition, reseal
from tests.support.paths import ROOT
from tests.support.rss import MiB, Run, run

MEMORY = 96 * MiB
RECORDS = 700_000
MESSAGES = {0: 280_000, 1: 215_000}  # 7.3 and 7.3 MB inflated: inside the 7.6 MB decompression limit


def _v2_bomb(root: Path, codec: Codec) -> Path:
    area = b"".join(_varint(len(body)) + body for body in
                    (b"\x00\x00" + _varint(i) + b"\x01\x00\x00" for i in range(RECORDS)))
    data = zstandard.ZstdCompressor(level=3).compress(area) if codec == Codec.ZSTD else compress(codec, area)
    head = v2.HEADER.pack(0, 49 + len(data), 0, 2, 0, int(codec), RECORDS - 1, TS, TS, -1, -1, -1, RECORDS)
    return partition(root, "bomb-0", {SEG0: bytes(reseal(bytearray(head + data)))})


def _wrapper_bomb(root: Path, magic: int, codec: Codec) -> Path:
    body = struct.pack(">bbii", 0, 0, -1, 0) if magic == 0 else struct.pack(">bbqii", 1, 0, TS, -1, 0)
    crc = zlib.crc32(body)
    n = MESSAGES[magic]
    inner = b"".join(struct.pack(">qiI", i, len(body) + 4, crc) + body for i in range(n))
    return partition(root, "bomb-0", {SEG0: legacy_wrapper(magic, codec, inner, n - 1)})


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("record-bombs")
    return {"zstd": _v2_bomb(root / "zstd", Codec.ZSTD), "gzip": _v2_bomb(root / "gzip", Codec.GZIP),
            "v0": _wrapper_bomb(root / "v0", 0, Codec.GZIP), "v1": _wrapper_bomb(root / "v1", 1, Codec.LZ4)}


def kafkatool(*argv: str | Path, cwd: Path) -> Run:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200")
    return run([sys.executable, "-m", "kafkatool", *map(str, argv), "--memory", f"{MEMORY // MiB}MiB"], env=env,
               cwd=cwd, timeout=600)


# (bomb, argv after the partition dir, allowed exit codes); {out}: a fresh output dir
COMMANDS = [
    ("zstd", ["dump", "--deep"], {0}),
    ("zstd", ["dump", "--deep", "--verify", "--format", "json"], {0}),
    ("zstd", ["downconvert", "{out}", "--to-magic", "0", "--zstd-to", "gzip"], {0}),
    ("zstd", ["downconvert", "{out}", "--to-magic", "1", "--zstd-to", "lz4"], {0}),
    ("gzip", ["downconvert", "{out}", "--to-magic", "1"], {0}),  # the compiled run leaves it to the chunks
    ("gzip", ["fetch-sim", "--to-magic", "1"], {0, 1}),  # KIP-283's lazy conversion of one huge batch
    ("v0", ["dump", "--format", "json"], {0}),  # the wrapper's base offset
    ("v0", ["dump", "--deep", "--verify"], {0}),
    ("v0", ["upconvert", "{out}"], {0}),
    ("v0", ["fetch-sim"], {0}),  # the consumer's view of the wrapper
    ("v0", ["canary", "plan"], {0}),  # the inventory counts its inner messages
    ("v1", ["upconvert", "{out}"], {0}),
    ("v1", ["downconvert", "{out}", "--to-magic", "0"], {0}),
    ("v1", ["fetch-sim", "--to-magic", "0"], {0}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("bomb", "argv", "codes"), COMMANDS,
                         ids=[f"{b}-{'-'.join(a[:2]).strip('-{}')}-{i}" for i, (b, a, _) in enumerate(COMMANDS)])
def test_record_count_bomb_stays_within_the_budget(bombs: dict[str, Path], bomb: str, argv: list[str],
                                                   codes: set[int], tmp_path: Path) -> None:
    part = bombs[bomb]
    args = [a.format(out=tmp_path / "out") for a in argv]
    target = part.parent if args[0] == "canary" else part
    r = kafkatool(*args[:2 if args[0] == "canary" else 1], target, *args[2 if args[0] == "canary" else 1:],
                  cwd=tmp_path)
    assert r.rc in codes, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert r.peak_anon <= MEMORY, f"peak anonymous memory {r.peak_anon / MiB:.0f} MiB, budget {MEMORY // MiB} MiB"


@pytest.mark.slow
def test_every_record_of_a_bomb_is_dumped_once_in_order(bombs: dict[str, Path], tmp_path: Path) -> None:
    """Chunks lose no record and repeat none: a JSON dump of the bomb lists each offset once, in order."""
    r = kafkatool("dump", bombs["zstd"], "--deep", "--format", "json", cwd=tmp_path)
    assert r.rc == 0, r.stderr[-2000:]
    import json

    # stdout is cut to its last 64 KiB: the summary and the last records
    lines = [json.loads(line) for line in r.stdout.splitlines()[1:] if line.strip()]
    offsets = [d["offset"] for d in lines if d["type"] == "record"]
    assert offsets == list(range(RECORDS - len(offsets), RECORDS))
    summary = [d for d in lines if d["type"] == "summary"]
    assert summary and summary[0]["records"] == RECORDS


# ---------------------------------------------------------------------------------------------- in process

def test_a_batch_of_more_records_than_a_chunk_is_read_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """record_chunks hands out at most the budget's record_chunk records at a time, in order, all of them."""
    small = budget.plan(72 * MiB)
    previous = budget.activate(small)
    try:
        n = budget.record_chunk() * 3 + 17
        data = v2.build_batch([(i, TS + i, None, b"", ()) for i in range(n)], codec=Codec.LZ4)
        with_records = next(iter(_batches(data)))
        chunks = list(with_records.record_chunks())
        assert len(chunks) == 4 and max(map(len, chunks)) == budget.record_chunk()
        assert [r.offset for c in chunks for r in c] == list(range(n))
    finally:
        budget.activate(previous)


def _batches(data: bytes) -> list[v2.DefaultRecordBatch]:
    from kafkatool.record.file_records import iter_batches

    return [b for b in iter_batches(data) if isinstance(b, v2.DefaultRecordBatch)]


def test_a_damaged_record_fails_the_batch_before_any_chunk() -> None:
    """The whole batch is checked first: a record cut short near the end raises at the first chunk, as records()
    raises, never after chunks were handed out."""
    previous = budget.activate(budget.plan(72 * MiB))
    try:
        n = budget.record_chunk() * 2 + 5
        area = bytearray(b"".join(v2.encode_record(i, 0, None, b"x") for i in range(n)))
        area[-3] = 0x7F  # the last record's value length now runs past the end
        head = v2.HEADER.pack(0, 49 + len(area), 0, 2, 0, 0, n - 1, TS, TS, -1, -1, -1, n)
        b = _batches(bytes(reseal(bytearray(head + area))))[0]
        with pytest.raises(Exception) as whole:
            b.records()
        chunks = b.record_chunks()
        with pytest.raises(type(whole.value)) as chunked:
            next(chunks)
        assert str(chunked.value) == str(whole.value)
    finally:
        budget.activate(previous)


# ---------------------------------------------------------------------------------------------- preallocated

def test_zeros_after_the_last_batch_are_skipped_through_holes(tmp_path: Path) -> None:
    """A sparse preallocated segment: first_nonzero answers without reading the hole, data_end stops before it."""
    seg = tmp_path / f"{SEG0}.log"
    head = batch(0)
    with open(seg, "wb") as f:
        f.write(head)
        f.truncate(64 << 30)  # 64 GiB, sparse: reading it would take minutes and map 64 GiB
    with FileRecords(seg) as fr:
        assert fr.first_nonzero(len(head)) is None
        assert fr.first_nonzero(0) == next(i for i, b in enumerate(head) if b)
    assert data_end(seg) < 1 << 20  # the data ends in the first block, where the hole starts
    with open(seg, "r+b") as f:
        f.seek((64 << 30) - 1)
        f.write(b"\x01")
    with FileRecords(seg) as fr:
        assert fr.first_nonzero(len(head)) == (64 << 30) - 1
    assert data_end(seg) == 64 << 30


def test_written_zeros_are_scanned_a_window_at_a_time(tmp_path: Path) -> None:
    seg = tmp_path / f"{SEG0}.log"
    seg.write_bytes(batch(0) + bytes(3 << 20) + b"\x05" + bytes(100))
    with FileRecords(seg, window=1 << 20) as fr:
        assert fr.first_nonzero(len(batch(0))) == len(batch(0)) + (3 << 20)
        assert fr.first_nonzero(len(batch(0)) + (3 << 20) + 1) is None


@pytest.mark.slow
def test_dump_of_a_preallocated_8gib_segment_maps_one_window(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    with open(part / f"{SEG0}.log", "wb") as f:
        f.write(batch(0))
        f.truncate(8 << 30)
    r = kafkatool("dump", part, "--deep", cwd=tmp_path)
    assert r.rc == 1 and "trailing-zeros" in r.stderr, r.stderr[-2000:]
    assert r.peak_anon <= MEMORY and r.peak_file <= 128 * MiB, (r.peak_anon // MiB, r.peak_file // MiB)
