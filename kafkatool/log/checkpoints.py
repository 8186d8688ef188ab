"""Text checkpoint and metadata files of partition dirs and log dirs. Spec §4.1.

* offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``): ``0``, ``<count>``, then
  ``<topic> <partition> <offset>`` lines (``CheckpointFile`` with ``OffsetCheckpointFile`` formatter);
* ``leader-epoch-checkpoint``: ``0``, ``<count>``, then ``<epoch> <startOffset>`` lines;
* ``partition.metadata``: ``version: 0`` and ``topic_id: <22-char base64url Uuid>``;
* ``meta.properties``: Java properties.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kafkatool.errors import CorruptDataError, InputError
from kafkatool.log.layout import TopicPartition
from kafkatool.util.regular import open_regular

CHECKPOINT_VERSION = 0
MAX_TEXT_READ = 64 * 1024 * 1024


def _read_text(path: Path) -> str:
    try:
        with open_regular(path) as f:
            if f.size > MAX_TEXT_READ:
                raise InputError("checkpoint file is implausibly large", path=path)
            data = f.read_all()
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptDataError(f"checkpoint file is not UTF-8 text ({e.reason})", path=path,
                               position=e.start) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=path) from None


def _lines(text: str) -> list[tuple[str, int]]:
    """The lines of ``text`` (``str.splitlines``), each with the byte position where it starts in the file."""
    out = []
    at = 0
    for raw in text.splitlines(keepends=True):
        out.append((raw.splitlines()[0] if raw.splitlines() else "", at))
        at += len(raw.encode("utf-8"))
    return out


def _read_checkpoint_lines(path: Path, fields: int) -> list[tuple[list[str], int]]:
    """The entry lines, split into ``fields`` fields, each with the byte position of its line."""
    numbered = _lines(_read_text(path))
    lines = [line for line, _ in numbered]
    # CheckpointFile.CheckpointReadBuffer.read (3.9): an empty file, or one that ends after the version
    # line, is an empty checkpoint. The broker creates checkpoint files empty (``CheckpointFile``'s
    # constructor), e.g. cleaner-offset-checkpoint stays 0 bytes until the cleaner first checkpoints.
    if not lines:
        return []
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise CorruptDataError(f"Malformed line in checkpoint file: {lines[0]!r}", path=path, position=0) from None
    if version != CHECKPOINT_VERSION:
        raise CorruptDataError(f"Unrecognized version of the checkpoint file: {version}", path=path, position=0)
    if len(lines) < 2:
        return []
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CorruptDataError(f"Malformed line in checkpoint file: {lines[1]!r}", path=path,
                               position=numbered[1][1]) from None
    entries = []
    for line, at in numbered[2:]:
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != fields:
            raise CorruptDataError(f"Malformed line in checkpoint file: {line!r}", path=path, position=at)
        entries.append((parts, at))
    if len(entries) != count:
        raise CorruptDataError(f"Expected {count} entries in checkpoint file, but found only {len(entries)}",
                               path=path, position=numbered[1][1])
    return entries


def _write_checkpoint(lines: list[str]) -> bytes:
    return (f"{CHECKPOINT_VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)).encode()


def read_offset_checkpoint(path: str | os.PathLike[str]) -> dict[TopicPartition, int]:
    out = {}
    for (topic, part, off), at in _read_checkpoint_lines(Path(path), 3):
        try:
            out[TopicPartition(topic, int(part))] = int(off)
        except ValueError:
            raise CorruptDataError(f"Malformed line in checkpoint file: {topic} {part} {off}", path=path,
                                   position=at) from None
    return out


def encode_offset_checkpoint(offsets: dict[TopicPartition, int]) -> bytes:
    return _write_checkpoint([f"{tp.topic} {tp.partition} {o}" for tp, o in sorted(offsets.items())])


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


def read_leader_epoch_checkpoint(path: str | os.PathLike[str]) -> list[EpochEntry]:
    out = []
    for (epoch, start), at in _read_checkpoint_lines(Path(path), 2):
        try:
            out.append(EpochEntry(int(epoch), int(start)))
        except ValueError:
            raise CorruptDataError(f"Malformed line in checkpoint file: {epoch} {start}", path=path,
                                   position=at) from None
    return out


def encode_leader_epoch_checkpoint(entries: list[EpochEntry]) -> bytes:
    return _write_checkpoint([f"{e.epoch} {e.start_offset}" for e in entries])


_TOPIC_ID_RE = re.compile(r"^[A-Za-z0-9_-]{22}$")


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    version: int
    topic_id: str  # base64url, 22 chars, as Kafka's Uuid.toString


def read_partition_metadata(path: str | os.PathLike[str]) -> PartitionMetadata:
    p = Path(path)
    fields = {}
    where = {}  # field -> byte position of its line
    for line, at in _lines(_read_text(p)):
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
            where[k.strip()] = at
    try:
        version = int(fields["version"])
        topic_id = fields["topic_id"]
    except (KeyError, ValueError):
        raise CorruptDataError("partition.metadata lacks 'version: 0' and 'topic_id: <id>' lines", path=p,
                               position=where.get("version", 0)) from None
    if version != 0:
        raise CorruptDataError(f"Unrecognized version of partition.metadata: {version}", path=p,
                               position=where["version"])
    if not _TOPIC_ID_RE.match(topic_id):
        raise CorruptDataError(f"Invalid topic id {topic_id!r} in partition.metadata", path=p,
                               position=where["topic_id"])
    return PartitionMetadata(version, topic_id)


def encode_partition_metadata(topic_id: str) -> bytes:
    return f"version: 0\ntopic_id: {topic_id}\n".encode()


def topic_id_from_bytes(raw16: bytes) -> str:
    """Kafka ``Uuid.toString``: base64url of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(raw16).decode().rstrip("=")


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """``meta.properties`` and friends: ``key=value`` lines, ``#`` comments."""
    out = {}
    for line in _read_text(Path(path)).splitlines():
        s = line.strip()
        if not s or s.startswith(("#", "!")):
            continue
        k, sep, v = s.partition("=")
        if not sep:
            k, sep, v = s.partition(":")
        out[k.strip()] = v.strip()
    return out


def encode_properties(props: dict[str, str], comment: str | None = None) -> bytes:
    head = f"#{comment}\n" if comment else ""
    return (head + "".join(f"{k}={v}\n" for k, v in props.items())).encode()
