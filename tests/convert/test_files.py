"""SegmentWriter's indexes, built while writing, against the broker's recovery walk of the finished files.

``recover_segment`` (Kafka 3.9 ``LogSegment.recover``) is the oracle: every output segment of ``kafkatool sample``'s
log dir, converted to v0, v1 and v2 with several index intervals and segment sizes, keeping each batch's codec or
writing them uncompressed, through the compiled and the pure-Python walks, must carry byte for byte the
``.index``/``.timeindex`` that recovery rebuilds from its ``.log``.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkatool import _accel
from kafkatool.convert.engine import ConvertOptions, convert_log
from kafkatool.convert.files import SegmentWriter
from kafkatool.errors import KafkaToolError
from kafkatool.log.recovery import recover_segment
from kafkatool.log.recovery.fast import SegmentIndexer
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import FileRecords
from tests.support.convert_fixtures import legacy_log, v2_log

# The modules whose compiled paths the writer and its indexer take (``_C``: the extension or None).
DISPATCHING = ("kafkatool.record.default_records", "kafkatool.record.down_convert", "kafkatool.record.file_records",
               "kafkatool.log.recovery.fast", "kafkatool.convert.engine")


@pytest.fixture(params=["compiled", "pure"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "compiled":
        if _accel.speedups is None:
            if _accel.pure_requested():
                pytest.skip("KAFKATOOL_PURE=1: the compiled walk is tested without it")
            pytest.fail("kafkatool._speedups is not built: run `pip install -e .`")
    else:
        for name in DISPATCHING:
            monkeypatch.setattr(importlib.import_module(name), "_C", None)
    yield request.param


def _segments(root: Path) -> Iterator[Path]:
    for part in sorted(p for p in root.iterdir() if p.is_dir()):
        yield from sorted(part.glob("*.log"))


def _assert_indexes_are_recoverys(out: Path, interval: int) -> int:
    n = 0
    for log in _segments(out):
        base = int(log.name[:20])
        rec = recover_segment(log, base, index_interval_bytes=interval)
        assert rec.error is None and rec.valid_bytes == log.stat().st_size, log
        assert log.with_suffix(".index").read_bytes() == rec.encode_offset_index(), log
        assert log.with_suffix(".timeindex").read_bytes() == rec.encode_time_index(), log
        n += 1
    return n


@pytest.mark.parametrize(("to_magic", "codec", "interval", "segment_bytes"), [
    (0, None, 4096, 1 << 30), (1, None, 1, 1 << 30), (0, None, 1, 20000), (0, Codec.NONE, 100, 3000),
    (1, Codec.NONE, 1000, 20000), (1, Codec.NONE, 4096, 1 << 30), (1, Codec.GZIP, 100, 3000), (2, None, 1, 20000)])
def test_indexes_built_while_writing_are_those_recovery_rebuilds(sample_dir: Path, tmp_path: Path, walk: str,
                                                                  to_magic: int, codec: Codec | None, interval: int,
                                                                  segment_bytes: int) -> None:
    out = tmp_path / "out"
    opts = ConvertOptions(to_magic=to_magic, codec=codec, zstd_to=None if to_magic == 2 else Codec.LZ4,
                          index_interval_bytes=interval, segment_bytes=segment_bytes)
    stats = convert_log(sample_dir, out, opts)
    n = _assert_indexes_are_recoverys(out, interval)
    assert n == sum(s.segments_out for s in stats) and n > len(stats)
    # The index files are not trivially empty: the small intervals index most batches.
    if interval == 1:
        assert sum(p.stat().st_size for p in out.glob("*/*.index")) > 1000


@pytest.mark.parametrize("interval", [1, 50, 4096])
def test_indexer_fed_in_pieces_matches_recovery_on_every_sample_segment(sample_dir: Path, walk: str,
                                                                        interval: int) -> None:
    """The indexer over the source segments themselves (v0, v1, v2, every codec, control batches), fed one
    run of batches at a time as the writer feeds it, equals recovery's walk field for field."""
    seen = 0
    for log in _segments(sample_dir):
        base = int(log.name[:20])
        rec = recover_segment(log, base, index_interval_bytes=interval)
        if rec.error is not None:
            continue
        idx = SegmentIndexer(base, interval)
        with FileRecords(log) as fr:
            ends = [b.position + b.size for b in fr.batches()]
            data = bytes(fr.buf[:rec.valid_bytes])
        start = 0
        for i, end in enumerate(e for e in ends if e <= rec.valid_bytes):
            if i % 3 == 2 or end == rec.valid_bytes:  # pieces of 1 to 3 batches
                idx.feed(data[start:end])
                start = end
        got = idx.finish()
        assert got.encode_offset_index() == rec.encode_offset_index(), log
        assert got.encode_time_index() == rec.encode_time_index(), log
        assert (got.batches, got.last_offset, got.max_timestamp, got.offset_of_max_timestamp, got.magics) == (
            rec.batches, rec.last_offset, rec.max_timestamp, rec.offset_of_max_timestamp, rec.magics), log
        seen += 1
    assert seen > 20


@pytest.mark.parametrize("piece", ["torn", "short size", "offset below base", "offsets backwards"])
def test_indexer_refuses_what_recovery_would_not_keep(walk: str, piece: str) -> None:
    idx = SegmentIndexer(100, 1)
    good = v2_log(100, batches=2)
    if piece == "torn":
        data = good[:-5]
    elif piece == "short size":
        data = good + struct.pack(">qi", 102, 3) + bytes(20)
    elif piece == "offset below base":
        data = v2_log(50, batches=1)
    else:  # offsets 101.. at an index point after 100..109
        data = good + legacy_log(1, 101, batches=1, codecs=(Codec.NONE,))
    with pytest.raises(KafkaToolError):
        idx.feed(data)
        idx.finish()


def test_the_writer_refuses_output_recovery_would_not_keep(tmp_path: Path, walk: str) -> None:
    w = SegmentWriter(tmp_path, 1 << 30, 1, oracle=True)
    w.begin_source_segment(0)
    w.append((v2_log(0, batches=2), 0, 9, 2))
    with pytest.raises(KafkaToolError, match="internal error: output segment 00000000000000000000.log does not pass"):
        w.append((v2_log(5, batches=1), 5, 9, 1))  # offsets back below the last index entry's
        w.end_source_segment([])  # the pure walk checks a step of batches at a time, the last at the close


def test_the_oracle_agrees_with_the_writer(tmp_path: Path, walk: str) -> None:
    w = SegmentWriter(tmp_path, 1 << 30, 10, oracle=True)
    w.begin_source_segment(0)
    for i in range(5):
        w.append((legacy_log(1, i * 3, batches=1, codecs=(Codec.NONE,)), i * 3, i * 3 + 2, 3))
    w.end_source_segment([])
    rec = recover_segment(tmp_path / f"{0:020d}.log", 0, index_interval_bytes=10)
    assert (tmp_path / f"{0:020d}.index").read_bytes() == rec.encode_offset_index()
    assert len(rec.index_offsets) >= 4
