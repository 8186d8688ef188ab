"""kafkatool.canary.sandbox, the broker-process code shared with ``canary rehearse``: what it refuses, and that a
JVM it starts dies with the process that started it (a killed caller leaves no broker behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kafkatool.canary.sandbox import (
    BrokerMode,
    BrokerSandbox,
    KafkaInstall,
    SandboxConfig,
    SandboxError,
    random_cluster_id,
)
from kafkatool.util.procs import alive
from tests.support.paths import ROOT


def test_locate_refuses_what_is_not_a_kafka_install(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="not a directory"):
        KafkaInstall.locate(tmp_path / "missing")
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "kafka-clients-3.9.2.jar").write_bytes(b"")
    with pytest.raises(SandboxError, match=r"not a Kafka install: no libs/kafka_<scala>-<version>\.jar"):
        KafkaInstall.locate(tmp_path)


def test_locate_reads_the_version_from_a_distribution_or_its_libs(tmp_path: Path) -> None:
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "kafka_2.13-4.4.0.jar").write_bytes(b"")
    for where in (tmp_path, tmp_path / "libs"):
        install = KafkaInstall.locate(where)
        assert (install.version, install.scala_version, install.major) == ("4.4.0", "2.13", 4)
        assert not install.has_zookeeper


def test_zookeeper_mode_needs_kafka_3(tmp_path: Path) -> None:
    (tmp_path / "kafka_2.13-4.4.0.jar").write_bytes(b"")
    with pytest.raises(SandboxError, match=r"Kafka 4\.4\.0 has no ZooKeeper mode"):
        BrokerSandbox(KafkaInstall.locate(tmp_path), tmp_path / "w", SandboxConfig(mode=BrokerMode.ZOOKEEPER))


def test_cluster_ids_are_kafka_uuids() -> None:
    for _ in range(200):
        cid = random_cluster_id()
        assert len(cid) == 22 and not cid.startswith("-") and "=" not in cid


def test_a_broker_that_cannot_start_is_one_error_with_its_log(kafka3: KafkaInstall, tmp_path: Path) -> None:
    config = SandboxConfig(mode=BrokerMode.KRAFT, properties={"log.retention.bytes": "not-a-number"},
                           ready_timeout=60)
    with BrokerSandbox(kafka3, tmp_path / "w", config) as b, pytest.raises(SandboxError) as e:
        b.start()
    assert "log.retention.bytes" in str(e.value)  # the tail of the failing step's log is in the message
    assert b.broker is None or not b.broker.alive()


def test_the_jvm_dies_with_its_parent(kafka3: KafkaInstall, tmp_path: Path) -> None:
    """A caller killed with SIGKILL (no cleanup runs) takes its JVM along (PR_SET_PDEATHSIG)."""
    (tmp_path / "zk.properties").write_text(f"dataDir={tmp_path / 'zk'}\nclientPort=0\nadmin.enableServer=false\n")
    child = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from kafkatool.canary.sandbox import KafkaInstall, find_java, start_java
        install = KafkaInstall.locate({str(kafka3.libs)!r})
        p = start_java("zookeeper", find_java(), install.classpath(),
                       "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                       [{str(tmp_path / 'zk.properties')!r}], log=Path({str(tmp_path / 'zk.log')!r}))
        print(p.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert parent.stdout is not None
    jvm = int(parent.stdout.readline())
    try:
        time.sleep(1.0)
        assert alive(jvm)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 20
        while alive(jvm) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(jvm)
    finally:
        if alive(jvm):
            os.kill(jvm, signal.SIGKILL)
