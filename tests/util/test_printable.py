"""kafkatool.util.printable: paths are shown with what a terminal would act on escaped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkatool.errors import InputError
from kafkatool.util.printable import shown


@pytest.mark.parametrize(("raw", "expected"), [
    ("/var/kafka/orders-0/00000000000000000000.log", "/var/kafka/orders-0/00000000000000000000.log"),
    ("dir with spaces/é.log", "dir with spaces/é.log"),
    ("evil\x1b[2J-0", "evil\\x1b[2J-0"),
    ("note\nwith\ttab\rcr", "note\\nwith\\ttab\\rcr"),
    ("back\\slash", "back\\\\slash"),
    ("bell\x07del\x7f", "bell\\x07del\\x7f"),
    ("c1\x9bcsi", "c1\\x9bcsi"),
    ("rtl\u202eoverride", "rtl\\u202eoverride"),
])
def test_shown(raw: str, expected: str) -> None:
    assert shown(raw) == expected
    assert shown(Path(raw)) == expected


def test_undecodable_bytes_show_as_the_bytes() -> None:
    raw = os.fsdecode(b"bad\xff\xfe.log")  # surrogateescape, as os.listdir gives it
    assert shown(raw) == "bad\\xff\\xfe.log"
    assert shown(b"bad\xff.log") == "bad\\xff.log"


def test_what_is_shown_has_no_control_character() -> None:
    everything = "".join(chr(c) for c in range(0x250))
    assert shown(everything).isprintable()


def test_error_messages_show_the_path_escaped() -> None:
    e = InputError("not a regular file (a FIFO)", path="t-0/x\x1b]0;owned\x07\n.log", position=3)
    assert str(e) == "t-0/x\\x1b]0;owned\\x07\\n.log at byte 3: not a regular file (a FIFO)"
    assert e.path == "t-0/x\x1b]0;owned\x07\n.log"  # the raw path stays for JSON and the program
