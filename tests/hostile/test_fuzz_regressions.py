"""Inputs the coverage-guided fuzzers (fuzz/) found, kept as regression tests (fuzz/README.md).

Each file in tests/hostile/fuzz-found/ is replayed through the same entry point its fuzz target drives;
the contract is the fuzzers': a domain error or Kafka's fallback text, never another exception."""

from __future__ import annotations

from pathlib import Path

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
    assert len(inputs) > 30 and TARGETS == ["fuzz_codecs", "fuzz_decoders", "fuzz_dump", "fuzz_files",
                                            "fuzz_records"]
    for name in TARGETS:
        monkeypatch.delitem(sys.modules, name, raising=False)
        target = importlib.import_module(name)
        for data in inputs:
            target.TestOneInput(data)
