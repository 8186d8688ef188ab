"""kafkatool.util.regular: input files are regular files, opened without blocking, read to their size at open."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from kafkatool.errors import ExitCode, NotRegularFileError
from kafkatool.util.regular import check_regular, irregular, open_regular, read_regular


def _fifo(tmp_path: Path) -> Path:
    p = tmp_path / "fifo"
    os.mkfifo(p)
    return p


def _loop(tmp_path: Path) -> Path:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    return tmp_path / "a"


def _dangling(tmp_path: Path) -> Path:
    (tmp_path / "link").symlink_to("nowhere")
    return tmp_path / "link"


def _dev_zero_link(tmp_path: Path) -> Path:
    (tmp_path / "zero").symlink_to("/dev/zero")
    return tmp_path / "zero"


def _directory(tmp_path: Path) -> Path:
    (tmp_path / "d").mkdir()
    return tmp_path / "d"


NOT_REGULAR = [
    pytest.param(_fifo, "a FIFO", id="fifo"),
    pytest.param(_directory, "a directory", id="directory"),
    pytest.param(_dev_zero_link, "a character device", id="dev-zero-link"),
    pytest.param(_dangling, "a dangling symbolic link", id="dangling-link"),
    pytest.param(_loop, "a symbolic link loop", id="link-loop"),
]


@pytest.mark.parametrize(("make", "kind"), NOT_REGULAR)
def test_anything_but_a_regular_file_is_refused_without_blocking(tmp_path: Path, make, kind: str) -> None:
    # A FIFO with no writer: a plain open() would block this test forever.
    path = make(tmp_path)
    assert irregular(path) == kind
    with pytest.raises(NotRegularFileError) as e:
        open_regular(path)
    assert str(e.value) == f"{path}: not a regular file ({kind})"
    assert e.value.exit_code == ExitCode.USAGE and e.value.finding == "not-a-regular-file"
    with pytest.raises(NotRegularFileError):
        read_regular(path)
    with pytest.raises(NotRegularFileError):
        check_regular(path)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert irregular(path) == "a socket"
        with pytest.raises(NotRegularFileError, match=r"\(a socket\)"):
            open_regular(path)


def test_a_file_met_in_a_walk_is_a_finding(tmp_path: Path) -> None:
    assert NotRegularFileError("a FIFO", path=tmp_path, walked=True).exit_code == ExitCode.FINDINGS


def test_a_symlink_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"abc")
    (tmp_path / "link").symlink_to("real")
    assert irregular(tmp_path / "link") is None
    assert read_regular(tmp_path / "link") == b"abc"


def test_a_missing_file_raises_its_oserror(tmp_path: Path) -> None:
    assert irregular(tmp_path / "missing") is None
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")


def test_a_file_that_grows_is_read_to_its_size_at_open(tmp_path: Path) -> None:
    path = tmp_path / "growing"
    path.write_bytes(b"x" * 100)
    with open_regular(path) as f:
        with open(path, "ab") as w:
            w.write(b"y" * 5000)
        assert f.size == 100
        assert f.read_all() == b"x" * 100
        assert b"".join(f.chunks(7)) == b"x" * 100
        assert f.pread(90, 1000) == b"x" * 10
        assert f.pread(100, 10) == b""
        m = f.map()
        assert m is not None and len(m) == 100
        m.close()


def test_a_file_that_shrinks_is_read_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "shrinking"
    path.write_bytes(b"x" * 100)
    with open_regular(path) as f:
        os.truncate(path, 40)
        assert f.read_all() == b"x" * 40
        assert b"".join(f.chunks(16)) == b"x" * 40


def test_read_regular_limit(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"0123456789")
    assert read_regular(tmp_path / "f", limit=4) == b"0123"
    assert read_regular(tmp_path / "f", limit=100) == b"0123456789"


def test_an_empty_file_maps_to_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    with open_regular(tmp_path / "empty") as f:
        assert f.size == 0 and f.map() is None and f.read_all() == b""


def test_noatime_is_asked_for_and_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "O_NOATIME"):
        pytest.skip("O_NOATIME is Linux only")
    (tmp_path / "f").write_bytes(b"data")
    real_open = os.open
    seen: list[int] = []

    def refusing(p: str, flags: int, *args: int) -> int:
        seen.append(flags)
        if flags & os.O_NOATIME:
            raise PermissionError(1, "Operation not permitted")
        return real_open(p, flags, *args)

    monkeypatch.setattr(os, "open", refusing)
    with open_regular(tmp_path / "f", noatime=True) as f:
        assert f.read_all() == b"data"
    assert [bool(x & os.O_NOATIME) for x in seen] == [True, False]
    assert all(x & os.O_NONBLOCK for x in seen)


def test_a_path_swapped_for_a_fifo_after_the_check_is_caught_by_fstat(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The stat before the open sees a regular file; the path is a FIFO when opened: O_NONBLOCK makes the open
    return at once, and the fstat of the descriptor refuses it."""
    import kafkatool.util.regular as regular

    fifo = _fifo(tmp_path)
    monkeypatch.setattr(regular, "irregular", lambda _p: None)
    with pytest.raises(NotRegularFileError, match=r"\(a FIFO\)"):
        open_regular(fifo)
