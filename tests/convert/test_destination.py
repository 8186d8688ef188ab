"""DST's markers: what a resumed run finds of a killed one and removes before it writes."""

from __future__ import annotations

import os
from pathlib import Path

from kafkatool.convert.destination import RUN_FILE, SUCCESS, begin, check_destination, finish


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
