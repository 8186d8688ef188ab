"""``util/realpath.Resolver``: ``os.path.realpath`` of many paths, each directory resolved once, equal to
``os.path.realpath`` whatever it resolved before."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

from kafkatool.util.realpath import Resolver


def random_tree(root: Path, rng: random.Random) -> list[str]:
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
    paths += [os.path.join(str(rng.choice(links)), "..", rng.choice(["", "x", ".."])) for _ in range(8)]
    paths += ["/" + p for p in rng.sample(paths, 5)]  # "//x": abspath keeps the double slash, realpath drops it
    return paths


def random_paths(tmp_path: Path, seeds: int) -> Iterator[tuple[int, list[str]]]:
    """For each seed, the paths of a random tree of its own, in a random order, each twice."""
    for seed in range(seeds):
        rng = random.Random(seed)
        root = tmp_path / f"t{seed}"
        root.mkdir()
        paths = random_tree(root, rng)
        yield seed, rng.sample(paths, len(paths)) * 2


def test_resolved_like_realpath_whatever_was_resolved_before(tmp_path: Path) -> None:
    for seed, paths in random_paths(tmp_path, 25):
        resolve = Resolver()
        for p in paths:
            assert resolve(p) == os.path.realpath(p), (seed, p)
            assert resolve(os.path.relpath(p)) == os.path.realpath(os.path.relpath(p)), (seed, p)
