"""``fetch_sim``: the one entry point of ``kafkatool fetch-sim``, usable from Python with the same results.

A :class:`FetchSimRequest` says what an old consumer fetches (a Fetch version or the magic it reads, the fetch
offsets, the limits) and what to write (the response, or its record bytes only, into a file); a
:class:`FetchListener` hears each partition's report, the records an old consumer returns (``consumer_view``)
and the response; with ``sweep_chunk_sizes`` the run measures lazy down-conversion per chunk size instead
(and ``plot`` charts it). The :class:`FetchOutcome` holds what the listener heard and the exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafkatool.constants import DOWN_CONVERSION_READ_SIZE as MAX_READ_SIZE
from kafkatool.errors import ExitCode, UsageError
from kafkatool.fetch.report import SweepRow, partition_problem, partition_report, sweep
from kafkatool.fetch.response import response_size
from kafkatool.fetch.simulate import (
    DEFAULT_BROKER_FETCH_MAX_BYTES,
    DEFAULT_FETCH_MAX_BYTES,
    DEFAULT_PARTITION_MAX_BYTES,
    FetchOptions,
    PartitionFetch,
    PartitionRequest,
    iter_fetch_offsets,
    partition_logs,
    simulate,
    to_magic_for_version,
    version_for_magic,
)
from kafkatool.log.layout import IrregularFile, PartitionSelection, TopicPartition, has_glob
from kafkatool.log.lock import check_read, hold_for_write, live_notice, refuse_if_live
from kafkatool.log.outputs import Output, refuse_aliasing
from kafkatool.record.batch import Record
from kafkatool.util import budget
from kafkatool.util.atomic import atomic_write
from kafkatool.util.png_chart import Series, bar_chart
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size


@dataclass(frozen=True, slots=True)
class FetchSimRequest:
    """What to fetch. ``fetch_version`` 0..3, or ``to_magic`` (0: Fetch v1, 1: Fetch v3; the default is magic 1);
    ``fetch_offset``: one offset for every partition, one per partition in the order of ``paths`` (each item may
    hold several, comma-separated), or ``topic-N=OFFSET`` (default: the log start offset). ``topic`` (shell
    patterns) and ``partition`` (numbers) select the partitions of the dirs given; a bare .log file outside a
    partition dir takes its name from them (one topic name, at most one partition: 0 by default). ``output``
    gets the whole FetchResponse (``raw``: only the one partition's record bytes)."""

    paths: Sequence[Path]
    fetch_version: int | None = None
    to_magic: int | None = None
    fetch_offset: Sequence[str] = ()
    partition_max_bytes: int = DEFAULT_PARTITION_MAX_BYTES
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    broker_fetch_max_bytes: int = DEFAULT_BROKER_FETCH_MAX_BYTES
    min_one_message: bool | None = None  # None: as the broker derives it (Fetch v3 yes, v0-2 no)
    chunk_size: int = MAX_READ_SIZE
    position: int | None = None  # slice from this byte of the segment holding the fetch offset (one partition)
    high_watermark: int | None = None  # None: the log end offset
    log_magic: int = 2  # the magic the broker takes the log to hold (2 from IBP 3.0 on; see FetchOptions)
    topic: Sequence[str] = ()
    partition: Sequence[int] = ()
    output: Path | None = None
    raw: bool = False
    correlation_id: int = 0
    throttle_time_ms: int = 0
    consumer_view: bool = False  # the listener hears every record an old consumer returns
    sweep_chunk_sizes: Sequence[int] | None = None
    plot: Path | None = None  # with sweep_chunk_sizes: a PNG chart of the sweep
    trace_memory: bool = False
    live: bool = False  # read a log dir a live broker holds (never written)
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)


class FetchListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway)."""

    def note(self, text: str) -> None:
        """Progress information (the sweep's steps, the chart written)."""

    def record(self, plan: PartitionFetch, record: Record) -> None:
        """consumer_view: one record the old consumer returns from ``plan``'s partition."""

    def partition(self, report: dict[str, Any], problem: str | None) -> None:
        """One partition's figures (``partition_report``) and, when an old consumer gets an error or no records
        from it, that finding."""

    def response(self, response: dict[str, Any]) -> None:
        """The whole response: version, partitions, sizes, where it was written."""

    def sweep(self, rows: Sequence[SweepRow]) -> None:
        """sweep_chunk_sizes: one row per chunk size, then the whole-slice conversion (chunk size 0)."""

    def not_regular(self, file: IrregularFile) -> None:
        """A file of a partition or log dir that is not a regular file (a FIFO, a device, a directory, a bad
        symlink): never read; a finding (exit 1)."""


@dataclass(slots=True)
class FetchOutcome:
    options: FetchOptions
    reports: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    response: dict[str, Any] | None = None
    sweep: list[SweepRow] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.problems else ExitCode.OK


def _bare_file_name(req: FetchSimRequest) -> TopicPartition | None:
    """The name of a .log file outside a partition dir: the one topic asked for (not a pattern) and partition."""
    if not req.topic:
        return None
    if len(req.topic) > 1 or has_glob(req.topic[0]) or len(req.partition) > 1:
        if any(p.is_file() and p.name.endswith(".log") for p in req.paths):
            raise UsageError("names a bare .log file: give one topic name (not a pattern) and at most one partition",
                             field="topic")
        return None
    return TopicPartition(req.topic[0], req.partition[0] if req.partition else 0)


def fetch_sim(request: FetchSimRequest, listener: FetchListener | None = None) -> FetchOutcome:
    """Simulate the fetch as ``kafkatool fetch-sim`` does (locks, budget, atomic writes); the listener hears the
    results."""
    lis = listener or FetchListener()
    req = request
    version = _fetch_version(req)
    if req.raw and req.output is None:
        raise UsageError("writes into an output file: give one (output)", field="raw")
    if req.plot is not None and req.sweep_chunk_sizes is None:
        raise UsageError("charts a sweep of chunk sizes: give them (sweep_chunk_sizes)", field="plot")
    for target in (req.output, req.plot):
        if target is not None:
            refuse_if_live(target)  # never written into a live log dir, live reads or not
    for lock in check_read(req.paths, live=req.live):
        lis.warning(live_notice(lock))
    refuse_aliasing(req.paths, [Output(name, target, "file") for name, target in (("output", req.output),
                                                                                  ("plot", req.plot))
                                if target is not None])
    options = FetchOptions(
        fetch_version=version, partition_max_bytes=req.partition_max_bytes, fetch_max_bytes=req.fetch_max_bytes,
        broker_fetch_max_bytes=req.broker_fetch_max_bytes, min_one_message=req.min_one_message,
        chunk_size=req.chunk_size, correlation_id=req.correlation_id, throttle_time_ms=req.throttle_time_ms,
        trace_memory=req.trace_memory, log_magic=req.log_magic)
    if options.chunk_size < 1:
        raise UsageError("must be at least 1 byte", field="chunk_size")
    chunks = [options.chunk_size]
    if req.sweep_chunk_sizes is not None:
        # The sweep's last row converts each slice whole (brokers before KIP-283): the slice is its chunk.
        chunks += _sweep_sizes(req.sweep_chunk_sizes)
        chunks.append(min(options.partition_max_bytes, options.response_max_bytes))
    mem = budget.resolve(req.memory, chunk_bytes=max(chunks))  # a chunk that does not fit: the minimum
    budget.activate(mem)
    options = replace(options, decompress_limit=mem.worker.decompress_limit)
    irregular: list[IrregularFile] = []
    logs = partition_logs(req.paths, topic_partition=_bare_file_name(req),
                          selection=PartitionSelection(tuple(req.topic), tuple(req.partition)), not_regular=irregular)
    if req.position is not None and len(logs) != 1:
        raise UsageError("applies to exactly one partition", field="position")
    requests = [PartitionRequest(log, log.log_start_offset if off is None else off, req.position, req.high_watermark)
                for log, off in zip(logs, iter_fetch_offsets(req.fetch_offset, logs), strict=True)]
    outcome = FetchOutcome(options)
    for bad in irregular:
        outcome.problems.append(f"{shown(bad.path)}: {bad.message}")
        lis.not_regular(bad)
    if req.sweep_chunk_sizes is not None:
        outcome.sweep = sweep(options, requests, _sweep_sizes(req.sweep_chunk_sizes), progress=lis.note)
        lis.sweep(outcome.sweep)
        if req.plot is not None:
            _plot(outcome.sweep, req.plot)
            lis.note(f"plot written to {req.plot}")
        return outcome

    on_record = lis.record if req.consumer_view else None
    if req.output is not None:
        with hold_for_write(req.output), atomic_write(req.output) as f:
            plans = simulate(options, requests, f, raw=req.raw, on_record=on_record)
    else:
        plans = simulate(options, requests, on_record=on_record)
    for plan in plans:
        report = partition_report(plan, options)
        problem = partition_problem(plan)
        outcome.reports.append(report)
        if problem is not None:
            outcome.problems.append(problem)
        lis.partition(report, problem)
    headers = [p.header for p in plans]
    outcome.response = {
        "type": "response", "fetch_version": options.fetch_version, "to_magic": options.to_magic,
        "partitions": len(plans), "response_size": response_size(options.fetch_version, headers),
        "response_max_bytes": options.response_max_bytes,
        "records_bytes": sum(max(0, h.records_size) for h in headers),
        "out": str(req.output) if req.output is not None else None, "raw": req.raw}
    lis.response(outcome.response)
    return outcome


def _fetch_version(req: FetchSimRequest) -> int:
    if req.fetch_version is None:
        return version_for_magic(1 if req.to_magic is None else req.to_magic)
    if req.to_magic is not None and req.to_magic != to_magic_for_version(req.fetch_version):
        raise UsageError(f"{req.to_magic} contradicts Fetch v{req.fetch_version} (which reads magic "
                         f"{to_magic_for_version(req.fetch_version)})", field="to_magic")
    return req.fetch_version


def _sweep_sizes(sizes: Sequence[int]) -> list[int]:
    if not sizes or min(sizes) < 1:
        raise UsageError("needs sizes of at least 1 byte", field="sweep_chunk_sizes")
    return list(sizes)


def _plot(rows: Sequence[SweepRow], path: Path) -> None:
    cats = [format_size(r.chunk_size) if r.chunk_size else "whole" for r in rows]
    png = bar_chart("fetch-sim: lazy down-conversion by chunk size", cats, [
        Series("throughput", [r.mb_per_s for r in rows], "MB/s of source"),
        Series("peak memory, model", [r.peak_model_bytes / 1024 for r in rows], "KiB"),
        Series("peak memory, traced", [r.peak_traced_bytes / 1024 for r in rows], "KiB"),
    ])
    with hold_for_write(path), atomic_write(path) as f:
        f.write(png)
