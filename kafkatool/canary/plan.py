"""``kafkatool canary plan``: the upgrade plan in phases, its risks, and what down-conversion costs.

Inputs: the inventory (:mod:`.inventory`), the consumers (:mod:`.clients`) and a target message format.
Down-conversion costs come from the fetch simulator (:mod:`kafkatool.fetch.simulate`, Kafka 3.9's
``LazyDownConversionRecords`` byte for byte): for each Fetch version <= 3 among the clients, one fetch per
partition from the start of its active segment (where live consumers read), with the consumer's default
``max.partition.fetch.bytes`` (1 MiB); plus, exactly from the inventory, the bytes each client needs converted
to read every partition from its start.

Phases follow the documented upgrade procedure (KIP-31/KIP-32 for v1, the same for v2 in 0.11; spec §5.5),
KIP-724 (3.0: the format config is ignored with IBP >= 3.0; 4.0: removed with Fetch v0-3 and down-conversion)
and KAFKA-13093 (4.0's cleaner rewrites v0/v1 as v2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kafkatool.canary.clients import ClientCapability
from kafkatool.canary.inventory import LogDirInventory, PartitionInventory
from kafkatool.errors import KafkaToolError, UsageError
from kafkatool.fetch import (
    DEFAULT_PARTITION_MAX_BYTES,
    FetchOptions,
    PartitionLog,
    PartitionRequest,
    error_name,
    partition_problem,
    simulate,
)
from kafkatool.log.layout import PartitionDir
from kafkatool.util.units import format_size


@dataclass(frozen=True, slots=True)
class PlanOptions:
    target_format: int = 2
    partition_max_bytes: int = DEFAULT_PARTITION_MAX_BYTES  # the simulated consumer's max.partition.fetch.bytes
    simulate_fetches: bool = True

    def validate(self) -> None:
        if self.target_format not in (1, 2):
            raise UsageError(f"must be 1 or 2 (got {self.target_format})", field="target_format")


@dataclass(frozen=True, slots=True)
class Step:
    """A kafkatool run a phase suggests: the command (``("canary", "run")``), its arguments, its options by the
    request field they set (values as an operator types them: globs quoted), and a comment. The CLI writes it as
    a command line with its own option names (:func:`plan_json_lines` takes that writer)."""

    command: tuple[str, ...]
    args: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    comment: str = ""


CommandLine = Callable[[Step], str]


@dataclass(slots=True)
class Phase:
    number: int
    title: str
    applies: bool | None  # None: cannot tell (e.g. no clients listed)
    rationale: str
    configs: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Risk:
    severity: str  # high / medium / low
    subject: str  # a client, topic or partition
    text: str


@dataclass(slots=True)
class ClientFetch:
    """One simulated fetch of one partition by one Fetch version."""

    partition: str
    fetch_version: int
    to_magic: int
    fetch_offset: int
    committed_size: int = 0
    source_bytes_converted: int = 0
    converted_bytes: int = 0
    records_converted: int = 0
    padding_bytes: int = 0
    cut_bytes: int = 0
    duplicated_first_batch: bool = False
    records_returned: int = 0
    outcome: str = ""
    problem: str | None = None


@dataclass(slots=True)
class ClientReport:
    capability: ClientCapability
    needs_down_conversion: bool
    bytes_to_convert: int  # whole log dir, from the start: bytes of batches newer than the client's format
    zstd_blocked_bytes: int  # zstd batches it cannot read
    breaks_on_kafka4: bool
    fetches: list[ClientFetch] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        f = self.fetches
        return {"partitions": len(f), "committed_bytes": sum(max(0, x.committed_size) for x in f),
                "source_bytes_converted": sum(x.source_bytes_converted for x in f),
                "converted_bytes": sum(x.converted_bytes for x in f),
                "records_converted": sum(x.records_converted for x in f),
                "padding_bytes": sum(x.padding_bytes for x in f), "cut_bytes": sum(x.cut_bytes for x in f),
                "duplicated_first_batch": sum(1 for x in f if x.duplicated_first_batch),
                "failing_partitions": sum(1 for x in f if x.problem)}


@dataclass(slots=True)
class Kafka4Leftover:
    partition: str
    compacted: bool
    legacy_bytes: int
    legacy_records: int
    legacy_segments: list[int]
    in_active_segment: bool
    fate: str


@dataclass(slots=True)
class Plan:
    inventory: LogDirInventory
    options: PlanOptions
    clients: list[ClientReport]
    phases: list[Phase]
    risks: list[Risk]
    kafka4: list[Kafka4Leftover]
    canary_candidates: list[str]


def make_plan(inv: LogDirInventory, clients: Sequence[ClientCapability], options: PlanOptions) -> Plan:
    options.validate()
    reports = [_client_report(inv, c, options) for c in clients]
    if options.simulate_fetches:
        _simulate(inv, reports, options)
    candidates = canary_candidates(inv, options.target_format)
    kafka4 = kafka4_leftovers(inv)
    plan = Plan(inv, options, reports, [], [], kafka4, candidates)
    plan.phases = _phases(plan, clients_given=bool(clients))
    plan.risks = _risks(plan)
    return plan


# ---------------------------------------------------------------------------------------------- clients


def _client_report(inv: LogDirInventory, cap: ClientCapability, options: PlanOptions) -> ClientReport:
    newer = 0
    for p in inv.partitions:
        for f in p.formats.values():
            if f.magic > cap.max_magic:
                newer += f.bytes
    zstd = sum(p.zstd.bytes for p in inv.partitions) if not cap.reads_zstd else 0
    # The broker converts from the configured format, not the bytes: with IBP >= 3.0 (KRaft always) that is v2, so
    # every Fetch <= v3 goes through down-conversion (no zero-copy); a ZooKeeper cluster heading for v1 converts
    # only for clients below v1.
    written = 2 if (inv.kraft or options.target_format == 2) else options.target_format
    needs = cap.max_magic < written
    return ClientReport(cap, needs, newer, zstd, not cap.fetches_on_kafka4)


def _simulate(inv: LogDirInventory, reports: list[ClientReport], options: PlanOptions) -> None:
    versions = sorted({r.capability.max_fetch_version for r in reports if r.capability.max_fetch_version <= 3})
    results: dict[int, list[ClientFetch]] = {}
    for v in versions:
        results[v] = [_simulate_one(p, v, options) for p in inv.partitions if p.batches]
    for r in reports:
        r.fetches = results.get(r.capability.max_fetch_version, [])


def _simulate_one(p: PartitionInventory, version: int, options: PlanOptions) -> ClientFetch:
    fo = FetchOptions(fetch_version=version, partition_max_bytes=options.partition_max_bytes)
    try:
        log = PartitionLog.from_partition_dir(PartitionDir.scan(p.path))
        # Live consumers read the active segment: fetch from its base (or the log start, if later).
        offset = max(log.segments[-1].base_offset, log.log_start_offset) if log.segments else 0
        cf = ClientFetch(p.name, version, fo.to_magic, offset)
        plans = simulate(fo, [PartitionRequest(log, offset)])
    except KafkaToolError as e:
        return ClientFetch(p.name, version, fo.to_magic, -1, problem=str(e))
    plan = plans[0]
    s = plan.stats
    cf.committed_size = plan.committed_size
    cf.source_bytes_converted = s.source_bytes_converted
    cf.converted_bytes = s.converted_bytes
    cf.records_converted = s.records_converted
    cf.padding_bytes = s.overflow_bytes
    cf.cut_bytes = s.cut_bytes
    cf.duplicated_first_batch = s.duplicated_first_batch
    if plan.consumer is not None:
        cf.records_returned = plan.consumer.records_returned
        cf.outcome = plan.consumer.outcome
    if plan.error_code:
        cf.outcome = error_name(plan.error_code)
    cf.problem = partition_problem(plan)
    return cf


# ---------------------------------------------------------------------------------------------- candidates, Kafka 4


def canary_candidates(inv: LogDirInventory, target: int = 2) -> list[str]:
    """Per topic holding data older than the target: the partition with the least such data (a small,
    cheap, representative first step), compacted topics first."""
    out: list[tuple[bool, str, str]] = []
    for topic, parts in inv.topics().items():
        old = [p for p in parts if any(f.magic < target for f in p.formats.values()) and not p.problems
               and not p.pending_files]
        if not old:
            continue
        best = min(old, key=lambda p: (sum(f.bytes for f in p.formats.values() if f.magic < target), p.partition))
        out.append((not best.compacted, topic, best.name))
    return [name for _, _, name in sorted(out)]


def kafka4_leftovers(inv: LogDirInventory) -> list[Kafka4Leftover]:
    out = []
    for p in inv.partitions:
        if not p.has_legacy:
            continue
        active = bool(p.legacy_segments) and p.segments > 0 and p.legacy_segments[-1] == _active_base(p)
        if p.compacted:
            fate = ("v2 when Kafka 4's cleaner next rewrites the segments (KAFKA-13093)"
                    + ("; the active segment's only after it rolls" if active else ""))
        else:
            fate = "stays v0/v1, served as-is, until retention deletes the segments"
        out.append(Kafka4Leftover(p.name, p.compacted, p.legacy.bytes, p.legacy.records, list(p.legacy_segments),
                                  active, fate))
    return out


def _active_base(p: PartitionInventory) -> int | None:
    try:
        segs = PartitionDir.scan(p.path).segments
    except KafkaToolError:
        return None
    return segs[-1].base_offset if segs else None


# ---------------------------------------------------------------------------------------------- phases


def _phases(plan: Plan, *, clients_given: bool) -> list[Phase]:
    inv, target = plan.inventory, plan.options.target_format
    old = [p for p in inv.partitions if any(f.magic < target for f in p.formats.values())]
    still_old = [p.name for p in inv.partitions if p.last_batch_magic is not None and p.last_batch_magic < target]
    zstd = any(p.zstd.batches for p in inv.partitions)
    logdir = inv.path
    phases = [Phase(
        1, "Inventory and client audit", True,
        "The broker converts on fetch from the topic's configured format and the Fetch version, never from the "
        "bytes (KafkaApis.maybeConvertFetchedData); what breaks depends on every consumer's Fetch version and on "
        "what is on disk. Run this on every broker and log dir: replicas hold the same offsets, not always the "
        "same bytes.",
        [], [Step(("canary", "plan"), (logdir,), (("clients", "clients.txt"),))],
        [p.name for p in old])]

    lagging = [r for r in plan.clients if r.needs_down_conversion or (zstd and not r.capability.reads_zstd)]
    client_configs = [
        "Kafka 3.x: log.message.downconversion.enable=false (broker) or message.downconversion.enable=false "
        "(topic) once they are upgraded: a straggler gets UNSUPPORTED_VERSION instead of silently costing broker CPU",
        "Kafka 4.x: nothing to set (no down-conversion; message.downconversion.enable is a no-op): consumers below "
        "Fetch v4 and producers below Produce v3 are refused (KIP-896), so clients first, before the first 4.x "
        "broker"]
    if not clients_given:
        why = ("No clients given: list consumer populations (client and version) first. The broker's request "
               "metrics by version (kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=N, "
               "KIP-272) show which Fetch versions are in use.")
        phases.append(Phase(2, "Upgrade old consumers", None, why, client_configs))
    else:
        names = ", ".join(r.capability.spec.display for r in lagging) or "none"
        why = (f"Consumers below Fetch v4 make the broker down-convert every fetch (CPU and heap, no zero-copy; "
               f"KIP-283 bounds memory, not CPU) and cannot fetch at all from Kafka 4 (Fetch v0-3 removed, "
               f"KAFKA-18269). Below Fetch v10 zstd data is unreadable (KIP-110). Needing an upgrade: {names}.")
        phases.append(Phase(2, "Upgrade old consumers", bool(lagging), why, client_configs))

    fmt = "0.10.0" if target == 1 else "0.11.0"
    kafka4 = ("Kafka 4.x: none of these (inter.broker.protocol.version and log.message.format.version are gone: "
              "metadata.version, message format v2 always; no ZooKeeper, KIP-500)")
    if inv.kraft:
        configs = ["Kafka 3.x (KRaft): nothing to set: KRaft brokers always write v2 (IBP >= 3.0-IV1; KIP-724 "
                   "ignores log.message.format.version)", kafka4]
    else:
        configs = ["Kafka 3.x (ZooKeeper): inter.broker.protocol.version=<the running release> (broker; rolling "
                   "restart)",
                   f"Kafka 3.x (ZooKeeper): log.message.format.version={fmt} or newer (broker), or "
                   f"message.format.version={fmt} per topic to go topic by topic; rolling restart",
                   "Kafka 3.x (ZooKeeper): with inter.broker.protocol.version >= 3.0 the format config is ignored and "
                   "v2 is written (KIP-724)", kafka4]
    phases.append(Phase(
        3, f"Write message format v{target} from now on", bool(still_old) or (not inv.kraft and bool(old)),
        "From then on the broker up-converts legacy produce requests on append (LogValidator: one new batch per "
        "request) and down-converts for old fetchers. Never lower the format afterwards: conversion is decided "
        "from config, so a lowered format serves newer bytes unconverted to old consumers. "
        + (f"Still written in an older format (last batch): {', '.join(still_old)}." if still_old
           else "Every partition's latest batch is already in the target format."),
        configs, [], still_old))

    cands = plan.canary_candidates
    w = "/var/tmp/kafka-canary"
    if target == 2:
        phases.append(Phase(
            4, "Rehearse the rewrite on canary partitions", bool(old),
            "Convert a few small partitions to v2 offline exactly as Kafka 4's cleaner would (compressed wrapper -> "
            "one v2 batch, each uncompressed message -> its own batch, v0 -> CreateTime -1), prove them record for "
            "record equal, swap them in with the broker stopped (.swap files its LogLoader completes after a "
            "crash), and keep the originals for a byte-exact rollback. Do it on each replica's broker in turn: "
            "replicas may then differ in bytes, never in offsets or records.",
            ["the broker (or the whole log dir) must be stopped for apply and rollback"],
            [Step(("canary", "run"), (logdir,), (("partitions", f"'{','.join(cands)}'"), ("workdir", w))),
             Step(("canary", "verify"), (w,)),
             Step(("canary", "rehearse"), (w,), (("kafka", "$KAFKA_HOME"), ("server_properties", "server.properties")),
                  comment="your Kafka and its settings, on copies"),
             Step(("canary", "apply"), (w,), comment="broker stopped"),
             Step(("canary", "rollback"), (w,), comment="if anything looks wrong")], cands))
    else:
        phases.append(Phase(4, "Rehearse the rewrite on canary partitions", False,
                            "kafkatool canary rewrites to v2 only; rehearse the v2 rewrite instead.", [], [], []))

    legacy = [k for k in plan.kafka4]
    compacted = [k.partition for k in legacy if k.compacted]
    plain = [k.partition for k in legacy if not k.compacted]
    configs = []
    if compacted:
        configs += [f"min.cleanable.dirty.ratio=0.01 or max.compaction.lag.ms=<ms> (KIP-354), temporarily, on "
                    f"{_topics(compacted)}: Kafka 4's cleaner then rewrites every segment below the active one as v2",
                    "segment.ms=<ms> on the same topics so legacy data in an active segment rolls and becomes "
                    "cleanable"]
    if plain:
        configs.append(f"retention.ms / retention.bytes on {_topics(plain)} decide when their legacy segments go; "
                       "or rewrite them with kafkatool canary, partition by partition")
    configs.insert(0, "Kafka 4.x has no inter.broker.protocol.version, log.message.format.version or "
                      "log.message.downconversion.enable (remove them; message.downconversion.enable is a no-op): "
                      "upgrade every consumer to Fetch v4+ and every producer to Produce v3+ first (KIP-896)")
    steps = [Step(("canary", "rehearse"), (w,), (("kafka", "/opt/kafka-4"), ("clients", "clients.txt")),
                  comment="does Kafka 4 load and serve the canary, and which clients does it refuse?")] \
        if target == 2 else []
    phases.append(Phase(
        5, "Kafka 4", bool(legacy) or any(r.breaks_on_kafka4 for r in plan.clients),
        "Kafka 4.0 no longer writes v0/v1 and has no down-conversion; legacy batches already on disk are served "
        "as-is to Fetch v4+ consumers. They remain in compacted topics until the cleaner rewrites them (4.0 "
        "converts them to v2 when it does, KAFKA-13093; 3.x cleaners keep the old format), and in other topics "
        "until retention deletes them. Consumers below Fetch v4 stop working.",
        configs, steps, [k.partition for k in legacy]))
    return phases


def _topics(partitions: list[str]) -> str:
    return ", ".join(sorted({p.rsplit("-", 1)[0] for p in partitions}))


# ---------------------------------------------------------------------------------------------- risks


def _risks(plan: Plan) -> list[Risk]:
    inv = plan.inventory
    risks: list[Risk] = []
    zstd_parts = [p.name for p in inv.partitions if p.zstd.batches]
    txn_parts = [p.name for p in inv.partitions if p.transactional.batches or p.control]
    for r in plan.clients:
        c = r.capability
        who = c.spec.display
        if r.needs_down_conversion:
            t = r.totals()
            risks.append(Risk("medium", who,
                              f"Fetch {c.fetch_label} reads format v{c.max_magic}: the broker down-converts every "
                              f"fetch. {format_size(r.bytes_to_convert)} of this log dir is newer than v{c.max_magic}; "
                              f"one fetch per partition at the active segment converts "
                              f"{format_size(t['source_bytes_converted'])} into {format_size(t['converted_bytes'])} "
                              f"({t['records_converted']} records), {t['padding_bytes']} padding bytes, "
                              f"{t['duplicated_first_batch']} duplicated first batch(es)."))
            failing = [f for f in r.fetches if f.problem]
            if failing:
                risks.append(Risk("high", who, f"Fetch {c.fetch_label}: {len(failing)} partition(s) fail: "
                                  + ", ".join(f"{f.partition} ({f.outcome or f.problem})" for f in failing[:8])
                                  + (f" and {len(failing) - 8} more" if len(failing) > 8 else "")))
            if txn_parts:
                risks.append(Risk("medium", who, "transactional data in " + ", ".join(txn_parts) + ": below Fetch v4 "
                                  "there is no read_committed; aborted records are returned and markers dropped."))
        if zstd_parts and not c.reads_zstd:
            risks.append(Risk("high", who,
                              f"Fetch {c.fetch_label} < v10 cannot read zstd ({format_size(r.zstd_blocked_bytes)} in "
                              f"{', '.join(zstd_parts)}): UNSUPPORTED_COMPRESSION_TYPE when the topic's "
                              "compression.type is zstd or the fetch down-converts, else an unknown codec in the "
                              "client."))
        if r.breaks_on_kafka4:
            risks.append(Risk("high", who, f"Fetch {c.fetch_label}: cannot fetch from Kafka 4 (Fetch v0-3 removed)."))
    for p in inv.partitions:
        for prob in p.problems:
            risks.append(Risk("high", p.name, prob))
        if p.pending_files:
            risks.append(Risk("medium", p.name, "unfinished cleaner/split files (" + ", ".join(p.pending_files)
                              + "): start and stop the broker once to complete them before any rewrite"))
        if p.oversized_batches:
            risks.append(Risk("medium", p.name, f"{p.oversized_batches} batch(es) larger than max.message.bytes "
                              f"{p.max_message_bytes} (largest {p.largest_batch} bytes at offset "
                              f"{p.largest_batch_offset}): consumers need max.partition.fetch.bytes above it "
                              "before Fetch v3 (KIP-74)"))
        if p.legacy_messages_over_limit_as_v2:
            risks.append(Risk("high", p.name, f"{p.legacy_messages_over_limit_as_v2} legacy message(s) exceed "
                              f"max.message.bytes {p.max_message_bytes} once rewritten as v2 batches (largest "
                              f"{p.largest_legacy_message_as_v2} bytes): Kafka 4's cleaner and canary verify fail "
                              "on them; raise max.message.bytes first"))
        if p.compacted and p.has_legacy:
            risks.append(Risk("medium", p.name, f"compacted ({'; '.join(p.compaction_evidence)}) and holding "
                              f"{format_size(p.legacy.bytes)} of v0/v1 data: it survives into Kafka 4 until the "
                              "cleaner rewrites it"))
        if p.v0.records:
            risks.append(Risk("low", p.name, f"{p.v0.records} v0 records have no timestamp: time-based retention "
                              "and offsetsForTimes use segment file times; a rewrite keeps timestamp -1 "
                              "(CreateTime) and canary apply keeps the file times"))
    order = {"high": 0, "medium": 1, "low": 2}
    risks.sort(key=lambda r: order.get(r.severity, 3))
    return risks


# ---------------------------------------------------------------------------------------------- JSON


def plan_json_lines(plan: Plan, command_line: CommandLine) -> list[dict[str, Any]]:
    """The plan as JSON lines; each phase's steps written as command lines by ``command_line``."""
    from kafkatool.canary.inventory import summarize

    lines: list[dict[str, Any]] = [p.as_dict() for p in plan.inventory.partitions]
    for r in plan.clients:
        d: dict[str, Any] = {"type": "client", **r.capability.as_dict(),
                             "needs_down_conversion": r.needs_down_conversion,
                             "bytes_to_convert": r.bytes_to_convert, "zstd_blocked_bytes": r.zstd_blocked_bytes,
                             "breaks_on_kafka4": r.breaks_on_kafka4, "fetch_totals": r.totals()}
        lines.append(d)
        for f in r.fetches:
            lines.append({"type": "client-fetch", "client": r.capability.spec.text, **asdict(f)})
    for ph in plan.phases:
        lines.append({"type": "phase", "number": ph.number, "title": ph.title, "applies": ph.applies,
                      "rationale": ph.rationale, "configs": list(ph.configs),
                      "commands": [command_line(s) for s in ph.steps], "partitions": list(ph.partitions)})
    for k in plan.kafka4:
        lines.append({"type": "kafka4", **asdict(k)})
    for risk in plan.risks:
        lines.append({"type": "risk", **asdict(risk)})
    lines.append({"type": "summary", "log_dir": plan.inventory.path, "kraft": plan.inventory.kraft,
                  "target_format": plan.options.target_format, **summarize(plan.inventory.partitions),
                  "canary_candidates": plan.canary_candidates, "skipped": plan.inventory.skipped})
    return lines
