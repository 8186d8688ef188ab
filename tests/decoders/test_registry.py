"""The decoder registry: built-ins, and plugins found through real ``kafkatool.decoders`` entry points."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafkatool.decoders import (
    DecoderError,
    available_decoders,
    bytes_decoder,
    record_decoder,
    resolve_parser,
)
from kafkatool.decoders.offsets import MissingKeyError
from kafkatool.errors import ExitCode, UsageError
from kafkatool.record.batch import Record
from tests.support.paths import ROOT


def rec(key: bytes | None, value: bytes | None, offset: int = 0) -> Record:
    return Record(offset=offset, timestamp=0, key=key, value=value)


def test_builtin_bytes_decoders() -> None:
    assert bytes_decoder("utf8").decode("café".encode()) == "café"
    assert bytes_decoder("utf8").decode(b"ok\xff\xfe!") == "ok\ufffd\ufffd!"  # StringDecoder's replacement
    assert bytes_decoder("hex").decode(b"\x00\xabz") == "00ab7a"
    assert bytes_decoder("base64").decode(b"\x00\x01\x02\xfe\xff") == "AAEC/v8="
    assert bytes_decoder("json").decode(b'{ "a" : [1, 2.5, "\xc3\xa9\\n"],\n "b": null }') == \
        '{"a":[1,2.5,"é\\n"],"b":null}'
    assert bytes_decoder("json").decode(b"{nope") == \
        "<not JSON: Expecting property name enclosed in double quotes at byte 1, 5 bytes>"
    assert bytes_decoder("json").decode(b'"\xff"') == "<not JSON: invalid UTF-8 at byte 1, 3 bytes>"


def test_default_parser_is_kafkas_decoder_message_parser() -> None:
    parser = resolve_parser()
    assert parser.parse(rec(b"k", b"v")) == ("k", "v")
    assert parser.parse(rec(None, b"v")) == (None, "v")  # no key: "key:" is not printed
    assert parser.parse(rec(b"k", None)) == ("k", None)
    mixed = resolve_parser(key_decoder="utf8", value_decoder="hex")
    assert mixed.name == "utf8/hex" and mixed.parse(rec(b"id", b"\x01")) == ("id", "01")
    assert resolve_parser(decoder="base64").parse(rec(b"k", b"v")) == ("aw==", "dg==")


def test_record_decoders_use_the_record_offset() -> None:
    parser = resolve_parser(decoder="offsets")
    assert parser.parse(rec(b"\x7f\xff", b"", offset=41)) == ("Unknown record type 32767 at offset 41, skipping.",
                                                              None)
    with pytest.raises(MissingKeyError) as e:
        parser.parse(rec(None, b"x", offset=3))
    assert e.value.exit_code == ExitCode.FINDINGS
    assert resolve_parser(decoder="transactions").parse(rec(b"\x00\x05", None)) == ("unknown::version=5", None)


@pytest.mark.parametrize("kwargs,message", [
    ({"decoder": "offsets", "key_decoder": "hex"}, "cannot be combined"),
    ({"key_decoder": "offsets"}, "decodes whole records"),
    ({"value_decoder": "nosuch"}, "unknown decoder 'nosuch'; available: utf8, hex, base64, json, offsets, "
                                  "transactions"),
    ({"decoder": "nosuch"}, "unknown decoder"),
])
def test_usage_errors(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_parser(**kwargs)


PLUGIN_MODULE = '''
"""A tiny third-party decoder package, as a user would ship one."""


class Upper:
    """A bytes decoder: usable with --key-decoder/--value-decoder (and --decoder on both sides)."""

    def decode(self, data: bytes) -> str:
        return data.decode("ascii").upper()


def key_and_length(key, value, record):
    """A record decoder as a plain callable."""
    return (None if key is None else key.decode()), f"{len(value or b'')} bytes at {record.offset}"


class Crashy:
    def decode_record(self, key, value, record):
        raise ZeroDivisionError("boom")


def not_a_decoder_value():
    pass


NOT_A_DECODER = 42
'''

ENTRY_POINTS = '''
[kafkatool.decoders]
upper = kafkatool_testplugin:Upper
klen = kafkatool_testplugin:key_and_length
crashy = kafkatool_testplugin:Crashy
broken = kafkatool_testplugin:DoesNotExist
number = kafkatool_testplugin:NOT_A_DECODER
hex = kafkatool_testplugin:Upper
'''


@pytest.fixture
def plugin_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed distribution: a module and a ``.dist-info`` with ``entry_points.txt`` on ``sys.path``."""
    (tmp_path / "kafkatool_testplugin.py").write_text(PLUGIN_MODULE)
    info = tmp_path / "kafkatool_testplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kafkatool-testplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_plugins_are_discovered_through_entry_points(plugin_dist: Path) -> None:
    names = available_decoders()
    assert names["upper"] == "plugin (kafkatool_testplugin:Upper)"
    assert names["hex"] == "bytes"  # a plugin cannot shadow a built-in
    assert bytes_decoder("hex").decode(b"ab") == "6162"
    assert resolve_parser(value_decoder="upper").parse(rec(b"k", b"abc")) == ("k", "ABC")
    assert resolve_parser(decoder="upper").parse(rec(b"k", b"abc")) == ("K", "ABC")
    assert resolve_parser(decoder="klen").parse(rec(b"id-1", b"xyz", offset=8)) == ("id-1", "3 bytes at 8")
    assert record_decoder("upper").decode_record(b"a", None, rec(b"a", None)) == ("A", None)


def test_plugin_failures_are_reported_not_raised(plugin_dist: Path) -> None:
    with pytest.raises(DecoderError, match=r"decoder 'crashy' failed on the record at offset 4: "
                                           r"ZeroDivisionError: boom") as e:
        resolve_parser(decoder="crashy").parse(rec(b"k", b"v", offset=4))
    assert e.value.exit_code == ExitCode.FINDINGS
    with pytest.raises(UsageError, match=r"decoder plugin 'broken' \(kafkatool_testplugin:DoesNotExist\) failed "
                                         r"to load: AttributeError"):
        resolve_parser(decoder="broken")
    with pytest.raises(UsageError, match="neither a decode_record/decode object nor a callable"):
        resolve_parser(decoder="number")
    with pytest.raises(UsageError, match="decodes whole records"):
        resolve_parser(key_decoder="klen")


def test_plugin_discovery_in_a_fresh_interpreter(plugin_dist: Path) -> None:
    code = textwrap.dedent("""
        from kafkatool.record.batch import Record
        from kafkatool.decoders import resolve_parser
        print(resolve_parser(decoder="klen").parse(Record(12, 0, b"a", b"bcd")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": f"{plugin_dist}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "('a', '3 bytes at 12')"
