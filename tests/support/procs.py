"""Processes of a test's child: whether a killed process group is really gone."""

from __future__ import annotations

import os


def group_running(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (a zombie is not: it has exited and holds nothing,
    waiting only to be reaped; orphans of a killed group wait for this machine's init, which reaps them about once
    a second)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False
