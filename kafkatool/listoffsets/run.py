"""``offsets_for_times``: the one entry point of ``kafkatool offsets-for-times``, usable from Python.

An :class:`OffsetsRequest` names the partitions (dirs, topic patterns, partition numbers) and the times to look
up (epoch ms, or ``earliest``, ``latest``, ``max-timestamp``); the answer for each partition and time is what a
Kafka 3.9 leader returns to ListOffsets from those files (``lookup``). The :class:`OffsetsListener` hears each
answer; the :class:`OffsetsOutcome` holds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.errors import ExitCode, InputError, KafkaToolError, UsageError
from kafkatool.listoffsets.lookup import EARLIEST, LATEST, MAX_TIMESTAMP, TimestampAndOffset, fetch_offset_by_timestamp
from kafkatool.log.checkpoints import EpochEntry, read_leader_epoch_checkpoint, read_offset_checkpoint
from kafkatool.log.ends import next_offset
from kafkatool.log.layout import PartitionDir, PartitionSelection, TopicPartition, expand_paths, resolve_inputs
from kafkatool.log.lock import check_read, live_notice
from kafkatool.util import budget

SPECIAL = {"earliest": EARLIEST, "latest": LATEST, "max-timestamp": MAX_TIMESTAMP}


@dataclass(frozen=True, slots=True)
class OffsetsRequest:
    """``time``: the times to look up, each epoch milliseconds (>= 0), ISO-8601, or ``earliest``, ``latest``,
    ``max-timestamp``."""

    paths: Sequence[Path]
    time: Sequence[int | str]
    topic: Sequence[str] = ()  # shell patterns over topic names
    partition: Sequence[int] = ()
    live: bool = False
    memory: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    topic: str
    partition: int
    query: str  # the time as asked: epoch ms, earliest, latest, max-timestamp
    timestamp: int  # -1 for earliest/latest, and when nothing is found
    offset: int  # -1: no offset (nothing at or after the time below the last fetchable offset)
    leader_epoch: int | None
    log_start_offset: int
    high_watermark: int  # the last fetchable offset of a read_uncommitted consumer
    log_end_offset: int
    high_watermark_source: str  # "checkpoint", or "log end" (no replication-offset-checkpoint entry)


class OffsetsListener:
    """What a run reports as it goes; every method does nothing unless overridden."""

    def warning(self, text: str) -> None:
        """A line for the operator that is not a finding (a live lock read anyway)."""

    def answer(self, answer: OffsetAnswer) -> None:
        """One partition's answer for one time."""


@dataclass(slots=True)
class OffsetsOutcome:
    answers: list[OffsetAnswer] = field(default_factory=list)
    problems: int = 0  # files that could not be read (a warning each): an answer may lack its leader epoch

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.problems else ExitCode.OK


def parse_time(value: int | str) -> int:
    """A time as ListOffsets takes it: epoch ms >= 0 or one of ``SPECIAL``."""
    if isinstance(value, int):
        if value < 0:
            raise UsageError(f"{value}: a timestamp is 0 or more (or earliest, latest, max-timestamp)", field="time")
        return value
    text = value.strip()
    if text.lower() in SPECIAL:
        return SPECIAL[text.lower()]
    from kafkatool.util.units import parse_time_ms

    try:
        return parse_time(parse_time_ms(text))
    except UsageError as e:
        raise UsageError(f"{value!r}: {e.message} (or earliest, latest, max-timestamp)", field="time") from None


def offsets_for_times(request: OffsetsRequest, listener: OffsetsListener | None = None) -> OffsetsOutcome:
    """Answer every (partition, time) of ``request`` as ``kafkatool offsets-for-times`` does."""
    lis = listener or OffsetsListener()
    if not request.time:
        raise UsageError("give at least one time (epoch ms, ISO-8601, earliest, latest or max-timestamp)",
                         field="time")
    targets = [(str(t), parse_time(t)) for t in request.time]
    paths = expand_paths(request.paths)
    for p in paths:
        if not p.is_dir():
            raise InputError("not a log dir or partition dir" if p.exists() else "no such file or directory", path=p)
    for lock in check_read(paths, live=request.live):
        lis.warning(live_notice(lock))
    mem = budget.resolve(request.memory)
    budget.activate(mem)
    sel = PartitionSelection(tuple(request.topic), tuple(request.partition))
    out = OffsetsOutcome()
    parts: list[PartitionDir] = []
    for p in paths:
        inputs = resolve_inputs([p])
        parts += sel.select(p for p in inputs.all_partitions() if not p.kind)
    if not parts:
        raise InputError("no partition found in the given paths" + ("" if sel.everything else
                                                                    " (none of the topics and partitions asked for)"))
    for part in parts:
        epochs: list[EpochEntry] = []
        if part.leader_epoch_checkpoint.is_file():
            try:
                epochs = read_leader_epoch_checkpoint(part.leader_epoch_checkpoint)
            except KafkaToolError as e:
                lis.warning(f"{e.at(part.leader_epoch_checkpoint)}: answered without leader epochs")
                out.problems += 1
        for query, target in targets:
            a = _answer(part, query, target, epochs, mem.worker.decompress_limit)
            out.answers.append(a)
            lis.answer(a)
    return out


def _answer(part: PartitionDir, query: str, target: int, epochs: list[EpochEntry],
            limit: int | None) -> OffsetAnswer:
    tp = part.topic_partition
    assert tp is not None
    log_dir = part.path.parent
    start = max(_checkpoint(log_dir, "log-start-offset-checkpoint", tp) or 0,
                part.segments[0].base_offset if part.segments else 0)
    leo = _log_end_offset(part)
    hw_checkpoint = _checkpoint(log_dir, "replication-offset-checkpoint", tp)
    hw = leo if hw_checkpoint is None else min(hw_checkpoint, leo)
    found: TimestampAndOffset = fetch_offset_by_timestamp(part.segments, target, log_start_offset=start,
                                                          last_fetchable_offset=hw, epochs=epochs, limit=limit)
    return OffsetAnswer(tp.topic, tp.partition, query, found.timestamp, found.offset, found.leader_epoch, start, hw,
                        leo, "log end" if hw_checkpoint is None else "checkpoint")


def _checkpoint(log_dir: Path, name: str, tp: TopicPartition) -> int | None:
    f = log_dir / name
    if not f.is_file():
        return None
    try:
        return read_offset_checkpoint(f).get(tp)
    except KafkaToolError:
        return None


def _log_end_offset(part: PartitionDir) -> int:
    """The offset after the last valid batch of the last segment (its base offset when it has none)."""
    if not part.segments:
        return 0
    end = next_offset(part.segments[-1])
    return part.segments[-1].base_offset if end is None else end
