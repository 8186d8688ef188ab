"""spark-scan's findings, counts and exit code are ``dump --deep --verify``'s, on every file of the hostile corpus
and on seeded random damage of real segments, however the segments are cut into ranges, in one process or a
pool, and through the library entry point the command runs (the Spark engine: tests/spark/test_jobs.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatool.scan.engine import ScanOptions, run_local
from kafkatool.scan.plan import discover, make_plan
from kafkatool.scan.stats import BatchStats
from kafkatool.spark.run import ScanRequest, spark_scan
from tests.support.damage import damaged_dir, dump_view, finding_key, hostile_logs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, sample_dir):
    root = tmp_path_factory.mktemp("parity") / "logs"
    sources = [p for p in Path(sample_dir).rglob("*.log") if p.stat().st_size > 4096]
    logs = damaged_dir(root, sources, seed=22, count=70)
    return root, {os.path.realpath(p): dump_view(p) for p in logs}


def _by_file(report):
    out = {}
    for seg in report.segments:
        out[os.path.realpath(seg.path)] = {
            "findings": [finding_key(f) for f in seg.findings], "batches": seg.stats.batches,
            "records": seg.stats.records if seg.stats.records_known else None,
            "exit": 2 if seg.unreadable else 1 if any(f.severity.value in ("error", "warning")
                                                      for f in seg.findings) else 0}
    return out


def test_the_corpus_is_hostile_enough(corpus):
    _, want = corpus
    assert len(hostile_logs()) >= 30
    kinds = {f[1] for v in want.values() for f in v["findings"]}
    assert {"crc-mismatch", "corrupt-region", "torn-tail", "unknown-magic", "decompress-limit", "invalid-records",
            "offset-overflow", "trailing-zeros", "wrong-file-type"} <= kinds
    assert {v["exit"] for v in want.values()} == {0, 1}


@pytest.mark.parametrize("split", [1 << 30, 1500, 97])
def test_every_damaged_file_scans_as_dump_walks_it(corpus, split):
    root, want = corpus
    plan = make_plan(discover([str(root)]).segments, split_bytes=split, parallelism=2)
    if split < 2000:
        assert len(plan.items) > 3 * len(plan.segments)
    got = _by_file(run_local(plan, jobs=2 if split == 97 else 1))
    assert sorted(got) == sorted(want)
    for path in sorted(want):
        assert got[path] == want[path], path


def _unlimited(key: tuple) -> tuple:
    """A finding without its decompression limit's figure (the run's memory budget sets it)."""
    return (*key[:5], re.sub(r"the limit of \d+ bytes", "the limit", key[5]))


def test_the_command_entry_point_exits_as_dump_and_lists_every_finding(corpus):
    root, want = corpus
    out = spark_scan(ScanRequest([str(root)], engine="local-processes", jobs=2, split_size=800))
    assert out.report is not None
    in_plan_order = sorted(want, key=lambda p: (os.path.basename(os.path.dirname(p)).rsplit("-", 1)[0], p))
    assert [_unlimited(finding_key(f)) for f in out.report.findings] == \
        [_unlimited(f) for p in in_plan_order for f in want[p]["findings"]]
    assert int(out.exit_code) == max(v["exit"] for v in want.values()) == 1


# ------------------------------------------------------------------ a batch of more records than a chunk holds

def _big_batches(tmp_path: Path) -> Path:
    """One segment of batches of 3,000 records each: v2 uncompressed and lz4 (a null key in ten, timestamps
    out of order), a LogAppendTime one, and a v1 gzip wrapper whose 2,000th inner message fails its own CRC."""
    from kafkatool.record import default_records as v2
    from kafkatool.record.batch import TimestampType
    from kafkatool.record.codecs import Codec
    from tests.support import damaged_batches as d
    from tests.support.dump_fixtures import write_segment

    def recs(base: int) -> list:
        return [(base + i, 1_700_000_000_000 + (i * 7919) % 5000, None if i % 10 == 3 else b"k%d" % (i % 977),
                 b"v", []) for i in range(3000)]
    batches = [v2.build_batch(recs(0)), v2.build_batch(recs(3000), codec=Codec.LZ4),
               v2.build_batch(recs(6000), timestamp_type=TimestampType.LOG_APPEND_TIME,
                              log_append_time=1_800_000_000_000),
               d.inner_crc_flip(1, Codec.GZIP, flip=1999, n=3000, base=9000)]
    return write_segment(tmp_path / "big-0", batches).parent


def _scan_of(part: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> tuple:
    from kafkatool.scan.engine import scan_range
    from kafkatool.scan.export import RecordColumns
    from kafkatool.util import budget

    monkeypatch.setattr(budget, "record_chunk", lambda: chunk)
    item = make_plan(discover([str(part)]).segments, split_bytes=1 << 30, parallelism=1).items[0]
    cols = RecordColumns(item)
    mores: list[bool] = []

    def sink(batch, crc_valid, records, more):
        mores.append(more)
        cols.add(batch, crc_valid, records)
    r = scan_range(item, sink=sink)
    st = r.stats
    figures = {k: getattr(st, k) for k in st.__slots__ if k != "hll"}
    return figures, st.hll.registers.tobytes(), r.findings, cols.rows, cols.cols["crc_valid"].count(False), mores


def test_a_batch_of_more_records_than_a_chunk_holds_is_counted_whole(tmp_path, monkeypatch):
    """The walk reads such a batch a chunk at a time; spark-scan's figures, its export and the DataFrame source's
    rows still count all of its records, as dump does (they used to see none of them)."""
    part = _big_batches(tmp_path)
    whole = _scan_of(part, 1 << 20, monkeypatch)
    chunked = _scan_of(part, 1024, monkeypatch)
    assert chunked[5].count(True) == 4 * 2  # three more chunks of each batch's 3,000 records
    assert whole[5] == [False] * 4
    assert chunked[:5] == whole[:5]
    figures, _, _, rows, crc_failed, _ = chunked
    want = dump_view(part / "00000000000000000000.log")
    assert (figures["batches"], figures["records"]) == (want["batches"], want["records"]) == (4, 12000)
    assert rows == 12000 and crc_failed == 1
    assert figures["crc_failures"] == 1 and figures["null_keys"] == 900
    assert figures["max_timestamp"] == 1_800_000_000_000 and figures["out_of_order"] > 0


# ------------------------------------------------------------------ the compiled walk's figures are the observer's

def _empty_batches(tmp_path: Path) -> Path:
    """Batches with no records between plain ones: gzip and lz4 whose records area is the compressed form of
    nothing, and an uncompressed one (as a compaction leaves them, with a valid CRC)."""
    import struct

    from kafkatool._accel import crc32c
    from kafkatool.record import default_records as v2
    from kafkatool.record.codecs import Codec, compress
    from tests.support.dump_fixtures import write_segment

    def plain(base: int, codec: Codec = Codec.NONE) -> bytes:
        return v2.build_batch([(base + i, 1_700_000_000_000 + i, b"key%d" % i, b"v", []) for i in range(3)],
                              codec=codec)

    def empty(base: int, codec: Codec) -> bytes:
        b = bytearray(v2.build_batch([(base, 1_700_000_000_000, b"k", b"v", [])], codec=codec))[:61]
        b += compress(codec, b"") if codec else b""
        struct.pack_into(">i", b, 8, len(b) - 12)  # size
        struct.pack_into(">i", b, 23, 0)  # lastOffsetDelta
        struct.pack_into(">i", b, 57, 0)  # records count
        struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])) & 0xFFFFFFFF)
        return bytes(b)

    return write_segment(tmp_path / "empty-0", [plain(0), empty(3, Codec.GZIP), plain(4, Codec.GZIP),
                                                empty(7, Codec.LZ4), plain(8), empty(11, Codec.NONE),
                                                plain(12, Codec.LZ4)]).parent


def _figures(root: Path, opts: ScanOptions) -> dict:
    from kafkatool.scan.engine import scan_range

    out = {}
    plan = make_plan(discover([str(root)]).segments, split_bytes=1 << 16, parallelism=1)
    for item in plan.items:
        r = scan_range(item, opts)
        st = r.stats
        out[(item.path, item.start)] = ({k: getattr(st, k) for k in st.__slots__ if k != "hll"},
                                        st.hll.registers.tobytes(), r.first_followed, r.last_followed,
                                        [finding_key(f) for f in r.findings], r.handoff)
    return out


@pytest.mark.parametrize("which", ["sample", "damaged", "wide", "empty"])
def test_the_compiled_walk_adds_up_what_the_observer_would(which, sample_dir, corpus, tmp_path, monkeypatch):
    """Runs of plain v2 batches are added up inside the compiled walk (``BatchStats.fast_state``), the records of
    the other batches by ``_speedups.record_stats``; every figure, the distinct-key registers included, equals the
    pure per-batch observer's, on the sample (every codec, format,
    transactions), on the damaged copies, on batches of 3,000 records (null keys, timestamps out of order,
    LogAppendTime, batches over max.message.bytes) and on empty batches of every codec, cut into ranges."""
    from kafkatool._speedups import dump_walk  # noqa: F401 (the compiled path must be there to compare)
    from tests.support.speedups import dispatching_to

    root = {"sample": lambda: Path(sample_dir), "damaged": lambda: corpus[0],
            "wide": lambda: _big_batches(tmp_path), "empty": lambda: _empty_batches(tmp_path)}[which]()
    opts = ScanOptions(max_message_bytes=30_000)
    absorbed: list[int] = []
    absorb = BatchStats.absorb
    monkeypatch.setattr(BatchStats, "absorb", lambda self, f, m: (absorbed.append(sum(x[0] for x in f.formats)),
                                                                  absorb(self, f, m))[-1])
    taken: list[bool] = []
    fast_records = BatchStats._fast_records
    monkeypatch.setattr(BatchStats, "_fast_records", lambda self, *a: taken.append(fast_records(self, *a)) or taken[-1])
    compiled = _figures(root, opts)
    # not pure against pure: the compiled walk counted batches, and record_stats the records of those it left
    assert sum(absorbed) > 0 and (which in ("wide", "empty") or any(taken))
    with dispatching_to(None, ["kafkatool.dump.engine", "kafkatool.scan.stats"]):
        observed = _figures(root, opts)
    assert sorted(compiled) == sorted(observed)
    for k in sorted(compiled):
        assert compiled[k] == observed[k], k
    records, batches = (sum(v[0][k] for v in compiled.values()) for k in ("records", "batches"))
    assert (records, batches) == (12, 7) if which == "empty" else records > 10_000
    assert which != "wide" or sum(v[0]["oversized_batches"] for v in compiled.values()) == 3


def _stats_of(chunks: list, compressed: bool, control: bool, last_ts: int | None) -> tuple:
    from kafkatool.scan.stats import BatchStats

    bs = BatchStats("p")
    bs._last_ts = last_ts
    fm = [0, 0, 0, 0]
    for recs in chunks:
        bs._records(recs, fm, compressed, control)
    st = bs.flush()
    return ({k: getattr(st, k) for k in st.__slots__ if k != "hll"}, st.hll.registers.tobytes(), fm,
            bs.last_followed)


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.lists(st.tuples(
    st.integers(0, 10**6), st.one_of(st.integers(-3, 50), st.integers(1_600_000_000_000, 1_600_000_000_100)),
    st.one_of(st.none(), st.binary(max_size=12)), st.integers(0, 2000)), min_size=1, max_size=40), min_size=1,
    max_size=4), compressed=st.booleans(), control=st.booleans(),
    last_ts=st.one_of(st.none(), st.integers(0, 60)))
def test_record_stats_counts_what_the_python_code_counts(chunks, compressed, control, last_ts):
    """``_speedups.record_stats`` (a batch's records when the compiled walk left the batch to Python) against
    ``BatchStats._records_py``: sizes, timestamps in and out of order across chunks and from the figures before,
    null keys and the distinct-key registers."""
    from kafkatool.record.batch import new_record
    from tests.support.speedups import dispatching_to

    recs = [[new_record((o, ts, k, b"v", (), -1, size, None, None)) for o, ts, k, size in c] for c in chunks]
    fast = _stats_of(recs, compressed, control, last_ts)
    with dispatching_to(None, ["kafkatool.scan.stats"]):
        slow = _stats_of(recs, compressed, control, last_ts)
    assert fast == slow
