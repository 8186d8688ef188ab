"""Kafka writes, kafkatool reads: every segment of the session corpus (written by kafka-clients 3.9.1's
``MemoryRecordsBuilder`` + ``FileRecords.append`` through ``kafka-ref gen``) is read by
``kafkatool.record.file_records.FileRecords`` into exactly the batches and records Kafka's own reader reports
(``kafka-ref dump --deep``), field for field: offsets, timestamps and their types, sequences, producer
state, control markers, keys, values and headers byte for byte, CRCs and sizes."""

from __future__ import annotations

import pytest

from kafkatool.record.file_records import FileRecords
from tests.interop.corpus import BY_NAME, SCENARIOS, Corpus
from tests.support.kafkaref import OK, unb64
from tests.support.refjson import assert_same_dump, our_dump

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_kafka_written_segment_reads_identically(corpus: Corpus, name: str) -> None:
    theirs = corpus.dumps[name]
    assert theirs.returncode == OK, theirs.error or theirs.truncated
    ours = our_dump(corpus.paths[name])
    assert_same_dump(ours, theirs, context=name)
    # The generator's own counts agree with both readers.
    gen = corpus.gen[name]
    records = sum(g["records"] for g in gen) + sum(g["control_batches"] for g in gen)
    assert len(theirs.records()) == records
    assert len(theirs.batches) == sum(g["batches"] for g in gen)
    covered = {(b["magic"], b["codec"]) for b in theirs.batches}
    assert BY_NAME[name].combos <= covered, f"{name}: generator no longer writes {BY_NAME[name].combos - covered}"


def test_corpus_covers_every_format_kafka_allows(corpus: Corpus) -> None:
    """The corpus as a whole holds every magic x codec Kafka can write, and every special case this suite
    claims to check, so no test above passes for want of data."""
    batches = [b for d in corpus.dumps.values() for b in d.batches]
    records = [r for d in corpus.dumps.values() for r in d.records()]
    combos = {(b["magic"], b["codec"]) for b in batches}
    allowed = {(m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")} | \
              {(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")}
    assert combos == allowed
    assert {(b["magic"], b["timestampType"]) for b in batches} >= {
        (0, "NoTimestampType"), (1, "CreateTime"), (1, "LogAppendTime"), (2, "CreateTime"), (2, "LogAppendTime")}
    controls = {r["control"]["controlType"] for r in records if "control" in r}
    assert controls == {"COMMIT", "ABORT"}
    assert any(b["isTransactional"] and not b["isControl"] for b in batches)
    assert any(b["producerId"] >= 0 and not b["isTransactional"] for b in batches)  # idempotent
    assert any(b["baseSequence"] > b["lastSequence"] >= 0 for b in batches)  # sequence wrapped past 2^31-1
    assert any(r["headers"] for r in records)
    assert any(r["key"] is None for r in records) and any(r["value"] is None for r in records)
    assert any(r["value"] == "" for r in records)  # empty, not null
    assert any(r["offset"] > 2**31 for r in records)
    assert max(b["sizeInBytes"] for b in batches) > 2 * 1024 * 1024
    assert corpus.paths["empty-file"].stat().st_size == 0


def test_gapped_offsets_survive_in_every_format(corpus: Corpus) -> None:
    offsets = [r["offset"] for r in corpus.dumps["offset-gaps"].records()]
    assert offsets == [*range(10), *range(25, 35), *range(100, 110), *range(1000, 1006),
                       *range(2**31 + 10, 2**31 + 18)]
    with FileRecords(corpus.paths["offset-gaps"]) as fr:
        ours = [r.offset for b in fr.batches() for r in b.records()]
    assert ours == offsets


def test_multi_mb_batches_payload_bytes(corpus: Corpus) -> None:
    """The 2 MiB batches: every value byte equal (not only the count), checked record by record."""
    theirs = corpus.dumps["multi-mb"]
    with FileRecords(corpus.paths["multi-mb"]) as fr:
        ours = [r for b in fr.batches() for r in b.records()]
    assert len(ours) == len(theirs.records()) == 6000
    for a, b in zip(ours, theirs.records(), strict=True):
        assert a.value == unb64(b["value"]) and a.key == unb64(b["key"])


def test_raw_snappy_as_librdkafka_writes_it_reads_as_kafka_reads_it(kafka_ref, tmp_path) -> None:
    """librdkafka compresses snappy as one raw block, without snappy-java's xerial framing, and the broker keeps
    producer bytes as they are; Kafka reads them through snappy-java's fallback. Batches whose records area is
    one raw block (small and above one 32 KiB xerial chunk) read as Kafka reads them, field for field, and are
    really raw (no xerial magic)."""
    from kafkatool.record.codecs import Codec, snappy_raw_compress
    from kafkatool.record.default_records import _assemble, encode_records

    out = bytearray()
    offset = 0
    for n, value_bytes in ((3, 10), (40, 1500)):  # 40 x 1.5 KiB: a records area above 32 KiB
        recs = [(offset + i, 1_700_000_000_000 + i, b"k%d" % i, bytes([i % 251]) * value_bytes,
                 [("h", b"v%d" % i)]) for i in range(n)]
        area, last, max_ts = encode_records(recs, offset, recs[0][1])
        body = snappy_raw_compress(area)
        assert not body.startswith(b"\x82SNAPPY\x00")
        out += _assemble(offset, -1, int(Codec.SNAPPY), last - offset, recs[0][1], max_ts, -1, -1, -1, n, body)
        offset += n
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(out))
    theirs = kafka_ref.dump(path)
    assert theirs.returncode == OK and len(theirs.records()) == 43
    assert {b["codec"] for b in theirs.batches} == {"snappy"}
    assert_same_dump(our_dump(path), theirs, context="raw snappy")
