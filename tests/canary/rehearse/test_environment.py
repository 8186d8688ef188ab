"""What a rehearsal refuses before any broker starts (one line, exit 2, nothing left behind), and the broker
settings it takes from the operator's server.properties."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.canary.rehearse import environment as env
from kafkatool.canary.rehearse import staging as st
from kafkatool.canary.sandbox import BrokerMode, KafkaInstall
from kafkatool.errors import UsageError
from tests.support.canary_dirs import small_dir
from tests.support.cli import run_cli


def _install(tmp_path: Path, version: str, zookeeper: bool = False) -> Path:
    libs = tmp_path / f"kafka-{version}" / "libs"
    libs.mkdir(parents=True)
    (libs / f"kafka_2.13-{version}.jar").write_bytes(b"")
    if zookeeper:
        (libs / "zookeeper-3.8.4.jar").write_bytes(b"")
    return libs.parent


def _java_home(tmp_path: Path, version_line: str, rc: int = 0) -> Path:
    home = tmp_path / f"jdk-{abs(hash(version_line))}"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\nexit {rc}\n")
    java.chmod(0o755)
    return home


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("rehearse-env")
    r = run_cli("canary", "run", small_dir(base / "logs"), "--partitions", "v0-0", "--workdir", base / "w", "-q")
    assert r.returncode == 0, r.stderr
    return base / "w"


@pytest.mark.parametrize("line, major", [('openjdk version "17.0.15" 2025-04-15', 17),
                                         ('java version "1.8.0_392"', 8), ('openjdk version "25" 2025-09-16', 25)])
def test_java_major(tmp_path: Path, line: str, major: int):
    assert env.java_major(_java_home(tmp_path, line) / "bin" / "java") == major


def test_kafka_4_needs_java_17(tmp_path: Path):
    kafka4 = KafkaInstall.locate(_install(tmp_path, "4.4.0"))
    kafka3 = KafkaInstall.locate(_install(tmp_path, "3.9.2"))
    old = str(_java_home(tmp_path, 'openjdk version "11.0.2" 2019-01-15'))
    with pytest.raises(env.RehearseError, match=r"Kafka 4\.4\.0's broker needs Java 17 or newer; .* is Java 11"):
        env.check_java(kafka4, old)
    assert env.check_java(kafka3, old)[1] == 11
    with pytest.raises(env.RehearseError, match="is not a working Java: Error: no such thing"):
        env.check_java(kafka3, str(_java_home(tmp_path, "Error: no such thing", rc=1)))


def test_sandboxes_of_killed_rehearsals_are_removed(tmp_path: Path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live, foreign = (tmp_path / f"{env.SANDBOX_PREFIX}{n}" for n in ("stale", "live", "foreign"))
    for d, pid in ((stale, dead.pid), (live, os.getpid())):
        d.mkdir()
        (d / env.OWNER).write_text(f"{pid}\n")
    foreign.mkdir()
    assert env.remove_stale_sandboxes(tmp_path) == [stale]
    assert live.exists() and foreign.exists()


def test_operator_settings_by_kafka_version_and_mode(tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=3\nzookeeper.connect=zk:2181\ninter.broker.protocol.version=2.8\n"
                     "log.message.format.version=0.10.2\nlog.message.downconversion.enable=false\n"
                     "message.max.bytes=2000000\nlisteners=PLAINTEXT://:9092\n")
    k3 = KafkaInstall.locate(_install(tmp_path, "3.9.2", zookeeper=True))
    k4 = KafkaInstall.locate(_install(tmp_path, "4.4.0"))
    s3 = st.read_operator_settings(props, k3, None)
    assert s3.zookeeper and st.resolve_mode(None, k3, s3) is BrokerMode.ZOOKEEPER
    assert s3.taken == {"inter.broker.protocol.version": "2.8", "log.message.format.version": "0.10.2",
                        "log.message.downconversion.enable": "false", "message.max.bytes": "2000000"}
    assert st.legacy_format(BrokerMode.ZOOKEEPER, s3) == 1
    kraft = st.read_operator_settings(props, k3, BrokerMode.KRAFT)
    assert set(kraft.ignored) == {"inter.broker.protocol.version", "log.message.format.version"}
    assert st.legacy_format(BrokerMode.KRAFT, kraft) is None
    s4 = st.read_operator_settings(props, k4, None)
    assert st.resolve_mode(None, k4, s4) is BrokerMode.KRAFT
    assert set(s4.ignored) == set(st.REMOVED_IN_4) and s4.taken == {"message.max.bytes": "2000000"}
    with pytest.raises(UsageError, match="no ZooKeeper mode"):
        st.resolve_mode("zookeeper", k4, s4)
    props.write_text("inter.broker.protocol.version=3.0\nlog.message.format.version=0.10.2\nzookeeper.connect=z\n")
    assert st.legacy_format(BrokerMode.ZOOKEEPER, st.read_operator_settings(props, k3, None)) is None  # KIP-724


def _no_sandbox(temp: Path) -> None:
    assert list(temp.iterdir()) == []


def test_one_line_errors_before_any_broker(canary: Path, tmp_path: Path):
    """Not a Kafka install, a Java too old for it, a busy port: exit 2, one line, no sandbox dir, W untouched."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    before = sorted(p.name for p in canary.iterdir())
    r = run_cli("canary", "rehearse", canary, "--kafka", tmp_path, "--temp-dir", temp)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"kafkatool canary rehearse: error: {tmp_path}: not a Kafka install: no libs/kafka_<scala>-<version>.jar "
        "(--kafka)"]
    r = run_cli("canary", "rehearse", canary, "--temp-dir", temp, env={"KAFKA_HOME": ""})
    assert r.returncode == 2 and "--kafka: no Kafka install given and KAFKA_HOME is not set" in r.stderr
    kafka4 = _install(tmp_path, "4.4.0")
    java11 = _java_home(tmp_path, 'openjdk version "11.0.2" 2019-01-15')
    r = run_cli("canary", "rehearse", canary, "--kafka", kafka4, "--java-home", java11, "--temp-dir", temp)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("kafkatool canary rehearse: error: --java-home: Kafka 4.4.0's broker needs Java 17 "
                               "or newer")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        java17 = _java_home(tmp_path, 'openjdk version "17.0.15" 2025-04-15')  # no JVM needed to refuse the port
        r = run_cli("canary", "rehearse", canary, "--kafka", kafka4, "--java-home", java17, "--port", str(port),
                    "--temp-dir", temp)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"kafkatool canary rehearse: error: --port: port {port} on 127.0.0.1 is in use (Address already in use)"]
    _no_sandbox(temp)
    assert sorted(p.name for p in canary.iterdir()) == before


def test_sandbox_ports_are_free_and_below_the_ephemeral_range():
    """A sandbox's ports come from below the kernel's ephemeral range (no outgoing connection of another process
    can take one between the choice and the broker's bind), each free when chosen."""
    import socket

    from kafkatool.canary import sandbox

    lo, _ = sandbox._ephemeral_range()
    ports = {sandbox.free_port() for _ in range(20)}
    assert len(ports) > 1
    for port in ports:
        assert (10000 <= port < lo) if lo > 10000 else port > 0
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # still free


def test_a_taken_port_is_not_chosen(monkeypatch):
    import socket

    from kafkatool.canary import sandbox

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        monkeypatch.setattr(sandbox, "_ephemeral_range", lambda: (10002, 60999))
        monkeypatch.setattr("random.sample", lambda population, k: [taken, 10001])
        assert sandbox.free_port() == 10001 or taken == 10001
