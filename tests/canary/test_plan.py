"""``kafkatool canary plan``: every inventory category counted right (checked against an independent walk of the
same dir, ``tests/logdir_check.read_partition``), the client table, the fetch-simulated costs (checked against
``kafkatool fetch-sim``), the phases and the Kafka 4 leftovers."""

from __future__ import annotations

import json
import shutil
import struct
from collections import Counter
from pathlib import Path

import pytest

from kafkatool.canary.clients import capability, parse_clients
from kafkatool.canary.inventory import InventoryOptions, inventory_log_dir, legacy_message_as_v2_size
from kafkatool.errors import UsageError
from kafkatool.record.batch import ControlRecordType
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import build_batch
from tests.support.canary_dirs import mixed_dir
from tests.support.cli import run_cli
from tests.support.logdir_check import read_partition

CLIENTS = """\
java-client 0.10.2      # billing
librdkafka 0.9.5        # legacy C service
java-client 2.0.1       # reporting
java-client 3.7.0
"""


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mixed_dir(tmp_path_factory.mktemp("plan") / "logs")


@pytest.fixture(scope="module")
def plan_json(mixed: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    clients = tmp_path_factory.mktemp("clients") / "clients.txt"
    clients.write_text(CLIENTS)
    r = run_cli("canary", "plan", mixed, "--clients", clients, "--format", "json")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def _expected(path: Path) -> dict:
    """The categories, counted from tests/logdir_check's own walk (every batch CRC-checked and decoded)."""
    f = read_partition(path)
    data = [b for b in f.batches if b.control is None]
    formats: dict[tuple[int, str], list[int]] = {}
    for b in f.batches:
        d = formats.setdefault((b.magic, Codec(b.codec).label), [0, 0, 0])
        d[0] += 1
        d[1] += 0 if b.control is not None else len(b.offsets)
        d[2] += b.size
    ts = Counter({0: "CreateTime", 1: "LogAppendTime", -1: "NoTimestampType"}[b.timestamp_type] for b in f.batches)
    return {
        "batches": len(f.batches), "records": sum(len(b.offsets) for b in data),
        "bytes": sum(b.size for b in f.batches),
        "formats": {k: tuple(v) for k, v in formats.items()},
        "timestamp_types": dict(ts),
        "v0_records": sum(len(b.offsets) for b in data if b.magic == 0),
        "records_without_timestamp": sum(sum(1 for t in b.timestamps if t == -1) for b in data),
        "zstd": sum(1 for b in f.batches if b.codec == Codec.ZSTD),
        "transactional": (sum(1 for b in data if b.transactional),
                          sum(len(b.offsets) for b in data if b.transactional)),
        "idempotent": sum(1 for b in data if b.magic == 2 and b.producer_id >= 0 and not b.transactional),
        "control": dict(Counter(ControlRecordType(b.control).name for b in f.batches if b.control is not None)),
        "largest": max((b.size for b in f.batches), default=0),
        "legacy_bytes": sum(b.size for b in f.batches if b.magic < 2),
        "log_start": f.batches[0].offsets[0] if f.batches and f.batches[0].offsets else None,
        "log_end": f.log_end_offset,
    }


def test_plan_counts_every_category_like_an_independent_walk(mixed: Path, plan_json: list[dict]) -> None:
    parts = {f"{j['topic']}-{j['partition']}": j for j in plan_json if j["type"] == "partition"}
    dirs = sorted(p.name for p in mixed.iterdir() if p.is_dir())
    assert sorted(parts) == dirs
    for name, j in parts.items():
        e = _expected(mixed / name)
        assert (j["batches"], j["records"], j["bytes"]) == (e["batches"], e["records"], e["bytes"]), name
        got = {(f["magic"], f["codec"]): (f["batches"], f["records"], f["bytes"]) for f in j["formats"]}
        assert got == e["formats"], name
        assert {k: v["batches"] for k, v in j["timestamp_types"].items()} == e["timestamp_types"], name
        assert j["v0"]["records"] == e["v0_records"], name
        assert j["records_without_timestamp"] == e["records_without_timestamp"], name
        assert j["zstd"]["batches"] == e["zstd"], name
        assert (j["transactional"]["batches"], j["transactional"]["records"]) == e["transactional"], name
        assert j["idempotent"]["batches"] == e["idempotent"], name
        assert j["control_batches"] == e["control"], name
        assert j["largest_batch"]["bytes"] == e["largest"], name
        assert j["legacy"]["bytes"] == e["legacy_bytes"], name
        assert j["log_end_offset"] == e["log_end"], name
    # Every category is really there in this dir (the test would prove nothing on an empty one).
    s = next(j for j in plan_json if j["type"] == "summary")
    assert set(s["formats"]) >= {"v0-none", "v0-gzip", "v1-none", "v1-snappy", "v2-zstd", "v2-lz4"}
    assert s["v0"]["records"] > 0 and s["zstd"]["batches"] > 0 and s["transactional"]["batches"] > 0
    assert s["idempotent"]["batches"] > 0 and s["control_batches"]["COMMIT"] > 0 and s["control_batches"]["ABORT"] > 0
    assert set(s["timestamp_types"]) == {"CreateTime", "LogAppendTime", "NoTimestampType"}
    assert s["records"] == sum(j["records"] for j in parts.values())


def test_plan_counts_match_kafkatool_dump(mixed: Path, plan_json: list[dict]) -> None:
    """The same categories, counted from `kafkatool dump --deep --format json` of the same dir."""
    r = run_cli("dump", mixed, "--deep", "--format", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    agg: dict[str, dict] = {}
    cur: dict | None = None
    for line in r.stdout.split("\n")[:-1]:  # not splitlines(): values may hold U+2028, \x1c... (JSON keeps them raw)
        j = json.loads(line)
        if j["type"] == "batch":
            name = Path(j["path"]).parent.name
            a = agg.setdefault(name, {"formats": Counter(), "bytes": 0, "records": 0, "zstd": 0, "txn": 0,
                                      "idem": 0, "control": Counter(), "ts": Counter(), "no_ts": 0, "largest": 0})
            a["formats"][(j["magic"], j["codec"])] += 1
            a["bytes"] += j["size"]
            a["zstd"] += j["codec"] == "zstd"
            a["txn"] += j["is_transactional"] and not j["is_control"]
            a["idem"] += j["magic"] == 2 and j["producer_id"] >= 0 and not j["is_transactional"] and not j["is_control"]
            a["ts"][j["timestamp_type"]] += 1
            a["largest"] = max(a["largest"], j["size"])
            cur = j
            cur["_agg"] = a
        elif j["type"] == "record" and cur is not None:
            a = cur["_agg"]
            if cur["is_control"]:
                a["control"][j["control"]["type"]] += 1
            else:
                a["records"] += 1
                a["no_ts"] += j["timestamp"] == -1
    parts = {f"{j['topic']}-{j['partition']}": j for j in plan_json if j["type"] == "partition"}
    assert set(agg) == set(parts)
    for name, j in parts.items():
        a = agg[name]
        assert {(f["magic"], f["codec"]): f["batches"] for f in j["formats"]} == dict(a["formats"]), name
        assert (j["bytes"], j["records"], j["largest_batch"]["bytes"]) == (a["bytes"], a["records"], a["largest"]), name
        assert (j["zstd"]["batches"], j["transactional"]["batches"], j["idempotent"]["batches"]) == \
            (a["zstd"], a["txn"], a["idem"]), name
        assert j["control_batches"] == dict(a["control"]), name
        assert {k: v["batches"] for k, v in j["timestamp_types"].items()} == dict(a["ts"]), name
        assert j["records_without_timestamp"] == a["no_ts"], name


def test_plan_finds_compacted_topics_and_the_legacy_data_they_keep(plan_json: list[dict]) -> None:
    parts = {f"{j['topic']}-{j['partition']}": j for j in plan_json if j["type"] == "partition"}
    compacted = {n for n, j in parts.items() if j["compacted"]}
    assert compacted == {"__consumer_offsets-0", "__consumer_offsets-1", "__consumer_offsets-2", "legacy-compacted-0"}
    lc = parts["legacy-compacted-0"]
    assert any(e.startswith("cleaner-offset-checkpoint") for e in lc["compaction_evidence"])
    assert lc["offset_gaps"] > 0 and lc["legacy"]["bytes"] > 0
    s = next(j for j in plan_json if j["type"] == "summary")
    assert s["compacted_with_legacy"] == ["legacy-compacted-0"]
    k4 = {j["partition"]: j for j in plan_json if j["type"] == "kafka4"}
    assert set(k4) == {"legacy-events-0", "legacy-events-1", "sensors-2016-0", "sensors-2017-0", "legacy-compacted-0"}
    assert k4["legacy-compacted-0"]["compacted"] and "cleaner" in k4["legacy-compacted-0"]["fate"]
    assert "retention" in k4["sensors-2016-0"]["fate"]
    assert k4["sensors-2016-0"]["legacy_bytes"] == parts["sensors-2016-0"]["bytes"]


def test_compaction_evidence_without_a_checkpoint_and_declared(mixed: Path, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copytree(mixed / "legacy-compacted-0", d / "legacy-compacted-0")
    shutil.copytree(mixed / "sensors-2017-0", d / "sensors-2017-0")
    inv = inventory_log_dir(d)  # no cleaner-offset-checkpoint here: the gaps alone tell
    p = {x.name: x for x in inv.partitions}
    assert p["legacy-compacted-0"].compacted and p["legacy-compacted-0"].cleaned_to is None
    assert p["legacy-compacted-0"].compaction_evidence == [f"{p['legacy-compacted-0'].offset_gaps} offset gap(s) "
                                                           "inside the log"]
    assert not p["sensors-2017-0"].compacted
    inv = inventory_log_dir(d, InventoryOptions(compacted_topics=frozenset({"sensors-2017"})))
    assert [x.compaction_evidence for x in inv.partitions if x.topic == "sensors-2017"] == \
        [["declared compacted (by the operator)"]]


def test_max_message_bytes_per_topic_and_legacy_growth(mixed: Path) -> None:
    inv = inventory_log_dir(mixed / "sensors-2017-0", InventoryOptions(topic_max_message_bytes={"sensors-2017": 150}))
    (p,) = inv.partitions
    f = read_partition(mixed / "sensors-2017-0")
    assert p.oversized_batches == sum(1 for b in f.batches if b.size > 150)
    # Uncompressed v1 messages of 120-150 bytes become 61-byte-header v2 batches over the limit.
    grown = 0
    for b in f.batches:
        if b.codec == 0 and b.size <= 150 and legacy_message_as_v2_size(b.keys[0], b.values[0]) > 150:
            grown += 1
    assert grown > 0 and p.legacy_messages_over_limit_as_v2 == grown


def test_legacy_message_as_v2_size_is_the_built_batch_size() -> None:
    for key, value in ((None, None), (b"k", b"v" * 10), (b"key-1", b"x" * 200), (None, b"y" * 70000)):
        built = build_batch([(5, 1000, key, value, ())])
        assert legacy_message_as_v2_size(key, value) == len(built)


@pytest.mark.parametrize(("line", "fetch", "magic", "zstd"), [
    ("java-client 0.8.2", 0, 0, False), ("java-client 0.9.0.1", 1, 0, False), ("java-client 0.10.0.1", 2, 1, False),
    ("java-client 0.10.2", 3, 1, False), ("java-client 0.11.0.3", 5, 2, False), ("java-client 2.0.1", 8, 2, False),
    ("java-client 2.1.0", 10, 2, True), ("kafka-clients 3.9.1", 11, 2, True), ("librdkafka 0.8.6", 0, 0, False),
    ("librdkafka 0.9.5", 1, 0, False), ("librdkafka 0.9.5 api.version.request=true", 2, 1, False),
    ("librdkafka 0.11.6", 4, 2, False), ("librdkafka 1.3.0", 4, 2, False), ("librdkafka 1.5.0", 11, 2, True),
    ("fetch-version 3", 3, 1, False), ("fetch-version 12", 12, 2, True),
])
def test_client_table(line: str, fetch: int, magic: int, zstd: bool) -> None:
    (spec,) = parse_clients(line)
    cap = capability(spec)
    assert (cap.max_fetch_version, cap.max_magic, cap.reads_zstd) == (fetch, magic, zstd)
    assert cap.fetches_on_kafka4 == (fetch >= 4)


@pytest.mark.parametrize("line", ["kafka-python 1.4", "java-client", "java-client x.y", "fetch-version abc",
                                  "librdkafka 1.0 badoption", "java-client 0.7.0"])
def test_bad_client_lines_are_usage_errors(line: str, tmp_path: Path, mixed: Path) -> None:
    with pytest.raises(UsageError):
        parse_clients("java-client 3.0\n" + line)
    f = tmp_path / "c.txt"
    f.write_text(line + "\n")
    r = run_cli("canary", "plan", mixed / "orders-0", "--clients", f)
    assert r.returncode == 2 and "line 1" in r.stderr and "Traceback" not in r.stderr


def test_clients_and_their_down_conversion_costs(mixed: Path, plan_json: list[dict]) -> None:
    clients = {j["client"]: j for j in plan_json if j["type"] == "client"}
    parts = {f"{j['topic']}-{j['partition']}": j for j in plan_json if j["type"] == "partition"}
    old = clients["java-client 0.10.2"]
    assert (old["max_fetch_version"], old["max_magic"], old["needs_down_conversion"], old["breaks_on_kafka4"]) == \
        (3, 1, True, True)
    assert old["bytes_to_convert"] == sum(f["bytes"] for j in parts.values() for f in j["formats"] if f["magic"] > 1)
    assert clients["librdkafka 0.9.5"]["max_magic"] == 0
    assert clients["java-client 2.0.1"]["zstd_blocked_bytes"] == sum(j["zstd"]["bytes"] for j in parts.values())
    assert not clients["java-client 3.7.0"]["needs_down_conversion"]
    fetches = {j["partition"]: j for j in plan_json
               if j["type"] == "client-fetch" and j["client"] == "java-client 0.10.2"}
    assert set(fetches) == set(parts)
    assert fetches["clickstream-0"]["outcome"] == "UNSUPPORTED_COMPRESSION_TYPE"
    # The same fetch through `kafkatool fetch-sim` gives the same sizes.
    for name in ("sensors-2017-0", "legacy-events-0", "payments-0"):
        f = fetches[name]
        r = run_cli("fetch-sim", mixed / name, "--fetch-version", "3", "--fetch-offset", str(f["fetch_offset"]),
                    "--format", "json")
        sim = json.loads(r.stdout.splitlines()[0])
        assert (sim["committed_size"], sim["converted_size"], sim["records_converted"], sim["padding_bytes"]) == \
            (f["committed_size"], f["converted_bytes"], f["records_converted"], f["padding_bytes"]), name
    risks = [j for j in plan_json if j["type"] == "risk"]
    assert any(r["subject"].startswith("java-client 2.0.1") and "zstd" in r["text"] for r in risks)
    assert any(r["subject"].startswith("librdkafka 0.9.5") and "Kafka 4" in r["text"] for r in risks)


def test_phases(plan_json: list[dict]) -> None:
    phases = [j for j in plan_json if j["type"] == "phase"]
    assert [p["number"] for p in phases] == [1, 2, 3, 4, 5]
    assert all(p["applies"] for p in phases)
    assert "KIP-724" in phases[2]["configs"][0]  # KRaft: nothing to set
    assert set(phases[2]["partitions"]) == {"sensors-2016-0", "sensors-2017-0"}  # still written as v0/v1
    run = phases[3]["commands"][0]
    assert run.startswith("kafkatool canary run") and "legacy-compacted-0" in run
    assert any("min.cleanable.dirty.ratio" in c and "legacy-compacted" in c for c in phases[4]["configs"])


def test_zookeeper_dir_gets_the_format_configs(mixed: Path, tmp_path: Path) -> None:
    d = tmp_path / "zk"
    d.mkdir()
    shutil.copytree(mixed / "sensors-2016-0", d / "sensors-2016-0")
    (d / "meta.properties").write_text("version=0\nbroker.id=1\n")
    r = run_cli("canary", "plan", d, "--format", "json")
    phases = [json.loads(x) for x in r.stdout.splitlines() if '"phase"' in x]
    assert any(c.startswith("Kafka 3.x (ZooKeeper): log.message.format.version=0.11.0") for c in phases[2]["configs"])
    assert any(c.startswith("Kafka 3.x (ZooKeeper): inter.broker.protocol.version") for c in phases[2]["configs"])
    assert phases[1]["applies"] is None  # no --clients: cannot tell
    r = run_cli("canary", "plan", d, "--target-format", "1", "--format", "json")
    phases = [json.loads(x) for x in r.stdout.splitlines() if '"phase"' in x]
    assert any("0.10.0" in c for c in phases[2]["configs"]) and phases[3]["applies"] is False


def test_human_report(mixed: Path, tmp_path: Path) -> None:
    clients = tmp_path / "c.txt"
    clients.write_text(CLIENTS)
    r = run_cli("canary", "plan", mixed, "--clients", clients)
    assert r.returncode == 0, r.stderr
    for text in ("canary plan:", "By message format and codec", "v0-gzip", "zstd: ", "compacted with legacy data "
                 "(survives into Kafka 4): legacy-compacted-0", "java-client 0.10.2 (billing)", "Plan", "1. [do]",
                 "What Kafka 4 would leave unconverted", "Risks", "HIGH"):
        assert text in r.stdout, text


def test_damaged_partition_is_a_finding(mixed: Path, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copytree(mixed / "sensors-2017-0", d / "sensors-2017-0")
    seg = d / "sensors-2017-0" / "00000000000000000333.log"
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, 8, 3)  # first entry's size below the v0 minimum: CorruptRecordException
    seg.write_bytes(bytes(data))
    r = run_cli("canary", "plan", d, "--format", "json")
    assert r.returncode == 1 and "00000000000000000333.log at byte 0" in r.stderr
    part = json.loads(r.stdout.splitlines()[0])
    assert part["problems"] and part["batches"] > 0  # the other segments are still counted


def test_phases_name_the_broker_configs_per_kafka_version_and_the_rehearsals(plan_json: list[dict]) -> None:
    phases = [j for j in plan_json if j["type"] == "phase"]
    clients, fmt, canary, kafka4 = (phases[i]["configs"] for i in (1, 2, 3, 4))
    assert clients[0].startswith("Kafka 3.x: log.message.downconversion.enable=false (broker) or "
                                 "message.downconversion.enable=false (topic)")
    assert clients[1].startswith("Kafka 4.x: nothing to set") and "clients first" in clients[1]
    assert fmt[-1].startswith("Kafka 4.x: none of these (inter.broker.protocol.version and log.message.format.version")
    steps = [c.split(" /")[0] for c in phases[3]["commands"]]
    assert steps == ["kafkatool canary run", "kafkatool canary verify", "kafkatool canary rehearse",
                     "kafkatool canary apply", "kafkatool canary rollback"]
    assert phases[3]["commands"][2].startswith("kafkatool canary rehearse /var/tmp/kafka-canary --kafka $KAFKA_HOME "
                                               "--server-properties server.properties")
    assert kafka4[0].startswith("Kafka 4.x has no inter.broker.protocol.version, log.message.format.version or "
                                "log.message.downconversion.enable") and "Produce v3+" in kafka4[0]
    assert phases[4]["commands"] == ["kafkatool canary rehearse /var/tmp/kafka-canary --kafka /opt/kafka-4 --clients "
                                     "clients.txt   # does Kafka 4 load and serve the canary, and which clients does "
                                     "it refuse?"]
    assert canary == ["the broker (or the whole log dir) must be stopped for apply and rollback"]
