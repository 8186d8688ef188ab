"""Shared fixtures: the CLI runner, a JVM holding a broker lock, kafka-ref (Kafka's own code), and the
session-wide sample and mixed-format log dirs (read-only: copy to modify)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafkatool.sample.generate import generate_sample
from kafkatool.sample.spec import SampleSpec, demo_topics
from kafkatool.util.procs import alive
from tests.support.cli import run_cli
from tests.support.dump_totals import dump_totals
from tests.support.mixed_logdir import build_mixed_logdir

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.support.kafkaref import KafkaRef
    from tests.support.s3_server import S3Server

# kafka-ref (Apache Kafka's own code) for every test directory: the session fixture lives there.
pytest_plugins = ["tests.support.kafkaref"]


# The session's temp dirs live here, not in pytest's numbered dirs: pytest puts a `.lock` in each of those
# (pytest-of-USER/pytest-N/.lock), and kafkatool, writing under it, takes that `.lock` as a broker log dir's and
# holds it while it writes; in another process (a pytest-xdist worker) kafkatool then finds it held and refuses
# ("a live broker holds this log dir's .lock"), as it must refuse any dir a live process holds.
RUNS = Path(tempfile.gettempdir()) / f"kafkatool-tests-{os.getuid()}"
KEEP_RUNS = 3  # as pytest keeps its last three numbered dirs


def _bytecode_outside_the_checkout() -> None:
    """With ``PYTHONDONTWRITEBYTECODE`` set (as on these machines), every process the suite starts (the workers,
    hundreds of ``python -m kafkatool`` runs, Spark's Python workers) compiled kafkatool's sources again, and each
    worker rewrote every test module's asserts anew: ~10% of the suite's CPU. Bytecode goes to a cache dir
    instead (``PYTHONPYCACHEPREFIX``), so the checkout still gets no ``__pycache__``. Set before the workers start:
    they and every subprocess inherit it."""
    if not sys.dont_write_bytecode or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    from tests.support.kafkaref import cache_dir

    prefix = str(cache_dir() / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _bytecode_outside_the_checkout()
    if config.option.basetemp or hasattr(config, "workerinput"):
        return  # given on the command line, or an xdist worker: the controller hands each its own below its own
    RUNS.mkdir(mode=0o700, exist_ok=True)
    _prune(RUNS)
    # Short: a test binds a Unix socket deep below it (sun_path holds 107 bytes).
    config.option.basetemp = tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=RUNS)


# pytest-xdist (`-n auto`): which tests run on one worker, in one process. Session and module fixtures are per
# worker, so a module's tests stay together (its module fixtures are made once) and so do the tests of each
# expensive session fixture: the real brokers (tests/broker, one broker set at a time) and the Spark session and
# cluster (tests/spark). The hostile sweep's runs share nothing but inputs built per case, so they spread over the
# workers one by one. (A scheduler of our own: xdist's `loadgroup` marks rename node ids, which pytest 9 ignores.)
SHARED_GROUPS = {"tests/broker/": "broker", "tests/spark/": "spark",
                 "tests/scan/test_s3.py": "spark"}  # with tests/spark/test_object_storage.py: one S3 server
SPREAD = {"tests/hostile/test_sweep.py"}
# The groups that take longest (minutes of brokers and Spark sessions), handed out before any other.
FIRST = ("broker", "spark")


def xdist_scope(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    if path in SPREAD:
        return nodeid
    return next((g for prefix, g in SHARED_GROUPS.items() if path.startswith(prefix)), path)


if importlib.util.find_spec("xdist") is not None:  # the hook exists only with the plugin

    def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
        """``-n auto``: one worker more than the cores. A quarter of the suite's wall with two workers is spent
        waiting (brokers' and Spark's JVMs starting, a broker's cleaner and retention timers, consumers' polls) with
        a core idle; a third worker on two cores fills it (fresh runs: 287 s -> 262 s of pytest at the same CPU; a
        fourth added CPU and lost it again, 273 s). See benchmarks/results/suite-time.md."""
        return len(os.sched_getaffinity(0)) + 1

    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
        from xdist.scheduler import LoadScopeScheduling

        class Scopes(LoadScopeScheduling):
            started = False

            def _split_scope(self, nodeid: str) -> str:
                return xdist_scope(nodeid)

            def _assign_work_unit(self, node: Any) -> None:
                if not self.started:  # the long groups first: started last, they would end the run alone
                    self.started = True
                    for scope in [s for s in self.workqueue if "::" in s]:  # spread tests last: small units
                        self.workqueue.move_to_end(scope)                 # that even out the workers' ends
                    for group in reversed(FIRST):
                        if group in self.workqueue:
                            self.workqueue.move_to_end(group, last=False)
                super()._assign_work_unit(node)

        return Scopes(config, log)


def _prune(runs: Path) -> None:
    """Remove all but the newest runs (by the time each started), never one whose pytest is still running."""
    dirs = [d for d in runs.iterdir() if d.is_dir() and re.fullmatch(r"\d+-\w+", d.name)]
    dirs.sort(key=lambda d: d.stat().st_mtime)
    for d in dirs[:max(0, len(dirs) - (KEEP_RUNS - 1))]:
        if not alive(int(d.name.split("-", 1)[0])):
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def java_lock(tmp_path_factory: pytest.TempPathFactory):
    """A JVM holding a log dir's ``.lock`` as a Kafka broker does: ``with java_lock.holding(log_dir): ...``."""
    from tests.support.broker_lock import compile_holder

    return compile_holder(tmp_path_factory.mktemp("holdlock"))


@dataclass
class MixedDir:
    path: Path
    kafka_ref_gen: list[dict[str, object]]  # kafka-ref's own gen reports for ref-0


@pytest.fixture(scope="session")
def mixed_dir(tmp_path_factory: pytest.TempPathFactory, kafka_ref: KafkaRef) -> MixedDir:
    root = tmp_path_factory.mktemp("mixed") / "kafka-logs"
    gen = build_mixed_logdir(root, kafka_ref.launcher)
    return MixedDir(root, gen)


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``kafkatool sample``'s default log dir (v0/v1/v2, every codec, transactions, compaction, retention)."""
    root = tmp_path_factory.mktemp("sample") / "kafka-logs"
    generate_sample(root, SampleSpec(demo_topics()), fsync=False)
    return root


@pytest.fixture(scope="session")
def s3_backup(sample_dir: Path) -> Iterator[tuple[S3Server, str]]:
    """A real S3 server (moto's, on 127.0.0.1) holding the sample dir, uploaded once: (the server, the dir's
    ``s3://`` URL). The object-storage tests share it (one xdist group): moto takes seconds for the 350 files."""
    pytest.importorskip("moto")
    from tests.support.s3_server import s3_server

    with s3_server() as s3:
        yield s3, s3.upload(sample_dir, "backup/kafka-logs")


@pytest.fixture(scope="session")
def dumped(mixed_dir: MixedDir, sample_dir: Path) -> dict[str, dict[str, Any]]:
    """Per-partition totals of both dirs from ``kafkatool dump --deep --format json`` (tests/support/dump_totals.py)."""
    return dump_totals([mixed_dir.path, sample_dir])
