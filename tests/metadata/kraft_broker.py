"""A real KRaft node (broker and controller in one JVM) from Kafka's Maven jars, for the metadata tests.

Small on purpose: the node runs on the jars of tests/broker's Kafka install (tests/broker/install.py) with the
broker tests' JVM options (tests/broker/cds.py: their class-data-sharing archive); it listens on 127.0.0.1 free
ports, keeps everything in a temp dir, runs in its own process group (stopped by SIGTERM to that group, SIGKILL
after a bounded wait) and every wait is bounded. One node at a time: the machine has two cores.

``kafka_tool(version, main_class, args)`` runs any of Kafka's command-line classes on the jars Maven resolves for
``kafka_2.13`` and ``kafka-tools`` into ``<cache>/m2`` (the classpath is cached beside it: DumpLogSegments for
parity); ``KraftAdmin.java`` beside this file is a small Admin client, compiled once against the node's jars
(cached beside them) and run on its classpath.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafkatool.canary.sandbox import free_port
from tests.support.kafkaref import cache_dir

HERE = Path(__file__).resolve().parent
ADMIN_SOURCE = HERE / "KraftAdmin.java"
KAFKA_39 = "3.9.2"
KAFKA_4 = "4.4.0"
JAVA_OPTS = ["-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkatool.tests</groupId><artifactId>kafka-{version}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>{deps}
  </dependencies>
</project>
"""
_DEP = ("\n    <dependency><groupId>org.apache.kafka</groupId><artifactId>{a}</artifactId>"
        "<version>{v}</version></dependency>")


class Unavailable(RuntimeError):
    """Java or Maven is missing, or Maven could not resolve the jars."""


def require_jvm() -> None:
    """Skip (one line) without Java or Maven; fail instead when CI=true: CI must run these tests."""
    missing = [t for t in ("java", "mvn") if shutil.which(t) is None]
    if missing:
        msg = f"{' and '.join(missing)} not on PATH: the Kafka parity tests need a JDK 17+ and Maven"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


def maven_repo() -> Path:
    return cache_dir() / "m2"


def resolve(version: str, artifacts: Sequence[str] = ("kafka_2.13", "kafka-tools"), *,
            again: bool = True) -> list[Path]:
    """The runtime classpath of ``artifacts`` at ``version``, resolved by Maven into ``<cache>/m2``."""
    key = "-".join(artifacts).replace("_", "")
    work = cache_dir() / "maven" / f"{version}-{key}"
    cp_file = work / "classpath.txt"
    if not cp_file.is_file():
        work.mkdir(parents=True, exist_ok=True)
        (work / "pom.xml").write_text(_POM.format(version=version, deps="".join(
            _DEP.format(a=a, v=version) for a in artifacts)))
        tmp = work / "classpath.tmp"
        p = subprocess.run(["mvn", "-q", "-B", "-f", str(work / "pom.xml"), f"-Dmaven.repo.local={maven_repo()}",
                            "dependency:build-classpath", f"-Dmdep.outputFile={tmp}"],
                           capture_output=True, text=True, timeout=900)
        if p.returncode != 0 or not tmp.is_file():
            tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-15:])
            raise Unavailable(f"Maven could not resolve {artifacts} {version}:\n{tail}")
        tmp.rename(cp_file)
    jars = [Path(j) for j in cp_file.read_text().strip().split(os.pathsep) if j]
    if not all(j.is_file() for j in jars):  # the Maven cache was cleaned since: resolve once more
        cp_file.unlink()
        if not again:
            raise Unavailable(f"Maven resolved {artifacts} {version} but the jars are not in {maven_repo()}")
        return resolve(version, artifacts, again=False)
    return jars


def jar_of(version: str, artifact: str) -> Path:
    """The path of one Kafka jar (``kafka-metadata``, ``kafka-clients``...), resolving it if needed."""
    for j in resolve(version, (artifact,)):
        if j.name == f"{artifact}-{version}.jar":
            return j
    raise Unavailable(f"{artifact}-{version}.jar is not on its own classpath")


def classpath(version: str) -> str:
    return os.pathsep.join(str(j) for j in resolve(version))


def kafka_tool(version: str, main_class: str, args: Sequence[str],
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line classes (``kafka.tools.DumpLogSegments``...) on its classpath."""
    return subprocess.run(["java", *JAVA_OPTS, "-cp", classpath(version), main_class, *args],
                          capture_output=True, text=True, timeout=timeout)


def dump_log_segments_class(version: str) -> str:
    """3.9: Scala ``kafka.tools.DumpLogSegments`` in kafka_2.13; 4.x: ``org.apache.kafka.tools.DumpLogSegments``
    in kafka-tools (KAFKA-14579 moved it to Java)."""
    return "kafka.tools.DumpLogSegments" if version.startswith("3.") else "org.apache.kafka.tools.DumpLogSegments"


class KraftNode:
    """One combined-mode KRaft node (node.id 1) with its data in ``root``."""

    def __init__(self, version: str, root: Path, extra: dict[str, str] | None = None) -> None:
        from kafkatool.canary.sandbox import find_java
        from tests.broker.cds import jvm_options
        from tests.broker.install import kafka_install

        self.version = version
        install = kafka_install(version)
        self.java = str(find_java())
        self.classpath = install.classpath()
        self.java_opts = ["-Xmx512m", *jvm_options(install)]
        self.admin_classes = admin_classes(self.java, version, self.classpath)
        self.root = root
        self.log_dir = root / "data"
        self.port = free_port()
        self.controller_port = free_port()
        self.cluster_id = _cluster_id()
        self.extra = extra or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.config = root / "server.properties"
        self.output = root / "node.out"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metadata_dir(self) -> Path:
        return self.log_dir / "__cluster_metadata-0"

    def write_config(self) -> None:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "1",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.enable": "false",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            **self.extra,
        }
        self.root.mkdir(parents=True, exist_ok=True)
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def format(self) -> None:
        self.write_config()
        p = subprocess.run([self.java, *self.java_opts, "-cp", self.classpath, "kafka.tools.StorageTool", "format",
                            "-t", self.cluster_id, "-c", str(self.config)], capture_output=True, text=True,
                           timeout=180)
        if p.returncode != 0:
            raise RuntimeError(f"StorageTool format failed ({p.returncode}): {p.stdout}{p.stderr}")

    def start(self, timeout: float = 120) -> None:
        assert self.proc is None
        with open(self.output, "ab") as out:
            self.proc = subprocess.Popen(
                [self.java, *self.java_opts, "-cp", self.classpath, "kafka.Kafka", str(self.config)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Kafka node exited with {self.proc.returncode}:\n{self._tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError:
                time.sleep(0.05)  # not listening yet: a node is up in about a second
                continue
            try:
                self.admin("describe", timeout=timeout)  # the broker answers metadata requests
                return
            except RuntimeError:
                time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"the Kafka node did not start within {timeout:.0f}s:\n{self._tail()}")

    def _tail(self) -> str:
        try:
            return "\n".join(self.output.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return ""

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM to the node's process group (a clean shutdown), SIGKILL if it is still there after ``timeout``."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        except ProcessLookupError:
            pass

    def admin(self, *commands: str, timeout: float = 180) -> Any:
        """Run KraftAdmin.java's commands; the JSON document of the last ``describe``, if any."""
        if self.admin_classes is None:  # no javac: the source launcher compiles it each time
            main, cp = str(ADMIN_SOURCE), self.classpath
        else:  # the classpath the JVM options' archive was made for, then the admin's classes
            main, cp = "KraftAdmin", f"{self.classpath}{os.pathsep}{self.admin_classes}"
        p = subprocess.run([self.java, *self.java_opts, "-cp", cp, main, self.bootstrap, *commands],
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"KraftAdmin {commands} failed ({p.returncode}):\n{p.stderr[-3000:]}")
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        return json.loads(lines[-1]) if lines else None


def admin_classes(java: str, version: str, classpath: str) -> Path | None:
    """``KraftAdmin.java`` compiled against ``classpath`` (Kafka ``version``'s jars), once: cached under
    ``<cache>/kraft-admin``, keyed by the source and the javac (None without a javac beside ``java``)."""
    javac = Path(os.path.realpath(java)).with_name("javac")
    if not os.access(javac, os.X_OK):
        return None
    source = ADMIN_SOURCE.read_bytes()
    key = hashlib.sha256(source + f"\n{javac}\n{classpath}".encode()).hexdigest()[:16]
    out = cache_dir() / "kraft-admin" / f"{version}-{key}"
    if (out / "KraftAdmin.class").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="javac-", dir=out.parent))
    try:
        p = subprocess.run([str(javac), "-nowarn", "-d", str(tmp), "-cp", classpath, str(ADMIN_SOURCE)],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"javac KraftAdmin.java failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        with contextlib.suppress(OSError):  # another process may have made it meanwhile
            tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _cluster_id() -> str:
    """``Uuid.randomUuid().toString()``: 22 base64url characters, never starting with ``-`` (one in 64 did here,
    and StorageTool's argument parser took it for a flag)."""
    from kafkatool.canary.sandbox import random_cluster_id

    return random_cluster_id()


@contextmanager
def kraft_node(version: str, root: Path, extra: dict[str, str] | None = None) -> Iterator[KraftNode]:
    node = KraftNode(version, root, extra)
    node.format()
    node.start()
    try:
        yield node
    finally:
        node.stop()
