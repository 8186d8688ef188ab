"""kafkatool.log.layout's dir scans: a file named as Kafka names its files that is not a regular file is recorded,
never silently skipped, and never taken for a segment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkatool.errors import ExitCode, InputError, NotRegularFileError
from kafkatool.log.layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogDir,
    PartitionDir,
    check_input,
    irregular_siblings,
    resolve_inputs,
)

SEG0, SEG6 = "00000000000000000000", "00000000000000000006"


def _partition(root: Path) -> Path:
    d = root / "t-0"
    d.mkdir()
    for base in (SEG0, SEG6):
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            (d / f"{base}{suffix}").write_bytes(b"")
    return d


def test_a_regular_partition_has_nothing_to_report(tmp_path: Path) -> None:
    part = PartitionDir.scan(_partition(tmp_path))
    assert [s.base_offset for s in part.segments] == [0, 6] and part.not_regular == []
    assert all(s.has(INDEX_SUFFIX) for s in part.segments)


def test_a_log_that_is_not_a_regular_file_is_no_segment_but_a_record(tmp_path: Path) -> None:
    d = _partition(tmp_path)
    (d / f"{SEG0}.log").unlink()
    os.mkfifo(d / f"{SEG0}.log")
    (d / f"{SEG6}.index").unlink()
    (d / f"{SEG6}.index").symlink_to("/dev/zero")
    (d / "leader-epoch-checkpoint").mkdir()
    (d / "stray-dir").mkdir()  # not a Kafka name: left alone, as before
    part = PartitionDir.scan(d)
    assert [s.base_offset for s in part.segments] == [6]
    assert [(f.path.name, f.kind) for f in part.not_regular] == [
        (f"{SEG0}.log", "a FIFO"), (f"{SEG6}.index", "a character device"), ("leader-epoch-checkpoint", "a directory")]
    seg = part.segments[0]
    assert not seg.has(INDEX_SUFFIX) and seg.has(TIME_INDEX_SUFFIX)
    assert seg.index not in part.segment_files()
    e = part.not_regular[0].error()
    assert e.exit_code == ExitCode.FINDINGS and str(e) == f"{d / SEG0}.log: not a regular file (a FIFO)"


def test_log_dir_own_files_and_inputs(tmp_path: Path) -> None:
    _partition(tmp_path)
    (tmp_path / "meta.properties").symlink_to("nowhere")
    inputs = resolve_inputs([tmp_path])
    assert [(f.path.name, f.kind) for f in inputs.not_regular()] == [("meta.properties", "a dangling symbolic link")]
    assert LogDir.scan(tmp_path).not_regular[0].kind == "a dangling symbolic link"


@pytest.mark.parametrize("kind", ["fifo", "loop", "dangling", "directory-named-as-a-segment"])
def test_a_path_argument_that_is_not_a_regular_file_or_a_dir(tmp_path: Path, kind: str) -> None:
    p = tmp_path / f"{SEG0}.log"
    expected = {"fifo": "a FIFO", "loop": "a symbolic link loop", "dangling": "a dangling symbolic link",
                "directory-named-as-a-segment": "a directory"}[kind]
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "loop":
        p.symlink_to(p.name)
    elif kind == "dangling":
        p.symlink_to("gone")
    else:
        p.mkdir()
    with pytest.raises(NotRegularFileError) as e:
        resolve_inputs([p])
    assert e.value.kind == expected and e.value.exit_code == ExitCode.USAGE
    if kind != "directory-named-as-a-segment":
        with pytest.raises(NotRegularFileError):
            check_input(p)


def test_a_missing_path_argument(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        check_input(tmp_path / "missing")


def test_irregular_siblings_of_a_named_segment(tmp_path: Path) -> None:
    d = _partition(tmp_path)
    (d / f"{SEG0}.timeindex").unlink()
    os.mkfifo(d / f"{SEG0}.timeindex")
    assert [(f.path.name, f.kind) for f in irregular_siblings(d / f"{SEG0}.log")] == [
        (f"{SEG0}.timeindex", "a FIFO")]
    assert irregular_siblings(d / f"{SEG6}.log") == []
