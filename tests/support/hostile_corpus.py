"""The second hostile corpus (issue 23): inputs a hostile tester builds by hand, made at test time in a temp
dir (FIFOs, device links and symlink loops cannot live in git; the bombs are made once per session).

Each :class:`Case` builds one input under a root and says what it is (a file named on the command line, a
partition dir, or a log dir) and which exit codes each command may give. ``tests/hostile/test_sweep.py``
runs every command over every case in a subprocess and checks what every run must keep, whatever the
case: it ends (no hang), prints no traceback and no internal error, exits with an allowed code, leaves its
inputs as they were, and stays under the memory bound.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

from kafkatool.record import default_records as v2
from kafkatool.record import legacy_records as legacy
from kafkatool.record.codecs import Codec, compress

TS = 1_700_000_000_000
SEG0 = "00000000000000000000"
INT64_MAX = (1 << 63) - 1

# Exit codes: 0 ok, 1 findings, 2 usage or I/O error (a file named on the command line that cannot be used).
ANY = frozenset({0, 1, 2})
FINDING = frozenset({1})
REFUSED_INPUT = frozenset({2})

READERS = ("dump", "dump-deep", "reindex", "recovery-report", "fetch-sim", "spark-scan")
WRITERS = ("downconvert", "upconvert", "reindex-output", "canary-run")
COMMANDS = READERS + ("canary-plan",) + WRITERS


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "file" (named on the command line), "partition", "logdir"
    build: Callable[[Path], Path]  # builds under the given dir, returns the path passed to the command
    expect: dict[str, frozenset[int]] = field(default_factory=dict)  # command -> allowed exit codes
    default: frozenset[int] = ANY
    slow: bool = False  # a bomb: built once per session, runs take seconds
    outputs_inside: bool = False  # the writers' outputs aimed inside the input (its dir, or a named file's dir)
    mapped_bound: bool = False  # mapped file pages stay within the memory budget too (a preallocated segment)

    def allowed(self, command: str) -> frozenset[int]:
        return self.expect.get(command, self.default)


# ------------------------------------------------------------------------------------------- building blocks

def batch(offset: int, n: int = 3, codec: Codec = Codec.NONE) -> bytes:
    return v2.build_batch([(offset + i, TS + i, b"k%d" % i, b"value", []) for i in range(n)], codec=codec)


def reseal(data: bytearray, pos: int = 0) -> bytearray:
    """Recompute a v2 batch's CRC-32C after an edit (the damage stays, the CRC says it is fine)."""
    size = struct.unpack_from(">i", data, pos + 8)[0] + 12
    struct.pack_into(">I", data, pos + 17, v2.crc32c(bytes(data[pos + 21:pos + size])))
    return data


def partition(root: Path, name: str, segments: dict[str, bytes]) -> Path:
    d = root / name
    d.mkdir(parents=True)
    for base, data in segments.items():
        (d / f"{base}.log").write_bytes(data)
    return d


def good_partition(root: Path, name: str = "t-0") -> Path:
    """Two segments of small v2 batches with their (trimmed, empty) indexes."""
    d = partition(root, name, {SEG0: batch(0) + batch(3), "00000000000000000006": batch(6) + batch(9)})
    for base in (SEG0, "00000000000000000006"):
        (d / f"{base}.index").write_bytes(b"")
        (d / f"{base}.timeindex").write_bytes(b"")
    return d


def legacy_wrapper(magic: int, codec: Codec, inner: bytes, wrapper_offset: int) -> bytes:
    """A compressed v0/v1 wrapper around ``inner`` (log entries), with a valid outer CRC."""
    attrs = legacy.compute_attributes(magic, codec, legacy.TimestampType.CREATE_TIME if magic else
                                      legacy.TimestampType.NO_TIMESTAMP_TYPE)
    msg = legacy.encode_message(magic, attrs, TS if magic else -1, None, compress(codec, inner, magic=magic))
    return legacy.encode_entry(wrapper_offset, msg)


# ------------------------------------------------------------------------------------------- the cases

def _fifo_file(root: Path) -> Path:
    p = root / f"{SEG0}.log"
    os.mkfifo(p)
    return p


def _dir_file(root: Path) -> Path:
    p = root / f"{SEG0}.log"
    p.mkdir()
    return p


def _link(target: str) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        p = root / f"{SEG0}.log"
        p.symlink_to(target)
        return p
    return build


def _loop_file(root: Path) -> Path:
    a, b = root / f"{SEG0}.log", root / "00000000000000000010.log"
    a.symlink_to(b.name)
    b.symlink_to(a.name)
    return a


def _in_partition(edit: Callable[[Path], None]) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        d = good_partition(root)
        edit(d)
        return d
    return build


def _replace(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        p = d / name
        if p.exists() or p.is_symlink():
            p.unlink()
        make(p)
    return edit


def _zstd_bomb(root: Path) -> Path:
    """One valid zstd v2 batch of 3.9 M records with a null key and an empty value (~38 MB inflated, ~3 MB
    on disk): the records, not the bytes, are the bomb."""
    n = 3_900_000
    parts = []
    for i in range(n):
        body = b"\x00\x00" + _varint(i) + b"\x01\x00\x00"  # attrs, ts delta 0, offset delta, key -1, value 0, 0 hdrs
        parts.append(_varint(len(body)) + body)
    area = zstandard.ZstdCompressor(level=3).compress(b"".join(parts))
    head = v2.HEADER.pack(0, 49 + len(area), 0, 2, 0, int(Codec.ZSTD), n - 1, TS, TS, -1, -1, -1, n)
    return partition(root, "bomb-0", {SEG0: bytes(reseal(bytearray(head + area)))})


def _v2_bomb(codec: Codec) -> Callable[[Path], Path]:
    """:func:`_zstd_bomb` with another codec (one a v0/v1 consumer can be served: down-conversion keeps it)."""
    def build(root: Path) -> Path:
        n = 3_000_000
        area = b"".join(_varint(len(body)) + body for body in
                        (b"\x00\x00" + _varint(i) + b"\x01\x00\x00" for i in range(n)))
        data = compress(codec, area)
        head = v2.HEADER.pack(0, 49 + len(data), 0, 2, 0, int(codec), n - 1, TS, TS, -1, -1, -1, n)
        return partition(root, "bomb-0", {SEG0: bytes(reseal(bytearray(head + data)))})
    return build


def _v1_wrapper_bomb(root: Path) -> Path:
    """A v1 lz4 wrapper of 1.2 M inner messages with a null key and an empty value (relative inner offsets)."""
    n = 1_200_000
    body = struct.pack(">bbqii", 1, 0, TS, -1, 0)
    crc = zlib.crc32(body)
    inner = b"".join(struct.pack(">qiI", i, len(body) + 4, crc) + body for i in range(n))
    return partition(root, "bomb-0", {SEG0: legacy_wrapper(1, Codec.LZ4, inner, n - 1)})


def _gzip_v0_bomb(root: Path) -> Path:
    """A v0 gzip wrapper of 1.5 M empty inner messages (~3.9 MB on disk)."""
    n = 1_500_000
    body = struct.pack(">bbii", 0, 0, -1, 0)
    crc = zlib.crc32(body)
    inner = b"".join(struct.pack(">qiI", i, len(body) + 4, crc) + body for i in range(n))
    return partition(root, "bomb-0", {SEG0: legacy_wrapper(0, Codec.GZIP, inner, n - 1)})


def _sparse(name: str, size: int, data: bytes) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        d = good_partition(root)
        p = d / name
        with open(p, "wb") as f:
            f.write(data)
            f.truncate(size)
        return d
    return build


def _inner_crc_flip(magic: int) -> Callable[[Path], Path]:
    """A gzip wrapper whose third inner message has one flipped bit in its value: that message's own CRC fails,
    while the wrapper's CRC, computed over the compressed bytes, is valid. (Base offset 0: v1's relative inner
    offsets equal the absolute ones.)"""
    def build(root: Path) -> Path:
        inner = bytearray(legacy.build_entries([(i, TS + i, b"k", b"value-%d" % i) for i in range(5)], magic=magic))
        size = 12 + struct.unpack_from(">i", inner, 8)[0]
        inner[3 * size - 2] ^= 0x01  # a value byte of the third message
        return partition(root, "crc-0", {SEG0: legacy_wrapper(magic, Codec.GZIP, bytes(inner), 4) + batch(5)})
    return build


def _offset_max(root: Path) -> Path:
    data = bytearray(batch(0, n=1))
    struct.pack_into(">q", data, 0, INT64_MAX)
    return partition(root, "max-0", {SEG0: bytes(data)})


def _decreasing_inner(root: Path) -> Path:
    recs = [(i, TS, b"k", b"v%d" % i) for i in range(5)]
    inner = bytearray(legacy.build_entries(recs, magic=1))
    size = 12 + struct.unpack_from(">i", inner, 8)[0]
    for k in range(5):
        struct.pack_into(">q", inner, k * size, 4 - k)
    return partition(root, "dec-0", {SEG0: legacy_wrapper(1, Codec.SNAPPY, bytes(inner), 4)})


def _named_above(root: Path) -> Path:
    return partition(root, "above-0", {"00000000000000001000": batch(0) + batch(3)})


def _negative_delta(root: Path) -> Path:
    data = bytearray(batch(10, n=1))
    struct.pack_into(">i", data, 23, -7)
    return partition(root, "neg-0", {SEG0: batch(0) + bytes(reseal(data))})


def _bad_control(root: Path) -> Path:
    """A transactional control batch (valid CRC) whose COMMIT record's value is one byte, not a marker."""
    data = v2.build_batch([(3, TS, v2.control_key(1), b"\x00", [])], producer_id=7, producer_epoch=0,
                          is_transactional=True, is_control=True)
    return partition(root, "ctl-0", {SEG0: batch(0) + data})


def _inner_cut(root: Path) -> Path:
    recs = [(i, TS + i, b"k", b"value-%d" % i) for i in range(3)]
    inner = legacy.build_entries(recs, magic=1)
    inner = inner[:-5]  # the last inner message ends early
    return partition(root, "cut-0", {SEG0: legacy_wrapper(1, Codec.GZIP, inner, 2)})


def _escape_names(root: Path) -> Path:
    d = good_partition(root, "evil\x1b[2J-0")
    (d / "note\nwith\x1b[31mescapes.log").write_bytes(batch(0))
    return root


# hfiles: builders of the non-regular-file cases at the end of CASES

def _socket(p: Path) -> None:
    import socket

    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(p))  # the socket file stays after the close: nobody listens
    finally:
        s.close()


def _log_dir_with_fifo_checkpoint(root: Path) -> Path:
    good_partition(root)
    os.mkfifo(root / "recovery-point-offset-checkpoint")
    return root


def _link_to_regular(d: Path) -> None:
    """The first segment's .log moved out of the partition dir and linked back (a partition spread over disks)."""
    elsewhere = d.parent / "elsewhere"
    elsewhere.mkdir()
    (d / f"{SEG0}.log").rename(elsewhere / f"{SEG0}.log")
    (d / f"{SEG0}.log").symlink_to(elsewhere / f"{SEG0}.log")


def _named_link_to_regular(root: Path) -> Path:
    d = good_partition(root)
    _link_to_regular(d)
    return d / f"{SEG0}.log"


CASES: list[Case] = [
    # non-regular files named on the command line: exit 2, never a hang
    Case("fifo-named", "file", _fifo_file, default=REFUSED_INPUT),
    Case("directory-named", "file", _dir_file, default=REFUSED_INPUT),
    Case("dev-zero-link-named", "file", _link("/dev/zero"), default=REFUSED_INPUT),
    Case("dangling-link-named", "file", _link("missing.log"), default=REFUSED_INPUT),
    Case("link-loop-named", "file", _loop_file, default=REFUSED_INPUT),
    # non-regular files inside a dir walk: a finding (exit 1)
    Case("fifo-in-partition", "partition", _in_partition(_replace(f"{SEG0}.log", os.mkfifo)), default=FINDING),
    Case("index-dev-zero", "partition",
         _in_partition(_replace(f"{SEG0}.index", lambda p: p.symlink_to("/dev/zero"))), default=FINDING),
    Case("timeindex-dev-urandom", "partition",
         _in_partition(_replace(f"{SEG0}.timeindex", lambda p: p.symlink_to("/dev/urandom"))), default=FINDING),
    Case("log-is-directory", "partition", _in_partition(_replace(f"{SEG0}.log", lambda p: p.mkdir())),
         default=FINDING),
    Case("log-dangling-link", "partition",
         _in_partition(_replace(f"{SEG0}.log", lambda p: p.symlink_to("gone.log"))), default=FINDING),
    Case("log-dev-zero-link", "partition",
         _in_partition(_replace(f"{SEG0}.log", lambda p: p.symlink_to("/dev/zero"))), default=FINDING),
    Case("log-link-loop", "partition", _in_partition(_replace(
        f"{SEG0}.log", lambda p: (p.symlink_to("00000000000000000006.log"),
                                  (p.parent / "00000000000000000006.log").unlink(),
                                  (p.parent / "00000000000000000006.log").symlink_to(p.name)))), default=FINDING),
    # bombs: valid data, memory bounded per record
    Case("zstd-record-count-bomb", "partition", _zstd_bomb, default=frozenset({0, 1}), slow=True,
         expect={"downconvert": frozenset({0}), "dump": frozenset({0}), "dump-deep": frozenset({0})}),
    Case("v0-gzip-wrapper-bomb", "partition", _gzip_v0_bomb, default=frozenset({0, 1}), slow=True,
         expect={"upconvert": frozenset({0}), "dump": frozenset({0}), "dump-deep": frozenset({0})}),
    Case("preallocated-1gib-segment", "partition", _sparse(f"{SEG0}.log", 1 << 30, batch(0)), slow=True,
         default=frozenset({0, 1}), mapped_bound=True),
    Case("sparse-8gib-index", "partition", _sparse(f"{SEG0}.index", 8 << 30, b""), slow=True,
         default=frozenset({0, 1, 2})),
    # corrupt data is never laundered
    Case("v1-gzip-inner-crc-flip", "partition", _inner_crc_flip(1),
         expect={"dump-deep": FINDING, "downconvert": FINDING, "upconvert": FINDING, "canary-run": FINDING}),
    Case("v0-gzip-inner-crc-flip", "partition", _inner_crc_flip(0),
         expect={"dump-deep": FINDING, "downconvert": FINDING, "upconvert": FINDING, "canary-run": FINDING}),
    # limits and orderings that once were internal errors
    Case("base-offset-int64-max", "partition", _offset_max, default=frozenset({0, 1})),
    Case("v1-snappy-decreasing-inner-offsets", "partition", _decreasing_inner, default=frozenset({0, 1}),
         expect={"dump-deep": FINDING, "upconvert": FINDING, "canary-run": FINDING}),
    Case("segment-named-above-its-offsets", "partition", _named_above, default=frozenset({0, 1})),
    Case("negative-last-offset-delta", "partition", _negative_delta, default=frozenset({0, 1}),
         expect={"dump": FINDING, "dump-deep": FINDING}),
    Case("malformed-control-record", "partition", _bad_control, default=frozenset({0, 1}),
         expect={"dump-deep": FINDING}),
    Case("v1-inner-set-cut-mid-message", "partition", _inner_cut, default=frozenset({0, 1}),
         expect={"dump-deep": FINDING}),
    Case("escape-codes-in-names", "logdir", _escape_names, default=frozenset({0, 1})),
    # non-regular files (hfiles): the other Kafka file names of a partition dir and a log dir's own files; a
    # symlink to a regular file is followed
    Case("snapshot-dev-zero", "partition",
         _in_partition(_replace(f"{SEG0}.snapshot", lambda p: p.symlink_to("/dev/zero"))), default=FINDING),
    Case("txnindex-fifo", "partition", _in_partition(_replace(f"{SEG0}.txnindex", os.mkfifo)), default=FINDING),
    Case("socket-as-log", "partition", _in_partition(_replace(f"{SEG0}.log", _socket)), default=FINDING),
    Case("leader-epoch-checkpoint-loop", "partition",
         _in_partition(_replace("leader-epoch-checkpoint", lambda p: p.symlink_to(p.name))), default=FINDING),
    Case("checkpoint-fifo-in-log-dir", "logdir", _log_dir_with_fifo_checkpoint, default=FINDING),
    Case("log-symlink-to-regular", "partition", _in_partition(_link_to_regular), default=frozenset({0, 1})),
    Case("symlink-to-segment-named", "file", _named_link_to_regular, default=frozenset({0, 1})),
]


def _broker_log_dir(root: Path) -> Path:
    """A log dir a broker has used (meta.properties, a checkpoint) holding a good partition."""
    good_partition(root)
    (root / "meta.properties").write_text("version=1\nbroker.id=0\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\nt-0 0 9\n")
    return root


def _good_segment(root: Path) -> Path:
    return good_partition(root) / f"{SEG0}.log"


# outputs (issue 23, item 3): every writer's output aimed inside its own input is refused (exit 2), nothing written
CASES += [
    Case("outputs-inside-the-input-partition", "partition", good_partition, outputs_inside=True,
         expect={w: REFUSED_INPUT for w in WRITERS}),
    Case("outputs-inside-the-input-log-dir", "logdir", _broker_log_dir, outputs_inside=True,
         expect={w: REFUSED_INPUT for w in WRITERS}),
    Case("outputs-beside-the-named-segment", "file", _good_segment, outputs_inside=True,
         expect={w: REFUSED_INPUT for w in WRITERS}),
]

CASES += [
    # hmemory (memory per record and per mapped page): an 8 GiB preallocated segment, sparse; record-count bombs
    # whose codec down-conversion keeps (the compiled run and fetch-sim's lazy conversion take them), and a v1
    # wrapper bomb (relative inner offsets; upconvert, and downconvert to v0)
    Case("preallocated-8gib-segment", "partition", _sparse(f"{SEG0}.log", 8 << 30, batch(0)), slow=True,
         default=frozenset({0, 1}), mapped_bound=True),
    Case("gzip-v2-record-count-bomb", "partition", _v2_bomb(Codec.GZIP), default=frozenset({0, 1}), slow=True,
         expect={"dump": frozenset({0}), "dump-deep": frozenset({0})}),
    Case("v1-lz4-wrapper-bomb", "partition", _v1_wrapper_bomb, default=frozenset({0, 1}), slow=True,
         expect={"upconvert": frozenset({0}), "dump": frozenset({0}), "dump-deep": frozenset({0})}),
]


def _varint(value: int) -> bytes:
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# ------------------------------------------------------------------------------------------- hlaunder (items 5-7)
# Corrupt data the converters and canary must refuse (never rewrite with a fresh CRC), and data Kafka reads
# without an error that every reader must still report: each passes the batch CRC.

def _magic_3(root: Path) -> Path:
    odd = bytearray(batch(3))
    odd[16] = 3  # the magic is outside the CRC: Kafka's segment reader takes the batch for v2
    return partition(root, "magic3-0", {SEG0: batch(0) + bytes(odd) + batch(6)})


def _v2_undecodable(root: Path) -> Path:
    bad = bytearray(batch(3))
    bad[61] += 2  # the first record's length varint one too large; the CRC resealed over the damage
    return partition(root, "undec-0", {SEG0: batch(0) + bytes(reseal(bad)) + batch(6)})


def _backwards(root: Path) -> Path:
    return partition(root, "back-0", {SEG0: batch(0, n=5) + batch(3, n=2) + batch(5)})


def _negative_base(root: Path) -> Path:
    data = bytearray(batch(0))
    struct.pack_into(">q", data, 0, -5000)  # the base offset is outside the CRC
    return partition(root, "neg-base-0", {SEG0: bytes(data)})


def _v0_lz4_flip(root: Path) -> Path:
    inner = bytearray(legacy.build_entries([(3 + i, -1, b"k", b"value-%d" % i) for i in range(4)], magic=0))
    size = 12 + struct.unpack_from(">i", inner, 8)[0]
    inner[size - 2] ^= 0x01  # the first inner message's value
    return partition(root, "lz4flip-0", {SEG0: batch(0) + legacy_wrapper(0, Codec.LZ4, bytes(inner), 6) + batch(7)})


_LAUNDER = frozenset({"dump-deep", "downconvert", "upconvert", "canary-run"})

CASES += [
    Case("magic-3-batch", "partition", _magic_3, default=frozenset({0, 1}),
         expect={c: FINDING for c in ("dump", "spark-scan", *_LAUNDER)}),
    Case("v2-records-undecodable-resealed", "partition", _v2_undecodable, default=frozenset({0, 1}),
         expect={c: FINDING for c in ("spark-scan", *_LAUNDER)}),
    Case("batch-offsets-go-backwards", "partition", _backwards, default=frozenset({0, 1}),
         expect={c: FINDING for c in ("dump", *_LAUNDER)}),
    Case("negative-base-offsets", "partition", _negative_base, default=frozenset({0, 1}),
         expect={"fetch-sim": FINDING, "dump": FINDING}),
    Case("v0-lz4-inner-crc-flip", "partition", _v0_lz4_flip, default=frozenset({0, 1}),
         expect={c: FINDING for c in _LAUNDER}),
]
