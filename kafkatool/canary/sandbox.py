"""A throwaway Kafka broker from a Kafka install: start it on 127.0.0.1, wait until it serves, read its log, stop it.

The broker-process code the broker tests (``tests/broker``) and ``canary rehearse`` share. A Kafka install is a
directory of jars: a distribution's ``libs/`` (or the distribution itself), or what Maven resolves for
``org.apache.kafka:kafka_2.13``. What ``bin/kafka-server-start.sh`` does, done here without the scripts:

* ZooKeeper mode (Kafka 3.x only; 4.0 removed it, KIP-500): ``org.apache.zookeeper.server.quorum.QuorumPeerMain``
  from the same jars, then ``kafka.Kafka server.properties`` with ``broker.id``/``zookeeper.connect``;
* KRaft (combined mode, ``process.roles=broker,controller``, one static voter): the metadata log dir is
  formatted with ``kafka.tools.StorageTool format`` (``bin/kafka-storage.sh``) and a throwaway cluster id, or
  the ``cluster.id`` of a log dir that already has a ``meta.properties`` (a broker refuses a log dir formatted
  for another cluster).

Each JVM runs in its own process group (stopped with the group), its stdout and stderr (log4j's console
appender, configured here for both log4j 1 (Kafka 3.x, reload4j) and log4j 2 (Kafka 4.x)) go to a log file per
start, and it dies with the process that started it (``PR_SET_PDEATHSIG``), so a killed caller leaves no broker
behind. Every wait is bounded. Ports are free ports of 127.0.0.1, chosen at construction and kept across
restarts (ZooKeeper keeps a mode-3.x broker's registration and topic configs while the broker restarts).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import enum
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kafkatool.errors import KafkaToolError

_PR_SET_PDEATHSIG = 1
_KAFKA_JAR = re.compile(r"^kafka_(\d+\.\d+)-(\d+\.\d+\.\d+(?:[-.][\w.-]+)?)\.jar$")
# The lines a broker logs once it serves requests: KafkaServer (ZooKeeper mode) and KafkaRaftServer (KRaft).
_STARTED = re.compile(r"\[KafkaServer id=\d+\] started|Kafka Server started")
_LOG_TAIL_LINES = 40
POLL = 0.05  # seconds between looks at a starting JVM (a broker is ready in about one second)


class SandboxError(KafkaToolError):
    """The sandbox broker could not be set up, started or stopped (exit 2: an environment problem)."""


class BrokerMode(enum.Enum):
    KRAFT = "kraft"
    ZOOKEEPER = "zookeeper"


@dataclass(frozen=True, slots=True)
class KafkaInstall:
    """A directory of Kafka's jars and the version its ``kafka_<scala>-<version>.jar`` names."""

    libs: Path
    version: str
    scala_version: str

    @classmethod
    def locate(cls, path: str | os.PathLike[str]) -> KafkaInstall:
        """``path`` is a Kafka distribution (with ``libs/``) or a directory of its jars."""
        root = Path(path)
        if not root.is_dir():
            raise SandboxError("not a directory", path=root)
        for libs in (root / "libs", root):
            if libs.is_dir():
                for jar in sorted(libs.iterdir()):
                    m = _KAFKA_JAR.match(jar.name)
                    if m:
                        return cls(libs, m.group(2), m.group(1))
        raise SandboxError("not a Kafka install: no libs/kafka_<scala>-<version>.jar", path=root)

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def has_zookeeper(self) -> bool:
        """Kafka 3.x ships ZooKeeper mode and its server's jar; 4.0 removed both (KIP-500)."""
        return self.major < 4 and any(self.libs.glob("zookeeper-[0-9]*.jar"))

    def classpath(self) -> str:
        return os.pathsep.join(str(j) for j in sorted(self.libs.glob("*.jar")))


def find_java(java_home: str | os.PathLike[str] | None = None) -> Path:
    """The ``java`` of ``java_home``, else ``$JAVA_HOME``, else the one on ``PATH``."""
    home = java_home if java_home is not None else os.environ.get("JAVA_HOME")
    if home:
        exe = Path(home) / "bin" / "java"
        if os.access(exe, os.X_OK):
            return exe
        raise SandboxError("no bin/java in the Java home", path=home)
    found = shutil.which("java")
    if found is None:
        raise SandboxError("no java on PATH (set JAVA_HOME)")
    return Path(found)


def _ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands out to outgoing connections and to ``bind(0)`` (Linux's default otherwise)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A port of 127.0.0.1 that no one listens on, below the kernel's ephemeral range where it can: a port from
    that range (``bind(0)``'s) can be taken by any process's next outgoing connection between now and the
    broker's bind ("Address already in use", seen when tests and Spark ran beside a rehearsal)."""
    import random

    lo, _ = _ephemeral_range()
    candidates = random.sample(range(10000, lo), min(64, max(0, lo - 10000))) if lo > 10000 else []
    for port in candidates:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def random_cluster_id() -> str:
    """A cluster id as ``Uuid.randomUuid().toString()`` makes one: 16 random bytes, URL-safe base64 without
    padding, never starting with ``-`` (Kafka re-draws those so the id cannot look like a command-line flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


def read_properties(path: Path) -> dict[str, str]:
    """``key=value`` lines of a Java properties file (``#`` comments; no escapes or continuations, which the
    files Kafka writes never use)."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def write_properties(path: Path, props: Mapping[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")


_LOG4J1 = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
"""
_LOG4J2 = """\
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.zk.name = org.apache.zookeeper
logger.zk.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:  # the parent died before prctl: nobody is left to stop us
            os._exit(1)


@dataclass
class JavaProcess:
    """One JVM in its own process group, its output in ``log``."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float) -> int:
        """SIGTERM to the group (Kafka's shutdown hook: a controlled, clean shutdown), then SIGKILL after
        ``timeout`` seconds. Returns the exit status."""
        if self.alive():
            self.signal_group(signal.SIGTERM)
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()

    def kill(self) -> int:
        self.signal_group(signal.SIGKILL)
        try:
            return self.popen.wait(30)
        except subprocess.TimeoutExpired as e:  # pragma: no cover - a process SIGKILL cannot stop
            raise SandboxError(f"{self.name} (pid {self.pid}) did not die on SIGKILL") from e


def start_java(name: str, java: Path, classpath: str, main: str, args: Sequence[str], *, log: Path,
               jvm_options: Sequence[str] = (), cwd: Path | None = None) -> JavaProcess:
    """Start ``main`` in its own process group, output appended to ``log``, killed if the caller dies."""
    cmd = [str(java), *jvm_options, "-cp", classpath, main, *args]
    with open(log, "ab") as out:
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                 start_new_session=True, preexec_fn=_die_with_parent)
    return JavaProcess(name, popen, log)


def tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _zookeeper_ok(port: int) -> bool:
    """ZooKeeper's ``srvr`` four-letter word (the one its default whitelist allows) answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
            s.sendall(b"srvr")
            return s.recv(64).startswith(b"Zookeeper version")
    except OSError:
        return False


@dataclass
class SandboxConfig:
    """What the sandbox broker is.

    ``log_dirs``: the broker's data dirs (default: ``<workdir>/data``); they may already hold partitions.
    ``properties``: server.properties entries set over the defaults (listeners, ids, quorum and the
    single-broker replication factors are the sandbox's own). ``cluster_id``: KRaft only; default: the one in a
    log dir's ``meta.properties``, else a random one.
    """

    mode: BrokerMode = BrokerMode.KRAFT
    log_dirs: tuple[Path, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    node_id: int = 1
    cluster_id: str | None = None
    heap: str = "512m"
    jvm_options: tuple[str, ...] = ("-XX:+UseG1GC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
    ready_timeout: float = 120.0
    stop_timeout: float = 60.0
    java_home: str | None = None
    # log4j logger levels over the defaults, e.g. {"kafka.request.logger": "INFO"} (Kafka 3.x logs requests of
    # deprecated API versions at INFO, with their down-conversion time and memory)
    loggers: Mapping[str, str] = field(default_factory=dict)
    port: int | None = None  # the PLAINTEXT listener's port (default: a free one)


class BrokerSandbox:
    """One broker (and its ZooKeeper in mode 3.x) under ``workdir``; a context manager that stops both."""

    def __init__(self, install: KafkaInstall, workdir: str | os.PathLike[str], config: SandboxConfig) -> None:
        self.install = install
        self.config = config
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        if config.mode is BrokerMode.ZOOKEEPER and not install.has_zookeeper:
            raise SandboxError(f"Kafka {install.version} has no ZooKeeper mode (removed in 4.0)",
                               path=install.libs)
        self.java = find_java(config.java_home)
        # Both may be changed while the broker is stopped: the next start() uses them.
        self.log_dirs: tuple[Path, ...] = config.log_dirs or (self.workdir / "data",)
        self.properties: dict[str, str] = dict(config.properties)
        self.metadata_dir = self.workdir / "metadata"
        self.port = config.port if config.port is not None else free_port()
        self.controller_port = free_port() if config.mode is BrokerMode.KRAFT else 0
        self.zookeeper_port = free_port() if config.mode is BrokerMode.ZOOKEEPER else 0
        self.broker: JavaProcess | None = None
        self.zookeeper: JavaProcess | None = None
        self.starts = 0
        self.cluster_id: str | None = None
        self._classpath = install.classpath()
        log4j1, log4j2 = _LOG4J1, _LOG4J2
        for i, (logger, level) in enumerate(config.loggers.items()):
            log4j1 += f"log4j.logger.{logger}={level}\n"
            log4j2 += f"logger.extra{i}.name = {logger}\nlogger.extra{i}.level = {level}\n"
        (self.workdir / "log4j.properties").write_text(log4j1, encoding="utf-8")
        (self.workdir / "log4j2.properties").write_text(log4j2, encoding="utf-8")

    # ------------------------------------------------------------------ configuration

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def server_properties(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def log_path(self) -> Path:
        """The current (or last) broker run's log."""
        return self.workdir / f"broker-{self.starts}.log"

    def _jvm_options(self, heap: str) -> list[str]:
        return [f"-Xmx{heap}", *self.config.jvm_options,
                f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
                f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                f"-Dkafka.logs.dir={self.workdir}"]

    def _properties(self) -> dict[str, str]:
        c = self.config
        props = {
            "log.dirs": ",".join(str(d) for d in self.log_dirs),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "background.threads": "2",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(8 << 20),
            "socket.request.max.bytes": str(100 << 20),
        }
        if c.mode is BrokerMode.ZOOKEEPER:
            props.update({"broker.id": str(c.node_id),
                          "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                          "zookeeper.connect": f"127.0.0.1:{self.zookeeper_port}",
                          "zookeeper.connection.timeout.ms": "30000"})
        else:
            props.update({"process.roles": "broker,controller",
                          "node.id": str(c.node_id),
                          "controller.quorum.voters": f"{c.node_id}@127.0.0.1:{self.controller_port}",
                          "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:"
                                       f"{self.controller_port}",
                          "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                          "controller.listener.names": "CONTROLLER",
                          "inter.broker.listener.name": "PLAINTEXT",
                          "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                          "metadata.log.dir": str(self.metadata_dir)})
        props.update(self.properties)
        return props

    def _existing_cluster_id(self) -> str | None:
        for d in self.log_dirs:
            meta = d / "meta.properties"
            if meta.is_file():
                cid = read_properties(meta).get("cluster.id")
                if cid:
                    return cid
        return None

    # ------------------------------------------------------------------ lifecycle

    def start(self, on_wait: Callable[[], None] | None = None) -> None:
        """Start ZooKeeper (mode 3.x, once) and the broker; return when the broker serves requests. ``on_wait`` is
        called between polls while the broker starts (a progress line from its log, say)."""
        if self.broker is not None and self.broker.alive():
            raise SandboxError(f"the sandbox broker is already running (pid {self.broker.pid})")
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        if self.config.mode is BrokerMode.ZOOKEEPER:
            self._start_zookeeper()
        write_properties(self.server_properties, self._properties())
        if self.config.mode is BrokerMode.KRAFT:
            self._format()
        self.starts += 1
        self.broker = start_java("broker", self.java, self._classpath, "kafka.Kafka", [str(self.server_properties)],
                                 log=self.log_path, jvm_options=self._jvm_options(self.config.heap),
                                 cwd=self.workdir)
        self._wait_ready(on_wait)

    def _start_zookeeper(self) -> None:
        if self.zookeeper is not None and self.zookeeper.alive():
            return
        zk_props = self.workdir / "zookeeper.properties"
        write_properties(zk_props, {"dataDir": str(self.workdir / "zookeeper"), "clientPort": str(self.zookeeper_port),
                                    "clientPortAddress": "127.0.0.1", "maxClientCnxns": "0",
                                    "admin.enableServer": "false", "4lw.commands.whitelist": "srvr"})
        self.zookeeper = start_java("zookeeper", self.java, self._classpath,
                                    "org.apache.zookeeper.server.quorum.QuorumPeerMain", [str(zk_props)],
                                    log=self.workdir / "zookeeper.log", jvm_options=self._jvm_options("256m"),
                                    cwd=self.workdir)
        deadline = time.monotonic() + self.config.ready_timeout
        while not _zookeeper_ok(self.zookeeper_port):
            if not self.zookeeper.alive():
                raise SandboxError(f"ZooKeeper exited with status {self.zookeeper.popen.returncode}:\n"
                                   f"{tail(self.zookeeper.log)}", path=self.zookeeper.log)
            if time.monotonic() > deadline:
                self.zookeeper.kill()
                raise SandboxError(f"ZooKeeper did not answer within {self.config.ready_timeout:g} s:\n"
                                   f"{tail(self.zookeeper.log)}", path=self.zookeeper.log)
            time.sleep(POLL)

    def _format(self) -> None:
        """``kafka-storage.sh format`` for every dir without a ``meta.properties`` (the metadata dir at least); no
        JVM when every dir has one (a restart), where the tool's ``--ignore-formatted`` would change nothing."""
        if self.cluster_id is None:
            self.cluster_id = self.config.cluster_id or self._existing_cluster_id() or random_cluster_id()
        if all((d / "meta.properties").is_file() for d in (*self.log_dirs, self.metadata_dir)):
            return
        log = self.workdir / "format.log"
        cmd = [str(self.java), *self._jvm_options("256m"), "-cp", self._classpath, "kafka.tools.StorageTool",
               "format", "-t", self.cluster_id, "-c", str(self.server_properties), "--ignore-formatted"]
        with open(log, "ab") as out:
            try:
                r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   timeout=self.config.ready_timeout, start_new_session=True,
                                   preexec_fn=_die_with_parent, check=False)
            except subprocess.TimeoutExpired as e:
                raise SandboxError(f"kafka-storage format did not finish within {self.config.ready_timeout:g} s",
                                   path=log) from e
        if r.returncode != 0:
            raise SandboxError(f"kafka-storage format failed (exit {r.returncode}):\n{tail(log)}", path=log)

    def _wait_ready(self, on_wait: Callable[[], None] | None = None) -> None:
        assert self.broker is not None
        deadline = time.monotonic() + self.config.ready_timeout
        while True:
            if not self.broker.alive():
                status = self.broker.popen.returncode
                raise SandboxError(f"the broker exited with status {status} before it was ready:\n"
                                   f"{tail(self.log_path)}", path=self.log_path)
            if _STARTED.search(self.log_text()) and port_open(self.port):
                return
            if time.monotonic() > deadline:
                self.broker.kill()
                raise SandboxError(f"the broker was not ready within {self.config.ready_timeout:g} s:\n"
                                   f"{tail(self.log_path)}", path=self.log_path)
            if on_wait is not None:
                on_wait()
            time.sleep(POLL)

    def stop(self) -> None:
        """Stop the broker cleanly (it writes ``.kafka_cleanshutdown``); ZooKeeper keeps running."""
        if self.broker is not None:
            self.broker.stop(self.config.stop_timeout)

    def kill(self) -> None:
        """Kill the broker (SIGKILL): what a crash leaves on disk."""
        if self.broker is not None:
            self.broker.kill()

    def close(self) -> None:
        """Stop the broker, then ZooKeeper. Safe to call more than once."""
        try:
            self.stop()
        finally:
            if self.zookeeper is not None:
                self.zookeeper.stop(self.config.stop_timeout)

    def __enter__(self) -> BrokerSandbox:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ the broker's own words

    def log_text(self) -> str:
        """This run's broker log so far."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def wait_for_log(self, pattern: str | re.Pattern[str], timeout: float = 60.0) -> re.Match[str]:
        """Wait (bounded) until this run's log has a line matching ``pattern``."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        read, pending = 0, b""  # each poll reads only what was appended since the last, and searches its whole
        while True:             # lines (a match never spans lines)
            try:
                with open(self.log_path, "rb") as f:
                    f.seek(read)
                    new = f.read()
            except FileNotFoundError:
                new = b""
            read += len(new)
            complete, _, pending = (pending + new).rpartition(b"\n")
            m = rx.search(complete.decode("utf-8", errors="replace"))
            if m:
                return m
            if self.broker is not None and not self.broker.alive():
                raise SandboxError(f"the broker exited while waiting for /{rx.pattern}/:\n{tail(self.log_path)}",
                                   path=self.log_path)
            if time.monotonic() > deadline:
                raise SandboxError(f"no /{rx.pattern}/ in the broker log within {timeout:g} s", path=self.log_path)
            time.sleep(POLL)
