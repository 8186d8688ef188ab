"""No output aliases an input: the one check every writing command makes before it writes anything.

An output that lands on or inside what a command reads rewrites its own input while reading it (a FetchResponse
written over the segment it is read from, rebuilt indexes over the very files compared with them, with no
``.bak``), and a directory written into a broker's log dir stops the broker loading it (``LogManager`` parses every
directory there as ``topic-partition``). So before anything is written, every output path is resolved (symlinks
followed, on every component that exists) and refused (a usage error naming the request field that set it, exit 2)
when it is, or lies inside:

* an input file (compared by device and inode too: a hard link or a bind mount is the same file), or the
  directory holding one (a segment's dir is its partition dir, with its indexes and snapshots);
* an input partition dir, and the log dir above it when that is a broker's (``.lock``, ``meta.properties`` or a
  log-dir checkpoint: a scratch dir holding a copied partition is not one);
* an input log dir, and every partition dir it holds (one may be a symlink to another disk).

A file output that resolves to an existing directory is refused too (the write would replace the symlink, or fail
half-way). Writing into inputs on purpose (an in-place rewrite with its ``.bak``) does not go through here.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kafkatool.errors import UsageError
from kafkatool.log.layout import (
    LOCK_FILE,
    LOG_DIR_CHECKPOINTS,
    META_PROPERTIES,
    is_log_dir,
    is_partition_dir,
    parse_partition_dir_name,
)

NOTHING_WRITTEN = "an output never goes into an input (nothing was written)"


@dataclass(frozen=True, slots=True)
class Output:
    """One path a run will write. ``field``: the request field that names it (the CLI shows its option); ``kind``
    "file" (written at ``path``) or "dir" (written at or below ``path``); ``given``: the path as the operator gave
    it, when ``path`` is one derived from it (``DIR/<partition>`` of a mirror tree)."""

    field: str
    path: Path
    kind: Literal["file", "dir"] = "dir"
    given: Path | None = None


@dataclass(frozen=True, slots=True)
class _Zone:
    what: str  # "the input file x", "the input partition dir y", ...
    is_file: bool


def _key(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):  # missing, a loop, a name the OS refuses: nothing there to alias
        return None


def broker_log_dir(d: Path) -> bool:
    """A directory a broker has used as a log dir: it holds a ``.lock``, ``meta.properties`` or a log-dir
    checkpoint file."""
    return any(os.path.lexists(d / n) for n in (LOCK_FILE, META_PROPERTIES, *LOG_DIR_CHECKPOINTS))


class _Inputs:
    def __init__(self) -> None:
        self.zones: dict[tuple[int, int], _Zone] = {}

    def add(self, path: Path, what: str, *, is_file: bool = False) -> None:
        st = _stat(path)
        if st is not None:
            self.zones.setdefault(_key(st), _Zone(what, is_file))

    def add_log_dirs_above(self, d: Path, of: Path) -> None:
        for parent in dict.fromkeys((d.parent, Path(os.path.realpath(d)).parent)):
            if broker_log_dir(parent):
                self.add(parent, f"the log dir {parent} of the input {of}")

    def add_input(self, raw: str | os.PathLike[str]) -> None:
        p = Path(raw)
        st = _stat(p)
        if st is None:
            return  # a missing input is refused by the reader, with its own words
        if not stat.S_ISDIR(st.st_mode):
            self.add(p, f"the input file {p}", is_file=True)
            for d in dict.fromkeys((p.parent, Path(os.path.realpath(p)).parent)):
                kind = "partition dir" if parse_partition_dir_name(d.name) else "dir"
                self.add(d, f"the {kind} {d} of the input file {p}")
                self.add_log_dirs_above(d, p)
        elif is_partition_dir(p) or (parse_partition_dir_name(p.name) and not is_log_dir(p)):
            self.add(p, f"the input partition dir {p}")
            self.add_log_dirs_above(p, p)
        else:
            self.add(p, f"the input log dir {p}")
            try:
                names = os.listdir(p)
            except OSError:
                names = []
            for name in names:
                if parse_partition_dir_name(name):
                    self.add(p / name, f"the partition dir {p / name} of the input log dir {p}")


def refuse_aliasing(inputs: Iterable[str | os.PathLike[str]], outputs: Iterable[Output]) -> None:
    """Refuse (:class:`UsageError` naming the output's field, exit 2) an output that is, or lies inside, an input
    (see the module's doc). Call it before anything is written; writes nothing."""
    zones = _Inputs()
    for raw in inputs:
        zones.add_input(raw)
    for out in outputs:
        _check(out, zones)


def _check(out: Output, zones: _Inputs) -> None:
    shown = str(out.path) if out.given is None else f"{out.path} (in {out.given})"
    resolved = Path(os.path.realpath(out.path))
    via = "" if resolved == Path(os.path.abspath(out.path)) else f" (through a symlink: {resolved})"
    st = _stat(resolved)
    if out.kind == "file" and st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{shown} is a directory{via}: name a file (nothing was written)", field=out.field)
    for a in (resolved, *resolved.parents):
        ast = st if a == resolved else _stat(a)
        if ast is None:
            continue
        zone = zones.zones.get(_key(ast))
        if zone is None:
            continue
        where = "is" if a == resolved else "lies inside"
        if zone.is_file and a != resolved:
            continue  # a path below a file does not exist (and cannot be written)
        raise UsageError(f"{shown}{via} {where} {zone.what}: {NOTHING_WRITTEN}", field=out.field)


__all__ = ["Output", "broker_log_dir", "refuse_aliasing"]
