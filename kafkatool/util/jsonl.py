"""JSON lines as every command writes them (its JSON format): one compact object per line, ``"type"`` and
``"schema"`` first, non-ASCII text kept as UTF-8, and U+2028/U+2029 escaped.

U+2028 (LINE SEPARATOR) and U+2029 (PARAGRAPH SEPARATOR) are legal unescaped inside JSON strings, but
line-splitting consumers (Python's ``str.splitlines``, JavaScript before ES2019, many log shippers) treat
them as line ends and cut the object in two. Escaped as ``\\u2028``/``\\u2029`` they decode to the same
string, so the output stays one object per ``\\n``-terminated line for every reader.
"""

from __future__ import annotations

import json
from typing import Any

from kafkatool import JSON_SCHEMA_VERSION

_LS, _PS = "\u2028", "\u2029"


def escape_separators(text: str) -> str:
    """``text`` (serialised JSON) with U+2028/U+2029 written as escapes; a no-op (and cheap) for other text."""
    if _LS in text or _PS in text:
        return text.replace(_LS, "\\u2028").replace(_PS, "\\u2029")
    return text


def json_line(obj: dict[str, Any]) -> str:
    """One JSON-lines object with the schema version (no newline); keys keep their insertion order."""
    if "schema" not in obj:
        obj = {"type": obj.get("type"), "schema": JSON_SCHEMA_VERSION,
               **{k: v for k, v in obj.items() if k != "type"}}
    return escape_separators(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))
