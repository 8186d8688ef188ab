"""Kafka's JSON message definitions read by ``decoders.schema``, and every KRaft metadata record type at every
version through the engine: written, read back, printed as JSON."""

from __future__ import annotations

import json

import pytest

from kafkatool.decoders import kafka_versions, metadata_types, read_metadata_record, record_type_name
from kafkatool.decoders.cluster_metadata import dumplog_json, write_framed
from kafkatool.decoders.message import ArrayOf, StructSpec, Versions, java_double, type_default
from kafkatool.decoders.schema import SchemaError, definitions, parse_definition, strip_comments


def test_comments_are_stripped_outside_strings() -> None:
    text = '// head\n{ "a": "x // not a comment", /* block */ "b": 1 // tail\n}'
    assert json.loads(strip_comments(text)) == {"a": "x // not a comment", "b": 1}


def test_definition_with_common_structs_tags_and_defaults() -> None:
    d = parse_definition('''{
      "apiKey": 7, "type": "metadata", "name": "DemoRecord", "validVersions": "0-2", "flexibleVersions": "1+",
      "fields": [
        { "name": "Id", "type": "int32", "versions": "0+", "default": "-1" },
        { "name": "Mask", "type": "int64", "versions": "0+", "default": "0x10" },
        { "name": "Items", "type": "[]Item", "versions": "0+" },
        { "name": "Note", "type": "string", "versions": "1+", "nullableVersions": "1+", "default": "null",
          "taggedVersions": "1+", "tag": "3" },
        { "name": "Ratio", "type": "float64", "versions": "2+", "default": "0.5" }
      ],
      "commonStructs": [ { "name": "Item", "versions": "0+", "fields": [
        { "name": "Key", "type": "string", "versions": "0+" } ] } ]
    }''', "demo")
    spec = d.spec
    assert (d.api_key, d.kind, spec.valid.hi, spec.flexible.lo) == (7, "metadata", 2, 1)
    f = {x.name: x for x in spec.body.fields}
    assert (f["Id"].default, f["Mask"].default, f["Note"].default, f["Note"].tag, f["Ratio"].default) == \
        (-1, 16, None, 3, 0.5)
    assert isinstance(f["Items"].type, ArrayOf) and isinstance(f["Items"].type.element, StructSpec)
    assert type_default(f["Items"].type) == []


@pytest.mark.parametrize("text, message", [
    ('{"name": "X", "validVersions": "0", "fields": [{"name": "A", "type": "Nope", "versions": "0+"}]}',
     "unknown type 'Nope'"),
    ('{"name": "X", "validVersions": "0+x", "fields": []}', "not a version range"),
    ('{"name": "X", "validVersions": "0", "fields": [{"name": "A", "type": "int8", "versions": "0+", '
     '"default": "abc"}]}', "not an integer default"),
    ('{"name": "X", "validVersions": "0", "fields": [{"name": "A", "type": "int8", "versions": "0+", '
     '"tag": 1}]}', "'tag' and 'taggedVersions' go together"),
    ("[1, 2]", "not a JSON object"),
])
def test_bad_definitions_are_schema_errors(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        parse_definition(text)


def test_kept_versions_and_record_types() -> None:
    assert kafka_versions() == ("3.9.2", "4.4.0")
    old, new = metadata_types("3.9"), metadata_types("4.4.0")
    assert set(old) < set(new)  # 4.x only adds types (ClearElrRecord 28, UnregisterControllerRecord 29)
    assert {record_type_name(new[k].spec.name) for k in set(new) - set(old)} == {
        "CLEAR_ELR_RECORD", "UNREGISTER_CONTROLLER_RECORD"}
    assert record_type_name(new[21].spec.name) == "ZK_MIGRATION_STATE_RECORD"
    for v in kafka_versions():
        names = set(definitions(v))
        assert {"LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord",
                "VotersRecord", "RemoteLogSegmentMetadataRecord"} <= names


def _sample(t: object, version: int, valid: Versions) -> object:
    """A non-default value of every type, so that every field of the version (tagged ones too) is written."""
    if isinstance(t, ArrayOf):
        return [_sample(t.element, version, valid), _sample(t.element, version, valid)]
    if isinstance(t, StructSpec):
        return {f.name: _sample(f.type, version, valid) for f in t.fields if f.versions.present(version, valid)}
    return {"bool": True, "int8": -3, "int16": 300, "uint16": 65000, "int32": 70000, "uint32": 4000000000,
            "int64": 1 << 40, "float64": 2.5, "uuid": bytes(range(16)), "string": "é\"x\n", "bytes": b"\x00\xff"}[
        t]  # type: ignore[index]


@pytest.mark.parametrize("kafka_version", ["3.9.2", "4.4.0"])
def test_every_metadata_record_type_and_version_round_trips(kafka_version: str) -> None:
    n = 0
    for api_key, d in metadata_types(kafka_version).items():
        for version in range(d.spec.valid.lo, d.spec.valid.hi + 1):
            values = _sample(d.spec.body, version, d.spec.valid)
            assert isinstance(values, dict)
            raw = write_framed(d, values, version)
            m = read_metadata_record(raw, kafka_version)
            assert (m.api_key, m.version, m.notes) == (api_key, version, ())
            doc = json.loads(dumplog_json(m))
            assert doc["type"] == record_type_name(d.spec.name) and doc["version"] == version
            present = [f for f in d.spec.body.fields if f.versions.present(version, d.spec.valid)]
            assert list(doc["data"]) == [f.json_name for f in present]
            n += 1
    assert n == sum(d.spec.valid.hi - d.spec.valid.lo + 1 for d in metadata_types(kafka_version).values()) > 30


def test_java_double_to_string() -> None:
    assert [java_double(v) for v in (1048576.0, 1e7, 0.001, 1e-4, 25.5, -0.0, 1.0e21)] == \
        ["1048576.0", "1.0E7", "0.001", "1.0E-4", "25.5", "-0.0", "1.0E21"]
