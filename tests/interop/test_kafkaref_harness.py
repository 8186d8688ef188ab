"""The interop machinery itself: kafka-ref is the pinned Kafka, every command is wrapped, the comparison
can fail, and a missing Java is a failure, never a skip."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interop.corpus import Corpus
from tests.support import kafkaref
from tests.support.kafkaref import OK, ROOT, SOURCE_DIR, KafkaRef, b64, source_hash, unb64
from tests.support.refjson import assert_same_dump, our_dump

pytestmark = pytest.mark.interop

JAVA = (SOURCE_DIR / "src" / "kafkaref" / "KafkaRef.java").read_text()


def test_kafka_ref_is_kafka_clients_3_9_1(kafka_ref: KafkaRef) -> None:
    v = kafka_ref.version()
    assert (v["kafka_clients"], v["kafka_commit"]) == ("3.9.1", "f745dfdcee2b9851")
    assert v["lz4_java"] and v["snappy_java"] and v["zstd_jni"]


def test_every_kafka_ref_command_has_a_wrapper_method() -> None:
    switch = JAVA[JAVA.index("switch (argv[0])"):]
    commands = set(re.findall(r'case "([a-z-]+)": return', switch[:switch.index("default:")]))
    assert commands == {"version", "gen", "dump", "downconvert", "lazysend", "upconvert", "bench",
                        "bench-downconvert"}
    for c in commands:
        assert callable(getattr(KafkaRef, c.replace("-", "_"))), c


def test_options_map_to_kafka_ref_flags() -> None:
    assert KafkaRef.options(records=10, batch_records=3, deep=True, append=False, level=None,
                            codec=["none", "lz4"]) == \
        ["--records", "10", "--batch-records", "3", "--deep", "--codec", "none,lz4"]


def test_wrapped_commands_run(kafka_ref: KafkaRef, tmp_path: Path) -> None:
    """upconvert, lazysend and the two bench commands through the wrapper, on a tiny file."""
    src = tmp_path / "v1.log"
    kafka_ref.gen(src, magic=1, codec="none,gzip", records=20, batch_records=5, base_offset=100)
    up = kafka_ref.upconvert(src, tmp_path / "v2.log", group_uncompressed=5).one("upconvert")
    assert up["records_converted"] == 20 and kafka_ref.dump(tmp_path / "v2.log").returncode == OK
    send = kafka_ref.lazysend(tmp_path / "v2.log", tmp_path / "send.bin", to_magic=0, first_offset=105,
                              size=400).one("lazysend")
    assert send["bytes_written"] == send["committed_size"] == (tmp_path / "send.bin").stat().st_size
    assert kafka_ref.bench(src, iterations=1, warmup=0, deep=True)["records"] == 20
    assert kafka_ref.bench_downconvert(tmp_path / "v2.log", to_magic=1, iterations=1, warmup=0,
                                       mode="whole")["records_converted"] == 20


def test_a_batch_run_equals_single_runs(kafka_ref: KafkaRef, corpus: Corpus) -> None:
    """KafkaRefBatch runs each command exactly as its own kafka-ref process would, errors included."""
    path = corpus.paths["mixed-formats"]
    single = kafka_ref.run(*kafka_ref.dump_args(path))
    bad = ["dump", "--in", str(path), "--no-such-option", "1"]
    batched = kafka_ref.run_batch([kafka_ref.dump_args(path), bad, ["version"], kafka_ref.dump_args(path)],
                                  allow=(OK, 1))
    assert [r.returncode for r in batched] == [OK, 1, OK, OK]
    assert batched[0].lines == batched[3].lines == single.lines
    assert batched[1].lines == () and batched[2].one("version")["kafka_clients"] == "3.9.1"


def test_lazysend_reproduces_the_spec_vector(kafka_ref: KafkaRef, tmp_path: Path) -> None:
    """KAFKA-FORMATS.md Appendix A: the v2 source with offsets 100-102, lazily down-converted to v1 at fetch
    offset 101, is two messages and a 30-byte overflow batch - the harness is the Kafka the spec describes."""
    source = bytes.fromhex(
        "00000000000000640000005cffffffff020ec464e80000000000020000018bcfe568000000018bcfe56805ffffffffffffffff"
        "ffffffffffff000000031c000000046b3104763102026802781c000a02046b32047632020268027818000404010476330202"
        "680278")
    expected = bytes.fromhex(
        "00000000000000650000001a1014925601000000018bcfe56805000000026b32000000027632"
        "000000000000006600000018dc37d81601000000018bcfe56802ffffffff000000027633"
        "ffffffffffffffff0000003d") + bytes(18)
    (tmp_path / "src.log").write_bytes(source)
    kafka_ref.lazysend(tmp_path / "src.log", tmp_path / "out", to_magic=1, first_offset=101, size=104)
    assert (tmp_path / "out").read_bytes() == expected


def test_the_comparison_can_fail(corpus: Corpus) -> None:
    """One changed value byte, timestamp, header or exit code makes assert_same_dump fail."""
    name = "v2-codecs"
    theirs = corpus.dumps[name]
    assert_same_dump(our_dump(corpus.paths[name]), theirs)
    for mutate in (
        lambda d: d.batches[3]["records"][2].update(value=b64(unb64(d.batches[3]["records"][2]["value"]) + b"x")),
        lambda d: d.batches[5]["records"][0].update(timestamp=d.batches[5]["records"][0]["timestamp"] + 1),
        lambda d: d.batches[1]["records"][1]["headers"].pop(),
        lambda d: d.batches[2].update(maxTimestamp=0),
        lambda d: setattr(d, "returncode", 2),
        lambda d: d.batches.pop(),
    ):
        ours = our_dump(corpus.paths[name])
        mutate(ours)
        with pytest.raises(AssertionError):
            assert_same_dump(ours, theirs)


def test_copied_harness_and_golden_vectors_are_the_documented_ones() -> None:
    golden = SOURCE_DIR / "golden" / "golden-output.txt"
    assert golden.read_bytes() == (ROOT / "tests" / "vectors" / "kafka-3.9.1-golden.txt").read_bytes()
    assert "Origin" in (SOURCE_DIR / "README.md").read_text()
    assert re.fullmatch(r"[0-9a-f]{16}", source_hash())


def test_source_hash_follows_the_java_sources(tmp_path: Path) -> None:
    copy = tmp_path / "kafka-ref"
    shutil.copytree(SOURCE_DIR, copy)
    assert source_hash(copy) == source_hash()
    java = copy / "src" / "kafkaref" / "KafkaRef.java"
    java.write_text(java.read_text() + "\n// changed\n")
    assert source_hash(copy) != source_hash()


def test_a_broken_kafka_ref_build_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             kafka_ref: KafkaRef) -> None:
    fake = tmp_path / "kafka-ref"
    fake.write_text("#!/bin/sh\necho '{\"type\":\"version\",\"kafka_clients\":\"4.0.0\"}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KAFKA_REF_BUILD", str(tmp_path))
    monkeypatch.delenv("KAFKA_REF", raising=False)
    assert kafkaref._external_launcher() is None  # 4.0 has no v0/v1: refused
    monkeypatch.setenv("KAFKA_REF_BUILD", str(kafka_ref.launcher.parent))
    assert kafkaref._external_launcher() == kafka_ref.launcher


def test_missing_java_fails_the_interop_tests_instead_of_skipping(tmp_path: Path) -> None:
    """A pytest run without java on PATH and nothing cached: the fixture errors with the reason."""
    (tmp_path / "conftest.py").write_text("from tests.support.kafkaref import kafka_ref  # noqa: F401\n")
    (tmp_path / "test_needs_kafka.py").write_text("def test_x(kafka_ref):\n    assert kafka_ref\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REF")}
    env.update(PATH=str(tmp_path / "no-bin"), PYTHONPATH=str(ROOT), KAFKATOOL_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode != 0, p.stdout
    assert "1 error" in p.stdout and not re.search(r"\d+ skipped", p.stdout), p.stdout
    assert "`java` is not on PATH" in p.stdout and "JDK 17" in p.stdout, p.stdout
