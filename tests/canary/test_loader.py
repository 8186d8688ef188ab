"""``kafkatool.canary.loader``: what a 3.9 broker's log load does with file names it cannot parse, and that
none of kafkatool's own temp names is one of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkatool.canary.loader import BrokerLoadError, complete_swaps, predict
from kafkatool.log.layout import CLEANED_SUFFIX, SNAPSHOT_SUFFIX, SWAP_SUFFIX
from kafkatool.util.atomic import TEMP_PREFIX, temp_name
from tests.support.segments import T0, v2_sized, write_segment

KAFKA_PARSED = (".log", ".index", ".timeindex", ".txnindex", SNAPSHOT_SUFFIX, SWAP_SUFFIX, CLEANED_SUFFIX)


def _partition(tmp_path: Path) -> Path:
    part = tmp_path / "orders-0"
    for base in (0, 10):
        write_segment(part, base, [v2_sized(base + i, 100, ts=T0 + base + i) for i in range(10)])
    return part


# What kafkatool before 1.0 left after a kill between a temp write and its rename (canary apply/rollback).
@pytest.mark.parametrize("name", [
    ".kafkatool-tmp-00000000000000000010.log.swap",  # _write_swap: LogLoader step 1 (offsetFromFile of every .swap)
    ".kafkatool-tmp-00000000000000000010.index.swap",
    ".kafkatool-tmp-00000000000000000020.snapshot",  # _restore_others: ProducerStateManager.listSnapshotFiles
    ".kafkatool-tmp-00000000000000000010.log",  # loadSegmentFiles
    "garbage.cleaned",
])
def test_a_name_without_an_offset_fails_the_load(tmp_path: Path, name: str) -> None:
    part = _partition(tmp_path)
    (part / name).write_bytes(b"x")
    acts = predict(part)
    assert len(acts.fails) == 1 and acts.fails[0].startswith(f"{name}: ") and "NumberFormatException" in acts.fails[0]
    assert acts.describe() == [f"fail to load this log: {acts.fails[0]}"]
    assert not (acts.deleted or acts.renamed)  # nothing is predicted past the failure
    with pytest.raises(BrokerLoadError):
        complete_swaps(part)
    assert (part / name).exists()


def test_kafkatools_temp_names_are_left_alone(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    names = [temp_name("00000000000000000010.log.swap"), temp_name("00000000000000000020.snapshot"),
             temp_name("leader-epoch-checkpoint"), temp_name("00000000000000000010.index.bak")]
    for n in names:
        assert n.startswith(TEMP_PREFIX) and not n.endswith(KAFKA_PARSED), n
        (part / n).write_bytes(b"x")
    (part / "00000000000000000009.deleted").write_bytes(b"")
    acts = predict(part)
    assert not acts.fails
    assert acts.ignored == sorted(names)
    assert acts.deleted == ["00000000000000000009.deleted"]
    complete_swaps(part)
    assert all((part / n).exists() for n in names)


def test_every_temp_file_kafkatool_writes_in_a_partition_dir_is_ignored_by_kafka(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temp names of atomic_write (mkstemp) and replace_with_backup, as they are renamed into place."""
    from kafkatool.util import atomic

    seen: list[str] = []
    real_replace = os.replace

    def spy(a: str, b: str) -> None:
        seen.append(Path(a).name)
        real_replace(a, b)

    monkeypatch.setattr(atomic.os, "replace", spy)
    (tmp_path / "00000000000000000000.timeindex").write_bytes(b"old")
    atomic.replace_with_backup(tmp_path / "00000000000000000000.timeindex", b"new", backup=True)
    atomic.atomic_write_bytes(tmp_path / "00000000000000000000.snapshot", b"x")
    temps = [n for n in seen if n.startswith(TEMP_PREFIX)]
    assert len(temps) == 3, seen
    for n in temps:
        assert n.endswith(".tmp") and not n.endswith(KAFKA_PARSED), n
