"""fetch-sim --raw against kafka-ref lazysend (kafka-clients 3.9.1's LazyDownConversionRecordsSend).

Sources are written by kafka-ref gen (Kafka's MemoryRecordsBuilder and end-transaction markers). Each case
runs ``kafka-ref lazysend`` and ``kafkatool fetch-sim --raw`` on the same file, then compares the bytes and
kafka-ref's own analysis of them (committed size, complete batches, records, duplicates, tail, overflow
headers). kafka-ref comes from tests/kafkaref.py; the lazysend runs are batched into a couple of JVMs.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkatool.fetch_sim import FetchOptions, PartitionLog, PartitionRequest, simulate, version_for_magic
from kafkatool.file_records import FileRecords
from kafkatool.logdir import TopicPartition
from tests.kafkaref import KafkaRef

pytestmark = pytest.mark.interop

# kafka-ref comes from tests/kafkaref.py (built on demand; a missing Java fails the tests, never skips them).
# lazysend takes one case per command; all of them run in a couple of JVMs (KafkaRef.run_batches).
ALL_EXIT_CODES = tuple(range(256))


# name -> kafka-ref gen options
SOURCES = {
    "v2-none": "--magic 2 --codec none --records 3000 --batch-records 50 --seed 11",
    "v2-gzip": "--magic 2 --codec gzip --records 3000 --batch-records 50 --seed 12",
    "v2-lz4": "--magic 2 --codec lz4 --records 600 --batch-records 30 --seed 13",
    "v2-snappy": "--magic 2 --codec snappy --records 600 --batch-records 30 --seed 14",
    "v1-mixed": "--magic 1 --codec none,gzip --records 400 --batch-records 20 --seed 15",
    "v0-mixed": "--magic 0 --codec none,gzip --records 200 --batch-records 10 --seed 16",
    "v1v2-mixed": "--magic 1,2 --codec none,gzip,gzip,none --records 400 --batch-records 20 --seed 17",
    "txn": "--magic 2 --codec none,gzip --records 400 --batch-records 20 --transactional --control-every 2 "
           "--seed 18",
    "zstd-mid": "--magic 2 --codec none,zstd --records 4000 --batch-records 10 --seed 19",
    "zstd-first": "--magic 2 --codec zstd,none --records 100 --batch-records 10 --seed 20",
}
# Codecs whose compressed bytes we do not yet reproduce (snappy-java's C++ snappy; cramjam picks other matches):
# for those the records must agree, the bytes may not.
RECORD_LEVEL_ONLY = {"v2-snappy"}


@pytest.fixture(scope="module")
def sources(kafka_ref: KafkaRef, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("sources")
    out = {name: d / f"{name}.log" for name in SOURCES}
    runs = kafka_ref.run_batches([[["gen", "--out", str(out[name]), *opts.split()]] for name, opts in SOURCES.items()],
                                 allow=(0,))
    assert all(r[0].returncode == 0 for r in runs)
    return out


@dataclass(frozen=True)
class Case:
    source: str
    to_magic: int
    offset: str  # first / inside / boundary / marker / <int>
    size: str  # small / batch / medium / large / <int>
    min_one: bool = False
    position: bool = False

    @property
    def id(self) -> str:
        return (f"{self.source}-m{self.to_magic}-{self.offset}-{self.size}" + ("-minone" if self.min_one else "")
                + ("-position" if self.position else ""))


def _cases() -> Iterator[Case]:
    for src in ("v2-none", "v2-gzip", "v1-mixed", "v0-mixed", "v1v2-mixed", "txn", "v2-lz4", "v2-snappy"):
        for to_magic in (0, 1):
            yield Case(src, to_magic, "inside", "medium")
            yield Case(src, to_magic, "first", "large")
        yield Case(src, 1, "boundary", "small")
        yield Case(src, 0, "boundary", "small", min_one=True)
        yield Case(src, 1, "inside", "batch")
    yield Case("v2-none", 0, "inside", "large")  # > 128 KiB of padding: repeated overflow headers
    yield Case("v2-gzip", 1, "first", "200000")
    yield Case("txn", 1, "marker", "medium")  # the duplicated first batch
    yield Case("txn", 0, "marker", "large")
    yield Case("txn", 1, "marker", "small", min_one=True)
    yield Case("zstd-mid", 1, "first", "100000")  # zstd after the first chunk: overflow
    yield Case("zstd-mid", 1, "first", "300000")  # ... with > 128 KiB left: the send fails
    yield Case("zstd-mid", 0, "inside", "5000")
    yield Case("zstd-first", 1, "first", "medium")  # UNSUPPORTED_COMPRESSION_TYPE
    yield Case("v2-none", 1, "inside", "medium", position=True)
    yield Case("v1-mixed", 0, "boundary", "medium", position=True)


def _resolve(case: Case, path: Path) -> tuple[int, int, int | None]:
    """(fetch offset, size, position) from the case's selectors, using the source's batch layout."""
    with FileRecords(path) as fr:
        batches = [(b.position, b.size, b.base_offset if b.magic >= 2 else b.last_offset, b.last_offset,
                    b.is_control) for b in fr.batches()]
    pos3, size3, base3, last3, _ = batches[2]
    offsets = {"first": batches[0][2], "boundary": base3, "inside": (base3 + last3 + 1) // 2 if last3 > base3 else
               last3}
    if case.offset == "marker":
        marker = next(b for b in batches[1:] if b[4])
        offset = marker[3]
        first = marker
    elif case.offset.isdigit():
        offset = int(case.offset)
        first = next(b for b in batches if b[3] >= offset)
    else:
        offset = offsets[case.offset]
        first = next(b for b in batches if b[3] >= offset)
    sizes = {"small": max(1, first[1] // 2), "batch": first[1], "medium": 3000, "large": 300_000}
    size = int(case.size) if case.size.isdigit() else sizes[case.size]
    return offset, size, (first[0] if case.position else None)


CASES = list(_cases())


@pytest.fixture(scope="module")
def lazysends(kafka_ref: KafkaRef, sources: dict[str, Path],
              tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int, list[dict[str, object]]]]:
    """Every case's ``kafka-ref lazysend``: (output file, exit code, JSON lines)."""
    d = tmp_path_factory.mktemp("lazysend")
    groups = []
    for case in CASES:
        path = sources[case.source]
        offset, size, position = _resolve(case, path)
        args = ["lazysend", "--in", str(path), "--out", str(d / f"{case.id}.bin"), "--to-magic", str(case.to_magic),
                "--first-offset", str(offset), "--size", str(size)]
        if case.min_one:
            args.append("--min-one-message")
        if position is not None:
            args += ["--position", str(position)]
        groups.append([args])
    runs = kafka_ref.run_batches(groups, allow=ALL_EXIT_CODES)
    return {c.id: (d / f"{c.id}.bin", r[0].returncode, list(r[0].lines)) for c, r in zip(CASES, runs, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fetch_sim_raw_equals_kafka_lazysend(case: Case, sources: dict[str, Path],
                                             lazysends: dict[str, tuple[Path, int, list[dict[str, object]]]]) -> None:
    path = sources[case.source]
    offset, size, position = _resolve(case, path)
    ref_out, rc, lines = lazysends[case.id]

    opts = FetchOptions(fetch_version=version_for_magic(case.to_magic), partition_max_bytes=size,
                        min_one_message=case.min_one)
    buf = io.BytesIO()
    plan = simulate(opts, [PartitionRequest(PartitionLog.from_file(path, TopicPartition("t", 0)), offset, position)],
                    buf, raw=True)[0]
    ours = buf.getvalue()

    if rc == 4:  # Kafka refused in the LazyDownConversionRecords constructor
        assert lines[0]["exception"].endswith("UnsupportedCompressionTypeException")
        assert plan.error_code == 76 and plan.committed_size == -1 and ours == b""
        return
    if rc == 1:  # the send threw (Kafka's iterator in its FAILED state after a zstd chunk)
        assert lines[0]["exception"] == "java.lang.IllegalStateException"
        assert plan.stats.case == "send-failed"
        assert ours == ref_out.read_bytes()
        return
    assert rc == 0, lines
    ref = lines[0]
    wire = ref["wire"]
    assert isinstance(wire, dict)
    theirs = ref_out.read_bytes()
    assert plan.read.position == ref["slice_start"] and plan.read.size == ref["slice_size"]
    if case.source in RECORD_LEVEL_ONLY:
        # Same records in the same complete batches; sizes follow the codec's bytes.
        assert plan.consumer is not None
        assert plan.consumer.records_sent == wire["records_visible"]
        assert plan.consumer.duplicate_offsets == wire["duplicate_offsets"]
        if wire["records_visible"]:
            assert plan.consumer.first_returned_offset is not None
        return
    assert ours == theirs
    assert plan.committed_size == ref["committed_size"] == len(theirs)
    view = plan.consumer
    assert view is not None
    assert view.complete_batches == wire["complete_batches"]
    assert view.records_sent == wire["records_visible"]
    assert view.duplicate_offsets == wire["duplicate_offsets"]
    assert view.tail == wire["tail"]
    if wire["tail"] == "overflow":  # kafka-ref lists the headers it can see (>= 8 bytes of ff)
        headers = wire["overflow_headers"]
        assert isinstance(headers, list)
        assert [h for h in plan.stats.overflow_headers if len(ours) - h >= 8] == [h["at"] for h in headers]
    assert plan.stats.records_converted == ref["records_converted"]
