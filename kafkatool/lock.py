"""The broker's log-dir ``.lock`` (spec §4.1).

Kafka locks ``<log dir>/.lock`` with ``FileChannel.tryLock()``: on Linux a POSIX ``fcntl`` record lock.
So the probe uses ``fcntl.lockf`` (an ``flock()`` would "succeed" next to a running broker). A
leftover ``.lock`` alone does not mean a broker runs (clean shutdown deletes it; a crash leaves it).
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafkatool.errors import BrokerLockHeldError, InputError
from kafkatool.logdir import LOCK_FILE


def broker_holds_lock(log_dir: str | os.PathLike[str]) -> bool:
    """True when another process (a live broker) holds ``log_dir/.lock``. Never creates the file."""
    path = Path(log_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)  # lockf needs write access for LOCK_EX; try a shared probe
        try:
            return not _try(fd, fcntl.LOCK_SH)
        finally:
            os.close(fd)
    try:
        return not _try(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)  # closing the fd releases our probe lock at once


def _try(fd: int, kind: int) -> bool:
    try:
        fcntl.lockf(fd, kind | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    fcntl.lockf(fd, fcntl.LOCK_UN)
    return True


def refuse_if_live(log_dir: str | os.PathLike[str]) -> None:
    if broker_holds_lock(log_dir):
        raise BrokerLockHeldError(
            "a live broker holds this log dir's .lock: stop the broker first (nothing was changed)",
            path=Path(log_dir) / LOCK_FILE)


@contextmanager
def hold_log_dir(log_dir: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the log dir's ``.lock`` while writing into it, as a broker would.

    Refuses (exit 3) while a broker holds it. An existing ``.lock`` is never deleted or recreated; one
    we had to create is removed again afterwards.
    """
    d = Path(log_dir)
    if not d.is_dir():
        raise InputError("log dir does not exist", path=d)
    path = d / LOCK_FILE
    created = False
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        created = True
    try:
        if not _lock(fd):
            raise BrokerLockHeldError(
                "a live broker holds this log dir's .lock: stop the broker first (nothing was changed)",
                path=path)
        try:
            yield
        finally:
            if created:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _lock(fd: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True
