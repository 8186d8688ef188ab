"""The broker's read path: segments, offset index, limits, min-one-message, errors; and the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path

from kafkatool.fetch.response import OFFSET_OUT_OF_RANGE, parse_response
from kafkatool.fetch.simulate import FetchOptions, PartitionLog, PartitionRequest, read_partition, simulate
from kafkatool.log.index import OffsetPosition, encode_offset_index
from kafkatool.log.layout import PartitionDir
from kafkatool.record.default_records import build_batch
from tests.support.cli import run_cli

TS = 1700000000000


def _batch(first: int, n: int, value: bytes = b"v" * 40) -> bytes:
    return build_batch([(first + i, TS + first + i, b"k%d" % (first + i), value, ()) for i in range(n)])


def _partition(tmp_path: Path, name: str, segments: dict[int, list[bytes]],
               index: dict[int, list[tuple[int, int]]] | None = None) -> PartitionLog:
    d = tmp_path / name
    d.mkdir()
    for base, batches in segments.items():
        (d / f"{base:020d}.log").write_bytes(b"".join(batches))
        entries = (index or {}).get(base)
        if entries is not None:
            (d / f"{base:020d}.index").write_bytes(
                encode_offset_index([OffsetPosition(o, p) for o, p in entries], base))
    return PartitionLog.from_partition_dir(PartitionDir.scan(d))


def test_segment_floor_then_next_segment(tmp_path: Path) -> None:
    # Segment 0 holds 0..9 then a compaction gap; segment 20 starts at 20. Offset 15 is in segment 0's range
    # but no batch there reaches it: the broker moves on to segment 20.
    log = _partition(tmp_path, "t-0", {0: [_batch(0, 5), _batch(5, 5)], 20: [_batch(20, 5), _batch(25, 5)]})
    r = read_partition(log, 15, 1 << 20, False)
    assert r.segment is not None and r.segment.base_offset == 20 and r.position == 0
    assert r.first_batch is not None and r.first_batch.offset == 24
    r = read_partition(log, 7, 1 << 20, False)
    assert r.segment is not None and r.segment.base_offset == 0 and r.first_batch is not None
    assert r.first_batch.offset == 9 and r.position == len(_batch(0, 5))
    # The slice stays inside its segment (maxPosition = segment size).
    assert r.size == len(_batch(5, 5))


def test_offset_index_decides_where_the_walk_starts(tmp_path: Path) -> None:
    b0, b1, b2 = _batch(0, 5), _batch(5, 5), _batch(10, 5)
    # A (stale) index entry claims offset 6 sits at batch 10..14's position: the broker trusts it and starts there.
    log = _partition(tmp_path, "t-0", {0: [b0, b1, b2]}, {0: [(6, len(b0) + len(b1))]})
    r = read_partition(log, 7, 1 << 20, False)
    assert r.position == len(b0) + len(b1) and r.first_batch is not None and r.first_batch.offset == 14
    r = read_partition(log, 3, 1 << 20, False)  # below the entry: lookup falls back to position 0
    assert r.position == 0


def test_out_of_range_and_log_end(tmp_path: Path) -> None:
    log = _partition(tmp_path, "t-0", {10: [_batch(10, 5)]})
    assert read_partition(log, 9, 1000, False).error_code == OFFSET_OUT_OF_RANGE
    assert read_partition(log, 16, 1000, False).error_code == OFFSET_OUT_OF_RANGE
    r = read_partition(log, 15, 1000, False)  # == log end offset: empty, no error
    assert r.error_code == 0 and r.size == 0 and r.high_watermark == 15
    r = read_partition(log, 10, 1000, False, high_watermark=10)
    assert r.size == 0


def test_high_watermark_limits_the_slice(tmp_path: Path) -> None:
    b0, b1 = _batch(0, 5), _batch(5, 5)
    log = _partition(tmp_path, "t-0", {0: [b0, b1]})
    r = read_partition(log, 0, 1 << 20, False, high_watermark=5)
    assert r.size == len(b0) and r.high_watermark == 5


def test_response_limit_and_min_one_message_across_partitions(tmp_path: Path) -> None:
    big = _batch(0, 30)  # ~1.7 KB batch
    logs = [_partition(tmp_path, f"t-{i}", {0: [big, _batch(30, 3)]}) for i in range(3)]
    reqs = [PartitionRequest(log, 0) for log in logs]
    # Fetch v3: the first partition may exceed the limits to return one whole batch; later ones may not.
    opts = FetchOptions(fetch_version=3, partition_max_bytes=500, fetch_max_bytes=1 << 20)
    plans = simulate(opts, reqs)
    assert [p.read.size for p in plans] == [len(big), 500, 500]
    assert [p.read.min_one_message for p in plans] == [True, False, False]
    # v2 -> v1 grows this batch: Spre is the first converted batch's size, not the slice's.
    assert plans[0].lazy is not None and plans[0].lazy.first_converted_size > len(big)
    assert [p.committed_size for p in plans] == [plans[0].lazy.first_converted_size, 0, 0]
    # The response limit shrinks by each *unconverted* slice (here the first slice takes all of it, 100 bytes
    # of the second batch included).
    opts = FetchOptions(fetch_version=3, partition_max_bytes=1 << 20, fetch_max_bytes=len(big) + 100)
    plans = simulate(opts, reqs)
    assert [p.read.max_bytes for p in plans] == [len(big) + 100, 0, 0]
    assert [p.read.size for p in plans] == [len(big) + 100, 0, 0]
    opts = FetchOptions(fetch_version=3, partition_max_bytes=len(big), fetch_max_bytes=len(big) + 100)
    assert [p.read.max_bytes for p in simulate(opts, reqs)] == [len(big), 100, 0]
    # Fetch v0-2 are hard limits: no min-one-message, and the request carries no max_bytes.
    opts = FetchOptions(fetch_version=2, partition_max_bytes=500, fetch_max_bytes=10)
    plans = simulate(opts, reqs)
    assert [p.read.size for p in plans] == [500, 500, 500]
    assert plans[0].consumer is not None and plans[0].consumer.outcome == "empty"


def test_cli_text_json_and_response(tmp_path: Path) -> None:
    log = _partition(tmp_path, "orders-0", {0: [_batch(0, 5), _batch(5, 5)]})
    out = tmp_path / "resp.bin"
    r = run_cli("fetch-sim", log.path, "--fetch-version", "1", "--fetch-offset", "3", "--output", out,
                "--consumer-view", "--format", "json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    records = [x for x in lines if x["type"] == "record"]
    assert [x["offset"] for x in records] == list(range(3, 10)) and records[0]["key"] == "k3"
    part = next(x for x in lines if x["type"] == "partition")
    assert part["case"] in ("exact", "cut", "overflow") and part["records_returned"] == 7
    assert part["schema"] == 1 and part["to_magic"] == 0
    resp = parse_response(out.read_bytes(), 1)
    assert resp.partitions[0].topic == "orders" and resp.partitions[0].records is not None
    assert len(resp.partitions[0].records) == part["committed_size"]
    r = run_cli("fetch-sim", log.path, "--to-magic", "1", "--fetch-offset", "3")
    assert r.returncode == 0 and "orders-0: fetch v3 (magic 1) from offset 3" in r.stdout


def test_cli_raw_matches_library_and_errors(tmp_path: Path) -> None:
    log = _partition(tmp_path, "orders-0", {0: [_batch(0, 5)]})
    raw = tmp_path / "raw.bin"
    r = run_cli("fetch-sim", log.path, "--to-magic", "0", "--output", raw, "--raw")
    assert r.returncode == 0, r.stderr
    buf = io.BytesIO()
    simulate(FetchOptions(fetch_version=1), [PartitionRequest(log, 0)], buf, raw=True)
    assert raw.read_bytes() == buf.getvalue()
    r = run_cli("fetch-sim", log.path, "--fetch-version", "3", "--to-magic", "0")
    assert r.returncode == 2 and "contradicts" in r.stderr
    r = run_cli("fetch-sim", log.path, "--fetch-offset", "99")
    assert r.returncode == 1 and "OFFSET_OUT_OF_RANGE" in r.stderr
    r = run_cli("fetch-sim", tmp_path / "missing")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_cli_sweep_and_plot(tmp_path: Path) -> None:
    log = _partition(tmp_path, "orders-0", {0: [_batch(i * 20, 20, b"x" * 200) for i in range(30)]})
    png = tmp_path / "sweep.png"
    r = run_cli("fetch-sim", log.path, "--sweep-chunk-sizes", "4K,16K", "--partition-max-bytes", "32K",
                "--plot", png, "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["chunk_size"] for x in rows] == [4096, 16384, "whole"]
    assert len({x["source_bytes"] for x in rows}) == 1 and rows[0]["fetches"] > 1
    assert rows[0]["peak_model_bytes"] < rows[1]["peak_model_bytes"] < rows[2]["peak_model_bytes"]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and b"IHDR" in data[:16]


def test_cli_reports_padding_and_peak_conversion_memory(tmp_path: Path) -> None:
    # Fetch offset 3 drops records 0..2 of the uncompressed first batch: the converted data is smaller than
    # the committed slice, so an overflow batch pads it.
    log = _partition(tmp_path, "orders-0", {0: [_batch(0, 10)]})
    raw = tmp_path / "raw.bin"
    r = run_cli("fetch-sim", log.path, "--fetch-version", "1", "--fetch-offset", "3", "--output", raw, "--raw",
                "--format", "json")
    assert r.returncode == 0, r.stderr
    part = next(json.loads(x) for x in r.stdout.splitlines() if '"partition"' in x)
    data = raw.read_bytes()
    assert part["case"] == "overflow" and len(data) == part["committed_size"]
    start = part["converted_size"]
    assert data[start:start + 8] == b"\xff" * 8 and not any(data[start + 12:])  # header, then zeros
    assert part["padding_bytes"] == len(data) - start == part["committed_size"] - part["converted_size"] > 0
    # Kafka's accounting for the one chunk: source batch bytes + builder bytes (temporaryMemoryBytes) + the chunk.
    assert part["chunks"] == 1
    assert part["peak_conversion_memory"] == part["temporary_memory_bytes"] + part["converted_size"]
    assert part["temporary_memory_bytes"] == len(_batch(0, 10)) + part["converted_size"]  # v0 builder: no header
    assert part["peak_conversion_memory_traced"] is None
    r = run_cli("fetch-sim", log.path, "--fetch-version", "1", "--fetch-offset", "3", "--trace-memory",
                "--format", "json")
    assert r.returncode == 0, r.stderr
    traced = next(json.loads(x) for x in r.stdout.splitlines() if '"partition"' in x)
    # Measured: the converted chunk is alive when its conversion ends, so the traced peak holds at least it.
    assert traced["peak_conversion_memory_traced"] >= traced["converted_size"] > 0
    r = run_cli("fetch-sim", log.path, "--fetch-version", "1", "--fetch-offset", "3", "--trace-memory")
    assert "peak conversion memory" in r.stdout and "(traced in kafkatool " in r.stdout


def test_cli_fetch_offset_per_partition(tmp_path: Path) -> None:
    a = _partition(tmp_path, "a-0", {0: [_batch(0, 10), _batch(10, 10)]})
    b = _partition(tmp_path, "a-1", {0: [_batch(0, 10), _batch(10, 10)]})

    def offsets(*args: object) -> list[tuple[str, int, int]]:
        r = run_cli("fetch-sim", a.path, b.path, "--to-magic", "1", "--format", "json", *args)
        assert r.returncode == 0, r.stderr
        parts = [json.loads(x) for x in r.stdout.splitlines() if '"partition"' in x]
        return [(f"{p['topic']}-{p['partition']}", p["fetch_offset"], p["first_returned_offset"]) for p in parts]

    assert offsets("--fetch-offset", "3,17") == [("a-0", 3, 3), ("a-1", 17, 17)]  # one per partition, in PATH order
    assert offsets("--fetch-offset", "3", "--fetch-offset", "17") == [("a-0", 3, 3), ("a-1", 17, 17)]
    assert offsets("--fetch-offset", "5") == [("a-0", 5, 5), ("a-1", 5, 5)]  # one for all
    # by name, the rest plain
    assert offsets("--fetch-offset", "a-1=12", "--fetch-offset", "4") == [("a-0", 4, 4), ("a-1", 12, 12)]
    assert offsets() == [("a-0", 0, 0), ("a-1", 0, 0)]  # default: the log start offset
    r = run_cli("fetch-sim", a.path, b.path, "--fetch-offset", "1,2,3")
    assert r.returncode == 2 and "3 fetch offsets for 2 partitions" in r.stderr
    r = run_cli("fetch-sim", a.path, b.path, "--fetch-offset", "b-0=1")
    assert r.returncode == 2 and "unknown partitions: b-0" in r.stderr


def test_a_log_end_offset_past_int64_is_a_finding_not_an_internal_error(tmp_path: Path) -> None:
    # A batch at offset 2^63-1: the log end offset (last + 1) does not fit the response's int64 high watermark.
    import pytest

    from kafkatool.errors import CorruptDataError
    from tests.support import damaged_batches as d

    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / f"{0:020d}.log").write_bytes(_batch(0, 3) + d.offset_max())
    log = PartitionLog.from_partition_dir(PartitionDir.scan(tmp_path / "t-0"))
    with pytest.raises(CorruptDataError, match="does not fit an int64") as e:
        read_partition(log, 0, 1 << 20, True)
    assert (e.value.position, e.value.exit_code) == (len(_batch(0, 3)), 1)


def test_data_below_its_segment_s_name_is_blamed_on_the_data_not_on_an_option(tmp_path: Path) -> None:
    import pytest

    from kafkatool.errors import CorruptDataError, UsageError

    log = _partition(tmp_path, "t-0", {1000: [_batch(0, 3), _batch(3, 3)]})
    with pytest.raises(CorruptDataError, match="log end offset 6 .* below the log start offset 1000") as e:
        read_partition(log, 1000, 1 << 20, True)
    assert e.value.field is None and e.value.position == len(_batch(0, 3))
    ok = _partition(tmp_path, "u-0", {0: [_batch(0, 3)]})
    with pytest.raises(UsageError) as u:  # a high watermark the operator gave, outside the log: that option
        read_partition(ok, 0, 1 << 20, True, high_watermark=10)
    assert u.value.field == "high_watermark"
    r = run_cli("fetch-sim", tmp_path / "t-0")
    assert r.returncode == 1 and "--high-watermark" not in r.stderr and "below the log start offset" in r.stderr
