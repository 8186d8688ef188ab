"""downconvert / upconvert against Apache Kafka's own code (kafka-ref: kafka-clients 3.9.1).

Every input file here is written by Kafka's MemoryRecordsBuilder (``kafka-ref gen``). Uncompressed
output must be byte-identical to ``RecordsUtil.downConvert`` (``kafka-ref downconvert``, fetch offset 0)
and, for up-conversion, to ``kafka-ref upconvert`` (Kafka's builder as the broker's LogValidator uses it,
with the cleaner's partition leader epoch -1); compressed output must be read by Kafka's reader
(``kafka-ref dump --deep``: CRCs of batches and legacy records checked) as the same records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.kafkaref import shared_session

pytestmark = pytest.mark.interop

def kafka_ref(*args: str | os.PathLike[str], ok: tuple[int, ...] = (0,)) -> list[dict]:
    """Run kafka-ref (located or built by tests/support/kafkaref.py, never skipped; the session's kept JVM); its
    JSON lines."""
    p = shared_session().run(*args)
    assert p.returncode in ok, f"kafka-ref {' '.join(map(str, args))}: rc {p.returncode}\n{p.stdout[-2000:]}{p.stderr}"
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def gen(path: Path, **opts: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    args: list[str] = ["gen", "--out", str(path)]
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        args += [flag] if v is True else [flag, str(v)]
    kafka_ref(*args)
    return path


def kafka_records(path: Path) -> list[tuple]:
    """What Kafka's reader reports for every data record (control batches are not data)."""
    lines = kafka_ref("dump", "--in", path, "--deep", "--payload", "b64")
    out, control = [], False
    for j in lines:
        if j["type"] == "batch":
            assert j["isValid"], j
            control = j["isControl"]
        elif j["type"] == "record" and not control:
            out.append((j["offset"], j["timestamp"], j.get("recordTimestampType"), j["key"], j["value"]))
    return out


def batch_counts(path: Path) -> list[int]:
    return [b["count"] for b in kafka_ref("dump", "--in", path) if b["type"] == "batch"]


def partition(tmp: Path, log: Path, name: str = "t-0") -> Path:
    d = tmp / "src" / name
    d.mkdir(parents=True)
    os.link(log, d / f"{0:020d}.log")
    return d


def ours(cmd: str, src: Path, dst: Path, *args: str) -> bytes:
    r = run_cli(cmd, src, dst, "--segment-bytes", str(2**31 - 1), *args)
    assert r.returncode == 0, r.stderr
    (part,) = [p for p in dst.iterdir() if p.is_dir()]  # beside it: the run file and _SUCCESS
    return b"".join(p.read_bytes() for p in sorted(part.glob("*.log")))


SOURCES = {
    "v2-txn-headers": dict(magic=2, records=400, batch_records=7, headers=2, transactional=True, control_every=3,
                           abort_fraction=0.3, null_key_fraction=0.2, null_value_fraction=0.1, seed=11),
    "v2-idempotent-lat": dict(magic=2, records=200, batch_records=9, idempotent=True, timestamp_type="append",
                              seed=12),
    "v1-create": dict(magic=1, records=150, batch_records=5, null_key_fraction=0.3, seed=13),
    "v1-lat": dict(magic=1, records=120, batch_records=4, timestamp_type="append", seed=14),
}


@pytest.mark.parametrize("source,to_magic", [
    ("v2-txn-headers", 1), ("v2-txn-headers", 0), ("v2-idempotent-lat", 1), ("v2-idempotent-lat", 0),
    ("v1-create", 0), ("v1-lat", 0),
])
def test_uncompressed_downconvert_is_byte_identical_to_records_util(tmp_path, source, to_magic):
    log = gen(tmp_path / "in.log", codec="none", **SOURCES[source])
    ref = tmp_path / "ref.log"
    kafka_ref("downconvert", "--in", log, "--out", ref, "--to-magic", str(to_magic), "--first-offset", "0")
    got = ours("downconvert", partition(tmp_path, log), tmp_path / "out", "--to-magic", str(to_magic))
    assert got == ref.read_bytes()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
@pytest.mark.parametrize("source,to_magic", [("v2-txn-headers", 1), ("v2-txn-headers", 0), ("v1-create", 0)])
def test_compressed_downconvert_reads_as_kafkas_own(tmp_path, codec, source, to_magic):
    log = gen(tmp_path / "in.log", codec=codec, **SOURCES[source])
    ref = tmp_path / "ref.log"
    kafka_ref("downconvert", "--in", log, "--out", ref, "--to-magic", str(to_magic))
    got = tmp_path / "got.log"
    got.write_bytes(ours("downconvert", partition(tmp_path, log), tmp_path / "out", "--to-magic", str(to_magic)))
    expected = kafka_records(ref)
    assert expected and kafka_records(got) == expected


def test_zstd_refusal_matches_kafka_and_zstd_to_recompresses(tmp_path):
    log = gen(tmp_path / "in.log", magic=2, codec="zstd", records=50, batch_records=10, seed=15)
    refused = kafka_ref("downconvert", "--in", log, "--out", tmp_path / "ref.log", "--to-magic", "1", ok=(4,))
    assert "UnsupportedCompressionTypeException" in json.dumps(refused)
    src = partition(tmp_path, log)
    r = run_cli("downconvert", src, tmp_path / "out", "--to-magic", "1")
    assert r.returncode == 1 and "zstd-compressed batch (offsets 0..9)" in r.stderr
    got = tmp_path / "got.log"
    got.write_bytes(ours("downconvert", src, tmp_path / "out2", "--to-magic", "1", "--zstd-to", "lz4"))
    assert [(o, t, k, v) for o, t, _, k, v in kafka_records(got)] == [
        (o, t, k, v) for o, t, _, k, v in kafka_records(log)]


@pytest.mark.parametrize("magics", ["0", "1", "0,1"])
def test_uncompressed_upconvert_is_byte_identical_to_kafkas_builder(tmp_path, magics):
    log = gen(tmp_path / "in.log", magic=magics, codec="none", records=120, batch_records=4, seed=16,
              null_value_fraction=0.1)
    one = tmp_path / "one.log"
    kafka_ref("upconvert", "--in", log, "--out", one, "--leader-epoch", "-1")
    assert ours("upconvert", partition(tmp_path, log), tmp_path / "o1", "--batch-bytes", "0") == one.read_bytes()
    if magics != "0,1":  # one timestamp type: our grouping by bytes can hold all 120 messages in one batch
        everything = tmp_path / "all.log"
        kafka_ref("upconvert", "--in", log, "--out", everything, "--leader-epoch", "-1", "--group-uncompressed", "1000")
        (tmp_path / "src2").mkdir()
        assert ours("upconvert", partition(tmp_path / "src2", log), tmp_path / "o2",
                    "--batch-bytes", "1MiB") == everything.read_bytes()


@pytest.mark.parametrize("codec", ["none,gzip,snappy,lz4", "gzip", "lz4"])
def test_upconvert_of_compressed_legacy_reads_as_kafkas_own(tmp_path, codec):
    log = gen(tmp_path / "in.log", magic="0,1", codec=codec, records=300, batch_records=6, seed=17)
    ref = tmp_path / "ref.log"
    kafka_ref("upconvert", "--in", log, "--out", ref, "--leader-epoch", "-1")
    got = tmp_path / "got.log"
    got.write_bytes(ours("upconvert", partition(tmp_path, log), tmp_path / "out", "--batch-bytes", "0"))
    assert kafka_records(got) == kafka_records(ref)
    assert batch_counts(got) == batch_counts(ref)


def test_round_trip_v2_v1_v2_keeps_offset_timestamp_key_value(tmp_path):
    log = gen(tmp_path / "in.log", magic=2, codec="gzip", records=300, batch_records=10, headers=1,
              transactional=True, control_every=4, seed=18)
    src = partition(tmp_path, log)
    ours("downconvert", src, tmp_path / "v1", "--to-magic", "1")
    back = tmp_path / "back.log"
    back.write_bytes(ours("upconvert", tmp_path / "v1" / "t-0", tmp_path / "v2"))
    assert [(o, t, k, v) for o, t, _, k, v in kafka_records(back)] == [
        (o, t, k, v) for o, t, _, k, v in kafka_records(log)]


def test_kip126_split_batches_read_as_kafkas_unsplit_conversion(tmp_path):
    log = gen(tmp_path / "in.log", magic=2, codec="gzip", records=60, batch_records=60, value_bytes=3000,
              compressible=0, seed=19)
    ref = tmp_path / "ref.log"
    kafka_ref("downconvert", "--in", log, "--out", ref, "--to-magic", "1")
    limit = os.path.getsize(ref) // 3
    r = run_cli("downconvert", partition(tmp_path, log), tmp_path / "out", "--to-magic", "1",
                "--max-message-bytes", str(limit), "--format", "json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout.splitlines()[0])
    assert stats["splits"] >= 1 and stats["split_batches"] >= 3
    got = tmp_path / "got.log"
    got.write_bytes(b"".join(p.read_bytes() for p in sorted((tmp_path / "out" / "t-0").glob("*.log"))))
    assert all(b["sizeInBytes"] <= limit for b in kafka_ref("dump", "--in", got) if b["type"] == "batch")
    assert kafka_records(got) == kafka_records(ref)


@pytest.mark.parametrize("to_magic", [1, 0])
def test_lz4_downconvert_is_byte_identical_too(tmp_path, to_magic):
    # codecs.lz4_kafka_compress produces lz4-java's bytes (tests/vectors/lz4_java), so with the same records
    # framing the whole lz4 output matches RecordsUtil.downConvert's, wrapper CRCs included.
    log = gen(tmp_path / "in.log", codec="lz4", **SOURCES["v2-txn-headers"])
    ref = tmp_path / "ref.log"
    kafka_ref("downconvert", "--in", log, "--out", ref, "--to-magic", str(to_magic))
    assert ours("downconvert", partition(tmp_path, log), tmp_path / "out", "--to-magic", str(to_magic)) == \
        ref.read_bytes()


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_conversion_stats_match_records_util(tmp_path, codec):
    # RecordValidationStats of one RecordsUtil.downConvert over the whole file: records converted and
    # temporaryMemoryBytes (source batch sizes + MemoryRecordsBuilder.uncompressedBytesWritten()).
    from kafkatool.record.down_convert import down_convert
    from kafkatool.record.file_records import FileRecords

    log = gen(tmp_path / "in.log", codec=codec, **SOURCES["v2-txn-headers"])
    for to_magic in (0, 1):
        (ref,) = kafka_ref("downconvert", "--in", log, "--out", tmp_path / "ref.log", "--to-magic", str(to_magic))
        with FileRecords(log) as fr:
            got = down_convert(fr.batches(), to_magic, 0)
        assert (got.records_converted, got.temporary_memory_bytes) == (
            ref["records_converted"], ref["temporary_memory_bytes"])


# --codec on batches that need no format change: re-encoded (never silently copied), read by Kafka as the same


def kafka_batches_and_records(path: Path) -> tuple[list[dict], list[dict]]:
    """Kafka's view of every batch (CRC checked) and record, without what a codec change may change."""
    batches, records = [], []
    for j in kafka_ref("dump", "--in", path, "--deep", "--payload", "b64"):
        if j["type"] == "batch":
            assert j["isValid"], j
            batches.append({k: v for k, v in j.items() if k not in ("codec", "crc", "sizeInBytes", "position")})
        elif j["type"] == "record":
            records.append({k: v for k, v in j.items() if k != "sizeInBytes"})
    return batches, records


@pytest.mark.parametrize("codec", ["gzip", "zstd", "none"])
def test_upconvert_codec_reencodes_v2_batches_as_kafka_reads_them(tmp_path, codec):
    log = gen(tmp_path / "in.log", magic=2, codec="lz4,none", records=300, batch_records=7, headers=2,
              transactional=True, control_every=3, abort_fraction=0.3, null_key_fraction=0.2, seed=21)
    got = tmp_path / "got.log"
    got.write_bytes(ours("upconvert", partition(tmp_path, log), tmp_path / "out", "--codec", codec))
    # Every batch field Kafka reports (offsets, timestamps and type, producer id/epoch/sequences, transactional
    # and control flags, partition leader epoch, count) and every record (sequence and headers included) is
    # the source's; only the codec changed, and Kafka's CRC check passes.
    assert kafka_batches_and_records(got) == kafka_batches_and_records(log)
    dumped = [b for b in kafka_ref("dump", "--in", got) if b["type"] == "batch"]
    assert {b["codec"] for b in dumped if not b["isControl"]} == {codec}
    assert {b["codec"] for b in dumped if b["isControl"]} == {"none"}


@pytest.mark.parametrize("magic,to_magic,codec", [("1", 1, "snappy"), ("0,1", 1, "gzip"), ("0", 0, "lz4"),
                                                  ("1", 1, "none")])
def test_downconvert_codec_reencodes_legacy_batches_as_kafka_reads_them(tmp_path, magic, to_magic, codec):
    log = gen(tmp_path / "in.log", magic=magic, codec="none,gzip,lz4", records=240, batch_records=6,
              null_key_fraction=0.2, seed=22)
    got = tmp_path / "got.log"
    got.write_bytes(ours("downconvert", partition(tmp_path, log), tmp_path / "out", "--to-magic", str(to_magic),
                         "--codec", codec))
    assert kafka_records(got) == kafka_records(log)
    dumped = [b for b in kafka_ref("dump", "--in", got) if b["type"] == "batch"]
    assert {b["codec"] for b in dumped} == {codec}
    source_magics = {b["magic"] for b in kafka_ref("dump", "--in", log) if b["type"] == "batch"}
    assert {b["magic"] for b in dumped} == source_magics  # each batch keeps its own magic
