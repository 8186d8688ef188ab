"""Shared fixtures: the CLI runner, a JVM holding a broker lock, kafka-ref (Kafka's own code), and the
session-wide sample and mixed-format log dirs (read-only: copy to modify)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafkatool.sample.generate import generate_sample
from kafkatool.sample.spec import SampleSpec, demo_topics
from tests.support.cli import run_cli
from tests.support.dump_totals import dump_totals
from tests.support.mixed_logdir import build_mixed_logdir

if TYPE_CHECKING:
    from tests.support.kafkaref import KafkaRef

# kafka-ref (Apache Kafka's own code) for every test directory: the session fixture lives there.
pytest_plugins = ["tests.support.kafkaref"]


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
def dumped(mixed_dir: MixedDir, sample_dir: Path) -> dict[str, dict[str, Any]]:
    """Per-partition totals of both dirs from ``kafkatool dump --deep --format json`` (tests/support/dump_totals.py)."""
    return dump_totals([mixed_dir.path, sample_dir])
