"""Damaged segments are classified as Kafka classifies them.

Each case damages a Kafka-written segment (or is a file of the hostile corpus, tests/hostile) and compares
``kafka-ref dump --deep`` (``FileRecords.batches()`` -> ``isValid`` -> ``ensureValid`` -> ``streamingIterator``
-> ``Record.ensureValid``) with the same walk done by kafkatool (tests/support/refjson.py ``our_dump``):

* exit 2, trailing bytes Kafka's reader silently ignores (fewer than 17 bytes left, or a declared size past
  the end): kafkatool's ``LogInputStream.end_state`` is ``short-tail`` / ``size-past-end`` at the same byte;
* exit 3, an exception: kafkatool raises at the same stage (walk, ``ensure_valid``, ``records()``), for the same
  batch position, with the matching class (CorruptRecordException = CorruptRecordError, InvalidRecordException =
  InvalidRecordError; inside a compressed records area any corrupt-data error, see refjson.same_failure_class);
* every batch and record before the damage is reported identically.

Named cases also pin Kafka's own verdict (exit code and stage), so the suite documents what Kafka does.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from kafkatool.record import default_records as v2
from kafkatool.record.default_records import crc32c
from kafkatool.record.file_records import iter_batches
from tests.interop.corpus import Corpus
from tests.support.cli import run_cli
from tests.support.kafkaref import CORRUPT, OK, TRAILING, Dump, KafkaRef
from tests.support.paths import HOSTILE
from tests.support.refjson import assert_same_dump, our_dump

pytestmark = pytest.mark.interop



class B(NamedTuple):
    pos: int
    size: int
    magic: int
    codec: str


def layout(data: bytes) -> list[B]:
    return [B(b.position, b.size, b.magic, b.codec.label) for b in iter_batches(data)]


def pick(data: bytes, magic: int, codec: str, nth: int = 0) -> B:
    found = [b for b in layout(data) if b.magic == magic and b.codec == codec]
    return found[min(nth, len(found) - 1)]


def middle(data: bytes) -> B:
    bs = layout(data)
    return bs[len(bs) // 2]


def fix_crc(d: bytearray, b: B) -> None:
    """Recompute the batch's own checksum so the damage reaches the record decoder."""
    if b.magic >= 2:
        struct.pack_into(">I", d, b.pos + 17, crc32c(bytes(d[b.pos + 21:b.pos + b.size])))
    else:
        struct.pack_into(">I", d, b.pos + 12, zlib.crc32(bytes(d[b.pos + 16:b.pos + b.size])))


def _flip(magic: int, codec: str) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        b = pick(data, magic, codec, 1)
        d = bytearray(data)
        d[b.pos + b.size - 7] ^= 0x10
        return bytes(d)
    return f


def _truncate_mid(magic: int, codec: str) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        b = pick(data, magic, codec, 1)
        return data[:b.pos + b.size // 2]
    return f


def _cut_into_last_header(k: int) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        return data[:layout(data)[-1].pos + k]
    return f


def _size_field(value: Callable[[B, bytes], int], which: Callable[[bytes], B] = middle) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        b = which(data)
        d = bytearray(data)
        struct.pack_into(">i", d, b.pos + 8, value(b, data))
        return bytes(d)
    return f


def _deep(magic: int, codec: str, edit: Callable[[bytearray, B], None]) -> Callable[[bytes], bytes]:
    """Damage inside a batch with its checksum recomputed: only the record decoder can notice."""
    def f(data: bytes) -> bytes:
        b = pick(data, magic, codec, 1)
        d = bytearray(data)
        edit(d, b)
        fix_crc(d, b)
        return bytes(d)
    return f


def _garbage_over_boundary(seed: int, n: int) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        b = middle(data)
        rnd = random.Random(seed)
        d = bytearray(data)
        start = b.pos + b.size - n // 2
        d[start:start + n] = bytes(rnd.randrange(256) for _ in range(n))
        return bytes(d)
    return f


def _set_payload_byte(offset_from_end: int, value: int) -> Callable[[bytearray, B], None]:
    def edit(d: bytearray, b: B) -> None:
        d[b.pos + b.size - offset_from_end] = value
    return edit


def _v2_count(delta: int) -> Callable[[bytearray, B], None]:
    def edit(d: bytearray, b: B) -> None:
        (count,) = struct.unpack_from(">i", d, b.pos + 57)
        struct.pack_into(">i", d, b.pos + 57, count + delta)
    return edit


def _v2_first_record_length(value: int) -> Callable[[bytearray, B], None]:
    def edit(d: bytearray, b: B) -> None:
        d[b.pos + 61] = value  # a one-byte zig-zag varint
    return edit


def _legacy_key_length_at(b: B) -> int:
    return b.pos + 12 + (6 if b.magic == 0 else 14)  # after crc, magic, attributes (and the v1 timestamp)


def _legacy_value_length(value: int) -> Callable[[bytearray, B], None]:
    def edit(d: bytearray, b: B) -> None:
        at = _legacy_key_length_at(b)
        (key_len,) = struct.unpack_from(">i", d, at)
        struct.pack_into(">i", d, at + 4 + max(0, key_len), value)
    return edit


def _compressed_garbage(d: bytearray, b: B) -> None:
    """Damage the compressed stream where its codec must notice: gzip anywhere (the member's CRC-32), snappy the
    xerial chunk length (snappy has no checksum: damaged literals would decode), lz4 and zstd mid-stream."""
    stream = b.pos + 61 if b.magic >= 2 else _legacy_key_length_at(b) + 8  # wrapper key is null: -1, no bytes
    if b.codec == "snappy":
        # Past the stream's end but under snappy-java's 512 MiB chunk cap: above it snappy-java throws SnappyError,
        # a java.lang.Error that kafka-ref's dump does not catch (exit 1).
        struct.pack_into(">i", d, stream + 16, 50_000)
    else:
        mid = (stream + b.pos + b.size) // 2
        d[mid:mid + 8] = bytes.fromhex("deadbeef00ff7f80")


@dataclass(frozen=True)
class Case:
    name: str
    base: str  # corpus scenario
    damage: Callable[[bytes], bytes]
    kafka_exit: int  # Kafka's verdict, pinned
    kafka_stage: str | None = None  # for exit 3: next-batch | ensureValid | records
    skip_record: tuple[str, ...] = ()  # record fields not compared (a documented difference)


_CASES = [
    *[Case(f"truncated-mid-batch-v{m}-{c}", base, _truncate_mid(m, c), TRAILING)
      for m, c, base in [(2, "none", "v2-codecs"), (2, "zstd", "v2-codecs"), (1, "gzip", "v1-codecs"),
                         (0, "none", "v0-codecs"), (0, "lz4", "mixed-formats")]],
    *[Case(f"truncated-{k}-bytes-into-last-header", "v2-transactional", _cut_into_last_header(k), TRAILING)
      for k in (1, 8, 12, 16, 17, 18, 60)],
    *[Case(f"bit-flip-v{m}-{c}", "mixed-formats" if m < 2 else "v2-codecs", _flip(m, c), CORRUPT, "ensureValid")
      for m in (0, 1, 2) for c in ("none", "gzip", "snappy", "lz4", "zstd") if (m, c) != (0, "zstd")
      and (m, c) != (1, "zstd")],
    Case("zero-filled-tail-4096", "v2-codecs", lambda d: d + bytes(4096), CORRUPT, "next-batch"),
    Case("zero-filled-tail-17", "v2-codecs", lambda d: d + bytes(17), TRAILING),
    Case("zero-filled-tail-18", "v2-codecs", lambda d: d + bytes(18), CORRUPT, "next-batch"),
    Case("preallocated-zeros-from-middle", "v1-codecs",
         lambda d: d[:middle(d).pos] + bytes(len(d) - middle(d).pos), CORRUPT, "next-batch"),
    Case("size-negative", "mixed-formats", _size_field(lambda b, d: -1), CORRUPT, "next-batch"),
    Case("size-zero", "v2-codecs", _size_field(lambda b, d: 0), CORRUPT, "next-batch"),
    Case("size-13", "v0-codecs", _size_field(lambda b, d: 13), CORRUPT, "next-batch"),
    Case("size-14-on-v2-batch", "v2-codecs", _size_field(lambda b, d: 14), CORRUPT, "ensureValid"),
    Case("size-14-on-v0-entry", "v0-codecs", _size_field(lambda b, d: 14), CORRUPT, "ensureValid"),
    Case("size-48-on-v2-batch", "v2-transactional", _size_field(lambda b, d: 48), CORRUPT, "ensureValid"),
    Case("size-one-short", "v2-codecs", _size_field(lambda b, d: b.size - 13), CORRUPT, "ensureValid"),
    Case("size-one-long", "v1-codecs", _size_field(lambda b, d: b.size - 11), CORRUPT, "ensureValid"),
    Case("size-past-eof-in-the-middle", "v2-codecs", _size_field(lambda b, d: len(d)), TRAILING),
    Case("size-huge", "mixed-formats", _size_field(lambda b, d: 0x7FFFFFFF), TRAILING),
    Case("size-past-eof-last-batch", "v1-logappendtime",
         _size_field(lambda b, d: b.size - 11, lambda d: layout(d)[-1]), TRAILING),
    *[Case(f"garbage-over-boundary-{seed}", "mixed-formats", _garbage_over_boundary(seed, 48), CORRUPT)
      for seed in (1, 2, 3)],
    Case("v2-record-count-plus-one", "v2-codecs", _deep(2, "none", _v2_count(1)), CORRUPT, "records"),
    Case("v2-record-count-minus-one", "v2-codecs", _deep(2, "none", _v2_count(-1)), CORRUPT, "records"),
    Case("v2-record-count-negative", "v2-codecs", _deep(2, "none", _v2_count(-10**6)), CORRUPT, "records"),
    Case("v2-record-length-too-long", "v2-codecs", _deep(2, "none", _v2_first_record_length(0x7E)), CORRUPT,
         "records"),
    Case("v2-record-length-too-short", "v2-codecs", _deep(2, "none", _v2_first_record_length(0x02)), CORRUPT,
         "records"),
    Case("v2-varint-cut-by-record-end", "v2-transactional",
         _deep(2, "none", _set_payload_byte(1, 0x80)), CORRUPT, "records"),
    Case("v1-value-length-past-message", "v1-codecs", _deep(1, "none", _legacy_value_length(5000)), CORRUPT,
         "records"),
    # Not damage to Kafka: any negative length is a null value (LegacyRecord.value -> Utils.sizeDelimited).
    # kafkatool's Record has no raw length: Kafka's legacy valueSize() prints -7 where we print -1 (null).
    Case("v0-value-length-negative-is-null", "v0-codecs", _deep(0, "none", _legacy_value_length(-7)), OK,
         skip_record=("valueSize",)),
    *[Case(f"compressed-stream-damaged-v{m}-{c}", "mixed-formats" if m < 2 else "v2-codecs",
           _deep(m, c, _compressed_garbage), CORRUPT, "records")
      for m, c in [(2, "gzip"), (2, "snappy"), (2, "lz4"), (2, "zstd"), (1, "gzip"), (1, "snappy"), (1, "lz4"),
                   (0, "gzip"), (0, "snappy"), (0, "lz4")]],
]
CASES = {c.name: c for c in _CASES}
RANDOM_BASES = ("v0-codecs", "v1-codecs", "v1-logappendtime", "v2-codecs", "v2-transactional", "mixed-formats",
                "offset-gaps", "edge-values")
RANDOM_CASES = [f"random-{base}-{i}" for base in RANDOM_BASES for i in range(4)]
HOSTILE_LOGS = sorted(p.name for p in HOSTILE.glob("*.log"))
BOMBS = [n for n in HOSTILE_LOGS if n.startswith("bomb-")]


def _random_damage(data: bytes, rnd: random.Random) -> bytes:
    """One seeded damage anywhere: truncation, header cut, bit flip, zeroed batch, size field, garbage, or
    CRC-preserving damage inside a batch."""
    bs = layout(data)
    b = rnd.choice(bs)
    d = bytearray(data)
    kind = rnd.choice(["truncate", "flip", "zero", "size", "garbage", "deep"])
    if kind == "truncate":
        return data[:b.pos + rnd.randrange(1, b.size)]
    if kind == "flip":
        d[rnd.randrange(b.pos, b.pos + b.size)] ^= 1 << rnd.randrange(8)
    elif kind == "zero":
        d[b.pos:b.pos + b.size] = bytes(b.size)
    elif kind == "size":
        struct.pack_into(">i", d, b.pos + 8, rnd.choice([-5, 0, 13, 14, 30, 48, 49, b.size - 13, b.size - 11,
                                                        len(data), 2**31 - 1]))
    elif kind == "garbage":
        q = rnd.randrange(b.pos, b.pos + b.size)
        n = rnd.randrange(1, 64)
        d[q:q + n] = bytes(rnd.randrange(256) for _ in range(n))
        del d[len(data):]
    else:
        header = 61 if b.magic >= 2 else (12 + 14 + 4 if b.magic == 0 else 12 + 22 + 4)
        if b.size > header:
            q = rnd.randrange(b.pos + header, b.pos + b.size)
            d[q] = rnd.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, d[q] ^ 0x04])
            fix_crc(d, b)
    return bytes(d)


@pytest.fixture(scope="module")
def damaged(corpus: Corpus, kafka_ref: KafkaRef, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every damaged file, and Kafka's dump of it (run a few at a time)."""
    root = tmp_path_factory.mktemp("damaged")
    files: dict[str, Path] = {}
    for c in _CASES:
        files[c.name] = root / f"{c.name}.log"
        files[c.name].write_bytes(c.damage(corpus.paths[c.base].read_bytes()))
    for name in RANDOM_CASES:
        base, i = name[len("random-"):].rsplit("-", 1)
        rnd = random.Random(f"{base}/{i}")  # deterministic: a failure names a reproducible case
        files[name] = root / f"{name}.log"
        files[name].write_bytes(_random_damage(corpus.paths[base].read_bytes(), rnd))
    for name in HOSTILE_LOGS:
        files[name] = HOSTILE / name
    names = list(files)
    dumps = [Dump.from_run(r[0]) for r in kafka_ref.run_batches([[kafka_ref.dump_args(files[n])] for n in names])]
    return {n: (files[n], d) for n, d in zip(names, dumps, strict=True)}


@pytest.mark.parametrize("name", list(CASES))
def test_damage_is_classified_as_kafka_does(damaged: dict[str, Any], name: str) -> None:
    path, theirs = damaged[name]
    case = CASES[name]
    assert theirs.returncode == case.kafka_exit, (theirs.error, theirs.truncated)
    if case.kafka_stage is not None:
        assert theirs.error is not None and theirs.error["stage"] == case.kafka_stage, theirs.error
    ours = our_dump(path)
    assert_same_dump(ours, theirs, context=name, skip_record=case.skip_record)
    if theirs.returncode == TRAILING:
        assert ours.truncated is not None
        cut = theirs.truncated["trailing_bytes"] if theirs.truncated else None
        expected_kind = "short-tail" if cut is not None and cut <= 17 else "size-past-end"
        assert ours.truncated["kind"] == expected_kind, ours.truncated


@pytest.mark.parametrize("name", RANDOM_CASES)
def test_random_damage_is_classified_as_kafka_does(damaged: dict[str, Any], name: str) -> None:
    path, theirs = damaged[name]
    assert_same_dump(our_dump(path), theirs, context=name)


def test_random_damage_reaches_every_verdict(damaged: dict[str, Any]) -> None:
    """The seeded cases are not all the same kind: they hit clean reads, torn tails and each failing stage."""
    verdicts = {(d.returncode, d.error["stage"] if d.error else None) for n, (_, d) in damaged.items()
                if n in RANDOM_CASES}
    assert {(TRAILING, None), (CORRUPT, "ensureValid")} <= verdicts
    assert len(verdicts) >= 4, verdicts


@pytest.mark.parametrize("name", [n for n in HOSTILE_LOGS if n not in BOMBS])
def test_hostile_corpus_is_classified_as_kafka_does(damaged: dict[str, Any], name: str) -> None:
    path, theirs = damaged[name]
    assert_same_dump(our_dump(path), theirs, context=f"tests/hostile/{name}")


@pytest.mark.parametrize("name", BOMBS)
def test_decompression_bombs_stop_at_our_limit_where_kafka_fails_later(damaged: dict[str, Any], name: str) -> None:
    """Known difference: Kafka has no decompression limit. It inflates the 80 MiB (or tries to allocate the
    declared 1 GiB and dies with OutOfMemoryError) and then fails on the records; kafkatool stops at its
    limit with LimitExceededError. Both call the same batch corrupt at the records stage."""
    path, theirs = damaged[name]
    ours: Dump = our_dump(path)
    assert theirs.returncode == ours.returncode == CORRUPT
    assert ours.error is not None and theirs.error is not None
    assert ours.error["ours"] == "LimitExceededError"
    for k in ("stage", "position", "batches_ok"):
        assert ours.error[k] == theirs.error[k]
    assert theirs.error["stage"] == "records"


def test_an_undamaged_base_is_clean(corpus: Corpus) -> None:
    """The damage, not the base file, is what the cases above measure."""
    for base in {c.base for c in _CASES} | set(RANDOM_BASES):
        assert corpus.dumps[base].returncode == OK


def test_negative_lengths_read_as_null_like_kafka(kafka_ref: KafkaRef, tmp_path: Path) -> None:
    """A well-framed v2 record whose key, value and header value lengths are negative but not -1: Kafka's
    DefaultRecord.readFrom reads each as null (only a negative header *key* length is an error)."""
    # length | attributes | tsDelta | offsetDelta | key len -7 | value len 1, "v" | 1 header: "h", len -3
    body = b"\x00\x00\x00" + b"\x0d" + b"\x02v" + b"\x02" + b"\x02h" + b"\x05"
    record = bytes([len(body) * 2]) + body
    good = bytearray(v2.build_batch([(0, 1_700_000_000_000, None, b"v", [("h", None)])]))
    crafted = good[:61] + record
    struct.pack_into(">i", crafted, 8, len(crafted) - 12)
    fix_crc(crafted, B(0, len(crafted), 2, "none"))
    path = tmp_path / "negative-lengths.log"
    path.write_bytes(bytes(crafted))
    theirs = kafka_ref.dump(path)
    assert theirs.returncode == OK
    (r,) = theirs.records()
    assert (r["key"], r["keySize"], r["value"], r["headers"]) == (None, -1, "dg==", [{"key": "h", "value": None}])
    assert_same_dump(our_dump(path), theirs, context="negative lengths")
    # The bytes differ from the canonical encoding only in the length varints.
    assert len(crafted) == len(good)


def _dumplog_parity_cases() -> list[str]:
    return [n for n in HOSTILE_LOGS if n not in BOMBS]


@pytest.mark.parametrize("name", _dumplog_parity_cases())
def test_dump_log_format_stops_where_kafkas_tool_stops(damaged: dict[str, Any], name: str) -> None:
    """``kafkatool dump --format dump-log --deep`` prints what kafka-dump-log.sh 3.9 prints for the hostile
    corpus, where Kafka's tool prints something: the batch lines of the batches its reader returns (same
    positions), then ``Found N invalid bytes at the end of <name>`` when the reader stops silently before the
    end (N = the bytes from there), and no Found line when the reader throws (Kafka's tool dies there). A
    failure inside a batch (CRC, records) is left out: DumpLogSegments prints such a batch as ``isvalid:
    false`` and goes on where kafka-ref's dump throws, so kafka-ref's verdict does not say what the tool prints."""
    path, theirs = damaged[name]
    r = run_cli("dump", "--format", "dump-log", "--deep", path)
    assert "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"Dumping {path}"
    positions = [int(x.split(" position: ")[1].split()[0]) for x in lines
                 if x.startswith(("baseOffset: ", "offset: ")) and " position: " in x]  # v2 and legacy batch lines
    if theirs.error is not None and theirs.error["stage"] != "next-batch":
        # Kafka fails inside a batch (CRC, records): up to it, the same batches at the same positions; from it,
        # DumpLogSegments goes on where kafka-ref's dump stops, so there is nothing more of Kafka's to compare.
        ok = theirs.error["batches_ok"]
        assert positions[:ok] == [b["position"] for b in theirs.batches][:ok] and len(positions) > ok
        return
    found = [x for x in lines if x.startswith("Found ")]
    if theirs.error is not None:  # the reader throws (a size field below 14)
        assert positions == [b["position"] for b in theirs.batches][:theirs.error["batches_ok"]]
        assert found == []
        return
    assert positions == [b["position"] for b in theirs.batches]
    if theirs.truncated is None:
        assert found == []
    else:
        assert found == [f"Found {theirs.truncated['trailing_bytes']} invalid bytes at the end of {path.name}"]
        assert lines[-1] == found[0]
