"""``reindex-time`` on ``kafkatool sample`` log dirs: every topic shape of the demo (v0/v1/v2 upgrades,
every codec, transactions, cleaner output with gaps, empty batches and delete horizons, LogAppendTime),
after a clean shutdown and after a crash (preallocated active indexes)."""

from __future__ import annotations

import hashlib
import json

import pytest

from kafkatool.log.layout import resolve_inputs
from kafkatool.reindex.engine import ReindexOptions, plan, run
from kafkatool.reindex.verify import Severity
from kafkatool.sample.generate import generate_sample
from kafkatool.sample.spec import IntRange, SampleSpec, TopicSpec, demo_topics
from tests.support.cli import run_cli


@pytest.fixture
def demo(sample_dir):
    return sample_dir  # the session's demo dir (tests/conftest.py), read only


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    path = tmp_path_factory.mktemp("crashed") / "logs"
    generate_sample(path, SampleSpec(demo_topics(), clean_shutdown=False), fsync=False)
    return path


def results(path, **kw):
    options = ReindexOptions(**kw)
    return list(run(plan(resolve_inputs([path]), options), options))


def test_clean_demo_dir_is_identical_to_the_rebuild(demo):
    res = results(demo)
    assert len({r.task.partition for r in res}) == 15 and len(res) > 60
    assert all(r.severity is None for r in res), [(r.task.name, [c.findings for c in r.checks]) for r in res
                                                  if r.severity is not None]
    assert all(c.status == "ok" for r in res for c in r.checks)


def test_crashed_demo_dir_flags_only_the_active_segments(crashed):
    res = results(crashed)
    flagged = [r for r in res if r.severity is not None]
    assert {r.task.partition for r in flagged} == {r.task.partition for r in res}
    assert all(r.task.active for r in flagged)
    for r in flagged:
        assert r.severity == Severity.INFO
        assert {f.reason for c in r.checks for f in c.findings} <= {"zero-padded", "max-timestamp"}
        assert r.index.findings[0].reason == "zero-padded"


def test_in_place_on_the_crashed_dir(crashed, tmp_path):
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(crashed, root)
    logs = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*.log")}
    r = run_cli("reindex-time", root, "--in-place", "--jobs", "2", "--format", "json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["files_written"] == 2 * 15  # the active segment's two files in each partition
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*.log")} == logs
    assert all(c.status == "ok" for x in results(root) for c in x.checks)


def test_recovery_report_on_the_crashed_dir(crashed):
    r = run_cli("reindex-time", crashed, "--recovery-report", "--format", "json")
    assert r.returncode == 0, r.stdout
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    (logdir,) = [x for x in recs if x["type"] == "log-dir"]
    assert logdir["clean_shutdown"] is False
    parts = [x for x in recs if x["type"] == "partition"]
    assert len(parts) == 15 and not any(p["loses_data"] for p in parts)
    # The recovery point is each active segment's base offset: exactly the active segment is recovered.
    for p in parts:
        assert p["rebuilt_segments"] == [p["recovery_point"]]


def test_other_interval(tmp_path):
    spec = SampleSpec((TopicSpec("t", records=3000, value_bytes=IntRange(300, 300), batch_records=IntRange(1, 2),
                                 index_interval_bytes=1024),), profile="custom")
    path = tmp_path / "logs"
    generate_sample(path, spec, fsync=False)
    assert all(r.severity is None for r in results(path, index_interval_bytes=1024))
    res = results(path)
    assert all(c.status == "valid-different" and c.severity == Severity.INFO for r in res for c in r.checks)
