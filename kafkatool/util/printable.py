"""Paths as a person reads them: a file name may hold any byte but ``/`` and NUL, and a name with a terminal
escape sequence (``\\x1b[2J`` clears the screen) or a newline (a second, forged output line) must not reach a
terminal raw. Every path kafkatool prints in its human output (text, tables, stderr lines, error messages)
goes through :func:`shown`; JSON output escapes on its own and takes the path as it is.
"""

from __future__ import annotations

import os

_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(path: str | os.PathLike[str] | bytes) -> str:
    """``path`` with what a terminal would act on escaped as Python's ``repr`` escapes it (``ls -b`` alike):
    ``\\n``, ``\\t``, ``\\x1b``, ``\\u200e``, a backslash as ``\\\\``, and a byte that is not UTF-8 (decoded by
    the file system encoding's ``surrogateescape``) as the ``\\xNN`` of that byte. A plain name is returned as
    it is."""
    text = os.fsdecode(path) if isinstance(path, bytes | os.PathLike) else path
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(_escape(c) for c in text)


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    if c.isprintable():
        return c
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # surrogateescape: the undecodable byte n - 0xDC00
        return f"\\x{n - 0xDC00:02x}"
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"
