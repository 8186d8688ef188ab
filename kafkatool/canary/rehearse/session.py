"""One rehearsal, phase by phase, on a throwaway broker of the operator's Kafka.

1. **create**: the broker starts on an empty log dir and creates the canary's topics (the internal ones through
   their coordinators), then stops. Anything failing here is the environment's fault (exit 2, one line).
2. **stage**: the canary partitions are copied in (:mod:`.staging`), as a broker stopped cleanly after
   ``canary apply`` would find them.
3. **load**: the broker starts on them and loads every canary partition (bounded, with progress lines); what it
   logs about them is judged (:mod:`.brokerlog`). It serves them from the canary's own indexes, as it would after
   ``canary apply``.
4. **read**: every partition consumed by a modern client (Fetch v11, read_uncommitted and read_committed) and by
   each old Fetch version the broker answers (v0-v3 on 3.x: it down-converts), every record compared with the
   originals (:mod:`.reads`); what each old fetch cost the broker, from its request log. On Kafka 4, one Fetch
   v3 shows the refusal in the broker's own words.
5. **produce**: old and new producers append to the copies; what they wrote is read back (:mod:`.produce`).
6. **recover**: stopped, the clean-shutdown marker removed and the recovery points set to 0, the broker starts
   once more: it validates every batch of every canary segment (``LogSegment.recover``) and rebuilds every
   index, and says what it truncates.

Then the broker (and ZooKeeper) stop, the sandbox dir is removed, and ``W/rehearse.json`` is written.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.canary import manifest as mf
from kafkatool.canary.clients import ClientCapability, magic_for_fetch_version, read_clients
from kafkatool.canary.rehearse import brokerlog
from kafkatool.canary.rehearse import expected as ex
from kafkatool.canary.rehearse import protocol as kp
from kafkatool.canary.rehearse.client import CLIENT_ID, SandboxClient
from kafkatool.canary.rehearse.environment import (
    RehearseError,
    check_java,
    check_port,
    locate_install,
    make_sandbox_dir,
    sandbox_root,
)
from kafkatool.canary.rehearse.produce import CLOSED, Stored, largest_batch, produce_back
from kafkatool.canary.rehearse.reads import ReadCheck, Target, compare, served
from kafkatool.canary.rehearse.result import (
    REHEARSE_JSON,
    ClientVerdict,
    ConversionCost,
    Finding,
    PartitionRehearsal,
    RehearseResult,
)
from kafkatool.canary.rehearse.staging import (
    INTERNAL,
    OFFSETS_TOPIC,
    RECOVERY_POINTS,
    OperatorSettings,
    Staged,
    Topics,
    broker_properties,
    legacy_format,
    new_topics,
    read_operator_settings,
    resolve_mode,
    set_checkpoints,
    stage,
    topics_of,
)
from kafkatool.canary.sandbox import BrokerMode, BrokerSandbox, KafkaInstall, SandboxConfig, SandboxError
from kafkatool.canary.wire import WireError
from kafkatool.constants import DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.log.checkpoints import read_offset_checkpoint
from kafkatool.log.layout import TopicPartition
from kafkatool.log.lock import refuse_if_live

Progress = Callable[[str], None]
NODE_ID = 1


@dataclass(frozen=True, slots=True)
class RehearseOptions:
    kafka: Path | None = None  # a Kafka install (None: $KAFKA_HOME)
    server_properties: Path | None = None
    mode: str | None = None  # auto / kraft / zookeeper
    clients: Path | None = None
    max_message_bytes: Mapping[str | None, int] = field(default_factory=dict)  # topic (None: every topic) -> size
    partition_max_bytes: int = 1 << 20  # the modern consumer's max.partition.fetch.bytes
    timeout: float = 300.0  # each wait: a broker start, a load, a coordinator
    temp_dir: Path | None = None
    keep_sandbox: bool = False
    port: int | None = None
    java_home: str | None = None
    heap: str = "1g"
    max_differences: int = 20

    def validate(self) -> None:
        if self.timeout <= 0:
            raise UsageError("must be more than 0 seconds", field="timeout")
        if self.partition_max_bytes < 1:
            raise UsageError("must be at least 1 byte", field="partition_max_bytes")
        if self.max_differences < 1:
            raise UsageError("must be at least 1", field="max_differences")
        if self.port is not None and not 1 <= self.port <= 65535:
            raise UsageError(f"{self.port} is not a TCP port", field="port")


@dataclass
class _Run:
    """What the phases share."""

    w: mf.Workdir
    m: mf.Manifest
    install: KafkaInstall
    mode: BrokerMode
    settings: OperatorSettings
    opts: RehearseOptions
    note: Progress
    result: RehearseResult
    limits: dict[str, int]
    topics: Topics
    sandbox_dir: Path
    staged: list[Staged] = field(default_factory=list)
    api: kp.ApiVersions | None = None
    parts: dict[str, PartitionRehearsal] = field(default_factory=dict)
    loaded_at: int = 0  # where in the current broker log the load ended (characters)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.m.partitions]


def rehearse(workdir: str | Path, opts: RehearseOptions | None = None, progress: Progress | None = None,
             ) -> RehearseResult:
    opts = opts or RehearseOptions()
    opts.validate()
    note = progress or (lambda _s: None)
    started = time.monotonic()
    w = mf.Workdir(workdir)
    refuse_if_live(w.path)
    m = w.read_manifest()
    if not m.partitions:
        raise UsageError("the canary has no partitions", path=w.manifest_path)
    root = sandbox_root(opts.temp_dir)
    install = locate_install(opts.kafka)
    mode_hint = BrokerMode(opts.mode) if opts.mode in ("kraft", "zookeeper") else None
    settings = read_operator_settings(opts.server_properties, install, mode_hint)
    mode = resolve_mode(opts.mode, install, settings)
    java, java_major = check_java(install, opts.java_home)
    caps = read_clients(opts.clients) if opts.clients is not None else []
    check_port(opts.port)
    limits = _limits(m, settings, opts.max_message_bytes)
    result = RehearseResult(str(w.path), str(install.libs), install.version, mode.value,
                            f"{java} (Java {java_major})", dict(settings.taken), dict(settings.ignored))
    sandbox_dir = make_sandbox_dir(root)
    run = _Run(w, m, install, mode, settings, opts, note, result, limits, topics_of(m), sandbox_dir)
    run.parts = {p.name: PartitionRehearsal(p.name, p.log_end_offset) for p in m.partitions}
    try:
        _rehearse(run)
    finally:
        if opts.keep_sandbox:
            result.sandbox_kept = str(sandbox_dir)
        else:
            mf.remove_tree(sandbox_dir)
    result.partitions = [run.parts[n] for n in run.names]
    result.clients = _client_verdicts(run, caps)
    result.seconds = time.monotonic() - started
    w.write_json(w.path / REHEARSE_JSON, result.as_dict())
    return result


def _limits(m: mf.Manifest, settings: OperatorSettings, given: Mapping[str | None, int]) -> dict[str, int]:
    """max.message.bytes per topic: the request's for the topic, the request's for all, the server properties',
    the one ``canary run`` was given."""
    run = int(m.options.get("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES))
    broker = settings.taken.get("message.max.bytes")
    default = given.get(None, int(broker) if broker and broker.lstrip("-").isdigit() else run)
    return {p.topic: given.get(p.topic, default) for p in m.partitions}


def _rehearse(run: _Run) -> None:
    opts, install = run.opts, run.install
    data = run.sandbox_dir / "data"
    props = broker_properties(run.settings, run.topics, max(run.limits.values()))
    loggers = {"kafka.request.logger": "INFO"} if install.major < 4 else {}
    config = SandboxConfig(mode=run.mode, log_dirs=(data,), properties=props, node_id=NODE_ID, heap=opts.heap,
                           ready_timeout=opts.timeout, java_home=opts.java_home, loggers=loggers, port=opts.port)
    try:
        sandbox = BrokerSandbox(install, run.sandbox_dir / "broker", config)
    except SandboxError as e:
        raise RehearseError(e.message, field="kafka") from None
    with sandbox as sb:
        _create(run, sb)
        run.note(f"copying {len(run.m.partitions)} canary partition(s) into the sandbox")
        run.staged = stage(run.w, run.m, data)
        for s in run.staged:
            for name in s.missing:
                run.result.findings.append(Finding(s.name, "canary", f"W/canary lacks {name}, which `canary run` "
                                                                     "wrote"))
        set_checkpoints(data, run.staged, recover=False)
        if _load(run, sb, "load"):
            with SandboxClient("127.0.0.1", sb.port, timeout=min(opts.timeout, 120.0)) as client:
                reads_from = len(sb.log_text())
                _reads(run, sb, client)
                produce_from = len(sb.log_text())
                _produce(run, sb, client)
            sb.stop()
            text = sb.log_text()
            _judge(run, text[reads_from:produce_from], "read", all_errors=False)
            _judge(run, text[produce_from:], "produce", all_errors=False)
            _ends_after_stop(run, data)
        else:
            sb.kill()
        set_checkpoints(data, run.staged, recover=True)
        if _load(run, sb, "recovery"):
            sb.stop()
            _judge(run, sb.log_text()[run.loaded_at:], "recovery", all_errors=False)


# ---------------------------------------------------------------------------------------------- create

_INVALID_REPLICATION_FACTOR = 38


def _create(run: _Run, sb: BrokerSandbox) -> None:
    run.note(f"starting Kafka {run.install.version} ({run.mode.value}) on 127.0.0.1:{sb.port} to "
             "create the canary's topics")
    try:
        sb.start()
    except SandboxError as e:
        raise RehearseError(_one_line(e, sb), field=_field(e)) from None
    run.note(f"broker pid {sb.broker.pid if sb.broker else '?'} is up")
    t = run.opts.timeout
    try:
        with SandboxClient("127.0.0.1", sb.port, timeout=min(t, 120.0)) as c:
            run.api = c.api_versions()
            run.result.api_versions = {name: run.api.range_text(key) for key, name in
                                       ((kp.API_FETCH, "Fetch"), (kp.API_PRODUCE, "Produce"))}
            topics = new_topics(run.topics, run.limits)
            deadline = time.monotonic() + t
            while topics:
                results = c.create_topics(topics, int(t * 1000))
                # A ZooKeeper-mode broker answers before it has registered itself: no broker to place a replica on
                # yet (INVALID_REPLICATION_FACTOR, "available brokers: 0"). Those topics are asked for again.
                again = {r.name for r in results if r.error_code == _INVALID_REPLICATION_FACTOR
                         and time.monotonic() < deadline}
                for r in results:
                    if r.error_code and r.name not in again:
                        raise RehearseError(f"the sandbox broker did not create topic {r.name}: "
                                            f"{kp.error_text(r.error_code, r.error_message)}")
                topics = [x for x in topics if x.name in again]
                if topics:
                    time.sleep(0.1)
            for topic in run.topics.internal:
                key_type = kp.COORDINATOR_GROUP if topic == OFFSETS_TOPIC else kp.COORDINATOR_TRANSACTION
                c.until(f"the {topic} coordinator", _coordinator(c, key_type), t)
            wanted = {**run.topics.regular, **run.topics.internal}
            c.until("leaders for the canary's topics", lambda: _leaders(c, wanted), t)
    except KafkaToolError as e:
        if isinstance(e, RehearseError):
            raise
        raise RehearseError(f"creating the canary's topics: {e.message}") from None
    sb.stop()


def _coordinator(c: SandboxClient, key_type: int) -> Callable[[], bool]:
    return lambda: c.find_coordinator(CLIENT_ID, key_type)[0] == 0


def _leaders(c: SandboxClient, wanted: Mapping[str, int]) -> bool:
    got = {t.name: t for t in c.metadata(list(wanted))}
    return all(n in got and got[n].error_code == 0 and len(got[n].partitions) >= count
               and all(p.leader == NODE_ID for p in got[n].partitions) for n, count in wanted.items())


def _one_line(e: SandboxError, sb: BrokerSandbox) -> str:
    """The sandbox's error (its first line) and the telling line of the log of the step that failed: its first
    ERROR or FATAL entry, else its last line."""
    head = e.message.splitlines()[0].rstrip(":")
    if head.startswith("kafka-storage format"):
        log = sb.workdir / "format.log"
    elif head.startswith("ZooKeeper"):
        log = sb.workdir / "zookeeper.log"
    else:
        log = sb.log_path
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return head
    found = list(brokerlog.entries(text, str(sb.workdir.parent)))
    first = next((x for x in found if x.level in ("ERROR", "FATAL")), None)
    if first is not None:
        return f"{head}: {first.words}"
    last = found[-1].words if found else next((x for x in reversed(text.splitlines()) if x.strip()), "")
    return f"{head} (the last line of its log: {last})" if last else head


def _field(e: SandboxError) -> str:
    return "timeout" if "within" in e.message.splitlines()[0] else "kafka"


# ---------------------------------------------------------------------------------------------- load

def _load(run: _Run, sb: BrokerSandbox, phase: str) -> bool:
    """Start the broker on the canary; wait until every canary partition loaded and is served. False when the
    broker died on it (its words are findings)."""
    names = run.names
    sandbox = str(run.sandbox_dir)
    shown = [-1]

    def progress() -> None:
        n = len(brokerlog.loaded(sb.log_text(), names, sandbox))
        if n != shown[0]:
            shown[0] = n
            pid = sb.broker.pid if sb.broker is not None else "?"
            run.note(f"{phase}: broker pid {pid}: {n}/{len(names)} canary partition(s) loaded")

    what = "loading the canary" if phase == "load" else "loading the canary with recovery forced"
    run.note(f"{phase}: starting the broker, {what}")
    try:
        sb.start(progress)
        with SandboxClient("127.0.0.1", sb.port, timeout=min(run.opts.timeout, 120.0)) as c:
            c.until(f"{phase}: every canary partition loaded", lambda: _all_loaded(sb, names, sandbox),
                    run.opts.timeout)
            c.until(f"{phase}: every canary partition served", lambda: _served(run, c), run.opts.timeout)
    except SandboxError as e:
        if "not ready within" in e.message:
            raise RehearseError(_one_line(e, sb), field="timeout") from None
        text = sb.log_text()
        _judge(run, text, phase, all_errors=True, forced=phase == "recovery")
        run.result.findings.append(Finding(None, phase, "the broker stopped while loading the canary",
                                           _one_line(e, sb)))
        return False
    except KafkaToolError as e:
        sb.kill()
        raise RehearseError(f"{phase}: {e.message}") from None
    progress()
    text = sb.log_text()
    run.loaded_at = len(text)
    _judge(run, text, phase, all_errors=True, forced=phase == "recovery")
    for name, done in brokerlog.loaded(text, names, sandbox).items():
        part = run.parts[name]
        if phase == "load":
            part.loaded = done
        else:
            part.recovered = done
        if part.expected_log_end_offset >= 0 and done.log_end_offset != part.expected_log_end_offset:
            run.result.findings.append(Finding(
                name, phase, f"the broker's log of it ends at offset {done.log_end_offset}, the canary at "
                             f"{part.expected_log_end_offset}", done.words))
    return True


def _all_loaded(sb: BrokerSandbox, names: Sequence[str], sandbox: str) -> bool:
    text = sb.log_text()
    done = brokerlog.loaded(text, names, sandbox)
    return set(names) <= set(done) | brokerlog.failed_loads(text, names)


def _served(run: _Run, c: SandboxClient) -> bool:
    for s in run.staged:
        p = run.m.partition(s.name)
        r = c.modern_fetch([kp.ModernFetch(p.topic, p.partition, s.start, 1)], isolation=kp.READ_UNCOMMITTED)
        if r.error_code or r.partitions[0].error_code in (3, 5, 6):
            return False
    return True


def _judge(run: _Run, text: str, phase: str, *, all_errors: bool, forced: bool = False) -> None:
    names = brokerlog.PartitionNames(run.names)
    for said in brokerlog.judge(text, names, sandbox=str(run.sandbox_dir), forced_recovery=forced,
                                all_errors=all_errors):
        if said.partition is not None:
            run.parts[said.partition].said.append(said)
        if said.kind == "finding":
            e = said.entry
            run.result.findings.append(Finding(said.partition, phase, f"{e.level} {e.logger}", e.words))


def _ends_after_stop(run: _Run, data: Path) -> None:
    """The log end of each partition after the clean stop (the produced records included): a clean shutdown writes
    it as the recovery point. What the recovery must find again."""
    try:
        points = read_offset_checkpoint(data / RECOVERY_POINTS)
    except KafkaToolError:
        return
    for s in run.staged:
        topic, _, part = s.name.rpartition("-")
        end = points.get(TopicPartition(topic, int(part)))
        if end is not None:
            run.parts[s.name].expected_log_end_offset = end


# ---------------------------------------------------------------------------------------------- read

def _old_versions(run: _Run) -> list[int]:
    assert run.api is not None
    return [v for v in range(4) if run.api.supports(kp.API_FETCH, v)]


def _reads(run: _Run, sb: BrokerSandbox, client: SandboxClient) -> None:
    opts, m = run.opts, run.m
    olds = _old_versions(run)
    fmt = legacy_format(run.mode, run.settings)
    log_magic = 2 if fmt is None else fmt
    costs = {v: ConversionCost(v, magic_for_fetch_version(v)) for v in olds}
    _warm_up(run, client, olds)
    for s in run.staged:
        p = m.partition(s.name)
        part = run.parts[p.name]
        orig, segs, limit = run.w.originals(p.name), sorted(p.segments), run.limits[p.topic]
        target = Target(p.topic, p.partition, s.start)
        run.note(f"read: {p.name}: modern consumer, read_uncommitted and read_committed"
                 + (f", old consumers Fetch v{olds[0]}-v{olds[-1]}" if olds else ""))
        try:
            txns = ex.scan_transactions(orig, segs, limit)
        except KafkaToolError as e:
            run.result.findings.append(Finding(p.name, "read", f"the saved originals cannot be read: {e}"))
            continue
        views: list[tuple[int, str, int, Iterator[ex.Rec]]] = [
            (kp.MODERN_FETCH_VERSION, "read_uncommitted", opts.partition_max_bytes, ex.modern(orig, segs, limit)),
            (kp.MODERN_FETCH_VERSION, "read_committed", opts.partition_max_bytes,
             ex.committed(orig, segs, limit, txns))]
        for v in olds:
            # an old consumer's fetch size is at least max.message.bytes (0.8-0.10 documentation), no more
            views.append((v, "read_uncommitted", limit, ex.old(orig, segs, limit, magic_for_fetch_version(v))))
        for version, isolation, max_bytes, want in views:
            check = ReadCheck(p.name, version, isolation, max_bytes)
            judge = _stop_judge(orig, log_magic) if version <= 3 else None
            compare(want, served(client, target, check), check, limit=opts.max_differences, judge_stop=judge)
            part.reads.append(check)
            if not check.ok:
                if check.stop and check.missing:
                    text = (f"{check.reader}: {check.missing} record(s) of the originals not served; it stopped "
                            f"{check.stop}")
                    words = None
                else:
                    text = f"{check.reader}: {check.difference_count} difference(s) with the originals"
                    words = check.differences[0] if check.differences else None
                run.result.findings.append(Finding(p.name, "read", text, words))
            if version in costs:
                c = costs[version]
                c.fetches += check.fetches
                c.records += check.records
        run.note(f"read: {p.name}: "
                 + ", ".join(f"{r.reader} {'ok' if r.ok else 'FAILED'}" for r in part.reads))
    if not olds and run.api is not None:
        _probe_refusal(run, sb, client)
    _costs(run, sb, client, costs)
    run.result.costs = [costs[v] for v in olds]


def _warm_up(run: _Run, client: SandboxClient, versions: list[int]) -> None:
    """One old fetch per version before any is measured: the first conversions run in the JVM's interpreter."""
    from kafkatool.fetch import FetchPartition

    s = run.staged[0]
    p = run.m.partition(s.name)
    for v in versions:
        with contextlib.suppress(KafkaToolError):
            client.old_fetch(v, FetchPartition(p.topic, p.partition, s.start, run.limits[p.topic]))


def _stop_judge(originals: Path, log_magic: int) -> Callable[[ReadCheck], str | None]:
    def judge(check: ReadCheck) -> str | None:
        assert check.stop_offset is not None
        return ex.old_stop(originals, check.fetch_version, check.stop_offset, check.partition_max_bytes, log_magic)
    return judge


def _probe_refusal(run: _Run, sb: BrokerSandbox, client: SandboxClient) -> None:
    """This broker answers no Fetch v0-v3 (Kafka 4): send one Fetch v3, as a 0.10.1 consumer would, and keep the
    broker's words about it."""
    from kafkatool.fetch import FetchPartition

    s = run.staged[0]
    p = run.m.partition(s.name)
    before = len(sb.log_text())
    try:
        client.old_fetch(3, FetchPartition(p.topic, p.partition, s.start, 1 << 20))
        run.result.findings.append(Finding(None, "read", f"Kafka {run.install.version} announces no Fetch v3 but "
                                                         "answered one"))
        return
    except WireError:
        pass
    words = None
    deadline = time.monotonic() + 2  # the broker logs the refusal as it closes the connection: moments later
    while words is None and time.monotonic() < deadline:
        time.sleep(0.05)
        words = _refusal_words(sb.log_text()[before:], run, "Fetch", 3)
    run.result.refusals.append(f"Fetch v3 (a 0.10.1-0.10.2 consumer): {CLOSED}" + (f": {words}" if words else ""))


def _refusal_words(text: str, run: _Run, api: str, version: int) -> str | None:
    """The broker's words refusing ``api`` ``version`` (Kafka 4: ``UnsupportedVersionException: Received request for
    api with key 1 (Fetch) and unsupported version 3``)."""
    wanted = f"({api}) and unsupported version {version}"
    for e in brokerlog.entries(text, str(run.sandbox_dir)):
        if "UnsupportedVersionException" in e.words and wanted in e.words:
            return e.detail or e.message
    return None


def _costs(run: _Run, sb: BrokerSandbox, client: SandboxClient, costs: dict[int, ConversionCost]) -> None:
    """The broker's own measure of each old fetch (its request log, at INFO for deprecated versions in 3.x)."""
    ids = {cid for part in run.parts.values() for r in part.reads if r.fetch_version <= 3 for cid in r.correlation_ids}
    if not ids:
        return
    seen: dict[int, brokerlog.RequestCost] = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        seen = brokerlog.request_costs(sb.log_text(), CLIENT_ID)
        if ids <= set(seen):
            break
        time.sleep(0.1)
    for cid in ids & set(seen):
        rc = seen[cid]
        c = costs.get(rc.version)
        if c is None or rc.api_key != kp.API_FETCH:
            continue
        c.logged += 1
        c.record_bytes += rc.records_size
        c.temporary_memory_bytes += rc.temporary_memory_bytes
        c.max_temporary_memory_bytes = max(c.max_temporary_memory_bytes, rc.temporary_memory_bytes)
        c.conversion_ms += rc.conversion_ms
        c.max_conversion_ms = max(c.max_conversion_ms, rc.conversion_ms)
        c.total_ms += rc.total_ms


# ---------------------------------------------------------------------------------------------- produce

def _produce(run: _Run, sb: BrokerSandbox, client: SandboxClient) -> None:
    fmt = legacy_format(run.mode, run.settings)
    stored = Stored(fmt if fmt is not None else 2,
                    run.settings.taken.get("log.message.timestamp.type", "CreateTime") == "LogAppendTime")
    refused: dict[int, str] = {}  # produce versions this broker refused (asked once)
    for s in run.staged:
        p = run.m.partition(s.name)
        if p.topic in INTERNAL:
            run.parts[p.name].notes.append("nothing produced: an internal topic (its coordinator writes it)")
            continue
        run.note(f"produce: {p.name}: old and new producers, and the largest batch again")
        largest = largest_batch(run.w.canary(p.name), sorted(p.segments))
        before = len(sb.log_text())
        checks = produce_back(client, p.name, p.topic, p.partition, stored, largest, kafka_major=run.install.major,
                              timeout=min(run.opts.timeout, 60.0), max_differences=run.opts.max_differences,
                              skip=refused)
        text = sb.log_text()[before:]
        for check in checks:
            if check.error == CLOSED and check.produce_version not in refused:
                words = _refusal_words(text, run, "Produce", check.produce_version)
                check.error = f"{CLOSED}: {words}" if words else CLOSED
                if check.refused_expected:
                    refused[check.produce_version] = check.error
                    run.result.refusals.append(f"{check.producer}: {check.error}")
            if not check.ok:
                limit = run.limits[p.topic]
                what = (f"{check.producer} ({check.records} record(s), a {check.batch_bytes}-byte batch"
                        + (f", max.message.bytes {limit}" if "largest" in check.producer else "") + ")")
                if check.error is not None:
                    run.result.findings.append(Finding(p.name, "produce", f"the broker refused {what}", check.error))
                elif check.read_back is not None:
                    rb = check.read_back
                    run.result.findings.append(Finding(
                        p.name, "produce", f"{what}: read back with {rb.difference_count} difference(s)",
                        rb.differences[0] if rb.differences else rb.stop))
        run.parts[p.name].produced.extend(checks)


# ---------------------------------------------------------------------------------------------- clients

def _client_verdicts(run: _Run, caps: Sequence[ClientCapability]) -> list[ClientVerdict]:
    if run.api is None:
        return []
    lo, hi = run.api.ranges.get(kp.API_FETCH, (0, -1))
    zstd = any(r.expected_stop and "UNSUPPORTED_COMPRESSION_TYPE" in r.expected_stop
               for p in run.parts.values() for r in p.reads)
    out = []
    for cap in caps:
        v = cap.max_fetch_version
        if v < lo:
            why = (f"Kafka {run.install.version} answers Fetch v{lo}-v{hi} only; this client's newest is "
                   f"{cap.fetch_label}: the broker closes its connection")
            out.append(ClientVerdict(cap.spec.display, v, "refused", why))
        elif v <= 3:
            cost = next((c for c in run.result.costs if c.fetch_version == v), None)
            why = f"reads message format v{cap.max_magic}: the broker down-converts every fetch"
            if cost is not None and cost.logged:
                pf = cost.per_fetch()
                why += (f" ({pf['conversion_ms']:.2f} ms and {int(pf['temporary_memory_bytes'])} bytes of heap per "
                        "fetch here)")
            if zstd:
                why += "; zstd batches are unreadable below Fetch v10"
            out.append(ClientVerdict(cap.spec.display, v, "down-converted", why))
        else:
            why = "reads message format v2 as stored (zero-copy)"
            if zstd and not cap.reads_zstd:
                why += "; zstd batches are unreadable below Fetch v10"
            out.append(ClientVerdict(cap.spec.display, v, "reads as stored", why))
    return out
