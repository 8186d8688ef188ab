"""Where a conversion writes: DST, checked before anything is written, and the markers that say how far a run got.

DST must be new or empty, outside every input (:func:`kafkatool.log.outputs.refuse_aliasing`: neither DST nor any
``DST/<partition>`` it would receive may be or lie in SRC, its partition dirs or its broker log dir), and not in a
log dir a live broker holds (exit 3, checked first). A run that writes:

1. records what it is doing in ``DST/.kafkatool-convert.json`` (SRC, the partitions, every option that shapes
   the output), before any partition;
2. writes each partition into ``DST/.kafkatool-tmp-<name>.tmp`` and renames it to ``DST/<name>`` whole;
3. writes ``DST/_SUCCESS`` (as Spark's and ``spark-scan``'s export) once every partition is in place.

So a DST without ``_SUCCESS`` but with the run file is an interrupted conversion: a second run over it says so
and stops, unless asked to resume, when it checks that the run file describes the same conversion, removes the
killed run's staging dirs, and converts only the partitions not yet in place. A broker ignores both files (it loads
only directories of a log dir).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatool.errors import UsageError
from kafkatool.log.lock import refuse_if_live
from kafkatool.log.outputs import Output, refuse_aliasing
from kafkatool.util import crash
from kafkatool.util.atomic import atomic_write_bytes, fsync_dir, is_temp_name, remove_temp

SUCCESS = "_SUCCESS"
RUN_FILE = ".kafkatool-convert.json"
RUN_FILE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Destination:
    """What DST holds before the run: ``done`` the partition dirs an interrupted earlier run completed (resumed),
    ``complete`` when that run finished (its ``_SUCCESS``: nothing to do)."""

    path: Path
    description: dict[str, Any]
    done: frozenset[str] = field(default_factory=frozenset)
    complete: bool = False


def describe(src: Path, names: list[str], options: dict[str, Any]) -> dict[str, Any]:
    """The run file's content: what makes two runs write the same DST."""
    return {"kafkatool_convert": RUN_FILE_VERSION, "src": str(src.resolve()), "partitions": names, **options}


def check_destination(src: Path, dst: Path, names: list[str], options: dict[str, Any], *,
                      resume: bool = False) -> Destination:
    """Refuse a DST a run may not write (live lock: exit 3; an input, not a directory, not empty: exit 2); with
    ``resume``, accept an interrupted run of the same conversion."""
    refuse_if_live(dst)
    refuse_aliasing([src], [Output("dst", dst), *(Output("dst", dst / n, given=dst) for n in names)])
    description = describe(src, names, options)
    if not dst.exists() and not dst.is_symlink():
        return Destination(dst, description)
    if not dst.is_dir():
        raise UsageError("DST exists and is not a directory", path=dst)
    entries = set(os.listdir(dst))
    if not entries or all(is_temp_name(e) for e in entries):
        # Nothing but our temp names: a run killed before its run file was in place (while writing it). It wrote
        # nothing else, so DST is as good as empty; begin() removes the leftovers.
        return Destination(dst, description)
    earlier = _read_run_file(dst) if RUN_FILE in entries else None
    if earlier is None:
        raise UsageError("DST must be a new or empty directory (a leftover .kafkatool-tmp-* dir is an "
                         "interrupted run: remove DST and run again)", path=dst)
    done = frozenset(n for n in names if n in entries and (dst / n).is_dir())
    complete = SUCCESS in entries
    if not resume:
        if complete:
            raise UsageError(f"DST holds a complete conversion (its {SUCCESS} marker): choose a new or empty "
                             "directory", path=dst)
        raise UsageError(f"DST holds an interrupted conversion ({len(done)} of {len(names)} partitions complete, "
                         f"no {SUCCESS} marker): resume it, or remove DST and run again", path=dst, field="resume")
    differs = [f"{k} {earlier.get(k)!r}, now {v!r}" for k, v in description.items() if earlier.get(k) != v]
    if differs:
        raise UsageError("DST holds a conversion begun otherwise (" + "; ".join(differs) + "): it cannot be resumed "
                         "with these; remove DST and run again", path=dst)
    return Destination(dst, description, done, complete)


def _read_run_file(dst: Path) -> dict[str, Any] | None:
    try:
        with open(dst / RUN_FILE, "rb") as f:
            data = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("kafkatool_convert") == RUN_FILE_VERSION else None


def begin(dest: Destination) -> None:
    """Before the first partition: remove an interrupted run's staging dirs and temp files (a run killed while it
    wrote ``_SUCCESS`` leaves its temp file), record this run (a resumed run's file is the same and stays)."""
    stale = [name for name in sorted(os.listdir(dest.path)) if is_temp_name(name)]
    for name in stale:
        remove_temp(dest.path / name)
    if stale:
        fsync_dir(dest.path)
    if not (dest.path / RUN_FILE).exists():
        atomic_write_bytes(dest.path / RUN_FILE, json.dumps(dest.description, sort_keys=True).encode() + b"\n")
        crash.point()


def finish(dest: Destination) -> None:
    """Every partition is in place: ``_SUCCESS``, fsynced with its directory."""
    atomic_write_bytes(dest.path / SUCCESS, b"")
    crash.point()


def undo_begin(dest: Destination) -> None:
    """A failed run of an empty DST: leave it empty again (the run file was this run's)."""
    try:
        os.unlink(dest.path / RUN_FILE)
        fsync_dir(dest.path)
    except FileNotFoundError:
        pass


__all__ = ["RUN_FILE", "SUCCESS", "Destination", "begin", "check_destination", "describe", "finish", "undo_begin"]
