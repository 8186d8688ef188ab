"""Log dir layout: file names, partition dirs, segments, and what an operator's PATH argument means.

Spec §4.1 (``LogFileUtils``, ``LocalLog``, ``UnifiedLog``): segment files are
``<20-digit base offset>.<suffix>``; a partition dir is ``<topic>-<partition>`` (with ``.<uuid>-delete``,
``-future`` or ``-stray`` renames); the log dir root holds the checkpoint files, ``meta.properties``
and ``.lock``.
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.errors import InputError, NotRegularFileError, UsageError
from kafkatool.util.regular import irregular, kind_of, link_trouble

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
PARTITION_FILES = (LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA)
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES = "meta.properties"
LOG_DIR_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)

LOG_DIR_FILES = (META_PROPERTIES, *LOG_DIR_CHECKPOINTS, CLEAN_SHUTDOWN_FILE)

_PARTITION_RE = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?P<tag>\.[0-9a-f]{32}-(?:delete|future|stray)|-future|-stray)?$")
_SEGMENT_RE = re.compile(r"^(?P<offset>\d{20})\.(?P<rest>.+)$")


def filename_prefix_from_offset(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: 20 zero-padded digits."""
    return f"{offset:020d}"


def offset_from_filename(name: str) -> int:
    """Base offset from a segment/index/snapshot file name (the text up to the first ``.``)."""
    prefix = os.path.basename(name).split(".", 1)[0]
    if not prefix.isdigit():
        raise InputError(f"file name does not start with a base offset: {os.path.basename(name)}")
    return int(prefix)


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class PartitionSelection:
    """Which partitions a run acts on: topic patterns (shell globs over whole topic names, case-sensitive as
    topic names are; a plain name matches only itself) and partition numbers. Empty: every partition."""

    topics: tuple[str, ...] = ()
    partitions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for n in self.partitions:
            if n < 0:
                raise UsageError(f"{n}: a partition number is 0 or more", field="partition")

    @property
    def everything(self) -> bool:
        return not self.topics and not self.partitions

    def matches(self, tp: TopicPartition | None) -> bool:
        """``tp`` is selected (a file outside a partition dir, ``tp`` None, only when nothing is asked for)."""
        if self.everything:
            return True
        if tp is None:
            return False
        if self.topics and not any(fnmatch.fnmatchcase(tp.topic, t) for t in self.topics):
            return False
        return not self.partitions or tp.partition in self.partitions

    def select(self, parts: Iterable[PartitionDir]) -> list[PartitionDir]:
        return [p for p in parts if self.matches(p.topic_partition)]


def has_glob(text: str) -> bool:
    return glob.has_magic(text)


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The PATH arguments with each quoted glob (``'demo/orders-*'``, ``'*.log'``) expanded here, sorted, as a
    shell would; a name that exists as written is taken as it is, ``-`` (stdin) too. A pattern that matches
    nothing is an error naming it (it may have been meant as a name: ``[`` is a legal character of one)."""
    out: list[Path] = []
    for raw in paths:
        text = os.fspath(raw)
        if text == "-" or os.path.lexists(text) or not has_glob(text):
            out.append(Path(text))
            continue
        found = sorted(glob.glob(text))
        if not found:
            raise InputError("no such file or directory, nor a match of it as a pattern", path=text)
        out += [Path(f) for f in found]
    return out


def parse_partition_dir_name(name: str) -> tuple[TopicPartition, str] | None:
    """``orders-3`` -> (orders, 3), ""; ``orders-3.<uuid>-delete`` -> (orders, 3), "delete"; else None."""
    m = _PARTITION_RE.match(name)
    if not m:
        return None
    tag = m.group("tag") or ""
    kind = tag.rsplit("-", 1)[-1] if tag else ""
    return TopicPartition(m.group("topic"), int(m.group("partition"))), kind


@dataclass(frozen=True, slots=True)
class IrregularFile:
    """A file of a partition or log dir, named as Kafka names its files, that is not a regular file (a FIFO, a
    directory, a device, a socket, a dangling symlink, a loop): never read, reported as a ``not-a-regular-file``
    finding by every command that walks the dir."""

    path: Path
    kind: str  # "a FIFO", "a dangling symbolic link", ... (``util.regular.irregular``)

    def error(self) -> NotRegularFileError:
        """The finding as an error (exit 1), for a command that refuses the dir it is in."""
        return NotRegularFileError(self.kind, path=self.path, walked=True)

    @property
    def message(self) -> str:
        return self.error().message


@dataclass(slots=True)
class Segment:
    """One segment's files (any may be missing, e.g. a ``.txnindex`` exists only after an abort). A segment
    whose ``.log`` is not a regular file is no segment (its dir's ``not_regular`` says so); ``irregular`` holds
    the suffixes of its other files that are not regular files (never read, as if missing)."""

    base_offset: int
    dir: Path
    irregular: frozenset[str] = frozenset()

    def has(self, suffix: str) -> bool:
        """The segment's file with this suffix is there and a regular file."""
        return suffix not in self.irregular and self.file(suffix).is_file()

    def file(self, suffix: str) -> Path:
        return self.dir / (filename_prefix_from_offset(self.base_offset) + suffix)

    @property
    def log(self) -> Path:
        return self.file(LOG_SUFFIX)

    @property
    def index(self) -> Path:
        return self.file(INDEX_SUFFIX)

    @property
    def time_index(self) -> Path:
        return self.file(TIME_INDEX_SUFFIX)

    @property
    def txn_index(self) -> Path:
        return self.file(TXN_INDEX_SUFFIX)


@dataclass(slots=True)
class PartitionDir:
    """A ``<topic>-<partition>`` directory: segments in offset order, snapshots, metadata files."""

    path: Path
    topic_partition: TopicPartition | None
    kind: str = ""  # "", "delete", "future", "stray"
    segments: list[Segment] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)
    pending: list[Path] = field(default_factory=list)  # .swap / .cleaned / .deleted files
    other: list[Path] = field(default_factory=list)
    not_regular: list[IrregularFile] = field(default_factory=list)  # Kafka's file names, not regular files

    @property
    def name(self) -> str:
        return str(self.topic_partition) if self.topic_partition else self.path.name

    @property
    def log_dir(self) -> Path:
        return self.path.parent

    @property
    def leader_epoch_checkpoint(self) -> Path:
        return self.path / LEADER_EPOCH_CHECKPOINT

    @property
    def partition_metadata(self) -> Path:
        return self.path / PARTITION_METADATA

    def segment_files(self) -> list[Path]:
        return [s.file(x) for s in self.segments for x in SEGMENT_SUFFIXES if s.has(x)]

    @classmethod
    def scan(cls, path: str | os.PathLike[str], entries: list[os.DirEntry[str]] | None = None) -> PartitionDir:
        """The dir's files; ``entries``: its ``os.scandir`` entries, already read by the caller (a directory)."""
        p = Path(path)
        if entries is None and not p.is_dir():
            raise InputError("not a directory", path=p)
        parsed = parse_partition_dir_name(p.name)
        tp, kind = parsed if parsed else (None, "")
        part = cls(p, tp, kind)
        bases: set[int] = set()
        irregular_suffixes: dict[int, set[str]] = {}
        for name, what in _listing(p, entries):
            m = _SEGMENT_RE.match(name)
            pending = name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX))
            suffix = "." + m.group("rest") if m else None
            if what is not None:
                # Kafka's loader lists regular files only (``File.isFile``) and would pass over it; we say so.
                if pending or suffix in SEGMENT_SUFFIXES or suffix == SNAPSHOT_SUFFIX or name in PARTITION_FILES:
                    part.not_regular.append(IrregularFile(p / name, what))
                    if m and suffix in SEGMENT_SUFFIXES:
                        irregular_suffixes.setdefault(int(m.group("offset")), set()).add(suffix or "")
                else:
                    part.other.append(p / name)
                continue
            if pending:
                part.pending.append(p / name)
                continue
            if m and suffix in SEGMENT_SUFFIXES:  # a segment's file: named by the Segment, no Path of its own
                if suffix == LOG_SUFFIX:
                    bases.add(int(m.group("offset")))
                continue
            if m and suffix == SNAPSHOT_SUFFIX:
                part.snapshots.append(p / name)
                continue
            part.other.append(p / name)
        part.segments = [Segment(b, p, frozenset(irregular_suffixes.get(b, ()))) for b in sorted(bases)]
        return part


def _entries(path: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError as e:
        raise InputError(f"cannot list: {e.strerror}", path=path) from None


def _listing(path: Path, entries: list[os.DirEntry[str]] | None = None) -> list[tuple[str, str | None]]:
    """The names in dir ``path`` (of ``entries`` when given), sorted, each with what it is when not a regular file
    (``util.regular``)."""
    out = []
    for e in _entries(path) if entries is None else entries:
        try:
            plain = e.is_file(follow_symlinks=False)
        except OSError:
            plain = False
        out.append((e.name, None if plain else irregular(e.path)))
    out.sort()
    return out


@dataclass(slots=True)
class LogDir:
    """A broker log dir (``log.dirs`` entry): partition dirs plus root checkpoint files."""

    path: Path
    partitions: list[PartitionDir] = field(default_factory=list)
    not_regular: list[IrregularFile] = field(default_factory=list)  # its own files (checkpoints...), not regular

    @property
    def lock_file(self) -> Path:
        return self.path / LOCK_FILE

    def checkpoint(self, name: str) -> Path:
        return self.path / name

    @classmethod
    def scan(cls, path: str | os.PathLike[str]) -> LogDir:
        p = Path(path)
        d = cls(p)
        try:
            names = sorted(os.listdir(p))
        except OSError as e:
            raise InputError(f"cannot list: {e.strerror}", path=p) from None
        for name in names:
            sub = p / name
            if sub.is_dir() and parse_partition_dir_name(name) is not None:
                d.partitions.append(PartitionDir.scan(sub))
            elif name in LOG_DIR_FILES and (kind := irregular(sub)) is not None:
                d.not_regular.append(IrregularFile(sub, kind))
        d.partitions.sort(key=lambda x: (x.topic_partition or TopicPartition(x.path.name, -1), x.kind))
        return d


def irregular_siblings(log: Path) -> list[IrregularFile]:
    """The files of the segment ``log`` (its ``.index``, ``.timeindex``, ``.txnindex``) that are there but are not
    regular files: what a segment named on the command line brings along, each a finding as in a dir walk."""
    stem = log.name[:-len(LOG_SUFFIX)] if log.name.endswith(LOG_SUFFIX) else None
    if stem is None:
        return []
    out = []
    for suffix in SEGMENT_SUFFIXES[1:]:
        p = log.with_name(stem + suffix)
        kind = irregular(p)
        if kind is not None:
            out.append(IrregularFile(p, kind))
    return out


def is_partition_dir(path: Path) -> bool:
    if not path.is_dir():
        return False
    try:
        return _names_a_segment(os.listdir(path))
    except OSError:
        return False


def _names_a_segment(names: Iterable[str]) -> bool:
    return any(n.endswith(LOG_SUFFIX) and _SEGMENT_RE.match(n) for n in names)


def is_log_dir(path: Path) -> bool:
    if not path.is_dir():
        return False
    if (path / META_PROPERTIES).exists() or any((path / c).exists() for c in LOG_DIR_CHECKPOINTS):
        return True
    try:
        return any(parse_partition_dir_name(n) and (path / n).is_dir() for n in os.listdir(path))
    except OSError:
        return False


@dataclass(slots=True)
class Inputs:
    """What a command's PATH arguments resolved to."""

    files: list[Path] = field(default_factory=list)  # single files given directly
    partitions: list[PartitionDir] = field(default_factory=list)
    log_dirs: list[LogDir] = field(default_factory=list)

    def all_partitions(self) -> list[PartitionDir]:
        return [*self.partitions, *(p for d in self.log_dirs for p in d.partitions)]

    def not_regular(self) -> list[IrregularFile]:
        """Every file the dir walks met, named as Kafka's files are, that is not a regular file: each a
        ``not-a-regular-file`` finding of the command (exit 1)."""
        return [*(f for d in self.log_dirs for f in d.not_regular), *(f for p in self.all_partitions()
                                                                       for f in p.not_regular)]


def check_input(path: Path) -> int:
    """A PATH argument must be there, and be a regular file or a directory (symlinks followed): else
    ``NotRegularFileError`` (a FIFO, a device, a dangling symlink, a loop) or ``InputError``, exit 2. Returns its
    ``st_mode``."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        kind = link_trouble(path, e)
        if kind is not None:
            raise NotRegularFileError(kind, path=path) from None
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            raise InputError("no such file or directory", path=path) from None
        raise InputError(f"cannot examine it: {e.strerror}", path=path) from None
    kind = kind_of(mode)
    if kind is not None and kind != "a directory":
        raise NotRegularFileError(kind, path=path)
    return mode


def resolve_inputs(paths: Iterable[str | os.PathLike[str]]) -> Inputs:
    """Classify each PATH as a file, a partition dir or a log dir (a dir of partition dirs)."""
    out = Inputs()
    for raw in paths:
        p = Path(raw)
        if stat.S_ISREG(check_input(p)):
            out.files.append(p)
            continue
        try:
            entries: list[os.DirEntry[str]] | None = _entries(p)  # read once: to classify, then to scan
        except InputError:
            entries = None  # as is_partition_dir: not one; scanned below, it says why
        if (entries is not None and _names_a_segment(e.name for e in entries)) or (
                parse_partition_dir_name(p.name) and not is_log_dir(p)):
            out.partitions.append(PartitionDir.scan(p, entries))
        elif is_log_dir(p):
            out.log_dirs.append(LogDir.scan(p))
        elif (m := _SEGMENT_RE.match(p.name)) and "." + m.group("rest") in (*SEGMENT_SUFFIXES, SNAPSHOT_SUFFIX):
            raise NotRegularFileError("a directory", path=p)  # named as a segment's file: given as one
        else:
            raise InputError("neither a Kafka log dir, a partition dir nor a segment file", path=p)
    return out


def log_dir_of(path: Path) -> Path:
    """The log dir that holds a file, a partition dir, or is the path itself."""
    p = path.resolve()
    if p.is_file():
        p = p.parent
    if is_log_dir(p) and not is_partition_dir(p):
        return p
    return p.parent
