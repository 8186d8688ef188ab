"""What a rehearsal needs before any broker starts, each refused in one line (exit 2): a Kafka install, a Java that
can run it, a free port, and a private temp dir that nothing outlives.

The sandbox dir is ``kafkatool-rehearse-<random>`` in the temp dir, holding ``owner.pid``; a rehearsal killed with
SIGKILL cannot remove its own (its broker dies with it: ``PR_SET_PDEATHSIG``), so each rehearsal first removes the
sandbox dirs whose owner is no longer running.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from kafkatool.canary.sandbox import KafkaInstall, SandboxError, find_java
from kafkatool.errors import KafkaToolError
from kafkatool.util.procs import alive

SANDBOX_PREFIX = "kafkatool-rehearse-"
OWNER = "owner.pid"
_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


class RehearseError(KafkaToolError):
    """The rehearsal could not run (no install, no usable Java, no port, a broker that never became ready): exit 2."""


def locate_install(kafka: str | os.PathLike[str] | None) -> KafkaInstall:
    """``kafka`` (a Kafka distribution or its ``libs/``), else ``$KAFKA_HOME``."""
    where = kafka if kafka is not None else os.environ.get("KAFKA_HOME")
    if not where:
        raise RehearseError("no Kafka install given and KAFKA_HOME is not set", field="kafka")
    try:
        return KafkaInstall.locate(where)
    except SandboxError as e:
        raise RehearseError(e.message, path=e.path, field="kafka") from None


def java_major(java: Path, timeout: float = 60.0) -> int:
    """The major version ``java -version`` reports (1.8 -> 8)."""
    try:
        r = subprocess.run([str(java), "-version"], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                           check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RehearseError(f"cannot run {java} -version: {getattr(e, 'strerror', None) or e}",
                            field="java_home") from None
    text = (r.stderr + r.stdout).decode("utf-8", "replace")
    m = _JAVA_VERSION.search(text)
    if r.returncode != 0 or m is None:
        first = next((x.strip() for x in text.splitlines() if x.strip()), f"exit {r.returncode}")
        raise RehearseError(f"{java} is not a working Java: {first}", field="java_home")
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def required_java(install: KafkaInstall) -> int:
    """Kafka 4.0's broker needs Java 17 (KIP-750, KIP-1013); 3.x runs on Java 8 and newer."""
    return 17 if install.major >= 4 else 8


def check_java(install: KafkaInstall, java_home: str | None) -> tuple[Path, int]:
    try:
        java = find_java(java_home)
    except SandboxError as e:
        raise RehearseError(e.message, path=e.path, field="java_home") from None
    major = java_major(java)
    need = required_java(install)
    if major < need:
        raise RehearseError(f"Kafka {install.version}'s broker needs Java {need} or newer; {java} is Java {major}",
                            field="java_home")
    return java, major


def check_port(port: int | None) -> None:
    if port is None:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise RehearseError(f"port {port} on 127.0.0.1 is in use ({e.strerror})", field="port") from None


def remove_stale_sandboxes(root: Path) -> list[Path]:
    """Sandbox dirs of rehearsals that are no longer running (killed: they could not clean up)."""
    removed: list[Path] = []
    try:
        candidates = [d for d in root.iterdir() if d.name.startswith(SANDBOX_PREFIX) and d.is_dir()]
    except OSError:
        return removed
    for d in candidates:
        try:
            pid = int((d / OWNER).read_text().strip())
        except (OSError, ValueError):
            continue  # not ours, or still being created
        if pid != os.getpid() and not alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def sandbox_root(temp_dir: Path | None) -> Path:
    """Where sandboxes go (``temp_dir``, else the system's temp dir), rid of those of killed rehearsals."""
    root = Path(temp_dir) if temp_dir is not None else Path(tempfile.gettempdir())
    if not root.is_dir():
        raise RehearseError("the temp dir does not exist", path=root, field="temp_dir")
    remove_stale_sandboxes(root)
    return root


def make_sandbox_dir(root: Path) -> Path:
    try:
        d = Path(tempfile.mkdtemp(prefix=SANDBOX_PREFIX, dir=root))
    except OSError as e:
        raise RehearseError(f"cannot create a sandbox dir: {e.strerror}", path=root, field="temp_dir") from None
    (d / OWNER).write_text(f"{os.getpid()}\n")
    return d
