"""5. ``kafkatool sample`` output loaded by real brokers: a KRaft 3.9 broker (the whole demo profile: v0/v1/v2,
every codec, transactions, LogAppendTime, a compacted __consumer_offsets) and Kafka 4.x (its v2 topics) load it
without recovery, honouring its clean-shutdown marker, and serve every record kafkatool reads from it.

The dir moves into a new cluster as an operator would move one: topics created first (same names and partition
counts; ``__consumer_offsets`` by the coordinator), leader epochs raised past the log's, then the partitions'
``partition.metadata`` pointed at the new topic ids (a KRaft broker treats any other log as stray). Nothing else
of kafkatool's output is changed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkatool.log.checkpoints import read_offset_checkpoint
from tests.broker.records import normalized, read_records
from tests.broker.runs import SampleRun

RECOVERY_WORDS = re.compile(r"Recovering unflushed segment|Found invalid|Corruption found|Could not find offset index"
                            r"|Found a corrupted index|stray|truncation of conflicting entries|rebuilding index")


@pytest.fixture(params=["kraft-3.9", "kafka-4"])
def run(request: pytest.FixtureRequest) -> SampleRun:
    return request.getfixturevalue("sample39" if request.param == "kraft-3.9" else "sample4")


def _partitions(log_dir: Path) -> list[Path]:
    return sorted(d for d in log_dir.iterdir() if d.is_dir() and (d / "partition.metadata").exists())


def test_loads_without_recovery(run: SampleRun) -> None:
    seen = run.seen
    n = len(_partitions(seen.log_dir))
    assert re.search(rf"Skipping recovery of {n} logs from {re.escape(str(seen.log_dir))} since clean shutdown "
                     "file was found", seen.log)
    ours = [line for line in seen.log.splitlines() if str(seen.log_dir) in line]
    assert not [line for line in ours if RECOVERY_WORDS.search(line)]


def test_the_broker_serves_every_record(run: SampleRun) -> None:
    seen = run.seen
    log_start = {f"{tp.topic}-{tp.partition}": o for tp, o in
                 read_offset_checkpoint(run.sample / "log-start-offset-checkpoint").items()}
    for part in _partitions(run.sample):
        first = min(int(p.stem) for p in part.glob("*.log"))
        expected = read_records(part, start=max(first, log_start.get(part.name, 0)))
        assert normalized(seen.consumed[part.name]) == expected, part.name
    assert sum(len(v) for v in seen.consumed.values()) > 10_000


def test_files_after_a_clean_stop(run: SampleRun) -> None:
    """What the broker changed: segments and indexes never; producer snapshots at or below the log start offset
    deleted as it loads (``ProducerStateManager.truncateAndReload``), each leader-epoch checkpoint one entry
    longer (its own epoch), and the log dir's own checkpoints and clean-shutdown marker rewritten."""
    seen = run.seen
    for part in _partitions(seen.before):
        first = min(int(p.stem) for p in part.glob("*.log"))
        starts = read_offset_checkpoint(seen.before / "log-start-offset-checkpoint")
        log_start = max([first] + [o for tp, o in starts.items() if f"{tp.topic}-{tp.partition}" == part.name])
        after = seen.after / part.name
        for f in sorted(part.iterdir()):
            g = after / f.name
            if f.suffix == ".snapshot" and int(f.stem) <= log_start:
                assert not g.exists(), g
            elif f.name == "leader-epoch-checkpoint":  # the new leader's epoch appended (LeaderEpochFileCache.assign:
                # an entry at the same start offset, an epoch without records, is replaced)
                old = [tuple(map(int, e.split())) for e in f.read_text().splitlines()[2:]]
                new = [tuple(map(int, e.split())) for e in g.read_text().splitlines()[2:]]
                epoch, start = new[-1]
                assert new[:-1] == [e for e in old if e[1] < start], (old, new)
                assert epoch > max((e[0] for e in old), default=-1), (old, new)
            else:
                assert g.read_bytes() == f.read_bytes(), g
        assert {p.name for p in after.iterdir()} <= {p.name for p in part.iterdir()}
