"""The per-range scan without a JVM: totals equal an independent whole-file walk, cutting segments into
ranges changes nothing, Kafka's own figures agree, damage is reported as dump reports it, and the export and index
check ride on the same pass."""

from __future__ import annotations

import json
import shutil
import struct
from dataclasses import replace
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from kafkatool.dump import Severity
from kafkatool.errors import KafkaToolError
from kafkatool.record import default_records as v2
from kafkatool.record.file_records import FileRecords
from kafkatool.scan.engine import ScanOptions, run_local
from kafkatool.scan.export import NO_FILTER, ExportFilter, ExportTarget
from kafkatool.scan.plan import Plan, cut_points, discover, make_plan
from kafkatool.scan.pool import run_pass
from kafkatool.scan.report import format_rows, partition_row, segment_row, stats_fields
from kafkatool.scan.task import PassWork
from tests.support.cli import run_cli

TS = 1_700_000_000_000


def walk_totals(log: Path) -> dict[str, int]:
    """What a one-process dump of the file sees: the walk, every batch's records, every CRC check."""
    out = {"batches": 0, "records": 0, "bytes": 0, "crc_failures": 0, "decode_failures": 0}
    with FileRecords(log) as fr:
        stream = fr.batches()
        try:
            for b in stream:
                out["batches"] += 1
                out["bytes"] += b.size
                ok = b.is_valid()
                try:
                    recs = b.records()
                    out["records"] += len(recs)
                    if b.magic < 2 and b.is_compressed and any(r.crc_valid is False for r in recs):
                        ok = False
                except KafkaToolError:
                    out["decode_failures"] += 1
                out["crc_failures"] += not ok
        except KafkaToolError:
            pass
    return out


def comparable(report) -> dict:
    """Every figure of a report, in plan order (what the Parquet files and JSON lines carry)."""
    segs = []
    for s in report.segments:
        row = segment_row(s)
        row.pop("ranges")
        row.pop("rescanned")
        segs.append((row, format_rows(s.stats), [(f.kind, f.severity, f.path, f.position, f.offset, f.message)
                                                 for f in s.findings]))
    return {"segments": segs, "partitions": [partition_row(p) for p in report.partitions],
            "topics": [stats_fields(t.stats) for t in report.topics], "total": stats_fields(report.total)}


@pytest.fixture(scope="module")
def whole(mixed_dir):
    found = discover([str(mixed_dir.path)])
    plan = make_plan(found.segments, split_bytes=1 << 30)
    return plan, run_local(plan)


def test_scan_totals_equal_an_independent_walk_of_every_segment(mixed_dir, whole):
    plan, report = whole
    assert len(report.segments) == len(plan.segments) >= 11
    for seg in report.segments:
        w = walk_totals(Path(seg.path))
        got = {k: getattr(seg.stats, k) for k in w}
        assert got == w, seg.path
    assert report.total.records == sum(walk_totals(Path(s.path))["records"] for s in report.segments)


def test_cutting_into_ranges_and_a_process_pool_change_nothing(mixed_dir, whole):
    _, report = whole
    found = discover([str(mixed_dir.path)])
    plan = make_plan(found.segments, split_bytes=4096, parallelism=2)
    assert len(plan.items) > 3 * len(plan.segments)
    assert comparable(run_local(plan, jobs=2)) == comparable(report)


def test_cuts_come_from_the_offset_index_or_a_header_walk(mixed_dir):
    segs = {s.name: s for s in discover([str(mixed_dir.path)]).segments}
    orders = segs[f"orders-0/{0:020d}.log"]
    cuts, how = cut_points(orders, 4096)
    assert how == "index" and cuts
    damaged = segs[f"damaged-0/{0:020d}.log"]  # no .index
    cuts2, how2 = cut_points(damaged, 1024)
    assert how2 == "header-walk" and cuts2
    for seg, cs in ((orders, cuts), (damaged, cuts2)):
        with FileRecords(seg.path) as fr:
            starts = {b.position for b in _batches(fr)}
        assert set(cs) <= starts


def _batches(fr):
    try:
        yield from fr.batches()
    except KafkaToolError:
        return


def test_a_cut_that_is_not_a_batch_boundary_is_caught_and_the_segment_rescanned(mixed_dir, whole):
    _, report = whole
    found = discover([str(mixed_dir.path)])
    plan = make_plan(found.segments, split_bytes=1 << 30)
    # Cut the first orders segment in the middle of a batch by hand.
    victim = next(it for it in plan.items if it.topic == "orders")
    bad = [replace(victim, end=1001, range_count=2), replace(victim, id=len(plan.items), start=1001, range_index=1,
                                                             range_count=2)]
    items = [bad[0] if it.id == victim.id else it for it in plan.items] + [bad[1]]
    broken = Plan(plan.segments, tuple(items), ((*range(len(items)),),), plan.notes)
    got = run_local(broken)
    assert comparable(got) == comparable(report)
    assert any("did not join as one walk of the file" in n for n in got.notes)
    assert [s.rescanned for s in got.segments].count(True) == 1


def test_damage_is_reported_with_positions_as_dump_reports_it(whole):
    _, report = whole
    (seg,) = [s for s in report.segments if s.topic == "damaged"]
    assert seg.stats.crc_failures == 1
    kinds = [(f.kind, f.severity.value, f.position) for f in seg.findings]
    assert kinds == [("crc-mismatch", "error", 1709), ("torn-tail", "warning", 5075)]
    assert seg.stop is not None and seg.stop.kind == "torn-tail" and seg.unread_bytes == 50
    assert [f.kind for f in report.findings if f.severity.value != "info"] == ["crc-mismatch", "torn-tail"]
    assert int(report.exit_code) == 1
    assert all(s.stop is None for s in report.segments if s.topic != "damaged")


def test_kafkas_own_figures_for_kafka_written_batches(mixed_dir, whole):
    _, report = whole
    (ref,) = [p for p in report.partitions if p.topic == "ref"]
    v1, v2gen = mixed_dir.kafka_ref_gen
    s = ref.stats
    data_records = v1["records"] + v2gen["records"]
    assert s.records == data_records + v2gen["control_batches"]  # one marker record per control batch
    assert s.control_batches == v2gen["control_batches"]
    assert s.bytes == v1["bytes"] + v2gen["bytes"]
    assert (s.first_offset, s.last_offset) == (v1["first_offset"], v2gen["last_offset"])
    # MemoryRecordsBuilder.uncompressedBytesWritten summed per builder batch; markers are 78 bytes raw.
    by_magic = {m: sum(f[3] for (mm, _), f in s.formats.items() if mm == m) for m in (1, 2)}
    assert by_magic[1] == v1["uncompressed_bytes"]
    assert by_magic[2] == v2gen["uncompressed_bytes"] + 78 * v2gen["control_batches"]
    assert s.transactional_batches == v2gen["builder_batches"] + v2gen["control_batches"]


def _segment(root: Path, name: str, batches: list[bytes], base: int = 0) -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{base:020d}.log"
    p.write_bytes(b"".join(batches))
    return p


def test_out_of_order_timestamps_count_across_batches_ranges_and_segments(tmp_path):
    def batch(off: int, tss: list[int]) -> bytes:
        return v2.build_batch([(off + i, TS + t, b"k", b"v" * 3000, []) for i, t in enumerate(tss)])

    # segment 1: 5 3 4 | 1 10  -> 3<5, 1<4: 2 ; segment 2: 9 | 8  -> 9<10 across segments, 8<9: 2
    _segment(tmp_path, "t-0", [batch(0, [5, 3, 4]), batch(3, [1, 10])])
    _segment(tmp_path, "t-0", [batch(5, [9]), batch(6, [8])], base=5)
    found = discover([str(tmp_path)])
    for split in (1 << 30, 1000):
        rep = run_local(make_plan(found.segments, split_bytes=split))
        assert [s.stats.out_of_order for s in rep.segments] == [2, 1]
        assert rep.partitions[0].stats.out_of_order == 4
        assert (rep.total.min_timestamp, rep.total.max_timestamp) == (TS + 1, TS + 10)


def test_corrupt_size_mid_file_resyncs_at_the_next_batch_as_dump_does(tmp_path):
    batches = [v2.build_batch([(i, TS, b"k", b"v" * 500, [])]) for i in range(8)]
    data = bytearray(b"".join(batches))
    pos = sum(len(b) for b in batches[:4])
    struct.pack_into(">i", data, pos + 8, 3)  # a declared size below the v0 minimum of 14
    _segment(tmp_path, "c-0", [bytes(data)])
    found = discover([str(tmp_path)])
    for split in (1 << 30, 700):
        rep = run_local(make_plan(found.segments, split_bytes=split))
        (seg,) = rep.segments
        assert seg.stats.batches == 7 and seg.stop is not None
        assert (seg.stop.kind, seg.stop.position, seg.stop.data["resume"]) == ("corrupt-region", pos,
                                                                               pos + len(batches[4]))
        assert seg.unread_bytes == len(batches[4])


def test_decompression_over_the_task_limit_is_a_finding_not_a_crash(tmp_path):
    _segment(tmp_path, "z-0", [v2.build_batch([(0, TS, None, b"\0" * 200_000, [])], codec=4)])
    found = discover([str(tmp_path)])
    rep = run_local(make_plan(found.segments), ScanOptions(decompress_limit=10_000))
    assert rep.total.decode_failures == 1
    (f,) = rep.findings
    assert f.kind == "decompress-limit" and "exceeds the limit" in f.message


def test_an_unknown_magic_is_a_finding_as_dump_reports_it(tmp_path):
    from tests.support import damaged_batches as d

    odd = bytearray(d.batch(3))
    odd[16] = 3  # outside the CRC: the batch reads as v2 with a valid checksum
    _segment(tmp_path, "m-0", [d.batch(0), bytes(odd), d.batch(6)])
    found = discover([str(tmp_path)])
    for split in (1 << 30, 120):
        rep = run_local(make_plan(found.segments, split_bytes=split))
        assert rep.total.crc_failures == 0
        (f,) = [f for f in rep.findings if f.severity == Severity.ERROR]
        assert (f.kind, f.position) == ("unknown-magic", len(d.batch(0)))
        assert int(rep.exit_code) == 1


def test_remote_url_source_reads_the_same_as_mmap(mixed_dir, whole, tmp_path):
    _, report = whole
    found = discover([mixed_dir.path.as_uri()])
    assert all(s.path.startswith("file://") for s in found.segments)
    plan = make_plan(found.segments, split_bytes=4096)
    got = run_local(plan, ScanOptions(chunk_bytes=1024))  # chunk refills and batches bigger than a chunk
    strip = comparable(got)
    for row, *_ in strip["segments"]:
        row["path"] = row["path"].removeprefix("file://")
    want = comparable(report)
    for seg in strip["segments"]:
        seg[2][:] = [(k, sev, p.removeprefix("file://"), *rest) for k, sev, p, *rest in seg[2]]
    for row in strip["partitions"]:
        row["dir"] = row["dir"].removeprefix("file://")
    assert strip == want


def _export(plan: Plan, root: Path, flt: ExportFilter = NO_FILTER, jobs: int = 1):
    done = run_pass(plan, work=PassWork(ExportTarget(str(root), flt)), jobs=jobs)
    return done, ds.dataset(root, format="parquet", partitioning="hive").to_table()


def test_export_has_every_record_once_with_time_and_topic_filters(mixed_dir, tmp_path):
    found = discover([str(mixed_dir.path)], topics=["orders", "leg*"])
    assert {s.topic for s in found.segments} == {"orders", "legacy"}
    plan = make_plan(found.segments, split_bytes=4096)
    done, t = _export(plan, tmp_path / "all", jobs=2)
    assert t.num_rows == done.exported == done.report.total.records == run_local(plan).total.records
    rows = sorted(zip(t["topic"].to_pylist(), t["partition"].to_pylist(), t["record_offset"].to_pylist(),
                      strict=True))
    assert len(set(rows)) == len(rows)
    # Against a direct walk of one segment: same offsets, keys, values, headers.
    seg = next(s for s in found.segments if s.topic == "orders" and s.partition == 1 and s.base_offset == 0)
    with FileRecords(seg.path) as fr:
        direct = [(r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers])
                  for b in fr.batches() for r in b.records()]
    sub = t.filter((ds.field("topic") == "orders") & (ds.field("partition") == 1)).sort_by("record_offset").to_pylist()
    assert [(r["record_offset"], r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]])
            for r in sub[:len(direct)]] == direct
    lo, hi = TS + 1000, TS + 3000
    done, w = _export(plan, tmp_path / "window", ExportFilter(lo, hi))
    ts = w["timestamp_ms"].to_pylist()
    assert done.exported == len(ts) > 0 and all(lo <= x < hi for x in ts)
    assert done.exported == sum(1 for x in t["timestamp_ms"].to_pylist() if lo <= x < hi)


def test_verify_index_judges_with_crcs_as_reindex_time_check_verify(mixed_dir, tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(mixed_dir.path, root)
    idx = root / "orders-1" / f"{0:020d}.index"
    data = bytearray(idx.read_bytes())
    struct.pack_into(">i", data, 12, struct.unpack_from(">i", data, 12)[0] + 1)  # entry 1's position
    idx.write_bytes(bytes(data))
    plan = make_plan(discover([str(root)]).segments, split_bytes=2048)
    rows = run_pass(plan, work=PassWork(verify_index=True, index_interval_bytes=1024), jobs=2).index_checks
    verdicts = {(r["topic"], r["partition"], r["base_offset"]): r for r in rows}
    assert len(rows) == len(plan.segments)
    # An offset entry that no longer points at a batch start makes the broker misbehave: an error.
    assert (verdicts[("orders", 1, 0)]["classification"], verdicts[("orders", 1, 0)]["severity"]) == \
        ("corrupt", "error")
    # The damaged segment holds a CRC failure: the broker's recovery (CRCs checked) truncates there, and so does
    # the check, as reindex-time --check --verify says.
    damaged = verdicts[("damaged", 0, 0)]
    assert (damaged["classification"], damaged["severity"]) == ("log-truncation", "error")
    assert "truncate 3416 bytes at byte 1709" in damaged["detail"] and "no .index" in damaged["detail"]
    r = run_cli("reindex-time", root / "damaged-0", "--check", "--verify", "--index-interval-bytes", "1024",
                "--format", "json")
    (seg_row,) = [x for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "segment"]
    assert r.returncode == 1 and seg_row["valid_bytes"] == 1709 and seg_row["severity"] == "error"
    assert seg_row["findings"][0]["message"] in damaged["detail"]
    assert sum(r["classification"] == "ok" for r in rows) == len(rows) - 2


def test_discovery_of_urls_matches_local_paths(mixed_dir):
    part = mixed_dir.path / "orders-0"
    local = discover([str(part)]).segments
    remote = discover([part.as_uri()]).segments
    assert [(s.topic, s.partition, s.base_offset, s.size) for s in remote] == \
        [(s.topic, s.partition, s.base_offset, s.size) for s in local] and len(local) == 2
    assert all(s.index_path and s.index_path.endswith(".index") for s in remote)
    (one,) = discover([(part / f"{0:020d}.log").as_uri()]).segments
    assert (one.topic, one.partition, one.base_offset) == ("orders", 0, 0)
    whole = discover([mixed_dir.path.as_uri()])
    assert len(whole.segments) == len(discover([str(mixed_dir.path)]).segments)


def test_copies_of_a_partition_in_two_log_dirs_stay_apart(mixed_dir, tmp_path):
    for broker in ("b1", "b2"):
        shutil.copytree(mixed_dir.path / "txn-0", tmp_path / broker / "txn-0")
    found = discover([str(tmp_path / "b1"), str(tmp_path / "b2")])
    assert any("found in more than one log dir" in n for n in found.notes)
    rep = run_local(make_plan(found.segments, split_bytes=512))
    one = run_local(make_plan(discover([str(tmp_path / "b1")]).segments))
    assert [p.dir for p in rep.partitions] == [str(tmp_path / "b1" / "txn-0"), str(tmp_path / "b2" / "txn-0")]
    assert [p.stats.records for p in rep.partitions] == [one.total.records] * 2
    assert rep.total.records == 2 * one.total.records and rep.total.out_of_order == 2 * one.total.out_of_order
