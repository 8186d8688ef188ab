"""refuse_aliasing (kafkatool.log.outputs): what counts as an input's place, and how an output is resolved."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkatool.errors import UsageError
from kafkatool.log.outputs import Output, refuse_aliasing

SEG = "00000000000000000000"


def _partition(root: Path, name: str = "t-0") -> Path:
    d = root / name
    d.mkdir(parents=True)
    for suffix in (".log", ".index", ".timeindex"):
        (d / f"{SEG}{suffix}").write_bytes(b"x")
    return d


def _refused(inputs: list[Path], out: Output) -> str:
    with pytest.raises(UsageError) as e:
        refuse_aliasing(inputs, [out])
    assert e.value.field == out.field and e.value.path is None
    return e.value.message


def test_an_input_file_by_any_name(tmp_path: Path) -> None:
    part = _partition(tmp_path / "logs")
    seg = part / f"{SEG}.log"
    assert "is the input file" in _refused([seg], Output("out", seg, "file"))
    os.link(seg, tmp_path / "hard.log")  # another name of the same inode
    assert "is the input file" in _refused([tmp_path / "hard.log"], Output("out", seg, "file"))
    (tmp_path / "sym.log").symlink_to(seg)
    msg = _refused([seg], Output("out", tmp_path / "sym.log", "file"))
    assert "through a symlink" in msg and "is the input file" in msg
    # the segment's own dir holds its indexes: a segment file's dir is an input too
    assert "lies inside the partition dir" in _refused([seg], Output("out", part / f"{SEG}.index", "file"))


def test_a_partition_its_broker_log_dir_and_a_scratch_dir(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    part = _partition(scratch)
    assert "lies inside the input partition dir" in _refused([part], Output("output", part / "new" / "deeper"))
    refuse_aliasing([part], [Output("output", scratch / "out")])  # beside a copied partition: no broker's dir
    (scratch / "meta.properties").write_text("version=1\n")  # now it is a broker's log dir
    assert "lies inside the log dir" in _refused([part], Output("output", scratch / "out"))
    assert "is the log dir" in _refused([part], Output("dst", scratch))


def test_a_log_dir_and_its_partitions_elsewhere(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _partition(logs, "a-0")
    other = _partition(tmp_path / "disk2", "b-0")
    (logs / "b-0").symlink_to(other)  # a partition dir on another disk
    assert "lies inside the input log dir" in _refused([logs], Output("workdir", logs / "w"))
    msg = _refused([logs], Output("workdir", other / "w"))
    assert "lies inside the partition dir" in msg and "of the input log dir" in msg
    refuse_aliasing([logs], [Output("workdir", tmp_path / "w"), Output("workdir", tmp_path / "disk2" / "w")])


def test_a_derived_path_names_the_given_one_and_a_file_output_is_no_directory(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    part = _partition(logs)
    msg = _refused([part], Output("output", logs / "t-0", given=logs))
    assert msg.startswith(f"{logs / 't-0'} (in {logs}) is the input partition dir")
    (tmp_path / "dir").mkdir()
    assert "is a directory" in _refused([part], Output("plot", tmp_path / "dir", "file"))
    refuse_aliasing([part, tmp_path / "missing"], [Output("out", tmp_path / "new" / "f.bin", "file")])
