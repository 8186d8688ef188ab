"""Whose ``.lock`` it is (kafkatool.log.lock.hold_log_dir, no JVM): a run removes the ``.lock`` it created and only
that very file (device, inode, ctime), keeps one that was there, and removes one a killed kafkatool run left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.log.lock import LOCK_MARK, hold_log_dir
from tests.support.paths import ROOT


def test_a_created_lock_goes_an_existing_one_stays(tmp_path: Path) -> None:
    with hold_log_dir(tmp_path):
        assert (tmp_path / ".lock").read_bytes() == LOCK_MARK
    assert not (tmp_path / ".lock").exists()
    (tmp_path / ".lock").write_bytes(b"")  # a crashed broker's: not ours
    ino = (tmp_path / ".lock").stat().st_ino
    with hold_log_dir(tmp_path):
        pass
    assert (tmp_path / ".lock").stat().st_ino == ino and (tmp_path / ".lock").read_bytes() == b""


def test_a_lock_recreated_meanwhile_is_not_ours(tmp_path: Path) -> None:
    with hold_log_dir(tmp_path):
        (tmp_path / ".lock").unlink()  # someone removed ours and made a new one (a broker starting after us)
        (tmp_path / ".lock").write_bytes(b"")
        ino = (tmp_path / ".lock").stat().st_ino
    assert (tmp_path / ".lock").stat().st_ino == ino


def test_the_lock_is_found_again_when_the_link_to_the_log_dir_is_replaced(tmp_path: Path) -> None:
    """fetch-sim --out LINK where LINK -> a log dir: the write replaced the link by a file, and the .lock made through
    the link stayed forever."""
    logs = tmp_path / "logs"
    logs.mkdir()
    link = tmp_path / "link"
    link.symlink_to(logs)
    with hold_log_dir(link):
        assert (logs / ".lock").exists()
        link.unlink()
        link.write_bytes(b"a response")
    assert not (logs / ".lock").exists()


def test_a_killed_runs_lock_goes_at_the_end_of_the_next_run(tmp_path: Path) -> None:
    script = (f"import os, sys; sys.path.insert(0, {str(ROOT)!r})\n"
              "from kafkatool.log.lock import hold_log_dir\n"
              f"with hold_log_dir({str(tmp_path)!r}):\n"
              "    os.kill(os.getpid(), 9)\n")
    r = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert r.returncode == -9
    assert (tmp_path / ".lock").read_bytes() == LOCK_MARK  # left by the killed run: nothing else could remove it
    with hold_log_dir(tmp_path):
        assert (tmp_path / ".lock").exists()
    assert not (tmp_path / ".lock").exists()


def test_without_unnamed_files_the_lock_is_still_marked_and_removed(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Where O_TMPFILE is missing (or the filesystem refuses it) the .lock is created, then marked."""
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    with hold_log_dir(tmp_path):
        assert (tmp_path / ".lock").read_bytes() == LOCK_MARK
    assert not (tmp_path / ".lock").exists()


def test_the_lock_is_born_marked(tmp_path: Path) -> None:
    """The mark is in the file before it has the name .lock (an unnamed file linked in): a run killed right after
    creating it leaves a .lock the next run knows for ours, never an empty one nobody claims."""
    seen: list[bytes] = []
    real_link = os.link

    def link(src: str, dst: str, **kw: int) -> None:
        seen.append(Path(src).read_bytes())  # what .lock will hold the moment it exists
        real_link(src, dst, **kw)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(os, "link", link)
        with hold_log_dir(tmp_path):
            pass
    assert seen == [LOCK_MARK]
    assert not (tmp_path / ".lock").exists()
