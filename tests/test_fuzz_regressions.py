"""Inputs the coverage-guided fuzzers (fuzz/) found, kept as regression tests (FUZZING.md).

Each file in tests/hostile/fuzz-found/ is replayed through the same entry point its fuzz target drives;
the contract is the fuzzers': a domain error or Kafka's fallback text, never another exception."""

from __future__ import annotations

from pathlib import Path

from kafkatool.decoders.offsets import decode_offsets_record
from kafkatool.decoders.transactions import decode_transaction_record

FOUND = Path(__file__).parent / "hostile" / "fuzz-found"


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
    from kafkatool.file_records import LogInputStream

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
    from kafkatool.fetch_response import parse_response

    data = (FOUND / "decoders-fetch-response-non-utf8-topic.bin").read_bytes()
    assert data[0] % 3 == 2
    with pytest.raises(CorruptDataError, match="topic name is not UTF-8") as e:
        parse_response(data[2:], data[1] % 4)
    assert e.value.position == 14
