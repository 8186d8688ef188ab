"""Parsing of human-friendly sizes (``128KiB``, ``1GiB``, ``4096``) and times (ISO-8601 or epoch ms)."""

from __future__ import annotations

import datetime as _dt
import re

from kafkatool.errors import UsageError

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1024**4, "tb": 1000**4, "tib": 1024**4,
}


def parse_size(text: str | int) -> int:
    """``"128KiB"`` -> 131072. Bare ``K/M/G`` are binary (as operators mean them); ``kB/MB`` decimal."""
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(text)
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(f"not a size: {text!r} (examples: 4096, 128KiB, 64MiB, 1GiB)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value != int(value):
        raise UsageError(f"not a whole number of bytes: {text!r}")
    return int(value)


def format_size(n: int) -> str:
    """131072 -> ``128KiB``; sizes that are not a whole unit are shown with one decimal."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor:
            q = n / factor
            return f"{q:.0f}{unit}" if q == int(q) else f"{q:.1f}{unit}"
    return f"{n}B"


def parse_time_ms(text: str | int) -> int:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it carries an offset)."""
    if isinstance(text, int):
        return text
    s = text.strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    try:
        when = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"not a time: {text!r} (epoch ms, or ISO-8601 like 2024-05-01T12:00:00Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return int(when.timestamp() * 1000)


def format_time_ms(ms: int) -> str:
    """Epoch ms -> ISO-8601 UTC with milliseconds (``-1`` and other negatives are shown as-is)."""
    if ms < 0:
        return str(ms)
    try:
        when = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class TimestampFormatter:
    """:func:`format_time_ms` for a stream of mostly increasing timestamps (a dump's hot path): the date part
    is formatted once per second."""

    def __init__(self) -> None:
        self.second = -1
        self.text = ""

    def __call__(self, ms: int) -> str:
        if ms < 0:
            return str(ms)
        second, milli = divmod(ms, 1000)
        if second != self.second:
            text = format_time_ms(second * 1000)
            if not text.endswith(".000Z"):
                return format_time_ms(ms)
            self.second, self.text = second, text[:-4]
        return f"{self.text}{milli:03d}Z"
