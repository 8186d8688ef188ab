"""Kafka's message-definition types, read, written and printed the way Kafka's generated classes do.

Kafka describes its coordinator records (``__consumer_offsets``, ``__transaction_state``) and the consumer
embedded protocol in JSON message definitions; ``generator/`` turns each into a Java class whose ``read``
/``write`` and a ``*JsonConverter.write``. This module is a small interpreter for the same definitions,
transcribed into Python tables (``offsets.py``, ``transactions.py``), reproducing (3.9 generator):

* wire types: int8/16/32/64, uint16/uint32, float64, bool, uuid, string, bytes, arrays of those and of
  structs, structs; ``nullableVersions``; ``flexibleVersions`` switch strings/bytes/arrays to the
  compact (unsigned varint length + 1) forms and add a tagged-field section to every struct;
* reading (``MessageDataGenerator.generateClassReader``): fields absent from a version or tagged take
  their default; a non-nullable null, a string longer than 0x7fff, an array longer than the bytes left,
  a short buffer fail with the exact message of the Java reader (``BufferUnderflowException`` has none:
  Java prints ``null``); a nested struct read at a version above the message's highest throws
  ``Can't read version V of Struct``; the top-level message has no version check; unknown tags are skipped,
  known ones are read without checking their declared size;
* writing: tagged fields only when they differ from their default, in tag order; KIP-893 nullable
  structs (int8 -1/1 marker, or a varint 0/1 marker when tagged);
* JSON (``JsonConverterGenerator`` + Jackson's ``JsonNode.toString``): camelCase names in schema order,
  only fields present in the version, tagged fields only when not default, int64 as numbers, bytes as
  standard base64, uuid as Kafka's base64url ``Uuid.toString``, Jackson's string escapes.
"""

from __future__ import annotations

import base64
import decimal
import math
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_MAX_VERSION = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """A closed version range; ``Versions.parse("2+")``; an empty range has ``lo > hi``."""

    lo: int
    hi: int

    @staticmethod
    def parse(spec: str) -> Versions:
        if spec == "none":
            return NONE
        if spec.endswith("+"):
            return Versions(int(spec[:-1]), _MAX_VERSION)
        lo, _, hi = spec.partition("-")
        return Versions(int(lo), int(hi or lo))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def present(self, version: int, valid: Versions) -> bool:
        """Whether generated code treats ``version`` as in this range, as ``VersionConditional`` emits it.

        Only bounds that fall inside the message's ``validVersions`` are tested, so a "0+" field is read
        at version -1 too, and "1+" at 7 of a 0-4 message (Kafka reads out-of-range versions that way).
        """
        if self.lo > self.hi or self.lo > valid.hi or self.hi < valid.lo:
            return False
        return (self.lo <= valid.lo or version >= self.lo) and (self.hi >= valid.hi or version <= self.hi)


NONE = Versions(1, 0)
ALL = Versions(0, _MAX_VERSION)

PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid",
                        "string", "bytes"})
_FIXED = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
          "float64": 8, "uuid": 16}
_STRUCTS = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
            "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q"),
            "float64": struct.Struct(">d")}
_UNSET: Any = object()
NOT_GIVEN: Any = _UNSET  # FieldSpec.default when the definition gives none (the type's zero value applies)


@dataclass(frozen=True, slots=True)
class ArrayOf:
    element: FieldType


@dataclass(frozen=True, slots=True)
class StructSpec:
    """A struct: the message body, an inline struct or a ``commonStructs`` entry (``name`` is the Java class)."""

    name: str
    fields: tuple[FieldSpec, ...]


FieldType = str | ArrayOf | StructSpec


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    type: FieldType
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: Any = _UNSET  # None is the JSON definition's "default": "null"

    @property
    def json_name(self) -> str:
        """``FieldSpec.camelCaseName``: the definition's name with its first letter lower-cased."""
        return self.name[:1].lower() + self.name[1:]

    def default_value(self) -> Any:
        if self.default is not _UNSET:
            return self.default
        return type_default(self.type)


def type_default(t: FieldType) -> Any:
    """``FieldSpec.fieldDefault`` when the definition gives none: 0, false, "", empty, zero uuid, a default struct."""
    if isinstance(t, ArrayOf):
        return []
    if isinstance(t, StructSpec):
        return {f.name: f.default_value() for f in t.fields}
    return {"bool": False, "string": "", "bytes": b"", "uuid": bytes(16), "float64": 0.0}.get(t, 0)


def F(name: str, type_: FieldType, versions: str, *, nullable: str = "none", tagged: str = "none",
      tag: int | None = None, default: Any = _UNSET) -> FieldSpec:
    """Shorthand for transcribing a JSON definition's field line."""
    return FieldSpec(name, type_, Versions.parse(versions), Versions.parse(nullable), Versions.parse(tagged),
                     tag, default)


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A top-level definition: ``validVersions``, ``flexibleVersions`` and the body."""

    name: str
    valid: Versions
    flexible: Versions
    body: StructSpec = field(repr=False)

    @staticmethod
    def of(name: str, valid: str, flexible: str, fields: Sequence[FieldSpec]) -> MessageSpec:
        return MessageSpec(name, Versions.parse(valid), Versions.parse(flexible), StructSpec(name, tuple(fields)))


class MessageError(Exception):
    """A Java ``RuntimeException`` from a generated reader; ``str()`` is its ``getMessage()``."""

    def __init__(self, java_message: str | None) -> None:
        super().__init__(java_message)
        self.java_message = java_message
        self.position: int | None = None  # where in the buffer the failing read started (set by read_message)

    def __str__(self) -> str:
        return "null" if self.java_message is None else self.java_message


# ---------------------------------------------------------------------------------------------- reading


class _Reader:
    """``ByteBufferAccessor`` over a bytes-like buffer."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, n: int) -> bytes:
        if n < 0:
            raise MessageError(str(n))  # Java: new byte[n] -> NegativeArraySizeException("<n>")
        if n > self.end - self.pos:
            raise MessageError(None)  # BufferUnderflowException
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def fixed(self, kind: str) -> Any:
        s = _STRUCTS[kind]
        if s.size > self.end - self.pos:
            raise MessageError(None)
        value = s.unpack_from(self.buf, self.pos)[0]
        self.pos += s.size
        return value

    def read_array(self, size: int) -> bytes:
        """``ByteBufferAccessor.readArray``: the only reader with its own message."""
        left = self.end - self.pos
        if size > left:
            raise MessageError(f"Error reading byte array of {size} byte(s): only {left} byte(s) available")
        return self.take(size)

    def uvarint(self) -> int:
        """``ByteUtils.readUnsignedVarint`` (3.9's unrolled form): at most 5 bytes, wrapping to a Java int."""
        result = 0
        for i in range(5):
            if self.pos >= self.end:
                raise MessageError(None)
            b = self.buf[self.pos]
            self.pos += 1
            if i == 4:
                # The 5th byte is shifted as a signed Java byte; a set high bit is the error.
                result |= (b - 256 if b >= 0x80 else b) << 28
                if b >= 0x80:
                    raise MessageError("Varint is too long, the most significant bit in the 5th byte is set, "
                                       f"converted value: {result & 0xFFFFFFFF:x}")
                return _int32(result)
            result |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                return _int32(result)
        raise AssertionError("unreachable")


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]?")


def java_utf8(data: bytes) -> str:
    """``new String(bytes, UTF_8)``: malformed input becomes U+FFFD, one per malformed sequence as Java counts."""
    if b"\xed" in data:
        # Java takes a UTF-8-encoded surrogate (ED A0-BF, plus a continuation byte if one follows) as one
        # malformed sequence; Python replaces each byte. Each becomes 0xFF: one U+FFFD under Python's "replace",
        # which counts every other malformed sequence as Java does. (ED is never a continuation byte, and
        # Python ends any error before an ED A0-BF, so nothing around it changes.) A codec error handler gives
        # the same text ~6x slower on binary values.
        data = _ENCODED_SURROGATE.sub(b"\xff", data)
    return data.decode("utf-8", "replace")


def java_string_hash(s: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as a Java int (32-bit wrap-around)."""
    data = s.encode("utf-16-be")
    h = 0
    for unit in struct.unpack(f">{len(data) // 2}H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@dataclass(frozen=True, slots=True)
class TagNote:
    """Something in a tagged-field section Kafka's reader passes over silently: an unknown tag (skipped), or a
    known tag whose declared size is not the size its value took (Kafka reads the value and never checks)."""

    position: int  # of the tag's varint in the buffer
    message: str


class _MessageReader:
    def __init__(self, spec: MessageSpec, version: int, notes: list[TagNote] | None = None) -> None:
        self.spec = spec
        self.version = version
        self.valid = spec.valid
        self.flexible = spec.flexible.present(version, spec.valid)
        self.notes = notes

    def has(self, versions: Versions) -> bool:
        return versions.present(self.version, self.valid)

    def read_struct(self, r: _Reader, s: StructSpec, nested: bool) -> dict[str, Any]:
        v = self.version
        if nested and v > self.spec.valid.hi:
            raise MessageError(f"Can't read version {v} of {s.name}")
        out: dict[str, Any] = {}
        for f in s.fields:
            if self.has(f.versions) and not self.has(f.tagged):
                out[f.name] = self.read_field(r, f, tagged=False)
            else:
                out[f.name] = f.default_value()
        if self.flexible:
            by_tag = {f.tag: f for f in s.fields if self.has(f.versions) and self.has(f.tagged)}
            notes = self.notes
            for _ in range(r.uvarint()):
                at = r.pos
                tag = r.uvarint()
                size = r.uvarint()
                known = by_tag.get(tag)
                if known is None:
                    r.read_array(size)  # readUnknownTaggedField
                    if notes is not None:
                        notes.append(TagNote(at, f"unknown tagged field {tag} ({size} bytes) in {s.name} "
                                                 f"version {v}, skipped"))
                else:
                    start = r.pos
                    out[known.name] = self.read_field(r, known, tagged=True)
                    if notes is not None and r.pos - start != size:
                        notes.append(TagNote(at, f"tagged field {known.name} (tag {tag}) of {s.name} declares "
                                                 f"{size} bytes but its value took {r.pos - start}"))
        return out

    def read_field(self, r: _Reader, f: FieldSpec, tagged: bool) -> Any:
        t = f.type
        if isinstance(t, StructSpec):
            if self.has(f.nullable):
                if (r.uvarint() <= 0) if tagged else (r.fixed("int8") < 0):
                    return None
            return self.read_struct(r, t, nested=True)
        if isinstance(t, ArrayOf) or t in ("string", "bytes"):
            return self.read_variable(r, f.json_name, t, self.has(f.nullable))
        return self.read_primitive(r, t)

    def read_primitive(self, r: _Reader, t: str) -> Any:
        if t == "bool":
            return r.fixed("int8") != 0
        if t == "uuid":
            return r.take(16)
        return r.fixed(t)

    def read_variable(self, r: _Reader, name: str, t: FieldType, nullable: bool) -> Any:
        if self.flexible:
            length = _int32(r.uvarint() - 1)
        elif t == "string":
            length = r.fixed("int16")
        else:
            length = r.fixed("int32")
        if length < 0:
            if nullable:
                return None
            raise MessageError(f"non-nullable field {name} was serialized as null")
        if t == "string":
            if length > 0x7FFF:
                raise MessageError(f"string field {name} had invalid length {length}")
            return java_utf8(r.read_array(length))
        if t == "bytes":
            return r.read_array(length)
        assert isinstance(t, ArrayOf)
        if length > r.remaining():
            raise MessageError(f"Tried to allocate a collection of size {length}, but there are only "
                               f"{r.remaining()} bytes remaining.")
        el = t.element
        if isinstance(el, StructSpec):
            return [self.read_struct(r, el, nested=True) for _ in range(length)]
        if el in ("string", "bytes"):
            return [self.read_variable(r, f"{name} element", el, False) for _ in range(length)]
        assert isinstance(el, str)
        return [self.read_primitive(r, el) for _ in range(length)]


def read_message(spec: MessageSpec, data: bytes | memoryview, version: int, pos: int = 0,
                 notes: list[TagNote] | None = None) -> tuple[dict[str, Any], int]:
    """Read ``spec`` at ``version`` from ``data[pos:]`` as ``new X(readable, version)`` does.

    Returns the field values (keyed by definition name, in definition order) and the position after the
    message; trailing bytes are left alone, as Kafka does. Raises :class:`MessageError` (its ``position`` is
    where the failing read started). ``notes``, when given, collects what Kafka skips silently in tagged
    fields (:class:`TagNote`).
    """
    r = _Reader(data, pos)
    try:
        values = _MessageReader(spec, version, notes).read_struct(r, spec.body, nested=False)
    except MessageError as e:
        if e.position is None:
            e.position = r.pos
        raise
    return values, r.pos


# ---------------------------------------------------------------------------------------------- writing


class _Writer:
    def __init__(self, spec: MessageSpec, version: int) -> None:
        self.version = version
        self.valid = spec.valid
        self.flexible = spec.flexible.present(version, spec.valid)

    def has(self, versions: Versions) -> bool:
        return versions.present(self.version, self.valid)

    def struct(self, s: StructSpec, values: Mapping[str, Any]) -> bytes:
        v = self.version
        out = bytearray()
        tagged: list[tuple[int, bytes]] = []
        for f in s.fields:
            value = values.get(f.name, _UNSET)
            if value is _UNSET:
                value = f.default_value()
            if not self.has(f.versions):
                if value != f.default_value():
                    raise ValueError(f"{s.name}.{f.name} has a non-default value but is not in version {v}")
                continue
            if self.has(f.tagged):
                if f.tag is None:
                    raise ValueError(f"{s.name}.{f.name} is tagged without a tag")
                if value != f.default_value():
                    body = self.field(f, value, tagged=True)
                    tagged.append((f.tag, body))
                continue
            out += self.field(f, value, tagged=False)
        if self.flexible:
            out += uvarint(len(tagged))
            for tag, body in sorted(tagged):
                out += uvarint(tag) + uvarint(len(body)) + body
        return bytes(out)

    def field(self, f: FieldSpec, value: Any, tagged: bool) -> bytes:
        t = f.type
        nullable = self.has(f.nullable)
        if isinstance(t, StructSpec):
            if value is None:
                if not nullable:
                    raise ValueError(f"non-nullable struct {f.name} is null")
                return uvarint(0) if tagged else b"\xff"
            body = self.struct(t, value)
            if nullable:
                return (uvarint(1) if tagged else b"\x01") + body
            return body
        if isinstance(t, ArrayOf) or t in ("string", "bytes"):
            return self.variable(f.name, t, value, nullable)
        return self.primitive(t, value)

    def primitive(self, t: str, value: Any) -> bytes:
        if t == "bool":
            return b"\x01" if value else b"\x00"
        if t == "uuid":
            if len(value) != 16:
                raise ValueError("a uuid is 16 bytes")
            return bytes(value)
        return _STRUCTS[t].pack(value)

    def variable(self, name: str, t: FieldType, value: Any, nullable: bool) -> bytes:
        if value is None:
            if not nullable:
                raise ValueError(f"non-nullable field {name} is null")
            if self.flexible:
                return uvarint(0)
            return b"\xff\xff" if t == "string" else b"\xff\xff\xff\xff"
        if t == "string":
            payload = str(value).encode("utf-8")
            if len(payload) > 0x7FFF:
                raise ValueError(f"string field {name} is longer than 32767 bytes")
            return self.length(len(payload), short=True) + payload
        if t == "bytes":
            return self.length(len(value), short=False) + bytes(value)
        assert isinstance(t, ArrayOf)
        out = bytearray(self.length(len(value), short=False))
        el = t.element
        for item in value:
            if isinstance(el, StructSpec):
                out += self.struct(el, item)
            elif el in ("string", "bytes"):
                out += self.variable(name, el, item, False)
            else:
                assert isinstance(el, str)
                out += self.primitive(el, item)
        return bytes(out)

    def length(self, n: int, short: bool) -> bytes:
        if self.flexible:
            return uvarint(n + 1)
        return struct.pack(">h" if short else ">i", n)


def uvarint(n: int) -> bytes:
    """``ByteUtils.writeUnsignedVarint``."""
    n &= 0xFFFFFFFF
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_message(spec: MessageSpec, values: Mapping[str, Any], version: int) -> bytes:
    """Serialize ``values`` (definition names; missing fields take their default) as ``write`` does."""
    return _Writer(spec, version).struct(spec.body, values)


def version_prefixed(spec: MessageSpec, values: Mapping[str, Any], version: int) -> bytes:
    """``MessageUtil.toVersionPrefixedBytes``: int16 version, then the message."""
    return struct.pack(">h", version) + write_message(spec, values, version)


# ---------------------------------------------------------------------------------------------- JSON


def _jackson_escape(s: str) -> str:
    """Jackson's ``JsonGenerator`` string escapes: ", \\, \\b \\t \\n \\f \\r, other controls as \\u00XX."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append(_SHORT_ESCAPES.get(ch) or f"\\u{o:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def json_string(s: str | None) -> str:
    return "null" if s is None else _jackson_escape(s)


def uuid_to_string(raw: bytes) -> str:
    """``org.apache.kafka.common.Uuid.toString``: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_from_string(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return raw


JsonOverride = Callable[[FieldSpec, Any], "str | None"]


class _JsonWriter:
    def __init__(self, spec: MessageSpec, version: int, override: JsonOverride | None) -> None:
        self.version = version
        self.valid = spec.valid
        self.override = override

    def struct(self, s: StructSpec, values: Mapping[str, Any]) -> str:
        v, valid = self.version, self.valid
        parts = []
        for f in s.fields:
            if not f.versions.present(v, valid):
                continue
            value = values[f.name]
            if f.tagged.present(v, valid) and value == f.default_value():
                continue
            text = self.override(f, value) if self.override is not None else None
            if text is None:
                text = self.value(f.type, value)
            parts.append(_jackson_escape(f.json_name) + ":" + text)
        return "{" + ",".join(parts) + "}"

    def value(self, t: FieldType, value: Any) -> str:
        if value is None:
            return "null"
        if isinstance(t, StructSpec):
            return self.struct(t, value)
        if isinstance(t, ArrayOf):
            return "[" + ",".join(self.value(t.element, item) for item in value) + "]"
        if t == "string":
            return _jackson_escape(value)
        if t == "bytes":
            return '"' + base64.b64encode(value).decode("ascii") + '"'
        if t == "uuid":
            return '"' + uuid_to_string(value) + '"'
        if t == "bool":
            return "true" if value else "false"
        if t == "float64":
            return java_double_json(value)
        return str(int(value))


def to_json(spec: MessageSpec, values: Mapping[str, Any], version: int,
            override: JsonOverride | None = None) -> str:
    """``<Message>JsonConverter.write(message, version).toString()``.

    ``override(field, value)`` may return replacement JSON text for a field (DumpLogSegments swaps the
    consumer protocol bytes of GroupMetadataValue members for their decoded form), or None.
    """
    return _JsonWriter(spec, version, override).struct(spec.body, values)


def java_double(v: float) -> str:
    """``Double.toString``: plain decimals for 1e-3 <= |v| < 1e7 (at least one digit after the point), else
    ``d.dddE<n>``; the shortest digits that read back (Python's ``repr``, which JDK 19+ also prints; JDK 17
    gives a longer string for a few values such as 2.0E-3's neighbours, never for the quotas operators set)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    sign = "-" if v < 0 else ""
    digits_t = decimal.Decimal(repr(abs(v))).normalize().as_tuple()
    digits = "".join(map(str, digits_t.digits))
    exp = int(digits_t.exponent) + len(digits) - 1  # scientific exponent of the first digit
    if 1e-3 <= abs(v) < 1e7:
        if exp >= 0:
            whole = digits[:exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1:] or "0"
        else:
            whole = "0"
            frac = "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def java_double_json(v: float) -> str:
    """Jackson's ``DoubleNode`` text: ``Double.toString``, NaN and infinities quoted (QUOTE_NON_NUMERIC_NUMBERS)."""
    text = java_double(v)
    return f'"{text}"' if math.isnan(v) or math.isinf(v) else text
