"""The canary work dir W and its manifest.

Layout::

    W/manifest.json           what ``run`` did: tool version, options, log dir, and per partition every input
                              file (size, SHA-256, mtime) and every output file
    W/originals/<partition>/  byte copies of the partition dir's files as ``run`` read them (what verify
                              compares with and rollback restores)
    W/canary/<partition>/     the converted partition (the convert engine's output)
    W/verify.json             the last ``verify`` verdict, with the canary checksums it saw
    W/journal.json            the apply/rollback in progress or last done

Every JSON file is written atomically (temp, fsync, rename, fsync dir).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.errors import InputError
from kafkatool.util.atomic import atomic_write_bytes, is_temp_name
from kafkatool.util.regular import open_regular, read_regular
from kafkatool.util.sparse import copy_sparse, hash_sparse

MANIFEST = "manifest.json"
VERIFIED = "verify.json"
JOURNAL = "journal.json"
ORIGINALS = "originals"
CANARY = "canary"
MANIFEST_VERSION = 1


@dataclass(frozen=True, slots=True)
class FileEntry:
    name: str
    size: int
    sha256: str
    mtime_ns: int


@dataclass(slots=True)
class PartitionEntry:
    name: str  # partition dir name, e.g. "orders-3"
    topic: str
    partition: int
    inputs: list[FileEntry]
    outputs: list[FileEntry] = field(default_factory=list)
    segments: list[int] = field(default_factory=list)  # base offsets (the same in inputs and outputs)
    log_end_offset: int = -1
    convert: dict[str, Any] = field(default_factory=dict)  # the convert engine's per-partition statistics

    def input(self, name: str) -> FileEntry | None:
        return next((f for f in self.inputs if f.name == name), None)

    def output(self, name: str) -> FileEntry | None:
        return next((f for f in self.outputs if f.name == name), None)


@dataclass(slots=True)
class Manifest:
    tool: str
    tool_version: str
    created: str
    log_dir: str
    options: dict[str, Any]
    partitions: list[PartitionEntry]
    version: int = MANIFEST_VERSION

    def partition(self, name: str) -> PartitionEntry:
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(name)

    def to_json(self) -> bytes:
        return (json.dumps(asdict(self), indent=1, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        parts = []
        for p in data["partitions"]:
            parts.append(PartitionEntry(
                p["name"], p["topic"], int(p["partition"]), [FileEntry(**f) for f in p["inputs"]],
                [FileEntry(**f) for f in p["outputs"]], [int(s) for s in p["segments"]], int(p["log_end_offset"]),
                dict(p.get("convert", {}))))
        return cls(data["tool"], data["tool_version"], data["created"], data["log_dir"], dict(data["options"]),
                   parts, int(data.get("version", MANIFEST_VERSION)))


class Workdir:
    """Paths inside W."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def originals(self, name: str) -> Path:
        return self.path / ORIGINALS / name

    def canary(self, name: str) -> Path:
        return self.path / CANARY / name

    @property
    def verified_path(self) -> Path:
        return self.path / VERIFIED

    @property
    def journal_path(self) -> Path:
        return self.path / JOURNAL

    def read_manifest(self) -> Manifest:
        return Manifest.from_json(read_json(self.manifest_path, "canary manifest (is this a canary work dir "
                                                                 "written by `kafkatool canary run`?)"))

    def write_manifest(self, m: Manifest) -> None:
        atomic_write_bytes(self.manifest_path, m.to_json())

    def read_optional(self, path: Path) -> dict[str, Any] | None:
        if not path.exists():
            return None
        return read_json(path, path.name)

    def write_json(self, path: Path, obj: dict[str, Any]) -> None:
        atomic_write_bytes(path, (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())


def read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(read_regular(path, limit=64 << 20))
    except FileNotFoundError:
        raise InputError(f"no {what}", path=path) from None
    except (OSError, ValueError) as e:
        raise InputError(f"unreadable {what}: {getattr(e, 'strerror', None) or e}", path=path) from None
    if not isinstance(data, dict):
        raise InputError(f"unreadable {what}: not a JSON object", path=path)
    try:
        if path.name == MANIFEST:
            Manifest.from_json(data)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"unreadable {what}: missing or bad field {e}", path=path) from None
    return data


# The SHA-256 of each file this process wrote with copy_file (and fsynced), by what any later change to it would
# change: (device, inode, size, mtime, ctime). copy_file sets the copy's mtime to the source's, which lies in the
# past, so a later write moves mtime to now, and a rename or utime moves ctime. A canary run verifies the copies it
# has just written; reading them again would read this process's own page cache (for a preallocated 8 GiB index,
# hashing 8 GiB of zeros a second time), and could only find a change these would show (on a kernel with coarse
# timestamps, all but a write within the same tick that also put the old mtime back).
_WRITTEN: dict[tuple[int, int, int, int, int], str] = {}
_WRITTEN_MAX = 1 << 16


def _key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def hash_file(path: Path) -> tuple[int, str]:
    """(size, SHA-256) of a regular file; its holes (a preallocated index) are hashed without being read."""
    with open_regular(path) as r, open(r.fd, "rb", closefd=False) as f:
        known = _WRITTEN.get(_key(os.fstat(r.fd)))
        if known is not None:
            return r.size, known
        return hash_sparse(f, r.size)


def file_entry(path: Path) -> FileEntry:
    size, digest = hash_file(path)
    return FileEntry(path.name, size, digest, path.stat().st_mtime_ns)


def matches(path: Path, entry: FileEntry) -> bool:
    """Same size and SHA-256 (size first: a cheap stat decides most mismatches)."""
    try:
        if path.stat().st_size != entry.size:
            return False
        return hash_file(path)[1] == entry.sha256
    except FileNotFoundError:
        return False


def copy_file(src: Path, dst: Path, *, mtime_ns: int | None = None, exclusive: bool = True) -> FileEntry:
    """Copy with SHA-256 of the bytes copied, fsync, and the source's mtime (or ``mtime_ns``) kept. The source is a
    regular file (:func:`kafkatool.util.regular.open_regular`), read to its size at open; holes stay holes
    (:func:`kafkatool.util.sparse.copy_sparse`): a preallocated sparse index costs its data, not its size."""
    with open_regular(src) as r, open(r.fd, "rb", closefd=False) as fi, \
            open(dst, "xb" if exclusive else "wb") as fo:
        st = r.stat
        size, digest = copy_sparse(fi, fo, r.size)
        fo.flush()
        os.fsync(fo.fileno())
    m = st.st_mtime_ns if mtime_ns is None else mtime_ns
    os.utime(dst, ns=(m, m))
    written = os.stat(dst)
    if written.st_size == size:
        if len(_WRITTEN) >= _WRITTEN_MAX:  # bounded: a run over more files hashes the oldest copies again
            _WRITTEN.clear()
        _WRITTEN[_key(written)] = digest
    return FileEntry(src.name, size, digest, st.st_mtime_ns)


def dir_entries(d: Path) -> list[FileEntry]:
    """Every regular file of a partition dir (sorted by name), skipping our own temp files."""
    return [file_entry(p) for p in sorted(d.iterdir()) if p.is_file() and not is_temp_name(p.name)]


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
