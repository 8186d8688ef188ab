"""The converters never launder (issue 23, item 5): what dump --deep --verify reports stops a conversion at the
batch, naming file, byte and offset, with nothing written; --skip-corrupt leaves it out, counts it, and the output
is what the input holds minus exactly that, clean for dump --deep --verify."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from kafkatool.convert.engine import ConvertOptions, convert_log
from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import DumpOptions, Finding, Severity, Summary
from kafkatool.errors import CorruptDataError, InvalidRecordError, KafkaToolError
from kafkatool.record.batch import Header, Record
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import iter_batches
from tests.support import damaged_batches as d
from tests.support.convert_fixtures import make_partition, read_segments
from tests.support.speedups import dispatching_to

DIRECTIONS = [pytest.param({"to_magic": 0}, id="down0"), pytest.param({"to_magic": 1}, id="down1"),
              pytest.param({"to_magic": 2}, id="up"),
              pytest.param({"to_magic": 1, "codec": Codec.LZ4}, id="down1-lz4"),
              pytest.param({"to_magic": 2, "codec": Codec.GZIP}, id="up-gzip")]
SP = importlib.import_module("kafkatool._speedups")  # the compiled paths, also under KAFKATOOL_PURE=1
SP.configure(Record, Header)
PATHS = ("kafkatool.record.validate", "kafkatool.record.default_records", "kafkatool.record.down_convert",
         "kafkatool.record.file_records", "kafkatool.convert.engine")


def compiled(on: bool) -> AbstractContextManager[None]:
    return dispatching_to(SP if on else None, PATHS)


def deep_verify(path: Path) -> tuple[list[Finding], Summary]:
    evs = list(DumpEngine(DumpOptions(deep=True, verify=True, emit_data=False)).run([path]))
    return [e for e in evs if isinstance(e, Finding)], evs[-1]  # type: ignore[return-value]


def errors(findings: list[Finding]) -> list[tuple[str, int | None, int | None]]:
    return [(f.kind, f.position, f.offset) for f in findings if f.severity == Severity.ERROR]


def records(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in iter_batches(data) for r in b.records()]


# One damaged batch (or inner message) between sound v2 batches: (bytes before, damaged bytes, bytes after, kind,
# offset named, records the damage takes away when left out).
CASES = {
    "v1-inner-crc": (d.batch(0, 5), d.inner_crc_flip(1, Codec.GZIP, flip=2, base=5), d.batch(10, 4),
                     "record-crc-mismatch", 7, [7]),
    "v0-inner-crc": (d.batch(0, 5), d.inner_crc_flip(0, Codec.SNAPPY, flip=0, base=5), d.batch(10, 4),
                     "record-crc-mismatch", 5, [5]),
    "v1-inner-cut": (b"", d.inner_cut(1, n=3), d.batch(3, 4), "inner-set-truncated", 2, [1, 2]),
    "decreasing-inner": (b"", d.decreasing_inner(), d.batch(5, 4), "offset-order", 7, [8, 7, 6, 5, 4]),
    "negative-delta": (d.batch(0, 5), d.negative_delta(5, -1), d.batch(6, 4), "offset-range", 4, [5]),
    "v2-undecodable": (d.batch(0, 5), d.v2_bad_record(5), d.batch(8, 4), "invalid-records", 7, [5, 6, 7]),
    "bad-control": (d.batch(0, 5), d.bad_control(b"\x00", offset=5), d.batch(6, 4), "invalid-control-record", 5,
                    [5]),
    "offset-int64": (d.batch(0, 5), d.offset_max(), b"", "offset-int64", (1 << 63) - 1, [(1 << 63) - 1]),
    "batch-backwards": (d.batch(0, 5), d.batch(3, 2), d.batch(5, 4), "offset-order", 3, [3, 4]),
}


@pytest.mark.parametrize("on", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("opts", DIRECTIONS)
@pytest.mark.parametrize("case", list(CASES))
def test_corrupt_data_stops_the_conversion_with_file_byte_and_offset(tmp_path, case, opts, on):
    before, bad, after, kind, offset, _ = CASES[case]
    src = make_partition(tmp_path / "src", "t-0", {0: before + bad + after})
    seg = src / f"{0:020d}.log"
    found, _ = deep_verify(src)
    assert (kind, len(before)) in [(k, p) for k, p, _ in errors(found)], "dump --deep --verify reports it"
    with compiled(on), pytest.raises(CorruptDataError) as e:
        convert_log(src, tmp_path / "out", ConvertOptions(**opts))
    assert (e.value.path, e.value.position, e.value.exit_code) == (str(seg), len(before), 1)
    assert e.value.message.startswith(f"offset {offset}: ") and e.value.field == "skip_corrupt"
    assert not (tmp_path / "out").exists()  # nothing written, nothing left


@pytest.mark.parametrize("on", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("opts", DIRECTIONS)
@pytest.mark.parametrize("case", list(CASES))
def test_skip_corrupt_leaves_it_out_and_counts_it(tmp_path, case, opts, on):
    before, bad, after, kind, offset, lost = CASES[case]
    src = make_partition(tmp_path / "src", "t-0", {0: before + bad + after})
    with compiled(on):
        (st,) = convert_log(src, tmp_path / "out", ConvertOptions(**opts, skip_corrupt=True))
    out = tmp_path / "out" / "t-0"
    found, s = deep_verify(out)
    assert errors(found) == [] and s.errors == 0
    kept = records(before + after)
    if kind == "record-crc-mismatch":
        whole = [r for r in records(bad) if r[0] not in lost]
        kept = records(before) + whole + records(after)
    got = records(read_segments(out))
    assert got == kept  # record for record, minus exactly what was left out
    c = st.corrupt
    assert c.count == len(c.findings) >= 1 and c.findings[0]["kind"] == kind
    assert c.findings[0]["position"] == len(before) and c.findings[0]["offset"] == offset
    assert (c.records, c.unknown_records) == (len(lost), 0)
    assert c.batches == (0 if kind == "record-crc-mismatch" else 1)
    j = st.as_dict()
    assert j["corrupt_records_skipped"] == c.records and j["corrupt_batches_skipped"] == c.batches
    assert j["corrupt_skipped"][0]["path"] == str(src / f"{0:020d}.log")
    assert any(w.startswith(f"left out (corrupt, {kind}): ") for w in st.warnings)


def test_a_segment_named_above_its_offsets_is_a_finding_whatever_is_asked(tmp_path):
    src = make_partition(tmp_path / "src", "t-0", {1000: d.batch(0) + d.batch(3)})
    for opts in (ConvertOptions(to_magic=1), ConvertOptions(to_magic=2, skip_corrupt=True)):
        with pytest.raises(InvalidRecordError, match="below its segment's base offset 1000") as e:
            convert_log(src, tmp_path / "out", opts)
        assert (e.value.position, e.value.exit_code) == (0, 1) and "internal error" not in str(e.value)
        assert not (tmp_path / "out").exists()


def test_a_long_run_of_sound_batches_is_checked_by_the_compiled_run_up_to_the_bad_one(tmp_path):
    # 200 sound batches, then one whose lastOffsetDelta is negative, then more: the compiled run takes the first
    # ones, declines the bad one, which the Python check names.
    sound = b"".join(d.batch(3 * i) for i in range(200))
    src = make_partition(tmp_path / "src", "t-0", {0: sound + d.negative_delta(600, -1) + d.batch(601)})
    for on in (True, False):
        with compiled(on), pytest.raises(KafkaToolError) as e:
            convert_log(src, tmp_path / f"out{on}", ConvertOptions(to_magic=1))
        assert e.value.position == len(sound) and "lastOffsetDelta -1" in e.value.message


def test_the_compiled_run_declines_every_batch_the_checks_refuse():
    from kafkatool.convert.engine import DownConverter, PartitionStats, SegmentWriter
    from kafkatool.record.estimator import CompressionRatioEstimator
    from kafkatool.record.up_convert import ConversionCounters

    for name, (before, bad, _after, _kind, _off, _lost) in CASES.items():
        if not bad or bad[16] != 2:
            continue  # legacy batches never take the run
        buf = before + bad
        conv = DownConverter(ConvertOptions(to_magic=1), CompressionRatioEstimator(), "t", ConversionCounters())
        writer = SegmentWriter(None, 1 << 30, 4096)
        writer.begin_source_segment(0)
        with compiled(True):
            r = conv.run(buf, 0, len(buf), writer, PartitionStats("t-0", "src", None, 1), -1)
        assert r is None or r[0] == len(before), name  # stops before the bad batch


# ---------------------------------------------------------------------------------------------- streamed checks

@contextmanager
def tiny_chunks(monkeypatch: pytest.MonkeyPatch, n: int = 2) -> Iterator[None]:
    """Every batch of the cases holds more records than a run does (``budget.record_chunk`` of ``n``): the checks
    and the conversion must read them a chunk at a time. Any whole-batch decode of more than ``n`` records (a
    list of them all, as ``records()`` returns) fails the test."""
    from kafkatool.record import default_records as v2
    from kafkatool.record import legacy_records as legacy
    from kafkatool.util import budget

    monkeypatch.setattr(budget, "record_chunk", lambda: n)
    for cls in (v2.DefaultRecordBatch, legacy.LegacyRecordBatch):
        whole = cls.records

        def bounded(self, *, limit=None, _whole=whole):  # type: ignore[no-untyped-def]
            out = _whole(self, limit=limit)
            assert len(out) <= n, f"a batch of {len(out)} records decoded into one list"
            return out

        monkeypatch.setattr(cls, "records", bounded)
    yield


STREAMED = [c for c in CASES if c not in ("offset-int64", "negative-delta", "bad-control")]  # batches of one record


@pytest.mark.parametrize("on", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("opts", DIRECTIONS)
@pytest.mark.parametrize("case", STREAMED)
def test_a_batch_of_more_records_than_a_run_holds_is_checked_chunk_by_chunk(tmp_path, monkeypatch, case, opts, on):
    """The source checks of a batch above ``budget.record_chunk`` stream (as dump's chunked walk checks per chunk):
    the same refusal at the same byte and offset, and with --skip-corrupt the same output, never a list of all
    its records."""
    before, bad, after, kind, offset, lost = CASES[case]
    src = make_partition(tmp_path / "src", "t-0", {0: before + bad + after})
    seg = src / f"{0:020d}.log"
    kept = records(before + after)
    if kind == "record-crc-mismatch":
        kept = records(before) + [r for r in records(bad) if r[0] not in lost] + records(after)
    with compiled(on), tiny_chunks(monkeypatch):
        found, _ = deep_verify(src)
        assert (kind, len(before)) in [(k, p) for k, p, _ in errors(found)], "dump's chunked walk reports it"
        with pytest.raises(CorruptDataError) as e:
            convert_log(src, tmp_path / "out", ConvertOptions(**opts))
        assert (e.value.path, e.value.position, e.value.exit_code) == (str(seg), len(before), 1)
        assert e.value.message.startswith(f"offset {offset}: ")
        assert not (tmp_path / "out").exists()
        (st,) = convert_log(src, tmp_path / "skip", ConvertOptions(**opts, skip_corrupt=True))
        got = [(r.offset, r.key, r.value) for b in iter_batches(read_segments(tmp_path / "skip" / "t-0"))
               for chunk in b.record_chunks() for r in chunk]
        found, s = deep_verify(tmp_path / "skip" / "t-0")
    assert got == kept
    c = st.corrupt
    assert (c.findings[0]["kind"], c.findings[0]["position"], c.findings[0]["offset"]) == (kind, len(before), offset)
    assert (c.records, c.batches) == (len(lost), 0 if kind == "record-crc-mismatch" else 1)
    assert errors(found) == [] and s.errors == 0


def test_the_checks_hand_the_streamed_source_on_and_leave_out_bad_inner_messages(monkeypatch):
    """check_batch over a wrapper of more inner messages than a run holds returns no list but a source; the
    checker's source without the messages whose CRC fails keeps positions, so KIP-126's ranges read true."""
    from kafkatool.convert.checks import SourceChecker
    from kafkatool.record.file_records import iter_batches as batches
    from kafkatool.record.validate import check_batch

    bad = d.inner_crc_flip(1, Codec.GZIP, flip=2, n=9, base=5)
    with tiny_chunks(monkeypatch, 3):
        (b,) = batches(bad)
        checked = check_batch(b)
        assert checked.records is None and checked.source is not None and checked.source.count == 9
        assert [p.offset for p in checked.problems] == [7]
        checker = SourceChecker(skip_corrupt=True, limit=None)
        v = checker.check(b)
        assert v is not None and v.records is None and v.source is not None and v.dropped == 1
        src = v.source
        assert src.count == 8
        offsets = [r.offset for chunk in src.chunks() for r in chunk]
        assert offsets == [5, 6, 8, 9, 10, 11, 12, 13]
        # positions summed from sizes (as plan_ranges does) land on the records the source reads from there
        pos = src.start
        for chunk in src.chunks(1):
            (r,) = chunk
            assert src.read(pos, 1)[0][0].offset == r.offset
            pos += r.size
