"""2. ``kafkatool reindex-time`` against a ZooKeeper 3.9 broker's own recovery.

The stopped broker's log dir is damaged, one thing per partition: a segment's ``.index`` and ``.timeindex``
deleted (v2 data, and v0 data), a ``.timeindex`` deleted alone (v1 data), a torn tail appended to an active
segment, a batch corrupted in the middle of a first segment (its recovery point set to 0), the clean-shutdown
marker removed. kafkatool reads a copy (``--recovery-report``, ``--output``); then the broker starts, recovers and
stops cleanly. The report names exactly the segments the broker recovered, the bytes it truncated and the segments
it deleted (the broker's log lines and the files after), and every index the broker rebuilt is byte for byte the
one kafkatool wrote.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

import pytest

from tests.broker.runs import RecoverySeen, ZooKeeperRun


@pytest.fixture(scope="module")
def seen(zookeeper39: ZooKeeperRun) -> RecoverySeen:
    return zookeeper39.recovery


@pytest.fixture(scope="module")
def report(seen: RecoverySeen) -> list[dict[str, Any]]:
    assert seen.report.returncode == 1  # data is lost (the torn tail, the corrupt batch): exit 1
    return [json.loads(line) for line in seen.report.stdout.splitlines()]


def broker_recovered(log: str) -> dict[str, set[int]]:
    """Partition -> base offsets of the segments the broker recovered (unflushed, or for a missing index)."""
    out: dict[str, set[int]] = defaultdict(set)
    for m in re.finditer(r"partition=([\w.-]+), dir=[^\]]*\] Recovering unflushed segment (\d+)\.", log):
        out[m.group(1)].add(int(m.group(2)))
    for m in re.finditer(r"Could not find offset index file corresponding to log file \S*/([\w.-]+)/(\d+)\.log", log):
        out[m.group(1)].add(int(m.group(2)))
    return out


def test_the_report_names_the_segments_the_broker_recovers(seen: RecoverySeen, report) -> None:
    ours = {o["partition"]: set(o["rebuilt_segments"]) for o in report if o["type"] == "partition"}
    theirs = broker_recovered(seen.log)
    assert {p: s for p, s in ours.items() if s} == dict(theirs)
    assert set(seen.damaged) <= set(theirs) | {"v1-events-0"}


def test_the_report_says_what_the_broker_truncates_and_deletes(seen: RecoverySeen, report) -> None:
    truncations = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
        r"partition=([\w.-]+), dir=[^\]]*\] Corruption found in segment (\d+), truncating to offset (\d+)", seen.log)}
    steps = [o for o in report if o["type"] == "recovery"]
    cut = {o["partition"]: o for o in steps if o["action"] == "recover" and o["truncated_bytes"]}
    assert set(cut) == set(truncations) == {"rec-1", "rec-2"}
    for part, step in cut.items():
        segment = int(step["file"].split(".")[0])
        assert truncations[part][0] == segment
        after = seen.after / part / step["file"]
        before = seen.before / part / step["file"]
        assert after.stat().st_size == step["truncate_at"] == before.stat().st_size - step["truncated_bytes"]
    deleted = {(o["partition"], o["file"]) for o in steps if o["action"] == "delete-unflushed"}
    assert deleted and all(p == "rec-2" for p, _ in deleted)
    for part, name in deleted:  # gone with their indexes
        assert (seen.before / part / name).exists() and not (seen.after / part / name).exists()
        assert not (seen.after / part / name.replace(".log", ".index")).exists()
    # every other .log is as it was
    for log in seen.before.glob("*/*.log"):
        key = (log.parent.name, log.name)
        if key not in deleted and not (log.parent.name in cut and cut[log.parent.name]["file"] == log.name):
            assert (seen.after / log.parent.name / log.name).read_bytes() == log.read_bytes(), key
    # the broker's words for the rest: a missing .timeindex alone is created empty, not rebuilt
    created = {(o["partition"], o["file"]) for o in steps if o["action"] == "create-time-index"}
    assert ("v1-events-0", sorted((seen.before / "v1-events-0").glob("*.log"))[1].with_suffix(".timeindex").name) \
        in created


def test_rebuilt_indexes_are_the_brokers_byte_for_byte(seen: RecoverySeen, report) -> None:
    assert seen.output_run.returncode in (0, 1), seen.output_run.stderr
    recovered = broker_recovered(seen.log)
    compared = 0
    for part, bases in recovered.items():
        for base in bases:
            for suffix in (".index", ".timeindex"):
                name = f"{base:020d}{suffix}"
                theirs = seen.after / part / name
                if not theirs.exists():  # deleted after the truncation before it
                    continue
                ours = seen.output / part / name
                assert ours.read_bytes() == theirs.read_bytes(), (part, name)
                compared += 1
    assert compared >= 20
    # segments the broker left alone keep their indexes, and the missing .timeindex stays empty
    for idx in seen.before.glob("*/*index"):
        part, base = idx.parent.name, int(idx.name.split(".")[0])
        if base not in recovered.get(part, set()) and (seen.after / part / f"{base:020d}.log").exists():
            assert (seen.after / part / idx.name).read_bytes() == idx.read_bytes(), idx
