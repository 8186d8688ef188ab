"""Inputs the coverage-guided fuzzers (fuzz/) found, kept as regression tests (fuzz/README.md).

Each file in tests/hostile/fuzz-found/ is replayed through the same entry point its fuzz target drives;
the contract is the fuzzers': a domain error or Kafka's fallback text, never another exception."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkatool.decoders.offsets import decode_offsets_record
from kafkatool.decoders.transactions import decode_transaction_record
from tests.support.paths import HOSTILE

FOUND = HOSTILE / "fuzz-found"


def test_negative_tagged_field_size_in_offsets_key():
    # fuzz_decoders, input byte 0 selects the decoder, byte 1 the key/value split.
    data = (FOUND / "decoders-negative-tagged-size.bin").read_bytes()
    body = data[2:]
    key, value = body[:data[1]], body[data[1]:] or None
    decoder = (decode_offsets_record, decode_transaction_record)[data[0] % 3]
    k, v = decoder(key, value, 42)
    assert k is not None and ("skipping" in k or k.startswith(("{", "transaction_metadata", "unknown")))


def test_legacy_message_with_null_key_and_no_room_for_the_value_length():
    # fuzz_records: byte 0 even = no CRC re-seal; a v0 entry whose key length is negative (read as null, as
    # Kafka does) and whose message ends before the value length field.
    from kafkatool.errors import KafkaToolError
    from kafkatool.record.file_records import LogInputStream

    data = (FOUND / "records-legacy-null-key-no-value-length.bin").read_bytes()
    body = data[1:] if data[0] & 1 else data
    problems = []
    for batch in LogInputStream(body):
        try:
            batch.records()
        except KafkaToolError as e:
            problems.append(str(e))
    assert problems and "runs past the end of the message" in problems[0]


def test_fetch_response_with_a_topic_name_that_is_not_utf8():
    # fuzz_decoders: byte 0 % 3 == 2 selects parse_response, byte 1 % 4 the version. The topic name's bytes
    # are 0xff 0xfe: a domain error naming the byte, not a bare UnicodeDecodeError.
    import pytest

    from kafkatool.errors import CorruptDataError
    from kafkatool.fetch.response import parse_response

    data = (FOUND / "decoders-fetch-response-non-utf8-topic.bin").read_bytes()
    assert data[0] % 3 == 2
    with pytest.raises(CorruptDataError, match="topic name is not UTF-8") as e:
        parse_response(data[2:], data[1] % 4)
    assert e.value.position == 14


FUZZ = Path(__file__).resolve().parent.parent.parent / "fuzz"
TARGETS = sorted(p.stem for p in FUZZ.glob("fuzz_*.py"))


def test_every_fuzz_target_runs_the_whole_hostile_corpus(monkeypatch):
    # The targets import atheris only to instrument and drive them; with a stand-in, their TestOneInput runs here,
    # so a target that no longer imports or calls the library (or an input it fails on) breaks the normal suite,
    # not only a fuzz run nobody looks at. Each gets every corpus file (at most 64 KiB, as run.sh's -max_len).
    import contextlib
    import importlib
    import sys
    import types

    stub = types.ModuleType("atheris")
    stub.instrument_imports = contextlib.nullcontext  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "atheris", stub)
    monkeypatch.syspath_prepend(str(FUZZ))
    inputs = [p.read_bytes()[:1 << 16] for p in sorted((FOUND.parent).rglob("*")) if p.is_file()]
    assert len(inputs) > 30 and TARGETS == ["fuzz_codecs", "fuzz_decoders", "fuzz_downconvert", "fuzz_dump",
                                            "fuzz_files", "fuzz_records", "fuzz_upconvert"]
    for name in TARGETS:
        monkeypatch.delitem(sys.modules, name, raising=False)
        target = importlib.import_module(name)
        for data in inputs:
            target.TestOneInput(data)


# ---------------------------------------------------------------------------------------------- the converters
# fuzz_upconvert and fuzz_downconvert (issue 23): one fuzzed segment is refused with a finding, or converted into a
# partition that dump --deep --verify finds clean and that holds the input's records, record for record.

@pytest.fixture
def converters(monkeypatch):
    import contextlib
    import importlib
    import sys
    import types

    stub = types.ModuleType("atheris")
    stub.instrument_imports = contextlib.nullcontext  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "atheris", stub)
    monkeypatch.syspath_prepend(str(FUZZ))
    for name in ("_convert", "fuzz_upconvert", "fuzz_downconvert"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tuple(importlib.import_module(n) for n in ("_convert", "fuzz_upconvert", "fuzz_downconvert"))


LAUNDER = {
    "v1-gzip-inner-crc": (lambda d: d.inner_crc_flip(1), "inner message of the wrapper at byte 0"),
    "v0-snappy-inner-crc": (lambda d: d.inner_crc_flip(0, d.Codec.SNAPPY), "inner message of the wrapper at byte 0"),
    "v1-inner-offsets-backwards": (lambda d: d.decreasing_inner(), "is followed by"),
    "v1-inner-set-cut": (lambda d: d.inner_cut(1), "inner message set of the wrapper at byte 0 ends"),
    "negative-last-offset-delta": (lambda d: d.negative_delta(), "lastOffsetDelta"),
    "malformed-control-record": (lambda d: d.bad_control(), "control record of the batch at byte 0"),
    "v2-records-undecodable": (lambda d: d.v2_bad_record(3), "do not decode"),
    "int64-last-offset": (lambda d: d.offset_max(), "9223372036854775807"),
}


@pytest.mark.parametrize("case", sorted(LAUNDER))
def test_converter_targets_refuse_each_laundering_input_and_skip_it_on_request(converters, case):
    # Flags 0: refused with the finding at its byte (the target returns the message); flag bit 3 (skip_corrupt):
    # written, clean, and the records are the input's less the corrupt ones (the target checks both, or raises).
    from tests.support import damaged_batches

    build, words = LAUNDER[case]
    segment = build(damaged_batches) + damaged_batches.batch(20)
    for target, extra in ((converters[1], 0), (converters[2], 64)):
        refused = target.convert(bytes((extra,)) + segment)
        assert refused and "00000000000000000000.log at byte 0: offset" in refused and words in refused, refused
        assert target.convert(bytes((extra | 8,)) + segment) == ""


def test_converter_targets_write_a_clean_copy_of_good_input(converters):
    from tests.support import damaged_batches as d

    segment = d.inner_entries(1, 4) + d.batch(4) + d.wrapper(0, d.Codec.GZIP, bytes(d.inner_entries(0, 3, 7)), 9)
    for target, extra in ((converters[1], 0), (converters[2], 64)):
        for flags in (0, 2, 4, 6, 16, 32):
            assert target.convert(bytes((extra | flags,)) + bytes(segment)) == ""


def fake_conversion(write=None, error=None, leave_dst=False):
    """A stand-in for convert_log: writes ``write(input bytes)`` as the output segment, or raises ``error``."""
    def convert_log(src, dst, opts):
        if error is not None:
            if leave_dst:
                os.makedirs(dst)
            raise error
        os.makedirs(os.path.join(dst, "topic-0"))
        data = open(os.path.join(src, "00000000000000000000.log"), "rb").read()
        with open(os.path.join(dst, "topic-0", "00000000000000000000.log"), "wb") as f:
            f.write(write(data))
    return convert_log


def test_the_converter_harness_fails_on_each_broken_contract(converters, monkeypatch):
    # A harness that cannot fail would fuzz nothing: with the conversion replaced by one that breaks each part of
    # the contract, the target raises (libFuzzer's crash), naming what broke.
    from kafkatool.errors import CorruptDataError, UsageError
    from kafkatool.record import default_records as v2
    from tests.support import damaged_batches as d

    convert, up = converters[0], converters[1]
    good = d.batch(0)
    other = v2.build_batch([(i, d.TS + i, b"k%d" % i, b"VALUE", []) for i in range(3)])
    flipped = bytearray(good)
    flipped[-3] ^= 1
    broken = {
        "records differ": fake_conversion(lambda data: other),  # a value changed, under a fresh valid CRC
        "the output is not clean": fake_conversion(lambda data: bytes(flipped)),
        "not a finding \\(exit 2\\)": fake_conversion(error=UsageError("no")),
        "not a finding \\(exit 1\\): .*internal error": fake_conversion(error=CorruptDataError("internal error: x")),
        "refused .* but left": fake_conversion(error=CorruptDataError("bad"), leave_dst=True),
    }
    for message, fake in broken.items():
        monkeypatch.setattr(convert, "convert_log", fake)
        with pytest.raises(AssertionError, match=message):
            up.convert(b"\x00" + good)
    # skip_corrupt: the output may lack records, never hold one the input does not.
    monkeypatch.setattr(convert, "convert_log", fake_conversion(lambda data: d.batch(0, n=2)))
    assert up.convert(b"\x08" + good) == ""
    monkeypatch.setattr(convert, "convert_log", fake_conversion(lambda data: other))
    with pytest.raises(AssertionError, match="records that are not the input's"):
        up.convert(b"\x08" + good)
