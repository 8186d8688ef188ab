"""DirectWriter: the bytes of a file written around the page cache are the bytes given, whatever the pieces,
the block size, and whether the filesystem takes O_DIRECT, refuses it at open, or refuses one write."""

from __future__ import annotations

import errno
import fcntl
import os
import random
from pathlib import Path

import pytest

from kafkatool.util import direct_io
from kafkatool.util.direct_io import ALIGN, MIN_DIRECT, DirectWriter


def _pieces(seed: int, total: int) -> list[bytes]:
    rnd = random.Random(seed)
    out, n = [], 0
    while n < total:
        k = rnd.choice([0, 1, 7, 100, ALIGN - 1, ALIGN, ALIGN + 1, 70_000, 300_000])
        out.append(rnd.randbytes(k))
        n += k
    return out


@pytest.mark.parametrize("buffer_bytes", [ALIGN, 64 << 10, MIN_DIRECT, MIN_DIRECT + 5000, 1 << 20])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_file_holds_exactly_what_was_written(tmp_path: Path, buffer_bytes: int, seed: int) -> None:
    pieces = _pieces(seed, 3 << 20)
    w = DirectWriter(tmp_path / "f", buffer_bytes)
    if buffer_bytes < MIN_DIRECT:
        assert not w.direct  # small blocks cost more direct than through the cache
    for p in pieces:
        w.write(p)
    assert w.written == sum(map(len, pieces))
    w.close()
    w.close()  # twice: nothing more
    assert (tmp_path / "f").read_bytes() == b"".join(pieces)


def test_o_direct_is_used_for_whole_blocks_and_cleared_for_the_tail(tmp_path: Path) -> None:
    w = DirectWriter(tmp_path / "f", 1 << 20)
    fd = w._file.fileno()
    # Direct where the filesystem takes it (ext4, xfs, tmpfs since Linux 6.6); the descriptor says the same.
    assert bool(fcntl.fcntl(fd, fcntl.F_GETFL) & direct_io.O_DIRECT) == w.direct
    direct = w.direct
    w.write(b"x" * ((1 << 20) + 10))  # one whole block written, 10 bytes staged
    assert os.fstat(fd).st_size == 1 << 20 and w.direct == direct
    data_before_close = (tmp_path / "f").read_bytes()
    assert data_before_close == b"x" * (1 << 20)
    w.close()
    assert (tmp_path / "f").read_bytes() == b"x" * ((1 << 20) + 10)


def test_a_filesystem_refusing_o_direct_gets_the_page_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ramfs, tmpfs before Linux 6.6, some FUSE and network filesystems: O_DIRECT is refused with EINVAL (at open,
    # after the file is made; the writer opens plainly and asks for O_DIRECT with F_SETFL, refused the same way).
    real_fcntl = fcntl.fcntl

    def refusing(fd, cmd, arg=0):
        if cmd == fcntl.F_SETFL and arg & direct_io.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_fcntl(fd, cmd, arg)

    monkeypatch.setattr(fcntl, "fcntl", refusing)
    w = DirectWriter(tmp_path / "f", 1 << 20)
    assert not w.direct
    w.write(b"a" * 3_000_001)
    w.close()
    assert (tmp_path / "f").read_bytes() == b"a" * 3_000_001


def test_abandon_closes_even_with_a_view_of_the_room_held(tmp_path: Path) -> None:
    w = DirectWriter(tmp_path / "f", 1 << 20)
    held = w.room()  # e.g. in a traceback's frame
    w.commit(0)
    w.abandon()
    assert w._file.closed
    held.release()


def test_a_refused_direct_write_goes_on_through_the_page_cache(tmp_path: Path) -> None:
    w = DirectWriter(tmp_path / "f", 1 << 20)
    w.direct = True  # as if the filesystem had taken O_DIRECT at open (where it did not, the fallback is the same)
    real = w._file
    calls = []

    class Refusing:
        closed = False

        def write(self, view):
            calls.append(len(view))
            if len(calls) == 1:
                raise OSError(errno.EINVAL, "Invalid argument")
            return real.write(view)

        def __getattr__(self, name):
            return getattr(real, name)

    w._file = Refusing()  # type: ignore[assignment]
    data = bytes(range(256)) * 10_000
    w.write(data)
    assert not w.direct and not fcntl.fcntl(real.fileno(), fcntl.F_GETFL) & direct_io.O_DIRECT
    w._file = real
    w.close()
    assert (tmp_path / "f").read_bytes() == data and calls[:2] == [1 << 20, 1 << 20]


def test_other_write_errors_are_raised(tmp_path: Path) -> None:
    w = DirectWriter(tmp_path / "f", 1 << 20)
    real = w._file

    class Full:
        closed = False

        def write(self, view):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(real, name)

    w._file = Full()  # type: ignore[assignment]
    with pytest.raises(OSError) as e:
        w.write(b"z" * (2 << 20))
    assert e.value.errno == errno.ENOSPC
    w._file = real
    w.abandon()


def test_room_and_commit_put_bytes_in_place_and_keep_blocks_aligned(tmp_path: Path) -> None:
    w = DirectWriter(tmp_path / "f", 1 << 20)
    rnd = random.Random(3)
    expect = bytearray()
    for _ in range(200):
        room = w.room()
        assert len(room) >= (1 << 20) // 4
        if rnd.random() < 0.3:
            k = rnd.randrange(0, 50_000)
            piece = rnd.randbytes(k)
            room.release()
            w.write(piece)
        else:
            k = rnd.randrange(0, len(room) + 1)
            piece = rnd.randbytes(k)
            room[:k] = piece
            room.release()
            w.commit(k)
        expect += piece
        assert os.fstat(w._file.fileno()).st_size % ALIGN == 0 or not w.direct
    with pytest.raises(ValueError):
        w.commit(len(w.room()) + 1)
    w.close()
    assert (tmp_path / "f").read_bytes() == bytes(expect)


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        DirectWriter(tmp_path / "f", 1 << 20)
    assert (tmp_path / "f").read_bytes() == b"keep"
