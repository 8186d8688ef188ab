"""``kafkatool.record.down_convert.down_convert`` against Kafka's ``RecordsUtil.downConvert`` (kafka-clients 3.9.1,
``kafka-ref downconvert --api recordsutil``): the routine behind every 3.x broker down-conversion.

* uncompressed sources (v2 with transaction markers and headers, LogAppendTime, idempotent; v1; mixed
  v0/v1/v2) to magic 1, 0 and 2 at several first offsets (before, at, inside and after the data): our output
  is byte for byte Kafka's, and so are the conversion statistics (records converted, temporary memory);
* gzip / snappy / lz4 sources: the compressed bytes depend on the codec library, so both outputs are read
  back by Kafka (``kafka-ref dump --deep``) and must hold the same batches and records;
* zstd below magic 2 is refused by both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafkatool.record.down_convert import ZstdDownConversionError, down_convert
from kafkatool.record.file_records import FileRecords
from tests.support.kafkaref import OK, REFUSED, Dump, KafkaRef
from tests.support.refjson import assert_same_batches, ignore_codec_bytes

pytestmark = pytest.mark.interop

BASE = 100
COMMON: dict[str, Any] = {"base_offset": BASE, "records": 40, "batch_records": 5}
SOURCES: dict[str, dict[str, Any]] = {
    "v2-none-txn-headers": {"magic": "2", "codec": "none", "headers": 2, "control_every": 2, "abort_fraction": 0.3,
                            "null_key_fraction": 0.2, "null_value_fraction": 0.1, "seed": 31},
    "v2-none-logappendtime": {"magic": "2", "codec": "none", "headers": 1, "timestamp_type": "append", "seed": 32},
    "v2-none-idempotent": {"magic": "2", "codec": "none", "idempotent": True, "producer_epoch": 3, "seed": 33},
    "v1-none": {"magic": "1", "codec": "none", "seed": 34},
    "v1-none-logappendtime": {"magic": "1", "codec": "none", "timestamp_type": "append", "seed": 35},
    "mixed-none": {"magic": "0,1,2", "codec": "none", "seed": 36},
    "v2-compressed-txn": {"magic": "2", "codec": "gzip,snappy,lz4", "headers": 1, "control_every": 2, "seed": 37},
    "v2-compressed-logappendtime": {"magic": "2", "codec": "gzip,snappy,lz4", "timestamp_type": "append",
                                    "seed": 38},
    "v1-compressed": {"magic": "1", "codec": "gzip,snappy,lz4", "seed": 39},
    "mixed-compressed": {"magic": "0,1,2", "codec": "none,gzip,snappy,lz4", "seed": 40},
    "v2-zstd-after-none": {"magic": "2", "codec": "none,zstd", "seed": 41},
}
UNCOMPRESSED = [n for n in SOURCES if "none" in n and "zstd" not in n]
COMPRESSED = [n for n in SOURCES if "compressed" in n]
# Before the data, at its base, inside the second batch, inside the last batch, past the end.
FIRST_OFFSETS = (0, BASE, BASE + 7, BASE + 38, BASE + 10_000)


@dataclass(frozen=True)
class Job:
    source: str
    to_magic: int
    first_offset: int

    @property
    def name(self) -> str:
        return f"{self.source}->v{self.to_magic}@{self.first_offset}"


BYTE_JOBS = [Job(s, m, o) for s in UNCOMPRESSED for m in (1, 0) for o in FIRST_OFFSETS] + \
            [Job(s, 2, 0) for s in SOURCES if s != "v2-zstd-after-none"]
RECORD_JOBS = [Job(s, m, BASE + 7) for s in COMPRESSED for m in (1, 0)]


@pytest.fixture(scope="module")
def conversions(kafka_ref: KafkaRef, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("downconvert")
    sources = {n: root / f"{n}.log" for n in SOURCES}
    jobs = BYTE_JOBS + RECORD_JOBS
    outs = {j.name: root / f"{j.name}.kafka" for j in jobs}
    # One group per source: generate it, then every conversion of it (a few JVMs in all).
    groups = [[kafka_ref.gen_args(sources[n], **{**COMMON, **SOURCES[n]}),
               *(kafka_ref.downconvert_args(sources[n], outs[j.name], to_magic=j.to_magic,
                                            first_offset=j.first_offset) for j in jobs if j.source == n)]
              for n in SOURCES]
    results: dict[str, tuple[Path, dict[str, Any]]] = {}
    for n, runs in zip(SOURCES, kafka_ref.run_batches(groups, allow=(OK,)), strict=True):
        for j, r in zip([j for j in jobs if j.source == n], runs[1:], strict=True):
            results[j.name] = (outs[j.name], r.one("downconvert"))
    # Record-level jobs: write ours next to Kafka's and let Kafka read both.
    ours_files: dict[str, Path] = {}
    for job in RECORD_JOBS:
        with FileRecords(sources[job.source]) as fr:
            ours_files[job.name] = root / f"{job.name}.ours"
            ours_files[job.name].write_bytes(down_convert(fr.batches(), job.to_magic, job.first_offset).data)
    to_dump = [outs[j.name] for j in RECORD_JOBS] + [ours_files[j.name] for j in RECORD_JOBS]
    dumped = kafka_ref.run_batches([[kafka_ref.dump_args(p)] for p in to_dump])
    dumps = {p: Dump.from_run(r[0]) for p, r in zip(to_dump, dumped, strict=True)}
    return {"sources": sources, "results": results, "ours": ours_files, "dumps": dumps}


@pytest.mark.parametrize("job", BYTE_JOBS, ids=lambda j: j.name)
def test_down_conversion_is_byte_identical(conversions: dict[str, Any], job: Job) -> None:
    kafka_out, line = conversions["results"][job.name]
    with FileRecords(conversions["sources"][job.source]) as fr:
        ours = down_convert(fr.batches(), job.to_magic, job.first_offset)
    theirs = kafka_out.read_bytes()
    assert ours.data == theirs, f"{job.name}: {len(ours.data)} bytes vs Kafka's {len(theirs)}"
    assert ours.records_converted == line["records_converted"]
    assert ours.temporary_memory_bytes == line["temporary_memory_bytes"]


def test_byte_jobs_exercise_filtering_markers_and_copies(conversions: dict[str, Any]) -> None:
    """The cases above convert, filter, drop markers and copy, and some convert to nothing at all."""
    lines = {name: line for name, (_, line) in conversions["results"].items()}
    assert lines["v2-none-txn-headers->v1@0"]["records_converted"] == 40  # markers dropped, records kept
    assert 0 < lines[f"v2-none-txn-headers->v1@{BASE + 7}"]["records_converted"] < 40  # offset filter
    assert lines[f"v2-none-txn-headers->v0@{BASE + 10_000}"]["out_bytes"] == 0  # everything filtered
    assert lines["v1-none->v1@0"]["records_converted"] == 0  # copied verbatim
    assert lines["mixed-none->v1@0"]["records_converted"] > 0 and lines["mixed-none->v1@0"]["in_batches"] > 8


@pytest.mark.parametrize("job", RECORD_JOBS, ids=lambda j: j.name)
def test_compressed_down_conversion_is_record_identical(conversions: dict[str, Any], job: Job) -> None:
    kafka_out, line = conversions["results"][job.name]
    theirs: Dump = conversions["dumps"][kafka_out]
    ours: Dump = conversions["dumps"][conversions["ours"][job.name]]
    assert theirs.returncode == ours.returncode == OK
    assert all(b["isValid"] for b in ours.batches)
    assert max(b["magic"] for b in theirs.batches) == job.to_magic  # v0 entries are copied into a v1 result
    assert {b["codec"] for b in theirs.batches} >= {"gzip", "snappy", "lz4"}
    assert_same_batches(ignore_codec_bytes(ours), ignore_codec_bytes(theirs), context=job.name)
    if job.source.startswith("v2"):
        # No first-offset filter inside compressed batches (RecordsUtil.downConvert keeps every record).
        assert len(theirs.records()) == line["records_converted"] == 40
    elif job.source.startswith("v1"):
        assert len(theirs.records()) == 40 and line["records_converted"] == (40 if job.to_magic == 0 else 0)


@pytest.mark.parametrize("to_magic", [1, 0])
def test_zstd_below_v2_is_refused_by_both(kafka_ref: KafkaRef, conversions: dict[str, Any], tmp_path: Path,
                                          to_magic: int) -> None:
    src = conversions["sources"]["v2-zstd-after-none"]
    run = kafka_ref.downconvert(src, tmp_path / "out", to_magic=to_magic, first_offset=0, allow=(REFUSED,))
    refused = run.one("refused")
    assert refused["exception"] == "org.apache.kafka.common.errors.UnsupportedCompressionTypeException"
    with FileRecords(src) as fr, pytest.raises(ZstdDownConversionError):
        down_convert(fr.batches(), to_magic, 0)
    # To magic 2 nothing is converted: both copy the file as it is.
    kafka_ref.downconvert(src, tmp_path / "copy", to_magic=2)
    with FileRecords(src) as fr:
        assert down_convert(fr.batches(), 2, 0).data == (tmp_path / "copy").read_bytes() == src.read_bytes()
