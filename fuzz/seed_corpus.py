"""Seed each fuzz target's corpus with real bytes: the golden vectors, batches of every magic x codec
built by kafkatool, and the hostile-input corpus of tests/hostile/. Idempotent."""

from __future__ import annotations

import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from kafkatool.record import (  # noqa: E402
    codecs,
    default_records,
    legacy_records,  # noqa: E402
)
from kafkatool.record.codecs import Codec  # noqa: E402


def put(target: str, data: bytes) -> None:
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def main() -> None:
    recs = [(7, 1000, b"key", b"value" * 10, [("h", b"v")]), (8, 1005, None, b"x", [])]
    batches = []
    for codec in Codec:
        batches.append(default_records.build_batch(recs, codec=codec))
        if codec != Codec.ZSTD:
            for magic in (0, 1):
                batches.append(legacy_records.build_entries([r[:4] for r in recs], magic=magic, codec=codec))
    for b in batches:
        put("fuzz_records", b)
        put("fuzz_records", b"\x00" + b)
        put("fuzz_files", b"\x07" + b)
    # The converters: every batch alone and all of them in one segment, under a few of each target's flags
    # (bit 0 reseal, 1-2 codec, 3 skip_corrupt, 4 magic 0 / batch bytes, 5 small max.message.bytes, 6 zstd_to).
    segment = b"".join(default_records.build_batch([(10 * i + j, 1000 + j, b"k%d" % j, b"v" * j, [])
                                                    for j in range(3)], codec=c) for i, c in enumerate(Codec))
    for b in batches + [segment] + damaged():
        for flags in (0, 1, 8, 18, 34):
            put("fuzz_upconvert", bytes((flags,)) + b)
            put("fuzz_downconvert", bytes((flags | 64,)) + b)
    for codec in Codec:
        for magic in (0, 1, 2):
            if codec == Codec.ZSTD and magic < 2:
                continue
            put("fuzz_codecs", bytes((codec, magic)) + codecs.compress(codec, b"kafka " * 200, magic=magic))
    vectors = os.path.join(ROOT, "tests", "vectors", "kafka-3.9.1-golden.txt")
    for line in open(vectors):
        if "=" in line:
            try:
                put("fuzz_records", bytes.fromhex(line.split("=", 1)[1].strip()))
            except ValueError:
                pass
    seed_decoders()
    hostile = os.path.join(ROOT, "tests", "hostile")
    kinds = {".index": 0, ".timeindex": 1, ".txnindex": 2, ".snapshot": 3}
    for dirpath, _, names in sorted(os.walk(hostile)):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            data = open(path, "rb").read()[:65536]
            if os.path.basename(dirpath) == "fuzz-found":
                # Inputs a fuzzer found, already in its target's format: <target name without fuzz_>-<what>.bin
                put("fuzz_" + name.split("-", 1)[0], data)
            elif name.endswith(".log"):
                put("fuzz_upconvert", b"\x00" + data)
                put("fuzz_downconvert", b"\x40" + data)
                put("fuzz_records", b"\x00" + data)
                put("fuzz_files", b"\x07" + data)
                put("fuzz_dump", b"\x07\x00\x00" + data)
            elif name.endswith(tuple(kinds)):
                put("fuzz_files", bytes((kinds[os.path.splitext(name)[1]],)) + data)

def damaged() -> list[bytes]:
    """Issue 23's laundering inputs (tests/support/damaged_batches.py), each followed by a good batch: a flipped
    inner message under a valid wrapper CRC, inner offsets going backwards, a cut inner set, int64's last offset,
    a negative lastOffsetDelta, malformed control records, v2 records that do not decode under a resealed CRC."""
    from kafkatool.record.codecs import Codec
    from tests.support import damaged_batches as d

    cases = [d.inner_crc_flip(m, c) for m in (0, 1) for c in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4)]
    cases += [d.decreasing_inner(), d.inner_cut(0), d.inner_cut(1), d.negative_delta(), d.bad_control(),
              d.bad_control(key=b"\x00\x00"), d.v2_bad_record(3)]
    out = [c + d.batch(20) for c in cases]
    return out + [d.offset_max(), d.batch(0) + d.batch(1)]


def seed_decoders() -> None:
    """fuzz_decoders: byte 0 % 3 picks the decoder (offsets, transactions, FetchResponse), byte 1 the split."""
    from kafkatool.decoders.offsets import offset_commit_key, offset_commit_value
    from kafkatool.fetch.response import PartitionHeader, framing

    key = offset_commit_key("group-1", "orders", 3)
    value = offset_commit_value(42, commit_timestamp=1_700_000_000_000, metadata="m")
    if len(key) < 256:
        put("fuzz_decoders", bytes((0, len(key))) + key + value)
    records = default_records.build_batch([(0, 1000, b"k", b"v", [])])
    for version in range(4):
        parts = [PartitionHeader("orders", 0, 0, 10, len(records)), PartitionHeader("orders", 1, 0, 5, -1)]
        body = b"".join(x if isinstance(x, bytes) else records for x in framing(version, 7, 0, parts))
        put("fuzz_decoders", bytes((2, version)) + body)


if __name__ == "__main__":
    main()
