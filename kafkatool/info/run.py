"""``info``: the one entry point of ``kafkatool info``, a fast summary of log dirs from file headers.

Nothing is decompressed and no record is read: per partition the segments' names and sizes, the first batch
header of each segment (formats and codecs seen) and the batches after the last ``.index`` entry of the last
segment (the log end offset, as the broker's load finds it); per log dir ``meta.properties``, the offset
checkpoints (log start offsets, high watermarks, recovery points), the ``.lock`` and the clean-shutdown marker.
An :class:`InfoRequest` says which dirs (and which of their partitions); an :class:`InfoListener` hears each
log dir and partition as it is read; the :class:`InfoOutcome` holds them all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.errors import ExitCode, InputError, KafkaToolError
from kafkatool.log.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint, read_properties
from kafkatool.log.ends import next_offset
from kafkatool.log.index import load_offset_lookup
from kafkatool.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    LOCK_FILE,
    META_PROPERTIES,
    PartitionDir,
    PartitionSelection,
    Segment,
    TopicPartition,
    expand_paths,
    resolve_inputs,
)
from kafkatool.log.lock import check_read, live_lock, live_notice
from kafkatool.record.codecs import Codec
from kafkatool.record.default_records import DefaultRecordBatch
from kafkatool.record.file_records import FileRecords
from kafkatool.util import budget


@dataclass(frozen=True, slots=True)
class InfoRequest:
    paths: Sequence[Path]  # log dirs or partition dirs (quoted globs expanded)
    topic: Sequence[str] = ()  # shell patterns over topic names
    partition: Sequence[int] = ()
    live: bool = False  # read a log dir a live broker holds (its active segments may be mid-write)
    memory: str | None = None  # the run's budget as given (None: KAFKATOOL_MEMORY or the default)


@dataclass(slots=True)
class PartitionInfo:
    name: str  # the dir's name
    path: str
    topic: str | None
    partition: int | None
    segments: int = 0
    bytes: int = 0  # of the .log files
    index_bytes: int = 0  # .index, .timeindex and .txnindex files
    formats: list[int] = field(default_factory=list)  # magics seen (first batch of each segment, the log's tail)
    codecs: list[str] = field(default_factory=list)
    first_offset: int | None = None  # base offset of the first segment
    log_end_offset: int | None = None  # the offset after the last batch (None: no batch)
    log_start_offset: int | None = None  # log-start-offset-checkpoint, at least the first segment's base
    high_watermark: int | None = None  # replication-offset-checkpoint
    recovery_point: int | None = None  # recovery-point-offset-checkpoint
    leader_epoch: int | None = None  # the latest of leader-epoch-checkpoint
    snapshots: int = 0  # producer state snapshots
    pending: int = 0  # .swap/.cleaned/.deleted files: an operation the broker completes at startup
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class LogDirInfo:
    path: str
    kraft: bool | None  # meta.properties version 1 (KRaft), 0 (ZooKeeper), None: no meta.properties
    cluster_id: str | None
    node_id: str | None  # node.id (KRaft) or broker.id (ZooKeeper)
    directory_id: str | None
    clean_shutdown: bool  # .kafka_cleanshutdown present: the broker skips recovery at its next start
    lock: str  # "held" (a live broker), "free" (a .lock no one holds), "none" (no .lock file)
    partitions: list[PartitionInfo] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["partitions"]
        return d


class InfoListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway, a damaged file)."""

    def log_dir(self, info: LogDirInfo) -> None:
        """A log dir's own files, before its partitions."""

    def partition(self, info: PartitionInfo) -> None:
        """One partition dir."""


@dataclass(slots=True)
class InfoOutcome:
    log_dirs: list[LogDirInfo] = field(default_factory=list)
    partitions: list[PartitionInfo] = field(default_factory=list)  # every one, log dirs' included
    problems: int = 0  # files that could not be read (each one a warning)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.problems else ExitCode.OK


def info(request: InfoRequest, listener: InfoListener | None = None) -> InfoOutcome:
    """Summarise ``request.paths`` as ``kafkatool info`` does; the listener hears each dir as it is read."""
    lis = listener or InfoListener()
    paths = expand_paths(request.paths)
    for p in paths:
        if not p.exists():
            raise InputError("no such file or directory", path=p)
        if not p.is_dir():
            raise InputError("not a directory: info reads log dirs and partition dirs", path=p)
    for lock in check_read(paths, live=request.live):
        lis.warning(live_notice(lock))
    budget.activate(budget.resolve(request.memory))
    sel = PartitionSelection(tuple(request.topic), tuple(request.partition))
    out = InfoOutcome()
    for p in paths:
        inputs = resolve_inputs([p])
        for ld in inputs.log_dirs:
            d = _log_dir(ld.path)
            out.log_dirs.append(d)
            lis.log_dir(d)
            offsets = _checkpoints(ld.path, lis, out)
            for part in sel.select(ld.partitions):
                pi = _partition(part, offsets, lis, out)
                d.partitions.append(pi)
                out.partitions.append(pi)
                lis.partition(pi)
        for part in sel.select(inputs.partitions):
            offsets = _checkpoints(part.path.parent, lis, out)
            pi = _partition(part, offsets, lis, out)
            out.partitions.append(pi)
            lis.partition(pi)
    return out


def _log_dir(path: Path) -> LogDirInfo:
    props: dict[str, str] = {}
    if (path / META_PROPERTIES).is_file():
        try:
            props = read_properties(path / META_PROPERTIES)
        except KafkaToolError:
            props = {}
    version = props.get("version")
    lock = "none"
    if (path / LOCK_FILE).exists():
        lock = "held" if live_lock(path) is not None else "free"
    return LogDirInfo(str(path), None if version is None else version == "1", props.get("cluster.id"),
                      props.get("node.id") or props.get("broker.id"), props.get("directory.id"),
                      (path / CLEAN_SHUTDOWN_FILE).exists(), lock)


_CHECKPOINTS = {"log_start_offset": "log-start-offset-checkpoint", "high_watermark": "replication-offset-checkpoint",
                "recovery_point": "recovery-point-offset-checkpoint"}


def _checkpoints(log_dir: Path, lis: InfoListener, out: InfoOutcome) -> dict[str, dict[TopicPartition, int]]:
    found: dict[str, dict[TopicPartition, int]] = {}
    for key, name in _CHECKPOINTS.items():
        f = log_dir / name
        if not f.is_file():
            found[key] = {}
            continue
        try:
            found[key] = read_offset_checkpoint(f)
        except KafkaToolError as e:
            lis.warning(str(e.at(f)))
            out.problems += 1
            found[key] = {}
    return found


def _partition(part: PartitionDir, offsets: dict[str, dict[TopicPartition, int]], lis: InfoListener,
               out: InfoOutcome) -> PartitionInfo:
    tp = part.topic_partition
    pi = PartitionInfo(part.path.name, str(part.path), tp.topic if tp else None, tp.partition if tp else None,
                       segments=len(part.segments), snapshots=len(part.snapshots), pending=len(part.pending))
    if part.kind:
        pi.notes.append(f"a {part.kind} dir: the broker does not load it as a partition")
    if part.pending:
        pi.notes.append(f"{len(part.pending)} .swap/.cleaned/.deleted files: the broker completes them at startup")
    magics: set[int] = set()
    codecs: set[int] = set()
    for i, seg in enumerate(part.segments):
        try:
            pi.bytes += os.path.getsize(seg.log)
            for f in (seg.index, seg.time_index, seg.txn_index):
                if f.exists():
                    pi.index_bytes += os.path.getsize(f)
            _first_header(seg.log, magics, codecs)
            if i == len(part.segments) - 1:
                _tail_headers(seg, magics, codecs)
                pi.log_end_offset = next_offset(seg)
        except (OSError, KafkaToolError) as e:
            lis.warning(f"{seg.log}: {e}")
            out.problems += 1
    if part.segments:
        pi.first_offset = part.segments[0].base_offset
        if pi.log_end_offset is None:  # an empty active segment: the log ends at its base offset
            pi.log_end_offset = part.segments[-1].base_offset
    pi.formats = sorted(magics)
    pi.codecs = [Codec(c).label if c in Codec._value2member_map_ else f"unknown({c})" for c in sorted(codecs)]
    if tp is not None:
        start = offsets["log_start_offset"].get(tp, 0)
        pi.log_start_offset = max(start, pi.first_offset) if pi.first_offset is not None else start
        pi.high_watermark = offsets["high_watermark"].get(tp)
        pi.recovery_point = offsets["recovery_point"].get(tp)
    epochs_file = part.leader_epoch_checkpoint
    if epochs_file.is_file():
        try:
            epochs = read_leader_epoch_checkpoint(epochs_file)
            pi.leader_epoch = epochs[-1].epoch if epochs else None
        except KafkaToolError as e:
            lis.warning(str(e.at(epochs_file)))
            out.problems += 1
    return pi


def _first_header(log: Path, magics: set[int], codecs: set[int]) -> None:
    """The format and codec of the first batch of ``log`` (one header read)."""
    with FileRecords(log) as fr:
        first = next(iter(fr.batches(0)), None)
        if first is not None:
            _note(first, magics, codecs)


def _tail_headers(seg: Segment, magics: set[int], codecs: set[int]) -> None:
    """The formats and codecs of the batches after the ``.index``'s last entry of the last segment."""
    start = 0
    if seg.index.exists():
        start = load_offset_lookup(seg.index, seg.base_offset).position_for(2**63 - 1)
    with FileRecords(seg.log) as fr:
        try:
            for batch in fr.batches(start if start <= fr.size else 0):
                _note(batch, magics, codecs)
        except KafkaToolError:
            pass


def _note(batch: Any, magics: set[int], codecs: set[int]) -> None:
    if type(batch) is DefaultRecordBatch:
        magics.add(int(batch.h.magic))
        codecs.add(int(batch.h.attributes) & 7)
    else:
        magics.add(int(batch.magic))
        codecs.add(int(batch.attributes) & 7)
