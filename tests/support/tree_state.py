"""The state of a directory tree, to prove a command changed nothing (or only what it should)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

State = dict[str, tuple[object, ...]]


def snapshot(root: Path, *, inodes: bool = True) -> State:
    """Every directory and file under ``root`` (dot files too): files by SHA-256, size, mtime, mode and inode
    (a file deleted and written anew is a change), directories by their presence."""
    out: State = {}
    for dirpath, dirs, files in os.walk(root):
        d = Path(dirpath)
        for name in dirs:
            out[str((d / name).relative_to(root)) + "/"] = ("dir",)
        for name in files:
            p = d / name
            st = p.stat()
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size,
                                             st.st_mtime_ns, st.st_mode, st.st_ino if inodes else 0)
    return out


def changes(before: State, after: State) -> list[str]:
    """What differs, one line per path (empty: nothing changed)."""
    out = []
    for k in sorted(set(before) | set(after)):
        if k not in after:
            out.append(f"removed {k}")
        elif k not in before:
            out.append(f"added {k}")
        elif before[k] != after[k]:
            out.append(f"changed {k}: {before[k]} -> {after[k]}")
    return out
