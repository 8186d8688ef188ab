"""Which files ``kafkatool dump`` reads and in what order: a file's kind from its name (DumpLogSegments'
dispatch), a partition dir's files in dump order, a log dir's own files, and the expansion of the command's
paths."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from kafkatool.dump.events import FileKind
from kafkatool.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_DIR_CHECKPOINTS,
    LOG_DIR_FILES,
    LOG_SUFFIX,
    META_PROPERTIES,
    PARTITION_METADATA,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    LogDir,
    PartitionDir,
    PartitionSelection,
    parse_partition_dir_name,
    resolve_inputs,
)

KRAFT_SNAPSHOT_SUFFIX = ".checkpoint"  # org.apache.kafka.snapshot.Snapshots.SUFFIX
KRAFT_QUORUM_STATE = "quorum-state"  # org.apache.kafka.raft.FileQuorumStateStore (KafkaRaftManager's file name)


def classify(path: Path) -> FileKind:
    """The file kind from its name: by the text after the last ``.``, as DumpLogSegments dispatches, plus
    the partition and log dir files Kafka's tool does not know."""
    name = path.name
    if name.endswith(LOG_SUFFIX):
        return FileKind.LOG
    if name.endswith(INDEX_SUFFIX):
        return FileKind.INDEX
    if name.endswith(TIME_INDEX_SUFFIX):
        return FileKind.TIME_INDEX
    if name.endswith(TXN_INDEX_SUFFIX):
        return FileKind.TXN_INDEX
    if name.endswith(SNAPSHOT_SUFFIX):
        return FileKind.PRODUCER_SNAPSHOT
    if name.endswith(KRAFT_SNAPSHOT_SUFFIX):
        return FileKind.KRAFT_SNAPSHOT
    if name == LEADER_EPOCH_CHECKPOINT:
        return FileKind.LEADER_EPOCH_CHECKPOINT
    if name == PARTITION_METADATA:
        return FileKind.PARTITION_METADATA
    if name in LOG_DIR_CHECKPOINTS:
        return FileKind.OFFSET_CHECKPOINT
    if name == META_PROPERTIES:
        return FileKind.PROPERTIES
    if name == CLEAN_SHUTDOWN_FILE:
        return FileKind.CLEAN_SHUTDOWN
    if name == KRAFT_QUORUM_STATE:
        return FileKind.QUORUM_STATE
    return FileKind.UNKNOWN


_SEGMENT_ORDER = {FileKind.LOG: 0, FileKind.INDEX: 1, FileKind.TIME_INDEX: 2, FileKind.TXN_INDEX: 3}


def partition_files(part: PartitionDir) -> list[Path]:
    """A partition dir's files in dump order: per segment ``.log .index .timeindex .txnindex``, then producer
    snapshots, KRaft snapshots, ``leader-epoch-checkpoint``, ``partition.metadata``, then everything else
    (index files without a ``.log``, ``.deleted``/``.cleaned``/``.swap`` files, unknown files). Files named as
    Kafka's that are not regular files (``part.not_regular``) are among them, to be reported; other entries that
    are not regular files (a subdirectory) are not."""
    try:
        names = sorted({n for n in os.listdir(part.path) if (part.path / n).is_file()} |
                       {f.path.name for f in part.not_regular})
    except OSError:
        names = []
    segment: list[tuple[int, int, Path]] = []
    snapshots: list[Path] = []
    kraft: list[Path] = []
    meta: list[Path] = []
    rest: list[Path] = []
    for name in names:
        f = part.path / name
        kind = classify(f)
        prefix = name.split(".", 1)[0]
        if kind in _SEGMENT_ORDER and len(prefix) == 20 and prefix.isdigit() and name.count(".") == 1:
            segment.append((int(prefix), _SEGMENT_ORDER[kind], f))
        elif kind == FileKind.PRODUCER_SNAPSHOT and name.count(".") == 1:
            snapshots.append(f)
        elif kind == FileKind.KRAFT_SNAPSHOT:
            kraft.append(f)
        elif kind in (FileKind.LEADER_EPOCH_CHECKPOINT, FileKind.PARTITION_METADATA):
            meta.append(f)
        else:
            rest.append(f)
    meta.sort(key=lambda p: 0 if p.name == LEADER_EPOCH_CHECKPOINT else 1)
    return [f for _, _, f in sorted(segment)] + snapshots + kraft + meta + rest


def log_dir_root_files(log_dir: LogDir) -> list[Path]:
    """A log dir's own files (``meta.properties``, the checkpoints), those that are not regular files included."""
    path = log_dir.path
    irregular = {f.path.name for f in log_dir.not_regular}
    return [path / n for n in LOG_DIR_FILES if n in irregular or (path / n).is_file()]


# The files DumpLogSegments 3.9 dumps (by the text after the last '.'); it ignores or fails on the others.
KAFKA_DUMPED_KINDS = frozenset({FileKind.LOG, FileKind.KRAFT_SNAPSHOT, FileKind.INDEX, FileKind.TIME_INDEX,
                                FileKind.TXN_INDEX, FileKind.PRODUCER_SNAPSHOT})


class PlannedFile(NamedTuple):
    path: Path
    walked: bool  # met in a walk of a partition or log dir (not named on the command line)


def plan_files(paths: Iterable[str | os.PathLike[str]], *, kafka_files_only: bool = False,
               selection: PartitionSelection | None = None) -> Iterator[PlannedFile]:
    """Every file to dump, in argument order; a dir expands to its files (``logdir.resolve_inputs``).

    ``kafka_files_only``: a dir expands only to the files Kafka's tool dumps (the dump-log format: the run is
    then ``kafka-dump-log.sh --files`` over them); files named on the command line are always dumped.
    ``selection``: only the partitions it selects (a file by the name of the dir it is in; a log dir's own files,
    which are about every partition, only when it selects everything)."""
    sel = selection or PartitionSelection()

    def expanded(files: Iterable[Path]) -> Iterator[PlannedFile]:
        return (PlannedFile(f, True) for f in files if not kafka_files_only or classify(f) in KAFKA_DUMPED_KINDS)

    for raw in paths:
        inputs = resolve_inputs([raw])
        for f in inputs.files:
            parsed = parse_partition_dir_name(f.resolve().parent.name)
            if sel.matches(parsed[0] if parsed else None):
                yield PlannedFile(f, False)
        for part in sel.select(inputs.partitions):
            yield from expanded(partition_files(part))
        for ld in inputs.log_dirs:
            if sel.everything:
                yield from expanded(log_dir_root_files(ld))
            for part in sel.select(ld.partitions):
                yield from expanded(partition_files(part))


def base_offset_of(path: Path) -> int | None:
    prefix = path.name.split(".", 1)[0]
    return int(prefix) if prefix.isdigit() else None
