"""Generate the hostile-input corpus (deterministic). Run from the repo root:

    python tests/hostile/make_corpus.py

Every file is built from a valid kafkatool-written segment (byte-identical to what kafka-clients 3.9.1
writes for uncompressed batches, see tests/record/test_records.py) with one deliberate defect. MANIFEST.json
records, per file, what the defect is and what must be reported:

* by the library, reading as Kafka's own readers do (tests/hostile/test_library.py; the .log files are also
  judged by Kafka itself in tests/interop/test_damage_interop.py): the stage that detects it (walk / crc /
  records / decompress / tail / index / snapshot / recover, or clean where Kafka's reader accepts the bytes),
  the error class, the byte position and a message fragment;
* by ``kafkatool dump --deep --verify FILE`` (tests/hostile/test_cli.py, through the CLI): ``dump_exit``, the
  exit code, and ``dump_finding`` / ``dump_position``, the kind and byte position of the first error or
  warning it reports (for exit 0, the finding it reports, if any); ``dump_batches``, where given, the number
  of batches it still prints (garbage in the middle: the ones after it too).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import lz4.block  # noqa: E402
import zstandard  # noqa: E402

from kafkatool.log import snapshot  # noqa: E402
from kafkatool.log.index import OffsetPosition, TimestampOffset, encode_offset_index, encode_time_index  # noqa: E402
from kafkatool.record import default_records as v2  # noqa: E402
from kafkatool.record import legacy_records as legacy  # noqa: E402
from kafkatool.record.codecs import XERIAL_HEADER, Codec  # noqa: E402

TS = 1_700_000_000_000
MANIFEST: dict[str, dict[str, object]] = {}


def batch(offset: int, n: int = 3, codec: Codec = Codec.NONE, value: bytes = b"value") -> bytes:
    return v2.build_batch([(offset + i, TS + i, b"k%d" % i, value, [("h", b"x")]) for i in range(n)], codec=codec)


def reseal(data: bytearray, pos: int = 0) -> bytearray:
    size = struct.unpack_from(">i", data, pos + 8)[0] + 12
    struct.pack_into(">I", data, pos + 17, v2.crc32c(bytes(data[pos + 21:pos + size])))
    return data


def with_records_area(area: bytes, count: int, codec: Codec = Codec.NONE, offset: int = 0) -> bytes:
    """A v2 batch header (valid CRC) around an arbitrary records area."""
    out = bytearray(v2.HEADER.pack(offset, 49 + len(area), -1, 2, 0, int(codec), max(count - 1, 0), TS, TS,
                                   -1, -1, -1, count))
    out += area
    return bytes(reseal(out))


def add(name: str, data: bytes, *, defect: str, stage: str, error: str | None, position: int | None,
        match: str, finding: str | None, at: int | None, dump_exit: int = 1, batches: int | None = None) -> None:
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    MANIFEST[name] = {"defect": defect, "stage": stage, "error": error, "position": position, "match": match,
                      "dump_exit": dump_exit, "dump_finding": finding, "dump_position": at, "size": len(data)}
    if batches is not None:
        MANIFEST[name]["dump_batches"] = batches


def main() -> None:
    good = batch(0) + batch(3) + batch(6)
    b0 = len(batch(0))

    bad = bytearray(good)
    struct.pack_into(">i", bad, b0 + 8, -5)
    add("negative-batch-length.log", bytes(bad), defect="second batch's length field is -5", stage="walk",
        error="CorruptRecordError", position=b0, match="smaller than minimum record overhead",
        finding="corrupt-region", at=b0)

    bad = bytearray(good)
    struct.pack_into(">i", bad, b0 + 8, 0x7FFFFFF0)
    add("huge-batch-length.log", bytes(bad), defect="second batch declares 2 GiB", stage="tail",
        error="size-past-end", position=b0, match="declares", finding="corrupt-region", at=b0)

    short = bytearray(batch(0)[:40])
    struct.pack_into(">i", short, 8, 28)
    add("length-below-v2-header.log", good[:b0] + bytes(short), defect="a magic 2 entry of 40 bytes (< 61)",
        stage="crc", error="CorruptRecordError", position=b0, match="smaller than the minimum allowed overhead",
        finding="crc-mismatch", at=b0)

    rec = v2.encode_record(0, 0, b"k", b"v")
    add("record-count-exceeds-bytes.log", with_records_area(rec, 1_000_000),
        defect="count 1000000 with one 9-byte record", stage="records", error="InvalidRecordError", position=0,
        match="premature EOF", finding="invalid-records", at=0)

    varint6 = b"\x1a\x00\x00" + b"\x80\x80\x80\x80\x80\x00" + b"\x02k\x02v\x00"
    add("varint-int-6-bytes.log", with_records_area(varint6, 1), defect="offsetDelta encoded in 6 bytes",
        stage="records", error="InvalidRecordError", position=0, match="longer than 5 bytes",
        finding="invalid-records", at=0)

    varlong11 = b"\x1e\x00" + b"\x80" * 10 + b"\x00" + b"\x00\x02k\x02v\x00"
    add("varlong-11-bytes.log", with_records_area(varlong11, 1), defect="timestampDelta encoded in 11 bytes",
        stage="records", error="InvalidRecordError", position=0, match="longer than 10 bytes",
        finding="invalid-records", at=0)

    negkey = b"\x10\x00\x00\x00\x09k\x02v\x00"
    # Kafka reads any negative key/value length as null (DefaultRecord.readFrom) and then trips on the bytes left.
    add("negative-key-length.log", with_records_area(negkey, 1), defect="key length -5", stage="records",
        error="InvalidRecordError", position=0, match="Header key runs past the end", finding="invalid-records", at=0)

    negval = b"\x10\x00\x00\x00\x02k\x07v\x00"
    add("negative-value-length.log", with_records_area(negval, 1), defect="value length -4", stage="records",
        error="InvalidRecordError", position=0, match="number of record headers", finding="invalid-records", at=0)

    neghdr = b"\x16\x00\x00\x00\x02k\x02v\x02\x05h\x02x"
    add("negative-header-key-length.log", with_records_area(neghdr, 1), defect="header key length -3",
        stage="records", error="InvalidRecordError", position=0, match="negative header key size",
        finding="invalid-records", at=0)

    hugehdr = b"\x10\x00\x00\x00\x02k\x02v\xfe\xff\xff\xff\x0f"
    hugehdr = bytes([len(hugehdr) - 1 + 4 - 4]) + hugehdr[1:]
    body = b"\x00\x00\x00\x02k\x02v\xfe\xff\xff\xff\x0f"
    add("huge-header-count.log", with_records_area(bytes([len(body) * 2]) + body, 1),
        defect="header count 2147483647 in a 13-byte record", stage="records", error="InvalidRecordError",
        position=0, match="number of record headers", finding="invalid-records", at=0)

    bad = bytearray(good)
    bad[b0 + 70] ^= 0x20
    add("crc-mismatch.log", bytes(bad), defect="one bit flipped in the second batch's records", stage="crc",
        error="CorruptRecordError", position=b0, match="Record is corrupt (stored crc", finding="crc-mismatch", at=b0)

    leg = bytearray(legacy.build_entries([(0, TS, b"k", b"v"), (1, TS, b"k", b"w")], magic=1))
    leg[-1] ^= 0x01
    add("crc-mismatch-v1.log", bytes(leg), defect="last byte of the second v1 message flipped", stage="crc",
        error="CorruptRecordError", position=36, match="Record is corrupt (stored crc", finding="crc-mismatch", at=36)

    for magic in (3, 127):
        bad = bytearray(batch(0))
        bad[16] = magic
        # Kafka's segment reader (FileLogInputStream) takes any magic above 1 for v2, and the CRC-32C does not
        # cover the magic byte: the library reads it as Kafka does. MemoryRecords (produce, replication, the
        # consumer) refuses it: "Invalid magic found in record"; dump reports it.
        add(f"magic-{magic}.log", bytes(reseal(bad)), defect=f"magic {magic} with a valid CRC-32C (Kafka's segment "
            "reader reads it as v2)", stage="clean", error=None, position=None, match="", finding="unknown-magic",
            at=0)

    add("zero-filled-tail.log", good + b"\x00" * 4096, defect="4 KiB of zeros after the last batch "
        "(preallocated log or torn write; the broker's recovery truncates at the zero size field)", stage="walk",
        error="CorruptRecordError", position=len(good), match="smaller than minimum record overhead",
        finding="trailing-zeros", at=len(good))

    add("truncated-last-batch.log", good[:-10], defect="last batch cut 10 bytes short", stage="tail",
        error="size-past-end", position=2 * b0, match="declares", finding="torn-tail", at=2 * b0)

    add("torn-header.log", good + batch(9)[:15], defect="15 bytes of a next batch header", stage="tail",
        error="short-tail", position=len(good), match="trailing bytes", finding="torn-tail", at=len(good))

    garbage = bytes(range(256)) * 2
    add("garbage-in-the-middle.log", batch(0) + garbage + batch(3) + batch(6),
        defect="512 bytes of garbage between the first and second batch (valid batches follow); its "
        "length field runs past EOF, so Kafka's reader silently stops there and would lose the rest",
        stage="tail", error="size-past-end", position=b0, match="declares", finding="corrupt-region", at=b0,
        batches=3)

    add("trailing-garbage.log", good + b"this line was appended by a script\n",
        defect="a text line appended after the last batch: its 'size field' declares 1.7 GB in a 380-byte file",
        stage="tail", error="size-past-end", position=len(good), match="declares", finding="trailing-garbage",
        at=len(good))

    neghv = b"\x00\x00\x00\x02k\x02v\x02\x02h\x05"  # well framed; header value length -3
    add("negative-header-value-length.log", with_records_area(bytes([len(neghv) * 2]) + neghv, 1),
        defect="header value length -3 in a well-framed record: Kafka reads any negative length as null "
        "(DefaultRecord.readFrom), so this is not damage", stage="clean", error=None, position=None, match="",
        finding=None, at=None, dump_exit=0)

    zeros = b"\x00" * (80 << 20)
    recs_area = bytearray()
    # A records area whose decompressed size exceeds the default 64 MiB limit.
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = gz.compress(zeros) + gz.flush()
    add("bomb-gzip.log", with_records_area(bomb, 1, Codec.GZIP), defect="gzip member of 80 MiB of zeros",
        stage="decompress", error="LimitExceededError", position=0, match="exceeds the limit",
        finding="decompress-limit", at=0)

    zbomb = zstandard.ZstdCompressor(level=19, write_content_size=False).compress(zeros)
    add("bomb-zstd.log", with_records_area(zbomb, 1, Codec.ZSTD), defect="zstd frame of 80 MiB of zeros",
        stage="decompress", error="LimitExceededError", position=0, match="exceeds the limit",
        finding="decompress-limit", at=0)

    block = lz4.block.compress(b"\x00" * 65536, store_size=False)
    frame = bytearray(b"\x04\x22\x4d\x18\x60\x40\x82")
    for _ in range(80 * 16):
        frame += struct.pack("<I", len(block)) + block
    frame += b"\x00\x00\x00\x00"
    add("bomb-lz4.log", with_records_area(bytes(frame), 1, Codec.LZ4), defect="lz4 frame of 80 MiB of zeros",
        stage="decompress", error="LimitExceededError", position=0, match="exceeds the limit",
        finding="decompress-limit", at=0)

    snappy_claim = b"\x80\x80\x80\x80\x04" + b"\x00\x00"  # raw block claiming 1 GiB
    add("bomb-snappy.log", with_records_area(snappy_claim, 1, Codec.SNAPPY),
        defect="raw snappy block declaring 1 GiB of output", stage="decompress", error="LimitExceededError",
        position=0, match="exceeds the limit", finding="decompress-limit", at=0)

    bad_xerial = XERIAL_HEADER + struct.pack(">i", 5000) + b"\x01\x02\x03"
    add("snappy-bad-framing.log", with_records_area(bad_xerial, 1, Codec.SNAPPY),
        defect="xerial chunk of 5000 bytes with 3 present", stage="decompress", error="CorruptRecordError",
        position=0, match="snappy chunk", finding="invalid-records", at=0)

    linked = b"\x04\x22\x4d\x18\x40\x40\xc0" + b"\x00\x00\x00\x00"
    add("lz4-linked-blocks.log", with_records_area(linked, 1, Codec.LZ4),
        defect="lz4 frame with dependent (linked) blocks", stage="decompress", error="CorruptRecordError",
        position=0, match="dependent block", finding="invalid-records", at=0)

    badhc = b"\x04\x22\x4d\x18\x60\x40\x1a" + b"\x00\x00\x00\x00"
    add("lz4-bad-header-checksum.log", with_records_area(badhc, 1, Codec.LZ4),
        defect="v2 lz4 frame with the magic-0 header checksum 0x1a", stage="decompress",
        error="CorruptRecordError", position=0, match="descriptor corrupted", finding="invalid-records", at=0)

    # Index files (checked by dump --verify-index / reindex-time against 00000000000000000000.log).
    seg = good
    os.makedirs(os.path.join(HERE, "index-padding"), exist_ok=True)
    with open(os.path.join(HERE, "index-padding", "00000000000000000000.log"), "wb") as f:
        f.write(seg)
    idx = encode_offset_index([OffsetPosition(5, b0)], 0) + b"\x00" * (10 * 1024 * 1024 - 8)
    with open(os.path.join(HERE, "index-padding", "00000000000000000000.index"), "wb") as f:
        f.write(idx[:1 << 16])  # 64 KiB of padding keeps the repo small; same rule as 10 MiB
    MANIFEST["index-padding/00000000000000000000.index"] = {
        "defect": "one entry then 65528 zero bytes (preallocated, untrimmed)", "stage": "index",
        "error": "padding", "position": 8, "match": "", "dump_exit": 0, "dump_finding": "index-padding",
        "dump_position": 8, "size": 1 << 16}

    os.makedirs(os.path.join(HERE, "index-past-end"), exist_ok=True)
    with open(os.path.join(HERE, "index-past-end", "00000000000000000000.log"), "wb") as f:
        f.write(seg[:b0])
    with open(os.path.join(HERE, "index-past-end", "00000000000000000000.index"), "wb") as f:
        f.write(encode_offset_index([OffsetPosition(5, b0), OffsetPosition(8, 2 * b0)], 0))
    MANIFEST["index-past-end/00000000000000000000.index"] = {
        "defect": "entries point past the end of the (truncated) log", "stage": "index", "error": "past-end",
        "position": 0, "match": "", "dump_exit": 1, "dump_finding": "index-entry-past-end", "dump_position": 0,
        "size": 16}

    over = batch(0)[:0] + v2.build_batch([(2**31 + 5, TS, b"k", b"v", [])])
    os.makedirs(os.path.join(HERE, "offset-overflow"), exist_ok=True)
    with open(os.path.join(HERE, "offset-overflow", "00000000000000000000.log"), "wb") as f:
        f.write(batch(0) + over)
    MANIFEST["offset-overflow/00000000000000000000.log"] = {
        "defect": "a batch at offset 2^31+5 in a segment with base offset 0 (relative offset overflows int32)",
        "stage": "recover", "error": "CorruptDataError", "position": b0, "match": "does not fit", "dump_exit": 1,
        "dump_finding": "offset-overflow", "dump_position": b0, "size": b0 + len(over)}

    # Another partition file passed as a .log: Kafka's reader sees a size field past the end and stops silently
    # (DumpLogSegments: "Found 24 invalid bytes"); dump says what the file looks like.
    add("wrong-type-index-as.log", encode_offset_index([OffsetPosition(100, 4096), OffsetPosition(200, 8192),
                                                       OffsetPosition(300, 12288)], 0),
        defect="an offset index passed as a .log", stage="tail", error="size-past-end", position=0,
        match="declares 212 bytes", finding="wrong-file-type", at=0)
    add("wrong-type-timeindex-as.log", encode_time_index([TimestampOffset(TS, 100), TimestampOffset(TS + 60_000, 200),
                                                          TimestampOffset(TS + 120_000, 300)], 0),
        defect="a time index passed as a .log", stage="tail", error="size-past-end", position=0,
        match="declares 112 bytes", finding="wrong-file-type", at=0)

    snap = bytearray(snapshot.encode_snapshot([snapshot.ProducerSnapshotEntry(1, 0, 9, 100, 9, TS, 0, -1)]))
    snap[-1] ^= 0xFF
    add("snapshot-bad-crc.snapshot", bytes(snap), defect="producer snapshot with a flipped byte",
        stage="snapshot", error="CorruptDataError", position=2, match="CRC is no longer valid",
        finding="snapshot-corrupt", at=2)
    del recs_area

    with open(os.path.join(HERE, "MANIFEST.json"), "w") as f:
        json.dump(MANIFEST, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
