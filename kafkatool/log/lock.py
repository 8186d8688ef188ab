"""The broker's log-dir ``.lock`` (spec §4.1): the one check every command makes before it touches a path.

Kafka locks ``<log dir>/.lock`` with ``FileChannel.tryLock()``: on Linux a POSIX ``fcntl`` record lock.
So the probe uses ``fcntl.lockf`` (an ``flock()`` would "succeed" next to a running broker). A
leftover ``.lock`` alone does not mean a broker runs (clean shutdown deletes it; a crash leaves it).

Any path a command reads or writes -- a segment file, a partition dir, a log dir, or a destination that
does not exist yet anywhere below a log dir (``logs/nested/out``, ``logs/orders-2/out``) -- is checked by
walking up from it and probing every ``.lock`` on the way (:func:`live_lock`). Writes into a live log
dir are always refused (:func:`refuse_if_live`, exit 3); reads are refused too unless the operator asks
for a live read (``live``, :func:`check_read`): kafkatool is an offline tool, and a segment the broker is appending to
reads as torn. A command that writes into a log dir holds its ``.lock`` the whole time
(:func:`hold_log_dir`, :func:`hold_for_write`), so a broker starting meanwhile fails to lock it.

An existing ``.lock`` is never deleted or recreated (its inode stays); one we had to create goes again when the
run ends, but only if it is still the very file we created (device, inode and ctime: a ``.lock`` recreated
meanwhile is not ours). A ``.lock`` kafkatool creates holds :data:`LOCK_MARK` (a broker's is empty, and Kafka's
``FileLock`` never reads it): a run SIGKILLed while holding one leaves it behind, and the next run that holds it
knows it for ours and removes it when it ends. The log dir is held by a directory descriptor, so a symlink to it
replaced mid-run (an output written over the link) cannot make the ``.lock`` be looked for elsewhere.

POSIX record locks belong to the process, and closing *any* descriptor of the file drops them all: so a
probe never opens a ``.lock`` this process holds (:data:`_HELD`, keyed by device and inode).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kafkatool.errors import BrokerLockHeldError, InputError
from kafkatool.log.layout import LOCK_FILE, LOG_DIR_CHECKPOINTS, META_PROPERTIES
from kafkatool.util.printable import shown
from kafkatool.util.realpath import Resolver

WRITE_REFUSAL = "a live broker holds this log dir's .lock: stop the broker first (nothing was changed)"
READ_REFUSAL = ("a live broker holds this log dir's .lock: kafkatool reads stopped brokers' log dirs (a segment "
                "being appended reads as torn); stop the broker, or read it live anyway")

LOCK_MARK = b"kafkatool\n"  # the content of a .lock kafkatool created (a broker's own .lock is empty)
_HELD: dict[tuple[int, int], int] = {}  # (st_dev, st_ino) of each .lock this process holds -> nesting depth


def _dirs_up(path: str | os.PathLike[str], resolve: Resolver | None = None) -> Iterator[str]:
    """``path`` (a directory) or its directory, then every ancestor: along the path as given and along its
    resolved form (a partition dir may be a symlink into another disk's log dir). ``resolve``: the resolver of a
    probe of many paths (each directory resolved once)."""
    seen: set[str] = set()
    given = os.path.abspath(path)
    for start in (given, (resolve or os.path.realpath)(given)):
        d = start if os.path.isdir(start) else os.path.dirname(start)
        while d not in seen:
            seen.add(d)
            yield d
            d = os.path.dirname(d)  # "/" is its own parent: seen, the loop ends


# What a probe of many paths has seen (check_read): each directory's ``.lock`` (or None), each lock's verdict, and
# the resolver of their paths.
_Seen = tuple[dict[str, "tuple[Path, os.stat_result] | None"], dict[tuple[int, int], bool], Resolver]


def _lock_files(path: str | os.PathLike[str], seen: _Seen) -> Iterator[tuple[Path, os.stat_result]]:
    """The regular ``.lock`` files at or above ``path``, each once; ``seen`` keeps each directory's stat for the
    next path (a dump of a log dir checks thousands of files under the same few directories)."""
    locks = seen[0]
    inodes: set[tuple[int, int]] = set()
    for d in _dirs_up(path, seen[2]):
        if d not in locks:
            f = os.path.join(d, LOCK_FILE)
            try:
                st = os.stat(f)
            except OSError:
                locks[d] = None
                continue
            locks[d] = (Path(f), st) if stat.S_ISREG(st.st_mode) else None
        found = locks[d]
        if found is None:
            continue
        key = (found[1].st_dev, found[1].st_ino)
        if key not in inodes:
            inodes.add(key)
            yield found


def _held_elsewhere(f: Path, st: os.stat_result) -> bool:
    if (st.st_dev, st.st_ino) in _HELD:
        return False  # ours: probing it would release it
    try:
        fd = os.open(f, os.O_RDWR)
        kind = fcntl.LOCK_EX
    except PermissionError:
        try:
            fd = os.open(f, os.O_RDONLY)  # lockf needs write access for LOCK_EX; a shared probe conflicts too
        except OSError as e:
            raise InputError(f"cannot open it to see whether a live broker holds it ({e.strerror}): run as the "
                             "broker's user", path=f) from None
        kind = fcntl.LOCK_SH
    except OSError:
        return False  # gone meanwhile, or not a file
    try:
        return not _try(fd, kind)
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


def live_lock(path: str | os.PathLike[str], seen: _Seen | None = None) -> Path | None:
    """The ``.lock`` at or above ``path`` that another process (a live broker) holds, or None. Creates nothing;
    ``path`` need not exist (a destination is checked before it is made). ``seen``: what a probe of other paths
    just now found, reused (each directory stat'ed and each lock probed once)."""
    seen = seen if seen is not None else ({}, {}, Resolver())
    verdicts = seen[1]
    for f, st in _lock_files(path, seen):
        key = (st.st_dev, st.st_ino)
        held = verdicts.get(key)
        if held is None:
            held = verdicts[key] = _held_elsewhere(f, st)
        if held:
            return f
    return None


def broker_holds_lock(log_dir: str | os.PathLike[str]) -> bool:
    """True when another process (a live broker) holds the ``.lock`` of ``log_dir`` or of a dir above it."""
    return live_lock(log_dir) is not None


def refuse_if_live(path: str | os.PathLike[str]) -> None:
    """Refuse (exit 3) to write at ``path`` while a live broker holds a ``.lock`` at or above it."""
    lock = live_lock(path)
    if lock is not None:
        raise BrokerLockHeldError(WRITE_REFUSAL, path=lock)


def check_read(paths: Iterable[str | os.PathLike[str]], *, live: bool) -> list[Path]:
    """Reading ``paths``: refused (exit 3) while a live broker holds a ``.lock`` at or above one of them, unless
    ``live``; returns the held ``.lock`` files (for the caller's notice that active segments may be mid-write)."""
    held: list[Path] = []
    seen: _Seen = ({}, {}, Resolver())
    for p in paths:
        lock = live_lock(p, seen)
        if lock is not None and lock not in held:
            if not live:
                raise BrokerLockHeldError(READ_REFUSAL, path=lock, field="live")
            held.append(lock)
    return held


def live_notice(lock: Path) -> str:
    """The warning of a live read: what a torn or growing tail there means."""
    return (f"warning: reading live: a live broker holds {shown(lock)}: reading anyway; its active segments may be "
            "mid-write (a torn or growing tail there is not damage)")


def log_dir_above(path: str | os.PathLike[str]) -> Path | None:
    """The broker log dir a write at ``path`` lands in: the nearest dir at or above it with a ``.lock``, a
    ``meta.properties`` or a log-dir checkpoint file (what a log dir a broker has used always holds)."""
    for d in map(Path, _dirs_up(path)):
        if (d / LOCK_FILE).is_file() or (d / META_PROPERTIES).is_file() or any(
                (d / c).is_file() for c in LOG_DIR_CHECKPOINTS):
            return d
    return None


@contextmanager
def hold_log_dir(log_dir: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the log dir's ``.lock`` while writing into it, as a broker would.

    Refuses (exit 3) while a broker holds it. An existing ``.lock`` is never deleted or recreated, unless a
    killed kafkatool run created it (:data:`LOCK_MARK`); one we had to create is removed again afterwards (if it
    is still the same file). Holding a lock this process already holds is a no-op.
    """
    d = Path(log_dir)
    if not d.is_dir():
        raise InputError("log dir does not exist", path=d)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            st = os.stat(LOCK_FILE, dir_fd=dfd)
        except FileNotFoundError:
            pass
        else:
            key = (st.st_dev, st.st_ino)
            if key in _HELD:  # already ours: opening (and closing) it again would drop the lock
                _HELD[key] += 1
                try:
                    yield
                finally:
                    _HELD[key] -= 1
                return
        with _locked(d, dfd):
            yield
    finally:
        os.close(dfd)


@contextmanager
def _locked(d: Path, dfd: int) -> Iterator[None]:
    ours = False
    try:
        fd = os.open(LOCK_FILE, os.O_RDWR, dir_fd=dfd)
    except FileNotFoundError:
        made = _create_marked(dfd)
        ours = made is not None
        fd = made if made is not None else os.open(LOCK_FILE, os.O_RDWR, dir_fd=dfd)
    try:
        if not _lock(fd):
            raise BrokerLockHeldError(WRITE_REFUSAL, path=d / LOCK_FILE)
        if not ours:
            ours = _left_by_a_killed_run(fd)
        st = os.fstat(fd)  # after the mark and the link, which moved the ctime
        key = (st.st_dev, st.st_ino)
        _HELD[key] = 1
        try:
            yield
        finally:
            del _HELD[key]
            if ours:
                _unlink_if_same(dfd, st)
            fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _create_marked(dfd: int) -> int | None:
    """Create the ``.lock`` already holding :data:`LOCK_MARK`, or None when another process made one meanwhile.

    The mark is written into an unnamed file (``O_TMPFILE``) that is then linked as ``.lock``: a kill at any moment
    leaves either no ``.lock`` or a marked one that the next run removes, never an empty one nobody would claim.
    Where ``O_TMPFILE`` or ``/proc`` is missing the file is created, then marked (a kill in between leaves it empty).
    """
    tmpfile = getattr(os, "O_TMPFILE", 0)
    if tmpfile:
        try:
            fd = os.open(".", os.O_RDWR | tmpfile, 0o644, dir_fd=dfd)
        except OSError:
            pass  # the filesystem cannot make unnamed files
        else:
            try:
                os.write(fd, LOCK_MARK)
                os.link(f"/proc/self/fd/{fd}", LOCK_FILE, dst_dir_fd=dfd)
                return fd
            except FileExistsError:
                os.close(fd)
                return None
            except OSError:
                os.close(fd)  # no /proc to link through: the two-step way below
    try:
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
    except FileExistsError:
        return None
    os.write(fd, LOCK_MARK)
    return fd


def _left_by_a_killed_run(fd: int) -> bool:
    """A ``.lock`` we hold that holds our mark: a kafkatool run created it and was killed before removing it."""
    try:
        return os.fstat(fd).st_size == len(LOCK_MARK) and os.pread(fd, len(LOCK_MARK), 0) == LOCK_MARK
    except OSError:
        return False


def _unlink_if_same(dfd: int, st: os.stat_result) -> None:
    """Remove the ``.lock`` only while it is the file we created (or adopted): same device, inode and ctime."""
    try:
        now = os.stat(LOCK_FILE, dir_fd=dfd, follow_symlinks=False)
        if (now.st_dev, now.st_ino, now.st_ctime_ns) == (st.st_dev, st.st_ino, st.st_ctime_ns):
            os.unlink(LOCK_FILE, dir_fd=dfd)
    except OSError:
        pass


@contextmanager
def hold_for_write(path: str | os.PathLike[str]) -> Iterator[Path | None]:
    """Before writing at ``path`` (which may not exist yet): refuse (exit 3) if a live broker holds a ``.lock``
    at or above it, then hold the lock of the log dir it lands in (if any) until the block ends. Yields that
    log dir."""
    refuse_if_live(path)
    d = log_dir_above(path)
    if d is None:
        yield None
        return
    with hold_log_dir(d):
        yield d


def _lock(fd: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True
