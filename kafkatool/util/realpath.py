"""``os.path.realpath`` of many paths under the same few directories, each directory resolved once.

Resolving a path costs an ``lstat`` per component. A command given the partitions of a log dir one by one (or
walking thousands of segments) resolves the same ancestors again and again: :class:`Resolver` resolves a path as its
directory's resolved form (cached, and resolved the same way) plus its name, when the name is no symlink (one
``lstat``); otherwise, or when the name cannot be examined, exactly as ``os.path.realpath`` does.
"""

from __future__ import annotations

import os
import stat


class Resolver:
    """Call it with a path: ``os.path.realpath`` of it (absolute, symlinks resolved, ``strict=False``)."""

    __slots__ = ("_dirs",)

    def __init__(self) -> None:
        self._dirs: dict[str, str] = {}

    def __call__(self, path: str | os.PathLike[str]) -> str:
        text = os.fspath(path)
        full = os.path.abspath(text)
        # ".." after a symlink is its target's parent: abspath would drop both. "//x": abspath keeps POSIX's
        # implementation-defined double slash, realpath drops it.
        if ".." in text.split(os.sep) or full.startswith("//"):
            return os.path.realpath(text)
        return self._resolve(full)

    def _resolve(self, full: str) -> str:
        parent, name = os.path.split(full)
        if not name:
            return full  # "/"
        rp = self._dirs.get(parent)
        if rp is None:
            rp = self._dirs[parent] = self._resolve(parent)  # its own directory's form, cached in turn
        candidate = os.path.join(rp, name)
        try:
            if not stat.S_ISLNK(os.lstat(candidate).st_mode):
                return candidate
        except OSError:
            pass  # missing (a destination not made yet), or unreadable: as realpath resolves it
        return os.path.realpath(full)
