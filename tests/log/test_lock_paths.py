"""The lock probe's path walk (``log/lock.py``): the directories it visits for a path are those of the path as
given and of its resolved form, however many paths one probe resolves (its cache of resolved directories)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from kafkatool.log.lock import _dirs_up, _realpath


def _tree(root: Path, rng: random.Random) -> list[str]:
    """Dirs, files and symlinks of every kind (to dirs, to files, relative, chained, dangling, looping)."""
    dirs = [root]
    for i in range(12):
        d = rng.choice(dirs) / f"d{i}"
        d.mkdir()
        dirs.append(d)
    files = []
    for i in range(10):
        f = rng.choice(dirs) / f"{i:020d}.log"
        f.write_bytes(b"")
        files.append(f)
    links: list[Path] = []
    for i in range(14):
        at = rng.choice(dirs) / f"l{i}"
        kind = rng.randrange(5)
        if kind == 0:
            target: str | Path = rng.choice(dirs)
        elif kind == 1:
            target = rng.choice(files)
        elif kind == 2:
            target = os.path.relpath(rng.choice(dirs + files), at.parent)
        elif kind == 3:
            target = at.parent / "nowhere"
        else:
            target = rng.choice(links) if links else at  # a chain, or a loop
        at.symlink_to(target)
        links.append(at)
    paths = [str(p) for p in dirs + files + links]
    # through the links, and paths that do not exist (a destination not made yet)
    paths += [os.path.join(str(rng.choice(links)), "x") for _ in range(10)]
    paths += [os.path.join(str(rng.choice(dirs)), "new", "out") for _ in range(5)]
    return paths


def test_resolved_like_realpath_whatever_was_resolved_before(tmp_path: Path) -> None:
    for seed in range(25):
        rng = random.Random(seed)
        root = tmp_path / f"t{seed}"
        root.mkdir()
        paths = _tree(root, rng)
        cache: dict[str, str] = {}
        for p in rng.sample(paths, len(paths)) * 2:
            assert _realpath(p, cache) == os.path.realpath(p), (seed, p)
            assert list(_dirs_up(p, cache)) == list(_dirs_up(p)), (seed, p)


def test_the_walk_reaches_the_root_along_both_forms(tmp_path: Path) -> None:
    (tmp_path / "real" / "logs" / "t-0").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "t-0"
    link.symlink_to(tmp_path / "real" / "logs" / "t-0")
    seen = list(_dirs_up(link / "00000000000000000000.log", {}))
    assert seen[:2] == [str(link), str(tmp_path / "elsewhere")]
    assert seen.count("/") == 1 and len(seen) == len(set(seen))
    assert str(tmp_path / "real" / "logs") in seen and str(tmp_path / "real" / "logs" / "t-0") in seen
