"""The kept schema files (``kafkatool/decoders/schemas/<version>/<artifact>/<path>``) are byte for byte the entries
of Kafka's jars, resolved by Maven into the test cache; and no definition of the families kafkatool keeps is
missing. Skipped in one line without Java and Maven, failing under CI=true (``kraft_broker.require_jvm``)."""

from __future__ import annotations

import zipfile
from collections import defaultdict

import pytest

from kafkatool.decoders.schema import kafka_versions, schema_files
from tests.metadata.kraft_broker import jar_of, require_jvm

# Which entries of each jar kafkatool keeps (every other definition in those jars belongs to something else).
FAMILIES = {
    "kafka-metadata": lambda name: name.startswith("common/metadata/") and name.endswith(".json"),
    "kafka-clients": lambda name: name in {f"common/message/{n}.json" for n in (
        "LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord", "VotersRecord")},
    "kafka-storage": lambda name: name.startswith("message/Remote") and name.endswith(".json"),
    "kafka-share-coordinator": lambda name: name.startswith("common/message/Share") and name.endswith(".json"),
}


@pytest.mark.parametrize("kafka_version", kafka_versions())
def test_kept_schemas_equal_the_jars(kafka_version: str) -> None:
    require_jvm()
    kept: dict[str, dict[str, str]] = defaultdict(dict)
    for artifact, path, text in schema_files(kafka_version):
        kept[artifact][path] = text
    assert set(kept) <= set(FAMILIES)
    for artifact, files in kept.items():
        with zipfile.ZipFile(jar_of(kafka_version, artifact)) as jar:
            in_jar = {n for n in jar.namelist() if FAMILIES[artifact](n)}
            assert set(files) == in_jar, f"{artifact} {kafka_version}: kept {sorted(set(files) ^ in_jar)} differ"
            for path, text in files.items():
                assert jar.read(path).decode("utf-8") == text, f"{artifact} {kafka_version}: {path} drifted"
