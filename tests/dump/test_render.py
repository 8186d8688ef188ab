"""Text and JSON value encodings of ``kafkatool dump``."""

from __future__ import annotations

import json

import pytest

from kafkatool.dump.render import TextWriter, json_value_encoder, text_bytes
from kafkatool.util.units import format_time_ms


@pytest.mark.parametrize("raw,shown", [
    (b"abc", '"abc"'), (b"a b", '"a b"'), (b'q"x', '"q\\"x"'), (b"back\\slash", '"back\\\\slash"'),
    (b"\xff\x00k", '"\\xff\\x00k"'), ("é€".encode(), '"é€"'), (b"\n\t", '"\\n\\t"'),
    (b"\xed\xa0\x80", '"\\xed\\xa0\\x80"'),  # a UTF-16 surrogate is not UTF-8: shown byte by byte
])
def test_text_values_are_quoted_and_escaped(raw, shown):
    assert text_bytes(raw, "utf8") == shown


def test_json_value_encodings_round_trip():
    raw = bytes(range(256))
    assert bytes.fromhex(json.loads(json_value_encoder("hex")(raw))) == raw
    import base64

    assert base64.b64decode(json.loads(json_value_encoder("base64")(raw))) == raw
    assert json_value_encoder("utf8")(None) == "null"
    assert json.loads(json_value_encoder("utf8")("ключ\n\"".encode())) == "ключ\n\""
    assert json.loads(json_value_encoder("utf8")(b"\xff")) == "\ufffd"


def test_text_timestamps_match_the_slow_formatter():
    w = TextWriter(None, print, print_data=False, encoding="utf8")  # type: ignore[arg-type]
    for ms in (0, 999, 1_700_000_000_123, 1_700_000_001_000, 1_700_000_000_999, 253_402_300_799_999, -1):
        assert w.ts(ms) == (format_time_ms(ms) if ms >= 0 else "-1")


def test_timestamp_formatter_matches_format_time_ms_out_of_order() -> None:
    from kafkatool.util.units import TimestampFormatter, format_time_ms
    fmt = TimestampFormatter()
    # increasing, repeated, backwards, across a second and a day, negative and out of datetime's range
    stamps = [1_700_000_000_999, 1_700_000_001_000, 1_700_000_001_000, 1_699_999_999_001, 86_399_999,
              86_400_000, 0, -1, -5, 2**62]
    assert [fmt(ms) for ms in stamps] == [format_time_ms(ms) for ms in stamps]
