"""Rebuild the metadata image from ``__cluster_metadata-0`` on disk, as a controller does when it starts.

Kafka's controller (``QuorumController`` via ``KafkaRaftClient``/``MetadataLoader``, 3.9 and 4.x) loads the
latest snapshot (``<end offset>-<epoch>.checkpoint``: the image of every record *before* the end offset, framed
by a SnapshotHeader and a SnapshotFooter control record), then replays the log from the snapshot's end offset.
Here, with ``at_offset``/``at_time``, the latest snapshot at or before that point is loaded instead and the
replay stops there: the image as it was at that offset or time (records of batches whose timestamp is at or
before ``at_time``).

What Kafka would refuse is a finding, never a crash:

* a snapshot that is truncated, has no footer (Kafka writes the footer last and then renames the
  ``.checkpoint.part`` file), has no header, a bad CRC or records that do not decode: error, and the loader
  falls back to the previous snapshot (or to the log from offset 0, when the log still starts there);
* a log batch with a bad CRC or that runs past the end of its segment: replay stops there, as the broker's
  log recovery truncates there (a torn tail of the last segment is a warning, damage in the middle an error);
* a record that does not decode (unknown type, truncated fields, garbage tagged fields): error with the
  record's offset and the byte position, and the record is skipped (a controller would stop);
* a record that does not apply (a partition of an unknown topic...): warning;
* offsets that do not follow on (records missing between the snapshot and the log, or inside the log).

Records past the high watermark may be on disk and not committed: offline, nothing says where the high
watermark is, so the image includes every record read (``log_end_offset`` says how far that is).

Metadata transactions (``BeginTransactionRecord`` .. ``EndTransactionRecord``) are applied at their end and
dropped on ``AbortTransactionRecord``; one still open where the replay stops is left out (with a note).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from kafkatool.decoders import (
    METADATA_PARTITION_DIR,
    FramedMessage,
    MessageError,
    MetadataParseError,
    read_control_value,
    read_metadata_record,
)
from kafkatool.errors import InputError, KafkaToolError, NotRegularFileError, UsageError
from kafkatool.metadata.image import MetadataImage
from kafkatool.record.default_records import parse_control_type_id
from kafkatool.record.file_records import FileRecords
from kafkatool.util.regular import irregular, read_regular

SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")  # Snapshots.parse
SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
QUORUM_STATE = "quorum-state"
SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 3, 4
CONTROL_NAMES = {2: "LeaderChangeMessage", 5: "KRaftVersionRecord", 6: "VotersRecord"}
TXN_BEGIN, TXN_END, TXN_ABORT = "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"


@dataclass(frozen=True, slots=True)
class MetadataFinding:
    kind: str
    severity: str  # "error" | "warning" | "info"
    path: str
    message: str
    position: int | None = None  # byte in the file
    offset: int | None = None

    def __str__(self) -> str:
        where = self.path + (f" at byte {self.position}" if self.position is not None else "")
        off = f" (offset {self.offset})" if self.offset is not None else ""
        return f"{where}{off}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "path": self.path, "position": self.position,
                "offset": self.offset, "message": self.message}


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    path: Path
    end_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class MetadataLog:
    """The files of a ``__cluster_metadata-0`` dir: snapshots by end offset, segments by base offset."""

    path: Path
    snapshots: tuple[SnapshotFile, ...]
    segments: tuple[tuple[int, Path], ...]

    @classmethod
    def locate(cls, path: str | Path) -> MetadataLog:
        """``path`` is the partition dir itself or a log dir (``metadata.log.dir``) holding it."""
        p = Path(path)
        if (kind := irregular(p)) is not None and kind != "a directory":
            raise NotRegularFileError(kind, path=p)
        if not p.exists():
            raise InputError("no such file or directory", path=p)
        if not p.is_dir():
            raise InputError("not a directory: give the __cluster_metadata-0 dir or the log dir holding it", path=p)
        if (p / METADATA_PARTITION_DIR).is_dir():
            p = p / METADATA_PARTITION_DIR
        snaps, segs = [], []
        for child in sorted(p.iterdir()):
            snap, seg = SNAPSHOT_RE.match(child.name), SEGMENT_RE.match(child.name)
            if (snap or seg) and (kind := irregular(child)) is not None:
                # A FIFO, a device or a broken symlink named as a snapshot or a segment: the log cannot be read
                # whole (a finding, exit 1), and never is read.
                raise NotRegularFileError(kind, path=child, walked=True)
            if snap and child.is_file():
                snaps.append(SnapshotFile(child, int(snap.group(1)), int(snap.group(2))))
            elif seg and child.is_file():
                segs.append((int(seg.group(1)), child))
        if not snaps and not segs:
            raise InputError(f"no KRaft metadata here (no *.checkpoint snapshot, no *.log segment; a "
                             f"{METADATA_PARTITION_DIR} dir or the log dir holding it is expected)", path=p)
        return cls(p, tuple(sorted(snaps, key=lambda s: (s.end_offset, s.epoch))), tuple(sorted(segs)))

    def quorum_state(self) -> dict[str, Any] | None:
        """The ``quorum-state`` file (``FileQuorumStateStore``: leaderId, leaderEpoch, votedId, currentVoters...),
        or None when it is missing or not a JSON object."""
        try:
            doc = json.loads(read_regular(self.path / QUORUM_STATE, limit=1 << 20))
        except (OSError, ValueError, NotRegularFileError):
            return None
        return doc if isinstance(doc, dict) else None

    @property
    def log_start_offset(self) -> int | None:
        return self.segments[0][0] if self.segments else None


@dataclass(frozen=True, slots=True)
class Entry:
    """One record of a metadata file, with what replay needs of its batch."""

    offset: int
    timestamp: int  # the batch's max timestamp
    epoch: int  # the batch's partition leader epoch
    control: int | None  # ControlRecordType id for a control record
    value: bytes | None
    path: str
    position: int  # of the batch in the file


class _Stop(Exception):
    """A file cannot be read past this point (the finding is already recorded)."""


def read_entries(path: Path, findings: list[MetadataFinding], *, last_segment: bool = True,
                 snapshot: bool = False) -> Iterator[Entry]:
    """The records of a segment or snapshot file in order; damage becomes a finding and ends the file."""
    display = str(path)
    try:
        fr = FileRecords(path)
    except KafkaToolError as e:
        findings.append(MetadataFinding("io-error", "error", display, e.message))
        raise _Stop() from None
    try:
        stream = fr.batches()
        try:
            for batch in stream:
                pos = batch.position
                if batch.magic != 2:
                    findings.append(MetadataFinding("unexpected-magic", "error", display,
                                                    f"batch of magic {batch.magic}: KRaft writes magic 2 only", pos))
                    raise _Stop()
                if not batch.is_valid():
                    findings.append(MetadataFinding(
                        "crc-mismatch", "error", display, f"batch (offsets ..{batch.last_offset}) is corrupt: stored "
                        f"crc {batch.crc} != computed {batch.compute_crc()}; the records from here on are not read "
                        "(Kafka's recovery truncates the log here)", pos, batch.last_offset))
                    raise _Stop()
                try:
                    chunks = batch.record_chunks()  # a chunk of records at a time: a batch may hold millions
                    first = next(chunks)
                except KafkaToolError as e:
                    findings.append(MetadataFinding("invalid-records", "error", display,
                                                    f"records of the batch do not decode: {e.message}", pos))
                    raise _Stop() from None
                h = batch.h  # type: ignore[union-attr]
                control = batch.is_control
                for r in chain(first, chain.from_iterable(chunks)):
                    ctype = None
                    if control:
                        try:
                            ctype = parse_control_type_id(r.key)
                        except KafkaToolError as e:
                            findings.append(MetadataFinding("invalid-control", "error", display,
                                                            f"control record key: {e.message}", pos, r.offset))
                            continue
                    yield Entry(r.offset, h[8], h[2], ctype, r.value, display, pos)
        finally:
            st = stream.end_state
        if st is not None and st.kind != "end":
            rest = fr.size - st.position
            if snapshot:
                findings.append(MetadataFinding("snapshot-truncated", "error", display,
                                                f"the snapshot ends inside a batch ({st.message}; {rest} bytes)",
                                                st.position))
                raise _Stop()
            if last_segment and st.kind != "corrupt":
                findings.append(MetadataFinding("torn-tail", "warning", display,
                                                f"{rest} bytes at the end are not a whole batch ({st.message}); the "
                                                "broker's recovery truncates them", st.position))
            else:
                findings.append(MetadataFinding("corrupt", "error", display,
                                                f"{st.message}; {rest} bytes not read (Kafka's recovery truncates "
                                                "the log here)", st.position))
                raise _Stop()
    finally:
        del stream
        fr.close()


def snapshot_header_timestamp(snap: SnapshotFile) -> int | None:
    """``lastContainedLogTimestamp`` of a snapshot's header, or None when it does not read."""
    try:
        for e in read_entries(snap.path, [], snapshot=True):
            if e.control == SNAPSHOT_HEADER:
                return int(read_control_value(SNAPSHOT_HEADER, e.value).values["LastContainedLogTimestamp"])
            return None
    except (_Stop, MessageError, KeyError):
        return None
    return None


@dataclass
class ImageResult:
    """What :func:`build_image` rebuilt and from what."""

    image: MetadataImage
    log: MetadataLog
    snapshot: SnapshotFile | None
    records: int = 0  # metadata records applied (snapshot and log)
    log_end_offset: int | None = None  # the offset after the last record read from the log
    findings: list[MetadataFinding] = field(default_factory=list)
    open_transaction: int | None = None  # offset of a BeginTransactionRecord not ended where the replay stopped

    def source_json(self) -> dict[str, Any]:
        s = self.snapshot
        return {"dir": str(self.log.path), "quorum_state": self.log.quorum_state(),
                "snapshot": None if s is None else {"path": str(s.path), "end_offset": s.end_offset,
                                                     "epoch": s.epoch},
                "log_start_offset": self.log.log_start_offset, "log_end_offset": self.log_end_offset,
                "records_applied": self.records, "open_transaction": self.open_transaction}


class _Replayer:
    def __init__(self, result: ImageResult, at_offset: int | None, at_time: int | None,
                 kafka_version: str | None) -> None:
        self.r = result
        self.img = result.image
        self.at_offset = at_offset
        self.at_time = at_time
        self.kafka_version = kafka_version
        self.txn: list[tuple[FramedMessage, Entry]] | None = None
        self.txn_start: int | None = None

    def past_end(self, e: Entry) -> bool:
        return ((self.at_offset is not None and e.offset > self.at_offset)
                or (self.at_time is not None and e.timestamp > self.at_time))

    def decode(self, e: Entry) -> FramedMessage | None:
        try:
            m = read_metadata_record(e.value, self.kafka_version)
        except MetadataParseError as err:
            pos = "" if err.position is None else f" (byte {err.position} of its value)"
            self.r.findings.append(MetadataFinding(
                "undecodable-record", "error", e.path, f"record at offset {e.offset} does not decode{pos}: "
                f"{err.explain()}; skipped (a controller would stop here)", e.position, e.offset))
            return None
        for n in m.notes:
            self.r.findings.append(MetadataFinding(
                "tagged-fields", "warning", e.path, f"{m.name} at offset {e.offset}, byte {n.position} of its value: "
                f"{n.message}", e.position, e.offset))
        if m.newer_than_definition:
            self.r.findings.append(MetadataFinding(
                "newer-version", "warning", e.path, f"{m.name} at offset {e.offset} is version {m.version}, newer than "
                f"the definitions kafkatool has (up to {m.definition.spec.valid.hi}): fields added since are not read",
                e.position, e.offset))
        return m

    def apply(self, m: FramedMessage, e: Entry) -> None:
        before = len(self.img.problems)
        self.img.apply(m)
        for p in self.img.problems[before:]:
            self.r.findings.append(MetadataFinding("replay", "warning", e.path, f"offset {e.offset}: {p}",
                                                   e.position, e.offset))
        self.r.records += 1

    def entry(self, e: Entry, in_snapshot: bool) -> None:
        img = self.img
        if e.control is not None:
            name = CONTROL_NAMES.get(e.control)
            if name is not None:
                try:
                    img.apply_control(name, read_control_value(e.control, e.value, self.kafka_version).values,
                                      e.epoch)
                except MessageError as err:
                    self.r.findings.append(MetadataFinding(
                        "undecodable-control", "error", e.path, f"{name} at offset {e.offset} does not decode "
                        f"(byte {err.position} of its value): {err}", e.position, e.offset))
            return
        if not in_snapshot:
            img.offset, img.epoch, img.timestamp = e.offset, e.epoch, e.timestamp
        m = self.decode(e)
        if m is None:
            return
        if m.name == TXN_BEGIN:
            if self.txn is not None:
                self.r.findings.append(MetadataFinding("transaction", "warning", e.path, f"BeginTransactionRecord at "
                                                       f"offset {e.offset} inside the transaction begun at "
                                                       f"{self.txn_start}", e.position, e.offset))
            self.txn, self.txn_start = [], e.offset
            return
        if m.name in (TXN_END, TXN_ABORT):
            pending, self.txn, self.txn_start = self.txn, None, None
            if m.name == TXN_END:
                for pm, pe in pending or ():
                    self.apply(pm, pe)
            return
        if self.txn is not None:
            self.txn.append((m, e))
        else:
            self.apply(m, e)


def _load_snapshot(snap: SnapshotFile, result: ImageResult, rep: _Replayer) -> bool:
    """Replay one snapshot into ``result.image``; False (findings recorded) when it is not usable."""
    found: list[MetadataFinding] = []
    rep.r.findings, saved = found, rep.r.findings
    header = footer = False
    ok = True
    last = None
    try:
        for e in read_entries(snap.path, found, snapshot=True):
            if not header:
                if e.control != SNAPSHOT_HEADER:
                    found.append(MetadataFinding("snapshot-no-header", "error", str(snap.path),
                                                 "the first record is not a SnapshotHeader", e.position, e.offset))
                    ok = False
                    break
                header = True
                try:
                    rep.img.timestamp = int(read_control_value(SNAPSHOT_HEADER, e.value).values[
                        "LastContainedLogTimestamp"])
                except MessageError as err:
                    found.append(MetadataFinding("snapshot-header", "error", str(snap.path),
                                                 f"the SnapshotHeader does not decode: {err}", e.position, e.offset))
                continue
            if footer:
                found.append(MetadataFinding("snapshot-after-footer", "error", str(snap.path),
                                             "records after the SnapshotFooter", e.position, e.offset))
                ok = False
                break
            if e.control == SNAPSHOT_FOOTER:
                footer = True
                continue
            last = e
            rep.entry(e, in_snapshot=True)
    except _Stop:
        ok = False
    if ok and header and not footer:
        end = last.position if last is not None else None
        found.append(MetadataFinding("snapshot-no-footer", "error", str(snap.path),
                                     "the snapshot has no SnapshotFooter: it is incomplete (Kafka writes the footer "
                                     "last, then renames the .checkpoint.part file)", end))
        ok = False
    if ok and not header:
        found.append(MetadataFinding("snapshot-empty", "error", str(snap.path), "the snapshot has no records"))
        ok = False
    if any(f.kind == "undecodable-record" for f in found):
        ok = False
    rep.r.findings = saved
    saved.extend(found)
    if ok and rep.txn is not None:
        saved.append(MetadataFinding("transaction", "error", str(snap.path), "a metadata transaction is open at the "
                                     "end of the snapshot"))
        rep.txn = None
    return ok


def build_image(path: str | Path, *, at_offset: int | None = None, at_time: int | None = None,
                kafka_version: str | None = None) -> ImageResult:
    """The metadata image of ``path`` (a ``__cluster_metadata-0`` dir or the log dir holding it), latest or as
    of ``at_offset`` (every record at or below it) or ``at_time`` (every batch with a timestamp at or before it).

    Raises :class:`InputError` when there is no metadata there, :class:`UsageError` for both points given.
    Everything wrong inside the files is a finding of the result.
    """
    if at_offset is not None and at_time is not None:
        raise UsageError("give an offset or a time, not both", field="at_offset")
    if at_offset is not None and at_offset < 0:
        raise UsageError("must be at least 0", field="at_offset")
    log = MetadataLog.locate(path)
    result = ImageResult(MetadataImage(), log, None)
    candidates = list(log.snapshots)
    if at_offset is not None:
        candidates = [s for s in candidates if s.end_offset <= at_offset + 1]
    if at_time is not None:
        candidates = [s for s in candidates if (ts := snapshot_header_timestamp(s)) is not None and ts <= at_time]
    rep = _Replayer(result, at_offset, at_time, kafka_version)
    for snap in reversed(candidates):
        rep.img = result.image = MetadataImage()
        rep.txn = None
        records_before = result.records
        if _load_snapshot(snap, result, rep):
            result.snapshot = snap
            result.image.offset, result.image.epoch = snap.end_offset - 1, snap.epoch
            break
        result.records = records_before
        result.findings.append(MetadataFinding("snapshot-skipped", "warning", str(snap.path),
                                               "not used: falling back to the previous snapshot or the log"))
    else:
        rep.img = result.image = MetadataImage()
    start = result.snapshot.end_offset if result.snapshot is not None else 0
    _replay_log(log, result, rep, start)
    if rep.txn is not None:
        result.open_transaction = rep.txn_start
        result.findings.append(MetadataFinding(
            "open-transaction", "info", str(log.path), f"the metadata transaction begun at offset {rep.txn_start} "
            f"has not ended where the replay stops: its {len(rep.txn)} records are not in the image"))
    return result


def _replay_log(log: MetadataLog, result: ImageResult, rep: _Replayer, start: int) -> None:
    segments = log.segments
    if not segments:
        return
    first = segments[0][0]
    if first > start:
        result.findings.append(MetadataFinding(
            "log-gap", "error", str(segments[0][1]), f"the log starts at offset {first} but the image needs the "
            f"records from offset {start} (no usable snapshot ends at or after {first}): the records between are "
            "missing from the image"))
    expected = start
    for i, (_, seg) in enumerate(segments):
        try:
            for e in read_entries(seg, result.findings, last_segment=i == len(segments) - 1):
                if e.offset < start:  # in the snapshot already, but still where the log ends
                    result.log_end_offset = e.offset + 1
                    continue
                if rep.past_end(e):
                    return
                if e.offset != expected and not (expected == start and first > start):
                    result.findings.append(MetadataFinding(
                        "offset-gap", "error" if e.offset > expected else "warning", e.path,
                        f"offset {e.offset} follows {expected - 1}", e.position, e.offset))
                expected = e.offset + 1
                result.log_end_offset = expected
                rep.entry(e, in_snapshot=False)
        except _Stop:
            return
