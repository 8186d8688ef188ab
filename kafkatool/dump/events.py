"""The typed events ``kafkatool dump``'s engine yields, and its options.

Stream order per file: ``FileStart``, then any of ``BatchEvent`` (and its ``RecordsEvent``) /
``IndexEntryEvent`` / ``Notice`` / ``Finding`` / ``Progress``, then ``FileEnd``; one ``Summary`` closes the run.
Renderers (``dumplog_format``, ``dump_render``, the CLI's table) turn events into text; the engine never formats.

Records travel inside their ``BatchEvent`` (``records``: Kafka's ``Record`` tuples from
``kafkatool.record.batch``). There is deliberately no per-record event object: the per-record path is the hot
one, and a record only means something next to its batch (timestamp type, control flag, magic). A batch of more
records than the memory budget lets a run hold at once (``kafkatool.util.budget.record_chunk``: a few MB of
tiny records can be millions) comes as its ``BatchEvent`` with the first chunk of records, then one
``RecordsEvent`` per further chunk, each with the findings about its records before it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kafkatool.log.checkpoints import EpochEntry, PartitionMetadata
from kafkatool.log.index import OffsetPosition, TimestampOffset
from kafkatool.log.snapshot import ProducerSnapshotEntry
from kafkatool.log.txn_index import AbortedTxn
from kafkatool.record.batch import Record
from kafkatool.record.file_records import RecordBatch
from kafkatool.util.printable import shown

if TYPE_CHECKING:
    from kafkatool.decoders import MessageParser
    from kafkatool.dump.filter import RecordFilter
    from kafkatool.log.layout import PartitionSelection

DEFAULT_RESYNC_LIMIT = 64 * 1024 * 1024


class BatchObserver(Protocol):
    """Sees every batch a walk counts, as it counts it: its CRC verdict (``isValid``) and its records (None when the
    walk decodes none, or they do not decode). For consumers that need the batches but no events (``spark-scan``'s
    per-range figures): a walk with an observer takes the per-batch path, except for the runs of batches the compiled
    walk takes when the observer's ``fast_state`` lets it add up the figures itself."""

    def batch(self, batch: RecordBatch, crc_valid: bool, records: list[Record] | None) -> None: ...

    def more_records(self, batch: RecordBatch, crc_valid: bool, records: list[Record]) -> None:
        """A further chunk of the records of the batch :meth:`batch` saw last: a batch of more records than a chunk
        holds (the memory budget's ``record_chunk``) is read a chunk at a time, and :meth:`batch` had the first."""

    def fast_state(self) -> tuple[Any, int, int, int] | None:
        """The compiled walk's ``scan`` argument, when it can add up this observer's figures itself for the runs of
        batches it takes (then :meth:`absorb` gets them instead of a :meth:`batch` call each); None: every batch
        comes to :meth:`batch`."""

    def absorb(self, figures: Any, max_last_offset: int) -> None:
        """The figures of a run of batches the compiled walk took (``_speedups.dump_walk`` with ``scan``)."""


class Severity(str, enum.Enum):
    """How much a finding matters: errors and warnings make the exit code 1, info does not (unless strict mode
    promoted it to an error)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class FileKind(str, enum.Enum):
    LOG = "log"
    INDEX = "index"
    TIME_INDEX = "timeindex"
    TXN_INDEX = "txnindex"
    PRODUCER_SNAPSHOT = "producer-snapshot"
    KRAFT_SNAPSHOT = "kraft-snapshot"  # KRaft ``<offset>-<epoch>.checkpoint`` / ``bootstrap.checkpoint``
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition-metadata"
    OFFSET_CHECKPOINT = "offset-checkpoint"  # recovery-point-offset-checkpoint & co. in the log dir root
    PROPERTIES = "properties"  # meta.properties
    CLEAN_SHUTDOWN = "clean-shutdown"  # .kafka_cleanshutdown
    QUORUM_STATE = "quorum-state"  # KRaft's quorum-state in __cluster_metadata-0
    UNKNOWN = "unknown"

    @property
    def is_records(self) -> bool:
        return self in (FileKind.LOG, FileKind.KRAFT_SNAPSHOT)


@dataclass(frozen=True, slots=True)
class DumpOptions:
    deep: bool = False  # decode and report every record
    verify: bool = False  # decode every record even when not reporting them; check legacy inner CRCs
    verify_index: bool = False  # check .index/.timeindex entries against the .log (DumpLogSegments' checks)
    verify_index_only: bool = False  # run the index checks without reporting the entries
    index_sanity_check: bool = False  # OffsetIndex/TimeIndex.sanityCheck only
    strict: bool = False  # every unparsed byte is an error; stop a file at its first invalid batch
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    max_bytes: int | None = None  # only the first N bytes of each .log (KIP-824)
    decompress_limit: int | None = None
    resync_limit: int = DEFAULT_RESYNC_LIMIT  # how far to scan for the next valid batch after corruption
    emit_data: bool = True  # False: walk and validate; no batch or entry events, only findings, file ends, summary
    exact_counts: bool = False  # decompress legacy wrappers even in a shallow walk, to count their records
    # DumpLogSegments 3.9 compatibility: index checks always run when an index is dumped, and slot 0 of an
    # index is an entry even when it is zero padding (Kafka prints it).
    kafka_compat: bool = False
    progress_every: int = 64 * 1024 * 1024  # bytes of .log between Progress events
    record_filter: RecordFilter | None = None  # producer id, key, control types ... (dump.filter)
    selection: PartitionSelection | None = None  # only these topics/partitions of the dirs given
    parser: MessageParser | None = None  # a decoder option: emitted records carry their decoded texts
    observer: BatchObserver | None = None  # sees every batch counted (BatchObserver)

    @property
    def needs_records(self) -> bool:
        return self.deep or self.verify or (self.record_filter is not None and self.record_filter.on_records)

    @property
    def filters_offsets(self) -> bool:
        return self.from_offset is not None or self.to_offset is not None

    @property
    def filters_time(self) -> bool:
        return self.from_time is not None or self.to_time is not None


@dataclass(frozen=True, slots=True)
class FileStart:
    path: str
    kind: FileKind
    size: int
    base_offset: int | None = None
    snapshot_end_offset: int | None = None  # KRaft snapshot file name: <end offset>-<epoch>.checkpoint
    snapshot_epoch: int | None = None
    bootstrap: bool = False  # KRaft bootstrap.checkpoint


@dataclass(slots=True)
class BatchEvent:
    """One batch (v2) or log entry (v0/v1) as Kafka's ``FileLogInputStream`` delivers it.

    ``records`` holds the batch's decoded records (after offset/time and record filters) when the run is
    deep, else None. ``crc_valid`` is Kafka's ``isValid()``. ``base_offset`` is Kafka's ``baseOffset()`` where
    it is known without decompressing (see ``dump.batch_base_offset``). ``decoded`` has the (key, payload)
    texts of ``records`` as the run's decoder gives them (a decoder option was set and the batch is not a
    control batch), None meaning "not printed" as in Kafka; else None.
    """

    path: str
    batch: RecordBatch
    crc_valid: bool
    records: list[Record] | None
    base_offset: int | None  # None: a legacy compressed wrapper whose records were not decoded
    decoded: list[tuple[str | None, str | None]] | None = None


@dataclass(slots=True)
class RecordsEvent:
    """More records of the batch of the last ``BatchEvent``: the next chunk of a batch whose records are decoded a
    chunk at a time (after offset/time and record filters; ``decoded`` as in ``BatchEvent``)."""

    path: str
    batch: RecordBatch
    records: list[Record]
    decoded: list[tuple[str | None, str | None]] | None = None


@dataclass(frozen=True, slots=True)
class OffsetCheckpointEntry:
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class PropertyEntry:
    key: str
    value: str


IndexEntry = (OffsetPosition | TimestampOffset | AbortedTxn | ProducerSnapshotEntry | EpochEntry
              | OffsetCheckpointEntry | PartitionMetadata | PropertyEntry)


class EntryKind(str, enum.Enum):
    OFFSET = "offset"  # .index
    TIME = "time"  # .timeindex
    TXN = "txn"  # .txnindex
    PRODUCER_SNAPSHOT = "producer_snapshot"  # .snapshot
    LEADER_EPOCH = "leader_epoch"  # leader-epoch-checkpoint
    OFFSET_CHECKPOINT = "offset_checkpoint"  # log dir root checkpoints
    PARTITION_METADATA = "partition_metadata"
    PROPERTY = "property"  # meta.properties, .kafka_cleanshutdown, quorum-state


@dataclass(frozen=True, slots=True)
class IndexEntryEvent:
    path: str
    kind: EntryKind
    slot: int  # the entry's index in its file
    entry: IndexEntry


class NoticeKind(str, enum.Enum):
    INDEX_EMPTY = "index-empty"  # DumpLogSegments: "<file> is empty."
    SANITY_PASSED = "sanity-passed"  # "<file> passed sanity check."
    UNKNOWN_FILE = "unknown-file"  # "Ignoring unknown file <file>" (stderr)


@dataclass(frozen=True, slots=True)
class Notice:
    path: str
    kind: NoticeKind


@dataclass(frozen=True, slots=True)
class Finding:
    """Something wrong (or worth knowing) about the bytes on disk, with where it is.

    ``kind`` names what was found (documented in docs/dump.md's finding table); ``data`` carries the
    kind's numbers (e.g. ``index_offset``/``log_offset`` of an index mismatch).
    """

    kind: str
    severity: Severity
    path: str
    message: str
    position: int | None = None
    offset: int | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        where = shown(self.path)
        if self.position is not None:
            where += f" at byte {self.position}"
        return f"{self.severity.value}: {self.kind}: {where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Progress:
    path: str
    position: int
    size: int


@dataclass(frozen=True, slots=True)
class FileEnd:
    path: str
    kind: FileKind
    size: int
    batches: int = 0
    records: int | None = None  # None when not all counts are known (legacy wrappers in a shallow walk)
    entries: int = 0  # index/checkpoint entries
    valid_bytes: int = 0  # bytes of walked batches
    invalid_bytes: int = 0  # bytes not in any walked batch (skipped regions and the tail)
    # Why the walk ended before the end of the file: "to-offset", "strict", "max-bytes" (the cut max_bytes
    # asked for, not damage) or "wrong-file-type" (the content is another kind of file, see kafkatool.record.sniff).
    stopped: str | None = None
    # Where Kafka's FileLogInputStream stops reading this file (its DumpLogSegments prints "Found <size -
    # reader_stop> invalid bytes" there), None when it reads to the end; reader_throws: it throws there
    # (CorruptRecordException: a size field below 14) instead of stopping silently.
    reader_stop: int | None = None
    reader_throws: bool = False
    # A range walk (``DumpEngine.dump_file`` with ``stop``) that reached its end: the first batch position at or after
    # ``stop``, where the next range's walk goes on; None when the walk ended in the file (its end, or damage).
    handoff: int | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    files: int
    batches: int
    records: int | None
    bytes: int  # bytes of batches walked
    invalid_batches: int
    errors: int
    warnings: int
    infos: int
    io_errors: int
    first_offset: int | None
    last_offset: int | None
    max_timestamp: int | None
    codecs: dict[str, int]
    magics: dict[int, int]
    entries: int = 0  # index, snapshot and checkpoint entries


Event = FileStart | BatchEvent | RecordsEvent | IndexEntryEvent | Notice | Finding | Progress | FileEnd | Summary
