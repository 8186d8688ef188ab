"""Whether a process is alive, as a probe by pid can tell (no handle on it: another run's pid, a broker's)."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` runs: it exists (a process of another user counts) and is not a zombie waiting to be
    reaped. A /proc that cannot be read counts as alive (never take a live process for gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"
