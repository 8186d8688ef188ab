"""Kafka installs for the broker tests: the jars of ``kafka_2.13`` (and ``kafka-tools``) resolved by Maven.

``tests/broker/pom.xml`` is resolved with ``mvn dependency:copy-dependencies`` into
``<cache>/kafka-<version>/libs/`` (cache: ``$KAFKATOOL_CACHE_DIR``, else ``$XDG_CACHE_HOME/kafkatool``, else
``~/.cache/kafkatool``), once: a ``.resolved`` file beside ``libs/`` records the pom's hash, and while it matches
no Maven runs (reruns work offline). Parallel pytest processes wait for one resolution (a file lock).
``$KAFKATOOL_KAFKA3_HOME`` / ``$KAFKATOOL_KAFKA4_HOME`` point at an install to use instead (a distribution or a
directory of its jars).

The versions: the newest 3.9.x (the last line with ZooKeeper) and the newest 4.x Maven Central serves here.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kafkatool.canary.sandbox import KafkaInstall, SandboxError, find_java
from tests.support.kafkaref import cache_dir

KAFKA3_VERSION = "3.9.2"
KAFKA4_VERSION = "4.4.0"
POM = Path(__file__).resolve().parent / "pom.xml"
MVN_TIMEOUT = 900


class Missing(Exception):
    """What the broker tests need and this machine lacks, in one line."""


def pom_hash() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()[:16]


def _resolve(version: str, dest: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Missing(f"Maven (mvn) is not installed, and Kafka {version}'s jars are not cached in {dest}")
    profile = "kafka3" if version.startswith("3.") else "kafka4"
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="libs-", dir=dest.parent))
    log = dest.parent / "mvn.log"
    cmd = [mvn, "-B", "-q", "-f", str(POM), "-P", profile, f"-Dkafka.version={version}",
           "dependency:copy-dependencies", f"-DoutputDirectory={tmp}"]
    with open(log, "wb") as out:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                           timeout=MVN_TIMEOUT, cwd=dest.parent, check=False)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"mvn could not resolve Kafka {version} (exit {r.returncode}, {log}):\n{tail}")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)


def kafka_install(version: str) -> KafkaInstall:
    """The cached install of ``version``, resolved with Maven on first use. Raises :class:`Missing` when this
    machine cannot have it (no java; no mvn and no cache)."""
    try:
        find_java()
    except SandboxError as e:
        raise Missing(f"Java: {e}") from None
    env = os.environ.get("KAFKATOOL_KAFKA3_HOME" if version.startswith("3.") else "KAFKATOOL_KAFKA4_HOME")
    if env:
        return KafkaInstall.locate(env)
    root = cache_dir() / f"kafka-{version}"
    root.mkdir(parents=True, exist_ok=True)
    marker = root / ".resolved"
    libs = root / "libs"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (marker.is_file() and marker.read_text().strip() == pom_hash() and libs.is_dir()):
            _resolve(version, libs)
            marker.write_text(pom_hash() + "\n")
    install = KafkaInstall.locate(libs)
    assert install.version == version, (install.version, version)
    return install


def require(version: str) -> KafkaInstall:
    """The install, or a skip naming what is missing (a failure with ``CI=true``: CI must run these tests)."""
    try:
        return kafka_install(version)
    except Missing as e:
        message = f"broker tests need {e}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI=true: a skip is a failure)", pytrace=False)
        pytest.skip(message)
