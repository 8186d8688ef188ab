"""Kafka's JSON message definitions, read from the files Kafka ships, as :mod:`.message` specs.

Kafka describes every record it writes to its internal logs in JSON files (``metadata/src/main/resources/
common/metadata/*.json`` for the KRaft metadata records, ``clients/src/main/resources/common/message/*.json``
for the KRaft control records, ``storage/src/main/resources/message/*.json`` for the remote log metadata,
``share-coordinator/src/main/resources/common/message/*.json`` for share group state) and generates a Java
class per file. kafkatool keeps copies of those files, taken from Kafka's jars (``schemas/<kafka version>/
<artifact>/<path in the jar>``, see ``schemas/README.md``), and reads them here the way Kafka's generator does
(``generator/src/main/java/org/apache/kafka/message/{MessageSpec,FieldSpec,StructSpec}.java``, 3.9):

* the files are JSON with ``//`` comments (the generator's Jackson mapper allows them);
* ``type`` is a primitive, ``[]<type>`` an array, or a struct name: a struct is defined inline by the
  field's ``fields`` or in the top-level ``commonStructs``;
* ``versions``, ``nullableVersions``, ``taggedVersions`` are ranges (``"0+"``, ``"1-3"``, ``"none"``);
  ``tag`` is a number or a numeric string (3.9's RegisterBrokerRecord writes ``"0"``);
* ``default`` is a string: a number (decimal or ``0x`` hex) for integers, ``true``/``false``, a float64,
  a string literal, ``null`` for a nullable field, a ``Uuid`` string; absent: the type's zero value.

Everything else in a definition (``about``, ``mapKey``, ``entityType``, ``ignorable``, ``zeroCopy``) does not
change the bytes or the JSON and is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

from kafkatool.decoders.message import (
    NOT_GIVEN,
    PRIMITIVES,
    ArrayOf,
    FieldSpec,
    FieldType,
    MessageSpec,
    StructSpec,
    Versions,
    uuid_from_string,
)

_INT_TYPES = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


class SchemaError(ValueError):
    """A message definition kafkatool cannot read (a bug in a kept schema file, or a hand-written one)."""


@dataclass(frozen=True, slots=True)
class Definition:
    """One JSON message definition: the spec the engine reads, plus its ``apiKey`` and ``type``."""

    spec: MessageSpec
    api_key: int | None
    kind: str  # "metadata", "data", "coordinator-key", "coordinator-value", ...
    source: str  # <artifact>:<path inside the jar>, e.g. kafka-metadata:common/metadata/TopicRecord.json

    @property
    def artifact(self) -> str:
        return self.source.partition(":")[0]


def strip_comments(text: str) -> str:
    """The JSON text without ``//`` line comments (and ``/* */`` blocks), strings left alone."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _versions(value: Any, what: str) -> Versions:
    if value is None:
        return Versions.parse("none")
    if not isinstance(value, str) or not re.fullmatch(r"none|\d+\+?|\d+-\d+", value):
        raise SchemaError(f"{what}: not a version range: {value!r}")
    return Versions.parse(value)


def _default(t: FieldType, raw: Any, nullable: Versions, what: str) -> Any:
    """``FieldSpec``'s default: the typed value of the definition's ``default`` string."""
    if raw is None:
        return NOT_GIVEN
    s = str(raw)
    if isinstance(t, (ArrayOf, StructSpec)) or t == "bytes":
        if s == "null":
            if nullable.lo > nullable.hi:
                raise SchemaError(f"{what}: default null on a field that is never nullable")
            return None
        if s not in ("",):
            raise SchemaError(f"{what}: a {t if isinstance(t, str) else 'array or struct'} default can only be "
                              f"null or empty, not {s!r}")
        return NOT_GIVEN
    if t in _INT_TYPES:
        if s == "":
            return 0
        neg = s.startswith("-")
        body = s[1:] if neg else s
        try:
            v = int(body[2:], 16) if body.lower().startswith("0x") else int(body, 10)
        except ValueError:
            raise SchemaError(f"{what}: not an integer default: {s!r}") from None
        return -v if neg else v
    if t == "bool":
        if s not in ("", "true", "false"):
            raise SchemaError(f"{what}: not a bool default: {s!r}")
        return s == "true"
    if t == "float64":
        return float(s) if s else 0.0
    if t == "string":
        if s == "null":
            return None
        return s
    if t == "uuid":
        return bytes(16) if s == "" else uuid_from_string(s)
    raise SchemaError(f"{what}: unknown type {t!r}")


class _Builder:
    def __init__(self, doc: Mapping[str, Any], source: str) -> None:
        self.doc = doc
        self.source = source
        self.common: dict[str, Mapping[str, Any]] = {}
        self.built: dict[str, StructSpec] = {}
        for s in doc.get("commonStructs", ()) or ():
            self.common[s["name"]] = s

    def struct(self, name: str, fields: Any, where: str) -> StructSpec:
        if not isinstance(fields, list):
            raise SchemaError(f"{self.source}: {where}: 'fields' is not a list")
        return StructSpec(name, tuple(self.field(f, f"{where}.{f.get('name', '?')}") for f in fields))

    def named_struct(self, name: str, inline: Any, where: str) -> StructSpec:
        if inline is not None:
            return self.struct(name, inline, where)
        if name in self.built:
            return self.built[name]
        common = self.common.get(name)
        if common is None:
            raise SchemaError(f"{self.source}: {where}: unknown type {name!r} (no inline fields, no common struct)")
        spec = self.struct(name, common.get("fields"), name)
        self.built[name] = spec
        return spec

    def type_of(self, raw: str, inline: Any, where: str) -> FieldType:
        if raw.startswith("[]"):
            return ArrayOf(self.type_of(raw[2:], inline, where))
        if raw in PRIMITIVES:
            if inline is not None:
                raise SchemaError(f"{self.source}: {where}: a {raw} field has 'fields'")
            return raw
        if raw == "records":
            raise SchemaError(f"{self.source}: {where}: 'records' fields are not supported")
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", raw):
            raise SchemaError(f"{self.source}: {where}: unknown type {raw!r}")
        return self.named_struct(raw, inline, where)

    def field(self, f: Any, where: str) -> FieldSpec:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not isinstance(f.get("type"), str):
            raise SchemaError(f"{self.source}: {where}: a field needs a name and a type")
        t = self.type_of(f["type"], f.get("fields"), where)
        versions = _versions(f.get("versions"), f"{self.source}: {where}: versions")
        nullable = _versions(f.get("nullableVersions"), f"{self.source}: {where}: nullableVersions")
        tagged = _versions(f.get("taggedVersions"), f"{self.source}: {where}: taggedVersions")
        tag = f.get("tag")
        if tag is not None:
            try:
                tag = int(tag)
            except (TypeError, ValueError):
                raise SchemaError(f"{self.source}: {where}: tag {tag!r} is not a number") from None
        if (tag is None) != (tagged.lo > tagged.hi):
            raise SchemaError(f"{self.source}: {where}: 'tag' and 'taggedVersions' go together")
        default = _default(t, f.get("default"), nullable, f"{self.source}: {where}")
        return FieldSpec(f["name"], t, versions, nullable, tagged, tag, default)

    def definition(self) -> Definition:
        doc = self.doc
        name = doc.get("name")
        if not isinstance(name, str):
            raise SchemaError(f"{self.source}: no name")
        valid = _versions(doc.get("validVersions"), f"{self.source}: validVersions")
        flexible = _versions(doc.get("flexibleVersions", "none"), f"{self.source}: flexibleVersions")
        body = self.struct(name, doc.get("fields"), name)
        api_key = doc.get("apiKey")
        if api_key is not None and not isinstance(api_key, int):
            raise SchemaError(f"{self.source}: apiKey {api_key!r} is not a number")
        return Definition(MessageSpec(name, valid, flexible, body), api_key, str(doc.get("type", "")), self.source)


def parse_definition(text: str, source: str = "<definition>") -> Definition:
    """A Kafka JSON message definition (comments allowed) as a :class:`Definition`; raises :class:`SchemaError`."""
    try:
        doc = json.loads(strip_comments(text))
    except ValueError as e:
        raise SchemaError(f"{source}: not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise SchemaError(f"{source}: not a JSON object")
    return _Builder(doc, source).definition()


# ---------------------------------------------------------------------------------------------- kept schemas


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


@cache
def kafka_versions() -> tuple[str, ...]:
    """The Kafka versions whose schema files kafkatool keeps, oldest first (e.g. ``("3.9.2", "4.4.0")``)."""
    root = resources.files("kafkatool.decoders").joinpath("schemas")
    names = [p.name for p in root.iterdir() if p.is_dir() and re.fullmatch(r"\d+\.\d+\.\d+", p.name)]
    return tuple(sorted(names, key=_version_key))


def resolve_kafka_version(version: str | None) -> str:
    """The kept schema version for ``version``: None is the newest; ``"3.9"`` is the newest 3.9.x kept."""
    kept = kafka_versions()
    if version is None:
        return kept[-1]
    if version in kept:
        return version
    matches = [v for v in kept if v.startswith(version.rstrip(".") + ".")]
    if not matches:
        raise KeyError(version)
    return matches[-1]


def schema_files(kafka_version: str) -> Iterator[tuple[str, str, str]]:
    """(artifact, path in the jar, text) of every kept schema file of ``kafka_version``."""
    root = resources.files("kafkatool.decoders").joinpath("schemas", kafka_version)

    def walk(node: Any, parts: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.is_dir():
                yield from walk(child, (*parts, child.name))
            elif child.name.endswith(".json"):
                yield (*parts, child.name), child

    for parts, node in walk(root, ()):
        yield parts[0], str(PurePosixPath(*parts[1:])), node.read_text(encoding="utf-8")


@cache
def definitions(kafka_version: str) -> dict[str, Definition]:
    """Every kept definition of ``kafka_version`` by message name."""
    out: dict[str, Definition] = {}
    for artifact, path, text in schema_files(kafka_version):
        d = parse_definition(text, f"{artifact}:{path}")
        out[d.spec.name] = d
    return out
