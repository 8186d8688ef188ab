"""Parity with Kafka on metadata logs written by real KRaft nodes (3.9.2 and 4.4.0, from Maven):

* ``dump -f dump-log --decoder cluster-metadata`` equals DumpLogSegments ``--cluster-metadata-decoder`` line
  for line on every segment and snapshot (3.9: ``kafka.tools.DumpLogSegments``; 4.x: the Java port in
  kafka-tools, matched with ``--dump-log-version 4``), and without ``--decoder`` in the
  ``__cluster_metadata-0`` dir (the decoder is picked from the dir);
* ``metadata --format json`` agrees with what the broker reported through the Admin API at the same point
  (topics and ids, partitions with leaders, replicas and ISR, dynamic configs, client quotas, ACLs, finalized
  features), before and after a broker restart.

The node creates and deletes topics, adds partitions, sets and deletes topic and broker configs, quotas and
ACLs, restarts, and takes controller snapshots (``metadata.log.max.record.bytes.between.snapshots`` is
small). Skipped without Java or Maven (failing under CI=true): ``kraft_broker.require_jvm``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafkatool.metadata import build_image
from tests.metadata.kraft_broker import (
    KAFKA_4,
    KAFKA_39,
    KraftNode,
    dump_log_segments_class,
    kafka_tool,
    require_jvm,
)
from tests.support.cli import run_cli

pytestmark = pytest.mark.slow


@dataclass
class Run:
    version: str
    metadata_dir: Path
    before_restart: dict[str, Any]  # what the Admin API reported at before_time
    before_time: int
    after_restart: dict[str, Any]
    after_time: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _point(node: KraftNode, *commands: str) -> tuple[dict[str, Any], int]:
    described = node.admin(*commands, "describe")
    t = _now_ms()
    time.sleep(0.05)  # later records get later timestamps than the point
    return described, t


@pytest.fixture(scope="module", params=[KAFKA_39, KAFKA_4])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    require_jvm()
    version = request.param
    root = tmp_path_factory.mktemp(f"kraft-{version}")
    node = KraftNode(version, root, {"metadata.log.max.record.bytes.between.snapshots": "1500"})
    node.format()
    node.start()
    try:
        before, t1 = _point(node, "create:orders:3", "create:gone:2", "create:keep:1",
                            "topic-config:orders:retention.ms=3600000", "topic-config:gone:cleanup.policy=compact",
                            "broker-config:1:log.cleaner.threads=2", "quota:user:alice:producer_byte_rate=1048576",
                            "quota:client-id:batch:consumer_byte_rate=2048", "acl:User/alice:orders:READ",
                            "acl:User/bob:keep:WRITE", "partitions:orders:5", "delete:gone")
        node.stop()
        node.start()  # a broker restart: fenced, re-registered with a new epoch, unfenced
        after, t2 = _point(node, "topic-config:orders:retention.ms=", "topic-config:keep:cleanup.policy=compact",
                           "quota:user:alice:producer_byte_rate=", "quota:user:bob:request_percentage=25.5",
                           "create:late:2", "partitions:keep:3", "acl:User/carol:late:DESCRIBE")
    finally:
        node.stop()
    return Run(version, node.metadata_dir, before, t1, after, t2)


def _metadata_files(d: Path) -> list[Path]:
    return sorted(d.glob("*.log")) + sorted(d.glob("*.checkpoint"))


def test_the_run_wrote_segments_and_a_controller_snapshot(run: Run) -> None:
    snapshots = [p for p in run.metadata_dir.glob("*.checkpoint") if not p.name.startswith("00000000000000000000-")]
    assert snapshots, "the controller took no snapshot"
    assert list(run.metadata_dir.glob("*.log"))


def test_dump_log_equals_dump_log_segments(run: Run) -> None:
    files = _metadata_files(run.metadata_dir)
    kafka = kafka_tool(run.version, dump_log_segments_class(run.version),
                       ["--cluster-metadata-decoder", "--files", ",".join(map(str, files))])
    assert kafka.returncode == 0, kafka.stderr
    flavour = ["--dump-log-version", "4"] if run.version.startswith("4") else []
    ours = run_cli("dump", "-f", "dump-log", "--decoder", "cluster-metadata", *flavour, *files)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.splitlines() == kafka.stdout.splitlines()
    assert "TOPIC_RECORD" in ours.stdout and "PARTITION_CHANGE_RECORD" in ours.stdout
    # In the __cluster_metadata-0 dir the decoder is picked without the option.
    auto = run_cli("dump", "-f", "dump-log", "--print-data", *flavour, *files)
    assert auto.stdout == ours.stdout


def _admin_view(described: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": {name: {"topic_id": t["topicId"],
                          "partitions": [(p["partition"], p["leader"], p["replicas"], p["isr"]) for p in
                                         t["partitions"]]} for name, t in described["topics"].items()},
        "configs": described["configs"],
        "quotas": sorted((json.dumps(q["entity"], sort_keys=True), json.dumps(q["values"], sort_keys=True))
                         for q in described["quotas"]),
        "acls": sorted((a["resourceType"], a["name"], a["patternType"], a["principal"], a["host"], a["operation"],
                        a["permission"]) for a in described["acls"]),
        "features": {k: v for k, v in described["features"].items() if v != 0},
    }


def _image_view(image: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": {t["name"]: {"topic_id": t["topic_id"],
                               "partitions": [(p["partition"], p["leader"], p["replicas"], p["isr"]) for p in
                                              t["partitions"]]} for t in image["topics"]},
        # The Admin API describes the configs of existing topics only. Kafka 3.9's controller snapshot keeps the
        # ConfigRecords of a deleted topic (the replay of the log's RemoveTopicRecord drops them), so an image
        # loaded from a snapshot taken after a deletion holds them, as Kafka's own image does.
        "configs": {f"{c['resource_type']}:{c['resource_name']}": c["configs"] for c in image["configs"]
                    if c["resource_type"] != "topic" or c["resource_name"] in {t["name"] for t in image["topics"]}},
        "quotas": sorted((json.dumps(q["entity"], sort_keys=True), json.dumps(q["values"], sort_keys=True))
                         for q in image["client_quotas"]),
        "acls": sorted((a["resource_type"], a["resource_name"], a["pattern_type"], a["principal"], a["host"],
                        a["operation"], a["permission"]) for a in image["acls"]),
        "features": {k: v for k, v in image["features"].items() if v != 0},
    }


def _cli_image(run: Run, *args: str) -> dict[str, Any]:
    r = run_cli("metadata", run.metadata_dir, "-f", "json", *args)
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    images = [ln for ln in lines if ln["type"] == "metadata_image"]
    findings = [ln for ln in lines if ln["type"] == "finding" and ln["severity"] != "info"]
    assert (r.returncode, findings) == (0, []), r.stderr
    assert len(images) == 1
    image: dict[str, Any] = images[0]["image"]
    return image


def test_image_agrees_with_the_admin_api_before_the_restart(run: Run) -> None:
    image = _cli_image(run, "--at-time", str(run.before_time))
    admin = _admin_view(run.before_restart)
    assert len(admin["topics"]["orders"]["partitions"]) == 5 and len(admin["acls"]) == 2
    assert admin["configs"]["topic:orders"] == {"retention.ms": "3600000"} and len(admin["quotas"]) == 2
    assert _image_view(image) == admin
    assert "gone" not in {t["name"] for t in image["topics"]}  # deleted, and its config with it
    assert not any(c["resource_name"] == "gone" for c in image["configs"])


def test_image_agrees_with_the_admin_api_after_the_restart(run: Run) -> None:
    image = _cli_image(run, "--at-time", str(run.after_time))
    assert _image_view(image) == _admin_view(run.after_restart)
    broker = image["brokers"][0]
    assert (broker["id"], broker["fenced"]) == (1, False)


def test_latest_image_is_after_the_clean_shutdown(run: Run) -> None:
    result = build_image(run.metadata_dir)
    assert [f for f in result.findings if f.severity != "info"] == []
    assert result.snapshot is not None and result.snapshot.end_offset > 0
    img = result.image.to_json()
    assert img["offset"] == result.log_end_offset - 1  # type: ignore[operator]
    # the controlled shutdown fenced the only broker: no partition has a leader any more
    assert {p["leader"] for t in img["topics"] for p in t["partitions"]} == {-1}
    assert img["brokers"][0]["fenced"] is True


def test_rewinding_to_an_offset_replays_from_an_older_snapshot_or_the_log(run: Run) -> None:
    latest = build_image(run.metadata_dir)
    assert latest.snapshot is not None
    early = build_image(run.metadata_dir, at_offset=latest.snapshot.end_offset - 2)
    assert early.snapshot is None or early.snapshot.end_offset < latest.snapshot.end_offset
    assert early.image.offset <= latest.snapshot.end_offset - 2


def test_diff_between_the_two_points(run: Run) -> None:
    a = build_image(run.metadata_dir, at_time=run.before_time).image.offset
    b = build_image(run.metadata_dir, at_time=run.after_time).image.offset
    r = run_cli("metadata", run.metadata_dir, "--diff", str(a), str(b), "-f", "json")
    assert r.returncode == 0, r.stderr
    changes = {(c["section"], c["key"], c["change"]) for c in map(json.loads, r.stdout.splitlines())
               if c["type"] == "metadata_change"}
    assert {("topics", "late", "added"), ("partitions", "late-1", "added"), ("partitions", "keep-2", "added"),
            ("configs", "topic:keep", "added"), ("configs", "topic:orders", "removed"),
            ("client_quotas", "user=bob", "added"), ("client_quotas", "user=alice", "removed")} <= changes
    assert ("brokers", "1", "changed") in changes  # the new registration's epoch
