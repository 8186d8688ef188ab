"""The compiled twins (kafkatool/_speedups.c) against their pure-Python references.

Contract (kafkatool/_accel.py): a compiled function returns exactly what its Python twin returns, or None
wherever the Python function must run (then that one raises its own error at its own position). So for
every input, hostile ones first: a non-None compiled result equals the Python result (values and types),
None only where C cannot be exact, and the library entry points give identical results and identical
errors with and without the extension. The inputs: hypothesis records areas built field by field (over-long
and out-of-range varints, negative and lying lengths, header counts, damage), random damaged segments, the
hostile corpus (tests/hostile/) and segments written by Kafka's own code (tests/interop run under both
paths with KAFKATOOL_PURE=1 and without).

This file runs the extension directly even under ``KAFKATOOL_PURE=1``, and fails (never skips) when it is
not built: the normal suite must exercise it.
"""

from __future__ import annotations

import importlib
import os
import random
import zlib
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatool import _accel
from kafkatool.errors import KafkaToolError
from kafkatool.record import default_records as v2
from kafkatool.record import down_convert as dc
from kafkatool.record import legacy_records as lr
from kafkatool.record.batch import Header, Record
from kafkatool.record.codecs import Codec
from kafkatool.record.file_records import verify_segment
from tests.record.test_conversion import v2_batches
from tests.record.test_fast_paths import as_file, err, segment
from tests.support.paths import HOSTILE
from tests.support.speedups import dispatching_to

try:
    SP: ModuleType | None = importlib.import_module("kafkatool._speedups")
    SP.configure(Record, Header)
    _IMPORT_ERROR: BaseException | None = None
except ImportError as e:  # the failure is reported by test_extension_is_built and the fixture
    SP = None
    _IMPORT_ERROR = e

TS = 1_700_000_000_000
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Every module that dispatches to the extension through ``_C``.
DISPATCHING = ("kafkatool.record.default_records", "kafkatool.record.down_convert", "kafkatool.record.file_records",
               "kafkatool.record.legacy_records", "kafkatool.record.estimator",
               "kafkatool.log.recovery.fast", "kafkatool.dump.engine", "kafkatool.convert.engine",
               "kafkatool.record.validate")


@pytest.fixture
def sp() -> ModuleType:
    if SP is None:
        pytest.fail(f"kafkatool._speedups is not built ({_IMPORT_ERROR}): run `pip install -e .`")
    return SP


def test_extension_is_built() -> None:
    assert SP is not None, (f"kafkatool._speedups is not built ({_IMPORT_ERROR}): `pip install -e .` builds it "
                            "(setup.py); the suite must run the compiled paths")
    if _accel.pure_requested():
        assert _accel.speedups is None  # KAFKATOOL_PURE=1: every library path runs in Python
    else:
        assert _accel.speedups is SP
        for name in DISPATCHING:
            assert importlib.import_module(name)._C is SP, name


def compiled(on: bool) -> AbstractContextManager[None]:
    """Run the library with (``on``) or without the extension, whatever KAFKATOOL_PURE says."""
    return dispatching_to(SP if on else None, DISPATCHING)


def outcome(fn: Any, *args: Any, **kw: Any) -> Any:
    try:
        return ("ok", fn(*args, **kw))
    except KafkaToolError as e:
        return ("error", err(e))
    except Exception as e:  # struct.error and the like: the same exception either way
        return ("exception", type(e), str(e))


def deep_types(x: Any) -> Any:
    """The value with the exact type of every part (a C result must not merely compare equal)."""
    if isinstance(x, tuple | list):
        return (type(x), [deep_types(i) for i in x])
    return (type(x), x)


def named(result: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """``fields`` of a result read by name, each with the exact type of every part: a compiled result and its
    Python twin are compared field by field, as the callers read them."""
    return {f: deep_types(getattr(result, f)) for f in fields}


REFRAMED = ("data", "records", "filtered", "with_headers", "first_offset", "last_offset", "max_timestamp")


# ---------------------------------------------------------------------------------------------- layouts

def test_compiled_layouts_are_the_python_layouts(sp: ModuleType) -> None:
    """Every header offset and size the C code is compiled with (offsetof/sizeof of its packed structs) equals the
    one kafkatool/record/ derives with struct.calcsize, under the same name."""
    assert len(sp.LAYOUT) >= 30
    for path, value in sp.LAYOUT.items():
        parts = path.split(".")
        for i in range(len(parts), 0, -1):  # the longest prefix that is a module, then attributes
            try:
                obj: Any = importlib.import_module("kafkatool." + ".".join(parts[:i]))
            except ImportError:
                continue
            for attr in parts[i:]:
                obj = getattr(obj, attr)
            break
        assert obj == value, path


def test_results_have_named_fields(sp: ModuleType) -> None:
    """The walks return struct sequences whose fields the callers read by name; the reframe's are the Python
    twin's ``Reframed`` fields of the same names."""
    from dataclasses import fields

    assert sp.Reframed.__match_args__ == REFRAMED
    assert set(REFRAMED) <= {f.name for f in fields(dc.Reframed)}
    assert sp.VerifyWalk.__match_args__ == ("position", "batches", "records", "unknown_counts", "failed_at")
    assert sp.HeadersWalk.__match_args__ == ("position", "headers", "size")
    assert sp.DumpWalk.n_fields == 11 and sp.DownconvertRun.n_fields == 16
    data = v2.build_batch([(5, TS, b"k", b"v", ())])
    r = sp.verify_walk(data, 0, len(data), len(data), v2.crc32c, zlib.crc32)
    assert type(r) is sp.VerifyWalk and (r.position, r.batches, r.records, r.failed_at) == (len(data), 1, 1, -1)


# ---------------------------------------------------------------------------------------------- CRC-32

# 256 and up: AVX-512's four-register fold where the CPU has it (CRC32_VCLMUL), its one-register 64-byte steps and
# the 16-byte lanes after them; 64..255 the PCLMULQDQ fold; below 64 and every tail, the tables.
@pytest.mark.parametrize("n", [0, 1, 7, 15, 16, 17, 63, 64, 65, 79, 127, 128, 255, 256, 257, 319, 320, 335, 511,
                               512, 513, 1000, 1060, 65536 + 3])
def test_crc32_is_zlibs(sp: ModuleType, n: int) -> None:
    data = bytes((i * 131 + n) & 0xFF for i in range(n))
    for start in (0, 1, 0xFFFFFFFF, 0x12345678):
        assert sp.crc32(data, start) == zlib.crc32(data, start)


@given(data=st.binary(max_size=1500), start=st.integers(0, 0xFFFFFFFF))
def test_crc32_random(data: bytes, start: int) -> None:
    assert SP is not None
    assert SP.crc32(data, start) == zlib.crc32(data, start)
    assert SP.crc32(memoryview(data)[1:]) == zlib.crc32(data[1:])


# ---------------------------------------------------------------------------------------------- records areas

def varint_bytes(u: int, pad: int = 0) -> bytes:
    """The unsigned ``u`` as a base-128 varint, with ``pad`` redundant groups (over-long encodings)."""
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if not u:
            break
        out.append(b | 0x80)
    if pad:  # the last group gets a continuation bit, then groups of zero bits end with 0x00
        out += bytes([b | 0x80]) + b"\x80" * (pad - 1) + b"\x00"
    else:
        out.append(b)
    return bytes(out)


def zz(v: int) -> int:
    return (v << 1) ^ (v >> 127) if v < 0 else v << 1


# The strategies the composites below draw from, made once: a strategy built inside a draw is a new object each
# time, which Hypothesis validates anew (most of these tests' time went to that, not to the code under test).
_CHOICE10 = st.integers(0, 9)
_OVERLONG = st.integers(1, 6)
_WIDE_BITS = {True: st.integers(0, 2 ** 70), False: st.integers(0, 2 ** 36)}
_SMALL = st.integers(-3, 300)
_TIMESTAMP = st.one_of(_SMALL, st.integers(-2 ** 63, 2 ** 63 - 1))
_OFFSET_DELTA = st.one_of(st.integers(0, 300), st.integers(-2 ** 31, 2 ** 31 - 1))
_BYTE = st.integers(0, 255)
_KEY_OR_VALUE = st.one_of(st.none(), st.binary(max_size=12), st.binary(min_size=60, max_size=200))
_LENGTH_LIE = st.sampled_from([0, 0, 0, 0, 0, 0, -1, 1, -2, -5])
_HEADERS = st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=6))), max_size=3)
_COUNT_LIE = st.sampled_from([0, 0, 0, 0, 1, -1, -3])
_UTF8_MOSTLY = st.integers(0, 5)
_RAW_HEADER_KEY = st.binary(max_size=4)
_HEADER_KEY_LIE = st.sampled_from([0, 0, 0, 0, 1, -1, -2])
_HEADER_VALUE_LIE = st.sampled_from([0, 0, 0, 0, 1, -2])
_RECORD_LENGTH_LIE = st.sampled_from([0, 0, 0, 0, 0, 0, 1, -1, 3])


def draw_varint(draw: st.DrawFn, value: int, wide: bool = False) -> bytes:
    """``value`` zig-zag encoded: mostly canonical, sometimes over-long or replaced by raw wide bits."""
    choice = draw(_CHOICE10)
    if choice == 0:
        return varint_bytes(zz(value), draw(_OVERLONG))  # 2..11 bytes: past the limits too
    if choice == 1:
        return varint_bytes(draw(_WIDE_BITS[wide]))  # bits above 32/64: masked
    return varint_bytes(zz(value))


@st.composite
def raw_record(draw: st.DrawFn) -> bytes:
    ts = draw(_TIMESTAMP)
    od = draw(_OFFSET_DELTA)
    body = [bytes([draw(_BYTE)]), draw_varint(draw, ts, wide=True), draw_varint(draw, od)]
    for _ in range(2):  # key, value
        data = draw(_KEY_OR_VALUE)
        n = -1 if data is None else len(data)
        n += draw(_LENGTH_LIE)
        body.append(draw_varint(draw, n) + (data or b""))
    headers = draw(_HEADERS)
    parts = [draw_varint(draw, len(headers) + draw(_COUNT_LIE))]
    for hk, hv in headers:
        kb = hk.encode("utf-8") if draw(_UTF8_MOSTLY) else draw(_RAW_HEADER_KEY)  # invalid UTF-8 too
        parts.append(draw_varint(draw, len(kb) + draw(_HEADER_KEY_LIE)) + kb)
        vn = -1 if hv is None else len(hv)
        vn += draw(_HEADER_VALUE_LIE)
        parts.append(draw_varint(draw, vn) + (hv or b""))
    body.append(b"".join(parts))
    b = b"".join(body)
    length = len(b) + draw(_RECORD_LENGTH_LIE)
    return draw_varint(draw, length) + b


_RECORDS = st.lists(raw_record(), max_size=5)
_FLIPS = st.sampled_from([0, 0, 0, 1, 2])
_CUT_ONE_IN_5 = st.integers(0, 4)
_RECORD_COUNT_LIE = st.sampled_from([0, 0, 0, 0, -1, 1])


@st.composite
def records_area(draw: st.DrawFn) -> tuple[bytes, int]:
    recs = draw(_RECORDS)
    data = bytearray(b"".join(recs))
    for _ in range(draw(_FLIPS)):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(_BYTE)
    if data and draw(_CUT_ONE_IN_5) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    return bytes(data), max(0, len(recs) + draw(_RECORD_COUNT_LIE))


_CLEAN_COUNT = st.integers(0, 6)
_OFFSET_GAP = st.integers(0, 3)
_TIMESTAMP_DELTA = st.integers(-20000, 20000)
_CLEAN_KEY = st.one_of(st.none(), st.binary(max_size=30))
_CLEAN_VALUE = st.one_of(st.none(), st.binary(max_size=300))
_CLEAN_HEADERS = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))), max_size=2)


@st.composite
def clean_area(draw: st.DrawFn) -> tuple[bytes, int]:
    """Records as the encoder writes them: every compiled path must take them (never defer)."""
    recs = []
    for i in range(draw(_CLEAN_COUNT)):
        recs.append(v2.encode_record(i + draw(_OFFSET_GAP), draw(_TIMESTAMP_DELTA), draw(_CLEAN_KEY),
                                     draw(_CLEAN_VALUE), draw(_CLEAN_HEADERS)))
    return b"".join(recs), len(recs)


BASES = st.sampled_from([0, 1000, 2 ** 63 - 2, -(2 ** 63), -5])
TSS = st.sampled_from([TS, 0, 2 ** 63 - 10, -(2 ** 63) + 5])
LATS = st.sampled_from([None, None, TS + 9, -1, -(2 ** 63)])
SEQS = st.sampled_from([-1, 0, 5, 0x7FFFFFFF - 1, 0x7FFFFFFF, -(2 ** 31)])


@SETTINGS
@given(area=records_area(), cut=st.integers(0, 3), base=BASES, base_ts=TSS, lat=LATS, seq=SEQS)
def test_parse_records_equals_python(area: tuple[bytes, int], cut: int, base: int, base_ts: int, lat: int | None,
                                     seq: int) -> None:
    assert SP is not None
    data, count = area
    end = max(0, len(data) - cut) if cut < 3 else len(data)  # a prefix of the buffer too
    args = (data, 0, end, count, base, base_ts, lat, seq)
    want = outcome(v2.parse_records_py, *args)
    got = SP.parse_records(*args)
    if got is not None:
        assert want[0] == "ok" and deep_types(got) == deep_types(want[1])
        assert all(type(r) is Record and all(type(h) is Header for h in r.headers) for r in got)
    with compiled(True):
        assert outcome(v2.parse_records, *args) == want


@SETTINGS
@given(area=records_area(), take=st.integers(0, 6), base=BASES, base_ts=TSS, lat=LATS, seq=SEQS)
def test_parse_records_chunk_equals_python(area: tuple[bytes, int], take: int, base: int, base_ts: int,
                                           lat: int | None, seq: int) -> None:
    """A chunk of a batch's records (a huge batch is read a chunk at a time): the first ``take`` records and the
    position after them, whatever follows."""
    assert SP is not None
    data, _ = area
    args = (data, 0, len(data), take, base, base_ts, lat, seq)
    want = outcome(v2.parse_records_chunk_py, *args)
    got = SP.parse_records_chunk(*args)
    if got is not None:
        assert want[0] == "ok" and deep_types(got) == deep_types(want[1])
    with compiled(True):
        assert outcome(v2.parse_records_chunk, *args) == want


@SETTINGS
@given(area=clean_area(), lat=st.sampled_from([None, TS + 9]), seq=SEQS, offset=st.integers(0, 40))
def test_parse_records_takes_every_valid_area(area: tuple[bytes, int], lat: int | None, seq: int,
                                             offset: int) -> None:
    assert SP is not None
    data, count = area
    buf = b"\x07" * offset + data + b"\x09" * 3  # records anywhere inside a larger buffer
    args = (buf, offset, offset + len(data), count, 1000, TS, lat, seq)
    got = SP.parse_records(*args)
    assert got is not None
    assert deep_types(got) == deep_types(v2.parse_records_py(*args))
    chunk = SP.parse_records_chunk(buf, offset, offset + len(data), count, 1000, TS, lat, seq)
    assert chunk is not None and deep_types(chunk) == deep_types((got, offset + len(data)))
    validated = SP.validate_records(buf, offset, offset + len(data), count, 1000)
    assert validated == ((got[0].offset, got[-1].offset,
                          [r.offset for r in got] == list(range(got[0].offset, got[0].offset + len(got))))
                         if got else (None, None, True))


@SETTINGS
@given(area=records_area(), base=BASES)
def test_validate_records_agrees_with_parse(area: tuple[bytes, int], base: int) -> None:
    assert SP is not None
    data, count = area
    want = outcome(v2.parse_records_py, data, 0, len(data), count, base, TS, None, -1)
    got = SP.validate_records(data, 0, len(data), count, base)
    if got is not None:
        assert want[0] == "ok"
        offs = [r.offset for r in want[1]]
        assert got == ((offs[0], offs[-1], offs == list(range(offs[0], offs[0] + len(offs)))) if offs
                       else (None, None, True))
    elif want[0] == "ok":  # C may only decline where an offset leaves int64
        assert any(not -(2 ** 63) <= r.offset < 2 ** 63 for r in want[1])


def test_unexpected_arguments_defer(sp: ModuleType) -> None:
    data, count = v2.encode_record(0, 0, b"k", b"v"), 1
    assert sp.parse_records(bytearray(data), 0, len(data), count, 0, TS, None, -1) is None  # slices: not bytes
    assert sp.parse_records(data, 0, len(data), count, 2 ** 70, TS, None, -1) is None
    assert sp.parse_records(data, -1, len(data), count, 0, TS, None, -1) is None
    assert sp.parse_records(data, 0, len(data) + 1, count, 0, TS, None, -1) is None
    assert sp.parse_records(data, 0, len(data), count, 0, TS, "x", -1) is None
    assert sp.reframe_v2_records(data, 1, 0, TS, None, 1, 300, None, False) is None  # attributes beyond "b"
    assert sp.parse_records(data, 0, len(data), count, 0, TS, None, -1) is not None


# ---------------------------------------------------------------------------------------------- down-conversion

@SETTINGS
@given(area=records_area(), base=BASES, base_ts=TSS, lat=LATS, to_magic=st.sampled_from([0, 1, 1, 3]),
       attributes=st.sampled_from([0, 8, 0x7F, -128, 200]), first=st.sampled_from([None, None, 0, 1005, 2 ** 62]),
       relative=st.booleans())
def test_reframe_equals_python(area: tuple[bytes, int], base: int, base_ts: int, lat: int | None, to_magic: int,
                               attributes: int, first: int | None, relative: bool) -> None:
    assert SP is not None
    data, count = area
    args = (data, count, base, base_ts, lat, to_magic, attributes, first)
    want = outcome(dc.reframe_v2_records_py, *args, relative=relative)
    got = SP.reframe_v2_records(*args, relative)
    if got is not None:
        assert want[0] == "ok"
        assert type(got) is SP.Reframed
        assert named(got, REFRAMED) == named(want[1], REFRAMED)
    with compiled(True):
        assert outcome(dc.reframe_v2_records, *args, relative=relative) == want


@SETTINGS
@given(magic=st.sampled_from([0, 1, 1, 2]), attributes=st.sampled_from([1, 2, 3, 9, 11, 0x7F, -128, 200]),
       ts=st.sampled_from([-1, -2, 0, TS, 2 ** 63 - 1, -(2 ** 63)]),
       last=st.sampled_from([0, 15, 2 ** 40, 2 ** 63 - 1, -1, 2 ** 63]), value=st.binary(max_size=300))
def test_legacy_wrapper_equals_python(magic: int, attributes: int, ts: int, last: int, value: bytes) -> None:
    assert SP is not None
    want = outcome(dc.wrapper_entry_py, magic, attributes, ts, last, value)
    got = SP.legacy_wrapper(magic, attributes, ts, last, value)
    if got is not None:
        assert want == ("ok", got) and type(got) is bytes
    else:  # C declines only what is not a valid v0/v1 wrapper of int64 fields
        assert (magic not in (0, 1) or not -128 <= attributes <= 127 or (magic == 1 and ts < -1)
                or not -(2 ** 63) <= last < 2 ** 63)
    if want[0] == "ok" and magic in (0, 1):  # the log entry encode_message/encode_entry write
        assert want[1] == lr.encode_entry(last, lr.encode_message(magic, attributes, ts if magic else -1, None,
                                                                  value))
    with compiled(True):
        assert outcome(dc.wrapper_entry, magic, attributes, ts, last, bytearray(value)) == want


# ---------------------------------------------------------------------------------------------- legacy inner messages

_FIRST_OFFSET = st.sampled_from([0, 5, 2 ** 62, 2 ** 63 - 7])
_INNER_COUNT = st.integers(1, 6)
_INNER_MAGIC = st.sampled_from([0, 1, 1, 1, 2, 0x7F])
_INNER_ATTRIBUTES = st.sampled_from([0, 0, 0, 8, 1, 3, 0x7F])
_INNER_TIMESTAMP = st.sampled_from([0, 1, 2, 3])  # TS + i, -1, -5, int64 max
_INNER_DATA = st.one_of(st.none(), st.binary(max_size=10))
_INNER_LENGTH_LIE = st.sampled_from([0, 0, 0, 0, 0, 1, -1, -3, 200])
_TRAILING = st.sampled_from([b"", b"", b"", b"xx"])
_INNER_SIZE_LIE = st.sampled_from([0, 0, 0, 0, 0, -1, 2])
_INNER_FLIPS = st.sampled_from([0, 0, 0, 1])


@st.composite
def inner_messages(draw: st.DrawFn) -> bytes:
    """A wrapper's decompressed inner message set: messages of magic 0/1 mostly, lying key and value lengths,
    compressed inner messages, other magics, sizes too small for a header, flipped bytes."""
    out = bytearray()
    offset = draw(_FIRST_OFFSET)
    for i in range(draw(_INNER_COUNT)):
        magic = draw(_INNER_MAGIC)
        attrs = draw(_INNER_ATTRIBUTES)
        ts = (TS + i, -1, -5, 2 ** 63 - 1)[draw(_INNER_TIMESTAMP)]
        body = bytearray([magic if magic < 2 else 1, attrs])
        if magic != 0:
            body += ts.to_bytes(8, "big", signed=True)
        for _ in range(2):
            data = draw(_INNER_DATA)
            n = (-1 if data is None else len(data)) + draw(_INNER_LENGTH_LIE)
            body += n.to_bytes(4, "big", signed=True) + (data or b"")
        body += draw(_TRAILING)  # bytes after the value: ignored
        if magic >= 2:
            body[0] = magic
        msg = zlib.crc32(bytes(body)).to_bytes(4, "big") + bytes(body)
        if draw(_CHOICE10) == 0:
            msg = msg[:draw(st.integers(0, len(msg)))]  # too short for its header
        size = len(msg) + draw(_INNER_SIZE_LIE)
        out += (offset + i).to_bytes(8, "big", signed=True) + size.to_bytes(4, "big", signed=True) + msg
    for _ in range(draw(_INNER_FLIPS)):
        out[draw(st.integers(0, len(out) - 1))] = draw(_BYTE)
    return bytes(out)


def _wrapper_batch(magic: int, inner: bytes, offset: int, lat: bool) -> Any:
    from kafkatool.record.file_records import iter_batches
    from tests.support.hostile_corpus import legacy_wrapper
    data = bytearray(legacy_wrapper(magic, Codec.GZIP, inner, offset))
    if lat and magic == 1:  # the wrapper's LogAppendTime bit: its timestamp stands for every inner message's
        data[lr.ENTRY_ATTRIBUTES_OFFSET] |= 8
        data[lr.ENTRY_CRC_OFFSET:lr.ENTRY_CRC_OFFSET + 4] = zlib.crc32(
            bytes(data[lr.ENTRY_CRC_OFFSET + 4:])).to_bytes(4, "big")
    return next(iter(iter_batches(bytes(data))))


@SETTINGS
@given(inner=inner_messages(), magic=st.sampled_from([0, 1]), offset=st.sampled_from([0, 9, 2 ** 62, 2 ** 63 - 1]),
       lat=st.booleans(), at=st.integers(0, 3), count=st.integers(0, 7))
def test_legacy_deep_records_equals_python(inner: bytes, magic: int, offset: int, lat: bool, at: int,
                                           count: int) -> None:
    """The compiled inner-message walk returns a prefix of what the Python walk returns (records, then the
    position after them), stopping only before a message the Python walk decodes another way or raises on; the
    wrapper's records are the same, errors included, with and without it."""
    assert SP is not None
    b = _wrapper_batch(magic, inner, offset, lat)
    base = 7 if magic == 1 else 0
    wrapper_lat = magic == 1 and lat
    got = SP.legacy_deep_records(inner, at, count, base, magic == 1, int(b.timestamp), wrapper_lat)
    if got is not None:
        recs, end = got
        assert len(recs) <= count
        if recs:
            want = outcome(b._deep_records_py, inner, base, at, len(recs))
            assert want[0] == "ok"
            assert deep_types(recs) == deep_types(want[1][0]) and end == want[1][1]
            assert all(type(r) is Record for r in recs)
    with compiled(False):
        want_all = outcome(lambda: list(b.records()))
    with compiled(True):
        assert deep_types(outcome(lambda: list(b.records()))) == deep_types(want_all)


def test_legacy_deep_records_takes_what_writers_write(sp: ModuleType) -> None:
    """Inner messages as encode_entries writes them are all taken in C (it never defers on clean data)."""
    recs = [(i, TS + i, None if i % 3 == 0 else b"k%d" % i, None if i % 4 == 0 else b"v" * i) for i in range(50)]
    for magic in (0, 1):
        inner, _ = lr.encode_entries_py(recs, magic=magic, attributes=0)
        got = sp.legacy_deep_records(inner, 0, 50, 0, False, TS, False)
        assert got is not None and len(got[0]) == 50 and got[1] == len(inner)
        assert [(r.offset, r.key, r.value, r.crc_valid) for r in got[0]] == [
            (o, k, v, True) for o, _, k, v in recs]


# ---------------------------------------------------------------------------------------------- encoders

RECORD_TUPLES = st.lists(st.tuples(
    st.one_of(st.integers(0, 40), st.sampled_from([2 ** 31, 2 ** 31 - 1, 2 ** 63 - 1, -3])),
    st.one_of(st.integers(-3, 3).map(lambda d: TS + d), st.sampled_from([-1, -2, 2 ** 63 - 1, -(2 ** 63), 2 ** 64])),
    st.one_of(st.none(), st.binary(max_size=20), st.just(bytearray(b"ba"))),
    st.one_of(st.none(), st.binary(max_size=200), st.sampled_from([b"x" * 8190, b"y" * 8300])),  # 2/3-byte varints
    st.sampled_from([(), (), (), [], (("h", b"v"),), (("h", None),)])), max_size=6)


@SETTINGS
@given(recs=RECORD_TUPLES, base=st.sampled_from([0, 1, 10, -(2 ** 63), 2 ** 63 - 1]),
       base_ts=st.sampled_from([TS, 0, -(2 ** 63), 2 ** 63 - 1]), sort=st.booleans())
def test_encode_records_equals_python(recs: list[Any], base: int, base_ts: int, sort: bool) -> None:
    """The compiled v2 records encoder writes the Python encoder's exact bytes, or defers (headers, deltas
    beyond Kafka's varints, non-bytes fields), and the library raises the same errors either way."""
    assert SP is not None
    if sort:
        recs = sorted(recs, key=lambda r: r[0])
    want = outcome(v2.encode_records_py, recs, base, base_ts)
    got = SP.encode_records(recs, base, base_ts)
    if got is not None:
        assert ("ok", got) == want and deep_types(got) == deep_types(want[1])
    else:
        assert want[0] != "ok" or base == -(2 ** 63) or any(  # its last offset before the first: base - 1
            r[4] or not isinstance(r[2], bytes | None) or r[0] - base > 2 ** 31 - 1
            or not -(2 ** 63) <= r[1] - base_ts < 2 ** 63 for r in recs)
    with compiled(True):
        assert outcome(v2.encode_records, recs, base, base_ts) == want


@SETTINGS
@given(recs=RECORD_TUPLES, magic=st.sampled_from([0, 1, 1, 2]), attributes=st.sampled_from([0, 8, 1]),
       timestamp=st.sampled_from([None, None, TS, -1, -7]), shift=st.sampled_from([0, 0, 3, -(2 ** 63)]))
def test_encode_entries_equals_python(recs: list[Any], magic: int, attributes: int, timestamp: int | None,
                                      shift: int) -> None:
    """The compiled legacy entries encoder writes the Python encoder's exact bytes, or defers."""
    assert SP is not None
    kw = {"magic": magic, "attributes": attributes, "timestamp": timestamp, "offset_shift": shift}
    want = outcome(lr.encode_entries_py, recs, **kw)
    got = SP.encode_entries(recs, magic, attributes, timestamp, shift)
    if got is not None:
        assert ("ok", got) == want and deep_types(got) == deep_types(want[1])
    with compiled(True):
        assert outcome(lr.encode_entries, recs, **kw) == want


def test_encoders_take_what_converters_build(sp: ModuleType) -> None:
    """Headerless records of bytes keys and values: both encoders take them all (never defer)."""
    recs = [(i + 5, TS + i, None if i % 2 else b"k", b"v" * (i * 300)) for i in range(40)]
    assert sp.encode_records([(*r, ()) for r in recs], 5, TS) is not None
    assert sp.encode_entries(recs, 1, 0, None, 5) is not None
    assert sp.encode_entries(recs, 0, 0, None, 0) is not None


# ---------------------------------------------------------------------------------------------- dump's JSON lines

JSON_BYTES = st.one_of(st.none(), st.binary(max_size=12), st.text(max_size=8).map(lambda t: t.encode("utf-8")),
                       st.sampled_from([b'a"b', b"a\\b", b"\x00\n\t\x7f", "\u2028\u00e9\U0001f600".encode(),
                                        b"\xff\xfe", b"\xed\xa0\x80", b"plain ascii value"]))


@SETTINGS
@given(recs=st.lists(st.tuples(JSON_BYTES, JSON_BYTES, st.sampled_from([(), (), (), (Header("h", b"v"),)]),
                               st.booleans()), max_size=6),
       magic=st.sampled_from([0, 1, 2, 2]), encoding=st.sampled_from(["utf8", "utf8", "hex", "base64"]),
       path=st.sampled_from(["/d/orders-3/00000000000000000000.log", "/d/\u00e9v\u00e9nements-0/0.log"]))
def test_json_record_lines_are_the_python_lines(recs: list[Any], magic: int, encoding: str, path: str) -> None:
    """dump's JSON record lines with the compiled renderer are the pure renderer's, character for character: keys
    and values of every kind (escapes, non-ASCII, invalid UTF-8), headers (left to Python), v2 and legacy fields."""
    import io

    from kafkatool.dump import render
    from kafkatool.dump.events import RecordsEvent
    from kafkatool.record.file_records import iter_batches
    assert SP is not None
    records = [Record(7 + i, TS + i, k, v, h if magic == 2 else (), 3 + i if magic == 2 else -1,
                      20 + i, None if magic == 2 else 0xDEADBEEF + i, None if magic == 2 else ok)
               for i, (k, v, h, ok) in enumerate(recs)]
    if magic == 2:
        data = v2.build_batch([(7, TS, None, b"x", ())])
    else:
        data = lr.build_entries([(7, TS, None, b"x")], magic=magic)
    batch = next(iter(iter_batches(data)))
    ev = RecordsEvent(path, batch, records)
    lines = []
    for on in (False, True):
        w = render.JsonWriter(io.StringIO(), encoding=encoding, decompress_limit=None)
        assert (w.compiled is None) == (encoding != "utf8" or _accel.speedups is None)
        w.compiled = SP if on and encoding == "utf8" else None  # the extension even under KAFKATOOL_PURE=1
        lines.append(w.record_lines(ev))
    assert lines[1] == lines[0]
    if encoding == "utf8" and records:  # the compiled renderer wrote the headerless ones
        got = SP.json_record_lines(records, "{", magic == 2, render.json_value_encoder("utf8"))
        assert got is not None and [g is None for g in got] == [bool(r.headers) for r in records]


# ---------------------------------------------------------------------------------------------- KIP-126 planning

@SETTINGS
@given(sizes=st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=30)),
                                st.one_of(st.none(), st.binary(max_size=3000)),
                                st.sampled_from([(), (), (), (("h", b"v"),)]),
                                st.sampled_from([1, 1, 1, 2, 2 ** 31])), min_size=1, max_size=30),
       magic=st.sampled_from([0, 1, 2, 2]), compressed=st.booleans(),
       limit=st.sampled_from([0, 100, 1000, 4000, 1 << 20]), ratio=st.sampled_from([1.0, 0.5, 0.05, 1.3]),
       i=st.integers(0, 3), records=st.integers(0, 3), unc=st.sampled_from([0, 50, 900]),
       last=st.sampled_from([None, 3, 2 ** 40]), base_ts=st.sampled_from([None, TS, -(2 ** 63)]))
def test_plan_step_equals_python(sizes: list[Any], magic: int, compressed: bool, limit: int, ratio: float, i: int,
                                 records: int, unc: int, last: int | None, base_ts: int | None) -> None:
    """The compiled KIP-126 planning step takes the records hasRoomFor takes, with the same sums, or stops
    earlier (before a record it does not size): where it stops, the Python step goes on exactly as from the
    start."""
    from kafkatool.record import estimator as est
    assert SP is not None
    chunk, offset = [], 3
    for k, v, h, gap in sizes:
        offset += gap
        chunk.append(Record(offset, TS + offset % 7, k, v, h, -1, 10 + len(v or b""), None, None))
    i = min(i, len(chunk))
    header = est.batch_header_size(magic, Codec.GZIP if compressed else Codec.NONE)
    args = (chunk, i, magic, compressed, header, limit, ratio, unc, records, 3, last, base_ts)
    want = est.plan_step_py(*args)
    got = SP.plan_step(*args)
    assert got is not None
    assert got[0] <= want[0]
    if got[0] < want[0]:  # stopped early: the Python step from there ends where the Python step ends
        rec = chunk[got[0]]
        assert rec[4] or (magic >= 2 and got[3] is not None and not -(2 ** 31) <= got[3] - 3 < 2 ** 31 - 1) \
            or (magic >= 2 and got[4] is not None and not -(2 ** 63) <= rec[1] - got[4] < 2 ** 63)
        rest = est.plan_step_py(chunk, got[0], magic, compressed, header, limit, ratio, got[1], got[2], 3, got[3],
                                got[4])
        assert rest[:5] == want[:5] and got[5] + rest[5] == want[5]
    else:
        assert deep_types(got) == deep_types(want)


@SETTINGS
@given(data=v2_batches(), to_magic=st.sampled_from([0, 1]), first=st.sampled_from([0, 3, 2 ** 40 + 2, 2 ** 41]))
def test_down_convert_batch_same_with_and_without(data: bytes, to_magic: int, first: int) -> None:
    """downconvert's hot branch (a v2 batch with its own codec: the compiled reframe called directly) gives
    the ConvertedBatch and every statistic of the pure path, and the bytes of reframe_v2_batch."""
    from kafkatool.record.file_records import iter_batches

    results = []
    for on in (False, True):
        with compiled(on):
            (batch,) = iter_batches(data)
            out = dc.DownConverted(b"")
            results.append((outcome(dc.down_convert_batch, batch, to_magic, first, out), out))
    assert results[0] == results[1]
    (batch,) = iter_batches(data)
    r = dc.reframe_v2_batch(batch, to_magic, first, batch.codec)
    got = results[1][0]
    assert got[0] == "ok"
    if got[1] is None:
        assert r.records == 0
    else:
        assert (got[1].data, got[1].records, got[1].first_offset, got[1].last_offset, got[1].uncompressed_bytes) == (
            r.data, r.records, r.first_offset, r.last_offset, r.inner_bytes)


@SETTINGS
@given(area=clean_area(), to_magic=st.sampled_from([0, 1]), lat=st.sampled_from([None, TS + 3]),
       first=st.sampled_from([None, 0, 1002]), relative=st.booleans())
def test_reframe_takes_every_valid_area(area: tuple[bytes, int], to_magic: int, lat: int | None, first: int | None,
                                        relative: bool) -> None:
    assert SP is not None
    data, count = area
    args = (data, count, 1000, TS, lat, to_magic, 8 if lat is not None and to_magic else 0, first)
    got = SP.reframe_v2_records(*args, relative)
    assert got is not None
    r = dc.reframe_v2_records_py(*args, relative=relative)
    assert named(got, REFRAMED) == named(r, REFRAMED)


# ---------------------------------------------------------------------------------------------- walks

def verify_fields(path: str) -> tuple[object, ...]:
    v = verify_segment(path)
    return (v.batches, v.records, v.unknown_counts, v.valid_bytes, [err(e) for e in v.invalid], v.stop,
            err(v.walk_error))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=segment())
def test_verify_segment_same_with_and_without(data: bytes) -> None:
    with as_file(data) as path:
        with compiled(False):
            want = verify_fields(path)
        with compiled(True):
            assert verify_fields(path) == want


def indexed(data: bytes, cut: int, base: int, interval: int) -> Any:
    """What ``SegmentIndexer`` makes of ``data`` fed in two pieces (the second from ``cut``): its recovery or the
    error it raises."""
    from kafkatool.log.recovery.fast import SegmentIndexer

    def run() -> Any:
        idx = SegmentIndexer(base, interval)
        idx.feed(data[:cut])
        idx.feed(data[cut:])
        r = idx.finish()
        return (r.encode_offset_index(), r.encode_time_index(), r.batches, r.last_offset, r.max_timestamp,
                r.offset_of_max_timestamp, r.magics, r.valid_bytes)

    return outcome(run)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=segment(), cut=st.integers(0, 1 << 16), base=st.sampled_from([0, 3, 1 << 40]),
       interval=st.sampled_from([0, 1, 64, 4096]))
def test_segment_indexer_same_with_and_without(data: bytes, cut: int, base: int, interval: int) -> None:
    with compiled(False):
        want = indexed(data, cut, base, interval)
    with compiled(True):
        assert indexed(data, cut, base, interval) == want


def hostile_logs() -> list[Path]:
    return sorted(p for p in HOSTILE.rglob("*") if p.is_file() and p.suffix in (".log", ".bin"))


@pytest.mark.parametrize("path", hostile_logs(), ids=lambda p: str(p.relative_to(HOSTILE)))
def test_hostile_corpus_same_with_and_without(path: Path) -> None:
    from tests.hostile.test_library import first_problem

    results = []
    for on in (False, True):
        with compiled(on):
            results.append((first_problem(path), verify_fields(str(path)), deep_read(path)))
    assert results[0] == results[1]


def deep_read(path: Path) -> list[Any]:
    """Every batch's records (or error), and every v2 batch down-converted to v1 and v0 (or the error)."""
    from kafkatool.record.down_convert import down_convert
    from kafkatool.record.file_records import FileRecords

    out: list[Any] = []
    with FileRecords(path) as fr:
        try:
            for b in fr.batches():
                out.append(outcome(b.records))
                for magic in (0, 1):
                    out.append(outcome(lambda: down_convert([b], magic, 0).data))  # noqa: B023
        except KafkaToolError as e:
            out.append(err(e))
    return out


def test_pure_env_var_runs_python_only(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("from kafkatool import _accel\n"
            "from kafkatool.record import default_records, down_convert, file_records\n"
            "from kafkatool.log.recovery import fast\n"
            "from kafkatool.dump import engine as dump\n"
            "print(_accel.speedups is None, default_records._C is None, dump._C is None)")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "KAFKATOOL_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True"]
    env["KAFKATOOL_PURE"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]


# ---------------------------------------------------------------------------------------------- dump

def dump_events(path: str, **opts: Any) -> list[Any]:
    from kafkatool.dump.engine import DumpEngine
    from kafkatool.dump.events import DumpOptions

    return list(DumpEngine(DumpOptions(emit_data=False, **opts)).run([path]))


DUMP_OPTIONS = [{}, {"verify": True}, {"deep": True}, {"deep": True, "verify": True}, {"strict": True},
                {"deep": True, "strict": True}, {"exact_counts": True}, {"progress_every": 100}]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=segment(), opts=st.sampled_from(DUMP_OPTIONS))
def test_dump_summary_walk_same_with_and_without(data: bytes, opts: dict[str, Any]) -> None:
    with as_file(data) as path:
        with compiled(False):
            want = dump_events(path, **opts)
        with compiled(True):
            assert dump_events(path, **opts) == want


@pytest.mark.parametrize("path", hostile_logs(), ids=lambda p: str(p.relative_to(HOSTILE)))
def test_hostile_corpus_dump_same_with_and_without(path: Path) -> None:
    for opts in DUMP_OPTIONS[:4]:
        with compiled(False):
            want = dump_events(str(path), **opts)
        with compiled(True):
            assert dump_events(str(path), **opts) == want, opts


def test_dump_walk_resumes_after_every_kind_of_batch(tmp_path: Path) -> None:
    """Runs of plain batches around everything the compiled walk leaves to Python: a CRC failure, a gap, an
    offset going back, legacy entries, a control batch, a batch whose records do not decode, a torn tail."""
    from kafkatool.record import legacy_records as legacy
    from kafkatool.record.codecs import Codec

    def batch(base: int, n: int = 3, codec: Codec = Codec.NONE) -> bytes:
        return v2.build_batch([(base + i, TS + i, b"k%d" % i, b"v" * 40, ()) for i in range(n)], codec=codec)

    bad_crc = bytearray(batch(9))
    bad_crc[-1] ^= 1
    bad_records = bytearray(batch(12))
    bad_records[61] = 0x7F  # the first record's length: CRC recomputed below, so only the records are wrong
    import crc32c

    bad_records[17:21] = crc32c.crc32c(bytes(bad_records[21:])).to_bytes(4, "big")
    parts = [batch(0), batch(3, codec=Codec.LZ4), batch(6, codec=Codec.GZIP), bytes(bad_crc), bytes(bad_records),
             batch(15), batch(30), batch(20),
             legacy.build_entries([(33, TS, b"a", b"b"), (34, TS, None, b"c")], magic=1),
             legacy.build_entries([(35, TS, b"a", b"b"), (36, TS, b"x", None)], magic=0, codec=Codec.GZIP),
             v2.build_end_txn_marker(offset=37, timestamp=TS, producer_id=1, producer_epoch=0, commit=True,
                                     coordinator_epoch=0),
             batch(38), batch(41, codec=Codec.SNAPPY), batch(44, codec=Codec.ZSTD)]
    data = b"".join(parts)
    path = tmp_path / "00000000000000000000.log"
    for tail in (b"", batch(47)[:30], b"\x00" * 40):
        path.write_bytes(data + tail)
        for opts in DUMP_OPTIONS:
            with compiled(False):
                want = dump_events(str(path), **opts)
            with compiled(True):
                assert dump_events(str(path), **opts) == want, opts
    kinds = [getattr(e, "kind", None) for e in want]
    assert {"crc-mismatch", "offset-gap", "offset-order"} <= set(kinds)


@pytest.fixture(scope="module")
def every_format_sample(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The .log files of a generated sample with every magic and every codec it allows (zstd only in v2),
    headers, transactions with aborts and control batches, log-append time and compaction (offset gaps)."""
    from kafkatool.record.batch import TimestampType
    from kafkatool.record.codecs import Codec
    from kafkatool.sample.generate import generate_sample
    from kafkatool.sample.spec import IntRange, SampleSpec, TopicSpec

    legacy_codecs = (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4)
    root = tmp_path_factory.mktemp("every-format") / "logs"
    generate_sample(root, SampleSpec((
        TopicSpec("eras", records=600, magics=(0, 1, 2), codecs=legacy_codecs, batch_records=IntRange(1, 9),
                  segment_bytes=16 * 1024),
        TopicSpec("v2codecs", records=500, codecs=(*legacy_codecs, Codec.ZSTD), headers=2,
                  batch_records=IntRange(1, 40), segment_bytes=24 * 1024),
        TopicSpec("txn", records=300, transactional_producers=2, abort_fraction=0.3, segment_bytes=16 * 1024),
        TopicSpec("lat", records=200, magics=(1, 2), codecs=(Codec.NONE, Codec.GZIP),
                  timestamp_type=TimestampType.LOG_APPEND_TIME, segment_bytes=8 * 1024),
        TopicSpec("compacted", records=800, magics=(1, 2), codecs=(Codec.NONE, Codec.LZ4), compacted=True,
                  key_cardinality=40, segment_bytes=8 * 1024),
    ), profile="custom"), fsync=False)
    logs = sorted(root.rglob("*.log"))
    assert logs
    return logs


def test_generated_sample_covers_every_magic_and_codec(every_format_sample: list[Path]) -> None:
    from kafkatool.record.file_records import FileRecords

    seen = set()
    for path in every_format_sample:
        with FileRecords(path) as fr:
            seen |= {(b.magic, b.codec_id) for b in fr.batches()}
    assert {(m, c) for m in (0, 1) for c in range(4)} | {(2, c) for c in range(5)} <= seen


def test_generated_sample_dump_same_with_and_without(every_format_sample: list[Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from kafkatool.dump import engine as dump

    assert SP is not None
    taken = [0]  # batches the compiled walk took: the comparison must cover it, not just the Python loop

    def counting_walk(*args: Any) -> Any:
        r = SP.dump_walk(*args)
        taken[0] += r.batches if r is not None else 0
        return r

    for path in every_format_sample:
        for opts in DUMP_OPTIONS:
            with compiled(False):
                want = dump_events(str(path), **opts)
            with compiled(True):
                monkeypatch.setattr(dump, "_C", types.SimpleNamespace(dump_walk=counting_walk))
                assert dump_events(str(path), **opts) == want, (path, opts)
    assert taken[0] > 0


def test_generated_sample_damaged_dump_same_with_and_without(every_format_sample: list[Path],
                                                             tmp_path: Path) -> None:
    """Each file with one byte flipped at spread-out positions (sizes, magics, CRCs, attributes, records,
    compressed data) and cut at a few lengths: every finding, count and position as the Python walk has them."""
    import random

    rng = random.Random(20261124)
    target = tmp_path / "00000000000000000000.log"
    for path in every_format_sample:
        data = path.read_bytes()
        variants = []
        for _ in range(6):
            damaged = bytearray(data)
            damaged[rng.randrange(len(data))] ^= rng.randrange(1, 256)
            variants.append(bytes(damaged))
        variants += [data[:rng.randrange(len(data))] for _ in range(2)]
        variants.append(data + b"\x00" * 64)
        for variant in variants:
            target.write_bytes(variant)
            for opts in DUMP_OPTIONS[:4] + [{"exact_counts": True}]:
                with compiled(False):
                    want = dump_events(str(target), **opts)
                with compiled(True):
                    assert dump_events(str(target), **opts) == want, (path, opts)


def test_dump_walk_never_swallows_an_interrupt(sp: ModuleType) -> None:
    """A KeyboardInterrupt raised in the decompressor or CRC function it calls comes out of the compiled walk
    (other exceptions make it stop and leave the batch to Python, which raises its own error)."""
    import crc32c

    from kafkatool.record.codecs import Codec, decompress

    data = v2.build_batch([(0, TS, b"k", b"v" * 100, ())], codec=Codec.LZ4)

    def interrupt(*_: Any) -> Any:
        raise KeyboardInterrupt

    def fail(*_: Any) -> Any:
        raise ValueError("no")

    with pytest.raises(KeyboardInterrupt):
        sp.dump_walk(data, 0, len(data), len(data), -1, 1, crc32c.crc32c, zlib.crc32, interrupt)
    with pytest.raises(KeyboardInterrupt):
        sp.dump_walk(data, 0, len(data), len(data), -1, 0, interrupt, zlib.crc32, interrupt)
    with pytest.raises(KeyboardInterrupt):
        sp.verify_walk(data, 0, len(data), len(data), interrupt, zlib.crc32)
    r = sp.dump_walk(data, 0, len(data), len(data), -1, 1, crc32c.crc32c, zlib.crc32, fail)
    assert (r.position, r.batches) == (0, 0)
    r = sp.dump_walk(data, 0, len(data), len(data), -1, 1, crc32c.crc32c, zlib.crc32, decompress)
    assert (r.position, r.batches, r.records) == (len(data), 1, 1)


# ---------------------------------------------------------------------------------------------- downconvert


def converted(src: Path, dst: Path, **opts: Any) -> Any:
    """``convert_log``'s outcome: the output tree (every file's bytes) and the statistics, or its error."""
    from dataclasses import asdict

    from kafkatool.convert.engine import ConvertOptions, convert_log

    def run() -> Any:
        stats = convert_log(src, dst, ConvertOptions(**opts))
        files = {str(p.relative_to(dst)): p.read_bytes() for p in sorted(dst.rglob("*")) if p.is_file()}
        rows = []
        for part in stats:
            d = asdict(part)
            for volatile in ("output", "elapsed_s", "peak_rss_bytes", "peak_rss_scope"):
                d.pop(volatile)
            rows.append(d)
        return files, rows

    return outcome(run)


CONVERT_OPTIONS: list[dict[str, Any]] = [
    {"to_magic": 1, "zstd_to": Codec.LZ4},
    {"to_magic": 0, "zstd_to": Codec.GZIP},
    # rolls of the output segment inside runs, and KIP-126 splits of batches over the limit
    {"to_magic": 1, "zstd_to": Codec.NONE, "segment_bytes": 3000, "max_message_bytes": 1800},
    {"to_magic": 0, "zstd_to": Codec.SNAPPY, "segment_bytes": 5000, "chunk_size": 1},
    {"to_magic": 1, "zstd_to": Codec.LZ4, "chunk_size": 1 << 20, "index_interval_bytes": 100},
]


def test_generated_sample_downconvert_same_with_and_without(every_format_sample: list[Path], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled run (convert.DownConverter.run) writes the same files and counts the same statistics as
    the Python path, batch by batch, on every magic, codec, transaction, log-append-time and compacted topic
    of the sample, with segment rolls and splits falling inside runs."""
    import types

    from kafkatool.convert import engine as convert

    assert SP is not None
    taken = [0]

    def counting_run(*args: Any) -> Any:
        r = SP.downconvert_run(*args)
        taken[0] += r.batches if r is not None else 0
        return r

    root = every_format_sample[0].parent.parent
    for i, opts in enumerate(CONVERT_OPTIONS):
        with compiled(False):
            want = converted(root, tmp_path / f"py-{i}", **opts)
        with compiled(True):
            monkeypatch.setattr(convert, "_C", types.SimpleNamespace(downconvert_run=counting_run))
            got = converted(root, tmp_path / f"c-{i}", **opts)
        assert want[0] == "ok", want
        assert got == want, opts
    assert taken[0] > 50


def test_damaged_downconvert_same_with_and_without(every_format_sample: list[Path], tmp_path: Path) -> None:
    """A byte flipped in sizes, CRCs, attributes, records or compressed data, or a cut: the same error (message
    and position) or the same output either way."""
    import random

    rng = random.Random(20261125)
    paths = [p for p in every_format_sample if p.stat().st_size > 2000][:6]
    n = 0
    for path in paths:
        data = path.read_bytes()
        for _ in range(5):
            damaged = bytearray(data)
            damaged[rng.randrange(len(data))] ^= rng.randrange(1, 256)
            for variant in (bytes(damaged), data[:rng.randrange(len(data))]):
                n += 1
                src = tmp_path / f"src-{n}" / "t-0"
                src.mkdir(parents=True)
                (src / path.name).write_bytes(variant)
                with compiled(False):
                    want = converted(src.parent, tmp_path / f"py-{n}", to_magic=1, zstd_to=Codec.GZIP)
                with compiled(True):
                    got = converted(src.parent, tmp_path / f"c-{n}", to_magic=1, zstd_to=Codec.GZIP)
                assert got == want, (path, n)


def test_downconvert_run_never_swallows_an_interrupt(sp: ModuleType) -> None:
    """A KeyboardInterrupt in the CRC function, a decompressor or a compressor comes out of the run; other
    exceptions stop it before that batch (the Python path then raises its own error)."""
    import crc32c

    from kafkatool.record import codecs

    data = v2.build_batch([(0, TS, b"k", b"v" * 100, ())], codec=Codec.LZ4) + v2.build_batch(
        [(1, TS, b"k", b"v" * 100, ())], codec=Codec.LZ4)

    def interrupt(*_: Any) -> Any:
        raise KeyboardInterrupt

    def fail(*_: Any) -> Any:
        raise ValueError("no")

    def dec(c: int, v: Any) -> bytes:
        return codecs.decompress(c, v, magic=2)

    def comp(c: int, d: bytes) -> bytes:
        return codecs.compress(c, d, magic=1)

    real = (crc32c.crc32c, dec, comp, codecs.snappy_block, codecs.lz4_fast_block, codecs.snappy_block_len,
            codecs.snappy_unblock, codecs.lz4_unblock)

    def run(checked: int, crc: Any = None, decompressing: Any = None, compressing: Any = None) -> Any:
        fns = list(real)
        if crc is not None:
            fns[0] = crc
        if decompressing is not None:
            fns[1] = fns[5] = fns[6] = fns[7] = decompressing
        if compressing is not None:
            fns[2] = fns[3] = fns[4] = compressing
        est = (1.0, 1.0, 1.0, 1.0, 0.05, 0.005)
        return sp.downconvert_run(data, 0, len(data), len(data), checked, 1, 0, 1 << 20, 0, 0, 1 << 30, 34, 1 << 20,
                                  tuple(fns), est)

    for broken in (interrupt, fail):
        for kw in ({"checked": 0, "crc": broken}, {"checked": 1, "decompressing": broken},
                   {"checked": 1, "compressing": broken}):
            if broken is interrupt:
                with pytest.raises(KeyboardInterrupt):
                    run(**kw)
            else:
                r = run(**kw)
                assert (r.position, r.data, r.batches) == (0, b"", 0), kw
    whole = run(0)
    assert (whole.position, whole.batches, whole.records) == (len(data), 2, 2)
    r = run(0, decompressing=fail)
    assert (r.position, r.data, r.batches) == (0, b"", 0)



def test_downconvert_run_keeps_the_kip126_estimate(tmp_path: Path) -> None:
    """Compressed batches converted by the run move the (topic, codec) compression-ratio estimate exactly as
    ``DownConverter.add`` does, batch by batch (in downconvert's output only a split shows it, and a split resets
    it first: the state itself is compared); and a batch over --max-message-bytes after a run is split into the
    same pieces."""
    from kafkatool.convert.engine import ConvertOptions, DownConverter, PartitionStats
    from kafkatool.convert.files import SegmentWriter
    from kafkatool.record.estimator import CompressionRatioEstimator
    from kafkatool.record.file_records import FileRecords
    from kafkatool.record.up_convert import ConversionCounters
    from tests.support.convert_fixtures import make_partition, v2_log

    small = v2_log(0, batches=150, per_batch=5, codec=Codec.LZ4, value_bytes=200)
    small += v2_log(750, batches=40, per_batch=3, codec=Codec.GZIP, payload=random.Random(7).randbytes(200))
    big = v2_log(870, batches=1, per_batch=300, codec=Codec.LZ4, value_bytes=200)
    seg = make_partition(tmp_path / "src", "t-0", {0: small + big}) / f"{0:020d}.log"

    def estimates(on: bool) -> dict[Any, float]:
        opts = ConvertOptions(to_magic=1)
        est = CompressionRatioEstimator()
        conv = DownConverter(opts, est, "t", ConversionCounters())
        writer = SegmentWriter(None, opts.segment_bytes, opts.index_interval_bytes)
        writer.begin_source_segment(0)
        stats = PartitionStats("t-0", "src", None, 1)
        runs = 0
        with compiled(on), FileRecords(seg) as fr:
            stream = fr.batches()
            for batch in stream:
                r = conv.run(fr.buf, batch.position, stream.end, writer, stats) if on else None
                if r is not None:
                    runs += 1
                    stream.jump(r[0])
                else:
                    for unit in conv.add(batch):
                        writer.append(unit)
        assert (runs > 0) == on
        return dict(est.ratios)

    want = estimates(False)
    assert want[("t", int(Codec.LZ4))] < 0.9 and ("t", int(Codec.GZIP)) in want
    assert estimates(True) == want
    with compiled(False):
        want_files = converted(tmp_path / "src", tmp_path / "py", to_magic=1, max_message_bytes=4000)
    with compiled(True):
        got_files = converted(tmp_path / "src", tmp_path / "c", to_magic=1, max_message_bytes=4000)
    assert want_files[0] == "ok" and want_files[1][1][0]["counters"]["splits"] > 0
    assert got_files == want_files


@pytest.mark.parametrize("to_magic", [0, 1])
def test_downconvert_run_frames_snappy_and_lz4_blocks_as_the_codecs_do(tmp_path: Path, to_magic: int) -> None:
    """The run frames one snappy or lz4 block itself (xerial header; Kafka's lz4 frame with the magic-0 header
    checksum quirk, a block stored raw when it does not shrink): byte for byte what codecs.compress writes, for
    incompressible, compressible, 32 KiB and 64 KiB inputs and the multi-block ones it leaves to compress."""
    from tests.support.convert_fixtures import make_partition, v2_log

    rnd = random.Random(11)
    segs = b""
    off = 0
    for codec in (Codec.SNAPPY, Codec.LZ4):
        # (every record of a batch carries the same payload: one record per batch is incompressible)
        for per_batch, value_bytes, payload in ((1, 300, rnd.randbytes(300)), (8, 500, None),
                                                (1, 20000, rnd.randbytes(20000)), (30, 1070, None),
                                                (1, 40000, rnd.randbytes(40000)), (60, 1080, None),
                                                (1, 70000, rnd.randbytes(70000))):
            segs += v2_log(off, batches=3, per_batch=per_batch, codec=codec, value_bytes=value_bytes, payload=payload)
            off += 3 * per_batch
    make_partition(tmp_path / "src", "t-0", {0: segs})
    with compiled(False):
        want = converted(tmp_path / "src", tmp_path / "py", to_magic=to_magic, max_message_bytes=1 << 20)
    with compiled(True):
        got = converted(tmp_path / "src", tmp_path / "c", to_magic=to_magic, max_message_bytes=1 << 20)
    assert want[0] == "ok"
    assert got == want
    # the run unframes one block itself too: a decompression limit stops it where codecs.decompress raises
    for limit in (30000, 60000):
        with compiled(False):
            want = converted(tmp_path / "src", tmp_path / f"py-{limit}", to_magic=to_magic, decompress_limit=limit)
        with compiled(True):
            got = converted(tmp_path / "src", tmp_path / f"c-{limit}", to_magic=to_magic, decompress_limit=limit)
        assert want[0] == "error" and "exceeds the limit" in want[1][1]
        assert got == want


def test_compiled_records_are_untracked_by_the_cyclic_gc(sp: ModuleType) -> None:
    """Records hold only ints, bytes, None, bools and headers: the compiled walks hand them out untracked, so a walk of
    millions does not pay for the collector traversing and promoting each (two thirds of a legacy walk's time)."""
    import gc

    inner, _ = lr.encode_entries_py([(i, TS, b"k", None) for i in range(5)], magic=1, attributes=0)
    legacy, _ = sp.legacy_deep_records(inner, 0, 5, 0, False, TS, False)
    area = b"".join(v2.encode_record(i, 0, None, b"v", [("h", b"x")] if i % 2 else []) for i in range(5))
    recs = sp.parse_records(area, 0, len(area), 5, 0, TS, None, -1)
    assert len(legacy) == len(recs) == 5
    assert not any(gc.is_tracked(r) for r in legacy + recs)
    assert recs[1].headers == (Header("h", b"x"),) and legacy[0].key == b"k"


def test_every_compiled_name_the_library_uses_is_required() -> None:
    """A stale build (the source updated, the extension not rebuilt) lacks the newest functions: _accel.load then
    refuses it as a whole, but only for the names REQUIRED lists. Every ``_C.<name>`` / ``speedups.<name>`` the
    library reads must be there, or a stale build fails mid-command with an AttributeError."""
    import re

    used: set[str] = set()
    for path in (Path(__file__).resolve().parent.parent / "kafkatool").rglob("*.py"):
        used |= set(re.findall(r"\b(?:_C|speedups)\.([A-Za-z_]\w*)", path.read_text()))
    assert used - set(_accel.REQUIRED) == set()
