"""The manifest's file digests: a copy this process wrote is not hashed again, and any change to it afterwards is
still seen."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kafkatool.canary import manifest
from kafkatool.canary.manifest import copy_file, hash_file, matches


def _no_hashing(*_args: object) -> None:
    raise AssertionError("hashed again")


def test_a_fresh_copy_is_known_without_reading_it_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "00000000000000000000.index"
    with open(src, "wb") as f:
        f.write(b"\x01" * 100)
        f.truncate(64 << 20)  # a preallocated index: mostly a hole
    os.utime(src, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    entry = copy_file(src, tmp_path / "copy.index")
    assert (entry.size, entry.sha256) == hash_file(src)
    monkeypatch.setattr(manifest, "hash_sparse", _no_hashing)
    assert matches(tmp_path / "copy.index", entry)
    with pytest.raises(AssertionError, match="hashed again"):
        hash_file(src)  # the source was not written by this process: hashed as ever


@pytest.mark.parametrize("change", ["write", "utime", "rename"])
def test_a_copy_changed_afterwards_is_hashed_again(tmp_path: Path, change: str) -> None:
    src = tmp_path / "00000000000000000000.log"
    src.write_bytes(bytes(range(256)) * 16)
    os.utime(src, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    copy = tmp_path / "copy.log"
    entry = copy_file(src, copy)
    time.sleep(0.02)  # past a coarse timestamp tick (kernels without fine-grained ctime: one jiffy)
    if change == "write":  # the same size, one byte changed, mtime put back: ctime still moves
        with open(copy, "r+b") as f:
            f.write(b"\xff")
        os.utime(copy, ns=(entry.mtime_ns, entry.mtime_ns))
        assert not matches(copy, entry)
    elif change == "utime":
        os.utime(copy, ns=(entry.mtime_ns + 1, entry.mtime_ns + 1))
        assert matches(copy, entry)  # hashed again, and still the same bytes
    else:
        copy.rename(tmp_path / "moved.log")
        assert matches(tmp_path / "moved.log", entry)
