"""6. ``kafkatool canary rehearse``: canaries loaded and served by real brokers.

* good canaries pass: the ZooKeeper 3.9 broker's own v0/v1 partitions (written at ``inter.broker.protocol.version``
  2.8 with per-topic formats 0.9.0 / 0.10.2, LogAppendTime, compacted by its cleaner), converted and rehearsed on
  a 3.9 ZooKeeper broker at IBP 2.8 with ``log.message.format.version=0.11.0`` (the plan's phase 3 done); and
  ``kafkatool sample``'s partitions (v0/v1/v2, transactions, zstd, ``__consumer_offsets``) on 3.9 KRaft and 4.4,
  the latter with the clients it refuses;
* the same old-format canary on that broker still at ``log.message.format.version=0.10.2`` fails: it sends the v2
  canary unconverted to Fetch v2/v3;
* one canary with three damaged partitions (a flipped byte, a deleted ``.index``, batches over the topic's
  ``max.message.bytes``) fails with the broker's own words for each, on 3.9 KRaft and on 4.4;
* a Kafka install that never gets ready is one line, and leaves no process and no temp dir; a rehearsal killed with
  SIGKILL takes its broker with it.

One broker (set) at a time: each rehearsal starts and stops its own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkatool.canary.sandbox import KafkaInstall
from tests.broker.cds import java_home
from tests.broker.runs import ZooKeeperRun
from tests.broker.tools import Run, kafkatool
from tests.support.canary_dirs import tree
from tests.support.paths import ROOT

SAMPLE_PARTITIONS = "legacy-events-0,sensors-2016-0,sensors-2017-0,payments-0,clickstream-0,__consumer_offsets-0"
ZK_PARTITIONS = "v0-events-0,v1-events-0,v1-append-0,v1-compact-0"
CLIENTS = "java-client 0.10.2  # billing\nlibrdkafka 0.9.5\njava-client 2.0.1\njava-client 3.7.0\n"


def _canary(log_dir: Path, partitions: str, w: Path) -> Path:
    r = kafkatool("canary", "run", log_dir, "--partitions", partitions, "--workdir", w, "--quiet")
    assert r.returncode == 0, r.stderr
    return w


def _copy(w: Path, dst: Path) -> Path:
    shutil.copytree(w, dst, symlinks=True)
    return dst


def processes_under(path: Path) -> list[int]:
    """Processes whose command line names ``path`` (a broker or ZooKeeper of a sandbox in it)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(path) in cmd and state != "Z":
            out.append(int(d.name))
    return out


def rehearse(w: Path, install: KafkaInstall, temp: Path, *args: str | os.PathLike[str]) -> tuple[Run, dict]:
    temp.mkdir(exist_ok=True)
    # The same Java given the tests' class-data-sharing archive (tests/broker/cds.py). Started that fast, a 4.4 node
    # sends its controller registration before its own controller is active in about one restart in four (refused
    # with NotControllerException, logged at ERROR, sent again): the rehearsal's judge knows that line as expected.
    if "--java-home" not in args:
        home = java_home(install)
        args = (*args, "--java-home", home) if home is not None else args
    r = kafkatool("canary", "rehearse", w, "--kafka", install.libs, "--temp-dir", temp, *args)
    assert not processes_under(temp), "a JVM outlived the rehearsal"
    assert [p.name for p in temp.iterdir()] == [], "the sandbox dir was left behind"
    doc = json.loads((w / "rehearse.json").read_text()) if (w / "rehearse.json").exists() else {}
    return r, doc


@pytest.fixture(scope="module")
def sample_canary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("rehearse-sample")
    r = kafkatool("sample", base / "logs", "--quiet")
    assert r.returncode == 0, r.stderr
    return _canary(base / "logs", SAMPLE_PARTITIONS, base / "canary")


@pytest.fixture(scope="module")
def zk_canary(zookeeper39: ZooKeeperRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _canary(zookeeper39.clean, ZK_PARTITIONS, tmp_path_factory.mktemp("rehearse-zk") / "canary")


def _reads(doc: dict, partition: str) -> dict[str, dict]:
    (p,) = [p for p in doc["partitions"] if p["partition"] == partition]
    return {r["reader"]: r for r in p["reads"]}


def _unchanged(w: Path, before: dict[str, tuple[str, int]]) -> None:
    after = {k: v for k, v in tree(w).items() if not k.startswith("rehearse.")}
    assert after == before, "the rehearsal wrote into W beyond rehearse.json and rehearse.txt"


def test_an_old_format_canary_passes_on_zookeeper_39(zk_canary: Path, kafka3: KafkaInstall, tmp_path: Path) -> None:
    w = _copy(zk_canary, tmp_path / "w")
    before = tree(w)
    props = tmp_path / "server.properties"
    props.write_text("broker.id=7\nzookeeper.connect=zk:2181/kafka\ninter.broker.protocol.version=2.8\n"
                     "log.message.format.version=0.11.0\nlisteners=PLAINTEXT://:9092\n")
    r, doc = rehearse(w, kafka3, tmp_path / "tmp", "--server-properties", props)
    assert r.returncode == 0, r.stderr + r.stdout
    assert doc["ok"] and doc["mode"] == "zookeeper" and doc["findings"] == []
    assert doc["server_properties_taken"] == {"inter.broker.protocol.version": "2.8",
                                              "log.message.format.version": "0.11.0"}
    leo = {q["name"]: q["log_end_offset"] for q in json.loads((w / "manifest.json").read_text())["partitions"]}
    for name in ZK_PARTITIONS.split(","):
        reads = _reads(doc, name)
        assert set(reads) == {"Fetch v11 read_uncommitted", "Fetch v11 read_committed"} | {
            f"Fetch v{v} (reads format v{0 if v < 2 else 1})" for v in range(4)}
        for reader, x in reads.items():
            assert x["ok"] and x["records"] == x["expected"] > 0 and x["missing"] == x["extra"] == 0, (name, reader)
        (p,) = [p for p in doc["partitions"] if p["partition"] == name]
        # loaded at the canary's end; recovered, produced records included, at the end the clean stop wrote
        assert p["loaded"]["log_end_offset"] == leo[name]
        assert p["recovered"]["log_end_offset"] == p["expected_log_end_offset"] == leo[name] + 3 * 3 + p["produced"][
            -1]["records"]
        assert all(x["ok"] for x in p["produced"]) and len(p["produced"]) == 4
        assert [b["kind"] for b in p["broker_log"] if b["kind"] == "finding"] == []
    # the v1 LogAppendTime partition keeps its timestamps as type LogAppendTime for every reader that has one
    assert _reads(doc, "v1-append-0")["Fetch v3 (reads format v1)"]["ok"]
    costs = {c["fetch_version"]: c for c in doc["costs"]}
    assert sorted(costs) == [0, 1, 2, 3]
    for c in costs.values():  # the broker's own measure of every old fetch
        assert c["logged"] == c["fetches"] > 0 and c["temporary_memory_bytes"] > 0 and c["conversion_ms"] > 0
    assert "PASSED" in r.stdout.splitlines()[0] and (w / "rehearse.txt").read_text() == r.stdout
    _unchanged(w, before)


def test_the_same_canary_fails_while_the_format_is_still_v1(zk_canary: Path, kafka3: KafkaInstall,
                                                            tmp_path: Path) -> None:
    """KIP-32/KIP-98's order: raise log.message.format.version before any v2 data. At IBP 2.8 the broker converts
    by the topic's format, not the bytes: the v2 canary goes to Fetch v2/v3 consumers unconverted."""
    w = _copy(zk_canary, tmp_path / "w")
    props = tmp_path / "server.properties"
    props.write_text("zookeeper.connect=zk:2181\ninter.broker.protocol.version=2.8\nlog.message.format.version=0.10.2\n")
    r, doc = rehearse(w, kafka3, tmp_path / "tmp", "--server-properties", props)
    assert r.returncode == 1, r.stderr
    for name in ZK_PARTITIONS.split(","):
        reads = _reads(doc, name)
        for v in (2, 3):
            x = reads[f"Fetch v{v} (reads format v1)"]
            assert not x["ok"] and "message format v2 to a Fetch" in x["stop"] and "not down-converted" in x["stop"]
        assert reads["Fetch v1 (reads format v0)"]["ok"] and reads["Fetch v11 read_uncommitted"]["ok"]
    lines = [x for x in r.stderr.splitlines() if x.startswith("canary rehearse: ") and ": read: Fetch v" in x]
    assert len(lines) == 2 * 4


def test_a_sample_canary_passes_on_kraft_39(sample_canary: Path, kafka3: KafkaInstall, tmp_path: Path) -> None:
    w = _copy(sample_canary, tmp_path / "w")
    r, doc = rehearse(w, kafka3, tmp_path / "tmp", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert doc["ok"] and doc["mode"] == "kraft" and doc["api_versions"]["Fetch"].startswith("v0-")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[-1]["type"] == "summary" and lines[-1]["ok"]
    payments = _reads(doc, "payments-0")
    committed, uncommitted = payments["Fetch v11 read_committed"], payments["Fetch v11 read_uncommitted"]
    assert committed["ok"] and uncommitted["ok"] and 0 < committed["records"] < uncommitted["records"]
    # an old consumer meets a segment that ends in transaction markers: the broker sends it an overflow batch only,
    # as it would from the originals (the fetch simulator agrees): not the canary's doing
    old = payments["Fetch v3 (reads format v1)"]
    assert old["ok"] and old["stop"].startswith("stalled") and "the originals stop it there too" in old["expected_stop"]
    click = _reads(doc, "clickstream-0")  # zstd: below Fetch v10 the broker refuses, from the originals too
    for v in range(4):
        x = click[f"Fetch v{v} (reads format v{0 if v < 2 else 1})"]
        assert x["ok"] and "UNSUPPORTED_COMPRESSION_TYPE" in x["stop"] and x["records"] == 0
    offsets = _reads(doc, "__consumer_offsets-0")
    assert offsets["Fetch v11 read_uncommitted"]["records"] > 0 and all(x["ok"] for x in offsets.values())


def test_a_sample_canary_passes_on_kafka_4_which_refuses_old_clients(sample_canary: Path, kafka4: KafkaInstall,
                                                                      tmp_path: Path) -> None:
    w = _copy(sample_canary, tmp_path / "w")
    clients = tmp_path / "clients.txt"
    clients.write_text(CLIENTS)
    r, doc = rehearse(w, kafka4, tmp_path / "tmp", "--clients", clients)
    assert r.returncode == 0, r.stderr + r.stdout
    assert doc["api_versions"]["Fetch"].startswith("v4-") and doc["costs"] == []
    for p in doc["partitions"]:
        assert {x["reader"] for x in p["reads"]} == {"Fetch v11 read_uncommitted", "Fetch v11 read_committed"}
        assert all(x["ok"] for x in p["reads"])
    verdicts = {c["client"]: c["verdict"] for c in doc["clients"]}
    assert verdicts == {"java-client 0.10.2 (billing)": "refused", "librdkafka 0.9.5": "refused",
                        "java-client 2.0.1": "reads as stored", "java-client 3.7.0": "reads as stored"}
    refusals = "\n".join(doc["refusals"])
    assert "UnsupportedVersionException: Received request for api with key 1 (Fetch) and unsupported version 3" \
        in refusals
    assert "(Produce) and unsupported version 1" in refusals and "(Produce) and unsupported version 2" in refusals


def _flip_middle_batch(segment: Path) -> int:
    data = bytearray(segment.read_bytes())
    positions, p = [], 0
    while p + 12 <= len(data):
        positions.append(p)
        p += 12 + int.from_bytes(data[p + 8:p + 12], "big")
    at = positions[len(positions) // 2]
    data[at + 70] ^= 0x55  # inside its records: the CRC no longer matches
    segment.write_bytes(bytes(data))
    return at


@pytest.mark.parametrize("kafka", ["kafka3", "kafka4"])
def test_damaged_canaries_fail_in_the_brokers_own_words(sample_canary: Path, kafka: str, request: pytest.FixtureRequest,
                                                        tmp_path: Path) -> None:
    """One rehearsal, three partitions, one problem each; every finding names its partition. Kafka 4's LogLoader
    (now Java, in storage/) says the same words as 3.9's."""
    install: KafkaInstall = request.getfixturevalue(kafka)
    w = _copy(sample_canary, tmp_path / "w")
    segs = sorted((w / "canary" / "legacy-events-0").glob("*.log"))
    damaged = segs[len(segs) // 2]
    _flip_middle_batch(damaged)
    index = sorted((w / "canary" / "sensors-2017-0").glob("*.index"))[1]
    index.unlink()
    r, doc = rehearse(w, install, tmp_path / "tmp", "--max-message-bytes", "sensors-2016=2000")
    assert r.returncode == 1, r.stderr
    by = {}
    for f in doc["findings"]:
        by.setdefault(f["partition"], []).append(f)

    corrupt = " ".join(f["broker_words"] or "" for f in by["legacy-events-0"])
    assert f"Found invalid messages in log segment <sandbox>/data/legacy-events-0/{damaged.name}" in corrupt
    assert "CorruptRecordException: Record is corrupt (stored crc = " in corrupt
    assert f"Corruption found in segment {int(damaged.stem)}, truncating to offset" in corrupt
    assert any(f["phase"] == "read" for f in by["legacy-events-0"])  # the broker served the damaged batch too

    missing = " ".join(f["broker_words"] or f["text"] for f in by["sensors-2017-0"])
    assert (f"Could not find offset index file corresponding to log file <sandbox>/data/sensors-2017-0/"
            f"{index.stem}.log, recovering segment and rebuilding index files...") in missing
    assert f"W/canary lacks {index.name}" in missing

    (big,) = [f for f in by["sensors-2016-0"] if f["phase"] == "produce"]
    assert "MESSAGE_TOO_LARGE" in big["broker_words"] and "max.message.bytes 2000" in big["text"]
    assert {f["partition"] for f in doc["findings"]} == {"legacy-events-0", "sensors-2017-0", "sensors-2016-0"}
    for name in ("legacy-events-0", "sensors-2017-0", "sensors-2016-0"):
        assert f"canary rehearse: {name}: " in r.stderr


def _java_whose_broker_never_starts(tmp_path: Path) -> Path:
    """A Java home whose ``java`` is the real one for everything (``-version``, the storage format) but the broker's
    main class, which it replaces by a process that never listens: a broker that never gets ready, on any machine
    (a real broker on an idle machine was sometimes ready within the test's 2 s)."""
    real = shutil.which("java")
    assert real is not None
    home = tmp_path / "jdk-stalled"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = kafka.Kafka ] && exec sleep 600; done\n'
                    f'exec {real} "$@"\n')
    java.chmod(0o755)
    return home


def test_a_broker_that_never_gets_ready_is_one_line_and_leaves_nothing(sample_canary: Path, kafka3: KafkaInstall,
                                                                       tmp_path: Path) -> None:
    w = _copy(sample_canary, tmp_path / "w")
    r, _ = rehearse(w, kafka3, tmp_path / "tmp", "--timeout", "2", "--java-home",
                    _java_whose_broker_never_starts(tmp_path))
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert line.startswith("kafkatool canary rehearse: error: --timeout: the broker was not ready within 2 s"), line
    assert [x for x in r.stderr.splitlines() if x.startswith("kafkatool canary rehearse: error")] == [line]
    assert not (w / "rehearse.json").exists()


def test_sigkill_mid_rehearsal_takes_the_broker_along(sample_canary: Path, kafka3: KafkaInstall,
                                                      tmp_path: Path) -> None:
    w = _copy(sample_canary, tmp_path / "w")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "kafkatool", "canary", "rehearse", str(w), "--kafka",
                          str(kafka3.libs), "--temp-dir", str(temp)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    assert p.stderr is not None
    broker = None
    try:
        deadline = time.monotonic() + 180
        for line in p.stderr:  # the second start: the broker loading the canary
            if ": load: broker pid " in line:
                broker = int(line.split(": load: broker pid ")[1].split(":")[0])
                break
            assert time.monotonic() < deadline
        assert broker is not None and processes_under(temp)
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        deadline = time.monotonic() + 30
        while processes_under(temp) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_under(temp) == [], "the broker outlived the killed rehearsal (PR_SET_PDEATHSIG)"
        assert not Path(f"/proc/{broker}").exists() or Path(f"/proc/{broker}/stat").read_text().split(") ")[1][0] \
            == "Z"
        (left,) = list(temp.iterdir())  # a killed rehearsal cannot clean up; the next one does
        r = kafkatool("canary", "rehearse", w, "--kafka", tmp_path, "--temp-dir", temp)
        assert r.returncode == 2 and "not a Kafka install" in r.stderr
        assert not left.exists()
    finally:
        if p.poll() is None:
            p.kill()
        for pid in processes_under(temp):
            os.kill(pid, signal.SIGKILL)
