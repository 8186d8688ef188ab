"""The test JVMs' options: a class-data-sharing archive (AppCDS) of a Kafka install's classpath, made once per
install and Java and cached outside the repo beside the jars, and a small JVM for short runs.

Most of a test broker's CPU is its JVM starting: loading, verifying and linking some 6,000 classes (Scala's and
Kafka's), then compiling. The archive holds them loaded, verified and laid out; each JVM maps it instead (a broker
start, ZooKeeper, ``StorageTool``, ``DumpLogSegments``: about 40% less CPU each). It is made by a training run:
a KRaft broker (and in 3.x a ZooKeeper-mode one) started, given topics, produced to with every codec, read and
stopped, and DumpLogSegments run on what it wrote, each JVM listing the classes it loaded
(``-XX:DumpLoadedClassList``); ``java -Xshare:dump`` archives their union. Cached as
``<cache>/cds/kafka-<version>-<key>.jsa`` (cache: tests/support/kafkaref.cache_dir), the key naming the Java and
every jar (path, size, mtime): a changed one makes a new archive. Parallel pytest processes wait for one (a file
lock).

The archive changes what the JVM loads only in speed: a class comes from it only when the runtime classpath starts
with the one it was made for and every jar is unchanged (else the JVM loads classes as usual; ``-Xlog:cds*=off``
keeps it from saying so on stdout, which the DumpLogSegments comparisons read). Timing does change: a Kafka 4.4
broker restarted this fast often has its controller reject its own first registration (NotControllerException,
logged at ERROR, retried), harmless but an ERROR (tests/broker/test_rehearse.py keeps 4.x rehearsals off it). A
training that fails leaves a ``.failed`` note with its traceback, and the tests run without an archive (a warning
says so).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path

from kafkatool.canary.sandbox import BrokerMode, BrokerSandbox, KafkaInstall, SandboxConfig, find_java
from tests.support.kafkaref import cache_dir

RECIPE = 1  # bump when the training changes: a new key, a new archive
# Short-lived JVMs on a 2-core machine: the serial collector (no concurrent GC threads) and C1 only.
BASE_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
TRAIN_TIMEOUT = 300


def jvm_options(install: KafkaInstall) -> tuple[str, ...]:
    """The options for every test JVM of ``install``'s classpath (a broker, ZooKeeper, Kafka's tools)."""
    return (*BASE_OPTIONS, *archive_options(install))


def archive_options(install: KafkaInstall) -> tuple[str, ...]:
    """``-XX:SharedArchiveFile`` for ``install``'s classpath (made on first use), or nothing if it cannot be made."""
    archive = archive_path(install)
    if not archive.is_file():
        archive.parent.mkdir(parents=True, exist_ok=True)
        with open(archive.parent / f"kafka-{install.version}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            failed = archive.with_suffix(".failed")
            if not archive.is_file() and not failed.is_file():
                try:
                    make_archive(install, archive)
                except Exception:  # an optimisation: the tests run as well without it
                    failed.write_text(traceback.format_exc())
            if not archive.is_file():
                warnings.warn(f"no class-data-sharing archive for Kafka {install.version}'s test JVMs (see {failed})",
                              stacklevel=2)
                return ()
    return ("-Xshare:auto", f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off")


def java_home(install: KafkaInstall) -> Path | None:
    """A Java home whose ``java`` is the real one given the archive's options first, for what takes a Java home but
    no JVM options (``canary rehearse --java-home``: the rehearsal's own options follow, its collector among them).
    Made once beside the archive; None without an archive."""
    options = archive_options(install)
    if not options:
        return None
    home = archive_path(install).with_suffix("")
    if not (home / "bin" / "java").is_file():
        tmp = Path(tempfile.mkdtemp(prefix="java-", dir=home.parent))
        (tmp / "bin").mkdir()
        real = os.path.realpath(find_java())
        script = tmp / "bin" / "java"
        script.write_text(f"#!/bin/sh\nexec {shlex.join([real, *options])} \"$@\"\n")
        script.chmod(0o755)
        try:
            tmp.rename(home)
        except OSError:  # another process made it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    return home


def archive_path(install: KafkaInstall) -> Path:
    java = Path(os.path.realpath(find_java()))
    h = hashlib.sha256(f"recipe {RECIPE}\n{java}\n".encode())
    for f in (java, *sorted(java.parent.parent.glob("lib/server/libjvm.so"))):
        st = f.stat()
        h.update(f"{f} {st.st_size} {st.st_mtime_ns}\n".encode())
    for jar in install.classpath().split(os.pathsep):
        st = os.stat(jar)
        h.update(f"{jar} {st.st_size} {st.st_mtime_ns}\n".encode())
    return cache_dir() / "cds" / f"kafka-{install.version}-{h.hexdigest()[:16]}.jsa"


def make_archive(install: KafkaInstall, archive: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"cds-{install.version}-", dir=archive.parent))
    try:
        lists = work / "lists"
        lists.mkdir()
        train(install, work, (*BASE_OPTIONS, f"-XX:DumpLoadedClassList={lists}/classes-%p.lst"))
        seen: dict[str, None] = {}
        for f in sorted(lists.glob("*.lst")):
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                if line and not line.startswith("#"):
                    seen.setdefault(line)
        classlist = work / "classes.lst"
        classlist.write_text("".join(f"{line}\n" for line in seen), encoding="utf-8")
        tmp = work / "archive.jsa"
        log = work / "dump.log"
        with open(log, "wb") as out:
            r = subprocess.run([str(find_java()), "-Xshare:dump", f"-XX:SharedClassListFile={classlist}",
                                f"-XX:SharedArchiveFile={tmp}", "-cp", install.classpath()],
                               stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=TRAIN_TIMEOUT,
                               check=False)
        if r.returncode != 0 or not tmp.is_file():
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise RuntimeError(f"java -Xshare:dump failed (exit {r.returncode}):\n{tail}")
        tmp.rename(archive)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for old in archive.parent.glob(f"kafka-{install.version}-*"):  # made for jars or a Java since replaced
        if old.name not in (archive.name, archive.stem):  # the archive and its Java home (java_home)
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)


def train(install: KafkaInstall, work: Path, options: Sequence[str]) -> None:
    """Start, use and stop the brokers the tests start, and run DumpLogSegments on their logs."""
    modes = [BrokerMode.KRAFT] + ([BrokerMode.ZOOKEEPER] if install.has_zookeeper else [])
    for mode in modes:
        props = {"log.cleaner.backoff.ms": "200"}
        if mode is BrokerMode.ZOOKEEPER:  # the tests' ZooKeeper broker writes v0/v1 (tests/broker/workloads.py)
            props["inter.broker.protocol.version"] = "2.8"
        config = SandboxConfig(mode=mode, jvm_options=tuple(options), properties=props)
        with BrokerSandbox(install, work / mode.value, config) as b:
            b.start()
            _workload(b, mode)
            b.stop()
            files = sorted(f for f in b.log_dirs[0].glob("*/*") if f.is_file() and "." in f.name)
        main = "kafka.tools.DumpLogSegments" if install.major < 4 else "org.apache.kafka.tools.DumpLogSegments"
        for extra in (["--deep-iteration", "--print-data-log"], ["--offsets-decoder"]):
            subprocess.run([str(find_java()), *options, "-cp", install.classpath(), main, *extra, "--files",
                            ",".join(map(str, files))], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=TRAIN_TIMEOUT, check=False)


def _workload(b: BrokerSandbox, mode: BrokerMode) -> None:
    from tests.broker.clients import consume_partition, create_topics, producer, send_all
    from tests.broker.workloads import LEGACY_CODECS, V2_CODECS, commit_group_offsets, messages, produce_codecs

    small = {"segment.bytes": "16384"} if b.install.major < 4 else {}  # 4.x: at least 1 MiB
    topics: dict[str, tuple[int, dict[str, str]]] = {
        "codecs": (len(V2_CODECS), small),  # commit_group_offsets commits one offset per codec
        "compacted": (1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", **small}),
    }
    if mode is BrokerMode.ZOOKEEPER:
        topics["v1"] = (1, {"message.format.version": "0.10.2"})
    create_topics(b, topics)
    produce_codecs(b, "codecs", 0, V2_CODECS, seed=1, per_codec=40, headers=True, enable_idempotence=True)
    p = producer(b, compression_type="gzip")
    try:
        send_all(p, "compacted", 0, messages(2, 300, keys=20, tombstones=0.1, null_keys=0.0), batch_every=25)
    finally:
        p.close()
    if mode is BrokerMode.ZOOKEEPER:
        produce_codecs(b, "v1", 0, LEGACY_CODECS, seed=3, per_codec=20)
        consume_partition(b, "v1", 0, api_version=(0, 10, 1))
    else:
        tp = producer(b, transactional_id="cds-training", compression_type="lz4")
        try:
            tp.init_transactions()
            for commit in (True, False):
                tp.begin_transaction()
                for m in messages(4, 10):
                    tp.send("codecs", value=m.value, key=m.key, partition=0)
                tp.flush(timeout=60)
                if commit:
                    tp.commit_transaction()
                else:
                    tp.abort_transaction()
        finally:
            tp.close()
    consume_partition(b, "codecs", 0)
    commit_group_offsets(b, 0)
