"""Crash points, for the tests that kill writing commands with SIGKILL at every step.

``KAFKATOOL_CRASH_AFTER=N`` makes the process SIGKILL itself at the Nth :func:`point` it passes: after a
file is written, fsynced or renamed into place. ``KAFKATOOL_CRASH_SIGNAL=STOP`` stops it there instead (a
test looks at the files and the locks mid-run, then sends SIGCONT). Without the variable a point costs one
comparison. Only the process that read the variable first counts (worker processes inherit
``KAFKATOOL_CRASH_PID`` and never fire: a killed pool worker would hang its pool, not test a crash of the
command). ``KAFKATOOL_CRASH_COUNT=FILE`` writes the number of points the process passed to FILE when it exits
(a test learns where a run's steps are, then kills it at each).
"""

from __future__ import annotations

import atexit
import os
import signal

CRASH_ENV = "KAFKATOOL_CRASH_AFTER"
SIGNAL_ENV = "KAFKATOOL_CRASH_SIGNAL"
COUNT_ENV = "KAFKATOOL_CRASH_COUNT"
_PID_ENV = "KAFKATOOL_CRASH_PID"


def _owner() -> bool:
    return os.environ.setdefault(_PID_ENV, str(os.getpid())) == str(os.getpid())


def _setup() -> int | None:
    raw = os.environ.get(CRASH_ENV, "").strip()
    if not raw.isdigit():
        return None
    return int(raw) if _owner() else None


def _setup_count() -> str | None:
    path = os.environ.get(COUNT_ENV, "").strip()
    if not path or not _owner():
        return None
    atexit.register(lambda: _write_count(path))
    return path


def _write_count(path: str) -> None:
    if os.getpid() != _pid:
        return  # a forked worker exiting
    with open(path, "w") as f:
        f.write(f"{_count}\n")


_after = _setup()
_count_to = _setup_count()
_signal = signal.SIGSTOP if os.environ.get(SIGNAL_ENV, "").strip().upper() == "STOP" else signal.SIGKILL
_pid = os.getpid()
_count = 0


def point() -> None:
    """One durable step done; SIGKILL here if it is the Nth (tests only)."""
    global _count
    if (_after is None and _count_to is None) or os.getpid() != _pid:
        return
    _count += 1
    if _after is not None and (_count == _after or (_count > _after and _signal == signal.SIGKILL)):
        os.kill(os.getpid(), _signal)


def passed() -> int:
    """The points passed so far in this process."""
    return _count
