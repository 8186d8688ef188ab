"""The entry points of ``kafkatool canary``'s subcommands, usable from Python with the same results.

Each takes a request (:class:`PlanRequest`, :class:`RunRequest`, :class:`VerifyRequest`, :class:`SwapRequest`,
:class:`RehearseRequest`) and a :class:`CanaryListener` that hears progress and warnings, resolves the run's memory
budget, and returns an outcome holding the library's result (the :class:`Plan`, the :class:`Manifest`, the
:class:`VerifyResult`, the :class:`SwapResult`, the :class:`RehearseResult`) and the exit code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.canary.apply import SwapResult, swap
from kafkatool.canary.clients import read_clients
from kafkatool.canary.inventory import InventoryOptions, inventory_log_dir
from kafkatool.canary.manifest import Manifest
from kafkatool.canary.plan import Plan, PlanOptions, make_plan
from kafkatool.canary.rehearse.result import RehearseResult
from kafkatool.canary.rehearse.session import RehearseOptions, rehearse
from kafkatool.canary.run import RunOptions, run_canary
from kafkatool.canary.verify import VerifyResult, verify_workdir
from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_BYTES
from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.lock import check_read, live_notice
from kafkatool.util import budget
from kafkatool.util.printable import shown


class CanaryListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway)."""

    def note(self, text: str) -> None:
        """Progress information (the partition being copied, converted or verified)."""


def _budget(memory: str | None) -> None:
    budget.activate(budget.resolve(memory))


# ---------------------------------------------------------------------------------------------- plan


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """``max_message_bytes``: max.message.bytes by topic, the key None for every topic (a topic's own wins;
    default 1048588); ``compacted``: topics the operator declares compacted (items may hold several,
    comma-separated); ``clients``: the clients file (one consumer population a line)."""

    log_dir: Path
    target_format: int = 2
    clients: Path | None = None
    compacted: Sequence[str] = ()
    max_message_bytes: Mapping[str | None, int] = field(default_factory=dict)
    partition_max_bytes: int = 1 << 20  # the simulated consumers' max.partition.fetch.bytes
    fetch_sim: bool = True  # simulate a fetch per partition for each old Fetch version
    live: bool = False  # read a log dir a live broker holds
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    plan: Plan

    @property
    def damaged(self) -> list[tuple[str, list[str]]]:
        """Partitions with problems (a damaged partition), with them (and the log dir, with problems of its own
        files)."""
        inv = self.plan.inventory
        own = [(inv.path, list(inv.problems))] if inv.problems else []
        return own + [(p.name, list(p.problems)) for p in inv.partitions if p.problems]

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.damaged else ExitCode.OK


def plan_upgrade(request: PlanRequest, listener: CanaryListener | None = None) -> PlanOutcome:
    """``canary plan``: inventory the log dir, read the clients, make the plan."""
    lis = listener or CanaryListener()
    req = request
    _budget(req.memory)
    if req.log_dir.exists():
        for lock in check_read([req.log_dir], live=req.live):
            lis.warning(live_notice(lock))
    sizes = dict(req.max_message_bytes)
    default = sizes.pop(None, None)
    per_topic = {t: n for t, n in sizes.items() if t is not None}
    topics = frozenset(t.strip() for v in req.compacted for t in v.split(",") if t.strip())
    caps = read_clients(req.clients) if req.clients is not None else []
    inv = inventory_log_dir(req.log_dir, InventoryOptions(default or DEFAULT_MAX_MESSAGE_BYTES, per_topic, topics))
    return PlanOutcome(make_plan(inv, caps, PlanOptions(req.target_format, req.partition_max_bytes, req.fetch_sim)))


# ---------------------------------------------------------------------------------------------- run


@dataclass(frozen=True, slots=True)
class RunRequest:
    """``partitions``: partition dir globs (items may hold several, comma-separated); ``workdir``: new or empty,
    outside the log dir; ``codec``: recompress rebuilt batches (None: keep each batch's)."""

    log_dir: Path
    partitions: Sequence[str]
    workdir: Path
    target_format: int = 2
    batch_bytes: int = 0  # 0: one v2 batch per uncompressed legacy message, as Kafka 4's cleaner writes them
    codec: str | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    memory: str | None = None
    skip_corrupt: bool = False  # leave corrupt batches and records out (counted) instead of refusing the partition


@dataclass(frozen=True, slots=True)
class RunOutcome:
    manifest: Manifest
    workdir: Path

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK


def canary_run(request: RunRequest, listener: CanaryListener | None = None) -> RunOutcome:
    """``canary run``: copy and convert the chosen partitions into the work dir."""
    lis = listener or CanaryListener()
    req = request
    _budget(req.memory)
    if req.index_interval_bytes < 1:
        raise UsageError("must be at least 1 byte", field="index_interval_bytes")
    opts = RunOptions(req.target_format, req.batch_bytes, req.codec, req.max_message_bytes, req.index_interval_bytes,
                      req.skip_corrupt)
    return RunOutcome(run_canary(req.log_dir, req.partitions, req.workdir, opts, progress=lis.note), req.workdir)


# ---------------------------------------------------------------------------------------------- verify


@dataclass(frozen=True, slots=True)
class VerifyRequest:
    workdir: Path
    max_differences: int = 20  # listed per partition
    live: bool = False  # also report the state of a log dir a live broker holds
    memory: str | None = None


@dataclass(frozen=True, slots=True)
class VerifyOutcome:
    result: VerifyResult

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.result.ok else ExitCode.FINDINGS


def canary_verify(request: VerifyRequest, listener: CanaryListener | None = None) -> VerifyOutcome:
    """``canary verify``: every canary partition against its original, then what the log dir holds."""
    lis = listener or CanaryListener()
    req = request
    if req.max_differences < 1:
        raise UsageError("must be at least 1", field="max_differences")
    _budget(req.memory)
    r = verify_workdir(req.workdir, max_details=req.max_differences, live=req.live, progress=lis.note)
    if r.live_lock is not None:
        if req.live:
            lis.warning(live_notice(Path(r.live_lock)))
        else:
            lis.note(f"a live broker holds {shown(r.live_lock)}: the log dir's state is not reported "
                     "(a live read reports it anyway)")
    return VerifyOutcome(r)


# ---------------------------------------------------------------------------------------------- apply, rollback


@dataclass(frozen=True, slots=True)
class SwapRequest:
    """``op``: ``apply`` (the verified canaries into the log dir) or ``rollback`` (the originals back);
    ``partitions``: only these partitions of the canary (globs; None: all)."""

    workdir: Path
    op: str
    partitions: Sequence[str] | None = None
    memory: str | None = None


@dataclass(frozen=True, slots=True)
class SwapOutcome:
    result: SwapResult

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK


def canary_swap(request: SwapRequest, listener: CanaryListener | None = None) -> SwapOutcome:
    """``canary apply`` / ``canary rollback`` on a stopped broker's log dir, crash-safe."""
    lis = listener or CanaryListener()
    if request.op not in ("apply", "rollback"):
        raise UsageError(f"must be apply or rollback, not {request.op!r}", field="op")
    _budget(request.memory)
    return SwapOutcome(swap(request.workdir, request.op, partitions=request.partitions, progress=lis.note))


# ---------------------------------------------------------------------------------------------- rehearse


@dataclass(frozen=True, slots=True)
class RehearseRequest:
    """``kafka``: a Kafka install (a distribution or its ``libs/``; None: ``$KAFKA_HOME``); ``server_properties``: the
    operator's broker config (the settings of :data:`kafkatool.canary.rehearse.staging.TAKEN` are applied);
    ``mode``: auto (ZooKeeper when those properties name ``zookeeper.connect`` and the install has it), kraft or
    zookeeper; ``clients``: the clients file of ``canary plan``; ``max_message_bytes``: by topic, the key None for
    every topic; ``timeout``: seconds for each wait (a broker start, a load)."""

    workdir: Path
    kafka: Path | None = None
    server_properties: Path | None = None
    mode: str = "auto"
    clients: Path | None = None
    max_message_bytes: Mapping[str | None, int] = field(default_factory=dict)
    partition_max_bytes: int = 1 << 20  # the modern consumer's max.partition.fetch.bytes
    timeout: float = 300.0
    temp_dir: Path | None = None
    keep_sandbox: bool = False
    port: int | None = None
    java_home: str | None = None
    heap: str = "1g"
    max_differences: int = 20
    memory: str | None = None


@dataclass(frozen=True, slots=True)
class RehearseOutcome:
    result: RehearseResult

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.result.ok else ExitCode.FINDINGS


def canary_rehearse(request: RehearseRequest, listener: CanaryListener | None = None) -> RehearseOutcome:
    """``canary rehearse``: load the canary into a throwaway broker and prove it loads, reads and takes new data."""
    lis = listener or CanaryListener()
    req = request
    _budget(req.memory)
    opts = RehearseOptions(req.kafka, req.server_properties, req.mode, req.clients, dict(req.max_message_bytes),
                           req.partition_max_bytes, req.timeout, req.temp_dir, req.keep_sandbox, req.port,
                           req.java_home, req.heap, req.max_differences)
    return RehearseOutcome(rehearse(req.workdir, opts, progress=lis.note))
