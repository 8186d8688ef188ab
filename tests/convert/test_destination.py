"""DST's markers: what a resumed run finds of a killed one and removes before it writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkatool.convert.destination import RUN_FILE, SUCCESS, begin, check_destination, finish
from kafkatool.errors import UsageError


def test_resume_removes_the_killed_runs_staging_dirs_and_temp_files(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "t-0").mkdir(parents=True)
    dst.mkdir()
    first = check_destination(src, dst, ["t-0"], {"to_magic": 1})
    begin(first)
    assert sorted(os.listdir(dst)) == [RUN_FILE]
    # what a run killed mid-way leaves: a partition's staging dir, and atomic_write's temp of the _SUCCESS marker
    staging = dst / ".kafkatool-tmp-t-0.abc123.tmp"
    staging.mkdir()
    (staging / "00000000000000000000.log").write_bytes(b"partial")
    (dst / f".kafkatool-tmp-{SUCCESS}.xyz789.tmp").write_bytes(b"")
    resumed = check_destination(src, dst, ["t-0"], {"to_magic": 1}, resume=True)
    assert not resumed.complete and resumed.done == frozenset()
    begin(resumed)
    assert sorted(os.listdir(dst)) == [RUN_FILE]
    finish(resumed)
    assert sorted(os.listdir(dst)) == [RUN_FILE, SUCCESS]


def test_a_run_killed_while_writing_its_run_file_leaves_a_dst_taken_as_empty(tmp_path: Path) -> None:
    """Killed inside atomic_write of the run file: DST holds only its temp file. The next run (with or without
    --resume) takes DST as empty and removes the leftover; anything else beside it is still refused."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "t-0").mkdir(parents=True)
    dst.mkdir()
    (dst / f".kafkatool-tmp-{RUN_FILE}.k1ll3d.tmp").write_bytes(b'{"kafkatool_con')
    for resume in (False, True):
        d = check_destination(src, dst, ["t-0"], {"to_magic": 1}, resume=resume)
        assert d.done == frozenset() and not d.complete
    begin(d)
    assert sorted(os.listdir(dst)) == [RUN_FILE]
    os.unlink(dst / RUN_FILE)
    (dst / f".kafkatool-tmp-{RUN_FILE}.k1ll3d.tmp").write_bytes(b"")
    (dst / "notes.txt").write_text("an operator's file")
    with pytest.raises(UsageError, match="new or empty directory"):
        check_destination(src, dst, ["t-0"], {"to_magic": 1})
