"""The old consumer's view of a partition's bytes: the compiled walk (``_speedups.consumer_walk``) against the
pure-Python loop it stands in for (``ConsumerView`` with the extension off, the oracle).

Every magic 0/1 x codec, records with and without keys and values, the fetch offset before, inside and past the
records, the bytes fed whole, a byte at a time and in uneven pieces, mixed with v2 batches, duplicated entries and
the overflow tail the send appends; then damaged inputs: flipped bytes, lying sizes, key and value lengths and
inner messages that only the deeper checks catch (the CRCs recomputed over the damage). The two paths must
report the same ConsumerResult, error messages included, and the compiled walk must actually take the valid
entries (a walk that always deferred would pass the equality trivially).
"""

from __future__ import annotations

import dataclasses
import importlib
import random
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest

from kafkatool.fetch import consumer_view
from kafkatool.fetch.consumer_view import ConsumerView
from kafkatool.record.batch import Header, Record, TimestampType
from kafkatool.record.codecs import Codec, compress, crc32
from kafkatool.record.legacy_records import build_entries, compute_attributes, encode_entry, encode_message
from tests.support.segments import T0, v2

SP: ModuleType | None
try:
    SP = importlib.import_module("kafkatool._speedups")
    SP.configure(Record, Header)
except ImportError:  # test_speedups.test_extension_is_built reports it; the tests here fail on it
    SP = None

CODECS = (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4)
OVERFLOW = b"\xff" * 8 + struct.pack(">i", 61) + bytes(18)  # the send's overflow batch after a cut (spec §5.3)


class _Spy:
    """``_speedups`` with ``consumer_walk``'s progress recorded."""

    def __init__(self, sp: ModuleType) -> None:
        self.sp = sp
        self.taken = 0

    def consumer_walk(self, *args: Any) -> Any:
        w = self.sp.consumer_walk(*args)
        if w is not None:
            self.taken += w.batches
        return w


@contextmanager
def compiled(on: bool) -> Iterator[_Spy | None]:
    if SP is None:
        pytest.fail("kafkatool._speedups is not built: `pip install -e .` builds it")
    names = vars(consumer_view)
    saved = names["_C"]
    spy = _Spy(SP) if on else None
    names["_C"] = spy
    try:
        yield spy
    finally:
        names["_C"] = saved


def view(data: bytes, fetch_offset: int, pieces: list[int], *, total: int | None = None,
         version: int = 3) -> dict[str, Any]:
    v = ConsumerView(len(data) if total is None else total, fetch_offset, version)
    p = 0
    for n in pieces:
        v.feed(data[p:p + n])
        p += n
    if p < len(data):
        v.feed(data[p:])
    return dataclasses.asdict(v.finish())


def both(data: bytes, fetch_offset: int, pieces: list[int], **kw: Any) -> tuple[dict[str, Any], int]:
    with compiled(False):
        expected = view(data, fetch_offset, pieces, **kw)
    with compiled(True) as spy:
        got = view(data, fetch_offset, pieces, **kw)
    assert got == expected
    assert spy is not None
    return got, spy.taken


def records(first: int, n: int, rng: random.Random) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out = []
    for i in range(n):
        key = None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 8))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 40))
        out.append((first + i, T0 + i, key, value))
    return out


def message_set(magic: int, codec: Codec, rng: random.Random, *, first: int = 100, entries: int = 6,
                lat: bool = False) -> bytes:
    """``entries`` entries from ``first``: uncompressed messages, or wrappers of a few records each."""
    out, off = [], first
    for _ in range(entries):
        n = 1 if codec == Codec.NONE else rng.randrange(1, 5)
        kw: dict[str, Any] = {}
        if lat and magic == 1:
            kw = {"timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": T0 + 5}
        out.append(build_entries(records(off, n, rng), magic=magic, codec=codec, **kw))
        off += n
    return b"".join(out)


def pieces_of(n: int, how: str, rng: random.Random) -> list[int]:
    if how == "whole":
        return [n]
    if how == "bytes":
        return [1] * n
    out = []
    while n > 0:
        k = min(n, rng.randrange(1, 97))
        out.append(k)
        n -= k
    return out


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("how", ["whole", "bytes", "uneven"])
def test_compiled_walk_equals_the_python_view(magic: int, codec: Codec, how: str) -> None:
    rng = random.Random(f"{magic}-{codec}-{how}")
    data = message_set(magic, codec, rng, lat=True) + message_set(magic, codec, rng, first=120)
    for fetch_offset in (0, 100, 102, 121, 10_000):
        got, taken = both(data, fetch_offset, pieces_of(len(data), how, rng))
        assert got["outcome"] in ("records", "no-progress")
        assert got["complete_bytes"] == len(data)
        assert taken == got["complete_batches"]  # every valid entry went through the compiled walk
    # the send's tail: a cut entry, then the overflow batch; the response cut short (disconnected)
    cut = data + data[:len(data) // 3]
    both(cut, 101, pieces_of(len(cut), how, rng), total=len(cut))
    both(data + OVERFLOW, 0, pieces_of(len(data) + len(OVERFLOW), how, rng))
    both(data, 0, pieces_of(len(data) - 7, how, rng), total=len(data) + 50)
    both(data[:20], 0, [20], version=2)  # no complete entry: RecordTooLargeException


@pytest.mark.parametrize("magic", [0, 1])
def test_duplicates_mixed_formats_and_offsets(magic: int) -> None:
    rng = random.Random(magic)
    first = message_set(magic, Codec.LZ4, rng, entries=2)
    plain = message_set(magic, Codec.NONE, rng, first=110, entries=4)
    mixed = first + first + plain + v2(200, 3) + message_set(magic, Codec.GZIP, rng, first=300) + v2(400, 2) + plain
    for fetch_offset in (0, 101, 111, 301, 401):
        got, taken = both(mixed, fetch_offset, [len(mixed)])
        assert got["duplicate_offsets"] > 0 and taken > 0
    # a v1 wrapper at offset 0 (librdkafka) and one whose inner offsets are absolute past the wrapper's
    inner = build_entries(records(0, 3, rng), magic=1)
    for wrapper_offset in (0, 1, 2, 50):
        w = encode_entry(wrapper_offset, encode_message(1, compute_attributes(1, Codec.GZIP, TimestampType.CREATE_TIME),
                                                         T0, None, compress(Codec.GZIP, inner, magic=1)))
        both(w + plain, 0, [len(w) + len(plain)])
    # offsets at the ends of int64: C defers where Python's ints would pass them
    for off in (2**63 - 1, -(2**63), -1):
        edge = build_entries([(off, T0, None, b"x")], magic=magic)
        both(edge + edge + plain, 0, [2 * len(edge) + len(plain)])


def _wrapper(magic: int, codec: int, inner: bytes, offset: int, rng: random.Random) -> bytes:
    value = compress(codec, inner, magic=magic) if 1 <= codec <= 3 else rng.randbytes(len(inner) // 3)
    return encode_entry(offset, encode_message(magic, codec, T0, None, value))


def _fix_crcs(data: bytearray) -> None:
    """Recompute each entry's CRC-32 over its (damaged) message, so that the damage reaches the deeper checks."""
    p = 0
    while len(data) - p >= 17:
        size = struct.unpack_from(">i", data, p + 8)[0]
        if size < 14 or p + 12 + size > len(data) or data[p + 16] > 1:
            return
        struct.pack_into(">I", data, p + 12, crc32(bytes(data[p + 16:p + 12 + size])))
        p += 12 + size


def damaged(rng: random.Random) -> bytes:
    magic = rng.choice((0, 1))
    codec = rng.choice(CODECS)
    base = bytearray(message_set(magic, codec, rng, entries=rng.randrange(1, 5)))
    kind = rng.randrange(6)
    if kind == 0:  # flipped bytes, CRCs left as they are
        for _ in range(rng.randrange(1, 4)):
            base[rng.randrange(len(base))] ^= 1 << rng.randrange(8)
    elif kind == 1:  # flipped bytes behind fixed CRCs: key/value lengths, attributes, magic
        for _ in range(rng.randrange(1, 3)):
            base[rng.randrange(len(base))] = rng.randrange(256)
        _fix_crcs(base)
    elif kind == 2:  # a lying size field
        struct.pack_into(">i", base, 8, rng.choice((0, 13, 14, 15, 40, len(base), 2**31 - 1, -1)))
    elif kind == 3:  # a lying key or value length (magic 1 keys at 26, magic 0 at 18), CRC fixed
        at = rng.choice((18, 26, 22, 30))
        if at + 4 <= len(base):
            struct.pack_into(">i", base, at, rng.choice((-2, -1, 0, 3, 1000, 2**31 - 1)))
        _fix_crcs(base)
    elif kind == 4:  # a wrapper over a damaged inner set (or of an unknown codec, zstd, a null value)
        inner = bytearray(build_entries(records(0, rng.randrange(1, 4), rng), magic=magic))
        if rng.random() < 0.7:
            inner[rng.randrange(len(inner))] = rng.randrange(256)
        if rng.random() < 0.3:
            inner = inner[:rng.randrange(len(inner) + 1)]
        codec_id = rng.choice((1, 2, 3, 1, 2, 3, 4, 5, 7))
        w = _wrapper(magic, codec_id, bytes(inner), rng.choice((0, 2, 1, 100)), rng)
        if rng.random() < 0.1:
            w = encode_entry(7, encode_message(magic, codec_id, T0, None, None))
        base = bytearray(bytes(base) + w + bytes(base))
        return bytes(base)
    else:  # a compressed value that does not decompress
        wb = bytearray(_wrapper(magic, rng.choice((1, 2, 3)), build_entries(records(0, 3, rng), magic=magic), 9, rng))
        wb[rng.randrange(30, len(wb))] ^= 0x40
        _fix_crcs(wb)
        base = bytearray(bytes(base) + bytes(wb))
    return bytes(base)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_inputs_give_the_same_result_and_error(seed: int) -> None:
    rng = random.Random(seed)
    errors = 0
    for _ in range(60):
        data = damaged(rng)
        got, _ = both(data, rng.choice((0, 1, 101, 103)), pieces_of(len(data), rng.choice(("whole", "uneven")), rng))
        errors += got["error"] is not None
    assert errors > 0  # the damage reached the checks


def test_the_walk_defers_and_never_raises_on_odd_arguments() -> None:
    if SP is None:
        pytest.fail("kafkatool._speedups is not built")
    data = bytearray(message_set(1, Codec.NONE, random.Random(1)))
    fns, lim = consumer_view.WALK_CODECS, 2**20
    assert SP.consumer_walk(data, len(data) + 1, None, 0, fns, lim) is None  # a limit past the buffer
    assert SP.consumer_walk(data, -1, None, 0, fns, lim) is None
    assert SP.consumer_walk(data, len(data), "x", 0, fns, lim) is None
    assert SP.consumer_walk(data, len(data), None, 2**70, fns, lim) is None
    assert SP.consumer_walk(data, len(data), None, 0, fns[:4], lim) is None
    assert SP.consumer_walk(object(), 0, None, 0, fns, lim) is None
    w = SP.consumer_walk(data, len(data), None, 0, fns, lim)
    assert w is not None and w.position == len(data) and w.batches == 6 and w.records_returned == 6
    assert (w.first_returned_offset, w.last_returned_offset, w.max_seen, w.next_fetch_offset) == (100, 105, 105, 106)
    w = SP.consumer_walk(data, len(data) - 1, 200, 0, fns, lim)  # the last entry short; everything a duplicate
    assert w is not None and w.batches == 5 and w.duplicate_offsets == 5 and w.first_returned_offset is None

    def fails(codec: int, value: memoryview) -> bytes:
        raise KeyboardInterrupt

    wrapped = bytearray(message_set(1, Codec.GZIP, random.Random(2)))
    with pytest.raises(KeyboardInterrupt):  # never swallowed
        SP.consumer_walk(wrapped, len(wrapped), None, 0, (fails, fails, *fns[2:]), lim)
    # past the memory budget's limit the single-block paths defer (and the Python path raises its error)
    for codec in (Codec.SNAPPY, Codec.LZ4):
        big = bytearray(message_set(1, codec, random.Random(3)))
        w = SP.consumer_walk(big, len(big), None, 0, fns, 10)
        assert w is not None and w.batches == 0
        assert SP.consumer_walk(big, len(big), None, 0, fns, lim).batches == 6


def _converted(magic: int, codec: Codec, fetch_offset: int) -> tuple[bytes, list[tuple[int, bytes]]]:
    """v2 batches of ``codec`` (and uncompressed ones between them) down-converted as the send does, with the inner
    message set of every wrapper the conversion built."""
    from kafkatool.record.default_records import DefaultRecordBatch
    from kafkatool.record.down_convert import down_convert

    raw = b"".join(v2(first, 5, codec=c, value=30 + first % 7) for first, c in
                   ((0, codec), (5, codec), (10, Codec.NONE), (15, codec), (20, codec)))
    batches, p = [], 0
    while p < len(raw):
        b = DefaultRecordBatch.at(raw, p, p)
        batches.append(b)
        p += b.size
    out = down_convert(batches, magic, fetch_offset, keep_inners=True)
    assert out.inners is not None
    return out.data, out.inners


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4], ids=lambda c: c.name.lower())
@pytest.mark.parametrize("how", ["whole", "uneven"])
def test_wrappers_the_conversion_built_are_read_from_what_it_compressed(magic: int, codec: Codec, how: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch-sim's view takes a converted wrapper's records from the inner message set the conversion compressed
    (no second decompression) and reaches exactly the result of decompressing it, in C and in the Python
    reference."""
    rng = random.Random(f"inners-{magic}-{codec}-{how}")
    calls: list[int] = []

    def counted(fn: Any) -> Any:
        return lambda *a: calls.append(1) or fn(*a)

    monkeypatch.setattr(consumer_view, "WALK_CODECS", tuple(map(counted, consumer_view.WALK_CODECS)))
    for fetch_offset in (0, 7, 16):
        data, inners = _converted(magic, codec, fetch_offset)
        assert len(inners) == 4  # one wrapper per compressed source batch
        cut = data + data[:len(data) // 2]  # and a cut wrapper at the end, as the send's tail
        inners_cut = inners + [(len(data) + at, inner) for at, inner in inners if at < len(data) // 2]
        for payload, total, known in ((data, len(data), inners), (cut, len(cut), inners_cut)):
            pieces = pieces_of(len(payload), how, rng)
            with compiled(False):
                expected = view(payload, fetch_offset, pieces, total=total)
            calls.clear()
            with compiled(True):
                v = ConsumerView(total, fetch_offset, 3)
                p = 0
                for n in pieces:
                    # the positions of the wrappers that start in this piece, relative to it
                    v.feed(payload[p:p + n], [(at - p, inner) for at, inner in known if p <= at < p + n])
                    p += n
                got = dataclasses.asdict(v.finish())
            assert got == expected
            assert calls == [], "a converted wrapper was decompressed again"
            if payload is data and fetch_offset == 0:  # four wrappers, the uncompressed batch's five messages
                assert (got["records_sent"], got["complete_batches"], got["tail"]) == (25, 9, "none")
            elif payload is cut:
                assert got["duplicate_offsets"] > 0


def test_kept_inner_message_sets_stay_within_one_decompressions_budget() -> None:
    """A chunk of many compressible batches keeps the inner message sets only up to the run's decompression limit
    (what the view would hold to decompress one wrapper); the view decompresses the rest, with the same result."""
    from kafkatool.record.default_records import DefaultRecordBatch
    from kafkatool.record.down_convert import down_convert

    raw = b"".join(v2(first, 5, codec=Codec.GZIP, value=200) for first in range(0, 50, 5))
    batches, p = [], 0
    while p < len(raw):
        b = DefaultRecordBatch.at(raw, p, p)
        batches.append(b)
        p += b.size
    whole = down_convert(batches, 1, 0, keep_inners=True)
    assert whole.inners is not None and len(whole.inners) == 10
    one = len(whole.inners[0][1])
    capped = down_convert(batches, 1, 0, keep_inners=True, limit=3 * one)
    assert capped.data == whole.data and capped.inners == whole.inners[:3]
    with compiled(False):
        expected = view(whole.data, 0, [len(whole.data)])
    with compiled(True):
        v = ConsumerView(len(capped.data), 0, 3)
        v.feed(capped.data, capped.inners)
        assert dataclasses.asdict(v.finish()) == expected
