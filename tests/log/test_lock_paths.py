"""The lock probe's path walk (``log/lock.py``): the directories it visits for a path are those of the path as
given and of its resolved form, however many paths one probe resolves."""

from __future__ import annotations

from pathlib import Path

from kafkatool.log.lock import _dirs_up
from kafkatool.util.realpath import Resolver
from tests.util.test_realpath import random_paths


def test_the_walk_is_the_same_with_a_shared_resolver(tmp_path: Path) -> None:
    for seed, paths in random_paths(tmp_path, 10):
        resolve = Resolver()
        for p in paths:
            assert list(_dirs_up(p, resolve)) == list(_dirs_up(p)), (seed, p)


def test_the_walk_reaches_the_root_along_both_forms(tmp_path: Path) -> None:
    (tmp_path / "real" / "logs" / "t-0").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "t-0"
    link.symlink_to(tmp_path / "real" / "logs" / "t-0")
    seen = list(_dirs_up(link / "00000000000000000000.log", Resolver()))
    assert seen[:2] == [str(link), str(tmp_path / "elsewhere")]
    assert seen.count("/") == 1 and len(seen) == len(set(seen))
    assert str(tmp_path / "real" / "logs") in seen and str(tmp_path / "real" / "logs" / "t-0") in seen
