"""``atomic.replace_with_backup`` when an interrupted run already made the backup."""

from __future__ import annotations

import os

from kafkatool.util.atomic import TEMP_PREFIX, replace_with_backup


def test_backup_already_linked_to_the_file(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(b"old")
    # A run killed after linking the backup and before replacing the file leaves path and .bak as one inode.
    os.link(path, tmp_path / (path.name + ".bak"))
    bak = replace_with_backup(path, b"new", backup=True)
    assert path.read_bytes() == b"new" and bak is not None and bak.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name, path.name + ".bak"]
    assert not any(p.name.startswith(TEMP_PREFIX) for p in tmp_path.iterdir())


def test_missing_file_no_backup(tmp_path):
    path = tmp_path / "x.timeindex"
    assert replace_with_backup(path, b"data", backup=True) is None
    assert path.read_bytes() == b"data"
