"""The broker runs: each starts one broker set, drives it through its phases and records what the broker did.

One broker set runs at a time (a session fixture each, run to its end before the next starts): the tests then
compare kafkatool with this evidence, broker stopped. A run keeps every broker log under its work dir and
prints the tail of the current one when a phase fails.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.canary.sandbox import BrokerMode, BrokerSandbox, KafkaInstall, SandboxConfig, tail
from kafkatool.fetch import FetchPartition, ParsedPartition
from tests.broker import workloads as w
from tests.broker.cds import jvm_options
from tests.broker.clients import (
    Consumed,
    admin,
    adopt_topic_id,
    alter_topic_configs,
    consume_partition,
    create_offsets_topic,
    create_topics,
    raw_fetch,
    topic_id,
)
from tests.broker.tools import Run, copy_tree, kafkatool


@contextmanager
def phase(broker: BrokerSandbox, name: str) -> Iterator[None]:
    """On failure, say which phase and show the broker's log tail (the logs stay in the work dir)."""
    try:
        yield
    except BaseException as e:
        e.add_note(f"broker phase {name!r} failed; {broker.log_path} ends:\n{tail(broker.log_path, 60)}")
        raise


def wait_until(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s")
        time.sleep(0.25)


def replace_checkpoint_entry(log_dir: Path, name: str, topic: str, partition: int, value: int) -> None:
    """Set one partition's entry of an offset checkpoint file (version 0: ``topic partition offset`` lines)."""
    path = log_dir / name
    lines = path.read_text().splitlines()
    head, entries = lines[:2], lines[2:]
    entries = [e for e in entries if e.split()[:2] != [topic, str(partition)]] + [f"{topic} {partition} {value}"]
    path.write_text("\n".join([head[0], str(len(entries)), *entries]) + "\n")


# ---------------------------------------------------------------------------------------------- fetches

@dataclass(frozen=True)
class FetchCase:
    partition_dir: str  # topic-N
    version: int
    fetch_offset: int
    partition_max_bytes: int
    max_bytes: int
    # the magic the broker takes the log to hold: 2 from IBP 3.0 on; a ZooKeeper broker at IBP 2.8 goes by the
    # topic's message.format.version (fetch-sim --log-magic)
    log_magic: int = 2

    @property
    def id(self) -> str:
        return (f"{self.partition_dir}-v{self.version}-at{self.fetch_offset}-p{self.partition_max_bytes}"
                f"-m{self.max_bytes}")


@dataclass(frozen=True)
class FetchSeen:
    case: FetchCase
    response: bytes  # the whole response, size prefix included
    partition: ParsedPartition


def fetch_cases(partitions: dict[str, tuple[int, int, int]], log_magic: dict[str, int] | None = None
                ) -> list[FetchCase]:
    """``{topic-N: (log start, a mid offset, log end)}`` -> every version x a few offsets and limits."""
    cases = []
    for name, (start, mid, end) in partitions.items():
        magic = (log_magic or {}).get(name, 2)
        for version in range(4):
            for offset in sorted({start, mid, max(start, end - 3)}):
                for pmax in (1 << 20, 3000, 700):
                    cases.append(FetchCase(name, version, offset, pmax, 50 << 20, magic))
            if version == 3:  # the response limit (KIP-74) below the partition's
                cases.append(FetchCase(name, 3, start, 1 << 20, 2000, magic))
    return cases


def record_fetches(broker: BrokerSandbox, cases: list[FetchCase]) -> list[FetchSeen]:
    seen = []
    for c in cases:
        topic, _, part = c.partition_dir.rpartition("-")
        data, parsed = raw_fetch(broker, c.version, [FetchPartition(topic, int(part), c.fetch_offset,
                                                                    c.partition_max_bytes)], max_bytes=c.max_bytes)
        (p,) = parsed.partitions
        seen.append(FetchSeen(c, data, p))
    return seen


# ---------------------------------------------------------------------------------------------- ZooKeeper 3.9

@dataclass
class LoadSeen:
    """A partition kafkatool wrote, loaded by a broker: its log and what consumers read."""

    source: Path  # the broker-written partition dir kafkatool converted (a copy)
    converted: Path  # kafkatool's output partition dir
    convert: Run
    log: str  # the broker's log of the start that loaded it
    consumed: dict[str, list[Consumed]] = field(default_factory=dict)  # by client (api version)


@dataclass
class RecoverySeen:
    before: Path  # the damaged log dir, as kafkatool read it
    report: Run  # reindex-time --recovery-report --format json
    output: Path  # reindex-time --output
    output_run: Run
    log: str  # the broker's log of the recovering start
    after: Path  # the log dir after the broker recovered and stopped cleanly
    damaged: dict[str, str] = field(default_factory=dict)  # partition -> what was done


@dataclass
class ZooKeeperRun:
    install: KafkaInstall
    work: Path
    clean: Path  # the log dir after the first clean stop (before anything was changed)
    logs: list[str]
    fetches: list[FetchSeen]
    downconverted: dict[int, LoadSeen]  # by target magic
    recovery: RecoverySeen
    served: dict[str, list[Consumed]]  # topic-N -> what a modern consumer read before anything was changed


def zookeeper_run(install: KafkaInstall, work: Path) -> ZooKeeperRun:
    config = SandboxConfig(mode=BrokerMode.ZOOKEEPER, properties=w.ZK_BROKER_PROPERTIES,
                           jvm_options=jvm_options(install))
    logs: list[str] = []
    with BrokerSandbox(install, work / "broker", config) as b:
        data = b.log_dirs[0]
        with phase(b, "produce"):
            b.start()
            create_topics(b, w.ZK_TOPICS)
            w.zk_produce(b, 0)
            b.stop()
            logs.append(b.log_text())
            b.start()  # the restart elects the leaders anew: a leader-epoch bump
            w.zk_produce(b, 1)
            b.wait_for_log(r"cleaned log v1-compact-0", timeout=60)
        with phase(b, "fetch"):
            ends = {}
            for name in ("v2-events-0", "v2-events-1", "v2-fetch-0", "v2-fetch-1", "v2-fetch-2", "v2-fetch-3",
                         "v1-events-0"):
                ends[name] = (0, 97, _log_end(b, name))
            fetches = record_fetches(b, fetch_cases(ends, {"v1-events-0": 1}))
            served = {f"{t}-0": consume_partition(b, t, 0)
                      for t in ("v0-events", "v1-events", "v1-append", "v1-compact", "dc0", "dc1")}
        with phase(b, "down-convert formats"):
            alter_topic_configs(b, "dc0", {"message.format.version": "0.9.0"})
            alter_topic_configs(b, "dc1", {"message.format.version": "0.10.2"})
            b.stop()
            logs.append(b.log_text())
        clean = copy_tree(data, work / "clean")
        with phase(b, "load down-converted"):
            downconverted = {}
            for magic, topic in ((0, "dc0"), (1, "dc1")):
                src = copy_tree(data / f"{topic}-0", work / f"dc-source-{topic}" / f"{topic}-0")
                out = work / f"dc-out-{topic}"
                r = kafkatool("downconvert", src, out, "--to-magic", str(magic))
                assert r.returncode == 0, r.stderr
                shutil.rmtree(data / f"{topic}-0")
                shutil.copytree(out / f"{topic}-0", data / f"{topic}-0")
                # the broker recovers every segment of it (validating each batch), not only the last
                replace_checkpoint_entry(data, "recovery-point-offset-checkpoint", topic, 0, 0)
                downconverted[magic] = LoadSeen(src, out / f"{topic}-0", r, "")
            (data / ".kafka_cleanshutdown").unlink()
            b.start()
            for magic, topic in ((0, "dc0"), (1, "dc1")):
                seen = downconverted[magic]
                seen.log = b.log_text()
                old = (0, 9) if magic == 0 else (0, 10, 1)
                seen.consumed[f"api_version={old}"] = consume_partition(b, topic, 0, api_version=old)
                seen.consumed["modern"] = consume_partition(b, topic, 0)
            b.stop()
            logs.append(b.log_text())
        with phase(b, "recovery"):
            damaged = damage_for_recovery(data)
            before = copy_tree(data, work / "recovery-before")
            report = kafkatool("reindex-time", before, "--recovery-report", "--format", "json")
            output = work / "recovery-output"
            # --verify: CRCs checked as the broker's recovery checks them (a header-only rebuild would index past
            # the corrupt batch the broker truncates at)
            output_run = kafkatool("reindex-time", before, "--output", output, "--verify", "--format", "json")
            b.start()
            log = b.log_text()
            b.stop()
            logs.append(b.log_text())
            after = copy_tree(data, work / "recovery-after")
        recovery = RecoverySeen(before, report, output, output_run, log, after, damaged)
    return ZooKeeperRun(install, work, clean, logs, fetches, downconverted, recovery, served)


def _log_end(b: BrokerSandbox, name: str) -> int:
    topic, _, part = name.rpartition("-")
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=b.bootstrap)
    try:
        tp = TopicPartition(topic, int(part))
        return int(c.end_offsets([tp])[tp])
    finally:
        c.close()


def segments(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"))


def damage_for_recovery(data: Path) -> dict[str, str]:
    """Each partition one thing a broker's recovery meets; the clean-shutdown marker removed."""
    done = {}
    rec0 = segments(data / "rec-0")
    rec0[0].with_suffix(".index").unlink()
    rec0[0].with_suffix(".timeindex").unlink()
    done["rec-0"] = f"{rec0[0].name}: .index and .timeindex deleted"
    v0 = segments(data / "v0-events-0")
    v0[1].with_suffix(".index").unlink()
    v0[1].with_suffix(".timeindex").unlink()
    done["v0-events-0"] = f"{v0[1].name}: .index and .timeindex deleted (v0 data)"
    v1 = segments(data / "v1-events-0")
    v1[1].with_suffix(".timeindex").unlink()
    done["v1-events-0"] = f"{v1[1].name}: .timeindex alone deleted"
    rec1 = segments(data / "rec-1")
    active = rec1[-1]
    head = active.read_bytes()[:40]
    with open(active, "ab") as f:  # a torn tail: the first 40 bytes of a batch whose length says more
        f.write(head)
    done["rec-1"] = f"{active.name}: 40-byte torn tail appended"
    rec2 = segments(data / "rec-2")
    first = rec2[0]
    raw = bytearray(first.read_bytes())
    middle = _batch_positions(bytes(raw))[len(_batch_positions(bytes(raw))) // 2]
    raw[middle + 70] ^= 0x55  # inside the records of a middle batch: its CRC no longer matches
    first.write_bytes(bytes(raw))
    replace_checkpoint_entry(data, "recovery-point-offset-checkpoint", "rec", 2, 0)
    done["rec-2"] = f"{first.name}: a byte of the batch at {middle} flipped, recovery point 0"
    (data / ".kafka_cleanshutdown").unlink()
    return done


def _batch_positions(data: bytes) -> list[int]:
    out, p = [], 0
    while p + 12 <= len(data):
        out.append(p)
        p += 12 + int.from_bytes(data[p + 8:p + 12], "big")
    return out


# ---------------------------------------------------------------------------------------------- KRaft 3.9

@dataclass
class KraftRun:
    install: KafkaInstall
    work: Path
    clean: Path
    logs: list[str]
    fetches: list[FetchSeen]
    counts: w.KraftCounts


def kraft_run(install: KafkaInstall, work: Path) -> KraftRun:
    config = SandboxConfig(mode=BrokerMode.KRAFT, properties=w.KRAFT_BROKER_PROPERTIES,
                           jvm_options=jvm_options(install))
    logs: list[str] = []
    counts = w.KraftCounts()
    with BrokerSandbox(install, work / "broker", config) as b:
        with phase(b, "produce"):
            b.start()
            w.create_kraft_topics(b)
            w.kraft_produce(b, 0, counts)
            b.stop()
            logs.append(b.log_text())
            b.start()  # the controller fences the stopped broker and elects it again: a leader-epoch bump
            w.kraft_produce(b, 1, counts)
            b.wait_for_log(r"cleaned log compacted-0", timeout=60)
            b.wait_for_log(r"partition=retention-0.*Incremented log start offset", timeout=60)
        with phase(b, "fetch"):
            ends = {name: (0, 97, _log_end(b, name)) for name in ("txn-0", f"codecs-{len(w.V2_CODECS) - 1}")}
            fetches = record_fetches(b, fetch_cases(ends))
            b.stop()
            logs.append(b.log_text())
        clean = copy_tree(b.log_dirs[0], work / "clean")
    return KraftRun(install, work, clean, logs, fetches, counts)


# ---------------------------------------------------------------------------------------------- loading into KRaft

@dataclass
class AdoptSeen:
    """Partition dirs kafkatool wrote, adopted by a KRaft broker (topics created first, ids rewritten)."""

    install: KafkaInstall
    log_dir: Path
    before: Path  # the log dir as kafkatool left it (topic ids adopted), a copy
    log: str  # the broker's log of the start that loaded it
    after: Path  # the log dir after that broker stopped cleanly, a copy
    consumed: dict[str, list[Consumed]]  # topic-N -> every record a modern consumer read


def partitions_of(log_dir: Path) -> dict[str, int]:
    """Topic -> partition count of the partition dirs in a log dir."""
    counts: dict[str, int] = {}
    for d in log_dir.iterdir():
        if d.is_dir() and (d / "partition.metadata").exists():
            topic, _, _ = d.name.rpartition("-")
            counts[topic] = counts.get(topic, 0) + 1
    return counts


def adopt(install: KafkaInstall, work: Path, log_dir: Path, *, topic_configs: dict[str, dict[str, str]],
          properties: dict[str, str], recover: bool = False) -> AdoptSeen:
    """Start a KRaft broker on ``log_dir`` (a log dir with partitions but no cluster metadata): first on a scratch
    dir sharing ``log_dir``'s meta.properties, to create its topics (``__consumer_offsets`` by the coordinator);
    then, stopped, point the partitions at the new topic ids and start on ``log_dir`` itself. ``recover``:
    remove the clean-shutdown marker and set every recovery point to 0, so that the broker validates every batch
    and rebuilds every index."""
    scratch = work / "scratch"
    scratch.mkdir(parents=True)
    if (log_dir / "meta.properties").exists():  # the same cluster, node and directory ids
        shutil.copy(log_dir / "meta.properties", scratch / "meta.properties")
    props = {"log.retention.hours": "-1", "log.retention.bytes": "-1", "auto.create.topics.enable": "false",
             **properties}
    topics = partitions_of(log_dir)
    props["offsets.topic.num.partitions"] = str(topics.get("__consumer_offsets", 1))
    config = SandboxConfig(mode=BrokerMode.KRAFT, log_dirs=(scratch,), properties=props,
                           jvm_options=jvm_options(install))
    with BrokerSandbox(install, work / "broker", config) as b:
        with phase(b, "create topics"):
            b.start()
            create_topics(b, {t: (n, {"retention.ms": "-1", **topic_configs.get(t, {})})
                              for t, n in topics.items() if not t.startswith("__")})
            if "__consumer_offsets" in topics:
                create_offsets_topic(b, topics["__consumer_offsets"])
            # The new cluster's leader epochs must pass the log's, or becoming leader truncates the log's
            # leader-epoch cache ("New epoch entry ... caused truncation of conflicting entries") and a
            # consumer validating epochs (KIP-320) resets. Each restart fences the broker and elects it again.
            wanted = max_leader_epoch(log_dir)
            while min_leader_epoch(b, topics) <= wanted:
                b.stop()
                b.start()
            b.stop()
        for d in log_dir.iterdir():
            if d.is_dir() and (scratch / d.name / "partition.metadata").exists():
                adopt_topic_id(d, topic_id(scratch / d.name))
        if not (log_dir / "meta.properties").exists():
            shutil.copy(scratch / "meta.properties", log_dir / "meta.properties")
        if recover:
            (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
            cp = log_dir / "recovery-point-offset-checkpoint"
            if cp.exists():
                for line in cp.read_text().splitlines()[2:]:
                    t, p, _ = line.split()
                    replace_checkpoint_entry(log_dir, cp.name, t, int(p), 0)
        before = copy_tree(log_dir, work / "before")
        with phase(b, "load"):
            b.log_dirs = (log_dir,)
            b.start()
            log = b.log_text()
            consumed = {}
            for d in sorted(log_dir.iterdir()):
                if d.is_dir() and (d / "partition.metadata").exists():
                    topic, _, part = d.name.rpartition("-")
                    consumed[d.name] = consume_partition(b, topic, int(part))
            b.stop()
        after = copy_tree(log_dir, work / "after")
    return AdoptSeen(install, log_dir, before, log, after, consumed)


def max_leader_epoch(log_dir: Path) -> int:
    """The newest leader epoch in the partitions' leader-epoch-checkpoint files (-1: none)."""
    epochs = [-1]
    for cp in log_dir.glob("*/leader-epoch-checkpoint"):
        for line in cp.read_text().splitlines()[2:]:
            epochs.append(int(line.split()[0]))
    return max(epochs)


def min_leader_epoch(b: BrokerSandbox, topics: dict[str, int]) -> int:
    a = admin(b)
    try:
        described = a.describe_topics(list(topics))
    finally:
        a.close()
    return min(p["leader_epoch"] for t in described for p in t["partitions"])


# ---------------------------------------------------------------------------------------------- sample, upconvert

@dataclass
class SampleRun:
    sample: Path  # kafkatool sample's output, untouched
    seen: AdoptSeen


def sample_run(install: KafkaInstall, work: Path, *, v2_only: bool) -> SampleRun:
    sample = work / "sample"
    r = kafkatool("sample", sample, "--quiet")
    assert r.returncode == 0, r.stderr
    if v2_only:  # Kafka 4 reads v0/v1 data but the sample's legacy topics are left to the 3.9 run
        for d in list(sample.iterdir()):
            if d.name.startswith(("legacy-events-", "sensors-")):
                shutil.rmtree(d)
    log_dir = copy_tree(sample, work / "log-dir")
    seen = adopt(install, work, log_dir, topic_configs={}, properties={"log.cleaner.enable": "false"})
    return SampleRun(sample, seen)


@dataclass
class UpconvertRun:
    sources: dict[str, Path]  # broker-written v0/v1 partition dirs
    runs: dict[str, Run]
    seen: AdoptSeen


UPCONVERT_TOPICS = {"v0-events": {}, "v1-events": {}, "v1-append": {"message.timestamp.type": "LogAppendTime"},
                    "v1-compact": {"cleanup.policy": "compact"}}


def upconvert_run(install: KafkaInstall, work: Path, legacy: Path) -> UpconvertRun:
    log_dir = work / "log-dir"
    log_dir.mkdir(parents=True)
    sources, runs = {}, {}
    for topic in UPCONVERT_TOPICS:
        src = legacy / f"{topic}-0"
        out = work / f"up-{topic}"
        runs[topic] = r = kafkatool("upconvert", src, out)
        assert r.returncode == 0, r.stderr
        shutil.copytree(out / f"{topic}-0", log_dir / f"{topic}-0")
        sources[topic] = src
    seen = adopt(install, work, log_dir, topic_configs=UPCONVERT_TOPICS, properties={"log.cleaner.enable": "false"},
                 recover=True)
    return UpconvertRun(sources, runs, seen)
