"""``dump``: the one entry point of ``kafkatool dump``, usable from Python with the same results.

A :class:`DumpRequest` says what to walk and what to report (records, filters, decoders, index checks); a
:class:`DumpListener` hears every event of the walk as it happens (the command renders them: text, Kafka's
dump-log lines, JSON lines or a table); the :class:`DumpOutcome` holds the closing :class:`Summary` and the
exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from kafkatool.dump.engine import DumpEngine
from kafkatool.dump.events import DEFAULT_RESYNC_LIMIT, DumpOptions, Event, Summary
from kafkatool.dump.filter import RecordFilter
from kafkatool.errors import ExitCode, UsageError
from kafkatool.log.layout import PartitionSelection, check_input, expand_paths
from kafkatool.log.lock import check_read, live_notice
from kafkatool.util import budget

PROGRESS_EVERY = 4 << 20  # bytes between progress events when a listener shows progress


@dataclass(frozen=True, slots=True)
class DumpRequest:
    """What to dump. ``decoder`` (whole records) or ``key_decoder``/``value_decoder`` (one side each) name a
    decoder of :mod:`kafkatool.decoders`; any of them shows the data, as Kafka's decoder options do.
    ``summary_only`` and ``count`` walk and validate everything but report no batch or entry (``count``: exact
    record counts, legacy wrappers decompressed even in a shallow walk)."""

    paths: Sequence[Path]
    deep: bool = False  # every record of every batch
    print_data: bool = False  # keys, values and header values (implies deep)
    verify: bool = False  # decode every record even when not reporting them
    verify_index: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    strict: bool = False  # every unparsed byte is an error; a file stops at its first invalid batch
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    max_bytes: int | None = None  # only the first N bytes of each .log
    resync_limit: int = DEFAULT_RESYNC_LIMIT
    decoder: str | None = None
    key_decoder: str | None = None
    value_decoder: str | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    transactional: bool | None = None
    control_type: Sequence[str] | None = None  # any of these control record types (abort, commit, ...)
    key: str | None = None
    key_regex: str | None = None
    summary_only: bool = False
    count: bool = False
    kafka_compat: bool = False  # kafka-dump-log.sh 3.9's files, index checks and zero-padded slot 0
    live: bool = False  # read a log dir a live broker holds
    topic: Sequence[str] = ()  # only topics matching these shell patterns (log dirs and partition dirs)
    partition: Sequence[int] = ()  # only these partition numbers
    kind: str | None = None  # what the file read from stdin (path ``-``) is; None: sniffed (dump.stdin.KINDS)
    stdin: BinaryIO | None = None  # where path ``-`` is read from (None: the process's stdin)
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)

    @property
    def shows_data(self) -> bool:
        """Keys and values are shown: asked for, or implied by a decoder."""
        return self.print_data or any(d is not None for d in (self.decoder, self.key_decoder, self.value_decoder))

    @property
    def walks_records(self) -> bool:
        return self.deep or self.shows_data

    @property
    def reports_data(self) -> bool:
        """Batches, records and entries are reported (not a summary or a count only)."""
        return not (self.summary_only or self.count)


class DumpListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway)."""

    wants_totals: bool = False  # set by a listener that shows progress: it hears ``planned`` first

    def planned(self, records_bytes: int) -> None:
        """(``wants_totals``) The bytes of records files the walk will read, before it starts."""

    def start(self, options: DumpOptions) -> None:
        """The walk begins with these engine options (the memory budget's decompression limit among them)."""

    def event(self, ev: Event) -> None:
        """One event of the walk, in order: files, batches, entries, notices, findings, progress; the last is the
        :class:`Summary`."""


@dataclass(frozen=True, slots=True)
class DumpOutcome:
    summary: Summary

    @property
    def exit_code(self) -> ExitCode:
        s = self.summary
        if s.io_errors:
            return ExitCode.USAGE
        if s.errors or s.warnings:
            return ExitCode.FINDINGS
        return ExitCode.OK


def dump_options(request: DumpRequest) -> DumpOptions:
    """The engine's options for ``request``: filters and decoders checked, the memory budget resolved and made the
    run's (its decompression limit bounds every batch)."""
    req = request
    if req.from_offset is not None and req.to_offset is not None and req.from_offset > req.to_offset:
        raise UsageError(f"{req.from_offset} is after the last offset asked for ({req.to_offset})", field="from_offset")
    parser = None
    if any(d is not None for d in (req.decoder, req.key_decoder, req.value_decoder)):
        from kafkatool.decoders import resolve_parser  # the decoders load only when asked for

        parser = resolve_parser(req.decoder, req.key_decoder, req.value_decoder)
    record_filter = RecordFilter.build(
        producer_id=req.producer_id, producer_epoch=req.producer_epoch, transactional=req.transactional,
        control_types=req.control_type or None, key=req.key, key_regex=req.key_regex)
    mem = budget.resolve(req.memory)
    budget.activate(mem)
    return DumpOptions(
        selection=PartitionSelection(tuple(req.topic), tuple(req.partition)),
        deep=req.walks_records, verify=req.verify, verify_index=req.verify_index,
        verify_index_only=req.verify_index_only, index_sanity_check=req.index_sanity_check, strict=req.strict,
        from_offset=req.from_offset, to_offset=req.to_offset, from_time=req.from_time, to_time=req.to_time,
        max_bytes=req.max_bytes, decompress_limit=mem.worker.decompress_limit, resync_limit=req.resync_limit,
        emit_data=req.reports_data, exact_counts=req.count, kafka_compat=req.kafka_compat,
        record_filter=record_filter, parser=parser)


def dump(request: DumpRequest, listener: DumpListener | None = None) -> DumpOutcome:
    """Walk ``request.paths`` as ``kafkatool dump`` does (locks, budget); the listener hears every event."""
    from kafkatool.dump.stdin import KINDS, STDIN_NAME, stdin_file

    lis = listener or DumpListener()
    paths = expand_paths(request.paths)
    if request.kind is not None and request.kind not in KINDS:
        raise UsageError(f"{request.kind!r}: one of {', '.join(KINDS)}", field="kind")
    if request.kind is not None and Path(STDIN_NAME) not in paths:
        raise UsageError("says what the file read from stdin is: give - as a path", field="kind")
    if paths.count(Path(STDIN_NAME)) > 1:
        raise UsageError("stdin (-) can be read once", field="paths")
    for p in paths:
        if p != Path(STDIN_NAME):
            check_input(p)  # there, and a regular file or a dir: a FIFO named here is refused (exit 2)
    files = [p for p in paths if p != Path(STDIN_NAME)]
    for lock in check_read(files, live=request.live):
        lis.warning(live_notice(lock))
    options = dump_options(request)
    with ExitStack() as stack:
        named = {}
        if Path(STDIN_NAME) in paths:
            stream = request.stdin if request.stdin is not None else sys.stdin.buffer
            named[STDIN_NAME] = stack.enter_context(stdin_file(stream, request.kind))
        if lis.wants_totals:
            lis.planned(_records_bytes(files, options))
            options = replace(options, progress_every=PROGRESS_EVERY)
        lis.start(options)
        summary: Summary | None = None
        for ev in DumpEngine(options).run(paths, named):
            if type(ev) is Summary:
                summary = ev
            lis.event(ev)
    assert summary is not None  # the engine's last event
    return DumpOutcome(summary)


def _records_bytes(paths: Sequence[Path], options: DumpOptions) -> int:
    """The size of every records file the walk of ``paths`` reads (a listing and a stat per file, no read)."""
    from kafkatool.dump.paths import classify, plan_files

    total = 0
    for f, _ in plan_files(paths, kafka_files_only=options.kafka_compat, selection=options.selection):
        if classify(f).is_records:
            try:
                total += f.stat().st_size
            except OSError:
                pass
    return total
