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


# ------------------------------------------------- what the conversion targets found in their first 10-minute runs
# Each crash input replayed through the command line, compiled (KAFKATOOL_PURE=0) and pure. Byte 0 is the target's
# flags (fuzz/_convert.py); the segment is the rest, CRCs re-sealed when bit 0 says so, as the target does.
CRASHES = {
    # 0x97: re-seal, --codec zstd, --batch-bytes 16KiB. Two v0 messages at 8 and 89791548480290824 (then a torn
    # tail) were grouped into one v2 batch: lastOffsetDelta past int32, struct.error in _assemble.
    "upconvert-messages-int32-apart-grouped.bin": (
        ("upconvert", "--codec", "zstd", "--batch-bytes", "16KiB"), [8, 89791548480290824]),
    # 0xae: --to-magic 1, --codec lz4, --skip-corrupt, --max-message-bytes 400. Two v0 messages at 7 and
    # 576460752303423496 were grouped into one lz4 wrapper; the writer rolled to its first offset (7), which cannot
    # index its last: the output failed the converter's own recovery check ("internal error").
    "downconvert-messages-int32-apart-grouped.bin": (
        ("downconvert", "--to-magic", "1", "--codec", "lz4", "--skip-corrupt", "--max-message-bytes", "400"),
        [7, 576460752303423496]),
}


@pytest.mark.parametrize("pure", ["0", "1"], ids=["compiled", "pure"])
@pytest.mark.parametrize("name", sorted(CRASHES))
def test_conversion_crash_inputs_convert_into_one_segment_per_far_offset(converters, tmp_path, name, pure):
    from kafkatool.record.file_records import iter_batches
    from tests.support.cli import run_cli

    data = (FOUND / name).read_bytes()
    segment = converters[0].reseal(data[1:]) if data[0] & 1 else data[1:]
    part = tmp_path / "src" / "topic-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(segment)
    args, offsets = CRASHES[name]
    env = {"KAFKATOOL_PURE": pure}
    r = run_cli(*args, "-q", part, tmp_path / "dst", env=env)
    assert r.returncode == 0 and "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    out = tmp_path / "dst" / "topic-0"
    # The far message starts a batch and a segment of its own (UnifiedLog.maybeRoll, by its first offset).
    assert sorted(p.name for p in out.glob("*.log")) == [f"{o:020d}.log" for o in (0, offsets[1])]
    got = [r.offset for p in sorted(out.glob("*.log")) for b in iter_batches(p.read_bytes()) for r in b.records()]
    assert got == offsets
    v = run_cli("dump", "--deep", "--verify", out, env=env)
    assert v.returncode == 0 and "findings: 0 errors, 0 warnings" in v.stderr, v.stderr
    assert (part / "00000000000000000000.log").read_bytes() == segment


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_conversion_crash_inputs_pass_their_targets_contract(converters, name):
    target = converters[1] if name.startswith("upconvert") else converters[2]
    assert target.convert((FOUND / name).read_bytes()) == ""


def wrapper_int32_apart(magic: int) -> bytes:
    """A gzip wrapper whose two inner messages are 2^31+5 offsets apart (valid CRCs), then a v2 batch: what a
    legacy wrapper cannot be in Kafka (no segment indexes it, no v2 batch holds it)."""
    from kafkatool.record import legacy_records as legacy
    from tests.support import damaged_batches as d

    far = (1 << 31) + 5
    inner = legacy.build_entries([(0, d.TS, b"k", b"a"), (far, d.TS, b"k", b"b")], magic=magic)
    return d.wrapper(magic, d.Codec.GZIP, inner, far) + d.batch(far + 1)


@pytest.mark.parametrize("pure", ["0", "1"], ids=["compiled", "pure"])
@pytest.mark.parametrize("magic", [0, 1])
def test_a_wrapper_whose_offsets_are_int32_apart_is_a_finding(tmp_path, magic, pure):
    # Found while fixing the two crashes: upconvert failed on it with struct.error, downconvert --codec with
    # "File exists" (a roll onto its own base), and downconvert without --codec wrote it into a segment based
    # above its first offset. It is refused in both directions, --skip-corrupt or not.
    from tests.support.cli import run_cli

    part = tmp_path / "src" / "topic-0"
    part.mkdir(parents=True)
    seg = part / "00000000000000000000.log"
    seg.write_bytes(wrapper_int32_apart(magic))
    for i, args in enumerate([("upconvert",), ("upconvert", "--skip-corrupt"), ("downconvert", "--to-magic", "1"),
                              ("downconvert", "--to-magic", "0", "--codec", "lz4", "--skip-corrupt")]):
        dst = tmp_path / f"dst{i}"
        r = run_cli(*args, "-q", part, dst, env={"KAFKATOOL_PURE": pure})
        assert r.returncode == 1 and "internal error" not in r.stderr and "Traceback" not in r.stderr, (args, r)
        assert f"{seg} at byte 0: offset 0: the wrapper at byte 0 holds offsets 0..2147483653" in r.stderr, r.stderr
        assert not dst.exists()
    assert seg.read_bytes() == wrapper_int32_apart(magic)


# Found by the pure-Python run of fuzz_downconvert (0xef: re-seal, --to-magic 1, --codec lz4, --zstd-to lz4,
# --skip-corrupt, --max-message-bytes 400): an uncompressed v1 LogAppendTime message stamped -1297036692682702845,
# grouped into a wrapper, made build_entries raise ValueError (an internal error, exit 70). Kafka's
# MemoryRecordsBuilder refuses such a timestamp too: it is a finding at the message's byte, nothing written.
@pytest.mark.parametrize("pure", ["0", "1"], ids=["compiled", "pure"])
def test_a_v1_message_stamped_below_minus_one_is_a_finding_not_an_internal_error(converters, tmp_path, pure):
    from tests.support.cli import run_cli

    data = (FOUND / "downconvert-v1-negative-timestamp-grouped.bin").read_bytes()
    segment = converters[0].reseal(data[1:]) if data[0] & 1 else data[1:]
    part = tmp_path / "src" / "topic-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(segment)
    r = run_cli("downconvert", "--to-magic", "1", "--codec", "lz4", "--zstd-to", "lz4", "--skip-corrupt",
                "--max-message-bytes", "400", "-q", part, tmp_path / "dst", env={"KAFKATOOL_PURE": pure})
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        f"kafkatool downconvert: error: {part / '00000000000000000000.log'} at byte 62: message at offset "
        "844424930131976 has timestamp -1297036692682702845: below -1, which message format v1 cannot hold (Kafka: "
        "Invalid negative timestamp)"]
    assert not (tmp_path / "dst").exists()
    assert (part / "00000000000000000000.log").read_bytes() == segment
    assert converters[2].convert(data).endswith("(Kafka: Invalid negative timestamp)")  # a refusal the contract allows
