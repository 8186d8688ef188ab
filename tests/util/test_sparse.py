"""Sparse copies (kafkatool.util.sparse): holes stay holes, the digest is the file's, data where it was."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from kafkatool.util.sparse import copy_sparse, data_extents, hash_sparse

SIZE = 256 << 20  # apparent size of the sparse file


def _sparse_file(path: Path, size: int, data: dict[int, bytes]) -> None:
    with open(path, "wb") as f:
        for pos, chunk in data.items():
            f.seek(pos)
            f.write(chunk)
        f.truncate(size)


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def test_a_sparse_file_is_copied_with_its_holes(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.index", tmp_path / "dst.index"
    data = {0: b"head" * 1000, 100 << 20: b"middle", SIZE - 5: b"tail!"}
    _sparse_file(src, SIZE, data)
    assert src.stat().st_blocks * 512 < 1 << 20, "the filesystem keeps no holes: nothing to test"
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        size, digest = copy_sparse(fi, fo, src.stat().st_size)
    st = dst.stat()
    assert (size, st.st_size) == (SIZE, SIZE)
    assert st.st_blocks * 512 < 1 << 20, f"{st.st_blocks * 512} bytes allocated for a 256 MiB copy of ~4 KB of data"
    assert digest == _sha(src) == _sha(dst)
    with open(dst, "rb") as f:
        for pos, chunk in data.items():
            f.seek(pos)
            assert f.read(len(chunk)) == chunk


def test_a_trailing_hole_and_a_file_of_only_holes(tmp_path: Path) -> None:
    only = tmp_path / "holes"
    _sparse_file(only, 64 << 20, {})
    with open(only, "rb") as f:
        assert list(data_extents(f.fileno(), 64 << 20)) == []
        assert hash_sparse(f, 64 << 20) == (64 << 20, hashlib.sha256(bytes(64 << 20)).hexdigest())
    dst = tmp_path / "copy"
    with open(only, "rb") as fi, open(dst, "wb") as fo:
        copy_sparse(fi, fo, 64 << 20)
    assert dst.stat().st_size == 64 << 20 and dst.read_bytes() == bytes(64 << 20)


def test_a_dense_file_copies_whole_and_a_short_read_says_how_much(tmp_path: Path) -> None:
    src = tmp_path / "dense"
    src.write_bytes(os.urandom(3 << 20))
    dst = tmp_path / "copy"
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        assert copy_sparse(fi, fo, 3 << 20) == (3 << 20, _sha(src))
    assert dst.read_bytes() == src.read_bytes()
    with open(src, "rb") as fi, open(tmp_path / "cut", "wb") as fo:  # asked for more than there is (cut meanwhile)
        n, _ = copy_sparse(fi, fo, 4 << 20)
    assert n == 3 << 20 and (tmp_path / "cut").stat().st_size == 3 << 20
